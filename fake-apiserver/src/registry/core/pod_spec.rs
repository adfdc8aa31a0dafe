//! PodSpec and PodTemplateSpec: their defaults (`pkg/apis/core/v1/defaults.go`) and their
//! validation (`ValidatePodSpec`, `ValidatePodTemplateSpec`, `validatePodMetadataAndSpec`,
//! `ValidatePodCreate` of `pkg/apis/core/validation/validation.go` at v1.37.2), shared by pods
//! and every workload that carries a pod template. Each family of rules lives in a file of its
//! own beside this one (`pod_containers`, `pod_probes`, `pod_resources`, `pod_volumes`,
//! `pod_dns`, `pod_affinity`, `pod_topology`, `pod_security`, `pod_os`, `pod_annotations`);
//! this file calls them in upstream's order.

use super::pod_affinity::{affinity, label_name};
use super::pod_annotations::{apparmor_annotations_match, pod_specific_annotations, seccomp_annotations_match};
use super::pod_containers::{
    ContainerContext, containers, containers_only_for_pod, ephemeral_containers, init_containers,
};
use super::pod_dns::{dns_config, dns_policy, host_aliases, hostname_override};
use super::pod_os::pod_os;
use super::pod_resources::pod_resources;
use super::pod_security::{SysctlOptions, host_users, pod_security_context, share_process_namespace};
use super::pod_topology::topology_spread;
use super::pod_volumes::volumes;
use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use apimachinery::validation::{dns1123_label_errors, dns1123_subdomain_errors, label_key_errors, label_value_errors};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// What differs between a pod's spec and a template's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpecOf {
    /// A Pod: resources limits are copied to absent requests, images are required.
    Pod,
    /// A pod template of a workload.
    Template,
}

fn set_default(m: &mut Map<String, Value>, key: &str, value: Value) {
    match m.get(key) {
        None | Some(Value::Null) => {
            m.insert(key.to_string(), value);
        }
        Some(Value::String(s)) if s.is_empty() => {
            m.insert(key.to_string(), value);
        }
        _ => {}
    }
}

fn items_mut<'a>(m: &'a mut Map<String, Value>, key: &str) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    m.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_object_mut)
}

/// `SetDefaults_Probe` and its handler's defaults.
fn default_probe(p: &mut Map<String, Value>) {
    // Upstream treats 0 as unset here.
    for (key, value) in [("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1), ("failureThreshold", 3)]
    {
        if p.get(key).and_then(Value::as_i64).unwrap_or(0) == 0 {
            p.insert(key.into(), json!(value));
        }
    }
    default_http_get(p);
}

/// `SetDefaults_HTTPGetAction` of a probe's or hook's `httpGet`.
fn default_http_get(handler: &mut Map<String, Value>) {
    if let Some(h) = handler.get_mut("httpGet").and_then(Value::as_object_mut) {
        set_default(h, "path", json!("/"));
        set_default(h, "scheme", json!("HTTP"));
    }
}

/// The image pull policy of an image with no policy: `Always` for `:latest` or no tag.
fn pull_policy(image: &str) -> &'static str {
    let name = image.rsplit('/').next().unwrap_or(image);
    let without_digest = name.split('@').next().unwrap_or(name);
    match without_digest.split_once(':') {
        _ if name.contains('@') => "IfNotPresent",
        Some((_, tag)) if tag != "latest" => "IfNotPresent",
        _ => "Always",
    }
}

fn default_container(c: &mut Map<String, Value>, of: SpecOf) {
    set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
    set_default(c, "terminationMessagePolicy", json!("File"));
    let image = c.get("image").and_then(Value::as_str).unwrap_or_default().to_string();
    set_default(c, "imagePullPolicy", json!(pull_policy(&image)));
    for p in items_mut(c, "ports") {
        set_default(p, "protocol", json!("TCP"));
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe).and_then(Value::as_object_mut) {
            default_probe(p);
        }
    }
    if let Some(lc) = c.get_mut("lifecycle").and_then(Value::as_object_mut) {
        // dropContainerStopSignals: ContainerStopSignals is alpha (off) in 1.37.
        lc.remove("stopSignal");
        for hook in ["postStart", "preStop"] {
            if let Some(h) = lc.get_mut(hook).and_then(Value::as_object_mut) {
                default_http_get(h);
            }
        }
    }
    for e in items_mut(c, "env") {
        if let Some(fr) = e.get_mut("valueFrom").and_then(|v| v.get_mut("fieldRef")).and_then(Value::as_object_mut) {
            set_default(fr, "apiVersion", json!("v1"));
        }
    }
    if of == SpecOf::Pod
        && let Some(res) = c.get_mut("resources").and_then(Value::as_object_mut)
        && let Some(Value::Object(limits)) = res.get("limits").cloned()
    {
        let requests = res.entry("requests").or_insert_with(|| json!({}));
        if !requests.is_object() {
            *requests = json!({});
        }
        if let Some(r) = requests.as_object_mut() {
            for (k, v) in limits {
                r.entry(k).or_insert(v);
            }
        }
    }
}

