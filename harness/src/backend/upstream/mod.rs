//! The upstream backend: the same rows against real components built from their Go modules —
//! etcd, kube-apiserver, kube-controller-manager and kube-scheduler (Kubernetes 1.37), the KubeRay
//! operator and Kueue — run as local processes ([`plane`]). Only the kubelet (and the nodes it
//! registers, with their leases) is simulated, by kproof's own actor running against the real
//! API server. Rows run in real time, each in a namespace of its own, like the kubeconfig
//! backend; the report names every component and its version.

pub mod build;
pub mod install;
pub mod kueue;
pub mod pki;
pub mod plane;
pub mod process;

pub use build::{Build, BuildError};
pub use plane::{ControlPlane, PlaneError, PlaneOptions};

use crate::actors::{
    ActorFactory, ActorSet, AutoscalerFactory, DraDriverFactory, GatewayFactory, KubeletFactory, RayHeadFactory,
    TrafficFactory, start_actors,
};
use crate::backend::kubeconfig::{OwnNamespace, run_in_own_namespace};
use crate::backend::{Backend, RunOptions, begin, finish};
use crate::engine::runner::RowFailure;
use crate::report::result::RowResult;
use crate::suite::{ActorName, Capability, DraComponent, LoadedSuite, Needs, Row};
use controllers::dra::DraProfile;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A client for the cluster a kubeconfig file names.
pub async fn client_from(kubeconfig: &Path) -> Result<kube::Client, String> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig)
        .map_err(|e| format!("cannot read kubeconfig {}: {e}", kubeconfig.display()))?;
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .map_err(|e| format!("bad kubeconfig {}: {e}", kubeconfig.display()))?;
    kube::Client::try_from(config).map_err(|e| format!("cannot build a client: {e}"))
}

/// Where `upstream/` is: `./upstream` when it exists, else the repository this binary was
/// built from.
pub fn default_upstream_dir() -> PathBuf {
    let here = PathBuf::from("upstream");
    if here.join("build.sh").is_file() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("upstream")
}

/// The upstream backend: a running control plane, the simulated kubelet, and a runtime for both.
pub struct UpstreamBackend {
    runtime: tokio::runtime::Runtime,
    client: kube::Client,
    /// The simulated actors running against the real API server (shared by every row).
    sims: Arc<ActorSet>,
    /// What the rows running now touched outside their namespaces (for their cleanup).
    objects: Arc<crate::engine::cleanup::SharedObjects>,
    /// Serves the simulated network to the operator (its `HTTP_PROXY`).
    _proxy: crate::actors::Task,
    /// The real and simulated actors rows may need.
    actors: BTreeSet<ActorName>,
    components: BTreeMap<String, String>,
    kubeconfig: PathBuf,
    run_dir: PathBuf,
    started_in: std::time::Duration,
    plane: parking_lot::Mutex<Option<ControlPlane>>,
    /// The components this plane runs with `DRAWorkloadResourceClaims` off (sorted).
    gates_off: Vec<DraComponent>,
    /// How a plane with other DRA gates starts (this plane's options, without the operators).
    variant_opts: PlaneOptions,
    /// Planes started for rows that turn the `podgroup` gate off in some components, one per
    /// set of components, started on the first such row and stopped with this one.
    variants: parking_lot::Mutex<BTreeMap<Vec<DraComponent>, Arc<UpstreamBackend>>>,
}

