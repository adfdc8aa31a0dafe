//! The command line: every subcommand, its arguments and how a flag's text is parsed.

use clap::{Parser, Subcommand, ValueEnum};
use kproof::backend::kind::KindOptions;
use kproof::suite::ActorName;
use std::path::PathBuf;
use std::time::Duration;

/// Conformance tables for the controllers that upgrade and gate ML clusters.
#[derive(Parser, Debug)]
#[command(name = "kproof", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
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
pub(crate) enum KindCommand {
    /// Print what `--backend kind` installs: node image, components, versions, steps.
    Plan(KindOptions),
    /// Print a bash script that downloads the plan's release files into the directory given
    /// as its argument (run it where GitHub is reachable; pass the directory as --kind-manifests).
    FetchScript(KindOptions),
}

#[derive(Subcommand, Debug)]
pub(crate) enum CertifyCommand {
    /// The ReservedFor contract (obligations C1-C18): a workload controller sharing
    /// ResourceClaims across pods, run as a child process against the fake API server and the
    /// reference DRA components. Exit code 0 only if every applicable obligation passes.
    Reservedfor(Box<ReservedforArgs>),
}

#[derive(clap::Args, Debug)]
pub(crate) struct ReservedforArgs {
    /// pg (PodGroups, KEP-5729), raw (the controller writes its own non-pod entry) or w
    /// (KEP-5194 as proposed).
    #[arg(long)]
    pub(crate) profile: kproof::certify::CertProfile,
    /// CRD manifests of the workload kind (repeatable).
    #[arg(long = "crd", required = true, value_name = "FILE")]
    pub(crate) crds: Vec<PathBuf>,
    /// The workload manifest (one object of the CRD's kind).
    #[arg(long, value_name = "FILE")]
    pub(crate) workload: PathBuf,
    /// Dotted path of the replica count in the workload.
    #[arg(long, default_value = "spec.replicas")]
    pub(crate) replicas_path: String,
    /// Role and ClusterRole manifests the controller runs with (repeatable); each is bound to
    /// the controller's identity in every scenario's namespace.
    #[arg(long = "rbac", value_name = "FILE")]
    pub(crate) rbac: Vec<PathBuf>,
    /// Only these obligations (comma-separated or repeated), e.g. C4,C6.
    #[arg(long = "obligation", value_delimiter = ',', value_name = "ID")]
    pub(crate) obligations: Vec<String>,
    /// Where certificate.json, junit.xml, report.md and the controller logs go.
    #[arg(long, default_value = "target/kproof/certify")]
    pub(crate) report_dir: PathBuf,
    /// T_release: how long the controller may take to release after the last pod.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub(crate) t_release: Duration,
    /// How long slowly terminating pods take to stop.
    #[arg(long, default_value = "8s", value_parser = parse_duration)]
    pub(crate) grace: Duration,
    /// The longest one scenario may take; a hung controller fails there.
    #[arg(long, default_value = "90s", value_parser = parse_duration)]
    pub(crate) scenario_timeout: Duration,
    /// Default timeout of a scenario's waits.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub(crate) timeout: Duration,
    /// A contract file instead of the built-in one (suites/certify/reservedfor.yaml).
    #[arg(long, value_name = "FILE")]
    pub(crate) contract: Option<PathBuf>,
    /// The controller command, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub(crate) command: Vec<String>,
}

#[derive(clap::Args, Debug, Clone)]
pub(crate) struct DifferentialArgs {
    /// The corpus seed (the same seed sends the same requests).
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// How many cases (one compared request each).
    #[arg(long, default_value_t = 5000)]
    pub(crate) count: usize,
    /// Which corpus: `kinds` (hand-written mutations of each kind) or `upstream` (upstream's
    /// validation tests, the real server's OpenAPI schemas, the request grid).
    #[arg(long, value_enum, default_value_t = CorpusArg::Kinds)]
    pub(crate) generator: CorpusArg,
    /// Compare with the cluster of this kubeconfig instead of starting etcd and kube-apiserver
    /// from the upstream build.
    #[arg(long)]
    pub(crate) kubeconfig: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) upstream: UpstreamDirArgs,
    /// Write every disagreement (seed, index, request, both answers) to this file.
    #[arg(long)]
    pub(crate) disagreements: Option<PathBuf>,
    /// Exit non-zero when the agreement is below this percentage.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) min_agreement: f64,
}

