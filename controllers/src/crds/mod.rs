//! Rust types for the custom resources the reference controllers and simulated actors use, and
//! the CRD manifests that register them with an API server.

pub mod gateway;
pub mod raycluster;
pub mod rayjob;
pub mod rayservice;
pub mod trafficprobe;

pub use gateway::{Gateway, GatewayClass, HTTPRoute};
pub use raycluster::{RayCluster, RayClusterSpec, RayClusterStatus, WorkerGroupSpec};
pub use rayservice::{RayService, RayServiceSpec, RayServiceStatus, RayServiceStatuses};
pub use trafficprobe::TrafficProbe;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use std::time::Duration;

/// Why CRDs could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum CrdInstallError {
    /// A request to the API server failed.
    #[error("{what} CRD {name}: {source}")]
    Api {
        /// What was being done (`create`, `update`, `read`).
        what: &'static str,
        /// The CRD's name.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The server never reported the CRD Established.
    #[error("the CRD {0} did not become Established within 60s")]
    NotEstablished(String),
}

/// Installs CRDs (create, or update the spec of one already there) and waits until the server
/// reports each Established, so its kinds can be written right after. A cluster that already
/// has them (a real one, with the upstream CRDs) keeps working: only the spec is merged.
pub async fn install(client: &kube::Client, crds: &[CustomResourceDefinition]) -> Result<(), CrdInstallError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds {
        let name = crd.name_any();
        let err = |what| {
            let name = name.clone();
            move |source| CrdInstallError::Api { what, name, source }
        };
        match api.create(&PostParams::default(), crd).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {
                let patch = serde_json::json!({"spec": crd.spec});
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(err("update"))?;
            }
            Err(e) => return Err(err("create")(e)),
        }
    }
    for crd in crds {
        let name = crd.name_any();
        let established = |c: &CustomResourceDefinition| {
            c.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Established" && c.status == "True"))
        };
        let mut ok = false;
        for _ in 0..600 {
            let found = api.get_opt(&name).await.map_err(|source| CrdInstallError::Api {
                what: "read",
                name: name.clone(),
                source,
            })?;
            if found.as_ref().is_some_and(established) {
                ok = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if !ok {
            return Err(CrdInstallError::NotEstablished(name));
        }
    }
    Ok(())
}
