//! `ValidateEndpointSlice` (kubernetes v1.37.2 pkg/apis/discovery/validation/validation.go:
//! `validatePorts`, `validateEndpoints`, `validateAddress` by type, `validateHints`), then the
//! declarative rules of pkg/apis/discovery/v1/zz_generated.validations.go. DeclarativeValidationBeta
//! is on in 1.37, so the handwritten errors marked covered (the address type's and the
//! address list's required and size checks, the immutable address type) are dropped and the
//! declarative ones come last (apiserver v0.37.2 pkg/registry/rest/validate.go
//! `ValidateDeclarativelyWithMigrationChecks`).

use crate::error::StatusCause;
use crate::registry::core::endpoint_ip::endpoint_ip_causes;
use crate::registry::field::{self, Bad, Path};
use apimachinery::json::semantically_equal;
use apimachinery::validation::{
    dns1123_label_errors, dns1123_subdomain_errors, ip_sloppy, label_key_errors, label_value_errors, legacy_ip_errors,
    strict_ip_errors,
};
use serde_json::Value;

const ADDRESS_TYPES: &[&str] = &["FQDN", "IPv4", "IPv6"];
const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const MAX_ADDRESSES: usize = 100;
const MAX_PORTS: usize = 20000;
const MAX_ENDPOINTS: usize = 1000;
const MAX_ZONE_HINTS: usize = 8;
const MAX_NODE_HINTS: usize = 8;

fn items(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// `ValidateEndpointSlice` (create: `old` is `None`) and, on update, `ValidateEndpointSliceUpdate`;
/// ObjectMeta is the generic store's. Endpoint errors are forgiven when the endpoints did not
/// change.
pub(crate) fn validate_slice(obj: &Value, old: Option<&Value>) -> Vec<StatusCause> {
    let ty = obj["addressType"].as_str().unwrap_or_default();
    let declared = declarative_causes(obj, old);
    // The handwritten address type check is covered: it is dropped only where a declarative
    // error stands in for it (an update reports the immutable type instead, so an unsupported
    // type is still reported here).
    let mut out: Vec<StatusCause> = handwritten_address_type(ty)
        .into_iter()
        .filter(|c| !declared.iter().any(|d| d.reason == c.reason && d.field == c.field))
        .collect();
    out.extend(port_causes(&obj["ports"]));
    let endpoint_errors = endpoint_causes(&obj["endpoints"], ty);
    let unchanged = old.is_some_and(|o| semantically_equal(&o["endpoints"], &obj["endpoints"]));
    if !unchanged {
        out.extend(endpoint_errors);
    }
    out.extend(declared);
    out
}

/// `validateAddressType`: required, and one of the known types.
fn handwritten_address_type(ty: &str) -> Option<StatusCause> {
    let at = Path::root("addressType");
    if ty.is_empty() {
        Some(field::required(&at, ""))
    } else if !ADDRESS_TYPES.contains(&ty) {
        Some(field::not_supported(&at, ty, ADDRESS_TYPES))
    } else {
        None
    }
}

/// The declarative rules: the address type required, unchanged on update, one of the known
/// ones; each endpoint's addresses required and at most 100 (not rechecked when unchanged).
fn declarative_causes(obj: &Value, old: Option<&Value>) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let at = Path::root("addressType");
    let ty = obj["addressType"].as_str().unwrap_or_default();
    let old_ty = old.map(|o| o["addressType"].as_str().unwrap_or_default());
    if old_ty != Some(ty) {
        // `required` and `immutable` both short-circuit the enum check, and both report.
        if ty.is_empty() {
            out.push(field::required(&at, ""));
        }
        if old.is_some() {
            out.push(field::invalid(&at, Bad::Null, field::FIELD_IMMUTABLE));
        }
        if !ty.is_empty() && old.is_none() && !ADDRESS_TYPES.contains(&ty) {
            out.push(field::not_supported(&at, ty, ADDRESS_TYPES));
        }
    }
    let old_endpoints = old.map(|o| &o["endpoints"]);
    if old_endpoints.is_some_and(|o| semantically_equal(o, &obj["endpoints"])) {
        return out;
    }
    // No matching of endpoints to old ones (`EachValSliceVal` without a match function): a
    // changed list is checked whole.
    for (i, e) in items(&obj["endpoints"]).iter().enumerate() {
        let addresses = &e["addresses"];
        let at = Path::root("endpoints").index(i).child("addresses");
        let n = items(addresses).len();
        if n == 0 {
            out.push(field::required(&at, ""));
        } else if n > MAX_ADDRESSES {
            out.push(field::too_many(&at, n, MAX_ADDRESSES));
        }
    }
    out
}

/// `validatePorts`: at most 20000; names DNS labels, unique (the empty name too); a known
/// protocol; the appProtocol a qualified name.
fn port_causes(ports: &Value) -> Vec<StatusCause> {
    let ports = items(ports);
    if ports.len() > MAX_PORTS {
        return vec![field::too_many(&Path::root("ports"), ports.len(), MAX_PORTS)];
    }
    let mut out = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        let at = Path::root("ports").index(i);
        let name = p["name"].as_str().unwrap_or_default();
        if !name.is_empty() {
            for msg in dns1123_label_errors(name) {
                out.push(field::invalid(&at.child("name"), name, &msg));
            }
        }
        if names.contains(&name) {
            out.push(field::duplicate(&at.child("name"), name));
        } else {
            names.push(name);
        }
        match p.get("protocol").and_then(Value::as_str) {
            None => out.push(field::required(&at.child("protocol"), "")),
            Some(proto) if !PROTOCOLS.contains(&proto) => {
                out.push(field::not_supported(&at.child("protocol"), proto, PROTOCOLS));
            }
            Some(_) => {}
        }
        if let Some(app) = p.get("appProtocol").and_then(Value::as_str) {
            for msg in label_key_errors(app) {
                out.push(field::invalid(&at.child("appProtocol"), app, &msg));
            }
        }
        // No range check on `port`: upstream has none (a port of 70000 is stored).
    }
    out
}

