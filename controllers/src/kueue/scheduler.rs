//! Admission (`pkg/scheduler`): per ClusterQueue, pending Workloads in queue order (priority,
//! then creation time), flavors tried in order against nominal quota, replacement slices
//! charged only their delta and pinned to the replaced slice's flavors, preemption within the
//! ClusterQueue and reclaim from borrowing members of its cohort; then the ClusterQueue and LocalQueue status (`flavorsReservation`,
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

/// One resource's `borrowingLimit` and `lendingLimit`, when set.
#[derive(Debug, Clone, Copy, Default)]
struct Limits {
    borrowing: Option<Quantity>,
    lending: Option<Quantity>,
}

/// One ClusterQueue's quota: per resource group, the covered resources and the flavors in order;
/// the limits by (flavor, resource); the cohort it belongs to.
#[derive(Clone)]
struct Quota {
    name: String,
    groups: Vec<(Vec<String>, Vec<FlavorQuota>)>,
    limits: BTreeMap<(String, String), Limits>,
    cohort: Option<String>,
}

fn quantity(v: Option<&Value>) -> Option<Quantity> {
    match v {
        Some(Value::String(s)) => Quantity::parse(s),
        Some(Value::Number(n)) => Quantity::parse(&n.to_string()),
        _ => None,
    }
}

fn max0(q: Quantity) -> Quantity {
    if q.as_nanos() < 0 { Quantity::ZERO } else { q }
}

/// What a ClusterQueue may use of a flavor's resource (`pkg/cache/scheduler/resource_node.go`,
/// one level of cohort: the member ClusterQueues and the Cohort object of that name with its own
/// quota, if any; a Cohort's `parentName` is not followed). Without a cohort: nominal minus
/// usage, at most nominal. In a cohort each member keeps only what its `lendingLimit` holds back
/// (`localQuota` = nominal − lendingLimit; all of it is lent without one); the cohort pools the
/// rest with the Cohort object's quota; a member may use its local quota plus what the pool has
/// left, the latter capped by its `borrowingLimit` (`available`, `potentialAvailable`).
#[derive(Clone)]
struct Capacity {
    own: Quota,
    /// The other members of the cohort: their name, quota and usage.
    others: Vec<(String, Quota, Usage)>,
    /// The quota of the Cohort object named by `cohortName`, when there is one: all of it is
    /// lent to the members (`SubtreeQuota` of the cohort node).
    cohort_quota: Option<Quota>,
    /// Defect `BorrowingPastTheLimit`: `borrowingLimit` is not applied.
    unlimited: bool,
}

impl Quota {
    fn nominal(&self, flavor: &str, res: &str) -> Quantity {
        self.groups
            .iter()
            .flat_map(|(_, fs)| fs.iter())
            .find(|(f, _)| f == flavor)
            .and_then(|(_, n)| n.get(res).copied())
            .unwrap_or(Quantity::ZERO)
    }

    fn limits(&self, flavor: &str, res: &str) -> Limits {
        self.limits.get(&(flavor.to_string(), res.to_string())).copied().unwrap_or_default()
    }

    /// `localQuota`: what the member does not lend.
    fn local(&self, flavor: &str, res: &str) -> Quantity {
        match self.limits(flavor, res).lending {
            Some(l) => max0(sub(self.nominal(flavor, res), l)),
            None => Quantity::ZERO,
        }
    }
}

impl Capacity {
    /// The capacity of `cq`; `defects` are the configuration's deliberate bugs that bear on it.
    fn of(world: &World, cq: &Value, defects: &[KueueDefect]) -> Capacity {
        let own = Quota::of(cq);
        let mut others = Vec::new();
        if let Some(cohort) = &own.cohort {
            let name = str_at(cq, "/metadata/name");
            for other in world.all(Kind::ClusterQueue) {
                let q = Quota::of(other);
                if q.cohort.as_ref() != Some(cohort) || str_at(other, "/metadata/name") == name {
                    continue;
                }
                let other_name = str_at(other, "/metadata/name");
                let mut u = Usage::new();
                for w in world.all(Kind::Workload) {
                    if charges(w) && str_at(w, "/status/admission/clusterQueue") == other_name {
                        for ((f, r), q) in workload_usage(w) {
                            add(&mut u, &f, &r, q);
                        }
                    }
                }
                others.push((other_name.to_string(), q, u));
            }
        }
        let cohort_quota = own
            .cohort
            .as_ref()
            .and_then(|c| world.get(Kind::Cohort, &(String::new(), c.clone())))
            .filter(|_| !defects.contains(&KueueDefect::CohortQuotaNotLent))
            .map(Quota::of);
        Capacity { own, others, cohort_quota, unlimited: defects.contains(&KueueDefect::BorrowingPastTheLimit) }
    }

