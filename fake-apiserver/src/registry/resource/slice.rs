//! ResourceSlices (`ValidateResourceSlice`, `ValidateResourceSliceUpdate`,
//! `validateResourceSliceSpec`, `validateDevice`, `validateDeviceAttribute`,
//! `validateCounterSet` of pkg/apis/resource/validation/validation.go at k8s.io/kubernetes
//! v1.37.2): driver and pool, exactly one node selection, either shared counters or devices,
//! and each device's name, attributes, capacity, taints, counter consumption, per-device node
//! selection and binding conditions. The attribute union, counter sets and taint effects are
//! covered by tags (see [`Causes`]). The alpha fields (node allocatable resources, partition
//! types, skipped node operations) are dropped before validation (see `disabled_fields`).

use super::binding::binding_parameters;
use super::capacity::request_policy;
use super::causes::Causes;
use super::device_claim::unique_items_declared;
use super::disabled_fields::drop_slice_fields;
use super::names::{dns_label, driver_name, pool_name, qualified_name};
use super::taints::{taint, taint_effect_declared};
use super::{list, text};
use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use crate::registry::store::UpdateMode;
use crate::registry::{ResourceType, Strategy};
use apimachinery::Quantity;
use apimachinery::json::semantically_equal;
use apimachinery::validation::{dns1123_subdomain_errors, short_name_errors};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// `ResourceSliceMaxDevices`, and `ResourceSliceMaxDevicesWithAdvancedFeatures` for slices
/// with taints, counter consumption or list attributes.
const DEVICES_MAX: usize = 128;
const DEVICES_MAX_ADVANCED: usize = 64;
/// `ResourceSliceMaxCounterSets`.
const COUNTER_SETS_MAX: usize = 8;
/// `ResourceSliceMaxCountersPerCounterSet`, `ResourceSliceMaxCountersPerDeviceCounterConsumption`.
const COUNTERS_MAX: usize = 32;
/// `ResourceSliceMaxDeviceCounterConsumptionsPerDevice`.
const CONSUMPTIONS_MAX: usize = 2;
/// `ResourceSliceMaxAttributesAndCapacitiesPerDevice`.
const ATTRIBUTES_AND_CAPACITIES_MAX: usize = 32;
/// `ResourceSliceMaxAttributeValuesPerDevice`.
const ATTRIBUTE_VALUES_MAX: usize = 48;
/// `DeviceAttributeMaxValueLength`.
const ATTRIBUTE_VALUE_MAX: usize = 64;
/// `DeviceTaintsMaxLength`.
const TAINTS_MAX: usize = 16;
/// `attributeAndCapacityMaxKeyLength`: where a map key is cut in the middle in a field path.
const KEY_TRUNCATE: usize = 63 + 1 + 32;
/// The members of an attribute's union, in the order of `DeviceAttribute`'s tags.
const ATTRIBUTE_MEMBERS: [&str; 8] = ["int", "bool", "string", "version", "ints", "bools", "strings", "versions"];

const NODE_SELECTION: &str =
    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required";
const DEVICE_NODE_SELECTION: &str = "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec";

/// ResourceSlices.
#[derive(Debug)]
pub(crate) struct ResourceSliceStrategy;

impl Strategy for ResourceSliceStrategy {
    /// `SetDefaults_DeviceTaint` stamps taints without a time with the current one (here on
    /// create only: an update has no clock at hand), then the disabled fields go.
    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value, now: &str) {
        if let Some(spec) = obj.get_mut("spec") {
            for d in spec.get_mut("devices").and_then(Value::as_array_mut).into_iter().flatten() {
                for t in d.get_mut("taints").and_then(Value::as_array_mut).into_iter().flatten() {
                    if let Some(t) = t.as_object_mut()
                        && t.get("timeAdded").is_none_or(Value::is_null)
                    {
                        t.insert("timeAdded".into(), Value::String(now.to_string()));
                    }
                }
            }
            drop_slice_fields(spec, None);
        }
    }

    fn prepare_for_update(&self, _rt: &ResourceType, new: &mut Value, old: &Value, _mode: UpdateMode) {
        if let Some(spec) = new.get_mut("spec") {
            drop_slice_fields(spec, old.get("spec"));
        }
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        slice_spec(&obj["spec"], None).into_vec()
    }

    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        slice_spec(&obj["spec"], Some(&old["spec"])).into_vec()
    }
}

