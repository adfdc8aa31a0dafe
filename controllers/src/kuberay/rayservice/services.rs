//! The Services a RayService owns (`common/service.go`): `<rs>-head-svc` and `<rs>-serve-svc`,
//! switched from one cluster to the next by their selector (`reconcileServices`), and in
//! incremental mode one `<cluster>-serve-svc` per cluster, owned by that cluster.

use super::cluster::owner;
use super::{RayServiceError, RayServiceReconciler, api_err, is_incremental_upgrade_enabled};
use crate::crds::RayCluster;
use crate::crds::rayservice::RayService;
use crate::events::EventType;
use crate::kuberay::common::pods::{head_service, service_ports};
use crate::kuberay::*;
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use kube::ResourceExt;
use kube::api::{Api, PostParams};

/// The Service that selects a cluster's serving pods: which one it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ServiceKind {
    Head,
    Serve,
}

/// `BuildHeadServiceForRayService`: the cluster's head service, named `<rs>-head-svc`, with the
/// service's origin labels.
pub(super) fn head_service_for(rs: &RayService, cluster: &RayCluster, cfg: &KubeRayConfig) -> Service {
    let mut svc = head_service(cluster, cfg);
    let name = rs.name_any();
    svc.metadata.name = Some(format!("{name}-head-svc"));
    svc.metadata.namespace = rs.namespace();
    svc.metadata.annotations = None;
    svc.metadata.owner_references = None;
    let identifier: String = format!("{name}-head").chars().take(63).collect();
    svc.metadata.labels = Some(BTreeMap::from([
        (RAY_ORIGINATED_FROM_CR_NAME_LABEL.to_string(), name.clone()),
        (RAY_ORIGINATED_FROM_CRD_LABEL.to_string(), "RayService".to_string()),
        (RAY_NODE_TYPE_LABEL.to_string(), "head".to_string()),
        (RAY_ID_LABEL.to_string(), identifier.trim_end_matches(['-', '.', '_']).to_string()),
    ]));
    svc
}

/// `BuildServeService` for a RayService: `<rs>-serve-svc` (or `spec.serveService`'s name), or in
/// incremental mode `<cluster>-serve-svc`; it selects the cluster's pods labelled
/// `ray.io/serve=true` on the head container's ports named `serve` or `serve-*`.
pub(super) fn serve_service_for(
    rs: &RayService,
    cluster: &RayCluster,
    cfg: &KubeRayConfig,
) -> Result<Service, RayServiceError> {
    let incremental = is_incremental_upgrade_enabled(&rs.spec, cfg);
    let owner_name = if incremental { cluster.name_any() } else { rs.name_any() };
    let labels = BTreeMap::from([
        (RAY_ORIGINATED_FROM_CR_NAME_LABEL.to_string(), owner_name.clone()),
        (RAY_ORIGINATED_FROM_CRD_LABEL.to_string(), "RayService".to_string()),
        (RAY_SERVE_LABEL.to_string(), format!("{owner_name}-serve")),
    ]);
    let selector = BTreeMap::from([
        (RAY_CLUSTER_LABEL.to_string(), cluster.name_any()),
        (RAY_SERVE_LABEL.to_string(), "true".to_string()),
    ]);
    let ports: Vec<ServicePort> = service_ports(&cluster.spec)
        .into_iter()
        .filter(|(n, _)| n == "serve" || n.starts_with("serve-"))
        .map(|(name, port)| ServicePort { name: Some(name), port, ..Default::default() })
        .collect();
    let service_type = rs.spec.ray_cluster_spec.head_group_spec.service_type.clone();
    let custom = rs.spec.serve_service.as_ref().filter(|_| !incremental);
    if ports.is_empty() && custom.is_none() {
        return Err(RayServiceError::State(
            "Please specify a port named 'serve' (or with the prefix 'serve-', e.g. 'serve-grpc') in the Ray head container; otherwise, the Kubernetes service for Ray Serve will not be created.".into(),
        ));
    }
    let default_name = format!("{owner_name}-serve-svc");
    let mut svc = match custom {
        Some(template) => {
            let mut svc: Service = serde_json::from_value(template.clone())
                .map_err(|e| RayServiceError::State(format!("spec.serveService is not a Service: {e}")))?;
            let spec = svc.spec.get_or_insert_with(ServiceSpec::default);
            if !ports.is_empty() {
                let user: Vec<ServicePort> = spec.ports.clone().unwrap_or_default();
                spec.ports = Some(
                    ports.into_iter().map(|p| user.iter().find(|u| u.name == p.name).cloned().unwrap_or(p)).collect(),
                );
            }
            if spec.type_.as_deref().unwrap_or("").is_empty() {
                spec.type_ = service_type;
            }
            let user_labels = svc.metadata.labels.get_or_insert_with(BTreeMap::new);
            for (k, v) in labels {
                user_labels.entry(k).or_insert(v);
            }
            if svc.metadata.name.as_deref().unwrap_or("").is_empty() {
                svc.metadata.name = Some(default_name);
            }
            svc
        }
        None => Service {
            metadata: kube::api::ObjectMeta { name: Some(default_name), labels: Some(labels), ..Default::default() },
            spec: Some(ServiceSpec { ports: Some(ports), type_: service_type, ..Default::default() }),
            status: None,
        },
    };
    svc.metadata.namespace = rs.namespace();
    if let Some(spec) = svc.spec.as_mut() {
        spec.selector = Some(selector);
    }
    Ok(svc)
}

