//! The LoadBalancer-only fields of a Service, as kubernetes v1.37.2
//! pkg/apis/core/validation/validation.go checks them: source ranges (field or annotation),
//! `allocateLoadBalancerNodePorts` (in `validateService`) and `validateLoadBalancerClassField`.

use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use apimachinery::validation::{label_key_errors, legacy_cidr_errors};
use serde_json::Value;

const SOURCE_RANGES_ANNOTATION: &str = "service.beta.kubernetes.io/load-balancer-source-ranges";
const ONLY_LOAD_BALANCER: &str = "may only be used when `type` is 'LoadBalancer'";

fn is_load_balancer(spec: &Value) -> bool {
    spec["type"] == "LoadBalancer"
}

/// `IsValidCIDRForLegacyField`: nothing for a value the old object already had.
fn cidr_causes(path: &Path, value: &str, old: &[String]) -> Vec<StatusCause> {
    if old.iter().any(|o| o == value) {
        return Vec::new();
    }
    legacy_cidr_errors(value).into_iter().map(|m| field::invalid(path, value, m)).collect()
}

/// `spec.loadBalancerSourceRanges` (upstream's path is spelled `LoadBalancerSourceRanges`)
/// or, when it is empty, the older annotation: LoadBalancer only, and each range a CIDR
/// (space-padding allowed). The annotation is only checked when it changed.
pub(crate) fn source_range_causes(obj: &Value, old: Option<&Value>) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = &obj["spec"];
    let ranges = super::service_ips::spec_list(spec, "loadBalancerSourceRanges");
    if !ranges.is_empty() {
        let at = Path::root("spec").child("LoadBalancerSourceRanges");
        if !is_load_balancer(spec) {
            out.push(field::forbidden(&at, ONLY_LOAD_BALANCER));
        }
        let old_ranges: Vec<String> = old
            .map(|o| super::service_ips::spec_list(&o["spec"], "loadBalancerSourceRanges"))
            .unwrap_or_default()
            .iter()
            .map(|r| r.trim().to_string())
            .collect();
        for (i, r) in ranges.iter().enumerate() {
            out.extend(cidr_causes(&at.index(i), r.trim(), &old_ranges));
        }
    } else if let Some(val) = obj["metadata"]["annotations"].get(SOURCE_RANGES_ANNOTATION).and_then(Value::as_str) {
        let at = Path::root("metadata").child("annotations").key(SOURCE_RANGES_ANNOTATION);
        if !is_load_balancer(spec) {
            out.push(field::forbidden(&at, ONLY_LOAD_BALANCER));
        }
        let old_val = old.and_then(|o| o["metadata"]["annotations"].get(SOURCE_RANGES_ANNOTATION));
        if old_val.and_then(Value::as_str) != Some(val) {
            let val = val.trim();
            if !val.is_empty() {
                for r in val.split(',') {
                    out.extend(cidr_causes(&at, r.trim(), &[]));
                }
            }
        }
    }
    out
}

/// `allocateLoadBalancerNodePorts`: only on a LoadBalancer, where it is required (at a path
/// without `spec.`, as upstream has it).
pub(crate) fn allocate_node_ports_causes(spec: &Value) -> Vec<StatusCause> {
    let set = spec.get("allocateLoadBalancerNodePorts").is_some_and(|v| !v.is_null());
    let mut out = Vec::new();
    if set && !is_load_balancer(spec) {
        out.push(field::forbidden(&Path::root("spec").child("allocateLoadBalancerNodePorts"), ONLY_LOAD_BALANCER));
    }
    if is_load_balancer(spec) && !set {
        out.push(field::required(&Path::root("allocateLoadBalancerNodePorts"), ""));
    }
    out
}

fn class(spec: &Value) -> Option<Value> {
    spec.get("loadBalancerClass").filter(|v| !v.is_null()).cloned()
}

/// The update half of `validateLoadBalancerClassField`: the class is fixed while the service
/// stays a LoadBalancer. Upstream's update call also repeats the format and type checks that
/// `validateService` makes, but kube-apiserver v1.37.2 answers an update that sets a class on
/// a ClusterIP service with one cause, not two (measured by `kproof differential`), so they
/// are made once.
pub(crate) fn load_balancer_class_update_causes(old: &Value, spec: &Value) -> Vec<StatusCause> {
    if is_load_balancer(old) && is_load_balancer(spec) && class(old) != class(spec) {
        let at = Path::root("spec").child("loadBalancerClass");
        return vec![field::invalid(&at, Bad::of(&class(spec).unwrap_or(Value::Null)), "may not change once set")];
    }
    Vec::new()
}

/// `validateLoadBalancerClassField` as `validateService` calls it: a qualified name on a
/// LoadBalancer, forbidden on other types.
pub(crate) fn load_balancer_class_causes(spec: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let at = Path::root("spec").child("loadBalancerClass");
    match class(spec) {
        Some(c) if is_load_balancer(spec) => {
            let c = c.as_str().unwrap_or_default();
            for msg in label_key_errors(c) {
                out.push(field::invalid(&at, c, &msg));
            }
        }
        Some(_) => out.push(field::forbidden(&at, ONLY_LOAD_BALANCER)),
        None => {}
    }
    out
}
