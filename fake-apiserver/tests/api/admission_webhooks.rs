//! Configured admission webhooks called over HTTPS: a real TLS server on loopback (its own
//! thread) answers `AdmissionReview`s by path, and records what it was asked. Each test
//! installs a `MutatingWebhookConfiguration` or `ValidatingWebhookConfiguration` through the API
//! and checks what kube-apiserver would do: patches applied, denials and failures answered
//! with its codes and messages, rules, selectors and match conditions, dry run and side
//! effects, reinvocation, service references, deletes, warnings.

use super::common::{get, post, raw, raw_full};
use axum::body::Body;
use base64::Engine;
use fake_apiserver::ApiServer;
use http::{Method, StatusCode};
use rcgen::{CertificateParams, KeyPair, SanType};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_rustls::rustls;

/// What the webhook server was asked: (path, request).
type Seen = Arc<Mutex<Vec<(String, Value)>>>;

/// A webhook server on `127.0.0.1`; its certificate names `127.0.0.1` and `hook.default.svc`.
struct HookServer {
    port: u16,
    ca_bundle: String,
    seen: Seen,
}

impl HookServer {
    /// A server with a self-signed certificate, which is its own bundle.
    fn start() -> Self {
        Self::start_with(false)
    }

    /// With `leaf_bundle`, the certificate is signed by a CA the bundle leaves out: the bundle
    /// is the serving certificate itself, as envtest's `WebhookInstallOptions` hands it out.
    fn start_with(leaf_bundle: bool) -> Self {
        let mut params = CertificateParams::new(vec!["hook.default.svc".to_string()]).unwrap();
        params.subject_alt_names.push(SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
        let key = KeyPair::generate().unwrap();
        let cert = if leaf_bundle {
            let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
            ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            let issuer = rcgen::Issuer::new(ca, KeyPair::generate().unwrap());
            params.signed_by(&key, &issuer).unwrap()
        } else {
            params.self_signed(&key).unwrap()
        };
        let der = rustls::pki_types::CertificateDer::from(cert.der().to_vec());
        let key_der =
            rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![der], key_der)
            .unwrap();
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen: Seen = Arc::default();
        let record = seen.clone();
        std::thread::spawn(move || {
            for sock in listener.incoming().flatten() {
                let (config, record) = (config.clone(), record.clone());
                std::thread::spawn(move || {
                    let conn = rustls::ServerConnection::new(config).unwrap();
                    let mut tls = rustls::StreamOwned::new(conn, sock);
                    let _ = serve_one(&mut tls, &record);
                });
            }
        });
        let ca_bundle = base64::engine::general_purpose::STANDARD.encode(cert.pem());
        HookServer { port, ca_bundle, seen }
    }

    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// The requests seen on `path`, in order.
    fn seen(&self, path: &str) -> Vec<Value> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p.split('?').next() == Some(path))
            .map(|(_, r)| r.clone())
            .collect()
    }
}

fn serve_one(tls: &mut (impl Read + Write), seen: &Seen) -> std::io::Result<()> {
    let mut reader = BufReader::new(&mut *tls);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut length = 0;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h)?;
        if h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let review: Value = serde_json::from_slice(&body).unwrap_or_default();
    let request = review["request"].clone();
    seen.lock().unwrap().push((path.clone(), request.clone()));
    let route = path.split('?').next().unwrap_or("").to_string();
    let answer = respond(&route, &request);
    let out = serde_json::to_vec(&answer).unwrap();
    drop(reader);
    // A chunked answer, as Go's net/http gives when the handler sets no length.
    let mut resp =
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            .to_vec();
    for chunk in out.chunks(100) {
        resp.extend(format!("{:x}\r\n", chunk.len()).as_bytes());
        resp.extend(chunk);
        resp.extend(b"\r\n");
    }
    resp.extend(b"0\r\n\r\n");
    tls.write_all(&resp)?;
    tls.flush()
}

fn patch_answer(uid: &Value, ops: Value) -> Value {
    let patch = base64::engine::general_purpose::STANDARD.encode(ops.to_string());
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
           "response": {"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": patch}})
}

