//! `reconcilePods`: the head, each worker group (single- and multi-host), Recreate upgrades,
//! and the pods that will not come back by themselves.

use super::*;

impl RayClusterReconciler {
    /// Deletes every pod matching `selector` with one delete-collection, unless all of them are
    /// already terminating (`deleteAllPods`).
    pub(super) async fn delete_all_pods(&self, rc: &RayCluster, selector: &str) -> Result<(), kube::Error> {
        let ns = rc.namespace().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        let pods = self.cache.pods.list(&self.client, &ns, selector).await?;
        if pods.iter().any(|p| p.metadata.deletion_timestamp.is_none()) {
            api.delete_collection(&DeleteParams::default(), &ListParams::default().labels(selector)).await?;
        }
        Ok(())
    }

    pub(super) async fn reconcile_pods(&self, rc: &RayCluster) -> Result<(), StepError> {
        let ns = rc.namespace().unwrap_or_default();
        let cluster = rc.name_any();
        let id = format!("{ns}/{cluster}");
        let cluster_sel = format!("{RAY_CLUSTER_LABEL}={cluster}");
        let hash = spec_hash_with(&rc.spec, &self.config);
        let gate = self.config.gate(KubeRayGate::RayClusterStatusConditions);
        let mut suspend = suspend_status(rc);
        if self.config.defective(Defect::NonAtomicSuspend)
            && suspend == SuspendStatus::Suspending
            && rc.spec.suspend != Some(true)
        {
            suspend = SuspendStatus::None;
        }
        // Suspending: every pod goes, in every pass until none is left.
        if suspend == SuspendStatus::Suspending || (!gate && rc.spec.suspend == Some(true)) {
            if let Err(e) = self.delete_all_pods(rc, &cluster_sel).await {
                let message = format!("Failed deleting Pods due to suspension for RayCluster {id}, {}", go_error(&e));
                self.event(rc, EventType::Warning, "FailedToDeletePodCollection", action::DELETE, message).await;
                return Err(StepError::replica("FailedDeleteAllPods", e));
            }
            let message = format!("Deleted Pods for RayCluster {id} due to suspension");
            self.event(rc, EventType::Normal, "DeletedPod", action::DELETE, message).await;
            return Ok(());
        }
        if gate && (suspend == SuspendStatus::Suspended || rc.spec.suspend == Some(true)) {
            // Suspended, or about to be: the status pass sets Suspending first.
            return Ok(());
        }

        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        if self.should_recreate_for_upgrade(rc, &hash).await {
            if self.config.defective(Defect::CreateDuringRecreate) {
                for p in self.cache.pods.list(&self.client, &ns, &cluster_sel).await.map_err(api_err("list pods"))? {
                    let _ = pods.delete(&p.name_any(), &DeleteParams::default()).await;
                }
                let _ = pods.create(&PostParams::default(), &head_pod(rc, &hash, &self.config)).await;
                return Ok(());
            }
            // Every pass that still finds the old head deletes (what is not yet terminating) and
            // says so again; no pod is created in such a pass.
            if let Err(e) = self.delete_all_pods(rc, &cluster_sel).await {
                let message = format!(
                    "Failed deleting Pods due to spec change with Recreate upgradeStrategy for RayCluster {id}, {}",
                    go_error(&e)
                );
                self.event(rc, EventType::Warning, "FailedToDeletePodCollection", action::DELETE, message).await;
                return Err(StepError::replica("FailedDeleteAllPods", e));
            }
            self.expectations.forget_cluster(&ns, &cluster);
            let message =
                format!("Deleted all Pods for RayCluster {id} due to spec change with Recreate upgradeStrategy");
            self.event(rc, EventType::Normal, "DeletedPod", action::DELETE, message).await;
            return Ok(());
        }

        let head_sel = format!("{cluster_sel},{RAY_NODE_TYPE_LABEL}=head");
        let head_pods = self.cache.pods.list(&self.client, &ns, &head_sel).await.map_err(api_err("list head pods"))?;
        let reads = PodReads { cache: &self.cache.pods, client: &self.client };
        if !self.expectations.satisfied(&reads, &ns, &cluster, HEAD_GROUP).await {
            tracing::info!(cluster = %id, "head expectations not satisfied; reconcile the head later");
        } else {
            match head_pods.len() {
                0 => {
                    let pinned = rc.annotations().get(DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION).map(String::as_str)
                        == Some("true")
                        && condition_true(rc.status.as_ref(), status::PROVISIONED);
                    if pinned {
                        // Not even the workers are reconciled in this pass.
                        return Ok(());
                    }
                    let pod = head_pod(rc, &hash, &self.config);
                    match pods.create(&PostParams::default(), &pod).await {
                        Ok(created) => {
                            self.expectations.expect(
                                &ns,
                                &cluster,
                                HEAD_GROUP,
                                &created.name_any(),
                                ScaleAction::Create,
                            );
                            let message = format!("Created head Pod {ns}/{}", created.name_any());
                            self.event(rc, EventType::Normal, "CreatedHeadPod", action::CREATE, message).await;
                        }
                        Err(e) => {
                            // The pod has only a generateName, so Go prints an empty name.
                            let name = pod.metadata.name.clone().unwrap_or_default();
                            let message = format!("Failed to create head Pod {ns}/{name}, {}", go_error(&e));
                            self.event(rc, EventType::Warning, "FailedToCreateHeadPod", action::CREATE, message).await;
                            return Err(StepError::replica("FailedCreateHeadPod", e));
                        }
                    }
                }
                1 => {
                    let head = &head_pods[0];
                    if let Some(reason) = should_delete_pod(head, "head", &self.config) {
                        let name = head.name_any();
                        if let Err(e) = pods.delete(&name, &DeleteParams::default()).await {
                            let message =
                                format!("Failed deleting head Pod {ns}/{name}; {}, {}", pod_state(head), go_error(&e));
                            self.event(rc, EventType::Warning, "FailedToDeleteHeadPod", action::DELETE, message).await;
                            return Err(StepError::replica("FailedDeleteHeadPod", e));
                        }
                        self.expectations.expect(&ns, &cluster, HEAD_GROUP, &name, ScaleAction::Delete);
                        let message = format!("Deleted head Pod {ns}/{name}; {}", pod_state(head));
                        self.event(rc, EventType::Normal, "DeletedHeadPod", action::DELETE, message).await;
                        return Err(StepError::plain(reason));
                    }
                }
                _ if self.config.defective(Defect::ExtraHeadPodsDeleted) => {
                    for extra in &head_pods[1..] {
                        let _ = pods.delete(&extra.name_any(), &DeleteParams::default()).await;
                    }
                }
                n => {
                    // Someone made a head by hand: KubeRay refuses to go on, and deletes nothing.
                    let names: Vec<String> = head_pods.iter().map(|p| p.name_any()).collect();
                    return Err(StepError::plain(format!(
                        "{n} head pods found {}. Please delete extra head pods",
                        go_strings(&names)
                    )));
                }
            }
        }

        for group in &rc.spec.worker_group_specs {
            if !self.expectations.satisfied(&reads, &ns, &cluster, &group.group_name).await {
                tracing::info!(cluster = %id, group = %group.group_name, "group expectations not satisfied; reconcile later");
                continue;
            }
            self.reconcile_group(rc, &pods, group).await?;
        }
        Ok(())
    }

