//! envtest mode: kube-apiserver and etcd without kube-controller-manager, as controller-runtime's
//! envtest runs them. Each test runs the same requests in both modes, so it fails if the mode
//! changed nothing.

use crate::common::{get, post, raw};
use fake_apiserver::{ApiServer, Config};
use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;

fn server(envtest: bool) -> ApiServer {
    ApiServer::new(Config { envtest, ..Config::default() })
}

/// An owner and a dependent in `ns`; then the owner is deleted. Returns whether the dependent
/// is still there.
async fn dependent_outlives_owner(server: &ApiServer) -> bool {
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let owner = cms
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "owner"}})).unwrap())
        .await
        .unwrap();
    let dependent: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "dependent", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}]}}))
    .unwrap();
    cms.create(&PostParams::default(), &dependent).await.unwrap();
    raw(server, Method::DELETE, "/api/v1/namespaces/default/configmaps/owner", None, "").await;
    assert!(cms.get_opt("owner").await.unwrap().is_none());
    cms.get_opt("dependent").await.unwrap().is_some()
}

#[tokio::test]
async fn no_garbage_collector_runs_in_envtest_mode() {
    assert!(!dependent_outlives_owner(&server(false)).await, "the garbage collector runs by default");
    assert!(dependent_outlives_owner(&server(true)).await, "envtest runs no garbage collector");
}

/// Deletes namespace `apps` holding one ConfigMap; returns the namespace's phase afterwards
/// (`None` once it is gone) and whether the ConfigMap is left.
async fn delete_namespace(server: &ApiServer) -> (Option<String>, bool) {
    let (code, body) = post(server, "/api/v1/namespaces", &json!({"metadata": {"name": "apps"}})).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "apps");
    cms.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "c"}})).unwrap())
        .await
        .unwrap();
    raw(server, Method::DELETE, "/api/v1/namespaces/apps", None, "").await;
    let (code, ns) = get(server, "/api/v1/namespaces/apps").await;
    let phase = (code == StatusCode::OK).then(|| ns["status"]["phase"].as_str().unwrap_or_default().to_string());
    (phase, cms.get_opt("c").await.unwrap().is_some())
}

#[tokio::test]
async fn a_deleted_namespace_stays_terminating_in_envtest_mode() {
    assert_eq!(delete_namespace(&server(false)).await, (None, false), "the namespace controller runs by default");
    assert_eq!(
        delete_namespace(&server(true)).await,
        (Some("Terminating".to_string()), true),
        "envtest has no namespace controller: the namespace keeps its content and its finalizer"
    );
}

#[tokio::test]
async fn creates_in_a_terminating_namespace_are_refused_in_envtest_mode() {
    let server = server(true);
    delete_namespace(&server).await;
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "apps");
    let err = cms
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "late"}})).unwrap())
        .await
        .unwrap_err();
    // kube-apiserver's NamespaceLifecycle admission plugin, which envtest's kube-apiserver runs.
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 403 && s.reason == "Forbidden"), "{err}");
}
