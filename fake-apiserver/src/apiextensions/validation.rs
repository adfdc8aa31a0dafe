//! Validation of a value against its schema, with kube-openapi's and apiextensions' messages,
//! reasons and field paths.

use super::formats::format_ok;
use super::go_values::{Num, go_body_value, go_float, num_of};
use super::schema::{Additional, ListType, Node, Pattern, is_meta_field};
use super::{FieldCause, MAX_DEPTH};
use apimachinery::go::quote;
use apimachinery::json::same;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt::Write as _;

/// Where in the object a node is validated.
#[derive(Clone, Copy)]
pub(super) struct Mode {
    /// The resource root: apiVersion/kind/metadata are the server's business.
    pub(super) root: bool,
    /// Inside allOf/anyOf/oneOf/not: only value validations apply (no list-type
    /// or embedded-resource checks, which apiserver runs on the structural schema only).
    pub(super) junctor: bool,
}

/// One validation, with what is left of its work budget.
pub(super) struct Validator {
    pub(super) budget: u64,
    pub(super) exhausted: bool,
}

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

/// go-swag's IsFloat64AJSONInteger: whole and within ±2^53.
fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_992.0;
    f.is_finite() && (-MAX..=MAX).contains(&f) && f.fract() == 0.0
}

/// kube-openapi's schema type and format of a value.
fn schema_type_of(v: &Value) -> (&'static str, &'static str) {
    match v {
        Value::Null => ("null", ""),
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(n) => match num_of(n) {
            Num::I(_) => ("integer", "int64"),
            Num::F(_) => ("number", "float64"),
        },
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
    }
}

fn enum_eq(a: &Value, v: &Value) -> bool {
    if a == v {
        return true;
    }
    // Go converts between numeric kinds before comparing: 1 matches 1.0.
    match (a, v) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => false,
    }
}

fn cause_invalid(path: &str, value: &str, detail: &str) -> FieldCause {
    FieldCause::new(FieldCause::INVALID, path, format!("Invalid value: {value}: {detail}"))
}

fn cause_type(path: &str, label: &str, detail: &str) -> FieldCause {
    FieldCause::new(FieldCause::TYPE_INVALID, path, format!("Invalid value: {}: {detail}", quote(label)))
}

