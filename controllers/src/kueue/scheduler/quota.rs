//! Quota arithmetic (`pkg/cache/scheduler`, `pkg/scheduler/flavorassigner`): what a Workload
//! charges, what a ClusterQueue may use of each flavor alone or in its cohort, and the flavor
//! assignment of a Workload's PodSets.

use super::super::jobs::{finished, has_quota_reservation, workload_pod_sets};
use super::super::objects::{Kind, World, deleting, str_at};
use super::super::podsets::{self, Resources};
use super::super::*;
use apimachinery::Quantity;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Usage by (flavor, resource).
pub(super) type Usage = BTreeMap<(String, String), Quantity>;

pub(super) fn add(u: &mut Usage, flavor: &str, resource: &str, q: Quantity) {
    let e = u.entry((flavor.to_string(), resource.to_string())).or_insert(Quantity::ZERO);
    *e = e.plus(q);
}

pub(super) fn sub(a: Quantity, b: Quantity) -> Quantity {
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
pub(super) fn cluster_queue_of(world: &World, wl: &Value) -> Option<String> {
    let ns = str_at(wl, "/metadata/namespace").to_string();
    let lq = str_at(wl, "/spec/queueName").to_string();
    world.get(Kind::LocalQueue, &(ns, lq)).map(|q| str_at(q, "/spec/clusterQueue").to_string())
}

pub(super) fn priority(wl: &Value) -> i64 {
    wl.pointer("/spec/priority").and_then(Value::as_i64).unwrap_or(0)
}

/// Whether the Workload holds quota in the ClusterQueue's books: reserved, not finished, not
/// being deleted.
pub(super) fn charges(wl: &Value) -> bool {
    has_quota_reservation(wl) && !finished(wl) && !deleting(wl) && wl.pointer("/spec/active") != Some(&json!(false))
}

/// A flavor of a resource group: its name and the nominal quota of each resource.
pub(super) type FlavorQuota = (String, BTreeMap<String, Quantity>);

/// One resource's `borrowingLimit` and `lendingLimit`, when set.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Limits {
    pub(super) borrowing: Option<Quantity>,
    pub(super) lending: Option<Quantity>,
}

/// One ClusterQueue's quota: per resource group, the covered resources and the flavors in order;
/// the limits by (flavor, resource); the cohort it belongs to.
#[derive(Clone)]
pub(super) struct Quota {
    pub(super) name: String,
    pub(super) groups: Vec<(Vec<String>, Vec<FlavorQuota>)>,
    pub(super) limits: BTreeMap<(String, String), Limits>,
    pub(super) cohort: Option<String>,
}

pub(super) fn quantity(v: Option<&Value>) -> Option<Quantity> {
    match v {
        Some(Value::String(s)) => Quantity::parse(s),
        Some(Value::Number(n)) => Quantity::parse(&n.to_string()),
        _ => None,
    }
}

pub(super) fn max0(q: Quantity) -> Quantity {
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
pub(super) struct Capacity {
    pub(super) own: Quota,
    /// The other members of the cohort: their name, quota and usage.
    pub(super) others: Vec<(String, Quota, Usage)>,
    /// The quota of the Cohort object named by `cohortName`, when there is one: all of it is
    /// lent to the members (`SubtreeQuota` of the cohort node).
    pub(super) cohort_quota: Option<Quota>,
    /// Defect `BorrowingPastTheLimit`: `borrowingLimit` is not applied.
    pub(super) unlimited: bool,
}

impl Quota {
    pub(super) fn nominal(&self, flavor: &str, res: &str) -> Quantity {
        self.groups
            .iter()
            .flat_map(|(_, fs)| fs.iter())
            .find(|(f, _)| f == flavor)
            .and_then(|(_, n)| n.get(res).copied())
            .unwrap_or(Quantity::ZERO)
    }

    pub(super) fn limits(&self, flavor: &str, res: &str) -> Limits {
        self.limits.get(&(flavor.to_string(), res.to_string())).copied().unwrap_or_default()
    }

    /// `localQuota`: what the member does not lend.
    pub(super) fn local(&self, flavor: &str, res: &str) -> Quantity {
        match self.limits(flavor, res).lending {
            Some(l) => max0(sub(self.nominal(flavor, res), l)),
            None => Quantity::ZERO,
        }
    }
}

impl Capacity {
    /// The capacity of `cq`; `defects` are the configuration's deliberate bugs that bear on it.
    pub(super) fn of(world: &World, cq: &Value, defects: &[KueueDefect]) -> Capacity {
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
    pub(super) fn pool(&self, flavor: &str, res: &str, own_usage: Quantity) -> (Quantity, Quantity) {
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
    pub(super) fn available(&self, flavor: &str, res: &str, own_usage: Quantity) -> Quantity {
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
    pub(super) fn release(&mut self, cq: &str, usage: &Usage) {
        if let Some((_, _, u)) = self.others.iter_mut().find(|(n, _, _)| n == cq) {
            for (k, q) in usage {
                let e = u.entry(k.clone()).or_insert(Quantity::ZERO);
                *e = sub(*e, *q);
            }
        }
    }

    /// Whether the cohort member `cq` uses more than its nominal quota of some (flavor,
    /// resource) in `needed` (`cqIsBorrowing`).
    pub(super) fn member_borrowing(&self, cq: &str, needed: &Usage) -> bool {
        self.others.iter().find(|(n, _, _)| n == cq).is_some_and(|(_, q, u)| {
            needed
                .keys()
                .any(|(f, r)| u.get(&(f.clone(), r.clone())).copied().unwrap_or(Quantity::ZERO) > q.nominal(f, r))
        })
    }

    /// Whether admitting `assignments` on top of the queue's `usage` takes it over its nominal
    /// quota of some (flavor, resource).
    pub(super) fn borrows(&self, usage: &Usage, assignments: &[Value]) -> bool {
        let mut after = usage.clone();
        for a in assignments {
            for (res, q) in podsets::from_json(a.get("resourceUsage")) {
                add(&mut after, a.pointer(&format!("/flavors/{res}")).and_then(Value::as_str).unwrap_or(""), &res, q);
            }
        }
        after.iter().any(|((f, r), q)| *q > self.own.nominal(f, r))
    }

    /// `buildCQPath`: `/<cohort>/<cq>`, or `/<cq>` outside a cohort.
    pub(super) fn path(&self, cq: &str) -> String {
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

    pub(super) fn own_name(&self) -> &str {
        &self.own.name
    }

    /// `PotentialAvailable`: the most the queue could ever hold.
    pub(super) fn potential(&self, flavor: &str, res: &str) -> Quantity {
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
    pub(super) fn of(cq: &Value) -> Quota {
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
pub(super) enum Fit {
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
pub(super) fn assign(
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
