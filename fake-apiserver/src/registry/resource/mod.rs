//! `resource.k8s.io/v1` (DRA): ResourceClaims, their templates, DeviceClasses and
//! ResourceSlices (`pkg/apis/resource/validation`). The claim's spec is immutable; its status
//! follows the rules of `status.allocation` and `status.reservedFor` (at most 256 entries,
//! unique uids, required fields, only with an allocation, no additions while the claim is
//! being deleted, an allocation that only goes from unset to set or back). With the
//! `DRAReservedForWorkloads` gate (KEP-5194 as proposed) claims also keep `spec.reservedFor`
//! (a consumer reference with resource, name and uid) and
//! `status.allocation.reservedForAnyPod`; without it the decoder drops both, as a server
//! without the feature does.

use crate::error::StatusCause;
use crate::registry::features::FeatureGate;
use crate::registry::field::{self, Bad, Path};
use crate::registry::{ResourceType, Strategy};
use apimachinery::validation::{dns1123_label_errors, dns1123_subdomain_errors, label_key_errors};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// `ResourceClaimReservedForMaxSize`.
pub(crate) const RESERVED_FOR_MAX: usize = 256;
/// `DeviceRequestsMaxSize`, `DeviceConstraintsMaxSize`, `DeviceConfigMaxSize`.
const REQUESTS_MAX: usize = 32;
/// `FirstAvailableDeviceRequestMaxSize`.
const SUBREQUESTS_MAX: usize = 8;

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn dns_label(out: &mut Vec<StatusCause>, path: &Path, v: &str) {
    for msg in dns1123_label_errors(v) {
        out.push(field::invalid(path, v, &msg));
    }
}

fn subdomain(out: &mut Vec<StatusCause>, path: &Path, v: &str) {
    if v.is_empty() {
        out.push(field::required(path, ""));
    }
    for msg in dns1123_subdomain_errors(v).into_iter().filter(|_| !v.is_empty()) {
        out.push(field::invalid(path, v, &msg));
    }
}

fn selectors(out: &mut Vec<StatusCause>, sels: &[Value], path: &Path) {
    for (i, s) in sels.iter().enumerate() {
        let at = path.index(i);
        match s.get("cel").filter(|c| c.is_object()) {
            None => out.push(field::required(&at.child("cel"), "")),
            Some(c) => {
                let expr = text(c, "expression");
                if let Err(e) = cel::Program::compile(expr) {
                    out.push(field::invalid(
                        &at.child("cel").child("expression"),
                        expr,
                        &format!("compilation failed: {e}"),
                    ));
                }
            }
        }
    }
}

fn tolerations(out: &mut Vec<StatusCause>, ts: &[Value], path: &Path) {
    for (i, t) in ts.iter().enumerate() {
        let op = text(t, "operator");
        if !["", "Equal", "Exists"].contains(&op) {
            out.push(field::not_supported(&path.index(i).child("operator"), op, &["Equal", "Exists"]));
        }
    }
}

fn exact(out: &mut Vec<StatusCause>, e: &Value, path: &Path, subrequest: bool) {
    subdomain(out, &path.child("deviceClassName"), text(e, "deviceClassName"));
    selectors(out, list(e, "selectors"), &path.child("selectors"));
    match text(e, "allocationMode") {
        "" | "ExactCount" => {
            if let Some(n) = e.get("count").and_then(Value::as_i64).filter(|n| *n <= 0) {
                out.push(field::invalid(&path.child("count"), n, "must be greater than zero"));
            }
        }
        "All" => {
            if e.get("count").and_then(Value::as_i64).is_some_and(|n| n != 0) {
                out.push(field::invalid(
                    &path.child("count"),
                    e["count"].as_i64().unwrap_or(0),
                    "must not be specified when allocationMode is 'All'",
                ));
            }
        }
        other => out.push(field::not_supported(&path.child("allocationMode"), other, &["All", "ExactCount"])),
    }
    let _ = subrequest;
    tolerations(out, list(e, "tolerations"), &path.child("tolerations"));
}

