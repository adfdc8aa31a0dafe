//! `ValidateNodeSelector` of pkg/apis/core/validation/validation.go at k8s.io/kubernetes v1.37.2:
//! a node affinity's required selector, and the node selectors of DRA's slices, devices and
//! allocations, which call the same function.

use super::pod_spec::{list, s};
use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use apimachinery::validation::{dns1123_subdomain_errors, label_key_errors, label_value_errors};
use serde_json::Value;

fn strings(v: &Value, key: &str) -> Vec<String> {
    list(v, key).iter().map(|x| x.as_str().unwrap_or_default().to_string()).collect()
}

/// [`node_selector`]'s causes, for callers that collect them elsewhere.
pub(crate) fn node_selector_causes(sel: &Value, path: &Path) -> Vec<StatusCause> {
    let mut out = Vec::new();
    node_selector(&mut out, sel, path);
    out
}

/// `ValidateNodeSelector`: at least one term, each term valid.
pub(super) fn node_selector(out: &mut Vec<StatusCause>, sel: &Value, path: &Path) {
    let terms = list(sel, "nodeSelectorTerms");
    let tpath = path.child("nodeSelectorTerms");
    if terms.is_empty() {
        out.push(field::required(&tpath, "must have at least one node selector term"));
        return;
    }
    for (i, term) in terms.iter().enumerate() {
        node_selector_term(out, term, true, &tpath.index(i));
    }
}

/// `ValidateNodeSelectorTerm`: its label expressions, then its field expressions.
pub(super) fn node_selector_term(out: &mut Vec<StatusCause>, term: &Value, check_values: bool, path: &Path) {
    for (j, req) in list(term, "matchExpressions").iter().enumerate() {
        node_selector_requirement(out, req, check_values, &path.child("matchExpressions").index(j));
    }
    for (j, req) in list(term, "matchFields").iter().enumerate() {
        node_field_requirement(out, req, &path.child("matchFields").index(j));
    }
}

/// `ValidateNodeSelectorRequirement`: values as the operator needs them, the key a label name,
/// the values label values (for required terms).
fn node_selector_requirement(out: &mut Vec<StatusCause>, req: &Value, check_values: bool, path: &Path) {
    let values = strings(req, "values");
    let op = s(req, "operator");
    match op {
        "In" | "NotIn" => {
            if values.is_empty() {
                out.push(field::required(
                    &path.child("values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                ));
            }
        }
        "Exists" | "DoesNotExist" => {
            if !values.is_empty() {
                out.push(field::forbidden(
                    &path.child("values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ));
            }
        }
        "Gt" | "Lt" => {
            if values.len() != 1 {
                out.push(field::required(
                    &path.child("values"),
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                ));
            }
        }
        other => out.push(field::invalid(&path.child("operator"), other, "not a valid selector operator")),
    }
    let key = s(req, "key");
    for msg in label_key_errors(key) {
        out.push(field::invalid(&path.child("key"), key, &msg));
    }
    if check_values {
        for (i, v) in values.iter().enumerate() {
            for msg in label_value_errors(v) {
                out.push(field::invalid(&path.child("values").index(i), v.as_str(), &msg));
            }
        }
    }
}

/// `ValidateNodeFieldSelectorRequirement`: one value for `In`/`NotIn` (no other operator), and
/// `metadata.name` the only key, its values node names.
fn node_field_requirement(out: &mut Vec<StatusCause>, req: &Value, path: &Path) {
    let values = strings(req, "values");
    let op = s(req, "operator");
    match op {
        "In" | "NotIn" => {
            if values.len() != 1 {
                out.push(field::required(
                    &path.child("values"),
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                ));
            }
        }
        other => out.push(field::invalid(&path.child("operator"), other, "not a valid selector operator")),
    }
    let key = s(req, "key");
    if key != "metadata.name" {
        out.push(field::invalid(&path.child("key"), key, "not a valid field selector key"));
        return;
    }
    for (i, v) in values.iter().enumerate() {
        for msg in dns1123_subdomain_errors(v) {
            out.push(field::invalid(&path.child("values").index(i), v.as_str(), &msg));
        }
    }
}
