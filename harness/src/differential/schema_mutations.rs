//! The ways to break a field that follow from its OpenAPI schema alone: another JSON type, a
//! value outside its enum, its format's edges (int32 and int64 bounds, quantities,
//! int-or-string, dates, base64), its list type (duplicate set items, duplicate map keys, a
//! missing key), a required field removed, map keys that are not names, and, for a field the
//! object leaves out, a plausible value or an edge. Nothing here knows a kind's rules: the
//! second corpus asks the schema, not kproof, what to send.

use super::openapi::{Field, Schemas, Shape};
use super::templates::Edit;
use serde_json::{Value, json};

/// One way to break a field: a short name for reports and the edits.
pub(super) type Variant = (String, Vec<Edit>);

/// The variants of `field` (its current value is `current`, if the object has it).
pub(super) fn variants(field: &Field, current: Option<&Value>, schemas: &Schemas) -> Vec<Variant> {
    let at = field.pointer.as_str();
    let set = |name: &str, v: Value| (name.to_string(), vec![Edit::Set(at.to_string(), v)]);
    let mut out: Vec<Variant> = Vec::new();
    let Some(current) = current else {
        // Absent: set it as a client would, and at an edge.
        out.push(set("absent: set", schemas.example(field, 3)));
        out.extend(edges(&field.shape, at).into_iter().map(|(n, e)| (format!("absent: {n}"), e)));
        return out;
    };
    if field.required {
        out.push(("required: removed".into(), vec![Edit::Remove(at.to_string())]));
    }
    out.push(set("null", Value::Null));
    out.extend(edges(&field.shape, at));
    match &field.shape {
        Shape::List { list_type, keys } => {
            if let Some(first) = current.as_array().and_then(|a| a.first()) {
                let twice = Value::Array(vec![first.clone(), first.clone()]);
                let name = match list_type.as_str() {
                    "set" => "set: duplicate item",
                    "map" => "map list: duplicate key",
                    _ => "atomic list: item twice",
                };
                out.push(set(name, twice));
                if list_type == "map" && !keys.is_empty() {
                    let mut keyless = first.clone();
                    if let Some(o) = keyless.as_object_mut() {
                        for k in keys {
                            o.remove(k);
                        }
                    }
                    let mut items = current.as_array().cloned().unwrap_or_default();
                    items.push(keyless);
                    out.push(set("map list: item without its key", Value::Array(items)));
                }
            }
        }
        Shape::Struct => {
            if let Some(o) = current.as_object() {
                let mut with_unknown = o.clone();
                with_unknown.insert("bogusField".into(), json!(1));
                out.push(set("struct: unknown field", Value::Object(with_unknown)));
                if !o.is_empty() {
                    out.push(set("struct: emptied", json!({})));
                }
            }
        }
        Shape::String { enumeration, .. } if enumeration.len() > 1 => {
            if let Some(other) = enumeration.iter().find(|e| Some(e.as_str()) != current.as_str()) {
                out.push(set("enum: another value", Value::String(other.clone())));
            }
        }
        _ => {}
    }
    out
}

