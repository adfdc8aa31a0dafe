//! Pods: defaults and validation of the spec (`core::pod_spec`), which spec fields an update
//! may change, status rules, status on create (phase, QoS class, the scheduling-gate
//! condition), graceful deletion, the `binding` subresource and kubectl's columns.

use super::pod_annotations::pod_annotation_updates;
use super::pod_label_keys::merge_label_keys;
use super::pod_security::{SysctlOptions, has_host_sysctl_violation};
use super::pod_spec::{SpecOf, SpecOptions, default_pod_spec, tolerations, validate_pod};
use super::pod_status::{carry_over_status, validate_status_update};
use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use crate::registry::printers::{age_col, col, human_duration, int, name_col, or_none, since};
use crate::registry::store::UpdateMode;
use crate::registry::{ResourceType, Strategy};
use crate::storage::Subresource;
use apimachinery::unstructured::{nested_field_at, set_nested_field};
use jiff::Timestamp;
use serde_json::{Value, json};

/// The message kube-apiserver puts on the condition of a gated pod.
const SCHEDULING_GATED_MESSAGE: &str = "Scheduling is blocked due to non-empty scheduling gates";

/// core/v1 Pod.
#[derive(Debug)]
pub(crate) struct PodStrategy;

/// The spec fields a pod update may change (`ValidatePodUpdate`); images are compared apart, and
/// `terminationGracePeriodSeconds` may only go from a negative value to 1 ([`munged_update`]).
const MUTABLE_SPEC: &[&str] = &["activeDeadlineSeconds", "schedulingGates", "tolerations"];

/// The spec with what an update may change taken out.
fn munged_spec(pod: &Value) -> Value {
    let mut spec = pod.get("spec").cloned().unwrap_or(Value::Null);
    if let Some(m) = spec.as_object_mut() {
        m.retain(|k, _| !MUTABLE_SPEC.contains(&k.as_str()));
        for key in ["containers", "initContainers"] {
            for c in m.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(c) = c.as_object_mut() {
                    c.remove("image");
                }
            }
        }
    }
    spec
}

