//! The `pods/{name}/binding` subresource and the scheduling-gate condition pods are created with.
//!
//! A scheduler binds a pod by POSTing a `Binding` (kube-apiserver's BindingREST): the pod gets
//! `spec.nodeName`, the Binding's annotations and a `PodScheduled=True` condition in one write.
//! A pod created with `spec.schedulingGates` starts with `PodScheduled=False` reason
//! `SchedulingGated` (the pod strategy's create step); the API server never clears it when the
//! gates go: the scheduler replaces it, by binding or by reporting the pod unschedulable.

use crate::error::{ApiError, ApiResult};
use crate::objects::{Write, put};
use crate::registry::ResourceType;
use crate::store::{ChangeKind, State, StoredObject};
use serde_json::{Value, json};
use std::sync::Arc;

/// Whether `rt` is core/v1 pods, the only resource with a `binding` subresource.
pub(crate) fn is_pods(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.plural == "pods"
}

/// The message kube-apiserver puts on the condition of a gated pod.
const SCHEDULING_GATED_MESSAGE: &str = "Scheduling is blocked due to non-empty scheduling gates";

/// On pod create: a pod with scheduling gates and no PodScheduled condition yet gets
/// `PodScheduled=False`, reason `SchedulingGated` (stamped `now` by podutil.UpdatePodCondition).
pub(crate) fn add_scheduling_gated_condition(pod: &mut Value, now: &str) {
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
    put(pod, &["status", "conditions"], Value::Array(conditions));
}

/// A 409 about the binding itself (upstream wraps its plain errors in a Conflict on
/// `pods/binding`).
fn binding_conflict(pod: &str, why: impl std::fmt::Display) -> ApiError {
    ApiError::conflict_because("", "pods/binding", pod, why)
}

/// A failed validation of the Binding: upstream returns the aggregated field errors as a plain
/// error, which the API reports as a 500 with no reason.
fn invalid_binding(messages: Vec<String>) -> ApiError {
    let message = if messages.len() == 1 { messages.concat() } else { format!("[{}]", messages.join(", ")) };
    ApiError { code: 500, reason: "", message, details: None }
}

/// Binds pod `name` in `ns` as the Binding `binding` says; the stored pod after the write.
pub(crate) fn bind(
    st: &mut State,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    binding: &Value,
    w: &Write,
) -> ApiResult<Arc<StoredObject>> {
    let kind = binding["kind"].as_str().unwrap_or_default();
    if !kind.is_empty() && kind != "Binding" {
        return Err(ApiError::bad_request(format!("not a Binding object: kind {kind:?}")));
    }
    let meta = &binding["metadata"];
    if meta["name"].as_str().unwrap_or_default() != name {
        return Err(ApiError::bad_request("name in URL does not match name in Binding object"));
    }
    if meta["namespace"].as_str().is_some_and(|n| !n.is_empty() && n != ns) {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let target_kind = binding["target"]["kind"].as_str().unwrap_or_default();
    let node = binding["target"]["name"].as_str().unwrap_or_default();
    let mut problems = Vec::new();
    if !target_kind.is_empty() && target_kind != "Node" {
        problems
            .push(format!("target.kind: Unsupported value: {target_kind:?}: supported values: \"Node\", \"<empty>\""));
    }
    if node.is_empty() {
        problems.push("target.name: Required value".to_string());
    }
    if !problems.is_empty() {
        return Err(invalid_binding(problems));
    }
    let old = st.get(rt.storage_key(), ns, name).ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
    if let Some(uid) = meta["uid"].as_str().filter(|u| !u.is_empty() && *u != old.uid) {
        return Err(ApiError::conflict_because(
            &rt.group,
            &rt.plural,
            name,
            format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {}", old.uid),
        ));
    }
    let current_rv = old.resource_version.to_string();
    if let Some(rv) = meta["resourceVersion"].as_str().filter(|rv| !rv.is_empty() && *rv != current_rv) {
        return Err(ApiError::conflict_because(
            &rt.group,
            &rt.plural,
            name,
            format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {current_rv}"
            ),
        ));
    }
    let mut pod = old.value();
    if old.deleting {
        return Err(binding_conflict(name, format!("pod {name} is being deleted, cannot be assigned to a host")));
    }
    if let Some(bound) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
        return Err(binding_conflict(name, format!("pod {name} is already assigned to node {bound:?}")));
    }
    if pod["spec"]["schedulingGates"].as_array().is_some_and(|g| !g.is_empty()) {
        return Err(binding_conflict(name, format!("pod {name} has non-empty .spec.schedulingGates")));
    }
    put(&mut pod, &["spec", "nodeName"], json!(node));
    if let Some(annotations) = meta["annotations"].as_object() {
        for (k, v) in annotations {
            put(&mut pod, &["metadata", "annotations", k], v.clone());
        }
    }
    set_scheduled(&mut pod, &crate::clock::format_time(w.now));
    if w.dry_run {
        return Ok(Arc::new(crate::store::preview(rt, &pod)));
    }
    Ok(st.commit(rt, ChangeKind::Modified, pod, Some(old), w.ctx, w.now))
}

/// `PodScheduled=True` as podutil.UpdatePodCondition writes it: the whole condition replaced
/// (reason and message go), the transition time kept only if the status did not change.
fn set_scheduled(pod: &mut Value, now: &str) {
    let mut conditions = pod["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let mut scheduled =
        json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
    match conditions.iter_mut().find(|c| c["type"] == "PodScheduled") {
        Some(c) => {
            if c["status"] == "True" {
                scheduled["lastTransitionTime"] = c["lastTransitionTime"].clone();
            }
            *c = scheduled;
        }
        None => conditions.push(scheduled),
    }
    put(pod, &["status", "conditions"], Value::Array(conditions));
}