    pub(super) async fn reconcile_group(
        &self,
        rc: &RayCluster,
        pods: &Api<Pod>,
        group: &WorkerGroupSpec,
    ) -> Result<(), StepError> {
        let ns = rc.namespace().unwrap_or_default();
        let cluster = rc.name_any();
        let id = format!("{ns}/{cluster}");
        let name = &group.group_name;
        let group_sel = format!("{RAY_CLUSTER_LABEL}={cluster},{RAY_GROUP_LABEL}={name}");
        let desired = status::desired_replicas(group).max(0) as usize;
        let worker_pods =
            self.cache.pods.list(&self.client, &ns, &group_sel).await.map_err(api_err("list worker pods"))?;

        if group.suspend == Some(true) {
            if let Err(e) = self.delete_all_pods(rc, &group_sel).await {
                let message = format!(
                    "Failed deleting worker Pods for suspended group {name} in RayCluster {id}, {}",
                    go_error(&e)
                );
                self.event(rc, EventType::Warning, "FailedToDeleteWorkerPodCollection", action::DELETE, message).await;
                return Err(StepError::replica("FailedDeleteWorkerPod", e));
            }
            let message = format!("Deleted all pods for suspended worker group {name} in RayCluster {id}");
            self.event(rc, EventType::Normal, "DeletedWorkerPod", action::DELETE, message).await;
            return Ok(());
        }

        let indexing = self.config.gate(KubeRayGate::RayMultiHostIndexing);
        if indexing && group.num_of_hosts.unwrap_or(1) > 1 {
            return self.reconcile_multi_host_group(rc, pods, group, worker_pods).await;
        }

        // Unhealthy workers go first; nothing is created in a pass that deleted one.
        let mut deleted = BTreeSet::new();
        for p in &worker_pods {
            if should_delete_pod(p, "worker", &self.config).is_none() {
                continue;
            }
            let pod_name = p.name_any();
            deleted.insert(pod_name.clone());
            if let Err(e) = pods.delete(&pod_name, &DeleteParams::default()).await {
                let message = format!("Failed deleting worker Pod {ns}/{pod_name}; {}, {}", pod_state(p), go_error(&e));
                self.event(rc, EventType::Warning, "FailedToDeleteWorkerPod", action::DELETE, message).await;
                return Err(StepError::replica("FailedDeleteWorkerPod", e));
            }
            self.expectations.expect(&ns, &cluster, name, &pod_name, ScaleAction::Delete);
            let message = format!("Deleted worker Pod {ns}/{pod_name}; {}", pod_state(p));
            self.event(rc, EventType::Normal, "DeletedWorkerPod", action::DELETE, message).await;
        }
        if !deleted.is_empty() {
            return Err(StepError::plain(format!("delete {} unhealthy worker Pods", deleted.len())));
        }

        // Named pods always go, whatever replicas says; the list is left for the autoscaler to clear.
        for victim in group.scale_strategy.iter().flat_map(|s| s.workers_to_delete.iter()) {
            match pods.delete(victim, &DeleteParams::default()).await {
                Ok(_) => {
                    self.expectations.expect(&ns, &cluster, name, victim, ScaleAction::Delete);
                    deleted.insert(victim.clone());
                    let message = format!("Deleted pod {ns}/{victim}");
                    self.event(rc, EventType::Normal, "DeletedWorkerPod", action::DELETE, message).await;
                }
                Err(e) if is_not_found(&e) => {}
                Err(e) => {
                    let message = format!("Failed deleting pod {ns}/{victim}, {}", go_error(&e));
                    self.event(rc, EventType::Warning, "FailedToDeleteWorkerPod", action::DELETE, message).await;
                    return Err(StepError::replica("FailedDeleteWorkerPod", e));
                }
            }
        }
        let running: Vec<&Pod> = worker_pods.iter().filter(|p| !deleted.contains(&p.name_any())).collect();
        let mut used_indices: BTreeSet<usize> = BTreeSet::new();
        if indexing {
            used_indices.extend(running.iter().filter_map(|p| replica_index(p)));
        }
        if desired > running.len() {
            let mut next = 0usize;
            for _ in running.len()..desired {
                let index = indexing.then(|| {
                    while used_indices.contains(&next) {
                        next += 1;
                    }
                    used_indices.insert(next);
                    ReplicaIndex { replica: next, name: None, host: 0 }
                });
                self.create_worker(rc, pods, group, index.as_ref()).await?;
            }
        } else if desired < running.len() {
            let autoscaling = rc.spec.enable_in_tree_autoscaling == Some(true);
            if !autoscaling || self.config.random_pod_delete {
                for p in running.iter().take(running.len() - desired) {
                    let pod_name = p.name_any();
                    match pods.delete(&pod_name, &DeleteParams::default()).await {
                        Ok(_) => {}
                        Err(e) if is_not_found(&e) => {}
                        Err(e) => {
                            let message = format!("Failed deleting Pod {ns}/{pod_name}, {}", go_error(&e));
                            self.event(rc, EventType::Warning, "FailedToDeleteWorkerPod", action::DELETE, message)
                                .await;
                            return Err(StepError::replica("FailedDeleteWorkerPod", e));
                        }
                    }
                    self.expectations.expect(&ns, &cluster, name, &pod_name, ScaleAction::Delete);
                    let message = format!("Deleted Pod {ns}/{pod_name}");
                    self.event(rc, EventType::Normal, "DeletedWorkerPod", action::DELETE, message).await;
                }
            }
        }
        Ok(())
    }

