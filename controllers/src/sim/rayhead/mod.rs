//! The Ray head of every RayCluster, as the outside sees it: the dashboard's Serve REST API and
//! the Serve proxies, on the [simulated network](super::network).
//!
//! What answers where:
//! - `<head svc>.<ns>.svc.cluster.local:<dashboard port>` (any Service whose selector names a
//!   cluster, on its port named `dashboard`), while the cluster's head pod runs:
//!   - `GET /api/serve/applications/?api_type=declarative`: the Serve details KubeRay's
//!     dashboard client reads (applications, their deployments, statuses, messages);
//!   - `PUT /api/serve/applications/`: a Serve multi-application config as JSON (what KubeRay
//!     sends: `serveConfigV2` plus, in incremental mode, a top-level `target_capacity`);
//!   - `GET /api/kproof/resource-demand`: the CPU the cluster's Serve replicas ask for (what the
//!     [simulated Ray autoscaler](super::autoscaler) reads, standing in for the GCS);
//! - `<pod IP>:<serve port>` of every running Ray pod: `GET /-/healthz` (the proxy health KubeRay
//!   checks to label the head pod `ray.io/serve`), and any other path as a Serve request, routed
//!   to the application with the longest matching `route_prefix`.
//!
//! # The Serve model
//!
//! Each application of the submitted config has deployments (those the config lists, or one
//! named after the import path). A deployment wants `num_replicas` (or its autoscaling
//! `initial_replicas`/`min_replicas`, default 1) replicas, scaled by `target_capacity` as Ray
//! Serve does: 0 % is none, otherwise `ceil(replicas × capacity / 100)` and at least one. Each
//! replica needs `ray_actor_options.num_cpus` CPUs (default 1) on a running, ready Ray pod of the
//! cluster (a pod offers `--num-cpus` from its `ray start` parameters, else its CPU limit, else
//! its request); replicas that do not fit wait for the autoscaler to add workers. A placed
//! replica is running `replica start delay` later.
//!
//! A submitted application is `DEPLOYING` until the deploy delay has passed and every deployment
//! has all its replicas running, then `RUNNING`; it stays `RUNNING` while a new
//! `target_capacity` scales it (Ray Serve upscales a running application in place; whether it
//! reports another status meanwhile is Ray's business, which KubeRay's code does not pin down). A config
//! that changes an application redeploys it; applications the config drops are deleted; a
//! `target_capacity` alone changes no status. When the head pod is replaced, Serve starts empty
//! (no GCS fault tolerance), as on a real cluster.
//!
//! A Serve request is served when every deployment of its application has a running replica;
//! otherwise it fails with 503.
//!
//! # Knobs
//!
//! Through [`RayHeadHandle::turn`]; the cluster-choosing knobs take `true` (every cluster), a
//! label selector over the RayCluster's labels, or `null`/`false` (off):
//! - `unhealthy`: applications report `UNHEALTHY` and serve nothing;
//! - `submit-fails`: `PUT /api/serve/applications/` answers 500;
//! - `proxy-unhealthy`: `/-/healthz` answers 503 and Serve requests fail;
//! - `unreachable`: the dashboard refuses connections;
//! - `deploy-delay`, `replica-start-delay`: a duration (`"30s"`), or `null` for the configured one.
//!
//! The same per cluster, as RayCluster annotations (so they work through kubectl, and a
//! RayService's annotations reach the clusters it creates): `sim.kproof.dev/serve-unhealthy`,
//! `sim.kproof.dev/serve-submit-fails`, `sim.kproof.dev/serve-proxy-unhealthy`,
//! `sim.kproof.dev/dashboard-unreachable` (`"true"`), `sim.kproof.dev/serve-deploy-delay`
//! (a duration).

use super::SimError;
use super::network::{Registration, SimNetwork};
use crate::crds::RayCluster;
use apimachinery::LabelSelector;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::ResourceExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

mod http_api;

use http_api::router;

/// The knobs [`RayHeadHandle::turn`] knows.
pub const KNOBS: &[&str] =
    &["unhealthy", "submit-fails", "proxy-unhealthy", "unreachable", "deploy-delay", "replica-start-delay"];

