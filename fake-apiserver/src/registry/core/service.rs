//! Services: names are DNS-1123 labels (RelaxedServiceNameValidation is GA in 1.37); defaults
//! (`SetDefaults_Service`), allocation before validation (`service_alloc`), the type change
//! clean-up of `PrepareForUpdate`, validation (`service_validation`, status here); kubectl's
//! columns.

use super::service_alloc;
use super::service_status::load_balancer_status_causes;
use super::service_traffic::externally_accessible;
use super::service_validation::{validate_service, validate_service_update};
use crate::error::{ApiResult, StatusCause};
use crate::registry::NameRule;
use crate::registry::printers::{age_col, col, format_map, int, name_col, or_none, since};
use crate::registry::store::UpdateMode;
use crate::registry::{ResourceType, Strategy};
use jiff::Timestamp;
use serde_json::{Value, json};

/// core/v1 Service.
#[derive(Debug)]
pub(crate) struct ServiceStrategy;

/// `SetDefaults_Service` (kubernetes v1.37.2 pkg/apis/core/v1/defaults.go).
fn set_defaults(spec: &mut serde_json::Map<String, Value>) {
    // A null string field decodes as "", which defaulting fills.
    for (key, default) in [("sessionAffinity", "None"), ("type", "ClusterIP")] {
        if spec.get(key).is_none_or(|v| v.is_null() || *v == "") {
            spec.insert(key.into(), json!(default));
        }
    }
    let affinity = spec["sessionAffinity"].as_str().unwrap_or_default().to_string();
    if affinity == "None" {
        spec.remove("sessionAffinityConfig");
    }
    if affinity == "ClientIP" {
        let timeout = spec.get("sessionAffinityConfig").map(|c| &c["clientIP"]["timeoutSeconds"]);
        if timeout.is_none_or(Value::is_null) {
            spec.insert("sessionAffinityConfig".into(), json!({"clientIP": {"timeoutSeconds": 10800}}));
        }
    }
    for p in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
        let Some(p) = p.as_object_mut() else { continue };
        if p.get("protocol").is_none_or(|v| v.is_null() || *v == "") {
            p.insert("protocol".into(), json!("TCP"));
        }
        let unset = matches!(p.get("targetPort"), None | Some(Value::Null))
            || p.get("targetPort") == Some(&json!(0))
            || p.get("targetPort") == Some(&json!(""));
        if unset {
            p.insert("targetPort".into(), p.get("port").cloned().unwrap_or(json!(0)));
        }
    }
    let ty = spec.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
    let policy_unset = spec.get("externalTrafficPolicy").and_then(Value::as_str).unwrap_or_default().is_empty();
    if externally_accessible(&Value::Object(spec.clone())) && policy_unset {
        spec.insert("externalTrafficPolicy".into(), json!("Cluster"));
    }
    if ["NodePort", "LoadBalancer", "ClusterIP"].contains(&ty.as_str()) {
        spec.entry("internalTrafficPolicy").or_insert(json!("Cluster"));
    }
    if ty == "LoadBalancer" && spec.get("allocateLoadBalancerNodePorts").is_none_or(Value::is_null) {
        spec.insert("allocateLoadBalancerNodePorts".into(), json!(true));
    }
}

/// strategy.go `dropTypeDependentFields`: a type change clears what the old type had
/// allocated or set and the new one does not use, when the client left it as it was.
fn drop_type_dependent_fields(new: &mut Value, old: &Value) {
    let (o, n) = (&old["spec"], &new["spec"]);
    // Go's zero values: absent, null, "", 0 and an empty list are all unset.
    let unset = |v: &Value| v.is_null() || *v == json!("") || *v == json!(0) || *v == json!([]);
    let same = |key: &str| o[key] == n[key] || (unset(&o[key]) && unset(&n[key]));
    let needs_cluster_ip = |s: &Value| s["type"] != "ExternalName";
    let needs_node_port = |s: &Value| s["type"] == "NodePort" || s["type"] == "LoadBalancer";
    let needs_hc = |s: &Value| s["type"] == "LoadBalancer" && s["externalTrafficPolicy"] == "Local";
    let node_ports = |s: &Value| -> Vec<i64> {
        s["ports"].as_array().into_iter().flatten().filter_map(|p| p["nodePort"].as_i64()).filter(|n| *n != 0).collect()
    };
    let mut remove = Vec::new();
    if needs_cluster_ip(o) && !needs_cluster_ip(n) {
        if same("clusterIP") && same("clusterIPs") {
            remove.extend(["clusterIP", "clusterIPs"]);
        }
        if same("ipFamilies") {
            remove.push("ipFamilies");
        }
        if same("ipFamilyPolicy") {
            remove.push("ipFamilyPolicy");
        }
    }
    let drop_node_ports =
        needs_node_port(o) && !needs_node_port(n) && node_ports(n).iter().all(|p| node_ports(o).contains(p));
    if needs_hc(o) && !needs_hc(n) && same("healthCheckNodePort") {
        remove.push("healthCheckNodePort");
    }
    if o["type"] == "LoadBalancer"
        && n["type"] != "LoadBalancer"
        && o["allocateLoadBalancerNodePorts"].is_boolean()
        && same("allocateLoadBalancerNodePorts")
    {
        remove.push("allocateLoadBalancerNodePorts");
    }
    if o["type"] == "LoadBalancer" && n["type"] != "LoadBalancer" && same("loadBalancerClass") {
        remove.push("loadBalancerClass");
    }
    if externally_accessible(o) && !externally_accessible(n) && same("externalTrafficPolicy") {
        remove.push("externalTrafficPolicy");
    }
    let not_load_balancer = n["type"] != "LoadBalancer";
    if let Some(spec) = new["spec"].as_object_mut() {
        for key in remove {
            spec.remove(key);
        }
        if drop_node_ports {
            for p in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(p) = p.as_object_mut() {
                    p.remove("nodePort");
                }
            }
        }
    }
    if not_load_balancer && new.get("status").is_some() {
        new["status"]["loadBalancer"] = json!({});
    }
}

