//! The RayService controller (`ray-operator/controllers/ray/rayservice_controller.go`, v1.7.0).
//!
//! One pass ([`RayServiceReconciler::reconcile`]) follows upstream's `Reconcile` step by step:
//! dangling clusters and the Serve config cache, deletion and the finalizer, validation,
//! top-level suspend, the initializing timeout, the active and pending RayClusters (create,
//! in-place update), the rollback state of an incremental upgrade, the head pods' `ray.io/serve`
//! label, the Serve applications (and target capacity), the per-cluster serve services,
//! Gateway and HTTPRoute, the head and serve services, and the status. Every pass ends with a
//! requeue after 2 s, like upstream's.
//!
//! The controller reaches the Ray dashboards and Serve proxies through a [`ClusterHttp`] (the
//! [simulated network](crate::sim::network) in-process), never through sockets of its own.
//!
//! Where kube-runtime differs from controller-runtime, the difference is modelled: the
//! RayService watch passes only changes of generation, labels or annotations (upstream's
//! predicates), and a failed pass is retried after 5 ms doubling up to 1000 s per object
//! (controller-runtime's default rate limiter) instead of after the pass's own requeue. A
//! state upstream answers with a panic (services pointing at different clusters) is an error
//! here.

mod cluster;
mod gateway;
mod serve;
mod services;
mod status;
mod validation;

pub use validation::{validate_cluster_upgrade_options, validate_metadata, validate_spec};

use crate::Clock;
use crate::crds::gateway::{Gateway, HTTPRoute};
use crate::crds::rayservice::{RayService, RayServiceStatuses, condition, reason};
use crate::crds::{RayCluster, RayServiceSpec};
use crate::events::{EventRecorder, EventType, reference};
use crate::kuberay::common::cache::Cached;
use crate::kuberay::common::conditions;
use crate::kuberay::common::names::NameGenerator;
use crate::kuberay::common::suspend::{self, SuspendStep};
use crate::kuberay::*;
use crate::sim::network::ClusterHttp;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::{Predicate, WatchStreamExt, predicates, watcher};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Every pass requeues after this (`ServiceDefaultRequeueDuration`).
pub const SERVICE_DEFAULT_REQUEUE: Duration = Duration::from_secs(2);
/// Default of `spec.rayClusterDeletionDelaySeconds` (`RayClusterDeletionDelayDuration`).
pub const RAY_CLUSTER_DELETION_DELAY: Duration = Duration::from_secs(60);

/// Why a RayService pass could not finish; the pass is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum RayServiceError {
    /// An API call failed.
    #[error("{context}: {source}")]
    Api {
        /// What the controller was doing.
        context: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// A dashboard or Serve proxy call failed.
    #[error("{0}")]
    Serve(String),
    /// The state does not allow the pass to go on (missing head pod, missing options, ...).
    #[error("{0}")]
    State(String),
}

impl RayServiceError {
    /// Whether the error is an object that was not found (`client.IgnoreNotFound` drops those).
    fn is_not_found(&self) -> bool {
        matches!(self, RayServiceError::Api { source, .. } if is_not_found(source))
    }
}

fn api_err(context: impl Into<String>) -> impl FnOnce(kube::Error) -> RayServiceError {
    let context = context.into();
    move |source| RayServiceError::Api { context, source }
}

pub(crate) use crate::api_errors::is_not_found;

/// Whether an incremental upgrade is on for this spec (`utils.IsIncrementalUpgradeEnabled`):
/// the gate and the strategy type.
pub fn is_incremental_upgrade_enabled(spec: &RayServiceSpec, cfg: &KubeRayConfig) -> bool {
    cfg.gate(KubeRayGate::RayServiceIncrementalUpgrade)
        && spec.upgrade_strategy.as_ref().and_then(|u| u.type_.as_deref())
            == Some(crate::crds::rayservice::upgrade_type::NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE)
}

