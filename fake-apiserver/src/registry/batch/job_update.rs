//! What an update may change in a Job's spec (kube-apiserver v1.37.2
//! `pkg/apis/batch/validation/validation.go`: `ValidateJobSpecUpdate`, `validateCompletions`,
//! `validatePodTemplateUpdate`, `validatePodResourceUpdatesOnly`; the options of
//! `pkg/registry/batch/job/strategy.go` `validationOptionsForJob`).

use super::job_spec::validate_job_spec;
use super::{pod_failure_policy, success_policy};
use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use serde_json::{Value, json};

/// `ValidateJobSpecUpdate`: the new spec, then what may not change.
pub(crate) fn validate_job_spec_update(obj: &Value, old: &Value) -> Vec<StatusCause> {
    let path = Path::root("spec");
    let (spec, old_spec) = (&obj["spec"], &old["spec"]);
    let mut out = validate_job_spec(spec, &path);
    out.extend(completions_update(spec, old_spec, &path));
    let immutable = |out: &mut Vec<StatusCause>, key: &str, new: Bad, changed: bool| {
        if changed {
            out.push(field::invalid(&path.child(key), new, field::FIELD_IMMUTABLE));
        }
    };
    let differs = |key: &str| !apimachinery::json::semantically_equal(&spec[key], &old_spec[key]);
    immutable(&mut out, "selector", Bad::of(&spec["selector"]), differs("selector"));
    out.extend(template_update_causes(obj, old, &path));
    immutable(&mut out, "completionMode", Bad::of(&spec["completionMode"]), differs("completionMode"));
    let failure_policy = pod_failure_policy::go_internal_json(&spec["podFailurePolicy"]);
    immutable(&mut out, "podFailurePolicy", Bad::of(&failure_policy), differs("podFailurePolicy"));
    immutable(
        &mut out,
        "backoffLimitPerIndex",
        Bad::of(&spec["backoffLimitPerIndex"]),
        differs("backoffLimitPerIndex"),
    );
    immutable(&mut out, "managedBy", Bad::of(&spec["managedBy"]), differs("managedBy"));
    let success = success_policy::go_internal_json(&spec["successPolicy"]);
    immutable(&mut out, "successPolicy", Bad::of(&success), differs("successPolicy"));
    out
}

/// `validateCompletions`: immutable for a NonIndexed Job; an Indexed Job may change it only
/// together with parallelism (to the same value).
fn completions_update(spec: &Value, old_spec: &Value, path: &Path) -> Vec<StatusCause> {
    let at = path.child("completions");
    let (new, old) = (&spec["completions"], &old_spec["completions"]);
    if spec["completionMode"] != json!("Indexed") {
        return field::immutable(&at, new, old).into_iter().collect();
    }
    if apimachinery::json::semantically_equal(new, old) || new.is_null() {
        return Vec::new();
    }
    if spec.get("parallelism") != Some(new) {
        return vec![field::invalid(&at, Bad::of(new), "can only be modified in tandem with spec.parallelism")];
    }
    Vec::new()
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
