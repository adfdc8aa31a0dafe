//! `metadata.managedFields`: who owns which field, in the FieldsV1 encoding
//! (`f:<field>`, `k:<list-map key JSON>`, `v:<set value JSON>`, `i:<index>`, `.` for "this
//! node itself"), kept up to date by every write.
//!
//! Non-apply writes (create, update, patch) record an `Update` entry for their field manager
//! (the `fieldManager` parameter, else derived from the user agent) owning the fields they
//! changed, and take those fields from every other manager. Server-side apply (see
//! [`super::apply`]) records `Apply` entries itself.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::patch_meta::{ListType, Shape};
use crate::registry::ResourceType;

/// Top-level fields no manager owns.
const IGNORED_TOP: &[&str] = &["apiVersion", "kind"];
/// Metadata the server sets; no manager owns it.
const IGNORED_META: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// A set of field paths, as a tree keyed by encoded path elements (`f:spec`, `k:{"name":"a"}`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSet {
    /// The path to this node is itself in the set (a leaf, or a list item with fields below).
    pub member: bool,
    pub children: BTreeMap<String, FieldSet>,
}

impl FieldSet {
    /// Decodes FieldsV1 JSON.
    pub(crate) fn from_fields_v1(v: &Value) -> FieldSet {
        let mut out = FieldSet::default();
        let Value::Object(m) = v else { return out };
        if m.is_empty() {
            out.member = true;
        }
        for (k, x) in m {
            if k == "." {
                out.member = true;
            } else {
                out.children.insert(k.clone(), FieldSet::from_fields_v1(x));
            }
        }
        out
    }

    /// Encodes as FieldsV1 JSON (the root is never a member).
    pub(crate) fn to_fields_v1(&self) -> Value {
        let mut m = Map::new();
        if self.member && !self.children.is_empty() {
            m.insert(".".into(), json!({}));
        }
        for (k, c) in &self.children {
            m.insert(k.clone(), c.to_fields_v1());
        }
        Value::Object(m)
    }

    /// Whether the set has no member.
    pub(crate) fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    /// Every member path, each as its list of encoded elements.
    pub(crate) fn paths(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        self.walk(&mut Vec::new(), &mut out);
        out
    }

    fn walk(&self, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        if self.member {
            out.push(prefix.clone());
        }
        for (k, c) in &self.children {
            prefix.push(k.clone());
            c.walk(prefix, out);
            prefix.pop();
        }
    }

    fn node(&self, path: &[String]) -> Option<&FieldSet> {
        match path.split_first() {
            None => Some(self),
            Some((first, rest)) => self.children.get(first)?.node(rest),
        }
    }

    /// Whether the path is a member.
    pub(crate) fn has(&self, path: &[String]) -> bool {
        self.node(path).is_some_and(|n| n.member)
    }

    /// Whether the path or anything below it is a member.
    pub(crate) fn has_within(&self, path: &[String]) -> bool {
        self.node(path).is_some_and(|n| !n.is_empty())
    }

    /// Adds a member path.
    pub(crate) fn insert(&mut self, path: &[String]) {
        match path.split_first() {
            None => self.member = true,
            Some((first, rest)) => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Adds every member of `other`.
    pub(crate) fn union(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (k, c) in &other.children {
            self.children.entry(k.clone()).or_default().union(c);
        }
    }

    /// Removes every member of `other`.
    pub(crate) fn subtract(&mut self, other: &FieldSet) {
        if other.member {
            self.member = false;
        }
        for (k, c) in &other.children {
            if let Some(mine) = self.children.get_mut(k) {
                mine.subtract(c);
                if mine.is_empty() {
                    self.children.remove(k);
                }
            }
        }
    }

    /// Keeps only paths that still exist in `v`.
    pub(crate) fn retain_existing(&mut self, v: &Value) {
        self.children.retain(|k, c| match resolve(v, k) {
            Some(x) => {
                c.retain_existing(x);
                !c.is_empty()
            }
            None => false,
        });
    }
}

/// The value an encoded path element names inside `v`.
pub(crate) fn resolve<'a>(v: &'a Value, element: &str) -> Option<&'a Value> {
    if let Some(f) = element.strip_prefix("f:") {
        return v.as_object()?.get(f);
    }
    let items = v.as_array()?;
    if let Some(k) = element.strip_prefix("k:") {
        let key: Map<String, Value> = serde_json::from_str(k).ok()?;
        return items.iter().find(|x| key.iter().all(|(kk, kv)| x.get(kk) == Some(kv)));
    }
    if let Some(val) = element.strip_prefix("v:") {
        let val: Value = serde_json::from_str(val).ok()?;
        return items.iter().find(|x| **x == val);
    }
    if let Some(i) = element.strip_prefix("i:") {
        return items.get(i.parse::<usize>().ok()?);
    }
    None
}

