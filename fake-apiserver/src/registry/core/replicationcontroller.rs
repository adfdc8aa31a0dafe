//! ReplicationController: `SetDefaults_ReplicationController` (selector and labels from the
//! template's labels, one replica) and `ValidateReplicationController` (a non-empty map
//! selector that matches the template's labels, the template itself with `restartPolicy:
//! Always` and no `activeDeadlineSeconds`) and its status, as in kube-apiserver v1.37.2
//! (`pkg/apis/core/v1/defaults.go`, `pkg/apis/core/validation/validation.go`).

use crate::error::StatusCause;
use crate::registry::apps::workload::{go_labels_json, nonnegative, status_counters};
use crate::registry::core::pod_spec::{default_template, validate_template};
use crate::registry::field::{self, Bad, Path};
use crate::registry::{ResourceType, Strategy};
use serde_json::{Value, json};

/// core/v1 ReplicationController.
#[derive(Debug)]
pub(crate) struct ReplicationControllerStrategy;

impl Strategy for ReplicationControllerStrategy {
    // ValidateReplicationController: `ValidateObjectMetaWithOpts` (pkg/apis/core/validation).
    fn validates_generate_name(&self) -> bool {
        false
    }

    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        let labels = obj.pointer("/spec/template/metadata/labels").filter(|l| l.is_object()).cloned();
        if let Some(labels) = labels {
            let empty = |v: Option<&Value>| v.and_then(Value::as_object).is_none_or(|m| m.is_empty());
            if empty(obj.pointer("/spec/selector")) {
                obj["spec"]["selector"] = labels.clone();
            }
            if empty(obj.pointer("/metadata/labels")) {
                obj["metadata"]["labels"] = labels;
            }
        }
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            spec.entry("replicas").or_insert(json!(1));
        }
        default_template(obj);
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        validate_spec(obj)
    }

    fn validate_status_update(&self, _rt: &ResourceType, obj: &Value, _old: &Value) -> Vec<StatusCause> {
        let mut out = Vec::new();
        status_counters(
            &mut out,
            obj,
            &["replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"],
        );
        out
    }
}

/// `ValidateReplicationControllerSpec`.
fn validate_spec(obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::root("spec");
    nonnegative(&mut out, spec, "minReadySeconds", &path);
    let selector = spec.get("selector").and_then(Value::as_object).filter(|m| !m.is_empty());
    if selector.is_none() {
        out.push(field::required(&path.child("selector"), ""));
    }
    match spec.get("replicas") {
        None | Some(Value::Null) => out.push(field::required(&path.child("replicas"), "")),
        Some(_) => nonnegative(&mut out, spec, "replicas", &path),
    }
    let at = path.child("template");
    let Some(template) = spec.get("template").filter(|t| t.is_object()) else {
        out.push(field::required(&at, ""));
        return out;
    };
    let labels = template.pointer("/metadata/labels");
    if let Some(sel) = selector
        && !sel.iter().all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
    {
        out.push(field::invalid(
            &at.child("metadata").child("labels"),
            labels.map_or(Bad::Null, |l| Bad::Raw(go_labels_json(l))),
            "`selector` does not match template `labels`",
        ));
    }
    out.extend(validate_template(template, &at));
    let restart = template.pointer("/spec/restartPolicy").and_then(Value::as_str).unwrap_or("");
    if restart != "Always" {
        out.push(field::not_supported(&at.child("spec").child("restartPolicy"), restart, &["Always"]));
    }
    if template.pointer("/spec/activeDeadlineSeconds").is_some_and(|v| !v.is_null()) {
        out.push(field::forbidden(
            &at.child("spec").child("activeDeadlineSeconds"),
            "activeDeadlineSeconds in ReplicationController is not Supported",
        ));
    }
    out
}
