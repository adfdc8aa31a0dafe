//! CustomResourceDefinitions at run time: establishment, discovery, structural-schema
//! validation, pruning and defaulting, versions, subresources, selectable fields, deletion.

use crate::common::{get, post, raw};
use fake_apiserver::ApiServer;
use http::{Method, StatusCode};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::{Value, json};
use std::time::Duration;

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wg"], "categories": ["all"]},
            "versions": [
                {
                    "name": "v1",
                    "served": true,
                    "storage": true,
                    "subresources": {
                        "status": {},
                        "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}
                    },
                    "selectableFields": [{"jsonPath": ".spec.color"}],
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["color"],
                                "properties": {
                                    "replicas": {"type": "integer", "minimum": 0, "default": 1},
                                    "color": {"type": "string", "enum": ["red", "blue"]},
                                    "size": {"type": "string", "pattern": "^[0-9]+(Mi|Gi)$"},
                                    "opaque": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                                    "port": {"x-kubernetes-int-or-string": true},
                                    "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}
                                }
                            },
                            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}, "selector": {"type": "string"}}}
                        }
                    }}
                },
                {
                    "name": "v1beta1",
                    "served": true,
                    "storage": false,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
                }
            ]
        }
    })
}

async fn install(server: &ApiServer) -> Api<DynamicObject> {
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    let crd: CustomResourceDefinition = serde_json::from_value(widget_crd()).unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    tokio::time::timeout(
        Duration::from_secs(5),
        await_condition(crds, "widgets.example.com", conditions::is_crd_established()),
    )
    .await
    .expect("established in time")
    .unwrap();
    widgets(server, "v1")
}

fn widgets(server: &ApiServer, version: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", version, "Widget"), "widgets");
    Api::namespaced_with(server.client(), "default", &ar)
}

fn widget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}),
    )
    .unwrap()
}

#[tokio::test]
async fn a_crd_is_accepted_established_and_discoverable() {
    let server = ApiServer::default();
    install(&server).await;
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    let crd = crds.get("widgets.example.com").await.unwrap();
    let status = crd.status.unwrap();
    let conds: Vec<(String, String)> =
        status.conditions.unwrap().iter().map(|c| (c.type_.clone(), c.status.clone())).collect();
    assert!(conds.contains(&("NamesAccepted".into(), "True".into())));
    assert!(conds.contains(&("Established".into(), "True".into())));
    assert_eq!(status.stored_versions, Some(vec!["v1".to_string()]));
    assert!(crd.metadata.finalizers.unwrap().contains(&"customresourcecleanup.apiextensions.k8s.io".to_string()));
    let (_, list) = get(&server, "/apis/example.com/v1").await;
    let names: Vec<&str> = list["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["widgets", "widgets/scale", "widgets/status"]);
    assert_eq!(list["resources"][0]["shortNames"][0], "wg");
    let (_, group) = get(&server, "/apis/example.com").await;
    assert_eq!(group["preferredVersion"]["version"], "v1");
    let d = kube::Discovery::new(server.client()).run_aggregated().await.unwrap();
    let (ar, caps) = d.get("example.com").unwrap().recommended_kind("Widget").unwrap();
    assert_eq!((ar.plural.as_str(), ar.version.as_str()), ("widgets", "v1"));
    assert_eq!(caps.subresources.len(), 2);
}

#[tokio::test]
async fn invalid_crds_are_rejected_with_causes() {
    let server = ApiServer::default();
    let mut bad_name = widget_crd();
    bad_name["metadata"]["name"] = json!("gadgets.example.com");
    let (code, body) = post(&server, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &bad_name).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["details"]["causes"][0]["field"], "metadata.name");
    let mut two_storage = widget_crd();
    two_storage["spec"]["versions"][1]["storage"] = json!(true);
    let (code, body) = post(&server, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &two_storage).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["details"]["causes"][0]["field"], "spec.versions");
    assert_eq!(get(&server, "/apis/example.com/v1").await.0, StatusCode::NOT_FOUND, "nothing served");
}

#[tokio::test]
async fn custom_resources_are_validated_with_field_paths() {
    let server = ApiServer::default();
    let w = install(&server).await;
    let err = w
        .create(&PostParams::default(), &widget("bad", json!({"color": "green", "replicas": -1, "size": "big"})))
        .await
        .unwrap_err();
    let kube::Error::Api(s) = err else { panic!("expected a Status") };
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    let (code, body) = post(
        &server,
        "/apis/example.com/v1/namespaces/default/widgets",
        &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "bad"}, "spec": {"color": "green", "replicas": -1, "size": "big", "tags": ["a", "a"]}}),
    )
    .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    let fields: Vec<&str> =
        body["details"]["causes"].as_array().unwrap().iter().map(|c| c["field"].as_str().unwrap()).collect();
    for f in ["spec.color", "spec.replicas", "spec.size", "spec.tags[1]"] {
        assert!(fields.contains(&f), "{f} in {fields:?}");
    }
    assert_eq!(body["details"]["kind"], "Widget");
    assert_eq!(body["details"]["group"], "example.com");
    assert!(
        body["message"].as_str().unwrap().starts_with("Widget.example.com \"bad\" is invalid"),
        "{}",
        body["message"]
    );
    let (code, body) = post(
        &server,
        "/apis/example.com/v1/namespaces/default/widgets",
        &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "nocolor"}, "spec": {}}),
    )
    .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["details"]["causes"][0]["field"], "spec.color");
    assert_eq!(body["details"]["causes"][0]["reason"], "FieldValueRequired");
    // int-or-string accepts both.
    for (n, port) in [("p1", json!(80)), ("p2", json!("http"))] {
        w.create(&PostParams::default(), &widget(n, json!({"color": "red", "port": port}))).await.unwrap();
    }
}