/// The webhooks this server plays, by path.
fn respond(route: &str, req: &Value) -> Value {
    let uid = &req["uid"];
    let allow = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"uid": uid, "allowed": true}});
    match route {
        "/label" => patch_answer(uid, json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}])),
        "/deny" => json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {
            "uid": uid, "allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": "spec.x: Forbidden: not here"}}}),
        "/slow" => {
            std::thread::sleep(Duration::from_secs(3));
            allow
        }
        // Lists ConfigMaps from the API server (plain HTTP on the port in the path) before
        // allowing: a webhook that reads the server while it answers.
        r if r.starts_with("/read-back-") => {
            let port = &r["/read-back-".len()..];
            let listed = read_back(port);
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {
                "uid": uid, "allowed": listed, "status": {"code": 403, "message": "could not read the server back"}}})
        }
        "/wrong-uid" => {
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"uid": "other", "allowed": true}})
        }
        "/warn" => json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {
            "uid": uid, "allowed": true, "warnings": ["data.k is deprecated"]}}),
        // Counts its calls in an annotation (IfNeeded reinvocation).
        "/count" => {
            let n =
                req["object"]["metadata"]["annotations"]["count"].as_str().unwrap_or("0").parse::<u32>().unwrap_or(0);
            let op = if req["object"]["metadata"]["annotations"].is_object() {
                json!([{"op": "add", "path": "/metadata/annotations/count", "value": (n + 1).to_string()}])
            } else {
                json!([{"op": "add", "path": "/metadata/annotations", "value": {"count": (n + 1).to_string()}}])
            };
            patch_answer(uid, op)
        }
        _ => allow,
    }
}

/// Whether a GET of the ConfigMaps of `default` on `127.0.0.1:<port>` answers 200 within 5 s.
fn read_back(port: &str) -> bool {
    let Ok(mut sock) = std::net::TcpStream::connect(format!("127.0.0.1:{port}")) else { return false };
    let _ = sock.set_read_timeout(Some(Duration::from_secs(5)));
    let req = "GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if sock.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut line = String::new();
    BufReader::new(sock).read_line(&mut line).is_ok() && line.contains(" 200 ")
}

