//! Storage: objects, one global resourceVersion (like etcd's revision), the event log watches
//! read, and the timeline.
//!
//! Every commit appends to the event log (a bounded history window: watches and exact lists
//! resume inside it and get 410 Expired outside it) and to the timeline. The store also keeps
//! what the system controllers need to react to writes, as an informer would give it to them:
//! the changes they have not looked at yet ([`Store::take_unobserved`]), an index of objects by
//! owner UID, and how many objects of each collection are being deleted.

mod object;
mod timeline;
mod user;

pub(crate) use object::{
    Collection, Encoded, OwnerRef, StorageKey, StoredObject, StoredResource, field_string, object_key, parse_rv,
    parse_rv_go, preview, read_rv, value_rv,
};
pub(crate) use timeline::{Change, TimelineRecord, WriteContext};
pub use timeline::{ChangeKind, Subresource, TimelineEntry, Verb};
pub use user::UserInfo;
pub(crate) use user::{ANONYMOUS, AUTHENTICATED, MASTERS, UNAUTHENTICATED};

use jiff::Timestamp;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

/// An object by where it is stored: collection, namespace, name.
pub(crate) type ObjectId = (StorageKey, String, String);

/// The objects, the event log and the timeline.
#[derive(Debug)]
pub(crate) struct Store {
    /// The last resourceVersion handed out.
    pub resource_version: u64,
    pub collections: HashMap<StorageKey, Collection>,
    /// The watch history window.
    log: VecDeque<Arc<Change>>,
    /// Changes up to and including this version are no longer in the log.
    pub compacted: u64,
    history_capacity: usize,
    pub timeline: VecDeque<TimelineRecord>,
    timeline_capacity: usize,
    /// Changes the system controllers have not looked at yet.
    unobserved: Vec<Arc<Change>>,
    /// Owner UID → the objects whose `ownerReferences` name it.
    dependents: HashMap<String, BTreeSet<ObjectId>>,
    /// How many objects of each collection carry a `deletionTimestamp`.
    deleting: HashMap<StorageKey, usize>,
    /// How many current objects keep their parsed value ([`StoredObject::shared_value`]).
    parsed_kept: usize,
    /// The resourceVersion of the last write of each kind.
    kind_versions: HashMap<Arc<str>, u64>,
    /// The resourceVersion of the last write of each collection.
    key_versions: HashMap<StorageKey, u64>,
    /// The collections written since the last [`Store::take_written`]: whose watches to wake.
    written: Vec<StorageKey>,
    /// Per collection, the resourceVersion of its latest change that left the history window.
    compacted_versions: HashMap<StorageKey, u64>,
}

/// Records `rv` as the latest write under `key` (the key is cloned only the first time).
fn set_version<K: Clone + Eq + std::hash::Hash>(versions: &mut HashMap<K, u64>, key: &K, rv: u64) {
    match versions.get_mut(key) {
        Some(v) => *v = rv,
        None => {
            versions.insert(key.clone(), rv);
        }
    }
}

/// At most this many objects keep a parsed copy: it saves a parse on every update of an object
/// that is updated again and again (a status a controller rewrites on each pass), and the bound
/// keeps memory near the JSON size however many objects there are.
const PARSED_LIMIT: usize = 4096;

impl Store {
    /// An empty store keeping `history_capacity` changes for watches and `timeline_capacity`
    /// writes on the timeline (0 turns the timeline off).
    pub fn new(history_capacity: usize, timeline_capacity: usize) -> Self {
        Self {
            resource_version: 0,
            collections: HashMap::new(),
            log: VecDeque::new(),
            compacted: 0,
            history_capacity: history_capacity.max(1),
            timeline: VecDeque::new(),
            timeline_capacity,
            unobserved: Vec::new(),
            dependents: HashMap::new(),
            deleting: HashMap::new(),
            parsed_kept: 0,
            kind_versions: HashMap::new(),
            key_versions: HashMap::new(),
            written: Vec::new(),
            compacted_versions: HashMap::new(),
        }
    }

    /// The current object at `key/namespace/name`.
    pub fn get(&self, key: &StorageKey, namespace: &str, name: &str) -> Option<Arc<StoredObject>> {
        self.collections.get(key)?.get(object_key(&(namespace, name))).cloned()
    }

    /// The resourceVersion of the last write of an object of `kind` (0 if none).
    pub fn kind_version(&self, kind: &str) -> u64 {
        self.kind_versions.get(kind).copied().unwrap_or(0)
    }

    /// Every object stored under `key`, by `(namespace, name)`.
    pub fn collection(&self, key: &StorageKey) -> Option<&Collection> {
        self.collections.get(key)
    }

    /// How many objects stored under `key` are being deleted.
    pub fn deleting_in(&self, key: &StorageKey) -> usize {
        self.deleting.get(key).copied().unwrap_or(0)
    }

    /// The objects whose owner references name `uid`.
    pub fn dependents_of(&self, uid: &str) -> impl Iterator<Item = &ObjectId> {
        self.dependents.get(uid).into_iter().flatten()
    }

    /// Whether any object's owner references name `uid`.
    pub fn has_dependents(&self, uid: &str) -> bool {
        self.dependents.get(uid).is_some_and(|d| !d.is_empty())
    }