fn present<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// `validateResourceSliceSpec`; `old` on update.
fn slice_spec(spec: &Value, old: Option<&Value>) -> Causes {
    let mut out = Causes::default();
    let path = Path::root("spec");
    out.extend(driver_name(&path.child("driver"), text(spec, "driver")));
    let pool = spec.get("pool").unwrap_or(&Value::Null);
    let ppath = path.child("pool");
    out.extend(pool_name(&ppath.child("name"), text(pool, "name")));
    let count = pool.get("resourceSliceCount").and_then(Value::as_i64).unwrap_or(0);
    if count <= 0 {
        out.push(field::invalid(&ppath.child("resourceSliceCount"), count, "must be greater than zero"));
    }
    let generation = pool.get("generation").and_then(Value::as_i64).unwrap_or(0);
    if generation < 0 {
        out.push(field::invalid(&ppath.child("generation"), generation, "must be greater than or equal to zero"));
    }
    if let Some(old) = old {
        // Go strings: absent is "". `nodeName` is a pointer: absent is null.
        let string = |v: &Value, k: &str| Value::String(text(v, k).to_string());
        let old_pool = old.get("pool").unwrap_or(&Value::Null);
        out.extend(field::immutable(&ppath.child("name"), &string(pool, "name"), &string(old_pool, "name")));
        out.extend(field::immutable(&path.child("driver"), &string(spec, "driver"), &string(old, "driver")));
        let node = |v: &Value| present(v, "nodeName").cloned().unwrap_or(Value::Null);
        out.extend(field::immutable(&path.child("nodeName"), &node(spec), &node(old)));
    }
    node_selection(&mut out, spec, &path);
    if present(spec, "sharedCounters").is_some() && present(spec, "devices").is_some() {
        out.push(field::invalid(&path, "", "only one of `sharedCounters` or `devices` is allowed"));
    }
    let devices = list(spec, "devices");
    let max = if advanced(devices) { DEVICES_MAX_ADVANCED } else { DEVICES_MAX };
    let dpath = path.child("devices");
    let per_device = spec.get("perDeviceNodeSelection") == Some(&Value::Bool(true));
    if devices.len() > max {
        out.push(field::too_many(&dpath, devices.len(), max));
    } else {
        let old_devices = old.map(|o| list(o, "devices")).unwrap_or_default();
        let mut names = BTreeSet::new();
        for (i, d) in devices.iter().enumerate() {
            let name = text(d, "name");
            let old_device = old_devices.iter().find(|o| text(o, "name") == name);
            device(&mut out, d, old_device, &dpath.index(i), per_device);
        }
        for (i, d) in devices.iter().enumerate() {
            if !names.insert(text(d, "name")) {
                out.push(field::duplicate(&dpath.index(i), text(d, "name")));
            }
        }
    }
    counter_sets(&mut out, list(spec, "sharedCounters"), &path.child("sharedCounters"));
    out
}

/// Whether a slice uses the features that lower its device limit.
fn advanced(devices: &[Value]) -> bool {
    devices.iter().any(|d| {
        !list(d, "taints").is_empty()
            || !list(d, "consumesCounters").is_empty()
            || d.get("attributes").and_then(Value::as_object).is_some_and(|attrs| {
                attrs.values().any(|a| ["ints", "bools", "strings", "versions"].iter().any(|k| present(a, k).is_some()))
            })
    })
}

