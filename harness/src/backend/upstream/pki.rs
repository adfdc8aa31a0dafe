//! The certificates of a local control plane: a CA, kube-apiserver's serving certificate, an
//! admin client certificate in `system:masters` (every component and the harness use it), a
//! front-proxy CA and client certificate (without them kube-controller-manager and
//! kube-scheduler log a missing request-header CA bundle forever), and the service-account
//! signing key. Kueue issues its own webhook certificate.

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};
use std::path::{Path, PathBuf};

/// Why the certificates could not be made or written.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    /// Generating a key or signing a certificate failed.
    #[error("generating {what}: {source}")]
    Generate {
        /// Which certificate or key.
        what: &'static str,
        /// The underlying error.
        #[source]
        source: rcgen::Error,
    },
    /// Writing a file failed.
    #[error("writing {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// Where the files are, all PEM.
#[derive(Debug, Clone)]
pub struct Pki {
    /// The CA certificate (clients trust it; kube-apiserver verifies client certificates with it).
    pub ca_cert: PathBuf,
    /// The CA's key (kube-controller-manager signs CSRs with it).
    pub ca_key: PathBuf,
    /// The serving certificate, valid for loopback and the in-cluster service names.
    pub serving_cert: PathBuf,
    /// Its key.
    pub serving_key: PathBuf,
    /// The admin client certificate (`CN=kproof-admin`, `O=system:masters`).
    pub admin_cert: PathBuf,
    /// Its key.
    pub admin_key: PathBuf,
    /// The service-account token signing key.
    pub service_account_key: PathBuf,
    /// Its public half, which verifies the tokens.
    pub service_account_public_key: PathBuf,
    /// The front-proxy CA (kube-apiserver's `--requestheader-client-ca-file`).
    pub front_proxy_ca: PathBuf,
    /// The front-proxy client certificate (`CN=front-proxy-client`).
    pub front_proxy_cert: PathBuf,
    /// Its key.
    pub front_proxy_key: PathBuf,
}

/// Names the serving certificate is valid for: loopback and the `kubernetes` service names.
const SERVING_NAMES: &[&str] = &[
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
];

/// The first address of the service range (10.96.0.0/16): the `kubernetes` service's ClusterIP.
const KUBERNETES_SERVICE_IP: std::net::Ipv4Addr = std::net::Ipv4Addr::new(10, 96, 0, 1);

fn generate(what: &'static str) -> impl FnOnce(rcgen::Error) -> PkiError {
    move |source| PkiError::Generate { what, source }
}

fn write(path: PathBuf, text: &str) -> Result<PathBuf, PkiError> {
    std::fs::write(&path, text).map_err(|source| PkiError::Write { path: path.clone(), source })?;
    Ok(path)
}

fn new_ca(common_name: &str) -> Result<CertifiedIssuer<'static, KeyPair>, PkiError> {
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(generate("a CA"))?;
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, common_name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    let key = KeyPair::generate().map_err(generate("a CA key"))?;
    CertifiedIssuer::self_signed(params, key).map_err(generate("a CA"))
}

/// A client certificate for `common_name` (in `organization`, when given) signed by `issuer`.
fn client(
    issuer: &CertifiedIssuer<'static, KeyPair>,
    common_name: &str,
    organization: Option<&str>,
) -> Result<(String, String), PkiError> {
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(generate("a client certificate"))?;
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, common_name);
    if let Some(o) = organization {
        params.distinguished_name.push(DnType::OrganizationName, o);
    }
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    let key = KeyPair::generate().map_err(generate("a client key"))?;
    let cert = params.signed_by(&key, issuer).map_err(generate("a client certificate"))?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Creates every certificate and key in `dir`.
pub fn create(dir: &Path) -> Result<Pki, PkiError> {
    let ca = new_ca("kproof-ca")?;

    let mut serving = CertificateParams::new(SERVING_NAMES.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        .map_err(generate("the serving certificate"))?;
    serving.subject_alt_names.push(SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
    serving.subject_alt_names.push(SanType::IpAddress(KUBERNETES_SERVICE_IP.into()));
    serving.distinguished_name.push(DnType::CommonName, "kube-apiserver");
    serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    serving.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    let serving_key = KeyPair::generate().map_err(generate("the serving key"))?;
    let serving_cert = serving.signed_by(&serving_key, &ca).map_err(generate("the serving certificate"))?;

    let (admin_cert, admin_key) = client(&ca, "kproof-admin", Some("system:masters"))?;
    let front_proxy_ca = new_ca("kproof-front-proxy-ca")?;
    let (front_cert, front_key) = client(&front_proxy_ca, "front-proxy-client", None)?;
    let sa_key = KeyPair::generate().map_err(generate("the service-account key"))?;

    Ok(Pki {
        ca_cert: write(dir.join("ca.crt"), &ca.pem())?,
        ca_key: write(dir.join("ca.key"), &ca.key().serialize_pem())?,
        serving_cert: write(dir.join("apiserver.crt"), &serving_cert.pem())?,
        serving_key: write(dir.join("apiserver.key"), &serving_key.serialize_pem())?,
        admin_cert: write(dir.join("admin.crt"), &admin_cert)?,
        admin_key: write(dir.join("admin.key"), &admin_key)?,
        service_account_key: write(dir.join("sa.key"), &sa_key.serialize_pem())?,
        service_account_public_key: write(dir.join("sa.pub"), &sa_key.public_key_pem())?,
        front_proxy_ca: write(dir.join("front-proxy-ca.crt"), &front_proxy_ca.pem())?,
        front_proxy_cert: write(dir.join("front-proxy-client.crt"), &front_cert)?,
        front_proxy_key: write(dir.join("front-proxy-client.key"), &front_key)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_every_file_as_pem() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pki = create(dir.path()).expect("pki");
        for (path, header) in [
            (&pki.ca_cert, "-----BEGIN CERTIFICATE-----"),
            (&pki.serving_cert, "-----BEGIN CERTIFICATE-----"),
            (&pki.admin_cert, "-----BEGIN CERTIFICATE-----"),
            (&pki.serving_key, "-----BEGIN PRIVATE KEY-----"),
            (&pki.admin_key, "-----BEGIN PRIVATE KEY-----"),
            (&pki.service_account_key, "-----BEGIN PRIVATE KEY-----"),
            (&pki.service_account_public_key, "-----BEGIN PUBLIC KEY-----"),
            (&pki.front_proxy_ca, "-----BEGIN CERTIFICATE-----"),
            (&pki.front_proxy_cert, "-----BEGIN CERTIFICATE-----"),
            (&pki.ca_key, "-----BEGIN PRIVATE KEY-----"),
        ] {
            let text = std::fs::read_to_string(path).expect("readable");
            assert!(text.starts_with(header), "{}: {text}", path.display());
        }
    }
}
