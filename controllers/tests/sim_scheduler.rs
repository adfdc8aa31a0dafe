//! The simulated scheduler against the in-process fake API server, in virtual time.

mod sim_common;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use sim_common::{bound, node_of, pod, requesting, scheduled_condition, start, wait_pod};
use std::time::Duration;

fn unschedulable(p: &k8s_openapi::api::core::v1::Pod) -> bool {
    scheduled_condition(p).is_some_and(|c| c.1 == "Unschedulable")
}

#[tokio::test(start_paused = true)]
async fn pods_are_bound_to_fitting_nodes_least_allocated_first() {
    let sim = start("default", false).await;
    for i in 1..=3 {
        let p = requesting(&format!("cpu-{i}"), json!({"cpu": "1"}), json!({}));
        sim.pods.create(&PostParams::default(), &p).await.unwrap();
    }
    let gpu = requesting(
        "gpu",
        json!({"cpu": "1", "nvidia.com/gpu": "2"}),
        json!({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}),
    );
    sim.pods.create(&PostParams::default(), &gpu).await.unwrap();
    let mut nodes = Vec::new();
    for i in 1..=3 {
        let p = wait_pod(&sim.pods, &format!("cpu-{i}"), "binding", bound).await;
        nodes.push(node_of(&p).unwrap());
        let (status, reason, _) = scheduled_condition(&p).unwrap();
        assert_eq!((status.as_str(), reason.as_str()), ("True", ""));
    }
    nodes.sort();
    assert_eq!(nodes, ["cpu-node-1", "cpu-node-2", "cpu-node-3"], "spread over the least allocated nodes");
    let g = wait_pod(&sim.pods, "gpu", "binding", bound).await;
    assert_eq!(node_of(&g).as_deref(), Some("gpu-node-1"));
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::default_namespaced(sim.client.clone());
    let scheduled: Vec<String> = events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("Scheduled"))
        .filter_map(|e| e.message)
        .collect();
    assert!(scheduled.contains(&"Successfully assigned default/gpu to gpu-node-1".to_string()), "{scheduled:?}");
}

#[tokio::test(start_paused = true)]
async fn gated_pod_waits_until_its_gates_are_removed() {
    let sim = start("default", false).await;
    let gated = pod("gated", json!({"schedulingGates": [{"name": "ray.io/wait"}]}));
    sim.pods.create(&PostParams::default(), &gated).await.unwrap();
    sim.pods.create(&PostParams::default(), &pod("free", json!({}))).await.unwrap();
    wait_pod(&sim.pods, "free", "binding", bound).await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    let p = sim.pods.get("gated").await.unwrap();
    assert_eq!(node_of(&p), None);
    assert_eq!(scheduled_condition(&p).unwrap().1, "SchedulingGated");
    let ungate = Patch::Merge(json!({"spec": {"schedulingGates": null}}));
    sim.pods.patch("gated", &PatchParams::default(), &ungate).await.unwrap();
    let p = wait_pod(&sim.pods, "gated", "binding after ungating", bound).await;
    assert_eq!(scheduled_condition(&p).unwrap().0, "True");
}

#[tokio::test(start_paused = true)]
async fn gpu_pod_without_toleration_is_unschedulable_with_kube_schedulers_message() {
    let sim = start("default", false).await;
    let p = requesting("gpu", json!({"nvidia.com/gpu": "1"}), json!({}));
    sim.pods.create(&PostParams::default(), &p).await.unwrap();
    let p = wait_pod(&sim.pods, "gpu", "Unschedulable", unschedulable).await;
    assert_eq!(node_of(&p), None);
    let (status, _, message) = scheduled_condition(&p).unwrap();
    assert_eq!(status, "False");
    assert_eq!(
        message,
        "0/5 nodes are available: 2 node(s) had untolerated taint {nvidia.com/gpu: present}, 3 Insufficient nvidia.com/gpu. \
         preemption: 0/5 nodes are available: 2 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod.."
    );
    assert_eq!(p.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Pending"));
    tokio::time::sleep(Duration::from_secs(35)).await;
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::default_namespaced(sim.client.clone());
    let failed: Vec<_> = events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("FailedScheduling"))
        .collect();
    assert_eq!(failed.len(), 1, "one event, however often the pod is retried");
    assert_eq!(failed[0].type_.as_deref(), Some("Warning"));
    assert_eq!(failed[0].message.as_deref(), Some(message.as_str()));
}

