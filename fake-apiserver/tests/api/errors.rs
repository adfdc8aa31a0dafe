//! Bad input gets the `Status` kube-apiserver sends and leaves the store unchanged.
//!
//! Every test starts a fresh server, takes a fingerprint of the store (resourceVersion and
//! timeline length), sends the bad request, checks the HTTP code and the `Status` body (reason,
//! code, message, details), then checks the fingerprint did not move and, where an object is
//! involved, that a GET still shows it as it was.

use crate::common::{get, post, raw, raw_full, raw_with, store_fingerprint};
use axum::body::Body;
use fake_apiserver::{ApiServer, Config};
use http::{Method, StatusCode};
use rstest::rstest;
use serde_json::{Value, json};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const SECRETS: &str = "/api/v1/namespaces/default/secrets";
const PODS: &str = "/api/v1/namespaces/default/pods";
const SERVICES: &str = "/api/v1/namespaces/default/services";
const NAMESPACES: &str = "/api/v1/namespaces";
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

const JSON: Option<&str> = Some("application/json");
const MERGE: Option<&str> = Some("application/merge-patch+json");
const JSON_PATCH: Option<&str> = Some("application/json-patch+json");

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// Checks that the answer is a failure `Status` with `code` (as HTTP status and in the body),
/// `reason` and a non-empty message, and returns the message.
#[track_caller]
fn assert_status<'a>(http: StatusCode, body: &'a Value, code: u16, reason: &str) -> &'a str {
    assert_eq!(http.as_u16(), code, "HTTP status; body: {body}");
    assert_eq!(body["kind"], "Status", "{body}");
    assert_eq!(body["apiVersion"], "v1", "{body}");
    assert!(body["metadata"].is_object(), "Status without metadata: {body}");
    assert_eq!(body["status"], "Failure", "{body}");
    assert_eq!(body["reason"], reason, "{body}");
    assert_eq!(body["code"], code, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(!message.is_empty(), "Status without a message: {body}");
    message
}

/// Checks `details.name`, `details.group` and `details.kind` (an empty expectation means the
/// field must be absent, as kube-apiserver omits empty details fields).
#[track_caller]
fn assert_details(body: &Value, name: &str, group: &str, kind: &str) {
    let d = &body["details"];
    assert!(d.is_object(), "Status without details: {body}");
    for (field, want) in [("name", name), ("group", group), ("kind", kind)] {
        if want.is_empty() {
            assert!(d.get(field).is_none(), "details.{field} should be absent: {body}");
        } else {
            assert_eq!(d[field], want, "details.{field}: {body}");
        }
    }
}

/// The `details.causes[].field` values of a `Status`.
fn cause_fields(body: &Value) -> Vec<&str> {
    body["details"]["causes"]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["field"].as_str()).collect())
        .unwrap_or_default()
}

/// Asserts the store did not move since `before` was taken.
async fn assert_unchanged(server: &ApiServer, before: (u64, usize), what: &str) {
    assert_eq!(store_fingerprint(server).await, before, "the store changed after {what}");
}

/// Asserts a GET of `uri` answers 200 with exactly `expected`.
async fn assert_object(server: &ApiServer, uri: &str, expected: &Value) {
    let (code, v) = get(server, uri).await;
    assert_eq!(code, StatusCode::OK, "GET {uri}: {v}");
    assert_eq!(&v, expected, "GET {uri} shows a changed object");
}

/// Asserts a GET of `uri` answers 404.
async fn assert_absent(server: &ApiServer, uri: &str) {
    let (code, v) = get(server, uri).await;
    assert_eq!(code, StatusCode::NOT_FOUND, "GET {uri} should be 404: {v}");
}

/// POSTs `body` to `collection` and returns the created object.
async fn create(server: &ApiServer, collection: &str, body: Value) -> Value {
    let (code, v) = post(server, collection, &body).await;
    assert_eq!(code, StatusCode::CREATED, "POST {collection}: {v}");
    v
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx"}]}
            }
        }
    })
}

fn widget(name: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": 1}})
}

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}}
            }]
        }
    })
}

/// Registers the `widgets.example.com` CRD, so widgets are served at [`WIDGETS`].
async fn install_widgets(server: &ApiServer) {
    create(server, CRDS, widget_crd()).await;
    let (code, v) = get(server, WIDGETS).await;
    assert_eq!(code, StatusCode::OK, "widgets are not served after the CRD was created: {v}");
}

fn item(collection: &str, name: &str) -> String {
    format!("{collection}/{name}")
}

// ---------------------------------------------------------------------------
// 1. Malformed bodies
// ---------------------------------------------------------------------------

/// kube-apiserver's decoder rejects a body that is not a JSON object with 400 BadRequest
/// ("couldn't get version/kind; json parse error: ...") on create and update alike.
#[tokio::test]
async fn malformed_json_body_is_bad_request() {
    let server = ApiServer::default();
    let old = create(&server, CMS, configmap("a")).await;
    let before = store_fingerprint(&server).await;
    let bodies = [
        r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"#,
        "{not json}",
        "[1, 2]",
        "\"a string\"",
        "42",
        "",
    ];
    for body in bodies {
        let (code, v) = raw(&server, Method::POST, CMS, JSON, body).await;
        assert_status(code, &v, 400, "BadRequest");
        let (code, v) = raw(&server, Method::PUT, &item(CMS, "a"), JSON, body).await;
        assert_status(code, &v, 400, "BadRequest");
    }
    let (code, v) = raw(&server, Method::POST, CMS, Some("application/yaml"), "metadata: [unclosed").await;
    assert_status(code, &v, 400, "BadRequest");
    let (code, v) = raw(&server, Method::PATCH, &item(CMS, "a"), MERGE, "{\"data\": ").await;
    assert_status(code, &v, 400, "BadRequest");
    assert_unchanged(&server, before, "malformed bodies").await;
    assert_object(&server, &item(CMS, "a"), &old).await;
}

// ---------------------------------------------------------------------------
// 2. Type meta that does not match the URL
// ---------------------------------------------------------------------------

/// A body whose kind or apiVersion differs from the resource in the URL is 400 BadRequest. A
/// body of another built-in kind is decoded as that kind and cannot be converted (create.go's
/// `transformDecodeError`, kubernetes v1.37.2).
#[tokio::test]
async fn kind_or_api_version_that_does_not_match_the_url_is_bad_request() {
    let server = ApiServer::default();
    let before = store_fingerprint(&server).await;

    let (code, v) = post(&server, SECRETS, &configmap("cm-as-secret")).await;
    let message = assert_status(code, &v, 400, "BadRequest");
    assert_eq!(
        message,
        "ConfigMap in version \"v1\" cannot be handled as a Secret: converting (v1.ConfigMap) to (core.Secret): unknown conversion"
    );

    let (code, v) = post(&server, CMS, &deployment("deploy-as-cm")).await;
    let message = assert_status(code, &v, 400, "BadRequest");
    assert_eq!(
        message,
        "Deployment in version \"v1\" cannot be handled as a ConfigMap: converting (v1.Deployment) to (core.ConfigMap): unknown conversion"
    );

    let mut v2 = configmap("v2-cm");
    v2["apiVersion"] = json!("v2");
    let (code, v) = post(&server, CMS, &v2).await;
    let message = assert_status(code, &v, 400, "BadRequest");
    assert!(message.contains("v2"), "message should name the apiVersion in the data: {message}");

    assert_unchanged(&server, before, "mismatched type meta").await;
    for name in ["cm-as-secret", "deploy-as-cm", "v2-cm"] {
        assert_absent(&server, &item(CMS, name)).await;
        assert_absent(&server, &item(SECRETS, name)).await;
    }
}

/// `apiVersion` and `kind` must be strings: kube-apiserver's decoder fails on
/// `"apiVersion": 5` with 400 ("couldn't get version/kind; json parse error: json: cannot
/// unmarshal number into Go struct field .apiVersion of type string"); it does not silently
/// replace the value.
#[tokio::test]
async fn non_string_kind_or_api_version_is_bad_request() {
    let server = ApiServer::default();
    let before = store_fingerprint(&server).await;
    for (field, value) in [("apiVersion", json!(5)), ("kind", json!(7)), ("kind", json!({"k": "ConfigMap"}))] {
        let mut body = configmap("typed");
        body[field] = value;
        let (code, v) = post(&server, CMS, &body).await;
        assert_status(code, &v, 400, "BadRequest");
    }
    assert_unchanged(&server, before, "non-string type meta").await;
    assert_absent(&server, &item(CMS, "typed")).await;
}

// ---------------------------------------------------------------------------
// 3. Name and namespace that do not match the URL
// ---------------------------------------------------------------------------

