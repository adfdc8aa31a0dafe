//! ReplicaSets: kubectl's columns.

use crate::registry::printers::{age_col, col, int, name_col, since, workload_cols, workload_tail};
use crate::registry::{ResourceType, Strategy};
use jiff::Timestamp;
use serde_json::{Value, json};

/// apps/v1 ReplicaSet.
#[derive(Debug)]
pub(crate) struct ReplicaSetStrategy;

impl Strategy for ReplicaSetStrategy {
    fn table_columns(&self, _rt: &ResourceType) -> Vec<Value> {
        let mut c = vec![
            name_col(),
            col("Desired", "integer", "", 0, "Desired replicas."),
            col("Current", "integer", "", 0, "Current replicas."),
            col("Ready", "integer", "", 0, "Ready replicas."),
            age_col(),
        ];
        c.extend(workload_cols());
        c
    }

    fn table_cells(&self, _rt: &ResourceType, obj: &Value, now: Timestamp) -> Vec<Value> {
        let (spec, status) = (&obj["spec"], &obj["status"]);
        let mut c = vec![
            json!(obj["metadata"]["name"]),
            json!(spec["replicas"].as_i64().unwrap_or(1)),
            json!(int(&status["replicas"])),
            json!(int(&status["readyReplicas"])),
            json!(since(&obj["metadata"]["creationTimestamp"], now)),
        ];
        c.extend(workload_tail(obj));
        c
    }
}
