//! Backends: where rows run. Each states its capabilities; a row needing one it lacks is
//! skipped with the reason, never passed.
//!
//! - [`in_process`]: the fake API server and the reference actors, fresh per row, in virtual time.
//! - [`kubeconfig`]: any cluster reached through a kubeconfig (e.g. `kproof serve`), in real time.
//! - [`upstream`]: real Kubernetes, KubeRay and Kueue built from their Go modules, run locally.
//! - [`kind`]: a real kind cluster in Docker with Istio, Gateway API, MetalLB, KubeRay and Kueue
//!   (cargo feature `kind`; without it only its options and the message saying so are built).

pub mod audit;
pub mod in_process;
pub mod kind;
pub mod kubeconfig;
pub mod pins;
pub mod upstream;

pub use crate::actors::{ACTORS_CONFIGMAP_NAME, ACTORS_CONFIGMAP_NAMESPACE};
pub use in_process::{InProcessBackend, virtual_epoch};
pub use kubeconfig::KubeconfigBackend;
pub use upstream::UpstreamBackend;

use crate::engine::runner::{RowContext, RowFailure};
use crate::report::result::{FlightRecord, Outcome, RowResult};
use crate::suite::{ActorName, Capability, Component, LoadedSuite, Needs, Row, Version};
use kube::api::{Api, DynamicObject, ListParams};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Options every backend takes from the command line or the test harness.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The directory suite manifests name their fixture files relative to.
    pub fixtures_dir: PathBuf,
    /// Where failing rows' flight records go; `None` keeps them only in the result.
    pub flight_dir: Option<PathBuf>,
    /// How long an `eventually` without `within`, or a `bind` step, waits at most.
    pub default_timeout: Duration,
    /// How long a wait sleeps between checks.
    pub poll: Duration,
    /// The most wall time one in-process row may take. Virtual time only moves while every
    /// task waits, so a simulated cluster that never goes idle (two controllers undoing each
    /// other) would never reach a row's virtual deadlines; this ends such a row instead.
    pub wall_limit: Duration,
    /// On real-time backends, leave what each row made (its namespace, the cluster-scoped
    /// objects it created) for debugging instead of deleting it ([`crate::engine::cleanup`]).
    pub keep: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            fixtures_dir: PathBuf::from("fixtures"),
            flight_dir: None,
            default_timeout: Duration::from_secs(30),
            poll: Duration::from_millis(100),
            wall_limit: Duration::from_secs(120),
            keep: false,
        }
    }
}

