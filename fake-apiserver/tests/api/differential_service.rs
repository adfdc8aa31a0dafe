//! Disagreements with kube-apiserver v1.37.2 on Services and EndpointSlices that `kproof
//! differential --generator upstream` found (cases of harness/src/differential/upstream-cases.yaml
//! over the grid's valid objects), each kept as the answer the real server gave.

use crate::common::{causes, post, raw};
use fake_apiserver::ApiServer;
use http::{Method, StatusCode};
use serde_json::{Value, json};

const SERVICES: &str = "/api/v1/namespaces/default/services";
const SLICES: &str = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";

const JSON: Option<&str> = Some("application/json");
const MERGE: Option<&str> = Some("application/merge-patch+json");
const STRATEGIC: Option<&str> = Some("application/strategic-merge-patch+json");
const APPLY: Option<&str> = Some("application/apply-patch+yaml");

/// The grid's valid Service.
fn service(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
    })
}

/// The grid's valid EndpointSlice.
fn slice(name: &str) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.1.2.3"], "conditions": {"ready": true}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]
    })
}

/// `base` with each JSON pointer of `set` replaced (or added).
fn with(mut base: Value, set: &[(&str, Value)]) -> Value {
    for (pointer, value) in set {
        let (parent, key) = pointer.rsplit_once('/').expect("pointer");
        let key = key.replace("~1", "/");
        let target = base.pointer_mut(parent).unwrap_or_else(|| panic!("{parent} missing"));
        match target {
            Value::Array(items) => {
                let i: usize = key.parse().expect("index");
                if i < items.len() { items[i] = value.clone() } else { items.push(value.clone()) }
            }
            Value::Object(map) => {
                map.insert(key, value.clone());
            }
            other => panic!("{parent} is {other}"),
        }
    }
    base
}

async fn created(server: &ApiServer, uri: &str, body: &Value) -> Value {
    let (code, v) = post(server, uri, body).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    v
}

