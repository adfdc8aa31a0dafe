//! The Ray autoscaler of every RayCluster with `enableInTreeAutoscaling: true`: it turns the
//! CPU its Serve replicas ask for into worker replicas, within each group's min and max.
//!
//! Every `interval` (5 s, like the autoscaler's update period) it reads the cluster's demand
//! from the head (`GET /api/kproof/resource-demand` on the dashboard, answered by
//! [`super::rayhead`], standing in for the GCS's resource report). The head offers its own CPUs
//! first; the rest is spread over the worker groups in order, each worker offering its
//! `num-cpus` start parameter, else its container's CPU limit, else its request. A group grows
//! at once; a group with more workers than it needs shrinks only after the surplus has been idle
//! for `idleTimeout` (60 s, Ray's `idle_timeout_minutes: 1`), and then as the real autoscaler
//! does it: lower `replicas` and name the pods to remove in `scaleStrategy.workersToDelete`
//! (newest first), which the RayCluster controller deletes. Names of pods that are gone are
//! dropped from the list on later passes.
//!
//! A cluster whose dashboard cannot be reached (head not running, no config submitted yet) is
//! left as it is, as is a suspended one.

use super::SimError;
use super::network::SimNetwork;
use super::rayhead::pod_cpu_millis;
use crate::crds::RayCluster;
use crate::crds::raycluster::WorkerGroupSpec;
use bytes::Bytes;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Pod, Service};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How the simulated autoscaler behaves.
#[derive(Debug, Clone)]
pub struct AutoscalerConfig {
    /// How often it looks at every cluster.
    pub interval: Duration,
    /// How long a surplus worker stays before it is removed.
    pub idle_timeout: Duration,
}

impl Default for AutoscalerConfig {
    fn default() -> Self {
        Self { interval: Duration::from_secs(5), idle_timeout: Duration::from_secs(60) }
    }
}

/// What a row sets in `needs.settings.autoscaler`. Unknown keys fail to load, with file and line.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AutoscalerSettings {
    /// How often it looks at every cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<apimachinery::DurationText>,
    /// How long a surplus worker stays before it is removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<apimachinery::DurationText>,
}

impl AutoscalerConfig {
    /// Applies a row's settings.
    pub fn apply(&mut self, settings: &AutoscalerSettings) {
        if let Some(d) = settings.interval {
            self.interval = d.0;
        }
        if let Some(d) = settings.idle_timeout {
            self.idle_timeout = d.0;
        }
    }
}

/// The simulated Ray autoscaler; see the module docs.
pub struct RayAutoscaler {
    client: kube::Client,
    network: SimNetwork,
    config: AutoscalerConfig,
}

/// CPU (millicores) a worker of `group` offers.
fn group_cpu_millis(group: &WorkerGroupSpec) -> i64 {
    let from_params = group
        .ray_start_params
        .as_ref()
        .and_then(|p| p.get("num-cpus"))
        .and_then(|n| apimachinery::Quantity::parse(n.trim_matches('"')));
    let container = group.template.spec.as_ref().and_then(|s| s.containers.first());
    let resource = |limits: bool| {
        container
            .and_then(|c| c.resources.as_ref())
            .and_then(|r| if limits { r.limits.as_ref() } else { r.requests.as_ref() })
            .and_then(|m| m.get("cpu"))
            .and_then(|q| apimachinery::Quantity::parse(&q.0))
    };
    from_params.or_else(|| resource(true)).or_else(|| resource(false)).map(|q| q.milli_value() as i64).unwrap_or(1000)
}

/// Workers each group needs for `demand` millicores once the head offered `head_cpu`.
pub(crate) fn needed_workers(groups: &[WorkerGroupSpec], demand: i64, head_cpu: i64) -> Vec<i32> {
    let mut remaining = (demand - head_cpu).max(0);
    groups
        .iter()
        .map(|g| {
            let min = g.min_replicas.unwrap_or(0).max(0);
            let max = g.max_replicas.unwrap_or(i32::MAX).max(min);
            let cpu = group_cpu_millis(g);
            let wanted = if cpu <= 0 { 0 } else { i32::try_from((remaining + cpu - 1) / cpu).unwrap_or(i32::MAX) };
            let n = wanted.clamp(min, max);
            remaining = (remaining - i64::from(n) * cpu.max(0)).max(0);
            n
        })
        .collect()
}

