//! Valid objects of every kind the differential corpus covers, and the ways to break each one.
//!
//! The corpus is data: `kinds.yaml` beside this file holds, per kind, a valid object as
//! kube-apiserver accepts it, where its URL is, and a catalogue of mutations (one thing broken
//! each, from the rules of kube-apiserver's `pkg/apis/<group>/validation` and of the CRDs'
//! schemas and CEL rules). This module reads it into [`KindTemplate`]s: it expands the shared
//! mutation sets a kind includes and the `repeat` edits, and checks the file is well formed.

use std::sync::LazyLock;

use serde::Deserialize;
use serde_json::{Map, Value};

/// The corpus, compiled into the binary so a run needs no file beside it.
const KINDS_YAML: &str = include_str!("kinds.yaml");

/// The second corpus's cases from upstream's validation tests, compiled in likewise.
const UPSTREAM_CASES_YAML: &str = include_str!("upstream-cases.yaml");

/// One edit of an object, at a JSON pointer.
#[derive(Debug, Clone)]
pub enum Edit {
    /// Sets the value at the pointer (creating parent objects).
    Set(String, Value),
    /// Removes the value at the pointer.
    Remove(String),
    /// Sets a string of this many bytes at the pointer (the size limits).
    Big(String, usize),
}

/// When a mutation is meaningful.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Applies {
    /// Any write: create, update, patch, apply.
    Always,
    /// Only a change of an existing object (immutable fields).
    #[serde(rename = "update")]
    UpdateOnly,
    /// Only through the `/status` subresource.
    Status,
    /// A delete of the mutated object (which must be created): admission of deletes.
    Delete,
}

/// One thing broken (or, with no edits, nothing).
#[derive(Debug, Clone)]
pub struct Mutation {
    /// A short name, for reports.
    pub name: String,
    /// The edits.
    pub edits: Vec<Edit>,
    /// When it applies.
    pub applies: Applies,
}

/// A kind of the corpus.
#[derive(Debug, Clone)]
pub struct KindTemplate {
    /// The name the report uses (`Pod`, `Event.events.k8s.io`).
    pub label: String,
    /// `/api/v1` or `/apis/apps/v1`.
    pub prefix: String,
    /// The resource plural.
    pub plural: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Objects go to the run's namespace with this suffix (`<ns>-<suffix>`), away from the
    /// kinds whose admission they change (a LimitRange or a ResourceQuota refuses pods).
    pub namespace_suffix: Option<String>,
    /// Has a `/status` subresource.
    pub status: bool,
    /// Has a `/scale` subresource.
    pub scale: bool,
    /// A custom resource (no strategic merge patch).
    pub custom: bool,
    /// A valid object; `metadata.name` is filled in per request.
    pub valid: Value,
    /// What a valid status looks like, for status writes (may be `Null`).
    pub valid_status: Value,
    /// The ways to break it.
    pub mutations: Vec<Mutation>,
}

/// Every kind of the corpus, in the file's order.
pub fn kinds() -> &'static [KindTemplate] {
    static KINDS: LazyLock<Vec<KindTemplate>> = LazyLock::new(|| {
        // The file is compiled in and checked by this module's tests: a malformed one is a
        // build of kproof that must not ship, not an input error.
        parse(KINDS_YAML).unwrap_or_else(|e| panic!("differential/kinds.yaml: {e}"))
    });
    &KINDS
}

/// A case of upstream's validation tests, written against a kind's valid object.
#[derive(Debug, Clone)]
pub struct UpstreamCase {
    /// The kind's label in `kinds.yaml`.
    pub kind: String,
    /// The test it comes from (a URL pinned to a tag, the test function and case).
    pub source: String,
    /// Its edits, as a mutation.
    pub mutation: Mutation,
}

