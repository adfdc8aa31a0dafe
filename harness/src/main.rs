//! `kproof`: run conformance tables, lint them, print their schema, or serve a fake cluster.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand, ValueEnum};
use kproof::backend::kind::KindOptions;
use kproof::backend::{Backend, KubeconfigBackend, RunOptions};
use kproof::report::events::{JsonReporter, JunitReporter};
use kproof::report::human::HumanReporter;
use kproof::report::{Reporter, RunEvent, RunReport};
use kproof::suite::{ActorName, LoadedSuite};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Conformance tables for the controllers that upgrade and gate ML clusters.
#[derive(Parser, Debug)]
#[command(name = "kproof", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run suite rows on a backend and report.
    Run(Box<RunArgs>),
    /// Check suites offline: unknown fields, bindings used before they are set, duplicate ids.
    Lint(CatalogueArgs),
    /// Print the JSON Schema of the suite format.
    Schema,
    /// Serve a fake cluster on 127.0.0.1 and write a kubeconfig for kubectl.
    Serve(ServeArgs),
    /// Build the upstream components (Kubernetes, etcd, KubeRay, Kueue) from their Go modules.
    Upstream {
        #[command(subcommand)]
        command: UpstreamCommand,
    },
    /// Run a real control plane (the upstream components) on this machine.
    Cluster {
        #[command(subcommand)]
        command: ClusterCommand,
    },
    /// Send one seeded corpus of requests to the fake API server and to a real kube-apiserver
    /// and print how often their answers agree (code, reason, cause types, field paths).
    Differential(DifferentialArgs),
    /// Certify a workload controller against a contract.
    Certify {
        #[command(subcommand)]
        command: CertifyCommand,
    },
    /// The kind backend's installation plan (needs a build with `--features kind`).
    Kind {
        #[command(subcommand)]
        command: KindCommand,
    },
}

#[derive(Subcommand, Debug)]
enum KindCommand {
    /// Print what `--backend kind` installs: node image, components, versions, steps.
    Plan(KindOptions),
    /// Print a bash script that downloads the plan's release files into the directory given
    /// as its argument (run it where GitHub is reachable; pass the directory as --kind-manifests).
    FetchScript(KindOptions),
}

#[derive(Subcommand, Debug)]
enum CertifyCommand {
    /// The ReservedFor contract (obligations C1-C18): a workload controller sharing
    /// ResourceClaims across pods, run as a child process against the fake API server and the
    /// reference DRA components. Exit code 0 only if every applicable obligation passes.
    Reservedfor(Box<ReservedforArgs>),
}

