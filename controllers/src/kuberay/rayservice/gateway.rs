//! The Gateway API side of an incremental upgrade: `<rs>-gateway` (`createGateway`,
//! `reconcileGateway`, `IsGatewayEqual`, `IsGatewayReady`), `<rs>-httproute` with the weights of
//! the active and pending per-cluster serve services (`createHTTPRoute`, `reconcileHTTPRoute`,
//! `IsHTTPRouteEqual`, `IsHTTPRouteReady`), and the traffic step (`calculateTrafficRoutedPercent`,
//! `GetWeightsFromHTTPRoute`).

use super::cluster::owner;
use super::{RayServiceError, RayServiceReconciler, api_err};
use crate::crds::gateway::{
    Gateway, GatewaySpec, HTTPBackendRef, HTTPPathMatch, HTTPRoute, HTTPRouteMatch, HTTPRouteRule, HTTPRouteSpec,
    Listener, ParentReference,
};
use crate::crds::rayservice::{ClusterUpgradeOptions, RayService, RayServiceStatuses, condition};
use crate::events::EventType;
use crate::kuberay::common::conditions;
use crate::kuberay::common::pods::serve_port;
use crate::kuberay::*;
use kube::ResourceExt;
use kube::api::{Api, PostParams};

/// `<rayservice>-gateway`.
pub(super) fn gateway_name(rs: &RayService) -> String {
    format!("{}-gateway", rs.name_any())
}

/// `<rayservice>-httproute`.
pub(super) fn http_route_name(rs: &RayService) -> String {
    format!("{}-httproute", rs.name_any())
}

fn options(rs: &RayService) -> Option<&ClusterUpgradeOptions> {
    rs.spec.upgrade_strategy.as_ref().and_then(|u| u.cluster_upgrade_options.as_ref())
}

/// `createGateway`: one HTTP listener named `http` on port 80, of the configured class.
pub(super) fn desired_gateway(rs: &RayService) -> Result<Gateway, RayServiceError> {
    let options = options(rs)
        .ok_or_else(|| RayServiceError::State("Missing RayService ClusterUpgradeOptions during upgrade.".into()))?;
    let mut gw = Gateway::new(
        &gateway_name(rs),
        GatewaySpec {
            gateway_class_name: options.gateway_class_name.clone(),
            listeners: vec![Listener {
                name: "http".into(),
                hostname: None,
                port: 80,
                protocol: "HTTP".into(),
                extra: Default::default(),
            }],
            extra: Default::default(),
        },
    );
    gw.metadata.namespace = rs.namespace();
    Ok(gw)
}

/// `IsGatewayEqual`: class, and each listener's name, protocol and port (fields the API or a
/// gateway controller defaults, such as `allowedRoutes`, are not compared).
pub(super) fn is_gateway_equal(existing: &Gateway, desired: &Gateway) -> bool {
    existing.spec.gateway_class_name == desired.spec.gateway_class_name
        && existing.spec.listeners.len() == desired.spec.listeners.len()
        && existing
            .spec
            .listeners
            .iter()
            .zip(&desired.spec.listeners)
            .all(|(e, d)| e.name == d.name && e.protocol == d.protocol && e.port == d.port)
}

/// `IsGatewayReady`: `Accepted` and `Programmed` both True.
pub(super) fn is_gateway_ready(gw: &Gateway) -> bool {
    gw.status.as_ref().is_some_and(|s| {
        conditions::is_true(&s.conditions, "Accepted") && conditions::is_true(&s.conditions, "Programmed")
    })
}

/// `IsHTTPRouteReady`: some parent status for this Gateway has `Accepted` and `ResolvedRefs` True.
pub(super) fn is_http_route_ready(gw: &Gateway, route: &HTTPRoute) -> bool {
    let ns = gw.namespace().unwrap_or_default();
    route.status.as_ref().is_some_and(|s| {
        s.parents.iter().any(|p| {
            p.parent_ref.name == gw.name_any()
                && p.parent_ref.namespace.as_deref().is_none_or(|n| n == ns)
                && conditions::is_true(&p.conditions, "Accepted")
                && conditions::is_true(&p.conditions, "ResolvedRefs")
        })
    })
}