/// An update whose body names another object is 400 BadRequest ("the name of the object (b)
/// does not match the name on the URL (a)"); a body namespace other than the URL's is 400
/// BadRequest on create and update.
#[tokio::test]
async fn name_or_namespace_that_does_not_match_the_url_is_bad_request() {
    let server = ApiServer::default();
    let old = create(&server, CMS, configmap("a")).await;
    let before = store_fingerprint(&server).await;

    let (code, v) = raw(&server, Method::PUT, &item(CMS, "a"), JSON, configmap("b").to_string()).await;
    let message = assert_status(code, &v, 400, "BadRequest");
    assert!(message.contains("(b)") && message.contains("(a)"), "message should name both names: {message}");

    let mut other = configmap("c");
    other["metadata"]["namespace"] = json!("other");
    let (code, v) = post(&server, CMS, &other).await;
    let message = assert_status(code, &v, 400, "BadRequest");
    assert!(message.contains("namespace"), "{message}");

    let mut moved = old.clone();
    moved["metadata"]["namespace"] = json!("kube-system");
    let (code, v) = raw(&server, Method::PUT, &item(CMS, "a"), JSON, moved.to_string()).await;
    let message = assert_status(code, &v, 400, "BadRequest");
    assert!(message.contains("namespace"), "{message}");

    assert_unchanged(&server, before, "name/namespace mismatches").await;
    assert_object(&server, &item(CMS, "a"), &old).await;
    assert_absent(&server, &item(CMS, "b")).await;
    assert_absent(&server, &item(CMS, "c")).await;
    assert_absent(&server, "/api/v1/namespaces/other/configmaps/c").await;
}

// ---------------------------------------------------------------------------
// 4. Unknown resources and objects
// ---------------------------------------------------------------------------

/// A URL that names no served resource is 404 NotFound "the server could not find the
/// requested resource", whatever the verb.
#[tokio::test]
async fn unknown_resource_is_not_found() {
    let server = ApiServer::default();
    let before = store_fingerprint(&server).await;
    let urls = [
        "/api/v1/namespaces/default/widgets",
        "/api/v1/namespaces/default/widgets/w",
        "/apis/nope.example.com/v1/things",
        "/apis/nope.example.com/v1/namespaces/default/things",
        "/apis/nope.example.com/v1/namespaces/default/things/t",
        "/api/v2/namespaces/default/configmaps",
        "/apis/apps/v1/namespaces/default/widgets",
    ];
    for url in urls {
        for method in [Method::GET, Method::POST, Method::PUT, Method::DELETE] {
            let (code, v) = raw(&server, method.clone(), url, JSON, configmap("x").to_string()).await;
            let message = assert_status(code, &v, 404, "NotFound");
            assert_eq!(message, "the server could not find the requested resource", "{method} {url}");
        }
    }
    assert_unchanged(&server, before, "requests to unknown resources").await;
}

/// A missing object is 404 NotFound `configmaps "nope" not found` with `details.name` and
/// `details.kind` set to the resource plural (and `details.group` for grouped resources).
#[tokio::test]
async fn unknown_object_is_not_found_with_details() {
    let server = ApiServer::default();
    install_widgets(&server).await;
    let before = store_fingerprint(&server).await;

    let uri = item(CMS, "nope");
    let requests = [
        (Method::GET, None, String::new()),
        (Method::PUT, JSON, configmap("nope").to_string()),
        (Method::PATCH, MERGE, r#"{"data": {"k": "w"}}"#.to_string()),
        (Method::DELETE, None, String::new()),
    ];
    for (method, ct, body) in requests {
        let (code, v) = raw(&server, method.clone(), &uri, ct, body).await;
        let message = assert_status(code, &v, 404, "NotFound");
        assert_eq!(message, r#"configmaps "nope" not found"#, "{method}");
        assert_details(&v, "nope", "", "configmaps");
    }

    let (code, v) = get(&server, &item(WIDGETS, "nope")).await;
    let message = assert_status(code, &v, 404, "NotFound");
    assert_eq!(message, r#"widgets.example.com "nope" not found"#);
    assert_details(&v, "nope", "example.com", "widgets");

    let (code, v) = get(&server, &item(DEPLOYS, "nope")).await;
    assert_status(code, &v, 404, "NotFound");
    assert_details(&v, "nope", "apps", "deployments");

    assert_unchanged(&server, before, "requests for missing objects").await;
    assert_absent(&server, &uri).await;
}

// ---------------------------------------------------------------------------
// 5. Selectors
// ---------------------------------------------------------------------------

/// A label selector `labels.Parse` rejects is 400 BadRequest on list, watch and
/// deletecollection, with the parser's message; a deletecollection with a bad selector deletes
/// nothing.
#[rstest]
#[case::unclosed_set(
    "a%20in%20(",
    "unable to parse requirement: unable to parse requirement: found '', expected: ',', ')' or identifier"
)]
#[case::bad_key(
    "-x=y",
    "unable to parse requirement: unable to parse requirement: <nil>: Invalid value: \"-x\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)]
#[case::triple_equals(
    "a%3D%3D%3Db",
    "unable to parse requirement: unable to parse requirement: found '=', expected: identifier"
)]
#[case::unfinished_set(
    "x%20notin%20(a,",
    "unable to parse requirement: unable to parse requirement: found '', expected: ',', or identifier"
)]
#[tokio::test]
async fn invalid_label_selector_is_bad_request(#[case] selector: &str, #[case] message: &str) {
    let server = ApiServer::default();
    let old = create(&server, CMS, configmap("keep")).await;
    let before = store_fingerprint(&server).await;
    for query in [format!("labelSelector={selector}"), format!("watch=true&timeoutSeconds=1&labelSelector={selector}")]
    {
        let (code, v) = get(&server, &format!("{CMS}?{query}")).await;
        assert_eq!(assert_status(code, &v, 400, "BadRequest"), message, "{query}");
    }
    let (code, v) = raw(&server, Method::DELETE, &format!("{CMS}?labelSelector={selector}"), None, Body::empty()).await;
    assert_eq!(assert_status(code, &v, 400, "BadRequest"), message, "deletecollection");
    assert_unchanged(&server, before, "invalid label selectors").await;
    assert_object(&server, &item(CMS, "keep"), &old).await;
}

/// A field selector on a field the kind does not support is 400 BadRequest "field label not
/// supported: spec.foo"; so is one that does not parse. `spec.nodeName` on pods is supported.
#[tokio::test]
async fn unsupported_field_selector_is_bad_request() {
    let server = ApiServer::default();
    let old = create(&server, CMS, configmap("keep")).await;
    let before = store_fingerprint(&server).await;

    let (code, v) = get(&server, &format!("{CMS}?fieldSelector=spec.foo%3Dbar")).await;
    let message = assert_status(code, &v, 400, "BadRequest");
    assert!(message.contains("spec.foo"), "message should name the field: {message}");

    let (code, v) = get(&server, &format!("{CMS}?fieldSelector=metadata.name")).await;
    assert_status(code, &v, 400, "BadRequest");

    let (code, v) =
        raw(&server, Method::DELETE, &format!("{CMS}?fieldSelector=spec.foo%3Dbar"), None, Body::empty()).await;
    assert_status(code, &v, 400, "BadRequest");

    let (code, v) = get(&server, &format!("{PODS}?fieldSelector=spec.nodeName%3Dn1")).await;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_eq!(v["kind"], "PodList");

    assert_unchanged(&server, before, "unsupported field selectors").await;
    assert_object(&server, &item(CMS, "keep"), &old).await;
}

// ---------------------------------------------------------------------------
// 6. Oversized bodies
// ---------------------------------------------------------------------------

/// A body over the 3 MiB default limit is 413 RequestEntityTooLarge "Request entity too
/// large: limit is 3145728", with or without a Content-Length, on create and update.
#[tokio::test]
async fn oversized_body_is_request_entity_too_large() {
    let server = ApiServer::default();
    assert_eq!(server.config().max_request_body_bytes, 3 * 1024 * 1024);
    let old = create(&server, CMS, configmap("big")).await;
    let before = store_fingerprint(&server).await;

    let mut big = configmap("big");
    big["data"]["k"] = json!("x".repeat(4 * 1024 * 1024));
    let body = big.to_string();
    let length = body.len().to_string();
    let attempts = [
        (Method::POST, CMS.to_string(), None),
        (Method::POST, CMS.to_string(), Some(length.as_str())),
        (Method::PUT, item(CMS, "big"), None),
        (Method::PUT, item(CMS, "big"), Some(length.as_str())),
        (Method::PATCH, item(CMS, "big"), None),
    ];
    for (method, uri, content_length) in attempts {
        let ct = if method == Method::PATCH { MERGE } else { JSON };
        let headers = [("content-type", ct), ("content-length", content_length)];
        let (code, v) = raw_with(&server, method.clone(), &uri, &headers, body.clone()).await;
        let message = assert_status(code, &v, 413, "RequestEntityTooLarge");
        assert!(message.contains("3145728"), "{method} {uri}: message should give the limit: {message}");
    }
    assert_unchanged(&server, before, "oversized bodies").await;
    assert_object(&server, &item(CMS, "big"), &old).await;
}

/// `Config::max_request_body_bytes` is the limit, and it also holds for a streamed body that
/// declares no Content-Length; a body under the limit is still accepted.
#[tokio::test]
async fn custom_body_limit_applies_to_streamed_bodies() {
    let server = ApiServer::new(Config { max_request_body_bytes: 1024, ..Default::default() });
    let before = store_fingerprint(&server).await;

    let mut big = configmap("streamed");
    big["data"]["k"] = json!("x".repeat(4096));
    let bytes = big.to_string().into_bytes();
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = bytes.chunks(300).map(|c| Ok(c.to_vec())).collect();
    let body = Body::from_stream(futures::stream::iter(chunks));
    let (code, v) = raw(&server, Method::POST, CMS, JSON, body).await;
    let message = assert_status(code, &v, 413, "RequestEntityTooLarge");
    assert!(message.contains("1024"), "message should give the limit: {message}");

    let (code, v) = raw(&server, Method::POST, CMS, JSON, big.to_string()).await;
    assert_status(code, &v, 413, "RequestEntityTooLarge");
    assert_unchanged(&server, before, "bodies over a custom limit").await;
    assert_absent(&server, &item(CMS, "streamed")).await;

    let small = configmap("small");
    assert!(small.to_string().len() < 1024);
    create(&server, CMS, small).await;
}

