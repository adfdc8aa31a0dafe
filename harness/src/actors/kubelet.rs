//! The simulated kubelet as an actor: it registers a node pool, then runs pods on it.

use crate::actors::dra::DraBase;
use crate::actors::{Actor, ActorFactory, Task};
use crate::suite::{ActorName, DraComponent, Needs};
use controllers::sim::kubelet::{Kubelet, KubeletConfig, KubeletHandle};
use serde_json::Value;

/// Starts the simulated kubelet, configured by `needs.settings.kubelet` (`nodePool`: `default`
/// or `tiny`; `startDelay`, `readyDelay`, `terminationDelay` as Go durations). Knobs: see
/// [`controllers::sim::kubelet`].
#[derive(Debug, Clone, Default)]
pub struct KubeletFactory {
    node_leases: bool,
    dra: DraBase,
    /// The DRA settings of a shared kubelet (the upstream backend's), instead of the row's.
    fixed_dra: Option<crate::suite::DraNeeds>,
}

impl KubeletFactory {
    /// A kubelet that also renews its nodes' Leases every 10 s, as a real kubelet does: what a
    /// real kube-controller-manager's node lifecycle controller needs to keep the nodes Ready.
    pub fn with_node_leases() -> Self {
        Self { node_leases: true, ..Self::default() }
    }

    /// This kubelet with its reservation check built from `dra` (the wrong-component tests).
    pub fn with_dra(mut self, dra: DraBase) -> Self {
        self.dra = dra;
        self
    }

    /// A kubelet whose DRA gates are `dra`'s whatever the row says: a kubelet shared by every
    /// row, on a cluster whose gates are fixed.
    pub fn with_fixed_dra(mut self, dra: crate::suite::DraNeeds) -> Self {
        self.fixed_dra = Some(dra);
        self
    }
}

struct KubeletActor {
    handle: KubeletHandle,
    _task: Task,
}

impl Actor for KubeletActor {
    fn knob(&mut self, knob: &str, value: &Value) -> Result<(), String> {
        self.handle.turn(knob, value)
    }
}

impl ActorFactory for KubeletFactory {
    fn name(&self) -> ActorName {
        ActorName::Kubelet
    }

    fn start(
        &self,
        client: kube::Client,
        clock: controllers::Clock,
        needs: &Needs,
        _: &controllers::sim::SimNetwork,
    ) -> Result<Box<dyn Actor>, String> {
        let settings = &needs.settings.kubelet;
        let mut config = KubeletConfig::default();
        config.apply(settings);
        let mut dra_needs = needs.clone();
        if let Some(dra) = &self.fixed_dra {
            dra_needs.dra = dra.clone();
        }
        config.dra = self.dra.config(&dra_needs, DraComponent::Kubelet);
        let pool = settings.node_pool.as_deref().unwrap_or("default");
        let yaml = controllers::sim::builtin_pool(pool)
            .ok_or_else(|| format!("settings.kubelet.nodePool: no node pool {pool:?} (known: default, tiny)"))?;
        let nodes = controllers::sim::parse_nodes(yaml).map_err(|e| format!("node pool {pool}: {e}"))?;
        let kubelet = Kubelet::new(client.clone(), clock.clone(), config);
        let handle = kubelet.handle();
        let node_leases = self.node_leases;
        let task = tokio::spawn(async move {
            if let Err(e) = controllers::sim::register_nodes(&client, &clock, &nodes).await {
                tracing::warn!(error = %e, "the simulated kubelet could not register its nodes");
                return;
            }
            let names: Vec<String> = nodes.iter().filter_map(|n| n.metadata.name.clone()).collect();
            let leases = async {
                if node_leases {
                    controllers::sim::renew_node_leases(&client, &clock, &names).await
                } else {
                    std::future::pending().await
                }
            };
            tokio::select! {
                r = kubelet.run() => if let Err(e) = r {
                    tracing::warn!(error = %e, "the simulated kubelet stopped");
                },
                r = leases => if let Err(e) = r {
                    tracing::warn!(error = %e, "the simulated kubelet stopped renewing its node leases");
                },
            }
        });
        Ok(Box::new(KubeletActor { handle, _task: Task(task) }))
    }
}
