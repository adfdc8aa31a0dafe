//! kube-controller-manager's resourceclaim controller, as in Kubernetes 1.37.2
//! (`pkg/controller/resourceclaim/controller.go`).
//!
//! Per pod with `spec.resourceClaims` (not being deleted): claims from templates are created
//! with `generateName` `<pod>-<claim>-` (both parts shortened proportionally past 57
//! characters), the pod as controller owner, the annotation
//! `resource.kubernetes.io/pod-claim-name` and the template's labels and annotations; an
//! orphan owned by the pod with that annotation is reused; then the names are applied to
//! `status.resourceClaimStatuses` (server-side apply, field manager `ResourceClaimController`).
//! A pod claim that matches its PodGroup's claim exactly gets the group's generated claim name
//! and no claim of its own; with `DRAWorkloadResourceClaims` off that is an error ("claim X is a
//! PodGroup claim but the DRAWorkloadResourceClaims feature is disabled"), and a pod naming a
//! PodGroup that does not exist is an error too. Both are recorded as `FailedResourceClaimCreation`
//! events on the pod. A scheduled pod whose allocated claim is not reserved for it gets the
//! reservation (for its PodGroup when the claim is the group's).
//!
//! Per PodGroup with `spec.resourceClaims` (gates on): one claim per template claim, owned by
//! the group, named in `status.resourceClaimStatuses`.
//!
//! Per claim: a pod entry of `status.reservedFor` goes when the pod's uid is among the deleted
//! (a 500-entry LRU), when the pod is replaced (other uid) or done (terminal, or deleted before
//! it was scheduled), or when it is missing from the cache and a live GET finds nothing or
//! another uid. A PodGroup entry goes (gate on) when the group is deleted or replaced. Other
//! entries are kept (1.36+) or stop the sync with an error (≤ 1.35 compatibility). Entries are
//! removed with one status update (not a patch: a conflict must fail); when the last one goes and
//! the claim carries `resource.kubernetes.io/delete-protection`, the same update clears the
//! allocation and the finalizer is removed afterwards. A claim being deleted without entries
//! loses its allocation and finalizer. A claim without entries whose controlling pod is done or
//! replaced is deleted. In the `workloads` profile (KEP-5194 as proposed) a claim allocated
//! with `reservedForAnyPod` whose consumer removed its own entry is deallocated.

use super::claims::{self, bind_to, claim_name, is_for_pod, is_pod_done, pod_claims, pod_group_name};
use super::objects::{CLAIM_FINALIZER, POD_CLAIM_ANNOTATION, PodGroup, ResourceClaim, ResourceClaimTemplate, text};
use super::{DraConfig, DraDefect, DraError, UnknownEntries, api_error, gone_or_conflict};
use crate::Clock;
use crate::events::{EventRecorder, EventType};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

/// The field manager of the controller's server-side applies.
pub const FIELD_MANAGER: &str = "ResourceClaimController";
/// How many deleted uids the controller remembers.
const DELETED_CAPACITY: usize = 500;
/// How soon a failed sync is retried.
const RETRY: Duration = Duration::from_secs(1);

/// The deleted-objects LRU: uids of pods and PodGroups seen deleted.
#[derive(Default)]
struct Deleted {
    order: VecDeque<String>,
    set: HashSet<String>,
}

impl Deleted {
    fn add(&mut self, uid: String) {
        if self.set.insert(uid.clone()) {
            self.order.push_back(uid);
            while self.order.len() > DELETED_CAPACITY {
                if let Some(old) = self.order.pop_front() {
                    self.set.remove(&old);
                }
            }
        }
    }

    fn has(&self, uid: &str) -> bool {
        self.set.contains(uid)
    }
}

/// One failed sync: whether to retry, and the message.
struct SyncError {
    retry: bool,
    message: String,
}

impl SyncError {
    fn retry(message: impl Into<String>) -> Self {
        Self { retry: true, message: message.into() }
    }
    fn fatal(message: impl Into<String>) -> Self {
        Self { retry: false, message: message.into() }
    }
}

impl From<DraError> for SyncError {
    fn from(e: DraError) -> Self {
        SyncError::retry(e.to_string())
    }
}

