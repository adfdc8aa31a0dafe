//! The webhook paths of the differential corpus: one HTTPS webhook server on loopback that
//! both API servers call, and what both get: the admission webhook configurations,
//! ValidatingAdmissionPolicies and MutatingAdmissionPolicies, and a CRD whose two versions
//! convert through the server's conversion webhook (`Gadget`: `v1` `spec.size` is the storage
//! version `v2`'s `spec.replicas`; an object labelled `kproof.dev/differential-conversion: fail`
//! cannot be converted to `v2`).
//!
//! Admission: Each behaviour is picked by one label of the object,
//! `kproof.dev/differential-admission`, which only the `Admission` kind of `kinds.yaml` sets:
//! its valid objects carry `observe` (a webhook and a policy add a label and an annotation, a
//! webhook and a policy check them), and its mutations set the others (a webhook that denies,
//! fails, answers for another request, patches something invalid; a policy that denies, warns,
//! fails to evaluate, cannot find its params, mutates, cannot mutate).
//!
//! kube-apiserver reads webhook configurations and policies through informers, so they take
//! effect a moment after they are created: [`install`] waits until a dry-run probe of each
//! plugin is answered as it should be.

use super::corpus::RunNames;
use axum::Json;
use axum::extract::Path;
use axum::routing::post;
use base64::Engine;
use serde_json::{Value, json};

/// The label whose value picks an object's admission behaviour.
pub const LABEL: &str = "kproof.dev/differential-admission";

/// The webhook server; it stops when dropped.
pub struct WebhookServer {
    server: fake_apiserver::HttpsServer,
}

impl WebhookServer {
    /// Starts the server on a free loopback port.
    pub async fn start() -> std::io::Result<WebhookServer> {
        let router = axum::Router::new().route("/{behaviour}", post(review));
        Ok(WebhookServer { server: fake_apiserver::HttpsServer::start(router).await? })
    }

    fn client_config(&self, path: &str) -> Value {
        let bundle = base64::engine::general_purpose::STANDARD.encode(self.server.ca_pem());
        json!({"url": format!("{}/{path}", self.server.url()), "caBundle": bundle})
    }
}

/// Answers one `AdmissionReview` as the behaviour in the path says (or a `ConversionReview`).
async fn review(Path(behaviour): Path<String>, Json(review): Json<Value>) -> axum::response::Response {
    use axum::response::IntoResponse;
    if behaviour == "convert" {
        return convert(&review);
    }
    let uid = review["request"]["uid"].clone();
    let answer = |response: Value| {
        let mut r = response;
        if r.get("uid").is_none() {
            r["uid"] = uid.clone();
        }
        Json(json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": r})).into_response()
    };
    let patch = |ops: Value| {
        let encoded = base64::engine::general_purpose::STANDARD.encode(ops.to_string());
        json!({"allowed": true, "patchType": "JSONPatch", "patch": encoded})
    };
    match behaviour.as_str() {
        "label" => {
            answer(patch(json!([{"op": "add", "path": "/metadata/labels/kproof.dev~1webhook-saw", "value": "yes"}])))
        }
        "patch-invalid" => answer(patch(json!([{"op": "add", "path": "/data/bad key!", "value": "x"}]))),
        "patch-unappliable" => answer(patch(json!([{"op": "remove", "path": "/spec/missing"}]))),
        "deny" => answer(
            json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": "kproof says no"}}),
        ),
        "deny-invalid" => answer(json!({"allowed": false, "status": {
            "code": 422, "reason": "Invalid", "message": "data.k: Invalid value: \"v\": not this one",
            "details": {"causes": [{"reason": "FieldValueInvalid", "field": "data.k", "message": "Invalid value: \"v\": not this one"}]}}})),
        "deny-low-code" => {
            answer(json!({"allowed": false, "status": {"code": 200, "message": "a denial with a success code"}}))
        }
        "deny-silent" => answer(json!({"allowed": false})),
        "wrong-uid" => answer(json!({"uid": "not-the-request", "allowed": true})),
        "warn" => answer(json!({"allowed": true, "warnings": ["kproof: data.k is deprecated"]})),
        "fail" => (http::StatusCode::INTERNAL_SERVER_ERROR, "kproof webhook failure").into_response(),
        "not-json" => (http::StatusCode::OK, "this is not an AdmissionReview").into_response(),
        _ => answer(json!({"allowed": true})),
    }
}

/// The conversion webhook of the `Gadget` CRD.
fn convert(review: &Value) -> axum::response::Response {
    use axum::response::IntoResponse;
    let request = &review["request"];
    let to = request["desiredAPIVersion"].as_str().unwrap_or_default();
    let objects = request["objects"].as_array().map(Vec::as_slice).unwrap_or_default();
    if to.ends_with("/v2") && objects.iter().any(|o| o["metadata"]["labels"][CONVERSION_LABEL] == "fail") {
        return (http::StatusCode::INTERNAL_SERVER_ERROR, "kproof cannot convert this gadget").into_response();
    }
    let converted: Vec<Value> = objects
        .iter()
        .map(|o| {
            let mut out = o.clone();
            out["apiVersion"] = json!(to);
            if let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) {
                let (from, into) = if to.ends_with("/v2") { ("size", "replicas") } else { ("replicas", "size") };
                if let Some(v) = spec.remove(from) {
                    spec.insert(into.to_string(), v);
                }
            }
            out
        })
        .collect();
    Json(json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": {
        "uid": request["uid"], "convertedObjects": converted, "result": {"status": "Success"}}}))
    .into_response()
}

