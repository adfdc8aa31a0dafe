//! Suspend, as a RayService applies it (KubeRay v1.7.0, PRs #4841, #4881, #4897): the pure
//! rules, kept apart from the reconciler so a Kueue integration (which gates a RayService's
//! clusters by their `suspend`) builds on exactly the same ones.
//!
//! Two knobs exist and they mean different things:
//! - top-level `RayService.spec.suspend` deletes everything the service owns, through the
//!   atomic state machine of [`next_suspend_step`]: once `Suspending` is stored, the deletion
//!   runs to the end even if the flag is flipped back;
//! - nested `spec.rayClusterConfig.suspend` is a template gate: it is copied into a RayCluster
//!   only when that cluster is created ([`child_spec_at_creation`]), is left out of the spec hash
//!   ([`cluster_spec_for_hashing`]), and an in-place update keeps whatever the cluster has
//!   ([`spec_for_in_place_update`]) — after creation, the cluster's suspend belongs to whoever
//!   admits it (Kueue).

use crate::crds::RayClusterSpec;
use crate::crds::rayservice::{RayServiceStatus, RayServiceStatuses, condition, reason};
use crate::kuberay::common::conditions::{self, ConditionStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// `rayClusterSpecForHashing`: the spec with `suspend` cleared, so flipping the template gate
/// neither prepares a new cluster nor updates one in place.
pub fn cluster_spec_for_hashing(spec: &RayClusterSpec) -> RayClusterSpec {
    let mut s = spec.clone();
    s.suspend = None;
    s
}

/// The spec a new child RayCluster is created with: a deep copy of `rayClusterConfig`,
/// `suspend` included (the only moment the template gate reaches a cluster). With
/// `start_at_min_replicas` (the pending cluster of an incremental upgrade) every group's
/// `replicas` is left unset, so the cluster starts at `minReplicas` and the autoscaler sizes it
/// from `target_capacity`.
pub fn child_spec_at_creation(spec: &RayClusterSpec, start_at_min_replicas: bool) -> RayClusterSpec {
    let mut s = spec.clone();
    if start_at_min_replicas {
        for g in &mut s.worker_group_specs {
            g.replicas = None;
        }
    }
    s
}

/// `modifyRayCluster`'s spec: the goal spec, with the cluster's current `suspend` kept.
pub fn spec_for_in_place_update(current: &RayClusterSpec, goal: &RayClusterSpec) -> RayClusterSpec {
    let mut s = goal.clone();
    s.suspend = current.suspend;
    s
}

/// Where a RayService is in the top-level suspend state machine (read from its conditions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuspendPhase {
    /// Neither `Suspending` nor `Suspended` is True.
    Running,
    /// `Suspending` is True: owned resources are being deleted.
    Suspending,
    /// `Suspended` is True: nothing is owned any more.
    Suspended,
}

/// The phase the conditions of `status` record.
pub fn suspend_phase(status: &RayServiceStatuses) -> SuspendPhase {
    if conditions::is_true(&status.conditions, condition::SUSPENDED) {
        SuspendPhase::Suspended
    } else if conditions::is_true(&status.conditions, condition::SUSPENDING) {
        SuspendPhase::Suspending
    } else {
        SuspendPhase::Running
    }
}

/// `suspendIsOperative`: the suspend state machine owns the pass (the rest of the reconcile
/// must not run, or it would recreate what is being deleted).
pub fn suspend_is_operative(status: &RayServiceStatuses) -> bool {
    suspend_phase(status) != SuspendPhase::Running
}

/// What `handleSuspend` does in one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuspendStep {
    /// Not suspended and not asked to be: reconcile normally.
    Proceed,
    /// `spec.suspend` just turned true: stage `Suspending` ([`commit_suspend`]); delete nothing yet.
    Commit,
    /// `Suspending` is stored: delete every owned resource, whatever `spec.suspend` says now.
    DeleteOwned,
    /// Suspended and still asked to be: do nothing.
    StaySuspended,
    /// Suspended and no longer asked to be: [`resume`], then reconcile normally.
    Resume,
}

