//! The seeded request generator: every case is a few setup requests (which must succeed) and
//! one request whose answer is compared. The same seed gives the same corpus, so a
//! disagreement is reproducible from its seed and index.

use super::templates::{Applies, Edit, KindTemplate, Mutation, kinds};
use serde_json::{Map, Value, json};

/// A deterministic pseudo-random sequence (SplitMix64): the corpus must not change when a
/// dependency changes its generator.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A sequence from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// One HTTP request.
#[derive(Debug, Clone)]
pub struct Step {
    /// `GET`, `POST`, `PUT`, `PATCH`, `DELETE`.
    pub method: &'static str,
    /// Path and query.
    pub path: String,
    /// The Content-Type of the body.
    pub content_type: &'static str,
    /// The body, if any.
    pub body: Option<Vec<u8>>,
    /// Read-modify-write: the body is the previous answer's object with these changes (as a
    /// client does it; each server gets its own object, with whatever its admission added).
    pub rewrite: Option<Rewrite>,
}

/// The changes a read-modify-write step makes to the object it read.
#[derive(Debug, Clone)]
pub struct Rewrite {
    /// The body starts as this value instead of the object read (DeleteOptions whose
    /// preconditions copy the object's uid or resourceVersion).
    pub base: Option<Value>,
    /// Values of the object read copied into the body: (from, to) JSON pointers.
    pub copies: Vec<(String, String)>,
    /// Replaces `status` first, when not `Null` (status writes).
    pub status: Value,
    /// Then these edits.
    pub edits: Vec<Edit>,
}

impl Rewrite {
    /// The body to send: `previous` (an answer body) changed.
    pub fn body(&self, previous: &[u8]) -> Option<Vec<u8>> {
        let read: Value = serde_json::from_slice(previous).ok()?;
        if !read.is_object() {
            return None;
        }
        let mut obj = self.base.clone().unwrap_or_else(|| read.clone());
        for (from, to) in &self.copies {
            set_pointer(&mut obj, to, read.pointer(from).cloned().unwrap_or(Value::Null));
        }
        if !self.status.is_null() {
            obj["status"] = self.status.clone();
        }
        apply_edits(&mut obj, &self.edits);
        serde_json::to_vec(&obj).ok()
    }
}

impl Step {
    pub(super) fn new(method: &'static str, path: String) -> Self {
        Step { method, path, content_type: "application/json", body: None, rewrite: None }
    }

    pub(super) fn json(mut self, body: &Value) -> Self {
        self.body = Some(serde_json::to_vec(body).unwrap_or_default());
        self
    }

    /// The body as these bytes (what a JSON value cannot say: duplicate keys, bad syntax).
    pub(super) fn raw(mut self, body: &[u8]) -> Self {
        self.body = Some(body.to_vec());
        self
    }

    pub(super) fn typed(mut self, content_type: &'static str) -> Self {
        self.content_type = content_type;
        self
    }

    pub(super) fn rewrite(self, status: Value, edits: &[Edit]) -> Self {
        self.rewrite_with(Rewrite { base: None, copies: Vec::new(), status, edits: edits.to_vec() })
    }

    pub(super) fn rewrite_with(mut self, rewrite: Rewrite) -> Self {
        self.rewrite = Some(rewrite);
        self.body = Some(Vec::new());
        self
    }

    /// A `GET` of `path`.
    pub fn get(path: &str) -> Self {
        Step::new("GET", path.to_string())
    }

    /// A `DELETE` of `path`.
    pub fn delete(path: &str) -> Self {
        Step::new("DELETE", path.to_string())
    }

    /// `METHOD path (content type)` for reports.
    pub fn describe(&self) -> String {
        let ct = if self.body.is_some() { format!(" ({})", self.content_type) } else { String::new() };
        format!("{} {}{ct}", self.method, self.path)
    }
}

/// One case of the corpus.
#[derive(Debug, Clone)]
pub struct Case {
    /// Its index in the corpus.
    pub index: usize,
    /// The kind it is about (report grouping).
    pub kind: String,
    /// What it does: `create pod/containers-empty`, `list bad-label-selector`.
    pub what: String,
    /// The kind of request, for the report's second table (`schema: enum`, `query: dryRun`).
    pub class: String,
    /// Requests that prepare the case; all must succeed on both servers.
    pub setup: Vec<Step>,
    /// The request whose answers are compared.
    pub request: Step,
    /// Requests sent after it whatever it answered (their answers are not looked at): the
    /// removal of an object that would change what later cases meet.
    pub teardown: Vec<Step>,
}

