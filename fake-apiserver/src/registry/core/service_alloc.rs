//! What a Service's REST storage does before its strategy (kubernetes v1.37.2
//! pkg/registry/core/service/storage: `beginCreate`, `beginUpdate` in storage.go; alloc.go):
//! clusterIP and clusterIPs put in step, allocated values kept across updates, IP families
//! and policy defaulted and checked (`initIPFamilyFields`, which runs the cluster-IP rules of
//! validation first), cluster IPs and node ports allocated. Its errors come before the
//! strategy's validation and replace it.
//!
//! The fake's cluster is single-stack IPv4 with the default node port range; IPs and ports
//! are allocated per request (no cluster-wide allocator): a port taken twice in one service
//! is caught, one taken by another service is not.

use super::service_ips::{bad_list, cluster_ips_related_causes, is_ipv4, is_ipv6, spec_list};
use super::service_traffic::needs_health_check;
use crate::error::{ApiError, ApiResult, StatusCause};
use crate::registry::field::{self, Bad, Path};
use serde_json::{Value, json};

const NODE_PORT_MIN: i64 = 30000;
const NODE_PORT_MAX: i64 = 32767;

fn invalid(obj: &Value, causes: Vec<StatusCause>) -> ApiError {
    ApiError::invalid("", "Service", obj["metadata"]["name"].as_str().unwrap_or_default(), causes)
}

fn set_list(spec: &mut Value, key: &str, items: Vec<String>) {
    spec[key] = json!(items);
}

fn needs_cluster_ip(spec: &Value) -> bool {
    spec["type"] != "ExternalName"
}

/// storage.go `needsNodePort`: a NodePort, or a LoadBalancer that allocates node ports.
fn needs_node_port(spec: &Value) -> bool {
    spec["type"] == "NodePort"
        || (spec["type"] == "LoadBalancer" && spec["allocateLoadBalancerNodePorts"].as_bool().unwrap_or(true))
}

fn node_port(p: &Value) -> i64 {
    p["nodePort"].as_i64().unwrap_or(0)
}

fn node_ports(spec: &Value) -> Vec<i64> {
    spec["ports"].as_array().into_iter().flatten().map(node_port).filter(|n| *n != 0).collect()
}

/// `BeginCreate`: normalize, then `allocateCreate`.
pub(crate) fn begin_create(obj: &mut Value) -> ApiResult<()> {
    if !obj["spec"].is_object() {
        return Ok(());
    }
    // normalizeClusterIPs on create: a client that only sets the singular field.
    let cluster_ip = obj["spec"]["clusterIP"].as_str().unwrap_or_default().to_string();
    if !cluster_ip.is_empty() && spec_list(&obj["spec"], "clusterIPs").is_empty() {
        set_list(&mut obj["spec"], "clusterIPs", vec![cluster_ip]);
    }
    init_ip_family_fields(&mut obj["spec"], None).map_err(|c| invalid(obj, c))?;
    allocate_cluster_ips(obj);
    let mut op = PortOperation::new(obj, None);
    let ty = obj["spec"]["type"].as_str().unwrap_or_default().to_string();
    if ty == "NodePort" || ty == "LoadBalancer" {
        init_node_ports(obj, &mut op)?;
    }
    if needs_health_check(&obj["spec"]) {
        allocate_health_check_node_port(&mut obj["spec"], &mut op)?;
    }
    Ok(())
}

/// `BeginUpdate`: keep what was allocated, normalize, then `allocateUpdate`.
pub(crate) fn begin_update(new: &mut Value, old: &Value) -> ApiResult<()> {
    if !new["spec"].is_object() {
        return Ok(());
    }
    let old_spec = &old["spec"];
    patch_allocated_values(&mut new["spec"], old_spec);
    normalize_cluster_ips_on_update(&mut new["spec"], old_spec);
    init_ip_family_fields(&mut new["spec"], Some(old_spec)).map_err(|c| invalid(new, c))?;
    if old_spec["type"] == "ExternalName" && new["spec"]["type"] != "ExternalName" {
        allocate_cluster_ips(new);
    }
    let mut op = PortOperation::new(new, Some(old));
    let ty = new["spec"]["type"].as_str().unwrap_or_default().to_string();
    if ty == "NodePort" || ty == "LoadBalancer" {
        update_node_ports(new, old_spec, &mut op)?;
    }
    if !needs_health_check(old_spec) && needs_health_check(&new["spec"]) {
        allocate_health_check_node_port(&mut new["spec"], &mut op)?;
    }
    Ok(())
}

