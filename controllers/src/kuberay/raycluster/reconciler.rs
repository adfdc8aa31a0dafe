//! The RayCluster reconcile loop (`RayClusterReconciler.rayClusterReconcile` and
//! `reconcilePods`), driven by a kube-runtime `Controller` watching RayClusters and the pods and
//! services they own.

use super::status::{self, SuspendStatus, condition_true, suspend_status};
use crate::Clock;
use crate::crds::RayCluster;
use crate::events::{EventRecorder, EventType};
use crate::kuberay::common::pods::{head_pod, head_service, head_service_selector, serve_service, worker_pod};
use crate::kuberay::common::validation::{validate_cluster_name, validate_cluster_spec};
use crate::kuberay::*;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ObjectReference, Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use std::sync::Arc;

/// Why a reconcile pass could not finish; the controller requeues after `status_requeue`.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// An API call failed.
    #[error("{context}: {source}")]
    Api {
        context: String,
        #[source]
        source: kube::Error,
    },
    /// A pass stopped on purpose (unhealthy pods deleted, invalid status) and must run again.
    #[error("{0}")]
    Requeue(String),
}

/// Which kind of Ray pod a deletion is about (for KubeRay's event reasons).
#[derive(Clone, Copy)]
enum PodKind {
    Head,
    Worker,
}

/// A failed step of `reconcilePods`, with the `ReplicaFailure` reason it maps to (if any).
struct StepError {
    replica_failure: Option<&'static str>,
    error: ReconcileError,
}

impl From<ReconcileError> for StepError {
    fn from(error: ReconcileError) -> Self {
        Self { replica_failure: None, error }
    }
}

