//! Checks of a RayCluster's spec that KubeRay reports as events or refuses.

use super::*;

/// `autoscalerOptions.version` of the spec, if set.
pub(super) fn autoscaler_version(rc: &RayCluster) -> Option<&str> {
    rc.spec.extra.get("autoscalerOptions").and_then(|o| o.get("version")).and_then(|v| v.as_str())
}

/// The warning KubeRay emits (and carries on) when autoscaler v1 is asked for explicitly and a
/// worker group restarts its pods.
pub(super) fn autoscaler_v1_restart_policy_warning(rc: &RayCluster) -> Option<String> {
    if rc.spec.enable_in_tree_autoscaling != Some(true) || autoscaler_version(rc) != Some("v1") {
        return None;
    }
    let groups: Vec<&str> = rc
        .spec
        .worker_group_specs
        .iter()
        .filter(|g| {
            g.template
                .spec
                .as_ref()
                .and_then(|s| s.restart_policy.as_deref())
                .is_some_and(|p| !p.is_empty() && p != "Never")
        })
        .map(|g| g.group_name.as_str())
        .collect();
    (!groups.is_empty()).then(|| {
        format!(
            "restartPolicy for worker groups [{}] should be Never or unset when using autoscaler V1",
            groups.join(", ")
        )
    })
}

/// `ValidateRayClusterUpgradeOptions`.
pub(super) fn validate_upgrade_strategy(rc: &RayCluster) -> Result<(), String> {
    let Some(t) = rc.spec.upgrade_strategy.as_ref().and_then(|u| u.type_.as_deref()) else { return Ok(()) };
    if t != "Recreate" && t != "None" {
        return Err(format!(
            "The RayCluster spec is invalid: Spec.UpgradeStrategy.Type value {t} is invalid, valid options are Recreate or None"
        ));
    }
    if let Some(origin) =
        rc.labels().get(RAY_ORIGINATED_FROM_CRD_LABEL).filter(|o| *o == "RayJob" || *o == "RayService")
    {
        return Err(format!("upgradeStrategy cannot be set when RayCluster is created by {origin}"));
    }
    Ok(())
}