fn webhook(server: &HookServer, name: &str, path: &str, rules: Value, extra: Value) -> Value {
    let mut w = json!({
        "name": name,
        "clientConfig": {"url": server.url(path), "caBundle": server.ca_bundle},
        "rules": rules,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    for (k, v) in extra.as_object().unwrap() {
        w[k] = v.clone();
    }
    w
}

fn configmap_rules(ops: &[&str]) -> Value {
    json!([{"operations": ops, "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}])
}

async fn install(api: &ApiServer, mutating: bool, name: &str, webhooks: Value) {
    let plural = if mutating { "mutatingwebhookconfigurations" } else { "validatingwebhookconfigurations" };
    let kind = if mutating { "MutatingWebhookConfiguration" } else { "ValidatingWebhookConfiguration" };
    let obj = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name}, "webhooks": webhooks});
    let (code, body) = post(api, &format!("/apis/admissionregistration.k8s.io/v1/{plural}"), &obj).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// Runs the (blocking) admission path off the test's runtime thread, as a server would.
async fn send(
    api: &ApiServer,
    method: Method,
    uri: &str,
    content_type: Option<&str>,
    body: Value,
) -> (StatusCode, Value) {
    raw(api, method, uri, content_type, Body::from(body.to_string())).await
}

#[tokio::test]
async fn a_mutating_webhook_patches_a_create_and_sees_an_admission_review() {
    let hooks = HookServer::start();
    let api = ApiServer::default();
    install(
        &api,
        true,
        "label",
        json!([webhook(&hooks, "label.example.com", "/label", configmap_rules(&["CREATE"]), json!({}))]),
    )
    .await;
    let (code, body) = post(&api, CMS, &configmap("a")).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    assert_eq!(body["metadata"]["labels"]["mutated"], "yes");
    let (_, stored) = get(&api, &format!("{CMS}/a")).await;
    assert_eq!(stored["metadata"]["labels"]["mutated"], "yes");
    let seen = hooks.seen("/label");
    assert_eq!(seen.len(), 1);
    let r = &seen[0];
    assert_eq!(r["operation"], "CREATE");
    assert_eq!(r["kind"], json!({"group": "", "version": "v1", "kind": "ConfigMap"}));
    assert_eq!(r["resource"], json!({"group": "", "version": "v1", "resource": "configmaps"}));
    assert_eq!((r["namespace"].as_str(), r["name"].as_str()), (Some("default"), Some("a")));
    assert_eq!(r["options"]["kind"], "CreateOptions");
    assert_eq!(r["dryRun"], false);
    assert!(r["oldObject"].is_null());
    assert_eq!(r["object"]["data"]["k"], "v");
    assert!(r["uid"].as_str().is_some_and(|u| !u.is_empty()));
    // The URL carries the timeout, as kube-apiserver's client sets it.
    let paths: Vec<String> = hooks.seen.lock().unwrap().iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(paths, vec!["/label?timeout=10s".to_string()]);
    // An update is not called for (the rule names CREATE only).
    let (code, _) = send(
        &api,
        Method::PATCH,
        &format!("{CMS}/a"),
        Some("application/merge-patch+json"),
        json!({"data": {"k": "w"}}),
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(hooks.seen("/label").len(), 1);
}

#[tokio::test]
async fn a_denial_is_answered_with_the_webhooks_status_and_writes_nothing() {
    let hooks = HookServer::start();
    let api = ApiServer::default();
    install(
        &api,
        false,
        "deny",
        json!([webhook(&hooks, "deny.example.com", "/deny", configmap_rules(&["CREATE", "UPDATE"]), json!({}))]),
    )
    .await;
    let (code, body) = post(&api, CMS, &configmap("a")).await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["message"],
        "admission webhook \"deny.example.com\" denied the request: spec.x: Forbidden: not here"
    );
    let (code, _) = get(&api, &format!("{CMS}/a")).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn failures_follow_the_failure_policy() {
    let hooks = HookServer::start();
    let api = ApiServer::default();
    let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut down = webhook(&hooks, "down.example.com", "/x", configmap_rules(&["CREATE"]), json!({}));
    down["clientConfig"]["url"] = json!(format!("https://127.0.0.1:{closed}/x"));
    install(&api, false, "down", json!([down.clone()])).await;
    let (code, body) = post(&api, CMS, &configmap("a")).await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert_eq!(body["reason"], "InternalError");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "Internal error occurred: failed calling webhook \"down.example.com\": failed to call webhook: Post \"https://127.0.0.1:{closed}/x?timeout=10s\": dial tcp 127.0.0.1:{closed}: connect: connection refused"
        )),
        "{message}"
    );
    // failurePolicy: Ignore lets the request through.
    let api = ApiServer::default();
    down["failurePolicy"] = json!("Ignore");
    install(&api, false, "down", json!([down])).await;
    let (code, _) = post(&api, CMS, &configmap("a")).await;
    assert_eq!(code, StatusCode::CREATED);
    // A webhook slower than its timeout fails, and an answer for another request is invalid.
    let api = ApiServer::default();
    let slow = webhook(&hooks, "slow.example.com", "/slow", configmap_rules(&["CREATE"]), json!({"timeoutSeconds": 1}));
    install(&api, false, "slow", json!([slow])).await;
    let (code, body) = post(&api, CMS, &configmap("a")).await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(body["message"].as_str().unwrap().contains("?timeout=1s\": context deadline exceeded"), "{body}");
    let api = ApiServer::default();
    install(
        &api,
        false,
        "uid",
        json!([webhook(&hooks, "uid.example.com", "/wrong-uid", configmap_rules(&["CREATE"]), json!({}))]),
    )
    .await;
    let (code, body) = post(&api, CMS, &configmap("a")).await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        body["message"].as_str().unwrap().contains(
            "failed calling webhook \"uid.example.com\": received invalid webhook response: expected response.uid="
        ),
        "{body}"
    );
    // A CA that did not sign the server's certificate fails the call.
    let api = ApiServer::default();
    let other = HookServer::start();
    let mut untrusted = webhook(&hooks, "ca.example.com", "/", configmap_rules(&["CREATE"]), json!({}));
    untrusted["clientConfig"]["caBundle"] = json!(other.ca_bundle);
    install(&api, false, "ca", json!([untrusted])).await;
    let (code, body) = post(&api, CMS, &configmap("a")).await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(body["message"].as_str().unwrap().contains("certificate"), "{body}");
}

