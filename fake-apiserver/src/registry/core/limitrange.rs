//! LimitRange validation, as `ValidateLimitRange` in kube-apiserver v1.37.2
//! (`pkg/apis/core/validation/validation.go`): known or qualified limit types, each once;
//! resource names a container (or, for other types, any object) may name; no defaults for the
//! Pod type; the storage bound of a PVC limit; and bounds that agree with each other. Go walks
//! its maps in random order; the keys are taken in sorted order here.

use super::resource_names::{is_hugepages, is_native, resource_name_errors};
use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use crate::registry::{ResourceType, Strategy};
use apimachinery::quantity::Quantity;
use apimachinery::validation::label_key_errors;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// core/v1 LimitRange.
#[derive(Debug)]
pub(crate) struct LimitRangeStrategy;

impl Strategy for LimitRangeStrategy {
    /// `limitrangeStrategy.AllowCreateOnUpdate`: a PUT of a missing LimitRange creates it.
    fn allow_create_on_update(&self) -> bool {
        true
    }

    /// `SetDefaults_LimitRangeItem`: a container limit's missing default is its max, a missing
    /// default request its default, else its min.
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        let Some(limits) = obj.pointer_mut("/spec/limits").and_then(Value::as_array_mut) else { return };
        for limit in limits.iter_mut().filter_map(Value::as_object_mut) {
            if limit.get("type").and_then(Value::as_str) != Some("Container") {
                continue;
            }
            let fill = |limit: &mut Map<String, Value>, into: &str, from: &str| {
                let source = limit.get(from).and_then(Value::as_object).cloned().unwrap_or_default();
                let target = limit.entry(into).or_insert_with(|| Value::Object(Map::new()));
                if let Some(t) = target.as_object_mut() {
                    for (k, v) in source {
                        t.entry(k).or_insert(v);
                    }
                }
            };
            fill(limit, "default", "max");
            fill(limit, "defaultRequest", "default");
            fill(limit, "defaultRequest", "min");
            // An empty ResourceList is omitted when served.
            limit.retain(|k, v| {
                !matches!(k.as_str(), "default" | "defaultRequest") || v.as_object().is_none_or(|m| !m.is_empty())
            });
        }
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        let mut out = Vec::new();
        let limits = obj.pointer("/spec/limits").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let mut types = BTreeSet::new();
        for (i, limit) in limits.iter().enumerate() {
            let at = Path::root("spec").child("limits").index(i);
            let kind = limit.get("type").and_then(Value::as_str).unwrap_or_default();
            limit_type(&mut out, &at.child("type"), kind);
            if !types.insert(kind) {
                out.push(field::duplicate(&at.child("type"), kind));
            }
            one_limit(&mut out, &at, kind, limit);
        }
        out
    }
}

const STANDARD_LIMIT_TYPES: &[&str] = &["Pod", "Container", "PersistentVolumeClaim"];
const CONTAINER_RESOURCES: &[&str] = &["cpu", "memory", "ephemeral-storage"];

fn limit_type(out: &mut Vec<StatusCause>, at: &Path, kind: &str) {
    let errors = label_key_errors(kind);
    if !errors.is_empty() {
        out.extend(errors.iter().map(|msg| field::invalid(at, kind, msg)));
    } else if !kind.contains('/') && !STANDARD_LIMIT_TYPES.contains(&kind) {
        out.push(field::invalid(at, kind, "must be a standard limit type or fully qualified"));
    }
}

/// `validateLimitRangeResourceName`: containers and pods name container resources.
fn resource_name(out: &mut Vec<StatusCause>, kind: &str, name: &str, at: &Path) {
    out.extend(resource_name_errors(name, at));
    if matches!(kind, "Pod" | "Container")
        && !name.contains('/')
        && !CONTAINER_RESOURCES.contains(&name)
        && !is_hugepages(name)
    {
        out.push(field::invalid(at, name, "must be a standard resource for containers"));
    }
}

/// The quantities of one map of the limit, by resource name, their names checked.
fn quantities(
    out: &mut Vec<StatusCause>,
    limit: &Value,
    map: &str,
    kind: &str,
    at: &Path,
) -> BTreeMap<String, Quantity> {
    let entries = limit.get(map).and_then(Value::as_object).cloned().unwrap_or_else(Map::new);
    let mut found = BTreeMap::new();
    for (name, q) in entries {
        resource_name(out, kind, &name, &at.child(map).key(&name));
        let text = q.as_str().map(str::to_string).unwrap_or_else(|| q.to_string());
        if let Some(q) = Quantity::parse(&text) {
            found.insert(name, q);
        }
    }
    found
}

