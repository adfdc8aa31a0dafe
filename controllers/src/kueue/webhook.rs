//! The update checks of Kueue's validating job webhooks (`vrayjob.kb.io`, `vraycluster.kb.io`,
//! `vrayservice.kb.io`) that the Kueue table needs: `jobframework.ValidateJobOnUpdate`'s
//! queue-name immutability while the job runs (`validateUpdateForQueueName`), the elastic-job
//! toggle (`validatedUpdateForEnabledWorkloadSlice`) and the WorkloadPriorityClass label rules
//! (`ValidateUpdateForWorkloadPriorityClassName`), behind `ShouldValidateRayOrSparkJobOnUpdate`
//! (gate `ValidateRayAndSparkJobUpdates`, beta and on since v0.18).
//!
//! These are pure functions of the old and new object, as an `AdmissionReview` carries them; the
//! harness registers them with the fake API server as in-process webhooks (real Kueue serves them
//! over HTTPS). Not modelled: the create checks, the default-LocalQueue rule (it needs the
//! webhook's queue cache), prebuilt workloads, `maxExecTimeSeconds`, `AdmissionGatedBy`, and the
//! checks of the job's spec that the update path repeats from create.

use super::{ELASTIC_JOB_ANNOTATION, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL};
use serde_json::Value;

/// The webhook names Kueue v0.19.2 registers for the Ray kinds, by resource plural.
pub const RAY_WEBHOOKS: [(&str, &str); 3] =
    [("rayjobs", "vrayjob.kb.io"), ("rayclusters", "vraycluster.kb.io"), ("rayservices", "vrayservice.kb.io")];

fn label<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.pointer("/metadata/labels").and_then(|l| l.get(key)).and_then(Value::as_str).unwrap_or("")
}

/// `IsSuspended()` of the job (`resource` is the plural): `spec.suspend`, or for a RayService the
/// top-level `spec.suspend` under PR 11264's gate and the nested one without it.
pub fn is_suspended(resource: &str, job: &Value, rayservice_upgrade_gate: bool) -> bool {
    let pointer = match resource {
        "rayservices" if !rayservice_upgrade_gate => "/spec/rayClusterConfig/suspend",
        _ => "/spec/suspend",
    };
    job.pointer(pointer).and_then(Value::as_bool) == Some(true)
}

/// `field.Invalid(path, value, detail)` as `field.Error.Error()` prints it for a string value.
fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {value:?}: {detail}")
}

/// `ValidateJobOnUpdate` for a Ray job (`resource` is the plural). `Err` is the message of the
/// aggregated field errors (`utilerrors.NewAggregate`: one error alone, several in brackets).
pub fn validate_ray_job_update(
    resource: &str,
    old: &Value,
    new: &Value,
    rayservice_upgrade_gate: bool,
) -> Result<(), String> {
    // `ShouldValidateRayOrSparkJobOnUpdate` with manageJobsWithoutQueueName off.
    if label(new, QUEUE_NAME_LABEL).is_empty() && label(old, QUEUE_NAME_LABEL).is_empty() {
        return Ok(());
    }
    let suspended = is_suspended(resource, new, rayservice_upgrade_gate);
    let mut errs = Vec::new();
    let queue_path = format!("metadata.labels[{QUEUE_NAME_LABEL}]");
    if !suspended && label(new, QUEUE_NAME_LABEL) != label(old, QUEUE_NAME_LABEL) {
        errs.push(invalid(&queue_path, label(new, QUEUE_NAME_LABEL), "field is immutable"));
    }
    let elastic = |o: &Value| {
        o.pointer("/metadata/annotations").and_then(|a| a.get(ELASTIC_JOB_ANNOTATION)).and_then(Value::as_str)
            == Some("true")
    };
    if elastic(old) != elastic(new) {
        // The value is the bool `workloadslicing.Enabled` returned, printed unquoted.
        errs.push(format!(
            "metadata.annotations[{ELASTIC_JOB_ANNOTATION}]: Invalid value: {}: field is immutable",
            elastic(new)
        ));
    }
    let wpc_path = format!("metadata.labels[{PRIORITY_CLASS_LABEL}]");
    let (old_wpc, new_wpc) = (label(old, PRIORITY_CLASS_LABEL), label(new, PRIORITY_CLASS_LABEL));
    if !suspended && old_wpc.is_empty() && !new_wpc.is_empty() {
        errs.push(invalid(&wpc_path, new_wpc, "WorkloadPriorityClass cannot be added to a non-suspended workload"));
    } else if new_wpc.is_empty() && !old_wpc.is_empty() {
        errs.push(invalid(&wpc_path, new_wpc, "WorkloadPriorityClass cannot be removed from a workload"));
    }
    match errs.len() {
        0 => Ok(()),
        1 => Err(errs.remove(0)),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(queue: &str, suspend: bool) -> Value {
        json!({"metadata": {"labels": {QUEUE_NAME_LABEL: queue}}, "spec": {"suspend": suspend}})
    }

    #[test]
    fn the_queue_name_is_immutable_only_while_the_job_runs() {
        assert_eq!(
            validate_ray_job_update("rayjobs", &job("a", false), &job("b", false), true),
            Err("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"b\": field is immutable".into())
        );
        assert_eq!(validate_ray_job_update("rayjobs", &job("a", true), &job("b", true), true), Ok(()));
        let unmanaged = json!({"spec": {"suspend": false}});
        assert_eq!(validate_ray_job_update("rayjobs", &unmanaged, &unmanaged, true), Ok(()));
    }

    #[test]
    fn toggling_the_elastic_annotation_is_refused_and_errors_aggregate() {
        let mut old = job("a", false);
        old["metadata"]["annotations"] = json!({ELASTIC_JOB_ANNOTATION: "true"});
        let new = job("b", false);
        let err = validate_ray_job_update("rayservices", &old, &new, true).unwrap_err();
        assert!(err.starts_with("[metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"b\""), "{err}");
        assert!(
            err.ends_with(
                "metadata.annotations[kueue.x-k8s.io/elastic-job]: Invalid value: false: field is immutable]"
            )
        );
    }
}