#[tokio::test(start_paused = true)]
async fn capacity_runs_out_and_a_freed_slot_is_taken() {
    let sim = start("tiny", false).await;
    for name in ["a", "b", "c"] {
        let p = requesting(name, json!({"cpu": "400m", "memory": "256Mi"}), json!({}));
        sim.pods.create(&PostParams::default(), &p).await.unwrap();
    }
    wait_pod(&sim.pods, "a", "binding", bound).await;
    wait_pod(&sim.pods, "b", "binding", bound).await;
    let c = wait_pod(&sim.pods, "c", "Unschedulable", unschedulable).await;
    assert_eq!(
        scheduled_condition(&c).unwrap().2,
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.."
    );
    sim.pods.delete("a", &DeleteParams { grace_period_seconds: Some(0), ..Default::default() }).await.unwrap();
    let c = wait_pod(&sim.pods, "c", "binding once a is gone", bound).await;
    assert_eq!(node_of(&c).as_deref(), Some("tiny-node-1"));
}

#[tokio::test(start_paused = true)]
async fn too_many_pods_on_a_node() {
    let sim = start("tiny", false).await;
    for i in 0..5 {
        sim.pods.create(&PostParams::default(), &pod(&format!("p{i}"), json!({}))).await.unwrap();
    }
    let last = wait_pod(&sim.pods, "p4", "Unschedulable", unschedulable).await;
    assert!(scheduled_condition(&last).unwrap().2.starts_with("0/1 nodes are available: 1 Too many pods."));
    for i in 0..4 {
        wait_pod(&sim.pods, &format!("p{i}"), "binding", bound).await;
    }
}

#[tokio::test(start_paused = true)]
async fn node_selector_affinity_unschedulable_and_not_ready_nodes() {
    let sim = start("default", false).await;
    let nodes: Api<Node> = Api::all(sim.client.clone());
    // cpu-node-1 cordoned, cpu-node-2 not Ready: only cpu-node-3 takes plain pods.
    let cordon = Patch::Merge(json!({"spec": {"unschedulable": true}}));
    nodes.patch("cpu-node-1", &PatchParams::default(), &cordon).await.unwrap();
    let mut n2 = nodes.get_status("cpu-node-2").await.unwrap();
    for c in n2.status.as_mut().unwrap().conditions.as_mut().unwrap() {
        if c.type_ == "Ready" {
            c.status = "False".into();
        }
    }
    nodes.replace_status("cpu-node-2", &PostParams::default(), &n2).await.unwrap();
    sim.pods.create(&PostParams::default(), &pod("plain", json!({}))).await.unwrap();
    let p = wait_pod(&sim.pods, "plain", "binding", bound).await;
    assert_eq!(node_of(&p).as_deref(), Some("cpu-node-3"));

    let affinity = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "node.kproof.dev/pool", "operator": "In", "values": ["gpu"]},
                              {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["gpu-node-1"]},
                              {"key": "nvidia.com/gpu.product", "operator": "Exists"},
                              {"key": "legacy", "operator": "DoesNotExist"}]}]}}},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]});
    sim.pods.create(&PostParams::default(), &pod("picky", affinity)).await.unwrap();
    let p = wait_pod(&sim.pods, "picky", "binding", bound).await;
    assert_eq!(node_of(&p).as_deref(), Some("gpu-node-2"));

    let nowhere = pod("nowhere", json!({"nodeSelector": {"node.kproof.dev/pool": "tpu"}}));
    sim.pods.create(&PostParams::default(), &nowhere).await.unwrap();
    let p = wait_pod(&sim.pods, "nowhere", "Unschedulable", unschedulable).await;
    assert_eq!(
        scheduled_condition(&p).unwrap().2,
        "0/5 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, \
         1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 1 node(s) were unschedulable, \
         2 node(s) had untolerated taint {nvidia.com/gpu: present}. \
         preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.."
    );
}

#[tokio::test(start_paused = true)]
async fn pods_for_another_scheduler_are_left_alone() {
    let sim = start("default", false).await;
    sim.pods.create(&PostParams::default(), &pod("other", json!({"schedulerName": "volcano"}))).await.unwrap();
    sim.pods.create(&PostParams::default(), &pod("mine", json!({}))).await.unwrap();
    wait_pod(&sim.pods, "mine", "binding", bound).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    let p = sim.pods.get("other").await.unwrap();
    assert_eq!((node_of(&p), scheduled_condition(&p)), (None, None));
}
