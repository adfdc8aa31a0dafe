//! Events: `core/v1` Event and `events.k8s.io/v1` Event are two views of one storage, as in
//! kube-apiserver. An event written through either API is served by both, converted field by
//! field, and both APIs' field selectors match it.

use crate::registry::printers::{NAME_DESC, col, int, since};
use crate::registry::{NameRule, ResourceType, Strategy};
use crate::storage::field_string;
use apimachinery::unstructured::nested_field_at;
use jiff::Timestamp;
use serde_json::{Map, Value, json};

/// The group of the newer Events API.
pub(crate) const EVENTS_GROUP: &str = "events.k8s.io";

/// core/v1 Event and events.k8s.io/v1 Event.
#[derive(Debug)]
pub(crate) struct EventStrategy;

/// `ValidateEventCreate`: the legacy rules for core/v1 (namespaces agree; with an
/// `eventTime`, the reporting fields are required), the strict ones for events.k8s.io.
fn validate_event(rt: &ResourceType, obj: &Value, create: bool) -> Vec<crate::error::StatusCause> {
    use crate::registry::field::{self, Path};
    let mut out = Vec::new();
    let v1 = rt.group == EVENTS_GROUP;
    let s = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or_default();
    let ns = obj["metadata"]["namespace"].as_str().unwrap_or_default();
    let (involved, involved_name) =
        if v1 { (&obj["regarding"], "involvedObject") } else { (&obj["involvedObject"], "involvedObject") };
    let ins = involved["namespace"].as_str().unwrap_or_default();
    let ns_path = Path::root(involved_name).child("namespace");
    let has_time = obj.get("eventTime").is_some_and(|v| v.as_str().is_some_and(|t| !t.is_empty()));
    let controller_field = if v1 { "reportingController" } else { "reportingComponent" };
    let controller = s(controller_field);
    if !has_time {
        if (ins.is_empty() && !ns.is_empty() && ns != "default") || (!ins.is_empty() && ns != ins) {
            out.push(field::invalid(&ns_path, ins, "does not match event.namespace"));
        }
    } else {
        if ins.is_empty() && ns != "default" && ns != "kube-system" {
            out.push(field::invalid(&ns_path, ins, "does not match event.namespace"));
        } else if !ins.is_empty() && ns != ins && !v1 {
            // The legacy check only covers an empty involved namespace here.
        }
        if controller.is_empty() {
            out.push(field::required(&Path::root(controller_field), ""));
        }
        for msg in apimachinery::validation::label_key_errors(controller) {
            out.push(field::invalid(&Path::root(controller_field), controller, &msg));
        }
        if s("reportingInstance").is_empty() {
            out.push(field::required(&Path::root("reportingInstance"), ""));
        }
        if s("action").is_empty() {
            out.push(field::required(&Path::root("action"), ""));
        }
        if s("reportingInstance").len() > 128 {
            out.push(field::invalid(&Path::root("reportingInstance"), "", "can have at most 128 characters"));
        }
        if s("action").len() > 128 {
            out.push(field::invalid(&Path::root("action"), "", "can have at most 128 characters"));
        }
        if s("reason").is_empty() {
            out.push(field::required(&Path::root("reason"), ""));
        }
        if s("reason").len() > 128 {
            out.push(field::invalid(&Path::root("reason"), "", "can have at most 128 characters"));
        }
        let note = if v1 { s("note") } else { s("message") };
        if note.len() > 1024 {
            out.push(field::invalid(&Path::root("message"), "", "can have at most 1024 characters"));
        }
    }
    // The strict rules of events.k8s.io on create (ValidateEventCreate; an update checks
    // immutability instead, in `validate_update`).
    if v1 && create {
        // ValidateObjectMeta checks the name's format only when there is one (a missing name
        // is reported once, as Required).
        let name = obj["metadata"]["name"].as_str().unwrap_or_default();
        for msg in apimachinery::validation::dns1123_subdomain_errors(name).into_iter().filter(|_| !name.is_empty()) {
            out.push(field::invalid(&Path::root("metadata").child("name"), name, &msg));
        }
        if !has_time {
            out.push(field::required(&Path::root("eventTime"), ""));
        }
        let ty = s("type");
        if ty != "Normal" && ty != "Warning" {
            out.push(field::invalid(&Path::root("type"), "", &format!("has invalid value: {ty}")));
        }
        for (key, path) in [
            ("deprecatedFirstTimestamp", "firstTimestamp"),
            ("deprecatedLastTimestamp", "lastTimestamp"),
            ("deprecatedCount", "count"),
        ] {
            if !is_zero(obj.get(key)) {
                out.push(field::invalid(&Path::root(path), "", "needs to be unset"));
            }
        }
        let source = &obj["deprecatedSource"];
        if !is_zero(source.get("component")) || !is_zero(source.get("host")) {
            out.push(field::invalid(&Path::root("source"), "", "needs to be unset"));
        }
    }
    if v1
        && create
        && let Some(series) = obj.get("series").filter(|v| !v.is_null())
    {
        out.extend(series_causes(series));
    }
    out
}

