//! Deployments: defaults (`SetDefaults_Deployment`), validation (`ValidateDeployment`,
//! its update and status rules) and kubectl's columns.

use super::workload::{nonnegative, selector_and_template, selector_immutable, status_counters};
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

    fn validate_status_update(&self, _rt: &ResourceType, obj: &Value, _old: &Value) -> Vec<StatusCause> {
        let mut out = Vec::new();
        status_counters(
            &mut out,
            obj,
            &[
                "replicas",
                "updatedReplicas",
                "readyReplicas",
                "availableReplicas",
                "unavailableReplicas",
                "observedGeneration",
                "collisionCount",
                "terminatingReplicas",
            ],
        );
        out
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

/// An `intstr` as an absolute number against 100 (percent) or itself, for the zero checks.
fn int_or_percent(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.strip_suffix('%').and_then(|p| p.parse().ok()).or_else(|| s.parse().ok()),
        _ => None,
    }
}

/// `ValidateDeploymentSpec` and `ValidateDeploymentStrategy`.
fn validate_spec(obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::root("spec");
    nonnegative(&mut out, spec, "replicas", &path);
    selector_and_template(&mut out, spec, "deployment", true);
    let strategy = spec.get("strategy").unwrap_or(&Value::Null);
    let spath = path.child("strategy");
    match strategy.get("type").and_then(Value::as_str).unwrap_or_default() {
        "Recreate" => {
            if strategy.get("rollingUpdate").is_some_and(|v| !v.is_null()) {
                out.push(field::forbidden(
                    &spath.child("rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => {
            let ru = strategy.get("rollingUpdate").unwrap_or(&Value::Null);
            let rpath = spath.child("rollingUpdate");
            for k in ["maxUnavailable", "maxSurge"] {
                if let Some(n) = int_or_percent(ru.get(k)).filter(|n| *n < 0) {
                    out.push(field::invalid(&rpath.child(k), Bad::of(&ru[k]), "must be greater than or equal to 0"));
                    let _ = n;
                }
            }
            if int_or_percent(ru.get("maxUnavailable")) == Some(0) && int_or_percent(ru.get("maxSurge")) == Some(0) {
                out.push(field::invalid(
                    &rpath.child("maxUnavailable"),
                    Bad::of(&ru["maxUnavailable"]),
                    "may not be 0 when `maxSurge` is 0",
                ));
            }
            if let Some(Value::String(s)) = ru.get("maxUnavailable")
                && s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()).is_some_and(|p| p > 100)
            {
                out.push(field::invalid(&rpath.child("maxUnavailable"), s.as_str(), "must not be greater than 100%"));
            }
        }
        _ => out.push(field::not_supported(&spath, Bad::Raw(strategy.to_string()), &["Recreate", "RollingUpdate"])),
    }
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
