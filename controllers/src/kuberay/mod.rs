//! The RayCluster and RayService reconcilers, modelled on KubeRay v1.7.0
//! (`ray-operator/controllers/ray/raycluster_controller.go`, `rayservice_controller.go` and their
//! `utils`/`common` helpers).
//!
//! RayService ([`rayservice`]): child RayClusters with their hash and annotations, the
//! `<rs>-head-svc`/`<rs>-serve-svc` switch, Serve config submission and status through the
//! dashboard, `NewCluster` (blue/green), `None`, `NewClusterWithIncrementalUpgrade` (Gateway,
//! HTTPRoute, target capacity and traffic stepping, promotion, rollback), top-level suspend,
//! dangling-cluster deletion after the delay, validation, events, finalizer.
//!
//! What is modelled: pod naming and labels, the head service and the headless worker service,
//! replicas clamping, `workersToDelete`, deletion of unhealthy pods, worker-group suspend,
//! multi-host replica indexing, the scale expectations, status and conditions with KubeRay's
//! reasons, the atomic suspend state machine, `upgradeStrategy` Recreate/None with the head-pod
//! hash and operator-version annotations, validation, the controller's watch predicates and
//! requeues, and the events.k8s.io events KubeRay emits (reason, action and note).
//!
//! RayJob ([`rayjob`]): only what Kueue needs — the deployment-status state machine, the
//! RayCluster it creates, suspend and resume; no Ray job runs (see the module docs).
//!
//! What is not: the autoscaler sidecar and its RBAC, autoscaler v2, ingress/route, GCS fault
//! tolerance and its Redis cleanup job, network policies, mTLS, auth, batch schedulers, the
//! `wait-gcs-ready` init container, and the probes and `ray start` plumbing KubeRay injects into
//! pods beyond the env and labels rows can observe. Rows that would need them do not exist yet.

pub mod common;
pub mod raycluster;
pub mod rayjob;
pub mod rayservice;

pub use common::hash::{spec_hash, spec_hash_with};
pub use raycluster::{RayClusterReconciler, ReconcileError};
pub use rayjob::RayJobReconciler;
pub use rayservice::{RayServiceError, RayServiceReconciler};

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
/// Worker label (gate `RayMultiHostIndexing`): the index of the worker's replica in its group.
pub const RAY_WORKER_REPLICA_INDEX_LABEL: &str = "ray.io/worker-group-replica-index";
/// Worker label (gate `RayMultiHostIndexing`, `numOfHosts > 1`): the replica's unique name.
pub const RAY_WORKER_REPLICA_NAME_LABEL: &str = "ray.io/worker-group-replica-name";
/// Worker label (gate `RayMultiHostIndexing`, `numOfHosts > 1`): the host's index in its replica.
pub const RAY_HOST_INDEX_LABEL: &str = "ray.io/replica-host-index";
/// Label on the headless worker service of a cluster with multi-host groups: the cluster's name.
pub const RAY_HEADLESS_WORKER_SERVICE_LABEL: &str = "ray.io/headless-worker-svc";
/// Head-pod annotation: the hash of the spec the pod was made from (Recreate strategy).
pub const UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION: &str = "ray.io/upgrade-strategy-recreate-hash";
/// Head-pod annotation: the operator version that made the pod.
pub const KUBERAY_VERSION_ANNOTATION: &str = "ray.io/kuberay-version";
/// Head-pod (and cluster) annotation: whether GCS fault tolerance is on (`"true"`/`"false"`).
pub const RAY_FT_ENABLED_ANNOTATION: &str = "ray.io/ft-enabled";
/// Cluster annotation: do not recreate a missing head once provisioned (RayJob sidecar mode).
pub const DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION: &str = "ray.io/disable-provisioned-head-restart";
/// Cluster annotation that asks for the `<cluster>-serve-svc` service.
pub const ENABLE_SERVE_SERVICE_ANNOTATION: &str = "ray.io/enable-serve-service";
/// The only `spec.managedBy` value KubeRay reconciles (besides unset).
pub const KUBERAY_OPERATOR_MANAGER: &str = "ray.io/kuberay-operator";
/// The KubeRay release whose behaviour these controllers model.
pub const MODELLED_VERSION: &str = "v1.7.0";

