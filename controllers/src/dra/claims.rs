//! The claim library the 1.37 components share (`k8s.io/dynamic-resource-allocation/
//! resourceclaim`): which claim a pod's claim entry names, whether a claim was made for a pod,
//! whether it is reserved for it, and which consumer a scheduled pod's claim is bound to.

use super::objects::{PodGroup, ResourceClaim, SCHEDULING_GROUP, text};
use k8s_openapi::api::core::v1::{Pod, PodResourceClaim};
use serde_json::{Value, json};

/// The pod's `spec.schedulingGroup.podGroupName`.
pub fn pod_group_name(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.scheduling_group.as_ref()?.pod_group_name.as_deref()
}

/// The pod's `spec.resourceClaims`.
pub fn pod_claims(pod: &Pod) -> &[PodResourceClaim] {
    pod.spec.as_ref().and_then(|s| s.resource_claims.as_deref()).unwrap_or_default()
}

/// The claim a pod claim entry names (`Name`): `Ok(Some(name), must_check_owner)`, `Ok(None)`
/// when the controller decided no claim is needed, `Err` when a template's claim is not
/// created yet or neither field is set.
pub fn claim_name(pod: &Pod, claim: &PodResourceClaim) -> Result<(Option<String>, bool), String> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    if let Some(n) = &claim.resource_claim_name {
        return Ok((Some(n.clone()), false));
    }
    if claim.resource_claim_template_name.is_some() {
        let statuses = pod.status.as_ref().and_then(|s| s.resource_claim_statuses.as_deref()).unwrap_or_default();
        return match statuses.iter().find(|s| s.name == claim.name) {
            Some(s) => Ok((s.resource_claim_name.clone(), true)),
            None => Err(format!("pod \"{ns}/{name}\": ResourceClaim not created yet")),
        };
    }
    Err(format!("pod \"{ns}/{name}\", spec.resourceClaim {:?}: none of the supported fields are set", claim.name))
}

/// `IsForPod`: the claim is controlled by the pod, or (when `accept_podgroup`) by the pod's
/// PodGroup; `Err` says why not, in the library's words.
pub fn is_for_pod(pod: &Pod, claim: &ResourceClaim, accept_podgroup: bool) -> Result<(), String> {
    let pns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let pname = pod.metadata.name.as_deref().unwrap_or_default();
    let cns = claim.namespace();
    let cname = claim.name();
    if cns != pns {
        return Err(format!("ResourceClaim {cns}/{cname} is not in the same namespace as Pod {pns}/{pname}"));
    }
    let controller = claim.controller();
    let pod_uid = pod.metadata.uid.as_deref().unwrap_or_default();
    if controller.is_some_and(|(_, _, _, uid)| uid == pod_uid) {
        return Ok(());
    }
    if accept_podgroup && let Some(group) = pod_group_name(pod) {
        let by_group = controller.is_some_and(|(api_version, kind, name, _)| {
            name == group && kind == "PodGroup" && api_version.starts_with("scheduling.k8s.io/")
        });
        return if by_group {
            Ok(())
        } else {
            Err(format!(
                "ResourceClaim {cns}/{cname} was not created for Pod {pns}/{pname} (neither Pod nor PodGroup {group} is the owner)"
            ))
        };
    }
    Err(format!("ResourceClaim {cns}/{cname} was not created for Pod {pns}/{pname} (Pod is not owner)"))
}

/// `IsForPodGroup`: the claim is controlled by the PodGroup.
pub fn is_for_podgroup(group: &PodGroup, claim: &ResourceClaim) -> bool {
    claim.namespace() == group.namespace() && claim.controller().is_some_and(|(_, _, _, uid)| uid == group.uid())
}

/// Whether `entry` (of `status.reservedFor`) names a PodGroup.
pub fn is_podgroup_entry(entry: &Value) -> bool {
    text(entry, "apiGroup") == SCHEDULING_GROUP && text(entry, "resource") == "podgroups"
}

/// Whether `entry` names a pod.
pub fn is_pod_entry(entry: &Value) -> bool {
    text(entry, "apiGroup").is_empty() && text(entry, "resource") == "pods"
}

/// `IsReservedForPod`: the pod's uid is listed, or (when `accept_podgroup`) an entry for the
/// pod's PodGroup, matched by name only (pods do not know the group's uid).
pub fn is_reserved_for_pod(pod: &Pod, claim: &ResourceClaim, accept_podgroup: bool) -> bool {
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let group = pod_group_name(pod);
    claim.reserved_for().iter().any(|r| {
        text(r, "uid") == uid
            || (accept_podgroup && is_podgroup_entry(r) && group.is_some_and(|g| g == text(r, "name")))
    })
}

