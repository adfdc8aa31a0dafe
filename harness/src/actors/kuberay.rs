//! The KubeRay operator as an actor: the reference RayCluster controller (v1.7.0 behaviour).

use crate::actors::{Actor, ActorFactory, Task};
use crate::suite::{ActorName, Component, Needs, Version};
use controllers::kuberay::{KubeRayConfig, RayClusterReconciler};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Starts the reference KubeRay operator, configured by `needs.featureGates.kuberay` and
/// `needs.settings.kuberay` over a base configuration. Knob `paused: true|false` stops and
/// resumes it (an operator that is down, e.g. during its own upgrade).
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

struct KubeRayActor {
    paused: Arc<AtomicBool>,
    _task: Task,
}

impl Actor for KubeRayActor {
    fn knob(&mut self, knob: &str, value: &Value) -> Result<(), String> {
        match (knob, value) {
            ("paused", Value::Bool(b)) => {
                self.paused.store(*b, Ordering::SeqCst);
                Ok(())
            }
            ("paused", other) => Err(format!("knob paused takes true or false, not {other}")),
            (other, _) => Err(format!(
                "kuberay has no knob {other:?} (it has: paused); configure it with needs.settings.kuberay and needs.featureGates.kuberay"
            )),
        }
    }
}

impl ActorFactory for KubeRayFactory {
    fn name(&self) -> ActorName {
        ActorName::Kuberay
    }

    fn setup(&self, client: kube::Client) -> futures::future::BoxFuture<'static, Result<(), String>> {
        Box::pin(async move { RayClusterReconciler::install_crd(&client).await.map_err(|e| e.to_string()) })
    }

    fn models(&self) -> Option<(Component, Version)> {
        Version::parse(controllers::kuberay::MODELLED_VERSION).map(|v| (Component::Kuberay, v))
    }

    fn facts(&self, needs: &Needs) -> std::collections::BTreeMap<String, String> {
        let stamped = needs.settings.kuberay.version.clone().unwrap_or_else(|| self.base.kuberay_version.clone());
        [("kuberay.version".to_string(), stamped)].into()
    }

    fn start(&self, client: kube::Client, clock: controllers::Clock, needs: &Needs) -> Result<Box<dyn Actor>, String> {
        let mut config = self.base.clone();
        config.apply(&needs.feature_gates.kuberay, &needs.settings.kuberay);
        let reconciler = RayClusterReconciler::new(client, clock, config);
        let paused = reconciler.pause_switch();
        Ok(Box::new(KubeRayActor { paused, _task: Task(tokio::spawn(reconciler.run())) }))
    }
}
