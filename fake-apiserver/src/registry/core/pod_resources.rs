//! Compute resources of containers and of the whole pod: `ValidateContainerResourceRequirements`,
//! `validatePodResources`, `validatePodResourceConsistency` and the resource-name rules they use
//! (`ValidateContainerResourceName`, `validatePodResourceName`, `ValidateResourceQuantityValue`,
//! `validateResourceClaimNames`) of `pkg/apis/core/validation/validation.go` at v1.37.2, with the
//! sets of `pkg/apis/core/helper/helpers.go` and the aggregation of
//! `k8s.io/component-helpers/resource` (`AggregateContainerRequests`).

use super::pod_spec::{dns_label, list, s};
use super::resource_names::{is_hugepages, is_integer, is_native, resource_name_errors};
use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use apimachinery::quantity::Quantity;
use apimachinery::validation::label_key_errors;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// `IsStandardContainerResourceName`.
fn is_standard_container_resource(name: &str) -> bool {
    ["cpu", "memory", "ephemeral-storage"].contains(&name) || is_hugepages(name)
}

/// `IsExtendedResourceName`: outside kubernetes.io, and a qualified name once `requests.` is put
/// in front (as quota would).
fn is_extended(name: &str) -> bool {
    !is_native(name) && !name.starts_with("requests.") && label_key_errors(&format!("requests.{name}")).is_empty()
}

/// `IsOvercommitAllowed`: native resources other than huge pages.
fn overcommit_allowed(name: &str) -> bool {
    is_native(name) && !is_hugepages(name)
}

/// `ValidateContainerResourceName`: the generic rule, then a standard name for containers or a
/// well-formed extended resource.
fn container_resource_name(out: &mut Vec<StatusCause>, name: &str, at: &Path) {
    out.extend(resource_name_errors(name, at));
    if !name.contains('/') {
        if !is_standard_container_resource(name) {
            out.push(field::invalid(at, name, "must be a standard resource for containers"));
        }
    } else if !is_native(name) && !is_extended(name) {
        out.push(field::invalid(at, name, "doesn't follow extended resource name standard"));
    }
}

/// The pod-level names (`SupportedPodLevelResources`, as `sets.List` sorts them).
const POD_LEVEL: &[&str] = &["cpu", "hugepages-", "memory"];

/// `validatePodResourceName`: the generic rule, then cpu, memory or huge pages.
fn pod_resource_name(out: &mut Vec<StatusCause>, name: &str, at: &Path) {
    let errors = resource_name_errors(name, at);
    if !errors.is_empty() {
        out.extend(errors);
        return;
    }
    if !["cpu", "memory"].contains(&name) && !is_hugepages(name) {
        out.push(field::not_supported(at, name, POD_LEVEL));
    }
}

fn quantity_text(v: &Value) -> String {
    v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())
}

fn parse(v: &Value) -> Option<Quantity> {
    Quantity::parse(&quantity_text(v))
}

/// `ValidateResourceQuantityValue`: not negative, whole for integer resources.
fn quantity_value(out: &mut Vec<StatusCause>, name: &str, q: &Value, at: &Path) {
    let Some(qty) = parse(q) else { return };
    if qty.as_nanos() < 0 {
        out.push(field::invalid(at, qty.to_string(), "must be greater than or equal to 0"));
    }
    if is_integer(name) && qty.milli_value() % 1000 != 0 {
        out.push(field::invalid(at, qty.to_string(), "must be an integer"));
    }
}

/// Which names a requirements block may use.
#[derive(Clone, Copy)]
enum Level {
    Container,
    Pod,
}

