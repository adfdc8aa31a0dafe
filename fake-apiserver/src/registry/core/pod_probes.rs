//! A container's probes and lifecycle hooks: `validateLivenessProbe`, `validateReadinessProbe`,
//! `validateStartupProbe`, `validateProbe`, `validateLifecycle` and the handlers they share
//! (`validateHandler`, `validateExecAction`, `validateHTTPGetAction`, `validateTCPSocketAction`,
//! `validateGRPCAction`, `validateSleepAction`, `validateStopSignal`) of
//! `pkg/apis/core/validation/validation.go` at v1.37.2.

use super::pod_spec::{list, port_name_errors, s};
use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use apimachinery::validation::regex_error;
use serde_json::Value;

/// Which probe: liveness and startup probes must succeed once, readiness probes may not carry
/// their own grace period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ProbeKind {
    Liveness,
    Readiness,
    Startup,
}

fn present<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

fn int(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

/// `validateLivenessProbe`, `validateReadinessProbe` or `validateStartupProbe` of the container's
/// probe at `path` (nothing when it is absent).
pub(super) fn validate_probe_of(
    out: &mut Vec<StatusCause>,
    probe: Option<&Value>,
    kind: ProbeKind,
    grace: Option<i64>,
    path: &Path,
) {
    let Some(p) = probe.filter(|p| !p.is_null()) else { return };
    validate_probe(out, p, grace, path);
    match kind {
        ProbeKind::Liveness | ProbeKind::Startup => {
            let n = int(p, "successThreshold");
            if n != 1 {
                out.push(field::invalid(&path.child("successThreshold"), n, "must be 1"));
            }
        }
        ProbeKind::Readiness => {
            if let Some(g) = present(p, "terminationGracePeriodSeconds") {
                out.push(field::invalid(
                    &path.child("terminationGracePeriodSeconds"),
                    field::Bad::of(g),
                    "must not be set for readinessProbes",
                ));
            }
        }
    }
}

/// `validateProbe`: the handler, the non-negative timings, a positive grace period if any.
fn validate_probe(out: &mut Vec<StatusCause>, p: &Value, grace: Option<i64>, path: &Path) {
    handler(out, p, &["exec", "httpGet", "tcpSocket", "grpc"], grace, path);
    for key in ["initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"] {
        let n = int(p, key);
        if n < 0 {
            out.push(field::invalid(&path.child(key), n, "must be greater than or equal to 0"));
        }
    }
    if let Some(g) = present(p, "terminationGracePeriodSeconds").and_then(Value::as_i64)
        && g <= 0
    {
        out.push(field::invalid(&path.child("terminationGracePeriodSeconds"), g, "must be greater than 0"));
    }
}

/// `validateLifecycle`: each hook's handler, then the stop signal for the pod's OS.
pub(super) fn validate_lifecycle(
    out: &mut Vec<StatusCause>,
    lifecycle: &Value,
    grace: Option<i64>,
    os: Option<&str>,
    path: &Path,
) {
    for hook in ["postStart", "preStop"] {
        if let Some(h) = present(lifecycle, hook) {
            handler(out, h, &["exec", "httpGet", "tcpSocket", "sleep"], grace, &path.child(hook));
        }
    }
    if let Some(signal) = present(lifecycle, "stopSignal") {
        stop_signal(out, signal.as_str().unwrap_or_default(), os, &path.child("stopSignal"));
    }
}

/// `validateHandler`: the first handler set is validated, any further one is forbidden, none
/// at all is required. `kinds` lists the handlers this holder may carry, in upstream's order.
fn handler(out: &mut Vec<StatusCause>, holder: &Value, kinds: &[&str], grace: Option<i64>, path: &Path) {
    let mut count = 0;
    // Upstream checks exec, httpGet, tcpSocket, grpc, sleep in this order.
    for kind in ["exec", "httpGet", "tcpSocket", "grpc", "sleep"] {
        if !kinds.contains(&kind) {
            continue;
        }
        let Some(action) = present(holder, kind) else { continue };
        let at = path.child(kind);
        if count > 0 {
            out.push(field::forbidden(&at, "may not specify more than 1 handler type"));
            continue;
        }
        count += 1;
        match kind {
            "exec" => {
                if list(action, "command").is_empty() {
                    out.push(field::required(&at.child("command"), ""));
                }
            }
            "httpGet" => http_get(out, action, &at),
            "tcpSocket" => port_num_or_name(out, action.get("port"), &at.child("port")),
            "grpc" => grpc(out, action, &at),
            _ => sleep(out, action, grace, &at),
        }
    }
    if count == 0 {
        out.push(field::required(path, "must specify a handler type"));
    }
}

/// `ValidatePortNumOrName` of an int-or-string port (absent reads as the number 0).
fn port_num_or_name(out: &mut Vec<StatusCause>, port: Option<&Value>, path: &Path) {
    match port {
        Some(Value::String(name)) => {
            for msg in port_name_errors(name) {
                out.push(field::invalid(path, name.as_str(), msg));
            }
        }
        other => {
            let n = other.and_then(Value::as_i64).unwrap_or(0);
            if !(1..=65535).contains(&n) {
                out.push(field::invalid(path, n, "must be between 1 and 65535, inclusive"));
            }
        }
    }
}

/// `validateHTTPGetAction`.
fn http_get(out: &mut Vec<StatusCause>, h: &Value, path: &Path) {
    if s(h, "path").is_empty() {
        out.push(field::required(&path.child("path"), ""));
    }
    port_num_or_name(out, h.get("port"), &path.child("port"));
    let scheme = s(h, "scheme");
    if !["HTTP", "HTTPS"].contains(&scheme) {
        out.push(field::not_supported(&path.child("scheme"), scheme, &["HTTP", "HTTPS"]));
    }
    for header in list(h, "httpHeaders") {
        let name = s(header, "name");
        if !is_http_header_name(name) {
            let msg = regex_error(
                "a valid HTTP header must consist of alphanumeric characters or '-'",
                "[-A-Za-z0-9]+",
                &["X-Header-Name"],
            );
            out.push(field::invalid(&path.child("httpHeaders"), name, &msg));
        }
    }
    if let Some(protocol) = present(h, "protocol").and_then(Value::as_str) {
        if !["HTTP", "HTTP2"].contains(&protocol) {
            out.push(field::not_supported(&path.child("protocol"), protocol, &["HTTP", "HTTP2"]));
        } else if protocol == "HTTP2" && scheme != "HTTP" {
            out.push(field::invalid(&path.child("protocol"), protocol, "is only supported with HTTP (H2C)"));
        } else if protocol == "HTTP2" && !s(h, "host").is_empty() {
            out.push(field::invalid(&path.child("host"), s(h, "host"), "must be empty when `protocol` is \"HTTP2\""));
        }
    }
}

/// `IsHTTPHeaderName`: `[-A-Za-z0-9]+`.
fn is_http_header_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// `validateGRPCAction`: the port as a number, a known mode.
fn grpc(out: &mut Vec<StatusCause>, g: &Value, path: &Path) {
    let n = int(g, "port");
    if !(1..=65535).contains(&n) {
        out.push(field::invalid(&path.child("port"), n, "must be between 1 and 65535, inclusive"));
    }
    if let Some(mode) = present(g, "mode").and_then(Value::as_str)
        && !["Plaintext", "TLS"].contains(&mode)
    {
        out.push(field::not_supported(&path.child("mode"), mode, &["Plaintext", "TLS"]));
    }
}

/// `validateSleepAction`: within the pod's grace period (unchecked when that is unset, as it is
/// reported elsewhere).
fn sleep(out: &mut Vec<StatusCause>, action: &Value, grace: Option<i64>, path: &Path) {
    let seconds = int(action, "seconds");
    if let Some(g) = grace
        && (seconds < 0 || seconds > g)
    {
        out.push(field::invalid(
            path,
            seconds,
            &format!("must be non-negative and less than terminationGracePeriodSeconds ({g})"),
        ));
    }
}

/// The signals a Linux container may stop with (`supportedStopSignalsLinux`, sorted as
/// `sets.List` sorts them).
const LINUX_SIGNALS: &[&str] = &[
    "SIGABRT",
    "SIGALRM",
    "SIGBUS",
    "SIGCHLD",
    "SIGCLD",
    "SIGCONT",
    "SIGFPE",
    "SIGHUP",
    "SIGILL",
    "SIGINT",
    "SIGIO",
    "SIGIOT",
    "SIGKILL",
    "SIGPIPE",
    "SIGPOLL",
    "SIGPROF",
    "SIGPWR",
    "SIGQUIT",
    "SIGRTMAX",
    "SIGRTMAX-1",
    "SIGRTMAX-10",
    "SIGRTMAX-11",
    "SIGRTMAX-12",
    "SIGRTMAX-13",
    "SIGRTMAX-14",
    "SIGRTMAX-2",
    "SIGRTMAX-3",
    "SIGRTMAX-4",
    "SIGRTMAX-5",
    "SIGRTMAX-6",
    "SIGRTMAX-7",
    "SIGRTMAX-8",
    "SIGRTMAX-9",
    "SIGRTMIN",
    "SIGRTMIN+1",
    "SIGRTMIN+10",
    "SIGRTMIN+11",
    "SIGRTMIN+12",
    "SIGRTMIN+13",
    "SIGRTMIN+14",
    "SIGRTMIN+15",
    "SIGRTMIN+2",
    "SIGRTMIN+3",
    "SIGRTMIN+4",
    "SIGRTMIN+5",
    "SIGRTMIN+6",
    "SIGRTMIN+7",
    "SIGRTMIN+8",
    "SIGRTMIN+9",
    "SIGSEGV",
    "SIGSTKFLT",
    "SIGSTOP",
    "SIGSYS",
    "SIGTERM",
    "SIGTRAP",
    "SIGTSTP",
    "SIGTTIN",
    "SIGTTOU",
    "SIGURG",
    "SIGUSR1",
    "SIGUSR2",
    "SIGVTALRM",
    "SIGWINCH",
    "SIGXCPU",
    "SIGXFSZ",
];

/// `validateStopSignal`: only with `spec.os.name`, and one the OS knows.
fn stop_signal(out: &mut Vec<StatusCause>, signal: &str, os: Option<&str>, path: &Path) {
    match os {
        None => out.push(field::forbidden(path, "may not be set for containers with empty `spec.os.name`")),
        Some("windows") => {
            if !["SIGKILL", "SIGTERM"].contains(&signal) {
                out.push(field::not_supported(path, signal, &["SIGKILL", "SIGTERM"]));
            }
        }
        Some("linux") => {
            if !LINUX_SIGNALS.contains(&signal) {
                out.push(field::not_supported(path, signal, LINUX_SIGNALS));
            }
        }
        Some(_) => {}
    }
}
