//! `apps`: the workload kinds' defaults, validation and printers.

pub(crate) mod deployment;
mod int_or_percent;
pub(crate) mod replicaset;
pub(crate) mod statefulset;
mod volume_claim_templates;
pub(crate) mod workload;
mod workload_status;
