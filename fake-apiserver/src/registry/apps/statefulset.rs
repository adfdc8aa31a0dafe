//! StatefulSets: kubectl's columns.

use crate::registry::printers::{age_col, col, int, name_col, since, workload_cols, workload_tail};
use crate::registry::{ResourceType, Strategy};
use jiff::Timestamp;
use serde_json::{Value, json};

/// apps/v1 StatefulSet.
#[derive(Debug)]
pub(crate) struct StatefulSetStrategy;

impl Strategy for StatefulSetStrategy {
    fn table_columns(&self, _rt: &ResourceType) -> Vec<Value> {
        let mut c =
            vec![name_col(), col("Ready", "string", "", 0, "Ready replicas out of desired replicas."), age_col()];
        c.extend(workload_cols().into_iter().take(2));
        c
    }

    fn table_cells(&self, _rt: &ResourceType, obj: &Value, now: Timestamp) -> Vec<Value> {
        let desired = obj["spec"]["replicas"].as_i64().unwrap_or(1);
        let [names, images, _] = workload_tail(obj);
        let ready = json!(format!("{}/{desired}", int(&obj["status"]["readyReplicas"])));
        vec![
            json!(obj["metadata"]["name"]),
            ready,
            json!(since(&obj["metadata"]["creationTimestamp"], now)),
            names,
            images,
        ]
    }
}
