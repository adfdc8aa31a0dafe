//! RayCluster status and conditions (`calculateStatus`, `utils.Calculate*`,
//! `utils.FindHeadPodReadyCondition`, `inconsistentRayClusterStatus`).

use crate::crds::raycluster::HeadInfo;
use crate::crds::{RayCluster, RayClusterStatus, WorkerGroupSpec};
use crate::kuberay::*;
use apimachinery::Quantity;
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
    replicas.saturating_mul(group.num_of_hosts.unwrap_or(1))
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

/// `meta.SetStatusCondition`: the transition time moves only when the status changes. KubeRay
/// sets no `observedGeneration` on its conditions.
pub(crate) fn set_condition(
    conds: &mut Vec<Condition>,
    t: &str,
    status: bool,
    reason: &str,
    message: &str,
    now: &Time,
) {
    crate::kuberay::common::conditions::set(conds, t, status, reason, message, now, None);
}

fn remove_condition(conds: &mut Vec<Condition>, t: &str) {
    crate::kuberay::common::conditions::remove(conds, t);
}

/// `FindHeadPodReadyCondition`: `HeadPodReady` follows the head pod's Ready condition (status and
/// message); its reason is the pod's reason, `HeadPodRunningAndReady` when ready without one,
/// `Unknown` without a Ready condition. `ContainersNotReady` is replaced by the first container
/// that is waiting or terminated: its reason, and `<container>: <message>` appended to the message.
fn head_pod_ready(head: &Pod) -> (bool, String, String) {
    let Some(c) = ready_condition(head) else {
        return (false, "Unknown".into(), String::new());
    };
    let ready = c.status == "True";
    let mut message = c.message.clone().unwrap_or_default();
    let mut reason = c.reason.clone().unwrap_or_default();
    if ready && reason.is_empty() {
        reason = "HeadPodRunningAndReady".into();
    }
    let mut condition_reason = if reason.is_empty() { "Unknown".to_string() } else { reason.clone() };
    if reason == "ContainersNotReady" {
        let statuses = head.status.as_ref().and_then(|s| s.container_statuses.as_ref());
        let first = statuses.into_iter().flatten().find_map(|s| {
            let st = s.state.as_ref()?;
            if let Some(w) = &st.waiting {
                Some((
                    w.reason.clone().unwrap_or_default(),
                    format!("{}: {}", s.name, w.message.clone().unwrap_or_default()),
                ))
            } else {
                st.terminated.as_ref().map(|t| {
                    (
                        t.reason.clone().unwrap_or_default(),
                        format!("{}: {}", s.name, t.message.clone().unwrap_or_default()),
                    )
                })
            }
        });
        if let Some((r, m)) = first {
            if !message.is_empty() {
                message.push_str("; ");
            }
            message.push_str(&m);
            condition_reason = r;
        }
    }
    (ready, condition_reason, message)
}

/// The head pod (`common.GetRayClusterHeadPod`): none, one, or an error when there are several.
pub(crate) fn head_pod(pods: &[Pod]) -> Result<Option<&Pod>, String> {
    let heads: Vec<&Pod> = pods.iter().filter(|p| is_head(p)).collect();
    match heads.len() {
        0 => Ok(None),
        1 => Ok(Some(heads[0])),
        _ => Err("found multiple heads".into()),
    }
}

fn is_head(p: &Pod) -> bool {
    p.labels().get(RAY_NODE_TYPE_LABEL).map(String::as_str) == Some("head")
}

