//! The RayCluster reconcile loop (`RayClusterReconciler.rayClusterReconcile` and
//! `reconcilePods`), driven by a kube-runtime `Controller` watching RayClusters and the pods and
//! services they own, with controller-runtime's triggers: a RayCluster wakes the controller only
//! when its generation, labels or annotations change (a status write does not), an error is
//! retried with per-object exponential back-off (5 ms doubling, up to 1000 s), a pass that
//! changed the status looks again after 2 s, and any other pass after 300 s.

use super::status::{self, SuspendStatus, condition_true, suspend_status};
use crate::Clock;
use crate::crds::{RayCluster, WorkerGroupSpec};
use crate::events::{EventRecorder, EventType, reference};
use crate::kuberay::common::cache::Cached;
use crate::kuberay::common::pods::{
    ReplicaIndex, head_pod, head_service, head_service_selector, headless_service, headless_service_selector,
    serve_service, worker_pod,
};
use crate::kuberay::common::validation::{validate_cluster_name, validate_cluster_spec};
use crate::kuberay::*;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ContainerStateTerminated, Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, watcher};
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

/// Why a reconcile pass could not finish; the controller retries with back-off.
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

/// KubeRay's event actions (`utils.K8sEventAction`).
mod action {
    pub const CREATE: &str = "Create";
    pub const DELETE: &str = "Delete";
    pub const VALIDATE: &str = "Validate";
}

/// A failed step of `reconcilePods`, with the `ReplicaFailure` reason it maps to (if any).
struct StepError {
    replica_failure: Option<&'static str>,
    error: ReconcileError,
}

impl StepError {
    /// `errstd.Join(utils.ErrFailed..., err)`: the reason marks the `ReplicaFailure` condition,
    /// whose message is the joined error, `<reason>\n<error>`.
    fn replica(reason: &'static str, e: kube::Error) -> Self {
        Self { replica_failure: Some(reason), error: ReconcileError::Requeue(format!("{reason}\n{}", go_error(&e))) }
    }

    fn plain(message: String) -> Self {
        Self { replica_failure: None, error: ReconcileError::Requeue(message) }
    }
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

/// What Go's `err.Error()` says for an API error: the Status message.
fn go_error(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

/// Go's `%v` of a `[]string`: `[a b c]`.
fn go_strings(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

/// Go's `%v` of a `metav1.Time` (`time.Time.String()` in UTC).
fn go_time(t: Option<&Time>) -> String {
    match t {
        Some(t) => t.0.strftime("%Y-%m-%d %H:%M:%S +0000 UTC").to_string(),
        None => "0001-01-01 00:00:00 +0000 UTC".into(),
    }
}

/// Go's `%v` of a `*corev1.ContainerStateTerminated` (the generated `String()`, `nil` for nil).
fn go_terminated(t: Option<&ContainerStateTerminated>) -> String {
    let Some(t) = t else { return "nil".into() };
    format!(
        "&ContainerStateTerminated{{ExitCode:{},Signal:{},Reason:{},Message:{},StartedAt:{},FinishedAt:{},ContainerID:{},}}",
        t.exit_code,
        t.signal.unwrap_or(0),
        t.reason.as_deref().unwrap_or(""),
        t.message.as_deref().unwrap_or(""),
        go_time(t.started_at.as_ref()),
        go_time(t.finished_at.as_ref()),
        t.container_id.as_deref().unwrap_or(""),
    )
}

/// `getRayContainerStateTerminated`: the Ray container (the first one) found by name among the
/// container statuses; none found counts as not terminated.
fn ray_container_terminated(pod: &Pod) -> Option<&ContainerStateTerminated> {
    let name = pod.spec.as_ref()?.containers.first()?.name.as_str();
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == name)?
        .state
        .as_ref()?
        .terminated
        .as_ref()
}

fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

fn restart_policy(pod: &Pod) -> &str {
    pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()).unwrap_or("")
}

/// `; Pod status: ...; Pod restart policy: ...; Ray container terminated status: ...`, the tail of
/// KubeRay's messages about a deleted unhealthy pod.
fn pod_state(pod: &Pod) -> String {
    format!(
        "Pod status: {}; Pod restart policy: {}; Ray container terminated status: {}",
        phase(pod),
        restart_policy(pod),
        go_terminated(ray_container_terminated(pod))
    )
}

/// What the scale expectations wait for (`expectations.ScaleAction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ScaleAction {
    Create,
    Delete,
}

/// One expected pod (`expectations.rayPod`).
#[derive(Debug, Clone)]
struct ExpectedPod {
    cluster: String,
    /// The worker group, or `""` for the head.
    group: String,
    action: ScaleAction,
    recorded: tokio::time::Instant,
}

/// `expectations.RayClusterScaleExpectation`: after creating or deleting a pod, its group is not
/// reconciled again until the pod exists (at most 30 s) or is gone for good (not merely
/// terminating), so that no pass acts on a view that does not show its own writes yet.
#[derive(Default)]
struct ScaleExpectations {
    /// By `namespace/pod`.
    items: Mutex<HashMap<String, ExpectedPod>>,
}

/// `expectations.ExpectationsTimeout`.
const EXPECTATIONS_TIMEOUT: Duration = Duration::from_secs(30);
/// The head's group in the expectations.
const HEAD_GROUP: &str = "";

impl ScaleExpectations {
    fn expect(&self, ns: &str, cluster: &str, group: &str, pod: &str, action: ScaleAction) {
        let item =
            ExpectedPod { cluster: cluster.into(), group: group.into(), action, recorded: tokio::time::Instant::now() };
        self.items.lock().insert(format!("{ns}/{pod}"), item);
    }

