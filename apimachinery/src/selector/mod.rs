//! Kubernetes label selectors and field selectors, parsed and evaluated the way
//! kube-apiserver does it for the `labelSelector` and `fieldSelector` query
//! parameters.
//!
//! * [`LabelSelector::parse`] follows `labels.Parse` from
//!   k8s.io/apimachinery `pkg/labels/selector.go`: the same byte-level lexer,
//!   the same recursive-descent parser, the same validation of label keys and
//!   values (`validation.IsQualifiedName` / `IsValidLabelValue`) and the same
//!   error texts.
//! * [`LabelSelector::from_parts`] follows `metav1.LabelSelectorAsSelector`
//!   (matchLabels + matchExpressions).
//! * [`FieldSelector::parse`] follows `fields.ParseSelector` from
//!   `pkg/fields/selector.go`, including its backslash escaping of values.
//!
//! Error messages reproduce apimachinery's wording, including the
//! `field.Error` rendering (`<path>: Invalid value: <value>: <detail>`).
//!
//! The same parser serves the API server (the query parameters, with upstream's errors) and
//! the controllers (selector strings in settings and knobs, matched against a label map).

mod fields;
mod labels;

pub use fields::{FieldOp, FieldRequirement, FieldSelector, escape_field_value};
pub use labels::{LabelOperator, LabelRequirement, LabelSelector};

use crate::go::quote;
use std::fmt;

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// One field-level validation failure inside a label requirement, shaped like
/// apimachinery's `field.Error` of type `Invalid`.
///
/// Displays as `<field>: Invalid value: <value>: <detail>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidField {
    /// Path of the offending part, as apimachinery names it: `key`, `values`,
    /// `values[0]` or `values[0][<label key>]`.
    pub field: String,
    /// The offending value, already rendered as apimachinery renders it: a
    /// Go-quoted string (`"-a"`) or a JSON list (`["a"]`, `null`).
    pub value: String,
    /// Why the value is invalid.
    pub detail: String,
}

impl fmt::Display for InvalidField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: Invalid value: {}: {}", self.field, self.value, self.detail)
    }
}

/// Why a label or field selector could not be parsed or built.
///
/// The `Display` text of every variant is the message kube-apiserver produces
/// for the same input, so it can be returned verbatim in a 400 response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A label selector is malformed between requirements, e.g.
    /// `found ',', expected: identifier after ','`.
    #[error("{message}")]
    LabelSyntax {
        /// The parser's complaint.
        message: String,
    },
    /// A single label requirement is malformed, e.g. `a!==b` gives
    /// `unable to parse requirement: found '=', expected: identifier`.
    #[error("unable to parse requirement: {message}")]
    RequirementSyntax {
        /// The parser's complaint, without the `unable to parse requirement: ` prefix.
        message: String,
    },
    /// A label key in a selector string is not a qualified name.
    /// Displays as apimachinery does:
    /// `unable to parse requirement: <nil>: Invalid value: "-a": name part must ...`.
    #[error(
        "unable to parse requirement: <nil>: Invalid value: {}: {detail}",
        quote(.key)
    )]
    InvalidLabelKey {
        /// The rejected key.
        key: String,
        /// The validation failures, joined with `; `.
        detail: String,
    },
    /// A requirement failed validation (bad value, bad value count, non-integer
    /// for `gt`/`lt`, or a bad key when built with [`LabelSelector::from_parts`]).
    /// Several failures display as `[first, second]`, like Go's error aggregate.
    #[error("{}{}", parse_prefix(.from_parse), aggregate(.errors))]
    InvalidRequirement {
        /// True when the requirement came from a selector string, which adds the
        /// `unable to parse requirement: ` prefix.
        from_parse: bool,
        /// The individual failures, in apimachinery's order.
        errors: Vec<InvalidField>,
    },
    /// A matchExpressions operator other than `In`, `NotIn`, `Exists`, `DoesNotExist`.
    #[error("{} is not a valid label selector operator", quote(.operator))]
    InvalidOperator {
        /// The rejected operator.
        operator: String,
    },
    /// A field selector term without `=`, `==` or `!=`.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    InvalidFieldTerm {
        /// The whole field selector.
        selector: String,
        /// The term that has no operator.
        term: String,
    },
    /// A field selector value with a backslash escape other than `\\`, `\,`, `\=`
    /// (or a trailing lone backslash).
    #[error("invalid field selector: invalid escape sequence: {sequence}")]
    InvalidFieldEscape {
        /// The offending escape sequence, backslash included.
        sequence: String,
    },
    /// A field selector value containing an unescaped `,` or `=`. As in
    /// apimachinery the character is printed as its code point number
    /// (`... unescaped character in value: 61` for `=`).
    #[error("invalid field selector: unescaped character in value: {}", code_point(.character))]
    UnescapedFieldCharacter {
        /// The unescaped character.
        character: char,
    },
    /// A field selector term with an empty field name and a non-empty value
    /// (`=x`). apimachinery's parser lets it through and kube-apiserver then
    /// rejects the empty label during field label conversion, with
    /// `field label not supported: ` (the label being empty); this variant
    /// reports the same text at parse time.
    #[error("field label not supported: ")]
    EmptyFieldName {
        /// The offending term.
        term: String,
    },
}

fn parse_prefix(from_parse: &bool) -> &'static str {
    if *from_parse { "unable to parse requirement: " } else { "" }
}

fn code_point(c: &char) -> u32 {
    u32::from(*c)
}

/// Renders a list of field errors like Go's `utilerrors.NewAggregate(...).Error()`:
/// one message alone, several (deduplicated) as `[a, b]`.
fn aggregate(errors: &[InvalidField]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errors {
        let msg = e.to_string();
        if !seen.contains(&msg) {
            seen.push(msg);
        }
    }
    if seen.len() == 1 {
        seen.remove(0)
    } else if seen.is_empty() {
        String::new()
    } else {
        format!("[{}]", seen.join(", "))
    }
}

/// Writes the requirements joined with `,`, as both selectors' `String()` do.
fn write_joined(f: &mut fmt::Formatter<'_>, requirements: &[impl fmt::Display]) -> fmt::Result {
    for (i, r) in requirements.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write!(f, "{r}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
