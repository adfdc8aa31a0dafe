//! The RayCluster reconciler, modelled on KubeRay v1.7.0
//! (`ray-operator/controllers/ray/raycluster_controller.go` and its `utils`/`common` helpers).
//!
//! What is modelled: pod naming and labels, the head service, replicas clamping,
//! `workersToDelete`, deletion of unhealthy pods, status and conditions with KubeRay's reasons,
//! the atomic suspend state machine, `upgradeStrategy` Recreate/None with the head-pod hash and
//! operator-version annotations, validation, and the Kubernetes events KubeRay emits.
//!
//! What is not: the autoscaler sidecar and its RBAC, ingress/route, GCS fault tolerance and its
//! Redis cleanup job, network policies, batch schedulers, the multi-host headless service, and
//! the probes and `ray start` plumbing KubeRay injects into pods beyond the env and labels rows
//! can observe. Rows that would need them do not exist yet.

mod hash;
mod pods;
mod reconciler;
mod status;

pub use hash::{spec_hash, spec_hash_with};
pub use reconciler::{RayClusterReconciler, ReconcileError};

use std::collections::BTreeMap;
use std::time::Duration;

/// Label on every pod and service KubeRay makes for a cluster: the cluster's name.
pub const RAY_CLUSTER_LABEL: &str = "ray.io/cluster";
/// Label: `head` or `worker`.
pub const RAY_NODE_TYPE_LABEL: &str = "ray.io/node-type";
/// Label: `headgroup` or the worker group's name.
pub const RAY_GROUP_LABEL: &str = "ray.io/group";
/// Label: `<cluster>-head` / `<cluster>-worker`.
pub const RAY_ID_LABEL: &str = "ray.io/identifier";
/// Label: `yes` on every Ray pod.
pub const RAY_IS_RAY_NODE_LABEL: &str = "ray.io/is-ray-node";
/// Cluster label naming the CRD a RayCluster was made for (`RayCluster`, `RayJob`, `RayService`).
pub const RAY_ORIGINATED_FROM_CRD_LABEL: &str = "ray.io/originated-from-crd";
/// Head-pod annotation: the hash of the spec the pod was made from (Recreate strategy).
pub const UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION: &str = "ray.io/upgrade-strategy-recreate-hash";
/// Head-pod annotation: the operator version that made the pod.
pub const KUBERAY_VERSION_ANNOTATION: &str = "ray.io/kuberay-version";
/// Cluster annotation: do not recreate a missing head once provisioned (RayJob sidecar mode).
pub const DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION: &str = "ray.io/disable-provisioned-head-restart";
/// Cluster annotation that asks for the `<cluster>-serve-svc` service.
pub const ENABLE_SERVE_SERVICE_ANNOTATION: &str = "ray.io/enable-serve-service";
/// The only `spec.managedBy` value KubeRay reconciles (besides unset).
pub const KUBERAY_OPERATOR_MANAGER: &str = "ray.io/kuberay-operator";
/// The component name on KubeRay's events (`mgr.GetEventRecorderFor("raycluster-controller")`).
pub const EVENT_COMPONENT: &str = "raycluster-controller";

/// Operator settings and feature gates: what a KubeRay deployment configures through its
/// command line, environment and `--feature-gates`. Rows vary these through `needs.settings`
/// and `needs.featureGates` (see [`KubeRayConfig::apply_settings`]).
#[derive(Debug, Clone)]
pub struct KubeRayConfig {
    /// `KUBERAY_VERSION`, stamped on head pods as `ray.io/kuberay-version`.
    pub kuberay_version: String,
    /// Feature gates by name (`RayClusterStatusConditions`, `RayJobDeletionPolicy`, ...).
    pub feature_gates: BTreeMap<String, bool>,
    /// `ENABLE_DETERMINISTIC_HEAD_POD_NAME`: head pod named `<cluster>-head` instead of generated.
    pub deterministic_head_pod_name: bool,
    /// `ENABLE_RANDOM_POD_DELETE`: scale down by deleting pods even with the autoscaler on.
    pub random_pod_delete: bool,
    /// `ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE`: a ClusterIP head service instead of a headless one.
    pub head_cluster_ip_service: bool,
    /// `RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV` (300 s upstream).
    pub default_requeue: Duration,
    /// Requeue after a status change or an error (`DefaultRequeueDuration`, 2 s upstream).
    pub status_requeue: Duration,
    /// A deliberate deviation from KubeRay, for proving that the conformance table catches
    /// regressions (harness test `wrong_reconciler`). `None` in every real use.
    pub defect: Option<Defect>,
}

