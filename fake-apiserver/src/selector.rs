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

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};

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
        go_quote(.key)
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
    #[error("{} is not a valid label selector operator", go_quote(.operator))]
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

// ---------------------------------------------------------------------------
// Go-compatible quoting (strconv.Quote and encoding/json)
// ---------------------------------------------------------------------------

/// Approximates Go's `unicode.IsPrint`: letters, marks, numbers, punctuation,
/// symbols and ASCII space. Unassigned code points are treated as printable
/// (Rust's std has no Unicode category tables).
fn go_is_print(c: char) -> bool {
    let u = u32::from(c);
    if u < 0x80 {
        return (0x20..0x7f).contains(&u);
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    // Format characters (Cf), private use (Co) and noncharacters.
    !matches!(
        u,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xE000..=0xF8FF
            | 0xFDD0..=0xFDEF
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0xFFFE..=0xFFFF
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
            | 0xF0000..=0x10FFFF
    )
}

/// Quotes a string the way Go's `%q` / `strconv.Quote` does.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        let u = u32::from(c);
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if go_is_print(c) => out.push(c),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            _ if u < 0x80 => {
                let _ = write!(out, "\\x{u:02x}");
            }
            _ if u < 0x10000 => {
                let _ = write!(out, "\\u{u:04x}");
            }
            _ => {
                let _ = write!(out, "\\U{u:08x}");
            }
        }
    }
    out.push('"');
    out
}

/// Encodes a string as Go's `encoding/json` does (HTML-safe escaping included).
fn json_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        let u = u32::from(c);
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{u:04x}");
            }
            _ if u < 0x20 => {
                let _ = write!(out, "\\u{u:04x}");
            }
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Renders a value list as `json.Marshal` would; an empty list renders as
/// `null` because apimachinery passes a nil slice in the cases that can fail.
fn json_list(values: &[String]) -> String {
    if values.is_empty() {
        return "null".to_string();
    }
    let items: Vec<String> = values.iter().map(|v| json_quote(v)).collect();
    format!("[{}]", items.join(","))
}

// ---------------------------------------------------------------------------
// Label key / value validation (k8s.io/apimachinery validation)
// ---------------------------------------------------------------------------

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR_MSG: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const LABEL_NAME_MAX: usize = 63;
const LABEL_VALUE_MAX: usize = 63;
const DNS1123_SUBDOMAIN_MAX: usize = 253;

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    let mut out = String::from(msg);
    if examples.is_empty() {
        let _ = write!(out, " (regex used for validation is '{re}')");
        return out;
    }
    out.push_str(" (e.g. ");
    for (i, ex) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        let _ = write!(out, "'{ex}', ");
    }
    let _ = write!(out, "regex used for validation is '{re}')");
    out
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, anchored.
fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`, anchored.
fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let b = label.as_bytes();
        let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        match (b.first(), b.last()) {
            (Some(f), Some(l)) => edge(f) && edge(l) && b.iter().all(|c| edge(c) || *c == b'-'),
            _ => false,
        }
    })
}

/// Failures of `validation.IsQualifiedName` (a label key), empty when valid.
pub(crate) fn label_key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > DNS1123_SUBDOMAIN_MAX {
                    errs.push(format!("prefix part {}", max_len_error(DNS1123_SUBDOMAIN_MAX)));
                }
                if !is_dns1123_subdomain(prefix) {
                    errs.push(format!(
                        "prefix part {}",
                        regex_error(DNS1123_SUBDOMAIN_ERR_MSG, DNS1123_SUBDOMAIN_FMT, &["example.com"])
                    ));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR_MSG, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > LABEL_NAME_MAX {
        errs.push(format!("name part {}", max_len_error(LABEL_NAME_MAX)));
    }
    if !is_label_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(LABEL_KEY_ERR_MSG, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    errs
}

/// Failures of `validation.IsValidLabelValue`, empty when valid.
pub(crate) fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX {
        errs.push(max_len_error(LABEL_VALUE_MAX));
    }
    if !value.is_empty() && !is_label_name(value) {
        errs.push(regex_error(LABEL_VALUE_ERR_MSG, LABEL_VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errs
}

/// Whether `key` is a valid label key (a qualified name: optional DNS-1123
/// subdomain prefix of at most 253 bytes and `/`, then a name of at most 63
/// bytes of alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric).
pub fn is_valid_label_key(key: &str) -> bool {
    label_key_errors(key).is_empty()
}

/// Whether `value` is a valid label value (empty, or at most 63 bytes of
/// alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric).
pub fn is_valid_label_value(value: &str) -> bool {
    label_value_errors(value).is_empty()
}

// ---------------------------------------------------------------------------
// Label requirements
// ---------------------------------------------------------------------------

/// The operator of one label requirement (apimachinery's `selection.Operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LabelOperator {
    /// `key in (a,b)`: the label exists and its value is one of the set.
    In,
    /// `key notin (a,b)`: the label is absent or its value is not in the set.
    NotIn,
    /// `key=a`: the label exists and equals the value.
    Equals,
    /// `key==a`: same as [`LabelOperator::Equals`], kept apart for printing.
    DoubleEquals,
    /// `key!=a`: the label is absent or differs from the value.
    NotEquals,
    /// `key`: the label exists.
    Exists,
    /// `!key`: the label does not exist.
    DoesNotExist,
    /// `key>1`: the label exists, parses as an integer and is greater.
    GreaterThan,
    /// `key<1`: the label exists, parses as an integer and is smaller.
    LessThan,
}