impl Strategy for ServiceStrategy {
    /// `svcStrategy.AllowCreateOnUpdate`: a PUT of a missing Service creates it.
    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn name_rule(&self) -> NameRule {
        NameRule::Label
    }

    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            set_defaults(spec);
        }
        // A LoadBalancer's ingress with an IP and no ipMode is a VIP.
        if obj["spec"]["type"] == "LoadBalancer" {
            let ingress = obj.pointer_mut("/status/loadBalancer/ingress").and_then(Value::as_array_mut);
            for ing in ingress.into_iter().flatten() {
                let has_ip = ing["ip"].as_str().is_some_and(|ip| !ip.is_empty());
                if has_ip && ing.get("ipMode").is_none_or(Value::is_null) {
                    ing["ipMode"] = json!("VIP");
                }
            }
        }
    }

    fn begin_create(&self, _rt: &ResourceType, obj: &mut Value) -> ApiResult<()> {
        service_alloc::begin_create(obj)
    }

    fn begin_update(&self, _rt: &ResourceType, new: &mut Value, old: &Value) -> ApiResult<()> {
        service_alloc::begin_update(new, old)
    }

    fn prepare_for_update(&self, _rt: &ResourceType, new: &mut Value, old: &Value, mode: UpdateMode) {
        if mode == UpdateMode::Main && new["spec"].is_object() {
            drop_type_dependent_fields(new, old);
        }
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        validate_service(obj, None)
    }

    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        validate_service_update(obj, old)
    }

    fn validate_status_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        load_balancer_status_causes(obj, old)
    }

    fn table_columns(&self, _rt: &ResourceType) -> Vec<Value> {
        vec![
            name_col(),
            col("Type", "string", "", 0, "How the service is exposed."),
            col("Cluster-IP", "string", "", 0, "The service's cluster IP."),
            col("External-IP", "string", "", 0, "External addresses of the service."),
            col("Port(s)", "string", "", 0, "The service's ports."),
            age_col(),
            col("Selector", "string", "", 1, "Label selector of the backing pods."),
        ]
    }

    fn table_cells(&self, _rt: &ResourceType, obj: &Value, now: Timestamp) -> Vec<Value> {
        service_cells(obj, now)
    }
}

fn service_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let typ = spec["type"].as_str().unwrap_or("ClusterIP");
    let external_ips: Vec<String> =
        spec["externalIPs"].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_string)).collect();
    let external = match typ {
        "ClusterIP" | "NodePort" => {
            if external_ips.is_empty() {
                "<none>".to_string()
            } else {
                external_ips.join(",")
            }
        }
        "LoadBalancer" => {
            let mut ips: Vec<String> = o["status"]["loadBalancer"]["ingress"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|i| i["ip"].as_str().or_else(|| i["hostname"].as_str()).map(str::to_string))
                .collect();
            ips.extend(external_ips);
            if ips.is_empty() { "<pending>".into() } else { ips.join(",") }
        }
        "ExternalName" => spec["externalName"].as_str().unwrap_or_default().to_string(),
        _ => "<unknown>".into(),
    };
    let ports: Vec<String> = spec["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let proto = p["protocol"].as_str().unwrap_or("TCP");
            match p["nodePort"].as_i64().filter(|n| *n != 0) {
                Some(np) => format!("{}:{np}/{proto}", int(&p["port"])),
                None => format!("{}/{proto}", int(&p["port"])),
            }
        })
        .collect();
    vec![
        json!(o["metadata"]["name"]),
        json!(typ),
        json!(or_none(spec["clusterIP"].as_str())),
        json!(external),
        json!(if ports.is_empty() { "<none>".to_string() } else { ports.join(",") }),
        json!(since(&o["metadata"]["creationTimestamp"], now)),
        json!(format_map(&spec["selector"])),
    ]
}

#[cfg(test)]
mod tests {
    use super::validate_service;
    use serde_json::json;

    fn port_errors(spec: serde_json::Value) -> usize {
        let svc = json!({"metadata": {"name": "s"}, "spec": spec});
        validate_service(&svc, None).iter().filter(|c| c.field == "spec.ports").count()
    }

    #[test]
    fn only_a_headless_or_external_name_service_may_have_no_ports() {
        assert_eq!(port_errors(json!({"clusterIP": "None", "clusterIPs": ["None"]})), 0, "headless");
        assert_eq!(port_errors(json!({"type": "ExternalName", "externalName": "a.b"})), 0);
        assert_eq!(port_errors(json!({})), 1, "a ClusterIP service needs ports");
        assert_eq!(port_errors(json!({"clusterIPs": ["10.0.0.1"]})), 1);
    }
}