// ---------------------------------------------------------------------------
// 7. Missing namespace
// ---------------------------------------------------------------------------

/// Creating into a namespace that does not exist is 404 NotFound `namespaces "nope" not
/// found`, with `details.name` = the namespace and `details.kind` = `namespaces`.
#[tokio::test]
async fn create_in_missing_namespace_is_not_found() {
    let server = ApiServer::default();
    install_widgets(&server).await;
    let before = store_fingerprint(&server).await;
    let urls = ["/api/v1/namespaces/nope/configmaps", "/apis/example.com/v1/namespaces/nope/widgets"];
    for (url, body) in urls.into_iter().zip([configmap("c"), widget("w")]) {
        let (code, v) = post(&server, url, &body).await;
        let message = assert_status(code, &v, 404, "NotFound");
        assert_eq!(message, r#"namespaces "nope" not found"#, "POST {url}");
        assert_details(&v, "nope", "", "namespaces");
    }
    assert_unchanged(&server, before, "creates in a missing namespace").await;
    assert_absent(&server, "/api/v1/namespaces/nope").await;
}

// ---------------------------------------------------------------------------
// 8. Conflicts
// ---------------------------------------------------------------------------

/// Creating an object that exists is 409 AlreadyExists `configmaps "a" already exists` with
/// `details.name` and `details.kind`; the existing object is untouched.
#[tokio::test]
async fn duplicate_create_is_already_exists() {
    let server = ApiServer::default();
    let old = create(&server, CMS, configmap("a")).await;
    let before = store_fingerprint(&server).await;
    let mut again = configmap("a");
    again["data"]["k"] = json!("different");
    let (code, v) = post(&server, CMS, &again).await;
    let message = assert_status(code, &v, 409, "AlreadyExists");
    assert_eq!(message, r#"configmaps "a" already exists"#);
    assert_details(&v, "a", "", "configmaps");
    assert_unchanged(&server, before, "a duplicate create").await;
    assert_object(&server, &item(CMS, "a"), &old).await;
}

/// An update carrying an old `metadata.resourceVersion` is 409 Conflict "Operation cannot be
/// fulfilled on configmaps \"a\": the object has been modified; please apply your changes to
/// the latest version and try again"; so is a patch that names an old resourceVersion.
#[tokio::test]
async fn stale_resource_version_is_conflict() {
    let server = ApiServer::default();
    let first = create(&server, CMS, configmap("a")).await;
    let (code, current) = raw(&server, Method::PATCH, &item(CMS, "a"), MERGE, r#"{"data": {"k": "v2"}}"#).await;
    assert_eq!(code, StatusCode::OK, "{current}");
    assert_ne!(first["metadata"]["resourceVersion"], current["metadata"]["resourceVersion"]);
    let before = store_fingerprint(&server).await;

    let mut stale = first.clone();
    stale["data"]["k"] = json!("v3");
    let (code, v) = raw(&server, Method::PUT, &item(CMS, "a"), JSON, stale.to_string()).await;
    let message = assert_status(code, &v, 409, "Conflict");
    assert!(message.contains("the object has been modified"), "{message}");
    assert!(message.contains(r#"configmaps "a""#), "{message}");
    assert_details(&v, "a", "", "configmaps");

    let patch = json!({"metadata": {"resourceVersion": first["metadata"]["resourceVersion"]}, "data": {"k": "v3"}});
    let (code, v) = raw(&server, Method::PATCH, &item(CMS, "a"), MERGE, patch.to_string()).await;
    let message = assert_status(code, &v, 409, "Conflict");
    assert!(message.contains("the object has been modified"), "{message}");

    assert_unchanged(&server, before, "stale updates").await;
    assert_object(&server, &item(CMS, "a"), &current).await;
}

const NO_UID: &str = "00000000-0000-0000-0000-000000000000";

/// A DELETE whose `preconditions.uid` (or `preconditions.resourceVersion`) does not match
/// the object is 409 Conflict naming both values, and the object stays.
#[tokio::test]
async fn delete_with_mismatched_precondition_is_conflict() {
    let server = ApiServer::default();
    let old = create(&server, CMS, configmap("a")).await;
    let uid = old["metadata"]["uid"].as_str().expect("uid").to_string();
    let rv = old["metadata"]["resourceVersion"].as_str().expect("resourceVersion").to_string();
    let before = store_fingerprint(&server).await;
    let cases = [(json!({"uid": NO_UID}), NO_UID, uid.as_str()), (json!({"resourceVersion": "1"}), "1", rv.as_str())];
    for (preconditions, wanted, actual) in cases {
        let body = json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": preconditions});
        let (code, v) = raw(&server, Method::DELETE, &item(CMS, "a"), JSON, body.to_string()).await;
        let message = assert_status(code, &v, 409, "Conflict");
        assert!(message.contains(r#""a""#), "{message}");
        assert!(message.contains(wanted) && message.contains(actual), "message should give both values: {message}");
        assert_eq!(v["details"]["name"], "a", "{v}");
    }
    assert_unchanged(&server, before, "deletes with failed preconditions").await;
    assert_object(&server, &item(CMS, "a"), &old).await;
}

/// Delete preconditions are checked first in `rest.BeforeDelete`, whose Conflict is built
/// from the *Kind*: `Operation cannot be fulfilled on ConfigMap "a": the UID in the
/// precondition (X) does not match the UID in record (Y). The object might have been deleted
/// and then recreated`, with `details.kind: ConfigMap` (and the ResourceVersion twin).
#[tokio::test]
async fn delete_precondition_conflict_reads_like_before_delete() {
    let server = ApiServer::default();
    let old = create(&server, CMS, configmap("a")).await;
    let uid = old["metadata"]["uid"].as_str().expect("uid").to_string();
    let rv = old["metadata"]["resourceVersion"].as_str().expect("resourceVersion").to_string();
    let before = store_fingerprint(&server).await;

    let body = json!({"preconditions": {"uid": NO_UID}});
    let (code, v) = raw(&server, Method::DELETE, &item(CMS, "a"), JSON, body.to_string()).await;
    let message = assert_status(code, &v, 409, "Conflict");
    assert_eq!(
        message,
        format!(
            r#"Operation cannot be fulfilled on ConfigMap "a": the UID in the precondition ({NO_UID}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"#
        )
    );
    assert_details(&v, "a", "", "ConfigMap");

    let body = json!({"preconditions": {"resourceVersion": "1"}});
    let (code, v) = raw(&server, Method::DELETE, &item(CMS, "a"), JSON, body.to_string()).await;
    let message = assert_status(code, &v, 409, "Conflict");
    assert_eq!(
        message,
        format!(
            r#"Operation cannot be fulfilled on ConfigMap "a": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ({rv}). The object might have been modified"#
        )
    );
    assert_details(&v, "a", "", "ConfigMap");

    let (code, v) = raw(
        &server,
        Method::DELETE,
        &item(DEPLOYS, "nope"),
        JSON,
        json!({"preconditions": {"uid": NO_UID}}).to_string(),
    )
    .await;
    assert_status(code, &v, 404, "NotFound");
    assert_unchanged(&server, before, "deletes with failed preconditions").await;
    assert_object(&server, &item(CMS, "a"), &old).await;
}

// ---------------------------------------------------------------------------
// 9. Invalid names
// ---------------------------------------------------------------------------

/// Names are validated per kind and failures are 422 Invalid with a `metadata.name` cause:
/// DNS-1123 subdomains for most kinds, DNS-1035 labels for services, DNS-1123 labels for
/// namespaces, and a name (or generateName) is required.
#[tokio::test]
async fn invalid_names_are_invalid() {
    let server = ApiServer::default();
    let before = store_fingerprint(&server).await;

    let (code, v) = post(&server, CMS, &configmap("Bad_Name")).await;
    let message = assert_status(code, &v, 422, "Invalid");
    assert!(
        message.starts_with(r#"ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name""#),
        "{message}"
    );
    assert_details(&v, "Bad_Name", "", "ConfigMap");
    assert_eq!(v["details"]["causes"][0]["field"], "metadata.name", "{v}");
    assert_eq!(v["details"]["causes"][0]["reason"], "FieldValueInvalid", "{v}");

    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "-abc"},
        "spec": {"ports": [{"port": 80}], "selector": {"app": "x"}}
    });
    // A DNS-1123 label since RelaxedServiceNameValidation went GA (1.37): "1abc" is a valid
    // name (kube-apiserver v1.37.2 created "1-test-service" in `kproof differential`).
    let (code, v) = post(&server, SERVICES, &service).await;
    let message = assert_status(code, &v, 422, "Invalid");
    assert_eq!(
        message,
        r#"Service "-abc" is invalid: metadata.name: Invalid value: "-abc": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"#
    );
    assert_details(&v, "-abc", "", "Service");
    assert!(cause_fields(&v).contains(&"metadata.name"), "{v}");

    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "has.dot"}});
    let (code, v) = post(&server, NAMESPACES, &namespace).await;
    let message = assert_status(code, &v, 422, "Invalid");
    // IsDNS1123Label says why a subdomain is no label.
    assert_eq!(
        message,
        r#"Namespace "has.dot" is invalid: metadata.name: Invalid value: "has.dot": must not contain dots"#
    );
    assert!(cause_fields(&v).contains(&"metadata.name"), "{v}");

    let nameless = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"a": "b"}}});
    let (code, v) = post(&server, CMS, &nameless).await;
    let message = assert_status(code, &v, 422, "Invalid");
    assert!(message.contains("name or generateName is required"), "{message}");
    assert_details(&v, "", "", "ConfigMap");
    assert_eq!(v["details"]["causes"][0]["field"], "metadata.name", "{v}");
    assert_eq!(v["details"]["causes"][0]["reason"], "FieldValueRequired", "{v}");

    assert_unchanged(&server, before, "invalid names").await;
    assert_absent(&server, &item(CMS, "Bad_Name")).await;
    assert_absent(&server, &item(SERVICES, "-abc")).await;
    assert_absent(&server, &item(NAMESPACES, "has.dot")).await;
}