/// Where rows run.
pub trait Backend: Send + Sync {
    /// `fake`, `kubeconfig` or `upstream`.
    fn name(&self) -> &str;
    /// What it offers; rows name what they need.
    fn capabilities(&self) -> BTreeSet<Capability>;
    /// The components it runs and their versions (API server, operators), for the report.
    fn components(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    /// The version of `component` this backend runs (the modelled version, for a reference).
    fn version(&self, component: Component) -> Option<Version> {
        let _ = component;
        None
    }
    /// What the backend knows about itself for `row`, as bindings (see
    /// [`crate::suite::BACKEND_FACTS`]): e.g. `kuberay.version`, the version the operator
    /// stamps on head pods.
    fn facts(&self, row: &Row) -> BTreeMap<String, String> {
        let _ = row;
        self.version(Component::Kuberay).map(|v| ("kuberay.version".to_string(), v.to_string())).into_iter().collect()
    }
    /// Whether knob steps can turn the knobs of `actor` (by default: whenever the backend offers
    /// [`Capability::Knobs`]). A backend running a real operator cannot turn its knobs.
    fn turns_knobs_of(&self, actor: ActorName) -> bool {
        let _ = actor;
        self.capabilities().contains(&Capability::Knobs)
    }
    /// The settings of `needs` (component settings, feature gates, DRA gates and rules) this
    /// backend cannot make, each named as a skip reason names it; empty when it can make all.
    fn unmet_settings(&self, needs: &Needs) -> Vec<String> {
        unmet_settings_by_capability(&self.capabilities(), needs)
    }
    /// Runs one row to a result (never panics on a failing row).
    fn run_row(&self, suite: &LoadedSuite, row: &Row, opts: &RunOptions) -> RowResult;
    /// Whether rows share one cluster (and so its cluster-scoped objects), rather than each
    /// getting a server of its own.
    fn shares_cluster(&self) -> bool {
        false
    }
}

/// Why a backend cannot run a row, or `None` when it can.
pub fn skip_reason(backend: &dyn Backend, row: &Row) -> Option<String> {
    let caps = backend.capabilities();
    let mut missing: Vec<String> =
        row.needs.capabilities.iter().filter(|c| !caps.contains(*c)).map(ToString::to_string).collect();
    // A pattern naming a verb a watch cannot see, or a writer, would match nothing on a
    // watch-recorded timeline: a `never` would pass and a `before` fail for no reason.
    let write_actors = Capability::WriteActors;
    if row.matches_write_actors() && !caps.contains(&write_actors) && !row.needs.capabilities.contains(&write_actors) {
        missing.push(write_actors.to_string());
    }
    for unmet in backend.unmet_settings(&row.needs) {
        if !missing.contains(&unmet) {
            missing.push(unmet);
        }
    }
    if let Some(profile) = row.needs.dra.profile
        && !caps.contains(&Capability::DraProfile(profile))
    {
        missing.push(Capability::DraProfile(profile).to_string());
    }
    let mut knobless: Vec<ActorName> = Vec::new();
    for step in &row.steps {
        if let crate::suite::Step::Knob { actor, .. } = step
            && !backend.turns_knobs_of(*actor)
            && !knobless.contains(actor)
        {
            knobless.push(*actor);
        }
    }
    missing.extend(knobless.iter().map(|a| format!("knobs of {a}")));
    for (component, min) in &row.needs.min_versions {
        match backend.version(*component) {
            Some(have) if have >= *min => {}
            Some(have) => missing.push(format!("{component} >= {min} (it runs {have})")),
            None => missing.push(format!("{component} >= {min} (its version is unknown)")),
        }
    }
    (!missing.is_empty()).then(|| format!("backend {} lacks {}", backend.name(), missing.join(", ")))
}

/// The settings of `needs` a backend with `caps` cannot make, as a skip reason names them: any
/// component setting or feature gate needs [`Capability::ControllerSettings`]; DRA gates turned
/// off per row need it or [`Capability::DraGateSkew`], and the <= 1.35 unknown-entry rule needs it.
pub fn unmet_settings_by_capability(caps: &BTreeSet<Capability>, needs: &Needs) -> Vec<String> {
    let settings = caps.contains(&Capability::ControllerSettings);
    let mut unmet = Vec::new();
    if !settings && (!needs.feature_gates.is_empty() || !needs.settings.is_empty()) {
        unmet.push(Capability::ControllerSettings.to_string());
    }
    if !settings && !needs.dra.gates_off.is_empty() && !caps.contains(&Capability::DraGateSkew) {
        let names: Vec<&str> = needs.dra.gates_off.iter().map(|c| c.as_str()).collect();
        unmet.push(format!("the profile's DRA gate turned off per row (needs.dra.gatesOff: {})", names.join(", ")));
    }
    if !settings && needs.dra.unknown_entries.is_some_and(|u| u != controllers::dra::UnknownEntries::Keep) {
        unmet.push(UNKNOWN_ENTRY_RULE.into());
    }
    unmet
}

/// How a skip names the DRA rule of kube-controller-manager <= 1.35 a row asks for.
pub const UNKNOWN_ENTRY_RULE: &str =
    "kube-controller-manager's <= 1.35 unknown-entry rule (needs.dra.unknownEntries: error)";

fn base_result(suite: &LoadedSuite, row: &Row, backend: &str) -> RowResult {
    RowResult {
        suite: suite.suite.suite.clone(),
        id: row.id.clone(),
        title: row.title.clone(),
        kind: row.kind,
        source: row.source.clone(),
        backend: backend.to_string(),
        outcome: Outcome::Skipped,
        reason: None,
        failure: None,
        wall_ms: 0,
        backend_ms: 0,
        flight_record: None,
        location: None,
        requests: Default::default(),
        checks: Vec::new(),
    }
}

/// The result a row starts with, or (as `Err`) its final result when the backend must skip it.
pub(crate) fn begin(backend: &dyn Backend, suite: &LoadedSuite, row: &Row) -> Result<RowResult, Box<RowResult>> {
    let mut result = base_result(suite, row, backend.name());
    match skip_reason(backend, row) {
        Some(why) => {
            result.reason = Some(why);
            Err(Box::new(result))
        }
        None => Ok(result),
    }
}

/// Completes a row's result from its outcome: on failure, where in the suite it failed and the
/// flight record (written under [`RunOptions::flight_dir`]).
pub(crate) fn finish(
    suite: &LoadedSuite,
    mut result: RowResult,
    outcome: Result<(), RowFailure>,
    record: impl FnOnce() -> FlightRecord,
    opts: &RunOptions,
) -> RowResult {
    match outcome {
        Ok(()) => result.outcome = Outcome::Passed,
        Err(f) => {
            result.outcome = Outcome::Failed;
            result.reason = Some(f.summary.clone());
            result.failure = Some(f.message.clone());
            result.location = suite.row_index(&result.id).map(|i| suite.location(i, f.part));
            let mut rec = record();
            rec.mismatches = f.mismatches;
            if let Some(dir) = &opts.flight_dir {
                match crate::report::flight::write_flight_record(dir, &result, &rec) {
                    Ok(p) => result.flight_record = Some(p),
                    Err(e) => result.failure = Some(format!("{}\n(flight record not written: {e})", f.message)),
                }
            }
        }
    }
    result
}

/// Polls `check` every 100 ms until it answers `Some(())`-like `Ok(true)`, for at most
/// `timeout`; then `Err(on_timeout())`. An `Err` from `check` ends the wait at once. For the
/// real-time backends, whose clusters take their time.
pub(crate) async fn poll_until<F, Fut>(
    timeout: Duration,
    mut check: F,
    on_timeout: impl FnOnce() -> String,
) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool, String>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if check().await? {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(on_timeout());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Log lines of one row, captured from `tracing` on the row's thread.
#[derive(Clone, Default)]
pub(crate) struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogBuffer {
    type Writer = LogBuffer;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// Timestamps of captured logs: milliseconds on the row's (virtual) clock.
pub(crate) struct BackendClock(pub(crate) tokio::time::Instant);

impl tracing_subscriber::fmt::time::FormatTime for BackendClock {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        write!(w, "+{:>8}ms", self.0.elapsed().as_millis())
    }
}

/// Gathers the flight record: timeline, objects in the row's namespace, events, logs.
pub(crate) async fn collect_record(ctx: &RowContext, logs: &LogBuffer) -> FlightRecord {
    let timeline = ctx
        .timeline
        .entries()
        .iter()
        .map(|w| {
            let mut meta = w.meta.clone();
            meta["object"] = w.object().clone();
            meta
        })
        .collect();
    let mut objects = Vec::new();
    if let Ok(d) = kube::Discovery::new(ctx.client.clone()).run_aggregated().await {
        for group in d.groups() {
            for (ar, caps) in group.recommended_resources() {
                if caps.scope != kube::discovery::Scope::Namespaced
                    || !caps.supports_operation(kube::discovery::verbs::LIST)
                {
                    continue;
                }
                let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), &ctx.namespace, &ar);
                if let Ok(list) = api.list(&ListParams::default()).await {
                    objects.extend(list.items.into_iter().map(|mut o| {
                        o.types =
                            Some(kube::core::TypeMeta { api_version: ar.api_version.clone(), kind: ar.kind.clone() });
                        serde_json::to_value(o).unwrap_or(Value::Null)
                    }));
                }
            }
        }
    }
    let events: Vec<Value> = objects.iter().filter(|o| o["kind"] == "Event").cloned().collect();
    let logs = String::from_utf8_lossy(&logs.0.lock()).lines().map(str::to_string).collect();
    let exchanges = ctx.exchanges.lock().clone();
    FlightRecord { timeline, mismatches: Vec::new(), objects, events, logs, exchanges }
}

