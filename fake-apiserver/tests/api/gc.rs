//! Garbage collection by ownerReferences: Background, Foreground and Orphan propagation, the
//! kinds' default policies, several owners, and references the collector cannot follow.

use crate::common::{get, raw};
use fake_apiserver::ApiServer;
use fake_apiserver::gc::GC_USER_AGENT;
use http::{Method, StatusCode};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::ObjectMeta;
use serde_json::{Value, json};

/// An owner reference to `owner`, blocking its foreground deletion when `block`.
fn owner_ref(api_version: &str, kind: &str, meta: &ObjectMeta, block: bool) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "name": meta.name,
        "uid": meta.uid,
        "blockOwnerDeletion": block,
    })
}

async fn cm(api: &Api<ConfigMap>, name: &str, owners: Vec<Value>, finalizers: &[&str]) -> ConfigMap {
    let v = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "ownerReferences": owners, "finalizers": finalizers},
    });
    api.create(&PostParams::default(), &serde_json::from_value(v).unwrap()).await.unwrap()
}

async fn owner(api: &Api<ConfigMap>, name: &str) -> ObjectMeta {
    cm(api, name, vec![], &[]).await.metadata
}

fn owners_of(c: &ConfigMap) -> Vec<String> {
    c.metadata.owner_references.iter().flatten().map(|r| r.name.clone()).collect()
}

/// Removes every finalizer (as a controller finishing its cleanup would).
async fn release(api: &Api<ConfigMap>, name: &str) {
    api.patch(name, &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}}))).await.unwrap();
}

/// The collector's writes after `rv`, as `(verb, name)`.
fn gc_writes(server: &ApiServer, rv: u64) -> Vec<(String, String)> {
    server
        .timeline_since(rv)
        .into_iter()
        .filter(|e| e.user_agent == GC_USER_AGENT)
        .map(|e| (e.verb.to_string(), e.name))
        .collect()
}

#[tokio::test]
async fn background_deletes_dependents_that_have_no_other_owner() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let o = owner(&cms, "owner").await;
    let other = owner(&cms, "other").await;
    let r = |m: &ObjectMeta| owner_ref("v1", "ConfigMap", m, false);
    cm(&cms, "plain-1", vec![r(&o)], &[]).await;
    cm(&cms, "plain-2", vec![r(&o)], &[]).await;
    cm(&cms, "held", vec![r(&o)], &["example.com/hold"]).await;
    cm(&cms, "shared", vec![r(&o), r(&other)], &[]).await;
    let rv = server.resource_version();

    cms.delete("owner", &DeleteParams::background()).await.unwrap();

    for gone in ["owner", "plain-1", "plain-2"] {
        assert!(cms.get_opt(gone).await.unwrap().is_none(), "{gone} should be gone");
    }
    let held = cms.get("held").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some(), "a dependent with a finalizer waits for it");
    let shared = cms.get("shared").await.unwrap();
    assert_eq!(owners_of(&shared), ["other"], "the dangling reference is stripped, the dependent kept");
    assert!(shared.metadata.deletion_timestamp.is_none());

    let mut writes = gc_writes(&server, rv);
    writes.sort();
    assert_eq!(
        writes,
        [
            ("delete".to_string(), "held".to_string()),
            ("delete".into(), "plain-1".into()),
            ("delete".into(), "plain-2".into()),
            ("patch".into(), "shared".into()),
        ]
    );

    release(&cms, "held").await;
    assert!(cms.get_opt("held").await.unwrap().is_none());
    // Once its last owner goes too, the shared dependent follows.
    cms.delete("other", &DeleteParams::default()).await.unwrap();
    assert!(cms.get_opt("shared").await.unwrap().is_none());
}

#[tokio::test]
async fn foreground_keeps_the_owner_until_blocking_dependents_are_gone() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let o = owner(&cms, "owner").await;
    cm(&cms, "blocking", vec![owner_ref("v1", "ConfigMap", &o, true)], &[]).await;
    cm(&cms, "blocking-held", vec![owner_ref("v1", "ConfigMap", &o, true)], &["example.com/hold"]).await;
    cm(&cms, "non-blocking", vec![owner_ref("v1", "ConfigMap", &o, false)], &[]).await;
    let rv = server.resource_version();

    let answer = cms.delete("owner", &DeleteParams::foreground()).await.unwrap();
    let answered = answer.left().expect("the owner is kept while dependents are deleted");
    assert!(answered.metadata.deletion_timestamp.is_some());
    assert_eq!(answered.metadata.finalizers.as_deref(), Some(&["foregroundDeletion".to_string()][..]));

    assert!(cms.get_opt("blocking").await.unwrap().is_none());
    assert!(cms.get_opt("non-blocking").await.unwrap().is_none(), "non-blocking dependents are deleted too");
    let held = cms.get("blocking-held").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    let still = cms.get("owner").await.unwrap();
    assert!(still.metadata.finalizers.iter().flatten().any(|f| f == "foregroundDeletion"));

    release(&cms, "blocking-held").await;
    assert!(cms.get_opt("owner").await.unwrap().is_none(), "the last blocking dependent went, so does the owner");

    // The owner's removal comes after every dependent's, and the collector lifted its finalizer.
    let t = server.timeline_since(rv);
    let removed =
        |name: &str| t.iter().position(|e| e.name == name && e.change == fake_apiserver::ChangeKind::Deleted).unwrap();
    for dep in ["blocking", "blocking-held", "non-blocking"] {
        assert!(removed(dep) < removed("owner"), "{dep} before owner");
    }
    let last = &t[removed("owner")];
    assert_eq!((last.verb.as_str(), last.user_agent.as_str()), ("patch", GC_USER_AGENT));
}

