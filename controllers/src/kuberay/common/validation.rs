//! The validation KubeRay's controllers share (`utils/validation.go`): names and the RayCluster
//! spec, which the RayCluster controller checks on every cluster and the RayService controller
//! on `spec.rayClusterConfig`. Messages are upstream's, word for word, since rows match them.

use crate::crds::RayClusterSpec;
use crate::kuberay::{KubeRayConfig, KubeRayGate};
use apimachinery::validation::dns1035_label_errors;
use std::collections::BTreeMap;

/// Longest RayCluster name (`MaxRayClusterNameLength`).
pub const MAX_RAYCLUSTER_NAME_LENGTH: usize = 53;
/// Longest RayService name: a cluster name plus `-xxxxx` must fit (`MaxRayServiceNameLength`).
pub const MAX_RAYSERVICE_NAME_LENGTH: usize = MAX_RAYCLUSTER_NAME_LENGTH - 6;

/// `ValidateRayClusterMetadata`: at most 53 characters and a DNS-1035 label.
pub fn validate_cluster_name(name: &str) -> Result<(), String> {
    if name.len() > MAX_RAYCLUSTER_NAME_LENGTH {
        return Err(format!("RayCluster name should be no more than {MAX_RAYCLUSTER_NAME_LENGTH} characters"));
    }
    let errs = dns1035_label_errors(name);
    if !errs.is_empty() {
        return Err(format!("RayCluster name should be a valid DNS1035 label: [{}]", errs.join(" ")));
    }
    Ok(())
}

/// `ValidateRayClusterSpec`, for the fields modelled here.
pub fn validate_cluster_spec(spec: &RayClusterSpec, cfg: &KubeRayConfig) -> Result<(), String> {
    if spec.head_group_spec.template.spec.as_ref().is_none_or(|s| s.containers.is_empty()) {
        return Err("headGroupSpec should have at least one container".into());
    }
    let autoscaling = spec.enable_in_tree_autoscaling == Some(true);
    for g in &spec.worker_group_specs {
        let name = &g.group_name;
        if g.template.spec.as_ref().is_none_or(|s| s.containers.is_empty()) {
            return Err("workerGroupSpec should have at least one container".into());
        }
        if !autoscaling && (g.min_replicas.is_none() || g.max_replicas.is_none()) {
            return Err(format!(
                "worker group {name} must set both minReplicas and maxReplicas when autoscaling is disabled"
            ));
        }
        if let Some(min) = g.min_replicas.filter(|m| *m < 0) {
            return Err(format!("worker group {name} has negative minReplicas {min}"));
        }
        if let Some(max) = g.max_replicas.filter(|m| *m < 0) {
            return Err(format!("worker group {name} has negative maxReplicas {max}"));
        }
        if let (Some(min), Some(max)) = (g.min_replicas, g.max_replicas)
            && min > max
        {
            return Err(format!("worker group {name} has minReplicas {min} greater than maxReplicas {max}"));
        }
    }
    if !cfg.gate(KubeRayGate::RayJobDeletionPolicy)
        && let Some(g) = spec.worker_group_specs.iter().find(|g| g.suspend == Some(true))
    {
        return Err(format!(
            "worker group {} can be suspended only when the RayJobDeletionPolicy feature gate is enabled",
            g.group_name
        ));
    }
    if autoscaling && let Some(g) = spec.worker_group_specs.iter().find(|g| g.suspend == Some(true)) {
        return Err(format!("worker group {} cannot be suspended with Autoscaler enabled", g.group_name));
    }
    Ok(())
}

