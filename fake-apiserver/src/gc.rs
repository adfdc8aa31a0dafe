//! Garbage collection by `metadata.ownerReferences`, as kube-controller-manager's garbage
//! collector does it, and the apiserver half of cascading deletion (which finalizers a DELETE
//! adds for its propagation policy).
//!
//! The store tells the collector about every write ([`GcState::observe`]): it keeps an index
//! from owner UIDs to dependents and a queue of objects to look at. [`run`] drains the queue
//! under the store's lock, right after the write that filled it, so a write's cascading
//! consequences are in the store when its response is sent. The collector's writes go through
//! the normal write pipeline and appear on the timeline with the user agent
//! [`GC_USER_AGENT`].

use crate::objects::{self, DeleteOptions, UpdateMode, Write};
use crate::registry::{ResourceType, StorageKey};
use crate::store::{ChangeKind, State, StoredObject, WriteContext};
use jiff::Timestamp;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

/// Finalizer that makes the collector strip the owner's references from its dependents
/// before the owner goes (propagation policy `Orphan`).
pub const ORPHAN_FINALIZER: &str = "orphan";
/// Finalizer that keeps an owner until its blocking dependents are gone (policy `Foreground`).
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
/// User agent of the collector's writes on the timeline.
pub const GC_USER_AGENT: &str = "kube-controller-manager/generic-garbage-collector";
/// Field manager of the collector's patches (kube-controller-manager's, from its user agent).
const GC_FIELD_MANAGER: &str = "kube-controller-manager";

/// One entry of `metadata.ownerReferences`, as the collector reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    /// `blockOwnerDeletion: true`: a foreground deletion of the owner waits for this dependent.
    pub block: bool,
}

/// The owner references of an object value (entries that are not objects are skipped).
pub fn owner_refs(value: &Value) -> Box<[OwnerRef]> {
    let Some(list) = value["metadata"]["ownerReferences"].as_array() else { return Box::default() };
    let s = |r: &Value, f: &str| r[f].as_str().unwrap_or_default().to_string();
    list.iter()
        .filter(|r| r.is_object())
        .map(|r| OwnerRef {
            api_version: s(r, "apiVersion"),
            kind: s(r, "kind"),
            name: s(r, "name"),
            uid: s(r, "uid"),
            block: r["blockOwnerDeletion"].as_bool() == Some(true),
        })
        .collect()
}

/// An object by where it is stored.
type ObjectId = (StorageKey, String, String);

/// What the collector has to look at.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Work {
    /// A dependent whose owners may be gone or deleting (`attemptToDeleteItem`).
    Dependent(ObjectId),
    /// An object being deleted with the `orphan` or `foregroundDeletion` finalizer.
    Owner(ObjectId),
    /// An owner reference of a dependent in `namespace` that changed or went away: if the owner
    /// waits for its dependents (foreground), it may be free to go now.
    OwnerOf { namespace: String, owner: OwnerRef },
}

/// The collector's index and work queue, kept in the store's [`State`].
#[derive(Debug, Default)]
pub struct GcState {
    /// Owner UID → its dependents.
    dependents: HashMap<String, BTreeSet<ObjectId>>,
    queue: VecDeque<Work>,
}

fn has_gc_finalizer(obj: &StoredObject) -> bool {
    obj.finalizers.iter().any(|f| f == ORPHAN_FINALIZER || f == FOREGROUND_FINALIZER)
}

