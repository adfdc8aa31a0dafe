//! Reference controllers and simulated cluster actors for kproof.
//!
//! Everything here talks to the API only through [`kube::Client`], so the same controller runs
//! in-process against the fake API server (in virtual time) or against any real cluster.
//!
//! - [`sim`]: what a real cluster has and the fake one lacks (scheduler, kubelet).
//! - [`crds`]: Rust types for the custom resources the controllers use.
//! - [`kuberay`]: the RayCluster reconciler, modelled on KubeRay v1.7.0.
//! - [`kueue`]: queues, quota, admission, workload slicing and the Ray job framework, modelled
//!   on Kueue v0.19.2 with PR 11264's RayService upgrade gate.
//! - [`dra`]: kube-controller-manager's resourceclaim and podgroupprotection controllers,
//!   modelled on Kubernetes 1.37.2, with the DRA profiles (baseline, podgroup, workloads, raw).

pub mod api_errors;
pub mod crds;
pub mod dra;
pub mod events;
pub mod kuberay;
pub mod kueue;
pub mod sim;
mod watch;

/// Where controllers read "now" from: the fake server's (virtual) clock in-process, the wall
/// clock against a real cluster.
pub use apimachinery::Clock;
