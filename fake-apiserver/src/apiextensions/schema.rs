//! The compiled form of a structural schema: a tree of [`Node`]s, and a read-only cursor over it
//! for the merge code (server-side apply, strategic merge) that needs list and map types.

use regex::Regex;
use serde_json::Value;

/// A position in a [`StructuralSchema`], exposing what merging needs (list and map types).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SchemaCursor<'a> {
    pub(super) node: &'a Node,
    pub(super) root: bool,
}

impl<'a> SchemaCursor<'a> {
    /// The schema of an object's field or a map's value.
    pub(crate) fn field(&self, name: &str) -> Option<SchemaCursor<'a>> {
        self.node.field_schema(name).map(|node| SchemaCursor { node, root: false })
    }

    /// The schema of a list's items.
    pub(crate) fn items(&self) -> Option<SchemaCursor<'a>> {
        self.node.items.as_deref().map(|node| SchemaCursor { node, root: false })
    }

    /// Whether this is the schema's root (whose `metadata` the server knows, not the schema).
    pub(crate) fn is_root(&self) -> bool {
        self.root
    }

    /// Whether `name` is declared here; `None` where unknown fields are kept or any name goes.
    pub(crate) fn declares(&self, name: &str) -> Option<bool> {
        if self.node.preserve_unknown || self.node.additional.is_some() || self.node.ty != Some(Type::Object) {
            return None;
        }
        Some(self.node.prop(name).is_some())
    }

    /// `x-kubernetes-list-type` as written.
    pub(crate) fn list_type(&self) -> Option<&'static str> {
        self.node.list_type.map(|t| match t {
            ListType::Atomic => "atomic",
            ListType::Set => "set",
            ListType::Map => "map",
        })
    }

    /// `x-kubernetes-list-map-keys`.
    pub(crate) fn list_map_keys(&self) -> &'a [String] {
        &self.node.list_map_keys
    }

    /// `x-kubernetes-map-type` as written.
    pub(crate) fn map_type(&self) -> Option<&'a str> {
        self.node.map_type.as_deref()
    }

    /// The first place where `v` is not of the type the schema says, worded as
    /// structured-merge-diff's typed conversion words it (`typed/validate.go`, `helpers.go`):
    /// `.spec.size: expected numeric (int or float), got string`. Server-side apply converts the
    /// applied object with it before anything validates it (`null` goes anywhere).
    pub(crate) fn type_error(&self, v: &Value) -> Option<String> {
        fn go_type(v: &Value) -> &'static str {
            match v {
                Value::Bool(_) => "bool",
                Value::Number(n) if n.is_f64() => "float64",
                Value::Number(_) => "int64",
                Value::String(_) => "string",
                Value::Array(_) => "[]interface {}",
                Value::Object(_) => "map[string]interface {}",
                Value::Null => "<nil>",
            }
        }
        fn walk(node: &Node, v: &Value, path: &mut String) -> Option<String> {
            if v.is_null() || node.int_or_string && (v.is_number() || v.is_string()) {
                return None;
            }
            let here = |what: String| Some(format!("{path}: {what}"));
            match (node.ty, v) {
                (Some(Type::Integer | Type::Number), v) if !v.is_number() => {
                    here(format!("expected numeric (int or float), got {}", go_type(v)))
                }
                (Some(Type::String), v) if !v.is_string() => {
                    here(format!("expected string, got &value.valueUnstructured{{Value:{v}}}"))
                }
                (Some(Type::Boolean), v) if !v.is_boolean() => here(format!("expected boolean, got {v}")),
                (Some(Type::Object), v) if !v.is_object() => here(format!("expected map, got {v}")),
                (Some(Type::Array), v) if !v.is_array() => here(format!("expected list, got {v}")),
                (_, Value::Object(m)) => m.iter().find_map(|(k, x)| {
                    let child = node.field_schema(k)?;
                    let len = path.len();
                    path.push('.');
                    path.push_str(k);
                    let found = walk(child, x, path);
                    path.truncate(len);
                    found
                }),
                (_, Value::Array(items)) => {
                    let item = node.items.as_deref()?;
                    items.iter().enumerate().find_map(|(i, x)| {
                        let len = path.len();
                        path.push_str(&format!("[{i}]"));
                        let found = walk(item, x, path);
                        path.truncate(len);
                        found
                    })
                }
                _ => None,
            }
        }
        walk(self.node, v, &mut String::new())
    }
}

