//! The annotations with a meaning for pods and pod templates: `ValidatePodSpecificAnnotations`
//! (mirror pods, deletion cost, the deprecated seccomp and AppArmor annotations),
//! `validateSeccompAnnotationsAndFields` and `validateAppArmorAnnotationsAndFieldsMatchOnCreate`
//! of `pkg/apis/core/validation/validation.go` at v1.37.2.

use super::pod_security::CONTAINER_LISTS;
use super::pod_spec::{list, s};
use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use serde_json::{Map, Value};

const MIRROR: &str = "kubernetes.io/config.mirror";
const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";
const SECCOMP_POD: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER: &str = "container.seccomp.security.alpha.kubernetes.io/";
const APPARMOR_CONTAINER: &str = "container.apparmor.security.beta.kubernetes.io/";

fn annotations(meta: &Value) -> Map<String, Value> {
    meta.get("annotations").and_then(Value::as_object).cloned().unwrap_or_default()
}

/// Each container (init, regular, ephemeral) with its path.
fn each_container<'a>(spec: &'a Value, path: &Path) -> Vec<(Path, &'a Value)> {
    CONTAINER_LISTS
        .iter()
        .flat_map(|key| list(spec, key).iter().enumerate().map(move |(i, c)| (path.child(key).index(i), c)))
        .collect()
}

/// `GetDeletionCostFromPodAnnotations` accepts it: an int32 without `+` or leading zeros.
fn is_deletion_cost(v: &str) -> bool {
    let digits = v.strip_prefix('-').unwrap_or(v);
    let first_ok = match digits.as_bytes() {
        [] => false,
        [b'0', _, ..] => false,
        [d, ..] => d.is_ascii_digit(),
    };
    first_ok && v.parse::<i32>().is_ok()
}

/// `ValidateSeccompProfile` of an annotation's value.
fn seccomp_annotation(out: &mut Vec<StatusCause>, value: &str, path: &Path) {
    if ["runtime/default", "docker/default", "unconfined"].contains(&value) {
        return;
    }
    match value.strip_prefix("localhost/") {
        Some(profile) => {
            if profile.starts_with('/') {
                out.push(field::invalid(path, profile, "must be a relative path"));
            }
            if profile.split('/').any(|p| p == "..") {
                out.push(field::invalid(path, profile, "must not contain '..'"));
            }
        }
        None => out.push(field::invalid(path, value, "must be a valid seccomp profile")),
    }
}

/// `ValidatePodSpecificAnnotations` of `meta.annotations` (at `path`) for `spec`.
pub(super) fn pod_specific_annotations(out: &mut Vec<StatusCause>, meta: &Value, spec: &Value, path: &Path) {
    let ann = annotations(meta);
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    if let Some(v) = ann.get(MIRROR)
        && s(spec, "nodeName").is_empty()
    {
        out.push(field::invalid(&path.key(MIRROR), text(v), "must set spec.nodeName if mirror pod annotation is set"));
    }
    if let Some(v) = ann.get(DELETION_COST)
        && !is_deletion_cost(&text(v))
    {
        out.push(field::invalid(&path.key(DELETION_COST), text(v), "must be a 32bit integer"));
    }
    if let Some(v) = ann.get(SECCOMP_POD) {
        seccomp_annotation(out, &text(v), &path.child(SECCOMP_POD));
    }
    for (k, v) in &ann {
        if k.starts_with(SECCOMP_CONTAINER) {
            seccomp_annotation(out, &text(v), &path.child(k));
        }
    }
    for (k, v) in &ann {
        let Some(container) = k.strip_prefix(APPARMOR_CONTAINER) else { continue };
        if !each_container(spec, &Path::root("spec")).iter().any(|(_, c)| s(c, "name") == container) {
            out.push(field::invalid(&path.key(k), container, "container not found"));
        }
        let profile = text(v);
        let known = ["", "runtime/default", "unconfined"].contains(&profile.as_str());
        if !known && !profile.starts_with("localhost/") {
            out.push(field::invalid(
                &path.key(k),
                profile.as_str(),
                &format!("invalid AppArmor profile name: {profile:?}"),
            ));
        }
    }
}

/// `validateSeccompAnnotationsAndFieldsMatch`: the annotation names the field's profile.
fn seccomp_match(out: &mut Vec<StatusCause>, annotation: &str, profile: &Value, path: &Path) {
    let localhost = profile.get("localhostProfile").and_then(Value::as_str);
    match s(profile, "type") {
        "Unconfined" if annotation != "unconfined" => {
            out.push(field::forbidden(&path.child("type"), "seccomp type in annotation and field must match"));
        }
        "RuntimeDefault" if annotation != "runtime/default" && annotation != "docker/default" => {
            out.push(field::forbidden(&path.child("type"), "seccomp type in annotation and field must match"));
        }
        "Localhost" => match annotation.strip_prefix("localhost/") {
            None => out.push(field::forbidden(&path.child("type"), "seccomp type in annotation and field must match")),
            Some(name) if localhost != Some(name) => out.push(field::forbidden(
                &path.child("localhostProfile"),
                "seccomp profile in annotation and field must match",
            )),
            Some(_) => {}
        },
        _ => {}
    }
}

