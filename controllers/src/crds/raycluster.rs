//! `ray.io/v1` RayCluster, as KubeRay v1.7.0 defines it (`ray-operator/apis/ray/v1/raycluster_types.go`).
//!
//! The fields the reference reconciler reads are typed; everything else in the spec is kept in
//! `extra` maps so a read-modify-write and the spec hash see the whole object.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The RayCluster CRD manifest: KubeRay v1.7.0's names, printer columns, status subresource,
/// defaults and enums. Pod templates keep unknown fields (the upstream schema embeds the full
/// PodTemplateSpec schema, 900 KB, which adds nothing the fake server could check here).
pub const RAYCLUSTER_CRD_YAML: &str = include_str!("ray.io_rayclusters.yaml");

/// The RayCluster CRD, parsed from [`RAYCLUSTER_CRD_YAML`].
pub fn raycluster_crd() -> &'static CustomResourceDefinition {
    // Parsed once per process (every row of a run installs it); a unit test parses the
    // constant manifest, so parsing cannot fail at run time.
    static PARSED: std::sync::LazyLock<CustomResourceDefinition> =
        std::sync::LazyLock::new(|| serde_saphyr::from_str(RAYCLUSTER_CRD_YAML).unwrap_or_default());
    &PARSED
}

/// `RayCluster.spec`.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "ray.io",
    version = "v1",
    kind = "RayCluster",
    plural = "rayclusters",
    namespaced,
    status = "RayClusterStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct RayClusterSpec {
    /// `spec.rayVersion`: the version of Ray the cluster's images run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ray_version: Option<String>,
    /// `spec.headGroupSpec`: the head pod's template, Ray start parameters and head service settings.
    #[serde(default)]
    pub head_group_spec: HeadGroupSpec,
    /// `spec.workerGroupSpecs`: the worker groups, each with its own pod template and replica bounds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worker_group_specs: Vec<WorkerGroupSpec>,
    /// `spec.enableInTreeAutoscaling`: run the Ray autoscaler as a sidecar of the head pod, letting it
    /// set the worker replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_in_tree_autoscaling: Option<bool>,
    /// `spec.suspend`: when true, the operator deletes all of the cluster's pods; an explicit `false` resumes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// `spec.managedBy`: which controller reconciles the cluster (`ray.io/kuberay-operator` or
    /// `kueue.x-k8s.io/multikueue`); immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
    /// `spec.upgradeStrategy`: how pods are replaced when the pod templates change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_strategy: Option<UpgradeStrategy>,
    /// `spec.headServiceAnnotations`: annotations put on the head service the operator creates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_service_annotations: Option<BTreeMap<String, String>>,
    /// Fields the reconciler does not model (autoscalerOptions, gcsFaultToleranceOptions, ...).
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl RayClusterSpec {
    /// The spec as KubeRay writes it back on a read-modify-write of the typed object (a
    /// controller-runtime `Update`, e.g. adding a finalizer): Go's `encoding/json` writes struct
    /// fields even when empty, `omitempty` or not, so every pod template gains `metadata: {}`,
    /// every container `resources: {}`, every worker group `scaleStrategy: {}`. When the stored
    /// spec lacked any of them, the write changes the spec and the API server bumps
    /// `metadata.generation` (seen on kube-apiserver v1.37 with KubeRay v1.6.2 and v1.7.0: a
    /// RayService made from the v1.7.0 sample is at generation 2 once its finalizer is added).
    /// `nil` maps and slices are written as `null`, which the API server prunes, so they change
    /// nothing.
    pub fn as_go_writes_it(&mut self) {
        fn template(t: &mut PodTemplateSpec) {
            t.metadata.get_or_insert_with(Default::default);
            if let Some(spec) = t.spec.as_mut() {
                let init = spec.init_containers.iter_mut().flatten();
                for c in spec.containers.iter_mut().chain(init) {
                    c.resources.get_or_insert_with(Default::default);
                }
            }
        }
        template(&mut self.head_group_spec.template);
        for group in &mut self.worker_group_specs {
            group.scale_strategy.get_or_insert_with(Default::default);
            template(&mut group.template);
        }
    }
}

/// `spec.upgradeStrategy` (KubeRay v1.6.0+, PR #4185).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeStrategy {
    /// `Recreate` or `None` (the CRD enum); unset behaves like `None`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
}