/// validateV1EventSeries.
fn series_causes(series: &Value) -> Vec<crate::error::StatusCause> {
    use crate::registry::field::{self, Path};
    let mut out = Vec::new();
    if series["count"].as_i64().unwrap_or(0) < 2 {
        out.push(field::invalid(&Path::root("series.count"), "", "should be at least 2"));
    }
    if is_zero(series.get("lastObservedTime")) {
        out.push(field::required(&Path::root("series.lastObservedTime"), ""));
    }
    out
}

/// Whether a field holds Go's zero value (absent, null, "", 0, false, empty list or object).
fn is_zero(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(Value::Bool(b)) => !b,
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.values().all(|v| is_zero(Some(v))),
    }
}

impl Strategy for EventStrategy {
    /// core/v1 events validate no name beyond the generic path-segment rule; events.k8s.io
    /// adds the DNS subdomain rule on create (in `validate_event`).
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn validate(&self, rt: &ResourceType, obj: &Value) -> Vec<crate::error::StatusCause> {
        validate_event(rt, obj, true)
    }

    /// `ValidateEventUpdate`: the object an event is about does not change.
    fn validate_update(&self, rt: &ResourceType, obj: &Value, old: &Value) -> Vec<crate::error::StatusCause> {
        use crate::registry::field::{Bad, FIELD_IMMUTABLE, Path, invalid};
        let mut out = validate_event(rt, obj, false);
        if rt.group != EVENTS_GROUP {
            return out;
        }
        if obj.get("series") != old.get("series")
            && let Some(series) = obj.get("series").filter(|v| !v.is_null())
        {
            out.extend(series_causes(series));
        }
        // events.k8s.io: ValidateEventUpdate keeps what the event reports (internal names; a
        // changed reason is reported once by v1.37.2, measured).
        for (key, path) in [
            ("regarding", "involvedObject"),
            ("reason", "reason"),
            ("note", "message"),
            ("deprecatedSource", "source"),
            ("deprecatedFirstTimestamp", "firstTimestamp"),
            ("deprecatedLastTimestamp", "lastTimestamp"),
            ("deprecatedCount", "count"),
            ("type", "type"),
            ("eventTime", "eventTime"),
            ("action", "action"),
            ("related", "related"),
            ("reportingController", "reportingController"),
            ("reportingInstance", "reportingInstance"),
        ] {
            let (n, o) = (obj.get(key), old.get(key));
            if n != o && !(is_zero(n) && is_zero(o)) {
                out.push(invalid(&Path::root(path), Bad::of(n.unwrap_or(&Value::Null)), FIELD_IMMUTABLE));
            }
        }
        out
    }

    /// The values under the names of both APIs, whichever API wrote the event.
    fn selectable_values(&self, _rt: &ResourceType, obj: &Value) -> Vec<(String, String)> {
        selectable_values(obj)
    }

