//! RayCluster status and conditions (`calculateStatus`, `utils.Calculate*`,
//! `utils.FindHeadPodReadyCondition`, `inconsistentRayClusterStatus`).

use crate::crds::raycluster::HeadInfo;
use crate::crds::{RayCluster, RayClusterStatus, WorkerGroupSpec};
use crate::kuberay::*;
use crate::quantity::Quantity;
use k8s_openapi::api::core::v1::{Pod, PodSpec, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::ResourceExt;

pub(crate) const HEAD_POD_READY: &str = "HeadPodReady";
pub(crate) const PROVISIONED: &str = "RayClusterProvisioned";
pub(crate) const REPLICA_FAILURE: &str = "ReplicaFailure";
pub(crate) const SUSPENDING: &str = "RayClusterSuspending";
pub(crate) const SUSPENDED: &str = "RayClusterSuspended";

/// The cluster's place in the suspend state machine, read from its conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SuspendStatus {
    None,
    Suspending,
    Suspended,
}

pub(crate) fn condition_true(status: Option<&RayClusterStatus>, t: &str) -> bool {
    status.is_some_and(|s| s.conditions.iter().any(|c| c.type_ == t && c.status == "True"))
}

pub(crate) fn suspend_status(rc: &RayCluster) -> SuspendStatus {
    if condition_true(rc.status.as_ref(), SUSPENDING) {
        SuspendStatus::Suspending
    } else if condition_true(rc.status.as_ref(), SUSPENDED) {
        SuspendStatus::Suspended
    } else {
        SuspendStatus::None
    }
}

/// Desired pods of a group: 0 when suspended, else replicas clamped to [min, max], times hosts.
pub(crate) fn desired_replicas(group: &WorkerGroupSpec) -> i32 {
    if group.suspend == Some(true) {
        return 0;
    }
    let min = group.min_replicas.unwrap_or(0);
    let max = group.max_replicas.unwrap_or(i32::MAX);
    let replicas = match group.replicas {
        None => min,
        Some(r) if r < min => min,
        Some(r) if r > max => max,
        Some(r) => r,
    };
    replicas.saturating_mul(group.num_of_hosts.unwrap_or(1).max(1))
}

