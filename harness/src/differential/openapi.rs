//! kube-apiserver's own OpenAPI v3 documents, read from the real server of a differential run,
//! as the second corpus needs them: the schema of a kind, and every field of a valid object
//! with what its schema says of it (type, format, enum, list type, required, the optional
//! fields the object leaves out).
//!
//! Published at `/openapi/v3` (an index of group-versions) and `/openapi/v3/<group-version>`
//! (https://kubernetes.io/docs/concepts/overview/kubernetes-api/#openapi-v3); built-in types
//! refer to their parts with `$ref` or `allOf: [{$ref}]` under `components.schemas`, custom
//! resources carry their CRD's structural schema.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The schemas of the group-versions read, by name (`io.k8s.api.core.v1.Pod`).
#[derive(Debug, Clone, Default)]
pub struct Schemas {
    by_name: BTreeMap<String, Value>,
}

/// What a field's schema says, after following references.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// `type: object` with `properties` (a struct).
    Struct,
    /// `type: object` with `additionalProperties` (a map of string keys).
    Map,
    /// `type: array`.
    List {
        /// `x-kubernetes-list-type` (`atomic` when absent).
        list_type: String,
        /// `x-kubernetes-list-map-keys`.
        keys: Vec<String>,
    },
    /// `type: string`.
    String {
        /// `format` (`date-time`, `byte`, ...).
        format: String,
        /// `enum`.
        enumeration: Vec<String>,
    },
    /// `type: integer`.
    Integer {
        /// `format` (`int32`, `int64`).
        format: String,
    },
    /// `type: number`.
    Number,
    /// `type: boolean`.
    Boolean,
    /// `resource.Quantity`: a string or a number.
    Quantity,
    /// `intstr.IntOrString`.
    IntOrString,
    /// Anything else (`x-kubernetes-preserve-unknown-fields`, `RawExtension`).
    Free,
}

/// A field of an object: where it is, what its schema says, and whether the object has it.
#[derive(Debug, Clone)]
pub struct Field {
    /// JSON pointer in the object (`/spec/containers/0/ports/0/protocol`).
    pub pointer: String,
    /// The shape of its schema.
    pub shape: Shape,
    /// Its parent lists it in `required`.
    pub required: bool,
    /// The object sets it.
    pub present: bool,
    /// The schema's own name, when the field's type is a named schema.
    pub type_name: Option<String>,
}

impl Schemas {
    /// Adds the `components.schemas` of one OpenAPI v3 document.
    pub fn add_document(&mut self, doc: &Value) {
        if let Some(m) = doc.pointer("/components/schemas").and_then(Value::as_object) {
            for (name, schema) in m {
                self.by_name.insert(name.clone(), schema.clone());
            }
        }
    }

