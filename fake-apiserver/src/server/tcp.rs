//! The TCP transport: a listener on loopback with kube-apiserver's `--anonymous-auth=true`
//! authentication, a kubeconfig that points at it, and a clean shutdown.

use super::ApiServer;
use crate::endpoints::ListenerStop;
use std::net::SocketAddr;
use std::path::Path;
use tokio::sync::watch;

impl ApiServer {
    /// Serves the API on `addr` (use port 0 for any free port).
    ///
    /// Authentication is that of the router (kube-apiserver with `--anonymous-auth=true`): the
    /// kubeconfig carries the administrator's token; a token the server did not issue gets 401;
    /// no credentials at all is `system:anonymous`, allowed everything unless RBAC is on.
    pub async fn serve_tcp(&self, addr: SocketAddr) -> std::io::Result<TcpServer> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let token = self.admin_token();
        let app = self.router();
        let (stop_tx, mut stop) = watch::channel(false);
        let app = app.layer(axum::Extension(ListenerStop(stop.clone())));
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            axum::serve(listener, app).with_graceful_shutdown(shutdown).await
        });
        Ok(TcpServer { addr, token, ca_pem: None, stop: stop_tx, task })
    }

    /// Like [`ApiServer::serve_tcp`], over TLS with a fresh self-signed certificate that the
    /// kubeconfigs trust. kubectl sends a kubeconfig's token only over TLS: identities other
    /// than anonymous, and so RBAC, need this listener.
    pub async fn serve_tls(&self, addr: SocketAddr) -> std::io::Result<TcpServer> {
        let cert = super::tls::serving_cert()?;
        self.serve_tls_with(addr, cert.acceptor, Some(cert.pem)).await
    }

    /// Serves the API over TLS as envtest's kube-apiserver: the serving certificate and key of
    /// `--tls-cert-file` and `--tls-private-key-file`, and clients authenticated by certificates
    /// that `--client-ca-file` signed (envtest's users; see [`crate::endpoints`]'s filters).
    pub async fn serve_tls_files(
        &self,
        addr: SocketAddr,
        cert: &Path,
        key: &Path,
        client_ca: Option<&Path>,
    ) -> std::io::Result<TcpServer> {
        let acceptor = super::tls::acceptor_from_files(cert, key, client_ca)?;
        let pem = std::fs::read_to_string(cert)?;
        self.serve_tls_with(addr, acceptor, Some(pem)).await
    }

    async fn serve_tls_with(
        &self,
        addr: SocketAddr,
        acceptor: tokio_rustls::TlsAcceptor,
        ca_pem: Option<String>,
    ) -> std::io::Result<TcpServer> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let listener = super::tls::TlsListener::new(listener, acceptor)?;
        let addr = axum::serve::Listener::local_addr(&listener)?.addr;
        let token = self.admin_token();
        let (stop_tx, mut stop) = watch::channel(false);
        let app = self.router().layer(axum::Extension(ListenerStop(stop.clone())));
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            let app = app.into_make_service_with_connect_info::<crate::endpoints::Peer>();
            axum::serve(listener, app).with_graceful_shutdown(shutdown).await
        });
        Ok(TcpServer { addr, token, ca_pem, stop: stop_tx, task })
    }
}

/// A running TCP listener of an [`ApiServer`].
pub struct TcpServer {
    addr: SocketAddr,
    token: String,
    /// The serving certificate (PEM) when the listener speaks TLS.
    ca_pem: Option<String>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl TcpServer {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, or `https://` over TLS.
    pub fn url(&self) -> String {
        let scheme = if self.ca_pem.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The serving certificate (PEM) of a TLS listener.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// The bearer token clients must send.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// A kubeconfig (context `kproof`, namespace `default`) pointing at this listener, as
    /// the administrator.
    pub fn kubeconfig(&self) -> String {
        self.kubeconfig_with_token(&self.token)
    }

    /// A kubeconfig like [`TcpServer::kubeconfig`] whose user holds `token` (one of
    /// [`ApiServer::issue_token`]).
    pub fn kubeconfig_with_token(&self, token: &str) -> String {
        use base64::Engine;
        let ca = match &self.ca_pem {
            Some(pem) => {
                format!("\n    certificate-authority-data: {}", base64::engine::general_purpose::STANDARD.encode(pem))
            }
            None => String::new(),
        };
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kproof\n  cluster:\n    server: {url}{ca}\ncontexts:\n- name: kproof\n  context:\n    cluster: kproof\n    user: kproof\n    namespace: default\ncurrent-context: kproof\npreferences: {{}}\nusers:\n- name: kproof\n  user:\n    token: {token}\n",
            url = self.url(),
        )
    }

    /// Writes [`TcpServer::kubeconfig`] to `path`, atomically (a reader polling for the file
    /// never sees it half-written).
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        write_atomically(path, &self.kubeconfig())
    }

    /// Writes [`TcpServer::kubeconfig_with_token`] to `path`, atomically.
    pub fn write_kubeconfig_with_token(&self, path: &Path, token: &str) -> std::io::Result<()> {
        write_atomically(path, &self.kubeconfig_with_token(token))
    }

    /// Stops accepting connections, ends open watches and waits for in-flight requests.
    pub async fn shutdown(self) -> std::io::Result<()> {
        self.stop.send_replace(true);
        match self.task.await {
            Ok(r) => r,
            Err(e) => Err(std::io::Error::other(e)),
        }
    }
}

fn write_atomically(path: &Path, content: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, content)?;
    std::fs::rename(&tmp, path)
}

/// Waits for Ctrl-C or SIGTERM: how the binaries know to shut down cleanly.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}
