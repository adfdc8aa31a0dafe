//! A pod's volumes: `ValidateVolumes` and `validateVolumeSource` of
//! `pkg/apis/core/validation/validation.go` at v1.37.2, with the sources pods commonly carry
//! validated in full (`emptyDir`, `hostPath`, `secret`, `configMap`, `persistentVolumeClaim`,
//! `downwardAPI`, `projected`, `image`) and the others counted.

use super::pod_spec::{dns_label, list, s};
use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use apimachinery::quantity::Quantity;
use apimachinery::validation::label_key_errors;
use serde_json::Value;
use std::collections::BTreeSet;

/// The sources in the order `validateVolumeSource` looks at them, each with the path its
/// "more than 1 volume type" error names (upstream spells two of them differently).
const SOURCES: &[(&str, &str)] = &[
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
];

const FILE_MODE: &str = "must be a number between 0 and 0777 (octal), both inclusive";
const EMPTY_DIR_MODE: &str = "must be a number between 0 and 01777 (octal), both inclusive";
const HOST_PATH_TYPES: &[&str] =
    &["", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"];
/// `validVolumeDownwardAPIFieldPathExpressions`, sorted.
const VOLUME_FIELD_PATHS: &[&str] =
    &["metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"];
/// `validContainerResourceFieldPathExpressions`, sorted.
const RESOURCE_FIELD_PATHS: &[&str] = &[
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];
/// The field paths `ConvertDownwardAPIFieldLabel` knows for v1 pods.
const CONVERTIBLE_FIELD_PATHS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.serviceAccountName",
    "spec.schedulerName",
    "status.phase",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

fn present<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// `ValidateVolumes`: each source, the name a unique DNS label. Returns the names of the volumes
/// without errors (mounts of the others are then not found, as upstream).
pub(super) fn volumes(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (i, v) in list(spec, "volumes").iter().enumerate() {
        let at = path.index(i);
        let mut el = Vec::new();
        volume_source(&mut el, v, &at);
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
        } else {
            out.extend(el);
        }
    }
    names
}

/// `validateVolumeSource`: the first source set is validated, any other is forbidden, none is
/// required.
fn volume_source(out: &mut Vec<StatusCause>, v: &Value, path: &Path) {
    let mut count = 0;
    for (key, forbidden_at) in SOURCES {
        let Some(src) = present(v, key) else { continue };
        if count > 0 {
            out.push(field::forbidden(&path.child(forbidden_at), "may not specify more than 1 volume type"));
            continue;
        }
        count += 1;
        let at = path.child(key);
        match *key {
            "emptyDir" => empty_dir(out, src, &at),
            "hostPath" => host_path(out, src, &at),
            "secret" => {
                if s(src, "secretName").is_empty() {
                    out.push(field::required(&at.child("secretName"), ""));
                }
                file_source(out, src, &at);
            }
            "configMap" => {
                if s(src, "name").is_empty() {
                    out.push(field::required(&at.child("name"), ""));
                }
                file_source(out, src, &at);
            }
            "persistentVolumeClaim" if s(src, "claimName").is_empty() => {
                out.push(field::required(&at.child("claimName"), ""));
            }
            "downwardAPI" => {
                mode(out, src, "defaultMode", &at);
                user(out, src, "defaultUser", &at);
                for item in list(src, "items") {
                    downward_api_file(out, item, &at);
                }
            }
            "projected" => projected(out, src, &at),
            "image" => {
                if s(src, "reference").is_empty() {
                    out.push(field::required(&at.child("reference"), ""));
                }
                match s(src, "pullPolicy") {
                    "Always" | "IfNotPresent" | "Never" => {}
                    "" => out.push(field::required(&at.child("pullPolicy"), "")),
                    other => out.push(field::not_supported(
                        &at.child("pullPolicy"),
                        other,
                        &["Always", "IfNotPresent", "Never"],
                    )),
                }
            }
            _ => {}
        }
    }
    if count == 0 {
        out.push(field::required(path, "must specify a volume type"));
    }
}

/// The emptyDir checks: a non-negative size limit, a mode within 01777.
fn empty_dir(out: &mut Vec<StatusCause>, src: &Value, path: &Path) {
    if let Some(limit) = present(src, "sizeLimit")
        .and_then(|q| Quantity::parse(&q.as_str().map_or_else(|| q.to_string(), str::to_string)))
        && limit.as_nanos() < 0
    {
        out.push(field::forbidden(&path.child("sizeLimit"), "SizeLimit field must be a valid resource quantity"));
    }
    if let Some(m) = present(src, "mode").and_then(Value::as_i64)
        && !(0..=0o1777).contains(&m)
    {
        out.push(field::invalid(&path.child("mode"), m, EMPTY_DIR_MODE));
    }
}

