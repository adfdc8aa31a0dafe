//! Services: names are DNS-1035 labels; defaults (`SetDefaults_Service`), a cluster IP
//! allocated on create, validation (`ValidateService`, update, status); kubectl's columns.

use super::pod_spec::{labels_at, port_name_errors};
use crate::error::StatusCause;
use crate::registry::NameRule;
use crate::registry::field::{self, Bad, Path};
use crate::registry::printers::{age_col, col, format_map, int, name_col, or_none, since};
use crate::registry::{ResourceType, Strategy};
use apimachinery::validation::dns1123_label_errors;
use jiff::Timestamp;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// core/v1 Service.
#[derive(Debug)]
pub(crate) struct ServiceStrategy;

const SERVICE_TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

fn is_ip(s: &str) -> bool {
    s.parse::<std::net::IpAddr>().is_ok()
}

fn validate_service(obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::root("spec");
    let ty = spec.get("type").and_then(Value::as_str).unwrap_or("ClusterIP");
    if !SERVICE_TYPES.contains(&ty) {
        out.push(field::not_supported(&path.child("type"), ty, SERVICE_TYPES));
    }
    let ports = spec.get("ports").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    // A headless service may have no ports (ValidateService: `isHeadlessService`, exactly one
    // clusterIPs entry, `None`; defaulting has copied `clusterIP` there).
    let headless = match spec.get("clusterIPs").and_then(Value::as_array) {
        Some(ips) => ips.len() == 1 && ips[0].as_str() == Some("None"),
        None => spec.get("clusterIP").and_then(Value::as_str) == Some("None"),
    };
    if ports.is_empty() && ty != "ExternalName" && !headless {
        out.push(field::required(&path.child("ports"), ""));
    }
    let mut names = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let at = path.child("ports").index(i);
        let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
        if name.is_empty() {
            if ports.len() > 1 {
                out.push(field::required(&at.child("name"), ""));
            }
        } else {
            for msg in dns1123_label_errors(name) {
                out.push(field::invalid(&at.child("name"), name, &msg));
            }
            if !names.insert(name.to_string()) {
                out.push(field::duplicate(&at.child("name"), name));
            }
        }
        let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
        if !(1..=65535).contains(&port) {
            out.push(field::invalid(&at.child("port"), port, "must be between 1 and 65535, inclusive"));
        }
        match p.get("protocol").and_then(Value::as_str).unwrap_or_default() {
            "" => out.push(field::required(&at.child("protocol"), "")),
            "TCP" | "UDP" | "SCTP" => {}
            other => out.push(field::not_supported(&at.child("protocol"), other, &["SCTP", "TCP", "UDP"])),
        }
        match p.get("targetPort") {
            Some(Value::Number(n)) => {
                let n = n.as_i64().unwrap_or(0);
                if !(1..=65535).contains(&n) {
                    out.push(field::invalid(&at.child("targetPort"), n, "must be between 1 and 65535, inclusive"));
                }
            }
            Some(Value::String(name)) => {
                for msg in port_name_errors(name) {
                    out.push(field::invalid(&at.child("targetPort"), name.as_str(), msg));
                }
            }
            _ => {}
        }
        if ty == "ClusterIP" && p.get("nodePort").and_then(Value::as_i64).is_some_and(|n| n != 0) {
            out.push(field::forbidden(&at.child("nodePort"), "may not be used when `type` is 'ClusterIP'"));
        }
    }
    let affinity = spec.get("sessionAffinity").and_then(Value::as_str).unwrap_or("None");
    if !["ClientIP", "None"].contains(&affinity) {
        out.push(field::not_supported(&path.child("sessionAffinity"), affinity, &["ClientIP", "None"]));
    }
    labels_at(&mut out, spec.get("selector"), &path.child("selector"));
    let cluster_ip = spec.get("clusterIP").and_then(Value::as_str).unwrap_or_default();
    if !cluster_ip.is_empty() && cluster_ip != "None" && !is_ip(cluster_ip) {
        out.push(field::invalid(
            &path.child("clusterIPs").index(0),
            cluster_ip,
            "must be empty, 'None', or a valid IP address",
        ));
    }
    if ty == "ExternalName" && spec.get("externalName").and_then(Value::as_str).unwrap_or_default().is_empty() {
        out.push(field::required(&path.child("externalName"), ""));
    }
    if spec.get("externalTrafficPolicy").and_then(Value::as_str).is_some_and(|p| !p.is_empty())
        && !["NodePort", "LoadBalancer"].contains(&ty)
    {
        out.push(field::invalid(
            &path.child("externalTrafficPolicy"),
            spec["externalTrafficPolicy"].as_str().unwrap_or_default(),
            "may only be set when `type` is 'NodePort' or 'LoadBalancer'",
        ));
    }
    for (i, f) in spec.get("ipFamilies").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let f = f.as_str().unwrap_or_default();
        if !["IPv4", "IPv6"].contains(&f) {
            out.push(field::not_supported(&path.child("ipFamilies").index(i), f, &["IPv4", "IPv6"]));
        }
    }
    out
}

