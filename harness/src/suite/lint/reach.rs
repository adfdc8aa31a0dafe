//! What a row's references can reach: every kind it names must be one the server can serve
//! for that row (a built-in kind, a CRD its fixtures or steps install, or a CRD of an actor
//! it runs), and every object name a check looks for should be one the row can bring about.
//! A misspelt kind or name matches nothing, and `never`, `atMost` or `gone` over nothing hold
//! without proving anything.

use crate::suite::kinds::KindCatalog;
use crate::suite::{EventMatch, Expectation, Row, Step};
use serde_json::Value;
use std::collections::BTreeSet;

/// One kind or name a row refers to, and where.
struct Reference<'r> {
    label: String,
    kind: &'r str,
    /// An exact name, or a name prefix, that a check looks for.
    name: Option<&'r str>,
}

/// The kinds and names `row`'s steps and expectations refer to.
fn references(row: &Row) -> Vec<Reference<'_>> {
    let mut out = Vec::new();
    for (i, step) in row.steps.iter().enumerate() {
        let label = format!("step {} ({})", i + 1, step.name());
        match step {
            Step::Patch { target, .. }
            | Step::Delete { target, .. }
            | Step::Scale { target, .. }
            | Step::Bind { from: target, .. } => out.push(Reference { label, kind: &target.kind, name: None }),
            Step::Wait(e) => expectation_references(label, e, &mut out),
            Step::Apply(_) | Step::Create(_) | Step::Advance(_) | Step::Knob { .. } => {}
        }
    }
    for (i, e) in row.expect.iter().enumerate() {
        expectation_references(format!("expect {} ({})", i + 1, e.name()), e, &mut out);
    }
    out
}

fn expectation_references<'r>(label: String, e: &'r Expectation, out: &mut Vec<Reference<'r>>) {
    let mut event = |label: String, m: &'r EventMatch| {
        if let Some(kind) = &m.kind {
            out.push(Reference { label, kind, name: m.name.as_deref().or(m.name_prefix.as_deref()) });
        }
    };
    match e {
        Expectation::Eventually { object, .. } | Expectation::Consistently { object, .. } => {
            let t = &object.target;
            out.push(Reference { label, kind: &t.kind, name: t.name.as_deref() });
        }
        Expectation::Before(b) => {
            event(format!("{label} first"), &b.first);
            event(format!("{label} then"), &b.then);
        }
        Expectation::Never(m)
        | Expectation::AtMost { event: m, .. }
        | Expectation::Count { event: m, .. }
        | Expectation::AtLeast { event: m, .. } => event(label, m),
        Expectation::Sequence(seq) => event(label, &seq.event),
    }
}

/// A problem [`check_row`] found: an error (the row cannot work) or a warning.
pub(super) enum Finding {
    /// A kind the server cannot serve for this row.
    UnknownKind(String),
    /// A name nothing in the row creates.
    UnreachableName(String),
}

/// Checks `row`'s kinds against `catalog` plus the CRDs in `documents` (every manifest the
/// row applies, suite fixtures included), and the names its checks look for against every
/// string those manifests and the row's patches hold.
pub(super) fn check_row(
    row: &Row,
    documents: &[Value],
    patch_strings: &[String],
    catalog: &KindCatalog,
) -> Vec<Finding> {
    let actors = row.needs.actors();
    let mut kinds: BTreeSet<&str> = catalog.kinds_for(&actors).collect();
    let crd_kinds: Vec<&str> = documents
        .iter()
        .filter(|d| d.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"))
        .filter_map(|d| d.pointer("/spec/names/kind").and_then(Value::as_str))
        .collect();
    kinds.extend(crd_kinds);
    let mut creatable: Vec<String> = patch_strings.to_vec();
    for d in documents {
        super::value_strings(d, &mut creatable);
    }
    let mut findings = Vec::new();
    for r in references(row) {
        if !r.kind.contains("${") && !kinds.contains(r.kind) {
            let serving = catalog.actors_serving(r.kind);
            let hint = if serving.is_empty() {
                String::new()
            } else {
                let names: Vec<String> = serving.iter().map(|a| format!("`actor:{a}`")).collect();
                format!(" (its CRD comes with {}: add it to needs.capabilities)", names.join(" or "))
            };
            findings.push(Finding::UnknownKind(format!(
                "{}: kind {:?} is neither built in nor installed by the row's fixtures, steps or actors{hint}",
                r.label, r.kind
            )));
            continue;
        }
        if let Some(name) = r.name
            && !name.contains("${")
            && !creatable.iter().any(|c| names_related(name, c))
        {
            findings.push(Finding::UnreachableName(format!(
                "{}: no fixture, step or binding of the row mentions {} {name:?}: a misspelt name matches nothing",
                r.label, r.kind
            )));
        }
    }
    findings
}

/// Whether a name a check looks for could come from a string a manifest holds: the same
/// name, or one derived from it the way controllers derive names (`<cluster>-head-svc`,
/// `<service>-<hash>`), or a part of it (a pattern's name prefix).
fn names_related(name: &str, mentioned: &str) -> bool {
    const SHORTEST: usize = 3;
    name == mentioned
        || (mentioned.len() >= SHORTEST && name.contains(mentioned))
        || (name.len() >= SHORTEST && mentioned.contains(name))
}
