//! Which resources the server serves: built-ins from k8s-openapi types and CRDs added at run time.

use crate::schema::StructuralSchema;
use k8s_openapi::{ListableResource, NamespaceResourceScope, Resource};
use serde_json::Value;
use std::any::TypeId;
use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock};

/// How object names of a kind are validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// RFC 1123 subdomain: most kinds.
    Subdomain,
    /// RFC 1123 label: namespaces.
    Label,
    /// RFC 1035 label (starts with a letter): services.
    Rfc1035Label,
}

/// Where the `/scale` subresource reads and writes replicas, as dotted paths (`spec.replicas`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleSpec {
    pub spec_replicas_path: String,
    pub status_replicas_path: String,
    pub label_selector_path: Option<String>,
    /// Built-ins keep a `metav1.LabelSelector` object at `spec.selector`; CRDs a string.
    pub selector_is_object: bool,
}

/// Decodes a built-in body into its k8s-openapi type; `Err` carries the decoder's message.
pub type DecodeCheck = fn(&Value) -> Result<(), String>;

/// One served group/version/resource and how the server treats it.
#[derive(Debug, Clone)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Has a `/status` subresource: writes to the main resource ignore `.status`.
    pub status: bool,
    pub scale: Option<ScaleSpec>,
    /// Field selector paths besides `metadata.name` and `metadata.namespace`.
    pub selectable_fields: Vec<String>,
    /// `metadata.generation` is set and bumped on changes outside metadata (and status).
    pub tracks_generation: bool,
    pub name_rule: NameRule,
    /// True for custom resources: schema, pruning, resourceVersion required on update.
    pub custom: bool,
    pub schema: Option<Arc<StructuralSchema>>,
    /// Changes whenever this version's schema changes, so stored objects are re-defaulted on read.
    pub schema_epoch: u64,
    /// CRD `additionalPrinterColumns` of this version, kept for table output.
    pub printer_columns: Vec<Value>,
    /// For built-ins: decodes a body into the k8s-openapi type, as the apiserver's decoder
    /// would, so type errors (`replicas: "three"`) are rejected with 400.
    pub decode_check: Option<DecodeCheck>,
    /// Where the OpenAPI v3 schema of this kind comes from (`None`: a bare object schema).
    pub openapi: Option<crate::openapi::SchemaSource>,
    /// Names derived from group, version and plural, computed once (see [`ResourceType::derive`]).
    derived: Derived,
}

/// What [`ResourceType`] derives from its names, kept so hot paths do not rebuild it.
#[derive(Debug, Clone)]
struct Derived {
    /// The `(group, version, plural)` it was computed from, to notice a stale copy.
    from: (String, String, String),
    api_version: String,
    key: StorageKey,
    /// `plural` or `plural.group`, as the timeline names the resource.
    resource: Arc<str>,
    kind: Arc<str>,
}

impl Derived {
    fn of(group: &str, version: &str, plural: &str, kind: &str) -> Self {
        Derived {
            from: (group.to_string(), version.to_string(), plural.to_string()),
            api_version: if group.is_empty() { version.to_string() } else { format!("{group}/{version}") },
            // events.k8s.io Events are stored with the core ones (see crate::events).
            key: StorageKey::new(if group == crate::events::EVENTS_GROUP { "" } else { group }, plural),
            resource: Arc::from(crate::error::qualified(group, plural)),
            kind: Arc::from(kind),
        }
    }

    fn fresh(&self, rt: &ResourceType) -> bool {
        self.from.0 == rt.group && self.from.1 == rt.version && self.from.2 == rt.plural && *self.kind == rt.kind
    }
}

impl ResourceType {
    /// Recomputes the names derived from group, version, plural and kind (after changing them).
    pub fn derive(mut self) -> Self {
        self.derived = Derived::of(&self.group, &self.version, &self.plural, &self.kind);
        self
    }

    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> &str {
        debug_assert!(self.derived.fresh(self), "ResourceType changed without derive()");
        &self.derived.api_version
    }

    /// Objects of every version of one resource share storage under this key.
    pub fn storage_key(&self) -> &StorageKey {
        debug_assert!(self.derived.fresh(self), "ResourceType changed without derive()");
        &self.derived.key
    }

