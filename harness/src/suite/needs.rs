//! What a row needs from a backend: capabilities, and per-component feature gates and settings.
//!
//! Everything here is typed: a capability, an actor, a gate or a setting that does not exist
//! fails to load (and `kproof lint` reports it with file and line), so a typo can never make a
//! row silently skip or silently test a default.

use controllers::dra::{DraConfig, DraProfile, UnknownEntries};
use controllers::kuberay::{KubeRayGate, KubeRaySettings};
use controllers::sim::KubeletSettings;
use controllers::sim::autoscaler::AutoscalerSettings;
use controllers::sim::gateway::GatewaySettings;
use controllers::sim::rayhead::RayHeadSettings;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// A controller or simulated component the harness can run for a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ActorName {
    /// The KubeRay operator (reference controller, or the real one on the upstream backend).
    Kuberay,
    /// The simulated kube-scheduler.
    Scheduler,
    /// The simulated kubelet (and the nodes it registers).
    Kubelet,
    /// The simulated EndpointSlice controller (kube-controller-manager's).
    Endpoints,
    /// The simulated Ray heads: every cluster's dashboard (Serve REST API) and Serve proxies.
    RayHead,
    /// The simulated Ray autoscaler (Serve replica demand to worker replicas).
    Autoscaler,
    /// The simulated Gateway API controller (`kproof.dev/gateway-controller`).
    Gateway,
    /// The simulated gateway data plane, sending the requests of `TrafficProbe` objects.
    Traffic,
    /// The harness's own self-test controller (copies labelled ConfigMaps).
    Echo,
    /// kube-controller-manager's resourceclaim controller (reference, or the real one).
    ResourceClaimController,
    /// kube-controller-manager's podgroupprotection controller (reference, or the real one).
    PodGroupProtection,
    /// The DRA driver stand-in publishing ResourceSlices for the simulated nodes.
    DraDriver,
    /// kube-controller-manager's device-taint-eviction controller (reference, or the real one).
    DeviceTaintEviction,
    /// Kueue (reference controller, or the real one on the upstream backend).
    Kueue,
    /// The API server itself, as a target of knob steps only (no actor starts for it): `restart`
    /// restarts kube-apiserver on the upstream backend and makes the fake API server do what
    /// clients see of one ([`fake_apiserver::ApiServer::restart`]).
    KubeApiserver,
}

impl ActorName {
    /// Every actor, in start order.
    pub const ALL: [ActorName; 15] = [
        ActorName::Kuberay,
        ActorName::Scheduler,
        ActorName::Kubelet,
        ActorName::Endpoints,
        ActorName::RayHead,
        ActorName::Autoscaler,
        ActorName::Gateway,
        ActorName::Traffic,
        ActorName::Echo,
        ActorName::ResourceClaimController,
        ActorName::PodGroupProtection,
        ActorName::DraDriver,
        ActorName::DeviceTaintEviction,
        ActorName::Kueue,
        ActorName::KubeApiserver,
    ];

    /// The name rows and knob steps use.
    pub fn as_str(self) -> &'static str {
        match self {
            ActorName::Kuberay => "kuberay",
            ActorName::Scheduler => "scheduler",
            ActorName::Kubelet => "kubelet",
            ActorName::Endpoints => "endpoints",
            ActorName::RayHead => "ray-head",
            ActorName::Autoscaler => "autoscaler",
            ActorName::Gateway => "gateway",
            ActorName::Traffic => "traffic",
            ActorName::Echo => "echo",
            ActorName::ResourceClaimController => "resourceclaim-controller",
            ActorName::PodGroupProtection => "podgroup-protection",
            ActorName::DraDriver => "dra-driver",
            ActorName::DeviceTaintEviction => "device-taint-eviction",
            ActorName::Kueue => "kueue",
            ActorName::KubeApiserver => "kube-apiserver",
        }
    }
}

impl fmt::Display for ActorName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ActorName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ActorName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for ActorName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ActorName".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = ActorName::ALL.iter().map(|a| a.as_str()).collect();
        schemars::json_schema!({"type": "string", "description": "An actor the harness can run", "enum": names})
    }
}

impl FromStr for ActorName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ActorName::ALL.into_iter().find(|a| a.as_str() == s).ok_or_else(|| {
            let known: Vec<&str> = ActorName::ALL.iter().map(|a| a.as_str()).collect();
            format!("unknown actor {s:?} (known: {})", known.join(", "))
        })
    }
}

