//! Proof that the RayCluster and RayService tables catch regressions: a suite runs against
//! KubeRay built with one deliberate defect at a time, and the rows that guard against that
//! defect must fail while rows that do not depend on it still pass. (The correct reconcilers
//! passing every row is the `suites` test.)

use controllers::kuberay::{Defect, KubeRayConfig};
use kproof::actors::KubeRayFactory;

use crate::common;

fn assert_caught(defect: Defect, guards: &[&str], unaffected: &[&str]) {
    assert_caught_in("raycluster.yaml", defect, guards, unaffected);
}

fn assert_caught_in(suite_file: &str, defect: Defect, guards: &[&str], unaffected: &[&str]) {
    // The reference backend with KubeRay built with the defect (cargo feature `defects`, which
    // this test target enables through its dev-dependency).
    let base = KubeRayConfig { defect: Some(defect), ..KubeRayConfig::default() };
    let backend =
        kproof::backend::InProcessBackend::reference().with_actor(std::sync::Arc::new(KubeRayFactory::with_base(base)));
    common::assert_caught(&backend, suite_file, &defect, guards, unaffected);
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
fn traffic_shifted_before_the_pending_cluster_is_ready_is_caught() {
    assert_caught_in(
        "rayservice.yaml",
        Defect::TrafficBeforePendingReady,
        // iu-4's probe counts failed requests, so traffic sent to the pending cluster before its
        // Serve replicas run fails it. It passed with the defect before the finalizer write
        // started bumping the generation (as the real operator's does), which shifted the
        // passes in virtual time: with the defect it now fails on 15 failed requests.
        &["iu-traffic-waits-for-pending-ready", "iu-4-rollback-aba"],
        &["iu-1", "iu-serve-config-change-is-not-an-upgrade"],
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

#[test]
fn target_capacity_raised_past_max_surge_is_caught_by_the_worked_example() {
    assert_caught_in(
        "rayservice.yaml",
        Defect::TargetCapacityPastMaxSurge,
        &["iu-2-worked-example"],
        &["iu-max-surge-defaults-to-100", "iu-1"],
    );
}

#[test]
fn a_rollback_that_waits_for_an_unhealthy_pending_cluster_is_caught_by_iu_7() {
    assert_caught_in(
        "rayservice.yaml",
        Defect::RollbackWaitsForUnhealthyPending,
        &["iu-7-rollback-with-pending-head-not-ready"],
        &["iu-4-rollback-aba", "iu-fast-rollback-before-any-traffic"],
    );
}

#[test]
fn deleting_the_old_cluster_without_the_delay_is_caught() {
    assert_caught_in(
        "rayservice.yaml",
        Defect::NoDeletionDelay,
        &["rs-3", "rs-3-default-deletion-delay"],
        &["rs-deletion-removes-clusters-then-the-finalizer", "rs-2"],
    );
}