/// The caches one pass reads.
struct View {
    pods: Vec<Arc<Pod>>,
    claims: Vec<Arc<ResourceClaim>>,
    templates: Vec<Arc<ResourceClaimTemplate>>,
    groups: Vec<Arc<PodGroup>>,
}

impl View {
    fn pod(&self, ns: &str, name: &str) -> Option<&Pod> {
        self.pods
            .iter()
            .map(|p| p.as_ref())
            .find(|p| p.metadata.namespace.as_deref() == Some(ns) && p.metadata.name.as_deref() == Some(name))
    }
    fn claim(&self, ns: &str, name: &str) -> Option<&ResourceClaim> {
        self.claims.iter().map(|c| c.as_ref()).find(|c| c.namespace() == ns && c.name() == name)
    }
    fn group(&self, ns: &str, name: &str) -> Option<&PodGroup> {
        self.groups.iter().map(|g| g.as_ref()).find(|g| g.namespace() == ns && g.name() == name)
    }
    fn template(&self, ns: &str, name: &str) -> Option<&ResourceClaimTemplate> {
        self.templates.iter().map(|t| t.as_ref()).find(|t| t.namespace() == ns && t.name() == name)
    }
}

/// The reference resourceclaim controller; see the module docs.
pub struct ResourceClaimController {
    client: Client,
    config: DraConfig,
    events: Arc<EventRecorder>,
    deleted: Deleted,
    /// Claims created but maybe not in the cache yet (the upstream mutation cache), by
    /// `(owner uid, claim entry name)`.
    created: HashMap<(String, String), ResourceClaim>,
}

impl ResourceClaimController {
    /// A controller that talks to the API through `client`.
    pub fn new(client: Client, clock: Clock, config: DraConfig) -> Self {
        let events = Arc::new(EventRecorder::new(client.clone(), clock, "resourceclaim-controller"));
        Self { client, config, events, deleted: Deleted::default(), created: HashMap::new() }
    }

    /// Watches pods, claims, templates (and PodGroups, with `GenericWorkload`) and syncs until a
    /// watch ends; drop the future to stop it.
    pub async fn run(mut self) -> Result<(), DraError> {
        let events = self.events.clone();
        tokio::select! {
            result = self.sync_loop() => result,
            () = events.run_series_upkeep() => Ok(()),
        }
    }

    async fn sync_loop(&mut self) -> Result<(), DraError> {
        let (pods, pod_events) = crate::watch::cache::<Pod>(&self.client, watcher::Config::default());
        let (claims, claim_events) = crate::watch::cache::<ResourceClaim>(&self.client, watcher::Config::default());
        let (templates, template_events) =
            crate::watch::cache::<ResourceClaimTemplate>(&self.client, watcher::Config::default());
        let mut streams = vec![pod_events, claim_events, template_events];
        let groups = if self.config.gates.generic_workload {
            let (groups, group_events) = crate::watch::cache::<PodGroup>(&self.client, watcher::Config::default());
            streams.push(group_events);
            Some(groups)
        } else {
            None
        };
        let mut events = futures::stream::select_all(streams);
        let mut known_pods: HashSet<String> = HashSet::new();
        let mut known_groups: HashSet<String> = HashSet::new();
        let mut retry_at: Option<tokio::time::Instant> = None;
        loop {
            let wake = retry_at.unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
            tokio::select! {
                next = events.next() => {
                    if next.is_none() {
                        return Err(DraError::WatchEnded("pod, claim, template or PodGroup"));
                    }
                    while let Some(Some(())) = events.next().now_or_never() {}
                }
                _ = tokio::time::sleep_until(wake) => {}
            }
            let ready = ready(&pods) && ready(&claims) && ready(&templates) && groups.as_ref().is_none_or(ready);
            if !ready {
                continue;
            }
            let view = View {
                pods: pods.state(),
                claims: claims.state(),
                templates: templates.state(),
                groups: groups.as_ref().map(Store::state).unwrap_or_default(),
            };
            // An object that left the cache was deleted (the informer's delete event).
            let pod_uids: HashSet<String> = view.pods.iter().filter_map(|p| p.metadata.uid.clone()).collect();
            for gone in known_pods.difference(&pod_uids) {
                self.deleted.add(gone.clone());
            }
            known_pods = pod_uids;
            let group_uids: HashSet<String> = view.groups.iter().map(|g| g.uid().to_string()).collect();
            for gone in known_groups.difference(&group_uids) {
                self.deleted.add(gone.clone());
            }
            known_groups = group_uids;
            self.created.retain(|_, c| view.claim(c.namespace(), c.name()).is_none());
            retry_at = if self.pass(&view).await { Some(tokio::time::Instant::now() + RETRY) } else { None };
        }
    }

