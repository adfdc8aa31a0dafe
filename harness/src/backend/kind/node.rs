//! The kind node: kind's node image run as a testcontainers container with the settings kind's
//! Docker provider gives it, then bootstrapped the way kind's create actions do it for a
//! single control-plane node (kubeadm init with kind's kubeadm configuration, the control-plane
//! taint and load-balancer exclusion removed, kindnet and the local-path storage class from the
//! image's own `/kind/manifests`). Followed: kind v0.33.0,
//! <https://github.com/kubernetes-sigs/kind/blob/v0.33.0/pkg/cluster/internal/providers/docker/provision.go>
//! (`runArgsForNode`, `commonArgs`),
//! <https://github.com/kubernetes-sigs/kind/blob/v0.33.0/pkg/cluster/internal/kubeadm/config.go>
//! (`ConfigTemplateBetaV4`) and
//! <https://github.com/kubernetes-sigs/kind/tree/v0.33.0/pkg/cluster/internal/create/actions>
//! (`kubeadminit`, `installcni`, `installstorage`, `waitforready`).

use crate::backend::kind::container::{ManagedContainer, labelled};
use crate::backend::kind::error::KindError;
use crate::backend::kind::plan::NETWORK;
use std::path::{Path, PathBuf};
use std::time::Duration;
use testcontainers::bollard::models::{HostConfig, Mount, MountType, PortBinding};
use testcontainers::core::{AccessMode, CgroupnsMode, IntoContainerPort};
use testcontainers::{ContainerRequest, GenericImage, ImageExt};

/// The pod network (kind's default).
pub const POD_SUBNET: &str = "10.244.0.0/16";
/// The service network (kind's default).
pub const SERVICE_SUBNET: &str = "10.96.0.0/16";
/// Where the host directory for image archives is mounted in the node.
const IMAGES_IN_NODE: &str = "/kproof-images";
/// kubectl inside the node, as the cluster admin.
const KUBECTL: &str = "kubectl --kubeconfig=/etc/kubernetes/admin.conf";

/// What the node is made of.
#[derive(Debug, Clone)]
pub struct NodeSpec {
    /// Container name, host name, cluster name and node name.
    pub name: String,
    /// The kind node image.
    pub image: String,
    /// A host directory mounted into the node, where image archives to load are written.
    pub images_dir: PathBuf,
    /// Feature gates of every component (`Name=true`).
    pub feature_gates: Vec<String>,
    /// kube-apiserver's `--runtime-config`.
    pub runtime_config: Vec<String>,
}

/// The container request: privileged, seccomp and AppArmor unconfined, a private cgroup
/// namespace, tmpfs `/tmp` and `/run`, an anonymous volume for `/var` (removed with the
/// container), `/lib/modules` read-only, the `kind` network, and the API server's port
/// published on 127.0.0.1 only.
pub fn node_request(spec: &NodeSpec) -> ContainerRequest<GenericImage> {
    let images = testcontainers::core::Mount::bind_mount(spec.images_dir.display().to_string(), IMAGES_IN_NODE);
    let modules =
        testcontainers::core::Mount::bind_mount("/lib/modules", "/lib/modules").with_access_mode(AccessMode::ReadOnly);
    let (repository, tag) = crate::backend::kind::docker::split_image(&spec.image);
    labelled(GenericImage::new(repository, tag).with_exposed_port(6443.tcp()), &spec.name)
        .with_label("io.x-k8s.kind.cluster", &spec.name)
        .with_label("io.x-k8s.kind.role", "control-plane")
        .with_hostname(&spec.name)
        .with_network(NETWORK)
        .with_privileged(true)
        .with_security_opt("seccomp=unconfined")
        .with_security_opt("apparmor=unconfined")
        .with_cgroupns_mode(CgroupnsMode::Private)
        .with_mount(modules)
        .with_mount(images)
        .with_env_var("KUBECONFIG", "/etc/kubernetes/admin.conf")
        .with_env_var("container", "docker")
        .with_startup_timeout(Duration::from_secs(120))
        .with_host_config_modifier(|host: &mut HostConfig| {
            host.tmpfs = Some([("/tmp".to_string(), String::new()), ("/run".to_string(), String::new())].into());
            host.mounts.get_or_insert_with(Vec::new).push(Mount {
                target: Some("/var".into()),
                typ: Some(MountType::VOLUME),
                ..Default::default()
            });
            host.publish_all_ports = Some(false);
            host.port_bindings = Some(
                [(
                    "6443/tcp".to_string(),
                    Some(vec![PortBinding { host_ip: Some("127.0.0.1".into()), host_port: Some(String::new()) }]),
                )]
                .into(),
            );
            host.init = Some(false);
        })
}

