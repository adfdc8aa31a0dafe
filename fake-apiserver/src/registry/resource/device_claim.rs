//! A claim's device requests (`validateDeviceClaim` and the functions it calls in
//! pkg/apis/resource/validation/validation.go at k8s.io/kubernetes v1.37.2): requests with
//! exactly one of `exactly` and `firstAvailable`, constraints, and configuration aimed at
//! requests of the claim. Sizes, uniqueness by name, enums and some formats are covered by
//! the tags of `k8s.io/api/resource/v1` (see [`Causes`]). Derived attributes and the CEL cost
//! estimate are not modelled.

use super::causes::Causes;
use super::cel_limits::selector;
use super::config::device_configuration;
use super::names::{RequestNames, dns_label, dns_subdomain, fully_qualified_name_declared, request_ref};
use super::taints::tolerations;
use super::{list, text};
use crate::registry::field::{self, Bad, Path};
use apimachinery::validation::long_name_errors;
use serde_json::Value;
use std::collections::BTreeSet;

/// `DeviceRequestsMaxSize`, `DeviceConstraintsMaxSize`, `DeviceConfigMaxSize`,
/// `DeviceSelectorsMaxSize`.
pub(super) const LIST_MAX: usize = 32;
/// `FirstAvailableDeviceRequestMaxSize`.
const SUBREQUESTS_MAX: usize = 8;

/// `validateResourceClaimSpec` of the claim spec at `path` (`spec`, or a template's
/// `spec.spec`).
pub(super) fn claim_spec(spec: &Value, path: &Path) -> Causes {
    let devices = spec.get("devices").unwrap_or(&Value::Null);
    device_claim(devices, &path.child("devices"))
}

/// `validateDeviceClaim`.
fn device_claim(devices: &Value, path: &Path) -> Causes {
    let mut out = Causes::default();
    let names = RequestNames::of(devices);
    let requests = list(devices, "requests");
    let rpath = path.child("requests");
    if requests.len() > LIST_MAX {
        out.declared(field::too_many(&rpath, requests.len(), LIST_MAX));
    } else {
        unique_items_declared(&mut out, requests, &rpath, |r| text(r, "name"));
        for (i, r) in requests.iter().enumerate() {
            device_request(&mut out, r, &rpath.index(i));
        }
    }
    let cpath = path.child("constraints");
    let constraints = list(devices, "constraints");
    if constraints.len() > LIST_MAX {
        out.declared(field::too_many(&cpath, constraints.len(), LIST_MAX));
    } else {
        for (i, c) in constraints.iter().enumerate() {
            device_constraint(&mut out, c, &cpath.index(i), &names);
        }
    }
    let gpath = path.child("config");
    let configs = list(devices, "config");
    if configs.len() > LIST_MAX {
        out.declared(field::too_many(&gpath, configs.len(), LIST_MAX));
    } else {
        for (i, c) in configs.iter().enumerate() {
            let at = gpath.index(i);
            request_refs(&mut out, list(c, "requests"), &at.child("requests"), &names);
            device_configuration(&mut out, c, &at, false);
        }
    }
    out
}

/// The `unique=map` tag of a list keyed by `key`: each later item with a key seen before is a
/// duplicate, printed whole.
pub(super) fn unique_items_declared<'a, K: Ord>(
    out: &mut Causes,
    items: &'a [Value],
    path: &Path,
    key: impl Fn(&'a Value) -> K,
) {
    let mut seen = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        if !seen.insert(key(item)) {
            out.declared(field::duplicate(&path.index(i), Bad::Raw(item.to_string())));
        }
    }
}

/// A list of request references (`validateSet` with `validateRequestNameRef`): at most 32 and
/// unique (both covered by tags), each naming a request of the claim.
pub(super) fn request_refs(out: &mut Causes, refs: &[Value], path: &Path, names: &RequestNames) {
    if refs.len() > LIST_MAX {
        out.declared(field::too_many(path, refs.len(), LIST_MAX));
        return;
    }
    let mut seen = BTreeSet::new();
    for (i, r) in refs.iter().enumerate() {
        let name = r.as_str().unwrap_or_default();
        if !seen.insert(name) {
            out.declared(field::duplicate(&path.index(i), name));
        }
    }
    for (i, r) in refs.iter().enumerate() {
        out.extend(request_ref(&path.index(i), r.as_str().unwrap_or_default(), names));
    }
}

