//! A Service's status, as kubernetes v1.37.2 pkg/apis/core/validation/validation.go
//! `ValidateLoadBalancerStatus` checks it (through `ValidateServiceStatusUpdate`).

use super::service_ips::legacy_ip_causes;
use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use apimachinery::validation::{dns1123_subdomain_errors, ip_sloppy};
use serde_json::Value;

const IP_MODES: &[&str] = &["Proxy", "VIP"];

/// `ValidateLoadBalancerStatus`: ingress only on a LoadBalancer; each entry's IP valid (unless
/// the old status had it), an ipMode exactly when there is an IP and a known one, a hostname
/// that is a DNS name and not an IP.
pub(crate) fn load_balancer_status_causes(obj: &Value, old: &Value) -> Vec<StatusCause> {
    let ingress = obj["status"]["loadBalancer"]["ingress"].as_array().map(Vec::as_slice).unwrap_or_default();
    let at = Path::root("status").child("loadBalancer").child("ingress");
    if obj["spec"]["type"] != "LoadBalancer" && !ingress.is_empty() {
        return vec![field::forbidden(&at, "may only be used when `spec.type` is 'LoadBalancer'")];
    }
    let old_ips: Vec<String> = old["status"]["loadBalancer"]["ingress"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["ip"].as_str())
        .filter(|ip| !ip.is_empty())
        .map(str::to_string)
        .collect();
    let mut out = Vec::new();
    for (i, ing) in ingress.iter().enumerate() {
        let at = at.index(i);
        let ip = ing["ip"].as_str().unwrap_or_default();
        if !ip.is_empty() {
            out.extend(legacy_ip_causes(&at.child("ip"), ip, &old_ips));
        }
        match ing.get("ipMode").filter(|m| !m.is_null()) {
            None if !ip.is_empty() => {
                out.push(field::required(&at.child("ipMode"), "must be specified when `ip` is set"))
            }
            None => {}
            Some(_) if ip.is_empty() => {
                out.push(field::forbidden(&at.child("ipMode"), "may not be specified when `ip` is not set"));
            }
            Some(mode) if !IP_MODES.contains(&mode.as_str().unwrap_or_default()) => {
                out.push(field::not_supported(&at.child("ipMode"), Bad::of(mode), IP_MODES));
            }
            Some(_) => {}
        }
        let hostname = ing["hostname"].as_str().unwrap_or_default();
        if !hostname.is_empty() {
            for msg in dns1123_subdomain_errors(hostname) {
                out.push(field::invalid(&at.child("hostname"), hostname, &msg));
            }
            if ip_sloppy(hostname).is_some() {
                out.push(field::invalid(&at.child("hostname"), hostname, "must be a DNS name, not an IP address"));
            }
        }
    }
    out
}
