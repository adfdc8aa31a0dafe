//! Kueue's mutating (defaulting) webhooks for the Ray kinds (`mrayjob.kb.io`,
//! `mraycluster.kb.io`, `mrayservice.kb.io`, `verbs=create`), as `Default` does it at v0.19.2
//! (`pkg/controller/jobs/{rayjob,raycluster,rayservice}/*_webhook.go`):
//!
//! 1. `ApplyDefaultLocalQueueWithManagedJobsNamespaceSelector` (`jobframework/defaults.go`): a
//!    job without a queue name, in a namespace Kueue manages, whose controller owner is not a
//!    kind Kueue manages, gets `kueue.x-k8s.io/queue-name: default` when LocalQueue `default`
//!    exists in its namespace;
//! 2. `ApplyDefaultWorkloadPriorityClass`: behind `WorkloadPriorityClassDefaulting` (alpha, off
//!    at v0.19.2), so nothing;
//! 3. `ApplyDefaultForSuspend` → `WorkloadShouldBeSuspended` (`jobframework/utils.go`): a job
//!    with a queue name and no Kueue-managed ancestor (`FindAncestorJobManagedByKueue`, which
//!    walks the controller owners and reads each one) is suspended unless it already is
//!    (`Suspend()`: `spec.suspend`, for a RayService the nested `rayClusterConfig.suspend`, and
//!    under PR 11264's gate both);
//! 4. `ApplyDefaultForManagedBy`: only for a ClusterQueue with a MultiKueue admission check,
//!    which the reference Kueue does not model, so nothing;
//! 5. RayCluster and RayService only: an elastic job (`ElasticJobsViaWorkloadSlices` and the
//!    `kueue.x-k8s.io/elastic-job: "true"` annotation) gets the elastic scheduling gate on the
//!    head template and every worker template (`utilpod.GateTemplate`, which adds it once).
//!
//! Kueue's own configuration defaults (`apis/config/v1beta2/defaults.go`) decide the rest:
//! `manageJobsWithoutQueueName` off, `managedJobsNamespaceSelector` every namespace but
//! `kube-system` and `kueue-system`. The integrations enabled are the four the upstream backend
//! configures (batch/job and the three Ray kinds); the known owners add ReplicaSet.
//!
//! Pure functions of the object and a reader of the cluster (real Kueue reads its informer
//! caches and its queue manager); the harness registers them with the fake API server as
//! in-process mutating webhooks.

use super::ungater::ELASTIC_JOB_SCHEDULING_GATE;
use super::{ELASTIC_JOB_ANNOTATION, QUEUE_NAME_LABEL};
use serde_json::{Value, json};

/// The defaulting webhook names Kueue v0.19.2 registers for the Ray kinds, by resource plural.
pub const RAY_DEFAULTING_WEBHOOKS: [(&str, &str); 3] =
    [("rayjobs", "mrayjob.kb.io"), ("rayclusters", "mraycluster.kb.io"), ("rayservices", "mrayservice.kb.io")];

/// `constants.DefaultLocalQueueName`.
pub const DEFAULT_LOCAL_QUEUE: &str = "default";

/// The namespaces Kueue's default `managedJobsNamespaceSelector` leaves out (`kube-system` and
/// Kueue's own namespace).
const UNMANAGED_NAMESPACES: [&str; 2] = ["kube-system", "kueue-system"];

/// `managedOwnersChainLimit` in `jobframework/reconciler.go`.
const MANAGED_OWNERS_CHAIN_LIMIT: usize = 10;

/// The kinds (`apiVersion`, `kind`) of the enabled integrations: owners of these kinds are jobs
/// Kueue manages.
const MANAGED_OWNER_KINDS: [(&str, &str); 4] =
    [("batch/v1", "Job"), ("ray.io/v1", "RayJob"), ("ray.io/v1", "RayCluster"), ("ray.io/v1", "RayService")];

/// Reads an object from the cluster: `(api_version, kind, namespace, name)`.
pub type ClusterGet<'a> = &'a dyn Fn(&str, &str, &str, &str) -> Option<Value>;

/// The switches of Kueue's configuration the defaulting reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultingGates {
    /// `ElasticJobsViaWorkloadSlices`.
    pub elastic_jobs: bool,
    /// PR 11264's RayService gate (`Suspend()` sets the top-level and the nested suspend).
    pub rayservice_upgrade_gate: bool,
}

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn queue_name(obj: &Value) -> &str {
    obj.pointer("/metadata/labels").and_then(|l| l.get(QUEUE_NAME_LABEL)).and_then(Value::as_str).unwrap_or("")
}

/// `metav1.GetControllerOf`.
fn controller_of(obj: &Value) -> Option<&Value> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
}

fn owner_is(owner: &Value, kinds: &[(&str, &str)]) -> bool {
    kinds.iter().any(|(av, k)| str_at(owner, "/apiVersion") == *av && str_at(owner, "/kind") == *k)
}

