//! [`KindBackend`]: the node started and bootstrapped, the plan installed, rows run in
//! namespaces of their own like on the kubeconfig and upstream backends.

use crate::backend::kind::docker;
use crate::backend::kind::error::{KindError, one_line};
use crate::backend::kind::install::{check_sources, install};
use crate::backend::kind::node::{Node, NodeSpec};
use crate::backend::kind::options::KindOptions;
use crate::backend::kind::plan::{InstallPlan, KIND_VERSION, NETWORK};
use crate::backend::kubeconfig::{OwnNamespace, run_in_own_namespace, run_real_time_row};
use crate::backend::upstream::plane::{FEATURE_GATES, RUNTIME_CONFIG};
use crate::backend::{Backend, RunOptions};
use crate::engine::runner::{NoKnobs, RowFailure};
use crate::report::result::RowResult;
use crate::suite::{ActorName, Capability, Component, LoadedSuite, Row, Version};
use controllers::dra::DraProfile;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

/// The actors rows name that the kind cluster does not have: the simulated data plane's
/// `TrafficProbe` (`traffic`), the DRA driver stand-in (`dra-driver`: kind's nodes have no DRA
/// driver) and the harness's self-test controller (`echo`). Every other actor is real there:
/// kube-scheduler, the kubelet, kube-controller-manager's controllers, the operators, the Ray
/// heads (dashboard, Serve, the autoscaler sidecar) and Istio as the Gateway controller.
pub const ABSENT: [ActorName; 3] = [ActorName::Traffic, ActorName::DraDriver, ActorName::Echo];

/// What the kind backend offers: the timeline (from watches), every actor but [`ABSENT`], and
/// the DRA profiles the node's gates serve.
pub fn capabilities() -> BTreeSet<Capability> {
    let mut c: BTreeSet<Capability> = [Capability::Timeline].into();
    c.extend(ActorName::ALL.iter().filter(|a| !ABSENT.contains(a)).map(|a| Capability::Actor(*a)));
    // The node runs with the upstream plane's gates (the `podgroup` profile); `baseline` and
    // `raw` rows use no PodGroup, for which those gates change nothing.
    c.extend([DraProfile::Baseline, DraProfile::Podgroup, DraProfile::Raw].map(Capability::DraProfile));
    c
}

/// The kind backend: a kind node in Docker (owned by testcontainers), with Gateway API, Istio,
/// MetalLB, the KubeRay operator and Kueue installed from [`InstallPlan`].
pub struct KindBackend {
    // Declared first: dropped (the container removed) while the runtime below still runs.
    node: Option<Node>,
    runtime: tokio::runtime::Runtime,
    client: kube::Client,
    components: BTreeMap<String, String>,
    kuberay: Option<Version>,
    kubernetes: Option<Version>,
    kueue: Option<Version>,
    work_dir: PathBuf,
    keep: bool,
    /// What the rows running now touched outside their namespaces (deleted after each row).
    objects: Arc<crate::engine::cleanup::SharedObjects>,
}

impl KindBackend {
    /// Checks Docker, gets the node image, starts and bootstraps the node, loads local operator
    /// images, installs the plan. `progress` hears each step. `Err` is one line naming what is
    /// missing (Docker, an image, a manifests file) or what failed.
    pub fn start(opts: &KindOptions, progress: &dyn Fn(&str)) -> Result<Self, KindError> {
        let io = |what: &str| {
            let what = what.to_string();
            move |source| KindError::Io { what, source }
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(io("starting a tokio runtime"))?;
        let plan = InstallPlan::new(opts);
        let (docker, docker_version) = runtime.block_on(docker::connect())?;
        progress(&format!("Docker {docker_version} at {}", docker::docker_host()));
        let pulled = runtime.block_on(docker::ensure_image(&docker, &plan.node_image))?;
        if pulled {
            progress(&format!("pulled {}", plan.node_image));
        }
        check_sources(&plan, &opts.kind_manifests)?;
        let name = format!("kproof-kind-{}", std::process::id());
        let work_dir = std::env::temp_dir().join(&name);
        let images_dir = work_dir.join("images");
        std::fs::create_dir_all(&images_dir).map_err(io(&format!("creating {}", images_dir.display())))?;
        let spec = NodeSpec {
            name: name.clone(),
            image: plan.node_image.clone(),
            images_dir,
            feature_gates: FEATURE_GATES.map(String::from).to_vec(),
            runtime_config: RUNTIME_CONFIG.map(String::from).to_vec(),
        };
        let kubeconfig = work_dir.join("kubeconfig");
        let node = runtime.block_on(Node::start(&spec, &kubeconfig, progress))?;
        let mut components: BTreeMap<String, String> = BTreeMap::new();
        components.insert("docker".into(), docker_version);
        components.insert("testcontainers".into(), docker::TESTCONTAINERS.into());
        components.insert("kind-node-image".into(), plan.node_image.clone());
        components.insert("kind-bootstrap".into(), format!("as kind {KIND_VERSION}"));
        let prepared = runtime.block_on(async {
            for image in &plan.local_images {
                if docker::has_image(&docker, image).await {
                    progress(&format!("loading {image} into the node"));
                    node.load_image(&docker, image)
                        .await
                        .map_err(|message| KindError::Install { component: image.clone(), message })?;
                } else {
                    progress(&format!("{image} is not in the local Docker daemon: the node pulls it"));
                }
            }
            let client = crate::backend::upstream::client_from(&kubeconfig)
                .await
                .map_err(|message| KindError::Install { component: "kubernetes".into(), message })?;
            let subnet = docker::network_subnet(&docker, NETWORK)
                .await
                .map_err(|message| KindError::Install { component: "metallb".into(), message })?;
            let pool = docker::metallb_pool(&subnet)
                .map_err(|message| KindError::Install { component: "metallb".into(), message })?;
            install(&plan, &client, &opts.kind_manifests, &kubeconfig, &pool, progress).await?;
            let server = client.apiserver_version().await.map_err(|e| KindError::Install {
                component: "kubernetes".into(),
                message: one_line(&e.to_string(), 200),
            })?;
            Ok::<_, KindError>((client, server.git_version))
        });
        let (client, server_version) = match prepared {
            Ok(p) => p,
            Err(e) => {
                // The node goes (removed by testcontainers) before the runtime that owns it.
                drop(node);
                return Err(e);
            }
        };
        components.insert("kube-apiserver".into(), server_version.clone());
        for c in &plan.components {
            let image = c.image.as_deref().map(|i| format!(" ({i})")).unwrap_or_default();
            components.insert(c.name.into(), format!("{}{image}", c.version));
        }
        let version_of =
            |name: &str| plan.components.iter().find(|c| c.name == name).and_then(|c| Version::parse(&c.version));
        Ok(Self {
            kuberay: version_of("kuberay-operator"),
            kueue: version_of("kueue"),
            kubernetes: Version::parse(&server_version),
            node: Some(node),
            runtime,
            client,
            components,
            work_dir,
            keep: opts.keep_cluster,
            objects: Default::default(),
        })
    }

    /// The admin kubeconfig of the cluster (`https://127.0.0.1:<port>`).
    pub fn kubeconfig(&self) -> Option<&std::path::Path> {
        self.node.as_ref().map(|n| n.kubeconfig.as_path())
    }
}

impl Drop for KindBackend {
    fn drop(&mut self) {
        if let Some(node) = self.node.take() {
            if self.keep {
                let name = node.container.name().to_string();
                node.container.keep();
                eprintln!(
                    "kproof kind: kept node {name} (kubeconfig {}); remove it with `docker rm -f -v {name}`",
                    node.kubeconfig.display()
                );
                return;
            }
            drop(node);
        }
        let _ = std::fs::remove_dir_all(&self.work_dir);
    }
}

impl Backend for KindBackend {
    fn name(&self) -> &str {
        "kind"
    }

