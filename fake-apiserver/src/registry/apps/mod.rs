//! `apps`: the workload kinds' defaults, validation and printers.

pub(crate) mod deployment;
pub(crate) mod replicaset;
pub(crate) mod statefulset;
pub(crate) mod workload;
