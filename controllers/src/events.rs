//! Kubernetes events as client-go's `record.EventRecorder` writes them: core/v1 Events named
//! `<object>.<hex nanos>`, with `source.component`, and repeats of the same event folded into
//! one object whose `count` and `lastTimestamp` move (client-go's event correlator).
//!
//! KubeRay and the controller-runtime operators record through this API, so `kubectl describe`
//! and suite rows see what they would see on a real cluster. (kube-runtime's `Recorder` writes
//! events.k8s.io/v1 instead, which is what Rust operators produce.)

use crate::Clock;
use k8s_openapi::api::core::v1::{Event, ObjectReference};
use kube::api::{Api, Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use serde_json::json;
use std::collections::HashMap;

/// `Normal` or `Warning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// What identifies a repeat of an event: involved uid, type, reason, message.
type EventKey = (String, &'static str, String, String);
/// Where an earlier event lives and how often it was seen: namespace, name, count.
type SeenEvent = (String, String, i32);

/// Writes events for one component.
pub struct EventRecorder {
    client: kube::Client,
    clock: Clock,
    component: String,
    /// (uid, type, reason, message) → (event namespace, event name, count so far).
    seen: Mutex<HashMap<EventKey, SeenEvent>>,
    /// Disambiguates names of events made at the same (virtual) instant.
    seq: Mutex<u64>,
}

impl EventRecorder {
    /// A recorder whose events say `source.component: <component>`.
    pub fn new(client: kube::Client, clock: Clock, component: &str) -> Self {
        Self { client, clock, component: component.into(), seen: Mutex::default(), seq: Mutex::new(0) }
    }

    /// Records an event about `involved`. Failures are logged, never returned: like client-go,
    /// an event that cannot be written must not fail the reconcile that emitted it.
    pub async fn publish(&self, involved: &ObjectReference, kind: EventType, reason: &str, message: String) {
        let ns = involved.namespace.clone().unwrap_or_else(|| "default".into());
        let api: Api<Event> = Api::namespaced(self.client.clone(), &ns);
        let now = self.clock.now_rfc3339();
        let key = (involved.uid.clone().unwrap_or_default(), kind.as_str(), reason.to_string(), message.clone());
        let known = self.seen.lock().get(&key).cloned();
        if let Some((ev_ns, name, count)) = known {
            let api: Api<Event> = Api::namespaced(self.client.clone(), &ev_ns);
            let patch = json!({"count": count + 1, "lastTimestamp": now});
            if api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.is_ok() {
                self.seen.lock().insert(key, (ev_ns, name, count + 1));
                return;
            }
        }
        let nanos = self.clock.now().as_nanosecond() as u64;
        let seq = {
            let mut s = self.seq.lock();
            *s += 1;
            *s
        };
        let name = format!("{}.{:x}", involved.name.clone().unwrap_or_default(), nanos.wrapping_add(seq));
        let event: Event = match serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "source": {"component": self.component},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": kind.as_str(),
            "reportingComponent": self.component,
            "reportingInstance": "",
        })) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, "cannot build event");
                return;
            }
        };
        match api.create(&PostParams::default(), &event).await {
            Ok(_) => {
                self.seen.lock().insert(key, (ns, name, 1));
            }
            Err(e) => tracing::warn!(error = %e, reason, "cannot record event"),
        }
    }
}