/// The names a run uses: the namespace and a nonce that keeps names unique across runs
/// against the same cluster.
#[derive(Debug, Clone)]
pub struct RunNames {
    /// Where namespaced objects go.
    pub namespace: String,
    /// Added to every object name.
    pub nonce: String,
}

/// How a mutated object is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    Create,
    CreateDryRun,
    Update,
    MergePatch,
    JsonPatch,
    StrategicPatch,
    Apply,
    StatusUpdate,
    StatusMergePatch,
    Delete,
}

impl Form {
    /// How the report names it.
    pub(super) fn describe(self) -> &'static str {
        match self {
            Form::Create | Form::CreateDryRun => "create",
            Form::Update => "update",
            Form::MergePatch | Form::JsonPatch | Form::StrategicPatch => "patch",
            Form::Apply => "apply",
            Form::StatusUpdate | Form::StatusMergePatch => "status",
            Form::Delete => "delete",
        }
    }
}

const CREATE_FORMS: &[Form] = &[Form::Create, Form::Create, Form::CreateDryRun, Form::Apply];
const UPDATE_FORMS: &[Form] = &[Form::Update, Form::MergePatch, Form::JsonPatch, Form::StrategicPatch, Form::Apply];
const STATUS_FORMS: &[Form] = &[Form::StatusUpdate, Form::StatusMergePatch];
const DELETE_FORMS: &[Form] = &[Form::Delete];

pub(super) fn set_pointer(v: &mut Value, pointer: &str, value: Value) {
    let parts: Vec<String> = pointer.split('/').skip(1).map(|p| p.replace("~1", "/").replace("~0", "~")).collect();
    let mut cur = v;
    for (i, p) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        if let Value::Array(a) = cur {
            let idx: usize = p.parse().unwrap_or(a.len());
            if last {
                if idx < a.len() {
                    a[idx] = value;
                } else {
                    a.push(value);
                }
                return;
            }
            if idx >= a.len() {
                a.push(json!({}));
            }
            let at = idx.min(a.len() - 1);
            cur = &mut a[at];
            continue;
        }
        if !cur.is_object() {
            *cur = json!({});
        }
        let Value::Object(o) = cur else { return };
        if last {
            o.insert(p.clone(), value);
            return;
        }
        cur = o.entry(p.clone()).or_insert_with(|| json!({}));
    }
}

pub(super) fn remove_pointer(v: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else { return };
    let target = if parent.is_empty() { Some(v) } else { v.pointer_mut(parent) };
    match target {
        Some(Value::Object(o)) => {
            o.remove(last);
        }
        Some(Value::Array(a)) => {
            if let Ok(i) = last.parse::<usize>()
                && i < a.len()
            {
                a.remove(i);
            }
        }
        _ => {}
    }
}

pub(super) fn apply_edits(v: &mut Value, edits: &[Edit]) {
    for e in edits {
        match e {
            Edit::Set(p, x) => set_pointer(v, p, x.clone()),
            Edit::Remove(p) => remove_pointer(v, p),
            Edit::Big(p, n) => set_pointer(v, p, Value::String("x".repeat(*n))),
        }
    }
}

/// The JSON merge patch that turns `old` into `new`.
pub(super) fn merge_patch(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let mut out = Map::new();
            for (k, v) in b {
                match a.get(k) {
                    Some(o) if o == v => {}
                    Some(o) => {
                        out.insert(k.clone(), merge_patch(o, v));
                    }
                    None => {
                        out.insert(k.clone(), v.clone());
                    }
                }
            }
            for k in a.keys() {
                if !b.contains_key(k) {
                    out.insert(k.clone(), Value::Null);
                }
            }
            Value::Object(out)
        }
        _ => new.clone(),
    }
}

impl KindTemplate {
    /// The namespace this kind's objects go to.
    pub fn namespace(&self, names: &RunNames) -> String {
        match &self.namespace_suffix {
            Some(suffix) => format!("{}-{suffix}", names.namespace),
            None => names.namespace.clone(),
        }
    }

