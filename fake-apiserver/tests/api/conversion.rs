//! CRD conversion webhooks: a two-version CRD (`v1` with `spec.size`, storage `v2` with
//! `spec.replicas`) whose `Webhook` conversion is served over HTTPS on loopback. Objects are
//! stored in the storage version, converted on the way in and out; a list is one call; a watch
//! converts its events; a webhook that fails or answers wrongly fails the request with 500.

use super::common::{get, post, raw};
use axum::Json;
use axum::extract::{Path, State};
use base64::Engine;
use fake_apiserver::{ApiServer, HttpsServer};
use http::{Method, StatusCode};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the webhook was asked: (path, desired version, names of the objects).
type Seen = Arc<Mutex<Vec<(String, String, Vec<String>)>>>;

/// v1 `spec.size` is v2 `spec.replicas`.
fn convert(obj: &Value, to: &str) -> Value {
    let mut out = obj.clone();
    out["apiVersion"] = json!(to);
    let spec = out["spec"].as_object_mut().expect("a spec");
    if to.ends_with("/v2") {
        if let Some(size) = spec.remove("size") {
            spec.insert("replicas".into(), size);
        }
    } else if let Some(replicas) = spec.remove("replicas") {
        spec.insert("size".into(), replicas);
    }
    out
}

async fn review(
    State(seen): State<Seen>,
    Path(how): Path<String>,
    Json(review): Json<Value>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let request = &review["request"];
    let to = request["desiredAPIVersion"].as_str().unwrap_or_default().to_string();
    let objects = request["objects"].as_array().cloned().unwrap_or_default();
    let names = objects.iter().map(|o| o["metadata"]["name"].as_str().unwrap_or_default().to_string()).collect();
    seen.lock().unwrap().push((how.clone(), to.clone(), names));
    let mut converted: Vec<Value> = objects.iter().map(|o| convert(o, &to)).collect();
    let mut uid = request["uid"].clone();
    match how.as_str() {
        "fail" => return (StatusCode::INTERNAL_SERVER_ERROR, "no conversion today").into_response(),
        "wrong-uid" => uid = json!("someone-else"),
        "drop" => {
            converted.pop();
        }
        "rename" => converted.iter_mut().for_each(|o| o["metadata"]["name"] = json!("renamed")),
        "label" => converted.iter_mut().for_each(|o| o["metadata"]["labels"] = json!({"converted": "yes"})),
        _ => {}
    }
    Json(json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                "response": {"uid": uid, "convertedObjects": converted, "result": {"status": "Success"}}}))
    .into_response()
}

struct Converter {
    server: HttpsServer,
    seen: Seen,
}

impl Converter {
    async fn start() -> Converter {
        let seen: Seen = Arc::default();
        let router = axum::Router::new().route("/{how}", axum::routing::post(review)).with_state(seen.clone());
        Converter { server: HttpsServer::start(router).await.unwrap(), seen }
    }

    fn calls(&self) -> Vec<(String, String, Vec<String>)> {
        self.seen.lock().unwrap().clone()
    }
}

fn crd(converter: &Converter, how: &str) -> Value {
    let schema = |field: &str| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {field: {"type": "integer"}}}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {"name": "v1", "served": true, "storage": false, "schema": schema("size")},
                {"name": "v2", "served": true, "storage": true, "schema": schema("replicas")}
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {
                    "url": format!("{}/{how}", converter.server.url()),
                    "caBundle": base64::engine::general_purpose::STANDARD.encode(converter.server.ca_pem())
                }
            }}
        }
    })
}

const V1: &str = "/apis/example.com/v1/namespaces/default/gadgets";
const V2: &str = "/apis/example.com/v2/namespaces/default/gadgets";

