//! The simulated kubelet (with the scheduler) against the in-process fake API server, in
//! virtual time: phases, conditions, container statuses, knobs and graceful deletion.

mod sim_common;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, PostParams};
use serde_json::json;
use sim_common::{bound, condition, container, phase, pod, ready, seconds_between, start, wait_pod};
use std::time::Duration;

fn annotated(name: &str, annotations: serde_json::Value, extra_spec: serde_json::Value) -> Pod {
    let mut p = pod(name, extra_spec);
    p.metadata.annotations = Some(serde_json::from_value(annotations).unwrap());
    p
}

fn labelled(name: &str, key: &str, value: &str) -> Pod {
    let mut p = pod(name, json!({}));
    p.metadata.labels = Some([(key.to_string(), value.to_string())].into());
    p
}

fn ts(v: &serde_json::Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

#[tokio::test(start_paused = true)]
async fn pending_running_ready_with_statuses_in_virtual_time() {
    let sim = start("default", true).await;
    let t0 = tokio::time::Instant::now();
    sim.pods.create(&PostParams::default(), &pod("p", json!({}))).await.unwrap();
    let pending =
        wait_pod(&sim.pods, "p", "a kubelet status", |p| p.status.as_ref().and_then(|s| s.pod_ip.clone()).is_some())
            .await;
    assert_eq!(phase(&pending), "Pending");
    let c = container(&pending);
    assert_eq!(c["state"]["waiting"]["reason"], "ContainerCreating");
    assert_eq!(
        (c["ready"].as_bool(), c["started"].as_bool(), c["restartCount"].as_i64()),
        (Some(false), Some(false), Some(0))
    );
    assert_eq!(condition(&pending, "PodReadyToStartContainers"), "True");
    assert_eq!(condition(&pending, "Initialized"), "True");
    assert_eq!(condition(&pending, "ContainersReady"), "False");
    assert_eq!(condition(&pending, "PodScheduled"), "True");
    let status = pending.status.clone().unwrap();
    assert_eq!(status.pod_ip.as_deref(), Some("10.244.0.2"), "first pod IP of cpu-node-1's podCIDR");
    assert_eq!(status.host_ip.as_deref(), Some("172.18.0.2"));

    let ready_pod = wait_pod(&sim.pods, "p", "Ready", ready).await;
    assert!(t0.elapsed() <= Duration::from_secs(3), "ready within start + ready delays (virtual time)");
    assert_eq!(phase(&ready_pod), "Running");
    let v = serde_json::to_value(&ready_pod).unwrap();
    let start_time = ts(&v["status"]["startTime"]);
    let c = container(&ready_pod);
    assert_eq!(seconds_between(&start_time, &ts(&c["state"]["running"]["startedAt"])), 1, "start delay 1 s");
    let ready_cond =
        v["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Ready").unwrap().clone();
    assert_eq!(seconds_between(&start_time, &ts(&ready_cond["lastTransitionTime"])), 2, "then ready delay 1 s");
    assert_eq!((c["ready"].as_bool(), c["started"].as_bool()), (Some(true), Some(true)));
    assert!(c["containerID"].as_str().unwrap().starts_with("containerd://"));
    assert!(c["imageID"].as_str().unwrap().starts_with("rayproject/ray@sha256:"));
    assert_eq!(condition(&ready_pod, "ContainersReady"), "True");
    let types: Vec<&str> =
        v["status"]["conditions"].as_array().unwrap().iter().map(|c| c["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]);

    sim.pods.create(&PostParams::default(), &pod("q", json!({}))).await.unwrap();
    let q = wait_pod(&sim.pods, "q", "an IP", |p| p.status.as_ref().and_then(|s| s.pod_ip.clone()).is_some()).await;
    assert_eq!(q.status.unwrap().pod_ip.as_deref(), Some("10.244.1.2"), "least allocated node next: cpu-node-2");
}

#[tokio::test(start_paused = true)]
async fn start_delay_annotation_and_knob_slow_the_start() {
    let sim = start("default", true).await;
    sim.pods
        .create(&PostParams::default(), &annotated("slow", json!({"sim.kproof.dev/start-delay": "30s"}), json!({})))
        .await
        .unwrap();
    let p = wait_pod(&sim.pods, "slow", "Running", |p| phase(p) == "Running").await;
    let v = serde_json::to_value(&p).unwrap();
    assert_eq!(
        seconds_between(&ts(&v["status"]["startTime"]), &ts(&container(&p)["state"]["running"]["startedAt"])),
        30
    );

    sim.kubelet.as_ref().unwrap().turn("start-delay", &json!("1m")).unwrap();
    sim.kubelet.as_ref().unwrap().turn("ready-delay", &json!("10s")).unwrap();
    sim.pods.create(&PostParams::default(), &pod("slower", json!({}))).await.unwrap();
    let p = wait_pod(&sim.pods, "slower", "Ready", ready).await;
    let v = serde_json::to_value(&p).unwrap();
    let start_time = ts(&v["status"]["startTime"]);
    assert_eq!(seconds_between(&start_time, &ts(&container(&p)["state"]["running"]["startedAt"])), 60);
    let ready_cond =
        v["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Ready").unwrap().clone();
    assert_eq!(seconds_between(&start_time, &ts(&ready_cond["lastTransitionTime"])), 70);
}

#[tokio::test(start_paused = true)]
async fn fail_with_restart_policy_never_ends_failed() {
    let sim = start("default", true).await;
    let p = annotated("f", json!({"sim.kproof.dev/fail": "true"}), json!({"restartPolicy": "Never"}));
    sim.pods.create(&PostParams::default(), &p).await.unwrap();
    let p = wait_pod(&sim.pods, "f", "Failed", |p| phase(p) == "Failed").await;
    let c = container(&p);
    assert_eq!(c["state"]["terminated"]["exitCode"], 1);
    assert_eq!(c["state"]["terminated"]["reason"], "Error");
    assert_eq!(c["ready"], false);
    assert_eq!(condition(&p, "Ready"), "False");
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(phase(&sim.pods.get("f").await.unwrap()), "Failed", "a failed pod stays failed (KubeRay deletes it)");
}

#[tokio::test(start_paused = true)]
async fn fail_knob_with_selector_crash_loops_running_pods_and_turns_off() {
    let sim = start("default", true).await;
    let kubelet = sim.kubelet.clone().unwrap();
    sim.pods.create(&PostParams::default(), &labelled("w", "ray.io/node-type", "worker")).await.unwrap();
    sim.pods.create(&PostParams::default(), &labelled("h", "ray.io/node-type", "head")).await.unwrap();
    wait_pod(&sim.pods, "w", "Ready", ready).await;
    wait_pod(&sim.pods, "h", "Ready", ready).await;
    kubelet.turn("fail", &json!("ray.io/node-type=worker")).unwrap();
    let p = wait_pod(&sim.pods, "w", "CrashLoopBackOff", |p| {
        container(p)["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    })
    .await;
    assert_eq!(phase(&p), "Running");
    assert_eq!(condition(&p, "Ready"), "False");
    let c = container(&p);
    assert_eq!(c["lastState"]["terminated"]["exitCode"], 1);
    assert!(
        c["state"]["waiting"]["message"]
            .as_str()
            .unwrap()
            .starts_with("back-off 10s restarting failed container=main pod=w_default(")
    );
    let p = wait_pod(&sim.pods, "w", "restartCount 2", |p| container(p)["restartCount"] == 2).await;
    assert_eq!(container(&p)["state"]["waiting"]["reason"], "CrashLoopBackOff");
    assert!(ready(&sim.pods.get("h").await.unwrap()), "the head does not match the selector");

    kubelet.turn("fail", &json!(false)).unwrap();
    let p = wait_pod(&sim.pods, "w", "Ready again", ready).await;
    assert_eq!(container(&p)["restartCount"], 3);
    assert!(container(&p)["state"]["running"].is_object());
}

#[tokio::test(start_paused = true)]
async fn never_ready_knob_and_annotation() {
    let sim = start("default", true).await;
    let kubelet = sim.kubelet.clone().unwrap();
    sim.pods
        .create(&PostParams::default(), &annotated("n", json!({"sim.kproof.dev/never-ready": "true"}), json!({})))
        .await
        .unwrap();
    sim.pods.create(&PostParams::default(), &labelled("r", "app", "ray")).await.unwrap();
    wait_pod(&sim.pods, "r", "Ready", ready).await;
    let n = wait_pod(&sim.pods, "n", "Running", |p| phase(p) == "Running").await;
    tokio::time::sleep(Duration::from_secs(120)).await;
    let n2 = sim.pods.get("n").await.unwrap();
    assert!(!ready(&n2) && !ready(&n), "never-ready pod stays unready");
    assert_eq!(container(&n2)["started"], true);

    kubelet.turn("never-ready", &json!(true)).unwrap();
    wait_pod(&sim.pods, "r", "unready", |p| !ready(p)).await;
    kubelet.turn("never-ready", &json!(null)).unwrap();
    wait_pod(&sim.pods, "r", "ready again", ready).await;
}

#[tokio::test(start_paused = true)]
async fn evict_knob_and_annotation() {
    let sim = start("default", true).await;
    sim.pods
        .create(&PostParams::default(), &annotated("e", json!({"sim.kproof.dev/evict": "true"}), json!({})))
        .await
        .unwrap();
    let p = wait_pod(&sim.pods, "e", "Failed", |p| phase(p) == "Failed").await;
    let status = p.status.clone().unwrap();
    assert_eq!(status.reason.as_deref(), Some("Evicted"));
    assert_eq!(condition(&p, "DisruptionTarget"), "True");
    assert_eq!(container(&p)["state"]["terminated"]["exitCode"], 137);

    sim.pods.create(&PostParams::default(), &labelled("victim", "app", "x")).await.unwrap();
    wait_pod(&sim.pods, "victim", "Ready", ready).await;
    sim.kubelet.as_ref().unwrap().turn("evict", &json!("app=x")).unwrap();
    let p = wait_pod(&sim.pods, "victim", "Evicted", |p| phase(p) == "Failed").await;
    assert_eq!(p.status.unwrap().reason.as_deref(), Some("Evicted"));
}

#[tokio::test(start_paused = true)]
async fn graceful_deletion_stops_containers_then_deletes_the_pod() {
    let sim = start("default", true).await;
    sim.kubelet.as_ref().unwrap().turn("termination-delay", &json!("5s")).unwrap();
    sim.pods.create(&PostParams::default(), &pod("d", json!({}))).await.unwrap();
    let running = wait_pod(&sim.pods, "d", "Ready", ready).await;
    let uid = running.metadata.uid.clone().unwrap();
    let t0 = tokio::time::Instant::now();
    sim.pods.delete("d", &DeleteParams::default()).await.unwrap();
    let terminating = wait_pod(&sim.pods, "d", "unready while terminating", |p| !ready(p)).await;
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(terminating.metadata.deletion_grace_period_seconds, Some(30));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        match sim.pods.get_opt("d").await.unwrap() {
            None => break,
            Some(_) if tokio::time::Instant::now() > deadline => panic!("the pod was never deleted"),
            Some(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_secs(5) && took < Duration::from_secs(6),
        "min(grace 30 s, termination 5 s): {took:?}"
    );
    let writes: Vec<_> = sim.server.timeline().into_iter().filter(|e| e.uid == uid).collect();
    let last = writes.last().unwrap();
    assert_eq!((last.verb.as_str(), format!("{:?}", last.change)), ("delete", "Deleted".to_string()));
    let before = &writes[writes.len() - 2];
    assert_eq!(before.subresource.map(|s| s.as_str()), Some("status"));
    let o = before.object();
    assert_eq!(o["status"]["phase"], "Succeeded");
    assert_eq!(o["status"]["containerStatuses"][0]["state"]["terminated"]["reason"], "Completed");

    // A pod still Pending is simply deleted after the delay; a short grace period wins.
    sim.pods
        .create(&PostParams::default(), &annotated("slow", json!({"sim.kproof.dev/start-delay": "1h"}), json!({})))
        .await
        .unwrap();
    wait_pod(&sim.pods, "slow", "bound", bound).await;
    sim.pods.delete("slow", &DeleteParams { grace_period_seconds: Some(2), ..Default::default() }).await.unwrap();
    let t1 = tokio::time::Instant::now();
    while sim.pods.get_opt("slow").await.unwrap().is_some() {
        assert!(t1.elapsed() < Duration::from_secs(60), "never deleted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(t1.elapsed() < Duration::from_secs(3), "grace 2 s < termination delay 5 s");
}

#[tokio::test(start_paused = true)]
async fn complete_ends_never_and_onfailure_pods_succeeded_and_leaves_always_pods_running() {
    let sim = start("default", true).await;
    let kubelet = sim.kubelet.clone().unwrap();
    for (name, policy) in [("never", "Never"), ("onfailure", "OnFailure"), ("always", "Always")] {
        let p = labelled(name, "job", "train");
        let mut v = serde_json::to_value(&p).unwrap();
        v["spec"]["restartPolicy"] = json!(policy);
        sim.pods.create(&PostParams::default(), &serde_json::from_value(v).unwrap()).await.unwrap();
        wait_pod(&sim.pods, name, "Ready", ready).await;
    }
    kubelet.turn("complete", &json!("job=train")).unwrap();
    for name in ["never", "onfailure"] {
        let p = wait_pod(&sim.pods, name, "Succeeded", |p| phase(p) == "Succeeded").await;
        let c = container(&p);
        assert_eq!(c["state"]["terminated"]["exitCode"], 0);
        assert_eq!(c["state"]["terminated"]["reason"], "Completed");
    }
    tokio::time::sleep(Duration::from_secs(30)).await;
    let always = sim.pods.get("always").await.unwrap();
    assert_eq!(phase(&always), "Running", "a pod that restarts always never completes");
    assert_eq!(container(&always)["restartCount"], 0);
    // The annotation does the same for one pod.
    let p = annotated("one", json!({"sim.kproof.dev/complete": "true"}), json!({"restartPolicy": "Never"}));
    sim.pods.create(&PostParams::default(), &p).await.unwrap();
    wait_pod(&sim.pods, "one", "Succeeded", |p| phase(p) == "Succeeded").await;
}
