//! WATCH semantics: resume, history window and 410, bookmarks, timeouts, selector transitions,
//! streaming lists, and kube-runtime's watcher and reflector on top.

use crate::common::{raw_full, raw_with};
use fake_apiserver::{ApiServer, Config, INITIAL_EVENTS_END};
use futures::{StreamExt, TryStreamExt};
use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let labels: BTreeMap<String, String> = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
}

fn describe(e: &WatchEvent<ConfigMap>) -> String {
    match e {
        WatchEvent::Added(o) => format!("ADDED {}", o.metadata.name.clone().unwrap_or_default()),
        WatchEvent::Modified(o) => format!("MODIFIED {}", o.metadata.name.clone().unwrap_or_default()),
        WatchEvent::Deleted(o) => format!("DELETED {}", o.metadata.name.clone().unwrap_or_default()),
        WatchEvent::Bookmark(b) => format!("BOOKMARK {}", b.metadata.resource_version),
        WatchEvent::Error(e) => format!("ERROR {} {}", e.code, e.reason),
    }
}

async fn next_events(
    stream: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin),
    n: usize,
) -> Vec<String> {
    let mut out = Vec::new();
    while out.len() < n {
        let e = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("event in time")
            .expect("stream open")
            .unwrap();
        out.push(describe(&e));
    }
    out
}

#[tokio::test]
async fn watch_from_a_list_version_sees_exactly_the_later_changes_in_order() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    cms.create(&PostParams::default(), &cm("before", &[])).await.unwrap();
    let list = cms.list(&ListParams::default()).await.unwrap();
    let rv = list.metadata.resource_version.unwrap();
    let mut w = cms.watch(&WatchParams::default().disable_bookmarks(), &rv).await.unwrap().boxed();
    cms.create(&PostParams::default(), &cm("a", &[])).await.unwrap();
    cms.patch("a", &PatchParams::default(), &Patch::Merge(json!({"data": {"x": "1"}}))).await.unwrap();
    cms.delete("a", &Default::default()).await.unwrap();
    assert_eq!(next_events(&mut w, 3).await, vec!["ADDED a", "MODIFIED a", "DELETED a"]);
}

#[tokio::test]
async fn watch_without_version_starts_with_the_current_state() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    cms.create(&PostParams::default(), &cm("x", &[])).await.unwrap();
    cms.create(&PostParams::default(), &cm("y", &[])).await.unwrap();
    for rv in ["", "0"] {
        let (code, _, body) = raw_full(
            &server,
            Method::GET,
            &format!("/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1&resourceVersion={rv}"),
            &[],
            "",
        )
        .await;
        assert_eq!(code, StatusCode::OK);
        let lines: Vec<Value> =
            body.split(|b| *b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).unwrap()).collect();
        let names: Vec<&str> = lines.iter().map(|e| e["object"]["metadata"]["name"].as_str().unwrap()).collect();
        assert_eq!(names, vec!["x", "y"], "resourceVersion={rv:?}");
        assert!(lines.iter().all(|e| e["type"] == "ADDED"));
    }
}

#[tokio::test]
async fn watch_from_a_version_outside_the_history_window_gets_410_as_an_error_event() {
    let server = ApiServer::new(Config { history: 5, ..Default::default() });
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let first = cms.create(&PostParams::default(), &cm("a0", &[])).await.unwrap();
    for i in 1..10 {
        cms.create(&PostParams::default(), &cm(&format!("a{i}"), &[])).await.unwrap();
    }
    let rv = first.metadata.resource_version.unwrap();
    let mut w = cms.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    let e = w.next().await.unwrap().unwrap();
    match e {
        WatchEvent::Error(s) => {
            assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
            assert!(s.message.starts_with("too old resource version"), "{}", s.message);
        }
        other => panic!("expected a 410 ERROR event, got {}", describe(&other)),
    }
    assert!(w.next().await.is_none(), "the stream ends after the error");
    // Inside the window resuming works.
    let recent = server.resource_version() - 2;
    let mut ok = cms.watch(&WatchParams::default(), &recent.to_string()).await.unwrap().boxed();
    assert_eq!(next_events(&mut ok, 2).await, vec!["ADDED a8", "ADDED a9"]);
}