/// `patchAllocatedValues`: a resubmitted object without its cluster IPs, node ports or
/// health check node port keeps the allocated ones.
fn patch_allocated_values(new: &mut Value, old: &Value) {
    if needs_cluster_ip(old) && needs_cluster_ip(new) {
        if new["clusterIP"].as_str().unwrap_or_default().is_empty()
            && let Some(ip) = old.get("clusterIP").filter(|v| !v.is_null())
        {
            new["clusterIP"] = ip.clone();
        }
        if spec_list(new, "clusterIPs").is_empty() && !spec_list(old, "clusterIPs").is_empty() {
            new["clusterIPs"] = old["clusterIPs"].clone();
        }
    }
    if needs_node_port(old) && needs_node_port(new) {
        let new_used = node_ports(new);
        let used: Vec<i64> = node_ports(old).into_iter().filter(|n| new_used.contains(n)).collect();
        let by_name = |name: &Value| {
            old["ports"].as_array().into_iter().flatten().filter(|p| p["name"] == *name).map(node_port).next_back()
        };
        for p in new["ports"].as_array_mut().into_iter().flatten() {
            if node_port(p) == 0
                && let Some(was) = by_name(&p["name"]).filter(|n| *n != 0 && !used.contains(n))
            {
                p["nodePort"] = json!(was);
            }
        }
    }
    let needs_hc = |s: &Value| s["type"] == "LoadBalancer" && s["externalTrafficPolicy"] == "Local";
    if needs_hc(old) && needs_hc(new) && new["healthCheckNodePort"].as_i64().unwrap_or(0) == 0 {
        new["healthCheckNodePort"] = old["healthCheckNodePort"].clone();
    }
}

/// `normalizeClusterIPs` on update: an old client that sent only the singular field.
fn normalize_cluster_ips_on_update(new: &mut Value, old: &Value) {
    let old_ip = old["clusterIP"].as_str().unwrap_or_default();
    let new_ip = new["clusterIP"].as_str().unwrap_or_default().to_string();
    let (old_ips, new_ips) = (spec_list(old, "clusterIPs"), spec_list(new, "clusterIPs"));
    if !old_ips.is_empty() && new_ips.is_empty() && old_ip == new_ip {
        new["clusterIPs"] = old["clusterIPs"].clone();
    }
    if old_ip != new_ip {
        let same_plural = spec_list(new, "clusterIPs") == old_ips;
        if !old_ip.is_empty() && new_ip.is_empty() {
            if same_plural && let Some(m) = new.as_object_mut() {
                m.remove("clusterIPs");
            }
        } else if same_plural {
            set_list(new, "clusterIPs", vec![new_ip]);
        }
    }
}

/// alloc.go `isMatchingPreferDualStackClusterIPFields`: a PreferDualStack service whose IPs
/// and families did not change is left alone.
fn is_matching_prefer_dual_stack(new: &Value, old: Option<&Value>) -> bool {
    let Some(old) = old else { return false };
    let policy = |s: &Value| s.get("ipFamilyPolicy").filter(|v| !v.is_null()).cloned();
    policy(new).is_some()
        && old["type"] == new["type"]
        && ["ClusterIP", "NodePort", "LoadBalancer"].contains(&new["type"].as_str().unwrap_or_default())
        && new["ipFamilyPolicy"] == "PreferDualStack"
        && policy(old).is_none_or(|p| p == "PreferDualStack")
        && spec_list(old, "clusterIPs") == spec_list(new, "clusterIPs")
        && spec_list(old, "ipFamilies") == spec_list(new, "ipFamilies")
}

/// alloc.go `familyOf`.
fn family_of(ip: &str) -> &'static str {
    if is_ipv4(ip) {
        "IPv4"
    } else if is_ipv6(ip) {
        "IPv6"
    } else {
        "unknown"
    }
}

