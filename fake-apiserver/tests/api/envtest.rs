//! envtest mode: kube-apiserver and etcd without kube-controller-manager, as controller-runtime's
//! envtest runs them. Each test runs the same requests in both modes, so it fails if the mode
//! changed nothing.

use crate::common::{get, post, raw};
use fake_apiserver::{ApiServer, Config};
use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;

fn server(envtest: bool) -> ApiServer {
    ApiServer::new(Config { envtest, ..Config::default() })
}

/// An owner and a dependent in `ns`; then the owner is deleted. Returns whether the dependent
/// is still there.
async fn dependent_outlives_owner(server: &ApiServer) -> bool {
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let owner = cms
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "owner"}})).unwrap())
        .await
        .unwrap();
    let dependent: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "dependent", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}]}}))
    .unwrap();
    cms.create(&PostParams::default(), &dependent).await.unwrap();
    raw(server, Method::DELETE, "/api/v1/namespaces/default/configmaps/owner", None, "").await;
    assert!(cms.get_opt("owner").await.unwrap().is_none());
    cms.get_opt("dependent").await.unwrap().is_some()
}

#[tokio::test]
async fn no_garbage_collector_runs_in_envtest_mode() {
    assert!(!dependent_outlives_owner(&server(false)).await, "the garbage collector runs by default");
    assert!(dependent_outlives_owner(&server(true)).await, "envtest runs no garbage collector");
}

/// Deletes namespace `apps` holding one ConfigMap; returns the namespace's phase afterwards
/// (`None` once it is gone) and whether the ConfigMap is left.
async fn delete_namespace(server: &ApiServer) -> (Option<String>, bool) {
    let (code, body) = post(server, "/api/v1/namespaces", &json!({"metadata": {"name": "apps"}})).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "apps");
    cms.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "c"}})).unwrap())
        .await
        .unwrap();
    raw(server, Method::DELETE, "/api/v1/namespaces/apps", None, "").await;
    let (code, ns) = get(server, "/api/v1/namespaces/apps").await;
    let phase = (code == StatusCode::OK).then(|| ns["status"]["phase"].as_str().unwrap_or_default().to_string());
    (phase, cms.get_opt("c").await.unwrap().is_some())
}

#[tokio::test]
async fn a_deleted_namespace_stays_terminating_in_envtest_mode() {
    assert_eq!(delete_namespace(&server(false)).await, (None, false), "the namespace controller runs by default");
    assert_eq!(
        delete_namespace(&server(true)).await,
        (Some("Terminating".to_string()), true),
        "envtest has no namespace controller: the namespace keeps its content and its finalizer"
    );
}

#[tokio::test]
async fn creates_in_a_terminating_namespace_are_refused_in_envtest_mode() {
    let server = server(true);
    delete_namespace(&server).await;
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "apps");
    let err = cms
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "late"}})).unwrap())
        .await
        .unwrap_err();
    // kube-apiserver's NamespaceLifecycle admission plugin, which envtest's kube-apiserver runs.
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 403 && s.reason == "Forbidden"), "{err}");
}