/// `validateResourceRequirements` (container or pod level) of `reqs` at `path`.
fn requirements(out: &mut Vec<StatusCause>, reqs: &Value, claim_names: &BTreeSet<String>, level: Level, path: &Path) {
    let empty = Map::new();
    let limits = reqs.get("limits").and_then(Value::as_object).unwrap_or(&empty);
    let requests = reqs.get("requests").and_then(Value::as_object).unwrap_or(&empty);
    let lim_path = path.child("limits");
    let req_path = path.child("requests");
    let check_name = |out: &mut Vec<StatusCause>, name: &str, at: &Path| match level {
        Level::Container => container_resource_name(out, name, at),
        Level::Pod => pod_resource_name(out, name, at),
    };
    let (mut lim_compute, mut req_compute, mut lim_huge, mut req_huge) = (false, false, false, false);
    for (name, q) in limits {
        let at = lim_path.key(name);
        check_name(out, name, &at);
        quantity_value(out, name, q, &at);
        if is_hugepages(name) {
            lim_huge = true;
            hugepage_value(out, name, q, &at);
        }
        lim_compute |= ["cpu", "memory"].contains(&name.as_str());
    }
    for (name, q) in requests {
        let at = req_path.key(name);
        check_name(out, name, &at);
        quantity_value(out, name, q, &at);
        match limits.get(name) {
            Some(lim) => {
                if let (Some(r), Some(l)) = (parse(q), parse(lim)) {
                    if r != l && !overcommit_allowed(name) {
                        out.push(field::invalid(
                            &req_path,
                            r.to_string(),
                            &format!("must be equal to {name} limit of {l}"),
                        ));
                    } else if r > l {
                        out.push(field::invalid(
                            &req_path,
                            r.to_string(),
                            &format!("must be less than or equal to {name} limit of {l}"),
                        ));
                    }
                }
            }
            None if !overcommit_allowed(name) => {
                out.push(field::required(&lim_path, "Limit must be set for non overcommitable resources"));
            }
            None => {}
        }
        if is_hugepages(name) {
            req_huge = true;
            hugepage_value(out, name, q, &at);
        }
        req_compute |= ["cpu", "memory"].contains(&name.as_str());
    }
    if !lim_compute && !req_compute && (req_huge || lim_huge) {
        out.push(field::forbidden(path, "HugePages require cpu or memory"));
    }
    claims(out, reqs, claim_names, &path.child("claims"));
}

/// `validateResourceQuantityHugePageValue`: a whole number of pages.
fn hugepage_value(out: &mut Vec<StatusCause>, name: &str, q: &Value, at: &Path) {
    let (Some(qty), Some(page)) = (parse(q), Quantity::parse(name.trim_start_matches("hugepages-"))) else {
        return;
    };
    if page.as_nanos() > 0 && qty.as_nanos() % page.as_nanos() != 0 {
        out.push(field::invalid(at, qty.to_string(), &format!("{qty} is not positive integer multiple of {name}")));
    }
}

/// `validateResourceClaimNames`: each claim (and request) once, naming a pod claim.
fn claims(out: &mut Vec<StatusCause>, reqs: &Value, pod_claims: &BTreeSet<String>, path: &Path) {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for (i, c) in list(reqs, "claims").iter().enumerate() {
        let at = path.index(i);
        let name = s(c, "name");
        if name.is_empty() {
            out.push(field::required(&at, ""));
            continue;
        }
        if seen.contains(name) {
            out.push(field::duplicate(&at, name));
        } else {
            let request = s(c, "request");
            let mut key = name.to_string();
            if !request.is_empty() {
                dns_label(out, &at.child("request"), request);
                key = format!("{name}/{request}");
            }
            if seen.contains(&key) {
                out.push(field::duplicate(&at, key.as_str()));
            } else if request.is_empty() {
                for k in &seen {
                    if k.split_once('/').is_some_and(|(claim, _)| claim == name) {
                        out.push(field::duplicate(&at, name));
                    }
                }
            }
            seen.insert(key);
        }
        if !pod_claims.contains(name) {
            let detail = if pod_claims.is_empty() {
                "must be one of the names in pod.spec.resourceClaims which is empty".to_string()
            } else {
                let names: Vec<&str> = pod_claims.iter().map(String::as_str).collect();
                format!("must be one of the names in pod.spec.resourceClaims: {}", names.join(", "))
            };
            let mut cause = field::not_found(&at, name);
            cause.message = format!("{}: {detail}", cause.message);
            out.push(cause);
        }
    }
}

/// `ValidateContainerResourceRequirements` of a container's `resources`.
pub(super) fn container_requirements(
    out: &mut Vec<StatusCause>,
    container: &Value,
    claim_names: &BTreeSet<String>,
    path: &Path,
) {
    let reqs = container.get("resources").unwrap_or(&Value::Null);
    requirements(out, reqs, claim_names, Level::Container, path);
}

