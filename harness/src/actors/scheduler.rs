//! The simulated kube-scheduler as an actor.

use crate::actors::dra::DraBase;
use crate::actors::{Actor, ActorFactory, KnoblessActor};
use crate::suite::{ActorName, DraComponent, Needs};
use controllers::sim::{Scheduler, SchedulerConfig};

/// Starts the simulated kube-scheduler, its DynamicResources plugin configured by the row's
/// `needs.dra`. No knobs, no settings.
#[derive(Debug, Clone, Default)]
pub struct SchedulerFactory(pub DraBase);

impl ActorFactory for SchedulerFactory {
    fn name(&self) -> ActorName {
        ActorName::Scheduler
    }

    fn start(
        &self,
        client: kube::Client,
        clock: controllers::Clock,
        needs: &Needs,
        _: &controllers::sim::SimNetwork,
    ) -> Result<Box<dyn Actor>, String> {
        let config = SchedulerConfig { dra: self.0.config(needs, DraComponent::KubeScheduler), ..Default::default() };
        let scheduler = Scheduler::new(client, clock, config);
        let task = tokio::spawn(async move {
            if let Err(e) = scheduler.run().await {
                tracing::warn!(error = %e, "the simulated scheduler stopped");
            }
        });
        Ok(KnoblessActor::boxed(ActorName::Scheduler, task, ""))
    }
}
