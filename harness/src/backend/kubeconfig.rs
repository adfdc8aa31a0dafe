//! The kubeconfig backend: any cluster reached through a kubeconfig, in real time. Each row runs
//! in a namespace of its own, deleted afterwards; the timeline comes from watches over the
//! kinds the row touches.

use crate::actors::{ACTORS_CONFIGMAP_NAME, ACTORS_CONFIGMAP_NAMESPACE};
use crate::backend::{Backend, LogBuffer, RunOptions, begin, collect_record, finish};
use crate::engine::cleanup::{RowObjects, SharedObjects};
use crate::engine::runner::{Knobs, NoKnobs, RowContext, RowFailure, Timeline, execute};
use crate::report::result::RowResult;
use crate::report::result::{CheckEvidence, FlightRecord};
use crate::suite::{ActorName, Capability, LoadedSuite, Row};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams, WatchEvent, WatchParams};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Any cluster reached through a kubeconfig, in real time: each row runs in a namespace of its
/// own, deleted afterwards; the timeline comes from watches over the kinds the row touches.
pub struct KubeconfigBackend {
    kubeconfig: Option<PathBuf>,
    runtime: tokio::runtime::Runtime,
    /// Controllers and simulated actors known to run in the cluster.
    actors: BTreeSet<ActorName>,
    /// What `kproof serve` announced about itself (`kuberay.version`).
    facts: BTreeMap<String, String>,
    /// What the rows running now touched outside their namespaces (for their cleanup).
    objects: Arc<SharedObjects>,
}

