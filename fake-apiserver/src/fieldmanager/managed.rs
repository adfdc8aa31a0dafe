//! `metadata.managedFields`: who owns which field, in the FieldsV1 encoding
//! (`f:<field>`, `k:<list-map key JSON>`, `v:<set value JSON>`, `i:<index>`, `.` for "this
//! node itself"), kept up to date by every write.
//!
//! Non-apply writes (create, update, patch) record an `Update` entry for their field manager
//! (the `fieldManager` parameter, else derived from the user agent) owning the fields they
//! changed, and take those fields from every other manager. Server-side apply (see
//! [`super::apply`]) records `Apply` entries itself.

use apimachinery::json::same;
use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::patch_meta::{ListType, Shape};
use crate::registry::ResourceType;
pub(crate) use crate::registry::smd::{item_key, shape_of};

/// Top-level fields no manager owns.
const IGNORED_TOP: &[&str] = &["apiVersion", "kind"];
/// Metadata no manager owns: the field manager's stripMetaManager (apimachinery v0.37.2
/// pkg/util/managedfields/internal/stripmeta.go). A deletionTimestamp or grace period a client
/// sends is owned, though the server clears it.
const IGNORED_META: &[&str] =
    &["name", "namespace", "uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink"];

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

/// The first list-map of `v` with two items of the same key (or set with a value twice), as
/// structured-merge-diff names it when it types an applied configuration:
/// `(".spec.resourceClaims", "[name=\"gpu\"]")`, `(".spec.tags", "[=\"a\"]")`.
pub(crate) fn duplicate_key(v: &Value, shape: Shape<'_>) -> Option<(String, String)> {
    fn walk(v: &Value, shape: Shape<'_>, at: &str) -> Option<(String, String)> {
        match v {
            Value::Object(m) if !shape.map_atomic() => {
                m.iter().find_map(|(k, x)| walk(x, shape.child(k), &format!("{at}.{k}")))
            }
            Value::Array(items) if shape.list_type() == ListType::Set => {
                let mut seen = std::collections::BTreeSet::new();
                let dup = items.iter().find(|x| !seen.insert(x.to_string()))?;
                Some((at.to_string(), format!("[={dup}]")))
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

/// The fields `new` sets that `old` does not have with the same value, into `node`, as
/// structured-merge-diff's `compare` finds them (Modified and Added): a container `old` lacks is
/// itself added (its `.` entry), as is every container below it; a container that only changes
/// inside is not ([compare.go](https://github.com/kubernetes-sigs/structured-merge-diff/blob/v6.3.0/typed/compare.go)).
fn diff(old: Option<&Value>, new: &Value, shape: Shape<'_>, node: &mut FieldSet) {
    // Containers are not compared whole: their members are, one by one, so an unchanged part
    // is compared once however deep the change below it lies.
    match (old, new) {
        // Two empty maps or lists are compared as leaves (doMap/doList's emptyPromoteToLeaf).
        (Some(Value::Object(o)), Value::Object(n)) if !shape.map_atomic() && (!o.is_empty() || !n.is_empty()) => {
            for (k, x) in n {
                let before = o.get(k);
                if before.is_some_and(|b| same(b, x)) {
                    continue;
                }
                let mut c = FieldSet::default();
                diff(before, x, shape.child(k), &mut c);
                if !c.is_empty() {
                    node.children.insert(format!("f:{k}"), c);
                }
            }
        }
        (Some(Value::Array(o)), Value::Array(n)) if !o.is_empty() || !n.is_empty() => match shape.list_type() {
            ListType::Set => mark_set_values_not_in(n, o, node),
            ListType::Map(keys) => walk_keyed_items(n, o, &keys, node, |x, before, c| match before {
                Some(b) if same(b, x) => {}
                Some(b) => diff(Some(b), x, shape.item(), c),
                None => added(x, shape.item(), c),
            }),
            ListType::Atomic if same_list(o, n) => {}
            ListType::Atomic => node.member = true,
        },
        (Some(o), n) if same(o, n) => {}
        (None, n) => added(n, shape, node),
        // A null (or a value of another kind) before: what is below is new, the node itself is
        // not (a null map dereferences to no map), unless it is a leaf.
        (Some(_), n) => below_added(n, shape, node),
    }
}

/// `v` and everything below it, all absent before: every node is a member.
fn added(v: &Value, shape: Shape<'_>, node: &mut FieldSet) {
    node.member = true;
    below_added(v, shape, node);
}

/// What lies below `v`, all absent before; `v` itself is a member only as a leaf (a scalar, an
/// empty or atomic container).
fn below_added(v: &Value, shape: Shape<'_>, node: &mut FieldSet) {
    match v {
        Value::Object(m) if !shape.map_atomic() && !m.is_empty() => {
            for (k, x) in m {
                added(x, shape.child(k), node.children.entry(format!("f:{k}")).or_default());
            }
        }
        Value::Array(items) if !items.is_empty() => match shape.list_type() {
            ListType::Atomic => node.member = true,
            ListType::Set => mark_set_values_not_in(items, &[], node),
            ListType::Map(keys) => walk_keyed_items(items, &[], &keys, node, |x, _, c| added(x, shape.item(), c)),
        },
        _ => node.member = true,
    }
}

/// Walks the items of the list map `items`, each beside the item of `others` with the same key:
/// an item without its key fields marks the list itself; `per_item` fills the item's own set,
/// kept under its key when not empty.
fn walk_keyed_items<'a>(
    items: &'a [Value],
    others: &'a [Value],
    keys: &[String],
    node: &mut FieldSet,
    mut per_item: impl FnMut(&'a Value, Option<&'a Value>, &mut FieldSet),
) {
    let other_keys: Vec<Option<String>> = others.iter().map(|y| item_key(y, keys)).collect();
    for x in items {
        let Some(k) = item_key(x, keys) else {
            node.member = true;
            continue;
        };
        let other = other_keys.iter().position(|ok| ok.as_deref() == Some(k.as_str())).map(|i| &others[i]);
        let mut c = FieldSet::default();
        per_item(x, other, &mut c);
        if !c.is_empty() {
            node.children.insert(k, c);
        }
    }
}

/// Marks, in the set list's `node`, each value of `values` that `others` does not hold.
fn mark_set_values_not_in(values: &[Value], others: &[Value], node: &mut FieldSet) {
    for x in values.iter().filter(|x| !others.contains(x)) {
        node.children.entry(format!("v:{x}")).or_default().member = true;
    }
}

fn same_list(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
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

    /// An entry of a `managedFields` list; `None` when it names no manager or operation.
    fn from_json(e: &Value) -> Option<Entry> {
        Some(Entry {
            manager: e.get("manager")?.as_str()?.to_string(),
            operation: e.get("operation")?.as_str()?.to_string(),
            api_version: e.get("apiVersion").and_then(Value::as_str).unwrap_or_default().to_string(),
            time: e.get("time").and_then(Value::as_str).map(str::to_string),
            subresource: e.get("subresource").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string),
            fields: FieldSet::from_fields_v1(e.get("fieldsV1").unwrap_or(&Value::Null)),
        })
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
    list.iter().filter_map(Entry::from_json).collect()
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

impl Writer<'_> {
    /// The writer's own `Update` entry, owning `fields`.
    fn update_entry(&self, manager: &str, fields: FieldSet) -> Entry {
        Entry {
            manager: manager.to_string(),
            operation: "Update".into(),
            api_version: self.api_version.to_string(),
            time: Some(self.time.clone()),
            subresource: self.subresource.map(str::to_string),
            fields,
        }
    }
}

/// Records a create: the writer owns every field it set.
pub(crate) fn track_create(rt: &ResourceType, obj: &mut Value, w: &Writer<'_>) {
    let mut list = entries(obj);
    if let Some(manager) = w.manager {
        // Compared against the Go type's zero value, as the create handler does
        // (`scope.Creater.New(kind)` as the live object): structured-merge-diff gives each
        // container the zero value lacks a `.` entry.
        let zero = crate::registry::go_types::zero_value(rt);
        let fields = tracked_changes(&zero, &trackable(obj, rt.status), shape_of(rt));
        list.retain(|e| !e.same_owner(manager, "Update", w.subresource));
        list.push(w.update_entry(manager, fields));
    }
    set_entries(obj, &list);
}

/// Records an update from `old` to `new`: the writer's Update entry gains the changed fields,
/// which every other manager loses; fields that are gone are dropped from everyone.
/// A `managedFields` the request left out keeps the stored one; an empty list clears it.
///
/// Only the entries the write touches are decoded and encoded again: the writer's own entry
/// when it changed something, and entries owning a field that changed or went away. The
/// others stay as stored (every stored entry was encoded here, so it reads back the same). A
/// request that sends a list of its own has every entry of that list read and written anew.
pub(crate) fn track_update(rt: &ResourceType, old: &Value, new: &mut Value, w: &Writer<'_>) {
    track_update_in(shape_of(rt), old, new, w);
}

fn track_update_in(shape: Shape<'_>, old: &Value, new: &mut Value, w: &Writer<'_>) {
    let stored = old["metadata"].get("managedFields").filter(|v| !v.is_null());
    let sent = new["metadata"].get("managedFields").filter(|v| !v.is_null());
    let rewrite_all = sent.is_some_and(|s| !stored.is_some_and(|o| same(o, s)));
    let changed = tracked_changes(old, new, shape);
    let mut gone = FieldSet::default();
    removed_fields(old, new, shape, &mut gone);
    let mut list = match (sent, stored) {
        (Some(_), _) => match new.get_mut("metadata").and_then(|m| m.get_mut("managedFields")) {
            Some(l) => std::mem::take(l),
            None => Value::Null,
        },
        (None, Some(l)) => l.clone(),
        (None, None) => Value::Null,
    };
    let mut entries: Vec<Value> = match &mut list {
        Value::Array(items) => std::mem::take(items),
        _ => Vec::new(),
    };
    let mut mine_seen = false;
    let mut kept = Vec::with_capacity(entries.len() + 1);
    for e in entries.drain(..) {
        let mine = !mine_seen && w.manager.is_some_and(|m| is_entry_of(&e, m, "Update", w.subresource));
        mine_seen |= mine;
        let fields = e.get("fieldsV1").unwrap_or(&Value::Null);
        let touched = rewrite_all
            || (mine && !changed.is_empty())
            || (!changed.is_empty() && overlaps(fields, &changed))
            || overlaps(fields, &gone);
        if !touched {
            kept.push(e);
            continue;
        }
        if mine && !rewrite_all && !overlaps(fields, &gone) && covers(fields, &changed) {
            // The writer changed only fields it already owns (a controller writing its status
            // again): its fields stay as they are, only the entry's time and version move.
            if let Some(entry) = e.as_object()
                && entry.contains_key("time")
                && entry.contains_key("apiVersion")
            {
                let mut e = e;
                e["time"] = Value::String(w.time.clone());
                e["apiVersion"] = Value::String(w.api_version.to_string());
                kept.push(e);
                continue;
            }
        }
        let Some(mut entry) = Entry::from_json(&e) else { continue };
        if !changed.is_empty() {
            entry.fields.subtract(&changed);
            if mine {
                entry.fields.union(&changed);
                entry.time = Some(w.time.clone());
                entry.api_version = w.api_version.to_string();
            }
        }
        retain_tracked(&mut entry.fields, new);
        if !entry.fields.is_empty() {
            kept.push(entry.to_json());
        }
    }
    if !mine_seen
        && !changed.is_empty()
        && let Some(manager) = w.manager
    {
        kept.push(w.update_entry(manager, changed).to_json());
    }
    let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    if kept.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(kept));
    }
}

/// Whether the `managedFields` entry `e` is the one of this manager, operation and subresource.
fn is_entry_of(e: &Value, manager: &str, operation: &str, subresource: Option<&str>) -> bool {
    let text = |k: &str| e.get(k).and_then(Value::as_str);
    text("manager") == Some(manager)
        && text("operation") == Some(operation)
        && text("subresource").filter(|s| !s.is_empty()) == subresource
}

/// Whether FieldsV1 JSON `fields` holds a path that is in `set`, lies below one of its paths, or
/// has one of them below it.
fn overlaps(fields: &Value, set: &FieldSet) -> bool {
    let Value::Object(m) = fields else { return false };
    set.children.iter().any(|(k, c)| match m.get(k) {
        None => false,
        Some(sub) => c.member || fields_member(sub) || overlaps(sub, c),
    })
}

/// Whether FieldsV1 JSON `fields` holds every path of `set` (as a member where `set` has one).
fn covers(fields: &Value, set: &FieldSet) -> bool {
    let Value::Object(m) = fields else { return set.children.is_empty() };
    set.children.iter().all(|(k, c)| m.get(k).is_some_and(|sub| (!c.member || fields_member(sub)) && covers(sub, c)))
}

/// Whether a FieldsV1 node is itself a member (a leaf `{}`, or one marked `"."`).
fn fields_member(node: &Value) -> bool {
    node.as_object().is_none_or(|m| m.is_empty() || m.contains_key("."))
}

/// The fields `new` sets that `old` does not have with the same value, both seen as
/// [`trackable`] shows them (without the fields nobody owns), without making those copies.
fn tracked_changes(old: &Value, new: &Value, shape: Shape<'_>) -> FieldSet {
    let mut s = FieldSet::default();
    let Value::Object(n) = new else { return s };
    for (k, x) in n {
        if IGNORED_TOP.contains(&k.as_str()) {
            continue;
        }
        let mut c = FieldSet::default();
        if k == "metadata" {
            let tracked = |v: Option<&Value>| -> Map<String, Value> {
                v.and_then(Value::as_object)
                    .map(|m| {
                        m.iter()
                            .filter(|(f, _)| !IGNORED_META.contains(&f.as_str()))
                            .map(|(f, y)| (f.clone(), y.clone()))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let (before, after) = (tracked(old.get(k)), tracked(Some(x)));
            if after.is_empty() {
                continue;
            }
            let before = (!before.is_empty()).then(|| Value::Object(before));
            diff(before.as_ref(), &Value::Object(after), shape.child(k), &mut c);
            // `metadata` itself is never owned (the field manager's stripMetaManager).
            c.member = false;
        } else {
            diff(old.get(k), x, shape.child(k), &mut c);
        }
        if !c.is_empty() {
            s.children.insert(format!("f:{k}"), c);
        }
    }
    s
}

/// Marks in `node` where `old` holds fields that `new` no longer has: a member that went, a
/// list-map item or set value that went, a container replaced by a value of another kind. It
/// may mark more than went (an atomic map replaced); what it marks only decides which entries
/// are looked at again.
fn removed_fields(old: &Value, new: &Value, shape: Shape<'_>, node: &mut FieldSet) {
    // As in `diff`: members are compared one by one, containers never whole.
    match (old, new) {
        (Value::Object(o), Value::Object(n)) if !shape.map_atomic() => {
            for (k, x) in o {
                let mut c = FieldSet::default();
                match n.get(k) {
                    None => c.member = true,
                    Some(y) if same(x, y) => continue,
                    Some(y) => removed_fields(x, y, shape.child(k), &mut c),
                }
                if !c.is_empty() {
                    node.children.insert(format!("f:{k}"), c);
                }
            }
        }
        (Value::Array(o), Value::Array(n)) => match shape.list_type() {
            ListType::Atomic => {}
            ListType::Set => mark_set_values_not_in(o, n, node),
            ListType::Map(keys) => walk_keyed_items(o, n, &keys, node, |x, after, c| match after {
                None => c.member = true,
                Some(y) if same(x, y) => {}
                Some(y) => removed_fields(x, y, shape.item(), c),
            }),
        },
        _ if same(old, new) => {}
        // A container replaced by something else: what was below it went.
        (Value::Object(_) | Value::Array(_), _) => node.member = true,
        // A scalar changed: its path is still there.
        _ => {}
    }
}

/// [`FieldSet::retain_existing`] against `obj` as [`trackable`] shows it: the fields nobody
/// owns do not count as existing.
fn retain_tracked(set: &mut FieldSet, obj: &Value) {
    set.children.retain(|k, c| {
        let name = k.strip_prefix("f:").unwrap_or_default();
        if IGNORED_TOP.contains(&name) {
            return false;
        }
        let Some(x) = resolve(obj, k) else { return false };
        if name == "metadata" {
            c.children.retain(|k2, c2| {
                !IGNORED_META.contains(&k2.strip_prefix("f:").unwrap_or_default())
                    && resolve(x, k2).is_some_and(|y| {
                        c2.retain_existing(y);
                        !c2.is_empty()
                    })
            });
        } else {
            c.retain_existing(x);
        }
        !c.is_empty()
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The update as it was done before only touched entries were rewritten: every entry
    /// decoded, changed, pruned and encoded again.
    fn track_update_rebuilt(shape: Shape<'_>, old: &Value, new: &mut Value, w: &Writer<'_>) {
        let mut list = match new["metadata"].get("managedFields").filter(|v| !v.is_null()) {
            Some(sent) => entries_in(sent),
            None => entries(old),
        };
        let present = trackable(new, false);
        let mut changed = FieldSet::default();
        diff(Some(&trackable(old, false)), &present, shape, &mut changed);
        changed.member = false;
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
                    None => list.push(w.update_entry(manager, changed)),
                }
            }
        }
        for e in &mut list {
            e.fields.retain_existing(&present);
        }
        set_entries(new, &list);
    }

    #[test]
    fn rewriting_only_touched_entries_gives_what_rewriting_all_does() {
        let shape = Shape::builtin_root("apps", "v1", "Deployment");
        let writer = |manager: &'static str, subresource: Option<&'static str>| Writer {
            manager: Some(manager),
            subresource,
            api_version: "apps/v1",
            time: "2026-01-01T00:01:00Z".into(),
        };
        let created = |obj: Value| {
            let mut v = obj;
            let w = Writer { time: "2026-01-01T00:00:00Z".into(), ..writer("kubectl", None) };
            let mut list = Vec::new();
            list.push(w.update_entry("kubectl", fields_of(&trackable(&v, true), shape)));
            if v.get("status").is_some() {
                let mut st = FieldSet::default();
                st.children.insert("f:status".into(), fields_of(&v, shape).children["f:status"].clone());
                let status_writer = Writer { time: w.time.clone(), ..writer("controller", Some("status")) };
                list.push(status_writer.update_entry("controller", st));
            }
            set_entries(&mut v, &list);
            v
        };
        let base = created(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "n", "resourceVersion": "5", "labels": {"a": "1", "b": "2"}, "finalizers": ["x"]},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "1"}},
                "template": {"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "c", "image": "i", "args": ["1"]}, {"name": "d", "image": "j"}]}}},
            "status": {"replicas": 2, "conditions": [{"type": "Available", "status": "True"}]}}));
        type Edit = Box<dyn Fn(&mut Value)>;
        let edits: Vec<(&str, Edit, Writer)> = vec![
            (
                "status changed by its owner",
                Box::new(|v| v["status"]["replicas"] = json!(3)),
                writer("controller", Some("status")),
            ),
            (
                "status changed by its owner, a new field among the changes",
                Box::new(|v| {
                    v["status"]["replicas"] = json!(3);
                    v["status"]["readyReplicas"] = json!(1);
                }),
                writer("controller", Some("status")),
            ),
            (
                "a condition of the status changed by its owner",
                Box::new(|v| v["status"]["conditions"][0]["status"] = json!("False")),
                writer("controller", Some("status")),
            ),
            (
                "status field removed",
                Box::new(|v| {
                    v["status"].as_object_mut().unwrap().remove("conditions");
                }),
                writer("controller", Some("status")),
            ),
            (
                "status taken by another manager",
                Box::new(|v| v["status"]["replicas"] = json!(1)),
                writer("other", Some("status")),
            ),
            (
                "a label removed",
                Box::new(|v| {
                    v["metadata"]["labels"].as_object_mut().unwrap().remove("b");
                }),
                writer("kubectl", None),
            ),
            ("a label taken over", Box::new(|v| v["metadata"]["labels"]["a"] = json!("9")), writer("labeller", None)),
            (
                "a list-map item removed",
                Box::new(|v| {
                    v["spec"]["template"]["spec"]["containers"].as_array_mut().unwrap().remove(1);
                }),
                writer("kubectl", None),
            ),
            (
                "a list-map item renamed",
                Box::new(|v| v["spec"]["template"]["spec"]["containers"][0]["name"] = json!("e")),
                writer("other", None),
            ),
            (
                "an atomic list emptied",
                Box::new(|v| v["spec"]["template"]["spec"]["containers"][0]["args"] = json!([])),
                writer("other", None),
            ),
            ("a set value removed", Box::new(|v| v["metadata"]["finalizers"] = json!([])), writer("kubectl", None)),
            ("nothing changed", Box::new(|_| {}), writer("kubectl", None)),
            (
                "managedFields sent empty",
                Box::new(|v| v["metadata"]["managedFields"] = json!([])),
                writer("kubectl", None),
            ),
            (
                "managedFields sent with an unreadable entry and an ignored field",
                Box::new(
                    |v| v["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:kind": {}, "f:metadata": {"f:name": {}, "f:labels": {"f:a": {}}}}}, {"fieldsV1": {}}]),
                ),
                writer("kubectl", None),
            ),
            (
                "managedFields left out",
                Box::new(|v| {
                    v["metadata"].as_object_mut().unwrap().remove("managedFields");
                    v["spec"]["replicas"] = json!(4);
                }),
                writer("scaler", None),
            ),
        ];
        for (what, edit, w) in edits {
            let mut fast = base.clone();
            edit(&mut fast);
            let mut rebuilt = fast.clone();
            track_update_in(shape, &base, &mut fast, &w);
            track_update_rebuilt(shape, &base, &mut rebuilt, &w);
            assert_eq!(fast["metadata"].get("managedFields"), rebuilt["metadata"].get("managedFields"), "{what}");
        }
    }

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
