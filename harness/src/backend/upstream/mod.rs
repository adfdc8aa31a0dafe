//! The upstream backend: the same rows against real components built from their Go modules —
//! etcd, kube-apiserver, kube-controller-manager and kube-scheduler (Kubernetes 1.37), the KubeRay
//! operator and Kueue — run as local processes ([`plane`]). Only the kubelet (and the nodes it
//! registers, with their leases) is simulated, by kproof's own actor running against the real
//! API server. Rows run in real time, each in a namespace of its own, like the kubeconfig
//! backend; the report names every component and its version.

pub mod build;
pub mod install;
pub mod knobs;
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
    client_as(kubeconfig, None).await
}

/// [`client_from`], sending `user_agent` (which the audit log records for each write) when given.
pub async fn client_as(kubeconfig: &Path, user_agent: Option<&str>) -> Result<kube::Client, String> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig)
        .map_err(|e| format!("cannot read kubeconfig {}: {e}", kubeconfig.display()))?;
    let mut config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .map_err(|e| format!("bad kubeconfig {}: {e}", kubeconfig.display()))?;
    if let Some(agent) = user_agent {
        let value = http::HeaderValue::from_str(agent).map_err(|e| format!("user agent {agent:?}: {e}"))?;
        config.headers.push((http::header::USER_AGENT, value));
    }
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
    /// The Kueue runs PR 11264's RayService upgrade gate (asked at start).
    kueue_rayservice_upgrade_gate: bool,
    /// kube-apiserver's audit log, on a plane for rows that need `write-actors`.
    audit: Option<Arc<crate::backend::audit::AuditLog>>,
    components: BTreeMap<String, String>,
    kubeconfig: PathBuf,
    run_dir: PathBuf,
    started_in: std::time::Duration,
    plane: Arc<parking_lot::Mutex<Option<ControlPlane>>>,
    /// What this plane runs with: its DRA gates and its components' settings.
    variant: Variant,
    /// How a plane of another variant starts (this plane's options, without the operators).
    variant_opts: PlaneOptions,
    /// Planes started for rows whose settings this one does not run with (DRA gates off in some
    /// components, KubeRay's environment or feature gates, the simulated components' settings),
    /// one per variant and pair of operators (KubeRay, Kueue) it runs, started on its first row
    /// and stopped with this one.
    variants: parking_lot::Mutex<BTreeMap<(Variant, bool, bool), Arc<UpstreamBackend>>>,
    /// This plane was started for one row that turns knobs, and is stopped after it.
    row_plane: bool,
}

/// What a row needs its plane to run with, beyond what rows set in their own namespace: the
/// components that run with `DRAWorkloadResourceClaims` off, the operators it runs, and the
/// components' settings and feature gates. Rows of one variant share its plane.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Variant {
    /// Sorted, without duplicates.
    gates_off: Vec<DraComponent>,
    /// `needs.settings` and `needs.featureGates` as JSON (`[{},{}]` when none).
    settings: String,
    /// kube-apiserver writes its audit log (the row needs `write-actors`).
    audit: bool,
}

impl Variant {
    fn of(needs: &Needs) -> Self {
        let mut gates_off = needs.dra.gates_off.clone();
        gates_off.sort();
        gates_off.dedup();
        let settings = serde_json::to_string(&(&needs.settings, &needs.feature_gates)).unwrap_or_default();
        let audit = needs.capabilities.contains(&Capability::WriteActors);
        Self { gates_off, settings, audit }
    }
}