impl UpstreamBackend {
    /// Starts the control plane and the simulated components a real cluster has and this one
    /// lacks: the kubelet (with node leases, so kcm's node lifecycle controller keeps the nodes
    /// Ready), the Ray heads (every RayCluster's dashboard and Serve proxies), the Ray
    /// autoscaler, a Gateway API controller (`kproof.dev/gateway-controller`, on the real
    /// Gateway API CRDs the plane installs) and the gateway data plane (`TrafficProbe`). They
    /// run once, for every row (each row has a namespace of its own; they watch all of them),
    /// with their default settings. The simulated network they share is served on a loopback
    /// port as an HTTP forward proxy, the KubeRay operator's `HTTP_PROXY`, so the real operator
    /// reaches the simulated dashboards (`<head svc>.<ns>.svc.cluster.local:8265`) and Serve
    /// proxies (`<pod IP>:8000`). EndpointSlices are kube-controller-manager's own. Waits until
    /// the nodes are registered.
    pub fn start(mut opts: PlaneOptions) -> Result<Self, PlaneError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|source| PlaneError::Io { path: "tokio runtime".into(), source })?;
        let network = controllers::sim::SimNetwork::new();
        let proxy = runtime.block_on(async {
            let io =
                |source| PlaneError::Io { path: "127.0.0.1:0 (the simulated network's HTTP proxy)".into(), source };
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(io)?;
            let addr = listener.local_addr().map_err(io)?;
            let network = network.clone();
            let task = tokio::spawn(async move {
                if let Err(e) = controllers::sim::serve_http_proxy(listener, network).await {
                    tracing::warn!(error = %e, "the simulated network's HTTP proxy stopped");
                }
            });
            Ok::<_, PlaneError>((addr, task))
        })?;
        opts.http_proxy = Some(proxy.0);
        // The kubelet is kproof's: the plane's gate skew reaches it through its own settings.
        let kubelet_gates_off: Vec<DraComponent> =
            opts.dra_gates_off.iter().copied().filter(|c| *c == DraComponent::Kubelet).collect();
        let mut gates_off = opts.dra_gates_off.clone();
        gates_off.sort();
        gates_off.dedup();
        let variant_opts = PlaneOptions {
            run_dir: None,
            kueue: false,
            kuberay: false,
            dra_gates_off: Vec::new(),
            http_proxy: None,
            ..opts.clone()
        };
        let proxy_task = crate::actors::Task(proxy.1);
        let (plane, client, sims) = runtime.block_on(async {
            let plane = ControlPlane::start(opts).await?;
            let client = client_from(&plane.kubeconfig)
                .await
                .map_err(|message| PlaneError::Api { what: "building the harness's client".into(), message })?;
            let factories: Vec<Arc<dyn ActorFactory>> = vec![
                Arc::new(KubeletFactory::with_node_leases().with_fixed_dra(crate::suite::DraNeeds {
                    profile: Some(DraProfile::Podgroup),
                    gates_off: kubelet_gates_off.clone(),
                    ..Default::default()
                })),
                Arc::new(DraDriverFactory),
                Arc::new(RayHeadFactory),
                Arc::new(AutoscalerFactory),
                Arc::new(GatewayFactory::with_installed_crds()),
                Arc::new(TrafficFactory),
            ];
            let client_for = |_: ActorName| client.clone();
            let sims = start_actors(&factories, client_for, controllers::Clock::system(), &Needs::default(), &network)
                .await
                .map_err(|message| PlaneError::Api { what: "starting the simulated components".into(), message })?;
            wait_for_nodes(&client)
                .await
                .map_err(|message| PlaneError::Api { what: "registering nodes".into(), message })?;
            Ok::<_, PlaneError>((plane, client, sims))
        })?;
        // kube-controller-manager runs the EndpointSlice, resourceclaim, podgroupprotection and
        // device-taint-eviction controllers; kube-scheduler the scheduler.
        let mut actors: BTreeSet<ActorName> = [
            ActorName::Scheduler,
            ActorName::Endpoints,
            ActorName::ResourceClaimController,
            ActorName::PodGroupProtection,
            ActorName::DeviceTaintEviction,
        ]
        .into();
        actors.extend(sims.names());
        if plane.kuberay {
            actors.insert(ActorName::Kuberay);
        }
        if plane.kueue {
            actors.insert(ActorName::Kueue);
        }
        let mut components = plane.components.clone();
        for sim in sims.names() {
            components.insert(sim.to_string(), "kproof simulated".into());
        }
        let kubeconfig = plane.kubeconfig.clone();
        let run_dir = plane.run_dir().to_path_buf();
        let started_in = plane.started_in;
        Ok(Self {
            runtime,
            client,
            sims: Arc::new(sims),
            objects: Default::default(),
            _proxy: proxy_task,
            actors,
            components,
            kubeconfig,
            run_dir,
            started_in,
            plane: parking_lot::Mutex::new(Some(plane)),
            gates_off,
            variant_opts,
            variants: parking_lot::Mutex::new(BTreeMap::new()),
        })
    }

    /// The admin kubeconfig of the running cluster.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The run directory (certificates, etcd data, logs).
    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// How long the control plane took to start, process launch to ready.
    pub fn started_in(&self) -> std::time::Duration {
        self.started_in
    }

    /// `Err` naming the first process of the control plane that exited, with its log.
    pub fn check(&self) -> Result<(), String> {
        match self.plane.lock().as_mut() {
            Some(plane) => plane.check().map_err(|e| e.to_string()),
            None => Err("the control plane was stopped".into()),
        }
    }

    /// Stops the simulated actors and every process; returns the components that had to be killed.
    pub fn stop(self) -> Vec<String> {
        let mut killed = Vec::new();
        for (_, variant) in std::mem::take(&mut *self.variants.lock()) {
            if let Ok(variant) = Arc::try_unwrap(variant) {
                killed.extend(variant.stop());
            }
        }
        let plane = self.plane.lock().take();
        drop(self.sims);
        drop(self._proxy);
        killed.extend(plane.map(ControlPlane::stop).unwrap_or_default());
        killed
    }

    /// The plane whose components in `gates_off` run with `DRAWorkloadResourceClaims` off,
    /// started on first use (about as long as this one took).
    fn variant(&self, gates_off: &[DraComponent]) -> Result<Arc<UpstreamBackend>, String> {
        let mut key = gates_off.to_vec();
        key.sort();
        key.dedup();
        let mut variants = self.variants.lock();
        if let Some(v) = variants.get(&key) {
            return Ok(v.clone());
        }
        let opts = PlaneOptions { dra_gates_off: key.clone(), ..self.variant_opts.clone() };
        let names: Vec<&str> = key.iter().map(|c| c.as_str()).collect();
        eprintln!(
            "kproof: starting a second control plane with DRAWorkloadResourceClaims off in {} ...",
            names.join(", ")
        );
        let started = UpstreamBackend::start(opts).map_err(|e| {
            format!("the control plane with DRAWorkloadResourceClaims off in {} did not start: {e}", names.join(", "))
        })?;
        let started = Arc::new(started);
        variants.insert(key, started.clone());
        Ok(started)
    }
}

