//! The controllers every real cluster runs beside the API server, run here under the store's
//! lock right after the write that triggers them (their writes follow it in resourceVersion
//! order, deterministically): the garbage collector, the namespace lifecycle and the CRD
//! controllers. In envtest mode only the CRD controller (part of kube-apiserver) runs.

pub(crate) mod crd;
pub(crate) mod gc;
pub(crate) mod namespace;

use crate::registry::{State, crds_key, namespaces_key};
use jiff::Timestamp;

/// Runs the controllers until nothing more happens, so a write's consequences are all in the
/// store when its response is sent.
pub(crate) fn reconcile(st: &mut State, now: Timestamp) {
    if !st.controller_manager {
        for _ in 0..64 {
            if !crd::reconcile_deleting(st, now) {
                break;
            }
        }
        st.store.take_unobserved();
        return;
    }
    let mut collector = gc::GarbageCollector::default();
    let changes = st.store.take_unobserved();
    collector.observe(st, changes);
    // The CRD and namespace controllers act only on CRDs and namespaces being deleted, the
    // garbage collector only on what the writes queued for it.
    let deletions = |st: &State| st.store.deleting_in(namespaces_key()) + st.store.deleting_in(crds_key()) > 0;
    if !deletions(st) && !collector.has_work() {
        return;
    }
    for _ in 0..64 {
        let mut progressed = collector.run(st, now);
        progressed |= crd::reconcile_deleting(st, now);
        progressed |= namespace::reconcile(st, now);
        let changes = st.store.take_unobserved();
        collector.observe(st, changes);
        if !progressed {
            return;
        }
    }
}
