//! kube-controller-manager's device-taint-eviction controller, as in Kubernetes 1.37.2
//! (`pkg/controller/devicetainteviction`), for taints on ResourceSlice devices (DeviceTaintRules
//! are not modelled).
//!
//! A scheduled pod that is not terminal and not being deleted is evicted when a claim it uses
//! holds a device with a `NoExecute` taint. The pod's claims are found the way the controller
//! finds them: each pod claim's name, the claim allocated, made for the pod (or its PodGroup)
//! and reserved for it, or, with `DRAWorkloadResourceClaims`, for its PodGroup by name. A
//! toleration in the allocation result (`results[].tolerations`, copied from the request) that
//! matches the taint with effect `NoExecute` keeps the pod: forever without `tolerationSeconds`,
//! else until `timeAdded` plus the seconds. Eviction: a Normal event `DeviceTaintManagerEviction`
//! "Marking for deletion", the condition `DisruptionTarget=True` (reason
//! `DeletionByDeviceTaintManager`, message "Device Taint manager: deleting due to NoExecute
//! taint"), then a delete with a uid precondition.

use super::claims::{self, claim_name, is_for_pod, pod_claims};
use super::objects::{ResourceClaim, ResourceSlice, text};
use super::{DraConfig, DraError, api_error, gone_or_conflict};
use crate::Clock;
use crate::events::{EventRecorder, EventType};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::watcher;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// The reference device-taint-eviction controller; see the module docs.
pub struct DeviceTaintEvictionController {
    client: Client,
    clock: Clock,
    config: DraConfig,
    events: Arc<EventRecorder>,
}

impl DeviceTaintEvictionController {
    /// A controller that talks to the API through `client` and reads "now" from `clock`.
    pub fn new(client: Client, clock: Clock, config: DraConfig) -> Self {
        let events = Arc::new(EventRecorder::new(client.clone(), clock.clone(), "device-taint-eviction-controller"));
        Self { client, clock, config, events }
    }

    /// Watches pods, claims and slices and evicts until a watch ends; drop the future to stop it.
    pub async fn run(self) -> Result<(), DraError> {
        let events = self.events.clone();
        tokio::select! {
            result = self.evict_loop() => result,
            () = events.run_series_upkeep() => Ok(()),
        }
    }

    async fn evict_loop(&self) -> Result<(), DraError> {
        let (pods, pod_events) = crate::watch::cache::<Pod>(&self.client, watcher::Config::default());
        let (claims, claim_events) = crate::watch::cache::<ResourceClaim>(&self.client, watcher::Config::default());
        let (slices, slice_events) = crate::watch::cache::<ResourceSlice>(&self.client, watcher::Config::default());
        let mut changes = futures::stream::select_all([pod_events, claim_events, slice_events]);
        let mut evicted: HashSet<String> = HashSet::new();
        let mut wake: Option<Duration> = None;
        loop {
            let wait = wake.unwrap_or(Duration::from_secs(3600));
            tokio::select! {
                next = changes.next() => {
                    if next.is_none() {
                        return Err(DraError::WatchEnded("pod, claim or slice"));
                    }
                    while let Some(Some(())) = changes.next().now_or_never() {}
                }
                _ = tokio::time::sleep(wait) => {}
            }
            if !(crate::watch::store_ready(&pods)
                && crate::watch::store_ready(&claims)
                && crate::watch::store_ready(&slices))
            {
                continue;
            }
            let claims = claims.state();
            let slices = slices.state();
            let now = self.clock.now();
            wake = None;
            for pod in pods.state() {
                let uid = pod.metadata.uid.clone().unwrap_or_default();
                let scheduled = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_some_and(|n| !n.is_empty());
                let terminal =
                    matches!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed"));
                if !scheduled || terminal || pod.metadata.deletion_timestamp.is_some() || evicted.contains(&uid) {
                    continue;
                }
                let Some(when) = self.eviction_time(&pod, &claims, &slices) else { continue };
                let left = when.duration_since(now);
                if left.is_positive() {
                    let left = Duration::from_millis(left.as_millis().max(0) as u64);
                    wake = Some(wake.map_or(left, |w| w.min(left)));
                    continue;
                }
                if self.evict(&pod).await? {
                    evicted.insert(uid);
                }
            }
        }
    }

