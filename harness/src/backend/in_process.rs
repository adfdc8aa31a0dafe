//! The in-process backend: a fresh fake API server and the row's actors for every row, on a
//! paused tokio clock, so waits and `advance` steps cost no wall time and rows run in parallel.

use crate::actors::{ActorFactory, start_actors};
use crate::backend::{Backend, BackendClock, LogBuffer, RunOptions, begin, collect_record, finish};
use crate::engine::runner::{RowContext, RowFailure, Timeline, execute};
use crate::report::result::{FlightRecord, RowResult};
use crate::suite::{Capability, LoadedSuite, Row};
use fake_apiserver::{ApiServer, Config};
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The knobs of a row on the fake backend: its actors', and the API server's `restart`.
struct ServerKnobs {
    server: ApiServer,
    actors: crate::actors::ActorSet,
}

impl crate::engine::runner::Knobs for ServerKnobs {
    fn turn(&self, actor: crate::suite::ActorName, knob: &str, value: &Value) -> Result<(), String> {
        if actor != crate::suite::ActorName::KubeApiserver {
            return self.actors.turn(actor, knob, value);
        }
        match (knob, value) {
            ("restart", Value::Bool(true)) => {
                self.server.restart();
                Ok(())
            }
            ("restart", other) => Err(format!("knob restart takes true, not {other}")),
            (other, _) => Err(format!("kube-apiserver has no knob {other:?} (it has: restart)")),
        }
    }
}

/// The fake API server's own write log as a row's timeline.
pub struct ServerTimeline {
    server: ApiServer,
    /// Only this namespace's writes (certification scenarios share one server).
    namespace: Option<String>,
    /// The entries read so far and the resourceVersion of the last: each read takes only the
    /// writes since (a RayService row's timeline is megabytes of JSON, and a row may read it for
    /// several expectations).
    read: parking_lot::Mutex<(u64, crate::engine::runner::TimelineEntries)>,
}

impl ServerTimeline {
    /// Every write from now on.
    pub fn new(server: ApiServer) -> Self {
        let since = server.resource_version();
        Self { server, namespace: None, read: parking_lot::Mutex::new((since, Arc::default())) }
    }

    /// Every write in `namespace` since the server started.
    pub fn of_namespace(server: ApiServer, namespace: &str) -> Self {
        Self { server, namespace: Some(namespace.to_string()), read: parking_lot::Mutex::new((0, Arc::default())) }
    }
}

impl Timeline for ServerTimeline {
    fn revision(&self) -> Option<u64> {
        Some(self.server.resource_version())
    }

    fn revision_of(&self, kind: &str) -> Option<u64> {
        Some(self.server.resource_version_of_kind(kind))
    }

    fn entries(&self) -> crate::engine::runner::TimelineEntries {
        let mut read = self.read.lock();
        let (seen, entries) = &mut *read;
        let fresh = self.server.timeline_since(*seen);
        if let Some(last) = fresh.last() {
            *seen = last.resource_version;
            let wanted =
                |e: &&fake_apiserver::TimelineEntry| self.namespace.as_ref().is_none_or(|ns| e.namespace == *ns);
            Arc::make_mut(entries).extend(fresh.iter().filter(wanted).map(|e| {
                crate::engine::runner::TimelineItem::encoded(
                    serde_json::to_value(e).unwrap_or(Value::Null),
                    e.object_json().clone(),
                )
            }));
        }
        entries.clone()
    }
}

/// The fake API server and the reference controllers, one fresh set per row, on a paused
/// tokio clock: waits and `advance` steps cost no wall time, and rows run in parallel. A row
/// gets the actors it names (`actor:NAME`), each configured with the row's gates and settings.
pub struct InProcessBackend {
    factories: Vec<Arc<dyn ActorFactory>>,
    /// The deliberate defect every row's API server is built with (harness test
    /// `wrong_apiserver`).
    #[cfg(feature = "defects")]
    server_defect: Option<fake_apiserver::ServerDefect>,
}

impl InProcessBackend {
    /// A backend with no controllers (the API server and its system controllers only).
    pub fn new() -> Self {
        Self {
            factories: Vec::new(),
            #[cfg(feature = "defects")]
            server_defect: None,
        }
    }