/// The `reportingController` of KubeRay's RayCluster events (`mgr.GetEventRecorder("raycluster-controller")`).
pub const EVENT_COMPONENT: &str = "raycluster-controller";
/// The component name on the RayService controller's events.
pub const RAYSERVICE_EVENT_COMPONENT: &str = "rayservice-controller";
/// Label on the clusters and services a RayService (or RayJob) makes: its name.
pub const RAY_ORIGINATED_FROM_CR_NAME_LABEL: &str = "ray.io/originated-from-cr-name";
/// Pod label the serve services select on: `true` when the pod serves.
pub const RAY_SERVE_LABEL: &str = "ray.io/serve";
/// Cluster annotation: the RayService spec hash the cluster was made from.
pub const HASH_WITHOUT_REPLICAS_ANNOTATION: &str = "ray.io/hash-without-replicas-and-workers-to-delete";
/// Cluster annotation: how many worker groups the RayService had when the cluster was made.
pub const NUM_WORKER_GROUPS_ANNOTATION: &str = "ray.io/num-worker-groups";
/// The finalizer the RayService controller holds on every RayService.
pub const RAYSERVICE_FINALIZER: &str = "ray.io/rayservice-finalizer";
/// RayService annotation: how long the service may stay initializing.
pub const INITIALIZING_TIMEOUT_ANNOTATION: &str = "ray.io/initializing-timeout";

/// KubeRay's feature gates (`ray-operator/pkg/features/features.go`, v1.7.0), as a row names
/// them in `needs.featureGates.kuberay`. An unknown name fails to load, with file and line.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub enum KubeRayGate {
    /// Beta, on: RayCluster `status.conditions`.
    RayClusterStatusConditions,
    /// Beta, on: RayJob `deletionStrategy`; also what allows suspending a worker group
    /// (`workerGroupSpecs[].suspend`), which is refused while it is off.
    RayJobDeletionPolicy,
    /// Beta, on: `ray.io/worker-group-replica-index` on every worker; for multi-host groups
    /// (`numOfHosts > 1`) also the replica name and host index, and replicas created, scaled and
    /// deleted whole (`reconcileMultiHostWorkerGroup`).
    RayMultiHostIndexing,
    /// Beta, on: RayService `NewClusterWithIncrementalUpgrade`.
    RayServiceIncrementalUpgrade,
    /// Alpha, off: RayCronJob.
    RayCronJob,
    /// Alpha, off: restart the RayJob submitter sidecar.
    SidecarSubmitterRestart,
    /// Alpha, off: NetworkPolicies for RayClusters.
    RayClusterNetworkPolicy,
    /// Alpha, off: GCS fault tolerance with embedded storage.
    #[serde(rename = "GCSFaultToleranceEmbeddedStorage")]
    GcsFaultToleranceEmbeddedStorage,
    /// Alpha, off: mTLS between Ray nodes.
    #[serde(rename = "RayClusterMTLS")]
    RayClusterMtls,
    /// Alpha, off: the Ray history server.
    RayClusterHistoryServer,
    /// Alpha, off: the `kubernetes-was` batch scheduler.
    #[serde(rename = "KubernetesWAS")]
    KubernetesWas,
}

