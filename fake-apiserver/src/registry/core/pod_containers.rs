//! A pod's containers: `validateContainers`, `validateInitContainers`,
//! `validateEphemeralContainers`, `validateContainerCommon` and what it calls
//! (`validateContainerPorts`, `ValidateEnv` in `pod_env`, `ValidateVolumeMounts`, `validatePullPolicy`,
//! `validateResizePolicy`), `validateContainerRestartPolicy`, `checkHostPortConflicts` and
//! `validateContainersOnlyForPod` of `pkg/apis/core/validation/validation.go` at v1.37.2.

use super::pod_env::env;
use super::pod_probes::{ProbeKind, validate_lifecycle, validate_probe_of};
use super::pod_resources::container_requirements;
use super::pod_security::container_security_context;
use super::pod_spec::{dns_label, list, port_name_errors, s};
use super::pod_volumes::local_descending_path;
use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use serde_json::Value;
use std::collections::BTreeSet;

/// What the containers of one spec are checked against.
pub(super) struct ContainerContext<'a> {
    /// Names of the volumes that validated.
    pub volumes: &'a BTreeSet<String>,
    /// Names of `spec.resourceClaims`.
    pub claims: &'a BTreeSet<String>,
    /// `spec.terminationGracePeriodSeconds`.
    pub grace: Option<i64>,
    /// `spec.os.name`.
    pub os: Option<&'a str>,
}

const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent", "Never"];
const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
/// `supportedContainerRestartPolicies`, sorted.
const CONTAINER_RESTART_POLICIES: &[&str] = &["Always", "Never", "OnFailure"];
/// Restart rule actions with RestartAllContainersOnContainerExits (beta, on in 1.37).
const RULE_ACTIONS: &[&str] = &["Restart", "RestartAllContainers"];
const RULE_OPERATORS: &[&str] = &["In", "NotIn"];

fn present<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// `validateContainers`: at least one; each container's common rules, a unique name, its
/// lifecycle and probes, its restart policy; then host ports across all of them.
pub(super) fn containers(out: &mut Vec<StatusCause>, spec: &Value, ctx: &ContainerContext, path: &Path) {
    let regular = list(spec, "containers");
    if regular.is_empty() {
        out.push(field::required(path, ""));
        return;
    }
    let mut names = BTreeSet::new();
    for (i, c) in regular.iter().enumerate() {
        let at = path.index(i);
        container_common(out, c, ctx, spec, &at);
        let name = s(c, "name");
        if !names.insert(name) {
            out.push(field::duplicate(&at.child("name"), name));
        }
        if let Some(lc) = present(c, "lifecycle") {
            validate_lifecycle(out, lc, ctx.grace, ctx.os, &at.child("lifecycle"));
        }
        probes(out, c, ctx, &at);
        restart_policy(out, c, &at);
    }
    host_port_conflicts(out, regular, path);
}

fn probes(out: &mut Vec<StatusCause>, c: &Value, ctx: &ContainerContext, at: &Path) {
    validate_probe_of(out, c.get("livenessProbe"), ProbeKind::Liveness, ctx.grace, &at.child("livenessProbe"));
    validate_probe_of(out, c.get("readinessProbe"), ProbeKind::Readiness, ctx.grace, &at.child("readinessProbe"));
    validate_probe_of(out, c.get("startupProbe"), ProbeKind::Startup, ctx.grace, &at.child("startupProbe"));
}