/// `validateOnlyAddedTolerations`: every old toleration is still there (its
/// `tolerationSeconds` may change); then the new tolerations are validated again. The real
/// server reports a bad new toleration once (measured), so what the spec's own validation
/// already reported is not repeated.
fn only_added_tolerations(out: &mut Vec<StatusCause>, new: &Value, old: &Value) {
    let list = |p: &Value| p.pointer("/spec/tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
    let same = |a: &Value, b: &Value| {
        ["key", "operator", "value", "effect"].iter().all(|k| {
            a.get(*k).and_then(Value::as_str).unwrap_or_default()
                == b.get(*k).and_then(Value::as_str).unwrap_or_default()
        })
    };
    let path = Path::root("spec").child("tolerations");
    let new_list = list(new);
    if !list(old).iter().all(|o| new_list.iter().any(|n| same(o, n))) {
        out.push(field::forbidden(&path, "existing toleration can not be modified except its tolerationSeconds"));
        return;
    }
    let mut again = Vec::new();
    tolerations(&mut again, new.get("spec").unwrap_or(&Value::Null), &path);
    again.retain(|c| !out.contains(c));
    out.extend(again);
}

/// The new spec munged as `ValidatePodUpdate` munges it: what may change taken out, and
/// `terminationGracePeriodSeconds` set to the old value when it went from negative to 1 (the
/// one change of it allowed; any other is forbidden, e.g. a JSON patch making it negative,
/// https://github.com/kubernetes/kubernetes/blob/v1.37.2/pkg/apis/core/validation/validation.go).
fn munged_update(pod: &Value, old: &Value) -> Value {
    let mut spec = munged_spec(pod);
    let grace = |p: &Value| p.pointer("/spec/terminationGracePeriodSeconds").and_then(Value::as_i64);
    if grace(old).is_some_and(|g| g < 0)
        && grace(pod) == Some(1)
        && let Some(m) = spec.as_object_mut()
    {
        m.insert("terminationGracePeriodSeconds".into(), old["spec"]["terminationGracePeriodSeconds"].clone());
    }
    spec
}

impl Strategy for PodStrategy {
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec") {
            default_pod_spec(spec, SpecOf::Pod);
        }
    }

    /// `ValidatePodCreate`.
    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        validate_pod(obj, SpecOptions::new(SpecOf::Pod), true)
    }

    /// `ValidatePodUpdate`: the whole new pod (validatePodMetadataAndSpec), then what may
    /// change.
    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        // An old pod that already broke the host sysctl rule may keep doing so.
        let old_spec = old.get("spec").unwrap_or(&Value::Null);
        let sysctls = SysctlOptions { allow_namespaced_with_host: has_host_sysctl_violation(old_spec) };
        let mut out = validate_pod(obj, SpecOptions { of: SpecOf::Pod, sysctls }, false);
        pod_annotation_updates(&mut out, obj, old, &Path::root("metadata").child("annotations"));
        // `ValidateContainerUpdates`: a changed number of containers, then of init containers,
        // is the one error about what changed.
        for list in ["containers", "initContainers"] {
            let count = |v: &Value| v["spec"][list].as_array().map_or(0, Vec::len);
            if count(obj) != count(old) {
                out.push(field::forbidden(
                    &Path::root("spec").child(list),
                    "pod updates may not add or remove containers",
                ));
                return out;
            }
        }
        // The active deadline may be set, or lowered, but not raised nor removed; a bad one ends
        // the validation.
        let deadline = |p: &Value| p.pointer("/spec/activeDeadlineSeconds").filter(|v| !v.is_null()).cloned();
        let at = Path::root("spec").child("activeDeadlineSeconds");
        match (deadline(obj), deadline(old)) {
            (Some(new), old_deadline) => {
                let n = new.as_i64().unwrap_or(0);
                if !(0..=i64::from(i32::MAX)).contains(&n) {
                    out.push(field::invalid(&at, n, "must be between 0 and 2147483647, inclusive"));
                    return out;
                }
                if old_deadline.and_then(|o| o.as_i64()).is_some_and(|o| o < n) {
                    out.push(field::invalid(&at, n, "must be less than or equal to previous value"));
                    return out;
                }
            }
            (None, Some(_)) => {
                out.push(field::invalid(&at, field::Bad::Null, "must not update from a positive integer to nil value"));
            }
            (None, None) => {}
        }
        only_added_tolerations(&mut out, obj, old);
        // `validateOnlyDeletedSchedulingGates`: an update may only remove gates.
        let names = |v: &Value| -> Vec<String> {
            v["spec"]["schedulingGates"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|g| g["name"].as_str().unwrap_or_default().to_string())
                .collect()
        };
        let old_gates = names(old);
        for (i, gate) in names(obj).iter().enumerate() {
            if !old_gates.contains(gate) {
                out.push(field::forbidden(
                    &Path::root("spec").child("schedulingGates").index(i).child("name"),
                    &format!("only deletion is allowed, but found new scheduling gate '{gate}'"),
                ));
            }
        }
        if munged_update(obj, old) != munged_spec(old) {
            out.push(field::forbidden(
                &Path::root("spec"),
                "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
            ));
        }
        out
    }

    fn prepare_for_update(&self, _rt: &ResourceType, new: &mut Value, old: &Value, mode: UpdateMode) {
        if matches!(mode, UpdateMode::Status) {
            carry_over_status(new, old);
        }
    }

    fn validate_status_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        validate_status_update(obj, old)
    }

    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value, now: &str) {
        let qos = pod_qos(obj);
        set_nested_field(obj, &["status"], json!({"phase": "Pending", "qosClass": qos}));
        add_scheduling_gated_condition(obj, now);
        merge_label_keys(obj);
    }

    /// Pods bound to a node and not finished get a grace period for the kubelet (the
    /// requested one, else `terminationGracePeriodSeconds`, else 30 s); others go at once.
    fn deletion_grace_period(&self, obj: &Value, requested: Option<i64>) -> Option<i64> {
        let text = |path: &str| nested_field_at(obj, path).and_then(Value::as_str).unwrap_or_default();
        let phase = text("status.phase");
        if text("spec.nodeName").is_empty() || phase == "Succeeded" || phase == "Failed" {
            return Some(0);
        }
        let default = obj["spec"]["terminationGracePeriodSeconds"].as_i64().unwrap_or(30);
        Some(requested.unwrap_or(default).max(0))
    }

    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Binding]
    }

    fn table_columns(&self, _rt: &ResourceType) -> Vec<Value> {
        vec![
            name_col(),
            col("Ready", "string", "", 0, "Ready containers out of all containers."),
            col("Status", "string", "", 0, "The aggregate status of the pod's containers."),
            col("Restarts", "string", "", 0, "Container restarts, and how long ago the last one was."),
            age_col(),
            col("IP", "string", "", 1, "The pod's IP address."),
            col("Node", "string", "", 1, "The node the pod is bound to."),
            col("Nominated Node", "string", "", 1, "The node the scheduler nominated for preemption."),
            col("Readiness Gates", "string", "", 1, "Readiness gates that are true out of all."),
        ]
    }

    fn table_cells(&self, _rt: &ResourceType, obj: &Value, now: Timestamp) -> Vec<Value> {
        pod_cells(obj, now)
    }
}

