//! Helpers shared by the integration tests.
#![allow(dead_code)]

use axum::body::Body;
use fake_apiserver::ApiServer;
use http::{Method, Request, StatusCode};
use serde_json::Value;
use tower::ServiceExt;

/// Sends one raw request through the router and returns the status and the JSON body.
pub async fn raw(
    server: &ApiServer,
    method: Method,
    uri: &str,
    content_type: Option<&str>,
    body: impl Into<Body>,
) -> (StatusCode, Value) {
    raw_with(server, method, uri, &[("content-type", content_type)], body).await
}

/// Like [`raw`] with arbitrary headers (a `None` value leaves the header out).
pub async fn raw_with(
    server: &ApiServer,
    method: Method,
    uri: &str,
    headers: &[(&str, Option<&str>)],
    body: impl Into<Body>,
) -> (StatusCode, Value) {
    let (status, _, bytes) = raw_full(server, method, uri, headers, body).await;
    let v =
        serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, v)
}

/// Sends one raw request and returns status, headers and body bytes.
pub async fn raw_full(
    server: &ApiServer,
    method: Method,
    uri: &str,
    headers: &[(&str, Option<&str>)],
    body: impl Into<Body>,
) -> (StatusCode, http::HeaderMap, bytes::Bytes) {
    let mut req = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        if let Some(v) = v {
            req = req.header(*k, *v);
        }
    }
    let req = req.body(body.into()).expect("request");
    let resp = server.router().oneshot(req).await.expect("router is infallible");
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX).await.expect("body");
    (status, headers, bytes)
}

/// GET as JSON.
pub async fn get(server: &ApiServer, uri: &str) -> (StatusCode, Value) {
    raw(server, Method::GET, uri, None, Body::empty()).await
}

/// POST a JSON value.
pub async fn post(server: &ApiServer, uri: &str, v: &Value) -> (StatusCode, Value) {
    raw(server, Method::POST, uri, Some("application/json"), v.to_string()).await
}

/// A fingerprint of the whole store: every collection listed at the current resourceVersion.
/// Used to prove a failed request changed nothing.
pub async fn store_fingerprint(server: &ApiServer) -> (u64, usize) {
    (server.resource_version(), server.timeline().len())
}
