//! What the apps workloads share (`pkg/apis/apps/validation`): a required, non-empty label
//! selector that matches the pod template's labels, a template whose pods restart `Always`,
//! non-negative counts, and the status counters.

use crate::error::StatusCause;
use crate::registry::core::pod_spec::{labels_at, validate_template};
use crate::registry::field::{self, Bad, Path};
use crate::registry::meta::validate_label_selector;
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

/// The spec and its pod template are structs in the Go types, so a decoded workload always
/// has them (a `spec: null` decodes to the zero spec) and their defaults apply: made explicit
/// here before defaulting.
pub(crate) fn materialize_spec_and_template(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    let spec = o.entry("spec").or_insert(Value::Null);
    if spec.is_null() {
        *spec = Value::Object(Default::default());
    }
    let Some(spec) = spec.as_object_mut() else { return };
    let template = spec.entry("template").or_insert(Value::Null);
    if template.is_null() {
        *template = Value::Object(Default::default());
    }
    if let Some(t) = template.as_object_mut() {
        let pod = t.entry("spec").or_insert(Value::Null);
        if pod.is_null() {
            *pod = Value::Object(Default::default());
        }
    }
}

/// What differs between the apps workloads' selector and template rules.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TemplateRules {
    /// The kind in "empty selector is invalid for <kind>".
    pub empty_selector_kind: &'static str,
    /// The detail of a selector that does not convert (`LabelSelectorAsSelector` failing).
    pub unconvertible_detail: &'static str,
    /// The kind in "activeDeadlineSeconds in <kind> is not Supported".
    pub deadline_kind: &'static str,
    /// StatefulSets (`ValidatePodTemplateSpecForStatefulSet`): the template's labels are
    /// validated even when the template is skipped, and the restart policy is checked
    /// whatever the selector.
    pub statefulset: bool,
    /// `SkipValidatePodTemplateSpec`: an update of a StatefulSet whose old spec was invalid.
    pub skip_template: bool,
}

/// Deployments and ReplicaSets (`ValidatePodTemplateSpecForReplicaSet`).
pub(crate) const REPLICA_SET_RULES: TemplateRules = TemplateRules {
    empty_selector_kind: "deployment",
    unconvertible_detail: "invalid label selector",
    deadline_kind: "ReplicaSet",
    statefulset: false,
    skip_template: false,
};

/// The selector and template of an apps workload's spec (`ValidateDeploymentSpec`,
/// `ValidateReplicaSetSpec`, `ValidateStatefulSetSpec`): the selector required, valid and
/// non-empty; then, if it converts, the template matching it and valid; its pods restarting
/// `Always`, without an active deadline.
pub(crate) fn selector_and_template(out: &mut Vec<StatusCause>, spec: &Value, rules: TemplateRules) {
    let path = Path::root("spec");
    let selector = spec.get("selector").filter(|s| !s.is_null());
    let template = spec.get("template").unwrap_or(&Value::Null);
    let labels = template.get("metadata").and_then(|m| m.get("labels")).filter(|l| !l.is_null());
    let mut converts = true;
    match selector {
        None => out.push(field::required(&path.child("selector"), "")),
        Some(sel) => {
            let errors = validate_label_selector(sel, &path.child("selector"));
            converts = errors.is_empty();
            out.extend(errors);
            let empty = sel.get("matchLabels").and_then(Value::as_object).is_none_or(|m| m.is_empty())
                && sel.get("matchExpressions").and_then(Value::as_array).is_none_or(|m| m.is_empty());
            if empty {
                out.push(field::invalid(
                    &path.child("selector"),
                    Bad::Raw(sel.to_string()),
                    &format!("empty selector is invalid for {}", rules.empty_selector_kind),
                ));
            }
        }
    }
    let tpath = path.child("template");
    let restart_and_deadline = |out: &mut Vec<StatusCause>| {
        let restart =
            template.get("spec").and_then(|s| s.get("restartPolicy")).and_then(Value::as_str).unwrap_or_default();
        // An empty policy is defaulted to `Always` upstream, whatever the template holds.
        if restart != "Always" && !restart.is_empty() {
            out.push(field::not_supported(&tpath.child("spec").child("restartPolicy"), restart, &["Always"]));
        }
        if template.get("spec").and_then(|s| s.get("activeDeadlineSeconds")).is_some_and(|v| !v.is_null()) {
            out.push(field::forbidden(
                &tpath.child("spec").child("activeDeadlineSeconds"),
                &format!("activeDeadlineSeconds in {} is not Supported", rules.deadline_kind),
            ));
        }
    };
    if !converts {
        let sel = selector.map_or_else(|| "null".to_string(), Value::to_string);
        out.push(field::invalid(&path.child("selector"), Bad::Raw(sel), rules.unconvertible_detail));
    } else {
        // A nil selector selects nothing (and is not empty): the template never matches it.
        let matches = selector.is_some_and(|sel| {
            let empty = sel.get("matchLabels").and_then(Value::as_object).is_none_or(|m| m.is_empty())
                && sel.get("matchExpressions").and_then(Value::as_array).is_none_or(|m| m.is_empty());
            empty || selector_matches(sel, labels)
        });
        if !matches {
            out.push(field::invalid(
                &tpath.child("metadata").child("labels"),
                labels.map_or(Bad::Null, |l| Bad::Raw(go_labels_json(l))),
                "`selector` does not match template `labels`",
            ));
        }
        if !rules.skip_template {
            out.extend(validate_template(template, &tpath));
        }
        if rules.statefulset {
            // The set's own check of the template labels repeats the template's; the real
            // server reports a bad label once, so it only shows when the template is skipped.
            if rules.skip_template {
                labels_at(out, labels, &tpath.child("labels"));
            }
        } else {
            restart_and_deadline(out);
        }
    }
    if rules.statefulset {
        restart_and_deadline(out);
    }
}

/// `ValidateImmutableField` of `spec.selector` (semantically: an empty list is no list).
pub(crate) fn selector_immutable(out: &mut Vec<StatusCause>, new: &Value, old: &Value) {
    let path = Path::root("spec").child("selector");
    out.extend(field::immutable(&path, &new["spec"]["selector"], &old["spec"]["selector"]));
}

/// A `map[string]string` (labels) as `json.Marshal` prints it in a cause: keys sorted.
pub(crate) fn go_labels_json(labels: &Value) -> String {
    match labels.as_object() {
        Some(m) => {
            let sorted: std::collections::BTreeMap<&String, &Value> = m.iter().collect();
            serde_json::to_string(&sorted).unwrap_or_default()
        }
        None => labels.to_string(),
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