impl GcState {
    /// Whether [`run`] has something to do.
    pub fn has_work(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Records a committed write: keeps the owner index current and queues what the collector
    /// must look at. Cheap for objects without owners that are not deleted.
    pub fn observe(
        &mut self,
        key: &StorageKey,
        kind: ChangeKind,
        object: &StoredObject,
        previous: Option<&StoredObject>,
    ) {
        let prev_owners: &[OwnerRef] = previous.map_or(&[], |p| &p.owners);
        let id = || (key.clone(), object.namespace.clone(), object.name.clone());
        let owners_changed = kind == ChangeKind::Deleted || *prev_owners != *object.owners;
        if owners_changed {
            for o in prev_owners {
                if let Some(set) = self.dependents.get_mut(&o.uid) {
                    set.remove(&id());
                    if set.is_empty() {
                        self.dependents.remove(&o.uid);
                    }
                }
                self.queue.push_back(Work::OwnerOf { namespace: object.namespace.clone(), owner: o.clone() });
            }
        }
        if kind == ChangeKind::Deleted {
            if let Some(deps) = self.dependents.get(&object.uid) {
                self.queue.extend(deps.iter().cloned().map(Work::Dependent));
            }
            return;
        }
        if owners_changed {
            for o in object.owners.iter() {
                self.dependents.entry(o.uid.clone()).or_default().insert(id());
            }
            if !object.owners.is_empty() {
                self.queue.push_back(Work::Dependent(id()));
            }
        }
        if object.deleting && has_gc_finalizer(object) {
            self.queue.push_back(Work::Owner(id()));
        }
    }
}

/// The policy the apiserver uses for a DELETE that names none (`DefaultGarbageCollectionPolicy`
/// of the kind's strategy): `batch/v1` Jobs orphan their pods for backwards compatibility;
/// everything else served here (apps/v1 workloads included) deletes dependents in the background.
fn orphans_by_default(rt: &ResourceType) -> bool {
    rt.group == "batch" && rt.version == "v1" && rt.plural == "jobs"
}

/// The finalizers an object should have after a DELETE with `opts`, when they differ from the
/// ones it has (`deletionFinalizersForGarbageCollection`): the explicit policy wins, then an
/// `orphan` or `foregroundDeletion` finalizer already there, then the kind's default.
pub fn deletion_finalizers(rt: &ResourceType, finalizers: &[String], opts: &DeleteOptions) -> Option<Vec<String>> {
    let existing = finalizers.iter().find_map(|f| match f.as_str() {
        ORPHAN_FINALIZER => Some(true),
        FOREGROUND_FINALIZER => Some(false),
        _ => None,
    });
    let orphan = match (opts.orphan_dependents, opts.propagation_policy.as_deref()) {
        (Some(o), _) => o,
        (None, Some(p)) => p == "Orphan",
        (None, None) => existing.unwrap_or_else(|| orphans_by_default(rt)),
    };
    let foreground = match (opts.orphan_dependents, opts.propagation_policy.as_deref()) {
        (Some(_), _) => false,
        (None, Some(p)) => p == "Foreground",
        (None, None) => existing == Some(false),
    };
    let mut out: Vec<String> =
        finalizers.iter().filter(|f| *f != ORPHAN_FINALIZER && *f != FOREGROUND_FINALIZER).cloned().collect();
    if orphan {
        out.push(ORPHAN_FINALIZER.into());
    }
    if foreground {
        out.push(FOREGROUND_FINALIZER.into());
    }
    let same = out.len() == finalizers.len() && out.iter().all(|f| finalizers.contains(f));
    (!same).then_some(out)
}

/// What an owner reference points at.
enum Owner {
    /// The owner exists with this UID.
    Present(Arc<StoredObject>),
    /// Nothing with that UID exists where the reference says: the reference dangles.
    Absent,
    /// The reference cannot be resolved (unknown kind, or a namespaced owner of a
    /// cluster-scoped dependent): the collector leaves the dependent alone, as it retries
    /// such items forever upstream.
    Unresolvable,
}

/// Looks up the owner a dependent in `namespace` (empty for cluster-scoped) refers to. A
/// namespaced owner is looked up in the dependent's namespace: references across namespaces
/// are treated as absent, as upstream does.
fn resolve_owner(st: &State, namespace: &str, r: &OwnerRef) -> (Owner, Option<Arc<ResourceType>>) {
    let (group, version) = r.api_version.rsplit_once('/').unwrap_or(("", r.api_version.as_str()));
    let Some(rt) = st.registry.by_kind(group, version, &r.kind) else { return (Owner::Unresolvable, None) };
    if rt.namespaced && namespace.is_empty() {
        return (Owner::Unresolvable, Some(rt));
    }
    let ns = if rt.namespaced { namespace } else { "" };
    let owner = match st.get(rt.storage_key(), ns, &r.name) {
        Some(o) if o.uid == r.uid => Owner::Present(o),
        _ => Owner::Absent,
    };
    (owner, Some(rt))
}

fn gc_ctx(verb: &str) -> Arc<WriteContext> {
    Arc::new(WriteContext {
        verb: verb.into(),
        subresource: None,
        user_agent: GC_USER_AGENT.into(),
        field_manager: Some(GC_FIELD_MANAGER.into()),
    })
}

/// Most work items one [`run`] handles: a guard against a cycle the collector cannot break.
const MAX_WORK_ITEMS: usize = 1_000_000;

/// Handles the queued work and whatever it leads to. Returns whether anything was written.
pub fn run(st: &mut State, now: Timestamp) -> bool {
    let mut progressed = false;
    for _ in 0..MAX_WORK_ITEMS {
        let Some(work) = st.gc.queue.pop_front() else { break };
        progressed |= match work {
            Work::Dependent(id) => attempt_to_delete(st, &id, now),
            Work::Owner(id) => process_deleting_owner(st, &id, now),
            Work::OwnerOf { namespace, owner } => match resolve_owner(st, &namespace, &owner) {
                (Owner::Present(o), Some(rt)) if o.deleting && has_gc_finalizer(&o) => {
                    let id = (rt.storage_key().clone(), o.namespace.clone(), o.name.clone());
                    process_deleting_owner(st, &id, now)
                }
                _ => false,
            },
        };
    }
    progressed
}

/// The object and the served version it was written through (so a rewrite of its stored
/// JSON passes the type-meta checks), else the preferred one.
fn lookup(st: &State, id: &ObjectId) -> Option<(Arc<ResourceType>, Arc<StoredObject>)> {
    let obj = st.get(&id.0, &id.1, &id.2)?;
    let versions = st.registry.versions_of(&id.0);
    let rt = versions.iter().find(|rt| rt.api_version() == obj.api_version).or(versions.first())?.clone();
    Some((rt, obj))
}

/// `attemptToDeleteItem`: sorts the dependent's owners into solid, dangling and waiting (being
/// deleted in the foreground); strips dangling and waiting references when a solid owner
/// remains, else deletes the dependent.
fn attempt_to_delete(st: &mut State, id: &ObjectId, now: Timestamp) -> bool {
    let Some((rt, dep)) = lookup(st, id) else { return false };
    if dep.deleting || dep.owners.is_empty() {
        return false;
    }
    let (mut solid, mut gone) = (0usize, Vec::new());
    let mut waiting = false;
    for r in dep.owners.iter() {
        match resolve_owner(st, &dep.namespace, r).0 {
            Owner::Unresolvable => return false,
            Owner::Absent => gone.push(r.uid.clone()),
            Owner::Present(o) if o.deleting && o.finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) => {
                waiting = true;
                gone.push(r.uid.clone());
            }
            Owner::Present(_) => solid += 1,
        }
    }
    if solid > 0 {
        return !gone.is_empty() && remove_owner_refs(st, &rt, &dep, &gone, now);
    }
    let has_dependents = st.gc.dependents.get(&dep.uid).is_some_and(|d| !d.is_empty());
    let policy = if waiting && has_dependents {
        "Foreground"
    } else if dep.finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
        "Orphan"
    } else if dep.finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
        "Foreground"
    } else {
        "Background"
    };
    let opts = DeleteOptions {
        propagation_policy: Some(policy.into()),
        precondition_uid: Some(dep.uid.clone()),
        ..Default::default()
    };
    let ctx = gc_ctx("delete");
    let w = Write { ctx: &ctx, now, dry_run: false };
    objects::delete(st, &rt, &dep.namespace, &dep.name, &opts, &w).is_ok()
}

