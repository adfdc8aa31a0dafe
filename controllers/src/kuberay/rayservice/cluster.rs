//! The RayClusters a RayService owns: construction (`constructRayClusterForRayService`),
//! creation of the named pending cluster, in-place updates (`shouldUpdateCluster`,
//! `modifyRayCluster`), when to prepare a new cluster (`shouldPrepareNewCluster`), and the
//! deletion of dangling clusters after the delay (`cleanUpRayClusterInstance`).

use super::{
    RAY_CLUSTER_DELETION_DELAY, RayServiceError, RayServiceReconciler, api_err, is_incremental_upgrade_enabled,
};
use crate::crds::RayCluster;
use crate::crds::rayservice::{RayService, RayServiceStatuses, condition};
use crate::events::EventType;
use crate::kuberay::common::conditions;
use crate::kuberay::common::hash::spec_hash_with;
use crate::kuberay::common::suspend::{child_spec_at_creation, cluster_spec_for_hashing, spec_for_in_place_update};
use crate::kuberay::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};
use std::collections::HashMap;

/// The label selector of the clusters (and services) a RayService owns
/// (`RayServiceRayClustersAssociationOptions`).
pub(super) fn association_selector(rs: &RayService) -> String {
    format!("{RAY_ORIGINATED_FROM_CR_NAME_LABEL}={},{RAY_ORIGINATED_FROM_CRD_LABEL}=RayService", rs.name_any())
}