/// Pod QoS class from requests and limits (as kubelet/apiserver compute it).
fn pod_qos(pod: &Value) -> &'static str {
    let containers: Vec<&Value> =
        ["containers", "initContainers"].iter().filter_map(|k| pod["spec"][k].as_array()).flatten().collect();
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for c in containers {
        let req = &c["resources"]["requests"];
        let lim = &c["resources"]["limits"];
        for res in ["cpu", "memory"] {
            let (r, l) = (req.get(res), lim.get(res));
            any |= r.is_some() || l.is_some();
            if l.is_none() || (r.is_some() && r != l) {
                guaranteed = false;
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// A pod with scheduling gates and no PodScheduled condition yet gets `PodScheduled=False`,
/// reason `SchedulingGated` (stamped `now` by podutil.UpdatePodCondition). The API server
/// never clears it when the gates go: the scheduler replaces it, by binding or by reporting
/// the pod unschedulable.
fn add_scheduling_gated_condition(pod: &mut Value, now: &str) {
    let gated = pod["spec"]["schedulingGates"].as_array().is_some_and(|g| !g.is_empty());
    if !gated {
        return;
    }
    let conditions = pod["status"]["conditions"].as_array().cloned().unwrap_or_default();
    if conditions.iter().any(|c| c["type"] == "PodScheduled") {
        return;
    }
    let mut conditions = conditions;
    conditions.push(json!({
        "type": "PodScheduled",
        "status": "False",
        "lastProbeTime": null,
        "lastTransitionTime": now,
        "reason": "SchedulingGated",
        "message": SCHEDULING_GATED_MESSAGE,
    }));
    set_nested_field(pod, &["status", "conditions"], Value::Array(conditions));
}

fn pod_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let status = &o["status"];
    let restartable_init =
        spec["initContainers"].as_array().into_iter().flatten().filter(|c| c["restartPolicy"] == "Always").count();
    let total = spec["containers"].as_array().map_or(0, Vec::len) + restartable_init;
    let mut reason = status["phase"].as_str().unwrap_or_default().to_string();
    if let Some(r) = status["reason"].as_str().filter(|r| !r.is_empty()) {
        reason = r.to_string();
    }
    let mut ready = 0;
    let mut restarts = 0;
    let mut last_restart: Option<Timestamp> = None;
    let mut running = false;
    let statuses = status["containerStatuses"].as_array().cloned().unwrap_or_default();
    for cs in statuses.iter().rev() {
        restarts += int(&cs["restartCount"]);
        if let Some(t) = cs["lastState"]["terminated"]["finishedAt"].as_str().and_then(|s| s.parse::<Timestamp>().ok())
        {
            last_restart = Some(last_restart.map_or(t, |l| l.max(t)));
        }
        let state = &cs["state"];
        if let Some(w) = state["waiting"]["reason"].as_str().filter(|r| !r.is_empty()) {
            reason = w.to_string();
        } else if let Some(t) = state["terminated"].as_object() {
            reason = match t.get("reason").and_then(Value::as_str).filter(|r| !r.is_empty()) {
                Some(r) => r.to_string(),
                None => match t.get("signal").and_then(Value::as_i64).filter(|s| *s != 0) {
                    Some(s) => format!("Signal:{s}"),
                    None => format!("ExitCode:{}", t.get("exitCode").and_then(Value::as_i64).unwrap_or(0)),
                },
            };
        } else if state["running"].is_object() && cs["ready"] == true {
            running = true;
            ready += 1;
        } else if state["running"].is_object() {
            running = true;
        }
    }
    let pod_ready =
        status["conditions"].as_array().into_iter().flatten().any(|c| c["type"] == "Ready" && c["status"] == "True");
    if reason == "Completed" && running {
        reason = if pod_ready { "Running".into() } else { "NotReady".into() };
    }
    if o["metadata"]["deletionTimestamp"].is_string() {
        reason = if status["reason"] == "NodeLost" { "Unknown".into() } else { "Terminating".into() };
    }
    let restarts_text = match last_restart {
        Some(t) => format!("{restarts} ({} ago)", human_duration(now.duration_since(t).as_secs())),
        None => restarts.to_string(),
    };
    let gates = spec["readinessGates"].as_array().cloned().unwrap_or_default();
    let gates_text = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
        let true_count = gates
            .iter()
            .filter(|g| conditions.iter().any(|c| c["type"] == g["conditionType"] && c["status"] == "True"))
            .count();
        format!("{true_count}/{}", gates.len())
    };
    vec![
        json!(o["metadata"]["name"]),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts_text),
        json!(since(&o["metadata"]["creationTimestamp"], now)),
        json!(or_none(status["podIP"].as_str())),
        json!(or_none(spec["nodeName"].as_str())),
        json!(or_none(status["nominatedNodeName"].as_str())),
        json!(gates_text),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_update_that_adds_a_container_is_told_so_at_the_list() {
        let rt = crate::registry::Registry::builtin(Default::default(), Default::default())
            .get("", "v1", "pods")
            .expect("pods are served");
        let pod = |containers: Value| {
            let mut p = json!({"metadata": {"name": "p"}, "spec": {"containers": containers}});
            PodStrategy.default(&rt, &mut p);
            p
        };
        let old = pod(json!([{"name": "a", "image": "i"}]));
        let new = pod(json!([{"name": "a", "image": "i"}, {"name": "b", "image": "i"}]));
        let causes = PodStrategy.validate_update(&rt, &new, &old);
        let fields: Vec<(&str, &str)> = causes.iter().map(|c| (c.field.as_str(), c.message.as_str())).collect();
        assert_eq!(fields, [("spec.containers", "Forbidden: pod updates may not add or remove containers")]);
        // The same count with another image is only the image's change.
        let retagged = pod(json!([{"name": "a", "image": "j"}]));
        assert!(PodStrategy.validate_update(&rt, &retagged, &old).is_empty());
    }
}