#[tokio::test]
async fn orphan_strips_owner_references_and_keeps_dependents() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let o = owner(&cms, "owner").await;
    let other = owner(&cms, "other").await;
    cm(&cms, "a", vec![owner_ref("v1", "ConfigMap", &o, true)], &[]).await;
    cm(&cms, "b", vec![owner_ref("v1", "ConfigMap", &o, false)], &["example.com/hold"]).await;
    cm(&cms, "c", vec![owner_ref("v1", "ConfigMap", &o, false), owner_ref("v1", "ConfigMap", &other, false)], &[])
        .await;
    let rv = server.resource_version();

    let answer = cms.delete("owner", &DeleteParams::orphan()).await.unwrap();
    let answered = answer.left().expect("the orphan finalizer holds the owner in the answer");
    assert_eq!(answered.metadata.finalizers.as_deref(), Some(&["orphan".to_string()][..]));

    assert!(cms.get_opt("owner").await.unwrap().is_none());
    for name in ["a", "b"] {
        let d = cms.get(name).await.unwrap();
        assert!(d.metadata.owner_references.is_none(), "{name} keeps no reference to the owner");
        assert!(d.metadata.deletion_timestamp.is_none(), "{name} is not deleted");
    }
    assert_eq!(owners_of(&cms.get("c").await.unwrap()), ["other"]);
    let mut writes = gc_writes(&server, rv);
    writes.sort();
    assert_eq!(
        writes,
        [
            ("patch".to_string(), "a".to_string()),
            ("patch".into(), "b".into()),
            ("patch".into(), "c".into()),
            ("patch".into(), "owner".into()),
        ]
    );
}

#[tokio::test]
async fn the_legacy_orphan_dependents_flag_and_a_202_for_false() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let o = owner(&cms, "owner").await;
    cm(&cms, "dep", vec![owner_ref("v1", "ConfigMap", &o, true)], &["example.com/hold"]).await;
    let (code, body) = raw(
        &server,
        Method::DELETE,
        "/api/v1/namespaces/default/configmaps/owner",
        Some("application/json"),
        json!({"orphanDependents": false}).to_string(),
    )
    .await;
    // orphanDependents=false is not Foreground: the owner goes at once, no 202 as it is gone.
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["kind"], "Status");
    assert!(cms.get("dep").await.unwrap().metadata.deletion_timestamp.is_some());

    let o = owner(&cms, "owner2").await;
    cm(&cms, "dep2", vec![owner_ref("v1", "ConfigMap", &o, true)], &[]).await;
    cm(&cms, "held2", vec![], &["example.com/hold"]).await;
    let (code, body) = raw(
        &server,
        Method::DELETE,
        "/api/v1/namespaces/default/configmaps/held2",
        Some("application/json"),
        json!({"orphanDependents": false}).to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::ACCEPTED, "a pending delete with orphanDependents=false is 202: {body}");
    let (code, _) =
        raw(&server, Method::DELETE, "/api/v1/namespaces/default/configmaps/owner2?orphanDependents=true", None, "")
            .await;
    assert_eq!(code, StatusCode::OK);
    assert!(cms.get("dep2").await.unwrap().metadata.owner_references.is_none());
}

#[tokio::test]
async fn jobs_orphan_by_default_and_deployments_cascade() {
    let server = ApiServer::default();
    let client = server.client();
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let template = json!({"metadata": {"labels": {"app": "x"}}, "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}});
    let job: Job =
        serde_json::from_value(json!({"metadata": {"name": "job"}, "spec": {"template": template}})).unwrap();
    let job = jobs.create(&PostParams::default(), &job).await.unwrap();
    let deploy: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": {
            "metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
    }))
    .unwrap();
    let deploy = deployments.create(&PostParams::default(), &deploy).await.unwrap();
    for (name, owner) in [
        ("job-pod", owner_ref("batch/v1", "Job", &job.metadata, true)),
        ("web-pod", owner_ref("apps/v1", "Deployment", &deploy.metadata, true)),
    ] {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "ownerReferences": [owner]},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }))
        .unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }

    // No policy given: batch/v1 Jobs orphan (kept for backwards compatibility upstream).
    let (code, body) = raw(&server, Method::DELETE, "/apis/batch/v1/namespaces/default/jobs/job", None, "").await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["metadata"]["finalizers"], json!(["orphan"]));
    assert!(jobs.get_opt("job").await.unwrap().is_none());
    assert!(pods.get("job-pod").await.unwrap().metadata.owner_references.is_none());
    // apps/v1 deletes dependents.
    let (code, _) = raw(&server, Method::DELETE, "/apis/apps/v1/namespaces/default/deployments/web", None, "").await;
    assert_eq!(code, StatusCode::OK);
    assert!(pods.get_opt("web-pod").await.unwrap().is_none());
}

