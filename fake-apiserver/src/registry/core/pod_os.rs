//! The OS a pod declares (`spec.os.name`) and the fields that OS forbids: `validateOS`,
//! `validateLinux` and `validateWindows` of `pkg/apis/core/validation/validation.go` at
//! v1.37.2.

use super::pod_security::CONTAINER_LISTS;
use super::pod_spec::list;
use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use serde_json::Value;

const WINDOWS_ONLY: &str = "cannot be set for a windows pod";
const LINUX_ONLY: &str = "windows options cannot be set for a linux pod";

fn set(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

/// `validateOS`, then (when the OS is valid) `validateLinux` or `validateWindows`.
pub(super) fn pod_os(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) {
    let Some(os) = spec.get("os").filter(|v| !v.is_null()) else { return };
    let name = os.get("name").and_then(Value::as_str).unwrap_or_default();
    match name {
        "" => out.push(field::required(&path.child("os").child("name"), "")),
        "linux" => linux(out, spec, path),
        "windows" => windows(out, spec, path),
        other => out.push(field::not_supported(&path.child("os"), other, &["linux", "windows"])),
    }
}

/// Each container with a security context, in `VisitContainersWithPath` order.
fn container_contexts(spec: &Value, path: &Path) -> Vec<(Path, Value)> {
    let mut found = Vec::new();
    for key in CONTAINER_LISTS {
        for (i, c) in list(spec, key).iter().enumerate() {
            if let Some(sc) = c.get("securityContext").filter(|v| !v.is_null()) {
                found.push((path.child(key).index(i).child("securityContext"), sc.clone()));
            }
        }
    }
    found
}

/// `validateLinux`: no Windows options, on the pod or a container.
fn linux(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) {
    if spec.get("securityContext").is_some_and(|sc| set(sc, "windowsOptions")) {
        out.push(field::forbidden(&path.child("securityContext").child("windowsOptions"), LINUX_ONLY));
    }
    for (at, sc) in container_contexts(spec, path) {
        if set(&sc, "windowsOptions") {
            out.push(field::forbidden(&at.child("windowsOptions"), LINUX_ONLY));
        }
    }
}

/// `validateWindows`: none of the Linux-only security settings or host namespaces.
fn windows(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) {
    if let Some(sc) = spec.get("securityContext").filter(|v| !v.is_null()) {
        let at = path.child("securityContext");
        for key in ["appArmorProfile", "seLinuxOptions", "seccompProfile", "fsGroup", "fsGroupChangePolicy"] {
            if set(sc, key) {
                out.push(field::forbidden(&at.child(key), WINDOWS_ONLY));
            }
        }
        if !list(sc, "sysctls").is_empty() {
            out.push(field::forbidden(&at.child("sysctls"), WINDOWS_ONLY));
        }
        for key in ["runAsUser", "runAsGroup", "supplementalGroups", "supplementalGroupsPolicy", "seLinuxChangePolicy"]
        {
            if set(sc, key) {
                out.push(field::forbidden(&at.child(key), WINDOWS_ONLY));
            }
        }
    }
    if set(spec, "hostUsers") {
        out.push(field::forbidden(&path.child("hostUsers"), WINDOWS_ONLY));
    }
    for key in ["hostPID", "hostIPC"] {
        if spec.get(key).and_then(Value::as_bool) == Some(true) {
            out.push(field::forbidden(&path.child(key), WINDOWS_ONLY));
        }
    }
    if set(spec, "shareProcessNamespace") {
        out.push(field::forbidden(&path.child("shareProcessNamespace"), WINDOWS_ONLY));
    }
    for (at, sc) in container_contexts(spec, path) {
        for key in [
            "appArmorProfile",
            "seLinuxOptions",
            "seccompProfile",
            "capabilities",
            "readOnlyRootFilesystem",
            "privileged",
            "allowPrivilegeEscalation",
            "procMount",
            "runAsUser",
            "runAsGroup",
        ] {
            if set(&sc, key) {
                out.push(field::forbidden(&at.child(key), WINDOWS_ONLY));
            }
        }
    }
}
