//! Workload slicing (`pkg/workloadslicing`): which slice a job goes on with, a new slice for a
//! scale-up, counts applied in place otherwise, and the custom annotations of an elastic
//! RayService.

use super::*;

pub(super) fn counts(sets: &[PodSet]) -> BTreeMap<String, i64> {
    let mut m = BTreeMap::new();
    for s in sets {
        *m.entry(s.name.clone()).or_insert(0) += s.count;
    }
    m
}

pub(super) fn names(sets: &[PodSet]) -> Vec<&str> {
    let mut n: Vec<&str> = sets.iter().map(|s| s.name.as_str()).collect();
    n.sort_unstable();
    n
}

/// `ScaledDown`: at least one PodSet lower and none higher.
pub(super) fn scaled_down(old: &[PodSet], new: &[PodSet]) -> bool {
    let (o, n) = (counts(old), counts(new));
    let mut lower = false;
    for (name, c) in &n {
        let before = o.get(name).copied().unwrap_or(0);
        if *c > before {
            return false;
        }
        lower |= *c < before;
    }
    lower
}

/// What `EnsureWorkloadSlices` decided.
pub(super) enum Ensure {
    /// Go on with this slice.
    Use(Value),
    /// Create a slice (replacing the given one, for a scale-up).
    Create(Option<Value>),
    /// The PodSet names changed: the non-slice path decides.
    Incompatible,
    /// Nothing to do this pass (a slice could not be created yet).
    Wait,
}

impl KueueController {
    /// `GetCustomAnnotations` of an elastic RayService: the PodSets' counts and the generation
    /// of the active RayCluster (`""` when there is none).
    pub(super) async fn ensure_custom_annotations(
        &self,
        world: &mut World,
        job: &Value,
        pod_sets: &[PodSet],
    ) -> Result<Value, KueueError> {
        let sizes: Vec<Value> = pod_sets.iter().map(|p| json!({"name": p.name, "count": p.count})).collect();
        let sizes = serde_json::to_string(&sizes).unwrap_or_default();
        let active = str_at(job, "/status/activeServiceStatus/rayClusterName");
        let rc_gen = world
            .get(Kind::RayCluster, &(str_at(job, "/metadata/namespace").to_string(), active.to_string()))
            .filter(|_| !active.is_empty())
            .map(|rc| generation(rc).to_string())
            .unwrap_or_default();
        if annotation(job, REPLICA_SIZES_ANNOTATION) == Some(sizes.as_str())
            && annotation(job, RAYCLUSTER_GENERATION_ANNOTATION) == Some(rc_gen.as_str())
        {
            return Ok(job.clone());
        }
        let patch = json!({"metadata": {"annotations": {REPLICA_SIZES_ANNOTATION: sizes, RAYCLUSTER_GENERATION_ANNOTATION: rc_gen}}});
        self.patch(world, Kind::RayService, job, patch, false, false).await
    }

