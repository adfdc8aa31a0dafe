//! A Service's traffic policies, as kubernetes v1.37.2 pkg/apis/core/validation/validation.go
//! checks them: `validateServiceExternalTrafficPolicy` (with the health check node port),
//! `validateServiceExternalTrafficFieldsUpdate`, `validateServiceInternalTrafficFieldsValue`,
//! `validateServiceTrafficDistribution`.

use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use serde_json::Value;

/// `apiservice.ExternallyAccessible`: a LoadBalancer, a NodePort, or a ClusterIP service with
/// external IPs.
pub(crate) fn externally_accessible(spec: &Value) -> bool {
    let ty = spec["type"].as_str().unwrap_or_default();
    let external_ips = spec["externalIPs"].as_array().is_some_and(|a| !a.is_empty());
    ty == "LoadBalancer" || ty == "NodePort" || (ty == "ClusterIP" && external_ips)
}

/// `apiservice.NeedsHealthCheck`: a LoadBalancer whose external traffic stays local.
pub(crate) fn needs_health_check(spec: &Value) -> bool {
    spec["type"] == "LoadBalancer" && spec["externalTrafficPolicy"] == "Local"
}

fn health_check_node_port(spec: &Value) -> i64 {
    spec["healthCheckNodePort"].as_i64().unwrap_or(0)
}

/// `validateServiceExternalTrafficPolicy`.
pub(crate) fn external_traffic_policy_causes(spec: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let at = Path::root("spec");
    let policy = spec["externalTrafficPolicy"].as_str().unwrap_or_default();
    if !externally_accessible(spec) {
        if !policy.is_empty() {
            out.push(field::invalid(
                &at.child("externalTrafficPolicy"),
                policy,
                "may only be set for externally-accessible services",
            ));
        }
    } else if policy.is_empty() {
        out.push(field::required(&at.child("externalTrafficPolicy"), ""));
    } else if !["Cluster", "Local"].contains(&policy) {
        out.push(field::not_supported(&at.child("externalTrafficPolicy"), policy, &["Cluster", "Local"]));
    }
    let hc = health_check_node_port(spec);
    if !needs_health_check(spec) {
        if hc != 0 {
            out.push(field::invalid(
                &at.child("healthCheckNodePort"),
                hc,
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ));
        }
    } else if hc == 0 {
        out.push(field::required(&at.child("healthCheckNodePort"), ""));
    } else if !(1..=65535).contains(&hc) {
        out.push(field::invalid(&at.child("healthCheckNodePort"), hc, "must be between 1 and 65535, inclusive"));
    }
    out
}

/// `validateServiceExternalTrafficFieldsUpdate`: the health check node port is fixed while
/// one is needed.
pub(crate) fn external_traffic_update_causes(old: &Value, new: &Value) -> Vec<StatusCause> {
    if needs_health_check(old) && needs_health_check(new) && health_check_node_port(old) != health_check_node_port(new)
    {
        return vec![field::forbidden(&Path::root("spec").child("healthCheckNodePort"), "field is immutable")];
    }
    Vec::new()
}

/// `validateServiceInternalTrafficFieldsValue`: required on ClusterIP, NodePort and
/// LoadBalancer services (defaulting sets it), and a known value wherever it is set.
pub(crate) fn internal_traffic_policy_causes(spec: &Value) -> Vec<StatusCause> {
    let at = Path::root("spec").child("internalTrafficPolicy");
    match spec.get("internalTrafficPolicy").filter(|v| !v.is_null()) {
        None if ["NodePort", "LoadBalancer", "ClusterIP"].contains(&spec["type"].as_str().unwrap_or_default()) => {
            vec![field::required(&at, "")]
        }
        None => Vec::new(),
        Some(p) => {
            let p = p.as_str().unwrap_or_default();
            if ["Cluster", "Local"].contains(&p) {
                Vec::new()
            } else {
                vec![field::not_supported(&at, p, &["Cluster", "Local"])]
            }
        }
    }
}

/// `validateServiceTrafficDistribution` (PreferSameTrafficDistribution is GA in 1.37).
pub(crate) fn traffic_distribution_causes(spec: &Value) -> Vec<StatusCause> {
    const SUPPORTED: &[&str] = &["PreferClose", "PreferSameZone", "PreferSameNode"];
    match spec.get("trafficDistribution").filter(|v| !v.is_null()).and_then(Value::as_str) {
        Some(d) if !SUPPORTED.contains(&d) => {
            vec![field::not_supported(&Path::root("spec").child("trafficDistribution"), d, SUPPORTED)]
        }
        _ => Vec::new(),
    }
}