/// The cluster a service's `ray.io/cluster` selector points at (`GetRayClusterNameFromService`).
pub(super) fn cluster_of(svc: &Service) -> String {
    svc.spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .and_then(|s| s.get(RAY_CLUSTER_LABEL))
        .cloned()
        .unwrap_or_default()
}

impl RayServiceReconciler {
    /// `reconcileServices`: create the service, or point it at `cluster` when its `ray.io/cluster`
    /// selector names another one (keeping its ClusterIP); otherwise leave it.
    pub(super) async fn reconcile_service(
        &self,
        rs: &RayService,
        cluster: &RayCluster,
        kind: ServiceKind,
    ) -> Result<Service, RayServiceError> {
        let ns = rs.namespace().unwrap_or_default();
        let mut desired = match kind {
            ServiceKind::Head => head_service_for(rs, cluster, &self.config),
            ServiceKind::Serve => serve_service_for(rs, cluster, &self.config)?,
        };
        let name = desired.name_any();
        let api: Api<Service> = Api::namespaced(self.client.clone(), &ns);
        match self
            .cache
            .k8s_services
            .get_or_not_found(&self.client, &ns, &name)
            .await
            .map(std::sync::Arc::unwrap_or_clone)
        {
            Ok(mut old) => {
                if cluster_of(&desired) == cluster_of(&old) {
                    return Ok(old);
                }
                let cluster_ip = old.spec.as_ref().and_then(|s| s.cluster_ip.clone());
                let mut spec = desired.spec.take().unwrap_or_default();
                spec.cluster_ip = cluster_ip;
                old.spec = Some(spec);
                match api.replace(&name, &PostParams::default(), &old).await {
                    Ok(updated) => {
                        self.event(rs, EventType::Normal, "UpdatedService", format!("Updated the service {ns}/{name}"))
                            .await;
                        Ok(updated)
                    }
                    Err(e) => {
                        self.event(
                            rs,
                            EventType::Warning,
                            "FailedToUpdateService",
                            format!("Failed to update the service {ns}/{name}, {e}"),
                        )
                        .await;
                        Err(api_err(format!("update Service {name}"))(e))
                    }
                }
            }
            Err(e) if super::is_not_found(&e) => {
                desired.metadata.owner_references = Some(vec![owner(rs)]);
                match api.create(&PostParams::default(), &desired).await {
                    Ok(created) => {
                        self.event(rs, EventType::Normal, "CreatedService", format!("Created the service {ns}/{name}"))
                            .await;
                        Ok(created)
                    }
                    Err(e) => {
                        self.event(
                            rs,
                            EventType::Warning,
                            "FailedToCreateService",
                            format!("Failed to create the service {ns}/{name}, {e}"),
                        )
                        .await;
                        Err(api_err(format!("create Service {name}"))(e))
                    }
                }
            }
            Err(e) => Err(api_err(format!("read Service {name}"))(e)),
        }
    }