/// Every case of `upstream-cases.yaml`, checked against the kinds.
pub fn upstream_cases() -> &'static [UpstreamCase] {
    static CASES: LazyLock<Vec<UpstreamCase>> = LazyLock::new(|| {
        // Compiled in and checked by this module's tests, as kinds.yaml is.
        parse_upstream_cases(UPSTREAM_CASES_YAML, kinds())
            .unwrap_or_else(|e| panic!("differential/upstream-cases.yaml: {e}"))
    });
    &CASES
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpstreamCasesFile {
    cases: Vec<UpstreamCaseEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpstreamCaseEntry {
    kind: String,
    name: String,
    source: String,
    #[serde(default = "always")]
    on: Applies,
    #[serde(default)]
    set: Map<String, Value>,
    #[serde(default)]
    repeat: Map<String, Value>,
    #[serde(default)]
    big: Map<String, Value>,
    #[serde(default)]
    remove: Vec<String>,
}

fn parse_upstream_cases(text: &str, kinds: &[KindTemplate]) -> Result<Vec<UpstreamCase>, String> {
    let file: UpstreamCasesFile = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
    let mut seen = std::collections::BTreeSet::new();
    file.cases
        .into_iter()
        .map(|c| {
            let here = |e: &str| format!("case {} of {}: {e}", c.name, c.kind);
            if !kinds.iter().any(|k| k.label == c.kind) {
                return Err(here("no such kind in kinds.yaml"));
            }
            if !seen.insert((c.kind.clone(), c.name.clone())) {
                return Err(here("appears twice"));
            }
            if !c.source.starts_with("https://") {
                return Err(here("its source is not a URL"));
            }
            let entry =
                MutationEntry { name: c.name, on: c.on, set: c.set, repeat: c.repeat, big: c.big, remove: c.remove };
            Ok(UpstreamCase { kind: c.kind, source: c.source, mutation: mutation(entry)? })
        })
        .collect()
}

/// The file's shape.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CorpusFile {
    sets: Map<String, Value>,
    kinds: Vec<KindEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct KindEntry {
    label: String,
    prefix: String,
    plural: String,
    #[serde(default = "yes")]
    namespaced: bool,
    #[serde(default)]
    namespace_suffix: Option<String>,
    #[serde(default)]
    subresources: Vec<Subresource>,
    #[serde(default)]
    custom: bool,
    valid: Value,
    #[serde(default)]
    valid_status: Value,
    #[serde(default)]
    include: Vec<Include>,
    #[serde(default)]
    mutations: Vec<MutationEntry>,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
enum Subresource {
    Status,
    Scale,
}

/// `meta`, or `{podSpec: /spec}`: a shared set, with `{at}` replaced by the pointer.
#[derive(Deserialize)]
#[serde(untagged)]
enum Include {
    Plain(String),
    At(Map<String, Value>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MutationEntry {
    name: String,
    #[serde(default = "always")]
    on: Applies,
    #[serde(default)]
    set: Map<String, Value>,
    #[serde(default)]
    repeat: Map<String, Value>,
    #[serde(default)]
    big: Map<String, Value>,
    #[serde(default)]
    remove: Vec<String>,
}

fn always() -> Applies {
    Applies::Always
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Repeat {
    count: usize,
    item: Value,
}

fn parse(text: &str) -> Result<Vec<KindTemplate>, String> {
    let file: CorpusFile = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
    let mut seen = std::collections::BTreeSet::new();
    file.kinds
        .into_iter()
        .map(|k| {
            if !seen.insert(k.label.clone()) {
                return Err(format!("kind {} appears twice", k.label));
            }
            kind(k, &file.sets)
        })
        .collect()
}

fn kind(k: KindEntry, sets: &Map<String, Value>) -> Result<KindTemplate, String> {
    let here = |e: String| format!("kind {}: {e}", k.label);
    let mut mutations = Vec::new();
    for inc in &k.include {
        let (set, at) = match inc {
            Include::Plain(name) => (name.as_str(), ""),
            Include::At(m) => {
                let (name, at) = m
                    .iter()
                    .next()
                    .filter(|_| m.len() == 1)
                    .ok_or_else(|| here("an include is a set's name or {set: pointer}".into()))?;
                (name.as_str(), at.as_str().ok_or_else(|| here(format!("include {name}: the pointer is a string")))?)
            }
        };
        let entries = sets.get(set).ok_or_else(|| here(format!("includes unknown set {set}")))?;
        // `{at}` is substituted in the text, so it reaches pointers and values alike.
        let entries = serde_json::to_string(entries).map_err(|e| e.to_string())?.replace("{at}", at);
        let entries: Vec<MutationEntry> =
            serde_json::from_str(&entries).map_err(|e| here(format!("set {set}: {e}")))?;
        for e in entries {
            mutations.push(mutation(e).map_err(here)?);
        }
    }
    for e in k.mutations {
        mutations.push(mutation(e).map_err(here)?);
    }
    let mut names = std::collections::BTreeSet::new();
    if let Some(dup) = mutations.iter().find(|m| !names.insert(m.name.clone())) {
        return Err(here(format!("mutation {} appears twice", dup.name)));
    }
    Ok(KindTemplate {
        namespaced: k.namespaced,
        namespace_suffix: k.namespace_suffix,
        status: k.subresources.contains(&Subresource::Status),
        scale: k.subresources.contains(&Subresource::Scale),
        custom: k.custom,
        valid: k.valid,
        valid_status: k.valid_status,
        mutations,
        label: k.label,
        prefix: k.prefix,
        plural: k.plural,
    })
}

fn mutation(e: MutationEntry) -> Result<Mutation, String> {
    let ptr = |p: &str| -> Result<String, String> {
        if p.starts_with('/') {
            Ok(p.to_string())
        } else {
            Err(format!("mutation {}: {p:?} is not a JSON pointer", e.name))
        }
    };
    let mut edits = Vec::new();
    for (p, v) in &e.set {
        edits.push(Edit::Set(ptr(p)?, v.clone()));
    }
    for (p, v) in &e.repeat {
        let r: Repeat =
            serde_json::from_value(v.clone()).map_err(|err| format!("mutation {}: repeat {p}: {err}", e.name))?;
        let item = serde_json::to_string(&r.item).map_err(|err| err.to_string())?;
        let items = (0..r.count)
            .map(|i| serde_json::from_str(&item.replace("{i}", &i.to_string())))
            .collect::<Result<Vec<Value>, _>>()
            .map_err(|err| format!("mutation {}: repeat {p}: {err}", e.name))?;
        edits.push(Edit::Set(ptr(p)?, Value::Array(items)));
    }
    for (p, v) in &e.big {
        let n = v.as_u64().ok_or_else(|| format!("mutation {}: big {p}: a byte count", e.name))?;
        edits.push(Edit::Big(ptr(p)?, n as usize));
    }
    for p in &e.remove {
        edits.push(Edit::Remove(ptr(p)?));
    }
    Ok(Mutation { name: e.name, edits, applies: e.on })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_file_reads_and_every_kind_has_a_valid_case() {
        let ks = kinds();
        assert!(ks.len() >= 29, "{} kinds", ks.len());
        for k in ks {
            assert!(k.mutations.iter().any(|m| m.edits.is_empty()), "{} has no valid case", k.label);
            assert!(k.valid.get("apiVersion").is_some() && k.valid.get("kind").is_some(), "{}", k.label);
        }
        let pod = ks.iter().find(|k| k.label == "Pod").expect("Pod");
        // `{podSpec: /spec}` reached the pointers of the shared set.
        assert!(pod.mutations.iter().any(|m| {
            m.name == "containers-empty" && matches!(&m.edits[..], [Edit::Set(p, _)] if p == "/spec/containers")
        }));
    }

    #[test]
    fn repeat_expands_with_the_index() {
        let claim = kinds().iter().find(|k| k.label == "ResourceClaim").expect("ResourceClaim");
        let m = claim.mutations.iter().find(|m| m.name == "dra-reserved-too-many").expect("mutation");
        let Some(Edit::Set(_, Value::Array(items))) =
            m.edits.iter().find(|e| matches!(e, Edit::Set(p, _) if p == "/status/reservedFor"))
        else {
            panic!("no reservedFor edit: {:?}", m.edits)
        };
        assert_eq!(items.len(), 257);
        assert_eq!(items[256]["uid"], "u256");
    }

    #[test]
    fn the_upstream_cases_read_and_name_their_sources() {
        let cases = upstream_cases();
        assert!(cases.len() >= 150, "{} cases", cases.len());
        assert!(cases.iter().all(|c| c.source.contains("/v1.37.2/") || c.source.contains("/v0.37.2/")));
        let bad = "cases:\n  - {kind: Nope, name: a, source: \"https://x\"}\n";
        assert!(parse_upstream_cases(bad, kinds()).unwrap_err().contains("no such kind"));
        let twice = "cases:\n  - {kind: Pod, name: a, source: \"https://x\"}\n  - {kind: Pod, name: a, source: \"https://x\"}\n";
        assert!(parse_upstream_cases(twice, kinds()).unwrap_err().contains("appears twice"));
    }

    #[test]
    fn malformed_files_say_what_is_wrong() {
        let unknown_set = "sets: {}\nkinds:\n  - {label: X, prefix: /api/v1, plural: xs, valid: {}, include: [nope]}\n";
        assert!(parse(unknown_set).unwrap_err().contains("unknown set nope"));
        let not_pointer = "sets: {}\nkinds:\n  - {label: X, prefix: /api/v1, plural: xs, valid: {}, mutations: [{name: a, set: {spec: 1}}]}\n";
        assert!(parse(not_pointer).unwrap_err().contains("not a JSON pointer"));
        let duplicate = "sets: {}\nkinds:\n  - {label: X, prefix: /api/v1, plural: xs, valid: {}, mutations: [{name: a}, {name: a}]}\n";
        assert!(parse(duplicate).unwrap_err().contains("appears twice"));
        let typo = "sets: {}\nkinds:\n  - {label: X, prefix: /api/v1, plural: xs, valid: {}, mutations: [{name: a, sett: {}}]}\n";
        assert!(parse(typo).is_err());
    }
}
