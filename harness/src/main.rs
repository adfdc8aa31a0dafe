//! `kproof`: run conformance tables, lint them, print their schema, or serve a fake cluster.

use anyhow::{Context, bail};
use clap::{Parser, Subcommand, ValueEnum};
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
    Run(RunArgs),
    /// Check suites offline: unknown fields, bindings used before they are set, duplicate ids.
    Lint(CatalogueArgs),
    /// Print the JSON Schema of the suite format.
    Schema,
    /// Serve a fake cluster on 127.0.0.1 and write a kubeconfig for kubectl.
    Serve(ServeArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum BackendName {
    /// The in-process fake API server, in virtual time.
    Fake,
    /// Any cluster reached through a kubeconfig, in real time.
    Kubeconfig,
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
    /// Where the JSON and JUnit reports and the flight records go.
    #[arg(long, default_value = "target/kproof")]
    report_dir: PathBuf,
    /// Default timeout of `eventually`, e.g. 30s.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    timeout: Duration,
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
        Command::Run(args) => run(args),
        Command::Lint(args) => {
            let (suites, fixtures_dir, _) = load_catalogue(&args)?;
            let issues = kproof::suite::lint::lint(&suites, &fixtures_dir);
            for i in &issues {
                println!("{i}");
            }
            let rows: usize = suites.iter().map(|s| s.suite.rows.len()).sum();
            println!("{} suites, {rows} rows, {} issues", suites.len(), issues.len());
            Ok(if issues.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Command::Schema => {
            println!("{}", serde_json::to_string_pretty(&kproof::suite::lint::json_schema())?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve(args) => serve(args),
    }
}

fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let (suites, fixtures_dir, shown) = load_catalogue(&args.catalogue)?;
    let sel = kproof::engine::selection::Selection { suites: args.suite_names.clone(), rows: args.row_ids.clone() };
    let rows = kproof::engine::selection::selected(&suites, &sel);
    if rows.is_empty() {
        bail!("no row matches --suite {:?} --row {:?} in {shown}", args.suite_names, args.row_ids);
    }
    let backend: Box<dyn Backend> = match args.backend {
        BackendName::Fake => Box::new(kproof::actors::reference_backend()),
        BackendName::Kubeconfig => Box::new(
            KubeconfigBackend::new(args.kubeconfig.clone())
                .context("cannot start the kubeconfig backend")?
                .with_actors(args.actors.clone()),
        ),
    };
    let opts = RunOptions {
        fixtures_dir,
        flight_dir: Some(args.report_dir.join("flight")),
        default_timeout: args.timeout,
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
    let results = kproof::engine::selection::run_rows(backend.as_ref(), &rows, &opts, jobs, &|r| {
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
    Ok(if kproof::engine::selection::passed(&report.rows) { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let server = fake_apiserver::ApiServer::default();
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], args.port));
        let tcp = server.serve_tcp(addr).await.with_context(|| format!("cannot listen on {addr}"))?;
        let factories = if args.no_actors { Vec::new() } else { kproof::actors::reference_actors() };
        let needs = kproof::suite::Needs { settings: settings_from_flags(&args.settings)?, ..Default::default() };
        let server_clock = server.clock();
        let clock = controllers::Clock::from_fn(move || server_clock.now());
        let network = controllers::sim::SimNetwork::new();
        let actors =
            kproof::actors::start_actors(&factories, |name| server.client_as(name.as_str()), clock, &needs, &network)
                .await
                .map_err(|e| anyhow::anyhow!(e))?;
        let running = actors.names();
        kproof::actors::announce(&server.client_as("kproof"), &running).await.context("cannot announce the actors")?;
        let names: Vec<&str> = running.iter().map(|n| n.as_str()).collect();
        tcp.write_kubeconfig(&args.kubeconfig)
            .with_context(|| format!("cannot write {}", args.kubeconfig.display()))?;
        println!("kproof serve: fake cluster on {}", tcp.url());
        if !names.is_empty() {
            println!("running:    {}", names.join(", "));
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
