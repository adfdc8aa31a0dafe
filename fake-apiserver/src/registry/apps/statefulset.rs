//! StatefulSets: defaults, validation (`ValidateStatefulSet`, update and status) and
//! kubectl's columns.

use super::workload::{nonnegative, selector_and_template, status_counters};
use crate::error::StatusCause;
use crate::registry::core::pod_spec::default_template;
use crate::registry::field::{self, Bad, Path};
use crate::registry::printers::{age_col, col, int, name_col, since, workload_cols, workload_tail};
use crate::registry::{ResourceType, Strategy};
use jiff::Timestamp;
use serde_json::{Value, json};

/// apps/v1 StatefulSet.
#[derive(Debug)]
pub(crate) struct StatefulSetStrategy;

fn validate_spec(obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::root("spec");
    match spec.get("podManagementPolicy").and_then(Value::as_str).unwrap_or_default() {
        "" => out.push(field::required(&path.child("podManagementPolicy"), "")),
        "OrderedReady" | "Parallel" => {}
        other => {
            out.push(field::invalid(&path.child("podManagementPolicy"), other, "must be 'OrderedReady' or 'Parallel'"))
        }
    }
    let us = spec.get("updateStrategy").unwrap_or(&Value::Null);
    match us.get("type").and_then(Value::as_str).unwrap_or_default() {
        "" => out.push(field::required(&path.child("updateStrategy"), "")),
        "OnDelete" => {
            if us.get("rollingUpdate").is_some_and(|v| !v.is_null()) {
                out.push(field::invalid(
                    &path.child("updateStrategy").child("rollingUpdate"),
                    Bad::Raw(us["rollingUpdate"].to_string()),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(ru) = us.get("rollingUpdate") {
                nonnegative(&mut out, ru, "partition", &path.child("updateStrategy").child("rollingUpdate"));
            }
        }
        _ => out.push(field::invalid(
            &path.child("updateStrategy"),
            Bad::Raw(us.to_string()),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    if let Some(policy) = spec.get("persistentVolumeClaimRetentionPolicy").filter(|v| v.is_object()) {
        let ppath = path.child("persistentVolumeClaimRetentionPolicy");
        for k in ["whenDeleted", "whenScaled"] {
            let v = policy.get(k).and_then(Value::as_str).unwrap_or_default();
            if !["Retain", "Delete"].contains(&v) {
                out.push(field::not_supported(&ppath.child(k), v, &["Retain", "Delete"]));
            }
        }
    }
    nonnegative(&mut out, spec, "replicas", &path);
    nonnegative(&mut out, spec, "minReadySeconds", &path);
    if let Some(start) = spec.get("ordinals").and_then(|o| o.get("start")).and_then(Value::as_i64).filter(|n| *n < 0) {
        out.push(field::invalid(&path.child("ordinals.start"), start, "must be greater than or equal to 0"));
    }
    selector_and_template(&mut out, spec, "statefulset", true);
    out
}

/// The spec fields an update may change (`ValidateStatefulSetUpdate`).
const MUTABLE_SPEC: &[&str] = &[
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
];

impl Strategy for StatefulSetStrategy {
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            spec.entry("replicas").or_insert(json!(1));
            spec.entry("podManagementPolicy").or_insert(json!("OrderedReady"));
            spec.entry("revisionHistoryLimit").or_insert(json!(10));
            let us = spec.entry("updateStrategy").or_insert(json!({}));
            if let Some(us) = us.as_object_mut() {
                us.entry("type").or_insert(json!("RollingUpdate"));
                if us.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                    let ru = us.entry("rollingUpdate").or_insert(json!({}));
                    if let Some(ru) = ru.as_object_mut() {
                        ru.entry("partition").or_insert(json!(0));
                    }
                }
            }
            let policy = spec.entry("persistentVolumeClaimRetentionPolicy").or_insert(json!({}));
            if let Some(p) = policy.as_object_mut() {
                p.entry("whenDeleted").or_insert(json!("Retain"));
                p.entry("whenScaled").or_insert(json!("Retain"));
            }
        }
        default_template(obj);
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        validate_spec(obj)
    }

    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut out = validate_spec(obj);
        // 1.37 reports each immutable field on its own.
        let empty = serde_json::Map::new();
        let (new_spec, old_spec) =
            (obj["spec"].as_object().unwrap_or(&empty), old["spec"].as_object().unwrap_or(&empty));
        let keys: std::collections::BTreeSet<&String> = new_spec.keys().chain(old_spec.keys()).collect();
        for k in keys.into_iter().filter(|k| !MUTABLE_SPEC.contains(&k.as_str())) {
            let (n, o) =
                (new_spec.get(k.as_str()).unwrap_or(&Value::Null), old_spec.get(k.as_str()).unwrap_or(&Value::Null));
            if let Some(c) = field::immutable(&Path::root("spec").child(k), n, o) {
                out.push(c);
            }
        }
        out
    }

    fn validate_status_update(&self, _rt: &ResourceType, obj: &Value, _old: &Value) -> Vec<StatusCause> {
        let mut out = Vec::new();
        status_counters(
            &mut out,
            obj,
            &[
                "replicas",
                "readyReplicas",
                "currentReplicas",
                "updatedReplicas",
                "availableReplicas",
                "observedGeneration",
                "collisionCount",
            ],
        );
        out
    }

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