    /// One pass over every PodGroup, pod and claim; `true` when something must be retried.
    async fn pass(&mut self, view: &View) -> bool {
        let mut retry = false;
        let mut report = |what: String, e: SyncError| {
            tracing::debug!(target: "resourceclaim-controller", "{what}: {}", e.message);
            retry |= e.retry;
        };
        if self.config.gates.generic_workload && self.config.gates.workload_resource_claims {
            for group in &view.groups {
                if let Err(e) = self.sync_podgroup(view, group).await {
                    report(format!("PodGroup {}", group.key()), e);
                }
            }
        }
        for pod in &view.pods {
            if pod_claims(pod).is_empty() {
                continue;
            }
            if let Err(e) = self.sync_pod(view, pod).await {
                report(format!("pod {}", pod.metadata.name.as_deref().unwrap_or_default()), e);
            }
        }
        for claim in &view.claims {
            if let Err(e) = self.sync_claim(view, claim).await {
                report(format!("claim {}", claim.key()), e);
            }
        }
        retry
    }

    async fn sync_pod(&mut self, view: &View, pod: &Pod) -> Result<(), SyncError> {
        if pod.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let group = match pod_group_name(pod) {
            None => None,
            Some(g) if !self.config.gates.generic_workload => {
                return Err(SyncError::fatal(format!(
                    "get PodGroup for Pod {ns}/{name}: Pod is a member of PodGroup {g} but GenericWorkload feature is disabled"
                )));
            }
            Some(g) => match view.group(&ns, g) {
                Some(group) => Some(group),
                None => {
                    return Err(SyncError::retry(format!(
                        "get PodGroup for Pod {ns}/{name}: podgroup.scheduling.k8s.io \"{g}\" not found"
                    )));
                }
            },
        };
        let mut new_claims: BTreeMap<String, String> = BTreeMap::new();
        for pc in pod_claims(pod) {
            if let Err(e) = self.handle_claim(view, pod, group, pc, &mut new_claims).await {
                let note = format!("PodResourceClaim {}: {}", pc.name, e.message);
                self.events
                    .eventf(&pod_ref(pod), None, EventType::Warning, "FailedResourceClaimCreation", "Sync", note)
                    .await;
                return Err(SyncError {
                    retry: e.retry,
                    message: format!("pod {ns}/{name}, PodResourceClaim {}: {}", pc.name, e.message),
                });
            }
        }
        if !new_claims.is_empty() {
            let mut merged: BTreeMap<String, String> = pod
                .status
                .as_ref()
                .and_then(|s| s.resource_claim_statuses.as_ref())
                .into_iter()
                .flatten()
                .filter_map(|s| s.resource_claim_name.clone().map(|c| (s.name.clone(), c)))
                .collect();
            merged.extend(new_claims);
            let statuses: Vec<Value> = merged.iter().map(|(n, c)| json!({"name": n, "resourceClaimName": c})).collect();
            let apply = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
                               "status": {"resourceClaimStatuses": statuses}});
            let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
            api.patch_status(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(apply))
                .await
                .map_err(|e| SyncError::retry(format!("update pod {ns}/{name} ResourceClaimStatuses: {e}")))?;
            // The next pass sees the new names; reservations wait for it.
            return Ok(());
        }
        let scheduled = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_some_and(|n| !n.is_empty());
        if !scheduled {
            return Ok(());
        }
        let accept = self.config.gates.accept_podgroup();
        for pc in pod_claims(pod) {
            let (Some(cname), check_owner) = claim_name(pod, pc).map_err(SyncError::retry)? else { continue };
            let Some(claim) = view.claim(&ns, &cname) else { return Ok(()) };
            if check_owner {
                is_for_pod(pod, claim, accept).map_err(SyncError::retry)?;
            }
            // KEP-5194 as proposed: a claim reserved for any pod of its consumer gets no pod entries.
            let any_pod = self.config.gates.reserved_for_workloads
                && claim.allocation().and_then(|a| a.get("reservedForAnyPod")).and_then(Value::as_bool) == Some(true);
            if claim.allocation().is_some() && !any_pod && !claims::is_reserved_for_pod(pod, claim, accept) {
                let consumer = bind_to(pod, group, pc).map_err(SyncError::retry)?;
                if claims::is_podgroup_entry(&consumer) && !accept {
                    continue;
                }
                let mut updated = claim.clone();
                let mut entries = updated.reserved_for().to_vec();
                entries.push(consumer);
                updated.set_reserved_for(entries);
                self.replace_status(&updated)
                    .await
                    .map_err(|e| SyncError::retry(format!("reserve claim {}: {e}", claim.key())))?;
            }
        }
        Ok(())
    }

    async fn handle_claim(
        &mut self,
        view: &View,
        pod: &Pod,
        group: Option<&PodGroup>,
        pc: &k8s_openapi::api::core::v1::PodResourceClaim,
        new_claims: &mut BTreeMap<String, String>,
    ) -> Result<(), SyncError> {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let pod_uid = pod.metadata.uid.clone().unwrap_or_default();
        let accept = self.config.gates.accept_podgroup();
        match claim_name(pod, pc) {
            Err(e) if e.ends_with("ResourceClaim not created yet") => {}
            Err(e) => return Err(SyncError::retry(format!("checking for claim before creating it: {e}"))),
            Ok((None, _)) => return Ok(()),
            Ok((Some(name), must_check)) => {
                let exists = match view.claim(&ns, &name) {
                    Some(c) => !must_check || is_for_pod(pod, c, accept).is_ok(),
                    None => match self.live_claim(&ns, &name).await? {
                        Some(c) => !must_check || is_for_pod(pod, &c, accept).is_ok(),
                        None => false,
                    },
                };
                if exists {
                    return Ok(());
                }
            }
        }
        let Some(template_name) = pc.resource_claim_template_name.clone() else { return Ok(()) };
        let consumer = bind_to(pod, group, pc).map_err(SyncError::retry)?;
        let claim = if claims::is_podgroup_entry(&consumer) {
            if !self.config.gates.workload_resource_claims {
                return Err(SyncError::fatal(format!(
                    "claim {} is a PodGroup claim but the DRAWorkloadResourceClaims feature is disabled",
                    pc.name
                )));
            }
            let Some(group) = group else { return Ok(()) };
            self.find_generated(view, &ns, group.uid(), &pc.name)
        } else {
            match self.find_generated(view, &ns, &pod_uid, &pc.name) {
                Some(c) => Some(c),
                None => {
                    let template = view
                        .template(&ns, &template_name)
                        .ok_or_else(|| {
                            SyncError::retry(format!(
                                "resource claim template {template_name:?}: resourceclaimtemplate.resource.k8s.io \"{template_name}\" not found"
                            ))
                        })?
                        .clone();
                    let pod_name = pod.metadata.name.clone().unwrap_or_default();
                    let owner = OwnerReference {
                        api_version: "v1".into(),
                        kind: "Pod".into(),
                        name: pod_name.clone(),
                        uid: pod_uid.clone(),
                        controller: Some(true),
                        block_owner_deletion: None,
                    };
                    Some(self.create_from_template(&ns, &pod_name, &pc.name, owner, &template).await?)
                }
            }
        };
        if let Some(c) = claim {
            new_claims.insert(pc.name.clone(), c.name().to_string());
        }
        Ok(())
    }

    /// The claim generated for `owner_uid`'s claim entry `entry`: from the cache (controller
    /// owner + annotation) or from the claims this controller just created.
    fn find_generated(&self, view: &View, ns: &str, owner_uid: &str, entry: &str) -> Option<ResourceClaim> {
        view.claims
            .iter()
            .map(|c| c.as_ref())
            .find(|c| {
                c.namespace() == ns
                    && c.controller().is_some_and(|(_, _, _, uid)| uid == owner_uid)
                    && c.metadata.annotations.as_ref().and_then(|a| a.get(POD_CLAIM_ANNOTATION)).map(String::as_str)
                        == Some(entry)
            })
            .cloned()
            .or_else(|| self.created.get(&(owner_uid.to_string(), entry.to_string())).cloned())
    }

    async fn create_from_template(
        &mut self,
        ns: &str,
        owner_name: &str,
        entry: &str,
        owner: OwnerReference,
        template: &ResourceClaimTemplate,
    ) -> Result<ResourceClaim, SyncError> {
        let meta = template.field("spec").get("metadata").cloned().unwrap_or(Value::Null);
        let mut annotations: BTreeMap<String, String> =
            serde_json::from_value(meta.get("annotations").cloned().unwrap_or(Value::Null)).unwrap_or_default();
        annotations.insert(POD_CLAIM_ANNOTATION.into(), entry.into());
        let labels: Option<BTreeMap<String, String>> =
            serde_json::from_value(meta.get("labels").cloned().unwrap_or(Value::Null)).ok().flatten();
        let owner_uid = owner.uid.clone();
        let claim = ResourceClaim::new(
            ObjectMeta {
                generate_name: Some(generate_name(owner_name, entry)),
                namespace: Some(ns.to_string()),
                owner_references: Some(vec![owner]),
                annotations: Some(annotations),
                labels,
                ..Default::default()
            },
            json!({"spec": template.field("spec").get("spec").cloned().unwrap_or(json!({}))}),
        );
        let api: Api<ResourceClaim> = Api::namespaced(self.client.clone(), ns);
        let created = api
            .create(&PostParams::default(), &claim)
            .await
            .map_err(|e| SyncError::retry(format!("create ResourceClaim {}: {e}", claim.name())))?;
        self.created.insert((owner_uid, entry.to_string()), created.clone());
        Ok(created)
    }

    async fn sync_podgroup(&mut self, view: &View, group: &PodGroup) -> Result<(), SyncError> {
        if group.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let ns = group.namespace().to_string();
        let mut new_claims: BTreeMap<String, String> = BTreeMap::new();
        for gc in group.claims() {
            let entry = text(&gc, "name").to_string();
            let Some(template_name) = gc.get("resourceClaimTemplateName").and_then(Value::as_str) else { continue };
            if let Some(existing) = group.status_claim_name(&entry)
                && view.claim(&ns, &existing).is_some_and(|c| claims::is_for_podgroup(group, c))
            {
                continue;
            }
            let claim = match self.find_generated(view, &ns, group.uid(), &entry) {
                Some(c) => c,
                None => {
                    let Some(template) = view.template(&ns, template_name).cloned() else {
                        let note = format!(
                            "PodGroupResourceClaim {entry}: resource claim template {template_name:?}: resourceclaimtemplate.resource.k8s.io \"{template_name}\" not found"
                        );
                        self.events
                            .eventf(
                                &group_ref(group),
                                None,
                                EventType::Warning,
                                "FailedResourceClaimCreation",
                                "Sync",
                                note.clone(),
                            )
                            .await;
                        return Err(SyncError::retry(note));
                    };
                    let owner = OwnerReference {
                        api_version: "scheduling.k8s.io/v1beta1".into(),
                        kind: "PodGroup".into(),
                        name: group.name().to_string(),
                        uid: group.uid().to_string(),
                        controller: Some(true),
                        block_owner_deletion: None,
                    };
                    self.create_from_template(&ns, group.name(), &entry, owner, &template).await?
                }
            };
            new_claims.insert(entry, claim.name().to_string());
        }
        if new_claims.is_empty() {
            return Ok(());
        }
        let statuses: Vec<Value> = new_claims.iter().map(|(n, c)| json!({"name": n, "resourceClaimName": c})).collect();
        let apply = json!({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                           "metadata": {"name": group.name(), "namespace": ns},
                           "status": {"resourceClaimStatuses": statuses}});
        let api: Api<PodGroup> = Api::namespaced(self.client.clone(), &ns);
        api.patch_status(group.name(), &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(apply))
            .await
            .map_err(|e| SyncError::retry(format!("update PodGroup {} ResourceClaimStatuses: {e}", group.key())))?;
        Ok(())
    }

    async fn sync_claim(&mut self, view: &View, claim: &ResourceClaim) -> Result<(), SyncError> {
        let ns = claim.namespace().to_string();
        let reserved = claim.reserved_for();
        let mut remaining = Vec::with_capacity(reserved.len());
        for entry in reserved {
            let uid = text(entry, "uid");
            let name = text(entry, "name");
            if claims::is_pod_entry(entry) {
                let keep = if self.deleted.has(uid) {
                    false
                } else {
                    match view.pod(&ns, name) {
                        Some(pod) => {
                            let deleting = self.config.defective(DraDefect::PruneOnDeletionTimestamp)
                                && pod.metadata.deletion_timestamp.is_some();
                            pod.metadata.uid.as_deref() == Some(uid) && !is_pod_done(pod) && !deleting
                        }
                        None => {
                            let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
                            let live = api.get_opt(name).await.map_err(api_error(format!("get pod {ns}/{name}")))?;
                            live.is_some_and(|p| p.metadata.uid.as_deref() == Some(uid))
                        }
                    }
                };
                if keep {
                    remaining.push(entry.clone());
                }
                continue;
            }
            if self.config.gates.workload_resource_claims && claims::is_podgroup_entry(entry) {
                let keep = if self.deleted.has(uid) {
                    false
                } else {
                    match view.group(&ns, name) {
                        Some(g) => g.uid() == uid,
                        None => {
                            let api: Api<PodGroup> = Api::namespaced(self.client.clone(), &ns);
                            let live =
                                api.get_opt(name).await.map_err(api_error(format!("get PodGroup {ns}/{name}")))?;
                            live.is_some_and(|g| g.uid() == uid)
                        }
                    }
                };
                if keep {
                    remaining.push(entry.clone());
                }
                continue;
            }
            if self.config.unknown_entries == UnknownEntries::Error {
                return Err(SyncError::retry(format!("unsupported ReservedFor entry: {entry}")));
            }
            remaining.push(entry.clone());
        }
        if self.config.defective(DraDefect::DeallocateWithPodEntryLeft) && remaining.len() < reserved.len() {
            remaining.clear();
        }
        if remaining.len() < reserved.len() {
            let mut updated = claim.clone();
            updated.set_reserved_for(remaining.clone());
            if remaining.is_empty()
                && claim.has_finalizer()
                && let Some(status) = updated.field_mut("status").as_object_mut()
            {
                status.remove("allocation");
            }
            let written = self.replace_status(&updated).await.map_err(SyncError::from)?;
            if written.has_finalizer() && written.allocation().is_none() {
                self.remove_finalizer(written).await?;
            }
        } else if self.config.gates.reserved_for_workloads
            && reserved.is_empty()
            && claim.has_finalizer()
            && claim.allocation().and_then(|a| a.get("reservedForAnyPod")).and_then(Value::as_bool) == Some(true)
        {
            // KEP-5194 as proposed: the workload controller removed its own entry; an empty
            // list means nobody consumes the claim, so it is deallocated.
            let mut current = claim.clone();
            if let Some(status) = current.field_mut("status").as_object_mut() {
                status.remove("allocation");
            }
            let written = self.replace_status(&current).await.map_err(SyncError::from)?;
            self.remove_finalizer(written).await?;
        } else if claim.has_finalizer() && claim.deleting() && remaining.is_empty() {
            let mut current = claim.clone();
            if current.allocation().is_some() {
                if let Some(status) = current.field_mut("status").as_object_mut() {
                    status.remove("allocation");
                }
                current = self.replace_status(&current).await.map_err(SyncError::from)?;
            }
            self.remove_finalizer(current).await?;
        }
        if remaining.is_empty()
            && let Some(("v1", "Pod", pod_name, pod_uid)) = claim.controller()
            && let Some(pod) = view.pod(&ns, pod_name)
            && (pod.metadata.uid.as_deref() != Some(pod_uid) || is_pod_done(pod))
        {
            let api: Api<ResourceClaim> = Api::namespaced(self.client.clone(), &ns);
            match api.delete(claim.name(), &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if gone_or_conflict(&e) => {}
                Err(e) => {
                    return Err(SyncError::retry(format!("delete unused generated claim {}: {e}", claim.key())));
                }
            }
        }
        Ok(())
    }

    async fn live_claim(&self, ns: &str, name: &str) -> Result<Option<ResourceClaim>, SyncError> {
        let api: Api<ResourceClaim> = Api::namespaced(self.client.clone(), ns);
        api.get_opt(name).await.map_err(|e| SyncError::retry(format!("checking claim existence: {e}")))
    }

    /// A status update of the whole claim (with its resourceVersion: a conflict fails).
    async fn replace_status(&self, claim: &ResourceClaim) -> Result<ResourceClaim, DraError> {
        let api: Api<ResourceClaim> = Api::namespaced(self.client.clone(), claim.namespace());
        api.replace_status(claim.name(), &PostParams::default(), claim)
            .await
            .map_err(api_error(format!("update status of claim {}", claim.key())))
    }

    async fn remove_finalizer(&self, mut claim: ResourceClaim) -> Result<(), SyncError> {
        if let Some(f) = claim.metadata.finalizers.as_mut() {
            f.retain(|x| x != CLAIM_FINALIZER);
        }
        // An empty list is no list (the API omits it), as Go's omitempty sends it.
        claim.metadata.finalizers = claim.metadata.finalizers.take().filter(|f| !f.is_empty());
        let api: Api<ResourceClaim> = Api::namespaced(self.client.clone(), claim.namespace());
        match api.replace(claim.name(), &PostParams::default(), &claim).await {
            Ok(_) => Ok(()),
            Err(e) => Err(SyncError::retry(format!("remove finalizer of claim {}: {e}", claim.key()))),
        }
    }
}

