//! `fieldValidation` Ignore / Warn / Strict on create, update, patch and apply.

use crate::common::{get, post, raw, raw_full, store_fingerprint};
use fake_apiserver::ApiServer;
use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

fn deployment_with_unknown_fields() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1, "foo": true,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": "nginx", "bogus": 1}]}}
        }
    })
}

fn warnings(headers: &http::HeaderMap) -> Vec<String> {
    headers.get_all(http::header::WARNING).iter().map(|v| v.to_str().unwrap_or_default().to_string()).collect()
}

#[tokio::test]
async fn strict_refuses_unknown_fields_and_creates_nothing() {
    let server = ApiServer::default();
    let before = store_fingerprint(&server).await;
    let (code, v) = raw(
        &server,
        Method::POST,
        &format!("{DEPLOYS}?fieldValidation=Strict"),
        Some("application/json"),
        deployment_with_unknown_fields().to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(
        v["message"],
        "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: \
         unknown field \"spec.foo\", unknown field \"spec.template.spec.containers[0].bogus\""
    );
    assert_eq!(store_fingerprint(&server).await, before);
    assert_eq!(get(&server, &format!("{DEPLOYS}/web")).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn warn_is_the_default_and_sends_warning_headers_ignore_sends_none() {
    let server = ApiServer::default();
    let body = deployment_with_unknown_fields().to_string();
    let (code, headers, _) =
        raw_full(&server, Method::POST, DEPLOYS, &[("content-type", Some("application/json"))], body.clone()).await;
    assert_eq!(code, StatusCode::CREATED);
    assert_eq!(
        warnings(&headers),
        [
            "299 - \"unknown field \\\"spec.foo\\\"\"",
            "299 - \"unknown field \\\"spec.template.spec.containers[0].bogus\\\"\""
        ]
    );

    let (code, headers, _) = raw_full(
        &server,
        Method::PATCH,
        &format!("{DEPLOYS}/web?fieldValidation=Ignore"),
        &[("content-type", Some("application/merge-patch+json"))],
        r#"{"spec":{"foo":1}}"#,
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    assert!(warnings(&headers).is_empty());

    let (code, headers, _) = raw_full(
        &server,
        Method::PATCH,
        &format!("{DEPLOYS}/web?fieldValidation=Warn"),
        &[("content-type", Some("application/strategic-merge-patch+json"))],
        r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"main"}],"containers":[{"name":"main","nope":1}]}}}}"#,
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(warnings(&headers), ["299 - \"unknown field \\\"spec.template.spec.containers[0].nope\\\"\""]);

    let (code, v) = raw(
        &server,
        Method::PATCH,
        &format!("{DEPLOYS}/web?fieldValidation=Strict&fieldManager=a"),
        Some("application/apply-patch+yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 2, wat: 1}\n",
    )
    .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{v}");
    assert!(v["message"].as_str().unwrap().ends_with("strict decoding error: unknown field \"spec.wat\""), "{v}");
    let (code, v) = raw(
        &server,
        Method::PATCH,
        &format!("{DEPLOYS}/web?fieldValidation=Sometimes"),
        Some("application/merge-patch+json"),
        "{}",
    )
    .await;
    // kube-apiserver 1.37 (measured by `kproof differential`): 422 on PatchOptions.
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["details"]["kind"], "PatchOptions", "{v}");
}

#[tokio::test]
async fn custom_resources_use_their_schema_and_kube_rs_copes_with_warnings() {
    let server = ApiServer::default();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}
    });
    let (code, v) =
        post(&server, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?fieldValidation=Strict", &crd).await;
    assert_eq!(code, StatusCode::CREATED, "a CRD itself has no unknown fields: {v}");
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1, "color": "red"}});
    let (code, v) = raw(
        &server,
        Method::POST,
        "/apis/example.com/v1/namespaces/default/widgets?fieldValidation=Strict",
        Some("application/json"),
        widget.to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(
        v["message"],
        "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"spec.color\""
    );

    // kube-rs sends no fieldValidation (Warn): the write works, the warning is only a header.
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "c"}, "data": {"a": "1"}})).unwrap();
    cms.create(&Default::default(), &cm).await.expect("create");
    let out = cms
        .patch("c", &PatchParams::default(), &Patch::Merge(json!({"data": {"b": "2"}, "extra": true})))
        .await
        .expect("a patch with warnings still succeeds");
    assert_eq!(out.data.unwrap().len(), 2);
}
