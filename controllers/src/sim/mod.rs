//! Simulated cluster actors: what a real cluster has and the fake API server lacks.
//!
//! Every actor talks to the API only through [`kube::Client`] and reads "now" from a
//! [`Clock`](crate::Clock); every delay is a `tokio::time` sleep. So the same actors run
//! in-process against the fake server on a paused runtime (virtual time) and against
//! `kproof serve` or a real API server over TCP (real time).
//!
//! # Public API
//!
//! Nodes ([`nodes`]):
//! - [`nodes::parse_nodes`]`(yaml) -> Result<Vec<Node>, NodeFixtureError>`: core/v1 Node
//!   manifests from a (multi-document) YAML string.
//! - [`nodes::builtin_pool`]`(name)`: the node fixtures compiled in (`default`: 3 CPU nodes and
//!   2 GPU nodes tainted `nvidia.com/gpu=present:NoSchedule`; `tiny`: one 1-CPU node).
//! - [`nodes::register_nodes`]`(&client, &clock, &nodes)`: creates the nodes and writes their
//!   status (Ready, addresses, capacity/allocatable, nodeInfo), as a kubelet registering does.
//!
//! Scheduler ([`scheduler`]):
//! - [`Scheduler::new`]`(client, clock, SchedulerConfig)` and [`Scheduler::run`]`(self)`: a
//!   future that binds fitting pods through `pods/{name}/binding` and marks the others
//!   `PodScheduled=False/Unschedulable` with kube-scheduler's message; it returns only on a
//!   fatal error (drop it to stop).
//!
//! DRA ([`scheduler_dra`], [`dra_driver`]): the scheduler's DynamicResources plugin (allocation
//! from ResourceSlices, reservation in PreBind, PostFilter deallocation), the kubelet's
//! reservation check (`FailedPrepareDynamicResources`), and [`dra_driver::DraDriver`], which
//! publishes a ResourceSlice per node and driver for the devices the node fixtures declare.
//!
//! Kubelet ([`kubelet`]):
//! - [`Kubelet::new`]`(client, clock, KubeletConfig)`, [`Kubelet::handle`] and
//!   [`Kubelet::run`]`(self)`: one task for all nodes; moves bound pods Pending → Running →
//!   Ready, and deletes pods being deleted once their containers stopped.
//! - [`KubeletHandle::turn`]`(knob, value)`: changes a knob at run time (see [`kubelet`] for
//!   the knobs and the per-pod `sim.kproof.dev/*` annotations).
//!
//! The serving path of a RayService:
//! - [`network`]: the simulated cluster network ([`SimNetwork`]): in-process HTTP endpoints by
//!   host and port, and [`serve_http_proxy`] to reach them over TCP as an HTTP forward proxy.
//! - [`rayhead`]: every cluster's Ray dashboard (Serve REST API) and Serve proxies, with knobs.
//! - [`autoscaler`]: the Ray autoscaler (Serve replica demand → worker replicas).
//! - [`endpoints`]: the EndpointSlice controller.
//! - [`gateway`]: a Gateway API controller for the classes named `kproof.dev/gateway-controller`.
//! - [`traffic`]: the gateway data plane, driven by `TrafficProbe` objects.

pub mod autoscaler;
pub mod dra_driver;
pub mod endpoints;
pub mod gateway;
pub mod kubelet;
pub mod network;
pub mod nodes;
pub mod rayhead;
pub mod scheduler;
pub mod scheduler_dra;
pub mod traffic;

pub use kubelet::{Kubelet, KubeletConfig, KubeletHandle, KubeletSettings};
pub use network::{ClusterHttp, SimNetwork, serve_http_proxy};
pub use nodes::{NodeFixtureError, builtin_pool, parse_nodes, register_nodes, renew_node_leases};
pub use scheduler::{Scheduler, SchedulerConfig};

pub(crate) use crate::watch::{cache, reflect_into};
use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;

/// Caches of every pod and node, and one stream that yields after each change to either:
/// what the scheduler and the kubelet both run on.
pub(crate) fn watch_pods_and_nodes(client: &kube::Client) -> (Store<Pod>, Store<Node>, BoxStream<'static, ()>) {
    let (pods, pod_events) = cache::<Pod>(client, watcher::Config::default());
    let (nodes, node_events) = cache::<Node>(client, watcher::Config::default());
    (pods, nodes, futures::stream::select(pod_events, node_events).boxed())
}

/// A failure of a simulated actor talking to the API.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A request to the API server failed.
    #[error("{what}: {source}")]
    Api {
        /// What the actor was doing.
        what: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// A watch stream ended, which the actor cannot work without.
    #[error("the {0} watch ended")]
    WatchEnded(&'static str),
    /// The actor built an object or request the API would not take (a bug, named).
    #[error("{0}")]
    Invalid(String),
}

impl SimError {
    pub(crate) fn api(what: impl Into<String>) -> impl FnOnce(kube::Error) -> Self {
        let what = what.into();
        move |source| Self::Api { what, source }
    }

    /// Whether trying again later may succeed: the API server could not be reached or answered
    /// 429 or 5xx (as while kube-apiserver restarts). A kubelet retries such failures; it does
    /// not stop.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Api { source: kube::Error::Api(status), .. } => status.code == 429 || status.code >= 500,
            Self::Api { .. } => true,
            Self::WatchEnded(_) | Self::Invalid(_) => false,
        }
    }
}

/// How long a simulated component waits before it tries a failed request again.
pub(crate) const RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// A pass's result as a simulated component takes it: `Ok(Some(_))` when it succeeded;
/// `Ok(None)` when it failed for a moment (kube-apiserver restarting, 429, 5xx: logged, and the
/// component tries again after [`RETRY_AFTER`], as a real controller requeues); `Err` stops it.
pub(crate) fn tolerate<T>(component: &'static str, result: Result<T, SimError>) -> Result<Option<T>, SimError> {
    match result {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.is_transient() => {
            tracing::debug!(component, error = %e, "a pass failed for a moment; trying again");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}