    /// `IsSatisfied`: every expected pod of the group is there (or timed out) or gone; those
    /// that are satisfied are forgotten, and the first that is not stops the check.
    async fn satisfied(&self, pods: &PodReads<'_>, ns: &str, cluster: &str, group: &str) -> bool {
        let mut pending: Vec<(String, ExpectedPod)> = self
            .items
            .lock()
            .iter()
            .filter(|(k, e)| k.starts_with(&format!("{ns}/")) && e.cluster == cluster && e.group == group)
            .map(|(k, e)| (k.clone(), e.clone()))
            .collect();
        pending.sort_by(|a, b| a.0.cmp(&b.0));
        for (key, expected) in pending {
            let name = key.split_once('/').map(|(_, n)| n).unwrap_or_default();
            let exists = match pods.cache.get(pods.client, ns, name).await {
                Ok(p) => p.is_some(),
                Err(_) => return false,
            };
            let done = match expected.action {
                ScaleAction::Create => exists || expected.recorded + EXPECTATIONS_TIMEOUT < tokio::time::Instant::now(),
                ScaleAction::Delete => !exists,
            };
            if !done {
                return false;
            }
            self.items.lock().remove(&key);
        }
        true
    }

    /// `Delete`: forget every expectation of the cluster.
    fn forget_cluster(&self, ns: &str, cluster: &str) {
        self.items.lock().retain(|k, e| !(k.starts_with(&format!("{ns}/")) && e.cluster == cluster));
    }
}

/// The RayCluster controller: configuration, a client and an event recorder.
pub struct RayClusterReconciler {
    client: kube::Client,
    clock: Clock,
    config: KubeRayConfig,
    recorder: EventRecorder,
    paused: Arc<std::sync::atomic::AtomicBool>,
    expectations: ScaleExpectations,
    /// Consecutive failed passes per cluster, for the back-off of controller-runtime's
    /// default rate limiter.
    failures: Mutex<HashMap<ObjectRef<RayCluster>, u32>>,
    /// Seeds the random suffixes of multi-host replica names.
    random: Mutex<u64>,
    /// The informers every read of a pass is answered from (KubeRay's manager cache: pods
    /// only those labelled as Ray nodes, `managercache.go`).
    cache: Informers,
}

struct Informers {
    clusters: Cached<RayCluster>,
    pods: Cached<Pod>,
    services: Cached<Service>,
}

/// The pod informer with the client its misses are confirmed through.
struct PodReads<'a> {
    cache: &'a Cached<Pod>,
    client: &'a kube::Client,
}

/// Controller-runtime's `GenerationChangedPredicate || LabelChangedPredicate ||
/// AnnotationChangedPredicate` on RayClusters: a change of anything else (the status) does not
/// wake the controller.
fn generation_labels_annotations(rc: &RayCluster) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    rc.metadata.generation.hash(&mut h);
    rc.metadata.labels.hash(&mut h);
    rc.metadata.annotations.hash(&mut h);
    Some(h.finish())
}

impl RayClusterReconciler {
    /// A reconciler writing through `client`, reading time from `clock`.
    pub fn new(client: kube::Client, clock: Clock, config: KubeRayConfig) -> Self {
        let recorder = EventRecorder::new(client.clone(), clock.clone(), EVENT_COMPONENT);
        let seed = clock.now().as_nanosecond() as u64 | 1;
        Self {
            client,
            clock,
            config,
            recorder,
            paused: Arc::default(),
            expectations: ScaleExpectations::default(),
            failures: Mutex::default(),
            random: Mutex::new(seed),
            cache: Informers {
                clusters: Cached::new(watcher::Config::default()),
                pods: Cached::new(
                    watcher::Config::default().labels(&format!("{RAY_NODE_TYPE_LABEL} in (head,worker,redis-cleanup)")),
                ),
                services: Cached::new(watcher::Config::default()),
            },
        }
    }

    /// A switch that stops and resumes reconciling (an operator that is down, say for an
    /// upgrade): while it is on, every pass does nothing and looks again a second later.
    pub fn pause_switch(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.paused.clone()
    }

    /// Installs the RayCluster CRD (create, or replace if present) and waits until the server
    /// reports it Established, so RayClusters can be written right after.
    pub async fn install_crd(client: &kube::Client) -> Result<(), ReconcileError> {
        crate::crds::install(client, [crate::crds::raycluster::raycluster_crd()])
            .await
            .map_err(|e| ReconcileError::Requeue(e.to_string()))
    }

    /// Runs the controller until the watches end (the API server goes away).
    pub async fn run(self) {
        let client = self.client.clone();
        let (Some(clusters), Some(pods), Some(services)) = (
            self.cache.clusters.reflect(&client),
            self.cache.pods.reflect(&client),
            self.cache.services.reflect(&client),
        ) else {
            tracing::error!("the RayCluster controller runs once");
            return;
        };
        let reader = self.cache.clusters.store();
        let trigger = clusters.predicate_filter(generation_labels_annotations, Default::default());
        let me = Arc::new(self);
        let controller = Controller::for_stream(trigger, reader)
            .owns_stream(pods)
            .owns_stream(services)
            .run(
                // Boxed: a pass is a large future, which the runner would copy to spawn it.
                |rc, me: Arc<Self>| async move { Box::pin(me.reconcile(&rc)).await },
                |rc, err, me: Arc<Self>| {
                    tracing::info!(error = %err, "RayCluster reconcile failed; requeue");
                    let mut failures = me.failures.lock();
                    let n = failures.entry(ObjectRef::from_obj(rc.as_ref())).or_insert(0);
                    let backoff = Duration::from_millis(5).saturating_mul(1u32 << (*n).min(30));
                    *n += 1;
                    Action::requeue(backoff.min(Duration::from_secs(1000)))
                },
                me.clone(),
            )
            .for_each(|_| futures::future::ready(()));
        tokio::select! {
            () = controller => {}
            () = me.recorder.run_series_upkeep() => {}
        }
    }