/// A watch wakes only for writes to its own collection; writes to others that push the history
/// window past where it last looked must not end it with a 410: it missed nothing.
#[tokio::test]
async fn a_watch_survives_other_collections_filling_the_history_window() {
    let server = ApiServer::new(Config { history: 5, ..Default::default() });
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::default_namespaced(server.client());
    let rv = server.resource_version().to_string();
    let mut w = cms.watch(&WatchParams::default().disable_bookmarks(), &rv).await.unwrap().boxed();
    cms.create(&PostParams::default(), &cm("a", &[])).await.unwrap();
    assert_eq!(next_events(&mut w, 1).await, vec!["ADDED a"]);
    for i in 0..20 {
        let secret = serde_json::from_value(json!({"metadata": {"name": format!("s{i}")}})).unwrap();
        secrets.create(&PostParams::default(), &secret).await.unwrap();
    }
    cms.create(&PostParams::default(), &cm("b", &[])).await.unwrap();
    assert_eq!(next_events(&mut w, 1).await, vec!["ADDED b"], "the watch goes on after the window moved");
}

#[tokio::test(start_paused = true)]
async fn bookmarks_arrive_periodically_when_asked_for_and_carry_the_current_version() {
    let server = ApiServer::new(Config { bookmark_interval: Duration::from_secs(60), ..Default::default() });
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let rv = server.resource_version().to_string();
    let mut w = cms.watch(&WatchParams::default().timeout(290), &rv).await.unwrap().boxed();
    // A write to another namespace moves the global version without an event for this watch.
    let other: Api<ConfigMap> = Api::namespaced(server.client(), "kube-system");
    other.create(&PostParams::default(), &cm("elsewhere", &[])).await.unwrap();
    let e = tokio::time::timeout(Duration::from_secs(61), w.next())
        .await
        .expect("a bookmark within the interval")
        .unwrap()
        .unwrap();
    match e {
        WatchEvent::Bookmark(b) => assert_eq!(b.metadata.resource_version, server.resource_version().to_string()),
        other => panic!("expected a bookmark, got {}", describe(&other)),
    }
    let mut plain = cms.watch(&WatchParams::default().disable_bookmarks().timeout(200), &rv).await.unwrap().boxed();
    assert!(plain.next().await.is_none(), "no bookmarks unless asked; the stream ends at timeoutSeconds");
}

#[tokio::test(start_paused = true)]
async fn a_watch_ends_at_timeout_seconds() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let start = tokio::time::Instant::now();
    let mut w = cms.watch(&WatchParams::default().disable_bookmarks().timeout(42), "0").await.unwrap().boxed();
    assert!(w.next().await.is_none());
    assert_eq!(start.elapsed().as_secs(), 42);
}

#[tokio::test]
async fn label_selected_watch_sees_objects_enter_and_leave_the_selection() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let rv = server.resource_version().to_string();
    let wp = WatchParams::default().disable_bookmarks().labels("app=web");
    let mut w = cms.watch(&wp, &rv).await.unwrap().boxed();
    cms.create(&PostParams::default(), &cm("x", &[("app", "db")])).await.unwrap();
    cms.patch("x", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"app": "web"}}})))
        .await
        .unwrap();
    cms.patch("x", &PatchParams::default(), &Patch::Merge(json!({"data": {"k": "v"}}))).await.unwrap();
    cms.patch("x", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"app": "db"}}})))
        .await
        .unwrap();
    cms.delete("x", &Default::default()).await.unwrap();
    cms.create(&PostParams::default(), &cm("y", &[("app", "web")])).await.unwrap();
    assert_eq!(next_events(&mut w, 4).await, vec!["ADDED x", "MODIFIED x", "DELETED x", "ADDED y"]);
}

