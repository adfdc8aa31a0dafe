//! A Service's ports, as kubernetes v1.37.2 pkg/apis/core/validation/validation.go checks
//! them: each port (`validateServicePort`), node ports on a ClusterIP service, and duplicate
//! node ports and ports (the loops of `validateService`).

use super::pod_spec::port_name_errors;
use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use apimachinery::validation::{dns1123_label_errors, label_key_errors};
use serde_json::Value;

const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

fn ports(spec: &Value) -> &[Value] {
    spec.get("ports").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

fn ports_path() -> Path {
    Path::root("spec").child("ports")
}

fn int(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

/// `validateServicePort` for every port: a name (required when there are several, a unique
/// DNS label), the port number, the protocol, the target port (number or name), the
/// appProtocol (a qualified name).
pub(crate) fn service_port_causes(spec: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let all = ports(spec);
    let mut names: Vec<&str> = Vec::new();
    for (i, p) in all.iter().enumerate() {
        let at = ports_path().index(i);
        let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
        if all.len() > 1 && name.is_empty() {
            out.push(field::required(&at.child("name"), ""));
        } else if !name.is_empty() {
            for msg in dns1123_label_errors(name) {
                out.push(field::invalid(&at.child("name"), name, &msg));
            }
            if names.contains(&name) {
                out.push(field::duplicate(&at.child("name"), name));
            } else {
                names.push(name);
            }
        }
        let port = int(p, "port");
        if !(1..=65535).contains(&port) {
            out.push(field::invalid(&at.child("port"), port, PORT_RANGE));
        }
        match p.get("protocol").and_then(Value::as_str).unwrap_or_default() {
            "" => out.push(field::required(&at.child("protocol"), "")),
            proto if !PROTOCOLS.contains(&proto) => {
                out.push(field::not_supported(&at.child("protocol"), proto, PROTOCOLS));
            }
            _ => {}
        }
        // ValidatePortNumOrName; defaulting made an unset target port the port.
        match p.get("targetPort") {
            Some(Value::String(name)) => {
                for msg in port_name_errors(name) {
                    out.push(field::invalid(&at.child("targetPort"), name.as_str(), msg));
                }
            }
            other => {
                let n = other.and_then(Value::as_i64).unwrap_or(0);
                if !(1..=65535).contains(&n) {
                    out.push(field::invalid(&at.child("targetPort"), n, PORT_RANGE));
                }
            }
        }
        if let Some(app) = p.get("appProtocol").and_then(Value::as_str) {
            for msg in label_key_errors(app) {
                out.push(field::invalid(&at.child("appProtocol"), app, &msg));
            }
        }
    }
    out
}

/// A ClusterIP service may not name node ports.
pub(crate) fn cluster_ip_node_port_causes(spec: &Value) -> Vec<StatusCause> {
    if spec["type"] != "ClusterIP" {
        return Vec::new();
    }
    (0..ports(spec).len())
        .filter(|&i| int(&ports(spec)[i], "nodePort") != 0)
        .map(|i| {
            field::forbidden(&ports_path().index(i).child("nodePort"), "may not be used when `type` is 'ClusterIP'")
        })
        .collect()
}

/// Duplicate node ports (by protocol and node port), then duplicate ports (by protocol and
/// port; upstream prints the whole `core.ServicePort` key, with Go's field names).
pub(crate) fn duplicate_port_causes(spec: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let all = ports(spec);
    let proto = |p: &Value| p.get("protocol").and_then(Value::as_str).unwrap_or_default().to_string();
    let mut node_ports = Vec::new();
    for (i, p) in all.iter().enumerate() {
        let np = int(p, "nodePort");
        if np == 0 {
            continue;
        }
        let key = (proto(p), np);
        if node_ports.contains(&key) {
            out.push(field::duplicate(&ports_path().index(i).child("nodePort"), np));
        }
        node_ports.push(key);
    }
    let mut seen = Vec::new();
    for (i, p) in all.iter().enumerate() {
        let key = (proto(p), int(p, "port"));
        if seen.contains(&key) {
            let text = format!(
                r#"{{"Name":"","Protocol":{},"AppProtocol":null,"Port":{},"TargetPort":0,"NodePort":0}}"#,
                Value::String(key.0.clone()),
                key.1
            );
            out.push(field::duplicate(&ports_path().index(i), Bad::Raw(text)));
        }
        seen.push(key);
    }
    out
}