/// A cluster IP for a new service in 10.96.0.0/16, derived from its namespace and name (the
/// fake has no allocator to keep in step; upstream allocates at random).
fn cluster_ip(obj: &Value) -> String {
    let key = format!(
        "{}/{}",
        obj["metadata"]["namespace"].as_str().unwrap_or_default(),
        obj["metadata"]["name"].as_str().unwrap_or_default()
    );
    let h = key.bytes().fold(2166136261u32, |h, b| (h ^ u32::from(b)).wrapping_mul(16777619));
    format!("10.96.{}.{}", (h >> 8) % 256, (h % 254) + 1)
}

impl Strategy for ServiceStrategy {
    /// `svcStrategy.AllowCreateOnUpdate`: a PUT of a missing Service creates it.
    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn name_rule(&self) -> NameRule {
        NameRule::Rfc1035Label
    }

    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
        spec.entry("type").or_insert(json!("ClusterIP"));
        spec.entry("sessionAffinity").or_insert(json!("None"));
        let ty = spec.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
        if ty != "ExternalName" {
            spec.entry("internalTrafficPolicy").or_insert(json!("Cluster"));
        }
        if ty == "NodePort" || ty == "LoadBalancer" {
            spec.entry("externalTrafficPolicy").or_insert(json!("Cluster"));
        }
        for p in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
            let Some(p) = p.as_object_mut() else { continue };
            p.entry("protocol").or_insert(json!("TCP"));
            let unset = matches!(p.get("targetPort"), None | Some(Value::Null))
                || p.get("targetPort") == Some(&json!(0))
                || p.get("targetPort") == Some(&json!(""));
            if unset && let Some(port) = p.get("port").cloned() {
                p.insert("targetPort".into(), port);
            }
        }
    }

    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value, _now: &str) {
        let ty = obj["spec"]["type"].as_str().unwrap_or("ClusterIP").to_string();
        if ty == "ExternalName" || !obj["spec"].is_object() {
            return;
        }
        let ip = match obj["spec"]["clusterIP"].as_str() {
            Some(ip) if !ip.is_empty() => ip.to_string(),
            _ => cluster_ip(obj),
        };
        obj["spec"]["clusterIP"] = json!(ip);
        if !obj["spec"]["clusterIPs"].is_array() {
            obj["spec"]["clusterIPs"] = json!([ip]);
        }
        if ip != "None" {
            if !obj["spec"]["ipFamilies"].is_array() {
                obj["spec"]["ipFamilies"] = json!(["IPv4"]);
            }
            if obj["spec"]["ipFamilyPolicy"].is_null() {
                obj["spec"]["ipFamilyPolicy"] = json!("SingleStack");
            }
        }
    }

    /// An update that leaves out the allocated IPs keeps them (the REST storage does).
    fn prepare_for_update(
        &self,
        _rt: &ResourceType,
        new: &mut Value,
        old: &Value,
        _mode: crate::registry::store::UpdateMode,
    ) {
        if !new["spec"].is_object() {
            return;
        }
        for key in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            let missing = new["spec"].get(key).is_none_or(|v| v.is_null() || v == "");
            if missing && let Some(v) = old["spec"].get(key) {
                new["spec"][key] = v.clone();
            }
        }
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        validate_service(obj)
    }

    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut out = validate_service(obj);
        let (new_ip, old_ip) = (&obj["spec"]["clusterIP"], &old["spec"]["clusterIP"]);
        if old_ip.as_str().is_some_and(|s| !s.is_empty()) && new_ip != old_ip && obj["spec"]["type"] != "ExternalName" {
            out.push(field::invalid(
                &Path::root("spec").child("clusterIPs").index(0),
                Bad::Raw(format!("[]string{{{new_ip}}}")),
                "may not change once set",
            ));
        }
        out
    }

    fn validate_status_update(&self, _rt: &ResourceType, obj: &Value, _old: &Value) -> Vec<StatusCause> {
        let mut out = Vec::new();
        let ingress = obj["status"]["loadBalancer"]["ingress"].as_array().cloned().unwrap_or_default();
        // ValidateLoadBalancerStatus (AllowServiceLBStatusOnNonLB off): ingress only on a
        // LoadBalancer service, and then each entry is checked.
        if obj["spec"]["type"].as_str() != Some("LoadBalancer") && !ingress.is_empty() {
            let at = Path::root("status").child("loadBalancer").child("ingress");
            return vec![field::forbidden(&at, "may only be used when `spec.type` is 'LoadBalancer'")];
        }
        for (i, ing) in ingress.iter().enumerate() {
            let ip = ing.get("ip").and_then(Value::as_str).unwrap_or_default();
            if !ip.is_empty() && !is_ip(ip) {
                let at = Path::root("status").child("loadBalancer").child("ingress").index(i).child("ip");
                out.push(field::invalid(&at, ip, "must be a valid IP address"));
            }
        }
        out
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
        validate_service(&svc).iter().filter(|c| c.field == "spec.ports").count()
    }

    #[test]
    fn only_a_headless_or_external_name_service_may_have_no_ports() {
        assert_eq!(port_errors(json!({"clusterIP": "None"})), 0, "headless, before defaulting");
        assert_eq!(port_errors(json!({"clusterIP": "None", "clusterIPs": ["None"]})), 0, "headless");
        assert_eq!(port_errors(json!({"type": "ExternalName", "externalName": "a.b"})), 0);
        assert_eq!(port_errors(json!({})), 1, "a ClusterIP service needs ports");
        assert_eq!(port_errors(json!({"clusterIPs": ["10.0.0.1"]})), 1);
    }
}
