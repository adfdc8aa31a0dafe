//! A simulated kube-scheduler: binds pending pods to nodes they fit, through the
//! `pods/{name}/binding` subresource, and marks the others `PodScheduled=False/Unschedulable`
//! with kube-scheduler's message. It records the `Scheduled` (action `Binding`) and
//! `FailedScheduling` (action `Scheduling`) events through events.k8s.io/v1, reported by the
//! scheduler's profile name (`default-scheduler`), as kube-scheduler 1.37 does.
//!
//! Filters, in kube-scheduler's order (a node fails on the first filter that rejects it):
//! NodeUnschedulable (`spec.unschedulable` unless tolerated), TaintToleration (NoSchedule and
//! NoExecute taints; a node whose Ready condition is not True counts as tainted
//! `node.kubernetes.io/not-ready:NoSchedule`, as the node lifecycle controller would taint it),
//! NodeAffinity (`nodeSelector` and required node affinity), NodeResourcesFit (cpu, memory,
//! extended resources such as `nvidia.com/gpu`, and the pod count, against allocatable minus the
//! requests of the pods bound to the node and not finished). Gated pods (`schedulingGates`) are
//! not considered. Among fitting nodes the least allocated (cpu and memory, counting 100m and
//! 200Mi for containers without requests, as kube-scheduler scores) wins, then the name. Preemption is not simulated: a pod that fits nowhere waits.

use super::SimError;
use super::scheduler_dra::{self, DraCaches, PodClaim};
use crate::Clock;
use crate::dra::{DeviceClass, DraConfig, PodGroup, ResourceClaim, ResourceSlice};
use crate::events::{EventRecorder, EventType};
use apimachinery::quantity::parse_milli;
use futures::{StreamExt, future::FutureExt};
use k8s_openapi::api::core::v1::{
    Container, Node, NodeSelectorRequirement, NodeSelectorTerm, ObjectReference, Pod, Taint, Toleration,
};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::reflector::Store;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// How the simulated scheduler behaves.
#[derive(Debug, Clone)]
pub struct SchedulerConfig {
    /// Pods naming this scheduler (or none) are scheduled; others are left alone.
    pub scheduler_name: String,
    /// How often pods that did not fit are tried again even if nothing changed.
    pub retry_interval: Duration,
    /// The DynamicResources plugin's gates (see [`super::scheduler_dra`]).
    pub dra: DraConfig,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            scheduler_name: "default-scheduler".into(),
            retry_interval: Duration::from_secs(10),
            dra: DraConfig::default(),
        }
    }
}

/// The simulated scheduler; see the module docs.
pub struct Scheduler {
    client: Client,
    clock: Clock,
    config: SchedulerConfig,
    events: EventRecorder,
}

/// Resource amounts in milli-units, by resource name.
type Resources = BTreeMap<String, i128>;

/// Why a node cannot take a pod, as kube-scheduler words it (one node can have several).
type Reasons = Vec<String>;

const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";
const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

impl Scheduler {
    /// A scheduler that talks to the API through `client` and stamps conditions with `clock`.
    pub fn new(client: Client, clock: Clock, config: SchedulerConfig) -> Self {
        let events = EventRecorder::new(client.clone(), clock.clone(), &config.scheduler_name);
        Self { client, clock, config, events }
    }

    /// Watches pods and nodes and schedules until a fatal error; drop the future to stop it.
    pub async fn run(self) -> Result<(), SimError> {
        tokio::select! {
            result = self.schedule() => result,
            () = self.events.run_series_upkeep() => Ok(()),
        }
    }

