//! PodSets and their resource requests: what a Ray job asks Kueue for
//! (`pkg/controller/jobs/raycluster/common.go` `BuildPodSets`, `pkg/workload/workload.go`
//! `totalRequestsFromPodSets`), and the PodSet information merged into a job's templates when it
//! starts (`pkg/podset/podset.go`).

use apimachinery::quantity::Quantity;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// One PodSet of a job or Workload.
#[derive(Debug, Clone, PartialEq)]
pub struct PodSet {
    /// `head`, a worker group's name, or `submitter`.
    pub name: String,
    /// How many pods.
    pub count: i64,
    /// The pod template (JSON).
    pub template: Value,
}

impl PodSet {
    /// The PodSet as `Workload.spec.podSets[]` holds it.
    pub fn to_json(&self) -> Value {
        json!({"name": self.name, "count": self.count, "template": self.template})
    }

    /// A PodSet read from `Workload.spec.podSets[]`.
    pub fn from_json(v: &Value) -> PodSet {
        PodSet {
            name: v.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
            count: v.get("count").and_then(Value::as_i64).unwrap_or(1),
            template: v.get("template").cloned().unwrap_or_else(|| json!({})),
        }
    }
}

/// `BuildPodSets` of a RayClusterSpec (JSON): `head` (count 1), then one per worker group,
/// count = `replicas` (unset: 1) × `numOfHosts` when above 1. With in-tree autoscaling the head
/// template gains the `autoscaler` container KubeRay adds to the head pod, with
/// `autoscalerOptions.resources` or KubeRay's default 500m / 512Mi, so the quota covers it
/// (https://github.com/kubernetes-sigs/kueue/blob/v0.19.2/pkg/controller/jobs/raycluster/common.go#L98-L106,
/// autoscalerContainer).
pub fn ray_cluster_pod_sets(spec: &Value) -> Vec<PodSet> {
    let mut head = spec.pointer("/headGroupSpec/template").cloned().unwrap_or_else(|| json!({}));
    if spec.get("enableInTreeAutoscaling").and_then(Value::as_bool) == Some(true) {
        let default =
            json!({"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}});
        let resources = spec.pointer("/autoscalerOptions/resources").filter(|r| r.is_object()).cloned();
        let sidecar = json!({"name": "autoscaler", "resources": resources.unwrap_or(default)});
        let pod = head.as_object_mut().map(|t| t.entry("spec").or_insert_with(|| json!({})));
        let containers = pod.and_then(Value::as_object_mut).map(|p| p.entry("containers").or_insert_with(|| json!([])));
        if let Some(cs) = containers.and_then(Value::as_array_mut) {
            cs.push(sidecar);
        }
    }
    let mut sets = vec![PodSet { name: "head".into(), count: 1, template: head }];
    for g in spec.get("workerGroupSpecs").and_then(Value::as_array).into_iter().flatten() {
        let mut count = g.get("replicas").and_then(Value::as_i64).unwrap_or(1);
        let hosts = g.get("numOfHosts").and_then(Value::as_i64).unwrap_or(1);
        if hosts > 1 {
            count *= hosts;
        }
        sets.push(PodSet {
            name: g.get("groupName").and_then(Value::as_str).unwrap_or("").to_string(),
            count,
            template: g.get("template").cloned().unwrap_or_else(|| json!({})),
        });
    }
    sets
}

/// The RayJob's `spec.submissionMode`, defaulted as the CRD does (`K8sJobMode`).
pub fn submission_mode(job: &Value) -> &str {
    match job.pointer("/spec/submissionMode").and_then(Value::as_str) {
        None | Some("") => "K8sJobMode",
        Some(m) => m,
    }
}

/// `getSubmitterTemplate`: the RayJob's `submitterPodTemplate`, or KubeRay's default submitter
/// pod (one `ray-job-submitter` container with the head's image, requests 500m / 200Mi, limits
/// 1 / 1Gi, `restartPolicy: Never`).
pub fn submitter_template(job: &Value) -> Value {
    if let Some(t) = job.pointer("/spec/submitterPodTemplate").filter(|t| t.is_object()) {
        return t.clone();
    }
    let image = job.pointer("/spec/rayClusterSpec/headGroupSpec/template/spec/containers/0/image").cloned();
    json!({"spec": {
        "containers": [{
            "name": "ray-job-submitter",
            "image": image.unwrap_or(Value::Null),
            "resources": {"requests": {"cpu": "500m", "memory": "200Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
        }],
        "restartPolicy": "Never",
    }})
}

/// `RayJob.PodSets` (`pkg/controller/jobs/rayjob/rayjob_controller.go`, v0.19.2): the RayCluster
/// PodSets of `spec.rayClusterSpec`, then `submitter` (count 1, [`submitter_template`]) in
/// `K8sJobMode`; in `SidecarMode` the head PodSet gains the `ray-job-submitter` container with
/// the default submitter resources, as KubeRay injects it into the head pod.
pub fn ray_job_pod_sets(job: &Value) -> Vec<PodSet> {
    let spec = job.pointer("/spec/rayClusterSpec").cloned().unwrap_or_else(|| json!({}));
    let mut sets = ray_cluster_pod_sets(&spec);
    match submission_mode(job) {
        "K8sJobMode" => sets.push(PodSet { name: "submitter".into(), count: 1, template: submitter_template(job) }),
        "SidecarMode" => {
            if let Some(head) = sets.iter_mut().find(|p| p.name == "head")
                && let Some(cs) = head.template.pointer_mut("/spec/containers").and_then(Value::as_array_mut)
            {
                cs.push(json!({
                    "name": "ray-job-submitter",
                    "resources": {"requests": {"cpu": "500m", "memory": "200Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
                }));
            }
        }
        _ => {}
    }
    sets
}

/// PR 11264's union over live children: by PodSet name, the first occurrence keeps its template
/// and position, counts are summed.
pub fn union(children: &[Vec<PodSet>]) -> Vec<PodSet> {
    let mut out: Vec<PodSet> = Vec::new();
    for sets in children {
        for s in sets {
            match out.iter_mut().find(|o| o.name == s.name) {
                Some(o) => o.count += s.count,
                None => out.push(s.clone()),
            }
        }
    }
    out
}

/// Resource amounts by resource name.
pub type Resources = BTreeMap<String, Quantity>;

fn quantities(v: Option<&Value>) -> Resources {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, q)| {
                    let text = match q {
                        Value::String(s) => s.clone(),
                        Value::Number(n) => n.to_string(),
                        _ => return None,
                    };
                    Quantity::parse(&text).map(|q| (k.clone(), q))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A container's requests, limits standing in for missing requests.
fn container_requests(c: &Value) -> Resources {
    let mut r = quantities(c.pointer("/resources/limits"));
    r.extend(quantities(c.pointer("/resources/requests")));
    r
}

/// The effective requests of one pod of `template`: the sum over containers, at least the
/// largest init container's, plus the pod overhead; zero amounts dropped.
pub fn pod_requests(template: &Value) -> Resources {
    let mut total = Resources::new();
    for c in template.pointer("/spec/containers").and_then(Value::as_array).into_iter().flatten() {
        for (k, q) in container_requests(c) {
            let cur = total.remove(&k).unwrap_or(Quantity::ZERO);
            total.insert(k, cur.plus(q));
        }
    }
    for c in template.pointer("/spec/initContainers").and_then(Value::as_array).into_iter().flatten() {
        for (k, q) in container_requests(c) {
            if total.get(&k).is_none_or(|cur| q > *cur) {
                total.insert(k, q);
            }
        }
    }
    for (k, q) in quantities(template.pointer("/spec/overhead")) {
        let cur = total.remove(&k).unwrap_or(Quantity::ZERO);
        total.insert(k, cur.plus(q));
    }
    total.retain(|_, q| !q.is_zero());
    total
}

/// `count` pods' worth of `per_pod`.
pub fn times(per_pod: &Resources, count: i64) -> Resources {
    per_pod.iter().map(|(k, q)| (k.clone(), q.times(count))).collect()
}

/// The resource list as JSON (`{"cpu": "2", "memory": "4Gi"}`).
pub fn to_json(r: &Resources) -> Value {
    Value::Object(r.iter().map(|(k, q)| (k.clone(), Value::String(q.to_string()))).collect())
}

/// A resource list read from JSON.
pub fn from_json(v: Option<&Value>) -> Resources {
    quantities(v)
}

/// What Kueue merges into a job's pod template when it starts it (`podset.PodSetInfo`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PodSetInfo {
    /// The PodSet's name.
    pub name: String,
    /// The admitted count.
    pub count: i64,
    /// Labels added to the template.
    pub labels: BTreeMap<String, String>,
    /// Annotations added to the template.
    pub annotations: BTreeMap<String, String>,
    /// The node selector added (the assigned flavors' node labels).
    pub node_selector: BTreeMap<String, String>,
}

fn merge_map(target: &mut Value, pointer_parent: &str, key: &str, add: &BTreeMap<String, String>) {
    if add.is_empty() {
        return;
    }
    let Some(parent) = target.pointer_mut(pointer_parent) else { return };
    if !parent.is_object() {
        *parent = json!({});
    }
    let entry = &mut parent[key];
    if !entry.is_object() {
        *entry = json!({});
    }
    for (k, v) in add {
        entry[k.as_str()] = Value::String(v.clone());
    }
}

/// `podset.Merge`: adds the info's labels, annotations and node selector to `template`.
pub fn merge_info(template: &mut Value, info: &PodSetInfo) {
    if !template.is_object() {
        *template = json!({});
    }
    if template.get("metadata").is_none_or(|m| !m.is_object()) {
        template["metadata"] = json!({});
    }
    if template.get("spec").is_none_or(|m| !m.is_object()) {
        template["spec"] = json!({});
    }
    merge_map(template, "/metadata", "labels", &info.labels);
    merge_map(template, "/metadata", "annotations", &info.annotations);
    merge_map(template, "/spec", "nodeSelector", &info.node_selector);
}

/// `podset.RestorePodSpec`: the template's labels, annotations and node selector become those of
/// `original` again (keys Kueue added are removed).
pub fn restore_template(template: &mut Value, original: &Value) {
    for (parent, key) in [("metadata", "labels"), ("metadata", "annotations"), ("spec", "nodeSelector")] {
        let want = original.get(parent).and_then(|p| p.get(key)).cloned();
        if let Some(p) = template.get_mut(parent).and_then(Value::as_object_mut) {
            match want {
                Some(w) => {
                    p.insert(key.to_string(), w);
                }
                None => {
                    p.remove(key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(cpu: &str, mem: &str) -> Value {
        json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu, "memory": mem}}}]}})
    }

    #[test]
    fn requests_default_from_limits_and_sum_over_containers() {
        let r = pod_requests(&pod("1", "2Gi"));
        assert_eq!(to_json(&r), json!({"cpu": "1", "memory": "2Gi"}));
        assert_eq!(to_json(&times(&r, 2)), json!({"cpu": "2", "memory": "4Gi"}));
    }

    #[test]
    fn an_autoscaled_head_counts_the_autoscaler_sidecar() {
        let spec = |options: Value| {
            json!({"enableInTreeAutoscaling": true, "autoscalerOptions": options,
                   "headGroupSpec": {"template": pod("500m", "1Gi")}, "workerGroupSpecs": []})
        };
        let head = |spec: &Value| pod_requests(&ray_cluster_pod_sets(spec)[0].template);
        assert_eq!(to_json(&head(&spec(Value::Null))), json!({"cpu": "1", "memory": "1536Mi"}));
        let own = json!({"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}});
        assert_eq!(to_json(&head(&spec(own))), json!({"cpu": "1500m", "memory": "2Gi"}));
        let plain = json!({"headGroupSpec": {"template": pod("500m", "1Gi")}});
        assert_eq!(to_json(&head(&plain)), json!({"cpu": "500m", "memory": "1Gi"}));
        // A template that is not an object gains nothing and does not panic.
        let odd = json!({"enableInTreeAutoscaling": true, "headGroupSpec": {"template": "x"}});
        assert_eq!(ray_cluster_pod_sets(&odd)[0].template, json!("x"));
    }

    #[test]
    fn the_union_sums_counts_and_keeps_the_first_template() {
        let a = vec![PodSet { name: "head".into(), count: 1, template: pod("1", "2Gi") }];
        let b = vec![PodSet { name: "head".into(), count: 1, template: pod("2", "4Gi") }];
        let u = union(&[a, b]);
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].count, 2);
        assert_eq!(u[0].template, pod("1", "2Gi"));
    }

    #[test]
    fn a_rayjob_adds_the_submitter_podset_or_the_sidecar_container() {
        let job = |mode: Option<&str>| {
            let mut j = json!({"spec": {"rayClusterSpec": {
                "headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head", "image": "ray:2", "resources": {"requests": {"cpu": "1"}}}]}}},
                "workerGroupSpecs": [{"groupName": "w", "replicas": 2, "template": {}}]}}});
            if let Some(m) = mode {
                j["spec"]["submissionMode"] = json!(m);
            }
            j
        };
        let names = |sets: &[PodSet]| sets.iter().map(|s| (s.name.clone(), s.count)).collect::<Vec<_>>();
        let k8s = ray_job_pod_sets(&job(None));
        assert_eq!(names(&k8s), vec![("head".into(), 1), ("w".into(), 2), ("submitter".into(), 1)]);
        assert_eq!(to_json(&pod_requests(&k8s[2].template)), json!({"cpu": "500m", "memory": "200Mi"}));
        assert_eq!(k8s[2].template.pointer("/spec/containers/0/image"), Some(&json!("ray:2")));
        let sidecar = ray_job_pod_sets(&job(Some("SidecarMode")));
        assert_eq!(names(&sidecar), vec![("head".into(), 1), ("w".into(), 2)]);
        assert_eq!(to_json(&pod_requests(&sidecar[0].template)), json!({"cpu": "1500m", "memory": "200Mi"}));
        assert_eq!(names(&ray_job_pod_sets(&job(Some("HTTPMode")))).len(), 2);
    }

    #[test]
    fn worker_counts_scale_by_hosts_and_default_to_one() {
        let spec = json!({"headGroupSpec": {"template": {}}, "workerGroupSpecs": [
            {"groupName": "a", "replicas": 2, "numOfHosts": 2, "template": {}},
            {"groupName": "b", "template": {}}]});
        let sets: Vec<(String, i64)> = ray_cluster_pod_sets(&spec).into_iter().map(|s| (s.name, s.count)).collect();
        assert_eq!(sets, vec![("head".into(), 1), ("a".into(), 4), ("b".into(), 1)]);
    }
}
