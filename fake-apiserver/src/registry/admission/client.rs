//! One HTTPS POST of an `AdmissionReview` to a webhook, as kube-apiserver's webhook client makes
//! it: TLS verified against the configuration's `caBundle`, the server name of the URL (or
//! `<service>.<namespace>.svc` for a service reference), `?timeout=<n>s` on the URL, one deadline
//! for connecting, writing and reading.
//!
//! The call blocks its thread: admission runs inside the store's write path, which is
//! synchronous. HTTP/1.1 with `Connection: close`, a `Content-Length` or chunked answer.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};

/// Where a call goes.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The URL as kube-apiserver prints it in errors (`https://host:port/path?timeout=10s`).
    pub url: String,
    /// The name the serving certificate must carry.
    pub server_name: String,
    /// Where to connect (the URL's host resolved, or a service's endpoint).
    pub connect: String,
    /// The request path with its query.
    pub path_and_query: String,
}

/// Why a call has no answer to use.
#[derive(Debug, Clone)]
pub(crate) enum Failure {
    /// The call did not complete (connecting, TLS, the deadline): Go's `url.Error` says
    /// `Post "<url>": <this>`.
    Transport(String),
    /// The webhook answered with a status other than 2xx: the message of client-go's
    /// `StatusError` for it.
    Answered(String),
}

impl Failure {
    /// As kube-apiserver prints the error of a call to `url`.
    pub(crate) fn describe(&self, url: &str) -> String {
        match self {
            Failure::Transport(e) => format!("Post \"{url}\": {e}"),
            Failure::Answered(m) => m.clone(),
        }
    }
}

/// The answer's body, or why there is none.
pub(crate) fn post(target: &Target, ca_bundle: &[u8], body: &[u8], timeout: Duration) -> Result<Vec<u8>, Failure> {
    call(target, ca_bundle, body, timeout).map_err(Failure::Transport)?.into_answer()
}

/// An HTTP answer: status, whether its body is text, the body.
struct Answer {
    status: u16,
    text: bool,
    body: Vec<u8>,
}

impl Answer {
    /// The body of a 2xx answer, else client-go's error for it: the `Status` the body holds,
    /// or `errors.NewGenericServerResponse`'s wording (a text body is the server's message).
    fn into_answer(self) -> Result<Vec<u8>, Failure> {
        if (200..300).contains(&self.status) {
            return Ok(self.body);
        }
        if let Ok(status) = serde_json::from_slice::<serde_json::Value>(&self.body)
            && status["kind"] == "Status"
            && let Some(m) = status["message"].as_str()
        {
            return Err(Failure::Answered(m.to_string()));
        }
        let server_message = if self.text {
            String::from_utf8_lossy(&self.body[..self.body.len().min(1024)]).trim().to_string()
        } else {
            "unknown".to_string()
        };
        let message = match self.status {
            409 => "the server reported a conflict".to_string(),
            404 => "the server could not find the requested resource".to_string(),
            400 => "the server rejected our request for an unknown reason".to_string(),
            401 => "the server has asked for the client to provide credentials".to_string(),
            403 | 415 => server_message,
            405 => "the server does not allow this method on the requested resource".to_string(),
            422 => "the server rejected our request due to an error in our request".to_string(),
            503 => "the server is currently unable to handle the request".to_string(),
            504 => "the server was unable to return a response in the time allotted, but may still be processing the request"
                .to_string(),
            429 => "the server has received too many requests and has asked us to try again later".to_string(),
            c if c >= 500 => {
                format!("an error on the server ({}) has prevented the request from succeeding", apimachinery::go::quote(&server_message))
            }
            c => format!("the server responded with the status code {c} but did not return more information"),
        };
        Err(Failure::Answered(message))
    }
}

