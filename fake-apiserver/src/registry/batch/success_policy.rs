//! A Job's `spec.successPolicy` (kube-apiserver v1.37.2
//! `pkg/apis/batch/validation/validation.go`, `validateSuccessPolicy` and
//! `validateSuccessPolicyRule`).

use super::indexes::validate_indexes_format;
use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use serde_json::{Value, json};

/// `maxSuccessPolicyRule`.
const MAX_RULES: usize = 20;
/// `maxJobSuccessPolicySucceededIndexesLimit`.
const MAX_SUCCEEDED_INDEXES: usize = 64 * 1024;

/// `validateSuccessPolicy` of an Indexed Job's `spec.successPolicy` at `path`.
pub(crate) fn validate_success_policy(spec: &Value, path: &Path) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let rules_path = path.child("rules");
    let rules: &[Value] = spec["successPolicy"]["rules"].as_array().map_or(&[], Vec::as_slice);
    if rules.is_empty() {
        out.push(field::required(
            &rules_path,
            "at least one rules must be specified when the successPolicy is specified",
        ));
    }
    if rules.len() > MAX_RULES {
        out.push(field::too_many(&rules_path, rules.len(), MAX_RULES));
    }
    // Upstream dereferences completions, which an Indexed Job must have (reported elsewhere).
    let completions = spec.get("completions").and_then(Value::as_i64).unwrap_or(0);
    for (i, rule) in rules.iter().enumerate() {
        rule_causes(&mut out, rule, &rules_path.index(i), completions);
    }
    out
}

/// `validateSuccessPolicyRule`.
fn rule_causes(out: &mut Vec<StatusCause>, rule: &Value, path: &Path, completions: i64) {
    let indexes = rule.get("succeededIndexes").and_then(Value::as_str);
    let count = rule.get("succeededCount").and_then(Value::as_i64);
    if indexes.is_none() && count.is_none() {
        out.push(field::required(path, "at least one of succeededCount or succeededIndexes must be specified"));
    }
    let mut total = 0;
    if let Some(indexes) = indexes {
        let at = path.child("succeededIndexes");
        if indexes.len() > MAX_SUCCEEDED_INDEXES {
            out.push(field::too_long(&at, MAX_SUCCEEDED_INDEXES));
        }
        match validate_indexes_format(indexes, completions) {
            Ok(n) => total = n,
            Err(e) => out.push(field::invalid(&at, indexes, &format!("error parsing succeededIndexes: {e}"))),
        }
    }
    if let Some(count) = count {
        let at = path.child("succeededCount");
        if count < 0 {
            out.push(field::invalid(&at, count, "must be greater than or equal to 0"));
        }
        if count > completions {
            out.push(field::invalid(
                &at,
                count,
                &format!("must be less than or equal to {completions} (the number of specified completions)"),
            ));
        }
        if indexes.is_some() && count > total {
            out.push(field::invalid(
                &at,
                count,
                &format!(
                    "must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"
                ),
            ));
        }
    }
}

/// The internal `batch.SuccessPolicy` as `json.Marshal` prints it (Go field names, absent
/// pointers as `null`).
pub(crate) fn go_internal_json(policy: &Value) -> Value {
    if policy.is_null() {
        return Value::Null;
    }
    let rules: Option<Vec<Value>> = policy.get("rules").and_then(Value::as_array).map(|rules| {
        rules
            .iter()
            .map(|r| {
                json!({"SucceededIndexes": r.get("succeededIndexes").cloned().unwrap_or(Value::Null),
                       "SucceededCount": r.get("succeededCount").cloned().unwrap_or(Value::Null)})
            })
            .collect()
    });
    json!({"Rules": rules})
}
