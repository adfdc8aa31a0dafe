//! Storage: objects, one global resourceVersion, the event log watches read, and the timeline.
//!
//! Objects are held as their canonical JSON bytes plus the few parsed fields that lists and
//! watches filter on, so a GET, a list page or a watch event is a copy of bytes, not a
//! serialization, and memory stays close to the JSON size.

use crate::registry::{Registry, ResourceType, StorageKey};
use bytes::Bytes;
use jiff::Timestamp;
use serde_json::Value;
use std::borrow::{Borrow, Cow};
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Range;
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
    /// `metadata.ownerReferences`, for the garbage collector.
    pub owners: Box<[crate::gc::OwnerRef]>,
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

/// One successful write as the store keeps it: everything shared with the write and the
/// stored object, so recording it copies no strings. [`TimelineRecord::entry`] spells it out.
#[derive(Debug, Clone)]
pub struct TimelineRecord {
    resource_version: u64,
    time: Timestamp,
    change: ChangeKind,
    ctx: Arc<WriteContext>,
    kind: Arc<str>,
    resource: Arc<str>,
    object: Arc<StoredObject>,
}

impl TimelineRecord {
    /// The resourceVersion of the write.
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    /// The write as the harness reads it.
    pub fn entry(&self) -> TimelineEntry {
        let o = &self.object;
        TimelineEntry {
            resource_version: self.resource_version,
            time: self.time,
            verb: self.ctx.verb.clone(),
            change: self.change,
            api_version: o.api_version.clone(),
            kind: self.kind.to_string(),
            resource: self.resource.to_string(),
            subresource: self.ctx.subresource.clone(),
            namespace: o.namespace.clone(),
            name: o.name.clone(),
            uid: o.uid.clone(),
            user_agent: self.ctx.user_agent.clone(),
            field_manager: self.ctx.field_manager.clone(),
            object: o.bytes.clone(),
        }
    }
}

/// The objects of one resource, ordered by (namespace, name) like etcd keys.
pub type Collection = BTreeMap<(String, String), Arc<StoredObject>>;

/// A `(namespace, name)` key, owned or borrowed, so a [`Collection`] can be searched without
/// building two Strings. Orders like the owned tuple.
pub trait ObjectKey {
    fn pair(&self) -> (&str, &str);
}

impl ObjectKey for (String, String) {
    fn pair(&self) -> (&str, &str) {
        (&self.0, &self.1)
    }
}

impl ObjectKey for (&str, &str) {
    fn pair(&self) -> (&str, &str) {
        *self
    }
}

impl<'a> Borrow<dyn ObjectKey + 'a> for (String, String) {
    fn borrow(&self) -> &(dyn ObjectKey + 'a) {
        self
    }
}

impl PartialEq for dyn ObjectKey + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.pair() == other.pair()
    }
}

impl Eq for dyn ObjectKey + '_ {}

impl PartialOrd for dyn ObjectKey + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for dyn ObjectKey + '_ {
    fn cmp(&self, other: &Self) -> Ordering {
        self.pair().cmp(&other.pair())
    }
}

