//! Compiling an `openAPIV3Schema` into a [`Node`] tree, refusing what kube-apiserver refuses.

use super::schema::{Additional, ListType, Node, Pattern, SUPPORTED_FORMATS, Type};
use super::{MAX_SCHEMA_DEPTH, SchemaError, schema_err};
use regex::Regex;
use serde_json::Value;
use std::collections::HashMap;

/// Compiles schema nodes, remembering the patterns it has compiled.
pub(super) struct Compiler {
    /// Real CRDs repeat the same patterns hundreds of times: compile each once.
    pub(super) regexes: HashMap<String, Option<Regex>>,
}

fn want_bool(v: &Value, path: &str) -> Result<bool, SchemaError> {
    v.as_bool().ok_or_else(|| schema_err(path, "must be a boolean"))
}

fn want_number(v: &Value, path: &str) -> Result<f64, SchemaError> {
    match v.as_f64() {
        Some(f) if f.is_finite() => Ok(f),
        _ => Err(schema_err(path, "must be a number")),
    }
}

fn want_count(v: &Value, path: &str) -> Result<u64, SchemaError> {
    v.as_u64().ok_or_else(|| schema_err(path, "must be a non-negative integer"))
}

fn want_strings(v: &Value, path: &str) -> Result<Vec<String>, SchemaError> {
    let Value::Array(a) = v else {
        return Err(schema_err(path, "must be an array of strings"));
    };
    a.iter()
        .map(|s| s.as_str().map(str::to_string).ok_or_else(|| schema_err(path, "must be an array of strings")))
        .collect()
}

impl Compiler {
    fn pattern(&mut self, source: &str) -> Pattern {
        let re = self.regexes.entry(source.to_string()).or_insert_with(|| Regex::new(source).ok()).clone();
        Pattern { source: source.to_string(), re }
    }

    fn schemas(&mut self, v: &Value, path: &str, depth: usize) -> Result<Vec<Node>, SchemaError> {
        let Value::Array(a) = v else {
            return Err(schema_err(path, "must be an array of schemas"));
        };
        a.iter().enumerate().map(|(i, s)| Ok(*self.node(s, &format!("{path}[{i}]"), depth + 1)?)).collect()
    }

