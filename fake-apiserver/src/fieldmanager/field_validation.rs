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
        if let Some(cause) = unsupported(v) {
            return Err(ApiError::invalid("meta.k8s.io", options_kind, "", vec![cause]));
        }
        Ok(match v {
            Some("Ignore") => Self::Ignore,
            Some("Strict") => Self::Strict,
            _ => Self::Warn,
        })
    }
}

/// `ValidateFieldValidation`: a value other than "", Ignore, Strict and Warn is NotSupported.
pub(crate) fn unsupported(v: Option<&str>) -> Option<crate::error::StatusCause> {
    const VALID: [&str; 4] = ["", "Ignore", "Strict", "Warn"];
    let v = v.filter(|v| !VALID.contains(v))?;
    Some(crate::registry::field::not_supported(&crate::registry::field::Path::root("fieldValidation"), v, &VALID))
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
    verdict(rt, how, unknown_fields(rt, body).iter().map(|f| format!("unknown field {f:?}")).collect())
}

/// [`check`] of an object about to be decoded (a create's or an update's body, `raw` as sent),
/// which may prune it on the way; a JSON body's duplicate fields count as well.
pub(crate) fn check_decoding(
    rt: &ResourceType,
    how: FieldValidation,
    raw: &[u8],
    body: &mut Value,
) -> ApiResult<Vec<String>> {
    if how == FieldValidation::Ignore {
        return Ok(Vec::new());
    }
    let mut listed: Vec<String> =
        unknown_fields_decoding(rt, body).iter().map(|f| format!("unknown field {f:?}")).collect();
    listed.extend(duplicate_fields(raw).iter().map(|f| format!("duplicate field {f:?}")));
    verdict(rt, how, listed)
}

/// The fields a JSON document gives more than once, as paths (`metadata.name`,
/// `spec.containers[0].name`), in document order: sigs.k8s.io/json's strict decoding reports
/// each as `duplicate field "<path>"`. Not JSON: none (decoding reports it).
pub(crate) fn duplicate_fields(raw: &[u8]) -> Vec<String> {
    use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
    struct Seen<'a> {
        path: String,
        out: &'a mut Vec<String>,
    }
    impl<'de> DeserializeSeed<'de> for Seen<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Seen<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut keys = std::collections::HashSet::new();
            while let Some(k) = map.next_key::<String>()? {
                let path = if self.path.is_empty() { k.clone() } else { format!("{}.{k}", self.path) };
                if !keys.insert(k) {
                    self.out.push(path.clone());
                }
                map.next_value_seed(Seen { path, out: &mut *self.out })?;
            }
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            let mut i = 0;
            while seq.next_element_seed(Seen { path: format!("{}[{i}]", self.path), out: &mut *self.out })?.is_some() {
                i += 1;
            }
            Ok(())
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
    }
    let mut out = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(raw);
    if (Seen { path: String::new(), out: &mut out }).deserialize(&mut de).is_err() {
        return Vec::new();
    }
    out
}

fn verdict(rt: &ResourceType, how: FieldValidation, listed: Vec<String>) -> ApiResult<Vec<String>> {
    if listed.is_empty() {
        return Ok(Vec::new());
    }
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
