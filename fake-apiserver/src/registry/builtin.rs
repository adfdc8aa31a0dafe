//! The built-in resource types: k8s-openapi types plus what k8s-openapi does not carry (short
//! names, categories, subresources, selectable fields, generation, the kind's strategy).

use super::admissionregistration::policy::PolicyStrategy;
use super::admissionregistration::webhook_configuration::WebhookConfigurationStrategy;
use super::apiextensions::crd::CrdStrategy;
use super::apps::deployment::DeploymentStrategy;
use super::apps::replicaset::ReplicaSetStrategy;
use super::apps::statefulset::StatefulSetStrategy;
use super::authentication::AuthenticationReviewStrategy;
use super::authorization::reviews::ReviewStrategy;
use super::batch::job::JobStrategy;
use super::coordination::LeaseStrategy;
use super::core::binding::BindingsStrategy;
use super::core::componentstatus::ComponentStatusStrategy;
use super::core::configmap::ConfigMapStrategy;
use super::core::event::EventStrategy;
use super::core::limitrange::LimitRangeStrategy;
use super::core::namespace::NamespaceStrategy;
use super::core::node::NodeStrategy;
use super::core::pod::PodStrategy;
use super::core::replicationcontroller::ReplicationControllerStrategy;
use super::core::resourcequota::ResourceQuotaStrategy;
use super::core::secret::SecretStrategy;
use super::core::service::ServiceStrategy;
use super::discovery::EndpointSliceStrategy;
use super::rbac::{BindingStrategy, RoleStrategy};
use super::resource::{
    DeviceClassStrategy, ResourceClaimStrategy, ResourceClaimTemplateStrategy, ResourceSliceStrategy,
};
use super::scheduling::{PodGroupStrategy, WorkloadStrategy};
use super::{
    CreateOnUpdateStrategy, DefaultStrategy, Derived, ResourceType, ScaleSpec, SelectorForm, Strategy, builtin_schema,
};
use k8s_openapi::{ListableResource, NamespaceResourceScope, Resource};
use serde_json::Value;
use std::any::TypeId;

/// Options of one built-in entry that k8s-openapi does not carry.
#[derive(Default)]
struct Extra {
    short: &'static [&'static str],
    categories: &'static [&'static str],
    status: bool,
    /// The `/scale` subresource, with the form of the selector it reports.
    scale: Option<SelectorForm>,
    generation: bool,
    fields: &'static [&'static str],
    strategy: Option<&'static dyn Strategy>,
}

fn builtin<T: Resource + ListableResource + serde::de::DeserializeOwned + schemars::JsonSchema>(
    x: Extra,
) -> ResourceType
where
    T::Scope: 'static,
{
    resource_type::<T>(T::LIST_KIND.to_string(), x)
}

/// A built-in that is only ever created, never stored or listed (the reviews), answered by
/// `strategy`.
fn builtin_create_only<T: Resource + serde::de::DeserializeOwned + schemars::JsonSchema>(
    strategy: &'static dyn Strategy,
) -> ResourceType
where
    T::Scope: 'static,
{
    resource_type::<T>(format!("{}List", T::KIND), Extra { strategy: Some(strategy), ..Extra::default() })
}

fn resource_type<T: Resource + serde::de::DeserializeOwned + schemars::JsonSchema>(
    list_kind: String,
    x: Extra,
) -> ResourceType
where
    T::Scope: 'static,
{
    ResourceType {
        group: T::GROUP.to_string(),
        version: T::VERSION.to_string(),
        kind: T::KIND.to_string(),
        list_kind,
        plural: T::URL_PATH_SEGMENT.to_string(),
        singular: T::KIND.to_lowercase(),
        namespaced: TypeId::of::<T::Scope>() == TypeId::of::<NamespaceResourceScope>(),
        short_names: x.short.iter().map(|s| s.to_string()).collect(),
        categories: x.categories.iter().map(|s| s.to_string()).collect(),
        status: x.status,
        scale: x.scale.map(|selector_form| ScaleSpec {
            spec_replicas_path: "spec.replicas".into(),
            status_replicas_path: "status.replicas".into(),
            label_selector_path: Some("spec.selector".into()),
            selector_form,
        }),
        selectable_fields: x.fields.iter().map(|s| s.to_string()).collect(),
        tracks_generation: x.generation,
        custom: false,
        schema: None,
        schema_epoch: 0,
        printer_columns: Vec::new(),
        decode_check: Some(decode_as::<T>),
        openapi: Some(builtin_schema::<T>()),
        strategy: x.strategy.unwrap_or(&DefaultStrategy),
        gates: Default::default(),
        defect: Default::default(),
        conversion: None,
        derived: Derived::of(T::GROUP, T::VERSION, T::URL_PATH_SEGMENT, T::KIND),
    }
}

