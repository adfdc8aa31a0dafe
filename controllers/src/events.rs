//! Kubernetes events as client-go's `tools/events` recorder writes them (the events.k8s.io/v1
//! API, which controller-runtime's `mgr.GetEventRecorder` and kube-scheduler use):
//! `Eventf(regarding, related, type, reason, action, note)`.
//!
//! What a real cluster then shows, and this recorder reproduces:
//!
//! - one `events.k8s.io/v1` Event per first occurrence, named `<regarding name>.<hex nanos>`, with
//!   `eventTime`, `reportingController` (the component), `reportingInstance`
//!   (`<component>-<hostname>`), `action`, `regarding` (with the object's resourceVersion),
//!   `related`, and no deprecated `source`, `count` or timestamps;
//! - repeats are folded by their *isomorphic key* — type, action, reason, reporting controller
//!   and instance, regarding and related, but **not** the note: the second occurrence patches
//!   `series: {count: 2, lastObservedTime}` onto the first event (whose note stays the first
//!   one's); later ones only bump the count in the recorder's cache, which reaches the server
//!   when the periodic refresh (every 30 minutes) writes every series, or when a series ends
//!   (6 minutes after its last observation; [`EventRecorder::run_series_upkeep`]);
//! - a singleton event leaves the cache 6 minutes after it was made, so a later isomorphic event
//!   is a new object.
//!
//! Since `regarding` carries the resourceVersion, events about an object that changed in
//! between are never folded. Every time comes from the [`Clock`] and every wait is a tokio
//! timer, so the series upkeep runs in virtual time in-process.
//!
//! One difference is deliberate: two events about the same object made at the same virtual
//! instant would get the same name (their nanoseconds are equal, which never happens on a
//! wall clock), so a later name takes the next free nanosecond, across every recorder of the
//! process (KubeRay and Kueue both record about a RayService).

use crate::Clock;
use apimachinery::clock::format_micro_time;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::Notify;

/// How long after its last observation a series ends (client-go `finishTime`).
const FINISH_TIME: Duration = Duration::from_secs(6 * 60);
/// How often every cached series is written again (client-go `refreshTime`).
const REFRESH_TIME: Duration = Duration::from_secs(30 * 60);

/// `Normal` or `Warning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// A routine event: something happened as expected.
    Normal,
    /// An event about a problem or an unexpected outcome.
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

/// client-go's `eventKey`: what makes two events the same event. The note is not part of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct IsomorphicKey {
    event_type: EventType,
    action: String,
    reason: String,
    regarding: String,
    related: String,
}

/// An event as the recorder's cache holds it.
#[derive(Debug, Clone)]
struct Cached {
    /// The event as first created (events.k8s.io/v1 JSON, without `series`).
    event: Value,
    event_time: Timestamp,
    /// `(count, lastObservedTime)` once the event repeated.
    series: Option<(i32, Timestamp)>,
}

impl Cached {
    fn namespace(&self) -> String {
        self.event["metadata"]["namespace"].as_str().unwrap_or("default").to_string()
    }

    fn name(&self) -> String {
        self.event["metadata"]["name"].as_str().unwrap_or_default().to_string()
    }
}

/// Records events for one component, like an `events.EventRecorder` from
/// `EventBroadcaster.NewRecorder(scheme, reportingController)`.
pub struct EventRecorder {
    client: kube::Client,
    clock: Clock,
    reporting_controller: String,
    reporting_instance: String,
    cache: Mutex<HashMap<IsomorphicKey, Cached>>,
    /// Notified on the first event: the broadcaster (and its series upkeep) starts lazily, as
    /// controller-runtime's does.
    started: Notify,
}

/// The last nanosecond used in an event name, per regarding object, shared by every recorder of
/// the process (see the module docs): two components (KubeRay and Kueue, say) recording about the
/// same object at the same virtual instant must not pick the same name, or one's series patch
/// lands on the other's event.
static LAST_NANOS: std::sync::LazyLock<Mutex<HashMap<String, i128>>> = std::sync::LazyLock::new(Mutex::default);

/// The host name, as Go's `os.Hostname` reports it on Linux.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

impl EventRecorder {
    /// A recorder whose events say `reportingController: <controller>` and
    /// `reportingInstance: <controller>-<hostname>`.
    pub fn new(client: kube::Client, clock: Clock, controller: &str) -> Self {
        Self {
            client,
            clock,
            reporting_controller: controller.into(),
            reporting_instance: format!("{controller}-{}", hostname()),
            cache: Mutex::default(),
            started: Notify::new(),
        }
    }

    /// `reportingController` on this recorder's events.
    pub fn reporting_controller(&self) -> &str {
        &self.reporting_controller
    }

