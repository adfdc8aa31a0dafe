//! The TCP transport: kubeconfig, bearer-token authentication, kube-rs over loopback, and the
//! `fake-apiserver` binary with graceful shutdown.

use fake_apiserver::ApiServer;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use std::net::SocketAddr;
use std::time::Duration;

async fn client_from(path: &std::path::Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(path).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.unwrap();
    kube::Client::try_from(cfg).unwrap()
}

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"a": "b"}})).unwrap()
}

#[tokio::test]
async fn kube_rs_over_tcp_with_the_generated_kubeconfig() {
    let server = ApiServer::default();
    let tcp = server.serve_tcp(SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    tcp.write_kubeconfig(&path).unwrap();
    let client = client_from(&path).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let mut w = cms
        .watch(&WatchParams::default().disable_bookmarks(), &server.resource_version().to_string())
        .await
        .unwrap()
        .boxed();
    cms.create(&PostParams::default(), &cm("over-tcp")).await.unwrap();
    match tokio::time::timeout(Duration::from_secs(10), w.next()).await.unwrap().unwrap().unwrap() {
        WatchEvent::Added(o) => assert_eq!(o.metadata.name.as_deref(), Some("over-tcp")),
        _ => panic!("expected ADDED"),
    }
    // The same store is visible in-process.
    let local: Api<ConfigMap> = Api::default_namespaced(server.client());
    assert!(local.get_opt("over-tcp").await.unwrap().is_some());
    let entry = server.timeline().into_iter().find(|e| e.name == "over-tcp").unwrap();
    assert_eq!(entry.verb.as_str(), "create");
    // An open watch does not block shutdown.
    tokio::time::timeout(Duration::from_secs(10), tcp.shutdown()).await.expect("graceful shutdown").unwrap();
}

/// Optimistic concurrency holds over TCP too: eight writers, no increment lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_writers_over_tcp_lose_no_increment() {
    let server = ApiServer::default();
    let tcp = server.serve_tcp(SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    tcp.write_kubeconfig(&path).unwrap();
    crate::common::eight_writers_lose_no_increment(client_from(&path).await).await;
    tcp.shutdown().await.unwrap();
}

/// Like kube-apiserver with anonymous auth on: no credentials is anonymous (allowed: there is
/// no RBAC); a wrong bearer token is 401.
#[tokio::test]
async fn a_wrong_token_is_401_and_no_credentials_is_anonymous() {
    let server = ApiServer::default();
    let tcp = server.serve_tcp(SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
    let get = |path: &str, token: Option<&str>| {
        let url = format!("{}{path}", tcp.url());
        let token = token.map(str::to_string);
        async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let addr = url.trim_start_matches("http://").split('/').next().unwrap().to_string();
            let path = format!("/{}", url.trim_start_matches("http://").split_once('/').map(|x| x.1).unwrap_or(""));
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
            s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).await.unwrap();
            out
        }
    };
    let denied = get("/api/v1/namespaces", Some("wrong")).await;
    assert!(denied.starts_with("HTTP/1.1 401"), "{denied}");
    assert!(denied.contains("\"reason\":\"Unauthorized\""));
    assert!(get("/api/v1/namespaces", None).await.starts_with("HTTP/1.1 200"));
    assert!(get("/api/v1/namespaces", Some(tcp.token())).await.starts_with("HTTP/1.1 200"));
    assert!(get("/healthz", None).await.starts_with("HTTP/1.1 200"));
    assert!(get("/version", None).await.starts_with("HTTP/1.1 200"));
    tcp.shutdown().await.unwrap();
}

#[cfg(unix)]
#[tokio::test]
async fn the_binary_serves_writes_a_kubeconfig_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kc");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_fake-apiserver"))
        .args(["--port", "0", "--kubeconfig"])
        .arg(&path)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    tokio::time::timeout(Duration::from_secs(20), async {
        while !path.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("kubeconfig written");
    let client = client_from(&path).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    cms.create(&PostParams::default(), &cm("from-binary")).await.unwrap();
    let _open_watch = cms.watch(&WatchParams::default(), "0").await.unwrap();
    let pid = child.id().unwrap() as i32;
    // SAFETY: sending a signal to our own child process.
    assert_eq!(unsafe { libc_kill(pid, 15) }, 0);
    let status =
        tokio::time::timeout(Duration::from_secs(10), child.wait()).await.expect("exits after SIGTERM").unwrap();
    assert!(status.success(), "{status:?}");
}

#[cfg(unix)]
unsafe extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// Over TLS the kubeconfig trusts the server's self-signed certificate and carries the token:
/// the administrator's may do everything with RBAC on, a service account's what its roles allow.
#[tokio::test]
async fn tls_listener_with_identity_kubeconfigs_and_rbac() {
    let server = ApiServer::new(fake_apiserver::Config { rbac: true, ..Default::default() });
    let tcp = server.serve_tls(SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
    assert!(tcp.url().starts_with("https://127.0.0.1:"));
    assert!(tcp.ca_pem().unwrap().starts_with("-----BEGIN CERTIFICATE-----"));
    let dir = tempfile::tempdir().unwrap();
    let admin_path = dir.path().join("admin");
    tcp.write_kubeconfig(&admin_path).unwrap();
    let admin = client_from(&admin_path).await;
    Api::<ConfigMap>::default_namespaced(admin).create(&PostParams::default(), &cm("tls")).await.unwrap();

    let ctl_path = dir.path().join("ctl");
    let token = server.issue_token(fake_apiserver::UserInfo::from_spec("serviceaccount:default/ctl").unwrap());
    tcp.write_kubeconfig_with_token(&ctl_path, &token).unwrap();
    let ctl = client_from(&ctl_path).await;
    let err = Api::<ConfigMap>::default_namespaced(ctl).get("tls").await.unwrap_err();
    let kube::Error::Api(status) = err else { panic!("not an API error: {err}") };
    assert_eq!(
        status.message,
        "configmaps \"tls\" is forbidden: User \"system:serviceaccount:default:ctl\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    assert!(fake_apiserver::UserInfo::from_spec("serviceaccount:nope").is_err());
    tcp.shutdown().await.unwrap();
}
