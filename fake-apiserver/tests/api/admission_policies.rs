//! ValidatingAdmissionPolicy and its bindings: a policy applies through a binding, its
//! validations deny with the binding's actions (`Deny` answers with the validation's reason,
//! `Warn` adds a warning), params come from the binding's `paramRef`, match conditions and
//! resource rules narrow it, and an evaluation error follows the failure policy.

use super::common::{post, raw_full};
use axum::body::Body;
use fake_apiserver::ApiServer;
use http::{Method, StatusCode};
use serde_json::{Value, json};

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

fn deployment(name: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
        }
    })
}

fn policy(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["matchConstraints"] = json!({"resourceRules": [{
        "apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]});
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name}, "spec": spec})
}

fn binding(name: &str, policy: &str, actions: &[&str], extra: Value) -> Value {
    let mut spec = json!({"policyName": policy, "validationActions": actions});
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name}, "spec": spec})
}

async fn install(api: &ApiServer, policy: Value, binding: Value) {
    let (code, body) = post(api, POLICIES, &policy).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let (code, body) = post(api, BINDINGS, &binding).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
}

#[tokio::test]
async fn a_denying_binding_answers_with_the_validations_reason() {
    let api = ApiServer::default();
    let max = policy("max-replicas", json!({"validations": [{"expression": "object.spec.replicas <= 5"}]}));
    install(&api, max, binding("max-replicas-binding", "max-replicas", &["Deny"], json!({}))).await;
    let (code, body) = post(&api, DEPLOYS, &deployment("web", 6)).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["reason"], "Invalid");
    let denied = "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: \
                  failed expression: object.spec.replicas <= 5";
    assert_eq!(body["message"], format!("deployments.apps \"web\" is forbidden: {denied}"));
    assert_eq!(body["details"]["causes"], json!([{"message": denied}]));
    assert_eq!(post(&api, DEPLOYS, &deployment("web", 5)).await.0, StatusCode::CREATED);

    // A message, a reason of its own, and a policy without a binding that applies nothing.
    let api = ApiServer::default();
    let named = policy(
        "named",
        json!({"validations": [{"expression": "object.spec.replicas <= 5", "message": "at most five", "reason": "Forbidden"}]}),
    );
    let (code, _) = post(&api, POLICIES, &named).await;
    assert_eq!(code, StatusCode::CREATED);
    assert_eq!(post(&api, DEPLOYS, &deployment("a", 6)).await.0, StatusCode::CREATED);
    let (code, _) = post(&api, BINDINGS, &binding("named", "named", &["Deny"], json!({}))).await;
    assert_eq!(code, StatusCode::CREATED);
    let (code, body) = post(&api, DEPLOYS, &deployment("b", 6)).await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    assert!(body["message"].as_str().unwrap().ends_with("denied request: at most five"), "{body}");
}

#[tokio::test]
async fn a_warning_binding_lets_the_request_through_with_a_warning() {
    let api = ApiServer::default();
    let max = policy(
        "max",
        json!({"validations": [{"expression": "object.spec.replicas <= 5", "messageExpression": "'replicas ' + string(object.spec.replicas) + ' > 5'"}]}),
    );
    install(&api, max, binding("max", "max", &["Warn"], json!({}))).await;
    let (code, headers, _) = raw_full(
        &api,
        Method::POST,
        DEPLOYS,
        &[("content-type", Some("application/json"))],
        Body::from(deployment("web", 7).to_string()),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED);
    let warnings: Vec<&str> = headers.get_all("warning").iter().filter_map(|v| v.to_str().ok()).collect();
    assert_eq!(
        warnings,
        vec!["299 - \"Validation failed for ValidatingAdmissionPolicy 'max' with binding 'max': replicas 7 > 5\""]
    );
}

#[tokio::test]
async fn params_conditions_and_rules_narrow_a_policy() {
    let api = ApiServer::default();
    let limits = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "limits"}, "data": {"max": "3"}});
    assert_eq!(post(&api, "/api/v1/namespaces/default/configmaps", &limits).await.0, StatusCode::CREATED);
    let p = policy(
        "param-max",
        json!({
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConditions": [{"name": "not-exempt", "expression": "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"}],
            "variables": [{"name": "max", "expression": "int(params.data.max)"}],
            "validations": [{"expression": "object.spec.replicas <= variables.max"}]
        }),
    );
    let b = binding(
        "param-max",
        "param-max",
        &["Deny"],
        json!({"paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"}}),
    );
    install(&api, p, b).await;
    assert_eq!(post(&api, DEPLOYS, &deployment("a", 3)).await.0, StatusCode::CREATED);
    let (code, body) = post(&api, DEPLOYS, &deployment("b", 4)).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let mut exempt = deployment("c", 4);
    exempt["metadata"]["labels"]["exempt"] = json!("yes");
    assert_eq!(post(&api, DEPLOYS, &exempt).await.0, StatusCode::CREATED);
    // The params live in the request's namespace: another namespace has none, and the
    // binding's `Deny` for missing params refuses.
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}});
    assert_eq!(post(&api, "/api/v1/namespaces", &ns).await.0, StatusCode::CREATED);
    let (code, body) = post(&api, "/apis/apps/v1/namespaces/other/deployments", &deployment("d", 1)).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("no params found for policy binding with `Deny` parameterNotFoundAction"),
        "{body}"
    );
    // Other resources are not matched.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
    assert_eq!(post(&api, "/api/v1/namespaces/default/configmaps", &cm).await.0, StatusCode::CREATED);
}