/// The kubeadm configuration of a single control-plane node (kind's `ConfigTemplateBetaV4`
/// for one node), as a shell here-document body: `${NODE_IP}` and `${KUBE_VERSION}` are read
/// in the node.
pub fn kubeadm_config(spec: &NodeSpec) -> String {
    let gates = spec.feature_gates.join(",");
    let gate_map: String = spec
        .feature_gates
        .iter()
        .filter_map(|g| g.split_once('='))
        .map(|(name, value)| format!("  {name}: {value}\n"))
        .collect();
    let runtime_config = spec.runtime_config.join(",");
    let name = &spec.name;
    format!(
        r#"apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: ${{KUBE_VERSION}}
clusterName: "{name}"
controlPlaneEndpoint: "{name}:6443"
apiServer:
  certSANs: [localhost, "127.0.0.1"]
  extraArgs:
    - name: runtime-config
      value: "{runtime_config}"
    - name: feature-gates
      value: "{gates}"
controllerManager:
  extraArgs:
    - name: feature-gates
      value: "{gates}"
    - name: enable-hostpath-provisioner
      value: "true"
scheduler:
  extraArgs:
    - name: feature-gates
      value: "{gates}"
networking:
  podSubnet: "{POD_SUBNET}"
  serviceSubnet: "{SERVICE_SUBNET}"
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: "abcdef.0123456789abcdef"
localAPIEndpoint:
  advertiseAddress: "${{NODE_IP}}"
  bindPort: 6443
nodeRegistration:
  criSocket: "unix:///run/containerd/containerd.sock"
  kubeletExtraArgs:
    - name: node-ip
      value: "${{NODE_IP}}"
    - name: provider-id
      value: "kind://docker/{name}/{name}"
skipPhases:
  - preflight
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
cgroupRoot: /kubelet
failSwapOn: false
imageGCHighThresholdPercent: 100
evictionHard:
  nodefs.available: "0%"
  nodefs.inodesFree: "0%"
  imagefs.available: "0%"
featureGates:
{gate_map}---
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
featureGates:
{gate_map}iptables:
  minSyncPeriod: 1s
conntrack:
  maxPerCore: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
"#
    )
}

/// The bootstrap, in order: (what it does, the shell script run in the node).
pub fn bootstrap(spec: &NodeSpec) -> Vec<(&'static str, String)> {
    vec![
        (
            "writing /kind/kubeadm.conf",
            format!(
                "set -eu\nNODE_IP=$(hostname -i | awk '{{print $1}}')\nKUBE_VERSION=$(cat /kind/version)\ncat > /kind/kubeadm.conf <<EOF\n{}EOF\n",
                kubeadm_config(spec)
            ),
        ),
        ("kubeadm init", "kubeadm init --config=/kind/kubeadm.conf --skip-token-print --v=6 2>&1".into()),
        (
            "making the control-plane node schedulable and load-balanced",
            format!(
                "{KUBECTL} taint nodes --all node-role.kubernetes.io/control-plane- && {KUBECTL} label nodes --all node.kubernetes.io/exclude-from-external-load-balancers-"
            ),
        ),
        (
            "installing kindnet",
            format!(
                "sed -e 's#{{{{ *\\.PodSubnet *}}}}#{POD_SUBNET}#g' /kind/manifests/default-cni.yaml | {KUBECTL} create -f -"
            ),
        ),
        ("installing the local-path storage class", format!("{KUBECTL} apply -f /kind/manifests/default-storage.yaml")),
        (
            "waiting for the node to be Ready",
            format!("{KUBECTL} wait --for=condition=Ready nodes --all --timeout=180s"),
        ),
    ]
}