/// Label keys and values are validated on create (`ValidateObjectMeta`): a bad key or a
/// value over 63 characters is 422 Invalid with a `metadata.labels` cause.
#[tokio::test]
async fn invalid_labels_are_invalid() {
    let server = ApiServer::default();
    let before = store_fingerprint(&server).await;
    for labels in
        [json!({"bad key!": "v"}), json!({"-x": "v"}), json!({"k": "v".repeat(64)}), json!({"k": "bad value"})]
    {
        let mut body = configmap("labelled");
        body["metadata"]["labels"] = labels.clone();
        let (code, v) = post(&server, CMS, &body).await;
        assert_status(code, &v, 422, "Invalid");
        assert_details(&v, "labelled", "", "ConfigMap");
        assert!(cause_fields(&v).iter().any(|f| f.starts_with("metadata.labels")), "labels {labels}: {v}");
    }
    assert_unchanged(&server, before, "invalid labels").await;
    assert_absent(&server, &item(CMS, "labelled")).await;
}

// ---------------------------------------------------------------------------
// 10. Unsupported media types
// ---------------------------------------------------------------------------

/// PATCH bodies must be one of the patch media types the resource supports, else 415
/// UnsupportedMediaType: strategic merge patch is for built-ins only, `text/plain` and
/// `application/json` are no patch types.
#[tokio::test]
async fn unsupported_patch_media_types_are_415() {
    let server = ApiServer::default();
    install_widgets(&server).await;
    let old_widget = create(&server, WIDGETS, widget("w")).await;
    let old_cm = create(&server, CMS, configmap("a")).await;
    let before = store_fingerprint(&server).await;

    let (code, v) = raw(
        &server,
        Method::PATCH,
        &item(WIDGETS, "w"),
        Some("application/strategic-merge-patch+json"),
        r#"{"spec": {"size": 2}}"#,
    )
    .await;
    assert_status(code, &v, 415, "UnsupportedMediaType");

    for ct in ["text/plain", "application/json"] {
        let (code, v) = raw(&server, Method::PATCH, &item(CMS, "a"), Some(ct), r#"{"data": {"k": "changed"}}"#).await;
        assert_status(code, &v, 415, "UnsupportedMediaType");
    }

    let (code, v) = raw(&server, Method::POST, CMS, Some("text/plain"), configmap("b").to_string()).await;
    assert_status(code, &v, 415, "UnsupportedMediaType");

    assert_unchanged(&server, before, "unsupported media types").await;
    assert_object(&server, &item(WIDGETS, "w"), &old_widget).await;
    assert_object(&server, &item(CMS, "a"), &old_cm).await;
    assert_absent(&server, &item(CMS, "b")).await;
}

/// The 415 message lists the media types the verb accepts ("the body of the request was in
/// an unknown format - accepted media types include: application/json-patch+json,
/// application/merge-patch+json, ..."): patch types for PATCH, object types for POST/PUT,
/// and it names the media type that was sent, never an internal name.
#[tokio::test]
async fn unsupported_media_type_message_lists_what_the_verb_accepts() {
    let server = ApiServer::default();
    create(&server, CMS, configmap("a")).await;
    let before = store_fingerprint(&server).await;

    for ct in ["text/plain", "application/json"] {
        let (code, v) = raw(&server, Method::PATCH, &item(CMS, "a"), Some(ct), "{}").await;
        let message = assert_status(code, &v, 415, "UnsupportedMediaType");
        assert!(message.contains("application/merge-patch+json"), "PATCH {ct}: should list the patch types: {message}");
        assert!(message.contains("application/json-patch+json"), "PATCH {ct}: should list the patch types: {message}");
    }

    for ct in ["application/merge-patch+json", "text/plain"] {
        let (code, v) = raw(&server, Method::POST, CMS, Some(ct), configmap("b").to_string()).await;
        let message = assert_status(code, &v, 415, "UnsupportedMediaType");
        assert!(message.contains("application/json"), "POST {ct}: should list the object types: {message}");
        assert!(!message.contains("MergePatch"), "POST {ct}: message names an internal type: {message}");
    }
    assert_unchanged(&server, before, "unsupported media types").await;
}

// ---------------------------------------------------------------------------
// 11. JSON patch failures
// ---------------------------------------------------------------------------

/// A JSON patch whose `test` op fails (or whose op cannot apply) is 422 Invalid "the server
/// rejected our request due to an error in our request"; no op of the patch is applied.
#[tokio::test]
async fn failed_json_patch_test_is_invalid() {
    let server = ApiServer::default();
    let old = create(&server, CMS, configmap("a")).await;
    let before = store_fingerprint(&server).await;
    let patches = [
        json!([
            {"op": "replace", "path": "/data/k", "value": "first"},
            {"op": "test", "path": "/data/k", "value": "not-the-value"},
            {"op": "replace", "path": "/data/k", "value": "second"}
        ]),
        json!([{"op": "remove", "path": "/data/missing"}]),
    ];
    for patch in patches {
        let (code, v) = raw(&server, Method::PATCH, &item(CMS, "a"), JSON_PATCH, patch.to_string()).await;
        let message = assert_status(code, &v, 422, "Invalid");
        assert!(message.contains("the server rejected our request due to an error in our request"), "{message}");
    }
    assert_unchanged(&server, before, "failed JSON patches").await;
    assert_object(&server, &item(CMS, "a"), &old).await;
}

/// A JSON patch body that is not a JSON array of operations is 400 BadRequest.
#[tokio::test]
async fn json_patch_that_is_not_an_array_is_bad_request() {
    let server = ApiServer::default();
    let old = create(&server, CMS, configmap("a")).await;
    let before = store_fingerprint(&server).await;
    for body in [r#"{"op": "add", "path": "/data/x", "value": "y"}"#, "\"add\"", "[{\"op\": \"add\", \"path\": "] {
        let (code, v) = raw(&server, Method::PATCH, &item(CMS, "a"), JSON_PATCH, body).await;
        assert_status(code, &v, 400, "BadRequest");
    }
    assert_unchanged(&server, before, "JSON patches that are not arrays").await;
    assert_object(&server, &item(CMS, "a"), &old).await;
}

/// kube-apiserver caps a JSON patch at 10000 operations: more is 413 RequestEntityTooLarge
/// "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got
/// 10001"; 10000 is fine.
#[tokio::test]
async fn json_patch_with_too_many_operations_is_too_large() {
    let server = ApiServer::default();
    let old = create(&server, CMS, configmap("a")).await;
    let before = store_fingerprint(&server).await;
    let ops = |n: usize| Value::Array(vec![json!({"op": "test", "path": "/data/k", "value": "v"}); n]).to_string();
    let (code, v) = raw(&server, Method::PATCH, &item(CMS, "a"), JSON_PATCH, ops(10_001)).await;
    let message = assert_status(code, &v, 413, "RequestEntityTooLarge");
    assert_eq!(message, "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001");
    assert_unchanged(&server, before, "a JSON patch with too many operations").await;
    let (code, v) = raw(&server, Method::PATCH, &item(CMS, "a"), JSON_PATCH, ops(10_000)).await;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_unchanged(&server, before, "a JSON patch of test operations").await;
    assert_object(&server, &item(CMS, "a"), &old).await;
}

/// JSON patches that move or replace the document root, or fail after such an op, never
/// crash the server: the answer is a success or a well-formed failure `Status`, and a failure
/// leaves the store unchanged.
#[tokio::test]
async fn json_patches_on_the_root_never_crash() {
    let server = ApiServer::default();
    install_widgets(&server).await;
    create(&server, CMS, configmap("a")).await;
    create(&server, DEPLOYS, deployment("web")).await;
    create(&server, WIDGETS, widget("w")).await;
    let patches = [
        json!([{"op": "move", "path": "", "from": "/apiVersion"}, {"op": "remove", "path": "/"}]),
        json!([{"op": "move", "path": "", "from": "/kind"}, {"op": "remove", "path": "/spec"}]),
        json!([{"op": "move", "path": "", "from": "/metadata"}, {"op": "remove", "path": "/x/y"}]),
        json!([{"op": "copy", "path": "", "from": "/metadata"}, {"op": "test", "path": "/name", "value": "other"}]),
        json!([{"op": "replace", "path": "", "value": 1}, {"op": "remove", "path": "/a"}]),
        json!([{"op": "move", "path": "", "from": "/apiVersion"}]),
        json!([{"op": "remove", "path": ""}]),
    ];
    for uri in [item(CMS, "a"), item(DEPLOYS, "web"), format!("{}/scale", item(DEPLOYS, "web")), item(WIDGETS, "w")] {
        for patch in &patches {
            check_robust(&server, Method::PATCH, &uri, JSON_PATCH, patch.to_string().into_bytes()).await;
        }
    }
}

// ---------------------------------------------------------------------------
// 12. Type errors in built-ins
// ---------------------------------------------------------------------------

/// A built-in whose fields have the wrong JSON type is rejected by the decoder with 400
/// BadRequest "Deployment in version \"v1\" cannot be handled as a Deployment: ...", on create
/// and on update.
#[tokio::test]
async fn type_errors_in_builtins_are_bad_request() {
    let server = ApiServer::default();
    let old = create(&server, DEPLOYS, deployment("web")).await;
    let before = store_fingerprint(&server).await;

    let mut bad = deployment("other");
    bad["spec"]["replicas"] = json!("three");
    let (code, v) = post(&server, DEPLOYS, &bad).await;
    let message = assert_status(code, &v, 400, "BadRequest");
    assert!(message.contains("Deployment"), "{message}");

    let mut bad_update = old.clone();
    bad_update["spec"]["replicas"] = json!("three");
    let (code, v) = raw(&server, Method::PUT, &item(DEPLOYS, "web"), JSON, bad_update.to_string()).await;
    assert_status(code, &v, 400, "BadRequest");

    assert_unchanged(&server, before, "badly typed deployments").await;
    assert_object(&server, &item(DEPLOYS, "web"), &old).await;
    assert_absent(&server, &item(DEPLOYS, "other")).await;
}

/// A patch whose result does not decode into the kind is 422 Invalid (`NewInvalid(GroupKind{},
/// "", [field.Invalid("patch", patchedObject, decodeError)])` in the patch handler), with one
/// cause on the field `patch`; the object is unchanged.
#[tokio::test]
async fn patch_whose_result_does_not_decode_is_invalid() {
    let server = ApiServer::default();
    let old = create(&server, DEPLOYS, deployment("web")).await;
    let before = store_fingerprint(&server).await;
    let patches = [
        (MERGE, json!({"spec": {"replicas": "three"}})),
        (JSON_PATCH, json!([{"op": "replace", "path": "/spec/replicas", "value": "three"}])),
    ];
    for (ct, patch) in patches {
        let (code, v) = raw(&server, Method::PATCH, &item(DEPLOYS, "web"), ct, patch.to_string()).await;
        let message = assert_status(code, &v, 422, "Invalid");
        assert!(message.contains("patch: Invalid value"), "{message}");
        assert_eq!(cause_fields(&v), ["patch"], "{v}");
        assert_eq!(v["details"]["causes"][0]["reason"], "FieldValueInvalid", "{v}");
    }
    assert_unchanged(&server, before, "patches that break the type").await;
    assert_object(&server, &item(DEPLOYS, "web"), &old).await;
}

/// kube-apiserver decodes the body before admission and storage, so a body that does not
/// decode is 400 BadRequest even when its name exists (not 409) or its namespace is missing
/// (not 404).
#[tokio::test]
async fn decode_errors_come_before_storage_errors() {
    let server = ApiServer::default();
    let old = create(&server, DEPLOYS, deployment("web")).await;
    let before = store_fingerprint(&server).await;

    let mut bad = deployment("web");
    bad["spec"]["replicas"] = json!("three");
    let (code, v) = post(&server, DEPLOYS, &bad).await;
    assert_status(code, &v, 400, "BadRequest");

    let (code, v) = post(&server, "/apis/apps/v1/namespaces/nope/deployments", &bad).await;
    assert_status(code, &v, 400, "BadRequest");

    assert_unchanged(&server, before, "undecodable creates").await;
    assert_object(&server, &item(DEPLOYS, "web"), &old).await;
}

/// A CRD whose `spec` is not an object is a decode error, 400 BadRequest, not a server
/// panic (500).
#[tokio::test]
async fn crd_with_a_non_object_spec_is_bad_request() {
    let server = ApiServer::default();
    let before = store_fingerprint(&server).await;
    for spec in [json!("widgets"), json!(7), json!(["a"])] {
        let mut crd = widget_crd();
        crd["spec"] = spec.clone();
        let (code, v) = post(&server, CRDS, &crd).await;
        assert_status(code, &v, 400, "BadRequest");
    }
    assert_unchanged(&server, before, "CRDs with a non-object spec").await;
    assert_absent(&server, &item(CRDS, "widgets.example.com")).await;
}

/// Custom resources have no unconditional update: a PUT without `metadata.resourceVersion`
/// is 422 Invalid with a `metadata.resourceVersion` cause ("must be specified for an update").
#[tokio::test]
async fn custom_resource_update_without_resource_version_is_invalid() {
    let server = ApiServer::default();
    install_widgets(&server).await;
    let old = create(&server, WIDGETS, widget("w")).await;
    let before = store_fingerprint(&server).await;
    let mut body = widget("w");
    body["spec"]["size"] = json!(5);
    let (code, v) = raw(&server, Method::PUT, &item(WIDGETS, "w"), JSON, body.to_string()).await;
    let message = assert_status(code, &v, 422, "Invalid");
    assert!(message.contains("must be specified for an update"), "{message}");
    assert_eq!(v["details"]["name"], "w", "{v}");
    assert_eq!(v["details"]["group"], "example.com", "{v}");
    assert_eq!(cause_fields(&v), ["metadata.resourceVersion"], "{v}");
    assert_unchanged(&server, before, "an update without resourceVersion").await;
    assert_object(&server, &item(WIDGETS, "w"), &old).await;
}

/// The generic store builds that error from the *resource* (`GroupKind{Group, Kind:
/// resource}`, a known quirk) and formats the uint64 zero with `%#v`: `widgets.example.com "w"
/// is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update`,
/// `details.kind: widgets`.
#[tokio::test]
async fn custom_resource_update_without_resource_version_reads_like_the_store() {
    let server = ApiServer::default();
    install_widgets(&server).await;
    create(&server, WIDGETS, widget("w")).await;
    let before = store_fingerprint(&server).await;
    let (code, v) = raw(&server, Method::PUT, &item(WIDGETS, "w"), JSON, widget("w").to_string()).await;
    let message = assert_status(code, &v, 422, "Invalid");
    assert_eq!(
        message,
        r#"widgets.example.com "w" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"#
    );
    assert_details(&v, "w", "example.com", "widgets");
    assert_unchanged(&server, before, "an update without resourceVersion").await;
}

// ---------------------------------------------------------------------------
// 13. Method not allowed
// ---------------------------------------------------------------------------

/// A verb the URL does not serve is 405 MethodNotAllowed "the server does not allow this
/// method on the requested resource": POST to an object, PUT or PATCH to a collection, POST
/// to the all-namespaces list of a namespaced resource.
#[tokio::test]
async fn method_not_allowed() {
    let server = ApiServer::default();
    let old = create(&server, CMS, configmap("x")).await;
    let before = store_fingerprint(&server).await;
    let requests = [
        (Method::POST, item(CMS, "x"), JSON),
        (Method::PUT, CMS.to_string(), JSON),
        (Method::PATCH, CMS.to_string(), MERGE),
        (Method::POST, "/api/v1/configmaps".to_string(), JSON),
    ];
    for (method, uri, ct) in requests {
        let (code, v) = raw(&server, method.clone(), &uri, ct, configmap("x").to_string()).await;
        let message = assert_status(code, &v, 405, "MethodNotAllowed");
        assert_eq!(message, "the server does not allow this method on the requested resource", "{method} {uri}");
    }
    assert_unchanged(&server, before, "disallowed methods").await;
    assert_object(&server, &item(CMS, "x"), &old).await;
}

// ---------------------------------------------------------------------------
// 14. Not acceptable
// ---------------------------------------------------------------------------

/// A GET whose Accept header allows no media type the server can produce is 406
/// NotAcceptable, and the message lists what it can produce. Custom resources have no
/// protobuf form (in kube-apiserver either); built-ins answer protobuf.
#[tokio::test]
async fn unacceptable_accept_header_is_not_acceptable() {
    let server = ApiServer::default();
    install_widgets(&server).await;
    create(&server, WIDGETS, widget("w")).await;
    create(&server, CMS, configmap("a")).await;
    let before = store_fingerprint(&server).await;
    let uris = [CMS.to_string(), item(CMS, "a"), WIDGETS.to_string(), item(WIDGETS, "w")];
    for uri in &uris {
        for accept in ["application/vnd.kubernetes.protobuf", "text/html"] {
            if accept.contains("protobuf") && uri.starts_with(CMS) {
                let (code, headers, _) =
                    raw_full(&server, Method::GET, uri, &[("accept", Some(accept))], Body::empty()).await;
                assert_eq!((code, headers["content-type"].to_str().unwrap()), (StatusCode::OK, accept), "GET {uri}");
                continue;
            }
            let (code, v) = raw_with(&server, Method::GET, uri, &[("accept", Some(accept))], Body::empty()).await;
            let message = assert_status(code, &v, 406, "NotAcceptable");
            assert!(message.contains("application/json"), "GET {uri} Accept {accept}: {message}");
        }
    }
    assert_unchanged(&server, before, "unacceptable GETs").await;
}

// ---------------------------------------------------------------------------
// 15. Bad query parameters
// ---------------------------------------------------------------------------

/// `limit` must be an integer: `limit=abc` is 400 BadRequest (a ListOptions decode error).
#[rstest]
#[tokio::test]
async fn non_integer_limit_is_bad_request(#[values("abc", "1.5", "9999999999999999999999")] limit: &str) {
    let server = ApiServer::default();
    let before = store_fingerprint(&server).await;
    let (code, v) = get(&server, &format!("{CMS}?limit={limit}")).await;
    let message = assert_status(code, &v, 400, "BadRequest");
    assert_eq!(message, format!("invalid value for limit: \"{limit}\" is not an integer"));
    assert_unchanged(&server, before, "bad limits").await;
}

/// kube-apiserver decodes boolean query parameters leniently
/// (`runtime.Convert_Slice_string_To_bool`): only `0` and `false` (any case) are false, any
/// other value is true. So `watch=maybe` starts a watch; it is not an error.
#[tokio::test]
async fn watch_flag_is_true_for_any_value_but_false_and_0() {
    let server = ApiServer::default();
    create(&server, CMS, configmap("a")).await;
    let before = store_fingerprint(&server).await;
    let (code, headers, bytes) =
        raw_full(&server, Method::GET, &format!("{CMS}?watch=maybe&timeoutSeconds=1"), &[], Body::empty()).await;
    let text = String::from_utf8_lossy(&bytes);
    assert_eq!(code, StatusCode::OK, "{text}");
    assert!(headers.get("content-type").is_some());
    let events: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("watch event")).collect();
    assert!(events.iter().any(|e| e["type"] == "ADDED" && e["object"]["metadata"]["name"] == "a"), "{text}");

    let (code, v) = get(&server, &format!("{CMS}?watch=FALSE")).await;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_eq!(v["kind"], "ConfigMapList");
    assert_unchanged(&server, before, "watches").await;
}