    /// The resource as the timeline names it: `plural` or `plural.group`.
    pub(crate) fn qualified_resource(&self) -> &Arc<str> {
        &self.derived.resource
    }

    /// The kind, shared (for the timeline).
    pub(crate) fn shared_kind(&self) -> &Arc<str> {
        &self.derived.kind
    }

    /// Whether this is the CustomResourceDefinition resource.
    pub fn is_crds(&self) -> bool {
        self.storage_key() == StorageKey::crds_ref()
    }

    /// Whether this is the Namespace resource.
    pub fn is_namespaces(&self) -> bool {
        self.storage_key() == StorageKey::namespaces_ref()
    }

    /// The verbs the resource supports, as discovery lists them.
    pub fn verbs(&self) -> Vec<&'static str> {
        if crate::authz::is_review(self) {
            return vec!["create"];
        }
        vec!["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    }

    /// Whether `field` may be used in a field selector on this resource.
    pub fn supports_field(&self, field: &str) -> bool {
        field == "metadata.name"
            || (field == "metadata.namespace" && self.namespaced)
            || self.selectable_fields.iter().any(|f| f == field)
    }
}

/// Identifies the storage shared by all versions of a resource: group and plural.
#[derive(Debug, Clone, Eq, PartialOrd, Ord)]
pub struct StorageKey(Arc<str>);

impl PartialEq for StorageKey {
    fn eq(&self, other: &Self) -> bool {
        // Keys are mostly clones of one another: the pointer usually decides.
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl Hash for StorageKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

static NAMESPACES_KEY: LazyLock<StorageKey> = LazyLock::new(|| StorageKey::new("", "namespaces"));
static CRDS_KEY: LazyLock<StorageKey> =
    LazyLock::new(|| StorageKey::new("apiextensions.k8s.io", "customresourcedefinitions"));

impl StorageKey {
    /// The key of `plural` in `group`.
    pub fn new(group: &str, plural: &str) -> Self {
        Self(Arc::from(format!("{group}/{plural}")))
    }

    /// The key of namespaces, which the store consults for existence and lifecycle checks.
    pub fn namespaces() -> Self {
        NAMESPACES_KEY.clone()
    }

    /// The key of CRDs.
    pub fn crds() -> Self {
        CRDS_KEY.clone()
    }

    /// [`StorageKey::namespaces`], borrowed.
    pub fn namespaces_ref() -> &'static StorageKey {
        &NAMESPACES_KEY
    }

    /// [`StorageKey::crds`], borrowed.
    pub fn crds_ref() -> &'static StorageKey {
        &CRDS_KEY
    }
}

/// A `(group, version, plural)` key, owned or borrowed, so the registry can be searched
/// without building three Strings.
trait Gvr {
    fn parts(&self) -> (&str, &str, &str);
}

impl Gvr for (String, String, String) {
    fn parts(&self) -> (&str, &str, &str) {
        (&self.0, &self.1, &self.2)
    }
}

impl Gvr for (&str, &str, &str) {
    fn parts(&self) -> (&str, &str, &str) {
        *self
    }
}

impl<'a> Borrow<dyn Gvr + 'a> for (String, String, String) {
    fn borrow(&self) -> &(dyn Gvr + 'a) {
        self
    }
}

impl Hash for dyn Gvr + '_ {
    // Hashes as the owned tuple does: each part as a `str`, in order.
    fn hash<H: Hasher>(&self, state: &mut H) {
        let (g, v, p) = self.parts();
        g.hash(state);
        v.hash(state);
        p.hash(state);
    }
}

impl PartialEq for dyn Gvr + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn Gvr + '_ {}

/// The set of served resources, keyed by group, version and plural.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    by_gvr: HashMap<(String, String, String), Arc<ResourceType>>,
    /// Group names in discovery order: built-ins in registration order, then CRD groups.
    group_order: Vec<String>,
    /// Which CRD (by name) serves which (group, version, plural) entries.
    crd_entries: BTreeMap<String, Vec<(String, String, String)>>,
    next_schema_epoch: u64,
}