/// `validateResourceClaimSpec` at `path` (`spec`, or `spec.spec` of a template).
fn claim_spec(spec: &Value, path: &Path) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let devices = spec.get("devices").unwrap_or(&Value::Null);
    let dpath = path.child("devices");
    let requests = list(devices, "requests");
    let mut names = BTreeSet::new();
    if requests.len() > REQUESTS_MAX {
        out.push(field::too_many(&dpath.child("requests"), requests.len(), REQUESTS_MAX));
    }
    for (i, r) in requests.iter().enumerate() {
        let at = dpath.child("requests").index(i);
        let name = text(r, "name");
        dns_label(&mut out, &at.child("name"), name);
        if !name.is_empty() && !names.insert(name.to_string()) {
            out.push(field::duplicate(&at, Bad::Raw(r.to_string())));
        }
        let has_exactly = r.get("exactly").is_some_and(|v| v.is_object());
        let first = list(r, "firstAvailable");
        match (has_exactly, first.is_empty()) {
            (true, true) => exact(&mut out, &r["exactly"], &at.child("exactly"), false),
            (false, false) => {
                if first.len() > SUBREQUESTS_MAX {
                    out.push(field::too_many(&at.child("firstAvailable"), first.len(), SUBREQUESTS_MAX));
                }
                for (j, sub) in first.iter().enumerate() {
                    let sp = at.child("firstAvailable").index(j);
                    dns_label(&mut out, &sp.child("name"), text(sub, "name"));
                    exact(&mut out, sub, &sp, true);
                }
            }
            (false, true) => out.push(field::required(&at, "exactly one of `exactly` or `firstAvailable` is required")),
            (true, false) => out.push(field::invalid(
                &at,
                Bad::Raw(String::new()),
                "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
            )),
        }
    }
    let known = |n: &str| names.contains(n.split('/').next().unwrap_or(n));
    for (key, max) in [("constraints", REQUESTS_MAX), ("config", REQUESTS_MAX)] {
        let items = list(devices, key);
        if items.len() > max {
            out.push(field::too_many(&dpath.child(key), items.len(), max));
        }
        for (i, c) in items.iter().enumerate() {
            for (j, r) in list(c, "requests").iter().enumerate() {
                let r = r.as_str().unwrap_or_default();
                if !known(r) {
                    out.push(field::invalid(&dpath.child(key).index(i).child("requests").index(j), r, "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"));
                }
            }
            if key == "config" {
                opaque(&mut out, c, &dpath.child(key).index(i));
            }
        }
    }
    out
}

fn opaque(out: &mut Vec<StatusCause>, c: &Value, path: &Path) {
    match c.get("opaque").filter(|v| v.is_object()) {
        None => out.push(field::required(&path.child("opaque"), "")),
        Some(o) => {
            let driver = text(o, "driver");
            subdomain(out, &path.child("opaque").child("driver"), driver);
        }
    }
}

/// ResourceClaims.
#[derive(Debug)]
pub(crate) struct ResourceClaimStrategy;

fn default_requests(spec: &mut Value) {
    let Some(requests) = spec.get_mut("devices").and_then(|d| d.get_mut("requests")).and_then(Value::as_array_mut)
    else {
        return;
    };
    for r in requests {
        let fill = |e: &mut Value| {
            if let Some(m) = e.as_object_mut() {
                m.entry("allocationMode").or_insert(json!("ExactCount"));
                if m.get("allocationMode").and_then(Value::as_str) == Some("ExactCount")
                    && m.get("count").and_then(Value::as_i64).unwrap_or(0) == 0
                {
                    m.insert("count".into(), json!(1));
                }
                for t in m.get_mut("tolerations").and_then(Value::as_array_mut).into_iter().flatten() {
                    if let Some(t) = t.as_object_mut() {
                        t.entry("operator").or_insert(json!("Equal"));
                    }
                }
            }
        };
        if let Some(e) = r.get_mut("exactly") {
            fill(e);
        }
        for sub in r.get_mut("firstAvailable").and_then(Value::as_array_mut).into_iter().flatten() {
            fill(sub);
        }
    }
}