/// The step `handleSuspend` takes for a service in `status` whose `spec.suspend` is `suspend`.
pub fn next_suspend_step(status: &RayServiceStatuses, suspend: bool) -> SuspendStep {
    match (suspend_phase(status), suspend) {
        (SuspendPhase::Suspended, true) => SuspendStep::StaySuspended,
        (SuspendPhase::Suspended, false) => SuspendStep::Resume,
        (SuspendPhase::Suspending, _) => SuspendStep::DeleteOwned,
        (SuspendPhase::Running, true) => SuspendStep::Commit,
        (SuspendPhase::Running, false) => SuspendStep::Proceed,
    }
}

fn set(status: &mut RayServiceStatuses, type_: &str, s: ConditionStatus, why: &str, message: &str, now: &Time) {
    let generation = Some(status.observed_generation);
    conditions::set(&mut status.conditions, type_, s, why, message, now, generation);
}

/// [`SuspendStep::Commit`]: `Suspending=True/SuspendRequested`; Ready, UpgradeInProgress and
/// RollbackInProgress False/`SuspendInProgress`; cluster statuses, endpoints and serviceStatus
/// reset; observedGeneration bumped.
pub fn commit_suspend(status: &mut RayServiceStatuses, generation: i64, now: &Time) {
    use ConditionStatus::{False, True};
    status.observed_generation = generation;
    set(
        status,
        condition::SUSPENDING,
        True,
        reason::SUSPEND_REQUESTED,
        "Spec.Suspend is true; will delete all Kubernetes resources owned by this RayService.",
        now,
    );
    set(status, condition::READY, False, reason::SUSPEND_IN_PROGRESS, "RayService is suspending.", now);
    set(status, condition::UPGRADE_IN_PROGRESS, False, reason::SUSPEND_IN_PROGRESS, "No upgrade in progress.", now);
    set(status, condition::ROLLBACK_IN_PROGRESS, False, reason::SUSPEND_IN_PROGRESS, "No rollback in progress.", now);
    status.active_service_status = RayServiceStatus::default();
    status.pending_service_status = RayServiceStatus::default();
    status.num_serve_endpoints = 0;
    status.service_status = String::new();
}

/// Some owned resource is still there: `Suspending=True/SuspendInProgress`.
pub fn mark_still_suspending(status: &mut RayServiceStatuses, now: &Time) {
    set(
        status,
        condition::SUSPENDING,
        ConditionStatus::True,
        reason::SUSPEND_IN_PROGRESS,
        "Waiting for all Kubernetes resources owned by this RayService to be deleted.",
        now,
    );
}

/// Everything is gone: `Suspending=False`, `Suspended=True`, and Ready, UpgradeInProgress and
/// RollbackInProgress False, all with reason `SuspendComplete`.
pub fn complete_suspend(status: &mut RayServiceStatuses, now: &Time) {
    use ConditionStatus::{False, True};
    let done = "All owned resources have been deleted.";
    set(status, condition::SUSPENDING, False, reason::SUSPEND_COMPLETE, done, now);
    set(status, condition::SUSPENDED, True, reason::SUSPEND_COMPLETE, done, now);
    set(status, condition::READY, False, reason::SUSPEND_COMPLETE, "RayService is suspended.", now);
    set(status, condition::UPGRADE_IN_PROGRESS, False, reason::SUSPEND_COMPLETE, "No upgrade in progress.", now);
    set(status, condition::ROLLBACK_IN_PROGRESS, False, reason::SUSPEND_COMPLETE, "No rollback in progress.", now);
}

