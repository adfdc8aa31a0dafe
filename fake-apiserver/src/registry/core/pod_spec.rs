//! PodSpec and PodTemplateSpec: their defaults (`pkg/apis/core/v1/defaults.go`) and their
//! validation (`ValidatePodSpec`, `ValidatePodTemplateSpec` of `pkg/apis/core/validation`),
//! shared by pods and every workload that carries a pod template.

use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use apimachinery::quantity::Quantity;
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
    set_default(p, "timeoutSeconds", json!(1));
    set_default(p, "periodSeconds", json!(10));
    set_default(p, "successThreshold", json!(1));
    set_default(p, "failureThreshold", json!(3));
    if let Some(h) = p.get_mut("httpGet").and_then(Value::as_object_mut) {
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
    set_default(s, "dnsPolicy", json!("ClusterFirst"));
    set_default(s, "restartPolicy", json!("Always"));
    set_default(s, "terminationGracePeriodSeconds", json!(30));
    set_default(s, "schedulerName", json!("default-scheduler"));
    if !s.get("securityContext").is_some_and(Value::is_object) {
        s.insert("securityContext".into(), json!({}));
    }
    if of == SpecOf::Pod {
        set_default(s, "enableServiceLinks", json!(true));
    }
    let host_network = s.get("hostNetwork").and_then(Value::as_bool) == Some(true);
    for key in ["containers", "initContainers"] {
        for c in items_mut(s, key) {
            default_container(c, of);
            // defaultHostNetworkPorts: on the host network, hostPort defaults to containerPort.
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
    }
}

/// `SetDefaults_PodTemplateSpec` for a workload's `spec.template`.
pub(crate) fn default_template(workload: &mut Value) {
    if let Some(spec) = workload.get_mut("spec").and_then(|s| s.get_mut("template")).and_then(|t| t.get_mut("spec")) {
        default_pod_spec(spec, SpecOf::Template);
    }
}

const RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
const DNS_POLICIES: &[&str] = &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];
const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent", "Never"];
const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const MESSAGE_POLICIES: &[&str] = &["File", "FallbackToLogsOnError"];
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

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// `IsValidPortNum` of a port number.
fn port_num(out: &mut Vec<StatusCause>, path: &Path, n: i64) {
    if !(1..=65535).contains(&n) {
        out.push(field::invalid(path, n, "must be between 1 and 65535, inclusive"));
    }
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

fn dns_label(out: &mut Vec<StatusCause>, path: &Path, value: &str) {
    for msg in dns1123_label_errors(value) {
        out.push(field::invalid(path, value, &msg));
    }
}

fn dns_subdomain(out: &mut Vec<StatusCause>, path: &Path, value: &str) {
    for msg in dns1123_subdomain_errors(value) {
        out.push(field::invalid(path, value, &msg));
    }
}

fn enum_required(out: &mut Vec<StatusCause>, path: &Path, value: Option<&Value>, valid: &[&str]) {
    match value.and_then(Value::as_str) {
        None | Some("") => out.push(field::required(path, "")),
        Some(v) if !valid.contains(&v) => out.push(field::not_supported(path, v, valid)),
        Some(_) => {}
    }
}

/// `ValidateVolumes`: exactly one source each, names unique DNS labels. Returns the names of
/// the volumes without errors (mounts of the others are then not found, as upstream).
fn volumes(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (i, v) in list(spec, "volumes").iter().enumerate() {
        let at = path.index(i);
        let mut el = Vec::new();
        let sources: Vec<&str> =
            VOLUME_SOURCES.iter().copied().filter(|k| v.get(*k).is_some_and(|x| !x.is_null())).collect();
        match sources.as_slice() {
            [] => el.push(field::required(&at, "must specify a volume type")),
            [_] => {}
            [_, rest @ ..] => {
                for extra in rest {
                    el.push(field::forbidden(&at.child(extra), "may not specify more than 1 volume type"));
                }
            }
        }
        let name = s(v, "name");
        if name.is_empty() {
            el.push(field::required(&at.child("name"), ""));
        } else {
            dns_label(&mut el, &at.child("name"), name);
        }
        if names.contains(name) {
            el.push(field::duplicate(&at.child("name"), name));
        }
        if el.is_empty() {
            names.insert(name.to_string());
        }
        out.extend(el);
    }
    names
}

fn resources(out: &mut Vec<StatusCause>, c: &Value, path: &Path) {
    let res = c.get("resources").unwrap_or(&Value::Null);
    let limits = res.get("limits").and_then(Value::as_object);
    let requests = res.get("requests").and_then(Value::as_object);
    for (which, map) in [("limits", limits), ("requests", requests)] {
        let Some(map) = map else { continue };
        for (name, q) in map {
            let at = path.child(which).key(name);
            let standard = !name.contains('/');
            if name.contains('/') || label_key_errors(name).is_empty() {
                // Qualified names are fine; a bare name must be a standard resource.
            }
            if !label_key_errors(name).is_empty() {
                for msg in label_key_errors(name) {
                    out.push(field::invalid(&at, name.as_str(), &msg));
                }
                out.push(field::invalid(&at, name.as_str(), "must be a standard resource type or fully qualified"));
                continue;
            }
            let _ = standard;
            let text = q.as_str().map(str::to_string).unwrap_or_else(|| q.to_string());
            match Quantity::parse(&text) {
                Some(qty) if qty.as_nanos() < 0 => {
                    out.push(field::invalid(&at, text.as_str(), "must be greater than or equal to 0"));
                }
                _ => {}
            }
        }
    }
    if let (Some(limits), Some(requests)) = (limits, requests) {
        for (name, req) in requests {
            let Some(lim) = limits.get(name) else { continue };
            let (Some(r), Some(l)) = (req.as_str().and_then(Quantity::parse), lim.as_str().and_then(Quantity::parse))
            else {
                continue;
            };
            if r > l {
                out.push(field::invalid(
                    &path.child("requests"),
                    req.as_str().unwrap_or_default(),
                    &format!("must be less than or equal to {name} limit of {}", lim.as_str().unwrap_or_default()),
                ));
            }
        }
    }
}

fn probe(out: &mut Vec<StatusCause>, p: Option<&Value>, path: &Path, liveness_like: bool) {
    let Some(p) = p.filter(|p| p.is_object()) else { return };
    let handlers =
        ["exec", "httpGet", "tcpSocket", "grpc"].iter().filter(|h| p.get(**h).is_some_and(|v| !v.is_null())).count();
    if handlers == 0 {
        out.push(field::required(path, "must specify a handler type"));
    } else if handlers > 1 {
        out.push(field::forbidden(path, "may not specify more than 1 handler type"));
    }
    if liveness_like && p.get("successThreshold").and_then(Value::as_i64).is_some_and(|n| n != 1) {
        let n = p["successThreshold"].as_i64().unwrap_or(0);
        out.push(field::invalid(&path.child("successThreshold"), n, "must be 1"));
    }
}

const ENV_FIELD_PATHS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

fn env(out: &mut Vec<StatusCause>, c: &Value, path: &Path) {
    for (i, e) in list(c, "env").iter().enumerate() {
        let at = path.index(i);
        let name = s(e, "name");
        if name.is_empty() {
            out.push(field::required(&at.child("name"), ""));
        } else if name.contains('=') || !name.bytes().all(|b| (32..=126).contains(&b)) {
            out.push(field::invalid(
                &at.child("name"),
                name,
                "a valid environment variable name must consist only of printable ASCII characters other than '='",
            ));
        }
        if let Some(vf) = e.get("valueFrom").filter(|v| v.is_object()) {
            let vf_path = at.child("valueFrom");
            if !s(e, "value").is_empty() {
                out.push(field::invalid(&vf_path, "", "may not be specified when `value` is not empty"));
            }
            if let Some(fr) = vf.get("fieldRef").filter(|v| v.is_object()) {
                let fp = s(fr, "fieldPath");
                let fp_path = vf_path.child("fieldRef").child("fieldPath");
                let ok = ENV_FIELD_PATHS.contains(&fp)
                    || fp.starts_with("metadata.annotations[")
                    || fp.starts_with("metadata.labels[");
                // ConvertDownwardAPIFieldLabel knows a few more labels than env may use.
                let convertible = ok || ["spec.restartPolicy", "spec.schedulerName", "status.phase"].contains(&fp);
                if fp.is_empty() {
                    out.push(field::required(&fp_path, ""));
                } else if !convertible {
                    out.push(field::invalid(
                        &fp_path,
                        fp,
                        &format!("error converting fieldPath: field label not supported: {fp}"),
                    ));
                } else if !ok {
                    out.push(field::not_supported(&fp_path, fp, ENV_FIELD_PATHS));
                }
            }
        }
    }
}

fn ports(out: &mut Vec<StatusCause>, c: &Value, path: &Path, names: &mut BTreeSet<String>) {
    for (i, p) in list(c, "ports").iter().enumerate() {
        let at = path.index(i);
        let name = s(p, "name");
        if !name.is_empty() {
            let errs = port_name_errors(name);
            for msg in &errs {
                out.push(field::invalid(&at.child("name"), name, msg));
            }
            if errs.is_empty() && !names.insert(name.to_string()) {
                out.push(field::duplicate(&at.child("name"), name));
            }
        }
        match p.get("containerPort").and_then(Value::as_i64) {
            None | Some(0) => out.push(field::required(&at.child("containerPort"), "")),
            Some(n) => port_num(out, &at.child("containerPort"), n),
        }
        if let Some(n) = p.get("hostPort").and_then(Value::as_i64).filter(|n| *n != 0) {
            port_num(out, &at.child("hostPort"), n);
        }
        enum_required(out, &at.child("protocol"), p.get("protocol"), PROTOCOLS);
    }
}

fn container(
    out: &mut Vec<StatusCause>,
    c: &Value,
    path: &Path,
    volume_names: &BTreeSet<String>,
    of: SpecOf,
    port_names: &mut BTreeSet<String>,
    init: bool,
) {
    let _ = of;
    if s(c, "image").is_empty() {
        out.push(field::required(&path.child("image"), ""));
    }
    enum_required(out, &path.child("terminationMessagePolicy"), c.get("terminationMessagePolicy"), MESSAGE_POLICIES);
    enum_required(out, &path.child("imagePullPolicy"), c.get("imagePullPolicy"), PULL_POLICIES);
    if !init {
        probe(out, c.get("livenessProbe"), &path.child("livenessProbe"), true);
        probe(out, c.get("readinessProbe"), &path.child("readinessProbe"), false);
        probe(out, c.get("startupProbe"), &path.child("startupProbe"), true);
    }
    ports(out, c, &path.child("ports"), port_names);
    env(out, c, &path.child("env"));
    for (i, m) in list(c, "volumeMounts").iter().enumerate() {
        let at = path.child("volumeMounts").index(i);
        let name = s(m, "name");
        if name.is_empty() {
            out.push(field::required(&at.child("name"), ""));
        } else if !volume_names.contains(name) {
            out.push(field::not_found(&at.child("name"), name));
        }
        if s(m, "mountPath").is_empty() {
            out.push(field::required(&at.child("mountPath"), ""));
        }
    }
    resources(out, c, &path.child("resources"));
}

/// `validateContainers` and `validateInitContainers`: names, duplicates, each container.
fn containers(out: &mut Vec<StatusCause>, spec: &Value, path: &Path, volume_names: &BTreeSet<String>, of: SpecOf) {
    let mut names = BTreeSet::new();
    let init = list(spec, "initContainers");
    let regular = list(spec, "containers");
    let cpath = path.child("containers");
    if regular.is_empty() {
        out.push(field::required(&cpath, ""));
    }
    let mut port_names = BTreeSet::new();
    for (i, c) in regular.iter().enumerate() {
        let at = cpath.index(i);
        let name = s(c, "name");
        if name.is_empty() {
            out.push(field::required(&at.child("name"), ""));
        } else {
            dns_label(out, &at.child("name"), name);
            if !names.insert(name.to_string()) {
                out.push(field::duplicate(&at.child("name"), name));
            }
        }
        container(out, c, &at, volume_names, of, &mut port_names, false);
    }
    let init_path = path.child("initContainers");
    for (i, c) in init.iter().enumerate() {
        let at = init_path.index(i);
        let name = s(c, "name");
        if name.is_empty() {
            out.push(field::required(&at.child("name"), ""));
        } else {
            dns_label(out, &at.child("name"), name);
            if !names.insert(name.to_string()) {
                out.push(field::duplicate(&at.child("name"), name));
            }
        }
        let mut port_names = BTreeSet::new();
        container(out, c, &at, volume_names, of, &mut port_names, true);
    }
}

/// `validateTolerations` (v1.37.2): the key, an empty key only with `Exists`, `tolerationSeconds`
/// only with `NoExecute`, then the operator and value (both reported at `operator`, as upstream
/// does; `Lt`/`Gt` need the alpha TaintTolerationComparisonOperators gate), then the effect.
fn tolerations(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) {
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

/// `ValidatePodSpec` at `path` (`spec` or `spec.template.spec`).
pub(crate) fn validate_pod_spec(spec: &Value, path: &Path, of: SpecOf) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let volume_names = volumes(&mut out, spec, &path.child("volumes"));
    containers(&mut out, spec, path, &volume_names, of);
    // validateHostNetwork: on the host network, each container port's hostPort is its
    // containerPort.
    if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        for (i, c) in list(spec, "containers").iter().enumerate() {
            for (j, p) in list(c, "ports").iter().enumerate() {
                let host = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
                if host != p.get("containerPort").and_then(Value::as_i64).unwrap_or(0) {
                    let at = path.child("containers").index(i).child("ports").index(j).child("hostPort");
                    out.push(field::invalid(&at, host, "must match `containerPort` when `hostNetwork` is true"));
                }
            }
        }
    }
    let restart = spec.get("restartPolicy");
    enum_required(&mut out, &path.child("restartPolicy"), restart, RESTART_POLICIES);
    enum_required(&mut out, &path.child("dnsPolicy"), spec.get("dnsPolicy"), DNS_POLICIES);
    labels_at(&mut out, spec.get("nodeSelector"), &path.child("nodeSelector"));
    let sa = s(spec, "serviceAccountName");
    if !sa.is_empty() {
        dns_subdomain(&mut out, &path.child("serviceAccountName"), sa);
    }
    let node = s(spec, "nodeName");
    if !node.is_empty() {
        dns_subdomain(&mut out, &path.child("nodeName"), node);
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
    let pc = s(spec, "priorityClassName");
    if !pc.is_empty() {
        dns_subdomain(&mut out, &path.child("priorityClassName"), pc);
    }
    // `validateSchedulingGates`: each name a qualified name and once, reported at the item.
    let mut gates = std::collections::BTreeSet::new();
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
    if let Some(sc) = spec.get("securityContext").filter(|v| v.is_object()) {
        pod_security_context(&mut out, sc, &path.child("securityContext"));
    }
    let mut claim_names = BTreeSet::new();
    for (i, c) in list(spec, "resourceClaims").iter().enumerate() {
        let at = path.child("resourceClaims").index(i);
        let name = s(c, "name");
        if name.is_empty() {
            out.push(field::required(&at.child("name"), ""));
        } else {
            dns_label(&mut out, &at.child("name"), name);
            if !claim_names.insert(name.to_string()) {
                out.push(field::duplicate(&at, name));
            }
        }
        let by_name = !s(c, "resourceClaimName").is_empty();
        let by_template = !s(c, "resourceClaimTemplateName").is_empty();
        if by_name == by_template {
            out.push(field::invalid(
                &at,
                Bad::Raw(c.to_string()),
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
            ));
        }
    }
    out
}

/// `ValidatePodTemplateSpec` of a workload (labels of the template, then its spec).
pub(crate) fn validate_template(template: &Value, path: &Path) -> Vec<StatusCause> {
    let mut out = Vec::new();
    labels_at(&mut out, template.get("metadata").and_then(|m| m.get("labels")), &path.child("labels"));
    out.extend(validate_pod_spec(template.get("spec").unwrap_or(&Value::Null), &path.child("spec"), SpecOf::Template));
    out
}

/// `validatePodSpecSecurityContext` (pkg/apis/core/validation/validation.go, v1.37.2): user and
/// group ids in `0..=2147483647` (`IsValidUserID`, `IsValidGroupID`), the policies' enums, and
/// the seccomp and AppArmor profiles (a type, a localhost profile exactly for `Localhost`).
fn pod_security_context(out: &mut Vec<StatusCause>, sc: &Value, path: &Path) {
    const ID_RANGE: &str = "must be between 0 and 2147483647, inclusive";
    let id_ok = |n: i64| (0..=i64::from(i32::MAX)).contains(&n);
    for key in ["fsGroup", "runAsUser", "runAsGroup"] {
        if let Some(n) = sc.get(key).and_then(Value::as_i64).filter(|n| !id_ok(*n)) {
            out.push(field::invalid(&path.child(key), n, ID_RANGE));
        }
    }
    for (i, g) in list(sc, "supplementalGroups").iter().enumerate() {
        if let Some(n) = g.as_i64().filter(|n| !id_ok(*n)) {
            out.push(field::invalid(&path.child("supplementalGroups").index(i), n, ID_RANGE));
        }
    }
    let one_of = |out: &mut Vec<StatusCause>, key: &str, valid: &[&str]| {
        if let Some(v) = sc.get(key).and_then(Value::as_str).filter(|v| !valid.contains(v)) {
            out.push(field::not_supported(&path.child(key), v, valid));
        }
    };
    one_of(out, "fsGroupChangePolicy", &["Always", "OnRootMismatch"]);
    seccomp_profile(out, sc, &path.child("seccompProfile"));
    apparmor_profile(out, sc, &path.child("appArmorProfile"));
    one_of(out, "supplementalGroupsPolicy", &["Merge", "Strict"]);
}

/// `validateSeccompProfileField` of `holder.seccompProfile`.
fn seccomp_profile(out: &mut Vec<StatusCause>, holder: &Value, path: &Path) {
    let Some(sp) = holder.get("seccompProfile").filter(|v| v.is_object()) else { return };
    let kind = s(sp, "type");
    match kind {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => out.push(field::required(&path.child("type"), "type is required when seccompProfile is set")),
        other => {
            out.push(field::not_supported(&path.child("type"), other, &["Localhost", "RuntimeDefault", "Unconfined"]))
        }
    }
    let localhost = sp.get("localhostProfile").filter(|v| !v.is_null());
    match (kind, localhost) {
        ("Localhost", None) => {
            out.push(field::required(&path.child("localhostProfile"), "must be set when seccomp type is Localhost"));
        }
        ("Localhost", Some(_)) => {}
        (_, Some(_)) => out.push(field::invalid(
            &path.child("localhostProfile"),
            Bad::Raw(sp.to_string()),
            "can only be set when seccomp type is Localhost",
        )),
        _ => {}
    }
}

/// `ValidateAppArmorProfileField` of `holder.appArmorProfile`.
fn apparmor_profile(out: &mut Vec<StatusCause>, holder: &Value, path: &Path) {
    let Some(p) = holder.get("appArmorProfile").filter(|v| v.is_object()) else { return };
    let localhost = p.get("localhostProfile").and_then(Value::as_str);
    match s(p, "type") {
        "Localhost" => match localhost {
            None => out
                .push(field::required(&path.child("localhostProfile"), "must be set when AppArmor type is Localhost")),
            Some(l) if l.trim() != l => {
                out.push(field::invalid(&path.child("localhostProfile"), l, "must not be padded with whitespace"))
            }
            Some("") => out
                .push(field::required(&path.child("localhostProfile"), "must be set when AppArmor type is Localhost")),
            Some(l) if l.len() > 4095 => out.push(field::too_long(&path.child("localhostProfile"), 4095)),
            Some(_) => {}
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(l) = localhost {
                out.push(field::invalid(
                    &path.child("localhostProfile"),
                    l,
                    "can only be set when AppArmor type is Localhost",
                ));
            }
        }
        "" => out.push(field::required(&path.child("type"), "type is required when appArmorProfile is set")),
        other => {
            out.push(field::not_supported(&path.child("type"), other, &["Localhost", "RuntimeDefault", "Unconfined"]))
        }
    }
}
