//! How a pod names itself and resolves names: `validateDNSPolicy`, `validatePodDNSConfig`,
//! `ValidateHostAliases` and `validatePodHostName` of `pkg/apis/core/validation/validation.go`
//! at v1.37.2.

use super::pod_spec::{dns_subdomain, list, s};
use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use apimachinery::validation::{dns1123_subdomain_with_underscore_errors, legacy_ip_errors};
use serde_json::Value;

const DNS_POLICIES: &[&str] = &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];
/// `MaxDNSNameservers`, `MaxDNSSearchPaths`, `MaxDNSSearchListChars`: libc's resolver limits.
const MAX_NAMESERVERS: usize = 3;
const MAX_SEARCH_PATHS: usize = 32;
const MAX_SEARCH_LIST_CHARS: usize = 2048;

/// `validateDNSPolicy`: required, one of the four policies.
pub(super) fn dns_policy(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) {
    match s(spec, "dnsPolicy") {
        "" => out.push(field::required(path, "")),
        p if !DNS_POLICIES.contains(&p) => out.push(field::not_supported(path, p, DNS_POLICIES)),
        _ => {}
    }
}

/// `IsValidIPForLegacyField` at `path`.
pub(super) fn legacy_ip(out: &mut Vec<StatusCause>, path: &Path, ip: &str) {
    for msg in legacy_ip_errors(ip) {
        out.push(field::invalid(path, ip, msg));
    }
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    list(v, key).iter().map(|x| x.as_str().unwrap_or_default().to_string()).collect()
}

/// `validatePodDNSConfig`: with `dnsPolicy: None` a config with a nameserver is required
/// (reported alone); then the nameservers, the search list and the options.
pub(super) fn dns_config(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) {
    let config = spec.get("dnsConfig").filter(|c| !c.is_null());
    if s(spec, "dnsPolicy") == "None" {
        let Some(config) = config else {
            out.push(field::required(path, "must provide `dnsConfig` when `dnsPolicy` is None"));
            return;
        };
        if list(config, "nameservers").is_empty() {
            out.push(field::required(
                &path.child("nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            ));
            return;
        }
    }
    let Some(config) = config else { return };
    let nameservers = strings(config, "nameservers");
    if nameservers.len() > MAX_NAMESERVERS {
        out.push(field::invalid(
            &path.child("nameservers"),
            Bad::of(&config["nameservers"]),
            &format!("must not have more than {MAX_NAMESERVERS} nameservers"),
        ));
    }
    for (i, ns) in nameservers.iter().enumerate() {
        legacy_ip(out, &path.child("nameservers").index(i), ns);
    }
    let searches = strings(config, "searches");
    if searches.len() > MAX_SEARCH_PATHS {
        out.push(field::invalid(
            &path.child("searches"),
            Bad::of(&config["searches"]),
            &format!("must not have more than {MAX_SEARCH_PATHS} search paths"),
        ));
    }
    if searches.join(" ").len() > MAX_SEARCH_LIST_CHARS {
        out.push(field::invalid(
            &path.child("searches"),
            Bad::of(&config["searches"]),
            &format!(
                "must not have more than {MAX_SEARCH_LIST_CHARS} characters (including spaces) in the search list"
            ),
        ));
    }
    for (i, search) in searches.iter().enumerate() {
        if search == "." {
            continue;
        }
        // A trailing dot (a fully qualified name) is allowed.
        let name = search.strip_suffix('.').unwrap_or(search);
        for msg in dns1123_subdomain_with_underscore_errors(name) {
            out.push(field::invalid(&path.child("searches").index(i), name, &msg));
        }
    }
    for (i, option) in list(config, "options").iter().enumerate() {
        if s(option, "name").is_empty() {
            out.push(field::required(&path.child("options").index(i), "must not be empty"));
        }
    }
}

/// `ValidateHostAliases`: each IP, then each hostname a DNS subdomain.
pub(super) fn host_aliases(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) {
    for (i, alias) in list(spec, "hostAliases").iter().enumerate() {
        let at = path.index(i);
        legacy_ip(out, &at.child("ip"), s(alias, "ip"));
        for (j, host) in list(alias, "hostnames").iter().enumerate() {
            dns_subdomain(out, &at.child("hostnames").index(j), host.as_str().unwrap_or_default());
        }
    }
}

/// `validatePodHostName`: a `hostnameOverride` excludes `setHostnameAsFQDN` and the host
/// network, is at most 64 bytes and a DNS subdomain.
pub(super) fn hostname_override(out: &mut Vec<StatusCause>, spec: &Value, path: &Path) {
    let Some(name) = spec.get("hostnameOverride").filter(|v| !v.is_null()) else { return };
    let name = name.as_str().unwrap_or_default();
    let at = path.child("hostnameOverride");
    if spec.get("setHostnameAsFQDN").and_then(Value::as_bool) == Some(true) {
        out.push(field::forbidden(&at, "may not be specified when setHostnameAsFQDN is true"));
    }
    if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        out.push(field::forbidden(&at, "may not be specified when hostNetwork is true"));
    }
    if name.len() > 64 {
        out.push(field::too_long(&at, 64));
    }
    dns_subdomain(out, &at, name);
}
