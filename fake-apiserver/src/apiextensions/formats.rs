//! The string formats kube-apiserver validates in custom resources (kube-openapi's `strfmt`,
//! govalidator); any other format is accepted.

use regex::Regex;
use std::sync::OnceLock;

fn regex_matches(cell: &'static OnceLock<Option<Regex>>, pattern: &str, s: &str) -> bool {
    // The patterns are constants; should one ever fail to build, accept rather than panic.
    cell.get_or_init(|| Regex::new(pattern).ok()).as_ref().is_none_or(|re| re.is_match(s))
}

/// Whether `s` is valid in the string format `format` (formats not validated pass).
pub(super) fn format_ok(format: &str, s: &str) -> bool {
    static UUID: OnceLock<Option<Regex>> = OnceLock::new();
    static UUID3: OnceLock<Option<Regex>> = OnceLock::new();
    static UUID4: OnceLock<Option<Regex>> = OnceLock::new();
    static UUID5: OnceLock<Option<Regex>> = OnceLock::new();
    static HOSTNAME: OnceLock<Option<Regex>> = OnceLock::new();
    static SSN: OnceLock<Option<Regex>> = OnceLock::new();
    static HEXCOLOR: OnceLock<Option<Regex>> = OnceLock::new();
    static RGBCOLOR: OnceLock<Option<Regex>> = OnceLock::new();
    static BASE64: OnceLock<Option<Regex>> = OnceLock::new();
    match format.replace('-', "").as_str() {
        "bsonobjectid" => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(s),
        "email" => is_email(s),
        "hostname" => {
            regex_matches(
                &HOSTNAME,
                r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z0-9\p{S}\p{L}])(-?[a-zA-Z0-9\p{S}\p{L}]){1,62})$",
                s,
            ) && s.len() <= 255
                && s.split('.').all(|p| p.len() <= 63)
        }
        "ipv4" => s.parse::<std::net::IpAddr>().is_ok() && s.contains('.'),
        "ipv6" => s.parse::<std::net::IpAddr>().is_ok() && s.contains(':'),
        "cidr" => is_cidr(s),
        "mac" => is_mac(s),
        "uuid" => regex_matches(&UUID, r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$", s),
        "uuid3" => regex_matches(&UUID3, r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$", s),
        "uuid4" => {
            regex_matches(&UUID4, r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$", s)
        }
        "uuid5" => {
            regex_matches(&UUID5, r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$", s)
        }
        "isbn" => is_isbn10(s) || is_isbn13(s),
        "isbn10" => is_isbn10(s),
        "isbn13" => is_isbn13(s),
        "creditcard" => is_credit_card(s),
        "ssn" => s.len() == 11 && regex_matches(&SSN, r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$", s),
        "hexcolor" => regex_matches(&HEXCOLOR, r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$", s),
        "rgbcolor" => regex_matches(
            &RGBCOLOR,
            r"^rgb\([ \t\n\r\x0C]*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])[ \t\n\r\x0C]*,[ \t\n\r\x0C]*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])[ \t\n\r\x0C]*,[ \t\n\r\x0C]*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])[ \t\n\r\x0C]*\)$",
            s,
        ),
        "byte" => regex_matches(
            &BASE64,
            r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$",
            s,
        ),
        "date" => is_date(s),
        "datetime" => is_date_time(s),
        "duration" => is_duration(s),
        // "password" and anything unknown: any string.
        _ => true,
    }
}

/// Go's `time.Parse("2006-01-02", s)`.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = b.get(r)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let (Some(year), Some(month), Some(day)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// kube-openapi strfmt's `IsDateTime`.
fn is_date_time(s: &str) -> bool {
    static TIME: OnceLock<Option<Regex>> = OnceLock::new();
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let re = TIME
        .get_or_init(|| Regex::new(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$").ok());
    let Some(re) = re else { return true };
    let Some(c) = re.captures(time) else {
        return false;
    };
    let field = |i: usize| c.get(i).map_or("99", |m| m.as_str());
    field(1) <= "23" && field(2) <= "59" && field(3) <= "59"
}

/// kube-openapi strfmt's `ParseDuration`: Go's `time.ParseDuration`, else the
/// Scala-like `"3 days"` form.
fn is_duration(s: &str) -> bool {
    apimachinery::duration::parse_go_duration(s).is_ok() || scala_duration(s)
}

fn scala_duration(s: &str) -> bool {
    static VALID: OnceLock<Option<Regex>> = OnceLock::new();
    static PART: OnceLock<Option<Regex>> = OnceLock::new();
    const UNITS: &[&[&str]] = &[
        &["ns", "nano"],
        &["us", "\u{b5}s", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let ws = r"[ \t\n\r\x0C]";
    let valid = VALID.get_or_init(|| Regex::new(&format!(r"^{ws}*(?:[0-9]+{ws}*[A-Za-z\x{{b5}}]+{ws}*)+$")).ok());
    if !valid.as_ref().is_some_and(|re| re.is_match(s)) {
        return false;
    }
    let Some(part) = PART.get_or_init(|| Regex::new(&format!(r"(([0-9]+){ws}*([A-Za-z\x{{b5}}]+))")).ok()).as_ref()
    else {
        return false;
    };
    let mut ok = false;
    for c in part.captures_iter(s) {
        // Go's Atoi fails on overflow, which fails the whole parse.
        if c.get(2).is_none_or(|m| m.as_str().parse::<i64>().is_err()) {
            return false;
        }
        let unit = c.get(3).map_or(String::new(), |m| m.as_str().trim().to_lowercase());
        for variants in UNITS {
            let last = variants.len() - 1;
            for (i, variant) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(variant)) || variant.eq_ignore_ascii_case(&unit) {
                    ok = true;
                }
            }
        }
    }
    ok
}

/// Go's `net.ParseCIDR`.
fn is_cidr(s: &str) -> bool {
    let Some((addr, mask)) = s.split_once('/') else {
        return false;
    };
    let bits = match addr.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => 32,
        Ok(std::net::IpAddr::V6(_)) => 128,
        Err(_) => return false,
    };
    !mask.is_empty()
        && mask.len() <= 4
        && mask.bytes().all(|b| b.is_ascii_digit())
        && mask.parse::<u32>().is_ok_and(|n| n <= bits)
}

/// Go's `net.ParseMAC`.
fn is_mac(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 14 {
        return false;
    }
    let hex = |i: usize, n: usize| b.get(i..i + n).is_some_and(|p| p.iter().all(u8::is_ascii_hexdigit));
    match (b.get(2), b.get(4)) {
        (Some(&sep), _) if sep == b':' || sep == b'-' => {
            if !(b.len() + 1).is_multiple_of(3) {
                return false;
            }
            let n = (b.len() + 1) / 3;
            if n != 6 && n != 8 && n != 20 {
                return false;
            }
            (0..n).all(|i| {
                let x = i * 3;
                hex(x, 2) && (i == n - 1 || b.get(x + 2) == Some(&sep))
            })
        }
        (_, Some(b'.')) => {
            if !(b.len() + 1).is_multiple_of(5) {
                return false;
            }
            let n = 2 * (b.len() + 1) / 5;
            if n != 6 && n != 8 && n != 20 {
                return false;
            }
            (0..n / 2).all(|i| {
                let x = i * 5;
                hex(x, 4) && (i == n / 2 - 1 || b.get(x + 4) == Some(&b'.'))
            })
        }
        _ => false,
    }
}

/// An approximation of Go's `url.ParseRequestURI`: an absolute URI or an absolute path.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if s == "*" {
        return true;
    }
    let scheme_len = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .map_or(0, |(i, _)| i);
    let has_scheme = scheme_len > 0
        && s.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
        && s.as_bytes().get(scheme_len) == Some(&b':');
    let rest = if has_scheme { s.get(scheme_len + 1..).unwrap_or("") } else { s };
    if !has_scheme && !rest.starts_with('/') {
        return false;
    }
    if let Some(auth) = rest.strip_prefix("//") {
        let host_end = auth.find(['/', '?', '#']).unwrap_or(auth.len());
        let authority = auth.get(..host_end).unwrap_or("");
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        if host.contains([' ', '<', '>', '"', '{', '}', '|', '\\', '^', '`']) {
            return false;
        }
    }
    // Every '%' must start a two-digit hex escape.
    let b = rest.as_bytes();
    b.iter()
        .enumerate()
        .all(|(i, &c)| c != b'%' || b.get(i + 1..i + 3).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)))
}

/// An approximation of Go's `net/mail.ParseAddress`: `local@domain`, optionally as `Name <local@domain>`.
fn is_email(s: &str) -> bool {
    let s = s.trim();
    let addr = match (s.rfind('<'), s.strip_suffix('>')) {
        (Some(i), Some(inner)) => inner.get(i + 1..).unwrap_or(""),
        _ => s,
    };
    let Some((local, domain)) = addr.rsplit_once('@') else {
        return false;
    };
    let atext = |c: char| c.is_alphanumeric() || "!#$%&'*+/=?^_`{|}~-".contains(c);
    let dot_atom = |p: &str| !p.is_empty() && p.split('.').all(|a| !a.is_empty() && a.chars().all(atext));
    let local_ok = dot_atom(local) || (local.len() >= 2 && local.starts_with('"') && local.ends_with('"'));
    let domain_ok = dot_atom(domain) || (domain.starts_with('[') && domain.ends_with(']'));
    local_ok && domain_ok
}

fn isbn_sanitized(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace() && *c != '-').collect()
}

