//! Strategic merge patch (`application/strategic-merge-patch+json`) for built-in types.
//!
//! Like a JSON merge patch, except that lists follow the field's `patchStrategy`: `merge`
//! lists of objects merge item by item on their `patchMergeKey`, `merge` lists of scalars
//! become a union, all other lists are replaced. The directives:
//! `$patch: replace|delete|merge` (in a map, or as a list item), `$setElementOrder/<list>`,
//! `$deleteFromPrimitiveList/<list>` and `$retainKeys`. `null` deletes a key.

use serde_json::{Map, Value};

use super::patch_meta::Shape;

/// Why a strategic merge patch could not be applied. The patch handler's
/// `interpretStrategicMergePatchError` (apiserver v0.37.2 endpoints/handlers/patch.go) makes the
/// malformed directives 400s; the rest are plain errors, 500s without a reason.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SmpError {
    /// `$patch` with a value other than `replace`, `delete` or `merge` (mergepatch
    /// `ErrBadPatchType`), with the map it sits in.
    #[error("unknown patch type: {kind} in map: {map}")]
    UnknownPatchType { kind: String, map: String },
    /// A list item of a merge-by-key list without its merge key.
    #[error("map: {item} does not contain declared merge key: {key}")]
    MissingMergeKey { item: String, key: String },
    /// A directive whose value has the wrong shape.
    #[error("invalid patch format of {0}")]
    BadDirective(&'static str),
}