/// The slice's node selection: each member set properly, exactly one of them.
fn node_selection(out: &mut Causes, spec: &Value, path: &Path) {
    let mut set = Vec::new();
    if let Some(node) = present(spec, "nodeName") {
        let node = node.as_str().unwrap_or_default();
        if node.is_empty() {
            out.push(field::invalid(
                &path.child("nodeName"),
                node,
                "must be either unset or set to a non-empty string",
            ));
        } else {
            set.push("`nodeName`");
            out.extend(node_name(&path.child("nodeName"), node));
        }
    }
    if let Some(sel) = present(spec, "nodeSelector") {
        set.push("`nodeSelector`");
        out.extend(crate::registry::core::node_selector::node_selector_causes(sel, &path.child("nodeSelector")));
        let terms_path = path.child("nodeSelector").child("nodeSelectorTerms");
        let terms = sel.get("nodeSelectorTerms").filter(|t| !t.is_null());
        if terms.and_then(Value::as_array).map_or(0, Vec::len) != 1 {
            let printed = terms.map_or(Bad::Null, |t| Bad::Raw(t.to_string()));
            out.push(field::invalid(&terms_path, printed, "must have exactly one node selector term"));
        }
    }
    for key in ["allNodes", "perDeviceNodeSelection"] {
        match present(spec, key).map(|v| v.as_bool().unwrap_or(false)) {
            Some(true) => set.push(if key == "allNodes" { "`allNodes`" } else { "`perDeviceNodeSelection`" }),
            Some(false) => out.push(field::invalid(&path.child(key), false, "must be either unset or set to true")),
            None => {}
        }
    }
    match set.len() {
        0 => out.push(field::required(path, NODE_SELECTION)),
        1 => {}
        _ => out.push(field::invalid(
            path,
            format!("{{{}}}", set.join(", ")),
            &format!("{NODE_SELECTION}, but multiple fields are set"),
        )),
    }
}

/// `validateNodeName`: a DNS subdomain.
fn node_name(path: &Path, v: &str) -> Vec<StatusCause> {
    dns1123_subdomain_errors(v).iter().map(|m| field::invalid(path, v, m)).collect()
}

/// `truncateIfTooLong`: a long map key cut in the middle (by bytes, as Go does) for its
/// field path.
fn truncated(key: &str, max: usize) -> String {
    let max = max.max(16);
    if key.len() <= max {
        return key.to_string();
    }
    let remaining = max - 3;
    let b = key.as_bytes();
    let (head, tail) = (&b[..remaining.div_ceil(2)], &b[b.len() - remaining / 2..]);
    format!("{}...{}", String::from_utf8_lossy(head), String::from_utf8_lossy(tail))
}

fn object(v: &Value, key: &str) -> Map<String, Value> {
    v.get(key).and_then(Value::as_object).cloned().unwrap_or_default()
}

/// `validateDevice`; `old` is the device of the same name before an update.
fn device(out: &mut Causes, d: &Value, old: Option<&Value>, path: &Path, per_device: bool) {
    out.extend(dns_label(&path.child("name"), text(d, "name")));
    let attributes = object(d, "attributes");
    let capacity = object(d, "capacity");
    let total = attributes.len() + capacity.len();
    if total > ATTRIBUTES_AND_CAPACITIES_MAX {
        out.push(field::invalid(
            path,
            total as i64,
            &format!("the total number of attributes and capacities must not exceed {ATTRIBUTES_AND_CAPACITIES_MAX}"),
        ));
    }
    let values: usize = attributes
        .values()
        .map(|a| {
            let n: usize = ["bools", "ints", "strings", "versions"].iter().map(|k| list(a, k).len()).sum();
            n.max(usize::from(n == 0))
        })
        .sum();
    if values > ATTRIBUTE_VALUES_MAX {
        out.push(field::invalid(
            path,
            values as i64,
            &format!("the total number of attribute values must not exceed {ATTRIBUTE_VALUES_MAX}"),
        ));
    }
    let apath = path.child("attributes");
    for (k, a) in &attributes {
        out.extend(qualified_name(&apath, k));
        attribute(out, a, &apath.key(&truncated(k, KEY_TRUNCATE)));
    }
    if old.is_none_or(|o| !semantically_equal(&o["capacity"], &d["capacity"])) {
        let cpath = path.child("capacity");
        let multiple = d.get("allowMultipleAllocations") == Some(&Value::Bool(true));
        for (k, c) in &capacity {
            out.extend(qualified_name(&cpath, k));
            let Some(policy) = present(c, "requestPolicy") else { continue };
            let at = cpath.key(&truncated(k, KEY_TRUNCATE)).child("requestPolicy");
            if multiple {
                let value = c.get("value").and_then(Value::as_str).and_then(Quantity::parse).unwrap_or(Quantity::ZERO);
                out.extend(request_policy(value, policy, &at));
            } else {
                out.push(field::forbidden(&at, "allowMultipleAllocations must be true"));
            }
        }
    }
    let taints = list(d, "taints");
    let tpath = path.child("taints");
    if old.is_none_or(|o| !semantically_equal(&o["taints"], &d["taints"])) {
        if taints.len() > TAINTS_MAX {
            out.push(field::too_many(&tpath, taints.len(), TAINTS_MAX));
            // The tags have no size limit: the effects are still checked.
            for (i, t) in taints.iter().enumerate() {
                taint_effect_declared(out, text(t, "effect"), &tpath.index(i).child("effect"));
            }
        } else {
            for (i, t) in taints.iter().enumerate() {
                taint(out, t, None, &tpath.index(i));
            }
        }
    }
    counter_consumptions(out, list(d, "consumesCounters"), &path.child("consumesCounters"));
    device_node_selection(out, d, path, per_device);
    binding_parameters(out, d, path);
}

