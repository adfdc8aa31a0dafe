//! `validateService`, `ValidateServiceCreate` and `ValidateServiceUpdate` (kubernetes v1.37.2
//! pkg/apis/core/validation/validation.go), in upstream's order of checks; the families of
//! rules live beside this file (`service_ports`, `service_ips`, `service_load_balancer`,
//! `service_traffic`). ObjectMeta is the generic store's.

use super::pod_spec::labels_at;
use super::service_ips::{
    cluster_ips_related_causes, external_ip_causes, is_headless, spec_list, upgrade_downgrade_cluster_ip_causes,
    upgrade_downgrade_ip_family_causes,
};
use super::service_load_balancer::{
    allocate_node_ports_causes, load_balancer_class_causes, load_balancer_class_update_causes, source_range_causes,
};
use super::service_ports::{cluster_ip_node_port_causes, duplicate_port_causes, service_port_causes};
use super::service_traffic::{
    external_traffic_policy_causes, external_traffic_update_causes, internal_traffic_policy_causes,
    traffic_distribution_causes,
};
use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use apimachinery::validation::dns1123_subdomain_errors;
use serde_json::Value;

const TOPOLOGY_HINTS: &str = "service.kubernetes.io/topology-aware-hints";
const TOPOLOGY_MODE: &str = "service.kubernetes.io/topology-mode";
const SERVICE_TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
const AFFINITIES: &[&str] = &["ClientIP", "None"];
const MAX_AFFINITY_SECONDS: i64 = 86400;

/// `ValidateServiceUpdate` without ObjectMeta: the cluster IPs and families an update may not
/// change, the load balancer class, the health check node port, then `validateService`.
pub(crate) fn validate_service_update(obj: &Value, old: &Value) -> Vec<StatusCause> {
    let (spec, old_spec) = (&obj["spec"], &old["spec"]);
    let mut out = upgrade_downgrade_cluster_ip_causes(old_spec, spec);
    out.extend(upgrade_downgrade_ip_family_causes(old_spec, spec));
    out.extend(load_balancer_class_update_causes(old_spec, spec));
    out.extend(external_traffic_update_causes(old_spec, spec));
    out.extend(validate_service(obj, Some(old)));
    out
}

/// `validateService`: `old` is the stored object on update.
pub(crate) fn validate_service(obj: &Value, old: Option<&Value>) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    let old_spec = old.map(|o| &o["spec"]);
    let annotations = &obj["metadata"]["annotations"];
    if let (Some(mode), Some(hints)) = (
        annotations.get(TOPOLOGY_MODE).and_then(Value::as_str),
        annotations.get(TOPOLOGY_HINTS).and_then(Value::as_str),
    ) && mode != hints
    {
        out.push(field::invalid(
            &Path::root("metadata").child("annotations").key(TOPOLOGY_MODE),
            mode,
            &format!("must match annotations[{TOPOLOGY_HINTS}] when both are specified"),
        ));
    }
    let at = Path::root("spec");
    let ty = spec["type"].as_str().unwrap_or_default();
    let has_ports = spec["ports"].as_array().is_some_and(|p| !p.is_empty());
    if !has_ports && !is_headless(spec) && ty != "ExternalName" {
        out.push(field::required(&at.child("ports"), ""));
    }
    out.extend(type_specific_causes(spec));
    out.extend(service_port_causes(spec));
    if spec.get("selector").is_some_and(|s| !s.is_null()) {
        labels_at(&mut out, spec.get("selector"), &at.child("selector"));
    }
    out.extend(session_affinity_causes(spec));
    out.extend(cluster_ips_related_causes(spec, old_spec));
    out.extend(external_ip_causes(spec, old_spec));
    if ty.is_empty() {
        out.push(field::required(&at.child("type"), ""));
    } else if !SERVICE_TYPES.contains(&ty) {
        out.push(field::not_supported(&at.child("type"), ty, SERVICE_TYPES));
    }
    out.extend(cluster_ip_node_port_causes(spec));
    out.extend(duplicate_port_causes(spec));
    out.extend(source_range_causes(obj, old));
    out.extend(allocate_node_ports_causes(spec));
    out.extend(load_balancer_class_causes(spec));
    out.extend(external_traffic_policy_causes(spec));
    out.extend(internal_traffic_policy_causes(spec));
    out.extend(traffic_distribution_causes(spec));
    out
}

/// What `validateService` checks per type: no headless LoadBalancer or NodePort; an
/// ExternalName has no cluster IPs, families or policy, and a DNS name (a trailing dot
/// allowed).
fn type_specific_causes(spec: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let at = Path::root("spec");
    let first_ip = || spec_list(spec, "clusterIPs").into_iter().next().unwrap_or_default();
    match spec["type"].as_str().unwrap_or_default() {
        "LoadBalancer" if is_headless(spec) => out.push(field::invalid(
            &at.child("clusterIPs").index(0),
            first_ip(),
            "may not be set to 'None' for LoadBalancer services",
        )),
        "NodePort" if is_headless(spec) => out.push(field::invalid(
            &at.child("clusterIPs").index(0),
            first_ip(),
            "may not be set to 'None' for NodePort services",
        )),
        "ExternalName" => {
            let forbidden = "may not be set for ExternalName services";
            if !spec_list(spec, "clusterIPs").is_empty() {
                out.push(field::forbidden(&at.child("clusterIPs"), forbidden));
            }
            if !spec_list(spec, "ipFamilies").is_empty() {
                out.push(field::forbidden(&at.child("ipFamilies"), forbidden));
            }
            if spec.get("ipFamilyPolicy").is_some_and(|p| !p.is_null()) {
                out.push(field::forbidden(&at.child("ipFamilyPolicy"), forbidden));
            }
            let name = spec["externalName"].as_str().unwrap_or_default();
            let cname = name.strip_suffix('.').unwrap_or(name);
            if cname.is_empty() {
                out.push(field::required(&at.child("externalName"), ""));
            } else {
                for msg in dns1123_subdomain_errors(cname) {
                    out.push(field::invalid(&at.child("externalName"), cname, &msg));
                }
            }
        }
        _ => {}
    }
    out
}