/// The value at a whole path.
pub(crate) fn value_at<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(v, |x, e| resolve(x, e))
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

/// The first list-map of `v` with two items of the same key, as structured-merge-diff names it
/// when it types an applied configuration: `(".spec.resourceClaims", "[name=\"gpu\"]")`.
pub(crate) fn duplicate_key(v: &Value, shape: Shape<'_>) -> Option<(String, String)> {
    fn walk(v: &Value, shape: Shape<'_>, at: &str) -> Option<(String, String)> {
        match v {
            Value::Object(m) if !shape.map_atomic() => {
                m.iter().find_map(|(k, x)| walk(x, shape.child(k), &format!("{at}.{k}")))
            }
            Value::Array(items) => {
                let ListType::Map(keys) = shape.list_type() else { return None };
                let mut seen = std::collections::BTreeSet::new();
                for x in items {
                    if let Some(k) = item_key(x, &keys)
                        && !seen.insert(k)
                    {
                        let mut sorted: Vec<&String> = keys.iter().collect();
                        sorted.sort();
                        let parts: Vec<String> = sorted.iter().map(|k| format!("{k}={}", x[k.as_str()])).collect();
                        return Some((at.to_string(), format!("[{}]", parts.join(","))));
                    }
                }
                items.iter().find_map(|x| walk(x, shape.item(), at))
            }
            _ => None,
        }
    }
    walk(v, shape, "")
}

/// A path printed the way apply conflicts name it: `.spec.containers[name="a"].image`.
pub(crate) fn display_path(path: &[String]) -> String {
    let mut out = String::new();
    for e in path {
        if let Some(f) = e.strip_prefix("f:") {
            out.push('.');
            out.push_str(f);
        } else if let Some(k) = e.strip_prefix("k:") {
            let key: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
            let parts: Vec<String> = key.iter().map(|(kk, kv)| format!("{kk}={kv}")).collect();
            out.push_str(&format!("[{}]", parts.join(",")));
        } else if let Some(v) = e.strip_prefix("v:") {
            out.push_str(&format!("[={v}]"));
        } else if let Some(i) = e.strip_prefix("i:") {
            out.push_str(&format!("[{i}]"));
        }
    }
    out
}

/// The merge shape of a resource's objects: the built-in table or the CRD schema.
pub(crate) fn shape_of(rt: &ResourceType) -> Shape<'_> {
    match &rt.schema {
        Some(s) => Shape::schema_root(s),
        None => Shape::builtin_root(&rt.group, &rt.version, &rt.kind),
    }
}

/// A copy without the fields nobody owns (and without `status` when `drop_status`).
pub(crate) fn trackable(v: &Value, drop_status: bool) -> Value {
    // Built key by key rather than cloned and pruned: managedFields, the largest part of most
    // objects, is never copied.
    let Value::Object(m) = v else { return v.clone() };
    let mut out = serde_json::Map::with_capacity(m.len());
    for (k, x) in m {
        if IGNORED_TOP.contains(&k.as_str()) || (drop_status && k == "status") {
            continue;
        }
        if k == "metadata"
            && let Value::Object(meta) = x
        {
            let kept: serde_json::Map<String, Value> = meta
                .iter()
                .filter(|(f, _)| !IGNORED_META.contains(&f.as_str()))
                .map(|(f, y)| (f.clone(), y.clone()))
                .collect();
            if !kept.is_empty() {
                out.insert(k.clone(), Value::Object(kept));
            }
            continue;
        }
        out.insert(k.clone(), x.clone());
    }
    Value::Object(out)
}

/// Every field of `v` as a set: leaves, list-map items (with their fields), set values;
/// atomic lists and maps are one leaf.
pub(crate) fn fields_of(v: &Value, shape: Shape<'_>) -> FieldSet {
    let mut s = FieldSet::default();
    if let Value::Object(m) = v {
        for (k, x) in m {
            collect(x, shape.child(k), s.children.entry(format!("f:{k}")).or_default());
        }
    }
    s
}

