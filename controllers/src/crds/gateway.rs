//! Gateway API (`gateway.networking.k8s.io/v1`, v1.6.1): the GatewayClass, Gateway and HTTPRoute
//! fields KubeRay's incremental upgrade and the simulated gateway controller use, written with
//! kube-derive (the `gateway-api` crate is still on kube 4). Fields nobody here reads are kept
//! in `extra` maps, so a read-modify-write keeps them.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The API group.
pub const GROUP: &str = "gateway.networking.k8s.io";

/// The three CRD manifests (see each file's header for what it keeps of the upstream one).
pub const GATEWAY_API_CRD_YAMLS: [&str; 3] = [
    include_str!("gateway.networking.k8s.io_gatewayclasses.yaml"),
    include_str!("gateway.networking.k8s.io_gateways.yaml"),
    include_str!("gateway.networking.k8s.io_httproutes.yaml"),
];

/// The GatewayClass, Gateway and HTTPRoute CRDs, parsed from [`GATEWAY_API_CRD_YAMLS`].
pub fn gateway_api_crds() -> &'static [CustomResourceDefinition] {
    // Parsed once per process: every row with a gateway installs them.
    static PARSED: std::sync::LazyLock<Vec<CustomResourceDefinition>> = std::sync::LazyLock::new(|| {
        GATEWAY_API_CRD_YAMLS.iter().map(|y| serde_saphyr::from_str(y).unwrap_or_default()).collect()
    });
    &PARSED
}

/// `GatewayClass.spec`.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "gateway.networking.k8s.io",
    version = "v1",
    kind = "GatewayClass",
    plural = "gatewayclasses",
    status = "GatewayClassStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct GatewayClassSpec {
    /// Which controller serves Gateways of this class.
    pub controller_name: String,
    /// Free text for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `parametersRef` and fields of newer releases.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// `GatewayClass.status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayClassStatus {
    /// `Accepted` (and `SupportedVersion`) from the class's controller.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// `supportedFeatures` and fields of newer releases.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// `Gateway.spec`.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "gateway.networking.k8s.io",
    version = "v1",
    kind = "Gateway",
    plural = "gateways",
    namespaced,
    status = "GatewayStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct GatewaySpec {
    /// Which GatewayClass (and so which controller) serves it.
    pub gateway_class_name: String,
    /// Where it accepts traffic.
    #[serde(default)]
    pub listeners: Vec<Listener>,
    /// `addresses`, `infrastructure`, `tls` and fields of newer releases.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// One entry of `Gateway.spec.listeners`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Listener {
    /// Unique within the Gateway; routes may name it as `sectionName`.
    pub name: String,
    /// Only requests for this host, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The port it listens on.
    pub port: i32,
    /// `HTTP`, `HTTPS`, `TLS`, `TCP`, `UDP`.
    pub protocol: String,
    /// `allowedRoutes` (defaulted by the API server), `tls`.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// `Gateway.status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayStatus {
    /// Where clients reach it, once programmed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<GatewayStatusAddress>,
    /// `Accepted` and `Programmed`: KubeRay needs both True.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// One entry per listener.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listeners: Vec<ListenerStatus>,
}

/// One entry of `Gateway.status.addresses`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GatewayStatusAddress {
    /// `IPAddress` or `Hostname`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// The address itself.
    pub value: String,
}

/// One entry of `Gateway.status.listeners`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenerStatus {
    /// The listener's name.
    pub name: String,
    /// How many routes attached to it.
    pub attached_routes: i32,
    /// `Accepted`, `Programmed`, `ResolvedRefs`, `Conflicted`.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// The route kinds it takes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supported_kinds: Vec<RouteGroupKind>,
}

/// A route kind a listener accepts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RouteGroupKind {
    /// Defaults to `gateway.networking.k8s.io`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// `HTTPRoute`, `GRPCRoute`, ...
    pub kind: String,
}

/// `HTTPRoute.spec`.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "gateway.networking.k8s.io",
    version = "v1",
    kind = "HTTPRoute",
    plural = "httproutes",
    namespaced,
    status = "HTTPRouteStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct HTTPRouteSpec {
    /// The Gateways it attaches to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parent_refs: Vec<ParentReference>,
    /// Host headers it matches; empty matches any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hostnames: Vec<String>,
    /// Matches and the weighted backends they send to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<HTTPRouteRule>,
}

/// A reference from a route to the Gateway it attaches to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentReference {
    /// Defaults to `gateway.networking.k8s.io`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Defaults to `Gateway`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The parent's name.
    pub name: String,
    /// Defaults to the route's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// One listener of the parent, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section_name: Option<String>,
    /// One port of the parent, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
}

/// One rule of an HTTPRoute.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HTTPRouteRule {
    /// Optional rule name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Requests the rule takes (the API server defaults one `PathPrefix /`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<HTTPRouteMatch>,
    /// Request and response rewrites, kept as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<Value>,
    /// Where requests go, by weight.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backend_refs: Vec<HTTPBackendRef>,
    /// `timeouts`, `retry`, `sessionPersistence`.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// One match of a rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HTTPRouteMatch {
    /// The path condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<HTTPPathMatch>,
    /// Header conditions, kept as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Vec<Value>>,
    /// Query parameter conditions, kept as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_params: Option<Vec<Value>>,
    /// The HTTP method, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

/// A path match: `Exact`, `PathPrefix` or `RegularExpression`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HTTPPathMatch {
    /// `Exact`, `PathPrefix` (default) or `RegularExpression`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// The path (default `/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// A weighted backend of a rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HTTPBackendRef {
    /// Defaults to the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Defaults to `Service`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The backend's name.
    pub name: String,
    /// Defaults to the route's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The Service port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    /// Share of the rule's requests (default 1); all 0 means every request gets a 500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i32>,
    /// Per-backend filters, kept as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<Vec<Value>>,
}

/// `HTTPRoute.status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HTTPRouteStatus {
    /// One entry per parent and controller that handles it.
    #[serde(default)]
    pub parents: Vec<RouteParentStatus>,
}

/// A route's status as one parent (Gateway) sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteParentStatus {
    /// The parent as the route names it.
    pub parent_ref: ParentReference,
    /// The controller that wrote this entry.
    pub controller_name: String,
    /// `Accepted` and `ResolvedRefs`: KubeRay needs both True.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crd_manifests_parse_with_v1_stored() {
        let crds = gateway_api_crds();
        let names: Vec<_> = crds.iter().map(|c| c.metadata.name.clone().unwrap_or_default()).collect();
        assert_eq!(
            names,
            [
                "gatewayclasses.gateway.networking.k8s.io",
                "gateways.gateway.networking.k8s.io",
                "httproutes.gateway.networking.k8s.io"
            ]
        );
        for crd in crds {
            let stored: Vec<_> = crd.spec.versions.iter().filter(|v| v.storage).map(|v| v.name.as_str()).collect();
            assert_eq!(stored, ["v1"]);
            assert_eq!(crd.spec.versions.len(), 2);
        }
        let route = serde_json::to_value(&crds[2].spec.versions[0].schema).unwrap();
        let backend = &route["openAPIV3Schema"]["properties"]["spec"]["properties"]["rules"]["items"]["properties"]["backendRefs"]
            ["items"]["properties"];
        assert_eq!(backend["weight"]["default"], 1);
        assert_eq!(backend["kind"]["default"], "Service");
    }
}
