//! Shared set-up for the simulated-actor tests: an in-process fake API server on the test's
//! paused runtime, a node pool registered, the scheduler (and optionally the kubelet) running.
#![allow(dead_code)]

use controllers::Clock;
use controllers::sim::{
    Kubelet, KubeletConfig, KubeletHandle, Scheduler, SchedulerConfig, builtin_pool, parse_nodes, register_nodes,
};
use fake_apiserver::{ApiServer, Config};
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use serde_json::{Value, json};
use std::time::Duration;

/// A running simulation; dropping it stops the actors.
pub struct Sim {
    pub server: ApiServer,
    pub client: kube::Client,
    pub clock: Clock,
    pub pods: Api<Pod>,
    /// The kubelet's knobs (when it runs).
    pub kubelet: Option<KubeletHandle>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Sim {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Sim {
    /// Runs `actor` until the simulation is dropped; an actor error fails the test.
    pub fn spawn<F>(&mut self, actor: F)
    where
        F: std::future::Future<Output = Result<(), controllers::sim::SimError>> + Send + 'static,
    {
        self.tasks.push(tokio::spawn(async move {
            if let Err(e) = actor.await {
                panic!("actor failed: {e}");
            }
        }));
    }
}

/// The fake server with node pool `pool` registered and the scheduler running (and the
/// kubelet when `kubelet` is set, with its default configuration).
pub async fn start(pool: &str, kubelet: bool) -> Sim {
    let server =
        ApiServer::new(Config { clock_start: Some("2026-01-01T00:00:00Z".parse().unwrap()), ..Config::default() });
    let server_clock = server.clock();
    let clock = Clock::from_fn(move || server_clock.now());
    let client = server.client();
    let nodes = parse_nodes(builtin_pool(pool).unwrap()).unwrap();
    register_nodes(&client, &clock, &nodes).await.unwrap();
    let mut sim = Sim {
        pods: Api::default_namespaced(client.clone()),
        client: client.clone(),
        clock: clock.clone(),
        server,
        kubelet: None,
        tasks: vec![],
    };
    sim.spawn(Scheduler::new(client.clone(), clock.clone(), SchedulerConfig::default()).run());
    if kubelet {
        let k = Kubelet::new(client, clock, KubeletConfig::default());
        sim.kubelet = Some(k.handle());
        sim.spawn(k.run());
    }
    sim
}

/// A pod with one container and `extra_spec` merged into its spec.
pub fn pod(name: &str, extra_spec: Value) -> Pod {
    let mut spec = json!({"containers": [{"name": "main", "image": "rayproject/ray:2.46.0"}]});
    if let (Some(s), Some(extra)) = (spec.as_object_mut(), extra_spec.as_object()) {
        for (k, v) in extra {
            s.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
}

/// A pod whose container requests (and is limited to) `requests`.
pub fn requesting(name: &str, requests: Value, extra_spec: Value) -> Pod {
    let mut p = pod(name, extra_spec);
    p.spec.as_mut().unwrap().containers[0].resources =
        Some(serde_json::from_value(json!({"requests": requests.clone(), "limits": requests})).unwrap());
    p
}

/// Waits (in virtual time, up to 120 s) until `check` holds for pod `name`; panics with the
/// last state otherwise.
pub async fn wait_pod(pods: &Api<Pod>, name: &str, what: &str, check: impl Fn(&Pod) -> bool) -> Pod {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let p = pods.get(name).await.unwrap();
        if check(&p) {
            return p;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("pod {name}: {what} never happened; last state {}", serde_json::to_string(&p).unwrap());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn node_of(p: &Pod) -> Option<String> {
    p.spec.as_ref().and_then(|s| s.node_name.clone())
}

/// The PodScheduled condition as (status, reason, message).
pub fn scheduled_condition(p: &Pod) -> Option<(String, String, String)> {
    p.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "PodScheduled")
        .map(|c| (c.status.clone(), c.reason.clone().unwrap_or_default(), c.message.clone().unwrap_or_default()))
}

pub fn bound(p: &Pod) -> bool {
    node_of(p).is_some()
}

pub fn phase(p: &Pod) -> String {
    p.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default()
}

/// The status of condition `type_` ("" when absent).
pub fn condition(p: &Pod, type_: &str) -> String {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == type_))
        .map(|c| c.status.clone())
        .unwrap_or_default()
}

pub fn ready(p: &Pod) -> bool {
    condition(p, "Ready") == "True"
}

/// The first container's status as JSON.
pub fn container(p: &Pod) -> Value {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first())
        .map(|c| serde_json::to_value(c).unwrap())
        .unwrap_or_default()
}

/// Seconds between two metav1.Time strings.
pub fn seconds_between(from: &str, to: &str) -> i64 {
    let a: jiff::Timestamp = from.parse().unwrap();
    let b: jiff::Timestamp = to.parse().unwrap();
    b.as_second() - a.as_second()
}