#[tokio::test]
async fn unknown_fields_are_pruned_unless_preserved_and_defaults_are_applied() {
    let server = ApiServer::default();
    let w = install(&server).await;
    let created = w
        .create(
            &PostParams::default(),
            &widget("w", json!({"color": "red", "bogus": 1, "opaque": {"anything": {"goes": true}}})),
        )
        .await
        .unwrap();
    let spec = &created.data["spec"];
    assert!(spec.get("bogus").is_none(), "pruned: {spec}");
    assert_eq!(spec["opaque"]["anything"]["goes"], true);
    assert_eq!(spec["replicas"], 1, "defaulted on create");
    assert!(created.data.get("status").is_none(), "status is not accepted on create");
    // Defaults apply on update too.
    let mut u = created.clone();
    u.data["spec"] = json!({"color": "blue"});
    let updated = w.replace("w", &PostParams::default(), &u).await.unwrap();
    assert_eq!(updated.data["spec"]["replicas"], 1);
    assert_eq!(updated.metadata.generation, Some(2));
}

#[tokio::test]
async fn defaults_added_to_the_schema_later_apply_when_reading() {
    let server = ApiServer::default();
    let w = install(&server).await;
    w.create(&PostParams::default(), &widget("old", json!({"color": "red"}))).await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    let patch = json!([{"op": "add", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size/default", "value": "1Gi"}]);
    crds.patch(
        "widgets.example.com",
        &PatchParams::default(),
        &Patch::<()>::Json(serde_json::from_value(patch).unwrap()),
    )
    .await
    .unwrap();
    let read = w.get("old").await.unwrap();
    assert_eq!(read.data["spec"]["size"], "1Gi", "defaulted on read");
    let listed = w.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items[0].data["spec"]["size"], "1Gi");
}

#[tokio::test]
async fn updates_of_custom_resources_need_a_resource_version_and_respect_the_status_subresource() {
    let server = ApiServer::default();
    let w = install(&server).await;
    let c = w.create(&PostParams::default(), &widget("w", json!({"color": "red"}))).await.unwrap();
    let mut no_rv = c.clone();
    no_rv.metadata.resource_version = None;
    let err = w.replace("w", &PostParams::default(), &no_rv).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 422), "{err:?}");
    let s = w
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 3}, "spec": {"color": "blue"}})),
        )
        .await
        .unwrap();
    assert_eq!(s.data["status"]["replicas"], 3);
    assert_eq!(s.data["spec"]["color"], "red");
    assert_eq!(s.metadata.generation, Some(1), "status writes do not bump generation");
    let m = w
        .patch("w", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"annotations": {"a": "b"}}})))
        .await
        .unwrap();
    assert_eq!(m.metadata.generation, Some(1), "metadata writes do not bump generation");
    let g = w.patch("w", &PatchParams::default(), &Patch::Merge(json!({"spec": {"color": "blue"}}))).await.unwrap();
    assert_eq!(g.metadata.generation, Some(2));
    let (code, body) = raw(
        &server,
        Method::PATCH,
        "/apis/example.com/v1/namespaces/default/widgets/w",
        Some("application/strategic-merge-patch+json"),
        json!({"spec": {"color": "red"}}).to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{body}");
}

