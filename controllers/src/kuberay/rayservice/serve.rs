//! Serve on a RayService's clusters: the dashboard client (`dashboard_httpclient.go`), config
//! submission and application status (`reconcileServe`, `getAndCheckServeStatus`,
//! `updateServeDeployment`), target capacity during an incremental upgrade
//! (`checkIfNeedTargetCapacityUpdate`, `reconcileServeTargetCapacity`,
//! `applyServeTargetCapacity`), and the head pod's `ray.io/serve` label from the proxy's health
//! (`updateHeadPodServeLabel`).

use super::gateway::{gateway_name, http_route_name, is_gateway_ready, is_http_route_ready};
use super::{RayServiceError, RayServiceReconciler, api_err, is_incremental_upgrade_enabled};
use crate::crds::RayCluster;
use crate::crds::rayservice::{AppStatus, RayService, RayServiceStatuses, ServeDeploymentStatus, condition};
use crate::events::EventType;
use crate::kuberay::common::conditions;
use crate::kuberay::*;
use bytes::Bytes;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use serde_json::Value;
use std::collections::BTreeMap;

/// Serve application statuses as KubeRay records them, by application name.
pub(super) type Applications = BTreeMap<String, AppStatus>;

const SERVE_PATH: &str = "/api/serve/applications/";

fn issue5(err: impl std::fmt::Display) -> String {
    format!(
        "fail to create / update Serve applications. If you observe this error consistently, please check \"Issue 5: Fail to create / update Serve applications.\" in https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting/rayservice-troubleshooting.html#kuberay-raysvc-troubleshoot for more details. err: {err}"
    )
}

/// `checkIfNeedSubmitServeApplications`: submit when nothing is cached for the cluster, when the
/// cluster reports no application (its head restarted without GCS fault tolerance), or when the
/// config changed.
pub(super) fn need_submit(cached: &str, config: &str, apps: &Applications) -> (bool, &'static str) {
    if cached.is_empty() {
        (true, "Nothing has been cached for the cluster.")
    } else if apps.is_empty() {
        (
            true,
            "No Serve application found in the RayCluster. A possible reason is that the head Pod crashed and GCS FT was not enabled.",
        )
    } else if cached != config {
        (true, "Current V2 Serve config doesn't match cached Serve config.")
    } else {
        (false, "Current V2 Serve config matches cached Serve config.")
    }
}

/// `getAndCheckServeStatus`'s conversion: the applications of a Serve details answer, and
/// whether all are RUNNING (and there is at least one).
pub(super) fn applications_of(details: &Value) -> (bool, Applications) {
    let mut ready = true;
    let mut apps = Applications::new();
    for (name, app) in details.get("applications").and_then(Value::as_object).into_iter().flatten() {
        let name = if name.is_empty() { "default".to_string() } else { name.clone() };
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        let status = text(app, "status");
        if status != "RUNNING" {
            ready = false;
        }
        let deployments = app
            .get("deployments")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(d, v)| (d.clone(), ServeDeploymentStatus { status: text(v, "status"), message: text(v, "message") }))
            .collect();
        apps.insert(name, AppStatus { deployments, status, message: text(app, "message") });
    }
    if apps.is_empty() {
        ready = false;
    }
    (ready, apps)
}

/// What `reconcileServeTargetCapacity` decides for one cluster: nothing, or a new capacity.
pub(super) fn target_capacity_goal(
    status: &RayServiceStatuses,
    cluster: &str,
    max_surge: i32,
    rollback: bool,
    past_max_surge_defect: bool,
) -> Option<i32> {
    let active = &status.active_service_status;
    let pending = &status.pending_service_status;
    let active_tc = active.target_capacity.unwrap_or(100);
    let pending_tc = pending.target_capacity.unwrap_or(0);
    if rollback {
        // Back to the active cluster: wait for its traffic to catch up, then shrink the pending
        // cluster first, then grow the active one.
        if active_tc != active.traffic_routed_percent.unwrap_or(0) {
            return None;
        }
        if active_tc + pending_tc > 100 {
            return (cluster == pending.ray_cluster_name).then(|| (pending_tc - max_surge).max(0));
        }
        return (cluster == active.ray_cluster_name).then(|| (active_tc + max_surge).min(100));
    }
    if pending_tc != pending.traffic_routed_percent.unwrap_or(0) {
        return None;
    }
    if cluster == active.ray_cluster_name {
        (active_tc + pending_tc > 100).then(|| (active_tc - max_surge).max(0))
    } else if cluster == pending.ray_cluster_name {
        (active_tc + pending_tc <= 100)
            .then(|| if past_max_surge_defect { 100 } else { (pending_tc + max_surge).min(100) })
    } else {
        None
    }
}

