//! Server-side apply and managedFields, through kube-rs and raw requests.

use crate::common::{get, post, raw, store_fingerprint};
use fake_apiserver::ApiServer;
use http::{Method, StatusCode};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const APPLY: Option<&str> = Some("application/apply-patch+yaml");
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

fn intent(replicas: i64, containers: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}
        }
    })
}

fn entry<'a>(obj: &'a Value, manager: &str, operation: &str) -> Option<&'a Value> {
    obj["metadata"]["managedFields"].as_array()?.iter().find(|e| e["manager"] == manager && e["operation"] == operation)
}

fn as_json<T: serde::Serialize>(x: &T) -> Value {
    serde_json::to_value(x).expect("serializable")
}

fn kube_error(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn apply_creates_then_conflicts_between_managers_then_force_moves_ownership() {
    let server = ApiServer::default();
    let deploys: Api<Deployment> = Api::default_namespaced(server.client());
    let containers = json!([{"name": "main", "image": "nginx:1"}]);

    let created = deploys
        .patch("web", &PatchParams::apply("alice"), &Patch::Apply(intent(1, containers.clone())))
        .await
        .expect("apply creates");
    let created = as_json(&created);
    let alice = entry(&created, "alice", "Apply").expect("alice's Apply entry");
    assert_eq!(alice["apiVersion"], "apps/v1");
    assert_eq!(alice["fieldsType"], "FieldsV1");
    assert!(alice["time"].is_string());
    assert!(alice["fieldsV1"]["f:spec"]["f:replicas"].is_object(), "{alice}");
    assert!(
        alice["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"main\"}"]["f:image"]
            .is_object(),
        "{alice}"
    );
    assert!(alice["fieldsV1"]["f:metadata"].get("f:name").is_none(), "name is nobody's: {alice}");

    // Bob applies a different replicas and image: two conflicts, nothing changes.
    let before = store_fingerprint(&server).await;
    let err = deploys
        .patch(
            "web",
            &PatchParams::apply("bob"),
            &Patch::Apply(intent(3, json!([{"name": "main", "image": "nginx:2"}]))),
        )
        .await
        .expect_err("conflict");
    let status = kube_error(err);
    assert_eq!(status.code, 409);
    assert_eq!(status.reason, "Conflict");
    assert_eq!(
        status.message,
        "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .spec.replicas\n- .spec.template.spec.containers[name=\"main\"].image"
    );
    assert_eq!(store_fingerprint(&server).await, before);
    let (code, raw_status) = raw(
        &server,
        Method::PATCH,
        &format!("{DEPLOYS}/web?fieldManager=bob"),
        APPLY,
        intent(3, containers.clone()).to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::CONFLICT);
    assert_eq!(raw_status["message"], "Apply failed with 1 conflict: conflict with \"alice\": .spec.replicas");
    assert_eq!(
        raw_status["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"alice\"", "field": ".spec.replicas"}])
    );

    // The same value is no conflict: ownership is shared.
    let shared = deploys
        .patch("web", &PatchParams::apply("carol"), &Patch::Apply(intent(1, containers.clone())))
        .await
        .expect("same values apply cleanly");
    let shared = as_json(&shared);
    assert!(entry(&shared, "carol", "Apply").is_some());

    // Forced: bob takes replicas from alice and carol.
    let forced = deploys
        .patch("web", &PatchParams::apply("bob").force(), &Patch::Apply(intent(3, containers.clone())))
        .await
        .expect("forced apply");
    assert_eq!(forced.spec.replicas, Some(3));
    let forced = as_json(&forced);
    assert!(entry(&forced, "bob", "Apply").unwrap()["fieldsV1"]["f:spec"]["f:replicas"].is_object());
    for m in ["alice", "carol"] {
        let e = entry(&forced, m, "Apply").expect("still a manager of other fields");
        assert!(e["fieldsV1"]["f:spec"].get("f:replicas").is_none(), "{m} lost replicas: {e}");
        assert!(e["fieldsV1"]["f:spec"]["f:selector"].is_object());
    }
    // Now alice conflicts with bob.
    let err = deploys
        .patch("web", &PatchParams::apply("alice"), &Patch::Apply(intent(1, containers)))
        .await
        .expect_err("alice conflicts now");
    assert_eq!(kube_error(err).message, "Apply failed with 1 conflict: conflict with \"bob\": .spec.replicas");
}

