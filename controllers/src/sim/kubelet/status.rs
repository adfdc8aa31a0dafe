//! The pod status the simulated kubelet writes for each stage of a pod: phase, conditions
//! (with transition times that stay put), container states with stable container and image
//! IDs, restart counts and the back-off of a crash loop.

use super::{ANNOTATION_PREFIX, Stage, Track};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::time::Instant;

pub(super) fn format_ts(t: &jiff::Timestamp) -> String {
    jiff::Timestamp::from_second(t.as_second()).unwrap_or(*t).strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

pub(super) fn pod_annotation(pod: &Pod, key: &str) -> Option<String> {
    pod.metadata.annotations.as_ref().and_then(|a| a.get(&format!("{ANNOTATION_PREFIX}{key}")).cloned())
}

/// 64 stable hex digits from `seed`.
fn hex64(seed: &str) -> String {
    (0..4).map(|i| format!("{:016x}", apimachinery::names::fnv1a(&format!("{i}/{seed}")))).collect()
}

pub(super) fn container_id(pod: &Pod, container: &str, restart: i32) -> String {
    format!(
        "containerd://{}",
        hex64(&format!("{}/{container}/{restart}", pod.metadata.uid.as_deref().unwrap_or_default()))
    )
}

pub(super) fn image_id(image: &str) -> String {
    let repo = image.rsplit_once(':').filter(|(_, tag)| !tag.contains('/')).map_or(image, |(r, _)| r);
    let repo = repo.split('@').next().unwrap_or(repo);
    format!("{repo}@sha256:{}", hex64(image))
}

/// The pod status the kubelet reports for `stage`.
pub(super) fn build_status(pod: &Pod, track: &mut Track, stage: &Stage, now_ts: &str) -> Value {
    let spec = pod.spec.clone().unwrap_or_default();
    let names: Vec<String> = spec.containers.iter().map(|c| c.name.clone()).collect();
    let (phase, ready, started, sandbox) = match stage {
        Stage::Creating => ("Pending", false, false, true),
        Stage::Running { ready } => ("Running", *ready, true, true),
        Stage::CrashLoop => ("Running", false, false, true),
        // Terminating containers are taken out of service at once.
        Stage::Deleting => {
            let running = track.running_since.is_some() || track.backoff_until.is_some();
            (if running { "Running" } else { "Pending" }, false, track.running_since.is_some(), true)
        }
        Stage::Failed | Stage::Evicted => ("Failed", false, false, false),
        Stage::Stopped => ("Succeeded", false, false, false),
    };
    let mut cond = |type_: &str, ok: bool, reason: Option<&str>, message: Option<String>| {
        let status = if ok { "True" } else { "False" };
        let previous = track.conditions.get(type_).cloned().or_else(|| {
            pod.status.as_ref().and_then(|s| s.conditions.as_ref()).and_then(|cs| {
                cs.iter().find(|c| c.type_ == type_).map(|c| {
                    (c.status.clone(), c.last_transition_time.as_ref().map(|t| format_ts(&t.0)).unwrap_or_default())
                })
            })
        });
        let since = match previous {
            Some((s, t)) if s == status && !t.is_empty() => t,
            _ => now_ts.to_string(),
        };
        track.conditions.insert(type_.to_string(), (status.to_string(), since.clone()));
        let mut c = json!({"type": type_, "status": status, "lastProbeTime": null, "lastTransitionTime": since});
        if let Some(r) = reason {
            c["reason"] = json!(r);
        }
        if let Some(m) = message {
            c["message"] = json!(m);
        }
        c
    };
    let unready = format!("containers with unready status: [{}]", names.join(" "));
    let (ready_reason, ready_message) = match stage {
        _ if ready => (None, None),
        Stage::Stopped => (Some("PodCompleted"), None),
        _ => (Some("ContainersNotReady"), Some(unready)),
    };
    let mut conditions = vec![
        cond("PodReadyToStartContainers", sandbox, None, None),
        cond("Initialized", true, None, None),
        cond("Ready", ready, ready_reason, ready_message.clone()),
        cond("ContainersReady", ready, ready_reason, ready_message),
    ];
    if matches!(stage, Stage::Evicted) {
        conditions.push(cond(
            "DisruptionTarget",
            true,
            Some("TerminationByKubelet"),
            Some("The node was low on resource: memory. ".into()),
        ));
    }
    let scheduled = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled"))
        .and_then(|c| serde_json::to_value(c).ok())
        .unwrap_or_else(|| json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": track.start_time}));
    conditions.push(scheduled);

    let running_since = track.running_since.as_ref().map(|(_, ts)| ts.clone()).unwrap_or_else(|| now_ts.to_string());
    let statuses: Vec<Value> = spec
        .containers
        .iter()
        .map(|c| {
            let image = c.image.clone().unwrap_or_default();
            let id = container_id(pod, &c.name, track.restart_count);
            let (state, container_ready, container_started, with_ids) = match stage {
                Stage::Creating => (json!({"waiting": {"reason": "ContainerCreating"}}), false, false, false),
                Stage::Running { .. } | Stage::Deleting if started => {
                    (json!({"running": {"startedAt": running_since}}), ready, true, true)
                }
                Stage::Deleting => (json!({"waiting": {"reason": "ContainerCreating"}}), false, false, false),
                Stage::Running { .. } => (json!({"running": {"startedAt": running_since}}), ready, true, true),
                Stage::CrashLoop => {
                    let uid = pod.metadata.uid.clone().unwrap_or_default();
                    let pod_name = pod.metadata.name.clone().unwrap_or_default();
                    let ns = pod.metadata.namespace.clone().unwrap_or_default();
                    let message = format!(
                        "back-off {} restarting failed container={} pod={pod_name}_{ns}({uid})",
                        apimachinery::format_go_duration(backoff_left(track)),
                        c.name
                    );
                    (json!({"waiting": {"reason": "CrashLoopBackOff", "message": message}}), false, false, true)
                }
                Stage::Failed => (
                    track.last_terminated.clone().map(|t| with_container_id(t, &id)).unwrap_or_default(),
                    false,
                    false,
                    true,
                ),
                Stage::Evicted => (
                    json!({"terminated": {"exitCode": 137, "reason": "Error", "startedAt": running_since,
                                          "finishedAt": now_ts, "containerID": id}}),
                    false,
                    false,
                    true,
                ),
                Stage::Stopped => (
                    json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": running_since,
                                          "finishedAt": now_ts, "containerID": id}}),
                    false,
                    false,
                    true,
                ),
            };
            let last_state = match (stage, &track.last_terminated) {
                (Stage::Failed, _) | (_, None) => json!({}),
                (_, Some(t)) => with_container_id(t.clone(), &container_id(pod, &c.name, track.restart_count - 1)),
            };
            let mut s = json!({
                "name": c.name,
                "state": state,
                "lastState": last_state,
                "ready": container_ready,
                "restartCount": track.restart_count,
                "image": image,
                "imageID": if with_ids { image_id(&image) } else { String::new() },
                "started": container_started,
            });
            if with_ids {
                s["containerID"] = json!(id);
            }
            s
        })
        .collect();
    let init_statuses: Vec<Value> = spec
        .init_containers
        .iter()
        .flatten()
        .map(|c| {
            let image = c.image.clone().unwrap_or_default();
            let done = !matches!(stage, Stage::Creating);
            let state = if done {
                json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": track.start_time,
                                      "finishedAt": running_since, "containerID": container_id(pod, &c.name, 0)}})
            } else {
                json!({"waiting": {"reason": "PodInitializing"}})
            };
            json!({"name": c.name, "state": state, "lastState": {}, "ready": done, "restartCount": 0,
                   "image": image, "imageID": if done { image_id(&image) } else { String::new() }, "started": false})
        })
        .collect();
    let mut status = json!({
        "phase": phase,
        "conditions": conditions,
        "hostIP": track.host_ip,
        "hostIPs": [{"ip": track.host_ip}],
        "podIP": track.pod_ip,
        "podIPs": [{"ip": track.pod_ip}],
        "startTime": track.start_time,
        "containerStatuses": statuses,
    });
    if !init_statuses.is_empty() {
        status["initContainerStatuses"] = json!(init_statuses);
    }
    if matches!(stage, Stage::Evicted) {
        status["reason"] = json!("Evicted");
        status["message"] = json!("The node was low on resource: memory. ");
    }
    status
}

fn with_container_id(mut state: Value, id: &str) -> Value {
    if let Some(t) = state.get_mut("terminated") {
        t["containerID"] = json!(id);
    }
    state
}

fn backoff_left(track: &Track) -> Duration {
    track.backoff_until.map(|u| u.saturating_duration_since(Instant::now())).unwrap_or_default()
}
