//! A pod's isolation from its node: the pod security context (`validatePodSpecSecurityContext`,
//! `validateSysctls`, `ValidateHostSysctl`, `validateSeccompProfileField`,
//! `ValidateAppArmorProfileField`), `validateShareProcessNamespace` and `validateHostUsers` of
//! `pkg/apis/core/validation/validation.go` at v1.37.2.

use super::pod_spec::{list, s};
use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use serde_json::Value;
use std::collections::BTreeSet;

/// Why a pod's sysctls are looked at twice: an update of a pod that already had a namespaced
/// sysctl on a host namespace keeps being accepted
/// (`AllowNamespacedSysctlsForHostNetAndHostIPC`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SysctlOptions {
    pub allow_namespaced_with_host: bool,
}

/// `validatePodSpecSecurityContext` (pkg/apis/core/validation/validation.go, v1.37.2): user and
/// group ids in `0..=2147483647` (`IsValidUserID`, `IsValidGroupID`), the policies' enums, and
/// the seccomp and AppArmor profiles (a type, a localhost profile exactly for `Localhost`).
pub(super) fn pod_security_context(
    out: &mut Vec<StatusCause>,
    sc: &Value,
    spec: &Value,
    opts: SysctlOptions,
    path: &Path,
) {
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
    if !list(sc, "sysctls").is_empty() {
        sysctls(out, sc, spec, opts, &path.child("sysctls"));
    }
    let one_of = |out: &mut Vec<StatusCause>, key: &str, valid: &[&str]| {
        if let Some(v) = sc.get(key).and_then(Value::as_str).filter(|v| !valid.contains(v)) {
            out.push(field::not_supported(&path.child(key), v, valid));
        }
    };
    one_of(out, "fsGroupChangePolicy", &["Always", "OnRootMismatch"]);
    seccomp_profile(out, sc, &path.child("seccompProfile"));
    windows_options(out, sc, &path.child("windowsOptions"));
    apparmor_profile(out, sc, &path.child("appArmorProfile"));
    one_of(out, "supplementalGroupsPolicy", &["Merge", "Strict"]);
    one_of(out, "seLinuxChangePolicy", &["MountOption", "Recursive"]);
}

/// The container lists in the order `podshelper.VisitContainersWithPath` walks them.
pub(super) const CONTAINER_LISTS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];

/// `SysctlMaxLength` and the regex of `IsValidSysctlName` as upstream prints it.
const SYSCTL_MAX: usize = 253;
const SYSCTL_REGEX: &str = r"^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";

/// `IsValidSysctlName`: segments of `[a-z0-9]([-_a-z0-9]*[a-z0-9])?` joined by `.` or `/`.
fn is_valid_sysctl_name(name: &str) -> bool {
    let segment = |seg: &str| {
        let b = seg.as_bytes();
        let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        match (b.first(), b.last()) {
            (Some(f), Some(l)) => edge(f) && edge(l) && b.iter().all(|c| edge(c) || *c == b'-' || *c == b'_'),
            _ => false,
        }
    };
    name.len() <= SYSCTL_MAX && name.split(['.', '/']).all(segment)
}

/// The namespace a sysctl lives in (`utilsysctl.GetNamespace`), as far as the host network and
/// IPC checks need it.
fn sysctl_namespace(name: &str) -> Option<&'static str> {
    // `NormalizeName`: a name written with slashes swaps them with its dots.
    let normal: String = match name.find(['.', '/']) {
        Some(i) if name.as_bytes()[i] == b'/' => name
            .chars()
            .map(|c| {
                if c == '.' {
                    '/'
                } else if c == '/' {
                    '.'
                } else {
                    c
                }
            })
            .collect(),
        _ => name.to_string(),
    };
    let base = normal.split('*').next().unwrap_or_default();
    const IPC_NAMES: &[&str] = &[
        "kernel.sem",
        "kernel.shmall",
        "kernel.shmmax",
        "kernel.shmmni",
        "kernel.shm_rmid_forced",
        "kernel.shm",
        "kernel.msgmax",
        "kernel.msgmnb",
        "kernel.msgmni",
        "kernel.msg",
    ];
    if base == "kernel.domainname" {
        Some("UTS")
    } else if IPC_NAMES.contains(&base) || base.starts_with("fs.mqueue.") {
        Some("IPC")
    } else if base.starts_with("net.") {
        Some("Net")
    } else if base.starts_with("user.") {
        Some("User")
    } else {
        None
    }
}