/// `kproof differential --generator`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CorpusArg {
    /// The first corpus: each kind's hand-written mutations and API machinery cases.
    Kinds,
    /// The second: upstream's validation tests, OpenAPI schemas, the request grid.
    Upstream,
}

#[derive(Subcommand, Debug)]
pub(crate) enum UpstreamCommand {
    /// Build what is missing for the pins in upstream/ (cached; the first build takes 15-25
    /// minutes on 2 cores, later ones seconds).
    Build(UpstreamDirArgs),
    /// Print the cache directory of the current pins and what is built there.
    Status(UpstreamDirArgs),
}

#[derive(clap::Args, Debug, Clone)]
pub(crate) struct UpstreamDirArgs {
    /// The folder with the pins and build.sh (default: ./upstream, else the repository's).
    #[arg(long)]
    pub(crate) upstream_dir: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub(crate) enum ClusterCommand {
    /// Start etcd, kube-apiserver, kube-controller-manager, kube-scheduler, Kueue, the KubeRay
    /// operator and the simulated kubelet; write a kubeconfig; stop everything on Ctrl-C.
    Up(Box<ClusterArgs>),
    /// Remove the run directories of control planes whose kproof process is gone (their
    /// processes died with it).
    Down,
}

#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ClusterArgs {
    #[command(flatten)]
    pub(crate) plane: PlaneArgs,
    /// Where to write the admin kubeconfig (a copy; the run directory holds the original).
    #[arg(long, default_value = "upstream.kubeconfig")]
    pub(crate) kubeconfig: PathBuf,
}

/// How the upstream control plane is started (`kproof cluster up`, `kproof run --backend upstream`).
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct PlaneArgs {
    #[command(flatten)]
    pub(crate) upstream: UpstreamDirArgs,
    /// Keep the run directory (etcd data, certificates, logs) after stopping.
    #[arg(long)]
    pub(crate) keep_run_dir: bool,
    /// A ray-operator binary to run instead of the built one, as PATH=VERSION (e.g. a local
    /// build of v1.7.0, which the module proxy does not serve).
    #[arg(long, value_name = "PATH=VERSION", value_parser = parse_binary_version)]
    pub(crate) ray_operator: Option<(PathBuf, String)>,
    /// With --ray-operator: the folder of that version's CRDs (`config/crd/bases`), installed
    /// instead of the built version's.
    #[arg(long, value_name = "DIR", requires = "ray_operator")]
    pub(crate) ray_operator_crds: Option<PathBuf>,
    /// The KubeRay operator's `--feature-gates`, e.g. `RayServiceIncrementalUpgrade=true` (an
    /// Alpha gate in v1.6.2, on by default in v1.7.0). Rows that set gates of their own run on a
    /// plane with theirs added.
    #[arg(long, value_name = "GATES")]
    pub(crate) ray_operator_feature_gates: Option<String>,
    /// A Kueue binary to run instead of the built one, as PATH=VERSION (e.g. a build of
    /// kubernetes-sigs/kueue#11264's head commit, which the module proxy does not serve). The rows
    /// that need PR 11264's RayService upgrade gate run when its webhook suspends a queued
    /// RayService with `spec.suspend` (asked at start).
    #[arg(long, value_name = "PATH=VERSION", value_parser = parse_binary_version, conflicts_with = "no_kueue")]
    pub(crate) kueue: Option<(PathBuf, String)>,
    /// With --kueue: that Kueue's `config/default` rendered by `kustomize build` (CRDs, RBAC,
    /// webhook configurations), installed instead of the built version's.
    #[arg(long, value_name = "FILE", requires = "kueue")]
    pub(crate) kueue_manifests: Option<PathBuf>,
    /// Do not start Kueue.
    #[arg(long)]
    pub(crate) no_kueue: bool,
}

