//! Events: `core/v1` Event and `events.k8s.io/v1` Event are two views of one storage, as in
//! kube-apiserver. An event written through either API is served by both, converted field by
//! field, and both APIs' field selectors match it.

use crate::registry::ResourceType;
use crate::store::{field_string, get_path};
use serde_json::{Map, Value};

/// The group of the newer Events API.
pub const EVENTS_GROUP: &str = "events.k8s.io";

/// Fields of `core/v1` Event and the `events.k8s.io/v1` fields they convert to.
const RENAMES: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

/// Whether `rt` serves Events (either API).
pub fn is_event(rt: &ResourceType) -> bool {
    rt.kind == "Event" && rt.version == "v1" && (rt.group.is_empty() || rt.group == EVENTS_GROUP)
}

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// Rewrites an event stored through one API into the other API's shape when `rt` is the other.
pub fn convert_for(rt: &ResourceType, v: &mut Value) {
    if !is_event(rt) {
        return;
    }
    let stored_group = group_of(v["apiVersion"].as_str().unwrap_or_default()).to_string();
    if stored_group == rt.group {
        return;
    }
    let Some(o) = v.as_object_mut() else { return };
    let to_events = rt.group == EVENTS_GROUP;
    let mut out = Map::new();
    for (k, val) in std::mem::take(o) {
        let renamed = RENAMES
            .iter()
            .find_map(|(core, events)| match to_events {
                true if k == *core => Some(*events),
                false if k == *events => Some(*core),
                _ => None,
            })
            .map_or(k, str::to_string);
        out.insert(renamed, val);
    }
    *o = out;
}

/// The values an event's field selectors read, under the names of both APIs, whichever API
/// wrote it (kube-apiserver converts `events.k8s.io` labels to the core ones before matching).
pub fn selectable_values(v: &Value) -> Vec<(String, String)> {
    let events_shaped = group_of(v["apiVersion"].as_str().unwrap_or_default()) == EVENTS_GROUP;
    let read = |core: &str| -> String {
        let path = if events_shaped {
            let (head, tail) = core.split_once('.').map_or((core, None), |(h, t)| (h, Some(t)));
            let head = RENAMES.iter().find(|(c, _)| *c == head).map_or(head, |(_, e)| *e);
            match tail {
                Some(t) => format!("{head}.{t}"),
                None => head.to_string(),
            }
        } else {
            core.to_string()
        };
        get_path(v, &path).map(field_string).unwrap_or_default()
    };
    let mut out = Vec::new();
    for f in ["kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"] {
        let value = read(&format!("involvedObject.{f}"));
        out.push((format!("involvedObject.{f}"), value.clone()));
        out.push((format!("regarding.{f}"), value));
    }
    let reporting = read("reportingComponent");
    let mut source = read("source.component");
    if source.is_empty() {
        source = reporting.clone();
    }
    out.push(("reason".into(), read("reason")));
    out.push(("type".into(), read("type")));
    out.push(("source".into(), source));
    out.push(("reportingComponent".into(), reporting.clone()));
    out.push(("reportingController".into(), reporting));
    out
}