#[tokio::test]
async fn field_selected_watch_follows_one_object_like_kubectl_wait() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let rv = server.resource_version().to_string();
    let mut w =
        cms.watch(&WatchParams::default().disable_bookmarks().fields("metadata.name=b"), &rv).await.unwrap().boxed();
    for n in ["a", "b", "c"] {
        cms.create(&PostParams::default(), &cm(n, &[])).await.unwrap();
    }
    cms.delete("b", &Default::default()).await.unwrap();
    assert_eq!(next_events(&mut w, 2).await, vec!["ADDED b", "DELETED b"]);
}

#[tokio::test]
async fn send_initial_events_streams_the_state_then_an_initial_events_end_bookmark() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    cms.create(&PostParams::default(), &cm("a", &[])).await.unwrap();
    let list_rv = server.resource_version();
    let uri = "/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1";
    let (code, _, body) = raw_full(&server, Method::GET, uri, &[], "").await;
    assert_eq!(code, StatusCode::OK);
    let events: Vec<Value> =
        body.split(|b| *b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).unwrap()).collect();
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[1]["type"], "BOOKMARK");
    assert_eq!(events[1]["object"]["metadata"]["annotations"][INITIAL_EVENTS_END], "true");
    assert_eq!(events[1]["object"]["metadata"]["resourceVersion"], list_rv.to_string());
    // kube-apiserver 1.37 sends the initial-events-end bookmark without allowWatchBookmarks
    // (measured by `kproof differential`).
    let uri = "/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1";
    let (code, _, body) = raw_full(&server, Method::GET, uri, &[], "").await;
    assert_eq!(code, StatusCode::OK);
    let events: Vec<Value> =
        body.split(|b| *b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).unwrap()).collect();
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[1]["type"], "BOOKMARK");
    assert_eq!(events[1]["object"]["metadata"]["annotations"][INITIAL_EVENTS_END], "true");
    // It still needs resourceVersionMatch=NotOlderThan.
    let (code, status) = raw_with(
        &server,
        Method::GET,
        "/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&allowWatchBookmarks=true",
        &[],
        "",
    )
    .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{status}");
}

#[tokio::test]
async fn kube_runtime_streaming_list_works() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    cms.create(&PostParams::default(), &cm("a", &[])).await.unwrap();
    let cfg = watcher::Config::default().streaming_lists();
    let mut objs = watcher(cms.clone(), cfg).applied_objects().boxed();
    let first = tokio::time::timeout(Duration::from_secs(10), objs.try_next()).await.unwrap().unwrap().unwrap();
    assert_eq!(first.metadata.name.as_deref(), Some("a"));
    cms.create(&PostParams::default(), &cm("b", &[])).await.unwrap();
    let second = tokio::time::timeout(Duration::from_secs(10), objs.try_next()).await.unwrap().unwrap().unwrap();
    assert_eq!(second.metadata.name.as_deref(), Some("b"));
}

/// kube-runtime's reflector is forced through a 410 mid-stream (the history is compacted
/// before its watch reads the next change); it must re-list and end equal to a fresh LIST.
#[tokio::test]
async fn reflector_survives_a_forced_410_and_ends_equal_to_a_fresh_list() {
    let server = ApiServer::default();
    crate::common::reflector_survives_forced_410(&server, server.client()).await;
}

