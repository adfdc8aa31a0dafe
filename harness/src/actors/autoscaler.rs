//! The simulated Ray autoscaler as an actor.

use crate::actors::{Actor, ActorFactory, KnoblessActor};
use crate::suite::{ActorName, Needs};
use controllers::sim::SimNetwork;
use controllers::sim::autoscaler::{AutoscalerConfig, RayAutoscaler};

/// Starts the simulated Ray autoscaler, configured by `needs.settings.autoscaler` (`interval`,
/// `idleTimeout`). No knobs.
pub struct AutoscalerFactory;

impl ActorFactory for AutoscalerFactory {
    fn name(&self) -> ActorName {
        ActorName::Autoscaler
    }

    fn start(
        &self,
        client: kube::Client,
        _: controllers::Clock,
        needs: &Needs,
        network: &SimNetwork,
    ) -> Result<Box<dyn Actor>, String> {
        let mut config = AutoscalerConfig::default();
        config.apply(&needs.settings.autoscaler);
        let autoscaler = RayAutoscaler::new(client, network.clone(), config);
        let task = tokio::spawn(async move {
            if let Err(e) = autoscaler.run().await {
                tracing::warn!(error = %e, "the simulated Ray autoscaler stopped");
            }
        });
        Ok(KnoblessActor::boxed(ActorName::Autoscaler, task, "configure it with needs.settings.autoscaler"))
    }
}