    fn capabilities(&self) -> BTreeSet<Capability> {
        capabilities()
    }

    fn components(&self) -> BTreeMap<String, String> {
        self.components.clone()
    }

    fn version(&self, component: Component) -> Option<Version> {
        match component {
            Component::Kuberay => self.kuberay,
            Component::Kueue => self.kueue,
            Component::Kubernetes => self.kubernetes,
        }
    }

    fn shares_cluster(&self) -> bool {
        true
    }

    fn run_row(&self, suite: &LoadedSuite, row: &Row, opts: &RunOptions) -> RowResult {
        run_real_time_row(self, &self.runtime, suite, row, opts, || async {
            if self.node.is_none() {
                return (Err(RowFailure::plain("the kind node was removed".to_string())), None, Vec::new());
            }
            let run = OwnNamespace {
                knobs: Arc::new(NoKnobs("the kind backend's actors are real")),
                wait_for_service_account: true,
                objects: &self.objects,
                audit: None,
            };
            run_in_own_namespace(&self.client, suite, row, opts, run, self.facts(row)).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::skip_reason;

    /// The kind backend's declarations without a cluster: capabilities and pinned versions.
    struct Declared;

    impl Backend for Declared {
        fn name(&self) -> &str {
            "kind"
        }
        fn capabilities(&self) -> BTreeSet<Capability> {
            capabilities()
        }
        fn version(&self, component: Component) -> Option<Version> {
            let plan = InstallPlan::new(&KindOptions::default());
            let name = match component {
                Component::Kuberay => "kuberay-operator",
                Component::Kueue => "kueue",
                Component::Kubernetes => return Version::parse("v1.37.0"),
            };
            plan.components.iter().find(|c| c.name == name).and_then(|c| Version::parse(&c.version))
        }
        fn run_row(&self, _: &LoadedSuite, _: &Row, _: &RunOptions) -> RowResult {
            unreachable!("only skip reasons are asked")
        }
    }

    #[test]
    fn every_table_has_rows_for_kind_and_skips_name_what_kind_lacks() {
        let suites_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites");
        let suites = crate::suite::load_suite_dir(&suites_dir).expect("the catalogue loads");
        let absent: Vec<String> = ABSENT.iter().map(|a| Capability::Actor(*a).to_string()).collect();
        let mut total = (0, 0);
        for suite in &suites {
            let (mut runs, mut skips, mut for_knobs) = (0, 0, 0);
            for row in &suite.suite.rows {
                match skip_reason(&Declared, row) {
                    None => runs += 1,
                    Some(why) => {
                        skips += 1;
                        for_knobs += usize::from(why.contains("knobs of "));
                        assert!(why.starts_with("backend kind lacks "), "{why}");
                        for present in capabilities() {
                            let name = present.to_string();
                            assert!(
                                !why.split(", ").any(|w| w.trim_start_matches("backend kind lacks ") == name),
                                "{}: skipped for {name}, which kind has: {why}",
                                row.id
                            );
                        }
                    }
                }
            }
            println!("{}: {runs} rows run on kind, {skips} skipped", suite.suite.suite);
            // The fault table turns the operators' knobs on every row, which kind does not offer.
            let all_knobs = for_knobs == skips;
            assert!(runs > 0 || all_knobs, "no row of {} runs on kind", suite.suite.suite);
            total = (total.0 + runs, total.1 + skips);
        }
        println!("catalogue: {} rows run on kind, {} skipped (absent actors: {})", total.0, total.1, absent.join(", "));
    }
}
