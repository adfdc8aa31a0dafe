//! Services: names are DNS-1035 labels; kubectl's columns.

use crate::registry::NameRule;
use crate::registry::printers::{age_col, col, format_map, int, name_col, or_none, since};
use crate::registry::{ResourceType, Strategy};
use jiff::Timestamp;
use serde_json::{Value, json};

/// core/v1 Service.
#[derive(Debug)]
pub(crate) struct ServiceStrategy;

impl Strategy for ServiceStrategy {
    fn name_rule(&self) -> NameRule {
        NameRule::Rfc1035Label
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
