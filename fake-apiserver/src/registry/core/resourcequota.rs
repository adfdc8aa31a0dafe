//! ResourceQuota validation, as kube-apiserver v1.37.2 (`pkg/apis/core/validation/validation.go`:
//! `ValidateResourceQuota`, `ValidateResourceQuotaSpec`, `validateResourceQuotaScopes`,
//! `validateScopedResourceSelectorRequirement`, `ValidateResourceQuotaUpdate`,
//! `ValidateResourceQuotaStatusUpdate`). Go walks the `hard` map in random order; its keys are
//! taken sorted here.

use super::resource_names::{is_integer, is_standard_quota, resource_name_errors};
use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use crate::registry::{ResourceType, Strategy};
use apimachinery::quantity::Quantity;
use serde_json::Value;
use std::collections::BTreeSet;

/// core/v1 ResourceQuota.
#[derive(Debug)]
pub(crate) struct ResourceQuotaStrategy;

impl Strategy for ResourceQuotaStrategy {
    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        let mut out = spec(obj);
        out.extend(status(obj));
        out
    }

    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut out = spec(obj);
        let scopes = |o: &Value| -> BTreeSet<String> {
            o.pointer("/spec/scopes")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default()
        };
        if scopes(obj) != scopes(old) {
            let new = obj.pointer("/spec/scopes").cloned().unwrap_or(Value::Null);
            out.push(field::invalid(&Path::root("spec").child("scopes"), Bad::of(&new), "field is immutable"));
        }
        out
    }

    fn validate_status_update(&self, _rt: &ResourceType, obj: &Value, _old: &Value) -> Vec<StatusCause> {
        status(obj)
    }
}

/// Each `name: quantity` of a resource list: the name, a non-negative value, whole counts.
fn resource_list(out: &mut Vec<StatusCause>, list: Option<&Value>, at: &Path) {
    let Some(list) = list.and_then(Value::as_object) else { return };
    let mut names: Vec<&String> = list.keys().collect();
    names.sort();
    for name in names {
        let here = at.key(name);
        out.extend(resource_name_errors(name, &here));
        if !name.contains('/') && !is_standard_quota(name) {
            out.push(field::invalid(&here, name.as_str(), "must be a standard resource for quota"));
        }
        let text = list[name].as_str().map(str::to_string).unwrap_or_else(|| list[name].to_string());
        let Some(q) = Quantity::parse(&text) else { continue };
        if q.as_nanos() < 0 {
            out.push(field::invalid(&here, q.to_string(), "must be greater than or equal to 0"));
        }
        if is_integer(name) && q.milli_value() % 1000 != 0 {
            out.push(field::invalid(&here, q.to_string(), "must be an integer"));
        }
    }
}

/// `IsResourceQuotaScopeValidForResource`.
fn scope_fits(scope: &str, resource: &str) -> bool {
    const POD_COMPUTE: &[&str] = &["cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"];
    match scope {
        "Terminating" | "NotTerminating" | "NotBestEffort" | "PriorityClass" | "CrossNamespacePodAffinity" => {
            resource == "pods" || POD_COMPUTE.contains(&resource)
        }
        "BestEffort" => resource == "pods",
        "VolumeAttributesClass" => matches!(resource, "persistentvolumeclaims" | "requests.storage"),
        _ => true,
    }
}

const SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "VolumeAttributesClass",
    "CrossNamespacePodAffinity",
];

fn conflicting(scopes: &BTreeSet<&str>) -> usize {
    [("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating")]
        .iter()
        .filter(|(a, b)| scopes.contains(a) && scopes.contains(b))
        .count()
}

fn spec(obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let at = Path::root("spec");
    resource_list(&mut out, spec.get("hard"), &at.child("hard"));
    let hard: Vec<&String> = {
        let mut h: Vec<&String> =
            spec.get("hard").and_then(Value::as_object).map(|m| m.keys().collect()).unwrap_or_default();
        h.sort();
        h
    };
    let scope_list = spec.get("scopes").cloned().unwrap_or(Value::Null);
    let scopes: Vec<&str> =
        scope_list.as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let scopes_at = at.child("scopes");
    let mut set = BTreeSet::new();
    for scope in &scopes {
        if !SCOPES.contains(scope) {
            out.push(field::invalid(&scopes_at, Bad::of(&scope_list), "unsupported scope"));
        }
        for k in &hard {
            if is_standard_quota(k) && !scope_fits(scope, k) {
                out.push(field::invalid(&scopes_at, Bad::of(&scope_list), "unsupported scope applied to resource"));
            }
        }
        set.insert(*scope);
    }
    for _ in 0..conflicting(&set) {
        out.push(field::invalid(&scopes_at, Bad::of(&scope_list), "conflicting scopes"));
    }
    if let Some(selector) = spec.get("scopeSelector").filter(|s| s.is_object()) {
        scope_selector(&mut out, selector, &hard, &scope_list, &at.child("scopeSelector"));
    }
    out
}

fn scope_selector(out: &mut Vec<StatusCause>, selector: &Value, hard: &[&String], scope_list: &Value, at: &Path) {
    let at = at.child("matchExpressions");
    let mut set = BTreeSet::new();
    let exprs = selector.get("matchExpressions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for req in exprs {
        let scope = req.get("scopeName").and_then(Value::as_str).unwrap_or_default();
        let op = req.get("operator").and_then(Value::as_str).unwrap_or_default();
        let values = req.get("values").and_then(Value::as_array).map(Vec::len).unwrap_or(0);
        if !SCOPES.contains(&scope) {
            out.push(field::invalid(&at.child("scopeName"), scope, "unsupported scope"));
        }
        for k in hard {
            if is_standard_quota(k) && !scope_fits(scope, k) {
                out.push(field::invalid(&at, Bad::of(selector), "unsupported scope applied to resource"));
            }
        }
        if matches!(
            scope,
            "BestEffort" | "NotBestEffort" | "Terminating" | "NotTerminating" | "CrossNamespacePodAffinity"
        ) && op != "Exists"
        {
            out.push(field::invalid(
                &at.child("operator"),
                op,
                "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
            ));
        }
        match op {
            "In" | "NotIn" if values == 0 => out.push(field::required(
                &at.child("values"),
                "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            )),
            "Exists" | "DoesNotExist" if values != 0 => out.push(field::invalid(
                &at.child("values"),
                Bad::of(&req["values"]),
                "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => out.push(field::invalid(&at.child("operator"), op, "not a valid selector operator")),
        }
        set.insert(scope);
    }
    for _ in 0..conflicting(&set) {
        out.push(field::invalid(&at, Bad::of(scope_list), "conflicting scopes"));
    }
}

fn status(obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let status = obj.get("status").unwrap_or(&Value::Null);
    let at = Path::root("status");
    resource_list(&mut out, status.get("hard"), &at.child("hard"));
    resource_list(&mut out, status.get("used"), &at.child("used"));
    out
}
