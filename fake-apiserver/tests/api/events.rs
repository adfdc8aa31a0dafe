//! Events: core/v1 and events.k8s.io/v1 share one storage, both APIs' field selectors work,
//! and kube-runtime's Recorder publishes events that can be found again.

use crate::common::{get, post};
use fake_apiserver::ApiServer;
use http::StatusCode;
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent};
use k8s_openapi::api::events::v1::Event;
use kube::Resource;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::events::{Event as RecorderEvent, EventType, Recorder, Reporter};
use rstest::rstest;
use serde_json::json;

fn names(list: &serde_json::Value) -> Vec<&str> {
    list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn recorder_events_are_listed_by_both_apis_with_field_selectors() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let cm = cms
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "watched"}})).unwrap())
        .await
        .unwrap();
    let other = cms
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "other"}})).unwrap())
        .await
        .unwrap();
    let reporter = Reporter { controller: "demo-controller".into(), instance: Some("demo-0".into()) };
    let recorder = Recorder::new(server.client(), reporter);
    let event = |reason: &str| RecorderEvent {
        type_: EventType::Warning,
        reason: reason.into(),
        note: Some("something happened".into()),
        action: "Reconcile".into(),
        secondary: None,
    };
    recorder.publish(&event("Broken"), &cm.object_ref(&())).await.unwrap();
    recorder.publish(&event("Broken"), &cm.object_ref(&())).await.unwrap();
    recorder.publish(&event("Other"), &other.object_ref(&())).await.unwrap();

    // events.k8s.io/v1, with its own field names.
    let events: Api<Event> = Api::default_namespaced(server.client());
    let found = events.list(&ListParams::default().fields("regarding.name=watched")).await.unwrap();
    assert_eq!(found.items.len(), 1, "the repeat became a series, not a second event");
    let e = &found.items[0];
    assert_eq!(e.reason.as_deref(), Some("Broken"));
    assert_eq!(e.note.as_deref(), Some("something happened"));
    assert_eq!(e.series.as_ref().map(|s| s.count), Some(2));
    let by_controller =
        events.list(&ListParams::default().fields("reportingController=demo-controller,type=Warning")).await.unwrap();
    assert_eq!(by_controller.items.len(), 2);

    // The same events through core/v1, converted, with the core field names.
    let core: Api<CoreEvent> = Api::default_namespaced(server.client());
    let found = core
        .list(&ListParams::default().fields(&format!("involvedObject.uid={},reason=Broken", cm.metadata.uid.unwrap())))
        .await
        .unwrap();
    assert_eq!(found.items.len(), 1);
    let c = &found.items[0];
    assert_eq!(c.message.as_deref(), Some("something happened"));
    assert_eq!(c.involved_object.name.as_deref(), Some("watched"));
    assert_eq!(c.reporting_component.as_deref(), Some("demo-controller"));
    assert_eq!(c.metadata.name, e.metadata.name);
    // `source` falls back to the reporting controller when there is no source component.
    let by_source = core.list(&ListParams::default().fields("source=demo-controller")).await.unwrap();
    assert_eq!(by_source.items.len(), 2);
    let kinds = core
        .list(&ListParams::default().fields("involvedObject.kind=ConfigMap,involvedObject.name!=watched"))
        .await
        .unwrap();
    assert_eq!(kinds.items.len(), 1);
}

/// A server holding one core/v1 Event (a kubelet's `Started`, about pod `p`).
async fn server_with_a_core_event() -> ApiServer {
    let server = ApiServer::default();
    let (code, body) = post(
        &server,
        "/api/v1/namespaces/default/events",
        &json!({
            "metadata": {"name": "pod-started"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p", "apiVersion": "v1", "fieldPath": "spec.containers{c}"},
            "reason": "Started",
            "message": "Started container c",
            "source": {"component": "kubelet", "host": "n1"},
            "type": "Normal",
            "count": 3,
            "firstTimestamp": "2026-01-01T00:00:00Z",
            "lastTimestamp": "2026-01-01T00:01:00Z",
        }),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    server
}

#[tokio::test]
async fn core_events_are_served_as_events_k8s_io() {
    let server = server_with_a_core_event().await;
    let (code, e) = get(&server, "/apis/events.k8s.io/v1/namespaces/default/events/pod-started").await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(e["apiVersion"], "events.k8s.io/v1");
    assert_eq!(e["regarding"]["name"], "p");
    assert_eq!(e["note"], "Started container c");
    assert_eq!(e["deprecatedSource"]["component"], "kubelet");
    assert_eq!(e["deprecatedCount"], 3);
    assert_eq!(e["deprecatedLastTimestamp"], "2026-01-01T00:01:00Z");
    assert!(e.get("involvedObject").is_none() && e.get("message").is_none());
}

/// Each API's field selectors find the event written through core/v1.
#[rstest]
#[case("/api/v1/namespaces/default/events?fieldSelector=source%3Dkubelet", &["pod-started"])]
#[case("/api/v1/namespaces/default/events?fieldSelector=involvedObject.fieldPath%3Dspec.containers%7Bc%7D", &["pod-started"])]
#[case("/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.kind%3DPod", &["pod-started"])]
#[case("/apis/events.k8s.io/v1/events?fieldSelector=regarding.kind%3DNode", &[])]
#[case("/api/v1/events?fieldSelector=type%3DNormal", &["pod-started"])]
#[tokio::test]
async fn field_selectors_of_both_apis_match(#[case] uri: &str, #[case] want: &[&str]) {
    let server = server_with_a_core_event().await;
    let (code, list) = get(&server, uri).await;
    assert_eq!(code, StatusCode::OK, "{uri}: {list}");
    assert_eq!(names(&list), want, "{uri}");
}

/// Each API accepts only its own spellings.
#[rstest]
#[case("/apis/events.k8s.io/v1/events?fieldSelector=involvedObject.name%3Dp", "involvedObject.name")]
#[case("/api/v1/events?fieldSelector=regarding.name%3Dp", "regarding.name")]
#[case("/apis/events.k8s.io/v1/events?fieldSelector=source%3Dkubelet", "source")]
#[tokio::test]
async fn the_other_apis_field_names_are_not_supported(#[case] uri: &str, #[case] field: &str) {
    let server = server_with_a_core_event().await;
    let (code, status) = get(&server, uri).await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{uri}");
    assert_eq!(status["message"], format!("field label not supported: {field}"));
}