/// Runs rows on `jobs` threads; `on_done` is called as each row finishes (for progress).
/// Results come back in catalogue order. On a backend whose rows share a cluster, two rows that
/// write the same cluster-scoped object never run at once ([`crate::engine::isolation`]).
pub fn run_rows(
    backend: &dyn Backend,
    rows: &[(&LoadedSuite, &Row)],
    opts: &RunOptions,
    jobs: usize,
    on_done: &(dyn Fn(&RowResult) + Sync),
) -> Vec<RowResult> {
    use crate::engine::isolation::{TurnTaker, cluster_scoped_writes};
    let footprints: Vec<Vec<_>> = if backend.shares_cluster() {
        let kinds = crate::actors::kind_catalog();
        rows.iter().map(|(suite, row)| cluster_scoped_writes(suite, row, &opts.fixtures_dir, &kinds)).collect()
    } else {
        vec![Vec::new(); rows.len()]
    };
    let turns = TurnTaker::new(footprints);
    let results: std::sync::Mutex<Vec<Option<RowResult>>> = std::sync::Mutex::new(vec![None; rows.len()]);
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1).min(rows.len().max(1)) {
            scope.spawn(|| {
                while let Some(i) = turns.next() {
                    let Some((suite, row)) = rows.get(i) else { return };
                    let r = backend.run_row(suite, row, opts);
                    turns.done(i);
                    on_done(&r);
                    results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
                }
            });
        }
    });
    results.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().flatten().collect()
}

/// Whether a run passed: no row failed (skips do not fail a run, and are never passes).
pub fn passed(results: &[RowResult]) -> bool {
    results.iter().all(|r| r.outcome != Outcome::Failed)
}
