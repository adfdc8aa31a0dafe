//! Jobs: defaults (`SetDefaults_Job`), the generated selector and template labels
//! (`PrepareForCreate`), validation (`ValidateJob`, update and status), and their default of
//! orphaning their pods when a DELETE names no propagation policy.

use crate::error::StatusCause;
use crate::registry::apps::workload::{nonnegative, selector_matches};
use crate::registry::core::pod_spec::{default_template, validate_template};
use crate::registry::field::{self, Bad, Path};
use crate::registry::meta::label_selector_causes;
use crate::registry::{ResourceType, Strategy};
use serde_json::{Value, json};

/// batch/v1 Job.
#[derive(Debug)]
pub(crate) struct JobStrategy;

fn validate_spec(obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::root("spec");
    for k in ["parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"] {
        nonnegative(&mut out, spec, k, &path);
    }
    let mode = spec.get("completionMode").and_then(Value::as_str).unwrap_or("NonIndexed");
    match mode {
        "NonIndexed" => {}
        "Indexed" => {
            if spec.get("completions").is_none_or(Value::is_null) {
                out.push(field::required(&path.child("completions"), "when completion mode is Indexed"));
            }
        }
        other => out.push(field::not_supported(&path.child("completionMode"), other, &["NonIndexed", "Indexed"])),
    }
    let template = spec.get("template").unwrap_or(&Value::Null);
    match spec.get("selector").filter(|s| !s.is_null()) {
        None => {
            out.push(field::required(&path.child("selector"), ""));
            let labels = template.get("metadata").and_then(|m| m.get("labels"));
            out.push(field::invalid(
                &path.child("template").child("metadata").child("labels"),
                Bad::Raw(labels.map(Value::to_string).unwrap_or_default()),
                "`selector` does not match template `labels`",
            ));
        }
        Some(sel) => {
            out.extend(label_selector_causes(sel, &path.child("selector")));
            let labels = template.get("metadata").and_then(|m| m.get("labels"));
            if !selector_matches(sel, labels) {
                out.push(field::invalid(
                    &path.child("template").child("metadata").child("labels"),
                    Bad::Raw(labels.map(Value::to_string).unwrap_or_default()),
                    "`selector` does not match template `labels`",
                ));
            }
        }
    }
    let tpath = path.child("template");
    out.extend(validate_template(template, &tpath));
    let restart = template.get("spec").and_then(|s| s.get("restartPolicy")).and_then(Value::as_str).unwrap_or_default();
    // Upstream reports any other policy (the defaulted `Always` included) as Required.
    if restart != "OnFailure" && restart != "Never" {
        out.push(field::required(&tpath.child("spec").child("restartPolicy"), r#"valid values: "OnFailure", "Never""#));
    }
    out
}

impl Strategy for JobStrategy {
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            let completions = spec.get("completions").cloned().filter(|v| !v.is_null());
            let parallelism = spec.get("parallelism").cloned().filter(|v| !v.is_null());
            if completions.is_none() && parallelism.is_none() {
                spec.insert("completions".into(), json!(1));
                spec.insert("parallelism".into(), json!(1));
            } else if parallelism.is_none() {
                spec.insert("parallelism".into(), json!(1));
            }
            spec.entry("backoffLimit").or_insert(json!(6));
            spec.entry("completionMode").or_insert(json!("NonIndexed"));
            spec.entry("suspend").or_insert(json!(false));
            let replacement = if spec.get("podFailurePolicy").is_some_and(|v| !v.is_null()) {
                "Failed"
            } else {
                "TerminatingOrFailed"
            };
            spec.entry("podReplacementPolicy").or_insert(json!(replacement));
            spec.entry("manualSelector").or_insert(json!(false));
        }
        default_template(obj);
    }

    /// `generateSelector`: unless `manualSelector`, the selector is the job's uid and the
    /// template gets the matching labels.
    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value, _now: &str) {
        if obj["spec"]["manualSelector"] == json!(true) {
            return;
        }
        let uid = obj["metadata"]["uid"].as_str().unwrap_or_default().to_string();
        let name = obj["metadata"]["name"].as_str().unwrap_or_default().to_string();
        if !obj["spec"].is_object() {
            return;
        }
        obj["spec"]["selector"] = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}});
        if !obj["spec"]["template"].is_object() {
            obj["spec"]["template"] = json!({});
        }
        if !obj["spec"]["template"]["metadata"].is_object() {
            obj["spec"]["template"]["metadata"] = json!({});
        }
        let labels = &mut obj["spec"]["template"]["metadata"]["labels"];
        if !labels.is_object() {
            *labels = json!({});
        }
        if let Some(l) = labels.as_object_mut() {
            l.insert("batch.kubernetes.io/controller-uid".into(), json!(uid));
            l.insert("batch.kubernetes.io/job-name".into(), json!(name));
            l.insert("controller-uid".into(), json!(uid));
            l.insert("job-name".into(), json!(name));
        }
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        validate_spec(obj)
    }

    /// Completions, selector and (unless suspended) the template are immutable.
    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut out = validate_spec(obj);
        let path = Path::root("spec");
        for k in ["completions", "selector", "completionMode"] {
            if let Some(c) = field::immutable(&path.child(k), &obj["spec"][k], &old["spec"][k]) {
                out.push(c);
            }
        }
        let suspended = obj["spec"]["suspend"] == json!(true) && old["spec"]["suspend"] == json!(true);
        if !suspended && obj["spec"]["template"] != old["spec"]["template"] {
            out.push(field::invalid(
                &path.child("template"),
                Bad::Raw(obj["spec"]["template"].to_string()),
                field::FIELD_IMMUTABLE,
            ));
        }
        out
    }

    fn validate_status_update(&self, _rt: &ResourceType, obj: &Value, _old: &Value) -> Vec<StatusCause> {
        let mut out = Vec::new();
        let status = obj.get("status").unwrap_or(&Value::Null);
        for k in ["active", "succeeded", "failed", "ready", "terminating"] {
            nonnegative(&mut out, status, k, &Path::root("status"));
        }
        out
    }

    /// `batch/v1` Jobs keep `OrphanDependents` as their default for backwards compatibility.
    fn orphans_dependents_by_default(&self) -> bool {
        true
    }
}
