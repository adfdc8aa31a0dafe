//! `ValidateEndpointIP` (kubernetes v1.37.2 pkg/apis/core/validation/validation.go): the
//! special ranges an endpoint's address (and, for history's sake, a Service's external IP)
//! may not be in. Shared by Services and EndpointSlices.

use crate::error::StatusCause;
use crate::registry::field::{self, Path};
use std::net::IpAddr;

/// `ValidateEndpointIP`: an address that parses sloppily, then one cause per special range
/// it falls in, in upstream's order (unspecified, loopback, link-local unicast and multicast).
pub(crate) fn endpoint_ip_causes(value: &str, path: &Path) -> Vec<StatusCause> {
    let Some(ip) = apimachinery::validation::ip_sloppy(value) else {
        return vec![field::invalid(path, value, "must be a valid IP address")];
    };
    // Go's net.IP checks look at an IPv4-mapped address as IPv4.
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    let mut out = Vec::new();
    if ip.is_unspecified() {
        out.push(field::invalid(path, value, &format!("may not be unspecified ({value})")));
    }
    if ip.is_loopback() {
        out.push(field::invalid(path, value, "may not be in the loopback range (127.0.0.0/8, ::1/128)"));
    }
    let (link_local_unicast, link_local_multicast) = match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            (o[0] == 169 && o[1] == 254, o[0] == 224 && o[1] == 0 && o[2] == 0)
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            (s[0] & 0xffc0 == 0xfe80, s[0] & 0xff0f == 0xff02)
        }
    };
    if link_local_unicast {
        out.push(field::invalid(path, value, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"));
    }
    if link_local_multicast {
        out.push(field::invalid(path, value, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::endpoint_ip_causes;
    use crate::registry::field::Path;
    use rstest::rstest;

    #[rstest]
    #[case::plain("10.1.2.3", 0)]
    #[case::loopback("127.0.0.1", 1)]
    #[case::loopback_v6("::1", 1)]
    #[case::unspecified("0.0.0.0", 1)]
    #[case::link_local("169.254.1.1", 1)]
    #[case::link_local_v6("fe80::1", 1)]
    #[case::multicast("224.0.0.1", 1)]
    #[case::multicast_v6("ff02::1", 1)]
    fn special_ranges(#[case] ip: &str, #[case] causes: usize) {
        assert_eq!(endpoint_ip_causes(ip, &Path::root("ip")).len(), causes);
    }
}