/// `ValidateHostSysctl`: a namespaced sysctl cannot be set on a namespace shared with the host.
pub(super) fn host_sysctl_error(name: &str, spec: &Value, path: &Path) -> Option<StatusCause> {
    let on = |key: &str| spec.get(key).and_then(Value::as_bool) == Some(true);
    match sysctl_namespace(name) {
        Some("Net") if on("hostNetwork") => {
            Some(field::invalid(path, name, "may not be specified when 'hostNetwork' is true"))
        }
        Some("IPC") if on("hostIPC") => Some(field::invalid(path, name, "may not be specified when 'hostIPC' is true")),
        _ => None,
    }
}

/// `validateSysctls`: each name set, well formed and once; none on a host namespace.
fn sysctls(out: &mut Vec<StatusCause>, sc: &Value, spec: &Value, opts: SysctlOptions, path: &Path) {
    let mut names = BTreeSet::new();
    for (i, sysctl) in list(sc, "sysctls").iter().enumerate() {
        let name = s(sysctl, "name");
        let at = path.index(i).child("name");
        if name.is_empty() {
            out.push(field::required(&at, ""));
        } else if !is_valid_sysctl_name(name) {
            out.push(field::invalid(
                &at,
                name,
                &format!("must have at most {SYSCTL_MAX} characters and match regex {SYSCTL_REGEX}"),
            ));
        } else if names.contains(name) {
            out.push(field::duplicate(&at, name));
        }
        if !opts.allow_namespaced_with_host
            && let Some(err) = host_sysctl_error(name, spec, &at)
        {
            out.push(err);
        }
        names.insert(name);
    }
}

/// Whether an existing spec already breaks `ValidateHostSysctl` (then its updates may too).
pub(super) fn has_host_sysctl_violation(spec: &Value) -> bool {
    let sc = spec.get("securityContext").unwrap_or(&Value::Null);
    list(sc, "sysctls").iter().any(|x| host_sysctl_error(s(x, "name"), spec, &Path::root("")).is_some())
}

/// `validateShareProcessNamespace`: not together with the host's PID namespace.
pub(super) fn share_process_namespace(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) {
    if spec.get("shareProcessNamespace").and_then(Value::as_bool) == Some(true)
        && spec.get("hostPID").and_then(Value::as_bool) == Some(true)
    {
        out.push(field::invalid(
            &path.child("shareProcessNamespace"),
            true,
            "ShareProcessNamespace and HostPID cannot both be enabled",
        ));
    }
}

