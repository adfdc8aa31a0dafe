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

/// Lists `names` in the `kube-public/kproof-actors` ConfigMap, where the kubeconfig backend
/// looks for the actors a cluster runs.
pub async fn announce(client: &kube::Client, names: &[&str]) -> Result<(), kube::Error> {
    use crate::backend::{ACTORS_CONFIGMAP_NAME, ACTORS_CONFIGMAP_NAMESPACE};
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kube::api::{Api, Patch, PatchParams};
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ACTORS_CONFIGMAP_NAMESPACE}});
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
