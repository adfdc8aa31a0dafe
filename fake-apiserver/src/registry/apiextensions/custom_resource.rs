//! Custom resources: pruned, defaulted and validated by their CRD version's structural schema,
//! printed with the CRD's `additionalPrinterColumns`.

use crate::error::StatusCause;
use crate::registry::defects::ServerDefect;
use crate::registry::printers::{col, name_col, since};
use crate::registry::{ResourceType, Strategy};
use jiff::Timestamp;
use serde_json::{Value, json};

/// The instances of a CRD.
#[derive(Debug)]
pub(crate) struct CustomResourceStrategy;

impl Strategy for CustomResourceStrategy {
    fn canonicalize(&self, rt: &ResourceType, obj: &mut Value) {
        // Defect: the body is stored as sent, unknown fields and missing defaults included.
        if rt.defective(ServerDefect::CrdSchemaNotCanonicalized) {
            return;
        }
        // The schema coercer and the defaulter only touch bodies of the CRD's own kind: one of
        // another kind is validated (and refused) as it came.
        if obj["kind"].as_str().is_some_and(|k| k != rt.kind) {
            return;
        }
        if let Some(schema) = &rt.schema {
            schema.prune(obj);
            schema.apply_defaults(obj);
        }
    }

    /// Only the status is pruned and defaulted: the rest of the body is dropped.
    fn canonicalize_status_write(&self, rt: &ResourceType, obj: &mut Value) {
        if let Some(schema) = &rt.schema
            && !schema.canonicalize_member(obj, "status")
        {
            self.canonicalize(rt, obj);
        }
    }

    fn validate(&self, rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        let mut out = type_meta_causes(rt, obj);
        if let Some(schema) = &rt.schema {
            out.extend(causes(rt, schema.validate(obj)));
        }
        out
    }

    /// The schema again, and the CEL rules with `oldSelf` (transition rules) against `old`.
    fn validate_update(&self, rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut out = type_meta_causes(rt, obj);
        if let Some(schema) = &rt.schema {
            out.extend(causes(rt, schema.validate_update(obj, old)));
        }
        out
    }

    /// A status write is validated against the whole schema too.
    fn validate_status_update(&self, rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        self.validate_update(rt, obj, old)
    }

    fn table_columns(&self, rt: &ResourceType) -> Vec<Value> {
        let mut cols = vec![name_col()];
        for c in printer_columns(rt) {
            cols.push(col(
                c["name"].as_str().unwrap_or_default(),
                c["type"].as_str().unwrap_or("string"),
                c["format"].as_str().unwrap_or_default(),
                c["priority"].as_i64().unwrap_or(0),
                c["description"].as_str().unwrap_or_default(),
            ));
        }
        cols
    }

    fn table_cells(&self, rt: &ResourceType, obj: &Value, now: Timestamp) -> Vec<Value> {
        let mut c = vec![json!(obj["metadata"]["name"])];
        for pc in printer_columns(rt) {
            c.push(crd_cell(obj, &pc, now));
        }
        c
    }
}

/// `customResourceValidator.ValidateTypeMeta`: the kind must be the CRD's (`apiVersion` was
/// checked when the body was decoded).
fn type_meta_causes(rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
    match obj["kind"].as_str() {
        Some(kind) if kind != rt.kind => vec![StatusCause::field(
            "FieldValueInvalid",
            "kind",
            format!("Invalid value: {}: must be {}", apimachinery::go::quote(kind), rt.kind),
        )],
        _ => Vec::new(),
    }
}

fn causes(rt: &ResourceType, found: Vec<crate::apiextensions::FieldCause>) -> Vec<StatusCause> {
    // Defect: the causes lose the path of the field they are about.
    let without_field = rt.defective(ServerDefect::SchemaCausesWithoutField);
    found
        .into_iter()
        .map(|c| StatusCause::field(c.reason, if without_field { String::new() } else { c.field }, c.message))
        .collect()
}

/// The CRD's printer columns, or the default Age column when none
/// are given.
fn printer_columns(rt: &ResourceType) -> Vec<Value> {
    if rt.printer_columns.is_empty() {
        vec![json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})]
    } else {
        rt.printer_columns.clone()
    }
}

/// One step of a printer-column JSONPath.
enum Step {
    Field(String),
    Index(usize),
    All,
    Filter { key: String, value: String },
}

