//! ConfigMaps: keys, the 1 MiB size limit, `immutable` (`ValidateConfigMap`, its update), and
//! kubectl's columns.

use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use crate::registry::printers::{age_col, col, name_col, since};
use crate::registry::{ResourceType, Strategy};
use jiff::Timestamp;
use serde_json::Map;
use serde_json::{Value, json};

/// core/v1 ConfigMap.
#[derive(Debug)]
pub(crate) struct ConfigMapStrategy;

/// `MaxSecretSize`: the most bytes of data a ConfigMap or Secret holds.
pub(crate) const MAX_DATA_SIZE: usize = 1024 * 1024;

/// `IsConfigMapKey`: the messages of a bad key.
pub(crate) fn config_key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) {
        errs.push("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')".to_string());
    }
    if key == "." {
        errs.push("must not be '.'".to_string());
    } else if key == ".." {
        errs.push("must not be '..'".to_string());
    } else if key.starts_with("..") {
        errs.push("must not start with '..'".to_string());
    }
    errs
}

fn validate_configmap(obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let mut total = 0usize;
    let data = obj.get("data").and_then(Value::as_object);
    for (k, v) in data.into_iter().flatten() {
        for msg in config_key_errors(k) {
            out.push(field::invalid(&Path::root("data").key(k), k.as_str(), &msg));
        }
        if obj.get("binaryData").and_then(Value::as_object).is_some_and(|b| b.contains_key(k)) {
            out.push(field::invalid(&Path::root("data").key(k), k.as_str(), "duplicate of key present in binaryData"));
        }
        total += v.as_str().map_or(0, str::len);
    }
    for (k, v) in obj.get("binaryData").and_then(Value::as_object).into_iter().flatten() {
        for msg in config_key_errors(k) {
            out.push(field::invalid(&Path::root("binaryData").key(k), k.as_str(), &msg));
        }
        // Base64 text: the decoded size counts.
        total += v.as_str().map_or(0, |t| t.len() * 3 / 4);
    }
    if total > MAX_DATA_SIZE {
        out.push(field::too_long(&Path::root("[]"), MAX_DATA_SIZE));
    }
    out
}

impl Strategy for ConfigMapStrategy {
    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        validate_configmap(obj)
    }

    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut out = Vec::new();
        if old.get("immutable") == Some(&serde_json::json!(true)) {
            if obj.get("immutable") != Some(&serde_json::json!(true)) {
                out.push(field::forbidden(&Path::root("immutable"), "field is immutable when `immutable` is set"));
            }
            if obj.get("data") != old.get("data") {
                out.push(field::forbidden(&Path::root("data"), "field is immutable when `immutable` is set"));
            }
            if obj.get("binaryData") != old.get("binaryData") {
                out.push(field::forbidden(&Path::root("binaryData"), "field is immutable when `immutable` is set"));
            }
        }
        out.extend(validate_configmap(obj));
        out
    }

    fn table_columns(&self, _rt: &ResourceType) -> Vec<Value> {
        vec![name_col(), col("Data", "integer", "", 0, "Number of keys."), age_col()]
    }

    fn table_cells(&self, _rt: &ResourceType, obj: &Value, now: Timestamp) -> Vec<Value> {
        let n = obj["data"].as_object().map_or(0, Map::len) + obj["binaryData"].as_object().map_or(0, Map::len);
        vec![json!(obj["metadata"]["name"]), json!(n), json!(since(&obj["metadata"]["creationTimestamp"], now))]
    }
}
