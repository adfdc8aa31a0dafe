//! Admission (`pkg/scheduler`): per ClusterQueue, pending Workloads in queue order (priority,
//! then creation time), flavors tried in order against nominal quota, replacement slices
//! charged only their delta and pinned to the replaced slice's flavors, preemption within the
//! ClusterQueue and reclaim from borrowing members of its cohort; then the ClusterQueue and LocalQueue status (`flavorsReservation`,
//! `flavorsUsage`, the workload counts, `Active`).

mod quota;
#[cfg(test)]
mod tests;

use super::jobs::{admitted, evicted, finished, has_quota_reservation, workload_pod_sets};
use super::objects::{Kind, World, annotation, deleting, generation, key_of, new_condition, set_condition, str_at};
use super::podsets::{self, Resources};
use super::*;
use crate::events::EventType;
use apimachinery::Quantity;
pub use quota::workload_usage;
use quota::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;

impl KueueController {
    /// One scheduling cycle over every ClusterQueue.
    ///
    /// A cycle takes the heads of every ClusterQueue and tries those that fit without borrowing
    /// first (`entryOrdering`): so a first round admits, queue by queue, the leading Workloads
    /// that fit within nominal quota, and the second does everything else (borrowing, pending,
    /// preemption). Otherwise a Workload that reclaims its queue's nominal quota from a borrower
    /// could lose it again to the evicted borrower, requeued in a queue looked at first.
    pub(super) async fn schedule(&self, world: &mut World) -> Result<bool, KueueError> {
        let mut again = false;
        let cqs: Vec<Value> = world.all(Kind::ClusterQueue).into_iter().cloned().collect();
        for borrowing in [false, true] {
            for cq in &cqs {
                let Some(cq) = world.get(Kind::ClusterQueue, &key_of(cq)).cloned() else { continue };
                match self.schedule_queue(world, &cq, borrowing).await {
                    Ok(a) => again |= a,
                    Err(e) => {
                        tracing::debug!(error = %e, "kueue scheduling");
                        again = true;
                    }
                }
            }
        }
        Ok(again)
    }

    /// Schedules one ClusterQueue's pending Workloads in queue order; without `borrowing` it
    /// stops at the first that does not fit within the queue's nominal quota.
    async fn schedule_queue(&self, world: &mut World, cq: &Value, borrowing: bool) -> Result<bool, KueueError> {
        let cq_name = str_at(cq, "/metadata/name").to_string();
        if !matches!(str_at(cq, "/spec/stopPolicy"), "" | "None") {
            return Ok(false);
        }
        let defects: Vec<KueueDefect> = [KueueDefect::BorrowingPastTheLimit, KueueDefect::CohortQuotaNotLent]
            .into_iter()
            .filter(|d| self.config.defective(*d))
            .collect();
        let cap = Capacity::of(world, cq, &defects);
        let strict = str_at(cq, "/spec/queueingStrategy") == "StrictFIFO";
        let mut pending: Vec<Value> = world
            .all(Kind::Workload)
            .into_iter()
            .filter(|w| !has_quota_reservation(w) && !finished(w) && !deleting(w))
            .filter(|w| w.pointer("/spec/active") != Some(&json!(false)))
            .filter(|w| cluster_queue_of(world, w).as_deref() == Some(cq_name.as_str()))
            .cloned()
            .collect();
        pending.sort_by(|a, b| {
            priority(b)
                .cmp(&priority(a))
                .then_with(|| str_at(a, "/metadata/creationTimestamp").cmp(str_at(b, "/metadata/creationTimestamp")))
                .then_with(|| str_at(a, "/metadata/uid").cmp(str_at(b, "/metadata/uid")))
        });
        for wl in pending {
            let mut usage = Usage::new();
            let admitted_here: Vec<Value> = world
                .all(Kind::Workload)
                .into_iter()
                .filter(|w| charges(w) && str_at(w, "/status/admission/clusterQueue") == cq_name)
                .cloned()
                .collect();
            for w in &admitted_here {
                for ((f, r), q) in workload_usage(w) {
                    add(&mut usage, &f, &r, q);
                }
            }
            let replaced = annotation(&wl, WORKLOAD_SLICE_REPLACEMENT_FOR_ANNOTATION)
                .and_then(|k| {
                    admitted_here
                        .iter()
                        .find(|w| format!("{}/{}", str_at(w, "/metadata/namespace"), str_at(w, "/metadata/name")) == k)
                })
                .cloned();
            let mut pinned = BTreeMap::new();
            if let Some(old) = &replaced {
                for ((f, r), q) in workload_usage(old) {
                    let e = usage.entry((f, r)).or_insert(Quantity::ZERO);
                    *e = sub(*e, q);
                }
                for a in
                    old.pointer("/status/admission/podSetAssignments").and_then(Value::as_array).into_iter().flatten()
                {
                    for (res, f) in a.get("flavors").and_then(Value::as_object).into_iter().flatten() {
                        pinned.insert(
                            (str_at(a, "/name").to_string(), res.clone()),
                            f.as_str().unwrap_or("").to_string(),
                        );
                    }
                }
            }
            let fit = assign(world, &cap, &usage, &wl, &pinned);
            if !borrowing && !matches!(&fit, Fit::Fits(a) if !cap.borrows(&usage, a)) {
                break;
            }
            match fit {
                Fit::Fits(assignments) => {
                    self.admit(world, &wl, &cq_name, assignments, replaced.as_ref()).await?;
                }
                Fit::NoFit(message) => {
                    let preempting =
                        self.preempt(world, &cap, &usage, &wl, &admitted_here, replaced.as_ref(), &pinned, cq).await?;
                    let message = if preempting > 0 {
                        format!("Pending the preemption of {preempting} workload(s)")
                    } else {
                        message
                    };
                    self.mark_pending(world, &wl, &message).await?;
                    if strict {
                        break;
                    }
                }
            }
        }
        Ok(false)
    }

