//! RayService status: `calculateStatus` (cluster statuses, applications, traffic from the
//! HTTPRoute, promotion, rollback completion, preparing a new pending cluster, serve endpoints,
//! conditions), `reconcileRollbackState`, `InconsistentRayServiceStatuses`, and the initializing
//! timeout.

use super::cluster::{goal_hash, should_prepare_new_cluster};
use super::gateway::weights_from_route;
use super::serve::Applications;
use super::services::cluster_of;
use super::{RayServiceError, RayServiceReconciler, api_err, is_incremental_upgrade_enabled};
use crate::crds::RayCluster;
use crate::crds::gateway::HTTPRoute;
use crate::crds::rayservice::{RayService, RayServiceStatus, RayServiceStatuses, condition, reason};
use crate::kuberay::common::conditions::{self, ConditionStatus};
use crate::kuberay::*;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use std::collections::BTreeSet;

fn set(
    status: &mut RayServiceStatuses,
    type_: &str,
    s: impl Into<ConditionStatus>,
    why: &str,
    message: &str,
    now: &Time,
) {
    let generation = Some(status.observed_generation);
    conditions::set(&mut status.conditions, type_, s, why, message, now, generation);
}

/// `isInitializingTimeout`: Ready is False with reason `InitializingTimeout` (terminal).
pub(super) fn is_initializing_timeout(status: &RayServiceStatuses) -> bool {
    conditions::find(&status.conditions, condition::READY)
        .is_some_and(|c| c.status == "False" && c.reason == reason::INITIALIZING_TIMEOUT)
}

/// The `ray.io/initializing-timeout` annotation as a duration (a Go duration, or seconds).
fn initializing_timeout(rs: &RayService) -> Option<std::time::Duration> {
    let text = rs.annotations().get(INITIALIZING_TIMEOUT_ANNOTATION).filter(|t| !t.is_empty())?;
    apimachinery::parse_go_duration(text)
        .ok()
        .and_then(|d| std::time::Duration::try_from(d).ok())
        .or_else(|| text.parse::<u64>().ok().map(std::time::Duration::from_secs))
        .filter(|d| !d.is_zero())
}

/// `markFailedOnInitializingTimeout`: still initializing past the annotation's timeout clears
/// the cluster names and sets Ready False/`InitializingTimeout`; returns the event message.
fn mark_failed_on_initializing_timeout(rs: &RayService, status: &mut RayServiceStatuses, now: &Time) -> Option<String> {
    let timeout = initializing_timeout(rs)?;
    let ready = conditions::find(&status.conditions, condition::READY)?;
    if ready.status != "False" || ready.reason != reason::INITIALIZING {
        return None;
    }
    let spent = now.0.duration_since(ready.last_transition_time.0);
    let spent = std::time::Duration::try_from(spent).unwrap_or_default();
    if spent < timeout {
        return None;
    }
    status.active_service_status.ray_cluster_name.clear();
    status.pending_service_status.ray_cluster_name.clear();
    let message = format!(
        "RayService failed to become ready within the configured timeout of {}. Time spent initializing: {}",
        apimachinery::format_go_duration(timeout),
        apimachinery::format_go_duration(spent)
    );
    set(status, condition::READY, false, reason::INITIALIZING_TIMEOUT, &message, now);
    Some(format!(
        "RayService initializing timeout exceeded after {} (configured timeout: {})",
        apimachinery::format_go_duration(spent),
        apimachinery::format_go_duration(timeout)
    ))
}

/// `calculateConditions`: Ready from the serve endpoints (or the initializing timeout), and
/// UpgradeInProgress from which clusters are named.
fn calculate_conditions(rs: &RayService, status: &mut RayServiceStatuses, now: &Time) -> Option<String> {
    if status.conditions.is_empty() {
        let message = "RayService is initializing";
        set(status, condition::READY, false, reason::INITIALIZING, message, now);
        set(status, condition::UPGRADE_IN_PROGRESS, false, reason::INITIALIZING, message, now);
    }
    let mut timed_out = None;
    if status.num_serve_endpoints > 0 {
        set(
            status,
            condition::READY,
            true,
            reason::NON_ZERO_SERVE_ENDPOINTS,
            "Number of serve endpoints is greater than 0",
            now,
        );
    } else if conditions::is_true(&status.conditions, condition::READY) {
        set(
            status,
            condition::READY,
            false,
            reason::ZERO_SERVE_ENDPOINTS,
            "Number of serve endpoints dropped to 0",
            now,
        );
    } else {
        timed_out = mark_failed_on_initializing_timeout(rs, status, now);
    }
    let active = !status.active_service_status.ray_cluster_name.is_empty();
    let pending = !status.pending_service_status.ray_cluster_name.is_empty();
    if active && pending {
        set(
            status,
            condition::UPGRADE_IN_PROGRESS,
            true,
            reason::BOTH_ACTIVE_PENDING_CLUSTERS_EXIST,
            "Both active and pending Ray clusters exist",
            now,
        );
    } else if active {
        set(
            status,
            condition::UPGRADE_IN_PROGRESS,
            false,
            reason::NO_PENDING_CLUSTER,
            "Active Ray cluster exists and no pending Ray cluster",
            now,
        );
    } else {
        let keep = conditions::find(&status.conditions, condition::UPGRADE_IN_PROGRESS)
            .is_some_and(|c| c.reason == reason::INITIALIZING || c.reason == reason::INITIALIZING_TIMEOUT);
        if !keep {
            set(
                status,
                condition::UPGRADE_IN_PROGRESS,
                ConditionStatus::Unknown,
                reason::NO_ACTIVE_CLUSTER,
                "No active Ray cluster exists, and the RayService is not initializing. Please open a GitHub issue in the KubeRay repository.",
                now,
            );
        }
    }
    timed_out
}