/// `SetDefaults_PodSpec` (and its containers and volumes).
pub(crate) fn default_pod_spec(spec: &mut Value, of: SpecOf) {
    let Some(s) = spec.as_object_mut() else { return };
    // `serviceAccount` is the deprecated alias of `serviceAccountName`, kept in sync (the
    // latter wins).
    let name = s.get("serviceAccountName").and_then(Value::as_str).filter(|n| !n.is_empty());
    let alias = s.get("serviceAccount").and_then(Value::as_str).filter(|n| !n.is_empty());
    if let Some(account) = name.or(alias).map(str::to_string) {
        s.insert("serviceAccountName".into(), json!(account));
        s.insert("serviceAccount".into(), json!(account));
    }
    set_default(s, "dnsPolicy", json!("ClusterFirst"));
    set_default(s, "restartPolicy", json!("Always"));
    set_default(s, "terminationGracePeriodSeconds", json!(30));
    set_default(s, "schedulerName", json!("default-scheduler"));
    if !s.get("securityContext").is_some_and(Value::is_object) {
        s.insert("securityContext".into(), json!({}));
    }
    if of == SpecOf::Pod {
        set_default(s, "enableServiceLinks", json!(true));
        // SetDefaults_Pod: a negative grace period means "at once", which is 1 second.
        if s.get("terminationGracePeriodSeconds").and_then(Value::as_i64).is_some_and(|g| g < 0) {
            s.insert("terminationGracePeriodSeconds".into(), json!(1));
        }
    }
    // SetDefaults_Pod (not the template's): on the host network hostPort defaults to containerPort.
    let host_network = of == SpecOf::Pod && s.get("hostNetwork").and_then(Value::as_bool) == Some(true);
    for key in ["containers", "initContainers"] {
        for c in items_mut(s, key) {
            default_container(c, of);
            if host_network {
                for p in items_mut(c, "ports") {
                    if p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0
                        && let Some(cp) = p.get("containerPort").cloned()
                    {
                        p.insert("hostPort".into(), cp);
                    }
                }
            }
        }
    }
    for v in items_mut(s, "volumes") {
        // SetDefaults_Volume: a volume without a source is an emptyDir.
        if !VOLUME_SOURCES.iter().any(|k| v.get(*k).is_some_and(|x| !x.is_null())) {
            v.insert("emptyDir".into(), json!({}));
        }
        for (source, mode) in [("configMap", true), ("secret", true), ("downwardAPI", true), ("projected", true)] {
            if let Some(src) = v.get_mut(source).and_then(Value::as_object_mut)
                && mode
            {
                set_default(src, "defaultMode", json!(420));
            }
        }
        if let Some(hp) = v.get_mut("hostPath").and_then(Value::as_object_mut) {
            set_default(hp, "type", json!(""));
        }
        if let Some(image) = v.get_mut("image").and_then(Value::as_object_mut) {
            let reference = image.get("reference").and_then(Value::as_str).unwrap_or_default().to_string();
            set_default(image, "pullPolicy", json!(pull_policy(&reference)));
        }
        // SetDefaults_ObjectFieldSelector: the downward API's field references default to v1.
        let default_files = |d: &mut Map<String, Value>| {
            for file in items_mut(d, "items") {
                if let Some(fr) = file.get_mut("fieldRef").and_then(Value::as_object_mut) {
                    set_default(fr, "apiVersion", json!("v1"));
                }
            }
        };
        if let Some(d) = v.get_mut("downwardAPI").and_then(Value::as_object_mut) {
            default_files(d);
        }
        if let Some(p) = v.get_mut("projected").and_then(Value::as_object_mut) {
            for source in items_mut(p, "sources") {
                if let Some(d) = source.get_mut("downwardAPI").and_then(Value::as_object_mut) {
                    default_files(d);
                }
            }
        }
    }
}

