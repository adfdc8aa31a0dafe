//! Node and pod (anti-)affinity: `validateAffinity` of `pkg/apis/core/validation/validation.go`
//! at v1.37.2 with `validateNodeAffinity`, `ValidateNodeSelector`, `ValidateNodeSelectorTerm`,
//! `ValidateNodeSelectorRequirement`, `ValidateNodeFieldSelectorRequirement`,
//! `ValidatePreferredSchedulingTerms`, `validatePodAffinity`, `validatePodAntiAffinity`,
//! `validatePodAffinityTerm(s)`, `validateWeightedPodAffinityTerms` and
//! `ValidateMatchLabelKeysAndMismatchLabelKeys`.

use super::node_selector::{node_selector, node_selector_term};
use super::pod_spec::{list, s};
use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use crate::registry::meta::validate_label_selector;
use apimachinery::validation::{dns1123_label_errors, label_key_errors};
use serde_json::Value;
use std::collections::BTreeSet;

fn present<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    list(v, key).iter().map(|x| x.as_str().unwrap_or_default().to_string()).collect()
}

/// `ValidateLabelName` at `path`.
pub(super) fn label_name(out: &mut Vec<StatusCause>, name: &str, path: &Path) {
    for msg in label_key_errors(name) {
        out.push(field::invalid(path, name, &msg));
    }
}

/// `validateAffinity` of `spec.affinity`. No option relaxes the checks for a new pod: the label
/// values of selectors are checked (the old pod's invalid values are not carried here).
pub(super) fn affinity(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) {
    let Some(a) = present(spec, "affinity") else { return };
    if let Some(na) = present(a, "nodeAffinity") {
        node_affinity(out, na, &path.child("nodeAffinity"));
    }
    for key in ["podAffinity", "podAntiAffinity"] {
        if let Some(pa) = present(a, key) {
            pod_affinity(out, pa, &path.child(key));
        }
    }
}

/// `validateNodeAffinity`: the required selector, then the preferred terms.
fn node_affinity(out: &mut Vec<StatusCause>, na: &Value, path: &Path) {
    if let Some(sel) = present(na, "requiredDuringSchedulingIgnoredDuringExecution") {
        node_selector(out, sel, &path.child("requiredDuringSchedulingIgnoredDuringExecution"));
    }
    let preferred = list(na, "preferredDuringSchedulingIgnoredDuringExecution");
    let ppath = path.child("preferredDuringSchedulingIgnoredDuringExecution");
    for (i, term) in preferred.iter().enumerate() {
        let at = ppath.index(i);
        let weight = term.get("weight").and_then(Value::as_i64).unwrap_or(0);
        if !(1..=100).contains(&weight) {
            out.push(field::invalid(&at.child("weight"), weight, "must be in the range 1-100"));
        }
        // Preferred terms may match no node, so their label values are not checked.
        node_selector_term(out, term.get("preference").unwrap_or(&Value::Null), false, &at.child("preference"));
    }
}

/// `validatePodAffinity` / `validatePodAntiAffinity`: required terms, then weighted ones.
fn pod_affinity(out: &mut Vec<StatusCause>, pa: &Value, path: &Path) {
    let rpath = path.child("requiredDuringSchedulingIgnoredDuringExecution");
    for (i, term) in list(pa, "requiredDuringSchedulingIgnoredDuringExecution").iter().enumerate() {
        pod_affinity_term(out, term, &rpath.index(i));
    }
    let ppath = path.child("preferredDuringSchedulingIgnoredDuringExecution");
    for (j, weighted) in list(pa, "preferredDuringSchedulingIgnoredDuringExecution").iter().enumerate() {
        let at = ppath.index(j);
        let weight = weighted.get("weight").and_then(Value::as_i64).unwrap_or(0);
        if !(1..=100).contains(&weight) {
            out.push(field::invalid(&at.child("weight"), weight, "must be in the range 1-100"));
        }
        pod_affinity_term(out, weighted.get("podAffinityTerm").unwrap_or(&Value::Null), &at.child("podAffinityTerm"));
    }
}

/// `validatePodAffinityTerm`: both selectors, the namespaces (reported at `namespace`, as
/// upstream does), the label keys, then the topology key (required, and a label name).
fn pod_affinity_term(out: &mut Vec<StatusCause>, term: &Value, path: &Path) {
    let selector = present(term, "labelSelector");
    if let Some(sel) = selector {
        out.extend(validate_label_selector(sel, &path.child("labelSelector")));
    }
    if let Some(sel) = present(term, "namespaceSelector") {
        out.extend(validate_label_selector(sel, &path.child("namespaceSelector")));
    }
    for ns in strings(term, "namespaces") {
        for msg in dns1123_label_errors(&ns) {
            out.push(field::invalid(&path.child("namespace"), ns.as_str(), &msg));
        }
    }
    match_and_mismatch_label_keys(
        out,
        &strings(term, "matchLabelKeys"),
        &strings(term, "mismatchLabelKeys"),
        selector,
        path,
    );
    let topology_key = s(term, "topologyKey");
    if topology_key.is_empty() {
        out.push(field::required(&path.child("topologyKey"), "can not be empty"));
    }
    label_name(out, topology_key, &path.child("topologyKey"));
}

/// `validateLabelKeys`: label names, and only beside a selector.
fn label_keys(out: &mut Vec<StatusCause>, keys: &[String], selector: Option<&Value>, path: &Path) {
    if keys.is_empty() {
        return;
    }
    if selector.is_none() {
        out.push(field::forbidden(path, "must not be specified when labelSelector is not set"));
        return;
    }
    for (i, key) in keys.iter().enumerate() {
        label_name(out, key, &path.index(i));
    }
}

/// `ValidateMatchLabelKeysAndMismatchLabelKeys` of the holder at `path`: the keys, a match key
/// that the selector also tests, and a key in both lists.
pub(super) fn match_and_mismatch_label_keys(
    out: &mut Vec<StatusCause>,
    match_keys: &[String],
    mismatch_keys: &[String],
    selector: Option<&Value>,
    path: &Path,
) {
    label_keys(out, match_keys, selector, &path.child("matchLabelKeys"));
    label_keys(out, mismatch_keys, selector, &path.child("mismatchLabelKeys"));
    if let Some(sel) = selector {
        let mut seen: BTreeSet<String> =
            sel.get("matchLabels").and_then(Value::as_object).into_iter().flatten().map(|(k, _)| k.clone()).collect();
        for expr in list(sel, "matchExpressions") {
            let key = s(expr, "key");
            // A key from matchLabelKeys already merged into the selector shows up twice.
            if let Some(i) = match_keys.iter().rposition(|k| k == key)
                && seen.contains(key)
            {
                out.push(field::invalid(&path.index(i), key, "exists in both matchLabelKeys and labelSelector"));
            }
            seen.insert(key.to_string());
        }
    }
    let mismatch: BTreeSet<&String> = mismatch_keys.iter().collect();
    for (i, k) in match_keys.iter().enumerate() {
        if mismatch.contains(k) {
            out.push(field::invalid(
                &path.child("matchLabelKeys").index(i),
                k.as_str(),
                "exists in both matchLabelKeys and mismatchLabelKeys",
            ));
        }
    }
}