/// The `type` of a schema node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Type {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
}

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ListType {
    Atomic,
    Set,
    Map,
}

/// A `pattern`, as written and compiled.
#[derive(Debug, Clone)]
pub(super) struct Pattern {
    pub(super) source: String,
    /// `None` when the `regex` crate cannot compile it (e.g. a lookahead): never checked.
    pub(super) re: Option<Regex>,
}

/// `additionalProperties`.
#[derive(Debug, Clone)]
pub(super) enum Additional {
    /// `additionalProperties: true` (`false` is refused, as by apiserver)
    Allowed,
    /// `additionalProperties: {schema}`
    Schema(Box<Node>),
}

/// One compiled schema node: the keywords that prune, default and validate.
#[derive(Debug, Clone, Default)]
pub(super) struct Node {
    pub(super) ty: Option<Type>,
    pub(super) nullable: bool,
    pub(super) int_or_string: bool,
    pub(super) preserve_unknown: bool,
    pub(super) embedded: bool,
    /// Only formats apiserver validates are kept, as written in the schema.
    pub(super) format: Option<String>,
    pub(super) enum_values: Option<Vec<Value>>,
    pub(super) pattern: Option<Pattern>,
    pub(super) minimum: Option<f64>,
    pub(super) exclusive_minimum: bool,
    pub(super) maximum: Option<f64>,
    pub(super) exclusive_maximum: bool,
    pub(super) multiple_of: Option<f64>,
    pub(super) min_length: Option<u64>,
    pub(super) max_length: Option<u64>,
    pub(super) min_items: Option<u64>,
    pub(super) max_items: Option<u64>,
    pub(super) min_properties: Option<u64>,
    pub(super) max_properties: Option<u64>,
    pub(super) required: Vec<String>,
    /// Sorted by name, for binary search. Children are boxed to keep the
    /// recursive functions' stack frames small.
    pub(super) properties: Vec<(String, Box<Node>)>,
    pub(super) additional: Option<Additional>,
    pub(super) items: Option<Box<Node>>,
    pub(super) all_of: Vec<Node>,
    pub(super) any_of: Vec<Node>,
    pub(super) one_of: Vec<Node>,
    pub(super) not: Option<Box<Node>>,
    pub(super) list_type: Option<ListType>,
    pub(super) list_map_keys: Vec<String>,
    /// `x-kubernetes-map-type` as written (`atomic` or `granular`), for server-side apply.
    pub(super) map_type: Option<String>,
    pub(super) default: Option<Value>,
    /// `x-kubernetes-validations`, compiled.
    pub(super) rules: std::sync::Arc<Vec<super::cel::Rule>>,
    /// Whether this node or one below it (through properties, additionalProperties or items,
    /// the ways a CEL pass descends) has rules: a pass skips values with none to run.
    pub(super) rules_below: bool,
}

impl Node {
    /// The schema of the declared property `name`.
    pub(super) fn prop(&self, name: &str) -> Option<&Node> {
        self.properties
            .binary_search_by(|(k, _)| k.as_str().cmp(name))
            .ok()
            .and_then(|i| self.properties.get(i))
            .map(|(_, n)| &**n)
    }

    /// The schema of an object's field: its property, else its additionalProperties schema.
    pub(super) fn field_schema(&self, name: &str) -> Option<&Node> {
        self.prop(name).or(match &self.additional {
            Some(Additional::Schema(s)) => Some(s),
            _ => None,
        })
    }

    /// The `type` list kube-openapi checks: int-or-string becomes `integer,string`.
    pub(super) fn types(&self) -> &'static [&'static str] {
        if self.int_or_string {
            return &["integer", "string"];
        }
        match self.ty {
            None => &[],
            Some(Type::Object) => &["object"],
            Some(Type::Array) => &["array"],
            Some(Type::String) => &["string"],
            Some(Type::Integer) => &["integer"],
            Some(Type::Number) => &["number"],
            Some(Type::Boolean) => &["boolean"],
        }
    }
}

/// Formats apiserver validates (after removing `-`); all others are stripped there.
pub(super) const SUPPORTED_FORMATS: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
];

/// The JSON fields of ObjectMeta: all an embedded resource's `metadata` may keep.
pub(crate) const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Whether `k` is one of the fields the server handles at the root (and in embedded resources).
pub(super) fn is_meta_field(k: &str) -> bool {
    matches!(k, "apiVersion" | "kind" | "metadata")
}
