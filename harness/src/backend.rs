//! Backends: where rows run. Each states its capabilities; a row needing one it lacks is
//! skipped with the reason, never passed.

use crate::load::LoadedSuite;
use crate::result::{FlightRecord, Outcome, RowResult};
use crate::runner::{Knobs, RowContext, RowFailure, Timeline, execute};
use crate::suite::Row;
use fake_apiserver::{ApiServer, Config};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams, WatchEvent, WatchParams};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Time can be advanced instantly (a paused clock): rows that wait hours take milliseconds.
pub const VIRTUAL_TIME: &str = "virtual-time";
/// The timeline of writes is available (server log, or a watch recorder).
pub const TIMELINE: &str = "timeline";
/// Timeline entries know their verb, user agent and field manager (the server's write log).
pub const WRITE_ACTORS: &str = "write-actors";
/// Controllers can be configured per row (feature gates, settings).
pub const CONTROLLER_SETTINGS: &str = "controller-settings";
/// Prefix of the capability that an actor (simulated component or controller) with knobs runs.
pub const ACTOR_PREFIX: &str = "actor:";
/// Knob steps can turn the actors' knobs (needed by any row with a `knob` step).
pub const KNOBS: &str = "knobs";

/// Options every backend takes from the command line or the test harness.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub fixtures_dir: PathBuf,
    /// Where failing rows' flight records go; `None` keeps them only in the result.
    pub flight_dir: Option<PathBuf>,
    pub default_timeout: Duration,
    pub poll: Duration,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            fixtures_dir: PathBuf::from("fixtures"),
            flight_dir: None,
            default_timeout: Duration::from_secs(30),
            poll: Duration::from_millis(100),
        }
    }
}

/// Where rows run.
pub trait Backend: Send + Sync {
    /// `fake` or `kubeconfig`.
    fn name(&self) -> &str;
    /// What it offers; rows name what they need.
    fn capabilities(&self) -> BTreeSet<String>;
    /// Runs one row to a result (never panics on a failing row).
    fn run_row(&self, suite: &LoadedSuite, row: &Row, opts: &RunOptions) -> RowResult;
}

/// Why a backend cannot run a row, or `None` when it can.
pub fn skip_reason(backend: &dyn Backend, row: &Row) -> Option<String> {
    let caps = backend.capabilities();
    let mut missing: Vec<String> = row.needs.capabilities.iter().filter(|c| !caps.contains(*c)).cloned().collect();
    if (!row.needs.feature_gates.is_empty() || !row.needs.settings.is_empty()) && !caps.contains(CONTROLLER_SETTINGS) {
        missing.push(CONTROLLER_SETTINGS.to_string());
    }
    let turns_knobs = row.steps.iter().any(|s| matches!(s, crate::suite::Step::Knob { .. }));
    if turns_knobs && !caps.contains(KNOBS) && !missing.iter().any(|m| m == KNOBS) {
        missing.push(KNOBS.to_string());
    }
    (!missing.is_empty()).then(|| format!("backend {} lacks {}", backend.name(), missing.join(", ")))
}

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
    }
}

/// The result a row starts with, or (as `Err`) its final result when the backend must skip it.
fn begin(backend: &dyn Backend, suite: &LoadedSuite, row: &Row) -> Result<RowResult, Box<RowResult>> {
    let mut result = base_result(suite, row, backend.name());
    match skip_reason(backend, row) {
        Some(why) => {
            result.reason = Some(why);
            Err(Box::new(result))
        }
        None => Ok(result),
    }
}

fn finish(
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
            let mut rec = record();
            rec.mismatches = f.mismatches;
            if let Some(dir) = &opts.flight_dir {
                match crate::recorder::write_flight_record(dir, &result, &rec) {
                    Ok(p) => result.flight_record = Some(p),
                    Err(e) => result.failure = Some(format!("{}\n(flight record not written: {e})", f.message)),
                }
            }
        }
    }
    result
}

/// A simulated actor or controller running for one row.
pub trait Actor: Send {
    /// Turns a knob; `Err` names what is wrong.
    fn knob(&mut self, knob: &str, value: &Value) -> Result<(), String>;
}

