//! The fields of DRA features that are off in 1.37 (alpha), dropped by the strategies before
//! validation unless the stored object already uses them (`dropDisabledFields` of
//! pkg/registry/resource/resourceslice/strategy.go, pkg/api/resourceclaimspec/util.go and
//! pkg/registry/resource/resourceclaim/strategy.go at k8s.io/kubernetes v1.37.2):
//! `DRAListTypeAttributes`, `DRADeviceCompatibilityGroups`, `DRANodeAllocatableResources`,
//! `DRAPartitionableDevicesType`, `DRAOptionalNodeOperations` and `DRADerivedAttributes`.
//! A status write also drops the status of devices the new allocation no longer holds
//! (`dropDeallocatedStatusDevices`).

use super::list;
use serde_json::Value;

/// The list members of a device attribute.
const LIST_ATTRIBUTES: [&str; 4] = ["bools", "ints", "strings", "versions"];

fn devices_mut(spec: &mut Value) -> impl Iterator<Item = &mut Value> {
    spec.get_mut("devices").and_then(Value::as_array_mut).into_iter().flatten()
}

fn set(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

fn non_empty(v: &Value, key: &str) -> bool {
    !list(v, key).is_empty() || v.get(key).and_then(Value::as_object).is_some_and(|m| !m.is_empty())
}

/// A slice's spec without the fields of disabled features `old` (the stored spec) does not use.
pub(super) fn drop_slice_fields(spec: &mut Value, old: Option<&Value>) {
    let old_devices = old.map(|o| list(o, "devices")).unwrap_or_default();
    let uses = |f: &dyn Fn(&Value) -> bool| old_devices.iter().any(f);
    let keep_lists = uses(&|d| {
        d.get("attributes")
            .and_then(Value::as_object)
            .is_some_and(|a| a.values().any(|v| LIST_ATTRIBUTES.iter().any(|k| set(v, k))))
    });
    let keep_groups = uses(&|d| list(d, "consumesCounters").iter().any(|c| !list(c, "compatibilityGroups").is_empty()));
    let keep_allocatable = uses(&|d| non_empty(d, "nodeAllocatableResources"));
    let keep_partition_type = old.is_some_and(|o| set(o, "partitionTypeAttribute"));
    let keep_skip = old.is_some_and(|o| !list(o, "skipNodeOperations").is_empty());
    for d in devices_mut(spec) {
        if !keep_lists {
            for a in d.get_mut("attributes").and_then(Value::as_object_mut).into_iter().flat_map(|m| m.values_mut()) {
                if let Some(a) = a.as_object_mut() {
                    LIST_ATTRIBUTES.iter().for_each(|k| {
                        a.remove(*k);
                    });
                }
            }
        }
        if !keep_groups {
            for c in d.get_mut("consumesCounters").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(c) = c.as_object_mut() {
                    c.remove("compatibilityGroups");
                }
            }
        }
        if !keep_allocatable && let Some(d) = d.as_object_mut() {
            d.remove("nodeAllocatableResources");
        }
    }
    if let Some(spec) = spec.as_object_mut() {
        if !keep_partition_type {
            spec.remove("partitionTypeAttribute");
        }
        if !keep_skip {
            spec.remove("skipNodeOperations");
        }
    }
}

/// The exact requests and subrequests of a claim spec.
fn requests_mut(spec: &mut Value) -> Vec<&mut Value> {
    let mut out = Vec::new();
    for r in spec.pointer_mut("/devices/requests").and_then(Value::as_array_mut).into_iter().flatten() {
        let Some(r) = r.as_object_mut() else { continue };
        for (k, v) in r.iter_mut() {
            match k.as_str() {
                "exactly" => out.push(v),
                "firstAvailable" => out.extend(v.as_array_mut().into_iter().flatten()),
                _ => {}
            }
        }
    }
    out
}

/// A claim spec without `derivedAttributes` unless `old` (the stored spec) has some.
pub(super) fn drop_claim_spec_fields(spec: &mut Value, old: Option<&Value>) {
    let in_use = old.is_some_and(|o| {
        let mut o = o.clone();
        requests_mut(&mut o).iter().any(|r| !list(r, "derivedAttributes").is_empty())
    });
    if in_use {
        return;
    }
    for r in requests_mut(spec) {
        if let Some(r) = r.as_object_mut() {
            r.remove("derivedAttributes");
        }
    }
}

/// The key of an allocated device or a device status.
fn device_key(v: &Value) -> [&str; 4] {
    ["driver", "pool", "device", "shareID"].map(|k| v.get(k).and_then(Value::as_str).unwrap_or_default())
}

fn results(status: &Value) -> &[Value] {
    status.pointer("/allocation/devices/results").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// A status write: results without `skipNodeOperations` unless the stored allocation uses
/// them, and no statuses of devices the old allocation held and the new one does not.
pub(super) fn drop_claim_status_fields(status: &mut Value, old_status: &Value) {
    let skip_in_use = results(old_status).iter().any(|r| !list(r, "skipNodeOperations").is_empty());
    if !skip_in_use {
        for r in status.pointer_mut("/allocation/devices/results").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(r) = r.as_object_mut() {
                r.remove("skipNodeOperations");
            }
        }
    }
    let kept: Vec<[String; 4]> = results(status).iter().map(|r| device_key(r).map(str::to_string)).collect();
    let gone: Vec<[String; 4]> =
        results(old_status).iter().map(|r| device_key(r).map(str::to_string)).filter(|k| !kept.contains(k)).collect();
    if gone.is_empty() {
        return;
    }
    if let Some(devices) = status.get_mut("devices").and_then(Value::as_array_mut) {
        devices.retain(|d| !gone.contains(&device_key(d).map(str::to_string)));
    }
    // An empty list is not encoded.
    if let Some(s) = status.as_object_mut()
        && s.get("devices").and_then(Value::as_array).is_some_and(Vec::is_empty)
    {
        s.remove("devices");
    }
}
