//! Table and PartialObjectMetadata answers for get, list and watch: negotiation, includeObject,
//! built-in printer columns and CRD additionalPrinterColumns.

use crate::common::{post, raw_full};
use axum::body::Body;
use fake_apiserver::ApiServer;
use futures::StreamExt;
use http::{Method, Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

const KUBECTL_ACCEPT: &str =
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

async fn table(server: &ApiServer, uri: &str, accept: &str) -> (StatusCode, String, Value) {
    let (code, headers, body) = raw_full(server, Method::GET, uri, &[("accept", Some(accept))], "").await;
    let ct = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    (code, ct, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

fn column_names(t: &Value) -> Vec<(String, i64)> {
    t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_string(), c["priority"].as_i64().unwrap()))
        .collect()
}

#[tokio::test]
async fn pods_and_deployments_get_upstream_columns() {
    let server = ApiServer::default();
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"},
        "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}], "nodeName": "n1",
                 "readinessGates": [{"conditionType": "example.com/gate"}]},
    });
    assert_eq!(post(&server, "/api/v1/namespaces/default/pods", &pod).await.0, StatusCode::CREATED);
    let status = json!({"status": {"phase": "Running", "podIP": "10.0.0.7",
        "conditions": [{"type": "Ready", "status": "True"}, {"type": "example.com/gate", "status": "True"}],
        "containerStatuses": [
            {"name": "a", "ready": true, "restartCount": 2, "image": "x", "imageID": "", "state": {"running": {}}},
            {"name": "b", "ready": false, "restartCount": 1, "image": "y", "imageID": "", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
    let (code, _, _) = raw_full(
        &server,
        Method::PATCH,
        "/api/v1/namespaces/default/pods/p1/status",
        &[("content-type", Some("application/merge-patch+json"))],
        status.to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    let (code, ct, t) = table(&server, "/api/v1/namespaces/default/pods?limit=500", KUBECTL_ACCEPT).await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(ct, "application/json;as=Table;v=v1;g=meta.k8s.io");
    assert_eq!((t["kind"].as_str(), t["apiVersion"].as_str()), (Some("Table"), Some("meta.k8s.io/v1")));
    assert!(t["metadata"]["resourceVersion"].is_string());
    let cols = column_names(&t);
    let want = [
        ("Name", 0),
        ("Ready", 0),
        ("Status", 0),
        ("Restarts", 0),
        ("Age", 0),
        ("IP", 1),
        ("Node", 1),
        ("Nominated Node", 1),
        ("Readiness Gates", 1),
    ];
    assert_eq!(cols, want.iter().map(|(n, p)| (n.to_string(), *p)).collect::<Vec<_>>());
    let cells = &t["rows"][0]["cells"];
    assert_eq!(cells[0], "p1");
    assert_eq!(cells[1], "1/2");
    assert_eq!(cells[2], "CrashLoopBackOff");
    assert_eq!(cells[3], "3");
    assert_eq!(cells[5], "10.0.0.7");
    assert_eq!(cells[6], "n1");
    assert_eq!(cells[7], "<none>");
    assert_eq!(cells[8], "1/1");
    // Default includeObject=Metadata: PartialObjectMetadata.
    let obj = &t["rows"][0]["object"];
    assert_eq!(obj["kind"], "PartialObjectMetadata");
    assert_eq!(obj["metadata"]["name"], "p1");
    assert!(obj.get("spec").is_none());

    let dep = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    assert_eq!(post(&server, "/apis/apps/v1/namespaces/default/deployments", &dep).await.0, StatusCode::CREATED);
    let (_, _, t) = table(&server, "/apis/apps/v1/namespaces/default/deployments/web", KUBECTL_ACCEPT).await;
    let names: Vec<String> = column_names(&t).into_iter().map(|c| c.0).collect();
    assert_eq!(names, ["Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"]);
    let cells = &t["rows"][0]["cells"];
    assert_eq!(
        (&cells[1], &cells[2], &cells[5], &cells[6], &cells[7]),
        (&json!("0/3"), &json!(0), &json!("c"), &json!("nginx"), &json!("app=web"))
    );
}

#[tokio::test]
async fn include_object_v1beta1_metadata_lists_and_406() {
    let server = ApiServer::default();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}, "data": {"a": "1", "b": "2"}});
    assert_eq!(post(&server, "/api/v1/namespaces/default/configmaps", &cm).await.0, StatusCode::CREATED);
    let beta = "application/json;as=Table;v=v1beta1;g=meta.k8s.io";
    let (_, ct, t) = table(&server, "/api/v1/namespaces/default/configmaps?includeObject=Object", beta).await;
    assert_eq!(ct, "application/json;as=Table;v=v1beta1;g=meta.k8s.io");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(column_names(&t).into_iter().map(|c| c.0).collect::<Vec<_>>(), ["Name", "Data", "Age"]);
    assert_eq!(t["rows"][0]["cells"][1], 2);
    assert_eq!(t["rows"][0]["object"]["data"]["a"], "1");
    let (_, _, t) = table(&server, "/api/v1/namespaces/default/configmaps?includeObject=None", KUBECTL_ACCEPT).await;
    assert!(t["rows"][0].get("object").is_none());
    let (code, _, _) =
        table(&server, "/api/v1/namespaces/default/configmaps?includeObject=Bogus", KUBECTL_ACCEPT).await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    // Namespaces: Status and Age.
    let (_, _, t) = table(&server, "/api/v1/namespaces", KUBECTL_ACCEPT).await;
    assert_eq!(column_names(&t).into_iter().map(|c| c.0).collect::<Vec<_>>(), ["Name", "Status", "Age"]);
    assert!(t["rows"].as_array().unwrap().iter().any(|r| r["cells"][0] == "default" && r["cells"][1] == "Active"));
    // PartialObjectMetadataList.
    let pom = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";
    let (code, _, l) = table(&server, "/api/v1/namespaces/default/configmaps", pom).await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(l["kind"], "PartialObjectMetadataList");
    assert_eq!(l["items"][0]["metadata"]["name"], "c1");
    // Only an unknown rendering: 406.
    let (code, _, s) =
        table(&server, "/api/v1/namespaces/default/configmaps", "application/json;as=Table;v=v9;g=meta.k8s.io").await;
    assert_eq!(code, StatusCode::NOT_ACCEPTABLE);
    assert_eq!(s["reason"], "NotAcceptable");
}

#[tokio::test]
async fn crd_printer_columns_and_watch_rows() {
    let server = ApiServer::default();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                    {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1, "description": "The colour."},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    assert_eq!(
        post(&server, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &crd).await.0,
        StatusCode::CREATED
    );
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"},
        "spec": {"size": 3, "color": "red"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    assert_eq!(post(&server, path, &w).await.0, StatusCode::CREATED);
    let (_, _, t) = table(&server, path, KUBECTL_ACCEPT).await;
    assert_eq!(
        column_names(&t),
        vec![("Name".into(), 0), ("Size".into(), 0), ("Ready".into(), 0), ("Color".into(), 1), ("Age".into(), 0)]
    );
    assert_eq!(t["columnDefinitions"][4]["type"], "date");
    assert_eq!(t["columnDefinitions"][3]["description"], "The colour.");
    let cells = &t["rows"][0]["cells"];
    assert_eq!((&cells[0], &cells[1], &cells[2], &cells[3]), (&json!("w1"), &json!(3), &json!("True"), &json!("red")));
    // kube-apiserver's CRD table convertor prints a `date` column as an age.
    assert_eq!(cells[4], json!("0s"), "date cells carry the age: {cells}");

    // Watch: each event's object is a one-row Table.
    let rv = t["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let req = Request::builder()
        .uri(format!("{path}?watch=true&resourceVersion={rv}"))
        .header("accept", KUBECTL_ACCEPT)
        .body(Body::empty())
        .unwrap();
    let resp = server.router().oneshot(req).await.unwrap();
    assert_eq!(resp.headers()["content-type"], "application/json;as=Table;v=v1;g=meta.k8s.io");
    let mut stream = resp.into_body().into_data_stream();
    let patch = json!({"spec": {"size": 4}});
    let (code, _, _) = raw_full(
        &server,
        Method::PATCH,
        &format!("{path}/w1"),
        &[("content-type", Some("application/merge-patch+json"))],
        patch.to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), stream.next())
        .await
        .expect("an event")
        .expect("a chunk")
        .expect("bytes");
    let ev: Value = serde_json::from_slice(chunk.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(ev["type"], "MODIFIED");
    assert_eq!(ev["object"]["kind"], "Table");
    assert_eq!(ev["object"]["rows"][0]["cells"][1], 4);
    assert_eq!(ev["object"]["rows"][0]["object"]["kind"], "PartialObjectMetadata");

    // A CRD without printer columns gets Name and Age (a date column).
    let mut plain = crd.clone();
    plain["metadata"]["name"] = json!("gadgets.example.com");
    plain["spec"]["names"] = json!({"plural": "gadgets", "singular": "gadget", "kind": "Gadget"});
    plain["spec"]["versions"][0].as_object_mut().unwrap().remove("additionalPrinterColumns");
    assert_eq!(
        post(&server, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &plain).await.0,
        StatusCode::CREATED
    );
    let (_, _, t) = table(&server, "/apis/example.com/v1/gadgets", KUBECTL_ACCEPT).await;
    assert_eq!(column_names(&t), vec![("Name".into(), 0), ("Age".into(), 0)]);
    assert_eq!(t["columnDefinitions"][1]["type"], "date");
}