/// `validateDeviceRequest`: a DNS label name and exactly one kind of request. Declarative
/// validation checks both kinds whatever the count, so with both set their covered errors
/// are still reported.
fn device_request(out: &mut Causes, r: &Value, path: &Path) {
    out.extend(dns_label(&path.child("name"), text(r, "name")));
    let exactly = r.get("exactly").filter(|e| !e.is_null());
    let first = list(r, "firstAvailable");
    match (exactly, first.is_empty()) {
        (None, true) => out.push(field::required(path, "exactly one of `exactly` or `firstAvailable` is required")),
        (Some(e), false) => {
            out.push(field::invalid(
                path,
                Bad::Null,
                "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
            ));
            let mut tags = Causes::default();
            exact_request(&mut tags, e, &path.child("exactly"));
            first_available(&mut tags, first, &path.child("firstAvailable"));
            out.append(tags.declared_only());
        }
        (None, false) => first_available(out, first, &path.child("firstAvailable")),
        (Some(e), true) => exact_request(out, e, &path.child("exactly")),
    }
}

/// The prioritized list of subrequests: at most 8, unique by name (both covered).
fn first_available(out: &mut Causes, subs: &[Value], path: &Path) {
    if subs.len() > SUBREQUESTS_MAX {
        out.declared(field::too_many(path, subs.len(), SUBREQUESTS_MAX));
        return;
    }
    unique_items_declared(out, subs, path, |s| text(s, "name"));
    for (i, s) in subs.iter().enumerate() {
        subrequest(out, s, &path.index(i));
    }
}

/// `validateDeviceSubRequest`: the class name is covered (`required`,
/// `format=k8s-long-name`).
fn subrequest(out: &mut Causes, s: &Value, path: &Path) {
    out.extend(dns_label(&path.child("name"), text(s, "name")));
    let class = text(s, "deviceClassName");
    let cpath = path.child("deviceClassName");
    if class.is_empty() {
        out.declared(field::required(&cpath, ""));
    } else {
        for m in long_name_errors(class, false) {
            out.declared(field::invalid(&cpath, class, &m));
        }
    }
    request_body(out, s, path);
}

/// `validateExactDeviceRequest`: the class name is checked by hand here.
fn exact_request(out: &mut Causes, e: &Value, path: &Path) {
    let class = text(e, "deviceClassName");
    let cpath = path.child("deviceClassName");
    if class.is_empty() {
        out.push(field::required(&cpath, ""));
    } else {
        out.extend(dns_subdomain(&cpath, class));
    }
    request_body(out, e, path);
}

/// What exact requests and subrequests share: selectors, allocation mode, tolerations.
fn request_body(out: &mut Causes, r: &Value, path: &Path) {
    selectors(out, list(r, "selectors"), &path.child("selectors"), false);
    allocation_mode(out, r, path);
    tolerations(out, list(r, "tolerations"), &path.child("tolerations"));
}

/// `validateSelectorSlice`: at most 32 (covered), each a valid CEL selector.
pub(super) fn selectors(out: &mut Causes, sels: &[Value], path: &Path, stored: bool) {
    if sels.len() > LIST_MAX {
        out.declared(field::too_many(path, sels.len(), LIST_MAX));
        return;
    }
    for (i, s) in sels.iter().enumerate() {
        out.extend(selector(s, &path.index(i), stored));
    }
}

/// `validateDeviceAllocationMode`: the count that goes with the mode; an unknown mode is the
/// `enum` tag's (an empty one is left to defaulting).
fn allocation_mode(out: &mut Causes, r: &Value, path: &Path) {
    let count = r.get("count").and_then(Value::as_i64).unwrap_or(0);
    match text(r, "allocationMode") {
        "All" => {
            if count != 0 {
                out.push(field::invalid(
                    &path.child("count"),
                    count,
                    "must not be specified when allocationMode is 'All'",
                ));
            }
        }
        "ExactCount" => {
            if count <= 0 {
                out.push(field::invalid(&path.child("count"), count, "must be greater than zero"));
            }
        }
        "" => {}
        other => out.declared(field::not_supported(&path.child("allocationMode"), other, &["All", "ExactCount"])),
    }
}

/// `validateDeviceConstraint`: request references, and the attribute to match or keep
/// distinct (its format covered by `format=k8s-resource-fully-qualified-name`, checked by
/// declarative validation for each member that is set).
fn device_constraint(out: &mut Causes, c: &Value, path: &Path, names: &RequestNames) {
    request_refs(out, list(c, "requests"), &path.child("requests"), names);
    let present = |k: &str| c.get(k).filter(|v| !v.is_null()).map(|v| v.as_str().unwrap_or_default());
    let (matching, distinct) = (present("matchAttribute"), present("distinctAttribute"));
    if let Some(m) = matching {
        fully_qualified_name_declared(out, &path.child("matchAttribute"), m);
    }
    if let Some(d) = distinct {
        fully_qualified_name_declared(out, &path.child("distinctAttribute"), d);
    }
    if matching.is_none() && distinct.is_none() {
        // DRAConsumableCapacity (beta, on) words it so.
        out.push(field::required(
            path,
            "exactly one of \"matchAttribute\" or \"distinctAttribute\" is required, but multiple fields are set",
        ));
    }
}
