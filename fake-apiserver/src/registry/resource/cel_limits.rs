//! CEL device selectors (`validateSelector` and `validateCELExpression` of
//! pkg/apis/resource/validation/validation.go at k8s.io/kubernetes v1.37.2): a length limit
//! checked before compiling, then compilation in the DRA environment, where `device` is the
//! only variable. cel-rust only parses, so the checker's `undeclared reference` errors are
//! found here by walking the parsed expression. The cost estimate is not modelled.

use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use serde_json::Value;

/// `CELSelectorExpressionMaxLength`.
pub(super) const EXPRESSION_MAX: usize = 10 * 1024;

/// Identifiers the DRA environment declares: the variable and CEL's type names.
const DECLARED: &[&str] =
    &["device", "int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type", "dyn"];

/// Roots of namespaced functions (`optional.of`, `math.greatest`, ...), resolved as function
/// names rather than variables when called.
const FUNCTION_NAMESPACES: &[&str] = &["optional", "math", "strings", "sets", "base64", "lists", "regex", "semver"];

/// `validateSelector`: a `cel` member with a valid expression. With `stored` (an update that
/// leaves the selectors as they were) the expression is taken as valid.
pub(super) fn selector(sel: &Value, path: &Path, stored: bool) -> Vec<StatusCause> {
    match sel.get("cel").filter(|c| !c.is_null()) {
        None => vec![field::required(&path.child("cel"), "")],
        Some(cel) => {
            let expression = cel.get("expression").and_then(Value::as_str).unwrap_or_default();
            expression_causes(expression, &path.child("cel").child("expression"), stored)
        }
    }
}

/// `validateCELExpression` of a selector: too long (not compiled), or the compiler's errors.
pub(super) fn expression_causes(expression: &str, path: &Path, stored: bool) -> Vec<StatusCause> {
    if stored {
        return Vec::new();
    }
    if expression.len() > EXPRESSION_MAX {
        return vec![field::too_long(path, EXPRESSION_MAX)];
    }
    match compile_errors(expression) {
        Some(e) => vec![field::invalid(path, expression, &format!("compilation failed: {e}"))],
        None => Vec::new(),
    }
}

/// The compiler's message for `expression`, if it does not compile.
fn compile_errors(expression: &str) -> Option<String> {
    let program = match apimachinery::cel::ENV.compile(expression) {
        Ok(p) => p,
        // cel-rust's snippet lines lack the space cel-go puts before the bar.
        Err(e) => return Some(e.to_string().replace("\n| ", "\n | ")),
    };
    let mut found = Vec::new();
    undeclared(program.expression(), &mut Vec::new(), &mut found);
    let mut located: Vec<(usize, String)> = found
        .into_iter()
        .map(|(id, name)| (program.source_info().offset_for(id).map_or(0, |(s, _)| s as usize), name))
        .collect();
    // cel-go reports its errors sorted by location.
    located.sort_by_key(|(offset, _)| *offset);
    let errors: Vec<String> = located
        .into_iter()
        .map(|(offset, name)| {
            checker_error(expression, offset, &format!("undeclared reference to '{name}' (in container '')"))
        })
        .collect();
    (!errors.is_empty()).then(|| errors.join("\n"))
}

/// The identifiers that are neither declared nor bound by a macro, in the checker's order.
fn undeclared(e: &IdedExpr, bound: &mut Vec<String>, out: &mut Vec<(u64, String)>) {
    match &e.expr {
        Expr::Ident(name) => {
            if !DECLARED.contains(&name.as_str()) && !bound.contains(name) {
                out.push((e.id, name.clone()));
            }
        }
        Expr::Select(s) => undeclared(&s.operand, bound, out),
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                let namespaced = matches!(&t.expr, Expr::Ident(n) if FUNCTION_NAMESPACES.contains(&n.as_str()) && !bound.contains(n));
                if !namespaced {
                    undeclared(t, bound, out);
                }
            }
            for a in &c.args {
                undeclared(a, bound, out);
            }
        }
        Expr::Comprehension(c) => {
            undeclared(&c.iter_range, bound, out);
            undeclared(&c.accu_init, bound, out);
            let depth = bound.len();
            bound.push(c.accu_var.clone());
            bound.push(c.iter_var.clone());
            bound.extend(c.iter_var2.clone());
            undeclared(&c.loop_cond, bound, out);
            undeclared(&c.loop_step, bound, out);
            undeclared(&c.result, bound, out);
            bound.truncate(depth);
        }
        Expr::List(l) => l.elements.iter().for_each(|x| undeclared(x, bound, out)),
        Expr::Map(m) => {
            for entry in &m.entries {
                if let EntryExpr::MapEntry(kv) = &entry.expr {
                    undeclared(&kv.key, bound, out);
                    undeclared(&kv.value, bound, out);
                }
            }
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                if let EntryExpr::StructField(f) = &entry.expr {
                    undeclared(&f.value, bound, out);
                }
            }
        }
        Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// cel-go's `Error.ToDisplayString`: the location (column counted in characters, from 1), the
/// message, the source line and a caret under the column.
fn checker_error(source: &str, offset: usize, message: &str) -> String {
    let before = &source[..offset.min(source.len())];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = source[line_start..offset.min(source.len())].chars().count();
    let snippet = source[line_start..].lines().next().unwrap_or_default().replace('\t', " ");
    let dots: String = snippet.chars().take(column).map(|c| if c.len_utf8() > 1 { '\u{ff0e}' } else { '.' }).collect();
    let caret = if snippet.chars().nth(column).is_some_and(|c| c.len_utf8() > 1) { '\u{ff3e}' } else { '^' };
    format!("ERROR: <input>:{line}:{}: {message}\n | {snippet}\n | {dots}{caret}", column + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_variable_is_an_undeclared_reference() {
        assert_eq!(
            compile_errors("noSuchVar").as_deref(),
            Some("ERROR: <input>:1:1: undeclared reference to 'noSuchVar' (in container '')\n | noSuchVar\n | ^")
        );
        assert_eq!(
            compile_errors("device.driver == x").as_deref(),
            Some(
                "ERROR: <input>:1:18: undeclared reference to 'x' (in container '')\n | device.driver == x\n | .................^"
            )
        );
    }

    #[test]
    fn macro_variables_and_the_device_are_declared() {
        assert_eq!(compile_errors("device.attributes['a'].all(k, k != '') && has(device.driver)"), None);
        assert_eq!(compile_errors("[1, 2].exists(x, x > 1)"), None);
    }
}