/// Many watchers each LIST then WATCH from the list's version while a writer creates,
/// updates and deletes objects: every watcher must end with exactly the final state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_event_is_lost_between_list_and_watch_with_many_concurrent_watchers() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    const WATCHERS: usize = 40;
    const OBJECTS: usize = 150;
    let writer = {
        let cms = cms.clone();
        tokio::spawn(async move {
            for i in 0..OBJECTS {
                cms.create(&PostParams::default(), &cm(&format!("o{i}"), &[])).await.unwrap();
                if i % 3 == 0 {
                    cms.patch(
                        &format!("o{i}"),
                        &PatchParams::default(),
                        &Patch::Merge(json!({"data": {"i": i.to_string()}})),
                    )
                    .await
                    .unwrap();
                }
                if i % 5 == 0 {
                    cms.delete(&format!("o{i}"), &Default::default()).await.unwrap();
                }
                if i % 10 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        })
    };
    let mut tasks = Vec::new();
    for _ in 0..WATCHERS {
        let cms = cms.clone();
        let server = server.clone();
        tasks.push(tokio::spawn(async move {
            let list = cms.list(&ListParams::default()).await.unwrap();
            let mut view: BTreeMap<String, String> = list
                .items
                .iter()
                .map(|o| (o.metadata.name.clone().unwrap(), o.metadata.resource_version.clone().unwrap()))
                .collect();
            let rv = list.metadata.resource_version.unwrap();
            let mut w = cms.watch(&WatchParams::default().disable_bookmarks(), &rv).await.unwrap().boxed();
            loop {
                // Stop once this watcher has caught up with the writer's last write.
                let done_rv = server.resource_version();
                let caught_up = view.values().chain(std::iter::once(&rv)).filter_map(|v| v.parse::<u64>().ok()).max();
                if view.len() == OBJECTS - OBJECTS.div_ceil(5) && caught_up == Some(done_rv) {
                    break;
                }
                let e = match tokio::time::timeout(Duration::from_secs(5), w.next()).await {
                    Ok(Some(e)) => e.unwrap(),
                    Ok(None) => panic!("watch ended early"),
                    Err(_) => break,
                };
                match e {
                    WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                        view.insert(o.metadata.name.unwrap(), o.metadata.resource_version.unwrap());
                    }
                    WatchEvent::Deleted(o) => {
                        view.remove(&o.metadata.name.unwrap());
                    }
                    other => panic!("unexpected {}", describe(&other)),
                }
            }
            view
        }));
    }
    writer.await.unwrap();
    let fresh = cms.list(&ListParams::default()).await.unwrap();
    let want: BTreeMap<String, String> = fresh
        .items
        .iter()
        .map(|o| (o.metadata.name.clone().unwrap(), o.metadata.resource_version.clone().unwrap()))
        .collect();
    assert_eq!(want.len(), OBJECTS - OBJECTS.div_ceil(5));
    for t in tasks {
        assert_eq!(t.await.unwrap(), want);
    }
}