/// The edges of a shape: values of its JSON type a validator must think about, and values of
/// other types.
fn edges(shape: &Shape, at: &str) -> Vec<Variant> {
    let set = |name: &str, v: Value| (name.to_string(), vec![Edit::Set(at.to_string(), v)]);
    let big = |name: &str, n: usize| (name.to_string(), vec![Edit::Big(at.to_string(), n)]);
    match shape {
        Shape::String { format, enumeration } => {
            let mut v = vec![
                set("string: empty", json!("")),
                set("string: not a name", json!("Not_A.Name ")),
                big("string: 254 bytes", 254),
                big("string: 64 KiB", 65_536),
                set("type: number for string", json!(7)),
                set("type: object for string", json!({})),
            ];
            if let Some(first) = enumeration.first() {
                v.push(set("enum: outside", json!("Bogus")));
                v.push(set("enum: other case", json!(first.to_lowercase())));
            }
            match format.as_str() {
                "date-time" => v.push(set("date-time: not a time", json!("yesterday"))),
                "byte" => v.push(set("byte: not base64", json!("!!not base64!!"))),
                _ => {}
            }
            v
        }
        Shape::Integer { format } => {
            let mut v = vec![
                set("integer: -1", json!(-1)),
                set("integer: 0", json!(0)),
                set("integer: fraction", json!(1.5)),
                set("type: string for integer", json!("1")),
                set("integer: 2^53 + 1", json!(9_007_199_254_740_993_u64)),
            ];
            if format == "int32" {
                v.push(set("int32: 2^31", json!(2_147_483_648_u64)));
                v.push(set("int32: -2^31 - 1", json!(-2_147_483_649_i64)));
            } else {
                v.push(set("int64: 2^63", json!(9_223_372_036_854_775_808_u64)));
            }
            v
        }
        Shape::Number => vec![set("number: -1", json!(-1)), set("type: string for number", json!("1"))],
        Shape::Boolean => {
            vec![set("type: string for boolean", json!("true")), set("type: number for boolean", json!(1))]
        }
        Shape::Quantity => vec![
            set("quantity: two points", json!("1.5.5")),
            set("quantity: negative", json!("-1")),
            set("quantity: exponent", json!("1e3")),
            set("quantity: below a milli", json!("0.0001")),
            set("quantity: binary suffix", json!("1Ki")),
            set("quantity: unknown suffix", json!("1KB")),
            set("quantity: empty", json!("")),
            set("quantity: space", json!("1 Mi")),
            set("quantity: leading plus", json!("+1")),
            set("quantity: number", json!(0.5)),
            set("quantity: huge", json!("9999999999999999999999Ei")),
            set("type: boolean for quantity", json!(true)),
        ],
        Shape::IntOrString => vec![
            set("int-or-string: empty", json!("")),
            set("int-or-string: word", json!("abc")),
            set("int-or-string: 50%", json!("50%")),
            set("int-or-string: 150%", json!("150%")),
            set("int-or-string: -1", json!(-1)),
            set("int-or-string: 65536", json!(65_536)),
            set("int-or-string: fraction", json!(1.5)),
            set("type: boolean for int-or-string", json!(true)),
        ],
        Shape::Map => vec![
            set("map: key with a space", json!({"bad key": "x"})),
            set("map: key with two slashes", json!({"a/b/c": "x"})),
            set("map: prefixed key", json!({"example.com/ok": "x"})),
            set("map: empty", json!({})),
            set("type: list for map", json!([])),
        ],
        Shape::List { .. } => vec![set("list: empty", json!([])), set("type: object for list", json!({}))],
        Shape::Struct => vec![set("type: string for struct", json!("x")), set("type: list for struct", json!([]))],
        Shape::Free => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(shape: Shape, required: bool) -> Field {
        Field { pointer: "/spec/x".into(), shape, required, present: true, type_name: None }
    }

    #[test]
    fn a_required_map_list_is_removed_duplicated_and_loses_a_key() {
        let f = field(Shape::List { list_type: "map".into(), keys: vec!["name".into()] }, true);
        let current = json!([{"name": "a", "image": "i"}]);
        let v = variants(&f, Some(&current), &Schemas::default());
        let names: Vec<&str> = v.iter().map(|(n, _)| n.as_str()).collect();
        assert!(names.contains(&"required: removed"), "{names:?}");
        let (_, dup) = v.iter().find(|(n, _)| n == "map list: duplicate key").expect("duplicate key");
        assert!(matches!(&dup[..], [Edit::Set(p, Value::Array(items))] if p == "/spec/x" && items.len() == 2));
        let (_, keyless) = v.iter().find(|(n, _)| n == "map list: item without its key").expect("keyless");
        assert!(matches!(&keyless[..], [Edit::Set(_, Value::Array(items))] if items[1] == json!({"image": "i"})));
    }

    #[test]
    fn an_enum_gets_a_value_outside_it_and_another_inside() {
        let f = field(Shape::String { format: String::new(), enumeration: vec!["TCP".into(), "UDP".into()] }, false);
        let v = variants(&f, Some(&json!("TCP")), &Schemas::default());
        let value = |name: &str| match &v.iter().find(|(n, _)| n == name).expect(name).1[..] {
            [Edit::Set(_, x)] => x.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(value("enum: outside"), json!("Bogus"));
        assert_eq!(value("enum: another value"), json!("UDP"));
        assert_eq!(value("enum: other case"), json!("tcp"));
        assert!(!v.iter().any(|(n, _)| n == "required: removed"));
    }

    #[test]
    fn an_absent_field_is_set_plausibly_and_at_its_edges() {
        let f = Field { present: false, ..field(Shape::Integer { format: "int32".into() }, false) };
        let v = variants(&f, None, &Schemas::default());
        assert_eq!(v[0].0, "absent: set");
        assert!(v.iter().any(|(n, _)| n == "absent: int32: 2^31"));
        assert!(v.iter().all(|(n, _)| n.starts_with("absent: ")));
    }
}
