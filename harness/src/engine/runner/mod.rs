//! Runs one row: fixtures, steps, expectations, with bindings, against any backend's client.

mod bindings;
mod checks;

pub use checks::timeline_line;

use crate::engine::lazy::LazyObject;
use crate::engine::matching::{check_fields, event_matches};
use crate::engine::request::{self, Exchange, FIELD_MANAGER};
use crate::report::result::{CheckEvidence, MatchedUnit, Mismatch, RowPart};
use crate::suite::ActorName;
use crate::suite::load::load_manifests;
use crate::suite::{
    BeforeMatch, EventMatch, Expectation, Manifest, ObjectMatch, ObjectRef, PatchType, Row, Step, Suite,
    WriteExpectation, format_duration,
};
use bindings::{substitute, substitute_event, substitute_fields, substitute_ref, substitute_str};
use http::Method;
use kube::Resource;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, Discovery, Scope};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// A timeline's writes, oldest first. Shared, since every timeline expectation of a row reads it.
pub type TimelineEntries = Arc<Vec<TimelineItem>>;

/// One write of a timeline: its metadata as JSON (camelCase: resourceVersion, verb, change,
/// kind, namespace, name, userAgent, fieldManager...) and the object as written. The object is
/// decoded on first use: expectations name a kind, so most writes (events above all) are only
/// ever matched on their metadata.
#[derive(Debug, Clone)]
pub struct TimelineItem {
    /// The write's metadata as JSON (camelCase keys: `resourceVersion`, `verb`, `kind`, `name`, ...).
    pub meta: Value,
    object: LazyObject,
}

impl TimelineItem {
    /// An entry whose object is already decoded.
    pub fn decoded(meta: Value, object: Value) -> Self {
        Self { meta, object: LazyObject::decoded(object) }
    }

    /// An entry whose object is JSON, decoded when first read.
    pub fn encoded(meta: Value, json: bytes::Bytes) -> Self {
        Self { meta, object: LazyObject::encoded(json) }
    }

    /// The object as written (`null` if its JSON does not parse).
    pub fn object(&self) -> &Value {
        self.object.object()
    }

    /// The object, decoded as it is read.
    pub(crate) fn object_lazily(&self) -> &LazyObject {
        &self.object
    }
}

/// The writes a backend observed during a row, oldest first.
pub trait Timeline: Send + Sync {
    /// The writes so far.
    fn entries(&self) -> TimelineEntries;

    /// How long the timeline may trail the writes (a watch recorder does; the server's own log
    /// does not). Timeline expectations wait this long before they look.
    fn lag(&self) -> Duration {
        Duration::ZERO
    }

    /// Why the writes of `kind` (of any kind, for `None`) may be incomplete (a watch recorder
    /// that lost part of its history), or `None` when the record is whole.
    fn gap(&self, _kind: Option<&str>) -> Option<String> {
        None
    }

    /// A number that moves whenever a write lands (the server's resourceVersion), when the
    /// backend knows one. Waits re-read objects only after it moved: with no write in between,
    /// a check reads the same objects and must come out the same, so re-reading on every poll
    /// of a long virtual-time wait would only cost wall time.
    fn revision(&self) -> Option<u64> {
        None
    }

    /// A number that moves whenever a write lands that could change how objects of `kind`
    /// read; by default [`Timeline::revision`], which moves with every write.
    fn revision_of(&self, _kind: &str) -> Option<u64> {
        self.revision()
    }
}

/// Turns knobs of simulated actors and controllers.
pub trait Knobs: Send + Sync {
    /// Sets `knob` of `actor` to `value`; `Err` names what is wrong (unknown actor or knob, bad value).
    fn turn(&self, actor: ActorName, knob: &str, value: &Value) -> Result<(), String>;
}