/// `IsHTTPRouteEqual`: hostnames, parent names and namespaces, rule count, matches, filters, and
/// per backend its name, namespace, weight (default 1) and port.
pub(super) fn is_http_route_equal(existing: &HTTPRoute, desired: &HTTPRoute) -> bool {
    let (e, d) = (&existing.spec, &desired.spec);
    if e.hostnames != d.hostnames || e.parent_refs.len() != d.parent_refs.len() || e.rules.len() != d.rules.len() {
        return false;
    }
    let parents_equal = e.parent_refs.iter().zip(&d.parent_refs).all(|(a, b)| {
        a.name == b.name && a.namespace.clone().unwrap_or_default() == b.namespace.clone().unwrap_or_default()
    });
    parents_equal
        && e.rules.iter().zip(&d.rules).all(|(a, b)| {
            a.matches == b.matches
                && a.filters == b.filters
                && a.backend_refs.len() == b.backend_refs.len()
                && a.backend_refs.iter().zip(&b.backend_refs).all(|(x, y)| {
                    x.name == y.name
                        && x.namespace.clone().unwrap_or_default() == y.namespace.clone().unwrap_or_default()
                        && x.weight.unwrap_or(1) == y.weight.unwrap_or(1)
                        && x.port.unwrap_or(0) == y.port.unwrap_or(0)
                })
        })
}

/// `GetWeightsFromHTTPRoute`: the weights of the first rule's backends whose name contains the
/// active and the pending cluster's name (a substring match, as upstream's); -1 when unknown.
pub(super) fn weights_from_route(route: Option<&HTTPRoute>, status: &RayServiceStatuses) -> (i32, i32) {
    let active = &status.active_service_status.ray_cluster_name;
    let pending = &status.pending_service_status.ray_cluster_name;
    let (mut a, mut p) = (-1, -1);
    let Some(rule) = route.and_then(|r| r.spec.rules.first()) else { return (a, p) };
    for b in &rule.backend_refs {
        let w = b.weight.unwrap_or(0);
        if !active.is_empty() && b.name.contains(active.as_str()) {
            a = w;
        }
        if !pending.is_empty() && b.name.contains(pending.as_str()) {
            p = w;
        }
    }
    (a, p)
}

/// `calculateTrafficRoutedPercent`: the next (active, pending) weights. Traffic moves by
/// `stepSizePercent` once `intervalSeconds` passed since the growing side's last migration,
/// toward the pending cluster (only while it is ready, and never past its target capacity), or
/// during a rollback back to the active one (whatever the pending cluster's state, never past
/// the active's target capacity); it stops when the growing side reached its target capacity.
pub(super) fn traffic_step(
    status: &RayServiceStatuses,
    options: &ClusterUpgradeOptions,
    pending_ready: bool,
    now: jiff::Timestamp,
) -> (i32, i32) {
    let active = &status.active_service_status;
    let pending = &status.pending_service_status;
    let mut active_w = active.traffic_routed_percent.unwrap_or(100);
    let mut pending_w = pending.traffic_routed_percent.unwrap_or(0);
    let pending_tc = pending.target_capacity.unwrap_or(0);
    let active_tc = active.target_capacity.unwrap_or(100);
    let rollback = conditions::is_true(&status.conditions, condition::ROLLBACK_IN_PROGRESS);
    if (pending_w == pending_tc && !rollback) || (rollback && active_w == active_tc) {
        return (active_w, pending_w);
    }
    let step = options.step_size_percent.unwrap_or(0);
    let interval = jiff::SignedDuration::from_secs(i64::from(options.interval_seconds.unwrap_or(0)));
    let last = if rollback { &active.last_traffic_migrated_time } else { &pending.last_traffic_migrated_time };
    let due = last.as_ref().is_none_or(|t| now.duration_since(t.0) >= interval);
    if due {
        if rollback {
            active_w = (active_w + step).min(100).min(active_tc);
            pending_w = 100 - active_w;
        } else if pending_ready {
            pending_w = (pending_w + step).min(100).min(pending_tc);
            active_w = 100 - pending_w;
        }
    }
    (active_w, pending_w)
}

