//! The differential test of the fake API server against the real kube-apiserver: one seeded
//! corpus of requests ([`corpus`], built from the valid objects and mutations of
//! [`templates`]) sent to both; the answers are compared on status code, reason, and the
//! cause types and field paths of `details.causes` (messages are compared too, normalised for
//! uids and numbers, and reported apart). `kproof differential` runs it.
//!
//! It lives in the harness because the harness owns the upstream control plane (build cache,
//! certificates, process supervision) and composes the fake server; `fake-apiserver` must not
//! depend on either.

pub mod corpus;
pub mod openapi;
mod request_grid;
mod schema_mutations;
pub mod templates;
pub mod upstream_corpus;
pub mod webhooks;

use corpus::{Case, RunNames, Step};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// What a server answered, reduced to what the comparison looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The HTTP status code.
    pub code: u16,
    /// `reason` of a `Status` (empty on success).
    pub reason: String,
    /// `(reason, field)` of each cause, sorted.
    pub causes: Vec<(String, String)>,
    /// The normalised message of a `Status`.
    pub message: String,
    /// The object of a successful answer, normalised ([`normalise_object`]).
    pub object: Option<Value>,
}

impl Answer {
    /// Whether two answers agree on code, reason and causes.
    pub fn agrees(&self, other: &Answer) -> bool {
        self.code == other.code && self.reason == other.reason && self.causes == other.causes
    }

    fn short(&self) -> String {
        let causes: Vec<String> = self.causes.iter().map(|(r, f)| format!("{r}@{f}")).collect();
        format!("{} {} [{}] {}", self.code, self.reason, causes.join(", "), self.message)
    }
}

/// The JSON pointers where two values differ (at most `limit`), for reports.
pub fn differences(a: &Value, b: &Value, limit: usize) -> Vec<String> {
    fn walk(a: &Value, b: &Value, at: &str, out: &mut Vec<String>, limit: usize) {
        if out.len() >= limit || a == b {
            return;
        }
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.sort();
                keys.dedup();
                for k in keys {
                    let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                    match (x.get(k), y.get(k)) {
                        (Some(p), Some(q)) => walk(p, q, &here, out, limit),
                        (Some(p), None) => out.push(format!("{here}: fake {} / real absent", brief(p))),
                        (None, Some(q)) => out.push(format!("{here}: fake absent / real {}", brief(q))),
                        (None, None) => {}
                    }
                    if out.len() >= limit {
                        return;
                    }
                }
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                for (i, (p, q)) in x.iter().zip(y).enumerate() {
                    walk(p, q, &format!("{at}/{i}"), out, limit);
                }
            }
            _ => out.push(format!("{at}: fake {} / real {}", brief(a), brief(b))),
        }
    }
    fn brief(v: &Value) -> String {
        let s = v.to_string();
        if s.len() > 120 { format!("{}...", s.chars().take(117).collect::<String>()) } else { s }
    }
    let mut out = Vec::new();
    walk(a, b, "", &mut out, limit);
    out
}

/// What the ServiceAccount admission plugin of a default kube-apiserver adds to a Pod, which
/// the fake server does not model (it has no ServiceAccount controller, so no `default`
/// ServiceAccount to admit against). Priority and DefaultTolerationSeconds it models.
fn strip_pod_admission(spec: &mut Value) {
    let Some(m) = spec.as_object_mut() else { return };
    for key in ["serviceAccountName", "serviceAccount"] {
        if m.get(key).and_then(Value::as_str) == Some("default") {
            m.remove(key);
        }
    }
    if let Some(Value::Array(vols)) = m.get_mut("volumes") {
        vols.retain(|v| !v["name"].as_str().is_some_and(|n| n.starts_with("kube-api-access-")));
    }
    for key in ["containers", "initContainers"] {
        for c in m.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(Value::Array(mounts)) = c.get_mut("volumeMounts") {
                mounts.retain(|v| !v["name"].as_str().is_some_and(|n| n.starts_with("kube-api-access-")));
                if mounts.is_empty()
                    && let Some(c) = c.as_object_mut()
                {
                    c.remove("volumeMounts");
                }
            }
        }
    }
}

