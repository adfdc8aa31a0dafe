//! The three ways a TrainJob holds its claim, one reconciler each: `raw` (its own entry in
//! the claim's `status.reservedFor`), `pg` (a PodGroup carries the claim) and `w` (KEP-5194's
//! `spec.reservedFor`, set when the controller creates the claim).

use crate::{
    Ctl, Defect, EntryLifecycle, GROUP, PODGROUP_PROTECTION, PodState, RESERVED_FOR_MAX_SIZE, Report, claim_report,
    is_conflict_or_gone, json_of, outcome, s,
};
use anyhow::Context;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

impl Ctl {
    pub(crate) async fn reconcile_raw(&self, job: &DynamicObject, pods: &[PodState]) -> anyhow::Result<()> {
        let v = json_of(job);
        let name = job.metadata.name.clone().unwrap_or_default();
        let uid = job.metadata.uid.clone().unwrap_or_default();
        let claim_name = s(&v, &["spec", "claim"]).unwrap_or_default().to_string();
        let EntryLifecycle { deleting, replicas, active, finished, done_phase, release } =
            self.entry_lifecycle(job, pods).await?;
        let claim = self.claim(&claim_name).await?;
        let entry = json!({"apiGroup": GROUP, "resource": "trainjobs", "name": name, "uid": uid});
        let held = claim.as_ref().is_some_and(|c| {
            json_of(c)["status"]["reservedFor"].as_array().is_some_and(|l| l.iter().any(|e| e["uid"] == uid.as_str()))
        });
        if let Some(c) = &claim {
            let cv = json_of(c);
            let allocated = !cv["status"]["allocation"].is_null();
            let claim_deleting = c.metadata.deletion_timestamp.is_some();
            if release {
                self.write_entries(job, c, None, None).await?;
            } else if allocated && !claim_deleting {
                // Stale entries of an earlier job of this name go; ours is added if missing.
                self.write_entries(job, c, Some(&uid), Some(entry)).await?;
            }
        }
        if deleting {
            self.stop_owned_pods(job, pods).await?;
            if release && (!held || claim.is_none()) {
                self.set_finalizer(job, false).await?;
            }
            return Ok(());
        }
        let want = if finished { 0 } else { replicas };
        // Every pod of the job gets an entry of its own next to ours, and the list holds at
        // most 256 (C13): more pods would wait Pending for ever, so it runs no more than fit.
        let room = claim.as_ref().map_or(RESERVED_FOR_MAX_SIZE, |c| {
            let entries = json_of(c)["status"]["reservedFor"].as_array().cloned().unwrap_or_default();
            let others = entries
                .iter()
                .filter(|e| e["uid"] != uid.as_str())
                .filter(|e| !(e["resource"] == "pods" && pods.iter().any(|p| e["name"] == p.name.as_str())))
                .count() as i64;
            RESERVED_FOR_MAX_SIZE - 1 - others
        });
        let succeeded = pods.iter().filter(|p| p.phase == "Succeeded").count() as i64;
        let mut report = claim_report(held, release, &claim_name, active);
        if held && want - succeeded > room {
            let why = format!(
                "spec.replicas {replicas} does not fit ResourceClaim {claim_name}: status.reservedFor holds at most {RESERVED_FOR_MAX_SIZE} entries, so at most {room} pods run at once"
            );
            self.event(job, "ReservationLimit", &why).await;
            report.message = format!("{}; {why}", report.message);
        }
        // Before the claim is reserved for the job, one pod only: it makes the scheduler
        // allocate the claim; the rest follow once our entry is in (C2).
        let limit = if held { want.min(room.max(0)) } else { want.min(1) };
        self.sync_pods(job, pods, want, limit, claim_pod_spec(&claim_name)).await?;
        let phase = if finished { done_phase } else { "Running" };
        self.set_status(job, phase, report).await
    }