impl LabelOperator {
    /// The operator's name in apimachinery's `selection` package
    /// (`in`, `notin`, `=`, `==`, `!=`, `exists`, `!`, `gt`, `lt`).
    pub fn as_str(self) -> &'static str {
        match self {
            LabelOperator::In => "in",
            LabelOperator::NotIn => "notin",
            LabelOperator::Equals => "=",
            LabelOperator::DoubleEquals => "==",
            LabelOperator::NotEquals => "!=",
            LabelOperator::Exists => "exists",
            LabelOperator::DoesNotExist => "!",
            LabelOperator::GreaterThan => "gt",
            LabelOperator::LessThan => "lt",
        }
    }
}

/// One requirement of a label selector: a key, an operator and its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelRequirement {
    key: String,
    operator: LabelOperator,
    values: Vec<String>,
}

impl LabelRequirement {
    /// Builds and validates a requirement like apimachinery's
    /// `labels.NewRequirement`: the key must be a qualified name, every value a
    /// valid label value; `in`/`notin` need at least one value, `=`/`==`/`!=`
    /// exactly one, `exists`/`!` none, `gt`/`lt` exactly one integer.
    /// Values are kept in the given order (the string form sorts them).
    pub fn new(key: impl Into<String>, operator: LabelOperator, values: Vec<String>) -> Result<Self, SelectorError> {
        new_requirement(key.into(), operator, values, false)
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> LabelOperator {
        self.operator
    }

    /// The values (empty for `exists` / `!`).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn has_value(&self, v: &str) -> bool {
        self.values.iter().any(|x| x == v)
    }

    /// Whether `labels` satisfy this requirement. `!=` and `notin` match when
    /// the label is absent; `gt`/`lt` never match an absent or non-integer label.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let got = labels.get(&self.key);
        match self.operator {
            LabelOperator::In | LabelOperator::Equals | LabelOperator::DoubleEquals => {
                got.is_some_and(|v| self.has_value(v))
            }
            LabelOperator::NotIn | LabelOperator::NotEquals => got.is_none_or(|v| !self.has_value(v)),
            LabelOperator::Exists => got.is_some(),
            LabelOperator::DoesNotExist => got.is_none(),
            LabelOperator::GreaterThan | LabelOperator::LessThan => {
                let Some(Ok(have)) = got.map(|v| v.parse::<i64>()) else {
                    return false;
                };
                let [want] = self.values.as_slice() else {
                    return false;
                };
                let Ok(want) = want.parse::<i64>() else {
                    return false;
                };
                if self.operator == LabelOperator::GreaterThan { have > want } else { have < want }
            }
        }
    }
}

impl fmt::Display for LabelRequirement {
    /// apimachinery's `Requirement.String()`: `!k`, `k`, `k=v`, `k==v`, `k!=v`,
    /// `k>v`, `k<v`, `k in (a,b)`, `k notin (a,b)` with set values sorted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == LabelOperator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let (op, parens) = match self.operator {
            LabelOperator::Exists | LabelOperator::DoesNotExist => return Ok(()),
            LabelOperator::Equals => ("=", false),
            LabelOperator::DoubleEquals => ("==", false),
            LabelOperator::NotEquals => ("!=", false),
            LabelOperator::GreaterThan => (">", false),
            LabelOperator::LessThan => ("<", false),
            LabelOperator::In => (" in ", true),
            LabelOperator::NotIn => (" notin ", true),
        };
        f.write_str(op)?;
        if parens {
            f.write_str("(")?;
        }
        if let [only] = self.values.as_slice() {
            f.write_str(only)?;
        } else {
            let mut sorted: Vec<&str> = self.values.iter().map(String::as_str).collect();
            sorted.sort_unstable();
            f.write_str(&sorted.join(","))?;
        }
        if parens {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// `labels.NewRequirement`. `from_parse` only changes how errors display.
fn new_requirement(
    key: String,
    operator: LabelOperator,
    values: Vec<String>,
    from_parse: bool,
) -> Result<LabelRequirement, SelectorError> {
    let mut errors = Vec::new();
    let key_errs = label_key_errors(&key);
    if !key_errs.is_empty() {
        errors.push(InvalidField { field: "key".to_string(), value: go_quote(&key), detail: key_errs.join("; ") });
    }
    let list_error = |detail: &str| InvalidField {
        field: "values".to_string(),
        value: json_list(&values),
        detail: detail.to_string(),
    };
    match operator {
        LabelOperator::In | LabelOperator::NotIn => {
            if values.is_empty() {
                errors.push(list_error("for 'in', 'notin' operators, values set can't be empty"));
            }
        }
        LabelOperator::Equals | LabelOperator::DoubleEquals | LabelOperator::NotEquals => {
            if values.len() != 1 {
                errors.push(list_error("exact-match compatibility requires one single value"));
            }
        }
        LabelOperator::Exists | LabelOperator::DoesNotExist => {
            if !values.is_empty() {
                errors.push(list_error("values set must be empty for exists and does not exist"));
            }
        }
        LabelOperator::GreaterThan | LabelOperator::LessThan => {
            if values.len() != 1 {
                errors.push(list_error("for 'Gt', 'Lt' operators, exactly one value is required"));
            }
            for (i, v) in values.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    errors.push(InvalidField {
                        field: format!("values[{i}]"),
                        value: go_quote(v),
                        detail: "for 'Gt', 'Lt' operators, the value must be an integer".to_string(),
                    });
                }
            }
        }
    }
    for (i, v) in values.iter().enumerate() {
        let errs = label_value_errors(v);
        if !errs.is_empty() {
            errors.push(InvalidField {
                field: format!("values[{i}][{key}]"),
                value: go_quote(v),
                detail: errs.join("; "),
            });
        }
    }
    if errors.is_empty() {
        Ok(LabelRequirement { key, operator, values })
    } else {
        Err(SelectorError::InvalidRequirement { from_parse, errors })
    }
}

