//! A simulated kubelet for every node: runs the pods bound to them through the phases and
//! conditions a real kubelet reports, and finishes graceful deletions.
//!
//! For a bound pod it writes, through `pods/{name}/status`:
//! - at once: phase `Pending`, `startTime`, `hostIP(s)`, `podIP(s)` (from the node's
//!   `spec.podCIDR`, allocated in order), `PodReadyToStartContainers=True`, `Initialized`,
//!   `Ready=False`/`ContainersReady=False` (reason `ContainersNotReady`), containers waiting
//!   in `ContainerCreating`;
//! - after the start delay: phase `Running`, containers running (`startedAt`, `started`,
//!   `containerID`, `imageID`); init containers terminated `Completed`;
//! - after the readiness delay: containers ready, `ContainersReady=True`, `Ready=True`.
//!
//! A pod being deleted turns unready at once; after min(its grace period, the termination
//! delay) its containers are terminated (exit code 0, phase `Succeeded`) and the kubelet
//! deletes it with `gracePeriodSeconds: 0` and a uid precondition, as the status manager does.
//!
//! # Knobs
//!
//! Global, through [`KubeletHandle::turn`]; the pod-choosing knobs take `true` (all pods), a
//! label selector string (the pods it matches, running ones included) or `null`/`false` (off):
//! - `fail`: containers exit with code 1 (reason `Error`). With `restartPolicy: Never` the pod
//!   ends `Failed`; otherwise it is in `CrashLoopBackOff` (phase `Running`, not ready,
//!   `restartCount` rising with kubelet's doubling back-off from 10 s to 5 min).
//! - `complete`: containers exit with code 0 (reason `Completed`): the work is done. With
//!   `restartPolicy: Never` or `OnFailure` the pod ends `Succeeded`; a pod with `Always` would
//!   only restart its containers, so the knob leaves it running.
//! - `never-ready`: containers run but never become ready (a running ready pod turns unready).
//! - `evict`: the pod is evicted: phase `Failed`, reason `Evicted`, a `DisruptionTarget`
//!   condition, containers terminated with 137.
//! - `start-delay`, `ready-delay`, `termination-delay`: a duration string (`"30s"`, `"1m"`), or
//!   `null` for the configured default; they apply to pods the kubelet sees from then on.
//!
//! Per pod, as annotations (so they work through kubectl against `kproof serve`):
//! `sim.kproof.dev/fail`, `sim.kproof.dev/complete`, `sim.kproof.dev/never-ready`, `sim.kproof.dev/evict` (`"true"`), and
//! `sim.kproof.dev/start-delay`, `sim.kproof.dev/ready-delay`, `sim.kproof.dev/termination-delay`
//! (a duration).
//!
//! # DRA
//!
//! Before a pod with `spec.resourceClaims` starts, the kubelet runs DRA's `PrepareResources`
//! check: each claim is read live; a template's claim must be the pod's (or, with
//! `DRAWorkloadResourceClaims`, its PodGroup's) and every claim must list the pod (or its
//! PodGroup, by name) in `status.reservedFor`, unless the `workloads` profile's
//! `status.allocation.reservedForAnyPod` is true. Otherwise the pod stays `Pending`
//! (`ContainerCreating`), a Warning event `FailedPrepareDynamicResources` says "Failed to
//! prepare dynamic resources: prepare dynamic resources: pod <name> (<uid>) is not allowed to
//! use ResourceClaim <claim> (<uid>)", and the check is retried every 5 s.

use super::SimError;
use crate::Clock;
use apimachinery::LabelSelector;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::reflector::Store;
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

mod status;

use status::{build_status, container_id, format_ts, pod_annotation};

/// The annotation prefix of per-pod knobs.
pub const ANNOTATION_PREFIX: &str = "sim.kproof.dev/";

/// The knobs [`KubeletHandle::turn`] knows.
pub const KNOBS: &[&str] =
    &["fail", "complete", "never-ready", "evict", "start-delay", "ready-delay", "termination-delay"];

