//! `startJob` and `stopJob`: a job unsuspended with the admission's PodSet infos, suspended with
//! its templates restored from the Workload.

use super::*;

impl KueueController {
    /// `stopJob`: `Suspend()` plus `RestorePodSetsInfo` from the Workload's PodSets; event
    /// `Stopped`. Nothing when the job is already suspended. Returns the job as it is now.
    pub(super) async fn stop_job(
        &self,
        world: &mut World,
        jk: JobKind,
        job: &Value,
        wl: Option<&Value>,
        message: &str,
    ) -> Result<Value, KueueError> {
        if self.is_suspended(jk, job) {
            return Ok(job.clone());
        }
        let mut spec = job.pointer(jk.cluster_spec_pointer()).cloned().unwrap_or_else(|| json!({}));
        let mut submitter = job.pointer("/spec/submitterPodTemplate").cloned().filter(Value::is_object);
        if let Some(wl) = wl {
            let originals = workload_pod_sets(wl);
            if originals.len() == Self::expected_pod_sets(jk, job) {
                // The RayCluster PodSets come first, a RayJob's submitter last.
                if jk == JobKind::RayJob
                    && podsets::submission_mode(job) == "K8sJobMode"
                    && let (Some(t), Some(o)) = (submitter.as_mut(), originals.last())
                {
                    podsets::restore_template(t, &o.template);
                }
                for_each_group_template(&mut spec, &originals, |t, o| podsets::restore_template(t, &o.template));
            }
        }
        let templates = template_patch(&spec);
        let patch = match jk {
            JobKind::RayCluster => {
                let mut p = templates;
                p["suspend"] = json!(true);
                json!({"spec": p})
            }
            JobKind::RayJob => {
                let mut p = json!({"suspend": true, "rayClusterSpec": templates});
                if let Some(t) = submitter {
                    p["submitterPodTemplate"] = t;
                }
                json!({"spec": p})
            }
            JobKind::RayService if self.gate(jk) => {
                let mut p = templates;
                p["suspend"] = json!(true);
                json!({"spec": {"suspend": true, "rayClusterConfig": p}})
            }
            JobKind::RayService => {
                let mut p = templates;
                p["suspend"] = json!(true);
                json!({"spec": {"rayClusterConfig": p}})
            }
        };
        let job = self.patch(world, jk.kind(), job, patch, false, true).await?;
        tracing::debug!("kueue stopped {}: {message}", str_at(&job, "/metadata/name"));
        self.event(jk.kind(), &job, EventType::Normal, "Stopped", "Stopped", message.to_string()).await;
        Ok(job)
    }

