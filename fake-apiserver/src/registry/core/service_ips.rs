//! A Service's cluster IPs, IP families and family policy, and its external IPs, as
//! kubernetes v1.37.2 pkg/apis/core/validation/validation.go checks them
//! (`ValidateServiceClusterIPsRelatedFields`, `validateUpgradeDowngradeClusterIPs`,
//! `validateUpgradeDowngradeIPFamilies`, the external IP loop of `validateService`).

use super::endpoint_ip::endpoint_ip_causes;
use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use crate::registry::meta::string_list;
use apimachinery::validation::{ip_sloppy, legacy_ip_errors};
use serde_json::Value;

const FAMILIES: &[&str] = &["IPv4", "IPv6"];
const POLICIES: &[&str] = &["PreferDualStack", "RequireDualStack", "SingleStack"];

/// `spec.<key>` as a list of strings (absent and null are empty).
pub(super) fn spec_list(spec: &Value, key: &str) -> Vec<String> {
    string_list(spec.get(key))
}

/// A list as `field.Error` prints a `[]string`: JSON, or `null` when nil.
pub(super) fn bad_list(spec: &Value, key: &str) -> Bad {
    match spec.get(key) {
        Some(v @ Value::Array(_)) => Bad::of(v),
        _ => Bad::Null,
    }
}

/// `isHeadlessService`: exactly one cluster IP, `None`.
pub(super) fn is_headless(spec: &Value) -> bool {
    let ips = spec_list(spec, "clusterIPs");
    ips.len() == 1 && ips[0] == "None"
}

/// `netutils.IsIPv6String`: parses (sloppily) and is not IPv4 (nor IPv4-mapped).
pub(super) fn is_ipv6(ip: &str) -> bool {
    ip_sloppy(ip).is_some_and(|ip| match ip {
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().is_none(),
        std::net::IpAddr::V4(_) => false,
    })
}

/// `netutils.IsIPv4String`.
pub(super) fn is_ipv4(ip: &str) -> bool {
    ip_sloppy(ip).is_some() && !is_ipv6(ip)
}

/// `IsValidIPForLegacyField`: nothing for a value the old object already had.
pub(super) fn legacy_ip_causes(path: &Path, value: &str, old: &[String]) -> Vec<StatusCause> {
    if old.iter().any(|o| o == value) {
        return Vec::new();
    }
    legacy_ip_errors(value).into_iter().map(|m| field::invalid(path, value, m)).collect()
}

