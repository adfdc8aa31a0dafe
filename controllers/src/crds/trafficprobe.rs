//! `kproof.dev/v1alpha1` TrafficProbe: simulated client traffic a row or a kubectl user points at
//! a Gateway or a Service; the simulated data plane ([`crate::sim::traffic`]) counts what was
//! served and what failed.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// The TrafficProbe CRD manifest.
pub const TRAFFICPROBE_CRD_YAML: &str = include_str!("kproof.dev_trafficprobes.yaml");

/// The TrafficProbe CRD, parsed from [`TRAFFICPROBE_CRD_YAML`].
pub fn trafficprobe_crd() -> &'static CustomResourceDefinition {
    // Parsed once per process (every row of a run installs it); a unit test parses the
    // constant manifest, so parsing cannot fail at run time.
    static PARSED: std::sync::LazyLock<CustomResourceDefinition> =
        std::sync::LazyLock::new(|| serde_saphyr::from_str(TRAFFICPROBE_CRD_YAML).unwrap_or_default());
    &PARSED
}

/// `TrafficProbe.spec`.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "kproof.dev",
    version = "v1alpha1",
    kind = "TrafficProbe",
    plural = "trafficprobes",
    namespaced,
    status = "TrafficProbeStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct TrafficProbeSpec {
    /// Where requests go.
    pub target: ProbeTarget,
    /// The request path (CRD default `/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Requests per second of cluster time (CRD default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_second: Option<i32>,
    /// Length of a status window and how often the status is written (CRD default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_seconds: Option<i32>,
}

/// The Gateway or Service a probe sends to, in its namespace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeTarget {
    /// `Gateway` or `Service`.
    pub kind: String,
    /// The Gateway's or Service's name.
    pub name: String,
}

/// `TrafficProbe.status`: running totals, per backend and per window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrafficProbeStatus {
    /// When the data plane first saw the probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    /// Requests sent since the start.
    #[serde(default)]
    pub sent: i64,
    /// Requests answered with a 2xx.
    #[serde(default)]
    pub served: i64,
    /// Requests that got no 2xx answer (or no answer).
    #[serde(default)]
    pub failed: i64,
    /// Per backend Service.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backends: Vec<BackendCount>,
    /// The last windows, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<WindowCount>,
    /// Why the most recent request failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<ProbeFailure>,
}

/// Requests one backend Service received.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BackendCount {
    /// The backend Service.
    pub name: String,
    /// Requests it served.
    #[serde(default)]
    pub served: i64,
    /// Requests that failed on it.
    #[serde(default)]
    pub failed: i64,
}

/// Requests of one window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowCount {
    /// When the window began.
    pub start: String,
    /// Requests sent in the window.
    #[serde(default)]
    pub sent: i64,
    /// Requests served in the window.
    #[serde(default)]
    pub served: i64,
    /// Requests failed in the window.
    #[serde(default)]
    pub failed: i64,
}

/// The most recent failed request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeFailure {
    /// When it failed.
    pub time: String,
    /// The backend Service it went to (empty when the Gateway itself refused it).
    pub backend: String,
    /// The status code and body, or why there was no answer.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_crd_manifest_parses() {
        let crd = super::trafficprobe_crd();
        assert_eq!(crd.metadata.name.as_deref(), Some("trafficprobes.kproof.dev"));
        assert_eq!(crd.spec.versions[0].name, "v1alpha1");
    }
}
