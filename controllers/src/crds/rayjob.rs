//! `ray.io/v1` RayJob, as KubeRay v1.7.0 defines it (`ray-operator/apis/ray/v1/rayjob_types.go`).
//! Only the CRD: the reference controllers read RayJobs as JSON.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// The RayJob CRD manifest (see the file's header for what it keeps of the upstream one).
pub const RAYJOB_CRD_YAML: &str = include_str!("ray.io_rayjobs.yaml");

/// The RayJob CRD, parsed from [`RAYJOB_CRD_YAML`].
pub fn rayjob_crd() -> &'static CustomResourceDefinition {
    // Parsed once per process (every row of a run installs it); a unit test parses the
    // constant manifest, so parsing cannot fail at run time.
    static PARSED: std::sync::LazyLock<CustomResourceDefinition> =
        std::sync::LazyLock::new(|| serde_saphyr::from_str(RAYJOB_CRD_YAML).unwrap_or_default());
    &PARSED
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rayjob_crd_parses_and_defaults_the_submission_mode() {
        let crd: CustomResourceDefinition = serde_saphyr::from_str(RAYJOB_CRD_YAML).expect("the manifest parses");
        assert_eq!(crd.spec.names.kind, "RayJob");
        let v1 = &crd.spec.versions[0];
        let schema = serde_json::to_value(v1.schema.as_ref().and_then(|s| s.open_api_v3_schema.as_ref())).unwrap();
        assert_eq!(
            schema.pointer("/properties/spec/properties/submissionMode/default"),
            Some(&serde_json::json!("K8sJobMode"))
        );
        assert!(schema.pointer("/properties/spec/properties/rayClusterSpec/properties/headGroupSpec").is_some());
    }
}
