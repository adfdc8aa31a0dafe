//! RayService validation (`ValidateRayServiceMetadata`, `ValidateRayServiceSpec`,
//! `ValidateClusterUpgradeOptions`). KubeRay has no admission webhook by default: a refusal is a
//! Warning event (`InvalidRayServiceMetadata` / `InvalidRayServiceSpec`) and Ready
//! False/`ValidationFailed` with the message, and the service is not reconciled further.

use super::is_incremental_upgrade_enabled;
use crate::crds::rayservice::{RayService, upgrade_type};
use crate::kuberay::KubeRayConfig;
use crate::kuberay::common::validation::{
    MAX_RAYSERVICE_NAME_LENGTH, validate_cluster_spec, validate_initializing_timeout,
};
use apimachinery::validation::dns1035_label_errors;
use kube::ResourceExt;

/// `ValidateRayServiceMetadata`.
pub fn validate_metadata(rs: &RayService) -> Result<(), String> {
    let name = rs.name_any();
    if name.len() > MAX_RAYSERVICE_NAME_LENGTH {
        return Err(format!(
            "The RayService metadata is invalid: RayService name should be no more than {MAX_RAYSERVICE_NAME_LENGTH} characters"
        ));
    }
    let errs = dns1035_label_errors(&name);
    if !errs.is_empty() {
        return Err(format!(
            "The RayService metadata is invalid: RayService name should be a valid DNS1035 label: [{}]",
            errs.join(" ")
        ));
    }
    validate_initializing_timeout(rs.annotations())
        .map_err(|e| format!("The RayService metadata is invalid: RayService annotations is invalid: {e}"))
}

/// `ValidateRayServiceSpec`: the cluster spec, no custom head service name, a known upgrade
/// type, a non-negative deletion delay, and (incremental mode) the upgrade options.
pub fn validate_spec(rs: &RayService, cfg: &KubeRayConfig) -> Result<(), String> {
    let spec = &rs.spec.ray_cluster_spec;
    let k8s_token_auth =
        spec.extra.get("authOptions").and_then(|a| a.get("enableK8sTokenAuth")).and_then(|v| v.as_bool()) == Some(true);
    if k8s_token_auth {
        return Err(
            "The RayService spec is invalid: K8s token auth mode is currently not supported for RayService".into()
        );
    }
    validate_cluster_spec(spec, cfg).map_err(|e| format!("The RayService spec is invalid: {e}"))?;
    let head_service_name = spec
        .head_group_spec
        .head_service
        .as_ref()
        .and_then(|s| s.pointer("/metadata/name"))
        .and_then(|n| n.as_str())
        .is_some_and(|n| !n.is_empty());
    if head_service_name {
        return Err(
            "The RayService spec is invalid: spec.rayClusterConfig.headGroupSpec.headService.metadata.name should not be set".into(),
        );
    }
    if let Some(t) = rs.spec.upgrade_strategy.as_ref().and_then(|u| u.type_.as_deref())
        && ![upgrade_type::NONE, upgrade_type::NEW_CLUSTER, upgrade_type::NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE]
            .contains(&t)
    {
        return Err(format!(
            "The RayService spec is invalid: Spec.UpgradeStrategy.Type value {t} is invalid, valid options are {}, {}, or {}",
            upgrade_type::NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE,
            upgrade_type::NEW_CLUSTER,
            upgrade_type::NONE
        ));
    }
    if let Some(d) = rs.spec.ray_cluster_deletion_delay_seconds.filter(|d| *d < 0) {
        return Err(format!(
            "The RayService spec is invalid: Spec.RayClusterDeletionDelaySeconds should be a non-negative integer, got {d}"
        ));
    }
    if is_incremental_upgrade_enabled(&rs.spec, cfg) {
        validate_cluster_upgrade_options(rs).map_err(|e| format!("The RayService spec is invalid: {e}"))?;
    }
    Ok(())
}