/// `validateInitContainers`: the common rules, the restart policy, names unique among all
/// containers, host ports per container (they run one by one); lifecycle and probes only for
/// sidecars (`restartPolicy: Always`), resize policies only without `RestartContainer` for the
/// others.
pub(super) fn init_containers(out: &mut Vec<StatusCause>, spec: &Value, ctx: &ContainerContext, path: &Path) {
    let mut names: BTreeSet<&str> = list(spec, "containers").iter().map(|c| s(c, "name")).collect();
    for (i, c) in list(spec, "initContainers").iter().enumerate() {
        let at = path.index(i);
        container_common(out, c, ctx, spec, &at);
        let policy = present(c, "restartPolicy").map(|p| p.as_str().unwrap_or_default());
        // validateInitContainerRestartPolicy with ContainerRestartRules on.
        match policy {
            None => {
                if !list(c, "restartPolicyRules").is_empty() {
                    out.push(field::required(
                        &at.child("restartPolicy"),
                        "must specify restartPolicy when restart rules are used",
                    ));
                }
            }
            Some(_) => restart_policy(out, c, &at),
        }
        let sidecar = policy == Some("Always");
        let name = s(c, "name");
        if names.contains(name) {
            out.push(field::duplicate(&at.child("name"), name));
        } else if !name.is_empty() {
            names.insert(name);
        }
        host_port_conflicts(out, std::slice::from_ref(c), path);
        if sidecar {
            if let Some(lc) = present(c, "lifecycle") {
                validate_lifecycle(out, lc, ctx.grace, ctx.os, &at.child("lifecycle"));
            }
            probes(out, c, ctx, &at);
        } else {
            for key in ["lifecycle", "livenessProbe", "readinessProbe", "startupProbe"] {
                if present(c, key).is_some() {
                    out.push(field::forbidden(
                        &at.child(key),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
            for (j, p) in list(c, "resizePolicy").iter().enumerate() {
                if s(p, "restartPolicy") == "RestartContainer" {
                    out.push(field::invalid(
                        &at.child("resizePolicy").index(j).child("restartPolicy"),
                        "RestartContainer",
                        "must not be set to 'RestartContainer' for non-sidecar initContainers",
                    ));
                }
            }
        }
    }
}

/// `validateEphemeralContainers` as far as a spec on create or in a template sees them: the
/// common rules, the image's whitespace, names unique among all containers, a target that
/// exists.
pub(super) fn ephemeral_containers(out: &mut Vec<StatusCause>, spec: &Value, ctx: &ContainerContext, path: &Path) {
    let ephemeral = list(spec, "ephemeralContainers");
    if ephemeral.is_empty() {
        return;
    }
    let others: BTreeSet<&str> =
        ["containers", "initContainers"].iter().flat_map(|k| list(spec, k)).map(|c| s(c, "name")).collect();
    let mut all = others.clone();
    for (i, c) in ephemeral.iter().enumerate() {
        let at = path.index(i);
        container_common(out, c, ctx, spec, &at);
        image_whitespace(out, c, &at);
        let name = s(c, "name");
        if !all.insert(name) {
            out.push(field::duplicate(&at.child("name"), name));
        }
        let target = s(c, "targetContainerName");
        if !target.is_empty() && !others.contains(target) {
            out.push(field::not_found(&at.child("targetContainerName"), target));
        }
        // validateFieldAllowList: ephemeral containers serve no traffic and hold no resources.
        for key in EPHEMERAL_FORBIDDEN {
            let set = match c.get(key) {
                None | Some(Value::Null) => false,
                // An empty ResourceRequirements is its zero value.
                Some(Value::Object(m)) if key == "resources" => !m.is_empty(),
                Some(_) => true,
            };
            if set {
                out.push(field::forbidden(&at.child(key), "cannot be set for an Ephemeral Container"));
            }
        }
        for (j, m) in list(c, "volumeMounts").iter().enumerate() {
            for key in ["subPath", "subPathExpr"] {
                if !s(m, key).is_empty() {
                    out.push(field::forbidden(
                        &at.child("volumeMounts").index(j).child(key),
                        "cannot be set for an Ephemeral Container",
                    ));
                }
            }
        }
    }
}

/// The container fields an ephemeral container may not set (those `allowedEphemeralContainerFields`
/// leaves out), in the order of the Go struct.
const EPHEMERAL_FORBIDDEN: [&str; 9] = [
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "restartPolicyRules",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
];

/// `validateContainerCommon`: name, image, termination message policy, ports, env, mounts,
/// devices, pull policy, resources, resize policy.
fn container_common(out: &mut Vec<StatusCause>, c: &Value, ctx: &ContainerContext, spec: &Value, path: &Path) {
    let name = s(c, "name");
    if name.is_empty() {
        out.push(field::required(&path.child("name"), ""));
    } else {
        dns_label(out, &path.child("name"), name);
    }
    if s(c, "image").is_empty() {
        out.push(field::required(&path.child("image"), ""));
    }
    match s(c, "terminationMessagePolicy") {
        "File" | "FallbackToLogsOnError" => {}
        "" => out.push(field::required(&path.child("terminationMessagePolicy"), "")),
        other => out.push(field::not_supported(
            &path.child("terminationMessagePolicy"),
            other,
            &["File", "FallbackToLogsOnError"],
        )),
    }
    ports(out, c, &path.child("ports"));
    env(out, c, &path.child("env"));
    volume_mounts(out, c, ctx, spec, &path.child("volumeMounts"));
    match s(c, "imagePullPolicy") {
        "Always" | "IfNotPresent" | "Never" => {}
        "" => out.push(field::required(&path.child("imagePullPolicy"), "")),
        other => out.push(field::not_supported(&path.child("imagePullPolicy"), other, PULL_POLICIES)),
    }
    container_requirements(out, c, ctx.claims, &path.child("resources"));
    resize_policy(out, c, s(spec, "restartPolicy"), &path.child("resizePolicy"));
    // hostUsers defaults to true.
    let host_users = spec.get("hostUsers").and_then(Value::as_bool) != Some(false);
    container_security_context(out, c, host_users, &path.child("securityContext"));
}

/// `validateContainerRestartPolicy` (ContainerRestartRules is on in 1.37): a known policy, at
/// most 20 rules, each with a known action and exit codes.
fn restart_policy(out: &mut Vec<StatusCause>, c: &Value, path: &Path) {
    let rules = list(c, "restartPolicyRules");
    let at = path.child("restartPolicy");
    match present(c, "restartPolicy") {
        None if rules.is_empty() => return,
        None => out.push(field::required(&at, "must specify restartPolicy when restart rules are used")),
        Some(p) => {
            let p = p.as_str().unwrap_or_default();
            if !CONTAINER_RESTART_POLICIES.contains(&p) {
                out.push(field::not_supported(&at, p, CONTAINER_RESTART_POLICIES));
            }
        }
    }
    let rules_path = path.child("restartPolicyRules");
    if rules.len() > 20 {
        out.push(field::too_many(&rules_path, rules.len(), 20));
    }
    for (i, rule) in rules.iter().enumerate() {
        let rp = rules_path.index(i);
        let action = s(rule, "action");
        if !RULE_ACTIONS.contains(&action) {
            out.push(field::not_supported(&rp.child("action"), action, RULE_ACTIONS));
        }
        match present(rule, "exitCodes") {
            Some(codes) => {
                let op = s(codes, "operator");
                if !RULE_OPERATORS.contains(&op) {
                    out.push(field::not_supported(&rp.child("exitCodes").child("operator"), op, RULE_OPERATORS));
                }
                let values = list(codes, "values");
                if values.len() > 255 {
                    out.push(field::too_many(&rp.child("exitCodes").child("values"), values.len(), 255));
                }
            }
            None => out.push(field::required(&rp.child("exitCodes"), "must be specified")),
        }
    }
}

/// `validateResizePolicy`: each resource once, cpu or memory, with a known policy, and none
/// needing a restart in a pod that never restarts.
fn resize_policy(out: &mut Vec<StatusCause>, c: &Value, pod_restart: &str, path: &Path) {
    let mut seen = BTreeSet::new();
    for (i, p) in list(c, "resizePolicy").iter().enumerate() {
        let name = s(p, "resourceName");
        if !seen.insert(name) {
            out.push(field::duplicate(&path.index(i), name));
        }
        match name {
            "cpu" | "memory" => {}
            "" => out.push(field::required(path, "")),
            other => out.push(field::not_supported(path, other, &["cpu", "memory"])),
        }
        let policy = s(p, "restartPolicy");
        match policy {
            "NotRequired" | "RestartContainer" => {}
            "" => out.push(field::required(path, "")),
            other => out.push(field::not_supported(path, other, &["NotRequired", "RestartContainer"])),
        }
        if pod_restart == "Never" && policy != "NotRequired" {
            out.push(field::invalid(path, policy, "must be 'NotRequired' when pod `restartPolicy` is 'Never'"));
        }
    }
}

/// `checkHostPortConflicts`: a `protocol/hostIP/hostPort` once across `containers`.
fn host_port_conflicts(out: &mut Vec<StatusCause>, containers: &[Value], path: &Path) {
    let mut seen = BTreeSet::new();
    for (ci, c) in containers.iter().enumerate() {
        for (pi, p) in list(c, "ports").iter().enumerate() {
            let port = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            if port == 0 {
                continue;
            }
            let key = format!("{}/{}/{port}", s(p, "protocol"), s(p, "hostIP"));
            if seen.contains(&key) {
                let at = path.index(ci).child("ports").index(pi).child("hostPort");
                out.push(field::duplicate(&at, key.as_str()));
            } else {
                seen.insert(key);
            }
        }
    }
}

/// `validateContainerOnlyForPod`: a pod's image has no surrounding whitespace.
fn image_whitespace(out: &mut Vec<StatusCause>, c: &Value, path: &Path) {
    let image = s(c, "image");
    if image.trim() != image {
        out.push(field::invalid(&path.child("image"), image, "must not have leading or trailing whitespace"));
    }
}

/// `validateContainersOnlyForPod` of `spec.containers` and `spec.initContainers`.
pub(super) fn containers_only_for_pod(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) {
    for key in ["containers", "initContainers"] {
        for (i, c) in list(spec, key).iter().enumerate() {
            image_whitespace(out, c, &path.child(key).index(i));
        }
    }
}

/// `ValidateVolumeMounts`: a name of a valid volume, a unique mount path, relative sub-paths,
/// the propagation and recursive read-only modes, the bind options.
fn volume_mounts(out: &mut Vec<StatusCause>, c: &Value, ctx: &ContainerContext, spec: &Value, path: &Path) {
    let devices: Vec<(&str, &str)> =
        list(c, "volumeDevices").iter().map(|d| (s(d, "name"), s(d, "devicePath"))).collect();
    let mut mount_points = BTreeSet::new();
    for (i, m) in list(c, "volumeMounts").iter().enumerate() {
        let at = path.index(i);
        let name = s(m, "name");
        let mount_path = s(m, "mountPath");
        if name.is_empty() {
            out.push(field::required(&at.child("name"), ""));
        }
        if !ctx.volumes.contains(name) {
            out.push(field::not_found(&at.child("name"), name));
        }
        if mount_path.is_empty() {
            out.push(field::required(&at.child("mountPath"), ""));
        }
        if !mount_points.insert(mount_path) {
            out.push(field::invalid(&at.child("mountPath"), mount_path, "must be unique"));
        }
        if devices.iter().any(|(n, _)| *n == name) {
            out.push(field::invalid(&at.child("name"), name, "must not already exist in volumeDevices"));
        }
        if devices.iter().any(|(_, p)| *p == mount_path) {
            out.push(field::invalid(
                &at.child("mountPath"),
                mount_path,
                "must not already exist as a path in volumeDevices",
            ));
        }
        // Upstream reports sub-path errors at the list's path, not the item's.
        let sub_path = s(m, "subPath");
        if !sub_path.is_empty() {
            local_descending_path(out, sub_path, &path.child("subPath"));
        }
        let sub_path_expr = s(m, "subPathExpr");
        if !sub_path_expr.is_empty() {
            if !sub_path.is_empty() {
                out.push(field::invalid(
                    &at.child("subPathExpr"),
                    sub_path_expr,
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            local_descending_path(out, sub_path_expr, &path.child("subPathExpr"));
        }
        let propagation = present(m, "mountPropagation").map(|p| p.as_str().unwrap_or_default());
        if let Some(p) = propagation {
            mount_propagation(out, p, c, &path.child("mountPropagation"));
        }
        recursive_read_only(out, m, propagation, &path.child("recursiveReadOnly"));
        let options = list(m, "bindMountOptions");
        let mut seen = BTreeSet::new();
        for (j, o) in options.iter().enumerate() {
            let o = o.as_str().unwrap_or_default();
            let supported = ["noexec", "nodev", "nosuid"];
            if !supported.contains(&o) {
                out.push(field::not_supported(
                    &at.child("bindMountOptions").index(j),
                    o,
                    &["nodev", "noexec", "nosuid"],
                ));
            }
            if !seen.insert(o) {
                out.push(field::duplicate(&at.child("bindMountOptions").index(j), o));
            }
        }
        if !options.is_empty()
            && list(spec, "volumes").iter().any(|v| s(v, "name") == name && present(v, "image").is_some())
            && ctx.volumes.contains(name)
        {
            out.push(field::invalid(
                &at.child("bindMountOptions"),
                Bad::of(&m["bindMountOptions"]),
                "bindMountOptions may not be used with image volumes",
            ));
        }
    }
}

/// `validateMountPropagation`: a known mode; `Bidirectional` only for privileged containers.
fn mount_propagation(out: &mut Vec<StatusCause>, mode: &str, c: &Value, path: &Path) {
    const MODES: &[&str] = &["Bidirectional", "HostToContainer", "None"];
    if !MODES.contains(&mode) {
        out.push(field::not_supported(path, mode, MODES));
    }
    let privileged = c.pointer("/securityContext/privileged").and_then(Value::as_bool) == Some(true);
    if mode == "Bidirectional" && !privileged {
        out.push(field::forbidden(path, "Bidirectional mount propagation is available only to privileged containers"));
    }
}

/// `validateMountRecursiveReadOnly`: `Enabled`/`IfPossible` only on read-only mounts without
/// propagation.
fn recursive_read_only(out: &mut Vec<StatusCause>, m: &Value, propagation: Option<&str>, path: &Path) {
    let Some(rro) = present(m, "recursiveReadOnly") else { return };
    match rro.as_str().unwrap_or_default() {
        "Disabled" => {}
        "Enabled" | "IfPossible" => {
            if m.get("readOnly").and_then(Value::as_bool) != Some(true) {
                out.push(field::forbidden(path, "may only be specified when readOnly is true"));
            }
            if propagation.is_some_and(|p| p != "None") {
                out.push(field::forbidden(
                    path,
                    "may only be specified when mountPropagation is None or not specified",
                ));
            }
        }
        other => out.push(field::not_supported(path, other, &["Disabled", "Enabled", "IfPossible"])),
    }
}

/// `validateContainerPorts`: names valid and unique within the container, port numbers, a
/// protocol.
fn ports(out: &mut Vec<StatusCause>, c: &Value, path: &Path) {
    let mut names = BTreeSet::new();
    for (i, p) in list(c, "ports").iter().enumerate() {
        let at = path.index(i);
        let name = s(p, "name");
        if !name.is_empty() {
            let errs = port_name_errors(name);
            for msg in &errs {
                out.push(field::invalid(&at.child("name"), name, msg));
            }
            if errs.is_empty() && !names.insert(name) {
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
        match s(p, "protocol") {
            "" => out.push(field::required(&at.child("protocol"), "")),
            proto if !PROTOCOLS.contains(&proto) => {
                out.push(field::not_supported(&at.child("protocol"), proto, PROTOCOLS))
            }
            _ => {}
        }
    }
}

/// `IsValidPortNum` of a port number.
fn port_num(out: &mut Vec<StatusCause>, path: &Path, n: i64) {
    if !(1..=65535).contains(&n) {
        out.push(field::invalid(path, n, "must be between 1 and 65535, inclusive"));
    }
}
