//! `coordination.k8s.io` Leases (`ValidateLeaseSpec`): positive durations, non-negative
//! transitions, a known strategy.

use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use crate::registry::{ResourceType, Strategy};
use serde_json::Value;

/// coordination/v1 Lease.
#[derive(Debug)]
pub(crate) struct LeaseStrategy;

impl Strategy for LeaseStrategy {
    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        let mut out = Vec::new();
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let path = Path::root("spec");
        if let Some(n) = spec.get("leaseDurationSeconds").and_then(Value::as_i64).filter(|n| *n <= 0) {
            out.push(field::invalid(&path.child("leaseDurationSeconds"), n, "must be greater than 0"));
        }
        if let Some(n) = spec.get("leaseTransitions").and_then(Value::as_i64).filter(|n| *n < 0) {
            out.push(field::invalid(&path.child("leaseTransitions"), n, "must be greater than or equal to 0"));
        }
        out
    }
}