impl RayAutoscaler {
    /// An autoscaler writing through `client` and reading demand over `network`.
    pub fn new(client: kube::Client, network: SimNetwork, config: AutoscalerConfig) -> Self {
        Self { client, network, config }
    }

    /// Scales every autoscaling cluster each interval until a watch ends; drop the future to stop.
    pub async fn run(self) -> Result<(), SimError> {
        let (clusters, rc_writer) = reflector::store::<RayCluster>();
        let (pods, pod_writer) = reflector::store::<Pod>();
        let (services, svc_writer) = reflector::store::<Service>();
        let watches = futures::stream::select_all([
            super::reflect_into(&self.client, watcher::Config::default(), rc_writer),
            super::reflect_into(&self.client, watcher::Config::default().labels("ray.io/is-ray-node=yes"), pod_writer),
            super::reflect_into(&self.client, watcher::Config::default(), svc_writer),
        ]);
        let drive = watches.for_each(|_| futures::future::ready(()));
        let scale = async {
            let mut surplus_since: HashMap<(String, String, String), Instant> = HashMap::new();
            loop {
                tokio::time::sleep(self.config.interval).await;
                if !(super::scheduler::store_ready(&clusters)
                    && super::scheduler::store_ready(&pods)
                    && super::scheduler::store_ready(&services))
                {
                    continue;
                }
                // A pass that failed for a moment is tried again at the next interval.
                super::tolerate("autoscaler", self.pass(&clusters, &pods, &services, &mut surplus_since).await)?;
            }
        };
        tokio::select! {
            _ = drive => Err(SimError::WatchEnded("RayCluster, pod or service")),
            r = scale => r,
        }
    }

    async fn demand(&self, rc: &RayCluster, services: &Store<Service>) -> Option<i64> {
        let ns = rc.namespace().unwrap_or_default();
        let svc_name = rc
            .status
            .as_ref()
            .and_then(|s| s.head.as_ref())
            .and_then(|h| h.service_name.clone())
            .unwrap_or_else(|| format!("{}-head-svc", rc.name_any()));
        let svc = services.get(&reflector::ObjectRef::new(&svc_name).within(&ns))?;
        let port = svc.spec.as_ref()?.ports.as_ref()?.iter().find(|p| p.name.as_deref() == Some("dashboard"))?.port;
        let url = format!("http://{svc_name}.{ns}.svc.cluster.local:{port}/api/kproof/resource-demand");
        let request = http::Request::get(url).body(Bytes::new()).ok()?;
        let response = self.network.send(request).await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let body: Value = serde_json::from_slice(response.body()).ok()?;
        body.get("cpuMillis").and_then(Value::as_i64)
    }