/// The controller owner reference to the RayService.
pub(super) fn owner(rs: &RayService) -> OwnerReference {
    OwnerReference {
        api_version: "ray.io/v1".into(),
        kind: "RayService".into(),
        name: rs.name_any(),
        uid: rs.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The hash of the spec the service wants (`rayClusterSpecForHashing`, then the RayCluster
/// hash): what the clusters' `ray.io/hash-without-replicas-and-workers-to-delete` is compared to.
pub(super) fn goal_hash(rs: &RayService, cfg: &KubeRayConfig) -> String {
    goal_hash_of(rs, None, cfg)
}

/// The hash of the spec the service wants, its worker groups cut to the first `groups` when
/// given. A pass asks for it several times, and every pass of the same generation asks again:
/// the answers are kept per service uid and generation (which fix the spec), on the thread
/// (a row's controllers share one).
fn goal_hash_of(rs: &RayService, groups: Option<usize>, cfg: &KubeRayConfig) -> String {
    // Service uid, generation, groups kept, and the one setting `spec_hash_with` reads (the
    // replicas-in-the-hash defect).
    type Key = (String, i64, Option<usize>, bool);
    thread_local! {
        static KEPT: std::cell::RefCell<HashMap<Key, String>> = std::cell::RefCell::new(HashMap::new());
    }
    let compute = || {
        let mut goal = cluster_spec_for_hashing(&rs.spec.ray_cluster_spec);
        if let Some(n) = groups {
            goal.worker_group_specs.truncate(n);
        }
        spec_hash_with(&goal, cfg)
    };
    let (Some(uid), Some(generation)) = (rs.metadata.uid.clone(), rs.metadata.generation) else { return compute() };
    let key = (uid, generation, groups, cfg.defective(crate::kuberay::Defect::HashIncludesReplicas));
    if let Some(hash) = KEPT.with(|k| k.borrow().get(&key).cloned()) {
        return hash;
    }
    let hash = compute();
    KEPT.with(|k| {
        let mut kept = k.borrow_mut();
        if kept.len() >= 256 {
            kept.clear();
        }
        kept.insert(key, hash.clone());
    });
    hash
}

/// `isClusterSpecHashEqual`. With `partial`, only the cluster's first
/// `ray.io/num-worker-groups` groups are compared (groups appended at the end are an in-place
/// update); an unreadable count compares equal, as upstream's `Atoi` error path does.
pub(super) fn is_cluster_spec_hash_equal(
    rs: &RayService,
    cluster: &RayCluster,
    partial: bool,
    cfg: &KubeRayConfig,
) -> bool {
    let cluster_hash = cluster.annotations().get(HASH_WITHOUT_REPLICAS_ANNOTATION).cloned().unwrap_or_default();
    let goal_hash = if !partial {
        goal_hash_of(rs, None, cfg)
    } else {
        let Ok(groups) =
            cluster.annotations().get(NUM_WORKER_GROUPS_ANNOTATION).map(String::as_str).unwrap_or("").parse::<usize>()
        else {
            return true;
        };
        if rs.spec.ray_cluster_spec.worker_group_specs.len() >= groups {
            goal_hash_of(rs, Some(groups), cfg)
        } else {
            String::new()
        }
    };
    cluster_hash == goal_hash
}

/// `shouldUpdateCluster`: update in place when the operator version changed (active only, and
/// not during an upgrade) or only worker groups were appended.
pub(super) fn should_update_cluster(
    rs: &RayService,
    status: &RayServiceStatuses,
    cluster: Option<&RayCluster>,
    is_active: bool,
    cfg: &KubeRayConfig,
) -> bool {
    let Some(cluster) = cluster else { return false };
    if is_active {
        if conditions::is_true(&status.conditions, condition::UPGRADE_IN_PROGRESS) {
            return false;
        }
        let version = cluster.annotations().get(KUBERAY_VERSION_ANNOTATION).map(String::as_str).unwrap_or("");
        if version != cfg.kuberay_version {
            return true;
        }
    }
    if is_cluster_spec_hash_equal(rs, cluster, false, cfg) {
        return false;
    }
    is_cluster_spec_hash_equal(rs, cluster, true, cfg)
}

/// `shouldPrepareNewCluster`: not while the pending cluster serves or a rollback runs; yes when
/// there is no cluster at all; else when the spec differs (fully, not just by appended groups)
/// from the pending cluster, or the active one when there is no pending, and zero-downtime
/// upgrades are on.
pub(super) fn should_prepare_new_cluster(
    rs: &RayService,
    status: &RayServiceStatuses,
    active: Option<&RayCluster>,
    pending: Option<&RayCluster>,
    pending_serving: bool,
    cfg: &KubeRayConfig,
) -> bool {
    if pending_serving || conditions::is_true(&status.conditions, condition::ROLLBACK_IN_PROGRESS) {
        return false;
    }
    let Some(cluster) = pending.or(active) else { return true };
    if is_cluster_spec_hash_equal(rs, cluster, false, cfg) || is_cluster_spec_hash_equal(rs, cluster, true, cfg) {
        return false;
    }
    super::is_zero_downtime_upgrade_enabled(&rs.spec, cfg)
}

/// `constructRayClusterForRayService`: the service's labels and annotations plus the origin
/// labels, the spec hash, the number of worker groups and the operator version; the spec as
/// written (nested `suspend` included); owned by the service. The pending cluster of an
/// incremental upgrade starts with every group's `replicas` unset.
pub(super) fn construct_cluster(
    rs: &RayService,
    status: &RayServiceStatuses,
    name: &str,
    cfg: &KubeRayConfig,
) -> RayCluster {
    let mut labels = rs.labels().clone();
    labels.insert(RAY_ORIGINATED_FROM_CR_NAME_LABEL.into(), rs.name_any());
    labels.insert(RAY_ORIGINATED_FROM_CRD_LABEL.into(), "RayService".into());
    let mut annotations = rs.annotations().clone();
    annotations.insert(HASH_WITHOUT_REPLICAS_ANNOTATION.into(), goal_hash(rs, cfg));
    annotations
        .insert(NUM_WORKER_GROUPS_ANNOTATION.into(), rs.spec.ray_cluster_spec.worker_group_specs.len().to_string());
    annotations.insert(KUBERAY_VERSION_ANNOTATION.into(), cfg.kuberay_version.clone());
    let start_at_min =
        is_incremental_upgrade_enabled(&rs.spec, cfg) && !status.active_service_status.ray_cluster_name.is_empty();
    let mut rc = RayCluster::new(name, child_spec_at_creation(&rs.spec.ray_cluster_spec, start_at_min));
    rc.metadata.namespace = rs.namespace();
    rc.metadata.labels = Some(labels);
    rc.metadata.annotations = Some(annotations);
    rc.metadata.owner_references = Some(vec![owner(rs)]);
    rc
}

impl RayServiceReconciler {
    /// The cluster `name` names in the service's namespace; `None` for an empty name or a
    /// cluster that is not there.
    pub(super) async fn get_cluster(&self, rs: &RayService, name: &str) -> Result<Option<RayCluster>, RayServiceError> {
        if name.is_empty() {
            return Ok(None);
        }
        match self
            .cache
            .clusters
            .get_or_not_found(&self.client, &rs.namespace().unwrap_or_default(), name)
            .await
            .map(std::sync::Arc::unwrap_or_clone)
        {
            Ok(rc) => Ok(Some(rc)),
            Err(e) if super::is_not_found(&e) => Ok(None),
            Err(e) => Err(api_err(format!("read RayCluster {name}"))(e)),
        }
    }

    /// `reconcileRayCluster`: create the named pending cluster if it is missing (and do nothing
    /// else this pass), else update the active and pending clusters in place when due.
    pub(super) async fn reconcile_ray_cluster(
        &self,
        rs: &RayService,
        status: &RayServiceStatuses,
    ) -> Result<(Option<RayCluster>, Option<RayCluster>), RayServiceError> {
        let ns = rs.namespace().unwrap_or_default();
        let mut active = self.get_cluster(rs, &status.active_service_status.ray_cluster_name).await?;
        let mut pending = self.get_cluster(rs, &status.pending_service_status.ray_cluster_name).await?;
        let pending_name = status.pending_service_status.ray_cluster_name.clone();
        if !pending_name.is_empty() && pending.is_none() {
            let rc = construct_cluster(rs, status, &pending_name, &self.config);
            let api: Api<RayCluster> = Api::namespaced(self.client.clone(), &ns);
            return match api.create(&PostParams::default(), &rc).await {
                Ok(created) => {
                    self.event(
                        rs,
                        EventType::Normal,
                        "CreatedRayCluster",
                        format!("Created the RayCluster {ns}/{pending_name}"),
                    )
                    .await;
                    Ok((active, Some(created)))
                }
                Err(e) => {
                    self.event(
                        rs,
                        EventType::Warning,
                        "FailedToCreateRayCluster",
                        format!("Failed to create the RayCluster {ns}/{pending_name}: {e}"),
                    )
                    .await;
                    Err(api_err(format!("create RayCluster {pending_name}"))(e))
                }
            };
        }
        for (slot, is_active, which) in [(&mut active, true, "active"), (&mut pending, false, "pending")] {
            if !should_update_cluster(rs, status, slot.as_ref(), is_active, &self.config) {
                continue;
            }
            let Some(current) = slot.as_mut() else { continue };
            let goal = construct_cluster(rs, status, &current.name_any(), &self.config);
            current.spec = spec_for_in_place_update(&current.spec, &goal.spec);
            current.metadata.labels = goal.metadata.labels.clone();
            current.metadata.annotations = goal.metadata.annotations.clone();
            let name = current.name_any();
            let api: Api<RayCluster> = Api::namespaced(self.client.clone(), &ns);
            match api.replace(&name, &PostParams::default(), current).await {
                Ok(updated) => {
                    *current = updated;
                    self.event(
                        rs,
                        EventType::Normal,
                        "UpdatedRayCluster",
                        format!("Updated the {which} RayCluster {ns}/{name}"),
                    )
                    .await;
                }
                Err(e) => {
                    self.event(
                        rs,
                        EventType::Warning,
                        "FailedToUpdateRayCluster",
                        format!("Failed to update the {which} RayCluster {ns}/{name}: {e}"),
                    )
                    .await;
                    return Err(api_err(format!("update the {which} RayCluster {name}"))(e));
                }
            }
        }
        Ok((active, pending))
    }

    /// `cleanUpServeConfigCache`: forget the configs of clusters that are neither active nor pending.
    pub(super) fn clean_up_serve_config_cache(&self, rs: &RayService, status: &RayServiceStatuses) {
        let key = format!("{}/{}", rs.namespace().unwrap_or_default(), rs.name_any());
        let keep = [&status.active_service_status.ray_cluster_name, &status.pending_service_status.ray_cluster_name];
        if let Some(per_cluster) = self.serve_configs.lock().get_mut(&key) {
            per_cluster.retain(|cluster, _| keep.contains(&cluster));
        }
    }

    /// `cleanUpRayClusterInstance`: a cluster that is neither active nor pending is scheduled for
    /// deletion `rayClusterDeletionDelaySeconds` after it is first seen dangling (0 when the
    /// service is being deleted) and deleted by the first pass after that. Returns whether any
    /// owned cluster still waits to be cleaned up.
    pub(super) async fn clean_up_ray_cluster_instance(
        &self,
        rs: &RayService,
        status: &RayServiceStatuses,
    ) -> Result<bool, RayServiceError> {
        let ns = rs.namespace().unwrap_or_default();
        let api: Api<RayCluster> = Api::namespaced(self.client.clone(), &ns);
        let clusters = self
            .cache
            .clusters
            .list(&self.client, &ns, &association_selector(rs))
            .await
            .map_err(api_err("list owned RayClusters"))?;
        let deleting = rs.metadata.deletion_timestamp.is_some();
        let mut delay = rs
            .spec
            .ray_cluster_deletion_delay_seconds
            .map(|s| std::time::Duration::from_secs(u64::try_from(s).unwrap_or(0)))
            .unwrap_or(RAY_CLUSTER_DELETION_DELAY);
        if deleting {
            delay = std::time::Duration::ZERO;
        }
        let immediate = self.config.defective(Defect::NoDeletionDelay);
        let now = self.clock.now();
        let mut to_clean = false;
        for rc in clusters {
            let name = rc.name_any();
            let dangling = name != status.active_service_status.ray_cluster_name
                && name != status.pending_service_status.ray_cluster_name;
            if !(deleting || dangling) {
                continue;
            }
            to_clean = true;
            let scheduled = self.deletion_times.lock().get(&name).copied();
            if scheduled.is_none() && !deleting && !immediate {
                let at = now.checked_add(jiff::SignedDuration::try_from(delay).unwrap_or_default()).unwrap_or(now);
                self.deletion_times.lock().insert(name.clone(), at);
                tracing::info!(cluster = %name, ?delay, "scheduled dangling RayCluster for deletion");
                continue;
            }
            let due = deleting || immediate || scheduled.is_some_and(|at| now > at);
            if !due {
                continue;
            }
            let params = DeleteParams {
                propagation_policy: Some(kube::api::PropagationPolicy::Background),
                ..Default::default()
            };
            match api.delete(&name, &params).await {
                Ok(_) => {
                    self.event(
                        rs,
                        EventType::Normal,
                        "DeletedRayCluster",
                        format!("Deleted the RayCluster {ns}/{name}"),
                    )
                    .await;
                }
                Err(e) => {
                    self.event(
                        rs,
                        EventType::Warning,
                        "FailedToDeleteRayCluster",
                        format!("Failed to delete the RayCluster {ns}/{name}: {e}"),
                    )
                    .await;
                    return Err(api_err(format!("delete RayCluster {name}"))(e));
                }
            }
        }
        Ok(to_clean)
    }

    /// `deleteRayServiceOwnedResources`: every owned RayCluster and RayService-labelled Service,
    /// and (incremental mode) the Gateway and HTTPRoute. Returns whether nothing was left.
    pub(super) async fn delete_owned_resources(&self, rs: &RayService) -> Result<bool, RayServiceError> {
        use crate::crds::gateway::{Gateway, HTTPRoute};
        use k8s_openapi::api::core::v1::Service;
        let ns = rs.namespace().unwrap_or_default();
        let selector = association_selector(rs);
        let background =
            DeleteParams { propagation_policy: Some(kube::api::PropagationPolicy::Background), ..Default::default() };
        let mut all_deleted = true;
        let clusters: Api<RayCluster> = Api::namespaced(self.client.clone(), &ns);
        for rc in
            self.cache.clusters.list(&self.client, &ns, &selector).await.map_err(api_err("list owned RayClusters"))?
        {
            all_deleted = false;
            if rc.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let name = rc.name_any();
            match clusters.delete(&name, &background).await {
                Err(e) if !super::is_not_found(&e) => {
                    self.event(
                        rs,
                        EventType::Warning,
                        "FailedToDeleteRayCluster",
                        format!("Failed to delete the RayCluster {ns}/{name} during suspend: {e}"),
                    )
                    .await;
                    return Err(api_err(format!("delete RayCluster {name}"))(e));
                }
                _ => {
                    self.event(
                        rs,
                        EventType::Normal,
                        "DeletedRayCluster",
                        format!("Deleted the RayCluster {ns}/{name} during suspend"),
                    )
                    .await;
                }
            }
        }
        let services: Api<Service> = Api::namespaced(self.client.clone(), &ns);
        for svc in
            self.cache.k8s_services.list(&self.client, &ns, &selector).await.map_err(api_err("list owned Services"))?
        {
            all_deleted = false;
            if svc.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let name = svc.name_any();
            match services.delete(&name, &background).await {
                Err(e) if !super::is_not_found(&e) => {
                    self.event(
                        rs,
                        EventType::Warning,
                        "FailedToDeleteService",
                        format!("Failed to delete the Service {ns}/{name} during suspend: {e}"),
                    )
                    .await;
                    return Err(api_err(format!("delete Service {name}"))(e));
                }
                _ => {
                    self.event(
                        rs,
                        EventType::Normal,
                        "DeletedService",
                        format!("Deleted the Service {ns}/{name} during suspend"),
                    )
                    .await;
                }
            }
        }
        if is_incremental_upgrade_enabled(&rs.spec, &self.config) {
            let gateways: Api<Gateway> = Api::namespaced(self.client.clone(), &ns);
            let name = format!("{}-gateway", rs.name_any());
            match self
                .cache
                .gateways
                .get_or_not_found(&self.client, &ns, &name)
                .await
                .map(std::sync::Arc::unwrap_or_clone)
            {
                Ok(gw) => {
                    all_deleted = false;
                    if gw.metadata.deletion_timestamp.is_none() {
                        match gateways.delete(&name, &background).await {
                            Err(e) if !super::is_not_found(&e) => {
                                self.event(
                                    rs,
                                    EventType::Warning,
                                    "FailedToDeleteGateway",
                                    format!("Failed to delete the Gateway {ns}/{name} during suspend: {e}"),
                                )
                                .await;
                                return Err(api_err(format!("delete Gateway {name}"))(e));
                            }
                            _ => {
                                self.event(
                                    rs,
                                    EventType::Normal,
                                    "DeletedGateway",
                                    format!("Deleted the Gateway {ns}/{name} during suspend"),
                                )
                                .await;
                            }
                        }
                    }
                }
                Err(e) if super::is_not_found(&e) => {}
                Err(e) => return Err(api_err(format!("read Gateway {name}"))(e)),
            }
            let routes: Api<HTTPRoute> = Api::namespaced(self.client.clone(), &ns);
            let name = format!("{}-httproute", rs.name_any());
            match self
                .cache
                .routes
                .get_or_not_found(&self.client, &ns, &name)
                .await
                .map(std::sync::Arc::unwrap_or_clone)
            {
                Ok(route) => {
                    all_deleted = false;
                    if route.metadata.deletion_timestamp.is_none() {
                        match routes.delete(&name, &background).await {
                            Err(e) if !super::is_not_found(&e) => {
                                self.event(
                                    rs,
                                    EventType::Warning,
                                    "FailedToDeleteHTTPRoute",
                                    format!("Failed to delete the HTTPRoute {ns}/{name} during suspend: {e}"),
                                )
                                .await;
                                return Err(api_err(format!("delete HTTPRoute {name}"))(e));
                            }
                            _ => {
                                self.event(
                                    rs,
                                    EventType::Normal,
                                    "DeletedHTTPRoute",
                                    format!("Deleted the HTTPRoute {ns}/{name} during suspend"),
                                )
                                .await;
                            }
                        }
                    }
                }
                Err(e) if super::is_not_found(&e) => {}
                Err(e) => return Err(api_err(format!("read HTTPRoute {name}"))(e)),
            }
        }
        Ok(all_deleted)
    }

    /// A new random cluster name for the service (`GenerateRayClusterName`).
    pub(super) fn generate_cluster_name(&self, rs: &RayService) -> String {
        self.names.lock().ray_cluster_name(&rs.name_any())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn service(image: &str, groups: usize) -> RayService {
        let group = json!({"groupName": "g", "replicas": 1, "minReplicas": 1, "maxReplicas": 3,
                           "template": {"spec": {"containers": [{"name": "w", "image": image}]}}});
        serde_json::from_value(json!({
            "apiVersion": "ray.io/v1", "kind": "RayService",
            "metadata": {"name": "svc", "namespace": "ns", "uid": "u1", "labels": {"team": "a"}, "annotations": {"note": "x"}},
            "spec": {"rayClusterConfig": {
                "headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "image": image}]}}},
                "workerGroupSpecs": vec![group; groups]}},
        }))
        .unwrap()
    }

    #[test]
    fn a_child_cluster_carries_the_origin_labels_hash_and_version() {
        let cfg = KubeRayConfig::default();
        let rs = service("ray:1", 1);
        let rc = construct_cluster(&rs, &RayServiceStatuses::default(), "svc-abcde", &cfg);
        assert_eq!(rc.labels()["team"], "a");
        assert_eq!(rc.labels()[RAY_ORIGINATED_FROM_CR_NAME_LABEL], "svc");
        assert_eq!(rc.labels()[RAY_ORIGINATED_FROM_CRD_LABEL], "RayService");
        assert_eq!(rc.annotations()["note"], "x");
        assert_eq!(rc.annotations()[NUM_WORKER_GROUPS_ANNOTATION], "1");
        assert_eq!(rc.annotations()[KUBERAY_VERSION_ANNOTATION], "v1.7.0");
        assert_eq!(rc.annotations()[HASH_WITHOUT_REPLICAS_ANNOTATION], goal_hash(&rs, &cfg));
        assert_eq!(rc.metadata.owner_references.as_ref().unwrap()[0].kind, "RayService");
        assert_eq!(rc.spec.worker_group_specs[0].replicas, Some(1));
    }

    #[test]
    fn appended_groups_update_in_place_and_other_changes_prepare_a_new_cluster() {
        let cfg = KubeRayConfig::default();
        let rs = service("ray:1", 1);
        let status = RayServiceStatuses::default();
        let rc = construct_cluster(&rs, &status, "svc-abcde", &cfg);
        assert!(is_cluster_spec_hash_equal(&rs, &rc, false, &cfg));
        let appended = service("ray:1", 2);
        assert!(!is_cluster_spec_hash_equal(&appended, &rc, false, &cfg));
        assert!(is_cluster_spec_hash_equal(&appended, &rc, true, &cfg));
        assert!(should_update_cluster(&appended, &status, Some(&rc), false, &cfg));
        assert!(!should_prepare_new_cluster(&appended, &status, Some(&rc), None, false, &cfg));
        let image = service("ray:2", 1);
        assert!(!should_update_cluster(&image, &status, Some(&rc), false, &cfg));
        assert!(should_prepare_new_cluster(&image, &status, Some(&rc), None, false, &cfg));
        let mut replicas = service("ray:1", 1);
        replicas.spec.ray_cluster_spec.worker_group_specs[0].replicas = Some(3);
        assert!(!should_prepare_new_cluster(&replicas, &status, Some(&rc), None, false, &cfg));
        let mut older = rc.clone();
        older.annotations_mut().insert(KUBERAY_VERSION_ANNOTATION.into(), "v1.6.0".into());
        assert!(
            should_update_cluster(&rs, &status, Some(&older), true, &cfg),
            "an operator upgrade refreshes the active cluster"
        );
    }
}
