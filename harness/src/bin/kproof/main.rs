//! `kproof`: run conformance tables, lint them, print their schema, or serve a fake cluster.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cli;

use anyhow::{Context, bail};
use clap::Parser;
use cli::{
    BackendName, CatalogueArgs, CertifyCommand, Cli, ClusterArgs, ClusterCommand, Command, DifferentialArgs,
    KindCommand, PlaneArgs, ReservedforArgs, RunArgs, ServeArgs, UpstreamCommand,
};
use kproof::backend::kind::KindOptions;
use kproof::backend::{Backend, KubeconfigBackend, RunOptions};
use kproof::report::events::{JsonReporter, JunitReporter};
use kproof::report::human::HumanReporter;
use kproof::report::{Reporter, RunEvent, RunReport};
use kproof::suite::LoadedSuite;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Starts the upstream backend from the built components, with progress on stderr.
fn start_upstream(args: &PlaneArgs) -> anyhow::Result<kproof::backend::UpstreamBackend> {
    use kproof::backend::upstream;
    let dir = args.upstream.upstream_dir.clone().unwrap_or_else(upstream::default_upstream_dir);
    let build = upstream::build::locate(&dir)?;
    let mut opts = upstream::PlaneOptions::new(build);
    opts.keep_run_dir = args.keep_run_dir;
    opts.ray_operator = args.ray_operator.clone();
    opts.ray_operator_crds = args.ray_operator_crds.clone();
    opts.kuberay_feature_gates = args.ray_operator_feature_gates.clone();
    opts.kueue = !args.no_kueue;
    opts.kueue_binary = args.kueue.clone();
    opts.kueue_manifests = args.kueue_manifests.clone();
    eprintln!(
        "kproof: starting the upstream control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler{}, the KubeRay operator)...",
        if opts.kueue { ", Kueue" } else { "" }
    );
    let backend = upstream::UpstreamBackend::start(opts).context("the upstream control plane did not start")?;
    eprintln!("kproof: ready in {:.1}s", backend.started_in().as_secs_f64());
    Ok(backend)
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
        Command::Cluster { command: ClusterCommand::Up(args) } => cluster_up(*args),
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
        let generator = match args.generator {
            cli::CorpusArg::Kinds => differential::Generator::Kinds,
            cli::CorpusArg::Upstream => differential::Generator::Upstream,
        };
        let outcomes =
            differential::run(&fake, &real, args.seed, args.count, &names, generator, |n| bar.set_position(n as u64))
                .await
                .map_err(anyhow::Error::msg)?;
        bar.finish_and_clear();
        let summary = differential::Summary::of(&outcomes);
        println!(
            "kproof differential --generator {} --seed {} --count {} ({:.0} s)\n",
            if generator == differential::Generator::Kinds { "kinds" } else { "upstream" },
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
        let server = fake_apiserver::ApiServer::new(fake_apiserver::Config {
            rbac: args.rbac,
            envtest: args.envtest,
            ..Default::default()
        });
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
