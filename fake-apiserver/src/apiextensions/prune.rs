//! Pruning: dropping the fields a schema does not declare, as kube-apiserver's
//! `structuralpruning` does.

use super::MAX_DEPTH;
use super::schema::{Additional, Node, OBJECT_META_FIELDS, is_meta_field};
use serde_json::Value;
use std::fmt::Write as _;

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
pub(super) fn prune_value(
    node: Option<&Node>,
    x: &mut Value,
    path: &mut String,
    out: &mut Vec<String>,
    depth: usize,
    root: bool,
) {
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

#[cfg(test)]
mod tests {
    use crate::apiextensions::test_schemas::*;

    use serde_json::json;

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
}
