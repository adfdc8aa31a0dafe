//! The services KubeRay owns for a RayCluster: head, headless (multi-host) and serve.

use super::*;

impl RayClusterReconciler {
    /// Creates a service KubeRay owns (`createService`): an event either way.
    pub(super) async fn create_service(&self, rc: &RayCluster, svc: Service) -> Result<(), StepError> {
        let ns = rc.namespace().unwrap_or_default();
        let api: Api<Service> = Api::namespaced(self.client.clone(), &ns);
        let name = svc.name_any();
        match api.create(&PostParams::default(), &svc).await {
            Ok(_) => {
                let message = format!("Created service {ns}/{name}");
                self.event(rc, EventType::Normal, "CreatedService", action::CREATE, message).await;
                Ok(())
            }
            Err(e) => {
                let message = format!("Failed creating service {ns}/{name}, {}", go_error(&e));
                self.event(rc, EventType::Warning, "FailedToCreateService", action::CREATE, message).await;
                Err(api_err(format!("create service {name}"))(e).into())
            }
        }
    }

    pub(super) async fn reconcile_head_service(&self, rc: &RayCluster) -> Result<(), StepError> {
        let existing = self
            .cache
            .services
            .list(&self.client, &rc.namespace().unwrap_or_default(), &head_service_selector(rc))
            .await
            .map_err(api_err("list the head service"))?;
        match existing.len() {
            0 => self.create_service(rc, head_service(rc, &self.config)).await,
            1 => Ok(()),
            n => Err(StepError::plain(format!("{n} head service found"))),
        }
    }

    /// `reconcileHeadlessService`: a cluster with a multi-host group gets `<cluster>-headless`.
    pub(super) async fn reconcile_headless_service(&self, rc: &RayCluster) -> Result<(), StepError> {
        if !rc.spec.worker_group_specs.iter().any(|g| g.num_of_hosts.unwrap_or(1) > 1) {
            return Ok(());
        }
        let existing = self
            .cache
            .services
            .list(&self.client, &rc.namespace().unwrap_or_default(), &headless_service_selector(rc))
            .await
            .map_err(api_err("list the headless service"))?;
        if !existing.is_empty() {
            return Ok(());
        }
        self.create_service(rc, headless_service(rc)).await
    }

    pub(super) async fn reconcile_serve_service(&self, rc: &RayCluster) -> Result<(), ReconcileError> {
        if rc.annotations().get(ENABLE_SERVE_SERVICE_ANNOTATION).map(String::as_str) != Some("true") {
            return Ok(());
        }
        let ns = rc.namespace().unwrap_or_default();
        let api: Api<Service> = Api::namespaced(self.client.clone(), &ns);
        let svc = serve_service(rc);
        if self
            .cache
            .services
            .get(&self.client, &ns, &svc.name_any())
            .await
            .map_err(api_err("read the serve service"))?
            .is_some()
        {
            return Ok(());
        }
        api.create(&PostParams::default(), &svc).await.map_err(api_err("create the serve service"))?;
        Ok(())
    }
}