    async fn pass(
        &self,
        clusters: &Store<RayCluster>,
        pods: &Store<Pod>,
        services: &Store<Service>,
        surplus_since: &mut HashMap<(String, String, String), Instant>,
    ) -> Result<(), SimError> {
        let mut all: Vec<Arc<RayCluster>> = clusters.state();
        all.sort_by_key(|c| (c.namespace(), c.name_any()));
        let now = Instant::now();
        let all_pods = pods.state();
        for rc in all {
            if rc.spec.enable_in_tree_autoscaling != Some(true)
                || rc.spec.suspend == Some(true)
                || rc.metadata.deletion_timestamp.is_some()
            {
                continue;
            }
            let Some(demand) = self.demand(&rc, services).await else { continue };
            let ns = rc.namespace().unwrap_or_default();
            let name = rc.name_any();
            let cluster_pods: Vec<&Arc<Pod>> = all_pods
                .iter()
                .filter(|p| {
                    p.namespace().as_deref() == Some(ns.as_str()) && p.labels().get("ray.io/cluster") == Some(&name)
                })
                .collect();
            let head_cpu = cluster_pods
                .iter()
                .find(|p| p.labels().get("ray.io/node-type").map(String::as_str) == Some("head"))
                .map(|p| pod_cpu_millis(p))
                .unwrap_or(0);
            let needed = needed_workers(&rc.spec.worker_group_specs, demand, head_cpu);
            let mut ops: Vec<Value> = Vec::new();
            for (i, (group, need)) in rc.spec.worker_group_specs.iter().zip(needed).enumerate() {
                let key = (ns.clone(), name.clone(), group.group_name.clone());
                let min = group.min_replicas.unwrap_or(0);
                let current = group.replicas.unwrap_or(min).max(min);
                let mut workers: Vec<&&Arc<Pod>> = cluster_pods
                    .iter()
                    .filter(|p| {
                        p.labels().get("ray.io/node-type").map(String::as_str) == Some("worker")
                            && p.labels().get("ray.io/group") == Some(&group.group_name)
                            && p.metadata.deletion_timestamp.is_none()
                    })
                    .collect();
                let listed: Vec<String> =
                    group.scale_strategy.iter().flat_map(|s| s.workers_to_delete.clone()).collect();
                let still_there: Vec<String> =
                    listed.iter().filter(|n| cluster_pods.iter().any(|p| &p.name_any() == *n)).cloned().collect();
                let path = format!("/spec/workerGroupSpecs/{i}");
                let mut group_ops = Vec::new();
                if need > current || group.replicas.is_none() && need >= current {
                    surplus_since.remove(&key);
                    group_ops.push(json!({"op": "add", "path": format!("{path}/replicas"), "value": need}));
                } else if need < current {
                    let since = *surplus_since.entry(key.clone()).or_insert(now);
                    if now >= since + self.config.idle_timeout {
                        surplus_since.remove(&key);
                        workers.retain(|p| !still_there.contains(&p.name_any()));
                        workers.sort_by_key(|p| {
                            std::cmp::Reverse((p.metadata.creation_timestamp.as_ref().map(|t| t.0), p.name_any()))
                        });
                        let mut to_delete = still_there.clone();
                        to_delete.extend(workers.iter().take((current - need) as usize).map(|p| p.name_any()));
                        group_ops.push(json!({"op": "add", "path": format!("{path}/replicas"), "value": need}));
                        group_ops.push(json!({"op": "add", "path": format!("{path}/scaleStrategy"), "value": {"workersToDelete": to_delete}}));
                    }
                } else {
                    surplus_since.remove(&key);
                }
                if group_ops.is_empty() && still_there.len() != listed.len() {
                    group_ops.push(json!({"op": "add", "path": format!("{path}/scaleStrategy"), "value": {"workersToDelete": still_there}}));
                }
                if !group_ops.is_empty() {
                    ops.push(json!({"op": "test", "path": format!("{path}/groupName"), "value": group.group_name}));
                    ops.extend(group_ops);
                }
            }
            if ops.is_empty() {
                continue;
            }
            let api: Api<RayCluster> = Api::namespaced(self.client.clone(), &ns);
            let patch: json_patch::Patch = match serde_json::from_value(Value::Array(ops)) {
                Ok(p) => p,
                Err(e) => return Err(SimError::Invalid(format!("autoscaler patch for {ns}/{name}: {e}"))),
            };
            match api.patch(&name, &PatchParams::default(), &Patch::<()>::Json(patch)).await {
                Ok(_) => {
                    tracing::info!(cluster = %format!("{ns}/{name}"), demand_millis = demand, "autoscaler: scaled worker groups")
                }
                Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 || s.code == 422 => {}
                Err(e) => return Err(SimError::api(format!("scaling RayCluster {ns}/{name}"))(e)),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(min: i32, max: i32, cpu: &str) -> WorkerGroupSpec {
        serde_json::from_value(json!({
            "groupName": "g", "minReplicas": min, "maxReplicas": max,
            "template": {"spec": {"containers": [{"name": "w", "resources": {"limits": {"cpu": cpu}}}]}},
        }))
        .unwrap()
    }

    #[test]
    fn demand_beyond_the_head_becomes_workers_within_min_and_max() {
        assert_eq!(needed_workers(&[group(0, 4, "1")], 1000, 0), vec![1]);
        assert_eq!(needed_workers(&[group(0, 4, "1")], 1500, 0), vec![2]);
        assert_eq!(needed_workers(&[group(0, 4, "1")], 1500, 2000), vec![0]);
        assert_eq!(needed_workers(&[group(1, 4, "1")], 0, 0), vec![1]);
        assert_eq!(needed_workers(&[group(0, 2, "1")], 9000, 0), vec![2]);
        assert_eq!(needed_workers(&[group(0, 1, "1"), group(0, 5, "500m")], 2000, 0), vec![1, 2]);
    }
}