    pub(super) fn collection(&self, names: &RunNames) -> String {
        if self.namespaced {
            format!("{}/namespaces/{}/{}", self.prefix, self.namespace(names), self.plural)
        } else {
            format!("{}/{}", self.prefix, self.plural)
        }
    }

    pub(super) fn object(&self, name: &str, names: &RunNames) -> Value {
        let text = serde_json::to_string(&self.valid).unwrap_or_default().replace("$NS", &self.namespace(names));
        let mut v: Value = serde_json::from_str(&text).unwrap_or_default();
        set_pointer(&mut v, "/metadata/name", json!(name));
        v
    }
}

pub(super) const APPLY: &str = "application/apply-patch+yaml";
pub(super) const MERGE: &str = "application/merge-patch+json";
pub(super) const JSON_PATCH: &str = "application/json-patch+json";
pub(super) const SMP: &str = "application/strategic-merge-patch+json";

fn mutation_case(t: &KindTemplate, mu: &Mutation, form: Form, name: &str, names: &RunNames) -> (Vec<Step>, Step) {
    let coll = t.collection(names);
    let item = format!("{coll}/{name}");
    let valid = t.object(name, names);
    let mut mutated = valid.clone();
    let status_form = matches!(form, Form::StatusUpdate | Form::StatusMergePatch);
    if status_form && !t.valid_status.is_null() {
        mutated["status"] = t.valid_status.clone();
    }
    apply_edits(&mut mutated, &mu.edits);
    let create = Step::new("POST", coll.clone()).json(&valid);
    let manager = "fieldManager=kproof-differential";
    match form {
        Form::Create => (vec![], Step::new("POST", coll).json(&mutated)),
        Form::CreateDryRun => (vec![], Step::new("POST", format!("{coll}?dryRun=All")).json(&mutated)),
        // Read-modify-write of a fresh GET: a controller of the real cluster may have written
        // the object since the create, and its admission may have added to it.
        Form::Update => (vec![create, Step::get(&item)], Step::new("PUT", item).rewrite(Value::Null, &mu.edits)),
        Form::MergePatch => (vec![create], Step::new("PATCH", item).json(&merge_patch(&valid, &mutated)).typed(MERGE)),
        Form::StrategicPatch => {
            (vec![create], Step::new("PATCH", item).json(&merge_patch(&valid, &mutated)).typed(SMP))
        }
        Form::JsonPatch => {
            let ops = serde_json::to_value(json_patch::diff(&valid, &mutated)).unwrap_or_default();
            (vec![create], Step::new("PATCH", item).json(&ops).typed(JSON_PATCH))
        }
        Form::Apply => {
            let path = format!("{item}?{manager}&force=true");
            let setup = if mu.applies == Applies::UpdateOnly {
                vec![Step::new("PATCH", path.clone()).json(&valid).typed(APPLY)]
            } else {
                vec![]
            };
            (setup, Step::new("PATCH", path).json(&mutated).typed(APPLY))
        }
        Form::StatusUpdate => (
            vec![create, Step::get(&item)],
            Step::new("PUT", format!("{item}/status")).rewrite(t.valid_status.clone(), &mu.edits),
        ),
        Form::StatusMergePatch => {
            let patch = json!({"status": mutated.get("status").cloned().unwrap_or(Value::Null)});
            (vec![create], Step::new("PATCH", format!("{item}/status")).json(&patch).typed(MERGE))
        }
        // The mutated object is created, then deleted (admission of deletes sees it as old).
        Form::Delete => (vec![Step::new("POST", coll).json(&mutated)], Step::delete(&item)),
    }
}

