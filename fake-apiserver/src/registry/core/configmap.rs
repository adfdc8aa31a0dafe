//! ConfigMaps: kubectl's columns.

use crate::registry::printers::{age_col, col, name_col, since};
use crate::registry::{ResourceType, Strategy};
use jiff::Timestamp;
use serde_json::Map;
use serde_json::{Value, json};

/// core/v1 ConfigMap.
#[derive(Debug)]
pub(crate) struct ConfigMapStrategy;

impl Strategy for ConfigMapStrategy {
    fn table_columns(&self, _rt: &ResourceType) -> Vec<Value> {
        vec![name_col(), col("Data", "integer", "", 0, "Number of keys."), age_col()]
    }

    fn table_cells(&self, _rt: &ResourceType, obj: &Value, now: Timestamp) -> Vec<Value> {
        let n = obj["data"].as_object().map_or(0, Map::len) + obj["binaryData"].as_object().map_or(0, Map::len);
        vec![json!(obj["metadata"]["name"]), json!(n), json!(since(&obj["metadata"]["creationTimestamp"], now))]
    }
}
