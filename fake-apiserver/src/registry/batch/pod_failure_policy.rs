//! A Job's `spec.podFailurePolicy`: its defaults and its validation
//! (kube-apiserver v1.37.2 `pkg/apis/batch/validation/validation.go`, `validatePodFailurePolicy`
//! and the rule, exit-code and pod-condition checks under it).

use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use apimachinery::validation::label_key_errors;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// `maxPodFailurePolicyRules`.
const MAX_RULES: usize = 20;
/// `maxPodFailurePolicyOnExitCodesValues`.
const MAX_EXIT_CODES: usize = 255;
/// `maxPodFailurePolicyOnPodConditionsPatterns`.
const MAX_CONDITION_PATTERNS: usize = 20;
/// The actions, as `sets.List` sorts them.
const ACTIONS: &[&str] = &["Count", "FailIndex", "FailJob", "Ignore"];
const OPERATORS: &[&str] = &["In", "NotIn"];
const STATUSES: &[&str] = &["False", "True", "Unknown"];

/// Go's `%q` of a string list: `["a" "b"]`, as the Required details print the valid values.
fn go_quoted_list(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| apimachinery::go::quote(v)).collect();
    format!("[{}]", quoted.join(" "))
}

fn text(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or_default()
}

/// `SetDefaults_PodFailurePolicyOnPodConditionsPattern`: a pattern without a status matches
/// `True`.
pub(crate) fn default_pod_failure_policy(policy: &mut Value) {
    let Some(rules) = policy.get_mut("rules").and_then(Value::as_array_mut) else { return };
    for rule in rules {
        let Some(patterns) = rule.get_mut("onPodConditions").and_then(Value::as_array_mut) else { continue };
        for p in patterns.iter_mut().filter_map(Value::as_object_mut) {
            if p.get("status").and_then(Value::as_str).is_none_or(str::is_empty) {
                p.insert("status".into(), json!("True"));
            }
        }
    }
}

/// `validatePodFailurePolicy` of `spec.podFailurePolicy` at `path`.
pub(crate) fn validate_pod_failure_policy(spec: &Value, path: &Path) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let rules_path = path.child("rules");
    let rules: &[Value] = spec["podFailurePolicy"]["rules"].as_array().map_or(&[], Vec::as_slice);
    if rules.len() > MAX_RULES {
        out.push(field::too_many(&rules_path, rules.len(), MAX_RULES));
    }
    let pod = &spec["template"]["spec"];
    let container_names: BTreeSet<&str> = ["containers", "initContainers"]
        .iter()
        .flat_map(|k| pod[*k].as_array().into_iter().flatten())
        .map(|c| text(c.get("name")))
        .collect();
    let has_backoff_per_index = spec.get("backoffLimitPerIndex").is_some_and(|v| !v.is_null());
    for (i, rule) in rules.iter().enumerate() {
        rule_causes(&mut out, rule, &rules_path.index(i), has_backoff_per_index, &container_names);
    }
    out
}

/// `validatePodFailurePolicyRule`.
fn rule_causes(
    out: &mut Vec<StatusCause>,
    rule: &Value,
    path: &Path,
    has_backoff_per_index: bool,
    container_names: &BTreeSet<&str>,
) {
    let action_path = path.child("action");
    match text(rule.get("action")) {
        "" => out.push(field::required(&action_path, &format!("valid values: {}", go_quoted_list(ACTIONS)))),
        "FailIndex" if !has_backoff_per_index => {
            out.push(field::invalid(&action_path, "FailIndex", "requires the backoffLimitPerIndex to be set"))
        }
        a if !ACTIONS.contains(&a) => out.push(field::not_supported(&action_path, a, ACTIONS)),
        _ => {}
    }
    let exit_codes = rule.get("onExitCodes").filter(|v| !v.is_null());
    let patterns: &[Value] = rule.get("onPodConditions").and_then(Value::as_array).map_or(&[], Vec::as_slice);
    if let Some(req) = exit_codes {
        exit_codes_causes(out, req, &path.child("onExitCodes"), container_names);
    }
    if !patterns.is_empty() {
        pod_conditions_causes(out, patterns, &path.child("onPodConditions"));
    }
    if exit_codes.is_some() && !patterns.is_empty() {
        out.push(field::invalid_omit_value(path, "specifying both OnExitCodes and OnPodConditions is not supported"));
    }
    if exit_codes.is_none() && patterns.is_empty() {
        out.push(field::invalid_omit_value(path, "specifying one of OnExitCodes and OnPodConditions is required"));
    }
}

