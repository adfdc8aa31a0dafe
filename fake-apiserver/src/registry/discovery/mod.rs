//! `discovery.k8s.io` EndpointSlices (`ValidateEndpointSlice`): a known address type (which
//! an update may not change), addresses of that type, port names and protocols.

use crate::error::StatusCause;
use crate::registry::core::pod_spec::port_name_errors;
use crate::registry::field::{self, Path};
use crate::registry::{ResourceType, Strategy};
use apimachinery::validation::{dns1123_label_errors, dns1123_subdomain_errors};
use serde_json::{Value, json};

/// discovery/v1 EndpointSlice.
#[derive(Debug)]
pub(crate) struct EndpointSliceStrategy;

fn validate_slice(obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let ty = obj.get("addressType").and_then(Value::as_str).unwrap_or_default();
    let supported = ["IPv4", "IPv6", "FQDN"];
    if ty.is_empty() {
        out.push(field::required(&Path::root("addressType"), ""));
    } else if !supported.contains(&ty) {
        out.push(field::not_supported(&Path::root("addressType"), ty, &supported));
    }
    for (i, e) in obj.get("endpoints").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = Path::root("endpoints").index(i);
        let addrs = e.get("addresses").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        if addrs.is_empty() {
            out.push(field::required(&at.child("addresses"), "must contain at least 1 address"));
        }
        for (j, a) in addrs.iter().enumerate() {
            let a = a.as_str().unwrap_or_default();
            let ok = match ty {
                "IPv4" => a.parse::<std::net::Ipv4Addr>().is_ok(),
                "IPv6" => a.parse::<std::net::Ipv6Addr>().is_ok(),
                _ => dns1123_subdomain_errors(a).is_empty(),
            };
            if !ok {
                let what = if ty == "IPv6" { "must be a valid IPv6 address" } else { "must be a valid IPv4 address" };
                out.push(field::invalid(&at.child("addresses").index(j), a, what));
            }
        }
        if let Some(h) = e.get("hostname").and_then(Value::as_str) {
            for msg in dns1123_label_errors(h) {
                out.push(field::invalid(&at.child("hostname"), h, &msg));
            }
        }
        if let Some(n) = e.get("nodeName").and_then(Value::as_str) {
            for msg in dns1123_subdomain_errors(n) {
                out.push(field::invalid(&at.child("nodeName"), n, &msg));
            }
        }
    }
    for (i, p) in obj.get("ports").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = Path::root("ports").index(i);
        if let Some(name) = p.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()) {
            for msg in dns1123_label_errors(name) {
                out.push(field::invalid(&at.child("name"), name, &msg));
            }
            let _ = port_name_errors;
        }
        if let Some(proto) = p.get("protocol").and_then(Value::as_str)
            && !["SCTP", "TCP", "UDP"].contains(&proto)
        {
            out.push(field::not_supported(&at.child("protocol"), proto, &["SCTP", "TCP", "UDP"]));
        }
        // No range check on `port`: upstream's validatePorts has none (a port of 70000 is
        // stored by kube-apiserver v1.37.2; measured by `kproof differential`).
    }
    out
}

impl Strategy for EndpointSliceStrategy {
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        for p in obj.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(p) = p.as_object_mut() {
                p.entry("protocol").or_insert(json!("TCP"));
                p.entry("name").or_insert(json!(""));
            }
        }
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        validate_slice(obj)
    }

    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut out = validate_slice(obj);
        if let Some(c) = field::immutable(&Path::root("addressType"), &obj["addressType"], &old["addressType"]) {
            out.push(c);
        }
        out
    }
}
