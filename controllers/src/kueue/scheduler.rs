//! Admission (`pkg/scheduler`): per ClusterQueue, pending Workloads in queue order (priority,
//! then creation time), flavors tried in order against nominal quota, replacement slices
//! charged only their delta and pinned to the replaced slice's flavors, preemption within the
//! ClusterQueue; then the ClusterQueue and LocalQueue status (`flavorsReservation`,
//! `flavorsUsage`, the workload counts, `Active`).

use super::jobs::{admitted, evicted, finished, has_quota_reservation, workload_pod_sets};
use super::objects::{Kind, World, annotation, deleting, generation, key_of, new_condition, set_condition, str_at};
use super::podsets::{self, Resources};
use super::*;
use crate::events::EventType;
use apimachinery::Quantity;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Usage by (flavor, resource).
type Usage = BTreeMap<(String, String), Quantity>;

fn add(u: &mut Usage, flavor: &str, resource: &str, q: Quantity) {
    let e = u.entry((flavor.to_string(), resource.to_string())).or_insert(Quantity::ZERO);
    *e = e.plus(q);
}

fn sub(a: Quantity, b: Quantity) -> Quantity {
    a.plus(b.times(-1))
}

/// The usage a Workload with a reservation charges: each assignment's `resourceUsage`, scaled
/// down when the spec's count fell below the admitted one (elastic scale-down in place).
pub fn workload_usage(wl: &Value) -> Usage {
    let mut u = Usage::new();
    let spec: BTreeMap<String, podsets::PodSet> =
        workload_pod_sets(wl).into_iter().map(|p| (p.name.clone(), p)).collect();
    for a in wl.pointer("/status/admission/podSetAssignments").and_then(Value::as_array).into_iter().flatten() {
        let name = str_at(a, "/name");
        let admitted_count = a.get("count").and_then(Value::as_i64).unwrap_or(1);
        let spec_count = spec.get(name).map_or(admitted_count, |p| p.count);
        let usage = podsets::from_json(a.get("resourceUsage"));
        for (res, q) in usage {
            let flavor = a.pointer(&format!("/flavors/{res}")).and_then(Value::as_str).unwrap_or("");
            let q = if spec_count < admitted_count {
                // resourceUsage × spec/admitted, computed per pod so it stays exact.
                match spec.get(name) {
                    Some(p) => podsets::pod_requests(&p.template)
                        .get(&res)
                        .copied()
                        .unwrap_or(Quantity::ZERO)
                        .times(spec_count),
                    None => q,
                }
            } else {
                q
            };
            add(&mut u, flavor, &res, q);
        }
    }
    u
}

/// The ClusterQueue a Workload queues in, through its LocalQueue.
fn cluster_queue_of(world: &World, wl: &Value) -> Option<String> {
    let ns = str_at(wl, "/metadata/namespace").to_string();
    let lq = str_at(wl, "/spec/queueName").to_string();
    world.get(Kind::LocalQueue, &(ns, lq)).map(|q| str_at(q, "/spec/clusterQueue").to_string())
}

fn priority(wl: &Value) -> i64 {
    wl.pointer("/spec/priority").and_then(Value::as_i64).unwrap_or(0)
}

/// Whether the Workload holds quota in the ClusterQueue's books: reserved, not finished, not
/// being deleted.
fn charges(wl: &Value) -> bool {
    has_quota_reservation(wl) && !finished(wl) && !deleting(wl) && wl.pointer("/spec/active") != Some(&json!(false))
}

/// A flavor of a resource group: its name and the nominal quota of each resource.
type FlavorQuota = (String, BTreeMap<String, Quantity>);

/// One ClusterQueue's quota: per resource group, the covered resources and the flavors in order.
struct Quota {
    groups: Vec<(Vec<String>, Vec<FlavorQuota>)>,
}