/// Applies `patch` to `original` (both whole objects) along `shape`.
pub(crate) fn apply(original: &Value, patch: &Value, shape: Shape<'_>) -> Result<Value, SmpError> {
    let Value::Object(p) = patch else {
        // A patch that is not an object replaces the document (then fails the object check).
        return Ok(patch.clone());
    };
    let mut doc = match original {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    match merge_map(&mut doc, p, shape)? {
        MapOutcome::Keep => Ok(Value::Object(doc)),
        MapOutcome::Delete => Ok(Value::Object(Map::new())),
    }
}

enum MapOutcome {
    Keep,
    Delete,
}

fn is_directive(key: &str) -> bool {
    key == "$patch"
        || key == "$retainKeys"
        || key.starts_with("$setElementOrder/")
        || key.starts_with("$deleteFromPrimitiveList/")
}

fn merge_map(
    orig: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    shape: Shape<'_>,
) -> Result<MapOutcome, SmpError> {
    match patch.get("$patch") {
        None => {}
        Some(Value::String(s)) if s == "merge" => {}
        Some(Value::String(s)) if s == "delete" => return Ok(MapOutcome::Delete),
        Some(Value::String(s)) if s == "replace" => {
            orig.clear();
            let rest: Map<String, Value> =
                patch.iter().filter(|(k, _)| *k != "$patch").map(|(k, v)| (k.clone(), v.clone())).collect();
            merge_map(orig, &rest, shape)?;
            return Ok(MapOutcome::Keep);
        }
        Some(other) => return Err(SmpError::UnknownPatchType { kind: go_value(other), map: go_map(patch) }),
    }
    let mut orders: Vec<(&str, &Vec<Value>)> = Vec::new();
    for (k, pv) in patch {
        if let Some(list) = k.strip_prefix("$setElementOrder/") {
            let Value::Array(order) = pv else { return Err(SmpError::BadDirective("setElementOrder list")) };
            orders.push((list, order));
            continue;
        }
        if let Some(list) = k.strip_prefix("$deleteFromPrimitiveList/") {
            let Value::Array(gone) = pv else { return Err(SmpError::BadDirective("primitive list")) };
            if let Some(Value::Array(items)) = orig.get_mut(list) {
                items.retain(|x| !gone.contains(x));
            }
            continue;
        }
        if is_directive(k) {
            continue;
        }
        let child = shape.child(k);
        match pv {
            Value::Null => {
                orig.remove(k);
            }
            Value::Object(pm) => {
                let target = orig.entry(k.clone()).or_insert_with(|| Value::Object(Map::new()));
                if !target.is_object() {
                    *target = Value::Object(Map::new());
                }
                if let Value::Object(tm) = target
                    && let MapOutcome::Delete = merge_map(tm, pm, child)?
                {
                    orig.remove(k);
                }
            }
            Value::Array(pl) => {
                let mut list = match orig.remove(k) {
                    Some(Value::Array(l)) => l,
                    _ => Vec::new(),
                };
                merge_list(&mut list, pl, child)?;
                orig.insert(k.clone(), Value::Array(list));
            }
            scalar => {
                orig.insert(k.clone(), scalar.clone());
            }
        }
    }
    for (list, order) in orders {
        if let Some(Value::Array(items)) = orig.get_mut(list) {
            reorder(items, order, shape.child(list).patch_merge_key());
        }
    }
    if let Some(retain) = patch.get("$retainKeys") {
        let Value::Array(keep) = retain else { return Err(SmpError::BadDirective("retainKeys")) };
        let keep: Vec<&str> = keep.iter().filter_map(Value::as_str).collect();
        orig.retain(|k, _| keep.contains(&k.as_str()));
    }
    Ok(MapOutcome::Keep)
}

fn merge_list(orig: &mut Vec<Value>, patch: &[Value], shape: Shape<'_>) -> Result<(), SmpError> {
    let replace = patch.iter().any(|x| x.get("$patch").and_then(Value::as_str) == Some("replace"));
    let merge = shape.patch_strategy().split(',').any(|s| s == "merge");
    if replace || !merge {
        orig.clear();
        for x in patch.iter().filter(|x| x.get("$patch").and_then(Value::as_str) != Some("replace")) {
            orig.push(cleaned(x, shape.item())?);
        }
        return Ok(());
    }
    let Some(key) = shape.patch_merge_key() else {
        // A merge list of scalars: a union.
        let original = orig.clone();
        for x in patch {
            if !orig.contains(x) {
                orig.push(x.clone());
            }
        }
        *orig = go_element_order(std::mem::take(orig), patch, &original, None);
        return Ok(());
    };
    // Deletions come first, so the order below sees the original without them.
    for x in patch {
        if let (Some(kv), Some("delete")) = (x.get(key), x.get("$patch").and_then(Value::as_str)) {
            orig.retain(|o| o.get(key) != Some(kv));
        }
    }
    let original = orig.clone();
    let mut order = Vec::new();
    for x in patch {
        let Value::Object(pm) = x else {
            return Err(SmpError::MissingMergeKey { item: go_value(x), key: key.to_string() });
        };
        let Some(kv) = pm.get(key) else {
            return Err(SmpError::MissingMergeKey { item: go_map(pm), key: key.to_string() });
        };
        let at = orig.iter().position(|o| o.get(key) == Some(kv));
        match pm.get("$patch").and_then(Value::as_str) {
            Some("delete") => {
                orig.retain(|o| o.get(key) != Some(kv));
                continue;
            }
            Some("merge") | None => order.push(x.clone()),
            Some(other) => {
                return Err(SmpError::UnknownPatchType { kind: other.to_string(), map: go_map(pm) });
            }
        }
        match at {
            Some(i) => {
                if let Some(Value::Object(om)) = orig.get_mut(i)
                    && let MapOutcome::Delete = merge_map(om, pm, shape.item())?
                {
                    orig.remove(i);
                }
            }
            None => orig.push(cleaned(x, shape.item())?),
        }
    }
    *orig = go_element_order(std::mem::take(orig), &order, &original, Some(key));
    Ok(())
}

/// The order `mergeSlice` leaves a merged list in (`normalizeElementOrder`): the items the
/// patch names in the patch's order, the others in the original's, interleaved by their
/// places in the original; an item the original lacks goes before the server-only item it
/// meets (so a new item is not simply appended).
fn go_element_order(merged: Vec<Value>, patch: &[Value], original: &[Value], key: Option<&str>) -> Vec<Value> {
    let id = |v: &Value| -> Value {
        match key {
            Some(k) => v.get(k).cloned().unwrap_or(Value::Null),
            None => v.clone(),
        }
    };
    let place = |list: &[Value], v: &Value| list.iter().position(|o| id(o) == id(v));
    let (mut named, server_only): (Vec<Value>, Vec<Value>) =
        merged.into_iter().partition(|v| place(patch, v).is_some());
    named.sort_by_key(|v| place(patch, v));
    let mut out = Vec::with_capacity(named.len() + server_only.len());
    let (mut left, mut right) = (server_only.into_iter().peekable(), named.into_iter().peekable());
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (Some(l), Some(r)) => matches!((place(original, l), place(original, r)), (Some(a), Some(b)) if a < b),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

/// A patch value with its directives resolved against nothing (for new keys and replaced lists).
fn cleaned(x: &Value, shape: Shape<'_>) -> Result<Value, SmpError> {
    match x {
        Value::Object(pm) => {
            let mut m = Map::new();
            merge_map(&mut m, pm, shape)?;
            Ok(Value::Object(m))
        }
        other => Ok(other.clone()),
    }
}

/// `$setElementOrder`: the listed items take the slots listed items hold, in the listed order;
/// the others stay where they are.
fn reorder(items: &mut [Value], order: &[Value], merge_key: Option<&str>) {
    let id = |v: &Value| -> Value {
        match merge_key {
            Some(k) => v.get(k).cloned().unwrap_or(Value::Null),
            None => v.clone(),
        }
    };
    let rank = |v: &Value| order.iter().position(|o| id(o) == id(v));
    let slots: Vec<usize> = (0..items.len()).filter(|&i| rank(&items[i]).is_some()).collect();
    let mut listed: Vec<Value> = slots.iter().map(|&i| items[i].clone()).collect();
    listed.sort_by_key(|v| rank(v).unwrap_or(usize::MAX));
    for (slot, v) in slots.into_iter().zip(listed) {
        items[slot] = v;
    }
}

impl SmpError {
    /// The answer the patch handler gives (see the type's doc).
    pub(crate) fn into_api(self) -> crate::error::ApiError {
        match self {
            SmpError::BadDirective(_) => crate::error::ApiError::bad_request(self.to_string()),
            other => crate::error::ApiError::internal_plain(other.to_string()),
        }
    }
}

/// A decoded JSON value as Go's `%v` prints an `interface{}` holding it: strings bare, numbers
/// as float64 (`%g`, shortest), `<nil>`, `[a b]`, `map[k:v]`.
fn go_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.as_f64().map(apimachinery::go::go_float).unwrap_or_else(|| n.to_string()),
        Value::Array(items) => format!("[{}]", items.iter().map(go_value).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => go_map(m),
    }
}

/// A map printed the way Go prints a `map[string]interface{}` in these messages.
fn go_map(m: &Map<String, Value>) -> String {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    let parts: Vec<String> = keys.iter().map(|k| format!("{k}:{}", go_value(&m[k.as_str()]))).collect();
    format!("map[{}]", parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod_smp(orig: Value, patch: Value) -> Value {
        apply(&orig, &patch, Shape::builtin_root("", "v1", "Pod")).unwrap()
    }

    #[test]
    fn containers_merge_by_name_and_args_replace() {
        let orig = json!({"spec": {"containers": [
            {"name": "a", "image": "a:1", "args": ["x", "y"]},
            {"name": "b", "image": "b:1"}]}});
        let out = pod_smp(orig, json!({"spec": {"containers": [{"name": "a", "image": "a:2", "args": ["z"]}]}}));
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "a", "image": "a:2", "args": ["z"]}, {"name": "b", "image": "b:1"}])
        );
    }

    #[test]
    fn delete_replace_and_primitive_directives() {
        let orig = json!({"metadata": {"finalizers": ["a", "b"]}, "spec": {"containers": [
            {"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}], "nodeSelector": {"x": "1"}}});
        let out = pod_smp(
            orig.clone(),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "finalizers": ["c"]},
                   "spec": {"containers": [{"name": "a", "$patch": "delete"}],
                            "nodeSelector": {"$patch": "replace", "y": "2"}}}),
        );
        // The new `c` goes before the server-only `b` (Go's `mergeSortedSlice`).
        assert_eq!(out["metadata"]["finalizers"], json!(["c", "b"]));
        assert_eq!(out["spec"]["containers"], json!([{"name": "b", "image": "b:1"}]));
        assert_eq!(out["spec"]["nodeSelector"], json!({"y": "2"}));
        let out = pod_smp(orig, json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "c", "image": "c"}]}}));
        assert_eq!(out["spec"]["containers"], json!([{"name": "c", "image": "c"}]));
    }

    #[test]
    fn set_element_order_and_retain_keys() {
        let orig = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}],
            "volumes": [{"name": "v", "emptyDir": {}}]}});
        let out = pod_smp(
            orig,
            json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                            "volumes": [{"name": "v", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/x"}}]}}),
        );
        assert_eq!(out["spec"]["containers"], json!([{"name": "b"}, {"name": "a"}]));
        assert_eq!(out["spec"]["volumes"], json!([{"name": "v", "hostPath": {"path": "/x"}}]));
    }

    #[test]
    fn bad_directives_are_errors() {
        let shape = Shape::builtin_root("", "v1", "Pod");
        let e = apply(&json!({}), &json!({"$patch": "bogus"}), shape).unwrap_err();
        assert_eq!(e.to_string(), "unknown patch type: bogus in map: map[$patch:bogus]");
        let e = apply(&json!({}), &json!({"spec": {"$patch": "x", "n": [1, 1000000, 0.5]}}), shape).unwrap_err();
        assert_eq!(e.to_string(), "unknown patch type: x in map: map[$patch:x n:[1 1e+06 0.5]]");
        let e = apply(&json!({}), &json!({"spec": {"containers": [{"image": "x"}]}}), shape).unwrap_err();
        assert_eq!(e.to_string(), "map: map[image:x] does not contain declared merge key: name");
    }
}