/// `SetDefaults_PodTemplateSpec` for a workload's `spec.template`.
pub(crate) fn default_template(workload: &mut Value) {
    if let Some(spec) = workload.get_mut("spec").and_then(|s| s.get_mut("template")).and_then(|t| t.get_mut("spec")) {
        default_pod_spec(spec, SpecOf::Template);
    }
}

const RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

/// The string at `key` ("" when absent or not a string).
pub(super) fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The array at `key` (empty when absent).
pub(super) fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// `IsValidPortName`: the messages of a port name (IANA_SVC_NAME).
pub(crate) fn port_name_errors(name: &str) -> Vec<&'static str> {
    let mut errs = Vec::new();
    if name.len() > 15 {
        errs.push("must be no more than 15 characters");
    }
    if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    }
    if !name.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)");
    }
    if name.contains("--") {
        errs.push("must not contain consecutive hyphens");
    }
    if name.starts_with('-') || name.ends_with('-') {
        errs.push("must not begin or end with a hyphen");
    }
    errs
}

/// `ValidateLabels` on a map of strings at `path` (node selectors, selectors).
pub(crate) fn labels_at(out: &mut Vec<StatusCause>, map: Option<&Value>, path: &Path) {
    let Some(Value::Object(m)) = map else { return };
    for (k, v) in m {
        for msg in label_key_errors(k) {
            out.push(field::invalid(path, k.as_str(), &msg));
        }
        let v = v.as_str().unwrap_or_default();
        for msg in label_value_errors(v) {
            out.push(field::invalid(path, v, &msg));
        }
    }
}

/// `ValidateDNS1123Label` at `path`.
pub(super) fn dns_label(out: &mut Vec<StatusCause>, path: &Path, value: &str) {
    for msg in dns1123_label_errors(value) {
        out.push(field::invalid(path, value, &msg));
    }
}

/// `ValidateDNS1123Subdomain` (and the `NameIsDNSSubdomain` name checks) at `path`.
pub(super) fn dns_subdomain(out: &mut Vec<StatusCause>, path: &Path, value: &str) {
    for msg in dns1123_subdomain_errors(value) {
        out.push(field::invalid(path, value, &msg));
    }
}