#[tokio::test]
async fn bound_pods_of_a_foreground_owner_keep_it_through_their_grace_period() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let pods: Api<Pod> = Api::default_namespaced(server.client());
    let o = owner(&cms, "owner").await;
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "ownerReferences": [owner_ref("v1", "ConfigMap", &o, true)]},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    cms.delete("owner", &DeleteParams::foreground()).await.unwrap();
    let p = pods.get("p").await.unwrap();
    assert_eq!(p.metadata.deletion_grace_period_seconds, Some(30), "the collector deletes gracefully");
    assert!(cms.get_opt("owner").await.unwrap().is_some());
    // The kubelet confirms the pod's end.
    pods.delete("p", &DeleteParams { grace_period_seconds: Some(0), ..Default::default() }).await.unwrap();
    assert!(cms.get_opt("owner").await.unwrap().is_none());
}

#[tokio::test]
async fn dependents_of_missing_or_replaced_owners_are_collected() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let missing = ObjectMeta {
        name: Some("ghost".into()),
        uid: Some("00000000-0000-0000-0000-000000000000".into()),
        ..Default::default()
    };
    cm(&cms, "of-ghost", vec![owner_ref("v1", "ConfigMap", &missing, false)], &[]).await;
    assert!(cms.get_opt("of-ghost").await.unwrap().is_none(), "an owner that does not exist is absent");

    // Same name, other UID: the reference dangles.
    let o = owner(&cms, "owner").await;
    cms.delete("owner", &DeleteParams::default()).await.unwrap();
    owner(&cms, "owner").await;
    cm(&cms, "of-old", vec![owner_ref("v1", "ConfigMap", &o, false)], &[]).await;
    assert!(cms.get_opt("of-old").await.unwrap().is_none());

    // A namespaced owner is looked up in the dependent's namespace: across namespaces it is absent.
    let remote: Api<ConfigMap> = Api::namespaced(server.client(), "kube-system");
    let far = owner(&remote, "far").await;
    cm(&cms, "cross", vec![owner_ref("v1", "ConfigMap", &far, false)], &[]).await;
    assert!(cms.get_opt("cross").await.unwrap().is_none());
    assert!(remote.get_opt("far").await.unwrap().is_some());
}

#[tokio::test]
async fn references_the_collector_cannot_resolve_leave_the_dependent_alone() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let unknown = ObjectMeta { name: Some("w".into()), uid: Some("1".into()), ..Default::default() };
    cm(&cms, "of-unknown-kind", vec![owner_ref("example.com/v1", "Widget", &unknown, false)], &[]).await;
    assert!(cms.get_opt("of-unknown-kind").await.unwrap().is_some());

    // A cluster-scoped dependent cannot have a namespaced owner.
    let o = owner(&cms, "owner").await;
    let (code, body) = crate::common::post(
        &server,
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        &json!({"metadata": {"name": "pc", "ownerReferences": [owner_ref("v1", "ConfigMap", &o, false)]}, "value": 5}),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    cms.delete("owner", &DeleteParams::default()).await.unwrap();
    assert_eq!(get(&server, "/apis/scheduling.k8s.io/v1/priorityclasses/pc").await.0, StatusCode::OK);
}

#[tokio::test]
async fn an_invalid_propagation_policy_is_rejected_and_changes_nothing() {
    let server = ApiServer::default();
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    owner(&cms, "owner").await;
    let before = crate::common::store_fingerprint(&server).await;
    for (uri, body) in [
        ("/api/v1/namespaces/default/configmaps/owner", json!({"propagationPolicy": "Sideways"}).to_string()),
        ("/api/v1/namespaces/default/configmaps/owner?propagationPolicy=Sideways", String::new()),
    ] {
        let (code, status) = raw(&server, Method::DELETE, uri, Some("application/json"), body).await;
        // kube-apiserver's delete handler: NewInvalid(DeleteOptions.meta.k8s.io, "", errs).
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            status["message"],
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
        );
        assert_eq!(status["details"]["causes"][0]["field"], "propagationPolicy");
    }
    assert_eq!(crate::common::store_fingerprint(&server).await, before);
    assert!(cms.get_opt("owner").await.unwrap().is_some());
}