    async fn event(&self, rc: &RayCluster, kind: EventType, reason: &str, action: &str, message: String) {
        self.recorder.eventf(&reference(rc), None, kind, reason, action, message).await;
    }

    fn now(&self) -> Time {
        let t = self.clock.now();
        Time(jiff::Timestamp::from_second(t.as_second()).unwrap_or(t))
    }

    /// One reconcile pass for the cluster `rc` names (read from the informer, as `r.Get` does).
    pub async fn reconcile(&self, rc: &RayCluster) -> Result<Action, ReconcileError> {
        if self.paused.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(Action::requeue(Duration::from_secs(1)));
        }
        let result = self.reconcile_cluster(rc).await;
        if result.is_ok() {
            self.failures.lock().remove(&ObjectRef::from_obj(rc));
        }
        result
    }

    async fn reconcile_cluster(&self, rc: &RayCluster) -> Result<Action, ReconcileError> {
        let ns = rc.namespace().unwrap_or_else(|| "default".into());
        let api: Api<RayCluster> = Api::namespaced(self.client.clone(), &ns);
        let cached = self.cache.clusters.get(&self.client, &ns, &rc.name_any()).await;
        let Some(rc) = cached.map_err(api_err("read the RayCluster"))?.map(Arc::unwrap_or_clone) else {
            self.expectations.forget_cluster(&ns, &rc.name_any());
            return Ok(Action::await_change());
        };
        let id = format!("{ns}/{}", rc.name_any());
        if rc.spec.managed_by.as_deref().is_some_and(|m| m != KUBERAY_OPERATOR_MANAGER) {
            tracing::info!(cluster = %id, "skipping RayCluster managed by a custom controller");
            return Ok(Action::await_change());
        }
        if let Err(e) = validate_cluster_name(&rc.name_any()) {
            let message = format!("The RayCluster metadata is invalid {id}: {e}");
            self.event(&rc, EventType::Warning, "InvalidRayClusterMetadata", action::VALIDATE, message).await;
            return Ok(Action::await_change());
        }
        if let Err(e) = validate_cluster_spec(&rc.spec, &self.config) {
            let message = format!("The RayCluster spec is invalid {id}: {e}");
            self.event(&rc, EventType::Warning, "InvalidRayClusterSpec", action::VALIDATE, message).await;
            return Ok(Action::await_change());
        }
        if let Some(warning) = autoscaler_v1_restart_policy_warning(&rc) {
            let message = format!("RayCluster spec warning {id}: {warning}");
            self.event(&rc, EventType::Warning, "InvalidRayClusterSpec", action::VALIDATE, message).await;
        }
        if let Err(e) = validate_upgrade_strategy(&rc) {
            let message = format!("The RayCluster UpgradeStrategy is invalid {id}: {e}");
            self.event(&rc, EventType::Warning, "InvalidRayClusterSpec", action::VALIDATE, message).await;
            return Ok(Action::await_change());
        }
        if condition_true(rc.status.as_ref(), status::SUSPENDING)
            && condition_true(rc.status.as_ref(), status::SUSPENDED)
        {
            let e = "invalid RayCluster State: rayv1.RayClusterSuspending and rayv1.RayClusterSuspended conditions should not be both true";
            let message = format!("The RayCluster status is invalid {id}, {e}");
            self.event(&rc, EventType::Warning, "InvalidRayClusterStatus", action::VALIDATE, message).await;
            return Err(ReconcileError::Requeue(e.into()));
        }
        if rc.metadata.deletion_timestamp.is_some() {
            return Ok(Action::await_change());
        }

        let mut step = self.reconcile_head_service(&rc).await;
        if step.is_ok() {
            step = self.reconcile_headless_service(&rc).await;
        }
        if step.is_ok() {
            step = self.reconcile_serve_service(&rc).await.map_err(StepError::from);
        }
        if step.is_ok() {
            step = self.reconcile_pods(&rc).await;
        }

        let pods = self
            .cache
            .pods
            .list(&self.client, &ns, &format!("{RAY_CLUSTER_LABEL}={}", rc.name_any()))
            .await
            .map_err(api_err("list the cluster's pods"))?;
        let head_services = self
            .cache
            .services
            .list(&self.client, &ns, &head_service_selector(&rc))
            .await
            .map_err(api_err("list the head service"))?;
        let failure = step.as_ref().err().and_then(|e| e.replica_failure.map(|r| (r, e.error.to_string())));
        let calculated =
            status::calculate(&rc, &pods, &head_services, failure, step.is_err(), &self.config, self.now());
        let mut changed = false;
        let mut update_error = None;
        match &calculated {
            Err(e) => tracing::info!(cluster = %id, error = %e, "got an error when calculating the new status"),
            Ok(new) => {
                changed = status::inconsistent(&rc.status.clone().unwrap_or_default(), new);
                if changed {
                    let mut updated = rc.clone();
                    updated.status = Some(new.clone());
                    if let Err(e) = api.replace_status(&rc.name_any(), &PostParams::default(), &updated).await {
                        update_error = Some(api_err("update the RayCluster status")(e));
                    }
                }
            }
        }
        // Errors in order: the pass, the status calculation, the status update.
        if let Err(e) = step {
            return Err(e.error);
        }
        if let Err(e) = calculated {
            return Err(ReconcileError::Requeue(e));
        }
        if let Some(e) = update_error {
            return Err(e);
        }
        Ok(Action::requeue(if changed { self.config.status_requeue } else { self.config.default_requeue }))
    }

    /// Creates a service KubeRay owns (`createService`): an event either way.
    async fn create_service(&self, rc: &RayCluster, svc: Service) -> Result<(), StepError> {
        let ns = rc.namespace().unwrap_or_default();
        let api: Api<Service> = Api::namespaced(self.client.clone(), &ns);
        let name = svc.name_any();
        match api.create(&PostParams::default(), &svc).await {
            Ok(_) => {
                let message = format!("Created service {ns}/{name}");
                self.event(rc, EventType::Normal, "CreatedService", action::CREATE, message).await;
                Ok(())
            }
            Err(e) => {
                let message = format!("Failed creating service {ns}/{name}, {}", go_error(&e));
                self.event(rc, EventType::Warning, "FailedToCreateService", action::CREATE, message).await;
                Err(api_err(format!("create service {name}"))(e).into())
            }
        }
    }

    async fn reconcile_head_service(&self, rc: &RayCluster) -> Result<(), StepError> {
        let existing = self
            .cache
            .services
            .list(&self.client, &rc.namespace().unwrap_or_default(), &head_service_selector(rc))
            .await
            .map_err(api_err("list the head service"))?;
        match existing.len() {
            0 => self.create_service(rc, head_service(rc, &self.config)).await,
            1 => Ok(()),
            n => Err(StepError::plain(format!("{n} head service found"))),
        }
    }

    /// `reconcileHeadlessService`: a cluster with a multi-host group gets `<cluster>-headless`.
    async fn reconcile_headless_service(&self, rc: &RayCluster) -> Result<(), StepError> {
        if !rc.spec.worker_group_specs.iter().any(|g| g.num_of_hosts.unwrap_or(1) > 1) {
            return Ok(());
        }
        let existing = self
            .cache
            .services
            .list(&self.client, &rc.namespace().unwrap_or_default(), &headless_service_selector(rc))
            .await
            .map_err(api_err("list the headless service"))?;
        if !existing.is_empty() {
            return Ok(());
        }
        self.create_service(rc, headless_service(rc)).await
    }

    async fn reconcile_serve_service(&self, rc: &RayCluster) -> Result<(), ReconcileError> {
        if rc.annotations().get(ENABLE_SERVE_SERVICE_ANNOTATION).map(String::as_str) != Some("true") {
            return Ok(());
        }
        let ns = rc.namespace().unwrap_or_default();
        let api: Api<Service> = Api::namespaced(self.client.clone(), &ns);
        let svc = serve_service(rc);
        if self
            .cache
            .services
            .get(&self.client, &ns, &svc.name_any())
            .await
            .map_err(api_err("read the serve service"))?
            .is_some()
        {
            return Ok(());
        }
        api.create(&PostParams::default(), &svc).await.map_err(api_err("create the serve service"))?;
        Ok(())
    }

    /// Deletes every pod matching `selector` with one delete-collection, unless all of them are
    /// already terminating (`deleteAllPods`).
    async fn delete_all_pods(&self, rc: &RayCluster, selector: &str) -> Result<(), kube::Error> {
        let ns = rc.namespace().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        let pods = self.cache.pods.list(&self.client, &ns, selector).await?;
        if pods.iter().any(|p| p.metadata.deletion_timestamp.is_none()) {
            api.delete_collection(&DeleteParams::default(), &ListParams::default().labels(selector)).await?;
        }
        Ok(())
    }

    async fn reconcile_pods(&self, rc: &RayCluster) -> Result<(), StepError> {
        let ns = rc.namespace().unwrap_or_default();
        let cluster = rc.name_any();
        let id = format!("{ns}/{cluster}");
        let cluster_sel = format!("{RAY_CLUSTER_LABEL}={cluster}");
        let hash = spec_hash_with(&rc.spec, &self.config);
        let gate = self.config.gate(KubeRayGate::RayClusterStatusConditions);
        let mut suspend = suspend_status(rc);
        if self.config.defective(Defect::NonAtomicSuspend)
            && suspend == SuspendStatus::Suspending
            && rc.spec.suspend != Some(true)
        {
            suspend = SuspendStatus::None;
        }
        // Suspending: every pod goes, in every pass until none is left.
        if suspend == SuspendStatus::Suspending || (!gate && rc.spec.suspend == Some(true)) {
            if let Err(e) = self.delete_all_pods(rc, &cluster_sel).await {
                let message = format!("Failed deleting Pods due to suspension for RayCluster {id}, {}", go_error(&e));
                self.event(rc, EventType::Warning, "FailedToDeletePodCollection", action::DELETE, message).await;
                return Err(StepError::replica("FailedDeleteAllPods", e));
            }
            let message = format!("Deleted Pods for RayCluster {id} due to suspension");
            self.event(rc, EventType::Normal, "DeletedPod", action::DELETE, message).await;
            return Ok(());
        }
        if gate && (suspend == SuspendStatus::Suspended || rc.spec.suspend == Some(true)) {
            // Suspended, or about to be: the status pass sets Suspending first.
            return Ok(());
        }

        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        if self.should_recreate_for_upgrade(rc, &hash).await {
            if self.config.defective(Defect::CreateDuringRecreate) {
                for p in self.cache.pods.list(&self.client, &ns, &cluster_sel).await.map_err(api_err("list pods"))? {
                    let _ = pods.delete(&p.name_any(), &DeleteParams::default()).await;
                }
                let _ = pods.create(&PostParams::default(), &head_pod(rc, &hash, &self.config)).await;
                return Ok(());
            }
            // Every pass that still finds the old head deletes (what is not yet terminating) and
            // says so again; no pod is created in such a pass.
            if let Err(e) = self.delete_all_pods(rc, &cluster_sel).await {
                let message = format!(
                    "Failed deleting Pods due to spec change with Recreate upgradeStrategy for RayCluster {id}, {}",
                    go_error(&e)
                );
                self.event(rc, EventType::Warning, "FailedToDeletePodCollection", action::DELETE, message).await;
                return Err(StepError::replica("FailedDeleteAllPods", e));
            }
            self.expectations.forget_cluster(&ns, &cluster);
            let message =
                format!("Deleted all Pods for RayCluster {id} due to spec change with Recreate upgradeStrategy");
            self.event(rc, EventType::Normal, "DeletedPod", action::DELETE, message).await;
            return Ok(());
        }

        let head_sel = format!("{cluster_sel},{RAY_NODE_TYPE_LABEL}=head");
        let head_pods = self.cache.pods.list(&self.client, &ns, &head_sel).await.map_err(api_err("list head pods"))?;
        let reads = PodReads { cache: &self.cache.pods, client: &self.client };
        if !self.expectations.satisfied(&reads, &ns, &cluster, HEAD_GROUP).await {
            tracing::info!(cluster = %id, "head expectations not satisfied; reconcile the head later");
        } else {
            match head_pods.len() {
                0 => {
                    let pinned = rc.annotations().get(DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION).map(String::as_str)
                        == Some("true")
                        && condition_true(rc.status.as_ref(), status::PROVISIONED);
                    if pinned {
                        // Not even the workers are reconciled in this pass.
                        return Ok(());
                    }
                    let pod = head_pod(rc, &hash, &self.config);
                    match pods.create(&PostParams::default(), &pod).await {
                        Ok(created) => {
                            self.expectations.expect(
                                &ns,
                                &cluster,
                                HEAD_GROUP,
                                &created.name_any(),
                                ScaleAction::Create,
                            );
                            let message = format!("Created head Pod {ns}/{}", created.name_any());
                            self.event(rc, EventType::Normal, "CreatedHeadPod", action::CREATE, message).await;
                        }
                        Err(e) => {
                            // The pod has only a generateName, so Go prints an empty name.
                            let name = pod.metadata.name.clone().unwrap_or_default();
                            let message = format!("Failed to create head Pod {ns}/{name}, {}", go_error(&e));
                            self.event(rc, EventType::Warning, "FailedToCreateHeadPod", action::CREATE, message).await;
                            return Err(StepError::replica("FailedCreateHeadPod", e));
                        }
                    }
                }
                1 => {
                    let head = &head_pods[0];
                    if let Some(reason) = should_delete_pod(head, "head", &self.config) {
                        let name = head.name_any();
                        if let Err(e) = pods.delete(&name, &DeleteParams::default()).await {
                            let message =
                                format!("Failed deleting head Pod {ns}/{name}; {}, {}", pod_state(head), go_error(&e));
                            self.event(rc, EventType::Warning, "FailedToDeleteHeadPod", action::DELETE, message).await;
                            return Err(StepError::replica("FailedDeleteHeadPod", e));
                        }
                        self.expectations.expect(&ns, &cluster, HEAD_GROUP, &name, ScaleAction::Delete);
                        let message = format!("Deleted head Pod {ns}/{name}; {}", pod_state(head));
                        self.event(rc, EventType::Normal, "DeletedHeadPod", action::DELETE, message).await;
                        return Err(StepError::plain(reason));
                    }
                }
                _ if self.config.defective(Defect::ExtraHeadPodsDeleted) => {
                    for extra in &head_pods[1..] {
                        let _ = pods.delete(&extra.name_any(), &DeleteParams::default()).await;
                    }
                }
                n => {
                    // Someone made a head by hand: KubeRay refuses to go on, and deletes nothing.
                    let names: Vec<String> = head_pods.iter().map(|p| p.name_any()).collect();
                    return Err(StepError::plain(format!(
                        "{n} head pods found {}. Please delete extra head pods",
                        go_strings(&names)
                    )));
                }
            }
        }

        for group in &rc.spec.worker_group_specs {
            if !self.expectations.satisfied(&reads, &ns, &cluster, &group.group_name).await {
                tracing::info!(cluster = %id, group = %group.group_name, "group expectations not satisfied; reconcile later");
                continue;
            }
            self.reconcile_group(rc, &pods, group).await?;
        }
        Ok(())
    }

    async fn reconcile_group(
        &self,
        rc: &RayCluster,
        pods: &Api<Pod>,
        group: &WorkerGroupSpec,
    ) -> Result<(), StepError> {
        let ns = rc.namespace().unwrap_or_default();
        let cluster = rc.name_any();
        let id = format!("{ns}/{cluster}");
        let name = &group.group_name;
        let group_sel = format!("{RAY_CLUSTER_LABEL}={cluster},{RAY_GROUP_LABEL}={name}");
        let desired = status::desired_replicas(group).max(0) as usize;
        let worker_pods =
            self.cache.pods.list(&self.client, &ns, &group_sel).await.map_err(api_err("list worker pods"))?;

        if group.suspend == Some(true) {
            if let Err(e) = self.delete_all_pods(rc, &group_sel).await {
                let message = format!(
                    "Failed deleting worker Pods for suspended group {name} in RayCluster {id}, {}",
                    go_error(&e)
                );
                self.event(rc, EventType::Warning, "FailedToDeleteWorkerPodCollection", action::DELETE, message).await;
                return Err(StepError::replica("FailedDeleteWorkerPod", e));
            }
            let message = format!("Deleted all pods for suspended worker group {name} in RayCluster {id}");
            self.event(rc, EventType::Normal, "DeletedWorkerPod", action::DELETE, message).await;
            return Ok(());
        }

        let indexing = self.config.gate(KubeRayGate::RayMultiHostIndexing);
        if indexing && group.num_of_hosts.unwrap_or(1) > 1 {
            return self.reconcile_multi_host_group(rc, pods, group, worker_pods).await;
        }

        // Unhealthy workers go first; nothing is created in a pass that deleted one.
        let mut deleted = BTreeSet::new();
        for p in &worker_pods {
            if should_delete_pod(p, "worker", &self.config).is_none() {
                continue;
            }
            let pod_name = p.name_any();
            deleted.insert(pod_name.clone());
            if let Err(e) = pods.delete(&pod_name, &DeleteParams::default()).await {
                let message = format!("Failed deleting worker Pod {ns}/{pod_name}; {}, {}", pod_state(p), go_error(&e));
                self.event(rc, EventType::Warning, "FailedToDeleteWorkerPod", action::DELETE, message).await;
                return Err(StepError::replica("FailedDeleteWorkerPod", e));
            }
            self.expectations.expect(&ns, &cluster, name, &pod_name, ScaleAction::Delete);
            let message = format!("Deleted worker Pod {ns}/{pod_name}; {}", pod_state(p));
            self.event(rc, EventType::Normal, "DeletedWorkerPod", action::DELETE, message).await;
        }
        if !deleted.is_empty() {
            return Err(StepError::plain(format!("delete {} unhealthy worker Pods", deleted.len())));
        }

        // Named pods always go, whatever replicas says; the list is left for the autoscaler to clear.
        for victim in group.scale_strategy.iter().flat_map(|s| s.workers_to_delete.iter()) {
            match pods.delete(victim, &DeleteParams::default()).await {
                Ok(_) => {
                    self.expectations.expect(&ns, &cluster, name, victim, ScaleAction::Delete);
                    deleted.insert(victim.clone());
                    let message = format!("Deleted pod {ns}/{victim}");
                    self.event(rc, EventType::Normal, "DeletedWorkerPod", action::DELETE, message).await;
                }
                Err(e) if is_not_found(&e) => {}
                Err(e) => {
                    let message = format!("Failed deleting pod {ns}/{victim}, {}", go_error(&e));
                    self.event(rc, EventType::Warning, "FailedToDeleteWorkerPod", action::DELETE, message).await;
                    return Err(StepError::replica("FailedDeleteWorkerPod", e));
                }
            }
        }
        let running: Vec<&Pod> = worker_pods.iter().filter(|p| !deleted.contains(&p.name_any())).collect();
        let mut used_indices: BTreeSet<usize> = BTreeSet::new();
        if indexing {
            used_indices.extend(running.iter().filter_map(|p| replica_index(p)));
        }
        if desired > running.len() {
            let mut next = 0usize;
            for _ in running.len()..desired {
                let index = indexing.then(|| {
                    while used_indices.contains(&next) {
                        next += 1;
                    }
                    used_indices.insert(next);
                    ReplicaIndex { replica: next, name: None, host: 0 }
                });
                self.create_worker(rc, pods, group, index.as_ref()).await?;
            }
        } else if desired < running.len() {
            let autoscaling = rc.spec.enable_in_tree_autoscaling == Some(true);
            if !autoscaling || self.config.random_pod_delete {
                for p in running.iter().take(running.len() - desired) {
                    let pod_name = p.name_any();
                    match pods.delete(&pod_name, &DeleteParams::default()).await {
                        Ok(_) => {}
                        Err(e) if is_not_found(&e) => {}
                        Err(e) => {
                            let message = format!("Failed deleting Pod {ns}/{pod_name}, {}", go_error(&e));
                            self.event(rc, EventType::Warning, "FailedToDeleteWorkerPod", action::DELETE, message)
                                .await;
                            return Err(StepError::replica("FailedDeleteWorkerPod", e));
                        }
                    }
                    self.expectations.expect(&ns, &cluster, name, &pod_name, ScaleAction::Delete);
                    let message = format!("Deleted Pod {ns}/{pod_name}");
                    self.event(rc, EventType::Normal, "DeletedWorkerPod", action::DELETE, message).await;
                }
            }
        }
        Ok(())
    }

    /// `createWorkerPod` / `createWorkerPodWithIndex`.
    async fn create_worker(
        &self,
        rc: &RayCluster,
        pods: &Api<Pod>,
        group: &WorkerGroupSpec,
        index: Option<&ReplicaIndex>,
    ) -> Result<(), StepError> {
        let ns = rc.namespace().unwrap_or_default();
        let cluster = rc.name_any();
        let pod = worker_pod(rc, group, index, &self.config);
        match pods.create(&PostParams::default(), &pod).await {
            Ok(created) => {
                self.expectations.expect(&ns, &cluster, &group.group_name, &created.name_any(), ScaleAction::Create);
                let message = format!("Created worker Pod {ns}/{}", created.name_any());
                self.event(rc, EventType::Normal, "CreatedWorkerPod", action::CREATE, message).await;
                Ok(())
            }
            Err(e) => {
                let message = format!("Failed to create worker Pod for the cluster {ns}/{cluster}, {}", go_error(&e));
                self.event(rc, EventType::Warning, "FailedToCreateWorkerPod", action::CREATE, message).await;
                Err(StepError::replica("FailedCreateWorkerPod", e))
            }
        }
    }

    /// `deletePods`: deletes the pods of whole multi-host replicas, one event each.
    async fn delete_replica_pods(
        &self,
        rc: &RayCluster,
        pods: &Api<Pod>,
        group: &str,
        victims: &[&Pod],
        reason: &str,
    ) -> Result<(), StepError> {
        let ns = rc.namespace().unwrap_or_default();
        for p in victims {
            let pod_name = p.name_any();
            match pods.delete(&pod_name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => continue,
                Err(e) => {
                    let message = format!(
                        "Failed deleting worker Pod {ns}/{pod_name} for group {group}; {}, {}",
                        pod_state(p),
                        go_error(&e)
                    );
                    self.event(rc, EventType::Warning, "FailedToDeleteWorkerPod", action::DELETE, message).await;
                    return Err(StepError::replica("FailedDeleteWorkerPod", e));
                }
            }
            self.expectations.expect(&ns, &rc.name_any(), group, &pod_name, ScaleAction::Delete);
            let message = format!("Deleted worker Pod {ns}/{pod_name} for group {group}: {reason}");
            self.event(rc, EventType::Normal, "DeletedWorkerPod", action::DELETE, message).await;
        }
        Ok(())
    }

    /// `utils.GenerateRayWorkerReplicaGroupName`: `<group>-<5 characters of apimachinery's
    /// random alphabet>`.
    fn replica_name(&self, group: &str) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let mut state = self.random.lock();
        let suffix: String = (0..5)
            .map(|_| {
                // xorshift64*
                *state ^= *state >> 12;
                *state ^= *state << 25;
                *state ^= *state >> 27;
                let r = state.wrapping_mul(0x2545_F491_4F6C_DD1D);
                ALPHABET[(r >> 33) as usize % ALPHABET.len()] as char
            })
            .collect();
        format!("{group}-{suffix}")
    }

    /// `reconcileMultiHostWorkerGroup`: a group with `numOfHosts > 1` under the
    /// `RayMultiHostIndexing` gate lives and dies by whole replicas of `numOfHosts` pods that
    /// share a `ray.io/worker-group-replica-name`.
    async fn reconcile_multi_host_group(
        &self,
        rc: &RayCluster,
        pods: &Api<Pod>,
        group: &WorkerGroupSpec,
        worker_pods: Vec<Pod>,
    ) -> Result<(), StepError> {
        let name = &group.group_name;
        let hosts = group.num_of_hosts.unwrap_or(1).max(1) as usize;
        let mut replicas: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
        for p in &worker_pods {
            if let Some(replica) = p.labels().get(RAY_WORKER_REPLICA_NAME_LABEL) {
                replicas.entry(replica.clone()).or_default().push(p);
            }
        }
        // A replica missing a host (one was deleted from outside) is taken down whole.
        if let Some((replica, members)) = replicas.iter().find(|(_, members)| members.len() < hosts) {
            self.delete_replica_pods(rc, pods, name, members, "cleanup of incomplete multi-host group").await?;
            return Err(StepError::plain(format!("cleaned up incomplete replica group {replica}, requeueing")));
        }
        // A replica with an unhealthy host is taken down whole; its replacement is created below.
        let mut deleted: BTreeSet<String> = BTreeSet::new();
        for p in &worker_pods {
            if deleted.contains(&p.name_any()) {
                continue;
            }
            let Some(reason) = should_delete_pod(p, "worker", &self.config) else { continue };
            let replica = p.labels().get(RAY_WORKER_REPLICA_NAME_LABEL).cloned().unwrap_or_default();
            let Some(members) = replicas.get(&replica) else { continue };
            self.delete_replica_pods(rc, pods, name, members, &reason).await?;
            deleted.extend(members.iter().map(|m| m.name_any()));
        }
        // The autoscaler names one pod; its whole replica goes.
        let named = group.scale_strategy.iter().flat_map(|s| s.workers_to_delete.iter()).collect::<Vec<_>>();
        if !named.is_empty() {
            let mut victims: BTreeMap<String, &Pod> = BTreeMap::new();
            for victim in named {
                if let Some(p) = worker_pods.iter().find(|p| &p.name_any() == victim) {
                    let replica = p.labels().get(RAY_WORKER_REPLICA_NAME_LABEL).cloned().unwrap_or_default();
                    for m in replicas.get(&replica).into_iter().flatten() {
                        victims.insert(m.name_any(), m);
                    }
                }
            }
            if !victims.is_empty() {
                let list: Vec<&Pod> = victims.values().copied().collect();
                self.delete_replica_pods(rc, pods, name, &list, "autoscaler scale-down request").await?;
                return Err(StepError::plain(format!(
                    "deleted {} worker Pods based on ScaleStrategy, requeueing",
                    list.len()
                )));
            }
        }
        let valid: Vec<(&String, &Vec<&Pod>)> =
            replicas.iter().filter(|(_, members)| members.iter().all(|m| !deleted.contains(&m.name_any()))).collect();
        let desired_pods = status::desired_replicas(group).max(0) as usize;
        if !desired_pods.is_multiple_of(hosts) {
            return Err(StepError::plain(format!(
                "desired worker pods ({desired_pods}) is not a multiple of NumOfHosts ({hosts}) for group {name}"
            )));
        }
        let desired = desired_pods / hosts;
        let mut used: BTreeSet<usize> =
            valid.iter().filter_map(|(_, members)| members.first().and_then(|p| replica_index(p))).collect();
        if desired > valid.len() {
            let mut next = 0usize;
            for _ in valid.len()..desired {
                while used.contains(&next) {
                    next += 1;
                }
                used.insert(next);
                let replica_name = self.replica_name(name);
                for host in 0..hosts {
                    let index = ReplicaIndex { replica: next, name: Some(replica_name.clone()), host };
                    self.create_worker(rc, pods, group, Some(&index)).await?;
                }
            }
        } else if desired < valid.len() {
            let autoscaling = rc.spec.enable_in_tree_autoscaling == Some(true);
            if !autoscaling || self.config.random_pod_delete {
                for (_, members) in valid.iter().take(valid.len() - desired) {
                    self.delete_replica_pods(rc, pods, name, members, "scaling down").await?;
                }
            }
        }
        Ok(())
    }

    /// `shouldRecreatePodsForUpgrade`: Recreate, a head pod, and a non-empty hash annotation that
    /// differs from the spec's. A head pod stamped by another operator version gets fresh
    /// annotations instead (an operator upgrade alone must not recreate pods).
    async fn should_recreate_for_upgrade(&self, rc: &RayCluster, hash: &str) -> bool {
        let recreate = rc.spec.upgrade_strategy.as_ref().and_then(|u| u.type_.as_deref()) == Some("Recreate");
        if !recreate {
            return false;
        }
        let head_sel = format!("{RAY_CLUSTER_LABEL}={},{RAY_NODE_TYPE_LABEL}=head", rc.name_any());
        let head_pods = match self.cache.pods.list(&self.client, &rc.namespace().unwrap_or_default(), &head_sel).await {
            Ok(l) => l,
            Err(e) => {
                tracing::info!(error = %e, "failed to list head pods for the upgrade check");
                return false;
            }
        };
        let Some(head) = head_pods.first() else { return false };
        let annotations = head.annotations();
        let version = annotations.get(KUBERAY_VERSION_ANNOTATION).map(String::as_str).unwrap_or("");
        if !version.is_empty()
            && version != self.config.kuberay_version
            && !self.config.defective(Defect::NoVersionSkip)
        {
            let mut pod = head.clone();
            let a = pod.metadata.annotations.get_or_insert_with(BTreeMap::new);
            a.insert(UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION.into(), hash.into());
            a.insert(KUBERAY_VERSION_ANNOTATION.into(), self.config.kuberay_version.clone());
            let api: Api<Pod> = Api::namespaced(self.client.clone(), &rc.namespace().unwrap_or_default());
            if let Err(e) = api.replace(&head.name_any(), &PostParams::default(), &pod).await {
                tracing::info!(error = %e, pod = %head.name_any(), "failed to refresh the head pod's annotations");
            }
            return false;
        }
        let stamped = annotations.get(UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION).map(String::as_str).unwrap_or("");
        !stamped.is_empty() && stamped != hash
    }
}

