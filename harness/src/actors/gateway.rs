//! The simulated Gateway API controller as an actor. Its setup installs the Gateway API CRDs;
//! it installs the GatewayClass `istio` (controllerName `kproof.dev/gateway-controller`), as
//! installing Istio does, before incremental upgrades can run.

use crate::actors::{Actor, ActorFactory, Task};
use crate::suite::{ActorName, Needs};
use controllers::crds::gateway::{GatewayClass, GatewayClassSpec, gateway_api_crds};
use controllers::sim::SimNetwork;
use controllers::sim::gateway::{CONTROLLER_NAME, DEFAULT_CLASS, GatewayConfig, GatewayController, GatewayHandle};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

/// Starts the simulated gateway controller, configured by `needs.settings.gateway`
/// (`programDelay`). Knobs: see [`controllers::sim::gateway`].
#[derive(Debug, Default, Clone)]
pub struct GatewayFactory {
    crds_installed: bool,
}

impl GatewayFactory {
    /// For a cluster that already serves the Gateway API with the real CRDs (the upstream
    /// backend installs `sigs.k8s.io/gateway-api`'s standard channel): the setup leaves them as
    /// they are and only the GatewayClass is installed.
    pub fn with_installed_crds() -> Self {
        Self { crds_installed: true }
    }
}

struct GatewayActor {
    handle: GatewayHandle,
    _task: Task,
}

impl Actor for GatewayActor {
    fn knob(&mut self, knob: &str, value: &Value) -> Result<(), String> {
        self.handle.turn(knob, value)
    }
}

impl ActorFactory for GatewayFactory {
    fn name(&self) -> ActorName {
        ActorName::Gateway
    }

    fn crds(&self) -> Vec<&'static CustomResourceDefinition> {
        gateway_api_crds().iter().collect()
    }

    fn setup(&self, client: kube::Client) -> futures::future::BoxFuture<'static, Result<(), String>> {
        let install = !self.crds_installed;
        Box::pin(async move {
            if install {
                controllers::crds::install(&client, gateway_api_crds()).await.map_err(|e| e.to_string())?;
            }
            Ok(())
        })
    }

    fn installs(&self) -> Vec<Value> {
        let class = GatewayClass::new(
            DEFAULT_CLASS,
            GatewayClassSpec {
                controller_name: CONTROLLER_NAME.into(),
                description: Some("kproof's simulated gateway".into()),
                extra: Default::default(),
            },
        );
        serde_json::to_value(&class).into_iter().collect()
    }

    fn start(
        &self,
        client: kube::Client,
        clock: controllers::Clock,
        needs: &Needs,
        _: &SimNetwork,
    ) -> Result<Box<dyn Actor>, String> {
        let mut config = GatewayConfig::default();
        config.apply(&needs.settings.gateway);
        let controller = GatewayController::new(client, clock, config);
        let handle = controller.handle();
        let task = tokio::spawn(async move {
            if let Err(e) = controller.run().await {
                tracing::warn!(error = %e, "the simulated gateway controller stopped");
            }
        });
        Ok(Box::new(GatewayActor { handle, _task: Task(task) }))
    }
}
