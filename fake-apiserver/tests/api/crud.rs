//! Create, get, update, patch, delete, subresources and the metadata rules kube-apiserver
//! applies, driven through kube-rs in-process.

use crate::common::{get, post, raw};
use fake_apiserver::ApiServer;
use http::{Method, StatusCode};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn create_sets_server_metadata_and_global_resource_versions_increase() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let a = cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    let b = cms.create(&PostParams::default(), &cm("b")).await.unwrap();
    let (ma, mb) = (&a.metadata, &b.metadata);
    assert_eq!(ma.namespace.as_deref(), Some("default"));
    assert!(ma.uid.as_ref().is_some_and(|u| u.len() == 36));
    assert_ne!(ma.uid, mb.uid);
    assert!(ma.creation_timestamp.is_some());
    let rva: u64 = ma.resource_version.as_ref().unwrap().parse().unwrap();
    let rvb: u64 = mb.resource_version.as_ref().unwrap().parse().unwrap();
    assert!(rvb > rva, "one global, monotonically increasing resourceVersion");
    assert_eq!(ma.generation, None, "ConfigMaps carry no generation");
    let d: Api<Deployment> = Api::default_namespaced(server.client());
    let dep = d.create(&PostParams::default(), &deployment("web", 1)).await.unwrap();
    assert_eq!(dep.metadata.generation, Some(1));
    assert!(dep.metadata.resource_version.unwrap().parse::<u64>().unwrap() > rvb);
}

#[tokio::test]
async fn generate_name_appends_a_random_suffix() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let mut c = ConfigMap::default();
    c.metadata.generate_name = Some("job-".into());
    let a = cms.create(&PostParams::default(), &c).await.unwrap();
    let b = cms.create(&PostParams::default(), &c).await.unwrap();
    let (na, nb) = (a.metadata.name.unwrap(), b.metadata.name.unwrap());
    assert!(na.starts_with("job-") && na.len() == 9, "{na}");
    assert_ne!(na, nb);
}

#[tokio::test]
async fn namespaced_objects_need_an_existing_namespace_and_standard_namespaces_exist() {
    let server = ApiServer::default();
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let (code, body) = get(&server, &format!("/api/v1/namespaces/{ns}")).await;
        assert_eq!(code, StatusCode::OK);
        assert_eq!(body["status"]["phase"], "Active");
        assert_eq!(body["metadata"]["labels"]["kubernetes.io/metadata.name"], ns);
    }
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "missing");
    let err = cms.create(&PostParams::default(), &cm("a")).await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 404 && s.message == "namespaces \"missing\" not found"),
        "{err:?}"
    );
}

#[tokio::test]
async fn update_needs_the_current_resource_version_and_conflicts_on_a_stale_one() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let first = cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    let mut next = first.clone();
    next.data = Some([("k".to_string(), "v2".to_string())].into());
    let updated = cms.replace("a", &PostParams::default(), &next).await.unwrap();
    assert_ne!(updated.metadata.resource_version, first.metadata.resource_version);
    // Writing again from the stale copy fails with 409 Conflict.
    let err = cms.replace("a", &PostParams::default(), &next).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 409 && s.reason == "Conflict"), "{err:?}");
    // Built-ins allow an unconditional update (no resourceVersion).
    let mut unconditional = next.clone();
    unconditional.metadata.resource_version = None;
    unconditional.data = Some([("k".to_string(), "v3".to_string())].into());
    let u = cms.replace("a", &PostParams::default(), &unconditional).await.unwrap();
    assert_eq!(u.data.unwrap()["k"], "v3");
    assert_eq!(u.metadata.uid, first.metadata.uid, "uid is immutable");
    assert_eq!(u.metadata.creation_timestamp, first.metadata.creation_timestamp);
}

#[tokio::test]
async fn an_update_that_changes_nothing_writes_nothing() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let a = cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    let before = server.resource_version();
    let same = cms.replace("a", &PostParams::default(), &a).await.unwrap();
    assert_eq!(same.metadata.resource_version, a.metadata.resource_version);
    assert_eq!(server.resource_version(), before);
}

