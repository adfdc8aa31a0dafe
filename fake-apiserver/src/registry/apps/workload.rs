//! What the apps workloads share (`pkg/apis/apps/validation`): a required, non-empty label
//! selector that matches the pod template's labels, a template whose pods restart `Always`,
//! non-negative counts, and the status counters.

use crate::error::StatusCause;
use crate::registry::core::pod_spec::validate_template;
use crate::registry::field::{self, Bad, Path};
use crate::registry::meta::label_selector_causes;
use apimachinery::selector::LabelSelector;
use serde_json::Value;

/// `ValidateNonnegativeField`.
pub(crate) fn nonnegative(out: &mut Vec<StatusCause>, v: &Value, key: &str, path: &Path) {
    if let Some(n) = v.get(key).and_then(Value::as_i64).filter(|n| *n < 0) {
        out.push(field::invalid(&path.child(key), n, "must be greater than or equal to 0"));
    }
}

/// Whether the `metav1.LabelSelector` matches the labels (an invalid selector, reported
/// elsewhere, matches).
pub(crate) fn selector_matches(selector: &Value, labels: Option<&Value>) -> bool {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let match_labels: std::collections::BTreeMap<String, String> = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), text(v))).collect())
        .unwrap_or_default();
    let expressions: Vec<(String, String, Vec<String>)> = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            let values =
                e.get("values").and_then(Value::as_array).map(|a| a.iter().map(text).collect()).unwrap_or_default();
            (text(&e["key"]), text(&e["operator"]), values)
        })
        .collect();
    let Ok(parsed) = LabelSelector::from_parts(&match_labels, &expressions) else { return true };
    let map: std::collections::BTreeMap<String, String> = labels
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect())
        .unwrap_or_default();
    parsed.matches(&map)
}

/// The selector and template of a workload's spec (`kind` names it in the empty-selector
/// message): selector required, valid, non-empty, matching the template; the template valid,
/// its pods restarting `Always`, without an active deadline.
pub(crate) fn selector_and_template(out: &mut Vec<StatusCause>, spec: &Value, kind: &str, always: bool) {
    let path = Path::root("spec");
    let selector = spec.get("selector").filter(|s| !s.is_null());
    let template = spec.get("template").unwrap_or(&Value::Null);
    let labels = template.get("metadata").and_then(|m| m.get("labels"));
    let mismatch = |out: &mut Vec<StatusCause>| {
        out.push(field::invalid(
            &path.child("template").child("metadata").child("labels"),
            Bad::Raw(labels.map(Value::to_string).unwrap_or_default()),
            "`selector` does not match template `labels`",
        ))
    };
    match selector {
        None => {
            out.push(field::required(&path.child("selector"), ""));
            mismatch(out);
        }
        Some(sel) => {
            out.extend(label_selector_causes(sel, &path.child("selector")));
            let empty = sel.get("matchLabels").and_then(Value::as_object).is_none_or(|m| m.is_empty())
                && sel.get("matchExpressions").and_then(Value::as_array).is_none_or(|m| m.is_empty());
            if empty {
                out.push(field::invalid(
                    &path.child("selector"),
                    Bad::Raw(sel.to_string()),
                    &format!("empty selector is invalid for {kind}"),
                ));
            } else if !selector_matches(sel, labels) {
                mismatch(out);
            }
        }
    }
    let tpath = path.child("template");
    out.extend(validate_template(template, &tpath));
    if always {
        let restart =
            template.get("spec").and_then(|s| s.get("restartPolicy")).and_then(Value::as_str).unwrap_or_default();
        if restart != "Always" && !restart.is_empty() {
            out.push(field::not_supported(&tpath.child("spec").child("restartPolicy"), restart, &["Always"]));
        }
        if template.get("spec").and_then(|s| s.get("activeDeadlineSeconds")).is_some_and(|v| !v.is_null()) {
            out.push(field::forbidden(
                &tpath.child("spec").child("activeDeadlineSeconds"),
                &format!("activeDeadlineSeconds in {kind} is not Supported"),
            ));
        }
    }
}

/// `ValidateImmutableField` of `spec.selector`.
pub(crate) fn selector_immutable(out: &mut Vec<StatusCause>, new: &Value, old: &Value) {
    let (n, o) = (&new["spec"]["selector"], &old["spec"]["selector"]);
    if n != o {
        out.push(field::invalid(
            &Path::root("spec").child("selector"),
            Bad::Raw(n.to_string()),
            field::FIELD_IMMUTABLE,
        ));
    }
}

/// The status counters: non-negative, ready and available within replicas.
pub(crate) fn status_counters(out: &mut Vec<StatusCause>, obj: &Value, keys: &[&str]) {
    let status = obj.get("status").unwrap_or(&Value::Null);
    let path = Path::root("status");
    for k in keys {
        nonnegative(out, status, k, &path);
    }
    let n = |k: &str| status.get(k).and_then(Value::as_i64).unwrap_or(0);
    for k in ["fullyLabeledReplicas", "currentReplicas", "updatedReplicas"] {
        if keys.contains(&k) && n(k) > n("replicas") {
            out.push(field::invalid(&path.child(k), n(k), "cannot be greater than status.replicas"));
        }
    }
    if n("readyReplicas") > n("replicas") && keys.contains(&"readyReplicas") {
        out.push(field::invalid(
            &path.child("readyReplicas"),
            n("readyReplicas"),
            "cannot be greater than status.replicas",
        ));
    }
    if n("availableReplicas") > n("replicas") && keys.contains(&"availableReplicas") {
        out.push(field::invalid(
            &path.child("availableReplicas"),
            n("availableReplicas"),
            "cannot be greater than status.replicas",
        ));
    }
    if n("availableReplicas") > n("readyReplicas")
        && keys.contains(&"availableReplicas")
        && keys.contains(&"readyReplicas")
    {
        out.push(field::invalid(
            &path.child("availableReplicas"),
            n("availableReplicas"),
            "cannot be greater than readyReplicas",
        ));
    }
}
