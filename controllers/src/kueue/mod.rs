//! The Kueue reference controller: queues and quota, admission, Workload slicing, and the job
//! framework for RayCluster, RayJob and RayService, modelled on Kueue v0.19.2 (API `v1beta2`) with PR
//! 11264's RayService upgrade gate (`kueue@PR` in kueue.md); the fix of kueue#15661 (after v0.19.2) is a setting, off.
//!
//! One level-triggered loop reads every ResourceFlavor, ClusterQueue, Cohort, LocalQueue,
//! WorkloadPriorityClass, Workload, RayCluster, RayService, RayJob and every pod Kueue stamped
//! with a PodSet label and, per pass:
//! 1. runs the job framework for each Ray job with a queue name ([`jobs`]): Workload creation
//!    (or slices, for elastic jobs), start and stop, eviction, the child-job rule, and for a
//!    RayService under the gate the unsuspend of admitted children with the race guard;
//! 2. admits pending Workloads per ClusterQueue ([`scheduler`]): flavor assignment in order,
//!    nominal quota, borrowing within a cohort (`borrowingLimit`, `lendingLimit`; one level: the
//!    member ClusterQueues and a Cohort object's own quota, its `parentName` not followed),
//!    BestEffortFIFO/StrictFIFO order, delta quota and flavor pinning of replacement slices,
//!    preemption within the ClusterQueue and `reclaimWithinCohort` from borrowing members of its
//!    cohort;
//! 3. removes the elastic scheduling gate from pods up to what the chain's admitted slice grants
//!    ([`ungater`], the ElasticJobUngater);
//! 4. writes the ClusterQueue and LocalQueue status.
//!
//! Kueue's webhooks are pure functions the harness registers with the fake API server as
//! in-process webhooks: the Ray jobs' defaulting (suspend, the elastic scheduling gate, the
//! default LocalQueue) in [`defaulting`], the validating job webhooks' create and update checks
//! and the Workload webhook's PodSet immutability in [`webhook`]. Not modelled:
//! hierarchical cohorts (Cohort `parentName`), `borrowWithinCohort`, fair sharing,
//! admission checks, TAS, MultiKueue, `waitForPodsReady`, partial admission, and elastic RayJobs
//! (their custom annotations and `UpdatePodSets`).

pub mod defaulting;
pub mod jobs;
pub mod objects;
pub mod podsets;
pub mod scheduler;
pub mod ungater;
pub mod webhook;

use crate::Clock;
use crate::events::{EventRecorder, EventType};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::reflector::Store;
use objects::{Kind, World};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// The Kueue release the reference controller models.
pub const MODELLED_VERSION: &str = "v0.19.2";
/// Job label naming the LocalQueue.
pub const QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/queue-name";
/// Job label naming a WorkloadPriorityClass.
pub const PRIORITY_CLASS_LABEL: &str = "kueue.x-k8s.io/priority-class";
/// Job and Workload annotation opting in to workload slicing.
pub const ELASTIC_JOB_ANNOTATION: &str = "kueue.x-k8s.io/elastic-job";
/// Slice annotation: the name of the first slice of the chain.
pub const WORKLOAD_SLICE_NAME_ANNOTATION: &str = "kueue.x-k8s.io/workload-slice-name";
/// Slice annotation: `<namespace>/<name>` of the slice a scale-up slice replaces.
pub const WORKLOAD_SLICE_REPLACEMENT_FOR_ANNOTATION: &str = "kueue.x-k8s.io/workload-slice-replacement-for";
/// Workload label: the job's UID.
pub const JOB_UID_LABEL: &str = "kueue.x-k8s.io/job-uid";
/// Workload finalizer.
pub const RESOURCE_IN_USE_FINALIZER: &str = "kueue.x-k8s.io/resource-in-use";
/// Template annotation: the Workload that admitted the pods.
pub const WORKLOAD_ANNOTATION: &str = "kueue.x-k8s.io/workload";
/// Template label: the PodSet's name.
pub const PODSET_LABEL: &str = "kueue.x-k8s.io/podset";
/// Template label (AssignQueueLabelsForPods): the Workload's LocalQueue.
pub const LOCAL_QUEUE_LABEL: &str = "kueue.x-k8s.io/local-queue-name";
/// Template label (AssignQueueLabelsForPods): the ClusterQueue that admitted the Workload.
pub const CLUSTER_QUEUE_LABEL: &str = "kueue.x-k8s.io/cluster-queue-name";
/// Ray job annotation: the computed PodSets' counts, `[{"name":…,"count":…}]`.
pub const REPLICA_SIZES_ANNOTATION: &str = "kueue.x-k8s.io/raycluster-podset-replica-sizes";
/// Ray job annotation: the generation of the RayService's active RayCluster.
pub const RAYCLUSTER_GENERATION_ANNOTATION: &str = "kueue.x-k8s.io/raycluster-generation";

