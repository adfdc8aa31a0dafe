//! Kueue out of cluster: its objects from `config/default` with the webhook service turned into
//! an `ExternalName` for `localhost` (kube-apiserver then dials `localhost:<port>` and checks
//! the certificate Kueue's own rotator issued for `kueue-webhook-service.kueue-system.svc`),
//! its configuration file, and the one job a kubelet would do for it: putting the webhook
//! certificate from its Secret into the directory Kueue reads.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Kinds of `config/default` that an out-of-cluster Kueue does not use: its own Deployment and
/// configuration, the visibility API server, the metrics service.
fn dropped(obj: &Value) -> bool {
    let kind = obj["kind"].as_str().unwrap_or_default();
    let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    matches!(kind, "Deployment" | "APIService")
        || (kind == "ConfigMap" && name == "kueue-manager-config")
        || (kind == "Service" && name != "kueue-webhook-service")
}

/// The objects to create, in order (namespace first, CRDs, then the rest), transformed for a
/// Kueue whose webhook server listens on `127.0.0.1:<webhook_port>`.
pub fn objects(default_yaml: &Path, webhook_port: u16) -> Result<Vec<Value>, String> {
    let mut all = crate::backend::upstream::install::read_file(default_yaml)?;
    all.retain(|o| !dropped(o));
    for obj in &mut all {
        let kind = obj["kind"].as_str().unwrap_or_default().to_string();
        match kind.as_str() {
            "Service" => obj["spec"] = json!({"type": "ExternalName", "externalName": "localhost"}),
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" => {
                for hook in obj["webhooks"].as_array_mut().into_iter().flatten() {
                    if let Some(service) = hook.pointer_mut("/clientConfig/service") {
                        service["port"] = json!(webhook_port);
                    }
                }
            }
            "CustomResourceDefinition" => {
                if let Some(service) = obj.pointer_mut("/spec/conversion/webhook/clientConfig/service") {
                    service["port"] = json!(webhook_port);
                }
            }
            _ => {}
        }
    }
    let rank = |o: &Value| match o["kind"].as_str().unwrap_or_default() {
        "Namespace" => 0,
        "CustomResourceDefinition" => 1,
        _ => 2,
    };
    all.sort_by_key(rank);
    Ok(all)
}

/// The Kueue integrations the tables use (`integrations.frameworks`), on every backend that
/// runs the real Kueue.
pub const INTEGRATIONS: [&str; 4] = ["batch/job", "ray.io/rayjob", "ray.io/raycluster", "ray.io/rayservice"];

/// Kueue's configuration: no leader election, no metrics, health and webhooks on loopback, its
/// own certificate management (the default), the visibility server off (it would write
/// certificates to `/visibility`), and the integrations the tables use.
pub fn config(health_port: u16, webhook_port: u16, cert_dir: &Path) -> String {
    format!(
        "apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:{health_port}
metrics:
  bindAddress: \"0\"
webhook:
  host: 127.0.0.1
  port: {webhook_port}
  certDir: {}
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: true
  webhookServiceName: kueue-webhook-service
  webhookSecretName: kueue-webhook-server-cert
clientConnection:
  qps: 300
  burst: 500
featureGates:
  VisibilityOnDemand: false
integrations:
  frameworks:
{}",
        cert_dir.display(),
        INTEGRATIONS.iter().map(|f| format!("  - {f}\n")).collect::<String>()
    )
}