    /// The node of the schema `v` found at schema path `path`, `depth` levels down.
    pub(super) fn node(&mut self, v: &Value, path: &str, depth: usize) -> Result<Box<Node>, SchemaError> {
        if depth > MAX_SCHEMA_DEPTH {
            return Err(schema_err(path, format!("schema nests more than {MAX_SCHEMA_DEPTH} levels")));
        }
        let Value::Object(m) = v else {
            return Err(schema_err(path, "must be an object (a schema)"));
        };
        let mut n = Box::<Node>::default();
        // Only the keywords holding schemas recurse, from this small frame; the
        // others go through `keyword`, whose large frame is gone before any recursion.
        for (k, val) in m {
            let p = format!("{path}.{k}");
            match k.as_str() {
                "properties" if val.is_object() => n.properties = self.properties(val, &p, depth)?,
                "additionalProperties" if val.is_object() => {
                    n.additional = Some(Additional::Schema(self.node(val, &p, depth + 1)?));
                }
                "items" if val.is_object() => n.items = Some(self.node(val, &p, depth + 1)?),
                "allOf" => n.all_of = self.schemas(val, &p, depth)?,
                "anyOf" => n.any_of = self.schemas(val, &p, depth)?,
                "oneOf" => n.one_of = self.schemas(val, &p, depth)?,
                "not" => n.not = Some(self.node(val, &p, depth + 1)?),
                _ => self.keyword(&mut n, k, val, &p)?,
            }
        }
        if !n.properties.is_empty() && n.additional.is_some() {
            return Err(schema_err(
                &format!("{path}.additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if n.list_type == Some(ListType::Map) && n.list_map_keys.is_empty() {
            return Err(schema_err(
                &format!("{path}.x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        n.rules_below = !n.rules.is_empty()
            || n.properties.iter().any(|(_, c)| c.rules_below)
            || matches!(&n.additional, Some(Additional::Schema(s)) if s.rules_below)
            || n.items.as_ref().is_some_and(|i| i.rules_below);
        Ok(n)
    }

    fn properties(&mut self, v: &Value, path: &str, depth: usize) -> Result<Vec<(String, Box<Node>)>, SchemaError> {
        let Value::Object(props) = v else {
            return Err(schema_err(path, "must be an object of schemas"));
        };
        let mut out = Vec::with_capacity(props.len());
        for (name, s) in props {
            out.push((name.clone(), self.node(s, &format!("{path}.{name}"), depth + 1)?));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// One keyword of a schema node that is not itself a schema, at schema path `p`.
    fn keyword(&mut self, n: &mut Node, k: &str, val: &Value, p: &str) -> Result<(), SchemaError> {
        {
            let p = p.to_string();
            match k {
                "type" => {
                    n.ty = match val.as_str() {
                        Some("object") => Some(Type::Object),
                        Some("array") => Some(Type::Array),
                        Some("string") => Some(Type::String),
                        Some("integer") => Some(Type::Integer),
                        Some("number") => Some(Type::Number),
                        Some("boolean") => Some(Type::Boolean),
                        Some("") => None,
                        Some(other) => {
                            return Err(schema_err(
                                &p,
                                format!(
                                    "unsupported type {other:?}: must be one of object, array, string, integer, number, boolean"
                                ),
                            ));
                        }
                        None => return Err(schema_err(&p, "must be a string")),
                    }
                }
                "nullable" => n.nullable = want_bool(val, &p)?,
                "x-kubernetes-int-or-string" => n.int_or_string = want_bool(val, &p)?,
                "x-kubernetes-preserve-unknown-fields" => n.preserve_unknown = want_bool(val, &p)?,
                "x-kubernetes-embedded-resource" => n.embedded = want_bool(val, &p)?,
                "exclusiveMinimum" => n.exclusive_minimum = want_bool(val, &p)?,
                "exclusiveMaximum" => n.exclusive_maximum = want_bool(val, &p)?,
                "uniqueItems" => match val {
                    Value::Bool(false) => {}
                    // apiserver refuses it in CRDs: quadratic to check.
                    Value::Bool(true) => {
                        return Err(schema_err(
                            &p,
                            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
                        ));
                    }
                    _ => return Err(schema_err(&p, "must be a boolean")),
                },
                "format" => {
                    let f = val.as_str().ok_or_else(|| schema_err(&p, "must be a string"))?;
                    if SUPPORTED_FORMATS.contains(&f.replace('-', "").as_str()) {
                        n.format = Some(f.to_string());
                    }
                }
                "enum" => {
                    let Value::Array(a) = val else {
                        return Err(schema_err(&p, "must be an array"));
                    };
                    n.enum_values = Some(a.clone());
                }
                "pattern" => {
                    let s = val.as_str().ok_or_else(|| schema_err(&p, "must be a string"))?;
                    n.pattern = Some(self.pattern(s));
                }
                "minimum" => n.minimum = Some(want_number(val, &p)?),
                "maximum" => n.maximum = Some(want_number(val, &p)?),
                "multipleOf" => {
                    let f = want_number(val, &p)?;
                    if f <= 0.0 {
                        return Err(schema_err(&p, "must be greater than zero"));
                    }
                    n.multiple_of = Some(f);
                }
                "minLength" => n.min_length = Some(want_count(val, &p)?),
                "maxLength" => n.max_length = Some(want_count(val, &p)?),
                "minItems" => n.min_items = Some(want_count(val, &p)?),
                "maxItems" => n.max_items = Some(want_count(val, &p)?),
                "minProperties" => n.min_properties = Some(want_count(val, &p)?),
                "maxProperties" => n.max_properties = Some(want_count(val, &p)?),
                "required" => n.required = want_strings(val, &p)?,
                // The schema-valued forms of these are handled by `node`.
                "properties" => return Err(schema_err(&p, "must be an object of schemas")),
                "additionalProperties" => {
                    n.additional = Some(match val {
                        Value::Bool(true) => Additional::Allowed,
                        // Against the API convention of ignoring unknown fields: apiserver refuses it.
                        Value::Bool(false) => {
                            return Err(schema_err(&p, "additionalProperties cannot be set to false"));
                        }
                        _ => return Err(schema_err(&p, "must be a boolean or a schema")),
                    })
                }
                "items" => {
                    return Err(schema_err(&p, "must be a schema object and not an array"));
                }
                "x-kubernetes-list-type" => {
                    n.list_type = Some(match val.as_str() {
                        Some("atomic") => ListType::Atomic,
                        Some("set") => ListType::Set,
                        Some("map") => ListType::Map,
                        _ => {
                            return Err(schema_err(&p, "must be one of \"atomic\", \"set\", \"map\""));
                        }
                    })
                }
                "x-kubernetes-list-map-keys" => n.list_map_keys = want_strings(val, &p)?,
                "x-kubernetes-map-type" => n.map_type = val.as_str().map(str::to_string),
                "default" => n.default = Some(val.clone()),
                "$ref" => return Err(schema_err(&p, "$ref is not supported in CRD schemas")),
                "x-kubernetes-validations" => {
                    let rules = super::cel::compile_rules(val, &p).map_err(|m| schema_err(&p, m))?;
                    n.rules = std::sync::Arc::new(rules);
                }
                // description, title, example, externalDocs, ...: no effect here.
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::apiextensions::test_schemas::*;
    use crate::apiextensions::*;
    use rstest::rstest;
    use serde_json::{Value, json};

    // ----- compile -------------------------------------------------------

    #[rstest]
    #[case(json!({"type": "strin"}), "openAPIV3Schema.type: unsupported type \"strin\": must be one of object, array, string, integer, number, boolean")]
    #[case(json!({"type": 3}), "openAPIV3Schema.type: must be a string")]
    #[case(json!({"type": "object", "properties": []}), "openAPIV3Schema.properties: must be an object of schemas")]
    #[case(json!({"type": "object", "properties": {"a": "string"}}), "openAPIV3Schema.properties.a: must be an object (a schema)")]
    #[case(json!({"type": "array", "items": [{"type": "string"}]}), "openAPIV3Schema.items: must be a schema object and not an array")]
    #[case(json!({"type": "string", "minLength": -1}), "openAPIV3Schema.minLength: must be a non-negative integer")]
    #[case(json!({"type": "string", "maxLength": "3"}), "openAPIV3Schema.maxLength: must be a non-negative integer")]
    #[case(json!({"type": "number", "minimum": "0"}), "openAPIV3Schema.minimum: must be a number")]
    #[case(json!({"type": "number", "multipleOf": 0}), "openAPIV3Schema.multipleOf: must be greater than zero")]
    #[case(json!({"type": "object", "required": "a"}), "openAPIV3Schema.required: must be an array of strings")]
    #[case(json!({"type": "object", "required": [1]}), "openAPIV3Schema.required: must be an array of strings")]
    #[case(json!({"type": "string", "enum": "a"}), "openAPIV3Schema.enum: must be an array")]
    #[case(json!({"type": "string", "pattern": 5}), "openAPIV3Schema.pattern: must be a string")]
    #[case(json!({"type": "string", "nullable": "yes"}), "openAPIV3Schema.nullable: must be a boolean")]
    #[case(json!({"type": "array", "x-kubernetes-list-type": "bag"}), "openAPIV3Schema.x-kubernetes-list-type: must be one of \"atomic\", \"set\", \"map\"")]
    #[case(json!({"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}}), "openAPIV3Schema.x-kubernetes-list-map-keys: must not be empty if x-kubernetes-list-type is map")]
    #[case(json!({"type": "array", "uniqueItems": true}), "openAPIV3Schema.uniqueItems: uniqueItems cannot be set to true since the runtime complexity becomes quadratic")]
    #[case(json!({"$ref": "#/definitions/x"}), "openAPIV3Schema.$ref: $ref is not supported in CRD schemas")]
    #[case(json!({"type": "object", "additionalProperties": "yes"}), "openAPIV3Schema.additionalProperties: must be a boolean or a schema")]
    #[case(json!({"type": "object", "additionalProperties": false}), "openAPIV3Schema.additionalProperties: additionalProperties cannot be set to false")]
    #[case(json!({"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "string"}}), "openAPIV3Schema.additionalProperties: additionalProperties and properties are mutual exclusive")]
    #[case(json!({"anyOf": {"type": "string"}}), "openAPIV3Schema.anyOf: must be an array of schemas")]
    #[case(json!("object"), "openAPIV3Schema: must be an object (a schema)")]
    #[case(json!({"type": "object", "properties": {"spec": {"type": "objec"}}}), "openAPIV3Schema.properties.spec.type: unsupported type \"objec\": must be one of object, array, string, integer, number, boolean")]
    fn compile_rejects_malformed_schemas(#[case] schema: Value, #[case] message: &str) {
        let err = StructuralSchema::compile(&schema).err().map(|e| e.to_string());
        assert_eq!(err.as_deref(), Some(message), "{schema}");
    }

    #[test]
    fn declared_status_and_paths_are_found() {
        let s = compile(json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
        }}));
        let path = |p: &str| p.split('.').try_fold(s.cursor(), |c, f| c.field(f)).is_some();
        assert!(path("status"));
        assert!(path("spec.replicas"));
        assert!(path("status.replicas"));
        assert!(!path("spec.selector"));
        assert!(field(json!({"type": "string"})).cursor().field("status").is_none());
    }

    #[test]
    fn compile_rejects_too_deep_schema() {
        let mut s = json!({"type": "string"});
        for _ in 0..(MAX_SCHEMA_DEPTH + 2) {
            s = json!({"type": "object", "properties": {"a": s}});
        }
        let err = StructuralSchema::compile(&s).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.starts_with("openAPIV3Schema.properties.a.properties.a."), "{err}");
        assert!(err.ends_with(".properties.a: schema nests more than 256 levels"), "{err}");
    }

    #[test]
    fn compile_accepts_gateway_api_patterns_and_unchecked_ones() {
        let s = field(json!({"type": "string",
            "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"}));
        assert!(check(&s, json!("gateway.networking.k8s.io")).is_empty());
        assert_eq!(one(check(&s, json!("-bad"))).reason, FieldCause::INVALID);

        let s = field(json!({"type": "string", "pattern": "^Ready|Accepted$"}));
        assert!(check(&s, json!("Ready-ish")).is_empty());
        assert!(check(&s, json!("x Accepted")).is_empty());
        assert_eq!(check(&s, json!("Programmed")).len(), 1);

        // More Gateway API patterns (paths, header names, durations).
        for p in [
            r"^/[a-zA-Z0-9\-._~!$&'()*+,;=:@%/]*$",
            r"^[A-Za-z0-9!#$%&'*+\-.^_\x60|~]+$",
            r"^([0-9]{1,5}(h|m|s|ms)){1,4}$",
            r"^(([^:/?#]+):)?(//([^/?#]*))?([^?#]*)(\?([^#]*))?(#(.*))?",
        ] {
            assert!(StructuralSchema::compile(&json!({"type": "string", "pattern": p})).is_ok(), "{p}");
        }

        // A lookahead does not compile with `regex`: accepted, never checked.
        let s = field(json!({"type": "string", "pattern": "^(?!kube-).*$"}));
        assert!(check(&s, json!("kube-system")).is_empty());
    }
}