/// govalidator's `IsISBN10`.
fn is_isbn10(s: &str) -> bool {
    let s = isbn_sanitized(s);
    let b = s.as_bytes();
    if b.len() != 10 || !b.iter().take(9).all(u8::is_ascii_digit) {
        return false;
    }
    let last = match b.get(9) {
        Some(b'X') => 10,
        Some(d) if d.is_ascii_digit() => u32::from(d - b'0'),
        _ => return false,
    };
    let sum: u32 =
        b.iter().take(9).enumerate().map(|(i, d)| (i as u32 + 1) * u32::from(d - b'0')).sum::<u32>() + 10 * last;
    sum.is_multiple_of(11)
}

/// govalidator's `IsISBN13`.
fn is_isbn13(s: &str) -> bool {
    let s = isbn_sanitized(s);
    let b = s.as_bytes();
    if b.len() != 13 || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 =
        b.iter().take(12).enumerate().map(|(i, d)| if i % 2 == 0 { 1 } else { 3 } * u32::from(d - b'0')).sum();
    b.get(12).is_some_and(|d| u32::from(d - b'0') == (10 - sum % 10) % 10)
}

/// govalidator's `IsCreditCard`: a known card number shape and a Luhn checksum.
fn is_credit_card(s: &str) -> bool {
    static CARD: OnceLock<Option<Regex>> = OnceLock::new();
    let digits = isbn_sanitized(s);
    if !regex_matches(
        &CARD,
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11})$",
        &digits,
    ) {
        return false;
    }
    let mut sum = 0u32;
    for (i, d) in digits.bytes().rev().enumerate() {
        let mut n = u32::from(d.wrapping_sub(b'0'));
        if i % 2 == 1 {
            n *= 2;
            if n >= 10 {
                n = n % 10 + 1;
            }
        }
        sum += n;
    }
    sum.is_multiple_of(10)
}