/// Something a backend offers and a row may need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    /// Time can be advanced instantly (a paused clock): rows that wait hours take milliseconds.
    VirtualTime,
    /// The timeline of writes is available (the server's log, or a watch recorder).
    Timeline,
    /// Timeline entries know their verb, user agent and field manager (the server's write log).
    WriteActors,
    /// Components can be configured per row (feature gates, settings).
    ControllerSettings,
    /// Knob steps can turn the actors' knobs.
    Knobs,
    /// A row can turn its DRA profile's gate off in some components (`needs.dra.gatesOff`).
    DraGateSkew,
    /// Kueue runs PR 11264's RayService upgrade gate (head commit 1828096a of https://github.com/kubernetes-sigs/kueue/pull/11264): top-level
    /// `spec.suspend` as the stop switch, the nested suspend as a persistent template gate,
    /// PodSets as the union over children, unsuspend of admitted children. In no Kueue release.
    KueueRayServiceUpgradeGate,
    /// The named actor runs (a reference or real controller, or a simulated component).
    Actor(ActorName),
    /// The DRA components (API server included) can run in the named profile.
    DraProfile(DraProfile),
}

impl Capability {
    /// Every capability that is not an actor.
    pub const PLAIN: [Capability; 7] = [
        Capability::VirtualTime,
        Capability::Timeline,
        Capability::WriteActors,
        Capability::ControllerSettings,
        Capability::Knobs,
        Capability::DraGateSkew,
        Capability::KueueRayServiceUpgradeGate,
    ];

    /// Every spelling a row can write, for messages and the JSON Schema.
    pub fn all_names() -> Vec<String> {
        Capability::PLAIN
            .iter()
            .map(ToString::to_string)
            .chain(ActorName::ALL.iter().map(|a| Capability::Actor(*a).to_string()))
            .chain(DraProfile::ALL.iter().map(|p| Capability::DraProfile(*p).to_string()))
            .collect()
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Capability::VirtualTime => f.write_str("virtual-time"),
            Capability::Timeline => f.write_str("timeline"),
            Capability::WriteActors => f.write_str("write-actors"),
            Capability::ControllerSettings => f.write_str("controller-settings"),
            Capability::Knobs => f.write_str("knobs"),
            Capability::DraGateSkew => f.write_str("dra-gate-skew"),
            Capability::KueueRayServiceUpgradeGate => f.write_str("kueue-rayservice-upgrade-gate"),
            Capability::Actor(a) => write!(f, "actor:{a}"),
            Capability::DraProfile(p) => write!(f, "dra-profile:{p}"),
        }
    }
}

impl FromStr for Capability {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(actor) = s.strip_prefix("actor:") {
            return actor.parse().map(Capability::Actor);
        }
        if let Some(profile) = s.strip_prefix("dra-profile:") {
            return DraProfile::ALL.into_iter().find(|p| p.as_str() == profile).map(Capability::DraProfile).ok_or_else(
                || {
                    let known: Vec<&str> = DraProfile::ALL.iter().map(|p| p.as_str()).collect();
                    format!("unknown DRA profile {profile:?} (known: {})", known.join(", "))
                },
            );
        }
        Capability::PLAIN
            .into_iter()
            .find(|c| c.to_string() == s)
            .ok_or_else(|| format!("unknown capability {s:?} (known: {})", Capability::all_names().join(", ")))
    }
}

impl Serialize for Capability {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Capability {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Capability {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Capability".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A capability the backend must offer",
            "enum": Capability::all_names(),
        })
    }
}

/// Feature gates per component, as the component spells them. Gates of a component are applied
/// to that component only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FeatureGates {
    /// kube-apiserver gates of the API server (fake or real), e.g. `DRAReservedForWorkloads`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub apiserver: BTreeMap<String, bool>,
    /// KubeRay operator gates, e.g. `RayServiceIncrementalUpgrade: false`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kuberay: BTreeMap<KubeRayGate, bool>,
}

impl FeatureGates {
    /// Whether no gate is set.
    pub fn is_empty(&self) -> bool {
        self.apiserver.is_empty() && self.kuberay.is_empty()
    }
}

/// Settings per component.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Settings {
    /// The KubeRay operator's environment.
    #[serde(default, skip_serializing_if = "is_default")]
    pub kuberay: KubeRaySettings,
    /// The simulated kubelet: node pool and delays.
    #[serde(default, skip_serializing_if = "is_default")]
    pub kubelet: KubeletSettings,
    /// The simulated Ray heads: Serve deploy and replica start delays.
    #[serde(default, skip_serializing_if = "is_default")]
    pub ray_head: RayHeadSettings,
    /// The simulated Ray autoscaler: its period and idle timeout.
    #[serde(default, skip_serializing_if = "is_default")]
    pub autoscaler: AutoscalerSettings,
    /// The simulated gateway controller: its program delay.
    #[serde(default, skip_serializing_if = "is_default")]
    pub gateway: GatewaySettings,
}