    /// `reconcileServicesToReadyCluster`: the head, then the serve service, at `cluster`.
    pub(super) async fn reconcile_services_to_ready_cluster(
        &self,
        rs: &RayService,
        cluster: &RayCluster,
    ) -> Result<(Service, Service), RayServiceError> {
        let head = self.reconcile_service(rs, cluster, ServiceKind::Head).await?;
        let serve = self.reconcile_service(rs, cluster, ServiceKind::Serve).await?;
        Ok((head, serve))
    }

    /// `reconcilePerClusterServeService`: create `<cluster>-serve-svc`, owned by the cluster,
    /// when it is missing (never updated).
    pub(super) async fn reconcile_per_cluster_serve_service(
        &self,
        rs: &RayService,
        cluster: Option<&RayCluster>,
    ) -> Result<(), RayServiceError> {
        let Some(cluster) = cluster else { return Ok(()) };
        let mut desired = serve_service_for(rs, cluster, &self.config)?;
        desired.metadata.owner_references =
            Some(vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: "ray.io/v1".into(),
                kind: "RayCluster".into(),
                name: cluster.name_any(),
                uid: cluster.uid().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]);
        let name = desired.name_any();
        let ns = rs.namespace().unwrap_or_default();
        let api: Api<Service> = Api::namespaced(self.client.clone(), &ns);
        match self
            .cache
            .k8s_services
            .get_or_not_found(&self.client, &ns, &name)
            .await
            .map(std::sync::Arc::unwrap_or_clone)
        {
            Ok(_) => Ok(()),
            Err(e) if super::is_not_found(&e) => api
                .create(&PostParams::default(), &desired)
                .await
                .map(|_| ())
                .map_err(api_err(format!("create Service {name}"))),
            Err(e) => Err(api_err(format!("read Service {name}"))(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster() -> RayCluster {
        serde_json::from_value(json!({
            "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "svc-abcde", "namespace": "ns"},
            "spec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "ports": [
                {"name": "dashboard", "containerPort": 8265}, {"name": "serve", "containerPort": 8000},
                {"name": "serve-grpc", "containerPort": 9000}]}]}}}},
        }))
        .unwrap()
    }

    fn service(strategy: &str) -> RayService {
        serde_json::from_value(json!({
            "apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "svc", "namespace": "ns"},
            "spec": {"upgradeStrategy": {"type": strategy, "clusterUpgradeOptions": {"gatewayClassName": "c", "stepSizePercent": 10, "intervalSeconds": 1}},
                     "rayClusterConfig": {"headGroupSpec": {"template": {}}}},
        }))
        .unwrap()
    }

    #[test]
    fn the_serve_service_is_the_services_or_in_incremental_mode_the_clusters() {
        let cfg = KubeRayConfig::default();
        let svc = serve_service_for(&service("NewCluster"), &cluster(), &cfg).unwrap();
        assert_eq!(svc.name_any(), "svc-serve-svc");
        assert_eq!(svc.labels()[RAY_ORIGINATED_FROM_CR_NAME_LABEL], "svc");
        assert_eq!(cluster_of(&svc), "svc-abcde");
        let ports: Vec<_> = svc.spec.unwrap().ports.unwrap().into_iter().map(|p| p.name.unwrap()).collect();
        assert_eq!(ports, ["serve", "serve-grpc"]);
        let per_cluster = serve_service_for(&service("NewClusterWithIncrementalUpgrade"), &cluster(), &cfg).unwrap();
        assert_eq!(per_cluster.name_any(), "svc-abcde-serve-svc");
        assert_eq!(per_cluster.labels()[RAY_SERVE_LABEL], "svc-abcde-serve");
    }

    #[test]
    fn the_head_service_keeps_the_clusters_selector_under_the_services_name() {
        let svc = head_service_for(&service("NewCluster"), &cluster(), &KubeRayConfig::default());
        assert_eq!(svc.name_any(), "svc-head-svc");
        assert_eq!(svc.labels()[RAY_ID_LABEL], "svc-head");
        assert_eq!(cluster_of(&svc), "svc-abcde");
        assert_eq!(svc.spec.unwrap().cluster_ip.as_deref(), Some("None"));
    }
}
