//! MutatingAdmissionPolicy and its bindings, each behaviour checked first against
//! kube-apiserver v1.37.2 (`kproof cluster up`): `ApplyConfiguration` and `JSONPatch` mutations
//! in order, each seeing the one before; match conditions; params; a failed `test` that leaves
//! the object alone; reinvocation of an `IfNeeded` policy after a later change; the errors
//! (403 `Invalid`, one cause per failed mutation); and the policies' own validation.

use super::common::{causes, post, raw};
use fake_apiserver::ApiServer;
use http::{Method, StatusCode};
use serde_json::{Value, json};

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

fn policy(name: &str, resource: &str, reinvocation: &str, mutations: Value, extra: Value) -> Value {
    let (group, version) = if resource == "deployments" { ("apps", "v1") } else { ("", "v1") };
    let mut spec = json!({
        "matchConstraints": {"resourceRules": [{
            "apiGroups": [group], "apiVersions": [version], "operations": ["CREATE", "UPDATE"], "resources": [resource]}]},
        "reinvocationPolicy": reinvocation,
        "mutations": mutations,
    });
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy", "metadata": {"name": name}, "spec": spec})
}

fn apply_configuration(expression: &str) -> Value {
    json!({"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}})
}

fn json_patch(expression: &str) -> Value {
    json!({"patchType": "JSONPatch", "jsonPatch": {"expression": expression}})
}

async fn install(api: &ApiServer, policy: Value, binding_spec: Value) {
    let name = policy["metadata"]["name"].clone();
    let (code, body) = post(api, POLICIES, &policy).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let mut spec = json!({"policyName": name});
    for (k, v) in binding_spec.as_object().unwrap() {
        spec[k] = v.clone();
    }
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
                         "metadata": {"name": name}, "spec": spec});
    let (code, body) = post(api, BINDINGS, &binding).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
}

fn configmap(name: &str, labels: Value, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": data})
}

#[tokio::test]
async fn mutations_run_in_order_each_seeing_the_last_and_conditions_narrow_them() {
    let api = ApiServer::default();
    let p = policy(
        "add-label",
        "configmaps",
        "Never",
        json!([
            apply_configuration(
                r#"Object{metadata: Object.metadata{labels: {"mutated": "yes"}}, data: {"added": "by-policy"}}"#
            ),
            json_patch(
                r#"[JSONPatch{op: "add", path: "/metadata/annotations", value: {"example.com/size": string(object.data.size())}}]"#
            ),
        ]),
        json!({"matchConditions": [{"name": "not-skipped",
               "expression": "!has(object.metadata.labels) || !('skip' in object.metadata.labels)"}]}),
    );
    install(&api, p, json!({})).await;
    let (code, cm) = post(&api, CONFIGMAPS, &configmap("cm1", json!({}), json!({"x": "1"}))).await;
    assert_eq!(code, StatusCode::CREATED, "{cm}");
    assert_eq!(cm["data"], json!({"added": "by-policy", "x": "1"}));
    assert_eq!(cm["metadata"]["labels"], json!({"mutated": "yes"}));
    // The JSON patch saw the data the apply configuration added: two keys.
    assert_eq!(cm["metadata"]["annotations"], json!({"example.com/size": "2"}));
    let (code, skipped) = post(&api, CONFIGMAPS, &configmap("cm2", json!({"skip": "1"}), json!({}))).await;
    assert_eq!(code, StatusCode::CREATED);
    assert_eq!(skipped["metadata"]["labels"], json!({"skip": "1"}));
    assert!(skipped["metadata"].get("annotations").is_none(), "{skipped}");
}

