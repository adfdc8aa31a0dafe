//! Deployments: kubectl's columns.

use crate::registry::printers::{age_col, col, int, name_col, since, workload_cols, workload_tail};
use crate::registry::{ResourceType, Strategy};
use jiff::Timestamp;
use serde_json::{Value, json};

/// apps/v1 Deployment.
#[derive(Debug)]
pub(crate) struct DeploymentStrategy;

impl Strategy for DeploymentStrategy {
    fn table_columns(&self, _rt: &ResourceType) -> Vec<Value> {
        let mut c = vec![
            name_col(),
            col("Ready", "string", "", 0, "Ready replicas out of desired replicas."),
            col("Up-to-date", "integer", "", 0, "Replicas running the current pod template."),
            col("Available", "integer", "", 0, "Replicas available to serve."),
            age_col(),
        ];
        c.extend(workload_cols());
        c
    }

    fn table_cells(&self, _rt: &ResourceType, obj: &Value, now: Timestamp) -> Vec<Value> {
        let (spec, status) = (&obj["spec"], &obj["status"]);
        let desired = spec["replicas"].as_i64().unwrap_or(1);
        let mut c = vec![
            json!(obj["metadata"]["name"]),
            json!(format!("{}/{desired}", int(&status["readyReplicas"]))),
            json!(int(&status["updatedReplicas"])),
            json!(int(&status["availableReplicas"])),
            json!(since(&obj["metadata"]["creationTimestamp"], now)),
        ];
        c.extend(workload_tail(obj));
        c
    }
}