/// The borrowed key of `namespace/name` in a [`Collection`].
pub fn object_key<'a>(pair: &'a (&'a str, &'a str)) -> &'a (dyn ObjectKey + 'a) {
    pair
}

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
    pub timeline: VecDeque<TimelineRecord>,
    pub timeline_capacity: usize,
    /// How many namespaces and CRDs are being deleted: while there are none, the system
    /// controllers have nothing to do and [`crate::objects`] skips them.
    deleting_system: usize,
    /// The garbage collector's owner index and work queue.
    pub gc: crate::gc::GcState,
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
            deleting_system: 0,
            gc: Default::default(),
        }
    }

    /// The current object at `key/namespace/name`.
    pub fn get(&self, key: &StorageKey, namespace: &str, name: &str) -> Option<Arc<StoredObject>> {
        self.collections.get(key)?.get(object_key(&(namespace, name))).cloned()
    }

    /// Whether a namespace or a CRD is being deleted (so the system controllers may have work).
    pub fn system_deletions(&self) -> bool {
        debug_assert_eq!(self.deleting_system, self.count_system_deletions(), "deleting namespaces and CRDs");
        self.deleting_system > 0
    }

    fn count_system_deletions(&self) -> usize {
        [StorageKey::crds_ref(), StorageKey::namespaces_ref()]
            .into_iter()
            .filter_map(|k| self.collections.get(k))
            .map(|c| c.values().filter(|o| o.deleting).count())
            .sum()
    }

    /// Stamps `value` with the next resourceVersion, stores it and records the change.
    pub fn commit(
        &mut self,
        rt: &ResourceType,
        kind: ChangeKind,
        mut value: Value,
        previous: Option<Arc<StoredObject>>,
        ctx: &Arc<WriteContext>,
        now: Timestamp,
    ) -> Arc<StoredObject> {
        let rv = self.resource_version + 1;
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        self.commit_encoded(rt, kind, Encoded::exact(rt, &value), previous, ctx, now)
    }

    /// [`State::commit`] of an object encoded beforehand (outside the lock) with
    /// [`Encoded::for_commit`]: the store only fills in the resourceVersion. (An [`Encoded`]
    /// made with [`Encoded::exact`] is stored as it is.)
    pub fn commit_encoded(
        &mut self,
        rt: &ResourceType,
        kind: ChangeKind,
        encoded: Encoded,
        previous: Option<Arc<StoredObject>>,
        ctx: &Arc<WriteContext>,
        now: Timestamp,
    ) -> Arc<StoredObject> {
        self.resource_version += 1;
        let rv = self.resource_version;
        let object = Arc::new(encoded.finish(rv));
        let key = rt.storage_key();
        let coll = self.collections.entry(key.clone()).or_default();
        let replaced = if kind == ChangeKind::Deleted {
            coll.remove(object_key(&(&object.namespace, &object.name)))
        } else {
            coll.insert((object.namespace.clone(), object.name.clone()), object.clone())
        };
        if key == StorageKey::crds_ref() || key == StorageKey::namespaces_ref() {
            let before = usize::from(replaced.as_ref().is_some_and(|o| o.deleting));
            let after = usize::from(kind != ChangeKind::Deleted && object.deleting);
            self.deleting_system = (self.deleting_system + after).saturating_sub(before);
        }
        // The index follows what the collection held, whatever the caller says was before.
        self.gc.observe(key, kind, &object, replaced.as_deref());
        drop(replaced);
        self.log.push_back(Arc::new(Change {
            resource_version: rv,
            kind,
            key: key.clone(),
            object: object.clone(),
            previous,
        }));
        while self.log.len() > self.history_capacity {
            if let Some(old) = self.log.pop_front() {
                self.compacted = old.resource_version;
            }
        }
        if self.timeline_capacity > 0 {
            self.timeline.push_back(TimelineRecord {
                resource_version: rv,
                time: now,
                change: kind,
                ctx: ctx.clone(),
                kind: rt.shared_kind().clone(),
                resource: rt.qualified_resource().clone(),
                object: object.clone(),
            });
            while self.timeline.len() > self.timeline_capacity {
                self.timeline.pop_front();
            }
        }
        object
    }

    /// Drops the collection of `key` (the instances of a deleted CRD).
    pub fn remove_collection(&mut self, key: &StorageKey) {
        if self.collections.remove(key).is_some()
            && (key == StorageKey::crds_ref() || key == StorageKey::namespaces_ref())
        {
            self.deleting_system = self.count_system_deletions();
        }
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
        // Watches ask for the last few entries: walk back from the end (no more steps than
        // entries returned) rather than binary-search the whole window.
        let mut start = self.log.len();
        while start > 0 && self.log[start - 1].resource_version > rv {
            start -= 1;
        }
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

/// The resourceVersion a value carries in `metadata.resourceVersion` (0 when none).
pub fn value_rv(value: &Value) -> u64 {
    value["metadata"]["resourceVersion"].as_str().and_then(parse_rv).unwrap_or(0)
}

/// What a write would store, without storing it (dry runs).
pub fn preview(rt: &ResourceType, value: &Value) -> StoredObject {
    Encoded::exact(rt, value).finish(value_rv(value))
}

/// An object serialized ahead of being stored, with what lists and watches filter on. When it
/// is encoded for a commit, `metadata.resourceVersion` holds a placeholder whose place in the
/// JSON is known, and [`Encoded::finish`] writes the version there: the JSON is the same as
/// serializing the value after setting `metadata.resourceVersion`, but the serialization can
/// happen before the store's lock is taken.
#[derive(Debug)]
pub struct Encoded {
    json: Vec<u8>,
    /// Where the placeholder (quotes included) is in `json`.
    rv_slot: Option<Range<usize>>,
    /// The placeholder string (to fix selectable fields that read it).
    placeholder: Option<String>,
    namespace: String,
    name: String,
    uid: String,
    api_version: String,
    schema_epoch: u64,
    labels: BTreeMap<String, String>,
    fields: Vec<(String, String)>,
    deleting: bool,
    finalizers: Vec<String>,
    owners: Box<[crate::gc::OwnerRef]>,
}

/// Position of the first `byte` in `hay`, eight bytes at a time.
fn find_byte(hay: &[u8], byte: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let pattern = u64::from_ne_bytes([byte; 8]);
    let mut words = hay.chunks_exact(8);
    for (i, word) in words.by_ref().enumerate() {
        let x = u64::from_le_bytes(word.try_into().unwrap_or_default()) ^ pattern;
        let found = x.wrapping_sub(LO) & !x & HI;
        if found != 0 {
            return Some(i * 8 + (found.trailing_zeros() / 8) as usize);
        }
    }
    let tail = hay.len() - words.remainder().len();
    words.remainder().iter().position(|&b| b == byte).map(|p| tail + p)
}

/// Where `needle` occurs in `hay`, if it occurs exactly once. The needle's second byte should
/// be rare in `hay` (it is searched for first).
fn find_once(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let &anchor = needle.get(1)?;
    let mut found = None;
    let mut from = 1;
    while let Some(p) = hay.get(from..).and_then(|h| find_byte(h, anchor)) {
        let at = from + p - 1;
        if hay[at..].starts_with(needle) {
            if found.is_some() {
                return None;
            }
            found = Some(at);
        }
        from = at + 2;
    }
    found
}

/// The first placeholder [`Encoded::for_commit`] tries, and how serde_json writes it.
const PLACEHOLDER: &str = "\u{1}kproof-rv-0\u{1}";
const PLACEHOLDER_JSON: &[u8] = b"\"\\u0001kproof-rv-0\\u0001\"";

/// Decimal digits of `n` into `buf`; returns the used tail.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

impl Encoded {
    /// `value` for [`State::commit_encoded`]: when its metadata is an object, its
    /// `metadata.resourceVersion` is set to what the commit assigns.
    pub fn for_commit(rt: &ResourceType, mut value: Value) -> Self {
        if !value.get("metadata").is_some_and(Value::is_object) {
            return Self::exact(rt, &value);
        }
        // A control character makes the serialized placeholder start with a backslash, which
        // JSON rarely has. Should the object contain the placeholder already, try another.
        for attempt in 0u32.. {
            let (placeholder, needle) = match attempt {
                0 => (PLACEHOLDER.to_string(), Cow::Borrowed(PLACEHOLDER_JSON)),
                n => {
                    let p = format!("\u{1}kproof-rv-{n}\u{1}");
                    let json = serde_json::to_vec(&p).unwrap_or_default();
                    (p, Cow::Owned(json))
                }
            };
            if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("resourceVersion".into(), Value::String(placeholder.clone()));
            }
            let mut enc = Self::exact(rt, &value);
            if let Some(at) = find_once(&enc.json, &needle) {
                enc.rv_slot = Some(at..at + needle.len());
                enc.placeholder = Some(placeholder);
                return enc;
            }
        }
        unreachable!("some placeholder does not occur in the object")
    }

    /// `value` stored as it is.
    pub fn exact(rt: &ResourceType, value: &Value) -> Self {
        let meta = &value["metadata"];
        let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let labels = meta["labels"]
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), field_string(v))).collect())
            .unwrap_or_default();
        let fields = if crate::events::is_event(rt) {
            crate::events::selectable_values(value)
        } else {
            rt.selectable_fields
                .iter()
                .map(|f| (f.clone(), get_path(value, f).map(field_string).unwrap_or_default()))
                .collect()
        };
        let finalizers = meta["finalizers"]
            .as_array()
            .map(|a| a.iter().filter_map(|f| f.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        Encoded {
            json: serde_json::to_vec(value).unwrap_or_default(),
            rv_slot: None,
            placeholder: None,
            namespace: s(&meta["namespace"]),
            name: s(&meta["name"]),
            uid: s(&meta["uid"]),
            api_version: s(&value["apiVersion"]),
            schema_epoch: rt.schema_epoch,
            labels,
            fields,
            deleting: meta.get("deletionTimestamp").is_some_and(|v| !v.is_null()),
            finalizers,
            owners: crate::gc::owner_refs(value),
        }
    }

    /// The stored object at resourceVersion `rv`. Its bytes are allocated to their exact size
    /// (`Bytes::from(Vec)` would keep the serializer's spare capacity for the object's life).
    pub fn finish(self, rv: u64) -> StoredObject {
        let Encoded { json, rv_slot, placeholder, mut fields, .. } = self;
        let bytes = match rv_slot {
            Some(slot) => {
                let mut buf = [0u8; 20];
                let digits = decimal(rv, &mut buf);
                let mut out = Vec::with_capacity(json.len() - slot.len() + digits.len() + 2);
                out.extend_from_slice(&json[..slot.start]);
                out.push(b'"');
                out.extend_from_slice(digits);
                out.push(b'"');
                out.extend_from_slice(&json[slot.end..]);
                Bytes::from(out)
            }
            None => Bytes::copy_from_slice(&json),
        };
        if let Some(p) = placeholder {
            for (_, v) in fields.iter_mut().filter(|(_, v)| *v == p) {
                *v = rv.to_string();
            }
        }
        StoredObject {
            bytes,
            namespace: self.namespace,
            name: self.name,
            uid: self.uid,
            resource_version: rv,
            api_version: self.api_version,
            schema_epoch: self.schema_epoch,
            labels: self.labels,
            fields,
            deleting: self.deleting,
            finalizers: self.finalizers,
            owners: self.owners,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use serde_json::json;

    /// What the store kept before objects were encoded ahead: the value stamped with its
    /// version, then serialized.
    fn stamped(rt: &ResourceType, mut v: Value, rv: u64) -> StoredObject {
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let obj = Encoded::exact(rt, &v).finish(rv);
        assert_eq!(obj.bytes, serde_json::to_vec(&v).unwrap());
        obj
    }

    /// Encoding before the version is known gives the bytes and fields that serializing with
    /// the version would, wherever the placeholder lands and whatever the object holds.
    #[test]
    fn encoding_ahead_of_the_commit_matches_encoding_at_it() {
        let reg = Registry::builtin();
        let cm = reg.get("", "v1", "configmaps").unwrap();
        let pods = reg.get("", "v1", "pods").unwrap();
        let mut odd = cm.as_ref().clone();
        odd.selectable_fields = vec!["metadata.resourceVersion".into(), "data.a".into()];
        let cases = [
            (
                cm.as_ref(),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "x"}}),
            ),
            (
                cm.as_ref(),
                json!({"metadata": {"resourceVersion": "7", "name": "b", "labels": {"k": "v"}}, "data": {"x": "\u{1}"}}),
            ),
            // The object already holds the first placeholders, even under the same key.
            (
                cm.as_ref(),
                json!({"metadata": {"name": "c"}, "data": {"resourceVersion": "\u{1}kproof-rv-0\u{1}", "b": "\u{1}kproof-rv-1\u{1}"}}),
            ),
            (&odd, json!({"metadata": {"name": "d"}, "data": {"a": "z"}})),
            (pods.as_ref(), json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}})),
            // No metadata object: nothing to stamp.
            (cm.as_ref(), json!({"metadata": "nope", "data": {}})),
            (cm.as_ref(), json!({"data": {}})),
        ];
        for (rt, v) in cases {
            for rv in [1, 9, 10, 12345, u64::MAX] {
                let want = stamped(rt, v.clone(), rv);
                let got = Encoded::for_commit(rt, v.clone()).finish(rv);
                assert_eq!(got.bytes, want.bytes, "{v}");
                assert_eq!(got.bytes.len(), want.bytes.len());
                assert_eq!(got.fields, want.fields, "{v}");
                assert_eq!(
                    (&got.namespace, &got.name, &got.uid, &got.api_version, &got.labels, got.resource_version),
                    (&want.namespace, &want.name, &want.uid, &want.api_version, &want.labels, want.resource_version)
                );
            }
        }
    }

    #[test]
    fn placeholder_json_is_what_serde_json_writes() {
        assert_eq!(serde_json::to_vec(PLACEHOLDER).unwrap(), PLACEHOLDER_JSON);
    }

    #[test]
    fn find_once_finds_single_occurrences_only() {
        let n = PLACEHOLDER_JSON;
        for pad in 0..20 {
            let mut hay = vec![b'\\'; pad];
            hay.extend_from_slice(n);
            hay.extend_from_slice(b"\\x\"");
            assert_eq!(find_once(&hay, n), Some(pad), "pad {pad}");
            hay.extend_from_slice(n);
            assert_eq!(find_once(&hay, n), None, "twice, pad {pad}");
        }
        assert_eq!(find_once(b"", n), None);
        assert_eq!(find_once(&n[..n.len() - 1], n), None);
        assert_eq!(find_once(n, n), Some(0));
    }

    #[test]
    fn stored_bytes_have_no_spare_capacity() {
        let reg = Registry::builtin();
        let cm = reg.get("", "v1", "configmaps").unwrap();
        let v = json!({"metadata": {"name": "a"}, "data": {"payload": "x".repeat(1000)}});
        // `Bytes` made from a Vec whose length equals its capacity can be turned back into
        // one without copying: the allocation is exactly the JSON.
        for obj in [Encoded::for_commit(&cm, v.clone()).finish(3), Encoded::exact(&cm, &v).finish(3)] {
            let vec: Vec<u8> = obj.bytes.into();
            assert_eq!(vec.capacity(), vec.len());
        }
    }
}