/// `validateEndpoints`: at most 1000; each endpoint's addresses of the slice's type, node
/// name, hostname and hints. (`deprecatedTopology` is dropped from v1 writes before
/// validation, so its rules never fire through this API version.)
fn endpoint_causes(endpoints: &Value, ty: &str) -> Vec<StatusCause> {
    let endpoints = items(endpoints);
    if endpoints.len() > MAX_ENDPOINTS {
        return vec![field::too_many(&Path::root("endpoints"), endpoints.len(), MAX_ENDPOINTS)];
    }
    let mut out = Vec::new();
    for (i, e) in endpoints.iter().enumerate() {
        let at = Path::root("endpoints").index(i);
        let addresses_path = at.child("addresses");
        for (j, a) in items(&e["addresses"]).iter().enumerate() {
            out.extend(address_causes(a.as_str().unwrap_or_default(), ty, &addresses_path, j));
        }
        if let Some(node) = e.get("nodeName").and_then(Value::as_str) {
            for msg in dns1123_subdomain_errors(node) {
                out.push(field::invalid(&at.child("nodeName"), node, &msg));
            }
        }
        if let Some(h) = e.get("hostname").and_then(Value::as_str) {
            for msg in dns1123_label_errors(h) {
                out.push(field::invalid(&at.child("hostname"), h, &msg));
            }
        }
        if e.get("hints").is_some_and(|h| !h.is_null()) {
            out.extend(hint_causes(&e["hints"], &at.child("hints")));
        }
    }
    out
}

/// One address by the slice's type. IPv4: a legacy IP (then, at the list's path, IPv4 only);
/// IPv6: a strict, canonical IP (then IPv6 only); both then outside the special ranges.
/// FQDN: a fully qualified domain name.
fn address_causes(address: &str, ty: &str, list: &Path, j: usize) -> Vec<StatusCause> {
    let at = list.index(j);
    let is_v6 = |a: &str| {
        ip_sloppy(a).is_some_and(|ip| matches!(ip, std::net::IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none()))
    };
    let mut out = Vec::new();
    match ty {
        "IPv4" => {
            let errs = legacy_ip_errors(address);
            if !errs.is_empty() {
                return errs.into_iter().map(|m| field::invalid(&at, address, m)).collect();
            }
            if is_v6(address) {
                out.push(field::invalid(list, address, "must be an IPv4 address"));
            }
            out.extend(endpoint_ip_causes(address, &at));
        }
        "IPv6" => {
            let errs = strict_ip_errors(address);
            if !errs.is_empty() {
                return errs.iter().map(|m| field::invalid(&at, address, m)).collect();
            }
            if !is_v6(address) {
                out.push(field::invalid(list, address, "must be an IPv6 address"));
            }
            out.extend(endpoint_ip_causes(address, &at));
        }
        "FQDN" => out.extend(fqdn_causes(address, &at)),
        _ => {}
    }
    out
}

/// `IsFullyQualifiedDomainName`: a subdomain (a trailing dot allowed) of at least two labels;
/// the first failure only, with the errors joined by commas and the value as checked.
fn fqdn_causes(name: &str, at: &Path) -> Vec<StatusCause> {
    if name.is_empty() {
        return vec![field::required(at, "")];
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    let errs = dns1123_subdomain_errors(name);
    if !errs.is_empty() {
        return vec![field::invalid(at, name, &errs.join(","))];
    }
    if name.split('.').count() < 2 {
        return vec![field::invalid(at, name, "should be a domain with at least two segments separated by dots")];
    }
    for label in name.split('.') {
        let errs = dns1123_label_errors(label);
        if !errs.is_empty() {
            return vec![field::invalid(at, label, &errs.join(","))];
        }
    }
    Vec::new()
}

/// `validateHints`: at most 8 zones (else nothing more is checked), unique, label values;
/// at most 8 nodes, unique, node names.
fn hint_causes(hints: &Value, at: &Path) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let zones = items(&hints["forZones"]);
    let zones_path = at.child("forZones");
    if zones.len() > MAX_ZONE_HINTS {
        return vec![field::too_many(&zones_path, zones.len(), MAX_ZONE_HINTS)];
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, z) in zones.iter().enumerate() {
        let name = z["name"].as_str().unwrap_or_default();
        let name_path = zones_path.index(i).child("name");
        if seen.contains(&name) {
            out.push(field::duplicate(&name_path, name));
        } else {
            seen.push(name);
        }
        for msg in label_value_errors(name) {
            out.push(field::invalid(&name_path, name, &msg));
        }
    }
    let nodes = items(&hints["forNodes"]);
    let nodes_path = at.child("forNodes");
    if nodes.len() > MAX_NODE_HINTS {
        out.push(field::too_many(&nodes_path, nodes.len(), MAX_NODE_HINTS));
        return out;
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let name = n["name"].as_str().unwrap_or_default();
        let name_path = nodes_path.index(i).child("name");
        if seen.contains(&name) {
            out.push(field::duplicate(&name_path, name));
        } else {
            seen.push(name);
        }
        for msg in dns1123_subdomain_errors(name) {
            out.push(field::invalid(&name_path, name, &msg));
        }
    }
    out
}