/// `BindTo`: the consumer a pod's claim is reserved for: its PodGroup when the pod claim
/// matches one of the group's claims exactly (name, claim name and template name), else the pod.
pub fn bind_to(pod: &Pod, group: Option<&PodGroup>, claim: &PodResourceClaim) -> Result<Value, String> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    if claim.resource_claim_name.is_none() && claim.resource_claim_template_name.is_none() {
        return Err(format!("Pod {ns}/{name} claim {}: none of the supported fields are set", claim.name));
    }
    if let Some(group) = group {
        match pod_group_name(pod) {
            None => return Err(format!("Pod {ns}/{name} does not belong to a PodGroup")),
            Some(g) if g != group.name() || ns != group.namespace() => {
                return Err(format!("Pod {ns}/{name} belongs to PodGroup {ns}/{g}, not PodGroup {}", group.key()));
            }
            Some(_) => {}
        }
        for gc in group.claims() {
            let claim_field = |k: &str| gc.get(k).and_then(Value::as_str).map(str::to_string);
            if claim_field("resourceClaimName").is_none() && claim_field("resourceClaimTemplateName").is_none() {
                return Err(format!(
                    "PodGroup {} claim {}: none of the supported fields are set",
                    group.key(),
                    text(&gc, "name")
                ));
            }
            if text(&gc, "name") == claim.name
                && claim_field("resourceClaimName") == claim.resource_claim_name
                && claim_field("resourceClaimTemplateName") == claim.resource_claim_template_name
            {
                return Ok(
                    json!({"apiGroup": SCHEDULING_GROUP, "resource": "podgroups", "name": group.name(), "uid": group.uid()}),
                );
            }
        }
    }
    Ok(json!({"resource": "pods", "name": name, "uid": pod.metadata.uid.as_deref().unwrap_or_default()}))
}

/// Whether the pod will not run again: a terminal phase, or deleted before it was scheduled
/// (`isPodDone`).
pub fn is_pod_done(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    let scheduled = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_some_and(|n| !n.is_empty());
    matches!(phase, Some("Succeeded" | "Failed")) || (pod.metadata.deletion_timestamp.is_some() && !scheduled)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(v: Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    fn claim(v: Value) -> ResourceClaim {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn reserved_for_pod_matches_uid_or_the_group_by_name_when_accepted() {
        // TestIsReservedForPod "reserved-for-podgroup" / "podgroup-disabled" /
        // "reserved-for-other-podgroup".
        let p = pod(json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
                           "spec": {"containers": [], "schedulingGroup": {"podGroupName": "g"}}}));
        let for_group = claim(json!({"metadata": {"name": "c", "namespace": "ns"}, "status": {"reservedFor": [
            {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "g", "uid": "gu"}]}}));
        assert!(is_reserved_for_pod(&p, &for_group, true));
        assert!(!is_reserved_for_pod(&p, &for_group, false));
        let other = claim(json!({"metadata": {"name": "c", "namespace": "ns"}, "status": {"reservedFor": [
            {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "h", "uid": "hu"}]}}));
        assert!(!is_reserved_for_pod(&p, &other, true));
        let for_pod = claim(json!({"metadata": {"name": "c", "namespace": "ns"}, "status": {"reservedFor": [
            {"resource": "pods", "name": "p", "uid": "u1"}]}}));
        assert!(is_reserved_for_pod(&p, &for_pod, false));
    }

    #[test]
    fn bind_to_needs_an_exact_match() {
        // TestBindTo "Claim resourceClaimTemplateName mismatch" and the matching case.
        let p = pod(json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
                           "spec": {"containers": [], "schedulingGroup": {"podGroupName": "g"}}}));
        let g: PodGroup = serde_json::from_value(json!({"metadata": {"name": "g", "namespace": "ns", "uid": "gu"},
            "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]}}))
        .unwrap();
        let same: PodResourceClaim =
            serde_json::from_value(json!({"name": "gpu", "resourceClaimTemplateName": "t"})).unwrap();
        assert_eq!(bind_to(&p, Some(&g), &same).unwrap()["resource"], "podgroups");
        let other: PodResourceClaim =
            serde_json::from_value(json!({"name": "gpu", "resourceClaimTemplateName": "u"})).unwrap();
        assert_eq!(bind_to(&p, Some(&g), &other).unwrap()["resource"], "pods");
    }
}
