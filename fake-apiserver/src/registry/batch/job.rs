//! Jobs: defaults (`SetDefaults_Job`), the generated selector and template labels
//! (`PrepareForCreate`'s `generateSelector`), validation (`ValidateJobCreate`,
//! `ValidateJobUpdate`, `ValidateJobUpdateStatus`, in `job_spec`, `job_update` and
//! `job_status`), and their default of orphaning their pods when a DELETE names no propagation
//! policy (kube-apiserver v1.37.2 `pkg/registry/batch/job/strategy.go`).

use super::job_spec::{
    CONTROLLER_UID, JOB_NAME, LEGACY_CONTROLLER_UID, LEGACY_JOB_NAME, validate_generated_selector, validate_job_spec,
    validate_name_allows_completions,
};
use super::job_status::validate_job_status_update;
use super::job_update::validate_job_spec_update;
use super::pod_failure_policy::default_pod_failure_policy;
use crate::error::StatusCause;
use crate::registry::core::pod_spec::default_template;
use crate::registry::field::Path;
use crate::registry::{ResourceType, Strategy};
use serde_json::{Value, json};

/// batch/v1 Job.
#[derive(Debug)]
pub(crate) struct JobStrategy;

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
            // A per-index limit replaces the global one, which then never triggers.
            let backoff = if spec.get("backoffLimitPerIndex").is_some_and(|v| !v.is_null()) { i32::MAX } else { 6 };
            spec.entry("backoffLimit").or_insert(json!(backoff));
            spec.entry("completionMode").or_insert(json!("NonIndexed"));
            spec.entry("suspend").or_insert(json!(false));
            let replacement = if spec.get("podFailurePolicy").is_some_and(|v| !v.is_null()) {
                "Failed"
            } else {
                "TerminatingOrFailed"
            };
            spec.entry("podReplacementPolicy").or_insert(json!(replacement));
            spec.entry("manualSelector").or_insert(json!(false));
            if let Some(policy) = spec.get_mut("podFailurePolicy") {
                default_pod_failure_policy(policy);
            }
        }
        // The Job takes its template's labels when it has none of its own.
        let template_labels = obj.pointer("/spec/template/metadata/labels").filter(|l| l.is_object()).cloned();
        if let Some(labels) = template_labels
            && obj.pointer("/metadata/labels").and_then(Value::as_object).is_none_or(|m| m.is_empty())
            && let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.insert("labels".into(), labels);
        }
        default_template(obj);
    }

    /// `generateSelector`: unless `manualSelector`, the template gets the job's name and uid
    /// labels (those the client set are kept, and refused by validation if wrong) and the
    /// selector the uid label.
    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value, _now: &str) {
        if obj["spec"]["manualSelector"] == json!(true) || !obj["spec"].is_object() {
            return;
        }
        let uid = obj["metadata"]["uid"].as_str().unwrap_or_default().to_string();
        let name = obj["metadata"]["name"].as_str().unwrap_or_default().to_string();
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
            for (key, value) in
                [(CONTROLLER_UID, &uid), (JOB_NAME, &name), (LEGACY_CONTROLLER_UID, &uid), (LEGACY_JOB_NAME, &name)]
            {
                l.entry(key).or_insert(json!(value));
            }
        }
        let selector = &mut obj["spec"]["selector"];
        if !selector.is_object() {
            *selector = json!({});
        }
        if !selector["matchLabels"].is_object() {
            selector["matchLabels"] = json!({});
        }
        if let Some(m) = selector["matchLabels"].as_object_mut() {
            m.entry(CONTROLLER_UID).or_insert(json!(uid));
        }
    }

    /// `ValidateJobCreate`.
    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        let mut out = validate_generated_selector(obj);
        out.extend(validate_job_spec(&obj["spec"], &Path::root("spec")));
        out.extend(validate_name_allows_completions(obj));
        out
    }

    /// `ValidateJobUpdate`.
    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut out = validate_job_spec_update(obj, old);
        out.extend(validate_name_allows_completions(obj));
        out
    }

    /// `ValidateJobUpdateStatus`.
    fn validate_status_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        validate_job_status_update(obj, old)
    }

    /// `batch/v1` Jobs keep `OrphanDependents` as their default for backwards compatibility.
    fn orphans_dependents_by_default(&self) -> bool {
        true
    }
}
