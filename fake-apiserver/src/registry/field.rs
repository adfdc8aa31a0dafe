//! Field errors in the shape of apimachinery's `field.ErrorList`: a path, a type and, for some
//! types, the bad value, printed as kube-apiserver prints them in the causes of a 422
//! `Invalid` (`Required value`, `Invalid value: "x": detail`, `Unsupported value: "x":
//! supported values: "a", "b"`, ...). Every kind's validation builds its causes with these
//! helpers, so the reasons and messages are worded in one place.

use crate::error::StatusCause;
use apimachinery::go::quote;
use serde_json::Value;
use std::fmt::Write as _;

/// A field path: `spec.containers[0].ports[1].name`, `data[bad key]`, `metadata.labels`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Path(String);

impl Path {
    /// A path starting at `name`.
    pub fn root(name: &str) -> Self {
        Path(name.to_string())
    }

    /// `self.name`.
    pub fn child(&self, name: &str) -> Self {
        if self.0.is_empty() { Path(name.to_string()) } else { Path(format!("{}.{name}", self.0)) }
    }

    /// `self[i]`.
    pub fn index(&self, i: usize) -> Self {
        Path(format!("{}[{i}]", self.0))
    }

    /// `self[key]`: a map entry, as `field.Path.Key` prints it (no quotes).
    pub fn key(&self, key: &str) -> Self {
        Path(format!("{}[{key}]", self.0))
    }

    /// The dotted text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A bad value as `field.Error` prints it.
#[derive(Debug, Clone)]
pub(crate) enum Bad {
    /// A string, printed quoted (`%q`).
    Str(String),
    /// A number or boolean, printed plainly (`%v`).
    Plain(String),
    /// Go's `%#v` of a composite, given as text.
    Raw(String),
    /// `nil`, printed as `null`.
    Null,
}

impl Bad {
    /// The JSON value as the Go type it decodes into would print: strings quoted, numbers and
    /// booleans plain, null as `null`, composites as JSON text.
    pub fn of(v: &Value) -> Bad {
        match v {
            Value::String(s) => Bad::Str(s.clone()),
            Value::Null => Bad::Null,
            Value::Number(_) | Value::Bool(_) => Bad::Plain(v.to_string()),
            other => Bad::Raw(other.to_string()),
        }
    }

