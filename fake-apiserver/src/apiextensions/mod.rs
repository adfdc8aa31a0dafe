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
//! * `x-kubernetes-validations` (CEL rules) are compiled with the schema (a rule
//!   that does not compile refuses the CRD) and evaluated by the `cel` module
//!   after the structural checks, as apiserver runs CEL after the OpenAPI
//!   validation; [`StructuralSchema::validate_update`] binds `oldSelf` for
//!   transition rules.
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
//!
//! Files by concern: `schema` (the compiled tree), `compile`, `prune`, `defaulting`,
//! `validation`, `formats` (string formats) and `go_values` (Go's printing of bad values).

mod cel;
mod compile;
mod defaulting;
mod formats;
mod go_values;
mod prune;
mod schema;
pub(crate) use schema::OBJECT_META_FIELDS;
#[cfg(test)]
mod test_schemas;
mod validation;

pub(crate) use schema::SchemaCursor;

use compile::Compiler;
use schema::Node;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use validation::{Mode, Validator};

/// The field of a cause about the whole object, as Go prints a nil `field.Path`.
pub const NIL_PATH: &str = "<nil>";

/// The cause apiextensions-apiserver adds when CEL rules were skipped because the object was
/// invalid already.
pub const RULES_NOT_CHECKED: &str = "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

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

