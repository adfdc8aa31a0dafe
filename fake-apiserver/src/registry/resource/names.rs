//! The name rules of `pkg/apis/resource/validation/validation.go` (k8s.io/kubernetes v1.37.2):
//! driver, pool, device and request names, qualified attribute names, and the declarative
//! formats (`k8s-long-name-caseless`, `k8s-resource-pool-name`,
//! `k8s-resource-fully-qualified-name`, `k8s-uuid`) that stand in for the covered ones.

use super::causes::Causes;
use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use apimachinery::validation::{
    c_identifier_errors, dns1123_label_errors, dns1123_subdomain_errors, label_key_errors, long_name_errors,
};
use std::collections::{BTreeMap, BTreeSet};

/// `DriverNameMaxLength`.
const DRIVER_NAME_MAX: usize = 63;
/// `PoolNameMaxLength`.
const POOL_NAME_MAX: usize = 253;
/// `DeviceMaxIDLength`: the name part of a qualified name.
const ID_MAX: usize = 32;
/// `DeviceMaxDomainLength`.
const DOMAIN_MAX: usize = 63;

/// `corevalidation.ValidateDNS1123Label` (device, request and counter names).
pub(super) fn dns_label(path: &Path, v: &str) -> Vec<StatusCause> {
    dns1123_label_errors(v).iter().map(|m| field::invalid(path, v, m)).collect()
}

/// `corevalidation.ValidateDNS1123Subdomain`.
pub(super) fn dns_subdomain(path: &Path, v: &str) -> Vec<StatusCause> {
    dns1123_subdomain_errors(v).iter().map(|m| field::invalid(path, v, m)).collect()
}

/// `metav1validation.ValidateLabelName`: a qualified name (taint keys, binding conditions).
pub(super) fn label_name(path: &Path, v: &str) -> Vec<StatusCause> {
    label_key_errors(v).iter().map(|m| field::invalid(path, v, m)).collect()
}

/// `validateDriverName` (`corevalidation.ValidateCSIDriverName`) where nothing is covered.
pub(super) fn driver_name(path: &Path, v: &str) -> Vec<StatusCause> {
    if v.is_empty() {
        return vec![field::required(path, "")];
    }
    let mut out = Vec::new();
    if v.len() > DRIVER_NAME_MAX {
        out.push(field::too_long(path, DRIVER_NAME_MAX));
    }
    // The format is checked on the lowercased name; the error shows the name as given.
    out.extend(dns1123_subdomain_errors(&v.to_lowercase()).iter().map(|m| field::invalid(path, v, m)));
    out
}

/// A driver name whose three checks are covered: the tags `required`,
/// `format=k8s-long-name-caseless` and `maxLength=63`, in that order.
pub(super) fn driver_name_declared(out: &mut Causes, path: &Path, v: &str) {
    if v.is_empty() {
        out.declared(field::required(path, ""));
        return;
    }
    for m in long_name_errors(v, true) {
        out.declared(field::invalid(path, v, &m));
    }
    if v.chars().count() > DRIVER_NAME_MAX {
        out.declared(field::too_long_characters(path, DRIVER_NAME_MAX));
    }
}

/// `validatePoolName` where nothing is covered: each `/`-separated part a DNS subdomain.
pub(super) fn pool_name(path: &Path, v: &str) -> Vec<StatusCause> {
    if v.is_empty() {
        return vec![field::required(path, "")];
    }
    let mut out = Vec::new();
    if v.len() > POOL_NAME_MAX {
        out.push(field::too_long(path, POOL_NAME_MAX));
    }
    for part in v.split('/') {
        out.extend(dns_subdomain(path, part));
    }
    out
}

/// A covered pool name: `required` and `format=k8s-resource-pool-name`
/// (`validate.ResourcePoolName`), whose messages name the segment.
pub(super) fn pool_name_declared(out: &mut Causes, path: &Path, v: &str) {
    if v.is_empty() {
        out.declared(field::required(path, ""));
        return;
    }
    if v.len() > POOL_NAME_MAX {
        out.declared(field::too_long(path, POOL_NAME_MAX));
    }
    for (i, part) in v.split('/').enumerate() {
        if part.is_empty() {
            out.declared(field::invalid(path, v, &format!("segment {i}: must not be empty")));
            continue;
        }
        for m in long_name_errors(part, false) {
            out.declared(field::invalid(path, part, &format!("segment {i}: {m}")));
        }
    }
}