async fn install(api: &ApiServer, converter: &Converter, how: &str) {
    let (code, body) = post(api, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &crd(converter, how)).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    for _ in 0..50 {
        if get(api, V2).await.0 == StatusCode::OK {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the CRD was not served");
}

fn gadget(name: &str, size: i64) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": {"size": size}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_are_stored_in_the_storage_version_and_converted_both_ways_by_the_webhook() {
    let api = ApiServer::default();
    let converter = Converter::start().await;
    install(&api, &converter, "convert").await;

    let (code, created) = post(&api, V1, &gadget("a", 3)).await;
    assert_eq!(code, StatusCode::CREATED, "{created}");
    assert_eq!((&created["apiVersion"], &created["spec"]), (&json!("example.com/v1"), &json!({"size": 3})));
    // In to the storage version, and back out for the answer.
    let to: Vec<String> = converter.calls().into_iter().map(|(_, to, _)| to).collect();
    assert_eq!(to, ["example.com/v2", "example.com/v1"]);

    // The storage version is served as stored: no call.
    let (_, stored) = get(&api, &format!("{V2}/a")).await;
    assert_eq!((&stored["apiVersion"], &stored["spec"]), (&json!("example.com/v2"), &json!({"replicas": 3})));
    assert_eq!(converter.calls().len(), 2);

    let (code, _) = post(&api, V1, &gadget("b", 5)).await;
    assert_eq!(code, StatusCode::CREATED);
    let before = converter.calls().len();
    let (code, list) = get(&api, V1).await;
    assert_eq!(code, StatusCode::OK, "{list}");
    let sizes: Vec<&Value> = list["items"].as_array().unwrap().iter().map(|i| &i["spec"]["size"]).collect();
    assert_eq!(sizes, [&json!(3), &json!(5)]);
    let calls = converter.calls();
    assert_eq!(calls.len(), before + 1, "a list is one call");
    assert_eq!(calls.last().unwrap().2, ["a", "b"]);

    // An update through v1 is converted in, and the v1 answer out.
    let mut a = get(&api, &format!("{V1}/a")).await.1;
    a["spec"]["size"] = json!(4);
    let (code, updated) = raw(&api, Method::PUT, &format!("{V1}/a"), Some("application/json"), a.to_string()).await;
    assert_eq!((code, &updated["spec"]), (StatusCode::OK, &json!({"size": 4})), "{updated}");
    assert_eq!(get(&api, &format!("{V2}/a")).await.1["spec"], json!({"replicas": 4}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_through_another_version_gets_converted_events() {
    let api = ApiServer::default();
    let converter = Converter::start().await;
    install(&api, &converter, "label").await;
    assert_eq!(post(&api, V1, &gadget("a", 1)).await.0, StatusCode::CREATED);
    let client = api.client();
    let ar = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("example.com", "v1", "Gadget"),
        "gadgets",
    );
    let gadgets: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(client, "default", &ar);
    let list = gadgets.list(&Default::default()).await.unwrap();
    assert_eq!(list.items[0].data["spec"], json!({"size": 1}));
    // The webhook may change labels and annotations, nothing else of the metadata.
    assert_eq!(list.items[0].metadata.labels.as_ref().unwrap()["converted"], "yes");
    use futures::StreamExt;
    let mut events = gadgets.watch(&Default::default(), "0").await.unwrap().boxed();
    let first = tokio::time::timeout(Duration::from_secs(5), events.next()).await.unwrap().unwrap().unwrap();
    let kube::api::WatchEvent::Added(obj) = first else { panic!("{first:?}") };
    assert_eq!(
        (obj.types.unwrap().api_version, &obj.data["spec"]),
        ("example.com/v1".to_string(), &json!({"size": 1}))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_or_wrong_webhook_fails_the_request() {
    for (how, message) in [
        (
            "fail",
            "conversion webhook for example.com/v1, Kind=Gadget failed: an error on the server (\"no conversion today\") has prevented the request from succeeding",
        ),
        ("wrong-uid", "conversion webhook for example.com/v1, Kind=Gadget failed: expected response.uid="),
        ("drop", "conversion webhook for example.com/v1, Kind=Gadget returned 0 objects, expected 1"),
        (
            "rename",
            "conversion webhook for example.com/v1, Kind=Gadget returned invalid object: must have the same name: a != renamed",
        ),
    ] {
        let api = ApiServer::default();
        let converter = Converter::start().await;
        install(&api, &converter, how).await;
        let (code, body) = post(&api, V1, &gadget("a", 1)).await;
        // No Status upstream: `ErrorToAPIStatus` makes a 500 without a reason.
        assert_eq!((code, body.get("reason")), (StatusCode::INTERNAL_SERVER_ERROR, None), "{how}: {body}");
        let got = body["message"].as_str().unwrap();
        assert!(got.starts_with(message), "{how}: {got}");
        // Nothing was stored.
        assert_eq!(get(&api, V2).await.1["items"], json!([]), "{how}");
    }
}
