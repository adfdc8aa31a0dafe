//! Disagreements with kube-apiserver v1.37.2 on dra validation that `kproof differential
//! --generator upstream` found, each kept as the answer the real server gave.
//!
//! The bodies are the corpus's: `kinds.yaml`'s valid object of the kind with the case's
//! edits of `upstream-cases.yaml`. The causes are in the order of the real server's message.

use crate::common::{causes, post, raw};
use fake_apiserver::{ApiServer, Config, FeatureGates};
use http::{Method, StatusCode};
use serde_json::{Value, json};

const CLAIMS: &str = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims";
const TEMPLATES: &str = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates";
const CLASSES: &str = "/apis/resource.k8s.io/v1/deviceclasses";
const SLICES: &str = "/apis/resource.k8s.io/v1/resourceslices";
const PODGROUPS: &str = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups";
const WORKLOADS: &str = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads";

const JSON: Option<&str> = Some("application/json");
const MERGE: Option<&str> = Some("application/merge-patch+json");

/// The corpus's gates: 1.37's defaults plus the scheduling APIs and claims for PodGroups.
fn server() -> ApiServer {
    let gates = FeatureGates::parse(&["GenericWorkload=true", "DRAWorkloadResourceClaims=true"]).expect("gates");
    ApiServer::new(Config { feature_gates: gates, ..Config::default() })
}

fn claim() -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}}]}}})
}

fn template() -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}}]}}}})
}

fn class() -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "dc"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}})
}

fn slice() -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
        "spec": {"driver": "gpu.example.com", "nodeName": "node-1", "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "x1"}}}]}})
}

fn podgroup() -> Value {
    json!({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "pg"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}})
}

fn workload() -> Value {
    json!({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w"},
        "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}]}})
}

/// `obj` with each JSON pointer of `edits` set (parents created), as the corpus's `set`.
fn with(mut obj: Value, edits: &[(&str, Value)]) -> Value {
    for (pointer, value) in edits {
        let mut at = &mut obj;
        let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
        for (i, part) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            if let Value::Array(items) = at {
                let idx: usize = part.parse().expect("index");
                if idx == items.len() {
                    items.push(Value::Null);
                }
                at = &mut items[idx];
            } else {
                let map = at.as_object_mut().expect("object");
                at = map.entry(part.to_string()).or_insert(Value::Null);
            }
            if last {
                *at = value.clone();
            } else if at.is_null() {
                *at = json!({});
            }
        }
    }
    obj
}

/// The reason, causes (field, type) and message of a 422.
fn invalid(v: &Value) -> (&str, Vec<(String, String)>, &str) {
    (v["reason"].as_str().unwrap_or_default(), causes(v), v["message"].as_str().unwrap_or_default())
}

fn expect(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(f, t)| (f.to_string(), t.to_string())).collect()
}

/// Creates `obj` at `uri` and writes `status` into it through `/status`.
async fn status_write(server: &ApiServer, uri: &str, obj: Value, status: Value) -> (StatusCode, Value) {
    let (code, created) = post(server, uri, &obj).await;
    assert_eq!(code, StatusCode::CREATED, "{created}");
    let name = created["metadata"]["name"].as_str().expect("name").to_string();
    let mut put = created;
    put["status"] = status;
    raw(server, Method::PUT, &format!("{uri}/{name}/status"), JSON, put.to_string()).await
}

// ---- ResourceSlice ----

#[tokio::test]
async fn slice_attribute_value_too_long() {
    let obj = with(slice(), &[("/spec/devices/0/attributes/model/string", json!("x".repeat(65)))]);
    let (code, v) = post(&server(), SLICES, &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec.devices[0].attributes[model].string", "FieldValueTooLong")]),
            "ResourceSlice.resource.k8s.io \"s\" is invalid: spec.devices[0].attributes[model].string: Too long: may not be more than 64 bytes"
        )
    );
}

#[tokio::test]
async fn slice_attribute_not_c_identifier() {
    let obj = with(slice(), &[("/spec/devices/0/attributes/a-b", json!({"string": "x"}))]);
    let (code, v) = post(&server(), SLICES, &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec.devices[0].attributes", "FieldValueInvalid")]),
            "ResourceSlice.resource.k8s.io \"s\" is invalid: spec.devices[0].attributes: Invalid value: \"a-b\": a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')"
        )
    );
}