/// The same for the managed fields of a Pod: admission's additions are owned by the request's
/// field manager.
fn strip_pod_admission_fields(fields: &mut Value) {
    let Some(spec) = fields.get_mut("f:spec").and_then(Value::as_object_mut) else { return };
    for key in ["f:serviceAccountName", "f:serviceAccount"] {
        spec.remove(key);
    }
    let drop_token = |v: &mut Value| {
        if let Some(m) = v.as_object_mut() {
            m.retain(|k, _| !k.contains("kube-api-access-"));
        }
    };
    if let Some(vols) = spec.get_mut("f:volumes") {
        drop_token(vols);
    }
    for key in ["f:containers", "f:initContainers"] {
        for (_, c) in spec.get_mut(key).and_then(Value::as_object_mut).into_iter().flatten() {
            if let Some(mounts) = c.get_mut("f:volumeMounts") {
                drop_token(mounts);
            }
        }
    }
}

/// The kube-controller-manager controllers a differential plane runs: those the fake API server
/// has too (namespace lifecycle, garbage collection) and those every namespace needs (its
/// default ServiceAccount and token). The workload controllers (Job, ReplicaSet, Deployment,
/// StatefulSet, EndpointSlice...) stay off: they write objects right after a case creates them,
/// and a read-modify-write case then meets a 409 Conflict on the real server only, by chance.
/// Like envtest, the comparison is of API servers.
pub const KCM_CONTROLLERS: [&str; 4] = [
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "namespace-controller",
    "garbage-collector-controller",
];

/// A successful answer's object with what legitimately differs between two servers replaced:
/// uids, resource versions, timestamps, generated name suffixes, allocated cluster IPs, and
/// the Pod admission plugins the fake does not model ([`strip_pod_admission`]).
pub fn normalise_object(v: &Value) -> Value {
    static UID: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").expect("static regex")
    });
    static TIME: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z").expect("static regex")
    });
    let mut v = v.clone();
    let pod = v["kind"] == "Pod";
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in ["uid", "resourceVersion", "creationTimestamp", "selfLink"] {
            meta.remove(key);
        }
        if let Some(prefix) = meta.get("generateName").and_then(Value::as_str).map(str::to_string)
            && meta.get("name").and_then(Value::as_str).is_some_and(|n| n.starts_with(&prefix))
        {
            meta.insert("name".into(), json!(format!("{prefix}<generated>")));
        }
        for entry in meta.get_mut("managedFields").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(e) = entry.as_object_mut() {
                e.remove("time");
                if pod && let Some(f) = e.get_mut("fieldsV1") {
                    strip_pod_admission_fields(f);
                }
            }
        }
    }
    if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut)
        && spec.get("clusterIP").and_then(Value::as_str).is_some_and(|ip| ip != "None")
    {
        spec.insert("clusterIP".into(), json!("<allocated>"));
        spec.insert("clusterIPs".into(), json!(["<allocated>"]));
    }
    // Node ports are allocated at random too (where the request named none).
    if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut) {
        if spec.get("healthCheckNodePort").is_some_and(Value::is_number) {
            spec.insert("healthCheckNodePort".into(), json!("<allocated>"));
        }
        for port in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(p) = port.as_object_mut().filter(|p| p.get("nodePort").is_some_and(Value::is_number)) {
                p.insert("nodePort".into(), json!("<allocated>"));
            }
        }
    }
    if pod && let Some(spec) = v.get_mut("spec") {
        strip_pod_admission(spec);
    }
    let text = v.to_string();
    let text = UID.replace_all(&text, "<uid>");
    let text = TIME.replace_all(&text, "<time>");
    serde_json::from_str(&text).unwrap_or(v)
}