fn collect(v: &Value, shape: Shape<'_>, node: &mut FieldSet) {
    match v {
        Value::Object(m) if !shape.map_atomic() && !m.is_empty() => {
            for (k, x) in m {
                collect(x, shape.child(k), node.children.entry(format!("f:{k}")).or_default());
            }
        }
        Value::Array(items) if !items.is_empty() => match shape.list_type() {
            ListType::Atomic => node.member = true,
            ListType::Set => {
                for x in items {
                    node.children.entry(format!("v:{x}")).or_default().member = true;
                }
            }
            ListType::Map(keys) => {
                for x in items {
                    match item_key(x, &keys) {
                        Some(k) => {
                            let c = node.children.entry(k).or_default();
                            c.member = true;
                            collect(x, shape.item(), c);
                            // An item that is only its key fields is still one member.
                        }
                        None => node.member = true,
                    }
                }
            }
        },
        _ => node.member = true,
    }
}

/// The fields `new` sets that `old` does not have with the same value.
pub(crate) fn changed_fields(old: &Value, new: &Value, shape: Shape<'_>) -> FieldSet {
    let mut s = FieldSet::default();
    diff(Some(old), new, shape, &mut s);
    s.member = false;
    s
}

fn diff(old: Option<&Value>, new: &Value, shape: Shape<'_>, node: &mut FieldSet) {
    if old == Some(new) {
        return;
    }
    match (old, new) {
        (Some(Value::Object(o)), Value::Object(n)) if !shape.map_atomic() && !n.is_empty() => {
            for (k, x) in n {
                let key = format!("f:{k}");
                let mut c = FieldSet::default();
                diff(o.get(k), x, shape.child(k), &mut c);
                if !c.is_empty() {
                    node.children.insert(key, c);
                }
            }
        }
        (Some(Value::Array(o)), Value::Array(n)) if !n.is_empty() => match shape.list_type() {
            ListType::Set => {
                for x in n.iter().filter(|x| !o.contains(x)) {
                    node.children.entry(format!("v:{x}")).or_default().member = true;
                }
            }
            ListType::Map(keys) => {
                for x in n {
                    let Some(k) = item_key(x, &keys) else {
                        node.member = true;
                        continue;
                    };
                    let before = o.iter().find(|y| item_key(y, &keys).as_deref() == Some(k.as_str()));
                    let mut c = FieldSet::default();
                    match before {
                        Some(b) => diff(Some(b), x, shape.item(), &mut c),
                        None => {
                            c.member = true;
                            collect(x, shape.item(), &mut c);
                        }
                    }
                    if !c.is_empty() {
                        node.children.insert(k, c);
                    }
                }
            }
            ListType::Atomic => node.member = true,
        },
        _ => collect(new, shape, node),
    }
}

/// One `managedFields` entry.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    pub api_version: String,
    pub time: Option<String>,
    pub subresource: Option<String>,
    pub fields: FieldSet,
}

impl Entry {
    /// Whether the entry is the one of this manager, operation and subresource.
    pub(crate) fn same_owner(&self, manager: &str, operation: &str, subresource: Option<&str>) -> bool {
        self.manager == manager && self.operation == operation && self.subresource.as_deref() == subresource
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), json!(self.manager));
        m.insert("operation".into(), json!(self.operation));
        m.insert("apiVersion".into(), json!(self.api_version));
        if let Some(t) = &self.time {
            m.insert("time".into(), json!(t));
        }
        m.insert("fieldsType".into(), json!("FieldsV1"));
        m.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if let Some(s) = &self.subresource {
            m.insert("subresource".into(), json!(s));
        }
        Value::Object(m)
    }
}

/// The entries of an object's `metadata.managedFields` (unreadable entries are dropped).
pub(crate) fn entries(obj: &Value) -> Vec<Entry> {
    entries_in(&obj["metadata"]["managedFields"])
}