/// `validatePodResources` of `spec.resources` (PodLevelResources is on in 1.37): forbidden on
/// Windows, no claims, the names and values, then consistency with the containers.
pub(super) fn pod_resources(out: &mut Vec<StatusCause>, spec: &Value, claim_names: &BTreeSet<String>, path: &Path) {
    let Some(res) = spec.get("resources").filter(|r| !r.is_null()) else { return };
    let at = path.child("resources");
    if spec.pointer("/os/name").and_then(Value::as_str) == Some("windows") {
        out.push(field::forbidden(&at, "may not be set for a windows pod"));
        return;
    }
    if res.get("claims").is_some_and(|c| !c.is_null()) {
        out.push(field::forbidden(&at.child("claims"), "claims may not be set for Resources at pod-level"));
    }
    requirements(out, res, claim_names, Level::Pod, &at);
    consistency(out, spec, res, &at);
}

/// The requests of one container's `resources.<which>`, parsed.
fn amounts(c: &Value, which: &str) -> BTreeMap<String, Quantity> {
    c.pointer(&format!("/resources/{which}"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| parse(v).map(|q| (k.clone(), q)))
        .collect()
}

fn add(into: &mut BTreeMap<String, Quantity>, from: &BTreeMap<String, Quantity>) {
    for (k, q) in from {
        let sum = into.get(k).map_or(*q, |have| have.plus(*q));
        into.insert(k.clone(), sum);
    }
}

fn max_into(into: &mut BTreeMap<String, Quantity>, from: &BTreeMap<String, Quantity>) {
    for (k, q) in from {
        if into.get(k).is_none_or(|have| q > have) {
            into.insert(k.clone(), *q);
        }
    }
}

/// `aggregateContainerResourcesByFn`: the regular containers and sidecars add up; each other
/// init container runs alone beside the sidecars started before it, so the pod needs the most
/// of those moments.
fn aggregate(spec: &Value, which: &str) -> BTreeMap<String, Quantity> {
    let mut total = BTreeMap::new();
    for c in list(spec, "containers") {
        add(&mut total, &amounts(c, which));
    }
    let mut sidecars = BTreeMap::new();
    let mut init_peak = BTreeMap::new();
    for c in list(spec, "initContainers") {
        let own = amounts(c, which);
        if s(c, "restartPolicy") == "Always" {
            add(&mut total, &own);
            add(&mut sidecars, &own);
            max_into(&mut init_peak, &sidecars);
        } else {
            let mut moment = own;
            add(&mut moment, &sidecars);
            max_into(&mut init_peak, &moment);
        }
    }
    max_into(&mut total, &init_peak);
    total
}

/// `validatePodResourceConsistency`: pod requests cover the containers' aggregate, pod huge page
/// limits cover theirs, and no container's limit exceeds the pod's.
fn consistency(out: &mut Vec<StatusCause>, spec: &Value, res: &Value, path: &Path) {
    let pod_requests = amounts(&serde_json::json!({ "resources": res }), "requests");
    let pod_limits = amounts(&serde_json::json!({ "resources": res }), "limits");
    for (name, ctr) in aggregate(spec, "requests") {
        let Some(pod) = pod_requests.get(&name) else { continue };
        if ctr > *pod {
            out.push(field::invalid(
                &path.child("requests").key(&name),
                pod.to_string(),
                &format!("must be greater than or equal to aggregate container requests of {ctr}"),
            ));
        }
    }
    for (name, ctr) in aggregate(spec, "limits") {
        if !is_hugepages(&name) {
            continue;
        }
        let Some(pod) = pod_limits.get(&name) else { continue };
        if ctr > *pod {
            out.push(field::invalid(
                &path.child("limits").key(&name),
                pod.to_string(),
                &format!("must be greater than or equal to aggregate container limits of {ctr}"),
            ));
        }
    }
    for (i, c) in list(spec, "containers").iter().enumerate() {
        for (name, lim) in amounts(c, "limits") {
            let Some(pod) = pod_limits.get(&name) else { continue };
            if lim > *pod {
                // Upstream builds this path under `spec.resources`, oddly; kept as it is.
                let at = path.child("containers").index(i).key(&name).child("limits");
                out.push(field::invalid(
                    &at,
                    lim.to_string(),
                    &format!("must be less than or equal to pod limits of {pod}"),
                ));
            }
        }
    }
}