/// Sort key for Kubernetes version strings: GA before beta before alpha, higher numbers first.
pub fn version_priority(v: &str) -> (u8, u32, u32, String) {
    let parse = |s: &str| -> Option<(u32, u8, u32)> {
        let rest = s.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        let major: u32 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((major, 3, 0));
        }
        let (stage, num) = if let Some(n) = tail.strip_prefix("beta") {
            (2, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (1, n)
        } else {
            return None;
        };
        Some((major, stage, num.parse().ok()?))
    };
    match parse(v) {
        // Reverse order so that sorting ascending puts the preferred version first.
        Some((major, stage, minor)) => (3 - stage, u32::MAX - major, u32::MAX - minor, String::new()),
        None => (4, 0, 0, v.to_string()),
    }
}

impl Registry {
    /// Adds or replaces one resource type.
    pub fn insert(&mut self, rt: ResourceType) {
        if !self.group_order.contains(&rt.group) {
            self.group_order.push(rt.group.clone());
        }
        let rt = if rt.derived.fresh(&rt) { rt } else { rt.derive() };
        self.by_gvr.insert((rt.group.clone(), rt.version.clone(), rt.plural.clone()), Arc::new(rt));
    }

    /// The resource at `group/version/plural`.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.by_gvr.get(&(group, version, plural) as &dyn Gvr).cloned()
    }

    /// Whether any resource is served in `group/version`.
    pub fn has_group_version(&self, group: &str, version: &str) -> bool {
        self.by_gvr.keys().any(|(g, v, _)| g == group && v == version)
    }

    /// Groups with their versions, preferred version first, in discovery order.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out = Vec::new();
        for g in &self.group_order {
            let mut versions: Vec<String> =
                self.by_gvr.keys().filter(|(gg, _, _)| gg == g).map(|(_, v, _)| v.clone()).collect();
            versions.sort_by_key(|v| version_priority(v));
            versions.dedup();
            if !versions.is_empty() {
                out.push((g.clone(), versions));
            }
        }
        out
    }

    /// The resources of one group/version, sorted by plural.
    pub fn resources(&self, group: &str, version: &str) -> Vec<Arc<ResourceType>> {
        let mut v: Vec<_> = self
            .by_gvr
            .iter()
            .filter(|((g, vv, _), _)| g == group && vv == version)
            .map(|(_, rt)| rt.clone())
            .collect();
        v.sort_by(|a, b| a.plural.cmp(&b.plural));
        v
    }

    /// Every served version of the resource stored under `key`.
    pub fn versions_of(&self, key: &StorageKey) -> Vec<Arc<ResourceType>> {
        let mut v: Vec<_> = self.by_gvr.values().filter(|rt| rt.storage_key() == key).cloned().collect();
        // Groups sharing a storage (Events) order by group name, so the core API comes first.
        v.sort_by_key(|rt| (version_priority(&rt.version), rt.group.clone()));
        v
    }

    /// The preferred served version of the resource stored under `key`.
    pub fn preferred(&self, key: &StorageKey) -> Option<Arc<ResourceType>> {
        self.versions_of(key).into_iter().next()
    }

    /// Finds a served resource by kind in a group (any version), preferring `version`.
    pub fn by_kind(&self, group: &str, version: &str, kind: &str) -> Option<Arc<ResourceType>> {
        self.by_gvr
            .values()
            .filter(|rt| rt.group == group && rt.kind == kind)
            .min_by_key(|rt| (rt.version != version, version_priority(&rt.version)))
            .cloned()
    }

    /// Whether a CRD other than `crd_name` already serves `plural` or `kind` in `group`.
    pub fn names_conflict(&self, crd_name: &str, group: &str, plural: &str, kind: &str) -> Option<String> {
        for rt in self.by_gvr.values() {
            if rt.group != group {
                continue;
            }
            let owner =
                self.crd_entries.iter().find(|(_, e)| e.iter().any(|k| k.2 == rt.plural)).map(|(n, _)| n.as_str());
            if owner == Some(crd_name) {
                continue;
            }
            if rt.plural == plural {
                return Some(format!("\"{plural}\" is already in use"));
            }
            if rt.kind == kind {
                return Some(format!("\"{kind}\" is already in use"));
            }
        }
        None
    }

    /// Serves the versions of a CRD (replacing what it served before).
    pub fn register_crd(&mut self, crd_name: &str, types: Vec<ResourceType>) {
        self.unregister_crd(crd_name);
        let mut keys = Vec::new();
        for mut rt in types {
            self.next_schema_epoch += 1;
            rt.schema_epoch = self.next_schema_epoch;
            keys.push((rt.group.clone(), rt.version.clone(), rt.plural.clone()));
            self.insert(rt);
        }
        self.crd_entries.insert(crd_name.to_string(), keys);
    }

    /// Whether the CRD named `crd_name` is served.
    pub fn serves_crd(&self, crd_name: &str) -> bool {
        self.crd_entries.contains_key(crd_name)
    }

    /// Stops serving what a CRD served.
    pub fn unregister_crd(&mut self, crd_name: &str) {
        if let Some(keys) = self.crd_entries.remove(crd_name) {
            for k in keys {
                self.by_gvr.remove(&k);
            }
        }
        let live: Vec<String> = self.by_gvr.keys().map(|(g, _, _)| g.clone()).collect();
        self.group_order.retain(|g| live.contains(g));
    }

    /// The registry of built-in resources.
    pub fn builtin() -> Self {
        let mut r = Registry::default();
        for rt in builtin_types() {
            r.insert(rt);
        }
        r
    }
}

