//! Proof that the RayCluster table catches regressions: the suite runs against KubeRay built
//! with one deliberate defect at a time, and the rows that guard against that defect must fail.
//! (The correct reconciler passing every row is the `suites` test.)

use controllers::kuberay::{Defect, KubeRayConfig};
use kproof::actors::KubeRayFactory;
use kproof::backend::RunOptions;
use kproof::report::result::Outcome;
use std::collections::BTreeMap;
use std::path::Path;

fn outcomes(defect: Defect, rows: &[&str]) -> BTreeMap<String, Outcome> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let suite = kproof::suite::load_suite_file(&root.join("suites").join("raycluster.yaml"))
        .expect("the raycluster suite loads");
    // The reference backend with KubeRay built with the defect (cargo feature `defects`, which
    // this test target enables through its dev-dependency).
    let base = KubeRayConfig { defect: Some(defect), ..KubeRayConfig::default() };
    let backend =
        kproof::backend::InProcessBackend::reference().with_actor(std::sync::Arc::new(KubeRayFactory::with_base(base)));
    let opts = RunOptions { fixtures_dir: root.join("fixtures"), flight_dir: None, ..Default::default() };
    let selected: Vec<_> =
        suite.suite.rows.iter().filter(|r| rows.contains(&r.id.as_str())).map(|r| (&suite, r)).collect();
    assert_eq!(selected.len(), rows.len(), "every named row exists in suites/raycluster.yaml");
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

fn assert_caught(defect: Defect, guards: &[&str], unaffected: &[&str]) {
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
fn a_hash_that_includes_replicas_recreates_on_scaling_and_rc_3_catches_it() {
    assert_caught(Defect::HashIncludesReplicas, &["rc-3"], &["rc-2", "rc-1"]);
}

#[test]
fn creating_pods_during_recreate_is_caught_by_rc_2() {
    assert_caught(Defect::CreateDuringRecreate, &["rc-2", "rc-2-one-pass"], &["rc-3", "rc-4"]);
}

#[test]
fn recreating_on_an_operator_upgrade_is_caught_by_rc_4() {
    assert_caught(Defect::NoVersionSkip, &["rc-4"], &["rc-2", "rc-5"]);
}

#[test]
fn a_suspend_that_can_be_cancelled_is_caught_by_rc_7() {
    assert_caught(Defect::NonAtomicSuspend, &["rc-7"], &["rc-suspend-and-resume"]);
}

#[test]
fn keeping_a_failed_pod_with_restart_policy_always_is_caught_by_the_evicted_worker_row() {
    assert_caught(
        Defect::TerminalPodKeptWithRestartAlways,
        &["rc-evicted-worker-with-restart-always-is-replaced"],
        &["rc-failed-worker-deleted-and-replaced", "rc-crashing-worker-with-restart-always-is-kept"],
    );
}

#[test]
fn deleting_extra_head_pods_is_caught_by_the_extra_head_row() {
    assert_caught(
        Defect::ExtraHeadPodsDeleted,
        &["rc-extra-head-pod-stops-reconciling"],
        &["rc-provisions-head-worker-and-service", "rc-deleted-worker-is-replaced"],
    );
}