// ---------------------------------------------------------------------------
// Label selector lexer and parser (labels.Parse)
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn string_to_token(s: &[u8]) -> Option<Token> {
    Some(match s {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special_symbol(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Byte-level lexer, a faithful port of apimachinery's (a NUL byte reads as
/// "end", exactly like Go's `read()` returning 0).
struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Lexer<'_> {
    fn read(&mut self) -> u8 {
        match self.s.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    fn lex(&mut self) -> (Token, String) {
        let mut ch = self.read();
        while is_whitespace(ch) {
            ch = self.read();
        }
        if ch == 0 {
            return (Token::EndOfString, String::new());
        }
        self.unread();
        if is_special_symbol(ch) { self.scan_special_symbol() } else { self.scan_id_or_keyword() }
    }

    fn scan_id_or_keyword(&mut self) -> (Token, String) {
        let mut buffer = Vec::new();
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if is_special_symbol(ch) || is_whitespace(ch) {
                self.unread();
                break;
            }
            buffer.push(ch);
        }
        let tok = string_to_token(&buffer).unwrap_or(Token::Identifier);
        (tok, lossy(&buffer))
    }

    fn scan_special_symbol(&mut self) -> (Token, String) {
        let mut last: Option<(Token, String)> = None;
        let mut buffer = Vec::new();
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if !is_special_symbol(ch) {
                self.unread();
                break;
            }
            buffer.push(ch);
            if let Some(tok) = string_to_token(&buffer) {
                last = Some((tok, lossy(&buffer)));
            } else if last.is_some() {
                self.unread();
                break;
            }
        }
        last.unwrap_or_else(|| (Token::Error, format!("error expected: keyword found '{}'", lossy(&buffer))))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

fn syntax(message: String) -> SelectorError {
    SelectorError::RequirementSyntax { message }
}

impl Parser {
    fn new(input: &str) -> Self {
        let mut lexer = Lexer { s: input.as_bytes(), pos: 0 };
        let mut items = Vec::new();
        loop {
            let item = lexer.lex();
            let end = item.0 == Token::EndOfString;
            items.push(item);
            if end {
                break;
            }
        }
        Parser { items, position: 0 }
    }

    fn adjust(tok: Token, context: Context) -> Token {
        match (context, tok) {
            (Context::Values, Token::In | Token::NotIn) => Token::Identifier,
            _ => tok,
        }
    }

    fn lookahead(&self, context: Context) -> (Token, String) {
        match self.items.get(self.position) {
            Some((tok, lit)) => (Self::adjust(*tok, context), lit.clone()),
            None => (Token::EndOfString, String::new()),
        }
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        let item = self.lookahead(context);
        self.position += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<LabelRequirement>, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    requirements.push(self.parse_requirement()?);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(SelectorError::LabelSyntax {
                                    message: format!("found '{l2}', expected: identifier after ','"),
                                });
                            }
                        }
                        _ => {
                            return Err(SelectorError::LabelSyntax {
                                message: format!("found '{l}', expected: ',' or 'end of string'"),
                            });
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(SelectorError::LabelSyntax {
                        message: format!("found '{lit}', expected: !, identifier, or 'end of string'"),
                    });
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<LabelRequirement, SelectorError> {
        let (key, operator) = self.parse_key_and_infer_operator()?;
        if let Some(op @ (LabelOperator::Exists | LabelOperator::DoesNotExist)) = operator {
            return new_requirement(key, op, Vec::new(), true);
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            LabelOperator::In | LabelOperator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        new_requirement(key, operator, values.into_iter().collect(), true)
    }

    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<LabelOperator>), SelectorError> {
        let mut operator = None;
        let (mut tok, mut literal) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            operator = Some(LabelOperator::DoesNotExist);
            (tok, literal) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(syntax(format!("found '{literal}', expected: identifier")));
        }
        let errs = label_key_errors(&literal);
        if !errs.is_empty() {
            return Err(SelectorError::InvalidLabelKey { key: literal, detail: errs.join("; ") });
        }
        let (t, _) = self.lookahead(Context::Values);
        if (t == Token::EndOfString || t == Token::Comma) && operator.is_none() {
            operator = Some(LabelOperator::Exists);
        }
        Ok((literal, operator))
    }

    fn parse_operator(&mut self) -> Result<LabelOperator, SelectorError> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => LabelOperator::In,
            Token::Equals => LabelOperator::Equals,
            Token::DoubleEquals => LabelOperator::DoubleEquals,
            Token::GreaterThan => LabelOperator::GreaterThan,
            Token::LessThan => LabelOperator::LessThan,
            Token::NotIn => LabelOperator::NotIn,
            Token::NotEquals => LabelOperator::NotEquals,
            _ => {
                return Err(syntax(format!("found '{lit}', expected: {BINARY_OPERATORS}")));
            }
        })
    }

    fn parse_values(&mut self) -> Result<BTreeSet<String>, SelectorError> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(syntax(format!("found '{lit}' expected: '('")));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let set = self.parse_identifiers_list()?;
                let (tok, _) = self.consume(Context::Values);
                if tok != Token::ClosedPar {
                    return Err(syntax(format!("found '{lit}', expected: ')'")));
                }
                Ok(set)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(syntax(format!("found '{lit}', expected: ',', ')' or identifier"))),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, SelectorError> {
        let mut set = BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    set.insert(lit);
                    let (tok2, lit2) = self.lookahead(Context::Values);
                    match tok2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set),
                        _ => {
                            return Err(syntax(format!("found '{lit2}', expected: ',' or ')'")));
                        }
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        set.insert(String::new()); // "(,"
                    }
                    let (tok2, _) = self.lookahead(Context::Values);
                    if tok2 == Token::ClosedPar {
                        set.insert(String::new()); // ",)"
                        return Ok(set);
                    }
                    if tok2 == Token::Comma {
                        self.consume(Context::Values);
                        set.insert(String::new()); // ",,"
                    }
                }
                _ => {
                    return Err(syntax(format!("found '{lit}', expected: ',', or identifier")));
                }
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, SelectorError> {
        let (tok, _) = self.lookahead(Context::Values);
        if tok == Token::EndOfString || tok == Token::Comma {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Token::Identifier {
            return Ok(BTreeSet::from([lit]));
        }
        Err(syntax(format!("found '{lit}', expected: identifier")))
    }
}

