//! `intstr.IntOrString` fields of the rolling updates (`maxUnavailable`, `maxSurge`): kube-apiserver
//! v1.37.2 `pkg/apis/apps/validation/validation.go` `ValidatePositiveIntOrPercent`,
//! `getIntOrPercentValue` and `IsNotMoreThan100Percent`.

use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use apimachinery::validation::regex_error;
use serde_json::Value;

/// `IsValidPercent`: digits and a trailing `%`.
fn percent_errors(s: &str) -> Vec<String> {
    let valid = s.strip_suffix('%').is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
    if valid {
        Vec::new()
    } else {
        vec![regex_error(
            "a valid percent string must be a numeric string followed by an ending '%'",
            "[0-9]+%",
            &["1%", "93%"],
        )]
    }
}

/// `getPercentValue`: the number of a valid percent string.
fn percent_value(v: &Value) -> Option<i64> {
    let s = v.as_str()?;
    if !percent_errors(s).is_empty() {
        return None;
    }
    // Upstream's Atoi of a too long number fails and yields 0.
    Some(s[..s.len() - 1].parse().unwrap_or(0))
}

/// `getIntOrPercentValue`: a percent's number, else `IntValue()` (a string that is not a
/// number counts as 0).
pub(crate) fn int_or_percent_value(v: &Value) -> i64 {
    if let Some(p) = percent_value(v) {
        return p;
    }
    match v {
        Value::String(s) => s.parse().unwrap_or(0),
        other => other.as_i64().unwrap_or(0),
    }
}

/// `ValidatePositiveIntOrPercent`: a valid percent string or a non-negative integer.
pub(crate) fn validate_positive_int_or_percent(out: &mut Vec<StatusCause>, v: &Value, path: &Path) {
    match v {
        Value::String(s) => {
            for msg in percent_errors(s) {
                out.push(field::invalid(path, s.as_str(), &msg));
            }
        }
        Value::Number(_) => {
            if let Some(n) = v.as_i64().filter(|n| *n < 0) {
                out.push(field::invalid(path, n, "must be greater than or equal to 0"));
            }
        }
        // A zero IntOrString (absent) is the integer 0.
        _ => {}
    }
}

/// `IsNotMoreThan100Percent`.
pub(crate) fn not_more_than_100_percent(out: &mut Vec<StatusCause>, v: &Value, path: &Path) {
    if percent_value(v).is_some_and(|p| p > 100) {
        out.push(field::invalid(path, Bad::of(v), "must not be greater than 100%"));
    }
}
