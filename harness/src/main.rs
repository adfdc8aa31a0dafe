//! `kproof`: run conformance tables, lint them, print their schema, or serve a fake cluster.

use anyhow::{Context, bail};
use clap::{Parser, Subcommand, ValueEnum};
use kproof::backend::{Backend, KubeconfigBackend, RunOptions};
use kproof::result::{Outcome, RunReport};
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
    /// Folder of suite files (default: ./suites, else the repository's).
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
    actors: Vec<String>,
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
    /// A controller setting, as a row's `needs.settings` would give it (repeatable), e.g.
    /// `--set kuberay.version=v1.6.0`. The value is read as YAML (`true`, `3`, `v1.6.0`).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_setting)]
    settings: Vec<(String, serde_json::Value)>,
}

fn parse_setting(s: &str) -> Result<(String, serde_json::Value), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| format!("expected KEY=VALUE, got {s:?}"))?;
    let value = serde_saphyr::from_str::<serde_json::Value>(v).unwrap_or_else(|_| serde_json::Value::String(v.into()));
    Ok((k.trim().to_string(), value))
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    kproof::suite::parse_duration(s)
}

/// `./suites` when it exists, else the repository's (this binary is built from it).
fn default_dir(name: &str) -> PathBuf {
    let here = PathBuf::from(name);
    if here.is_dir() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name)
}

fn catalogue_dirs(a: &CatalogueArgs) -> (PathBuf, PathBuf) {
    let suites = a.suites.clone().unwrap_or_else(|| default_dir("suites"));
    let fixtures = a.fixtures.clone().unwrap_or_else(|| {
        a.suites
            .as_ref()
            .and_then(|s| s.parent())
            .map(|p| p.join("fixtures"))
            .filter(|p| p.is_dir())
            .unwrap_or_else(|| default_dir("fixtures"))
    });
    (suites, fixtures)
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
            let (suites_dir, fixtures_dir) = catalogue_dirs(&args);
            let suites = kproof::load::load_suite_dir(&suites_dir)?;
            let issues = kproof::lint::lint(&suites, &fixtures_dir);
            for i in &issues {
                println!("{i}");
            }
            let rows: usize = suites.iter().map(|s| s.suite.rows.len()).sum();
            println!("{} suites, {rows} rows, {} issues", suites.len(), issues.len());
            Ok(if issues.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Command::Schema => {
            println!("{}", serde_json::to_string_pretty(&kproof::lint::json_schema())?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve(args) => serve(args),
    }
}

fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let (suites_dir, fixtures_dir) = catalogue_dirs(&args.catalogue);
    let suites = kproof::load::load_suite_dir(&suites_dir)?;
    let sel = kproof::run::Selection { suites: args.suite_names.clone(), rows: args.row_ids.clone() };
    let rows = kproof::run::selected(&suites, &sel);
    if rows.is_empty() {
        bail!("no row matches --suite {:?} --row {:?} in {}", args.suite_names, args.row_ids, suites_dir.display());
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
    let bar = indicatif::ProgressBar::new(rows.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} rows  {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let counts = std::sync::Mutex::new((0usize, 0usize, 0usize));
    let started_at = jiff::Timestamp::now().to_string();
    let wall = std::time::Instant::now();
    let results = kproof::run::run_rows(backend.as_ref(), &rows, &opts, jobs, &|r| {
        let mut c = counts.lock().unwrap_or_else(|e| e.into_inner());
        match r.outcome {
            Outcome::Passed => c.0 += 1,
            Outcome::Failed => c.1 += 1,
            Outcome::Skipped => c.2 += 1,
        }
        bar.set_message(format!("{} passed, {} failed, {} skipped", c.0, c.1, c.2));
        bar.inc(1);
    });
    bar.finish_and_clear();
    let report = RunReport::new(backend.name(), started_at, wall.elapsed().as_millis() as u64, results);
    print!("{}", kproof::report::summary_table(&report));
    let json = kproof::report::write_json(&report, &args.report_dir).context("cannot write the JSON report")?;
    let junit = kproof::report::write_junit(&report, &args.report_dir).context("cannot write the JUnit report")?;
    println!("reports: {} {}", json.display(), junit.display());
    Ok(if kproof::run::passed(&report.rows) { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let server = fake_apiserver::ApiServer::default();
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], args.port));
        let tcp = server.serve_tcp(addr).await.with_context(|| format!("cannot listen on {addr}"))?;
        let factories = if args.no_actors { Vec::new() } else { kproof::actors::reference_actors() };
        let needs = kproof::suite::Needs { settings: args.settings.iter().cloned().collect(), ..Default::default() };
        let server_clock = server.clock();
        let clock = controllers::Clock::from_fn(move || server_clock.now());
        let actors = kproof::backend::start_actors(&factories, |name| server.client_as(name), clock, &needs)
            .await
            .map_err(|e| anyhow::anyhow!(e))?;
        let names: Vec<&str> = actors.keys().map(String::as_str).collect();
        kproof::actors::announce(&server.client_as("kproof"), &names).await.context("cannot announce the actors")?;
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