/// Deliberate bugs the reference Kueue can be built with (cargo feature `defects`), each a
/// plausible regression of PR 11264's gate; the Kueue table must fail on each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KueueDefect {
    /// Suspended children are unsuspended as soon as the RayService runs, whether or not the
    /// latest slice is admitted.
    UnsuspendBeforeSliceAdmitted,
    /// The RayService's PodSets come from its first child only, not the union over children.
    PodSetsFromOneChild,
    /// No race guard: the children are unsuspended when the latest visible slice is admitted
    /// even if it covers fewer pods than the children need.
    NoRaceGuard,
    /// A ClusterQueue in a cohort borrows whatever the cohort has unused, past its
    /// `borrowingLimit`.
    BorrowingPastTheLimit,
    /// A RayJob's PodSets leave out the submitter (`K8sJobMode`), so its pod is never charged.
    RayJobSubmitterNotCounted,
    /// The elastic ungater grants what the newest slice asks for, admitted or not, so a
    /// scale-up's pods run before their slice is admitted.
    UngateBeforeSliceAdmitted,
    /// `reclaimWithinCohort` is ignored: a ClusterQueue never takes back the quota other
    /// members of its cohort borrow.
    NoReclaimWithinCohort,
    /// A Cohort object's own quota is not lent to its ClusterQueues.
    CohortQuotaNotLent,
    /// The Workload webhook lets any change of a reserved Workload's PodSets through.
    ReservedPodSetsMutable,
    /// The defaulting webhook leaves an elastic job's templates without the elastic scheduling
    /// gate.
    ElasticGateNotDefaulted,
}

impl KueueDefect {
    /// Every defect, for the report of which rows catch which (harness test `defects`).
    pub const ALL: [KueueDefect; 10] = [
        KueueDefect::UnsuspendBeforeSliceAdmitted,
        KueueDefect::PodSetsFromOneChild,
        KueueDefect::NoRaceGuard,
        KueueDefect::BorrowingPastTheLimit,
        KueueDefect::RayJobSubmitterNotCounted,
        KueueDefect::UngateBeforeSliceAdmitted,
        KueueDefect::NoReclaimWithinCohort,
        KueueDefect::CohortQuotaNotLent,
        KueueDefect::ReservedPodSetsMutable,
        KueueDefect::ElasticGateNotDefaulted,
    ];
}

/// How the reference Kueue runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KueueConfig {
    /// Feature gate `ElasticJobsViaWorkloadSlices` (beta, on since v0.18).
    pub elastic_jobs: bool,
    /// PR 11264's RayService upgrade gate (top-level suspend as the stop switch, the nested
    /// suspend as a persistent template gate, PodSets as the union over children, unsuspend of
    /// admitted children). Off: v0.19.2's RayService integration (nested suspend only, PodSets
    /// from the template).
    pub rayservice_upgrade_gate: bool,
    /// The kueue#15661 fix (merged after v0.19.2): an evicted slice that still holds quota goes
    /// back to the job reconciler (which stops the job first) instead of being finished by
    /// normalisation. Off: v0.19.2, where `normalizeActiveSlices` finishes the evicted slice as
    /// replaced and the job keeps running (kueue#15399).
    pub evicted_slice_fix: bool,
    /// A deliberate bug (only with the `defects` feature).
    #[cfg(feature = "defects")]
    pub defect: Option<KueueDefect>,
}

impl Default for KueueConfig {
    fn default() -> Self {
        Self {
            elastic_jobs: true,
            rayservice_upgrade_gate: true,
            evicted_slice_fix: false,
            #[cfg(feature = "defects")]
            defect: None,
        }
    }
}

