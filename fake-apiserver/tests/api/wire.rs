//! Smaller wire gaps: `/openapi/v2` (JSON and gnostic protobuf) for kubectl 1.27/1.28, a
//! repeated query parameter takes its first value, a create in a missing namespace is 404
//! before the name is validated, YAML answers for errors too.

use crate::common::{post, raw_full};
use axum::body::Body;
use fake_apiserver::ApiServer;
use http::{Method, StatusCode};
use serde_json::{Value, json};

const GNOSTIC: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

#[tokio::test]
async fn openapi_v2_serves_every_definition_as_json_and_as_gnostic_protobuf() {
    let server = ApiServer::default();
    let (code, headers, bytes) = raw_full(&server, Method::GET, "/openapi/v2", &[], Body::empty()).await;
    assert_eq!((code, headers["content-type"].to_str().unwrap()), (StatusCode::OK, "application/json"));
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(doc["swagger"], "2.0");
    let deployment = &doc["definitions"]["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(
        deployment["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
    );
    // References are Swagger 2.0 ones.
    assert_eq!(deployment["properties"]["spec"]["$ref"], "#/definitions/io.k8s.api.apps.v1.DeploymentSpec");
    assert!(!String::from_utf8_lossy(&bytes).contains("#/components/schemas/"));

    for accept in [GNOSTIC, "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", "application/json;q=0.5"] {
        let (code, headers, pb) =
            raw_full(&server, Method::GET, "/openapi/v2", &[("accept", Some(accept))], Body::empty()).await;
        assert_eq!(code, StatusCode::OK);
        if accept.contains("json") {
            assert_eq!(headers["content-type"], "application/json");
            continue;
        }
        assert_eq!(headers["content-type"], GNOSTIC);
        // Document.swagger (field 1) = "2.0", then the definitions with their vendor extensions.
        assert_eq!(&pb[..5], b"\x0a\x032.0");
        let text = String::from_utf8_lossy(&pb);
        assert!(text.contains("io.k8s.api.apps.v1.Deployment") && text.contains("x-kubernetes-group-version-kind"));
        assert!(text.contains("Number of desired pods."));
    }
    // Cached by what it is built from: the same bytes until a CRD changes them.
    let (_, headers, _) = raw_full(&server, Method::GET, "/openapi/v2", &[], Body::empty()).await;
    let etag = headers["etag"].to_str().unwrap().to_string();
    let (code, _, _) =
        raw_full(&server, Method::GET, "/openapi/v2", &[("if-none-match", Some(&etag))], Body::empty()).await;
    assert_eq!(code, StatusCode::NOT_MODIFIED);
}

#[tokio::test]
async fn a_repeated_query_parameter_takes_its_first_value() {
    let server = ApiServer::default();
    let uri = "/api/v1/namespaces/default/configmaps";
    let (code, _, _) = raw_full(&server, Method::GET, &format!("{uri}?limit=1&limit=abc"), &[], Body::empty()).await;
    assert_eq!(code, StatusCode::OK);
    let (code, _, _) = raw_full(&server, Method::GET, &format!("{uri}?limit=abc&limit=1"), &[], Body::empty()).await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_missing_namespace_is_reported_before_an_invalid_name() {
    let server = ApiServer::default();
    let (code, v) = post(
        &server,
        "/api/v1/namespaces/nope/configmaps",
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Not_A_Name"}}),
    )
    .await;
    assert_eq!((code, v["message"].as_str().unwrap()), (StatusCode::NOT_FOUND, "namespaces \"nope\" not found"));
}

#[tokio::test]
async fn yaml_answers_errors_too() {
    let server = ApiServer::default();
    let (code, headers, bytes) = raw_full(
        &server,
        Method::GET,
        "/api/v1/namespaces/default/configmaps/none",
        &[("accept", Some("application/yaml"))],
        Body::empty(),
    )
    .await;
    assert_eq!((code, headers["content-type"].to_str().unwrap()), (StatusCode::NOT_FOUND, "application/yaml"));
    let status: Value = serde_saphyr::from_str(std::str::from_utf8(&bytes).unwrap()).unwrap();
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["code"], 404);
}
