//! The registry: which resources the server serves and how each kind behaves. Built-ins come
//! from k8s-openapi types (`builtin`), CRDs are added at run time (`apiextensions::crd`).
//! Each resource type carries its kind's [`Strategy`], and the generic store (`store`) runs
//! every write through it. One folder per API group, one file per kind with rules of its own.

pub(crate) mod admission;
pub(crate) mod admissionregistration;
pub(crate) mod apiextensions;
pub(crate) mod apps;
pub(crate) mod authentication;
pub(crate) mod authorization;
pub(crate) mod batch;
mod builtin;
pub(crate) mod coordination;
pub(crate) mod core;
pub(crate) mod decode;
pub(crate) mod defects;
pub(crate) mod discovery;
pub(crate) mod features;
pub(crate) mod field;
pub(crate) mod go_types;
pub(crate) mod meta;
pub(crate) mod object_meta_decode;
pub(crate) mod patch_meta;
pub(crate) mod printers;
pub(crate) mod rbac;
pub(crate) mod resource;
pub(crate) mod scale;
pub(crate) mod scheduling;
pub(crate) mod smd;
pub(crate) mod store;
mod strategy;

pub(crate) use meta::{set_condition, str_field, string_list};
pub(crate) use strategy::{CreateOnUpdateStrategy, DefaultStrategy, Strategy};

use crate::apiextensions::StructuralSchema;
use crate::storage::{StorageKey, Store, StoredResource, Subresource, Verb};
use apimachinery::validation;
use defects::{ActiveDefect, ServerDefect};
use features::FeatureGates;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::Value;
use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock};

/// Everything behind the server's lock: the objects, and the resource types they are served as
/// (which change with CRD writes, so under the same lock).
#[derive(Debug)]
pub(crate) struct State {
    pub store: Store,
    pub registry: Registry,
    /// Whether the RBAC authorizer is on (else every request is allowed).
    pub rbac: bool,
    /// Whether kube-controller-manager's garbage collector and namespace controller run
    /// (not in envtest mode).
    pub controller_manager: bool,
    /// The admission webhooks registered.
    pub webhooks: admission::Webhooks,
    /// The warnings the write being handled raised (ratcheted validation errors), for its
    /// answer's `Warning` headers; [`crate::endpoints::Context::write`] starts each write empty.
    pub warnings: Vec<String>,
    /// The bearer tokens the server accepts, and whose they are (a TokenReview reads them).
    pub tokens: Tokens,
}

/// Bearer token -> the user it authenticates.
pub(crate) type Tokens = Arc<parking_lot::RwLock<HashMap<String, Arc<crate::storage::UserInfo>>>>;

impl State {
    /// Whether the server was built with `defect` (never, without the `defects` feature).
    #[inline]
    pub fn defective(&self, defect: ServerDefect) -> bool {
        self.registry.defect.is(defect)
    }
}

static NAMESPACES_KEY: LazyLock<StorageKey> = LazyLock::new(|| StorageKey::new("", "namespaces"));
static CRDS_KEY: LazyLock<StorageKey> =
    LazyLock::new(|| StorageKey::new("apiextensions.k8s.io", "customresourcedefinitions"));

/// The storage key of namespaces, which creates consult for existence and lifecycle.
pub(crate) fn namespaces_key() -> &'static StorageKey {
    &NAMESPACES_KEY
}

/// The storage key of CRDs.
pub(crate) fn crds_key() -> &'static StorageKey {
    &CRDS_KEY
}

/// How object names of a kind are validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameRule {
    /// RFC 1123 subdomain: most kinds.
    Subdomain,
    /// RFC 1123 label: namespaces, services.
    Label,
    /// Only a valid path segment (`path.ValidatePathSegmentName`: not `.` or `..`, no `/` or
    /// `%`): RBAC objects and core/v1 events, whose strategies check nothing more.
    PathSegment,
}

impl NameRule {
    /// Upstream's messages for a `generateName` prefix under this rule: the name rule after
    /// `maskTrailingDash` (which replaces the last two characters of a name ending in `-` by
    /// `a`), or for path segments only the `/` and `%` checks (`IsValidPathSegmentPrefix`).
    pub fn prefix_errors(self, prefix: &str) -> Vec<String> {
        if self == NameRule::PathSegment {
            return ["/", "%"]
                .iter()
                .filter(|b| prefix.contains(*b))
                .map(|b| format!("may not contain '{b}'"))
                .collect();
        }
        let masked = match prefix.strip_suffix('-') {
            Some(_) if prefix.len() > 1 => {
                let mut m: String = prefix[..prefix.len() - 2].to_string();
                m.push('a');
                m
            }
            _ => prefix.to_string(),
        };
        self.errors(&masked)
    }