/// `IsIncrementalUpgradeComplete`: the pending cluster exists, the active one is at 0 %
/// capacity and the pending one takes all the traffic.
fn incremental_upgrade_complete(status: &RayServiceStatuses, pending: Option<&RayCluster>) -> bool {
    pending.is_some()
        && status.active_service_status.target_capacity == Some(0)
        && status.pending_service_status.traffic_routed_percent == Some(100)
}

/// `shouldCompleteIncrementalRollback`: the active cluster back at 100 % capacity and traffic,
/// and the pending one either at 0/0 or unhealthy (no pending cluster, or its head not ready).
pub(super) fn should_complete_incremental_rollback(
    active: &RayServiceStatus,
    pending: &RayServiceStatus,
    pending_cluster: Option<&RayCluster>,
    require_pending_drained: bool,
) -> bool {
    let pending_healthy = require_pending_drained
        || pending_cluster
            .is_some_and(|c| c.status.as_ref().is_some_and(|s| conditions::is_true(&s.conditions, "HeadPodReady")));
    active.target_capacity == Some(100)
        && active.traffic_routed_percent == Some(100)
        && (!pending_healthy || (pending.target_capacity == Some(0) && pending.traffic_routed_percent == Some(0)))
}

/// `reconcileRollbackState`: the goal spec equals the active cluster's (a revert) or differs
/// from both clusters (a third spec): roll back; it equals the pending cluster's: cancel a
/// rollback. The original is checked first (the v1.7.0 fast-rollback fix, PR #4989).
pub(super) fn reconcile_rollback_state(
    rs: &RayService,
    status: &mut RayServiceStatuses,
    active: &RayCluster,
    pending: &RayCluster,
    cfg: &KubeRayConfig,
    now: &Time,
) {
    let target = goal_hash(rs, cfg);
    let annotation =
        |rc: &RayCluster| rc.annotations().get(HASH_WITHOUT_REPLICAS_ANNOTATION).cloned().unwrap_or_default();
    let rolling_back = conditions::is_true(&status.conditions, condition::ROLLBACK_IN_PROGRESS);
    if target == annotation(active) {
        if !rolling_back {
            set(
                status,
                condition::ROLLBACK_IN_PROGRESS,
                true,
                reason::DESIRED_CLUSTER_SPEC_CHANGED,
                "Goal state reverted to original cluster, rolling back.",
                now,
            );
        }
        return;
    }
    if target == annotation(pending) {
        if rolling_back {
            conditions::remove(&mut status.conditions, condition::ROLLBACK_IN_PROGRESS);
        }
        return;
    }
    if !rolling_back {
        set(
            status,
            condition::ROLLBACK_IN_PROGRESS,
            true,
            reason::DESIRED_CLUSTER_SPEC_CHANGED,
            "Goal state changed mid-upgrade, rolling back to original cluster.",
            now,
        );
    }
}

fn apps_inconsistent(old: &RayServiceStatus, new: &RayServiceStatus) -> bool {
    if old.ray_cluster_name != new.ray_cluster_name || old.applications.len() != new.applications.len() {
        return true;
    }
    new.applications.iter().any(|(name, n)| match old.applications.get(name) {
        None => true,
        Some(o) => {
            o.status != n.status
                || o.message != n.message
                || o.deployments.len() != n.deployments.len()
                || n.deployments.iter().any(|(d, nd)| {
                    o.deployments.get(d).is_none_or(|od| od.status != nd.status || od.message != nd.message)
                })
        }
    })
}

