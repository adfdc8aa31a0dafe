//! Rust types for the custom resources the reference controllers use, and the CRD manifests
//! that register them with an API server.

pub mod raycluster;

pub use raycluster::{RayCluster, RayClusterSpec, RayClusterStatus, WorkerGroupSpec};
