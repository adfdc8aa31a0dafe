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

    /// Completions, selector and the template are immutable, but for a suspended Job's template
    /// (`validatePodTemplateUpdate` and the job strategy's `validationOptionsForJob`, with
    /// MutablePodResourcesForSuspendedJobs and MutableSchedulingDirectivesForSuspendedJobs on by
    /// default since 1.36).
    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut out = validate_spec(obj);
        let path = Path::root("spec");
        for k in ["completions", "selector", "completionMode"] {
            if let Some(c) = field::immutable(&path.child(k), &obj["spec"][k], &old["spec"][k]) {
                out.push(c);
            }
        }
        out.extend(template_update_causes(obj, old, &path));
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

/// What may change in a Job's pod template. Only a Job that was suspended may change it: one
/// that never started, or carries `Suspended=True`, with no active pods
/// (`shouldAllowMutablePodTemplate`) may change its scheduling directives (node selector,
/// node affinity, tolerations, scheduling gates, labels, annotations) and its containers'
/// resources; any other suspended Job nothing.
fn template_update_causes(obj: &Value, old: &Value, path: &Path) -> Vec<StatusCause> {
    let (new_t, old_t) = (&obj["spec"]["template"], &old["spec"]["template"]);
    let immutable = |at: Path, v: &Value| vec![field::invalid(&at, Bad::Raw(v.to_string()), field::FIELD_IMMUTABLE)];
    if old["spec"]["suspend"] != json!(true) {
        return if apimachinery::json::semantically_equal(new_t, old_t) {
            Vec::new()
        } else {
            immutable(path.child("template"), new_t)
        };
    }
    let status = &old["status"];
    let not_started = status.get("startTime").is_none_or(Value::is_null);
    let suspended_condition = status["conditions"]
        .as_array()
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Suspended" && c["status"] == "True"));
    let inactive = status["active"].as_i64().unwrap_or(0) == 0;
    if !((not_started || suspended_condition) && inactive) {
        return if apimachinery::json::semantically_equal(new_t, old_t) {
            Vec::new()
        } else {
            immutable(path.child("template"), new_t)
        };
    }
    // Scheduling directives take the new values; then only container resources may differ.
    let mut expected = old_t["spec"].clone();
    let new_spec = &new_t["spec"];
    for k in ["nodeSelector", "tolerations", "schedulingGates"] {
        match new_spec.get(k) {
            Some(v) => expected[k] = v.clone(),
            None => {
                if let Some(m) = expected.as_object_mut() {
                    m.remove(k);
                }
            }
        }
    }
    let node_affinity = new_spec["affinity"].get("nodeAffinity").cloned();
    if let Some(m) = expected.as_object_mut() {
        let mut affinity = m.remove("affinity").unwrap_or(Value::Null);
        match (&node_affinity, affinity.as_object_mut()) {
            (Some(n), Some(a)) => {
                a.insert("nodeAffinity".into(), n.clone());
            }
            (Some(n), None) => affinity = json!({"nodeAffinity": n}),
            (None, Some(a)) => {
                a.remove("nodeAffinity");
            }
            (None, None) => {}
        }
        if affinity.as_object().is_some_and(|a| !a.is_empty()) {
            m.insert("affinity".into(), affinity);
        }
    }
    for list in ["containers", "initContainers"] {
        let (Some(new_c), Some(exp_c)) =
            (new_spec[list].as_array(), expected.get_mut(list).and_then(Value::as_array_mut))
        else {
            continue;
        };
        if new_c.len() == exp_c.len() {
            for (e, n) in exp_c.iter_mut().zip(new_c) {
                if e["name"] == n["name"] {
                    match n.get("resources") {
                        Some(r) => e["resources"] = r.clone(),
                        None => {
                            if let Some(m) = e.as_object_mut() {
                                m.remove("resources");
                            }
                        }
                    }
                }
            }
        }
    }
    if apimachinery::json::semantically_equal(new_spec, &expected) {
        Vec::new()
    } else {
        immutable(path.child("template").child("spec"), new_spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(suspend: bool, status: Value, labels: Value, cpu: &str) -> Value {
        json!({"spec": {"suspend": suspend, "template": {"metadata": {"labels": labels}, "spec": {
            "nodeSelector": {"zone": "a"},
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}}},
            "status": status})
    }

    fn fields(causes: Vec<StatusCause>) -> Vec<String> {
        causes.into_iter().map(|c| c.field).collect()
    }

    #[test]
    fn a_suspended_job_that_never_ran_may_change_directives_and_resources_only() {
        let at = Path::root("spec");
        let old = job(true, json!({}), json!({"a": "1"}), "1");
        // Kueue admits a job: unsuspends it, adds labels and a node selector.
        let mut admitted = job(false, json!({}), json!({"a": "1", "kueue.x-k8s.io/podset": "main"}), "2");
        admitted["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "b"});
        assert!(template_update_causes(&admitted, &old, &at).is_empty());
        let mut image = admitted.clone();
        image["spec"]["template"]["spec"]["containers"][0]["image"] = json!("other");
        assert_eq!(fields(template_update_causes(&image, &old, &at)), ["spec.template.spec"]);
        // Started and running: nothing may change, not even a label.
        let running = job(true, json!({"startTime": "2026-01-01T00:00:00Z", "active": 1}), json!({"a": "1"}), "1");
        assert_eq!(fields(template_update_causes(&admitted, &running, &at)), ["spec.template"]);
        // Not suspended: the template is immutable.
        let unsuspended = job(false, json!({}), json!({"a": "1"}), "1");
        assert_eq!(fields(template_update_causes(&admitted, &unsuspended, &at)), ["spec.template"]);
        // Started once but suspended again (Suspended=True, no active pods): mutable again.
        let resuspended = job(
            true,
            json!({"startTime": "2026-01-01T00:00:00Z", "conditions": [{"type": "Suspended", "status": "True"}]}),
            json!({"a": "1"}),
            "1",
        );
        assert!(template_update_causes(&admitted, &resuspended, &at).is_empty());
    }
}