#[tokio::test]
async fn slice_shared_counters_with_devices() {
    let obj = with(
        slice(),
        &[("/spec/sharedCounters", json!([{"name": "gpu-counters", "counters": {"memory": {"value": "8Gi"}}}]))],
    );
    let (code, v) = post(&server(), SLICES, &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec", "FieldValueInvalid")]),
            "ResourceSlice.resource.k8s.io \"s\" is invalid: spec: Invalid value: \"\": only one of `sharedCounters` or `devices` is allowed"
        )
    );
}

#[tokio::test]
async fn slice_taint_effect_unknown() {
    let obj = with(
        slice(),
        &[("/spec/devices/0/taints", json!([{"key": "example.com/taint", "effect": "some-other-effect"}]))],
    );
    let (code, v) = post(&server(), &format!("{SLICES}?dryRun=All"), &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec.devices[0].taints[0].effect", "FieldValueNotSupported")]),
            "ResourceSlice.resource.k8s.io \"s\" is invalid: spec.devices[0].taints[0].effect: Unsupported value: \"some-other-effect\": supported values: \"NoExecute\", \"NoSchedule\", \"None\""
        )
    );
}

#[tokio::test]
async fn slice_too_many_taints() {
    let taints: Vec<Value> =
        (0..17).map(|i| json!({"key": format!("example.com/taint-{i}"), "effect": "NoSchedule"})).collect();
    let obj = with(slice(), &[("/spec/devices/0/taints", json!(taints))]);
    let (code, v) = post(&server(), SLICES, &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec.devices[0].taints", "FieldValueTooMany")]),
            "ResourceSlice.resource.k8s.io \"s\" is invalid: spec.devices[0].taints: Too many: 17: must have at most 16 items"
        )
    );
}

#[tokio::test]
async fn slice_too_many_devices() {
    let devices: Vec<Value> = (0..129).map(|i| json!({"name": format!("dev-{i}")})).collect();
    let obj = with(slice(), &[("/spec/devices", json!(devices))]);
    let (code, v) = post(&server(), SLICES, &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec.devices", "FieldValueTooMany")]),
            "ResourceSlice.resource.k8s.io \"s\" is invalid: spec.devices: Too many: 129: must have at most 128 items"
        )
    );
}

#[tokio::test]
async fn slice_node_selector_without_terms_also_changes_the_node_name() {
    let server = server();
    let (code, v) = post(&server, SLICES, &slice()).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let patch = json!({"spec": {"nodeName": null, "nodeSelector": {"nodeSelectorTerms": []}}});
    let (code, v) = raw(
        &server,
        Method::PATCH,
        &format!("{SLICES}/s"),
        Some("application/strategic-merge-patch+json"),
        patch.to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[
                ("spec.nodeName", "FieldValueInvalid"),
                ("spec.nodeSelector.nodeSelectorTerms", "FieldValueRequired"),
                ("spec.nodeSelector.nodeSelectorTerms", "FieldValueInvalid"),
            ]),
            "ResourceSlice.resource.k8s.io \"s\" is invalid: [spec.nodeName: Invalid value: null: field is immutable, spec.nodeSelector.nodeSelectorTerms: Required value: must have at least one node selector term, spec.nodeSelector.nodeSelectorTerms: Invalid value: []: must have exactly one node selector term]"
        )
    );
}

#[tokio::test]
async fn slice_per_device_node_selection_false() {
    let mut obj = with(slice(), &[("/spec/perDeviceNodeSelection", json!(false))]);
    obj["spec"].as_object_mut().expect("spec").remove("nodeName");
    let (code, v) = post(&server(), SLICES, &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec.perDeviceNodeSelection", "FieldValueInvalid"), ("spec", "FieldValueRequired")]),
            "ResourceSlice.resource.k8s.io \"s\" is invalid: [spec.perDeviceNodeSelection: Invalid value: false: must be either unset or set to true, spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required]"
        )
    );
}

#[tokio::test]
async fn slice_binding_conditions_without_failure_conditions() {
    let obj = with(
        slice(),
        &[
            ("/spec/devices/0/bindingConditions", json!(["condition1", "condition2"])),
            ("/spec/devices/0/bindsToNode", json!(true)),
        ],
    );
    let (code, v) = post(&server(), &format!("{SLICES}?dryRun=All"), &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec.devices[0].bindingFailureConditions", "FieldValueInvalid")]),
            "ResourceSlice.resource.k8s.io \"s\" is invalid: spec.devices[0].bindingFailureConditions: Invalid value: null: bindingFailureConditions are required to use bindingConditions"
        )
    );
}