/// `isZeroDowntimeUpgradeEnabled`: whether a spec change prepares a new cluster. A set type
/// decides (with the gate off, only `NewCluster`; with it on, `NewCluster` or incremental);
/// unset, `ENABLE_ZERO_DOWNTIME=false` turns it off.
pub fn is_zero_downtime_upgrade_enabled(spec: &RayServiceSpec, cfg: &KubeRayConfig) -> bool {
    use crate::crds::rayservice::upgrade_type::*;
    match spec.upgrade_strategy.as_ref().and_then(|u| u.type_.as_deref()) {
        Some(t) if cfg.gate(KubeRayGate::RayServiceIncrementalUpgrade) => {
            t == NEW_CLUSTER || t == NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE
        }
        Some(t) => t == NEW_CLUSTER,
        None => cfg.enable_zero_downtime,
    }
}

/// The `K8sEventAction` KubeRay records with each event reason of the RayService controller.
fn action_for(reason: &str) -> &'static str {
    let verb = reason.strip_prefix("FailedTo").unwrap_or(reason);
    if verb.starts_with("Create") {
        "Create"
    } else if verb.starts_with("Update") {
        "Update"
    } else if verb.starts_with("Delete") {
        "Delete"
    } else if reason.starts_with("Invalid") {
        "Validate"
    } else {
        "Reconcile"
    }
}

/// The RayService controller: configuration, clients and its in-memory state (the Serve config
/// cache and the deletion times of dangling clusters, both lost on a restart as upstream's).
pub struct RayServiceReconciler {
    client: kube::Client,
    clock: Clock,
    config: KubeRayConfig,
    recorder: EventRecorder,
    http: Arc<dyn ClusterHttp>,
    paused: Arc<AtomicBool>,
    /// `ServeConfigs`: `<ns>/<rayservice>` → cluster → the `serveConfigV2` last submitted to it.
    serve_configs: Mutex<HashMap<String, HashMap<String, String>>>,
    /// `RayClusterDeletionTimestamps`: cluster name → when to delete it (keyed by name only,
    /// like upstream's map).
    deletion_times: Mutex<HashMap<String, jiff::Timestamp>>,
    names: Mutex<NameGenerator>,
    /// Failed passes in a row, per `<ns>/<name>`, for the retry backoff.
    failures: Mutex<HashMap<String, u32>>,
    /// The informers every read of a pass is answered from.
    cache: Informers,
}

/// The kinds a RayService pass reads, each from its informer (KubeRay's manager cache: every
/// kind whole, pods only those labelled as Ray nodes, `managercache.go`).
struct Informers {
    services: Cached<RayService>,
    clusters: Cached<RayCluster>,
    k8s_services: Cached<Service>,
    pods: Cached<Pod>,
    endpoint_slices: Cached<EndpointSlice>,
    gateways: Cached<Gateway>,
    routes: Cached<HTTPRoute>,
}

impl Informers {
    fn new() -> Self {
        let all = watcher::Config::default;
        Self {
            services: Cached::new(all()),
            clusters: Cached::new(all()),
            k8s_services: Cached::new(all()),
            pods: Cached::new(all().labels(&format!("{RAY_NODE_TYPE_LABEL} in (head,worker,redis-cleanup)"))),
            endpoint_slices: Cached::new(all()),
            gateways: Cached::new(all()),
            routes: Cached::new(all()),
        }
    }
}

/// What `handleSuspend` decided for the rest of the pass.
enum SuspendOutcome {
    Continue,
    Stop(Action),
}

impl RayServiceReconciler {
    /// A reconciler writing through `client`, reading time from `clock`, reaching dashboards and
    /// Serve proxies through `http`.
    pub fn new(client: kube::Client, clock: Clock, config: KubeRayConfig, http: Arc<dyn ClusterHttp>) -> Self {
        let recorder = EventRecorder::new(client.clone(), clock.clone(), RAYSERVICE_EVENT_COMPONENT);
        let names = Mutex::new(NameGenerator::seeded(config.name_seed));
        Self {
            client,
            clock,
            config,
            recorder,
            http,
            paused: Arc::default(),
            serve_configs: Mutex::default(),
            deletion_times: Mutex::default(),
            names,
            failures: Mutex::default(),
            cache: Informers::new(),
        }
    }