impl RayServiceReconciler {
    async fn dashboard_url(&self, cluster: &RayCluster) -> Result<String, RayServiceError> {
        let ns = cluster.namespace().unwrap_or_default();
        let name = crate::kuberay::common::pods::head_service_name(cluster);
        let svc = self
            .cache
            .k8s_services
            .get_or_not_found(&self.client, &ns, &name)
            .await
            .map_err(api_err(format!("read the head service {name}")))?;
        let port = svc
            .spec
            .as_ref()
            .and_then(|s| s.ports.as_ref())
            .and_then(|ps| ps.iter().find(|p| p.name.as_deref() == Some("dashboard")))
            .map(|p| p.port)
            .ok_or_else(|| RayServiceError::State("dashboard port is not found".into()))?;
        Ok(format!("{name}.{ns}.svc.cluster.local:{port}"))
    }

    async fn get_serve_details(&self, url: &str) -> Result<Value, RayServiceError> {
        let fail = |e: String| {
            RayServiceError::Serve(format!(
                "failed to get Serve application statuses from the dashboard. If you observe this error consistently, please check https://docs.ray.io/en/latest/cluster/kubernetes/troubleshooting/rayservice-troubleshooting.html for more details. err: failed to get serve details: {e}"
            ))
        };
        let request = http::Request::get(format!("http://{url}{SERVE_PATH}?api_type=declarative"))
            .body(Bytes::new())
            .map_err(|e| fail(e.to_string()))?;
        let response = self
            .http
            .send(request)
            .await
            .map_err(|e| fail(format!("Get \"http://{url}{SERVE_PATH}?api_type=declarative\": {e}")))?;
        let body = String::from_utf8_lossy(response.body()).to_string();
        if !response.status().is_success() {
            return Err(fail(format!("GetServeDetails fail: {} {body}", response.status())));
        }
        serde_json::from_str(&body)
            .map_err(|_| fail(format!("GetServeDetails failed. Failed to unmarshal bytes: {body}")))
    }

