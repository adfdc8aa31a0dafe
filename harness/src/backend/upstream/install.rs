//! Installing manifests into a real cluster: CRDs and the objects the operators need, created
//! (POST) rather than applied, since the KubeRay CRDs are too large for a last-applied
//! annotation.

use kube::Resource;
use kube::api::{Api, DynamicObject};
use kube::core::GroupVersionKind;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// The objects of every `*.yaml` file in `dir` (sorted by name), as JSON.
pub fn read_dir(dir: &Path) -> Result<Vec<Value>, String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        out.extend(read_file(&f)?);
    }
    Ok(out)
}

/// The objects of one (multi-document) YAML file, skipping empty documents.
pub fn read_file(path: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(docs.into_iter().filter(|d| d.is_object()).collect())
}

/// Creates every object, in order (namespaces and CRDs first, as the list gives them). An
/// object that already exists is left as it is. Discovery is refreshed when a kind is unknown
/// (a CRD created earlier in the list).
pub async fn create_all(client: &kube::Client, objects: &[Value]) -> Result<(), String> {
    let mut discovery = kube::Discovery::new(client.clone()).run_aggregated().await.map_err(|e| e.to_string())?;
    for obj in objects {
        let api_version = obj["apiVersion"].as_str().unwrap_or_default();
        let kind = obj["kind"].as_str().unwrap_or_default();
        let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let mut resolved = discovery.resolve_gvk(&gvk);
        for _ in 0..50 {
            if resolved.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            discovery = kube::Discovery::new(client.clone()).run_aggregated().await.map_err(|e| e.to_string())?;
            resolved = discovery.resolve_gvk(&gvk);
        }
        let (ar, caps) = resolved.ok_or_else(|| format!("the cluster does not serve {api_version} {kind}"))?;
        let namespace = obj.pointer("/metadata/namespace").and_then(Value::as_str);
        let api: Api<DynamicObject> = match (caps.scope, namespace) {
            (kube::discovery::Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, &ar),
            (kube::discovery::Scope::Namespaced, None) => Api::default_namespaced_with(client.clone(), &ar),
            (kube::discovery::Scope::Cluster, _) => Api::all_with(client.clone(), &ar),
        };
        let typed: DynamicObject = serde_json::from_value(obj.clone()).map_err(|e| format!("{kind} {name}: {e}"))?;
        match api.create(&Default::default(), &typed).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => {
                return Err(format!("creating {kind} {name} at {}: {e}", DynamicObject::url_path(&ar, namespace)));
            }
        }
    }
    Ok(())
}

/// Waits until every CRD reports `Established=True`.
pub async fn wait_established(client: &kube::Client, timeout: Duration) -> Result<(), String> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let pending = std::sync::Mutex::new(Vec::<String>::new());
    let all_established = || async {
        let list = api.list(&Default::default()).await.map_err(|e| e.to_string())?;
        let waiting: Vec<String> = list
            .items
            .iter()
            .filter(|crd| {
                !crd.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Established" && c.status == "True"))
            })
            .filter_map(|crd| crd.metadata.name.clone())
            .collect();
        let done = waiting.is_empty();
        *pending.lock().unwrap_or_else(|e| e.into_inner()) = waiting;
        Ok(done)
    };
    crate::backend::poll_until(timeout, all_established, || {
        let waiting = pending.lock().unwrap_or_else(|e| e.into_inner()).join(", ");
        format!("not Established within {}s: {waiting}", timeout.as_secs())
    })
    .await
}