    async fn schedule(&self) -> Result<(), SimError> {
        let (pods, nodes, pod_node_events) = super::watch_pods_and_nodes(&self.client);
        let (claims, claim_events) = super::cache::<ResourceClaim>(&self.client, Default::default());
        let (slices, slice_events) = super::cache::<ResourceSlice>(&self.client, Default::default());
        let (classes, class_events) = super::cache::<DeviceClass>(&self.client, Default::default());
        let mut streams = vec![pod_node_events, claim_events, slice_events, class_events];
        let groups = if self.config.dra.gates.generic_workload {
            let (groups, group_events) = super::cache::<PodGroup>(&self.client, Default::default());
            streams.push(group_events);
            Some(groups)
        } else {
            None
        };
        let mut events = futures::stream::select_all(streams);
        let mut dra = DraCaches { claims, slices, classes, groups, written: HashMap::new() };
        let mut assumed: HashMap<String, (String, Resources)> = HashMap::new();
        let mut last_written: HashMap<String, String> = HashMap::new();
        loop {
            tokio::select! {
                next = events.next() => {
                    if next.is_none() {
                        return Err(SimError::WatchEnded("pod or node"));
                    }
                    // Take every change already waiting so one pass sees them all.
                    while let Some(Some(())) = events.next().now_or_never() {}
                }
                _ = tokio::time::sleep(self.config.retry_interval) => {}
            }
            if !(store_ready(&pods) && store_ready(&nodes)) {
                continue;
            }
            // A pass that failed for a moment is tried again after `retry_interval` at the latest.
            super::tolerate("scheduler", self.pass(&pods, &nodes, &mut dra, &mut assumed, &mut last_written).await)?;
        }
    }

