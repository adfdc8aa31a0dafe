//! ObjectMeta as the generic store handles it: the shapes and rules of `metadata`, conditions,
//! finalizers, and the finalizers a DELETE adds for its propagation policy.

use super::field::{self, Path};
use crate::error::{ApiError, ApiResult, StatusCause};
use apimachinery::go::quote;
use apimachinery::unstructured::{nested_field_at, set_nested_field};
use apimachinery::validation::{label_key_errors, label_value_errors};
use serde_json::{Map, Value, json};

/// `metadata` of a body, made an object when absent or null (400 when it is something else).
pub(crate) fn meta_mut(obj: &mut Value) -> ApiResult<&mut Map<String, Value>> {
    let o =
        obj.as_object_mut().ok_or_else(|| ApiError::bad_request("the body of the request must be a JSON object"))?;
    let m = o.entry("metadata").or_insert_with(|| json!({}));
    if m.is_null() {
        *m = json!({});
    }
    m.as_object_mut().ok_or_else(|| ApiError::bad_request("metadata must be an object"))
}

/// The string at a dotted path, empty when absent.
pub(crate) fn str_field<'a>(obj: &'a Value, path: &str) -> &'a str {
    nested_field_at(obj, path).and_then(Value::as_str).unwrap_or_default()
}

/// The strings of a JSON list (other entries skipped); empty when it is not a list.
pub(crate) fn string_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// `ValidateLabels` (part of `ValidateObjectMeta`): every key a qualified name, every value a
/// label value, each failure a `FieldValueInvalid` cause on `metadata.labels`.
pub(crate) fn label_causes(labels: Option<&Value>) -> Vec<StatusCause> {
    let Some(Value::Object(labels)) = labels else { return Vec::new() };
    let mut causes = Vec::new();
    let invalid = |value: &str, msg: String| {
        StatusCause::field("FieldValueInvalid", "metadata.labels", format!("Invalid value: {}: {msg}", quote(value)))
    };
    for (key, value) in labels {
        causes.extend(label_key_errors(key).into_iter().map(|m| invalid(key, m)));
        let value = value.as_str().unwrap_or_default();
        causes.extend(label_value_errors(value).into_iter().map(|m| invalid(value, m)));
    }
    causes
}

/// The most bytes all annotations of an object may hold together (`TotalAnnotationSizeLimitB`).
const TOTAL_ANNOTATION_SIZE: usize = 256 * 1024;

/// `ValidateObjectMeta` beyond the name: labels, annotations (qualified keys, 256 KiB in
/// all), owner references (apiVersion, kind, name, uid) and finalizers (qualified names).
pub(crate) fn object_meta_causes(meta: &Map<String, Value>, _namespaced: bool) -> Vec<StatusCause> {
    let mut causes = label_causes(meta.get("labels"));
    let path = Path::root("metadata");
    if let Some(Value::Object(annotations)) = meta.get("annotations") {
        let at = path.child("annotations");
        let mut total = 0;
        for (k, v) in annotations {
            for msg in label_key_errors(&k.to_lowercase()) {
                causes.push(field::invalid(&at, k.as_str(), &msg));
            }
            total += k.len() + v.as_str().map_or(0, str::len);
        }
        if total > TOTAL_ANNOTATION_SIZE {
            causes.push(field::too_long(&at, TOTAL_ANNOTATION_SIZE));
        }
    }
    if let Some(Value::Array(refs)) = meta.get("ownerReferences") {
        let at = path.child("ownerReferences");
        // validateOwnerReference (apimachinery v0.37.2 pkg/api/validation/objectmeta.go).
        for (i, r) in refs.iter().enumerate() {
            let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
            let api_version = text("apiVersion");
            // schema.ParseGroupVersion: `<version>` or `<group>/<version>`, nothing more.
            let version = match api_version.split('/').collect::<Vec<_>>()[..] {
                [v] | [_, v] => Some(v),
                _ => None,
            };
            if api_version.is_empty() {
                causes.push(field::required(&at.index(i).child("apiVersion"), "must not be empty"));
            } else if version.is_none_or(str::is_empty) {
                causes.push(field::invalid(
                    &at.index(i).child("apiVersion"),
                    api_version,
                    "must be <group>/<version> or <version>",
                ));
            }
            for k in ["kind", "name", "uid"] {
                if text(k).is_empty() {
                    causes.push(field::required(&at.index(i).child(k), "must not be empty"));
                }
            }
            // BannedOwners: a core Event owns nothing.
            if api_version == "v1" && text("kind") == "Event" {
                causes.push(field::invalid(
                    &at.index(i),
                    field::Bad::Raw(go_owner_reference(r).to_string()),
                    "/v1, Kind=Event is disallowed from being an owner",
                ));
            }
            causes.extend(second_controller(refs, i, &at));
        }
    }
    if let Some(Value::Array(finalizers)) = meta.get("finalizers") {
        let at = path.child("finalizers");
        for f in finalizers.iter().filter_map(Value::as_str) {
            for msg in label_key_errors(f) {
                causes.push(field::invalid(&at, f, &msg));
            }
        }
        // ValidateFinalizers: the two propagation finalizers exclude each other.
        let has = |f: &str| finalizers.iter().any(|x| x == f);
        if has(ORPHAN_FINALIZER) && has(FOREGROUND_FINALIZER) {
            causes.push(field::invalid(
                &at,
                field::Bad::of(&Value::Array(finalizers.clone())),
                &format!("finalizer {ORPHAN_FINALIZER} and {FOREGROUND_FINALIZER} cannot be both set"),
            ));
        }
    }
    causes
}

