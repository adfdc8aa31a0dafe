//! `trainjob-controller`: an example workload controller whose pods share one ResourceClaim,
//! written to honour the ReservedFor contract (`suites/certify/reservedfor.yaml`) and certified by
//! `kproof certify reservedfor`.
//!
//! A TrainJob (`example.kproof.dev/v1`) runs `spec.replicas` pods to completion. Profiles
//! (`--profile`, else `KPROOF_PROFILE`):
//! - `raw`: the pods name the ResourceClaim `spec.claim`; the controller adds its own entry
//!   `{apiGroup: example.kproof.dev, resource: trainjobs, name, uid}` to `status.reservedFor`
//!   once the claim is allocated (after the first pod, before the others), and removes only
//!   that entry once no pod of the job is running or will be created. A finalizer on the
//!   TrainJob keeps it until the entry is gone, whatever the deletion's propagation.
//! - `pg`: a PodGroup named after the job carries the claim (`spec.claim` is a
//!   ResourceClaimTemplate); pods name the PodGroup and the same claim. The controller deletes
//!   the PodGroup only after its pods are done and never touches its finalizer.
//! - `w` (KEP-5194 as proposed in https://github.com/kubernetes/enhancements/pull/5379): the controller creates the claim
//!   `<job>-<spec.claim>` from the ResourceClaimTemplate `spec.claim`, with `spec.reservedFor`
//!   naming the job (spec is immutable, so at create) and the job as its owner, before any pod.
//!   The scheduler copies that reference into `status.reservedFor` at allocation; once no pod
//!   of the job is running or will be created, the controller removes only its own entry (by
//!   uid) and kube-controller-manager deallocates the claim. The same finalizer as in `raw`
//!   keeps a deleted job until then. A claim left by an earlier job of the same name is
//!   released (once that job's pods are done) and deleted before the new job's claim is made.
//!
//! `--defect NAME` builds in one deliberate contract violation, to show that certification
//! catches it: `release-on-terminating` (raw: a pod with deletionTimestamp counts as done),
//! `no-finalizer` (raw: no finalizer, so a deleted job leaks its entry), `strip-protection`
//! (pg: on scale-down the PodGroup's protection finalizer is stripped and the group deleted at
//! once, as KubeRay v1.7.0's kubernetes-was batch scheduler does). `release-on-terminating` and `no-finalizer` apply to
//! `w` as well. `give-up-on-conflict` (raw, w): a claim status write answered 409 Conflict is
//! never tried again for that claim.
//!
//! `no-condition` (every profile): the job's status carries only free text, no
//! `ReservationHeld` condition, so a user cannot tell which claim it holds (C18).
//! `stale-cache` (every profile): reads jobs, pods, claims and PodGroups from watch-fed caches
//! (kube::runtime reflectors) and trusts them: it counts pods from the cache and writes the
//! claim's `status.reservedFor` without a resourceVersion, so under informer lag it creates
//! duplicate pods and rewrites the list from a stale copy (C16).
//!
//! A TrainJob is gang work: it fails as soon as one of its pods fails (no retries), and then,
//! like a finished job, releases the claim once no pod of it is active (a Failed pod is done,
//! as kube-controller-manager's isPodDone says).
//!
//! Its status reports the reservation (C18): `status.conditions[type=ReservationHeld]` is
//! `True` (reason `PodsActive`, the message names the claim and the active pods) while it
//! holds the claim, and `False` with reason `Released` once it has given it up.
//!
//! It reconciles every job of its namespace (the kubeconfig's) on a short timer, reading with
//! LIST and GET, so its view is never older than one pass: simple and robust for an example; a
//! production controller would use watches (kube::runtime) and must then not trust a stale
//! cache (what `--defect stale-cache` shows).

use anyhow::{Context, bail};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use std::time::Duration;

mod profiles;

