//! A StatefulSet's `spec.volumeClaimTemplates`, each validated as a new claim's spec
//! (kube-apiserver v1.37.2 `pkg/apis/apps/validation/validation.go`
//! `validateVolumeClaimTemplates`, which calls `pkg/apis/core/validation/validation.go`
//! `ValidatePersistentVolumeClaimSpec` with `ValidationOptionsForPersistentVolumeClaimCreate`;
//! VolumeAttributesClass is GA).

use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use crate::registry::meta::validate_label_selector;
use apimachinery::quantity::Quantity;
use apimachinery::validation::{dns1123_label_errors, dns1123_subdomain_errors};
use serde_json::Value;

/// `supportedAccessModes`, as `sets.List` sorts them.
const ACCESS_MODES: &[&str] = &["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"];
/// `supportedVolumeModes`.
const VOLUME_MODES: &[&str] = &["Block", "Filesystem"];

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// `validateVolumeClaimTemplates` of `spec.volumeClaimTemplates` at `path`.
pub(crate) fn validate_volume_claim_templates(templates: &Value, path: &Path) -> Vec<StatusCause> {
    let mut out = Vec::new();
    for (i, t) in templates.as_array().into_iter().flatten().enumerate() {
        claim_spec(&mut out, t.get("spec").unwrap_or(&Value::Null), &path.index(i).child("spec"));
    }
    out
}

/// `ValidateClassName`: a DNS subdomain.
fn class_name(out: &mut Vec<StatusCause>, spec: &Value, key: &str, path: &Path) {
    let name = text(spec, key);
    if !name.is_empty() {
        for msg in dns1123_subdomain_errors(name) {
            out.push(field::invalid(&path.child(key), name, &msg));
        }
    }
}

/// `ValidatePersistentVolumeClaimSpec`.
fn claim_spec(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) {
    let modes: Vec<&str> =
        spec.get("accessModes").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let modes_path = path.child("accessModes");
    if modes.is_empty() {
        out.push(field::required(&modes_path, "at least 1 access mode is required"));
    }
    if let Some(sel) = spec.get("selector").filter(|s| !s.is_null()) {
        out.extend(validate_label_selector(sel, &path.child("selector")));
    }
    let (mut once_pod, mut other) = (false, false);
    for mode in &modes {
        if !ACCESS_MODES.contains(mode) {
            out.push(field::not_supported(&modes_path, *mode, ACCESS_MODES));
        }
        if *mode == "ReadWriteOncePod" {
            once_pod = true;
        } else if ACCESS_MODES.contains(mode) {
            other = true;
        }
    }
    if once_pod && other {
        out.push(field::forbidden(&modes_path, "may not use ReadWriteOncePod with other access modes"));
    }
    let storage_path = path.child("resources").key("storage");
    match spec.pointer("/resources/requests/storage") {
        None => out.push(field::required(&storage_path, "")),
        Some(q) => {
            let text = q.as_str().map_or_else(|| q.to_string(), str::to_string);
            if let Some(qty) = Quantity::parse(&text)
                && qty.as_nanos() <= 0
            {
                out.push(field::invalid(&storage_path, qty.to_string(), "must be greater than zero"));
            }
        }
    }
    class_name(out, spec, "storageClassName", path);
    if let Some(mode) = spec.get("volumeMode").and_then(Value::as_str)
        && !VOLUME_MODES.contains(&mode)
    {
        out.push(field::not_supported(&path.child("volumeMode"), mode, VOLUME_MODES));
    }
    let source = spec.get("dataSource").filter(|v| !v.is_null());
    let source_ref = spec.get("dataSourceRef").filter(|v| !v.is_null());
    if let Some(s) = source {
        data_source(out, s, &path.child("dataSource"), false);
    }
    if let Some(r) = source_ref {
        data_source(out, r, &path.child("dataSourceRef"), true);
    }
    let ref_namespace = source_ref.map(|r| text(r, "namespace")).filter(|n| !n.is_empty());
    // Upstream passes the `*field.Path` as the value, which marshals to `{}`.
    let path_value = || Bad::Raw("{}".into());
    if ref_namespace.is_some() {
        if source.is_some() {
            out.push(field::invalid(
                path,
                path_value(),
                "may not be specified when dataSourceRef.namespace is specified",
            ));
        }
    } else if let (Some(s), Some(r)) = (source, source_ref) {
        let same = s.get("apiGroup") == r.get("apiGroup")
            && text(s, "kind") == text(r, "kind")
            && text(s, "name") == text(r, "name");
        if !same {
            out.push(field::invalid(path, path_value(), "must match dataSourceRef"));
        }
    }
    class_name(out, spec, "volumeAttributesClassName", path);
}

/// `validateDataSource` and `validateDataSourceRef` (which also checks the namespace).
fn data_source(out: &mut Vec<StatusCause>, source: &Value, path: &Path, is_ref: bool) {
    if text(source, "name").is_empty() {
        out.push(field::required(&path.child("name"), ""));
    }
    let kind = text(source, "kind");
    if kind.is_empty() {
        out.push(field::required(&path.child("kind"), ""));
    }
    let group = text(source, "apiGroup");
    if group.is_empty() && kind != "PersistentVolumeClaim" {
        out.push(field::invalid(path, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"));
    }
    if !group.is_empty() {
        for msg in dns1123_subdomain_errors(group) {
            out.push(field::invalid(&path.child("apiGroup"), group, &msg));
        }
    }
    let namespace = text(source, "namespace");
    if is_ref && !namespace.is_empty() {
        for msg in dns1123_label_errors(namespace) {
            out.push(field::invalid(&path.child("namespace"), namespace, &msg));
        }
    }
}