/// Parses the JSONPath subset printer columns use: `.a.b`, `.a[0]`, `.a[*].b`,
/// `.a[?(@.type=="Ready")].status`, optionally wrapped in `{}`.
fn parse_path(path: &str) -> Option<Vec<Step>> {
    let p = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut steps = Vec::new();
    let mut rest = p;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end > 0 {
                steps.push(Step::Field(r[..end].to_string()));
            }
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = r[..end].trim();
            rest = &r[end + 1..];
            if inner == "*" {
                steps.push(Step::All);
            } else if let Some(f) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                let (k, v) = f.split_once("==")?;
                steps.push(Step::Filter {
                    key: k.trim().to_string(),
                    value: v.trim().trim_matches(|c| c == '"' || c == '\'').to_string(),
                });
            } else if let Ok(i) = inner.parse() {
                steps.push(Step::Index(i));
            } else {
                steps.push(Step::Field(inner.trim_matches(|c| c == '"' || c == '\'').to_string()));
            }
        } else {
            return None;
        }
    }
    Some(steps)
}

fn eval_path<'a>(root: &'a Value, steps: &[Step]) -> Vec<&'a Value> {
    let mut cur = vec![root];
    for s in steps {
        let mut next = Vec::new();
        for v in cur {
            match s {
                Step::Field(f) => next.extend(v.get(f.as_str())),
                Step::Index(i) => next.extend(v.get(*i)),
                Step::All => match v {
                    Value::Array(a) => next.extend(a.iter()),
                    Value::Object(m) => next.extend(m.values()),
                    _ => {}
                },
                Step::Filter { key, value } => {
                    for item in v.as_array().into_iter().flatten() {
                        let got = &item[key.as_str()];
                        let text = match got {
                            Value::String(s) => s.clone(),
                            Value::Null => continue,
                            other => other.to_string(),
                        };
                        if text == *value {
                            next.push(item);
                        }
                    }
                }
            }
        }
        cur = next;
    }
    cur
}

/// A cell of a CRD printer column: typed by the column's type, `null` when missing or
/// of the wrong type, several matches joined with commas. A `date` cell is the age of the
/// timestamp, as kube-apiserver's CRD table convertor prints it (`5s`, `3d4h`, `<unknown>`).
fn crd_cell(o: &Value, pc: &Value, now: Timestamp) -> Value {
    let Some(steps) = pc["jsonPath"].as_str().and_then(parse_path) else { return Value::Null };
    let found = eval_path(o, &steps);
    match found.as_slice() {
        [] => Value::Null,
        [one] => match (pc["type"].as_str().unwrap_or("string"), one) {
            ("integer", Value::Number(n)) => n.as_i64().map_or(Value::Null, |i| json!(i)),
            ("number", Value::Number(n)) => json!(n),
            ("boolean", Value::Bool(b)) => json!(b),
            ("date", v @ Value::String(_)) => json!(since(v, now)),
            ("string", Value::String(s)) => json!(s),
            ("string", other @ (Value::Number(_) | Value::Bool(_))) => json!(other.to_string()),
            ("string", other) => json!(other.to_string()),
            _ => Value::Null,
        },
        many => json!(
            many.iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_paths_of_printer_columns() {
        let o = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"size": 3, "tags": ["a", "b"]}, "status": {"conditions": [
            {"type": "Ready", "status": "True"}, {"type": "Synced", "status": "False"}]}});
        let now: Timestamp = "2026-01-01T00:01:00Z".parse().unwrap();
        let cell = |path: &str, typ: &str| crd_cell(&o, &json!({"jsonPath": path, "type": typ}), now);
        assert_eq!(cell(".spec.size", "integer"), json!(3));
        assert_eq!(cell(".spec.size", "string"), json!("3"));
        assert_eq!(cell(".spec.size", "boolean"), Value::Null);
        assert_eq!(cell(".spec.tags[*]", "string"), json!("a,b"));
        assert_eq!(cell(".spec.tags[1]", "string"), json!("b"));
        assert_eq!(cell(".status.conditions[?(@.type==\"Ready\")].status", "string"), json!("True"));
        assert_eq!(cell(".spec.missing", "string"), Value::Null);
        assert_eq!(cell(".metadata.creationTimestamp", "date"), json!("60s"));
    }
}
