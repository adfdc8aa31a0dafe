//! What the fuzz targets share: one fake API server per fuzzing process, seeded with an object
//! of each kind the targets write to, and a way to send it one request and check the answer.
//!
//! Every answer must be well formed whatever the input: a handler that panics (the server turns
//! a panic into a 500 "the server panicked") is a crash, and an error must come as a
//! Kubernetes `Status` whose `code` is the HTTP status. Writes are dry runs where they can be
//! (`dryRun=All`), so millions of inputs do not grow the store.

use axum::body::Body;
use fake_apiserver::{ApiServer, Config};
use http::{Method, Request, StatusCode};
use serde_json::{Value, json};
use std::sync::OnceLock;
use tower::ServiceExt;

/// The collections the body targets create into, picked by the input's first byte.
pub const COLLECTIONS: &[&str] = &[
    "/api/v1/namespaces/default/configmaps",
    "/api/v1/namespaces/default/pods",
    "/api/v1/namespaces/default/services",
    "/api/v1/namespaces",
    "/apis/apps/v1/namespaces/default/deployments",
    "/apis/batch/v1/namespaces/default/jobs",
    "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
    "/apis/resource.k8s.io/v1/deviceclasses",
    "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
    "/apis/events.k8s.io/v1/namespaces/default/events",
    "/apis/coordination.k8s.io/v1/namespaces/default/leases",
    "/apis/fuzz.kproof.dev/v1/namespaces/default/widgets",
];

/// The seeded objects the patch targets change, by URL.
pub const OBJECTS: &[&str] = &[
    "/api/v1/namespaces/default/configmaps/seed",
    "/api/v1/namespaces/default/pods/seed",
    "/apis/apps/v1/namespaces/default/deployments/seed",
    "/apis/fuzz.kproof.dev/v1/namespaces/default/widgets/seed",
];

/// The CustomResourceDefinition the CRD target replaces the schema of.
pub const CRD_URL: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.fuzz.kproof.dev";

/// A fake API server and the runtime that drives it.
pub struct Target {
    runtime: tokio::runtime::Runtime,
    server: ApiServer,
}

/// An answer: the HTTP status and the body.
pub struct Answer {
    /// The HTTP status.
    pub status: StatusCode,
    /// The body, read whole (empty for a watch, which is not read).
    pub body: Vec<u8>,
}

/// The widget CRD: a structural schema with defaults, bounds and a CEL rule.
pub fn widget_crd(schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.fuzz.kproof.dev"},
        "spec": {"group": "fuzz.kproof.dev", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                               "schema": {"openAPIV3Schema": schema}}]}
    })
}

/// The widget schema the server starts with.
pub fn widget_schema() -> Value {
    json!({"type": "object", "properties": {
        "spec": {"type": "object",
                 "x-kubernetes-validations": [{"rule": "self.replicas <= self.max", "message": "replicas above max"}],
                 "properties": {
                     "replicas": {"type": "integer", "minimum": 0, "default": 1},
                     "max": {"type": "integer", "default": 10},
                     "size": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                     "tags": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                              "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "value": {"type": "string", "maxLength": 16}}}},
                     "mode": {"type": "string", "enum": ["a", "b"]}}},
        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}})
}

impl Target {
    /// The process's server, seeded on first use.
    pub fn get() -> &'static Target {
        static TARGET: OnceLock<Target> = OnceLock::new();
        TARGET.get_or_init(Target::start)
    }

    fn start() -> Target {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        let server = runtime.block_on(async { ApiServer::new(Config::default()) });
        let target = Target { runtime, server };
        let seeds = [
            ("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widget_crd(widget_schema())),
            (
                "/api/v1/namespaces/default/configmaps",
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "seed", "labels": {"app": "seed"}}, "data": {"a": "1"}}),
            ),
            (
                "/api/v1/namespaces/default/pods",
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "seed"},
                       "spec": {"containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 80, "name": "http"}],
                                                "env": [{"name": "A", "value": "1"}], "resources": {"requests": {"cpu": "100m"}}}]}}),
            ),
            (
                "/apis/apps/v1/namespaces/default/deployments",
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "seed"},
                       "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "seed"}},
                                "template": {"metadata": {"labels": {"app": "seed"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}),
            ),
            (
                "/apis/fuzz.kproof.dev/v1/namespaces/default/widgets",
                json!({"apiVersion": "fuzz.kproof.dev/v1", "kind": "Widget", "metadata": {"name": "seed"}, "spec": {"replicas": 1, "tags": [{"name": "x"}]}}),
            ),
        ];
        for (url, object) in seeds {
            let answer = target.send(Method::POST, url, "application/json", object.to_string().into_bytes());
            assert!(answer.status.is_success(), "seeding {url}: {} {}", answer.status, String::from_utf8_lossy(&answer.body));
        }
        target
    }

    /// Sends one request and checks the answer is well formed (see the module docs); a watch's
    /// streaming body is not read.
    pub fn send(&self, method: Method, uri: &str, content_type: &str, body: Vec<u8>) -> Answer {
        let Ok(request) = Request::builder()
            .method(method)
            .uri(uri)
            .header(http::header::CONTENT_TYPE, content_type)
            .header(http::header::ACCEPT, "application/json")
            .body(Body::from(body))
        else {
            // Not a request a client could send (a URI that does not parse).
            return Answer { status: StatusCode::BAD_REQUEST, body: Vec::new() };
        };
        let watch = uri.contains("watch=");
        self.runtime.block_on(async {
            let response = self.server.router().oneshot(request).await.expect("the router is infallible");
            let status = response.status();
            if watch && status.is_success() {
                return Answer { status, body: Vec::new() };
            }
            // A query can ask for a watch in a form `watch` above does not spot (`%77atch=1`):
            // a successful answer that does not end is such a stream, and is not read.
            let read = axum::body::to_bytes(response.into_body(), usize::MAX);
            let Ok(body) = tokio::time::timeout(std::time::Duration::from_secs(5), read).await else {
                assert!(status.is_success(), "an error answer ({status}) that never ends");
                return Answer { status, body: Vec::new() };
            };
            let body = body.expect("a whole body").to_vec();
            check(status, &body);
            Answer { status, body }
        })
    }
}

impl Target {
    /// The body of `GET uri` as `accept` asks for it (the seed corpus's protobuf bodies).
    pub fn get_as(&self, uri: &str, accept: &str) -> Vec<u8> {
        let request = Request::get(uri).header(http::header::ACCEPT, accept).body(Body::empty()).expect("a request");
        self.runtime.block_on(async {
            let response = self.server.router().oneshot(request).await.expect("the router is infallible");
            axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("a whole body").to_vec()
        })
    }
}

/// A crash when the answer is a panic turned into a 500, or an error that is not a `Status`
/// with its own code.
fn check(status: StatusCode, body: &[u8]) {
    let text = String::from_utf8_lossy(body);
    assert!(!text.contains("the server panicked"), "the server panicked: {status} {text}");
    if status.is_success() {
        return;
    }
    let v: Value = serde_json::from_slice(body).unwrap_or_else(|e| panic!("{status} with a body that is not JSON ({e}): {text}"));
    assert_eq!(v["kind"], "Status", "{status} without a Status: {text}");
    assert_eq!(v["code"].as_u64(), Some(u64::from(status.as_u16())), "{status} with another code in its Status: {text}");
}

/// Splits an input into a selector byte and the rest.
pub fn pick(data: &[u8]) -> Option<(u8, &[u8])> {
    data.split_first().map(|(b, rest)| (*b, rest))
}