/// `ValidateServiceClusterIPsRelatedFields`: clusterIP and clusterIPs in step, known and
/// unique families, a known policy, valid IPs (a bad one stops the checks), at most one IP of
/// each family, and IPs of the families listed. Nothing for an ExternalName service.
pub(crate) fn cluster_ips_related_causes(spec: &Value, old_spec: Option<&Value>) -> Vec<StatusCause> {
    let mut out = Vec::new();
    if spec["type"] == "ExternalName" {
        return out;
    }
    let at = Path::root("spec");
    let ips_path = at.child("clusterIPs");
    let cluster_ip = spec["clusterIP"].as_str().unwrap_or_default();
    let ips = spec_list(spec, "clusterIPs");
    if !cluster_ip.is_empty() {
        if ips.is_empty() {
            out.push(field::required(&ips_path, ""));
        } else if ips[0] != cluster_ip {
            out.push(field::invalid(&ips_path, bad_list(spec, "clusterIPs"), "first value must match `clusterIP`"));
        }
    } else if !ips.is_empty() {
        out.push(field::invalid(
            &ips_path,
            bad_list(spec, "clusterIPs"),
            "must be empty when `clusterIP` is not specified",
        ));
    }

    let families = spec_list(spec, "ipFamilies");
    let mut seen = Vec::new();
    for (i, f) in families.iter().enumerate() {
        if !FAMILIES.contains(&f.as_str()) {
            out.push(field::not_supported(&at.child("ipFamilies").index(i), f, FAMILIES));
        }
        if seen.contains(&f) {
            out.push(field::duplicate(&at.child("ipFamilies").index(i), f));
        }
        seen.push(f);
    }
    if let Some(policy) = spec.get("ipFamilyPolicy").filter(|p| !p.is_null()) {
        let p = policy.as_str().unwrap_or_default();
        if !POLICIES.contains(&p) {
            out.push(field::not_supported(&at.child("ipFamilyPolicy"), p, POLICIES));
        }
    }

    let old_ips = old_spec.map(|o| spec_list(o, "clusterIPs")).unwrap_or_default();
    let mut has_invalid = false;
    for (i, ip) in ips.iter().enumerate() {
        if i == 0 && ip == "None" {
            if ips.len() > 1 {
                has_invalid = true;
                out.push(field::invalid(
                    &ips_path,
                    bad_list(spec, "clusterIPs"),
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        let errs = legacy_ip_causes(&ips_path.index(i), ip, &old_ips);
        has_invalid |= !errs.is_empty();
        out.extend(errs);
    }
    if ips.len() > 2 {
        out.push(field::invalid(&ips_path, bad_list(spec, "clusterIPs"), "may only hold up to 2 values"));
    }
    // A bad IP would skew the checks below.
    if has_invalid {
        return out;
    }
    if ips.len() > 1 {
        // netutils.IsDualStackIPStrings: at least one of each family.
        let dual = ips.iter().any(|ip| is_ipv6(ip)) && ips.iter().any(|ip| !is_ipv6(ip));
        if !dual {
            out.push(field::invalid(
                &ips_path,
                bad_list(spec, "clusterIPs"),
                "may specify no more than one IP for each IP family",
            ));
        }
    }
    if !is_headless(spec) && !ips.is_empty() && !families.is_empty() {
        for (i, (ip, family)) in ips.iter().zip(&families).enumerate() {
            if family == "IPv4" && is_ipv6(ip) {
                out.push(field::invalid(
                    &ips_path.index(i),
                    ip,
                    &format!("expected an IPv4 value as indicated by `ipFamilies[{i}]`"),
                ));
            }
            if family == "IPv6" && !is_ipv6(ip) {
                out.push(field::invalid(
                    &ips_path.index(i),
                    ip,
                    &format!("expected an IPv6 value as indicated by `ipFamilies[{i}]`"),
                ));
            }
        }
    }
    out
}

/// The policy as `field.Error` prints a `*IPFamilyPolicy`.
fn bad_policy(spec: &Value) -> Bad {
    Bad::of(spec.get("ipFamilyPolicy").unwrap_or(&Value::Null))
}

fn is_single_stack(spec: &Value) -> bool {
    spec["ipFamilyPolicy"] == "SingleStack"
}

/// `validateUpgradeDowngradeClusterIPs`: an update may add or release the secondary cluster
/// IP (releasing needs SingleStack) but never change the primary one.
pub(crate) fn upgrade_downgrade_cluster_ip_causes(old: &Value, new: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    if new["type"] == "ExternalName" || old["type"] == "ExternalName" {
        return out;
    }
    if is_headless(old) && is_headless(new) {
        return out;
    }
    let ips_path = Path::root("spec").child("clusterIPs");
    let (old_ips, new_ips) = (spec_list(old, "clusterIPs"), spec_list(new, "clusterIPs"));
    let changed = |out: &mut Vec<StatusCause>, i: usize| {
        out.push(field::invalid(&ips_path.index(i), bad_list(new, "clusterIPs"), "may not change once set"));
    };
    if old_ips.len() == new_ips.len() {
        for (i, ip) in old_ips.iter().enumerate() {
            if *ip != new_ips[i] {
                changed(&mut out, i);
            }
        }
    } else if old_ips.len() > new_ips.len() {
        if new_ips.is_empty() {
            out.push(field::invalid(
                &ips_path.index(0),
                bad_list(new, "clusterIPs"),
                "primary clusterIP can not be unset",
            ));
        }
        if !old_ips.is_empty() && !new_ips.is_empty() && new_ips[0] != old_ips[0] {
            changed(&mut out, 0);
        }
        if new_ips.len() == 1 && !is_single_stack(new) {
            out.push(field::invalid(
                &Path::root("spec").child("ipFamilyPolicy"),
                bad_policy(new),
                "must be set to 'SingleStack' when releasing the secondary clusterIP",
            ));
        }
    } else if !old_ips.is_empty() && new_ips[0] != old_ips[0] {
        changed(&mut out, 0);
    }
    out
}

/// `validateUpgradeDowngradeIPFamilies`: the same for the families (headless services may
/// change theirs). Upstream reports every changed family at index 0, and in two messages the
/// cluster IPs as the value; both kept.
pub(crate) fn upgrade_downgrade_ip_family_causes(old: &Value, new: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    if new["type"] == "ExternalName" || old["type"] == "ExternalName" {
        return out;
    }
    if is_headless(old) != is_headless(new) || is_headless(new) {
        return out;
    }
    let first = Path::root("spec").child("ipFamilies").index(0);
    let (old_f, new_f) = (spec_list(old, "ipFamilies"), spec_list(new, "ipFamilies"));
    if old_f.len() == new_f.len() {
        for (i, f) in old_f.iter().enumerate() {
            if *f != new_f[i] {
                out.push(field::invalid(&first, bad_list(new, "ipFamilies"), "may not change once set"));
            }
        }
    } else if old_f.len() > new_f.len() {
        if spec_list(new, "clusterIPs").is_empty() {
            out.push(field::invalid(&first, bad_list(new, "ipFamilies"), "primary ipFamily can not be unset"));
        }
        if !new_f.is_empty() && new_f[0] != old_f[0] {
            out.push(field::invalid(&first, bad_list(new, "clusterIPs"), "may not change once set"));
        }
        if new_f.len() == 1 && !is_single_stack(new) {
            out.push(field::invalid(
                &Path::root("spec").child("ipFamilyPolicy"),
                bad_policy(new),
                "must be set to 'SingleStack' when releasing the secondary ipFamily",
            ));
        }
    } else if !old_f.is_empty() && !new_f.is_empty() && new_f[0] != old_f[0] {
        out.push(field::invalid(&first, bad_list(new, "clusterIPs"), "may not change once set"));
    }
    out
}

/// The external IPs of `validateService`: each a valid IP (unless the old object had it) and,
/// when valid, outside the special ranges of `ValidateEndpointIP`.
pub(crate) fn external_ip_causes(spec: &Value, old_spec: Option<&Value>) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let old = old_spec.map(|o| spec_list(o, "externalIPs")).unwrap_or_default();
    for (i, ip) in spec_list(spec, "externalIPs").iter().enumerate() {
        let at = Path::root("spec").child("externalIPs").index(i);
        let errs = legacy_ip_causes(&at, ip, &old);
        if errs.is_empty() {
            out.extend(endpoint_ip_causes(ip, &at));
        } else {
            out.extend(errs);
        }
    }
    out
}
