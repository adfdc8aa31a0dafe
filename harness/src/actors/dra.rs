//! The reference DRA components as actors: kube-controller-manager's resourceclaim,
//! podgroupprotection and device-taint-eviction controllers (`controllers::dra`) and the DRA driver stand-in that
//! publishes ResourceSlices (`controllers::sim::dra_driver`). Each runs with the configuration
//! the row's `needs.dra` gives its component. No knobs.

use crate::actors::{Actor, ActorFactory, KnoblessActor};
use crate::suite::{ActorName, DraComponent, Needs};
use controllers::dra::{
    DeviceTaintEvictionController, DraConfig, PodGroupProtectionController, ResourceClaimController,
};
use controllers::sim::dra_driver::DraDriver;
use serde_json::Value;

/// A change a factory makes to every configuration it builds (the wrong-component tests set a
/// deliberate defect this way).
pub type DraTweak = std::sync::Arc<dyn Fn(&mut DraConfig) + Send + Sync>;

/// How a DRA-aware factory builds its configuration: the row's `needs.dra` for its component,
/// then the tweak, if any.
#[derive(Clone, Default)]
pub struct DraBase {
    /// Applied to every configuration built.
    pub tweak: Option<DraTweak>,
}

impl std::fmt::Debug for DraBase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DraBase").field("tweak", &self.tweak.is_some()).finish()
    }
}

impl DraBase {
    /// A base that applies `tweak`.
    pub fn with_tweak(tweak: impl Fn(&mut DraConfig) + Send + Sync + 'static) -> Self {
        Self { tweak: Some(std::sync::Arc::new(tweak)) }
    }

    /// The configuration of `component` for a row configured with `needs`.
    pub fn config(&self, needs: &Needs, component: DraComponent) -> DraConfig {
        let mut config = needs.dra.config(component);
        if let Some(t) = &self.tweak {
            t(&mut config);
        }
        config
    }
}

/// Starts the reference resourceclaim controller.
#[derive(Debug, Clone, Default)]
pub struct ResourceClaimControllerFactory(pub DraBase);

impl ActorFactory for ResourceClaimControllerFactory {
    fn name(&self) -> ActorName {
        ActorName::ResourceClaimController
    }

    fn start(
        &self,
        client: kube::Client,
        clock: controllers::Clock,
        needs: &Needs,
        _: &controllers::sim::SimNetwork,
    ) -> Result<Box<dyn Actor>, String> {
        let controller =
            ResourceClaimController::new(client, clock, self.0.config(needs, DraComponent::KubeControllerManager));
        let task = tokio::spawn(async move {
            if let Err(e) = controller.run().await {
                tracing::warn!(error = %e, "the resourceclaim controller stopped");
            }
        });
        Ok(KnoblessActor::boxed(self.name(), task, ""))
    }
}

/// Starts the reference podgroupprotection controller.
#[derive(Debug, Clone, Default)]
pub struct PodGroupProtectionFactory(pub DraBase);

impl ActorFactory for PodGroupProtectionFactory {
    fn name(&self) -> ActorName {
        ActorName::PodGroupProtection
    }

    fn start(
        &self,
        client: kube::Client,
        _: controllers::Clock,
        needs: &Needs,
        _: &controllers::sim::SimNetwork,
    ) -> Result<Box<dyn Actor>, String> {
        let controller =
            PodGroupProtectionController::new(client, self.0.config(needs, DraComponent::KubeControllerManager));
        let task = tokio::spawn(async move {
            if let Err(e) = controller.run().await {
                tracing::warn!(error = %e, "the podgroupprotection controller stopped");
            }
        });
        Ok(KnoblessActor::boxed(self.name(), task, ""))
    }
}

/// Starts the DRA driver stand-in.
#[derive(Debug, Clone, Copy, Default)]
pub struct DraDriverFactory;

impl ActorFactory for DraDriverFactory {
    fn name(&self) -> ActorName {
        ActorName::DraDriver
    }

    fn installs(&self) -> Vec<Value> {
        controllers::sim::dra_driver::DEFAULT_POOL_DRIVERS
            .iter()
            .map(|d| controllers::sim::dra_driver::device_class(d))
            .collect()
    }

    fn start(
        &self,
        client: kube::Client,
        _: controllers::Clock,
        _: &Needs,
        _: &controllers::sim::SimNetwork,
    ) -> Result<Box<dyn Actor>, String> {
        let driver = DraDriver::new(client);
        let task = tokio::spawn(async move {
            if let Err(e) = driver.run().await {
                tracing::warn!(error = %e, "the DRA driver stand-in stopped");
            }
        });
        Ok(KnoblessActor::boxed(self.name(), task, ""))
    }
}

/// Starts the reference device-taint-eviction controller.
#[derive(Debug, Clone, Default)]
pub struct DeviceTaintEvictionFactory(pub DraBase);

impl ActorFactory for DeviceTaintEvictionFactory {
    fn name(&self) -> ActorName {
        ActorName::DeviceTaintEviction
    }

    fn start(
        &self,
        client: kube::Client,
        clock: controllers::Clock,
        needs: &Needs,
        _: &controllers::sim::SimNetwork,
    ) -> Result<Box<dyn Actor>, String> {
        let controller = DeviceTaintEvictionController::new(
            client,
            clock,
            self.0.config(needs, DraComponent::KubeControllerManager),
        );
        let task = tokio::spawn(async move {
            if let Err(e) = controller.run().await {
                tracing::warn!(error = %e, "the device-taint-eviction controller stopped");
            }
        });
        Ok(KnoblessActor::boxed(self.name(), task, ""))
    }
}
