//! The DRA and PodGroup objects the reference components read and write, kept as JSON around
//! typed metadata: every field the server sends survives a read-modify-write (k8s-openapi has no
//! `scheduling.k8s.io/v1beta1` types, and a typed ResourceClaim would drop the KEP-5194 fields
//! of the `workloads` profile, which then fail the spec-immutability check on update).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

macro_rules! json_object {
    ($(#[$doc:meta])* $name:ident, $group:literal, $version:literal, $kind:literal, $plural:literal, $scope:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, Serialize, Deserialize)]
        pub struct $name {
            /// The object's metadata.
            #[serde(default)]
            pub metadata: ObjectMeta,
            /// Everything else, as sent (`apiVersion`, `kind`, `spec`, `status`).
            #[serde(flatten)]
            pub rest: Map<String, Value>,
        }

        impl k8s_openapi::Resource for $name {
            const API_VERSION: &'static str = concat!($group, "/", $version);
            const GROUP: &'static str = $group;
            const KIND: &'static str = $kind;
            const VERSION: &'static str = $version;
            const URL_PATH_SEGMENT: &'static str = $plural;
            type Scope = $scope;
        }

        impl k8s_openapi::Metadata for $name {
            type Ty = ObjectMeta;
            fn metadata(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn metadata_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }

        impl $name {
            /// A new object of this kind from its metadata and the other top-level fields.
            pub fn new(metadata: ObjectMeta, rest: Value) -> Self {
                let mut rest = match rest {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                rest.insert("apiVersion".into(), Value::String(<Self as k8s_openapi::Resource>::API_VERSION.into()));
                rest.insert("kind".into(), Value::String($kind.into()));
                Self { metadata, rest }
            }

            /// The top-level field `key` (`spec`, `status`), or null.
            pub fn field(&self, key: &str) -> &Value {
                self.rest.get(key).unwrap_or(&Value::Null)
            }

            /// The top-level field `key`, created as an empty object when missing or not one.
            pub fn field_mut(&mut self, key: &str) -> &mut Value {
                let v = self.rest.entry(key.to_string()).or_insert_with(|| Value::Object(Map::new()));
                if !v.is_object() {
                    *v = Value::Object(Map::new());
                }
                v
            }

            /// `namespace/name`, for messages and keys.
            pub fn key(&self) -> String {
                format!("{}/{}", self.metadata.namespace.as_deref().unwrap_or_default(), self.metadata.name.as_deref().unwrap_or_default())
            }

            /// The object's uid ("" when unset).
            pub fn uid(&self) -> &str {
                self.metadata.uid.as_deref().unwrap_or_default()
            }

            /// The object's name ("" when unset).
            pub fn name(&self) -> &str {
                self.metadata.name.as_deref().unwrap_or_default()
            }

            /// The object's namespace ("" for cluster-scoped objects).
            pub fn namespace(&self) -> &str {
                self.metadata.namespace.as_deref().unwrap_or_default()
            }
        }
    };
}

json_object!(
    /// `resource.k8s.io/v1` ResourceClaim.
    ResourceClaim, "resource.k8s.io", "v1", "ResourceClaim", "resourceclaims", k8s_openapi::NamespaceResourceScope
);
json_object!(
    /// `resource.k8s.io/v1` ResourceClaimTemplate.
    ResourceClaimTemplate, "resource.k8s.io", "v1", "ResourceClaimTemplate", "resourceclaimtemplates", k8s_openapi::NamespaceResourceScope
);
json_object!(
    /// `resource.k8s.io/v1` ResourceSlice (cluster-scoped).
    ResourceSlice, "resource.k8s.io", "v1", "ResourceSlice", "resourceslices", k8s_openapi::ClusterResourceScope
);
json_object!(
    /// `resource.k8s.io/v1` DeviceClass (cluster-scoped).
    DeviceClass, "resource.k8s.io", "v1", "DeviceClass", "deviceclasses", k8s_openapi::ClusterResourceScope
);
json_object!(
    /// `scheduling.k8s.io/v1beta1` PodGroup (Kubernetes 1.37).
    PodGroup, "scheduling.k8s.io", "v1beta1", "PodGroup", "podgroups", k8s_openapi::NamespaceResourceScope
);

/// The finalizer the scheduler puts on a claim before it writes an allocation
/// (`resource.kubernetes.io/delete-protection`).
pub const CLAIM_FINALIZER: &str = "resource.kubernetes.io/delete-protection";
/// The annotation on a generated claim naming the pod's (or PodGroup's) claim entry.
pub const POD_CLAIM_ANNOTATION: &str = "resource.kubernetes.io/pod-claim-name";
/// The finalizer that holds a PodGroup while non-terminal pods use it.
pub const PODGROUP_PROTECTION_FINALIZER: &str = "scheduling.k8s.io/podgroup-protection";
/// The PodGroup API group.
pub const SCHEDULING_GROUP: &str = "scheduling.k8s.io";

impl ResourceClaim {
    /// `status.reservedFor`, as sent (borrowed: the scheduler and the resourceclaim
    /// controller read it for every pod of every pass, and a claim may hold 256 entries).
    pub fn reserved_for(&self) -> &[Value] {
        self.field("status").get("reservedFor").and_then(Value::as_array).map_or(&[], Vec::as_slice)
    }

    /// Replaces `status.reservedFor` (an empty list removes the field).
    pub fn set_reserved_for(&mut self, entries: Vec<Value>) {
        let status = self.field_mut("status");
        if let Some(m) = status.as_object_mut() {
            if entries.is_empty() {
                m.remove("reservedFor");
            } else {
                m.insert("reservedFor".into(), Value::Array(entries));
            }
        }
    }

    /// `status.allocation`, when set.
    pub fn allocation(&self) -> Option<&Value> {
        self.field("status").get("allocation").filter(|v| !v.is_null())
    }

    /// Whether the claim carries `resource.kubernetes.io/delete-protection`.
    pub fn has_finalizer(&self) -> bool {
        self.metadata.finalizers.iter().flatten().any(|f| f == CLAIM_FINALIZER)
    }

    /// Whether the claim is being deleted.
    pub fn deleting(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    /// The controller owner reference, when there is one: `(apiVersion, kind, name, uid)`.
    pub fn controller(&self) -> Option<(&str, &str, &str, &str)> {
        self.metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true))
            .map(|o| (o.api_version.as_str(), o.kind.as_str(), o.name.as_str(), o.uid.as_str()))
    }
}

impl PodGroup {
    /// `spec.resourceClaims`.
    pub fn claims(&self) -> Vec<Value> {
        self.field("spec").get("resourceClaims").and_then(Value::as_array).cloned().unwrap_or_default()
    }

    /// The generated claim name recorded in `status.resourceClaimStatuses` for `claim`.
    pub fn status_claim_name(&self, claim: &str) -> Option<String> {
        self.field("status")
            .get("resourceClaimStatuses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|s| s.get("name").and_then(Value::as_str) == Some(claim))
            .and_then(|s| s.get("resourceClaimName").and_then(Value::as_str))
            .map(str::to_string)
    }
}

/// The text at `key` of a JSON object ("" when missing).
pub fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}
