//! Writes to a pod's status: `ValidatePodStatusUpdate` of
//! `pkg/apis/core/validation/validation.go` at v1.37.2 (conditions, the nominated node, the
//! observed generation, the immutable QoS class, the resource claim statuses, the pod IPs), and
//! what `podStatusStrategy.PrepareForUpdate` (`pkg/registry/core/pod/strategy.go`) carries over
//! from the old status.

use super::pod_affinity::label_name;
use super::pod_annotations::pod_annotation_updates;
use super::pod_spec::{dns_subdomain, list, s};
use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use serde_json::Value;
use std::collections::BTreeSet;

/// Conditions the system owns; their types are not checked.
const SYSTEM_CONDITIONS: &[&str] = &["PodScheduled", "Ready", "Initialized"];

fn status(pod: &Value) -> &Value {
    pod.get("status").unwrap_or(&Value::Null)
}

/// `ValidatePodStatusUpdate` of `new` over `old` (object metadata is validated by the caller).
pub(super) fn validate_status_update(new: &Value, old: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let path = Path::root("status");
    let (st, old_st) = (status(new), status(old));
    pod_annotation_updates(&mut out, new, old, &Path::root("metadata").child("annotations"));
    // `validatePodConditions`: non-negative generations, qualified custom types.
    for (i, c) in list(st, "conditions").iter().enumerate() {
        let at = path.child("conditions").index(i);
        if let Some(g) = c.get("observedGeneration").and_then(Value::as_i64).filter(|g| *g < 0) {
            out.push(field::invalid(&at.child("observedGeneration"), g, "must be a non-negative integer"));
        }
        let kind = s(c, "type");
        if !SYSTEM_CONDITIONS.contains(&kind) {
            label_name(&mut out, kind, &at.child("Type"));
        }
    }
    let nominated = s(st, "nominatedNodeName");
    let old_nominated = s(old_st, "nominatedNodeName");
    if nominated != old_nominated && !nominated.is_empty() {
        dns_subdomain(&mut out, &path.child("nominatedNodeName"), nominated);
    }
    // ClearingNominatedNodeNameAfterBinding (beta, on): a bound pod gets no new nomination.
    let node = new.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or_default();
    if !node.is_empty() && !nominated.is_empty() && nominated != old_nominated {
        out.push(field::forbidden(
            &path.child("nominatedNodeName"),
            "may not be set on pods that are already bound to a node",
        ));
    }
    if let Some(g) = st.get("observedGeneration").and_then(Value::as_i64).filter(|g| *g < 0) {
        out.push(field::invalid(&path.child("observedGeneration"), g, "must be a non-negative integer"));
    }
    let qos = st.get("qosClass").cloned().unwrap_or(Value::Null);
    let old_qos = old_st.get("qosClass").cloned().unwrap_or(Value::Null);
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    if text(&qos) != text(&old_qos) {
        out.push(field::invalid(&path.child("qosClass"), text(&qos), field::FIELD_IMMUTABLE));
    }
    resource_claim_statuses(&mut out, new, &path.child("resourceClaimStatuses"));
    let ip = s(st, "podIP");
    if !ip.is_empty() && ip.parse::<std::net::IpAddr>().is_err() {
        out.push(field::invalid(&path.child("podIPs").index(0), ip, "must be a valid IP address"));
    }
    out
}

/// `validatePodResourceClaimStatuses`: each status names a claim of the spec, once, and a
/// valid ResourceClaim.
fn resource_claim_statuses(out: &mut Vec<StatusCause>, pod: &Value, path: &Path) {
    let spec_claims: BTreeSet<&str> = pod
        .pointer("/spec/resourceClaims")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| s(c, "name"))
        .collect();
    let mut seen = BTreeSet::new();
    for (i, st) in list(status(pod), "resourceClaimStatuses").iter().enumerate() {
        let at = path.index(i);
        let name = s(st, "name");
        if !spec_claims.contains(name) {
            out.push(field::invalid(
                &at.child("name"),
                name,
                "must match the name of an entry in `spec.resourceClaims`",
            ));
        }
        if !seen.insert(name) {
            out.push(field::duplicate(&at.child("name"), name));
        }
        if let Some(claim) = st.get("resourceClaimName").filter(|v| !v.is_null()) {
            dns_subdomain(out, &at.child("resourceClaimName"), claim.as_str().unwrap_or_default());
        }
    }
}

/// `podStatusStrategy.PrepareForUpdate`: a status write that leaves out the QoS class, the
/// resource claim statuses or the observed generation keeps the old ones.
pub(super) fn carry_over_status(new: &mut Value, old: &Value) {
    let old_st = status(old);
    let Some(st) = new.get_mut("status").and_then(Value::as_object_mut) else { return };
    if st.get("qosClass").and_then(Value::as_str).unwrap_or_default().is_empty()
        && let Some(q) = old_st.get("qosClass").filter(|q| !q.is_null())
    {
        st.insert("qosClass".into(), q.clone());
    }
    if st.get("resourceClaimStatuses").is_none_or(Value::is_null)
        && let Some(r) = old_st.get("resourceClaimStatuses").filter(|r| !r.is_null())
    {
        st.insert("resourceClaimStatuses".into(), r.clone());
    }
    if st.get("observedGeneration").and_then(Value::as_i64).unwrap_or(0) == 0
        && let Some(g) = old_st.get("observedGeneration").filter(|g| !g.is_null())
    {
        st.insert("observedGeneration".into(), g.clone());
    }
}