/// The KEP-5194 fields (as proposed, gate `DRAReservedForWorkloads`).
const RESERVED_FOR_WORKLOADS_FIELDS: [&[&str]; 2] =
    [&["spec", "reservedFor"], &["status", "allocation", "reservedForAnyPod"]];

impl Strategy for ResourceClaimStrategy {
    fn gated_fields(&self, rt: &ResourceType, obj: &Value) -> Vec<(Vec<&'static str>, Value)> {
        if !rt.gates.enabled(FeatureGate::DraReservedForWorkloads) {
            return Vec::new();
        }
        RESERVED_FOR_WORKLOADS_FIELDS
            .iter()
            .filter_map(|path| {
                let v = path.iter().try_fold(obj, |at, k| at.get(*k))?;
                (!v.is_null()).then(|| (path.to_vec(), v.clone()))
            })
            .collect()
    }

    /// Go's decoder turns an empty `status.reservedFor` or `status.devices` (both `omitempty`)
    /// into an empty slice that is never encoded: a strategic-merge patch that deletes the last
    /// entry (the scheduler's Unreserve) leaves the field absent, not `[]`.
    fn canonicalize(&self, _rt: &ResourceType, obj: &mut Value) {
        if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
            for key in ["reservedFor", "devices"] {
                if status.get(key).and_then(Value::as_array).is_some_and(Vec::is_empty) {
                    status.remove(key);
                }
            }
        }
    }

    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec") {
            default_requests(spec);
        }
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let mut out = claim_spec(spec, &Path::root("spec"));
        // KEP-5194 as proposed: the designated consumer is a ResourceClaimConsumerReference.
        if let Some(r) = spec.get("reservedFor").filter(|v| !v.is_null()) {
            let at = Path::root("spec").child("reservedFor");
            for k in ["resource", "name", "uid"] {
                if text(r, k).is_empty() {
                    out.push(field::required(&at.child(k), ""));
                }
            }
        }
        out
    }

    /// The spec is immutable, and only that is checked.
    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut out = Vec::new();
        if obj.get("spec") != old.get("spec") {
            out.push(field::invalid(&Path::root("spec"), Bad::Raw(obj["spec"].to_string()), field::FIELD_IMMUTABLE));
        }
        out
    }

    fn validate_status_update(&self, rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        claim_status(rt, obj, old)
    }

    /// `DRAResourceClaimGranularStatusAuthorization`: a status write that changes
    /// `status.allocation` or `status.reservedFor` also needs the verb on the synthetic
    /// `resourceclaims/binding`.
    fn synthetic_status_subresource(&self, rt: &ResourceType, obj: &Value, old: &Value) -> Option<&'static str> {
        if !rt.gates.enabled(crate::registry::features::FeatureGate::DraResourceClaimGranularStatusAuthorization) {
            return None;
        }
        let part = |v: &Value, k: &str| v["status"].get(k).filter(|x| !x.is_null()).cloned();
        let changed = |k: &str| part(obj, k) != part(old, k);
        (changed("allocation") || changed("reservedFor")).then_some("binding")
    }
}

