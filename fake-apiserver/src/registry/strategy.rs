//! What differs from kind to kind, in one place per kind: the `Strategy` of kube-apiserver's
//! `pkg/registry/<group>/<kind>/strategy.go`. The generic store (`registry::store`) runs every
//! write through the resource type's strategy; a kind with no rules of its own uses
//! [`DefaultStrategy`].

use super::printers;
use super::store::UpdateMode;
use super::{NameRule, ResourceType, State};
use crate::error::{ApiError, ApiResult, StatusCause};
use crate::storage::{ChangeKind, StoredObject, Subresource, field_string};
use jiff::Timestamp;
use serde_json::Value;

/// The rules of one kind. Every method has the behaviour of a kind without special rules.
pub(crate) trait Strategy: Sync + std::fmt::Debug {
    /// How names of this kind are validated.
    fn name_rule(&self) -> NameRule {
        NameRule::Subdomain
    }

    /// Whether a create validates `metadata.generateName` by the name rule: kinds validated
    /// with `ValidateObjectMeta` do, those moved to `ValidateObjectMetaWithOpts` (apimachinery
    /// v0.37.2 pkg/api/validation/objectmeta.go: "generateName is not directly validated here")
    /// do not.
    fn validates_generate_name(&self) -> bool {
        true
    }

    /// Whether a PUT of an object that does not exist creates it (`AllowCreateOnUpdate`).
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// Whether a create keeps the `status` the client sent (nodes: the kubelet registers them
    /// with theirs); other kinds with a status subresource start with none.
    fn keeps_status_on_create(&self) -> bool {
        false
    }

    /// `PrepareForCreate`: what the server sets on a new object (status, conditions,
    /// finalizers, fields of disabled features dropped), after the generic metadata. `now` is
    /// a `metav1.Time` string.
    fn prepare_for_create(&self, _rt: &ResourceType, _obj: &mut Value, _now: &str) {}

    /// `BeginCreate` of the kind's REST storage (Services allocate cluster IPs and node ports
    /// there): after mutating admission, before `PrepareForCreate` and validation; an error
    /// ends the create in their place.
    fn begin_create(&self, _rt: &ResourceType, _obj: &mut Value) -> ApiResult<()> {
        Ok(())
    }

    /// `BeginUpdate` of the kind's REST storage, on a write to the main resource: as
    /// [`Strategy::begin_create`], with the stored object.
    fn begin_update(&self, _rt: &ResourceType, _new: &mut Value, _old: &Value) -> ApiResult<()> {
        Ok(())
    }

    /// `PrepareForUpdate`: what an update through `mode` may not change, undone on `new`.
    fn prepare_for_update(&self, _rt: &ResourceType, _new: &mut Value, _old: &Value, _mode: UpdateMode) {}

    /// Fields of `obj` at paths the built-in type does not declare that a gated feature adds
    /// and whose gate is on: the decoder keeps them (`(path, value)`, taken before it drops
    /// undeclared fields).
    fn gated_fields(&self, _rt: &ResourceType, _obj: &Value) -> Vec<(Vec<&'static str>, Value)> {
        Vec::new()
    }

    /// What the decoder does to a body of this kind after it decoded: custom resources are
    /// pruned and defaulted by their schema (built-ins lose their unknown fields in
    /// `registry::decode`, then get [`Strategy::default`]).
    fn canonicalize(&self, _rt: &ResourceType, _obj: &mut Value) {}

    /// [`Strategy::canonicalize`] of the body of a status write, of which only the status is
    /// kept: a kind may leave the rest as it came.
    fn canonicalize_status_write(&self, rt: &ResourceType, obj: &mut Value) {
        self.canonicalize(rt, obj);
    }

    /// The kind's defaults (`SetDefaults_<Kind>` of `pkg/apis/<group>/v1/defaults.go`),
    /// applied to every decoded body, so managedFields and validation see them.
    fn default(&self, _rt: &ResourceType, _obj: &mut Value) {}

    /// `Validate` of the kind's own fields on create (ObjectMeta is validated by the generic
    /// store): the causes of a 422 Invalid.
    fn validate(&self, _rt: &ResourceType, _obj: &Value) -> Vec<StatusCause> {
        Vec::new()
    }

    /// `ValidateUpdate` of a write to the main resource: by default the create rules on the
    /// new object; kinds add their immutable fields.
    fn validate_update(&self, rt: &ResourceType, obj: &Value, _old: &Value) -> Vec<StatusCause> {
        self.validate(rt, obj)
    }