impl RayServiceReconciler {
    /// `reconcileGateway`: create the Gateway (owned by the service), or update its spec when
    /// `IsGatewayEqual` says it drifted.
    pub(super) async fn reconcile_gateway(&self, rs: &RayService) -> Result<(), RayServiceError> {
        let mut desired = desired_gateway(rs)?;
        let ns = rs.namespace().unwrap_or_default();
        let name = desired.name_any();
        let api: Api<Gateway> = Api::namespaced(self.client.clone(), &ns);
        match self.cache.gateways.get_or_not_found(&self.client, &ns, &name).await.map(std::sync::Arc::unwrap_or_clone)
        {
            Err(e) if super::is_not_found(&e) => {
                desired.metadata.owner_references = Some(vec![owner(rs)]);
                match api.create(&PostParams::default(), &desired).await {
                    Ok(_) => {
                        self.event(
                            rs,
                            EventType::Normal,
                            "CreatedGateway",
                            format!("Created Gateway for RayService {ns}/{name}"),
                        )
                        .await;
                        Ok(())
                    }
                    Err(e) => {
                        self.event(
                            rs,
                            EventType::Warning,
                            "FailedToCreateGateway",
                            format!("Failed to create Gateway for RayService {ns}/{name}: {e}"),
                        )
                        .await;
                        Err(api_err(format!("create Gateway {name}"))(e))
                    }
                }
            }
            Err(e) => Err(api_err(format!("read Gateway {name}"))(e)),
            Ok(mut existing) => {
                if is_gateway_equal(&existing, &desired) {
                    return Ok(());
                }
                existing.spec = desired.spec;
                match api.replace(&name, &PostParams::default(), &existing).await {
                    Ok(_) => {
                        self.event(rs, EventType::Normal, "UpdatedGateway", format!("Updated the Gateway {ns}/{name}"))
                            .await;
                        Ok(())
                    }
                    Err(e) => {
                        self.event(
                            rs,
                            EventType::Warning,
                            "FailedToUpdateGateway",
                            format!("Failed to update the Gateway {ns}/{name}: {e}"),
                        )
                        .await;
                        Err(api_err(format!("update Gateway {name}"))(e))
                    }
                }
            }
        }
    }

    /// `createHTTPRoute`: `None` until the active cluster exists; one rule (`PathPrefix /`) to the
    /// active cluster's serve service and, once the pending cluster exists, to its one, with the
    /// weights of [`traffic_step`].
    async fn desired_http_route(
        &self,
        rs: &RayService,
        status: &RayServiceStatuses,
        pending_ready: bool,
    ) -> Result<Option<HTTPRoute>, RayServiceError> {
        let ns = rs.namespace().unwrap_or_default();
        let gateway = self
            .cache
            .gateways
            .get_or_not_found(&self.client, &ns, &gateway_name(rs))
            .await
            .map_err(api_err(format!("read Gateway {}", gateway_name(rs))))?;
        let gw_ns = gateway.namespace().unwrap_or_default();
        let Some(active) = self.get_cluster(rs, &status.active_service_status.ray_cluster_name).await? else {
            return Ok(None);
        };
        let pending = self.get_cluster(rs, &status.pending_service_status.ray_cluster_name).await?;
        let options = options(rs)
            .ok_or_else(|| RayServiceError::State("ClusterUpgradeOptions are not set during upgrade.".into()))?;
        let ready = pending_ready || self.config.defective(Defect::TrafficBeforePendingReady);
        let (active_w, pending_w) = traffic_step(status, options, ready, self.clock.now());
        let backend = |cluster: &crate::crds::RayCluster, weight: i32| HTTPBackendRef {
            name: format!("{}-serve-svc", cluster.name_any()),
            namespace: Some(gw_ns.clone()),
            port: Some(serve_port(&cluster.spec)),
            weight: Some(weight),
            ..Default::default()
        };
        let mut backends = vec![backend(&active, active_w)];
        if let Some(p) = &pending {
            backends.push(backend(p, pending_w));
        }
        let mut route = HTTPRoute::new(
            &http_route_name(rs),
            HTTPRouteSpec {
                parent_refs: vec![ParentReference {
                    name: gateway.name_any(),
                    namespace: Some(gw_ns.clone()),
                    ..Default::default()
                }],
                hostnames: Vec::new(),
                rules: vec![HTTPRouteRule {
                    matches: vec![HTTPRouteMatch {
                        path: Some(HTTPPathMatch { type_: Some("PathPrefix".into()), value: Some("/".into()) }),
                        ..Default::default()
                    }],
                    backend_refs: backends,
                    ..Default::default()
                }],
            },
        );
        route.metadata.namespace = Some(gw_ns);
        Ok(Some(route))
    }

