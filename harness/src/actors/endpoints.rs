//! The simulated EndpointSlice controller as an actor.

use crate::actors::{Actor, ActorFactory, KnoblessActor};
use crate::suite::{ActorName, Needs};
use controllers::sim::SimNetwork;
use controllers::sim::endpoints::EndpointSliceController;

/// Starts the simulated EndpointSlice controller. No knobs, no settings.
pub struct EndpointsFactory;

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
        Ok(KnoblessActor::boxed(ActorName::Endpoints, task, ""))
    }
}