#[derive(clap::Args, Debug)]
struct ReservedforArgs {
    /// pg (PodGroups, KEP-5729), raw (the controller writes its own non-pod entry) or w
    /// (KEP-5194 as proposed).
    #[arg(long)]
    profile: kproof::certify::CertProfile,
    /// CRD manifests of the workload kind (repeatable).
    #[arg(long = "crd", required = true, value_name = "FILE")]
    crds: Vec<PathBuf>,
    /// The workload manifest (one object of the CRD's kind).
    #[arg(long, value_name = "FILE")]
    workload: PathBuf,
    /// Dotted path of the replica count in the workload.
    #[arg(long, default_value = "spec.replicas")]
    replicas_path: String,
    /// Role and ClusterRole manifests the controller runs with (repeatable); each is bound to
    /// the controller's identity in every scenario's namespace.
    #[arg(long = "rbac", value_name = "FILE")]
    rbac: Vec<PathBuf>,
    /// Only these obligations (comma-separated or repeated), e.g. C4,C6.
    #[arg(long = "obligation", value_delimiter = ',', value_name = "ID")]
    obligations: Vec<String>,
    /// Where certificate.json, junit.xml, report.md and the controller logs go.
    #[arg(long, default_value = "target/kproof/certify")]
    report_dir: PathBuf,
    /// T_release: how long the controller may take to release after the last pod.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    t_release: Duration,
    /// How long slowly terminating pods take to stop.
    #[arg(long, default_value = "8s", value_parser = parse_duration)]
    grace: Duration,
    /// The longest one scenario may take; a hung controller fails there.
    #[arg(long, default_value = "90s", value_parser = parse_duration)]
    scenario_timeout: Duration,
    /// Default timeout of a scenario's waits.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    timeout: Duration,
    /// A contract file instead of the built-in one (suites/certify/reservedfor.yaml).
    #[arg(long, value_name = "FILE")]
    contract: Option<PathBuf>,
    /// The controller command, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

#[derive(clap::Args, Debug, Clone)]
struct DifferentialArgs {
    /// The corpus seed (the same seed sends the same requests).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// How many cases (one compared request each).
    #[arg(long, default_value_t = 5000)]
    count: usize,
    /// Compare with the cluster of this kubeconfig instead of starting etcd and kube-apiserver
    /// from the upstream build.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    #[command(flatten)]
    upstream: UpstreamDirArgs,
    /// Write every disagreement (seed, index, request, both answers) to this file.
    #[arg(long)]
    disagreements: Option<PathBuf>,
    /// Exit non-zero when the agreement is below this percentage.
    #[arg(long, default_value_t = 0.0)]
    min_agreement: f64,
}

#[derive(Subcommand, Debug)]
enum UpstreamCommand {
    /// Build what is missing for the pins in upstream/ (cached; the first build takes 15-25
    /// minutes on 2 cores, later ones seconds).
    Build(UpstreamDirArgs),
    /// Print the cache directory of the current pins and what is built there.
    Status(UpstreamDirArgs),
}

#[derive(clap::Args, Debug, Clone)]
struct UpstreamDirArgs {
    /// The folder with the pins and build.sh (default: ./upstream, else the repository's).
    #[arg(long)]
    upstream_dir: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum ClusterCommand {
    /// Start etcd, kube-apiserver, kube-controller-manager, kube-scheduler, Kueue, the KubeRay
    /// operator and the simulated kubelet; write a kubeconfig; stop everything on Ctrl-C.
    Up(ClusterArgs),
    /// Remove the run directories of control planes whose kproof process is gone (their
    /// processes died with it).
    Down,
}

#[derive(clap::Args, Debug, Clone)]
struct ClusterArgs {
    #[command(flatten)]
    plane: PlaneArgs,
    /// Where to write the admin kubeconfig (a copy; the run directory holds the original).
    #[arg(long, default_value = "upstream.kubeconfig")]
    kubeconfig: PathBuf,
}

/// How the upstream control plane is started (`kproof cluster up`, `kproof run --backend upstream`).
#[derive(clap::Args, Debug, Clone)]
struct PlaneArgs {
    #[command(flatten)]
    upstream: UpstreamDirArgs,
    /// Keep the run directory (etcd data, certificates, logs) after stopping.
    #[arg(long)]
    keep_run_dir: bool,
    /// A ray-operator binary to run instead of the built one, as PATH=VERSION (e.g. a local
    /// build of v1.7.0, which the module proxy does not serve).
    #[arg(long, value_name = "PATH=VERSION", value_parser = parse_binary_version)]
    ray_operator: Option<(PathBuf, String)>,
    /// With --ray-operator: the folder of that version's CRDs (`config/crd/bases`), installed
    /// instead of the built version's.
    #[arg(long, value_name = "DIR", requires = "ray_operator")]
    ray_operator_crds: Option<PathBuf>,
    /// Do not start Kueue.
    #[arg(long)]
    no_kueue: bool,
}

fn parse_binary_version(s: &str) -> Result<(PathBuf, String), String> {
    let (p, v) = s.split_once('=').ok_or_else(|| format!("expected PATH=VERSION, got {s:?}"))?;
    Ok((PathBuf::from(p), v.to_string()))
}

/// Starts the upstream backend from the built components, with progress on stderr.
fn start_upstream(args: &PlaneArgs) -> anyhow::Result<kproof::backend::UpstreamBackend> {
    use kproof::backend::upstream;
    let dir = args.upstream.upstream_dir.clone().unwrap_or_else(upstream::default_upstream_dir);
    let build = upstream::build::locate(&dir)?;
    let mut opts = upstream::PlaneOptions::new(build);
    opts.keep_run_dir = args.keep_run_dir;
    opts.ray_operator = args.ray_operator.clone();
    opts.ray_operator_crds = args.ray_operator_crds.clone();
    opts.kueue = !args.no_kueue;
    eprintln!(
        "kproof: starting the upstream control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler{}, the KubeRay operator)...",
        if opts.kueue { ", Kueue" } else { "" }
    );
    let backend = upstream::UpstreamBackend::start(opts).context("the upstream control plane did not start")?;
    eprintln!("kproof: ready in {:.1}s", backend.started_in().as_secs_f64());
    Ok(backend)
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum BackendName {
    /// The in-process fake API server, in virtual time.
    Fake,
    /// Any cluster reached through a kubeconfig, in real time.
    Kubeconfig,
    /// Real Kubernetes 1.37, KubeRay and Kueue built from their Go modules, run on this machine.
    Upstream,
    /// A real kind cluster in Docker with Istio, Gateway API, MetalLB, KubeRay and Kueue
    /// (needs a build with `--features kind` and a Docker daemon).
    Kind,
}

#[derive(clap::Args, Debug)]
struct CatalogueArgs {
    /// Suite files or folders of suite files (default: ./suites, else the repository's).
    #[arg(value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Folder of suite files (the same as giving it as a path).
    #[arg(long)]
    suites: Option<PathBuf>,
    /// Folder of fixtures (default: beside the suites folder).
    #[arg(long)]
    fixtures: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    #[command(flatten)]
    catalogue: CatalogueArgs,
    /// Only these suites (repeatable).
    #[arg(long = "suite", value_name = "NAME")]
    suite_names: Vec<String>,
    /// Only these rows (repeatable).
    #[arg(long = "row", value_name = "ID")]
    row_ids: Vec<String>,
    #[arg(long, value_enum, default_value = "fake")]
    backend: BackendName,
    /// Kubeconfig for `--backend kubeconfig` (default: KUBECONFIG or ~/.kube/config).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// With `--backend kubeconfig`: an actor running in that cluster (repeatable), e.g. `kuberay`
    /// for a real KubeRay operator. `kproof serve` announces its own, so it needs none.
    #[arg(long = "actor", value_name = "NAME")]
    actors: Vec<ActorName>,
    /// Rows run at once (default: the number of cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// On real-time backends (kubeconfig, upstream), keep what each row made (its namespace and
    /// the cluster-scoped objects it created) for debugging; by default it is deleted.
    #[arg(long)]
    keep: bool,
    /// Where the JSON and JUnit reports and the flight records go.
    #[arg(long, default_value = "target/kproof")]
    report_dir: PathBuf,
    /// Default timeout of `eventually`, e.g. 30s.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    timeout: Duration,
    /// With `--backend upstream`: how the control plane is started.
    #[command(flatten)]
    plane: PlaneArgs,
    /// With `--backend kind`: what the cluster runs.
    #[command(flatten)]
    kind: KindOptions,
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// TCP port (0 picks a free one).
    #[arg(long, default_value_t = 6443)]
    port: u16,
    /// Where to write the kubeconfig.
    #[arg(long, default_value = "kproof.kubeconfig")]
    kubeconfig: PathBuf,
    /// Serve the API server alone, without the reference controllers and simulated actors.
    #[arg(long)]
    no_actors: bool,
    /// A component setting, as a row's `needs.settings` gives it (repeatable), written
    /// `COMPONENT.KEY=VALUE`, e.g. `--set kuberay.version=v1.6.0` or
    /// `--set kubelet.startDelay=5s`. The value is read as YAML (`true`, `3`, `v1.6.0`).
    #[arg(long = "set", value_name = "COMPONENT.KEY=VALUE", value_parser = parse_setting)]
    settings: Vec<(String, String, serde_json::Value)>,
    /// Authorize requests with RBAC (the actors keep administrator rights).
    #[arg(long)]
    rbac: bool,
    /// Serve HTTPS with a self-signed certificate the kubeconfigs trust (kubectl sends a
    /// kubeconfig's token only over TLS: identities need it).
    #[arg(long)]
    tls: bool,
    /// An identity and where to write its kubeconfig (repeatable), e.g.
    /// `serviceaccount:team-a/controller=ctl.kubeconfig` or `user:alice:devs=alice.kubeconfig`.
    #[arg(long, value_name = "IDENTITY=PATH")]
    identity: Vec<String>,
}

fn parse_setting(s: &str) -> Result<(String, String, serde_json::Value), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| format!("expected COMPONENT.KEY=VALUE, got {s:?}"))?;
    let (component, key) = k
        .trim()
        .split_once('.')
        .ok_or_else(|| format!("expected COMPONENT.KEY=VALUE (e.g. kuberay.version=v1.6.0), got {s:?}"))?;
    let value = serde_saphyr::from_str::<serde_json::Value>(v).unwrap_or_else(|_| serde_json::Value::String(v.into()));
    Ok((component.to_string(), key.to_string(), value))
}

/// The typed settings `--set` flags stand for; an unknown component or key is an error.
fn settings_from_flags(flags: &[(String, String, serde_json::Value)]) -> anyhow::Result<kproof::suite::Settings> {
    let mut tree = serde_json::Map::new();
    for (component, key, value) in flags {
        let entry = tree.entry(component.clone()).or_insert_with(|| serde_json::json!({}));
        entry[key.as_str()] = value.clone();
    }
    serde_json::from_value(serde_json::Value::Object(tree)).context("--set")
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    kproof::suite::parse_duration(s)
}

/// `./NAME` when it exists, else the repository's (this binary is built from it).
fn default_dir(name: &str) -> PathBuf {
    let here = PathBuf::from(name);
    if here.is_dir() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name)
}