/// Starts an actor for a row on the in-process backend (on the row's paused runtime), or for
/// `kproof serve` (in real time).
pub trait ActorFactory: Send + Sync {
    /// The actor's name, as rows and knob steps name it.
    fn name(&self) -> &str;
    /// Prepares the API server before any actor starts or any step runs (for example installs
    /// and waits for the CRDs the actor serves). `Err` says what went wrong.
    fn setup(&self, _client: kube::Client) -> futures::future::BoxFuture<'static, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
    /// Starts it against `client`, reading time from `clock`, configured with the row's feature
    /// gates and settings; `Err` names a gate or setting it does not accept.
    fn start(
        &self,
        client: kube::Client,
        clock: controllers::Clock,
        needs: &crate::suite::Needs,
    ) -> Result<Box<dyn Actor>, String>;
}

/// Runs every factory's setup, then starts the actors; `Err` is the first failure, named.
pub async fn start_actors(
    factories: &[Arc<dyn ActorFactory>],
    client_for: impl Fn(&str) -> kube::Client,
    clock: controllers::Clock,
    needs: &crate::suite::Needs,
) -> Result<BTreeMap<String, Box<dyn Actor>>, String> {
    for f in factories {
        f.setup(client_for(f.name())).await.map_err(|e| format!("setting up {}: {e}", f.name()))?;
    }
    let mut actors = BTreeMap::new();
    for f in factories {
        let actor =
            f.start(client_for(f.name()), clock.clone(), needs).map_err(|e| format!("starting {}: {e}", f.name()))?;
        actors.insert(f.name().to_string(), actor);
    }
    Ok(actors)
}

struct ActorKnobs(Mutex<BTreeMap<String, Box<dyn Actor>>>);

impl Knobs for ActorKnobs {
    fn turn(&self, actor: &str, knob: &str, value: &Value) -> Result<(), String> {
        let mut actors = self.0.lock();
        let known: Vec<String> = actors.keys().cloned().collect();
        let a = actors
            .get_mut(actor)
            .ok_or_else(|| format!("no actor {actor:?} runs here (running: {})", known.join(", ")))?;
        a.knob(knob, value)
    }
}

struct ServerTimeline {
    server: ApiServer,
    since: u64,
}

impl Timeline for ServerTimeline {
    fn entries(&self) -> Vec<(Value, Value)> {
        self.server
            .timeline_since(self.since)
            .into_iter()
            .map(|e| (serde_json::to_value(&e).unwrap_or(Value::Null), e.object()))
            .collect()
    }
}

/// Log lines of one row, captured from `tracing` on the row's thread.
#[derive(Clone, Default)]
struct LogBuffer(Arc<Mutex<Vec<u8>>>);

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
struct BackendClock(tokio::time::Instant);

impl tracing_subscriber::fmt::time::FormatTime for BackendClock {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        write!(w, "+{:>8}ms", self.0.elapsed().as_millis())
    }
}

/// The fake API server and the reference controllers, one fresh set per row, on a paused
/// tokio clock: waits and `advance` steps cost no wall time, and rows run in parallel.
pub struct InProcessBackend {
    factories: Vec<Arc<dyn ActorFactory>>,
}

impl InProcessBackend {
    /// A backend with no controllers (the API server and its system controllers only).
    pub fn new() -> Self {
        Self { factories: Vec::new() }
    }

    /// Adds an actor started for every row.
    pub fn with_actor(mut self, f: Arc<dyn ActorFactory>) -> Self {
        self.factories.push(f);
        self
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

    fn capabilities(&self) -> BTreeSet<String> {
        let mut c: BTreeSet<String> =
            [VIRTUAL_TIME, TIMELINE, WRITE_ACTORS, CONTROLLER_SETTINGS, KNOBS].iter().map(|s| s.to_string()).collect();
        c.extend(self.factories.iter().map(|f| format!("{ACTOR_PREFIX}{}", f.name())));
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
                return finish(
                    result,
                    Err(RowFailure {
                        summary: format!("cannot start a runtime: {e}"),
                        message: e.to_string(),
                        mismatches: vec![],
                    }),
                    FlightRecord::default,
                    opts,
                );
            }
        };
        let logs = LogBuffer::default();
        let (outcome, record, backend_ms) = runtime.block_on(async {
            let started = tokio::time::Instant::now();
            let subscriber = tracing_subscriber::fmt()
                .with_writer(logs.clone())
                .with_ansi(false)
                .with_timer(BackendClock(started))
                .with_max_level(tracing::Level::DEBUG)
                .finish();
            let _guard = tracing::subscriber::set_default(subscriber);
            let server = ApiServer::new(Config { clock_start: Some(virtual_epoch()), ..Config::default() });
            let server_clock = server.clock();
            let clock = controllers::Clock::from_fn(move || server_clock.now());
            let actors = match start_actors(&self.factories, |name| server.client_as(name), clock, &row.needs).await {
                Ok(a) => a,
                Err(e) => {
                    let failure = RowFailure { summary: e.clone(), message: e, mismatches: vec![] };
                    return (Err(failure), None, started.elapsed().as_millis() as u64);
                }
            };
            let ctx = RowContext {
                client: server.client_as("kproof"),
                namespace: "default".into(),
                timeline: Arc::new(ServerTimeline { server: server.clone(), since: server.resource_version() }),
                knobs: Arc::new(ActorKnobs(Mutex::new(actors))),
                fixtures_dir: opts.fixtures_dir.clone(),
                default_timeout: opts.default_timeout,
                poll: opts.poll,
                started,
            };
            let outcome = execute(&ctx, &suite.suite, row).await;
            let record = if outcome.is_err() { Some(collect_record(&ctx, &logs).await) } else { None };
            (outcome, record, started.elapsed().as_millis() as u64)
        });
        result.backend_ms = backend_ms;
        result.wall_ms = wall.elapsed().as_millis() as u64;
        finish(result, outcome, || record.unwrap_or_default(), opts)
    }
}

