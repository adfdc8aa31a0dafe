//! Go's ways of printing strings, which upstream messages embed: `strconv.Quote` (`%q`) and
//! `encoding/json`. A message that is to read like kube-apiserver's must quote like Go.

use std::fmt::Write as _;

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

/// Quotes a string the way Go's `%q` / `strconv.Quote` does: how apimachinery prints a
/// string value in a `field.Error` and most messages.
pub fn quote(s: &str) -> String {
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
pub(crate) fn json_quote(s: &str) -> String {
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

/// Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`).
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let e = format!("{f:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((e.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    // Shortest %g switches to an exponent below 1e-4 and from 1e6 on.
    if (-4..6).contains(&exp) {
        return format!("{f}");
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::escapes_quotes_and_backslashes("a\"b\\c", "\"a\\\"b\\\\c\"")]
    #[case::control_characters("\u{7}\u{8}\u{c}\n\r\t\u{b}\u{0}\u{7f}", "\"\\a\\b\\f\\n\\r\\t\\v\\x00\\x7f\"")]
    #[case::unicode("é\u{a0}\u{200b}\u{1F600}\u{10FFFD}", "\"é\\u00a0\\u200b\u{1F600}\\U0010fffd\"")]
    #[case::mixed("a\"b\\c\n\u{1}é", "\"a\\\"b\\\\c\\n\\x01é\"")]
    fn quotes_like_strconv(#[case] input: &str, #[case] quoted: &str) {
        assert_eq!(quote(input), quoted);
    }

    #[test]
    fn json_quoting_is_html_safe_like_encoding_json() {
        assert_eq!(json_quote("<&>\u{1}\u{2028}é\""), "\"\\u003c\\u0026\\u003e\\u0001\\u2028é\\\"\"");
    }
}