#[tokio::test]
async fn non_apply_writes_record_update_entries_and_take_fields() {
    let server = ApiServer::default();
    let deploys: Api<Deployment> = Api::default_namespaced(server.client());
    let d: Deployment = serde_json::from_value(intent(1, json!([{"name": "main", "image": "nginx:1"}]))).unwrap();
    let created =
        deploys.create(&PostParams { field_manager: Some("creator".into()), ..Default::default() }, &d).await.unwrap();
    let created = as_json(&created);
    let e = entry(&created, "creator", "Update").expect("create records an Update entry");
    assert!(e["fieldsV1"]["f:spec"]["f:replicas"].is_object(), "{e}");
    assert!(e["fieldsV1"]["f:metadata"]["f:labels"]["f:app"].is_object(), "{e}");

    let patched = deploys
        .patch(
            "web",
            &PatchParams { field_manager: Some("scaler".into()), ..Default::default() },
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    let patched = as_json(&patched);
    let scaler = entry(&patched, "scaler", "Update").expect("the patch's manager");
    assert_eq!(scaler["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    let creator = entry(&patched, "creator", "Update").unwrap();
    assert!(creator["fieldsV1"]["f:spec"].get("f:replicas").is_none(), "{creator}");

    // An applier that wants replicas now conflicts with the Update manager, named with its version.
    let err = deploys
        .patch(
            "web",
            &PatchParams::apply("ssa"),
            &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 2}})),
        )
        .await
        .expect_err("conflict with an updater");
    let status = kube_error(err);
    assert_eq!(status.message, "Apply failed with 1 conflict: conflict with \"scaler\" using apps/v1: .spec.replicas");

    // Without fieldManager the manager comes from the user agent's first word.
    let (code, v) = crate::common::raw_with(
        &server,
        Method::PATCH,
        &format!("{DEPLOYS}/web"),
        &[("content-type", Some("application/merge-patch+json")), ("user-agent", Some("my-controller/v1.2 (linux)"))],
        json!({"metadata": {"labels": {"team": "x"}}}).to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_eq!(
        entry(&v, "my-controller", "Update").unwrap()["fieldsV1"],
        json!({"f:metadata": {"f:labels": {"f:team": {}}}})
    );
}

#[tokio::test]
async fn fields_dropped_from_an_applied_config_are_removed_unless_owned_elsewhere() {
    let server = ApiServer::default();
    let deploys: Api<Deployment> = Api::default_namespaced(server.client());
    let mut first = intent(1, json!([{"name": "main", "image": "nginx:1"}, {"name": "side", "image": "busybox"}]));
    first["metadata"]["labels"]["extra"] = json!("yes");
    first["metadata"]["annotations"] = json!({"note": "a"});
    deploys.patch("web", &PatchParams::apply("alice"), &Patch::Apply(first)).await.unwrap();
    // Someone else also sets the annotation: it survives alice dropping it.
    deploys
        .patch(
            "web",
            &PatchParams { field_manager: Some("other".into()), ..Default::default() },
            &Patch::Merge(json!({"metadata": {"annotations": {"note": "b"}}})),
        )
        .await
        .unwrap();

    let second = intent(1, json!([{"name": "main", "image": "nginx:1"}]));
    let out = deploys.patch("web", &PatchParams::apply("alice"), &Patch::Apply(second)).await.unwrap();
    let labels = out.metadata.labels.clone().unwrap();
    assert!(!labels.contains_key("extra"), "{labels:?}");
    assert_eq!(out.metadata.annotations.clone().unwrap().get("note").map(String::as_str), Some("b"));
    let names: Vec<String> = out.spec.template.spec.unwrap().containers.into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["main"]);
}

#[tokio::test]
async fn containers_from_two_appliers_merge_by_name() {
    let server = ApiServer::default();
    let deploys: Api<Deployment> = Api::default_namespaced(server.client());
    deploys
        .patch("web", &PatchParams::apply("alice"), &Patch::Apply(intent(1, json!([{"name": "a", "image": "a:1"}]))))
        .await
        .unwrap();
    let partial = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b:1"}]}}}});
    let out = deploys.patch("web", &PatchParams::apply("bob"), &Patch::Apply(partial)).await.unwrap();
    let images: Vec<(String, Option<String>)> =
        out.spec.template.spec.unwrap().containers.into_iter().map(|c| (c.name, c.image)).collect();
    assert_eq!(images, [("a".into(), Some("a:1".into())), ("b".into(), Some("b:1".into()))]);
    // Alice stops applying her container: it goes, bob's stays.
    let out = deploys.patch("web", &PatchParams::apply("alice"), &Patch::Apply(intent(1, json!([])))).await.unwrap();
    let names: Vec<String> = out.spec.template.spec.unwrap().containers.into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["b"]);
}

