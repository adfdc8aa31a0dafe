//! The installation plan of the kind backend: which component, which version, from where, in
//! which order, and what is changed on the way in. It is data: `kproof kind plan` prints it,
//! `kproof kind fetch-script` turns its sources into download commands, the tests check it,
//! and [`super::install`] carries it out against a cluster.
//!
//! The versions the upstream backend builds come from the same pins ([`crate::backend::pins`]:
//! `upstream/*/go.mod`), and so do the API server's feature gates and runtime config
//! ([`crate::backend::upstream::plane`]) and Kueue's integrations
//! ([`crate::backend::upstream::kueue::INTEGRATIONS`]).

use crate::backend::kind::options::KindOptions;
use crate::backend::pins;
use serde_json::{Value, json};
use std::fmt::Write as _;

/// kind's release whose node bootstrap ([`super::node`]) kproof follows.
pub const KIND_VERSION: &str = "v0.33.0";
/// The node image kind v0.33.0 names as its default (`pkg/apis/config/defaults/image.go`):
/// Kubernetes v1.37.0, the newest 1.37 node image kind publishes by digest, nearest to the
/// upstream backend's v1.37.2.
pub const NODE_IMAGE: &str =
    "kindest/node:v1.37.0@sha256:a1ed56cfb0e7b93589bdf97c8cd566405a265939e3620fc4f5de89adff580ae5";
/// Istio, installed by its own `istioctl` with the `minimal` profile (istiod only; Gateways get
/// their data plane deployed by istiod from the Gateway API objects).
pub const ISTIO_VERSION: &str = "1.32.0";
/// MetalLB, its native manifests (controller and L2 speaker).
pub const METALLB_VERSION: &str = "v0.16.2";
/// The GatewayClass Istio serves, which the rows' RayServices name.
pub const GATEWAY_CLASS: &str = "istio";
/// The Docker network the node joins (kind's own name, so kind's documentation applies).
pub const NETWORK: &str = "kind";

/// One product the plan installs, for the report and `kproof kind plan`.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    /// `gateway-api`, `istio`, `metallb`, `kuberay-operator`, `kueue`.
    pub name: &'static str,
    /// The release.
    pub version: String,
    /// The image that runs it (operators), if one is named.
    pub image: Option<String>,
}

/// A file the plan reads from the manifests directory, and where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// The file name in the manifests directory.
    pub file: String,
    /// How to get it: a shell command writing it to `"$dir/<file>"` (for `fetch-script`).
    pub fetch: String,
}

/// What is changed in a component's manifests before they are created.
#[derive(Debug, Clone, PartialEq)]
pub enum Transform {
    /// Nothing.
    None,
    /// Containers whose image repository ends with `repository` run `image` instead, pulled
    /// only if the node lacks it (a locally loaded image must not be pulled).
    Image {
        /// The repository path the release uses, without registry and tag (`kuberay/operator`).
        repository: &'static str,
        /// The image to run.
        image: String,
    },
    /// Kueue's manager configuration gets the integrations the tables use (and the image
    /// override, when there is one).
    KueueConfig {
        /// The image to run, when overridden.
        image: Option<String>,
    },
}

/// One step of the plan, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Create every object of a manifests file (namespaces and CRDs first), then wait until
    /// its CRDs are Established and its Deployments Available.
    Manifests {
        /// The component.
        component: &'static str,
        /// Where the objects come from.
        source: Source,
        /// What is changed first.
        transform: Transform,
    },
    /// Run a program of the manifests directory with `KUBECONFIG` set.
    Program {
        /// The component.
        component: &'static str,
        /// Where the program comes from.
        source: Source,
        /// Its arguments.
        args: Vec<String>,
    },
    /// Create objects kproof writes itself (retried while the component's webhook starts).
    Objects {
        /// The component.
        component: &'static str,
        /// The objects; `@POOL@` in a string stands for the address range the node's Docker
        /// network leaves to MetalLB ([`super::docker::metallb_pool`]).
        objects: Vec<Value>,
    },
    /// Wait until a GatewayClass is `Accepted`.
    GatewayClassAccepted {
        /// Its name.
        name: &'static str,
    },
}