    fn text(&self) -> String {
        match self {
            Bad::Str(s) => quote(s),
            Bad::Plain(s) | Bad::Raw(s) => s.clone(),
            Bad::Null => "null".into(),
        }
    }
}

impl From<&str> for Bad {
    fn from(s: &str) -> Self {
        Bad::Str(s.to_string())
    }
}

impl From<&String> for Bad {
    fn from(s: &String) -> Self {
        Bad::Str(s.clone())
    }
}

impl From<String> for Bad {
    fn from(s: String) -> Self {
        Bad::Str(s)
    }
}

impl From<i64> for Bad {
    fn from(n: i64) -> Self {
        Bad::Plain(n.to_string())
    }
}

impl From<bool> for Bad {
    fn from(b: bool) -> Self {
        Bad::Plain(b.to_string())
    }
}

fn with_detail(head: String, detail: &str) -> String {
    if detail.is_empty() { head } else { format!("{head}: {detail}") }
}

/// `field.Required`: `Required value[: detail]`.
pub(crate) fn required(path: &Path, detail: &str) -> StatusCause {
    StatusCause::field("FieldValueRequired", path.as_str(), with_detail("Required value".into(), detail))
}

/// `field.Invalid`: `Invalid value: <value>: detail`.
pub(crate) fn invalid(path: &Path, value: impl Into<Bad>, detail: &str) -> StatusCause {
    let head = format!("Invalid value: {}", value.into().text());
    StatusCause::field("FieldValueInvalid", path.as_str(), with_detail(head, detail))
}

/// `field.Invalid` with `field.OmitValueType{}`: `Invalid value: detail`, no value printed.
pub(crate) fn invalid_omit_value(path: &Path, detail: &str) -> StatusCause {
    StatusCause::field("FieldValueInvalid", path.as_str(), with_detail("Invalid value".into(), detail))
}

/// `field.Forbidden`: `Forbidden: detail`.
pub(crate) fn forbidden(path: &Path, detail: &str) -> StatusCause {
    StatusCause::field("FieldValueForbidden", path.as_str(), with_detail("Forbidden".into(), detail))
}

/// `field.Duplicate`: `Duplicate value: <value>`.
pub(crate) fn duplicate(path: &Path, value: impl Into<Bad>) -> StatusCause {
    StatusCause::field("FieldValueDuplicate", path.as_str(), format!("Duplicate value: {}", value.into().text()))
}

/// `field.NotFound`: `Not found: <value>`.
pub(crate) fn not_found(path: &Path, value: impl Into<Bad>) -> StatusCause {
    StatusCause::field("FieldValueNotFound", path.as_str(), format!("Not found: {}", value.into().text()))
}

/// `field.NotSupported`: `Unsupported value: <value>: supported values: "a", "b"`.
pub(crate) fn not_supported(path: &Path, value: impl Into<Bad>, valid: &[&str]) -> StatusCause {
    let mut msg = format!("Unsupported value: {}", value.into().text());
    if !valid.is_empty() {
        let quoted: Vec<String> = valid.iter().map(|v| quote(v)).collect();
        let _ = write!(msg, ": supported values: {}", quoted.join(", "));
    }
    StatusCause::field("FieldValueNotSupported", path.as_str(), msg)
}

/// `field.TooLong`: `Too long: may not be more than N bytes` (the value is never printed).
pub(crate) fn too_long(path: &Path, max: usize) -> StatusCause {
    StatusCause::field("FieldValueTooLong", path.as_str(), format!("Too long: may not be more than {max} bytes"))
}

/// `field.TooLongCharacters` (declarative `maxLength`): `Too long: may not be more than N
/// characters`.
pub(crate) fn too_long_characters(path: &Path, max: usize) -> StatusCause {
    let unit = if max == 1 { "character" } else { "characters" };
    StatusCause::field("FieldValueTooLong", path.as_str(), format!("Too long: may not be more than {max} {unit}"))
}

/// `field.TooMany`: `Too many: N: must have at most M items`.
pub(crate) fn too_many(path: &Path, actual: usize, max: usize) -> StatusCause {
    StatusCause::field("FieldValueTooMany", path.as_str(), format!("Too many: {actual}: must have at most {max} items"))
}

/// `ValidateImmutableField`: a change (by `Semantic.DeepEqual`, to which an empty list or map is
/// no list or map) is `Invalid value: <new>: field is immutable`.
pub(crate) fn immutable(path: &Path, new: &Value, old: &Value) -> Option<StatusCause> {
    (!apimachinery::json::semantically_equal(new, old)).then(|| invalid(path, Bad::of(new), FIELD_IMMUTABLE))
}

/// The detail of an immutable field's change.
pub(crate) const FIELD_IMMUTABLE: &str = "field is immutable";

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::required(required(&Path::root("spec").child("containers"), ""), "FieldValueRequired", "spec.containers", "Required value")]
    #[case::invalid(
        invalid(&Path::root("spec").child("replicas"), -1, "must be greater than or equal to 0"),
        "FieldValueInvalid",
        "spec.replicas",
        "Invalid value: -1: must be greater than or equal to 0"
    )]
    #[case::not_supported(
        not_supported(&Path::root("spec").child("restartPolicy"), "Sometimes", &["Always", "OnFailure", "Never"]),
        "FieldValueNotSupported",
        "spec.restartPolicy",
        "Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\""
    )]
    #[case::map_key(
        invalid(&Path::root("data").key("bad key"), "bad key", "a valid config key must consist of alphanumeric characters"),
        "FieldValueInvalid",
        "data[bad key]",
        "Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters"
    )]
    #[case::too_many(
        too_many(&Path::root("status").child("reservedFor"), 257, 256),
        "FieldValueTooMany",
        "status.reservedFor",
        "Too many: 257: must have at most 256 items"
    )]
    #[case::duplicate(duplicate(&Path::root("spec").child("containers").index(1).child("name"), "app"), "FieldValueDuplicate", "spec.containers[1].name", "Duplicate value: \"app\"")]
    fn causes_are_worded_like_field_errors(
        #[case] cause: StatusCause,
        #[case] reason: &str,
        #[case] field: &str,
        #[case] message: &str,
    ) {
        assert_eq!((cause.reason.as_str(), cause.field.as_str(), cause.message.as_str()), (reason, field, message));
    }
}