/// Replaces what differs between two servers for the same request: uids, numbers (resource
/// versions, generated suffixes are in names only for generateName).
pub fn normalise(message: &str) -> String {
    static UID: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").expect("static regex")
    });
    static NUM: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\d+").expect("static regex"));
    NUM.replace_all(&UID.replace_all(message, "UID"), "N").into_owned()
}

fn answer_of(code: u16, body: &[u8]) -> Answer {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    if code < 300 || v.get("kind").and_then(Value::as_str) != Some("Status") {
        let object = (code < 300 && v.is_object() && v["kind"] != "Status").then(|| normalise_object(&v));
        return Answer { code, reason: String::new(), causes: Vec::new(), message: String::new(), object };
    }
    let mut causes: Vec<(String, String)> = v["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (c["reason"].as_str().unwrap_or_default().to_string(), c["field"].as_str().unwrap_or_default().to_string())
        })
        .collect();
    causes.sort();
    Answer {
        code,
        reason: v["reason"].as_str().unwrap_or_default().to_string(),
        causes,
        message: normalise(v["message"].as_str().unwrap_or_default()),
        object: None,
    }
}

/// Sends one step; `previous` is the last answer body (a read-modify-write step edits it).
async fn send(client: &kube::Client, step: &Step, previous: &[u8]) -> Result<(u16, Vec<u8>), String> {
    let body = match &step.rewrite {
        Some(rw) => {
            rw.body(previous).ok_or_else(|| format!("{}: the previous answer is not an object", step.describe()))?
        }
        None => step.body.clone().unwrap_or_default(),
    };
    // One User-Agent for both servers: a write's field manager is named after it.
    let mut req = http::Request::builder()
        .method(step.method)
        .uri(&step.path)
        .header("Accept", "application/json")
        .header("User-Agent", "kproof-differential/v1");
    if step.body.is_some() {
        req = req.header("Content-Type", step.content_type);
    }
    let req = req.body(kube::client::Body::from(body)).map_err(|e| e.to_string())?;
    // Neither server may hang a run: an answer takes 30 s at most.
    let limit = std::time::Duration::from_secs(30);
    let late = || format!("{}: no answer within 30 s", step.describe());
    let resp = tokio::time::timeout(limit, client.send(req))
        .await
        .map_err(|_| late())?
        .map_err(|e| format!("{}: {e}", step.describe()))?;
    let code = resp.status().as_u16();
    // A watch that was accepted (`watch=true`, `watch=1`, ...) streams until its timeout: its
    // status line is the answer.
    let watch = step.method == "GET" && step.path.split(['?', '&']).skip(1).any(|p| p.starts_with("watch="));
    if watch && code < 300 {
        return Ok((code, Vec::new()));
    }
    let bytes = tokio::time::timeout(limit, resp.into_body().collect_bytes())
        .await
        .map_err(|_| late())?
        .map_err(|e| e.to_string())?;
    Ok((code, bytes.to_vec()))
}

/// The outcome of one case on both servers.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The case.
    pub case: Case,
    /// The fake server's answer (or why the case could not run there).
    pub fake: Result<Answer, String>,
    /// The real server's answer.
    pub real: Result<Answer, String>,
}

impl Outcome {
    /// Whether both servers agree: code, reason, cause types and field paths (the comparison
    /// issue 13 defines). The objects of successful answers are compared apart
    /// ([`Outcome::body_differences`], [`Summary::bodies_equal`]).
    pub fn agrees(&self) -> bool {
        matches!((&self.fake, &self.real), (Ok(a), Ok(b)) if a.agrees(b))
    }

    /// Whether the case's successful answers are compared object for object.
    pub fn compares_body(&self) -> bool {
        self.case.setup.is_empty() && matches!(self.case.request.method, "POST" | "PATCH")
    }

