//! The namespace lifecycle: Terminating, content removal that waits for finalizers, the
//! namespace controller's conditions, 403 on create, and `/finalize`.

use crate::common::{get, post, raw};
use fake_apiserver::ApiServer;
use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn condition<'a>(ns: &'a Value, type_: &str) -> &'a Value {
    ns["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == type_))
        .unwrap_or_else(|| panic!("no condition {type_} in {ns}"))
}

async fn create_ns(server: &ApiServer, name: &str, spec_finalizers: &[&str]) {
    let (code, body) = post(
        server,
        "/api/v1/namespaces",
        &json!({"metadata": {"name": name}, "spec": {"finalizers": spec_finalizers}}),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
}

#[tokio::test]
async fn the_standard_namespaces_exist_and_new_ones_get_the_kubernetes_finalizer() {
    let server = ApiServer::default();
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let (code, body) = get(&server, &format!("/api/v1/namespaces/{ns}")).await;
        assert_eq!(code, StatusCode::OK);
        assert_eq!(body["status"]["phase"], "Active");
    }
    create_ns(&server, "custom", &["example.com/keep"]).await;
    let (_, body) = get(&server, "/api/v1/namespaces/custom").await;
    assert_eq!(body["spec"]["finalizers"], json!(["example.com/keep", "kubernetes"]));
}

#[tokio::test]
async fn deleting_a_namespace_waits_for_content_finalizers_and_reports_conditions() {
    let server = ApiServer::default();
    create_ns(&server, "team", &[]).await;
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "team");
    for (name, fins) in [("plain", json!([])), ("held", json!(["example.com/hold"]))] {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name, "finalizers": fins}})).unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }

    let (code, ns) = raw(&server, Method::DELETE, "/api/v1/namespaces/team", None, "").await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(ns["status"]["phase"], "Terminating");
    assert!(ns["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));

    assert!(cms.get_opt("plain").await.unwrap().is_none());
    assert!(cms.get("held").await.unwrap().metadata.deletion_timestamp.is_some());
    let (_, ns) = get(&server, "/api/v1/namespaces/team").await;
    assert_eq!(ns["status"]["phase"], "Terminating");
    let types: Vec<&str> =
        ns["status"]["conditions"].as_array().unwrap().iter().map(|c| c["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "NamespaceDeletionDiscoveryFailure",
            "NamespaceDeletionGroupVersionParsingFailure",
            "NamespaceDeletionContentFailure",
            "NamespaceContentRemaining",
            "NamespaceFinalizersRemaining",
        ]
    );
    let c = condition(&ns, "NamespaceDeletionDiscoveryFailure");
    assert_eq!((&c["status"], &c["reason"]), (&json!("False"), &json!("ResourcesDiscovered")));
    let c = condition(&ns, "NamespaceDeletionContentFailure");
    assert_eq!(c["message"], "All content successfully deleted, may be waiting on finalization");
    let c = condition(&ns, "NamespaceContentRemaining");
    assert_eq!((&c["status"], &c["reason"]), (&json!("True"), &json!("SomeResourcesRemain")));
    assert_eq!(c["message"], "Some resources are remaining: configmaps. has 1 resource instances");
    let c = condition(&ns, "NamespaceFinalizersRemaining");
    assert_eq!((&c["status"], &c["reason"]), (&json!("True"), &json!("SomeFinalizersRemain")));
    assert_eq!(
        c["message"],
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
    );

    // No new content while terminating.
    let (code, status) =
        post(&server, "/api/v1/namespaces/team/configmaps", &json!({"metadata": {"name": "late"}})).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        "configmaps \"late\" is forbidden: unable to create new content in namespace team because it is being terminated"
    );
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "NamespaceTerminating", "message": "namespace team is being terminated", "field": "metadata.namespace"}])
    );

    let rv = server.resource_version();
    cms.patch("held", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}}))).await.unwrap();
    assert_eq!(get(&server, "/api/v1/namespaces/team").await.0, StatusCode::NOT_FOUND);
    // The controller's last steps: conditions all clear, the finalizer lifted, the namespace removed.
    let steps: Vec<(String, Option<String>)> = server
        .timeline_since(rv)
        .into_iter()
        .filter(|e| e.kind == "Namespace")
        .map(|e| {
            assert_eq!(e.user_agent, "kube-controller-manager/namespace-controller");
            (e.verb.to_string(), e.subresource.map(|s| s.to_string()))
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("update".to_string(), Some("status".to_string())),
            ("update".into(), Some("finalize".into())),
            ("delete".into(), None)
        ]
    );
    let status_write =
        server.timeline_since(rv).into_iter().find(|e| e.subresource.map(|s| s.as_str()) == Some("status")).unwrap();
    let ns = status_write.object();
    assert_eq!(condition(&ns, "NamespaceContentRemaining")["reason"], "ContentRemoved");
    assert_eq!(condition(&ns, "NamespaceFinalizersRemaining")["message"], "All content-preserving finalizers finished");
}

#[tokio::test]
async fn an_extra_spec_finalizer_is_cleared_through_finalize() {
    let server = ApiServer::default();
    create_ns(&server, "kept", &["example.com/keep"]).await;
    let (code, _) = raw(&server, Method::DELETE, "/api/v1/namespaces/kept", None, "").await;
    assert_eq!(code, StatusCode::OK);
    // The controller removed its own finalizer; the other one keeps the namespace.
    let (code, ns) = get(&server, "/api/v1/namespaces/kept").await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(ns["spec"]["finalizers"], json!(["example.com/keep"]));
    assert_eq!(ns["status"]["phase"], "Terminating");

    // A client finishes its own cleanup through the finalize subresource (kube-rs style, typed).
    let namespaces: Api<Namespace> = Api::all(server.client());
    let mut body: Namespace = serde_json::from_value(ns).unwrap();
    body.spec.as_mut().unwrap().finalizers = Some(vec![]);
    let rv = server.resource_version();
    let done: Namespace =
        namespaces.replace_subresource("finalize", "kept", &PostParams::default(), &body).await.unwrap();
    // An empty list is left out, as Go writes NamespaceSpec (`finalizers,omitempty`).
    assert_eq!(done.spec.unwrap().finalizers, None);
    assert_eq!(get(&server, "/api/v1/namespaces/kept").await.0, StatusCode::NOT_FOUND);
    let t = server.timeline_since(rv);
    assert_eq!(t[0].subresource.map(|s| s.as_str()), Some("finalize"));
    assert_eq!(t[0].user_agent, "kproof-in-process");
}

#[tokio::test]
async fn namespace_deletion_cascades_through_the_garbage_collector_in_the_namespace() {
    let server = ApiServer::default();
    create_ns(&server, "apps", &[]).await;
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "apps");
    let owner = cms
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "o"}})).unwrap())
        .await
        .unwrap();
    let dep: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "d", "finalizers": ["example.com/hold"], "ownerReferences": [{
        "apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": owner.metadata.uid, "blockOwnerDeletion": true}]}}))
    .unwrap();
    cms.create(&PostParams::default(), &dep).await.unwrap();
    raw(&server, Method::DELETE, "/api/v1/namespaces/apps", None, "").await;
    assert!(cms.get_opt("o").await.unwrap().is_none());
    assert!(cms.get("d").await.unwrap().metadata.deletion_timestamp.is_some());
    cms.patch("d", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}}))).await.unwrap();
    assert_eq!(get(&server, "/api/v1/namespaces/apps").await.0, StatusCode::NOT_FOUND);
}
