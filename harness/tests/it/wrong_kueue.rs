//! Proof that the Kueue table catches regressions of PR 11264's RayService upgrade gate in the
//! reference Kueue: the suite runs against Kueue built with one deliberate defect at a time
//! (cargo feature `defects` of `controllers`, enabled through this target's dev-dependency),
//! and the rows that guard against that defect must fail while rows that do not depend on it
//! still pass. (The correct controller passing every row is the `suites` test.)

use controllers::kueue::{KueueConfig, KueueDefect};
use kproof::actors::KueueFactory;
use std::sync::Arc;

use crate::common;

fn assert_caught(defect: KueueDefect, guards: &[&str], unaffected: &[&str]) {
    let base = KueueConfig { defect: Some(defect), ..KueueConfig::default() };
    let backend = kproof::backend::InProcessBackend::reference().with_actor(Arc::new(KueueFactory { base }));
    common::assert_caught(&backend, "kueue.yaml", &defect, guards, unaffected);
}

#[test]
fn unsuspending_before_the_covering_slice_is_admitted_is_caught() {
    assert_caught(
        KueueDefect::UnsuspendBeforeSliceAdmitted,
        &[
            "kq-6-1-gate-holds-during-upgrade",
            "kq-6-2b-quota-freed-by-another-workload",
            "kq-6-8-race-guard-keeps-the-pending-child-suspended",
            "kq-e2e-gate-zero-downtime-upgrade-on-queue-quota",
        ],
        &["kq-raycluster-runs-when-admitted", "kq-raycluster-waits-for-quota-best-effort-fifo"],
    );
}

#[test]
fn pod_sets_from_one_child_instead_of_the_union_are_caught() {
    assert_caught(
        KueueDefect::PodSetsFromOneChild,
        &[
            "kq-6-1-gate-holds-during-upgrade",
            "kq-6-2a-raising-quota-opens-the-gate",
            "kq-e2e-gate-zero-downtime-upgrade-on-queue-quota",
        ],
        &["kq-6-1-admission-starts-the-service-with-the-nested-gate-kept", "kq-raycluster-runs-when-admitted"],
    );
}

#[test]
fn a_missing_race_guard_is_caught() {
    assert_caught(
        KueueDefect::NoRaceGuard,
        &[
            "kq-6-8-race-guard-keeps-the-pending-child-suspended",
            "kq-6-1-gate-holds-during-upgrade",
            "kq-6-2a-raising-quota-opens-the-gate",
        ],
        &["kq-6-1-admission-starts-the-service-with-the-nested-gate-kept", "kq-raycluster-runs-when-admitted"],
    );
}

#[test]
fn borrowing_past_the_borrowing_limit_is_caught() {
    assert_caught(
        KueueDefect::BorrowingPastTheLimit,
        &["kq-cohort-borrowing-within-the-borrowing-limit"],
        &["kq-raycluster-runs-when-admitted", "kq-raycluster-waits-for-quota-best-effort-fifo"],
    );
}

#[test]
fn a_rayjob_submitter_left_out_of_the_pod_sets_is_caught() {
    assert_caught(
        KueueDefect::RayJobSubmitterNotCounted,
        &["kq-rayjob-runs-when-admitted"],
        &["kq-rayjob-sidecar-submitter-counts-in-the-head-podset", "kq-raycluster-runs-when-admitted"],
    );
}

#[test]
fn ungating_before_the_scale_up_slice_is_admitted_is_caught() {
    assert_caught(
        KueueDefect::UngateBeforeSliceAdmitted,
        &["kq-3-7-scale-up-pods-stay-gated-until-the-slice-is-admitted", "kq-6-4-template-gate-is-not-protected"],
        &["kq-raycluster-runs-when-admitted", "kq-6-1-admission-starts-the-service-with-the-nested-gate-kept"],
    );
}

#[test]
fn ignoring_reclaim_within_the_cohort_is_caught() {
    assert_caught(
        KueueDefect::NoReclaimWithinCohort,
        &["kq-cohort-reclaim-within-cohort-preempts-the-borrower"],
        &["kq-cohort-no-reclaim-without-the-policy", "kq-cohort-borrowing-within-the-borrowing-limit"],
    );
}

#[test]
fn a_cohort_object_that_lends_nothing_is_caught() {
    assert_caught(
        KueueDefect::CohortQuotaNotLent,
        &["kq-cohort-object-lends-its-own-quota"],
        &["kq-cohort-borrowing-within-the-borrowing-limit", "kq-raycluster-runs-when-admitted"],
    );
}

#[test]
fn a_workload_webhook_that_lets_reserved_pod_sets_change_is_caught() {
    assert_caught(
        KueueDefect::ReservedPodSetsMutable,
        &["kq-webhook-workload-podsets-are-immutable-once-reserved"],
        &["kq-raycluster-runs-when-admitted", "kq-6-2a-raising-quota-opens-the-gate"],
    );
}

#[test]
fn a_defaulting_webhook_that_leaves_out_the_elastic_gate_is_caught() {
    assert_caught(
        KueueDefect::ElasticGateNotDefaulted,
        &["kq-webhook-defaulting-suspends-and-gates-the-sample-rayservice"],
        &["kq-raycluster-runs-when-admitted", "kq-webhook-create-refuses-a-queue-name-not-a-dns-subdomain"],
    );
}
