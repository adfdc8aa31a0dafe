//! Topology spread constraints: `validateTopologySpreadConstraints` of
//! `pkg/apis/core/validation/validation.go` at v1.37.2 (`validateMinDomains`,
//! `ValidateTopologyKey`, `ValidateWhenUnsatisfiable`, `ValidateSpreadConstraintNotRepeat`,
//! `validateNodeInclusionPolicy`). MatchLabelKeysInPodTopologySpread and its SelectorMerge
//! are on in 1.37, so the label keys follow `ValidateMatchLabelKeysAndMismatchLabelKeys`.

use super::pod_affinity::match_and_mismatch_label_keys;
use super::pod_spec::{list, s};
use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use crate::registry::meta::validate_label_selector;
use serde_json::Value;

const WHEN_UNSATISFIABLE: &[&str] = &["DoNotSchedule", "ScheduleAnyway"];
const INCLUSION_POLICIES: &[&str] = &["Honor", "Ignore"];

/// `validateTopologySpreadConstraints` of `spec.topologySpreadConstraints`.
pub(super) fn topology_spread(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) {
    let constraints = list(spec, "topologySpreadConstraints");
    for (i, c) in constraints.iter().enumerate() {
        let at = path.index(i);
        let max_skew = c.get("maxSkew").and_then(Value::as_i64).unwrap_or(0);
        if max_skew <= 0 {
            out.push(field::invalid(&at.child("maxSkew"), max_skew, "must be greater than zero"));
        }
        let key = s(c, "topologyKey");
        if key.is_empty() {
            out.push(field::required(&at.child("topologyKey"), "can not be empty"));
        }
        let when = s(c, "whenUnsatisfiable");
        if !WHEN_UNSATISFIABLE.contains(&when) {
            out.push(field::not_supported(&at.child("whenUnsatisfiable"), when, WHEN_UNSATISFIABLE));
        }
        // {topologyKey, whenUnsatisfiable} names one kind of constraint: once only.
        if constraints[i + 1..].iter().any(|o| s(o, "topologyKey") == key && s(o, "whenUnsatisfiable") == when) {
            out.push(field::duplicate(&at.child("{topologyKey, whenUnsatisfiable}"), format!("{{{key}, {when}}}")));
        }
        if let Some(min) = c.get("minDomains").filter(|v| !v.is_null()) {
            let n = min.as_i64().unwrap_or(0);
            if n <= 0 {
                out.push(field::invalid(&at.child("minDomains"), n, "must be greater than zero"));
            }
            if when != "DoNotSchedule" {
                out.push(field::invalid(
                    &at.child("minDomains"),
                    Bad::of(min),
                    &format!("can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {when}"),
                ));
            }
        }
        for policy in ["nodeAffinityPolicy", "nodeTaintsPolicy"] {
            if let Some(p) = c.get(policy).filter(|v| !v.is_null()) {
                let p = p.as_str().unwrap_or_default();
                if !INCLUSION_POLICIES.contains(&p) {
                    out.push(field::not_supported(&at.child(policy), p, INCLUSION_POLICIES));
                }
            }
        }
        let selector = c.get("labelSelector").filter(|v| !v.is_null());
        let match_keys: Vec<String> =
            list(c, "matchLabelKeys").iter().map(|k| k.as_str().unwrap_or_default().to_string()).collect();
        match_and_mismatch_label_keys(out, &match_keys, &[], selector, &at);
        if let Some(sel) = selector {
            out.extend(validate_label_selector(sel, &at.child("labelSelector")));
        }
    }
}
