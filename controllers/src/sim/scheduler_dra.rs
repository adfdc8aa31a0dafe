//! The simulated scheduler's DynamicResources plugin, modelled on kube-scheduler 1.37.2
//! (`pkg/scheduler/framework/plugins/dynamicresources`):
//!
//! - PreEnqueue: a pod waits, with no condition written, until every claim it names exists, is
//!   not being deleted and (for a template) was made for it or, with
//!   `DRAWorkloadResourceClaims`, for its PodGroup, which must exist too.
//! - Devices with a `NoSchedule` or `NoExecute` taint the request does not tolerate are not
//!   allocated; the request's tolerations are copied into each result.
//! - Filter: an allocated claim fits a node its `status.allocation.nodeSelector` selects
//!   ("resourceclaim not available on the node"); an unallocated one is allocated from the
//!   node's ResourceSlices ("cannot allocate all claims"): for each request (`exactly`, or the
//!   first `firstAvailable` subrequest that fits), `count` devices (or `All`) of the driver its
//!   DeviceClass selects that no other claim holds.
//! - PostFilter: when no node fits and an allocated claim was unavailable on a node the pod
//!   otherwise fits, a claim reserved for nobody or only for this pod is deallocated
//!   (`reservedFor`, `allocation` and `devices` cleared in one status update).
//! - PodGroupPostFilter (pods of a PodGroup, gates on): after that, while no pod of the group
//!   is scheduled, such a claim reserved only for the PodGroup is deallocated, else the
//!   PodGroup's entry is patched off the group's allocated claims.
//! - PreBind: for each claim not reserved for the pod (`IsReservedForPod`, PodGroup entries
//!   counting with the gate), re-read on conflict; fail when the claim is being deleted or was
//!   allocated by someone else meanwhile; add `resource.kubernetes.io/delete-protection` with a
//!   metadata update, then one status update that sets the allocation and appends the consumer
//!   `BindTo` names (the pod, or its PodGroup). A refused write (the 257th entry) fails PreBind:
//!   entries this attempt added are removed again (Unreserve) and the pod is not bound.
//! - `workloads` profile (KEP-5194 as proposed): a claim with `spec.reservedFor` is reserved for
//!   that consumer at allocation, with `status.allocation.reservedForAnyPod: true`; once a
//!   non-pod entry exists no pod entry is added; PostFilter never deallocates such a claim.
//!
//! CEL selectors (DeviceClass `spec.selectors`, request `selectors`) are evaluated in the CEL
//! environment the fake server's rules use (`apimachinery::cel`) over the device's `driver`, `attributes`, `capacity` and
//! `allowMultipleAllocations`; an expression that fails selects no device (and is logged),
//! never all of them.

use super::SimError;
use crate::dra::claims::{self, bind_to, claim_name, is_for_pod, pod_claims, pod_group_name};
use crate::dra::objects::{CLAIM_FINALIZER, DeviceClass, PodGroup, ResourceClaim, ResourceSlice, text};
use crate::dra::{DraConfig, DraDefect};
use k8s_openapi::api::core::v1::{Node, Pod, PodResourceClaim};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::reflector::Store;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// A device: `(driver, pool, device)`.
type DeviceId = (String, String, String);

/// The DRA objects one scheduling pass reads.
pub(crate) struct DraView {
    pub claims: Vec<ResourceClaim>,
    pub slices: Vec<Arc<ResourceSlice>>,
    pub classes: Vec<Arc<DeviceClass>>,
    pub groups: Vec<Arc<PodGroup>>,
    /// Devices held by an allocation (of a claim in the cache or just written).
    pub in_use: BTreeSet<DeviceId>,
}

/// The caches the plugin keeps.
pub(crate) struct DraCaches {
    pub claims: Store<ResourceClaim>,
    pub slices: Store<ResourceSlice>,
    pub classes: Store<DeviceClass>,
    pub groups: Option<Store<PodGroup>>,
    /// Claims this scheduler wrote, newer than the cache may be (the assume cache), by uid.
    pub written: HashMap<String, ResourceClaim>,
}

fn rv(c: &ResourceClaim) -> u64 {
    c.metadata.resource_version.as_deref().and_then(|v| v.parse().ok()).unwrap_or(0)
}

