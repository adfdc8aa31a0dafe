//! The job framework (`pkg/controller/jobframework/reconciler.go` `ReconcileGenericJob`) for
//! RayCluster and RayService, workload slicing (`pkg/workloadslicing`), the child-job rule, and
//! PR 11264's RayService upgrade gate (`unsuspendAdmittedChildren` with its race guard).

use super::objects::{
    self, Kind, World, annotation, condition, controller_owner, deleting, generation, is_true, key_of, label,
    new_condition, set_condition, str_at,
};
use super::podsets::{self, PodSet, PodSetInfo};
use super::*;
use crate::events::EventType;
use serde_json::{Value, json};
use sha1::{Digest, Sha1};
use std::collections::BTreeMap;

mod slicing;
mod start_stop;
mod upgrade_gate;

use slicing::{Ensure, counts, names};

/// The Ray kinds Kueue manages here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    /// `ray.io/v1` RayCluster (`spec.suspend`).
    RayCluster,
    /// `ray.io/v1` RayService.
    RayService,
    /// `ray.io/v1` RayJob (`spec.suspend`; PodSets with the submitter).
    RayJob,
}

impl JobKind {
    fn kind(self) -> Kind {
        match self {
            JobKind::RayCluster => Kind::RayCluster,
            JobKind::RayService => Kind::RayService,
            JobKind::RayJob => Kind::RayJob,
        }
    }

    fn name(self) -> &'static str {
        match self {
            JobKind::RayCluster => "RayCluster",
            JobKind::RayService => "RayService",
            JobKind::RayJob => "RayJob",
        }
    }

    /// Where the RayClusterSpec is in the job.
    fn cluster_spec_pointer(self) -> &'static str {
        match self {
            JobKind::RayCluster => "/spec",
            JobKind::RayService => "/spec/rayClusterConfig",
            JobKind::RayJob => "/spec/rayClusterSpec",
        }
    }
}

/// A Workload's state, read from its conditions.
pub fn finished(wl: &Value) -> bool {
    is_true(wl, "Finished")
}
/// QuotaReserved is True.
pub fn has_quota_reservation(wl: &Value) -> bool {
    is_true(wl, "QuotaReserved")
}
/// Admitted is True.
pub fn admitted(wl: &Value) -> bool {
    is_true(wl, "Admitted")
}
/// Evicted is True.
pub fn evicted(wl: &Value) -> bool {
    is_true(wl, "Evicted")
}

/// The PodSets of a Workload's spec.
pub fn workload_pod_sets(wl: &Value) -> Vec<PodSet> {
    wl.pointer("/spec/podSets").and_then(Value::as_array).into_iter().flatten().map(PodSet::from_json).collect()
}

/// The Workload name Kueue generates for a job (`GenerateWorkloadNameWithExtra`):
/// `<kind>-<name>` truncated to 253 − 6, `-`, and 5 hex digits of a SHA-1 over kind, group,
/// name, UID and the extra part.
pub fn workload_name(kind: &str, group: &str, name: &str, uid: &str, extra: &str) -> String {
    let mut prefix = format!("{}-{}", kind.to_lowercase(), name);
    prefix.truncate(253 - 6);
    let mut h = Sha1::new();
    h.update(kind.as_bytes());
    h.update(b"\n");
    h.update(group.as_bytes());
    h.update(b"\n");
    h.update(name.as_bytes());
    h.update(b"\n");
    h.update(uid.as_bytes());
    if !extra.is_empty() {
        h.update(b"\n");
        h.update(extra.as_bytes());
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}-{}", &hex[..5])
}

