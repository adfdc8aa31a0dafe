//! A minimal RayJob reconciler: only what Kueue needs of a RayJob, modelled on KubeRay v1.7.0's
//! `ray-operator/controllers/ray/rayjob_controller.go` (`Reconcile`'s `JobDeploymentStatus`
//! state machine, `initRayJobStatusIfNeed`, `constructRayClusterForRayJob`,
//! `updateStatusToSuspendingIfNeeded`).
//!
//! Modelled: `status.jobDeploymentStatus` New (`""`) → `Initializing` (status names the
//! RayCluster `<rayjob>-<5 characters>` and the job id) → the RayCluster is created from
//! `spec.rayClusterSpec` (the RayJob's labels and annotations copied, plus
//! `ray.io/originated-from-cr-name`, `ray.io/originated-from-crd: RayJob`,
//! `ray.io/job-submission-mode`; in `SidecarMode` the `ray-job-submitter` container on the head)
//! → `Running` once the cluster is `ready` (`Waiting` in `InteractiveMode`); `spec.suspend`
//! in `Initializing`/`Running` → `Suspending` → the cluster is deleted → `Suspended`, whose
//! status no longer names a cluster; unsuspended → New again. `status.rayClusterStatus` copies the
//! cluster's status.
//!
//! Not modelled (no row needs it yet): the Ray job itself (no dashboard job API, so a RayJob
//! never reaches `Complete` or `Failed` by itself), the `K8sJobMode` submitter Job, HTTP mode,
//! deadlines, retries and `backoffLimit`, deletion policies and `shutdownAfterJobFinishes`,
//! `clusterSelector` (such RayJobs are left alone), the `ray.io/rayjob-finalizer`, validation,
//! and every event but `CreatedRayCluster`.

use super::common::names::NameGenerator;
use super::{KubeRayConfig, RAY_ORIGINATED_FROM_CR_NAME_LABEL, RAY_ORIGINATED_FROM_CRD_LABEL};
use crate::Clock;
use crate::events::{EventRecorder, EventType};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Cluster label: the RayJob's `submissionMode`.
pub const RAY_JOB_SUBMISSION_MODE_LABEL: &str = "ray.io/job-submission-mode";
/// The name of the submitter container KubeRay adds to the head in `SidecarMode`.
pub const SUBMITTER_CONTAINER_NAME: &str = "ray-job-submitter";
/// `RayJobDefaultRequeueDuration`.
const REQUEUE: Duration = Duration::from_secs(3);

/// `status.jobDeploymentStatus` values (`JobDeploymentStatus`; New is the empty string).
pub mod deployment_status {
    /// Status and cluster name being set up.
    pub const INITIALIZING: &str = "Initializing";
    /// The cluster is ready and the job submitted.
    pub const RUNNING: &str = "Running";
    /// `InteractiveMode`: waiting for the user's job id.
    pub const WAITING: &str = "Waiting";
    /// Resources being deleted because `spec.suspend` is true.
    pub const SUSPENDING: &str = "Suspending";
    /// No resources; waits for `spec.suspend` to become false.
    pub const SUSPENDED: &str = "Suspended";
    /// Retrying after a failure.
    pub const RETRYING: &str = "Retrying";
}

/// The default resources of the submitter container (`GetDefaultSubmitterContainer`): requests
/// 500m / 200Mi, limits 1 / 1Gi.
pub fn default_submitter_resources() -> Value {
    json!({"requests": {"cpu": "500m", "memory": "200Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}})
}

fn rayjob_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("ray.io", "v1", "RayJob"), "rayjobs")
}

fn raycluster_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("ray.io", "v1", "RayCluster"), "rayclusters")
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The reference RayJob controller; see the module docs.
pub struct RayJobReconciler {
    client: kube::Client,
    clock: Clock,
    recorder: EventRecorder,
    names: Mutex<NameGenerator>,
    paused: Arc<AtomicBool>,
}

impl RayJobReconciler {
    /// A reconciler writing through `client`; cluster names come from `config.name_seed`.
    pub fn new(client: kube::Client, clock: Clock, config: &KubeRayConfig) -> Self {
        let recorder = EventRecorder::new(client.clone(), clock.clone(), "rayjob-controller");
        // Another stream of names than the RayService controller's, from the same seed.
        let names = Mutex::new(NameGenerator::seeded(config.name_seed ^ 0x5241_594a_4f42));
        Self { client, clock, recorder, names, paused: Arc::default() }
    }

    /// A switch that stops and resumes reconciling (an operator that is down).
    pub fn pause_switch(&self) -> Arc<AtomicBool> {
        self.paused.clone()
    }

