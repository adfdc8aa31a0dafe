//! DELETE of one object and of a collection: preconditions, finalizers (deletionTimestamp,
//! then removal when none is left) and graceful deletion (`registry/generic/registry.Store`'s
//! `Delete` and `DeleteCollection`).

use super::{Write, has_finalizers};
use crate::error::{ApiError, ApiResult};
use crate::registry::admission;
use crate::registry::defects::ServerDefect;
use crate::registry::meta::deletion_finalizers;
use crate::registry::{ResourceType, State};
use crate::storage::{ChangeKind, StoredObject, WriteContext};
use apimachinery::clock::format_time;
use apimachinery::unstructured::set_nested_field;
use jiff::Timestamp;
use serde_json::{Value, json};
use std::sync::Arc;

/// Options of a DELETE, from its body and query.
#[derive(Debug, Default, Clone)]
pub(crate) struct DeleteOptions {
    pub grace_period_seconds: Option<i64>,
    pub precondition_uid: Option<String>,
    pub precondition_resource_version: Option<String>,
    pub propagation_policy: Option<String>,
    pub orphan_dependents: Option<bool>,
    pub dry_run: bool,
}

/// The answer to a DELETE of one object.
pub(crate) enum Deleted {
    /// Gone now; the last state (stamped with the deletion's resourceVersion).
    Now(Arc<StoredObject>),
    /// Marked for deletion; waits for finalizers or a grace period.
    Pending(Arc<StoredObject>),
}

/// Delete: preconditions, finalizers (deletionTimestamp then removal), pod graceful deletion.
pub(crate) fn delete(
    st: &mut State,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    opts: &DeleteOptions,
    w: &Write,
) -> ApiResult<Deleted> {
    let key = rt.storage_key();
    let stored_ns = if rt.namespaced { ns } else { "" };
    let old = st.store.get(key, stored_ns, name).ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
    // rest.BeforeDelete checks the preconditions first, with a Conflict built from the Kind.
    if let Some(uid) = opts.precondition_uid.as_deref().filter(|u| *u != old.uid) {
        return Err(ApiError::conflict_because(
            &rt.group,
            &rt.kind,
            name,
            format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                old.uid
            ),
        ));
    }
    let current_rv = old.resource_version.to_string();
    if let Some(rv) = opts.precondition_resource_version.as_deref().filter(|rv| *rv != current_rv) {
        return Err(ApiError::conflict_because(
            &rt.group,
            &rt.kind,
            name,
            format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({current_rv}). The object might have been modified"
            ),
        ));
    }
    // Admission of the delete: the webhooks see the object as stored; none may patch it.
    let old_value = old.shared_value();
    let req = admission::Request {
        rt,
        operation: admission::Operation::Delete,
        subresource: "",
        namespace: ns,
        name,
        old: Some(&old_value),
        w,
    };
    let mutated = admission::mutate_write(st, &req, &mut Value::Null)?;
    let validated = admission::validate(st, &req, || None)?;
    st.warnings.extend(mutated.into_iter().chain(validated));
    let mut v = old.value();
    let grace = rt.strategy.deletion_grace_period(&v, opts.grace_period_seconds);
    // The propagation policy becomes an `orphan` or `foregroundDeletion` finalizer.
    let gc_finalizers = deletion_finalizers(
        &old.finalizers,
        opts.orphan_dependents,
        opts.propagation_policy.as_deref(),
        rt.strategy.orphans_dependents_by_default(),
    );
    if let Some(f) = &gc_finalizers {
        set_nested_field(&mut v, &["metadata", "finalizers"], json!(f));
    }
    if old.deleting {
        // Deleting again can only shorten a grace period; a pod at grace 0 goes now.
        if grace == Some(0) && !has_finalizers(rt, &v) {
            return Ok(Deleted::Now(w.persist(st, rt, ChangeKind::Deleted, v)?));
        }
        // A shorter grace period moves deletionTimestamp and deletionGracePeriodSeconds
        // (kube-apiserver's BeforeDelete), so a kubelet's grace-0 delete of a pod held by a
        // finalizer lets the pod go as soon as the finalizer is removed.
        let current = v["metadata"]["deletionGracePeriodSeconds"].as_i64();
        let shorter = matches!((grace, current), (Some(g), Some(c)) if g < c);
        if let (true, Some(g)) = (shorter, grace) {
            let at = w.now.checked_add(jiff::SignedDuration::from_secs(g)).unwrap_or(w.now);
            set_nested_field(&mut v, &["metadata", "deletionTimestamp"], Value::String(format_time(at)));
            set_nested_field(&mut v, &["metadata", "deletionGracePeriodSeconds"], json!(g));
        }
        // A new policy on an object already being deleted swaps its cascading finalizer.
        if gc_finalizers.is_some() || shorter {
            return Ok(Deleted::Pending(w.persist(st, rt, ChangeKind::Modified, v)?));
        }
        return Ok(Deleted::Pending(old));
    }
    // Defect: only what the kind adds (a namespace's spec.finalizers) holds a deletion.
    let held = if st.defective(ServerDefect::FinalizersIgnoredOnDelete) {
        rt.strategy.finalizers_pending(&v)
    } else {
        has_finalizers(rt, &v)
    };
    let pending = held || grace.is_some_and(|g| g > 0);
    if !pending {
        return Ok(Deleted::Now(w.persist(st, rt, ChangeKind::Deleted, v)?));
    }
    let g = grace.unwrap_or(0);
    let at = w.now.checked_add(jiff::SignedDuration::from_secs(g)).unwrap_or(w.now);
    set_nested_field(&mut v, &["metadata", "deletionTimestamp"], Value::String(format_time(at)));
    set_nested_field(&mut v, &["metadata", "deletionGracePeriodSeconds"], json!(g));
    if rt.tracks_generation {
        let gen_ = v["metadata"]["generation"].as_i64().unwrap_or(0);
        if gen_ > 0 {
            set_nested_field(&mut v, &["metadata", "generation"], json!(gen_ + 1));
        }
    }
    rt.strategy.mark_deleting(&mut v, &w.time());
    Ok(Deleted::Pending(w.persist(st, rt, ChangeKind::Modified, v)?))
}

/// Deletes every object of `rt` (in `ns` when given) in the background, as the namespace and
/// CRD controllers do; returns whether anything was deleted and how many objects there were.
pub(crate) fn delete_all(
    st: &mut State,
    rt: &ResourceType,
    ns: Option<&str>,
    ctx: &Arc<WriteContext>,
    now: Timestamp,
) -> (bool, usize) {
    let key = rt.storage_key();
    let items: Vec<Arc<StoredObject>> = st
        .store
        .collections
        .get(key)
        .map(|c| c.values().filter(|o| ns.is_none_or(|n| o.namespace == n)).cloned().collect())
        .unwrap_or_default();
    let remaining = items.len();
    let mut progressed = false;
    let w = Write { ctx, now, dry_run: false, fields: None };
    // Both controllers delete with an explicit Background policy, so no kind's default
    // (Jobs orphan theirs) leaves dependents behind.
    let opts = DeleteOptions { propagation_policy: Some("Background".into()), ..Default::default() };
    for o in items {
        if o.deleting {
            continue;
        }
        if delete(st, rt, &o.namespace, &o.name, &opts, &w).is_ok() {
            progressed = true;
        }
    }
    (progressed, remaining)
}
