//! `batch`.

mod indexes;
pub(crate) mod job;
mod job_spec;
mod job_status;
mod job_update;
mod pod_failure_policy;
mod success_policy;