    /// Writes the admission, QuotaReserved and Admitted, and finishes the replaced slice.
    async fn admit(
        &self,
        world: &mut World,
        wl: &Value,
        cq: &str,
        assignments: Vec<Value>,
        replaced: Option<&Value>,
    ) -> Result<(), KueueError> {
        let now = self.now();
        let g = generation(wl);
        let mut conds: Vec<Value> =
            wl.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
        set_condition(
            &mut conds,
            new_condition(
                "QuotaReserved",
                true,
                "QuotaReserved",
                &format!("Quota reserved in ClusterQueue {cq}"),
                g,
                &now,
            ),
        );
        for t in ["Evicted", "Preempted"] {
            objects::reset_active_condition(&mut conds, t, "QuotaReserved", g, &now);
        }
        set_condition(&mut conds, new_condition("Admitted", true, "Admitted", "The workload is admitted", g, &now));
        let patch = json!({"status": {"conditions": conds, "admission": {"clusterQueue": cq, "podSetAssignments": assignments}}});
        let wl2 = self.patch(world, Kind::Workload, wl, patch, true, true).await?;
        let waited = self.clock.now().as_second()
            - jiff::Timestamp::from_str_or_epoch(str_at(wl, "/metadata/creationTimestamp"));
        self.event(
            Kind::Workload,
            &wl2,
            EventType::Normal,
            "QuotaReserved",
            "QuotaReserved",
            format!("Quota reserved in ClusterQueue {cq}, wait time since queued was {waited}s"),
        )
        .await;
        self.event(
            Kind::Workload,
            &wl2,
            EventType::Normal,
            "Admitted",
            "Admitted",
            format!("Admitted by ClusterQueue {cq}, wait time since reservation was 0s"),
        )
        .await;
        if let Some(old) = replaced
            && let Some(old) = world.get(Kind::Workload, &key_of(old)).cloned()
        {
            let message = format!(
                "Replaced to accommodate a workload (UID: {}, JobUID: {}) due to workload slice aggregation",
                str_at(&wl2, "/metadata/uid"),
                objects::label(&wl2, JOB_UID_LABEL).unwrap_or("")
            );
            let old2 = self.finish_workload(world, &old, "WorkloadSliceReplaced", &message).await?;
            self.event(Kind::Workload, &old2, EventType::Normal, "WorkloadSliceReplaced", "Replaced", message).await;
        }
        Ok(())
    }

