//! A write of a claim's status (`validateResourceClaimStatusUpdate`, `validateDeviceStatus`,
//! `validateNetworkDeviceData` and `validateAllocationResult` of
//! pkg/apis/resource/validation/validation.go at k8s.io/kubernetes v1.37.2): consumers,
//! device statuses of allocated devices, and an allocation that is only ever set once, whose
//! results name requests of the claim. Declarative validation walks `allocation`,
//! `reservedFor` and `devices` in that order, so the tag errors of those parts follow it.

use super::binding::binding_parameters;
use super::causes::Causes;
use super::config::{device_configuration, raw_extension};
use super::device_claim::{request_refs, unique_items_declared};
use super::names::{
    RequestNames, dns_label, driver_name, driver_name_declared, pool_name, pool_name_declared, request_ref,
    uuid_declared,
};
use super::taints::tolerations;
use super::{list, text};
use crate::error::StatusCause;
use crate::registry::ResourceType;
use crate::registry::defects::ServerDefect;
use crate::registry::field::{self, Bad, Path};
use crate::registry::meta::condition_causes;
use apimachinery::validation::interface_address_errors;
use serde_json::Value;
use std::collections::BTreeSet;

/// `ResourceClaimReservedForMaxSize`.
const RESERVED_FOR_MAX: usize = 256;
/// `AllocationResultsMaxSize`.
const RESULTS_MAX: usize = 32;
/// Class and claim configuration: `2 * DeviceConfigMaxSize`.
const ALLOCATION_CONFIG_MAX: usize = 64;
/// `AllocatedDeviceStatusMaxConditions`.
const DEVICE_CONDITIONS_MAX: usize = 8;
/// `AllocatedDeviceStatusDataMaxLength`.
const DEVICE_DATA_MAX: usize = 10 * 1024;
/// `NetworkDeviceDataInterfaceNameMaxLength`, `NetworkDeviceDataHardwareAddressMaxLength`,
/// `NetworkDeviceDataMaxIPs`.
const INTERFACE_NAME_MAX: usize = 256;
const HARDWARE_ADDRESS_MAX: usize = 128;
const IPS_MAX: usize = 16;

fn present<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// `validateResourceClaimStatusUpdate` of `obj` over `old`.
pub(super) fn claim_status(rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
    let status = obj.get("status").unwrap_or(&Value::Null);
    let old_status = old.get("status").unwrap_or(&Value::Null);
    let path = Path::root("status");
    let names = RequestNames::of(&obj["spec"]["devices"]);
    let allocation = present(status, "allocation");
    let old_allocation = present(old_status, "allocation");
    let reserved = list(status, "reservedFor");
    let rpath = path.child("reservedFor");

    let mut consumers = Causes::default();
    // Past the maximum only the size is reported. Defect: no upper bound on the consumers.
    if reserved.len() > RESERVED_FOR_MAX && !rt.defective(ServerDefect::ReservedForUncapped) {
        consumers.declared(field::too_many(&rpath, reserved.len(), RESERVED_FOR_MAX));
    } else {
        unique_items_declared(&mut consumers, reserved, &rpath, |r| text(r, "uid"));
        for (i, r) in reserved.iter().enumerate() {
            for k in ["resource", "name", "uid"] {
                if text(r, k).is_empty() {
                    consumers.push(field::required(&rpath.index(i).child(k), ""));
                }
            }
        }
    }

    let mut devices = Causes::default();
    let allocated = allocated_devices(allocation);
    let dpath = path.child("devices");
    let statuses = list(status, "devices");
    unique_items_declared(&mut devices, statuses, &dpath, device_status_key);
    for (i, d) in statuses.iter().enumerate() {
        device_status(&mut devices, d, &dpath.index(i), &allocated);
    }

    let mut invariants = Causes::default();
    if !reserved.is_empty() {
        if allocation.is_none() {
            invariants.push(field::forbidden(&rpath, "may not be specified when `allocated` is not set"));
        } else if old.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null()) {
            // Consumers may leave a claim that is being deleted, none may join.
            let old_refs = list(old_status, "reservedFor");
            if reserved.iter().any(|r| !old_refs.contains(r)) {
                invariants.push(field::forbidden(
                    &rpath,
                    "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set",
                ));
            }
        }
    }

    let mut allocation_causes = Causes::default();
    let apath = path.child("allocation");
    match (allocation, old_allocation) {
        // The `update=NoModify` tag stands in for the handwritten immutability check.
        (Some(a), Some(o)) if !apimachinery::json::semantically_equal(a, o) => {
            allocation_causes.declared(field::invalid(&apath, Bad::Null, "field cannot be modified once set"));
        }
        (Some(a), None) => allocation_result(&mut allocation_causes, a, &apath, &names),
        _ => {}
    }
    Causes::merged(vec![consumers, devices, invariants, allocation_causes], &[3, 0, 1, 2]).into_vec()
}

/// The key of a device status: driver, pool, device and share id.
fn device_status_key(d: &Value) -> String {
    format!("{}\u{0}{}\u{0}{}\u{0}{}", text(d, "driver"), text(d, "pool"), text(d, "device"), text(d, "shareID"))
}

/// The devices of an allocation's results, keyed like their statuses.
fn allocated_devices(allocation: Option<&Value>) -> BTreeSet<String> {
    let results = allocation.map(|a| list(a.get("devices").unwrap_or(&Value::Null), "results")).unwrap_or_default();
    results
        .iter()
        .map(|r| {
            format!(
                "{}\u{0}{}\u{0}{}\u{0}{}",
                text(r, "driver"),
                text(r, "pool"),
                text(r, "device"),
                text(r, "shareID")
            )
        })
        .collect()
}

