//! Go's printing of decoded JSON values, as kube-apiserver's `field.Error` messages show the bad
//! value (`%v` of numbers, `%#v` of maps and lists).

pub(super) use apimachinery::go::go_float;
use apimachinery::go::quote;
use serde_json::{Number, Value};

/// A JSON number as apiserver decodes it: int64 when it fits, else float64.
#[derive(Clone, Copy)]
pub(super) enum Num {
    I(i64),
    F(f64),
}

/// How Go decodes a JSON number: int64 when it fits, else float64.
pub(super) fn num_of(n: &Number) -> Num {
    match n.as_i64() {
        Some(i) => Num::I(i),
        None => Num::F(n.as_f64().unwrap_or(f64::NAN)),
    }
}

fn go_number(n: &Number) -> String {
    match num_of(n) {
        Num::I(i) => i.to_string(),
        Num::F(f) => go_float(f),
    }
}

/// Go's `%#v` of a decoded JSON value.
fn go_sharp(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => quote(s),
        Value::Array(a) => {
            let inner: Vec<String> = a.iter().map(go_sharp).collect();
            format!("[]interface {{}}{{{}}}", inner.join(", "))
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let inner: Vec<String> = keys
                .iter()
                .map(|k| {
                    let v = m.get(*k).map(go_sharp).unwrap_or_default();
                    format!("{}:{v}", quote(k))
                })
                .collect();
            format!("map[string]interface {{}}{{{}}}", inner.join(", "))
        }
    }
}

/// How apiserver's `field.Error` prints a bad value.
pub(super) fn go_body_value(v: &Value) -> String {
    match v {
        Value::Null => "\"null\"".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => quote(s),
        other => go_sharp(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiextensions::test_schemas::*;
    use crate::apiextensions::*;
    use serde_json::{Value, json};

    #[test]
    fn go_printing() {
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(3.0), "3");
        assert_eq!(go_float(100000.0), "100000");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(2147483647.0), "2.147483647e+09");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(apimachinery::go::quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
        assert_eq!(
            go_body_value(&json!({"b": [1, "x", null], "a": 1.5})),
            r#"map[string]interface {}{"a":1.5, "b":[]interface {}{1, "x", interface {}(nil)}}"#
        );
        assert_eq!(go_body_value(&Value::Null), "\"null\"");
        assert_eq!(cause(FieldCause::REQUIRED, "spec.a", "Required value").to_string(), "spec.a: Required value");
    }
}
