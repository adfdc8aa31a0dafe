//! Carrying out an [`InstallPlan`] against a cluster. Objects are created with the upstream
//! backend's installer ([`crate::backend::upstream::install`]: create, not apply, since the
//! KubeRay CRDs are too large for a last-applied annotation; Established CRDs waited for), then
//! the component's Deployments are waited for until Available.

use crate::backend::kind::error::{KindError, one_line};
use crate::backend::kind::plan::{InstallPlan, Source, Step, Transform};
use crate::backend::upstream::install::{create_all, read_file, wait_established};
use crate::backend::upstream::kueue::INTEGRATIONS;
use kube::api::{Api, DynamicObject};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// How long one component may take to become Available.
const COMPONENT_TIMEOUT: Duration = Duration::from_secs(300);

/// `Err` naming the first file of the plan missing from `dir`.
pub fn check_sources(plan: &InstallPlan, dir: &Path) -> Result<(), KindError> {
    for source in plan.steps.iter().filter_map(Step::source) {
        let path = dir.join(&source.file);
        if !path.is_file() {
            return Err(KindError::Manifests { path: path.display().to_string(), dir: dir.display().to_string() });
        }
    }
    Ok(())
}

/// The repository of an image reference without registry, tag or digest
/// (`quay.io/kuberay/operator:v1.7.0` gives `kuberay/operator`).
fn repository_of(image: &str) -> &str {
    let named = image.split('@').next().unwrap_or(image);
    let last_slash = named.rfind('/').map(|i| i + 1).unwrap_or(0);
    let without_tag = match named[last_slash..].rfind(':') {
        Some(i) => &named[..last_slash + i],
        None => named,
    };
    match without_tag.split_once('/') {
        Some((first, rest)) if first.contains('.') || first.contains(':') || first == "localhost" => rest,
        _ => without_tag,
    }
}

/// Calls `f` on every container of a workload's pod template.
fn for_each_container(obj: &mut Value, mut f: impl FnMut(&mut Value)) {
    if !matches!(obj["kind"].as_str(), Some("Deployment" | "StatefulSet" | "DaemonSet")) {
        return;
    }
    let Some(spec) = obj.pointer_mut("/spec/template/spec") else { return };
    for key in ["initContainers", "containers"] {
        for container in spec.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten() {
            f(container);
        }
    }
}

/// Makes the containers running an image of `repository` run `image`, pulled only when the
/// node lacks it. `Err` when no container runs that repository (the release changed its image).
pub fn replace_image(objects: &mut [Value], repository: &str, image: &str) -> Result<usize, String> {
    let mut replaced = 0;
    for obj in objects.iter_mut() {
        for_each_container(obj, |container| {
            let current = container["image"].as_str().unwrap_or_default();
            if repository_of(current).ends_with(repository) {
                container["image"] = json!(image);
                container["imagePullPolicy"] = json!("IfNotPresent");
                replaced += 1;
            }
        });
    }
    if replaced == 0 { Err(format!("no container runs an image of {repository}")) } else { Ok(replaced) }
}

/// Gives Kueue's manager configuration (ConfigMap `*-manager-config`, key
/// `controller_manager_config.yaml`) the integrations the tables use. The configuration is
/// written back as JSON, which is YAML.
pub fn configure_kueue(objects: &mut [Value]) -> Result<(), String> {
    const KEY: &str = "controller_manager_config.yaml";
    let config_map = objects
        .iter_mut()
        .find(|o| {
            o["kind"] == "ConfigMap"
                && o.pointer("/metadata/name").and_then(Value::as_str).is_some_and(|n| n.ends_with("manager-config"))
        })
        .ok_or("no Kueue manager ConfigMap (*-manager-config) in the manifests")?;
    let text = config_map["data"][KEY].as_str().ok_or_else(|| format!("the manager ConfigMap has no {KEY}"))?;
    let mut config: Value = serde_saphyr::from_str(text).map_err(|e| format!("{KEY}: {e}"))?;
    config["integrations"]["frameworks"] = json!(INTEGRATIONS);
    config_map["data"][KEY] = json!(serde_json::to_string_pretty(&config).map_err(|e| e.to_string())?);
    Ok(())
}