// ---- ResourceClaim ----

#[tokio::test]
async fn claim_constraint_empty() {
    let obj = with(claim(), &[("/spec/devices/constraints", json!([{}]))]);
    let (code, v) = post(&server(), CLAIMS, &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec.devices.constraints[0]", "FieldValueRequired")]),
            "ResourceClaim.resource.k8s.io \"c\" is invalid: spec.devices.constraints[0]: Required value: exactly one of \"matchAttribute\" or \"distinctAttribute\" is required, but multiple fields are set"
        )
    );
}

#[tokio::test]
async fn claim_constraint_unknown_subrequest() {
    let mut obj = with(
        claim(),
        &[
            (
                "/spec/devices/requests/0/firstAvailable",
                json!([{"name": "sub-0", "deviceClassName": "gpu.example.com"}, {"name": "sub-1", "deviceClassName": "gpu.example.com"}]),
            ),
            (
                "/spec/devices/constraints",
                json!([{"requests": ["gpu/baz"], "matchAttribute": "dra.example.com/driverVersion"}]),
            ),
        ],
    );
    obj["spec"]["devices"]["requests"][0].as_object_mut().expect("request").remove("exactly");
    let (code, v) = post(&server(), CLAIMS, &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec.devices.constraints[0].requests[0]", "FieldValueInvalid")]),
            "ResourceClaim.resource.k8s.io \"c\" is invalid: spec.devices.constraints[0].requests[0]: Invalid value: \"gpu/baz\": must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
        )
    );
}

#[tokio::test]
async fn claim_distinct_attribute_without_domain() {
    let obj = with(
        claim(),
        &[("/spec/devices/constraints", json!([{"requests": ["gpu"], "distinctAttribute": "missing-domain"}]))],
    );
    let (code, v) = post(&server(), CLAIMS, &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[
                ("spec.devices.constraints[0].distinctAttribute", "FieldValueInvalid"),
                ("spec.devices.constraints[0].distinctAttribute", "FieldValueInvalid"),
            ]),
            "ResourceClaim.resource.k8s.io \"c\" is invalid: [spec.devices.constraints[0].distinctAttribute: Invalid value: \"missing-domain\": a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*'), spec.devices.constraints[0].distinctAttribute: Invalid value: \"missing-domain\": a fully qualified name must be a domain and a name separated by a slash]"
        )
    );
}

#[tokio::test]
async fn claim_cel_selector_too_long() {
    let obj = with(
        claim(),
        &[("/spec/devices/requests/0/exactly/selectors", json!([{"cel": {"expression": "x".repeat(10241)}}]))],
    );
    let (code, v) = post(&server(), CLAIMS, &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec.devices.requests[0].exactly.selectors[0].cel.expression", "FieldValueTooLong")]),
            "ResourceClaim.resource.k8s.io \"c\" is invalid: spec.devices.requests[0].exactly.selectors[0].cel.expression: Too long: may not be more than 10240 bytes"
        )
    );
}

#[tokio::test]
async fn claim_toleration_with_bad_key_value_and_effect() {
    let obj = with(
        claim(),
        &[(
            "/spec/devices/requests/0/exactly/tolerations",
            json!([{"key": "bad key!", "operator": "Equal", "value": "bad value!", "effect": "some-other-effect"}]),
        )],
    );
    let (code, v) = post(&server(), &format!("{CLAIMS}?dryRun=All"), &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    let at = "spec.devices.requests[0].exactly.tolerations[0]";
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[
                (&format!("{at}.value"), "FieldValueInvalid"),
                (&format!("{at}.key"), "FieldValueInvalid"),
                (&format!("{at}.effect"), "FieldValueNotSupported"),
            ]),
            "ResourceClaim.resource.k8s.io \"c\" is invalid: [spec.devices.requests[0].exactly.tolerations[0].value: Invalid value: \"bad value!\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'), spec.devices.requests[0].exactly.tolerations[0].key: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), spec.devices.requests[0].exactly.tolerations[0].effect: Unsupported value: \"some-other-effect\": supported values: \"NoExecute\", \"NoSchedule\", \"None\"]"
        )
    );
}