fn one_limit(out: &mut Vec<StatusCause>, at: &Path, kind: &str, limit: &Value) {
    let max = quantities(out, limit, "max", kind, at);
    let min = quantities(out, limit, "min", kind, at);
    let has = |map: &str| limit.get(map).and_then(Value::as_object).is_some_and(|m| !m.is_empty());
    let (defaults, default_requests) = if kind == "Pod" {
        if has("default") {
            out.push(field::forbidden(&at.child("default"), "may not be specified when `type` is 'Pod'"));
        }
        if has("defaultRequest") {
            out.push(field::forbidden(&at.child("defaultRequest"), "may not be specified when `type` is 'Pod'"));
        }
        (BTreeMap::new(), BTreeMap::new())
    } else {
        (quantities(out, limit, "default", kind, at), quantities(out, limit, "defaultRequest", kind, at))
    };
    if kind == "PersistentVolumeClaim" && !min.contains_key("storage") && !max.contains_key("storage") {
        // Upstream names the limit's own path with a `limits` child.
        out.push(field::required(
            &at.child("limits"),
            "either minimum or maximum storage value is required, but neither was provided",
        ));
    }
    let ratios = quantities(out, limit, "maxLimitRequestRatio", kind, at);
    let keys: BTreeSet<&String> = max
        .keys()
        .chain(min.keys())
        .chain(defaults.keys())
        .chain(default_requests.keys())
        .chain(ratios.keys())
        .collect();
    for k in keys {
        bounds(out, at, k, [min.get(k), max.get(k), defaults.get(k), default_requests.get(k), ratios.get(k)]);
    }
}

/// The checks of one resource's min, max, default, default request and ratio.
fn bounds(out: &mut Vec<StatusCause>, at: &Path, k: &str, [min, max, default, request, ratio]: [Option<&Quantity>; 5]) {
    let mut bad = |map: &str, value: &Quantity, detail: String| {
        out.push(field::invalid(&at.child(map).key(k), value.to_string(), &detail));
    };
    if let (Some(min), Some(max)) = (min, max)
        && min > max
    {
        bad("min", min, format!("min value {min} is greater than max value {max}"));
    }
    if let (Some(request), Some(min)) = (request, min)
        && min > request
    {
        bad("defaultRequest", request, format!("min value {min} is greater than default request value {request}"));
    }
    if let (Some(request), Some(max)) = (request, max)
        && request > max
    {
        bad("defaultRequest", request, format!("default request value {request} is greater than max value {max}"));
    }
    if let (Some(request), Some(default)) = (request, default)
        && request > default
    {
        bad(
            "defaultRequest",
            request,
            format!("default request value {request} is greater than default limit value {default}"),
        );
    }
    if let (Some(default), Some(min)) = (default, min)
        && min > default
    {
        bad("default", min, format!("min value {min} is greater than default value {default}"));
    }
    if let (Some(default), Some(max)) = (default, max)
        && default > max
    {
        bad("default", max, format!("default value {default} is greater than max value {max}"));
    }
    if let Some(ratio) = ratio {
        if Quantity::parse("1").is_some_and(|one| *ratio < one) {
            bad("maxLimitRequestRatio", ratio, format!("ratio {ratio} is less than 1"));
        }
        if let (Some(min), Some(max)) = (min, max) {
            // Compared in milli-units, as upstream does for values that fit.
            let limit = max.milli_value() as f64 / min.milli_value() as f64;
            if ratio.milli_value() as f64 / 1000.0 > limit {
                bad("maxLimitRequestRatio", ratio, format!("ratio {ratio} is greater than max/min = {limit:.6}"));
            }
        }
    }
    // Hugepages and extended resources may not be overcommitted.
    if (!is_native(k) || is_hugepages(k))
        && let (Some(default), Some(request)) = (default, request)
        && default != request
    {
        bad(
            "defaultRequest",
            request,
            format!("default value {default} must equal to defaultRequest value {request} in {k}"),
        );
    }
}