/// [`SuspendStep::Resume`]: `Suspended=False/RayServiceResumed` (kept, not removed); Ready and
/// UpgradeInProgress removed and added again as False/`Initializing`, so their transition time
/// is fresh and the initializing timeout starts over; observedGeneration bumped.
pub fn resume(status: &mut RayServiceStatuses, generation: i64, now: &Time) {
    use ConditionStatus::False;
    status.observed_generation = generation;
    set(
        status,
        condition::SUSPENDED,
        False,
        reason::RAY_SERVICE_RESUMED,
        "Spec.Suspend is false; RayService has resumed.",
        now,
    );
    let message = "RayService is initializing after resuming from suspend.";
    conditions::remove(&mut status.conditions, condition::READY);
    set(status, condition::READY, False, reason::INITIALIZING, message, now);
    conditions::remove(&mut status.conditions, condition::UPGRADE_IN_PROGRESS);
    set(status, condition::UPGRADE_IN_PROGRESS, False, reason::INITIALIZING, message, now);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn at(s: i64) -> Time {
        Time(jiff::Timestamp::from_second(s).unwrap())
    }

    fn with(conds: &[(&str, bool)]) -> RayServiceStatuses {
        let mut s = RayServiceStatuses::default();
        for (t, v) in conds {
            conditions::set(&mut s.conditions, t, *v, "R", "", &at(0), None);
        }
        s
    }

    #[rstest]
    #[case::running_not_asked(&[], false, SuspendStep::Proceed)]
    #[case::running_asked(&[], true, SuspendStep::Commit)]
    #[case::suspending_asked(&[("Suspending", true)], true, SuspendStep::DeleteOwned)]
    #[case::suspending_flipped_back_is_atomic(&[("Suspending", true)], false, SuspendStep::DeleteOwned)]
    #[case::suspended_asked(&[("Suspending", false), ("Suspended", true)], true, SuspendStep::StaySuspended)]
    #[case::suspended_released(&[("Suspending", false), ("Suspended", true)], false, SuspendStep::Resume)]
    #[case::resumed_before(&[("Suspended", false)], false, SuspendStep::Proceed)]
    fn the_state_machine(#[case] conds: &[(&str, bool)], #[case] suspend: bool, #[case] step: SuspendStep) {
        assert_eq!(next_suspend_step(&with(conds), suspend), step);
    }

    #[test]
    fn commit_resets_the_cluster_statuses_and_resume_refreshes_ready() {
        let mut s = with(&[("Ready", true)]);
        s.active_service_status.ray_cluster_name = "a".into();
        s.num_serve_endpoints = 2;
        commit_suspend(&mut s, 4, &at(10));
        assert_eq!(s.observed_generation, 4);
        assert!(s.active_service_status.is_empty());
        assert_eq!(s.num_serve_endpoints, 0);
        let ready = conditions::find(&s.conditions, "Ready").unwrap();
        assert_eq!((ready.status.as_str(), ready.reason.as_str()), ("False", "SuspendInProgress"));
        complete_suspend(&mut s, &at(20));
        assert_eq!(suspend_phase(&s), SuspendPhase::Suspended);
        resume(&mut s, 5, &at(30));
        let ready = conditions::find(&s.conditions, "Ready").unwrap();
        assert_eq!((ready.reason.as_str(), ready.last_transition_time.clone()), ("Initializing", at(30)));
        let suspended = conditions::find(&s.conditions, "Suspended").unwrap();
        assert_eq!((suspended.status.as_str(), suspended.reason.as_str()), ("False", "RayServiceResumed"));
        assert_eq!(suspend_phase(&s), SuspendPhase::Running);
    }

    #[test]
    fn the_template_gate_reaches_a_cluster_only_at_creation() {
        let spec: RayClusterSpec = serde_json::from_value(serde_json::json!({
            "suspend": true, "headGroupSpec": {"template": {}},
            "workerGroupSpecs": [{"groupName": "g", "replicas": 3, "template": {}}],
        }))
        .unwrap();
        assert_eq!(cluster_spec_for_hashing(&spec).suspend, None);
        let created = child_spec_at_creation(&spec, true);
        assert_eq!((created.suspend, created.worker_group_specs[0].replicas), (Some(true), None));
        let mut current = created.clone();
        current.suspend = Some(false);
        assert_eq!(spec_for_in_place_update(&current, &spec).suspend, Some(false));
    }
}