#[tokio::test]
async fn claim_first_available_with_the_same_name_twice() {
    let mut obj = with(
        claim(),
        &[(
            "/spec/devices/requests/0/firstAvailable",
            json!([{"name": "sub-0", "deviceClassName": "gpu.example.com"}, {"name": "sub-0", "deviceClassName": "gpu.example.com"}]),
        )],
    );
    obj["spec"]["devices"]["requests"][0].as_object_mut().expect("request").remove("exactly");
    let (code, v) = post(&server(), CLAIMS, &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec.devices.requests[0].firstAvailable[1]", "FieldValueDuplicate")]),
            "ResourceClaim.resource.k8s.io \"c\" is invalid: spec.devices.requests[0].firstAvailable[1]: Duplicate value: {\"name\":\"sub-0\",\"deviceClassName\":\"gpu.example.com\",\"allocationMode\":\"ExactCount\",\"count\":1}"
        )
    );
}

const ALLOCATED_GPU: &str = r#"{"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}}"#;

#[tokio::test]
async fn claim_status_result_for_an_unknown_subrequest() {
    let server = server();
    let (code, v) = post(&server, CLAIMS, &claim()).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let patch = json!({"status": {"allocation": {"devices": {"results": [{"request": "gpu/baz", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}}}});
    let (code, v) = raw(&server, Method::PATCH, &format!("{CLAIMS}/c/status"), MERGE, patch.to_string()).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("status.allocation.devices.results[0].request", "FieldValueInvalid")]),
            "ResourceClaim.resource.k8s.io \"c\" is invalid: status.allocation.devices.results[0].request: Invalid value: \"gpu/baz\": must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
        )
    );
}

#[tokio::test]
async fn claim_status_of_a_device_not_allocated() {
    let status = json!({"allocation": serde_json::from_str::<Value>(ALLOCATED_GPU).expect("json"), "devices": [{"driver": "b", "pool": "a", "device": "r"}]});
    let (code, v) = status_write(&server(), CLAIMS, claim(), status).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("status.devices[0]", "FieldValueInvalid")]),
            "ResourceClaim.resource.k8s.io \"c\" is invalid: status.devices[0]: Invalid value: {\"Driver\":\"b\",\"Pool\":\"a\",\"Device\":\"r\",\"ShareID\":\"\"}: must be an allocated device in the claim"
        )
    );
}

#[tokio::test]
async fn claim_status_with_invalid_network_data() {
    let status = json!({"allocation": serde_json::from_str::<Value>(ALLOCATED_GPU).expect("json"),
        "devices": [{"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0",
            "networkData": {"interfaceName": "x".repeat(257), "ips": ["300.9.8.0/24", "010.009.008.000/24", "2001:0db8::1/64"]}}]});
    let (code, v) = status_write(&server(), CLAIMS, claim(), status).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    let at = "status.devices[0].networkData";
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[
                (&format!("{at}.ips[0]"), "FieldValueInvalid"),
                (&format!("{at}.ips[1]"), "FieldValueInvalid"),
                (&format!("{at}.ips[2]"), "FieldValueInvalid"),
                (&format!("{at}.interfaceName"), "FieldValueTooLong"),
            ]),
            "ResourceClaim.resource.k8s.io \"c\" is invalid: [status.devices[0].networkData.ips[0]: Invalid value: \"300.9.8.0/24\": must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64), status.devices[0].networkData.ips[1]: Invalid value: \"010.009.008.000/24\": must be in canonical form (\"10.9.8.0/24\"), status.devices[0].networkData.ips[2]: Invalid value: \"2001:0db8::1/64\": must be in canonical form (\"2001:db8::1/64\"), status.devices[0].networkData.interfaceName: Too long: may not be more than 256 bytes]"
        )
    );
}

// ---- ResourceClaimTemplate ----

#[tokio::test]
async fn template_config_with_null_parameters() {
    let obj = with(
        template(),
        &[("/spec/spec/devices/config", json!([{"opaque": {"driver": "dra.example.com", "parameters": null}}]))],
    );
    let (code, v) = post(&server(), &format!("{TEMPLATES}?dryRun=All"), &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec.spec.devices.config[0].opaque.parameters", "FieldValueRequired")]),
            "ResourceClaimTemplate.resource.k8s.io \"t\" is invalid: spec.spec.devices.config[0].opaque.parameters: Required value"
        )
    );
}

