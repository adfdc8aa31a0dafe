//! The `pods/{name}/binding` subresource (kube-apiserver's BindingREST) and the
//! `PodScheduled=False/SchedulingGated` condition a gated pod is created with.

use crate::common::{get, post, raw};
use fake_apiserver::ApiServer;
use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn pod(name: &str, gates: &[&str]) -> Pod {
    let gates: Vec<Value> = gates.iter().map(|g| json!({"name": g})).collect();
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"schedulingGates": gates, "containers": [{"name": "c", "image": "busybox"}]}
    }))
    .expect("pod")
}

fn binding(pod: &str, node: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod}, "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
}

fn condition(p: &Value, type_: &str) -> Value {
    p["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn binding_sets_node_name_and_pod_scheduled_and_answers_201_success() {
    let server = ApiServer::default();
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    pods.create(&PostParams::default(), &pod("p", &[])).await.expect("create");
    let mut b = binding("p", "node-1");
    b["metadata"]["annotations"] = json!({"scheduler.example/why": "fits"});
    let (code, body) = post(&server, "/api/v1/namespaces/default/pods/p/binding", &b).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    assert_eq!(body, json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}));
    let (_, p) = get(&server, "/api/v1/namespaces/default/pods/p").await;
    assert_eq!(p["spec"]["nodeName"], "node-1");
    assert_eq!(p["metadata"]["annotations"]["scheduler.example/why"], "fits");
    let cond = condition(&p, "PodScheduled");
    assert_eq!(cond["status"], "True");
    assert!(cond["lastTransitionTime"].is_string(), "{cond}");
    assert!(cond.get("reason").is_none(), "{cond}");
    let last = server.timeline().pop().expect("timeline entry");
    assert_eq!((last.verb.as_str(), last.subresource.map(|s| s.as_str())), ("create", Some("binding")));
}

#[tokio::test]
async fn binding_through_kube_create_subresource() {
    let server = ApiServer::default();
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    pods.create(&PostParams::default(), &pod("p", &[])).await.expect("create");
    let status: Value = pods
        .create_subresource("binding", "p", &PostParams::default(), &binding("p", "n"))
        .await
        .expect("bind through kube");
    assert_eq!(status["status"], "Success");
    assert_eq!(pods.get("p").await.expect("get").spec.and_then(|s| s.node_name).as_deref(), Some("n"));
}

#[tokio::test]
async fn binding_a_bound_pod_is_a_conflict_and_a_missing_pod_not_found() {
    let server = ApiServer::default();
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    pods.create(&PostParams::default(), &pod("p", &[])).await.expect("create");
    let uri = "/api/v1/namespaces/default/pods/p/binding";
    assert_eq!(post(&server, uri, &binding("p", "a")).await.0, StatusCode::CREATED);
    let (code, body) = post(&server, uri, &binding("p", "b")).await;
    assert_eq!(code, StatusCode::CONFLICT);
    assert_eq!(body["reason"], "Conflict");
    assert_eq!(
        body["message"],
        "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"a\""
    );
    assert_eq!(body["details"]["kind"], "pods/binding");
    let (_, p) = get(&server, "/api/v1/namespaces/default/pods/p").await;
    assert_eq!(p["spec"]["nodeName"], "a", "the second binding changed nothing");

    let (code, body) = post(&server, "/api/v1/namespaces/default/pods/gone/binding", &binding("gone", "a")).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    assert_eq!(body["message"], "pods \"gone\" not found");
}

