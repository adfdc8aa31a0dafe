//! The RayCluster controller (`ray-operator/controllers/ray/raycluster_controller.go`): pods,
//! the head service, status and conditions, suspend, and `upgradeStrategy` Recreate/None.

mod reconciler;
mod status;

pub use reconciler::{RayClusterReconciler, ReconcileError};