/// How the simulated kubelet behaves.
#[derive(Debug, Clone)]
pub struct KubeletConfig {
    /// From binding to containers running.
    pub start_delay: Duration,
    /// From containers running to ready.
    pub ready_delay: Duration,
    /// How long containers take to stop once a pod is deleted (capped by its grace period).
    pub termination_delay: Duration,
    /// The first crash-loop back-off; it doubles per restart up to `max_crash_backoff`.
    pub crash_backoff: Duration,
    /// The longest crash-loop back-off.
    pub max_crash_backoff: Duration,
    /// The nodes this kubelet runs; `None` for every node.
    pub node_names: Option<Vec<String>>,
    /// The DRA gates of the reservation check (see the module docs).
    pub dra: crate::dra::DraConfig,
}

impl Default for KubeletConfig {
    fn default() -> Self {
        Self {
            start_delay: Duration::from_secs(1),
            ready_delay: Duration::from_secs(1),
            termination_delay: Duration::from_secs(1),
            crash_backoff: Duration::from_secs(10),
            max_crash_backoff: Duration::from_secs(300),
            node_names: None,
            dra: crate::dra::DraConfig::default(),
        }
    }
}

/// What a row sets in `needs.settings.kubelet`: the node pool the kubelet registers and its
/// delays. Unknown keys fail to load, with file and line.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KubeletSettings {
    /// Which compiled-in node pool to register (`default` or `tiny`; see [`crate::sim::builtin_pool`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_pool: Option<String>,
    /// From binding to containers running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_delay: Option<apimachinery::DurationText>,
    /// From containers running to ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_delay: Option<apimachinery::DurationText>,
    /// How long containers take to stop once a pod is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_delay: Option<apimachinery::DurationText>,
}

impl KubeletConfig {
    /// Applies a row's kubelet settings (the node pool is for the caller that registers nodes).
    pub fn apply(&mut self, settings: &KubeletSettings) {
        if let Some(d) = settings.start_delay {
            self.start_delay = d.0;
        }
        if let Some(d) = settings.ready_delay {
            self.ready_delay = d.0;
        }
        if let Some(d) = settings.termination_delay {
            self.termination_delay = d.0;
        }
    }
}

/// The knobs' current values.
#[derive(Debug, Clone)]
struct Knobs {
    fail: Option<LabelSelector>,
    complete: Option<LabelSelector>,
    never_ready: Option<LabelSelector>,
    evict: Option<LabelSelector>,
    start_delay: Duration,
    ready_delay: Duration,
    termination_delay: Duration,
}

struct Shared {
    knobs: Mutex<Knobs>,
    changed: Notify,
    defaults: KubeletConfig,
}

/// Turns the kubelet's knobs while it runs; cheap to clone.
#[derive(Clone)]
pub struct KubeletHandle(Arc<Shared>);

impl std::fmt::Debug for KubeletHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("KubeletHandle").field(&*self.0.knobs.lock()).finish()
    }
}

fn pod_choice(knob: &str, value: &Value) -> Result<Option<LabelSelector>, String> {
    match value {
        Value::Null | Value::Bool(false) => Ok(None),
        Value::Bool(true) => Ok(Some(LabelSelector::default())),
        Value::String(s) => LabelSelector::parse(s).map(Some).map_err(|e| format!("knob {knob}: {e}")),
        other => Err(format!("knob {knob} takes true, false, null or a label selector string, not {other}")),
    }
}

fn delay(knob: &str, value: &Value, default: Duration) -> Result<Duration, String> {
    match value {
        Value::Null => Ok(default),
        Value::String(s) => apimachinery::DurationText::parse(s).map(|d| d.0).map_err(|e| format!("knob {knob}: {e}")),
        other => Err(format!("knob {knob} takes a duration string such as \"30s\" (or null), not {other}")),
    }
}

impl KubeletHandle {
    /// Sets knob `knob` to `value` (see the module docs); an unknown knob or a bad value is an
    /// error that says what is accepted, and changes nothing.
    pub fn turn(&self, knob: &str, value: &Value) -> Result<(), String> {
        let d = &self.0.defaults;
        {
            let mut k = self.0.knobs.lock();
            match knob {
                "fail" => k.fail = pod_choice(knob, value)?,
                "complete" => k.complete = pod_choice(knob, value)?,
                "never-ready" => k.never_ready = pod_choice(knob, value)?,
                "evict" => k.evict = pod_choice(knob, value)?,
                "start-delay" => k.start_delay = delay(knob, value, d.start_delay)?,
                "ready-delay" => k.ready_delay = delay(knob, value, d.ready_delay)?,
                "termination-delay" => k.termination_delay = delay(knob, value, d.termination_delay)?,
                other => return Err(format!("unknown kubelet knob {other:?} (known: {})", KNOBS.join(", "))),
            }
        }
        self.0.changed.notify_one();
        Ok(())
    }
}

