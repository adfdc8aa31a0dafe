//! kube-controller-manager's podgroupprotection controller, as in Kubernetes 1.37.2
//! (`pkg/controller/scheduling/podgroupprotection`): the `PodGroupProtection` admission plugin
//! stamps `scheduling.k8s.io/podgroup-protection` on every new PodGroup; this controller removes
//! it from a PodGroup being deleted once no pod that names the group in
//! `spec.schedulingGroup.podGroupName` is non-terminal (phase other than Succeeded and Failed).
//! It runs only with `GenericWorkload`.

use super::claims::pod_group_name;
use super::objects::{PODGROUP_PROTECTION_FINALIZER, PodGroup};
use super::{DraConfig, DraDefect, DraError};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;
use std::time::Duration;

/// The reference podgroupprotection controller; see the module docs.
pub struct PodGroupProtectionController {
    client: Client,
    config: DraConfig,
}

impl PodGroupProtectionController {
    /// A controller that talks to the API through `client`.
    pub fn new(client: Client, config: DraConfig) -> Self {
        Self { client, config }
    }

    /// Watches PodGroups and pods until a watch ends; drop the future to stop it. Without
    /// `GenericWorkload` it does nothing (kube-controller-manager does not start it).
    pub async fn run(self) -> Result<(), DraError> {
        if !self.config.gates.generic_workload {
            return std::future::pending().await;
        }
        let (groups, group_events) = crate::watch::cache::<PodGroup>(&self.client, watcher::Config::default());
        let (pods, pod_events) = crate::watch::cache::<Pod>(&self.client, watcher::Config::default());
        let mut events = futures::stream::select(group_events, pod_events);
        let mut retry = false;
        loop {
            let wait = if retry { Duration::from_secs(1) } else { Duration::from_secs(3600) };
            tokio::select! {
                next = events.next() => {
                    if next.is_none() {
                        return Err(DraError::WatchEnded("PodGroup or pod"));
                    }
                    while let Some(Some(())) = events.next().now_or_never() {}
                }
                _ = tokio::time::sleep(wait) => {}
            }
            if !(crate::watch::store_ready(&groups) && crate::watch::store_ready(&pods)) {
                continue;
            }
            retry = false;
            let all_pods = pods.state();
            for group in groups.state() {
                let candidate = group.metadata.deletion_timestamp.is_some()
                    && group.metadata.finalizers.iter().flatten().any(|f| f == PODGROUP_PROTECTION_FINALIZER);
                if !candidate {
                    continue;
                }
                let active = all_pods.iter().any(|p| {
                    p.metadata.namespace.as_deref() == Some(group.namespace())
                        && pod_group_name(p) == Some(group.name())
                        && !matches!(p.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed"))
                });
                if active && !self.config.defective(DraDefect::PodGroupFinalizerWhilePodRuns) {
                    continue;
                }
                let mut updated = (*group).clone();
                if let Some(f) = updated.metadata.finalizers.as_mut() {
                    f.retain(|x| x != PODGROUP_PROTECTION_FINALIZER);
                }
                // An empty list is no list (the API omits it), as Go's omitempty sends it.
                updated.metadata.finalizers = updated.metadata.finalizers.take().filter(|f| !f.is_empty());
                let api: Api<PodGroup> = Api::namespaced(self.client.clone(), group.namespace());
                if let Err(e) = api.replace(group.name(), &PostParams::default(), &updated).await {
                    tracing::debug!("removing the protection finalizer of PodGroup {}: {e}", group.key());
                    retry = true;
                }
            }
        }
    }
}
