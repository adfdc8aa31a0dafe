//! The reference controllers and simulated actors, wrapped for the backends: each becomes an
//! [`ActorFactory`] the in-process backend starts for every row and `kproof serve` starts once.

use crate::backend::{Actor, ActorFactory, InProcessBackend};
use crate::suite::Needs;
use controllers::kuberay::{Defect, KubeRayConfig, RayClusterReconciler};
use controllers::sim::kubelet::{Kubelet, KubeletConfig, KubeletHandle};
use controllers::sim::{Scheduler, SchedulerConfig};
use serde_json::Value;
use std::sync::Arc;

/// Every reference actor, in start order.
pub fn reference_actors() -> Vec<Arc<dyn ActorFactory>> {
    actors_with(KubeRayFactory::default())
}

fn actors_with(kuberay: KubeRayFactory) -> Vec<Arc<dyn ActorFactory>> {
    vec![Arc::new(kuberay), Arc::new(SchedulerFactory), Arc::new(KubeletFactory)]
}

/// The in-process backend with every reference actor.
pub fn reference_backend() -> InProcessBackend {
    backend_with(KubeRayFactory::default())
}

/// The in-process backend with every reference actor, KubeRay built with a deliberate defect:
/// for proving that the conformance table catches that regression.
pub fn backend_with_defect(defect: Defect) -> InProcessBackend {
    backend_with(KubeRayFactory { defect: Some(defect) })
}

fn backend_with(kuberay: KubeRayFactory) -> InProcessBackend {
    actors_with(kuberay).into_iter().fold(InProcessBackend::new(), |b, f| b.with_actor(f))
}

/// Lists `names` in the `kube-public/kproof-actors` ConfigMap, where the kubeconfig backend
/// looks for the actors a cluster runs.
pub async fn announce(client: &kube::Client, names: &[&str]) -> Result<(), kube::Error> {
    use crate::backend::{ACTORS_CONFIGMAP_NAME, ACTORS_CONFIGMAP_NAMESPACE};
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kube::api::{Api, Patch, PatchParams};
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns =
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ACTORS_CONFIGMAP_NAMESPACE}});
    if namespaces.get_opt(ACTORS_CONFIGMAP_NAMESPACE).await?.is_none() {
        let ns: Namespace = serde_json::from_value(ns).unwrap_or_default();
        namespaces.create(&Default::default(), &ns).await?;
    }
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ACTORS_CONFIGMAP_NAMESPACE);
    let cm = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": ACTORS_CONFIGMAP_NAME},
        "data": {"actors": names.join(",")},
    });
    let patch = serde_json::json!({"data": cm["data"]});
    if api.get_opt(ACTORS_CONFIGMAP_NAME).await?.is_some() {
        api.patch(ACTORS_CONFIGMAP_NAME, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    } else {
        let cm: ConfigMap = serde_json::from_value(cm).unwrap_or_default();
        api.create(&Default::default(), &cm).await?;
    }
    Ok(())
}

/// Aborts a spawned actor task when the row (or `kproof serve`) drops the actor.
struct Task(tokio::task::JoinHandle<()>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The KubeRay RayCluster controller (v1.7.0 behaviour). Row settings `kuberay.*` and KubeRay
/// feature gates configure it. Knob `paused: true|false` stops and resumes it (an operator
/// that is down, e.g. during its own upgrade).
#[derive(Default)]
pub struct KubeRayFactory {
    defect: Option<Defect>,
}

struct KubeRayActor {
    paused: Arc<std::sync::atomic::AtomicBool>,
    _task: Task,
}

impl Actor for KubeRayActor {
    fn knob(&mut self, knob: &str, value: &Value) -> Result<(), String> {
        match (knob, value) {
            ("paused", Value::Bool(b)) => {
                self.paused.store(*b, std::sync::atomic::Ordering::SeqCst);
                Ok(())
            }
            ("paused", other) => Err(format!("knob paused takes true or false, not {other}")),
            (other, _) => Err(format!(
                "kuberay has no knob {other:?} (it has: paused); configure it with needs.settings (kuberay.*) and featureGates"
            )),
        }
    }
}

impl ActorFactory for KubeRayFactory {
    fn name(&self) -> &str {
        "kuberay"
    }

    fn setup(&self, client: kube::Client) -> futures::future::BoxFuture<'static, Result<(), String>> {
        Box::pin(async move { RayClusterReconciler::install_crd(&client).await.map_err(|e| e.to_string()) })
    }

    fn start(&self, client: kube::Client, clock: controllers::Clock, needs: &Needs) -> Result<Box<dyn Actor>, String> {
        let mut config = KubeRayConfig { defect: self.defect, ..KubeRayConfig::default() };
        config.apply_settings(&needs.feature_gates, &needs.settings)?;
        let reconciler = RayClusterReconciler::new(client, clock, config);
        let paused = reconciler.pause_switch();
        Ok(Box::new(KubeRayActor { paused, _task: Task(tokio::spawn(reconciler.run())) }))
    }
}