/// The objects of a manifests step, transformed and ordered (namespaces, then CRDs, then the
/// rest, each in file order).
pub fn objects_of(dir: &Path, source: &Source, transform: &Transform) -> Result<Vec<Value>, String> {
    let mut objects = read_file(&dir.join(&source.file))?;
    match transform {
        Transform::None => {}
        Transform::Image { repository, image } => {
            replace_image(&mut objects, repository, image)?;
        }
        Transform::KueueConfig { image } => {
            configure_kueue(&mut objects)?;
            if let Some(image) = image {
                replace_image(&mut objects, "kueue/kueue", image)?;
            }
        }
    }
    let rank = |o: &Value| match o["kind"].as_str() {
        Some("Namespace") => 0,
        Some("CustomResourceDefinition") => 1,
        _ => 2,
    };
    objects.sort_by_key(rank);
    Ok(objects)
}

/// `@POOL@` in every string of `objects` replaced by `pool`.
pub fn with_pool(objects: &[Value], pool: &str) -> Vec<Value> {
    fn walk(v: &Value, pool: &str) -> Value {
        match v {
            Value::String(s) => Value::String(s.replace("@POOL@", pool)),
            Value::Array(a) => Value::Array(a.iter().map(|x| walk(x, pool)).collect()),
            Value::Object(o) => Value::Object(o.iter().map(|(k, x)| (k.clone(), walk(x, pool))).collect()),
            other => other.clone(),
        }
    }
    objects.iter().map(|o| walk(o, pool)).collect()
}

/// Waits until every Deployment among `objects` is Available.
async fn wait_available(client: &kube::Client, objects: &[Value]) -> Result<(), String> {
    let api_resource = ApiResource::from_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment"));
    for d in objects.iter().filter(|o| o["kind"] == "Deployment") {
        let name = d.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
        let ns = d.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default").to_string();
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &api_resource);
        let available = || async {
            let got = api.get_opt(&name).await.map_err(|e| e.to_string())?;
            let conditions = got.map(|o| o.data["status"]["conditions"].clone()).unwrap_or(Value::Null);
            Ok(conditions
                .as_array()
                .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Available" && c["status"] == "True")))
        };
        crate::backend::poll_until(COMPONENT_TIMEOUT, available, || {
            format!("Deployment {ns}/{name} not Available within {}s", COMPONENT_TIMEOUT.as_secs())
        })
        .await?;
    }
    Ok(())
}

/// Waits until GatewayClass `name` is `Accepted`.
async fn wait_gateway_class(client: &kube::Client, name: &str) -> Result<(), String> {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("gateway.networking.k8s.io", "v1", "GatewayClass"));
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let accepted = || async {
        let got = api.get_opt(name).await.map_err(|e| e.to_string())?;
        let conditions = got.map(|o| o.data["status"]["conditions"].clone()).unwrap_or(Value::Null);
        Ok(conditions.as_array().is_some_and(|cs| cs.iter().any(|c| c["type"] == "Accepted" && c["status"] == "True")))
    };
    crate::backend::poll_until(COMPONENT_TIMEOUT, accepted, || {
        format!("GatewayClass {name} not Accepted within {}s", COMPONENT_TIMEOUT.as_secs())
    })
    .await
}

/// Runs `program` with `args` and `KUBECONFIG`; `Err` with its exit status and last output.
async fn run_program(program: &Path, args: &[String], kubeconfig: &Path) -> Result<(), String> {
    let out = tokio::process::Command::new(program)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .await
        .map_err(|e| format!("{}: {e}", program.display()))?;
    if out.status.success() {
        return Ok(());
    }
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    Err(format!("{} {} ended with {}: {}", program.display(), args.join(" "), out.status, one_line(&text, 400)))
}