/// `validateDeviceAttribute`: exactly one value (the union covered by tags, which count an
/// empty list as unset), strings and versions within 64 bytes, versions in semver.
fn attribute(out: &mut Causes, a: &Value, path: &Path) {
    if let Some(s) = present(a, "string") {
        string_value(out, s.as_str().unwrap_or_default(), &path.child("string"));
    }
    if let Some(v) = present(a, "version") {
        version_value(out, v.as_str().unwrap_or_default(), &path.child("version"));
    }
    for key in ["bools", "ints", "strings", "versions"] {
        let Some(items) = present(a, key) else { continue };
        let items = items.as_array().map(Vec::as_slice).unwrap_or_default();
        if items.is_empty() {
            out.push(field::invalid(&path.child(key), Bad::Raw("[]".into()), "must not be empty if specified"));
        }
        for (i, item) in items.iter().enumerate() {
            match key {
                // Covered by an alpha tag (not enforced): reported where it is found.
                "strings" => string_value(out, item.as_str().unwrap_or_default(), &path.child(key).index(i)),
                "versions" => version_value(out, item.as_str().unwrap_or_default(), &path.child(key).index(i)),
                _ => {}
            }
        }
    }
    let set: Vec<&str> = ATTRIBUTE_MEMBERS
        .iter()
        .copied()
        .filter(|k| present(a, k).is_some_and(|v| v.as_array().is_none_or(|l| !l.is_empty())))
        .collect();
    let all: Vec<String> = ATTRIBUTE_MEMBERS.iter().map(|m| format!("`{m}`")).collect();
    match set.len() {
        0 => out.declared(field::invalid(path, "", &format!("must specify one of: {}", all.join(", ")))),
        1 => {}
        _ => out.declared(field::invalid(
            path,
            format!("{{{}}}", set.join(", ")),
            &format!("must specify exactly one of: {}", all.join(", ")),
        )),
    }
}

fn string_value(out: &mut Causes, v: &str, path: &Path) {
    if v.len() > ATTRIBUTE_VALUE_MAX {
        out.push(field::too_long(path, ATTRIBUTE_VALUE_MAX));
    }
}

fn version_value(out: &mut Causes, v: &str, path: &Path) {
    if !is_semver(v) {
        out.push(field::invalid(path, v, "must be a string compatible with semver.org spec 2.0.0"));
    }
    if v.len() > ATTRIBUTE_VALUE_MAX {
        out.push(field::too_long(path, ATTRIBUTE_VALUE_MAX));
    }
}

/// `semverRe`: `MAJOR.MINOR.PATCH`, optional `-prerelease` and `+build` identifiers.
fn is_semver(v: &str) -> bool {
    let numeric = |s: &str| s == "0" || (!s.is_empty() && !s.starts_with('0') && s.bytes().all(|b| b.is_ascii_digit()));
    let alnum = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let prerelease = |s: &str| numeric(s) || (alnum(s) && s.bytes().any(|b| !b.is_ascii_digit()));
    let (rest, build) = match v.split_once('+') {
        Some((r, b)) => (r, Some(b)),
        None => (v, None),
    };
    if build.is_some_and(|b| !b.split('.').all(alnum)) {
        return false;
    }
    let (core, pre) = match rest.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (rest, None),
    };
    if pre.is_some_and(|p| !p.split('.').all(prerelease)) {
        return false;
    }
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3 && parts.iter().all(|p| numeric(p))
}

