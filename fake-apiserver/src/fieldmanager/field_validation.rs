//! `fieldValidation=Ignore|Warn|Strict` on create, update, patch and apply: fields the type
//! does not declare are dropped silently (Ignore), reported in `Warning: 299` response headers
//! (Warn, the server default), or refused with 400 BadRequest "strict decoding error: unknown
//! field ..." (Strict, what kubectl sends by default).

use serde_json::Value;

use super::patch_meta::Shape;
use crate::error::{ApiError, ApiResult};
use crate::registry::ResourceType;

/// What to do with unknown fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

impl FieldValidation {
    /// The `fieldValidation` query parameter (absent: Warn); another value is 422 on the
    /// verb's options kind (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
    pub(crate) fn parse(v: Option<&str>, options_kind: &str) -> ApiResult<Self> {
        match v {
            None | Some("") | Some("Warn") => Ok(Self::Warn),
            Some("Ignore") => Ok(Self::Ignore),
            Some("Strict") => Ok(Self::Strict),
            Some(other) => Err(ApiError::invalid(
                "meta.k8s.io",
                options_kind,
                "",
                vec![crate::registry::field::not_supported(
                    &crate::registry::field::Path::root("fieldValidation"),
                    other,
                    &["", "Ignore", "Strict", "Warn"],
                )],
            )),
        }
    }
}

/// The dotted paths of fields in `body` that `rt` does not declare (`spec.foo`,
/// `spec.containers[0].bar`). `$`-directives of strategic merge patches are not fields.
pub(crate) fn unknown_fields(rt: &ResourceType, body: &Value) -> Vec<String> {
    match &rt.schema {
        Some(_) => pruned_fields(rt, &mut body.clone()),
        None => {
            let mut out = Vec::new();
            walk(body, super::managed::shape_of(rt), &mut String::new(), &mut out);
            out
        }
    }
}

/// [`unknown_fields`] of an object about to be decoded: a custom resource's are found by
/// pruning it in place (as kube-apiserver's decoder finds them), which decoding would do anyway.
fn unknown_fields_decoding(rt: &ResourceType, body: &mut Value) -> Vec<String> {
    match &rt.schema {
        Some(_) => pruned_fields(rt, body),
        None => unknown_fields(rt, body),
    }
}

/// Prunes a custom resource by its schema; the pruned paths, then ObjectMeta's unknown fields
/// (ObjectMeta is the server's: it is checked against the built-in table).
fn pruned_fields(rt: &ResourceType, body: &mut Value) -> Vec<String> {
    let Some(schema) = &rt.schema else { return Vec::new() };
    let mut out = schema.prune(body);
    if let Some(meta) = body.get("metadata") {
        let shape = Shape::builtin_root("", "v1", "ConfigMap").child("metadata");
        walk(meta, shape, &mut String::from("metadata"), &mut out);
    }
    out
}

/// Adds the paths below `path` that `shape` does not declare; `path` is a buffer the walk
/// extends and restores, so only reported paths are allocated.
fn walk(v: &Value, shape: Shape<'_>, path: &mut String, out: &mut Vec<String>) {
    let len = path.len();
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k.starts_with('$') {
                    continue;
                }
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
                match shape.declares(k) {
                    Some(false) => out.push(path.clone()),
                    _ => walk(x, shape.child(k), path, out),
                }
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                use std::fmt::Write as _;
                let _ = write!(path, "[{i}]");
                walk(x, shape.item(), path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// Applies the directive to a body: Strict fails, Warn returns the warnings to send.
pub(crate) fn check(rt: &ResourceType, how: FieldValidation, body: &Value) -> ApiResult<Vec<String>> {
    if how == FieldValidation::Ignore {
        return Ok(Vec::new());
    }
    verdict(rt, how, unknown_fields(rt, body))
}

/// [`check`] of an object about to be decoded (a create's or an update's body), which may
/// prune it on the way.
pub(crate) fn check_decoding(rt: &ResourceType, how: FieldValidation, body: &mut Value) -> ApiResult<Vec<String>> {
    if how == FieldValidation::Ignore {
        return Ok(Vec::new());
    }
    verdict(rt, how, unknown_fields_decoding(rt, body))
}

fn verdict(rt: &ResourceType, how: FieldValidation, unknown: Vec<String>) -> ApiResult<Vec<String>> {
    if unknown.is_empty() {
        return Ok(Vec::new());
    }
    let listed: Vec<String> = unknown.iter().map(|f| format!("unknown field {f:?}")).collect();
    if how == FieldValidation::Strict {
        return Err(ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: strict decoding error: {}",
            rt.kind,
            rt.version,
            rt.kind,
            listed.join(", ")
        )));
    }
    Ok(listed)
}