/// Annotation prefix of the per-cluster knobs.
const ANNOTATION_PREFIX: &str = "sim.kproof.dev/";

/// How the simulated Ray heads behave.
#[derive(Debug, Clone)]
pub struct RayHeadConfig {
    /// From a config submission to the application being able to report `RUNNING`.
    pub deploy_delay: Duration,
    /// From a replica being placed on a pod to it running.
    pub replica_start_delay: Duration,
}

impl Default for RayHeadConfig {
    fn default() -> Self {
        Self { deploy_delay: Duration::from_secs(2), replica_start_delay: Duration::from_secs(1) }
    }
}

/// What a row sets in `needs.settings.rayHead`. Unknown keys fail to load, with file and line.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RayHeadSettings {
    /// From a config submission to the application being able to report `RUNNING`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_delay: Option<apimachinery::DurationText>,
    /// From a replica being placed on a pod to it running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_start_delay: Option<apimachinery::DurationText>,
}

impl RayHeadConfig {
    /// Applies a row's settings.
    pub fn apply(&mut self, settings: &RayHeadSettings) {
        if let Some(d) = settings.deploy_delay {
            self.deploy_delay = d.0;
        }
        if let Some(d) = settings.replica_start_delay {
            self.replica_start_delay = d.0;
        }
    }
}

/// Which clusters a knob applies to.
#[derive(Debug, Clone, Default)]
struct ClusterChoice(Option<LabelSelector>);

impl ClusterChoice {
    fn parse(knob: &str, value: &Value) -> Result<Self, String> {
        match value {
            Value::Null | Value::Bool(false) => Ok(Self(None)),
            Value::Bool(true) => Ok(Self(Some(LabelSelector::default()))),
            Value::String(s) => LabelSelector::parse(s).map(|s| Self(Some(s))).map_err(|e| format!("knob {knob}: {e}")),
            other => Err(format!("knob {knob} takes true, false, null or a label selector string, not {other}")),
        }
    }

    fn applies(&self, rc: Option<&RayCluster>) -> bool {
        match (&self.0, rc) {
            (None, _) => false,
            (Some(sel), Some(rc)) => sel.matches(rc.labels()),
            (Some(sel), None) => sel.matches(&BTreeMap::new()),
        }
    }
}

#[derive(Debug, Clone)]
struct Knobs {
    unhealthy: ClusterChoice,
    submit_fails: ClusterChoice,
    proxy_unhealthy: ClusterChoice,
    unreachable: ClusterChoice,
    deploy_delay: Duration,
    replica_start_delay: Duration,
}

/// One deployment of a submitted application.
#[derive(Debug, Clone)]
struct DeploymentModel {
    name: String,
    /// Replicas at 100 % capacity.
    replicas: u32,
    /// CPU per replica, in millicores.
    cpu_millis: i64,
    /// When each replica that currently fits was placed, for replica `i` at index `i`.
    placed: Vec<Instant>,
}

/// A submitted application.
#[derive(Debug, Clone)]
struct AppModel {
    route_prefix: String,
    /// The application's part of the config, to tell a redeploy from a capacity change.
    config: Value,
    deployments: Vec<DeploymentModel>,
    running: bool,
    deploying_since: Instant,
}

/// Serve on one cluster (one head pod's lifetime).
#[derive(Debug, Clone)]
struct ServeState {
    head_uid: String,
    apps: BTreeMap<String, AppModel>,
    target_capacity: Option<f64>,
}

/// What the dashboard reports of one application.
#[derive(Debug, Clone, PartialEq)]
struct AppView {
    status: &'static str,
    message: String,
    route_prefix: String,
    deployments: Vec<(String, &'static str, String)>,
    servable: bool,
}

struct Shared {
    config: RayHeadConfig,
    knobs: Mutex<Knobs>,
    serve: Mutex<HashMap<(String, String), ServeState>>,
    pods: Store<Pod>,
    services: Store<Service>,
    clusters: Store<RayCluster>,
}

/// Turns the simulated Ray heads' knobs while they run; cheap to clone.
#[derive(Clone)]
pub struct RayHeadHandle(Arc<Shared>);

impl std::fmt::Debug for RayHeadHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RayHeadHandle").field(&*self.0.knobs.lock()).finish()
    }
}

