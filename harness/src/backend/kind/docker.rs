//! The Docker daemon, before and around the node container: is it there and new enough, does it
//! have (or can it pull) an image, which subnet does the node's network have, and local images
//! exported for loading into the node. testcontainers re-exports the Docker client it uses
//! (bollard), so these checks talk to the daemon the same way the container's lifecycle does.

use crate::backend::kind::error::{KindError, one_line};
use futures::StreamExt;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;
use testcontainers::bollard::{self, Docker};
use tokio::io::AsyncWriteExt;

/// The testcontainers release this build uses (for the report).
pub const TESTCONTAINERS: &str = "0.28";

/// The Docker daemon's address as testcontainers resolves it: `DOCKER_HOST`, else the local
/// socket.
pub fn docker_host() -> String {
    std::env::var("DOCKER_HOST").ok().filter(|h| !h.is_empty()).unwrap_or_else(|| "unix:///var/run/docker.sock".into())
}

/// A client for the daemon, checked: it answers a ping within 10 s and says its version.
/// Returns the client and the daemon's version (`29.3.1`). bollard sends its requests
/// without an API version prefix (it joins each absolute path onto the versioned base URL,
/// which replaces the prefix), so the daemon answers in its own default version: Debian's
/// Docker 20.10 (API 1.41) serves testcontainers 0.28 as well as a current one does.
pub async fn connect() -> Result<(Docker, String), KindError> {
    let host = docker_host();
    let no_docker = |message: String| KindError::NoDocker { host: host.clone(), message: one_line(&message, 200) };
    let docker = Docker::connect_with_defaults().map_err(|e| no_docker(e.to_string()))?;
    match tokio::time::timeout(Duration::from_secs(10), docker.ping()).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(no_docker(e.to_string())),
        Err(_) => return Err(no_docker("no answer to a ping within 10s".into())),
    }
    let version =
        docker.version().await.map_err(|e| no_docker(format!("it answers a ping but not GET /version: {e}")))?;
    Ok((docker, version.version.unwrap_or_else(|| "unknown".into())))
}

/// Whether the daemon has `image`.
pub async fn has_image(docker: &Docker, image: &str) -> bool {
    docker.inspect_image(image).await.is_ok()
}

/// Makes sure the daemon has `image`: it is there, or it is pulled now. `Err` names the image.
/// Returns whether it had to be pulled.
pub async fn ensure_image(docker: &Docker, image: &str) -> Result<bool, KindError> {
    if has_image(docker, image).await {
        return Ok(false);
    }
    let options = bollard::query_parameters::CreateImageOptionsBuilder::new().from_image(image).build();
    let mut pull = docker.create_image(Some(options), None, None);
    while let Some(progress) = pull.next().await {
        if let Err(e) = progress {
            return Err(KindError::Image { image: image.into(), message: one_line(&e.to_string(), 200) });
        }
    }
    if has_image(docker, image).await {
        Ok(true)
    } else {
        Err(KindError::Image { image: image.into(), message: "the pull ended but the daemon does not list it".into() })
    }
}

/// The first IPv4 subnet of Docker network `network` (`172.18.0.0/16`).
pub async fn network_subnet(docker: &Docker, network: &str) -> Result<String, String> {
    let inspected = docker
        .inspect_network(network, None::<bollard::query_parameters::InspectNetworkOptions>)
        .await
        .map_err(|e| format!("inspecting Docker network {network}: {e}"))?;
    inspected
        .ipam
        .and_then(|ipam| ipam.config)
        .into_iter()
        .flatten()
        .filter_map(|c| c.subnet)
        .find(|s| s.parse::<Ipv4Addr>().is_ok() || s.split('/').next().is_some_and(|a| a.parse::<Ipv4Addr>().is_ok()))
        .ok_or_else(|| format!("Docker network {network} has no IPv4 subnet"))
}