    /// One scheduling pass over every pod waiting for a node, oldest first.
    async fn pass(
        &self,
        pods: &Store<Pod>,
        nodes: &Store<Node>,
        dra: &mut DraCaches,
        assumed: &mut HashMap<String, (String, Resources)>,
        last_written: &mut HashMap<String, String>,
    ) -> Result<(), SimError> {
        let all_pods = pods.state();
        let dra_ready = dra.ready();
        let mut view = dra_ready.then(|| dra.view());
        let mut taken = std::collections::BTreeSet::new();
        let mut nodes: Vec<_> = nodes.state().iter().map(|n| (**n).clone()).collect();
        nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        // Bindings this scheduler made that the watch has not shown yet still take room.
        assumed.retain(|uid, _| {
            all_pods.iter().any(|p| p.metadata.uid.as_deref() == Some(uid) && node_name(p).is_empty())
        });
        last_written.retain(|uid, _| all_pods.iter().any(|p| p.metadata.uid.as_deref() == Some(uid)));
        let mut used: HashMap<String, (Resources, i128)> = HashMap::new();
        for p in all_pods.iter().filter(|p| !node_name(p).is_empty() && !is_finished(p)) {
            let e = used.entry(node_name(p).to_string()).or_default();
            add(&mut e.0, &requests_with_scoring(p));
            e.1 += 1;
        }
        for (node, req) in assumed.values() {
            let e = used.entry(node.clone()).or_default();
            add(&mut e.0, req);
            e.1 += 1;
        }
        let mut waiting: Vec<&Pod> = all_pods
            .iter()
            .map(|p| p.as_ref())
            .filter(|p| self.wants(p) && !assumed.contains_key(p.metadata.uid.as_deref().unwrap_or_default()))
            .collect();
        waiting.sort_by(|a, b| {
            let key = |p: &Pod| {
                (
                    p.metadata.creation_timestamp.clone().map(|t| t.0),
                    p.metadata.namespace.clone(),
                    p.metadata.name.clone(),
                )
            };
            key(a).cmp(&key(b))
        });
        for pod in waiting {
            let requests = requests_with_scoring(pod);
            // PreEnqueue: a pod whose claims are not all there (yet) is not tried.
            let claims: Option<Vec<PodClaim>> = if crate::dra::claims::pod_claims(pod).is_empty() {
                None
            } else {
                match view.as_ref().and_then(|v| v.pre_enqueue(pod, &self.config.dra)) {
                    Some(c) => Some(c),
                    None => continue,
                }
            };
            let dra_filter = |node: &Node| -> Option<String> {
                let (Some(v), Some(c)) = (view.as_ref(), claims.as_ref()) else { return None };
                v.filter(c, node, &taken).err()
            };
            match choose_node(pod, &requests, &nodes, &used, &dra_filter) {
                Ok(node) => {
                    if let (Some(v), Some(c)) = (view.as_mut(), claims.as_ref()) {
                        let node_obj = nodes.iter().find(|n| n.metadata.name.as_deref() == Some(node.as_str()));
                        let allocations = match node_obj.map(|n| v.filter(c, n, &taken)) {
                            Some(Ok(a)) => a,
                            _ => continue,
                        };
                        let group = v.group(pod, &self.config.dra).cloned();
                        match scheduler_dra::pre_bind(
                            &self.client,
                            pod,
                            group.as_ref(),
                            c,
                            &allocations,
                            &self.config.dra,
                        )
                        .await
                        {
                            Ok(written) => {
                                for w in written {
                                    taken.extend(scheduler_dra::allocation_results(&w));
                                    if let Some(slot) = v.claims.iter_mut().find(|x| x.uid() == w.uid()) {
                                        *slot = w.clone();
                                    }
                                    dra.written.insert(w.uid().to_string(), w);
                                }
                            }
                            Err(e) if !scheduler_dra::binds_despite_failed_reservation(&self.config.dra) => {
                                let message = format!("running PreBind plugin \"DynamicResources\": {e}");
                                let uid = pod.metadata.uid.clone().unwrap_or_default();
                                if last_written.get(&uid) != Some(&message) {
                                    self.mark_unschedulable(pod, &message, "SchedulerError").await?;
                                    last_written.insert(uid, message);
                                }
                                continue;
                            }
                            Err(_) => {}
                        }
                    }
                    if self.bind(pod, &node).await? {
                        let uid = pod.metadata.uid.clone().unwrap_or_default();
                        let e = used.entry(node.clone()).or_default();
                        add(&mut e.0, &requests);
                        e.1 += 1;
                        assumed.insert(uid, (node, requests));
                    }
                }
                Err(message) => {
                    if let Some(c) = claims.as_ref() {
                        let group_name = crate::dra::claims::pod_group_name(pod);
                        let scheduled_group_pods = all_pods
                            .iter()
                            .filter(|p| {
                                group_name.is_some()
                                    && crate::dra::claims::pod_group_name(p) == group_name
                                    && p.metadata.namespace == pod.metadata.namespace
                                    && !node_name(p).is_empty()
                            })
                            .count();
                        // The DRA Filter runs only on nodes every earlier filter passed; an
                        // allocated claim that rules one of them out is "unavailable".
                        let fitting: Vec<&Node> = nodes
                            .iter()
                            .filter(|n| {
                                filter(pod, &requests, n, used.get(n.metadata.name.as_deref().unwrap_or_default()))
                                    .is_empty()
                            })
                            .collect();
                        let unavailable: Vec<bool> = c
                            .iter()
                            .map(|pc| fitting.iter().any(|n| scheduler_dra::unavailable_on(&pc.claim, n)))
                            .collect();
                        let group = view.as_ref().and_then(|v| v.group(pod, &self.config.dra)).cloned();
                        scheduler_dra::post_filter(
                            &self.client,
                            pod,
                            group.as_ref(),
                            c,
                            &unavailable,
                            scheduled_group_pods,
                            &self.config.dra,
                        )
                        .await?;
                    }
                    let uid = pod.metadata.uid.clone().unwrap_or_default();
                    if last_written.get(&uid) != Some(&message) || !has_unschedulable(pod, &message) {
                        self.mark_unschedulable(pod, &message, "Unschedulable").await?;
                        last_written.insert(uid, message);
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether `pod` is this scheduler's to place now.
    fn wants(&self, pod: &Pod) -> bool {
        let Some(spec) = pod.spec.as_ref() else { return false };
        let mine = spec.scheduler_name.as_deref().is_none_or(|s| s.is_empty() || s == self.config.scheduler_name);
        let gated = spec.scheduling_gates.as_ref().is_some_and(|g| !g.is_empty());
        mine && !gated && node_name(pod).is_empty() && pod.metadata.deletion_timestamp.is_none() && !is_finished(pod)
    }

    /// POSTs a Binding; `false` when the pod went away or was bound by someone else meanwhile.
    async fn bind(&self, pod: &Pod, node: &str) -> Result<bool, SimError> {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        let binding = json!({
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": ns, "uid": pod.metadata.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        });
        match api.create_subresource::<Value, Value>("binding", &name, &PostParams::default(), &binding).await {
            Ok(_) => {
                let message = format!("Successfully assigned {ns}/{name} to {node}");
                self.events.eventf(&reference(pod), None, EventType::Normal, "Scheduled", "Binding", message).await;
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(false),
            Err(e) => Err(SimError::api(format!("binding pod {ns}/{name} to node {node}"))(e)),
        }
    }

    /// Writes `PodScheduled=False` with `reason` (`Unschedulable`, or `SchedulerError` for a
    /// plugin error) and `message`.
    async fn mark_unschedulable(&self, pod: &Pod, message: &str, reason: &str) -> Result<(), SimError> {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        let mut conditions: Vec<Value> = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .map(|cs| cs.iter().filter_map(|c| serde_json::to_value(c).ok()).collect())
            .unwrap_or_default();
        let now = self.clock.now_rfc3339();
        let mut cond = json!({"type": "PodScheduled", "status": "False", "lastProbeTime": null,
                              "lastTransitionTime": now, "reason": reason, "message": message});
        match conditions.iter_mut().find(|c| c["type"] == "PodScheduled") {
            Some(c) => {
                if c["status"] == "False" && c["lastTransitionTime"].is_string() {
                    cond["lastTransitionTime"] = c["lastTransitionTime"].clone();
                }
                *c = cond;
            }
            None => conditions.push(cond),
        }
        let patch = json!({"metadata": {"uid": pod.metadata.uid}, "status": {"conditions": conditions}});
        match api.patch_status(&name, &PatchParams::default(), &Patch::Merge(patch)).await {
            Ok(_) => {
                self.events
                    .eventf(
                        &reference(pod),
                        None,
                        EventType::Warning,
                        "FailedScheduling",
                        "Scheduling",
                        message.to_string(),
                    )
                    .await;
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
            Err(e) => Err(SimError::api(format!("marking pod {ns}/{name} unschedulable"))(e)),
        }
    }
}

fn reference(pod: &Pod) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: pod.metadata.name.clone(),
        namespace: pod.metadata.namespace.clone(),
        uid: pod.metadata.uid.clone(),
        resource_version: pod.metadata.resource_version.clone(),
        ..Default::default()
    }
}

pub(crate) use crate::watch::store_ready;

fn has_unschedulable(pod: &Pod, message: &str) -> bool {
    pod.status.as_ref().and_then(|s| s.conditions.as_ref()).is_some_and(|cs| {
        cs.iter().any(|c| {
            c.type_ == "PodScheduled"
                && c.reason.as_deref() == Some("Unschedulable")
                && c.message.as_deref() == Some(message)
        })
    })
}

fn node_name(pod: &Pod) -> &str {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or_default()
}

fn is_finished(pod: &Pod) -> bool {
    matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed"))
}

fn add(into: &mut Resources, more: &Resources) {
    for (k, v) in more {
        *into.entry(k.clone()).or_default() += v;
    }
}

fn max_into(into: &mut Resources, other: &Resources) {
    for (k, v) in other {
        let e = into.entry(k.clone()).or_default();
        *e = (*e).max(*v);
    }
}

fn container_requests(c: &Container) -> Resources {
    let Some(res) = c.resources.as_ref() else { return Resources::new() };
    // A limit without a request defaults the request (the API server does this on create).
    let mut out: Resources =
        res.limits.iter().flatten().filter_map(|(k, q)| parse_milli(&q.0).ok().map(|v| (k.clone(), v))).collect();
    for (k, q) in res.requests.iter().flatten() {
        if let Ok(v) = parse_milli(&q.0) {
            out.insert(k.clone(), v);
        }
    }
    out
}

/// The pod's effective requests as kube-scheduler computes them: the app containers' sum
/// (plus sidecars, which run alongside), or the largest init-container step if larger, plus
/// the pod overhead.
pub fn pod_requests(pod: &Pod) -> BTreeMap<String, i128> {
    let Some(spec) = pod.spec.as_ref() else { return Resources::new() };
    let mut reqs = Resources::new();
    for c in &spec.containers {
        add(&mut reqs, &container_requests(c));
    }
    let mut sidecars = Resources::new();
    let mut init_peak = Resources::new();
    for c in spec.init_containers.iter().flatten() {
        let own = container_requests(c);
        let step = if c.restart_policy.as_deref() == Some("Always") {
            add(&mut reqs, &own);
            add(&mut sidecars, &own);
            sidecars.clone()
        } else {
            let mut step = own;
            add(&mut step, &sidecars);
            step
        };
        max_into(&mut init_peak, &step);
    }
    max_into(&mut reqs, &init_peak);
    for (k, q) in spec.overhead.iter().flatten() {
        if let Ok(v) = parse_milli(&q.0) {
            *reqs.entry(k.clone()).or_default() += v;
        }
    }
    reqs
}

/// Where the scoring amounts live in a [`Resources`] map (never checked for fit).
const SCORING_PREFIX: &str = "scoring/";

/// The pod's requests plus the cpu and memory kube-scheduler scores with: a container without a
/// cpu or memory request counts as 100m and 200Mi (`GetNonzeroRequests`), so empty pods spread.
fn requests_with_scoring(pod: &Pod) -> Resources {
    let mut out = pod_requests(pod);
    let (mut cpu, mut memory) = (0, 0);
    for c in pod.spec.iter().flat_map(|s| &s.containers) {
        let r = container_requests(c);
        cpu += r.get("cpu").copied().filter(|v| *v > 0).unwrap_or(100);
        memory += r.get("memory").copied().filter(|v| *v > 0).unwrap_or(200 * 1024 * 1024 * 1000);
    }
    out.insert(format!("{SCORING_PREFIX}cpu"), cpu);
    out.insert(format!("{SCORING_PREFIX}memory"), memory);
    out
}

fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    if toleration.effect.as_deref().is_some_and(|e| !e.is_empty() && e != taint.effect) {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or_default();
    match toleration.operator.as_deref().unwrap_or("Equal") {
        "Exists" => key.is_empty() || key == taint.key,
        "Equal" | "" => {
            key == taint.key
                && toleration.value.as_deref().unwrap_or_default() == taint.value.as_deref().unwrap_or_default()
        }
        _ => false,
    }
}

fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The taints that count for scheduling: the node's, plus the not-ready taint the node
/// lifecycle controller would add to a node that is not Ready.
fn effective_taints(node: &Node) -> Vec<Taint> {
    let mut taints: Vec<Taint> = node.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default();
    if !node_ready(node) && !taints.iter().any(|t| t.key == NOT_READY_TAINT) {
        taints.push(Taint { key: NOT_READY_TAINT.into(), effect: "NoSchedule".into(), ..Default::default() });
    }
    taints
}

fn requirement_matches(req: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = req.values.as_deref().unwrap_or_default();
    let as_int = |s: &str| s.parse::<i64>().ok();
    match req.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => matches!((value.and_then(as_int), values.first().and_then(|x| as_int(x))), (Some(v), Some(x)) if v > x),
        "Lt" => matches!((value.and_then(as_int), values.first().and_then(|x| as_int(x))), (Some(v), Some(x)) if v < x),
        _ => false,
    }
}

fn term_matches(term: &NodeSelectorTerm, node: &Node) -> bool {
    let exprs = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    let labels = node.metadata.labels.clone().unwrap_or_default();
    exprs.iter().all(|r| requirement_matches(r, labels.get(&r.key).map(String::as_str)))
        && fields.iter().all(|r| r.key == "metadata.name" && requirement_matches(r, node.metadata.name.as_deref()))
}

fn affinity_matches(pod: &Pod, node: &Node) -> bool {
    let Some(spec) = pod.spec.as_ref() else { return true };
    let labels = node.metadata.labels.clone().unwrap_or_default();
    let selector_ok = spec.node_selector.iter().flatten().all(|(k, v)| labels.get(k) == Some(v));
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| na.required_during_scheduling_ignored_during_execution.as_ref());
    let affinity_ok = required.is_none_or(|r| r.node_selector_terms.iter().any(|t| term_matches(t, node)));
    selector_ok && affinity_ok
}

fn allocatable(node: &Node) -> Resources {
    node.status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref().or(s.capacity.as_ref()))
        .map(|m| m.iter().filter_map(|(k, q)| parse_milli(&q.0).ok().map(|v| (k.clone(), v))).collect())
        .unwrap_or_default()
}

/// Why `node` rejects `pod`, or an empty list when it fits.
fn filter(pod: &Pod, requests: &Resources, node: &Node, used: Option<&(Resources, i128)>) -> Reasons {
    let tolerations = pod.spec.as_ref().and_then(|s| s.tolerations.clone()).unwrap_or_default();
    let unschedulable = node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false);
    if unschedulable {
        let taint = Taint { key: UNSCHEDULABLE_TAINT.into(), effect: "NoSchedule".into(), ..Default::default() };
        if !tolerations.iter().any(|t| tolerates(t, &taint)) {
            return vec!["node(s) were unschedulable".into()];
        }
    }
    let untolerated = effective_taints(node)
        .into_iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|t| !tolerations.iter().any(|tol| tolerates(tol, t)));
    if let Some(t) = untolerated {
        return vec![format!("node(s) had untolerated taint {{{}: {}}}", t.key, t.value.unwrap_or_default())];
    }
    if !affinity_matches(pod, node) {
        return vec!["node(s) didn't match Pod's node affinity/selector".into()];
    }
    let alloc = allocatable(node);
    let (used_res, used_pods) = used.cloned().unwrap_or_default();
    let mut reasons = Vec::new();
    let max_pods = alloc.get("pods").copied().unwrap_or(110_000) / 1000;
    if used_pods + 1 > max_pods {
        reasons.push("Too many pods".to_string());
    }
    for (resource, want) in requests {
        if *want <= 0 || resource == "pods" || resource.starts_with(SCORING_PREFIX) {
            continue;
        }
        let have = alloc.get(resource).copied().unwrap_or(0) - used_res.get(resource).copied().unwrap_or(0);
        if *want > have {
            reasons.push(format!("Insufficient {resource}"));
        }
    }
    reasons
}

/// The fitting node with the most room left (cpu and memory), then the first by name; or
/// kube-scheduler's FitError message.
fn choose_node(
    pod: &Pod,
    requests: &Resources,
    nodes: &[Node],
    used: &HashMap<String, (Resources, i128)>,
    dra_filter: &dyn Fn(&Node) -> Option<String>,
) -> Result<String, String> {
    if nodes.is_empty() {
        return Err("no nodes available to schedule pods".into());
    }
    let mut best: Option<(i128, String)> = None;
    let mut histogram: BTreeMap<String, usize> = BTreeMap::new();
    let mut preemption: BTreeMap<&str, usize> = BTreeMap::new();
    for node in nodes {
        let name = node.metadata.name.clone().unwrap_or_default();
        let mut reasons = filter(pod, requests, node, used.get(&name));
        if reasons.is_empty()
            && let Some(reason) = dra_filter(node)
        {
            reasons.push(reason);
        }
        if reasons.is_empty() {
            let score = free_share(requests, node, used.get(&name));
            if best.as_ref().is_none_or(|(s, _)| score > *s) {
                best = Some((score, name));
            }
            continue;
        }
        // Only a node short of resources could be helped by evicting pods.
        let resolvable = reasons.iter().all(|r| r.starts_with("Insufficient") || r == "Too many pods");
        *preemption
            .entry(if resolvable {
                "No preemption victims found for incoming pod"
            } else {
                "Preemption is not helpful for scheduling"
            })
            .or_default() += 1;
        for r in reasons {
            *histogram.entry(r).or_default() += 1;
        }
    }
    if let Some((_, name)) = best {
        return Ok(name);
    }
    let n = nodes.len();
    Err(format!(
        "0/{n} nodes are available: {}. preemption: 0/{n} nodes are available: {}..",
        sorted_reasons(histogram.iter().map(|(r, c)| (r.as_str(), *c))),
        sorted_reasons(preemption.into_iter())
    ))
}

/// `"<count> <reason>"` strings sorted as strings, joined with `, ` (kube-scheduler's order).
fn sorted_reasons<'a>(counts: impl Iterator<Item = (&'a str, usize)>) -> String {
    let mut items: Vec<String> = counts.map(|(r, c)| format!("{c} {r}")).collect();
    items.sort();
    items.join(", ")
}