    /// A switch that stops and resumes reconciling (an operator that is down): while it is on,
    /// every pass does nothing and looks again a second later.
    pub fn pause_switch(&self) -> Arc<AtomicBool> {
        self.paused.clone()
    }

    /// Installs the RayService CRD and waits until it is Established.
    pub async fn install_crd(client: &kube::Client) -> Result<(), crate::crds::CrdInstallError> {
        crate::crds::install(client, [crate::crds::rayservice::rayservice_crd()]).await
    }

    /// Runs the controller until the watches end (the API server goes away).
    pub async fn run(self) {
        let client = self.client.clone();
        let cache = &self.cache;
        let (
            Some(services),
            Some(clusters),
            Some(k8s_services),
            Some(pods),
            Some(slices),
            Some(gateways),
            Some(routes),
        ) = (
            cache.services.reflect(&client),
            cache.clusters.reflect(&client),
            cache.k8s_services.reflect(&client),
            cache.pods.reflect(&client),
            cache.endpoint_slices.reflect(&client),
            cache.gateways.reflect(&client),
            cache.routes.reflect(&client),
        )
        else {
            tracing::error!("the RayService controller runs once");
            return;
        };
        let reader = cache.services.store();
        let services = services.predicate_filter(
            predicates::generation.combine(predicates::labels).combine(predicates::annotations),
            Default::default(),
        );
        // The informers nothing triggers on still have to be kept current.
        let others = futures::stream::select_all([
            pods.map(|_| ()).boxed(),
            slices.map(|_| ()).boxed(),
            gateways.map(|_| ()).boxed(),
            routes.map(|_| ()).boxed(),
        ])
        .for_each(|()| futures::future::ready(()));
        let me = Arc::new(self);
        let controller = Controller::for_stream(services, reader)
            .owns_stream(clusters)
            .owns_stream(k8s_services)
            .run(
                |rs, me: Arc<Self>| async move {
                    let key = format!("{}/{}", rs.namespace().unwrap_or_default(), rs.name_any());
                    // Boxed: the pass is a large future, and the controller's runner spawns (and
                    // so copies) the future this closure returns for every pass.
                    let result = Box::pin(me.reconcile(&rs)).await;
                    if result.is_ok() {
                        me.failures.lock().remove(&key);
                    }
                    result
                },
                |rs, err, me: Arc<Self>| {
                    let key = format!("{}/{}", rs.namespace().unwrap_or_default(), rs.name_any());
                    let mut failures = me.failures.lock();
                    let n = failures.entry(key).or_insert(0);
                    let backoff = Duration::from_millis(5).saturating_mul(2u32.saturating_pow((*n).min(20)));
                    *n += 1;
                    tracing::info!(error = %err, retry_in = ?backoff, "RayService reconcile failed");
                    Action::requeue(backoff.min(Duration::from_secs(1000)))
                },
                me.clone(),
            )
            .for_each(|_| futures::future::ready(()));
        // The events' series upkeep (ends and refreshes) lives as long as the controller.
        tokio::select! {
            () = controller => {}
            () = others => {}
            () = me.recorder.run_series_upkeep() => {}
        }
    }

    fn now(&self) -> Time {
        let t = self.clock.now();
        Time(jiff::Timestamp::from_second(t.as_second()).unwrap_or(t))
    }

    /// Records an event about the service, with the action KubeRay passes for that reason.
    async fn event(&self, rs: &RayService, kind: EventType, reason: &str, message: String) {
        self.recorder.eventf(&reference(rs), None, kind, reason, action_for(reason), message).await;
    }

