//! Partial object matching: paths with list filters, and the operators of [`FieldMatch`].

use crate::suite::{EventMatch, FieldMatch};
use serde_json::Value;

/// One segment of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// An object's member.
    Key(String),
    /// A list's item.
    Index(usize),
    /// `[key=value]`: the first list item whose `key` equals `value`.
    Filter(String, String),
}

pub(crate) fn parse_path(path: &str) -> Result<Vec<Segment>, String> {
    let mut out = Vec::new();
    let mut rest = path.trim_start_matches('.');
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']').ok_or_else(|| format!("unclosed '[' in path {path:?}"))?;
            let inner = &after[..end];
            match inner.split_once('=') {
                Some((k, v)) => out.push(Segment::Filter(k.trim().to_string(), v.trim().to_string())),
                None => out.push(Segment::Index(
                    inner.trim().parse().map_err(|_| format!("bad index [{inner}] in path {path:?}"))?,
                )),
            }
            rest = after[end + 1..].trim_start_matches('.');
            continue;
        }
        // A key runs to the next unescaped '.' or '['; `\.` is a literal dot, as in kubectl's
        // JSONPath (`metadata.labels.ray\.io/cluster`).
        let mut key = String::new();
        let mut end = rest.len();
        let mut chars = rest.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, escaped)) => key.push(escaped),
                    None => return Err(format!("dangling '\\' in path {path:?}")),
                },
                '.' | '[' => {
                    end = i;
                    break;
                }
                c => key.push(c),
            }
        }
        if key.is_empty() {
            return Err(format!("empty segment in path {path:?}"));
        }
        out.push(Segment::Key(key));
        rest = rest[end..].trim_start_matches('.');
    }
    Ok(out)
}

pub(crate) fn scalar_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What a path is looked up in: a decoded value, or an object decoded as it is read.
pub trait Members {
    /// The value at a parsed path.
    fn at(&self, segments: &[Segment]) -> Option<&Value>;
}

impl Members for Value {
    fn at(&self, segments: &[Segment]) -> Option<&Value> {
        value_at(self, segments)
    }
}

/// An object read from the API decodes only what a path reads.
impl Members for crate::engine::lazy::LazyObject {
    fn at(&self, segments: &[Segment]) -> Option<&Value> {
        crate::engine::lazy::LazyObject::at(self, segments)
    }
}

/// A timeline entry's object decodes only what a path reads.
impl Members for crate::engine::runner::TimelineItem {
    fn at(&self, segments: &[Segment]) -> Option<&Value> {
        self.object_lazily().at(segments)
    }
}

/// The value at a parsed path inside `v`.
pub(crate) fn value_at<'a>(v: &'a Value, segments: &[Segment]) -> Option<&'a Value> {
    let mut cur = v;
    for seg in segments {
        cur = match seg {
            Segment::Key(k) => cur.get(k),
            Segment::Index(i) => cur.get(*i),
            Segment::Filter(k, v) => cur
                .as_array()
                .and_then(|a| a.iter().find(|item| item.get(k).map(scalar_string).as_deref() == Some(v.as_str()))),
        }?;
    }
    Some(cur)
}

/// Looks up a path (`status.conditions[type=Ready].status`, `spec.items[0].name`).
pub fn lookup<'a, M: Members + ?Sized>(obj: &'a M, path: &str) -> Result<Option<&'a Value>, String> {
    Ok(obj.at(&parse_path(path)?))
}

fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// Loose equality: YAML `3` equals JSON `3.0`, `"True"` equals `"True"`.
fn equal(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => expected == actual,
    }
}

/// Checks one condition. `Ok(())` when it holds, `Err(line)` describing expected against observed.
pub fn check_field<M: Members + ?Sized>(obj: &M, m: &FieldMatch) -> Result<(), String> {
    let actual = lookup(obj, &m.path)?;
    let shown = |a: Option<&Value>| a.map(|v| v.to_string()).unwrap_or_else(|| "<absent>".into());
    let fail = |want: String| Err(format!("{}: expected {want}, observed {}", m.path, shown(actual)));
    if let Some(e) = &m.eq
        && !actual.is_some_and(|a| equal(e, a))
    {
        return fail(format!("== {e}"));
    }
    if let Some(e) = &m.ne
        && actual.is_some_and(|a| equal(e, a))
    {
        return fail(format!("!= {e}"));
    }
    if let Some(want) = m.exists
        && actual.is_some() != want
    {
        return fail(if want { "to exist".into() } else { "to be absent".into() });
    }
    if let Some(want) = m.absent
        && actual.is_none() != want
    {
        return fail(if want { "to be absent".into() } else { "to exist".into() });
    }
    if let Some(n) = m.gt
        && !actual.and_then(as_number).is_some_and(|a| a > n)
    {
        return fail(format!("> {n}"));
    }
    if let Some(n) = m.lt
        && !actual.and_then(as_number).is_some_and(|a| a < n)
    {
        return fail(format!("< {n}"));
    }
    if let Some(c) = &m.contains {
        let ok = match (actual, c) {
            (Some(Value::String(s)), Value::String(sub)) => s.contains(sub.as_str()),
            (Some(Value::Array(items)), want) => items.iter().any(|i| equal(want, i)),
            (Some(Value::Object(map)), Value::String(key)) => map.contains_key(key),
            _ => false,
        };
        if !ok {
            return fail(format!("to contain {c}"));
        }
    }
    if let Some(re) = &m.matches {
        let re = regex::Regex::new(re).map_err(|e| format!("{}: invalid regex {re:?}: {e}", m.path))?;
        if !actual.is_some_and(|a| re.is_match(&scalar_string(a))) {
            return fail(format!("to match /{re}/"));
        }
    }
    Ok(())
}

