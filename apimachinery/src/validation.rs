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

/// `_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?`, anchored: a DNS label that may hold `_`.
fn is_label_with_underscore(s: &str) -> bool {
    let s = s.strip_prefix('_').unwrap_or(s);
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => edge(f) && edge(l) && b.iter().all(|c| edge(c) || *c == b'-' || *c == b'_'),
        _ => false,
    }
}

/// `IsDNS1123SubdomainWithUnderscore`: DNS search domains of a pod.
pub fn dns1123_subdomain_with_underscore_errors(value: &str) -> Vec<String> {
    const FMT: &str = r"_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*";
    const MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character";
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX));
    }
    if !value.split('.').all(is_label_with_underscore) {
        errs.push(regex_error(MSG, FMT, &["example.com"]));
    }
    errs
}

/// An IPv4 address as Go's old `net.ParseIP` (`netutils.ParseIPSloppy`) reads it: four decimal
/// parts up to 255, leading zeros allowed.
fn is_sloppy_ipv4(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 4
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u32>().is_ok_and(|n| n <= 255))
}

/// `IsValidIPForLegacyField` with StrictIPCIDRValidation on (the 1.37 default): the messages of
/// an address that does not parse, has leading zeros, or is IPv4-mapped IPv6.
pub fn legacy_ip_errors(value: &str) -> Vec<&'static str> {
    match value.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_some() => {
            vec!["must not be an IPv4-mapped IPv6 address"]
        }
        Ok(_) => Vec::new(),
        Err(_) if is_sloppy_ipv4(value) => vec!["must not have leading 0s"],
        Err(_) => vec!["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"],
    }
}

/// `content.IsCIdentifier`: what DRA attribute and capacity names must be.
pub fn c_identifier_errors(value: &str) -> Vec<String> {
    const FMT: &str = "[A-Za-z_][A-Za-z0-9_]*";
    const MSG: &str = "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_'";
    let b = value.as_bytes();
    let ok = b.first().is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_');
    if ok { Vec::new() } else { vec![regex_error(MSG, FMT, &["my_name", "MY_NAME", "MyName"])] }
}

/// `content.IsDNS1123Label`, which declarative validation's `k8s-short-name` format uses: as
/// [`dns1123_label_errors`], with the length limit in bytes.
pub fn short_name_errors(value: &str) -> Vec<String> {
    dns1123_label_errors(value)
        .into_iter()
        .map(|m| if m == max_len_error(DNS_LABEL_MAX) { max_len_bytes_error(DNS_LABEL_MAX) } else { m })
        .collect()
}

/// `content.IsDNS1123Subdomain` (`k8s-long-name`), or with `caseless` its
/// `IsDNS1123SubdomainCaseless` (`k8s-long-name-caseless`): the length limit in bytes.
pub fn long_name_errors(value: &str, caseless: bool) -> Vec<String> {
    const CASELESS_MSG: &str = "an RFC 1123 subdomain must consist of alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(max_len_bytes_error(DNS1123_SUBDOMAIN_MAX));
    }
    if caseless {
        if !is_dns1123_subdomain(&value.to_ascii_lowercase()) {
            errs.push(regex_error(CASELESS_MSG, DNS1123_SUBDOMAIN_FMT, &["Example.com"]));
        }
    } else if !is_dns1123_subdomain(value) {
        errs.push(regex_error(DNS1123_SUBDOMAIN_ERR_MSG, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

/// `metav1validation.IsValidConditionReason`: the format of a condition's reason.
pub fn condition_reason_errors(value: &str) -> Vec<String> {
    const FMT: &str = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?";
    const MSG: &str = "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'";
    let b = value.as_bytes();
    let ok = b.first().is_some_and(u8::is_ascii_alphabetic)
        && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':'))
        && b.last().is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_');
    if ok {
        Vec::new()
    } else {
        vec![regex_error(MSG, FMT, &["my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB"])]
    }
}

/// An address as `netutils.ParseIPSloppy` reads it: IPv4 with leading zeros allowed.
fn parse_ip_sloppy(s: &str) -> Option<std::net::IpAddr> {
    use std::net::{IpAddr, Ipv4Addr};
    if is_sloppy_ipv4(s) {
        let o: Vec<u8> = s.split('.').filter_map(|p| p.parse().ok()).collect();
        return Some(IpAddr::V4(Ipv4Addr::new(o[0], o[1], o[2], o[3])));
    }
    s.parse::<IpAddr>().ok()
}

/// `IsValidInterfaceAddress`: an address with its prefix length (`10.9.8.7/24`), in the
/// canonical form Go prints (`netutils.ParseCIDRSloppy`, then `ip.String()` and the mask size).
pub fn interface_address_errors(value: &str) -> Vec<String> {
    let parsed = value.split_once('/').and_then(|(ip, bits)| {
        let ip = parse_ip_sloppy(ip)?;
        let max = if ip.is_ipv4() { 32 } else { 128 };
        // Go's dtoi: decimal digits only, at most 0xFFFFFF before the range check.
        let bits: u32 = (!bits.is_empty() && bits.len() <= 8 && bits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| bits.parse().ok())
            .flatten()?;
        (bits <= max).then_some((ip, bits))
    });
    let Some((ip, bits)) = parsed else {
        return vec!["must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)".to_string()];
    };
    let canonical = match ip {
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            // Go prints a mapped address as IPv4 and takes 96 off a mask longer than 32 bits.
            Some(v4) if bits > 32 => format!("{v4}/{}", i64::from(bits) - 96),
            Some(v4) => format!("{v4}/{bits}"),
            None => format!("{v6}/{bits}"),
        },
        std::net::IpAddr::V4(v4) => format!("{v4}/{bits}"),
    };
    if canonical == value {
        Vec::new()
    } else {
        vec![format!("must be in canonical form ({})", crate::go::quote(&canonical))]
    }
}