/// Carries out `plan` against `client`: manifests from `dir`, programs with `kubeconfig`,
/// `pool` for MetalLB. `progress` hears each step.
pub async fn install(
    plan: &InstallPlan,
    client: &kube::Client,
    dir: &Path,
    kubeconfig: &Path,
    pool: &str,
    progress: &dyn Fn(&str),
) -> Result<(), KindError> {
    for step in &plan.steps {
        let component = step.component();
        let fail =
            |message: String| KindError::Install { component: component.into(), message: one_line(&message, 400) };
        match step {
            Step::Manifests { source, transform, .. } => {
                progress(&format!("{component}: creating {}", source.file));
                let objects = objects_of(dir, source, transform).map_err(fail)?;
                create_all(client, &objects).await.map_err(fail)?;
                wait_established(client, COMPONENT_TIMEOUT).await.map_err(fail)?;
                wait_available(client, &objects).await.map_err(fail)?;
            }
            Step::Program { source, args, .. } => {
                progress(&format!("{component}: {} {}", source.file, args.join(" ")));
                run_program(&dir.join(&source.file), args, kubeconfig).await.map_err(fail)?;
            }
            Step::Objects { objects, .. } => {
                progress(&format!("{component}: creating its configuration (pool {pool})"));
                let objects = with_pool(objects, pool);
                // The component's webhook refuses its objects until it serves: retry.
                let last = std::sync::Mutex::new(String::new());
                let created = || async {
                    match create_all(client, &objects).await {
                        Ok(()) => Ok(true),
                        Err(e) => {
                            *last.lock().unwrap_or_else(|p| p.into_inner()) = e;
                            Ok(false)
                        }
                    }
                };
                crate::backend::poll_until(COMPONENT_TIMEOUT, created, || {
                    format!(
                        "not created within {}s: {}",
                        COMPONENT_TIMEOUT.as_secs(),
                        last.lock().unwrap_or_else(|p| p.into_inner())
                    )
                })
                .await
                .map_err(fail)?;
            }
            Step::GatewayClassAccepted { name } => {
                progress(&format!("{component}: waiting for GatewayClass {name}"));
                wait_gateway_class(client, name).await.map_err(fail)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(image: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "n"},
               "spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}, {"name": "proxy", "image": "gcr.io/kubebuilder/kube-rbac-proxy:v0.8.0"}]}}}})
    }

    #[test]
    fn the_operator_image_is_replaced_whatever_its_registry() {
        let mut objects = vec![deployment("quay.io/kuberay/operator:v1.7.0"), json!({"kind": "Service"})];
        assert_eq!(replace_image(&mut objects, "kuberay/operator", "kuberay/operator:dev"), Ok(1));
        assert_eq!(objects[0]["spec"]["template"]["spec"]["containers"][0]["image"], "kuberay/operator:dev");
        assert_eq!(objects[0]["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(
            objects[0]["spec"]["template"]["spec"]["containers"][1]["image"],
            "gcr.io/kubebuilder/kube-rbac-proxy:v0.8.0"
        );
        let mut other = vec![deployment("registry.k8s.io/kueue/kueue:v0.19.2")];
        assert!(replace_image(&mut other, "kuberay/operator", "x").unwrap_err().contains("kuberay/operator"));
        assert_eq!(repository_of("localhost:5000/kueue/kueue:dev@sha256:aa"), "kueue/kueue");
        assert_eq!(repository_of("kueue/kueue"), "kueue/kueue");
    }

    #[test]
    fn kueue_gets_the_integrations_the_tables_use() {
        let mut objects = vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
            "data": {"controller_manager_config.yaml": "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nintegrations:\n  frameworks:\n  - batch/job\n"}})];
        configure_kueue(&mut objects).expect("configured");
        let text = objects[0]["data"]["controller_manager_config.yaml"].as_str().expect("text");
        let config: Value = serde_saphyr::from_str(text).expect("still YAML");
        assert_eq!(config["integrations"]["frameworks"], json!(INTEGRATIONS));
        assert_eq!(config["kind"], "Configuration");
        assert!(configure_kueue(&mut [json!({"kind": "Service"})]).is_err());
    }

    #[test]
    fn the_pool_placeholder_is_filled_in_and_files_are_checked() {
        let plan = InstallPlan::new(&Default::default());
        let Some(Step::Objects { objects, .. }) = plan.steps.iter().find(|s| matches!(s, Step::Objects { .. })) else {
            panic!("no objects step")
        };
        let filled = with_pool(objects, "172.18.255.200-172.18.255.250");
        assert_eq!(filled[0]["spec"]["addresses"][0], "172.18.255.200-172.18.255.250");
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = check_sources(&plan, dir.path()).unwrap_err().to_string();
        assert!(missing.contains("gateway-api") && missing.contains("kproof kind fetch-script"), "{missing}");
    }
}
