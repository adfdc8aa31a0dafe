//! `dryRun=All` on every mutating verb: the full pipeline runs (errors included), the answer
//! looks like the real one, and nothing is stored, versioned or sent to watches. DELETE
//! preconditions.

use crate::common::{get, raw, store_fingerprint};
use fake_apiserver::ApiServer;
use futures::StreamExt;
use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, WatchEvent, WatchParams};
use serde_json::{Value, json};

async fn send(server: &ApiServer, method: Method, uri: &str, content_type: &str, body: Value) -> (StatusCode, Value) {
    let body = if body.is_null() { String::new() } else { body.to_string() };
    raw(server, method, uri, Some(content_type), body).await
}

const JSON: &str = "application/json";

async fn seed(server: &ApiServer) {
    for (uri, body) in [
        (
            "/api/v1/namespaces/default/configmaps",
            json!({"metadata": {"name": "cm", "labels": {"a": "b"}}, "data": {"k": "v"}}),
        ),
        ("/api/v1/namespaces/default/configmaps", json!({"metadata": {"name": "cm2", "labels": {"a": "b"}}})),
        (
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"metadata": {"name": "web"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "w"}},
                "template": {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
        ),
        (
            "/api/v1/namespaces/default/pods",
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
        ),
        ("/api/v1/namespaces", json!({"metadata": {"name": "ns"}})),
    ] {
        let (code, b) = send(server, Method::POST, uri, JSON, body).await;
        assert_eq!(code, StatusCode::CREATED, "{b}");
    }
}

#[tokio::test]
async fn every_mutating_verb_honours_dry_run() {
    let server = ApiServer::default();
    seed(&server).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let start_rv = server.resource_version();
    let mut watch = cms.watch(&WatchParams::default(), &start_rv.to_string()).await.unwrap().boxed();
    let before = store_fingerprint(&server).await;
    let (_, cm_before) = get(&server, "/api/v1/namespaces/default/configmaps/cm").await;

    let cm = "/api/v1/namespaces/default/configmaps/cm";
    let web = "/apis/apps/v1/namespaces/default/deployments/web";
    let cases: Vec<(&str, Method, String, &str, Value, StatusCode)> = vec![
        (
            "create",
            Method::POST,
            "/api/v1/namespaces/default/configmaps".into(),
            JSON,
            json!({"metadata": {"name": "new"}}),
            StatusCode::CREATED,
        ),
        (
            "update",
            Method::PUT,
            cm.into(),
            JSON,
            json!({"metadata": {"name": "cm"}, "data": {"k": "put"}}),
            StatusCode::OK,
        ),
        (
            "merge patch",
            Method::PATCH,
            cm.into(),
            "application/merge-patch+json",
            json!({"data": {"k": "merged"}}),
            StatusCode::OK,
        ),
        (
            "json patch",
            Method::PATCH,
            cm.into(),
            "application/json-patch+json",
            json!([{"op": "replace", "path": "/data/k", "value": "j"}]),
            StatusCode::OK,
        ),
        (
            "strategic merge patch",
            Method::PATCH,
            cm.into(),
            "application/strategic-merge-patch+json",
            json!({"data": {"k": "s"}}),
            StatusCode::OK,
        ),
        (
            "status update",
            Method::PUT,
            format!("{web}/status"),
            JSON,
            json!({"metadata": {"name": "web"}, "status": {"replicas": 7}}),
            StatusCode::OK,
        ),
        (
            "status patch",
            Method::PATCH,
            format!("{web}/status"),
            "application/merge-patch+json",
            json!({"status": {"replicas": 7}}),
            StatusCode::OK,
        ),
        (
            "scale patch",
            Method::PATCH,
            format!("{web}/scale"),
            "application/merge-patch+json",
            json!({"spec": {"replicas": 9}}),
            StatusCode::OK,
        ),
        (
            "scale update",
            Method::PUT,
            format!("{web}/scale"),
            JSON,
            json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"}, "spec": {"replicas": 9}}),
            StatusCode::OK,
        ),
        (
            "finalize",
            Method::PUT,
            "/api/v1/namespaces/ns/finalize".into(),
            JSON,
            json!({"metadata": {"name": "ns"}, "spec": {"finalizers": []}}),
            StatusCode::OK,
        ),
        (
            "binding",
            Method::POST,
            "/api/v1/namespaces/default/pods/p/binding".into(),
            JSON,
            json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}}),
            StatusCode::CREATED,
        ),
        ("delete", Method::DELETE, cm.into(), JSON, Value::Null, StatusCode::OK),
        (
            "delete namespace",
            Method::DELETE,
            "/api/v1/namespaces/ns".into(),
            JSON,
            json!({"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]}),
            StatusCode::OK,
        ),
        (
            "deletecollection",
            Method::DELETE,
            "/api/v1/namespaces/default/configmaps?labelSelector=a%3Db".into(),
            JSON,
            Value::Null,
            StatusCode::OK,
        ),
    ];
    for (what, method, uri, ct, body, want) in cases {
        let sep = if uri.contains('?') { '&' } else { '?' };
        let (code, answer) = send(&server, method, &format!("{uri}{sep}dryRun=All"), ct, body).await;
        assert_eq!(code, want, "{what}: {answer}");
        match what {
            "create" => {
                assert!(answer["metadata"]["uid"].is_string() && answer["metadata"]["creationTimestamp"].is_string())
            }
            "update" => assert_eq!(answer["data"]["k"], "put"),
            "merge patch" => assert_eq!(answer["data"]["k"], "merged"),
            "json patch" => assert_eq!(answer["data"]["k"], "j"),
            "strategic merge patch" => assert_eq!(answer["data"]["k"], "s"),
            "status update" | "status patch" => assert_eq!(answer["status"]["replicas"], 7),
            "scale patch" | "scale update" => assert_eq!(answer["spec"]["replicas"], 9),
            // No finalizers left: `finalizers` is omitempty in NamespaceSpec, so it is not written.
            "finalize" => assert_eq!(answer["spec"], json!({})),
            "delete" => assert_eq!(answer["status"], "Success"),
            "delete namespace" => assert_eq!(answer["status"]["phase"], "Terminating"),
            "deletecollection" => assert_eq!(answer["items"].as_array().map(Vec::len), Some(2)),
            _ => {}
        }
        assert_eq!(store_fingerprint(&server).await, before, "{what} changed the store");
    }
    assert_eq!(get(&server, "/api/v1/namespaces/default/configmaps/cm").await.1, cm_before);
    assert_eq!(get(&server, "/api/v1/namespaces/default/configmaps/new").await.0, StatusCode::NOT_FOUND);
    assert_eq!(get(&server, web).await.1["spec"]["replicas"], 1);
    assert_eq!(get(&server, "/api/v1/namespaces/ns").await.1["status"]["phase"], "Active");
    assert!(get(&server, "/api/v1/namespaces/default/pods/p").await.1["spec"]["nodeName"].is_null());

    // The watch saw none of it: its first event is the next real write.
    let (code, _) = send(
        &server,
        Method::POST,
        "/api/v1/namespaces/default/configmaps",
        JSON,
        json!({"metadata": {"name": "real"}}),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED);
    let first = tokio::time::timeout(std::time::Duration::from_secs(10), watch.next()).await.unwrap().unwrap().unwrap();
    match first {
        WatchEvent::Added(c) => assert_eq!(c.metadata.name.as_deref(), Some("real")),
        other => panic!("unexpected first event {other:?}"),
    }
}