fn delay(knob: &str, value: &Value, default: Duration) -> Result<Duration, String> {
    match value {
        Value::Null => Ok(default),
        Value::String(s) => apimachinery::DurationText::parse(s).map(|d| d.0).map_err(|e| format!("knob {knob}: {e}")),
        other => Err(format!("knob {knob} takes a duration string such as \"30s\" (or null), not {other}")),
    }
}

impl RayHeadHandle {
    /// Sets knob `knob` to `value` (see the module docs); an unknown knob or a bad value is an
    /// error that says what is accepted, and changes nothing.
    pub fn turn(&self, knob: &str, value: &Value) -> Result<(), String> {
        let defaults = &self.0.config;
        let mut k = self.0.knobs.lock();
        match knob {
            "unhealthy" => k.unhealthy = ClusterChoice::parse(knob, value)?,
            "submit-fails" => k.submit_fails = ClusterChoice::parse(knob, value)?,
            "proxy-unhealthy" => k.proxy_unhealthy = ClusterChoice::parse(knob, value)?,
            "unreachable" => k.unreachable = ClusterChoice::parse(knob, value)?,
            "deploy-delay" => k.deploy_delay = delay(knob, value, defaults.deploy_delay)?,
            "replica-start-delay" => k.replica_start_delay = delay(knob, value, defaults.replica_start_delay)?,
            other => return Err(format!("unknown ray-head knob {other:?} (known: {})", KNOBS.join(", "))),
        }
        Ok(())
    }
}

/// The simulated Ray heads of every cluster; see the module docs.
pub struct RayHead {
    client: kube::Client,
    shared: Arc<Shared>,
    writers: Option<(
        reflector::store::Writer<Pod>,
        reflector::store::Writer<Service>,
        reflector::store::Writer<RayCluster>,
    )>,
}

impl RayHead {
    /// Ray heads that watch the cluster through `client`.
    pub fn new(client: kube::Client, config: RayHeadConfig) -> Self {
        let (pods, pod_writer) = reflector::store::<Pod>();
        let (services, svc_writer) = reflector::store::<Service>();
        let (clusters, rc_writer) = reflector::store::<RayCluster>();
        let knobs = Knobs {
            unhealthy: ClusterChoice::default(),
            submit_fails: ClusterChoice::default(),
            proxy_unhealthy: ClusterChoice::default(),
            unreachable: ClusterChoice::default(),
            deploy_delay: config.deploy_delay,
            replica_start_delay: config.replica_start_delay,
        };
        let shared =
            Arc::new(Shared { config, knobs: Mutex::new(knobs), serve: Mutex::default(), pods, services, clusters });
        Self { client, shared, writers: Some((pod_writer, svc_writer, rc_writer)) }
    }

    /// The handle that turns the knobs.
    pub fn handle(&self) -> RayHeadHandle {
        RayHeadHandle(self.shared.clone())
    }

    /// Puts the dashboards and Serve proxies on `network` until the registration is dropped.
    pub fn register(&self, network: &SimNetwork) -> Registration {
        let shared = self.shared.clone();
        let claims = Arc::new(move |host: &str, port: u16| shared.resolve(host, port).is_some());
        network.register("ray-head", claims, router(self.shared.clone()))
    }

    /// Watches pods, services and RayClusters (what the endpoints answer from) until a watch
    /// ends; drop the future to stop.
    pub async fn run(mut self) -> Result<(), SimError> {
        let Some((pod_writer, svc_writer, rc_writer)) = self.writers.take() else { return Ok(()) };
        let pods =
            super::reflect_into(&self.client, watcher::Config::default().labels("ray.io/is-ray-node=yes"), pod_writer);
        let services = super::reflect_into(&self.client, watcher::Config::default(), svc_writer);
        let clusters = super::reflect_into(&self.client, watcher::Config::default(), rc_writer);
        let mut all = futures::stream::select_all([pods, services, clusters]);
        while all.next().await.is_some() {
            while let Some(Some(())) = all.next().now_or_never() {}
        }
        Err(SimError::WatchEnded("pod, service or RayCluster"))
    }
}