pub(crate) fn parse_binary_version(s: &str) -> Result<(PathBuf, String), String> {
    let (p, v) = s.split_once('=').ok_or_else(|| format!("expected PATH=VERSION, got {s:?}"))?;
    Ok((PathBuf::from(p), v.to_string()))
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum BackendName {
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
pub(crate) struct CatalogueArgs {
    /// Suite files or folders of suite files (default: ./suites, else the repository's).
    #[arg(value_name = "PATH")]
    pub(crate) paths: Vec<PathBuf>,
    /// Folder of suite files (the same as giving it as a path).
    #[arg(long)]
    pub(crate) suites: Option<PathBuf>,
    /// Folder of fixtures (default: beside the suites folder).
    #[arg(long)]
    pub(crate) fixtures: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) catalogue: CatalogueArgs,
    /// Only these suites (repeatable).
    #[arg(long = "suite", value_name = "NAME")]
    pub(crate) suite_names: Vec<String>,
    /// Only these rows (repeatable).
    #[arg(long = "row", value_name = "ID")]
    pub(crate) row_ids: Vec<String>,
    #[arg(long, value_enum, default_value = "fake")]
    pub(crate) backend: BackendName,
    /// Kubeconfig for `--backend kubeconfig` (default: KUBECONFIG or ~/.kube/config).
    #[arg(long)]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// With `--backend kubeconfig`: an actor running in that cluster (repeatable), e.g. `kuberay`
    /// for a real KubeRay operator. `kproof serve` announces its own, so it needs none.
    #[arg(long = "actor", value_name = "NAME")]
    pub(crate) actors: Vec<ActorName>,
    /// Rows run at once (default: the number of cores).
    #[arg(long)]
    pub(crate) jobs: Option<usize>,
    /// On real-time backends (kubeconfig, upstream), keep what each row made (its namespace and
    /// the cluster-scoped objects it created) for debugging; by default it is deleted.
    #[arg(long)]
    pub(crate) keep: bool,
    /// Where the JSON and JUnit reports and the flight records go.
    #[arg(long, default_value = "target/kproof")]
    pub(crate) report_dir: PathBuf,
    /// Default timeout of `eventually`, e.g. 30s.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub(crate) timeout: Duration,
    /// With `--backend upstream`: how the control plane is started.
    #[command(flatten)]
    pub(crate) plane: PlaneArgs,
    /// With `--backend kind`: what the cluster runs.
    #[command(flatten)]
    pub(crate) kind: KindOptions,
}

#[derive(clap::Args, Debug)]
pub(crate) struct ServeArgs {
    /// TCP port (0 picks a free one).
    #[arg(long, default_value_t = 6443)]
    pub(crate) port: u16,
    /// Where to write the kubeconfig.
    #[arg(long, default_value = "kproof.kubeconfig")]
    pub(crate) kubeconfig: PathBuf,
    /// Serve the API server alone, without the reference controllers and simulated actors.
    #[arg(long)]
    pub(crate) no_actors: bool,
    /// A component setting, as a row's `needs.settings` gives it (repeatable), written
    /// `COMPONENT.KEY=VALUE`, e.g. `--set kuberay.version=v1.6.0` or
    /// `--set kubelet.startDelay=5s`. The value is read as YAML (`true`, `3`, `v1.6.0`).
    #[arg(long = "set", value_name = "COMPONENT.KEY=VALUE", value_parser = parse_setting)]
    pub(crate) settings: Vec<(String, String, serde_json::Value)>,
    /// Authorize requests with RBAC (the actors keep administrator rights).
    #[arg(long)]
    pub(crate) rbac: bool,
    /// envtest mode: the API server as controller-runtime's envtest runs it, without
    /// kube-controller-manager's garbage collector and namespace controller (with
    /// `--no-actors`, what an operator's envtest suite expects).
    #[arg(long)]
    pub(crate) envtest: bool,
    /// Serve HTTPS with a self-signed certificate the kubeconfigs trust (kubectl sends a
    /// kubeconfig's token only over TLS: identities need it).
    #[arg(long)]
    pub(crate) tls: bool,
    /// An identity and where to write its kubeconfig (repeatable), e.g.
    /// `serviceaccount:team-a/controller=ctl.kubeconfig` or `user:alice:devs=alice.kubeconfig`.
    #[arg(long, value_name = "IDENTITY=PATH")]
    pub(crate) identity: Vec<String>,
}

pub(crate) fn parse_setting(s: &str) -> Result<(String, String, serde_json::Value), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| format!("expected COMPONENT.KEY=VALUE, got {s:?}"))?;
    let (component, key) = k
        .trim()
        .split_once('.')
        .ok_or_else(|| format!("expected COMPONENT.KEY=VALUE (e.g. kuberay.version=v1.6.0), got {s:?}"))?;
    let value = serde_saphyr::from_str::<serde_json::Value>(v).unwrap_or_else(|_| serde_json::Value::String(v.into()));
    Ok((component.to_string(), key.to_string(), value))
}

pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    kproof::suite::parse_duration(s)
}