    /// Upstream's messages for `name` under this rule; empty when it is valid.
    pub fn errors(self, name: &str) -> Vec<String> {
        match self {
            NameRule::Subdomain => validation::dns1123_subdomain_errors(name),
            NameRule::Label => validation::dns1123_label_errors(name),
            NameRule::PathSegment => {
                let mut errs = Vec::new();
                if name == "." || name == ".." {
                    errs.push(format!("may not be '{name}'"));
                }
                for bad in ["/", "%"] {
                    if name.contains(bad) {
                        errs.push(format!("may not contain '{bad}'"));
                    }
                }
                errs
            }
        }
    }
}

/// Where the `/scale` subresource reads and writes replicas, as dotted paths (`spec.replicas`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScaleSpec {
    pub spec_replicas_path: String,
    pub status_replicas_path: String,
    pub label_selector_path: Option<String>,
    /// What is at `label_selector_path`.
    pub selector_form: SelectorForm,
}

/// How an object keeps the selector its Scale reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SelectorForm {
    /// A `metav1.LabelSelector` (apps/v1 workloads).
    Object,
    /// A map of labels (ReplicationController's `spec.selector`).
    Map,
    /// The selector already printed (CRDs' `labelSelectorPath`).
    String,
}

/// Decodes a built-in body into its k8s-openapi type; `Err` carries the decoder's message.
pub(crate) type DecodeCheck = fn(&Value) -> Result<(), String>;

/// Where a served resource's OpenAPI schema comes from.
#[derive(Clone)]
pub(crate) enum SchemaSource {
    /// A k8s-openapi type: returns a `$ref` to its schema and adds the schema (and everything it
    /// references) to the generator's components.
    Builtin(fn(&mut SchemaGenerator) -> Schema),
    /// A CRD version's `openAPIV3Schema`, as given.
    Crd(Arc<Value>),
}

impl std::fmt::Debug for SchemaSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SchemaSource::Builtin(_) => f.write_str("SchemaSource::Builtin"),
            SchemaSource::Crd(_) => f.write_str("SchemaSource::Crd"),
        }
    }
}

/// The schema source of the k8s-openapi type `T`.
pub(crate) fn builtin_schema<T: JsonSchema>() -> SchemaSource {
    SchemaSource::Builtin(|g| g.subschema_for::<T>())
}

/// One served group/version/resource and how the server treats it.
#[derive(Debug, Clone)]
pub(crate) struct ResourceType {
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
    pub openapi: Option<SchemaSource>,
    /// The kind's rules (see [`Strategy`]).
    pub strategy: &'static dyn Strategy,
    /// The server's feature gates, which some kinds' rules depend on.
    pub gates: Arc<FeatureGates>,
    /// The server's deliberate defect, if any (see [`ResourceType::defective`]).
    pub defect: ActiveDefect,
    /// A custom resource's conversion between its CRD's versions (storage version, webhook).
    pub conversion: Option<Arc<crate::registry::apiextensions::conversion::Conversion>>,
    /// Names derived from group, version and plural, computed once (see [`ResourceType::derive`]).
    derived: Derived,
}

/// The built-in resources whose registry sets `ReturnDeletedObject: true`
/// (`pkg/registry/*/*/storage/storage.go`, v1.37.2): an immediate DELETE answers the deleted
/// object; every other resource, custom resources included, answers a `Success` Status.
const RETURN_DELETED_OBJECT: [(&str, &str); 18] = [
    ("", "pods"),
    ("", "services"),
    ("", "namespaces"),
    ("", "serviceaccounts"),
    ("", "persistentvolumeclaims"),
    ("", "persistentvolumes"),
    ("", "podtemplates"),
    ("", "resourcequotas"),
    ("resource.k8s.io", "resourceclaims"),
    ("resource.k8s.io", "resourceclaimtemplates"),
    ("resource.k8s.io", "resourceslices"),
    ("resource.k8s.io", "deviceclasses"),
    ("resource.k8s.io", "resourcepoolstatusrequests"),
    ("storage.k8s.io", "csidrivers"),
    ("storage.k8s.io", "storageclasses"),
    ("storage.k8s.io", "volumeattachments"),
    ("storage.k8s.io", "csinodes"),
    ("storage.k8s.io", "volumeattributesclasses"),
];

impl ResourceType {
    /// Whether the server was built with `defect` (never, without the `defects` feature).
    #[inline]
    pub(crate) fn defective(&self, defect: ServerDefect) -> bool {
        self.defect.is(defect)
    }

