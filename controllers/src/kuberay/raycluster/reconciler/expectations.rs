//! `expectations.RayClusterScaleExpectation`: a group is not reconciled again until the pods
//! a pass created or deleted show up as such in the informer.

use super::*;

/// What the scale expectations wait for (`expectations.ScaleAction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ScaleAction {
    Create,
    Delete,
}

/// One expected pod (`expectations.rayPod`).
#[derive(Debug, Clone)]
pub(super) struct ExpectedPod {
    pub(super) cluster: String,
    /// The worker group, or `""` for the head.
    pub(super) group: String,
    pub(super) action: ScaleAction,
    pub(super) recorded: tokio::time::Instant,
}

/// `expectations.RayClusterScaleExpectation`: after creating or deleting a pod, its group is not
/// reconciled again until the pod exists (at most 30 s) or is gone for good (not merely
/// terminating), so that no pass acts on a view that does not show its own writes yet.
#[derive(Default)]
pub(super) struct ScaleExpectations {
    /// By `namespace/pod`.
    pub(super) items: Mutex<HashMap<String, ExpectedPod>>,
}

/// `expectations.ExpectationsTimeout`.
pub(super) const EXPECTATIONS_TIMEOUT: Duration = Duration::from_secs(30);
/// The head's group in the expectations.
pub(super) const HEAD_GROUP: &str = "";

impl ScaleExpectations {
    pub(super) fn expect(&self, ns: &str, cluster: &str, group: &str, pod: &str, action: ScaleAction) {
        let item =
            ExpectedPod { cluster: cluster.into(), group: group.into(), action, recorded: tokio::time::Instant::now() };
        self.items.lock().insert(format!("{ns}/{pod}"), item);
    }

    /// `IsSatisfied`: every expected pod of the group is there (or timed out) or gone; those
    /// that are satisfied are forgotten, and the first that is not stops the check.
    pub(super) async fn satisfied(&self, pods: &PodReads<'_>, ns: &str, cluster: &str, group: &str) -> bool {
        let mut pending: Vec<(String, ExpectedPod)> = self
            .items
            .lock()
            .iter()
            .filter(|(k, e)| k.starts_with(&format!("{ns}/")) && e.cluster == cluster && e.group == group)
            .map(|(k, e)| (k.clone(), e.clone()))
            .collect();
        pending.sort_by(|a, b| a.0.cmp(&b.0));
        for (key, expected) in pending {
            let name = key.split_once('/').map(|(_, n)| n).unwrap_or_default();
            let exists = match pods.cache.get_from_informer(pods.client, ns, name).await {
                Ok(p) => p.is_some(),
                Err(_) => return false,
            };
            let done = match expected.action {
                ScaleAction::Create => exists || expected.recorded + EXPECTATIONS_TIMEOUT < tokio::time::Instant::now(),
                ScaleAction::Delete => !exists,
            };
            if !done {
                return false;
            }
            self.items.lock().remove(&key);
        }
        true
    }

    /// `Delete`: forget every expectation of the cluster.
    pub(super) fn forget_cluster(&self, ns: &str, cluster: &str) {
        self.items.lock().retain(|k, e| !(k.starts_with(&format!("{ns}/")) && e.cluster == cluster));
    }
}
