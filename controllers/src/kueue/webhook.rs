//! The checks of Kueue's validating webhooks the Kueue table needs, for the Ray jobs
//! (`vrayjob.kb.io`, `vraycluster.kb.io`, `vrayservice.kb.io`) and the Workload
//! (`vworkload.kb.io`).
//!
//! Job webhooks, on create (`validateCreate`, which `ValidateUpdate` repeats on the new object):
//! for a job with a queue name the RayClusterSpec rules (autoscaling only for elastic jobs, at
//! most `MaxPodSets` PodSets, no worker group named `head`; an elastic RayCluster must carry the
//! elastic scheduling gate on every template; a RayJob must not pick an existing cluster and must
//! shut its cluster down when finished), then `ValidateJobOnCreate` (the queue name and the
//! prebuilt-workload name are DNS-1123 subdomains). On update, first `ValidateJobOnUpdate`:
//! queue-name immutability while the job runs (`validateUpdateForQueueName`), the elastic-job
//! toggle (`validatedUpdateForEnabledWorkloadSlice`) and the WorkloadPriorityClass label rules,
//! behind `ShouldValidateRayOrSparkJobOnUpdate` (gate `ValidateRayAndSparkJobUpdates`, on since
//! v0.18).
//!
//! Workload webhook, on update: while the old Workload holds a quota reservation its PodSets may
//! only lower their counts (`validateImmutablePodSets`, scale-down allowed under
//! `ElasticJobsViaWorkloadSlices`).
//!
//! These are pure functions of the old and new object, as an `AdmissionReview` carries them; the
//! harness registers them with the fake API server as in-process webhooks (real Kueue serves them
//! over HTTPS). Messages are `field.ErrorList.ToAggregate()`'s; a value that is not a string or a
//! number is printed as JSON, as `field.Error` does (an immutable PodSet with this module's field
//! order, not Go's). The defaulting webhooks, which run
//! before these on create, are in [`super::defaulting`]. Not modelled: TAS requests,
//! `maxExecTimeSeconds`, `AdmissionGatedBy`, and the Workload webhook's other rules.

use super::ungater::ELASTIC_JOB_SCHEDULING_GATE;
use super::{ELASTIC_JOB_ANNOTATION, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL};
use serde_json::Value;

/// The webhook names Kueue v0.19.2 registers for the Ray kinds, by resource plural.
pub const RAY_WEBHOOKS: [(&str, &str); 3] =
    [("rayjobs", "vrayjob.kb.io"), ("rayclusters", "vraycluster.kb.io"), ("rayservices", "vrayservice.kb.io")];

/// The Workload webhook's name.
pub const WORKLOAD_WEBHOOK: &str = "vworkload.kb.io";

/// `jobframework.MaxPodSets` at v0.19.2.
const MAX_POD_SETS: usize = 18;

/// Label naming a prebuilt Workload (`constants.PrebuiltWorkloadLabel`).
const PREBUILT_WORKLOAD_LABEL: &str = "kueue.x-k8s.io/prebuilt-workload-name";

fn label<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.pointer("/metadata/labels").and_then(|l| l.get(key)).and_then(Value::as_str).unwrap_or("")
}

fn has_label(obj: &Value, key: &str) -> bool {
    obj.pointer("/metadata/labels").and_then(|l| l.get(key)).is_some()
}

