//! Proof that the DRA table catches regressions of the reference DRA components: the suite runs
//! against the components built with one deliberate defect at a time (cargo feature `defects`
//! of `controllers`, which this test target enables through its dev-dependency), and the rows
//! that guard against that defect must fail while rows that do not depend on it still pass.
//! (The correct components passing every row is the `suites` test.)

use controllers::dra::DraDefect;
use kproof::actors::{
    DraBase, KubeletFactory, PodGroupProtectionFactory, ResourceClaimControllerFactory, SchedulerFactory,
};
use std::sync::Arc;

use crate::common;

fn assert_caught(defect: DraDefect, guards: &[&str], unaffected: &[&str]) {
    // Every DRA-aware component carries the defect; each defect lives in exactly one of them.
    let base = DraBase::with_tweak(move |c| c.defect = Some(defect));
    let backend = kproof::backend::InProcessBackend::reference()
        .with_actor(Arc::new(ResourceClaimControllerFactory(base.clone())))
        .with_actor(Arc::new(PodGroupProtectionFactory(base.clone())))
        .with_actor(Arc::new(SchedulerFactory(base.clone())))
        .with_actor(Arc::new(KubeletFactory::default().with_dra(base)));
    common::assert_caught(&backend, "dra.yaml", &defect, guards, unaffected);
}

#[test]
fn deallocating_while_a_pod_entry_remains_is_caught() {
    assert_caught(
        DraDefect::DeallocateWithPodEntryLeft,
        &["dra-b-pod-entries-pruned-then-deallocated"],
        &["dra-b-shared-claim-lists-each-pod", "dra-b-deleted-claim-waits-for-its-pods"],
    );
}

#[test]
fn pruning_a_pod_entry_on_its_deletion_timestamp_is_caught() {
    assert_caught(
        DraDefect::PruneOnDeletionTimestamp,
        &["dra-b-terminating-scheduled-pod-keeps-its-entry"],
        &["dra-b-pod-entries-pruned-then-deallocated", "dra-raw-non-pod-entry-kept-while-pod-entry-is-pruned"],
    );
}

#[test]
fn removing_the_podgroup_finalizer_while_a_pod_runs_is_caught() {
    assert_caught(
        DraDefect::PodGroupFinalizerWhilePodRuns,
        &["dra-pg-protection-holds-the-group-while-a-pod-runs"],
        &["dra-pg-entry-outlives-the-pods-and-goes-with-the-group", "dra-pg-template-claim-generated-for-the-group"],
    );
}

#[test]
fn binding_the_257th_pod_is_caught() {
    assert_caught(
        DraDefect::BindDespiteFailedReservation,
        &["dra-raw-257th-entry-is-refused-and-the-pod-waits"],
        &["dra-b-shared-claim-lists-each-pod", "dra-pg-group-members-do-not-count-against-256"],
    );
}

#[test]
fn a_kubelet_that_skips_the_reservation_check_is_caught() {
    assert_caught(
        DraDefect::KubeletSkipsReservationCheck,
        &[
            "dra-b-kubelet-refuses-a-pod-the-claim-is-not-reserved-for",
            "dra-pg-old-kubelet-refuses-a-group-reservation",
            "dra-w-kubelet-without-the-gate-refuses-the-pods",
        ],
        &["dra-b-prescheduled-pod-gets-the-reservation-from-kcm", "dra-w-spec-reservedfor-is-the-only-consumer"],
    );
}

#[test]
fn unreserving_a_group_while_one_of_its_pods_is_scheduled_is_caught() {
    assert_caught(
        DraDefect::UnreserveGroupWithScheduledPod,
        &["dra-pg-unschedulable-group-pod-unreserves-the-group-claim"],
        &[
            "dra-pg-group-claim-unusable-where-the-pod-fits-is-moved",
            "dra-pg-entry-outlives-the-pods-and-goes-with-the-group",
        ],
    );
}