    /// Where the two successful answers' objects differ (empty when not compared).
    pub fn body_differences(&self) -> Vec<String> {
        match (&self.fake, &self.real) {
            (Ok(Answer { object: Some(a), .. }), Ok(Answer { object: Some(b), .. })) if self.compares_body() => {
                differences(a, b, 6)
            }
            _ => Vec::new(),
        }
    }

    /// Whether the messages agree too (after normalising).
    pub fn messages_agree(&self) -> bool {
        self.agrees() && matches!((&self.fake, &self.real), (Ok(a), Ok(b)) if a.message == b.message)
    }
}

/// Runs a case on one server: setup steps (each must succeed), then the request.
async fn run_case(client: &kube::Client, case: &Case) -> Result<Answer, String> {
    let mut previous = Vec::new();
    for step in &case.setup {
        let (code, body) = send(client, step, &previous).await?;
        // A setup step of a deletion may answer 200 or 202.
        if code >= 300 {
            let a = answer_of(code, &body);
            return Err(format!("setup {} failed: {}", step.describe(), a.short()));
        }
        previous = body;
    }
    let answer = send(client, &case.request, &previous).await.map(|(code, body)| answer_of(code, &body));
    for step in &case.teardown {
        let _ = send(client, step, &[]).await;
    }
    answer
}

/// The CRDs both servers get (the fake gets them at start; a real cluster gets whichever it
/// lacks): the repository's copies of the KubeRay, Kueue and Gateway API CRDs.
pub fn crd_fixtures() -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fake-apiserver/tests/fixtures/crds");
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(&dir) else { return out };
    let mut files: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    files.sort();
    for f in files.iter().filter(|f| f.extension().is_some_and(|e| e == "yaml")) {
        if let Ok(text) = std::fs::read_to_string(f)
            && let Ok(v) = serde_saphyr::from_str::<Value>(&text)
        {
            out.push(v);
        }
    }
    out
}