/// `validateHostUsers`: a pod in its own user namespace shares no other namespace with the
/// host (UserNamespacesHostNetworkSupport is off in 1.37) and has no volume devices. The
/// `HostPID` and `HostIPC` paths are spelled as upstream spells them.
pub(super) fn host_users(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) {
    if spec.get("hostUsers").and_then(Value::as_bool) != Some(false) {
        return;
    }
    let on = |key: &str| spec.get(key).and_then(Value::as_bool) == Some(true);
    if on("hostNetwork") {
        out.push(field::forbidden(&path.child("hostNetwork"), "when `hostUsers` is false"));
    }
    if on("hostPID") {
        out.push(field::forbidden(&path.child("HostPID"), "when `hostUsers` is false"));
    }
    if on("hostIPC") {
        out.push(field::forbidden(&path.child("HostIPC"), "when `hostUsers` is false"));
    }
    for key in CONTAINER_LISTS {
        for (i, c) in list(spec, key).iter().enumerate() {
            if !list(c, "volumeDevices").is_empty() {
                out.push(field::forbidden(
                    &path.child(key).index(i).child("volumeDevices"),
                    "when `hostUsers` is false",
                ));
            }
        }
    }
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

/// `ValidateSecurityContext` of a container (privileged containers are allowed: the API server
/// runs with `--allow-privileged=true`): ids, the proc mount, the seccomp profile, privilege
/// escalation against privileged mode and CAP_SYS_ADMIN, Windows options, the AppArmor profile.
pub(super) fn container_security_context(out: &mut Vec<StatusCause>, c: &Value, host_users: bool, path: &Path) {
    let Some(sc) = c.get("securityContext").filter(|v| v.is_object()) else { return };
    const ID_RANGE: &str = "must be between 0 and 2147483647, inclusive";
    for key in ["runAsUser", "runAsGroup"] {
        if let Some(n) = sc.get(key).and_then(Value::as_i64).filter(|n| !(0..=i64::from(i32::MAX)).contains(n)) {
            out.push(field::invalid(&path.child(key), n, ID_RANGE));
        }
    }
    if let Some(pm) = sc.get("procMount").filter(|v| !v.is_null()) {
        let pm = pm.as_str().unwrap_or_default();
        if !["Default", "Unmasked"].contains(&pm) {
            out.push(field::not_supported(&path.child("procMount"), pm, &["Default", "Unmasked"]));
        }
        if host_users && pm == "Unmasked" {
            out.push(field::invalid(&path.child("procMount"), pm, "`hostUsers` must be false to use `Unmasked`"));
        }
    }
    seccomp_profile(out, sc, &path.child("seccompProfile"));
    if sc.get("allowPrivilegeEscalation").and_then(Value::as_bool) == Some(false) {
        if sc.get("privileged").and_then(Value::as_bool) == Some(true) {
            out.push(field::invalid(
                path,
                Bad::Raw(sc.to_string()),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ));
        }
        for cap in list(sc.get("capabilities").unwrap_or(&Value::Null), "add") {
            if cap.as_str() == Some("CAP_SYS_ADMIN") {
                out.push(field::invalid(
                    path,
                    Bad::Raw(sc.to_string()),
                    "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
                ));
            }
        }
    }
    windows_options(out, sc, &path.child("windowsOptions"));
    apparmor_profile(out, sc, &path.child("appArmorProfile"));
}

/// A NetBIOS domain: 1 to 15 characters, none of `\ / : * ? " < > |`, not starting with `.`.
fn is_netbios_domain(d: &str) -> bool {
    const BAD: &[char] = &['\\', '/', ':', '*', '?', '"', '<', '>', '|'];
    let n = d.chars().count();
    (1..=15).contains(&n) && !d.starts_with('.') && !d.contains(BAD)
}

/// A DNS domain of `[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?` labels.
fn is_windows_dns_domain(d: &str) -> bool {
    d.split('.').all(|l| {
        let b = l.as_bytes();
        !b.is_empty()
            && b.len() <= 63
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
    })
}

/// `validateWindowsSecurityContextOptions` of `holder.windowsOptions`.
fn windows_options(out: &mut Vec<StatusCause>, holder: &Value, path: &Path) {
    let Some(w) = holder.get("windowsOptions").filter(|v| v.is_object()) else { return };
    if let Some(name) = w.get("gmsaCredentialSpecName").and_then(Value::as_str) {
        for msg in apimachinery::validation::dns1123_subdomain_errors(name) {
            out.push(field::invalid(&path.child("gmsaCredentialSpecName"), name, &msg));
        }
    }
    if let Some(spec) = w.get("gmsaCredentialSpec").and_then(Value::as_str) {
        let at = path.child("gmsaCredentialSpec");
        if spec.is_empty() {
            out.push(field::invalid(&at, spec, "gmsaCredentialSpec cannot be an empty string"));
        } else if spec.len() > 64 * 1024 {
            out.push(field::invalid(&at, spec, "gmsaCredentialSpec size must be under 64 KiB"));
        }
    }
    let Some(name) = w.get("runAsUserName").and_then(Value::as_str) else { return };
    let at = path.child("runAsUserName");
    let parts: Vec<&str> = name.split('\\').collect();
    if name.is_empty() {
        out.push(field::invalid(&at, name, "runAsUserName cannot be an empty string"));
        return;
    }
    if name.chars().any(|c| c.is_ascii_control()) {
        out.push(field::invalid(&at, name, "runAsUserName cannot contain control characters"));
        return;
    }
    if parts.len() > 2 {
        out.push(field::invalid(&at, name, "runAsUserName cannot contain more than one backslash"));
        return;
    }
    let (domain, user) = match parts.as_slice() {
        [user] => (None, *user),
        [domain, user] => (Some(*domain), *user),
        _ => return,
    };
    if domain.is_some_and(|d| d.len() >= 256) {
        out.push(field::invalid(&at, name, "runAsUserName's Domain length must be under 256 characters"));
    }
    if let Some(d) = domain
        && !(is_netbios_domain(d) || is_windows_dns_domain(d))
    {
        out.push(field::invalid(&at, name, "runAsUserName's Domain doesn't match the NetBios nor the DNS format"));
    }
    if user.is_empty() {
        out.push(field::invalid(&at, name, "runAsUserName's User cannot be empty"));
    } else if user.len() > 104 {
        out.push(field::invalid(&at, name, "runAsUserName's User length must not be longer than 104 characters"));
    }
    if !user.is_empty() && user.chars().all(|c| c == '.' || c == ' ') {
        out.push(field::invalid(&at, name, "runAsUserName's User cannot contain only periods or spaces"));
    }
    if user.contains(['"', '/', '\\', ':', ';', '|', '=', ',', '+', '*', '?', '<', '>', '@', '[', ']']) {
        out.push(field::invalid(
            &at,
            name,
            r#"runAsUserName's User cannot contain the following characters: "/\:;|=,+*?<>@[]"#,
        ));
    }
}