/// `validatePodFailurePolicyRuleOnPodConditions`.
fn pod_conditions_causes(out: &mut Vec<StatusCause>, patterns: &[Value], path: &Path) {
    if patterns.len() > MAX_CONDITION_PATTERNS {
        out.push(field::too_many(path, patterns.len(), MAX_CONDITION_PATTERNS));
    }
    for (j, pattern) in patterns.iter().enumerate() {
        let at = path.index(j);
        let type_ = text(pattern.get("type"));
        for msg in label_key_errors(type_) {
            out.push(field::invalid(&at.child("type"), type_, &msg));
        }
        let status_path = at.child("status");
        match text(pattern.get("status")) {
            "" => out.push(field::required(&status_path, &format!("valid values: {}", go_quoted_list(STATUSES)))),
            s if !STATUSES.contains(&s) => out.push(field::not_supported(&status_path, s, STATUSES)),
            _ => {}
        }
    }
}

/// `validatePodFailurePolicyRuleOnExitCodes`.
fn exit_codes_causes(out: &mut Vec<StatusCause>, req: &Value, path: &Path, container_names: &BTreeSet<&str>) {
    let operator = text(req.get("operator"));
    let operator_path = path.child("operator");
    match operator {
        "" => out.push(field::required(&operator_path, &format!("valid values: {}", go_quoted_list(OPERATORS)))),
        o if !OPERATORS.contains(&o) => out.push(field::not_supported(&operator_path, o, OPERATORS)),
        _ => {}
    }
    if let Some(name) = req.get("containerName").and_then(Value::as_str)
        && !container_names.contains(name)
    {
        out.push(field::invalid(
            &path.child("containerName"),
            name,
            "must be one of the container or initContainer names in the pod template",
        ));
    }
    let values_path = path.child("values");
    let raw_values = req.get("values").unwrap_or(&Value::Null);
    let values: Vec<i64> = raw_values.as_array().into_iter().flatten().filter_map(Value::as_i64).collect();
    if values.is_empty() {
        out.push(field::invalid(&values_path, Bad::of(raw_values), "at least one value is required"));
    } else if values.len() > MAX_EXIT_CODES {
        out.push(field::too_many(&values_path, values.len(), MAX_EXIT_CODES));
    }
    let mut seen = BTreeSet::new();
    let mut ordered = true;
    for (j, v) in values.iter().enumerate() {
        let at = values_path.index(j);
        if operator == "In" && *v == 0 {
            out.push(field::invalid(&at, *v, "must not be 0 for the In operator"));
        }
        if !seen.insert(*v) {
            out.push(field::duplicate(&at, *v));
        }
        if j > 0 && values[j - 1] > *v {
            ordered = false;
        }
    }
    if !ordered {
        out.push(field::invalid(&values_path, Bad::Raw(raw_values.to_string()), "must be ordered"));
    }
}

/// The internal `batch.PodFailurePolicy` as `json.Marshal` prints it in a `field is immutable`
/// cause: Go field names (the internal type has no JSON tags), absent pointers and lists as
/// `null`.
pub(crate) fn go_internal_json(policy: &Value) -> Value {
    if policy.is_null() {
        return Value::Null;
    }
    let or_null = |v: Option<&Value>| v.cloned().unwrap_or(Value::Null);
    let rules: Option<Vec<Value>> = policy.get("rules").and_then(Value::as_array).map(|rules| {
        rules
            .iter()
            .map(|r| {
                let exit = r.get("onExitCodes").filter(|v| !v.is_null()).map_or(Value::Null, |e| {
                    json!({"ContainerName": or_null(e.get("containerName")),
                           "Operator": text(e.get("operator")),
                           "Values": or_null(e.get("values"))})
                });
                let patterns = r.get("onPodConditions").and_then(Value::as_array).map_or(Value::Null, |ps| {
                    ps.iter().map(|p| json!({"Type": text(p.get("type")), "Status": text(p.get("status"))})).collect()
                });
                json!({"Action": text(r.get("action")), "OnExitCodes": exit, "OnPodConditions": patterns})
            })
            .collect()
    });
    json!({"Rules": rules})
}
