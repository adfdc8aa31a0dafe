//! The request policy of a consumable capacity (`validateRequestPolicy`,
//! `validateRequestPolicyValidValues`, `validateRequestPolicyRange`,
//! `validateRequestPolicyRangeStep` of pkg/apis/resource/validation/validation.go at
//! k8s.io/kubernetes v1.37.2, with `DRAFractionalCapacityRange` on as in 1.37): either
//! discrete valid values or a range, each with a default, all within the capacity's value.

use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use apimachinery::Quantity;
use serde_json::Value;
use std::collections::BTreeSet;

/// `CapacityRequestPolicyDiscreteMaxOptions`.
const OPTIONS_MAX: usize = 10;
const NANO: i128 = 1_000_000_000;

fn quantity(v: Option<&Value>) -> Option<Quantity> {
    v.and_then(Value::as_str).and_then(Quantity::parse)
}

/// `validateRequestPolicy` of the policy at `path` of a capacity of `capacity`.
pub(super) fn request_policy(capacity: Quantity, policy: &Value, path: &Path) -> Vec<StatusCause> {
    let values: Vec<Quantity> = super::list(policy, "validValues").iter().filter_map(|v| quantity(Some(v))).collect();
    let range = policy.get("validRange").filter(|r| !r.is_null());
    let default = quantity(policy.get("default"));
    if !values.is_empty() && range.is_some() {
        return vec![field::forbidden(
            path,
            "exactly one policy can be specified, cannot specify \"validValues\" and \"validRange\" at the same time",
        )];
    }
    match (values.is_empty(), range, default) {
        (false, _, None) => vec![field::required(&path.child("default"), "required when validValues is defined")],
        (false, _, Some(d)) => valid_values(d, capacity, &values, &path.child("validValues")),
        (true, Some(_), None) => vec![field::required(&path.child("default"), "required when validRange is defined")],
        (true, Some(r), Some(d)) => valid_range(d, capacity, r, &path.child("validRange")),
        (true, None, _) => Vec::new(),
    }
}

/// `validateRequestPolicyValidValues`: ascending, within the capacity, unique, the default
/// among them.
fn valid_values(default: Quantity, capacity: Quantity, values: &[Quantity], path: &Path) -> Vec<StatusCause> {
    let mut out = Vec::new();
    for (i, pair) in values.windows(2).enumerate() {
        if pair[0] > pair[1] {
            out.push(field::invalid(
                &path.index(i + 1),
                pair[1].to_string(),
                "values must be sorted in ascending order",
            ));
        }
    }
    if values.len() > OPTIONS_MAX {
        out.push(field::too_many(path, values.len(), OPTIONS_MAX));
    } else {
        for (i, v) in values.iter().enumerate() {
            if *v > capacity {
                out.push(field::invalid(
                    &path.index(i),
                    v.to_string(),
                    &format!("option is larger than capacity value: {capacity}"),
                ));
            }
        }
        // The set's key is the exact decimal value.
        let mut seen = BTreeSet::new();
        for (i, v) in values.iter().enumerate() {
            if !seen.insert(v.as_nanos()) {
                out.push(field::duplicate(&path.index(i), decimal(v)));
            }
        }
    }
    if values.len() > OPTIONS_MAX || !values.contains(&default) {
        out.push(field::invalid(
            path,
            default.to_string(),
            "default value is not valid according to the requestPolicy",
        ));
    }
    out
}

/// `Quantity.AsDec().String()`: the plain decimal value.
fn decimal(q: &Quantity) -> String {
    let n = q.as_nanos();
    let (int, frac) = (n / NANO, (n % NANO).abs());
    if frac == 0 {
        return int.to_string();
    }
    let sign = if n < 0 && int == 0 { "-" } else { "" };
    let frac = format!("{frac:09}");
    format!("{sign}{int}.{}", frac.trim_end_matches('0'))
}

fn fractional(q: &Quantity) -> bool {
    q.as_nanos() % NANO != 0
}

/// Go's `Value()` (rounded up to a whole number) or `MilliValue()`.
fn whole(q: &Quantity, milli: bool) -> i128 {
    let unit = if milli { NANO / 1000 } else { NANO };
    let n = q.as_nanos();
    n.div_euclid(unit) + i128::from(n.rem_euclid(unit) != 0)
}

/// `validateRequestPolicyRange`.
fn valid_range(default: Quantity, capacity: Quantity, range: &Value, path: &Path) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let Some(min) = quantity(range.get("min")) else {
        return vec![field::required(&path.child("min"), "required when validRange is defined")];
    };
    let max = quantity(range.get("max"));
    let step = quantity(range.get("step"));
    if min > capacity {
        out.push(field::invalid(
            &path.child("min"),
            min.to_string(),
            &format!("min is larger than capacity value: {capacity}"),
        ));
    }
    if default < min {
        out.push(field::invalid(
            &path.child("default"),
            default.to_string(),
            &format!("default is less than min: {min}"),
        ));
    }
    if let Some(max) = max {
        if min > max {
            out.push(field::invalid(&path.child("max"), min.to_string(), &format!("min is larger than max: {max}")));
        }
        if max > capacity {
            out.push(field::invalid(
                &path.child("max"),
                max.to_string(),
                &format!("max is larger than capacity value: {capacity}"),
            ));
        }
        if default > max {
            out.push(field::invalid(
                &path.child("default"),
                default.to_string(),
                &format!("default is more than max: {max}"),
            ));
        }
    }
    let named = [("default", Some(default)), ("min", Some(min)), ("max", max), ("step", step)];
    let use_milli = [Some(min), max, step].iter().flatten().any(fractional) || fractional(&default);
    if use_milli {
        let mut unsafe_value = false;
        for (name, q) in named {
            if let Some(q) = q.filter(|q| q.as_nanos() % (NANO / 1000) != 0) {
                out.push(field::invalid(
                    &path.child(name),
                    q.to_string(),
                    "value cannot be represented as a milli value",
                ));
                unsafe_value = true;
            }
        }
        if unsafe_value {
            return out;
        }
    }
    let Some(step) = step else { return out };
    if step.as_nanos() <= 0 {
        out.push(field::invalid(&path.child("step"), step.to_string(), "must be greater than zero"));
        return out;
    }
    let added = min.plus(step);
    if added > capacity {
        out.push(field::invalid(
            &path.child("step"),
            step.to_string(),
            &format!("one step {added} is larger than capacity value: {capacity}"),
        ));
    }
    if !use_milli {
        // Go's Value() only holds in [0, MaxInt64].
        let mut unsafe_value = false;
        for (name, q) in named {
            let Some(q) = q else { continue };
            if q.as_nanos() < 0 {
                out.push(field::invalid(&path.child(name), q.to_string(), "must be greater than or equal to 0"));
                unsafe_value = true;
            } else if q.as_nanos() > i128::from(i64::MAX) * NANO {
                out.push(field::invalid(
                    &path.child(name),
                    q.to_string(),
                    "must not be larger than 9223372036854775807",
                ));
                unsafe_value = true;
            }
        }
        if unsafe_value {
            return out;
        }
    }
    for value in std::iter::once(default).chain(max) {
        let (v, m, s) = (whole(&value, use_milli), whole(&min, use_milli), whole(&step, use_milli));
        if s != 0 && (v - m) % s != 0 {
            out.push(field::invalid(
                &path.child("step"),
                value.to_string(),
                &format!("value is not a multiple of a given step ({step}) from ({min})"),
            ));
        }
    }
    out
}