/// A 422 Invalid with these causes (field, reason), in order, and this message.
fn assert_invalid(code: StatusCode, v: &Value, want: &[(&str, &str)], message: &str) {
    assert_eq!((code, v["reason"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("Invalid")), "{v}");
    let got = causes(v);
    let got: Vec<(&str, &str)> = got.iter().map(|(f, r)| (f.as_str(), r.as_str())).collect();
    assert_eq!(got, want, "{v}");
    assert_eq!(v["message"], message);
}

async fn put(server: &ApiServer, uri: &str, body: &Value) -> (StatusCode, Value) {
    raw(server, Method::PUT, uri, JSON, body.to_string()).await
}

/// A server-side apply (forced) that creates the Service `body` names.
async fn apply_service(server: &ApiServer, body: &Value) -> (StatusCode, Value) {
    let name = body["metadata"]["name"].as_str().expect("name");
    let uri = format!("{SERVICES}/{name}?fieldManager=kproof-differential&force=true");
    raw(server, Method::PATCH, &uri, APPLY, body.to_string()).await
}

#[tokio::test]
async fn single_stack_with_two_families_is_refused_by_allocation() {
    let server = ApiServer::default();
    let body = with(
        service("s"),
        &[("/spec/ipFamilyPolicy", json!("SingleStack")), ("/spec/ipFamilies", json!(["IPv4", "IPv6"]))],
    );
    let (code, v) = apply_service(&server, &body).await;
    assert_invalid(
        code,
        &v,
        &[("spec.ipFamilyPolicy", "FieldValueInvalid")],
        r#"Service "s" is invalid: spec.ipFamilyPolicy: Invalid value: "SingleStack": must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"#,
    );
}

#[tokio::test]
async fn a_source_range_must_be_a_cidr() {
    let server = ApiServer::default();
    let body = with(
        service("s"),
        &[
            ("/spec/type", json!("LoadBalancer")),
            ("/spec/allocateLoadBalancerNodePorts", json!(true)),
            ("/spec/loadBalancerSourceRanges", json!(["1.2.3.4/33"])),
        ],
    );
    let (code, v) = post(&server, SERVICES, &body).await;
    assert_invalid(
        code,
        &v,
        &[("spec.LoadBalancerSourceRanges[0]", "FieldValueInvalid")],
        r#"Service "s" is invalid: spec.LoadBalancerSourceRanges[0]: Invalid value: "1.2.3.4/33": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"#,
    );
}

#[tokio::test]
async fn the_source_range_annotation_is_for_load_balancers() {
    let server = ApiServer::default();
    let body = with(
        service("s"),
        &[("/metadata/annotations", json!({"service.beta.kubernetes.io/load-balancer-source-ranges": "1.2.3.0/24"}))],
    );
    let (code, v) = post(&server, SERVICES, &body).await;
    assert_invalid(
        code,
        &v,
        &[("metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]", "FieldValueForbidden")],
        "Service \"s\" is invalid: metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]: Forbidden: may only be used when `type` is 'LoadBalancer'",
    );
}

#[tokio::test]
async fn a_load_balancer_class_is_for_load_balancers() {
    let server = ApiServer::default();
    created(&server, SERVICES, &service("s")).await;
    let patch = json!({"spec": {"loadBalancerClass": "test.com/test-load-balancer-class"}});
    let (code, v) = raw(&server, Method::PATCH, &format!("{SERVICES}/s"), STRATEGIC, patch.to_string()).await;
    assert_invalid(
        code,
        &v,
        &[("spec.loadBalancerClass", "FieldValueForbidden")],
        "Service \"s\" is invalid: spec.loadBalancerClass: Forbidden: may only be used when `type` is 'LoadBalancer'",
    );
}

#[tokio::test]
async fn a_load_balancer_class_is_a_qualified_name() {
    let server = ApiServer::default();
    let body = with(
        service("s"),
        &[
            ("/spec/type", json!("LoadBalancer")),
            ("/spec/allocateLoadBalancerNodePorts", json!(true)),
            ("/spec/loadBalancerClass", json!("Bad/LoadBalancerClass")),
        ],
    );
    let (code, v) = post(&server, &format!("{SERVICES}?dryRun=All"), &body).await;
    assert_invalid(
        code,
        &v,
        &[("spec.loadBalancerClass", "FieldValueInvalid")],
        r#"Service "s" is invalid: spec.loadBalancerClass: Invalid value: "Bad/LoadBalancerClass": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
    );
}

#[tokio::test]
async fn a_health_check_node_port_out_of_range_fails_allocation_with_a_500() {
    let server = ApiServer::default();
    created(&server, SERVICES, &service("s")).await;
    let body = with(
        service("s"),
        &[
            ("/spec/type", json!("LoadBalancer")),
            ("/spec/allocateLoadBalancerNodePorts", json!(true)),
            ("/spec/externalTrafficPolicy", json!("Local")),
            ("/spec/healthCheckNodePort", json!(-1)),
        ],
    );
    let (code, v) = put(&server, &format!("{SERVICES}/s"), &body).await;
    assert_eq!((code, v["reason"].as_str()), (StatusCode::INTERNAL_SERVER_ERROR, Some("InternalError")), "{v}");
    assert_eq!(causes(&v), [(String::new(), String::new())]);
    assert_eq!(
        v["message"],
        "Internal error occurred: failed to allocate requested HealthCheck NodePort -1: provided port is not in the valid range. The range of valid ports is 30000-32767"
    );
}

#[tokio::test]
async fn an_external_name_service_has_no_cluster_ip() {
    let server = ApiServer::default();
    let body = with(
        service("s"),
        &[
            ("/spec/type", json!("ExternalName")),
            ("/spec/clusterIP", json!("1.2.3.4")),
            ("/spec/externalName", json!("foo.bar.example.com")),
        ],
    );
    let (code, v) = apply_service(&server, &body).await;
    assert_invalid(
        code,
        &v,
        &[("spec.clusterIPs", "FieldValueForbidden")],
        r#"Service "s" is invalid: spec.clusterIPs: Forbidden: may not be set for ExternalName services"#,
    );
}

#[tokio::test]
async fn an_external_name_is_a_dns_subdomain() {
    let server = ApiServer::default();
    let body = with(service("s"), &[("/spec/type", json!("ExternalName")), ("/spec/externalName", json!("-123"))]);
    let (code, v) = post(&server, SERVICES, &body).await;
    assert_invalid(
        code,
        &v,
        &[("spec.externalName", "FieldValueInvalid")],
        r#"Service "s" is invalid: spec.externalName: Invalid value: "-123": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
    );
}

#[tokio::test]
async fn a_node_port_requested_twice_is_already_allocated() {
    let server = ApiServer::default();
    let body = with(
        service("s"),
        &[
            ("/spec/type", json!("NodePort")),
            ("/spec/ports/1", json!({"name": "p1", "port": 1, "protocol": "TCP", "nodePort": 30101, "targetPort": 1})),
            ("/spec/ports/2", json!({"name": "p2", "port": 2, "protocol": "TCP", "nodePort": 30101, "targetPort": 2})),
        ],
    );
    let (code, v) = post(&server, SERVICES, &body).await;
    assert_invalid(
        code,
        &v,
        &[("spec.ports[2].nodePort", "FieldValueInvalid")],
        r#"Service "s" is invalid: spec.ports[2].nodePort: Invalid value: 30101: provided port is already allocated"#,
    );
}

#[tokio::test]
async fn the_same_port_and_protocol_twice_is_a_duplicate() {
    let server = ApiServer::default();
    let body = with(
        service("s"),
        &[
            ("/spec/ports/1", json!({"name": "q", "port": 12345, "protocol": "TCP", "targetPort": 8080})),
            ("/spec/ports/2", json!({"name": "r", "port": 12345, "protocol": "TCP", "targetPort": 80})),
        ],
    );
    let (code, v) = post(&server, SERVICES, &body).await;
    assert_invalid(
        code,
        &v,
        &[("spec.ports[2]", "FieldValueDuplicate")],
        r#"Service "s" is invalid: spec.ports[2]: Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":12345,"TargetPort":0,"NodePort":0}"#,
    );
}

#[tokio::test]
async fn the_primary_ip_family_cannot_change() {
    let server = ApiServer::default();
    let svc = created(&server, SERVICES, &service("s")).await;
    let ip = svc["spec"]["clusterIP"].as_str().expect("allocated").to_string();
    let (code, v) = put(&server, &format!("{SERVICES}/s"), &with(svc, &[("/spec/ipFamilies", json!(["IPv6"]))])).await;
    assert_invalid(
        code,
        &v,
        &[("spec.clusterIPs[0]", "FieldValueInvalid")],
        &format!(
            "Service \"s\" is invalid: spec.clusterIPs[0]: Invalid value: \"{ip}\": expected an IPv6 value as indicated by `ipFamilies[0]`"
        ),
    );
}

#[tokio::test]
async fn a_headless_service_with_a_selector_gets_one_family() {
    let server = ApiServer::default();
    let body = with(service("s"), &[("/spec/clusterIP", json!("None")), ("/spec/ports", json!([]))]);
    let (code, v) = post(&server, &format!("{SERVICES}?dryRun=All"), &body).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    assert_eq!(v["spec"]["clusterIPs"], json!(["None"]));
    assert_eq!(v["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(v["spec"]["ipFamilyPolicy"], "SingleStack");
}

#[tokio::test]
async fn cluster_ip_and_the_first_cluster_ips_must_agree() {
    let server = ApiServer::default();
    let body =
        with(service("s"), &[("/spec/clusterIP", json!("10.0.0.10")), ("/spec/clusterIPs", json!(["10.0.0.1"]))]);
    let (code, v) = post(&server, &format!("{SERVICES}?dryRun=All"), &body).await;
    assert_invalid(
        code,
        &v,
        &[("spec.clusterIPs", "FieldValueInvalid")],
        r#"Service "s" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.1"]: first value must match `clusterIP`"#,
    );
}

#[tokio::test]
async fn traffic_distribution_has_three_values() {
    let server = ApiServer::default();
    let body = with(service("s"), &[("/spec/trafficDistribution", json!("Random"))]);
    let (code, v) = post(&server, &format!("{SERVICES}?dryRun=All"), &body).await;
    assert_invalid(
        code,
        &v,
        &[("spec.trafficDistribution", "FieldValueNotSupported")],
        r#"Service "s" is invalid: spec.trafficDistribution: Unsupported value: "Random": supported values: "PreferClose", "PreferSameZone", "PreferSameNode""#,
    );
}

#[tokio::test]
async fn a_load_balancer_cannot_be_headless() {
    let server = ApiServer::default();
    let body = with(
        service("s"),
        &[
            ("/spec/type", json!("LoadBalancer")),
            ("/spec/allocateLoadBalancerNodePorts", json!(true)),
            ("/spec/clusterIP", json!("None")),
        ],
    );
    let (code, v) = apply_service(&server, &body).await;
    assert_invalid(
        code,
        &v,
        &[("spec.clusterIPs[0]", "FieldValueInvalid")],
        r#"Service "s" is invalid: spec.clusterIPs[0]: Invalid value: "None": may not be set to 'None' for LoadBalancer services"#,
    );
}

#[tokio::test]
async fn a_service_name_may_start_with_a_digit() {
    let server = ApiServer::default();
    let v = created(&server, SERVICES, &service("1-test-service")).await;
    assert_eq!(v["metadata"]["name"], "1-test-service");
}

#[tokio::test]
async fn an_ipv4_slice_takes_only_ipv4_addresses() {
    let server = ApiServer::default();
    let body = with(slice("e"), &[("/endpoints/0/addresses", json!(["123.456.789.012", "2001:4860:4860::8888"]))]);
    let (code, v) = post(&server, SLICES, &body).await;
    assert_invalid(
        code,
        &v,
        &[("endpoints[0].addresses[0]", "FieldValueInvalid"), ("endpoints[0].addresses", "FieldValueInvalid")],
        r#"EndpointSlice.discovery.k8s.io "e" is invalid: [endpoints[0].addresses[0]: Invalid value: "123.456.789.012": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff), endpoints[0].addresses: Invalid value: "2001:4860:4860::8888": must be an IPv4 address]"#,
    );
}

#[tokio::test]
async fn an_endpoint_address_may_not_be_loopback() {
    let server = ApiServer::default();
    created(&server, SLICES, &slice("e")).await;
    let patch = json!({"endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}]});
    let (code, v) = raw(&server, Method::PATCH, &format!("{SLICES}/e"), MERGE, patch.to_string()).await;
    assert_invalid(
        code,
        &v,
        &[("endpoints[0].addresses[0]", "FieldValueInvalid")],
        r#"EndpointSlice.discovery.k8s.io "e" is invalid: endpoints[0].addresses[0]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)"#,
    );
}

#[tokio::test]
async fn zone_hints_are_unique() {
    let server = ApiServer::default();
    let old = created(&server, SLICES, &slice("e")).await;
    let hints = json!({"forZones": [{"name": "zone-a"}, {"name": "zone-b"}, {"name": "zone-a"}]});
    let (code, v) = put(&server, &format!("{SLICES}/e"), &with(old, &[("/endpoints/0/hints", hints)])).await;
    assert_invalid(
        code,
        &v,
        &[("endpoints[0].hints.forZones[2].name", "FieldValueDuplicate")],
        r#"EndpointSlice.discovery.k8s.io "e" is invalid: endpoints[0].hints.forZones[2].name: Duplicate value: "zone-a""#,
    );
}

#[tokio::test]
async fn a_zone_hint_is_a_label_value() {
    let server = ApiServer::default();
    created(&server, SLICES, &slice("e")).await;
    let patch = json!({"endpoints": [{"addresses": ["10.1.2.3"], "hints": {"forZones": [{"name": "inv@lid"}]}}]});
    let (code, v) = raw(&server, Method::PATCH, &format!("{SLICES}/e"), STRATEGIC, patch.to_string()).await;
    assert_invalid(
        code,
        &v,
        &[("endpoints[0].hints.forZones[0].name", "FieldValueInvalid")],
        r#"EndpointSlice.discovery.k8s.io "e" is invalid: endpoints[0].hints.forZones[0].name: Invalid value: "inv@lid": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#,
    );
}

#[tokio::test]
async fn an_endpoint_has_at_most_100_addresses() {
    let server = ApiServer::default();
    let addresses: Vec<String> = (0..101).map(|i| format!("10.1.2.{i}")).collect();
    let body = with(slice("e"), &[("/endpoints/0/addresses", json!(addresses))]);
    let (code, v) = post(&server, SLICES, &body).await;
    assert_invalid(
        code,
        &v,
        &[("endpoints[0].addresses", "FieldValueTooMany")],
        r#"EndpointSlice.discovery.k8s.io "e" is invalid: endpoints[0].addresses: Too many: 101: must have at most 100 items"#,
    );
}

#[tokio::test]
async fn a_v1_write_drops_the_deprecated_topology() {
    let server = ApiServer::default();
    let body =
        with(slice("e"), &[("/endpoints/0/deprecatedTopology", json!({"topology.kubernetes.io/zone": "zone1"}))]);
    let v = created(&server, SLICES, &body).await;
    assert_eq!(v["endpoints"][0].get("deprecatedTopology"), None, "{v}");
    assert_eq!(v["metadata"]["generation"], 1);
}

#[tokio::test]
async fn fqdn_addresses_may_end_with_a_dot() {
    let server = ApiServer::default();
    let body = with(
        slice("e"),
        &[
            ("/addressType", json!("FQDN")),
            ("/endpoints/0/addresses", json!(["foo.example.com", "example.com", "example.com."])),
        ],
    );
    created(&server, SLICES, &body).await;
}

/// The first corpus's `eps-address-type-unsupported` as a strategic merge patch: on update the
/// declarative rules report the type immutable (short-circuiting their enum check), so the
/// handwritten unsupported type, covered only by that enum check, stays and comes first.
#[tokio::test]
async fn an_unsupported_address_type_on_update_is_reported_with_the_immutable_one() {
    let server = ApiServer::default();
    created(&server, SLICES, &slice("e")).await;
    let patch = json!({"addressType": "IPv5"});
    let (code, v) = raw(&server, Method::PATCH, &format!("{SLICES}/e"), STRATEGIC, patch.to_string()).await;
    assert_invalid(
        code,
        &v,
        &[("addressType", "FieldValueNotSupported"), ("addressType", "FieldValueInvalid")],
        r#"EndpointSlice.discovery.k8s.io "e" is invalid: [addressType: Unsupported value: "IPv5": supported values: "FQDN", "IPv4", "IPv6", addressType: Invalid value: null: field is immutable]"#,
    );
}