    /// `EnsureWorkloadSlices` with `normalizeActiveSlices` (and, when configured, the kueue#15661
    /// fix, which came after v0.19.2).
    pub(super) async fn ensure_slices(
        &self,
        world: &mut World,
        job: &Value,
        slices: &[Value],
        pod_sets: &[PodSet],
    ) -> Result<Ensure, KueueError> {
        let selected = match slices.len() {
            0 => return Ok(Ensure::Create(None)),
            1 => slices[0].clone(),
            _ => {
                let non_evicted: Vec<&Value> = slices.iter().filter(|w| !evicted(w)).collect();
                if self.config.evicted_slice_fix
                    && let Some(ev) = slices.iter().find(|w| evicted(w) && has_quota_reservation(w))
                    && !non_evicted.iter().any(|w| admitted(w))
                {
                    return Ok(Ensure::Use(ev.clone()));
                }
                let latest_qr = non_evicted.iter().rev().find(|w| has_quota_reservation(w)).copied();
                let pending_repl = latest_qr.and_then(|q| {
                    let k = format!("{}/{}", str_at(q, "/metadata/namespace"), str_at(q, "/metadata/name"));
                    non_evicted
                        .iter()
                        .rev()
                        .find(|w| {
                            !has_quota_reservation(w)
                                && annotation(w, WORKLOAD_SLICE_REPLACEMENT_FOR_ANNOTATION) == Some(k.as_str())
                        })
                        .copied()
                });
                let selected = pending_repl.or(latest_qr).or(non_evicted.last().copied()).cloned();
                let selected_key = selected.as_ref().map(key_of);
                let latest_qr_key = latest_qr.map(key_of);
                let keep = |w: &Value| Some(key_of(w)) == selected_key || Some(key_of(w)) == latest_qr_key;
                // A slice a live one replaces is finished as replaced (v0.19.2 normalizeActiveSlices,
                // kueue#13489), any other as out of sync.
                let replaced: Vec<&str> = non_evicted
                    .iter()
                    .filter_map(|w| annotation(w, WORKLOAD_SLICE_REPLACEMENT_FOR_ANNOTATION))
                    .collect();
                for w in slices.iter().filter(|w| !keep(w)) {
                    let k = format!("{}/{}", str_at(w, "/metadata/namespace"), str_at(w, "/metadata/name"));
                    let (reason, message) = if replaced.contains(&k.as_str()) {
                        ("WorkloadSliceReplaced", "Replaced to accommodate a new workload slice")
                    } else {
                        ("OutOfSync", "The workload slice is out of sync with its parent job")
                    };
                    self.finish_workload(world, w, reason, message).await?;
                }
                match selected {
                    None => return Ok(Ensure::Create(None)),
                    Some(s) => {
                        let live = slices.iter().filter(|w| keep(w)).count();
                        if live >= 2 {
                            // `prepareWorkloadSlice` refuses a third slice: only counts of the
                            // selected (unreserved) one may change.
                            let current = workload_pod_sets(&s);
                            if names(&current) == names(pod_sets)
                                && counts(&current) != counts(pod_sets)
                                && !has_quota_reservation(&s)
                            {
                                let updated = self.apply_counts(world, &s, pod_sets).await?;
                                return Ok(Ensure::Use(updated));
                            }
                            if counts(&current) == counts(pod_sets) {
                                return Ok(Ensure::Use(s));
                            }
                            return Ok(Ensure::Wait);
                        }
                        s
                    }
                }
            }
        };
        let _ = job;
        let current = workload_pod_sets(&selected);
        if names(&current) != names(pod_sets) {
            return Ok(Ensure::Incompatible);
        }
        if counts(&current) == counts(pod_sets) {
            return Ok(Ensure::Use(selected));
        }
        if !has_quota_reservation(&selected) || scaled_down(&current, pod_sets) {
            let updated = self.apply_counts(world, &selected, pod_sets).await?;
            return Ok(Ensure::Use(updated));
        }
        Ok(Ensure::Create(Some(selected)))
    }

    /// `ApplyPodSetCounts`: only the counts change; templates stay.
    pub(super) async fn apply_counts(
        &self,
        world: &mut World,
        wl: &Value,
        pod_sets: &[PodSet],
    ) -> Result<Value, KueueError> {
        let want = counts(pod_sets);
        // Only the counts change: every other field of a reserved slice's PodSets is immutable
        // (the Workload webhook's `validateImmutablePodSets`).
        let mut sets: Vec<Value> = wl.pointer("/spec/podSets").and_then(Value::as_array).cloned().unwrap_or_default();
        for p in &mut sets {
            if let Some(c) = p.get("name").and_then(Value::as_str).and_then(|n| want.get(n)) {
                p["count"] = json!(c);
            }
        }
        self.patch(world, Kind::Workload, wl, json!({"spec": {"podSets": sets}}), false, true).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_down_needs_one_lower_and_none_higher() {
        let ps = |h: i64, w: i64| {
            vec![
                PodSet { name: "head".into(), count: h, template: json!({}) },
                PodSet { name: "w".into(), count: w, template: json!({}) },
            ]
        };
        assert!(scaled_down(&ps(2, 2), &ps(1, 2)));
        assert!(!scaled_down(&ps(2, 2), &ps(1, 3)));
        assert!(!scaled_down(&ps(2, 2), &ps(2, 2)));
    }
}