/// `structured.SharedDeviceID` as Go prints it in a field error (JSON of its exported fields).
fn shared_device_id(d: &Value) -> Bad {
    let q = |k: &str| Value::String(text(d, k).to_string()).to_string();
    Bad::Raw(format!(
        "{{\"Driver\":{},\"Pool\":{},\"Device\":{},\"ShareID\":{}}}",
        q("driver"),
        q("pool"),
        q("device"),
        q("shareID")
    ))
}

/// `validateDeviceStatus`.
fn device_status(out: &mut Causes, d: &Value, path: &Path, allocated: &BTreeSet<String>) {
    out.extend(driver_name(&path.child("driver"), text(d, "driver")));
    out.extend(pool_name(&path.child("pool"), text(d, "pool")));
    out.extend(dns_label(&path.child("device"), text(d, "device")));
    if let Some(share) = present(d, "shareID") {
        uuid_declared(out, &path.child("shareID"), share.as_str().unwrap_or_default());
    }
    if !allocated.contains(&device_status_key(d)) {
        out.push(field::invalid(path, shared_device_id(d), "must be an allocated device in the claim"));
    }
    let conditions = list(d, "conditions");
    let cpath = path.child("conditions");
    if conditions.len() > DEVICE_CONDITIONS_MAX {
        out.push(field::too_many(&cpath, conditions.len(), DEVICE_CONDITIONS_MAX));
    }
    out.extend(condition_causes(conditions, &cpath));
    if let Some(data) = present(d, "data") {
        out.extend(raw_extension(Some(data), &path.child("data"), false, DEVICE_DATA_MAX));
    }
    if let Some(n) = present(d, "networkData") {
        network_data(out, n, &path.child("networkData"));
    }
}

/// `validateNetworkDeviceData`: the name and address limits and the set of addresses are
/// covered by tags, which visit `interfaceName`, `ips`, `hardwareAddress` in that order.
fn network_data(out: &mut Causes, n: &Value, path: &Path) {
    if text(n, "interfaceName").len() > INTERFACE_NAME_MAX {
        out.declared(field::too_long(&path.child("interfaceName"), INTERFACE_NAME_MAX));
    }
    let ips = list(n, "ips");
    let ipath = path.child("ips");
    if ips.len() > IPS_MAX {
        out.declared(field::too_many(&ipath, ips.len(), IPS_MAX));
    } else {
        let mut seen = BTreeSet::new();
        for (i, ip) in ips.iter().enumerate() {
            let ip = ip.as_str().unwrap_or_default();
            out.extend(interface_address_errors(ip).iter().map(|m| field::invalid(&ipath.index(i), ip, m)));
            if !seen.insert(ip) {
                out.declared(field::duplicate(&ipath.index(i), ip));
            }
        }
    }
    if text(n, "hardwareAddress").len() > HARDWARE_ADDRESS_MAX {
        out.declared(field::too_long(&path.child("hardwareAddress"), HARDWARE_ADDRESS_MAX));
    }
}

/// `validateAllocationResult` of a new allocation.
fn allocation_result(out: &mut Causes, a: &Value, path: &Path, names: &RequestNames) {
    let devices = a.get("devices").unwrap_or(&Value::Null);
    let dpath = path.child("devices");
    let results = list(devices, "results");
    let rpath = dpath.child("results");
    if results.len() > RESULTS_MAX {
        out.declared(field::too_many(&rpath, results.len(), RESULTS_MAX));
    } else {
        for (i, r) in results.iter().enumerate() {
            request_allocation_result(out, r, &rpath.index(i), names);
        }
    }
    let configs = list(devices, "config");
    let cpath = dpath.child("config");
    if configs.len() > ALLOCATION_CONFIG_MAX {
        out.declared(field::too_many(&cpath, configs.len(), ALLOCATION_CONFIG_MAX));
    } else {
        for (i, c) in configs.iter().enumerate() {
            allocation_configuration(out, c, &cpath.index(i), names);
        }
    }
    if let Some(sel) = present(a, "nodeSelector") {
        out.extend(crate::registry::core::node_selector::node_selector_causes(sel, &path.child("nodeSelector")));
    }
}

/// `validateDeviceRequestAllocationResult`. The tags visit tolerations before the binding
/// conditions' sizes, so the two parts are merged in that order.
fn request_allocation_result(out: &mut Causes, r: &Value, path: &Path, names: &RequestNames) {
    out.extend(request_ref(&path.child("request"), text(r, "request"), names));
    driver_name_declared(out, &path.child("driver"), text(r, "driver"));
    pool_name_declared(out, &path.child("pool"), text(r, "pool"));
    out.extend(dns_label(&path.child("device"), text(r, "device")));
    let mut binding = Causes::default();
    binding_parameters(&mut binding, r, path);
    let mut tolerated = Causes::default();
    tolerations(&mut tolerated, list(r, "tolerations"), &path.child("tolerations"));
    out.append(Causes::merged(vec![binding, tolerated], &[1, 0]));
    if let Some(share) = present(r, "shareID") {
        uuid_declared(out, &path.child("shareID"), share.as_str().unwrap_or_default());
    }
}

/// `validateDeviceAllocationConfiguration`: the source (covered by its tags), the requests it
/// applies to, the opaque configuration.
fn allocation_configuration(out: &mut Causes, c: &Value, path: &Path, names: &RequestNames) {
    match text(c, "source") {
        "" => out.declared(field::required(&path.child("source"), "")),
        "FromClaim" | "FromClass" => {}
        other => out.declared(field::not_supported(&path.child("source"), other, &["FromClaim", "FromClass"])),
    }
    request_refs(out, list(c, "requests"), &path.child("requests"), names);
    device_configuration(out, c, path, false);
}