/// The label that makes the `Gadget` conversion webhook fail.
const CONVERSION_LABEL: &str = "kproof.dev/differential-conversion";

/// The `Gadget` CRD: `v1` and the storage version `v2`, converted by the webhook server.
fn gadget_crd(server: &WebhookServer) -> Value {
    let version = |name: &str, count: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {"type": "object", "required": ["color"], "properties": {
                count: {"type": "integer", "minimum": 0, "maximum": 100},
                "color": {"type": "string", "enum": ["red", "blue"]},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3, "x-kubernetes-list-type": "set"}}}}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.differential.kproof.dev"},
        "spec": {
            "group": "differential.kproof.dev", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [version("v1", "size", false), version("v2", "replicas", true)],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"], "clientConfig": server.client_config("convert")}}
        }
    })
}

/// The label selector of the objects one behaviour (or several) applies to.
fn selecting(values: &[&str]) -> Value {
    json!({"matchExpressions": [{"key": LABEL, "operator": "In", "values": values}]})
}

fn rules(operations: &[&str]) -> Value {
    json!([{"apiGroups": [""], "apiVersions": ["v1"], "operations": operations, "resources": ["configmaps"]}])
}

fn webhook(
    server: &WebhookServer,
    name: &str,
    path: &str,
    values: &[&str],
    operations: &[&str],
    extra: Value,
) -> Value {
    let mut w = json!({
        "name": format!("{name}.differential.kproof.dev"),
        "clientConfig": server.client_config(path),
        "rules": rules(operations),
        "objectSelector": selecting(values),
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 5,
    });
    for (k, v) in extra.as_object().into_iter().flatten() {
        w[k] = v.clone();
    }
    w
}

/// A policy and its binding (`kind` is `Validating` or `Mutating`).
fn policy(kind: &str, name: &str, values: &[&str], spec: Value, binding: Value) -> [(String, Value); 2] {
    let group = "/apis/admissionregistration.k8s.io/v1";
    let plural = kind.to_lowercase();
    let mut spec = spec;
    spec["matchConstraints"] =
        json!({"resourceRules": rules(&["CREATE", "UPDATE"]), "objectSelector": selecting(values)});
    let mut bspec = binding;
    bspec["policyName"] = json!(name);
    [
        (
            format!("{group}/{plural}admissionpolicies"),
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": format!("{kind}AdmissionPolicy"),
                   "metadata": {"name": name}, "spec": spec}),
        ),
        (
            format!("{group}/{plural}admissionpolicybindings"),
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": format!("{kind}AdmissionPolicyBinding"),
                   "metadata": {"name": name}, "spec": bspec}),
        ),
    ]
}