/// `admin.conf` with its server rewritten to `https://127.0.0.1:<port>` (the published port).
pub fn host_kubeconfig(admin_conf: &str, port: u16) -> String {
    admin_conf
        .lines()
        .map(|line| match line.trim_start().strip_prefix("server: ") {
            Some(_) => {
                let indent = &line[..line.len() - line.trim_start().len()];
                format!("{indent}server: https://127.0.0.1:{port}")
            }
            None => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// A running, bootstrapped kind node.
pub struct Node {
    /// The container (removed when the node is dropped).
    pub container: ManagedContainer,
    /// The host-side admin kubeconfig.
    pub kubeconfig: PathBuf,
    images_dir: PathBuf,
}

impl Node {
    /// Starts the node and bootstraps it; the kubeconfig is written to `kubeconfig`.
    /// `progress` hears each step's name.
    pub async fn start(spec: &NodeSpec, kubeconfig: &Path, progress: &dyn Fn(&str)) -> Result<Self, KindError> {
        let fail =
            |step: &str, message: String| KindError::Node { node: spec.name.clone(), step: step.into(), message };
        progress("starting the node container");
        let container = ManagedContainer::start(node_request(spec), &spec.name)
            .await
            .map_err(|m| fail("starting the container (kind nodes need `docker run --privileged`)", m))?;
        progress("waiting for systemd and containerd in the node");
        let containerd = "systemctl is-active containerd";
        if let Err(m) = container.sh_until(containerd, Duration::from_secs(120), Duration::from_millis(500)).await {
            return Err(fail("waiting for containerd", format!("{m}; node log: {}", log_tail(&container).await)));
        }
        for (step, script) in bootstrap(spec) {
            progress(step);
            if let Err(m) = container.sh(&script).await {
                return Err(fail(step, format!("{m}; node log: {}", log_tail(&container).await)));
            }
        }
        let admin =
            container.read_file("/etc/kubernetes/admin.conf").await.map_err(|m| fail("reading admin.conf", m))?;
        let port = container.host_port(6443).await.map_err(|m| fail("reading the API server's published port", m))?;
        let text = host_kubeconfig(&String::from_utf8_lossy(&admin), port);
        std::fs::write(kubeconfig, text)
            .map_err(|e| fail("writing the kubeconfig", format!("{}: {e}", kubeconfig.display())))?;
        Ok(Self { container, kubeconfig: kubeconfig.to_path_buf(), images_dir: spec.images_dir.clone() })
    }

    /// Loads `image` from the host's Docker daemon into the node's containerd (what `kind load
    /// docker-image` does): exported into the mounted directory, imported with `ctr`.
    pub async fn load_image(&self, docker: &testcontainers::bollard::Docker, image: &str) -> Result<(), String> {
        let file: String = image.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        let archive = self.images_dir.join(format!("{file}.tar"));
        crate::backend::kind::docker::export_image(docker, image, &archive).await?;
        let script = format!(
            "ctr --namespace=k8s.io images import --all-platforms --digests --snapshotter=overlayfs {IMAGES_IN_NODE}/{file}.tar"
        );
        let loaded = self.container.sh(&script).await.map_err(|e| format!("importing {image} into the node: {e}"));
        let _ = std::fs::remove_file(&archive);
        loaded.map(|_| ())
    }
}

/// The node's last log lines, on one line, for an error message.
async fn log_tail(container: &ManagedContainer) -> String {
    crate::backend::kind::error::one_line(&container.logs(5).await, 300)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> NodeSpec {
        NodeSpec {
            name: "kproof-kind-1".into(),
            image: crate::backend::kind::plan::NODE_IMAGE.into(),
            images_dir: "/tmp/images".into(),
            feature_gates: crate::backend::upstream::plane::FEATURE_GATES.map(String::from).to_vec(),
            runtime_config: crate::backend::upstream::plane::RUNTIME_CONFIG.map(String::from).to_vec(),
        }
    }

    #[test]
    fn the_node_runs_as_kind_runs_it() {
        let r = node_request(&spec());
        assert!(r.privileged());
        assert!(matches!(r.cgroupns_mode(), Some(CgroupnsMode::Private)));
        assert_eq!(r.network().as_deref(), Some(NETWORK));
        assert_eq!(r.container_name().as_deref(), Some("kproof-kind-1"));
        assert_eq!(r.labels().get("io.x-k8s.kind.role").map(String::as_str), Some("control-plane"));
        assert!(r.labels().contains_key(crate::backend::kind::container::RUN_LABEL));
        assert!(r.descriptor().starts_with("kindest/node:v1.37.0@sha256:"), "{}", r.descriptor());
        let mut host = HostConfig::default();
        (r.host_config_modifier().expect("modifier"))(&mut host);
        assert_eq!(host.tmpfs.as_ref().map(|t| t.len()), Some(2));
        let binding = host.port_bindings.as_ref().and_then(|b| b.get("6443/tcp")).cloned().flatten().expect("6443");
        assert_eq!(binding[0].host_ip.as_deref(), Some("127.0.0.1"));
    }

    #[test]
    fn the_kubeadm_configuration_carries_the_shared_gates_and_reads_the_node_address() {
        let text = kubeadm_config(&spec());
        assert!(text.contains("value: \"GenericWorkload=true,DRAWorkloadResourceClaims=true\""), "{text}");
        assert!(text.contains("value: \"scheduling.k8s.io/v1beta1=true\""), "{text}");
        assert!(text.contains("  DRAWorkloadResourceClaims: true\n"), "{text}");
        assert!(text.contains("advertiseAddress: \"${NODE_IP}\""));
        assert!(text.contains("kubernetesVersion: ${KUBE_VERSION}"));
        let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(
            &text.replace("${NODE_IP}", "172.18.0.2").replace("${KUBE_VERSION}", "v1.37.0"),
        )
        .expect("the configuration is YAML");
        let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
        assert_eq!(
            kinds,
            ["ClusterConfiguration", "InitConfiguration", "KubeletConfiguration", "KubeProxyConfiguration"]
        );
        assert_eq!(docs[2]["featureGates"]["GenericWorkload"], true);
    }

    #[test]
    fn the_bootstrap_substitutes_the_pod_subnet_into_kindnet() {
        let steps = bootstrap(&spec());
        let cni = &steps.iter().find(|(what, _)| *what == "installing kindnet").expect("kindnet").1;
        assert!(cni.contains("s#{{ *\\.PodSubnet *}}#10.244.0.0/16#g"), "{cni}");
    }

    #[test]
    fn the_kubeconfig_points_at_the_published_port() {
        let admin = "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: QQ==\n    server: https://kproof-kind-1:6443\n  name: kproof\n";
        let host = host_kubeconfig(admin, 40123);
        assert!(host.contains("    server: https://127.0.0.1:40123\n"), "{host}");
        assert!(host.contains("certificate-authority-data: QQ=="));
    }
}