/// Creates the namespace and the CRDs a run needs on one server; waits until the CRDs are
/// served and, where a ServiceAccount controller runs, until the namespace's default
/// ServiceAccount exists (pods need it).
async fn prepare(client: &kube::Client, names: &RunNames, crds: &[Value]) -> Result<(), String> {
    let mut namespaces: Vec<String> = templates::kinds().iter().map(|k| k.namespace(names)).collect();
    namespaces.sort();
    namespaces.dedup();
    for name in namespaces {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        let (code, body) = send(client, &step_json("POST", "/api/v1/namespaces", &ns), &[]).await?;
        if code >= 300 && code != 409 {
            return Err(format!("creating namespace {name}: {}", String::from_utf8_lossy(&body)));
        }
    }
    for crd in crds {
        let (code, body) =
            send(client, &step_json("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd), &[])
                .await?;
        if code == 409 {
            // The cluster has its own copy (the upstream plane installs the KubeRay CRDs of the
            // operator it built, which may be an older release): both servers must serve the
            // same schema, so it is replaced by the fixture.
            replace(client, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd).await?;
        } else if code >= 300 {
            return Err(format!("creating CRD {}: {}", crd["metadata"]["name"], String::from_utf8_lossy(&body)));
        }
    }
    let crd_names: Vec<String> =
        crds.iter().map(|c| c["metadata"]["name"].as_str().unwrap_or_default().to_string()).collect();
    await_established(client, &crd_names).await?;
    let sa = format!("/api/v1/namespaces/{}/serviceaccounts/default", names.namespace);
    let _ = poll(20, || async {
        let (code, _) = send(client, &Step::get(&sa), &[]).await.ok()?;
        (code == 200).then_some(())
    })
    .await;
    Ok(())
}

/// Replaces the CRD a server already has with `crd` (keeping its resourceVersion) when their
/// versions or conversion differ.
async fn replace(client: &kube::Client, collection: &str, crd: &Value) -> Result<(), String> {
    let path = format!("{collection}/{}", crd["metadata"]["name"].as_str().unwrap_or_default());
    let (_, body) = send(client, &Step::get(&path), &[]).await?;
    let current: Value = serde_json::from_slice(&body).unwrap_or_default();
    let url = |v: &Value| v["spec"]["conversion"]["webhook"]["clientConfig"]["url"].clone();
    if current["spec"]["versions"] != crd["spec"]["versions"] || url(&current) != url(crd) {
        let mut replacement = crd.clone();
        replacement["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
        let (code, body) = send(client, &step_json("PUT", &path, &replacement), &[]).await?;
        if code >= 300 {
            return Err(format!("replacing CRD {path}: {}", String::from_utf8_lossy(&body)));
        }
    }
    Ok(())
}

/// Waits until each named CRD is `Established`.
async fn await_established(client: &kube::Client, names: &[String]) -> Result<(), String> {
    for name in names {
        let path = format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}");
        let established = poll(60, || async {
            let (code, body) = send(client, &Step::get(&path), &[]).await.ok()?;
            let v: Value = serde_json::from_slice(&body).ok()?;
            let ok = code == 200
                && v["status"]["conditions"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|c| c["type"] == "Established" && c["status"] == "True"));
            ok.then_some(())
        })
        .await;
        if established.is_none() {
            return Err(format!("CRD {name} was not established within 60 s"));
        }
    }
    Ok(())
}

fn step_json(method: &'static str, path: &str, body: &Value) -> Step {
    Step {
        method,
        path: path.to_string(),
        content_type: "application/json",
        body: Some(serde_json::to_vec(body).unwrap_or_default()),
        rewrite: None,
    }
}

/// Polls `f` every 200 ms for up to `secs` seconds (real time: the reference is a real cluster).
async fn poll<F, Fut>(secs: u64, mut f: F) -> Option<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<()>>,
{
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if f().await.is_some() {
            return Some(());
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// The fake server configured as the reference control plane is: the same feature gates.
pub fn fake_server() -> fake_apiserver::ApiServer {
    let gates = fake_apiserver::FeatureGates::parse(&["GenericWorkload=true,DRAWorkloadResourceClaims=true"])
        .unwrap_or_default();
    fake_apiserver::ApiServer::new(fake_apiserver::Config { feature_gates: gates, ..Default::default() })
}

/// Which corpus a run sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generator {
    /// The first: hand-written mutations of each kind and API machinery cases ([`corpus`]).
    Kinds,
    /// The second: upstream's validation tests, the real server's OpenAPI schemas and the
    /// request grid ([`upstream_corpus`]).
    Upstream,
}

/// The OpenAPI v3 documents of the kinds' group-versions, from `client` (the real server): the
/// custom resources' appear once their CRDs are served, so each is waited for.
async fn fetch_schemas(client: &kube::Client) -> Result<openapi::Schemas, String> {
    let mut wanted: Vec<String> =
        templates::kinds().iter().map(|k| k.prefix.trim_start_matches('/').to_string()).collect();
    wanted.sort();
    wanted.dedup();
    let mut schemas = openapi::Schemas::default();
    for gv in wanted {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let url = loop {
            let listed = match send(client, &Step::get("/openapi/v3"), &[]).await {
                Ok((200, body)) => serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|index| index["paths"][gv.as_str()]["serverRelativeURL"].as_str().map(str::to_string)),
                _ => None,
            };
            match listed {
                Some(url) => break url,
                None if std::time::Instant::now() >= deadline => {
                    return Err(format!("/openapi/v3 does not list {gv} within 60 s"));
                }
                None => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
            }
        };
        let (code, body) = send(client, &Step::get(&url), &[]).await?;
        let doc: Value = serde_json::from_slice(&body).map_err(|e| format!("{url}: {e}"))?;
        if code != 200 {
            return Err(format!("{url}: {code}"));
        }
        schemas.add_document(&doc);
    }
    Ok(schemas)
}

/// Runs the corpus on both clients and returns each case's outcome.
pub async fn run(
    fake: &kube::Client,
    real: &kube::Client,
    seed: u64,
    count: usize,
    names: &RunNames,
    generator: Generator,
    mut progress: impl FnMut(usize),
) -> Result<Vec<Outcome>, String> {
    let crds = crd_fixtures();
    prepare(fake, names, &crds).await.map_err(|e| format!("fake server: {e}"))?;
    prepare(real, names, &crds).await.map_err(|e| format!("real server: {e}"))?;
    // The webhook paths: one server both API servers call, and the same configurations.
    let hook_server = webhooks::WebhookServer::start().await.map_err(|e| format!("webhook server: {e}"))?;
    let admission_objects = webhooks::objects(&hook_server, names);
    let admission_ns = templates::kinds()
        .iter()
        .find(|k| k.label == "Admission")
        .map(|k| k.namespace(names))
        .ok_or("kinds.yaml has no Admission kind")?;
    webhooks::install(fake, &admission_objects, &admission_ns).await.map_err(|e| format!("fake server: {e}"))?;
    webhooks::install(real, &admission_objects, &admission_ns).await.map_err(|e| format!("real server: {e}"))?;
    let cases = match generator {
        Generator::Kinds => corpus::generate(seed, count, names),
        Generator::Upstream => {
            let schemas = fetch_schemas(real).await.map_err(|e| format!("real server: {e}"))?;
            upstream_corpus::generate(seed, count, names, &schemas)
        }
    };
    let mut out = Vec::with_capacity(cases.len());
    for (i, case) in cases.into_iter().enumerate() {
        let fake_answer = run_case(fake, &case).await;
        let real_answer = run_case(real, &case).await;
        out.push(Outcome { case, fake: fake_answer, real: real_answer });
        progress(i + 1);
    }
    webhooks::remove(fake, &admission_objects).await;
    webhooks::remove(real, &admission_objects).await;
    Ok(out)
}

/// Agreement per kind, per kind of request and overall, as tables for people.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Per kind: (cases, agreeing, messages agreeing).
    pub per_kind: BTreeMap<String, (usize, usize, usize)>,
    /// Per kind of request ([`corpus::Case::class`]): (cases, agreeing, messages agreeing).
    pub per_class: BTreeMap<String, (usize, usize, usize)>,
    /// All cases.
    pub total: usize,
    /// Agreeing cases.
    pub agreeing: usize,
    /// Cases whose messages agree as well.
    pub messages: usize,
    /// Successful creates on both servers whose objects were compared.
    pub bodies: usize,
    /// ... and were equal after normalising.
    pub bodies_equal: usize,
    /// Fields of the compared objects the request did not send (what the servers defaulted
    /// or set): in either object.
    pub defaulted_fields: usize,
    /// ... and equal in both.
    pub defaulted_equal: usize,
}

