//! `fake-apiserver`: serve the fake Kubernetes API on loopback and write a kubeconfig.

mod envtest_shim;

use anyhow::Context;
use clap::Parser;
use fake_apiserver::{ApiServer, Config, FeatureGates};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

/// A fake Kubernetes API server on 127.0.0.1, for kubectl, kube-rs, client-go and Python clients.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// TCP port (0 picks a free one).
    #[arg(long, default_value_t = 6443)]
    port: u16,
    /// Where to write the kubeconfig that points at the server.
    #[arg(long, default_value = "kproof.kubeconfig")]
    kubeconfig: PathBuf,
    /// How many changes the watch history keeps before older resourceVersions get 410 Expired.
    #[arg(long, default_value_t = 10_000)]
    history: usize,
    /// Largest accepted request body, in bytes.
    #[arg(long, default_value_t = 3 * 1024 * 1024)]
    max_body_bytes: usize,
    /// Requests handled at once before new ones get 429 with `Retry-After` (kube-apiserver's
    /// `--max-requests-inflight`; 0: no limit).
    #[arg(long, default_value_t = 400)]
    max_requests_inflight: usize,
    /// kube-apiserver feature gates, `Name=true,Other=false` (unknown names are refused).
    #[arg(long, value_name = "GATES")]
    feature_gates: Vec<String>,
    /// Authorize requests with RBAC (`--authorization-mode=RBAC`); off, everyone may do everything.
    #[arg(long)]
    rbac: bool,
    /// envtest mode: kube-apiserver and etcd alone, as controller-runtime's envtest runs them
    /// (no garbage collector, no namespace deletion), for operators' envtest suites.
    #[arg(long)]
    envtest: bool,
    /// Serve HTTPS with a fresh self-signed certificate the kubeconfigs trust (kubectl sends a
    /// kubeconfig's token only over TLS, so identities and RBAC need it).
    #[arg(long)]
    tls: bool,
    /// Make DIR a `KUBEBUILDER_ASSETS` folder for controller-runtime's envtest (`kube-apiserver`
    /// and `etcd` link to this binary, which stands in for them; `kubectl` to the one on PATH),
    /// print `export KUBEBUILDER_ASSETS=DIR` and exit.
    #[arg(long, value_name = "DIR")]
    envtest_assets: Option<PathBuf>,
    /// An identity and where to write its kubeconfig, e.g.
    /// `serviceaccount:team-a/controller=ctl.kubeconfig` or `user:alice:devs=alice.kubeconfig`.
    #[arg(long, value_name = "IDENTITY=PATH")]
    identity: Vec<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    match envtest_shim::Role::of_invocation() {
        Some(envtest_shim::Role::KubeApiserver) => return envtest_shim::kube_apiserver().await,
        Some(envtest_shim::Role::Etcd) => return envtest_shim::etcd().await,
        None => {}
    }
    let args = Args::parse();
    if let Some(dir) = &args.envtest_assets {
        envtest_shim::write_assets(dir)?;
        println!("export KUBEBUILDER_ASSETS={}", dir.display());
        return Ok(());
    }
    let feature_gates = FeatureGates::parse(&args.feature_gates).context("invalid --feature-gates")?;
    let config = Config {
        history: args.history,
        max_request_body_bytes: args.max_body_bytes,
        max_requests_in_flight: args.max_requests_inflight,
        feature_gates,
        rbac: args.rbac,
        envtest: args.envtest,
        ..Config::default()
    };
    let server = ApiServer::new(config);
    let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), args.port);
    let tcp = if args.tls { server.serve_tls(addr).await } else { server.serve_tcp(addr).await };
    let tcp = tcp.with_context(|| format!("cannot listen on {addr}"))?;
    tcp.write_kubeconfig(&args.kubeconfig)
        .with_context(|| format!("cannot write the kubeconfig to {}", args.kubeconfig.display()))?;
    for spec in &args.identity {
        let (who, path) = spec.rsplit_once('=').context("--identity wants IDENTITY=PATH")?;
        let user = fake_apiserver::UserInfo::from_spec(who).map_err(anyhow::Error::msg)?;
        let token = server.issue_token(user);
        tcp.write_kubeconfig_with_token(std::path::Path::new(path), &token)
            .with_context(|| format!("cannot write the kubeconfig to {path}"))?;
        println!("kubeconfig of {who} written to {path}");
    }
    println!("fake-apiserver listening on {}", tcp.url());
    println!("kubeconfig written to {}", args.kubeconfig.display());
    println!("try: kubectl --kubeconfig {} get namespaces", args.kubeconfig.display());
    fake_apiserver::shutdown_signal().await;
    eprintln!("shutting down");
    tcp.shutdown().await.context("server error during shutdown")?;
    Ok(())
}