/// Operator settings a row varies through `needs.settings.kuberay`: what a KubeRay deployment
/// sets through its environment. Unknown keys fail to load, with file and line.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KubeRaySettings {
    /// The operator version stamped on head pods (`ray.io/kuberay-version`), e.g. `v1.6.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `ENABLE_DETERMINISTIC_HEAD_POD_NAME`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deterministic_head_pod_name: Option<bool>,
    /// `ENABLE_RANDOM_POD_DELETE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random_pod_delete: Option<bool>,
    /// `ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE`.
    #[serde(default, rename = "headClusterIPService", skip_serializing_if = "Option::is_none")]
    pub head_cluster_ip_service: Option<bool>,
    /// `ENABLE_ZERO_DOWNTIME` (`false` turns RayService upgrades off when no strategy type is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_zero_downtime: Option<bool>,
}

impl KubeRaySettings {
    /// The real operator's environment for these settings (`ray-operator/controllers/ray/utils/constant.go`
    /// and `rayservice_controller.go` at v1.7.0 name the variables); `version` has none, a real
    /// operator stamps its own.
    pub fn environment(&self) -> Vec<(&'static str, String)> {
        [
            ("ENABLE_DETERMINISTIC_HEAD_POD_NAME", self.deterministic_head_pod_name),
            ("ENABLE_RANDOM_POD_DELETE", self.random_pod_delete),
            ("ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE", self.head_cluster_ip_service),
            ("ENABLE_ZERO_DOWNTIME", self.enable_zero_downtime),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.map(|on| (name, on.to_string())))
        .collect()
    }
}

