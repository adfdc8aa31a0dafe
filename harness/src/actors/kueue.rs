//! Kueue as an actor: the reference controller (`controllers::kueue`), Kueue v0.19.2 with PR
//! 11264's RayService upgrade gate (without the kueue#15661 fix, which came after v0.19.2).
//! Knobs: `paused` stops the controller and starts a new one when unpaused, `restart` does both
//! at once, as the upstream backend stops and starts Kueue's process. Unlike a stopped Kueue
//! process, whose webhooks then refuse every call, the fake API server's Kueue webhooks keep
//! answering: rows write no queued job while Kueue is stopped.

use crate::actors::{Actor, ActorFactory, Task};
use crate::suite::{ActorName, Component, Needs, Version};
use controllers::kueue::{KueueConfig, KueueController};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;
use std::sync::Arc;

/// One of Kueue's validating job webhooks for a Ray kind, checking creates and updates with
/// [`controllers::kueue::webhook::validate_ray_job`].
struct RayJobWebhook {
    resource: &'static str,
    name: &'static str,
    rayservice_upgrade_gate: bool,
}

impl fake_apiserver::ValidatingWebhook for RayJobWebhook {
    fn name(&self) -> &str {
        self.name
    }

    fn handles(&self, group: &str, resource: &str) -> bool {
        group == "ray.io" && resource == self.resource
    }

    fn validate(&self, old: Option<&Value>, new: &Value) -> Result<(), String> {
        controllers::kueue::webhook::validate_ray_job(self.resource, old, new, self.rayservice_upgrade_gate)
    }
}

/// One of Kueue's defaulting job webhooks for a Ray kind
/// ([`controllers::kueue::defaulting::default_ray_job`]).
struct RayJobDefaulting {
    resource: &'static str,
    name: &'static str,
    gates: controllers::kueue::defaulting::DefaultingGates,
}

impl fake_apiserver::MutatingWebhook for RayJobDefaulting {
    fn name(&self) -> &str {
        self.name
    }

    fn handles(&self, group: &str, resource: &str) -> bool {
        group == "ray.io" && resource == self.resource
    }

    fn default(&self, obj: &mut Value, cluster: &dyn fake_apiserver::ClusterReader) -> Result<(), String> {
        let get = |api_version: &str, kind: &str, namespace: &str, name: &str| {
            cluster.get(api_version, kind, namespace, name)
        };
        controllers::kueue::defaulting::default_ray_job(self.resource, obj, self.gates, &get)
    }
}

/// Kueue's validating Workload webhook ([`controllers::kueue::webhook::validate_workload`]);
/// `mutable` is the defect `ReservedPodSetsMutable`, which lets every update through.
struct WorkloadWebhook {
    mutable: bool,
}

impl fake_apiserver::ValidatingWebhook for WorkloadWebhook {
    fn name(&self) -> &str {
        controllers::kueue::webhook::WORKLOAD_WEBHOOK
    }

    fn handles(&self, group: &str, resource: &str) -> bool {
        group == "kueue.x-k8s.io" && resource == "workloads"
    }

    fn validate(&self, old: Option<&Value>, new: &Value) -> Result<(), String> {
        if self.mutable {
            return Ok(());
        }
        controllers::kueue::webhook::validate_workload(old, new)
    }
}

/// Starts the reference Kueue from `base` (the wrong-reconciler tests set a defect there).
#[derive(Debug, Clone, Default)]
pub struct KueueFactory {
    /// The configuration every started controller runs with.
    pub base: KueueConfig,
}

impl ActorFactory for KueueFactory {
    fn name(&self) -> ActorName {
        ActorName::Kueue
    }

    fn setup(&self, client: kube::Client) -> futures::future::BoxFuture<'static, Result<(), String>> {
        Box::pin(async move { KueueController::install_crds(&client).await.map_err(|e| e.to_string()) })
    }

    fn crds(&self) -> Vec<&'static CustomResourceDefinition> {
        controllers::kueue::objects::kueue_crds().iter().collect()
    }

    fn models(&self) -> Option<(Component, Version)> {
        Version::parse(controllers::kueue::MODELLED_VERSION).map(|v| (Component::Kueue, v))
    }

    fn webhooks(&self) -> Vec<Arc<dyn fake_apiserver::ValidatingWebhook>> {
        let gate = self.base.rayservice_upgrade_gate;
        controllers::kueue::webhook::RAY_WEBHOOKS
            .iter()
            .map(|(resource, name)| {
                Arc::new(RayJobWebhook { resource, name, rayservice_upgrade_gate: gate })
                    as Arc<dyn fake_apiserver::ValidatingWebhook>
            })
            .chain(std::iter::once(Arc::new(WorkloadWebhook {
                mutable: self.base.defective(controllers::kueue::KueueDefect::ReservedPodSetsMutable),
            }) as Arc<dyn fake_apiserver::ValidatingWebhook>))
            .collect()
    }

    /// Kueue's release manifests (config/default at v0.19.2) create its namespace
    /// `kueue-system`; they ship no queues or flavors.
    fn installs(&self) -> Vec<Value> {
        vec![serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kueue-system"}})]
    }

    fn mutating_webhooks(&self) -> Vec<Arc<dyn fake_apiserver::MutatingWebhook>> {
        let gates = controllers::kueue::defaulting::DefaultingGates {
            elastic_jobs: self.base.elastic_jobs
                && !self.base.defective(controllers::kueue::KueueDefect::ElasticGateNotDefaulted),
            rayservice_upgrade_gate: self.base.rayservice_upgrade_gate,
        };
        controllers::kueue::defaulting::RAY_DEFAULTING_WEBHOOKS
            .iter()
            .map(|(resource, name)| {
                Arc::new(RayJobDefaulting { resource, name, gates }) as Arc<dyn fake_apiserver::MutatingWebhook>
            })
            .collect()
    }

    fn start(
        &self,
        client: kube::Client,
        clock: controllers::Clock,
        _: &Needs,
        _: &controllers::sim::SimNetwork,
    ) -> Result<Box<dyn Actor>, String> {
        let mut actor = KueueActor { client, clock, config: self.base.clone(), task: None };
        actor.start();
        Ok(Box::new(actor))
    }
}

/// The running reference Kueue, `task` `None` while paused.
struct KueueActor {
    client: kube::Client,
    clock: controllers::Clock,
    config: KueueConfig,
    task: Option<Task>,
}

impl KueueActor {
    /// Starts a new controller (with empty caches, as a new process starts).
    fn start(&mut self) {
        let controller = KueueController::new(self.client.clone(), self.clock.clone(), self.config.clone());
        self.task = Some(Task(tokio::spawn(async move {
            if let Err(e) = controller.run().await {
                tracing::warn!(error = %e, "the reference Kueue stopped");
            }
        })));
    }
}

impl Actor for KueueActor {
    fn knob(&mut self, knob: &str, value: &Value) -> Result<(), String> {
        match (knob, value) {
            ("paused", Value::Bool(true)) => {
                self.task = None;
                Ok(())
            }
            ("paused", Value::Bool(false)) => {
                if self.task.is_none() {
                    self.start();
                }
                Ok(())
            }
            ("paused", other) => Err(format!("knob paused takes true or false, not {other}")),
            ("restart", Value::Bool(true)) => {
                self.task = None;
                self.start();
                Ok(())
            }
            ("restart", other) => Err(format!("knob restart takes true, not {other}")),
            (other, _) => Err(format!("kueue has no knob {other:?} (it has: paused, restart)")),
        }
    }
}
