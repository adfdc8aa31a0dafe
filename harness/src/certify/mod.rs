//! `kproof certify reservedfor`: certifies an integrator's workload controller against the
//! ReservedFor contract (obligations C1–C18, `suites/certify/reservedfor.yaml`).
//!
//! The fake API server runs with RBAC and the profile's DRA gates, serving TCP; the reference
//! DRA components (scheduler, kubelet, resourceclaim and podgroupprotection controllers, DRA
//! driver) run in this process. Every scenario of the contract ([`contract`]) gets its own
//! namespace, its own fresh controller process (a child with a kubeconfig for the identity
//! `system:serviceaccount:<namespace>:kproof-controller`, bound to the integrator's Roles in that
//! namespace only), and runs side by side with the others. A scenario needing the profile's
//! gate off at the API server gets a second server. Each obligation's verdict comes from the
//! scenarios naming it ([`report`]).

pub mod contract;
pub mod controller;
pub mod report;

pub use contract::{CertProfile, Contract, ContractError, Scenario, Workload};
pub use report::{Certificate, ObligationVerdict, ScenarioResult, Verdict};

use crate::actors::{ActorFactory, ActorSet, start_actors};
use crate::engine::runner::{NoKnobs, RowContext, execute, timeline_line};
use crate::suite::{ActorName, DraComponent, DraNeeds, Needs};
use fake_apiserver::{ApiServer, Config, TcpServer, UserInfo};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The service account name the controller runs as, in each scenario's namespace.
pub const CONTROLLER_ACCOUNT: &str = "kproof-controller";
/// The claim (raw) and claim template (pg, w) each scenario namespace starts with.
pub const SHARED_CLAIM: &str = "kproof-shared";

/// What to certify and how.
#[derive(Debug, Clone)]
pub struct CertifyOptions {
    /// The profile to certify in (`pg`, `raw` or `w`).
    pub profile: CertProfile,
    /// CRD manifests of the workload kind(s).
    pub crds: Vec<PathBuf>,
    /// The workload manifest.
    pub workload: PathBuf,
    /// Dotted path of the replica count in the workload.
    pub replicas_path: String,
    /// Roles and ClusterRoles the controller runs with (bound in each scenario's namespace).
    pub rbac: Vec<PathBuf>,
    /// Only these obligations (empty: all).
    pub obligations: Vec<String>,
    /// Where the certificate, JUnit, Markdown report and controller logs go.
    pub report_dir: PathBuf,
    /// The controller command.
    pub command: Vec<String>,
    /// T_release: how long the controller may take to release after the last pod.
    pub release: Duration,
    /// How long slowly terminating pods take to stop.
    pub grace: Duration,
    /// The longest a scenario may take (a hung controller ends here).
    pub scenario_timeout: Duration,
    /// Default timeout of `eventually`.
    pub wait_timeout: Duration,
    /// A contract file instead of the embedded one.
    pub contract: Option<PathBuf>,
}