    /// `r.Status().Update`: writes the status; like controller-runtime's client, takes the
    /// server's answer into `rs` (so a second write in the same pass carries the new
    /// resourceVersion).
    async fn write_status(&self, rs: &mut RayService, status: RayServiceStatuses) -> Result<(), RayServiceError> {
        let api: Api<RayService> = Api::namespaced(self.client.clone(), &rs.namespace().unwrap_or_default());
        // The object is sent with the new status in place (not copied first); a refused write
        // leaves it as it was.
        let previous = rs.status.replace(status);
        match api.replace_status(&rs.name_any(), &PostParams::default(), rs).await {
            Ok(written) => {
                *rs = written;
                Ok(())
            }
            Err(e) => {
                rs.status = previous;
                Err(api_err("update the RayService status")(e))
            }
        }
    }

    /// Writes the status when `InconsistentRayServiceStatuses` says it changed, stamping
    /// `lastUpdateTime`.
    async fn write_status_if_changed(
        &self,
        rs: &mut RayService,
        original: &RayServiceStatuses,
        status: &mut RayServiceStatuses,
    ) -> Result<(), RayServiceError> {
        if !status::inconsistent(original, status, &self.config) {
            return Ok(());
        }
        status.last_update_time = Some(self.now());
        self.write_status(rs, status.clone()).await
    }