/// The suites named on the command line (paths and `--suites`), else the default folder, and
/// the fixtures folder: `--fixtures`, else a `fixtures/` beside the first suites folder, else
/// the default.
fn load_catalogue(a: &CatalogueArgs) -> anyhow::Result<(Vec<LoadedSuite>, PathBuf, String)> {
    let mut paths = a.paths.clone();
    paths.extend(a.suites.clone());
    if paths.is_empty() {
        paths.push(default_dir("suites"));
    }
    let suites = kproof::suite::load_suite_paths(&paths)?;
    let fixtures = a.fixtures.clone().unwrap_or_else(|| {
        let first = &paths[0];
        let suites_dir = if first.is_dir() { Some(first.as_path()) } else { first.parent() };
        suites_dir
            .and_then(|d| d.parent())
            .map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p })
            .map(|p| p.join("fixtures"))
            .filter(|p| p.is_dir())
            .unwrap_or_else(|| default_dir("fixtures"))
    });
    let shown = paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" ");
    Ok((suites, fixtures, shown))
}

fn main() -> ExitCode {
    match real_main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("kproof: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn real_main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run(*args),
        Command::Lint(args) => {
            let (suites, fixtures_dir, _) = load_catalogue(&args)?;
            let issues = kproof::suite::lint::lint(&suites, &fixtures_dir, &kproof::actors::kind_catalog());
            for i in &issues {
                println!("{i}");
            }
            let rows: usize = suites.iter().map(|s| s.suite.rows.len()).sum();
            let warnings = issues.iter().filter(|i| i.warning).count();
            let errors = issues.len() - warnings;
            println!("{} suites, {rows} rows, {errors} issues, {warnings} warnings", suites.len());
            Ok(if errors == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Command::Schema => {
            println!("{}", serde_json::to_string_pretty(&kproof::suite::lint::json_schema())?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve(args) => serve(args),
        Command::Upstream { command } => upstream_command(command),
        Command::Cluster { command: ClusterCommand::Up(args) } => cluster_up(args),
        Command::Cluster { command: ClusterCommand::Down } => cluster_down(),
        Command::Differential(args) => differential(args),
        Command::Certify { command: CertifyCommand::Reservedfor(args) } => certify_reservedfor(*args),
        Command::Kind { command } => kind_command(command),
    }
}

#[cfg(feature = "kind")]
fn start_kind(opts: &KindOptions) -> anyhow::Result<Box<dyn Backend>> {
    let backend = kproof::backend::kind::KindBackend::start(opts, &|step| eprintln!("kproof kind: {step}"))?;
    Ok(Box::new(backend))
}

#[cfg(not(feature = "kind"))]
fn start_kind(_: &KindOptions) -> anyhow::Result<Box<dyn Backend>> {
    bail!(kproof::backend::kind::NOT_BUILT)
}

#[cfg(feature = "kind")]
fn kind_command(command: KindCommand) -> anyhow::Result<ExitCode> {
    use kproof::backend::kind::InstallPlan;
    match command {
        KindCommand::Plan(opts) => print!("{}", InstallPlan::new(&opts).render()),
        KindCommand::FetchScript(opts) => print!("{}", InstallPlan::new(&opts).fetch_script()),
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(not(feature = "kind"))]
fn kind_command(_: KindCommand) -> anyhow::Result<ExitCode> {
    bail!(kproof::backend::kind::NOT_BUILT)
}

fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let (suites, fixtures_dir, shown) = load_catalogue(&args.catalogue)?;
    let sel = kproof::engine::selection::Selection { suites: args.suite_names.clone(), rows: args.row_ids.clone() };
    let rows = kproof::engine::selection::selected(&suites, &sel);
    if rows.is_empty() {
        bail!("no row matches --suite {:?} --row {:?} in {shown}", args.suite_names, args.row_ids);
    }
    let backend: Box<dyn Backend> = match args.backend {
        BackendName::Fake => Box::new(kproof::backend::InProcessBackend::reference()),
        BackendName::Kubeconfig => Box::new(
            KubeconfigBackend::new(args.kubeconfig.clone())
                .context("cannot start the kubeconfig backend")?
                .with_actors(args.actors.clone()),
        ),
        BackendName::Upstream => Box::new(start_upstream(&args.plane)?),
        BackendName::Kind => start_kind(&args.kind)?,
    };
    let opts = RunOptions {
        fixtures_dir,
        flight_dir: Some(args.report_dir.join("flight")),
        default_timeout: args.timeout,
        keep: args.keep,
        ..Default::default()
    };
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2));
    let mut reporters: Vec<Box<dyn Reporter>> = vec![
        Box::new(HumanReporter::new()),
        Box::new(JsonReporter::new(&args.report_dir)),
        Box::new(JunitReporter::new(&args.report_dir)),
    ];
    let emit = |reporters: &mut Vec<Box<dyn Reporter>>, event: RunEvent<'_>| {
        for r in reporters.iter_mut() {
            if let Err(e) = r.event(&event) {
                eprintln!("kproof: a reporter failed: {e}");
            }
        }
    };
    emit(&mut reporters, RunEvent::Started { backend: backend.name(), rows: rows.len() });
    let started_at = jiff::Timestamp::now().to_string();
    let wall = std::time::Instant::now();
    let shared = std::sync::Mutex::new(reporters);
    let results = kproof::backend::run_rows(backend.as_ref(), &rows, &opts, jobs, &|r| {
        let mut reporters = shared.lock().unwrap_or_else(|e| e.into_inner());
        emit(&mut reporters, RunEvent::RowFinished(r));
    });
    let mut reporters = shared.into_inner().unwrap_or_else(|e| e.into_inner());
    let report = RunReport::new(backend.name(), started_at, wall.elapsed().as_millis() as u64, results)
        .with_components(backend.components());
    emit(&mut reporters, RunEvent::Finished(&report));
    let outputs: Vec<String> = reporters.iter().flat_map(|r| r.outputs()).map(|p| p.display().to_string()).collect();
    if !outputs.is_empty() {
        println!("reports: {}", outputs.join(" "));
    }
    Ok(if kproof::backend::passed(&report.rows) { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn certify_reservedfor(a: ReservedforArgs) -> anyhow::Result<ExitCode> {
    let opts = kproof::certify::CertifyOptions {
        profile: a.profile,
        crds: a.crds,
        workload: a.workload,
        replicas_path: a.replicas_path,
        rbac: a.rbac,
        obligations: a.obligations,
        report_dir: a.report_dir.clone(),
        command: a.command,
        release: a.t_release,
        grace: a.grace,
        scenario_timeout: a.scenario_timeout,
        wait_timeout: a.timeout,
        contract: a.contract,
    };
    let certificate = kproof::certify::certify(opts)?;
    print!("{}", certificate.table());
    let written = certificate
        .write(&a.report_dir)
        .with_context(|| format!("cannot write the reports into {}", a.report_dir.display()))?;
    let shown: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    println!("reports: {}", shown.join(" "));
    Ok(if certificate.certified { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn upstream_command(command: UpstreamCommand) -> anyhow::Result<ExitCode> {
    use kproof::backend::upstream;
    match command {
        UpstreamCommand::Build(a) => {
            let dir = a.upstream_dir.unwrap_or_else(upstream::default_upstream_dir);
            let started = std::time::Instant::now();
            let code = upstream::build::build(&dir)?;
            eprintln!("kproof: upstream build finished in {:.0}s (exit {code})", started.elapsed().as_secs_f64());
            Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
        }
        UpstreamCommand::Status(a) => {
            let dir = a.upstream_dir.unwrap_or_else(upstream::default_upstream_dir);
            let build = upstream::build::locate(&dir)?;
            println!("{}", build.dir.display());
            for (name, c) in &build.components {
                let extra = if c.fallback {
                    format!("  (wanted {}: {})", c.wanted, c.note.lines().next().unwrap_or_default())
                } else {
                    String::new()
                };
                println!("  {name:<24} {:<8} {}{extra}", c.status, c.version);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn differential(args: DifferentialArgs) -> anyhow::Result<ExitCode> {
    use kproof::backend::upstream;
    use kproof::differential;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async {
        // The plane (when started here) lives until the comparison is done.
        let mut plane = None;
        let real = match &args.kubeconfig {
            Some(path) => upstream::client_from(path).await.map_err(anyhow::Error::msg)?,
            None => {
                let dir = args.upstream.upstream_dir.clone().unwrap_or_else(upstream::default_upstream_dir);
                let build = upstream::build::locate(&dir)?;
                let opts = upstream::PlaneOptions {
                    kueue: false,
                    kuberay: false,
                    kcm_controllers: kproof::differential::KCM_CONTROLLERS.map(String::from).to_vec(),
                    ..upstream::PlaneOptions::new(build)
                };
                eprintln!("kproof differential: starting etcd and kube-apiserver ...");
                let p = upstream::ControlPlane::start(opts).await?;
                let client = upstream::client_from(&p.kubeconfig).await.map_err(anyhow::Error::msg)?;
                plane = Some(p);
                client
            }
        };
        let server = differential::fake_server();
        let fake = server.client();
        let nonce = format!("{:x}", jiff::Timestamp::now().as_second() % 0xfffff);
        let names = differential::corpus::RunNames { namespace: format!("kproof-diff-{}-{nonce}", args.seed), nonce };
        let bar = indicatif::ProgressBar::new(args.count as u64);
        let started = std::time::Instant::now();
        let outcomes = differential::run(&fake, &real, args.seed, args.count, &names, |n| bar.set_position(n as u64))
            .await
            .map_err(anyhow::Error::msg)?;
        bar.finish_and_clear();
        let summary = differential::Summary::of(&outcomes);
        println!(
            "kproof differential --seed {} --count {} ({:.0} s)\n",
            args.seed,
            args.count,
            started.elapsed().as_secs_f64()
        );
        println!("{}", summary.table());
        let report = differential::disagreements(args.seed, &outcomes);
        if let Some(path) = &args.disagreements {
            std::fs::write(path, &report).with_context(|| format!("cannot write {}", path.display()))?;
            println!("disagreements: {}", path.display());
        }
        if let Some(p) = plane {
            for e in p.stop() {
                eprintln!("kproof differential: stopping: {e}");
            }
        }
        Ok(if summary.percent() + 1e-9 >= args.min_agreement { ExitCode::SUCCESS } else { ExitCode::FAILURE })
    })
}

fn cluster_up(args: ClusterArgs) -> anyhow::Result<ExitCode> {
    use kproof::backend::Backend;
    let backend = start_upstream(&args.plane)?;
    std::fs::copy(backend.kubeconfig(), &args.kubeconfig)
        .with_context(|| format!("cannot write {}", args.kubeconfig.display()))?;
    println!("kproof cluster: upstream control plane ready in {:.1}s", backend.started_in().as_secs_f64());
    for (component, version) in backend.components() {
        println!("  {component:<24} {version}");
    }
    println!("kubeconfig: {}", args.kubeconfig.display());
    println!("logs:       {}", backend.run_dir().join("logs").display());
    println!("use it:     export KUBECONFIG={}; kubectl get nodes", args.kubeconfig.display());
    println!("stop:       Ctrl-C or SIGTERM");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(fake_apiserver::shutdown_signal());
    let killed = backend.stop();
    if !killed.is_empty() {
        eprintln!("kproof cluster: killed after the grace period: {}", killed.join(", "));
    }
    let _ = std::fs::remove_file(&args.kubeconfig);
    println!("kproof cluster: stopped");
    Ok(ExitCode::SUCCESS)
}

fn cluster_down() -> anyhow::Result<ExitCode> {
    let mut removed = 0;
    for entry in std::fs::read_dir(std::env::temp_dir())?.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(pid) =
            name.strip_prefix("kproof-upstream-").and_then(|r| r.split('-').next()).and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if std::path::Path::new(&format!("/proc/{pid}")).exists() {
            println!("in use by running kproof {pid}: {}", entry.path().display());
            continue;
        }
        std::fs::remove_dir_all(entry.path())?;
        println!("removed {}", entry.path().display());
        removed += 1;
    }
    println!("{removed} stale run director{} removed", if removed == 1 { "y" } else { "ies" });
    Ok(ExitCode::SUCCESS)
}

fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let server = fake_apiserver::ApiServer::new(fake_apiserver::Config { rbac: args.rbac, ..Default::default() });
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], args.port));
        let tcp = if args.tls { server.serve_tls(addr).await } else { server.serve_tcp(addr).await };
        let tcp = tcp.with_context(|| format!("cannot listen on {addr}"))?;
        let factories = if args.no_actors { Vec::new() } else { kproof::actors::reference_actors() };
        for hook in factories.iter().flat_map(|f| f.webhooks()) {
            server.add_validating_webhook(hook);
        }
        for hook in factories.iter().flat_map(|f| f.mutating_webhooks()) {
            server.add_mutating_webhook(hook);
        }
        let needs = kproof::suite::Needs { settings: settings_from_flags(&args.settings)?, ..Default::default() };
        let clock = server.clock();
        let network = controllers::sim::SimNetwork::new();
        let actors = kproof::actors::start_actors(
            &factories,
            |name| server.controller_client(name.as_str()),
            clock,
            &needs,
            &network,
        )
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
        let running = actors.names();
        let facts: std::collections::BTreeMap<String, String> =
            factories.iter().flat_map(|f| f.facts(&needs)).collect();
        kproof::actors::announce(&server.client_as("kproof"), &running, &facts)
            .await
            .context("cannot announce the actors")?;
        let names: Vec<&str> = running.iter().map(|n| n.as_str()).collect();
        tcp.write_kubeconfig(&args.kubeconfig)
            .with_context(|| format!("cannot write {}", args.kubeconfig.display()))?;
        for spec in &args.identity {
            let (who, path) = spec.rsplit_once('=').context("--identity wants IDENTITY=PATH")?;
            let user = fake_apiserver::UserInfo::from_spec(who).map_err(anyhow::Error::msg)?;
            let token = server.issue_token(user);
            tcp.write_kubeconfig_with_token(std::path::Path::new(path), &token)
                .with_context(|| format!("cannot write {path}"))?;
            println!("kubeconfig of {who}: {path}");
        }
        println!("kproof serve: fake cluster on {}", tcp.url());
        if !names.is_empty() {
            println!("running:    {}", names.join(", "));
        }
        if !actors.installed().is_empty() {
            println!("installed:  {}", actors.installed().join(", "));
        }
        println!("kubeconfig: {}", args.kubeconfig.display());
        println!("use it:     export KUBECONFIG={}; kubectl get namespaces", args.kubeconfig.display());
        println!("stop:       Ctrl-C or SIGTERM");
        fake_apiserver::shutdown_signal().await;
        drop(actors);
        tcp.shutdown().await.context("shutting down")?;
        Ok(ExitCode::SUCCESS)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