/// alloc.go `initIPFamilyFields` on a single-stack IPv4 cluster: the policy defaulted (the
/// old one, RequireDualStack for a headless selectorless service, else SingleStack), the
/// cluster-IP rules of validation, the policy against the IPs and families given, families
/// inferred from the IPs, then defaulted.
fn init_ip_family_fields(spec: &mut Value, old: Option<&Value>) -> Result<(), Vec<StatusCause>> {
    if spec["type"] == "ExternalName" || is_matching_prefer_dual_stack(spec, old) {
        return Ok(());
    }
    let headless_selectorless =
        spec["clusterIP"] == "None" && spec["selector"].as_object().is_none_or(serde_json::Map::is_empty);
    if spec.get("ipFamilyPolicy").is_none_or(Value::is_null) {
        let policy = match old.and_then(|o| o.get("ipFamilyPolicy")).filter(|p| !p.is_null()) {
            Some(p) => p.clone(),
            None if headless_selectorless => json!("RequireDualStack"),
            None => json!("SingleStack"),
        };
        spec["ipFamilyPolicy"] = policy;
    }
    let causes = cluster_ips_related_causes(spec, old);
    if !causes.is_empty() {
        return Err(causes);
    }
    let policy_path = Path::root("spec").child("ipFamilyPolicy");
    let policy = spec["ipFamilyPolicy"].as_str().unwrap_or_default().to_string();
    let mut el = Vec::new();
    if let Some(old) = old {
        if policy == "SingleStack" {
            // Single-stack with unchanged IPs and families is a clear wish to downgrade.
            let ips = spec_list(spec, "clusterIPs");
            if ips == spec_list(old, "clusterIPs") && ips.len() > 1 {
                set_list(spec, "clusterIPs", ips[..1].to_vec());
            }
            let families = spec_list(spec, "ipFamilies");
            if families == spec_list(old, "ipFamilies") && families.len() > 1 {
                set_list(spec, "ipFamilies", families[..1].to_vec());
            }
        } else {
            let reduced = |key: &str| {
                let n = spec_list(spec, key).len();
                n != 0 && n < spec_list(old, key).len()
            };
            if reduced("clusterIPs") {
                el.push(field::invalid(
                    &policy_path,
                    policy.as_str(),
                    "must be 'SingleStack' to release the secondary cluster IP",
                ));
            }
            if reduced("ipFamilies") {
                el.push(field::invalid(
                    &policy_path,
                    policy.as_str(),
                    "must be 'SingleStack' to release the secondary IP family",
                ));
            }
        }
    }
    if policy == "SingleStack" {
        if spec_list(spec, "clusterIPs").len() == 2 {
            el.push(field::invalid(
                &policy_path,
                policy.as_str(),
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
            ));
        }
        if spec_list(spec, "ipFamilies").len() == 2 {
            el.push(field::invalid(
                &policy_path,
                policy.as_str(),
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
            ));
        }
    }
    let mut families = spec_list(spec, "ipFamilies");
    for (i, ip) in spec_list(spec, "clusterIPs").iter().enumerate() {
        if ip == "None" {
            break;
        }
        let family = family_of(ip);
        if i >= families.len() {
            if family == "IPv4" {
                families.push(family.to_string());
            } else {
                el.push(field::invalid(
                    &Path::root("spec").child("clusterIPs").index(i),
                    bad_list(spec, "clusterIPs"),
                    &format!("{family} is not configured on this cluster"),
                ));
            }
        }
    }
    if !families.is_empty() {
        set_list(spec, "ipFamilies", families.clone());
    }
    if !el.is_empty() {
        return Err(el);
    }
    if headless_selectorless {
        if families.is_empty() {
            families.push("IPv4".into());
        }
        if families.len() < 2 && policy != "SingleStack" {
            let other = if families[0] == "IPv4" { "IPv6" } else { "IPv4" };
            families.push(other.into());
        }
        set_list(spec, "ipFamilies", families);
        return Ok(());
    }
    if policy == "RequireDualStack" {
        el.push(field::invalid(
            &policy_path,
            policy.as_str(),
            "this cluster is not configured for dual-stack services",
        ));
    }
    for (i, f) in families.iter().enumerate() {
        if f != "IPv4" {
            el.push(field::invalid(
                &Path::root("spec").child("ipFamilies").index(i),
                f.as_str(),
                "not configured on this cluster",
            ));
        }
    }
    if !el.is_empty() {
        return Err(el);
    }
    if families.is_empty() {
        set_list(spec, "ipFamilies", vec!["IPv4".into()]);
    }
    Ok(())
}