#[tokio::test]
async fn eight_writers_doing_optimistic_increments_lose_nothing() {
    let server = ApiServer::default();
    crate::common::eight_writers_lose_no_increment(server.client()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_writers_on_a_multi_thread_runtime_lose_nothing() {
    let server = ApiServer::default();
    crate::common::eight_writers_lose_no_increment(server.client()).await;
}

#[tokio::test]
async fn finalizers_hold_deletion_until_the_last_one_is_removed() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let mut c = cm("held");
    c.metadata.finalizers = Some(vec!["example.com/a".into(), "example.com/b".into()]);
    cms.create(&PostParams::default(), &c).await.unwrap();
    let resp = cms.delete("held", &DeleteParams::default()).await.unwrap();
    let pending = resp.left().expect("the object is returned while it waits for finalizers");
    assert!(pending.metadata.deletion_timestamp.is_some());
    assert_eq!(pending.metadata.deletion_grace_period_seconds, Some(0));
    // No new finalizers once deleting.
    let err = cms
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/a", "example.com/b", "example.com/c"]}})),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 422), "{err:?}");
    // Spec changes are still allowed.
    cms.patch("held", &PatchParams::default(), &Patch::Merge(json!({"data": {"k": "changed"}}))).await.unwrap();
    cms.patch("held", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/b"]}})))
        .await
        .unwrap();
    assert!(cms.get_opt("held").await.unwrap().is_some());
    cms.patch("held", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}}))).await.unwrap();
    assert!(cms.get_opt("held").await.unwrap().is_none(), "gone when the last finalizer is removed");
    let kinds: Vec<_> = server.timeline().iter().filter(|e| e.name == "held").map(|e| e.change).collect();
    use fake_apiserver::ChangeKind::*;
    assert_eq!(kinds, vec![Added, Modified, Modified, Modified, Deleted]);
}

#[tokio::test]
async fn delete_without_finalizers_returns_success_status() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let a = cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    let status = cms.delete("a", &DeleteParams::default()).await.unwrap().right().expect("a Status");
    assert_eq!(status.status, Some(kube::core::response::StatusSummary::Success));
    assert_eq!(status.details.unwrap().uid, a.metadata.uid.unwrap());
    assert!(cms.get_opt("a").await.unwrap().is_none());
}

#[tokio::test]
async fn delete_collection_deletes_only_matching_objects() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    for (n, tier) in [("a", "web"), ("b", "web"), ("c", "db")] {
        let mut c = cm(n);
        c.metadata.labels = Some([("tier".to_string(), tier.to_string())].into());
        cms.create(&PostParams::default(), &c).await.unwrap();
    }
    let lp = kube::api::ListParams::default().labels("tier=web");
    let deleted = cms.delete_collection(&DeleteParams::default(), &lp).await.unwrap().left().unwrap();
    assert_eq!(deleted.items.len(), 2);
    let left = cms.list(&Default::default()).await.unwrap();
    assert_eq!(left.items.iter().map(|c| c.metadata.name.clone().unwrap()).collect::<Vec<_>>(), vec!["c"]);
}

#[tokio::test]
async fn bound_pods_delete_gracefully_and_unbound_pods_at_once() {
    let server = ApiServer::default();
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let pod = |name: &str, node: Option<&str>| -> Pod {
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]}})).unwrap()
    };
    let created = pods.create(&PostParams::default(), &pod("bound", Some("n1"))).await.unwrap();
    assert_eq!(created.status.as_ref().unwrap().phase.as_deref(), Some("Pending"));
    assert_eq!(created.status.as_ref().unwrap().qos_class.as_deref(), Some("BestEffort"));
    pods.create(&PostParams::default(), &pod("unbound", None)).await.unwrap();
    let graceful = pods.delete("bound", &DeleteParams::default()).await.unwrap().left().unwrap();
    assert_eq!(graceful.metadata.deletion_grace_period_seconds, Some(30));
    assert!(pods.get_opt("bound").await.unwrap().is_some(), "waits for the kubelet");
    // The kubelet confirms with grace period 0.
    pods.delete("bound", &DeleteParams { grace_period_seconds: Some(0), ..Default::default() }).await.unwrap();
    assert!(pods.get_opt("bound").await.unwrap().is_none());
    // Gone at once, and the pod registry answers the deleted pod (ReturnDeletedObject in
    // pkg/registry/core/pod/storage), not a Status.
    let deleted = pods.delete("unbound", &DeleteParams::default()).await.unwrap().left().expect("the pod");
    assert_eq!(deleted.metadata.name.as_deref(), Some("unbound"));
}