/// `netutils.ParseIPSloppy`: an address, IPv4 with leading zeros allowed; `None` when it does
/// not parse.
pub fn ip_sloppy(value: &str) -> Option<std::net::IpAddr> {
    parse_ip_sloppy(value)
}

/// `IsValidIP` (apimachinery v0.37.2 pkg/util/validation/ip.go): the legacy checks with strict
/// parsing, then the canonical form Go prints.
pub fn strict_ip_errors(value: &str) -> Vec<String> {
    let legacy = legacy_ip_errors(value);
    if !legacy.is_empty() {
        return legacy.into_iter().map(str::to_string).collect();
    }
    match value.parse::<std::net::IpAddr>() {
        Ok(ip) if ip.to_string() != value => {
            vec![format!("must be in canonical form ({})", crate::go::quote(&ip.to_string()))]
        }
        _ => Vec::new(),
    }
}

/// Go's `dtoi` on a prefix length: decimal digits only (leading zeros allowed), below 0xFFFFFF.
fn prefix_bits_sloppy(s: &str) -> Option<u32> {
    (!s.is_empty() && s.len() <= 8 && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

/// `IsValidCIDRForLegacyField` with StrictIPCIDRValidation on (apimachinery v0.37.2
/// pkg/util/validation/ip.go `parseCIDR`): what `netutils.ParseCIDRSloppy` refuses, then what
/// `netip.ParsePrefix` refuses (leading zeros), an IPv4-mapped address, host bits set.
pub fn legacy_cidr_errors(value: &str) -> Vec<&'static str> {
    const NOT_A_CIDR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";
    let Some((addr, bits)) = value.split_once('/') else { return vec![NOT_A_CIDR] };
    let Some(ip) = parse_ip_sloppy(addr) else { return vec![NOT_A_CIDR] };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let Some(len) = prefix_bits_sloppy(bits).filter(|n| *n <= max) else { return vec![NOT_A_CIDR] };
    let strict_bits = bits == "0" || !bits.starts_with('0');
    let Ok(strict_ip) = addr.parse::<std::net::IpAddr>() else {
        return vec!["must not have leading 0s in IP or prefix length"];
    };
    if !strict_bits {
        return vec!["must not have leading 0s in IP or prefix length"];
    }
    let host_bits_set = match strict_ip {
        std::net::IpAddr::V4(v4) => {
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            u32::from(v4) & !mask != 0
        }
        std::net::IpAddr::V6(v6) => {
            if v6.to_ipv4_mapped().is_some() {
                return vec!["must not have an IPv4-mapped IPv6 address"];
            }
            let mask = if len == 0 { 0 } else { u128::MAX << (128 - len) };
            u128::from(v6) & !mask != 0
        }
    };
    if host_bits_set { vec!["must not have bits set beyond the prefix length"] } else { Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

    #[rstest]
    #[case::valid("10.9.8.7/24", &[])]
    #[case::ipv6("2001:db8::1/64", &[])]
    #[case::not_an_address("300.9.8.0/24", &["must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)"])]
    #[case::no_prefix("10.9.8.7", &["must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)"])]
    #[case::leading_zeros("010.009.008.000/24", &["must be in canonical form (\"10.9.8.0/24\")"])]
    #[case::long_ipv6("2001:0db8::1/64", &["must be in canonical form (\"2001:db8::1/64\")"])]
    #[case::mapped_ipv4("::ffff:1.2.3.4/120", &["must be in canonical form (\"1.2.3.4/24\")"])]
    fn interface_addresses(#[case] value: &str, #[case] want: &[&str]) {
        assert_eq!(interface_address_errors(value), want);
    }

    #[rstest]
    #[case::subnet("1.2.3.0/24", &[])]
    #[case::ipv6("2001:db8::/64", &[])]
    #[case::prefix_too_long("1.2.3.4/33", &["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"])]
    #[case::no_prefix("1.2.3.4", &["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"])]
    #[case::leading_zero_ip("01.2.3.0/24", &["must not have leading 0s in IP or prefix length"])]
    #[case::leading_zero_prefix("1.2.3.0/024", &["must not have leading 0s in IP or prefix length"])]
    #[case::mapped("::ffff:1.2.3.0/120", &["must not have an IPv4-mapped IPv6 address"])]
    #[case::host_bits("1.2.3.4/24", &["must not have bits set beyond the prefix length"])]
    fn legacy_cidrs(#[case] value: &str, #[case] want: &[&str]) {
        assert_eq!(legacy_cidr_errors(value), want);
    }

    #[rstest]
    #[case::canonical("2001:db8::1", &[])]
    #[case::long_form("2001:0db8::1", &["must be in canonical form (\"2001:db8::1\")"])]
    #[case::not_an_ip("2001:db8::g", &["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"])]
    fn strict_ips(#[case] value: &str, #[case] want: &[&str]) {
        assert_eq!(strict_ip_errors(value), want);
    }

    #[rstest]
    #[case::identifier("my_name", true)]
    #[case::leading_digit("1a", false)]
    #[case::dash("a-b", false)]
    #[case::empty("", false)]
    fn c_identifiers(#[case] value: &str, #[case] ok: bool) {
        assert_eq!(c_identifier_errors(value).is_empty(), ok);
    }

    #[rstest]
    #[case::word("Unschedulable", true)]
    #[case::list("ReasonA,ReasonB", true)]
    #[case::space("Sche duled", false)]
    #[case::ends_with_colon("A:", false)]
    #[case::digit_first("1A", false)]
    fn condition_reasons(#[case] value: &str, #[case] ok: bool) {
        assert_eq!(condition_reason_errors(value).is_empty(), ok);
    }

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