    /// `createWorkerPod` / `createWorkerPodWithIndex`.
    pub(super) async fn create_worker(
        &self,
        rc: &RayCluster,
        pods: &Api<Pod>,
        group: &WorkerGroupSpec,
        index: Option<&ReplicaIndex>,
    ) -> Result<(), StepError> {
        let ns = rc.namespace().unwrap_or_default();
        let cluster = rc.name_any();
        let pod = worker_pod(rc, group, index, &self.config);
        match pods.create(&PostParams::default(), &pod).await {
            Ok(created) => {
                self.expectations.expect(&ns, &cluster, &group.group_name, &created.name_any(), ScaleAction::Create);
                let message = format!("Created worker Pod {ns}/{}", created.name_any());
                self.event(rc, EventType::Normal, "CreatedWorkerPod", action::CREATE, message).await;
                Ok(())
            }
            Err(e) => {
                let message = format!("Failed to create worker Pod for the cluster {ns}/{cluster}, {}", go_error(&e));
                self.event(rc, EventType::Warning, "FailedToCreateWorkerPod", action::CREATE, message).await;
                Err(StepError::replica("FailedCreateWorkerPod", e))
            }
        }
    }

    /// `deletePods`: deletes the pods of whole multi-host replicas, one event each.
    pub(super) async fn delete_replica_pods(
        &self,
        rc: &RayCluster,
        pods: &Api<Pod>,
        group: &str,
        victims: &[&Pod],
        reason: &str,
    ) -> Result<(), StepError> {
        let ns = rc.namespace().unwrap_or_default();
        for p in victims {
            let pod_name = p.name_any();
            match pods.delete(&pod_name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => continue,
                Err(e) => {
                    let message = format!(
                        "Failed deleting worker Pod {ns}/{pod_name} for group {group}; {}, {}",
                        pod_state(p),
                        go_error(&e)
                    );
                    self.event(rc, EventType::Warning, "FailedToDeleteWorkerPod", action::DELETE, message).await;
                    return Err(StepError::replica("FailedDeleteWorkerPod", e));
                }
            }
            self.expectations.expect(&ns, &rc.name_any(), group, &pod_name, ScaleAction::Delete);
            let message = format!("Deleted worker Pod {ns}/{pod_name} for group {group}: {reason}");
            self.event(rc, EventType::Normal, "DeletedWorkerPod", action::DELETE, message).await;
        }
        Ok(())
    }