/// An update validates the new template as a create does, then the spec's immutability: the
/// handwritten errors of the spec come before the immutable `spec`, the declarative ones after.
#[tokio::test]
async fn template_update_validates_the_new_spec_too() {
    let exactly = "/spec/spec/devices/requests/0/exactly";
    let too_many: Vec<Value> = (0..33)
        .map(|i| json!({"name": format!("r{i}"), "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}}))
        .collect();
    let cases: Vec<(Value, Vec<(String, String)>)> = vec![
        (
            json!({"spec": {"spec": {"devices": {"requests": [request(json!({"allocationMode": "Some"}))]}}}}),
            expect(&[
                ("spec", "FieldValueInvalid"),
                (&format!("{}.allocationMode", dotted(exactly)), "FieldValueNotSupported"),
            ]),
        ),
        (
            json!({"spec": {"spec": {"devices": {"requests": too_many}}}}),
            expect(&[("spec", "FieldValueInvalid"), ("spec.spec.devices.requests", "FieldValueTooMany")]),
        ),
        (
            json!({"spec": {"spec": {"devices": {"requests": [request(json!({"deviceClassName": ""}))]}}}}),
            expect(&[
                (&format!("{}.deviceClassName", dotted(exactly)), "FieldValueRequired"),
                ("spec", "FieldValueInvalid"),
            ]),
        ),
        (
            json!({"spec": {"spec": {"devices": {"config": [{"requests": ["nope"], "opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}}]}}}}),
            expect(&[("spec.spec.devices.config[0].requests[0]", "FieldValueInvalid"), ("spec", "FieldValueInvalid")]),
        ),
        (
            json!({"spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}, "firstAvailable": [{"name": "a", "deviceClassName": "gpu.example.com"}]}]}}}}),
            expect(&[("spec.spec.devices.requests[0]", "FieldValueInvalid"), ("spec", "FieldValueInvalid")]),
        ),
        (
            json!({"spec": {"spec": {"devices": {"requests": [request(json!({"allocationMode": "All"}))]}}}}),
            expect(&[(&format!("{}.count", dotted(exactly)), "FieldValueInvalid"), ("spec", "FieldValueInvalid")]),
        ),
    ];
    for (patch, want) in cases {
        let server = server();
        let (code, v) = post(&server, TEMPLATES, &template()).await;
        assert_eq!(code, StatusCode::CREATED, "{v}");
        let (code, v) = raw(&server, Method::PATCH, &format!("{TEMPLATES}/t"), MERGE, patch.to_string()).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{patch}: {v}");
        assert_eq!((v["reason"].as_str(), causes(&v)), (Some("Invalid"), want), "{patch}");
    }
}

/// The template's request with `exactly` changed by the fields of `edit` (a merge patch
/// replaces the whole list).
fn request(edit: Value) -> Value {
    let mut exactly = json!({"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1});
    for (k, v) in edit.as_object().expect("object") {
        exactly[k] = v.clone();
    }
    json!({"name": "gpu", "exactly": exactly})
}

/// `/spec/spec/devices/requests/0/exactly` as a field path.
fn dotted(pointer: &str) -> String {
    pointer.trim_start_matches('/').replace("/requests/0/", ".requests[0].").replace('/', ".")
}

// ---- DeviceClass ----

#[tokio::test]
async fn class_with_too_many_selectors() {
    let selectors: Vec<Value> = (0..33).map(|_| json!({"cel": {"expression": "true"}})).collect();
    let obj = with(class(), &[("/spec/selectors", json!(selectors))]);
    let (code, v) = post(&server(), CLASSES, &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec.selectors", "FieldValueTooMany")]),
            "DeviceClass.resource.k8s.io \"dc\" is invalid: spec.selectors: Too many: 33: must have at most 32 items"
        )
    );
}

#[tokio::test]
async fn class_selector_with_an_undeclared_variable() {
    let obj = with(class(), &[("/spec/selectors/1", json!({"cel": {"expression": "noSuchVar"}}))]);
    let (code, v) = post(&server(), CLASSES, &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec.selectors[1].cel.expression", "FieldValueInvalid")]),
            "DeviceClass.resource.k8s.io \"dc\" is invalid: spec.selectors[1].cel.expression: Invalid value: \"noSuchVar\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'noSuchVar' (in container '')\n | noSuchVar\n | ^"
        )
    );
}

#[tokio::test]
async fn class_config_parameters_that_are_a_string() {
    let obj = with(
        class(),
        &[("/spec/config", json!([{"opaque": {"driver": "gpu.example.com", "parameters": "hello-world"}}]))],
    );
    let (code, v) = post(&server(), CLASSES, &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec.config[0].opaque.parameters", "FieldValueInvalid")]),
            "DeviceClass.resource.k8s.io \"dc\" is invalid: spec.config[0].opaque.parameters: Invalid value: \"<value omitted>\": must be a valid JSON object"
        )
    );
}

#[tokio::test]
async fn class_config_parameters_over_10_kib() {
    let obj = with(
        class(),
        &[("/spec/config", json!([{"opaque": {"driver": "gpu.example.com", "parameters": {"x": "x".repeat(10240)}}}]))],
    );
    let (code, v) = post(&server(), &format!("{CLASSES}?dryRun=All"), &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec.config[0].opaque.parameters", "FieldValueTooLong")]),
            "DeviceClass.resource.k8s.io \"dc\" is invalid: spec.config[0].opaque.parameters: Too long: may not be more than 10240 bytes"
        )
    );
}

// ---- PodGroup ----

const CONDITION_REASON: &str = "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')";

fn scheduled(reason: &str) -> Value {
    json!({"type": "PodGroupInitiallyScheduled", "status": "False", "reason": reason, "message": "Test status condition message", "lastTransitionTime": "2026-01-01T00:00:00Z"})
}

#[tokio::test]
async fn podgroup_status_with_a_duplicate_condition() {
    let server = server();
    let (code, v) = post(&server, PODGROUPS, &podgroup()).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let patch = json!({"status": {"conditions": [scheduled("Unschedulable"), scheduled("Unschedulable")]}});
    let (code, v) = raw(&server, Method::PATCH, &format!("{PODGROUPS}/pg/status"), MERGE, patch.to_string()).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("status.conditions[1]", "FieldValueDuplicate")]),
            "PodGroup.scheduling.k8s.io \"pg\" is invalid: status.conditions[1]: Duplicate value: \"PodGroupInitiallyScheduled\""
        )
    );
}

#[tokio::test]
async fn podgroup_status_condition_reason_with_a_space() {
    let server = server();
    let (code, v) = post(&server, PODGROUPS, &podgroup()).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let patch = json!({"status": {"conditions": [scheduled("Sche duled")]}});
    let (code, v) = raw(&server, Method::PATCH, &format!("{PODGROUPS}/pg/status"), MERGE, patch.to_string()).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("status.conditions[0].reason", "FieldValueInvalid")]),
            format!(
                "PodGroup.scheduling.k8s.io \"pg\" is invalid: status.conditions[0].reason: Invalid value: \"Sche duled\": {CONDITION_REASON}"
            )
            .as_str()
        )
    );
}

#[tokio::test]
async fn podgroup_status_for_a_claim_the_spec_does_not_list() {
    let status = json!({"resourceClaimStatuses": [{"name": "no-such-claim", "resourceClaimName": "my-claim"}]});
    let (code, v) = status_write(&server(), PODGROUPS, podgroup(), status).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("status.resourceClaimStatuses[0].name", "FieldValueInvalid")]),
            "PodGroup.scheduling.k8s.io \"pg\" is invalid: status.resourceClaimStatuses[0].name: Invalid value: \"no-such-claim\": must match the name of an entry in `spec.resourceClaims`"
        )
    );
}

