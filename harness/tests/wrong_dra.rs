//! Proof that the DRA table catches regressions of the reference DRA components: the suite runs
//! against the components built with one deliberate defect at a time (cargo feature `defects`
//! of `controllers`, which this test target enables through its dev-dependency), and the rows
//! that guard against that defect must fail while rows that do not depend on it still pass.
//! (The correct components passing every row is the `suites` test.)

use controllers::dra::DraDefect;
use kproof::actors::{
    DraBase, KubeletFactory, PodGroupProtectionFactory, ResourceClaimControllerFactory, SchedulerFactory,
};
use kproof::backend::RunOptions;
use kproof::report::result::Outcome;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

fn outcomes(defect: DraDefect, rows: &[&str]) -> BTreeMap<String, Outcome> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let suite = kproof::suite::load_suite_file(&root.join("suites").join("dra.yaml")).expect("the suite loads");
    // Every DRA-aware component carries the defect; each defect lives in exactly one of them.
    let base = DraBase::with_tweak(move |c| c.defect = Some(defect));
    let backend = kproof::backend::InProcessBackend::reference()
        .with_actor(Arc::new(ResourceClaimControllerFactory(base.clone())))
        .with_actor(Arc::new(PodGroupProtectionFactory(base.clone())))
        .with_actor(Arc::new(SchedulerFactory(base.clone())))
        .with_actor(Arc::new(KubeletFactory::default().with_dra(base)));
    let opts = RunOptions { fixtures_dir: root.join("fixtures"), flight_dir: None, ..Default::default() };
    let selected: Vec<_> =
        suite.suite.rows.iter().filter(|r| rows.contains(&r.id.as_str())).map(|r| (&suite, r)).collect();
    assert_eq!(selected.len(), rows.len(), "every named row exists in suites/dra.yaml");
    kproof::backend::run_rows(&backend, &selected, &opts, 2, &|_| {})
        .into_iter()
        .map(|r| {
            println!(
                "{defect:?}: {} {:?} {}",
                r.id,
                r.outcome,
                r.failure.clone().unwrap_or_default().lines().next().unwrap_or_default()
            );
            (r.id, r.outcome)
        })
        .collect()
}

fn assert_caught(defect: DraDefect, guards: &[&str], unaffected: &[&str]) {
    let all: Vec<&str> = guards.iter().chain(unaffected).copied().collect();
    let got = outcomes(defect, &all);
    for row in guards {
        assert_eq!(got[*row], Outcome::Failed, "row {row} must catch {defect:?}");
    }
    for row in unaffected {
        assert_eq!(got[*row], Outcome::Passed, "row {row} does not depend on {defect:?} and must still pass");
    }
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
