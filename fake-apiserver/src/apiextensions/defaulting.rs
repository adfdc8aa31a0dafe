//! Defaulting: filling in `default`s top-down, after dropping `null`s the schema does not allow,
//! as kube-apiserver's `structuraldefaulting` does.

use super::MAX_DEPTH;
use super::schema::{Additional, Node};
use serde_json::Value;

/// apiserver's `PruneNonNullableNullsWithoutDefaults`.
pub(super) fn prune_nulls(node: Option<&Node>, x: &mut Value, depth: usize) {
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
pub(super) fn default_value(n: &Node, x: &mut Value, depth: usize) {
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

#[cfg(test)]
mod tests {
    use crate::apiextensions::test_schemas::*;

    use serde_json::json;

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
}