/// An owner being deleted with the `orphan` finalizer loses it once its dependents no longer
/// refer to it; one with `foregroundDeletion` once no dependent blocks it (until then its
/// dependents are deleted).
fn process_deleting_owner(st: &mut State, id: &ObjectId, now: Timestamp) -> bool {
    let Some((rt, owner)) = lookup(st, id) else { return false };
    if !owner.deleting {
        return false;
    }
    let deps: Vec<ObjectId> = st.gc.dependents.get(&owner.uid).map(|d| d.iter().cloned().collect()).unwrap_or_default();
    if owner.finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
        let mut progressed = false;
        for dep_id in &deps {
            if let Some((dep_rt, dep)) = lookup(st, dep_id) {
                progressed |= remove_owner_refs(st, &dep_rt, &dep, std::slice::from_ref(&owner.uid), now);
            }
        }
        let owner = st.get(&id.0, &id.1, &id.2).unwrap_or(owner);
        return remove_finalizer(st, &rt, &owner, ORPHAN_FINALIZER, now) || progressed;
    }
    if !owner.finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
        return false;
    }
    let mut blocked = false;
    for dep_id in &deps {
        let Some(dep) = st.get(&dep_id.0, &dep_id.1, &dep_id.2) else { continue };
        blocked |= dep.owners.iter().any(|r| r.uid == owner.uid && r.block);
        if !dep.deleting {
            st.gc.queue.push_back(Work::Dependent(dep_id.clone()));
        }
    }
    if blocked { false } else { remove_finalizer(st, &rt, &owner, FOREGROUND_FINALIZER, now) }
}