#[tokio::test]
async fn status_subresource_splits_spec_and_status_writes_and_generation_follows_spec() {
    let server = ApiServer::default();
    let d: Api<Deployment> = Api::default_namespaced(server.client());
    let mut dep = deployment("web", 1);
    dep.status = Some(serde_json::from_value(json!({"replicas": 9})).unwrap());
    let created = d.create(&PostParams::default(), &dep).await.unwrap();
    assert!(created.status.as_ref().is_none_or(|s| s.replicas.is_none()), "status is dropped on create");
    // A status write through the main resource is ignored...
    let p = d.patch("web", &PatchParams::default(), &Patch::Merge(json!({"status": {"replicas": 5}}))).await.unwrap();
    assert!(p.status.as_ref().is_none_or(|s| s.replicas.is_none()));
    assert_eq!(p.metadata.resource_version, created.metadata.resource_version, "no-op write");
    // ...and a spec write through /status is ignored, the status kept, generation unchanged.
    let s = d
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 7}, "status": {"replicas": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(s.status.unwrap().replicas, Some(5));
    assert_eq!(s.spec.replicas, Some(1));
    assert_eq!(s.metadata.generation, Some(1));
    // A spec change bumps generation; a metadata-only change does not.
    let g2 = d.patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 3}}))).await.unwrap();
    assert_eq!(g2.metadata.generation, Some(2));
    let g2b = d
        .patch("web", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})))
        .await
        .unwrap();
    assert_eq!(g2b.metadata.generation, Some(2));
    assert_eq!(g2b.status.unwrap().replicas, Some(5), "status survives main-resource writes");
}

#[tokio::test]
async fn scale_subresource_reads_and_writes_replicas() {
    let server = ApiServer::default();
    let d: Api<Deployment> = Api::default_namespaced(server.client());
    d.create(&PostParams::default(), &deployment("web", 2)).await.unwrap();
    let scale = d.get_scale("web").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(2));
    assert_eq!(scale.status.unwrap().selector.as_deref(), Some("app=web"));
    let s =
        d.patch_scale("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 4}}))).await.unwrap();
    assert_eq!(s.spec.unwrap().replicas, Some(4));
    let dep = d.get("web").await.unwrap();
    assert_eq!(dep.spec.replicas, Some(4));
    assert_eq!(dep.metadata.generation, Some(2));
    let (code, body) = raw(
        &server,
        Method::PATCH,
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
        Some("application/merge-patch+json"),
        json!({"spec": {"replicas": -1}}).to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["details"]["causes"][0]["field"], "spec.replicas");
}

#[tokio::test]
async fn merge_and_json_patches_work_and_a_failed_test_op_is_422() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    let m =
        cms.patch("a", &PatchParams::default(), &Patch::Merge(json!({"data": {"x": "1", "k": null}}))).await.unwrap();
    assert_eq!(m.data.unwrap(), [("x".to_string(), "1".to_string())].into());
    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/data/x", "value": "1"},
        {"op": "add", "path": "/data/y", "value": "2"}
    ]))
    .unwrap();
    let j = cms.patch("a", &PatchParams::default(), &Patch::<()>::Json(ops)).await.unwrap();
    assert_eq!(j.data.unwrap()["y"], "2");
    let before = server.resource_version();
    let failing: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/data/x", "value": "nope"},
        {"op": "add", "path": "/data/z", "value": "3"}
    ]))
    .unwrap();
    let err = cms.patch("a", &PatchParams::default(), &Patch::<()>::Json(failing)).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 422), "{err:?}");
    assert_eq!(server.resource_version(), before);
    assert!(!cms.get("a").await.unwrap().data.unwrap().contains_key("z"));
}