/// `validateResourceClaimStatusUpdate`.
fn claim_status(rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let status = obj.get("status").unwrap_or(&Value::Null);
    let old_status = old.get("status").unwrap_or(&Value::Null);
    let path = Path::root("status");
    let allocation = status.get("allocation").filter(|v| !v.is_null());
    let old_allocation = old_status.get("allocation").filter(|v| !v.is_null());
    let reserved = list(status, "reservedFor");
    let old_reserved = list(old_status, "reservedFor");
    let rpath = path.child("reservedFor");
    // validateSet: past the maximum only the size is reported (a guard against huge lists).
    // Defect: no upper bound on the consumers.
    let too_many =
        reserved.len() > RESERVED_FOR_MAX && !rt.defective(crate::registry::defects::ServerDefect::ReservedForUncapped);
    if too_many {
        out.push(field::too_many(&rpath, reserved.len(), RESERVED_FOR_MAX));
    }
    let mut uids = BTreeSet::new();
    for (i, r) in reserved.iter().enumerate().filter(|_| !too_many) {
        let at = rpath.index(i);
        for k in ["resource", "name", "uid"] {
            if text(r, k).is_empty() {
                out.push(field::required(&at.child(k), ""));
            }
        }
        let uid = text(r, "uid");
        if !uid.is_empty() && !uids.insert(uid.to_string()) {
            out.push(field::duplicate(&at, Bad::Raw(r.to_string())));
        }
    }
    if !reserved.is_empty() && allocation.is_none() {
        out.push(field::forbidden(&rpath, "may not be specified when `allocated` is not set"));
    }
    if old.get("metadata").and_then(|m| m.get("deletionTimestamp")).is_some_and(|v| !v.is_null()) {
        let old_uids: BTreeSet<&str> = old_reserved.iter().map(|r| text(r, "uid")).collect();
        if reserved.iter().any(|r| !old_uids.contains(text(r, "uid"))) {
            out.push(field::forbidden(
                &rpath,
                "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set",
            ));
        }
    }
    if let (Some(a), Some(o)) = (allocation, old_allocation)
        && a != o
    {
        out.push(field::invalid(&path.child("allocation"), Bad::Raw(a.to_string()), field::FIELD_IMMUTABLE));
    }
    if let Some(a) = allocation.filter(|_| old_allocation.is_none()) {
        let requests: BTreeSet<&str> = obj["spec"]["devices"]["requests"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r.get("name").and_then(Value::as_str))
            .collect();
        let apath = path.child("allocation").child("devices").child("results");
        for (i, res) in list(a.get("devices").unwrap_or(&Value::Null), "results").iter().enumerate() {
            let at = apath.index(i);
            let request = text(res, "request");
            if !requests.contains(request.split('/').next().unwrap_or(request)) {
                out.push(field::invalid(&at.child("request"), request, "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"));
            }
            subdomain(&mut out, &at.child("driver"), text(res, "driver"));
            if text(res, "pool").is_empty() {
                out.push(field::required(&at.child("pool"), ""));
            }
            dns_label(&mut out, &at.child("device"), text(res, "device"));
        }
    }
    out
}

/// ResourceClaimTemplates: `spec.spec` is a claim spec; the template's spec is immutable.
#[derive(Debug)]
pub(crate) struct ResourceClaimTemplateStrategy;

impl Strategy for ResourceClaimTemplateStrategy {
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec").and_then(|s| s.get_mut("spec")) {
            default_requests(spec);
        }
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        claim_spec(spec.get("spec").unwrap_or(&Value::Null), &Path::root("spec").child("spec"))
    }

    fn validate_update(&self, rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut out = self.validate(rt, obj);
        if obj.get("spec") != old.get("spec") {
            out.push(field::invalid(&Path::root("spec"), Bad::Raw(obj["spec"].to_string()), field::FIELD_IMMUTABLE));
        }
        out
    }
}

/// DeviceClasses: CEL selectors that compile, opaque configuration with a driver name.
#[derive(Debug)]
pub(crate) struct DeviceClassStrategy;

impl Strategy for DeviceClassStrategy {
    // ValidateDeviceClass: `ValidateObjectMetaWithOpts` (pkg/apis/resource/validation/validation.go).
    fn validates_generate_name(&self) -> bool {
        false
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        let mut out = Vec::new();
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let path = Path::root("spec");
        selectors(&mut out, list(spec, "selectors"), &path.child("selectors"));
        for (i, c) in list(spec, "config").iter().enumerate() {
            opaque(&mut out, c, &path.child("config").index(i));
        }
        if let Some(ext) = spec.get("extendedResourceName").and_then(Value::as_str) {
            extended_resource_name(&mut out, &path.child("extendedResourceName"), ext);
        }
        out
    }
}

/// validate.ExtendedResourceName (format=k8s-extended-resource-name): a domain-prefixed path,
/// not in `kubernetes.io`, without the `requests.` prefix, and a label key once prefixed with
/// `requests.` (as quota names it).
fn extended_resource_name(out: &mut Vec<StatusCause>, path: &Path, v: &str) {
    if !v.contains('/') {
        out.push(field::invalid(path, v, "a name must be a domain-prefixed path, such as 'example.com/my-prop'"));
    } else if v.contains("kubernetes.io/") {
        out.push(field::invalid(path, v, "must not have \"kubernetes.io/\" domain"));
    }
    if v.starts_with("requests.") {
        out.push(field::invalid(path, v, "must not have \"requests.\" prefix"));
    }
    for msg in label_key_errors(&format!("requests.{v}")) {
        out.push(field::invalid(path, v, &msg));
    }
}