// ---- ObjectMeta of the DRA and scheduling kinds ----

#[tokio::test]
async fn two_controller_owner_references() {
    let owner = |n: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": n, "uid": format!("00000000-0000-0000-0000-00000000000{}", n.len()), "controller": true});
    let server = server();
    for (uri, obj, kind) in [
        (CLAIMS, claim(), "ResourceClaim.resource.k8s.io \"c\""),
        (PODGROUPS, podgroup(), "PodGroup.scheduling.k8s.io \"pg\""),
        (WORKLOADS, workload(), "Workload.scheduling.k8s.io \"w\""),
    ] {
        let obj = with(obj, &[("/metadata/ownerReferences", json!([owner("a"), owner("bb")]))]);
        let (code, v) = post(&server, &format!("{uri}?fieldValidation=Ignore"), &obj).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
        assert_eq!(
            invalid(&v),
            (
                "Invalid",
                expect(&[("metadata.ownerReferences", "FieldValueInvalid")]),
                format!(
                    "{kind} is invalid: metadata.ownerReferences: Invalid value: [{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"a\",\"uid\":\"00000000-0000-0000-0000-000000000001\",\"controller\":true}},{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"bb\",\"uid\":\"00000000-0000-0000-0000-000000000002\",\"controller\":true}}]: Only one reference can have Controller set to true. Found \"true\" in references for ConfigMap/a and ConfigMap/bb"
                )
                .as_str()
            )
        );
    }
}