/// Gathers the flight record: timeline, objects in the row's namespace, events, logs.
async fn collect_record(ctx: &RowContext, logs: &LogBuffer) -> FlightRecord {
    let timeline = ctx
        .timeline
        .entries()
        .into_iter()
        .map(|(mut meta, obj)| {
            meta["object"] = obj;
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
    FlightRecord { timeline, mismatches: Vec::new(), objects, events, logs }
}

/// Any cluster reached through a kubeconfig, in real time: each row runs in a namespace of its
/// own, deleted afterwards; the timeline comes from watches over the kinds the row touches.
pub struct KubeconfigBackend {
    kubeconfig: Option<PathBuf>,
    runtime: tokio::runtime::Runtime,
    /// Controllers and simulated actors known to run in the cluster.
    actors: BTreeSet<String>,
}

/// Where `kproof serve` lists the actors it runs (`data.actors`, comma-separated), so the
/// kubeconfig backend can offer `actor:NAME` capabilities for them.
pub const ACTORS_CONFIGMAP_NAMESPACE: &str = "kube-public";
/// Name of the ConfigMap listing the actors (see [`ACTORS_CONFIGMAP_NAMESPACE`]).
pub const ACTORS_CONFIGMAP_NAME: &str = "kproof-actors";

impl KubeconfigBackend {
    /// Uses `path`, or the default kubeconfig resolution (`KUBECONFIG`, `~/.kube/config`) when `None`.
    /// The actors the cluster runs are read from the `kube-public/kproof-actors` ConfigMap
    /// `kproof serve` writes; add others (say, a real KubeRay operator) with [`Self::with_actors`].
    pub fn new(path: Option<PathBuf>) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
        let mut backend = Self { kubeconfig: path, runtime, actors: BTreeSet::new() };
        backend.actors = backend.runtime.block_on(async {
            let Ok(client) = backend.client().await else { return BTreeSet::new() };
            let api: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client, ACTORS_CONFIGMAP_NAMESPACE);
            let found = tokio::time::timeout(Duration::from_secs(5), api.get_opt(ACTORS_CONFIGMAP_NAME)).await;
            let Ok(Ok(Some(cm))) = found else { return BTreeSet::new() };
            let listed = cm.data.and_then(|d| d.get("actors").cloned()).unwrap_or_default();
            listed.split(',').map(str::trim).filter(|a| !a.is_empty()).map(str::to_string).collect()
        });
        Ok(backend)
    }

    /// Declares more actors as running in the cluster.
    pub fn with_actors(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.actors.extend(names);
        self
    }

    async fn client(&self) -> Result<kube::Client, String> {
        let config = match &self.kubeconfig {
            Some(p) => {
                let kc = kube::config::Kubeconfig::read_from(p)
                    .map_err(|e| format!("cannot read kubeconfig {}: {e}", p.display()))?;
                kube::Config::from_custom_kubeconfig(kc, &Default::default())
                    .await
                    .map_err(|e| format!("bad kubeconfig {}: {e}", p.display()))?
            }
            None => kube::Config::infer().await.map_err(|e| format!("no kubeconfig: {e}"))?,
        };
        kube::Client::try_from(config).map_err(|e| format!("cannot build a client: {e}"))
    }
}