impl Quota {
    fn of(cq: &Value) -> Quota {
        let mut groups = Vec::new();
        for g in cq.pointer("/spec/resourceGroups").and_then(Value::as_array).into_iter().flatten() {
            let covered: Vec<String> = g
                .get("coveredResources")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|r| r.as_str().map(String::from))
                .collect();
            let mut flavors = Vec::new();
            for f in g.get("flavors").and_then(Value::as_array).into_iter().flatten() {
                let mut nominal = BTreeMap::new();
                for r in f.get("resources").and_then(Value::as_array).into_iter().flatten() {
                    let q = match r.get("nominalQuota") {
                        Some(Value::String(s)) => Quantity::parse(s),
                        Some(Value::Number(n)) => Quantity::parse(&n.to_string()),
                        _ => None,
                    };
                    nominal.insert(str_at(r, "/name").to_string(), q.unwrap_or(Quantity::ZERO));
                }
                flavors.push((str_at(f, "/name").to_string(), nominal));
            }
            groups.push((covered, flavors));
        }
        Quota { groups }
    }
}

/// The result of trying to fit a Workload.
enum Fit {
    /// Every PodSet got flavors: the assignments.
    Fits(Vec<Value>),
    /// It does not fit; the pending message.
    NoFit(String),
}

/// Assigns flavors to every PodSet of `wl` against `usage` (which already excludes `replaced`'s
/// charge), pinned to `pinned` flavors (the replaced slice's, by PodSet and resource).
fn assign(world: &World, quota: &Quota, usage: &Usage, wl: &Value, pinned: &BTreeMap<(String, String), String>) -> Fit {
    let mut extra = Usage::new();
    let mut out = Vec::new();
    for ps in workload_pod_sets(wl) {
        let total: Resources = podsets::times(&podsets::pod_requests(&ps.template), ps.count);
        let mut flavors = serde_json::Map::new();
        for res in total.keys() {
            if !quota.groups.iter().any(|(covered, _)| covered.contains(res)) {
                return Fit::NoFit(format!(
                    "couldn't assign flavors to pod set {}: resource {res} unavailable in ClusterQueue",
                    ps.name
                ));
            }
        }
        // Per resource group, the first flavor where every requested resource of the group fits;
        // a flavor that does not fit reports each resource that is short (`flavorassigner`).
        for (covered, candidates) in &quota.groups {
            let wanted: Vec<(&String, &Quantity)> = total.iter().filter(|(r, _)| covered.contains(r)).collect();
            if wanted.is_empty() {
                continue;
            }
            let mut reasons = Vec::new();
            let mut chosen = None;
            for (flavor, nominal) in candidates {
                if world.get(Kind::ResourceFlavor, &(String::new(), flavor.clone())).is_none() {
                    reasons.push(format!("flavor {flavor} not found"));
                    continue;
                }
                let mut fits = true;
                for (res, q) in &wanted {
                    if let Some(pin) = pinned.get(&(ps.name.clone(), (*res).clone()))
                        && pin != flavor
                    {
                        reasons.push(format!(
                            "could not assign {flavor} flavor since the original workload is assigned: {pin}"
                        ));
                        fits = false;
                        break;
                    }
                    let nominal = nominal.get(*res).copied().unwrap_or(Quantity::ZERO);
                    let used = usage.get(&(flavor.clone(), (*res).clone())).copied().unwrap_or(Quantity::ZERO);
                    let more = extra.get(&(flavor.clone(), (*res).clone())).copied().unwrap_or(Quantity::ZERO);
                    let available = sub(nominal, used.plus(more));
                    let available = if available.as_nanos() < 0 { Quantity::ZERO } else { available };
                    if **q > available {
                        reasons.push(format!(
                            "insufficient unused quota for {res} in flavor {flavor}, {} more needed",
                            sub(**q, available)
                        ));
                        fits = false;
                    }
                }
                if fits {
                    chosen = Some(flavor.clone());
                    break;
                }
            }
            match chosen {
                Some(f) => {
                    for (res, q) in wanted {
                        add(&mut extra, &f, res, *q);
                        flavors.insert(res.clone(), Value::String(f.clone()));
                    }
                }
                None => {
                    return Fit::NoFit(format!(
                        "couldn't assign flavors to pod set {}: {}",
                        ps.name,
                        reasons.join(", ")
                    ));
                }
            }
        }
        out.push(json!({
            "name": ps.name,
            "flavors": flavors,
            "resourceUsage": podsets::to_json(&total),
            "count": ps.count,
        }));
    }
    Fit::Fits(out)
}

