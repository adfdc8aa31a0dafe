//! The reference controllers and simulated actors, wrapped for the backends: each becomes an
//! [`ActorFactory`] the in-process backend starts for every row and `kproof serve` starts once.

use crate::backend::{Actor, ActorFactory, InProcessBackend};
use crate::suite::Needs;
use controllers::kuberay::{KubeRayConfig, RayClusterReconciler};
use serde_json::Value;
use std::sync::Arc;

/// Every reference actor, in start order.
pub fn reference_actors() -> Vec<Arc<dyn ActorFactory>> {
    vec![Arc::new(KubeRayFactory)]
}

/// The in-process backend with every reference actor.
pub fn reference_backend() -> InProcessBackend {
    reference_actors().into_iter().fold(InProcessBackend::new(), |b, f| b.with_actor(f))
}

/// Aborts a spawned actor task when the row (or `kproof serve`) drops the actor.
struct Task(tokio::task::JoinHandle<()>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The KubeRay RayCluster controller (v1.7.0 behaviour). Row settings `kuberay.*` and KubeRay
/// feature gates configure it; it has no knobs.
pub struct KubeRayFactory;

struct KubeRayActor(#[allow(dead_code)] Task);

impl Actor for KubeRayActor {
    fn knob(&mut self, knob: &str, _: &Value) -> Result<(), String> {
        Err(format!("kuberay has no knob {knob:?}; configure it with needs.settings (kuberay.*) and featureGates"))
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
        let mut config = KubeRayConfig::default();
        config.apply_settings(&needs.feature_gates, &needs.settings)?;
        let reconciler = RayClusterReconciler::new(client, clock, config);
        Ok(Box::new(KubeRayActor(Task(tokio::spawn(reconciler.run())))))
    }
}
