//! ReplicaSets: defaults, validation (`ValidateReplicaSet`, update and status) and kubectl's
//! columns.

use super::workload::{
    REPLICA_SET_RULES, materialize_spec_and_template, nonnegative, selector_and_template, selector_immutable,
    status_counters,
};
use crate::error::StatusCause;
use crate::registry::core::pod_spec::default_template;
use crate::registry::field::Path;
use crate::registry::printers::{age_col, col, int, name_col, since, workload_cols, workload_tail};
use crate::registry::{ResourceType, Strategy};
use jiff::Timestamp;
use serde_json::{Value, json};

/// apps/v1 ReplicaSet.
#[derive(Debug)]
pub(crate) struct ReplicaSetStrategy;

fn validate_spec(obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::root("spec");
    nonnegative(&mut out, spec, "replicas", &path);
    nonnegative(&mut out, spec, "minReadySeconds", &path);
    selector_and_template(&mut out, spec, REPLICA_SET_RULES);
    out
}

impl Strategy for ReplicaSetStrategy {
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        materialize_spec_and_template(obj);
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            spec.entry("replicas").or_insert(json!(1));
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
                "fullyLabeledReplicas",
                "readyReplicas",
                "availableReplicas",
                "observedGeneration",
                "terminatingReplicas",
            ],
        );
        out
    }

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
