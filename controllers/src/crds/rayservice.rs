//! `ray.io/v1` RayService, as KubeRay v1.7.0 defines it (`ray-operator/apis/ray/v1/rayservice_types.go`).
//!
//! The fields the reference reconciler reads are typed; the rest of the spec is kept in `extra`
//! so a read-modify-write keeps the whole object. `rayClusterConfig` is the RayCluster spec type,
//! so the child cluster and the spec hash are built from exactly what the user wrote.

use super::raycluster::{RayClusterSpec, RayClusterStatus};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The RayService CRD manifest (see the file's header for what it keeps of the upstream one).
pub const RAYSERVICE_CRD_YAML: &str = include_str!("ray.io_rayservices.yaml");

/// The RayService CRD, parsed from [`RAYSERVICE_CRD_YAML`].
pub fn rayservice_crd() -> &'static CustomResourceDefinition {
    // Parsed once per process (every row of a run installs it); a unit test parses the
    // constant manifest, so parsing cannot fail at run time.
    static PARSED: std::sync::LazyLock<CustomResourceDefinition> =
        std::sync::LazyLock::new(|| serde_saphyr::from_str(RAYSERVICE_CRD_YAML).unwrap_or_default());
    &PARSED
}

/// `spec.upgradeStrategy.type` values (`RayServiceUpgradeType`). The CRD has no enum: the
/// controller refuses anything else through validation.
pub mod upgrade_type {
    /// Blue/green: a full new cluster, then the services switch.
    pub const NEW_CLUSTER: &str = "NewCluster";
    /// Gradual: target capacity and Gateway API traffic stepping (gate `RayServiceIncrementalUpgrade`).
    pub const NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE: &str = "NewClusterWithIncrementalUpgrade";
    /// No new cluster on a spec change.
    pub const NONE: &str = "None";
}

/// Condition types of `RayService.status.conditions` (`RayServiceConditionType`).
pub mod condition {
    /// Serving: True while some serve endpoint is ready.
    pub const READY: &str = "Ready";
    /// True whenever both an active and a pending cluster are named.
    pub const UPGRADE_IN_PROGRESS: &str = "UpgradeInProgress";
    /// Incremental upgrades only: traffic goes back to the active cluster.
    pub const ROLLBACK_IN_PROGRESS: &str = "RollbackInProgress";
    /// `spec.suspend` is being carried out (owned resources being deleted).
    pub const SUSPENDING: &str = "Suspending";
    /// Everything the service owned is gone.
    pub const SUSPENDED: &str = "Suspended";
}

/// Condition reasons (`RayServiceConditionReason`).
pub mod reason {
    /// Ready and UpgradeInProgress are False: the service is new (or just resumed) and has not served yet.
    pub const INITIALIZING: &str = "Initializing";
    /// Ready is False for good: the service stayed initializing past its `ray.io/initializing-timeout`.
    pub const INITIALIZING_TIMEOUT: &str = "InitializingTimeout";
    /// Ready went False because the number of ready serve endpoints dropped to 0.
    pub const ZERO_SERVE_ENDPOINTS: &str = "ZeroServeEndpoints";
    /// Ready is True: at least one serve endpoint is ready.
    pub const NON_ZERO_SERVE_ENDPOINTS: &str = "NonZeroServeEndpoints";
    /// UpgradeInProgress is True: both an active and a pending cluster are named.
    pub const BOTH_ACTIVE_PENDING_CLUSTERS_EXIST: &str = "BothActivePendingClustersExist";
    /// UpgradeInProgress is False: an active cluster exists and no pending one.
    pub const NO_PENDING_CLUSTER: &str = "NoPendingCluster";
    /// UpgradeInProgress is Unknown: no active cluster although the service is not initializing.
    pub const NO_ACTIVE_CLUSTER: &str = "NoActiveCluster";
    /// Ready is False: the spec failed the controller's validation.
    pub const VALIDATION_FAILED: &str = "ValidationFailed";
    /// RollbackInProgress is True: mid-upgrade, the goal spec moved away from the pending cluster's.
    pub const DESIRED_CLUSTER_SPEC_CHANGED: &str = "DesiredClusterSpecChanged";
    /// Suspending is True: `spec.suspend` was just set and the deletion of owned resources begins.
    pub const SUSPEND_REQUESTED: &str = "SuspendRequested";
    /// Suspension under way: owned resources are still being deleted.
    pub const SUSPEND_IN_PROGRESS: &str = "SuspendInProgress";
    /// Suspension done: every owned resource is gone (Suspended is True).
    pub const SUSPEND_COMPLETE: &str = "SuspendComplete";
    /// Suspended is False: `spec.suspend` went back to false and the service starts again.
    pub const RAY_SERVICE_RESUMED: &str = "RayServiceResumed";
}

