//! Reference DRA components (`resource.k8s.io/v1` ResourceClaim reservations), modelled on
//! Kubernetes 1.37.2 (`pkg/controller/resourceclaim`, `pkg/controller/scheduling/
//! podgroupprotection`, `staging/src/k8s.io/dynamic-resource-allocation/resourceclaim`):
//!
//! - [`resourceclaim`]: kube-controller-manager's resourceclaim controller: claims from
//!   templates for pods and PodGroups, pod-status and PodGroup-status claim names, pruning of
//!   `status.reservedFor`, deallocation on the "had consumers → none" transition, finalizer
//!   removal, deletion of generated claims whose pod is done.
//! - [`podgroup_protection`]: kube-controller-manager's podgroupprotection controller.
//! - [`device_taint_eviction`]: kube-controller-manager's device-taint-eviction controller (pods
//!   found through their claims' reservations, PodGroup entries included).
//! - [`claims`]: the claim library every component shares (name resolution, `IsForPod`,
//!   `IsReservedForPod`, `BindTo`).
//!
//! The scheduler's DynamicResources plugin, the kubelet's reservation check and the DRA driver
//! that publishes ResourceSlices are simulated actors (the `sim` module); they read the same
//! [`DraConfig`].
//!
//! # Profiles
//!
//! A [`DraProfile`] sets the gates every component (API server included) runs with:
//! `baseline` (pods only), `podgroup` (KEP-5729 as in 1.37: `GenericWorkload` and
//! `DRAWorkloadResourceClaims`), `workloads` (KEP-5194 as proposed: `DRAReservedForWorkloads`,
//! our own gate since no upstream has it) and `raw` (baseline components, with non-pod entries
//! written into `status.reservedFor` by a workload controller).

pub mod claims;
pub mod device_taint_eviction;
pub mod objects;
pub mod podgroup_protection;
pub mod resourceclaim;

pub use device_taint_eviction::DeviceTaintEvictionController;
pub use objects::{DeviceClass, PodGroup, ResourceClaim, ResourceClaimTemplate, ResourceSlice};
pub use podgroup_protection::PodGroupProtectionController;
pub use resourceclaim::ResourceClaimController;

use serde::{Deserialize, Serialize};

/// Which DRA reservation model the components implement.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum DraProfile {
    /// Pods only: the Kubernetes 1.34+ semantics, every pod gets its own `status.reservedFor`
    /// entry (at most 256).
    #[default]
    Baseline,
    /// KEP-5729 as shipped in 1.37: claims shared through a PodGroup are reserved for the
    /// PodGroup (gates `GenericWorkload` and `DRAWorkloadResourceClaims`).
    Podgroup,
    /// KEP-5194 as proposed (never merged): claim `spec.reservedFor` and
    /// `status.allocation.reservedForAnyPod` (gate `DRAReservedForWorkloads`).
    Workloads,
    /// Baseline components; a workload controller writes its own non-pod entry.
    Raw,
}

impl DraProfile {
    /// Every profile.
    pub const ALL: [DraProfile; 4] =
        [DraProfile::Baseline, DraProfile::Podgroup, DraProfile::Workloads, DraProfile::Raw];

    /// The name rows use.
    pub fn as_str(self) -> &'static str {
        match self {
            DraProfile::Baseline => "baseline",
            DraProfile::Podgroup => "podgroup",
            DraProfile::Workloads => "workloads",
            DraProfile::Raw => "raw",
        }
    }

    /// The gates every component runs with in this profile.
    pub fn gates(self) -> DraGates {
        match self {
            DraProfile::Baseline | DraProfile::Raw => DraGates::default(),
            DraProfile::Podgroup => {
                DraGates { generic_workload: true, workload_resource_claims: true, reserved_for_workloads: false }
            }
            DraProfile::Workloads => {
                DraGates { generic_workload: false, workload_resource_claims: false, reserved_for_workloads: true }
            }
        }
    }
}

impl std::fmt::Display for DraProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The DRA feature gates of one component.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DraGates {
    /// `GenericWorkload`: the PodGroup API and pods' `spec.schedulingGroup`.
    pub generic_workload: bool,
    /// `DRAWorkloadResourceClaims`: claims reserved for PodGroups.
    pub workload_resource_claims: bool,
    /// `DRAReservedForWorkloads` (KEP-5194 as proposed).
    pub reserved_for_workloads: bool,
}