/// The leaves of a JSON value by pointer (an empty object or list is a leaf).
fn leaves(v: &Value, at: String, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                leaves(x, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for (i, x) in a.iter().enumerate() {
                leaves(x, format!("{at}/{i}"), out);
            }
        }
        _ => {
            out.insert(at, v.clone());
        }
    }
}

/// (fields the servers added, of those equal in both): the leaves of either object that the
/// request body does not hold.
fn defaulted_agreement(fake: &Value, real: &Value, sent: Option<&Value>) -> (usize, usize) {
    let (mut f, mut r, mut s) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
    leaves(fake, String::new(), &mut f);
    leaves(real, String::new(), &mut r);
    if let Some(sent) = sent.filter(|v| v.is_object()) {
        leaves(sent, String::new(), &mut s);
    }
    let mut keys: Vec<&String> = f.keys().chain(r.keys()).filter(|k| !s.contains_key(*k)).collect();
    keys.sort();
    keys.dedup();
    let equal = keys.iter().filter(|k| f.contains_key(**k) && f.get(**k) == r.get(**k)).count();
    (keys.len(), equal)
}

impl Summary {
    /// Counts the outcomes.
    pub fn of(outcomes: &[Outcome]) -> Self {
        let mut s = Summary::default();
        for o in outcomes {
            s.total += 1;
            let agrees = o.agrees();
            let messages = o.messages_agree();
            for e in [
                s.per_kind.entry(o.case.kind.clone()).or_default(),
                s.per_class.entry(o.case.class.clone()).or_default(),
            ] {
                e.0 += 1;
                e.1 += usize::from(agrees);
                e.2 += usize::from(messages);
            }
            s.agreeing += usize::from(agrees);
            s.messages += usize::from(messages);
            if let (true, Ok(Answer { object: Some(a), .. }), Ok(Answer { object: Some(b), .. })) =
                (o.compares_body(), &o.fake, &o.real)
            {
                s.bodies += 1;
                if o.body_differences().is_empty() {
                    s.bodies_equal += 1;
                }
                let sent: Option<Value> = o.case.request.body.as_deref().and_then(|b| serde_json::from_slice(b).ok());
                let (n, equal) = defaulted_agreement(a, b, sent.as_ref());
                s.defaulted_fields += n;
                s.defaulted_equal += equal;
            }
        }
        s
    }