fn decode_as<T: Resource + serde::de::DeserializeOwned>(v: &Value) -> Result<(), String> {
    T::deserialize(v).map(|_| ()).map_err(|e| e.to_string())
}

const CORE_EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

const EVENTS_V1_FIELDS: &[&str] = &[
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "regarding.resourceVersion",
    "regarding.fieldPath",
    "reason",
    "reportingController",
    "type",
];

/// The built-in resource types the server serves.
pub(super) fn types() -> Vec<ResourceType> {
    use k8s_openapi::api::{
        admissionregistration::v1 as admission, apps::v1 as apps, authentication::v1 as authentication,
        autoscaling::v2 as autoscaling2, batch::v1 as batch, certificates::v1 as certificates,
        coordination::v1 as coordination, core::v1 as core, discovery::v1 as discovery, events::v1 as events,
        flowcontrol::v1 as flowcontrol, networking::v1 as networking, node::v1 as node, policy::v1 as policy,
        rbac::v1 as rbac, resource::v1 as resource, scheduling::v1 as scheduling,
        scheduling::v1beta1 as scheduling_beta, storage::v1 as storage, storagemigration::v1 as storagemigration,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
    let all = &["all"][..];
    vec![
        builtin::<core::Namespace>(Extra {
            short: &["ns"],
            status: true,
            fields: &["status.phase"],
            strategy: Some(&NamespaceStrategy),
            ..Default::default()
        }),
        builtin::<core::Pod>(Extra {
            short: &["po"],
            categories: all,
            status: true,
            generation: true,
            fields: &[
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.nominatedNodeName",
            ],
            strategy: Some(&PodStrategy),
            ..Default::default()
        }),
        builtin::<core::Service>(Extra {
            short: &["svc"],
            categories: all,
            status: true,
            strategy: Some(&ServiceStrategy),
            ..Default::default()
        }),
        builtin::<core::Endpoints>(Extra {
            short: &["ep"],
            strategy: Some(&CreateOnUpdateStrategy),
            ..Default::default()
        }),
        builtin::<core::ConfigMap>(Extra { short: &["cm"], strategy: Some(&ConfigMapStrategy), ..Default::default() }),
        builtin::<core::Secret>(Extra { fields: &["type"], strategy: Some(&SecretStrategy), ..Default::default() }),
        builtin::<core::ServiceAccount>(Extra { short: &["sa"], ..Default::default() }),
        builtin::<core::Node>(Extra {
            short: &["no"],
            status: true,
            fields: &["spec.unschedulable"],
            strategy: Some(&NodeStrategy),
            ..Default::default()
        }),
        builtin::<core::Event>(Extra {
            short: &["ev"],
            fields: CORE_EVENT_FIELDS,
            strategy: Some(&EventStrategy),
            ..Default::default()
        }),
        builtin::<core::PersistentVolumeClaim>(Extra { short: &["pvc"], status: true, ..Default::default() }),
        builtin::<apps::Deployment>(Extra {
            short: &["deploy"],
            categories: all,
            status: true,
            scale: Some(SelectorForm::Object),
            generation: true,
            strategy: Some(&DeploymentStrategy),
            ..Default::default()
        }),
        builtin::<apps::StatefulSet>(Extra {
            short: &["sts"],
            categories: all,
            status: true,
            scale: Some(SelectorForm::Object),
            generation: true,
            strategy: Some(&StatefulSetStrategy),
            ..Default::default()
        }),
        builtin::<apps::ReplicaSet>(Extra {
            short: &["rs"],
            categories: all,
            status: true,
            scale: Some(SelectorForm::Object),
            generation: true,
            fields: &["status.replicas"],
            strategy: Some(&ReplicaSetStrategy),
        }),
        builtin::<apps::DaemonSet>(Extra {
            short: &["ds"],
            categories: all,
            status: true,
            generation: true,
            ..Default::default()
        }),
        builtin::<batch::Job>(Extra {
            categories: all,
            status: true,
            generation: true,
            fields: &["status.successful"],
            strategy: Some(&JobStrategy),
            ..Default::default()
        }),
        builtin::<batch::CronJob>(Extra {
            short: &["cj"],
            categories: all,
            status: true,
            generation: true,
            ..Default::default()
        }),
        // Generation 1 on create, +1 on a change (endpointslice/strategy.go PrepareForCreate).
        builtin::<discovery::EndpointSlice>(Extra {
            generation: true,
            strategy: Some(&EndpointSliceStrategy),
            ..Default::default()
        }),
        builtin::<events::Event>(Extra {
            short: &["ev"],
            fields: EVENTS_V1_FIELDS,
            strategy: Some(&EventStrategy),
            ..Default::default()
        }),
        builtin::<coordination::Lease>(Extra { strategy: Some(&LeaseStrategy), ..Default::default() }),
        builtin::<rbac::Role>(Extra { strategy: Some(&RoleStrategy { namespaced: true }), ..Default::default() }),
        builtin::<rbac::ClusterRole>(Extra {
            strategy: Some(&RoleStrategy { namespaced: false }),
            ..Default::default()
        }),
        builtin::<rbac::RoleBinding>(Extra {
            strategy: Some(&BindingStrategy { namespaced: true }),
            ..Default::default()
        }),
        builtin::<rbac::ClusterRoleBinding>(Extra {
            strategy: Some(&BindingStrategy { namespaced: false }),
            ..Default::default()
        }),
        builtin::<policy::PodDisruptionBudget>(Extra {
            short: &["pdb"],
            status: true,
            generation: true,
            ..Default::default()
        }),
        builtin::<apiext::CustomResourceDefinition>(Extra {
            short: &["crd", "crds"],
            categories: &["api-extensions"],
            status: true,
            generation: true,
            strategy: Some(&CrdStrategy),
            ..Default::default()
        }),
        // ResourceClaims, their templates, PodGroups and Workloads keep no generation (their
        // strategies' PrepareForCreate set none, v1.37.2 pkg/registry/{resource,scheduling}).
        builtin::<resource::ResourceClaim>(Extra {
            status: true,
            strategy: Some(&ResourceClaimStrategy),
            ..Default::default()
        }),
        builtin::<resource::ResourceClaimTemplate>(Extra {
            strategy: Some(&ResourceClaimTemplateStrategy),
            ..Default::default()
        }),
        builtin::<resource::DeviceClass>(Extra {
            generation: true,
            strategy: Some(&DeviceClassStrategy),
            ..Default::default()
        }),
        builtin::<resource::DeviceTaintRule>(Extra { status: true, generation: true, ..Default::default() }),
        builtin::<resource::ResourceSlice>(Extra {
            generation: true,
            fields: &["spec.nodeName", "spec.driver"],
            strategy: Some(&ResourceSliceStrategy),
            ..Default::default()
        }),
        builtin::<scheduling::PriorityClass>(Extra { short: &["pc"], generation: true, ..Default::default() }),
        builtin::<scheduling_beta::PodGroup>(Extra {
            status: true,
            strategy: Some(&PodGroupStrategy),
            ..Default::default()
        }),
        builtin::<scheduling_beta::Workload>(Extra { strategy: Some(&WorkloadStrategy), ..Default::default() }),
        builtin::<core::LimitRange>(Extra {
            short: &["limits"],
            strategy: Some(&LimitRangeStrategy),
            ..Default::default()
        }),
        builtin::<core::ResourceQuota>(Extra {
            short: &["quota"],
            status: true,
            strategy: Some(&ResourceQuotaStrategy),
            ..Default::default()
        }),
        builtin::<core::PersistentVolume>(Extra { short: &["pv"], status: true, ..Default::default() }),
        builtin::<core::PodTemplate>(Extra::default()),
        builtin_create_only::<core::Binding>(&BindingsStrategy),
        builtin::<core::ComponentStatus>(Extra {
            short: &["cs"],
            strategy: Some(&ComponentStatusStrategy),
            ..Default::default()
        }),
        builtin::<core::ReplicationController>(Extra {
            short: &["rc"],
            categories: all,
            status: true,
            scale: Some(SelectorForm::Map),
            generation: true,
            fields: &["status.replicas"],
            strategy: Some(&ReplicationControllerStrategy),
        }),
        builtin::<apps::ControllerRevision>(Extra::default()),
        builtin::<autoscaling2::HorizontalPodAutoscaler>(Extra {
            short: &["hpa"],
            categories: all,
            status: true,
            ..Default::default()
        }),
        builtin::<admission::MutatingWebhookConfiguration>(Extra {
            categories: &["api-extensions"],
            generation: true,
            strategy: Some(&WebhookConfigurationStrategy { mutating: true }),
            ..Default::default()
        }),
        builtin::<admission::ValidatingWebhookConfiguration>(Extra {
            categories: &["api-extensions"],
            generation: true,
            strategy: Some(&WebhookConfigurationStrategy { mutating: false }),
            ..Default::default()
        }),
        builtin::<admission::ValidatingAdmissionPolicy>(Extra {
            categories: &["api-extensions"],
            strategy: Some(&PolicyStrategy { mutating: false, binding: false }),
            status: true,
            generation: true,
            ..Default::default()
        }),
        builtin::<admission::ValidatingAdmissionPolicyBinding>(Extra {
            categories: &["api-extensions"],
            strategy: Some(&PolicyStrategy { mutating: false, binding: true }),
            generation: true,
            ..Default::default()
        }),
        builtin::<admission::MutatingAdmissionPolicy>(Extra {
            categories: &["api-extensions"],
            strategy: Some(&PolicyStrategy { mutating: true, binding: false }),
            generation: true,
            ..Default::default()
        }),
        builtin::<admission::MutatingAdmissionPolicyBinding>(Extra {
            categories: &["api-extensions"],
            strategy: Some(&PolicyStrategy { mutating: true, binding: true }),
            generation: true,
            ..Default::default()
        }),
        builtin::<apiregistration::APIService>(Extra {
            categories: &["api-extensions"],
            status: true,
            ..Default::default()
        }),
        builtin::<certificates::CertificateSigningRequest>(Extra {
            short: &["csr"],
            status: true,
            fields: &["spec.signerName"],
            ..Default::default()
        }),
        builtin::<certificates::ClusterTrustBundle>(Extra::default()),
        builtin::<certificates::PodCertificateRequest>(Extra { status: true, ..Default::default() }),
        builtin::<flowcontrol::FlowSchema>(Extra { status: true, generation: true, ..Default::default() }),
        builtin::<flowcontrol::PriorityLevelConfiguration>(Extra {
            status: true,
            generation: true,
            ..Default::default()
        }),
        builtin::<networking::Ingress>(Extra { short: &["ing"], status: true, generation: true, ..Default::default() }),
        builtin::<networking::IngressClass>(Extra::default()),
        builtin::<networking::NetworkPolicy>(Extra { short: &["netpol"], generation: true, ..Default::default() }),
        builtin::<networking::ServiceCIDR>(Extra { status: true, ..Default::default() }),
        builtin::<networking::IPAddress>(Extra { short: &["ip"], ..Default::default() }),
        builtin::<node::RuntimeClass>(Extra { strategy: Some(&CreateOnUpdateStrategy), ..Default::default() }),
        builtin::<storage::StorageClass>(Extra { short: &["sc"], ..Default::default() }),
        builtin::<storage::CSIDriver>(Extra::default()),
        builtin::<storage::CSINode>(Extra::default()),
        builtin::<storage::CSIStorageCapacity>(Extra::default()),
        builtin::<storage::VolumeAttachment>(Extra { status: true, ..Default::default() }),
        builtin::<storage::VolumeAttributesClass>(Extra { short: &["vac"], ..Default::default() }),
        builtin::<storagemigration::StorageVersionMigration>(Extra { status: true, ..Default::default() }),
        builtin_create_only::<authentication::TokenReview>(&AuthenticationReviewStrategy),
        builtin_create_only::<authentication::SelfSubjectReview>(&AuthenticationReviewStrategy),
        builtin_create_only::<k8s_openapi::api::authorization::v1::SelfSubjectAccessReview>(&ReviewStrategy),
        builtin_create_only::<k8s_openapi::api::authorization::v1::SelfSubjectRulesReview>(&ReviewStrategy),
        builtin_create_only::<k8s_openapi::api::authorization::v1::SubjectAccessReview>(&ReviewStrategy),
        builtin_create_only::<k8s_openapi::api::authorization::v1::LocalSubjectAccessReview>(&ReviewStrategy),
    ]
}