    /// One reconcile pass for the RayService `key` names (read from the informer, as `r.Get` does).
    /// The steps' futures are boxed: inlined, each would be built on the stack and copied into
    /// this pass's (much larger) state on every await.
    pub async fn reconcile(&self, key: &RayService) -> Result<Action, RayServiceError> {
        if self.paused.load(Ordering::SeqCst) {
            return Ok(Action::requeue(Duration::from_secs(1)));
        }
        let ns = key.namespace().unwrap_or_else(|| "default".into());
        let api: Api<RayService> = Api::namespaced(self.client.clone(), &ns);
        let Some(rs) = self
            .cache
            .services
            .get(&self.client, &ns, &key.name_any())
            .await
            .map_err(api_err("read the RayService"))?
        else {
            return Ok(Action::await_change());
        };
        let mut rs = RayService::clone(&rs);
        let id = format!("{ns}/{}", rs.name_any());
        let original = rs.status.clone().unwrap_or_default();
        let mut status = original.clone();
        if rs.spec.managed_by.as_deref().is_some_and(|m| m != KUBERAY_OPERATOR_MANAGER) {
            tracing::info!(rayservice = %id, "skipping RayService managed by a custom controller");
            return Ok(Action::await_change());
        }
        self.clean_up_serve_config_cache(&rs, &status);
        let has_clusters_to_clean = Box::pin(self.clean_up_ray_cluster_instance(&rs, &status)).await?;

        if rs.metadata.deletion_timestamp.is_some() {
            if !has_clusters_to_clean {
                rs.finalizers_mut().retain(|f| f != RAYSERVICE_FINALIZER);
                rs.spec.ray_cluster_spec.as_go_writes_it();
                api.replace(&rs.name_any(), &PostParams::default(), &rs)
                    .await
                    .map_err(api_err("remove the RayService finalizer"))?;
                return Ok(Action::await_change());
            }
            return Ok(Action::requeue(SERVICE_DEFAULT_REQUEUE));
        }
        if !rs.finalizers().iter().any(|f| f == RAYSERVICE_FINALIZER) {
            rs.finalizers_mut().push(RAYSERVICE_FINALIZER.to_string());
            // r.Update(ctx, rayServiceInstance) sends the whole typed object, spec included.
            rs.spec.ray_cluster_spec.as_go_writes_it();
            api.replace(&rs.name_any(), &PostParams::default(), &rs)
                .await
                .map_err(api_err("add the RayService finalizer"))?;
            return Ok(Action::requeue(SERVICE_DEFAULT_REQUEUE));
        }

        if let Err((reason, message)) = validation::validate(&rs, &self.config) {
            self.event(&rs, EventType::Warning, reason, format!("{id}: {message}")).await;
            let now = self.now();
            let generation = Some(status.observed_generation);
            conditions::set(
                &mut status.conditions,
                condition::READY,
                false,
                reason::VALIDATION_FAILED,
                &message,
                &now,
                generation,
            );
            status.last_update_time = Some(now);
            Box::pin(self.write_status(&mut rs, status)).await?;
            return Ok(Action::await_change());
        }

        // Like upstream, the status is written even when the suspend step failed; the step's
        // error wins.
        let suspended = Box::pin(self.handle_suspend(&rs, &mut status)).await;
        let written = Box::pin(self.write_status_if_changed(&mut rs, &original, &mut status)).await;
        let outcome = suspended?;
        written?;
        if let SuspendOutcome::Stop(action) = outcome {
            return Ok(action);
        }
        if suspend::suspend_is_operative(&status) {
            return Ok(Action::requeue(SERVICE_DEFAULT_REQUEUE));
        }
        if status::is_initializing_timeout(&status) {
            return Ok(if has_clusters_to_clean {
                Action::requeue(SERVICE_DEFAULT_REQUEUE)
            } else {
                Action::await_change()
            });
        }

        let (active, pending) = match Box::pin(self.reconcile_ray_cluster(&rs, &status)).await {
            Ok(pair) => pair,
            Err(e) if e.is_not_found() => return Ok(Action::requeue(SERVICE_DEFAULT_REQUEUE)),
            Err(e) => return Err(e),
        };

        let incremental = is_incremental_upgrade_enabled(&rs.spec, &self.config);
        if incremental && conditions::is_true(&status.conditions, condition::UPGRADE_IN_PROGRESS) {
            match (&active, &pending) {
                (None, _) => {
                    self.event(
                        &rs,
                        EventType::Warning,
                        "RollbackImpossible",
                        "Active cluster not found, rollback cannot be initiated".into(),
                    )
                    .await;
                }
                (Some(a), Some(p)) => {
                    status::reconcile_rollback_state(&rs, &mut status, a, p, &self.config, &self.now())
                }
                (Some(_), None) => {}
            }
        }

        Box::pin(self.update_head_pod_serve_label(&rs, active.as_ref())).await?;
        Box::pin(self.update_head_pod_serve_label(&rs, pending.as_ref())).await?;

        let (mut active_ready, mut pending_ready) = (false, false);
        let (mut active_apps, mut pending_apps) = (None, None);
        if let Some(p) = &pending {
            (pending_ready, pending_apps) = Box::pin(self.reconcile_serve(&rs, &mut status, p)).await?;
        }
        // The active cluster's Serve is read when no pending cluster exists and none is about to
        // be prepared, or in incremental mode alongside the pending one.
        if let Some(a) = &active
            && (pending.is_none()
                && !cluster::should_prepare_new_cluster(&rs, &status, Some(a), None, false, &self.config)
                || pending.is_some() && incremental)
        {
            (active_ready, active_apps) = Box::pin(self.reconcile_serve(&rs, &mut status, a)).await?;
        }

        let mut route = None;
        if incremental {
            Box::pin(self.reconcile_per_cluster_serve_service(&rs, active.as_ref())).await?;
            Box::pin(self.reconcile_per_cluster_serve_service(&rs, pending.as_ref())).await?;
            match Box::pin(self.reconcile_gateway(&rs)).await {
                Ok(()) => {}
                Err(e) if e.is_not_found() => return Ok(Action::requeue(SERVICE_DEFAULT_REQUEUE)),
                Err(e) => return Err(e),
            }
            route = match Box::pin(self.reconcile_http_route(&rs, &status, pending_ready)).await {
                Ok(r) => r,
                Err(e) if e.is_not_found() => return Ok(Action::requeue(SERVICE_DEFAULT_REQUEUE)),
                Err(e) => return Err(e),
            };
        }

        let mut services = None;
        if pending_ready || active_ready {
            let upgrading = incremental && conditions::is_true(&status.conditions, condition::UPGRADE_IN_PROGRESS);
            let target = if pending_ready && !upgrading { pending.as_ref() } else { active.as_ref() };
            let Some(target) = target else {
                return Err(RayServiceError::State(format!("{id}: no cluster to point the services at")));
            };
            services = Some(Box::pin(self.reconcile_services_to_ready_cluster(&rs, target)).await?);
        }

        let now = self.now();
        let timed_out = status::calculate_status(
            self,
            &rs,
            &mut status,
            services.as_ref(),
            active.as_ref(),
            pending.as_ref(),
            active_apps,
            pending_apps,
            route.as_ref(),
            &now,
        )
        .await?;
        if let Some(message) = timed_out {
            self.event(&rs, EventType::Warning, "RayServiceInitializingTimeout", message).await;
        }
        Box::pin(self.write_status_if_changed(&mut rs, &original, &mut status)).await?;
        Ok(Action::requeue(SERVICE_DEFAULT_REQUEUE))
    }