impl Settings {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == Settings::default()
    }
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// An upstream component whose version a row can require.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Component {
    /// The KubeRay operator (`ray-operator`).
    Kuberay,
    /// Kueue.
    Kueue,
    /// Kubernetes (kube-apiserver's `gitVersion`).
    Kubernetes,
}

impl Component {
    /// The name rows use.
    pub fn as_str(self) -> &'static str {
        match self {
            Component::Kuberay => "kuberay",
            Component::Kueue => "kueue",
            Component::Kubernetes => "kubernetes",
        }
    }
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A release version `vMAJOR.MINOR.PATCH` (a pre-release suffix is ignored), ordered by number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(pub u32, pub u32, pub u32);

impl Version {
    /// Reads `v1.7.0`, `1.7`, `v1.37.2-rc.1`; `None` when it is not a version.
    pub fn parse(text: &str) -> Option<Version> {
        let core = text.trim().trim_start_matches('v');
        let core = core.split(['-', '+', ' ']).next()?;
        let mut parts = core.split('.').map(|p| p.parse::<u32>());
        let major = parts.next()?.ok()?;
        let minor = parts.next().unwrap_or(Ok(0)).ok()?;
        let patch = parts.next().unwrap_or(Ok(0)).ok()?;
        Some(Version(major, minor, patch))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}.{}", self.0, self.1, self.2)
    }
}

impl Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Version::parse(&text).ok_or_else(|| serde::de::Error::custom(format!("{text:?} is not a version like v1.7.0")))
    }
}

impl JsonSchema for Version {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Version".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "pattern": "^v?[0-9]+(\\.[0-9]+){0,2}", "description": "A release, e.g. v1.7.0"})
    }
}

/// Values a backend knows about itself, which rows use as `${name}` without binding them: what
/// differs from one backend to the next by design (the operator version it runs, the namespace
/// the row runs in: `default` on the fake backend, one of its own on a real cluster; `row`, a
/// short token of that namespace for the names of cluster-scoped objects the row has to itself).
pub const BACKEND_FACTS: &[&str] = &["kuberay.version", "namespace", "row"];

/// What a row needs from a backend.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Needs {
    /// Capabilities the backend must offer; `actor:NAME` entries also say which actors the
    /// in-process backend starts for the row.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<Capability>,
    /// Feature gates per component (`apiserver`, `kuberay`).
    #[serde(default, skip_serializing_if = "FeatureGates::is_empty")]
    pub feature_gates: FeatureGates,
    /// Settings per component (`kuberay`, `kubelet`, `rayHead`, `autoscaler`, `gateway`).
    #[serde(default, skip_serializing_if = "Settings::is_empty")]
    pub settings: Settings,
    /// The DRA profile the row runs in (API server, resourceclaim controller, scheduler,
    /// kubelet), and any skew from it.
    #[serde(default, skip_serializing_if = "DraNeeds::is_empty")]
    pub dra: DraNeeds,
    /// The oldest version of a component the row's behaviour exists in (`kuberay: v1.7.0`): a
    /// backend running an older one skips the row with the reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub min_versions: BTreeMap<Component, Version>,
}

impl Needs {
    /// The actors the row names, in start order.
    pub fn actors(&self) -> Vec<ActorName> {
        ActorName::ALL.into_iter().filter(|a| self.capabilities.contains(&Capability::Actor(*a))).collect()
    }

    /// Whether the row configures any component (and so needs [`Capability::ControllerSettings`]).
    /// A DRA profile alone does not: a backend offers the profiles it runs
    /// ([`Capability::DraProfile`]); gates turned off against it, or ≤ 1.35 compatibility, do.
    pub fn configures(&self) -> bool {
        !self.feature_gates.is_empty() || !self.settings.is_empty() || self.dra.configures()
    }
}

/// A component whose DRA gates a row can set apart from the profile (version skew).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DraComponent {
    /// The API server (fake or real).
    KubeApiserver,
    /// kube-controller-manager (resourceclaim and podgroupprotection controllers).
    KubeControllerManager,
    /// kube-scheduler.
    KubeScheduler,
    /// The kubelet.
    Kubelet,
}

