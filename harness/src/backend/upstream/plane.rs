//! A real control plane on this machine: etcd, kube-apiserver, kube-controller-manager and
//! kube-scheduler built from their Go modules, then Kueue and the KubeRay operator, each a local
//! process on loopback, started in the order and with the flags `upstream/README.md` verified.
//! Nodes, pods and the Ray head are simulated by kproof's actors; everything else is upstream.

use crate::backend::upstream::build::Build;
use crate::backend::upstream::pki::{self, Pki};
use crate::backend::upstream::process::{ProcessError, Supervisor};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Why the control plane could not start.
#[derive(Debug, thiserror::Error)]
pub enum PlaneError {
    /// The built components are unusable.
    #[error(transparent)]
    Build(#[from] crate::backend::upstream::build::BuildError),
    /// Certificates could not be made.
    #[error(transparent)]
    Pki(#[from] pki::PkiError),
    /// A process could not start, or died.
    #[error(transparent)]
    Process(#[from] ProcessError),
    /// A file of the run directory could not be written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A component did not become ready in time.
    #[error("{component} was not ready within {}s; the end of its log ({}):\n{tail}", timeout.as_secs(), log.display())]
    NotReady {
        /// The component.
        component: String,
        /// How long it had.
        timeout: Duration,
        /// Its log.
        log: PathBuf,
        /// The last lines of its log.
        tail: String,
    },
    /// Talking to kube-apiserver failed.
    #[error("{what}: {message}")]
    Api {
        /// What was being done.
        what: String,
        /// The error.
        message: String,
    },
}

/// The feature gates of kube-apiserver, -controller-manager and -scheduler (and, on kind, the
/// kubelet and kube-proxy) that the DRA and PodGroup rows need: the `podgroup` profile.
pub const FEATURE_GATES: [&str; 2] = ["GenericWorkload=true", "DRAWorkloadResourceClaims=true"];
/// kube-apiserver's `--runtime-config`: the `scheduling.k8s.io/v1beta1` PodGroup API.
pub const RUNTIME_CONFIG: [&str; 1] = ["scheduling.k8s.io/v1beta1=true"];

/// The name of the KubeRay operator's process (and of its log).
pub const RAY_OPERATOR: &str = "ray-operator";
/// Kueue's component name (its process and log).
pub const KUEUE: &str = "kueue";
/// kube-apiserver's component name (its process and log).
pub const KUBE_APISERVER: &str = "kube-apiserver";

/// What to start.
#[derive(Debug, Clone)]
pub struct PlaneOptions {
    /// The built components.
    pub build: Build,
    /// Where etcd's data, the certificates, the logs and the kubeconfig go; a fresh temporary
    /// directory when `None`. Removed on stop unless `keep_run_dir`.
    pub run_dir: Option<PathBuf>,
    /// Keep the run directory on stop (to read the logs).
    pub keep_run_dir: bool,
    /// A ray-operator binary to use instead of the built one (e.g. a local build of a version
    /// the module proxy does not serve), and the version to report for it.
    pub ray_operator: Option<(PathBuf, String)>,
    /// The KubeRay CRDs to install instead of the built version's (for `ray_operator`).
    pub ray_operator_crds: Option<PathBuf>,
    /// A Kueue binary to use instead of the built one (e.g. a build of a pull request's head
    /// commit, which the module proxy does not serve), and the version to report for it.
    pub kueue_binary: Option<(PathBuf, String)>,
    /// The `config/default` rendering (`kustomize build`) of that Kueue, installed instead of
    /// the built version's (for `kueue_binary`).
    pub kueue_manifests: Option<PathBuf>,
    /// Start Kueue.
    pub kueue: bool,
    /// Start the KubeRay operator.
    pub kuberay: bool,
    /// kube-apiserver, -controller-manager and -scheduler feature gates (`Name=true`).
    pub feature_gates: Vec<String>,
    /// Components that run with `DRAWorkloadResourceClaims` off although `feature_gates` turns
    /// it on (version skew within the cluster, `needs.dra.gatesOff` of the `podgroup` rows).
    pub dra_gates_off: Vec<crate::suite::DraComponent>,
    /// `--runtime-config` of kube-apiserver.
    pub runtime_config: Vec<String>,
    /// kube-controller-manager's `--controllers` (`*`: all of them).
    pub kcm_controllers: Vec<String>,
    /// Where the operator's plain-HTTP calls (Ray dashboard, Serve) go: `HTTP_PROXY`.
    pub http_proxy: Option<SocketAddr>,
    /// More of the KubeRay operator's environment (a row's `needs.settings.kuberay`).
    pub kuberay_env: Vec<(String, String)>,
    /// The KubeRay operator's `--feature-gates` (a row's `needs.featureGates.kuberay`), if any.
    pub kuberay_feature_gates: Option<String>,
    /// Install the Gateway API CRDs (a row's `needs.settings.gateway.installed: false` turns
    /// them off, with the simulated gateway).
    pub gateway_api: bool,
    /// Write kube-apiserver's audit log (every write's request and response), which names the
    /// verb, user agent and user of each write (rows that need `write-actors`).
    pub audit: bool,
}

impl PlaneOptions {
    /// The default set: everything, with the gates and APIs DRA and PodGroup rows need.
    pub fn new(build: Build) -> Self {
        Self {
            build,
            run_dir: None,
            keep_run_dir: false,
            ray_operator: None,
            ray_operator_crds: None,
            kueue_binary: None,
            kueue_manifests: None,
            kueue: true,
            kuberay: true,
            feature_gates: FEATURE_GATES.map(String::from).to_vec(),
            dra_gates_off: Vec::new(),
            runtime_config: RUNTIME_CONFIG.map(String::from).to_vec(),
            kcm_controllers: vec!["*".into()],
            http_proxy: None,
            kuberay_env: Vec::new(),
            kuberay_feature_gates: None,
            gateway_api: true,
            audit: false,
        }
    }
}

impl PlaneOptions {
    /// `component`'s `--feature-gates`: the plane's, with `DRAWorkloadResourceClaims` off where
    /// `dra_gates_off` says so.
    pub fn gates_of(&self, component: crate::suite::DraComponent) -> String {
        let off = self.dra_gates_off.contains(&component);
        self.feature_gates
            .iter()
            .map(|g| match g.split_once('=') {
                Some(("DRAWorkloadResourceClaims", _)) if off => "DRAWorkloadResourceClaims=false".to_string(),
                _ => g.clone(),
            })
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// A running control plane. Dropping it stops every process and removes the run directory.
pub struct ControlPlane {
    supervisor: Supervisor,
    run_dir: PathBuf,
    keep_run_dir: bool,
    /// The admin kubeconfig (client certificate in `system:masters`).
    pub kubeconfig: PathBuf,
    /// What runs, by component, with the version of each.
    pub components: BTreeMap<String, String>,
    /// From the first process started to everything ready.
    pub started_in: Duration,
    /// Whether the KubeRay operator runs.
    pub kuberay: bool,
    /// Whether Kueue runs.
    pub kueue: bool,
    /// Whether that Kueue gates RayService upgrades as PR 11264 does (its defaulting webhook
    /// suspends a queued RayService with the top-level `spec.suspend`; see
    /// [`crate::backend::upstream::kueue::offers_rayservice_upgrade_gate`]).
    pub kueue_rayservice_upgrade_gate: bool,
    /// kube-apiserver's audit log, when [`PlaneOptions::audit`].
    pub audit_log: Option<PathBuf>,
    /// The loopback port of each operator's health endpoint (`/readyz`), to wait on after a
    /// start or restart.
    health: BTreeMap<String, u16>,
}

impl std::fmt::Debug for ControlPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlPlane").field("run_dir", &self.run_dir).field("components", &self.components).finish()
    }
}

/// A free loopback port (bound and released: another process could take it in between, which a
/// start then reports as that component failing).
fn free_port() -> Result<u16, PlaneError> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|source| PlaneError::Io { path: "127.0.0.1:0".into(), source })?;
    l.local_addr().map(|a| a.port()).map_err(|source| PlaneError::Io { path: "127.0.0.1:0".into(), source })
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PlaneError + '_ {
    move |source| PlaneError::Io { path: path.to_path_buf(), source }
}

/// `GET http://127.0.0.1:<port><path>` with HTTP/1.0: whether it answered 200.
fn http_ok(port: u16, path: &str) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_secs(1))
    else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.") && &head[9..12] == b"200"
}

