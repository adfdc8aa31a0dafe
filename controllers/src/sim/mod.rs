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
pub mod endpoints;
pub mod gateway;
pub mod kubelet;
pub mod network;
pub mod nodes;
pub mod rayhead;
pub mod scheduler;
pub mod selector;
pub mod traffic;

pub use kubelet::{Kubelet, KubeletConfig, KubeletHandle, KubeletSettings};
pub use network::{ClusterHttp, SimNetwork, serve_http_proxy};
pub use nodes::{NodeFixtureError, builtin_pool, parse_nodes, register_nodes};
pub use scheduler::{Scheduler, SchedulerConfig};

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use std::time::Duration;

/// Caches of every pod and node, and one stream that yields after each change to either:
/// what the scheduler and the kubelet both run on.
pub(crate) fn watch_pods_and_nodes(client: &kube::Client) -> (Store<Pod>, Store<Node>, BoxStream<'static, ()>) {
    let (pods, pod_writer) = reflector::store::<Pod>();
    let (nodes, node_writer) = reflector::store::<Node>();
    let pod_events = watcher(Api::<Pod>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .reflect(pod_writer)
        .map(|_| ())
        .boxed();
    let node_events = watcher(Api::<Node>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .reflect(node_writer)
        .map(|_| ())
        .boxed();
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
}

/// A duration written as Go writes one (`30s`, `1m30s`, `1.5s`, `500ms`), for settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GoDuration(pub Duration);

impl serde::Serialize for GoDuration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}ms", self.0.as_millis()))
    }
}

impl<'de> serde::Deserialize<'de> for GoDuration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        parse_duration(&text).map(GoDuration).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for GoDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "GoDuration".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A Go duration: 30s, 1m30s, 1.5s, 500ms",
            "pattern": "^(0|([0-9]+(\\.[0-9]*)?(ns|us|µs|ms|s|m|h))+)$"
        })
    }
}

/// Parses a duration such as `30s`, `1m30s`, `500ms`, `2h` or `0` (Go's `time.ParseDuration`
/// units `h`, `m`, `s`, `ms`, `us`, `ns`; decimals allowed, as in `1.5s`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err("an empty duration".into());
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if num_len == 0 {
            return Err(format!("invalid duration {text:?}: expected a number at {rest:?}"));
        }
        let value: f64 = rest[..num_len]
            .parse()
            .map_err(|_| format!("invalid duration {text:?}: bad number {:?}", &rest[..num_len]))?;
        rest = &rest[num_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            "" => return Err(format!("invalid duration {text:?}: missing unit (h, m, s, ms, us, ns)")),
            u => return Err(format!("invalid duration {text:?}: unknown unit {u:?}")),
        };
        total += value * seconds;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).map_err(|e| format!("invalid duration {text:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_like_go() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("30").unwrap_err().contains("missing unit"));
        assert!(parse_duration("3d").unwrap_err().contains("unknown unit \"d\""));
        assert!(parse_duration("").is_err());
    }
}
