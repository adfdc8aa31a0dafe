//! TLS for the TCP listener: a self-signed serving certificate for `127.0.0.1` and
//! `localhost` (the kubeconfig trusts it as its certificate authority), HTTP/1.1 by ALPN, and a
//! listener whose handshakes run beside the accept loop so one slow client holds up no other.

use crate::endpoints::{Peer, certificate_user};
use rcgen::{CertificateParams, DnType, KeyPair, SanType};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::server::TlsStream;

/// A serving certificate and the acceptor that presents it.
pub(super) struct ServingCert {
    /// The certificate, PEM (the kubeconfig's `certificate-authority-data`).
    pub pem: String,
    pub acceptor: TlsAcceptor,
}

/// A fresh self-signed certificate for the loopback names.
pub(super) fn serving_cert() -> std::io::Result<ServingCert> {
    let err = |e: rcgen::Error| std::io::Error::other(format!("cannot make the serving certificate: {e}"));
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).map_err(err)?;
    params.subject_alt_names.push(SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
    params.distinguished_name.push(DnType::CommonName, "kproof fake-apiserver");
    let key = KeyPair::generate().map_err(err)?;
    let cert = params.self_signed(&key).map_err(err)?;
    let der = CertificateDer::from(cert.der().to_vec());
    let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let mut config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(vec![der], key_der)
        .map_err(std::io::Error::other)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(ServingCert { pem: cert.pem(), acceptor: TlsAcceptor::from(Arc::new(config)) })
}

/// A serving certificate and key from PEM files, and (with `client_ca`) client certificates
/// verified against that CA when a client offers one: kube-apiserver's `--tls-cert-file`,
/// `--tls-private-key-file` and `--client-ca-file`.
pub(super) fn acceptor_from_files(cert: &Path, key: &Path, client_ca: Option<&Path>) -> std::io::Result<TlsAcceptor> {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    let named = |path: &Path, e: &dyn std::fmt::Display| std::io::Error::other(format!("{}: {e}", path.display()));
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| named(cert, &e))?
        .collect::<Result<_, _>>()
        .map_err(|e| named(cert, &e))?;
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| named(key, &e))?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let builder = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?;
    let builder = match client_ca {
        Some(ca) => {
            let mut roots = tokio_rustls::rustls::RootCertStore::empty();
            for c in CertificateDer::pem_file_iter(ca).map_err(|e| named(ca, &e))? {
                roots.add(c.map_err(|e| named(ca, &e))?).map_err(|e| named(ca, &e))?;
            }
            let verifier =
                tokio_rustls::rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                    .allow_unauthenticated()
                    .build()
                    .map_err(|e| named(ca, &e))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(chain, key_der).map_err(std::io::Error::other)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A TLS listener for `axum::serve`: connections arrive once their handshake is done, each with
/// its [`Peer`] (the user of a verified client certificate).
pub(super) struct TlsListener {
    addr: SocketAddr,
    ready: mpsc::Receiver<(TlsStream<tokio::net::TcpStream>, Peer)>,
}

impl TlsListener {
    pub fn new(listener: TcpListener, acceptor: TlsAcceptor) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let (tx, ready) = mpsc::channel(64);
        tokio::spawn(async move {
            loop {
                // The loop (and the bound port) ends when the server drops the listener.
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    _ = tx.closed() => break,
                };
                let Ok((tcp, peer)) = accepted else { continue };
                let (acceptor, conn_tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    if let Ok(Ok(tls)) = tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
                        let user = tls
                            .get_ref()
                            .1
                            .peer_certificates()
                            .and_then(|chain| chain.first())
                            .and_then(|leaf| certificate_user(leaf.as_ref()))
                            .map(Arc::new);
                        let _ = conn_tx.send((tls, Peer { addr: peer, user })).await;
                    }
                });
            }
        });
        Ok(Self { addr, ready })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<tokio::net::TcpStream>;
    type Addr = Peer;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(conn) => conn,
            // The accept loop ends only once this listener is gone: not while serving.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(Peer { addr: self.addr, user: None })
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, TlsListener>> for Peer {
    fn connect_info(stream: axum::serve::IncomingStream<'_, TlsListener>) -> Self {
        stream.remote_addr().clone()
    }
}

/// An HTTPS server on a free loopback port for any router, with a fresh self-signed
/// certificate for `127.0.0.1` and `localhost`: an admission webhook that both this server and
/// a real kube-apiserver call (`kproof differential`). It stops when dropped.
pub struct HttpsServer {
    addr: SocketAddr,
    ca_pem: String,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl HttpsServer {
    /// Serves `router` until dropped.
    pub async fn start(router: axum::Router) -> std::io::Result<HttpsServer> {
        let cert = serving_cert()?;
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let listener = TlsListener::new(listener, cert.acceptor)?;
        let addr = axum::serve::Listener::local_addr(&listener)?.addr;
        let task = tokio::spawn(async move { axum::serve(listener, router).await });
        Ok(HttpsServer { addr, ca_pem: cert.pem, task })
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The certificate (PEM), which is its own authority: a webhook's `caBundle`.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