    /// `ValidateUpdate` of the status strategy (a write through `/status`).
    /// A synthetic subresource whose verb a status write of `old` into `obj` needs besides
    /// `<resource>/status` (DRA's `resourceclaims/binding`).
    fn synthetic_status_subresource(&self, _rt: &ResourceType, _obj: &Value, _old: &Value) -> Option<&'static str> {
        None
    }

    fn validate_status_update(&self, _rt: &ResourceType, _obj: &Value, _old: &Value) -> Vec<StatusCause> {
        Vec::new()
    }

    /// Graceful deletion (`CheckGracefulDelete`): the grace period a DELETE of `obj` gets,
    /// given the one requested; `None` when the kind has no graceful deletion.
    fn deletion_grace_period(&self, _obj: &Value, _requested: Option<i64>) -> Option<i64> {
        None
    }

    /// Whether something besides `metadata.finalizers` holds a deleting object
    /// (namespaces: `spec.finalizers`).
    fn finalizers_pending(&self, _obj: &Value) -> bool {
        false
    }

    /// What marking an object for deletion also changes (a namespace's phase, a CRD's
    /// condition). `now` is a `metav1.Time` string.
    fn mark_deleting(&self, _obj: &mut Value, _now: &str) {}

    /// `DefaultGarbageCollectionPolicy`: whether a DELETE that names no propagation policy
    /// orphans the dependents (else they go in the background).
    fn orphans_dependents_by_default(&self) -> bool {
        false
    }

    /// The values of the selectable fields of `obj`, for field selectors.
    fn selectable_values(&self, rt: &ResourceType, obj: &Value) -> Vec<(String, String)> {
        let read = |f: &str| apimachinery::unstructured::nested_field_at(obj, f).map(field_string);
        rt.selectable_fields.iter().map(|f| (f.clone(), read(f).unwrap_or_default())).collect()
    }

    /// Rewrites an object stored through another version of the kind into the shape of
    /// `rt`'s version (events: `core/v1` and `events.k8s.io/v1` share a storage).
    fn convert_to(&self, _rt: &ResourceType, _obj: &mut Value) {}

    /// What the registry does after an object of this kind is written (CRDs: serve them).
    fn after_commit(&self, _st: &mut State, _obj: &StoredObject, _kind: ChangeKind) {}

    /// Subresources besides `status` and `scale` (which the resource type declares).
    fn subresources(&self) -> &'static [Subresource] {
        &[]
    }

    /// Whether objects of this kind are only ever created and answered, never stored (the
    /// access reviews).
    fn create_only(&self) -> bool {
        false
    }

    /// Whether the collection can be deleted at once (`deletecollection`); kube-apiserver's
    /// namespaces cannot.
    fn deletes_collections(&self) -> bool {
        true
    }

    /// A kind served for reading only (`get` and `list`): every other verb is 405.
    fn read_only(&self) -> bool {
        false
    }

    /// The answer to a create of a [`Strategy::create_only`] kind by `user`, in `namespace`
    /// (of the URL; empty for cluster-scoped kinds), at `now` (RFC 3339).
    fn answer_create(
        &self,
        _rt: &ResourceType,
        _obj: Value,
        _st: &super::State,
        _user: &crate::storage::UserInfo,
        _namespace: &str,
        _now: &str,
    ) -> ApiResult<Value> {
        Err(ApiError::method_not_allowed())
    }

    /// The columns of the kind's table (kube-apiserver's printer).
    fn table_columns(&self, _rt: &ResourceType) -> Vec<Value> {
        printers::default_columns()
    }

    /// The cells of one object's row, in [`Strategy::table_columns`] order.
    fn table_cells(&self, _rt: &ResourceType, obj: &Value, now: Timestamp) -> Vec<Value> {
        printers::default_cells(obj, now)
    }
}

/// The strategy of kinds without rules of their own.
#[derive(Debug)]
pub(crate) struct DefaultStrategy;

impl Strategy for DefaultStrategy {}

/// Kinds without rules of their own whose PUT of a missing object creates it (core/v1
/// Endpoints and node.k8s.io RuntimeClass: `AllowCreateOnUpdate` is true in their
/// `pkg/registry/.../strategy.go` at v1.37.2).
#[derive(Debug)]
pub(crate) struct CreateOnUpdateStrategy;

impl Strategy for CreateOnUpdateStrategy {
    fn allow_create_on_update(&self) -> bool {
        true
    }
}