    /// Adds an actor, started for the rows that name it. A later factory with the same name
    /// replaces the earlier one (how tests swap in a reference controller built differently).
    pub fn with_actor(mut self, f: Arc<dyn ActorFactory>) -> Self {
        self.factories.retain(|old| old.name() != f.name());
        self.factories.push(f);
        self
    }

    /// Builds every row's API server with `defect`, to prove that the `apiserver` table
    /// catches it.
    #[cfg(feature = "defects")]
    pub fn with_server_defect(mut self, defect: fake_apiserver::ServerDefect) -> Self {
        self.server_defect = Some(defect);
        self
    }

    /// The configuration of a row's API server.
    fn server_config(&self, feature_gates: fake_apiserver::FeatureGates) -> Config {
        Config {
            clock_start: Some(virtual_epoch()),
            feature_gates,
            #[cfg(feature = "defects")]
            defect: self.server_defect,
            ..Config::default()
        }
    }
}

impl InProcessBackend {
    /// The backend with every reference actor (each started only for the rows that name it).
    pub fn reference() -> Self {
        crate::actors::reference_actors().into_iter().fold(InProcessBackend::new(), |b, f| b.with_actor(f))
    }
}

impl Default for InProcessBackend {
    fn default() -> Self {
        Self::new()
    }
}

/// Where the in-process clock starts: fixed, so timestamps are the same in every run.
pub fn virtual_epoch() -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_767_225_600).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

impl Backend for InProcessBackend {
    fn name(&self) -> &str {
        "fake"
    }

    fn capabilities(&self) -> BTreeSet<Capability> {
        let mut c: BTreeSet<Capability> = Capability::PLAIN.into_iter().collect();
        c.extend(self.factories.iter().map(|f| Capability::Actor(f.name())));
        // The fake API server and the reference components run every DRA profile.
        c.extend(controllers::dra::DraProfile::ALL.map(Capability::DraProfile));
        c
    }

    fn version(&self, component: crate::suite::Component) -> Option<crate::suite::Version> {
        self.factories.iter().filter_map(|f| f.models()).find(|(c, _)| *c == component).map(|(_, v)| v)
    }

    fn facts(&self, row: &Row) -> std::collections::BTreeMap<String, String> {
        let wanted = row.needs.actors();
        self.factories.iter().filter(|f| wanted.contains(&f.name())).flat_map(|f| f.facts(&row.needs)).collect()
    }

    fn components(&self) -> std::collections::BTreeMap<String, String> {
        let mut c = std::collections::BTreeMap::new();
        c.insert(
            "kube-apiserver".to_string(),
            format!("kproof fake-apiserver (serving {})", Config::default().kubernetes_version),
        );
        for f in &self.factories {
            c.insert(f.name().to_string(), "kproof reference".to_string());
        }
        c
    }