/// `dryRun` accepts only `All`; anything else fails the verb's options validation
/// (`ValidateCreateOptions`, `...UpdateOptions`, `...PatchOptions`, `...DeleteOptions`) with
/// 422 Invalid `CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ...` and a
/// `dryRun` cause; nothing is written.
#[tokio::test]
async fn unsupported_dry_run_value_is_invalid() {
    let server = ApiServer::default();
    let old = create(&server, CMS, configmap("a")).await;
    let before = store_fingerprint(&server).await;
    let requests = [
        (Method::POST, CMS.to_string(), JSON, configmap("dry").to_string(), "CreateOptions"),
        (Method::PUT, item(CMS, "a"), JSON, configmap("a").to_string(), "UpdateOptions"),
        (Method::PATCH, item(CMS, "a"), MERGE, r#"{"data": {"k": "dry"}}"#.to_string(), "PatchOptions"),
        (Method::DELETE, item(CMS, "a"), None, String::new(), "DeleteOptions"),
    ];
    for (method, uri, ct, body, kind) in requests {
        let (code, v) = raw(&server, method.clone(), &format!("{uri}?dryRun=Some"), ct, body).await;
        let message = assert_status(code, &v, 422, "Invalid");
        assert!(
            message.starts_with(&format!(r#"{kind}.meta.k8s.io "" is invalid: dryRun: Unsupported value"#)),
            "{method}: {message}"
        );
        assert_details(&v, "", "meta.k8s.io", kind);
        assert_eq!(cause_fields(&v), ["dryRun"], "{method}: {v}");
    }
    let body = json!({"dryRun": ["Some"]});
    let (code, v) = raw(&server, Method::DELETE, &item(CMS, "a"), JSON, body.to_string()).await;
    assert_status(code, &v, 422, "Invalid");
    assert_unchanged(&server, before, "unsupported dryRun values").await;
    assert_object(&server, &item(CMS, "a"), &old).await;
    assert_absent(&server, &item(CMS, "dry")).await;
}

/// An unknown `propagationPolicy` fails `ValidateDeleteOptions` with 422 Invalid (kind
/// DeleteOptions, cause `propagationPolicy`) and the object is not deleted; same for the
/// query parameter.
#[tokio::test]
async fn invalid_propagation_policy_is_invalid() {
    let server = ApiServer::default();
    let old = create(&server, CMS, configmap("a")).await;
    let before = store_fingerprint(&server).await;

    let body = json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Sideways"});
    let (code, v) = raw(&server, Method::DELETE, &item(CMS, "a"), JSON, body.to_string()).await;
    let message = assert_status(code, &v, 422, "Invalid");
    assert!(message.contains("Sideways"), "{message}");
    assert_eq!(v["details"]["kind"], "DeleteOptions", "{v}");
    assert_eq!(cause_fields(&v), ["propagationPolicy"], "{v}");

    let (code, v) =
        raw(&server, Method::DELETE, &format!("{}?propagationPolicy=Sideways", item(CMS, "a")), None, Body::empty())
            .await;
    assert_status(code, &v, 422, "Invalid");
    let (code, v) =
        raw(&server, Method::DELETE, &format!("{CMS}?propagationPolicy=Sideways"), None, Body::empty()).await;
    assert_status(code, &v, 422, "Invalid");

    assert_unchanged(&server, before, "deletes with an invalid propagationPolicy").await;
    assert_object(&server, &item(CMS, "a"), &old).await;
}

/// A DELETE body must decode as `DeleteOptions`: valid JSON that is not an object (an array,
/// a string, a number, a boolean) is 400 BadRequest, not read as "no options", and nothing is
/// deleted, for one object or a collection.
#[tokio::test]
async fn delete_body_that_is_not_an_object_is_bad_request() {
    let server = ApiServer::default();
    let mut labelled = configmap("a");
    labelled["metadata"]["labels"] = json!({"x": "y"});
    let old = create(&server, CMS, labelled).await;
    let before = store_fingerprint(&server).await;
    for body in ["[1]", "[]", "\"All\"", "5", "true"] {
        let (code, v) = raw(&server, Method::DELETE, &item(CMS, "a"), JSON, body).await;
        assert_status(code, &v, 400, "BadRequest");
        let (code, v) = raw(&server, Method::DELETE, &format!("{CMS}?labelSelector=x%3Dy"), JSON, body).await;
        assert_status(code, &v, 400, "BadRequest");
    }
    assert_unchanged(&server, before, "deletes with a non-object body").await;
    assert_object(&server, &item(CMS, "a"), &old).await;
}

/// Option validation errors are `NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind:
/// "ListOptions"|"DeleteOptions"}, "", errs)`: `details.group` is `meta.k8s.io` and the
/// message starts `ListOptions.meta.k8s.io "" is invalid: `.
#[tokio::test]
async fn option_errors_are_reported_against_meta_k8s_io() {
    let server = ApiServer::default();
    create(&server, CMS, configmap("a")).await;
    let before = store_fingerprint(&server).await;

    let (code, v) = get(&server, &format!("{CMS}?resourceVersionMatch=Exact")).await;
    let message = assert_status(code, &v, 422, "Invalid");
    assert!(message.starts_with(r#"ListOptions.meta.k8s.io "" is invalid: "#), "{message}");
    assert_details(&v, "", "meta.k8s.io", "ListOptions");

    let body = json!({"propagationPolicy": "Sideways"});
    let (code, v) = raw(&server, Method::DELETE, &item(CMS, "a"), JSON, body.to_string()).await;
    let message = assert_status(code, &v, 422, "Invalid");
    assert!(message.starts_with(r#"DeleteOptions.meta.k8s.io "" is invalid: "#), "{message}");
    assert_details(&v, "", "meta.k8s.io", "DeleteOptions");

    assert_unchanged(&server, before, "invalid options").await;
}

// ---------------------------------------------------------------------------
// 16. resourceVersion on lists
// ---------------------------------------------------------------------------

/// `resourceVersionMatch` without a `resourceVersion` fails `ValidateListOptions`: 422
/// Invalid with a `resourceVersionMatch` cause.
#[tokio::test]
async fn resource_version_match_without_resource_version_is_invalid() {
    let server = ApiServer::default();
    let before = store_fingerprint(&server).await;
    for m in ["Exact", "NotOlderThan"] {
        let (code, v) = get(&server, &format!("{CMS}?resourceVersionMatch={m}")).await;
        let message = assert_status(code, &v, 422, "Invalid");
        assert!(message.contains("resourceVersionMatch"), "{message}");
        assert_eq!(v["details"]["kind"], "ListOptions", "{v}");
        assert_eq!(cause_fields(&v), ["resourceVersionMatch"], "{v}");
    }
    assert_unchanged(&server, before, "lists with resourceVersionMatch alone").await;
}

/// A list at a resourceVersion the store has not reached is 504 Timeout "Too large resource
/// version: 999999, current: N" with a `ResourceVersionTooLarge` cause,
/// `retryAfterSeconds: 1` and a `Retry-After: 1` header.
#[tokio::test]
async fn future_resource_version_is_timeout() {
    let server = ApiServer::default();
    let before = store_fingerprint(&server).await;
    for query in [
        "resourceVersion=999999",
        "resourceVersion=999999&resourceVersionMatch=Exact",
        "resourceVersion=999999&resourceVersionMatch=NotOlderThan",
    ] {
        let (code, headers, bytes) =
            raw_full(&server, Method::GET, &format!("{CMS}?{query}"), &[], Body::empty()).await;
        let v: Value = serde_json::from_slice(&bytes).expect("JSON Status");
        let message = assert_status(code, &v, 504, "Timeout");
        assert!(message.contains("Too large resource version: 999999"), "{query}: {message}");
        assert_eq!(v["details"]["causes"][0]["reason"], "ResourceVersionTooLarge", "{v}");
        assert_eq!(v["details"]["retryAfterSeconds"], 1, "{v}");
        assert_eq!(headers.get("retry-after").and_then(|h| h.to_str().ok()), Some("1"), "{query}");
    }
    assert_unchanged(&server, before, "lists from the future").await;
}

/// That error is `errors.NewTimeoutError`, which prefixes its message with `Timeout: `:
/// "Timeout: Too large resource version: 999999, current: N".
#[tokio::test]
async fn future_resource_version_message_has_the_timeout_prefix() {
    let server = ApiServer::default();
    let current = server.resource_version();
    let (code, v) = get(&server, &format!("{CMS}?resourceVersion=999999")).await;
    let message = assert_status(code, &v, 504, "Timeout");
    assert_eq!(message, format!("Timeout: Too large resource version: 999999, current: {current}"));
}

// ---------------------------------------------------------------------------
// 17. Finalizers on deleting objects
// ---------------------------------------------------------------------------

/// Once deletion has started no finalizer can be added: 422 Invalid with a
/// `metadata.finalizers` cause ("no new finalizers can be added if the object is being
/// deleted"), by update or patch, and the object keeps its finalizers.
#[tokio::test]
async fn adding_a_finalizer_to_a_deleting_object_is_invalid() {
    let server = ApiServer::default();
    let mut cm = configmap("a");
    cm["metadata"]["finalizers"] = json!(["example.com/keep"]);
    create(&server, CMS, cm).await;
    let (code, deleting) = raw(&server, Method::DELETE, &item(CMS, "a"), None, Body::empty()).await;
    assert_eq!(code, StatusCode::OK, "{deleting}");
    assert!(deleting["metadata"]["deletionTimestamp"].is_string(), "{deleting}");
    let before = store_fingerprint(&server).await;

    let mut update = deleting.clone();
    update["metadata"]["finalizers"] = json!(["example.com/keep", "example.com/late"]);
    let (code, v) = raw(&server, Method::PUT, &item(CMS, "a"), JSON, update.to_string()).await;
    let message = assert_status(code, &v, 422, "Invalid");
    assert!(message.contains("no new finalizers can be added if the object is being deleted"), "{message}");
    assert_details(&v, "a", "", "ConfigMap");
    assert_eq!(cause_fields(&v), ["metadata.finalizers"], "{v}");

    let patch = json!([{"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/late"}]);
    let (code, v) = raw(&server, Method::PATCH, &item(CMS, "a"), JSON_PATCH, patch.to_string()).await;
    assert_status(code, &v, 422, "Invalid");

    assert_unchanged(&server, before, "adding finalizers while deleting").await;
    assert_object(&server, &item(CMS, "a"), &deleting).await;
}

// ---------------------------------------------------------------------------
// 18. Robustness
// ---------------------------------------------------------------------------

/// A tiny deterministic PRNG (xorshift64), so a failure reproduces from its iteration.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const STRINGS: &[&str] = &[
    "",
    "a",
    "Bad_Name",
    "-x",
    "v1",
    "v2",
    "apps/v1",
    "example.com/v1",
    "ConfigMap",
    "Deployment",
    "Widget",
    "default",
    "nope",
    "add",
    "remove",
    "replace",
    "test",
    "move",
    "copy",
    "/metadata/name",
    "/metadata/finalizers/-",
    "/metadata",
    "/spec",
    "/spec/replicas",
    "/data/k",
    "/",
    "",
    "~1",
    "~",
    "999999999999",
    "-1",
    "ünïcödé",
    "\u{0}",
    "../..",
    "All",
    "Orphan",
    "a=b",
    "x in (",
    "{",
    "kubernetes",
];

const KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "generateName",
    "namespace",
    "labels",
    "annotations",
    "finalizers",
    "resourceVersion",
    "uid",
    "deletionTimestamp",
    "ownerReferences",
    "spec",
    "status",
    "data",
    "replicas",
    "selector",
    "template",
    "op",
    "path",
    "value",
    "from",
    "preconditions",
    "propagationPolicy",
    "gracePeriodSeconds",
    "dryRun",
];

fn random_string(rng: &mut Rng) -> String {
    if rng.chance(60) {
        return rng.pick(STRINGS).to_string();
    }
    if rng.chance(5) {
        return "x".repeat(300);
    }
    let len = rng.below(12);
    (0..len).map(|_| char::from_u32(rng.below(0x250) as u32 + 1).unwrap_or('?')).collect()
}

fn random_value(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth == 0 { 7 } else { 9 }) {
        0 => Value::Null,
        1 => json!(rng.chance(50)),
        2 => json!(rng.next() as i64),
        3 => json!(*rng.pick(&[0i64, 1, -1, 3, i64::MAX, i64::MIN])),
        4 => json!(1.5e300),
        5 | 6 => json!(random_string(rng)),
        7 => Value::Array((0..rng.below(4)).map(|_| random_value(rng, depth - 1)).collect()),
        _ => {
            let n = rng.below(4);
            let mut m = serde_json::Map::new();
            for _ in 0..n {
                let k = if rng.chance(80) { rng.pick(KEYS).to_string() } else { random_string(rng) };
                m.insert(k, random_value(rng, depth - 1));
            }
            Value::Object(m)
        }
    }
}

/// Every value inside `v`, by path (object keys and array indices), the root included.
fn paths(v: &Value, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(prefix.clone());
    let children: Vec<(String, &Value)> = match v {
        Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Value::Array(a) => a.iter().enumerate().map(|(i, v)| (i.to_string(), v)).collect(),
        _ => return,
    };
    for (k, child) in children {
        prefix.push(k);
        paths(child, prefix, out);
        prefix.pop();
    }
}

fn at_mut<'a>(v: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |v, seg| match v {
        Value::Object(m) => m.get_mut(seg),
        Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
        _ => None,
    })
}

/// A valid-looking document with one to three values replaced by random ones.
fn mutate_structure(rng: &mut Rng, template: &Value) -> Value {
    let mut doc = template.clone();
    for _ in 0..=rng.below(3) {
        let mut all = Vec::new();
        paths(&doc, &mut Vec::new(), &mut all);
        let path = rng.pick(&all).clone();
        if let Some(slot) = at_mut(&mut doc, &path) {
            *slot = if rng.chance(70) {
                random_value(rng, 3)
            } else {
                let mut m = serde_json::Map::new();
                m.insert(rng.pick(KEYS).to_string(), random_value(rng, 2));
                Value::Object(m)
            };
        }
    }
    doc
}

/// A random JSON patch: a list of ops with plausible and implausible fields.
fn random_json_patch(rng: &mut Rng) -> Value {
    let ops = ["add", "remove", "replace", "test", "move", "copy", "frob"];
    let targets = [
        "/metadata/name",
        "/metadata/finalizers/-",
        "/metadata/finalizers",
        "/metadata/labels/a",
        "/metadata",
        "/spec",
        "/spec/replicas",
        "/data/k",
        "/status",
        "",
        "/",
        "/kind",
        "/apiVersion",
        "/metadata/resourceVersion",
        "/x/y/z",
        "/data/~1",
    ];
    let n = rng.below(4);
    Value::Array(
        (0..n)
            .map(|_| {
                let mut op = json!({"op": rng.pick(&ops), "path": rng.pick(&targets)});
                if rng.chance(70) {
                    op["value"] = random_value(rng, 2);
                }
                if rng.chance(30) {
                    op["from"] = json!(rng.pick(&targets));
                }
                if rng.chance(10) {
                    op = random_value(rng, 2);
                }
                op
            })
            .collect(),
    )
}

/// The serialized document with a few random byte edits (flips, cuts, insertions).
fn mutate_bytes(rng: &mut Rng, doc: &Value) -> Vec<u8> {
    let mut b = doc.to_string().into_bytes();
    for _ in 0..=rng.below(4) {
        if b.is_empty() {
            break;
        }
        let i = rng.below(b.len());
        match rng.below(4) {
            0 => b[i] ^= 1 << rng.below(8),
            1 => b.truncate(i),
            2 => b.insert(i, *rng.pick(b"{}[]\",:\\0-e ")),
            _ => {
                let end = (i + rng.below(16)).min(b.len());
                b.drain(i..end);
            }
        }
    }
    b
}

fn random_bytes(rng: &mut Rng) -> Vec<u8> {
    let len = rng.below(200);
    if rng.chance(50) {
        let alphabet = b"{}[]\":,0123456789abcdefnulltrue -\n\t'!&*|>";
        (0..len).map(|_| *rng.pick(alphabet)).collect()
    } else {
        (0..len).map(|_| rng.next() as u8).collect()
    }
}

/// Sends one request and checks the robustness invariants: never 500, the answer is a JSON
/// object, a failure is a well-formed `Status` (JSON content type, code = HTTP status, a
/// reason and a message) and leaves the store unchanged. Returns the HTTP status.
async fn check_robust(
    server: &ApiServer,
    method: Method,
    uri: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> StatusCode {
    let what = format!(
        "{method} {uri} content-type {content_type:?} body {:?}",
        String::from_utf8_lossy(&body[..body.len().min(400)])
    );
    let before = store_fingerprint(server).await;
    let (code, headers, bytes) = raw_full(server, method, uri, &[("content-type", content_type)], body).await;
    assert_ne!(code, StatusCode::INTERNAL_SERVER_ERROR, "{what}: {}", String::from_utf8_lossy(&bytes));
    let v: Value =
        serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{what}: answer is not JSON ({e}): {bytes:?}"));
    assert!(v.is_object(), "{what}: answer is not a JSON object: {v}");
    if !code.is_success() {
        assert_eq!(headers.get("content-type").and_then(|h| h.to_str().ok()), Some("application/json"), "{what}");
        let reason = v["reason"].as_str().unwrap_or_default().to_string();
        assert!(!reason.is_empty(), "{what}: Status without a reason: {v}");
        assert_status(code, &v, code.as_u16(), &reason);
        assert_eq!(store_fingerprint(server).await, before, "{what}: a failed request ({code}) changed the store: {v}");
    }
    code
}

/// Reads a number from the environment (for longer or different fuzz runs).
fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|s| s.parse().ok())
}