    fn convert_to(&self, rt: &ResourceType, obj: &mut Value) {
        convert_for(rt, obj);
    }

    fn table_columns(&self, _rt: &ResourceType) -> Vec<Value> {
        vec![
            col("Last Seen", "string", "", 0, "When the event was last observed."),
            col("Type", "string", "", 0, "Normal or Warning."),
            col("Reason", "string", "", 0, "Why the event happened, in CamelCase."),
            col("Object", "string", "", 0, "The object the event is about."),
            col("Subobject", "string", "", 1, "The part of the object the event is about."),
            col("Source", "string", "", 1, "The component that reported the event."),
            col("Message", "string", "", 0, "What happened, for people."),
            col("First Seen", "string", "", 1, "When the event was first observed."),
            col("Count", "string", "", 1, "How often the event happened."),
            col("Name", "string", "name", 1, NAME_DESC),
        ]
    }

    fn table_cells(&self, rt: &ResourceType, obj: &Value, now: Timestamp) -> Vec<Value> {
        event_cells(obj, now, rt.group == EVENTS_GROUP)
    }
}

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

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// Rewrites an event stored through one API into the other API's shape when `rt` is the other.
fn convert_for(rt: &ResourceType, v: &mut Value) {
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
fn selectable_values(v: &Value) -> Vec<(String, String)> {
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
        nested_field_at(v, &path).map(field_string).unwrap_or_default()
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

fn event_cells(o: &Value, now: Timestamp, events_v1: bool) -> Vec<Value> {
    // events.k8s.io/v1 names the same things differently.
    let (regarding, message, first, last, count) = if events_v1 {
        (
            &o["regarding"],
            &o["note"],
            &o["deprecatedFirstTimestamp"],
            if o["series"]["lastObservedTime"].is_string() {
                &o["series"]["lastObservedTime"]
            } else if o["deprecatedLastTimestamp"].is_string() {
                &o["deprecatedLastTimestamp"]
            } else {
                &o["eventTime"]
            },
            if o["series"]["count"].is_i64() { &o["series"]["count"] } else { &o["deprecatedCount"] },
        )
    } else {
        (
            &o["involvedObject"],
            &o["message"],
            &o["firstTimestamp"],
            if o["series"]["lastObservedTime"].is_string() {
                &o["series"]["lastObservedTime"]
            } else if o["lastTimestamp"].is_string() {
                &o["lastTimestamp"]
            } else {
                &o["eventTime"]
            },
            if o["series"]["count"].is_i64() { &o["series"]["count"] } else { &o["count"] },
        )
    };
    let first = if first.is_string() { first } else { last };
    let (component, host) = if events_v1 {
        (o["reportingController"].as_str(), o["reportingInstance"].as_str())
    } else {
        (
            o["source"]["component"].as_str().filter(|s| !s.is_empty()).or(o["reportingComponent"].as_str()),
            o["source"]["host"].as_str().filter(|s| !s.is_empty()).or(o["reportingInstance"].as_str()),
        )
    };
    let source = match (component.filter(|s| !s.is_empty()), host.filter(|s| !s.is_empty())) {
        (Some(c), Some(h)) => format!("{c}, {h}"),
        (Some(c), None) => c.to_string(),
        (None, Some(h)) => h.to_string(),
        (None, None) => String::new(),
    };
    vec![
        json!(since(last, now)),
        json!(o["type"].as_str().unwrap_or_default()),
        json!(o["reason"].as_str().unwrap_or_default()),
        json!(format!(
            "{}/{}",
            regarding["kind"].as_str().unwrap_or_default().to_lowercase(),
            regarding["name"].as_str().unwrap_or_default()
        )),
        json!(regarding["fieldPath"].as_str().unwrap_or_default()),
        json!(source),
        json!(message.as_str().unwrap_or_default()),
        json!(since(first, now)),
        json!(int(count).max(if events_v1 { 1 } else { 0 }).to_string()),
        json!(o["metadata"]["name"]),
    ]
}