/// `IsOwnerManagedByKueueForObject`: the controller owner is of a kind Kueue manages.
fn owner_managed_by_kueue(obj: &Value) -> bool {
    controller_of(obj).is_some_and(|o| owner_is(o, &MANAGED_OWNER_KINDS))
}

/// `FindAncestorJobManagedByKueue` with `manageJobsWithoutQueueName` off: the topmost
/// controller owner of a managed kind that has a queue name. `Err` is the webhook's refusal
/// (an owner that cannot be read, cyclic ownership, too long a chain).
fn ancestor_managed_by_kueue(job: &Value, get: ClusterGet<'_>) -> Result<Option<Value>, String> {
    let namespace = str_at(job, "/metadata/namespace");
    let mut seen: Vec<String> = Vec::new();
    let mut top = None;
    let mut current = job.clone();
    loop {
        let uid = str_at(&current, "/metadata/uid").to_string();
        if seen.contains(&uid) {
            return Err("cyclic ownership".into());
        }
        seen.push(uid);
        let Some(owner) = controller_of(&current).cloned() else { return Ok(top) };
        let known = owner_is(&owner, &MANAGED_OWNER_KINDS) || owner_is(&owner, &[("apps/v1", "ReplicaSet")]);
        if !known {
            return Ok(top);
        }
        let (api_version, kind, name) =
            (str_at(&owner, "/apiVersion"), str_at(&owner, "/kind"), str_at(&owner, "/name"));
        let Some(parent) = get(api_version, kind, namespace, name) else {
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            let resource = format!("{}s", kind.to_lowercase());
            let resource = if group.is_empty() { resource } else { format!("{resource}.{group}") };
            return Err(format!("workload owner not found\n{resource} {name:?} not found"));
        };
        if str_at(&parent, "/metadata/uid") != str_at(&owner, "/uid") {
            return Ok(top);
        }
        if owner_is(&owner, &MANAGED_OWNER_KINDS) && !queue_name(&parent).is_empty() {
            top = Some(parent.clone());
        }
        current = parent;
        if seen.len() > MANAGED_OWNERS_CHAIN_LIMIT {
            return Err("managed owner chain limit reached".into());
        }
    }
}

/// `Suspend()` of the kind: `spec.suspend`; a RayService's nested suspend, and under PR
/// 11264's gate its top-level one too.
fn suspend(resource: &str, job: &mut Value, rayservice_upgrade_gate: bool) {
    if resource == "rayservices" {
        job["spec"]["rayClusterConfig"]["suspend"] = json!(true);
        if !rayservice_upgrade_gate {
            return;
        }
    }
    job["spec"]["suspend"] = json!(true);
}

/// `utilpod.GateTemplate`: adds the elastic gate to a pod template once.
fn gate_template(template: &mut Value) {
    let gates = &mut template["spec"]["schedulingGates"];
    if !gates.is_array() {
        *gates = json!([]);
    }
    if let Some(list) = gates.as_array_mut()
        && !list.iter().any(|g| g.get("name").and_then(Value::as_str) == Some(ELASTIC_JOB_SCHEDULING_GATE))
    {
        list.push(json!({"name": ELASTIC_JOB_SCHEDULING_GATE}));
    }
}