/// Whether something listens on the loopback port (components serving HTTPS with their own
/// self-signed certificates: a listening health port means they finished starting).
fn listening(port: u16) -> bool {
    TcpStream::connect_timeout(&SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_millis(500)).is_ok()
}

/// A kubeconfig for the admin identity, with file paths to the PKI.
fn kubeconfig_text(server: &str, pki: &Pki) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kproof-upstream\n  cluster:\n    server: {server}\n    certificate-authority: {}\nusers:\n- name: kproof-admin\n  user:\n    client-certificate: {}\n    client-key: {}\ncontexts:\n- name: kproof-upstream\n  context: {{cluster: kproof-upstream, user: kproof-admin, namespace: default}}\ncurrent-context: kproof-upstream\n",
        pki.ca_cert.display(),
        pki.admin_cert.display(),
        pki.admin_key.display()
    )
}

impl ControlPlane {
    /// Starts everything and waits until it is ready; on any failure, stops what started and
    /// removes the run directory before returning the error.
    pub async fn start(opts: PlaneOptions) -> Result<Self, PlaneError> {
        let started = Instant::now();
        let build = &opts.build;
        build.require(crate::backend::upstream::build::REQUIRED)?;
        let run_dir = match &opts.run_dir {
            Some(d) => d.clone(),
            None => std::env::temp_dir().join(format!("kproof-upstream-{}-{}", std::process::id(), free_port()?)),
        };
        std::fs::create_dir_all(run_dir.join("logs")).map_err(io(&run_dir))?;
        let mut plane = ControlPlane {
            supervisor: Supervisor::default(),
            run_dir: run_dir.clone(),
            keep_run_dir: opts.keep_run_dir,
            kubeconfig: run_dir.join("admin.kubeconfig"),
            components: BTreeMap::new(),
            started_in: Duration::ZERO,
            kuberay: false,
            kueue: false,
            kueue_rayservice_upgrade_gate: false,
            audit_log: None,
            health: BTreeMap::new(),
        };
        // On error `plane` drops here: processes stop and the run directory goes.
        plane.launch(&opts).await?;
        plane.started_in = started.elapsed();
        Ok(plane)
    }