    /// Installs the RayJob CRD and waits until it is Established.
    pub async fn install_crd(client: &kube::Client) -> Result<(), crate::crds::CrdInstallError> {
        crate::crds::install(client, [crate::crds::rayjob::rayjob_crd()]).await
    }

    /// Runs until a watch ends: a pass over every RayJob after each change of a RayJob or a
    /// RayCluster, and again after [`REQUEUE`] while a pass asks for it.
    pub async fn run(self) {
        let mut stores = Vec::new();
        let mut streams = Vec::new();
        for ar in [rayjob_resource(), raycluster_resource()] {
            let writer = reflector::store::Writer::new(ar.clone());
            stores.push(writer.as_reader());
            let api = Api::<DynamicObject>::all_with(self.client.clone(), &ar);
            streams
                .push(watcher(api, watcher::Config::default()).default_backoff().reflect(writer).map(|_| ()).boxed());
        }
        let mut events = futures::stream::select_all(streams);
        let mut again = false;
        loop {
            let wait = if again { REQUEUE } else { Duration::from_secs(3600) };
            tokio::select! {
                next = events.next() => {
                    if next.is_none() {
                        return;
                    }
                    while let Some(Some(())) = events.next().now_or_never() {}
                }
                _ = tokio::time::sleep(wait) => {}
            }
            if self.paused.load(Ordering::SeqCst) {
                again = true;
                continue;
            }
            if !stores.iter().all(crate::watch::store_ready) {
                continue;
            }
            again = false;
            let jobs: Vec<Value> = objects(&stores[0]);
            let clusters: Vec<Value> = objects(&stores[1]);
            for job in jobs {
                match self.reconcile(&job, &clusters).await {
                    Ok(a) => again |= a,
                    Err(e) => {
                        tracing::debug!(error = %e, "rayjob {}", str_at(&job, "/metadata/name"));
                        again = true;
                    }
                }
            }
        }
    }