impl DraGates {
    /// Whether a reservation for the pod's PodGroup counts (`acceptPodGroup` of the library):
    /// the 1.37 components pass `DRAWorkloadResourceClaims`.
    pub fn accept_podgroup(self) -> bool {
        self.workload_resource_claims
    }

    /// The `--feature-gates` settings these gates stand for.
    pub fn settings(self) -> Vec<String> {
        vec![
            format!("GenericWorkload={}", self.generic_workload),
            format!("DRAWorkloadResourceClaims={}", self.workload_resource_claims),
            format!("DRAReservedForWorkloads={}", self.reserved_for_workloads),
        ]
    }
}

/// What kube-controller-manager does with a `status.reservedFor` entry it does not know (neither
/// a pod nor, with the gate, a PodGroup).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum UnknownEntries {
    /// Keep it and still prune pod entries (1.36+, kubernetes/kubernetes#136450).
    #[default]
    Keep,
    /// Fail the claim's sync with "unsupported ReservedFor entry", so its pod entries are never
    /// pruned (≤ 1.35, kubernetes/kubernetes#136406).
    Error,
}

/// Deliberate bugs the reference DRA components can be built with (cargo feature `defects`),
/// each a plausible regression; the DRA table must fail on each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraDefect {
    /// The resourceclaim controller deallocates a claim as soon as one pod entry goes, while
    /// other pod entries remain.
    DeallocateWithPodEntryLeft,
    /// The resourceclaim controller treats a scheduled pod with a deletionTimestamp as done.
    PruneOnDeletionTimestamp,
    /// The podgroupprotection controller removes the finalizer while a non-terminal pod still
    /// references the group.
    PodGroupFinalizerWhilePodRuns,
    /// The scheduler binds a pod even when its PreBind reservation write was refused (the 257th
    /// pod of a claim gets a node).
    BindDespiteFailedReservation,
    /// The kubelet starts pods without checking `status.reservedFor`.
    KubeletSkipsReservationCheck,
    /// The scheduler's PodGroupPostFilter takes the PodGroup's entry off its claim even while
    /// another pod of the group is scheduled (and may be running on those devices).
    UnreserveGroupWithScheduledPod,
}

impl DraDefect {
    /// Every defect, for the report of which rows catch which (harness test `defects`).
    pub const ALL: [DraDefect; 6] = [
        DraDefect::DeallocateWithPodEntryLeft,
        DraDefect::PruneOnDeletionTimestamp,
        DraDefect::PodGroupFinalizerWhilePodRuns,
        DraDefect::BindDespiteFailedReservation,
        DraDefect::KubeletSkipsReservationCheck,
        DraDefect::UnreserveGroupWithScheduledPod,
    ];
}

/// How the reference DRA components behave: the gates of each and kube-controller-manager's
/// handling of unknown entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DraConfig {
    /// The gates of this component.
    pub gates: DraGates,
    /// kube-controller-manager: unknown entries kept (1.36+) or an error (≤ 1.35).
    pub unknown_entries: UnknownEntries,
    /// A deliberate bug (only with the `defects` feature).
    #[cfg(feature = "defects")]
    pub defect: Option<DraDefect>,
}

impl DraConfig {
    /// The configuration of a component running `profile`.
    pub fn for_profile(profile: DraProfile) -> Self {
        Self { gates: profile.gates(), ..Self::default() }
    }

    /// Whether this configuration carries `defect` (never, without the `defects` feature).
    #[inline]
    pub fn defective(&self, defect: DraDefect) -> bool {
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
}

/// A failure of a reference DRA controller talking to the API.
#[derive(Debug, thiserror::Error)]
pub enum DraError {
    /// A request to the API server failed.
    #[error("{what}: {source}")]
    Api {
        /// What the controller was doing.
        what: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// A watch stream ended.
    #[error("the {0} watch ended")]
    WatchEnded(&'static str),
}

pub(crate) fn api_error(what: impl Into<String>) -> impl FnOnce(kube::Error) -> DraError {
    let what = what.into();
    move |source| DraError::Api { what, source }
}

/// Whether an API error is a 404 or 409 (the object went away or changed meanwhile: look again).
pub(crate) fn gone_or_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404 || s.code == 409)
}