#[tokio::test]
async fn apply_with_a_type_error_is_a_plain_500_and_changes_nothing() {
    let server = ApiServer::default();
    let deploys: Api<Deployment> = Api::default_namespaced(server.client());
    deploys
        .patch("web", &PatchParams::apply("alice"), &Patch::Apply(intent(1, json!([{"name": "a", "image": "a:1"}]))))
        .await
        .unwrap();
    let before = store_fingerprint(&server).await;
    let (_, before_obj) = get(&server, &format!("{DEPLOYS}/web")).await;
    let mut bad = intent(1, json!([{"name": "a", "image": "a:1"}]));
    bad["spec"]["replicas"] = json!("three");
    let (code, v) =
        raw(&server, Method::PATCH, &format!("{DEPLOYS}/web?fieldManager=alice"), APPLY, bad.to_string()).await;
    // structured-merge-diff's typing fails: a plain error, 500 without a reason, naming the
    // body's namespace (none here) and name, as kube-apiserver v1.37.2 answered the differential.
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR, "{v}");
    assert_eq!(v["reason"], json!(null), "{v}");
    let message = v["message"].as_str().unwrap();
    assert!(message.starts_with("failed to create typed patch object (/web; apps/v1, Kind=Deployment): "), "{message}");
    assert_eq!(store_fingerprint(&server).await, before);
    assert_eq!(get(&server, &format!("{DEPLOYS}/web")).await.1, before_obj);
    // A missing object is not created by a bad apply either.
    let (code, _) = raw(&server, Method::PATCH, &format!("{DEPLOYS}/other?fieldManager=alice"), APPLY, {
        let mut b = bad.clone();
        b["metadata"]["name"] = json!("other");
        b.to_string()
    })
    .await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(get(&server, &format!("{DEPLOYS}/other")).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn apply_options_are_validated() {
    let server = ApiServer::default();
    let (code, v) = post(&server, DEPLOYS, &intent(1, json!([{"name": "a", "image": "a"}]))).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let before = store_fingerprint(&server).await;
    let body = intent(2, json!([{"name": "a", "image": "a"}])).to_string();
    let (code, v) = raw(&server, Method::PATCH, &format!("{DEPLOYS}/web"), APPLY, body.clone()).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["details"]["causes"][0]["field"], "fieldManager");
    assert_eq!(v["details"]["kind"], "PatchOptions");
    let (code, v) = raw(
        &server,
        Method::PATCH,
        &format!("{DEPLOYS}/web?force=true"),
        Some("application/merge-patch+json"),
        r#"{"spec":{"replicas":2}}"#,
    )
    .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["details"]["causes"][0]["field"], "force");
    // managedFields may not be part of an applied configuration.
    let mut with_mf = intent(2, json!([{"name": "a", "image": "a"}]));
    with_mf["metadata"]["managedFields"] = json!([{"manager": "x"}]);
    let (code, _) =
        raw(&server, Method::PATCH, &format!("{DEPLOYS}/web?fieldManager=a"), APPLY, with_mf.to_string()).await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert_eq!(store_fingerprint(&server).await, before);
    // YAML bodies are fine.
    let yaml = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 7\n";
    let (code, v) =
        raw(&server, Method::PATCH, &format!("{DEPLOYS}/web?fieldManager=yaml&force=true"), APPLY, yaml).await;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_eq!(v["spec"]["replicas"], 7);
}