    /// QuotaReserved=False/`Pending` with the message, and a Warning event `Pending` when it
    /// changed.
    async fn mark_pending(&self, world: &mut World, wl: &Value, message: &str) -> Result<(), KueueError> {
        let mut conds: Vec<Value> =
            wl.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
        if !set_condition(
            &mut conds,
            new_condition("QuotaReserved", false, "Pending", message, generation(wl), &self.now()),
        ) {
            return Ok(());
        }
        let wl2 = self.patch(world, Kind::Workload, wl, json!({"status": {"conditions": conds}}), true, true).await?;
        self.event(Kind::Workload, &wl2, EventType::Warning, "Pending", "Pending", message.to_string()).await;
        Ok(())
    }

    /// Classical preemption (`pkg/scheduler/preemption`): candidates are the ClusterQueue's own
    /// admitted Workloads its `withinClusterQueue` policy allows and, in a cohort, the Workloads
    /// of members that borrow, as `reclaimWithinCohort` allows (`findCandidates`); ordered
    /// evicted first, other queues' before the own, lowest priority, then newest
    /// (`CandidatesOrdering`). They are taken off the books one by one, a member's only while it
    /// still borrows (`candidateIsValid`), until `wl` fits. The replaced slice is never a
    /// target. Returns how many targets are being preempted.
    #[allow(clippy::too_many_arguments)]
    async fn preempt(
        &self,
        world: &mut World,
        cap: &Capacity,
        usage: &Usage,
        wl: &Value,
        admitted_here: &[Value],
        replaced: Option<&Value>,
        pinned: &BTreeMap<(String, String), String>,
        cq: &Value,
    ) -> Result<usize, KueueError> {
        let within = str_at(cq, "/spec/preemption/withinClusterQueue");
        let reclaim = str_at(cq, "/spec/preemption/reclaimWithinCohort");
        let own = cap.own_name().to_string();
        let p = priority(wl);
        let created = str_at(wl, "/metadata/creationTimestamp");
        // `SatisfiesPreemptionPolicy`.
        let allows = |policy: &str, w: &Value| match policy {
            "Any" => true,
            "LowerPriority" => priority(w) < p,
            "LowerOrNewerEqualPriority" => {
                priority(w) < p || (priority(w) == p && str_at(w, "/metadata/creationTimestamp") > created)
            }
            _ => false,
        };
        let mut candidates: Vec<(Value, String)> = admitted_here
            .iter()
            .filter(|w| replaced.is_none_or(|r| key_of(r) != key_of(w)))
            .filter(|w| allows(within, w))
            .map(|w| (w.clone(), own.clone()))
            .collect();
        // The (flavor, resource) pairs `wl` could use: those a member must borrow in to be
        // reclaimed from.
        let requested: Resources = workload_pod_sets(wl)
            .iter()
            .flat_map(|ps| podsets::times(&podsets::pod_requests(&ps.template), ps.count))
            .collect();
        let mut needed = Usage::new();
        for (covered, flavors) in &cap.own.groups {
            for (flavor, _) in flavors {
                for res in covered.iter().filter(|r| requested.contains_key(*r)) {
                    needed.insert((flavor.clone(), res.clone()), Quantity::ZERO);
                }
            }
        }
        if cap.own.cohort.is_some()
            && !matches!(reclaim, "" | "Never")
            && !self.config.defective(KueueDefect::NoReclaimWithinCohort)
        {
            for w in world.all(Kind::Workload) {
                let at = str_at(w, "/status/admission/clusterQueue");
                if charges(w) && at != own && cap.member_borrowing(at, &needed) && allows(reclaim, w) {
                    candidates.push((w.clone(), at.to_string()));
                }
            }
        }
        candidates.sort_by(|(a, qa), (b, qb)| {
            evicted(b)
                .cmp(&evicted(a))
                .then_with(|| (*qa == own).cmp(&(*qb == own)))
                .then_with(|| priority(a).cmp(&priority(b)))
                .then_with(|| str_at(b, "/metadata/creationTimestamp").cmp(str_at(a, "/metadata/creationTimestamp")))
        });
        let mut sim = cap.clone();
        let mut freed = usage.clone();
        let mut targets: Vec<(Value, String)> = Vec::new();
        for (c, at) in candidates {
            let charge = workload_usage(&c);
            if at == own {
                for (k, q) in &charge {
                    let e = freed.entry(k.clone()).or_insert(Quantity::ZERO);
                    *e = sub(*e, *q);
                }
            } else if sim.member_borrowing(&at, &needed) {
                sim.release(&at, &charge);
            } else {
                continue;
            }
            targets.push((c, at));
            let Fit::Fits(assignments) = assign(world, &sim, &freed, wl, pinned) else { continue };
            // Reclaiming keeps the preemptor within its nominal quota, or it borrows as well.
            let within_nominal = !cap.borrows(&freed, &assignments);
            let now = self.now();
            for (t, at) in &targets {
                if evicted(t) {
                    continue;
                }
                let (reason, why) = if *at == own {
                    ("InClusterQueue", "prioritization in the ClusterQueue")
                } else if within_nominal {
                    ("InCohortReclamation", "reclamation within the cohort")
                } else {
                    ("InCohortReclaimWhileBorrowing", "reclamation within the cohort while borrowing")
                };
                let g = generation(t);
                let message = format!(
                    "Preempted to accommodate a workload (UID: {}, JobUID: {}) due to {why}; preemptor path: {}; preemptee path: {}",
                    str_at(wl, "/metadata/uid"),
                    objects::label(wl, JOB_UID_LABEL).unwrap_or(""),
                    cap.path(&own),
                    cap.path(at),
                );
                let mut conds: Vec<Value> =
                    t.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
                set_condition(&mut conds, new_condition("Evicted", true, "Preempted", &message, g, &now));
                set_condition(&mut conds, new_condition("Preempted", true, reason, &message, g, &now));
                let t2 =
                    self.patch(world, Kind::Workload, t, json!({"status": {"conditions": conds}}), true, true).await?;
                self.event(Kind::Workload, &t2, EventType::Normal, "Preempted", "Preempted", message).await;
            }
            return Ok(targets.len());
        }
        Ok(0)
    }