/// `ray.io/worker-group-replica-index` of a worker, if it has a valid one.
fn replica_index(pod: &Pod) -> Option<usize> {
    pod.labels().get(RAY_WORKER_REPLICA_INDEX_LABEL).and_then(|i| i.parse().ok())
}

/// `shouldDeletePod`: a pod that will not come back by itself, with the reason KubeRay gives.
/// Failed or Succeeded pods, whatever their restart policy; Running pods whose Ray container
/// terminated, only with `restartPolicy: Never` (Always and OnFailure are left to the kubelet).
fn should_delete_pod(pod: &Pod, node_type: &str, cfg: &KubeRayConfig) -> Option<String> {
    let name = pod.name_any();
    let phase = phase(pod);
    if cfg.defective(Defect::TerminalPodKeptWithRestartAlways) && restart_policy(pod) == "Always" {
        return None;
    }
    if phase == "Failed" || phase == "Succeeded" {
        return Some(format!(
            "The {node_type} Pod {name} status is {phase} which is a terminal state. KubeRay will delete the Pod and create new Pods in the next reconciliation if necessary."
        ));
    }
    let terminated = ray_container_terminated(pod);
    if phase == "Running" && terminated.is_some() && restart_policy(pod) == "Never" {
        return Some(format!(
            "The Pod status of the {node_type} Pod {name} is {phase}, and the Ray container terminated status is {}. The container is unable to restart due to its restart policy Never, so KubeRay will delete it.",
            go_terminated(terminated)
        ));
    }
    None
}