/// An injected watch lag (obligation C16 of kproof's ReservedFor contract, "informer lag"): the lagged user's watch
/// delivers events about the namespace's objects the lag late, in order, and an event of
/// another namespace that follows a late one waits behind it; LIST and GET stay current, and
/// another user's watch is not delayed. Real time (the runtime is not paused), as in
/// `kproof certify`.
#[tokio::test]
async fn an_injected_watch_lag_delays_one_users_events_in_order_while_reads_stay_current() {
    let server = ApiServer::default();
    let admin = server.client();
    for ns in ["team", "other"] {
        let n: k8s_openapi::api::core::v1::Namespace =
            serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
        Api::all(admin.clone()).create(&PostParams::default(), &n).await.unwrap();
    }
    let user = fake_apiserver::UserInfo::service_account("team", "ctl");
    let lagged = server.client_with_token(&server.issue_token(user.clone()));
    // Generous, so that the checks before it finish inside it on a loaded machine.
    let lag = Duration::from_millis(2000);
    server.inject_watch_lag(fake_apiserver::WatchLag { user: user.name.clone(), namespace: "team".into(), delay: lag });
    let wp = WatchParams::default().timeout(30);
    let mut late = Api::<ConfigMap>::namespaced(lagged.clone(), "team").watch(&wp, "0").await.unwrap().boxed();
    let mut everywhere = Api::<ConfigMap>::all(lagged.clone()).watch(&wp, "0").await.unwrap().boxed();
    let mut prompt = Api::<ConfigMap>::namespaced(admin.clone(), "team").watch(&wp, "0").await.unwrap().boxed();
    let team: Api<ConfigMap> = Api::namespaced(admin.clone(), "team");
    let start = tokio::time::Instant::now();
    for name in ["c1", "c2", "c3"] {
        team.create(&PostParams::default(), &cm(name, &[])).await.unwrap();
    }
    Api::<ConfigMap>::namespaced(admin.clone(), "other").create(&PostParams::default(), &cm("o1", &[])).await.unwrap();
    team.patch("c1", &PatchParams::default(), &Patch::Merge(json!({"data": {"k": "v"}}))).await.unwrap();

    // Another user's watch of the same namespace is not late.
    assert_eq!(next_events(&mut prompt, 4).await, ["ADDED c1", "ADDED c2", "ADDED c3", "MODIFIED c1"]);
    // Reads by the lagged user are current while its watch still holds the events back.
    let c1 = Api::<ConfigMap>::namespaced(lagged.clone(), "team").get("c1").await.unwrap();
    assert_eq!(c1.data.unwrap_or_default().get("k").map(String::as_str), Some("v"));
    let listed = Api::<ConfigMap>::namespaced(lagged.clone(), "team").list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 3);
    // The first event is due one lag after its write, a fraction of a millisecond after `start`;
    // the timer wheel's millisecond ticks could put both deadlines on one tick, so the quiet
    // period checked ends a little early.
    let quiet = lag - Duration::from_millis(100);
    assert!(start.elapsed() < quiet, "the checks above ran within the lag ({:?})", start.elapsed());
    if let Ok(early) = tokio::time::timeout(quiet - start.elapsed(), late.next()).await {
        panic!("no event arrives before the lag is over, got {early:?} after {:?}", start.elapsed());
    }

    // Then every event arrives, in order, none earlier than the lag.
    assert_eq!(next_events(&mut late, 4).await, ["ADDED c1", "ADDED c2", "ADDED c3", "MODIFIED c1"]);
    assert!(start.elapsed() >= lag, "delivered after {:?}", start.elapsed());
    // The cluster-wide watch: the event of namespace other (not lagged) waits behind the late ones.
    assert_eq!(next_events(&mut everywhere, 5).await, ["ADDED c1", "ADDED c2", "ADDED c3", "ADDED o1", "MODIFIED c1"]);
}

/// A restart (kube-apiserver stopped and started on the same etcd) ends every open watch; a
/// client resuming from a version the new process's watch cache does not hold gets 410 and
/// lists again, finding every object as it was.
#[tokio::test]
async fn a_restart_ends_open_watches_and_sends_resumers_back_to_a_list() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let before = cms.create(&PostParams::default(), &cm("a", &[])).await.unwrap();
    let rv = before.metadata.resource_version.clone().unwrap();
    let mut w = cms.watch(&WatchParams::default().disable_bookmarks(), &rv).await.unwrap().boxed();
    cms.create(&PostParams::default(), &cm("b", &[])).await.unwrap();
    assert_eq!(next_events(&mut w, 1).await, vec!["ADDED b"]);
    server.restart();
    let end = tokio::time::timeout(Duration::from_secs(10), w.next()).await.expect("the watch ends in time");
    assert!(end.is_none(), "the open watch ends with the restart");
    let mut resumed = cms.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    match resumed.next().await.unwrap().unwrap() {
        WatchEvent::Error(s) => assert_eq!((s.code, s.reason.as_str()), (410, "Expired")),
        other => panic!("expected a 410 ERROR event, got {}", describe(&other)),
    }
    let names: Vec<String> =
        cms.list(&ListParams::default()).await.unwrap().items.into_iter().filter_map(|c| c.metadata.name).collect();
    assert_eq!(names, vec!["a", "b"]);
    assert_eq!(cms.get("a").await.unwrap().metadata.resource_version, before.metadata.resource_version);
}
