//! `corevalidation.ValidateNodeSelector` (pkg/apis/core/validation/validation.go at
//! k8s.io/kubernetes v1.37.2), as DRA uses it for slices, devices and allocations: at least
//! one term; label requirements with their operator's values; field requirements on
//! `metadata.name` only.

use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use apimachinery::validation::{dns1123_subdomain_errors, label_key_errors, label_value_errors};
use serde_json::Value;

/// `ValidateNodeSelector` with label values checked (`allowInvalidLabelValueInRequiredNodeAffinity`
/// false).
pub(super) fn node_selector(sel: &Value, path: &Path) -> Vec<StatusCause> {
    let terms_path = path.child("nodeSelectorTerms");
    let terms = super::list(sel, "nodeSelectorTerms");
    if terms.is_empty() {
        return vec![field::required(&terms_path, "must have at least one node selector term")];
    }
    let mut out = Vec::new();
    for (i, term) in terms.iter().enumerate() {
        let at = terms_path.index(i);
        for (j, req) in super::list(term, "matchExpressions").iter().enumerate() {
            out.extend(label_requirement(req, &at.child("matchExpressions").index(j)));
        }
        for (j, req) in super::list(term, "matchFields").iter().enumerate() {
            out.extend(field_requirement(req, &at.child("matchFields").index(j)));
        }
    }
    out
}

fn strings(req: &Value) -> Vec<&str> {
    super::list(req, "values").iter().map(|v| v.as_str().unwrap_or_default()).collect()
}

/// `ValidateNodeSelectorRequirement`.
fn label_requirement(req: &Value, path: &Path) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let values = strings(req);
    let operator = super::text(req, "operator");
    match operator {
        "In" | "NotIn" if values.is_empty() => {
            out.push(field::required(&path.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
        }
        "Exists" | "DoesNotExist" if !values.is_empty() => out.push(field::forbidden(
            &path.child("values"),
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "Gt" | "Lt" if values.len() != 1 => out.push(field::required(
            &path.child("values"),
            "must be specified single value when `operator` is 'Lt' or 'Gt'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
        other => out.push(field::invalid(&path.child("operator"), other, "not a valid selector operator")),
    }
    let key = super::text(req, "key");
    out.extend(label_key_errors(key).iter().map(|m| field::invalid(&path.child("key"), key, m)));
    for (i, v) in values.iter().enumerate() {
        out.extend(label_value_errors(v).iter().map(|m| field::invalid(&path.child("values").index(i), *v, m)));
    }
    out
}

/// `ValidateNodeFieldSelectorRequirement`: one value of `metadata.name`, a node name.
fn field_requirement(req: &Value, path: &Path) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let values = strings(req);
    match super::text(req, "operator") {
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
    let key = super::text(req, "key");
    if key != "metadata.name" {
        out.push(field::invalid(&path.child("key"), key, "not a valid field selector key"));
    } else {
        for (i, v) in values.iter().enumerate() {
            out.extend(
                dns1123_subdomain_errors(v).iter().map(|m| field::invalid(&path.child("values").index(i), *v, m)),
            );
        }
    }
    out
}