/// The new status after a reconcile pass (the cluster itself is not changed), or why it cannot
/// be calculated (`calculateStatus` with `updateEndpoints`/`updateHeadInfo`): more than one head
/// pod, no head service, or a head service without a cluster IP.
pub(crate) fn calculate(
    rc: &RayCluster,
    pods: &[Pod],
    head_services: &[Service],
    failure: Option<(&str, String)>,
    reconcile_failed: bool,
    cfg: &KubeRayConfig,
    now: Time,
) -> Result<RayClusterStatus, String> {
    let old = rc.status.clone().unwrap_or_default();
    let mut s = old.clone();
    let gate = cfg.gate(KubeRayGate::RayClusterStatusConditions);
    if gate {
        match failure {
            Some((reason, message)) => set_condition(&mut s.conditions, REPLICA_FAILURE, true, reason, &message, &now),
            None if !reconcile_failed => remove_condition(&mut s.conditions, REPLICA_FAILURE),
            None => {}
        }
    }
    s.observed_generation = rc.metadata.generation;
    let workers: Vec<&Pod> = pods.iter().filter(|p| is_worker(p)).collect();
    s.ready_worker_replicas = workers
        .iter()
        .filter(|p| phase(p) == "Running" && ready_condition(p).is_some_and(|c| c.status == "True"))
        .count() as i32;
    s.available_worker_replicas = workers.iter().filter(|p| phase(p) == "Running").count() as i32;
    let groups = &rc.spec.worker_group_specs;
    let live: Vec<&WorkerGroupSpec> = groups.iter().filter(|g| g.suspend != Some(true)).collect();
    s.desired_worker_replicas = groups.iter().map(desired_replicas).fold(0i32, |a, b| a.saturating_add(b));
    s.min_worker_replicas = live
        .iter()
        .map(|g| g.min_replicas.unwrap_or(0).saturating_mul(g.num_of_hosts.unwrap_or(1)))
        .fold(0i32, |a, b| a.saturating_add(b));
    s.max_worker_replicas = live
        .iter()
        .map(|g| i64::from(g.max_replicas.unwrap_or(i32::MAX)) * i64::from(g.num_of_hosts.unwrap_or(1)))
        .sum::<i64>()
        .clamp(0, i64::from(i32::MAX)) as i32;
    let [cpu, memory, gpu, tpu] = desired_resources(rc);
    s.desired_cpu = Some(cpu.to_string());
    s.desired_memory = Some(memory.to_string());
    s.desired_gpu = Some(gpu.to_string());
    s.desired_tpu = Some(tpu.to_string());

    if !reconcile_failed && pods.len() == s.desired_worker_replicas as usize + 1 && all_pods_running(pods) {
        // `ready` is sticky: it is only ever replaced by `suspended`.
        s.state = Some("ready".into());
        s.reason = None;
    }

    if gate {
        match head_pod(pods)? {
            Some(h) => {
                let (ready, reason, message) = head_pod_ready(h);
                set_condition(&mut s.conditions, HEAD_POD_READY, ready, &reason, &message, &now);
            }
            None => {
                set_condition(&mut s.conditions, HEAD_POD_READY, false, "HeadPodNotFound", "Head Pod not found", &now)
            }
        }
        let suspend = suspend_status(rc);
        // Provisioned is written until all pods run for the first time, and again after a suspension.
        if !condition_true(Some(&s), PROVISIONED) && suspend != SuspendStatus::Suspended {
            if all_pods_running(pods) {
                set_condition(
                    &mut s.conditions,
                    PROVISIONED,
                    true,
                    "AllPodRunningAndReadyFirstTime",
                    "All Ray Pods are ready for the first time",
                    &now,
                );
            } else {
                set_condition(
                    &mut s.conditions,
                    PROVISIONED,
                    false,
                    "RayClusterPodsProvisioning",
                    "RayCluster Pods are being provisioned for first time",
                    &now,
                );
            }
        }
        match suspend {
            SuspendStatus::Suspending if cfg.defective(Defect::NonAtomicSuspend) && rc.spec.suspend != Some(true) => {
                set_condition(&mut s.conditions, SUSPENDING, false, SUSPENDING, "", &now);
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
                    );
                    set_condition(&mut s.conditions, SUSPENDING, false, SUSPENDING, "", &now);
                    set_condition(&mut s.conditions, SUSPENDED, true, SUSPENDED, "", &now);
                }
            }
            // Only an explicit `suspend: false` resumes; removing the field leaves it suspended.
            SuspendStatus::Suspended => {
                if rc.spec.suspend == Some(false) {
                    set_condition(&mut s.conditions, SUSPENDED, false, SUSPENDED, "", &now);
                }
            }
            SuspendStatus::None => {
                set_condition(&mut s.conditions, SUSPENDED, false, SUSPENDED, "", &now);
                let suspending = rc.spec.suspend == Some(true);
                set_condition(&mut s.conditions, SUSPENDING, suspending, SUSPENDING, "", &now);
            }
        }
    }

    if rc.spec.suspend == Some(true) && pods.is_empty() {
        s.state = Some("suspended".into());
    }

    // `updateEndpoints`: the first head service's named ports, merged into what was there.
    if let Some(svc) = head_services.first() {
        let endpoints = s.endpoints.get_or_insert_with(BTreeMap::new);
        for p in svc.spec.as_ref().and_then(|sp| sp.ports.as_ref()).into_iter().flatten() {
            let Some(name) = p.name.as_ref().filter(|n| !n.is_empty()) else { continue };
            use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
            let value = match (p.node_port.filter(|n| *n != 0), &p.target_port) {
                (Some(np), _) => np.to_string(),
                (None, Some(IntOrString::Int(i))) if *i != 0 => i.to_string(),
                (None, Some(IntOrString::String(t))) if !t.is_empty() => t.clone(),
                _ => continue,
            };
            endpoints.insert(name.clone(), value);
        }
    }

    // `updateHeadInfo` and `getHeadServiceIPAndName`.
    let head = head_pod(pods)?;
    let pod_ip = head.and_then(|h| h.status.as_ref()).and_then(|st| st.pod_ip.clone()).filter(|ip| !ip.is_empty());
    let mut info = HeadInfo { pod_ip: pod_ip.clone(), pod_name: head.map(|h| h.name_any()), ..HeadInfo::default() };
    let svc = match head_services {
        [] => return Err(format!("unable to find head service. cluster name {}", rc.name_any())),
        [svc] => svc,
        _ => return Err(format!("found multiple head services. cluster name {}", rc.name_any())),
    };
    info.service_name = Some(svc.name_any());
    info.service_ip = match svc.spec.as_ref().and_then(|sp| sp.cluster_ip.as_deref()).unwrap_or("") {
        "" => return Err(format!("head service IP is empty. cluster name {}", rc.name_any())),
        "None" => pod_ip,
        ip => Some(ip.to_string()),
    };
    s.head = Some(info);
    s.last_update_time = Some(fmt_time(&now));
    if s.state != old.state
        && let Some(state) = &s.state
    {
        s.state_transition_times.get_or_insert_with(BTreeMap::new).insert(state.clone(), fmt_time(&now));
    }
    Ok(s)
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