/// ~300 deterministic random requests (random bytes, byte-mutated and structure-mutated
/// valid bodies, random JSON patches, assorted content types) against creates, updates,
/// patches, subresources and deletes: the server never answers 500, every failure is a
/// well-formed `Status`, and no failed request changes the store. `KPROOF_FUZZ_ITERATIONS`
/// and `KPROOF_FUZZ_SEED` run it longer or from another seed.
#[tokio::test]
async fn random_bodies_never_crash_and_failures_change_nothing() {
    let server = ApiServer::default();
    install_widgets(&server).await;
    create(&server, CMS, configmap("fuzz")).await;
    create(&server, DEPLOYS, deployment("fuzz")).await;
    create(&server, WIDGETS, widget("fuzz")).await;

    let generated = |mut v: Value, prefix: &str| {
        v["metadata"]["name"] = Value::Null;
        v["metadata"]["generateName"] = json!(prefix);
        v
    };
    let delete_options = json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background", "preconditions": {"uid": "x"}, "gracePeriodSeconds": 0, "dryRun": ["All"]});
    let targets: Vec<(Method, String, Value)> = vec![
        (Method::POST, CMS.to_string(), configmap("fuzz-new")),
        (Method::POST, CMS.to_string(), generated(configmap(""), "fuzz-")),
        (Method::PUT, item(CMS, "fuzz"), configmap("fuzz")),
        (Method::PATCH, item(CMS, "fuzz"), json!({"data": {"k": "v2"}, "metadata": {"labels": {"a": "b"}}})),
        (Method::POST, DEPLOYS.to_string(), generated(deployment("fuzz"), "fuzz-")),
        (Method::PUT, item(DEPLOYS, "fuzz"), deployment("fuzz")),
        (Method::PATCH, item(DEPLOYS, "fuzz"), json!({"spec": {"replicas": 3}})),
        (
            Method::PUT,
            format!("{}/status", item(DEPLOYS, "fuzz")),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "fuzz"}, "status": {"replicas": 1}}),
        ),
        (Method::PATCH, format!("{}/scale", item(DEPLOYS, "fuzz")), json!({"spec": {"replicas": 2}})),
        (
            Method::PUT,
            format!("{}/scale", item(DEPLOYS, "fuzz")),
            json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "fuzz"}, "spec": {"replicas": 2}}),
        ),
        (Method::POST, WIDGETS.to_string(), generated(widget(""), "fuzz-")),
        (Method::PATCH, item(WIDGETS, "fuzz"), json!({"spec": {"size": 2}})),
        (Method::PATCH, format!("{}/status", item(WIDGETS, "fuzz")), json!({"status": {"ready": true}})),
        (
            Method::POST,
            NAMESPACES.to_string(),
            generated(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {}}), "fuzz-"),
        ),
        (Method::POST, CRDS.to_string(), generated(widget_crd(), "gadgets.")),
        (
            Method::POST,
            PODS.to_string(),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "p-"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
        ),
        (Method::DELETE, item(CMS, "fuzz-victim"), delete_options.clone()),
        (Method::DELETE, format!("{CMS}?labelSelector=fuzz%3Dyes"), delete_options),
    ];
    let content_types: &[Option<&str>] = &[
        None,
        Some("application/json"),
        Some("application/json; charset=utf-8"),
        Some("application/yaml"),
        Some("application/merge-patch+json"),
        Some("application/json-patch+json"),
        Some("application/strategic-merge-patch+json"),
        Some("application/apply-patch+yaml"),
        Some("text/plain"),
        Some("*/*"),
        Some(";;;"),
        Some("application/vnd.kubernetes.protobuf"),
    ];

    let iterations = env_number("KPROOF_FUZZ_ITERATIONS").unwrap_or(300);
    let mut rng = Rng(env_number("KPROOF_FUZZ_SEED").unwrap_or(0x9E37_79B9_7F4A_7C15).max(1));
    let mut failures = 0;
    for i in 0..iterations {
        // A victim for the deletes, so they have something to act on now and then.
        if i % 25 == 0 {
            let mut victim = configmap("fuzz-victim");
            victim["metadata"]["labels"] = json!({"fuzz": "yes"});
            let _ = post(&server, CMS, &victim).await;
        }
        let (method, uri, template) = rng.pick(&targets).clone();
        let natural = match (method == Method::PATCH, rng.chance(50)) {
            (true, true) => JSON_PATCH,
            (true, false) => MERGE,
            (false, _) => JSON,
        };
        let content_type = if rng.chance(60) { natural } else { *rng.pick(content_types) };
        let body: Vec<u8> = match rng.below(4) {
            0 => random_bytes(&mut rng),
            1 => mutate_bytes(&mut rng, &template),
            _ if content_type == JSON_PATCH => random_json_patch(&mut rng).to_string().into_bytes(),
            _ => mutate_structure(&mut rng, &template).to_string().into_bytes(),
        };
        if !check_robust(&server, method, &uri, content_type, body).await.is_success() {
            failures += 1;
        }
    }
    assert!(failures * 2 > iterations, "the random requests should mostly fail, {failures} of {iterations} did");

    // The server still serves normally afterwards.
    let (code, v) = get(&server, &item(CMS, "fuzz")).await;
    assert_eq!(code, StatusCode::OK, "{v}");
    create(&server, CMS, configmap("after-fuzz")).await;
}