/// The simulated kubelet; see the module docs.
pub struct Kubelet {
    client: Client,
    clock: Clock,
    config: KubeletConfig,
    shared: Arc<Shared>,
    events: Arc<crate::events::EventRecorder>,
}

/// What the kubelet remembers about one pod.
struct Track {
    host_ip: String,
    pod_ip: String,
    start_time: String,
    start_at: Instant,
    ready_delay: Duration,
    /// The current run of the containers: when it started.
    running_since: Option<(Instant, String)>,
    /// In crash-loop back-off until this instant.
    backoff_until: Option<Instant>,
    restart_count: i32,
    last_terminated: Option<Value>,
    /// Failed or evicted: nothing more happens until deletion.
    terminal: bool,
    /// The pod's ResourceClaims passed the reservation check (or it has none).
    prepared: bool,
    kill_at: Option<Instant>,
    delete_sent: bool,
    /// Condition type → (status, lastTransitionTime), so transition times stay put.
    conditions: HashMap<String, (String, String)>,
    last_status: Option<Value>,
    /// The pod's resourceVersion when it was last stepped, and when that step asked to look
    /// again: a pass skips a pod whose object and due time have not moved.
    stepped_rv: Option<String>,
    due: Option<Instant>,
}

/// What started a pass: time or a knob (every pod is stepped), or pod and node events.
struct Pass<'a> {
    every_pod: bool,
    /// The nodes' names and resourceVersions at the last pass.
    nodes_seen: &'a mut String,
}

/// What the containers are doing, for the status.
enum Stage {
    Creating,
    Running { ready: bool },
    CrashLoop,
    Failed,
    Evicted,
    Stopped,
    Deleting,
}

impl Kubelet {
    /// A kubelet that talks to the API through `client` and stamps times with `clock`.
    pub fn new(client: Client, clock: Clock, config: KubeletConfig) -> Self {
        let knobs = Knobs {
            fail: None,
            complete: None,
            never_ready: None,
            evict: None,
            start_delay: config.start_delay,
            ready_delay: config.ready_delay,
            termination_delay: config.termination_delay,
        };
        let shared = Arc::new(Shared { knobs: Mutex::new(knobs), changed: Notify::new(), defaults: config.clone() });
        let events = Arc::new(crate::events::EventRecorder::new(client.clone(), clock.clone(), "kubelet"));
        Self { client, clock, config, shared, events }
    }

    /// The handle that turns this kubelet's knobs.
    pub fn handle(&self) -> KubeletHandle {
        KubeletHandle(self.shared.clone())
    }

    /// Watches pods and nodes and runs pods until a fatal error; drop the future to stop it.
    pub async fn run(self) -> Result<(), SimError> {
        let recorder = self.events.clone();
        tokio::select! {
            result = self.run_pods() => result,
            () = recorder.run_series_upkeep() => Ok(()),
        }
    }

    async fn run_pods(&self) -> Result<(), SimError> {
        let (pods, nodes, mut events) = super::watch_pods_and_nodes(&self.client);
        let mut tracks: HashMap<String, Track> = HashMap::new();
        let mut next_ip: HashMap<String, u32> = HashMap::new();
        let mut wake: Option<Instant> = None;
        // Every pod is stepped when time or a knob moved; on pod events only the pods that
        // changed are (a pass per event over every pod made status building quadratic).
        let mut every_pod = true;
        let mut nodes_seen = String::new();
        loop {
            let sleep_until = wake.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
            tokio::select! {
                next = events.next() => {
                    if next.is_none() {
                        return Err(SimError::WatchEnded("pod or node"));
                    }
                    while let Some(Some(())) = events.next().now_or_never() {}
                }
                _ = tokio::time::sleep_until(sleep_until) => every_pod = true,
                _ = self.shared.changed.notified() => every_pod = true,
            }
            if !(super::scheduler::store_ready(&pods) && super::scheduler::store_ready(&nodes)) {
                continue;
            }
            let pass = Pass { every_pod, nodes_seen: &mut nodes_seen };
            match super::tolerate("kubelet", self.pass(&pods, &nodes, &mut tracks, &mut next_ip, pass).await)? {
                Some(next) => {
                    wake = next;
                    every_pod = false;
                }
                // The API server could not take a write for a moment (it restarts): step every
                // pod again shortly, as a kubelet retries its status updates.
                None => {
                    wake = Some(Instant::now() + super::RETRY_AFTER);
                    every_pod = true;
                }
            }
        }
    }