    fn log(&self, name: &str) -> PathBuf {
        self.run_dir.join("logs").join(format!("{name}.log"))
    }

    /// Polls `ready` every 100 ms for up to `timeout`, failing early when a process exits.
    async fn wait(
        &mut self,
        component: &str,
        timeout: Duration,
        mut ready: impl FnMut() -> bool,
    ) -> Result<(), PlaneError> {
        let deadline = Instant::now() + timeout;
        loop {
            if ready() {
                return Ok(());
            }
            self.supervisor.check()?;
            if Instant::now() >= deadline {
                let log = self.log(component);
                return Err(PlaneError::NotReady {
                    component: component.into(),
                    timeout,
                    tail: crate::backend::upstream::process::log_tail(&log, 30),
                    log,
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn launch(&mut self, opts: &PlaneOptions) -> Result<(), PlaneError> {
        let build = &opts.build;
        let dir = self.run_dir.clone();
        let pki_dir = dir.join("pki");
        std::fs::create_dir_all(&pki_dir).map_err(io(&pki_dir))?;
        let pki = pki::create(&pki_dir)?;
        let p = |path: &Path| path.display().to_string();
        let gates_of = |component: crate::suite::DraComponent| opts.gates_of(component);

        let (etcd_port, etcd_peer) = (free_port()?, free_port()?);
        let etcd = [
            "--name=kproof".to_string(),
            format!("--data-dir={}", p(&dir.join("etcd"))),
            format!("--listen-client-urls=http://127.0.0.1:{etcd_port}"),
            format!("--advertise-client-urls=http://127.0.0.1:{etcd_port}"),
            format!("--listen-peer-urls=http://127.0.0.1:{etcd_peer}"),
            format!("--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}"),
            format!("--initial-cluster=kproof=http://127.0.0.1:{etcd_peer}"),
            "--unsafe-no-fsync".into(),
            "--log-level=warn".into(),
        ];
        self.supervisor.spawn("etcd", &build.bin("etcd"), &etcd, &[], &self.log("etcd"))?;
        self.wait("etcd", Duration::from_secs(30), || http_ok(etcd_port, "/health")).await?;

        let api_port = free_port()?;
        let mut apiserver = vec![
            format!("--etcd-servers=http://127.0.0.1:{etcd_port}"),
            "--bind-address=127.0.0.1".into(),
            "--advertise-address=127.0.0.1".into(),
            format!("--secure-port={api_port}"),
            format!("--cert-dir={}", p(&dir.join("apiserver"))),
            format!("--tls-cert-file={}", p(&pki.serving_cert)),
            format!("--tls-private-key-file={}", p(&pki.serving_key)),
            format!("--client-ca-file={}", p(&pki.ca_cert)),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
            format!("--service-account-key-file={}", p(&pki.service_account_public_key)),
            format!("--service-account-signing-key-file={}", p(&pki.service_account_key)),
            "--service-cluster-ip-range=10.96.0.0/16".into(),
            "--authorization-mode=RBAC".into(),
            "--allow-privileged=true".into(),
            "--endpoint-reconciler-type=none".into(),
            format!("--requestheader-client-ca-file={}", p(&pki.front_proxy_ca)),
            "--requestheader-allowed-names=front-proxy-client".into(),
            "--requestheader-username-headers=X-Remote-User".into(),
            "--requestheader-group-headers=X-Remote-Group".into(),
            "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
            format!("--proxy-client-cert-file={}", p(&pki.front_proxy_cert)),
            format!("--proxy-client-key-file={}", p(&pki.front_proxy_key)),
            format!("--feature-gates={}", gates_of(crate::suite::DraComponent::KubeApiserver)),
            format!("--runtime-config={}", opts.runtime_config.join(",")),
        ];
        if opts.audit {
            let policy = dir.join("audit-policy.yaml");
            std::fs::write(&policy, crate::backend::audit::POLICY).map_err(io(&policy))?;
            let log = dir.join("logs").join("audit.log");
            apiserver.extend(crate::backend::audit::apiserver_flags(&policy, &log));
            self.audit_log = Some(log);
        }
        self.supervisor.spawn(
            KUBE_APISERVER,
            &build.bin("kube-apiserver"),
            &apiserver,
            &[],
            &self.log("kube-apiserver"),
        )?;
        let server = format!("https://127.0.0.1:{api_port}");
        std::fs::write(&self.kubeconfig, kubeconfig_text(&server, &pki)).map_err(io(&self.kubeconfig))?;
        let client = crate::backend::upstream::client_from(&self.kubeconfig)
            .await
            .map_err(|message| PlaneError::Api { what: "building a client for kube-apiserver".into(), message })?;
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            if readyz(&client).await {
                break;
            }
            self.supervisor.check()?;
            if Instant::now() >= deadline {
                let log = self.log("kube-apiserver");
                return Err(PlaneError::NotReady {
                    component: "kube-apiserver".into(),
                    timeout: Duration::from_secs(90),
                    tail: crate::backend::upstream::process::log_tail(&log, 30),
                    log,
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        let kubeconfig = p(&self.kubeconfig);
        let (kcm_port, sched_port) = (free_port()?, free_port()?);
        let kcm = [
            format!("--kubeconfig={kubeconfig}"),
            format!("--authentication-kubeconfig={kubeconfig}"),
            format!("--authorization-kubeconfig={kubeconfig}"),
            "--leader-elect=false".into(),
            "--bind-address=127.0.0.1".into(),
            format!("--secure-port={kcm_port}"),
            format!("--cert-dir={}", p(&dir.join("kcm"))),
            format!("--controllers={}", opts.kcm_controllers.join(",")),
            format!("--feature-gates={}", gates_of(crate::suite::DraComponent::KubeControllerManager)),
            format!("--service-account-private-key-file={}", p(&pki.service_account_key)),
            format!("--root-ca-file={}", p(&pki.ca_cert)),
            format!("--cluster-signing-cert-file={}", p(&pki.ca_cert)),
            format!("--cluster-signing-key-file={}", p(&pki.ca_key)),
            "--kube-api-qps=200".into(),
            "--kube-api-burst=400".into(),
        ];
        self.supervisor.spawn(
            "kube-controller-manager",
            &build.bin("kube-controller-manager"),
            &kcm,
            &[],
            &self.log("kube-controller-manager"),
        )?;
        let scheduler = [
            format!("--kubeconfig={kubeconfig}"),
            format!("--authentication-kubeconfig={kubeconfig}"),
            format!("--authorization-kubeconfig={kubeconfig}"),
            "--leader-elect=false".into(),
            "--bind-address=127.0.0.1".into(),
            format!("--secure-port={sched_port}"),
            format!("--cert-dir={}", p(&dir.join("scheduler"))),
            format!("--feature-gates={}", gates_of(crate::suite::DraComponent::KubeScheduler)),
        ];
        self.supervisor.spawn(
            "kube-scheduler",
            &build.bin("kube-scheduler"),
            &scheduler,
            &[],
            &self.log("kube-scheduler"),
        )?;

        // Install the custom resources while kcm and the scheduler start.
        let manifests = build.manifests();
        let kueue_webhook_port = free_port()?;
        if opts.kueue {
            if opts.kueue_binary.is_none() {
                build.require(&["kueue"])?;
            }
            let default_yaml = opts.kueue_manifests.clone().unwrap_or_else(|| manifests.join("kueue/default.yaml"));
            let objects = crate::backend::upstream::kueue::objects(&default_yaml, kueue_webhook_port)
                .map_err(|message| PlaneError::Api { what: "reading Kueue's manifests".into(), message })?;
            crate::backend::upstream::install::create_all(&client, &objects)
                .await
                .map_err(|message| PlaneError::Api { what: "installing Kueue's objects".into(), message })?;
        }
        let kuberay_crds = opts.ray_operator_crds.clone().unwrap_or_else(|| manifests.join("kuberay/crd"));
        let gateway_api = opts.gateway_api.then(|| manifests.join("gateway-api/standard"));
        for dir in std::iter::once(kuberay_crds).chain(gateway_api) {
            let objects = crate::backend::upstream::install::read_dir(&dir)
                .map_err(|message| PlaneError::Api { what: format!("reading {}", dir.display()), message })?;
            crate::backend::upstream::install::create_all(&client, &objects)
                .await
                .map_err(|message| PlaneError::Api { what: format!("installing {}", dir.display()), message })?;
        }
        crate::backend::upstream::install::wait_established(&client, Duration::from_secs(60))
            .await
            .map_err(|message| PlaneError::Api { what: "waiting for the CRDs".into(), message })?;
        self.wait("kube-controller-manager", Duration::from_secs(60), || listening(kcm_port)).await?;
        self.wait("kube-scheduler", Duration::from_secs(60), || listening(sched_port)).await?;

        let version = |c: &str| build.version(c).unwrap_or("?").to_string();
        let server_version =
            client.apiserver_version().await.map(|v| v.git_version).unwrap_or_else(|_| version("kube-apiserver"));
        self.components.insert("etcd".into(), version("etcd"));
        self.components.insert("kube-apiserver".into(), server_version);
        self.components.insert("kube-controller-manager".into(), version("kube-controller-manager"));
        self.components.insert("kube-scheduler".into(), version("kube-scheduler"));

        if opts.kueue {
            let health = free_port()?;
            let kueue_dir = dir.join("kueue");
            let cert_dir = kueue_dir.join("certs");
            std::fs::create_dir_all(&cert_dir).map_err(io(&cert_dir))?;
            let config = kueue_dir.join("config.yaml");
            std::fs::write(&config, crate::backend::upstream::kueue::config(health, kueue_webhook_port, &cert_dir))
                .map_err(io(&config))?;
            let (binary, kueue_version) = match &opts.kueue_binary {
                Some((path, v)) => (path.clone(), v.clone()),
                None => (build.bin("kueue"), version("kueue")),
            };
            self.supervisor.spawn(
                KUEUE,
                &binary,
                &[format!("--config={}", p(&config)), format!("--kubeconfig={kubeconfig}")],
                &[],
                &self.log("kueue"),
            )?;
            let copier = tokio::spawn(crate::backend::upstream::kueue::copy_webhook_certs(client.clone(), cert_dir));
            self.health.insert(KUEUE.into(), health);
            let ready = self.wait(KUEUE, Duration::from_secs(120), || http_ok(health, "/readyz")).await;
            copier.abort();
            ready?;
            self.kueue_rayservice_upgrade_gate =
                crate::backend::upstream::kueue::offers_rayservice_upgrade_gate(&client, Duration::from_secs(30))
                    .await
                    .map_err(|message| PlaneError::Api { what: "asking Kueue's RayService webhook".into(), message })?;
            self.components.insert("kueue".into(), kueue_version);
            self.kueue = true;
        }

        if opts.kuberay {
            let (binary, ray_version) = match &opts.ray_operator {
                Some((path, v)) => (path.clone(), v.clone()),
                None => {
                    build.require(&["ray-operator"])?;
                    (build.bin("ray-operator"), version("ray-operator"))
                }
            };
            let probe = free_port()?;
            let mut env: Vec<(String, String)> = opts
                .http_proxy
                .map(|a| {
                    vec![
                        ("HTTP_PROXY".to_string(), format!("http://{a}")),
                        ("NO_PROXY".into(), "127.0.0.1,localhost".into()),
                    ]
                })
                .unwrap_or_default();
            env.extend(opts.kuberay_env.iter().cloned());
            let mut args = vec![
                format!("--kubeconfig={kubeconfig}"),
                "--enable-leader-election=false".into(),
                "--metrics-addr=0".into(),
                format!("--health-probe-bind-address=127.0.0.1:{probe}"),
                "--log-stdout-encoder=console".into(),
            ];
            args.extend(opts.kuberay_feature_gates.iter().map(|g| format!("--feature-gates={g}")));
            self.supervisor.spawn(RAY_OPERATOR, &binary, &args, &env, &self.log(RAY_OPERATOR))?;
            self.health.insert(RAY_OPERATOR.into(), probe);
            self.wait(RAY_OPERATOR, Duration::from_secs(60), || http_ok(probe, "/readyz")).await?;
            self.components.insert("kuberay-operator".into(), ray_version);
            self.kuberay = true;
        }
        Ok(())
    }

    /// The run directory (logs under `logs/`).
    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// Stops every process (newest first) and removes the run directory unless kept.
    pub fn stop(mut self) -> Vec<String> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Vec<String> {
        let killed = self.supervisor.stop_all();
        if !self.keep_run_dir {
            let _ = std::fs::remove_dir_all(&self.run_dir);
        }
        killed
    }

    /// Stops one component (`ray-operator`, ...), keeping how to start it; `true` if it had to be
    /// killed.
    pub fn stop_component(&mut self, component: &str) -> Result<bool, ProcessError> {
        self.supervisor.stop_one(component)
    }

    /// Starts a component stopped with [`ControlPlane::stop_component`] again, and waits until
    /// it is ready (an operator's webhooks answer only then).
    pub fn start_component(&mut self, component: &str) -> Result<(), ProcessError> {
        self.supervisor.start_again(component)?;
        self.wait_ready(component)
    }

    /// Stops one component and starts it again as it was, and waits until it is ready; `true` if
    /// it had to be killed.
    pub fn restart(&mut self, component: &str) -> Result<bool, ProcessError> {
        let killed = self.supervisor.restart(component)?;
        self.wait_ready(component)?;
        Ok(killed)
    }

    /// Freezes a component (SIGSTOP) or lets it go on (SIGCONT).
    pub fn freeze_component(&mut self, component: &str, frozen: bool) -> Result<(), ProcessError> {
        self.supervisor.freeze(component, frozen)
    }

    /// Waits up to two minutes for `component`'s health endpoint, if it has one, to answer ready
    /// (kube-apiserver's `/readyz`, the operators' probe ports).
    fn wait_ready(&mut self, component: &str) -> Result<(), ProcessError> {
        let ready: Box<dyn Fn() -> bool> = match self.health.get(component) {
            Some(&port) => Box::new(move || http_ok(port, "/readyz")),
            None if component == KUBE_APISERVER => {
                let kubeconfig = self.kubeconfig.clone();
                Box::new(move || apiserver_ready(&kubeconfig))
            }
            None => return Ok(()),
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        while !ready() {
            self.supervisor.check()?;
            if Instant::now() >= deadline {
                return Err(ProcessError::NotReady(component.to_string()));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }

    /// Whether every process still runs (`Err` names the first that exited, with its log).
    pub fn check(&mut self) -> Result<(), ProcessError> {
        self.supervisor.check()
    }

    /// The components as a JSON object (for reports).
    pub fn components_json(&self) -> Value {
        json!(self.components)
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Whether the kube-apiserver `kubeconfig` reaches answers `/readyz` with ok, asked from a
/// thread of its own (callers may be inside a tokio runtime, which cannot block on another).
fn apiserver_ready(kubeconfig: &Path) -> bool {
    let kubeconfig = kubeconfig.to_path_buf();
    let ask = move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
        runtime.block_on(async {
            let client = crate::backend::upstream::client_from(&kubeconfig).await.ok()?;
            Some(readyz(&client).await)
        })
    };
    std::thread::spawn(ask).join().ok().flatten().unwrap_or(false)
}

/// Whether kube-apiserver's `/readyz` answers `ok`.
async fn readyz(client: &kube::Client) -> bool {
    let Ok(request) = http::Request::get("/readyz").body(Vec::new()) else { return false };
    matches!(tokio::time::timeout(Duration::from_secs(2), client.request_text(request)).await, Ok(Ok(text)) if text.trim() == "ok")
}
