//! Label selectors: `labels.Parse` and `metav1.LabelSelectorAsSelector`.

use super::{InvalidField, SelectorError, write_joined};
use crate::go::{json_quote, quote};
use crate::validation::{label_key_errors, label_value_errors};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

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
        errors.push(InvalidField { field: "key".to_string(), value: quote(&key), detail: key_errs.join("; ") });
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
                        value: quote(v),
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
                value: quote(v),
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
        write_joined(f, &self.requirements)
    }
}

impl std::str::FromStr for LabelSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LabelSelector::parse(s)
    }
}