fn api_err(context: impl Into<String>) -> impl FnOnce(kube::Error) -> ReconcileError {
    let context = context.into();
    move |source| ReconcileError::Api { context, source }
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

/// The RayCluster controller: configuration, a client and an event recorder.
pub struct RayClusterReconciler {
    client: kube::Client,
    clock: Clock,
    config: KubeRayConfig,
    recorder: EventRecorder,
    paused: Arc<std::sync::atomic::AtomicBool>,
}

impl RayClusterReconciler {
    /// A reconciler writing through `client`, reading time from `clock`.
    pub fn new(client: kube::Client, clock: Clock, config: KubeRayConfig) -> Self {
        let recorder = EventRecorder::new(client.clone(), clock.clone(), EVENT_COMPONENT);
        Self { client, clock, config, recorder, paused: Arc::default() }
    }

    /// A switch that stops and resumes reconciling (an operator that is down, say for an
    /// upgrade): while it is on, every pass does nothing and looks again a second later.
    pub fn pause_switch(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.paused.clone()
    }

    /// Installs the RayCluster CRD (create, or replace if present) and waits until the server
    /// reports it Established, so RayClusters can be written right after.
    pub async fn install_crd(client: &kube::Client) -> Result<(), ReconcileError> {
        crate::crds::install(client, &[crate::crds::raycluster::raycluster_crd()])
            .await
            .map_err(|e| ReconcileError::Requeue(e.to_string()))
    }

    /// Runs the controller until the watches end (the API server goes away).
    pub async fn run(self) {
        let client = self.client.clone();
        let clusters: Api<RayCluster> = Api::all(client.clone());
        let pods: Api<Pod> = Api::all(client.clone());
        let services: Api<Service> = Api::all(client.clone());
        let ray_nodes = watcher::Config::default().labels(&format!("{RAY_IS_RAY_NODE_LABEL}=yes"));
        let requeue = self.config.status_requeue;
        Controller::new(clusters, watcher::Config::default())
            .owns(pods, ray_nodes)
            .owns(services, watcher::Config::default().labels(RAY_CLUSTER_LABEL))
            .run(
                |rc, me: Arc<Self>| async move { me.reconcile(&rc).await },
                move |_, err, _| {
                    tracing::info!(error = %err, "RayCluster reconcile failed; requeue");
                    Action::requeue(requeue)
                },
                Arc::new(self),
            )
            .for_each(|_| futures::future::ready(()))
            .await;
    }

    async fn event(&self, rc: &RayCluster, kind: EventType, reason: &str, message: String) {
        let r: ObjectReference = rc.object_ref(&());
        self.recorder.publish(&r, kind, reason, message).await;
    }

    fn now(&self) -> Time {
        let t = self.clock.now();
        Time(jiff::Timestamp::from_second(t.as_second()).unwrap_or(t))
    }

    /// One reconcile pass for the cluster `rc` names (read afresh from the API).
    pub async fn reconcile(&self, rc: &RayCluster) -> Result<Action, ReconcileError> {
        if self.paused.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(Action::requeue(std::time::Duration::from_secs(1)));
        }
        let ns = rc.namespace().unwrap_or_else(|| "default".into());
        let api: Api<RayCluster> = Api::namespaced(self.client.clone(), &ns);
        let Some(rc) = api.get_opt(&rc.name_any()).await.map_err(api_err("read the RayCluster"))? else {
            return Ok(Action::await_change());
        };
        let id = format!("{ns}/{}", rc.name_any());
        if rc.spec.managed_by.as_deref().is_some_and(|m| m != KUBERAY_OPERATOR_MANAGER) {
            tracing::info!(cluster = %id, "skipping RayCluster managed by a custom controller");
            return Ok(Action::await_change());
        }
        if let Err(e) = validate_cluster_name(&rc.name_any()) {
            self.event(
                &rc,
                EventType::Warning,
                "InvalidRayClusterMetadata",
                format!("The RayCluster metadata is invalid {id}: {e}"),
            )
            .await;
            return Ok(Action::await_change());
        }
        if let Err(e) = validate_cluster_spec(&rc.spec, &self.config) {
            self.event(
                &rc,
                EventType::Warning,
                "InvalidRayClusterSpec",
                format!("The RayCluster spec is invalid {id}: {e}"),
            )
            .await;
            return Ok(Action::await_change());
        }
        if let Err(e) = validate_upgrade_strategy(&rc) {
            self.event(
                &rc,
                EventType::Warning,
                "InvalidRayClusterSpec",
                format!("The RayCluster UpgradeStrategy is invalid {id}: {e}"),
            )
            .await;
            return Ok(Action::await_change());
        }
        if condition_true(rc.status.as_ref(), status::SUSPENDING)
            && condition_true(rc.status.as_ref(), status::SUSPENDED)
        {
            let e = "invalid RayCluster State: rayv1.RayClusterSuspending and rayv1.RayClusterSuspended conditions should not be both true";
            self.event(
                &rc,
                EventType::Warning,
                "InvalidRayClusterStatus",
                format!("The RayCluster status is invalid {id}, {e}"),
            )
            .await;
            return Err(ReconcileError::Requeue(e.into()));
        }
        if rc.metadata.deletion_timestamp.is_some() {
            return Ok(Action::await_change());
        }

        let mut step = self.reconcile_head_service(&rc).await.map_err(StepError::from);
        if step.is_ok() {
            step = self.reconcile_serve_service(&rc).await.map_err(StepError::from);
        }
        if step.is_ok() {
            step = self.reconcile_pods(&rc).await;
        }

        let pods_api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        let pods = pods_api
            .list(&ListParams::default().labels(&format!("{RAY_CLUSTER_LABEL}={}", rc.name_any())))
            .await
            .map_err(api_err("list the cluster's pods"))?
            .items;
        let svc_api: Api<Service> = Api::namespaced(self.client.clone(), &ns);
        let head_svc = svc_api
            .list(&ListParams::default().labels(&head_service_selector(&rc)))
            .await
            .map_err(api_err("list the head service"))?
            .items
            .into_iter()
            .next();
        let failure = step.as_ref().err().and_then(|e| e.replica_failure.map(|r| (r, e.error.to_string())));
        let new = status::calculate(&rc, &pods, head_svc.as_ref(), failure, step.is_err(), &self.config, self.now());
        let old = rc.status.clone().unwrap_or_default();
        let changed = status::inconsistent(&old, &new);
        if changed {
            let mut updated = rc.clone();
            updated.status = Some(new);
            match api.replace_status(&rc.name_any(), &PostParams::default(), &updated).await {
                Ok(_) => {}
                Err(e) if is_conflict(&e) => return Ok(Action::requeue(self.config.status_requeue)),
                Err(e) => return Err(api_err("update the RayCluster status")(e)),
            }
        }
        match step {
            Err(e) => Err(e.error),
            Ok(()) if changed => Ok(Action::requeue(self.config.status_requeue)),
            Ok(()) => Ok(Action::requeue(self.config.default_requeue)),
        }
    }

    async fn reconcile_head_service(&self, rc: &RayCluster) -> Result<(), ReconcileError> {
        let api: Api<Service> = Api::namespaced(self.client.clone(), &rc.namespace().unwrap_or_default());
        let existing = api
            .list(&ListParams::default().labels(&head_service_selector(rc)))
            .await
            .map_err(api_err("list the head service"))?;
        match existing.items.len() {
            0 => {}
            1 => return Ok(()),
            n => return Err(ReconcileError::Requeue(format!("{n} head service found"))),
        }
        let svc = head_service(rc, &self.config);
        let name = svc.name_any();
        match api.create(&PostParams::default(), &svc).await {
            Ok(_) => {
                self.event(
                    rc,
                    EventType::Normal,
                    "CreatedService",
                    format!("Created service {}/{name}", rc.namespace().unwrap_or_default()),
                )
                .await;
                Ok(())
            }
            Err(e) if matches!(&e, kube::Error::Api(s) if s.code == 409) => Ok(()),
            Err(e) => {
                self.event(
                    rc,
                    EventType::Warning,
                    "FailedToCreateService",
                    format!("Failed creating service {}/{name}, {e}", rc.namespace().unwrap_or_default()),
                )
                .await;
                Err(api_err("create the head service")(e))
            }
        }
    }

    async fn reconcile_serve_service(&self, rc: &RayCluster) -> Result<(), ReconcileError> {
        if rc.annotations().get(ENABLE_SERVE_SERVICE_ANNOTATION).map(String::as_str) != Some("true") {
            return Ok(());
        }
        let api: Api<Service> = Api::namespaced(self.client.clone(), &rc.namespace().unwrap_or_default());
        let svc = serve_service(rc);
        if api.get_opt(&svc.name_any()).await.map_err(api_err("read the serve service"))?.is_some() {
            return Ok(());
        }
        match api.create(&PostParams::default(), &svc).await {
            Ok(_) => Ok(()),
            Err(e) if matches!(&e, kube::Error::Api(s) if s.code == 409) => Ok(()),
            Err(e) => Err(api_err("create the serve service")(e)),
        }
    }

    /// Deletes every pod matching `selector` with one delete-collection, unless all of them are
    /// already terminating (`deleteAllPods`). Returns whether it deleted anything.
    async fn delete_all_pods(&self, rc: &RayCluster, selector: &str) -> Result<bool, kube::Error> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &rc.namespace().unwrap_or_default());
        let pods = api.list(&ListParams::default().labels(selector)).await?;
        let active = pods.items.iter().filter(|p| p.metadata.deletion_timestamp.is_none()).count();
        if active == 0 {
            return Ok(false);
        }
        api.delete_collection(&DeleteParams::default(), &ListParams::default().labels(selector)).await?;
        Ok(true)
    }

    async fn reconcile_pods(&self, rc: &RayCluster) -> Result<(), StepError> {
        let ns = rc.namespace().unwrap_or_default();
        let id = format!("{ns}/{}", rc.name_any());
        let cluster_sel = format!("{RAY_CLUSTER_LABEL}={}", rc.name_any());
        let gate = self.config.gate(KubeRayGate::RayClusterStatusConditions);
        let mut suspend = suspend_status(rc);
        if self.config.defective(Defect::NonAtomicSuspend)
            && suspend == SuspendStatus::Suspending
            && rc.spec.suspend != Some(true)
        {
            suspend = SuspendStatus::None;
        }
        if suspend == SuspendStatus::Suspending || (!gate && rc.spec.suspend == Some(true)) {
            if let Err(e) = self.delete_all_pods(rc, &cluster_sel).await {
                self.event(
                    rc,
                    EventType::Warning,
                    "FailedToDeletePodCollection",
                    format!("Failed deleting Pods due to suspension for RayCluster {id}, {e}"),
                )
                .await;
                return Err(StepError {
                    replica_failure: Some("FailedDeleteAllPods"),
                    error: api_err("delete all pods")(e),
                });
            }
            self.event(
                rc,
                EventType::Normal,
                "DeletedPod",
                format!("Deleted Pods for RayCluster {id} due to suspension"),
            )
            .await;
            return Ok(());
        }
        if gate && (suspend == SuspendStatus::Suspended || rc.spec.suspend == Some(true)) {
            // Suspended, or about to be: the status pass sets Suspending first.
            return Ok(());
        }

        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        let head_sel = format!("{cluster_sel},{RAY_NODE_TYPE_LABEL}=head");
        let head_pods =
            pods.list(&ListParams::default().labels(&head_sel)).await.map_err(api_err("list head pods"))?.items;
        let hash = spec_hash_with(&rc.spec, &self.config);
        if self.should_recreate_for_upgrade(rc, &head_pods, &hash).await {
            if self.config.defective(Defect::CreateDuringRecreate) {
                for p in
                    pods.list(&ListParams::default().labels(&cluster_sel)).await.map_err(api_err("list pods"))?.items
                {
                    let _ = pods.delete(&p.name_any(), &DeleteParams::default()).await;
                }
                let _ = pods.create(&PostParams::default(), &head_pod(rc, &hash, &self.config)).await;
                return Ok(());
            }
            match self.delete_all_pods(rc, &cluster_sel).await {
                Ok(true) => {
                    self.event(rc, EventType::Normal, "DeletedPod", format!("Deleted all Pods for RayCluster {id} because its spec changed and upgradeStrategy is Recreate")).await;
                }
                Ok(false) => {}
                Err(e) => {
                    self.event(
                        rc,
                        EventType::Warning,
                        "FailedToDeletePodCollection",
                        format!("Failed deleting Pods for RayCluster {id} for the Recreate upgradeStrategy, {e}"),
                    )
                    .await;
                    return Err(StepError {
                        replica_failure: Some("FailedDeleteAllPods"),
                        error: api_err("delete all pods")(e),
                    });
                }
            }
            // No pod is created in the pass that deletes them.
            return Ok(());
        }

        match head_pods.len() {
            0 => {
                let pinned = rc.annotations().get(DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION).map(String::as_str)
                    == Some("true")
                    && condition_true(rc.status.as_ref(), status::PROVISIONED);
                if !pinned {
                    let pod = head_pod(rc, &hash, &self.config);
                    match pods.create(&PostParams::default(), &pod).await {
                        Ok(created) => {
                            self.event(
                                rc,
                                EventType::Normal,
                                "CreatedHeadPod",
                                format!("Created head Pod {ns}/{}", created.name_any()),
                            )
                            .await;
                        }
                        Err(e) => {
                            self.event(
                                rc,
                                EventType::Warning,
                                "FailedToCreateHeadPod",
                                format!(
                                    "Failed to create head Pod {ns}/{}, {e}",
                                    pod.metadata
                                        .generate_name
                                        .clone()
                                        .or(pod.metadata.name.clone())
                                        .unwrap_or_default()
                                ),
                            )
                            .await;
                            return Err(StepError {
                                replica_failure: Some("FailedCreateHeadPod"),
                                error: api_err("create the head pod")(e),
                            });
                        }
                    }
                }
            }
            1 => {
                let head = &head_pods[0];
                if let Some(reason) = should_delete_pod(head, "head") {
                    let message = format!("Deleted head Pod {ns}/{}; {reason}", head.name_any());
                    self.delete_pod(rc, &pods, &head.name_any(), PodKind::Head, message).await?;
                    return Err(ReconcileError::Requeue(reason).into());
                }
            }
            n => {
                // More than one head pod (only if someone made one by hand): keep the first.
                tracing::info!(cluster = %id, heads = n, "multiple head pods found; deleting the extra ones");
                for extra in &head_pods[1..] {
                    let message = format!("Deleted head Pod {ns}/{}", extra.name_any());
                    self.delete_pod(rc, &pods, &extra.name_any(), PodKind::Head, message).await?;
                }
            }
        }

        let autoscaling = rc.spec.enable_in_tree_autoscaling == Some(true);
        for group in &rc.spec.worker_group_specs {
            let group_sel =
                format!("{cluster_sel},{RAY_GROUP_LABEL}={},{RAY_NODE_TYPE_LABEL}=worker", group.group_name);
            if group.suspend == Some(true) {
                if let Err(e) = self.delete_all_pods(rc, &group_sel).await {
                    self.event(
                        rc,
                        EventType::Warning,
                        "FailedToDeleteWorkerPodCollection",
                        format!(
                            "Failed deleting worker Pods for suspended group {} of RayCluster {id}, {e}",
                            group.group_name
                        ),
                    )
                    .await;
                    return Err(StepError {
                        replica_failure: Some("FailedDeleteWorkerPod"),
                        error: api_err("delete a suspended group's pods")(e),
                    });
                }
                continue;
            }
            let worker_pods =
                pods.list(&ListParams::default().labels(&group_sel)).await.map_err(api_err("list worker pods"))?.items;
            let mut deleted = std::collections::BTreeSet::new();
            for p in &worker_pods {
                let Some(reason) = should_delete_pod(p, "worker") else { continue };
                let message = format!("Deleted worker Pod {ns}/{}; {reason}", p.name_any());
                if self.delete_pod(rc, &pods, &p.name_any(), PodKind::Worker, message).await? {
                    deleted.insert(p.name_any());
                }
            }
            if !deleted.is_empty() {
                // No creation in a pass that removed unhealthy workers.
                return Err(ReconcileError::Requeue(format!("Delete {} unhealthy worker Pods.", deleted.len())).into());
            }
            // Named pods always go, whatever replicas says; the list is left for the autoscaler to clear.
            for name in group.scale_strategy.iter().flat_map(|s| s.workers_to_delete.iter()) {
                let message = format!("Deleted worker Pod {ns}/{name}");
                if self.delete_pod(rc, &pods, name, PodKind::Worker, message).await? {
                    deleted.insert(name.clone());
                }
            }
            let running: Vec<&Pod> = worker_pods.iter().filter(|p| !deleted.contains(&p.name_any())).collect();
            let desired = status::desired_replicas(group) as i64;
            let diff = desired - running.len() as i64;
            if diff > 0 {
                for _ in 0..diff {
                    let pod = worker_pod(rc, group, &self.config);
                    match pods.create(&PostParams::default(), &pod).await {
                        Ok(created) => {
                            self.event(
                                rc,
                                EventType::Normal,
                                "CreatedWorkerPod",
                                format!("Created worker Pod {ns}/{}", created.name_any()),
                            )
                            .await;
                        }
                        Err(e) => {
                            self.event(
                                rc,
                                EventType::Warning,
                                "FailedToCreateWorkerPod",
                                format!(
                                    "Failed to create worker Pod {ns}/{}, {e}",
                                    pod.metadata.generate_name.clone().unwrap_or_default()
                                ),
                            )
                            .await;
                            return Err(StepError {
                                replica_failure: Some("FailedCreateWorkerPod"),
                                error: api_err("create a worker pod")(e),
                            });
                        }
                    }
                }
            } else if diff < 0 && (!autoscaling || self.config.random_pod_delete) {
                for p in running.iter().take((-diff) as usize) {
                    let message = format!("Deleted Pod {ns}/{}", p.name_any());
                    self.delete_pod(rc, &pods, &p.name_any(), PodKind::Worker, message).await?;
                }
            }
        }
        Ok(())
    }

    /// Deletes one pod as KubeRay does: a Normal event on success, a Warning event and a
    /// `ReplicaFailure`-marked error on failure; a pod already gone is no error. Returns whether
    /// this call deleted it.
    async fn delete_pod(
        &self,
        rc: &RayCluster,
        pods: &Api<Pod>,
        name: &str,
        kind: PodKind,
        message: String,
    ) -> Result<bool, StepError> {
        let (deleted, failed, failure, what) = match kind {
            PodKind::Head => ("DeletedHeadPod", "FailedToDeleteHeadPod", "FailedDeleteHeadPod", "head Pod"),
            PodKind::Worker => ("DeletedWorkerPod", "FailedToDeleteWorkerPod", "FailedDeleteWorkerPod", "worker Pod"),
        };
        match pods.delete(name, &DeleteParams::default()).await {
            Ok(_) => {
                self.event(rc, EventType::Normal, deleted, message).await;
                Ok(true)
            }
            Err(e) if is_not_found(&e) => Ok(false),
            Err(e) => {
                let ns = rc.namespace().unwrap_or_default();
                self.event(rc, EventType::Warning, failed, format!("Failed deleting {what} {ns}/{name}, {e}")).await;
                Err(StepError { replica_failure: Some(failure), error: api_err(format!("delete {what} {name}"))(e) })
            }
        }
    }

    /// `shouldRecreatePodsForUpgrade`: Recreate, a head pod, and a non-empty hash annotation that
    /// differs from the spec's. A head pod stamped by another operator version gets fresh
    /// annotations instead (an operator upgrade alone must not recreate pods).
    async fn should_recreate_for_upgrade(&self, rc: &RayCluster, head_pods: &[Pod], hash: &str) -> bool {
        let recreate = rc.spec.upgrade_strategy.as_ref().and_then(|u| u.type_.as_deref()) == Some("Recreate");
        let Some(head) = head_pods.first().filter(|_| recreate) else { return false };
        let annotations = head.annotations();
        let version = annotations.get(KUBERAY_VERSION_ANNOTATION).map(String::as_str).unwrap_or("");
        if !version.is_empty()
            && version != self.config.kuberay_version
            && !self.config.defective(Defect::NoVersionSkip)
        {
            let api: Api<Pod> = Api::namespaced(self.client.clone(), &rc.namespace().unwrap_or_default());
            let mut pod = head.clone();
            let a = pod.metadata.annotations.get_or_insert_with(BTreeMap::new);
            a.insert(UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION.into(), hash.into());
            a.insert(KUBERAY_VERSION_ANNOTATION.into(), self.config.kuberay_version.clone());
            if let Err(e) = api.replace(&head.name_any(), &PostParams::default(), &pod).await {
                tracing::info!(error = %e, pod = %head.name_any(), "failed to refresh the head pod's annotations");
            }
            return false;
        }
        let stamped = annotations.get(UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION).map(String::as_str).unwrap_or("");
        !stamped.is_empty() && stamped != hash
    }
}