    /// Moves every pod on this kubelet's nodes one step; returns when to look again.
    async fn pass(
        &self,
        pods: &Store<Pod>,
        nodes: &Store<Node>,
        tracks: &mut HashMap<String, Track>,
        next_ip: &mut HashMap<String, u32>,
        pass: Pass<'_>,
    ) -> Result<Option<Instant>, SimError> {
        let knobs = self.shared.knobs.lock().clone();
        let mut node_list: Vec<Arc<Node>> = nodes.state();
        node_list.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        // A node that changed (taints, conditions, addresses) may change any pod on it.
        let nodes_now: String = node_list
            .iter()
            .map(|n| {
                format!(
                    "{}@{};",
                    n.metadata.name.as_deref().unwrap_or(""),
                    n.metadata.resource_version.as_deref().unwrap_or("")
                )
            })
            .collect();
        let every_pod = pass.every_pod || *pass.nodes_seen != nodes_now;
        *pass.nodes_seen = nodes_now;
        let mine = |name: &str| self.config.node_names.as_ref().is_none_or(|ns| ns.iter().any(|n| n == name));
        let node_by_name: BTreeMap<String, (usize, Arc<Node>)> = node_list
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.metadata.name.clone().map(|name| (name, (i, n.clone()))))
            .filter(|(name, _)| mine(name))
            .collect();
        let mut all: Vec<Arc<Pod>> = pods.state();
        all.sort_by(|a, b| {
            let key = |p: &Pod| {
                (
                    p.metadata.creation_timestamp.clone().map(|t| t.0),
                    p.metadata.namespace.clone(),
                    p.metadata.name.clone(),
                )
            };
            key(a).cmp(&key(b))
        });
        tracks.retain(|uid, _| all.iter().any(|p| p.metadata.uid.as_deref() == Some(uid)));
        let now = Instant::now();
        let now_ts = self.clock.now_rfc3339();
        let mut wake: Option<Instant> = None;
        let mut wake_at = |t: Instant| wake = Some(wake.map_or(t, |w| w.min(t)));
        for pod in all {
            let node_name = pod.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
            let Some((index, node)) = node_by_name.get(&node_name) else { continue };
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let phase = pod.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default();
            if !tracks.contains_key(&uid) {
                if (phase == "Succeeded" || phase == "Failed") && pod.metadata.deletion_timestamp.is_none() {
                    continue;
                }
                let track = self.new_track(&pod, node, *index, next_ip, &knobs, now, &now_ts);
                tracks.insert(uid.clone(), track);
            }
            let Some(track) = tracks.get_mut(&uid) else { continue };
            let rv = pod.metadata.resource_version.as_deref();
            let moved = rv.is_none() || track.stepped_rv.as_deref() != rv || track.due.is_some_and(|d| now >= d);
            if every_pod || moved {
                track.due = self.step(&pod, track, &knobs, now, &now_ts).await?;
                track.stepped_rv = rv.map(str::to_string);
            }
            if let Some(t) = track.due {
                wake_at(t);
            }
        }
        Ok(wake)
    }

    #[allow(clippy::too_many_arguments)]
    fn new_track(
        &self,
        pod: &Pod,
        node: &Node,
        index: usize,
        next_ip: &mut HashMap<String, u32>,
        knobs: &Knobs,
        now: Instant,
        now_ts: &str,
    ) -> Track {
        let node_name = node.metadata.name.clone().unwrap_or_default();
        let host_ip = node
            .status
            .as_ref()
            .and_then(|s| s.addresses.as_ref())
            .and_then(|a| a.iter().find(|a| a.type_ == "InternalIP"))
            .map(|a| a.address.clone())
            .unwrap_or_else(|| format!("172.18.0.{}", index + 2));
        let status = pod.status.clone().unwrap_or_default();
        let host_network = pod.spec.as_ref().and_then(|s| s.host_network).unwrap_or(false);
        let pod_ip = match status.pod_ip.clone() {
            Some(ip) => ip,
            None if host_network => host_ip.clone(),
            None => {
                let prefix = node
                    .spec
                    .as_ref()
                    .and_then(|s| s.pod_cidr.as_deref())
                    .and_then(|c| c.split('/').next())
                    .and_then(|ip| ip.rsplit_once('.').map(|(p, _)| p.to_string()))
                    .unwrap_or_else(|| format!("10.244.{index}"));
                let n = next_ip.entry(node_name).or_insert(2);
                let ip = format!("{prefix}.{n}");
                *n = if *n >= 254 { 2 } else { *n + 1 };
                ip
            }
        };
        let annotation_delay = |key: &str| {
            pod_annotation(pod, key).and_then(|v| match apimachinery::DurationText::parse(&v).map(|d| d.0) {
                Ok(d) => Some(d),
                Err(e) => {
                    tracing::warn!(pod = ?pod.metadata.name, "ignoring annotation {ANNOTATION_PREFIX}{key}: {e}");
                    None
                }
            })
        };
        let start_delay = annotation_delay("start-delay").unwrap_or(knobs.start_delay);
        let ready_delay = annotation_delay("ready-delay").unwrap_or(knobs.ready_delay);
        // A pod already running (the kubelet restarted) carries on from where it is.
        let already_running = status.phase.as_deref() == Some("Running");
        Track {
            host_ip,
            pod_ip,
            start_time: status.start_time.map(|t| format_ts(&t.0)).unwrap_or_else(|| now_ts.to_string()),
            start_at: now + start_delay,
            ready_delay,
            running_since: already_running.then(|| (now, now_ts.to_string())),
            backoff_until: None,
            restart_count: 0,
            last_terminated: None,
            terminal: false,
            prepared: false,
            kill_at: None,
            delete_sent: false,
            conditions: HashMap::new(),
            last_status: None,
            stepped_rv: None,
            due: None,
        }
    }

    /// One step of one pod; returns when it next needs looking at.
    async fn step(
        &self,
        pod: &Pod,
        track: &mut Track,
        knobs: &Knobs,
        now: Instant,
        now_ts: &str,
    ) -> Result<Option<Instant>, SimError> {
        if track.delete_sent {
            return Ok(None);
        }
        if pod.metadata.deletion_timestamp.is_some() {
            let grace = pod.metadata.deletion_grace_period_seconds.unwrap_or(30).max(0) as u64;
            let termination_delay = pod_annotation(pod, "termination-delay")
                .and_then(|v| apimachinery::DurationText::parse(&v).ok())
                .map_or(knobs.termination_delay, |d| d.0);
            let stop_after = termination_delay.min(Duration::from_secs(grace));
            let kill_at = *track.kill_at.get_or_insert(now + stop_after);
            if now < kill_at {
                if !track.terminal {
                    self.write(pod, track, Stage::Deleting, now_ts).await?;
                }
                return Ok(Some(kill_at));
            }
            if !track.terminal && track.running_since.is_some() {
                self.write(pod, track, Stage::Stopped, now_ts).await?;
            }
            self.delete(pod).await?;
            track.delete_sent = true;
            return Ok(None);
        }
        if track.terminal {
            return Ok(None);
        }
        let applies = |knob: &Option<LabelSelector>, annotation: &str| {
            pod_annotation(pod, annotation).is_some_and(|v| v == "true")
                || knob.as_ref().is_some_and(|s| s.matches(&pod.metadata.labels.clone().unwrap_or_default()))
        };
        if applies(&knobs.evict, "evict") {
            track.terminal = true;
            self.write(pod, track, Stage::Evicted, now_ts).await?;
            return Ok(None);
        }
        let fail = applies(&knobs.fail, "fail");
        let complete = !fail && applies(&knobs.complete, "complete");
        let never_ready = applies(&knobs.never_ready, "never-ready");
        let mut wake = None;
        if let Some(until) = track.backoff_until {
            if now < until {
                self.write(pod, track, Stage::CrashLoop, now_ts).await?;
                return Ok(Some(until));
            }
            // Back-off over: the container restarts.
            track.backoff_until = None;
            track.restart_count += 1;
            track.running_since = Some((now, now_ts.to_string()));
        } else if track.running_since.is_none() {
            if !track.prepared && now >= track.start_at {
                match self.prepare_dynamic_resources(pod).await? {
                    Ok(()) => track.prepared = true,
                    Err(e) => {
                        self.write(pod, track, Stage::Creating, now_ts).await?;
                        let note = format!("Failed to prepare dynamic resources: prepare dynamic resources: {e}");
                        self.events
                            .eventf(
                                &pod_reference(pod),
                                None,
                                crate::events::EventType::Warning,
                                "FailedPrepareDynamicResources",
                                "PrepareResources",
                                note,
                            )
                            .await;
                        return Ok(Some(now + PREPARE_RETRY));
                    }
                }
            }
            if now < track.start_at {
                self.write(pod, track, Stage::Creating, now_ts).await?;
                return Ok(Some(track.start_at));
            }
            track.running_since = Some((now, now_ts.to_string()));
        }
        if fail {
            let started = track.running_since.take().map(|(_, ts)| ts).unwrap_or_else(|| now_ts.to_string());
            track.last_terminated = Some(json!({"terminated": {
                "exitCode": 1, "reason": "Error", "startedAt": started, "finishedAt": now_ts,
                "containerID": container_id(pod, "", track.restart_count),
            }}));
            let policy = pod.spec.as_ref().and_then(|s| s.restart_policy.clone()).unwrap_or_else(|| "Always".into());
            if policy == "Never" {
                track.terminal = true;
                self.write(pod, track, Stage::Failed, now_ts).await?;
                return Ok(None);
            }
            let factor = 2u32.saturating_pow(track.restart_count.clamp(0, 16) as u32);
            let backoff = self.config.crash_backoff.saturating_mul(factor).min(self.config.max_crash_backoff);
            track.backoff_until = Some(now + backoff);
            self.write(pod, track, Stage::CrashLoop, now_ts).await?;
            return Ok(Some(now + backoff));
        }
        if complete {
            let policy = pod.spec.as_ref().and_then(|s| s.restart_policy.clone()).unwrap_or_else(|| "Always".into());
            if policy != "Always" {
                track.terminal = true;
                self.write(pod, track, Stage::Stopped, now_ts).await?;
                return Ok(None);
            }
        }
        let ready_at = track.running_since.as_ref().map(|(t, _)| *t + track.ready_delay).unwrap_or(now);
        let ready = !never_ready && now >= ready_at;
        if !never_ready && !ready {
            wake = Some(ready_at);
        }
        self.write(pod, track, Stage::Running { ready }, now_ts).await?;
        Ok(wake)
    }

    /// The kubelet's DRA `PrepareResources` check: every claim the pod names is read live; a
    /// template's claim must be the pod's (or its PodGroup's), and every claim must be reserved
    /// for the pod (or its PodGroup, with `DRAWorkloadResourceClaims`), unless the `workloads`
    /// profile's `status.allocation.reservedForAnyPod` is true. The outer `Err` is an API
    /// failure; the inner one the check's error.
    async fn prepare_dynamic_resources(&self, pod: &Pod) -> Result<Result<(), String>, SimError> {
        use crate::dra::claims;
        let dra = &self.config.dra;
        if dra.defective(crate::dra::DraDefect::KubeletSkipsReservationCheck) {
            return Ok(Ok(()));
        }
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let api: Api<crate::dra::ResourceClaim> = Api::namespaced(self.client.clone(), &ns);
        let accept = dra.gates.accept_podgroup();
        for entry in claims::pod_claims(pod) {
            let (name, check_owner) = match claims::claim_name(pod, entry) {
                Ok(n) => n,
                Err(e) => return Ok(Err(e)),
            };
            let Some(name) = name else { continue };
            let claim = match api.get(&name).await {
                Ok(c) => c,
                Err(kube::Error::Api(s)) => return Ok(Err(format!("fetch ResourceClaim {name}: {}", s.message))),
                Err(e) => return Err(SimError::api(format!("reading ResourceClaim {ns}/{name}"))(e)),
            };
            if check_owner && let Err(e) = claims::is_for_pod(pod, &claim, accept) {
                return Ok(Err(e));
            }
            let any_pod = dra.gates.reserved_for_workloads
                && claim.allocation().and_then(|a| a.get("reservedForAnyPod")).and_then(serde_json::Value::as_bool)
                    == Some(true);
            if !any_pod && !claims::is_reserved_for_pod(pod, &claim, accept) {
                return Ok(Err(format!(
                    "pod {} ({}) is not allowed to use ResourceClaim {name} ({})",
                    pod.metadata.name.as_deref().unwrap_or_default(),
                    pod.metadata.uid.as_deref().unwrap_or_default(),
                    claim.uid()
                )));
            }
        }
        Ok(Ok(()))
    }

    /// Writes the status for `stage` unless it is what was written last.
    async fn write(&self, pod: &Pod, track: &mut Track, stage: Stage, now_ts: &str) -> Result<(), SimError> {
        let status = build_status(pod, track, &stage, now_ts);
        if track.last_status.as_ref() == Some(&status) {
            return Ok(());
        }
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        match api.patch_status(&name, &PatchParams::default(), &Patch::Merge(json!({"status": status}))).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(e) => return Err(SimError::api(format!("writing the status of pod {ns}/{name}"))(e)),
        }
        track.last_status = Some(status);
        Ok(())
    }

    /// Deletes the pod for good, as the kubelet's status manager does once it stopped.
    async fn delete(&self, pod: &Pod) -> Result<(), SimError> {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions { uid: pod.metadata.uid.clone(), resource_version: None }),
            ..Default::default()
        };
        match api.delete(&name, &params).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
            Err(e) => Err(SimError::api(format!("deleting pod {ns}/{name}"))(e)),
        }
    }
}