#[tokio::test]
async fn slice_taints_get_the_time_they_were_added() {
    let obj = with(
        slice(),
        &[(
            "/spec/devices/0/taints",
            json!([{"key": "example.com/taint", "value": "tainted", "effect": "NoSchedule"}, {"key": "example.com/other", "effect": "NoExecute"}]),
        )],
    );
    let (code, v) = post(&server(), SLICES, &obj).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    for t in v["spec"]["devices"][0]["taints"].as_array().expect("taints") {
        assert_eq!(t["timeAdded"], v["metadata"]["creationTimestamp"], "{t}");
    }
}

// ---- Updates of the scheduling kinds (the first corpus) ----

/// `wl-template-name-missing` as a JSON patch: renaming the one template adds an item and
/// removes one, and either short-circuits the list, so the empty name goes unreported.
#[tokio::test]
async fn workload_template_renamed_is_an_item_added_and_one_removed() {
    let server = server();
    let (code, v) = post(&server, WORKLOADS, &workload()).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let patch = json!([{"op": "replace", "path": "/spec/podGroupTemplates/0/name", "value": ""}]);
    let (code, v) =
        raw(&server, Method::PATCH, &format!("{WORKLOADS}/w"), Some("application/json-patch+json"), patch.to_string())
            .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[
                ("spec.podGroupTemplates[0]", "FieldValueForbidden"),
                ("spec.podGroupTemplates", "FieldValueForbidden")
            ]),
            "Workload.scheduling.k8s.io \"w\" is invalid: [spec.podGroupTemplates[0]: Forbidden: item may not be added, spec.podGroupTemplates: Forbidden: item may not be removed]"
        )
    );
}

/// `pg-workload-ref-invalid` as an update: the workload reference is immutable, which
/// short-circuits the checks of its members.
#[tokio::test]
async fn podgroup_workload_ref_set_on_update_is_immutable() {
    let server = server();
    let (code, created) = post(&server, PODGROUPS, &podgroup()).await;
    assert_eq!(code, StatusCode::CREATED, "{created}");
    let put = with(created, &[("/spec/workloadRef", json!({"workloadName": "Bad_Name", "templateName": "t"}))]);
    let (code, v) = raw(&server, Method::PUT, &format!("{PODGROUPS}/pg"), JSON, put.to_string()).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec.workloadRef", "FieldValueInvalid")]),
            "PodGroup.scheduling.k8s.io \"pg\" is invalid: spec.workloadRef: Invalid value: null: field is immutable"
        )
    );
}

/// `pg-claims-too-many` as a merge patch: the claims are immutable and at most 4, two
/// short-circuit checks that both report.
#[tokio::test]
async fn podgroup_claims_set_on_update_are_immutable_and_too_many() {
    let server = server();
    let (code, v) = post(&server, PODGROUPS, &podgroup()).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let claims: Vec<Value> =
        (0..5).map(|i| json!({"name": format!("c{i}"), "resourceClaimName": format!("claim-{i}")})).collect();
    let patch = json!({"spec": {"resourceClaims": claims}});
    let (code, v) = raw(&server, Method::PATCH, &format!("{PODGROUPS}/pg"), MERGE, patch.to_string()).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        invalid(&v),
        (
            "Invalid",
            expect(&[("spec.resourceClaims", "FieldValueInvalid"), ("spec.resourceClaims", "FieldValueTooMany")]),
            "PodGroup.scheduling.k8s.io \"pg\" is invalid: [spec.resourceClaims: Invalid value: null: field is immutable, spec.resourceClaims: Too many: 5: must have at most 4 items]"
        )
    );
}
