//! LIST: label and field selectors, pagination with consistent snapshots and token expiry,
//! resourceVersion and resourceVersionMatch semantics.

use crate::common::get;
use fake_apiserver::{ApiServer, Config};
use http::StatusCode;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, VersionMatch};
use rstest::rstest;
use serde_json::json;

async fn seed(server: &ApiServer) -> Api<ConfigMap> {
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    for (name, labels) in [
        ("a", json!({"app": "web", "tier": "front"})),
        ("b", json!({"app": "web", "tier": "back"})),
        ("c", json!({"app": "db"})),
        ("d", json!({})),
    ] {
        let c: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
        cms.create(&PostParams::default(), &c).await.unwrap();
    }
    cms
}

async fn names(cms: &Api<ConfigMap>, lp: &ListParams) -> Vec<String> {
    cms.list(lp).await.unwrap().items.into_iter().map(|c| c.metadata.name.unwrap()).collect()
}

#[rstest]
#[case("app=web", &["a", "b"])]
#[case("app==web", &["a", "b"])]
#[case("app!=web", &["c", "d"])]
#[case("app in (web,db)", &["a", "b", "c"])]
#[case("app notin (web)", &["c", "d"])]
#[case("tier", &["a", "b"])]
#[case("!tier", &["c", "d"])]
#[case("app=web,tier=back", &["b"])]
#[case("", &["a", "b", "c", "d"])]
#[tokio::test]
async fn label_selectors_support_every_operator(#[case] selector: &str, #[case] want: &[&str]) {
    let server = ApiServer::default();
    let cms = seed(&server).await;
    assert_eq!(names(&cms, &ListParams::default().labels(selector)).await, want, "selector {selector:?}");
}

#[tokio::test]
async fn field_selectors_cover_metadata_and_per_kind_fields() {
    let server = ApiServer::default();
    let cms = seed(&server).await;
    assert_eq!(names(&cms, &ListParams::default().fields("metadata.name=c")).await, vec!["c"]);
    assert_eq!(names(&cms, &ListParams::default().fields("metadata.name!=c")).await, vec!["a", "b", "d"]);
    let all: Api<ConfigMap> = Api::all(server.client());
    assert_eq!(
        names(&all, &ListParams::default().fields("metadata.namespace=default,metadata.name=a")).await,
        vec!["a"]
    );
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    for (name, node) in [("p1", Some("n1")), ("p2", Some("n2")), ("p3", None)] {
        let p: Pod = serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}})).unwrap();
        pods.create(&PostParams::default(), &p).await.unwrap();
    }
    pods.patch_status("p2", &PatchParams::default(), &Patch::Merge(json!({"status": {"phase": "Running"}})))
        .await
        .unwrap();
    let pod_names = |lp: ListParams| {
        let pods = pods.clone();
        async move { pods.list(&lp).await.unwrap().items.into_iter().map(|p| p.metadata.name.unwrap()).collect::<Vec<_>>() }
    };
    assert_eq!(pod_names(ListParams::default().fields("spec.nodeName=n1")).await, vec!["p1"]);
    assert_eq!(pod_names(ListParams::default().fields("spec.nodeName=")).await, vec!["p3"]);
    assert_eq!(pod_names(ListParams::default().fields("status.phase=Running")).await, vec!["p2"]);
    assert_eq!(pod_names(ListParams::default().fields("status.phase!=Running,spec.nodeName!=")).await, vec!["p1"]);
    let (code, body) = get(&server, "/api/v1/namespaces/default/configmaps?fieldSelector=spec.nodeName%3Dx").await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{body}");
}

#[tokio::test]
async fn lists_across_all_namespaces_and_of_cluster_scoped_kinds() {
    let server = ApiServer::default();
    seed(&server).await;
    let sys: Api<ConfigMap> = Api::namespaced(server.client(), "kube-system");
    sys.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "s"}})).unwrap())
        .await
        .unwrap();
    let all: Api<ConfigMap> = Api::all(server.client());
    let items = all.list(&ListParams::default()).await.unwrap().items;
    let ids: Vec<(String, String)> =
        items.iter().map(|c| (c.metadata.namespace.clone().unwrap(), c.metadata.name.clone().unwrap())).collect();
    assert_eq!(ids.len(), 5);
    assert_eq!(ids[0], ("default".to_string(), "a".to_string()));
    assert_eq!(ids[4], ("kube-system".to_string(), "s".to_string()));
}