/// A row's settings as the plane's options make them: KubeRay's environment and
/// `--feature-gates`, kube-apiserver's (and kcm's and the scheduler's) feature gates, and the DRA
/// gates turned off per component. The simulated components take theirs from the row's needs.
fn plane_options_for(base: &PlaneOptions, needs: &Needs) -> PlaneOptions {
    let mut opts = base.clone();
    opts.dra_gates_off = Variant::of(needs).gates_off;
    let settings = &needs.settings.kuberay;
    opts.kuberay_env = settings.environment().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    if !needs.feature_gates.kuberay.is_empty() {
        // After the plane's own (`--ray-operator-feature-gates`): the operator takes the last value.
        let row = controllers::kuberay::feature_gates_flag(&needs.feature_gates.kuberay);
        opts.kuberay_feature_gates = Some(match opts.kuberay_feature_gates.take() {
            Some(base) => format!("{base},{row}"),
            None => row,
        });
    }
    for (gate, on) in &needs.feature_gates.apiserver {
        opts.feature_gates.retain(|g| g.split_once('=').map(|(n, _)| n) != Some(gate.as_str()));
        opts.feature_gates.push(format!("{gate}={on}"));
    }
    opts.gateway_api = needs.settings.gateway.installed.unwrap_or(true);
    opts.audit = needs.capabilities.contains(&Capability::WriteActors);
    opts.kuberay = needs.capabilities.contains(&Capability::Actor(ActorName::Kuberay));
    opts.kueue = needs.capabilities.contains(&Capability::Actor(ActorName::Kueue));
    opts
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
    pub fn start(opts: PlaneOptions) -> Result<Self, PlaneError> {
        Self::start_for(opts, &Needs::default())
    }

    /// [`UpstreamBackend::start`] for the rows of one variant: the simulated components run
    /// with `needs.settings` (the kubelet's node pool and delays, the Ray heads', the
    /// autoscaler's and the gateway's settings).
    fn start_for(mut opts: PlaneOptions, needs: &Needs) -> Result<Self, PlaneError> {
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
        let mut variant = Variant::of(needs);
        // `needs` carries no capabilities here: the plane's own options say what it runs with.
        variant.audit = opts.audit;
        variant.gates_off = opts.dra_gates_off.clone();
        variant.gates_off.sort();
        variant.gates_off.dedup();
        let variant_opts = PlaneOptions {
            run_dir: None,
            kueue: false,
            kuberay: false,
            dra_gates_off: Vec::new(),
            http_proxy: None,
            kuberay_env: Vec::new(),
            ..opts.clone()
        };
        let proxy_task = crate::actors::Task(proxy.1);
        let gateway_api = opts.gateway_api;
        let (plane, client, sims) = runtime.block_on(async {
            let plane = ControlPlane::start(opts).await?;
            let client = client_from(&plane.kubeconfig)
                .await
                .map_err(|message| PlaneError::Api { what: "building the harness's client".into(), message })?;
            let mut factories: Vec<Arc<dyn ActorFactory>> = vec![
                Arc::new(KubeletFactory::with_node_leases().with_fixed_dra(crate::suite::DraNeeds {
                    profile: Some(DraProfile::Podgroup),
                    gates_off: kubelet_gates_off.clone(),
                    ..Default::default()
                })),
                Arc::new(DraDriverFactory),
                Arc::new(RayHeadFactory),
                Arc::new(AutoscalerFactory),
            ];
            // Without the Gateway API there is no gateway to simulate, nor traffic through it.
            if gateway_api {
                factories.push(Arc::new(GatewayFactory::with_installed_crds()));
                factories.push(Arc::new(TrafficFactory));
            }
            // Each simulated component writes with its name as user agent, as on the fake backend.
            let mut clients = BTreeMap::new();
            for name in factories.iter().map(|f| f.name()) {
                let own = client_as(&plane.kubeconfig, Some(name.as_str()))
                    .await
                    .map_err(|message| PlaneError::Api { what: format!("building {name}'s client"), message })?;
                clients.insert(name, own);
            }
            let client_for = |name: ActorName| clients.get(&name).cloned().unwrap_or_else(|| client.clone());
            let sims = start_actors(&factories, client_for, controllers::Clock::system(), needs, &network)
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
        let kueue_rayservice_upgrade_gate = plane.kueue_rayservice_upgrade_gate;
        let audit = plane.audit_log.clone().map(|log| Arc::new(crate::backend::audit::AuditLog::new(log)));
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
            kueue_rayservice_upgrade_gate,
            audit,
            components,
            kubeconfig,
            run_dir,
            started_in,
            plane: Arc::new(parking_lot::Mutex::new(Some(plane))),
            variant,
            variant_opts,
            variants: parking_lot::Mutex::new(BTreeMap::new()),
            row_plane: false,
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

    /// The plane for rows of `needs`' variant, started on first use (about as long as this one
    /// took); the row's settings go to the operator's environment and flags and to the simulated
    /// components.
    fn variant(&self, needs: &Needs) -> Result<Arc<UpstreamBackend>, String> {
        let opts = plane_options_for(&self.variant_opts, needs);
        let key = (Variant::of(needs), opts.kuberay, opts.kueue);
        let mut variants = self.variants.lock();
        if let Some(v) = variants.get(&key) {
            return Ok(v.clone());
        }
        let mut what: Vec<String> = Vec::new();
        if !key.0.gates_off.is_empty() {
            let names: Vec<&str> = key.0.gates_off.iter().map(|c| c.as_str()).collect();
            what.push(format!("DRAWorkloadResourceClaims off in {}", names.join(", ")));
        }
        if !needs.settings.is_empty() || !needs.feature_gates.is_empty() {
            what.push(format!("the row's settings {}", key.0.settings));
        }
        if key.0.audit {
            what.push("kube-apiserver's audit log (write-actors)".to_string());
        }
        let what = what.join(" and ");
        eprintln!("kproof: starting a second control plane with {what} ...");
        let row_needs = Needs { capabilities: Vec::new(), ..needs.clone() };
        let started = UpstreamBackend::start_for(opts, &row_needs)
            .map_err(|e| format!("the control plane with {what} did not start: {e}"))?;
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
        // Rows that turn the `podgroup` gate off in some components, or set the components'
        // settings and feature gates, run on a plane of their own (see `unmet_settings`).
        c.insert(Capability::DraGateSkew);
        c.insert(Capability::ControllerSettings);
        // Knob steps turn the simulated actors' knobs and stop, freeze or restart the real
        // operators' processes (`turns_knobs_of`, `knobs::PlaneKnobs`).
        c.insert(Capability::Knobs);
        // Rows that need each write's verb and writer run on a plane whose kube-apiserver writes
        // its audit log (`Variant::audit`, `backend::audit`).
        c.insert(Capability::WriteActors);
        if self.kueue_rayservice_upgrade_gate {
            c.insert(Capability::KueueRayServiceUpgradeGate);
        }
        c
    }

    fn unmet_settings(&self, needs: &Needs) -> Vec<String> {
        let mut unmet = Vec::new();
        // A real operator stamps the version it was built as.
        if needs.settings.kuberay.version.is_some() {
            unmet.push("the KubeRay operator's version as a setting (needs.settings.kuberay.version)".to_string());
        }
        // kube-controller-manager 1.37 keeps unknown entries; the older rule is another release.
        if needs.dra.unknown_entries.is_some_and(|u| u != controllers::dra::UnknownEntries::Keep) {
            unmet.push(crate::backend::UNKNOWN_ENTRY_RULE.to_string());
        }
        unmet
    }

    fn turns_knobs_of(&self, actor: ActorName) -> bool {
        // The simulated actors run in this process; the real operators' processes stop, freeze
        // and restart (`knobs::PlaneKnobs`).
        self.sims.names().contains(&actor)
            || actor == ActorName::KubeApiserver
            || (knobs::process_of(actor).is_some() && self.actors.contains(&actor))
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
        // Knobs turn the simulated components every row of a plane shares, and stay turned: a
        // row that turns them runs on a plane of its own, stopped after it.
        let turns_knobs = row.steps.iter().any(|s| matches!(s, crate::suite::Step::Knob { .. }));
        if turns_knobs && !self.row_plane {
            let plane = plane_options_for(&self.variant_opts, &row.needs);
            let sims = Needs { capabilities: Vec::new(), ..row.needs.clone() };
            return match UpstreamBackend::start_for(plane, &sims) {
                Ok(mut own) => {
                    own.row_plane = true;
                    let r = own.run_row(suite, row, opts);
                    for killed in own.stop() {
                        tracing::warn!(row = %row.id, "{killed} of the row's own plane had to be killed");
                    }
                    r
                }
                Err(e) => {
                    let why = format!("the row's own control plane (it turns knobs) did not start: {e}");
                    finish(suite, result, Err(RowFailure::plain(why)), Default::default, opts)
                }
            };
        }
        if Variant::of(&row.needs) != self.variant {
            return match self.variant(&row.needs) {
                Ok(variant) => variant.run_row(suite, row, opts),
                Err(e) => finish(suite, result, Err(RowFailure::plain(e)), Default::default, opts),
            };
        }
        let wall = std::time::Instant::now();
        let (outcome, record, checks) = self.runtime.block_on(async {
            if let Err(down) = self.check() {
                return (Err(RowFailure::plain(format!("the control plane is down: {down}"))), None, Vec::new());
            }
            let knobs = Arc::new(knobs::PlaneKnobs { sims: self.sims.clone(), plane: self.plane.clone() });
            let audit = self.audit.clone();
            let run = OwnNamespace { knobs, wait_for_service_account: true, objects: &self.objects, audit };
            run_in_own_namespace(&self.client, suite, row, opts, run, self.facts(row)).await
        });
        result.checks = checks;
        result.wall_ms = wall.elapsed().as_millis() as u64;
        result.backend_ms = result.wall_ms;
        finish(suite, result, outcome, || record.unwrap_or_default(), opts)
    }
}