    /// `handleSuspend` (see [`suspend`]): the status is changed in place; the caller writes it.
    async fn handle_suspend(
        &self,
        rs: &RayService,
        status: &mut RayServiceStatuses,
    ) -> Result<SuspendOutcome, RayServiceError> {
        let now = self.now();
        let generation = rs.metadata.generation.unwrap_or(0);
        match suspend::next_suspend_step(status, rs.spec.suspend) {
            SuspendStep::Proceed => Ok(SuspendOutcome::Continue),
            SuspendStep::StaySuspended => Ok(SuspendOutcome::Stop(Action::await_change())),
            SuspendStep::Resume => {
                suspend::resume(status, generation, &now);
                Ok(SuspendOutcome::Continue)
            }
            SuspendStep::Commit => {
                suspend::commit_suspend(status, generation, &now);
                Ok(SuspendOutcome::Stop(Action::requeue(SERVICE_DEFAULT_REQUEUE)))
            }
            SuspendStep::DeleteOwned => {
                if self.delete_owned_resources(rs).await? {
                    suspend::complete_suspend(status, &now);
                } else {
                    suspend::mark_still_suspending(status, &now);
                }
                Ok(SuspendOutcome::Stop(Action::requeue(SERVICE_DEFAULT_REQUEUE)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn spec(strategy: Option<&str>) -> RayServiceSpec {
        let mut v = json!({"rayClusterConfig": {"headGroupSpec": {"template": {}}}});
        if let Some(t) = strategy {
            v["upgradeStrategy"] = json!({"type": t});
        }
        serde_json::from_value(v).unwrap()
    }

    #[rstest]
    #[case::unset(None, true, true, true)]
    #[case::unset_env_off(None, true, false, false)]
    #[case::new_cluster(Some("NewCluster"), true, false, true)]
    #[case::none(Some("None"), true, true, false)]
    #[case::incremental_gate_on(Some("NewClusterWithIncrementalUpgrade"), true, true, true)]
    #[case::incremental_gate_off(Some("NewClusterWithIncrementalUpgrade"), false, true, false)]
    fn zero_downtime_truth_table(
        #[case] strategy: Option<&str>,
        #[case] gate: bool,
        #[case] env: bool,
        #[case] enabled: bool,
    ) {
        let mut cfg = KubeRayConfig { enable_zero_downtime: env, ..KubeRayConfig::default() };
        cfg.feature_gates.insert(KubeRayGate::RayServiceIncrementalUpgrade, gate);
        assert_eq!(is_zero_downtime_upgrade_enabled(&spec(strategy), &cfg), enabled);
        let incremental = gate && strategy == Some("NewClusterWithIncrementalUpgrade");
        assert_eq!(is_incremental_upgrade_enabled(&spec(strategy), &cfg), incremental);
    }
}