impl Validator {
    /// Validates `v` against `n` at `path`, pushing every cause into `out`. `old` is the value
    /// `v` correlates with in the object being updated: a value equal to it is not validated,
    /// as CRD validation ratcheting (GA in 1.33) drops every error raised on an unchanged value
    /// (apiextensions-apiserver `validation/ratcheting.go`). Answers whether `v` is unchanged.
    ///
    /// An object, or a list whose items correlate (a map list, or one with no type), is not
    /// compared whole: its members are, one by one, and only those that changed are looked
    /// into; when none did, what the value reported itself is taken back. Comparing whole at
    /// every level would compare an object once per level of its depth.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn node(
        &mut self,
        n: &Node,
        v: &Value,
        old: Option<&Value>,
        path: &str,
        depth: usize,
        mode: Mode,
        out: &mut Vec<FieldCause>,
    ) -> bool {
        let by_members = match (v, old) {
            (Value::Object(_), Some(Value::Object(_))) => true,
            (Value::Array(_), Some(Value::Array(_))) => {
                n.items.is_some() && matches!(n.list_type, Some(ListType::Map) | None)
            }
            _ => false,
        };
        if !by_members && old.is_some_and(|o| same(o, v)) {
            return true;
        }
        if self.budget == 0 {
            self.exhausted = true;
            return false;
        }
        self.budget -= 1;
        if depth > MAX_DEPTH {
            out.push(cause_invalid(path, "\"\"", &format!("too deeply nested (more than {MAX_DEPTH} levels)")));
            return false;
        }
        if v.is_null() {
            // kube-openapi only runs the type and enum checks on null.
            let types = n.types();
            if !types.is_empty() && !n.nullable {
                out.push(cause_type(
                    path,
                    "null",
                    &format!("{path} in body must be of type {}: \"null\"", types.join(",")),
                ));
            }
            self.check_enum(n, v, path, out);
            return false;
        }
        let start = out.len();
        self.check_type(n, v, path, out);
        self.check_junctors(n, v, path, depth, out);
        let mut unchanged = false;
        match v {
            Value::String(s) => check_string(n, s, path, out),
            Value::Number(num) => check_number(n, num_of(num), path, out),
            Value::Array(a) => unchanged = self.check_array(n, a, old, path, depth, mode, out),
            _ => {}
        }
        self.check_enum(n, v, path, out);
        if let Value::Object(m) = v {
            unchanged = self.check_object(n, m, old, path, depth, mode, out);
            if n.embedded && !mode.root && !mode.junctor {
                check_embedded(m, path, out);
            }
        }
        if by_members && unchanged {
            out.truncate(start);
            return true;
        }
        false
    }

    fn check_type(&self, n: &Node, v: &Value, path: &str, out: &mut Vec<FieldCause>) {
        let types = n.types();
        let format = n.format.as_deref().unwrap_or("");
        if types.is_empty() && format.is_empty() {
            return;
        }
        let (sch, vfmt) = schema_type_of(v);
        let has = |t: &str| types.contains(&t);
        let float_int = sch == "number" && v.as_f64().is_some_and(is_json_integer) && has("integer");
        let int_float = sch == "integer" && has("number");
        let string_or_array = v.is_string() || v.is_array();
        if !(string_or_array || format.is_empty() || has(sch) || vfmt == format || float_int || int_float) {
            out.push(cause_type(path, vfmt, &format!("{path} in body must be of type {format}: {}", quote(vfmt))));
            return;
        }
        // kube-openapi: a formatted non-numeric schema skips the type check of strings and arrays.
        if string_or_array && !(has("number") || has("integer") || format.is_empty()) {
            return;
        }
        if !(has(sch) || float_int || int_float) {
            out.push(cause_type(
                path,
                sch,
                &format!("{path} in body must be of type {}: {}", types.join(","), quote(sch)),
            ));
        }
    }

    /// Validate `v` against one alternative, into its own list.
    fn branch(&mut self, b: &Node, v: &Value, path: &str, depth: usize) -> Vec<FieldCause> {
        let mut r = Vec::new();
        // The alternatives are checked without correlation: only the node as a whole ratchets.
        self.node(b, v, None, path, depth, Mode { root: false, junctor: true }, &mut r);
        r
    }

    fn check_junctors(&mut self, n: &Node, v: &Value, path: &str, depth: usize, out: &mut Vec<FieldCause>) {
        let quoted = quote(path);
        if !n.any_of.is_empty() {
            let mut best: Option<Vec<FieldCause>> = None;
            let mut ok = false;
            for b in &n.any_of {
                let r = self.branch(b, v, path, depth);
                if r.is_empty() {
                    ok = true;
                    break;
                }
                if best.as_ref().is_none_or(|x| r.len() < x.len()) {
                    best = Some(r);
                }
            }
            if !ok {
                out.push(cause_invalid(path, "\"\"", &format!("{quoted} must validate at least one schema (anyOf)")));
                out.extend(best.unwrap_or_default());
            }
        }
        if !n.one_of.is_empty() {
            let mut best: Option<Vec<FieldCause>> = None;
            let mut valid = 0usize;
            for b in &n.one_of {
                let r = self.branch(b, v, path, depth);
                if r.is_empty() {
                    valid += 1;
                } else if best.as_ref().is_none_or(|x| r.len() < x.len()) {
                    best = Some(r);
                }
            }
            if valid != 1 {
                let found = if valid == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                out.push(cause_invalid(
                    path,
                    "\"\"",
                    &format!("{quoted} must validate one and only one schema (oneOf). {found}"),
                ));
                if valid == 0 {
                    out.extend(best.unwrap_or_default());
                }
            }
        }
        if !n.all_of.is_empty() {
            let mut validated = 0usize;
            for b in &n.all_of {
                let r = self.branch(b, v, path, depth);
                if r.is_empty() {
                    validated += 1;
                }
                out.extend(r);
            }
            if validated != n.all_of.len() {
                let extra = if validated == 0 { ". None validated" } else { "" };
                out.push(cause_invalid(
                    path,
                    "\"\"",
                    &format!("{quoted} must validate all the schemas (allOf){extra}"),
                ));
            }
        }
        if let Some(not) = &n.not
            && self.branch(not, v, path, depth).is_empty()
        {
            out.push(cause_invalid(path, "\"\"", &format!("{quoted} must not validate the schema (not)")));
        }
    }

    fn check_enum(&self, n: &Node, v: &Value, path: &str, out: &mut Vec<FieldCause>) {
        let Some(values) = &n.enum_values else { return };
        if values.iter().any(|a| enum_eq(a, v)) {
            return;
        }
        let supported: Vec<String> = values
            .iter()
            .map(|a| match a {
                Value::String(s) => quote(s),
                // apiserver quotes the JSON of non-string values.
                Value::Number(n) => quote(&match num_of(n) {
                    Num::I(i) => i.to_string(),
                    Num::F(f) => f.to_string(),
                }),
                other => quote(&other.to_string()),
            })
            .collect();
        let mut msg = format!("Unsupported value: {}", go_body_value(v));
        if !supported.is_empty() {
            let _ = write!(msg, ": supported values: {}", supported.join(", "));
        }
        out.push(FieldCause::new(FieldCause::NOT_SUPPORTED, path, msg));
    }

    /// Validates a list; answers whether it is unchanged, item by item (only asked of lists
    /// whose items correlate).
    #[allow(clippy::too_many_arguments)]
    fn check_array(
        &mut self,
        n: &Node,
        a: &[Value],
        old: Option<&Value>,
        path: &str,
        depth: usize,
        mode: Mode,
        out: &mut Vec<FieldCause>,
    ) -> bool {
        let olds = old.and_then(Value::as_array);
        let mut unchanged = olds.is_some_and(|o| o.len() == a.len());
        if let Some(items) = &n.items {
            for (i, v) in a.iter().enumerate() {
                // Items correlate by their keys in a map list, by index in a list with no type,
                // not at all in a set or an atomic list (correlateOldValueForChildAtNewIndex).
                let before = olds.and_then(|olds| match n.list_type {
                    Some(ListType::Map) => olds
                        .iter()
                        .position(|o| n.list_map_keys.iter().all(|k| o.get(k) == v.get(k)))
                        .map(|j| (j, &olds[j])),
                    None => olds.get(i).map(|o| (i, o)),
                    Some(ListType::Set | ListType::Atomic) => None,
                });
                // Unchanged as a list: every item unchanged and where it was.
                unchanged &= before.is_some_and(|(j, _)| j == i);
                if before.is_some_and(|(_, o)| same(o, v)) {
                    continue;
                }
                unchanged = false;
                let p = format!("{path}[{i}]");
                let correlated = before.map(|(_, o)| o);
                self.node(items, v, correlated, &p, depth + 1, Mode { root: false, junctor: mode.junctor }, out);
            }
        }
        let size = a.len() as u64;
        if let Some(min) = n.min_items
            && size < min
        {
            out.push(cause_invalid(
                path,
                &size.to_string(),
                &format!("{path} in body should have at least {min} items"),
            ));
        }
        if let Some(max) = n.max_items
            && size > max
        {
            out.push(too_many(path, size, max));
        }
        if mode.junctor {
            return unchanged;
        }
        match n.list_type {
            Some(ListType::Set) => {
                for i in non_unique(a) {
                    if let Some(v) = a.get(i) {
                        out.push(duplicate(&format!("{path}[{i}]"), &go_body_value(v)));
                    }
                }
            }
            Some(ListType::Map) => check_list_map(&n.list_map_keys, a, path, out),
            Some(ListType::Atomic) | None => {}
        }
        unchanged
    }

    /// Validates an object's members; answers whether it is unchanged, member by member.
    #[allow(clippy::too_many_arguments)]
    fn check_object(
        &mut self,
        n: &Node,
        m: &Map<String, Value>,
        old: Option<&Value>,
        path: &str,
        depth: usize,
        mode: Mode,
        out: &mut Vec<FieldCause>,
    ) -> bool {
        let olds = old.and_then(Value::as_object);
        let same_as_old = || olds.is_some_and(|o| same_members_of(m, o));
        let count = m.len() as u64;
        // kube-openapi stops at a property-count failure.
        if let Some(min) = n.min_properties
            && count < min
        {
            out.push(cause_invalid(
                path,
                &count.to_string(),
                &format!("{path} in body should have at least {min} properties"),
            ));
            return same_as_old();
        }
        if let Some(max) = n.max_properties
            && count > max
        {
            out.push(too_many(path, count, max));
            return same_as_old();
        }
        let child_mode = Mode { root: false, junctor: mode.junctor };
        let mut unchanged = olds.is_some_and(|o| o.len() == m.len());
        // Members that are not validated (the server's at the root, or ones no schema covers)
        // still count for whether the object is unchanged: compared last, only if it matters.
        let mut unvalidated: Vec<(&String, &Value)> = Vec::new();
        for (k, v) in m {
            let before = olds.and_then(|o| o.get(k));
            let schema = if mode.root && is_meta_field(k) {
                None
            } else {
                n.prop(k).or(match &n.additional {
                    Some(Additional::Schema(s)) => Some(&**s),
                    _ => None,
                })
            };
            match schema {
                // A member equal to its old value is not looked into (compared here once, not
                // again by each level below it).
                Some(_) if before.is_some_and(|b| same(b, v)) => {}
                Some(s) => {
                    self.node(s, v, before, &child_path(path, k), depth + 1, child_mode, out);
                    unchanged = false;
                }
                None => unvalidated.push((k, v)),
            }
        }
        for r in &n.required {
            if mode.root && is_meta_field(r) {
                continue;
            }
            if !m.contains_key(r) {
                out.push(FieldCause::new(FieldCause::REQUIRED, &child_path(path, r), "Required value".to_string()));
            }
        }
        unchanged && unvalidated.into_iter().all(|(k, v)| olds.and_then(|o| o.get(k)).is_some_and(|o| same(o, v)))
    }
}