impl KubeconfigBackend {
    /// Uses `path`, or the default kubeconfig resolution (`KUBECONFIG`, `~/.kube/config`) when `None`.
    /// The actors the cluster runs are read from the `kube-public/kproof-actors` ConfigMap
    /// `kproof serve` writes; add others (say, a real KubeRay operator) with [`Self::with_actors`].
    pub fn new(path: Option<PathBuf>) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
        let mut backend = Self {
            kubeconfig: path,
            runtime,
            actors: BTreeSet::new(),
            facts: BTreeMap::new(),
            objects: Default::default(),
        };
        let data = backend.runtime.block_on(async {
            let Ok(client) = backend.client().await else { return BTreeMap::new() };
            let api: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client, ACTORS_CONFIGMAP_NAMESPACE);
            let found = tokio::time::timeout(Duration::from_secs(5), api.get_opt(ACTORS_CONFIGMAP_NAME)).await;
            let Ok(Ok(Some(cm))) = found else { return BTreeMap::new() };
            cm.data.unwrap_or_default()
        });
        let listed = data.get("actors").cloned().unwrap_or_default();
        // Names this build does not know (a newer `kproof serve`) cannot be needed by any row.
        backend.actors = listed.split(',').filter_map(|a| a.trim().parse().ok()).collect();
        backend.facts = data.into_iter().filter(|(k, _)| crate::suite::BACKEND_FACTS.contains(&k.as_str())).collect();
        Ok(backend)
    }

    /// Declares more actors as running in the cluster.
    pub fn with_actors(mut self, names: impl IntoIterator<Item = ActorName>) -> Self {
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
        for doc in crate::suite::load_manifests(fixtures_dir, m).unwrap_or_default() {
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
        if let crate::suite::Step::Apply(m) | crate::suite::Step::Create(m) = s {
            add_manifest(&m.manifest, &mut kinds);
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
        for doc in crate::suite::load_manifests(fixtures_dir, m).unwrap_or_default() {
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

/// Kinds a row names without an apiVersion (the write selectors of `before`, `never`, `count`:
/// `{kind: RayCluster, change: ADDED}`), resolved by name against discovery.
fn bare_kinds(row: &Row) -> BTreeSet<String> {
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(o) => {
                if o.get("apiVersion").is_none()
                    && let Some(k) = o.get("kind").and_then(Value::as_str)
                {
                    out.insert(k.to_string());
                }
                o.values().for_each(|x| walk(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(&serde_json::to_value(row).unwrap_or(Value::Null), &mut out);
    out
}

/// A timeline recorded from watches: the verb inferred from the change (`delete` for the write
/// that starts a graceful deletion), no user agent; or, with the cluster's audit log, the verb,
/// user agent, user and subresource of the request that made each write.
#[derive(Default)]
struct WatchTimeline {
    writes: Mutex<Vec<(Value, Value)>>,
    audit: Option<Arc<crate::backend::audit::AuditLog>>,
    /// Kinds whose writes the recorder may have missed, each with why (see [`record_watch`]).
    gaps: Mutex<BTreeMap<String, String>>,
}

impl Timeline for WatchTimeline {
    fn lag(&self) -> Duration {
        Duration::from_millis(300)
    }

    fn gap(&self, kind: Option<&str>) -> Option<String> {
        let gaps = self.gaps.lock();
        match kind {
            Some(k) => gaps.get(k).cloned(),
            None => gaps.values().next().cloned(),
        }
    }

    fn entries(&self) -> crate::engine::runner::TimelineEntries {
        let mut e = self.writes.lock().clone();
        e.sort_by_key(|(m, _)| m["resourceVersion"].as_u64().unwrap_or(0));
        if let Some(audit) = &self.audit {
            let index = audit.read();
            for (meta, _) in &mut e {
                let rv = meta["resourceVersion"].as_u64().unwrap_or(0);
                let uid = meta["uid"].as_str().unwrap_or_default();
                let Some(writer) = index.writer_of(rv, uid, meta["verb"] == "delete") else { continue };
                meta["verb"] = json!(writer.verb);
                meta["userAgent"] = json!(writer.user_agent);
                meta["user"] = json!(writer.user);
                if let Some(sub) = &writer.subresource {
                    meta["subresource"] = json!(sub);
                }
            }
        }
        Arc::new(
            e.into_iter().map(|(meta, object)| crate::engine::runner::TimelineItem::decoded(meta, object)).collect(),
        )
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
    use futures::StreamExt;
    let mut from = from;
    // Objects seen terminating: the write that first sets deletionTimestamp was a delete.
    let mut terminating: BTreeSet<String> = BTreeSet::new();
    // The last version of each object, to tell a status write from a write of the object.
    let mut last: BTreeMap<String, Value> = BTreeMap::new();
    // A watch ends at its timeout, or when kube-apiserver restarts: it is started again from
    // the last version recorded. The task is aborted when the row ends.
    loop {
        let stream = match api.watch(&WatchParams::default().disable_bookmarks().timeout(290), &from).await {
            Ok(s) => s,
            Err(kube::Error::Api(e)) if e.code == 410 => {
                from = relist_after_expiry(&api, &ar, &sink, &from, namespaces.as_deref(), &last).await;
                continue;
            }
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let mut stream = stream.boxed();
        while let Some(item) = stream.next().await {
            let ev = match item {
                Ok(WatchEvent::Error(e)) if e.code == 410 => {
                    from = relist_after_expiry(&api, &ar, &sink, &from, namespaces.as_deref(), &last).await;
                    break;
                }
                Ok(ev) => ev,
                Err(_) => break,
            };
            let Some(rv) = record_event(ev, &ar, &sink, namespaces.as_deref(), &mut terminating, &mut last) else {
                continue;
            };
            from = rv;
        }
    }
}

/// After a 410 (the server's watch history no longer reaches `from`, as after a kube-apiserver
/// restart): lists the resource and goes on from the list's version. When no object (of
/// `namespaces`, when given) changed after `from` unseen, and none recorded is gone, nothing was
/// missed; otherwise the kind has a gap, and timeline checks over it fail saying so rather than
/// judge a partial record.
async fn relist_after_expiry(
    api: &Api<DynamicObject>,
    ar: &ApiResource,
    sink: &WatchTimeline,
    from: &str,
    namespaces: Option<&BTreeSet<String>>,
    last: &BTreeMap<String, Value>,
) -> String {
    let list = loop {
        match api.list(&ListParams::default()).await {
            Ok(list) => break list,
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    };
    let number = |rv: Option<&str>| rv.and_then(|r| r.parse::<u64>().ok()).unwrap_or(0);
    let since = number(Some(from));
    let kept = |o: &&DynamicObject| match (namespaces, o.metadata.namespace.as_ref()) {
        (Some(keep), Some(ns)) => keep.contains(ns),
        _ => true,
    };
    let listed: BTreeMap<String, u64> = list
        .items
        .iter()
        .filter(kept)
        .map(|o| (o.metadata.uid.clone().unwrap_or_default(), number(o.metadata.resource_version.as_deref())))
        .collect();
    let recorded =
        |uid: &str| number(last.get(uid).and_then(|v| v.pointer("/metadata/resourceVersion")).and_then(Value::as_str));
    let changed_unseen = listed.iter().any(|(uid, rv)| *rv > since && recorded(uid) != *rv);
    let gone_unseen = last.keys().any(|uid| !listed.contains_key(uid));
    let listed_at = list.metadata.resource_version.unwrap_or_else(|| from.to_string());
    if changed_unseen || gone_unseen {
        sink.gaps.lock().entry(ar.kind.clone()).or_insert_with(|| {
            format!(
                "the watch of {} expired (410) after resourceVersion {from}, and a list at {listed_at} found writes it had not delivered: writes of that kind in between are missing from the timeline",
                ar.kind
            )
        });
    }
    listed_at
}

/// Records one watch event (ADDED, MODIFIED or DELETED of an object in `namespaces`, when
/// given) and returns its resourceVersion; `None` for other events.
fn record_event(
    ev: WatchEvent<DynamicObject>,
    ar: &ApiResource,
    sink: &WatchTimeline,
    namespaces: Option<&BTreeSet<String>>,
    terminating: &mut BTreeSet<String>,
    last: &mut BTreeMap<String, Value>,
) -> Option<String> {
    let (change, mut verb, obj) = match ev {
        WatchEvent::Added(o) => ("ADDED", "create", o),
        WatchEvent::Modified(o) => ("MODIFIED", "update", o),
        WatchEvent::Deleted(o) => ("DELETED", "delete", o),
        _ => return None,
    };
    let rv = obj.metadata.resource_version.clone();
    let uid = obj.metadata.uid.clone().unwrap_or_default();
    if change == "DELETED" {
        terminating.remove(&uid);
    } else if obj.metadata.deletion_timestamp.is_some() && terminating.insert(uid.clone()) {
        verb = "delete";
    }
    if let (Some(keep), Some(ns)) = (namespaces, obj.metadata.namespace.as_ref())
        && !keep.contains(ns)
    {
        return rv;
    }
    let manager = obj.metadata.managed_fields.as_ref().and_then(|m| m.last()).and_then(|m| m.manager.clone());
    let value = serde_json::to_value(&obj).unwrap_or(Value::Null);
    let subresource = match change {
        "MODIFIED" => last.get(&uid).and_then(|before| status_write(before, &value)),
        _ => None,
    };
    if change == "DELETED" {
        last.remove(&uid);
    } else {
        last.insert(uid, value.clone());
    }
    let mut meta = json!({
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
    if let Some(sub) = subresource {
        meta["subresource"] = json!(sub);
    }
    sink.writes.lock().push((meta, value));
    rv
}

/// `Some("status")` when `after` differs from `before` only in its status (and the bookkeeping
/// every write changes: resourceVersion, managedFields): a write of the status subresource,
/// which a watch does not name. A write of the object itself cannot change the status of a
/// kind that has the subresource, and a status write cannot change anything else.
fn status_write(before: &Value, after: &Value) -> Option<&'static str> {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("status");
        }
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
            m.remove("managedFields");
        }
        v
    };
    (before.get("status") != after.get("status") && strip(before) == strip(after)).then_some("status")
}

impl Backend for KubeconfigBackend {
    fn name(&self) -> &str {
        "kubeconfig"
    }

    fn capabilities(&self) -> BTreeSet<Capability> {
        let mut c: BTreeSet<Capability> = [Capability::Timeline].into();
        c.extend(self.actors.iter().map(|a| Capability::Actor(*a)));
        c
    }

    fn version(&self, component: crate::suite::Component) -> Option<crate::suite::Version> {
        match component {
            crate::suite::Component::Kuberay => {
                self.facts.get("kuberay.version").and_then(|v| crate::suite::Version::parse(v))
            }
            _ => None,
        }
    }

    fn facts(&self, _row: &Row) -> BTreeMap<String, String> {
        self.facts.clone()
    }

    fn shares_cluster(&self) -> bool {
        true
    }

    fn run_row(&self, suite: &LoadedSuite, row: &Row, opts: &RunOptions) -> RowResult {
        run_real_time_row(self, &self.runtime, suite, row, opts, || async {
            match self.client().await {
                Ok(client) => {
                    let run = OwnNamespace {
                        knobs: Arc::new(NoKnobs("the kubeconfig backend's actors are real or remote")),
                        wait_for_service_account: false,
                        objects: &self.objects,
                        audit: None,
                    };
                    run_in_own_namespace(&client, suite, row, opts, run, self.facts(row)).await
                }
                Err(e) => (Err(RowFailure::plain(e)), None, Vec::new()),
            }
        })
    }
}

/// A row on a real-time backend: skipped when `backend` lacks what it needs, else `run` on
/// `runtime`, timed (its wall time is the backend's time), and finished with its flight record.
pub(crate) fn run_real_time_row<F, Fut>(
    backend: &dyn Backend,
    runtime: &tokio::runtime::Runtime,
    suite: &LoadedSuite,
    row: &Row,
    opts: &RunOptions,
    run: F,
) -> RowResult
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = (Result<(), RowFailure>, Option<FlightRecord>, Vec<CheckEvidence>)>,
{
    let mut result = match begin(backend, suite, row) {
        Ok(r) => r,
        Err(skipped) => return *skipped,
    };
    let wall = std::time::Instant::now();
    let (outcome, record, checks) = runtime.block_on(run());
    result.checks = checks;
    result.wall_ms = wall.elapsed().as_millis() as u64;
    result.backend_ms = result.wall_ms;
    finish(suite, result, outcome, || record.unwrap_or_default(), opts)
}

/// How a real-time backend runs a row in its own namespace.
pub(crate) struct OwnNamespace<'a> {
    /// The actors' knobs.
    pub knobs: Arc<dyn Knobs>,
    /// Wait until the namespace's `default` ServiceAccount exists (a cluster whose
    /// ServiceAccount admission refuses pods until kube-controller-manager made it).
    pub wait_for_service_account: bool,
    /// What the rows running now touched outside their namespaces.
    pub objects: &'a Arc<SharedObjects>,
    /// The cluster's audit log, which names the request behind each write of the timeline.
    pub audit: Option<Arc<crate::backend::audit::AuditLog>>,
}

/// Runs a row on a real-time cluster in a fresh namespace of its own, recording the timeline
/// from watches over the kinds the row touches; afterwards the namespace and what the row
/// created elsewhere are deleted ([`crate::engine::cleanup`]) unless `opts.keep`.
pub(crate) async fn run_in_own_namespace(
    client: &kube::Client,
    suite: &LoadedSuite,
    row: &Row,
    opts: &RunOptions,
    run: OwnNamespace<'_>,
    facts: BTreeMap<String, String>,
) -> (Result<(), RowFailure>, Option<FlightRecord>, Vec<CheckEvidence>) {
    let OwnNamespace { knobs, wait_for_service_account, objects, audit } = run;
    let logs = LogBuffer::default();
    let ns_name = format!("kproof-{}-{}", row.id.chars().take(40).collect::<String>(), suffix());
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let ns: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(json!({"metadata": {"name": ns_name, "labels": {"kproof.dev/row": row.id}}}))
            .unwrap_or_default();
    if let Err(e) = namespaces.create(&PostParams::default(), &ns).await {
        let m = format!("cannot create namespace {ns_name}: {e}");
        return (Err(RowFailure::plain(m)), None, Vec::new());
    }
    if wait_for_service_account && let Err(e) = wait_for_default_service_account(client, &ns_name).await {
        let _ = namespaces.delete(&ns_name, &Default::default()).await;
        return (Err(RowFailure::plain(e)), None, Vec::new());
    }
    let timeline = Arc::new(WatchTimeline { writes: Default::default(), audit, gaps: Default::default() });
    let mut watchers = Vec::new();
    let mut keep = touched_namespaces(row, &opts.fixtures_dir);
    keep.insert(ns_name.clone());
    let keep = Arc::new(keep);
    let mut namespaced_kinds: Vec<kube::api::ApiResource> = Vec::new();
    if let Ok(d) = kube::Discovery::new(client.clone()).run_aggregated().await {
        let mut kinds = touched_kinds(suite, row, &opts.fixtures_dir);
        let bare = bare_kinds(row);
        for group in d.groups() {
            for (ar, _) in group.recommended_resources() {
                if bare.contains(&ar.kind) {
                    kinds.insert((ar.api_version.clone(), ar.kind.clone()));
                }
            }
        }
        for (api_version, kind) in kinds {
            let (g, v) = api_version.split_once('/').unwrap_or(("", &api_version));
            let Some((ar, caps)) = d.resolve_gvk(&kube::core::GroupVersionKind::gvk(g, v, &kind)) else {
                continue;
            };
            let namespaced = caps.scope == kube::discovery::Scope::Namespaced;
            if namespaced {
                namespaced_kinds.push(ar.clone());
            }
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
    let made = RowObjects::new(objects.clone(), &ns_name);
    let ctx = RowContext {
        client: made.client(client, opts.default_timeout),
        namespace: ns_name.clone(),
        timeline: timeline.clone(),
        knobs,
        fixtures_dir: opts.fixtures_dir.clone(),
        default_timeout: opts.default_timeout,
        poll: opts.poll,
        started: tokio::time::Instant::now(),
        exchanges: Default::default(),
        evidence: Default::default(),
        facts,
    };
    let outcome = execute(&ctx, &suite.suite, row).await;
    let record = if outcome.is_err() { Some(collect_record(&ctx, &logs).await) } else { None };
    let checks = std::mem::take(&mut *ctx.evidence.lock());
    for w in watchers {
        w.abort();
    }
    if opts.keep {
        return (outcome, record, checks);
    }
    let _ = namespaces.delete(&ns_name, &Default::default()).await;
    release_holds(client, &ns_name, &namespaced_kinds).await;
    let problems = made.clean_up(client, opts.default_timeout).await;
    if !problems.is_empty() {
        tracing::warn!(row = %row.id, "cleanup left: {}", problems.join("; "));
    }
    (outcome, record, checks)
}

/// Takes the harness's own finalizers (`kproof.dev/…`, which rows add to hold an object) off
/// every object of `kinds` in `namespace`: a row that failed before letting go of its hold would
/// otherwise keep its namespace terminating for ever. The test-and-replace patch leaves a list
/// another writer changed in between alone.
async fn release_holds(client: &kube::Client, namespace: &str, kinds: &[kube::api::ApiResource]) {
    for ar in kinds {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, ar);
        let Ok(list) = api.list(&ListParams::default()).await else { continue };
        for o in list {
            let finalizers = o.metadata.finalizers.clone().unwrap_or_default();
            if !finalizers.iter().any(|f| f.starts_with("kproof.dev/")) {
                continue;
            }
            let rest: Vec<&String> = finalizers.iter().filter(|f| !f.starts_with("kproof.dev/")).collect();
            let patch: json_patch::Patch = match serde_json::from_value(json!([
                {"op": "test", "path": "/metadata/finalizers", "value": finalizers},
                {"op": "replace", "path": "/metadata/finalizers", "value": rest},
            ])) {
                Ok(p) => p,
                Err(_) => continue,
            };
            let name = o.metadata.name.clone().unwrap_or_default();
            if let Err(e) =
                api.patch(&name, &kube::api::PatchParams::default(), &kube::api::Patch::Json::<()>(patch)).await
            {
                tracing::warn!(%namespace, %name, error = %e, "could not release the row's hold");
            }
        }
    }
}

/// Waits (up to 30 s) for kube-controller-manager to create the namespace's `default`
/// ServiceAccount, without which ServiceAccount admission refuses pods.
async fn wait_for_default_service_account(client: &kube::Client, namespace: &str) -> Result<(), String> {
    let api: Api<k8s_openapi::api::core::v1::ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let exists = || async {
        api.get_opt("default")
            .await
            .map(|sa| sa.is_some())
            .map_err(|e| format!("reading ServiceAccount {namespace}/default: {e}"))
    };
    crate::backend::poll_until(Duration::from_secs(30), exists, || {
        format!("ServiceAccount {namespace}/default did not appear within 30s (is kube-controller-manager running?)")
    })
    .await
}

fn suffix() -> String {
    use rand::Rng;
    const A: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut r = rand::rng();
    (0..5).map(|_| A[r.random_range(0..A.len())] as char).collect()
}