    pub(crate) async fn reconcile_pg(&self, job: &DynamicObject, pods: &[PodState]) -> anyhow::Result<()> {
        let v = json_of(job);
        let name = job.metadata.name.clone().unwrap_or_default();
        let uid = job.metadata.uid.clone().unwrap_or_default();
        if job.metadata.deletion_timestamp.is_some() {
            // Garbage collection deletes the PodGroup; podgroupprotection holds it while pods run.
            return Ok(());
        }
        let replicas = v["spec"]["replicas"].as_i64().unwrap_or(0);
        let template = s(&v, &["spec", "claim"]).unwrap_or_default().to_string();
        let active = pods.iter().filter(|p| !p.done(self.defect)).count();
        let (finished, done_phase) = outcome(pods, replicas);
        let release = (finished || replicas == 0) && active == 0;
        let released = || {
            Report::not_held(
                "Released",
                format!("PodGroup {name} deleted: its claim from ResourceClaimTemplate {template} is released"),
            )
        };
        let group = self.podgroup(&name).await?;
        if let Some(g) = &group {
            let owner_uid = g.metadata.owner_references.as_ref().and_then(|o| o.first()).map(|o| o.uid.clone());
            if owner_uid.as_deref() != Some(uid.as_str()) {
                // A PodGroup of an earlier job of this name: wait until it is gone (C12).
                let why = format!("waiting for the previous job's PodGroup {name} to go");
                return self.set_status(job, "Pending", Report::not_held("Waiting", why)).await;
            }
            if g.metadata.deletion_timestamp.is_some() {
                return self.set_status(job, if finished { done_phase } else { "Pending" }, released()).await;
            }
        }
        if self.defect == Some(Defect::StripProtection)
            && replicas == 0
            && let Some(g) = &group
        {
            // The violation KubeRay v1.7.0's kubernetes-was batch scheduler commits: strip protection to make deletion immediate.
            let kept: Vec<String> =
                g.metadata.finalizers.iter().flatten().filter(|f| *f != PODGROUP_PROTECTION).cloned().collect();
            let patch = json!({"metadata": {"finalizers": kept}});
            self.podgroups.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.context("stripping")?;
            self.podgroups.delete(&name, &DeleteParams::default()).await.context("deleting the PodGroup")?;
            return self.sync_pods(job, pods, 0, 0, Value::Null).await;
        }
        if release {
            if group.is_some() {
                match self.podgroups.delete(&name, &DeleteParams::default()).await {
                    Ok(_) => {}
                    Err(e) if is_conflict_or_gone(&e) => {}
                    Err(e) => return Err(e).context("deleting the PodGroup"),
                }
            }
            return self.set_status(job, if finished { done_phase } else { "Running" }, released()).await;
        }
        let group = match group {
            Some(g) => g,
            None => {
                let pg = json!({
                    "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                    "metadata": {"name": name, "ownerReferences": [{"apiVersion": format!("{GROUP}/v1"), "kind": "TrainJob",
                        "name": name, "uid": uid, "controller": true, "blockOwnerDeletion": true}]},
                    "spec": {"schedulingPolicy": {"basic": {}}, "resourceClaims": [{"name": "dev", "resourceClaimTemplateName": template}]},
                });
                let pg: DynamicObject = serde_json::from_value(pg)?;
                match self.podgroups.create(&PostParams::default(), &pg).await {
                    Ok(created) => created,
                    Err(e) if is_conflict_or_gone(&e) => return Ok(()),
                    Err(e) => return Err(e).context("creating the PodGroup"),
                }
            }
        };
        // The API server drops spec.resourceClaims when DRAWorkloadResourceClaims is off: pods
        // would get per-pod claims (1.36) or none (1.37). Create none, and say why (C15).
        if json_of(&group)["spec"]["resourceClaims"].as_array().is_none_or(|c| c.is_empty()) {
            self.event(job, "ReservationUnsupported", "the API server dropped the PodGroup's resourceClaims (is DRAWorkloadResourceClaims off?); no pods are created").await;
            let why = "unsupported: the API server dropped the PodGroup's resourceClaims".to_string();
            return self.set_status(job, "Blocked", Report::not_held("Unsupported", why)).await;
        }
        let want = if finished { 0 } else { replicas };
        let spec = json!({
            "restartPolicy": "Never",
            "schedulingGroup": {"podGroupName": name},
            "containers": [{"name": "trainer", "image": "busybox", "resources": {"claims": [{"name": "dev"}]}}],
            "resourceClaims": [{"name": "dev", "resourceClaimTemplateName": template}],
        });
        self.sync_pods(job, pods, want, want, spec).await?;
        let held =
            format!("PodGroup {name} holds the claim from ResourceClaimTemplate {template}: {active} active pods");
        self.set_status(job, if finished { done_phase } else { "Running" }, Report::held(held)).await
    }

    /// A deleted job's pods: background deletion waits for our finalizer before the garbage
    /// collector deletes the pods, so the controller stops them itself; orphaned pods (no owner
    /// any more, or the `orphan` finalizer at work) keep running and keep the reservation.
    pub(crate) async fn stop_owned_pods(&self, job: &DynamicObject, pods: &[PodState]) -> anyhow::Result<()> {
        let uid = job.metadata.uid.clone().unwrap_or_default();
        let orphaning = job.metadata.finalizers.as_ref().is_some_and(|f| f.iter().any(|f| f == "orphan"));
        if orphaning {
            return Ok(());
        }
        for p in pods.iter().filter(|p| !p.deleting && p.owner.as_deref() == Some(uid.as_str())) {
            if self.caches.is_some() && !self.still_owns(&p.name, &uid).await? {
                continue;
            }
            match self.pods.delete(&p.name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if is_conflict_or_gone(&e) => {}
                Err(e) => return Err(e).context("deleting a pod"),
            }
        }
        Ok(())
    }

    /// Whether the pod `name` is, read afresh, still the job `uid`'s and not being deleted.
    /// Under `--defect stale-cache` the job's cache can be newer than the pods' (the garbage
    /// collector takes an orphaned pod's owner away, then the job's `orphan` finalizer): stopping
    /// pods on the cache's word would stop orphaned ones, a C11 failure left to chance, where
    /// this defect is meant to show C16.
    pub(crate) async fn still_owns(&self, name: &str, uid: &str) -> anyhow::Result<bool> {
        let Some(pod) = self.pods.get_opt(name).await.context("reading a pod")? else { return Ok(false) };
        let owned = pod.metadata.owner_references.iter().flatten().any(|r| r.controller == Some(true) && r.uid == uid);
        Ok(owned && pod.metadata.deletion_timestamp.is_none())
    }

    /// KEP-5194 as proposed: the job declares itself in the claim's `spec.reservedFor` when it
    /// creates the claim, and takes its entry out of `status.reservedFor` when done.
    pub(crate) async fn reconcile_w(&self, job: &DynamicObject, pods: &[PodState]) -> anyhow::Result<()> {
        let v = json_of(job);
        let name = job.metadata.name.clone().unwrap_or_default();
        let uid = job.metadata.uid.clone().unwrap_or_default();
        let template = s(&v, &["spec", "claim"]).unwrap_or_default().to_string();
        let claim_name = format!("{name}-{template}");
        let EntryLifecycle { deleting, replicas, active, finished, done_phase, release } =
            self.entry_lifecycle(job, pods).await?;
        let mut claim = self.claim(&claim_name).await?;
        if let Some(c) = &claim {
            let cv = json_of(c);
            let declared = s(&cv, &["spec", "reservedFor", "uid"]);
            let owner = c.metadata.owner_references.iter().flatten().find(|r| r.controller == Some(true));
            if declared.is_none() && owner.is_some_and(|o| o.uid == uid) {
                // Our own create came back without spec.reservedFor: the API server does not
                // know DRAReservedForWorkloads. Pods would get per-pod entries; create none (C15).
                return self.unsupported(job).await;
            }
            if declared != Some(uid.as_str()) {
                // The claim of an earlier job of this name (C12): its entry goes once that job's
                // pods are done, then the claim, and only then is ours created.
                let old_active = pods.iter().any(|p| p.owner.as_deref() != Some(uid.as_str()) && !p.done(self.defect));
                if !old_active {
                    self.write_entries(job, c, Some(&uid), None).await?;
                    let reserved = cv["status"]["reservedFor"].as_array().is_some_and(|l| !l.is_empty());
                    if !reserved && c.metadata.deletion_timestamp.is_none() {
                        match self.claims.delete(&claim_name, &DeleteParams::default()).await {
                            Ok(_) => {}
                            Err(e) if is_conflict_or_gone(&e) => {}
                            Err(e) => return Err(e).context("deleting the previous job's claim"),
                        }
                    }
                }
                if deleting {
                    self.stop_owned_pods(job, pods).await?;
                    if active == 0 {
                        self.set_finalizer(job, false).await?;
                    }
                    return Ok(());
                }
                let why = format!("waiting for the previous job's ResourceClaim {claim_name} to go");
                return self.set_status(job, "Pending", Report::not_held("Waiting", why)).await;
            }
        }
        if claim.is_none() && !release && !finished && !deleting {
            claim = match self.create_w_claim(job, &claim_name, &template).await? {
                Some(c) if json_of(&c)["spec"]["reservedFor"].is_null() => return self.unsupported(job).await,
                other => other,
            };
        }
        let held = claim.as_ref().is_some_and(|c| {
            json_of(c)["status"]["reservedFor"].as_array().is_some_and(|l| l.iter().any(|e| e["uid"] == uid.as_str()))
        });
        if release && let Some(c) = &claim {
            // Only our own entry goes; pod and foreign entries stay as they are (C7, C8).
            self.write_entries(job, c, None, None).await?;
        }
        if deleting {
            self.stop_owned_pods(job, pods).await?;
            if release && (!held || claim.is_none()) {
                self.set_finalizer(job, false).await?;
            }
            return Ok(());
        }
        let Some(claim) = claim else {
            let phase = if finished { done_phase } else { "Running" };
            return self.set_status(job, phase, claim_report(false, true, &claim_name, active)).await;
        };
        // A claim being deleted takes no new consumers: running pods go on, none are added (C10).
        let want = if finished { 0 } else { replicas };
        let limit = if claim.metadata.deletion_timestamp.is_some() { 0 } else { want };
        self.sync_pods(job, pods, want, limit, claim_pod_spec(&claim_name)).await?;
        let phase = if finished { done_phase } else { "Running" };
        self.set_status(job, phase, claim_report(held, release, &claim_name, active)).await
    }

    /// Creates the job's claim from the template, declaring the job as its consumer; `None`
    /// when someone else created it meanwhile (the next pass reads it).
    pub(crate) async fn create_w_claim(
        &self,
        job: &DynamicObject,
        claim_name: &str,
        template: &str,
    ) -> anyhow::Result<Option<DynamicObject>> {
        let name = job.metadata.name.clone().unwrap_or_default();
        let t =
            self.templates.get(template).await.with_context(|| format!("reading ResourceClaimTemplate {template}"))?;
        let tv = json_of(&t);
        let mut spec = tv["spec"]["spec"].clone();
        spec["reservedFor"] =
            json!({"apiGroup": GROUP, "resource": "trainjobs", "name": name, "uid": job.metadata.uid});
        let claim = json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": claim_name, "labels": tv["spec"]["metadata"]["labels"],
                         "ownerReferences": [{"apiVersion": format!("{GROUP}/v1"), "kind": "TrainJob", "name": name,
                                              "uid": job.metadata.uid, "controller": true, "blockOwnerDeletion": true}]},
            "spec": spec,
        });
        let claim: DynamicObject = serde_json::from_value(claim)?;
        match self.claims.create(&PostParams::default(), &claim).await {
            Ok(c) => Ok(Some(c)),
            Err(e) if is_conflict_or_gone(&e) => Ok(None),
            Err(e) => Err(e).context("creating the claim"),
        }
    }
}

/// The pod spec of a `raw` or `w` job: one container using the ResourceClaim `claim_name`.
fn claim_pod_spec(claim_name: &str) -> Value {
    json!({
        "restartPolicy": "Never",
        "containers": [{"name": "trainer", "image": "busybox", "resources": {"claims": [{"name": "dev"}]}}],
        "resourceClaims": [{"name": "dev", "resourceClaimName": claim_name}],
    })
}
