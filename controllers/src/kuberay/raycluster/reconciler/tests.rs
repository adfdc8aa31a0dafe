//! Unit tests of the RayCluster reconciler's helpers.

use super::pods::*;
use super::*;
use k8s_openapi::api::core::v1::{ContainerState, ContainerStatus, PodSpec, PodStatus};
use serde_json::json;

fn pod(phase: &str, policy: &str, terminated: bool) -> Pod {
    let state = if terminated {
        json!({"terminated": {"exitCode": 1, "reason": "Error", "startedAt": "2026-11-24T06:59:29Z",
                                  "finishedAt": "2026-11-24T07:00:01Z", "containerID": "containerd://abc"}})
    } else {
        json!({"running": {"startedAt": "2026-11-24T06:59:29Z"}})
    };
    Pod {
        metadata: kube::api::ObjectMeta { name: Some("p".into()), ..Default::default() },
        spec: Some(PodSpec {
            containers: vec![serde_json::from_value(json!({"name": "ray-worker"})).unwrap()],
            restart_policy: Some(policy.into()),
            ..Default::default()
        }),
        status: Some(PodStatus {
            phase: Some(phase.into()),
            container_statuses: Some(vec![ContainerStatus {
                name: "ray-worker".into(),
                state: Some(serde_json::from_value::<ContainerState>(state).unwrap()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

#[test]
fn terminated_state_prints_like_go() {
    let p = pod("Failed", "Never", true);
    assert_eq!(
        go_terminated(ray_container_terminated(&p)),
        "&ContainerStateTerminated{ExitCode:1,Signal:0,Reason:Error,Message:,StartedAt:2026-11-24 06:59:29 +0000 UTC,FinishedAt:2026-11-24 07:00:01 +0000 UTC,ContainerID:containerd://abc,}"
    );
    assert_eq!(go_terminated(None), "nil");
}

fn should_delete_pod_default(p: &Pod, node_type: &str) -> Option<String> {
    should_delete_pod(p, node_type, &KubeRayConfig::default())
}

#[test]
fn terminal_pods_go_whatever_the_restart_policy() {
    assert!(should_delete_pod_default(&pod("Failed", "Always", true), "worker").is_some());
    assert!(should_delete_pod_default(&pod("Succeeded", "OnFailure", true), "worker").is_some());
    assert!(should_delete_pod_default(&pod("Running", "Never", true), "worker").is_some());
    assert!(should_delete_pod_default(&pod("Running", "OnFailure", true), "worker").is_none());
    assert!(should_delete_pod_default(&pod("Running", "Always", true), "worker").is_none());
    assert!(should_delete_pod_default(&pod("Running", "Never", false), "worker").is_none());
}
