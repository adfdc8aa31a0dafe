//! kproof: conformance tables for the controllers that upgrade and gate ML clusters.
//!
//! - [`suite`]: the table format (rows, steps, expectations, what a row needs), loading with
//!   file/line errors, and lint.
//! - [`backend`]: where rows run — in-process (the fake API server in virtual time) or any
//!   cluster through a kubeconfig — each stating its capabilities; a row a backend cannot run
//!   is skipped with the reason, never passed.
//! - [`actors`]: the reference controllers and simulated components a backend starts per row.
//! - [`engine`]: runs a row's fixtures, steps and expectations (including ordering over the
//!   timeline of writes), and selects and schedules rows.
//! - [`differential`]: the seeded request corpus sent to the fake server and to a real
//!   kube-apiserver, and their agreement.
//! - [`certify`]: `kproof certify reservedfor`: an integrator's controller, run as a child
//!   process, judged against the ReservedFor contract's obligations.
//! - [`report`]: typed run events consumed by the human summary, the JSON report and the JUnit
//!   XML, and the flight recorder of failing rows.

pub mod actors;
pub mod backend;
pub mod certify;
pub mod differential;
pub mod engine;
pub mod report;
pub mod suite;