/// `validateCIdentifier`.
fn c_identifier(path: &Path, id: &str) -> Vec<StatusCause> {
    let mut out = Vec::new();
    if id.len() > ID_MAX {
        out.push(field::too_long(path, ID_MAX));
    }
    out.extend(c_identifier_errors(id).iter().map(|m| field::invalid(path, id, m)));
    out
}

/// `validateQualifiedName`: a C identifier, optionally behind a driver-name domain and `/`
/// (attribute and capacity names). More than one `/` is not checked, as upstream.
pub(super) fn qualified_name(path: &Path, name: &str) -> Vec<StatusCause> {
    let parts: Vec<&str> = name.split('/').collect();
    let mut out = Vec::new();
    match parts.as_slice() {
        [id] => out.extend(c_identifier(path, id)),
        [domain, id] => {
            if domain.is_empty() {
                out.push(field::invalid(path, "", "the domain must not be empty"));
            } else {
                out.extend(driver_name(path, domain));
            }
            if id.is_empty() {
                out.push(field::invalid(path, "", "the name must not be empty"));
            } else {
                out.extend(c_identifier(path, id));
            }
        }
        _ => {}
    }
    out
}

/// `validate.ResourceFullyQualifiedName`, the declarative twin of
/// `validateFullyQualifiedName` (constraint attributes): its own wording of the domain part.
pub(super) fn fully_qualified_name_declared(out: &mut Causes, path: &Path, name: &str) {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        [id] => c_identifier(path, id).into_iter().for_each(|c| out.declared(c)),
        [prefix, id] => {
            if prefix.is_empty() {
                out.declared(field::invalid(path, "", "prefix must not be empty"));
            } else {
                if prefix.len() > DOMAIN_MAX {
                    out.declared(field::too_long(path, DOMAIN_MAX));
                }
                for m in long_name_errors(prefix, false) {
                    out.declared(field::invalid(path, *prefix, &format!("prefix: {m}")));
                }
            }
            if id.is_empty() {
                out.declared(field::invalid(path, "", "name must not be empty"));
            } else {
                c_identifier(path, id).into_iter().for_each(|c| out.declared(c));
            }
        }
        _ => {}
    }
    if !name.contains('/') {
        out.declared(field::invalid(
            path,
            name,
            "a fully qualified name must be a domain and a name separated by a slash",
        ));
    }
}

/// `validate.UUID` (`format=k8s-uuid`), which stands in for the covered `validateUID`.
pub(super) fn uuid_declared(out: &mut Causes, path: &Path, v: &str) {
    let b = v.as_bytes();
    let ok = b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(c),
        });
    if !ok {
        out.declared(field::invalid(path, v, "must be a lowercase UUID in 8-4-4-4-12 format"));
    }
}

/// The names a claim's requests may be referred to by (`gatherRequestNames`): each request,
/// with the names of its subrequests when it has `firstAvailable`.
#[derive(Debug, Default)]
pub(super) struct RequestNames(BTreeMap<String, Option<BTreeSet<String>>>);

impl RequestNames {
    /// The names of `devices.requests` (a `DeviceClaim`).
    pub fn of(devices: &serde_json::Value) -> Self {
        let mut names = BTreeMap::new();
        for r in super::list(devices, "requests") {
            let subs: BTreeSet<String> =
                super::list(r, "firstAvailable").iter().map(|s| super::text(s, "name").to_string()).collect();
            names.insert(super::text(r, "name").to_string(), (!subs.is_empty()).then_some(subs));
        }
        RequestNames(names)
    }

    /// `requestNames.Has`: `request` or `request/subrequest`.
    fn has(&self, name: &str) -> bool {
        let segments: Vec<&str> = name.split('/').collect();
        match segments.as_slice() {
            [request] => self.0.contains_key(*request),
            [request, sub] => self.0.get(*request).is_some_and(|s| s.as_ref().is_some_and(|s| s.contains(*sub))),
            _ => false,
        }
    }
}

const REQUEST_REF: &str =
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'";

/// `validateRequestNameRef`: at most one `/`, DNS labels around it, a request of the claim.
pub(super) fn request_ref(path: &Path, name: &str, names: &RequestNames) -> Vec<StatusCause> {
    let segments: Vec<&str> = name.split('/').collect();
    if segments.len() > 2 {
        return vec![field::invalid(path, name, REQUEST_REF)];
    }
    let mut out: Vec<StatusCause> = segments.iter().flat_map(|s| dns_label(path, s)).collect();
    if !names.has(name) {
        out.push(field::invalid(path, name, REQUEST_REF));
    }
    out
}