/// The entries of a `managedFields` list.
fn entries_in(list: &Value) -> Vec<Entry> {
    let Some(list) = list.as_array() else { return Vec::new() };
    list.iter()
        .filter_map(|e| {
            Some(Entry {
                manager: e.get("manager")?.as_str()?.to_string(),
                operation: e.get("operation")?.as_str()?.to_string(),
                api_version: e.get("apiVersion").and_then(Value::as_str).unwrap_or_default().to_string(),
                time: e.get("time").and_then(Value::as_str).map(str::to_string),
                subresource: e.get("subresource").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string),
                fields: FieldSet::from_fields_v1(e.get("fieldsV1").unwrap_or(&Value::Null)),
            })
        })
        .collect()
}

/// Writes entries back (empty ones dropped; no key at all when none is left).
pub(crate) fn set_entries(obj: &mut Value, list: &[Entry]) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    let kept: Vec<Value> = list.iter().filter(|e| !e.fields.is_empty()).map(Entry::to_json).collect();
    if kept.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(kept));
    }
}

/// Who a non-apply write is recorded for.
pub(crate) struct Writer<'a> {
    pub manager: Option<&'a str>,
    pub subresource: Option<&'a str>,
    pub api_version: &'a str,
    pub time: String,
}

/// Records a create: the writer owns every field it set.
pub(crate) fn track_create(rt: &ResourceType, obj: &mut Value, w: &Writer<'_>) {
    let mut list = entries(obj);
    if let Some(manager) = w.manager {
        let fields = fields_of(&trackable(obj, rt.status), shape_of(rt));
        list.retain(|e| !e.same_owner(manager, "Update", w.subresource));
        list.push(Entry {
            manager: manager.to_string(),
            operation: "Update".into(),
            api_version: w.api_version.to_string(),
            time: Some(w.time.clone()),
            subresource: w.subresource.map(str::to_string),
            fields,
        });
    }
    set_entries(obj, &list);
}

/// Records an update from `old` to `new`: the writer's Update entry gains the changed fields,
/// which every other manager loses; fields that are gone are dropped from everyone.
/// A `managedFields` the request left out keeps the stored one; an empty list clears it.
pub(crate) fn track_update(rt: &ResourceType, old: &Value, new: &mut Value, w: &Writer<'_>) {
    let mut list = match new["metadata"].get("managedFields").filter(|v| !v.is_null()) {
        Some(sent) => entries_in(sent),
        None => entries(old),
    };
    let shape = shape_of(rt);
    let present = trackable(new, false);
    let changed = changed_fields(&trackable(old, false), &present, shape);
    if !changed.is_empty() {
        for e in &mut list {
            e.fields.subtract(&changed);
        }
        if let Some(manager) = w.manager {
            match list.iter_mut().find(|e| e.same_owner(manager, "Update", w.subresource)) {
                Some(e) => {
                    e.fields.union(&changed);
                    e.time = Some(w.time.clone());
                    e.api_version = w.api_version.to_string();
                }
                None => list.push(Entry {
                    manager: manager.to_string(),
                    operation: "Update".into(),
                    api_version: w.api_version.to_string(),
                    time: Some(w.time.clone()),
                    subresource: w.subresource.map(str::to_string),
                    fields: changed,
                }),
            }
        }
    }
    for e in &mut list {
        e.fields.retain_existing(&present);
    }
    set_entries(new, &list);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_v1_round_trip_and_paths() {
        let v = json!({"f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:image": {}, "f:name": {}}}}});
        let s = FieldSet::from_fields_v1(&v);
        assert_eq!(s.to_fields_v1(), v);
        let shown: Vec<String> = s.paths().iter().map(|p| display_path(p)).collect();
        assert_eq!(
            shown,
            [
                ".metadata.labels.app",
                ".spec.containers[name=\"a\"]",
                ".spec.containers[name=\"a\"].image",
                ".spec.containers[name=\"a\"].name"
            ]
        );
    }

    #[test]
    fn deployment_fields_follow_the_schema() {
        let d = json!({"metadata": {"labels": {"a": "1"}, "finalizers": ["x"]},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "1"}},
                     "template": {"spec": {"containers": [{"name": "c", "image": "i", "args": ["1"]}]}}}});
        let s = fields_of(&d, Shape::builtin_root("apps", "v1", "Deployment"));
        assert_eq!(
            s.to_fields_v1(),
            json!({"f:metadata": {"f:finalizers": {"v:\"x\"": {}}, "f:labels": {"f:a": {}}},
                "f:spec": {"f:replicas": {}, "f:selector": {},
                    "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:args": {}, "f:image": {}, "f:name": {}}}}}}})
        );
    }
}