impl DraCaches {
    /// Whether every cache has listed once.
    pub fn ready(&self) -> bool {
        super::scheduler::store_ready(&self.claims)
            && super::scheduler::store_ready(&self.slices)
            && super::scheduler::store_ready(&self.classes)
            && self.groups.as_ref().is_none_or(super::scheduler::store_ready)
    }

    /// The current view: cached claims, replaced by newer copies this scheduler wrote.
    pub fn view(&mut self) -> DraView {
        let cached = self.claims.state();
        self.written.retain(|uid, w| cached.iter().any(|c| c.uid() == uid && rv(c) < rv(w)));
        let claims: Vec<ResourceClaim> =
            cached.iter().map(|c| self.written.get(c.uid()).cloned().unwrap_or_else(|| (**c).clone())).collect();
        let mut in_use = BTreeSet::new();
        for c in &claims {
            for r in allocation_results(c) {
                in_use.insert(r);
            }
        }
        DraView {
            claims,
            slices: self.slices.state(),
            classes: self.classes.state(),
            groups: self.groups.as_ref().map(Store::state).unwrap_or_default(),
            in_use,
        }
    }
}

pub(crate) fn allocation_results(c: &ResourceClaim) -> Vec<DeviceId> {
    c.allocation()
        .and_then(|a| a.get("devices"))
        .and_then(|d| d.get("results"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| (text(r, "driver").to_string(), text(r, "pool").to_string(), text(r, "device").to_string()))
        .collect()
}

/// One claim of a pod, as PreEnqueue resolved it.
pub(crate) struct PodClaim {
    pub entry: PodResourceClaim,
    pub claim: ResourceClaim,
}

impl DraView {
    fn claim(&self, ns: &str, name: &str) -> Option<&ResourceClaim> {
        self.claims.iter().find(|c| c.namespace() == ns && c.name() == name)
    }

    /// The pod's PodGroup, when it has one and the gates let the scheduler see it.
    pub fn group(&self, pod: &Pod, config: &DraConfig) -> Option<&PodGroup> {
        if !config.gates.generic_workload {
            return None;
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let name = pod_group_name(pod)?;
        self.groups.iter().map(|g| g.as_ref()).find(|g| g.namespace() == ns && g.name() == name)
    }

    /// PreEnqueue: the pod's claims, or `None` while one is missing, being deleted or not the
    /// pod's.
    pub fn pre_enqueue(&self, pod: &Pod, config: &DraConfig) -> Option<Vec<PodClaim>> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        // With the gate, the claims' consumers come from the pod's PodGroup, which must exist
        // (`getPodGroupSnapshot` fails otherwise).
        if config.gates.accept_podgroup() && pod_group_name(pod).is_some() && self.group(pod, config).is_none() {
            return None;
        }
        let mut out = Vec::new();
        for entry in pod_claims(pod) {
            let (name, check_owner) = claim_name(pod, entry).ok()?;
            let Some(name) = name else { continue };
            let claim = self.claim(ns, &name)?;
            if claim.deleting() {
                return None;
            }
            if check_owner && is_for_pod(pod, claim, config.gates.accept_podgroup()).is_err() {
                return None;
            }
            out.push(PodClaim { entry: entry.clone(), claim: claim.clone() });
        }
        Some(out)
    }

    /// Filter: `Ok(allocations)` (one per claim, `None` for an allocated claim) when the claims
    /// fit `node`, else the reason. `taken` are devices assumed by earlier pods of this pass.
    pub fn filter(
        &self,
        claims: &[PodClaim],
        node: &Node,
        taken: &BTreeSet<DeviceId>,
    ) -> Result<Vec<Option<Value>>, String> {
        let node_name = node.metadata.name.as_deref().unwrap_or_default();
        let mut used: BTreeSet<DeviceId> = self.in_use.union(taken).cloned().collect();
        let mut out = Vec::new();
        for pc in claims {
            match pc.claim.allocation() {
                Some(a) => {
                    if !selects(a.get("nodeSelector"), node) {
                        return Err("resourceclaim not available on the node".into());
                    }
                    out.push(None);
                }
                None => match self.allocate(&pc.claim, node_name, &mut used) {
                    Some(a) => out.push(Some(a)),
                    None => return Err("cannot allocate all claims".into()),
                },
            }
        }
        Ok(out)
    }

    /// Devices on `node` (node-local slices and slices for all nodes) for every request of the
    /// claim, or `None`.
    fn allocate(&self, claim: &ResourceClaim, node: &str, used: &mut BTreeSet<DeviceId>) -> Option<Value> {
        let requests = claim.field("spec").get("devices").and_then(|d| d.get("requests")).and_then(Value::as_array)?;
        let mut results = Vec::new();
        let mut node_local = false;
        for r in requests {
            let name = text(r, "name");
            let options: Vec<(String, &Value)> = match r.get("exactly") {
                Some(e) => vec![(name.to_string(), e)],
                None => r
                    .get("firstAvailable")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|s| (format!("{name}/{}", text(s, "name")), s))
                    .collect(),
            };
            let mut satisfied = false;
            for (request, spec) in options {
                if let Some(picked) = self.pick(spec, node, used) {
                    for (dev, local) in picked {
                        node_local |= local;
                        let mut result = json!({"request": request, "driver": dev.0, "pool": dev.1, "device": dev.2});
                        // The request's tolerations go into the result, where taint eviction
                        // reads them (kubernetes/kubernetes#134434).
                        if let Some(t) = spec.get("tolerations").filter(|t| t.as_array().is_some_and(|a| !a.is_empty()))
                        {
                            result["tolerations"] = t.clone();
                        }
                        results.push(result);
                        used.insert(dev);
                    }
                    satisfied = true;
                    break;
                }
            }
            if !satisfied {
                return None;
            }
        }
        let mut allocation = json!({"devices": {"results": results}});
        if node_local {
            allocation["nodeSelector"] = json!({"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]});
        }
        Some(allocation)
    }

    /// The devices one request takes on `node`, each with whether its slice is node-local.
    fn pick(&self, spec: &Value, node: &str, used: &BTreeSet<DeviceId>) -> Option<Vec<(DeviceId, bool)>> {
        let class = self.classes.iter().find(|c| c.name() == text(spec, "deviceClassName"))?;
        let class_selectors = class.field("spec").get("selectors").cloned().unwrap_or(Value::Null);
        let own_selectors = spec.get("selectors").cloned().unwrap_or(Value::Null);
        let mut candidates = Vec::new();
        for slice in &self.slices {
            let s = slice.field("spec");
            let local = text(s, "nodeName") == node;
            let all = s.get("allNodes").and_then(Value::as_bool).unwrap_or(false);
            if !(local || all) {
                continue;
            }
            let driver = text(s, "driver");
            let pool = s.get("pool").map(|p| text(p, "name")).unwrap_or_default();
            for d in s.get("devices").and_then(Value::as_array).into_iter().flatten() {
                let id = (driver.to_string(), pool.to_string(), text(d, "name").to_string());
                // A NoSchedule or NoExecute device taint the request does not tolerate keeps the
                // device out of new allocations.
                let tolerations = spec.get("tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
                let tainted = d.get("taints").and_then(Value::as_array).into_iter().flatten().any(|t| {
                    matches!(text(t, "effect"), "NoSchedule" | "NoExecute")
                        && !tolerations.iter().any(|tol| crate::dra::device_taint_eviction::tolerates(tol, t))
                });
                if !tainted && !used.contains(&id) && {
                    let device = cel_device(driver, d);
                    matches_all(&class_selectors, &device) && matches_all(&own_selectors, &device)
                } {
                    candidates.push((id, local));
                }
            }
        }
        candidates.sort();
        match text(spec, "allocationMode") {
            "All" => (!candidates.is_empty()).then_some(candidates),
            _ => {
                let count = spec.get("count").and_then(Value::as_u64).unwrap_or(1) as usize;
                (candidates.len() >= count).then(|| candidates.into_iter().take(count).collect())
            }
        }
    }
}

/// Whether every CEL selector of the list selects the device (its `device` variable, see
/// [`cel_device`]). An expression that does not compile, fails at run time or is not a bool
/// selects nothing (and is logged), never everything.
fn matches_all(selectors: &Value, device: &Value) -> bool {
    selectors.as_array().into_iter().flatten().all(|s| {
        let expr = s.get("cel").map(|c| text(c, "expression")).unwrap_or_default();
        match apimachinery::cel::evaluate_bool(expr, &[("device", device)]) {
            Ok(selected) => selected,
            Err(e) => {
                tracing::warn!(expression = expr, error = %e, "a device selector failed; it selects nothing");
                false
            }
        }
    })
}

/// A ResourceSlice device as DRA's CEL environment shows it: `driver`, `attributes` and
/// `capacity` by domain (an unqualified name is in the driver's domain; a `domain/name` in its
/// own), and `allowMultipleAllocations`. Attribute values are their `int`, `bool`, `string` or
/// `version` (as a string); capacities their quantity string.
fn cel_device(driver: &str, device: &Value) -> Value {
    let mut attributes = serde_json::Map::new();
    let mut capacity = serde_json::Map::new();
    let put = |into: &mut serde_json::Map<String, Value>, qualified: &str, value: Value| {
        let (domain, name) = qualified.split_once('/').unwrap_or((driver, qualified));
        if let Value::Object(m) = into.entry(domain.to_string()).or_insert_with(|| json!({})) {
            m.insert(name.to_string(), value);
        }
    };
    for (name, a) in device.get("attributes").and_then(Value::as_object).into_iter().flatten() {
        let value = ["int", "bool", "string", "version"].iter().find_map(|k| a.get(*k)).cloned().unwrap_or(Value::Null);
        put(&mut attributes, name, value);
    }
    for (name, c) in device.get("capacity").and_then(Value::as_object).into_iter().flatten() {
        put(&mut capacity, name, c.get("value").cloned().unwrap_or(Value::Null));
    }
    json!({
        "driver": driver,
        "attributes": attributes,
        "capacity": capacity,
        "allowMultipleAllocations": device.get("allowMultipleAllocations").and_then(Value::as_bool).unwrap_or(false),
    })
}

/// Whether a node selector (of an allocation) selects `node`; none selects every node.
fn selects(selector: Option<&Value>, node: &Node) -> bool {
    let Some(terms) = selector.and_then(|s| s.get("nodeSelectorTerms")).and_then(Value::as_array) else {
        return true;
    };
    let name = node.metadata.name.as_deref().unwrap_or_default();
    let labels = node.metadata.labels.clone().unwrap_or_default();
    terms.iter().any(|t| {
        let fields = t.get("matchFields").and_then(Value::as_array).into_iter().flatten();
        let exprs = t.get("matchExpressions").and_then(Value::as_array).into_iter().flatten();
        let check = |r: &Value, value: Option<&str>| {
            let values: Vec<&str> =
                r.get("values").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
            match text(r, "operator") {
                "In" => value.is_some_and(|v| values.contains(&v)),
                "NotIn" => value.is_none_or(|v| !values.contains(&v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                _ => false,
            }
        };
        fields.into_iter().all(|r| text(r, "key") == "metadata.name" && check(r, Some(name)))
            && exprs.into_iter().all(|r| check(r, labels.get(text(r, "key")).map(String::as_str)))
    })
}

/// PostFilter (`deallocateOrDeletePodClaims`): deallocates one allocated claim of the pod that
/// was unavailable on a node the pod otherwise fits (`unavailable`, one flag per claim) and is
/// reserved for nobody or only for this pod; `true` when it did.
async fn deallocate_pod_claims(
    client: &Client,
    pod: &Pod,
    claims: &[PodClaim],
    unavailable: &[bool],
) -> Result<bool, SimError> {
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    for (pc, _) in claims.iter().zip(unavailable).filter(|(_, u)| **u) {
        let reserved = pc.claim.reserved_for();
        if reserved.is_empty() || (reserved.len() == 1 && text(&reserved[0], "uid") == uid) {
            return deallocate(client, &pc.claim).await;
        }
    }
    Ok(false)
}

/// One status update that clears `reservedFor`, `allocation` and `devices`; `true` when written.
async fn deallocate(client: &Client, claim: &ResourceClaim) -> Result<bool, SimError> {
    let mut updated = claim.clone();
    if let Some(status) = updated.field_mut("status").as_object_mut() {
        status.remove("reservedFor");
        status.remove("allocation");
        status.remove("devices");
    }
    let api: Api<ResourceClaim> = Api::namespaced(client.clone(), updated.namespace());
    match api.replace_status(updated.name(), &PostParams::default(), &updated).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(false),
        Err(e) => Err(SimError::api(format!("deallocating claim {}", updated.key()))(e)),
    }
}

/// After a failed scheduling attempt for a pod whose claims are `claims` (`unavailable`: the
/// claims whose allocation does not select some node the pod otherwise fits).
///
/// A pod of a PodGroup, with `GenericWorkload`, is scheduled in a pod-group cycle whose
/// failure runs PodGroupPostFilter (dynamicresources.go v1.37.2): PostFilter's deallocation
/// first; if that freed nothing, with `DRAWorkloadResourceClaims` and while no pod of the group
/// is scheduled (`scheduled_group_pods`), an unavailable claim reserved for nobody or only for
/// this PodGroup is deallocated, else the PodGroup's entry is taken off every allocated claim
/// that holds it (a strategic-merge patch keyed by uid), so a later cycle may pick new devices.
/// Any other pod gets PostFilter only.
pub(crate) async fn post_filter(
    client: &Client,
    pod: &Pod,
    group: Option<&PodGroup>,
    claims: &[PodClaim],
    unavailable: &[bool],
    scheduled_group_pods: usize,
    config: &DraConfig,
) -> Result<(), SimError> {
    if deallocate_pod_claims(client, pod, claims, unavailable).await? {
        return Ok(());
    }
    let Some(group) = group.filter(|_| config.gates.accept_podgroup() && config.gates.generic_workload) else {
        return Ok(());
    };
    if scheduled_group_pods > 0 && !config.defective(DraDefect::UnreserveGroupWithScheduledPod) {
        return Ok(());
    }
    for (pc, _) in claims.iter().zip(unavailable).filter(|(_, u)| **u) {
        let reserved = pc.claim.reserved_for();
        if reserved.is_empty() || (reserved.len() == 1 && text(&reserved[0], "uid") == group.uid()) {
            deallocate(client, &pc.claim).await?;
            return Ok(());
        }
    }
    for pc in claims {
        // The claims that hold the group's entry: IsReservedForPod through the PodGroup.
        if pc.claim.allocation().is_none() || !pc.claim.reserved_for().iter().any(|r| text(r, "uid") == group.uid()) {
            continue;
        }
        let patch = json!({"metadata": {"uid": pc.claim.uid()},
                           "status": {"reservedFor": [{"$patch": "delete", "uid": group.uid()}]}});
        let api: Api<ResourceClaim> = Api::namespaced(client.clone(), pc.claim.namespace());
        // A failed patch is retried with the next attempt, as upstream logs and goes on.
        if api.patch_status(pc.claim.name(), &PatchParams::default(), &Patch::Strategic(patch)).await.is_ok() {
            return Ok(());
        }
    }
    Ok(())
}

/// Whether a claim's allocation rules out a node the pod otherwise fits.
pub(crate) fn unavailable_on(claim: &ResourceClaim, node: &Node) -> bool {
    claim.allocation().is_some_and(|a| !selects(a.get("nodeSelector"), node))
}

/// Why a PreBind write failed, as the plugin words it.
fn api_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

/// PreBind for one pod: reserves (and allocates) every claim not yet reserved for it. `Err`
/// is the plugin's error; entries this call added are removed again first (Unreserve).
/// Returns the claims as written.
pub(crate) async fn pre_bind(
    client: &Client,
    pod: &Pod,
    group: Option<&PodGroup>,
    claims: &[PodClaim],
    allocations: &[Option<Value>],
    config: &DraConfig,
) -> Result<Vec<ResourceClaim>, String> {
    let mut written: Vec<ResourceClaim> = Vec::new();
    let mut added: Vec<(String, String, String)> = Vec::new();
    for (pc, allocation) in claims.iter().zip(allocations) {
        if claims::is_reserved_for_pod(pod, &pc.claim, config.gates.accept_podgroup()) {
            continue;
        }
        let consumer = match bind_to(pod, group.filter(|_| config.gates.accept_podgroup()), &pc.entry) {
            Ok(c) => c,
            Err(e) => {
                unreserve(client, &added).await;
                return Err(e);
            }
        };
        match bind_claim(client, &pc.claim, allocation.as_ref(), consumer.clone(), config).await {
            Ok(Some(c)) => {
                added.push((c.namespace().to_string(), c.name().to_string(), text(&consumer, "uid").to_string()));
                written.push(c);
            }
            Ok(None) => {}
            Err(e) => {
                unreserve(client, &added).await;
                return Err(e);
            }
        }
    }
    Ok(written)
}

/// `bindClaim`: `Ok(None)` when nothing had to be written (the `workloads` profile's claims
/// with a non-pod entry).
async fn bind_claim(
    client: &Client,
    cached: &ResourceClaim,
    allocation: Option<&Value>,
    consumer: Value,
    config: &DraConfig,
) -> Result<Option<ResourceClaim>, String> {
    let api: Api<ResourceClaim> = Api::namespaced(client.clone(), cached.namespace());
    let key = cached.key();
    let mut claim = cached.clone();
    for attempt in 0..5 {
        if attempt > 0 {
            claim = api
                .get(cached.name())
                .await
                .map_err(|e| format!("get updated claim {key} after conflict: {}", api_message(&e)))?;
        }
        if claim.deleting() {
            return Err(format!("claim {key} got deleted in the meantime"));
        }
        let mut entry = consumer.clone();
        if let Some(allocation) = allocation {
            if claim.allocation().is_some() {
                return Err(format!("claim {key} got allocated elsewhere in the meantime"));
            }
            if !claim.has_finalizer() {
                claim.metadata.finalizers.get_or_insert_with(Vec::new).push(CLAIM_FINALIZER.into());
                match api.replace(claim.name(), &PostParams::default(), &claim).await {
                    Ok(c) => claim = c,
                    Err(kube::Error::Api(s)) if s.code == 409 => continue,
                    Err(e) => return Err(format!("add finalizer to claim {key}: {}", api_message(&e))),
                }
            }
            let mut allocation = allocation.clone();
            if config.gates.reserved_for_workloads
                && let Some(spec_ref) = claim.field("spec").get("reservedFor").filter(|v| v.is_object())
            {
                entry = spec_ref.clone();
                allocation["reservedForAnyPod"] = json!(true);
            }
            claim.field_mut("status")["allocation"] = allocation;
        } else if config.gates.reserved_for_workloads && claim.reserved_for().iter().any(|r| !claims::is_pod_entry(r)) {
            return Ok(None);
        }
        let mut entries = claim.reserved_for().to_vec();
        entries.push(entry);
        claim.set_reserved_for(entries);
        match api.replace_status(claim.name(), &PostParams::default(), &claim).await {
            Ok(c) => return Ok(Some(c)),
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => {
                let what =
                    if allocation.is_some() { "add allocation and reservation to" } else { "add reservation to" };
                return Err(format!("{what} claim {key}: {}", api_message(&e)));
            }
        }
    }
    Err(format!(
        "claim {key}: the object has been modified; please apply your changes to the latest version and try again"
    ))
}

/// Unreserve: removes the entries (by uid) a failed PreBind added, re-reading each claim.
async fn unreserve(client: &Client, added: &[(String, String, String)]) {
    for (ns, name, uid) in added {
        let api: Api<ResourceClaim> = Api::namespaced(client.clone(), ns);
        for _ in 0..5 {
            let Ok(mut claim) = api.get(name).await else { break };
            let entries: Vec<Value> = claim.reserved_for().iter().filter(|r| text(r, "uid") != uid).cloned().collect();
            claim.set_reserved_for(entries);
            match api.replace_status(name, &PostParams::default(), &claim).await {
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                _ => break,
            }
        }
    }
}

/// Whether the scheduler was built to bind despite a failed reservation (a deliberate defect).
pub(crate) fn binds_despite_failed_reservation(config: &DraConfig) -> bool {
    config.defective(DraDefect::BindDespiteFailedReservation)
}
