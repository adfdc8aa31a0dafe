//! Garbage collection by `metadata.ownerReferences`, as kube-controller-manager's garbage
//! collector does it. (The apiserver half of cascading deletion, the finalizers a DELETE adds
//! for its propagation policy, is the generic store's.)
//!
//! Like the real collector it works from the stream of changes: each change it observes
//! ([`GarbageCollector::observe`]) queues the objects to look at, and [`GarbageCollector::run`]
//! drains the queue under the store's lock, right after the write that filled it, so a write's
//! cascading consequences are in the store when its response is sent. The owner index is the
//! store's. The collector's writes go through the generic store and appear on the timeline with
//! the user agent [`GC_USER_AGENT`].

use crate::fieldmanager::UpdateOwnership;
use crate::registry::meta::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use crate::registry::store::{self, DeleteOptions, UpdateMode, Write};
use crate::registry::{ResourceType, State};
use crate::storage::{Change, ChangeKind, ObjectId, OwnerRef, StoredObject, Verb, WriteContext};
use jiff::Timestamp;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::Arc;

/// User agent of the collector's writes on the timeline.
pub const GC_USER_AGENT: &str = "kube-controller-manager/generic-garbage-collector";
/// Field manager of the collector's patches (kube-controller-manager's, from its user agent).
const GC_FIELD_MANAGER: &str = "kube-controller-manager";

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

/// The collector's work queue.
#[derive(Debug, Default)]
pub(crate) struct GarbageCollector {
    queue: VecDeque<Work>,
}

fn has_gc_finalizer(obj: &StoredObject) -> bool {
    obj.finalizers.iter().any(|f| f == ORPHAN_FINALIZER || f == FOREGROUND_FINALIZER)
}

impl GarbageCollector {
    /// Whether anything is queued.
    pub(crate) fn has_work(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Queues what changes of owner references, deletions and deleting owners call for
    /// (the collector's graph builder).
    pub(crate) fn observe(&mut self, st: &State, changes: Vec<Arc<Change>>) {
        for change in changes {
            let object = &change.object;
            let prev_owners: &[OwnerRef] = change.previous.as_deref().map_or(&[], |p| &p.owners);
            let id = || (change.key.clone(), object.namespace.clone(), object.name.clone());
            let deleted = change.kind == ChangeKind::Deleted;
            let owners_changed = deleted || *prev_owners != *object.owners;
            if owners_changed {
                for o in prev_owners {
                    self.queue.push_back(Work::OwnerOf { namespace: object.namespace.clone(), owner: o.clone() });
                }
            }
            if deleted {
                self.queue.extend(st.store.dependents_of(&object.uid).cloned().map(Work::Dependent));
                continue;
            }
            if owners_changed && !object.owners.is_empty() {
                self.queue.push_back(Work::Dependent(id()));
            }
            if object.deleting && has_gc_finalizer(object) {
                self.queue.push_back(Work::Owner(id()));
            }
        }
    }

    /// Handles the queued work and whatever it leads to. Returns whether anything was written.
    pub(crate) fn run(&mut self, st: &mut State, now: Timestamp) -> bool {
        let mut progressed = false;
        for _ in 0..MAX_WORK_ITEMS {
            let Some(work) = self.queue.pop_front() else { break };
            progressed |= match work {
                Work::Dependent(id) => attempt_to_delete(st, &id, now),
                Work::Owner(id) => self.process_deleting_owner(st, &id, now),
                Work::OwnerOf { namespace, owner } => match resolve_owner(st, &namespace, &owner) {
                    (Owner::Present(o), Some(rt)) if o.deleting && has_gc_finalizer(&o) => {
                        let id = (rt.storage_key().clone(), o.namespace.clone(), o.name.clone());
                        self.process_deleting_owner(st, &id, now)
                    }
                    _ => false,
                },
            };
            // The collector's own writes are changes it reacts to, in order.
            let changes = st.store.take_unobserved();
            self.observe(st, changes);
        }
        progressed
    }

    /// An owner being deleted with the `orphan` finalizer loses it once its dependents no longer
    /// refer to it; one with `foregroundDeletion` once no dependent blocks it (until then its
    /// dependents are deleted).
    fn process_deleting_owner(&mut self, st: &mut State, id: &ObjectId, now: Timestamp) -> bool {
        let Some((rt, owner)) = lookup(st, id) else { return false };
        if !owner.deleting {
            return false;
        }
        let deps: Vec<ObjectId> = st.store.dependents_of(&owner.uid).cloned().collect();
        if owner.finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
            let mut progressed = false;
            for dep_id in &deps {
                if let Some((dep_rt, dep)) = lookup(st, dep_id) {
                    progressed |= remove_owner_refs(st, &dep_rt, &dep, std::slice::from_ref(&owner.uid), now);
                }
            }
            let owner = st.store.get(&id.0, &id.1, &id.2).unwrap_or(owner);
            return remove_finalizer(st, &rt, &owner, ORPHAN_FINALIZER, now) || progressed;
        }
        if !owner.finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
            return false;
        }
        let mut blocked = false;
        for dep_id in &deps {
            let Some(dep) = st.store.get(&dep_id.0, &dep_id.1, &dep_id.2) else { continue };
            blocked |= dep.owners.iter().any(|r| r.uid == owner.uid && r.block);
            if !dep.deleting {
                self.queue.push_back(Work::Dependent(dep_id.clone()));
            }
        }
        if blocked { false } else { remove_finalizer(st, &rt, &owner, FOREGROUND_FINALIZER, now) }
    }
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
    let owner = match st.store.get(rt.storage_key(), ns, &r.name) {
        Some(o) if o.uid == r.uid => Owner::Present(o),
        _ => Owner::Absent,
    };
    (owner, Some(rt))
}

fn gc_ctx(verb: Verb) -> Arc<WriteContext> {
    Arc::new(WriteContext {
        verb,
        subresource: None,
        user_agent: GC_USER_AGENT.into(),
        field_manager: Some(GC_FIELD_MANAGER.into()),
        user: None,
    })
}

/// Most work items one [`run`] handles: a guard against a cycle the collector cannot break.
const MAX_WORK_ITEMS: usize = 1_000_000;

/// The object and the served version it was written through (so a rewrite of its stored
/// JSON passes the type-meta checks), else the preferred one.
fn lookup(st: &State, id: &ObjectId) -> Option<(Arc<ResourceType>, Arc<StoredObject>)> {
    let obj = st.store.get(&id.0, &id.1, &id.2)?;
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
    let has_dependents = st.store.has_dependents(&dep.uid);
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
    let ctx = gc_ctx(Verb::Delete);
    let w = Write { ctx: &ctx, now, dry_run: false, fields: Some(&UpdateOwnership) };
    store::delete(st, &rt, &dep.namespace, &dep.name, &opts, &w).is_ok()
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
    let ctx = gc_ctx(Verb::Patch);
    let w = Write { ctx: &ctx, now, dry_run: false, fields: Some(&UpdateOwnership) };
    store::update(st, rt, &obj.namespace, &obj.name, v, UpdateMode::Main, &w).is_ok()
}
