//! Deployments: defaults (`SetDefaults_Deployment`), validation (`ValidateDeployment`,
//! its update and status rules) and kubectl's columns.

use super::int_or_percent::{int_or_percent_value, not_more_than_100_percent, validate_positive_int_or_percent};
use super::workload::{
    REPLICA_SET_RULES, materialize_spec_and_template, nonnegative, selector_and_template, selector_immutable,
};
use super::workload_status::deployment_status_update;
use crate::error::StatusCause;
use crate::registry::core::pod_spec::default_template;
use crate::registry::field::{self, Bad, Path};
use crate::registry::printers::{age_col, col, int, name_col, since, workload_cols, workload_tail};
use crate::registry::{ResourceType, Strategy};
use jiff::Timestamp;
use serde_json::{Value, json};

/// apps/v1 Deployment.
#[derive(Debug)]
pub(crate) struct DeploymentStrategy;

impl Strategy for DeploymentStrategy {
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        materialize_spec_and_template(obj);
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
        spec.entry("replicas").or_insert(json!(1));
        spec.entry("revisionHistoryLimit").or_insert(json!(10));
        spec.entry("progressDeadlineSeconds").or_insert(json!(600));
        let strategy = spec.entry("strategy").or_insert(json!({}));
        if let Some(st) = strategy.as_object_mut() {
            if st.get("type").and_then(Value::as_str).is_none_or(str::is_empty) {
                st.insert("type".into(), json!("RollingUpdate"));
            }
            if st.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                let ru = st.entry("rollingUpdate").or_insert(json!({}));
                if let Some(ru) = ru.as_object_mut() {
                    ru.entry("maxUnavailable").or_insert(json!("25%"));
                    ru.entry("maxSurge").or_insert(json!("25%"));
                }
            }
        }
        default_template(obj);
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        validate_spec(obj)
    }

    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut out = validate_spec(obj);
        selector_immutable(&mut out, obj, old);
        out
    }

    /// `ValidateDeploymentStatusUpdate`.
    fn validate_status_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        deployment_status_update(obj, old)
    }

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

/// The internal `RollingUpdateDeployment` as `json.Marshal` prints it (absent values are
/// the integer 0 of a zero `IntOrString`).
fn go_rolling_update(ru: &Value) -> Value {
    if ru.is_null() {
        return Value::Null;
    }
    json!({"MaxUnavailable": ru.get("maxUnavailable").cloned().unwrap_or(json!(0)),
           "MaxSurge": ru.get("maxSurge").cloned().unwrap_or(json!(0))})
}

/// `ValidateRollingUpdateDeployment`.
fn validate_rolling_update(out: &mut Vec<StatusCause>, ru: &Value, path: &Path) {
    let zero = json!(0);
    let max_unavailable = ru.get("maxUnavailable").filter(|v| !v.is_null()).unwrap_or(&zero);
    let max_surge = ru.get("maxSurge").filter(|v| !v.is_null()).unwrap_or(&zero);
    validate_positive_int_or_percent(out, max_unavailable, &path.child("maxUnavailable"));
    validate_positive_int_or_percent(out, max_surge, &path.child("maxSurge"));
    if int_or_percent_value(max_unavailable) == 0 && int_or_percent_value(max_surge) == 0 {
        out.push(field::invalid(
            &path.child("maxUnavailable"),
            Bad::of(max_unavailable),
            "may not be 0 when `maxSurge` is 0",
        ));
    }
    not_more_than_100_percent(out, max_unavailable, &path.child("maxUnavailable"));
}

/// `ValidateDeploymentStrategy`.
fn validate_strategy(out: &mut Vec<StatusCause>, strategy: &Value, path: &Path) {
    let ru = strategy.get("rollingUpdate").unwrap_or(&Value::Null);
    match strategy.get("type").and_then(Value::as_str).unwrap_or_default() {
        "Recreate" => {
            if !ru.is_null() {
                out.push(field::forbidden(
                    &path.child("rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => {
            if ru.is_null() {
                out.push(field::required(&path.child("rollingUpdate"), "this should be defaulted and never be nil"));
            } else {
                validate_rolling_update(out, ru, &path.child("rollingUpdate"));
            }
        }
        other => {
            let go = json!({"Type": other, "RollingUpdate": go_rolling_update(ru)});
            out.push(field::not_supported(path, Bad::Raw(go.to_string()), &["Recreate", "RollingUpdate"]))
        }
    }
}

/// `ValidateDeploymentSpec` (pkg/apis/apps/validation/validation.go at v1.37.2).
fn validate_spec(obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::root("spec");
    nonnegative(&mut out, spec, "replicas", &path);
    selector_and_template(&mut out, spec, REPLICA_SET_RULES);
    validate_strategy(&mut out, spec.get("strategy").unwrap_or(&Value::Null), &path.child("strategy"));
    nonnegative(&mut out, spec, "minReadySeconds", &path);
    nonnegative(&mut out, spec, "revisionHistoryLimit", &path);
    if let Some(p) = spec.get("progressDeadlineSeconds").and_then(Value::as_i64) {
        nonnegative(&mut out, spec, "progressDeadlineSeconds", &path);
        let min_ready = spec.get("minReadySeconds").and_then(Value::as_i64).unwrap_or(0);
        if p <= min_ready {
            out.push(field::invalid(&path.child("progressDeadlineSeconds"), p, "must be greater than minReadySeconds"));
        }
    }
    out
}