impl DraComponent {
    /// The name rows use.
    pub fn as_str(self) -> &'static str {
        match self {
            DraComponent::KubeApiserver => "kube-apiserver",
            DraComponent::KubeControllerManager => "kube-controller-manager",
            DraComponent::KubeScheduler => "kube-scheduler",
            DraComponent::Kubelet => "kubelet",
        }
    }
}

/// `needs.dra`: the profile, and skew from it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DraNeeds {
    /// `baseline`, `podgroup`, `workloads` or `raw` (see `controllers::dra::DraProfile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<DraProfile>,
    /// Components that run with the profile's feature gate off (`DRAWorkloadResourceClaims`
    /// for `podgroup`, `DRAReservedForWorkloads` for `workloads`; `GenericWorkload` stays on):
    /// version skew, or a gate not yet flipped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gates_off: Vec<DraComponent>,
    /// kube-controller-manager's handling of unknown `status.reservedFor` entries: `keep`
    /// (1.36+, the default) or `error` (the ≤ 1.35 compatibility switch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown_entries: Option<UnknownEntries>,
}

impl DraNeeds {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == DraNeeds::default()
    }

    /// Whether the row sets anything besides the profile.
    pub fn configures(&self) -> bool {
        !self.gates_off.is_empty() || self.unknown_entries.is_some_and(|u| u != UnknownEntries::Keep)
    }

    /// The configuration `component` runs with for the row (baseline when no profile is named).
    pub fn config(&self, component: DraComponent) -> DraConfig {
        let mut config = DraConfig::for_profile(self.profile.unwrap_or_default());
        if self.gates_off.contains(&component) {
            // The profile's own feature is off there; the APIs it builds on stay
            // (`GenericWorkload` serves PodGroups with `DRAWorkloadResourceClaims` off).
            config.gates.workload_resource_claims = false;
            config.gates.reserved_for_workloads = false;
        }
        if component == DraComponent::KubeControllerManager {
            config.unknown_entries = self.unknown_entries.unwrap_or_default();
        }
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_round_trip_and_unknown_ones_are_named() {
        for name in Capability::all_names() {
            let cap: Capability = name.parse().expect(&name);
            assert_eq!(cap.to_string(), name);
        }
        assert_eq!(
            "actor:kuberya".parse::<Capability>().unwrap_err(),
            "unknown actor \"kuberya\" (known: kuberay, scheduler, kubelet, endpoints, ray-head, autoscaler, gateway, traffic, echo, resourceclaim-controller, podgroup-protection, dra-driver, device-taint-eviction, kueue, kube-apiserver)"
        );
        assert!("virtual_time".parse::<Capability>().unwrap_err().starts_with("unknown capability \"virtual_time\""));
    }

    #[test]
    fn versions_compare_by_number() {
        assert_eq!(Version::parse("v1.7.0"), Some(Version(1, 7, 0)));
        assert_eq!(Version::parse("1.37.2-rc.1"), Some(Version(1, 37, 2)));
        assert_eq!(Version::parse("v0.19"), Some(Version(0, 19, 0)));
        assert!(Version::parse("v1.10.0") > Version::parse("v1.9.9"));
        assert_eq!(Version::parse("latest"), None);
        let needs: Needs =
            serde_json::from_value(serde_json::json!({"minVersions": {"kuberay": "v1.7.0"}})).expect("parses");
        assert_eq!(needs.min_versions.get(&Component::Kuberay), Some(&Version(1, 7, 0)));
        assert!(serde_json::from_value::<Needs>(serde_json::json!({"minVersions": {"ray": "v1"}})).is_err());
    }

    #[test]
    fn gates_and_settings_are_per_component_and_typed() {
        let needs: Needs = serde_json::from_value(serde_json::json!({
            "featureGates": {"kuberay": {"RayServiceIncrementalUpgrade": false}, "apiserver": {"X": true}},
            "settings": {"kuberay": {"randomPodDelete": true}, "kubelet": {"startDelay": "1.5s"}},
        }))
        .expect("parses");
        assert_eq!(needs.feature_gates.kuberay.get(&KubeRayGate::RayServiceIncrementalUpgrade), Some(&false));
        assert_eq!(needs.settings.kubelet.start_delay.map(|d| d.0), Some(std::time::Duration::from_millis(1500)));
        let bad = serde_json::from_value::<Needs>(serde_json::json!({"featureGates": {"kuberay": {"Nope": true}}}));
        assert!(bad.unwrap_err().to_string().contains("unknown variant `Nope`"));
        let bad = serde_json::from_value::<Needs>(serde_json::json!({"settings": {"kuberay": {"versoin": "x"}}}));
        assert!(bad.unwrap_err().to_string().contains("unknown field `versoin`"));
    }
}
