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

/// The causes of a 422 as (field, type) pairs.
pub fn causes(body: &Value) -> Vec<(String, String)> {
    body["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| (c["field"].as_str().unwrap_or("").to_string(), c["reason"].as_str().unwrap_or("").to_string()))
        .collect()
}

/// A fingerprint of the whole store: every collection listed at the current resourceVersion.
/// Used to prove a failed request changed nothing.
pub async fn store_fingerprint(server: &ApiServer) -> (u64, usize) {
    (server.resource_version(), server.timeline().len())
}

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::json;
use std::time::Duration;

fn named_cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}})).expect("configmap")
}

/// Eight writers each do 500 optimistic read-modify-write increments of one counter, retrying
/// on 409 Conflict: the counter must end at 4000 (no increment lost).
pub async fn eight_writers_lose_no_increment(client: kube::Client) {
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let mut c = named_cm("counter");
    c.data = Some([("n".to_string(), "0".to_string())].into());
    cms.create(&PostParams::default(), &c).await.expect("create counter");
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let cms = cms.clone();
            tokio::spawn(async move {
                let mut conflicts = 0u32;
                for _ in 0..500 {
                    loop {
                        let mut cur = cms.get("counter").await.expect("get");
                        let n: u64 = cur.data.as_ref().expect("data")["n"].parse().expect("number");
                        cur.data = Some([("n".to_string(), (n + 1).to_string())].into());
                        match cms.replace("counter", &PostParams::default(), &cur).await {
                            Ok(_) => break,
                            Err(kube::Error::Api(s)) if s.code == 409 => conflicts += 1,
                            Err(e) => panic!("unexpected error {e}"),
                        }
                    }
                }
                conflicts
            })
        })
        .collect();
    let mut conflicts = 0;
    for t in tasks {
        conflicts += t.await.expect("writer");
    }
    assert_eq!(cms.get("counter").await.expect("get").data.expect("data")["n"], "4000");
    println!("8 writers x 500 increments: {conflicts} conflicts retried");
}

/// kube-runtime's reflector is forced through a 410 (the server's watch history is dropped
/// while its watch has a change still to read); it must re-list and end equal to a fresh LIST.
pub async fn reflector_survives_forced_410(server: &ApiServer, client: kube::Client) {
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let (reader, writer) = reflector::store();
    let relists = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = relists.clone();
    let stream = watcher(cms.clone(), watcher::Config::default())
        .default_backoff()
        .map_ok(move |e| {
            if matches!(e, watcher::Event::Init) {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            e
        })
        .reflect(writer)
        .applied_objects();
    let driver = tokio::spawn(async move {
        stream.for_each(|_| async {}).await;
    });
    let wait_for = |n: usize| {
        let reader = reader.clone();
        async move {
            tokio::time::timeout(Duration::from_secs(20), async {
                while reader.state().len() != n {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
            .await
            .unwrap_or_else(|_| panic!("reflector did not reach {n} objects"))
        }
    };
    cms.create(&PostParams::default(), &named_cm("a")).await.expect("create a");
    cms.create(&PostParams::default(), &named_cm("b")).await.expect("create b");
    wait_for(2).await;
    assert_eq!(relists.load(std::sync::atomic::Ordering::SeqCst), 1);
    // Write, then compact before the watch task runs: its next read finds its cursor too old.
    cms.create(&PostParams::default(), &named_cm("c")).await.expect("create c");
    server.compact();
    cms.patch("a", &PatchParams::default(), &Patch::Merge(json!({"data": {"v": "2"}}))).await.expect("patch a");
    cms.delete("b", &Default::default()).await.expect("delete b");
    cms.create(&PostParams::default(), &named_cm("d")).await.expect("create d");
    wait_for(3).await;
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let fresh = cms.list(&ListParams::default()).await.expect("list");
            let mut want: Vec<(String, String)> = fresh
                .items
                .iter()
                .map(|o| {
                    (
                        o.metadata.name.clone().unwrap_or_default(),
                        o.metadata.resource_version.clone().unwrap_or_default(),
                    )
                })
                .collect();
            let mut got: Vec<(String, String)> = reader
                .state()
                .iter()
                .map(|o| {
                    (
                        o.metadata.name.clone().unwrap_or_default(),
                        o.metadata.resource_version.clone().unwrap_or_default(),
                    )
                })
                .collect();
            want.sort();
            got.sort();
            if want == got {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the reflector converges to a fresh LIST");
    assert!(relists.load(std::sync::atomic::Ordering::SeqCst) >= 2, "the 410 forced a re-list");
    driver.abort();
}
