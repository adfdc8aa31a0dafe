//! The events.k8s.io recorder against the in-process fake API server, in virtual time: what a
//! series looks like on the server at each step of client-go's `tools/events` broadcaster.

use controllers::Clock;
use controllers::events::{EventRecorder, EventType};
use fake_apiserver::{ApiServer, Config};
use k8s_openapi::Resource as _;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use std::sync::Arc;
use std::time::Duration;

fn regarding(rv: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some(ConfigMap::KIND.into()),
        name: Some("thing".into()),
        namespace: Some("default".into()),
        uid: Some("uid-1".into()),
        resource_version: Some(rv.into()),
        field_path: None,
    }
}

async fn events(client: &kube::Client) -> Vec<Event> {
    let mut list =
        Api::<Event>::namespaced(client.clone(), "default").list(&ListParams::default()).await.unwrap().items;
    list.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    list
}

fn series_count(e: &Event) -> Option<i32> {
    e.series.as_ref().map(|s| s.count)
}

#[tokio::test(start_paused = true)]
async fn repeats_fold_into_a_series_keyed_without_the_note_and_the_series_ends_after_six_minutes() {
    let server =
        ApiServer::new(Config { clock_start: Some("2026-01-01T00:00:00Z".parse().unwrap()), ..Config::default() });
    let server_clock = server.clock();
    let clock = Clock::from_fn(move || server_clock.now());
    let client = server.client();
    let recorder = Arc::new(EventRecorder::new(client.clone(), clock, "demo-controller"));
    let upkeep = tokio::spawn({
        let r = recorder.clone();
        async move { r.run_series_upkeep().await }
    });

    recorder.eventf(&regarding("7"), None, EventType::Normal, "Made", "Create", "made a".into()).await;
    let first = events(&client).await;
    assert_eq!(first.len(), 1);
    let e = &first[0];
    assert!(e.metadata.name.as_deref().unwrap().starts_with("thing."), "named <regarding>.<hex nanos>");
    assert_eq!(e.reporting_controller.as_deref(), Some("demo-controller"));
    assert!(e.reporting_instance.as_deref().unwrap().starts_with("demo-controller-"));
    assert_eq!(e.action.as_deref(), Some("Create"));
    assert_eq!(e.note.as_deref(), Some("made a"));
    assert_eq!(e.regarding.as_ref().and_then(|r| r.resource_version.as_deref()), Some("7"));
    assert!(e.deprecated_source.as_ref().is_none_or(|s| s.component.is_none()));
    assert_eq!(series_count(e), None);

    // Another note, same key: the first event gets series.count 2 and keeps its note.
    tokio::time::sleep(Duration::from_secs(1)).await;
    recorder.eventf(&regarding("7"), None, EventType::Normal, "Made", "Create", "made b".into()).await;
    let second = events(&client).await;
    assert_eq!(second.len(), 1);
    assert_eq!(series_count(&second[0]), Some(2));
    assert_eq!(second[0].note.as_deref(), Some("made a"));

    // A third repeat only counts in the cache.
    recorder.eventf(&regarding("7"), None, EventType::Normal, "Made", "Create", "made c".into()).await;
    assert_eq!(series_count(&events(&client).await[0]), Some(2));

    // The regarding object changed (another resourceVersion): a new event.
    recorder.eventf(&regarding("8"), None, EventType::Normal, "Made", "Create", "made d".into()).await;
    assert_eq!(events(&client).await.len(), 2);

    // Six minutes after its last observation the series ends, with its final count written.
    tokio::time::sleep(Duration::from_secs(13 * 60)).await;
    let ended = events(&client).await;
    let series = ended.iter().find(|e| e.note.as_deref() == Some("made a")).unwrap();
    assert_eq!(series_count(series), Some(3));

    // Both left the cache: the same event again is a new object.
    recorder.eventf(&regarding("7"), None, EventType::Normal, "Made", "Create", "made e".into()).await;
    assert_eq!(events(&client).await.len(), 3);
    upkeep.abort();
}
