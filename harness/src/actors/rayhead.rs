//! The simulated Ray heads as an actor: every cluster's dashboard and Serve proxies, on the
//! row's simulated network.

use crate::actors::{Actor, ActorFactory, Task};
use crate::suite::{ActorName, Needs};
use controllers::sim::SimNetwork;
use controllers::sim::network::Registration;
use controllers::sim::rayhead::{RayHead, RayHeadConfig, RayHeadHandle};
use serde_json::Value;

/// Starts the simulated Ray heads, configured by `needs.settings.rayHead` (`deployDelay`,
/// `replicaStartDelay`). Knobs: see [`controllers::sim::rayhead`].
pub struct RayHeadFactory;

struct RayHeadActor {
    handle: RayHeadHandle,
    _registration: Registration,
    _task: Task,
}

impl Actor for RayHeadActor {
    fn knob(&mut self, knob: &str, value: &Value) -> Result<(), String> {
        self.handle.turn(knob, value)
    }
}

impl ActorFactory for RayHeadFactory {
    fn name(&self) -> ActorName {
        ActorName::RayHead
    }

    fn start(
        &self,
        client: kube::Client,
        _: controllers::Clock,
        needs: &Needs,
        network: &SimNetwork,
    ) -> Result<Box<dyn Actor>, String> {
        let mut config = RayHeadConfig::default();
        config.apply(&needs.settings.ray_head);
        let heads = RayHead::new(client, config);
        let handle = heads.handle();
        let registration = heads.register(network);
        let task = tokio::spawn(async move {
            if let Err(e) = heads.run().await {
                tracing::warn!(error = %e, "the simulated Ray heads stopped");
            }
        });
        Ok(Box::new(RayHeadActor { handle, _registration: registration, _task: Task(task) }))
    }
}