    /// `utils.GenerateRayWorkerReplicaGroupName`: `<group>-<5 characters of apimachinery's
    /// random alphabet>`.
    pub(super) fn replica_name(&self, group: &str) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let mut state = self.random.lock();
        let suffix: String = (0..5)
            .map(|_| {
                // xorshift64*
                *state ^= *state >> 12;
                *state ^= *state << 25;
                *state ^= *state >> 27;
                let r = state.wrapping_mul(0x2545_F491_4F6C_DD1D);
                ALPHABET[(r >> 33) as usize % ALPHABET.len()] as char
            })
            .collect();
        format!("{group}-{suffix}")
    }

    /// `reconcileMultiHostWorkerGroup`: a group with `numOfHosts > 1` under the
    /// `RayMultiHostIndexing` gate lives and dies by whole replicas of `numOfHosts` pods that
    /// share a `ray.io/worker-group-replica-name`.
    pub(super) async fn reconcile_multi_host_group(
        &self,
        rc: &RayCluster,
        pods: &Api<Pod>,
        group: &WorkerGroupSpec,
        worker_pods: Vec<Pod>,
    ) -> Result<(), StepError> {
        let name = &group.group_name;
        let hosts = group.num_of_hosts.unwrap_or(1).max(1) as usize;
        let mut replicas: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
        for p in &worker_pods {
            if let Some(replica) = p.labels().get(RAY_WORKER_REPLICA_NAME_LABEL) {
                replicas.entry(replica.clone()).or_default().push(p);
            }
        }
        // A replica missing a host (one was deleted from outside) is taken down whole.
        if let Some((replica, members)) = replicas.iter().find(|(_, members)| members.len() < hosts) {
            self.delete_replica_pods(rc, pods, name, members, "cleanup of incomplete multi-host group").await?;
            return Err(StepError::plain(format!("cleaned up incomplete replica group {replica}, requeueing")));
        }
        // A replica with an unhealthy host is taken down whole; its replacement is created below.
        let mut deleted: BTreeSet<String> = BTreeSet::new();
        for p in &worker_pods {
            if deleted.contains(&p.name_any()) {
                continue;
            }
            let Some(reason) = should_delete_pod(p, "worker", &self.config) else { continue };
            let replica = p.labels().get(RAY_WORKER_REPLICA_NAME_LABEL).cloned().unwrap_or_default();
            let Some(members) = replicas.get(&replica) else { continue };
            self.delete_replica_pods(rc, pods, name, members, &reason).await?;
            deleted.extend(members.iter().map(|m| m.name_any()));
        }
        // The autoscaler names one pod; its whole replica goes.
        let named = group.scale_strategy.iter().flat_map(|s| s.workers_to_delete.iter()).collect::<Vec<_>>();
        if !named.is_empty() {
            let mut victims: BTreeMap<String, &Pod> = BTreeMap::new();
            for victim in named {
                if let Some(p) = worker_pods.iter().find(|p| &p.name_any() == victim) {
                    let replica = p.labels().get(RAY_WORKER_REPLICA_NAME_LABEL).cloned().unwrap_or_default();
                    for m in replicas.get(&replica).into_iter().flatten() {
                        victims.insert(m.name_any(), m);
                    }
                }
            }
            if !victims.is_empty() {
                let list: Vec<&Pod> = victims.values().copied().collect();
                self.delete_replica_pods(rc, pods, name, &list, "autoscaler scale-down request").await?;
                return Err(StepError::plain(format!(
                    "deleted {} worker Pods based on ScaleStrategy, requeueing",
                    list.len()
                )));
            }
        }
        let valid: Vec<(&String, &Vec<&Pod>)> =
            replicas.iter().filter(|(_, members)| members.iter().all(|m| !deleted.contains(&m.name_any()))).collect();
        let desired_pods = status::desired_replicas(group).max(0) as usize;
        if !desired_pods.is_multiple_of(hosts) {
            return Err(StepError::plain(format!(
                "desired worker pods ({desired_pods}) is not a multiple of NumOfHosts ({hosts}) for group {name}"
            )));
        }
        let desired = desired_pods / hosts;
        let mut used: BTreeSet<usize> =
            valid.iter().filter_map(|(_, members)| members.first().and_then(|p| replica_index(p))).collect();
        if desired > valid.len() {
            let mut next = 0usize;
            for _ in valid.len()..desired {
                while used.contains(&next) {
                    next += 1;
                }
                used.insert(next);
                let replica_name = self.replica_name(name);
                for host in 0..hosts {
                    let index = ReplicaIndex { replica: next, name: Some(replica_name.clone()), host };
                    self.create_worker(rc, pods, group, Some(&index)).await?;
                }
            }
        } else if desired < valid.len() {
            let autoscaling = rc.spec.enable_in_tree_autoscaling == Some(true);
            if !autoscaling || self.config.random_pod_delete {
                for (_, members) in valid.iter().take(valid.len() - desired) {
                    self.delete_replica_pods(rc, pods, name, members, "scaling down").await?;
                }
            }
        }
        Ok(())
    }

    /// `shouldRecreatePodsForUpgrade`: Recreate, a head pod, and a non-empty hash annotation that
    /// differs from the spec's. A head pod stamped by another operator version gets fresh
    /// annotations instead (an operator upgrade alone must not recreate pods).
    pub(super) async fn should_recreate_for_upgrade(&self, rc: &RayCluster, hash: &str) -> bool {
        let recreate = rc.spec.upgrade_strategy.as_ref().and_then(|u| u.type_.as_deref()) == Some("Recreate");
        if !recreate {
            return false;
        }
        let head_sel = format!("{RAY_CLUSTER_LABEL}={},{RAY_NODE_TYPE_LABEL}=head", rc.name_any());
        let head_pods = match self.cache.pods.list(&self.client, &rc.namespace().unwrap_or_default(), &head_sel).await {
            Ok(l) => l,
            Err(e) => {
                tracing::info!(error = %e, "failed to list head pods for the upgrade check");
                return false;
            }
        };
        let Some(head) = head_pods.first() else { return false };
        let annotations = head.annotations();
        let version = annotations.get(KUBERAY_VERSION_ANNOTATION).map(String::as_str).unwrap_or("");
        if !version.is_empty()
            && version != self.config.kuberay_version
            && !self.config.defective(Defect::NoVersionSkip)
        {
            let mut pod = head.clone();
            let a = pod.metadata.annotations.get_or_insert_with(BTreeMap::new);
            a.insert(UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION.into(), hash.into());
            a.insert(KUBERAY_VERSION_ANNOTATION.into(), self.config.kuberay_version.clone());
            let api: Api<Pod> = Api::namespaced(self.client.clone(), &rc.namespace().unwrap_or_default());
            if let Err(e) = api.replace(&head.name_any(), &PostParams::default(), &pod).await {
                tracing::info!(error = %e, pod = %head.name_any(), "failed to refresh the head pod's annotations");
            }
            return false;
        }
        let stamped = annotations.get(UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION).map(String::as_str).unwrap_or("");
        !stamped.is_empty() && stamped != hash
    }
}