/// A certification that could not run (bad input, no server).
#[derive(Debug, thiserror::Error)]
pub enum CertifyError {
    /// The contract or an input file.
    #[error(transparent)]
    Contract(#[from] ContractError),
    /// Setting up the cluster or the report directory.
    #[error("{0}")]
    Setup(String),
}

/// One API server with the reference DRA components.
struct Cluster {
    server: ApiServer,
    tcp: TcpServer,
    _actors: ActorSet,
}

/// Extra nodes so that every scenario's claim finds a device (8 per node).
const CERTIFY_NODES: &str = include_str!("../../../fixtures/certify/nodes.yaml");
const DEVICE_CLASS: &str = include_str!("../../../fixtures/dra/deviceclass.yaml");

fn dra_factories() -> Vec<Arc<dyn ActorFactory>> {
    let wanted = [
        ActorName::Scheduler,
        ActorName::Kubelet,
        ActorName::ResourceClaimController,
        ActorName::PodGroupProtection,
        ActorName::DraDriver,
    ];
    crate::actors::reference_actors().into_iter().filter(|f| wanted.contains(&f.name())).collect()
}

async fn create(client: &kube::Client, obj: &Value, namespace: Option<&str>) -> Result<(), String> {
    let (api_version, kind) =
        (obj["apiVersion"].as_str().unwrap_or_default(), obj["kind"].as_str().unwrap_or_default());
    let gvk = match api_version.split_once('/') {
        Some((g, v)) => kube::core::GroupVersionKind::gvk(g, v, kind),
        None => kube::core::GroupVersionKind::gvk("", api_version, kind),
    };
    let discovery = kube::Discovery::new(client.clone()).run_aggregated().await.map_err(|e| e.to_string())?;
    let (ar, _) =
        discovery.resolve_gvk(&gvk).ok_or_else(|| format!("the server does not serve {api_version} {kind}"))?;
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    let mut o: DynamicObject = serde_json::from_value(obj.clone()).map_err(|e| e.to_string())?;
    o.metadata.namespace = namespace.map(str::to_string);
    api.create(&PostParams::default(), &o)
        .await
        .map(drop)
        .map_err(|e| format!("creating {kind} {}: {e}", obj["metadata"]["name"].as_str().unwrap_or_default()))
}

impl Cluster {
    async fn start(
        profile: CertProfile,
        gate_off: bool,
        crds: &[Value],
        cluster_roles: &[Value],
    ) -> Result<Self, String> {
        let needs = Needs {
            dra: DraNeeds {
                profile: Some(profile.dra()),
                gates_off: if gate_off { vec![DraComponent::KubeApiserver] } else { Vec::new() },
                unknown_entries: None,
            },
            ..Default::default()
        };
        let gates = needs.dra.config(DraComponent::KubeApiserver).gates.settings();
        let feature_gates = fake_apiserver::FeatureGates::parse(&gates).map_err(|e| format!("{gates:?}: {e}"))?;
        let server = ApiServer::new(Config { rbac: true, feature_gates, ..Config::default() });
        let tcp = server
            .serve_tcp(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .map_err(|e| format!("cannot listen on loopback: {e}"))?;
        let admin = server.client_as("kproof");
        for doc in serde_saphyr::from_multiple::<Value>(DEVICE_CLASS).map_err(|e| e.to_string())? {
            create(&admin, &doc, None).await?;
        }
        for crd in crds {
            create(&admin, crd, None).await?;
        }
        for role in cluster_roles {
            create(&admin, role, None).await?;
        }
        let actors = start_actors(
            &dra_factories(),
            |name| server.controller_client(name.as_str()),
            server.clock(),
            &needs,
            &controllers::sim::SimNetwork::new(),
        )
        .await?;
        let nodes = controllers::sim::parse_nodes(CERTIFY_NODES).map_err(|e| format!("certify nodes: {e}"))?;
        controllers::sim::register_nodes(&server.client_as("kubelet"), &server.clock(), &nodes)
            .await
            .map_err(|e| format!("registering nodes: {e}"))?;
        Ok(Self { server, tcp, _actors: actors })
    }
}

/// Everything a scenario needs that the run prepared.
struct Prepared {
    profile: CertProfile,
    workload: Workload,
    roles: Vec<Value>,
    cluster_roles: Vec<Value>,
    opts: CertifyOptions,
}

/// Runs the certification; `Ok` holds the certificate whatever the verdicts.
pub fn certify(opts: CertifyOptions) -> Result<Certificate, CertifyError> {
    let contract = match &opts.contract {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| ContractError::Input { path: p.clone(), message: e.to_string() })?;
            Contract::parse(&text, &p.display().to_string())?
        }
        None => Contract::reservedfor()?,
    };
    for o in &opts.obligations {
        if !contract.obligations.iter().any(|k| &k.id == o) {
            return Err(CertifyError::Setup(format!("--obligation {o}: no such obligation (C1 … C18)")));
        }
    }
    if opts.command.is_empty() {
        return Err(CertifyError::Setup("no controller command after `--`".into()));
    }
    let mut crds = Vec::new();
    for p in &opts.crds {
        for doc in contract::read_objects(p)? {
            if doc["kind"] != "CustomResourceDefinition" {
                return Err(ContractError::Input {
                    path: p.clone(),
                    message: format!("{} is not a CustomResourceDefinition", doc["kind"]),
                }
                .into());
            }
            crds.push(doc);
        }
    }
    let workload = Workload::load(&opts.workload, &opts.replicas_path, &crds)?;
    let (mut roles, mut cluster_roles) = (Vec::new(), Vec::new());
    for p in &opts.rbac {
        for doc in contract::read_objects(p)? {
            match doc["kind"].as_str() {
                Some("Role") => roles.push(doc),
                Some("ClusterRole") => cluster_roles.push(doc),
                other => {
                    return Err(ContractError::Input {
                        path: p.clone(),
                        message: format!(
                            "{} given: --rbac takes Roles and ClusterRoles; kproof binds them to the controller's identity in each scenario's namespace",
                            other.unwrap_or("an object without kind")
                        ),
                    }
                    .into());
                }
            }
        }
    }
    std::fs::create_dir_all(opts.report_dir.join("scenarios"))
        .map_err(|e| CertifyError::Setup(format!("cannot create {}: {e}", opts.report_dir.display())))?;
    let selected: Vec<&Scenario> = contract
        .scenarios
        .iter()
        .filter(|s| s.profiles.contains(&opts.profile))
        .filter(|s| opts.obligations.is_empty() || s.obligations.iter().any(|o| opts.obligations.contains(o)))
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CertifyError::Setup(format!("cannot start a runtime: {e}")))?;
    controller::install_cleanup(runtime.handle());
    let started_at = jiff::Timestamp::now().to_string();
    let wall = std::time::Instant::now();
    let prepared = Arc::new(Prepared { profile: opts.profile, workload, roles, cluster_roles, opts: opts.clone() });
    let results = runtime.block_on(async {
        let main =
            Cluster::start(opts.profile, false, &crds, &prepared.cluster_roles).await.map_err(CertifyError::Setup)?;
        let main = Arc::new(main);
        let gate_off = if selected.iter().any(|s| s.apiserver_gate_off) {
            Some(Arc::new(
                Cluster::start(opts.profile, true, &crds, &prepared.cluster_roles)
                    .await
                    .map_err(CertifyError::Setup)?,
            ))
        } else {
            None
        };
        let run = |i: usize, s: &Scenario| {
            let cluster =
                if s.apiserver_gate_off { gate_off.clone().unwrap_or_else(|| main.clone()) } else { main.clone() };
            let prepared = prepared.clone();
            let scenario = s.clone();
            async move { (i, run_scenario(&cluster, &scenario, i, &prepared).await) }
        };
        // Side by side, then the heavy ones alone, one after the other.
        let together = selected.iter().enumerate().filter(|(_, s)| !s.run_alone).map(|(i, s)| run(i, s));
        let mut results = futures::future::join_all(together).await;
        for (i, s) in selected.iter().enumerate().filter(|(_, s)| s.run_alone) {
            results.push(run(i, s).await);
        }
        results.sort_by_key(|(i, _)| *i);
        Ok::<_, CertifyError>(results.into_iter().map(|(_, r)| r).collect())
    })?;
    let wall_ms = wall.elapsed().as_millis() as u64;
    Ok(report::certificate(&contract, &opts, &prepared.workload, results, started_at, wall_ms))
}

