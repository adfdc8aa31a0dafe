//! In-process validating webhooks (`ApiServer::add_validating_webhook`): called on creates and
//! updates of the resources they handle, with `old` only on updates; a denial is kube-apiserver's
//! 403 `admission webhook "<name>" denied the request: <message>`, and nothing is written.

use fake_apiserver::{ApiServer, ValidatingWebhook};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use std::sync::Arc;

/// Refuses a ConfigMap whose `data.bad` is set; on update also a change of `data.fixed`.
struct NoBad;

impl ValidatingWebhook for NoBad {
    fn name(&self) -> &str {
        "vno-bad.example.com"
    }

    fn handles(&self, group: &str, resource: &str) -> bool {
        group.is_empty() && resource == "configmaps"
    }

    fn validate(&self, old: Option<&Value>, new: &Value) -> Result<(), String> {
        if new.pointer("/data/bad").is_some() {
            return Err(format!("bad on {}", if old.is_some() { "update" } else { "create" }));
        }
        if new.pointer("/metadata/resourceVersion").is_some() && old.is_none() {
            return Err("a create carries no resourceVersion".into());
        }
        match old {
            Some(o) if o.pointer("/data/fixed") != new.pointer("/data/fixed") => Err("fixed is immutable".into()),
            _ => Ok(()),
        }
    }
}

fn cm(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).expect("configmap")
}

fn denial(e: kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.message),
        other => panic!("not an API error: {other}"),
    }
}

#[tokio::test]
async fn a_webhook_checks_creates_and_updates_and_a_denial_writes_nothing() {
    let server = ApiServer::default();
    server.add_validating_webhook(Arc::new(NoBad));
    let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
    let err = cms.create(&PostParams::default(), &cm("a", json!({"bad": "1"}))).await.unwrap_err();
    assert_eq!(
        denial(err),
        (403, "admission webhook \"vno-bad.example.com\" denied the request: bad on create".to_string())
    );
    assert!(cms.get_opt("a").await.expect("get").is_none());
    cms.create(&PostParams::default(), &cm("a", json!({"fixed": "x"}))).await.expect("create");
    let patch = |d: Value| Patch::Merge(json!({"data": d}));
    let err = cms.patch("a", &PatchParams::default(), &patch(json!({"fixed": "y"}))).await.unwrap_err();
    assert_eq!(denial(err).1, "admission webhook \"vno-bad.example.com\" denied the request: fixed is immutable");
    let err = cms.patch("a", &PatchParams::default(), &patch(json!({"bad": "1"}))).await.unwrap_err();
    assert_eq!(denial(err).1, "admission webhook \"vno-bad.example.com\" denied the request: bad on update");
    cms.patch("a", &PatchParams::default(), &patch(json!({"other": "z"}))).await.expect("allowed update");
    let a = cms.get("a").await.expect("get");
    assert_eq!(a.data.unwrap_or_default().get("fixed").map(String::as_str), Some("x"));
}
