//! Nodes: the kubelet registers them with their status; kubectl's columns.

use crate::registry::printers::{age_col, col, name_col, since};
use crate::registry::{ResourceType, Strategy};
use jiff::Timestamp;
use serde_json::{Value, json};

/// core/v1 Node.
#[derive(Debug)]
pub(crate) struct NodeStrategy;

impl Strategy for NodeStrategy {
    fn keeps_status_on_create(&self) -> bool {
        true
    }

    fn table_columns(&self, _rt: &ResourceType) -> Vec<Value> {
        vec![
            name_col(),
            col("Status", "string", "", 0, "The status of the node"),
            col("Roles", "string", "", 0, "The roles of the node"),
            age_col(),
            col("Version", "string", "", 0, "Kubelet version."),
            col("Internal-IP", "string", "", 1, "Internal address."),
            col("External-IP", "string", "", 1, "External address."),
            col("OS-Image", "string", "", 1, "Operating system image."),
            col("Kernel-Version", "string", "", 1, "Kernel version."),
            col("Container-Runtime", "string", "", 1, "Container runtime version."),
        ]
    }

    fn table_cells(&self, _rt: &ResourceType, obj: &Value, now: Timestamp) -> Vec<Value> {
        node_cells(obj, now)
    }
}

fn node_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    let status = &o["status"];
    let ready = status["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "Ready");
    let mut state = match ready.and_then(|c| c["status"].as_str()) {
        Some("True") => "Ready".to_string(),
        Some(_) => "NotReady".to_string(),
        None => "Unknown".to_string(),
    };
    if o["spec"]["unschedulable"] == true {
        state.push_str(",SchedulingDisabled");
    }
    let mut roles: Vec<String> = Vec::new();
    if let Some(labels) = o["metadata"]["labels"].as_object() {
        for (k, v) in labels {
            if let Some(r) = k.strip_prefix("node-role.kubernetes.io/") {
                if !r.is_empty() {
                    roles.push(r.to_string());
                }
            } else if k == "kubernetes.io/role"
                && let Some(r) = v.as_str().filter(|r| !r.is_empty())
            {
                roles.push(r.to_string());
            }
        }
    }
    roles.sort();
    roles.dedup();
    let address = |t: &str| {
        status["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["type"] == t)
            .and_then(|a| a["address"].as_str())
            .unwrap_or("<none>")
            .to_string()
    };
    let info = &status["nodeInfo"];
    let unknown = |v: &Value| v.as_str().filter(|s| !s.is_empty()).unwrap_or("<unknown>").to_string();
    vec![
        json!(o["metadata"]["name"]),
        json!(state),
        json!(if roles.is_empty() { "<none>".to_string() } else { roles.join(",") }),
        json!(since(&o["metadata"]["creationTimestamp"], now)),
        json!(info["kubeletVersion"].as_str().unwrap_or_default()),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(unknown(&info["osImage"])),
        json!(unknown(&info["kernelVersion"])),
        json!(unknown(&info["containerRuntimeVersion"])),
    ]
}