/// Whether two objects have the same members (in any order).
fn same_members_of(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same(v, w)))
}

fn too_many(path: &str, actual: u64, max: u64) -> FieldCause {
    let what = if max == 1 { "item" } else { "items" };
    FieldCause::new(FieldCause::TOO_MANY, path, format!("Too many: {actual}: must have at most {max} {what}"))
}

fn duplicate(path: &str, value: &str) -> FieldCause {
    FieldCause::new(FieldCause::DUPLICATE, path, format!("Duplicate value: {value}"))
}

fn check_string(n: &Node, s: &str, path: &str, out: &mut Vec<FieldCause>) {
    // kube-openapi reports only the first failing string check.
    let chars = || s.chars().count() as u64;
    if let Some(max) = n.max_length
        && chars() > max
    {
        out.push(FieldCause::new(FieldCause::TOO_LONG, path, format!("Too long: may not be longer than {max}")));
    } else if let Some(min) = n.min_length
        && chars() < min
    {
        out.push(cause_invalid(path, &quote(s), &format!("{path} in body should be at least {min} chars long")));
    } else if let Some(Pattern { source, re: Some(re) }) = &n.pattern
        && !re.is_match(s)
    {
        out.push(cause_invalid(path, &quote(s), &format!("{path} in body should match '{source}'")));
    }
    if let Some(f) = &n.format
        && !format_ok(f, s)
    {
        out.push(cause_type(path, s, &format!("{path} in body must be of type {f}: {}", quote(s))));
    }
}

