//! `fieldValidation=Ignore|Warn|Strict` on create, update, patch and apply: fields the type
//! does not declare are dropped silently (Ignore), reported in `Warning: 299` response headers
//! (Warn, the server default), or refused with 400 BadRequest "strict decoding error: unknown
//! field ..." (Strict, what kubectl sends by default).

use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::registry::ResourceType;
use crate::registry::smd::pruned_fields;
pub(crate) use crate::registry::smd::unknown_fields;

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

/// [`unknown_fields`] of an object about to be decoded: a custom resource's are found by
/// pruning it in place (as kube-apiserver's decoder finds them), which decoding would do anyway.
fn unknown_fields_decoding(rt: &ResourceType, body: &mut Value) -> Vec<String> {
    match &rt.schema {
        Some(_) => pruned_fields(rt, body),
        None => unknown_fields(rt, body),
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
