//! Kubernetes events as client-go writes them. [`EventRecorder`]: `record.EventRecorder`, core/v1
//! Events named
//! `<object>.<hex nanos>`, with `source.component`, and repeats of the same event folded into
//! one object whose `count` and `lastTimestamp` move (client-go's event correlator).
//!
//! KubeRay and the controller-runtime operators record through this API, so `kubectl describe`
//! and suite rows see what they would see on a real cluster. (kube-runtime's `Recorder` writes
//! events.k8s.io/v1 instead, which is what Rust operators produce.)
//!
//! [`EventsV1Recorder`]: `tools/events`, the newer events.k8s.io/v1 recorder with series, which
//! controller-runtime's `GetEventRecorder` returns.

use crate::Clock;
use k8s_openapi::api::core::v1::{Event, ObjectReference};
use kube::api::{Api, Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use serde_json::json;
use std::collections::HashMap;

/// `Normal` or `Warning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Something went as intended.
    Normal,
    /// Something failed or needs attention.
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

/// What a controller did when it recorded an event (`events.k8s.io/v1` `action`; KubeRay's
/// `K8sEventAction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventAction {
    /// An object was (or failed to be) created.
    Create,
    /// An object was (or failed to be) deleted.
    Delete,
    /// An object or the Serve config was (or failed to be) updated.
    Update,
    /// A spec or metadata was checked.
    Validate,
    /// Anything else a reconcile pass noticed.
    Reconcile,
}

impl EventAction {
    fn as_str(self) -> &'static str {
        match self {
            EventAction::Create => "Create",
            EventAction::Delete => "Delete",
            EventAction::Update => "Update",
            EventAction::Validate => "Validate",
            EventAction::Reconcile => "Reconcile",
        }
    }
}

/// An isomorphic event already written: where it lives and its series.
#[derive(Debug, Clone)]
struct SeriesEntry {
    namespace: String,
    name: String,
    /// `None` until the second occurrence (`series` absent), then the count.
    count: Option<i32>,
    last_observed: jiff::Timestamp,
    last_written: jiff::Timestamp,
}

/// How long an unobserved series lives in the cache (`finishTime`).
const FINISH_TIME: jiff::SignedDuration = jiff::SignedDuration::from_secs(6 * 60);
/// How often a live series is written again (`refreshTime`).
const REFRESH_TIME: jiff::SignedDuration = jiff::SignedDuration::from_secs(30 * 60);

/// Writes `events.k8s.io/v1` Events for one controller, as client-go's `tools/events`
/// broadcaster does — the recorder controller-runtime's `GetEventRecorder` hands out, which
/// KubeRay v1.7.0's controllers use:
/// - events are isomorphic when action, reason, reporting controller and the object they are
///   about agree (the note and type do not count);
/// - the first is created (`<object>.<hex nanos>`); the second turns into a series
///   (`series.count: 2`) patched onto the first; later ones only count up in memory, written
///   every 30 minutes while they keep coming and once more when the series ends;
/// - a series unobserved for 6 minutes ends: the next isomorphic event is created anew.
///
/// Read through `core/v1`, such an event has `reportingComponent` set and no `source`.
pub struct EventsV1Recorder {
    client: kube::Client,
    clock: Clock,
    controller: String,
    instance: String,
    cache: Mutex<HashMap<(String, String, String), SeriesEntry>>,
    seq: Mutex<u64>,
}

impl EventsV1Recorder {
    /// A recorder whose events say `reportingController: <controller>`.
    pub fn new(client: kube::Client, clock: Clock, controller: &str) -> Self {
        Self {
            client,
            clock,
            controller: controller.into(),
            instance: format!("{controller}-kproof"),
            cache: Mutex::default(),
            seq: Mutex::new(0),
        }
    }

    fn micro_time(t: jiff::Timestamp) -> String {
        t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
    }

    async fn patch_series(&self, entry: &SeriesEntry) {
        let Some(count) = entry.count else { return };
        let api: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(self.client.clone(), &entry.namespace);
        let patch = json!({"series": {"count": count, "lastObservedTime": Self::micro_time(entry.last_observed)}});
        if let Err(e) = api.patch(&entry.name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            tracing::warn!(error = %e, event = %entry.name, "cannot update the event series");
        }
    }

    /// Records an event about `regarding`. Failures are logged, never returned: an event that
    /// cannot be written must not fail the reconcile that emitted it.
    pub async fn publish(
        &self,
        regarding: &ObjectReference,
        kind: EventType,
        reason: &str,
        action: EventAction,
        note: String,
    ) {
        let now = self.clock.now();
        // Series that ended (unobserved for 6 minutes) are written one last time and forgotten.
        let ended: Vec<SeriesEntry> = {
            let mut cache = self.cache.lock();
            let gone: Vec<_> = cache
                .iter()
                .filter(|(_, e)| now.duration_since(e.last_observed) > FINISH_TIME)
                .map(|(k, _)| k.clone())
                .collect();
            gone.into_iter().filter_map(|k| cache.remove(&k)).collect()
        };
        for e in &ended {
            self.patch_series(e).await;
        }
        let key = (
            format!(
                "{}/{}/{}",
                regarding.namespace.clone().unwrap_or_default(),
                regarding.name.clone().unwrap_or_default(),
                regarding.uid.clone().unwrap_or_default()
            ),
            reason.to_string(),
            action.as_str().to_string(),
        );
        let existing = self.cache.lock().get(&key).cloned();
        if let Some(mut entry) = existing {
            entry.last_observed = now;
            let write = match entry.count {
                None => {
                    entry.count = Some(2);
                    true
                }
                Some(c) => {
                    entry.count = Some(c + 1);
                    now.duration_since(entry.last_written) >= REFRESH_TIME
                }
            };
            if write {
                entry.last_written = now;
                self.patch_series(&entry).await;
            }
            self.cache.lock().insert(key, entry);
            return;
        }
        let ns = regarding.namespace.clone().unwrap_or_else(|| "default".into());
        let seq = {
            let mut s = self.seq.lock();
            *s += 1;
            *s
        };
        let nanos = now.as_nanosecond() as u64;
        let name = format!("{}.{:x}", regarding.name.clone().unwrap_or_default(), nanos.wrapping_add(seq));
        let event: k8s_openapi::api::events::v1::Event = match serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns},
            "eventTime": Self::micro_time(now),
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": action.as_str(),
            "reason": reason,
            "regarding": regarding,
            "note": note,
            "type": kind.as_str(),
        })) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, "cannot build event");
                return;
            }
        };
        let api: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(self.client.clone(), &ns);
        match api.create(&PostParams::default(), &event).await {
            Ok(_) => {
                let entry = SeriesEntry { namespace: ns, name, count: None, last_observed: now, last_written: now };
                self.cache.lock().insert(key, entry);
            }
            Err(e) => tracing::warn!(error = %e, reason, "cannot record event"),
        }
    }
}