fn check_number(n: &Node, num: Num, path: &str, out: &mut Vec<FieldCause>) {
    let shown = match num {
        Num::I(i) => i.to_string(),
        Num::F(f) => go_float(f),
    };
    if let Some(factor) = n.multiple_of {
        // Integers are checked natively against the truncated factor, like Go.
        let int_factor = factor as i64;
        let failed = match num {
            Num::I(i) if int_factor != 0 => i.checked_rem(int_factor).is_some_and(|r| r != 0),
            Num::I(i) => !float_multiple(i as f64, factor),
            Num::F(f) => !float_multiple(f, factor),
        };
        if failed {
            let shown_factor = match num {
                Num::I(_) if int_factor != 0 => int_factor.to_string(),
                _ => go_float(factor),
            };
            out.push(cause_invalid(path, &shown, &format!("{path} in body should be a multiple of {shown_factor}")));
        }
    }
    if let Some(min) = n.minimum {
        let ex = n.exclusive_minimum;
        let (failed, bound) = match num {
            Num::I(i) => {
                let b = min as i64;
                (if ex { i <= b } else { i < b }, b.to_string())
            }
            Num::F(f) => (if ex { f <= min } else { f < min }, go_float(min)),
        };
        if failed {
            let rel = if ex { "greater than" } else { "greater than or equal to" };
            out.push(cause_invalid(path, &shown, &format!("{path} in body should be {rel} {bound}")));
        }
    }
    if let Some(max) = n.maximum {
        let ex = n.exclusive_maximum;
        let (failed, bound) = match num {
            Num::I(i) => {
                let b = max as i64;
                (if ex { i >= b } else { i > b }, b.to_string())
            }
            Num::F(f) => (if ex { f >= max } else { f > max }, go_float(max)),
        };
        if failed {
            let rel = if ex { "less than" } else { "less than or equal to" };
            out.push(cause_invalid(path, &shown, &format!("{path} in body should be {rel} {bound}")));
        }
    }
}

/// go-openapi's float MultipleOf.
fn float_multiple(data: f64, factor: f64) -> bool {
    let mult = if factor < 1.0 { 1.0 / factor * data } else { data / factor };
    is_json_integer(mult)
}

/// apiserver's listtype `validateListSet`: the index of each value's second occurrence.
fn non_unique(items: &[Value]) -> Vec<usize> {
    let mut seen: HashMap<String, u32> = HashMap::new();
    let mut out = Vec::new();
    for (i, v) in items.iter().enumerate() {
        // A canonical text key: objects keep the document's key order, so sort them.
        let times = seen.entry(canonical_json(v)).or_insert(0);
        *times += 1;
        if *times == 2 {
            out.push(i);
        }
    }
    out
}

fn canonical_json(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut s = String::from("{");
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                s.push_str(&Value::String((*k).clone()).to_string());
                s.push(':');
                if let Some(x) = m.get(*k) {
                    s.push_str(&canonical_json(x));
                }
            }
            s.push('}');
            s
        }
        Value::Array(a) => {
            let inner: Vec<String> = a.iter().map(canonical_json).collect();
            format!("[{}]", inner.join(","))
        }
        // Distinguish int 1 from float 1.0, as Go's map keys do.
        Value::Number(n) => match num_of(n) {
            Num::I(i) => format!("i{i}"),
            Num::F(f) => format!("f{f:?}"),
        },
        other => other.to_string(),
    }
}