#[tokio::test]
async fn pages_share_one_consistent_snapshot() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    for i in 0..25 {
        cms.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": format!("c{i:02}")}})).unwrap(),
        )
        .await
        .unwrap();
    }
    let first = cms.list(&ListParams::default().limit(10)).await.unwrap();
    assert_eq!(first.items.len(), 10);
    assert_eq!(first.metadata.remaining_item_count, Some(15));
    let snapshot_rv = first.metadata.resource_version.clone().unwrap();
    // Changes after the first page must not show in later pages.
    cms.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "c99"}})).unwrap())
        .await
        .unwrap();
    cms.delete("c20", &Default::default()).await.unwrap();
    cms.patch("c15", &PatchParams::default(), &Patch::Merge(json!({"data": {"x": "y"}}))).await.unwrap();
    let mut all: Vec<ConfigMap> = first.items;
    let mut token = first.metadata.continue_.clone();
    while let Some(t) = token.filter(|t| !t.is_empty()) {
        let page = cms.list(&ListParams::default().limit(10).continue_token(&t)).await.unwrap();
        assert_eq!(page.metadata.resource_version.as_deref(), Some(snapshot_rv.as_str()));
        all.extend(page.items);
        token = page.metadata.continue_;
    }
    let names: Vec<String> = all.iter().map(|c| c.metadata.name.clone().unwrap()).collect();
    assert_eq!(names, (0..25).map(|i| format!("c{i:02}")).collect::<Vec<_>>());
    assert!(all.iter().find(|c| c.metadata.name.as_deref() == Some("c15")).unwrap().data.is_none(), "old state of c15");
}

#[tokio::test]
async fn a_continue_token_outside_the_history_window_is_410_expired() {
    let server = ApiServer::new(Config { history: 3, ..Default::default() });
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    for i in 0..5 {
        cms.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": format!("c{i}")}})).unwrap(),
        )
        .await
        .unwrap();
    }
    let first = cms.list(&ListParams::default().limit(2)).await.unwrap();
    let token = first.metadata.continue_.unwrap();
    for i in 0..5 {
        cms.patch(&format!("c{i}"), &PatchParams::default(), &Patch::Merge(json!({"data": {"n": "1"}}))).await.unwrap();
    }
    let err = cms.list(&ListParams::default().limit(2).continue_token(&token)).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 410 && s.reason == "Expired"), "{err:?}");
}

#[tokio::test]
async fn resource_version_semantics_for_list() {
    let server = ApiServer::default();
    let cms = seed(&server).await;
    let before = server.resource_version();
    cms.delete("a", &Default::default()).await.unwrap();
    // Any version ("0"), and not-older-than a past version, both see the latest state.
    assert_eq!(names(&cms, &ListParams::default().match_any()).await, vec!["b", "c", "d"]);
    let lp = ListParams::default().at(&before.to_string()).matching(VersionMatch::NotOlderThan);
    assert_eq!(names(&cms, &lp).await, vec!["b", "c", "d"]);
    // Exact reads the past.
    let exact = ListParams::default().at(&before.to_string()).matching(VersionMatch::Exact);
    let old = cms.list(&exact).await.unwrap();
    assert_eq!(old.metadata.resource_version, Some(before.to_string()));
    assert_eq!(old.items.len(), 4);
    // The future is a 504 Timeout "Too large resource version".
    let future = ListParams::default().at(&(before + 1000).to_string()).matching(VersionMatch::NotOlderThan);
    let err = cms.list(&future).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 504 && s.reason == "Timeout"), "{err:?}");
    // A compacted past is 410.
    server.compact();
    let err = cms.list(&exact).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 410), "{err:?}");
}

#[tokio::test]
async fn list_metadata_carries_the_global_resource_version() {
    let server = ApiServer::default();
    let cms = seed(&server).await;
    let other: Api<ConfigMap> = Api::namespaced(server.client(), "kube-public");
    other
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "z"}})).unwrap())
        .await
        .unwrap();
    let l = cms.list(&ListParams::default()).await.unwrap();
    assert_eq!(l.metadata.resource_version, Some(server.resource_version().to_string()));
    let (_, raw) = get(&server, "/api/v1/namespaces/default/configmaps").await;
    assert_eq!(raw["kind"], "ConfigMapList");
    assert_eq!(raw["apiVersion"], "v1");
    assert!(raw["metadata"].get("continue").is_none());
}
