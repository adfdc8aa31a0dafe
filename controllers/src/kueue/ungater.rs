//! The ElasticJobUngater (`pkg/controller/elasticjobs/elastic_job_ungater.go`, v0.19.2): an
//! elastic job's pods are created with the scheduling gate `kueue.x-k8s.io/elastic-job` (the
//! job webhook puts it on every template), and the gate is removed only up to what the chain's
//! active slice grants, PodSet by PodSet.
//!
//! Upstream reconciles on Workload and Pod events; here each pass does, for every job owning
//! elastic slices, what those reconciles converge to:
//! - the active slice is `FindLatestActiveWorkload` (the newest not-finished slice with a quota
//!   reservation that is not evicted), and it must be Admitted (`latestActiveSliceForOwner`);
//! - the pods are those whose chain key (`kueue.x-k8s.io/workload-slice-name`, else
//!   `kueue.x-k8s.io/workload`) is the active slice's chain name (`SliceName`), not terminated;
//! - per PodSet (the pod's `kueue.x-k8s.io/podset` label), `granted` is the active slice's
//!   `spec.podSets[].count`, every pod already ungated counts against it, and the lowest-named
//!   gated pods are ungated until it is reached.
//!
//! Not modelled: the admission-check `podSetUpdates` refreshed onto pods at ungating (no
//! admission checks here) and the expectations store (a pass sees its own writes).

use super::jobs::{admitted, evicted, finished, has_quota_reservation, workload_pod_sets};
use super::objects::{Kind, World, annotation, controller_owner, key_of, label, str_at};
use super::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The scheduling gate of elastic jobs' pods (`kueue.ElasticJobSchedulingGate`).
pub const ELASTIC_JOB_SCHEDULING_GATE: &str = "kueue.x-k8s.io/elastic-job";

/// `SliceName`: the chain's name, which every slice of the chain carries.
fn slice_name(wl: &Value) -> &str {
    annotation(wl, WORKLOAD_SLICE_NAME_ANNOTATION).unwrap_or_else(|| str_at(wl, "/metadata/name"))
}

/// `podSliceName`: the pod's chain key, as the `metadata.workloadSliceName` index reads it.
fn pod_slice_name(pod: &Value) -> &str {
    annotation(pod, WORKLOAD_SLICE_NAME_ANNOTATION).or_else(|| annotation(pod, WORKLOAD_ANNOTATION)).unwrap_or("")
}

fn gates(pod: &Value) -> &[Value] {
    pod.pointer("/spec/schedulingGates").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn has_elastic_gate(pod: &Value) -> bool {
    gates(pod).iter().any(|g| str_at(g, "/name") == ELASTIC_JOB_SCHEDULING_GATE)
}

/// `utilpod.IsTerminated`: the pod succeeded or failed.
fn terminated(pod: &Value) -> bool {
    matches!(str_at(pod, "/status/phase"), "Succeeded" | "Failed")
}

impl KueueController {
    /// The slice whose granted counts cap ungating for each job owning elastic slices, by chain.
    fn active_slices(&self, world: &World) -> Vec<Value> {
        // Not-finished elastic slices by (namespace, owner UID), oldest first by
        // creationTimestamp then UID (`FindNotFinishedWorkloads`).
        let mut by_owner: BTreeMap<(String, String), Vec<&Value>> = BTreeMap::new();
        for wl in world.all(Kind::Workload) {
            if finished(wl) || annotation(wl, ELASTIC_JOB_ANNOTATION) != Some("true") {
                continue;
            }
            let Some(owner) = controller_owner(wl).and_then(|o| o.get("uid")).and_then(Value::as_str) else {
                continue;
            };
            by_owner.entry((str_at(wl, "/metadata/namespace").to_string(), owner.to_string())).or_default().push(wl);
        }
        let mut active = Vec::new();
        for mut slices in by_owner.into_values() {
            slices.sort_by(|a, b| {
                str_at(a, "/metadata/creationTimestamp")
                    .cmp(str_at(b, "/metadata/creationTimestamp"))
                    .then_with(|| str_at(a, "/metadata/uid").cmp(str_at(b, "/metadata/uid")))
            });
            let latest = if self.config.defective(KueueDefect::UngateBeforeSliceAdmitted) {
                slices.last().copied()
            } else {
                slices.iter().rev().find(|w| has_quota_reservation(w) && !evicted(w)).copied().filter(|w| admitted(w))
            };
            active.extend(latest.cloned());
        }
        active
    }

    /// One pass of the ungater; `Ok(true)` when a write conflicted.
    pub(super) async fn ungate_elastic_pods(&self, world: &mut World) -> Result<bool, KueueError> {
        if !self.config.elastic_jobs {
            return Ok(false);
        }
        let mut again = false;
        for wl in self.active_slices(world) {
            let ns = str_at(&wl, "/metadata/namespace");
            let chain = slice_name(&wl);
            let granted: BTreeMap<String, i64> =
                workload_pod_sets(&wl).into_iter().map(|p| (p.name, p.count)).collect();
            let mut gated: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
            let mut ungated: BTreeMap<&str, i64> = BTreeMap::new();
            for pod in world.all(Kind::Pod) {
                if str_at(pod, "/metadata/namespace") != ns || pod_slice_name(pod) != chain || terminated(pod) {
                    continue;
                }
                let ps = label(pod, PODSET_LABEL).unwrap_or("");
                if has_elastic_gate(pod) {
                    gated.entry(ps).or_default().push(pod);
                } else {
                    *ungated.entry(ps).or_insert(0) += 1;
                }
            }
            // The world lists pods by name, so each PodSet's candidates are lowest-named first.
            let to_ungate: Vec<Value> = gated
                .into_iter()
                .flat_map(|(ps, pods)| {
                    let room = granted.get(ps).copied().unwrap_or(0) - ungated.get(ps).copied().unwrap_or(0);
                    pods.into_iter().take(room.max(0) as usize).cloned()
                })
                .collect();
            for pod in to_ungate {
                let rest: Vec<Value> =
                    gates(&pod).iter().filter(|g| str_at(g, "/name") != ELASTIC_JOB_SCHEDULING_GATE).cloned().collect();
                let rest = if rest.is_empty() { Value::Null } else { Value::Array(rest) };
                if let Err(e) =
                    self.patch(world, Kind::Pod, &pod, json!({"spec": {"schedulingGates": rest}}), false, true).await
                {
                    let (ns, name) = key_of(&pod);
                    tracing::debug!(error = %e, "ungating {ns}/{name}");
                    again = true;
                }
            }
        }
        Ok(again)
    }
}