/// `validateCounterSet` of each shared counter set: at most 8, unique names, each named with a
/// DNS label and holding 1 to 32 counters with DNS label names (all but the per-set limit
/// covered by tags).
fn counter_sets(out: &mut Causes, sets: &[Value], path: &Path) {
    if sets.len() > COUNTER_SETS_MAX {
        out.declared(field::too_many(path, sets.len(), COUNTER_SETS_MAX));
        return;
    }
    unique_items_declared(out, sets, path, |s| text(s, "name"));
    for (i, s) in sets.iter().enumerate() {
        let at = path.index(i);
        short_name_declared(out, &at.child("name"), text(s, "name"));
        counters(out, s, &at.child("counters"));
    }
}

/// `validateDeviceCounterConsumption` of each consumption of a device: at most 2, unique by
/// counter set, each naming its set and holding 1 to 32 counters.
fn counter_consumptions(out: &mut Causes, items: &[Value], path: &Path) {
    if items.len() > CONSUMPTIONS_MAX {
        out.declared(field::too_many(path, items.len(), CONSUMPTIONS_MAX));
        return;
    }
    unique_items_declared(out, items, path, |c| text(c, "counterSet"));
    for (i, c) in items.iter().enumerate() {
        let at = path.index(i);
        short_name_declared(out, &at.child("counterSet"), text(c, "counterSet"));
        counters(out, c, &at.child("counters"));
    }
}

/// The `required` and `format=k8s-short-name` tags of a counter set's name.
fn short_name_declared(out: &mut Causes, path: &Path, v: &str) {
    if v.is_empty() {
        out.declared(field::required(path, ""));
        return;
    }
    for m in short_name_errors(v) {
        out.declared(field::invalid(path, v, &m));
    }
}

/// The counters of a set or consumption: required (covered), at most 32 (by hand), names
/// that are DNS labels (covered, reported at the map's path).
fn counters(out: &mut Causes, parent: &Value, path: &Path) {
    let counters = object(parent, "counters");
    if counters.is_empty() {
        out.declared(field::required(path, ""));
        return;
    }
    if counters.len() > COUNTERS_MAX {
        out.push(field::too_many(path, counters.len(), COUNTERS_MAX));
        return;
    }
    for k in counters.keys() {
        for m in short_name_errors(k) {
            out.declared(field::invalid(path, k.as_str(), &m));
        }
    }
}

/// A device's own node selection, allowed only with the slice's `perDeviceNodeSelection`.
fn device_node_selection(out: &mut Causes, d: &Value, path: &Path, per_device: bool) {
    let (node, selector, all) = (present(d, "nodeName"), present(d, "nodeSelector"), present(d, "allNodes"));
    if !per_device {
        if node.is_some() || selector.is_some() || all.is_some() {
            out.push(field::invalid(
                path,
                Bad::Null,
                "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
            ));
        }
        return;
    }
    let mut set = Vec::new();
    if let Some(n) = node {
        let n = n.as_str().unwrap_or_default();
        if n.is_empty() {
            out.push(field::invalid(&path.child("nodeName"), n, "must not be empty"));
        } else {
            set.push("`nodeName`");
            out.extend(node_name(&path.child("nodeName"), n));
        }
    }
    if let Some(sel) = selector {
        set.push("`nodeSelector`");
        out.extend(crate::registry::core::node_selector::node_selector_causes(sel, &path.child("nodeSelector")));
    }
    if let Some(all) = all {
        if all.as_bool() == Some(true) {
            set.push("`allNodes`");
        } else {
            out.push(field::invalid(&path.child("allNodes"), false, "must be either unset or set to true"));
        }
    }
    match set.len() {
        0 => out.push(field::required(path, DEVICE_NODE_SELECTION)),
        1 => {}
        _ => out.push(field::invalid(path, format!("{{{}}}", set.join(", ")), DEVICE_NODE_SELECTION)),
    }
}