/// Waits (up to 60 s) until the simulated kubelet's nodes are registered and Ready.
async fn wait_for_nodes(client: &kube::Client) -> Result<(), String> {
    let api: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(client.clone());
    let any_ready = || async {
        let nodes = api.list(&Default::default()).await.map_err(|e| e.to_string())?;
        Ok(nodes.items.iter().any(|n| {
            n.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        }))
    };
    crate::backend::poll_until(std::time::Duration::from_secs(60), any_ready, || "no Ready node within 60s".into())
        .await
}

impl Backend for UpstreamBackend {
    fn name(&self) -> &str {
        "upstream"
    }

    fn capabilities(&self) -> BTreeSet<Capability> {
        let mut c: BTreeSet<Capability> = [Capability::Timeline].into();
        c.extend(self.actors.iter().map(|a| Capability::Actor(*a)));
        // The plane runs with GenericWorkload and DRAWorkloadResourceClaims on (the `podgroup`
        // profile). `baseline` and `raw` rows use no PodGroup, and for pods without a
        // scheduling group those gates change nothing, so they run here too; `workloads`
        // (KEP-5194, in no upstream build) and gates turned off per row do not.
        c.extend([DraProfile::Baseline, DraProfile::Podgroup, DraProfile::Raw].map(Capability::DraProfile));
        // Rows that turn the `podgroup` gate off in some components run on a plane of their own.
        c.insert(Capability::DraGateSkew);
        c
    }

    fn turns_knobs_of(&self, actor: ActorName) -> bool {
        // The simulated actors run in this process; the operators are the real ones.
        self.sims.names().contains(&actor)
    }

    fn components(&self) -> BTreeMap<String, String> {
        self.components.clone()
    }

    fn version(&self, component: crate::suite::Component) -> Option<crate::suite::Version> {
        let name = match component {
            crate::suite::Component::Kuberay => "kuberay-operator",
            crate::suite::Component::Kueue => "kueue",
            crate::suite::Component::Kubernetes => "kube-apiserver",
        };
        self.components.get(name).and_then(|v| crate::suite::Version::parse(v))
    }

    fn shares_cluster(&self) -> bool {
        true
    }

    fn run_row(&self, suite: &LoadedSuite, row: &Row, opts: &RunOptions) -> RowResult {
        let mut result = match begin(self, suite, row) {
            Ok(r) => r,
            Err(skipped) => return *skipped,
        };
        let mut wanted = row.needs.dra.gates_off.clone();
        wanted.sort();
        wanted.dedup();
        if wanted != self.gates_off {
            return match self.variant(&wanted) {
                Ok(variant) => variant.run_row(suite, row, opts),
                Err(e) => finish(suite, result, Err(RowFailure::plain(e)), Default::default, opts),
            };
        }
        let wall = std::time::Instant::now();
        let (outcome, record, checks) = self.runtime.block_on(async {
            if let Err(down) = self.check() {
                return (Err(RowFailure::plain(format!("the control plane is down: {down}"))), None, Vec::new());
            }
            let run = OwnNamespace { knobs: self.sims.clone(), wait_for_service_account: true, objects: &self.objects };
            run_in_own_namespace(&self.client, suite, row, opts, run, self.facts(row)).await
        });
        result.checks = checks;
        result.wall_ms = wall.elapsed().as_millis() as u64;
        result.backend_ms = result.wall_ms;
        finish(suite, result, outcome, || record.unwrap_or_default(), opts)
    }
}