/// `ValidateClusterUpgradeOptions`: the autoscaler on; options present; maxSurgePercent and
/// stepSizePercent in [0, 100] with step ≤ surge; intervalSeconds > 0; a class name. An unset
/// maxSurgePercent is a nil dereference upstream (the CRD defaults it to 100); here it is 100.
pub fn validate_cluster_upgrade_options(rs: &RayService) -> Result<(), String> {
    if rs.spec.ray_cluster_spec.enable_in_tree_autoscaling != Some(true) {
        return Err("Ray Autoscaler is required for NewClusterWithIncrementalUpgrade".into());
    }
    let Some(o) = rs.spec.upgrade_strategy.as_ref().and_then(|u| u.cluster_upgrade_options.as_ref()) else {
        return Err("ClusterUpgradeOptions are required for NewClusterWithIncrementalUpgrade".into());
    };
    let surge = o.max_surge_percent.unwrap_or(100);
    if !(0..=100).contains(&surge) {
        return Err("maxSurgePercent must be between 0 and 100".into());
    }
    let Some(step) = o.step_size_percent.filter(|s| (0..=100).contains(s)) else {
        return Err("stepSizePercent must be between 0 and 100".into());
    };
    if step > surge {
        return Err("stepSizePercent must be less than or equal to maxSurgePercent".into());
    }
    if o.interval_seconds.is_none_or(|i| i <= 0) {
        return Err("intervalSeconds must be greater than 0".into());
    }
    if o.gateway_class_name.is_empty() {
        return Err("gatewayClassName is required for NewClusterWithIncrementalUpgrade".into());
    }
    Ok(())
}

/// Both checks, as `validateRayService` runs them: the event reason and the message of the
/// first failure.
pub(super) fn validate(rs: &RayService, cfg: &KubeRayConfig) -> Result<(), (&'static str, String)> {
    validate_metadata(rs).map_err(|e| ("InvalidRayServiceMetadata", e))?;
    validate_spec(rs, cfg).map_err(|e| ("InvalidRayServiceSpec", e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::{Value, json};

    fn service(options: Value, autoscaling: bool) -> RayService {
        serde_json::from_value(json!({
            "apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "svc"},
            "spec": {"upgradeStrategy": {"type": "NewClusterWithIncrementalUpgrade", "clusterUpgradeOptions": options},
                     "rayClusterConfig": {"enableInTreeAutoscaling": autoscaling,
                        "headGroupSpec": {"template": {"spec": {"containers": [{"name": "h"}]}}}}},
        }))
        .unwrap()
    }

    // Upstream's TestValidateClusterUpgradeOptions cases.
    #[rstest]
    #[case::valid(json!({"maxSurgePercent": 50, "stepSizePercent": 50, "intervalSeconds": 10, "gatewayClassName": "c"}), true, None)]
    #[case::no_autoscaler(json!({"maxSurgePercent": 50, "stepSizePercent": 50, "intervalSeconds": 10, "gatewayClassName": "c"}), false,
        Some("Ray Autoscaler is required for NewClusterWithIncrementalUpgrade"))]
    #[case::no_options(
        Value::Null,
        true,
        Some("ClusterUpgradeOptions are required for NewClusterWithIncrementalUpgrade")
    )]
    #[case::surge_200(json!({"maxSurgePercent": 200, "stepSizePercent": 50, "intervalSeconds": 10, "gatewayClassName": "c"}), true,
        Some("maxSurgePercent must be between 0 and 100"))]
    #[case::no_step(json!({"maxSurgePercent": 50, "intervalSeconds": 10, "gatewayClassName": "c"}), true,
        Some("stepSizePercent must be between 0 and 100"))]
    #[case::step_above_surge(json!({"maxSurgePercent": 50, "stepSizePercent": 75, "intervalSeconds": 10, "gatewayClassName": "c"}), true,
        Some("stepSizePercent must be less than or equal to maxSurgePercent"))]
    #[case::interval_0(json!({"maxSurgePercent": 50, "stepSizePercent": 50, "intervalSeconds": 0, "gatewayClassName": "c"}), true,
        Some("intervalSeconds must be greater than 0"))]
    #[case::no_class(json!({"maxSurgePercent": 50, "stepSizePercent": 50, "intervalSeconds": 10, "gatewayClassName": ""}), true,
        Some("gatewayClassName is required for NewClusterWithIncrementalUpgrade"))]
    fn upgrade_options(#[case] options: Value, #[case] autoscaling: bool, #[case] error: Option<&str>) {
        assert_eq!(validate_cluster_upgrade_options(&service(options, autoscaling)).err().as_deref(), error);
    }

    #[test]
    fn long_names_and_unknown_types_are_refused() {
        let mut rs = service(json!({"stepSizePercent": 10, "intervalSeconds": 1, "gatewayClassName": "c"}), true);
        rs.metadata.name = Some("a".repeat(48));
        assert_eq!(validate(&rs, &KubeRayConfig::default()).unwrap_err().0, "InvalidRayServiceMetadata");
        rs.metadata.name = Some("svc".into());
        rs.spec.upgrade_strategy.as_mut().unwrap().type_ = Some("Rolling".into());
        let (reason, message) = validate(&rs, &KubeRayConfig::default()).unwrap_err();
        assert_eq!(reason, "InvalidRayServiceSpec");
        assert!(message.contains("Spec.UpgradeStrategy.Type value Rolling is invalid"), "{message}");
    }
}