    /// How many schemas were read.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether none were read.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The schema of `kind` in `apiVersion`, found by its `x-kubernetes-group-version-kind`.
    pub fn root(&self, api_version: &str, kind: &str) -> Option<&Value> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.by_name.values().find(|s| {
            s["x-kubernetes-group-version-kind"].as_array().is_some_and(|gvks| {
                gvks.iter().any(|g| g["group"] == group && g["version"] == version && g["kind"] == kind)
            })
        })
    }

    /// Follows `$ref` and a single-element `allOf` to the schema meant, with the name of the
    /// last schema referred to.
    fn resolve<'a>(&'a self, mut schema: &'a Value) -> (&'a Value, Option<String>) {
        let mut name = None;
        for _ in 0..16 {
            let reference = schema["$ref"].as_str().or_else(|| match schema["allOf"].as_array() {
                Some(all) if all.len() == 1 => all[0]["$ref"].as_str(),
                _ => None,
            });
            let Some(r) = reference else { break };
            let Some(n) = r.strip_prefix("#/components/schemas/") else { break };
            let Some(next) = self.by_name.get(n) else { break };
            name = Some(n.to_string());
            schema = next;
        }
        (schema, name)
    }

    fn shape(&self, schema: &Value, name: Option<&str>) -> Shape {
        match name {
            Some("io.k8s.apimachinery.pkg.api.resource.Quantity") => return Shape::Quantity,
            Some("io.k8s.apimachinery.pkg.util.intstr.IntOrString") => return Shape::IntOrString,
            _ => {}
        }
        if schema["x-kubernetes-int-or-string"] == true || schema["format"] == "int-or-string" {
            return Shape::IntOrString;
        }
        let text = |k: &str| schema[k].as_str().unwrap_or_default().to_string();
        match schema["type"].as_str() {
            Some("object") if schema.get("properties").is_some() => Shape::Struct,
            Some("object") if schema.get("additionalProperties").is_some() => Shape::Map,
            Some("array") => Shape::List {
                list_type: schema["x-kubernetes-list-type"].as_str().unwrap_or("atomic").to_string(),
                keys: schema["x-kubernetes-list-map-keys"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|k| k.as_str().map(str::to_string))
                    .collect(),
            },
            Some("string") => Shape::String {
                format: text("format"),
                enumeration: schema["enum"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|k| k.as_str().map(str::to_string))
                    .collect(),
            },
            Some("integer") => Shape::Integer { format: text("format") },
            Some("number") => Shape::Number,
            Some("boolean") => Shape::Boolean,
            _ => Shape::Free,
        }
    }

    /// Every field of `object` under `root` (and, for structs the object has, their absent
    /// properties), to `depth` levels. `metadata.managedFields` and `status` are left out:
    /// the first is the server's, the second is written through its own subresource.
    pub fn fields(&self, root: &Value, object: &Value, depth: usize) -> Vec<Field> {
        let mut out = Vec::new();
        self.walk(root, Some(object), "", depth, &mut out);
        out
    }

    fn walk(&self, schema: &Value, value: Option<&Value>, at: &str, depth: usize, out: &mut Vec<Field>) {
        if depth == 0 {
            return;
        }
        let (schema, _) = self.resolve(schema);
        let (Some(props), Some(Value::Object(obj))) = (schema["properties"].as_object(), value) else {
            if let (Some(Value::Array(items)), Some(item_schema)) = (value, schema.get("items"))
                && let Some(first) = items.first()
            {
                let here = format!("{at}/0");
                self.push(item_schema, Some(first), &here, false, out);
                self.walk(item_schema, Some(first), &here, depth - 1, out);
            }
            // The entries of a map (resource requests: quantities).
            if let (Some(Value::Object(entries)), Some(entry_schema)) = (value, schema.get("additionalProperties"))
                && entry_schema.is_object()
            {
                for (k, v) in entries {
                    let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                    self.push(entry_schema, Some(v), &here, false, out);
                    self.walk(entry_schema, Some(v), &here, depth - 1, out);
                }
            }
            return;
        };
        let required: Vec<&str> =
            schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        for (name, prop) in props {
            if at.is_empty() && matches!(name.as_str(), "status" | "apiVersion" | "kind") {
                continue;
            }
            if at == "/metadata" && matches!(name.as_str(), "managedFields" | "name" | "namespace") {
                continue;
            }
            let here = format!("{at}/{}", name.replace('~', "~0").replace('/', "~1"));
            let child = obj.get(name);
            self.push(prop, child, &here, required.contains(&name.as_str()), out);
            if child.is_some() {
                self.walk(prop, child, &here, depth - 1, out);
            }
        }
    }

    fn push(&self, schema: &Value, value: Option<&Value>, at: &str, required: bool, out: &mut Vec<Field>) {
        let (resolved, name) = self.resolve(schema);
        out.push(Field {
            pointer: at.to_string(),
            shape: self.shape(resolved, name.as_deref()),
            required,
            present: value.is_some(),
            type_name: name,
        });
    }

    /// A plausible value for a field of this schema (what a client would send to set it):
    /// the first enum value, a small number, a struct with its required fields.
    pub fn example(&self, field: &Field, depth: usize) -> Value {
        self.example_of(&field.shape, field.type_name.as_deref(), depth)
    }

    fn example_of(&self, shape: &Shape, type_name: Option<&str>, depth: usize) -> Value {
        match shape {
            Shape::String { format, enumeration } => match (enumeration.first(), format.as_str()) {
                (Some(e), _) => Value::String(e.clone()),
                (None, "date-time") => Value::String("2026-01-02T03:04:05Z".into()),
                (None, "byte") => Value::String("a3Byb29m".into()),
                _ => Value::String("x".into()),
            },
            Shape::Integer { .. } => Value::from(1),
            Shape::Number => Value::from(1.5),
            Shape::Boolean => Value::Bool(true),
            Shape::Quantity => Value::String("1".into()),
            Shape::IntOrString => Value::from(1),
            Shape::Map => Value::Object(Map::new()),
            Shape::List { .. } | Shape::Free => Value::Array(Vec::new()),
            Shape::Struct => {
                let mut m = Map::new();
                let Some(schema) = type_name.and_then(|n| self.by_name.get(n)) else { return Value::Object(m) };
                if depth == 0 {
                    return Value::Object(m);
                }
                for r in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                    if let Some(p) = schema["properties"].get(r) {
                        let (resolved, name) = self.resolve(p);
                        let shape = self.shape(resolved, name.as_deref());
                        m.insert(r.to_string(), self.example_of(&shape, name.as_deref(), depth - 1));
                    }
                }
                Value::Object(m)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schemas() -> Schemas {
        let doc = json!({"components": {"schemas": {
            "io.k8s.api.core.v1.Pod": {
                "type": "object",
                "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "Pod"}],
                "properties": {
                    "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},
                    "spec": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]},
                    "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
                }
            },
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "labels": {"type": "object", "additionalProperties": {"type": "string"}}}
            },
            "io.k8s.api.core.v1.PodSpec": {
                "type": "object",
                "required": ["containers"],
                "properties": {
                    "containers": {"type": "array", "items": {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"},
                                   "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
                    "restartPolicy": {"type": "string", "enum": ["Always", "Never", "OnFailure"]},
                    "overhead": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"}}
                }
            },
            "io.k8s.api.core.v1.Container": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string"}, "image": {"type": "string"}, "stdin": {"type": "boolean"},
                               "terminationGracePeriodSeconds": {"type": "integer", "format": "int64"}}
            },
            "io.k8s.apimachinery.pkg.api.resource.Quantity": {"oneOf": [{"type": "string"}, {"type": "number"}]}
        }}});
        let mut s = Schemas::default();
        s.add_document(&doc);
        s
    }

    #[test]
    fn the_fields_of_an_object_follow_references_and_name_what_is_absent() {
        let s = schemas();
        let root = s.root("v1", "Pod").expect("Pod by its group-version-kind");
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                         "spec": {"containers": [{"name": "app", "image": "i"}]}, "status": {"phase": "Running"}});
        let fields = s.fields(root, &pod, 8);
        let at = |p: &str| fields.iter().find(|f| f.pointer == p).unwrap_or_else(|| panic!("no field {p}: {fields:?}"));
        assert_eq!(at("/spec/containers").shape, Shape::List { list_type: "map".into(), keys: vec!["name".into()] });
        assert!(at("/spec/containers").required && at("/spec/containers").present);
        assert!(at("/spec/containers/0/name").required);
        let stdin = at("/spec/containers/0/stdin");
        assert!(!stdin.present && stdin.shape == Shape::Boolean);
        assert_eq!(
            at("/spec/restartPolicy").shape,
            Shape::String {
                format: String::new(),
                enumeration: vec!["Always".into(), "Never".into(), "OnFailure".into()]
            }
        );
        assert_eq!(at("/metadata/labels").shape, Shape::Map);
        assert!(fields.iter().all(|f| !f.pointer.starts_with("/status") && f.pointer != "/metadata/name"));
        assert_eq!(s.example(at("/spec/restartPolicy"), 2), json!("Always"));
    }

    #[test]
    fn a_missing_kind_has_no_root() {
        assert!(schemas().root("apps/v1", "Deployment").is_none());
    }
}
