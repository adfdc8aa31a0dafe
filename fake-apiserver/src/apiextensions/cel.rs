//! CEL validation rules (`x-kubernetes-validations`) as kube-apiserver evaluates them
//! (`apiextensions-apiserver/pkg/apiserver/schema/cel`): compiled with the schema, run after the
//! structural checks on every node that carries rules, with `self` bound to the value there
//! and, for transition rules (those naming `oldSelf`), `oldSelf` bound to the correlated old
//! value on updates.
//!
//! The evaluator is the `cel` crate (cel-rust) with its `strings`, `lists` and `math`
//! extensions; everything the KubeRay, Kueue and Gateway API CRDs use is in there (`has`,
//! `all`, `exists`, `exists_one`, `filter`, `matches`, `split`, `duration`, ...).
//!
//! Fidelity notes:
//! * Errors are reported as kube-apiserver does: `Invalid value: "<schema type>": <message>`
//!   (or Forbidden, Required, Duplicate per `reason`), at the node's path plus `fieldPath`;
//!   without a message, `failed rule: <rule>`; `messageExpression` wins when it evaluates to a
//!   string.
//! * Property names that are CEL reserved words or hold `_ . - /` are escaped as upstream
//!   does (`namespace` is `__namespace__`, `x-y` is `x__dash__y`).
//! * Transition rules run only where the old value correlates (object properties, map values,
//!   items of `map` lists by key); `optionalOldSelf: true` rules also run on create, with
//!   `oldSelf` bound to `null` (cel-rust has no `optional.none()` value to bind).
//! * Cost: kube-apiserver estimates each rule's cost statically and meters it at run time
//!   (per call 1,000,000, per request 10,000,000). cel-rust meters nothing, so the cost of a
//!   call is estimated here from the rule and the data: the rule's size times the number of
//!   values under `self`, raised to the nesting of its comprehensions that range over more than
//!   an enclosing one's variable. Over the per-call limit a rule fails with upstream's
//!   message; over the request budget validation stops with it.