#[tokio::test]
async fn patch_with_a_stale_resource_version_conflicts() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let a = cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    cms.patch("a", &PatchParams::default(), &Patch::Merge(json!({"data": {"k": "2"}}))).await.unwrap();
    let stale = json!({"metadata": {"resourceVersion": a.metadata.resource_version}, "data": {"k": "3"}});
    let err = cms.patch("a", &PatchParams::default(), &Patch::Merge(stale)).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 409), "{err:?}");
}

#[tokio::test]
async fn post_without_content_type_is_read_as_json() {
    let server = ApiServer::default();
    let (code, body) = raw(
        &server,
        Method::POST,
        "/api/v1/namespaces/default/configmaps",
        None,
        json!({"metadata": {"name": "plain"}}).to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    assert_eq!(body["kind"], "ConfigMap");
    assert_eq!(body["apiVersion"], "v1");
}

#[tokio::test]
async fn yaml_bodies_are_accepted() {
    let server = ApiServer::default();
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  a: b\n";
    let (code, body) =
        raw(&server, Method::POST, "/api/v1/namespaces/default/configmaps", Some("application/yaml"), yaml).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    assert_eq!(body["data"]["a"], "b");
}

#[tokio::test]
async fn dry_run_runs_the_pipeline_and_persists_nothing() {
    let server = ApiServer::default();
    let before = (server.resource_version(), server.timeline().len());
    let (code, body) =
        post(&server, "/api/v1/namespaces/default/configmaps?dryRun=All", &json!({"metadata": {"name": "dry"}})).await;
    assert_eq!(code, StatusCode::CREATED);
    assert!(body["metadata"]["uid"].is_string());
    assert_eq!((server.resource_version(), server.timeline().len()), before);
    assert_eq!(get(&server, "/api/v1/namespaces/default/configmaps/dry").await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn timeline_records_every_write_with_its_actor() {
    let server = ApiServer::default();
    let start = server.resource_version();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client_as("my-controller/v1.2"));
    cms.create(&PostParams { field_manager: Some("mgr".into()), ..Default::default() }, &cm("a")).await.unwrap();
    cms.patch("a", &PatchParams::default(), &Patch::Merge(json!({"data": {"k": "2"}}))).await.unwrap();
    cms.delete("a", &DeleteParams::default()).await.unwrap();
    let t = server.timeline_since(start);
    let verbs: Vec<&str> = t.iter().map(|e| e.verb.as_str()).collect();
    assert_eq!(verbs, vec!["create", "patch", "delete"]);
    assert!(t.windows(2).all(|w| w[0].resource_version < w[1].resource_version));
    assert!(
        t.iter().all(|e| e.user_agent == "my-controller/v1.2" && e.kind == "ConfigMap" && e.namespace == "default")
    );
    assert_eq!(t[0].field_manager.as_deref(), Some("mgr"));
    assert_eq!(t[1].field_manager.as_deref(), Some("my-controller"), "derived from the user agent");
    assert_eq!(t[1].object()["data"]["k"], "2");
    assert_eq!(t[2].change, fake_apiserver::ChangeKind::Deleted);
}

#[tokio::test]
async fn deleting_a_namespace_removes_its_content_and_then_the_namespace() {
    let server = ApiServer::default();
    let (code, _) = post(&server, "/api/v1/namespaces", &json!({"metadata": {"name": "team"}})).await;
    assert_eq!(code, StatusCode::CREATED);
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "team");
    cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    let mut held = cm("held");
    held.metadata.finalizers = Some(vec!["example.com/x".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();
    let (code, body) = raw(&server, Method::DELETE, "/api/v1/namespaces/team", None, "").await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(body["status"]["phase"], "Terminating");
    assert!(cms.get_opt("a").await.unwrap().is_none());
    let h = cms.get("held").await.unwrap();
    assert!(h.metadata.deletion_timestamp.is_some(), "finalizers are respected");
    let (code, body) =
        post(&server, "/api/v1/namespaces/team/configmaps", &json!({"metadata": {"name": "late"}})).await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(get(&server, "/api/v1/namespaces/team").await.0, StatusCode::OK);
    cms.patch("held", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}}))).await.unwrap();
    assert_eq!(get(&server, "/api/v1/namespaces/team").await.0, StatusCode::NOT_FOUND);
}