    /// Writes every ClusterQueue's and LocalQueue's status when it changed.
    pub(super) async fn write_queue_status(&self, world: &mut World) -> Result<(), KueueError> {
        let wls: Vec<Value> = world.all(Kind::Workload).into_iter().cloned().collect();
        let now = self.now();
        let cqs: Vec<Value> = world.all(Kind::ClusterQueue).into_iter().cloned().collect();
        for cq in cqs {
            let name = str_at(&cq, "/metadata/name").to_string();
            let quota = Quota::of(&cq);
            let mine: Vec<&Value> = wls
                .iter()
                .filter(|w| {
                    cluster_queue_of(world, w).as_deref() == Some(name.as_str())
                        || str_at(w, "/status/admission/clusterQueue") == name
                })
                .collect();
            let status = self.queue_status(world, &quota, &mine, &cq, &now, true);
            self.write_status(world, Kind::ClusterQueue, &cq, status).await?;
        }
        let lqs: Vec<Value> = world.all(Kind::LocalQueue).into_iter().cloned().collect();
        for lq in lqs {
            let (ns, name) = key_of(&lq);
            let cq_name = str_at(&lq, "/spec/clusterQueue").to_string();
            let Some(cq) = world.get(Kind::ClusterQueue, &(String::new(), cq_name)).cloned() else { continue };
            let quota = Quota::of(&cq);
            let mine: Vec<&Value> = wls
                .iter()
                .filter(|w| str_at(w, "/metadata/namespace") == ns && str_at(w, "/spec/queueName") == name)
                .collect();
            let status = self.queue_status(world, &quota, &mine, &lq, &now, false);
            self.write_status(world, Kind::LocalQueue, &lq, status).await?;
        }
        Ok(())
    }