/// `RayService.spec`.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "ray.io",
    version = "v1",
    kind = "RayService",
    plural = "rayservices",
    namespaced,
    status = "RayServiceStatuses",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct RayServiceSpec {
    /// How long a cluster that is neither active nor pending lives on (default 60 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ray_cluster_deletion_delay_seconds: Option<i32>,
    /// A Service template for `<rs>-serve-svc` (ignored in incremental mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serve_service: Option<Value>,
    /// How a change of `rayClusterConfig` is rolled out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_strategy: Option<RayServiceUpgradeStrategy>,
    /// `kueue.x-k8s.io/multikueue` hands the service to another controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
    /// The Serve multi-application config, as YAML.
    #[serde(default, rename = "serveConfigV2", skip_serializing_if = "String::is_empty")]
    pub serve_config_v2: String,
    /// The spec of every RayCluster this service makes.
    #[serde(default, rename = "rayClusterConfig")]
    pub ray_cluster_spec: RayClusterSpec,
    /// Keep the head pod out of the serve service whatever its proxy says.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exclude_head_pod_from_serve_svc: bool,
    /// Top-level suspend (KubeRay v1.7.0): delete everything the service owns.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suspend: bool,
    /// Fields the reconciler does not read (the deprecated unhealthy thresholds, ...).
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// `spec.upgradeStrategy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RayServiceUpgradeStrategy {
    /// One of [`upgrade_type`]; unset means `NewCluster` (unless `ENABLE_ZERO_DOWNTIME=false`).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// The incremental upgrade's pace (required for that type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_upgrade_options: Option<ClusterUpgradeOptions>,
}

/// `spec.upgradeStrategy.clusterUpgradeOptions` (incremental upgrade).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterUpgradeOptions {
    /// Target-capacity step (CRD default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge_percent: Option<i32>,
    /// Traffic step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_size_percent: Option<i32>,
    /// Seconds between traffic steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_seconds: Option<i32>,
    /// The class of the Gateway the controller creates.
    #[serde(default)]
    pub gateway_class_name: String,
}

/// `RayService.status` (Go type `RayServiceStatuses`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RayServiceStatuses {
    /// `Ready`, `UpgradeInProgress`, `RollbackInProgress`, `Suspending`, `Suspended`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// When the controller last wrote the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// Deprecated: `Running` iff the Ready condition is True, else empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub service_status: String,
    /// The cluster serving now. Always written, as Go writes a struct field (`omitempty` does
    /// not omit structs): with no cluster it is `{rayClusterStatus: {desiredCPU: "0", …, head: {}}}`.
    #[serde(default)]
    pub active_service_status: RayServiceStatus,
    /// The cluster being prepared, during an upgrade; always written, as `active_service_status`.
    #[serde(default)]
    pub pending_service_status: RayServiceStatus,
    /// Ready pods behind the serve service(s), counted once per pod.
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub num_serve_endpoints: i32,
    /// The generation the status was computed for.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub observed_generation: i64,
}

fn is_zero_i32(n: &i32) -> bool {
    *n == 0
}

fn is_zero_i64(n: &i64) -> bool {
    *n == 0
}

