//! The apiextensions controllers: naming and establishing a CRD (accepted names, stored
//! versions, the NamesAccepted and Established conditions) and the cleanup of a deleted CRD's
//! instances.

use crate::registry::apiextensions::crd::CRD_CLEANUP_FINALIZER;
use crate::registry::store::{commit, delete_all, system_ctx};
use crate::registry::{ResourceType, State, crds_key, set_condition, str_field, string_list};
use crate::storage::{ChangeKind, StorageKey, StoredObject, Subresource, Verb};
use apimachinery::clock::format_time;
use apimachinery::unstructured::set_nested_field;
use jiff::Timestamp;
use serde_json::{Value, json};
use std::sync::Arc;

/// User agent of the apiextensions controllers' writes on the timeline.
const SYSTEM_CRD: &str = "kube-apiserver/apiextensions-controllers";

/// The naming and establishing controllers' answer to a created CRD: accepted names, stored
/// versions, NamesAccepted and Established. They run as part of the create, so the create's
/// answer already says whether the CRD is served.
pub(crate) fn establish(
    st: &mut State,
    rt: &ResourceType,
    crd: Arc<StoredObject>,
    now: Timestamp,
) -> Arc<StoredObject> {
    let mut v = crd.value();
    let t = format_time(now);
    let names = v["spec"]["names"].clone();
    set_nested_field(&mut v, &["status", "acceptedNames"], names);
    let storage: Vec<Value> = v["spec"]["versions"]
        .as_array()
        .map(|a| a.iter().filter(|x| x["storage"] == true).map(|x| x["name"].clone()).collect())
        .unwrap_or_default();
    let mut stored = v["status"]["storedVersions"].as_array().cloned().unwrap_or_default();
    for s in storage {
        if !stored.contains(&s) {
            stored.push(s);
        }
    }
    set_nested_field(&mut v, &["status", "storedVersions"], Value::Array(stored));
    if st.registry.serves_crd(&crd.name) {
        set_condition(&mut v, "NamesAccepted", "True", "NoConflicts", "no conflicts found", &t);
        set_condition(
            &mut v,
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
            &t,
        );
    } else {
        let why = st
            .registry
            .names_conflict(
                &crd.name,
                str_field(&v, "spec.group"),
                str_field(&v, "spec.names.plural"),
                str_field(&v, "spec.names.kind"),
            )
            .unwrap_or_default();
        let reason = if why.contains(str_field(&v, "spec.names.kind")) { "KindConflict" } else { "PluralConflict" };
        set_nested_field(&mut v, &["status", "acceptedNames"], json!({"plural": "", "kind": ""}));
        set_condition(&mut v, "NamesAccepted", "False", reason, &why, &t);
        set_condition(&mut v, "Established", "False", "NotAccepted", "not all names are accepted", &t);
    }
    if v == crd.value() {
        return crd;
    }
    let ctx = system_ctx(SYSTEM_CRD, Verb::Update, Some(Subresource::Status));
    commit(st, rt, ChangeKind::Modified, v, &ctx, now)
}

/// The CRD cleanup controller: a CRD being deleted loses its instances, then its cleanup
/// finalizer. Returns whether anything was written.
pub(crate) fn reconcile_deleting(st: &mut State, now: Timestamp) -> bool {
    let Some(crd_rt) = st.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions") else { return false };
    let deleting: Vec<Arc<StoredObject>> = st
        .store
        .collections
        .get(crds_key())
        .map(|c| {
            c.values()
                .filter(|o| o.deleting && o.finalizers.iter().any(|f| f == CRD_CLEANUP_FINALIZER))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let mut progressed = false;
    let ctx = system_ctx(SYSTEM_CRD, Verb::Delete, None);
    for crd in deleting {
        let v = crd.value();
        let key = StorageKey::new(str_field(&v, "spec.group"), str_field(&v, "spec.names.plural"));
        let (p, remaining) = match st.registry.preferred(&key) {
            Some(rt) => delete_all(st, &rt, None, &ctx, now),
            None => (false, 0),
        };
        progressed |= p;
        let left = st.store.collections.get(&key).map_or(0, |c| c.len());
        if remaining == 0 || left == 0 {
            let mut nv = v.clone();
            let fins: Vec<Value> = string_list(v["metadata"].get("finalizers"))
                .into_iter()
                .filter(|f| f != CRD_CLEANUP_FINALIZER)
                .map(Value::String)
                .collect();
            set_nested_field(&mut nv, &["metadata", "finalizers"], Value::Array(fins.clone()));
            let kind = if fins.is_empty() { ChangeKind::Deleted } else { ChangeKind::Modified };
            commit(st, &crd_rt, kind, nv, &system_ctx(SYSTEM_CRD, Verb::Update, None), now);
            progressed = true;
        }
    }
    progressed
}
