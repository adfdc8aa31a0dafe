//! Storage: objects, one global resourceVersion, the event log watches read, and the timeline.
//!
//! Objects are held as their canonical JSON bytes plus the few parsed fields that lists and
//! watches filter on, so a GET, a list page or a watch event is a copy of bytes, not a
//! serialization, and memory stays close to the JSON size.

use crate::registry::{Registry, ResourceType, StorageKey};
use bytes::Bytes;
use jiff::Timestamp;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

/// One stored version of an object.
#[derive(Debug)]
pub struct StoredObject {
    /// The object as JSON, with its resourceVersion.
    pub bytes: Bytes,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: u64,
    /// `apiVersion` it was written with (CRDs with several versions share storage).
    pub api_version: String,
    /// Schema epoch of the version it was written through (see [`ResourceType::schema_epoch`]).
    pub schema_epoch: u64,
    pub labels: BTreeMap<String, String>,
    /// Values of the kind's selectable fields, computed at write time.
    pub fields: Vec<(String, String)>,
    pub deleting: bool,
    pub finalizers: Vec<String>,
}

impl StoredObject {
    /// The object as a JSON value.
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or(Value::Null)
    }

    /// The value of a selectable field (`metadata.name`, `spec.nodeName`, ...).
    pub fn field(&self, path: &str) -> Option<String> {
        match path {
            "metadata.name" => Some(self.name.clone()),
            "metadata.namespace" => Some(self.namespace.clone()),
            _ => self.fields.iter().find(|(k, _)| k == path).map(|(_, v)| v.clone()),
        }
    }
}

/// What a change did to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ChangeKind {
    #[serde(rename = "ADDED")]
    Added,
    #[serde(rename = "MODIFIED")]
    Modified,
    #[serde(rename = "DELETED")]
    Deleted,
}

impl ChangeKind {
    /// The watch event type.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "ADDED",
            ChangeKind::Modified => "MODIFIED",
            ChangeKind::Deleted => "DELETED",
        }
    }
}

/// One entry of the event log: the state after a write and the state before it.
#[derive(Debug)]
pub struct Change {
    pub resource_version: u64,
    pub kind: ChangeKind,
    pub key: StorageKey,
    /// The object after the write; for deletions, its last state stamped with the deletion's version.
    pub object: Arc<StoredObject>,
    pub previous: Option<Arc<StoredObject>>,
}

/// Who made a write, for the timeline.
#[derive(Debug, Clone, Default)]
pub struct WriteContext {
    /// `create`, `update`, `patch`, `delete`, `deletecollection`, or an internal actor's verb.
    pub verb: String,
    pub subresource: Option<String>,
    pub user_agent: String,
    pub field_manager: Option<String>,
}

/// One successful write, as the harness reads it.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineEntry {
    pub resource_version: u64,
    #[serde(serialize_with = "serialize_time")]
    pub time: Timestamp,
    pub verb: String,
    pub change: ChangeKind,
    pub api_version: String,
    pub kind: String,
    pub resource: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subresource: Option<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub user_agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field_manager: Option<String>,
    #[serde(skip)]
    pub object: Bytes,
}

fn serialize_time<S: serde::Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&crate::clock::format_time(*t))
}

impl TimelineEntry {
    /// The object as written.
    pub fn object(&self) -> Value {
        serde_json::from_slice(&self.object).unwrap_or(Value::Null)
    }
}

/// The objects of one resource, ordered by (namespace, name) like etcd keys.
pub type Collection = BTreeMap<(String, String), Arc<StoredObject>>;

/// Everything behind the server's lock.
#[derive(Debug)]
pub struct State {
    /// The last resourceVersion handed out.
    pub resource_version: u64,
    pub registry: Registry,
    pub collections: HashMap<StorageKey, Collection>,
    /// The watch history window.
    pub log: VecDeque<Arc<Change>>,
    /// Changes up to and including this version are no longer in the log.
    pub compacted: u64,
    pub history_capacity: usize,
    pub timeline: VecDeque<TimelineEntry>,
    pub timeline_capacity: usize,
}

/// Parses a resourceVersion string.
pub fn parse_rv(s: &str) -> Option<u64> {
    s.parse().ok()
}

impl State {
    /// An empty store serving `registry`.
    pub fn new(registry: Registry, history_capacity: usize, timeline_capacity: usize) -> Self {
        Self {
            resource_version: 0,
            registry,
            collections: HashMap::new(),
            log: VecDeque::new(),
            compacted: 0,
            history_capacity: history_capacity.max(1),
            timeline: VecDeque::new(),
            timeline_capacity,
        }
    }

    /// The current object at `key/namespace/name`.
    pub fn get(&self, key: &StorageKey, namespace: &str, name: &str) -> Option<Arc<StoredObject>> {
        self.collections.get(key)?.get(&(namespace.to_string(), name.to_string())).cloned()
    }

