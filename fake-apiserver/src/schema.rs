//! Structural schemas of CustomResourceDefinitions: validation, pruning and
//! defaulting of custom resources, modelled on kube-apiserver
//! (k8s.io/apiextensions-apiserver `pkg/apiserver/schema`, `.../validation`,
//! `.../schema/pruning`, `.../schema/defaulting`, `.../schema/listtype`,
//! `.../schema/objectmeta` and kube-openapi's `pkg/validation/validate`).
//!
//! A CRD version's `openAPIV3Schema` is compiled once with
//! [`StructuralSchema::compile`]; the server then, for every write, does what
//! kube-apiserver does in this order:
//!
//! 1. [`StructuralSchema::prune`] drops unknown fields (the returned paths feed
//!    `fieldValidation=Strict|Warn`),
//! 2. [`StructuralSchema::apply_defaults`] drops non-nullable `null`s and fills
//!    in `default`s,
//! 3. [`StructuralSchema::validate`] reports every violation as a
//!    [`FieldCause`] whose `message` has the text apiserver puts in a
//!    `StatusCause` (for example
//!    `Invalid value: "string": spec.replicas in body must be of type integer: "string"`).
//!
//! Fidelity notes, where this deliberately follows apiserver rather than
//! intuition:
//! * Field paths are dotted from the object root, list items as `[i]` and map
//!   values as `.key` (`spec.labels.foo`), as kube-openapi reports them.
//! * Only the string formats apiserver knows are checked (`date-time`, `date`,
//!   `byte`, `uuid*`, `duration`, `ipv4`, `ipv6`, `cidr`, `hostname`, `mac`,
//!   `email`, `uri`, `hexcolor`, `rgbcolor`, `ssn`, `isbn*`, `creditcard`,
//!   `bsonobjectid`, `password`); every other format is ignored. In particular
//!   apiserver strips `int32`, `int64`, `float` and `double` before validating,
//!   so an `int32` field accepts `3000000000` there and here.
//! * A format error has reason `FieldValueTypeInvalid`, as in apiserver
//!   (kube-openapi reports it as an invalid type).
//! * `minProperties`/`maxProperties` failures stop the validation of that
//!   object's fields, and a string reports only the first of
//!   `maxLength`/`minLength`/`pattern` that fails, as kube-openapi does.
//! * `anyOf`/`oneOf`/`allOf`/`not` errors are reported at the node they sit on
//!   (apiserver puts them at the root path `<nil>`), followed, for
//!   `anyOf`/`oneOf`, by the errors of the closest failing alternative.
//! * Patterns are compiled with the `regex` crate, which is RE2-like like Go's
//!   `regexp`. A pattern that does not compile is kept but never checked, so
//!   that CRDs from the wild still install.
//! * `x-kubernetes-validations` (CEL rules) are NOT evaluated: they are
//!   accepted and ignored.
//! * The root's `apiVersion`, `kind` and `metadata` are neither pruned nor
//!   validated here: the server handles ObjectMeta itself.
//! * Like apiserver, compiling refuses `additionalProperties: false`,
//!   `additionalProperties` next to `properties`, `uniqueItems: true`, `$ref`
//!   and list-type `map` without keys. Below `additionalProperties: true`
//!   apiserver prunes as if there were no schema (objects are emptied); so
//!   does this module.
//! * Work is bounded: the schema may nest at most [`MAX_SCHEMA_DEPTH`] levels,
//!   objects are followed at most [`MAX_DEPTH`] levels, and a validation stops
//!   after [`VALIDATION_BUDGET`] (schema node, value) visits, since `anyOf`
//!   alternatives applied to every item of a long list multiply the work.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::sync::{Arc, OnceLock};

use regex::Regex;
use serde_json::{Map, Number, Value};

/// How deep an object is followed by validation, pruning and defaulting.
/// Deeper values are reported as "too deeply nested" by [`StructuralSchema::validate`]
/// and left alone by pruning and defaulting.
pub const MAX_DEPTH: usize = 128;

/// How deep a schema may nest (properties, items and junctors all count) before
/// [`StructuralSchema::compile`] rejects it. Larger than [`MAX_DEPTH`] because
/// `anyOf` and friends add schema levels without adding object levels.
pub const MAX_SCHEMA_DEPTH: usize = 256;

/// How many (schema node, value) visits one [`StructuralSchema::validate`] call
/// may make before it gives up with a single cause at the root.
pub const VALIDATION_BUDGET: u64 = 5_000_000;

/// Why an `openAPIV3Schema` could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The schema node at `path` (dotted from `openAPIV3Schema`) is malformed.
    #[error("{path}: {message}")]
    Invalid {
        /// Where in the schema, e.g. `openAPIV3Schema.properties.spec.type`.
        path: String,
        /// What is wrong there.
        message: String,
    },
}

fn schema_err(path: &str, message: impl Into<String>) -> SchemaError {
    SchemaError::Invalid { path: path.to_string(), message: message.into() }
}

/// One field error, as a Kubernetes `StatusCause` of an `Invalid` (422) status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldCause {
    /// One of the `FieldCause::*` reason constants, e.g. `"FieldValueRequired"`.
    pub reason: &'static str,
    /// The dotted path of the offending field, e.g. `spec.workerGroupSpecs[0].replicas`.
    pub field: String,
    /// The text apiserver puts in the cause, e.g. `Required value`.
    pub message: String,
}

impl FieldCause {
    /// A required field is missing.
    pub const REQUIRED: &'static str = "FieldValueRequired";
    /// A value breaks a constraint (pattern, bounds, ...).
    pub const INVALID: &'static str = "FieldValueInvalid";
    /// A value is not one of an `enum`.
    pub const NOT_SUPPORTED: &'static str = "FieldValueNotSupported";
    /// A list item repeats another one (list-type `set` or `map`).
    pub const DUPLICATE: &'static str = "FieldValueDuplicate";
    /// A value has the wrong JSON type, or a string the wrong format.
    pub const TYPE_INVALID: &'static str = "FieldValueTypeInvalid";
    /// A string is longer than `maxLength`.
    pub const TOO_LONG: &'static str = "FieldValueTooLong";
    /// A list or object has more than `maxItems`/`maxProperties` entries.
    pub const TOO_MANY: &'static str = "FieldValueTooMany";
    /// A field may not be set (not produced by schema validation itself; for the server's use).
    pub const FORBIDDEN: &'static str = "FieldValueForbidden";

    fn new(reason: &'static str, field: &str, message: String) -> Self {
        FieldCause { reason, field: field.to_string(), message }
    }
}

/// `field: message`, the way apiserver joins a field error into a Status message.
impl fmt::Display for FieldCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// A compiled CRD version schema (`spec.versions[].schema.openAPIV3Schema`).
/// Immutable once compiled; cloning is cheap (the tree is shared).
#[derive(Debug, Clone)]
pub struct StructuralSchema {
    root: Arc<Node>,
    has_status: bool,
}

/// A position in a [`StructuralSchema`], exposing what merging needs (list and map types).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SchemaCursor<'a> {
    node: &'a Node,
    root: bool,
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Type {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListType {
    Atomic,
    Set,
    Map,
}

#[derive(Debug, Clone)]
struct Pattern {
    source: String,
    /// `None` when the `regex` crate cannot compile it (e.g. a lookahead): never checked.
    re: Option<Regex>,
}

#[derive(Debug, Clone)]
enum Additional {
    /// `additionalProperties: true` (`false` is refused, as by apiserver)
    Allowed,
    /// `additionalProperties: {schema}`
    Schema(Box<Node>),
}

#[derive(Debug, Clone, Default)]
struct Node {
    ty: Option<Type>,
    nullable: bool,
    int_or_string: bool,
    preserve_unknown: bool,
    embedded: bool,
    /// Only formats apiserver validates are kept, as written in the schema.
    format: Option<String>,
    enum_values: Option<Vec<Value>>,
    pattern: Option<Pattern>,
    minimum: Option<f64>,
    exclusive_minimum: bool,
    maximum: Option<f64>,
    exclusive_maximum: bool,
    multiple_of: Option<f64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    required: Vec<String>,
    /// Sorted by name, for binary search. Children are boxed to keep the
    /// recursive functions' stack frames small.
    properties: Vec<(String, Box<Node>)>,
    additional: Option<Additional>,
    items: Option<Box<Node>>,
    all_of: Vec<Node>,
    any_of: Vec<Node>,
    one_of: Vec<Node>,
    not: Option<Box<Node>>,
    list_type: Option<ListType>,
    list_map_keys: Vec<String>,
    /// `x-kubernetes-map-type` as written (`atomic` or `granular`), for server-side apply.
    map_type: Option<String>,
    default: Option<Value>,
}

impl Node {
    fn prop(&self, name: &str) -> Option<&Node> {
        self.properties
            .binary_search_by(|(k, _)| k.as_str().cmp(name))
            .ok()
            .and_then(|i| self.properties.get(i))
            .map(|(_, n)| &**n)
    }

    /// The schema of an object's field: its property, else its additionalProperties schema.
    fn field_schema(&self, name: &str) -> Option<&Node> {
        self.prop(name).or(match &self.additional {
            Some(Additional::Schema(s)) => Some(s),
            _ => None,
        })
    }

    /// The `type` list kube-openapi checks: int-or-string becomes `integer,string`.
    fn types(&self) -> &'static [&'static str] {
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
const SUPPORTED_FORMATS: &[&str] = &[
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
const OBJECT_META_FIELDS: &[&str] = &[
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

fn is_meta_field(k: &str) -> bool {
    matches!(k, "apiVersion" | "kind" | "metadata")
}

// ---------------------------------------------------------------------------
// Compilation
// ---------------------------------------------------------------------------

struct Compiler {
    /// Real CRDs repeat the same patterns hundreds of times: compile each once.
    regexes: HashMap<String, Option<Regex>>,
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

    fn node(&mut self, v: &Value, path: &str, depth: usize) -> Result<Box<Node>, SchemaError> {
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
                // description, title, example, externalDocs,
                // x-kubernetes-validations (CEL, not evaluated), ...: no effect here.
                _ => {}
            }
        }
        Ok(())
    }
}

impl StructuralSchema {
    /// Compile a CRD version's `openAPIV3Schema`. Rejects malformed schemas (a
    /// `type` that is not one of the six JSON types, `properties` that is not an
    /// object of schemas, `items` given as an array, `$ref`, `uniqueItems: true`,
    /// list-type `map` without keys, nesting deeper than [`MAX_SCHEMA_DEPTH`], ...).
    /// Patterns are compiled here, once; one the `regex` crate cannot compile is
    /// accepted and never checked.
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        let mut compiler = Compiler { regexes: HashMap::new() };
        let root = compiler.node(schema, "openAPIV3Schema", 0)?;
        let has_status = root.prop("status").is_some();
        Ok(StructuralSchema { root: Arc::from(root), has_status })
    }

    /// Whether the schema declares `properties.status` at the root (the
    /// `/status` subresource then has something to write).
    pub fn has_status(&self) -> bool {
        self.has_status
    }

    /// Whether a dotted property path such as `spec.replicas` (a leading `.` is
    /// allowed, as in `.spec.replicas` of a scale subresource) is declared by the
    /// schema through `properties`, for checking the `/scale` subresource paths.
    pub fn has_path(&self, path: &str) -> bool {
        let path = path.strip_prefix('.').unwrap_or(path);
        if path.is_empty() {
            return false;
        }
        let mut node: &Node = &self.root;
        for seg in path.split('.') {
            match node.prop(seg) {
                Some(n) => node = n,
                None => return false,
            }
        }
        true
    }

    /// A read-only walk over the schema from its root, for merge decisions (patch, apply).
    pub(crate) fn cursor(&self) -> SchemaCursor<'_> {
        SchemaCursor { node: &self.root, root: true }
    }

    /// Remove unknown fields in place, as apiserver prunes a custom resource.
    ///
    /// A field is unknown when its object's schema has no such property and no
    /// `additionalProperties`, unless `x-kubernetes-preserve-unknown-fields: true`
    /// applies at that level (specified properties below it are still pruned).
    /// At the root and in `x-kubernetes-embedded-resource` objects, `apiVersion`,
    /// `kind` and `metadata` are kept; the root `metadata` is left to the server,
    /// an embedded `metadata` keeps only ObjectMeta's fields.
    ///
    /// Returns the pruned paths, sorted like apiserver's, dotted like
    /// `spec.foo` or `spec.items[0].bar`, for `fieldValidation=Strict|Warn`
    /// (`unknown field "spec.foo"`).
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        let mut out = Vec::new();
        let mut path = String::new();
        prune_value(Some(&self.root), obj, &mut path, &mut out, 0, true);
        out.sort();
        out
    }

    /// Apply `default`s in place, as apiserver does: first every `null` of a
    /// field that is not `nullable: true` and has no default is removed; then,
    /// top-down, an object's absent (or non-nullable `null`) properties get a
    /// deep copy of their default, and its properties, `additionalProperties`
    /// values and array items are defaulted in turn, so a defaulted object gets
    /// its own nested defaults too.
    pub fn apply_defaults(&self, obj: &mut Value) {
        prune_nulls(Some(&self.root), obj, 0);
        default_value(&self.root, obj, 0);
    }

    /// Validate the whole object against the schema and return every cause, in
    /// document order. The root's `apiVersion`, `kind` and `metadata` are not
    /// validated here (the server validates ObjectMeta). Run [`Self::prune`] and
    /// [`Self::apply_defaults`] first, as apiserver does.
    pub fn validate(&self, obj: &Value) -> Vec<FieldCause> {
        self.validate_with_budget(obj, VALIDATION_BUDGET)
    }

    fn validate_with_budget(&self, obj: &Value, budget: u64) -> Vec<FieldCause> {
        let mut v = Validator { budget, exhausted: false };
        let mut out = Vec::new();
        v.node(&self.root, obj, "", 0, Mode { root: true, junctor: false }, &mut out);
        if v.exhausted {
            out.push(FieldCause::new(
                FieldCause::INVALID,
                "",
                format!(
                    "Invalid value: \"\": validation stopped after {budget} steps: the object is too complex for this schema"
                ),
            ));
        }
        out
    }
}