/// Deeply nested JSON and YAML bodies are rejected with 400 BadRequest, not by overflowing
/// the stack or answering 500.
#[tokio::test]
async fn deeply_nested_bodies_are_bad_request() {
    let server = ApiServer::default();
    create(&server, CMS, configmap("a")).await;
    let before = store_fingerprint(&server).await;
    let depth = 100_000;
    let json_array = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let json_object = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
    let yaml_flow = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let yaml_block: String = (0..1_000).map(|i| format!("{}- \n", "  ".repeat(i))).collect();
    let cases = [
        (Method::POST, CMS.to_string(), JSON, json_array.clone()),
        (Method::POST, CMS.to_string(), JSON, json_object.clone()),
        (Method::PUT, item(CMS, "a"), JSON, json_object.clone()),
        (Method::PATCH, item(CMS, "a"), MERGE, json_object),
        (Method::PATCH, item(CMS, "a"), JSON_PATCH, json_array),
        (Method::POST, CMS.to_string(), Some("application/yaml"), yaml_flow),
        (Method::POST, CMS.to_string(), Some("application/yaml"), yaml_block),
    ];
    for (method, uri, ct, body) in cases {
        let (code, v) = raw(&server, method.clone(), &uri, ct, body).await;
        assert_status(code, &v, 400, "BadRequest");
    }
    assert_unchanged(&server, before, "deeply nested bodies").await;
}