/// Patches the dependent's `ownerReferences` to drop the ones with these UIDs.
fn remove_owner_refs(st: &mut State, rt: &ResourceType, dep: &StoredObject, uids: &[String], now: Timestamp) -> bool {
    let mut v = dep.value();
    let Some(refs) = v["metadata"]["ownerReferences"].as_array() else { return false };
    let kept: Vec<Value> = refs.iter().filter(|r| !uids.iter().any(|u| r["uid"] == json!(u))).cloned().collect();
    if kept.len() == refs.len() {
        return false;
    }
    if let Some(meta) = v["metadata"].as_object_mut() {
        if kept.is_empty() {
            meta.remove("ownerReferences");
        } else {
            meta.insert("ownerReferences".into(), Value::Array(kept));
        }
    }
    patch(st, rt, dep, v, now)
}

fn remove_finalizer(st: &mut State, rt: &ResourceType, obj: &StoredObject, finalizer: &str, now: Timestamp) -> bool {
    let mut v = obj.value();
    let Some(list) = v["metadata"]["finalizers"].as_array() else { return false };
    let kept: Vec<Value> = list.iter().filter(|f| *f != finalizer).cloned().collect();
    if kept.len() == list.len() {
        return false;
    }
    if let Some(meta) = v["metadata"].as_object_mut() {
        if kept.is_empty() {
            meta.remove("finalizers");
        } else {
            meta.insert("finalizers".into(), Value::Array(kept));
        }
    }
    patch(st, rt, obj, v, now)
}

/// Writes a changed copy of `obj` as the collector's patch (only metadata differs, so the
/// update pipeline's checks pass; a deleting object without finalizers left goes away).
fn patch(st: &mut State, rt: &ResourceType, obj: &StoredObject, v: Value, now: Timestamp) -> bool {
    let ctx = gc_ctx("patch");
    let w = Write { ctx: &ctx, now, dry_run: false };
    objects::update(st, rt, &obj.namespace, &obj.name, v, UpdateMode::Main, &w).is_ok()
}
