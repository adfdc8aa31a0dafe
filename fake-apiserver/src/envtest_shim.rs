//! `fake-apiserver` standing in for envtest's binaries: invoked as `kube-apiserver` or `etcd`
//! (a link of that name in the folder `KUBEBUILDER_ASSETS` names), it takes the flags
//! controller-runtime's envtest gives them
//! (`pkg/internal/testing/controlplane/{apiserver,etcd}.go` of controller-runtime v0.22) and
//! serves what envtest waits for: the API in envtest mode over TLS with the certificates envtest
//! wrote (its users authenticate with client certificates), and an `etcd` that only answers
//! `/health` (the fake keeps its own store). Every envtest `Environment` then gets a server of
//! its own, so suites that start several clusters (Kueue's MultiKueue) run unchanged.

use anyhow::Context;
use fake_apiserver::{ApiServer, Config, FeatureGates};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// What this process was started as, from the name it was invoked by.
pub(crate) enum Role {
    KubeApiserver,
    Etcd,
}

impl Role {
    pub(crate) fn of_invocation() -> Option<Role> {
        let argv0 = std::env::args_os().next()?;
        match Path::new(&argv0).file_name()?.to_str()? {
            "kube-apiserver" => Some(Role::KubeApiserver),
            "etcd" => Some(Role::Etcd),
            _ => None,
        }
    }
}

/// `--name=value` and bare `--name` flags, each name with its values in order (pflag's form;
/// envtest writes every flag as `--name=value`).
fn flags() -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for arg in std::env::args().skip(1) {
        let Some(flag) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else { continue };
        let (name, value) = flag.split_once('=').unwrap_or((flag, ""));
        out.entry(name.to_string()).or_default().push(value.to_string());
    }
    out
}

fn last<'a>(flags: &'a BTreeMap<String, Vec<String>>, name: &str) -> Option<&'a str> {
    flags.get(name).and_then(|v| v.last()).map(String::as_str).filter(|v| !v.is_empty())
}

const APISERVER_HELP: &str = "fake-apiserver standing in for kube-apiserver (envtest).

Flags read: --secure-port, --bind-address, --cert-dir, --tls-cert-file, --tls-private-key-file,
--client-ca-file, --authorization-mode, --feature-gates. Every other flag is accepted and ignored.
";

const ETCD_HELP: &str = "fake-apiserver standing in for etcd (envtest): answers /health on
--listen-client-urls; the API server keeps its own store. Every other flag is ignored.
";

/// Runs as envtest's kube-apiserver until SIGTERM.
pub(crate) async fn kube_apiserver() -> anyhow::Result<()> {
    let flags = flags();
    if flags.contains_key("help") || flags.contains_key("h") {
        print!("{APISERVER_HELP}");
        return Ok(());
    }
    let port: u16 = last(&flags, "secure-port").unwrap_or("6443").parse().context("invalid --secure-port")?;
    let bind = last(&flags, "bind-address").unwrap_or("127.0.0.1");
    let addr: SocketAddr = format!("{bind}:{port}").parse().context("invalid --bind-address")?;
    let cert_dir = PathBuf::from(last(&flags, "cert-dir").unwrap_or("."));
    let cert = last(&flags, "tls-cert-file").map(PathBuf::from).unwrap_or_else(|| cert_dir.join("apiserver.crt"));
    let key = last(&flags, "tls-private-key-file").map(PathBuf::from).unwrap_or_else(|| cert_dir.join("apiserver.key"));
    let client_ca = last(&flags, "client-ca-file").map(PathBuf::from);
    let rbac = flags.get("authorization-mode").into_iter().flatten().any(|m| m.split(',').any(|m| m == "RBAC"));
    let config = Config { envtest: true, rbac, feature_gates: known_gates(&flags), ..Config::default() };
    let server = ApiServer::new(config);
    let tcp = server
        .serve_tls_files(addr, &cert, &key, client_ca.as_deref())
        .await
        .with_context(|| format!("cannot serve on {addr} with {}", cert.display()))?;
    eprintln!("fake-apiserver standing in for kube-apiserver on {}", tcp.url());
    fake_apiserver::shutdown_signal().await;
    tcp.shutdown().await.context("server error during shutdown")?;
    Ok(())
}

/// The feature gates of `--feature-gates` this server knows; kube-apiserver knows hundreds more,
/// which a suite may set (Kueue's `MutatingAdmissionPolicy=true`): those are noted and ignored.
fn known_gates(flags: &BTreeMap<String, Vec<String>>) -> FeatureGates {
    let settings: Vec<&str> = flags.get("feature-gates").into_iter().flatten().flat_map(|v| v.split(',')).collect();
    let known: Vec<&str> = settings
        .iter()
        .copied()
        .filter(|s| match FeatureGates::parse(&[*s]) {
            Ok(_) => true,
            Err(e) => {
                eprintln!("fake-apiserver: ignoring --feature-gates {s}: {e}");
                false
            }
        })
        .collect();
    FeatureGates::parse(&known).unwrap_or_default()
}

/// Runs as envtest's etcd until SIGTERM: `/health` on each of `--listen-client-urls`.
pub(crate) async fn etcd() -> anyhow::Result<()> {
    let flags = flags();
    if flags.contains_key("help") || flags.contains_key("h") {
        print!("{ETCD_HELP}");
        return Ok(());
    }
    let urls = last(&flags, "listen-client-urls").unwrap_or("http://127.0.0.1:2379");
    let router = axum::Router::new().route(
        "/health",
        axum::routing::get(|| async { axum::Json(serde_json::json!({"health": "true", "reason": ""})) }),
    );
    let mut tasks = Vec::new();
    for url in urls.split(',') {
        let parsed = url::Url::parse(url).with_context(|| format!("invalid --listen-client-urls {url}"))?;
        let host = parsed.host_str().unwrap_or("127.0.0.1").trim_matches(['[', ']']);
        let host = if host == "localhost" { "127.0.0.1" } else { host };
        let port = parsed.port().unwrap_or(2379);
        let listener =
            tokio::net::TcpListener::bind((host, port)).await.with_context(|| format!("cannot listen on {url}"))?;
        let router = router.clone();
        tasks.push(tokio::spawn(async move { axum::serve(listener, router).await }));
    }
    eprintln!("fake-apiserver standing in for etcd on {urls}");
    fake_apiserver::shutdown_signal().await;
    for t in tasks {
        t.abort();
    }
    Ok(())
}

/// Makes `dir` a `KUBEBUILDER_ASSETS` folder: `kube-apiserver` and `etcd` linking to this
/// binary, and `kubectl` to the one on `PATH` (envtest's `Kubectl()` uses it).
pub(crate) fn write_assets(dir: &Path) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("cannot find this binary")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut links = vec![("kube-apiserver", exe.clone()), ("etcd", exe)];
    if let Some(kubectl) = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("kubectl"))
        .find(|p| p.is_file())
    {
        links.push(("kubectl", kubectl));
    }
    for (name, target) in links {
        let link = dir.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link)
            .with_context(|| format!("cannot link {} to {}", link.display(), target.display()))?;
    }
    Ok(())
}
