//! Secrets: `stringData` folded into `data` and type `Opaque` by default (the v1 conversion
//! and defaults), keys, size and per-type keys (`ValidateSecret`, its update), kubectl's
//! columns.

use super::configmap::{MAX_DATA_SIZE, config_key_errors};
use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use crate::registry::printers::{age_col, col, name_col, since};
use crate::registry::{ResourceType, Strategy};
use base64::Engine;
use jiff::Timestamp;
use serde_json::Map;
use serde_json::{Value, json};

/// core/v1 Secret.
#[derive(Debug)]
pub(crate) struct SecretStrategy;

fn validate_secret(obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let data = obj.get("data").and_then(Value::as_object);
    let dpath = Path::root("data");
    let mut total = 0;
    for (k, v) in data.into_iter().flatten() {
        for msg in config_key_errors(k) {
            out.push(field::invalid(&dpath.key(k), k.as_str(), &msg));
        }
        total += v.as_str().map_or(0, |t| t.len() * 3 / 4);
    }
    let has = |k: &str| data.is_some_and(|d| d.contains_key(k));
    let ty = obj.get("type").and_then(Value::as_str).unwrap_or("Opaque");
    match ty {
        "kubernetes.io/service-account-token" => {
            let annotated = obj["metadata"]["annotations"]["kubernetes.io/service-account.name"]
                .as_str()
                .is_some_and(|s| !s.is_empty());
            if !annotated {
                out.push(field::required(
                    &Path::root("metadata").child("annotations").key("kubernetes.io/service-account.name"),
                    "",
                ));
            }
        }
        "kubernetes.io/dockercfg" if !has(".dockercfg") => {
            out.push(field::required(&dpath.key(".dockercfg"), ""));
        }
        "kubernetes.io/dockerconfigjson" if !has(".dockerconfigjson") => {
            out.push(field::required(&dpath.key(".dockerconfigjson"), ""));
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            out.push(field::required(&dpath.key("username"), ""));
            out.push(field::required(&dpath.key("password"), ""));
        }
        "kubernetes.io/ssh-auth" if !has("ssh-privatekey") => {
            out.push(field::required(&dpath.key("ssh-privatekey"), ""));
        }
        "kubernetes.io/tls" => {
            for k in ["tls.key", "tls.crt"] {
                if !has(k) {
                    out.push(field::required(&dpath.key(k), ""));
                }
            }
        }
        _ => {}
    }
    if total > MAX_DATA_SIZE {
        out.push(field::too_long(&dpath, MAX_DATA_SIZE));
    }
    out
}

impl Strategy for SecretStrategy {
    /// The v1 conversion writes `stringData` over `data` (base64), and the type defaults to
    /// `Opaque`.
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        let Some(o) = obj.as_object_mut() else { return };
        if let Some(Value::Object(strings)) = o.remove("stringData") {
            let data = o.entry("data").or_insert_with(|| json!({}));
            if !data.is_object() {
                *data = json!({});
            }
            if let Some(d) = data.as_object_mut() {
                for (k, v) in strings {
                    let text = v.as_str().unwrap_or_default();
                    d.insert(k, json!(base64::engine::general_purpose::STANDARD.encode(text)));
                }
            }
        }
        if o.get("type").and_then(Value::as_str).is_none_or(str::is_empty) {
            o.insert("type".into(), json!("Opaque"));
        }
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        validate_secret(obj)
    }

    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut out = Vec::new();
        if let Some(c) = field::immutable(&Path::root("type"), &obj["type"], &old["type"]) {
            out.push(c);
        }
        if old.get("immutable") == Some(&json!(true)) {
            if obj.get("immutable") != Some(&json!(true)) {
                out.push(field::forbidden(&Path::root("immutable"), "field is immutable when `immutable` is set"));
            }
            if obj.get("data") != old.get("data") {
                out.push(field::forbidden(&Path::root("data"), "field is immutable when `immutable` is set"));
            }
        }
        out.extend(validate_secret(obj));
        out
    }

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
