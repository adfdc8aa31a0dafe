//! The status rules of Deployments and StatefulSets, each in upstream's order (kube-apiserver
//! v1.37.2 `pkg/apis/apps/validation/validation.go`: `ValidateDeploymentStatus`,
//! `ValidateDeploymentStatusUpdate`, `ValidateStatefulSetStatus`,
//! `ValidateStatefulSetStatusUpdate`).

use super::workload::nonnegative;
use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use serde_json::Value;

const ABOVE_REPLICAS: &str = "cannot be greater than status.replicas";

fn count(status: &Value, key: &str) -> i64 {
    status.get(key).and_then(Value::as_i64).unwrap_or(0)
}

/// `field.Invalid` of each counter above `status.replicas`.
fn above_replicas(out: &mut Vec<StatusCause>, status: &Value, keys: &[&str], path: &Path) {
    for k in keys {
        if count(status, k) > count(status, "replicas") {
            out.push(field::invalid(&path.child(k), count(status, k), ABOVE_REPLICAS));
        }
    }
}

/// `IsDecremented` of `status.collisionCount` (dropping it counts as a decrement).
fn collision_count_decremented(out: &mut Vec<StatusCause>, new: &Value, old: &Value) {
    let (n, o) = (new["status"]["collisionCount"].as_i64(), old["status"]["collisionCount"].as_i64());
    let decremented = match (n, o) {
        (None, Some(_)) => true,
        (Some(n), Some(o)) => n < o,
        _ => false,
    };
    if decremented {
        out.push(field::invalid(
            &Path::root("status").child("collisionCount"),
            n.unwrap_or(0),
            "cannot be decremented",
        ));
    }
}

/// `ValidateDeploymentStatusUpdate`.
pub(crate) fn deployment_status_update(new: &Value, old: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let status = &new["status"];
    let path = Path::root("status");
    for k in [
        "observedGeneration",
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
        "unavailableReplicas",
        "terminatingReplicas",
        "collisionCount",
    ] {
        nonnegative(&mut out, status, k, &path);
    }
    above_replicas(&mut out, status, &["updatedReplicas", "readyReplicas", "availableReplicas"], &path);
    if count(status, "availableReplicas") > count(status, "readyReplicas") {
        out.push(field::invalid(
            &path.child("availableReplicas"),
            count(status, "availableReplicas"),
            "cannot be greater than readyReplicas",
        ));
    }
    collision_count_decremented(&mut out, new, old);
    out
}

/// `ValidateStatefulSetStatusUpdate`.
pub(crate) fn statefulset_status_update(new: &Value, old: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let status = &new["status"];
    let path = Path::root("status");
    for k in [
        "replicas",
        "readyReplicas",
        "currentReplicas",
        "updatedReplicas",
        "availableReplicas",
        "observedGeneration",
        "collisionCount",
    ] {
        nonnegative(&mut out, status, k, &path);
    }
    above_replicas(
        &mut out,
        status,
        &["readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"],
        &path,
    );
    if count(status, "availableReplicas") > count(status, "readyReplicas") {
        out.push(field::invalid(
            &path.child("availableReplicas"),
            count(status, "availableReplicas"),
            "cannot be greater than status.readyReplicas",
        ));
    }
    collision_count_decremented(&mut out, new, old);
    out
}