// ---------------------------------------------------------------------------
// LabelSelector
// ---------------------------------------------------------------------------

/// A parsed label selector (`a=b,c!=d,e in (f,g),h notin (i),j,!k`, also `==`,
/// and `>`/`<` with integer values): the AND of its requirements, kept sorted
/// by key. The empty selector matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<LabelRequirement>,
}

impl LabelSelector {
    /// Parses the `labelSelector` query parameter exactly as `labels.Parse`
    /// does. `""` (or only whitespace) gives the empty selector, which matches
    /// everything.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut requirements = Parser::new(s).parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector { requirements })
    }

    /// Whether the selector has no requirements (and so matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object with these labels is selected: every requirement must
    /// match.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[LabelRequirement] {
        &self.requirements
    }

    /// Builds a selector from a `metav1.LabelSelector` object, like
    /// `metav1.LabelSelectorAsSelector`: every `matchLabels` entry becomes
    /// `key=value`, every `matchExpressions` entry `(key, operator, values)`
    /// with operator `In`, `NotIn`, `Exists` or `DoesNotExist` becomes the
    /// matching requirement. Keys and values are validated; no parts at all
    /// gives the empty selector (matches everything).
    pub fn from_parts(
        match_labels: &BTreeMap<String, String>,
        match_expressions: &[(String, String, Vec<String>)],
    ) -> Result<Self, SelectorError> {
        let mut requirements = Vec::with_capacity(match_labels.len() + match_expressions.len());
        for (k, v) in match_labels {
            requirements.push(new_requirement(k.clone(), LabelOperator::Equals, vec![v.clone()], false)?);
        }
        for (key, operator, values) in match_expressions {
            let op = match operator.as_str() {
                "In" => LabelOperator::In,
                "NotIn" => LabelOperator::NotIn,
                "Exists" => LabelOperator::Exists,
                "DoesNotExist" => LabelOperator::DoesNotExist,
                _ => {
                    return Err(SelectorError::InvalidOperator { operator: operator.clone() });
                }
            };
            requirements.push(new_requirement(key.clone(), op, values.clone(), false)?);
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector { requirements })
    }
}

