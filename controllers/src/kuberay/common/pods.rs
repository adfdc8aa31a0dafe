//! The pods and services KubeRay makes for a RayCluster (`common/pod.go`, `common/service.go`,
//! `utils.PodName`, `utils.GenerateHeadServiceName`).

use crate::crds::{RayCluster, WorkerGroupSpec};
use crate::kuberay::*;
use k8s_openapi::api::core::v1::{Container, EnvVar, Pod, PodTemplateSpec, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use serde_json::json;

/// Name prefixes are cut to 50 characters so the generated suffix fits (`utils.PodName`).
const MAX_PREFIX: usize = 50;

/// The controller owner reference KubeRay puts on everything it makes.
pub(crate) fn owner_reference(rc: &RayCluster) -> OwnerReference {
    OwnerReference {
        api_version: "ray.io/v1".into(),
        kind: "RayCluster".into(),
        name: rc.name_any(),
        uid: rc.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// `<cluster>-head-svc`, or `headGroupSpec.headService.metadata.name` when set.
pub(crate) fn head_service_name(rc: &RayCluster) -> String {
    rc.spec
        .head_group_spec
        .head_service
        .as_ref()
        .and_then(|s| s.pointer("/metadata/name"))
        .and_then(|n| n.as_str())
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| format!("{}-head-svc", rc.name_any()))
}

fn prefix(s: &str) -> String {
    s.chars().take(MAX_PREFIX).collect::<String>().to_lowercase()
}

fn ray_labels(rc: &RayCluster, node_type: &str, group: &str, template: &PodTemplateSpec) -> BTreeMap<String, String> {
    let cluster = rc.name_any();
    let mut labels = template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default();
    // User labels may override these two ...
    labels.entry("app.kubernetes.io/name".into()).or_insert_with(|| "kuberay".into());
    labels.entry("app.kubernetes.io/created-by".into()).or_insert_with(|| "kuberay-operator".into());
    // ... and never these.
    labels.insert(RAY_ID_LABEL.into(), identifier(&cluster, node_type));
    labels.insert(RAY_CLUSTER_LABEL.into(), cluster);
    labels.insert(RAY_NODE_TYPE_LABEL.into(), node_type.into());
    labels.insert(RAY_GROUP_LABEL.into(), group.into());
    labels.insert(RAY_IS_RAY_NODE_LABEL.into(), "yes".into());
    // Pods of a RayService's cluster are Serve endpoints: a worker's readiness probe checks its
    // proxy, so it is labelled serving from the start; the head starts unlabelled-serving and
    // the RayService controller flips it from the proxy's health (`BuildPod`).
    if created_by(rc) == "RayService" {
        let serving = if node_type == "head" { "false" } else { "true" };
        labels.insert(RAY_SERVE_LABEL.into(), serving.into());
    }
    labels
}

/// The CRD a cluster was made for (`RayCluster`, `RayJob`, `RayService`), from its
/// `ray.io/originated-from-crd` label.
pub(crate) fn created_by(rc: &RayCluster) -> &str {
    rc.labels().get(RAY_ORIGINATED_FROM_CRD_LABEL).map(String::as_str).unwrap_or("RayCluster")
}

/// The head container's port named `serve`, else 8000 (`GetServePort`).
pub(crate) fn serve_port(spec: &crate::crds::RayClusterSpec) -> i32 {
    spec.head_group_spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.ports.as_ref())
        .and_then(|ps| ps.iter().find(|p| p.name.as_deref() == Some("serve")))
        .map(|p| p.container_port)
        .unwrap_or(8000)
}

/// The head service's ports by name (`getServicePorts`): the head container's ports (an
/// unnamed one is `<port>-port`), or KubeRay's defaults when it names none, and `metrics`.
pub(crate) fn service_ports(spec: &crate::crds::RayClusterSpec) -> BTreeMap<String, i32> {
    let mut ports: BTreeMap<String, i32> = BTreeMap::new();
    let head = spec.head_group_spec.template.spec.as_ref().and_then(|s| s.containers.first());
    for p in head.and_then(|c| c.ports.as_ref()).into_iter().flatten() {
        let name = p.name.clone().unwrap_or_else(|| format!("{}-port", p.container_port));
        ports.insert(name, p.container_port);
    }
    if ports.is_empty() {
        ports.extend([
            ("client".to_string(), 10001),
            ("gcs-server".to_string(), 6379),
            ("dashboard".to_string(), 8265),
            ("metrics".to_string(), 8080),
            ("serve".to_string(), 8000),
        ]);
    }
    ports.entry("metrics".into()).or_insert(8080);
    ports
}

fn ray_start_command(head: bool, params: Option<&BTreeMap<String, String>>, head_address: &str) -> String {
    let mut cmd =
        if head { "ray start --head".to_string() } else { format!("ray start --address={head_address}:6379") };
    let mut args: BTreeMap<String, String> = params.cloned().unwrap_or_default();
    if head {
        args.entry("dashboard-host".into()).or_insert_with(|| "0.0.0.0".into());
    }
    args.entry("metrics-export-port".into()).or_insert_with(|| "8080".into());
    args.entry("block".into()).or_insert_with(|| "true".into());
    for (k, v) in args {
        if v == "true" && k == "block" {
            cmd.push_str(" --block");
        } else {
            cmd.push_str(&format!(" --{k}={v}"));
        }
    }
    cmd
}

fn env(name: &str, value: &str) -> EnvVar {
    EnvVar { name: name.into(), value: Some(value.into()), value_from: None }
}

fn env_field(name: &str, path: &str) -> EnvVar {
    serde_json::from_value(json!({"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}))
        .unwrap_or_else(|_| env(name, ""))
}

/// Adds what KubeRay injects into the Ray container (index 0): the environment rows can look
/// for and, when the user gave no command, `/bin/bash -lc -- "ulimit -n 65536; ray start ..."`.
fn inject_ray_container(c: &mut Container, rc: &RayCluster, head: bool, start: String, cfg: &KubeRayConfig) {
    let svc = head_service_name(rc);
    let ns = rc.namespace().unwrap_or_else(|| "default".into());
    let fqdn = format!("{svc}.{ns}.svc.cluster.local");
    let mut vars = vec![
        env_field("RAY_CLUSTER_NAME", &format!("metadata.labels['{RAY_CLUSTER_LABEL}']")),
        env_field("RAY_CLOUD_INSTANCE_ID", "metadata.name"),
        env_field("RAY_NODE_TYPE_NAME", &format!("metadata.labels['{RAY_GROUP_LABEL}']")),
        env("KUBERAY_GEN_RAY_START_CMD", &start),
        env("RAY_USAGE_STATS_KUBERAY_IN_USE", "1"),
        env(
            "RAY_USAGE_STATS_EXTRA_TAGS",
            &format!("kuberay_version={};kuberay_crd={}", cfg.kuberay_version, created_by(rc)),
        ),
        env("RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "1"),
    ];
    if head {
        vars.push(env("RAY_ADDRESS", "127.0.0.1:6379"));
    } else {
        vars.push(env("FQ_RAY_IP", &fqdn));
        vars.push(env("RAY_IP", &svc));
        vars.push(env("RAY_ADDRESS", &format!("{fqdn}:6379")));
    }
    let existing = c.env.get_or_insert_with(Vec::new);
    for v in vars {
        if !existing.iter().any(|e| e.name == v.name) {
            existing.push(v);
        }
    }
    if c.command.as_ref().is_none_or(|c| c.is_empty()) {
        c.command = Some(vec!["/bin/bash".into(), "-lc".into(), "--".into()]);
        c.args = Some(vec![format!("ulimit -n 65536; {start}")]);
    }
}

fn build_pod(
    rc: &RayCluster,
    template: &PodTemplateSpec,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    name: Result<String, String>,
) -> Pod {
    let mut pod =
        Pod { metadata: template.metadata.clone().unwrap_or_default(), spec: template.spec.clone(), status: None };
    pod.metadata.namespace = rc.namespace();
    match name {
        Ok(fixed) => pod.metadata.name = Some(fixed),
        Err(generate) => {
            pod.metadata.name = None;
            pod.metadata.generate_name = Some(generate);
        }
    }
    pod.metadata.labels = Some(labels);
    pod.metadata.annotations = if annotations.is_empty() { None } else { Some(annotations) };
    pod.metadata.owner_references = Some(vec![owner_reference(rc)]);
    pod.metadata.resource_version = None;
    pod.metadata.uid = None;
    pod
}

/// The head pod, carrying the Recreate hash and the operator version.
pub(crate) fn head_pod(rc: &RayCluster, hash: &str, cfg: &KubeRayConfig) -> Pod {
    let template = &rc.spec.head_group_spec.template;
    let labels = ray_labels(rc, "head", "headgroup", template);
    let mut annotations = template.metadata.as_ref().and_then(|m| m.annotations.clone()).unwrap_or_default();
    annotations.insert(UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION.into(), hash.into());
    annotations.insert(KUBERAY_VERSION_ANNOTATION.into(), cfg.kuberay_version.clone());
    // `configureGCSFaultTolerance`: the head always says whether GCS fault tolerance is on.
    let ft = rc.annotations().get(RAY_FT_ENABLED_ANNOTATION).is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || rc.spec.extra.contains_key("gcsFaultToleranceOptions");
    annotations.insert(RAY_FT_ENABLED_ANNOTATION.into(), ft.to_string());
    let p = prefix(&rc.name_any());
    let name = if cfg.deterministic_head_pod_name { Ok(format!("{p}-head")) } else { Err(format!("{p}-head-")) };
    let mut pod = build_pod(rc, template, labels, annotations, name);
    let start = ray_start_command(true, rc.spec.head_group_spec.ray_start_params.as_ref(), "");
    if let Some(c) = pod.spec.as_mut().and_then(|s| s.containers.first_mut()) {
        inject_ray_container(c, rc, true, start, cfg);
    }
    if rc.spec.enable_in_tree_autoscaling == Some(true)
        && let Some(spec) = pod.spec.as_mut()
    {
        let image = spec.containers.first().and_then(|c| c.image.clone());
        spec.containers.push(autoscaler_container(rc, image));
    }
    pod
}

/// The Ray autoscaler sidecar KubeRay appends to the head pod of an autoscaled cluster, with
/// the Ray container's image and 500m / 512Mi requested and limited, which
/// `spec.autoscalerOptions.resources` and `.image` replace (`BuildAutoscalerContainer`,
/// `mergeAutoscalerOverrides`: https://github.com/ray-project/kuberay/blob/v1.7.0/ray-operator/controllers/ray/common/pod.go#L935).
/// It counts toward what the head pod needs from a node.
fn autoscaler_container(rc: &RayCluster, image: Option<String>) -> Container {
    let options = rc.spec.extra.get("autoscalerOptions");
    let default = json!({"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}});
    let resources = options.and_then(|o| o.get("resources")).cloned().unwrap_or(default);
    let image = options.and_then(|o| o.get("image")).and_then(|i| i.as_str()).map(str::to_string).or(image);
    let command =
        "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)";
    Container {
        name: "autoscaler".into(),
        image,
        image_pull_policy: Some("IfNotPresent".into()),
        command: Some(vec!["/bin/bash".into(), "-c".into(), "--".into()]),
        args: Some(vec![command.into()]),
        resources: serde_json::from_value(resources).ok(),
        env: Some(vec![
            env_field("RAY_CLUSTER_NAME", &format!("metadata.labels['{RAY_CLUSTER_LABEL}']")),
            env_field("RAY_CLUSTER_NAMESPACE", "metadata.namespace"),
            env_field("RAY_HEAD_POD_NAME", "metadata.name"),
            env("KUBERAY_CRD_VER", "v1"),
            env("KUBERAY_GEN_AUTOSCALER_START_CMD", command),
        ]),
        ..Default::default()
    }
}

/// Where a worker pod sits in its group under the `RayMultiHostIndexing` gate
/// (`DefaultWorkerPodTemplate`): every worker carries its replica's index; a worker of a
/// multi-host group (`numOfHosts > 1`) also carries its replica's name and its host index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReplicaIndex {
    /// `ray.io/worker-group-replica-index`: the lowest index no live replica uses.
    pub replica: usize,
    /// `ray.io/worker-group-replica-name` (multi-host only): `<group>-<5 random characters>`.
    pub name: Option<String>,
    /// `ray.io/replica-host-index` (multi-host only): 0 to numOfHosts-1.
    pub host: usize,
}

/// A worker pod of `group`; `index` is given when the `RayMultiHostIndexing` gate is on.
pub(crate) fn worker_pod(
    rc: &RayCluster,
    group: &WorkerGroupSpec,
    index: Option<&ReplicaIndex>,
    cfg: &KubeRayConfig,
) -> Pod {
    let template = &group.template;
    let mut labels = ray_labels(rc, "worker", &group.group_name, template);
    if let Some(index) = index {
        labels.insert(RAY_WORKER_REPLICA_INDEX_LABEL.into(), index.replica.to_string());
        if group.num_of_hosts.unwrap_or(1) > 1 {
            labels.insert(RAY_WORKER_REPLICA_NAME_LABEL.into(), index.name.clone().unwrap_or_default());
            labels.insert(RAY_HOST_INDEX_LABEL.into(), index.host.to_string());
        }
    }
    let annotations = template.metadata.as_ref().and_then(|m| m.annotations.clone()).unwrap_or_default();
    let name = Err(format!("{}-worker-", prefix(&format!("{}-{}", rc.name_any(), group.group_name))));
    let mut pod = build_pod(rc, template, labels, annotations, name);
    let ns = rc.namespace().unwrap_or_else(|| "default".into());
    let address = format!("{}.{ns}.svc.cluster.local", head_service_name(rc));
    let start = ray_start_command(false, group.ray_start_params.as_ref(), &address);
    if let Some(c) = pod.spec.as_mut().and_then(|s| s.containers.first_mut()) {
        inject_ray_container(c, rc, false, start, cfg);
    }
    pod
}

/// Labels that select a cluster's head service (`RayClusterHeadServiceListOptions`).
pub(crate) fn head_service_selector(rc: &RayCluster) -> String {
    let cluster = rc.name_any();
    format!("{RAY_CLUSTER_LABEL}={cluster},{RAY_NODE_TYPE_LABEL}=head,{RAY_ID_LABEL}={}", identifier(&cluster, "head"))
}

/// `utils.CheckLabel(utils.GenerateIdentifier(cluster, nodeType))`.
fn identifier(cluster: &str, node_type: &str) -> String {
    let id: String = format!("{cluster}-{node_type}").chars().take(63).collect();
    id.trim_end_matches(['-', '.', '_']).to_string()
}

/// Labels that select a cluster's headless worker service (`RayClusterHeadlessServiceListOptions`).
pub(crate) fn headless_service_selector(rc: &RayCluster) -> String {
    format!("{RAY_HEADLESS_WORKER_SERVICE_LABEL}={}", rc.name_any())
}

/// `<cluster>-headless`, the headless service for the peer traffic of multi-host worker groups
/// (`BuildHeadlessServiceForRayCluster`): it selects the cluster's workers, ready or not.
pub(crate) fn headless_service(rc: &RayCluster) -> Service {
    let cluster = rc.name_any();
    serde_json::from_value(json!({
        "metadata": {
            "name": format!("{cluster}-headless"),
            "namespace": rc.namespace(),
            "labels": {RAY_HEADLESS_WORKER_SERVICE_LABEL: cluster},
            "ownerReferences": [owner_reference(rc)],
        },
        "spec": {
            "clusterIP": "None",
            "selector": {RAY_CLUSTER_LABEL: cluster, RAY_NODE_TYPE_LABEL: "worker"},
            "type": "ClusterIP",
            "publishNotReadyAddresses": true,
        },
    }))
    .unwrap_or_default()
}

/// The head service: headless unless configured otherwise, ports from the head container's
/// named ports (or KubeRay's defaults), `metrics` always present, sorted by name.
pub(crate) fn head_service(rc: &RayCluster, cfg: &KubeRayConfig) -> Service {
    let cluster = rc.name_any();
    let ports = service_ports(&rc.spec);
    let mut labels = BTreeMap::from([
        (RAY_CLUSTER_LABEL.to_string(), cluster.clone()),
        (RAY_NODE_TYPE_LABEL.to_string(), "head".to_string()),
        (RAY_ID_LABEL.to_string(), format!("{cluster}-head")),
        ("app.kubernetes.io/name".to_string(), "kuberay".to_string()),
        ("app.kubernetes.io/created-by".to_string(), "kuberay-operator".to_string()),
    ]);
    if let Some(v) = rc
        .spec
        .head_group_spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.as_ref())
        .and_then(|l| l.get("app.kubernetes.io/name"))
    {
        labels.insert("app.kubernetes.io/name".into(), v.clone());
    }
    let service_type = rc.spec.head_group_spec.service_type.clone().unwrap_or_else(|| "ClusterIP".into());
    let headless = service_type == "ClusterIP" && !cfg.head_cluster_ip_service;
    let mut spec = json!({
        // `BuildServiceForHeadPod`: the selector is the service's own labels.
        "selector": labels,
        "type": service_type,
        "ports": ports.iter().map(|(n, p)| json!({"name": n, "port": p, "targetPort": p, "protocol": "TCP", "appProtocol": "tcp"})).collect::<Vec<_>>(),
    });
    if headless {
        spec["clusterIP"] = json!("None");
        spec["publishNotReadyAddresses"] = json!(true);
    }
    let annotations = rc.spec.head_service_annotations.clone().unwrap_or_default();
    serde_json::from_value(json!({
        "metadata": {
            "name": head_service_name(rc),
            "namespace": rc.namespace(),
            "labels": labels,
            "annotations": (!annotations.is_empty()).then_some(annotations),
            "ownerReferences": [owner_reference(rc)],
        },
        "spec": spec,
    }))
    .unwrap_or_default()
}

/// `<cluster>-serve-svc`, made only when the cluster asks for it with
/// `ray.io/enable-serve-service: "true"`; it selects every pod of the cluster.
pub(crate) fn serve_service(rc: &RayCluster) -> Service {
    let cluster = rc.name_any();
    serde_json::from_value(json!({
        "metadata": {
            "name": format!("{cluster}-serve-svc"),
            "namespace": rc.namespace(),
            "labels": {RAY_CLUSTER_LABEL: cluster, "ray.io/serve": format!("{cluster}-serve"),
                "app.kubernetes.io/name": "kuberay", "app.kubernetes.io/created-by": "kuberay-operator"},
            "ownerReferences": [owner_reference(rc)],
        },
        "spec": {
            "selector": {RAY_CLUSTER_LABEL: cluster},
            "type": "ClusterIP",
            "ports": [{"name": "serve", "port": 8000, "targetPort": 8000, "protocol": "TCP", "appProtocol": "tcp"}],
        },
    }))
    .unwrap_or_default()
}
