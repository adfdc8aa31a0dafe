//! Bindings: `${name}` in a row's strings, replaced by values bound earlier in the row.

use crate::suite::{EventMatch, FieldMatch, ObjectRef};
use serde_json::Value;
use std::collections::BTreeMap;

/// Replaces `${name}` with bound values in every string of a value.
pub(super) fn substitute(v: &Value, bindings: &BTreeMap<String, String>) -> Value {
    match v {
        Value::String(s) => Value::String(substitute_str(s, bindings)),
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute(x, bindings)).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, x)| (substitute_str(k, bindings), substitute(x, bindings))).collect())
        }
        other => other.clone(),
    }
}

/// `${row}`: five characters that differ from one row's namespace to the next, for the names of
/// cluster-scoped objects a row wants to itself on a shared cluster (`cluster-queue-${row}`),
/// where the namespace itself would be too long for a label value. The same on every run of a
/// row on the fake backend (its namespace is always `default`).
pub(super) fn row_token(namespace: &str) -> String {
    apimachinery::names::stable_suffix(namespace)
}

pub(super) fn substitute_str(s: &str, bindings: &BTreeMap<String, String>) -> String {
    let mut out = s.to_string();
    for (k, v) in bindings {
        out = out.replace(&format!("${{{k}}}"), v);
    }
    out
}

pub(super) fn substitute_ref(r: &ObjectRef, bindings: &BTreeMap<String, String>) -> ObjectRef {
    let s = |o: &Option<String>| o.as_ref().map(|x| substitute_str(x, bindings));
    ObjectRef {
        api_version: substitute_str(&r.api_version, bindings),
        kind: substitute_str(&r.kind, bindings),
        name: s(&r.name),
        namespace: s(&r.namespace),
        selector: s(&r.selector),
        field_selector: s(&r.field_selector),
    }
}

pub(super) fn substitute_fields(fields: &[FieldMatch], bindings: &BTreeMap<String, String>) -> Vec<FieldMatch> {
    let v = |o: &Option<Value>| o.as_ref().map(|x| substitute(x, bindings));
    fields
        .iter()
        .map(|f| FieldMatch {
            path: substitute_str(&f.path, bindings),
            eq: v(&f.eq),
            ne: v(&f.ne),
            contains: v(&f.contains),
            matches: f.matches.as_ref().map(|m| substitute_str(m, bindings)),
            ..f.clone()
        })
        .collect()
}

pub(super) fn substitute_event(m: &EventMatch, bindings: &BTreeMap<String, String>) -> EventMatch {
    let s = |o: &Option<String>| o.as_ref().map(|x| substitute_str(x, bindings));
    EventMatch {
        verb: s(&m.verb),
        change: s(&m.change),
        kind: s(&m.kind),
        name: s(&m.name),
        name_prefix: s(&m.name_prefix),
        subresource: s(&m.subresource),
        actor: s(&m.actor),
        user: s(&m.user),
        fields: substitute_fields(&m.fields, bindings),
    }
}