/// `validateHostPathVolumeSource`: a path without `..`, a known type.
fn host_path(out: &mut Vec<StatusCause>, src: &Value, path: &Path) {
    let p = s(src, "path");
    if p.is_empty() {
        out.push(field::required(&path.child("path"), ""));
        return;
    }
    no_backsteps(out, p, &path.child("path"));
    if let Some(t) = present(src, "type") {
        let t = t.as_str().unwrap_or_default();
        if !HOST_PATH_TYPES.contains(&t) {
            out.push(field::not_supported(&path.child("type"), t, HOST_PATH_TYPES));
        }
    }
}

/// The shared tail of the secret and configMap sources: the default mode and user, the items.
fn file_source(out: &mut Vec<StatusCause>, src: &Value, path: &Path) {
    mode(out, src, "defaultMode", path);
    user(out, src, "defaultUser", path);
    for (i, kp) in list(src, "items").iter().enumerate() {
        key_to_path(out, kp, &path.child("items").index(i));
    }
}

/// A file mode within 0777.
fn mode(out: &mut Vec<StatusCause>, holder: &Value, key: &str, path: &Path) {
    if let Some(m) = present(holder, key).and_then(Value::as_i64)
        && !(0..=0o777).contains(&m)
    {
        out.push(field::invalid(&path.child(key), m, FILE_MODE));
    }
}

/// `validateUserField`: a valid user id.
fn user(out: &mut Vec<StatusCause>, holder: &Value, key: &str, path: &Path) {
    if let Some(u) = present(holder, key).and_then(Value::as_i64)
        && !(0..=i64::from(i32::MAX)).contains(&u)
    {
        out.push(field::invalid(&path.child(key), u, "must be between 0 and 2147483647, inclusive"));
    }
}

/// `validateKeyToPath`.
fn key_to_path(out: &mut Vec<StatusCause>, kp: &Value, path: &Path) {
    if s(kp, "key").is_empty() {
        out.push(field::required(&path.child("key"), ""));
    }
    let p = s(kp, "path");
    if p.is_empty() {
        out.push(field::required(&path.child("path"), ""));
    }
    local_non_reserved_path(out, p, &path.child("path"));
    mode(out, kp, "mode", path);
    user(out, kp, "user", path);
}

/// `validatePathNoBacksteps`: no `..` element.
fn no_backsteps(out: &mut Vec<StatusCause>, p: &str, path: &Path) {
    if p.split('/').any(|part| part == "..") {
        out.push(field::invalid(path, p, "must not contain '..'"));
    }
}

/// `validateLocalDescendingPath`: relative, without `..`.
pub(super) fn local_descending_path(out: &mut Vec<StatusCause>, p: &str, path: &Path) {
    if p.starts_with('/') {
        out.push(field::invalid(path, p, "must be a relative path"));
    }
    no_backsteps(out, p, path);
}

/// `ValidateLocalNonReservedPath`: a local descending path not starting with `..`.
fn local_non_reserved_path(out: &mut Vec<StatusCause>, p: &str, path: &Path) {
    local_descending_path(out, p, path);
    if p.starts_with("..") && !p.starts_with("../") {
        out.push(field::invalid(path, p, "must not start with '..'"));
    }
}

/// `validateDownwardAPIVolumeFile` (errors of a file are reported at the source's path, as
/// upstream passes it).
fn downward_api_file(out: &mut Vec<StatusCause>, file: &Value, path: &Path) {
    let p = s(file, "path");
    if p.is_empty() {
        out.push(field::required(&path.child("path"), ""));
    }
    local_non_reserved_path(out, p, &path.child("path"));
    let field_ref = present(file, "fieldRef");
    let resource_ref = present(file, "resourceFieldRef");
    if let Some(fr) = field_ref {
        object_field_selector(out, fr, VOLUME_FIELD_PATHS, &path.child("fieldRef"));
        if resource_ref.is_some() {
            out.push(field::invalid(
                path,
                "resource",
                "fieldRef and resourceFieldRef can not be specified simultaneously",
            ));
        }
    } else if let Some(rr) = resource_ref {
        resource_field_selector(out, rr, true, &path.child("resourceFieldRef"));
    } else {
        out.push(field::required(path, "one of fieldRef and resourceFieldRef is required"));
    }
    mode(out, file, "mode", path);
    user(out, file, "user", path);
}

/// `validateContainerResourceFieldSelector`: a container (for volumes) and a resource the
/// downward API exposes (huge pages by prefix).
pub(super) fn resource_field_selector(out: &mut Vec<StatusCause>, rr: &Value, volume: bool, path: &Path) {
    let resource = s(rr, "resource");
    if volume && s(rr, "containerName").is_empty() {
        out.push(field::required(&path.child("containerName"), ""));
    } else if resource.is_empty() {
        out.push(field::required(&path.child("resource"), ""));
    } else if !RESOURCE_FIELD_PATHS.contains(&resource)
        && !resource.starts_with("limits.hugepages-")
        && !resource.starts_with("requests.hugepages-")
    {
        out.push(field::not_supported(&path.child("resource"), resource, RESOURCE_FIELD_PATHS));
    }
}