/// Options of one built-in entry that k8s-openapi does not carry.
#[derive(Default)]
struct Extra {
    short: &'static [&'static str],
    categories: &'static [&'static str],
    status: bool,
    scale: bool,
    generation: bool,
    fields: &'static [&'static str],
    name_rule: Option<NameRule>,
}

fn builtin<T: Resource + ListableResource + serde::de::DeserializeOwned + schemars::JsonSchema>(
    x: Extra,
) -> ResourceType
where
    T::Scope: 'static,
{
    resource_type::<T>(T::LIST_KIND.to_string(), x)
}

/// A built-in that is only ever created, never stored or listed (the access reviews).
fn builtin_create_only<T: Resource + serde::de::DeserializeOwned + schemars::JsonSchema>() -> ResourceType
where
    T::Scope: 'static,
{
    resource_type::<T>(format!("{}List", T::KIND), Extra::default())
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
        scale: x.scale.then(|| ScaleSpec {
            spec_replicas_path: "spec.replicas".into(),
            status_replicas_path: "status.replicas".into(),
            label_selector_path: Some("spec.selector".into()),
            selector_is_object: true,
        }),
        selectable_fields: x.fields.iter().map(|s| s.to_string()).collect(),
        tracks_generation: x.generation,
        name_rule: x.name_rule.unwrap_or(NameRule::Subdomain),
        custom: false,
        schema: None,
        schema_epoch: 0,
        printer_columns: Vec::new(),
        decode_check: Some(decode_as::<T>),
        openapi: Some(crate::openapi::builtin_schema::<T>()),
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

fn builtin_types() -> Vec<ResourceType> {
    use k8s_openapi::api::{
        apps::v1 as apps, batch::v1 as batch, coordination::v1 as coordination, core::v1 as core,
        discovery::v1 as discovery, events::v1 as events, policy::v1 as policy, resource::v1 as resource,
        scheduling::v1 as scheduling, scheduling::v1beta1 as scheduling_beta,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
    let all = &["all"][..];
    vec![
        builtin::<core::Namespace>(Extra {
            short: &["ns"],
            status: true,
            fields: &["status.phase"],
            name_rule: Some(NameRule::Label),
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
            ..Default::default()
        }),
        builtin::<core::Service>(Extra {
            short: &["svc"],
            categories: all,
            status: true,
            name_rule: Some(NameRule::Rfc1035Label),
            ..Default::default()
        }),
        builtin::<core::Endpoints>(Extra { short: &["ep"], ..Default::default() }),
        builtin::<core::ConfigMap>(Extra { short: &["cm"], ..Default::default() }),
        builtin::<core::Secret>(Extra { fields: &["type"], ..Default::default() }),
        builtin::<core::ServiceAccount>(Extra { short: &["sa"], ..Default::default() }),
        builtin::<core::Node>(Extra {
            short: &["no"],
            status: true,
            fields: &["spec.unschedulable"],
            ..Default::default()
        }),
        builtin::<core::Event>(Extra { short: &["ev"], fields: CORE_EVENT_FIELDS, ..Default::default() }),
        builtin::<core::PersistentVolumeClaim>(Extra { short: &["pvc"], status: true, ..Default::default() }),
        builtin::<apps::Deployment>(Extra {
            short: &["deploy"],
            categories: all,
            status: true,
            scale: true,
            generation: true,
            ..Default::default()
        }),
        builtin::<apps::StatefulSet>(Extra {
            short: &["sts"],
            categories: all,
            status: true,
            scale: true,
            generation: true,
            ..Default::default()
        }),
        builtin::<apps::ReplicaSet>(Extra {
            short: &["rs"],
            categories: all,
            status: true,
            scale: true,
            generation: true,
            fields: &["status.replicas"],
            ..Default::default()
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
            ..Default::default()
        }),
        builtin::<batch::CronJob>(Extra {
            short: &["cj"],
            categories: all,
            status: true,
            generation: true,
            ..Default::default()
        }),
        builtin::<discovery::EndpointSlice>(Extra::default()),
        builtin::<events::Event>(Extra { short: &["ev"], fields: EVENTS_V1_FIELDS, ..Default::default() }),
        builtin::<coordination::Lease>(Extra::default()),
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
            ..Default::default()
        }),
        builtin::<resource::ResourceClaim>(Extra { status: true, generation: true, ..Default::default() }),
        builtin::<resource::ResourceClaimTemplate>(Extra { generation: true, ..Default::default() }),
        builtin::<resource::DeviceClass>(Extra { generation: true, ..Default::default() }),
        builtin::<resource::ResourceSlice>(Extra {
            generation: true,
            fields: &["spec.nodeName", "spec.driver"],
            ..Default::default()
        }),
        builtin::<scheduling::PriorityClass>(Extra { short: &["pc"], ..Default::default() }),
        builtin::<scheduling_beta::PodGroup>(Extra { status: true, generation: true, ..Default::default() }),
        builtin_create_only::<k8s_openapi::api::authorization::v1::SelfSubjectAccessReview>(),
        builtin_create_only::<k8s_openapi::api::authorization::v1::SelfSubjectRulesReview>(),
    ]
}

