//! ComponentStatus (deprecated since v1.19): kube-apiserver serves it for `get` and `list` only,
//! each entry a live health probe of etcd, the scheduler and the controller manager
//! (`pkg/registry/core/componentstatus/rest.go`). The fake server has none of those processes
//! to probe, so it serves the kind, read-only, with nothing in it.

use crate::registry::Strategy;

/// core/v1 ComponentStatus.
#[derive(Debug)]
pub(crate) struct ComponentStatusStrategy;

impl Strategy for ComponentStatusStrategy {
    fn read_only(&self) -> bool {
        true
    }
}