/// Copies `tls.crt`, `tls.key` and `ca.crt` from Secret `kueue-system/kueue-webhook-server-cert`
/// into `cert_dir` as soon as Kueue's rotator fills it (each file written under a temporary
/// name, then renamed). Runs until the files are written.
pub async fn copy_webhook_certs(client: kube::Client, cert_dir: PathBuf) {
    let api: kube::Api<k8s_openapi::api::core::v1::Secret> = kube::Api::namespaced(client, "kueue-system");
    loop {
        if let Ok(Some(secret)) = api.get_opt("kueue-webhook-server-cert").await
            && let Some(data) = secret.data
            && data.get("tls.crt").is_some_and(|d| !d.0.is_empty())
        {
            let mut ok = true;
            for key in ["ca.crt", "tls.crt", "tls.key"] {
                let bytes = data.get(key).map(|b| b.0.clone()).unwrap_or_default();
                let tmp = cert_dir.join(format!("{key}.tmp"));
                ok &= std::fs::write(&tmp, &bytes).is_ok() && std::fs::rename(&tmp, cert_dir.join(key)).is_ok();
            }
            if ok {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether the running Kueue gates RayService upgrades as PR 11264
/// (<https://github.com/kubernetes-sigs/kueue/pull/11264>, head 1828096a) does: its defaulting
/// webhook suspends a queued RayService with the top-level `spec.suspend` (`Suspend()` in
/// `pkg/controller/jobs/rayservice/rayservice_controller.go`), where Kueue v0.19.2 only sets
/// `spec.rayClusterConfig.suspend`. Asked with a server-side dry run (Kueue's webhooks declare
/// `sideEffects: None`), so nothing is created. The KubeRay CRD must know `spec.suspend` (v1.7.0
/// does; the apiserver prunes it otherwise, and the gate could not work either). Retries for up to
/// `timeout` while the webhook is not reachable yet.
pub async fn offers_rayservice_upgrade_gate(client: &kube::Client, timeout: Duration) -> Result<bool, String> {
    let gvk = kube::api::GroupVersionKind::gvk("ray.io", "v1", "RayService");
    let api: kube::Api<kube::api::DynamicObject> =
        kube::Api::namespaced_with(client.clone(), "default", &kube::api::ApiResource::from_gvk(&gvk));
    let probe: kube::api::DynamicObject = serde_json::from_value(probe_rayservice()).map_err(|e| e.to_string())?;
    let params = kube::api::PostParams { dry_run: true, field_manager: Some("kproof".into()) };
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match api.create(&params, &probe).await {
            Ok(created) => return Ok(created.data.pointer("/spec/suspend") == Some(&json!(true))),
            Err(e) if tokio::time::Instant::now() >= deadline => {
                return Err(format!("a dry-run create of a queued RayService failed for {timeout:?}: {e}"));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

/// The smallest queued RayService KubeRay's CRD and Kueue's webhooks accept.
fn probe_rayservice() -> Value {
    json!({
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "kproof-gate-probe", "namespace": "default",
                     "labels": {"kueue.x-k8s.io/queue-name": "kproof-gate-probe"}},
        "spec": {"rayClusterConfig": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {
            "containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0",
                            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}}}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhooks_point_at_localhost_and_the_deployment_is_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("default.yaml");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Service\nmetadata: {name: kueue-webhook-service, namespace: kueue-system}\nspec: {ports: [{port: 443}]}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: kueue-controller-manager-metrics-service, namespace: kueue-system}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: kueue-controller-manager}\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: kueue-mutating-webhook-configuration}\nwebhooks:\n- name: a\n  clientConfig: {service: {name: kueue-webhook-service, namespace: kueue-system, path: /m}}\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: workloads.kueue.x-k8s.io}\nspec: {conversion: {strategy: Webhook, webhook: {clientConfig: {service: {name: kueue-webhook-service, port: 443}}}}}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: kueue-system}\n",
        )
        .expect("write");
        let objects = objects(&path, 19443).expect("objects");
        let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(kinds, vec!["Namespace", "CustomResourceDefinition", "Service", "MutatingWebhookConfiguration"]);
        assert_eq!(objects[2]["spec"], json!({"type": "ExternalName", "externalName": "localhost"}));
        assert_eq!(objects[3]["webhooks"][0]["clientConfig"]["service"]["port"], 19443);
        assert_eq!(objects[1]["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"], 19443);
    }
}
