//! Field selectors: `fields.ParseSelector`.

use super::{SelectorError, write_joined};
use std::fmt;

// ---------------------------------------------------------------------------
// Field selectors (fields.ParseSelector)
// ---------------------------------------------------------------------------

/// The operator of a field selector term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOp {
    /// `field=value` or `field==value`.
    Equals,
    /// `field!=value`.
    NotEquals,
}

/// One term of a field selector: `field`, operator and the unescaped value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field path, e.g. `metadata.name` (taken verbatim, no trimming).
    pub field: String,
    /// The comparison.
    pub op: FieldOp,
    /// The value, with `\\`, `\,`, `\=` escapes already resolved.
    pub value: String,
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.op {
            FieldOp::Equals => "=",
            FieldOp::NotEquals => "!=",
        };
        write!(f, "{}{}{}", self.field, op, escape_field_value(&self.value))
    }
}

/// A parsed field selector (`metadata.name=x,status.phase!=Running`, `==` too;
/// values may escape `\,`, `\=`, `\\`): the AND of its requirements. The empty
/// selector matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    /// The terms, in apimachinery's order (sorted by their raw text).
    pub requirements: Vec<FieldRequirement>,
}

/// Escapes `\`, `,` and `=` with a backslash so that a literal value can be put
/// in a field selector (apimachinery's `fields.EscapeValue`).
pub fn escape_field_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// apimachinery's `fields.UnescapeValue`.
fn unescape_field_value(s: &str) -> Result<String, SelectorError> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if matches!(c, '\\' | ',' | '=') {
                out.push(c);
            } else {
                return Err(SelectorError::InvalidFieldEscape { sequence: format!("\\{c}") });
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => return Err(SelectorError::UnescapedFieldCharacter { character: c }),
            _ => out.push(c),
        }
    }
    if in_slash {
        return Err(SelectorError::InvalidFieldEscape { sequence: "\\".to_string() });
    }
    Ok(out)
}

/// Splits on commas not preceded by a backslash escape; escapes stay in place.
fn split_field_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Splits a term at the first `!=`, `==` or `=` (checked in that order at
/// each position).
fn split_field_term(term: &str) -> Option<(&str, FieldOp, &str)> {
    const OPS: [(&str, FieldOp); 3] = [("!=", FieldOp::NotEquals), ("==", FieldOp::Equals), ("=", FieldOp::Equals)];
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (text, op) in OPS {
            if let Some(rhs) = rest.strip_prefix(text) {
                return Some((&term[..i], op, rhs));
            }
        }
    }
    None
}

impl FieldSelector {
    /// Parses the `fieldSelector` query parameter as `fields.ParseSelector`
    /// does: comma-separated terms (empty terms skipped), each `field=value`,
    /// `field==value` or `field!=value`, split at the first operator; values
    /// are unescaped; nothing is trimmed. A term with both an empty field and
    /// an empty value (`=`) is dropped as apimachinery does; an empty field
    /// with a value is [`SelectorError::EmptyFieldName`].
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut parts = split_field_terms(s);
        parts.sort_unstable();
        let mut requirements = Vec::with_capacity(parts.len());
        let mut empty_field: Option<SelectorError> = None;
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((field, op, raw_value)) = split_field_term(part) else {
                return Err(SelectorError::InvalidFieldTerm { selector: s.to_string(), term: part.to_string() });
            };
            let value = unescape_field_value(raw_value)?;
            if field.is_empty() {
                // apimachinery drops the term when both sides are empty; a
                // value without a field fails later, at field label conversion.
                if !value.is_empty() && empty_field.is_none() {
                    empty_field = Some(SelectorError::EmptyFieldName { term: part.to_string() });
                }
                continue;
            }
            requirements.push(FieldRequirement { field: field.to_string(), op, value });
        }
        match empty_field {
            Some(err) => Err(err),
            None => Ok(FieldSelector { requirements }),
        }
    }

    /// Whether the selector has no terms (and so matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object is selected. `lookup(field)` returns the object's
    /// value of that field, or `None` when it has none, which compares as the
    /// empty string (as apiserver's field sets do).
    pub fn matches(&self, lookup: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements.iter().all(|r| {
            let have = lookup(&r.field).unwrap_or_default();
            match r.op {
                FieldOp::Equals => have == r.value,
                FieldOp::NotEquals => have != r.value,
            }
        })
    }

    /// The field names used, in term order (possibly repeated), so the server
    /// can reject unsupported ones with 400 before evaluating.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.requirements.iter().map(|r| r.field.as_str())
    }
}

impl fmt::Display for FieldSelector {
    /// apimachinery's `String()`: terms joined with `,`, `==` printed as `=`,
    /// values re-escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_joined(f, &self.requirements)
    }
}

impl std::str::FromStr for FieldSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FieldSelector::parse(s)
    }
}