    /// The cohort's pool and its usage, `own_usage` being this queue's.
    fn pool(&self, flavor: &str, res: &str, own_usage: Quantity) -> (Quantity, Quantity) {
        let key = (flavor.to_string(), res.to_string());
        let mut subtree = Quantity::ZERO;
        let mut used = Quantity::ZERO;
        let members = std::iter::once((&self.own, own_usage))
            .chain(self.others.iter().map(|(_, q, u)| (q, u.get(&key).copied().unwrap_or(Quantity::ZERO))));
        for (q, u) in members {
            let local = q.local(flavor, res);
            subtree = subtree.plus(sub(q.nominal(flavor, res), local));
            used = used.plus(max0(sub(u, local)));
        }
        if let Some(c) = &self.cohort_quota {
            subtree = subtree.plus(c.nominal(flavor, res));
        }
        (subtree, used)
    }

    /// `Available`: what more the queue can use now.
    fn available(&self, flavor: &str, res: &str, own_usage: Quantity) -> Quantity {
        let nominal = self.own.nominal(flavor, res);
        if self.own.cohort.is_none() {
            return sub(nominal, own_usage);
        }
        let local = self.own.local(flavor, res);
        let (subtree, used) = self.pool(flavor, res, own_usage);
        let mut from_pool = sub(subtree, used);
        if let Some(bl) = self.own.limits(flavor, res).borrowing.filter(|_| !self.unlimited) {
            let stored = sub(nominal, local);
            let used_in_pool = max0(sub(own_usage, local));
            let cap = sub(stored, used_in_pool).plus(bl);
            if cap < from_pool {
                from_pool = cap;
            }
        }
        max0(sub(local, own_usage)).plus(from_pool)
    }

    /// Takes `usage` off the books of the cohort member `cq` (a preemption target's).
    fn release(&mut self, cq: &str, usage: &Usage) {
        if let Some((_, _, u)) = self.others.iter_mut().find(|(n, _, _)| n == cq) {
            for (k, q) in usage {
                let e = u.entry(k.clone()).or_insert(Quantity::ZERO);
                *e = sub(*e, *q);
            }
        }
    }

    /// Whether the cohort member `cq` uses more than its nominal quota of some (flavor,
    /// resource) in `needed` (`cqIsBorrowing`).
    fn member_borrowing(&self, cq: &str, needed: &Usage) -> bool {
        self.others.iter().find(|(n, _, _)| n == cq).is_some_and(|(_, q, u)| {
            needed
                .keys()
                .any(|(f, r)| u.get(&(f.clone(), r.clone())).copied().unwrap_or(Quantity::ZERO) > q.nominal(f, r))
        })
    }

    /// Whether admitting `assignments` on top of the queue's `usage` takes it over its nominal
    /// quota of some (flavor, resource).
    fn borrows(&self, usage: &Usage, assignments: &[Value]) -> bool {
        let mut after = usage.clone();
        for a in assignments {
            for (res, q) in podsets::from_json(a.get("resourceUsage")) {
                add(&mut after, a.pointer(&format!("/flavors/{res}")).and_then(Value::as_str).unwrap_or(""), &res, q);
            }
        }
        after.iter().any(|((f, r), q)| *q > self.own.nominal(f, r))
    }

    /// `buildCQPath`: `/<cohort>/<cq>`, or `/<cq>` outside a cohort.
    fn path(&self, cq: &str) -> String {
        let cohort = if cq == self.own_name() {
            self.own.cohort.as_deref()
        } else {
            self.others.iter().find(|(n, _, _)| n == cq).and_then(|(_, q, _)| q.cohort.as_deref())
        };
        match cohort {
            Some(c) => format!("/{c}/{cq}"),
            None => format!("/{cq}"),
        }
    }

    fn own_name(&self) -> &str {
        &self.own.name
    }

    /// `PotentialAvailable`: the most the queue could ever hold.
    fn potential(&self, flavor: &str, res: &str) -> Quantity {
        let nominal = self.own.nominal(flavor, res);
        if self.own.cohort.is_none() {
            return nominal;
        }
        let (subtree, _) = self.pool(flavor, res, Quantity::ZERO);
        let mut p = self.own.local(flavor, res).plus(subtree);
        if let Some(bl) = self.own.limits(flavor, res).borrowing.filter(|_| !self.unlimited) {
            let with_borrowing = nominal.plus(bl);
            if with_borrowing < p {
                p = with_borrowing;
            }
        }
        p
    }
}

