//! Schemas and objects the apiextensions tests share.

use super::{FieldCause, StructuralSchema};
use serde_json::{Value, json};

/// Compiles `s`, which must compile.
pub(super) fn compile(s: Value) -> StructuralSchema {
    match StructuralSchema::compile(&s) {
        Ok(s) => s,
        Err(e) => panic!("schema should compile: {e}"),
    }
}

/// The root object schema with a `spec` of the given schema.
pub(super) fn spec_schema(spec: Value) -> StructuralSchema {
    compile(json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
        }
    }))
}

/// A schema whose `spec.f` is `spec_field`.
pub(super) fn field(spec_field: Value) -> StructuralSchema {
    spec_schema(json!({"type": "object", "properties": {"f": spec_field}}))
}

/// An object with `spec`.
pub(super) fn obj(spec: Value) -> Value {
    json!({"apiVersion": "x.io/v1", "kind": "X", "metadata": {"name": "a"}, "spec": spec})
}

/// The causes of validating `f` as `spec.f`.
pub(super) fn check(s: &StructuralSchema, f: Value) -> Vec<FieldCause> {
    s.validate(&obj(json!({ "f": f })))
}

/// The only cause.
pub(super) fn one(causes: Vec<FieldCause>) -> FieldCause {
    assert_eq!(causes.len(), 1, "expected exactly one cause, got {causes:#?}");
    causes.into_iter().next().unwrap_or_else(|| unreachable!())
}

/// A cause, for comparisons.
pub(super) fn cause(reason: &'static str, field: &str, message: &str) -> FieldCause {
    FieldCause { reason, field: field.to_string(), message: message.to_string() }
}