/// What an address on the network is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// The dashboard of cluster (namespace, name).
    Dashboard(String, String),
    /// The Serve proxy on a pod of cluster (namespace, name); the pod's name.
    Proxy(String, String, String),
}

fn annotation_on(rc: Option<&RayCluster>, key: &str) -> Option<String> {
    rc.and_then(|rc| rc.annotations().get(&format!("{ANNOTATION_PREFIX}{key}")).cloned())
}

fn is_running(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none() && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

fn is_ready(pod: &Pod) -> bool {
    is_running(pod)
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn container_port(pod: &Pod, name: &str, default: i32) -> i32 {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.ports.as_ref())
        .and_then(|ps| ps.iter().find(|p| p.name.as_deref() == Some(name)))
        .map(|p| p.container_port)
        .unwrap_or(default)
}

/// CPU (millicores) a Ray pod offers: `--num-cpus` of its `ray start`, else its CPU limit, else
/// its request, else one CPU.
pub(crate) fn pod_cpu_millis(pod: &Pod) -> i64 {
    let container = pod.spec.as_ref().and_then(|s| s.containers.first());
    let from_start = container
        .and_then(|c| c.env.as_ref())
        .and_then(|env| env.iter().find(|e| e.name == "KUBERAY_GEN_RAY_START_CMD"))
        .and_then(|e| e.value.as_deref())
        .and_then(|cmd| cmd.split_whitespace().find_map(|w| w.strip_prefix("--num-cpus=")))
        .and_then(|n| apimachinery::Quantity::parse(n.trim_matches(['"', '\''])));
    let resource = |limits: bool| {
        container
            .and_then(|c| c.resources.as_ref())
            .and_then(|r| if limits { r.limits.as_ref() } else { r.requests.as_ref() })
            .and_then(|m| m.get("cpu"))
            .and_then(|q| apimachinery::Quantity::parse(&q.0))
    };
    let q = from_start.or_else(|| resource(true)).or_else(|| resource(false));
    q.map(|q| q.milli_value() as i64).unwrap_or(1000)
}

impl Shared {
    fn cluster(&self, ns: &str, name: &str) -> Option<Arc<RayCluster>> {
        self.clusters.get(&reflector::ObjectRef::new(name).within(ns))
    }

    fn cluster_pods(&self, ns: &str, cluster: &str) -> Vec<Arc<Pod>> {
        let mut pods: Vec<Arc<Pod>> = self
            .pods
            .state()
            .into_iter()
            .filter(|p| {
                p.namespace().as_deref() == Some(ns)
                    && p.labels().get("ray.io/cluster").map(String::as_str) == Some(cluster)
            })
            .collect();
        pods.sort_by(|a, b| {
            let head = |p: &Pod| p.labels().get("ray.io/node-type").map(String::as_str) != Some("head");
            (head(a), a.metadata.creation_timestamp.as_ref().map(|t| t.0), a.name_any()).cmp(&(
                head(b),
                b.metadata.creation_timestamp.as_ref().map(|t| t.0),
                b.name_any(),
            ))
        });
        pods
    }

    fn head_pod(&self, ns: &str, cluster: &str) -> Option<Arc<Pod>> {
        self.cluster_pods(ns, cluster)
            .into_iter()
            .find(|p| p.labels().get("ray.io/node-type").map(String::as_str) == Some("head") && is_running(p))
    }

    /// What listens at `host:port`, if anything does now.
    fn resolve(&self, host: &str, port: u16) -> Option<Target> {
        if let Some(rest) = host.strip_suffix(".svc.cluster.local") {
            let (svc, ns) = rest.split_once('.')?;
            let service = self.services.get(&reflector::ObjectRef::new(svc).within(ns))?;
            let spec = service.spec.as_ref()?;
            let cluster = spec.selector.as_ref()?.get("ray.io/cluster")?.clone();
            let dashboard = spec.ports.as_ref()?.iter().find(|p| p.name.as_deref() == Some("dashboard"))?;
            if dashboard.port != i32::from(port) {
                return None;
            }
            self.head_pod(ns, &cluster)?;
            let rc = self.cluster(ns, &cluster);
            let unreachable = self.knobs.lock().unreachable.applies(rc.as_deref())
                || annotation_on(rc.as_deref(), "dashboard-unreachable").as_deref() == Some("true");
            return (!unreachable).then(|| Target::Dashboard(ns.to_string(), cluster));
        }
        let pod = self
            .pods
            .state()
            .into_iter()
            .find(|p| is_running(p) && p.status.as_ref().and_then(|s| s.pod_ip.as_deref()) == Some(host))?;
        let cluster = pod.labels().get("ray.io/cluster")?.clone();
        if container_port(&pod, "serve", 8000) != i32::from(port) {
            return None;
        }
        Some(Target::Proxy(pod.namespace().unwrap_or_default(), cluster, pod.name_any()))
    }

    /// Brings the Serve state of a cluster up to `now` and returns a copy (`None` before any
    /// config, or when the head pod is gone).
    fn observe(&self, ns: &str, cluster: &str) -> Option<ServeState> {
        let head = self.head_pod(ns, cluster)?;
        let head_uid = head.metadata.uid.clone().unwrap_or_default();
        let knobs = self.knobs.lock().clone();
        let rc = self.cluster(ns, cluster);
        let start_delay = knobs.replica_start_delay;
        let mut serve = self.serve.lock();
        let key = (ns.to_string(), cluster.to_string());
        let state = serve.get_mut(&key)?;
        if state.head_uid != head_uid {
            // A new head: Serve's state went with the old one (no GCS fault tolerance).
            serve.remove(&key);
            return None;
        }
        let deploy_delay = annotation_on(rc.as_deref(), "serve-deploy-delay")
            .and_then(|d| apimachinery::DurationText::parse(&d).ok().map(|d| d.0))
            .unwrap_or(knobs.deploy_delay);
        let now = Instant::now();
        let ready_pods: Vec<(i64, bool)> =
            self.cluster_pods(ns, cluster).iter().filter(|p| is_ready(p)).map(|p| (pod_cpu_millis(p), true)).collect();
        let mut free: Vec<i64> = ready_pods.iter().map(|(c, _)| *c).collect();
        let any_pod = !free.is_empty();
        let capacity = state.target_capacity;
        for app in state.apps.values_mut() {
            for d in &mut app.deployments {
                let want = scaled_replicas(d.replicas, capacity) as usize;
                let mut fitting = 0;
                for _ in 0..want {
                    let placed = if d.cpu_millis == 0 {
                        any_pod
                    } else if let Some(slot) = free.iter_mut().find(|f| **f >= d.cpu_millis) {
                        *slot -= d.cpu_millis;
                        true
                    } else {
                        false
                    };
                    if !placed {
                        break;
                    }
                    fitting += 1;
                }
                d.placed.truncate(fitting);
                while d.placed.len() < fitting {
                    d.placed.push(now);
                }
            }
            if !app.running
                && now >= app.deploying_since + deploy_delay
                && app.deployments.iter().all(|d| {
                    let want = scaled_replicas(d.replicas, capacity) as usize;
                    d.placed.iter().filter(|t| now >= **t + start_delay).count() >= want
                })
            {
                app.running = true;
            }
        }
        Some(state.clone())
    }

    fn views(&self, ns: &str, cluster: &str, state: &ServeState) -> BTreeMap<String, AppView> {
        let rc = self.cluster(ns, cluster);
        let knobs = self.knobs.lock().clone();
        let unhealthy = knobs.unhealthy.applies(rc.as_deref())
            || annotation_on(rc.as_deref(), "serve-unhealthy").as_deref() == Some("true");
        let now = Instant::now();
        state
            .apps
            .iter()
            .map(|(name, app)| {
                let deployments: Vec<(String, &'static str, String)> = app
                    .deployments
                    .iter()
                    .map(|d| {
                        let want = scaled_replicas(d.replicas, state.target_capacity) as usize;
                        let running = d.placed.iter().filter(|t| now >= **t + knobs.replica_start_delay).count();
                        let (status, message) = if unhealthy {
                            ("UNHEALTHY", "The replica health check failed (simulated by kproof).".to_string())
                        } else if running >= want {
                            ("HEALTHY", String::new())
                        } else {
                            ("UPDATING", format!("Upscaling from {running} to {want} replicas."))
                        };
                        (d.name.clone(), status, message)
                    })
                    .collect();
                let servable = !unhealthy
                    && app.deployments.iter().all(|d| d.placed.iter().any(|t| now >= *t + knobs.replica_start_delay));
                let (status, message) = if unhealthy {
                    let names: Vec<String> = deployments.iter().map(|(n, _, _)| format!("'{n}'")).collect();
                    ("UNHEALTHY", format!("The deployments [{}] are UNHEALTHY.", names.join(", ")))
                } else if app.running {
                    ("RUNNING", String::new())
                } else {
                    ("DEPLOYING", format!("Deploying app '{name}'."))
                };
                (
                    name.clone(),
                    AppView { status, message, route_prefix: app.route_prefix.clone(), deployments, servable },
                )
            })
            .collect()
    }

    /// Takes a submitted config (the `PUT` body).
    fn submit(&self, ns: &str, cluster: &str, body: &Value) -> Result<(), String> {
        let head = self.head_pod(ns, cluster).ok_or_else(|| "the head pod is not running".to_string())?;
        let head_uid = head.metadata.uid.clone().unwrap_or_default();
        let apps = parse_applications(body)?;
        let capacity = match body.get("target_capacity") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_f64()
                    .filter(|c| (0.0..=100.0).contains(c))
                    .ok_or_else(|| format!("target_capacity must be a number between 0 and 100, got {v}"))?,
            ),
        };
        let now = Instant::now();
        let mut serve = self.serve.lock();
        let key = (ns.to_string(), cluster.to_string());
        let state = serve.entry(key.clone()).or_insert_with(|| ServeState {
            head_uid: head_uid.clone(),
            apps: BTreeMap::new(),
            target_capacity: None,
        });
        if state.head_uid != head_uid {
            *state = ServeState { head_uid, apps: BTreeMap::new(), target_capacity: None };
        }
        state.target_capacity = capacity;
        let mut next = BTreeMap::new();
        for (name, mut app) in apps {
            match state.apps.remove(&name) {
                Some(old) if old.config == app.config => {
                    next.insert(name, old);
                }
                _ => {
                    app.deploying_since = now;
                    next.insert(name, app);
                }
            }
        }
        state.apps = next;
        Ok(())
    }

    /// CPU (millicores) the cluster's replicas ask for, and how many of them need no CPU.
    fn demand(&self, ns: &str, cluster: &str) -> (i64, u32) {
        let Some(state) = self.observe(ns, cluster) else { return (0, 0) };
        let mut cpu = 0i64;
        let mut zero = 0u32;
        for d in state.apps.values().flat_map(|a| &a.deployments) {
            let want = scaled_replicas(d.replicas, state.target_capacity);
            if d.cpu_millis == 0 {
                zero += want;
            } else {
                cpu += i64::from(want) * d.cpu_millis;
            }
        }
        (cpu, zero)
    }
}