/// `validateSeccompAnnotationsAndFields`: where both an annotation and a field give a seccomp
/// profile (pod, then each container), they agree.
pub(super) fn seccomp_annotations_match(out: &mut Vec<StatusCause>, meta: &Value, spec: &Value, path: &Path) {
    let ann = annotations(meta);
    if let Some(profile) = spec.pointer("/securityContext/seccompProfile").filter(|v| !v.is_null())
        && let Some(a) = ann.get(SECCOMP_POD)
    {
        seccomp_match(
            out,
            a.as_str().unwrap_or_default(),
            profile,
            &path.child("securityContext").child("seccompProfile"),
        );
    }
    for (at, c) in each_container(spec, path) {
        let Some(profile) = c.pointer("/securityContext/seccompProfile").filter(|v| !v.is_null()) else { continue };
        if let Some(a) = ann.get(&format!("{SECCOMP_CONTAINER}{}", s(c, "name"))) {
            seccomp_match(
                out,
                a.as_str().unwrap_or_default(),
                profile,
                &at.child("securityContext").child("seccompProfile"),
            );
        }
    }
}

/// `validateAppArmorAnnotationsAndFieldsMatchOnCreate`: a container's AppArmor annotation
/// agrees with its (or the pod's) profile field; Windows pods are not checked.
pub(super) fn apparmor_annotations_match(out: &mut Vec<StatusCause>, meta: &Value, spec: &Value, path: &Path) {
    if spec.pointer("/os/name").and_then(Value::as_str) == Some("windows") {
        return;
    }
    let ann = annotations(meta);
    let pod_profile = spec.pointer("/securityContext/appArmorProfile").filter(|v| !v.is_null());
    for (at, c) in each_container(spec, path) {
        let profile = c.pointer("/securityContext/appArmorProfile").filter(|v| !v.is_null()).or(pod_profile);
        let Some(profile) = profile else { continue };
        let Some(a) = ann.get(&format!("{APPARMOR_CONTAINER}{}", s(c, "name"))) else { continue };
        let a = a.as_str().unwrap_or_default();
        let apath = at.child("securityContext").child("appArmorProfile");
        let mismatch = "apparmor type in annotation and field must match";
        match s(profile, "type") {
            "Unconfined" if a != "unconfined" => out.push(field::forbidden(&apath.child("type"), mismatch)),
            "RuntimeDefault" if a != "runtime/default" => out.push(field::forbidden(&apath.child("type"), mismatch)),
            "Localhost" => match a.strip_prefix("localhost/") {
                None => out.push(field::forbidden(&apath.child("type"), mismatch)),
                Some(name) if profile.get("localhostProfile").and_then(Value::as_str) != Some(name) => {
                    out.push(field::forbidden(
                        &apath.child("localhostProfile"),
                        "apparmor profile in annotation and field must match",
                    ));
                }
                Some(_) => {}
            },
            _ => {}
        }
    }
}

/// `ValidatePodSpecificAnnotationUpdates`: the AppArmor and mirror pod annotations can be neither
/// changed, removed nor added; then the new annotations as on create (so an update reports their
/// errors a second time, as upstream does).
pub(super) fn pod_annotation_updates(out: &mut Vec<StatusCause>, new: &Value, old: &Value, path: &Path) {
    let meta = |pod: &Value| pod.get("metadata").cloned().unwrap_or(Value::Null);
    let (new_ann, old_ann) = (annotations(&meta(new)), annotations(&meta(old)));
    for (k, old_value) in &old_ann {
        if new_ann.get(k) == Some(old_value) {
            continue;
        }
        if k.starts_with(APPARMOR_CONTAINER) {
            out.push(field::forbidden(&path.key(k), "may not remove or update AppArmor annotations"));
        }
        if k == MIRROR {
            out.push(field::forbidden(&path.key(k), "may not remove or update mirror pod annotation"));
        }
    }
    for k in new_ann.keys().filter(|k| !old_ann.contains_key(*k)) {
        if k.starts_with(APPARMOR_CONTAINER) {
            out.push(field::forbidden(&path.key(k), "may not add AppArmor annotations"));
        }
        if k == MIRROR {
            out.push(field::forbidden(&path.key(k), "may not add mirror pod annotation"));
        }
    }
    pod_specific_annotations(out, &meta(new), new.get("spec").unwrap_or(&Value::Null), path);
}