/// Deliberate bugs the reconciler can be built with, each a plausible regression of the
/// upgradeStrategy feature. The conformance table must fail on each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Defect {
    /// The spec hash forgets to mask worker replicas, so scaling recreates every pod.
    HashIncludesReplicas,
    /// Recreate deletes pods one by one and creates the new head in the same pass.
    CreateDuringRecreate,
    /// An operator-version change is treated as a spec change (recreates on operator upgrade).
    NoVersionSkip,
    /// Suspend is not atomic: flipping `suspend` back cancels a suspension in progress.
    NonAtomicSuspend,
}

impl Default for KubeRayConfig {
    fn default() -> Self {
        Self {
            kuberay_version: "v1.7.0".into(),
            feature_gates: default_feature_gates(),
            deterministic_head_pod_name: false,
            random_pod_delete: false,
            head_cluster_ip_service: false,
            default_requeue: Duration::from_secs(300),
            status_requeue: Duration::from_secs(2),
            defect: None,
        }
    }
}

/// KubeRay v1.7.0's gates and their defaults (`ray-operator/pkg/features/features.go`).
pub fn default_feature_gates() -> BTreeMap<String, bool> {
    [
        ("RayClusterStatusConditions", true),
        ("RayJobDeletionPolicy", false),
        ("RayMultiHostIndexing", false),
        ("RayServiceIncrementalUpgrade", true),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

impl KubeRayConfig {
    /// Whether a feature gate is on (unknown gates are off).
    pub fn gate(&self, name: &str) -> bool {
        self.feature_gates.get(name).copied().unwrap_or(false)
    }

    /// Applies a row's feature gates and `kuberay.*` settings. Unknown gates and settings are
    /// errors, so a typo in a suite cannot silently test the default.
    pub fn apply_settings(
        &mut self,
        gates: &BTreeMap<String, bool>,
        settings: &BTreeMap<String, serde_json::Value>,
    ) -> Result<(), String> {
        for (gate, on) in gates {
            if !self.feature_gates.contains_key(gate) {
                let known: Vec<_> = self.feature_gates.keys().cloned().collect();
                return Err(format!("unknown KubeRay feature gate {gate:?} (known: {})", known.join(", ")));
            }
            self.feature_gates.insert(gate.clone(), *on);
        }
        for (key, value) in settings {
            let Some(name) = key.strip_prefix("kuberay.") else { continue };
            let as_bool =
                || value.as_bool().ok_or_else(|| format!("setting {key}: expected true or false, got {value}"));
            match name {
                "version" => {
                    self.kuberay_version = value
                        .as_str()
                        .ok_or_else(|| format!("setting {key}: expected a string, got {value}"))?
                        .to_string()
                }
                "deterministicHeadPodName" => self.deterministic_head_pod_name = as_bool()?,
                "randomPodDelete" => self.random_pod_delete = as_bool()?,
                "headClusterIPService" => self.head_cluster_ip_service = as_bool()?,
                _ => {
                    return Err(format!(
                        "unknown KubeRay setting {key:?} (known: kuberay.version, kuberay.deterministicHeadPodName, \
                         kuberay.randomPodDelete, kuberay.headClusterIPService)"
                    ));
                }
            }
        }
        Ok(())
    }
}
