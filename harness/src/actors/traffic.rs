//! The simulated gateway data plane as an actor: it sends the requests `TrafficProbe` objects
//! ask for. Its setup installs the TrafficProbe CRD.

use crate::actors::{Actor, ActorFactory, KnoblessActor};
use crate::suite::{ActorName, Needs};
use controllers::crds::trafficprobe::trafficprobe_crd;
use controllers::sim::SimNetwork;
use controllers::sim::traffic::TrafficSimulator;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// Starts the simulated data plane. No knobs, no settings: a probe says what to send.
pub struct TrafficFactory;

impl ActorFactory for TrafficFactory {
    fn name(&self) -> ActorName {
        ActorName::Traffic
    }

    fn setup(&self, client: kube::Client) -> futures::future::BoxFuture<'static, Result<(), String>> {
        Box::pin(
            async move { controllers::crds::install(&client, [trafficprobe_crd()]).await.map_err(|e| e.to_string()) },
        )
    }

    fn crds(&self) -> Vec<&'static CustomResourceDefinition> {
        vec![trafficprobe_crd()]
    }

    fn start(
        &self,
        client: kube::Client,
        clock: controllers::Clock,
        _: &Needs,
        network: &SimNetwork,
    ) -> Result<Box<dyn Actor>, String> {
        let simulator = TrafficSimulator::new(client, clock, network.clone());
        let task = tokio::spawn(async move {
            if let Err(e) = simulator.run().await {
                tracing::warn!(error = %e, "the simulated data plane stopped");
            }
        });
        Ok(KnoblessActor::boxed(ActorName::Traffic, task, "create or change a TrafficProbe instead"))
    }
}