/// Kinds a row touches: from fixtures, steps and expectations.
fn touched_kinds(suite: &LoadedSuite, row: &Row, fixtures_dir: &std::path::Path) -> BTreeSet<(String, String)> {
    let mut kinds = BTreeSet::new();
    let add_manifest = |m: &crate::suite::Manifest, kinds: &mut BTreeSet<(String, String)>| {
        for doc in crate::load::load_manifests(fixtures_dir, m).unwrap_or_default() {
            if let (Some(a), Some(k)) = (doc["apiVersion"].as_str(), doc["kind"].as_str()) {
                kinds.insert((a.to_string(), k.to_string()));
            }
        }
    };
    for m in suite.suite.fixtures.iter().chain(&row.fixtures) {
        add_manifest(m, &mut kinds);
    }
    let text = serde_json::to_value(row).unwrap_or(Value::Null);
    collect_refs(&text, &mut kinds);
    for s in &row.steps {
        if let crate::suite::Step::Apply(m) = s {
            add_manifest(m, &mut kinds);
        }
    }
    kinds
}

/// Namespaces a row names besides its own (objects it creates elsewhere, or namespaces it creates).
fn touched_namespaces(row: &Row, fixtures_dir: &std::path::Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(o) => {
                if let Some(ns) = o.get("namespace").and_then(Value::as_str) {
                    out.insert(ns.to_string());
                }
                if o.get("kind").and_then(Value::as_str) == Some("Namespace")
                    && let Some(n) = o.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str)
                {
                    out.insert(n.to_string());
                }
                o.values().for_each(|x| walk(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(&serde_json::to_value(row).unwrap_or(Value::Null), &mut out);
    for m in &row.fixtures {
        for doc in crate::load::load_manifests(fixtures_dir, m).unwrap_or_default() {
            walk(&doc, &mut out);
        }
    }
    out
}

fn collect_refs(v: &Value, out: &mut BTreeSet<(String, String)>) {
    match v {
        Value::Object(o) => {
            if let (Some(a), Some(k)) =
                (o.get("apiVersion").and_then(Value::as_str), o.get("kind").and_then(Value::as_str))
            {
                out.insert((a.to_string(), k.to_string()));
            }
            o.values().for_each(|x| collect_refs(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| collect_refs(x, out)),
        _ => {}
    }
}

/// A timeline recorded from watches (verb inferred from the change, `delete` for the write that
/// starts a graceful deletion; no user agent).
#[derive(Default)]
struct WatchTimeline(Mutex<Vec<(Value, Value)>>);

impl Timeline for WatchTimeline {
    fn lag(&self) -> Duration {
        Duration::from_millis(300)
    }

    fn entries(&self) -> Vec<(Value, Value)> {
        let mut e = self.0.lock().clone();
        e.sort_by_key(|(m, _)| m["resourceVersion"].as_u64().unwrap_or(0));
        e
    }
}

struct NoKnobs;

impl Knobs for NoKnobs {
    fn turn(&self, actor: &str, _: &str, _: &Value) -> Result<(), String> {
        Err(format!("the kubeconfig backend has no actor {actor:?}"))
    }
}

/// Records the writes to one resource. Namespaced resources are watched in all namespaces and
/// kept when they are in `namespaces` (the row's own, and those the row names).
async fn record_watch(
    api: Api<DynamicObject>,
    ar: ApiResource,
    sink: Arc<WatchTimeline>,
    from: String,
    namespaces: Option<Arc<BTreeSet<String>>>,
) {
    let Ok(stream) = api.watch(&WatchParams::default().disable_bookmarks().timeout(290), &from).await else { return };
    use futures::StreamExt;
    let mut stream = stream.boxed();
    // Objects seen terminating: the write that first sets deletionTimestamp was a delete.
    let mut terminating: BTreeSet<String> = BTreeSet::new();
    while let Some(Ok(ev)) = stream.next().await {
        let (change, mut verb, obj) = match ev {
            WatchEvent::Added(o) => ("ADDED", "create", o),
            WatchEvent::Modified(o) => ("MODIFIED", "update", o),
            WatchEvent::Deleted(o) => ("DELETED", "delete", o),
            _ => continue,
        };
        let uid = obj.metadata.uid.clone().unwrap_or_default();
        if change == "DELETED" {
            terminating.remove(&uid);
        } else if obj.metadata.deletion_timestamp.is_some() && terminating.insert(uid) {
            verb = "delete";
        }
        if let (Some(keep), Some(ns)) = (&namespaces, obj.metadata.namespace.as_ref())
            && !keep.contains(ns)
        {
            continue;
        }
        let manager = obj.metadata.managed_fields.as_ref().and_then(|m| m.last()).and_then(|m| m.manager.clone());
        let meta = json!({
            "resourceVersion": obj.metadata.resource_version.as_deref().and_then(|r| r.parse::<u64>().ok()).unwrap_or(0),
            "verb": verb,
            "change": change,
            "apiVersion": ar.api_version,
            "kind": ar.kind,
            "namespace": obj.metadata.namespace.clone().unwrap_or_default(),
            "name": obj.metadata.name.clone().unwrap_or_default(),
            "uid": obj.metadata.uid.clone().unwrap_or_default(),
            "userAgent": "",
            "fieldManager": manager,
        });
        sink.0.lock().push((meta, serde_json::to_value(&obj).unwrap_or(Value::Null)));
    }
}

impl Backend for KubeconfigBackend {
    fn name(&self) -> &str {
        "kubeconfig"
    }

    fn capabilities(&self) -> BTreeSet<String> {
        let mut c: BTreeSet<String> = [TIMELINE.to_string()].into();
        c.extend(self.actors.iter().map(|a| format!("{ACTOR_PREFIX}{a}")));
        c
    }

    fn run_row(&self, suite: &LoadedSuite, row: &Row, opts: &RunOptions) -> RowResult {
        let mut result = match begin(self, suite, row) {
            Ok(r) => r,
            Err(skipped) => return *skipped,
        };
        let wall = std::time::Instant::now();
        let logs = LogBuffer::default();
        let (outcome, record) = self.runtime.block_on(async {
            let client = match self.client().await {
                Ok(c) => c,
                Err(e) => return (Err(RowFailure { summary: e.clone(), message: e, mismatches: vec![] }), None),
            };
            let ns_name = format!("kproof-{}-{}", row.id.chars().take(40).collect::<String>(), suffix());
            let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
            let ns: k8s_openapi::api::core::v1::Namespace =
                serde_json::from_value(json!({"metadata": {"name": ns_name, "labels": {"kproof.dev/row": row.id}}}))
                    .unwrap_or_default();
            if let Err(e) = namespaces.create(&PostParams::default(), &ns).await {
                let m = format!("cannot create namespace {ns_name}: {e}");
                return (Err(RowFailure { summary: m.clone(), message: m, mismatches: vec![] }), None);
            }
            let timeline = Arc::new(WatchTimeline::default());
            let mut watchers = Vec::new();
            let mut keep = touched_namespaces(row, &opts.fixtures_dir);
            keep.insert(ns_name.clone());
            let keep = Arc::new(keep);
            if let Ok(d) = kube::Discovery::new(client.clone()).run_aggregated().await {
                for (api_version, kind) in touched_kinds(suite, row, &opts.fixtures_dir) {
                    let (g, v) = api_version.split_once('/').unwrap_or(("", &api_version));
                    let Some((ar, caps)) = d.resolve_gvk(&kube::core::GroupVersionKind::gvk(g, v, &kind)) else {
                        continue;
                    };
                    let namespaced = caps.scope == kube::discovery::Scope::Namespaced;
                    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
                    let from = api
                        .list(&ListParams::default().limit(1))
                        .await
                        .ok()
                        .and_then(|l| l.metadata.resource_version)
                        .unwrap_or_else(|| "0".into());
                    let filter = namespaced.then(|| keep.clone());
                    watchers.push(tokio::spawn(record_watch(api, ar, timeline.clone(), from, filter)));
                }
            }
            let ctx = RowContext {
                client: client.clone(),
                namespace: ns_name.clone(),
                timeline: timeline.clone(),
                knobs: Arc::new(NoKnobs),
                fixtures_dir: opts.fixtures_dir.clone(),
                default_timeout: opts.default_timeout,
                poll: opts.poll,
                started: tokio::time::Instant::now(),
            };
            let outcome = execute(&ctx, &suite.suite, row).await;
            let record = if outcome.is_err() { Some(collect_record(&ctx, &logs).await) } else { None };
            for w in watchers {
                w.abort();
            }
            let _ = namespaces.delete(&ns_name, &Default::default()).await;
            (outcome, record)
        });
        result.wall_ms = wall.elapsed().as_millis() as u64;
        result.backend_ms = result.wall_ms;
        finish(result, outcome, || record.unwrap_or_default(), opts)
    }
}

fn suffix() -> String {
    use rand::Rng;
    const A: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut r = rand::rng();
    (0..5).map(|_| A[r.random_range(0..A.len())] as char).collect()
}
