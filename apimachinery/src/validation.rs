//! Name and label rules of `k8s.io/apimachinery/pkg/util/validation` (and its newer
//! `pkg/api/validate/content`), with upstream's exact messages. Each `*_errors` function returns
//! the messages upstream returns for the value, in its order; an empty list means valid.
//! Callers wrap each message in a `field.Invalid` cause, as upstream does.

use std::fmt::Write as _;

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

/// `content.MaxLenError`, which label keys and values use.
fn max_len_bytes_error(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

/// `validation.MaxLenError`, which object names use (upstream still says "characters" there
/// while the newer `content` package, used for labels, says "bytes").
pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `RegexError`: the message, the examples and the regex, worded and spaced exactly as
/// upstream (two spaces before each `or`, from its `', '` + `" or "` concatenation).
pub fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
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
pub fn label_key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > DNS1123_SUBDOMAIN_MAX {
                    errs.push(format!("prefix part {}", max_len_bytes_error(DNS1123_SUBDOMAIN_MAX)));
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
        errs.push(format!("name part {}", max_len_bytes_error(LABEL_NAME_MAX)));
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
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX {
        errs.push(max_len_bytes_error(LABEL_VALUE_MAX));
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

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const DNS_LABEL_MAX: usize = 63;

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (with `first_alpha`: `[a-z]` first), anchored.
fn is_label(s: &str, first_alpha: bool) -> bool {
    let b = s.as_bytes();
    let inner = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-';
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => edge(f) && edge(l) && b.iter().all(inner) && (!first_alpha || f.is_ascii_lowercase()),
        _ => false,
    }
}

/// `IsDNS1123Label`: what namespace names must be.
pub fn dns1123_label_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS_LABEL_MAX {
        errs.push(max_len_error(DNS_LABEL_MAX));
    }
    if !is_label(value, false) {
        if is_dns1123_subdomain(value) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(DNS1123_LABEL_ERR_MSG, DNS1123_LABEL_FMT, &["my-name", "123-abc"]));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`: what most object names must be.
pub fn dns1123_subdomain_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX));
    }
    if !is_dns1123_subdomain(value) {
        errs.push(regex_error(DNS1123_SUBDOMAIN_ERR_MSG, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

/// `IsDNS1035Label`: what service names (and, lowercased, embedded resource kinds) must be.
pub fn dns1035_label_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS_LABEL_MAX {
        errs.push(max_len_error(DNS_LABEL_MAX));
    }
    if !is_label(value, true) {
        errs.push(regex_error(DNS1035_LABEL_ERR_MSG, DNS1035_LABEL_FMT, &["my-name", "abc-123"]));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

    #[rstest]
    #[case::valid("a.b-c.d", &[])]
    #[case::long_label_inside_is_fine(&format!("{}.com", "a".repeat(64)), &[])]
    #[case::upper_case("A", &[SUBDOMAIN_MSG])]
    #[case::empty_label("a..b", &[SUBDOMAIN_MSG])]
    #[case::too_long(&"a".repeat(254), &["must be no more than 253 characters"])]
    fn subdomains(#[case] name: &str, #[case] want: &[&str]) {
        assert_eq!(dns1123_subdomain_errors(name), want);
    }

    #[rstest]
    #[case::valid("abc-1", &[])]
    #[case::leading_dash("-a", &[LABEL_MSG])]
    #[case::dots("a.b", &["must not contain dots"])]
    #[case::too_long(&"a".repeat(64), &["must be no more than 63 characters"])]
    #[case::too_long_and_bad(&"A".repeat(64), &["must be no more than 63 characters", LABEL_MSG])]
    fn labels(#[case] name: &str, #[case] want: &[&str]) {
        assert_eq!(dns1123_label_errors(name), want);
    }

    #[rstest]
    #[case::valid("abc1", &[])]
    #[case::leading_digit("1abc", &[DNS1035_MSG])]
    #[case::trailing_dash("abc-", &[DNS1035_MSG])]
    fn dns1035_labels(#[case] name: &str, #[case] want: &[&str]) {
        assert_eq!(dns1035_label_errors(name), want);
    }

    #[rstest]
    #[case::plain("app", true)]
    #[case::prefixed("k8s.io/name", true)]
    #[case::upper_prefix("K8s.io/name", false)]
    #[case::two_slashes("a/b/c", false)]
    fn label_keys(#[case] key: &str, #[case] valid: bool) {
        assert_eq!(is_valid_label_key(key), valid, "{:?}", label_key_errors(key));
    }

    #[test]
    fn label_key_messages_name_the_part() {
        assert_eq!(label_key_errors("/a"), ["prefix part must be non-empty"]);
        assert_eq!(label_key_errors(&format!("{}/a", "a".repeat(254))), ["prefix part must be no more than 253 bytes"]);
        assert_eq!(label_key_errors(&"a".repeat(64)), ["name part must be no more than 63 bytes"]);
    }

    #[rstest]
    #[case::empty("", &[] as &[&str])]
    #[case::trailing_dot("a.", &["a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"])]
    #[case::too_long(&"v".repeat(64), &["must be no more than 63 bytes"])]
    fn label_values(#[case] value: &str, #[case] want: &[&str]) {
        assert_eq!(label_value_errors(value), want);
    }
}