    fn run_row(&self, suite: &LoadedSuite, row: &Row, opts: &RunOptions) -> RowResult {
        let mut result = match begin(self, suite, row) {
            Ok(r) => r,
            Err(skipped) => return *skipped,
        };
        let wall = std::time::Instant::now();
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build() {
            Ok(r) => r,
            Err(e) => {
                let failure = RowFailure::plain(format!("cannot start a runtime: {e}"));
                return finish(suite, result, Err(failure), FlightRecord::default, opts);
            }
        };
        let logs = LogBuffer::default();
        let (outcome, record, backend_ms, requests, checks) = runtime.block_on(async {
            let started = tokio::time::Instant::now();
            let subscriber = tracing_subscriber::fmt()
                .with_writer(logs.clone())
                .with_ansi(false)
                .with_timer(BackendClock(started))
                .with_max_level(tracing::Level::DEBUG)
                .finish();
            let _guard = tracing::subscriber::set_default(subscriber);
            let gates = row.needs.dra.config(crate::suite::DraComponent::KubeApiserver).gates.settings();
            let feature_gates = match fake_apiserver::FeatureGates::parse(&gates) {
                Ok(g) => g,
                Err(e) => {
                    let failure = RowFailure::plain(format!("feature gates {gates:?}: {e}"));
                    return (Err(failure), None, 0, Default::default(), Vec::new());
                }
            };
            let server = ApiServer::new(self.server_config(feature_gates));
            let clock = server.clock();
            let wanted = row.needs.actors();
            let factories: Vec<Arc<dyn ActorFactory>> =
                self.factories.iter().filter(|f| wanted.contains(&f.name())).cloned().collect();
            for hook in factories.iter().flat_map(|f| f.webhooks()) {
                server.add_validating_webhook(hook);
            }
            for hook in factories.iter().flat_map(|f| f.mutating_webhooks()) {
                server.add_mutating_webhook(hook);
            }
            let client_for = |name: crate::suite::ActorName| server.controller_client(name.as_str());
            let network = controllers::sim::SimNetwork::new();
            let actors = match start_actors(&factories, client_for, clock, &row.needs, &network).await {
                Ok(a) => a,
                Err(e) => {
                    return (
                        Err(RowFailure::plain(e)),
                        None,
                        started.elapsed().as_millis() as u64,
                        Default::default(),
                        Vec::new(),
                    );
                }
            };
            let ctx = RowContext {
                client: server.client_as("kproof"),
                namespace: "default".into(),
                timeline: Arc::new(ServerTimeline::new(server.clone())),
                knobs: Arc::new(ServerKnobs { server: server.clone(), actors }),
                fixtures_dir: opts.fixtures_dir.clone(),
                default_timeout: opts.default_timeout,
                poll: opts.poll,
                started,
                exchanges: Default::default(),
                evidence: Default::default(),
                facts: self.facts(row),
            };
            let watchdog = WallWatchdog::start(opts.wall_limit);
            let outcome = tokio::select! {
                biased;
                () = watchdog.expired.notified() => Err(RowFailure::plain(format!(
                    "the row ran for {} of wall time ({} of virtual time) without finishing: the simulated cluster never went idle, so virtual time stopped (two components undoing each other's writes?)",
                    crate::suite::format_duration(opts.wall_limit),
                    crate::suite::format_duration(started.elapsed())
                ))),
                outcome = execute(&ctx, &suite.suite, row) => outcome,
            };
            drop(watchdog);
            let record = if outcome.is_err() { Some(collect_record(&ctx, &logs).await) } else { None };
            let counted = server.request_counts();
            let requests = counted
                .into_iter()
                .map(|(agent, verbs)| (agent, verbs.into_iter().map(|(v, n)| (v.to_string(), n)).collect()))
                .collect();
            let checks = std::mem::take(&mut *ctx.evidence.lock());
            (outcome, record, started.elapsed().as_millis() as u64, requests, checks)
        });
        result.backend_ms = backend_ms;
        result.checks = checks;
        result.requests = requests;
        result.wall_ms = wall.elapsed().as_millis() as u64;
        finish(suite, result, outcome, || record.unwrap_or_default(), opts)
    }
}

/// Wakes `expired` once `limit` of wall time has passed, unless dropped first. A thread, not a
/// timer: the row's runtime has a paused clock.
struct WallWatchdog {
    expired: Arc<tokio::sync::Notify>,
    done: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::Thread>,
}

impl WallWatchdog {
    fn start(limit: std::time::Duration) -> Self {
        let expired = Arc::new(tokio::sync::Notify::new());
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        if limit.is_zero() {
            expired.notify_one();
            return Self { expired, done, thread: None };
        }
        let (e, d) = (expired.clone(), done.clone());
        let thread = std::thread::Builder::new()
            .name("kproof-row-watchdog".into())
            .spawn(move || {
                let deadline = std::time::Instant::now() + limit;
                while !d.load(std::sync::atomic::Ordering::Acquire) {
                    let now = std::time::Instant::now();
                    if now >= deadline {
                        e.notify_one();
                        return;
                    }
                    std::thread::park_timeout(deadline - now);
                }
            })
            .ok()
            .map(|h| h.thread().clone());
        Self { expired, done, thread }
    }
}

impl Drop for WallWatchdog {
    fn drop(&mut self) {
        self.done.store(true, std::sync::atomic::Ordering::Release);
        if let Some(t) = &self.thread {
            t.unpark();
        }
    }
}
