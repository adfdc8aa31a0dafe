//! OpenAPI v3: the index, group/version documents for built-ins and CRDs, GVK tags, PATCH
//! operations with `fieldValidation`, descriptions, and kube-apiserver's caching headers.

use crate::common::{get, post, raw_full};
use fake_apiserver::ApiServer;
use http::{Method, StatusCode};
use serde_json::{Value, json};

fn widget_crd(size_description: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size"}},
                "schema": {"openAPIV3Schema": {"type": "object", "description": "A widget.", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer", "description": size_description}}},
                    "status": {"type": "object", "properties": {"size": {"type": "integer"}}}
                }}}
            }]
        }
    })
}

async fn index(server: &ApiServer) -> Value {
    let (code, v) = get(server, "/openapi/v3").await;
    assert_eq!(code, StatusCode::OK);
    v
}

async fn doc_url(server: &ApiServer, path: &str) -> String {
    index(server).await["paths"][path]["serverRelativeURL"]
        .as_str()
        .unwrap_or_else(|| panic!("{path} not in the index"))
        .to_string()
}

/// The PATCH operation of `path` in `doc`.
fn patch_op<'a>(doc: &'a Value, path: &str) -> &'a Value {
    &doc["paths"][path]["patch"]
}

#[tokio::test]
async fn builtin_documents_carry_gvk_descriptions_and_field_validation() {
    let server = ApiServer::default();
    let idx = index(&server).await;
    for p in ["api/v1", "apis/apps/v1", "apis/batch/v1", "apis/apiextensions.k8s.io/v1"] {
        let url = idx["paths"][p]["serverRelativeURL"].as_str().unwrap_or_default();
        assert!(url.starts_with(&format!("/openapi/v3/{p}?hash=")), "{p}: {url}");
    }
    let url = doc_url(&server, "apis/apps/v1").await;
    let (code, doc) = get(&server, &url).await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.0.0");
    let schemas = &doc["components"]["schemas"];
    let deployment = &schemas["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(
        deployment["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
    );
    assert!(deployment["description"].as_str().unwrap_or_default().contains("declarative updates"));
    let replicas = &schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"];
    assert_eq!(replicas["type"], "integer");
    assert!(replicas["description"].as_str().unwrap_or_default().contains("Number of desired pods"));
    // A $ref with a description is wrapped in allOf, as kube-apiserver does.
    assert!(schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["template"]["allOf"][0]["$ref"].is_string());
    // Every $ref resolves inside the document.
    let text = doc.to_string();
    for r in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
        let name = &r[..r.find('"').unwrap_or(0)];
        assert!(schemas[name].is_object(), "dangling $ref {name}");
    }
    let op = patch_op(&doc, "/apis/apps/v1/namespaces/{namespace}/deployments/{name}");
    assert_eq!(op["x-kubernetes-group-version-kind"]["kind"], "Deployment");
    assert_eq!(op["x-kubernetes-action"], "patch");
    let params: Vec<&str> = op["parameters"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
    assert!(
        params.contains(&"fieldValidation") && params.contains(&"fieldManager") && params.contains(&"force"),
        "{params:?}"
    );
    let scale = patch_op(&doc, "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale");
    assert_eq!(scale["x-kubernetes-group-version-kind"]["kind"], "Scale");
    assert!(schemas["io.k8s.api.autoscaling.v1.Scale"].is_object());
    // Cluster-scoped: no namespace in the path.
    let (_, core) = get(&server, &doc_url(&server, "api/v1").await).await;
    assert!(core["paths"]["/api/v1/nodes/{name}"]["patch"].is_object());
    assert!(core["paths"]["/api/v1/namespaces/{namespace}/pods/{name}/status"]["patch"].is_object());
}

#[tokio::test]
async fn crd_documents_follow_the_crd_and_change_their_hash() {
    let server = ApiServer::default();
    assert!(index(&server).await["paths"]["apis/example.com/v1"].is_null());
    let (code, _) =
        post(&server, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &widget_crd("How big.")).await;
    assert_eq!(code, StatusCode::CREATED);
    let first = doc_url(&server, "apis/example.com/v1").await;
    let (code, doc) = get(&server, &first).await;
    assert_eq!(code, StatusCode::OK);
    let widget = &doc["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        widget["x-kubernetes-group-version-kind"],
        json!([{"group": "example.com", "kind": "Widget", "version": "v1"}])
    );
    assert_eq!(widget["properties"]["spec"]["properties"]["size"]["description"], "How big.");
    assert!(widget["properties"]["metadata"]["allOf"][0]["$ref"].is_string());
    assert!(doc["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].is_object());
    let op = patch_op(&doc, "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}");
    assert_eq!(op["x-kubernetes-group-version-kind"]["kind"], "Widget");
    let content = op["requestBody"]["content"].as_object().unwrap();
    assert!(content.contains_key("application/merge-patch+json"));
    assert!(!content.contains_key("application/strategic-merge-patch+json"), "CRs take no strategic merge patch");

    // Changing the CRD changes the hash; the old URL redirects to the new one.
    let (_, crd) = get(&server, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com").await;
    let mut changed = widget_crd("How big, in units.");
    changed["metadata"]["resourceVersion"] = crd["metadata"]["resourceVersion"].clone();
    let (code, _, _) = raw_full(
        &server,
        Method::PUT,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
        &[("content-type", Some("application/json"))],
        changed.to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    let second = doc_url(&server, "apis/example.com/v1").await;
    assert_ne!(first, second);
    let (code, headers, _) = raw_full(&server, Method::GET, &first, &[], "").await;
    assert_eq!(code, StatusCode::MOVED_PERMANENTLY);
    assert_eq!(headers["location"].to_str().unwrap(), second);
    let (_, doc) = get(&server, &second).await;
    assert_eq!(
        doc["components"]["schemas"]["com.example.v1.Widget"]["properties"]["spec"]["properties"]["size"]["description"],
        "How big, in units."
    );

    // Deleting the CRD removes the group/version.
    let (code, _, _) = raw_full(
        &server,
        Method::DELETE,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
        &[],
        "",
    )
    .await;
    assert!(code.is_success());
    let gone = async {
        loop {
            if index(&server).await["paths"]["apis/example.com/v1"].is_null() {
                break;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), gone).await.expect("the CRD's document disappears");
}

#[tokio::test]
async fn caching_headers_etags_and_content_negotiation() {
    let server = ApiServer::default();
    let url = doc_url(&server, "apis/apps/v1").await;
    let hash = url.split("hash=").nth(1).unwrap().to_string();
    let (code, headers, _) = raw_full(&server, Method::GET, &url, &[("accept", Some("application/json"))], "").await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(headers["etag"].to_str().unwrap(), format!("\"{hash}\""));
    assert_eq!(headers["cache-control"], "public, immutable");
    assert!(headers.contains_key("expires"));
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers["vary"], "Accept");
    // Without the hash: no immutable caching, same ETag.
    let (code, headers, _) = raw_full(&server, Method::GET, "/openapi/v3/apis/apps/v1", &[], "").await;
    assert_eq!(code, StatusCode::OK);
    assert!(!headers.contains_key("cache-control"));
    assert_eq!(headers["etag"].to_str().unwrap(), format!("\"{hash}\""));
    // A matching If-None-Match gets 304.
    let etag = format!("\"{hash}\"");
    let (code, _, body) =
        raw_full(&server, Method::GET, "/openapi/v3/apis/apps/v1", &[("if-none-match", Some(&etag))], "").await;
    assert_eq!((code, body.len()), (StatusCode::NOT_MODIFIED, 0));
    // Only protobuf acceptable: 406 (the protobuf encoding is not served).
    let pb = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf";
    let (code, _, _) = raw_full(&server, Method::GET, "/openapi/v3/apis/apps/v1", &[("accept", Some(pb))], "").await;
    assert_eq!(code, StatusCode::NOT_ACCEPTABLE);
    // Unknown group/version: 404. (`/openapi/v2` is served: see `wire.rs`.)
    let (code, _) = get(&server, "/openapi/v3/apis/nope.example.com/v1").await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    let (code, v2) = get(&server, "/openapi/v2").await;
    assert_eq!((code, v2["swagger"].as_str()), (StatusCode::OK, Some("2.0")));
}