    async fn update_deployments(&self, url: &str, config: &Value) -> Result<(), RayServiceError> {
        let request = http::Request::put(format!("http://{url}{SERVE_PATH}"))
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Bytes::from(config.to_string()))
            .map_err(|e| RayServiceError::Serve(issue5(e)))?;
        let response = self
            .http
            .send(request)
            .await
            .map_err(|e| RayServiceError::Serve(issue5(format!("Put \"http://{url}{SERVE_PATH}\": {e}"))))?;
        if !response.status().is_success() {
            let body = String::from_utf8_lossy(response.body()).to_string();
            return Err(RayServiceError::Serve(issue5(format!(
                "UpdateDeployments fail: {} {body}",
                response.status()
            ))));
        }
        Ok(())
    }

    fn cached_config(&self, rs: &RayService, cluster: &str) -> String {
        let key = format!("{}/{}", rs.namespace().unwrap_or_default(), rs.name_any());
        self.serve_configs.lock().get(&key).and_then(|m| m.get(cluster).cloned()).unwrap_or_default()
    }

    fn cache_config(&self, rs: &RayService, cluster: &str) {
        if rs.spec.serve_config_v2.is_empty() {
            return;
        }
        let key = format!("{}/{}", rs.namespace().unwrap_or_default(), rs.name_any());
        self.serve_configs.lock().entry(key).or_default().insert(cluster.to_string(), rs.spec.serve_config_v2.clone());
    }

    /// `updateServeDeployment`: submit `serveConfigV2` (with the cluster's `target_capacity` in
    /// incremental mode) and cache it.
    async fn update_serve_deployment(
        &self,
        rs: &RayService,
        status: &RayServiceStatuses,
        url: &str,
        cluster: &str,
    ) -> Result<(), RayServiceError> {
        let mut config: Value = if rs.spec.serve_config_v2.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            serde_saphyr::from_str(&rs.spec.serve_config_v2)
                .map_err(|e| RayServiceError::Serve(format!("serveConfigV2 is not YAML: {e}")))?
        };
        if is_incremental_upgrade_enabled(&rs.spec, &self.config) {
            let active = &status.active_service_status;
            let pending = &status.pending_service_status;
            let capacity = if cluster == active.ray_cluster_name && active.target_capacity.is_some() {
                active.target_capacity
            } else if cluster == pending.ray_cluster_name {
                pending.target_capacity
            } else {
                None
            };
            if let (Some(c), Some(map)) = (capacity, config.as_object_mut()) {
                map.insert("target_capacity".into(), Value::from(c));
            }
        }
        self.update_deployments(url, &config).await?;
        self.cache_config(rs, cluster);
        Ok(())
    }

    /// `reconcileServe`: the cluster's Serve applications and whether they are all running
    /// (`None` before the head is ready); submits the config when needed (not to the active
    /// cluster during an incremental upgrade, not to the pending one during a rollback) and, in
    /// an incremental upgrade, moves this cluster's target capacity.
    pub(super) async fn reconcile_serve(
        &self,
        rs: &RayService,
        status: &mut RayServiceStatuses,
        cluster: &RayCluster,
    ) -> Result<(bool, Option<Applications>), RayServiceError> {
        let ns = cluster.namespace().unwrap_or_default();
        let name = cluster.name_any();
        if self.config.gate(KubeRayGate::RayClusterStatusConditions) {
            let head_ready =
                cluster.status.as_ref().is_some_and(|s| conditions::is_true(&s.conditions, "HeadPodReady"));
            if !head_ready {
                return Ok((false, None));
            }
        } else if !self.head_pod_running_and_ready(cluster).await.unwrap_or(false) {
            return Ok((false, None));
        }
        let url = self.dashboard_url(cluster).await?;
        let incremental = is_incremental_upgrade_enabled(&rs.spec, &self.config);
        let is_active = name == status.active_service_status.ray_cluster_name;
        let upgrading = incremental && conditions::is_true(&status.conditions, condition::UPGRADE_IN_PROGRESS);
        let rolling_back = incremental && conditions::is_true(&status.conditions, condition::ROLLBACK_IN_PROGRESS);
        let skip_config_update = (is_active && upgrading && !rolling_back) || (!is_active && rolling_back);

        let cached = self.cached_config(rs, &name);
        let details = self.get_serve_details(&url).await?;
        let (ready, apps) = applications_of(&details);
        let (submit, why) = need_submit(&cached, &rs.spec.serve_config_v2, &apps);
        tracing::debug!(cluster = %name, submit, why, "checkIfNeedSubmitServeApplications");
        if submit && !skip_config_update {
            if let Err(e) = self.update_serve_deployment(rs, status, &url, &name).await {
                self.event(
                    rs,
                    EventType::Warning,
                    "FailedToUpdateServeApplications",
                    format!("Failed to update serve applications to the RayCluster {ns}/{name}: {e}"),
                )
                .await;
                return Err(e);
            }
            self.event(
                rs,
                EventType::Normal,
                "UpdatedServeApplications",
                format!("Updated serve applications to the RayCluster {ns}/{name}"),
            )
            .await;
        }
        if upgrading {
            let (update, why) = self.need_target_capacity_update(rs, status).await;
            tracing::debug!(cluster = %name, update, why, "checkIfNeedTargetCapacityUpdate");
            if update {
                if let Err(e) = self.reconcile_serve_target_capacity(rs, status, cluster, &url).await {
                    self.event(
                        rs,
                        EventType::Warning,
                        "FailedToUpdateTargetCapacity",
                        format!(
                            "Failed to update target_capacity of serve applications to the RayCluster {ns}/{name}: {e}"
                        ),
                    )
                    .await;
                    return Err(e);
                }
                self.event(
                    rs,
                    EventType::Normal,
                    "UpdatedServeTargetCapacity",
                    format!("Updated target_capacity of serve applications to to the RayCluster {ns}/{name}"),
                )
                .await;
            }
        }
        Ok((ready, Some(apps)))
    }

    /// `checkIfNeedTargetCapacityUpdate`: both clusters named, Gateway and HTTPRoute ready, and
    /// the capacities not at their goal yet.
    async fn need_target_capacity_update(&self, rs: &RayService, status: &RayServiceStatuses) -> (bool, String) {
        let active = &status.active_service_status;
        let pending = &status.pending_service_status;
        if active.ray_cluster_name.is_empty() || pending.ray_cluster_name.is_empty() {
            return (
                false,
                "Both active and pending RayCluster instances are required for NewClusterWithIncrementalUpgrade."
                    .into(),
            );
        }
        let ns = rs.namespace().unwrap_or_default();
        let gateway = match self
            .cache
            .gateways
            .get_or_not_found(&self.client, &ns, &gateway_name(rs))
            .await
            .map(std::sync::Arc::unwrap_or_clone)
        {
            Ok(g) => g,
            Err(e) => return (false, format!("Failed to retrieve Gateway for RayService: {e}")),
        };
        if !is_gateway_ready(&gateway) {
            return (false, "Gateway for RayService NewClusterWithIncrementalUpgrade is not ready.".into());
        }
        let route = match self
            .cache
            .routes
            .get_or_not_found(&self.client, &ns, &http_route_name(rs))
            .await
            .map(std::sync::Arc::unwrap_or_clone)
        {
            Ok(r) => r,
            Err(e) => return (false, format!("Failed to retrieve HTTPRoute for RayService: {e}")),
        };
        if !is_http_route_ready(&gateway, &route) {
            return (false, "HTTPRoute for RayService NewClusterWithIncrementalUpgrade is not ready.".into());
        }
        let (Some(active_tc), Some(_)) = (active.target_capacity, active.traffic_routed_percent) else {
            return (true, "Active RayServiceStatus missing TargetCapacity or TrafficRoutedPercent.".into());
        };
        let (Some(pending_tc), Some(pending_traffic)) = (pending.target_capacity, pending.traffic_routed_percent)
        else {
            return (true, "Pending RayServiceStatus missing TargetCapacity or TrafficRoutedPercent.".into());
        };
        if conditions::is_true(&status.conditions, condition::ROLLBACK_IN_PROGRESS) {
            if active_tc == 100 && pending_tc == 0 {
                return (false, "Rollback complete: all traffic has been restored to the active cluster.".into());
            }
            return (true, "Rollback in progress: traffic is being restored to the active cluster.".into());
        }
        if active_tc == 0 && pending_tc == 100 {
            (
                false,
                "All traffic has migrated to the upgraded cluster and NewClusterWithIncrementalUpgrade is complete."
                    .into(),
            )
        } else if pending_tc < 100 || pending_traffic < 100 {
            (true, "Pending RayCluster has not finished scaling up.".into())
        } else {
            (true, "Active RayCluster TargetCapacity has not finished scaling down.".into())
        }
    }

    /// `reconcileServeTargetCapacity` then `applyServeTargetCapacity`: this cluster's next
    /// capacity, submitted with its cached config (skipped when that config already holds the
    /// goal — comparing with the cached original, not the last capacity applied: kuberay#4777),
    /// and recorded in the status only after the dashboard took it.
    async fn reconcile_serve_target_capacity(
        &self,
        rs: &RayService,
        status: &mut RayServiceStatuses,
        cluster: &RayCluster,
        url: &str,
    ) -> Result<(), RayServiceError> {
        if status.active_service_status.target_capacity.is_none() {
            status.active_service_status.target_capacity = Some(100);
        }
        if status.pending_service_status.target_capacity.is_none() {
            status.pending_service_status.target_capacity = Some(0);
        }
        let options =
            rs.spec.upgrade_strategy.as_ref().and_then(|u| u.cluster_upgrade_options.as_ref()).ok_or_else(|| {
                RayServiceError::State("Missing RayService ClusterUpgradeOptions during upgrade".into())
            })?;
        let max_surge = options.max_surge_percent.unwrap_or(100);
        let rollback = conditions::is_true(&status.conditions, condition::ROLLBACK_IN_PROGRESS);
        let name = cluster.name_any();
        let defect = self.config.defective(Defect::TargetCapacityPastMaxSurge);
        let Some(goal) = target_capacity_goal(status, &name, max_surge, rollback, defect) else { return Ok(()) };
        let mut cached = self.cached_config(rs, &name);
        if cached.is_empty() {
            cached = rs.spec.serve_config_v2.clone();
        }
        let mut config: Value = if cached.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            serde_saphyr::from_str(&cached)
                .map_err(|e| RayServiceError::Serve(format!("cached Serve config is not YAML: {e}")))?
        };
        // Go decodes the cached YAML with k8s.io/apimachinery's yaml.Unmarshal, whole numbers as
        // int64, and the check asserts float64: only a fraction (50.5 against a goal of 50) ever
        // matches, and then the step looks applied although it never was (kuberay#4777).
        let fraction = config.get("target_capacity").and_then(Value::as_f64).filter(|c| c.fract() != 0.0);
        if fraction.is_some_and(|c| c as i32 == goal) {
            return Ok(());
        }
        if let Some(map) = config.as_object_mut() {
            map.insert("target_capacity".into(), Value::from(goal));
        }
        self.update_deployments(url, &config).await?;
        if name == status.active_service_status.ray_cluster_name {
            status.active_service_status.target_capacity = Some(goal);
        } else if name == status.pending_service_status.ray_cluster_name {
            status.pending_service_status.target_capacity = Some(goal);
        }
        Ok(())
    }

    async fn head_pod(&self, cluster: &RayCluster) -> Result<Option<Pod>, RayServiceError> {
        let selector = format!("{RAY_CLUSTER_LABEL}={},{RAY_NODE_TYPE_LABEL}=head", cluster.name_any());
        let pods = self
            .cache
            .pods
            .list(&self.client, &cluster.namespace().unwrap_or_default(), &selector)
            .await
            .map_err(api_err("list head pods"))?;
        if pods.len() > 1 {
            return Err(RayServiceError::State(format!(
                "Found multiple head Pods for RayCluster {}/{}",
                cluster.namespace().unwrap_or_default(),
                cluster.name_any()
            )));
        }
        Ok(pods.into_iter().next())
    }

    async fn head_pod_running_and_ready(&self, cluster: &RayCluster) -> Result<bool, RayServiceError> {
        let Some(pod) = self.head_pod(cluster).await? else {
            return Err(RayServiceError::State(format!(
                "found 0 head. cluster name {}, namespace {}",
                cluster.name_any(),
                cluster.namespace().unwrap_or_default()
            )));
        };
        let status = pod.status.as_ref();
        let running = status.and_then(|s| s.phase.as_deref()) == Some("Running");
        let ready = status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
        Ok(running && ready)
    }

    /// `updateHeadPodServeLabel`: `ray.io/serve` on the head pod is `true` iff its Serve proxy
    /// answers `/-/healthz` with 200 (always `false` with `excludeHeadPodFromServeSvc`). A named
    /// cluster without a head pod yet fails the pass, as upstream's does.
    pub(super) async fn update_head_pod_serve_label(
        &self,
        rs: &RayService,
        cluster: Option<&RayCluster>,
    ) -> Result<(), RayServiceError> {
        let Some(cluster) = cluster else { return Ok(()) };
        let Some(mut pod) = self.head_pod(cluster).await? else {
            return Err(RayServiceError::State(format!(
                "found 0 head. cluster name {}, namespace {}",
                cluster.name_any(),
                cluster.namespace().unwrap_or_default()
            )));
        };
        let new_label = if rs.spec.exclude_head_pod_from_serve_svc {
            "false"
        } else {
            let ip = pod.status.as_ref().and_then(|s| s.pod_ip.clone()).unwrap_or_default();
            let port = pod
                .spec
                .as_ref()
                .and_then(|s| s.containers.first())
                .and_then(|c| c.ports.as_ref())
                .and_then(|ps| ps.iter().find(|p| p.name.as_deref() == Some("serve")))
                .map(|p| p.container_port)
                .unwrap_or(8000);
            let healthy = match http::Request::get(format!("http://{ip}:{port}/-/healthz")).body(Bytes::new()) {
                Ok(request) => self.http.send(request).await.is_ok_and(|r| r.status() == http::StatusCode::OK),
                Err(_) => false,
            };
            if healthy { "true" } else { "false" }
        };
        let old = pod.labels().get(RAY_SERVE_LABEL).cloned().unwrap_or_default();
        if old == new_label {
            return Ok(());
        }
        let ns = pod.namespace().unwrap_or_default();
        let name = pod.name_any();
        pod.labels_mut().insert(RAY_SERVE_LABEL.into(), new_label.into());
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        match api.replace(&name, &PostParams::default(), &pod).await {
            Ok(_) => {
                self.event(
                    rs,
                    EventType::Normal,
                    "UpdatedHeadPodServeLabel",
                    format!("Updated the serve label to {new_label:?} for the Head Pod {ns}/{name}"),
                )
                .await;
                Ok(())
            }
            Err(e) => {
                self.event(
                    rs,
                    EventType::Warning,
                    "FailedToUpdateHeadPodServeLabel",
                    format!("Failed to update the serve label to {new_label:?} for the Head Pod {ns}/{name}: {e}"),
                )
                .await;
                Err(api_err(format!("update the head pod {name}"))(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn statuses(active: (i32, i32), pending: (i32, i32)) -> RayServiceStatuses {
        let mut s = RayServiceStatuses::default();
        s.active_service_status.ray_cluster_name = "a".into();
        s.active_service_status.target_capacity = Some(active.0);
        s.active_service_status.traffic_routed_percent = Some(active.1);
        s.pending_service_status.ray_cluster_name = "p".into();
        s.pending_service_status.target_capacity = Some(pending.0);
        s.pending_service_status.traffic_routed_percent = Some(pending.1);
        s
    }

    // Upstream's TestReconcileServeTargetCapacity examples and the worked example's phases.
    #[rstest]
    #[case::pending_scales_up((70, 90), (10, 10), "p", 20, false, Some(30))]
    #[case::active_waits_its_turn((70, 90), (10, 10), "a", 20, false, None)]
    #[case::active_scales_down((80, 70), (30, 30), "a", 20, false, Some(60))]
    #[case::deferred_until_traffic_catches_up((100, 95), (20, 5), "p", 20, false, None)]
    #[case::first_step((100, 100), (0, 0), "p", 20, false, Some(20))]
    #[case::last_step((20, 0), (100, 100), "a", 20, false, Some(0))]
    #[case::rollback_shrinks_pending_first((100, 100), (40, 0), "p", 20, true, Some(20))]
    #[case::rollback_pending_waits_at_100((60, 60), (40, 40), "p", 20, true, None)]
    #[case::rollback_grows_active((60, 60), (20, 40), "a", 20, true, Some(80))]
    #[case::rollback_waits_for_active_traffic((80, 70), (20, 30), "a", 20, true, None)]
    fn target_capacity_steps(
        #[case] active: (i32, i32),
        #[case] pending: (i32, i32),
        #[case] cluster: &str,
        #[case] surge: i32,
        #[case] rollback: bool,
        #[case] goal: Option<i32>,
    ) {
        assert_eq!(target_capacity_goal(&statuses(active, pending), cluster, surge, rollback, false), goal);
    }

    #[test]
    fn applications_are_ready_only_when_all_run() {
        let (ready, apps) = applications_of(&json!({"applications": {
            "a": {"status": "RUNNING", "deployments": {"d": {"status": "HEALTHY"}}},
            "": {"status": "DEPLOYING", "message": "m"}}}));
        assert!(!ready);
        assert_eq!(apps["default"].message, "m");
        assert_eq!(apps["a"].deployments["d"].status, "HEALTHY");
        assert!(!applications_of(&json!({"applications": {}})).0);
        assert!(applications_of(&json!({"applications": {"a": {"status": "RUNNING"}}})).0);
    }

    #[rstest]
    #[case("", "c", false, true)]
    #[case("c", "c", true, true)]
    #[case("c", "d", false, true)]
    #[case("c", "c", false, false)]
    fn when_the_config_is_submitted(
        #[case] cached: &str,
        #[case] config: &str,
        #[case] no_apps: bool,
        #[case] submit: bool,
    ) {
        let mut apps = Applications::new();
        if !no_apps {
            apps.insert("a".into(), AppStatus::default());
        }
        assert_eq!(need_submit(cached, config, &apps).0, submit);
    }
}