/// A cluster IP for a new service in 10.96.0.0/16, derived from its namespace and name (the
/// fake has no allocator to keep in step; upstream allocates at random).
fn next_cluster_ip(obj: &Value) -> String {
    let key = format!(
        "{}/{}",
        obj["metadata"]["namespace"].as_str().unwrap_or_default(),
        obj["metadata"]["name"].as_str().unwrap_or_default()
    );
    let h = key.bytes().fold(2166136261u32, |h, b| (h ^ u32::from(b)).wrapping_mul(16777619));
    format!("10.96.{}.{}", (h >> 8) % 256, (h % 254) + 1)
}

/// alloc.go `allocClusterIPs`: one IP per family (those given are kept), the first also in
/// `clusterIP`. Nothing for ExternalName and headless services.
fn allocate_cluster_ips(obj: &mut Value) {
    let spec = &obj["spec"];
    let mut ips = spec_list(spec, "clusterIPs");
    if spec["type"] == "ExternalName" || ips.first().is_some_and(|ip| ip == "None") {
        return;
    }
    let families = spec_list(spec, "ipFamilies");
    ips.resize(ips.len().max(families.len()), String::new());
    for ip in ips.iter_mut().take(families.len()) {
        if ip.is_empty() {
            *ip = next_cluster_ip(obj);
        }
    }
    if let Some(first) = ips.first() {
        obj["spec"]["clusterIP"] = json!(first);
    }
    set_list(&mut obj["spec"], "clusterIPs", ips);
}

/// portallocator's `PortAllocationOperation`, for one request: the ports it took, and those
/// `AllocateNext` must avoid (the ones the service names or had).
struct PortOperation {
    taken: Vec<i64>,
    avoid: Vec<i64>,
    seed: u32,
}

impl PortOperation {
    fn new(obj: &Value, old: Option<&Value>) -> Self {
        let mut avoid = node_ports(&obj["spec"]);
        avoid.extend(obj["spec"]["healthCheckNodePort"].as_i64());
        if let Some(old) = old {
            avoid.extend(node_ports(&old["spec"]));
            avoid.extend(old["spec"]["healthCheckNodePort"].as_i64());
        }
        let key = format!("{}/{}", obj["metadata"]["namespace"], obj["metadata"]["name"]);
        let seed = key.bytes().fold(2166136261u32, |h, b| (h ^ u32::from(b)).wrapping_mul(16777619));
        PortOperation { taken: Vec::new(), avoid, seed }
    }

    /// `Allocate`: a port in the range, not yet taken.
    fn allocate(&mut self, port: i64) -> Result<(), String> {
        if !(NODE_PORT_MIN..=NODE_PORT_MAX).contains(&port) {
            return Err(format!(
                "provided port is not in the valid range. The range of valid ports is {NODE_PORT_MIN}-{NODE_PORT_MAX}"
            ));
        }
        if self.taken.contains(&port) {
            return Err("provided port is already allocated".into());
        }
        self.taken.push(port);
        Ok(())
    }

    /// `AllocateNext`: a free port (derived from the service's name rather than random).
    fn allocate_next(&mut self) -> i64 {
        let span = NODE_PORT_MAX - NODE_PORT_MIN + 1;
        let start = i64::from(self.seed) % span;
        let port = (0..span)
            .map(|k| NODE_PORT_MIN + (start + k) % span)
            .find(|p| !self.taken.contains(p) && !self.avoid.contains(p))
            .unwrap_or(NODE_PORT_MIN);
        self.taken.push(port);
        port
    }
}