impl Step {
    /// The component the step belongs to.
    pub fn component(&self) -> &'static str {
        match self {
            Step::Manifests { component, .. } | Step::Program { component, .. } | Step::Objects { component, .. } => {
                component
            }
            Step::GatewayClassAccepted { .. } => "istio",
        }
    }

    /// The manifests-directory file it reads, if any.
    pub fn source(&self) -> Option<&Source> {
        match self {
            Step::Manifests { source, .. } | Step::Program { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The whole plan: the node image, what runs in the cluster, and the steps.
#[derive(Debug, Clone, PartialEq)]
pub struct InstallPlan {
    /// The kind node image.
    pub node_image: String,
    /// The components, in install order.
    pub components: Vec<Component>,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Images loaded from the local Docker daemon into the node (operator overrides), when it
    /// has them.
    pub local_images: Vec<String>,
}

/// The KubeRay operator image of a release (`quay.io/kuberay/operator:v1.7.0`).
pub fn kuberay_image(version: &str) -> String {
    format!("quay.io/kuberay/operator:{version}")
}

/// The Kueue image of a release (`registry.k8s.io/kueue/kueue:v0.19.2`).
pub fn kueue_image(version: &str) -> String {
    format!("registry.k8s.io/kueue/kueue:{version}")
}

fn download(file: &str, url: &str) -> Source {
    Source { file: file.into(), fetch: format!("curl -fsSL --retry 3 -o \"$dir/{file}\" {url}") }
}

impl InstallPlan {
    /// The plan for `opts`: the pinned releases, with the overrides the options name.
    pub fn new(opts: &KindOptions) -> Self {
        let gateway_api = pins::gateway_api();
        let kuberay = opts.kuberay_version.clone().unwrap_or_else(pins::kuberay);
        let kueue = pins::kueue();
        let ray_image = opts.ray_operator_image.clone().unwrap_or_else(|| kuberay_image(&kuberay));
        let kueue_img = opts.kueue_image.clone().unwrap_or_else(|| kueue_image(&kueue));
        let components = vec![
            Component { name: "gateway-api", version: gateway_api.clone(), image: None },
            Component { name: "istio", version: ISTIO_VERSION.into(), image: None },
            Component { name: "metallb", version: METALLB_VERSION.into(), image: None },
            Component { name: "kuberay-operator", version: kuberay.clone(), image: Some(ray_image) },
            Component { name: "kueue", version: kueue.clone(), image: Some(kueue_img) },
        ];
        let istioctl = Source {
            file: "istioctl".into(),
            fetch: format!(
                "curl -fsSL --retry 3 https://github.com/istio/istio/releases/download/{ISTIO_VERSION}/istioctl-{ISTIO_VERSION}-linux-amd64.tar.gz | tar -xz -C \"$dir\" istioctl"
            ),
        };
        let kuberay_source = Source {
            file: format!("kuberay-operator-{kuberay}.yaml"),
            fetch: format!(
                "kubectl kustomize \"https://github.com/ray-project/kuberay/ray-operator/config/default?ref={kuberay}\" > \"$dir/kuberay-operator-{kuberay}.yaml\""
            ),
        };
        let pool = json!({
            "apiVersion": "metallb.io/v1beta1", "kind": "IPAddressPool",
            "metadata": {"name": "kind", "namespace": "metallb-system"},
            "spec": {"addresses": ["@POOL@"]}
        });
        let l2 = json!({
            "apiVersion": "metallb.io/v1beta1", "kind": "L2Advertisement",
            "metadata": {"name": "kind", "namespace": "metallb-system"},
            "spec": {"ipAddressPools": ["kind"]}
        });
        let steps = vec![
            Step::Manifests {
                component: "gateway-api",
                source: download(
                    &format!("gateway-api-{gateway_api}-standard-install.yaml"),
                    &format!(
                        "https://github.com/kubernetes-sigs/gateway-api/releases/download/{gateway_api}/standard-install.yaml"
                    ),
                ),
                transform: Transform::None,
            },
            Step::Manifests {
                component: "metallb",
                source: download(
                    &format!("metallb-{METALLB_VERSION}-native.yaml"),
                    &format!(
                        "https://raw.githubusercontent.com/metallb/metallb/{METALLB_VERSION}/config/manifests/metallb-native.yaml"
                    ),
                ),
                transform: Transform::None,
            },
            Step::Objects { component: "metallb", objects: vec![pool, l2] },
            Step::Program {
                component: "istio",
                source: istioctl,
                args: ["install", "--set", "profile=minimal", "--skip-confirmation"].map(String::from).to_vec(),
            },
            Step::GatewayClassAccepted { name: GATEWAY_CLASS },
            Step::Manifests {
                component: "kuberay-operator",
                source: kuberay_source,
                transform: match &opts.ray_operator_image {
                    Some(image) => Transform::Image { repository: "kuberay/operator", image: image.clone() },
                    None => Transform::None,
                },
            },
            Step::Manifests {
                component: "kueue",
                source: download(
                    &format!("kueue-{kueue}-manifests.yaml"),
                    &format!("https://github.com/kubernetes-sigs/kueue/releases/download/{kueue}/manifests.yaml"),
                ),
                transform: Transform::KueueConfig { image: opts.kueue_image.clone() },
            },
        ];
        let local_images = opts.ray_operator_image.iter().chain(&opts.kueue_image).cloned().collect();
        let node_image = opts.node_image.clone().unwrap_or_else(|| NODE_IMAGE.into());
        Self { node_image, components, steps, local_images }
    }

    /// A bash script that downloads every source into the directory given as its first
    /// argument (needs curl, tar and kubectl; run where GitHub is reachable).
    pub fn fetch_script(&self) -> String {
        let mut out = String::from(
            "#!/usr/bin/env bash\n# Written by `kproof kind fetch-script`: the release files of the kind backend's plan.\nset -euo pipefail\ndir=${1:?usage: $0 DIR}\nmkdir -p \"$dir\"\n",
        );
        for source in self.steps.iter().filter_map(Step::source) {
            let _ = writeln!(out, "{}", source.fetch);
        }
        let _ = writeln!(out, "chmod +x \"$dir/istioctl\"");
        out
    }

    /// The plan as a person reads it: node, components, steps.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "kind node   {}  (bootstrap as kind {KIND_VERSION}; Docker network {NETWORK:?})",
            self.node_image
        );
        let _ = writeln!(out, "components");
        for c in &self.components {
            let image = c.image.as_deref().map(|i| format!("  image {i}")).unwrap_or_default();
            let _ = writeln!(out, "  {:<18} {}{image}", c.name, c.version);
        }
        if !self.local_images.is_empty() {
            let _ = writeln!(
                out,
                "local images loaded into the node when Docker has them: {}",
                self.local_images.join(", ")
            );
        }
        let _ = writeln!(out, "steps");
        for (i, step) in self.steps.iter().enumerate() {
            let what = match step {
                Step::Manifests { source, transform, .. } => {
                    let change = match transform {
                        Transform::None => String::new(),
                        Transform::Image { image, .. } => format!(", image -> {image}"),
                        Transform::KueueConfig { image } => format!(
                            ", integrations {}{}",
                            crate::backend::upstream::kueue::INTEGRATIONS.join(" "),
                            image.as_deref().map(|i| format!(", image -> {i}")).unwrap_or_default()
                        ),
                    };
                    format!("create {}{change}; wait for its CRDs and Deployments", source.file)
                }
                Step::Program { source, args, .. } => format!("run {} {}", source.file, args.join(" ")),
                Step::Objects { objects, .. } => {
                    let kinds: Vec<String> = objects
                        .iter()
                        .map(|o| {
                            format!(
                                "{} {}",
                                o["kind"].as_str().unwrap_or("?"),
                                o["metadata"]["name"].as_str().unwrap_or("?")
                            )
                        })
                        .collect();
                    format!("create {} (pool: the top of the node network's IPv4 subnet)", kinds.join(", "))
                }
                Step::GatewayClassAccepted { name } => format!("wait until GatewayClass {name} is Accepted"),
            };
            let _ = writeln!(out, "  {:>2}. {:<17} {what}", i + 1, step.component());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_plan_pins_every_component_and_installs_gateway_api_before_istio() {
        let plan = InstallPlan::new(&KindOptions::default());
        let names: Vec<&str> = plan.components.iter().map(|c| c.name).collect();
        assert_eq!(names, ["gateway-api", "istio", "metallb", "kuberay-operator", "kueue"]);
        let kuberay = &plan.components[3];
        assert_eq!(kuberay.version, pins::kuberay());
        assert_eq!(kuberay.image.as_deref(), Some(kuberay_image(&pins::kuberay()).as_str()));
        assert_eq!(plan.components[0].version, pins::gateway_api());
        let order: Vec<&str> = plan.steps.iter().map(Step::component).collect();
        let first = |c: &str| order.iter().position(|o| *o == c).expect(c);
        assert!(first("gateway-api") < first("istio"), "{order:?}");
        assert!(first("metallb") < first("istio"), "{order:?}");
        assert!(plan.local_images.is_empty());
        assert!(plan.node_image.starts_with("kindest/node:v1.37."), "{}", plan.node_image);
    }

    #[test]
    fn image_overrides_change_the_operators_and_are_loaded_from_docker() {
        let opts = KindOptions {
            ray_operator_image: Some("kuberay/operator:dev".into()),
            kueue_image: Some("kueue:dev".into()),
            kuberay_version: Some("v1.8.0".into()),
            ..Default::default()
        };
        let plan = InstallPlan::new(&opts);
        assert_eq!(plan.local_images, ["kuberay/operator:dev", "kueue:dev"]);
        let kuberay = plan.steps.iter().find(|s| s.component() == "kuberay-operator").expect("kuberay step");
        let Step::Manifests { source, transform, .. } = kuberay else { panic!("{kuberay:?}") };
        assert_eq!(source.file, "kuberay-operator-v1.8.0.yaml");
        assert!(source.fetch.contains("ref=v1.8.0"), "{}", source.fetch);
        assert_eq!(
            *transform,
            Transform::Image { repository: "kuberay/operator", image: "kuberay/operator:dev".into() }
        );
        assert!(plan.render().contains("image -> kueue:dev"), "{}", plan.render());
    }

    #[test]
    fn the_fetch_script_downloads_every_file_the_steps_read() {
        let plan = InstallPlan::new(&KindOptions::default());
        let script = plan.fetch_script();
        for source in plan.steps.iter().filter_map(Step::source) {
            assert!(
                script.contains(&format!("$dir/{}", source.file)) || script.contains("-C \"$dir\" istioctl"),
                "{}",
                source.file
            );
        }
        assert!(
            script.contains(&format!("gateway-api/releases/download/{}/standard-install.yaml", pins::gateway_api()))
        );
        assert!(script.starts_with("#!/usr/bin/env bash\n"));
    }

    #[test]
    fn the_rendered_plan_names_every_component_and_version() {
        let plan = InstallPlan::new(&KindOptions::default());
        let text = plan.render();
        for c in &plan.components {
            assert!(text.contains(c.name) && text.contains(&c.version), "{} {} missing:\n{text}", c.name, c.version);
        }
        assert!(text.contains("GatewayClass istio is Accepted"), "{text}");
    }
}
