//! Jobs: they orphan their pods when a DELETE names no propagation policy.

use crate::registry::Strategy;

/// batch/v1 Job.
#[derive(Debug)]
pub(crate) struct JobStrategy;

impl Strategy for JobStrategy {
    /// `batch/v1` Jobs keep `OrphanDependents` as their default for backwards compatibility.
    fn orphans_dependents_by_default(&self) -> bool {
        true
    }
}