/// `validateObjectFieldSelector`: an API version and a path the holder may expose (`allowed`,
/// sorted), as `ConvertDownwardAPIFieldLabel` reads it; labels and annotations may also be taken
/// one by one (`metadata.labels['key']`), the key a qualified name.
pub(super) fn object_field_selector(out: &mut Vec<StatusCause>, fr: &Value, allowed: &[&str], path: &Path) {
    let version = s(fr, "apiVersion");
    if version.is_empty() {
        out.push(field::required(&path.child("apiVersion"), ""));
        return;
    }
    let fp = s(fr, "fieldPath");
    if fp.is_empty() {
        out.push(field::required(&path.child("fieldPath"), ""));
        return;
    }
    // `fieldpath.SplitMaybeSubscriptedPath`: `base['key']`.
    let subscripted = fp.strip_suffix("']").and_then(|head| head.split_once("['")).filter(|(base, _)| !base.is_empty());
    let conversion_error = if version != "v1" {
        Some(format!("unsupported pod version: {version}"))
    } else {
        match subscripted {
            Some((base, _)) if !["metadata.annotations", "metadata.labels"].contains(&base) => {
                Some(format!("field label does not support subscript: {fp}"))
            }
            Some(_) => None,
            None if fp == "spec.host" || CONVERTIBLE_FIELD_PATHS.contains(&fp) => None,
            None => Some(format!("field label not supported: {fp}")),
        }
    };
    if let Some(err) = conversion_error {
        out.push(field::invalid(&path.child("fieldPath"), fp, &format!("error converting fieldPath: {err}")));
        return;
    }
    match subscripted {
        Some((base, key)) => {
            let key = if base == "metadata.annotations" { key.to_lowercase() } else { key.to_string() };
            for msg in label_key_errors(&key) {
                out.push(field::invalid(path, key.as_str(), &msg));
            }
        }
        None => {
            // Old clients' `spec.host` is `spec.nodeName`.
            let internal = if fp == "spec.host" { "spec.nodeName" } else { fp };
            if !allowed.contains(&internal) {
                out.push(field::not_supported(&path.child("fieldPath"), internal, allowed));
            }
        }
    }
}

/// `validateProjectedVolumeSource` and `validateProjectionSources` (secret, configMap,
/// downwardAPI and serviceAccountToken sources; a path used twice conflicts).
fn projected(out: &mut Vec<StatusCause>, src: &Value, path: &Path) {
    mode(out, src, "defaultMode", path);
    user(out, src, "defaultUser", path);
    let mut paths: BTreeSet<String> = BTreeSet::new();
    for (i, source) in list(src, "sources").iter().enumerate() {
        let at = path.child("sources").index(i);
        let mut count = 0;
        for kind in ["secret", "configMap"] {
            let Some(proj) = present(source, kind) else { continue };
            count += 1;
            let pp = at.child(kind);
            let name = s(proj, "name");
            if name.is_empty() {
                out.push(field::required(&pp.child("name"), ""));
            }
            for (j, kp) in list(proj, "items").iter().enumerate() {
                key_to_path(out, kp, &pp.child("items").index(j));
                let p = s(kp, "path");
                if !p.is_empty() && !paths.insert(p.to_string()) {
                    out.push(field::invalid(path, name, "conflicting duplicate paths"));
                }
            }
        }
        if let Some(proj) = present(source, "downwardAPI") {
            count += 1;
            let pp = at.child("downwardAPI");
            for file in list(proj, "items") {
                downward_api_file(out, file, &pp);
                let p = s(file, "path");
                if !p.is_empty() && !paths.insert(p.to_string()) {
                    out.push(field::invalid(path, p, "conflicting duplicate paths"));
                }
            }
        }
        if let Some(token) = present(source, "serviceAccountToken") {
            count += 1;
            let pp = at.child("serviceAccountToken");
            match present(token, "expirationSeconds").and_then(Value::as_i64) {
                None => out.push(field::required(&pp.child("expirationSeconds"), "")),
                Some(exp) => {
                    if exp < 10 * 60 {
                        out.push(field::invalid(
                            &pp.child("expirationSeconds"),
                            exp,
                            "may not specify a duration less than 10 minutes",
                        ));
                    }
                    if exp > 1 << 32 {
                        out.push(field::invalid(
                            &pp.child("expirationSeconds"),
                            exp,
                            "may not specify a duration larger than 2^32 seconds",
                        ));
                    }
                }
            }
            let p = s(token, "path");
            if p.is_empty() {
                out.push(field::required(&path.child("path"), ""));
            } else {
                local_non_reserved_path(out, p, &path.child("path"));
            }
            user(out, token, "user", &pp);
        }
        for kind in ["clusterTrustBundle", "podCertificate"] {
            if present(source, kind).is_some() {
                count += 1;
            }
        }
        if count > 1 {
            out.push(field::forbidden(&at, "may not specify more than 1 volume type per source"));
        }
    }
}