fn call(target: &Target, ca_bundle: &[u8], body: &[u8], timeout: Duration) -> Result<Answer, String> {
    let deadline = Instant::now() + timeout;
    let config = tls_config(ca_bundle)?;
    let name = ServerName::try_from(target.server_name.clone())
        .map_err(|e| format!("invalid server name {:?}: {e}", target.server_name))?;
    let addr = resolve(&target.connect)?;
    let sock = TcpStream::connect_timeout(&addr, timeout).map_err(|e| dial_error(&addr, &e))?;
    let left = || deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    // How Go's client words a failed read or write: the handshake's certificate check, the
    // deadline, or the error itself.
    let io_error = |e: std::io::Error| match e.kind() {
        _ if e.to_string().contains("certificate") => format!("tls: failed to verify certificate: {e}"),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            "context deadline exceeded (Client.Timeout exceeded while awaiting headers)".to_string()
        }
        _ => e.to_string(),
    };
    sock.set_write_timeout(Some(left())).map_err(|e| e.to_string())?;
    sock.set_read_timeout(Some(left())).map_err(|e| e.to_string())?;
    let conn = rustls::ClientConnection::new(config, name).map_err(|e| e.to_string())?;
    let mut tls = rustls::StreamOwned::new(conn, sock);
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, */*\r\n\
         User-Agent: kube-apiserver-admission\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        target.path_and_query,
        host_header(&target.url),
        body.len()
    );
    tls.write_all(head.as_bytes()).and_then(|()| tls.write_all(body)).and_then(|()| tls.flush()).map_err(io_error)?;
    tls.sock.set_read_timeout(Some(left())).map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(tls);
    let (status, chunked, length, text) = read_head(&mut reader).map_err(io_error)?;
    let body = if chunked {
        read_chunked(&mut reader).map_err(io_error)?
    } else {
        let mut out = Vec::new();
        match length {
            Some(n) => {
                out.resize(n, 0);
                reader.read_exact(&mut out).map_err(io_error)?;
            }
            None => {
                // Until the server closes; a missing close_notify at the end is no error.
                if let Err(e) = reader.read_to_end(&mut out)
                    && e.kind() != std::io::ErrorKind::UnexpectedEof
                {
                    return Err(io_error(e));
                }
            }
        }
        out
    };
    Ok(Answer { status, text, body })
}

/// The roots are the `caBundle` alone (kube-apiserver adds the system roots when it is empty;
/// there are none here).
fn tls_config(ca_bundle: &[u8]) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    let mut bundle = Vec::new();
    for cert in CertificateDer::pem_slice_iter(ca_bundle) {
        let cert = cert.map_err(|e| format!("unable to load root certificates: {e}"))?;
        roots.add(cert.clone()).map_err(|e| format!("unable to load root certificates: {e}"))?;
        bundle.push(cert);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let config = match rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build() {
        Ok(inner) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(GoRoots { inner, bundle }))
            .with_no_client_auth(),
        // No roots at all: every certificate is refused, as a call without a usable bundle is.
        Err(_) => builder.with_root_certificates(rustls::RootCertStore::empty()).with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// Web PKI verification, plus Go's rule that a server certificate found in the roots is
/// trusted as it is (`x509.Certificate.Verify`), its name still checked.
#[derive(Debug)]
struct GoRoots {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    bundle: Vec<CertificateDer<'static>>,
}

impl rustls::client::danger::ServerCertVerifier for GoRoots {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Ok(v) => Ok(v),
            Err(e) if self.bundle.iter().any(|c| c.as_ref() == end_entity.as_ref()) => {
                let cert = webpki::EndEntityCert::try_from(end_entity).map_err(|_| e.clone())?;
                cert.verify_is_valid_for_subject_name(server_name)
                    .map_err(|_| rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName))?;
                Ok(rustls::client::danger::ServerCertVerified::assertion())
            }
            Err(e) => Err(e),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

fn resolve(connect: &str) -> Result<SocketAddr, String> {
    connect
        .to_socket_addrs()
        .map_err(|e| format!("dial tcp: lookup {connect}: {e}"))?
        .next()
        .ok_or_else(|| format!("dial tcp: lookup {connect}: no such host"))
}

fn dial_error(addr: &SocketAddr, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => format!("dial tcp {addr}: connect: connection refused"),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
            format!("dial tcp {addr}: i/o timeout")
        }
        _ => format!("dial tcp {addr}: {e}"),
    }
}

fn host_header(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split(['/', '?']).next().unwrap_or(rest)
}

/// The status code, whether the body is chunked, and its `Content-Length`.
/// The status line and headers: status, chunked, length, whether the body is text.
fn read_head(r: &mut impl BufRead) -> std::io::Result<(u16, bool, Option<usize>, bool)> {
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
    let mut line = String::new();
    r.read_line(&mut line)?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(|| bad("malformed HTTP response"))?;
    let (mut chunked, mut length, mut text) = (false, None, false);
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Err(bad("unexpected EOF in the response headers"));
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            let (k, v) = (k.trim(), v.trim());
            if k.eq_ignore_ascii_case("content-length") {
                length = Some(v.parse().map_err(|_| bad("malformed Content-Length"))?);
            } else if k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked") {
                chunked = true;
            } else if k.eq_ignore_ascii_case("content-type") {
                text = v.to_ascii_lowercase().starts_with("text/");
            }
        }
    }
    Ok((status, chunked, length, text))
}

fn read_chunked(r: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "malformed chunked encoding");
    let mut out = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        r.read_line(&mut line)?;
        let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16).map_err(|_| bad())?;
        if size == 0 {
            return Ok(out);
        }
        let start = out.len();
        out.resize(start + size, 0);
        r.read_exact(&mut out[start..])?;
        let mut crlf = [0u8; 2];
        r.read_exact(&mut crlf)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_and_plain_bodies() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n2;x=y\r\nef\r\n0\r\n\r\n";
        let mut r = BufReader::new(&raw[..]);
        assert_eq!(read_head(&mut r).unwrap(), (200, true, None, false));
        assert_eq!(read_chunked(&mut r).unwrap(), b"abcdef");
        let raw = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 3\r\nContent-Type: text/plain\r\n\r\nabc";
        let mut r = BufReader::new(&raw[..]);
        assert_eq!(read_head(&mut r).unwrap(), (503, false, Some(3), true));
    }

    #[test]
    fn a_non_2xx_answer_is_worded_as_client_go_words_it() {
        let answered =
            |status: u16, text: bool, body: &str| match (Answer { status, text, body: body.into() }).into_answer() {
                Err(Failure::Answered(m)) => m,
                other => panic!("{other:?}"),
            };
        assert_eq!(
            answered(500, true, "boom\n"),
            "an error on the server (\"boom\") has prevented the request from succeeding"
        );
        assert_eq!(
            answered(500, false, "{}"),
            "an error on the server (\"unknown\") has prevented the request from succeeding"
        );
        assert_eq!(answered(404, true, "x"), "the server could not find the requested resource");
        assert_eq!(
            answered(418, true, "x"),
            "the server responded with the status code 418 but did not return more information"
        );
        let status =
            r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"from the webhook","code":500}"#;
        assert_eq!(answered(500, false, status), "from the webhook");
        let ok = Answer { status: 200, text: false, body: b"{}".to_vec() }.into_answer();
        assert_eq!(ok.unwrap(), b"{}");
    }

    #[test]
    fn host_of_url() {
        assert_eq!(host_header("https://127.0.0.1:9443/mutate?timeout=10s"), "127.0.0.1:9443");
        assert_eq!(host_header("https://svc.ns.svc:443"), "svc.ns.svc:443");
    }

    #[test]
    fn refused_connection_is_a_dial_error() {
        // A port nothing listens on: bind one, note it, drop it.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let target = Target {
            url: format!("https://127.0.0.1:{port}/x?timeout=1s"),
            server_name: "127.0.0.1".into(),
            connect: format!("127.0.0.1:{port}"),
            path_and_query: "/x?timeout=1s".into(),
        };
        let err = post(&target, b"", b"{}", Duration::from_secs(1)).unwrap_err();
        let Failure::Transport(e) = &err else { panic!("{err:?}") };
        assert!(e.contains("connection refused"), "{e}");
        assert!(err.describe(&target.url).starts_with(&format!("Post \"{}\": ", target.url)));
    }
}
