//! The server's configuration. kube-apiserver's feature gates are typed in
//! `registry::features` (the kinds' strategies read them) and re-exported here, as are the
//! deliberate defects of `registry::defects`.

use crate::registry::defects::ActiveDefect;
use jiff::Timestamp;
use std::time::Duration;

/// Knobs of a server instance.
#[derive(Debug, Clone)]
pub struct Config {
    /// How many changes the watch history window keeps; older resourceVersions get 410 Expired.
    pub history: usize,
    /// How many writes the timeline keeps (0 turns it off).
    pub timeline_capacity: usize,
    /// Request bodies larger than this get 413 (kube-apiserver: 3 MiB).
    pub max_request_body_bytes: usize,
    /// How often a watch with `allowWatchBookmarks` gets a BOOKMARK.
    pub bookmark_interval: Duration,
    /// How long a watch without `timeoutSeconds` lasts.
    pub default_watch_timeout: Duration,
    /// Where the clock starts; `None` for the current wall-clock time.
    pub clock_start: Option<Timestamp>,
    /// The `gitVersion` that `/version` reports.
    pub kubernetes_version: String,
    /// Requests handled at once before new ones get 429 TooManyRequests, like kube-apiserver's
    /// `--max-requests-inflight` (0: no limit). A watch holds a slot only until its stream starts.
    pub max_requests_in_flight: usize,
    /// kube-apiserver's `--feature-gates`.
    pub feature_gates: FeatureGates,
    /// `--authorization-mode=RBAC`: requests are authorized by the stored Roles, ClusterRoles
    /// and bindings (the default policy is written at start). Off by default: everyone,
    /// anonymous included, may do everything.
    pub rbac: bool,
    /// What envtest runs (controller-runtime's test environment): kube-apiserver and etcd and
    /// nothing of kube-controller-manager. No garbage collector (dependents outlive their
    /// owners) and no namespace controller (a deleted namespace stays `Terminating` with its
    /// content); the CRD finalizer, part of kube-apiserver, still runs. Off by default.
    pub envtest: bool,
    /// A deliberate deviation from kube-apiserver, for proving that the `apiserver` table
    /// catches regressions (harness test `wrong_apiserver`). Exists only with the `defects`
    /// feature.
    #[cfg(feature = "defects")]
    pub defect: Option<ServerDefect>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            history: 10_000,
            timeline_capacity: 1_000_000,
            max_request_body_bytes: 3 * 1024 * 1024,
            bookmark_interval: Duration::from_secs(60),
            default_watch_timeout: Duration::from_secs(1800),
            clock_start: None,
            kubernetes_version: "v1.37.0".into(),
            max_requests_in_flight: 400,
            feature_gates: FeatureGates::default(),
            rbac: false,
            envtest: false,
            #[cfg(feature = "defects")]
            defect: None,
        }
    }
}

impl Config {
    /// The defect the server's parts check for (none without the `defects` feature).
    pub(crate) fn active_defect(&self) -> ActiveDefect {
        #[cfg(feature = "defects")]
        {
            ActiveDefect::new(self.defect)
        }
        #[cfg(not(feature = "defects"))]
        {
            ActiveDefect::default()
        }
    }
}

pub use crate::registry::defects::ServerDefect;
pub use crate::registry::features::{FeatureGate, FeatureGateError, FeatureGates};