    fn queue_status(
        &self,
        world: &World,
        quota: &Quota,
        wls: &[&Value],
        obj: &Value,
        now: &str,
        cluster: bool,
    ) -> Value {
        let live: Vec<&&Value> = wls.iter().filter(|w| !finished(w) && !deleting(w)).collect();
        let pending = live.iter().filter(|w| !has_quota_reservation(w)).count();
        let reserving = live.iter().filter(|w| has_quota_reservation(w)).count();
        let admitted_n = live.iter().filter(|w| has_quota_reservation(w) && admitted(w)).count();
        let mut reservation = Usage::new();
        let mut in_use = Usage::new();
        for w in wls.iter().filter(|w| charges(w)) {
            for ((f, r), q) in workload_usage(w) {
                add(&mut reservation, &f, &r, q);
                if admitted(w) {
                    add(&mut in_use, &f, &r, q);
                }
            }
        }
        let list = |u: &Usage| -> Value {
            let mut out = Vec::new();
            for (covered, flavors) in &quota.groups {
                for (flavor, _) in flavors {
                    let resources: Vec<Value> = covered
                        .iter()
                        .map(|r| {
                            let q = u.get(&(flavor.clone(), r.clone())).copied().unwrap_or(Quantity::ZERO);
                            // `borrowed` is what is used beyond nominal, only in a cohort.
                            let borrowed = if quota.cohort.is_some() {
                                max0(sub(q, quota.nominal(flavor, r)))
                            } else {
                                Quantity::ZERO
                            };
                            if cluster {
                                json!({"name": r, "total": q.to_string(), "borrowed": borrowed.to_string()})
                            } else {
                                json!({"name": r, "total": q.to_string()})
                            }
                        })
                        .collect();
                    out.push(json!({"name": flavor, "resources": resources}));
                }
            }
            Value::Array(out)
        };
        let missing: Vec<String> = quota
            .groups
            .iter()
            .flat_map(|(_, fs)| fs.iter().map(|(f, _)| f.clone()))
            .filter(|f| world.get(Kind::ResourceFlavor, &(String::new(), f.clone())).is_none())
            .collect();
        let g = generation(obj);
        let mut conds: Vec<Value> =
            obj.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
        let active = if cluster {
            if missing.is_empty() {
                new_condition("Active", true, "Ready", "Can admit new workloads", g, now)
            } else {
                new_condition(
                    "Active",
                    false,
                    "FlavorNotFound",
                    &format!("Can't admit new workloads: references missing ResourceFlavor(s): {}.", missing.join(",")),
                    g,
                    now,
                )
            }
        } else {
            new_condition("Active", true, "Ready", "Can submit new workloads to localQueue", g, now)
        };
        set_condition(&mut conds, active);
        let mut status = obj.get("status").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
        status["conditions"] = Value::Array(conds);
        status["pendingWorkloads"] = json!(pending);
        status["reservingWorkloads"] = json!(reserving);
        status["admittedWorkloads"] = json!(admitted_n);
        status["flavorsReservation"] = list(&reservation);
        status["flavorsUsage"] = list(&in_use);
        status
    }

    async fn write_status(&self, world: &mut World, kind: Kind, obj: &Value, status: Value) -> Result<(), KueueError> {
        if obj.get("status") == Some(&status) {
            return Ok(());
        }
        self.patch(world, kind, obj, json!({"status": status}), true, false).await?;
        Ok(())
    }
}

trait FromStrOrEpoch {
    fn from_str_or_epoch(s: &str) -> i64;
}

impl FromStrOrEpoch for jiff::Timestamp {
    fn from_str_or_epoch(s: &str) -> i64 {
        s.parse::<jiff::Timestamp>().map(|t| t.as_second()).unwrap_or(0)
    }
}