#[tokio::test]
async fn dry_runs_still_fail_like_the_real_request() {
    let server = ApiServer::default();
    seed(&server).await;
    let cases = [
        (
            Method::POST,
            "/api/v1/namespaces/default/configmaps?dryRun=All",
            json!({"metadata": {"name": "Bad_Name"}}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Method::POST,
            "/api/v1/namespaces/default/configmaps?dryRun=All",
            json!({"metadata": {"name": "cm"}}),
            StatusCode::CONFLICT,
        ),
        (
            Method::POST,
            "/api/v1/namespaces/missing/configmaps?dryRun=All",
            json!({"metadata": {"name": "x"}}),
            StatusCode::NOT_FOUND,
        ),
        (
            Method::PUT,
            "/api/v1/namespaces/default/configmaps/cm?dryRun=All",
            json!({"metadata": {"name": "cm", "resourceVersion": "1"}}),
            StatusCode::CONFLICT,
        ),
        (Method::DELETE, "/api/v1/namespaces/default/configmaps/nope?dryRun=All", Value::Null, StatusCode::NOT_FOUND),
        (
            Method::POST,
            "/api/v1/namespaces/default/configmaps?dryRun=Some",
            json!({"metadata": {"name": "x"}}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
    ];
    for (method, uri, body, want) in cases {
        let (code, status) = send(&server, method, uri, JSON, body).await;
        assert_eq!(code, want, "{uri}: {status}");
    }
    // A terminating namespace refuses dry-run creates too.
    send(
        &server,
        Method::POST,
        "/api/v1/namespaces/default/configmaps",
        JSON,
        json!({"metadata": {"name": "hold", "finalizers": ["x.io/y"]}}),
    )
    .await;
    let (code, _) = send(&server, Method::DELETE, "/api/v1/namespaces/default", JSON, Value::Null).await;
    assert_eq!(code, StatusCode::OK);
    let (code, status) = send(
        &server,
        Method::POST,
        "/api/v1/namespaces/default/configmaps?dryRun=All",
        JSON,
        json!({"metadata": {"name": "x"}}),
    )
    .await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert_eq!(status["details"]["causes"][0]["reason"], "NamespaceTerminating");
}

#[tokio::test]
async fn delete_preconditions_conflict_and_change_nothing() {
    let server = ApiServer::default();
    seed(&server).await;
    let (_, cm) = get(&server, "/api/v1/namespaces/default/configmaps/cm").await;
    let uid = cm["metadata"]["uid"].as_str().unwrap().to_string();
    let rv = cm["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let before = store_fingerprint(&server).await;
    let uri = "/api/v1/namespaces/default/configmaps/cm";
    let (code, status) = send(&server, Method::DELETE, uri, JSON, json!({"preconditions": {"uid": "other-uid"}})).await;
    assert_eq!(code, StatusCode::CONFLICT);
    assert_eq!(status["reason"], "Conflict");
    assert_eq!(
        status["message"],
        format!(
            "Operation cannot be fulfilled on ConfigMap \"cm\": the UID in the precondition (other-uid) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
        )
    );
    let (code, status) =
        send(&server, Method::DELETE, uri, JSON, json!({"preconditions": {"resourceVersion": "1"}})).await;
    assert_eq!(code, StatusCode::CONFLICT);
    assert_eq!(
        status["message"],
        format!(
            "Operation cannot be fulfilled on ConfigMap \"cm\": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ({rv}). The object might have been modified"
        )
    );
    assert_eq!(store_fingerprint(&server).await, before);
    let (code, _) =
        send(&server, Method::DELETE, uri, JSON, json!({"preconditions": {"uid": uid, "resourceVersion": rv}})).await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(get(&server, uri).await.0, StatusCode::NOT_FOUND);
}