/// Go's `%v` of a `[]string`: `[a b c]`.
pub(super) fn go_strings(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

/// Go's `%v` of a `metav1.Time` (`time.Time.String()` in UTC).
pub(super) fn go_time(t: Option<&Time>) -> String {
    match t {
        Some(t) => t.0.strftime("%Y-%m-%d %H:%M:%S +0000 UTC").to_string(),
        None => "0001-01-01 00:00:00 +0000 UTC".into(),
    }
}

/// Go's `%v` of a `*corev1.ContainerStateTerminated` (the generated `String()`, `nil` for nil).
pub(super) fn go_terminated(t: Option<&ContainerStateTerminated>) -> String {
    let Some(t) = t else { return "nil".into() };
    format!(
        "&ContainerStateTerminated{{ExitCode:{},Signal:{},Reason:{},Message:{},StartedAt:{},FinishedAt:{},ContainerID:{},}}",
        t.exit_code,
        t.signal.unwrap_or(0),
        t.reason.as_deref().unwrap_or(""),
        t.message.as_deref().unwrap_or(""),
        go_time(t.started_at.as_ref()),
        go_time(t.finished_at.as_ref()),
        t.container_id.as_deref().unwrap_or(""),
    )
}

/// `getRayContainerStateTerminated`: the Ray container (the first one) found by name among the
/// container statuses; none found counts as not terminated.
pub(super) fn ray_container_terminated(pod: &Pod) -> Option<&ContainerStateTerminated> {
    let name = pod.spec.as_ref()?.containers.first()?.name.as_str();
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == name)?
        .state
        .as_ref()?
        .terminated
        .as_ref()
}

