//! The namespace lifecycle that kube-controller-manager's namespace controller drives: a
//! namespace being deleted (phase `Terminating`, the `kubernetes` spec finalizer) has its
//! content deleted, respecting the content's finalizers; its status conditions say what is
//! left; once nothing is, the `kubernetes` finalizer is removed (as through `/finalize`) and
//! the namespace goes.

use crate::registry::core::namespace::NAMESPACE_FINALIZER;
use crate::registry::defects::ServerDefect;
use crate::registry::store::{commit, delete_all, system_ctx};
use crate::registry::{State, namespaces_key, set_condition, string_list};
use crate::storage::{ChangeKind, StorageKey, StoredObject, Subresource, Verb};
use apimachinery::clock::format_time;
use apimachinery::unstructured::set_nested_field;
use jiff::Timestamp;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// User agent of the namespace controller's writes on the timeline.
pub(crate) const NAMESPACE_CONTROLLER: &str = "kube-controller-manager/namespace-controller";

/// What is left in a namespace after a deletion pass.
#[derive(Default)]
struct Remaining {
    /// `resource.group` (core resources end with a dot, as upstream prints them) → objects.
    resources: BTreeMap<String, usize>,
    /// Finalizer → objects that carry it.
    finalizers: BTreeMap<String, usize>,
}

impl Remaining {
    fn is_empty(&self) -> bool {
        self.resources.is_empty()
    }
}

/// The namespace controller's five deletion conditions, in its order, each `False` with its
/// all-is-well reason unless content or finalizers remain.
fn set_conditions(v: &mut Value, left: &Remaining, now: &str) {
    set_condition(
        v,
        "NamespaceDeletionDiscoveryFailure",
        "False",
        "ResourcesDiscovered",
        "All resources successfully discovered",
        now,
    );
    set_condition(
        v,
        "NamespaceDeletionGroupVersionParsingFailure",
        "False",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
        now,
    );
    set_condition(
        v,
        "NamespaceDeletionContentFailure",
        "False",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
        now,
    );
    if left.resources.is_empty() {
        set_condition(
            v,
            "NamespaceContentRemaining",
            "False",
            "ContentRemoved",
            "All content successfully removed",
            now,
        );
    } else {
        let listed: Vec<String> =
            left.resources.iter().map(|(r, n)| format!("{r} has {n} resource instances")).collect();
        let message = format!("Some resources are remaining: {}", listed.join(", "));
        set_condition(v, "NamespaceContentRemaining", "True", "SomeResourcesRemain", &message, now);
    }
    if left.finalizers.is_empty() {
        set_condition(
            v,
            "NamespaceFinalizersRemaining",
            "False",
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished",
            now,
        );
    } else {
        let listed: Vec<String> =
            left.finalizers.iter().map(|(f, n)| format!("{f} in {n} resource instances")).collect();
        let message = format!("Some content in the namespace has finalizers remaining: {}", listed.join(", "));
        set_condition(v, "NamespaceFinalizersRemaining", "True", "SomeFinalizersRemain", &message, now);
    }
}

/// Deletes what is in `namespace` (Background) and counts what remains.
fn delete_content(st: &mut State, namespace: &str, now: Timestamp) -> (bool, Remaining) {
    let ctx = system_ctx(NAMESPACE_CONTROLLER, Verb::Delete, None);
    let keys: Vec<StorageKey> = st.store.collections.keys().cloned().collect();
    let mut progressed = false;
    let mut left = Remaining::default();
    for key in keys {
        let Some(rt) = st.registry.preferred(&key) else { continue };
        if !rt.namespaced {
            continue;
        }
        let (p, _) = delete_all(st, &rt, Some(namespace), &ctx, now);
        progressed |= p;
        let Some(coll) = st.store.collections.get(&key) else { continue };
        let start = (namespace.to_string(), String::new());
        let items: Vec<&Arc<StoredObject>> =
            coll.range(start..).map(|(_, o)| o).take_while(|o| o.namespace == namespace).collect();
        if items.is_empty() {
            continue;
        }
        left.resources.insert(format!("{}.{}", rt.plural, rt.group), items.len());
        for o in items {
            for f in &o.finalizers {
                *left.finalizers.entry(f.clone()).or_default() += 1;
            }
        }
    }
    (progressed, left)
}

/// One pass of the namespace controller over every namespace being deleted. Returns whether
/// anything was written.
pub(crate) fn reconcile(st: &mut State, now: Timestamp) -> bool {
    let Some(ns_rt) = st.registry.get("", "v1", "namespaces") else { return false };
    let deleting: Vec<String> = st
        .store
        .collections
        .get(namespaces_key())
        .map(|c| c.values().filter(|o| o.deleting).map(|o| o.name.clone()).collect())
        .unwrap_or_default();
    let mut progressed = false;
    for name in deleting {
        let Some(ns) = st.store.get(namespaces_key(), "", &name) else { continue };
        let spec_finalizers = string_list(ns.value()["spec"].get("finalizers"));
        if spec_finalizers.iter().any(|f| f == NAMESPACE_FINALIZER) {
            let (p, left) = delete_content(st, &name, now);
            progressed |= p;
            // Re-read: deleting content does not write the namespace, but be safe about it.
            let Some(ns) = st.store.get(namespaces_key(), "", &name) else { continue };
            let mut v = ns.value();
            set_conditions(&mut v, &left, &format_time(now));
            let ns = if v != ns.value() {
                progressed = true;
                let ctx = system_ctx(NAMESPACE_CONTROLLER, Verb::Update, Some(Subresource::Status));
                commit(st, &ns_rt, ChangeKind::Modified, v, &ctx, now)
            } else {
                ns
            };
            // Defect: the namespace goes once its content was asked to go, not once it is gone.
            if left.is_empty() || st.defective(ServerDefect::NamespaceRemovedWithContentLeft) {
                let mut v = ns.value();
                let rest: Vec<Value> =
                    spec_finalizers.iter().filter(|f| *f != NAMESPACE_FINALIZER).cloned().map(Value::String).collect();
                set_nested_field(&mut v, &["spec", "finalizers"], Value::Array(rest));
                let ctx = system_ctx(NAMESPACE_CONTROLLER, Verb::Update, Some(Subresource::Finalize));
                commit(st, &ns_rt, ChangeKind::Modified, v, &ctx, now);
                progressed = true;
            }
            continue;
        }
        if spec_finalizers.is_empty() && ns.finalizers.is_empty() {
            let ctx = system_ctx(NAMESPACE_CONTROLLER, Verb::Delete, None);
            commit(st, &ns_rt, ChangeKind::Deleted, ns.value(), &ctx, now);
            progressed = true;
        }
    }
    progressed
}