/// Checks every condition; returns the failing ones.
pub fn check_fields<M: Members + ?Sized>(obj: &M, fields: &[FieldMatch]) -> Vec<String> {
    fields.iter().filter_map(|f| check_field(obj, f).err()).collect()
}

/// Whether a timeline entry (as JSON, with its `object`) matches an event pattern.
pub fn event_matches(write: &crate::engine::runner::TimelineItem, m: &EventMatch) -> bool {
    let s = |k: &str| write.meta.get(k).and_then(Value::as_str).unwrap_or_default();
    m.verb.as_deref().is_none_or(|v| s("verb") == v)
        && m.change.as_deref().is_none_or(|c| s("change").eq_ignore_ascii_case(c))
        && m.kind.as_deref().is_none_or(|k| s("kind") == k)
        && m.name.as_deref().is_none_or(|n| s("name") == n)
        && m.name_prefix.as_deref().is_none_or(|p| s("name").starts_with(p))
        && m.subresource.as_deref().is_none_or(|sub| s("subresource") == sub)
        && m.actor.as_deref().is_none_or(|a| s("userAgent").contains(a))
        && m.user.as_deref().is_none_or(|u| s("user") == u)
        && (m.fields.is_empty() || check_fields(write, &m.fields).is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fm(path: &str) -> FieldMatch {
        FieldMatch {
            path: path.into(),
            eq: None,
            ne: None,
            exists: None,
            absent: None,
            gt: None,
            lt: None,
            contains: None,
            matches: None,
        }
    }

    #[test]
    fn paths_with_filters_and_indexes() {
        let o = json!({"status": {"conditions": [{"type": "A", "status": "False"}, {"type": "Ready", "status": "True"}]}, "spec": {"l": [1, 2]}});
        assert_eq!(lookup(&o, "status.conditions[type=Ready].status").unwrap(), Some(&json!("True")));
        assert_eq!(lookup(&o, "spec.l[1]").unwrap(), Some(&json!(2)));
        assert_eq!(lookup(&o, "spec.nope").unwrap(), None);
        assert!(lookup(&o, "spec.l[x").is_err());
    }

    #[test]
    fn escaped_dots_stay_in_the_key() {
        let o = json!({"metadata": {"labels": {"ray.io/cluster": "c", "a": {"b": 1}}}});
        assert_eq!(lookup(&o, r"metadata.labels.ray\.io/cluster").unwrap(), Some(&json!("c")));
        assert_eq!(lookup(&o, "metadata.labels.a.b").unwrap(), Some(&json!(1)));
        assert!(lookup(&o, "metadata.labels.x\\").is_err());
    }

    #[test]
    fn operators_pass_and_fail_with_a_clear_line() {
        let o = json!({"a": 3, "s": "hello", "l": ["x"], "m": {"k": 1}});
        let mut m = fm("a");
        m.eq = Some(json!(3.0));
        assert!(check_field(&o, &m).is_ok());
        m.eq = Some(json!(4));
        assert_eq!(check_field(&o, &m).unwrap_err(), "a: expected == 4, observed 3");
        let mut m = fm("a");
        m.gt = Some(2.0);
        m.lt = Some(4.0);
        assert!(check_field(&o, &m).is_ok());
        let mut m = fm("s");
        m.matches = Some("^hel+o$".into());
        assert!(check_field(&o, &m).is_ok());
        let mut m = fm("l");
        m.contains = Some(json!("x"));
        assert!(check_field(&o, &m).is_ok());
        let mut m = fm("nope");
        m.absent = Some(true);
        assert!(check_field(&o, &m).is_ok());
        m.absent = None;
        m.exists = Some(true);
        assert_eq!(check_field(&o, &m).unwrap_err(), "nope: expected to exist, observed <absent>");
        let mut m = fm("s");
        m.ne = Some(json!("hello"));
        assert!(check_field(&o, &m).is_err());
    }
}