    /// The overall agreement in percent.
    pub fn percent(&self) -> f64 {
        if self.total == 0 { 100.0 } else { 100.0 * self.agreeing as f64 / self.total as f64 }
    }

    /// Markdown tables: per kind and per kind of request (requests, agreement, message
    /// agreement), then the compared objects and their defaulted fields.
    pub fn table(&self) -> String {
        let pct = |a: usize, n: usize| if n == 0 { 100.0 } else { 100.0 * a as f64 / n as f64 };
        let mut out = String::new();
        for (title, rows) in [("kind", &self.per_kind), ("kind of request", &self.per_class)] {
            let _ =
                writeln!(out, "| {title} | requests | agree | agreement | messages agree |\n|---|---:|---:|---:|---:|");
            for (key, (n, a, m)) in rows {
                let _ = writeln!(out, "| {key} | {n} | {a} | {:.1} % | {:.1} % |", pct(*a, *n), pct(*m, *n));
            }
            let _ = writeln!(
                out,
                "| **all** | **{}** | **{}** | **{:.2} %** | {:.1} % |\n",
                self.total,
                self.agreeing,
                self.percent(),
                pct(self.messages, self.total)
            );
        }
        let _ = writeln!(
            out,
            "Objects returned by successful creates and patches, compared after normalising: {} of {} equal; \
             fields the servers set that the request did not send: {} of {} equal ({:.2} %).",
            self.bodies_equal,
            self.bodies,
            self.defaulted_equal,
            self.defaulted_fields,
            pct(self.defaulted_equal, self.defaulted_fields)
        );
        out
    }
}

/// One line per disagreement: seed, index, what was sent and both answers.
pub fn disagreements(seed: u64, outcomes: &[Outcome]) -> String {
    let mut out = String::new();
    for o in outcomes.iter().filter(|o| !o.agrees()) {
        let show = |a: &Result<Answer, String>| match a {
            Ok(a) => a.short(),
            Err(e) => format!("error: {e}"),
        };
        let _ = writeln!(
            out,
            "seed {seed} #{} {} {} — {}\n  fake: {}\n  real: {}",
            o.case.index,
            o.case.kind,
            o.case.what,
            o.case.request.describe(),
            show(&o.fake),
            show(&o.real)
        );
    }
    let _ = writeln!(out, "\n# Agreeing answers whose objects differ after normalising\n");
    for o in outcomes.iter().filter(|o| o.agrees()) {
        let diffs = o.body_differences();
        if diffs.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "seed {seed} #{} {} {} — {}",
            o.case.index,
            o.case.kind,
            o.case.what,
            o.case.request.describe()
        );
        for d in diffs {
            let _ = writeln!(out, "  object differs at {d}");
        }
    }
    out
}