/// `InconsistentRayServiceStatuses`: whether the status must be written. With the incremental
/// gate on, upstream compares the three incremental fields as Go pointers, so any of them being
/// set on either side counts as a change: such services write their status on every pass.
pub(super) fn inconsistent(old: &RayServiceStatuses, new: &RayServiceStatuses, cfg: &KubeRayConfig) -> bool {
    if old.service_status != new.service_status
        || old.num_serve_endpoints != new.num_serve_endpoints
        || old.conditions != new.conditions
        || apps_inconsistent(&old.active_service_status, &new.active_service_status)
        || apps_inconsistent(&old.pending_service_status, &new.pending_service_status)
    {
        return true;
    }
    if cfg.gate(KubeRayGate::RayServiceIncrementalUpgrade) {
        let pointers_set = |s: &RayServiceStatus| {
            s.traffic_routed_percent.is_some() || s.target_capacity.is_some() || s.last_traffic_migrated_time.is_some()
        };
        return [
            &old.active_service_status,
            &old.pending_service_status,
            &new.active_service_status,
            &new.pending_service_status,
        ]
        .into_iter()
        .any(pointers_set);
    }
    false
}

impl RayServiceReconciler {
    /// `calculateNumServeEndpointsFromSlices`: ready endpoints of the service's EndpointSlices,
    /// counted once per pod uid.
    async fn count_serve_endpoints(&self, ns: &str, service: &str) -> Result<i32, RayServiceError> {
        let slices = self
            .cache
            .endpoint_slices
            .list(&self.client, ns, &format!("kubernetes.io/service-name={service}"))
            .await
            .map_err(api_err(format!("list the EndpointSlices of {service}")))?;
        let pods: BTreeSet<String> = slices
            .iter()
            .flat_map(|s| s.endpoints.iter().flatten())
            .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
            .filter_map(|e| e.target_ref.as_ref().and_then(|t| t.uid.clone()).filter(|u| !u.is_empty()))
            .collect();
        Ok(i32::try_from(pods.len()).unwrap_or(i32::MAX))
    }
}