/// The address range MetalLB may hand out on a node network with IPv4 `subnet`: 51 addresses
/// ending 5 below its broadcast address (`172.18.0.0/16` gives `172.18.255.200-172.18.255.250`,
/// the range kind's LoadBalancer guide uses), far above the addresses Docker assigns from the
/// bottom. Subnets smaller than a /24 leave no room and are refused.
pub fn metallb_pool(subnet: &str) -> Result<String, String> {
    let (addr, bits) = subnet.split_once('/').ok_or_else(|| format!("{subnet:?} is not a CIDR"))?;
    let addr: Ipv4Addr = addr.parse().map_err(|e| format!("{subnet:?}: {e}"))?;
    let bits: u32 = bits.parse().map_err(|e| format!("{subnet:?}: {e}"))?;
    if !(8..=24).contains(&bits) {
        return Err(format!("{subnet}: a /{bits} network leaves no room for a MetalLB pool (need /8 to /24)"));
    }
    let host_mask = u32::MAX >> bits;
    let broadcast = u32::from(addr) | host_mask;
    let last = Ipv4Addr::from(broadcast - 5);
    let first = Ipv4Addr::from(broadcast - 55);
    Ok(format!("{first}-{last}"))
}

/// Writes `image` from the daemon as a `docker save` archive to `path`.
pub async fn export_image(docker: &Docker, image: &str, path: &Path) -> Result<(), String> {
    let mut file = tokio::fs::File::create(path).await.map_err(|e| format!("{}: {e}", path.display()))?;
    let mut stream = docker.export_image(image);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| format!("exporting {image}: {e}"))?;
        file.write_all(&chunk).await.map_err(|e| format!("{}: {e}", path.display()))?;
    }
    file.flush().await.map_err(|e| format!("{}: {e}", path.display()))
}

/// Splits an image reference into the name and the tag testcontainers wants: the tag keeps a
/// digest (`kindest/node`, `v1.37.0@sha256:...`); no tag means `latest`; a registry port is
/// not a tag.
pub fn split_image(image: &str) -> (String, String) {
    let (named, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let last_segment_start = named.rfind('/').map(|i| i + 1).unwrap_or(0);
    let (name, tag) = match named[last_segment_start..].rfind(':') {
        Some(i) => (&named[..last_segment_start + i], named[last_segment_start + i + 1..].to_string()),
        None => (named, String::new()),
    };
    let tag = match (tag.is_empty(), digest) {
        (true, Some(d)) => format!("latest@{d}"),
        (true, None) => "latest".to_string(),
        (false, Some(d)) => format!("{tag}@{d}"),
        (false, None) => tag,
    };
    (name.to_string(), tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_sits_at_the_top_of_the_subnet() {
        assert_eq!(metallb_pool("172.18.0.0/16").as_deref(), Ok("172.18.255.200-172.18.255.250"));
        assert_eq!(metallb_pool("192.168.49.0/24").as_deref(), Ok("192.168.49.200-192.168.49.250"));
        assert_eq!(metallb_pool("10.0.0.0/8").as_deref(), Ok("10.255.255.200-10.255.255.250"));
        assert!(metallb_pool("172.18.0.0/28").unwrap_err().contains("no room"));
        assert!(metallb_pool("fc00:f853:ccd:e793::/64").is_err());
        assert!(metallb_pool("172.18.0.0").is_err());
    }

    #[test]
    fn image_references_split_into_name_and_tag() {
        let split = |s: &str| split_image(s);
        assert_eq!(split("kindest/node:v1.37.0@sha256:ab"), ("kindest/node".into(), "v1.37.0@sha256:ab".into()));
        assert_eq!(split("busybox"), ("busybox".into(), "latest".into()));
        assert_eq!(split("localhost:5000/kueue"), ("localhost:5000/kueue".into(), "latest".into()));
        assert_eq!(split("localhost:5000/kueue:dev"), ("localhost:5000/kueue".into(), "dev".into()));
        assert_eq!(
            split("quay.io/kuberay/operator@sha256:cd"),
            ("quay.io/kuberay/operator".into(), "latest@sha256:cd".into())
        );
    }
}