/// A compile error at schema path `path`.
pub(super) fn schema_err(path: &str, message: impl Into<String>) -> SchemaError {
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
    /// Not a refusal: a ratcheted CEL error, which kube-apiserver sends back as a warning.
    pub const WARNING: &'static str = "Warning";

    /// A cause with `reason` on `field`.
    pub(super) fn new(reason: &'static str, field: &str, message: String) -> Self {
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
        Ok(StructuralSchema { root: Arc::from(root) })
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
        prune::prune_value(Some(&self.root), obj, &mut path, &mut out, 0, true);
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
        defaulting::prune_nulls(Some(&self.root), obj, 0);
        defaulting::default_value(&self.root, obj, 0);
    }

    /// [`Self::prune`] and [`Self::apply_defaults`] of the top-level `member` alone, when that
    /// gives what doing the whole object gives for it: the schema declares it (the root not
    /// preserving unknown fields) and the object holds it as an object. Answers whether it did;
    /// when not, nothing was changed.
    pub fn canonicalize_member(&self, obj: &mut Value, member: &str) -> bool {
        if self.root.preserve_unknown {
            return false;
        }
        let Some(node) = self.root.prop(member) else { return false };
        let Some(value) = obj.get_mut(member).filter(|v| v.is_object()) else { return false };
        let mut path = member.to_string();
        prune::prune_value(Some(node), value, &mut path, &mut Vec::new(), 1, false);
        defaulting::prune_nulls(Some(node), value, 1);
        defaulting::default_value(node, value, 1);
        true
    }

    /// Validate the whole object against the schema and return every cause, in
    /// document order. The root's `apiVersion`, `kind` and `metadata` are not
    /// validated here (the server validates ObjectMeta). Run [`Self::prune`] and
    /// [`Self::apply_defaults`] first, as apiserver does.
    pub fn validate(&self, obj: &Value) -> Vec<FieldCause> {
        self.validate_with_budget(obj, VALIDATION_BUDGET)
    }

    /// Whether any node of the schema carries CEL rules.
    pub fn has_rules(&self) -> bool {
        fn any(n: &Node) -> bool {
            !n.rules.is_empty()
                || n.properties.iter().any(|(_, c)| any(c))
                || n.items.as_deref().is_some_and(any)
                || matches!(&n.additional, Some(schema::Additional::Schema(s)) if any(s))
        }
        any(&self.root)
    }

    /// Validate an update: the structural checks and every CEL rule on `obj`, with
    /// transition rules (`oldSelf`) evaluated against the correlated parts of `old`.
    pub fn validate_update(&self, obj: &Value, old: &Value) -> Vec<FieldCause> {
        self.validate_inner(obj, Some(old), VALIDATION_BUDGET)
    }

    fn validate_with_budget(&self, obj: &Value, budget: u64) -> Vec<FieldCause> {
        self.validate_inner(obj, None, budget)
    }

    fn validate_inner(&self, obj: &Value, old: Option<&Value>, budget: u64) -> Vec<FieldCause> {
        let mut v = Validator { budget, exhausted: false };
        let mut out = Vec::new();
        v.node(&self.root, obj, old, "", 0, Mode { root: true, junctor: false }, &mut out);
        // Like apiextensions-apiserver (customResourceStrategy.Validate, hasBlockingErr): CEL
        // rules are skipped when a schema error is Required, NotSupported, TooLong, TooMany or
        // TypeInvalid; after other errors (pattern, bounds, format) they still run.
        let blocking = out.iter().any(|c| {
            matches!(
                c.reason,
                FieldCause::REQUIRED
                    | FieldCause::NOT_SUPPORTED
                    | FieldCause::TOO_LONG
                    | FieldCause::TOO_MANY
                    | FieldCause::TYPE_INVALID
            )
        });
        if !blocking {
            cel::CelPass::new().walk(&self.root, obj, old, false, "", 0, &mut out);
        } else if self.has_rules() {
            out.push(FieldCause::new(FieldCause::INVALID, NIL_PATH, RULES_NOT_CHECKED.into()));
        }
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

#[cfg(test)]
mod tests {
    use crate::apiextensions::test_schemas::*;
    use crate::apiextensions::*;
    use serde_json::{Value, json};

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
        assert!(s.cursor().field("status").is_some());
        assert!(s.cursor().field("spec").and_then(|c| c.field("workerGroupSpecs")).is_some());
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
    fn updates_ratchet_errors_on_unchanged_values() {
        // Values that became invalid under a tightened schema (or were written before it) do
        // not fail an update that leaves them alone; a changed value is checked in full.
        let s = compile(json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer", "maximum": 5},
                "names": {"type": "array", "items": {"type": "string", "maxLength": 3}},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string", "maxLength": 3}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "required": ["name"], "properties": {
                        "name": {"type": "string"}, "port": {"type": "integer", "maximum": 100}}}}}},
            "status": {"type": "object", "properties": {"ready": {"type": "integer", "maximum": 5}}}}}));
        let old = json!({"spec": {"replicas": 10, "names": ["long-a", "ok"], "tags": ["long-t"],
            "ports": [{"name": "a", "port": 500}, {"name": "b", "port": 1}]}, "status": {"ready": 1}});
        let fields =
            |obj: &Value| -> Vec<String> { s.validate_update(obj, &old).into_iter().map(|c| c.field).collect() };
        // A status write leaves the whole spec as it was.
        let mut status_only = old.clone();
        status_only["status"]["ready"] = json!(2);
        assert!(fields(&status_only).is_empty());
        // The same object is invalid when created.
        assert_eq!(s.validate(&status_only).len(), 4);
        // Changed values are checked; their unchanged neighbours are not.
        let mut changed = old.clone();
        changed["spec"]["replicas"] = json!(11);
        changed["spec"]["names"] = json!(["long-a", "long-b"]);
        // Map-list items correlate by key, so reordering keeps `a` unchanged.
        changed["spec"]["ports"] = json!([{"name": "b", "port": 200}, {"name": "a", "port": 500}]);
        assert_eq!(fields(&changed), ["spec.replicas", "spec.names[1]", "spec.ports[0].port"]);
        // Set items never correlate: a changed set is checked whole.
        let mut tagged = old.clone();
        tagged["spec"]["tags"] = json!(["long-t", "ok"]);
        assert_eq!(fields(&tagged), ["spec.tags[0]"]);
    }

    #[test]
    fn cel_rules_ratchet_on_unchanged_values_unless_they_read_old_self() {
        let s = compile(json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "size": {"type": "integer", "x-kubernetes-validations": [{"rule": "self <= 5", "message": "at most 5"}]},
                "floor": {"type": "integer", "x-kubernetes-validations": [{"rule": "self <= 5 && self >= oldSelf", "message": "no"}]},
                "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
                        "x-kubernetes-validations": [{"rule": "self.n < 3", "message": "small"}]}}}},
            "status": {"type": "object", "properties": {"ready": {"type": "integer"}}}}}));
        let old = json!({"spec": {"size": 10, "floor": 9, "items": [{"name": "a", "n": 7}]}, "status": {"ready": 1}});
        let messages = |obj: &Value| -> Vec<String> {
            s.validate_update(obj, &old)
                .into_iter()
                .map(|c| format!("{} {}: {}", c.reason, c.field, c.message))
                .collect()
        };
        let mut status_only = old.clone();
        status_only["status"]["ready"] = json!(2);
        // Ratcheted failures are warnings; `floor` reads oldSelf, so its rule never ratchets.
        assert_eq!(
            messages(&status_only),
            [
                "Warning spec.size: Invalid value: 10: at most 5",
                "FieldValueInvalid spec.floor: Invalid value: 9: no",
                "Warning spec.items[0]: Invalid value: small"
            ]
        );
        let mut changed = status_only.clone();
        changed["spec"]["size"] = json!(11);
        changed["spec"]["items"] = json!([{"name": "b", "n": 8}, {"name": "a", "n": 7}]);
        assert_eq!(
            messages(&changed),
            [
                "FieldValueInvalid spec.size: Invalid value: 11: at most 5",
                "FieldValueInvalid spec.floor: Invalid value: 9: no",
                "FieldValueInvalid spec.items[0]: Invalid value: small",
                "Warning spec.items[1]: Invalid value: small"
            ]
        );
    }

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
}
