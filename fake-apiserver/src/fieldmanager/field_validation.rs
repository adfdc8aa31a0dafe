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
    let mut out = Vec::new();
    match &rt.schema {
        Some(schema) => {
            let mut copy = body.clone();
            out = schema.prune(&mut copy);
            // ObjectMeta is the server's: check it against the built-in table.
            if let Some(meta) = body.get("metadata") {
                let shape = Shape::builtin_root("", "v1", "ConfigMap").child("metadata");
                walk(meta, shape, "metadata", &mut out);
            }
        }
        None => walk(body, super::managed::shape_of(rt), "", &mut out),
    }
    out
}

fn walk(v: &Value, shape: Shape<'_>, path: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k.starts_with('$') {
                    continue;
                }
                let here = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                match shape.declares(k) {
                    Some(false) => out.push(here),
                    _ => walk(x, shape.child(k), &here, out),
                }
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                walk(x, shape.item(), &format!("{path}[{i}]"), out);
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
    let unknown = unknown_fields(rt, body);
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
