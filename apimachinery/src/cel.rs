//! The CEL environment Kubernetes expressions run in here: the fake API server's
//! `x-kubernetes-validations` rules and admission policies, and the simulated scheduler's DRA
//! device selectors.

use cel::common::types::{CelString, CelStruct, Type};
use cel::common::value::{CowVal, Val};
use cel::objects::Key;
use cel::{Context, Env, ExecutionError, StructType, Value as Cel};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

/// The standard library and the `strings`, `lists` and `math` extensions.
pub static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| Arc::new(base()));

fn base() -> Env {
    let mut env = Env::stdlib();
    // The extensions only declare functions; a clash would be a cel-rust defect, not input.
    let _ = env.add_extension(cel::extensions::strings);
    let _ = env.add_extension(cel::extensions::lists);
    let _ = env.add_extension(cel::extensions::math);
    env
}

/// CEL's reserved words (the grammar's `RESERVED`): no identifier may be one, and a schema
/// property named like one is escaped as `__name__` in expressions.
pub const RESERVED_WORDS: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// Whether `name` is a CEL identifier (`[_a-zA-Z][_a-zA-Z0-9]*`, not a reserved word), as
/// `isCELIdentifier` of `pkg/apis/admissionregistration/validation` checks a variable's name.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !RESERVED_WORDS.contains(&name)
}

/// The environment of a mutating admission policy's expressions: [`ENV`], the struct literals
/// the expression constructs (`Object{…}`, `Object.spec{…}`, `JSONPatch{…}`, which take any
/// field, as kube-apiserver's are not type checked either) and `jsonpatch.escapeKey`
/// (`apiserver/pkg/cel/library/jsonpatch.go`,
/// <https://github.com/kubernetes/kubernetes/blob/v1.37.2/staging/src/k8s.io/apiserver/pkg/cel/library/jsonpatch.go>).
pub fn mutation_env(expressions: &[&str]) -> Arc<Env> {
    let mut env = base();
    let _ = cel::add_overload!(env, fn escape_key: (CelString) -> CelString, name = "jsonpatch.escapeKey");
    let mut names: Vec<String> = expressions.iter().flat_map(|e| struct_literals(e)).collect();
    names.sort();
    names.dedup();
    for name in names {
        // A name that is no identifier path is refused by the registry; the expression then
        // fails to evaluate, which is the policy's error to report.
        let _ = env.add_type(OpenStruct(Type::new_struct(name)));
    }
    Arc::new(env)
}

fn escape_key(key: &CelString<'_>) -> CelString<'static> {
    key.inner().replace('~', "~0").replace('/', "~1").into()
}

/// The type names of the struct literals in an expression: each `Object` or `JSONPatch`
/// identifier path followed by `{` (string literals skipped).
fn struct_literals(expression: &str) -> Vec<String> {
    let chars: Vec<char> = expression.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' {
            // Skip a string literal (triple-quoted ones end at the same quote, escapes skipped).
            i += 1;
            while i < chars.len() && chars[i] != c {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '.') {
                i += 1;
            }
            let ident: String = chars[start..i].iter().collect();
            let mut j = i;
            while j < chars.len() && chars[j].is_whitespace() {
                j += 1;
            }
            let rooted = ident == "JSONPatch" || ident == "Object" || ident.starts_with("Object.");
            if rooted && chars.get(j) == Some(&'{') && (start == 0 || chars[start - 1] != '.') {
                out.push(ident);
            }
            continue;
        }
        i += 1;
    }
    out
}

/// A struct type whose literals take any field.
struct OpenStruct(Type);

impl StructType for OpenStruct {
    fn get_type(&self) -> &Type {
        &self.0
    }

    fn new_value<'b, 'v>(&self, fields: BTreeMap<String, CowVal<'b, 'v>>) -> Result<Box<dyn Val + 'v>, ExecutionError> {
        let mut s = CelStruct::new(self.0.name().to_string());
        for (name, value) in fields {
            s.add_field_value(name, value);
        }
        Ok(Box::new(s))
    }
}