#[tokio::test]
async fn rules_name_subresources_and_selectors_and_conditions_narrow_them() {
    let hooks = HookServer::start();
    let api = ApiServer::default();
    let status_rule =
        json!([{"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/status"]}]);
    install(&api, false, "status", json!([webhook(&hooks, "status.example.com", "/status", status_rule, json!({}))]))
        .await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
    let (code, body) = post(&api, "/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let merge = Some("application/merge-patch+json");
    let (code, _) = send(
        &api,
        Method::PATCH,
        "/api/v1/namespaces/default/pods/p",
        merge,
        json!({"metadata": {"labels": {"a": "b"}}}),
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    assert!(hooks.seen("/status").is_empty(), "a rule for pods/status matched the main resource");
    let (code, _) = send(
        &api,
        Method::PATCH,
        "/api/v1/namespaces/default/pods/p/status",
        merge,
        json!({"status": {"phase": "Running"}}),
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    let seen = hooks.seen("/status");
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0]["subResource"].as_str(), seen[0]["operation"].as_str()), (Some("status"), Some("UPDATE")));
    assert_eq!(seen[0]["oldObject"]["metadata"]["name"], "p");

    // namespaceSelector, objectSelector and a match condition, each able to skip the call.
    let api = ApiServer::default();
    let narrow = webhook(
        &hooks,
        "narrow.example.com",
        "/deny",
        configmap_rules(&["CREATE"]),
        json!({
            "namespaceSelector": {"matchLabels": {"team": "a"}},
            "objectSelector": {"matchExpressions": [{"key": "exempt", "operator": "DoesNotExist"}]},
            "matchConditions": [{"name": "not-skipped", "expression": "object.metadata.name != 'skipped'"}],
        }),
    );
    install(&api, false, "narrow", json!([narrow])).await;
    for (ns, team) in [("a", "a"), ("b", "b")] {
        let nsobj =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"team": team}}});
        assert_eq!(post(&api, "/api/v1/namespaces", &nsobj).await.0, StatusCode::CREATED);
    }
    let in_ns = |ns: &str| format!("/api/v1/namespaces/{ns}/configmaps");
    assert_eq!(post(&api, &in_ns("a"), &configmap("x")).await.0, StatusCode::FORBIDDEN);
    assert_eq!(post(&api, &in_ns("b"), &configmap("x")).await.0, StatusCode::CREATED);
    let mut exempt = configmap("y");
    exempt["metadata"]["labels"] = json!({"exempt": "true"});
    assert_eq!(post(&api, &in_ns("a"), &exempt).await.0, StatusCode::CREATED);
    assert_eq!(post(&api, &in_ns("a"), &configmap("skipped")).await.0, StatusCode::CREATED);

    // A condition that errors fails closed: 403 without calling the webhook.
    let api = ApiServer::default();
    let broken = webhook(
        &hooks,
        "broken.example.com",
        "/broken",
        configmap_rules(&["CREATE"]),
        json!({
            "matchConditions": [{"name": "missing", "expression": "object.spec.nothing == 1"}],
        }),
    );
    install(&api, false, "broken", json!([broken])).await;
    let (code, body) = post(&api, CMS, &configmap("z")).await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("configmaps \"z\" is forbidden: expression 'missing' resulted in error"),
        "{body}"
    );
    assert!(hooks.seen("/broken").is_empty());
}