/// `validateInitializingTimeout`: the `ray.io/initializing-timeout` annotation, when present,
/// is a positive Go duration or a positive number of seconds.
pub fn validate_initializing_timeout(annotations: &BTreeMap<String, String>) -> Result<(), String> {
    const KEY: &str = "ray.io/initializing-timeout";
    let Some(text) = annotations.get(KEY).filter(|t| !t.is_empty()) else { return Ok(()) };
    // Go's time.ParseDuration takes a sign; a negative duration is not positive.
    if let Ok(d) = apimachinery::parse_go_duration(text) {
        return if d.as_nanos() <= 0 {
            Err(format!("annotation {KEY} must be a positive duration, got: {text}"))
        } else {
            Ok(())
        };
    }
    if let Ok(seconds) = text.parse::<i64>() {
        return if seconds <= 0 {
            Err(format!("annotation {KEY} must be a positive integer (seconds), got: {text}"))
        } else {
            Ok(())
        };
    }
    Err(format!(
        "annotation {KEY} has invalid format: {text}. Expected Go duration format (e.g., '5m', '1h') or positive integer seconds"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn spec(groups: serde_json::Value, autoscaling: bool) -> RayClusterSpec {
        serde_json::from_value(json!({
            "enableInTreeAutoscaling": autoscaling,
            "headGroupSpec": {"template": {"spec": {"containers": [{"name": "h"}]}}},
            "workerGroupSpecs": groups,
        }))
        .unwrap()
    }

    #[rstest]
    #[case::valid(json!([{"groupName": "g", "minReplicas": 1, "maxReplicas": 2, "template": {"spec": {"containers": [{"name": "w"}]}}}]), false, None)]
    #[case::autoscaling_needs_no_bounds(json!([{"groupName": "g", "template": {"spec": {"containers": [{"name": "w"}]}}}]), true, None)]
    #[case::bounds_needed(json!([{"groupName": "g", "template": {"spec": {"containers": [{"name": "w"}]}}}]), false,
        Some("worker group g must set both minReplicas and maxReplicas when autoscaling is disabled"))]
    #[case::min_above_max(json!([{"groupName": "g", "minReplicas": 3, "maxReplicas": 2, "template": {"spec": {"containers": [{"name": "w"}]}}}]), false,
        Some("worker group g has minReplicas 3 greater than maxReplicas 2"))]
    #[case::negative_min(json!([{"groupName": "g", "minReplicas": -1, "maxReplicas": 2, "template": {"spec": {"containers": [{"name": "w"}]}}}]), false,
        Some("worker group g has negative minReplicas -1"))]
    #[case::no_container(json!([{"groupName": "g", "minReplicas": 1, "maxReplicas": 2, "template": {}}]), false,
        Some("workerGroupSpec should have at least one container"))]
    #[case::suspended_group(json!([{"groupName": "g", "minReplicas": 1, "maxReplicas": 2, "suspend": true, "template": {"spec": {"containers": [{"name": "w"}]}}}]), false,
        Some("worker group g can be suspended only when the RayJobDeletionPolicy feature gate is enabled"))]
    fn cluster_specs_validate_like_kuberay(
        #[case] groups: serde_json::Value,
        #[case] autoscaling: bool,
        #[case] error: Option<&str>,
    ) {
        // RayJobDeletionPolicy is on by default in v1.7.0; the suspended-group case needs it off.
        let mut cfg = KubeRayConfig::default();
        cfg.feature_gates.insert(KubeRayGate::RayJobDeletionPolicy, false);
        let got = validate_cluster_spec(&spec(groups, autoscaling), &cfg);
        assert_eq!(got.err().as_deref(), error);
    }

    #[test]
    fn a_suspended_worker_group_is_valid_with_the_default_gates_of_v1_7_0() {
        let groups = json!([{"groupName": "g", "minReplicas": 1, "maxReplicas": 2, "suspend": true,
            "template": {"spec": {"containers": [{"name": "w"}]}}}]);
        assert_eq!(validate_cluster_spec(&spec(groups, false), &KubeRayConfig::default()), Ok(()));
    }

    #[rstest]
    #[case("rayservice-sample", true)]
    #[case("Upper", false)]
    #[case("1abc", false)]
    #[case("abc-", false)]
    fn dns1035_labels(#[case] name: &str, #[case] valid: bool) {
        assert_eq!(dns1035_label_errors(name).is_empty(), valid);
    }

    #[rstest]
    #[case("5m", None)]
    #[case("30", None)]
    #[case("0s", Some("must be a positive duration"))]
    #[case("-3", Some("must be a positive integer (seconds)"))]
    #[case("soon", Some("has invalid format: soon"))]
    #[case("-5m", Some("must be a positive duration"))]
    fn initializing_timeouts(#[case] value: &str, #[case] error: Option<&str>) {
        let annotations = BTreeMap::from([("ray.io/initializing-timeout".to_string(), value.to_string())]);
        match (validate_initializing_timeout(&annotations), error) {
            (Ok(()), None) => {}
            (Err(e), Some(part)) => assert!(e.contains(part), "{e}"),
            (got, want) => panic!("{value}: got {got:?}, want {want:?}"),
        }
    }
}