/// kube-apiserver's `--max-requests-inflight`: past the limit, 429 TooManyRequests with
/// Retry-After; the slot is given back when the request ends, and nothing is written.
#[tokio::test]
async fn requests_past_the_in_flight_limit_are_429() {
    use futures::SinkExt;
    let server = ApiServer::new(Config { max_requests_in_flight: 1, ..Default::default() });
    let before = store_fingerprint(&server).await;
    // The first request holds the only slot: its body never ends until we say so.
    let (mut tx, rx) = futures::channel::mpsc::channel::<Result<bytes::Bytes, std::io::Error>>(1);
    let held = {
        let server = server.clone();
        tokio::spawn(async move {
            let req = http::Request::builder()
                .method(Method::POST)
                .uri("/api/v1/namespaces/default/configmaps")
                .header("content-type", "application/json")
                .body(axum::body::Body::from_stream(rx))
                .unwrap();
            tower::ServiceExt::oneshot(server.router(), req).await.unwrap().status()
        })
    };
    tx.send(Ok(bytes::Bytes::from_static(b"{\"metadata\":"))).await.unwrap();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let (status, headers, body) = raw_full(&server, Method::GET, "/api/v1/namespaces", &[], "").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(headers.get("retry-after").and_then(|v| v.to_str().ok()), Some("1"));
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        (v["kind"].as_str(), v["reason"].as_str(), v["code"].as_u64()),
        (Some("Status"), Some("TooManyRequests"), Some(429))
    );
    assert_eq!(v["details"]["retryAfterSeconds"], 1);
    tx.send(Ok(bytes::Bytes::from_static(b"{\"name\":\"late\"}}"))).await.unwrap();
    drop(tx);
    assert_eq!(held.await.unwrap(), StatusCode::CREATED);
    let (status, _) = get(&server, "/api/v1/namespaces").await;
    assert_eq!(status, StatusCode::OK, "the slot was given back");
    assert_eq!(store_fingerprint(&server).await.0, before.0 + 1, "only the held create wrote");
}
