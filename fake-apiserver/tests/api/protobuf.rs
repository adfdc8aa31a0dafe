//! The protobuf wire format as client-go speaks it: `k8s\0` + `runtime.Unknown` envelopes for
//! bodies and answers, length-prefixed `WatchEvent` frames, protobuf `Status` errors. The
//! messages are k8s-pb's (prost code generated from the upstream .proto files), independent of
//! the server's reflection-based transcoder.

use crate::common::{post, raw_full};
use axum::body::Body;
use fake_apiserver::ApiServer;
use futures::StreamExt;
use http::{Method, Request, StatusCode};
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;
use serde_json::json;
use std::time::Duration;
use tower::ServiceExt;

const PB: &str = "application/vnd.kubernetes.protobuf";

fn envelope(api_version: &str, kind: &str, msg: &impl Message) -> Vec<u8> {
    let u = Unknown {
        type_meta: Some(TypeMeta { api_version: Some(api_version.into()), kind: Some(kind.into()) }),
        raw: Some(msg.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    [b"k8s\0".to_vec(), u.encode_to_vec()].concat()
}

/// The type meta and message of an envelope.
fn open<M: Message + Default>(bytes: &[u8]) -> (String, String, M) {
    let rest = bytes.strip_prefix(b"k8s\0").expect("the k8s\\0 prefix");
    let u = Unknown::decode(rest).expect("an Unknown");
    let tm = u.type_meta.unwrap_or_default();
    let m = M::decode(u.raw.unwrap_or_default().as_slice()).expect("the message");
    (tm.api_version.unwrap_or_default(), tm.kind.unwrap_or_default(), m)
}

/// A Pod as client-go encodes it: every non-pointer field written, empty or not.
fn pod(name: &str) -> core::Pod {
    core::Pod {
        metadata: Some(meta::ObjectMeta {
            name: Some(name.into()),
            generate_name: Some(String::new()),
            namespace: Some(String::new()),
            uid: Some(String::new()),
            resource_version: Some(String::new()),
            generation: Some(0),
            creation_timestamp: Some(meta::Time::default()),
            labels: [("app".to_string(), "web".to_string())].into(),
            ..Default::default()
        }),
        spec: Some(core::PodSpec {
            containers: vec![core::Container {
                name: Some("c".into()),
                image: Some("nginx".into()),
                ports: vec![core::ContainerPort {
                    container_port: Some(80),
                    protocol: Some("TCP".into()),
                    ..Default::default()
                }],
                resources: Some(core::ResourceRequirements {
                    limits: [(
                        "cpu".to_string(),
                        k8s_pb::apimachinery::pkg::api::resource::Quantity { string: Some("500m".into()) },
                    )]
                    .into(),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: Some(core::PodStatus { phase: Some(String::new()), ..Default::default() }),
    }
}

const CT: (&str, Option<&str>) = ("content-type", Some(PB));
const ACCEPT: (&str, Option<&str>) = ("accept", Some("application/vnd.kubernetes.protobuf, application/json"));

#[tokio::test]
async fn a_protobuf_client_creates_gets_lists_and_watches_pods() {
    let server = ApiServer::default();
    let body = envelope("v1", "Pod", &pod("web"));
    let (code, headers, bytes) =
        raw_full(&server, Method::POST, "/api/v1/namespaces/default/pods", &[CT, ACCEPT], body).await;
    assert_eq!(code, StatusCode::CREATED, "{}", String::from_utf8_lossy(&bytes));
    assert_eq!(headers["content-type"], PB);
    let (api_version, kind, created): (_, _, core::Pod) = open(&bytes);
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "Pod"));
    let m = created.metadata.clone().unwrap();
    assert_eq!(m.name.as_deref(), Some("web"));
    assert_eq!(m.namespace.as_deref(), Some("default"));
    assert!(!m.uid.unwrap_or_default().is_empty());
    assert!(m.creation_timestamp.and_then(|t| t.seconds).is_some_and(|s| s > 0));
    let c = &created.spec.as_ref().unwrap().containers[0];
    assert_eq!(c.image.as_deref(), Some("nginx"));
    assert_eq!(c.ports[0].container_port, Some(80));
    assert_eq!(c.resources.as_ref().unwrap().limits["cpu"].string.as_deref(), Some("500m"));
    // The defaults the server applies come back too.
    assert_eq!(created.spec.as_ref().unwrap().restart_policy.as_deref(), Some("Always"));

    // The same object, as JSON, has no empty strings where client-go sent them.
    let (_, _, json) = raw_full(&server, Method::GET, "/api/v1/namespaces/default/pods/web", &[], Body::empty()).await;
    let json: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert!(json["metadata"].get("generateName").is_none(), "{json}");
    assert_eq!(json["metadata"]["labels"], json!({"app": "web"}));

    let (code, headers, bytes) =
        raw_full(&server, Method::GET, "/api/v1/namespaces/default/pods/web", &[ACCEPT], Body::empty()).await;
    assert_eq!((code, headers["content-type"].to_str().unwrap()), (StatusCode::OK, PB));
    let (_, _, got): (_, _, core::Pod) = open(&bytes);
    assert_eq!(got.metadata.unwrap().uid, created.metadata.as_ref().unwrap().uid);

    let (code, _, bytes) =
        raw_full(&server, Method::GET, "/api/v1/namespaces/default/pods", &[ACCEPT], Body::empty()).await;
    assert_eq!(code, StatusCode::OK);
    let (_, kind, list): (_, _, core::PodList) = open(&bytes);
    assert_eq!(kind, "PodList");
    assert_eq!(list.items.len(), 1);
    assert!(list.metadata.unwrap().resource_version.is_some_and(|rv| !rv.is_empty()));

    // A watch: length-prefixed WatchEvent frames whose object is an envelope.
    let req = Request::get("/api/v1/namespaces/default/pods?watch=true&resourceVersion=0")
        .header("accept", PB)
        .body(Body::empty())
        .unwrap();
    let resp = server.router().oneshot(req).await.unwrap();
    assert_eq!(resp.headers()["content-type"], "application/vnd.kubernetes.protobuf;stream=watch");
    let mut stream = resp.into_body().into_data_stream();
    let mut buf = Vec::new();
    let frame = loop {
        if buf.len() >= 4 {
            let len = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
            if buf.len() >= 4 + len {
                break buf[4..4 + len].to_vec();
            }
        }
        let chunk = tokio::time::timeout(Duration::from_secs(10), stream.next()).await.unwrap().unwrap().unwrap();
        buf.extend_from_slice(&chunk);
    };
    let event = meta::WatchEvent::decode(frame.as_slice()).unwrap();
    assert_eq!(event.r#type.as_deref(), Some("ADDED"));
    let (_, kind, watched): (_, _, core::Pod) = open(&event.object.unwrap().raw.unwrap());
    assert_eq!(kind, "Pod");
    assert_eq!(watched.metadata.unwrap().name.as_deref(), Some("web"));

    // client-go sends DeleteOptions in protobuf too.
    let options = meta::DeleteOptions { grace_period_seconds: Some(0), ..Default::default() };
    let (code, _, bytes) = raw_full(
        &server,
        Method::DELETE,
        "/api/v1/namespaces/default/pods/web",
        &[CT, ACCEPT],
        envelope("meta.k8s.io/v1", "DeleteOptions", &options),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{}", String::from_utf8_lossy(&bytes));
    // Deleted at once (grace period 0): the pod registry returns the deleted object
    // (ReturnDeletedObject), as protobuf.
    let (_, kind, pod): (_, _, core::Pod) = open(&bytes);
    assert_eq!((kind.as_str(), pod.metadata.and_then(|m| m.name).as_deref()), ("Pod", Some("web")));
    let (code, _, _) =
        raw_full(&server, Method::GET, "/api/v1/namespaces/default/pods/web", &[ACCEPT], Body::empty()).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn errors_are_protobuf_status_objects() {
    let server = ApiServer::default();
    let (code, headers, bytes) =
        raw_full(&server, Method::GET, "/api/v1/namespaces/default/pods/nope", &[ACCEPT], Body::empty()).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    assert_eq!(headers["content-type"], PB);
    let (api_version, kind, status): (_, _, meta::Status) = open(&bytes);
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "Status"));
    assert_eq!(status.code, Some(404));
    assert_eq!(status.reason.as_deref(), Some("NotFound"));
    assert_eq!(status.message.as_deref(), Some("pods \"nope\" not found"));
    assert_eq!(status.details.unwrap().name.as_deref(), Some("nope"));

    // A body that is not an envelope.
    let (code, _, bytes) =
        raw_full(&server, Method::POST, "/api/v1/namespaces/default/pods", &[CT, ACCEPT], "garbage").await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    let (_, _, status): (_, _, meta::Status) = open(&bytes);
    assert!(status.message.unwrap().contains("the protobuf body could not be decoded"));
    // A truncated message inside a good envelope.
    let mut body = envelope("v1", "Pod", &pod("web"));
    body.truncate(body.len() - 3);
    let (code, _, _) = raw_full(&server, Method::POST, "/api/v1/namespaces/default/pods", &[CT], body).await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    // Invalid objects are 422 with causes, in protobuf.
    let mut bad = pod("Not_A_Name");
    bad.spec.as_mut().unwrap().containers[0].image = Some(String::new());
    let (code, _, bytes) =
        raw_full(&server, Method::POST, "/api/v1/namespaces/default/pods", &[CT, ACCEPT], envelope("v1", "Pod", &bad))
            .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    let (_, _, status): (_, _, meta::Status) = open(&bytes);
    assert_eq!(status.reason.as_deref(), Some("Invalid"));
    assert!(status.details.unwrap().causes.iter().any(|c| c.field.as_deref() == Some("metadata.name")));
}

#[tokio::test]
async fn kubectl_creates_of_built_ins_work_in_protobuf() {
    let server = ApiServer::default();
    let ns = core::Namespace {
        metadata: Some(meta::ObjectMeta { name: Some("foo".into()), ..Default::default() }),
        spec: Some(core::NamespaceSpec::default()),
        status: Some(core::NamespaceStatus { phase: Some(String::new()), ..Default::default() }),
    };
    let (code, _, bytes) =
        raw_full(&server, Method::POST, "/api/v1/namespaces", &[CT], envelope("v1", "Namespace", &ns)).await;
    assert_eq!(code, StatusCode::CREATED, "{}", String::from_utf8_lossy(&bytes));
    let created: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(created["status"]["phase"], "Active");

    let secret = core::Secret {
        metadata: Some(meta::ObjectMeta { name: Some("s".into()), ..Default::default() }),
        data: [("a".to_string(), b"b".to_vec())].into(),
        r#type: Some(String::new()),
        ..Default::default()
    };
    let (code, _, bytes) =
        raw_full(&server, Method::POST, "/api/v1/namespaces/foo/secrets", &[CT], envelope("v1", "Secret", &secret))
            .await;
    assert_eq!(code, StatusCode::CREATED, "{}", String::from_utf8_lossy(&bytes));
    let created: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(created["data"], json!({"a": "Yg=="}));
    assert_eq!(created["type"], "Opaque");

    use k8s_pb::api::apps::v1 as apps;
    let deployment = apps::Deployment {
        metadata: Some(meta::ObjectMeta { name: Some("d".into()), ..Default::default() }),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(0),
            selector: Some(meta::LabelSelector {
                match_labels: [("app".to_string(), "d".to_string())].into(),
                ..Default::default()
            }),
            template: Some(core::PodTemplateSpec {
                metadata: Some(meta::ObjectMeta {
                    labels: [("app".to_string(), "d".to_string())].into(),
                    ..Default::default()
                }),
                spec: pod("x").spec,
            }),
            strategy: Some(apps::DeploymentStrategy {
                r#type: Some("RollingUpdate".into()),
                rolling_update: Some(apps::RollingUpdateDeployment {
                    max_unavailable: Some(k8s_pb::apimachinery::pkg::util::intstr::IntOrString {
                        r#type: Some(1),
                        int_val: Some(0),
                        str_val: Some("25%".into()),
                    }),
                    max_surge: Some(k8s_pb::apimachinery::pkg::util::intstr::IntOrString {
                        r#type: Some(0),
                        int_val: Some(2),
                        str_val: Some(String::new()),
                    }),
                }),
            }),
            min_ready_seconds: Some(0),
            ..Default::default()
        }),
        status: None,
    };
    let (code, _, bytes) = raw_full(
        &server,
        Method::POST,
        "/apis/apps/v1/namespaces/foo/deployments",
        &[CT],
        envelope("apps/v1", "Deployment", &deployment),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{}", String::from_utf8_lossy(&bytes));
    let created: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    // A pointer's zero is kept (replicas: 0 is not "unset"), int-or-string both ways.
    assert_eq!(created["spec"]["replicas"], 0);
    assert_eq!(created["spec"]["strategy"]["rollingUpdate"], json!({"maxUnavailable": "25%", "maxSurge": 2}));
}

#[tokio::test]
async fn custom_resources_have_no_protobuf_form_and_yaml_is_served() {
    let server = ApiServer::default();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    let (code, _) = post(&server, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &crd).await;
    assert_eq!(code, StatusCode::CREATED);
    let uri = "/apis/example.com/v1/namespaces/default/widgets";
    let (code, _, _) = raw_full(&server, Method::GET, uri, &[("accept", Some(PB))], Body::empty()).await;
    assert_eq!(code, StatusCode::NOT_ACCEPTABLE);
    let (code, headers, _) = raw_full(&server, Method::GET, uri, &[ACCEPT], Body::empty()).await;
    assert_eq!((code, headers["content-type"].to_str().unwrap()), (StatusCode::OK, "application/json"));
    let (code, _, bytes) =
        raw_full(&server, Method::POST, uri, &[CT], envelope("example.com/v1", "Widget", &pod("w"))).await;
    assert_eq!(code, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{}", String::from_utf8_lossy(&bytes));

    // The CRD itself (a built-in) has a protobuf form, schema unions included.
    let (code, _, bytes) = raw_full(
        &server,
        Method::GET,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
        &[ACCEPT],
        Body::empty(),
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    let (_, kind, _): (_, _, k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition) =
        open(&bytes);
    assert_eq!(kind, "CustomResourceDefinition");

    // YAML answers.
    let (code, headers, bytes) = raw_full(
        &server,
        Method::GET,
        "/api/v1/namespaces/default",
        &[("accept", Some("application/yaml"))],
        Body::empty(),
    )
    .await;
    assert_eq!((code, headers["content-type"].to_str().unwrap()), (StatusCode::OK, "application/yaml"));
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    assert!(text.contains("kind: Namespace") && text.contains("name: default"), "{text}");
    // A watch has no YAML form.
    let (code, _, _) = raw_full(
        &server,
        Method::GET,
        "/api/v1/namespaces?watch=true",
        &[("accept", Some("application/yaml"))],
        Body::empty(),
    )
    .await;
    assert_eq!(code, StatusCode::NOT_ACCEPTABLE);
}
