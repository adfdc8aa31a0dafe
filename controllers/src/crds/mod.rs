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
///
/// The answers are read only as far as needed (a CRD's schema can be hundreds of kilobytes,
/// and every in-process row installs its CRDs): a create's not at all, a read's only its
/// conditions.
pub async fn install<'a>(
    client: &kube::Client,
    crds: impl IntoIterator<Item = &'a CustomResourceDefinition>,
) -> Result<(), CrdInstallError> {
    let crds: Vec<&CustomResourceDefinition> = crds.into_iter().collect();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let url = kube::core::Request::new(api.resource_url());
    for crd in &crds {
        let name = crd.name_any();
        let err = |what| {
            let name = name.clone();
            move |source| CrdInstallError::Api { what, name, source }
        };
        let body = serde_json::to_vec(crd).map_err(|e| err("create")(kube::Error::SerdeError(e)))?;
        let create =
            url.create(&PostParams::default(), body).map_err(|e| err("create")(kube::Error::BuildRequest(e)))?;
        match client.request::<serde::de::IgnoredAny>(create).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {
                let patch = serde_json::json!({"spec": crd.spec});
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(err("update"))?;
            }
            Err(e) => return Err(err("create")(e)),
        }
    }
    for crd in &crds {
        let name = crd.name_any();
        let read = |source| CrdInstallError::Api { what: "read", name: name.clone(), source };
        let mut ok = false;
        for _ in 0..600 {
            let get = url.get(&name, &Default::default()).map_err(|e| read(kube::Error::BuildRequest(e)))?;
            match client.request::<ConditionsOnly>(get).await {
                Ok(found) if found.established() => {
                    ok = true;
                    break;
                }
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(read(e)),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if !ok {
            return Err(CrdInstallError::NotEstablished(name));
        }
    }
    Ok(())
}

/// A CRD read for its conditions only (serde skips the rest without building it).
#[derive(serde::Deserialize)]
struct ConditionsOnly {
    #[serde(default)]
    status: Option<ConditionsOnlyStatus>,
}

#[derive(serde::Deserialize)]
struct ConditionsOnlyStatus {
    /// Kubernetes writes `"conditions": null` on a CRD it has not looked at yet (the field has
    /// no omitempty).
    #[serde(default)]
    conditions: Option<Vec<ConditionOnly>>,
}

#[derive(serde::Deserialize)]
struct ConditionOnly {
    #[serde(rename = "type")]
    type_: String,
    status: String,
}

impl ConditionsOnly {
    fn established(&self) -> bool {
        self.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Established" && c.status == "True"))
    }
}

#[cfg(test)]
mod tests {
    use super::ConditionsOnly;

    fn established(json: &str) -> bool {
        serde_json::from_str::<ConditionsOnly>(json).expect("a CRD read decodes").established()
    }

    #[test]
    fn a_crd_read_is_established_only_with_a_true_established_condition() {
        // What kube-apiserver answers right after the create: conditions null, not absent.
        assert!(!established(r#"{"status":{"conditions":null,"acceptedNames":{"plural":"","kind":""}}}"#));
        assert!(!established(r#"{"metadata":{"name":"x"}}"#));
        assert!(!established(r#"{"status":{"conditions":[{"type":"Established","status":"False"}]}}"#));
        assert!(established(
            r#"{"status":{"conditions":[{"type":"NamesAccepted","status":"True"},{"type":"Established","status":"True","reason":"InitialNamesAccepted"}]}}"#
        ));
    }
}