impl KueueConfig {
    /// Whether this configuration carries `defect` (never, without the `defects` feature).
    #[inline]
    pub fn defective(&self, defect: KueueDefect) -> bool {
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

/// A failure of the reference Kueue talking to the API.
#[derive(Debug, thiserror::Error)]
pub enum KueueError {
    /// A watch ended.
    #[error("the watch of {0:?} ended")]
    WatchEnded(Kind),
    /// A request failed.
    #[error("{what}: {source}")]
    Api {
        /// What was being done.
        what: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// The reference Kueue controller manager; see the module docs.
pub struct KueueController {
    client: kube::Client,
    clock: Clock,
    config: KueueConfig,
    recorder: Arc<EventRecorder>,
}

impl KueueController {
    /// A controller talking to the API through `client`.
    pub fn new(client: kube::Client, clock: Clock, config: KueueConfig) -> Self {
        let recorder = Arc::new(EventRecorder::new(client.clone(), clock.clone(), "kueue-admission"));
        Self { client, clock, config, recorder }
    }

    /// Installs the Kueue CRDs and the Ray CRDs it watches.
    pub async fn install_crds(client: &kube::Client) -> Result<(), crate::crds::CrdInstallError> {
        objects::install_crds(client).await?;
        crate::crds::install(
            client,
            [
                crate::crds::raycluster::raycluster_crd(),
                crate::crds::rayservice::rayservice_crd(),
                crate::crds::rayjob::rayjob_crd(),
            ],
        )
        .await
    }

    /// Runs until a watch ends; drop the future to stop it.
    pub async fn run(self) -> Result<(), KueueError> {
        let mut stores: Vec<(Kind, Store<DynamicObject>)> = Vec::new();
        let mut streams = Vec::new();
        for kind in Kind::ALL {
            let (store, stream) = objects::cache(&self.client, kind);
            stores.push((kind, store));
            streams.push(stream);
        }
        let mut events = futures::stream::select_all(streams);
        let upkeep = self.recorder.clone();
        let _series = AbortOnDrop(tokio::spawn(async move { upkeep.run_series_upkeep().await }));
        let mut retry = false;
        loop {
            let wait = if retry { Duration::from_secs(1) } else { Duration::from_secs(3600) };
            tokio::select! {
                next = events.next() => {
                    if next.is_none() {
                        return Err(KueueError::WatchEnded(Kind::Workload));
                    }
                    while let Some(Some(())) = events.next().now_or_never() {}
                }
                _ = tokio::time::sleep(wait) => {}
            }
            if !stores.iter().all(|(_, s)| crate::watch::store_ready(s)) {
                continue;
            }
            let mut world = World::from_stores(&stores);
            retry = match self.pass(&mut world).await {
                Ok(again) => again,
                Err(e) => {
                    tracing::debug!(error = %e, "kueue pass");
                    true
                }
            };
        }
    }

    /// One pass over everything; `Ok(true)` asks for another pass soon (a conflict, or a step
    /// that waits for its own write to be seen).
    async fn pass(&self, world: &mut World) -> Result<bool, KueueError> {
        let mut again = false;
        again |= self.reconcile_jobs(world).await?;
        again |= self.schedule(world).await?;
        again |= self.ungate_elastic_pods(world).await?;
        self.write_queue_status(world).await?;
        Ok(again)
    }

    fn now(&self) -> String {
        self.clock.now_rfc3339()
    }

    /// Merge-patches an object (its status with `status`), with the object's resourceVersion as
    /// a precondition when `rv` is given, and puts the answer into `world`.
    async fn patch(
        &self,
        world: &mut World,
        kind: Kind,
        obj: &Value,
        mut patch: Value,
        status: bool,
        rv: bool,
    ) -> Result<Value, KueueError> {
        let (ns, name) = objects::key_of(obj);
        if rv {
            patch["metadata"]["resourceVersion"] =
                obj.pointer("/metadata/resourceVersion").cloned().unwrap_or(Value::Null);
        }
        let api = kind.api(&self.client, Some(&ns));
        let pp = PatchParams::default();
        let answer = if status {
            api.patch_status(&name, &pp, &Patch::Merge(&patch)).await
        } else {
            api.patch(&name, &pp, &Patch::Merge(&patch)).await
        };
        let answer =
            answer.map_err(|source| KueueError::Api { what: format!("patch {kind:?} {ns}/{name}"), source })?;
        let v = serde_json::to_value(&answer).unwrap_or(Value::Null);
        world.put(kind, v.clone());
        Ok(v)
    }

    /// Creates an object and puts the answer into `world`.
    async fn create(&self, world: &mut World, kind: Kind, obj: &Value) -> Result<Value, KueueError> {
        let (ns, name) = objects::key_of(obj);
        let api = kind.api(&self.client, Some(&ns));
        let dynamic: DynamicObject = serde_json::from_value(obj.clone()).map_err(|e| KueueError::Api {
            what: format!("build {kind:?} {ns}/{name}"),
            source: kube::Error::SerdeError(e),
        })?;
        let answer = api
            .create(&PostParams::default(), &dynamic)
            .await
            .map_err(|source| KueueError::Api { what: format!("create {kind:?} {ns}/{name}"), source })?;
        let v = serde_json::to_value(&answer).unwrap_or(Value::Null);
        world.put(kind, v.clone());
        Ok(v)
    }

    async fn event(&self, kind: Kind, obj: &Value, type_: EventType, reason: &str, action: &str, note: String) {
        let ar = kind.resource();
        let (ns, name) = objects::key_of(obj);
        let reference = ObjectReference {
            api_version: Some(ar.api_version.clone()),
            kind: Some(ar.kind.clone()),
            name: Some(name),
            namespace: (!ns.is_empty()).then_some(ns),
            uid: obj.pointer("/metadata/uid").and_then(Value::as_str).map(String::from),
            resource_version: obj.pointer("/metadata/resourceVersion").and_then(Value::as_str).map(String::from),
            field_path: None,
        };
        self.recorder.eventf(&reference, None, type_, reason, action, note).await;
    }
}

/// Aborts the event recorder's series upkeep when the controller stops.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