/// A CEL value as JSON; a struct becomes an object of its fields. `Err` names a value JSON
/// cannot hold (bytes, durations, types, functions).
pub fn to_json(v: &Cel) -> Result<Value, String> {
    Ok(match v {
        Cel::Null => Value::Null,
        Cel::Bool(b) => Value::Bool(*b),
        Cel::Int(i) => Value::from(*i),
        Cel::UInt(u) => Value::from(*u),
        Cel::Float(f) => serde_json::Number::from_f64(*f).map(Value::Number).ok_or("a float JSON cannot hold")?,
        Cel::String(s) => Value::String(s.to_string()),
        Cel::List(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Cel::Map(m) => {
            let mut out = serde_json::Map::new();
            for (k, v) in m.map.iter() {
                let Key::String(k) = k else { return Err(format!("a map key that is not a string: {k:?}")) };
                out.insert(k.to_string(), to_json(v)?);
            }
            Value::Object(out)
        }
        Cel::Struct(s) => {
            let mut out = serde_json::Map::new();
            for (k, v) in s.field_values() {
                let v = Cel::try_from(v.as_ref()).map_err(|e| e.to_string())?;
                out.insert(k, to_json(&v)?);
            }
            Value::Object(out)
        }
        other => return Err(format!("a value JSON cannot hold: {other:?}")),
    })
}

/// Where a struct literal's type name does not follow the field path from its root type
/// (`Object.spec{selector: Object.spec.wrong{}}`), as `ObjectVal.CheckTypeNamesMatchFieldPathNames`
/// (`apiserver/pkg/cel/mutation/dynamic/objects.go`) finds it: the messages.
pub fn struct_path_mismatches(v: &Cel) -> Vec<String> {
    fn walk(v: &Cel, path: &mut Vec<String>, out: &mut Vec<String>) {
        match v {
            Cel::Struct(s) => {
                let expected = path.join(".");
                if s.name() != expected {
                    out.push(format!(
                        "unexpected type name {:?}, expected {expected:?}, which matches field name path from root Object type",
                        s.name()
                    ));
                }
                for (k, f) in s.field_values() {
                    if let Ok(f) = Cel::try_from(f.as_ref()) {
                        path.push(k);
                        walk(&f, path, out);
                        path.pop();
                    }
                }
            }
            Cel::List(items) => items.iter().for_each(|i| walk(i, path, out)),
            Cel::Map(m) => m.map.values().for_each(|i| walk(i, path, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Cel::Struct(s) = v {
        walk(v, &mut vec![s.name().to_string()], &mut out);
    }
    out
}

/// Evaluates a boolean expression over JSON variables. `Err` says why it did not compile, failed
/// at run time (a missing key, say) or gave something other than a bool.
pub fn evaluate_bool(expression: &str, variables: &[(&str, &serde_json::Value)]) -> Result<bool, String> {
    let program = ENV.compile(expression).map_err(|e| format!("compilation failed: {e}"))?;
    let mut ctx = Context::with_env(ENV.clone());
    for (name, value) in variables {
        ctx.add_variable(*name, *value).map_err(|e| format!("variable {name}: {e}"))?;
    }
    match program.execute(&ctx) {
        Ok(Cel::Bool(b)) => Ok(b),
        Ok(other) => Err(format!("the expression gave {other:?}, not a bool")),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_over_json() {
        let device = json!({"driver": "dev.kproof.dev", "attributes": {"dev.kproof.dev": {"index": 1}}});
        let eval = |e: &str| evaluate_bool(e, &[("device", &device)]);
        assert_eq!(eval(r#"device.driver == "dev.kproof.dev""#), Ok(true));
        assert_eq!(eval(r#"device.attributes["dev.kproof.dev"].index == 1"#), Ok(true));
        assert_eq!(eval(r#"device.attributes["dev.kproof.dev"].index > 1"#), Ok(false));
        assert!(eval(r#"device.attributes["other.dev"].index == 1"#).is_err(), "a missing domain is an error");
        assert!(eval("device.driver").is_err(), "not a bool");
        assert!(eval("device.driver ==").is_err(), "does not compile");
    }

    #[test]
    fn struct_literals_of_a_mutation_build_json_and_their_paths_are_checked() {
        let expression =
            r#"Object{spec: Object.spec{replicas: 2, selector: Object.spec.selectorx{}}, data: {"a": "Object{x}"}}"#;
        assert_eq!(struct_literals(expression), ["Object", "Object.spec", "Object.spec.selectorx"]);
        let env = mutation_env(&[expression]);
        let value = env.compile(expression).unwrap().execute(&Context::with_env(env.clone())).unwrap();
        assert_eq!(
            to_json(&value).unwrap(),
            serde_json::json!({"spec": {"replicas": 2, "selector": {}}, "data": {"a": "Object{x}"}})
        );
        assert_eq!(
            struct_path_mismatches(&value),
            [
                r#"unexpected type name "Object.spec.selectorx", expected "Object.spec.selector", which matches field name path from root Object type"#
            ]
        );
        let patch = r#"[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("a/b~c"), value: "v"}]"#;
        let env = mutation_env(&[patch]);
        let value = env.compile(patch).unwrap().execute(&Context::with_env(env.clone())).unwrap();
        assert_eq!(
            to_json(&value).unwrap(),
            serde_json::json!([{"op": "add", "path": "/metadata/labels/a~1b~0c", "value": "v"}])
        );
    }
}