/// Ray Serve's capacity-adjusted replica count: none at 0 %, else `ceil(n × c / 100)`, at least 1.
pub(crate) fn scaled_replicas(replicas: u32, target_capacity: Option<f64>) -> u32 {
    match target_capacity {
        None => replicas,
        Some(c) if c >= 100.0 => replicas,
        Some(c) if c <= 0.0 => 0,
        Some(c) => ((f64::from(replicas) * c / 100.0 - 1e-9).ceil() as u32).max(1),
    }
}

fn number(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64)
}

/// The applications of a Serve config, by name.
fn parse_applications(body: &Value) -> Result<BTreeMap<String, AppModel>, String> {
    let apps = match body.get("applications") {
        None | Some(Value::Null) => return Ok(BTreeMap::new()),
        Some(Value::Array(a)) => a,
        Some(other) => return Err(format!("applications must be a list, got {other}")),
    };
    let now = Instant::now();
    let mut out = BTreeMap::new();
    for app in apps {
        let name = app.get("name").and_then(Value::as_str).unwrap_or("default").to_string();
        let import_path = app.get("import_path").and_then(Value::as_str).unwrap_or_default();
        let route_prefix = app.get("route_prefix").and_then(Value::as_str).unwrap_or("/").to_string();
        let listed = app.get("deployments").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut deployments: Vec<DeploymentModel> = listed
            .iter()
            .map(|d| {
                let autoscaling = d.get("autoscaling_config");
                let replicas = number(d.get("num_replicas"))
                    .or_else(|| autoscaling.and_then(|a| number(a.get("initial_replicas"))))
                    .or_else(|| autoscaling.and_then(|a| number(a.get("min_replicas"))))
                    .unwrap_or(1.0)
                    .max(0.0) as u32;
                let cpus = number(d.pointer("/ray_actor_options/num_cpus")).unwrap_or(1.0).max(0.0);
                DeploymentModel {
                    name: d.get("name").and_then(Value::as_str).unwrap_or("deployment").to_string(),
                    replicas,
                    cpu_millis: (cpus * 1000.0).round() as i64,
                    placed: Vec::new(),
                }
            })
            .collect();
        if deployments.is_empty() {
            let ingress = import_path.rsplit('.').next().filter(|s| !s.is_empty()).unwrap_or("ingress");
            deployments.push(DeploymentModel {
                name: ingress.to_string(),
                replicas: 1,
                cpu_millis: 1000,
                placed: Vec::new(),
            });
        }
        out.insert(
            name,
            AppModel { route_prefix, config: app.clone(), deployments, running: false, deploying_since: now },
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::http_api::path_matches;
    use super::*;
    use serde_json::json;

    #[test]
    fn target_capacity_scales_replicas_like_ray_serve() {
        assert_eq!(scaled_replicas(4, None), 4);
        assert_eq!(scaled_replicas(4, Some(100.0)), 4);
        assert_eq!(scaled_replicas(4, Some(0.0)), 0);
        assert_eq!(scaled_replicas(4, Some(10.0)), 1);
        assert_eq!(scaled_replicas(4, Some(50.0)), 2);
        assert_eq!(scaled_replicas(4, Some(60.0)), 3);
        assert_eq!(scaled_replicas(1, Some(20.0)), 1);
    }

    #[test]
    fn applications_and_deployments_come_from_the_config() {
        let apps = parse_applications(&json!({"applications": [
            {"name": "fruit_app", "route_prefix": "/fruit", "import_path": "fruit.deployment_graph", "deployments": [
                {"name": "MangoStand", "autoscaling_config": {"min_replicas": 1, "max_replicas": 3}, "ray_actor_options": {"num_cpus": 0.5}},
                {"name": "PearStand", "num_replicas": 2, "ray_actor_options": {"num_cpus": 0}}]},
            {"name": "math", "import_path": "conditional_dag.serve_dag"}]}))
        .unwrap();
        let fruit = &apps["fruit_app"];
        assert_eq!(fruit.route_prefix, "/fruit");
        assert_eq!((fruit.deployments[0].replicas, fruit.deployments[0].cpu_millis), (1, 500));
        assert_eq!((fruit.deployments[1].replicas, fruit.deployments[1].cpu_millis), (2, 0));
        assert_eq!(apps["math"].deployments[0].name, "serve_dag");
        assert_eq!(apps["math"].route_prefix, "/");
        assert!(parse_applications(&json!({"applications": 3})).is_err());
    }

    #[test]
    fn route_prefixes_match_whole_segments() {
        assert!(path_matches("/fruit", "/fruit"));
        assert!(path_matches("/fruit", "/fruit/mango"));
        assert!(!path_matches("/fruit", "/fruity"));
        assert!(path_matches("/", "/anything"));
    }
}