/// A namespace name for scenario `i`.
fn namespace_for(i: usize, id: &str) -> String {
    let mut ns = format!("kproof-{i:02}-{id}");
    ns.truncate(63);
    ns.trim_end_matches('-').to_string()
}

fn scenario_drops_from(role: &Value, drop: &[String]) -> bool {
    !drop.is_empty() && without_resources(role, drop) != *role
}

/// `role` without the resources in `drop` (rules left with no resource go).
fn without_resources(role: &Value, drop: &[String]) -> Value {
    let mut role = role.clone();
    if drop.is_empty() {
        return role;
    }
    if let Some(rules) = role["rules"].as_array_mut() {
        for rule in rules.iter_mut() {
            if let Some(resources) = rule["resources"].as_array_mut() {
                resources.retain(|r| !r.as_str().is_some_and(|r| drop.iter().any(|d| d == r)));
            }
        }
        rules.retain(|rule| rule["resources"].as_array().is_none_or(|r| !r.is_empty()));
    }
    role
}

async fn prepare_namespace(cluster: &Cluster, ns: &str, p: &Prepared, drop: &[String]) -> Result<(), String> {
    let admin = cluster.server.client_as("kproof");
    create(&admin, &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}), None).await?;
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": CONTROLLER_ACCOUNT}});
    create(&admin, &sa, Some(ns)).await?;
    let subject = json!([{"kind": "ServiceAccount", "name": CONTROLLER_ACCOUNT, "namespace": ns}]);
    let bind = |kind: &str, name: &str| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": format!("{CONTROLLER_ACCOUNT}-{}-{name}", kind.to_lowercase())},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
               "subjects": subject})
    };
    for role in &p.roles {
        create(&admin, &without_resources(role, drop), Some(ns)).await?;
        create(&admin, &bind("Role", role["metadata"]["name"].as_str().unwrap_or_default()), Some(ns)).await?;
    }
    for role in &p.cluster_roles {
        if !scenario_drops_from(role, drop) {
            create(&admin, &bind("ClusterRole", role["metadata"]["name"].as_str().unwrap_or_default()), Some(ns))
                .await?;
            continue;
        }
        // A ClusterRole is shared: the reduced copy is a Role of this namespace.
        let mut reduced = without_resources(role, drop);
        reduced["kind"] = json!("Role");
        create(&admin, &reduced, Some(ns)).await?;
        create(&admin, &bind("Role", role["metadata"]["name"].as_str().unwrap_or_default()), Some(ns)).await?;
    }
    let request = json!({"devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": "dev.kproof.dev"}}]}});
    let labels = json!({"kproof.dev/claim": "shared"});
    match p.profile {
        CertProfile::Raw => {
            let claim = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                               "metadata": {"name": SHARED_CLAIM, "labels": labels}, "spec": request});
            create(&admin, &claim, Some(ns)).await?;
        }
        // pg: the template of the PodGroup's claim; w: the template the controller makes its
        // claim from (it sets spec.reservedFor at create, so it creates the claim itself).
        CertProfile::Pg | CertProfile::W => {
            let template = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                                  "metadata": {"name": SHARED_CLAIM},
                                  "spec": {"metadata": {"labels": labels}, "spec": request}});
            create(&admin, &template, Some(ns)).await?;
        }
    }
    Ok(())
}

