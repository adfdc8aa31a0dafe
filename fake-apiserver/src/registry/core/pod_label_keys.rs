//! What a new pod's `matchLabelKeys` and `mismatchLabelKeys` become: `mutatePodAffinity` and
//! `mutateTopologySpreadConstraints` of `pkg/registry/core/pod/strategy.go` at v1.37.2 merge
//! the pod's own label values into the terms' selectors (MatchLabelKeysInPodAffinity is GA,
//! MatchLabelKeysInPodTopologySpread and its SelectorMerge are on).

use serde_json::{Map, Value, json};

/// `applyLabelKeysToLabelSelector`: `key <operator> (value)` for each key the pod has a label
/// for, appended to the selector's expressions.
fn apply(selector: &mut Map<String, Value>, keys: &[String], operator: &str, labels: &Map<String, Value>) {
    for key in keys {
        let Some(value) = labels.get(key) else { continue };
        let exprs = selector.entry("matchExpressions").or_insert_with(|| json!([]));
        if !exprs.is_array() {
            *exprs = json!([]);
        }
        if let Some(list) = exprs.as_array_mut() {
            list.push(json!({"key": key, "operator": operator, "values": [value]}));
        }
    }
}

fn keys(holder: &Map<String, Value>, name: &str) -> Vec<String> {
    holder
        .get(name)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|k| k.as_str().unwrap_or_default().to_string())
        .collect()
}

/// `applyMatchLabelKeysAndMismatchLabelKeys` of one pod affinity term (a term without a
/// selector matches nothing and is left alone).
fn apply_to_term(term: &mut Map<String, Value>, labels: &Map<String, Value>) {
    let (match_keys, mismatch_keys) = (keys(term, "matchLabelKeys"), keys(term, "mismatchLabelKeys"));
    if match_keys.is_empty() && mismatch_keys.is_empty() {
        return;
    }
    let Some(selector) = term.get_mut("labelSelector").and_then(Value::as_object_mut) else { return };
    apply(selector, &match_keys, "In", labels);
    apply(selector, &mismatch_keys, "NotIn", labels);
}

fn objects(v: Option<&mut Value>) -> impl Iterator<Item = &mut Map<String, Value>> {
    v.and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_object_mut)
}

/// Both mutations, on a pod about to be created.
pub(super) fn merge_label_keys(pod: &mut Value) {
    let labels = pod.pointer("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default();
    let Some(spec) = pod.get_mut("spec") else { return };
    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(affinity) = spec.pointer_mut(&format!("/affinity/{kind}")) else { continue };
        for weighted in objects(affinity.get_mut("preferredDuringSchedulingIgnoredDuringExecution")) {
            if let Some(term) = weighted.get_mut("podAffinityTerm").and_then(Value::as_object_mut) {
                apply_to_term(term, &labels);
            }
        }
        for term in objects(affinity.get_mut("requiredDuringSchedulingIgnoredDuringExecution")) {
            apply_to_term(term, &labels);
        }
    }
    for constraint in objects(spec.get_mut("topologySpreadConstraints")) {
        let match_keys = keys(constraint, "matchLabelKeys");
        if match_keys.is_empty() {
            continue;
        }
        if let Some(selector) = constraint.get_mut("labelSelector").and_then(Value::as_object_mut) {
            apply(selector, &match_keys, "In", &labels);
        }
    }
}