#[tokio::test]
async fn dry_run_needs_a_webhook_without_side_effects() {
    let hooks = HookServer::start();
    let api = ApiServer::default();
    let unknown = webhook(
        &hooks,
        "effects.example.com",
        "/label",
        configmap_rules(&["CREATE"]),
        json!({"sideEffects": "Unknown"}),
    );
    // v1 takes only webhooks without side effects (ValidateMutatingWebhookConfiguration's
    // requireNoSideEffects), so a dry run reaches every webhook a client can create.
    let obj = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                     "metadata": {"name": "effects"}, "webhooks": [unknown]});
    let (code, body) = post(&api, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", &obj).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["details"]["causes"][0]["field"], "webhooks[0].sideEffects");
    assert_eq!(body["details"]["causes"][0]["reason"], "FieldValueNotSupported");

    let api = ApiServer::default();
    install(
        &api,
        true,
        "none",
        json!([webhook(&hooks, "none.example.com", "/label", configmap_rules(&["CREATE"]), json!({}))]),
    )
    .await;
    let (code, body) = post(&api, &format!("{CMS}?dryRun=All"), &configmap("a")).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    assert_eq!(body["metadata"]["labels"]["mutated"], "yes");
    let seen = hooks.seen("/label");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0]["dryRun"], true);
    assert_eq!(seen[0]["options"]["dryRun"], json!(["All"]));
    assert_eq!(get(&api, &format!("{CMS}/a")).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_if_needed_webhook_runs_again_after_a_later_change() {
    let hooks = HookServer::start();
    let api = ApiServer::default();
    // Configurations run in name order: "a-count" before "b-label".
    let count = webhook(
        &hooks,
        "count.example.com",
        "/count",
        configmap_rules(&["CREATE"]),
        json!({"reinvocationPolicy": "IfNeeded"}),
    );
    install(
        &api,
        true,
        "b-label",
        json!([webhook(&hooks, "label.example.com", "/label", configmap_rules(&["CREATE"]), json!({}))]),
    )
    .await;
    install(&api, true, "a-count", json!([count])).await;
    let (code, body) = post(&api, CMS, &configmap("a")).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    assert_eq!(body["metadata"]["annotations"]["count"], "2", "{body}");
    assert_eq!(body["metadata"]["labels"]["mutated"], "yes");
    assert_eq!(hooks.seen("/count").len(), 2);
    // Never: one call.
    let api = ApiServer::default();
    let once = webhook(&hooks, "count.example.com", "/count", configmap_rules(&["CREATE"]), json!({}));
    install(
        &api,
        true,
        "b-label",
        json!([webhook(&hooks, "label.example.com", "/label", configmap_rules(&["CREATE"]), json!({}))]),
    )
    .await;
    install(&api, true, "a-count", json!([once])).await;
    let (_, body) = post(&api, CMS, &configmap("a")).await;
    assert_eq!(body["metadata"]["annotations"]["count"], "1", "{body}");
}

#[tokio::test]
async fn a_service_reference_goes_to_a_ready_endpoint_and_deletes_are_admitted() {
    let hooks = HookServer::start();
    let api = ApiServer::default();
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hook"},
                     "spec": {"ports": [{"name": "https", "port": 443, "targetPort": hooks.port}]}});
    assert_eq!(post(&api, "/api/v1/namespaces/default/services", &svc).await.0, StatusCode::CREATED);
    // An IPv4 slice may not hold a loopback address (ValidateEndpointIP); as an FQDN slice's
    // name, "127.0.0.1" passes, and the hook server listens there.
    let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "hook-1", "labels": {"kubernetes.io/service-name": "hook"}},
        "addressType": "FQDN", "ports": [{"name": "https", "port": hooks.port, "protocol": "TCP"}],
        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}]});
    let (code, body) = post(&api, "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", &slice).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let mut by_service = webhook(&hooks, "svc.example.com", "", configmap_rules(&["DELETE"]), json!({}));
    by_service["clientConfig"] =
        json!({"service": {"namespace": "default", "name": "hook", "path": "/deny"}, "caBundle": hooks.ca_bundle});
    install(&api, false, "svc", json!([by_service])).await;
    assert_eq!(post(&api, CMS, &configmap("a")).await.0, StatusCode::CREATED);
    let (code, body) = raw(&api, Method::DELETE, &format!("{CMS}/a"), None, Body::empty()).await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    let seen = hooks.seen("/deny");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0]["operation"], "DELETE");
    assert_eq!(seen[0]["options"]["kind"], "DeleteOptions");
    assert!(seen[0]["object"].is_null());
    assert_eq!(seen[0]["oldObject"]["metadata"]["name"], "a");
    assert_eq!(get(&api, &format!("{CMS}/a")).await.0, StatusCode::OK);
}