impl fmt::Display for LabelSelector {
    /// The canonical form of apimachinery's `Selector.String()`: requirements
    /// sorted by key, joined with `,`, set values sorted, e.g.
    /// `app=x,tier in (a,b)`. Parsing it again gives the same selector.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for LabelSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LabelSelector::parse(s)
    }
}

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
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for FieldSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FieldSelector::parse(s)
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    const NAME_RE_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE_RE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn sel(s: &str) -> LabelSelector {
        LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
    }

    fn label_err(s: &str) -> String {
        match LabelSelector::parse(s) {
            Ok(v) => panic!("{s:?} should fail, got {v}"),
            Err(e) => e.to_string(),
        }
    }

    fn field_err(s: &str) -> String {
        match FieldSelector::parse(s) {
            Ok(v) => panic!("{s:?} should fail, got {v}"),
            Err(e) => e.to_string(),
        }
    }

    // ----- label selector parsing and canonical form -----

    #[test]
    fn empty_label_selector_matches_everything() {
        for s in ["", "   ", "\t\n", "\0x=y"] {
            let ls = sel(s);
            assert!(ls.is_empty());
            assert_eq!(ls.to_string(), "");
            assert!(ls.matches(&labels(&[])));
            assert!(ls.matches(&labels(&[("a", "b")])));
        }
        assert!(LabelSelector::default().matches(&labels(&[("x", "y")])));
    }

    #[test]
    fn canonical_string_form() {
        let cases = [
            ("x=a", "x=a"),
            ("x==a", "x==a"),
            ("x!=a", "x!=a"),
            ("x", "x"),
            ("!x", "!x"),
            ("x>1", "x>1"),
            ("x<10", "x<10"),
            ("x in (b,a)", "x in (a,b)"),
            ("x notin (b,a,b)", "x notin (a,b)"),
            ("x in (a)", "x in (a)"),
            ("tier in (a,b),app=x", "app=x,tier in (a,b)"),
            ("  x  in  ( a , b )  ,  y = c ", "x in (a,b),y=c"),
            ("z,!y,x=1", "x=1,!y,z"),
            ("x=", "x="),
            ("x=,y=b", "x=,y=b"),
            ("x in ()", "x in ()"),
            ("x in (,a)", "x in (,a)"),
            ("x in (a,)", "x in (,a)"),
            ("x in (a,,b)", "x in (,a,b)"),
            ("in in (in,notin)", "in in (in,notin)"),
            ("notin notin (in)", "notin notin (in)"),
            ("notin=notin", "notin=notin"),
            ("!in", "!in"),
            ("example.com/app=v", "example.com/app=v"),
            ("a=1,a=2", "a=1,a=2"),
            // A NUL byte reads as Go's end-of-input byte: it ends the token
            // list when met between tokens, and only splits an identifier.
            ("x=a\0", "x=a"),
            ("x=\0a", "x=a"),
            ("x=a,\0b", "b,x=a"),
        ];
        for (input, want) in cases {
            assert_eq!(sel(input).to_string(), want, "input {input:?}");
            // The canonical form re-parses to the same selector.
            assert_eq!(sel(want), sel(input), "round trip of {input:?}");
        }
    }

    #[test]
    fn requirements_are_exposed() {
        let ls = sel("b in (y,x),a");
        let r = ls.requirements();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].key(), "a");
        assert_eq!(r[0].operator(), LabelOperator::Exists);
        assert!(r[0].values().is_empty());
        assert_eq!(r[1].key(), "b");
        assert_eq!(r[1].operator(), LabelOperator::In);
        assert_eq!(r[1].values(), ["x", "y"]);
        assert_eq!(LabelOperator::GreaterThan.as_str(), "gt");
        assert_eq!("a=b".parse::<LabelSelector>(), Ok(sel("a=b")));
    }

    // ----- label matching semantics -----

    #[test]
    fn label_operators_match() {
        let with = labels(&[("x", "a"), ("n", "5")]);
        let other = labels(&[("x", "b"), ("n", "abc")]);
        let without = labels(&[("y", "a")]);
        // (selector, with, other, without)
        let cases = [
            ("x=a", true, false, false),
            ("x==a", true, false, false),
            ("x!=a", false, true, true),
            ("x in (a,c)", true, false, false),
            ("x notin (a,c)", false, true, true),
            ("x", true, true, false),
            ("!x", false, false, true),
            ("n>4", true, false, false),
            ("n>5", false, false, false),
            ("n<6", true, false, false),
            ("n<5", false, false, false),
        ];
        for (s, a, b, c) in cases {
            let ls = sel(s);
            assert_eq!(ls.matches(&with), a, "{s} on {with:?}");
            assert_eq!(ls.matches(&other), b, "{s} on {other:?}");
            assert_eq!(ls.matches(&without), c, "{s} on {without:?}");
        }
    }

    #[test]
    fn empty_values_and_missing_labels() {
        // x= selects objects whose label x exists and is empty.
        let ls = sel("x=");
        assert!(ls.matches(&labels(&[("x", "")])));
        assert!(!ls.matches(&labels(&[])));
        // x!= selects objects without x or with a non-empty x.
        let ls = sel("x!=");
        assert!(!ls.matches(&labels(&[("x", "")])));
        assert!(ls.matches(&labels(&[])));
        assert!(ls.matches(&labels(&[("x", "v")])));
        // in () is the set {""}.
        let ls = sel("x in ()");
        assert!(ls.matches(&labels(&[("x", "")])));
        assert!(!ls.matches(&labels(&[("x", "a")])));
        // notin matches a missing label.
        assert!(sel("x notin (a)").matches(&labels(&[])));
    }

    #[test]
    fn gt_lt_compare_integers() {
        let ls = sel("n>10,m<20");
        assert!(ls.matches(&labels(&[("n", "11"), ("m", "19")])));
        assert!(ls.matches(&labels(&[("n", "+11"), ("m", "-19")])));
        assert!(!ls.matches(&labels(&[("n", "10"), ("m", "19")])));
        assert!(!ls.matches(&labels(&[("n", "11"), ("m", "20")])));
        assert!(!ls.matches(&labels(&[("n", "11")])));
        assert!(!ls.matches(&labels(&[("n", "1_1"), ("m", "1")])));
        assert!(!ls.matches(&labels(&[("n", "99999999999999999999"), ("m", "1")])));
        assert!(sel("n>5").matches(&labels(&[("n", "6")])));
        assert!(sel("n<0").matches(&labels(&[("n", "-6")])));
    }

    #[test]
    fn multiple_requirements_are_anded() {
        let ls = sel("app=web,tier in (fe,be),!canary,env");
        assert!(ls.matches(&labels(&[("app", "web"), ("tier", "fe"), ("env", "p")])));
        assert!(!ls.matches(&labels(&[("app", "web"), ("tier", "fe")])));
        assert!(!ls.matches(&labels(&[("app", "web"), ("tier", "fe"), ("env", "p"), ("canary", "")])));
        assert!(!ls.matches(&labels(&[("app", "web"), ("tier", "db"), ("env", "p")])));
    }

    // ----- label parse errors -----

    #[test]
    fn label_syntax_errors() {
        let cases = [
            ("a=b=c", "found '=', expected: ',' or 'end of string'"),
            ("x=a,", "found '', expected: identifier after ','"),
            ("x=a,,y", "found ',', expected: identifier after ','"),
            (",x", "found ',', expected: !, identifier, or 'end of string'"),
            ("=x", "found '=', expected: !, identifier, or 'end of string'"),
            ("(x)", "found '(', expected: !, identifier, or 'end of string'"),
            ("!x=a", "found '=', expected: ',' or 'end of string'"),
            ("x in (a)b", "found 'b', expected: ',' or 'end of string'"),
            ("a!==b", "unable to parse requirement: found '=', expected: identifier"),
            ("x=(", "unable to parse requirement: found '(', expected: identifier"),
            ("x in a", "unable to parse requirement: found 'a' expected: '('"),
            ("x in", "unable to parse requirement: found '' expected: '('"),
            ("x in (", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
            ("x in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
            ("x in (a", "unable to parse requirement: found '', expected: ',' or ')'"),
            ("x in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'"),
            ("x in (a,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
            ("x y", "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt"),
            ("x !y", "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt"),
            ("!", "unable to parse requirement: found '', expected: identifier"),
            ("!!x", "unable to parse requirement: found '!', expected: identifier"),
            ("!=x", "found '!=', expected: !, identifier, or 'end of string'"),
            ("x=a\0b", "found 'b', expected: ',' or 'end of string'"),
            ("x=a, \0b", "found '', expected: identifier after ','"),
        ];
        for (input, want) in cases {
            assert_eq!(label_err(input), want, "input {input:?}");
        }
        assert!(matches!(LabelSelector::parse("x in a"), Err(SelectorError::RequirementSyntax { .. })));
        assert!(matches!(LabelSelector::parse("x=a,"), Err(SelectorError::LabelSyntax { .. })));
    }

    #[test]
    fn invalid_label_keys() {
        assert_eq!(
            label_err("-a"),
            format!("unable to parse requirement: <nil>: Invalid value: \"-a\": name part {NAME_RE_MSG}")
        );
        assert_eq!(
            LabelSelector::parse("-a=b"),
            Err(SelectorError::InvalidLabelKey { key: "-a".into(), detail: format!("name part {NAME_RE_MSG}") })
        );
        assert_eq!(
            label_err("/a"),
            "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty"
        );
        assert_eq!(
            label_err("a/"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"a/\": name part must be non-empty; name part {NAME_RE_MSG}"
            )
        );
        assert_eq!(
            label_err("Ex.com/a"),
            "unable to parse requirement: <nil>: Invalid value: \"Ex.com/a\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
        assert_eq!(
            label_err("a/b/c"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key {NAME_RE_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )
        );
        let long_name = "a".repeat(64);
        assert_eq!(
            label_err(&long_name),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"{long_name}\": name part must be no more than 63 bytes"
            )
        );
        let long_prefix = format!("{}/a", "b".repeat(254));
        assert!(label_err(&long_prefix).ends_with("prefix part must be no more than 253 bytes"));
        // Limits are inclusive.
        sel(&"a".repeat(63));
        sel(&format!("{}/{}", "b".repeat(253), "a".repeat(63)));
        sel("a.b-c/A_b.c-D9");
        // Non-ASCII and control characters are quoted like Go's %q.
        assert_eq!(
            label_err("é\u{1}"),
            format!("unable to parse requirement: <nil>: Invalid value: \"é\\x01\": name part {NAME_RE_MSG}")
        );
    }

    #[test]
    fn invalid_label_values() {
        assert_eq!(
            label_err("x=-a"),
            format!("unable to parse requirement: values[0][x]: Invalid value: \"-a\": {VALUE_RE_MSG}")
        );
        assert_eq!(
            label_err("x in (ok,-b)"),
            format!("unable to parse requirement: values[0][x]: Invalid value: \"-b\": {VALUE_RE_MSG}")
        );
        let long = "v".repeat(64);
        assert_eq!(
            label_err(&format!("x={long}")),
            format!(
                "unable to parse requirement: values[0][x]: Invalid value: \"{long}\": must be no more than 63 bytes"
            )
        );
        sel(&format!("x={}", "v".repeat(63)));
        assert_eq!(
            label_err("x>a"),
            "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        assert_eq!(
            label_err("x<"),
            "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        // A negative integer is an integer but not a valid label value.
        assert_eq!(
            label_err("x>-1"),
            format!("unable to parse requirement: values[0][x]: Invalid value: \"-1\": {VALUE_RE_MSG}")
        );
        // Both failures are aggregated.
        assert_eq!(
            label_err("x>-a"),
            format!(
                "unable to parse requirement: [values[0]: Invalid value: \"-a\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][x]: Invalid value: \"-a\": {VALUE_RE_MSG}]"
            )
        );
        assert_eq!(
            label_err("x>99999999999999999999"),
            "unable to parse requirement: values[0]: Invalid value: \"99999999999999999999\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
    }

    // ----- from_parts (metav1.LabelSelector) -----

    fn expr(key: &str, op: &str, values: &[&str]) -> (String, String, Vec<String>) {
        (key.to_string(), op.to_string(), values.iter().map(|v| v.to_string()).collect())
    }

    #[test]
    fn from_parts_builds_selector() {
        let ml = labels(&[("app", "x"), ("z", "1")]);
        let ls = LabelSelector::from_parts(
            &ml,
            &[
                expr("tier", "In", &["b", "a"]),
                expr("env", "NotIn", &["prod"]),
                expr("gpu", "Exists", &[]),
                expr("old", "DoesNotExist", &[]),
            ],
        )
        .unwrap();
        assert_eq!(ls.to_string(), "app=x,env notin (prod),gpu,!old,tier in (a,b),z=1");
        assert_eq!(sel(&ls.to_string()).to_string(), ls.to_string());
        let good = labels(&[("app", "x"), ("z", "1"), ("tier", "a"), ("gpu", "")]);
        assert!(ls.matches(&good));
        let mut bad = good.clone();
        bad.insert("old".into(), "y".into());
        assert!(!ls.matches(&bad));
        let mut bad = good.clone();
        bad.insert("env".into(), "prod".into());
        assert!(!ls.matches(&bad));
        let mut bad = good.clone();
        bad.remove("gpu");
        assert!(!ls.matches(&bad));

        let empty = LabelSelector::from_parts(&BTreeMap::new(), &[]).unwrap();
        assert!(empty.is_empty());
        assert!(empty.matches(&labels(&[("a", "b")])));
    }

    #[test]
    fn from_parts_errors() {
        let none = BTreeMap::new();
        let err = |ml: &BTreeMap<String, String>, ex: &[(String, String, Vec<String>)]| {
            LabelSelector::from_parts(ml, ex).unwrap_err().to_string()
        };
        assert_eq!(err(&none, &[expr("a", "Foo", &[])]), "\"Foo\" is not a valid label selector operator");
        assert_eq!(err(&none, &[expr("a", "in", &["x"])]), "\"in\" is not a valid label selector operator");
        assert_eq!(
            err(&none, &[expr("a", "In", &[])]),
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
        );
        assert_eq!(
            err(&none, &[expr("a", "Exists", &["x", "<y>"])]),
            format!(
                "[values: Invalid value: [\"x\",\"\\u003cy\\u003e\"]: values set must be empty for exists and does not exist, values[1][a]: Invalid value: \"<y>\": {VALUE_RE_MSG}]"
            )
        );
        assert_eq!(
            err(&none, &[expr("-a", "DoesNotExist", &[])]),
            format!("key: Invalid value: \"-a\": name part {NAME_RE_MSG}")
        );
        assert_eq!(
            err(&labels(&[("app", "a b")]), &[]),
            format!("values[0][app]: Invalid value: \"a b\": {VALUE_RE_MSG}")
        );
        assert_eq!(
            LabelSelector::from_parts(&none, &[expr("a", "NotIn", &[])]),
            Err(SelectorError::InvalidRequirement {
                from_parse: false,
                errors: vec![InvalidField {
                    field: "values".into(),
                    value: "null".into(),
                    detail: "for 'in', 'notin' operators, values set can't be empty".into(),
                }],
            })
        );
    }

    #[test]
    fn requirement_new_validates() {
        assert!(LabelRequirement::new("a", LabelOperator::Equals, vec![]).is_err());
        assert!(LabelRequirement::new("a", LabelOperator::GreaterThan, vec!["1".into(), "2".into()]).is_err());
        let r = LabelRequirement::new("a", LabelOperator::In, vec!["b".into(), "a".into()]).unwrap();
        assert_eq!(r.values(), ["b", "a"]);
        assert_eq!(r.to_string(), "a in (a,b)");
        assert!(is_valid_label_key("k8s.io/name"));
        assert!(!is_valid_label_key("K8s.io/name"));
        assert!(is_valid_label_value(""));
        assert!(!is_valid_label_value("a."));
    }

    #[test]
    fn go_quoting() {
        assert_eq!(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(go_quote("\u{7}\u{8}\u{c}\n\r\t\u{b}\u{0}\u{7f}"), "\"\\a\\b\\f\\n\\r\\t\\v\\x00\\x7f\"");
        assert_eq!(go_quote("é\u{a0}\u{200b}\u{1F600}\u{10FFFD}"), "\"é\\u00a0\\u200b\u{1F600}\\U0010fffd\"");
        assert_eq!(json_quote("<&>\u{1}\u{2028}é\""), "\"\\u003c\\u0026\\u003e\\u0001\\u2028é\\\"\"");
    }

    // ----- field selectors -----

    fn fsel(s: &str) -> FieldSelector {
        FieldSelector::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
    }

    fn freq(field: &str, op: FieldOp, value: &str) -> FieldRequirement {
        FieldRequirement { field: field.into(), op, value: value.into() }
    }

    #[test]
    fn field_selector_parses_operators() {
        let fs = fsel("metadata.name=x,status.phase!=Running,spec.nodeName==n1");
        assert_eq!(
            fs.requirements,
            vec![
                freq("metadata.name", FieldOp::Equals, "x"),
                freq("spec.nodeName", FieldOp::Equals, "n1"),
                freq("status.phase", FieldOp::NotEquals, "Running"),
            ]
        );
        assert_eq!(fs.fields().collect::<Vec<_>>(), ["metadata.name", "spec.nodeName", "status.phase"]);
        assert_eq!(fs.to_string(), "metadata.name=x,spec.nodeName=n1,status.phase!=Running");
        assert_eq!(fsel("a=").requirements, vec![freq("a", FieldOp::Equals, "")]);
        assert_eq!(fsel("a!=").requirements, vec![freq("a", FieldOp::NotEquals, "")]);
        // The first operator wins; '!' alone belongs to the field name.
        assert_eq!(fsel("a!b=c").requirements, vec![freq("a!b", FieldOp::Equals, "c")]);
        assert_eq!("a=b".parse::<FieldSelector>(), Ok(fsel("a=b")));
    }

    #[test]
    fn field_selector_empty_and_whitespace() {
        for s in ["", ",", ",,", "=", "==", "!=", "=,a=b"] {
            let fs = fsel(s);
            assert_eq!(fs.is_empty(), s != "=,a=b", "{s:?}");
        }
        assert!(fsel("").matches(|_| None));
        // Whitespace is data, as in apimachinery.
        assert_eq!(fsel(" metadata.name = x ").requirements, vec![freq(" metadata.name ", FieldOp::Equals, " x ")]);
    }

    #[test]
    fn field_selector_escaping() {
        assert_eq!(fsel("a=x\\,y").requirements, vec![freq("a", FieldOp::Equals, "x,y")]);
        assert_eq!(fsel("a=x\\=y").requirements, vec![freq("a", FieldOp::Equals, "x=y")]);
        assert_eq!(fsel("a=x\\\\y").requirements, vec![freq("a", FieldOp::Equals, "x\\y")]);
        assert_eq!(
            fsel("a=x\\,y,b=z").requirements,
            vec![freq("a", FieldOp::Equals, "x,y"), freq("b", FieldOp::Equals, "z")]
        );
        let fs = fsel("a=\\\\\\,\\=");
        assert_eq!(fs.requirements[0].value, "\\,=");
        assert_eq!(fs.to_string(), "a=\\\\\\,\\=");
        assert_eq!(escape_field_value("a,b=c\\"), "a\\,b\\=c\\\\");
    }

    #[test]
    fn field_selector_errors() {
        assert_eq!(field_err("a"), "invalid selector: 'a'; can't understand 'a'");
        assert_eq!(field_err("b=c,a"), "invalid selector: 'b=c,a'; can't understand 'a'");
        assert_eq!(field_err("a=b=c"), "invalid field selector: unescaped character in value: 61");
        assert_eq!(field_err("a==b=c"), "invalid field selector: unescaped character in value: 61");
        assert_eq!(field_err("a=b\\"), "invalid field selector: invalid escape sequence: \\");
        assert_eq!(field_err("a=b\\x"), "invalid field selector: invalid escape sequence: \\x");
        assert_eq!(field_err("a=\\é"), "invalid field selector: invalid escape sequence: \\é");
        assert_eq!(field_err("=x"), "field label not supported: ");
        assert_eq!(FieldSelector::parse("=x"), Err(SelectorError::EmptyFieldName { term: "=x".into() }));
        // Syntax errors in other terms are reported before the empty field.
        assert_eq!(field_err("=x,zz"), "invalid selector: '=x,zz'; can't understand 'zz'");
        assert_eq!(FieldSelector::parse("a=,b=c\\"), Err(SelectorError::InvalidFieldEscape { sequence: "\\".into() }));
        assert_eq!(
            FieldSelector::parse("a=b,c"),
            Err(SelectorError::InvalidFieldTerm { selector: "a=b,c".into(), term: "c".into() })
        );
    }

    #[test]
    fn field_selector_matching() {
        let obj = |f: &str| match f {
            "metadata.name" => Some("web".to_string()),
            "status.phase" => Some("Running".to_string()),
            _ => None,
        };
        assert!(fsel("metadata.name=web").matches(obj));
        assert!(fsel("metadata.name==web").matches(obj));
        assert!(!fsel("metadata.name=db").matches(obj));
        assert!(fsel("metadata.name!=db").matches(obj));
        assert!(!fsel("metadata.name!=web").matches(obj));
        assert!(fsel("metadata.name=web,status.phase!=Pending").matches(obj));
        assert!(!fsel("metadata.name=web,status.phase=Pending").matches(obj));
        // A missing field reads as "".
        assert!(fsel("spec.nodeName=").matches(obj));
        assert!(!fsel("spec.nodeName!=").matches(obj));
        assert!(fsel("spec.nodeName!=n1").matches(obj));
        assert!(!fsel("spec.nodeName=n1").matches(obj));
    }

    // ----- fuzzing -----

    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    const PIECES: &[&str] = &[
        "a", "b", "x", "k8s.io/", "/", "in", "notin", "(", ")", ",", "=", "==", "!=", "!", ">", "<", " ", "\t", "1",
        "-1", "+2", "-", "_", ".", "\0", "\\", "\\,", "\\=", "é", "\u{2028}", "Z9",
    ];

    fn random_input(rng: &mut XorShift) -> String {
        if rng.below(4) == 0 {
            // Raw random bytes.
            let len = rng.below(24);
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            return String::from_utf8_lossy(&bytes).into_owned();
        }
        let n = rng.below(12);
        (0..n).map(|_| PIECES[rng.below(PIECES.len())]).collect()
    }

    #[test]
    fn fuzz_never_panics_and_round_trips() {
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let probes =
            [labels(&[]), labels(&[("a", "1"), ("b", ""), ("x", "in")]), labels(&[("x", "-1"), ("k8s.io/a", "b")])];
        let (mut label_ok, mut field_ok) = (0, 0);
        for _ in 0..30_000 {
            let input = random_input(&mut rng);
            match LabelSelector::parse(&input) {
                Ok(ls) => {
                    label_ok += 1;
                    for p in &probes {
                        let _ = ls.matches(p);
                    }
                    let text = ls.to_string();
                    let again =
                        LabelSelector::parse(&text).unwrap_or_else(|e| panic!("{input:?} -> {text:?} fails: {e}"));
                    assert_eq!(again, ls, "{input:?} -> {text:?}");
                }
                Err(e) => assert!(!e.to_string().is_empty()),
            }
            match FieldSelector::parse(&input) {
                Ok(fs) => {
                    field_ok += 1;
                    let _ = fs.matches(|f| (f.len() % 2 == 0).then(|| f.to_string()));
                    let text = fs.to_string();
                    let again =
                        FieldSelector::parse(&text).unwrap_or_else(|e| panic!("{input:?} -> {text:?} fails: {e}"));
                    let key = |r: &FieldRequirement| (r.field.clone(), r.op == FieldOp::Equals, r.value.clone());
                    let mut a: Vec<_> = again.requirements.iter().map(key).collect();
                    let mut b: Vec<_> = fs.requirements.iter().map(key).collect();
                    a.sort();
                    b.sort();
                    assert_eq!(a, b, "{input:?} -> {text:?}");
                }
                Err(e) => assert!(!e.to_string().is_empty()),
            }
        }
        // The generator must exercise both success and failure paths.
        assert!(label_ok > 1_000, "only {label_ok} label selectors parsed");
        assert!(field_ok > 1_000, "only {field_ok} field selectors parsed");
    }
}