/// `calculateStatus` (see the module docs); returns the initializing-timeout event message, if
/// the service just timed out.
#[allow(clippy::too_many_arguments)]
pub(super) async fn calculate_status(
    r: &RayServiceReconciler,
    rs: &RayService,
    status: &mut RayServiceStatuses,
    services: Option<&(Service, Service)>,
    active: Option<&RayCluster>,
    pending: Option<&RayCluster>,
    active_apps: Option<Applications>,
    pending_apps: Option<Applications>,
    route: Option<&HTTPRoute>,
    now: &Time,
) -> Result<Option<String>, RayServiceError> {
    let cfg = &r.config;
    let incremental = is_incremental_upgrade_enabled(&rs.spec, cfg);
    status.observed_generation = rs.metadata.generation.unwrap_or(0);
    status.active_service_status.ray_cluster_status = active.and_then(|c| c.status.clone()).unwrap_or_default();
    status.pending_service_status.ray_cluster_status = pending.and_then(|c| c.status.clone()).unwrap_or_default();
    status.active_service_status.applications = active_apps.unwrap_or_default();
    status.pending_service_status.applications = pending_apps.unwrap_or_default();

    let mut pending_serving = false;
    if let Some((head, serve)) = services {
        if incremental {
            let old_active = status.active_service_status.traffic_routed_percent.unwrap_or(-1);
            let old_pending = status.pending_service_status.traffic_routed_percent.unwrap_or(-1);
            let (a, p) = weights_from_route(route, status);
            if a >= 0 {
                status.active_service_status.traffic_routed_percent = Some(a);
                if a != old_active {
                    status.active_service_status.last_traffic_migrated_time = Some(now.clone());
                }
            }
            if p >= 0 && pending.is_some() {
                status.pending_service_status.traffic_routed_percent = Some(p);
                if p != old_pending {
                    status.pending_service_status.last_traffic_migrated_time = Some(now.clone());
                }
            }
        }
        // `reconcilePromotionAndServingStatus`.
        let points_to = cluster_of(head);
        if points_to != cluster_of(serve) {
            return Err(RayServiceError::State("headSvc and serveSvc are not pointing to the same cluster".into()));
        }
        let pending_name = status.pending_service_status.ray_cluster_name.clone();
        let active_name = status.active_service_status.ray_cluster_name.clone();
        if points_to != pending_name && points_to != active_name {
            return Err(RayServiceError::State(
                "clusterName from services is not equal to pendingCluster or activeCluster".into(),
            ));
        }
        let promote = if incremental {
            if conditions::is_true(&status.conditions, condition::UPGRADE_IN_PROGRESS) {
                !conditions::is_true(&status.conditions, condition::ROLLBACK_IN_PROGRESS)
                    && incremental_upgrade_complete(status, pending)
            } else {
                active_name.is_empty() && !pending_name.is_empty()
            }
        } else {
            active_name != points_to
        };
        if promote {
            tracing::info!(old = %active_name, new = %pending_name, "promoting the pending cluster to active");
            status.active_service_status = std::mem::take(&mut status.pending_service_status);
        }
        pending_serving = points_to == pending_name;
    }

    let mut pending = pending;
    if conditions::is_true(&status.conditions, condition::ROLLBACK_IN_PROGRESS) {
        let strict = cfg.defective(Defect::RollbackWaitsForUnhealthyPending);
        if should_complete_incremental_rollback(
            &status.active_service_status,
            &status.pending_service_status,
            pending,
            strict,
        ) {
            status.pending_service_status = RayServiceStatus::default();
            pending = None;
            conditions::remove(&mut status.conditions, condition::ROLLBACK_IN_PROGRESS);
            set(
                status,
                condition::UPGRADE_IN_PROGRESS,
                false,
                reason::NO_PENDING_CLUSTER,
                "Rollback complete, active Ray cluster exists and no pending Ray cluster",
                now,
            );
        }
    }

    if should_prepare_new_cluster(rs, status, active, pending, pending_serving, cfg) {
        status.pending_service_status =
            RayServiceStatus { ray_cluster_name: r.generate_cluster_name(rs), ..Default::default() };
        tracing::info!(cluster = %status.pending_service_status.ray_cluster_name, "preparing a new pending RayCluster");
        if incremental {
            if status.active_service_status.ray_cluster_name.is_empty() {
                if status.active_service_status.target_capacity.is_none() {
                    status.pending_service_status.target_capacity = Some(100);
                }
            } else if status.pending_service_status.target_capacity.is_none() {
                status.pending_service_status.target_capacity = Some(0);
            }
        }
    }

    let ns = rs.namespace().unwrap_or_default();
    let mut serve_service = rs
        .spec
        .serve_service
        .as_ref()
        .and_then(|s| s.pointer("/metadata/name"))
        .and_then(|n| n.as_str())
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| format!("{}-serve-svc", rs.name_any()));
    if incremental && let Some(a) = active {
        serve_service = format!("{}-serve-svc", a.name_any());
    }
    let mut endpoints = r.count_serve_endpoints(&ns, &serve_service).await?;
    if incremental && let Some(p) = pending {
        endpoints =
            endpoints.saturating_add(r.count_serve_endpoints(&ns, &format!("{}-serve-svc", p.name_any())).await?);
    }
    status.num_serve_endpoints = endpoints;

    let timed_out = calculate_conditions(rs, status, now);
    status.service_status =
        if conditions::is_true(&status.conditions, condition::READY) { "Running".into() } else { String::new() };
    Ok(timed_out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn side(tc: Option<i32>, traffic: Option<i32>) -> RayServiceStatus {
        RayServiceStatus { target_capacity: tc, traffic_routed_percent: traffic, ..Default::default() }
    }

    fn cluster(head_ready: bool) -> RayCluster {
        serde_json::from_value(json!({
            "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "p"},
            "spec": {"headGroupSpec": {"template": {}}},
            "status": {"conditions": [{"type": "HeadPodReady", "status": if head_ready {"True"} else {"False"},
                "reason": "r", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        }))
        .unwrap()
    }

    // Upstream's TestShouldCompleteIncrementalRollback cases, and the v1.6 rule as the defect.
    #[rstest]
    #[case::healthy_drained(side(Some(100), Some(100)), side(Some(0), Some(0)), Some(true), false, true)]
    #[case::unhealthy_with_leftover(side(Some(100), Some(100)), side(Some(40), Some(0)), Some(false), false, true)]
    #[case::no_pending(side(Some(100), Some(100)), side(Some(40), Some(0)), None, false, true)]
    #[case::healthy_holding(side(Some(100), Some(100)), side(Some(50), Some(0)), Some(true), false, false)]
    #[case::active_not_back(side(Some(80), Some(100)), side(Some(0), Some(0)), Some(true), false, false)]
    #[case::strict_rule_waits(side(Some(100), Some(100)), side(Some(40), Some(0)), Some(false), true, false)]
    fn rollback_completion(
        #[case] active: RayServiceStatus,
        #[case] pending: RayServiceStatus,
        #[case] head_ready: Option<bool>,
        #[case] strict: bool,
        #[case] complete: bool,
    ) {
        let rc = head_ready.map(cluster);
        assert_eq!(should_complete_incremental_rollback(&active, &pending, rc.as_ref(), strict), complete);
    }

    #[test]
    fn with_the_gate_on_incremental_fields_always_count_as_changed() {
        let cfg = KubeRayConfig::default();
        let mut s = RayServiceStatuses::default();
        assert!(!inconsistent(&s, &s.clone(), &cfg));
        s.active_service_status.target_capacity = Some(100);
        assert!(inconsistent(&s, &s.clone(), &cfg));
        let mut off = KubeRayConfig::default();
        off.feature_gates.insert(KubeRayGate::RayServiceIncrementalUpgrade, false);
        assert!(!inconsistent(&s, &s.clone(), &off));
    }
}