/// `autoscalerOptions.version` of the spec, if set.
fn autoscaler_version(rc: &RayCluster) -> Option<&str> {
    rc.spec.extra.get("autoscalerOptions").and_then(|o| o.get("version")).and_then(|v| v.as_str())
}

/// The warning KubeRay emits (and carries on) when autoscaler v1 is asked for explicitly and a
/// worker group restarts its pods.
fn autoscaler_v1_restart_policy_warning(rc: &RayCluster) -> Option<String> {
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
fn validate_upgrade_strategy(rc: &RayCluster) -> Result<(), String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ContainerState, ContainerStatus, PodSpec, PodStatus};
    use serde_json::json;

    fn pod(phase: &str, policy: &str, terminated: bool) -> Pod {
        let state = if terminated {
            json!({"terminated": {"exitCode": 1, "reason": "Error", "startedAt": "2026-11-24T06:59:29Z",
                                  "finishedAt": "2026-11-24T07:00:01Z", "containerID": "containerd://abc"}})
        } else {
            json!({"running": {"startedAt": "2026-11-24T06:59:29Z"}})
        };
        Pod {
            metadata: kube::api::ObjectMeta { name: Some("p".into()), ..Default::default() },
            spec: Some(PodSpec {
                containers: vec![serde_json::from_value(json!({"name": "ray-worker"})).unwrap()],
                restart_policy: Some(policy.into()),
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: Some(phase.into()),
                container_statuses: Some(vec![ContainerStatus {
                    name: "ray-worker".into(),
                    state: Some(serde_json::from_value::<ContainerState>(state).unwrap()),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn terminated_state_prints_like_go() {
        let p = pod("Failed", "Never", true);
        assert_eq!(
            go_terminated(ray_container_terminated(&p)),
            "&ContainerStateTerminated{ExitCode:1,Signal:0,Reason:Error,Message:,StartedAt:2026-11-24 06:59:29 +0000 UTC,FinishedAt:2026-11-24 07:00:01 +0000 UTC,ContainerID:containerd://abc,}"
        );
        assert_eq!(go_terminated(None), "nil");
    }

    fn should_delete_pod_default(p: &Pod, node_type: &str) -> Option<String> {
        should_delete_pod(p, node_type, &KubeRayConfig::default())
    }

    #[test]
    fn terminal_pods_go_whatever_the_restart_policy() {
        assert!(should_delete_pod_default(&pod("Failed", "Always", true), "worker").is_some());
        assert!(should_delete_pod_default(&pod("Succeeded", "OnFailure", true), "worker").is_some());
        assert!(should_delete_pod_default(&pod("Running", "Never", true), "worker").is_some());
        assert!(should_delete_pod_default(&pod("Running", "OnFailure", true), "worker").is_none());
        assert!(should_delete_pod_default(&pod("Running", "Always", true), "worker").is_none());
        assert!(should_delete_pod_default(&pod("Running", "Never", false), "worker").is_none());
    }
}