/// Every object the admission paths need, as (collection path, object), in creation order.
pub fn objects(server: &WebhookServer, names: &RunNames) -> Vec<(String, Value)> {
    let n = &names.nonce;
    let group = "/apis/admissionregistration.k8s.io/v1";
    let writes = &["CREATE", "UPDATE"];
    let mutating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": format!("kproof-differential-{n}")},
        "webhooks": [
            webhook(server, "label", "label", &["observe"], writes, json!({})),
            webhook(server, "patch-invalid", "patch-invalid", &["patch-invalid"], writes, json!({})),
            webhook(server, "patch-unappliable", "patch-unappliable", &["patch-unappliable"], writes, json!({})),
            webhook(server, "mutate-fail", "fail", &["mutate-fail"], writes, json!({})),
        ],
    });
    let validating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": format!("kproof-differential-{n}")},
        "webhooks": [
            webhook(server, "observe", "allow", &["observe"], &["CREATE", "UPDATE", "DELETE"], json!({})),
            webhook(server, "deny", "deny", &["deny"], writes, json!({})),
            webhook(server, "deny-delete", "deny", &["deny-delete"], &["DELETE"], json!({})),
            webhook(server, "deny-invalid", "deny-invalid", &["deny-invalid"], writes, json!({})),
            webhook(server, "deny-low-code", "deny-low-code", &["deny-low-code"], writes, json!({})),
            webhook(server, "deny-silent", "deny-silent", &["deny-silent"], writes, json!({})),
            webhook(server, "wrong-uid", "wrong-uid", &["wrong-uid"], writes, json!({})),
            webhook(server, "warn", "warn", &["warn"], writes, json!({})),
            webhook(server, "fail", "fail", &["fail"], writes, json!({})),
            webhook(server, "fail-ignored", "fail", &["fail-ignored"], writes, json!({"failurePolicy": "Ignore"})),
            webhook(server, "not-json", "not-json", &["not-json"], writes, json!({})),
            webhook(server, "dry-run-unsafe", "allow", &["dry-run-unsafe"], writes, json!({"sideEffects": "NoneOnDryRun"})),
        ],
    });
    let mut out = vec![
        ("/apis/apiextensions.k8s.io/v1/customresourcedefinitions".to_string(), gadget_crd(server)),
        (format!("{group}/mutatingwebhookconfigurations"), mutating),
        (format!("{group}/validatingwebhookconfigurations"), validating),
    ];
    let deny = json!({"validationActions": ["Deny"]});
    let vap = |name: &str, values: &[&str], spec: Value, binding: Value| {
        policy("Validating", &format!("kproof-differential-{name}-{n}"), values, spec, binding)
    };
    let map = |name: &str, values: &[&str], spec: Value| {
        policy("Mutating", &format!("kproof-differential-{name}-{n}"), values, spec, json!({}))
    };
    out.extend(vap(
        "few-keys",
        &["observe"],
        json!({"validations": [{"expression": "object.data.size() <= 3", "message": "at most three keys"}]}),
        deny.clone(),
    ));
    out.extend(vap(
        "deny",
        &["vap-deny"],
        json!({"validations": [{"expression": "false", "messageExpression": "'no ' + object.metadata.name", "reason": "Forbidden"}]}),
        deny.clone(),
    ));
    out.extend(vap(
        "warn",
        &["vap-warn"],
        json!({"validations": [{"expression": "false", "message": "only a warning"}]}),
        json!({"validationActions": ["Warn"]}),
    ));
    out.extend(vap(
        "error",
        &["vap-error"],
        json!({"validations": [{"expression": "object.data.missing == 'x'"}]}),
        deny.clone(),
    ));
    out.extend(vap(
        "error-ignored",
        &["vap-error-ignored"],
        json!({"failurePolicy": "Ignore", "validations": [{"expression": "object.data.missing == 'x'"}]}),
        deny.clone(),
    ));
    out.extend(vap(
        "no-params",
        &["vap-no-params"],
        json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}, "validations": [{"expression": "true"}]}),
        json!({"validationActions": ["Deny"], "paramRef": {"name": format!("absent-{n}"), "parameterNotFoundAction": "Deny"}}),
    ));
    out.extend(map(
        "annotate",
        &["observe", "map-apply"],
        json!({"reinvocationPolicy": "Never", "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
            "expression": "Object{metadata: Object.metadata{annotations: {\"kproof.dev/policy-saw\": string(object.data.size())}}}"}}]}),
    ));
    out.extend(map(
        "json-patch",
        &["map-json-patch"],
        json!({"reinvocationPolicy": "Never", "mutations": [{"patchType": "JSONPatch", "jsonPatch": {
            "expression": "[JSONPatch{op: \"add\", path: \"/data/added\", value: string(object.data.size())}, JSONPatch{op: \"test\", path: \"/data/k\", value: \"other\"}, JSONPatch{op: \"add\", path: \"/data/never\", value: \"x\"}]"}}]}),
    ));
    out.extend(map(
        "error",
        &["map-error"],
        json!({"reinvocationPolicy": "Never", "mutations": [
            {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{data: Object.datax{}}"}},
            {"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: \"replace\", path: \"/nope/x\", value: 1}]"}}]}),
    ));
    out.extend(map(
        "unknown-field",
        &["map-unknown-field"],
        json!({"reinvocationPolicy": "Never", "mutations": [
            {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{spec: Object.spec{replicas: 1}}"}}]}),
    ));
    out.extend(map(
        "ignored",
        &["map-ignored"],
        json!({"failurePolicy": "Ignore", "reinvocationPolicy": "Never", "mutations": [
            {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{data: Object.datax{}}"}}]}),
    ));
    out
}

fn gadget_name() -> String {
    "gadgets.differential.kproof.dev".to_string()
}

/// Whether a probe's answer (code, object) shows the plugins apply the configuration.
type Ready = fn(u16, &Value) -> bool;

/// The probes [`install`] waits on: a dry-run create of a ConfigMap with the label value, and
/// what its answer must show once the plugins have the configuration.
fn probes() -> [(&'static str, Ready); 3] {
    [
        ("deny", |code, _| code == 403),
        ("vap-deny", |code, _| code == 403),
        ("observe", |code, obj| {
            code < 300
                && obj["metadata"]["annotations"]["kproof.dev/policy-saw"].is_string()
                && obj["metadata"]["labels"]["kproof.dev/webhook-saw"] == "yes"
        }),
    ]
}

/// Creates the admission objects on one server and waits until its plugins apply them.
pub(super) async fn install(client: &kube::Client, objects: &[(String, Value)], namespace: &str) -> Result<(), String> {
    for (path, obj) in objects {
        let (code, body) = super::send(client, &super::step_json("POST", path, obj), &[]).await?;
        if code == 409 && obj["kind"] == "CustomResourceDefinition" {
            // Left by an earlier run against the same cluster: its webhook URL is stale.
            super::replace(client, path, obj).await?;
        } else if code >= 300 {
            return Err(format!("creating {path}: {}", String::from_utf8_lossy(&body)));
        }
    }
    super::await_established(client, &[gadget_name()]).await?;
    for (value, ready) in probes() {
        let probe = json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "probe", "labels": {LABEL: value}}, "data": {"k": "v"}});
        let path = format!("/api/v1/namespaces/{namespace}/configmaps?dryRun=All");
        let effective = super::poll(30, || async {
            let (code, body) = super::send(client, &super::step_json("POST", &path, &probe), &[]).await.ok()?;
            let v: Value = serde_json::from_slice(&body).unwrap_or_default();
            ready(code, &v).then_some(())
        })
        .await;
        if effective.is_none() {
            return Err(format!("the admission plugins did not apply the `{value}` configuration within 30 s"));
        }
    }
    Ok(())
}

/// Deletes the admission objects from one server (best effort: the run is over).
pub(super) async fn remove(client: &kube::Client, objects: &[(String, Value)]) {
    for (path, obj) in objects.iter().rev() {
        let item = format!("{path}/{}", obj["metadata"]["name"].as_str().unwrap_or_default());
        let _ = super::send(client, &super::corpus::Step::delete(&item), &[]).await;
    }
}