impl KueueController {
    /// One scheduling cycle over every ClusterQueue.
    pub(super) async fn schedule(&self, world: &mut World) -> Result<bool, KueueError> {
        let mut again = false;
        let cqs: Vec<Value> = world.all(Kind::ClusterQueue).into_iter().cloned().collect();
        for cq in cqs {
            match self.schedule_queue(world, &cq).await {
                Ok(a) => again |= a,
                Err(e) => {
                    tracing::debug!(error = %e, "kueue scheduling");
                    again = true;
                }
            }
        }
        Ok(again)
    }

    async fn schedule_queue(&self, world: &mut World, cq: &Value) -> Result<bool, KueueError> {
        let cq_name = str_at(cq, "/metadata/name").to_string();
        if !matches!(str_at(cq, "/spec/stopPolicy"), "" | "None") {
            return Ok(false);
        }
        let quota = Quota::of(cq);
        let strict = str_at(cq, "/spec/queueingStrategy") == "StrictFIFO";
        let policy = str_at(cq, "/spec/preemption/withinClusterQueue").to_string();
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
            match assign(world, &quota, &usage, &wl, &pinned) {
                Fit::Fits(assignments) => {
                    self.admit(world, &wl, &cq_name, assignments, replaced.as_ref()).await?;
                }
                Fit::NoFit(message) => {
                    let preempting = self
                        .preempt(world, &quota, &usage, &wl, &admitted_here, replaced.as_ref(), &pinned, &policy)
                        .await?;
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

    /// Preemption within the ClusterQueue (`LowerPriority`, `LowerOrNewerEqualPriority`):
    /// the lowest-priority, newest admitted Workloads are evicted until `wl` would fit. The
    /// replaced slice is never a target. Returns how many targets are being preempted.
    #[allow(clippy::too_many_arguments)]
    async fn preempt(
        &self,
        world: &mut World,
        quota: &Quota,
        usage: &Usage,
        wl: &Value,
        admitted_here: &[Value],
        replaced: Option<&Value>,
        pinned: &BTreeMap<(String, String), String>,
        policy: &str,
    ) -> Result<usize, KueueError> {
        if !matches!(policy, "LowerPriority" | "LowerOrNewerEqualPriority") {
            return Ok(0);
        }
        let p = priority(wl);
        let created = str_at(wl, "/metadata/creationTimestamp");
        let mut candidates: Vec<&Value> = admitted_here
            .iter()
            .filter(|w| replaced.is_none_or(|r| key_of(r) != key_of(w)))
            .filter(|w| {
                priority(w) < p
                    || (policy == "LowerOrNewerEqualPriority"
                        && priority(w) == p
                        && str_at(w, "/metadata/creationTimestamp") > created)
            })
            .collect();
        candidates.sort_by(|a, b| {
            priority(a)
                .cmp(&priority(b))
                .then_with(|| str_at(b, "/metadata/creationTimestamp").cmp(str_at(a, "/metadata/creationTimestamp")))
        });
        let mut freed = usage.clone();
        let mut targets = Vec::new();
        for c in candidates {
            for ((f, r), q) in workload_usage(c) {
                let e = freed.entry((f, r)).or_insert(Quantity::ZERO);
                *e = sub(*e, q);
            }
            targets.push(c.clone());
            if matches!(assign(world, quota, &freed, wl, pinned), Fit::Fits(_)) {
                let now = self.now();
                for t in &targets {
                    if evicted(t) {
                        continue;
                    }
                    let g = generation(t);
                    let message = format!(
                        "Preempted to accommodate a workload (UID: {}, JobUID: {}) due to prioritization in the ClusterQueue",
                        str_at(wl, "/metadata/uid"),
                        objects::label(wl, JOB_UID_LABEL).unwrap_or("")
                    );
                    let mut conds: Vec<Value> =
                        t.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
                    set_condition(&mut conds, new_condition("Evicted", true, "Preempted", &message, g, &now));
                    set_condition(&mut conds, new_condition("Preempted", true, "InClusterQueue", &message, g, &now));
                    let t2 = self
                        .patch(world, Kind::Workload, t, json!({"status": {"conditions": conds}}), true, true)
                        .await?;
                    self.event(Kind::Workload, &t2, EventType::Normal, "Preempted", "Preempted", message).await;
                }
                return Ok(targets.len());
            }
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
                            if cluster {
                                json!({"name": r, "total": q.to_string(), "borrowed": "0"})
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