/// Cases about the API machinery rather than one kind's rules: selectors, query parameters,
/// preconditions, conflicts, subresources, bodies that do not decode.
fn machinery_case(rng: &mut Rng, t: &KindTemplate, name: &str, names: &RunNames) -> (String, Vec<Step>, Step) {
    let coll = t.collection(names);
    let item = format!("{coll}/{name}");
    let valid = t.object(name, names);
    let create = Step::new("POST", coll.clone()).json(&valid);
    let choices: &[&str] = &[
        "list-bad-label-selector",
        "list-label-selector-bad-value",
        "list-label-selector-in-empty",
        "list-field-selector-unsupported",
        "list-field-selector-bad-syntax",
        "list-rv-match-without-rv",
        "list-rv-match-unknown",
        "list-continue-garbage",
        "list-limit-with-rv-exact",
        "watch-initial-events-without-bookmarks",
        "create-bad-dry-run",
        "create-bad-field-validation",
        "create-strict-unknown-field",
        "create-already-exists",
        "create-kind-mismatch",
        "create-api-version-mismatch",
        "create-not-json",
        "create-namespace-mismatch",
        "create-no-name",
        "create-generate-name",
        "create-name-too-long",
        "update-name-mismatch",
        "update-stale-resource-version",
        "update-missing-object",
        "get-missing-object",
        "delete-missing-object",
        "delete-precondition-uid",
        "delete-precondition-rv",
        "delete-bad-propagation",
        "delete-grace-negative-ok",
        "patch-stale-resource-version",
        "patch-json-test-fails",
        "patch-json-bad-path",
        "patch-merge-not-json",
        "patch-unsupported-media-type",
        "patch-smp-on-custom",
        "patch-change-name",
        "patch-force-without-apply",
        "apply-without-field-manager",
        "apply-conflict",
        "apply-conflict-forced",
        "apply-managed-fields-set",
        "apply-create",
        "scale-get",
        "scale-negative",
        "scale-patch",
        "status-get",
        "unknown-subresource",
        "finalizer-added-while-deleting",
    ];
    let what = *rng.pick(choices);
    let q = |s: &str| format!("{coll}?{s}");
    let manager = "fieldManager=kproof-differential";
    let (setup, req): (Vec<Step>, Step) = match what {
        "list-bad-label-selector" => (vec![], Step::new("GET", q("labelSelector=a%20b%20c"))),
        "list-label-selector-bad-value" => (vec![], Step::new("GET", q("labelSelector=app%3D-bad-"))),
        "list-label-selector-in-empty" => (vec![], Step::new("GET", q("labelSelector=app%20in%20()"))),
        "list-field-selector-unsupported" => (vec![], Step::new("GET", q("fieldSelector=spec.bogus%3Dx"))),
        "list-field-selector-bad-syntax" => (vec![], Step::new("GET", q("fieldSelector=metadata.name"))),
        "list-rv-match-without-rv" => (vec![], Step::new("GET", q("resourceVersionMatch=NotOlderThan"))),
        "list-rv-match-unknown" => (vec![], Step::new("GET", q("resourceVersion=1&resourceVersionMatch=Sometimes"))),
        "list-continue-garbage" => (vec![], Step::new("GET", q("limit=1&continue=garbage"))),
        "list-limit-with-rv-exact" => (vec![], Step::new("GET", q("limit=1&resourceVersion=0&resourceVersionMatch=Exact"))),
        "watch-initial-events-without-bookmarks" => {
            (vec![], Step::new("GET", q("watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan")))
        }
        "create-bad-dry-run" => (vec![], Step::new("POST", q("dryRun=Some")).json(&valid)),
        "create-bad-field-validation" => (vec![], Step::new("POST", q("fieldValidation=Loose")).json(&valid)),
        "create-strict-unknown-field" => {
            let mut v = valid.clone();
            v["spec"]["bogusField"] = json!(1);
            v["metadata"]["bogusMeta"] = json!(1);
            (vec![], Step::new("POST", q("fieldValidation=Strict")).json(&v))
        }
        "create-already-exists" => (vec![create.clone()], create),
        "create-kind-mismatch" => {
            let mut v = valid.clone();
            v["kind"] = json!("Bogus");
            (vec![], Step::new("POST", coll.clone()).json(&v))
        }
        "create-api-version-mismatch" => {
            let mut v = valid.clone();
            v["apiVersion"] = json!("example.com/v9");
            (vec![], Step::new("POST", coll.clone()).json(&v))
        }
        "create-not-json" => {
            let mut s = Step::new("POST", coll.clone());
            s.body = Some(b"{not json".to_vec());
            (vec![], s)
        }
        "create-namespace-mismatch" if t.namespaced => {
            let mut v = valid.clone();
            v["metadata"]["namespace"] = json!("elsewhere");
            (vec![], Step::new("POST", coll.clone()).json(&v))
        }
        "create-no-name" => {
            let mut v = valid.clone();
            remove_pointer(&mut v, "/metadata/name");
            (vec![], Step::new("POST", coll.clone()).json(&v))
        }
        "create-generate-name" => {
            let mut v = valid.clone();
            remove_pointer(&mut v, "/metadata/name");
            v["metadata"]["generateName"] = json!(format!("{name}-"));
            (vec![], Step::new("POST", coll.clone()).json(&v))
        }
        "create-name-too-long" => {
            let mut v = valid.clone();
            v["metadata"]["name"] = json!(format!("{name}-{}", "x".repeat(260)));
            (vec![], Step::new("POST", coll.clone()).json(&v))
        }
        "update-name-mismatch" => {
            let mut v = valid.clone();
            v["metadata"]["name"] = json!(format!("{name}-other"));
            (vec![create], Step::new("PUT", item).json(&v))
        }
        "update-stale-resource-version" => {
            let mut v = valid.clone();
            v["metadata"]["resourceVersion"] = json!("1");
            (vec![create], Step::new("PUT", item).json(&v))
        }
        "update-missing-object" => (vec![], Step::new("PUT", item).json(&valid)),
        "get-missing-object" => (vec![], Step::new("GET", item)),
        "delete-missing-object" => (vec![], Step::new("DELETE", item)),
        "delete-precondition-uid" => (
            vec![create],
            Step::new("DELETE", item)
                .json(&json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}})),
        ),
        "delete-precondition-rv" => (
            vec![create],
            Step::new("DELETE", item).json(&json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": "1"}})),
        ),
        "delete-bad-propagation" => (vec![create], Step::new("DELETE", format!("{item}?propagationPolicy=Sideways"))),
        "delete-grace-negative-ok" => (vec![create], Step::new("DELETE", format!("{item}?gracePeriodSeconds=0"))),
        "patch-stale-resource-version" => {
            (vec![create], Step::new("PATCH", item).json(&json!({"metadata": {"resourceVersion": "1", "labels": {"x": "y"}}})).typed(MERGE))
        }
        "patch-json-test-fails" => (
            vec![create],
            Step::new("PATCH", item)
                .json(&json!([{"op": "test", "path": "/metadata/name", "value": "other"}, {"op": "add", "path": "/metadata/labels/x", "value": "y"}]))
                .typed(JSON_PATCH),
        ),
        "patch-json-bad-path" => (
            vec![create],
            Step::new("PATCH", item).json(&json!([{"op": "remove", "path": "/spec/doesNotExist/x"}])).typed(JSON_PATCH),
        ),
        "patch-merge-not-json" => {
            let mut s = Step::new("PATCH", item).typed(MERGE);
            s.body = Some(b"{nope".to_vec());
            (vec![create], s)
        }
        "patch-unsupported-media-type" => (vec![create], Step::new("PATCH", item).json(&json!({})).typed("text/plain")),
        "patch-smp-on-custom" => (vec![create], Step::new("PATCH", item).json(&json!({"metadata": {"labels": {"x": "y"}}})).typed(SMP)),
        "patch-change-name" => {
            (vec![create], Step::new("PATCH", item).json(&json!({"metadata": {"name": "renamed"}})).typed(MERGE))
        }
        "patch-force-without-apply" => {
            (vec![create], Step::new("PATCH", format!("{item}?force=true")).json(&json!({})).typed(MERGE))
        }
        "apply-without-field-manager" => (vec![], Step::new("PATCH", item).json(&valid).typed(APPLY)),
        "apply-conflict" | "apply-conflict-forced" => {
            let mut a = valid.clone();
            a["metadata"]["labels"] = json!({"owner": "a"});
            let mut b = valid.clone();
            b["metadata"]["labels"] = json!({"owner": "b"});
            let force = if what == "apply-conflict-forced" { "&force=true" } else { "" };
            (
                vec![Step::new("PATCH", format!("{item}?fieldManager=manager-a")).json(&a).typed(APPLY)],
                Step::new("PATCH", format!("{item}?fieldManager=manager-b{force}")).json(&b).typed(APPLY),
            )
        }
        "apply-managed-fields-set" => {
            let mut v = valid.clone();
            v["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {}}]);
            (vec![], Step::new("PATCH", format!("{item}?{manager}")).json(&v).typed(APPLY))
        }
        "apply-create" => (vec![], Step::new("PATCH", format!("{item}?{manager}")).json(&valid).typed(APPLY)),
        "scale-get" => (vec![create], Step::new("GET", format!("{item}/scale"))),
        "scale-negative" => (
            vec![create],
            Step::new("PUT", format!("{item}/scale"))
                .json(&json!({"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": name, "namespace": names.namespace}, "spec": {"replicas": -1}})),
        ),
        "scale-patch" => (vec![create], Step::new("PATCH", format!("{item}/scale")).json(&json!({"spec": {"replicas": 3}})).typed(MERGE)),
        "status-get" => (vec![create], Step::new("GET", format!("{item}/status"))),
        "unknown-subresource" => (vec![create], Step::new("GET", format!("{item}/bogus"))),
        "finalizer-added-while-deleting" => {
            let mut v = valid.clone();
            v["metadata"]["finalizers"] = json!(["example.com/hold"]);
            (
                vec![Step::new("POST", coll.clone()).json(&v), Step::new("DELETE", item.clone())],
                Step::new("PATCH", item)
                    .json(&json!({"metadata": {"finalizers": ["example.com/hold", "example.com/another"]}}))
                    .typed(MERGE),
            )
        }
        _ => (vec![], Step::new("GET", coll.clone())),
    };
    (what.to_string(), setup, req)
}