impl KueueController {
    /// Whether the job's `IsSuspended()` holds.
    fn is_suspended(&self, jk: JobKind, job: &Value) -> bool {
        match jk {
            JobKind::RayCluster | JobKind::RayJob => {
                job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true)
            }
            JobKind::RayService if self.gate(jk) => job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true),
            JobKind::RayService => job.pointer("/spec/rayClusterConfig/suspend").and_then(Value::as_bool) == Some(true),
        }
    }

    /// `IsActive()`: a RayCluster whose state is `ready`, a RayService whose `Ready` is True, a
    /// RayJob whose `jobDeploymentStatus` is neither New (`""`) nor `Suspended`.
    fn is_active(jk: JobKind, job: &Value) -> bool {
        match jk {
            JobKind::RayCluster => str_at(job, "/status/state") == "ready",
            JobKind::RayService => is_true(job, "Ready"),
            JobKind::RayJob => !matches!(str_at(job, "/status/jobDeploymentStatus"), "" | "Suspended"),
        }
    }

    /// `RayJob.Finished()`: deployment status `Complete` or `Failed`; success when the job
    /// status is `SUCCEEDED`. `(message, success)` when finished.
    fn rayjob_finished(job: &Value) -> Option<(String, bool)> {
        matches!(str_at(job, "/status/jobDeploymentStatus"), "Complete" | "Failed")
            .then(|| (str_at(job, "/status/message").to_string(), str_at(job, "/status/jobStatus") == "SUCCEEDED"))
    }

    /// How many PodSets `RunWithPodSetsInfo` and `RestorePodSetsInfo` expect: head and the
    /// worker groups, and for a RayJob in `K8sJobMode` the submitter.
    fn expected_pod_sets(jk: JobKind, job: &Value) -> usize {
        let workers = job
            .pointer(&format!("{}/workerGroupSpecs", jk.cluster_spec_pointer()))
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        workers + 1 + usize::from(jk == JobKind::RayJob && podsets::submission_mode(job) == "K8sJobMode")
    }

    fn is_elastic(&self, job: &Value) -> bool {
        self.config.elastic_jobs && annotation(job, ELASTIC_JOB_ANNOTATION) == Some("true")
    }

    /// `PodSets()` of the job.
    fn job_pod_sets(&self, world: &World, jk: JobKind, job: &Value) -> Vec<PodSet> {
        if jk == JobKind::RayJob {
            let mut sets = podsets::ray_job_pod_sets(job);
            if self.config.defective(KueueDefect::RayJobSubmitterNotCounted) {
                sets.retain(|p| p.name != "submitter");
            }
            return sets;
        }
        let template = job.pointer(jk.cluster_spec_pointer()).cloned().unwrap_or_else(|| json!({}));
        if !self.gate(jk) {
            return podsets::ray_cluster_pod_sets(&template);
        }
        let children = Self::children(world, job);
        if children.is_empty() {
            return podsets::ray_cluster_pod_sets(&template);
        }
        let mut per_child: Vec<Vec<PodSet>> =
            children.iter().map(|c| podsets::ray_cluster_pod_sets(c.get("spec").unwrap_or(&Value::Null))).collect();
        if self.config.defective(KueueDefect::PodSetsFromOneChild) {
            per_child.truncate(1);
        }
        podsets::union(&per_child)
    }

    /// The job's Workloads (controller owner = the job), oldest first.
    fn owned_workloads(world: &World, job: &Value) -> Vec<Value> {
        let uid = str_at(job, "/metadata/uid");
        let ns = str_at(job, "/metadata/namespace");
        let mut wls: Vec<Value> = world
            .all(Kind::Workload)
            .into_iter()
            .filter(|w| str_at(w, "/metadata/namespace") == ns)
            .filter(|w| controller_owner(w).is_some_and(|o| o.get("uid").and_then(Value::as_str) == Some(uid)))
            .cloned()
            .collect();
        let replaces = |a: &Value, b: &Value| {
            annotation(a, WORKLOAD_SLICE_REPLACEMENT_FOR_ANNOTATION)
                == Some(format!("{}/{}", str_at(b, "/metadata/namespace"), str_at(b, "/metadata/name")).as_str())
        };
        wls.sort_by(|a, b| {
            str_at(a, "/metadata/creationTimestamp").cmp(str_at(b, "/metadata/creationTimestamp")).then_with(|| {
                if replaces(a, b) {
                    std::cmp::Ordering::Greater
                } else if replaces(b, a) {
                    std::cmp::Ordering::Less
                } else {
                    str_at(a, "/metadata/name").cmp(str_at(b, "/metadata/name"))
                }
            })
        });
        wls
    }

    /// Runs the job framework over every Ray job, then drops the finalizer of Workloads being
    /// deleted.
    pub(super) async fn reconcile_jobs(&self, world: &mut World) -> Result<bool, KueueError> {
        let mut again = false;
        for jk in [JobKind::RayService, JobKind::RayJob, JobKind::RayCluster] {
            let keys: Vec<objects::Key> = world.all(jk.kind()).into_iter().map(key_of).collect();
            for key in keys {
                let Some(job) = world.get(jk.kind(), &key).cloned() else { continue };
                match self.reconcile_job(world, jk, &job).await {
                    Ok(a) => again |= a,
                    Err(e) => {
                        tracing::debug!(error = %e, "kueue job {}/{}", key.0, key.1);
                        again = true;
                    }
                }
            }
        }
        let doomed: Vec<Value> = world
            .all(Kind::Workload)
            .into_iter()
            .filter(|w| deleting(w))
            .filter(|w| {
                w.pointer("/metadata/finalizers")
                    .and_then(Value::as_array)
                    .is_some_and(|f| f.iter().any(|x| x.as_str() == Some(RESOURCE_IN_USE_FINALIZER)))
            })
            .cloned()
            .collect();
        for wl in doomed {
            let rest: Vec<Value> = wl
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|x| x.as_str() != Some(RESOURCE_IN_USE_FINALIZER))
                .cloned()
                .collect();
            let patch =
                json!({"metadata": {"finalizers": if rest.is_empty() { Value::Null } else { Value::Array(rest) }}});
            if let Err(e) = self.patch(world, Kind::Workload, &wl, patch, false, true).await {
                tracing::debug!(error = %e, "removing the finalizer");
                again = true;
            }
        }
        Ok(again)
    }

    async fn reconcile_job(&self, world: &mut World, jk: JobKind, job: &Value) -> Result<bool, KueueError> {
        if deleting(job) {
            return Ok(false);
        }
        if jk == JobKind::RayCluster
            && let Some(owner) = self.managed_owner(world, job)
        {
            return self.reconcile_child(world, job, &owner).await;
        }
        // `RayJob.Skip`: a RayJob on an existing cluster (`clusterSelector`) is not Kueue's.
        if jk == JobKind::RayJob
            && job.pointer("/spec/clusterSelector").and_then(Value::as_object).is_some_and(|m| !m.is_empty())
        {
            return Ok(false);
        }
        let Some(queue) = label(job, QUEUE_NAME_LABEL).map(String::from) else { return Ok(false) };
        // Step 2: a finished job finishes its Workload and gets none.
        if jk == JobKind::RayJob
            && let Some((message, success)) = Self::rayjob_finished(job)
        {
            for wl in Self::owned_workloads(world, job).iter().filter(|w| !finished(w)) {
                let reason = if success { "Succeeded" } else { "Failed" };
                self.finish_workload(world, wl, reason, &message).await?;
                let (ns, name) = key_of(wl);
                self.event(
                    jk.kind(),
                    job,
                    EventType::Normal,
                    "FinishedWorkload",
                    "FinishedWorkload",
                    format!("Workload '{ns}/{name}' is declared finished"),
                )
                .await;
            }
            return Ok(false);
        }
        // What the informer shows when the reconcile starts: the post-step lists Workloads from
        // the cache, which does not yet hold a slice this reconcile creates (the race the guard
        // is for).
        let cached_workloads = Self::owned_workloads(world, job);
        let elastic = self.is_elastic(job);
        let pod_sets = self.job_pod_sets(world, jk, job);
        let mut job = job.clone();
        if elastic && jk == JobKind::RayService {
            job = self.ensure_custom_annotations(world, &job, &pod_sets).await?;
        }
        let owned = Self::owned_workloads(world, &job);
        let not_finished: Vec<Value> = owned.iter().filter(|w| !finished(w)).cloned().collect();
        let mut again = false;
        let decided = if elastic {
            self.ensure_slices(world, &job, &not_finished, &pod_sets).await?
        } else {
            Ensure::Incompatible
        };
        let wl = match decided {
            Ensure::Use(wl) => Some(wl),
            Ensure::Wait => {
                again = true;
                None
            }
            Ensure::Create(replaced) => {
                let others = not_finished.len();
                self.create_workload(
                    world,
                    jk,
                    &job,
                    &queue,
                    &pod_sets,
                    elastic,
                    replaced.as_ref().filter(|_| others == 1),
                )
                .await?;
                None
            }
            Ensure::Incompatible => {
                self.match_or_recreate(world, jk, &job, &queue, &not_finished, &pod_sets, elastic).await?
            }
        };
        if let Some(wl) = wl {
            self.handle_workload(world, jk, &job, &wl, elastic).await?;
        }
        if self.gate(jk) {
            let key = key_of(&job);
            if let Some(current) = world.get(Kind::RayService, &key).cloned() {
                self.unsuspend_admitted_children(world, &current, &cached_workloads).await?;
            }
        }
        Ok(again)
    }

    /// Marks a Workload Finished=True with `reason`.
    pub(super) async fn finish_workload(
        &self,
        world: &mut World,
        wl: &Value,
        reason: &str,
        message: &str,
    ) -> Result<Value, KueueError> {
        let mut conds: Vec<Value> =
            wl.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
        set_condition(&mut conds, new_condition("Finished", true, reason, message, generation(wl), &self.now()));
        self.patch(world, Kind::Workload, wl, json!({"status": {"conditions": conds}}), true, true).await
    }

    /// The non-slice path: a Workload matches when its PodSet names and counts equal the
    /// job's. Stale ones are deleted (the running job stopped first), then one is created.
    #[allow(clippy::too_many_arguments)]
    async fn match_or_recreate(
        &self,
        world: &mut World,
        jk: JobKind,
        job: &Value,
        queue: &str,
        not_finished: &[Value],
        pod_sets: &[PodSet],
        elastic: bool,
    ) -> Result<Option<Value>, KueueError> {
        let matching = not_finished
            .iter()
            .find(|w| {
                let ps = workload_pod_sets(w);
                names(&ps) == names(pod_sets) && counts(&ps) == counts(pod_sets)
            })
            .cloned();
        let stale: Vec<&Value> =
            not_finished.iter().filter(|w| Some(key_of(w)) != matching.as_ref().map(key_of)).collect();
        if matching.is_none() && !self.is_suspended(jk, job) {
            let (restore_from, message) = match stale.as_slice() {
                [only] => (Some(*only), "No matching Workload; restoring pod templates according to existent Workload"),
                _ => (None, "Missing Workload; unable to restore pod templates"),
            };
            self.stop_job(world, jk, job, restore_from, message).await?;
        }
        let deleted_some = !stale.is_empty();
        for w in stale {
            let (ns, name) = key_of(w);
            let api = Kind::Workload.api(&self.client, Some(&ns));
            match api.delete(&name, &Default::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(source) => return Err(KueueError::Api { what: format!("delete Workload {ns}/{name}"), source }),
            }
            self.event(
                jk.kind(),
                job,
                EventType::Normal,
                "DeletedWorkload",
                "DeletedWorkload",
                format!("Deleted not matching Workload: {ns}/{name}"),
            )
            .await;
        }
        // As upstream: after deleting stale Workloads the reconcile ends; the next one creates
        // the new Workload (its name may be the one being deleted).
        // `handleJobWithNoWorkload`: a non-elastic job that is still active (its pods not gone
        // yet, e.g. a RayJob still `Initializing` or `Suspending`) waits for the next reconcile.
        if matching.is_none() && !deleted_some && (elastic || !Self::is_active(jk, job)) {
            self.create_workload(world, jk, job, queue, pod_sets, elastic, None).await?;
        }
        Ok(matching)
    }

    /// `constructWorkload` + `prepareWorkload(Slice)` + Create; event `CreatedWorkload`.
    #[allow(clippy::too_many_arguments)]
    async fn create_workload(
        &self,
        world: &mut World,
        jk: JobKind,
        job: &Value,
        queue: &str,
        pod_sets: &[PodSet],
        elastic: bool,
        replaced: Option<&Value>,
    ) -> Result<(), KueueError> {
        let (ns, job_name) = key_of(job);
        let uid = str_at(job, "/metadata/uid");
        let extra = if elastic {
            let job_generation = generation(job).to_string();
            match annotation(job, RAYCLUSTER_GENERATION_ANNOTATION).filter(|g| !g.is_empty()) {
                Some(rc) => format!("{job_generation}_{rc}"),
                None => job_generation,
            }
        } else {
            String::new()
        };
        let name = workload_name(jk.name(), "ray.io", &job_name, uid, &extra);
        let mut annotations = serde_json::Map::new();
        if elastic {
            annotations.insert(ELASTIC_JOB_ANNOTATION.into(), "true".into());
            match replaced {
                Some(old) => {
                    let old_name = str_at(old, "/metadata/name");
                    let chain = annotation(old, WORKLOAD_SLICE_NAME_ANNOTATION).unwrap_or(old_name);
                    annotations.insert(WORKLOAD_SLICE_NAME_ANNOTATION.into(), chain.into());
                    annotations
                        .insert(WORKLOAD_SLICE_REPLACEMENT_FOR_ANNOTATION.into(), format!("{ns}/{old_name}").into());
                }
                None => {
                    annotations.insert(WORKLOAD_SLICE_NAME_ANNOTATION.into(), name.clone().into());
                }
            }
        }
        let mut spec = json!({
            "podSets": pod_sets.iter().map(PodSet::to_json).collect::<Vec<_>>(),
            "queueName": queue,
        });
        if let Some(class) = label(job, PRIORITY_CLASS_LABEL)
            && let Some(wpc) = world.get(Kind::WorkloadPriorityClass, &(String::new(), class.to_string()))
        {
            spec["priorityClassRef"] =
                json!({"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": class});
            spec["priority"] = wpc.get("value").cloned().unwrap_or(json!(0));
        }
        let wl = json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": {JOB_UID_LABEL: uid},
                "annotations": annotations,
                "finalizers": [RESOURCE_IN_USE_FINALIZER],
                "ownerReferences": [{
                    "apiVersion": "ray.io/v1", "kind": jk.name(), "name": job_name, "uid": uid,
                    "controller": true, "blockOwnerDeletion": true,
                }],
            },
            "spec": spec,
        });
        self.create(world, Kind::Workload, &wl).await?;
        self.event(
            jk.kind(),
            job,
            EventType::Normal,
            "CreatedWorkload",
            "CreatedWorkload",
            format!("Created Workload: {ns}/{name}"),
        )
        .await;
        Ok(())
    }

    /// Steps 6 to 8 of `ReconcileGenericJob` for the job's current Workload.
    async fn handle_workload(
        &self,
        world: &mut World,
        jk: JobKind,
        job: &Value,
        wl: &Value,
        elastic: bool,
    ) -> Result<(), KueueError> {
        if finished(wl) {
            return Ok(());
        }
        if deleting(wl) {
            self.stop_job(world, jk, job, Some(wl), "Workload is deleted").await?;
            return Ok(());
        }
        if evicted(wl) {
            let message = condition(wl, "Evicted").map(|c| str_at(c, "/message").to_string()).unwrap_or_default();
            let job = self.stop_job(world, jk, job, Some(wl), &message).await?;
            if has_quota_reservation(wl) && !Self::is_active(jk, &job) {
                let reason = condition(wl, "Evicted").map(|c| str_at(c, "/reason").to_string()).unwrap_or_default();
                let now = self.now();
                let g = generation(wl);
                let mut conds: Vec<Value> =
                    wl.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
                let requeued = matches!(reason.as_str(), "Preempted" | "NodeFailures");
                set_condition(&mut conds, new_condition("Requeued", requeued, &reason, &message, g, &now));
                set_condition(&mut conds, new_condition("QuotaReserved", false, "Pending", &message, g, &now));
                if condition(wl, "Admitted").is_some() {
                    set_condition(
                        &mut conds,
                        new_condition("Admitted", false, "NoReservation", "The workload has no reservation", g, &now),
                    );
                }
                let patch = json!({"status": {"conditions": conds, "admission": null}});
                self.patch(world, Kind::Workload, wl, patch, true, true).await?;
            }
            return Ok(());
        }
        if self.is_suspended(jk, job) {
            if admitted(wl) {
                self.start_job(world, jk, job, wl, elastic).await?;
            }
            return Ok(());
        }
        if !admitted(wl) && !elastic {
            self.stop_job(world, jk, job, Some(wl), "Not admitted by cluster queue").await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_names_follow_kueue() {
        let n = workload_name("RayService", "ray.io", "test-rayservice", "uid-1", "");
        assert!(n.starts_with("rayservice-test-rayservice-"), "{n}");
        assert_eq!(n.len(), "rayservice-test-rayservice-".len() + 5);
        assert_ne!(n, workload_name("RayService", "ray.io", "test-rayservice", "uid-1", "2"));
    }
}
