//! `apps`: the workload kinds' printers.

pub(crate) mod deployment;
pub(crate) mod replicaset;
pub(crate) mod statefulset;