/// A mutation written in one of the forms it applies to, picked by `rng`: the form, the setup
/// and the compared request.
pub(super) fn written(
    rng: &mut Rng,
    t: &KindTemplate,
    mu: &Mutation,
    name: &str,
    names: &RunNames,
) -> (Form, Vec<Step>, Step) {
    let forms: &[Form] = match mu.applies {
        Applies::Always => {
            if rng.below(3) == 0 {
                UPDATE_FORMS
            } else {
                CREATE_FORMS
            }
        }
        Applies::UpdateOnly => UPDATE_FORMS,
        Applies::Status => STATUS_FORMS,
        Applies::Delete => DELETE_FORMS,
    };
    let mut form = *rng.pick(forms);
    if form == Form::StrategicPatch && t.custom {
        form = Form::MergePatch;
    }
    if matches!(form, Form::StatusUpdate | Form::StatusMergePatch) && !t.status {
        form = Form::Update;
    }
    let (setup, req) = mutation_case(t, mu, form, name, names);
    (form, setup, req)
}

/// The corpus of `count` cases for `seed`.
pub fn generate(seed: u64, count: usize, names: &RunNames) -> Vec<Case> {
    let templates = kinds();
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(count);
    for index in 0..count {
        let t = rng.pick(templates);
        let name = format!("d{index}-{}", names.nonce);
        let (what, class, setup, request) = if rng.below(5) == 0 {
            let (what, setup, req) = machinery_case(&mut rng, t, &name, names);
            (what, "API machinery".to_string(), setup, req)
        } else {
            let mu = rng.pick(&t.mutations);
            let (form, setup, req) = written(&mut rng, t, mu, &name, names);
            (format!("{form:?} {}", mu.name), format!("mutation: {}", form.describe()), setup, req)
        };
        out.push(Case { index, kind: t.label.to_string(), what, class, setup, request, teardown: Vec::new() });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_corpus() {
        let names = RunNames { namespace: "ns".into(), nonce: "n".into() };
        let a = generate(7, 200, &names);
        let b = generate(7, 200, &names);
        let describe =
            |c: &[Case]| c.iter().map(|c| format!("{} {}", c.what, c.request.describe())).collect::<Vec<_>>();
        assert_eq!(describe(&a), describe(&b), "seed 7 must reproduce");
        let c = generate(8, 200, &names);
        assert_ne!(describe(&a), describe(&c), "another seed, another corpus");
    }

    #[test]
    fn every_kind_has_a_valid_mutation_and_pointers_resolve() {
        for t in kinds() {
            assert!(t.mutations.iter().any(|m| m.edits.is_empty()), "{} has no valid case", t.label);
            let mut v = t.valid.clone();
            for mu in &t.mutations {
                apply_edits(&mut v, &mu.edits);
            }
        }
    }

    #[test]
    fn merge_patch_turns_old_into_new() {
        let old = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [1]});
        let new = json!({"a": 1, "b": {"c": 5}, "e": [2], "f": true});
        let mut patched = old.clone();
        json_patch::merge(&mut patched, &merge_patch(&old, &new));
        assert_eq!(patched, new);
    }
}
