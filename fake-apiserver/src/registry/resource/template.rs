//! ResourceClaimTemplates (`ValidateResourceClaimTemplate`,
//! `ValidateResourceClaimTemplateUpdate` of pkg/apis/resource/validation/validation.go at
//! k8s.io/kubernetes v1.37.2): the claim metadata of the template (labels and annotations
//! only, `corevalidation.ValidateTemplateObjectMeta`) and a claim spec. An update validates
//! the new object as a create does and then the spec's immutability (the strategy's
//! `ValidateUpdate`), so a changed invalid spec reports both.

use super::causes::Causes;
use super::default_requests;
use super::device_claim::claim_spec;
use super::disabled_fields::drop_claim_spec_fields;
use crate::apiextensions::OBJECT_META_FIELDS;
use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use crate::registry::store::UpdateMode;
use crate::registry::{ResourceType, Strategy};
use apimachinery::validation::{label_key_errors, label_value_errors};
use serde_json::Value;

/// `TotalAnnotationSizeLimitB`.
const ANNOTATIONS_MAX: usize = 256 * 1024;

/// ResourceClaimTemplates.
#[derive(Debug)]
pub(crate) struct ResourceClaimTemplateStrategy;

impl Strategy for ResourceClaimTemplateStrategy {
    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value, _now: &str) {
        if let Some(spec) = obj.pointer_mut("/spec/spec") {
            drop_claim_spec_fields(spec, None);
        }
    }

    fn prepare_for_update(&self, _rt: &ResourceType, new: &mut Value, old: &Value, _mode: UpdateMode) {
        if let Some(spec) = new.pointer_mut("/spec/spec") {
            drop_claim_spec_fields(spec, old.pointer("/spec/spec"));
        }
    }

    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec").and_then(|s| s.get_mut("spec")) {
            default_requests(spec);
        }
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        template_causes(obj).into_vec()
    }

    /// The immutability error is handwritten: it follows the new object's handwritten errors
    /// and precedes its declarative ones.
    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut out = template_causes(obj);
        let (new, was) = (obj.get("spec").unwrap_or(&Value::Null), old.get("spec").unwrap_or(&Value::Null));
        if !apimachinery::json::semantically_equal(new, was) {
            out.push(field::invalid(&Path::root("spec"), Bad::Raw(new.to_string()), field::FIELD_IMMUTABLE));
        }
        out.into_vec()
    }
}

/// `ValidateResourceClaimTemplate`'s spec part: the template's metadata, then its claim spec.
fn template_causes(obj: &Value) -> Causes {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::root("spec");
    let mut out = Causes::default();
    out.extend(template_meta(spec.get("metadata").unwrap_or(&Value::Null), &path.child("metadata")));
    out.append(claim_spec(spec.get("spec").unwrap_or(&Value::Null), &path.child("spec")));
    out
}

/// `ValidateTemplateObjectMeta`: annotations, labels, and nothing else set.
fn template_meta(meta: &Value, path: &Path) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let apath = path.child("annotations");
    if let Some(annotations) = meta.get("annotations").and_then(Value::as_object) {
        let mut total = 0;
        for (k, v) in annotations {
            out.extend(label_key_errors(&k.to_lowercase()).iter().map(|m| field::invalid(&apath, k.as_str(), m)));
            total += k.len() + v.as_str().map_or(0, str::len);
        }
        if total > ANNOTATIONS_MAX {
            out.push(field::too_long(&apath, ANNOTATIONS_MAX));
        }
    }
    let lpath = path.child("labels");
    if let Some(labels) = meta.get("labels").and_then(Value::as_object) {
        for (k, v) in labels {
            out.extend(label_key_errors(k).iter().map(|m| field::invalid(&lpath, k.as_str(), m)));
            let v = v.as_str().unwrap_or_default();
            out.extend(label_value_errors(v).iter().map(|m| field::invalid(&lpath, v, m)));
        }
    }
    // The fields of ObjectMeta besides labels and annotations, in Go's field order: a template
    // may not set them.
    for &key in OBJECT_META_FIELDS.iter().filter(|f| !matches!(**f, "labels" | "annotations")) {
        let set = match meta.get(key) {
            None | Some(Value::Null) => false,
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Number(n)) => n.as_f64() != Some(0.0),
            Some(_) => true,
        };
        if set {
            out.push(field::forbidden(&path.child(key), "cannot be set"));
        }
    }
    out
}