fn node_port_invalid(obj: &Value, i: usize, port: i64, msg: &str) -> ApiError {
    let at = Path::root("spec").child("ports").index(i).child("nodePort");
    invalid(obj, vec![field::invalid(&at, Bad::from(port), msg)])
}

/// alloc.go `shouldAllocateNodePorts`.
fn should_allocate_node_ports(spec: &Value) -> bool {
    match spec["type"].as_str() {
        Some("NodePort") => true,
        Some("LoadBalancer") => spec["allocateLoadBalancerNodePorts"].as_bool().unwrap_or(true),
        _ => false,
    }
}

/// alloc.go `initNodePorts`: ports sharing a port number share a node port (the first one
/// requested for that number, else a new one); a requested port must be free and in range.
fn init_node_ports(obj: &mut Value, op: &mut PortOperation) -> ApiResult<()> {
    let allocate = should_allocate_node_ports(&obj["spec"]);
    let ports = obj["spec"]["ports"].as_array().cloned().unwrap_or_default();
    let mut by_port: Vec<(i64, i64)> = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        let (number, requested_here) = (p["port"].as_i64().unwrap_or(0), node_port(p));
        if requested_here == 0 && !allocate {
            continue;
        }
        let assigned = by_port.iter().find(|(n, _)| *n == number).map(|(_, np)| *np);
        let set = match assigned {
            None => {
                let requested = ports
                    .iter()
                    .find(|q| q["port"].as_i64().unwrap_or(0) == number && node_port(q) != 0)
                    .map_or(0, node_port);
                let np = if requested != 0 {
                    op.allocate(requested).map_err(|e| node_port_invalid(obj, i, requested, &e))?;
                    requested
                } else {
                    op.allocate_next()
                };
                by_port.push((number, np));
                Some(np)
            }
            Some(np) if requested_here == 0 => Some(np),
            Some(np) if requested_here != np => {
                op.allocate(requested_here).map_err(|e| node_port_invalid(obj, i, requested_here, &e))?;
                None
            }
            Some(_) => None,
        };
        if let Some(np) = set {
            obj["spec"]["ports"][i]["nodePort"] = json!(np);
        }
    }
    Ok(())
}

/// alloc.go `updateNodePorts`: new requested ports must be free and in range, missing ones
/// are allocated, and one (protocol, node port) twice is a plain error.
fn update_node_ports(new: &mut Value, old: &Value, op: &mut PortOperation) -> ApiResult<()> {
    let allocate = should_allocate_node_ports(&new["spec"]);
    let old_numbers = node_ports(old);
    let mut allocated_here = Vec::new();
    let mut seen: Vec<(String, i64)> = Vec::new();
    let count = new["spec"]["ports"].as_array().map_or(0, Vec::len);
    for i in 0..count {
        let p = &new["spec"]["ports"][i];
        let protocol = p["protocol"].as_str().unwrap_or_default().to_string();
        let mut np = node_port(p);
        if np == 0 && !allocate {
            continue;
        }
        if np != 0 {
            if !old_numbers.contains(&np) && !allocated_here.contains(&np) {
                op.allocate(np).map_err(|e| node_port_invalid(new, i, np, &e))?;
                allocated_here.push(np);
            }
        } else {
            np = op.allocate_next();
            new["spec"]["ports"][i]["nodePort"] = json!(np);
        }
        if seen.contains(&(protocol.clone(), np)) {
            return Err(ApiError::internal_plain(format!("duplicate nodePort: {{{protocol} {np}}}")));
        }
        seen.push((protocol, np));
    }
    Ok(())
}

/// alloc.go `allocHealthCheckNodePort`: the requested port, or a new one; a failure is an
/// internal error.
fn allocate_health_check_node_port(spec: &mut Value, op: &mut PortOperation) -> ApiResult<()> {
    let requested = spec["healthCheckNodePort"].as_i64().unwrap_or(0);
    if requested != 0 {
        op.allocate(requested).map_err(|e| {
            ApiError::internal(format!("failed to allocate requested HealthCheck NodePort {requested}: {e}"))
        })?;
    } else {
        spec["healthCheckNodePort"] = json!(op.allocate_next());
    }
    Ok(())
}