    /// `reconcileHTTPRoute`: create the route (owned by the service) or update its spec when it
    /// differs; returns the route as it now is.
    pub(super) async fn reconcile_http_route(
        &self,
        rs: &RayService,
        status: &RayServiceStatuses,
        pending_ready: bool,
    ) -> Result<Option<HTTPRoute>, RayServiceError> {
        let Some(mut desired) = self.desired_http_route(rs, status, pending_ready).await? else { return Ok(None) };
        let ns = desired.namespace().unwrap_or_default();
        let name = desired.name_any();
        let api: Api<HTTPRoute> = Api::namespaced(self.client.clone(), &ns);
        match self.cache.routes.get_or_not_found(&self.client, &ns, &name).await.map(std::sync::Arc::unwrap_or_clone) {
            Err(e) if super::is_not_found(&e) => {
                desired.metadata.owner_references = Some(vec![owner(rs)]);
                match api.create(&PostParams::default(), &desired).await {
                    Ok(_) => {
                        self.event(
                            rs,
                            EventType::Normal,
                            "CreatedHTTPRoute",
                            format!("Created HTTPRoute for RayService {ns}/{name}"),
                        )
                        .await;
                        Ok(Some(desired))
                    }
                    Err(e) => {
                        self.event(
                            rs,
                            EventType::Warning,
                            "FailedToCreateHTTPRoute",
                            format!("Failed to create the HTTPRoute for RayService {ns}/{name}: {e}"),
                        )
                        .await;
                        Err(api_err(format!("create HTTPRoute {name}"))(e))
                    }
                }
            }
            Err(e) => Err(api_err(format!("read HTTPRoute {name}"))(e)),
            Ok(mut existing) => {
                if is_http_route_equal(&existing, &desired) {
                    return Ok(Some(existing));
                }
                existing.spec = desired.spec;
                match api.replace(&name, &PostParams::default(), &existing).await {
                    Ok(updated) => {
                        self.event(
                            rs,
                            EventType::Normal,
                            "UpdatedHTTPRoute",
                            format!("Updated the HTTPRoute {ns}/{name}"),
                        )
                        .await;
                        Ok(Some(updated))
                    }
                    Err(e) => {
                        self.event(
                            rs,
                            EventType::Warning,
                            "FailedToUpdateHTTPRoute",
                            format!("Failed to update the HTTPRoute {ns}/{name}: {e}"),
                        )
                        .await;
                        Err(api_err(format!("update HTTPRoute {name}"))(e))
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use rstest::rstest;

    fn at(s: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_767_225_600 + s).unwrap()
    }

    fn status(pending_tc: i32, weights: (i32, i32), last: Option<i64>) -> RayServiceStatuses {
        let mut s = RayServiceStatuses::default();
        s.active_service_status.ray_cluster_name = "svc-a".into();
        s.active_service_status.target_capacity = Some(100);
        s.active_service_status.traffic_routed_percent = Some(weights.0);
        s.pending_service_status.ray_cluster_name = "svc-b".into();
        s.pending_service_status.target_capacity = Some(pending_tc);
        s.pending_service_status.traffic_routed_percent = Some(weights.1);
        s.pending_service_status.last_traffic_migrated_time = last.map(|t| Time(at(t)));
        s
    }

    fn options(step: i32, interval: i32) -> ClusterUpgradeOptions {
        ClusterUpgradeOptions {
            max_surge_percent: Some(100),
            step_size_percent: Some(step),
            interval_seconds: Some(interval),
            gateway_class_name: "c".into(),
        }
    }

    // Upstream's TestCreateHTTPRoute cases.
    #[rstest]
    #[case::not_ready(60, (100, 0), None, false, 100, (100, 0))]
    #[case::interval_not_elapsed(60, (100, 0), Some(95), true, 100, (100, 0))]
    #[case::elapsed(60, (100, 0), Some(0), true, 100, (90, 10))]
    #[case::capped_by_target_capacity(5, (100, 0), Some(0), true, 100, (95, 5))]
    #[case::stops_at_target_capacity(20, (80, 20), Some(0), true, 100, (80, 20))]
    #[case::never_migrated(60, (100, 0), None, true, 0, (90, 10))]
    fn traffic_steps(
        #[case] pending_tc: i32,
        #[case] weights: (i32, i32),
        #[case] last: Option<i64>,
        #[case] ready: bool,
        #[case] now: i64,
        #[case] expected: (i32, i32),
    ) {
        assert_eq!(traffic_step(&status(pending_tc, weights, last), &options(10, 10), ready, at(now)), expected);
    }

    #[test]
    fn rollback_moves_traffic_back_without_waiting_for_the_pending_cluster() {
        let mut s = status(60, (40, 60), Some(0));
        conditions::set(
            &mut s.conditions,
            condition::ROLLBACK_IN_PROGRESS,
            true,
            "DesiredClusterSpecChanged",
            "",
            &Time(at(0)),
            None,
        );
        s.active_service_status.last_traffic_migrated_time = Some(Time(at(0)));
        assert_eq!(traffic_step(&s, &options(10, 10), false, at(10)), (50, 50));
        assert_eq!(traffic_step(&s, &options(10, 10), false, at(5)), (40, 60));
    }

    #[test]
    fn weights_are_found_by_substring() {
        let route: HTTPRoute = serde_json::from_value(serde_json::json!({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "r"},
            "spec": {"rules": [{"backendRefs": [{"name": "svc-a-serve-svc", "weight": 90}, {"name": "svc-b-serve-svc", "weight": 10}]}]},
        }))
        .unwrap();
        assert_eq!(weights_from_route(Some(&route), &status(0, (0, 0), None)), (90, 10));
        assert_eq!(weights_from_route(None, &status(0, (0, 0), None)), (-1, -1));
    }

    #[test]
    fn defaulted_gateway_fields_do_not_count_as_drift() {
        let rs: RayService = serde_json::from_value(serde_json::json!({
            "apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "svc", "namespace": "ns"},
            "spec": {"upgradeStrategy": {"type": "NewClusterWithIncrementalUpgrade",
                "clusterUpgradeOptions": {"gatewayClassName": "istio", "stepSizePercent": 10, "intervalSeconds": 30}},
                "rayClusterConfig": {"headGroupSpec": {"template": {}}}},
        }))
        .unwrap();
        let desired = desired_gateway(&rs).unwrap();
        let mut existing = desired.clone();
        existing.spec.listeners[0]
            .extra
            .insert("allowedRoutes".into(), serde_json::json!({"namespaces": {"from": "Same"}}));
        assert!(is_gateway_equal(&existing, &desired));
        existing.spec.gateway_class_name = "other".into();
        assert!(!is_gateway_equal(&existing, &desired));
    }
}