// ---------------------------------------------------------------------------
// Pruning
// ---------------------------------------------------------------------------

fn push_key(path: &mut String, key: &str) -> usize {
    let len = path.len();
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
    len
}

fn push_index(path: &mut String, i: usize) -> usize {
    let len = path.len();
    let _ = write!(path, "[{i}]");
    len
}

fn record(out: &mut Vec<String>, path: &str, key: &str) {
    if path.is_empty() {
        out.push(key.to_string());
    } else {
        out.push(format!("{path}.{key}"));
    }
}

/// apiserver's `prune`: `node == None` means "no schema here", which empties objects.
fn prune_value(node: Option<&Node>, x: &mut Value, path: &mut String, out: &mut Vec<String>, depth: usize, root: bool) {
    if depth > MAX_DEPTH {
        return;
    }
    if let Some(n) = node
        && n.preserve_unknown
    {
        skip_prune(n, x, path, out, depth, root);
        return;
    }
    match x {
        Value::Object(m) => {
            let Some(n) = node else {
                for k in m.keys() {
                    record(out, path, k);
                }
                m.clear();
                return;
            };
            let embedded = n.embedded || root;
            m.retain(|k, v| {
                if embedded && is_meta_field(k) {
                    if k == "metadata" && !root {
                        coerce_embedded_metadata(v, path, out);
                    }
                    return true;
                }
                if let Some(p) = n.prop(k) {
                    let len = push_key(path, k);
                    prune_value(Some(p), v, path, out, depth + 1, false);
                    path.truncate(len);
                    true
                } else if let Some(add) = &n.additional {
                    let len = push_key(path, k);
                    let s = match add {
                        Additional::Schema(s) => Some(&**s),
                        // apiserver prunes below `additionalProperties: true` as "no schema":
                        // scalars stay, objects are emptied.
                        Additional::Allowed => None,
                    };
                    prune_value(s, v, path, out, depth + 1, false);
                    path.truncate(len);
                    true
                } else {
                    record(out, path, k);
                    false
                }
            });
        }
        Value::Array(a) => {
            let items = node.and_then(|n| n.items.as_deref());
            for (i, v) in a.iter_mut().enumerate() {
                let len = push_index(path, i);
                prune_value(items, v, path, out, depth + 1, false);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// apiserver's `skipPrune`: keep unknown fields here, still prune specified ones below.
fn skip_prune(n: &Node, x: &mut Value, path: &mut String, out: &mut Vec<String>, depth: usize, root: bool) {
    if depth > MAX_DEPTH {
        return;
    }
    match x {
        Value::Object(m) => {
            let embedded = n.embedded || root;
            for (k, v) in m.iter_mut() {
                if embedded && is_meta_field(k) {
                    if k == "metadata" && !root {
                        coerce_embedded_metadata(v, path, out);
                    }
                    continue;
                }
                let s = if let Some(p) = n.prop(k) {
                    Some(p)
                } else {
                    match &n.additional {
                        Some(Additional::Schema(s)) => Some(&**s),
                        Some(_) => None,
                        None => continue,
                    }
                };
                let len = push_key(path, k);
                prune_value(s, v, path, out, depth + 1, false);
                path.truncate(len);
            }
        }
        Value::Array(a) => {
            if let Some(items) = &n.items {
                for (i, v) in a.iter_mut().enumerate() {
                    let len = push_index(path, i);
                    skip_prune(items, v, path, out, depth + 1, false);
                    path.truncate(len);
                }
            }
        }
        _ => {}
    }
}

/// An embedded resource's metadata goes through ObjectMeta in apiserver, which
/// drops every field ObjectMeta does not have.
fn coerce_embedded_metadata(v: &mut Value, path: &str, out: &mut Vec<String>) {
    let Value::Object(meta) = v else { return };
    let base = if path.is_empty() { "metadata".to_string() } else { format!("{path}.metadata") };
    meta.retain(|k, _| {
        let keep = OBJECT_META_FIELDS.contains(&k.as_str());
        if !keep {
            record(out, &base, k);
        }
        keep
    });
}

// ---------------------------------------------------------------------------
// Defaulting
// ---------------------------------------------------------------------------

/// apiserver's `PruneNonNullableNullsWithoutDefaults`.
fn prune_nulls(node: Option<&Node>, x: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match x {
        Value::Object(m) => m.retain(|k, v| {
            let s = node.and_then(|n| n.field_schema(k));
            if v.is_null() && s.is_some_and(|s| !s.nullable && s.default.is_none()) {
                return false;
            }
            prune_nulls(s, v, depth + 1);
            true
        }),
        Value::Array(a) => {
            let items = node.and_then(|n| n.items.as_deref());
            for v in a.iter_mut() {
                prune_nulls(items, v, depth + 1);
            }
        }
        _ => {}
    }
}

fn is_non_nullable_null(v: &Value, s: &Node) -> bool {
    v.is_null() && !s.nullable
}

/// apiserver's structural `Default`.
fn default_value(n: &Node, x: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match x {
        Value::Object(m) => {
            for (k, p) in &n.properties {
                let Some(d) = &p.default else { continue };
                match m.get_mut(k) {
                    None => {
                        m.insert(k.clone(), d.clone());
                    }
                    Some(v) if is_non_nullable_null(v, p) => *v = d.clone(),
                    Some(_) => {}
                }
            }
            for (k, v) in m.iter_mut() {
                if let Some(p) = n.prop(k) {
                    default_value(p, v, depth + 1);
                } else if let Some(Additional::Schema(s)) = &n.additional {
                    if is_non_nullable_null(v, s)
                        && let Some(d) = &s.default
                    {
                        *v = d.clone();
                    }
                    default_value(s, v, depth + 1);
                }
            }
        }
        Value::Array(a) => {
            let Some(items) = &n.items else { return };
            for v in a.iter_mut() {
                if is_non_nullable_null(v, items)
                    && let Some(d) = &items.default
                {
                    *v = d.clone();
                }
                default_value(items, v, depth + 1);
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------

#[derive(Clone, Copy)]
struct Mode {
    /// The resource root: apiVersion/kind/metadata are the server's business.
    root: bool,
    /// Inside allOf/anyOf/oneOf/not: only value validations apply (no list-type
    /// or embedded-resource checks, which apiserver runs on the structural schema only).
    junctor: bool,
}

struct Validator {
    budget: u64,
    exhausted: bool,
}

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

/// A JSON number as apiserver decodes it: int64 when it fits, else float64.
#[derive(Clone, Copy)]
enum Num {
    I(i64),
    F(f64),
}

fn num_of(n: &Number) -> Num {
    match n.as_i64() {
        Some(i) => Num::I(i),
        None => Num::F(n.as_f64().unwrap_or(f64::NAN)),
    }
}

/// go-swag's IsFloat64AJSONInteger: whole and within ±2^53.
fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_992.0;
    f.is_finite() && (-MAX..=MAX).contains(&f) && f.fract() == 0.0
}

/// kube-openapi's schema type and format of a value.
fn schema_type_of(v: &Value) -> (&'static str, &'static str) {
    match v {
        Value::Null => ("null", ""),
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(n) => match num_of(n) {
            Num::I(_) => ("integer", "int64"),
            Num::F(_) => ("number", "float64"),
        },
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
    }
}

fn enum_eq(a: &Value, v: &Value) -> bool {
    if a == v {
        return true;
    }
    // Go converts between numeric kinds before comparing: 1 matches 1.0.
    match (a, v) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => false,
    }
}

fn cause_invalid(path: &str, value: &str, detail: &str) -> FieldCause {
    FieldCause::new(FieldCause::INVALID, path, format!("Invalid value: {value}: {detail}"))
}

fn cause_type(path: &str, label: &str, detail: &str) -> FieldCause {
    FieldCause::new(
        FieldCause::TYPE_INVALID,
        path,
        format!("Invalid value: {}: {detail}", crate::selector::go_quote(label)),
    )
}

impl Validator {
    fn node(&mut self, n: &Node, v: &Value, path: &str, depth: usize, mode: Mode, out: &mut Vec<FieldCause>) {
        if self.budget == 0 {
            self.exhausted = true;
            return;
        }
        self.budget -= 1;
        if depth > MAX_DEPTH {
            out.push(cause_invalid(path, "\"\"", &format!("too deeply nested (more than {MAX_DEPTH} levels)")));
            return;
        }
        if v.is_null() {
            // kube-openapi only runs the type and enum checks on null.
            let types = n.types();
            if !types.is_empty() && !n.nullable {
                out.push(cause_type(
                    path,
                    "null",
                    &format!("{path} in body must be of type {}: \"null\"", types.join(",")),
                ));
            }
            self.check_enum(n, v, path, out);
            return;
        }
        self.check_type(n, v, path, out);
        self.check_junctors(n, v, path, depth, out);
        match v {
            Value::String(s) => check_string(n, s, path, out),
            Value::Number(num) => check_number(n, num_of(num), path, out),
            Value::Array(a) => self.check_array(n, a, path, depth, mode, out),
            _ => {}
        }
        self.check_enum(n, v, path, out);
        if let Value::Object(m) = v {
            self.check_object(n, m, path, depth, mode, out);
            if n.embedded && !mode.root && !mode.junctor {
                check_embedded(m, path, out);
            }
        }
    }

    fn check_type(&self, n: &Node, v: &Value, path: &str, out: &mut Vec<FieldCause>) {
        let types = n.types();
        let format = n.format.as_deref().unwrap_or("");
        if types.is_empty() && format.is_empty() {
            return;
        }
        let (sch, vfmt) = schema_type_of(v);
        let has = |t: &str| types.contains(&t);
        let float_int = sch == "number" && v.as_f64().is_some_and(is_json_integer) && has("integer");
        let int_float = sch == "integer" && has("number");
        let string_or_array = v.is_string() || v.is_array();
        if !(string_or_array || format.is_empty() || has(sch) || vfmt == format || float_int || int_float) {
            out.push(cause_type(
                path,
                vfmt,
                &format!("{path} in body must be of type {format}: {}", crate::selector::go_quote(vfmt)),
            ));
            return;
        }
        // kube-openapi: a formatted non-numeric schema skips the type check of strings and arrays.
        if string_or_array && !(has("number") || has("integer") || format.is_empty()) {
            return;
        }
        if !(has(sch) || float_int || int_float) {
            out.push(cause_type(
                path,
                sch,
                &format!("{path} in body must be of type {}: {}", types.join(","), crate::selector::go_quote(sch)),
            ));
        }
    }

    /// Validate `v` against one alternative, into its own list.
    fn branch(&mut self, b: &Node, v: &Value, path: &str, depth: usize) -> Vec<FieldCause> {
        let mut r = Vec::new();
        self.node(b, v, path, depth, Mode { root: false, junctor: true }, &mut r);
        r
    }

    fn check_junctors(&mut self, n: &Node, v: &Value, path: &str, depth: usize, out: &mut Vec<FieldCause>) {
        let quoted = crate::selector::go_quote(path);
        if !n.any_of.is_empty() {
            let mut best: Option<Vec<FieldCause>> = None;
            let mut ok = false;
            for b in &n.any_of {
                let r = self.branch(b, v, path, depth);
                if r.is_empty() {
                    ok = true;
                    break;
                }
                if best.as_ref().is_none_or(|x| r.len() < x.len()) {
                    best = Some(r);
                }
            }
            if !ok {
                out.push(cause_invalid(path, "\"\"", &format!("{quoted} must validate at least one schema (anyOf)")));
                out.extend(best.unwrap_or_default());
            }
        }
        if !n.one_of.is_empty() {
            let mut best: Option<Vec<FieldCause>> = None;
            let mut valid = 0usize;
            for b in &n.one_of {
                let r = self.branch(b, v, path, depth);
                if r.is_empty() {
                    valid += 1;
                } else if best.as_ref().is_none_or(|x| r.len() < x.len()) {
                    best = Some(r);
                }
            }
            if valid != 1 {
                let found = if valid == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                out.push(cause_invalid(
                    path,
                    "\"\"",
                    &format!("{quoted} must validate one and only one schema (oneOf). {found}"),
                ));
                if valid == 0 {
                    out.extend(best.unwrap_or_default());
                }
            }
        }
        if !n.all_of.is_empty() {
            let mut validated = 0usize;
            for b in &n.all_of {
                let r = self.branch(b, v, path, depth);
                if r.is_empty() {
                    validated += 1;
                }
                out.extend(r);
            }
            if validated != n.all_of.len() {
                let extra = if validated == 0 { ". None validated" } else { "" };
                out.push(cause_invalid(
                    path,
                    "\"\"",
                    &format!("{quoted} must validate all the schemas (allOf){extra}"),
                ));
            }
        }
        if let Some(not) = &n.not
            && self.branch(not, v, path, depth).is_empty()
        {
            out.push(cause_invalid(path, "\"\"", &format!("{quoted} must not validate the schema (not)")));
        }
    }

    fn check_enum(&self, n: &Node, v: &Value, path: &str, out: &mut Vec<FieldCause>) {
        let Some(values) = &n.enum_values else { return };
        if values.iter().any(|a| enum_eq(a, v)) {
            return;
        }
        let supported: Vec<String> = values
            .iter()
            .map(|a| match a {
                Value::String(s) => crate::selector::go_quote(s),
                // apiserver quotes the JSON of non-string values.
                Value::Number(n) => crate::selector::go_quote(&match num_of(n) {
                    Num::I(i) => i.to_string(),
                    Num::F(f) => f.to_string(),
                }),
                other => crate::selector::go_quote(&other.to_string()),
            })
            .collect();
        let mut msg = format!("Unsupported value: {}", go_body_value(v));
        if !supported.is_empty() {
            let _ = write!(msg, ": supported values: {}", supported.join(", "));
        }
        out.push(FieldCause::new(FieldCause::NOT_SUPPORTED, path, msg));
    }

    fn check_array(&mut self, n: &Node, a: &[Value], path: &str, depth: usize, mode: Mode, out: &mut Vec<FieldCause>) {
        if let Some(items) = &n.items {
            for (i, v) in a.iter().enumerate() {
                let p = format!("{path}[{i}]");
                self.node(items, v, &p, depth + 1, Mode { root: false, junctor: mode.junctor }, out);
            }
        }
        let size = a.len() as u64;
        if let Some(min) = n.min_items
            && size < min
        {
            out.push(cause_invalid(
                path,
                &size.to_string(),
                &format!("{path} in body should have at least {min} items"),
            ));
        }
        if let Some(max) = n.max_items
            && size > max
        {
            out.push(too_many(path, size, max));
        }
        if mode.junctor {
            return;
        }
        match n.list_type {
            Some(ListType::Set) => {
                for i in non_unique(a) {
                    if let Some(v) = a.get(i) {
                        out.push(duplicate(&format!("{path}[{i}]"), &go_body_value(v)));
                    }
                }
            }
            Some(ListType::Map) => check_list_map(&n.list_map_keys, a, path, out),
            Some(ListType::Atomic) | None => {}
        }
    }

    fn check_object(
        &mut self,
        n: &Node,
        m: &Map<String, Value>,
        path: &str,
        depth: usize,
        mode: Mode,
        out: &mut Vec<FieldCause>,
    ) {
        let count = m.len() as u64;
        // kube-openapi stops at a property-count failure.
        if let Some(min) = n.min_properties
            && count < min
        {
            out.push(cause_invalid(
                path,
                &count.to_string(),
                &format!("{path} in body should have at least {min} properties"),
            ));
            return;
        }
        if let Some(max) = n.max_properties
            && count > max
        {
            out.push(too_many(path, count, max));
            return;
        }
        let child_mode = Mode { root: false, junctor: mode.junctor };
        for (k, v) in m {
            if mode.root && is_meta_field(k) {
                continue;
            }
            if let Some(p) = n.prop(k) {
                self.node(p, v, &child_path(path, k), depth + 1, child_mode, out);
                continue;
            }
            if let Some(Additional::Schema(s)) = &n.additional {
                self.node(s, v, &child_path(path, k), depth + 1, child_mode, out);
            }
        }
        for r in &n.required {
            if mode.root && is_meta_field(r) {
                continue;
            }
            if !m.contains_key(r) {
                out.push(FieldCause::new(FieldCause::REQUIRED, &child_path(path, r), "Required value".to_string()));
            }
        }
    }
}

fn too_many(path: &str, actual: u64, max: u64) -> FieldCause {
    let what = if max == 1 { "item" } else { "items" };
    FieldCause::new(FieldCause::TOO_MANY, path, format!("Too many: {actual}: must have at most {max} {what}"))
}

fn duplicate(path: &str, value: &str) -> FieldCause {
    FieldCause::new(FieldCause::DUPLICATE, path, format!("Duplicate value: {value}"))
}

fn check_string(n: &Node, s: &str, path: &str, out: &mut Vec<FieldCause>) {
    // kube-openapi reports only the first failing string check.
    let chars = || s.chars().count() as u64;
    if let Some(max) = n.max_length
        && chars() > max
    {
        out.push(FieldCause::new(FieldCause::TOO_LONG, path, format!("Too long: may not be longer than {max}")));
    } else if let Some(min) = n.min_length
        && chars() < min
    {
        out.push(cause_invalid(
            path,
            &crate::selector::go_quote(s),
            &format!("{path} in body should be at least {min} chars long"),
        ));
    } else if let Some(Pattern { source, re: Some(re) }) = &n.pattern
        && !re.is_match(s)
    {
        out.push(cause_invalid(
            path,
            &crate::selector::go_quote(s),
            &format!("{path} in body should match '{source}'"),
        ));
    }
    if let Some(f) = &n.format
        && !format_ok(f, s)
    {
        out.push(cause_type(path, s, &format!("{path} in body must be of type {f}: {}", crate::selector::go_quote(s))));
    }
}

fn check_number(n: &Node, num: Num, path: &str, out: &mut Vec<FieldCause>) {
    let shown = match num {
        Num::I(i) => i.to_string(),
        Num::F(f) => go_float(f),
    };
    if let Some(factor) = n.multiple_of {
        // Integers are checked natively against the truncated factor, like Go.
        let int_factor = factor as i64;
        let failed = match num {
            Num::I(i) if int_factor != 0 => i.checked_rem(int_factor).is_some_and(|r| r != 0),
            Num::I(i) => !float_multiple(i as f64, factor),
            Num::F(f) => !float_multiple(f, factor),
        };
        if failed {
            let shown_factor = match num {
                Num::I(_) if int_factor != 0 => int_factor.to_string(),
                _ => go_float(factor),
            };
            out.push(cause_invalid(path, &shown, &format!("{path} in body should be a multiple of {shown_factor}")));
        }
    }
    if let Some(min) = n.minimum {
        let ex = n.exclusive_minimum;
        let (failed, bound) = match num {
            Num::I(i) => {
                let b = min as i64;
                (if ex { i <= b } else { i < b }, b.to_string())
            }
            Num::F(f) => (if ex { f <= min } else { f < min }, go_float(min)),
        };
        if failed {
            let rel = if ex { "greater than" } else { "greater than or equal to" };
            out.push(cause_invalid(path, &shown, &format!("{path} in body should be {rel} {bound}")));
        }
    }
    if let Some(max) = n.maximum {
        let ex = n.exclusive_maximum;
        let (failed, bound) = match num {
            Num::I(i) => {
                let b = max as i64;
                (if ex { i >= b } else { i > b }, b.to_string())
            }
            Num::F(f) => (if ex { f >= max } else { f > max }, go_float(max)),
        };
        if failed {
            let rel = if ex { "less than" } else { "less than or equal to" };
            out.push(cause_invalid(path, &shown, &format!("{path} in body should be {rel} {bound}")));
        }
    }
}

/// go-openapi's float MultipleOf.
fn float_multiple(data: f64, factor: f64) -> bool {
    let mult = if factor < 1.0 { 1.0 / factor * data } else { data / factor };
    is_json_integer(mult)
}

/// apiserver's listtype `validateListSet`: the index of each value's second occurrence.
fn non_unique(items: &[Value]) -> Vec<usize> {
    let mut seen: HashMap<String, u32> = HashMap::new();
    let mut out = Vec::new();
    for (i, v) in items.iter().enumerate() {
        // A canonical text key: objects keep the document's key order, so sort them.
        let times = seen.entry(canonical_json(v)).or_insert(0);
        *times += 1;
        if *times == 2 {
            out.push(i);
        }
    }
    out
}

fn canonical_json(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut s = String::from("{");
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                s.push_str(&Value::String((*k).clone()).to_string());
                s.push(':');
                if let Some(x) = m.get(*k) {
                    s.push_str(&canonical_json(x));
                }
            }
            s.push('}');
            s
        }
        Value::Array(a) => {
            let inner: Vec<String> = a.iter().map(canonical_json).collect();
            format!("[{}]", inner.join(","))
        }
        // Distinguish int 1 from float 1.0, as Go's map keys do.
        Value::Number(n) => match num_of(n) {
            Num::I(i) => format!("i{i}"),
            Num::F(f) => format!("f{f:?}"),
        },
        other => other.to_string(),
    }
}

fn check_list_map(keys: &[String], a: &[Value], path: &str, out: &mut Vec<FieldCause>) {
    for (i, x) in a.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            out.push(cause_invalid(
                &format!("{path}[{i}]"),
                &go_body_value(x),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if a.len() <= 1 {
        return;
    }
    // One key tuple per item; a missing key counts as "unspecified".
    let tuples: Vec<Map<String, Value>> = a
        .iter()
        .map(|x| {
            let mut t = Map::new();
            if let Value::Object(m) = x {
                for k in keys {
                    if let Some(v) = m.get(k) {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
            t
        })
        .collect();
    let as_values: Vec<Value> = tuples.iter().cloned().map(Value::Object).collect();
    for i in non_unique(&as_values) {
        if let Some(t) = as_values.get(i) {
            out.push(duplicate(&format!("{path}[{i}]"), &go_body_value(t)));
        }
    }
}

fn check_embedded(m: &Map<String, Value>, path: &str, out: &mut Vec<FieldCause>) {
    for k in ["apiVersion", "kind"] {
        if !m.contains_key(k) {
            out.push(FieldCause::new(FieldCause::REQUIRED, &child_path(path, k), "Required value".to_string()));
        }
    }
    for (k, v) in m {
        let p = child_path(path, k);
        match k.as_str() {
            "apiVersion" => match v.as_str() {
                None => out.push(cause_invalid(&p, &go_body_value(v), "must be a string")),
                Some("") => out.push(cause_invalid(&p, "\"\"", "must not be empty")),
                Some(s) if s != "/" && s.matches('/').count() > 1 => out.push(cause_invalid(
                    &p,
                    &crate::selector::go_quote(s),
                    &format!("unexpected GroupVersion string: {s}"),
                )),
                Some(_) => {}
            },
            "kind" => match v.as_str() {
                None => out.push(cause_invalid(&p, &go_body_value(v), "must be a string")),
                Some("") => out.push(cause_invalid(&p, "\"\"", "must not be empty")),
                Some(s) => {
                    let errs = dns1035_label_errors(&s.to_lowercase());
                    if !errs.is_empty() {
                        out.push(cause_invalid(
                            &p,
                            &crate::selector::go_quote(s),
                            &format!("may have mixed case, but should otherwise match: {}", errs.join(",")),
                        ));
                    }
                }
            },
            _ => {}
        }
    }
}

fn dns1035_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let b = s.as_bytes();
    let ok = match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_lowercase()
                && (l.is_ascii_lowercase() || l.is_ascii_digit())
                && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        }
        _ => false,
    };
    if !ok {
        errs.push(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
                .to_string(),
        );
    }
    errs
}

// ---------------------------------------------------------------------------
// Go-style value printing (apiserver's field.Error bodies)
// ---------------------------------------------------------------------------

/// Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`).
fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let e = format!("{f:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((e.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    // Shortest %g switches to an exponent below 1e-4 and from 1e6 on.
    if (-4..6).contains(&exp) {
        return format!("{f}");
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
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
        Value::String(s) => crate::selector::go_quote(s),
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
                    format!("{}:{v}", crate::selector::go_quote(k))
                })
                .collect();
            format!("map[string]interface {{}}{{{}}}", inner.join(", "))
        }
    }
}

/// How apiserver's `field.Error` prints a bad value.
fn go_body_value(v: &Value) -> String {
    match v {
        Value::Null => "\"null\"".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => crate::selector::go_quote(s),
        other => go_sharp(other),
    }
}

// ---------------------------------------------------------------------------
// String formats (kube-openapi strfmt / govalidator)
// ---------------------------------------------------------------------------

fn regex_matches(cell: &'static OnceLock<Option<Regex>>, pattern: &str, s: &str) -> bool {
    // The patterns are constants; should one ever fail to build, accept rather than panic.
    cell.get_or_init(|| Regex::new(pattern).ok()).as_ref().is_none_or(|re| re.is_match(s))
}

fn format_ok(format: &str, s: &str) -> bool {
    static UUID: OnceLock<Option<Regex>> = OnceLock::new();
    static UUID3: OnceLock<Option<Regex>> = OnceLock::new();
    static UUID4: OnceLock<Option<Regex>> = OnceLock::new();
    static UUID5: OnceLock<Option<Regex>> = OnceLock::new();
    static HOSTNAME: OnceLock<Option<Regex>> = OnceLock::new();
    static SSN: OnceLock<Option<Regex>> = OnceLock::new();
    static HEXCOLOR: OnceLock<Option<Regex>> = OnceLock::new();
    static RGBCOLOR: OnceLock<Option<Regex>> = OnceLock::new();
    static BASE64: OnceLock<Option<Regex>> = OnceLock::new();
    match format.replace('-', "").as_str() {
        "bsonobjectid" => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(s),
        "email" => is_email(s),
        "hostname" => {
            regex_matches(
                &HOSTNAME,
                r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z0-9\p{S}\p{L}])(-?[a-zA-Z0-9\p{S}\p{L}]){1,62})$",
                s,
            ) && s.len() <= 255
                && s.split('.').all(|p| p.len() <= 63)
        }
        "ipv4" => s.parse::<std::net::IpAddr>().is_ok() && s.contains('.'),
        "ipv6" => s.parse::<std::net::IpAddr>().is_ok() && s.contains(':'),
        "cidr" => is_cidr(s),
        "mac" => is_mac(s),
        "uuid" => regex_matches(&UUID, r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$", s),
        "uuid3" => regex_matches(&UUID3, r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$", s),
        "uuid4" => {
            regex_matches(&UUID4, r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$", s)
        }
        "uuid5" => {
            regex_matches(&UUID5, r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$", s)
        }
        "isbn" => is_isbn10(s) || is_isbn13(s),
        "isbn10" => is_isbn10(s),
        "isbn13" => is_isbn13(s),
        "creditcard" => is_credit_card(s),
        "ssn" => s.len() == 11 && regex_matches(&SSN, r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$", s),
        "hexcolor" => regex_matches(&HEXCOLOR, r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$", s),
        "rgbcolor" => regex_matches(
            &RGBCOLOR,
            r"^rgb\([ \t\n\r\x0C]*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])[ \t\n\r\x0C]*,[ \t\n\r\x0C]*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])[ \t\n\r\x0C]*,[ \t\n\r\x0C]*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])[ \t\n\r\x0C]*\)$",
            s,
        ),
        "byte" => regex_matches(
            &BASE64,
            r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$",
            s,
        ),
        "date" => is_date(s),
        "datetime" => is_date_time(s),
        "duration" => is_duration(s),
        // "password" and anything unknown: any string.
        _ => true,
    }
}

/// Go's `time.Parse("2006-01-02", s)`.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = b.get(r)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let (Some(year), Some(month), Some(day)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// kube-openapi strfmt's `IsDateTime`.
fn is_date_time(s: &str) -> bool {
    static TIME: OnceLock<Option<Regex>> = OnceLock::new();
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let re = TIME
        .get_or_init(|| Regex::new(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$").ok());
    let Some(re) = re else { return true };
    let Some(c) = re.captures(time) else {
        return false;
    };
    let field = |i: usize| c.get(i).map_or("99", |m| m.as_str());
    field(1) <= "23" && field(2) <= "59" && field(3) <= "59"
}

/// kube-openapi strfmt's `ParseDuration`: Go's `time.ParseDuration`, else the
/// Scala-like `"3 days"` form.
fn is_duration(s: &str) -> bool {
    go_parse_duration(s) || scala_duration(s)
}

fn go_parse_duration(s: &str) -> bool {
    let mut rest = s;
    if let Some(r) = rest.strip_prefix(['-', '+']) {
        rest = r;
    }
    if rest == "0" {
        return true;
    }
    if rest.is_empty() {
        return false;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let b = rest.as_bytes();
        if !b.first().is_some_and(|c| *c == b'.' || c.is_ascii_digit()) {
            return false;
        }
        let int_len = b.iter().take_while(|c| c.is_ascii_digit()).count();
        let (int_part, r) = rest.split_at(int_len);
        rest = r;
        let mut frac_part = "";
        if let Some(r) = rest.strip_prefix('.') {
            let frac_len = r.bytes().take_while(u8::is_ascii_digit).count();
            let (f, r2) = r.split_at(frac_len);
            frac_part = f;
            rest = r2;
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return false;
        }
        let unit_len =
            rest.char_indices().find(|(_, c)| *c == '.' || c.is_ascii_digit()).map_or(rest.len(), |(i, _)| i);
        if unit_len == 0 {
            return false;
        }
        let (unit, r) = rest.split_at(unit_len);
        rest = r;
        let ns_per: f64 = match unit {
            "ns" => 1.0,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return false,
        };
        let value: f64 = format!("{}.{}", if int_part.is_empty() { "0" } else { int_part }, frac_part)
            .trim_end_matches('.')
            .parse()
            .unwrap_or(f64::INFINITY);
        total += value * ns_per;
        if total > 9_223_372_036_854_775_807.0 {
            return false;
        }
    }
    true
}

fn scala_duration(s: &str) -> bool {
    static VALID: OnceLock<Option<Regex>> = OnceLock::new();
    static PART: OnceLock<Option<Regex>> = OnceLock::new();
    const UNITS: &[&[&str]] = &[
        &["ns", "nano"],
        &["us", "\u{b5}s", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let ws = r"[ \t\n\r\x0C]";
    let valid = VALID.get_or_init(|| Regex::new(&format!(r"^{ws}*(?:[0-9]+{ws}*[A-Za-z\x{{b5}}]+{ws}*)+$")).ok());
    if !valid.as_ref().is_some_and(|re| re.is_match(s)) {
        return false;
    }
    let Some(part) = PART.get_or_init(|| Regex::new(&format!(r"(([0-9]+){ws}*([A-Za-z\x{{b5}}]+))")).ok()).as_ref()
    else {
        return false;
    };
    let mut ok = false;
    for c in part.captures_iter(s) {
        // Go's Atoi fails on overflow, which fails the whole parse.
        if c.get(2).is_none_or(|m| m.as_str().parse::<i64>().is_err()) {
            return false;
        }
        let unit = c.get(3).map_or(String::new(), |m| m.as_str().trim().to_lowercase());
        for variants in UNITS {
            let last = variants.len() - 1;
            for (i, variant) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(variant)) || variant.eq_ignore_ascii_case(&unit) {
                    ok = true;
                }
            }
        }
    }
    ok
}

/// Go's `net.ParseCIDR`.
fn is_cidr(s: &str) -> bool {
    let Some((addr, mask)) = s.split_once('/') else {
        return false;
    };
    let bits = match addr.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => 32,
        Ok(std::net::IpAddr::V6(_)) => 128,
        Err(_) => return false,
    };
    !mask.is_empty()
        && mask.len() <= 4
        && mask.bytes().all(|b| b.is_ascii_digit())
        && mask.parse::<u32>().is_ok_and(|n| n <= bits)
}

/// Go's `net.ParseMAC`.
fn is_mac(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 14 {
        return false;
    }
    let hex = |i: usize, n: usize| b.get(i..i + n).is_some_and(|p| p.iter().all(u8::is_ascii_hexdigit));
    match (b.get(2), b.get(4)) {
        (Some(&sep), _) if sep == b':' || sep == b'-' => {
            if !(b.len() + 1).is_multiple_of(3) {
                return false;
            }
            let n = (b.len() + 1) / 3;
            if n != 6 && n != 8 && n != 20 {
                return false;
            }
            (0..n).all(|i| {
                let x = i * 3;
                hex(x, 2) && (i == n - 1 || b.get(x + 2) == Some(&sep))
            })
        }
        (_, Some(b'.')) => {
            if !(b.len() + 1).is_multiple_of(5) {
                return false;
            }
            let n = 2 * (b.len() + 1) / 5;
            if n != 6 && n != 8 && n != 20 {
                return false;
            }
            (0..n / 2).all(|i| {
                let x = i * 5;
                hex(x, 4) && (i == n / 2 - 1 || b.get(x + 4) == Some(&b'.'))
            })
        }
        _ => false,
    }
}

/// An approximation of Go's `url.ParseRequestURI`: an absolute URI or an absolute path.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if s == "*" {
        return true;
    }
    let scheme_len = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .map_or(0, |(i, _)| i);
    let has_scheme = scheme_len > 0
        && s.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
        && s.as_bytes().get(scheme_len) == Some(&b':');
    let rest = if has_scheme { s.get(scheme_len + 1..).unwrap_or("") } else { s };
    if !has_scheme && !rest.starts_with('/') {
        return false;
    }
    if let Some(auth) = rest.strip_prefix("//") {
        let host_end = auth.find(['/', '?', '#']).unwrap_or(auth.len());
        let authority = auth.get(..host_end).unwrap_or("");
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        if host.contains([' ', '<', '>', '"', '{', '}', '|', '\\', '^', '`']) {
            return false;
        }
    }
    // Every '%' must start a two-digit hex escape.
    let b = rest.as_bytes();
    b.iter()
        .enumerate()
        .all(|(i, &c)| c != b'%' || b.get(i + 1..i + 3).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)))
}

/// An approximation of Go's `net/mail.ParseAddress`: `local@domain`, optionally as `Name <local@domain>`.
fn is_email(s: &str) -> bool {
    let s = s.trim();
    let addr = match (s.rfind('<'), s.strip_suffix('>')) {
        (Some(i), Some(inner)) => inner.get(i + 1..).unwrap_or(""),
        _ => s,
    };
    let Some((local, domain)) = addr.rsplit_once('@') else {
        return false;
    };
    let atext = |c: char| c.is_alphanumeric() || "!#$%&'*+/=?^_`{|}~-".contains(c);
    let dot_atom = |p: &str| !p.is_empty() && p.split('.').all(|a| !a.is_empty() && a.chars().all(atext));
    let local_ok = dot_atom(local) || (local.len() >= 2 && local.starts_with('"') && local.ends_with('"'));
    let domain_ok = dot_atom(domain) || (domain.starts_with('[') && domain.ends_with(']'));
    local_ok && domain_ok
}

fn isbn_sanitized(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace() && *c != '-').collect()
}

/// govalidator's `IsISBN10`.
fn is_isbn10(s: &str) -> bool {
    let s = isbn_sanitized(s);
    let b = s.as_bytes();
    if b.len() != 10 || !b.iter().take(9).all(u8::is_ascii_digit) {
        return false;
    }
    let last = match b.get(9) {
        Some(b'X') => 10,
        Some(d) if d.is_ascii_digit() => u32::from(d - b'0'),
        _ => return false,
    };
    let sum: u32 =
        b.iter().take(9).enumerate().map(|(i, d)| (i as u32 + 1) * u32::from(d - b'0')).sum::<u32>() + 10 * last;
    sum.is_multiple_of(11)
}

/// govalidator's `IsISBN13`.
fn is_isbn13(s: &str) -> bool {
    let s = isbn_sanitized(s);
    let b = s.as_bytes();
    if b.len() != 13 || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 =
        b.iter().take(12).enumerate().map(|(i, d)| if i % 2 == 0 { 1 } else { 3 } * u32::from(d - b'0')).sum();
    b.get(12).is_some_and(|d| u32::from(d - b'0') == (10 - sum % 10) % 10)
}

/// govalidator's `IsCreditCard`: a known card number shape and a Luhn checksum.
fn is_credit_card(s: &str) -> bool {
    static CARD: OnceLock<Option<Regex>> = OnceLock::new();
    let digits = isbn_sanitized(s);
    if !regex_matches(
        &CARD,
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11})$",
        &digits,
    ) {
        return false;
    }
    let mut sum = 0u32;
    for (i, d) in digits.bytes().rev().enumerate() {
        let mut n = u32::from(d.wrapping_sub(b'0'));
        if i % 2 == 1 {
            n *= 2;
            if n >= 10 {
                n = n % 10 + 1;
            }
        }
        sum += n;
    }
    sum.is_multiple_of(10)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compile(s: Value) -> StructuralSchema {
        match StructuralSchema::compile(&s) {
            Ok(s) => s,
            Err(e) => panic!("schema should compile: {e}"),
        }
    }

    /// The root object schema with a `spec` of the given schema.
    fn spec_schema(spec: Value) -> StructuralSchema {
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

    fn field(spec_field: Value) -> StructuralSchema {
        spec_schema(json!({"type": "object", "properties": {"f": spec_field}}))
    }

    fn obj(spec: Value) -> Value {
        json!({"apiVersion": "x.io/v1", "kind": "X", "metadata": {"name": "a"}, "spec": spec})
    }

    fn check(s: &StructuralSchema, f: Value) -> Vec<FieldCause> {
        s.validate(&obj(json!({ "f": f })))
    }

    fn one(causes: Vec<FieldCause>) -> FieldCause {
        assert_eq!(causes.len(), 1, "expected exactly one cause, got {causes:#?}");
        causes.into_iter().next().unwrap_or_else(|| unreachable!())
    }

    fn cause(reason: &'static str, field: &str, message: &str) -> FieldCause {
        FieldCause { reason, field: field.to_string(), message: message.to_string() }
    }

    // ----- compile -------------------------------------------------------

    #[test]
    fn compile_rejects_malformed_schemas() {
        let bad = [
            json!({"type": "strin"}),
            json!({"type": 3}),
            json!({"type": "object", "properties": []}),
            json!({"type": "object", "properties": {"a": "string"}}),
            json!({"type": "array", "items": [{"type": "string"}]}),
            json!({"type": "string", "minLength": -1}),
            json!({"type": "string", "maxLength": "3"}),
            json!({"type": "number", "minimum": "0"}),
            json!({"type": "number", "multipleOf": 0}),
            json!({"type": "object", "required": "a"}),
            json!({"type": "object", "required": [1]}),
            json!({"type": "string", "enum": "a"}),
            json!({"type": "string", "pattern": 5}),
            json!({"type": "string", "nullable": "yes"}),
            json!({"type": "array", "x-kubernetes-list-type": "bag"}),
            json!({"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}}),
            json!({"type": "array", "uniqueItems": true}),
            json!({"$ref": "#/definitions/x"}),
            json!({"type": "object", "additionalProperties": "yes"}),
            json!({"type": "object", "additionalProperties": false}),
            json!({"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "string"}}),
            json!({"anyOf": {"type": "string"}}),
            json!("object"),
        ];
        for s in bad {
            assert!(StructuralSchema::compile(&s).is_err(), "should reject {s}");
        }
        let err = StructuralSchema::compile(&json!({
            "type": "object", "properties": {"spec": {"type": "objec"}}
        }))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(err.starts_with("openAPIV3Schema.properties.spec.type: "), "{err}");
    }

    #[test]
    fn compile_rejects_too_deep_schema() {
        let mut s = json!({"type": "string"});
        for _ in 0..(MAX_SCHEMA_DEPTH + 2) {
            s = json!({"type": "object", "properties": {"a": s}});
        }
        assert!(StructuralSchema::compile(&s).is_err());
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

    #[test]
    fn has_status_and_has_path() {
        let s = compile(json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
        }}));
        assert!(s.has_status());
        assert!(s.has_path("spec.replicas"));
        assert!(s.has_path(".status.replicas"));
        assert!(!s.has_path("spec.selector"));
        assert!(!s.has_path(""));
        assert!(!field(json!({"type": "string"})).has_status());
    }

    // ----- type -----------------------------------------------------------

    #[test]
    fn type_mismatch_message_matches_apiserver() {
        let s = spec_schema(json!({"type": "object", "properties": {"replicas": {"type": "integer"}}}));
        let c = one(s.validate(&obj(json!({"replicas": "3"}))));
        assert_eq!(
            c,
            cause(
                FieldCause::TYPE_INVALID,
                "spec.replicas",
                r#"Invalid value: "string": spec.replicas in body must be of type integer: "string""#
            )
        );
    }

    #[test]
    fn each_type_accepts_its_values_and_rejects_others() {
        let cases = [
            ("object", json!({}), json!([])),
            ("array", json!([]), json!({})),
            ("string", json!(""), json!(1)),
            ("integer", json!(3), json!(1.5)),
            ("number", json!(1.5), json!("1.5")),
            ("boolean", json!(false), json!("false")),
        ];
        for (t, good, bad) in cases {
            let s = field(json!({ "type": t }));
            assert!(check(&s, good.clone()).is_empty(), "{t} should accept {good}");
            let c = one(check(&s, bad.clone()));
            assert_eq!(c.reason, FieldCause::TYPE_INVALID, "{t} vs {bad}");
            assert!(c.message.contains(&format!("must be of type {t}")), "{}", c.message);
        }
    }

    #[test]
    fn integer_accepts_whole_floats_and_number_accepts_integers() {
        let s = field(json!({"type": "integer"}));
        assert!(check(&s, json!(3.0)).is_empty());
        assert!(check(&s, json!(-7)).is_empty());
        assert!(check(&s, json!(u64::MAX)).len() == 1, "beyond int64 is a float in apiserver");
        let c = one(check(&s, json!(2.5)));
        assert_eq!(c.message, r#"Invalid value: "number": spec.f in body must be of type integer: "number""#);
        let s = field(json!({"type": "number"}));
        assert!(check(&s, json!(3)).is_empty());
        assert!(check(&s, json!(3.25)).is_empty());
    }

    #[test]
    fn null_needs_nullable() {
        let s = field(json!({"type": "string"}));
        let c = one(check(&s, Value::Null));
        assert_eq!(
            c,
            cause(
                FieldCause::TYPE_INVALID,
                "spec.f",
                r#"Invalid value: "null": spec.f in body must be of type string: "null""#
            )
        );
        let s = field(json!({"type": "string", "nullable": true}));
        assert!(check(&s, Value::Null).is_empty());
        let s = field(json!({"x-kubernetes-preserve-unknown-fields": true}));
        assert!(check(&s, Value::Null).is_empty());
    }

    #[test]
    fn int_or_string() {
        let s = field(json!({"x-kubernetes-int-or-string": true}));
        assert!(check(&s, json!(80)).is_empty());
        assert!(check(&s, json!("http")).is_empty());
        let c = one(check(&s, json!(true)));
        assert_eq!(c.message, r#"Invalid value: "boolean": spec.f in body must be of type integer,string: "boolean""#);
        assert_eq!(one(check(&s, json!({"a": 1}))).reason, FieldCause::TYPE_INVALID);
        // kubebuilder also emits an anyOf next to it: still fine.
        let s = field(json!({"x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$"}));
        assert!(check(&s, json!("500m")).is_empty());
        assert!(check(&s, json!(2)).is_empty());
        assert_eq!(one(check(&s, json!("lots"))).reason, FieldCause::INVALID);
    }

    #[test]
    fn untyped_preserve_accepts_anything() {
        let s = field(json!({"x-kubernetes-preserve-unknown-fields": true}));
        for v in [json!(1), json!("a"), json!([1, {"b": 2}]), json!({"x": {"y": [null]}}), json!(true)] {
            assert!(check(&s, v).is_empty());
        }
    }

    #[test]
    fn cel_rules_are_accepted_and_ignored() {
        let s = field(json!({"type": "object", "properties": {"a": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.a > 10", "message": "a must exceed 10"}]}));
        assert!(check(&s, json!({"a": 1})).is_empty());
    }

    // ----- formats --------------------------------------------------------

    #[test]
    fn formats() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            (
                "date-time",
                &["2024-02-29T10:00:00Z", "2024-01-01T23:59:59.123+05:30", "2024-01-01t00:00:00z"],
                &["2024-01-01", "2023-02-29T10:00:00Z", "2024-01-01T24:00:00Z", "yesterday"],
            ),
            ("date", &["2024-02-29", "1999-12-31"], &["2023-02-29", "2024-13-01", "2024-1-01", "x"]),
            ("byte", &["aGVsbG8=", "aGk=", "YWJj"], &["aGVsbG8", "not base64!", ""]),
            (
                "uuid",
                &["123e4567-e89b-12d3-a456-426614174000", "123E4567E89B12D3A456426614174000"],
                &["123e4567-e89b-12d3-a456", "zzze4567-e89b-12d3-a456-426614174000"],
            ),
            ("uuid4", &["123e4567-e89b-42d3-a456-426614174000"], &["123e4567-e89b-12d3-a456-426614174000"]),
            ("duration", &["1h30m", "300ms", "-1.5h", "0", "3 days", "1 week"], &["", "1x", "h", "soon"]),
            ("ipv4", &["10.0.0.1", "::ffff:10.0.0.1"], &["10.0.0", "256.0.0.1", "::1"]),
            ("ipv6", &["::1", "fe80::1"], &["10.0.0.1", "fe80:::1"]),
            ("cidr", &["10.0.0.0/8", "fd00::/64"], &["10.0.0.0", "10.0.0.0/33", "x/8"]),
            // strfmt's hostname regex: a single label may hold one hyphen, after its first character.
            (
                "hostname",
                &["example.com", "localhost", "k-8s", "a.b-c.io"],
                &["-bad.com", "a_b.com", "a..b", "my-host"],
            ),
            (
                "mac",
                &["00:00:5e:00:53:01", "00-00-5E-00-53-01", "0000.5e00.5301"],
                &["00:00:5e:00:53", "zz:00:5e:00:53:01"],
            ),
            ("email", &["a@example.com", "Ann <ann@example.com>"], &["example.com", "a@", "@b"]),
            (
                "uri",
                &["https://example.com/a?b=c", "/relative/abs", "urn:isbn:123"],
                &["relative/path", "", "http://a b/"],
            ),
            ("hexcolor", &["#fff", "A0B1C2"], &["#ffff", "red"]),
            ("rgbcolor", &["rgb(0, 128,255)"], &["rgb(256,0,0)", "#fff"]),
            ("ssn", &["123-45-6789"], &["123456789", "12-345-6789"]),
            ("isbn", &["0306406152", "978-0-306-40615-7"], &["0306406153", "978-0-306-40615-8"]),
            ("creditcard", &["4111 1111 1111 1111"], &["4111 1111 1111 1112"]),
            ("bsonobjectid", &["507f1f77bcf86cd799439011"], &["507f1f77bcf86cd79943901"]),
            ("password", &["anything at all"], &[]),
        ];
        for (format, good, bad) in cases {
            let s = field(json!({"type": "string", "format": format}));
            for g in *good {
                assert!(check(&s, json!(g)).is_empty(), "{format} should accept {g:?}");
            }
            for b in *bad {
                let c = one(check(&s, json!(b)));
                assert_eq!(c.reason, FieldCause::TYPE_INVALID, "{format} vs {b:?}");
                assert_eq!(
                    c.message,
                    format!(
                        "Invalid value: {q}: spec.f in body must be of type {format}: {q}",
                        q = crate::selector::go_quote(b)
                    )
                );
            }
        }
    }

    #[test]
    fn numeric_and_unknown_formats_are_ignored_like_apiserver() {
        // apiserver strips int32/int64/float/double before validating.
        let s = field(json!({"type": "integer", "format": "int32"}));
        assert!(check(&s, json!(3_000_000_000_i64)).is_empty());
        assert_eq!(one(check(&s, json!("1"))).reason, FieldCause::TYPE_INVALID);
        let s = field(json!({"type": "string", "format": "k8s-unknown-format"}));
        assert!(check(&s, json!("whatever")).is_empty());
    }

    // ----- enum, pattern, bounds, lengths, counts ---------------------------

    #[test]
    fn enum_not_supported() {
        let s = field(json!({"type": "string", "enum": ["a", "b"]}));
        assert!(check(&s, json!("a")).is_empty());
        assert_eq!(
            one(check(&s, json!("x"))),
            cause(FieldCause::NOT_SUPPORTED, "spec.f", r#"Unsupported value: "x": supported values: "a", "b""#)
        );
        let s = field(json!({"type": "integer", "enum": [1, 2]}));
        assert!(check(&s, json!(2.0)).is_empty(), "Go compares converted numbers");
        assert_eq!(one(check(&s, json!(3))).message, r#"Unsupported value: 3: supported values: "1", "2""#);
    }

    #[test]
    fn pattern_mismatch() {
        let s = field(json!({"type": "string", "pattern": "^[a-z]+$"}));
        assert!(check(&s, json!("abc")).is_empty());
        assert_eq!(
            one(check(&s, json!("ABC"))),
            cause(FieldCause::INVALID, "spec.f", r#"Invalid value: "ABC": spec.f in body should match '^[a-z]+$'"#)
        );
    }

    #[test]
    fn minimum_and_maximum() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "replicas": {"type": "integer", "minimum": 0, "maximum": 3},
            "ex": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1.5, "exclusiveMaximum": true}
        }}));
        assert!(s.validate(&obj(json!({"replicas": 0, "ex": 1.0}))).is_empty());
        assert!(s.validate(&obj(json!({"replicas": 3}))).is_empty());
        assert_eq!(
            one(s.validate(&obj(json!({"replicas": 5})))).message,
            "Invalid value: 5: spec.replicas in body should be less than or equal to 3"
        );
        assert_eq!(
            one(s.validate(&obj(json!({"replicas": -1})))).message,
            "Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
        );
        assert_eq!(
            one(s.validate(&obj(json!({"ex": 0})))).message,
            "Invalid value: 0: spec.ex in body should be greater than 0"
        );
        let c = one(s.validate(&obj(json!({"ex": 1.5}))));
        assert_eq!(c.reason, FieldCause::INVALID);
        assert_eq!(c.message, "Invalid value: 1.5: spec.ex in body should be less than 1.5");
    }

    #[test]
    fn multiple_of() {
        let s = field(json!({"type": "number", "multipleOf": 5}));
        assert!(check(&s, json!(15)).is_empty());
        assert!(check(&s, json!(10.0)).is_empty());
        assert_eq!(one(check(&s, json!(7))).message, "Invalid value: 7: spec.f in body should be a multiple of 5");
        assert_eq!(one(check(&s, json!(7.5))).message, "Invalid value: 7.5: spec.f in body should be a multiple of 5");
        let s = field(json!({"type": "number", "multipleOf": 0.25}));
        assert!(check(&s, json!(0.75)).is_empty());
        assert!(check(&s, json!(3)).is_empty());
        assert_eq!(one(check(&s, json!(0.3))).reason, FieldCause::INVALID);
    }

    #[test]
    fn string_lengths_count_characters() {
        let s = field(json!({"type": "string", "minLength": 2, "maxLength": 3}));
        assert!(check(&s, json!("ééé")).is_empty(), "3 characters, 6 bytes");
        assert_eq!(
            one(check(&s, json!("abcd"))),
            cause(FieldCause::TOO_LONG, "spec.f", "Too long: may not be longer than 3")
        );
        assert_eq!(
            one(check(&s, json!("a"))),
            cause(
                FieldCause::INVALID,
                "spec.f",
                r#"Invalid value: "a": spec.f in body should be at least 2 chars long"#
            )
        );
    }

    #[test]
    fn item_counts() {
        let s = field(json!({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}));
        assert!(check(&s, json!([1, 2, 3])).is_empty());
        assert_eq!(
            one(check(&s, json!([1, 2, 3, 4]))),
            cause(FieldCause::TOO_MANY, "spec.f", "Too many: 4: must have at most 3 items")
        );
        assert_eq!(
            one(check(&s, json!([]))),
            cause(FieldCause::INVALID, "spec.f", "Invalid value: 0: spec.f in body should have at least 1 items")
        );
        let s = field(json!({"type": "array", "maxItems": 1}));
        assert_eq!(one(check(&s, json!([1, 2]))).message, "Too many: 2: must have at most 1 item");
    }

    #[test]
    fn property_counts() {
        let s = field(json!({"type": "object", "additionalProperties": {"type": "string"},
            "minProperties": 1, "maxProperties": 2}));
        assert!(check(&s, json!({"a": "1"})).is_empty());
        assert_eq!(
            one(check(&s, json!({"a": "1", "b": "2", "c": "3"}))),
            cause(FieldCause::TOO_MANY, "spec.f", "Too many: 3: must have at most 2 items")
        );
        assert_eq!(
            one(check(&s, json!({}))).message,
            "Invalid value: 0: spec.f in body should have at least 1 properties"
        );
        // Like kube-openapi, a count failure stops the object's validation.
        assert_eq!(check(&s, json!({"a": 1, "b": 2, "c": 3})).len(), 1);
    }

    #[test]
    fn required_reports_missing_property_path() {
        let s = spec_schema(json!({"type": "object", "required": ["a", "b"],
            "properties": {"a": {"type": "string"}, "b": {"type": "string", "nullable": true}}}));
        let causes = s.validate(&obj(json!({"b": null})));
        assert_eq!(causes, vec![cause(FieldCause::REQUIRED, "spec.a", "Required value")]);
        assert!(s.validate(&obj(json!({"a": "x", "b": "y"}))).is_empty());
        // The root's metadata and friends are never validated here.
        let s = compile(json!({"type": "object", "required": ["metadata", "spec"],
            "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}}},
                           "spec": {"type": "object"}}}));
        let causes = s.validate(&json!({"metadata": {"name": "too-long"}, "apiVersion": 1}));
        assert_eq!(causes, vec![cause(FieldCause::REQUIRED, "spec", "Required value")]);
    }

    // ----- list types ---------------------------------------------------------

    #[test]
    fn list_type_set() {
        let s = field(json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}));
        assert!(check(&s, json!(["a", "b"])).is_empty());
        assert_eq!(
            check(&s, json!(["a", "b", "a", "a", "b"])),
            vec![
                cause(FieldCause::DUPLICATE, "spec.f[2]", r#"Duplicate value: "a""#),
                cause(FieldCause::DUPLICATE, "spec.f[4]", r#"Duplicate value: "b""#),
            ]
        );
        let s = field(json!({"type": "array", "x-kubernetes-list-type": "set",
            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}));
        assert_eq!(
            one(check(&s, json!([{"a": 1, "b": 2}, {"b": 2, "a": 1}]))).message,
            r#"Duplicate value: map[string]interface {}{"a":1, "b":2}"#
        );
        let s = field(json!({"type": "array", "items": {"type": "number"}, "x-kubernetes-list-type": "atomic"}));
        assert!(check(&s, json!([1, 1])).is_empty());
    }

    #[test]
    fn list_type_map() {
        let s = field(json!({"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name", "protocol"],
            "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "protocol": {"type": "string", "default": "TCP"}, "port": {"type": "integer"}}}}));
        assert!(check(&s, json!([{"name": "a", "protocol": "TCP"}, {"name": "a", "protocol": "UDP"}])).is_empty());
        let c = one(check(
            &s,
            json!([{"name": "a", "protocol": "TCP", "port": 1}, {"name": "a", "protocol": "TCP", "port": 2}]),
        ));
        assert_eq!(
            c,
            cause(
                FieldCause::DUPLICATE,
                "spec.f[1]",
                r#"Duplicate value: map[string]interface {}{"name":"a", "protocol":"TCP"}"#
            )
        );
        let causes = check(&s, json!([{"name": "a"}, "b"]));
        assert_eq!(causes.len(), 2, "{causes:#?}");
        assert_eq!(causes[0].reason, FieldCause::TYPE_INVALID);
        assert_eq!(causes[1].field, "spec.f[1]");
        assert_eq!(causes[1].message, r#"Invalid value: "b": must be an object for an array of list-type map"#);
        // Defaults fill key fields before validation.
        let mut o = obj(json!({"f": [{"name": "a"}, {"name": "a", "protocol": "TCP"}]}));
        s.apply_defaults(&mut o);
        assert_eq!(one(s.validate(&o)).reason, FieldCause::DUPLICATE);
    }

    // ----- junctors -----------------------------------------------------------

    #[test]
    fn any_of() {
        let s = field(json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}));
        assert!(check(&s, json!({"a": "x"})).is_empty());
        assert!(check(&s, json!({"b": "x"})).is_empty());
        let causes = check(&s, json!({}));
        assert_eq!(
            causes,
            vec![
                cause(
                    FieldCause::INVALID,
                    "spec.f",
                    r#"Invalid value: "": "spec.f" must validate at least one schema (anyOf)"#
                ),
                cause(FieldCause::REQUIRED, "spec.f.a", "Required value"),
            ]
        );
    }

    #[test]
    fn one_of() {
        let s = field(json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}));
        assert!(check(&s, json!({"a": "x"})).is_empty());
        let c = one(check(&s, json!({"a": "x", "b": "y"})));
        assert_eq!(
            c.message,
            r#"Invalid value: "": "spec.f" must validate one and only one schema (oneOf). Found 2 valid alternatives"#
        );
        let causes = check(&s, json!({}));
        assert_eq!(causes.len(), 2);
        assert!(causes[0].message.ends_with("(oneOf). Found none valid"));
    }

    #[test]
    fn all_of_and_not() {
        let s = field(json!({"type": "string", "allOf": [{"minLength": 2}, {"maxLength": 3}]}));
        assert!(check(&s, json!("ab")).is_empty());
        let causes = check(&s, json!("abcd"));
        assert_eq!(causes.len(), 2);
        assert_eq!(causes[0].reason, FieldCause::TOO_LONG);
        assert_eq!(causes[1].message, r#"Invalid value: "": "spec.f" must validate all the schemas (allOf)"#);

        let s = field(json!({"type": "string", "not": {"enum": ["forbidden"]}}));
        assert!(check(&s, json!("fine")).is_empty());
        assert_eq!(
            one(check(&s, json!("forbidden"))).message,
            r#"Invalid value: "": "spec.f" must not validate the schema (not)"#
        );
    }

    #[test]
    fn gateway_address_one_of() {
        // The shape of Gateway API's spec.addresses items.
        let s = field(json!({"type": "object", "properties": {
            "type": {"type": "string", "default": "IPAddress"}, "value": {"type": "string"}},
        "oneOf": [
            {"properties": {"type": {"enum": ["IPAddress"]}, "value": {"anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]}}},
            {"properties": {"type": {"not": {"enum": ["IPAddress"]}}}}
        ]}));
        assert!(check(&s, json!({"type": "IPAddress", "value": "10.0.0.1"})).is_empty());
        assert!(check(&s, json!({"type": "Hostname", "value": "example.com"})).is_empty());
        let causes = check(&s, json!({"type": "IPAddress", "value": "example.com"}));
        assert!(!causes.is_empty());
        assert!(causes[0].message.contains("(oneOf). Found none valid"), "{causes:#?}");
    }

    // ----- maps, items, embedded ----------------------------------------------

    #[test]
    fn additional_properties_and_items_paths() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "groups": {"type": "array", "items": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}
        }}));
        let causes = s.validate(&obj(json!({
            "labels": {"ok": "x", "foo": 1},
            "groups": [{"replicas": 1}, {"replicas": "2"}]
        })));
        assert_eq!(causes.len(), 2);
        assert_eq!(causes[0].field, "spec.labels.foo");
        assert_eq!(causes[1].field, "spec.groups[1].replicas");
    }

    #[test]
    fn additional_properties_true_keeps_scalars_and_empties_objects_like_apiserver() {
        let s = field(json!({"type": "object", "additionalProperties": true}));
        let mut o = obj(json!({"f": {"a": 1, "b": {"c": 2}}}));
        assert_eq!(s.prune(&mut o), vec!["spec.f.b.c"]);
        assert_eq!(o["spec"]["f"], json!({"a": 1, "b": {}}));
        assert!(s.validate(&o).is_empty());
    }

    #[test]
    fn embedded_resource_requires_api_version_and_kind() {
        let s = field(json!({"type": "array", "items": {"type": "object",
            "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}));
        assert!(check(&s, json!([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}])).is_empty());
        assert_eq!(
            check(&s, json!([{"metadata": {}}])),
            vec![
                cause(FieldCause::REQUIRED, "spec.f[0].apiVersion", "Required value"),
                cause(FieldCause::REQUIRED, "spec.f[0].kind", "Required value"),
            ]
        );
        let causes = check(&s, json!([{"apiVersion": "a/b/c", "kind": "Bad_Kind"}]));
        assert_eq!(causes.len(), 2);
        assert_eq!(causes[0].message, r#"Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#);
        assert!(causes[1].message.starts_with(
            r#"Invalid value: "Bad_Kind": may have mixed case, but should otherwise match: a DNS-1035 label"#
        ));
        // apiVersion, kind and metadata are allowed (and kept) even without properties.
        let s = field(json!({"type": "object", "x-kubernetes-embedded-resource": true,
            "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}}));
        let mut o = obj(json!({"f": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bogus": 1},
            "spec": {"x": "y", "z": 1}, "other": true}}));
        let pruned = s.prune(&mut o);
        assert_eq!(pruned, vec!["spec.f.metadata.bogus", "spec.f.other", "spec.f.spec.z"]);
        assert_eq!(
            o["spec"]["f"],
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": "y"}})
        );
        assert!(s.validate(&o).is_empty());
    }

    // ----- pruning ------------------------------------------------------------

    #[test]
    fn prune_returns_sorted_paths_and_keeps_root_meta() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "object", "properties": {"v": {"type": "string"}}}},
            "plain": {"type": "object"}
        }}));
        let mut o = json!({
            "apiVersion": "x.io/v1", "kind": "X",
            "metadata": {"name": "a", "unknownMeta": 1},
            "spec": {"foo": 1, "items": [{"name": "a", "bar": 2}, {"name": "b"}],
                     "labels": {"k": {"v": "1", "w": "2"}}, "plain": {"gone": true}},
            "extra": {}
        });
        let pruned = s.prune(&mut o);
        assert_eq!(pruned, vec!["extra", "spec.foo", "spec.items[0].bar", "spec.labels.k.w", "spec.plain.gone"]);
        assert_eq!(
            o,
            json!({"apiVersion": "x.io/v1", "kind": "X", "metadata": {"name": "a", "unknownMeta": 1},
                   "spec": {"items": [{"name": "a"}, {"name": "b"}], "labels": {"k": {"v": "1"}}, "plain": {}}})
        );
    }

    #[test]
    fn prune_preserve_unknown_fields_still_prunes_specified_properties() {
        let s = spec_schema(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}}));
        let mut o = obj(json!({"anything": {"deep": [1, {"x": 2}]}, "known": {"a": "1", "b": "2"}}));
        let pruned = s.prune(&mut o);
        assert_eq!(pruned, vec!["spec.known.b"]);
        assert_eq!(o["spec"], json!({"anything": {"deep": [1, {"x": 2}]}, "known": {"a": "1"}}));

        // int-or-string and untyped preserved nodes are left as they are.
        let s = spec_schema(json!({"type": "object", "properties": {
            "port": {"x-kubernetes-int-or-string": true},
            "raw": {"x-kubernetes-preserve-unknown-fields": true}}}));
        let mut o = obj(json!({"port": "http", "raw": {"a": {"b": [1]}}}));
        assert!(s.prune(&mut o).is_empty());
        assert_eq!(o["spec"], json!({"port": "http", "raw": {"a": {"b": [1]}}}));
    }

    #[test]
    fn prune_root_preserve_keeps_everything_unknown() {
        let s = compile(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
        let mut o = obj(json!({"a": 1}));
        let before = o.clone();
        assert!(s.prune(&mut o).is_empty());
        assert_eq!(o, before);
    }

    // ----- defaulting ---------------------------------------------------------

    #[test]
    fn defaults_are_applied_top_down() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "strategy": {"type": "object", "default": {},
                "properties": {"type": {"type": "string", "default": "None"},
                               "rolling": {"type": "object", "default": {"max": 1}, "properties": {
                                   "max": {"type": "integer"}, "surge": {"type": "integer", "default": 2}}}}},
            "list": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer", "default": 7}}}},
            "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"on": {"type": "boolean", "default": true}}}},
            "kept": {"type": "string", "default": "d"}
        }}));
        let mut o = obj(json!({"list": [{}, {"n": 1}], "map": {"a": {}, "b": {"on": false}}, "kept": "mine"}));
        s.apply_defaults(&mut o);
        assert_eq!(
            o["spec"],
            json!({"list": [{"n": 7}, {"n": 1}], "map": {"a": {"on": true}, "b": {"on": false}}, "kept": "mine",
                   "strategy": {"type": "None", "rolling": {"max": 1, "surge": 2}}})
        );
        // Defaults are deep copies.
        let mut o2 = obj(json!({}));
        s.apply_defaults(&mut o2);
        assert_eq!(o2["spec"]["strategy"]["rolling"], json!({"max": 1, "surge": 2}));
    }

    #[test]
    fn non_nullable_nulls_are_dropped_before_defaulting() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "withDefault": {"type": "integer", "default": 3},
            "noDefault": {"type": "string"},
            "nullable": {"type": "string", "nullable": true, "default": "x"},
            "items": {"type": "array", "items": {"type": "string", "default": "d"}},
            "m": {"type": "object", "additionalProperties": {"type": "string"}}
        }}));
        let mut o = obj(json!({"withDefault": null, "noDefault": null, "nullable": null,
            "items": ["a", null], "m": {"k": null}, "unknown": null}));
        s.apply_defaults(&mut o);
        assert_eq!(
            o["spec"],
            json!({"withDefault": 3, "nullable": null, "items": ["a", "d"], "m": {}, "unknown": null})
        );
    }

    // ----- RayCluster-like ------------------------------------------------------

    fn ray_template() -> Value {
        json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                "name": {"type": "string"}}},
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
    }

    fn raycluster_schema() -> StructuralSchema {
        compile(json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {
                    "type": "object",
                    "required": ["headGroupSpec"],
                    "properties": {
                        "rayVersion": {"type": "string"},
                        "suspend": {"type": "boolean"},
                        "upgradeStrategy": {"type": "object", "properties": {
                            "type": {"type": "string", "enum": ["Recreate", "None"]}}},
                        "headGroupSpec": {"type": "object", "required": ["template"], "properties": {
                            "rayStartParams": {"type": "object", "additionalProperties": {"type": "string"}},
                            "serviceType": {"type": "string"},
                            "template": ray_template()}},
                        "workerGroupSpecs": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["groupName"],
                            "items": {"type": "object",
                                "required": ["groupName", "maxReplicas", "minReplicas", "template"],
                                "properties": {
                                    "groupName": {"type": "string", "maxLength": 63},
                                    "replicas": {"type": "integer", "format": "int32", "default": 0},
                                    "minReplicas": {"type": "integer", "format": "int32", "default": 0, "minimum": 0},
                                    "maxReplicas": {"type": "integer", "format": "int32", "default": 2147483647},
                                    "rayStartParams": {"type": "object", "additionalProperties": {"type": "string"}},
                                    "template": ray_template()}}}
                    }
                },
                "status": {"type": "object", "properties": {
                    "state": {"type": "string"},
                    "readyWorkerReplicas": {"type": "integer", "format": "int32"},
                    "lastUpdateTime": {"type": "string", "format": "date-time", "nullable": true}}}
            }
        }))
    }

    fn admit(s: &StructuralSchema, o: &mut Value) -> (Vec<String>, Vec<FieldCause>) {
        let pruned = s.prune(o);
        s.apply_defaults(o);
        (pruned, s.validate(o))
    }

    #[test]
    fn raycluster_sample_is_admitted_with_defaults() {
        let s = raycluster_schema();
        assert!(s.has_status());
        assert!(s.has_path("spec.workerGroupSpecs"));
        let mut o = json!({
            "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "raycluster-kuberay"},
            "spec": {
                "rayVersion": "2.52.0",
                "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
                    {"name": "ray-head", "image": "rayproject/ray:2.52.0",
                     "resources": {"limits": {"cpu": "1", "memory": "5Gi"}}}]}}},
                "workerGroupSpecs": [{"groupName": "workergroup", "replicas": 1, "minReplicas": 1, "maxReplicas": 5,
                    "rayStartParams": {}, "template": {"metadata": {"labels": {"a": "b"}},
                    "spec": {"containers": [{"name": "ray-worker"}]}}}]
            },
            "status": {"state": "ready", "lastUpdateTime": null}
        });
        let (pruned, causes) = admit(&s, &mut o);
        assert!(pruned.is_empty(), "{pruned:?}");
        assert!(causes.is_empty(), "{causes:#?}");

        let mut o = json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r"},
            "spec": {"headGroupSpec": {"template": {}}, "workerGroupSpecs": [{"groupName": "g", "template": {}}]}});
        let (_, causes) = admit(&s, &mut o);
        assert!(causes.is_empty(), "{causes:#?}");
        assert_eq!(
            o["spec"]["workerGroupSpecs"][0],
            json!({"groupName": "g", "template": {}, "replicas": 0, "minReplicas": 0, "maxReplicas": 2147483647})
        );
    }

    #[test]
    fn raycluster_errors() {
        let s = raycluster_schema();
        let mut o = json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "r"},
        "spec": {
            "upgradeStrategy": {"type": "Rolling"},
            "workerGroupSpecs": [
                {"groupName": "g", "replicas": "2", "minReplicas": -1, "template": {"metadata": {"labels": {"a": 1}, "uid": "x"}, "spec": {"any": 1}}},
                {"groupName": "g", "template": {}, "bogus": true}
            ],
            "unknownSpecField": 1
        }});
        let (pruned, causes) = admit(&s, &mut o);
        assert_eq!(
            pruned,
            vec![
                "spec.unknownSpecField",
                "spec.workerGroupSpecs[0].template.metadata.uid",
                "spec.workerGroupSpecs[1].bogus"
            ]
        );
        assert_eq!(
            causes,
            vec![
                cause(
                    FieldCause::NOT_SUPPORTED,
                    "spec.upgradeStrategy.type",
                    r#"Unsupported value: "Rolling": supported values: "Recreate", "None""#
                ),
                cause(
                    FieldCause::TYPE_INVALID,
                    "spec.workerGroupSpecs[0].replicas",
                    r#"Invalid value: "string": spec.workerGroupSpecs[0].replicas in body must be of type integer: "string""#
                ),
                cause(
                    FieldCause::INVALID,
                    "spec.workerGroupSpecs[0].minReplicas",
                    "Invalid value: -1: spec.workerGroupSpecs[0].minReplicas in body should be greater than or equal to 0"
                ),
                cause(
                    FieldCause::TYPE_INVALID,
                    "spec.workerGroupSpecs[0].template.metadata.labels.a",
                    r#"Invalid value: "integer": spec.workerGroupSpecs[0].template.metadata.labels.a in body must be of type string: "integer""#
                ),
                cause(
                    FieldCause::DUPLICATE,
                    "spec.workerGroupSpecs[1]",
                    r#"Duplicate value: map[string]interface {}{"groupName":"g"}"#
                ),
                cause(FieldCause::REQUIRED, "spec.headGroupSpec", "Required value"),
            ]
        );
        // Defaults filled the required min/max replicas, so no Required for them.
        assert_eq!(o["spec"]["workerGroupSpecs"][1]["maxReplicas"], json!(2147483647));
    }

    // ----- limits and printing ----------------------------------------------------

    #[test]
    fn too_deeply_nested_objects_are_reported() {
        let mut schema = json!({"type": "string"});
        let mut value = json!("leaf");
        for _ in 0..(MAX_DEPTH + 5) {
            schema = json!({"type": "object", "properties": {"a": schema}});
            value = json!({ "a": value });
        }
        let s = compile(schema);
        let causes = s.validate(&value);
        let c = one(causes);
        assert_eq!(c.reason, FieldCause::INVALID);
        assert!(c.message.contains("too deeply nested"), "{}", c.message);
        // Pruning and defaulting stop there without trouble.
        let mut v = value.clone();
        assert!(s.prune(&mut v).is_empty());
        s.apply_defaults(&mut v);
    }

    #[test]
    fn deep_values_without_schema_do_not_recurse_forever() {
        let s = field(json!({"type": "array"}));
        let mut v = json!([]);
        for _ in 0..1000 {
            v = json!([v]);
        }
        let mut o = obj(json!({ "f": v }));
        assert!(s.prune(&mut o).is_empty());
        assert!(s.validate(&o).is_empty());
    }

    #[test]
    fn validation_work_is_bounded() {
        // Schema size times object size can be large: the budget stops it.
        let branches: Vec<Value> = (0..50).map(|i| json!({"type": "string", "minLength": 100 + i})).collect();
        let s = field(json!({"type": "array", "items": {"anyOf": branches}}));
        let o = obj(json!({"f": vec!["x"; 200]}));
        let causes = s.validate_with_budget(&o, 1000);
        assert!(
            causes.last().is_some_and(|c| c.field.is_empty() && c.message.contains("too complex")),
            "{:?}",
            causes.last()
        );
        // With the real budget it finishes and reports every item.
        assert_eq!(s.validate(&o).len(), 400);
    }

    #[test]
    fn go_printing() {
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(3.0), "3");
        assert_eq!(go_float(100000.0), "100000");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(2147483647.0), "2.147483647e+09");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(crate::selector::go_quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
        assert_eq!(
            go_body_value(&json!({"b": [1, "x", null], "a": 1.5})),
            r#"map[string]interface {}{"a":1.5, "b":[]interface {}{1, "x", interface {}(nil)}}"#
        );
        assert_eq!(go_body_value(&Value::Null), "\"null\"");
        assert_eq!(cause(FieldCause::REQUIRED, "spec.a", "Required value").to_string(), "spec.a: Required value");
    }
}