/// The simulated kube-scheduler. No knobs, no settings.
pub struct SchedulerFactory;

struct SchedulerActor(#[allow(dead_code)] Task);

impl Actor for SchedulerActor {
    fn knob(&mut self, knob: &str, _: &Value) -> Result<(), String> {
        Err(format!("the scheduler has no knob {knob:?}"))
    }
}

impl ActorFactory for SchedulerFactory {
    fn name(&self) -> &str {
        "scheduler"
    }

    fn start(&self, client: kube::Client, clock: controllers::Clock, _: &Needs) -> Result<Box<dyn Actor>, String> {
        let scheduler = Scheduler::new(client, clock, SchedulerConfig::default());
        let task = tokio::spawn(async move {
            if let Err(e) = scheduler.run().await {
                tracing::warn!(error = %e, "the simulated scheduler stopped");
            }
        });
        Ok(Box::new(SchedulerActor(Task(task))))
    }
}

/// The simulated kubelet: registers a node pool, then runs pods on it. Settings:
/// `sim.nodePool` (`default` or `tiny`), `kubelet.startDelay`, `kubelet.readyDelay`,
/// `kubelet.terminationDelay` (durations such as `5s`). Knobs: see
/// [`controllers::sim::kubelet`].
pub struct KubeletFactory;

struct KubeletActor {
    handle: KubeletHandle,
    _task: Task,
}

impl Actor for KubeletActor {
    fn knob(&mut self, knob: &str, value: &Value) -> Result<(), String> {
        self.handle.turn(knob, value)
    }
}

impl ActorFactory for KubeletFactory {
    fn name(&self) -> &str {
        "kubelet"
    }

    fn start(&self, client: kube::Client, clock: controllers::Clock, needs: &Needs) -> Result<Box<dyn Actor>, String> {
        let mut config = KubeletConfig::default();
        let mut pool = "default".to_string();
        for (key, value) in &needs.settings {
            let text = || value.as_str().ok_or_else(|| format!("setting {key}: expected a string, got {value}"));
            let duration =
                || text().and_then(|t| controllers::sim::parse_duration(t).map_err(|e| format!("setting {key}: {e}")));
            match key.as_str() {
                "sim.nodePool" => pool = text()?.to_string(),
                "kubelet.startDelay" => config.start_delay = duration()?,
                "kubelet.readyDelay" => config.ready_delay = duration()?,
                "kubelet.terminationDelay" => config.termination_delay = duration()?,
                k if k.starts_with("sim.") || k.starts_with("kubelet.") => {
                    return Err(format!(
                        "unknown setting {k:?} (known: sim.nodePool, kubelet.startDelay, kubelet.readyDelay, kubelet.terminationDelay)"
                    ));
                }
                _ => {}
            }
        }
        let yaml = controllers::sim::builtin_pool(&pool)
            .ok_or_else(|| format!("setting sim.nodePool: no node pool {pool:?} (known: default, tiny)"))?;
        let nodes = controllers::sim::parse_nodes(yaml).map_err(|e| format!("node pool {pool}: {e}"))?;
        let kubelet = Kubelet::new(client.clone(), clock.clone(), config);
        let handle = kubelet.handle();
        let task = tokio::spawn(async move {
            if let Err(e) = controllers::sim::register_nodes(&client, &clock, &nodes).await {
                tracing::warn!(error = %e, "the simulated kubelet could not register its nodes");
                return;
            }
            if let Err(e) = kubelet.run().await {
                tracing::warn!(error = %e, "the simulated kubelet stopped");
            }
        });
        Ok(Box::new(KubeletActor { handle, _task: Task(task) }))
    }
}
