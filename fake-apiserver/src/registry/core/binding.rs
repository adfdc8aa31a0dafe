//! The `pods/{name}/binding` subresource: a scheduler binds a pod by POSTing a `Binding`
//! (kube-apiserver's BindingREST); the pod gets `spec.nodeName`, the Binding's annotations and
//! a `PodScheduled=True` condition in one write. The older `bindings` resource does the same
//! for the pod the Binding names.

use crate::error::{ApiError, ApiResult};
use crate::registry::store::Write;
use crate::registry::{ResourceType, State};
use crate::storage::{ChangeKind, StoredObject};
use apimachinery::unstructured::set_nested_field;
use serde_json::{Value, json};
use std::sync::Arc;

/// The `bindings` resource: create only; the handler binds the pod the body names.
#[derive(Debug)]
pub(crate) struct BindingsStrategy;

impl crate::registry::Strategy for BindingsStrategy {
    fn create_only(&self) -> bool {
        true
    }
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
    let old =
        st.store.get(rt.storage_key(), ns, name).ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
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
    set_nested_field(&mut pod, &["spec", "nodeName"], json!(node));
    if let Some(annotations) = meta["annotations"].as_object() {
        for (k, v) in annotations {
            set_nested_field(&mut pod, &["metadata", "annotations", k], v.clone());
        }
    }
    set_scheduled(&mut pod, &w.time());
    w.persist(st, rt, ChangeKind::Modified, pod)
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
    set_nested_field(pod, &["status", "conditions"], Value::Array(conditions));
}
