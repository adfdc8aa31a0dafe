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
pub mod templates;

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
        return Answer { code, reason: String::new(), causes: Vec::new(), message: String::new() };
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
    }
}

/// Sends one step; `previous` is the last answer body (for a carried resourceVersion).
async fn send(client: &kube::Client, step: &Step, previous: &[u8]) -> Result<(u16, Vec<u8>), String> {
    let mut body = step.body.clone().unwrap_or_default();
    if step.carry_resource_version
        && let (Ok(mut obj), Ok(prev)) =
            (serde_json::from_slice::<Value>(&body), serde_json::from_slice::<Value>(previous))
        && let Some(rv) = prev["metadata"]["resourceVersion"].as_str()
        && obj.get("metadata").is_some_and(Value::is_object)
    {
        obj["metadata"]["resourceVersion"] = json!(rv);
        body = serde_json::to_vec(&obj).unwrap_or_default();
    }
    let mut req = http::Request::builder().method(step.method).uri(&step.path).header("Accept", "application/json");
    if step.body.is_some() {
        req = req.header("Content-Type", step.content_type);
    }
    let req = req.body(kube::client::Body::from(body)).map_err(|e| e.to_string())?;
    let resp = client.send(req).await.map_err(|e| format!("{}: {e}", step.describe()))?;
    let code = resp.status().as_u16();
    // A watch that was accepted streams forever: its status line is the answer.
    if step.path.contains("watch=true") && code < 300 {
        return Ok((code, Vec::new()));
    }
    let bytes = resp.into_body().collect_bytes().await.map_err(|e| e.to_string())?;
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
    /// Whether both servers agree (code, reason, causes).
    pub fn agrees(&self) -> bool {
        matches!((&self.fake, &self.real), (Ok(a), Ok(b)) if a.agrees(b))
    }

    /// Whether the messages agree too (after normalising).
    pub fn messages_agree(&self) -> bool {
        matches!((&self.fake, &self.real), (Ok(a), Ok(b)) if a.agrees(b) && a.message == b.message)
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
    let (code, body) = send(client, &case.request, &previous).await?;
    Ok(answer_of(code, &body))
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
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": names.namespace}});
    let (code, body) = send(client, &step_json("POST", "/api/v1/namespaces", &ns), &[]).await?;
    if code >= 300 && code != 409 {
        return Err(format!("creating namespace {}: {}", names.namespace, String::from_utf8_lossy(&body)));
    }
    for crd in crds {
        let (code, body) =
            send(client, &step_json("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd), &[])
                .await?;
        if code >= 300 && code != 409 {
            return Err(format!("creating CRD {}: {}", crd["metadata"]["name"], String::from_utf8_lossy(&body)));
        }
    }
    for crd in crds {
        let name = crd["metadata"]["name"].as_str().unwrap_or_default();
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
    let sa = format!("/api/v1/namespaces/{}/serviceaccounts/default", names.namespace);
    let _ = poll(20, || async {
        let (code, _) = send(client, &Step::get(&sa), &[]).await.ok()?;
        (code == 200).then_some(())
    })
    .await;
    Ok(())
}

fn step_json(method: &'static str, path: &str, body: &Value) -> Step {
    Step {
        method,
        path: path.to_string(),
        content_type: "application/json",
        body: Some(serde_json::to_vec(body).unwrap_or_default()),
        carry_resource_version: false,
    }
}

impl Step {
    fn get(path: &str) -> Step {
        Step {
            method: "GET",
            path: path.to_string(),
            content_type: "application/json",
            body: None,
            carry_resource_version: false,
        }
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

/// Runs the corpus on both clients and returns each case's outcome.
pub async fn run(
    fake: &kube::Client,
    real: &kube::Client,
    seed: u64,
    count: usize,
    names: &RunNames,
    mut progress: impl FnMut(usize),
) -> Result<Vec<Outcome>, String> {
    let crds = crd_fixtures();
    prepare(fake, names, &crds).await.map_err(|e| format!("fake server: {e}"))?;
    prepare(real, names, &crds).await.map_err(|e| format!("real server: {e}"))?;
    let cases = corpus::generate(seed, count, names);
    let mut out = Vec::with_capacity(cases.len());
    for (i, case) in cases.into_iter().enumerate() {
        let fake_answer = run_case(fake, &case).await;
        let real_answer = run_case(real, &case).await;
        out.push(Outcome { case, fake: fake_answer, real: real_answer });
        progress(i + 1);
    }
    Ok(out)
}

/// Agreement per kind and overall, as a table for people.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Per kind: (cases, agreeing, messages agreeing).
    pub per_kind: BTreeMap<String, (usize, usize, usize)>,
    /// All cases.
    pub total: usize,
    /// Agreeing cases.
    pub agreeing: usize,
    /// Cases whose messages agree as well.
    pub messages: usize,
}

impl Summary {
    /// Counts the outcomes.
    pub fn of(outcomes: &[Outcome]) -> Self {
        let mut s = Summary::default();
        for o in outcomes {
            let e = s.per_kind.entry(o.case.kind.clone()).or_default();
            e.0 += 1;
            s.total += 1;
            if o.agrees() {
                e.1 += 1;
                s.agreeing += 1;
            }
            if o.messages_agree() {
                e.2 += 1;
                s.messages += 1;
            }
        }
        s
    }

    /// The overall agreement in percent.
    pub fn percent(&self) -> f64 {
        if self.total == 0 { 100.0 } else { 100.0 * self.agreeing as f64 / self.total as f64 }
    }

    /// A Markdown table: kind, requests, agreement, message agreement.
    pub fn table(&self) -> String {
        let pct = |a: usize, n: usize| if n == 0 { 100.0 } else { 100.0 * a as f64 / n as f64 };
        let mut out =
            String::from("| kind | requests | agree | agreement | messages agree |\n|---|---:|---:|---:|---:|\n");
        for (kind, (n, a, m)) in &self.per_kind {
            let _ = writeln!(out, "| {kind} | {n} | {a} | {:.1} % | {:.1} % |", pct(*a, *n), pct(*m, *n));
        }
        let _ = writeln!(
            out,
            "| **all** | **{}** | **{}** | **{:.2} %** | {:.1} % |",
            self.total,
            self.agreeing,
            self.percent(),
            pct(self.messages, self.total)
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
    out
}