/// The knobs of a run where none can be turned (real or remote actors, certification); the
/// text says why, so a knob step's error tells the reader what to do instead.
pub struct NoKnobs(pub &'static str);

impl Knobs for NoKnobs {
    fn turn(&self, actor: ActorName, knob: &str, _: &Value) -> Result<(), String> {
        Err(format!("cannot turn knob {knob:?} of {actor}: {}", self.0))
    }
}

/// Content type of JSON bodies.
const JSON: &str = "application/json";
/// Content type of JSON merge patches.
const MERGE_PATCH: &str = "application/merge-patch+json";

/// Everything a row runs against.
pub struct RowContext {
    /// The API client the row's steps and checks use.
    pub client: kube::Client,
    /// Namespace for namespaced objects that do not name one.
    pub namespace: String,
    /// The writes the backend observes during the row, for timeline expectations.
    pub timeline: Arc<dyn Timeline>,
    /// Sets knobs of the simulated actors and controllers (`knob` steps).
    pub knobs: Arc<dyn Knobs>,
    /// The directory fixture files are read from.
    pub fixtures_dir: PathBuf,
    /// Default for `eventually` without `within`.
    pub default_timeout: Duration,
    /// How often waits re-check.
    pub poll: Duration,
    /// When the row started, on the backend's clock.
    pub started: Instant,
    /// The writes whose answers matter (refused, or with an expected error or warning), in
    /// order, as JSON: the flight record keeps them.
    pub exchanges: parking_lot::Mutex<Vec<Value>>,
    /// What each check that ran matched, in order (the report's `checks`).
    pub evidence: parking_lot::Mutex<Vec<CheckEvidence>>,
    /// Bindings the row starts with: the backend's facts (`kuberay.version`); `namespace`, the
    /// row's namespace, is added by [`execute`].
    pub facts: BTreeMap<String, String>,
}

/// Why a row failed.
#[derive(Debug, Clone)]
pub struct RowFailure {
    /// One line: which step or expectation.
    pub summary: String,
    /// The full message: expected against observed.
    pub message: String,
    /// What the failing expectations expected and saw; empty for failures that are not mismatches.
    pub mismatches: Vec<Mismatch>,
    /// The fixture, step or expectation that failed; `None` before the first (e.g. actors
    /// that could not start).
    pub part: Option<RowPart>,
}

impl RowFailure {
    /// A failure with a one-line message and nothing observed.
    pub fn plain(summary: impl Into<String>) -> Self {
        let summary = summary.into();
        Self { message: summary.clone(), summary, mismatches: Vec::new(), part: None }
    }
}

/// How long an unknown kind is looked up again in discovery before a row fails on it.
const DISCOVERY_PATIENCE: Duration = Duration::from_secs(5);

/// Resolves kinds to API resources through discovery, re-running it when a kind is unknown
/// (a CRD applied by the row makes new kinds appear). A real kube-apiserver publishes a new
/// CRD's kind in discovery a moment after the CRD is Established, so an unknown kind is looked
/// up again for a few seconds before the row fails.
struct Resolver {
    client: kube::Client,
    discovery: Option<Discovery>,
}

impl Resolver {
    async fn resolve(&mut self, api_version: &str, kind: &str) -> Result<(ApiResource, ApiCapabilities), RowFailure> {
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let gvk = GroupVersionKind::gvk(group, version, kind);
        self.find(|d| d.resolve_gvk(&gvk))
            .await?
            .ok_or_else(|| RowFailure::plain(format!("the server does not serve {api_version} {kind}")))
    }

    /// Whether any group and version the server serves has `kind`: a timeline pattern over a
    /// kind nobody serves can match no write, so it must not pass for matching nothing.
    async fn serves_kind(&mut self, kind: &str) -> Result<bool, RowFailure> {
        let has = |d: &Discovery| {
            d.groups().any(|g| g.versions().any(|v| g.versioned_resources(v).iter().any(|(ar, _)| ar.kind == kind)))
        };
        Ok(self.find(|d| has(d).then_some(())).await?.is_some())
    }

    /// `lookup` in the cached discovery, else in fresh ones for [`DISCOVERY_PATIENCE`].
    async fn find<T>(&mut self, lookup: impl Fn(&Discovery) -> Option<T>) -> Result<Option<T>, RowFailure> {
        if let Some(found) = self.discovery.as_ref().and_then(&lookup) {
            return Ok(Some(found));
        }
        let deadline = Instant::now() + DISCOVERY_PATIENCE;
        let mut pause = Duration::from_millis(50);
        loop {
            let d = Discovery::new(self.client.clone())
                .run_aggregated()
                .await
                .map_err(|e| RowFailure::plain(format!("discovery failed: {e}")))?;
            let found = lookup(&d);
            self.discovery = Some(d);
            if found.is_some() || Instant::now() >= deadline {
                return Ok(found);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(800));
        }
    }
}

fn yaml(v: &impl serde::Serialize) -> String {
    serde_saphyr::to_string(v).unwrap_or_else(|e| format!("<cannot render: {e}>"))
}

/// Executes a row. Returns the first failure.
pub async fn execute(ctx: &RowContext, suite: &Suite, row: &Row) -> Result<(), RowFailure> {
    let mut run = {
        let mut bindings = ctx.facts.clone();
        bindings.insert("namespace".into(), ctx.namespace.clone());
        bindings.insert("row".into(), bindings::row_token(&ctx.namespace));
        RowRun {
            ctx,
            resolver: Resolver { client: ctx.client.clone(), discovery: None },
            bindings,
            part: String::new(),
        }
    };
    let suite_fixtures = suite.fixtures.iter().enumerate().map(|(i, m)| (RowPart::SuiteFixture(i + 1), m));
    let row_fixtures = row.fixtures.iter().enumerate().map(|(i, m)| (RowPart::Fixture(i + 1), m));
    for (part, m) in suite_fixtures.chain(row_fixtures) {
        run.apply(m, &WriteExpectation::default(), false).await.map_err(|f| RowFailure {
            summary: format!("{part}: {}", f.summary),
            part: Some(part),
            ..f
        })?;
    }
    for (i, step) in row.steps.iter().enumerate() {
        let part = RowPart::Step(i + 1);
        run.part = format!("step {}", i + 1);
        run.step(step).await.map_err(|f| RowFailure {
            summary: format!("step {} ({}): {}", i + 1, step.name(), f.summary),
            part: Some(part),
            ..f
        })?;
    }
    for (i, e) in row.expect.iter().enumerate() {
        let part = RowPart::Expectation(i + 1);
        run.part = format!("expect {}", i + 1);
        run.expect(e).await.map_err(|f| RowFailure {
            summary: format!("expect {} ({}): {}", i + 1, e.name(), f.summary),
            part: Some(part),
            ..f
        })?;
    }
    Ok(())
}

struct RowRun<'a> {
    ctx: &'a RowContext,
    resolver: Resolver,
    bindings: BTreeMap<String, String>,
    /// The step or expectation running (`step 3`, `expect 2`), for the checks' evidence.
    part: String,
}