/// ResourceSlices: driver and pool, exactly one node selection, device names.
#[derive(Debug)]
pub(crate) struct ResourceSliceStrategy;

fn slice_spec(obj: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::root("spec");
    subdomain(&mut out, &path.child("driver"), text(spec, "driver"));
    let pool = spec.get("pool").unwrap_or(&Value::Null);
    let ppath = path.child("pool");
    if text(pool, "name").is_empty() {
        out.push(field::required(&ppath.child("name"), ""));
    }
    if let Some(g) = pool.get("generation").and_then(Value::as_i64).filter(|g| *g < 0) {
        out.push(field::invalid(&ppath.child("generation"), g, "must be greater than or equal to 0"));
    }
    if pool.get("resourceSliceCount").and_then(Value::as_i64).is_none_or(|n| n <= 0) {
        let n = pool.get("resourceSliceCount").and_then(Value::as_i64).unwrap_or(0);
        out.push(field::invalid(&ppath.child("resourceSliceCount"), n, "must be greater than zero"));
    }
    let node = text(spec, "nodeName");
    let selections = [
        !node.is_empty(),
        spec.get("nodeSelector").is_some_and(|v| v.is_object()),
        spec.get("allNodes") == Some(&json!(true)),
        spec.get("perDeviceNodeSelection") == Some(&json!(true)),
    ];
    match selections.iter().filter(|s| **s).count() {
        0 => out.push(field::required(&path, "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required")),
        1 => {}
        _ => out.push(field::invalid(&path, Bad::Raw(String::new()), "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set")),
    }
    if !node.is_empty() {
        for msg in dns1123_subdomain_errors(node) {
            out.push(field::invalid(&path.child("nodeName"), node, &msg));
        }
    }
    let mut names = BTreeSet::new();
    for (i, d) in list(spec, "devices").iter().enumerate() {
        let at = path.child("devices").index(i);
        let name = text(d, "name");
        dns_label(&mut out, &at.child("name"), name);
        if !name.is_empty() && !names.insert(name.to_string()) {
            out.push(field::duplicate(&at, name));
        }
        if let Some(attrs) = d.get("attributes").and_then(Value::as_object) {
            for (k, a) in attrs {
                let kinds = ["int", "bool", "string", "version", "ints", "bools", "strings", "versions"]
                    .iter()
                    .filter(|t| a.get(**t).is_some_and(|v| !v.is_null()))
                    .count();
                let apath = at.child("attributes").key(k);
                match kinds {
                    0 => out.push(field::invalid(
                        &apath,
                        "",
                        "must specify one of: `int`, `bool`, `string`, `version`, `ints`, `bools`, `strings`, `versions`",
                    )),
                    1 => {}
                    _ => {
                        out.push(field::invalid(&apath, Bad::Raw(a.to_string()), "exactly one value must be specified"))
                    }
                }
            }
        }
    }
    out
}

impl Strategy for ResourceSliceStrategy {
    fn validate(&self, _rt: &ResourceType, obj: &Value) -> Vec<StatusCause> {
        slice_spec(obj)
    }

    fn validate_update(&self, _rt: &ResourceType, obj: &Value, old: &Value) -> Vec<StatusCause> {
        let mut out = slice_spec(obj);
        let path = Path::root("spec");
        if let Some(c) = field::immutable(&path.child("driver"), &obj["spec"]["driver"], &old["spec"]["driver"]) {
            out.push(c);
        }
        if let Some(c) = field::immutable(
            &path.child("pool").child("name"),
            &obj["spec"]["pool"]["name"],
            &old["spec"]["pool"]["name"],
        ) {
            out.push(c);
        }
        if let Some(c) = field::immutable(&path.child("nodeName"), &obj["spec"]["nodeName"], &old["spec"]["nodeName"]) {
            out.push(c);
        }
        out
    }
}