    /// The collections written since the last call.
    pub fn take_written(&mut self) -> Vec<StorageKey> {
        std::mem::take(&mut self.written)
    }

    /// The resourceVersion of the last write to collection `key` (0: none yet).
    pub fn key_version(&self, key: &StorageKey) -> u64 {
        self.key_versions.get(key).copied().unwrap_or(0)
    }

    /// The resourceVersion of the latest change to collection `key` that is no longer in the
    /// history window (0: none): a watch of `key` that looked last at or after it missed nothing.
    pub fn compacted_version(&self, key: &StorageKey) -> u64 {
        self.compacted_versions.get(key).copied().unwrap_or(0)
    }

    /// The changes committed since the last call, oldest first.
    pub fn take_unobserved(&mut self) -> Vec<Arc<Change>> {
        std::mem::take(&mut self.unobserved)
    }

    /// Stamps `value` with the next resourceVersion, stores it and records the change.
    pub fn commit(
        &mut self,
        rt: &dyn StoredResource,
        kind: ChangeKind,
        mut value: Value,
        ctx: &Arc<WriteContext>,
        now: Timestamp,
    ) -> Arc<StoredObject> {
        let rv = self.resource_version + 1;
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let object = self.commit_encoded(rt, kind, Encoded::exact(rt, &value), ctx, now);
        // An object that was updated is the one likely to be updated next; its bytes are the
        // serialization of `value`, so `value` is what parsing them would give.
        if kind == ChangeKind::Modified && self.parsed_kept < PARSED_LIMIT {
            *object.parsed.lock() = Some(Arc::new(value));
            self.parsed_kept += 1;
        }
        object
    }

    /// [`Store::commit`] of an object encoded beforehand (outside the lock) with
    /// [`Encoded::for_commit`]: the store only fills in the resourceVersion. (An [`Encoded`]
    /// made with [`Encoded::exact`] is stored as it is.)
    pub fn commit_encoded(
        &mut self,
        rt: &dyn StoredResource,
        kind: ChangeKind,
        encoded: Encoded,
        ctx: &Arc<WriteContext>,
        now: Timestamp,
    ) -> Arc<StoredObject> {
        self.resource_version += 1;
        let rv = self.resource_version;
        let object = Arc::new(encoded.finish(rv));
        let key = rt.storage_key();
        set_version(&mut self.kind_versions, rt.shared_kind(), rv);
        set_version(&mut self.key_versions, key, rv);
        if !self.written.contains(key) {
            self.written.push(key.clone());
        }
        let coll = self.collections.entry(key.clone()).or_default();
        let previous = if kind == ChangeKind::Deleted {
            coll.remove(object_key(&(&object.namespace, &object.name)))
        } else {
            coll.insert((object.namespace.clone(), object.name.clone()), object.clone())
        };
        if previous.as_ref().is_some_and(|p| p.parsed.lock().take().is_some()) {
            self.parsed_kept -= 1;
        }
        let was_deleting = usize::from(previous.as_ref().is_some_and(|o| o.deleting));
        let is_deleting = usize::from(kind != ChangeKind::Deleted && object.deleting);
        if was_deleting != is_deleting {
            let count = self.deleting.entry(key.clone()).or_default();
            *count = (*count + is_deleting).saturating_sub(was_deleting);
        }
        self.index_owners(key, kind, &object, previous.as_deref());
        let change =
            Arc::new(Change { resource_version: rv, kind, key: key.clone(), object: object.clone(), previous });
        self.unobserved.push(change.clone());
        self.log.push_back(change);
        while self.log.len() > self.history_capacity {
            if let Some(old) = self.log.pop_front() {
                self.compacted = old.resource_version;
                self.compacted_versions.insert(old.key.clone(), old.resource_version);
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

    /// Keeps the owner index in step with a write.
    fn index_owners(
        &mut self,
        key: &StorageKey,
        kind: ChangeKind,
        object: &StoredObject,
        previous: Option<&StoredObject>,
    ) {
        let before: &[OwnerRef] = previous.map_or(&[], |p| &p.owners);
        let after: &[OwnerRef] = if kind == ChangeKind::Deleted { &[] } else { &object.owners };
        if before == after {
            return;
        }
        let id = || (key.clone(), object.namespace.clone(), object.name.clone());
        for o in before {
            if let Some(set) = self.dependents.get_mut(&o.uid) {
                set.remove(&id());
                if set.is_empty() {
                    self.dependents.remove(&o.uid);
                }
            }
        }
        for o in after {
            self.dependents.entry(o.uid.clone()).or_default().insert(id());
        }
    }

    /// Drops the collection of `key` (the instances of a deleted CRD).
    pub fn remove_collection(&mut self, key: &StorageKey) {
        if let Some(coll) = self.collections.remove(key) {
            let kept = coll.values().filter(|o| o.parsed.lock().take().is_some()).count();
            self.parsed_kept -= kept;
        }
        self.deleting.remove(key);
    }

    /// Drops the whole watch history: every watch or exact list from an older version gets 410.
    pub fn compact(&mut self) {
        for old in self.log.drain(..) {
            self.compacted_versions.insert(old.key.clone(), old.resource_version);
        }
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