/// `spec.headGroupSpec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeadGroupSpec {
    /// `headGroupSpec.template`: the pod template of the head pod.
    #[serde(default)]
    pub template: PodTemplateSpec,
    /// Go's `map[string]string` without `omitempty`: a written `{}` stays `{}` on a
    /// read-modify-write (dropping it would change the spec and bump the generation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ray_start_params: Option<BTreeMap<String, String>>,
    /// `headGroupSpec.serviceType`: the Kubernetes Service type of the head service (`ClusterIP` when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_type: Option<String>,
    /// `headGroupSpec.headService`: a Service object whose fields override the generated head service (kept untyped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_service: Option<Value>,
    /// Head group fields the reconciler does not model, kept so writes round-trip them.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// One entry of `spec.workerGroupSpecs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerGroupSpec {
    /// `workerGroupSpecs[].groupName`: the group's name, unique within the cluster and used in pod names and labels.
    pub group_name: String,
    /// `workerGroupSpecs[].replicas`: the requested number of replicas (each of `numOfHosts` pods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// `workerGroupSpecs[].minReplicas`: the lower bound the replicas are clamped to (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replicas: Option<i32>,
    /// `workerGroupSpecs[].maxReplicas`: the upper bound the replicas are clamped to (default `i32::MAX`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_replicas: Option<i32>,
    /// `workerGroupSpecs[].numOfHosts`: pods per replica, for multi-host workers such as TPU slices (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_of_hosts: Option<i32>,
    /// `workerGroupSpecs[].suspend`: when true, the group's pods are deleted and it counts zero desired replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// `workerGroupSpecs[].scaleStrategy`: which worker pods to delete when scaling down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_strategy: Option<ScaleStrategy>,
    /// `workerGroupSpecs[].template`: the pod template of the group's worker pods.
    #[serde(default)]
    pub template: PodTemplateSpec,
    /// Go's `map[string]string` without `omitempty`: a written `{}` stays `{}` on a
    /// read-modify-write (dropping it would change the spec and bump the generation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ray_start_params: Option<BTreeMap<String, String>>,
    /// Worker group fields the reconciler does not model, kept so writes round-trip them.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// `workerGroupSpecs[].scaleStrategy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleStrategy {
    /// `scaleStrategy.workersToDelete`: names of worker pods to delete (usually written by the Ray autoscaler).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers_to_delete: Vec<String>,
}

/// `RayCluster.status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RayClusterStatus {
    /// Deprecated upstream but still written: `ready`, `suspended` (`failed` is never set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// `status.reason`: a human-readable explanation of the current `state`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `status.stateTransitionTimes`: for each `state` value, the time the cluster last entered it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_transition_times: Option<BTreeMap<String, String>>,
    /// `status.readyWorkerReplicas`: worker pods that are Running and Ready.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ready_worker_replicas: i32,
    /// `status.availableWorkerReplicas`: worker pods that are Running.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub available_worker_replicas: i32,
    /// `status.desiredWorkerReplicas`: worker pods wanted across all groups (replicas clamped to their
    /// bounds, times hosts).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub desired_worker_replicas: i32,
    /// `status.minWorkerReplicas`: the sum of the non-suspended groups' `minReplicas` times hosts.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min_worker_replicas: i32,
    /// `status.maxWorkerReplicas`: the sum of the non-suspended groups' `maxReplicas` times hosts.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_worker_replicas: i32,
    /// `status.desiredCPU`: total CPU requested by the head and the desired worker pods, as a quantity.
    #[serde(default, rename = "desiredCPU", skip_serializing_if = "Option::is_none")]
    pub desired_cpu: Option<String>,
    /// `status.desiredMemory`: total memory requested by the head and the desired worker pods, as a quantity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_memory: Option<String>,
    /// `status.desiredGPU`: total GPUs requested by the head and the desired worker pods, as a quantity.
    #[serde(default, rename = "desiredGPU", skip_serializing_if = "Option::is_none")]
    pub desired_gpu: Option<String>,
    /// `status.desiredTPU`: total TPUs (`google.com/tpu`) requested by the head and the desired worker pods.
    #[serde(default, rename = "desiredTPU", skip_serializing_if = "Option::is_none")]
    pub desired_tpu: Option<String>,
    /// `status.lastUpdateTime`: when the operator last wrote the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<String>,
    /// `status.endpoints`: the head service's named ports, each mapped to its node port or target port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<BTreeMap<String, String>>,
    /// `status.head`: the head pod's and head service's names and IP addresses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<HeadInfo>,
    /// `status.conditions`: the cluster's conditions (`HeadPodReady`, `RayClusterProvisioned`,
    /// `RayClusterSuspended`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// `status.observedGeneration`: the `metadata.generation` the status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// `status.head`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeadInfo {
    /// `status.head.podIP`: the head pod's IP address.
    #[serde(default, rename = "podIP", skip_serializing_if = "Option::is_none")]
    pub pod_ip: Option<String>,
    /// `status.head.podName`: the head pod's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_name: Option<String>,
    /// `status.head.serviceIP`: the head service's cluster IP (the head pod's IP for a headless service).
    #[serde(default, rename = "serviceIP", skip_serializing_if = "Option::is_none")]
    pub service_ip: Option<String>,
    /// `status.head.serviceName`: the head service's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crd_manifest_parses_and_names_v1_as_storage() {
        let crd = raycluster_crd();
        assert_eq!(crd.metadata.name.as_deref(), Some("rayclusters.ray.io"));
        let v1 = crd.spec.versions.iter().find(|v| v.name == "v1").expect("v1 served");
        assert!(v1.storage && v1.served);
        assert_eq!(crd.spec.names.kind, "RayCluster");
        let schema = serde_json::to_value(&v1.schema).unwrap();
        let group = &schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["workerGroupSpecs"]["items"];
        assert_eq!(group["properties"]["maxReplicas"]["default"], 2147483647);
        assert_eq!(group["properties"]["numOfHosts"]["default"], 1);
        assert_eq!(
            schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["upgradeStrategy"]["properties"]["type"]["enum"],
            serde_json::json!(["Recreate", "None"])
        );
    }
}