fn check_list_map(keys: &[String], a: &[Value], path: &str, out: &mut Vec<FieldCause>) {
    for (i, x) in a.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            out.push(cause_invalid(
                &format!("{path}[{i}]"),
                &go_body_value(x),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if a.len() <= 1 {
        return;
    }
    // One key tuple per item; a missing key counts as "unspecified".
    let tuples: Vec<Map<String, Value>> = a
        .iter()
        .map(|x| {
            let mut t = Map::new();
            if let Value::Object(m) = x {
                for k in keys {
                    if let Some(v) = m.get(k) {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
            t
        })
        .collect();
    let as_values: Vec<Value> = tuples.iter().cloned().map(Value::Object).collect();
    for i in non_unique(&as_values) {
        if let Some(t) = as_values.get(i) {
            out.push(duplicate(&format!("{path}[{i}]"), &go_body_value(t)));
        }
    }
}

fn check_embedded(m: &Map<String, Value>, path: &str, out: &mut Vec<FieldCause>) {
    for k in ["apiVersion", "kind"] {
        if !m.contains_key(k) {
            out.push(FieldCause::new(FieldCause::REQUIRED, &child_path(path, k), "Required value".to_string()));
        }
    }
    for (k, v) in m {
        let p = child_path(path, k);
        match k.as_str() {
            "apiVersion" => match v.as_str() {
                None => out.push(cause_invalid(&p, &go_body_value(v), "must be a string")),
                Some("") => out.push(cause_invalid(&p, "\"\"", "must not be empty")),
                Some(s) if s != "/" && s.matches('/').count() > 1 => {
                    out.push(cause_invalid(&p, &quote(s), &format!("unexpected GroupVersion string: {s}")))
                }
                Some(_) => {}
            },
            "kind" => match v.as_str() {
                None => out.push(cause_invalid(&p, &go_body_value(v), "must be a string")),
                Some("") => out.push(cause_invalid(&p, "\"\"", "must not be empty")),
                Some(s) => {
                    let errs = apimachinery::validation::dns1035_label_errors(&s.to_lowercase());
                    if !errs.is_empty() {
                        out.push(cause_invalid(
                            &p,
                            &quote(s),
                            &format!("may have mixed case, but should otherwise match: {}", errs.join(",")),
                        ));
                    }
                }
            },
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::apiextensions::test_schemas::*;
    use crate::apiextensions::*;
    use rstest::rstest;
    use serde_json::{Value, json};

    // ----- type -----------------------------------------------------------

    #[test]
    fn type_mismatch_message_matches_apiserver() {
        let s = spec_schema(json!({"type": "object", "properties": {"replicas": {"type": "integer"}}}));
        let c = one(s.validate(&obj(json!({"replicas": "3"}))));
        assert_eq!(
            c,
            cause(
                FieldCause::TYPE_INVALID,
                "spec.replicas",
                r#"Invalid value: "string": spec.replicas in body must be of type integer: "string""#
            )
        );
    }

    #[rstest]
    #[case("object", json!({}), json!([]), "array")]
    #[case("array", json!([]), json!({}), "object")]
    #[case("string", json!(""), json!(1), "integer")]
    #[case("integer", json!(3), json!(1.5), "number")]
    #[case("number", json!(1.5), json!("1.5"), "string")]
    #[case("boolean", json!(false), json!("false"), "string")]
    fn each_type_accepts_its_values_and_rejects_others(
        #[case] t: &str,
        #[case] good: Value,
        #[case] bad: Value,
        #[case] bad_type: &str,
    ) {
        let s = field(json!({ "type": t }));
        assert!(check(&s, good.clone()).is_empty(), "{t} should accept {good}");
        let c = one(check(&s, bad.clone()));
        assert_eq!(c.reason, FieldCause::TYPE_INVALID, "{t} vs {bad}");
        assert_eq!(
            c.message,
            format!("Invalid value: \"{bad_type}\": spec.f in body must be of type {t}: \"{bad_type}\"")
        );
    }

    #[test]
    fn integer_accepts_whole_floats_and_number_accepts_integers() {
        let s = field(json!({"type": "integer"}));
        assert!(check(&s, json!(3.0)).is_empty());
        assert!(check(&s, json!(-7)).is_empty());
        assert!(check(&s, json!(u64::MAX)).len() == 1, "beyond int64 is a float in apiserver");
        let c = one(check(&s, json!(2.5)));
        assert_eq!(c.message, r#"Invalid value: "number": spec.f in body must be of type integer: "number""#);
        let s = field(json!({"type": "number"}));
        assert!(check(&s, json!(3)).is_empty());
        assert!(check(&s, json!(3.25)).is_empty());
    }

    #[test]
    fn null_needs_nullable() {
        let s = field(json!({"type": "string"}));
        let c = one(check(&s, Value::Null));
        assert_eq!(
            c,
            cause(
                FieldCause::TYPE_INVALID,
                "spec.f",
                r#"Invalid value: "null": spec.f in body must be of type string: "null""#
            )
        );
        let s = field(json!({"type": "string", "nullable": true}));
        assert!(check(&s, Value::Null).is_empty());
        let s = field(json!({"x-kubernetes-preserve-unknown-fields": true}));
        assert!(check(&s, Value::Null).is_empty());
    }

    #[test]
    fn int_or_string() {
        let s = field(json!({"x-kubernetes-int-or-string": true}));
        assert!(check(&s, json!(80)).is_empty());
        assert!(check(&s, json!("http")).is_empty());
        let c = one(check(&s, json!(true)));
        assert_eq!(c.message, r#"Invalid value: "boolean": spec.f in body must be of type integer,string: "boolean""#);
        assert_eq!(one(check(&s, json!({"a": 1}))).reason, FieldCause::TYPE_INVALID);
        // kubebuilder also emits an anyOf next to it: still fine.
        let s = field(json!({"x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$"}));
        assert!(check(&s, json!("500m")).is_empty());
        assert!(check(&s, json!(2)).is_empty());
        assert_eq!(one(check(&s, json!("lots"))).reason, FieldCause::INVALID);
    }

    #[test]
    fn untyped_preserve_accepts_anything() {
        let s = field(json!({"x-kubernetes-preserve-unknown-fields": true}));
        for v in [json!(1), json!("a"), json!([1, {"b": 2}]), json!({"x": {"y": [null]}}), json!(true)] {
            assert!(check(&s, v).is_empty());
        }
    }

    #[test]
    fn cel_rules_are_evaluated() {
        let s = field(json!({"type": "object", "properties": {"a": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.a > 10", "message": "a must exceed 10"}]}));
        assert!(check(&s, json!({"a": 11})).is_empty(), "11 passes the rule");
        let c = one(check(&s, json!({"a": 1})));
        assert_eq!((c.field.as_str(), c.message.as_str()), ("spec.f", "Invalid value: a must exceed 10"));
    }

    // ----- enum, pattern, bounds, lengths, counts ---------------------------

    #[test]
    fn enum_not_supported() {
        let s = field(json!({"type": "string", "enum": ["a", "b"]}));
        assert!(check(&s, json!("a")).is_empty());
        assert_eq!(
            one(check(&s, json!("x"))),
            cause(FieldCause::NOT_SUPPORTED, "spec.f", r#"Unsupported value: "x": supported values: "a", "b""#)
        );
        let s = field(json!({"type": "integer", "enum": [1, 2]}));
        assert!(check(&s, json!(2.0)).is_empty(), "Go compares converted numbers");
        assert_eq!(one(check(&s, json!(3))).message, r#"Unsupported value: 3: supported values: "1", "2""#);
    }

    #[test]
    fn pattern_mismatch() {
        let s = field(json!({"type": "string", "pattern": "^[a-z]+$"}));
        assert!(check(&s, json!("abc")).is_empty());
        assert_eq!(
            one(check(&s, json!("ABC"))),
            cause(FieldCause::INVALID, "spec.f", r#"Invalid value: "ABC": spec.f in body should match '^[a-z]+$'"#)
        );
    }

    #[test]
    fn minimum_and_maximum() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "replicas": {"type": "integer", "minimum": 0, "maximum": 3},
            "ex": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1.5, "exclusiveMaximum": true}
        }}));
        assert!(s.validate(&obj(json!({"replicas": 0, "ex": 1.0}))).is_empty());
        assert!(s.validate(&obj(json!({"replicas": 3}))).is_empty());
        assert_eq!(
            one(s.validate(&obj(json!({"replicas": 5})))).message,
            "Invalid value: 5: spec.replicas in body should be less than or equal to 3"
        );
        assert_eq!(
            one(s.validate(&obj(json!({"replicas": -1})))).message,
            "Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
        );
        assert_eq!(
            one(s.validate(&obj(json!({"ex": 0})))).message,
            "Invalid value: 0: spec.ex in body should be greater than 0"
        );
        let c = one(s.validate(&obj(json!({"ex": 1.5}))));
        assert_eq!(c.reason, FieldCause::INVALID);
        assert_eq!(c.message, "Invalid value: 1.5: spec.ex in body should be less than 1.5");
    }

    #[test]
    fn multiple_of() {
        let s = field(json!({"type": "number", "multipleOf": 5}));
        assert!(check(&s, json!(15)).is_empty());
        assert!(check(&s, json!(10.0)).is_empty());
        assert_eq!(one(check(&s, json!(7))).message, "Invalid value: 7: spec.f in body should be a multiple of 5");
        assert_eq!(one(check(&s, json!(7.5))).message, "Invalid value: 7.5: spec.f in body should be a multiple of 5");
        let s = field(json!({"type": "number", "multipleOf": 0.25}));
        assert!(check(&s, json!(0.75)).is_empty());
        assert!(check(&s, json!(3)).is_empty());
        assert_eq!(one(check(&s, json!(0.3))).reason, FieldCause::INVALID);
    }

    #[test]
    fn string_lengths_count_characters() {
        let s = field(json!({"type": "string", "minLength": 2, "maxLength": 3}));
        assert!(check(&s, json!("ééé")).is_empty(), "3 characters, 6 bytes");
        assert_eq!(
            one(check(&s, json!("abcd"))),
            cause(FieldCause::TOO_LONG, "spec.f", "Too long: may not be longer than 3")
        );
        assert_eq!(
            one(check(&s, json!("a"))),
            cause(
                FieldCause::INVALID,
                "spec.f",
                r#"Invalid value: "a": spec.f in body should be at least 2 chars long"#
            )
        );
    }

    #[test]
    fn item_counts() {
        let s = field(json!({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}));
        assert!(check(&s, json!([1, 2, 3])).is_empty());
        assert_eq!(
            one(check(&s, json!([1, 2, 3, 4]))),
            cause(FieldCause::TOO_MANY, "spec.f", "Too many: 4: must have at most 3 items")
        );
        assert_eq!(
            one(check(&s, json!([]))),
            cause(FieldCause::INVALID, "spec.f", "Invalid value: 0: spec.f in body should have at least 1 items")
        );
        let s = field(json!({"type": "array", "maxItems": 1}));
        assert_eq!(one(check(&s, json!([1, 2]))).message, "Too many: 2: must have at most 1 item");
    }

    #[test]
    fn property_counts() {
        let s = field(json!({"type": "object", "additionalProperties": {"type": "string"},
            "minProperties": 1, "maxProperties": 2}));
        assert!(check(&s, json!({"a": "1"})).is_empty());
        assert_eq!(
            one(check(&s, json!({"a": "1", "b": "2", "c": "3"}))),
            cause(FieldCause::TOO_MANY, "spec.f", "Too many: 3: must have at most 2 items")
        );
        assert_eq!(
            one(check(&s, json!({}))).message,
            "Invalid value: 0: spec.f in body should have at least 1 properties"
        );
        // Like kube-openapi, a count failure stops the object's validation.
        assert_eq!(check(&s, json!({"a": 1, "b": 2, "c": 3})).len(), 1);
    }

    #[test]
    fn required_reports_missing_property_path() {
        let s = spec_schema(json!({"type": "object", "required": ["a", "b"],
            "properties": {"a": {"type": "string"}, "b": {"type": "string", "nullable": true}}}));
        let causes = s.validate(&obj(json!({"b": null})));
        assert_eq!(causes, vec![cause(FieldCause::REQUIRED, "spec.a", "Required value")]);
        assert!(s.validate(&obj(json!({"a": "x", "b": "y"}))).is_empty());
        // The root's metadata and friends are never validated here.
        let s = compile(json!({"type": "object", "required": ["metadata", "spec"],
            "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}}},
                           "spec": {"type": "object"}}}));
        let causes = s.validate(&json!({"metadata": {"name": "too-long"}, "apiVersion": 1}));
        assert_eq!(causes, vec![cause(FieldCause::REQUIRED, "spec", "Required value")]);
    }

    // ----- list types ---------------------------------------------------------

    #[test]
    fn list_type_set() {
        let s = field(json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}));
        assert!(check(&s, json!(["a", "b"])).is_empty());
        assert_eq!(
            check(&s, json!(["a", "b", "a", "a", "b"])),
            vec![
                cause(FieldCause::DUPLICATE, "spec.f[2]", r#"Duplicate value: "a""#),
                cause(FieldCause::DUPLICATE, "spec.f[4]", r#"Duplicate value: "b""#),
            ]
        );
        let s = field(json!({"type": "array", "x-kubernetes-list-type": "set",
            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}));
        assert_eq!(
            one(check(&s, json!([{"a": 1, "b": 2}, {"b": 2, "a": 1}]))).message,
            r#"Duplicate value: map[string]interface {}{"a":1, "b":2}"#
        );
        let s = field(json!({"type": "array", "items": {"type": "number"}, "x-kubernetes-list-type": "atomic"}));
        assert!(check(&s, json!([1, 1])).is_empty());
    }

    #[test]
    fn list_type_map() {
        let s = field(json!({"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name", "protocol"],
            "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "protocol": {"type": "string", "default": "TCP"}, "port": {"type": "integer"}}}}));
        assert!(check(&s, json!([{"name": "a", "protocol": "TCP"}, {"name": "a", "protocol": "UDP"}])).is_empty());
        let c = one(check(
            &s,
            json!([{"name": "a", "protocol": "TCP", "port": 1}, {"name": "a", "protocol": "TCP", "port": 2}]),
        ));
        assert_eq!(
            c,
            cause(
                FieldCause::DUPLICATE,
                "spec.f[1]",
                r#"Duplicate value: map[string]interface {}{"name":"a", "protocol":"TCP"}"#
            )
        );
        let causes = check(&s, json!([{"name": "a"}, "b"]));
        assert_eq!(causes.len(), 2, "{causes:#?}");
        assert_eq!(causes[0].reason, FieldCause::TYPE_INVALID);
        assert_eq!(causes[1].field, "spec.f[1]");
        assert_eq!(causes[1].message, r#"Invalid value: "b": must be an object for an array of list-type map"#);
        // Defaults fill key fields before validation.
        let mut o = obj(json!({"f": [{"name": "a"}, {"name": "a", "protocol": "TCP"}]}));
        s.apply_defaults(&mut o);
        assert_eq!(one(s.validate(&o)).reason, FieldCause::DUPLICATE);
    }

    // ----- junctors -----------------------------------------------------------

    #[test]
    fn any_of() {
        let s = field(json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}));
        assert!(check(&s, json!({"a": "x"})).is_empty());
        assert!(check(&s, json!({"b": "x"})).is_empty());
        let causes = check(&s, json!({}));
        assert_eq!(
            causes,
            vec![
                cause(
                    FieldCause::INVALID,
                    "spec.f",
                    r#"Invalid value: "": "spec.f" must validate at least one schema (anyOf)"#
                ),
                cause(FieldCause::REQUIRED, "spec.f.a", "Required value"),
            ]
        );
    }

    #[test]
    fn one_of() {
        let s = field(json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}));
        assert!(check(&s, json!({"a": "x"})).is_empty());
        let c = one(check(&s, json!({"a": "x", "b": "y"})));
        assert_eq!(
            c.message,
            r#"Invalid value: "": "spec.f" must validate one and only one schema (oneOf). Found 2 valid alternatives"#
        );
        let causes = check(&s, json!({}));
        assert_eq!(causes.len(), 2);
        assert!(causes[0].message.ends_with("(oneOf). Found none valid"));
    }

    #[test]
    fn all_of_and_not() {
        let s = field(json!({"type": "string", "allOf": [{"minLength": 2}, {"maxLength": 3}]}));
        assert!(check(&s, json!("ab")).is_empty());
        let causes = check(&s, json!("abcd"));
        assert_eq!(causes.len(), 2);
        assert_eq!(causes[0].reason, FieldCause::TOO_LONG);
        assert_eq!(causes[1].message, r#"Invalid value: "": "spec.f" must validate all the schemas (allOf)"#);

        let s = field(json!({"type": "string", "not": {"enum": ["forbidden"]}}));
        assert!(check(&s, json!("fine")).is_empty());
        assert_eq!(
            one(check(&s, json!("forbidden"))).message,
            r#"Invalid value: "": "spec.f" must not validate the schema (not)"#
        );
    }

    #[test]
    fn gateway_address_one_of() {
        // The shape of Gateway API's spec.addresses items.
        let s = field(json!({"type": "object", "properties": {
            "type": {"type": "string", "default": "IPAddress"}, "value": {"type": "string"}},
        "oneOf": [
            {"properties": {"type": {"enum": ["IPAddress"]}, "value": {"anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]}}},
            {"properties": {"type": {"not": {"enum": ["IPAddress"]}}}}
        ]}));
        assert!(check(&s, json!({"type": "IPAddress", "value": "10.0.0.1"})).is_empty());
        assert!(check(&s, json!({"type": "Hostname", "value": "example.com"})).is_empty());
        let causes = check(&s, json!({"type": "IPAddress", "value": "example.com"}));
        assert!(!causes.is_empty());
        assert!(causes[0].message.contains("(oneOf). Found none valid"), "{causes:#?}");
    }

    // ----- maps, items, embedded ----------------------------------------------

    #[test]
    fn additional_properties_and_items_paths() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "groups": {"type": "array", "items": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}
        }}));
        let causes = s.validate(&obj(json!({
            "labels": {"ok": "x", "foo": 1},
            "groups": [{"replicas": 1}, {"replicas": "2"}]
        })));
        assert_eq!(causes.len(), 2);
        assert_eq!(causes[0].field, "spec.labels.foo");
        assert_eq!(causes[1].field, "spec.groups[1].replicas");
    }

    #[test]
    fn additional_properties_true_keeps_scalars_and_empties_objects_like_apiserver() {
        let s = field(json!({"type": "object", "additionalProperties": true}));
        let mut o = obj(json!({"f": {"a": 1, "b": {"c": 2}}}));
        assert_eq!(s.prune(&mut o), vec!["spec.f.b.c"]);
        assert_eq!(o["spec"]["f"], json!({"a": 1, "b": {}}));
        assert!(s.validate(&o).is_empty());
    }

    #[test]
    fn embedded_resource_requires_api_version_and_kind() {
        let s = field(json!({"type": "array", "items": {"type": "object",
            "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}));
        assert!(check(&s, json!([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}])).is_empty());
        assert_eq!(
            check(&s, json!([{"metadata": {}}])),
            vec![
                cause(FieldCause::REQUIRED, "spec.f[0].apiVersion", "Required value"),
                cause(FieldCause::REQUIRED, "spec.f[0].kind", "Required value"),
            ]
        );
        let causes = check(&s, json!([{"apiVersion": "a/b/c", "kind": "Bad_Kind"}]));
        assert_eq!(causes.len(), 2);
        assert_eq!(causes[0].message, r#"Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#);
        assert!(causes[1].message.starts_with(
            r#"Invalid value: "Bad_Kind": may have mixed case, but should otherwise match: a DNS-1035 label"#
        ));
        // apiVersion, kind and metadata are allowed (and kept) even without properties.
        let s = field(json!({"type": "object", "x-kubernetes-embedded-resource": true,
            "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}}));
        let mut o = obj(json!({"f": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bogus": 1},
            "spec": {"x": "y", "z": 1}, "other": true}}));
        let pruned = s.prune(&mut o);
        assert_eq!(pruned, vec!["spec.f.metadata.bogus", "spec.f.other", "spec.f.spec.z"]);
        assert_eq!(
            o["spec"]["f"],
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": "y"}})
        );
        assert!(s.validate(&o).is_empty());
    }
}