async fn run_scenario(cluster: &Cluster, scenario: &Scenario, i: usize, p: &Prepared) -> ScenarioResult {
    let ns = namespace_for(i, &scenario.id);
    let user = UserInfo::service_account(&ns, CONTROLLER_ACCOUNT);
    let bindings = contract::Bindings {
        controller_user: user.name.clone(),
        release: crate::suite::format_duration(p.opts.release),
        grace: crate::suite::format_duration(p.opts.grace),
    };
    let wall = std::time::Instant::now();
    let mut result = ScenarioResult::new(scenario, &ns);
    let row = match scenario.row(&p.workload, &bindings) {
        Ok(r) => r,
        Err(e) => return result.failed(format!("the scenario does not expand: {e}"), None, Vec::new()),
    };
    if let Err(e) = prepare_namespace(cluster, &ns, p, &scenario.drop_resources).await {
        return result.failed(format!("cannot prepare namespace {ns}: {e}"), None, Vec::new());
    }
    let dir = p.opts.report_dir.join("scenarios").join(&scenario.id);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return result.failed(format!("cannot create {}: {e}", dir.display()), None, Vec::new());
    }
    for c in &scenario.inject_conflicts {
        cluster.server.inject_conflicts(c.fault(&p.workload, &user.name, &ns));
    }
    if let Some(lag) = &scenario.inject_watch_lag {
        match lag.fault(&user.name, &ns) {
            Ok(l) => cluster.server.inject_watch_lag(l),
            Err(e) => return result.failed(format!("the scenario does not expand: {e}"), None, Vec::new()),
        }
    }
    let token = cluster.server.issue_token(user.clone());
    let kubeconfig =
        cluster.tcp.kubeconfig_with_token(&token).replace("namespace: default", &format!("namespace: {ns}"));
    let kubeconfig_path = dir.join("kubeconfig");
    if let Err(e) = std::fs::write(&kubeconfig_path, kubeconfig) {
        return result.failed(format!("cannot write {}: {e}", kubeconfig_path.display()), None, Vec::new());
    }
    let env = vec![
        ("KUBECONFIG".to_string(), kubeconfig_path.display().to_string()),
        ("KPROOF_NAMESPACE".to_string(), ns.clone()),
        ("WATCH_NAMESPACE".to_string(), ns.clone()),
        ("POD_NAMESPACE".to_string(), ns.clone()),
        ("KPROOF_PROFILE".to_string(), p.profile.as_str().to_string()),
    ];
    let log = dir.join("controller.log");
    result.log = Some(log.display().to_string());
    let mut process = match controller::ControllerProcess::start(&p.opts.command, &env, &log) {
        Ok(c) => c,
        Err(e) => return result.failed(format!("the controller did not start: {e}"), None, Vec::new()),
    };
    let ctx = RowContext {
        client: cluster.server.client_as("kproof"),
        namespace: ns.clone(),
        timeline: Arc::new(crate::backend::in_process::ServerTimeline::of_namespace(cluster.server.clone(), &ns)),
        knobs: Arc::new(NoKnobs(
            "certification scenarios mark pods with sim.kproof.dev annotations instead of turning knobs",
        )),
        fixtures_dir: PathBuf::from("."),
        default_timeout: p.opts.wait_timeout,
        poll: Duration::from_millis(200),
        started: tokio::time::Instant::now(),
        exchanges: Default::default(),
        evidence: Default::default(),
        facts: Default::default(),
    };
    let suite = crate::suite::Suite {
        suite: "certify".into(),
        title: "ReservedFor contract".into(),
        fixtures: Vec::new(),
        rows: Vec::new(),
    };
    let outcome: Result<(), (String, Option<String>)> = tokio::select! {
        r = execute(&ctx, &suite, &row) => r.map_err(|f| (f.summary, Some(f.message))),
        status = process.exited() => Err((format!("the controller exited ({status}) while the scenario ran"), None)),
        () = tokio::time::sleep(p.opts.scenario_timeout) => Err((format!(
            "the scenario did not finish within {} (is the controller hanging?)",
            crate::suite::format_duration(p.opts.scenario_timeout)
        ), None)),
    };
    let log_path = process.log().to_path_buf();
    let exit = process.stop(Duration::from_secs(2)).await;
    result.wall_ms = wall.elapsed().as_millis() as u64;
    match outcome {
        Ok(()) => {
            result.outcome = Verdict::Pass;
            result
        }
        Err((summary, detail)) => {
            let mut evidence = evidence(&ctx, &user.name).await;
            if let controller::Exit::Exited(status) = exit {
                evidence.push(format!("controller exit status: {status}"));
            }
            evidence.push("controller log (last lines):".into());
            evidence.extend(controller::tail(&log_path, 30).into_iter().map(|l| {
                let mut line: String = l.chars().take(400).collect();
                if line.len() < l.len() {
                    line.push('…');
                }
                format!("  {line}")
            }));
            let summary = if evidence_without_writes(&ctx, &user.name) {
                format!(
                    "{summary} (the controller made no write in this scenario: did it start, and does it watch namespace {ns}?)"
                )
            } else {
                summary
            };
            result.failed(summary, detail, evidence)
        }
    }
}