#[tokio::test]
async fn a_list_merges_by_its_keys_the_result_is_defaulted_and_a_failed_test_changes_nothing() {
    let api = ApiServer::default();
    let p = policy(
        "pods",
        "pods",
        "Never",
        json!([
            apply_configuration(
                r#"Object{spec: Object.spec{containers: [Object.spec.containers{name: "sidecar", image: "busybox"}]}}"#
            ),
            json_patch(
                r#"[JSONPatch{op: "test", path: "/spec/nodeName", value: "x"}, JSONPatch{op: "add", path: "/metadata/labels", value: {"t": "no"}}]"#
            ),
        ]),
        json!({}),
    );
    install(&api, p, json!({})).await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"},
                     "spec": {"containers": [{"name": "main", "image": "nginx"}]}});
    let (code, pod) = post(&api, "/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(code, StatusCode::CREATED, "{pod}");
    let containers = pod["spec"]["containers"].as_array().unwrap();
    let names: Vec<&str> = containers.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["main", "sidecar"]);
    assert_eq!(containers[1]["imagePullPolicy"], "Always", "the added container is defaulted");
    assert!(pod["metadata"].get("labels").is_none(), "the failed test stopped the patch: {pod}");
}

#[tokio::test]
async fn failed_mutations_deny_with_one_cause_each_and_atomic_fields_may_not_be_set() {
    let api = ApiServer::default();
    let p = policy(
        "secrets",
        "secrets",
        "Never",
        json!([
            apply_configuration("Object{spec: Object.specx{replicas: 1}}"),
            json_patch(r#"[JSONPatch{op: "replace", path: "/nope/x", value: 1}]"#),
        ]),
        json!({}),
    );
    install(&api, p, json!({})).await;
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
    let (code, body) = post(&api, "/api/v1/namespaces/default/secrets", &secret).await;
    assert_eq!((code, body["reason"].as_str()), (StatusCode::FORBIDDEN, Some("Invalid")), "{body}");
    let first = "policy 'secrets' with binding 'secrets' denied request: type mismatch: unexpected type name \
                 \"Object.specx\", expected \"Object.spec\", which matches field name path from root Object type";
    let second = "policy 'secrets' with binding 'secrets' denied request: JSON Patch: replace operation does not \
                  apply: doc is missing path: /nope/x: missing value";
    assert_eq!(body["message"], first);
    assert_eq!(body["details"]["causes"], json!([{"message": first}, {"message": second}]));

    let atomic = policy(
        "bad",
        "deployments",
        "Never",
        json!([apply_configuration(
            r#"Object{spec: Object.spec{selector: Object.spec.selector{matchLabels: {"x": "y"}}}}"#
        )]),
        json!({"failurePolicy": "Fail"}),
    );
    install(&api, atomic, json!({})).await;
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                 "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let (code, body) = post(&api, "/apis/apps/v1/namespaces/default/deployments", &deploy).await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(
        body["message"],
        "policy 'bad' with binding 'bad' denied request: error applying patch: invalid ApplyConfiguration: \
         may not mutate atomic arrays, maps or structs: .spec.selector"
    );
    // With `failurePolicy: Ignore` the same policy lets the request through unchanged.
    let ignored = policy(
        "bad",
        "deployments",
        "Never",
        json!([apply_configuration(
            r#"Object{spec: Object.spec{selector: Object.spec.selector{matchLabels: {"x": "y"}}}}"#
        )]),
        json!({"failurePolicy": "Ignore"}),
    );
    let mut current = super::common::get(&api, &format!("{POLICIES}/bad")).await.1;
    current["spec"] = ignored["spec"].clone();
    let (code, body) =
        raw(&api, Method::PUT, &format!("{POLICIES}/bad"), Some("application/json"), current.to_string()).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let (code, created) = post(&api, "/apis/apps/v1/namespaces/default/deployments", &deploy).await;
    assert_eq!(code, StatusCode::CREATED, "{created}");
    assert_eq!(created["spec"]["selector"], json!({"matchLabels": {"a": "b"}}));
}