use super::FieldCause;
use super::go_values::go_body_value;
use super::schema::{ListType, Node, Type};
use apimachinery::cel::ENV;
use apimachinery::json::same;
use cel::objects::{Key, Map as CelMap};
use cel::{Context, Program, Value as Cel};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Per-call cost limit (`celconfig.PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// Per-request cost budget (`celconfig.RuntimeCELCostBudget`).
pub const RUNTIME_BUDGET: u64 = 10_000_000;

/// One compiled `x-kubernetes-validations` entry.
pub(super) struct Rule {
    source: String,
    program: Program,
    message: Option<String>,
    message_expression: Option<Program>,
    reason: Option<&'static str>,
    field_path: Option<String>,
    /// The rule names `oldSelf`: it runs on updates only (unless `optional_old_self`).
    transition: bool,
    optional_old_self: bool,
    /// Size of the rule's syntax and its deepest nesting of comprehensions, for the cost.
    weight: u64,
    nesting: u32,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule").field("rule", &self.source).finish()
    }
}

/// Compiles the `x-kubernetes-validations` list at schema path `path`.
pub(super) fn compile_rules(v: &Value, path: &str) -> Result<Vec<Rule>, String> {
    let Value::Array(items) = v else { return Err(format!("{path}: must be a list of rules")) };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let source = item.get("rule").and_then(Value::as_str).unwrap_or_default().to_string();
        if source.trim().is_empty() {
            return Err(format!("{at}.rule: Required value"));
        }
        let program = ENV.compile(&source).map_err(|e| format!("{at}.rule: compilation failed: {e}"))?;
        let message_expression = match item.get("messageExpression").and_then(Value::as_str) {
            Some(expr) if !expr.trim().is_empty() => {
                Some(ENV.compile(expr).map_err(|e| format!("{at}.messageExpression: compilation failed: {e}"))?)
            }
            _ => None,
        };
        let reason = match item.get("reason").and_then(Value::as_str) {
            None | Some("") => None,
            Some("FieldValueInvalid") => Some("FieldValueInvalid"),
            Some("FieldValueForbidden") => Some("FieldValueForbidden"),
            Some("FieldValueRequired") => Some("FieldValueRequired"),
            Some("FieldValueDuplicate") => Some("FieldValueDuplicate"),
            Some(other) => {
                return Err(format!(
                    "{at}.reason: Unsupported value: {other:?}: supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
                ));
            }
        };
        let transition = mentions(&source, "oldSelf");
        out.push(Rule {
            weight: source.len() as u64 / 4 + 1,
            nesting: comprehension_nesting(&source),
            source,
            program,
            message: item.get("message").and_then(Value::as_str).filter(|m| !m.is_empty()).map(str::to_string),
            message_expression,
            reason,
            field_path: item.get("fieldPath").and_then(Value::as_str).filter(|p| !p.is_empty()).map(str::to_string),
            transition,
            optional_old_self: item.get("optionalOldSelf").and_then(Value::as_bool).unwrap_or(false),
        });
    }
    Ok(out)
}

/// Whether `ident` occurs in `source` as an identifier (not inside a longer one).
fn mentions(source: &str, ident: &str) -> bool {
    let b = source.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    source.match_indices(ident).any(|(i, _)| {
        let before = i.checked_sub(1).map(|j| b[j]);
        let after = b.get(i + ident.len()).copied();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// How deeply the comprehension macros of a rule nest (by their parentheses), counting only
/// those that range over something other than an enclosing macro's variable: walking a tree
/// (`self.groups.all(g, g.items.all(i, ...))`) visits each value once, as upstream's metered
/// cost counts it, while `self.all(a, self.exists(b, ...))` visits the pairs.
fn comprehension_nesting(source: &str) -> u32 {
    const MACROS: [&str; 7] = [".all(", ".exists(", ".exists_one(", ".filter(", ".map(", ".sortBy(", ".existsOne("];
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    // One entry per open parenthesis: a macro's variable and whether it counts.
    let mut open: Vec<Option<(String, bool)>> = Vec::new();
    let (mut depth, mut deepest) = (0u32, 0u32);
    for (i, c) in source.char_indices() {
        match c {
            '(' => {
                let Some(m) = MACROS.iter().find(|m| source[..=i].ends_with(*m)) else {
                    open.push(None);
                    continue;
                };
                let receiver = &source[..=i - m.len()];
                let start = receiver.rfind(|c: char| !(ident(c) || c == '.')).map_or(0, |p| p + 1);
                let root = receiver[start..].split('.').next().unwrap_or("");
                let bound = !root.is_empty() && open.iter().flatten().any(|(var, _)| var == root);
                let var: String = source[i + 1..].trim_start().chars().take_while(|c| ident(*c)).collect();
                if !bound {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                open.push(Some((var, !bound)));
            }
            ')' => {
                if let Some(Some((_, true))) = open.pop() {
                    depth = depth.saturating_sub(1);
                }
            }
            _ => {}
        }
    }
    deepest
}

/// A property name as CEL sees it (`apiextensions-apiserver/pkg/apiserver/schema/cel/model`'s
/// escaping).
fn escape(name: &str) -> String {
    if apimachinery::cel::RESERVED_WORDS.contains(&name) {
        return format!("__{name}__");
    }
    if !name.bytes().any(|b| matches!(b, b'_' | b'.' | b'-' | b'/')) {
        return name.to_string();
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        match c {
            '_' => out.push_str("__underscores__"),
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
    }
    out
}

/// How many values a JSON value holds (itself and everything below), for the cost estimate.
fn size(v: &Value) -> u64 {
    match v {
        Value::Array(a) => 1 + a.iter().map(size).sum::<u64>(),
        Value::Object(m) => 1 + m.values().map(size).sum::<u64>(),
        Value::String(s) => 1 + s.len() as u64 / 64,
        _ => 1,
    }
}

/// The JSON value as a CEL value, its property names escaped where the schema declares them.
fn to_cel(node: Option<&Node>, v: &Value) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match (n.as_i64(), node.and_then(|n| n.ty)) {
            (Some(i), Some(Type::Integer) | None) => Cel::Int(i),
            (Some(i), Some(Type::Number)) => Cel::Float(i as f64),
            (Some(i), _) => Cel::Int(i),
            (None, _) => n.as_u64().map(Cel::UInt).unwrap_or_else(|| Cel::Float(n.as_f64().unwrap_or(0.0))),
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(items) => {
            let item = node.and_then(|n| n.items.as_deref());
            Cel::List(Arc::new(items.iter().map(|x| to_cel(item, x)).collect()))
        }
        Value::Object(m) => {
            let mut map: HashMap<Key, Cel> = HashMap::with_capacity(m.len());
            for (k, x) in m {
                let (name, child) = match node.and_then(|n| n.prop(k)) {
                    Some(p) => (escape(k), Some(p)),
                    None => (k.clone(), node.and_then(|n| n.field_schema(k))),
                };
                map.insert(Key::String(Arc::new(name)), to_cel(child, x));
            }
            Cel::Map(CelMap { map: Arc::new(map) })
        }
    }
}

fn schema_type(node: &Node) -> &'static str {
    match node.ty {
        Some(Type::Object) => "object",
        Some(Type::Array) => "array",
        Some(Type::String) => "string",
        Some(Type::Integer) => "integer",
        Some(Type::Number) => "number",
        Some(Type::Boolean) => "boolean",
        None if node.int_or_string => "integer-or-string",
        None => "",
    }
}

/// The rule pass over one object: what is left of the request's budget, and the causes.
pub(super) struct CelPass {
    pub(super) budget: u64,
    pub(super) exhausted: bool,
    /// The last rule failed to evaluate (such errors are never ratcheted).
    evaluation_failed: bool,
}

impl CelPass {
    /// A pass with the whole request budget.
    pub(super) fn new() -> Self {
        CelPass { budget: RUNTIME_BUDGET, exhausted: false, evaluation_failed: false }
    }

    /// Runs the rules of `node` and of everything below it on `v`, with `old` the correlated
    /// old value (updates). `ratchet`: `v` lies in an unchanged part of the object (a field, or
    /// a map-list item by its keys, equal to its old value), where a rule that evaluates to false
    /// gives a [`FieldCause::WARNING`] unless it reads `oldSelf` — CEL's ratcheting
    /// (schema/cel/validation.go `shouldRatchetError`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn walk(
        &mut self,
        node: &Node,
        v: &Value,
        old: Option<&Value>,
        ratchet: bool,
        path: &str,
        depth: usize,
        out: &mut Vec<FieldCause>,
    ) {
        if !node.rules_below || self.exhausted || depth > super::MAX_DEPTH || v.is_null() {
            return;
        }
        // Whether this value is unchanged is only needed where a rule runs, or where it must be
        // handed down to items that correlate with nothing (of a list that is not a map or a
        // set): below an unchanged value, every correlated value is unchanged too, and finds so
        // itself where it matters. Comparing at every level would compare the object once per
        // level of its depth.
        let needs_ratchet = !node.rules.is_empty()
            || (v.is_array()
                && !matches!(node.list_type, Some(ListType::Map | ListType::Set))
                && node.items.as_deref().is_some_and(|i| i.rules_below));
        let ratchet = ratchet || (needs_ratchet && old.is_some_and(|o| same(o, v)));
        for rule in node.rules.iter() {
            let before = out.len();
            self.run(node, rule, v, old, path, out);
            if ratchet && !rule.transition && !self.exhausted && !self.evaluation_failed {
                for c in &mut out[before..] {
                    c.reason = FieldCause::WARNING;
                }
            }
            self.evaluation_failed = false;
            if self.exhausted {
                return;
            }
        }
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if depth == 0 && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                        continue;
                    }
                    let Some(child) = node.field_schema(k) else { continue };
                    let here = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                    let old_child = old.and_then(|o| o.get(k));
                    self.walk(child, x, old_child, ratchet, &here, depth + 1, out);
                }
            }
            Value::Array(items) => {
                let Some(item) = node.items.as_deref() else { return };
                for (i, x) in items.iter().enumerate() {
                    let old_item = match (node.list_type, old) {
                        (Some(ListType::Map), Some(Value::Array(olds))) => {
                            olds.iter().find(|o| node.list_map_keys.iter().all(|k| o.get(k) == x.get(k)))
                        }
                        (Some(ListType::Set), Some(Value::Array(olds))) => olds.iter().find(|o| *o == x),
                        _ => None,
                    };
                    // An item with rules finds for itself whether it is unchanged (see above).
                    self.walk(item, x, old_item, ratchet, &format!("{path}[{i}]"), depth + 1, out);
                }
            }
            _ => {}
        }
    }

    fn run(&mut self, node: &Node, rule: &Rule, v: &Value, old: Option<&Value>, path: &str, out: &mut Vec<FieldCause>) {
        if rule.transition && old.is_none() && !rule.optional_old_self {
            return;
        }
        let base = size(v).max(old.map_or(0, size));
        let cost = rule.weight.saturating_mul(base.saturating_pow(rule.nesting.max(1)));
        let at = match &rule.field_path {
            Some(fp) => format!(
                "{path}{}",
                if fp.starts_with('.') || fp.starts_with('[') { fp.clone() } else { format!(".{fp}") }
            ),
            None => path.to_string(),
        };
        let at = at.trim_start_matches('.').to_string();
        if cost > PER_CALL_LIMIT {
            self.evaluation_failed = true;
            out.push(FieldCause::new(
                FieldCause::INVALID,
                &at,
                format!("Invalid value: \"{}\": call cost exceeds limit for rule: {}", schema_type(node), rule.source),
            ));
            return;
        }
        if cost > self.budget {
            self.exhausted = true;
            out.push(FieldCause::new(
                FieldCause::INVALID,
                &at,
                "Invalid value: \"object\": validation failed due to running out of cost budget, no further validation rules will be run".into(),
            ));
            return;
        }
        self.budget -= cost;
        let mut ctx = Context::with_env(ENV.clone());
        ctx.add_variable_from_value("self", to_cel(Some(node), v));
        if rule.transition {
            ctx.add_variable_from_value("oldSelf", old.map_or(Cel::Null, |o| to_cel(Some(node), o)));
        }
        // fieldErrorForReason (v1.37): an Invalid error shows the value itself, except an object
        // or a list, or when a messageExpression wrote the text (it embeds the value if it wants).
        let mut show_value = !v.is_object() && !v.is_array();
        let detail = match rule.program.execute(&ctx) {
            Ok(Cel::Bool(true)) => return,
            Ok(Cel::Bool(false)) => {
                let from_expression = rule.message_expression.as_ref().and_then(|p| match p.execute(&ctx) {
                    Ok(Cel::String(s)) if !s.trim().is_empty() && !s.contains('\n') => Some(s.to_string()),
                    _ => None,
                });
                if from_expression.is_some() {
                    show_value = false;
                }
                from_expression.or_else(|| rule.message.clone()).unwrap_or_else(|| {
                    format!("failed rule: {}", rule.source.split_whitespace().collect::<Vec<_>>().join(" "))
                })
            }
            Ok(other) => {
                self.evaluation_failed = true;
                format!("rule evaluation error: rule result must be a boolean, got {other:?}")
            }
            Err(e) => {
                self.evaluation_failed = true;
                format!("rule evaluation error: {e}")
            }
        };
        let ty = schema_type(node);
        let cause = match rule.reason {
            Some("FieldValueForbidden") => FieldCause::new("FieldValueForbidden", &at, format!("Forbidden: {detail}")),
            Some("FieldValueRequired") => {
                FieldCause::new(FieldCause::REQUIRED, &at, format!("Required value: {detail}"))
            }
            Some("FieldValueDuplicate") => {
                FieldCause::new(FieldCause::DUPLICATE, &at, format!("Duplicate value: {}", go_body_value(v)))
            }
            _ if self.evaluation_failed => {
                FieldCause::new(FieldCause::INVALID, &at, format!("Invalid value: \"{ty}\": {detail}"))
            }
            _ if show_value => {
                FieldCause::new(FieldCause::INVALID, &at, format!("Invalid value: {}: {detail}", go_body_value(v)))
            }
            _ => FieldCause::new(FieldCause::INVALID, &at, format!("Invalid value: {detail}")),
        };
        out.push(cause);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("namespace", "__namespace__")]
    #[case("x-y", "x__dash__y")]
    #[case("a.b/c_d", "a__dot__b__slash__c__underscores__d")]
    #[case("plain", "plain")]
    fn property_names_are_escaped_like_upstream(#[case] name: &str, #[case] escaped: &str) {
        assert_eq!(escape(name), escaped);
    }

    #[rstest]
    #[case("self.all(a, a.x > 0)", 1)]
    #[case("self.all(l1, self.exists_one(l2, l1.name == l2.name))", 2)]
    #[case("self.x == oldSelf.x", 0)]
    // Kueue's ClusterQueue rule walks one tree: each value once.
    #[case(
        "!has(self.cohortName) && has(self.resourceGroups) ? self.resourceGroups.all(rg, rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true",
        1
    )]
    #[case("self.a.all(x, x.b.all(y, self.c.exists(z, z == y)))", 2)]
    fn nesting_counts_comprehensions(#[case] rule: &str, #[case] nesting: u32) {
        assert_eq!(comprehension_nesting(rule), nesting, "{rule}");
    }

    #[test]
    fn old_self_is_found_as_an_identifier_only() {
        assert!(mentions("self == oldSelf", "oldSelf"));
        assert!(!mentions("self.oldSelfish == 1", "oldSelf"));
    }
}