/// How the real operator's `--feature-gates` spells `gates` (`Name=true,Other=false`).
pub fn feature_gates_flag(gates: &BTreeMap<KubeRayGate, bool>) -> String {
    gates
        .iter()
        .map(|(gate, on)| {
            let name = serde_json::to_value(gate).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
            format!("{name}={on}")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Operator settings and feature gates: what a KubeRay deployment configures through its
/// command line, environment and `--feature-gates`. Rows vary these through
/// `needs.settings.kuberay` and `needs.featureGates.kuberay` (see [`KubeRayConfig::apply`]).
#[derive(Debug, Clone)]
pub struct KubeRayConfig {
    /// `KUBERAY_VERSION`, stamped on head pods as `ray.io/kuberay-version`.
    pub kuberay_version: String,
    /// Every gate with its value (defaults from [`default_feature_gates`]).
    pub feature_gates: BTreeMap<KubeRayGate, bool>,
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
    /// `ENABLE_ZERO_DOWNTIME`: unless false, a RayService without `upgradeStrategy.type` gets
    /// new-cluster upgrades.
    pub enable_zero_downtime: bool,
    /// Seeds the generator of the random suffixes of RayService cluster names, so a run in
    /// virtual time names clusters the same way every time.
    pub name_seed: u64,
    /// A deliberate deviation from KubeRay, for proving that the conformance table catches
    /// regressions (harness test `wrong_reconciler`). Exists only with the `defects` feature.
    #[cfg(feature = "defects")]
    pub defect: Option<Defect>,
}

/// Deliberate bugs the reconcilers can be built with (cargo feature `defects`), each a
/// plausible regression of an upgrade feature. The conformance tables must fail on each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Defect {
    /// RayService incremental upgrade: traffic shifts to the pending cluster before its Serve
    /// applications are ready.
    TrafficBeforePendingReady,
    /// RayService incremental upgrade: the pending cluster's target capacity jumps to 100 %
    /// instead of rising by `maxSurgePercent`.
    TargetCapacityPastMaxSurge,
    /// RayService rollback: completes only when the pending cluster reached 0 %, never when
    /// its head is not ready (the v1.6 rule, without the v1.7 bypass).
    RollbackWaitsForUnhealthyPending,
    /// RayService: a cluster that is neither active nor pending is deleted at once, without
    /// `rayClusterDeletionDelaySeconds`.
    NoDeletionDelay,
    /// The spec hash forgets to mask worker replicas, so scaling recreates every pod.
    HashIncludesReplicas,
    /// Recreate deletes pods one by one and creates the new head in the same pass.
    CreateDuringRecreate,
    /// An operator-version change is treated as a spec change (recreates on operator upgrade).
    NoVersionSkip,
    /// Suspend is not atomic: flipping `suspend` back cancels a suspension in progress.
    NonAtomicSuspend,
    /// A Failed pod with `restartPolicy: Always` is left to the kubelet (it never restarts it).
    TerminalPodKeptWithRestartAlways,
    /// Extra head pods are deleted instead of stopping the reconcile.
    ExtraHeadPodsDeleted,
}

impl Defect {
    /// Every defect, for the report of which rows catch which (harness test `defects`).
    pub const ALL: [Defect; 10] = [
        Defect::TrafficBeforePendingReady,
        Defect::TargetCapacityPastMaxSurge,
        Defect::RollbackWaitsForUnhealthyPending,
        Defect::NoDeletionDelay,
        Defect::HashIncludesReplicas,
        Defect::CreateDuringRecreate,
        Defect::NoVersionSkip,
        Defect::NonAtomicSuspend,
        Defect::TerminalPodKeptWithRestartAlways,
        Defect::ExtraHeadPodsDeleted,
    ];
}

impl Default for KubeRayConfig {
    fn default() -> Self {
        Self {
            kuberay_version: MODELLED_VERSION.into(),
            feature_gates: default_feature_gates(),
            deterministic_head_pod_name: false,
            random_pod_delete: false,
            head_cluster_ip_service: false,
            default_requeue: Duration::from_secs(300),
            status_requeue: Duration::from_secs(2),
            enable_zero_downtime: true,
            name_seed: 0,
            #[cfg(feature = "defects")]
            defect: None,
        }
    }
}

/// KubeRay v1.7.0's gates and their defaults (`ray-operator/pkg/features/features.go`).
pub fn default_feature_gates() -> BTreeMap<KubeRayGate, bool> {
    use KubeRayGate::*;
    [
        (RayClusterStatusConditions, true),
        (RayJobDeletionPolicy, true),
        (RayMultiHostIndexing, true),
        (RayServiceIncrementalUpgrade, true),
        (RayCronJob, false),
        (SidecarSubmitterRestart, false),
        (RayClusterNetworkPolicy, false),
        (GcsFaultToleranceEmbeddedStorage, false),
        (RayClusterMtls, false),
        (RayClusterHistoryServer, false),
        (KubernetesWas, false),
    ]
    .into_iter()
    .collect()
}

impl KubeRayConfig {
    /// Whether a feature gate is on.
    pub fn gate(&self, gate: KubeRayGate) -> bool {
        self.feature_gates.get(&gate).copied().unwrap_or(false)
    }

    /// Whether this configuration carries `defect` (never, without the `defects` feature).
    #[inline]
    pub fn defective(&self, defect: Defect) -> bool {
        #[cfg(feature = "defects")]
        {
            self.defect == Some(defect)
        }
        #[cfg(not(feature = "defects"))]
        {
            let _ = defect;
            false
        }
    }

    /// Applies a row's gates and settings over this configuration.
    pub fn apply(&mut self, gates: &BTreeMap<KubeRayGate, bool>, settings: &KubeRaySettings) {
        self.feature_gates.extend(gates.iter().map(|(g, on)| (*g, *on)));
        let KubeRaySettings {
            version,
            deterministic_head_pod_name,
            random_pod_delete,
            head_cluster_ip_service,
            enable_zero_downtime,
        } = settings;
        if let Some(v) = version {
            self.kuberay_version = v.clone();
        }
        if let Some(b) = deterministic_head_pod_name {
            self.deterministic_head_pod_name = *b;
        }
        if let Some(b) = random_pod_delete {
            self.random_pod_delete = *b;
        }
        if let Some(b) = head_cluster_ip_service {
            self.head_cluster_ip_service = *b;
        }
        if let Some(b) = enable_zero_downtime {
            self.enable_zero_downtime = *b;
        }
    }
}