#[tokio::test]
async fn a_webhooks_warnings_reach_the_client() {
    let hooks = HookServer::start();
    let api = ApiServer::default();
    install(
        &api,
        false,
        "warn",
        json!([webhook(&hooks, "warn.example.com", "/warn", configmap_rules(&["CREATE"]), json!({}))]),
    )
    .await;
    let (code, headers, _) = raw_full(
        &api,
        Method::POST,
        CMS,
        &[("content-type", Some("application/json"))],
        Body::from(configmap("a").to_string()),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED);
    let warnings: Vec<&str> = headers.get_all("warning").iter().filter_map(|v| v.to_str().ok()).collect();
    assert_eq!(warnings, vec!["299 - \"data.k is deprecated\""]);
}

#[tokio::test]
async fn a_bundle_holding_the_serving_certificate_itself_is_trusted_as_go_trusts_it() {
    let hooks = HookServer::start_with(true);
    let api = ApiServer::default();
    install(
        &api,
        true,
        "label",
        json!([webhook(&hooks, "label.example.com", "/label", configmap_rules(&["CREATE"]), json!({}))]),
    )
    .await;
    let (code, body) = post(&api, CMS, &configmap("a")).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    assert_eq!(body["metadata"]["labels"]["mutated"], "yes");
    // Its name is still checked: the certificate does not name 127.0.0.2.
    let api = ApiServer::default();
    let mut other_name = webhook(&hooks, "label.example.com", "/label", configmap_rules(&["CREATE"]), json!({}));
    other_name["clientConfig"]["url"] = json!(format!("https://localhost:{}/label", hooks.port));
    install(&api, true, "label", json!([other_name])).await;
    let (code, body) = post(&api, CMS, &configmap("a")).await;
    assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(body["message"].as_str().unwrap().contains("certificate"), "{body}");
}

/// A webhook may read the server while it answers: the calls of an update, a create and a
/// delete are made without the server's lock, and the write runs again with the answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_that_reads_the_server_while_it_answers_is_not_blocked() {
    let hooks = HookServer::start();
    let api = ApiServer::default();
    let tcp = api.serve_tcp(std::net::SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
    let path = format!("/read-back-{}", tcp.addr().port());
    let rules = configmap_rules(&["CREATE", "UPDATE", "DELETE"]);
    install(
        &api,
        false,
        "reader",
        json!([webhook(&hooks, "reader.example.com", &path, rules.clone(), json!({"timeoutSeconds": 3}))]),
    )
    .await;
    install(
        &api,
        true,
        "mreader",
        json!([webhook(&hooks, "mreader.example.com", &path, rules, json!({"timeoutSeconds": 3}))]),
    )
    .await;
    // A call that waited for the lock would time out, and fail the write (failurePolicy Fail).
    let (code, body) = post(&api, CMS, &configmap("a")).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let merge = Some("application/merge-patch+json");
    let (code, body) = send(&api, Method::PATCH, &format!("{CMS}/a"), merge, json!({"data": {"k": "w"}})).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let mut replaced = body.clone();
    replaced["data"]["k"] = json!("x");
    let (code, body) = send(&api, Method::PUT, &format!("{CMS}/a"), Some("application/json"), replaced).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let (code, body) = raw(&api, Method::DELETE, &format!("{CMS}/a"), None, Body::empty()).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    // Each webhook was called for each write (the mutating one not for the delete's patch).
    assert!(hooks.seen(&path).len() >= 7, "{:?}", hooks.seen(&path).len());
}