#[tokio::test]
async fn apply_on_a_custom_resource_merges_by_its_schema() {
    let server = ApiServer::default();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer"},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
                        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
                    }},
                    "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
                }}}}]
        }
    });
    let (code, v) = post(&server, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &crd).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let uri = "/apis/example.com/v1/namespaces/default/widgets/w";
    let apply = |manager: &str, spec: Value| {
        let body = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec});
        let url = format!("{uri}?fieldManager={manager}");
        let server = &server;
        async move { raw(server, Method::PATCH, &url, APPLY, body.to_string()).await }
    };
    let (code, v) = apply("a", json!({"size": 1, "ports": [{"name": "http", "port": 80}], "tags": ["x"]})).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let (code, v) = apply("b", json!({"ports": [{"name": "grpc", "port": 90}], "tags": ["y"]})).await;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_eq!(v["spec"]["ports"], json!([{"name": "http", "port": 80}, {"name": "grpc", "port": 90}]));
    assert_eq!(v["spec"]["tags"], json!(["x", "y"]));
    assert_eq!(
        entry(&v, "b", "Apply").unwrap()["fieldsV1"],
        json!({"f:spec": {"f:ports": {"k:{\"name\":\"grpc\"}": {".": {}, "f:name": {}, "f:port": {}}}, "f:tags": {"v:\"y\"": {}}}})
    );
    let (code, v) = apply("b", json!({"size": 2})).await;
    assert_eq!(code, StatusCode::CONFLICT, "{v}");
    assert_eq!(v["details"]["causes"][0]["field"], ".spec.size");
    // The status subresource records its own entry.
    let (code, v) = raw(
        &server,
        Method::PATCH,
        &format!("{uri}/status?fieldManager=st"),
        APPLY,
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "status": {"ready": true}})
            .to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_eq!(v["status"]["ready"], true);
    let st = entry(&v, "st", "Apply").unwrap();
    assert_eq!(st["subresource"], "status");
    assert_eq!(st["fieldsV1"], json!({"f:status": {"f:ready": {}}}));
}

/// An applier that stops applying everything within a struct field removes the field whole, as
/// structured-merge-diff counts named fields above owned ones as owned
/// (`EnsureNamedFieldsAreMembers`): Kueue's admission applier unsetting `status.admission`
/// leaves no `admission` behind (the fake used to keep `{podSetAssignments: []}`).
#[tokio::test]
async fn an_applier_dropping_a_whole_struct_removes_it() {
    let server = ApiServer::default();
    let assignment = json!({"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "count": {"type": "integer"}}});
    let admission_schema = json!({"type": "object", "properties": {
        "clusterQueue": {"type": "string"},
        "podSetAssignments": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": assignment}
    }});
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "loads.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "loads", "singular": "load", "kind": "Load", "listKind": "LoadList"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                    "status": {"type": "object", "properties": {
                        "note": {"type": "string"},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "admission": admission_schema

                    }}
                }}}}]
        }
    });
    let (code, v) = post(&server, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &crd).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let obj = json!({"apiVersion": "example.com/v1", "kind": "Load", "metadata": {"name": "w"}, "spec": {"size": 1}});
    let (code, v) = post(&server, "/apis/example.com/v1/namespaces/default/loads", &obj).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let status = |manager: &str, status: Value| {
        let body = json!({"apiVersion": "example.com/v1", "kind": "Load", "metadata": {"name": "w"}, "status": status});
        let url = format!("/apis/example.com/v1/namespaces/default/loads/w/status?fieldManager={manager}&force=true");
        let server = &server;
        async move { raw(server, Method::PATCH, &url, APPLY, body.to_string()).await }
    };
    let (code, v) = status("other", json!({"note": "kept"})).await;
    assert_eq!(code, StatusCode::OK, "{v}");
    let admitted = json!({"admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "head", "count": 1}]}, "labels": {"a": "b"}});
    let (code, v) = status("admission", admitted).await;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_eq!(v["status"]["admission"]["podSetAssignments"][0]["name"], "head");
    // Unset: the struct and the map go whole; what another manager owns stays.
    let (code, v) = status("admission", json!({})).await;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_eq!(v["status"], json!({"note": "kept"}), "{v}");
    // A struct another manager still owns something in stays, without what was dropped.
    let (code, _) = status("admission", json!({"admission": {"clusterQueue": "cq"}})).await;
    assert_eq!(code, StatusCode::OK);
    let (code, _) =
        status("other", json!({"note": "kept", "admission": {"podSetAssignments": [{"name": "x", "count": 2}]}})).await;
    assert_eq!(code, StatusCode::OK);
    let (code, v) = status("admission", json!({})).await;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_eq!(v["status"]["admission"], json!({"podSetAssignments": [{"name": "x", "count": 2}]}), "{v}");
}
