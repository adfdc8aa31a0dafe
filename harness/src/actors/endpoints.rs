//! The simulated EndpointSlice controller as an actor.

use crate::actors::{Actor, ActorFactory, Task};
use crate::suite::{ActorName, Needs};
use controllers::sim::SimNetwork;
use controllers::sim::endpoints::EndpointSliceController;
use serde_json::Value;

/// Starts the simulated EndpointSlice controller. No knobs, no settings.
pub struct EndpointsFactory;

struct EndpointsActor(#[allow(dead_code)] Task);

impl Actor for EndpointsActor {
    fn knob(&mut self, knob: &str, _: &Value) -> Result<(), String> {
        Err(format!("the endpoint-slice controller has no knob {knob:?}"))
    }
}

impl ActorFactory for EndpointsFactory {
    fn name(&self) -> ActorName {
        ActorName::Endpoints
    }

    fn start(
        &self,
        client: kube::Client,
        _: controllers::Clock,
        _: &Needs,
        _: &SimNetwork,
    ) -> Result<Box<dyn Actor>, String> {
        let controller = EndpointSliceController::new(client);
        let task = tokio::spawn(async move {
            if let Err(e) = controller.run().await {
                tracing::warn!(error = %e, "the simulated EndpointSlice controller stopped");
            }
        });
        Ok(Box::new(EndpointsActor(Task(task))))
    }
}
