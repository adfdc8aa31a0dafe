//! kube-runtime's finalizer helper drives an object through Apply and Cleanup against the
//! fake server (it relies on JSON patch `test` + `add`/`remove` on `/metadata/finalizers`).

use fake_apiserver::ApiServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{Event, finalizer};
use serde_json::json;
use std::sync::Arc;

const FINALIZER: &str = "example.com/cleanup";

/// One reconcile through the helper; returns which event the reconciler saw, if any.
async fn reconcile(api: &Api<ConfigMap>, name: &str) -> Option<&'static str> {
    let obj = Arc::new(api.get(name).await.unwrap());
    let mut seen = None;
    finalizer(api, FINALIZER, obj, |event| {
        seen = Some(match event {
            Event::Apply(_) => "apply",
            Event::Cleanup(_) => "cleanup",
        });
        async { Ok::<_, std::io::Error>(Action::await_change()) }
    })
    .await
    .unwrap();
    seen
}

#[tokio::test]
async fn finalizer_helper_adds_applies_cleans_up_and_releases() {
    let server = ApiServer::default();
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    api.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap())
        .await
        .unwrap();

    assert_eq!(reconcile(&api, "x").await, None, "the first pass only adds the finalizer");
    assert_eq!(api.get("x").await.unwrap().metadata.finalizers, Some(vec![FINALIZER.to_string()]));
    assert_eq!(reconcile(&api, "x").await, Some("apply"));

    api.delete("x", &DeleteParams::default()).await.unwrap();
    assert!(api.get("x").await.unwrap().metadata.deletion_timestamp.is_some(), "the finalizer holds it");
    assert_eq!(reconcile(&api, "x").await, Some("cleanup"));
    assert!(api.get_opt("x").await.unwrap().is_none(), "removing the finalizer let it go");
}