/// `ValidateOwnerReferences`' rule that at most one owner is the controller: the reference at
/// `i`, when it is a controller after the first, is reported with the whole list (printed as
/// Go encodes `[]metav1.OwnerReference`).
/// An owner reference as Go encodes `metav1.OwnerReference` (its fields in order, the pointers
/// left out when nil).
fn go_owner_reference(r: &Value) -> Value {
    let mut m = Map::new();
    for k in ["apiVersion", "kind", "name", "uid"] {
        m.insert(k.into(), r.get(k).cloned().unwrap_or_else(|| json!("")));
    }
    for k in ["controller", "blockOwnerDeletion"] {
        if let Some(v) = r.get(k).filter(|v| !v.is_null()) {
            m.insert(k.into(), v.clone());
        }
    }
    Value::Object(m)
}

fn second_controller(refs: &[Value], i: usize, at: &Path) -> Option<StatusCause> {
    let is_controller = |r: &Value| r.get("controller") == Some(&Value::Bool(true));
    let name = |r: &Value| {
        let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
        format!("{}/{}", text("kind"), text("name"))
    };
    let first = refs[..i].iter().find(|r| is_controller(r))?;
    if !is_controller(&refs[i]) {
        return None;
    }
    let go_order = refs.iter().map(go_owner_reference);
    Some(field::invalid(
        at,
        field::Bad::Raw(Value::Array(go_order.collect()).to_string()),
        &format!(
            "Only one reference can have Controller set to true. Found \"true\" in references for {} and {}",
            name(first),
            name(&refs[i])
        ),
    ))
}

/// `ValidateNonnegativeField` of `metadata.generation`, on create and on update.
pub(crate) fn generation_causes(meta: &Map<String, Value>) -> Vec<StatusCause> {
    match meta.get("generation").and_then(Value::as_i64) {
        Some(g) if g < 0 => {
            vec![field::invalid(&Path::root("metadata").child("generation"), g, "must be greater than or equal to 0")]
        }
        _ => Vec::new(),
    }
}

/// `metav1validation.ValidateLabelSelector`: labels of `matchLabels`, each requirement of
/// `matchExpressions` (operator, values for it, key, values as label values).
pub(crate) fn label_selector_causes(sel: &Value, path: &Path) -> Vec<StatusCause> {
    let mut out = validate_label_selector(sel, path);
    // `LabelSelectorAsSelector` fails on the same input: the caller reports that as well.
    if !out.is_empty() {
        out.push(field::invalid(path, field::Bad::Raw(sel.to_string()), "invalid label selector"));
    }
    out
}