pub(super) fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

pub(super) fn restart_policy(pod: &Pod) -> &str {
    pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()).unwrap_or("")
}

/// `; Pod status: ...; Pod restart policy: ...; Ray container terminated status: ...`, the tail of
/// KubeRay's messages about a deleted unhealthy pod.
pub(super) fn pod_state(pod: &Pod) -> String {
    format!(
        "Pod status: {}; Pod restart policy: {}; Ray container terminated status: {}",
        phase(pod),
        restart_policy(pod),
        go_terminated(ray_container_terminated(pod))
    )
}

/// `ray.io/worker-group-replica-index` of a worker, if it has a valid one.
pub(super) fn replica_index(pod: &Pod) -> Option<usize> {
    pod.labels().get(RAY_WORKER_REPLICA_INDEX_LABEL).and_then(|i| i.parse().ok())
}

/// `shouldDeletePod`: a pod that will not come back by itself, with the reason KubeRay gives.
/// Failed or Succeeded pods, whatever their restart policy; Running pods whose Ray container
/// terminated, only with `restartPolicy: Never` (Always and OnFailure are left to the kubelet).
pub(super) fn should_delete_pod(pod: &Pod, node_type: &str, cfg: &KubeRayConfig) -> Option<String> {
    let name = pod.name_any();
    let phase = phase(pod);
    if cfg.defective(Defect::TerminalPodKeptWithRestartAlways) && restart_policy(pod) == "Always" {
        return None;
    }
    if phase == "Failed" || phase == "Succeeded" {
        return Some(format!(
            "The {node_type} Pod {name} status is {phase} which is a terminal state. KubeRay will delete the Pod and create new Pods in the next reconciliation if necessary."
        ));
    }
    let terminated = ray_container_terminated(pod);
    if phase == "Running" && terminated.is_some() && restart_policy(pod) == "Never" {
        return Some(format!(
            "The Pod status of the {node_type} Pod {name} is {phase}, and the Ray container terminated status is {}. The container is unable to restart due to its restart policy Never, so KubeRay will delete it.",
            go_terminated(terminated)
        ));
    }
    None
}
