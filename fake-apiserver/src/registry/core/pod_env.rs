//! A container's environment: `ValidateEnv` and `validateEnvVarValueFrom` of
//! `pkg/apis/core/validation/validation.go` at v1.37.2 (RelaxedEnvironmentVariableValidation is
//! GA and EnvFiles beta, both on).

use super::configmap::config_key_errors;
use super::pod_spec::{dns_label, dns_subdomain, list, s};
use super::pod_volumes::{object_field_selector, resource_field_selector};
use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use serde_json::Value;

fn present<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// `validEnvDownwardAPIFieldPathExpressions`, sorted.
const ENV_FIELD_PATHS: &[&str] = &[
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

/// `IsRelaxedEnvVarName` (RelaxedEnvironmentVariableValidation is GA): printable ASCII but `=`.
fn relaxed_env_name_errors(name: &str) -> Vec<&'static str> {
    let mut errs = Vec::new();
    if name.is_empty() {
        errs.push("environment variable name must be non-empty");
    }
    if name.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
        errs.push("a valid environment variable name must consist only of printable ASCII characters other than '='");
    }
    errs
}

/// `ValidateEnv`: names, then where each value comes from (`validateEnvVarValueFrom`).
pub(super) fn env(out: &mut Vec<StatusCause>, c: &Value, path: &Path) {
    for (i, e) in list(c, "env").iter().enumerate() {
        let at = path.index(i);
        let name = s(e, "name");
        if name.is_empty() {
            out.push(field::required(&at.child("name"), ""));
        } else {
            for msg in relaxed_env_name_errors(name) {
                out.push(field::invalid(&at.child("name"), name, msg));
            }
        }
        if let Some(vf) = present(e, "valueFrom") {
            value_from(out, e, vf, &at.child("valueFrom"));
        }
    }
}

/// `validateEnvVarValueFrom`: exactly one source, each valid, and no `value` beside it.
fn value_from(out: &mut Vec<StatusCause>, e: &Value, vf: &Value, path: &Path) {
    let mut sources = 0;
    if let Some(fr) = present(vf, "fieldRef") {
        sources += 1;
        object_field_selector(out, fr, ENV_FIELD_PATHS, &path.child("fieldRef"));
    }
    if let Some(rr) = present(vf, "resourceFieldRef") {
        sources += 1;
        resource_field_selector(out, rr, false, &path.child("resourceFieldRef"));
    }
    for key in ["configMapKeyRef", "secretKeyRef"] {
        let Some(sel) = present(vf, key) else { continue };
        sources += 1;
        let at = path.child(key);
        dns_subdomain(out, &at.child("name"), s(sel, "name"));
        let k = s(sel, "key");
        if k.is_empty() {
            out.push(field::required(&at.child("key"), ""));
        } else {
            for msg in config_key_errors(k) {
                out.push(field::invalid(&at.child("key"), k, &msg));
            }
        }
    }
    if let Some(sel) = present(vf, "fileKeyRef") {
        sources += 1;
        let at = path.child("fileKeyRef");
        let k = s(sel, "key");
        if k.is_empty() {
            out.push(field::required(&at.child("key"), ""));
        } else {
            for msg in relaxed_env_name_errors(k) {
                out.push(field::invalid(&at.child("key"), k, msg));
            }
        }
        let volume = s(sel, "volumeName");
        if volume.is_empty() {
            out.push(field::required(&at.child("volumeName"), ""));
        } else {
            dns_label(out, &at.child("volumeName"), volume);
        }
        let p = s(sel, "path");
        if p.is_empty() {
            out.push(field::required(&at.child("path"), ""));
        } else if p.split('/').any(|part| part == "..") {
            out.push(field::invalid(&at.child("path"), p, "must not contain '..'"));
        }
    }
    if sources == 0 {
        // EnvFiles is beta (on) in 1.37, so fileKeyRef is one of the choices.
        out.push(field::invalid(
            path,
            "",
            "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`",
        ));
    } else if !s(e, "value").is_empty() {
        out.push(field::invalid(path, "", "may not be specified when `value` is not empty"));
    } else if sources > 1 {
        out.push(field::invalid(path, "", "may not have more than one field specified at a time"));
    }
}