/// How soon the kubelet retries a pod whose dynamic resources could not be prepared.
const PREPARE_RETRY: Duration = Duration::from_secs(5);

fn pod_reference(pod: &Pod) -> k8s_openapi::api::core::v1::ObjectReference {
    k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: pod.metadata.name.clone(),
        namespace: pod.metadata.namespace.clone(),
        uid: pod.metadata.uid.clone(),
        resource_version: pod.metadata.resource_version.clone(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::status::image_id;
    use super::*;

    #[tokio::test]
    async fn knobs_reject_unknown_names_and_bad_values() {
        let k = Kubelet::new(
            Client::try_from(kube::Config::new("http://127.0.0.1:1".parse().unwrap())).unwrap(),
            Clock::system(),
            KubeletConfig::default(),
        );
        let h = k.handle();
        assert!(
            h.turn("explode", &json!(true)).unwrap_err().starts_with("unknown kubelet knob \"explode\" (known: fail,")
        );
        assert!(h.turn("fail", &json!(3)).unwrap_err().contains("takes true, false, null or a label selector"));
        let bad = h.turn("fail", &json!("a in b")).unwrap_err();
        assert!(bad.starts_with("knob fail: unable to parse requirement: "), "{bad}");
        assert!(bad.ends_with("found 'b' expected: '('"), "{bad}");
        assert!(h.turn("start-delay", &json!("soon")).unwrap_err().contains("knob start-delay"));
        assert!(h.turn("start-delay", &json!(5)).unwrap_err().contains("duration string"));
        h.turn("fail", &json!("ray.io/node-type=worker")).unwrap();
        h.turn("fail", &json!(null)).unwrap();
        h.turn("ready-delay", &json!("2m")).unwrap();
        assert_eq!(k.shared.knobs.lock().ready_delay, Duration::from_secs(120));
        h.turn("ready-delay", &Value::Null).unwrap();
        assert_eq!(k.shared.knobs.lock().ready_delay, Duration::from_secs(1));
    }

    #[test]
    fn image_ids_keep_the_repository() {
        assert!(image_id("rayproject/ray:2.46.0").starts_with("rayproject/ray@sha256:"));
        assert!(image_id("localhost:5000/ray").starts_with("localhost:5000/ray@sha256:"));
    }
}