fn elastic(o: &Value) -> bool {
    o.pointer("/metadata/annotations").and_then(|a| a.get(ELASTIC_JOB_ANNOTATION)).and_then(Value::as_str)
        == Some("true")
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

/// `utilerrors.NewAggregate(...).Error()`: one error alone, several in brackets.
fn aggregate(mut errs: Vec<String>) -> Result<(), String> {
    match errs.len() {
        0 => Ok(()),
        1 => Err(errs.remove(0)),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

/// Kueue's validating webhook for a Ray job (`resource` is the plural): `ValidateCreate` when
/// `old` is `None`, else `ValidateUpdate`. `Err` is the aggregated message.
pub fn validate_ray_job(
    resource: &str,
    old: Option<&Value>,
    new: &Value,
    rayservice_upgrade_gate: bool,
) -> Result<(), String> {
    let mut errs = Vec::new();
    if let Some(old) = old {
        // `ShouldValidateRayOrSparkJobOnUpdate` with manageJobsWithoutQueueName off.
        if label(new, QUEUE_NAME_LABEL).is_empty() && label(old, QUEUE_NAME_LABEL).is_empty() {
            return Ok(());
        }
        errs = update_errors(resource, old, new, rayservice_upgrade_gate);
    }
    errs.extend(create_errors(resource, new));
    aggregate(errs)
}

/// `ValidateJobOnUpdate`'s rules.
fn update_errors(resource: &str, old: &Value, new: &Value, rayservice_upgrade_gate: bool) -> Vec<String> {
    let suspended = is_suspended(resource, new, rayservice_upgrade_gate);
    let mut errs = Vec::new();
    let queue_path = format!("metadata.labels[{QUEUE_NAME_LABEL}]");
    if !suspended && label(new, QUEUE_NAME_LABEL) != label(old, QUEUE_NAME_LABEL) {
        errs.push(invalid(&queue_path, label(new, QUEUE_NAME_LABEL), "field is immutable"));
    }
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
    errs
}

/// The webhook's `validateCreate` for the kind, then `ValidateJobOnCreate`.
fn create_errors(resource: &str, job: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    if !label(job, QUEUE_NAME_LABEL).is_empty() {
        let null = Value::Null;
        match resource {
            "rayclusters" => {
                let spec = job.get("spec").unwrap_or(&null);
                if elastic(job) {
                    errs.extend(elastic_gate_errors(spec));
                } else if autoscaling(spec) {
                    errs.push(format!(
                        "spec.enableInTreeAutoscaling: Invalid value: true: a kueue-managed RayCluster can use autoscaling only as an elastic job: enable the ElasticJobsViaWorkloadSlices feature gate and set the \"{ELASTIC_JOB_ANNOTATION}\": \"true\" annotation"
                    ));
                }
                errs.extend(group_errors(spec, "spec"));
            }
            "rayservices" => {
                // The path says rayClusterSpec although the field is rayClusterConfig.
                errs.extend(cluster_spec_errors(job, job.pointer("/spec/rayClusterConfig").unwrap_or(&null)));
            }
            "rayjobs" => errs.extend(rayjob_errors(job)),
            _ => {}
        }
    }
    for key in [QUEUE_NAME_LABEL, PREBUILT_WORKLOAD_LABEL] {
        // `ValidateLabelAsCRDName`: a present label must be a DNS-1123 subdomain.
        let errors = apimachinery::validation::dns1123_subdomain_errors(label(job, key));
        if has_label(job, key) && !errors.is_empty() {
            errs.push(invalid(&format!("metadata.labels[{key}]"), label(job, key), &errors.join(",")));
        }
    }
    errs
}

fn autoscaling(spec: &Value) -> bool {
    spec.get("enableInTreeAutoscaling").and_then(Value::as_bool) == Some(true)
}

/// `raycluster.ValidateCreate`: the RayClusterSpec of a RayJob or RayService.
fn cluster_spec_errors(job: &Value, spec: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    if autoscaling(spec) && !elastic(job) {
        errs.push(
            "spec.rayClusterSpec.enableInTreeAutoscaling: Invalid value: true: a kueue managed job should only use autoscaling when workload slicing is enabled"
                .into(),
        );
    }
    errs.extend(group_errors(spec, "spec.rayClusterSpec"));
    errs
}

/// The PodSet limit and the reserved `head` name.
fn group_errors(spec: &Value, path: &str) -> Vec<String> {
    let groups = spec.get("workerGroupSpecs").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let mut errs = Vec::new();
    if groups.len() + 1 > MAX_POD_SETS {
        errs.push(format!(
            "{path}.workerGroupSpecs: Too many: {}: must have at most {MAX_POD_SETS} items",
            groups.len() + 1
        ));
    }
    for (i, g) in groups.iter().enumerate() {
        if g.get("groupName").and_then(Value::as_str) == Some("head") {
            errs.push(format!(
                "{path}.workerGroupSpecs[{i}].groupName: Forbidden: \"head\" is reserved for the head group"
            ));
        }
    }
    errs
}

/// `validateElasticJob`: every worker template, then the head's, must carry the elastic gate.
fn elastic_gate_errors(spec: &Value) -> Vec<String> {
    let null = Value::Null;
    let groups = spec.get("workerGroupSpecs").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let templates = groups
        .iter()
        .enumerate()
        .map(|(i, g)| (format!("spec.workerGroupSpecs[{i}]"), g.get("template").unwrap_or(&null)))
        .chain(std::iter::once((
            "spec.headGroupSpec".to_string(),
            spec.pointer("/headGroupSpec/template").unwrap_or(&null),
        )));
    let mut errs = Vec::new();
    for (at, template) in templates {
        let gates = template.pointer("/spec/schedulingGates").and_then(Value::as_array);
        if !gates
            .into_iter()
            .flatten()
            .any(|g| g.get("name").and_then(Value::as_str) == Some(ELASTIC_JOB_SCHEDULING_GATE))
        {
            errs.push(format!(
                "{at}.template.spec.schedulingGates: Invalid value: {}: an elastic job must have the ElasticJobSchedulingGate",
                go_gates(gates)
            ));
        }
    }
    errs
}

/// A `[]corev1.PodSchedulingGate` as `field.Error` prints a value that is not a string or a
/// number: JSON (`null` when absent).
fn go_gates(gates: Option<&Vec<Value>>) -> String {
    match gates {
        None => "null".into(),
        Some(gs) => {
            let items: Vec<Value> = gs
                .iter()
                .map(|g| serde_json::json!({"name": g.get("name").and_then(Value::as_str).unwrap_or("")}))
                .collect();
            Value::Array(items).to_string()
        }
    }
}

/// The RayJob webhook's `validateCreate`: a Kueue-managed RayJob brings its own cluster and
/// deletes it when done.
fn rayjob_errors(job: &Value) -> Vec<String> {
    let selector = job.pointer("/spec/clusterSelector").and_then(Value::as_object).filter(|m| !m.is_empty());
    let spec = job.pointer("/spec/rayClusterSpec").filter(|s| !s.is_null());
    match (selector, spec) {
        (Some(sel), Some(_)) => {
            // As JSON, keys sorted (encoding/json sorts a map's keys).
            let sorted: std::collections::BTreeMap<&String, &Value> = sel.iter().collect();
            let value = serde_json::to_string(&sorted).unwrap_or_default();
            vec![format!(
                "spec.clusterSelector: Invalid value: {value}: a kueue managed job should not use an existing cluster"
            )]
        }
        (Some(_), None) => Vec::new(),
        (None, None) => vec![
            "spec.rayClusterSpec: Required value: rayClusterSpec is required for Kueue-managed jobs that don't use clusterSelector"
                .into(),
        ],
        (None, Some(spec)) => {
            let mut errs = Vec::new();
            if job.pointer("/spec/shutdownAfterJobFinishes").and_then(Value::as_bool) != Some(true) {
                errs.push(
                    "spec.shutdownAfterJobFinishes: Invalid value: false: a kueue managed job should delete the cluster after finishing"
                        .into(),
                );
            }
            errs.extend(cluster_spec_errors(job, spec));
            errs
        }
    }
}

fn has_quota_reservation(wl: &Value) -> bool {
    wl.pointer("/status/conditions").and_then(Value::as_array).into_iter().flatten().any(|c| {
        c.get("type").and_then(Value::as_str) == Some("QuotaReserved")
            && c.get("status").and_then(Value::as_str) == Some("True")
    })
}

/// The Workload webhook (`ValidateWorkloadUpdate`'s `validateImmutablePodSets`): while `old`
/// holds a quota reservation the PodSets keep their number and every field but a lower count.
/// Creates pass.
pub fn validate_workload(old: Option<&Value>, new: &Value) -> Result<(), String> {
    let Some(old) = old.filter(|o| has_quota_reservation(o)) else { return Ok(()) };
    let sets = |w: &Value| w.pointer("/spec/podSets").and_then(Value::as_array).cloned().unwrap_or_default();
    let (old_sets, new_sets) = (sets(old), sets(new));
    if old_sets.len() != new_sets.len() {
        let value = serde_json::to_string(&new_sets).unwrap_or_default();
        return Err(format!("spec.podSets: Invalid value: {value}: field is immutable"));
    }
    let mut errs = Vec::new();
    for (i, (o, n)) in old_sets.iter().zip(&new_sets).enumerate() {
        let mut lowered = n.clone();
        let count = |p: &Value| p.get("count").and_then(Value::as_i64).unwrap_or(1);
        if count(n) < count(o) {
            lowered["count"] = o.get("count").cloned().unwrap_or(Value::from(1));
        }
        if lowered != *o {
            let value = serde_json::to_string(n).unwrap_or_default();
            errs.push(format!("spec.podSets.{i}: Invalid value: {value}: field is immutable"));
        }
    }
    aggregate(errs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(queue: &str, suspend: bool) -> Value {
        json!({
            "metadata": {"labels": {QUEUE_NAME_LABEL: queue}},
            "spec": {"suspend": suspend, "shutdownAfterJobFinishes": true, "rayClusterSpec": {}},
        })
    }

    #[test]
    fn the_queue_name_is_immutable_only_while_the_job_runs() {
        assert_eq!(
            validate_ray_job("rayjobs", Some(&job("a", false)), &job("b", false), true),
            Err("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"b\": field is immutable".into())
        );
        assert_eq!(validate_ray_job("rayjobs", Some(&job("a", true)), &job("b", true), true), Ok(()));
        let unmanaged = json!({"spec": {"suspend": false}});
        assert_eq!(validate_ray_job("rayjobs", Some(&unmanaged), &unmanaged, true), Ok(()));
    }

    #[test]
    fn toggling_the_elastic_annotation_is_refused_and_errors_aggregate() {
        let mut old = job("a", false);
        old["metadata"]["annotations"] = json!({ELASTIC_JOB_ANNOTATION: "true"});
        let new = job("b", false);
        let err = validate_ray_job("rayservices", Some(&old), &new, true).unwrap_err();
        assert!(err.starts_with("[metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"b\""), "{err}");
        assert!(
            err.ends_with(
                "metadata.annotations[kueue.x-k8s.io/elastic-job]: Invalid value: false: field is immutable]"
            )
        );
    }

    #[test]
    fn creates_check_the_queue_name_and_an_elastic_clusters_gates() {
        assert_eq!(validate_ray_job("rayjobs", None, &job("user-queue", true), true), Ok(()));
        let err = validate_ray_job("rayjobs", None, &job("Bad_Queue", true), true).unwrap_err();
        assert!(err.starts_with("metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: \"Bad_Queue\": a lowercase RFC 1123 subdomain"), "{err}");
        let rc = json!({
            "metadata": {"labels": {QUEUE_NAME_LABEL: "q"}, "annotations": {ELASTIC_JOB_ANNOTATION: "true"}},
            "spec": {"headGroupSpec": {"template": {"spec": {"schedulingGates": [{"name": ELASTIC_JOB_SCHEDULING_GATE}]}}},
                     "workerGroupSpecs": [{"groupName": "head", "template": {}}]},
        });
        assert_eq!(
            validate_ray_job("rayclusters", None, &rc, true),
            Err("[spec.workerGroupSpecs[0].template.spec.schedulingGates: Invalid value: null: an elastic job must have the ElasticJobSchedulingGate, spec.workerGroupSpecs[0].groupName: Forbidden: \"head\" is reserved for the head group]".into())
        );
    }

    #[test]
    fn a_reserved_workload_may_only_lower_its_counts() {
        let wl = |count: i64, reserved: bool| {
            json!({
                "spec": {"podSets": [{"name": "head", "count": count, "template": {}}]},
                "status": {"conditions": [{"type": "QuotaReserved", "status": if reserved { "True" } else { "False" }}]},
            })
        };
        assert_eq!(validate_workload(Some(&wl(2, true)), &wl(1, true)), Ok(()));
        assert_eq!(validate_workload(Some(&wl(1, false)), &wl(2, false)), Ok(()));
        assert_eq!(validate_workload(None, &wl(2, true)), Ok(()));
        assert_eq!(
            validate_workload(Some(&wl(1, true)), &wl(2, true)),
            Err(r#"spec.podSets.0: Invalid value: {"name":"head","count":2,"template":{}}: field is immutable"#.into())
        );
    }
}