/// `shouldDeletePod`: a pod that will not come back by itself. Failed/Succeeded pods, and
/// Running pods whose Ray container terminated, unless restartPolicy Always will restart them.
/// Returns the reason to delete.
fn should_delete_pod(pod: &Pod, node_type: &str) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    let always = spec.restart_policy.as_deref().unwrap_or("Always") == "Always";
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("");
    let policy = spec.restart_policy.clone().unwrap_or_else(|| "Always".into());
    if phase == "Failed" || phase == "Succeeded" {
        return (!always).then(|| {
            format!(
                "The {node_type} Pod {} status is {phase} which is a terminal state and it will not restart. KubeRay will delete the Pod and create new Pods in the next reconciliation if necessary.",
                pod.name_any()
            )
        });
    }
    let ray_container = spec.containers.first().map(|c| c.name.clone()).unwrap_or_default();
    let terminated = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == ray_container))
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.as_ref());
    if phase == "Running" && terminated.is_some() && !always {
        return Some(format!(
            "The Pod status of the {node_type} Pod {} is Running, and the Ray container terminated. The container is unable to restart due to its restart policy {policy}, so KubeRay will delete it.",
            pod.name_any()
        ));
    }
    None
}

/// `ValidateRayClusterUpgradeOptions`.
fn validate_upgrade_strategy(rc: &RayCluster) -> Result<(), String> {
    let Some(t) = rc.spec.upgrade_strategy.as_ref().and_then(|u| u.type_.as_deref()) else { return Ok(()) };
    if let Some(origin) =
        rc.labels().get(RAY_ORIGINATED_FROM_CRD_LABEL).filter(|o| *o == "RayJob" || *o == "RayService")
    {
        return Err(format!("upgradeStrategy cannot be set when RayCluster is created by {origin}"));
    }
    if t != "Recreate" && t != "None" {
        return Err(format!("invalid value for UpgradeStrategy Type: {t:?}, must be one of [Recreate None]"));
    }
    Ok(())
}