#[tokio::test]
async fn without_a_status_subresource_status_changes_bump_generation() {
    let server = ApiServer::default();
    install(&server).await;
    let w = widgets(&server, "v1beta1");
    let obj: DynamicObject =
        serde_json::from_value(json!({"apiVersion": "example.com/v1beta1", "kind": "Widget", "metadata": {"name": "b"}, "spec": {"color": "red"}, "status": {"x": 1}}))
            .unwrap();
    let c = w.create(&PostParams::default(), &obj).await.unwrap();
    assert_eq!(c.data["status"]["x"], 1, "no status subresource in v1beta1: status is kept on create");
    let p = w.patch("b", &PatchParams::default(), &Patch::Merge(json!({"status": {"x": 2}}))).await.unwrap();
    assert_eq!(p.metadata.generation, Some(2));
    assert_eq!(
        get(&server, "/apis/example.com/v1beta1/namespaces/default/widgets/b/status").await.0,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn versions_share_storage_and_apiversion_follows_the_request() {
    let server = ApiServer::default();
    let v1 = install(&server).await;
    v1.create(&PostParams::default(), &widget("w", json!({"color": "red"}))).await.unwrap();
    let beta = widgets(&server, "v1beta1");
    let read = beta.get("w").await.unwrap();
    assert_eq!(read.types.unwrap().api_version, "example.com/v1beta1");
    // A patch through the other version starts from the object as that version serves it.
    let patched =
        beta.patch("w", &PatchParams::default(), &Patch::Merge(json!({"spec": {"color": "blue"}}))).await.unwrap();
    assert_eq!(patched.types.unwrap().api_version, "example.com/v1beta1");
    assert_eq!(v1.get("w").await.unwrap().data["spec"]["color"], "blue");
    let (_, raw_list) = get(&server, "/apis/example.com/v1beta1/namespaces/default/widgets").await;
    assert_eq!(raw_list["apiVersion"], "example.com/v1beta1");
    assert_eq!(raw_list["items"][0]["apiVersion"], "example.com/v1beta1");
}

#[tokio::test]
async fn the_scale_subresource_follows_the_crd_paths() {
    let server = ApiServer::default();
    let w = install(&server).await;
    w.create(&PostParams::default(), &widget("w", json!({"color": "red", "replicas": 2}))).await.unwrap();
    w.patch_status(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"replicas": 2, "selector": "app=w"}})),
    )
    .await
    .unwrap();
    let (code, scale) = get(&server, "/apis/example.com/v1/namespaces/default/widgets/w/scale").await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"]["replicas"], 2);
    assert_eq!(scale["status"]["selector"], "app=w");
    let (code, scaled) = raw(
        &server,
        Method::PATCH,
        "/apis/example.com/v1/namespaces/default/widgets/w/scale",
        Some("application/merge-patch+json"),
        json!({"spec": {"replicas": 5}}).to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{scaled}");
    assert_eq!(scaled["spec"]["replicas"], 5);
    assert_eq!(w.get("w").await.unwrap().data["spec"]["replicas"], 5);
}

#[tokio::test]
async fn selectable_fields_work_in_field_selectors() {
    let server = ApiServer::default();
    let w = install(&server).await;
    for (n, c) in [("r", "red"), ("b", "blue")] {
        w.create(&PostParams::default(), &widget(n, json!({"color": c}))).await.unwrap();
    }
    let l = w.list(&ListParams::default().fields("spec.color=blue")).await.unwrap();
    assert_eq!(l.items.iter().map(|o| o.metadata.name.clone().unwrap()).collect::<Vec<_>>(), vec!["b"]);
    let err = w.list(&ListParams::default().fields("spec.replicas=1")).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 400), "{err:?}");
}

#[tokio::test]
async fn deleting_a_crd_deletes_its_instances_first_respecting_their_finalizers() {
    let server = ApiServer::default();
    let w = install(&server).await;
    w.create(&PostParams::default(), &widget("plain", json!({"color": "red"}))).await.unwrap();
    let mut held = widget("held", json!({"color": "red"}));
    held.metadata.finalizers = Some(vec!["example.com/keep".into()]);
    w.create(&PostParams::default(), &held).await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    crds.delete("widgets.example.com", &Default::default()).await.unwrap();
    assert!(w.get_opt("plain").await.unwrap().is_none());
    let h = w.get("held").await.unwrap();
    assert!(h.metadata.deletion_timestamp.is_some());
    let crd = crds.get("widgets.example.com").await.unwrap();
    assert!(crd.metadata.deletion_timestamp.is_some());
    assert!(crd.status.unwrap().conditions.unwrap().iter().any(|c| c.type_ == "Terminating" && c.status == "True"));
    w.patch("held", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}}))).await.unwrap();
    assert!(crds.get_opt("widgets.example.com").await.unwrap().is_none(), "the CRD goes once its instances are gone");
    assert_eq!(get(&server, "/apis/example.com/v1").await.0, StatusCode::NOT_FOUND);
    // A new CRD with the same names starts empty.
    install(&server).await;
    assert!(widgets(&server, "v1").list(&ListParams::default()).await.unwrap().items.is_empty());
}

#[tokio::test]
/// kube-apiserver stores a CRD whose names clash but does not serve it: NamesAccepted=False.
async fn a_crd_whose_names_clash_is_stored_but_not_served() {
    let server = ApiServer::default();
    install(&server).await;
    let mut clash = widget_crd();
    clash["metadata"]["name"] = json!("gizmos.example.com");
    clash["spec"]["names"] = json!({"plural": "gizmos", "kind": "Widget"});
    let (code, body) = post(&server, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &clash).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let (_, stored) = get(&server, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.example.com").await;
    let conds = stored["status"]["conditions"].as_array().unwrap();
    let names = conds.iter().find(|c| c["type"] == "NamesAccepted").unwrap();
    assert_eq!((names["status"].as_str(), names["reason"].as_str()), (Some("False"), Some("KindConflict")));
    assert!(conds.iter().any(|c| c["type"] == "Established" && c["status"] == "False"));
    let (_, list) = get(&server, "/apis/example.com/v1").await;
    let served: Vec<&str> = list["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert!(!served.contains(&"gizmos"), "{served:?}");
}