/// Kueue's defaulting webhook for a Ray job (`resource` is the plural) on create; see the
/// module docs. `Err` is the refusal's message.
pub fn default_ray_job(
    resource: &str,
    job: &mut Value,
    gates: DefaultingGates,
    get: ClusterGet<'_>,
) -> Result<(), String> {
    let namespace = str_at(job, "/metadata/namespace").to_string();
    if queue_name(job).is_empty()
        && get("kueue.x-k8s.io/v1beta2", "LocalQueue", &namespace, DEFAULT_LOCAL_QUEUE).is_some()
        && !owner_managed_by_kueue(job)
        && !UNMANAGED_NAMESPACES.contains(&namespace.as_str())
    {
        job["metadata"]["labels"][QUEUE_NAME_LABEL] = json!(DEFAULT_LOCAL_QUEUE);
    }
    // SkipAncestorCheckForDeletedWorkloads (beta, on): an object being deleted is left alone.
    let deleting = job.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null());
    if !deleting
        && ancestor_managed_by_kueue(job, get)?.is_none()
        && !queue_name(job).is_empty()
        && !super::webhook::is_suspended(resource, job, gates.rayservice_upgrade_gate)
    {
        suspend(resource, job, gates.rayservice_upgrade_gate);
    }
    let elastic =
        job.pointer("/metadata/annotations").and_then(|a| a.get(ELASTIC_JOB_ANNOTATION)).and_then(Value::as_str)
            == Some("true");
    let cluster_spec = match resource {
        "rayclusters" => "/spec",
        "rayservices" => "/spec/rayClusterConfig",
        _ => return Ok(()),
    };
    if gates.elastic_jobs
        && elastic
        && let Some(spec) = job.pointer_mut(cluster_spec)
    {
        gate_template(&mut spec["headGroupSpec"]["template"]);
        if let Some(groups) = spec.get_mut("workerGroupSpecs").and_then(Value::as_array_mut) {
            for group in groups {
                gate_template(&mut group["template"]);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GATES: DefaultingGates = DefaultingGates { elastic_jobs: true, rayservice_upgrade_gate: true };

    fn nothing(_: &str, _: &str, _: &str, _: &str) -> Option<Value> {
        None
    }

    fn rayservice() -> Value {
        json!({
            "metadata": {"name": "s", "namespace": "default", "uid": "u1",
                "labels": {QUEUE_NAME_LABEL: "user-queue"}, "annotations": {ELASTIC_JOB_ANNOTATION: "true"}},
            "spec": {"rayClusterConfig": {"headGroupSpec": {"template": {"spec": {}}},
                "workerGroupSpecs": [{"groupName": "w", "template": {"spec": {"schedulingGates": [{"name": "x"}]}}}]}},
        })
    }

    #[test]
    fn a_queued_elastic_rayservice_is_suspended_at_both_levels_and_gated() {
        let mut s = rayservice();
        default_ray_job("rayservices", &mut s, GATES, &nothing).unwrap();
        assert_eq!(s["spec"]["suspend"], json!(true));
        assert_eq!(s["spec"]["rayClusterConfig"]["suspend"], json!(true));
        let gates = |p: &str| s.pointer(p).cloned().unwrap();
        assert_eq!(
            gates("/spec/rayClusterConfig/headGroupSpec/template/spec/schedulingGates"),
            json!([{"name": ELASTIC_JOB_SCHEDULING_GATE}])
        );
        assert_eq!(
            gates("/spec/rayClusterConfig/workerGroupSpecs/0/template/spec/schedulingGates"),
            json!([{"name": "x"}, {"name": ELASTIC_JOB_SCHEDULING_GATE}])
        );
        let again = s.clone();
        default_ray_job("rayservices", &mut s, GATES, &nothing).unwrap();
        assert_eq!(s, again, "defaulting twice changes nothing");
    }

    #[test]
    fn without_the_pr_gate_only_the_nested_suspend_is_set() {
        let mut s = rayservice();
        let gates = DefaultingGates { rayservice_upgrade_gate: false, ..GATES };
        default_ray_job("rayservices", &mut s, gates, &nothing).unwrap();
        assert_eq!(s["spec"].get("suspend"), None);
        assert_eq!(s["spec"]["rayClusterConfig"]["suspend"], json!(true));
    }

    #[test]
    fn a_child_of_a_queued_rayservice_is_not_suspended_and_an_unqueued_job_is_left_alone() {
        let parent = rayservice();
        let get = |av: &str, k: &str, _: &str, n: &str| {
            (av == "ray.io/v1" && k == "RayService" && n == "s").then(|| parent.clone())
        };
        let mut child = json!({
            "metadata": {"name": "s-abcde", "namespace": "default", "uid": "u2", "labels": {QUEUE_NAME_LABEL: "user-queue"},
                "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayService", "name": "s", "uid": "u1", "controller": true}]},
            "spec": {"headGroupSpec": {"template": {"spec": {}}}},
        });
        default_ray_job("rayclusters", &mut child, GATES, &get).unwrap();
        assert_eq!(child["spec"].get("suspend"), None);
        let orphan = get("ray.io/v1", "RayService", "default", "other");
        assert!(orphan.is_none());
        child["metadata"]["ownerReferences"][0]["name"] = json!("gone");
        assert_eq!(
            default_ray_job("rayclusters", &mut child, GATES, &get),
            Err("workload owner not found\nrayservices.ray.io \"gone\" not found".into())
        );
        let mut plain = json!({"metadata": {"name": "j", "namespace": "default"}, "spec": {}});
        default_ray_job("rayjobs", &mut plain, GATES, &nothing).unwrap();
        assert_eq!(plain, json!({"metadata": {"name": "j", "namespace": "default"}, "spec": {}}));
    }

    #[test]
    fn the_default_local_queue_names_the_queue_of_an_unlabelled_job() {
        let get = |_: &str, k: &str, ns: &str, n: &str| {
            (k == "LocalQueue" && ns == "team" && n == DEFAULT_LOCAL_QUEUE).then(|| json!({}))
        };
        let mut job = json!({"metadata": {"name": "j", "namespace": "team"}, "spec": {}});
        default_ray_job("rayjobs", &mut job, GATES, &get).unwrap();
        assert_eq!(queue_name(&job), DEFAULT_LOCAL_QUEUE);
        assert_eq!(job["spec"]["suspend"], json!(true));
        let mut elsewhere = json!({"metadata": {"name": "j", "namespace": "other"}, "spec": {}});
        default_ray_job("rayjobs", &mut elsewhere, GATES, &get).unwrap();
        assert_eq!(queue_name(&elsewhere), "");
    }
}