    /// One pass for one RayJob; `Ok(true)` asks for another pass after the requeue delay.
    async fn reconcile(&self, job: &Value, clusters: &[Value]) -> Result<bool, kube::Error> {
        if job.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()) {
            return Ok(false);
        }
        let managed_by = str_at(job, "/spec/managedBy");
        if !managed_by.is_empty() && managed_by != super::KUBERAY_OPERATOR_MANAGER {
            return Ok(false);
        }
        if job.pointer("/spec/clusterSelector").and_then(Value::as_object).is_some_and(|m| !m.is_empty()) {
            return Ok(false);
        }
        let ns = str_at(job, "/metadata/namespace");
        let name = str_at(job, "/metadata/name");
        let suspend = job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
        let mode = match str_at(job, "/spec/submissionMode") {
            "" => "K8sJobMode",
            m => m,
        };
        let cluster_name = str_at(job, "/status/rayClusterName");
        let cluster = clusters
            .iter()
            .find(|c| str_at(c, "/metadata/namespace") == ns && str_at(c, "/metadata/name") == cluster_name)
            .filter(|_| !cluster_name.is_empty());
        use deployment_status::*;
        let status = match str_at(job, "/status/jobDeploymentStatus") {
            "" => {
                // `initRayJobStatusIfNeed`.
                let mut s = json!({"jobDeploymentStatus": INITIALIZING, "startTime": self.now()});
                let mut names = self.names.lock();
                if mode != "InteractiveMode" && str_at(job, "/status/jobId").is_empty() {
                    s["jobId"] = match str_at(job, "/spec/jobId") {
                        "" => json!(format!("{name}-{}", names.suffix(5))),
                        id => json!(id),
                    };
                }
                if cluster_name.is_empty() {
                    s["rayClusterName"] = json!(names.ray_cluster_name(name));
                }
                s
            }
            INITIALIZING | RUNNING if suspend => json!({"jobDeploymentStatus": SUSPENDING}),
            INITIALIZING => {
                let cluster = match cluster {
                    Some(c) => c.clone(),
                    None => self.create_cluster(job, cluster_name, mode).await?,
                };
                let cluster_status = cluster.get("status").cloned().unwrap_or_else(|| json!({}));
                if str_at(&cluster, "/status/state") != "ready" {
                    json!({"rayClusterStatus": cluster_status})
                } else {
                    let next = if mode == "InteractiveMode" { WAITING } else { RUNNING };
                    json!({
                        "jobDeploymentStatus": next,
                        "dashboardURL": format!("{cluster_name}-head-svc.{ns}.svc.cluster.local:8265"),
                        "rayClusterStatus": cluster_status,
                    })
                }
            }
            RUNNING => match cluster {
                Some(c) => json!({"rayClusterStatus": c.get("status").cloned().unwrap_or_else(|| json!({}))}),
                None => return Ok(false),
            },
            SUSPENDING | RETRYING => {
                if let Some(c) = cluster {
                    let api = Api::<DynamicObject>::namespaced_with(self.client.clone(), ns, &raycluster_resource());
                    if c.pointer("/metadata/deletionTimestamp").is_none_or(Value::is_null) {
                        match api.delete(cluster_name, &DeleteParams::background()).await {
                            Ok(_) | Err(kube::Error::Api(_)) => {}
                            Err(e) => return Err(e),
                        }
                    }
                    // `deleteClusterResources`: the status moves on once the cluster is gone.
                    return Ok(true);
                }
                let next = if str_at(job, "/status/jobDeploymentStatus") == SUSPENDING { SUSPENDED } else { "" };
                json!({
                    "jobDeploymentStatus": next, "rayClusterStatus": null, "rayClusterName": null,
                    "dashboardURL": null, "jobId": null, "message": null, "reason": null, "jobStatus": null,
                })
            }
            SUSPENDED if !suspend => json!({"jobDeploymentStatus": "", "jobStatus": null}),
            _ => return Ok(false),
        };
        if status
            .as_object()
            .is_some_and(|m| m.iter().all(|(k, v)| job.pointer(&format!("/status/{k}")).unwrap_or(&Value::Null) == v))
        {
            return Ok(false);
        }
        let api = Api::<DynamicObject>::namespaced_with(self.client.clone(), ns, &rayjob_resource());
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&json!({"status": status}))).await?;
        Ok(false)
    }

    /// `constructRayClusterForRayJob` + Create; event `CreatedRayCluster`.
    async fn create_cluster(&self, job: &Value, cluster_name: &str, mode: &str) -> Result<Value, kube::Error> {
        let ns = str_at(job, "/metadata/namespace");
        let name = str_at(job, "/metadata/name");
        let mut labels = job.pointer("/metadata/labels").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
        labels[RAY_ORIGINATED_FROM_CR_NAME_LABEL] = json!(name);
        labels[RAY_ORIGINATED_FROM_CRD_LABEL] = json!("RayJob");
        labels[RAY_JOB_SUBMISSION_MODE_LABEL] = json!(mode);
        let mut annotations =
            job.pointer("/metadata/annotations").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
        let mut spec = job.pointer("/spec/rayClusterSpec").cloned().unwrap_or_else(|| json!({}));
        if mode == "SidecarMode" {
            annotations[super::DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION] = json!("true");
            let image = spec.pointer("/headGroupSpec/template/spec/containers/0/image").cloned().unwrap_or(Value::Null);
            if let Some(cs) = spec.pointer_mut("/headGroupSpec/template/spec/containers").and_then(Value::as_array_mut)
            {
                cs.push(json!({"name": SUBMITTER_CONTAINER_NAME, "image": image, "resources": default_submitter_resources()}));
            }
            if let Some(pod) = spec.pointer_mut("/headGroupSpec/template/spec").and_then(Value::as_object_mut) {
                pod.insert("restartPolicy".into(), json!("Never"));
            }
        }
        let cluster = json!({
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {
                "name": cluster_name,
                "namespace": ns,
                "labels": labels,
                "annotations": annotations,
                "ownerReferences": [{
                    "apiVersion": "ray.io/v1", "kind": "RayJob", "name": name,
                    "uid": str_at(job, "/metadata/uid"), "controller": true, "blockOwnerDeletion": true,
                }],
            },
            "spec": spec,
        });
        let obj: DynamicObject = serde_json::from_value(cluster).map_err(kube::Error::SerdeError)?;
        let api = Api::<DynamicObject>::namespaced_with(self.client.clone(), ns, &raycluster_resource());
        let created = api.create(&PostParams::default(), &obj).await?;
        let reference = ObjectReference {
            api_version: Some("ray.io/v1".into()),
            kind: Some("RayJob".into()),
            name: Some(name.into()),
            namespace: Some(ns.into()),
            uid: job.pointer("/metadata/uid").and_then(Value::as_str).map(String::from),
            resource_version: job.pointer("/metadata/resourceVersion").and_then(Value::as_str).map(String::from),
            field_path: None,
        };
        self.recorder
            .eventf(
                &reference,
                None,
                EventType::Normal,
                "CreatedRayCluster",
                "CreatedRayCluster",
                format!("Created RayCluster {ns}/{cluster_name}"),
            )
            .await;
        Ok(serde_json::to_value(&created).unwrap_or(Value::Null))
    }

    fn now(&self) -> String {
        self.clock.now_rfc3339()
    }
}

fn objects(store: &Store<DynamicObject>) -> Vec<Value> {
    store.state().iter().filter_map(|o| serde_json::to_value(&**o).ok()).collect()
}
