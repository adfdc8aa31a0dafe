//! The `/scale` subresource: an `autoscaling/v1` Scale read from and written back to the
//! object at the paths its resource type names.

use super::meta::{str_field, string_list};
use super::{ResourceType, SelectorForm};
use crate::error::{ApiError, ApiResult, StatusCause};
use apimachinery::LabelSelector;
use apimachinery::unstructured::{nested_field_at, set_nested_field, set_nested_field_at};
use serde_json::{Value, json};

/// Builds the `autoscaling/v1` Scale of an object.
pub(crate) fn scale_of(rt: &ResourceType, obj: &Value) -> ApiResult<Value> {
    let spec = rt.scale.as_ref().ok_or_else(ApiError::path_not_found)?;
    let replicas = |path: &str| nested_field_at(obj, path).and_then(Value::as_i64).unwrap_or(0);
    let selector = match &spec.label_selector_path {
        Some(p) => match spec.selector_form {
            SelectorForm::Object => nested_field_at(obj, p).map(label_selector_string).unwrap_or_default(),
            SelectorForm::Map => {
                nested_field_at(obj, p).map(|m| label_selector_string(&json!({"matchLabels": m}))).unwrap_or_default()
            }
            SelectorForm::String => nested_field_at(obj, p).and_then(Value::as_str).unwrap_or_default().to_string(),
        },
        None => String::new(),
    };
    let m = &obj["metadata"];
    let mut meta = json!({"name": m["name"], "uid": m["uid"], "resourceVersion": m["resourceVersion"], "creationTimestamp": m["creationTimestamp"]});
    if rt.namespaced {
        meta["namespace"] = m["namespace"].clone();
    }
    let mut status = json!({"replicas": replicas(&spec.status_replicas_path)});
    if !selector.is_empty() {
        status["selector"] = json!(selector);
    }
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": replicas(&spec.spec_replicas_path)},
        "status": status,
    }))
}

/// Writes the replicas of a (patched or replaced) Scale back into the object.
pub(crate) fn apply_scale(rt: &ResourceType, obj: &mut Value, scale: &Value) -> ApiResult<()> {
    let spec = rt.scale.as_ref().ok_or_else(ApiError::path_not_found)?;
    let name = str_field(obj, "metadata.name").to_string();
    let invalid = |msg: String| {
        ApiError::invalid(
            "autoscaling",
            "Scale",
            &name,
            vec![StatusCause::field("FieldValueInvalid", "spec.replicas", msg)],
        )
    };
    let replicas = match scale["spec"].get("replicas") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_i64().ok_or_else(|| invalid(format!("Invalid value: {v}: must be an integer")))?,
    };
    if replicas < 0 {
        return Err(invalid(format!("Invalid value: {replicas}: must be greater than or equal to 0")));
    }
    if let Some(rv) = scale["metadata"]["resourceVersion"].as_str().filter(|s| !s.is_empty()) {
        set_nested_field(obj, &["metadata", "resourceVersion"], json!(rv));
    }
    if !set_nested_field_at(obj, &spec.spec_replicas_path, json!(replicas)) {
        return Err(invalid(format!("Invalid value: {replicas}: cannot set {}", spec.spec_replicas_path)));
    }
    Ok(())
}

/// `metav1.LabelSelector` as the string form Scale's `status.selector` uses.
fn label_selector_string(sel: &Value) -> String {
    let match_labels: std::collections::BTreeMap<String, String> = sel["matchLabels"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect())
        .unwrap_or_default();
    let exprs: Vec<(String, String, Vec<String>)> = sel["matchExpressions"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        str_field(e, "key").to_string(),
                        str_field(e, "operator").to_string(),
                        string_list(e.get("values")),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    LabelSelector::from_parts(&match_labels, &exprs).map(|s| s.to_string()).unwrap_or_default()
}
