//! Secrets: kubectl's columns.

use crate::registry::printers::{age_col, col, name_col, since};
use crate::registry::{ResourceType, Strategy};
use jiff::Timestamp;
use serde_json::Map;
use serde_json::{Value, json};

/// core/v1 Secret.
#[derive(Debug)]
pub(crate) struct SecretStrategy;

impl Strategy for SecretStrategy {
    fn table_columns(&self, _rt: &ResourceType) -> Vec<Value> {
        vec![
            name_col(),
            col("Type", "string", "", 0, "The secret's type."),
            col("Data", "string", "", 0, "Number of keys."),
            age_col(),
        ]
    }

    fn table_cells(&self, _rt: &ResourceType, obj: &Value, now: Timestamp) -> Vec<Value> {
        let n = obj["data"].as_object().map_or(0, Map::len);
        let age = json!(since(&obj["metadata"]["creationTimestamp"], now));
        vec![json!(obj["metadata"]["name"]), json!(obj["type"].as_str().unwrap_or_default()), json!(n.to_string()), age]
    }
}