    /// When the pod must go (the earliest over its claims' tainted devices), if ever.
    fn eviction_time(
        &self,
        pod: &Pod,
        claims: &[Arc<ResourceClaim>],
        slices: &[Arc<ResourceSlice>],
    ) -> Option<jiff::Timestamp> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let accept = self.config.gates.accept_podgroup();
        let mut earliest: Option<jiff::Timestamp> = None;
        for pc in pod_claims(pod) {
            let Ok((Some(name), check_owner)) = claim_name(pod, pc) else { continue };
            let Some(claim) = claims.iter().find(|c| c.namespace() == ns && c.name() == name) else { continue };
            let Some(allocation) = claim.allocation() else { continue };
            if (check_owner && is_for_pod(pod, claim, accept).is_err())
                || !claims::is_reserved_for_pod(pod, claim, accept)
            {
                continue;
            }
            for result in
                allocation.get("devices").and_then(|d| d.get("results")).and_then(Value::as_array).into_iter().flatten()
            {
                for taint in device_taints(slices, result) {
                    if let Some(when) = taint_eviction_time(&taint, result, self.clock.now()) {
                        earliest = Some(earliest.map_or(when, |e| e.min(when)));
                    }
                }
            }
        }
        earliest
    }

    /// Evicts the pod; `false` when it went away or changed meanwhile.
    async fn evict(&self, pod: &Pod) -> Result<bool, DraError> {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        let reference = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: Some(name.clone()),
            namespace: Some(ns.clone()),
            uid: pod.metadata.uid.clone(),
            ..Default::default()
        };
        self.events
            .eventf(
                &reference,
                None,
                EventType::Normal,
                "DeviceTaintManagerEviction",
                "Delete",
                "Marking for deletion".into(),
            )
            .await;
        let mut conditions: Vec<Value> = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .map(|cs| {
                cs.iter()
                    .filter_map(|c| serde_json::to_value(c).ok())
                    .filter(|c| c["type"] != "DisruptionTarget")
                    .collect()
            })
            .unwrap_or_default();
        conditions.push(
            json!({"type": "DisruptionTarget", "status": "True", "lastTransitionTime": self.clock.now_rfc3339(),
                               "reason": "DeletionByDeviceTaintManager",
                               "message": "Device Taint manager: deleting due to NoExecute taint"}),
        );
        let patch = json!({"metadata": {"uid": pod.metadata.uid}, "status": {"conditions": conditions}});
        match api.patch_status(&name, &PatchParams::default(), &Patch::Merge(patch)).await {
            Ok(_) => {}
            Err(e) if gone_or_conflict(&e) => return Ok(false),
            Err(e) => return Err(api_error(format!("marking pod {ns}/{name} for eviction"))(e)),
        }
        let params = DeleteParams {
            preconditions: Some(Preconditions { uid: pod.metadata.uid.clone(), resource_version: None }),
            ..Default::default()
        };
        match api.delete(&name, &params).await {
            Ok(_) => Ok(true),
            Err(e) if gone_or_conflict(&e) => Ok(false),
            Err(e) => Err(api_error(format!("evicting pod {ns}/{name}"))(e)),
        }
    }
}

/// The `NoExecute` taints of the device an allocation result names.
fn device_taints(slices: &[Arc<ResourceSlice>], result: &Value) -> Vec<Value> {
    let (driver, pool, device) = (text(result, "driver"), text(result, "pool"), text(result, "device"));
    slices
        .iter()
        .map(|s| s.field("spec"))
        .filter(|s| text(s, "driver") == driver && s.get("pool").map(|p| text(p, "name")) == Some(pool))
        .flat_map(|s| s.get("devices").and_then(Value::as_array).cloned().unwrap_or_default())
        .filter(|d| text(d, "name") == device)
        .flat_map(|d| d.get("taints").and_then(Value::as_array).cloned().unwrap_or_default())
        .filter(|t| text(t, "effect") == "NoExecute")
        .collect()
}

/// When `taint` evicts a pod whose allocation `result` carries tolerations, if ever: at
/// `timeAdded` (now, when unset), later by the smallest matching `tolerationSeconds`; never
/// when a matching toleration has no seconds.
fn taint_eviction_time(taint: &Value, result: &Value, now: jiff::Timestamp) -> Option<jiff::Timestamp> {
    let added =
        taint.get("timeAdded").and_then(Value::as_str).and_then(|t| t.parse::<jiff::Timestamp>().ok()).unwrap_or(now);
    let mut seconds: Option<i64> = None;
    for tol in result.get("tolerations").and_then(Value::as_array).into_iter().flatten() {
        if text(tol, "effect") != "NoExecute" || !tolerates(tol, taint) {
            continue;
        }
        match tol.get("tolerationSeconds").and_then(Value::as_i64) {
            None => return None,
            Some(s) => seconds = Some(seconds.map_or(s.max(0), |x: i64| x.min(s.max(0)))),
        }
    }
    Some(match seconds {
        Some(s) => added.checked_add(jiff::SignedDuration::from_secs(s)).unwrap_or(added),
        None => added,
    })
}

/// `ToleratesTaint` for device taints: key (empty with `Exists` matches every key), operator
/// `Exists` or `Equal` (value), effect (empty matches every effect).
pub(crate) fn tolerates(toleration: &Value, taint: &Value) -> bool {
    let effect = text(toleration, "effect");
    if !effect.is_empty() && effect != text(taint, "effect") {
        return false;
    }
    let key = text(toleration, "key");
    match text(toleration, "operator") {
        "Exists" => key.is_empty() || key == text(taint, "key"),
        "" | "Equal" => key == text(taint, "key") && text(toleration, "value") == text(taint, "value"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerations_delay_or_prevent_eviction() {
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let taint = json!({"key": "example.com/broken", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"});
        assert_eq!(taint_eviction_time(&taint, &json!({}), now), Some(now));
        let forever =
            json!({"tolerations": [{"key": "example.com/broken", "operator": "Exists", "effect": "NoExecute"}]});
        assert_eq!(taint_eviction_time(&taint, &forever, now), None);
        let for_a_minute = json!({"tolerations": [{"operator": "Exists", "tolerationSeconds": 60}]});
        assert_eq!(
            taint_eviction_time(&taint, &for_a_minute, now),
            Some(now),
            "a toleration without effect NoExecute does not count"
        );
        let delayed = json!({"tolerations": [{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]});
        assert_eq!(
            taint_eviction_time(&taint, &delayed, now),
            Some(now.checked_add(jiff::SignedDuration::from_secs(60)).unwrap())
        );
    }
}