#[cfg(test)]
mod tests {
    use crate::apiextensions::test_schemas::*;
    use crate::apiextensions::*;
    use rstest::rstest;
    use serde_json::json;

    // ----- formats --------------------------------------------------------

    #[rstest]
    #[case("date-time", &["2024-02-29T10:00:00Z", "2024-01-01T23:59:59.123+05:30", "2024-01-01t00:00:00z"], &["2024-01-01", "2023-02-29T10:00:00Z", "2024-01-01T24:00:00Z", "yesterday"])]
    #[case("date", &["2024-02-29", "1999-12-31"], &["2023-02-29", "2024-13-01", "2024-1-01", "x"])]
    #[case("byte", &["aGVsbG8=", "aGk=", "YWJj"], &["aGVsbG8", "not base64!", ""])]
    #[case("uuid", &["123e4567-e89b-12d3-a456-426614174000", "123E4567E89B12D3A456426614174000"], &["123e4567-e89b-12d3-a456", "zzze4567-e89b-12d3-a456-426614174000"])]
    #[case("uuid4", &["123e4567-e89b-42d3-a456-426614174000"], &["123e4567-e89b-12d3-a456-426614174000"])]
    #[case("duration", &["1h30m", "300ms", "-1.5h", "0", "3 days", "1 week"], &["", "1x", "h", "soon"])]
    #[case("ipv4", &["10.0.0.1", "::ffff:10.0.0.1"], &["10.0.0", "256.0.0.1", "::1"])]
    #[case("ipv6", &["::1", "fe80::1"], &["10.0.0.1", "fe80:::1"])]
    #[case("cidr", &["10.0.0.0/8", "fd00::/64"], &["10.0.0.0", "10.0.0.0/33", "x/8"])]
    // strfmt's hostname regex: a single label may hold one hyphen, after its first character.
    #[case("hostname", &["example.com", "localhost", "k-8s", "a.b-c.io"], &["-bad.com", "a_b.com", "a..b", "my-host"])]
    #[case("mac", &["00:00:5e:00:53:01", "00-00-5E-00-53-01", "0000.5e00.5301"], &["00:00:5e:00:53", "zz:00:5e:00:53:01"])]
    #[case("email", &["a@example.com", "Ann <ann@example.com>"], &["example.com", "a@", "@b"])]
    #[case("uri", &["https://example.com/a?b=c", "/relative/abs", "urn:isbn:123"], &["relative/path", "", "http://a b/"])]
    #[case("hexcolor", &["#fff", "A0B1C2"], &["#ffff", "red"])]
    #[case("rgbcolor", &["rgb(0, 128,255)"], &["rgb(256,0,0)", "#fff"])]
    #[case("ssn", &["123-45-6789"], &["123456789", "12-345-6789"])]
    #[case("isbn", &["0306406152", "978-0-306-40615-7"], &["0306406153", "978-0-306-40615-8"])]
    #[case("creditcard", &["4111 1111 1111 1111"], &["4111 1111 1111 1112"])]
    #[case("bsonobjectid", &["507f1f77bcf86cd799439011"], &["507f1f77bcf86cd79943901"])]
    #[case("password", &["anything at all"], &[])]
    fn formats(#[case] format: &str, #[case] good: &[&str], #[case] bad: &[&str]) {
        let s = field(json!({"type": "string", "format": format}));
        for g in good {
            assert!(check(&s, json!(g)).is_empty(), "{format} should accept {g:?}");
        }
        for b in bad {
            let c = one(check(&s, json!(b)));
            assert_eq!(c.reason, FieldCause::TYPE_INVALID, "{format} vs {b:?}");
            assert_eq!(
                c.message,
                format!(
                    "Invalid value: {q}: spec.f in body must be of type {format}: {q}",
                    q = apimachinery::go::quote(b)
                )
            );
        }
    }

    #[test]
    fn numeric_and_unknown_formats_are_ignored_like_apiserver() {
        // apiserver strips int32/int64/float/double before validating.
        let s = field(json!({"type": "integer", "format": "int32"}));
        assert!(check(&s, json!(3_000_000_000_i64)).is_empty());
        assert_eq!(one(check(&s, json!("1"))).reason, FieldCause::TYPE_INVALID);
        let s = field(json!({"type": "string", "format": "k8s-unknown-format"}));
        assert!(check(&s, json!("whatever")).is_empty());
    }
}