/// The share of cpu and memory left after placing the pod, in hundredths summed over both.
fn free_share(requests: &Resources, node: &Node, used: Option<&(Resources, i128)>) -> i128 {
    let alloc = allocatable(node);
    let (used_res, _) = used.cloned().unwrap_or_default();
    ["cpu", "memory"]
        .iter()
        .map(|r| {
            let total = alloc.get(*r).copied().unwrap_or(0);
            if total <= 0 {
                return 0;
            }
            let key = format!("{SCORING_PREFIX}{r}");
            let taken = used_res.get(&key).copied().unwrap_or(0) + requests.get(&key).copied().unwrap_or(0);
            (total - taken) * 100 / total
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(v: Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn effective_requests_follow_init_and_sidecar_rules() {
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {
            "initContainers": [
                {"name": "big-init", "resources": {"requests": {"cpu": "3"}}},
                {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                {"name": "late-init", "resources": {"requests": {"cpu": "2"}}}
            ],
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}},
                {"name": "b", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
            ],
            "overhead": {"cpu": "100m"}
        }}));
        let r = pod_requests(&p);
        // max(2 + 0.5 sidecar, 3, 2 + 0.5) = 3, plus 0.1 overhead.
        assert_eq!(r["cpu"], 3100);
        assert_eq!(r["memory"], 2 * (1 << 30) * 1000);
        assert_eq!(r["nvidia.com/gpu"], 1000);
    }

    #[test]
    fn tolerations_match_taints() {
        let taint = Taint {
            key: "nvidia.com/gpu".into(),
            value: Some("present".into()),
            effect: "NoSchedule".into(),
            ..Default::default()
        };
        let tol = |v: Value| -> Toleration { serde_json::from_value(v).unwrap() };
        assert!(tolerates(&tol(json!({"key": "nvidia.com/gpu", "operator": "Exists"})), &taint));
        assert!(tolerates(&tol(json!({"operator": "Exists"})), &taint));
        assert!(tolerates(&tol(json!({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"})), &taint));
        assert!(!tolerates(&tol(json!({"key": "nvidia.com/gpu", "value": "absent"})), &taint));
        assert!(!tolerates(
            &tol(json!({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"})),
            &taint
        ));
    }

    #[test]
    fn fit_error_message_is_sorted_like_kube_scheduler() {
        let s = sorted_reasons(
            [("Insufficient nvidia.com/gpu", 2), ("node(s) had untolerated taint {a: b}", 3)].into_iter(),
        );
        assert_eq!(s, "2 Insufficient nvidia.com/gpu, 3 node(s) had untolerated taint {a: b}");
    }
}