    /// Records an event about `regarding`. Failures are logged, never returned: an event that
    /// cannot be written must not fail the work that emitted it.
    pub async fn eventf(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        event_type: EventType,
        reason: &str,
        action: &str,
        note: String,
    ) {
        self.started.notify_one();
        let now = self.clock.now();
        let key = IsomorphicKey {
            event_type,
            action: action.into(),
            reason: reason.into(),
            regarding: serde_json::to_string(regarding).unwrap_or_default(),
            related: related.map(|r| serde_json::to_string(r).unwrap_or_default()).unwrap_or_default(),
        };
        let to_record = {
            let mut cache = self.cache.lock();
            match cache.get_mut(&key) {
                Some(cached) => match &mut cached.series {
                    Some((count, last)) => {
                        *count += 1;
                        *last = now;
                        None
                    }
                    None => {
                        cached.series = Some((2, now));
                        Some(cached.clone())
                    }
                },
                None => {
                    let cached = Cached {
                        event: self.make_event(regarding, related, event_type, reason, action, &note, now),
                        event_time: now,
                        series: None,
                    };
                    cache.insert(key, cached.clone());
                    Some(cached)
                }
            }
        };
        if let Some(cached) = to_record
            && let Err(e) = self.record(&cached).await
        {
            tracing::warn!(error = %e, reason, "cannot record event");
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn make_event(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        event_type: EventType,
        reason: &str,
        action: &str,
        note: &str,
        now: Timestamp,
    ) -> Value {
        let name = regarding.name.clone().unwrap_or_default();
        let nanos = {
            let mut last = LAST_NANOS.lock();
            let key = format!("{}/{name}", regarding.namespace.as_deref().unwrap_or(""));
            let entry = last.entry(key).or_insert(i128::MIN);
            *entry = now.as_nanosecond().max(entry.saturating_add(1));
            *entry
        };
        let namespace = regarding.namespace.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| "default".into());
        let mut event = json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": format!("{name}.{nanos:x}"), "namespace": namespace},
            "eventTime": format_micro_time(now),
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": action,
            "reason": reason,
            "regarding": regarding,
            "note": note,
            "type": event_type.as_str(),
        });
        if let Some(r) = related {
            event["related"] = json!(r);
        }
        event
    }

    /// `recordEvent`: a series is patched onto the existing event (or created whole if that
    /// event is gone); a singleton is created.
    ///
    /// The server's answers are not decoded: the recorder only needs to know whether a write
    /// was taken.
    async fn record(&self, cached: &Cached) -> Result<(), kube::Error> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), &cached.namespace());
        if let Some((count, last)) = cached.series {
            let series = json!({"count": count, "lastObservedTime": format_micro_time(last)});
            let patch = json!({"series": series});
            let request = kube::core::Request::new(api.resource_url())
                .patch(&cached.name(), &PatchParams::default(), &Patch::Strategic(&patch))
                .map_err(kube::Error::BuildRequest)?;
            match self.client.request::<serde::de::IgnoredAny>(request).await {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    let mut whole = cached.event.clone();
                    whole["series"] = series;
                    return self.create(&api, whole).await;
                }
                Err(e) => return Err(e),
            }
        }
        self.create(&api, cached.event.clone()).await
    }

    async fn create(&self, api: &Api<Event>, event: Value) -> Result<(), kube::Error> {
        // Sent as the typed Event serializes, in its fields' order, as client-go sends it.
        let event: Event = serde_json::from_value(event).map_err(kube::Error::SerdeError)?;
        let body = serde_json::to_vec(&event).map_err(kube::Error::SerdeError)?;
        let request = kube::core::Request::new(api.resource_url())
            .create(&PostParams::default(), body)
            .map_err(kube::Error::BuildRequest)?;
        match self.client.request::<serde::de::IgnoredAny>(request).await {
            Ok(_) => Ok(()),
            // client-go drops an event whose name is taken.
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The broadcaster's two periodic jobs, from the first event on: every 6 minutes, series
    /// observed last more than 6 minutes ago are written a final time and forgotten, and
    /// singletons older than that are forgotten; every 30 minutes every series is written.
    /// Drive this beside the component that owns the recorder; it never returns.
    pub async fn run_series_upkeep(&self) {
        self.started.notified().await;
        let start = tokio::time::Instant::now();
        let (mut next_finish, mut next_refresh) = (start, start);
        loop {
            tokio::time::sleep_until(next_finish.min(next_refresh)).await;
            let now = tokio::time::Instant::now();
            if now >= next_refresh {
                self.refresh_series().await;
                next_refresh = tokio::time::Instant::now() + REFRESH_TIME;
            }
            if now >= next_finish {
                self.finish_series().await;
                next_finish = tokio::time::Instant::now() + FINISH_TIME;
            }
        }
    }

    async fn refresh_series(&self) {
        let series: Vec<Cached> = self.cache.lock().values().filter(|c| c.series.is_some()).cloned().collect();
        for cached in series {
            if let Err(e) = self.record(&cached).await {
                tracing::info!(error = %e, "cannot refresh an event series");
            }
        }
    }

    async fn finish_series(&self) {
        let horizon = self.clock.now() - SignedDuration::try_from(FINISH_TIME).unwrap_or(SignedDuration::ZERO);
        let ended: Vec<(IsomorphicKey, Cached)> = {
            let mut cache = self.cache.lock();
            cache.retain(|_, c| c.series.is_some() || c.event_time >= horizon);
            cache
                .iter()
                .filter(|(_, c)| c.series.is_some_and(|(_, last)| last < horizon))
                .map(|(k, c)| (k.clone(), c.clone()))
                .collect()
        };
        for (key, cached) in ended {
            let result = self.record(&cached).await;
            if let Err(e) = &result {
                tracing::info!(error = %e, "cannot write the end of an event series");
            }
            // Only a server that could not be reached keeps the series for another try.
            if !matches!(result, Err(ref e) if !matches!(e, kube::Error::Api(_))) {
                self.cache.lock().remove(&key);
            }
        }
    }
}

/// A reference to `obj` as client-go's `reference.GetReference` makes it: apiVersion, kind,
/// namespace, name, uid and resourceVersion.
pub fn reference<K>(obj: &K) -> ObjectReference
where
    K: kube::Resource<DynamicType = ()>,
{
    let meta = obj.meta();
    ObjectReference {
        api_version: Some(K::api_version(&()).to_string()),
        kind: Some(K::kind(&()).to_string()),
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        field_path: None,
    }
}