    /// Stamps `value` with the next resourceVersion, stores it and records the change.
    pub fn commit(
        &mut self,
        rt: &ResourceType,
        kind: ChangeKind,
        mut value: Value,
        previous: Option<Arc<StoredObject>>,
        ctx: &WriteContext,
        now: Timestamp,
    ) -> Arc<StoredObject> {
        self.resource_version += 1;
        let rv = self.resource_version;
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let object = Arc::new(stored_object(rt, &value, rv));
        let key = rt.storage_key();
        let coll = self.collections.entry(key.clone()).or_default();
        let id = (object.namespace.clone(), object.name.clone());
        if kind == ChangeKind::Deleted {
            coll.remove(&id);
        } else {
            coll.insert(id, object.clone());
        }
        self.log.push_back(Arc::new(Change { resource_version: rv, kind, key, object: object.clone(), previous }));
        while self.log.len() > self.history_capacity {
            if let Some(old) = self.log.pop_front() {
                self.compacted = old.resource_version;
            }
        }
        if self.timeline_capacity > 0 {
            self.timeline.push_back(TimelineEntry {
                resource_version: rv,
                time: now,
                verb: ctx.verb.clone(),
                change: kind,
                api_version: object.api_version.clone(),
                kind: rt.kind.clone(),
                resource: crate::error::qualified(&rt.group, &rt.plural),
                subresource: ctx.subresource.clone(),
                namespace: object.namespace.clone(),
                name: object.name.clone(),
                uid: object.uid.clone(),
                user_agent: ctx.user_agent.clone(),
                field_manager: ctx.field_manager.clone(),
                object: object.bytes.clone(),
            });
            while self.timeline.len() > self.timeline_capacity {
                self.timeline.pop_front();
            }
        }
        object
    }

    /// Drops the whole watch history: every watch or exact list from an older version gets 410.
    pub fn compact(&mut self) {
        self.log.clear();
        self.compacted = self.resource_version;
    }

    /// The objects of `key` as they were at `rv`, rebuilt from the event log.
    /// `None` when `rv` is older than the history window.
    pub fn snapshot_at(&self, key: &StorageKey, rv: u64) -> Option<Collection> {
        if rv < self.compacted {
            return None;
        }
        let mut coll = self.collections.get(key).cloned().unwrap_or_default();
        // Undo changes newer than rv, newest first, so each key ends at its state as of rv.
        let start = self.log.partition_point(|c| c.resource_version <= rv);
        for change in self.log.range(start..).rev() {
            if &change.key != key {
                continue;
            }
            let id = (change.object.namespace.clone(), change.object.name.clone());
            match &change.previous {
                Some(prev) => {
                    coll.insert(id, prev.clone());
                }
                None => {
                    coll.remove(&id);
                }
            }
        }
        Some(coll)
    }

    /// Log entries newer than `rv`.
    pub fn changes_after(&self, rv: u64) -> impl Iterator<Item = &Arc<Change>> {
        let start = self.log.partition_point(|c| c.resource_version <= rv);
        self.log.range(start..)
    }
}

/// Reads a dotted path (`spec.nodeName`) from a JSON value.
pub fn get_path<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').filter(|s| !s.is_empty()).try_fold(value, |v, seg| v.get(seg))
}

/// Writes a dotted path, creating objects on the way. Fails when a non-object is in the way.
pub fn set_path(value: &mut Value, path: &str, new: Value) -> bool {
    let segs: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
    let Some((last, parents)) = segs.split_last() else { return false };
    let mut cur = value;
    for seg in parents {
        let Some(obj) = cur.as_object_mut() else { return false };
        cur = obj.entry(seg.to_string()).or_insert_with(|| Value::Object(Default::default()));
    }
    match cur.as_object_mut() {
        Some(obj) => {
            obj.insert(last.to_string(), new);
            true
        }
        None => false,
    }
}

/// A field value as a field selector compares it.
pub fn field_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// What a write would store, without storing it (dry runs).
pub fn preview(rt: &ResourceType, value: &Value) -> StoredObject {
    let rv = value["metadata"]["resourceVersion"].as_str().and_then(parse_rv).unwrap_or(0);
    stored_object(rt, value, rv)
}

fn stored_object(rt: &ResourceType, value: &Value, rv: u64) -> StoredObject {
    let meta = &value["metadata"];
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let labels = meta["labels"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), field_string(v))).collect())
        .unwrap_or_default();
    let fields = rt
        .selectable_fields
        .iter()
        .map(|f| (f.clone(), get_path(value, f).map(field_string).unwrap_or_default()))
        .collect();
    let finalizers = meta["finalizers"]
        .as_array()
        .map(|a| a.iter().filter_map(|f| f.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    StoredObject {
        bytes: Bytes::from(serde_json::to_vec(value).unwrap_or_default()),
        namespace: s(&meta["namespace"]),
        name: s(&meta["name"]),
        uid: s(&meta["uid"]),
        resource_version: rv,
        api_version: s(&value["apiVersion"]),
        schema_epoch: rt.schema_epoch,
        labels,
        fields,
        deleting: meta.get("deletionTimestamp").is_some_and(|v| !v.is_null()),
        finalizers,
    }
}
