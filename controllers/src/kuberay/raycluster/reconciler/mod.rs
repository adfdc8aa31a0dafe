//! The RayCluster reconcile loop (`RayClusterReconciler.rayClusterReconcile` and
//! `reconcilePods`), driven by a kube-runtime `Controller` watching RayClusters and the pods and
//! services they own, with controller-runtime's triggers: a RayCluster wakes the controller only
//! when its generation, labels or annotations change (a status write does not), an error is
//! retried with per-object exponential back-off (5 ms doubling, up to 1000 s), a pass that
//! changed the status looks again after 2 s, and any other pass after 300 s.

use super::status::{self, SuspendStatus, condition_true, suspend_status};
use crate::Clock;
use crate::api_errors::is_not_found;
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

mod expectations;
mod pods;
mod services;
#[cfg(test)]
mod tests;
mod validation;

use expectations::{HEAD_GROUP, ScaleAction, ScaleExpectations};
use validation::{autoscaler_v1_restart_policy_warning, validate_upgrade_strategy};

/// Why a reconcile pass could not finish; the controller retries with back-off.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// An API call failed.
    #[error("{context}: {source}")]
    Api {
        /// What the reconciler was doing, e.g. `list pods`.
        context: String,
        /// The client's error.
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
}