    /// Whether an immediate DELETE answers the deleted object rather than a Status.
    pub(crate) fn returns_deleted_object(&self) -> bool {
        !self.custom && RETURN_DELETED_OBJECT.iter().any(|(g, p)| *g == self.group && *p == self.plural)
    }
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
            // events.k8s.io Events are stored with the core ones (see `core::event`).
            key: StorageKey::new(if group == core::event::EVENTS_GROUP { "" } else { group }, plural),
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

    /// The verbs the resource supports, as discovery lists them.
    pub fn verbs(&self) -> Vec<&'static str> {
        if self.strategy.create_only() {
            return vec![Verb::Create.as_str()];
        }
        if self.strategy.read_only() {
            return vec![Verb::Get.as_str(), Verb::List.as_str()];
        }
        [
            Verb::Create,
            Verb::Delete,
            Verb::DeleteCollection,
            Verb::Get,
            Verb::List,
            Verb::Patch,
            Verb::Update,
            Verb::Watch,
        ]
        .into_iter()
        .filter(|v| *v != Verb::DeleteCollection || self.strategy.deletes_collections())
        .map(Verb::as_str)
        .collect()
    }

    /// Whether the resource has `subresource` (status and scale as declared, the others as
    /// its strategy says).
    pub fn has_subresource(&self, subresource: Subresource) -> bool {
        match subresource {
            Subresource::Status => self.status,
            Subresource::Scale => self.scale.is_some(),
            other => self.strategy.subresources().contains(&other),
        }
    }

    /// Whether `field` may be used in a field selector on this resource.
    pub fn supports_field(&self, field: &str) -> bool {
        field == "metadata.name"
            || (field == "metadata.namespace" && self.namespaced)
            || self.selectable_fields.iter().any(|f| f == field)
    }
}

impl StoredResource for ResourceType {
    fn storage_key(&self) -> &StorageKey {
        ResourceType::storage_key(self)
    }

    fn shared_kind(&self) -> &Arc<str> {
        &self.derived.kind
    }

    fn qualified_resource(&self) -> &Arc<str> {
        &self.derived.resource
    }

    fn schema_epoch(&self) -> u64 {
        self.schema_epoch
    }

    fn selectable_values(&self, object: &Value) -> Vec<(String, String)> {
        self.strategy.selectable_values(self, object)
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
pub(crate) struct Registry {
    by_gvr: HashMap<(String, String, String), Arc<ResourceType>>,
    /// Group names in discovery order: built-ins in registration order, then CRD groups.
    group_order: Vec<String>,
    /// Which CRD (by name) serves which (group, version, plural) entries.
    crd_entries: BTreeMap<String, Vec<(String, String, String)>>,
    next_schema_epoch: u64,
    /// The server's feature gates, handed to every resource type.
    gates: Arc<FeatureGates>,
    /// The server's deliberate defect, handed to every resource type like the gates.
    defect: ActiveDefect,
}

/// Sort key for Kubernetes version strings: GA before beta before alpha, higher numbers first.
pub(crate) fn version_priority(v: &str) -> (u8, u32, u32, String) {
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
            rt.gates = self.gates.clone();
            rt.defect = self.defect;
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

    /// The registry of built-in resources, with the server's feature gates and defect.
    pub fn builtin(gates: FeatureGates, defect: ActiveDefect) -> Self {
        let gates = Arc::new(gates);
        let mut r = Registry { gates: gates.clone(), defect, ..Registry::default() };
        for mut rt in builtin::types() {
            rt.gates = gates.clone();
            rt.defect = defect;
            r.insert(rt);
        }
        r
    }
}

/// One built-in kind, for offline tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinKind {
    /// `v1`, `apps/v1`.
    pub api_version: String,
    /// `Pod`.
    pub kind: String,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
}

/// Every built-in kind the server can serve, whatever its feature gates: what offline tools
/// (`kproof lint`, the runner's isolation of rows on a shared cluster) resolve kinds against.
pub fn builtin_kinds() -> Vec<BuiltinKind> {
    builtin::types()
        .into_iter()
        .map(|rt| BuiltinKind {
            api_version: if rt.group.is_empty() { rt.version } else { format!("{}/{}", rt.group, rt.version) },
            kind: rt.kind,
            namespaced: rt.namespaced,
        })
        .collect()
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
        let r = Registry::builtin(FeatureGates::default(), Default::default());
        assert!(r.get("resource.k8s.io", "v1", "resourceclaims").is_some_and(|rt| rt.namespaced && rt.status));
        assert!(r.get("resource.k8s.io", "v1", "deviceclasses").is_some_and(|rt| !rt.namespaced));
        assert!(r.get("scheduling.k8s.io", "v1beta1", "podgroups").is_some());
        assert!(r.get("apps", "v1", "deployments").is_some_and(|rt| rt.scale.is_some()));
        assert_eq!(r.groups()[0].0, "");
    }
}