fn evidence_without_writes(ctx: &RowContext, user: &str) -> bool {
    !ctx.timeline.entries().iter().any(|w| w.meta["user"] == user)
}

/// The writes of the controller, every claim write, and the states of the objects a reader
/// needs to understand a failure.
async fn evidence(ctx: &RowContext, user: &str) -> Vec<String> {
    let mut out = vec!["writes in the namespace (controller's and claims'):".to_string()];
    for w in ctx.timeline.entries().iter() {
        let (m, o) = (&w.meta, w.object());
        let by_controller = m["user"] == user;
        if by_controller || m["kind"] == "ResourceClaim" {
            let mut line = timeline_line(m).trim_end().to_string();
            if by_controller {
                // The user agent may be empty (kube-rs sends none); the identity is what counts.
                line.push_str(&format!(" [controller {user}]"));
            }
            if m["kind"] == "ResourceClaim" {
                line.push_str(&format!(" reservedFor={}", compact(&o["status"]["reservedFor"])));
            }
            out.push(line);
        }
    }
    out.push("objects at the end:".into());
    let discovery = kube::Discovery::new(ctx.client.clone()).run_aggregated().await;
    let list = |api_version: &str, kind: &str| {
        let gvk = match api_version.split_once('/') {
            Some((g, v)) => kube::core::GroupVersionKind::gvk(g, v, kind),
            None => kube::core::GroupVersionKind::gvk("", api_version, kind),
        };
        discovery.as_ref().ok().and_then(|d| d.resolve_gvk(&gvk)).map(|(ar, _)| ar)
    };
    for (api_version, kind) in
        [("resource.k8s.io/v1", "ResourceClaim"), ("scheduling.k8s.io/v1beta1", "PodGroup"), ("v1", "Pod")]
    {
        let Some(ar) = list(api_version, kind) else { continue };
        let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), &ctx.namespace, &ar);
        let Ok(items) = api.list(&ListParams::default()).await else { continue };
        for o in items.items {
            let v = serde_json::to_value(&o).unwrap_or(Value::Null);
            let name = o.metadata.name.clone().unwrap_or_default();
            let deleting = if o.metadata.deletion_timestamp.is_some() { " (terminating)" } else { "" };
            let line = match kind {
                "ResourceClaim" => format!(
                    "  ResourceClaim {name}{deleting}: allocated={} reservedFor={} finalizers={}",
                    !v["status"]["allocation"].is_null(),
                    compact(&v["status"]["reservedFor"]),
                    compact(&v["metadata"]["finalizers"])
                ),
                "PodGroup" => format!(
                    "  PodGroup {name}{deleting} uid={} finalizers={}",
                    v["metadata"]["uid"],
                    compact(&v["metadata"]["finalizers"])
                ),
                _ => format!("  Pod {name}{deleting}: phase={}", v["status"]["phase"].as_str().unwrap_or("-")),
            };
            out.push(line);
        }
    }
    out
}

fn compact(v: &Value) -> String {
    if v.is_null() { "[]".into() } else { v.to_string() }
}