/// Errors that make a CRD unservable (reported as 422 causes on its create or update).
pub fn crd_resource_types(crd: &Value) -> Result<Vec<ResourceType>, Vec<crate::error::StatusCause>> {
    use crate::error::StatusCause;
    let mut causes = Vec::new();
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default().to_string();
    let names = &spec["names"];
    let plural = names["plural"].as_str().unwrap_or_default().to_string();
    let kind = names["kind"].as_str().unwrap_or_default().to_string();
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    let required = |field: &str, v: &str, causes: &mut Vec<StatusCause>| {
        if v.is_empty() {
            causes.push(StatusCause::field("FieldValueRequired", field, "Required value"));
        }
    };
    required("spec.group", &group, &mut causes);
    required("spec.names.plural", &plural, &mut causes);
    required("spec.names.kind", &kind, &mut causes);
    if !group.is_empty() && !group.contains('.') {
        causes.push(StatusCause::field(
            "FieldValueInvalid",
            "spec.group",
            format!("Invalid value: \"{group}\": should be a domain with at least one dot"),
        ));
    }
    if !plural.is_empty() && !group.is_empty() && name != format!("{plural}.{group}") {
        causes.push(StatusCause::field(
            "FieldValueInvalid",
            "metadata.name",
            format!("Invalid value: \"{name}\": must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    let scope = spec["scope"].as_str().unwrap_or_default();
    if scope != "Namespaced" && scope != "Cluster" {
        causes.push(StatusCause::field(
            "FieldValueNotSupported",
            "spec.scope",
            format!("Unsupported value: \"{scope}\": supported values: \"Cluster\", \"Namespaced\""),
        ));
    }
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    if versions.is_empty() {
        causes.push(StatusCause::field(
            "FieldValueRequired",
            "spec.versions",
            "Required value: must have exactly one version marked as storage version",
        ));
    }
    let storage = versions.iter().filter(|v| v["storage"].as_bool() == Some(true)).count();
    if !versions.is_empty() && storage != 1 {
        causes.push(StatusCause::field(
            "FieldValueInvalid",
            "spec.versions",
            format!("Invalid value: {}: must have exactly one version marked as storage version", storage),
        ));
    }
    let singular = names["singular"].as_str().map(str::to_string).unwrap_or_else(|| kind.to_lowercase());
    let list_kind = names["listKind"].as_str().map(str::to_string).unwrap_or_else(|| format!("{kind}List"));
    let strings = |v: &Value| -> Vec<String> {
        v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect()).unwrap_or_default()
    };
    let mut out = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let vname = v["name"].as_str().unwrap_or_default().to_string();
        if vname.is_empty() {
            causes.push(StatusCause::field("FieldValueRequired", format!("spec.versions[{i}].name"), "Required value"));
            continue;
        }
        let schema_json = &v["schema"]["openAPIV3Schema"];
        let schema = if schema_json.is_object() {
            match StructuralSchema::compile(schema_json) {
                Ok(s) => Some(Arc::new(s)),
                Err(e) => {
                    causes.push(StatusCause::field(
                        "FieldValueInvalid",
                        format!("spec.versions[{i}].schema.openAPIV3Schema"),
                        format!("Invalid value: {e}"),
                    ));
                    None
                }
            }
        } else {
            causes.push(StatusCause::field(
                "FieldValueRequired",
                format!("spec.versions[{i}].schema.openAPIV3Schema"),
                "Required value: schemas are required",
            ));
            None
        };
        if v["served"].as_bool() != Some(true) {
            continue;
        }
        let sub = &v["subresources"];
        let scale = sub["scale"].as_object().map(|s| {
            let path = |k: &str| s.get(k).and_then(Value::as_str).map(|p| p.trim_start_matches('.').to_string());
            ScaleSpec {
                spec_replicas_path: path("specReplicasPath").unwrap_or_else(|| "spec.replicas".into()),
                status_replicas_path: path("statusReplicasPath").unwrap_or_else(|| "status.replicas".into()),
                label_selector_path: path("labelSelectorPath"),
                selector_is_object: false,
            }
        });
        let selectable_fields = v["selectableFields"]
            .as_array()
            .map(|a| {
                a.iter().filter_map(|f| f["jsonPath"].as_str().map(|p| p.trim_start_matches('.').to_string())).collect()
            })
            .unwrap_or_default();
        let derived = Derived::of(&group, &vname, &plural, &kind);
        out.push(ResourceType {
            group: group.clone(),
            version: vname,
            kind: kind.clone(),
            list_kind: list_kind.clone(),
            plural: plural.clone(),
            singular: singular.clone(),
            namespaced: scope == "Namespaced",
            short_names: strings(&names["shortNames"]),
            categories: strings(&names["categories"]),
            status: sub["status"].is_object(),
            scale,
            selectable_fields,
            tracks_generation: true,
            name_rule: NameRule::Subdomain,
            custom: true,
            schema,
            schema_epoch: 0,
            printer_columns: v["additionalPrinterColumns"].as_array().cloned().unwrap_or_default(),
            decode_check: None,
            openapi: schema_json.is_object().then(|| crate::openapi::SchemaSource::Crd(Arc::new(schema_json.clone()))),
            derived,
        });
    }
    if causes.is_empty() { Ok(out) } else { Err(causes) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_like_kubernetes() {
        let mut v = vec!["v1alpha1", "v1beta1", "v2", "v1", "v1beta2", "foo", "v10alpha1"];
        v.sort_by_key(|s| version_priority(s));
        assert_eq!(v, vec!["v2", "v1", "v1beta2", "v1beta1", "v10alpha1", "v1alpha1", "foo"]);
    }

    #[test]
    fn builtins_include_dra_and_podgroups() {
        let r = Registry::builtin();
        assert!(r.get("resource.k8s.io", "v1", "resourceclaims").is_some_and(|rt| rt.namespaced && rt.status));
        assert!(r.get("resource.k8s.io", "v1", "deviceclasses").is_some_and(|rt| !rt.namespaced));
        assert!(r.get("scheduling.k8s.io", "v1beta1", "podgroups").is_some());
        assert!(r.get("apps", "v1", "deployments").is_some_and(|rt| rt.scale.is_some()));
        assert_eq!(r.groups()[0].0, "");
    }
}
