//! What structured-merge-diff does with an object and its type, ownership aside: the fields a
//! type does not declare (the decoder's unknown fields), an applied configuration merged into a
//! live object (maps field by field, lists by their list type), and the atomic maps and lists a
//! configuration sets. Server-side apply (`fieldmanager`) and mutating admission policies
//! (`registry::admission::policy::mutating`) both use them.

use super::ResourceType;
use super::patch_meta::{ListType, Shape};
use serde_json::{Map, Value, json};

/// The merge shape of a resource's objects: the built-in table or the CRD schema.
pub(crate) fn shape_of(rt: &ResourceType) -> Shape<'_> {
    match &rt.schema {
        Some(s) => Shape::schema_root(s),
        None => Shape::builtin_root(&rt.group, &rt.version, &rt.kind),
    }
}

/// The dotted paths of fields in `body` that `rt` does not declare (`spec.foo`,
/// `spec.containers[0].bar`). `$`-directives of strategic merge patches are not fields.
pub(crate) fn unknown_fields(rt: &ResourceType, body: &Value) -> Vec<String> {
    match &rt.schema {
        Some(_) => pruned_fields(rt, &mut body.clone()),
        None => {
            let mut out = Vec::new();
            walk(body, shape_of(rt), &mut String::new(), &mut out);
            out
        }
    }
}

/// Prunes a custom resource by its schema; the pruned paths, then ObjectMeta's unknown fields
/// (ObjectMeta is the server's: it is checked against the built-in table).
pub(crate) fn pruned_fields(rt: &ResourceType, body: &mut Value) -> Vec<String> {
    let Some(schema) = &rt.schema else { return Vec::new() };
    let mut out = schema.prune(body);
    if let Some(meta) = body.get("metadata") {
        let shape = Shape::builtin_root("", "v1", "ConfigMap").child("metadata");
        walk(meta, shape, &mut String::from("metadata"), &mut out);
    }
    out
}

/// Adds the paths below `path` that `shape` does not declare; `path` is a buffer the walk
/// extends and restores, so only reported paths are allocated.
fn walk(v: &Value, shape: Shape<'_>, path: &mut String, out: &mut Vec<String>) {
    let len = path.len();
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k.starts_with('$') {
                    continue;
                }
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
                match shape.declares(k) {
                    Some(false) => out.push(path.clone()),
                    _ => walk(x, shape.child(k), path, out),
                }
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                use std::fmt::Write as _;
                let _ = write!(path, "[{i}]");
                walk(x, shape.item(), path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// Merges an apply configuration into an object without tracking who owns what, as a mutating
/// admission policy's `ApplyConfiguration` is merged (structured-merge-diff's `Merge`):
/// maps field by field, lists by their list type.
pub(crate) fn merge_configuration(live: &Value, configuration: &Value, shape: Shape<'_>) -> Value {
    merge(Some(live), configuration, shape, true, false, false)
}

/// The paths (`.spec.selector`, `.spec.containers[0].args`) of the atomic maps and lists an apply
/// configuration sets, which a mutating admission policy may not (`validatePatch` of
/// `apiserver/pkg/admission/plugin/policy/mutating/patch/smd.go`): setting part of one would
/// drop the rest.
pub(crate) fn atomics(configuration: &Value, shape: Shape<'_>) -> Vec<String> {
    fn walk(v: &Value, shape: Shape<'_>, path: &mut String, out: &mut Vec<String>) {
        let len = path.len();
        match v {
            Value::Object(m) => {
                if shape.map_atomic() {
                    out.push(path.clone());
                }
                for (k, x) in m {
                    path.push('.');
                    path.push_str(k);
                    walk(x, shape.child(k), path, out);
                    path.truncate(len);
                }
            }
            Value::Array(items) if !matches!(shape, Shape::Unknown) => {
                if shape.list_type() == ListType::Atomic {
                    out.push(path.clone());
                }
                for (i, x) in items.iter().enumerate() {
                    use std::fmt::Write as _;
                    let _ = write!(path, "[{i}]");
                    walk(x, shape.item(), path, out);
                    path.truncate(len);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(configuration, shape, &mut String::new(), &mut out);
    out
}

/// Merges the applied configuration into the live value. At the root, identity and server
/// metadata stay the live ones and status goes with its subresource.
pub(crate) fn merge(
    live: Option<&Value>,
    applied: &Value,
    shape: Shape<'_>,
    root: bool,
    keep_status: bool,
    only_status: bool,
) -> Value {
    match (live, applied) {
        (Some(Value::Object(l)), Value::Object(a)) if root || !shape.map_atomic() => {
            let mut out = l.clone();
            for (k, x) in a {
                if root && ((keep_status && k == "status") || (only_status && k != "status")) {
                    continue;
                }
                if x.is_null() {
                    out.remove(k);
                    continue;
                }
                let merged = merge(l.get(k), x, shape.child(k), false, false, false);
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Some(Value::Array(l)), Value::Array(a)) => match shape.list_type() {
            ListType::Atomic => applied.clone(),
            ListType::Set => {
                let mut out = l.clone();
                for x in a {
                    if !out.contains(x) {
                        out.push(x.clone());
                    }
                }
                Value::Array(out)
            }
            ListType::Map(keys) => {
                let mut out = l.clone();
                for x in a {
                    let k = item_key(x, &keys);
                    match out.iter().position(|y| k.is_some() && item_key(y, &keys) == k) {
                        Some(i) => {
                            let m = merge(out.get(i), x, shape.item(), false, false, false);
                            out[i] = m;
                        }
                        None => out.push(merge(None, x, shape.item(), false, false, false)),
                    }
                }
                Value::Array(out)
            }
        },
        (_, Value::Object(a)) => {
            let mut out = Map::new();
            for (k, x) in a {
                if !x.is_null() {
                    out.insert(k.clone(), merge(None, x, shape.child(k), false, false, false));
                }
            }
            Value::Object(out)
        }
        _ => applied.clone(),
    }
}

/// The `k:` element of a list-map item, `None` when a key is missing.
pub(crate) fn item_key(item: &Value, keys: &[String]) -> Option<String> {
    let mut m = Map::new();
    let mut sorted: Vec<&String> = keys.iter().collect();
    sorted.sort();
    for k in sorted {
        // structured-merge-diff fills a missing key field from its schema default: the only
        // defaulted key of the built-in list-maps is `protocol` (TCP) of ports.
        let v = match item.get(k) {
            Some(v) => v.clone(),
            None if k == "protocol" => json!("TCP"),
            None => return None,
        };
        m.insert(k.clone(), v);
    }
    Some(format!("k:{}", Value::Object(m)))
}