impl Quota {
    fn of(cq: &Value) -> Quota {
        let mut groups = Vec::new();
        let mut limits = BTreeMap::new();
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
                let flavor = str_at(f, "/name").to_string();
                for r in f.get("resources").and_then(Value::as_array).into_iter().flatten() {
                    let res = str_at(r, "/name").to_string();
                    nominal.insert(res.clone(), quantity(r.get("nominalQuota")).unwrap_or(Quantity::ZERO));
                    limits.insert(
                        (flavor.clone(), res),
                        Limits {
                            borrowing: quantity(r.get("borrowingLimit")),
                            lending: quantity(r.get("lendingLimit")),
                        },
                    );
                }
                flavors.push((flavor, nominal));
            }
            groups.push((covered, flavors));
        }
        let cohort = Some(str_at(cq, "/spec/cohortName").to_string()).filter(|c| !c.is_empty());
        Quota { name: str_at(cq, "/metadata/name").to_string(), groups, limits, cohort }
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
/// `fitsResourceQuota`: over the maximum capacity is no fit at all; over what is available now
/// reports how much more is needed. The reasons of one flavor are sorted, as `Status.Message`
/// sorts them.
fn assign(
    world: &World,
    cap: &Capacity,
    usage: &Usage,
    wl: &Value,
    pinned: &BTreeMap<(String, String), String>,
) -> Fit {
    let quota = &cap.own;
    let mut extra = Usage::new();
    let mut out = Vec::new();
    // `Assignment.Message`: every PodSet that does not fit is named, joined by "; "; a PodSet
    // that does not fit still counts in the later ones' `previously considered podsets requests`.
    let mut failures: Vec<String> = Vec::new();
    'podsets: for ps in workload_pod_sets(wl) {
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
            // The first flavor that could be had by preemption (short of unused quota, but within
            // nominal quota): the PodSet keeps it in `Preempt` mode and the next PodSets are
            // still assigned; a PodSet with no such flavor ends the assignment (`assignFlavors`).
            let mut preemptible: Option<String> = None;
            for (flavor, nominal) in candidates {
                if world.get(Kind::ResourceFlavor, &(String::new(), flavor.clone())).is_none() {
                    reasons.push(format!("flavor {flavor} not found"));
                    continue;
                }
                let mut fits = true;
                let mut preempt = true;
                for (res, q) in &wanted {
                    if let Some(pin) = pinned.get(&(ps.name.clone(), (*res).clone()))
                        && pin != flavor
                    {
                        reasons.push(format!(
                            "could not assign {flavor} flavor since the original workload is assigned: {pin}"
                        ));
                        fits = false;
                        preempt = false;
                        break;
                    }
                    let used = usage.get(&(flavor.clone(), (*res).clone())).copied().unwrap_or(Quantity::ZERO);
                    // What earlier PodSets of this Workload already took (`assumedUsage`).
                    let assumed = extra.get(&(flavor.clone(), (*res).clone())).copied().unwrap_or(Quantity::ZERO);
                    let val = assumed.plus(**q);
                    let max = cap.potential(flavor, res);
                    if val > max {
                        reasons.push(format!(
                            "insufficient quota for {res} in flavor {flavor}, previously considered podsets requests ({assumed}) + current podset request ({}) > maximum capacity ({max})",
                            **q
                        ));
                        fits = false;
                        preempt = false;
                        // No fit at all: the other resources are not looked at.
                        break;
                    }
                    let available = max0(cap.available(flavor, res, used));
                    if val > available {
                        reasons.push(format!(
                            "insufficient unused quota for {res} in flavor {flavor}, {} more needed",
                            sub(val, available)
                        ));
                        fits = false;
                        // `fitsResourceQuota` tries preemption only when nominal quota covers it.
                        preempt &= nominal.get(*res).copied().unwrap_or(Quantity::ZERO) >= val;
                    }
                }
                if fits {
                    chosen = Some(flavor.clone());
                    break;
                }
                if preempt && preemptible.is_none() {
                    preemptible = Some(flavor.clone());
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
                    reasons.sort();
                    failures.push(format!("couldn't assign flavors to pod set {}: {}", ps.name, reasons.join(", ")));
                    let Some(f) = preemptible else { break 'podsets };
                    for (res, q) in wanted {
                        add(&mut extra, &f, res, *q);
                    }
                    continue 'podsets;
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
    if failures.is_empty() { Fit::Fits(out) } else { Fit::NoFit(failures.join("; ")) }
}

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