/// `generateName` of a generated claim: `<owner>-<entry>-`, or both shortened in proportion
/// (without the trailing dash) when that is longer than 57 characters.
pub fn generate_name(owner: &str, entry: &str) -> String {
    let full = format!("{owner}-{entry}-");
    const MAX_BASE: usize = 57;
    if full.len() <= MAX_BASE {
        return full;
    }
    let cut = |s: &str| {
        let n = s.len() * MAX_BASE / full.len();
        s.get(..n).unwrap_or(s).to_string()
    };
    format!("{}-{}", cut(owner), cut(entry))
}

fn ready<K>(store: &Store<K>) -> bool
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    crate::watch::store_ready(store)
}

fn pod_ref(pod: &Pod) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: pod.metadata.name.clone(),
        namespace: pod.metadata.namespace.clone(),
        uid: pod.metadata.uid.clone(),
        resource_version: pod.metadata.resource_version.clone(),
        ..Default::default()
    }
}

fn group_ref(group: &PodGroup) -> ObjectReference {
    ObjectReference {
        api_version: Some("scheduling.k8s.io/v1beta1".into()),
        kind: Some("PodGroup".into()),
        name: group.metadata.name.clone(),
        namespace: group.metadata.namespace.clone(),
        uid: group.metadata.uid.clone(),
        resource_version: group.metadata.resource_version.clone(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names_shorten_both_parts() {
        assert_eq!(generate_name("pod", "gpu"), "pod-gpu-");
        let long = generate_name(&"p".repeat(50), &"c".repeat(30));
        // 82 characters: 50*57/82 = 34 and 30*57/82 = 20, as the controller cuts them.
        assert_eq!(long, format!("{}-{}", "p".repeat(34), "c".repeat(20)));
    }

    #[test]
    fn the_deleted_lru_forgets_the_oldest() {
        let mut d = Deleted::default();
        for i in 0..=DELETED_CAPACITY {
            d.add(i.to_string());
        }
        assert!(!d.has("0"));
        assert!(d.has("1") && d.has(&DELETED_CAPACITY.to_string()));
    }
}