/// The session affinity: required and known; ClientIP needs its config (defaulting gives it
/// one) with a timeout in (0, 86400]; None takes no config.
fn session_affinity_causes(spec: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let at = Path::root("spec");
    let affinity = spec["sessionAffinity"].as_str().unwrap_or_default();
    if affinity.is_empty() {
        out.push(field::required(&at.child("sessionAffinity"), ""));
    } else if !AFFINITIES.contains(&affinity) {
        out.push(field::not_supported(&at.child("sessionAffinity"), affinity, AFFINITIES));
    }
    let config = spec.get("sessionAffinityConfig").filter(|c| !c.is_null());
    let config_path = at.child("sessionAffinityConfig");
    if affinity == "ClientIP" {
        let why = "when session affinity type is ClientIP";
        let client_ip = config.and_then(|c| c.get("clientIP")).filter(|c| !c.is_null());
        let timeout = client_ip.and_then(|c| c.get("timeoutSeconds")).filter(|t| !t.is_null());
        match (config, client_ip, timeout) {
            (None, _, _) => out.push(field::required(&config_path, why)),
            (Some(_), None, _) => out.push(field::required(&config_path.child("clientIP"), why)),
            (Some(_), Some(_), None) => {
                out.push(field::required(&config_path.child("clientIP").child("timeoutSeconds"), why));
            }
            (Some(_), Some(_), Some(t)) => {
                let t = t.as_i64().unwrap_or(0);
                if t <= 0 || t > MAX_AFFINITY_SECONDS {
                    out.push(field::invalid(
                        &config_path.child("clientIP").child("timeoutSeconds"),
                        t,
                        &format!("must be greater than 0 and less than {MAX_AFFINITY_SECONDS}"),
                    ));
                }
            }
        }
    } else if affinity == "None" && config.is_some() {
        out.push(field::forbidden(&config_path, "must not be set when session affinity is None"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::validate_service;
    use rstest::rstest;
    use serde_json::{Value, json};

    /// A defaulted, allocated ClusterIP service (as validation sees it), with `spec` merged in.
    fn svc(spec: Value) -> Value {
        let mut base = json!({
            "type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
            "selector": {"app": "web"}, "clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"],
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]
        });
        for (k, v) in spec.as_object().expect("object") {
            base[k] = v.clone();
        }
        json!({"metadata": {"name": "s"}, "spec": base})
    }

    // Cases of kubernetes v1.37.2 pkg/apis/core/validation/validation_test.go
    // TestValidateServiceCreate, with the causes validateService gives them.
    #[rstest]
    #[case::valid(json!({}), &[])]
    #[case::port_zero(
        json!({"ports": [{"name": "a", "port": 0, "protocol": "TCP", "targetPort": 1}]}),
        &[("spec.ports[0].port", "FieldValueInvalid")]
    )]
    #[case::duplicate_port_names(
        json!({"ports": [{"name": "a", "port": 1, "protocol": "TCP", "targetPort": 1}, {"name": "a", "port": 2, "protocol": "TCP", "targetPort": 2}]}),
        &[("spec.ports[1].name", "FieldValueDuplicate")]
    )]
    #[case::loopback_external_ip(
        json!({"externalIPs": ["127.0.0.1"], "externalTrafficPolicy": "Cluster"}),
        &[("spec.externalIPs[0]", "FieldValueInvalid")]
    )]
    #[case::affinity_timeout(
        json!({"sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 0}}}),
        &[("spec.sessionAffinityConfig.clientIP.timeoutSeconds", "FieldValueInvalid")]
    )]
    #[case::two_ipv4_cluster_ips(
        json!({"clusterIPs": ["10.0.0.1", "10.0.0.2"], "ipFamilyPolicy": "RequireDualStack"}),
        &[("spec.clusterIPs", "FieldValueInvalid")]
    )]
    #[case::none_not_alone(
        json!({"clusterIP": "None", "clusterIPs": ["None", "10.0.0.1"]}),
        &[("spec.clusterIPs", "FieldValueInvalid")]
    )]
    #[case::external_name_with_families(
        json!({"type": "ExternalName", "externalName": "a.b", "clusterIP": "", "clusterIPs": [], "ipFamilyPolicy": null}),
        &[("spec.ipFamilies", "FieldValueForbidden")]
    )]
    #[case::padded_source_range(
        json!({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": true, "externalTrafficPolicy": "Cluster",
               "loadBalancerSourceRanges": [" 1.2.3.0/24 "]}),
        &[]
    )]
    #[case::internal_traffic_policy(
        json!({"internalTrafficPolicy": "Foo"}),
        &[("spec.internalTrafficPolicy", "FieldValueNotSupported")]
    )]
    #[case::node_port_on_cluster_ip(
        json!({"ports": [{"name": "a", "port": 1, "protocol": "TCP", "targetPort": 1, "nodePort": 30001}]}),
        &[("spec.ports[0].nodePort", "FieldValueForbidden")]
    )]
    fn upstream_create_cases(#[case] spec: Value, #[case] want: &[(&str, &str)]) {
        let got = validate_service(&svc(spec), None);
        let got: Vec<(&str, &str)> = got.iter().map(|c| (c.field.as_str(), c.reason.as_str())).collect();
        assert_eq!(got, want);
    }
}
