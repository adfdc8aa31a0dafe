//! The KubeRay operator as an actor: the reference RayCluster and RayService controllers
//! (v1.7.0 behaviour) and the minimal RayJob controller Kueue's rows need, one operator with one
//! configuration, as one Deployment runs them all.

use crate::actors::{Actor, ActorFactory, Task};
use crate::suite::{ActorName, Component, Needs, Version};
use controllers::kuberay::{KubeRayConfig, RayClusterReconciler, RayJobReconciler, RayServiceReconciler};
use controllers::sim::SimNetwork;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Starts the reference KubeRay operator, configured by `needs.featureGates.kuberay` and
/// `needs.settings.kuberay` over a base configuration. Its RayService controller reaches the
/// Ray dashboards and Serve proxies through the row's simulated network. Knobs:
/// `paused: true|false` stops and resumes it (an operator that is down, e.g. during its own
/// upgrade); `restart: true` replaces it with a fresh process, which loses what the operator
/// keeps only in memory (the Serve config cache, the deletion times of dangling clusters).
#[derive(Default)]
pub struct KubeRayFactory {
    base: KubeRayConfig,
}

impl KubeRayFactory {
    /// A factory whose operators start from `base` (then the row's gates and settings apply).
    pub fn with_base(base: KubeRayConfig) -> Self {
        Self { base }
    }
}

/// One running operator process: both controllers.
struct Operator {
    paused: [Arc<AtomicBool>; 3],
    _tasks: [Task; 3],
}

impl Operator {
    fn start(client: kube::Client, clock: controllers::Clock, config: KubeRayConfig, network: &SimNetwork) -> Self {
        let clusters = RayClusterReconciler::new(client.clone(), clock.clone(), config.clone());
        let jobs = RayJobReconciler::new(client.clone(), clock.clone(), &config);
        let services = RayServiceReconciler::new(client, clock, config, Arc::new(network.clone()));
        let paused = [clusters.pause_switch(), services.pause_switch(), jobs.pause_switch()];
        let tasks =
            [Task(tokio::spawn(clusters.run())), Task(tokio::spawn(services.run())), Task(tokio::spawn(jobs.run()))];
        Self { paused, _tasks: tasks }
    }
}

struct KubeRayActor {
    operator: Operator,
    client: kube::Client,
    clock: controllers::Clock,
    config: KubeRayConfig,
    network: SimNetwork,
}

impl Actor for KubeRayActor {
    fn knob(&mut self, knob: &str, value: &Value) -> Result<(), String> {
        match (knob, value) {
            // The reference operator keeps its caches while paused and then goes on from its
            // queue: the fake backend's model of a frozen process as well as a stopped one.
            ("paused" | "frozen", Value::Bool(b)) => {
                for p in &self.operator.paused {
                    p.store(*b, Ordering::SeqCst);
                }
                Ok(())
            }
            ("paused" | "frozen", other) => Err(format!("knob {knob} takes true or false, not {other}")),
            ("restart", Value::Bool(true)) => {
                // A new process draws other random names than the old one did.
                self.config.name_seed = self.config.name_seed.wrapping_add(1);
                self.operator =
                    Operator::start(self.client.clone(), self.clock.clone(), self.config.clone(), &self.network);
                Ok(())
            }
            ("restart", other) => Err(format!("knob restart takes true, not {other}")),
            (other, _) => Err(format!(
                "kuberay has no knob {other:?} (it has: paused, frozen, restart); configure it with needs.settings.kuberay and needs.featureGates.kuberay"
            )),
        }
    }
}

impl ActorFactory for KubeRayFactory {
    fn name(&self) -> ActorName {
        ActorName::Kuberay
    }

    fn setup(&self, client: kube::Client) -> futures::future::BoxFuture<'static, Result<(), String>> {
        Box::pin(async move {
            RayClusterReconciler::install_crd(&client).await.map_err(|e| e.to_string())?;
            RayJobReconciler::install_crd(&client).await.map_err(|e| e.to_string())?;
            RayServiceReconciler::install_crd(&client).await.map_err(|e| e.to_string())
        })
    }

    fn crds(&self) -> Vec<&'static CustomResourceDefinition> {
        use controllers::crds::{raycluster::raycluster_crd, rayjob::rayjob_crd, rayservice::rayservice_crd};
        vec![raycluster_crd(), rayjob_crd(), rayservice_crd()]
    }

    fn models(&self) -> Option<(Component, Version)> {
        Version::parse(controllers::kuberay::MODELLED_VERSION).map(|v| (Component::Kuberay, v))
    }

    fn facts(&self, needs: &Needs) -> std::collections::BTreeMap<String, String> {
        let stamped = needs.settings.kuberay.version.clone().unwrap_or_else(|| self.base.kuberay_version.clone());
        [("kuberay.version".to_string(), stamped)].into()
    }

    fn start(
        &self,
        client: kube::Client,
        clock: controllers::Clock,
        needs: &Needs,
        network: &SimNetwork,
    ) -> Result<Box<dyn Actor>, String> {
        let mut config = self.base.clone();
        config.apply(&needs.feature_gates.kuberay, &needs.settings.kuberay);
        let operator = Operator::start(client.clone(), clock.clone(), config.clone(), network);
        Ok(Box::new(KubeRayActor { operator, client, clock, config, network: network.clone() }))
    }
}