/// The binary invoked as `kube-apiserver` with the flags controller-runtime's envtest gives it
/// (`controlplane/apiserver.go`): it serves TLS with the certificate envtest wrote to
/// `--cert-dir`, answers `/healthz`, and knows a user by the client certificate
/// `--client-ca-file`'s CA signed (CN the name, O the groups), as `SelfSubjectReview` shows. As
/// `etcd` it answers `/health`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_stands_in_for_envtests_kube_apiserver_and_etcd() {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};
    let dir = tempfile::tempdir().unwrap();
    let cert_dir = dir.path().join("certs");
    std::fs::create_dir_all(&cert_dir).unwrap();
    let ca = |name: &str| {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().unwrap();
        let cert = p.self_signed(&key).unwrap();
        (cert, key, p)
    };
    // The serving certificate, signed by one CA; the client certificate by another.
    let (serving_ca, serving_ca_key, serving_ca_params) = ca("serving-ca");
    let mut serving = CertificateParams::new(vec!["localhost".into()]).unwrap();
    serving.subject_alt_names.push(SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
    let serving_key = KeyPair::generate().unwrap();
    let serving_cert = serving.signed_by(&serving_key, &Issuer::new(serving_ca_params, serving_ca_key)).unwrap();
    std::fs::write(cert_dir.join("apiserver.crt"), serving_cert.pem()).unwrap();
    std::fs::write(cert_dir.join("apiserver.key"), serving_key.serialize_pem()).unwrap();
    let (client_ca, client_ca_key, client_ca_params) = ca("client-ca");
    std::fs::write(cert_dir.join("client-cert-auth-ca.crt"), client_ca.pem()).unwrap();
    let mut user = CertificateParams::new(Vec::<String>::new()).unwrap();
    user.distinguished_name.push(DnType::CommonName, "default");
    user.distinguished_name.push(DnType::OrganizationName, "system:masters");
    let user_key = KeyPair::generate().unwrap();
    let user_cert = user.signed_by(&user_key, &Issuer::new(client_ca_params, client_ca_key)).unwrap();

    let free_port = || std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (port, etcd_port) = (free_port(), free_port());
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["kube-apiserver", "etcd"] {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_fake-apiserver"), bin.join(name)).unwrap();
    }
    let help = std::process::Command::new(bin.join("kube-apiserver")).arg("--help").output().unwrap();
    assert!(!String::from_utf8_lossy(&help.stdout).contains("--insecure-port"), "envtest probes the flag");
    let _apiserver = Reaped(
        std::process::Command::new(bin.join("kube-apiserver"))
            .args([
                format!("--cert-dir={}", cert_dir.display()),
                format!("--secure-port={port}"),
                "--bind-address=127.0.0.1".into(),
                format!("--client-ca-file={}", cert_dir.join("client-cert-auth-ca.crt").display()),
                "--authorization-mode=RBAC".into(),
                "--disable-admission-plugins=ServiceAccount".into(),
                "--feature-gates=MutatingAdmissionPolicy=true".into(),
                format!("--etcd-servers=http://127.0.0.1:{etcd_port}"),
            ])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let _etcd = Reaped(
        std::process::Command::new(bin.join("etcd"))
            .args([format!("--listen-client-urls=http://127.0.0.1:{etcd_port}"), "--data-dir=/nonexistent".into()])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{port}\n    certificate-authority-data: {ca}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\nusers:\n- name: u\n  user:\n    client-certificate-data: {cert}\n    client-key-data: {key}\n",
        ca = b64(&serving_ca.pem()),
        cert = b64(&user_cert.pem()),
        key = b64(&user_key.serialize_pem()),
    );
    let config = kube::Config::from_custom_kubeconfig(
        serde_yaml_kubeconfig(&kubeconfig),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let mut health = None;
    for _ in 0..100 {
        let req = http::Request::get("/healthz").body(Vec::new()).unwrap();
        if let Ok(text) = client.request_text(req).await {
            health = Some(text);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(health.as_deref(), Some("ok"));
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let req = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&review).unwrap())
        .unwrap();
    let answer: serde_json::Value = client.request(req).await.unwrap();
    assert_eq!(answer["status"]["userInfo"]["username"], "default");
    assert_eq!(answer["status"]["userInfo"]["groups"], json!(["system:masters", "system:authenticated"]));
    let etcd_health = std::net::TcpStream::connect(("127.0.0.1", etcd_port)).and_then(|mut s| {
        use std::io::{Read, Write};
        s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")?;
        let mut out = String::new();
        s.read_to_string(&mut out)?;
        Ok(out)
    });
    assert!(etcd_health.unwrap().contains(r#"{"health":"true","reason":""}"#));
}

/// A child process killed and reaped when the test ends, passed or not.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn b64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn serde_yaml_kubeconfig(text: &str) -> kube::config::Kubeconfig {
    kube::config::Kubeconfig::from_yaml(text).unwrap()
}
