//! Strategic merge patch on built-in types, and its refusal on custom resources.

use crate::common::{get, post, raw, store_fingerprint};
use axum::body::Body;
use fake_apiserver::ApiServer;
use http::{Method, StatusCode};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

const SMP: Option<&str> = Some("application/strategic-merge-patch+json");
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
const PODS: &str = "/api/v1/namespaces/default/pods";

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web", "tier": "front"}, "finalizers": ["a.example/x", "b.example/y"]},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "main", "image": "nginx:1", "args": ["a", "b"],
                         "ports": [{"containerPort": 80}, {"containerPort": 443}],
                         "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                         "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
                        {"name": "sidecar", "image": "busybox"}
                    ],
                    "tolerations": [{"key": "k", "operator": "Exists"}],
                    "volumes": [{"name": "data", "emptyDir": {}}]
                }
            }
        }
    })
}

async fn smp(server: &ApiServer, uri: &str, patch: Value) -> (StatusCode, Value) {
    raw(server, Method::PATCH, uri, SMP, patch.to_string()).await
}

async fn patched_deployment(patch: Value) -> Value {
    let server = ApiServer::default();
    let (code, v) = post(&server, DEPLOYS, &deployment()).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let (code, v) = smp(&server, &format!("{DEPLOYS}/web"), patch).await;
    assert_eq!(code, StatusCode::OK, "{v}");
    let (_, stored) = get(&server, &format!("{DEPLOYS}/web")).await;
    assert_eq!(stored["spec"], v["spec"], "the response is what was stored");
    v
}

fn container<'a>(d: &'a Value, name: &str) -> &'a Value {
    d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == name))
        .unwrap_or(&Value::Null)
}

#[tokio::test]
async fn lists_merge_by_their_patch_merge_key_and_others_are_replaced() {
    let d = patched_deployment(json!({"spec": {"template": {"spec": {
        "containers": [{"name": "main", "image": "nginx:2", "args": ["c"],
                        "ports": [{"containerPort": 8080}],
                        "env": [{"name": "B", "value": "two"}, {"name": "C", "value": "3"}],
                        "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": true}]},
                       {"name": "new", "image": "alpine"}],
        "tolerations": [{"key": "other", "operator": "Exists"}]
    }}}}))
    .await;
    let main = container(&d, "main");
    assert_eq!(main["image"], "nginx:2");
    // args is atomic: replaced.
    assert_eq!(main["args"], json!(["c"]));
    // ports merge by containerPort, env by name, volumeMounts by mountPath. An item the
    // original lacks goes before the server-only items it meets (`mergeSortedSlice`).
    let ports: Vec<&Value> = main["ports"].as_array().unwrap().iter().map(|p| &p["containerPort"]).collect();
    assert_eq!(ports, [&json!(8080), &json!(80), &json!(443)]);
    assert_eq!(
        main["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "two"}, {"name": "C", "value": "3"}])
    );
    assert_eq!(main["volumeMounts"], json!([{"name": "data", "mountPath": "/data", "readOnly": true}]));
    // containers merge by name: the untouched sidecar stays, after the patch's main and the
    // new container (the patch's items in its order, a server-only item placed after them as
    // it cannot be ordered against the new one).
    let names: Vec<&Value> =
        d["spec"]["template"]["spec"]["containers"].as_array().unwrap().iter().map(|c| &c["name"]).collect();
    assert_eq!(names, [&json!("main"), &json!("new"), &json!("sidecar")]);
    // tolerations have no strategy: replaced.
    assert_eq!(d["spec"]["template"]["spec"]["tolerations"], json!([{"key": "other", "operator": "Exists"}]));
}

#[tokio::test]
async fn null_deletes_and_finalizers_merge_as_a_set() {
    let d = patched_deployment(
        json!({"metadata": {"labels": {"tier": null}, "finalizers": ["c.example/z", "a.example/x"]}}),
    )
    .await;
    assert_eq!(d["metadata"]["labels"], json!({"app": "web"}));
    // A union in `normalizeElementOrder`'s order: the patch's items in the patch's order, the
    // server-only `b` placed after `a`, which the original has before it.
    assert_eq!(d["metadata"]["finalizers"], json!(["c.example/z", "a.example/x", "b.example/y"]));
}

#[tokio::test]
async fn patch_delete_directive_removes_a_list_item_and_a_map() {
    let d = patched_deployment(json!({"spec": {
        "strategy": {"rollingUpdate": {"$patch": "delete"}},
        "template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}
    }}))
    .await;
    assert!(container(&d, "sidecar").is_null(), "{d}");
    assert!(!container(&d, "main").is_null());
    // The deleted rollingUpdate of a RollingUpdate strategy is defaulted back, as upstream does.
    assert_eq!(
        d["spec"]["strategy"]["rollingUpdate"],
        json!({"maxUnavailable": "25%", "maxSurge": "25%"}),
        "{}",
        d["spec"]["strategy"]
    );
}

#[tokio::test]
async fn patch_replace_directive_replaces_a_list_and_a_map() {
    let d = patched_deployment(json!({
        "metadata": {"labels": {"$patch": "replace", "only": "this"}},
        "spec": {"template": {"spec": {"containers": [{"$patch": "replace"}, {"name": "solo", "image": "solo:1"}]}}}
    }))
    .await;
    assert_eq!(d["metadata"]["labels"], json!({"only": "this"}));
    let names: Vec<&Value> =
        d["spec"]["template"]["spec"]["containers"].as_array().unwrap().iter().map(|c| &c["name"]).collect();
    assert_eq!(names, [&json!("solo")]);
}

