//! PR 11264's RayService upgrade gate: children of a Kueue-managed job, the child-job rule
//! (`shouldSuspendChildJob`) and `unsuspendAdmittedChildren` with its race guard.

use super::*;

impl KueueController {
    pub(super) fn gate(&self, jk: JobKind) -> bool {
        jk == JobKind::RayService && self.config.rayservice_upgrade_gate
    }

    /// The RayService's children: RayClusters labelled as originated from it, in list order.
    pub(crate) fn children<'w>(world: &'w World, rs: &Value) -> Vec<&'w Value> {
        let (ns, name) = key_of(rs);
        world
            .all(Kind::RayCluster)
            .into_iter()
            .filter(|rc| {
                str_at(rc, "/metadata/namespace") == ns
                    && label(rc, crate::kuberay::RAY_ORIGINATED_FROM_CR_NAME_LABEL) == Some(name.as_str())
                    && label(rc, crate::kuberay::RAY_ORIGINATED_FROM_CRD_LABEL) == Some("RayService")
            })
            .collect()
    }

    /// The RayService or RayJob owning `rc` as its controller, when it is managed by Kueue (it
    /// has a queue name): `rc` is then a child job.
    pub(super) fn managed_owner(&self, world: &World, rc: &Value) -> Option<Value> {
        let owner = controller_owner(rc)?;
        let kind = match owner.get("kind").and_then(Value::as_str) {
            Some("RayService") => Kind::RayService,
            Some("RayJob") => Kind::RayJob,
            _ => return None,
        };
        let key = (str_at(rc, "/metadata/namespace").to_string(), owner.get("name")?.as_str()?.to_string());
        let rs = world.get(kind, &key)?;
        (str_at(rs, "/metadata/uid") == owner.get("uid").and_then(Value::as_str).unwrap_or("")
            && label(rs, QUEUE_NAME_LABEL).is_some())
        .then(|| rs.clone())
    }

    /// `shouldSuspendChildJob`: a running child of a Kueue-managed job is suspended when its
    /// ancestor has no live Workload; for elastic jobs only when the latest slice is evicted;
    /// otherwise when the latest Workload is not admitted. A suspended child is left alone.
    pub(super) async fn reconcile_child(
        &self,
        world: &mut World,
        rc: &Value,
        owner: &Value,
    ) -> Result<bool, KueueError> {
        if rc.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
            return Ok(false);
        }
        let live: Vec<Value> = Self::owned_workloads(world, owner).into_iter().filter(|w| !finished(w)).collect();
        let suspend = match live.last() {
            None => true,
            Some(latest) if self.is_elastic(rc) || self.is_elastic(owner) => evicted(latest),
            Some(latest) => !admitted(latest),
        };
        if suspend {
            let rc2 = self.patch(world, Kind::RayCluster, rc, json!({"spec": {"suspend": true}}), false, true).await?;
            self.event(
                Kind::RayCluster,
                &rc2,
                EventType::Normal,
                "Suspended",
                "Suspended",
                "Kueue managed child job suspended".into(),
            )
            .await;
        }
        Ok(false)
    }

    /// PR 11264's `unsuspendAdmittedChildren`: once the latest slice is admitted and covers
    /// every child's pods (the race guard), suspended children are unsuspended.
    pub(super) async fn unsuspend_admitted_children(
        &self,
        world: &mut World,
        rs: &Value,
        cached_workloads: &[Value],
    ) -> Result<(), KueueError> {
        if rs.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) || deleting(rs) {
            return Ok(());
        }
        if label(rs, QUEUE_NAME_LABEL).is_none() {
            return Ok(());
        }
        // Slices seen at the start of the reconcile, with their state as written since.
        let live: Vec<Value> = cached_workloads
            .iter()
            .map(|w| world.get(Kind::Workload, &key_of(w)).cloned().unwrap_or_else(|| w.clone()))
            .filter(|w| !finished(w))
            .collect();
        let Some(latest) = live.last() else { return Ok(()) };
        let early = self.config.defective(KueueDefect::UnsuspendBeforeSliceAdmitted);
        if !admitted(latest) && !early {
            return Ok(());
        }
        let children: Vec<Value> = Self::children(world, rs).into_iter().cloned().collect();
        if !early && !self.config.defective(KueueDefect::NoRaceGuard) {
            let mut required: BTreeMap<String, i64> = BTreeMap::new();
            for c in &children {
                for p in podsets::ray_cluster_pod_sets(c.get("spec").unwrap_or(&Value::Null)) {
                    *required.entry(p.name).or_insert(0) += p.count;
                }
            }
            let covered = counts(&workload_pod_sets(latest));
            if required.iter().any(|(name, need)| covered.get(name).copied().unwrap_or(0) < *need) {
                return Ok(());
            }
        }
        for c in children {
            if c.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
                self.patch(world, Kind::RayCluster, &c, json!({"spec": {"suspend": false}}), false, false).await?;
            }
        }
        Ok(())
    }
}
