//! Object name rules (k8s.io/apimachinery/pkg/util/validation).

use crate::registry::NameRule;

fn is_label(s: &str, first_alpha: bool) -> bool {
    let b = s.as_bytes();
    let ok_char = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-';
    !b.is_empty()
        && b.len() <= 63
        && b.iter().all(ok_char)
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
        && (!first_alpha || b[0].is_ascii_lowercase())
}

/// Returns the apiserver's message when `name` breaks `rule`, `None` when it is valid.
pub fn validate_name(name: &str, rule: NameRule) -> Option<String> {
    match rule {
        NameRule::Label if !is_label(name, false) => Some(format!(
            "Invalid value: \"{name}\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        )),
        NameRule::Rfc1035Label if !is_label(name, true) => Some(format!(
            "Invalid value: \"{name}\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
        )),
        NameRule::Subdomain if name.len() > 253 || !name.split('.').all(|p| is_label(p, false)) => Some(format!(
            "Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )),
        _ => None,
    }
}

/// Characters generateName suffixes are drawn from (no vowels, as in apiserver).
const SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// `generateName` plus a random 5-character suffix, trimmed so the whole fits 63 characters.
pub fn generate_name(prefix: &str) -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    let base: String = prefix.chars().take(58).collect();
    let suffix: String = (0..5).map(|_| SUFFIX_ALPHABET[rng.random_range(0..SUFFIX_ALPHABET.len())] as char).collect();
    format!("{base}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subdomains_labels_and_1035() {
        assert!(validate_name("a.b-c.d", NameRule::Subdomain).is_none());
        assert!(validate_name("A", NameRule::Subdomain).is_some());
        assert!(validate_name("a..b", NameRule::Subdomain).is_some());
        assert!(validate_name("-a", NameRule::Label).is_some());
        assert!(validate_name("a.b", NameRule::Label).is_some());
        assert!(validate_name("1abc", NameRule::Rfc1035Label).is_some());
        assert!(validate_name("abc1", NameRule::Rfc1035Label).is_none());
        assert!(validate_name(&"a".repeat(64), NameRule::Label).is_some());
        assert!(generate_name(&"x".repeat(100)).len() <= 63);
    }
}