#[tokio::test]
async fn set_element_order_delete_from_primitive_list_and_retain_keys() {
    let d = patched_deployment(json!({
        "metadata": {"$deleteFromPrimitiveList/finalizers": ["a.example/x"]},
        "spec": {
            "strategy": {"$retainKeys": ["type"], "type": "Recreate"},
            "template": {"spec": {
                "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "main"}],
                "containers": [{"name": "main", "image": "nginx:3"}],
                "volumes": [{"name": "data", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/srv"}}]
            }}
        }
    }))
    .await;
    assert_eq!(d["metadata"]["finalizers"], json!(["b.example/y"]));
    assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
    let names: Vec<&Value> =
        d["spec"]["template"]["spec"]["containers"].as_array().unwrap().iter().map(|c| &c["name"]).collect();
    assert_eq!(names, [&json!("sidecar"), &json!("main")]);
    assert_eq!(container(&d, "main")["image"], "nginx:3");
    let volumes = &d["spec"]["template"]["spec"]["volumes"];
    assert_eq!(volumes[0]["hostPath"]["path"], "/srv");
    assert!(volumes[0].get("emptyDir").is_none(), "{volumes}");
}

#[tokio::test]
async fn pod_containers_merge_through_kube_rs_strategic_patch() {
    let server = ApiServer::default();
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "1"}},
        "spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}});
    let (code, v) = post(&server, PODS, &pod).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::default_namespaced(server.client());
    let patch = json!({"metadata": {"labels": {"b": "2"}}, "spec": {"containers": [{"name": "b", "image": "b:2"}]}});
    let out = pods.patch("p", &PatchParams::default(), &Patch::Strategic(patch)).await.expect("strategic patch");
    let spec = out.spec.expect("spec");
    let images: Vec<(String, Option<String>)> = spec.containers.into_iter().map(|c| (c.name, c.image)).collect();
    assert_eq!(images, [("a".to_string(), Some("a:1".to_string())), ("b".to_string(), Some("b:2".to_string()))]);
    let labels = out.metadata.labels.expect("labels");
    assert_eq!(labels.len(), 2);
}

#[tokio::test]
async fn deployment_scale_subresource_takes_a_strategic_patch() {
    let server = ApiServer::default();
    post(&server, DEPLOYS, &deployment()).await;
    let deploys: Api<Deployment> = Api::default_namespaced(server.client());
    let scale = deploys
        .patch_scale("web", &PatchParams::default(), &Patch::Strategic(json!({"spec": {"replicas": 4}})))
        .await
        .expect("scale patch");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(4));
}

#[tokio::test]
async fn malformed_strategic_patches_are_errors_and_change_nothing() {
    let server = ApiServer::default();
    post(&server, DEPLOYS, &deployment()).await;
    let uri = format!("{DEPLOYS}/web");
    let (_, before_obj) = get(&server, &uri).await;
    let before = store_fingerprint(&server).await;
    // interpretStrategicMergePatchError: malformed directives are 400s; an unknown `$patch` and
    // an item without its merge key are plain errors, 500 without a reason.
    for (patch, want, reason) in [
        (json!({"spec": {"$patch": "frobnicate"}}), StatusCode::INTERNAL_SERVER_ERROR, None),
        (
            json!({"spec": {"template": {"spec": {"containers": [{"image": "no-name"}]}}}}),
            StatusCode::INTERNAL_SERVER_ERROR,
            None,
        ),
        (json!({"metadata": {"$retainKeys": "labels"}}), StatusCode::BAD_REQUEST, Some("BadRequest")),
    ] {
        let (code, v) = smp(&server, &uri, patch.clone()).await;
        assert_eq!(code, want, "{patch}: {v}");
        assert_eq!(v["reason"].as_str(), reason, "{v}");
    }
    let (code, v) = raw(&server, Method::PATCH, &uri, SMP, "{\"spec\": ").await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(store_fingerprint(&server).await, before);
    assert_eq!(get(&server, &uri).await.1, before_obj);
}

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    })
}

#[tokio::test]
async fn strategic_patch_on_a_custom_resource_is_415_and_changes_nothing() {
    let server = ApiServer::default();
    let (code, v) = post(&server, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &widget_crd()).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let (code, v) = post(
        &server,
        widgets,
        &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let before = store_fingerprint(&server).await;
    let (code, v) = smp(&server, &format!("{widgets}/w"), json!({"spec": {"size": 2}})).await;
    assert_eq!(code, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{v}");
    assert_eq!(v["reason"], "UnsupportedMediaType");
    let message = v["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("accepted media types include: application/json-patch+json, application/merge-patch+json"),
        "{message}"
    );
    assert!(!message.contains("accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic"), "{message}");
    assert_eq!(store_fingerprint(&server).await, before);
    assert_eq!(get(&server, &format!("{widgets}/w")).await.1["spec"]["size"], 1);
    // The same body as a merge patch works.
    let (code, v) = raw(
        &server,
        Method::PATCH,
        &format!("{widgets}/w"),
        Some("application/merge-patch+json"),
        Body::from(r#"{"spec":{"size":2}}"#),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_eq!(v["spec"]["size"], 2);
}
