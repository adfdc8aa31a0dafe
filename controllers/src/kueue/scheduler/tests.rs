//! Unit tests of the quota arithmetic: what a ClusterQueue may use alone and in a cohort
//! (`lendingLimit`, `borrowingLimit`, a Cohort object's own quota), as Kueue v0.19.2's
//! `pkg/cache/scheduler/resource_node.go` computes `Available` and `PotentialAvailable`.

use super::quota::*;
use apimachinery::Quantity;
use serde_json::{Value, json};

fn q(s: &str) -> Quantity {
    Quantity::parse(s).unwrap_or_else(|| panic!("quantity {s}"))
}

/// A ClusterQueue with one flavor `f` of `cpu`.
fn cq(name: &str, cohort: Option<&str>, nominal: &str, borrowing: Option<&str>, lending: Option<&str>) -> Value {
    let mut resource = json!({"name": "cpu", "nominalQuota": nominal});
    if let Some(b) = borrowing {
        resource["borrowingLimit"] = json!(b);
    }
    if let Some(l) = lending {
        resource["lendingLimit"] = json!(l);
    }
    let mut spec =
        json!({"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [resource]}]}]});
    if let Some(c) = cohort {
        spec["cohortName"] = json!(c);
    }
    json!({"metadata": {"name": name}, "spec": spec})
}

fn usage(cpu: &str) -> Usage {
    let mut u = Usage::new();
    add(&mut u, "f", "cpu", q(cpu));
    u
}

fn capacity(own: Value, others: Vec<(Value, &str)>, cohort_quota: Option<Value>) -> Capacity {
    Capacity {
        own: Quota::of(&own),
        others: others
            .into_iter()
            .map(|(v, used)| {
                (v["metadata"]["name"].as_str().unwrap_or_default().to_string(), Quota::of(&v), usage(used))
            })
            .collect(),
        cohort_quota: cohort_quota.as_ref().map(Quota::of),
        unlimited: false,
    }
}

#[test]
fn a_queue_alone_has_its_nominal_quota_less_its_usage() {
    let cap = capacity(cq("a", None, "10", None, None), vec![], None);
    assert_eq!(cap.available("f", "cpu", q("4")), q("6"));
    assert_eq!(cap.potential("f", "cpu"), q("10"));
    // A flavor or resource the queue does not name has no quota.
    assert_eq!(cap.available("g", "cpu", Quantity::ZERO), Quantity::ZERO);
}

#[test]
fn in_a_cohort_a_queue_may_borrow_what_the_others_leave_unused() {
    let cap = capacity(cq("a", Some("c"), "10", None, None), vec![(cq("b", Some("c"), "6", None, None), "2")], None);
    // 10 of its own + 4 that b does not use.
    assert_eq!(cap.available("f", "cpu", Quantity::ZERO), q("14"));
    assert_eq!(cap.available("f", "cpu", q("12")), q("2"));
    assert_eq!(cap.potential("f", "cpu"), q("16"));
}

#[test]
fn a_borrowing_limit_caps_what_is_taken_from_the_pool() {
    let cap =
        capacity(cq("a", Some("c"), "10", Some("1"), None), vec![(cq("b", Some("c"), "6", None, None), "0")], None);
    assert_eq!(cap.available("f", "cpu", Quantity::ZERO), q("11"));
    assert_eq!(cap.potential("f", "cpu"), q("11"));
    // The defect `BorrowingPastTheLimit` ignores it.
    let unlimited = Capacity { unlimited: true, ..cap };
    assert_eq!(unlimited.available("f", "cpu", Quantity::ZERO), q("16"));
}

#[test]
fn a_lending_limit_keeps_the_rest_of_a_members_quota_for_itself() {
    // b lends at most 2 of its 6: a can borrow 2 even though b uses nothing.
    let cap =
        capacity(cq("a", Some("c"), "10", None, None), vec![(cq("b", Some("c"), "6", None, Some("2")), "0")], None);
    assert_eq!(cap.available("f", "cpu", Quantity::ZERO), q("12"));
    // b's own usage first comes out of what it keeps: 3 used leaves the lent 2 in the pool.
    let cap =
        capacity(cq("a", Some("c"), "10", None, None), vec![(cq("b", Some("c"), "6", None, Some("2")), "3")], None);
    assert_eq!(cap.available("f", "cpu", Quantity::ZERO), q("12"));
    let cap =
        capacity(cq("a", Some("c"), "10", None, None), vec![(cq("b", Some("c"), "6", None, Some("2")), "5")], None);
    assert_eq!(cap.available("f", "cpu", Quantity::ZERO), q("11"));
}

#[test]
fn a_cohort_objects_own_quota_is_lent_to_its_members() {
    let cohort = json!({"metadata": {"name": "c"}, "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "5"}]}]}]}});
    let cap = capacity(cq("a", Some("c"), "10", None, None), vec![], Some(cohort));
    assert_eq!(cap.available("f", "cpu", Quantity::ZERO), q("15"));
}

#[test]
fn a_workload_charges_its_assignments_usage_by_flavor() {
    let wl = json!({"spec": {"podSets": []}, "status": {"admission": {"podSetAssignments": [
        {"name": "head", "count": 1, "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "2"}},
        {"name": "workers", "count": 3, "flavors": {"cpu": "g"}, "resourceUsage": {"cpu": "3"}}
    ]}}});
    let u = workload_usage(&wl);
    assert_eq!(u.get(&("f".to_string(), "cpu".to_string())), Some(&q("2")));
    assert_eq!(u.get(&("g".to_string(), "cpu".to_string())), Some(&q("3")));
}