const GROUP: &str = "example.kproof.dev";
const FINALIZER: &str = "example.kproof.dev/release-reservation";
const JOB_LABEL: &str = "example.kproof.dev/job";
const PODGROUP_PROTECTION: &str = "scheduling.k8s.io/podgroup-protection";
/// k8s.io/api resource/v1 ResourceClaimReservedForMaxSize: the most entries `status.reservedFor` holds.
const RESERVED_FOR_MAX_SIZE: i64 = 256;
/// The condition that reports the reservation (C18).
const CONDITION: &str = "ReservationHeld";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Profile {
    Raw,
    Pg,
    W,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Defect {
    ReleaseOnTerminating,
    NoFinalizer,
    StripProtection,
    GiveUpOnConflict,
    NoCondition,
    StaleCache,
}

/// What the job's status says about the reservation (C18).
struct Report {
    held: bool,
    reason: &'static str,
    message: String,
}

impl Report {
    fn held(message: String) -> Self {
        Report { held: true, reason: "PodsActive", message }
    }
    fn not_held(reason: &'static str, message: String) -> Self {
        Report { held: false, reason, message }
    }
}

/// Watch-fed caches (`--defect stale-cache` only): what an informer-based controller reads.
struct Caches {
    jobs: Store<DynamicObject>,
    pods: Store<DynamicObject>,
    claims: Option<Store<DynamicObject>>,
    podgroups: Option<Store<DynamicObject>>,
}

/// A cache of `api`'s objects, kept by a reflector task; ready once the first list is in.
async fn start_cache(api: &Api<DynamicObject>, ar: ApiResource) -> Store<DynamicObject> {
    use futures::StreamExt;
    let writer = reflector::store::Writer::new(ar);
    let store = writer.as_reader();
    let stream = watcher(api.clone(), watcher::Config::default()).default_backoff().reflect(writer);
    tokio::spawn(stream.for_each(|_| std::future::ready(())));
    let _ = store.wait_until_ready().await;
    store
}

fn cached(store: &Store<DynamicObject>, name: &str) -> Option<DynamicObject> {
    store.state().into_iter().find(|o| o.metadata.name.as_deref() == Some(name)).map(|o| (*o).clone())
}

struct Ctl {
    profile: Profile,
    defect: Option<Defect>,
    jobs: Api<DynamicObject>,
    pods: Api<DynamicObject>,
    claims: Api<DynamicObject>,
    podgroups: Api<DynamicObject>,
    templates: Api<DynamicObject>,
    events: Api<DynamicObject>,
    /// Claims (by uid) whose status write got a 409 (`--defect give-up-on-conflict` only).
    given_up: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// `--defect stale-cache` only.
    caches: Option<Caches>,
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn api(client: &kube::Client, ns: &str, group: &str, version: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &resource(group, version, kind, plural))
}

fn s<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, k| v.get(*k)).and_then(Value::as_str)
}

fn json_of(o: &DynamicObject) -> Value {
    serde_json::to_value(o).unwrap_or(Value::Null)
}