/// One cluster's part of the status (`activeServiceStatus`, `pendingServiceStatus`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RayServiceStatus {
    /// Serve applications by name, as the cluster's dashboard reports them.
    #[serde(default, rename = "applicationStatuses", skip_serializing_if = "BTreeMap::is_empty")]
    pub applications: BTreeMap<String, AppStatus>,
    /// The `target_capacity` last applied to the cluster's Serve (incremental mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_capacity: Option<i32>,
    /// The cluster's weight in the HTTPRoute (incremental mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic_routed_percent: Option<i32>,
    /// When that weight last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_traffic_migrated_time: Option<Time>,
    /// The RayCluster this part is about.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ray_cluster_name: String,
    /// A copy of the cluster's status, for observability only; written as Go writes it.
    #[serde(default, serialize_with = "as_go_writes_it")]
    pub ray_cluster_status: RayClusterStatus,
}

/// A `RayClusterStatus` as Go's `encoding/json` writes it: its `resource.Quantity` fields
/// (`desiredCPU`, `desiredMemory`, `desiredGPU`, `desiredTPU`) are `"0"` when unset and its
/// `head` struct is `{}` (`omitempty` omits neither) — what real KubeRay v1.7.0 writes
/// (https://github.com/ray-project/kuberay/blob/v1.7.0/ray-operator/apis/ray/v1/raycluster_types.go#L578).
fn as_go_writes_it<S: serde::Serializer>(status: &RayClusterStatus, s: S) -> Result<S::Ok, S::Error> {
    let zero = || Some("0".to_string());
    let go = RayClusterStatus {
        desired_cpu: status.desired_cpu.clone().or_else(zero),
        desired_memory: status.desired_memory.clone().or_else(zero),
        desired_gpu: status.desired_gpu.clone().or_else(zero),
        desired_tpu: status.desired_tpu.clone().or_else(zero),
        head: Some(status.head.clone().unwrap_or_default()),
        ..status.clone()
    };
    go.serialize(s)
}

impl RayServiceStatus {
    /// Whether nothing is set (`RayServiceStatus{}`).
    pub fn is_empty(&self) -> bool {
        *self == RayServiceStatus::default()
    }
}

/// One Serve application's status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppStatus {
    /// Deployments by name.
    #[serde(default, rename = "serveDeploymentStatuses", skip_serializing_if = "BTreeMap::is_empty")]
    pub deployments: BTreeMap<String, ServeDeploymentStatus>,
    /// `NOT_STARTED`, `DEPLOYING`, `RUNNING`, `DEPLOY_FAILED`, `DELETING` or `UNHEALTHY`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// Why, when it is not running.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// One Serve deployment's status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServeDeploymentStatus {
    /// `UPDATING`, `HEALTHY` or `UNHEALTHY`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// Why, when it is not healthy.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crd_manifest_parses_and_carries_the_upgrade_option_defaults() {
        let crd = rayservice_crd();
        assert_eq!(crd.metadata.name.as_deref(), Some("rayservices.ray.io"));
        let v1 = crd.spec.versions.iter().find(|v| v.name == "v1").expect("v1 served");
        assert!(v1.storage && v1.served);
        let schema = serde_json::to_value(&v1.schema).unwrap();
        let spec = &schema["openAPIV3Schema"]["properties"]["spec"]["properties"];
        let options = &spec["upgradeStrategy"]["properties"]["clusterUpgradeOptions"];
        assert_eq!(options["properties"]["maxSurgePercent"]["default"], 100);
        assert_eq!(options["required"], serde_json::json!(["gatewayClassName", "intervalSeconds", "stepSizePercent"]));
        assert_eq!(spec["rayClusterConfig"]["required"], serde_json::json!(["headGroupSpec"]));
        assert_eq!(spec["rayClusterDeletionDelaySeconds"]["minimum"].as_f64(), Some(0.0));
    }

    #[test]
    fn a_sample_round_trips_through_the_types() {
        let rs: RayService = serde_json::from_value(serde_json::json!({
            "apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "s"},
            "spec": {"serveConfigV2": "applications: []", "upgradeStrategy": {"type": "NewCluster"},
                     "rayClusterConfig": {"headGroupSpec": {"template": {}}}, "serviceUnhealthySecondThreshold": 9},
        }))
        .unwrap();
        assert_eq!(rs.spec.extra["serviceUnhealthySecondThreshold"], 9);
        let back = serde_json::to_value(&rs).unwrap();
        assert_eq!(back["spec"]["upgradeStrategy"]["type"], "NewCluster");
        assert!(back["spec"].get("suspend").is_none());
    }
}
