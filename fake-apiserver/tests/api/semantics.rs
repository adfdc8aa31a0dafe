//! The five requests issue 13 found answered wrongly, each with kube-apiserver v1.37.2's answer
//! (`pkg/apis/core/validation`, `pkg/apis/apps/validation`, the core defaulters, and the
//! apiextensions-apiserver's pruning before managedFields).

use crate::common::{causes, get, post};
use fake_apiserver::{ApiServer, Config};
use http::StatusCode;
use serde_json::json;

#[tokio::test]
async fn a_pod_without_containers_is_refused() {
    let server = ApiServer::new(Config::default());
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}});
    let (code, body) = post(&server, "/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["reason"], "Invalid");
    assert!(causes(&body).contains(&("spec.containers".into(), "FieldValueRequired".into())), "{body}");
    assert!(body["message"].as_str().unwrap_or("").contains("spec.containers: Required value"), "{body}");
}

#[tokio::test]
async fn a_deployment_whose_selector_misses_its_template_is_refused() {
    let server = ApiServer::new(Config::default());
    let deploy = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        }
    });
    let (code, body) = post(&server, "/apis/apps/v1/namespaces/default/deployments", &deploy).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(causes(&body).contains(&("spec.template.metadata.labels".into(), "FieldValueInvalid".into())), "{body}");
    assert!(body["message"].as_str().unwrap_or("").contains("`selector` does not match template `labels`"), "{body}");
}

#[tokio::test]
async fn a_configmap_over_one_mebibyte_is_refused() {
    let server = ApiServer::new(Config::default());
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"a": "x".repeat(2 << 20)}});
    let (code, body) = post(&server, "/api/v1/namespaces/default/configmaps", &cm).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(causes(&body).iter().any(|(_, t)| t == "FieldValueTooLong"), "{body}");
    let (code, _) = get(&server, "/api/v1/namespaces/default/configmaps/big").await;
    assert_eq!(code, StatusCode::NOT_FOUND, "nothing was stored");
}

#[tokio::test]
async fn managed_fields_of_a_custom_resource_leave_out_what_pruning_removed() {
    let server = ApiServer::new(Config::default());
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}
            }}}]
        }
    });
    let (code, body) = post(&server, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &crd).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let gadget = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
        "spec": {"size": 1, "bogusField": true}});
    // The CRD is served once it is Established, a moment after it is created.
    let mut answer =
        post(&server, "/apis/example.com/v1/namespaces/default/gadgets?fieldManager=tester", &gadget).await;
    for _ in 0..50 {
        if answer.0 != StatusCode::NOT_FOUND {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        answer = post(&server, "/apis/example.com/v1/namespaces/default/gadgets?fieldManager=tester", &gadget).await;
    }
    let (code, body) = answer;
    assert_eq!(code, StatusCode::CREATED, "{code} {body}");
    assert!(body["spec"].get("bogusField").is_none(), "pruned: {body}");
    let fields = body["metadata"]["managedFields"][0]["fieldsV1"].to_string();
    assert!(fields.contains("f:size"), "{fields}");
    assert!(!fields.contains("f:bogusField"), "managedFields list a pruned field: {fields}");
}

#[tokio::test]
async fn built_ins_are_defaulted_and_lose_unknown_fields() {
    let server = ApiServer::new(Config::default());
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}], "bogus": 1}]}});
    let (code, body) = post(&server, "/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let spec = &body["spec"];
    let c = &spec["containers"][0];
    assert_eq!(c["ports"][0]["protocol"], "TCP");
    assert_eq!(c["imagePullPolicy"], "Always", "an image without a tag is :latest");
    assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(c["terminationMessagePolicy"], "File");
    assert!(c.get("bogus").is_none(), "unknown fields of built-ins are dropped: {c}");
    assert_eq!(spec["restartPolicy"], "Always");
    assert_eq!(spec["dnsPolicy"], "ClusterFirst");
    assert_eq!(spec["schedulerName"], "default-scheduler");
    assert_eq!(spec["terminationGracePeriodSeconds"], 30);

    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"selector": {"app": "a"}, "ports": [{"port": 80}]}});
    let (code, body) = post(&server, "/api/v1/namespaces/default/services", &svc).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    assert_eq!(body["spec"]["type"], "ClusterIP");
    assert_eq!(body["spec"]["sessionAffinity"], "None");
    assert_eq!(body["spec"]["ports"][0]["protocol"], "TCP");
    assert_eq!(body["spec"]["ports"][0]["targetPort"], 80);
}

/// Found by the differential smoke test against kube-apiserver v1.37.2: a pod update may not
/// change `terminationGracePeriodSeconds` (only from a negative value to 1), so a JSON patch
/// that makes it negative is 422 Forbidden at `spec`, not accepted.
#[tokio::test]
async fn a_pod_update_changing_its_termination_grace_period_is_forbidden() {
    let server = ApiServer::new(Config::default());
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "grace"},
                     "spec": {"containers": [{"name": "c", "image": "busybox"}], "terminationGracePeriodSeconds": 30}});
    let (code, body) = post(&server, "/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    for grace in [-5, 10] {
        let patch = json!([{"op": "replace", "path": "/spec/terminationGracePeriodSeconds", "value": grace}]);
        let (code, body) = crate::common::raw(
            &server,
            http::Method::PATCH,
            "/api/v1/namespaces/default/pods/grace",
            Some("application/json-patch+json"),
            patch.to_string(),
        )
        .await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "grace {grace}: {body}");
        assert_eq!(causes(&body), vec![("spec".to_string(), "FieldValueForbidden".to_string())], "grace {grace}");
    }
}

/// Scheduling gates: a name is checked at the gate's own path and only once per gate
/// (`validateSchedulingGates`), and an update may only remove gates
/// (`validateOnlyDeletedSchedulingGates`), as kube-apiserver v1.37.2 answers (both found by
/// `kproof differential`).
#[tokio::test]
async fn scheduling_gates_are_checked_at_the_gate_and_only_removed_by_updates() {
    let server = ApiServer::new(Config::default());
    let pod = |gates: serde_json::Value| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"schedulingGates": gates, "containers": [{"name": "c", "image": "i"}]}})
    };
    let url = "/api/v1/namespaces/default/pods";
    let (code, body) = post(&server, url, &pod(json!([{"name": "bad gate"}, {"name": "g"}, {"name": "g"}]))).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(
        causes(&body),
        vec![
            ("spec.schedulingGates[0]".to_string(), "FieldValueInvalid".to_string()),
            ("spec.schedulingGates[2]".to_string(), "FieldValueDuplicate".to_string()),
        ]
    );
    let (code, body) = post(&server, url, &pod(json!([{"name": "example.com/a"}]))).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let merge = Some("application/merge-patch+json");
    let add = json!({"spec": {"schedulingGates": [{"name": "example.com/a"}, {"name": "example.com/b"}]}});
    let (code, body) =
        crate::common::raw(&server, http::Method::PATCH, &format!("{url}/p"), merge, add.to_string()).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(causes(&body).contains(&("spec.schedulingGates[1].name".into(), "FieldValueForbidden".into())), "{body}");
    let remove = json!({"spec": {"schedulingGates": null}});
    let (code, body) =
        crate::common::raw(&server, http::Method::PATCH, &format!("{url}/p"), merge, remove.to_string()).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert!(get(&server, &format!("{url}/p")).await.1["spec"].get("schedulingGates").is_none());
}