#[tokio::test]
async fn binding_validation_and_preconditions() {
    let server = ApiServer::default();
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let created = pods.create(&PostParams::default(), &pod("p", &[])).await.expect("create");
    let uri = "/api/v1/namespaces/default/pods/p/binding";
    let (code, body) = post(&server, uri, &binding("other", "a")).await;
    assert_eq!(
        (code, body["message"].as_str()),
        (StatusCode::BAD_REQUEST, Some("name in URL does not match name in Binding object"))
    );
    let mut no_node = binding("p", "");
    no_node["target"]["kind"] = json!("Pod");
    let (code, body) = post(&server, uri, &no_node).await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        body["message"],
        "[target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\", target.name: Required value]"
    );
    let mut wrong_uid = binding("p", "a");
    wrong_uid["metadata"]["uid"] = json!("not-the-uid");
    let (code, body) = post(&server, uri, &wrong_uid).await;
    assert_eq!(code, StatusCode::CONFLICT);
    assert!(
        body["message"].as_str().is_some_and(|m| m.contains("Precondition failed: UID in precondition: not-the-uid"))
    );
    let mut right_uid = binding("p", "a");
    right_uid["metadata"]["uid"] = json!(created.metadata.uid);
    assert_eq!(post(&server, uri, &right_uid).await.0, StatusCode::CREATED);
    let (code, _) = raw(&server, Method::GET, uri, None, "").await;
    assert_eq!(code, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn binding_a_deleting_pod_is_refused() {
    let server = ApiServer::default();
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let mut p = pod("p", &[]);
    p.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    pods.create(&PostParams::default(), &p).await.expect("create");
    pods.delete("p", &DeleteParams::default()).await.expect("delete");
    let (code, body) = post(&server, "/api/v1/namespaces/default/pods/p/binding", &binding("p", "a")).await;
    assert_eq!(code, StatusCode::CONFLICT);
    assert_eq!(
        body["message"],
        "Operation cannot be fulfilled on pods/binding \"p\": pod p is being deleted, cannot be assigned to a host"
    );
}

#[tokio::test]
async fn gated_pod_is_created_scheduling_gated_and_cannot_be_bound_until_ungated() {
    let server = ApiServer::default();
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    pods.create(&PostParams::default(), &pod("g", &["example.com/wait"])).await.expect("create");
    pods.create(&PostParams::default(), &pod("free", &[])).await.expect("create");
    let (_, g) = get(&server, "/api/v1/namespaces/default/pods/g").await;
    let cond = condition(&g, "PodScheduled");
    assert_eq!(cond["status"], "False");
    assert_eq!(cond["reason"], "SchedulingGated");
    assert_eq!(cond["message"], "Scheduling is blocked due to non-empty scheduling gates");
    assert!(cond["lastTransitionTime"].is_string(), "{cond}");
    let (_, free) = get(&server, "/api/v1/namespaces/default/pods/free").await;
    assert!(free["status"]["conditions"].is_null(), "an ungated pod starts with no conditions: {free}");

    let uri = "/api/v1/namespaces/default/pods/g/binding";
    let (code, body) = post(&server, uri, &binding("g", "a")).await;
    assert_eq!(code, StatusCode::CONFLICT);
    assert!(body["message"].as_str().is_some_and(|m| m.ends_with("pod g has non-empty .spec.schedulingGates")));

    // Removing the gates leaves the condition as it is: the scheduler replaces it.
    pods.patch("g", &PatchParams::default(), &Patch::Merge(json!({"spec": {"schedulingGates": null}})))
        .await
        .expect("ungate");
    let (_, g) = get(&server, "/api/v1/namespaces/default/pods/g").await;
    assert_eq!(condition(&g, "PodScheduled")["reason"], "SchedulingGated");
    assert_eq!(post(&server, uri, &binding("g", "a")).await.0, StatusCode::CREATED);
    let (_, g) = get(&server, "/api/v1/namespaces/default/pods/g").await;
    let cond = condition(&g, "PodScheduled");
    assert_eq!((cond["status"].as_str(), cond.get("reason")), (Some("True"), None));
}

#[tokio::test]
async fn discovery_lists_pods_binding() {
    let server = ApiServer::default();
    let (_, list) = get(&server, "/api/v1").await;
    let binding = list["resources"]
        .as_array()
        .and_then(|rs| rs.iter().find(|r| r["name"] == "pods/binding"))
        .cloned()
        .expect("pods/binding listed");
    assert_eq!(binding["kind"], "Binding");
    assert_eq!(binding["verbs"], json!(["create"]));
}