fn is_conflict_or_gone(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409 || s.code == 404)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut profile = std::env::var("KPROOF_PROFILE").ok();
    let mut defect = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--profile" => profile = args.next(),
            "--defect" => defect = args.next(),
            other => bail!("unknown argument {other:?} (use --profile raw|pg|w, --defect NAME)"),
        }
    }
    let profile = match profile.as_deref() {
        Some("raw") => Profile::Raw,
        Some("pg") => Profile::Pg,
        Some("w") => Profile::W,
        other => bail!("--profile must be raw, pg or w, not {other:?}"),
    };
    let defect = match defect.as_deref() {
        None => None,
        Some("release-on-terminating") => Some(Defect::ReleaseOnTerminating),
        Some("no-finalizer") => Some(Defect::NoFinalizer),
        Some("strip-protection") => Some(Defect::StripProtection),
        Some("give-up-on-conflict") => Some(Defect::GiveUpOnConflict),
        Some("no-condition") => Some(Defect::NoCondition),
        Some("stale-cache") => Some(Defect::StaleCache),
        Some(other) => bail!("unknown defect {other:?}"),
    };
    let client = kube::Client::try_default().await.context("no kubeconfig")?;
    let ns = client.default_namespace().to_string();
    let mut ctl = Ctl {
        profile,
        defect,
        jobs: api(&client, &ns, GROUP, "v1", "TrainJob", "trainjobs"),
        pods: api(&client, &ns, "", "v1", "Pod", "pods"),
        claims: api(&client, &ns, "resource.k8s.io", "v1", "ResourceClaim", "resourceclaims"),
        podgroups: api(&client, &ns, "scheduling.k8s.io", "v1beta1", "PodGroup", "podgroups"),
        templates: api(&client, &ns, "resource.k8s.io", "v1", "ResourceClaimTemplate", "resourceclaimtemplates"),
        events: api(&client, &ns, "", "v1", "Event", "events"),
        given_up: Default::default(),
        caches: None,
    };
    if defect == Some(Defect::StaleCache) {
        let claims = resource("resource.k8s.io", "v1", "ResourceClaim", "resourceclaims");
        let podgroups = resource("scheduling.k8s.io", "v1beta1", "PodGroup", "podgroups");
        ctl.caches = Some(Caches {
            jobs: start_cache(&ctl.jobs, resource(GROUP, "v1", "TrainJob", "trainjobs")).await,
            pods: start_cache(&ctl.pods, resource("", "v1", "Pod", "pods")).await,
            // Only what the profile's Role lets it watch.
            claims: if profile == Profile::Pg { None } else { Some(start_cache(&ctl.claims, claims).await) },
            podgroups: if profile == Profile::Pg { Some(start_cache(&ctl.podgroups, podgroups).await) } else { None },
        });
    }
    eprintln!("trainjob-controller: profile {profile:?}, defect {defect:?}, namespace {ns}");
    loop {
        if let Err(e) = ctl.pass().await {
            eprintln!("trainjob-controller: {e:#}");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// What the controller knows of one pod.
struct PodState {
    name: String,
    phase: String,
    deleting: bool,
    scheduled: bool,
    /// The uid of its controller (none once orphaned).
    owner: Option<String>,
}

impl PodState {
    /// kube-controller-manager's isPodDone: terminal, or deleted before it was scheduled.
    fn done(&self, defect: Option<Defect>) -> bool {
        let terminal = self.phase == "Succeeded" || self.phase == "Failed";
        if defect == Some(Defect::ReleaseOnTerminating) {
            return terminal || self.deleting;
        }
        terminal || (self.deleting && !self.scheduled)
    }
}

/// The job's state the raw and w profiles both act on (see `entry_lifecycle`).
struct EntryLifecycle {
    deleting: bool,
    replicas: i64,
    active: usize,
    finished: bool,
    done_phase: &'static str,
    release: bool,
}

/// Whether the job has ended (all replicas succeeded, or a pod failed: no retries) and the
/// phase it shows then.
fn outcome(pods: &[PodState], replicas: i64) -> (bool, &'static str) {
    let succeeded = pods.iter().filter(|p| p.phase == "Succeeded").count() as i64;
    if pods.iter().any(|p| p.phase == "Failed") {
        (true, "Failed")
    } else if replicas > 0 && succeeded >= replicas {
        (true, "Succeeded")
    } else {
        (false, "Running")
    }
}

/// What a job that reads `held` from the claim says about it.
fn claim_report(held: bool, ended: bool, claim: &str, active: usize) -> Report {
    if held {
        Report::held(format!("ResourceClaim {claim} is reserved for this job: {active} active pods"))
    } else if ended {
        Report::not_held("Released", format!("ResourceClaim {claim} released: no pod of this job is active"))
    } else {
        Report::not_held("Reserving", format!("ResourceClaim {claim} is not reserved for this job yet"))
    }
}

impl Ctl {
    async fn pass(&self) -> anyhow::Result<()> {
        let (jobs, pods) = match &self.caches {
            Some(c) => (
                c.jobs.state().iter().map(|o| (**o).clone()).collect(),
                c.pods.state().iter().map(|o| (**o).clone()).collect(),
            ),
            None => (
                self.jobs.list(&ListParams::default()).await.context("listing TrainJobs")?.items,
                self.pods.list(&ListParams::default().labels(JOB_LABEL)).await.context("listing pods")?.items,
            ),
        };
        for job in &jobs {
            let name = job.metadata.name.clone().unwrap_or_default();
            let mine: Vec<PodState> = pods
                .iter()
                .filter(|p| p.metadata.labels.as_ref().and_then(|l| l.get(JOB_LABEL)) == Some(&name))
                .map(|p| {
                    let v = json_of(p);
                    PodState {
                        name: p.metadata.name.clone().unwrap_or_default(),
                        phase: s(&v, &["status", "phase"]).unwrap_or("Pending").to_string(),
                        deleting: p.metadata.deletion_timestamp.is_some(),
                        scheduled: s(&v, &["spec", "nodeName"]).is_some(),
                        owner: p
                            .metadata
                            .owner_references
                            .as_ref()
                            .and_then(|o| o.iter().find(|r| r.controller == Some(true)))
                            .map(|r| r.uid.clone()),
                    }
                })
                .collect();
            let r = match self.profile {
                Profile::Raw => self.reconcile_raw(job, &mine).await,
                Profile::Pg => self.reconcile_pg(job, &mine).await,
                Profile::W => self.reconcile_w(job, &mine).await,
            };
            if let Err(e) = r {
                eprintln!("trainjob-controller: TrainJob {name}: {e:#}");
            }
        }
        Ok(())
    }

    /// The claim `name`, from the cache under `--defect stale-cache`.
    async fn claim(&self, name: &str) -> anyhow::Result<Option<DynamicObject>> {
        if let Some(store) = self.caches.as_ref().and_then(|c| c.claims.as_ref()) {
            return Ok(cached(store, name));
        }
        self.claims.get_opt(name).await.context("reading the claim")
    }

    /// The PodGroup `name`, from the cache under `--defect stale-cache`.
    async fn podgroup(&self, name: &str) -> anyhow::Result<Option<DynamicObject>> {
        if let Some(store) = self.caches.as_ref().and_then(|c| c.podgroups.as_ref()) {
            return Ok(cached(store, name));
        }
        self.podgroups.get_opt(name).await.context("reading the PodGroup")
    }

    /// The pods still to create and the ones to delete, for `want` pods not yet succeeded.
    async fn sync_pods(
        &self,
        job: &DynamicObject,
        pods: &[PodState],
        want: i64,
        limit: i64,
        spec: Value,
    ) -> anyhow::Result<()> {
        let name = job.metadata.name.clone().unwrap_or_default();
        let succeeded = pods.iter().filter(|p| p.phase == "Succeeded").count() as i64;
        let live: Vec<&PodState> =
            pods.iter().filter(|p| !p.deleting && p.phase != "Succeeded" && p.phase != "Failed").collect();
        let target = (want - succeeded).max(0).min(limit);
        for _ in (live.len() as i64)..target {
            let pod = json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {
                    "generateName": format!("{name}-"),
                    "labels": {JOB_LABEL: name},
                    "ownerReferences": [{"apiVersion": format!("{GROUP}/v1"), "kind": "TrainJob", "name": name,
                                         "uid": job.metadata.uid, "controller": true, "blockOwnerDeletion": true}],
                },
                "spec": spec,
            });
            let pod: DynamicObject = serde_json::from_value(pod)?;
            self.pods.create(&PostParams::default(), &pod).await.context("creating a pod")?;
        }
        let mut extra: Vec<&&PodState> = live.iter().collect();
        extra.sort_by(|a, b| b.name.cmp(&a.name));
        for p in extra.iter().take((live.len() as i64 - want.max(0)).max(0) as usize) {
            match self.pods.delete(&p.name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if is_conflict_or_gone(&e) => {}
                Err(e) => return Err(e).context("deleting a pod"),
            }
        }
        Ok(())
    }

    /// Writes the job's phase and what it says about the reservation: free text in
    /// `status.reservation`, and the `ReservationHeld` condition (C18) unless the defect leaves
    /// it out.
    async fn set_status(&self, job: &DynamicObject, phase: &str, report: Report) -> anyhow::Result<()> {
        let v = json_of(job);
        let mut condition = json!({
            "type": CONDITION,
            "status": if report.held { "True" } else { "False" },
            "reason": report.reason,
            "message": report.message,
        });
        if let Some(generation) = job.metadata.generation {
            condition["observedGeneration"] = json!(generation);
        }
        let conditions = if self.defect == Some(Defect::NoCondition) { json!([]) } else { json!([condition]) };
        if s(&v, &["status", "phase"]) == Some(phase)
            && s(&v, &["status", "reservation"]) == Some(report.message.as_str())
            && v["status"]["conditions"].as_array().map_or(json!([]), |c| json!(c)) == conditions
        {
            return Ok(());
        }
        let name = job.metadata.name.clone().unwrap_or_default();
        let patch = json!({"status": {"phase": phase, "reservation": report.message, "conditions": conditions}});
        match self.jobs.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => Ok(()),
            Err(e) if is_conflict_or_gone(&e) => Ok(()),
            Err(e) => Err(e).context("updating the TrainJob status"),
        }
    }

    async fn set_finalizer(&self, job: &DynamicObject, present: bool) -> anyhow::Result<()> {
        let mut finalizers = job.metadata.finalizers.clone().unwrap_or_default();
        if finalizers.iter().any(|f| f == FINALIZER) == present {
            return Ok(());
        }
        if present {
            finalizers.push(FINALIZER.into());
        } else {
            finalizers.retain(|f| f != FINALIZER);
        }
        let name = job.metadata.name.clone().unwrap_or_default();
        let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": job.metadata.resource_version}});
        match self.jobs.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => Ok(()),
            Err(e) if is_conflict_or_gone(&e) => Ok(()),
            Err(e) => Err(e).context("updating the TrainJob finalizers"),
        }
    }

    /// Adds (`Some(entry)`) the job's entry or removes every entry of this job's name (the
    /// current uid's and stale ones of an earlier job of that name), leaving every other entry
    /// as it is; the update carries the resourceVersion read, so a concurrent write is a 409
    /// and the next pass reads again.
    async fn write_entries(
        &self,
        job: &DynamicObject,
        claim: &DynamicObject,
        keep_uid: Option<&str>,
        add: Option<Value>,
    ) -> anyhow::Result<()> {
        let name = job.metadata.name.clone().unwrap_or_default();
        let mut v = json_of(claim);
        let entries = v["status"]["reservedFor"].as_array().cloned().unwrap_or_default();
        let ours = |e: &Value| e["apiGroup"] == GROUP && e["resource"] == "trainjobs" && e["name"] == name;
        let mut kept: Vec<Value> =
            entries.iter().filter(|e| !ours(e) || keep_uid.is_some_and(|u| e["uid"] == u)).cloned().collect();
        if let Some(entry) = add
            && !kept.iter().any(|e| e["uid"] == entry["uid"])
        {
            kept.push(entry);
        }
        if kept == entries {
            return Ok(());
        }
        let claim_uid = claim.metadata.uid.clone().unwrap_or_default();
        if self.given_up.lock().is_ok_and(|g| g.contains(&claim_uid)) {
            return Ok(());
        }
        v["status"]["reservedFor"] = Value::Array(kept);
        if self.defect == Some(Defect::StaleCache) {
            // Trusting the cache: no resourceVersion, so the server cannot refuse a stale list.
            if let Some(meta) = v["metadata"].as_object_mut() {
                meta.remove("resourceVersion");
            }
        }
        let claim_name = claim.metadata.name.clone().unwrap_or_default();
        let body: DynamicObject = serde_json::from_value(v)?;
        match self.claims.replace_status(&claim_name, &PostParams::default(), &body).await {
            Ok(_) => Ok(()),
            Err(e) if is_conflict_or_gone(&e) => {
                // Someone wrote the claim since we read it (or it is gone): the next pass
                // reads it again and decides afresh, never overwriting what it did not see.
                let why = match &e {
                    kube::Error::Api(s) => s.message.clone(),
                    other => other.to_string(),
                };
                eprintln!("trainjob-controller: TrainJob {name}: claim {claim_name} status: {why}; re-reading");
                if self.defect == Some(Defect::GiveUpOnConflict)
                    && matches!(&e, kube::Error::Api(s) if s.code == 409)
                    && let Ok(mut g) = self.given_up.lock()
                {
                    g.insert(claim_uid);
                }
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 403 => {
                // Say it where the user looks, not only in the log (C14): without the
                // reservation the job cannot run, so it does not go on creating pods either.
                self.event(
                    job,
                    "ReservationForbidden",
                    &format!("cannot write the claim's status.reservedFor: {}", s.message),
                )
                .await;
                bail!("writing the claim's status.reservedFor: {}", s.message)
            }
            Err(e) => Err(e).context("writing the claim's status.reservedFor"),
        }
    }

    /// What raw and w share: our finalizer while the job lives (unless the defect drops it),
    /// the pods still active, how the job ended, and whether the entry must go now.
    async fn entry_lifecycle(&self, job: &DynamicObject, pods: &[PodState]) -> anyhow::Result<EntryLifecycle> {
        let deleting = job.metadata.deletion_timestamp.is_some();
        let replicas = json_of(job)["spec"]["replicas"].as_i64().unwrap_or(0);
        if !deleting && self.defect != Some(Defect::NoFinalizer) {
            self.set_finalizer(job, true).await?;
        }
        let active = pods.iter().filter(|p| !p.done(self.defect)).count();
        let (finished, done_phase) = outcome(pods, replicas);
        let release = (deleting || finished || replicas == 0) && active == 0;
        Ok(EntryLifecycle { deleting, replicas, active, finished, done_phase, release })
    }

    async fn unsupported(&self, job: &DynamicObject) -> anyhow::Result<()> {
        self.event(
            job,
            "ReservationUnsupported",
            "the API server dropped the claim's spec.reservedFor (is DRAReservedForWorkloads off?); no pods are created",
        )
        .await;
        let why = "unsupported: the API server dropped the claim's spec.reservedFor".to_string();
        self.set_status(job, "Blocked", Report::not_held("Unsupported", why)).await
    }

    /// Records a Warning event on the job once (the event's name is fixed per job and reason).
    async fn event(&self, job: &DynamicObject, reason: &str, message: &str) {
        let name = job.metadata.name.clone().unwrap_or_default();
        let event = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": format!("{name}.{}", reason.to_lowercase())},
            "involvedObject": {"apiVersion": format!("{GROUP}/v1"), "kind": "TrainJob", "name": name, "uid": job.metadata.uid,
                               "namespace": job.metadata.namespace},
            "reason": reason, "message": message, "type": "Warning",
            "source": {"component": "trainjob-controller"},
        });
        if let Ok(e) = serde_json::from_value::<DynamicObject>(event)
            && let Err(err) = self.events.create(&PostParams::default(), &e).await
            && !matches!(&err, kube::Error::Api(s) if s.code == 409)
        {
            eprintln!("trainjob-controller: recording event {reason}: {err}");
        }
    }
}