/// `metav1validation.ValidateLabelSelector` alone (no conversion afterwards): what pod affinity
/// terms and topology spread constraints report of their selectors.
pub(crate) fn validate_label_selector(sel: &Value, path: &Path) -> Vec<StatusCause> {
    let mut out = Vec::new();
    if let Some(Value::Object(m)) = sel.get("matchLabels") {
        let at = path.child("matchLabels");
        for (k, v) in m {
            for msg in label_key_errors(k) {
                out.push(field::invalid(&at, k.as_str(), &msg));
            }
            let v = v.as_str().unwrap_or_default();
            for msg in label_value_errors(v) {
                out.push(field::invalid(&at, v, &msg));
            }
        }
    }
    for (i, e) in sel.get("matchExpressions").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = path.child("matchExpressions").index(i);
        let op = e.get("operator").and_then(Value::as_str).unwrap_or_default();
        let values: Vec<&str> =
            e.get("values").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        match op {
            "In" | "NotIn" => {
                if values.is_empty() {
                    out.push(field::required(
                        &at.child("values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    out.push(field::forbidden(
                        &at.child("values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => out.push(field::invalid(&at.child("operator"), other, "not a valid selector operator")),
        }
        let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
        for msg in label_key_errors(key) {
            out.push(field::invalid(&at.child("key"), key, &msg));
        }
        for (j, v) in values.iter().enumerate() {
            for msg in label_value_errors(v) {
                out.push(field::invalid(&at.child("values").index(j), *v, &msg));
            }
        }
    }
    out
}

/// Adds finalizer `f` unless it is there.
pub(crate) fn add_finalizer(obj: &mut Value, f: &str) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    let list = meta.entry("finalizers").or_insert(Value::Null);
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(a) = list.as_array_mut()
        && !a.iter().any(|x| x == f)
    {
        a.push(Value::String(f.into()));
    }
}

/// A random (version 4) UUID: `xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx`.
pub(crate) fn new_uid() -> String {
    use rand::Rng;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let b: [u8; 16] = rand::rng().random();
    let mut h = [0u8; 32];
    for (i, x) in b.iter().enumerate() {
        h[2 * i] = HEX[usize::from(x >> 4)];
        h[2 * i + 1] = HEX[usize::from(x & 15)];
    }
    let mut out = [0u8; 36];
    out[0..8].copy_from_slice(&h[0..8]);
    out[8] = b'-';
    out[9..13].copy_from_slice(&h[8..12]);
    out[13] = b'-';
    out[14] = b'4';
    out[15..18].copy_from_slice(&h[13..16]);
    out[18] = b'-';
    out[19] = b"89ab"[usize::from(b[8] & 3)];
    out[20..23].copy_from_slice(&h[17..20]);
    out[23] = b'-';
    out[24..36].copy_from_slice(&h[20..32]);
    out.iter().map(|&c| char::from(c)).collect()
}

/// Sets condition `type_` in `status.conditions` as controllers do: a change of status
/// replaces it (new transition time), the same status only updates reason and message.
pub(crate) fn set_condition(obj: &mut Value, type_: &str, status: &str, reason: &str, message: &str, now: &str) {
    if !nested_field_at(obj, "status.conditions").is_some_and(Value::is_array) {
        set_nested_field(obj, &["status", "conditions"], json!([]));
    }
    let Some(list) = obj.get_mut("status").and_then(|s| s.get_mut("conditions")).and_then(Value::as_array_mut) else {
        return;
    };
    let cond =
        json!({"type": type_, "status": status, "lastTransitionTime": now, "reason": reason, "message": message});
    match list.iter_mut().find(|c| c["type"] == type_) {
        Some(c) if c["status"] == status => {
            set_nested_field(c, &["reason"], json!(reason));
            set_nested_field(c, &["message"], json!(message));
        }
        Some(c) => *c = cond,
        None => list.push(cond),
    }
}

/// Finalizer that makes the garbage collector strip the owner's references from its
/// dependents before the owner goes (propagation policy `Orphan`).
pub(crate) const ORPHAN_FINALIZER: &str = "orphan";
/// Finalizer that keeps an owner until its blocking dependents are gone (policy `Foreground`).
pub(crate) const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// The finalizers an object should have after a DELETE, when they differ from the ones it has
/// (`deletionFinalizersForGarbageCollection`): the explicit policy wins (`orphan_dependents`,
/// then `propagation_policy`), then an `orphan` or `foregroundDeletion` finalizer already
/// there, then the kind's default.
pub(crate) fn deletion_finalizers(
    finalizers: &[String],
    orphan_dependents: Option<bool>,
    propagation_policy: Option<&str>,
    orphans_by_default: bool,
) -> Option<Vec<String>> {
    let existing = finalizers.iter().find_map(|f| match f.as_str() {
        ORPHAN_FINALIZER => Some(true),
        FOREGROUND_FINALIZER => Some(false),
        _ => None,
    });
    let orphan = match (orphan_dependents, propagation_policy) {
        (Some(o), _) => o,
        (None, Some(p)) => p == "Orphan",
        (None, None) => existing.unwrap_or(orphans_by_default),
    };
    let foreground = match (orphan_dependents, propagation_policy) {
        (Some(_), _) => false,
        (None, Some(p)) => p == "Foreground",
        (None, None) => existing == Some(false),
    };
    let mut out: Vec<String> =
        finalizers.iter().filter(|f| *f != ORPHAN_FINALIZER && *f != FOREGROUND_FINALIZER).cloned().collect();
    if orphan {
        out.push(ORPHAN_FINALIZER.into());
    }
    if foreground {
        out.push(FOREGROUND_FINALIZER.into());
    }
    let same = out.len() == finalizers.len() && out.iter().all(|f| finalizers.contains(f));
    (!same).then_some(out)
}

/// `metav1validation.ValidateConditions` (k8s.io/apimachinery v0.37.2
/// pkg/apis/meta/v1/validation/validation.go): unique types, and each condition's type (a
/// qualified name), status, observed generation, transition time, reason and message.
pub(crate) fn condition_causes(conditions: &[Value], path: &Path) -> Vec<StatusCause> {
    const STATUSES: [&str; 3] = ["False", "True", "Unknown"];
    const REASON_MAX: usize = 1024;
    const MESSAGE_MAX: usize = 32 * 1024;
    let mut out = Vec::new();
    let mut types = std::collections::BTreeSet::new();
    for (i, c) in conditions.iter().enumerate() {
        let at = path.index(i);
        let text = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
        let type_ = text("type");
        if !types.insert(type_) {
            out.push(field::duplicate(&at, type_));
        }
        if type_.is_empty() {
            out.push(field::required(&at.child("type"), "is required"));
        } else {
            out.extend(label_key_errors(type_).iter().map(|m| field::invalid(&at.child("type"), type_, m)));
        }
        let status = text("status");
        if status.is_empty() {
            out.push(field::required(&at.child("status"), ""));
        } else if !STATUSES.contains(&status) {
            out.push(field::not_supported(&at.child("status"), status, &STATUSES));
        }
        if let Some(g) = c.get("observedGeneration").and_then(Value::as_i64).filter(|g| *g < 0) {
            out.push(field::invalid(&at.child("observedGeneration"), g, "must be greater than or equal to zero"));
        }
        // Go's zero time: absent, null or the zero instant.
        if matches!(text("lastTransitionTime"), "" | "0001-01-01T00:00:00Z") {
            out.push(field::required(&at.child("lastTransitionTime"), ""));
        }
        let reason = text("reason");
        if reason.is_empty() {
            out.push(field::required(&at.child("reason"), ""));
        } else {
            out.extend(
                apimachinery::validation::condition_reason_errors(reason)
                    .iter()
                    .map(|m| field::invalid(&at.child("reason"), reason, m)),
            );
            if reason.len() > REASON_MAX {
                out.push(field::too_long(&at.child("reason"), REASON_MAX));
            }
        }
        if text("message").len() > MESSAGE_MAX {
            out.push(field::too_long(&at.child("message"), MESSAGE_MAX));
        }
    }
    out
}