/// `validateTolerations` (v1.37.2): the key, an empty key only with `Exists`, `tolerationSeconds`
/// only with `NoExecute`, then the operator and value (both reported at `operator`, as upstream
/// does; `Lt`/`Gt` need the alpha TaintTolerationComparisonOperators gate), then the effect.
pub(super) fn tolerations(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) {
    for (i, t) in list(spec, "tolerations").iter().enumerate() {
        let at = path.index(i);
        let key = s(t, "key");
        if !key.is_empty() {
            for msg in label_key_errors(key) {
                out.push(field::invalid(&at.child("key"), key, &msg));
            }
        }
        let op = s(t, "operator");
        if key.is_empty() && op != "Exists" {
            out.push(field::invalid(
                &at.child("operator"),
                op,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        let effect = s(t, "effect");
        if t.get("tolerationSeconds").is_some_and(|v| !v.is_null()) && effect != "NoExecute" {
            out.push(field::invalid(
                &at.child("effect"),
                effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        let value = s(t, "value");
        match op {
            "" | "Equal" => {
                let errors = label_value_errors(value);
                if !errors.is_empty() {
                    out.push(field::invalid(&at.child("operator"), value, &errors.join(";")));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    out.push(field::invalid(
                        &at.child("operator"),
                        value,
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            "Lt" | "Gt" => out.push(field::not_supported(&at.child("operator"), op, &["Equal", "Exists", "Lt", "Gt"])),
            other => out.push(field::not_supported(&at.child("operator"), other, &["Equal", "Exists"])),
        }
        if !effect.is_empty() && !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect) {
            out.push(field::not_supported(
                &at.child("effect"),
                effect,
                &["NoExecute", "NoSchedule", "PreferNoSchedule"],
            ));
        }
    }
}

/// What the validation of one spec depends on besides the spec (`PodValidationOptions`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SpecOptions {
    /// A Pod rather than a template (`ResourceIsPod`).
    pub of: SpecOf,
    /// The sysctl rules an update of an existing pod is held to.
    pub sysctls: SysctlOptions,
}

impl SpecOptions {
    /// The options of a new object.
    pub(crate) fn new(of: SpecOf) -> Self {
        SpecOptions { of, sysctls: SysctlOptions::default() }
    }
}

/// `validatePodResourceClaims`: names set, unique, DNS labels; exactly one source, each a
/// valid name.
fn resource_claims(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) {
    let mut names = BTreeSet::new();
    for (i, c) in list(spec, "resourceClaims").iter().enumerate() {
        let at = path.index(i);
        let name = s(c, "name");
        if name.is_empty() {
            out.push(field::required(&at.child("name"), ""));
        } else if names.contains(name) {
            out.push(field::duplicate(&at.child("name"), name));
        } else {
            dns_label(out, &at.child("name"), name);
            names.insert(name);
        }
        let by_name = c.get("resourceClaimName").filter(|v| !v.is_null());
        let by_template = c.get("resourceClaimTemplateName").filter(|v| !v.is_null());
        match (by_name, by_template) {
            (Some(_), Some(_)) => out.push(field::invalid(
                &at,
                Bad::Raw(c.to_string()),
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
            )),
            (None, None) => out.push(field::invalid(
                &at,
                Bad::Raw(c.to_string()),
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
            )),
            _ => {}
        }
        for key in ["resourceClaimName", "resourceClaimTemplateName"] {
            if let Some(v) = c.get(key).filter(|v| !v.is_null()) {
                dns_subdomain(out, &at.child(key), v.as_str().unwrap_or_default());
            }
        }
    }
}

/// `validatePodHostNetworkDeps`: on the host network a port's hostPort is its containerPort (a
/// template may leave it 0: the pod's defaulting fills it in).
fn host_network_deps(out: &mut Vec<StatusCause>, spec: &Value, of: SpecOf, path: &Path) {
    if spec.get("hostNetwork").and_then(Value::as_bool) != Some(true) {
        return;
    }
    for (i, c) in list(spec, "containers").iter().enumerate() {
        for (j, p) in list(c, "ports").iter().enumerate() {
            let host = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            let container = p.get("containerPort").and_then(Value::as_i64).unwrap_or(0);
            if (of == SpecOf::Pod || host != 0) && host != container {
                let at = path.child("containers").index(i).child("ports").index(j).child("hostPort");
                out.push(field::invalid(&at, host, "must match `containerPort` when `hostNetwork` is true"));
            }
        }
    }
}

/// `validateRestartPolicy`.
fn restart_policy(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) {
    match s(spec, "restartPolicy") {
        "" => out.push(field::required(path, "")),
        p if !RESTART_POLICIES.contains(&p) => out.push(field::not_supported(path, p, RESTART_POLICIES)),
        _ => {}
    }
}

/// `ValidatePodSpec` at `path` (`spec` or `spec.template.spec`).
pub(crate) fn validate_pod_spec(spec: &Value, path: &Path, of: SpecOf) -> Vec<StatusCause> {
    validate_pod_spec_with(spec, path, SpecOptions::new(of))
}

/// `ValidatePodSpec` with the options of the request.
pub(crate) fn validate_pod_spec_with(spec: &Value, path: &Path, opts: SpecOptions) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let grace = spec.get("terminationGracePeriodSeconds").and_then(Value::as_i64);
    if grace.is_none() {
        out.push(field::required(&path.child("terminationGracePeriodSeconds"), ""));
    }
    let volume_names = volumes(&mut out, spec, &path.child("volumes"));
    let claim_names: BTreeSet<String> =
        list(spec, "resourceClaims").iter().map(|c| s(c, "name")).filter(|n| !n.is_empty()).map(String::from).collect();
    resource_claims(&mut out, spec, &path.child("resourceClaims"));
    let ctx = ContainerContext {
        volumes: &volume_names,
        claims: &claim_names,
        grace,
        os: spec.pointer("/os/name").and_then(Value::as_str),
    };
    containers(&mut out, spec, &ctx, &path.child("containers"));
    init_containers(&mut out, spec, &ctx, &path.child("initContainers"));
    ephemeral_containers(&mut out, spec, &ctx, &path.child("ephemeralContainers"));
    pod_resources(&mut out, spec, &claim_names, path);
    host_network_deps(&mut out, spec, opts.of, path);
    restart_policy(&mut out, spec, &path.child("restartPolicy"));
    dns_policy(&mut out, spec, &path.child("dnsPolicy"));
    labels_at(&mut out, spec.get("nodeSelector"), &path.child("nodeSelector"));
    if let Some(sc) = spec.get("securityContext").filter(|v| v.is_object()) {
        pod_security_context(&mut out, sc, spec, opts.sysctls, &path.child("securityContext"));
    }
    share_process_namespace(&mut out, spec, path);
    affinity(&mut out, spec, &path.child("affinity"));
    dns_config(&mut out, spec, &path.child("dnsConfig"));
    for (i, gate) in list(spec, "readinessGates").iter().enumerate() {
        label_name(&mut out, s(gate, "conditionType"), &path.child("readinessGates").index(i).child("conditionType"));
    }
    // `validateSchedulingGates`: each name a qualified name and once, reported at the item.
    let mut gates = BTreeSet::new();
    for (i, g) in list(spec, "schedulingGates").iter().enumerate() {
        let at = path.child("schedulingGates").index(i);
        let name = s(g, "name");
        for msg in label_key_errors(name) {
            out.push(field::invalid(&at, name, &msg));
        }
        if !gates.insert(name) {
            out.push(field::duplicate(&at, name));
        }
    }
    topology_spread(&mut out, spec, &path.child("topologySpreadConstraints"));
    host_users(&mut out, spec, path);
    hostname_override(&mut out, spec, path);
    for (key, value) in [("serviceAccountName", s(spec, "serviceAccountName")), ("nodeName", s(spec, "nodeName"))] {
        if !value.is_empty() {
            dns_subdomain(&mut out, &path.child(key), value);
        }
    }
    if let Some(n) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64)
        && !(1..=i64::from(i32::MAX)).contains(&n)
    {
        out.push(field::invalid(
            &path.child("activeDeadlineSeconds"),
            n,
            "must be between 1 and 2147483647, inclusive",
        ));
    }
    for key in ["hostname", "subdomain"] {
        let v = s(spec, key);
        if !v.is_empty() {
            dns_label(&mut out, &path.child(key), v);
        }
    }
    tolerations(&mut out, spec, &path.child("tolerations"));
    host_aliases(&mut out, spec, &path.child("hostAliases"));
    let pc = s(spec, "priorityClassName");
    if !pc.is_empty() {
        dns_subdomain(&mut out, &path.child("priorityClassName"), pc);
    }
    if let Some(rc) = spec.get("runtimeClassName").filter(|v| !v.is_null()) {
        dns_subdomain(&mut out, &path.child("runtimeClassName"), rc.as_str().unwrap_or_default());
    }
    if let Some(p) = spec.get("preemptionPolicy").filter(|v| !v.is_null()) {
        match p.as_str().unwrap_or_default() {
            "PreemptLowerPriority" | "Never" => {}
            "" => out.push(field::required(&path.child("preemptionPolicy"), "")),
            other => out.push(field::not_supported(
                &path.child("preemptionPolicy"),
                other,
                &["PreemptLowerPriority", "Never"],
            )),
        }
    }
    pod_os(&mut out, spec, path);
    out
}

/// `validatePodMetadataAndSpec` and the create-only rules of `ValidatePodCreate` for a pod
/// (`create`), or the part `ValidatePodUpdate` shares (`!create`). Object metadata is validated
/// by the caller.
pub(crate) fn validate_pod(pod: &Value, opts: SpecOptions, create: bool) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let meta = pod.get("metadata").unwrap_or(&Value::Null);
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    let spec_path = Path::root("spec");
    pod_specific_annotations(&mut out, meta, spec, &Path::root("metadata").child("annotations"));
    out.extend(validate_pod_spec_with(spec, &spec_path, opts));
    // A projected service account token needs a service account to speak for.
    if s(spec, "serviceAccountName").is_empty() {
        for (vi, v) in list(spec, "volumes").iter().enumerate() {
            let Some(projected) = v.get("projected").filter(|p| !p.is_null()) else { continue };
            for (si, source) in list(projected, "sources").iter().enumerate() {
                if source.get("serviceAccountToken").is_some_and(|t| !t.is_null()) {
                    let at = spec_path
                        .child("volumes")
                        .index(vi)
                        .child("projected")
                        .child("sources")
                        .index(si)
                        .child("serviceAccountToken");
                    out.push(field::forbidden(&at, "must not be specified when serviceAccountName is not set"));
                }
            }
        }
    }
    if let Some(g) = spec.get("terminationGracePeriodSeconds").and_then(Value::as_i64)
        && g < 0
    {
        out.push(field::invalid(
            &spec_path.child("terminationGracePeriodSeconds"),
            g,
            "must be greater than or equal to 0",
        ));
    }
    containers_only_for_pod(&mut out, spec, &spec_path);
    if create {
        if !list(spec, "ephemeralContainers").is_empty() {
            out.push(field::forbidden(&spec_path.child("ephemeralContainers"), "cannot be set on create"));
        }
        if !s(spec, "nodeName").is_empty() && !list(spec, "schedulingGates").is_empty() {
            out.push(field::forbidden(
                &spec_path.child("nodeName"),
                "cannot be set until all schedulingGates have been cleared",
            ));
        }
        seccomp_annotations_match(&mut out, meta, spec, &spec_path);
        apparmor_annotations_match(&mut out, meta, spec, &spec_path);
    }
    out
}

/// `ValidatePodTemplateSpec` of a workload: the template's labels, its pod annotations, its
/// spec, the annotations against the fields, and no ephemeral containers.
pub(crate) fn validate_template(template: &Value, path: &Path) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let meta = template.get("metadata").unwrap_or(&Value::Null);
    let spec = template.get("spec").unwrap_or(&Value::Null);
    labels_at(&mut out, meta.get("labels"), &path.child("labels"));
    pod_specific_annotations(&mut out, meta, spec, &path.child("annotations"));
    out.extend(validate_pod_spec(spec, &path.child("spec"), SpecOf::Template));
    seccomp_annotations_match(&mut out, meta, spec, &path.child("spec"));
    apparmor_annotations_match(&mut out, meta, spec, &path.child("spec"));
    if !list(spec, "ephemeralContainers").is_empty() {
        out.push(field::forbidden(
            &path.child("spec").child("ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    out
}