fn phase(p: &Pod) -> &str {
    p.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

fn ready_condition(p: &Pod) -> Option<&k8s_openapi::api::core::v1::PodCondition> {
    p.status.as_ref().and_then(|s| s.conditions.as_ref()).and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
}

fn is_worker(p: &Pod) -> bool {
    p.labels().get(RAY_NODE_TYPE_LABEL).map(String::as_str) == Some("worker")
}

/// Every pod is Running and none says Ready=False (`utils.CheckAllPodsRunning`); false if none.
pub(crate) fn all_pods_running(pods: &[Pod]) -> bool {
    !pods.is_empty()
        && pods.iter().all(|p| phase(p) == "Running" && ready_condition(p).is_none_or(|c| c.status == "True"))
}

/// Requests win over limits, per container; summed over containers (`CalculatePodResource`).
fn pod_resources(spec: Option<&PodSpec>) -> BTreeMap<String, Quantity> {
    let mut total: BTreeMap<String, Quantity> = BTreeMap::new();
    for c in spec.map(|s| s.containers.as_slice()).unwrap_or_default() {
        let mut per: BTreeMap<String, Quantity> = BTreeMap::new();
        if let Some(r) = &c.resources {
            for (k, v) in r.limits.iter().flatten() {
                if let Some(q) = Quantity::parse(&v.0) {
                    per.insert(k.clone(), q);
                }
            }
            for (k, v) in r.requests.iter().flatten() {
                if let Some(q) = Quantity::parse(&v.0) {
                    per.insert(k.clone(), q);
                }
            }
        }
        for (k, q) in per {
            let sum = total.get(&k).copied().unwrap_or(Quantity::ZERO).plus(q);
            total.insert(k, sum);
        }
    }
    total
}

fn is_gpu(name: &str) -> bool {
    name.ends_with("gpu") || name.starts_with("nvidia.com/mig-")
}

/// desiredCPU/Memory/GPU/TPU: the head pod plus every non-suspended group's pod resources times
/// hosts times `spec.replicas` as written (not clamped; kuberay.md §2.5).
fn desired_resources(rc: &RayCluster) -> [Quantity; 4] {
    let mut total = pod_resources(rc.spec.head_group_spec.template.spec.as_ref());
    for g in &rc.spec.worker_group_specs {
        if g.suspend == Some(true) {
            continue;
        }
        let n = i64::from(g.replicas.unwrap_or(0)) * i64::from(g.num_of_hosts.unwrap_or(1));
        for (k, q) in pod_resources(g.template.spec.as_ref()) {
            let sum = total.get(&k).copied().unwrap_or(Quantity::ZERO).plus(q.times(n));
            total.insert(k, sum);
        }
    }
    let get = |k: &str| total.get(k).copied().unwrap_or(Quantity::ZERO);
    let gpu = total.iter().filter(|(k, _)| is_gpu(k)).fold(Quantity::ZERO, |acc, (_, q)| acc.plus(*q));
    [get("cpu"), get("memory"), gpu, get("google.com/tpu")]
}

/// `meta.SetStatusCondition` with a True/False status.
pub(crate) fn set_condition(
    conds: &mut Vec<Condition>,
    t: &str,
    status: bool,
    reason: &str,
    message: &str,
    now: &Time,
    generation: Option<i64>,
) {
    crate::kuberay::common::conditions::set(conds, t, status, reason, message, now, generation);
}

fn remove_condition(conds: &mut Vec<Condition>, t: &str) {
    crate::kuberay::common::conditions::remove(conds, t);
}

/// `HeadPodReady` from the head pod's Ready condition: `HeadPodRunningAndReady` when ready; else
/// the pod's reason, with `ContainersNotReady` replaced by the first waiting or terminated
/// container's reason.
fn head_pod_ready(head: &Pod) -> (bool, String, String) {
    let Some(c) = ready_condition(head) else {
        return (false, "Unknown".into(), String::new());
    };
    if c.status == "True" {
        return (true, "HeadPodRunningAndReady".into(), c.message.clone().unwrap_or_default());
    }
    let mut reason = c.reason.clone().unwrap_or_else(|| "Unknown".into());
    if reason == "ContainersNotReady" {
        let statuses = head.status.as_ref().and_then(|s| s.container_statuses.as_ref());
        if let Some(r) = statuses.into_iter().flatten().find_map(|s| {
            let st = s.state.as_ref()?;
            st.waiting
                .as_ref()
                .and_then(|w| w.reason.clone())
                .or_else(|| st.terminated.as_ref().and_then(|t| t.reason.clone()))
        }) {
            reason = r;
        }
    }
    (false, reason, c.message.clone().unwrap_or_default())
}

/// The new status after a reconcile pass (the cluster itself is not changed).
pub(crate) fn calculate(
    rc: &RayCluster,
    pods: &[Pod],
    head_svc: Option<&Service>,
    failure: Option<(&str, String)>,
    reconcile_failed: bool,
    cfg: &KubeRayConfig,
    now: Time,
) -> RayClusterStatus {
    let old = rc.status.clone().unwrap_or_default();
    let mut s = old.clone();
    let generation = rc.metadata.generation;
    match failure {
        Some((reason, message)) => {
            set_condition(&mut s.conditions, REPLICA_FAILURE, true, reason, &message, &now, generation)
        }
        None if !reconcile_failed => remove_condition(&mut s.conditions, REPLICA_FAILURE),
        None => {}
    }
    let workers: Vec<&Pod> = pods.iter().filter(|p| is_worker(p)).collect();
    s.ready_worker_replicas = workers
        .iter()
        .filter(|p| phase(p) == "Running" && ready_condition(p).is_some_and(|c| c.status == "True"))
        .count() as i32;
    s.available_worker_replicas = workers.iter().filter(|p| phase(p) == "Running").count() as i32;
    let live: Vec<&WorkerGroupSpec> = rc.spec.worker_group_specs.iter().filter(|g| g.suspend != Some(true)).collect();
    s.desired_worker_replicas = live.iter().map(|g| desired_replicas(g)).fold(0i32, |a, b| a.saturating_add(b));
    s.min_worker_replicas = live
        .iter()
        .map(|g| g.min_replicas.unwrap_or(0).saturating_mul(g.num_of_hosts.unwrap_or(1)))
        .fold(0i32, |a, b| a.saturating_add(b));
    s.max_worker_replicas = live
        .iter()
        .map(|g| g.max_replicas.unwrap_or(i32::MAX).saturating_mul(g.num_of_hosts.unwrap_or(1)))
        .fold(0i32, |a, b| a.saturating_add(b));
    let [cpu, memory, gpu, tpu] = desired_resources(rc);
    s.desired_cpu = Some(cpu.to_string());
    s.desired_memory = Some(memory.to_string());
    s.desired_gpu = Some(gpu.to_string());
    s.desired_tpu = Some(tpu.to_string());

    let all_up = !reconcile_failed && pods.len() == s.desired_worker_replicas as usize + 1 && all_pods_running(pods);
    if all_up {
        // `ready` is sticky: it is only ever replaced by `suspended`.
        s.state = Some("ready".into());
        s.reason = None;
    }
    if rc.spec.suspend == Some(true) && pods.is_empty() {
        s.state = Some("suspended".into());
    }

    if cfg.gate(KubeRayGate::RayClusterStatusConditions) {
        let head = pods.iter().find(|p| !is_worker(p));
        match head {
            Some(h) => {
                let (ready, reason, message) = head_pod_ready(h);
                set_condition(&mut s.conditions, HEAD_POD_READY, ready, &reason, &message, &now, generation);
            }
            None => set_condition(
                &mut s.conditions,
                HEAD_POD_READY,
                false,
                "HeadPodNotFound",
                "Head Pod not found",
                &now,
                generation,
            ),
        }
        if !condition_true(Some(&s), PROVISIONED) {
            if all_up {
                set_condition(
                    &mut s.conditions,
                    PROVISIONED,
                    true,
                    "AllPodRunningAndReadyFirstTime",
                    "All Ray Pods are ready for the first time",
                    &now,
                    generation,
                );
            } else {
                set_condition(
                    &mut s.conditions,
                    PROVISIONED,
                    false,
                    "RayClusterPodsProvisioning",
                    "RayCluster Pods are being provisioned for first time",
                    &now,
                    generation,
                );
            }
        }
        match suspend_status(rc) {
            SuspendStatus::Suspending if cfg.defective(Defect::NonAtomicSuspend) && rc.spec.suspend != Some(true) => {
                set_condition(&mut s.conditions, SUSPENDING, false, SUSPENDING, "", &now, generation);
            }
            SuspendStatus::Suspending => {
                if pods.is_empty() {
                    set_condition(
                        &mut s.conditions,
                        PROVISIONED,
                        false,
                        "RayClusterPodsProvisioning",
                        "RayCluster has been suspended",
                        &now,
                        generation,
                    );
                    set_condition(&mut s.conditions, SUSPENDING, false, SUSPENDING, "", &now, generation);
                    set_condition(&mut s.conditions, SUSPENDED, true, SUSPENDED, "", &now, generation);
                }
            }
            SuspendStatus::Suspended => {
                if rc.spec.suspend != Some(true) {
                    set_condition(&mut s.conditions, SUSPENDED, false, SUSPENDED, "", &now, generation);
                }
            }
            SuspendStatus::None => {
                if rc.spec.suspend == Some(true) {
                    set_condition(&mut s.conditions, SUSPENDING, true, SUSPENDING, "", &now, generation);
                    set_condition(&mut s.conditions, SUSPENDED, false, SUSPENDED, "", &now, generation);
                }
            }
        }
    }

    if s.state != old.state
        && let Some(state) = &s.state
    {
        s.state_transition_times.get_or_insert_with(BTreeMap::new).insert(state.clone(), fmt_time(&now));
    }

    // Head info and endpoints (`updateHeadInfo`, `updateEndpoints`).
    let head = pods.iter().find(|p| !is_worker(p));
    let pod_ip = head.and_then(|h| h.status.as_ref()).and_then(|st| st.pod_ip.clone());
    let mut info = HeadInfo { pod_ip: pod_ip.clone(), pod_name: head.map(|h| h.name_any()), ..HeadInfo::default() };
    if let Some(svc) = head_svc {
        info.service_name = Some(svc.name_any());
        let cluster_ip = svc.spec.as_ref().and_then(|sp| sp.cluster_ip.clone());
        info.service_ip = match cluster_ip.as_deref() {
            Some("None") | None => pod_ip,
            Some(ip) => Some(ip.to_string()),
        };
        let mut endpoints = BTreeMap::new();
        for p in svc.spec.as_ref().and_then(|sp| sp.ports.as_ref()).into_iter().flatten() {
            let Some(name) = &p.name else { continue };
            let value = match (p.node_port, &p.target_port) {
                (Some(np), _) => np.to_string(),
                (None, Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(i))) => i.to_string(),
                (None, Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s))) => s.clone(),
                (None, None) => p.port.to_string(),
            };
            endpoints.insert(name.clone(), value);
        }
        s.endpoints = if endpoints.is_empty() { None } else { Some(endpoints) };
    }
    s.head = if info == HeadInfo::default() { None } else { Some(info) };
    s.last_update_time = Some(fmt_time(&now));
    s.observed_generation = generation;
    s
}

/// Whether the new status must be written: only these fields count, not lastUpdateTime,
/// observedGeneration or the desired resources (`inconsistentRayClusterStatus`).
pub(crate) fn inconsistent(old: &RayClusterStatus, new: &RayClusterStatus) -> bool {
    old.state != new.state
        || old.reason != new.reason
        || old.ready_worker_replicas != new.ready_worker_replicas
        || old.available_worker_replicas != new.available_worker_replicas
        || old.desired_worker_replicas != new.desired_worker_replicas
        || old.min_worker_replicas != new.min_worker_replicas
        || old.max_worker_replicas != new.max_worker_replicas
        || old.endpoints != new.endpoints
        || old.head != new.head
        || old.conditions != new.conditions
}

fn fmt_time(t: &Time) -> String {
    t.0.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}