    /// `startJob`: `RunWithPodSetsInfo` from the admission; event `Started`. A PodSet count
    /// that does not match the job's groups finishes the Workload with `FailedToStart`.
    pub(super) async fn start_job(
        &self,
        world: &mut World,
        jk: JobKind,
        job: &Value,
        wl: &Value,
        elastic: bool,
    ) -> Result<(), KueueError> {
        let assignments: Vec<Value> =
            wl.pointer("/status/admission/podSetAssignments").and_then(Value::as_array).cloned().unwrap_or_default();
        let wl_name = str_at(wl, "/metadata/name");
        let infos: Vec<PodSetInfo> = assignments
            .iter()
            .map(|a| {
                let name = str_at(a, "/name").to_string();
                let mut node_selector = BTreeMap::new();
                for flavor in a.get("flavors").and_then(Value::as_object).into_iter().flat_map(|m| m.values()) {
                    let key = (String::new(), flavor.as_str().unwrap_or("").to_string());
                    if let Some(rf) = world.get(Kind::ResourceFlavor, &key) {
                        for (k, v) in rf.pointer("/spec/nodeLabels").and_then(Value::as_object).into_iter().flatten() {
                            node_selector.insert(k.clone(), v.as_str().unwrap_or("").to_string());
                        }
                    }
                }
                let mut annotations = BTreeMap::from([(WORKLOAD_ANNOTATION.to_string(), wl_name.to_string())]);
                // `assignQueueLabels` (gate AssignQueueLabelsForPods, beta and on since v0.17).
                let mut labels = BTreeMap::from([(PODSET_LABEL.to_string(), name.clone())]);
                labels.insert(LOCAL_QUEUE_LABEL.to_string(), str_at(wl, "/spec/queueName").to_string());
                let cq = str_at(wl, "/status/admission/clusterQueue");
                if is_dns1123_label(cq) {
                    labels.insert(CLUSTER_QUEUE_LABEL.to_string(), cq.to_string());
                }
                if elastic {
                    let chain = annotation(wl, WORKLOAD_SLICE_NAME_ANNOTATION).unwrap_or(wl_name);
                    annotations.insert(WORKLOAD_SLICE_NAME_ANNOTATION.to_string(), chain.to_string());
                }
                PodSetInfo {
                    count: a.get("count").and_then(Value::as_i64).unwrap_or(1),
                    labels,
                    annotations,
                    node_selector,
                    name,
                }
            })
            .collect();
        let mut spec = job.pointer(jk.cluster_spec_pointer()).cloned().unwrap_or_else(|| json!({}));
        let expected = Self::expected_pod_sets(jk, job);
        if infos.len() != expected {
            let message = format!("invalid podset infos: expecting {expected} podset, got {}", infos.len());
            self.finish_workload(world, wl, "FailedToStart", &message).await?;
            return Ok(());
        }
        for_each_group_template(&mut spec, &infos, podsets::merge_info);
        let templates = template_patch(&spec);
        let patch = match jk {
            JobKind::RayCluster => {
                let mut p = templates;
                p["suspend"] = json!(false);
                json!({"spec": p})
            }
            JobKind::RayJob => {
                let mut p = json!({"suspend": false, "rayClusterSpec": templates});
                // The submitter's info is the last; its template is written back even when it
                // was KubeRay's default (`if j.Spec.SubmitterPodTemplate == nil`).
                if podsets::submission_mode(job) == "K8sJobMode"
                    && let Some(info) = infos.last()
                {
                    let mut t = podsets::submitter_template(job);
                    podsets::merge_info(&mut t, info);
                    p["submitterPodTemplate"] = t;
                }
                json!({"spec": p})
            }
            // The nested suspend stays true: it is the template gate of later children. The
            // top-level one goes: Go's `Suspend bool \`json:"suspend,omitempty"\`` (KubeRay v1.7.0
            // rayservice_types.go) drops a false from the object Kueue writes back.
            JobKind::RayService if self.gate(jk) => json!({"spec": {"suspend": null, "rayClusterConfig": templates}}),
            JobKind::RayService => {
                let mut p = templates;
                p["suspend"] = json!(false);
                json!({"spec": {"rayClusterConfig": p}})
            }
        };
        let job = self.patch(world, jk.kind(), job, patch, false, true).await?;
        let cq = str_at(wl, "/status/admission/clusterQueue");
        self.event(jk.kind(), &job, EventType::Normal, "Started", "Started", format!("Admitted by clusterQueue {cq}"))
            .await;
        Ok(())
    }
}

/// `validation.IsDNS1123Label`.
pub(super) fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// The templates part of a RayClusterSpec patch: the head group and the whole worker list (a
/// merge patch replaces lists).
pub(super) fn template_patch(spec: &Value) -> Value {
    let mut p = json!({});
    if let Some(h) = spec.get("headGroupSpec") {
        p["headGroupSpec"] = h.clone();
    }
    if let Some(w) = spec.get("workerGroupSpecs") {
        p["workerGroupSpecs"] = w.clone();
    }
    p
}

/// Calls `f` on each group template of a RayCluster spec with its PodSet's item: the first item
/// goes with the head group, item `i` with worker group `i - 1` (PodSets are in that order).
pub(super) fn for_each_group_template<T>(spec: &mut Value, items: &[T], f: impl Fn(&mut Value, &T)) {
    for (i, item) in items.iter().enumerate() {
        let at = if i == 0 {
            "/headGroupSpec/template".to_string()
        } else {
            format!("/workerGroupSpecs/{}/template", i - 1)
        };
        if let Some(t) = spec.pointer_mut(&at) {
            f(t, item);
        }
    }
}