#[tokio::test]
async fn an_if_needed_policy_runs_again_after_a_later_policy_changes_the_object_and_params_feed_a_patch() {
    let api = ApiServer::default();
    let params = configmap("p1", json!({"param": "yes"}), json!({"key": "example.com/x", "value": "one"}));
    assert_eq!(post(&api, CONFIGMAPS, &params).await.0, StatusCode::CREATED);
    let count = policy(
        "a-count",
        "services",
        "IfNeeded",
        json!([apply_configuration(
            r#"Object{metadata: Object.metadata{annotations: {"count": string(variables.cnt), "seen": string(has(object.metadata.annotations) && "count" in object.metadata.annotations)}}}"#
        )]),
        json!({"variables": [{"name": "cnt", "expression": "has(object.metadata.labels) ? object.metadata.labels.size() : 0"}]}),
    );
    install(&api, count, json!({})).await;
    let label = policy(
        "b-label",
        "services",
        "Never",
        json!([
            json_patch(
                r#"[JSONPatch{op: "add", path: "/metadata/labels", value: {}}, JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey(params.data.key), value: params.data.value}]"#
            ),
            apply_configuration(r#"Object{spec: Object.spec{ports: [Object.spec.ports{port: 81, name: "extra"}]}}"#),
        ]),
        json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}),
    );
    install(
        &api,
        label,
        json!({"paramRef": {"selector": {"matchLabels": {"param": "yes"}}, "namespace": "default", "parameterNotFoundAction": "Allow"}}),
    )
    .await;
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s1"},
                     "spec": {"ports": [{"port": 80, "name": "http"}]}});
    let (code, svc) = post(&api, "/api/v1/namespaces/default/services", &svc).await;
    assert_eq!(code, StatusCode::CREATED, "{svc}");
    assert_eq!(svc["metadata"]["labels"], json!({"example.com/x": "one"}));
    // a-count ran first (no labels, no annotation), b-label changed the object, a-count ran again.
    assert_eq!(svc["metadata"]["annotations"], json!({"count": "1", "seen": "true"}));
    let ports: Vec<(i64, &str)> = svc["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["port"].as_i64().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    assert_eq!(ports, [(80, "http"), (81, "extra")]);
}

#[tokio::test]
async fn policies_and_bindings_are_defaulted_and_validated() {
    let api = ApiServer::default();
    let p = policy("ok", "configmaps", "Never", json!([apply_configuration("Object{}")]), json!({}));
    let (code, body) = post(&api, POLICIES, &p).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    assert_eq!(body["spec"]["failurePolicy"], "Fail");
    let m = &body["spec"]["matchConstraints"];
    assert_eq!(
        (&m["matchPolicy"], &m["namespaceSelector"], &m["resourceRules"][0]["scope"]),
        (&json!("Equivalent"), &json!({}), &json!("*"))
    );

    let mut bad =
        policy("bad", "configmaps", "", json!([{"patchType": "JSONPatch"}, {"patchType": "Merge"}]), json!({}));
    bad["spec"]["matchConstraints"]["resourceRules"][0]["operations"] = json!(["DELETE"]);
    bad["spec"]["variables"] = json!([{"name": "1x", "expression": "1 +"}]);
    let (code, body) = post(&api, POLICIES, &bad).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let want: Vec<(String, String)> = [
        ("spec.matchConstraints.resourceRules.operations", "FieldValueNotSupported"),
        ("spec.variables[0].name", "FieldValueInvalid"),
        ("spec.variables[0].expression", "FieldValueInvalid"),
        ("spec.mutations[0].jsonPatch", "FieldValueRequired"),
        ("spec.mutations[1].patchType", "FieldValueNotSupported"),
        ("spec.reinvocationPolicy", "FieldValueRequired"),
    ]
    .iter()
    .map(|(f, r)| (f.to_string(), r.to_string()))
    .collect();
    assert_eq!(causes(&body), want);

    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": "b"}, "spec": {"paramRef": {"name": "x", "selector": {}}}});
    let (code, body) = post(&api, BINDINGS, &binding).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let want: Vec<(String, String)> = [
        ("spec.policyName", "FieldValueRequired"),
        ("spec.paramRef.name", "FieldValueForbidden"),
        ("spec.paramRef.selector", "FieldValueForbidden"),
        ("spec.paramRef.parameterNotFoundAction", "FieldValueRequired"),
    ]
    .iter()
    .map(|(f, r)| (f.to_string(), r.to_string()))
    .collect();
    assert_eq!(causes(&body), want);
}