fn api_error(what: &str, e: kube::Error) -> RowFailure {
    RowFailure::plain(format!("{what}: {e}"))
}

impl RowRun<'_> {
    fn elapsed_ms(&self) -> u64 {
        self.ctx.started.elapsed().as_millis() as u64
    }

    async fn api_for(
        &mut self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<(Api<DynamicObject>, bool), RowFailure> {
        let (ar, caps) = self.resolver.resolve(api_version, kind).await?;
        Ok(match caps.scope {
            Scope::Namespaced => {
                (Api::namespaced_with(self.ctx.client.clone(), namespace.unwrap_or(&self.ctx.namespace), &ar), true)
            }
            Scope::Cluster => (Api::all_with(self.ctx.client.clone(), &ar), false),
        })
    }

    /// Where objects of a kind live: the resource, and the URL of the collection `namespace`
    /// (or the row's namespace) holds them in.
    async fn collection(
        &mut self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<String, RowFailure> {
        let (ar, caps) = self.resolver.resolve(api_version, kind).await?;
        Ok(match caps.scope {
            Scope::Namespaced => DynamicObject::url_path(&ar, Some(namespace.unwrap_or(&self.ctx.namespace))),
            Scope::Cluster => DynamicObject::url_path(&ar, None),
        })
    }

    /// Sends a write, records it when it matters, and judges the answer.
    async fn write(
        &mut self,
        what: &str,
        method: Method,
        url: String,
        content_type: &str,
        body: Option<Value>,
        expect: &WriteExpectation,
    ) -> Result<Exchange, RowFailure> {
        let exchange = request::send(&self.ctx.client, method, url, content_type, body)
            .await
            .map_err(|e| RowFailure::plain(format!("{what}: {e}")))?;
        if expect.is_set() || !exchange.succeeded() {
            self.ctx.exchanges.lock().push(exchange.to_json());
        }
        request::judge(what, &exchange, expect).map_err(RowFailure::plain)?;
        Ok(exchange)
    }

    /// Writes every object of a manifest: created, or (unless `create_only`) merged into the
    /// existing object.
    async fn apply(&mut self, m: &Manifest, expect: &WriteExpectation, create_only: bool) -> Result<(), RowFailure> {
        let docs = load_manifests(&self.ctx.fixtures_dir, m).map_err(|e| RowFailure::plain(e.to_string()))?;
        for doc in docs {
            let doc = substitute(&doc, &self.bindings);
            if create_only {
                self.create_one(doc, expect).await?;
            } else {
                self.apply_one(doc, expect).await?;
            }
        }
        Ok(())
    }

    /// The kind, name and collection URL of a manifest document.
    async fn locate(&mut self, doc: &Value) -> Result<(String, String, String), RowFailure> {
        let s = |p: &str| doc.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
        let (api_version, kind, name, ns) =
            (s("/apiVersion"), s("/kind"), s("/metadata/name"), s("/metadata/namespace"));
        let url = self.collection(&api_version, &kind, Some(ns.as_str()).filter(|n| !n.is_empty())).await?;
        Ok((kind, name, url))
    }

    /// Creates the object (POST), never merging with an existing one.
    async fn create_one(&mut self, doc: Value, expect: &WriteExpectation) -> Result<(), RowFailure> {
        let (kind, name, url) = self.locate(&doc).await?;
        let what = format!("create {kind} {name}");
        let url = format!("{url}?fieldManager={FIELD_MANAGER}");
        self.write(&what, Method::POST, url, JSON, Some(doc), expect).await.map(|_| ())
    }

    /// Creates the object, or merges the manifest into the existing one.
    async fn apply_one(&mut self, doc: Value, expect: &WriteExpectation) -> Result<(), RowFailure> {
        let (kind, name, url) = self.locate(&doc).await?;
        let object_url = format!("{url}/{}", request::path_segment(&name));
        let mut merge = doc.clone();
        if let Some(meta) = merge.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("namespace");
        }
        let what = format!("apply {kind} {name}");
        let patch_url = format!("{object_url}?fieldManager={FIELD_MANAGER}");
        if !name.is_empty()
            && self.exists(&object_url).await.map_err(|e| RowFailure::plain(format!("get {kind} {name}: {e}")))?
        {
            return self.write(&what, Method::PATCH, patch_url, MERGE_PATCH, Some(merge), expect).await.map(|_| ());
        }
        let create_url = format!("{url}?fieldManager={FIELD_MANAGER}");
        let exchange = request::send(&self.ctx.client, Method::POST, create_url.clone(), JSON, Some(doc.clone()))
            .await
            .map_err(|e| RowFailure::plain(format!("{what}: {e}")))?;
        // Another row (on a shared cluster) created it between the GET and the POST: merge.
        if exchange.code == 409 && !name.is_empty() && exchange.body["reason"] == "AlreadyExists" {
            return self.write(&what, Method::PATCH, patch_url, MERGE_PATCH, Some(merge), expect).await.map(|_| ());
        }
        if expect.is_set() || !exchange.succeeded() {
            self.ctx.exchanges.lock().push(exchange.to_json());
        }
        request::judge(&what, &exchange, expect).map_err(RowFailure::plain)
    }

    /// Whether `GET url` finds an object.
    async fn exists(&self, url: &str) -> Result<bool, String> {
        let request = http::Request::get(url)
            .header(http::header::ACCEPT, "application/json")
            .body(kube::client::Body::empty())
            .map_err(|e| e.to_string())?;
        let response = self.ctx.client.send(request).await.map_err(|e| e.to_string())?;
        match response.status().as_u16() {
            200 => Ok(true),
            404 => Ok(false),
            code => Err(format!(
                "{code}: {}",
                String::from_utf8_lossy(&response.into_body().collect_bytes().await.unwrap_or_default())
            )),
        }
    }

    async fn step(&mut self, step: &Step) -> Result<(), RowFailure> {
        let expect = step.write_expectation();
        match step {
            Step::Apply(m) => self.apply(&m.manifest, &m.expect, false).await,
            Step::Create(m) => self.apply(&m.manifest, &m.expect, true).await,
            Step::Patch { target, patch_type, patch, status, .. } => {
                let t = substitute_ref(target, &self.bindings);
                if t.name.is_none() && (t.selector.is_some() || t.field_selector.is_some()) {
                    // A set: each selected object gets the same patch (the certification marks
                    // a controller's pods, whose names it does not know).
                    let names: Vec<String> = self
                        .fetch(&t)
                        .await?
                        .iter()
                        .filter_map(|o| o.str_at(&["metadata", "name"]).map(str::to_string))
                        .collect();
                    for name in names {
                        let one = Step::Patch {
                            target: ObjectRef { name: Some(name), selector: None, field_selector: None, ..t.clone() },
                            patch_type: *patch_type,
                            patch: patch.clone(),
                            status: *status,
                            expect_error: expect.expect_error.clone(),
                            expect_warning: expect.expect_warning.clone(),
                        };
                        Box::pin(self.step(&one)).await?;
                    }
                    return Ok(());
                }
                let name = t.name.clone().unwrap_or_default();
                let url = self.collection(&t.api_version, &t.kind, t.namespace.as_deref()).await?;
                let sub = if *status { "/status" } else { "" };
                let url = format!("{url}/{}{sub}?fieldManager={FIELD_MANAGER}", request::path_segment(&name));
                let content_type = match patch_type {
                    PatchType::Merge => MERGE_PATCH,
                    PatchType::Json => "application/json-patch+json",
                    PatchType::Apply => "application/apply-patch+yaml",
                };
                let body = substitute(patch, &self.bindings);
                let what = format!("patch {} {name}", t.kind);
                self.write(&what, Method::PATCH, url, content_type, Some(body), &expect).await.map(|_| ())
            }
            Step::Delete { target, propagation, .. } => {
                let t = substitute_ref(target, &self.bindings);
                let url = self.collection(&t.api_version, &t.kind, t.namespace.as_deref()).await?;
                let policy = match propagation.as_deref() {
                    Some(p @ ("Foreground" | "Orphan" | "Background")) => Some(p),
                    Some(other) => return Err(RowFailure::plain(format!("unknown propagation {other:?}"))),
                    None => None,
                };
                let options =
                    serde_json::json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy});
                match (&t.name, &t.selector) {
                    (Some(name), _) => {
                        let url = format!("{url}/{}", request::path_segment(name));
                        let what = format!("delete {} {name}", t.kind);
                        self.write(&what, Method::DELETE, url, JSON, Some(options), &expect).await.map(|_| ())
                    }
                    (None, Some(sel)) => {
                        let url = format!("{url}?labelSelector={}", request::path_segment(sel));
                        let what = format!("delete {} -l {sel}", t.kind);
                        self.write(&what, Method::DELETE, url, JSON, Some(options), &expect).await.map(|_| ())
                    }
                    (None, None) => Err(RowFailure::plain("delete needs a name or a selector")),
                }
            }
            Step::Scale { target, replicas, .. } => {
                let t = substitute_ref(target, &self.bindings);
                let name = t.name.clone().unwrap_or_default();
                let url = self.collection(&t.api_version, &t.kind, t.namespace.as_deref()).await?;
                let url = format!("{url}/{}/scale?fieldManager={FIELD_MANAGER}", request::path_segment(&name));
                let body = serde_json::json!({"spec": {"replicas": replicas}});
                let what = format!("scale {} {name}", t.kind);
                self.write(&what, Method::PATCH, url, MERGE_PATCH, Some(body), &expect).await.map(|_| ())
            }
            Step::Advance(d) => {
                tokio::time::sleep(d.0).await;
                Ok(())
            }
            Step::Wait(e) => self.expect(e).await,
            Step::Knob { actor, knob, value } => {
                self.ctx.knobs.turn(*actor, knob, &substitute(value, &self.bindings)).map_err(RowFailure::plain)
            }
            Step::Bind { name, from, path } => {
                let t = substitute_ref(from, &self.bindings);
                let deadline = Instant::now() + self.ctx.default_timeout;
                loop {
                    let objs = self.fetch(&t).await?;
                    if let Some(v) = objs.first().and_then(|o| crate::engine::matching::lookup(o, path).ok().flatten())
                    {
                        let s = match v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        self.bindings.insert(name.clone(), s);
                        return Ok(());
                    }
                    if Instant::now() >= deadline {
                        return Err(RowFailure::plain(format!(
                            "nothing to bind ${{{name}}} from: no {} {} with {path} within {}",
                            t.kind,
                            t.name.as_deref().or(t.selector.as_deref()).unwrap_or_default(),
                            format_duration(self.ctx.default_timeout)
                        )));
                    }
                    tokio::time::sleep(self.ctx.poll).await;
                }
            }
        }
    }

    /// The objects a reference names, oldest first (one object, or a selector's set), each
    /// decoded only as far as an expectation reads it.
    async fn fetch(&mut self, t: &ObjectRef) -> Result<Vec<LazyObject>, RowFailure> {
        let (api, _) = self.api_for(&t.api_version, &t.kind, t.namespace.as_deref()).await?;
        let request = kube::core::Request::new(api.resource_url());
        match (&t.name, &t.selector) {
            (Some(name), _) => {
                let get = request
                    .get(name, &kube::api::GetParams::default())
                    .map_err(|e| RowFailure::plain(format!("get {} {name}: {e}", t.kind)))?;
                match self.ctx.client.request_text(get).await {
                    Ok(text) => Ok(vec![LazyObject::encoded(bytes::Bytes::from(text))]),
                    Err(kube::Error::Api(status)) if status.is_not_found() => Ok(Vec::new()),
                    Err(e) => Err(api_error(&format!("get {} {name}", t.kind), e)),
                }
            }
            (None, sel) => {
                let mut lp = sel.as_deref().map(|s| ListParams::default().labels(s)).unwrap_or_default();
                if let Some(f) = &t.field_selector {
                    lp = lp.fields(f);
                }
                let list = request.list(&lp).map_err(|e| RowFailure::plain(format!("list {}: {e}", t.kind)))?;
                let text =
                    self.ctx.client.request_text(list).await.map_err(|e| api_error(&format!("list {}", t.kind), e))?;
                let mut items = LazyObject::list_items(bytes::Bytes::from(text))
                    .map_err(|e| RowFailure::plain(format!("list {}: the answer is not a list: {e}", t.kind)))?;
                // Oldest first, then by name (RFC 3339 timestamps of one cluster sort as text).
                let order = |o: &LazyObject| {
                    let field = |k: &str| o.str_at(&["metadata", k]).map(str::to_string);
                    (field("creationTimestamp"), field("name"))
                };
                items.sort_by_cached_key(order);
                Ok(items)
            }
        }
    }
}
