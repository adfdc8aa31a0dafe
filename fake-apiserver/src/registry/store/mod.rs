//! The generic store: create, update and delete with the apiserver's metadata rules
//! (`registry/generic/registry.Store`), each step that differs by kind asked of the resource
//! type's [`Strategy`](super::Strategy). Runs under the server's lock, except
//! [`prepare_create`], which needs no store and runs before the lock is taken.

use super::admission::{self, Mutation};
use super::core::namespace::terminating_forbidden;
use super::decode::decode_object;
use super::defects::ServerDefect;
use super::meta::{meta_mut, new_uid, object_meta_causes, string_list};
use super::{ResourceType, State, namespaces_key};
use crate::error::{ApiError, ApiResult, StatusCause};
use crate::registry::rbac::authorizer::{self, Attributes, ResourceAttributes};
use crate::storage::{ChangeKind, Encoded, StoredObject, Subresource, Verb, WriteContext, parse_rv, preview, value_rv};
use apimachinery::clock::format_time;
use apimachinery::go::quote;
use apimachinery::json::same;
use apimachinery::unstructured::set_nested_field;
use bytes::Bytes;
use jiff::Timestamp;
use serde_json::{Map, Value, json};
use std::sync::Arc;

mod delete;

pub(crate) use delete::{DeleteOptions, Deleted, delete, delete_all};

/// Records who owns which field of an object on a write: what the field manager does for
/// every non-apply write (`managedFields` entries of operation `Update`).
pub(crate) trait FieldOwnership {
    /// A create: the writer owns every field it set.
    fn record_create(&self, rt: &ResourceType, obj: &mut Value, w: &Write);
    /// An update from `old` to `new`: the writer owns the fields it changed.
    fn record_update(&self, rt: &ResourceType, old: &Value, new: &mut Value, w: &Write);
}

/// Stores `value` through `rt` and runs what the kind does after a write (a CRD starts or
/// stops being served). Every write of an object goes through here.
pub(crate) fn commit(
    st: &mut State,
    rt: &ResourceType,
    kind: ChangeKind,
    value: Value,
    ctx: &Arc<WriteContext>,
    now: Timestamp,
) -> Arc<StoredObject> {
    let obj = st.store.commit(rt, kind, value, ctx, now);
    rt.strategy.after_commit(st, &obj, kind);
    obj
}

/// The check of a synthetic status subresource (`resourceclaims/binding`) for the writer, with
/// the verb of its request; the server's own controllers are not checked.
fn authorize_synthetic(
    st: &State,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    obj: &Value,
    old: &Value,
    w: &Write,
) -> ApiResult<()> {
    let (Some(user), true) = (w.ctx.user.as_ref(), st.rbac) else { return Ok(()) };
    let Some(sub) = rt.strategy.synthetic_status_subresource(rt, obj, old) else { return Ok(()) };
    let verb = if w.ctx.verb == Verb::Patch { "patch" } else { "update" };
    let attrs = Attributes {
        verb: verb.into(),
        resource: Some(ResourceAttributes {
            group: rt.group.clone(),
            resource: rt.plural.clone(),
            subresource: sub.into(),
            namespace: ns.into(),
            name: name.into(),
        }),
        path: String::new(),
    };
    let d = authorizer::authorize(st, user, &attrs);
    if d.allowed { Ok(()) } else { Err(authorizer::forbidden(user, &attrs, &d.reason)) }
}

/// A write context for the server's own controllers.
pub(crate) fn system_ctx(user_agent: &str, verb: Verb, subresource: Option<Subresource>) -> Arc<WriteContext> {
    Arc::new(WriteContext { verb, subresource, user_agent: user_agent.into(), field_manager: None, user: None })
}

/// Everything a write needs besides the object: who, when, and whether to persist.
pub(crate) struct Write<'a> {
    /// Who writes, for the timeline and managedFields.
    pub ctx: &'a Arc<WriteContext>,
    /// When, on the server's clock.
    pub now: Timestamp,
    /// A dry run goes through every step but stores nothing.
    pub dry_run: bool,
    /// Records who owns which field; `None` when the object carries its `managedFields`
    /// already (server-side apply computed them).
    pub fields: Option<&'a dyn FieldOwnership>,
}

impl Write<'_> {
    /// The time of the write as a `metav1.Time` string.
    pub fn time(&self) -> String {
        format_time(self.now)
    }

    /// Stores `value` (or, for a dry run, shows what would be stored), in the storage version
    /// of a custom resource ([`to_storage`]).
    pub fn persist(
        &self,
        st: &mut State,
        rt: &ResourceType,
        kind: ChangeKind,
        value: Value,
    ) -> ApiResult<Arc<StoredObject>> {
        if let Some(c) = &rt.conversion {
            c.refresh(st);
        }
        // Writers that do not pass through the create or update path (finalize, the
        // controllers) store the Go shape too.
        let mut value = value;
        super::go_types::go_shape(rt, &mut value);
        let value = to_storage(rt, value)?;
        if self.dry_run {
            return Ok(Arc::new(preview(rt, &value)));
        }
        Ok(commit(st, rt, kind, value, self.ctx, self.now))
    }
}

/// A custom resource about to be stored, converted to its CRD's storage version (through its
/// conversion webhook, if it has one); anything else as it is. A failed conversion is no
/// `Status` upstream: the client gets a 500 with its message and no reason.
pub(crate) fn to_storage(rt: &ResourceType, value: Value) -> ApiResult<Value> {
    match &rt.conversion {
        Some(c) if value["apiVersion"].as_str() != Some(c.storage.as_str()) => {
            let mut one = [value];
            c.convert(&mut one, &c.storage).map_err(ApiError::internal_plain)?;
            let [v] = one;
            Ok(v)
        }
        _ => Ok(value),
    }
}

/// The object as served through `rt`: the stored bytes, or (when it is stored in another
/// version or under an older schema) a copy converted to `rt`'s version, defaults applied. A
/// custom resource's conversion webhook may fail: the read's 500.
pub(crate) fn try_render(rt: &ResourceType, obj: &StoredObject) -> ApiResult<Bytes> {
    Ok(try_render_many(rt, std::slice::from_ref(&obj))?.pop().unwrap_or_default())
}

/// [`try_render`] of several objects, with one conversion webhook call for all of them (as a
/// list is converted upstream).
pub(crate) fn try_render_many(rt: &ResourceType, objs: &[&StoredObject]) -> ApiResult<Vec<Bytes>> {
    let (mut at, mut values): (Vec<usize>, Vec<Value>) = (Vec::new(), Vec::new());
    let mut out: Vec<Bytes> = Vec::with_capacity(objs.len());
    for (i, obj) in objs.iter().enumerate() {
        if served_as_stored(rt, obj) {
            out.push(obj.bytes.clone());
        } else {
            out.push(Bytes::new());
            at.push(i);
            values.push(obj.value());
        }
    }
    if values.is_empty() {
        return Ok(out);
    }
    match &rt.conversion {
        Some(c) => c.convert(&mut values, rt.api_version()).map_err(ApiError::internal_plain)?,
        None => {
            for v in &mut values {
                rt.strategy.convert_to(rt, v);
                set_nested_field(v, &["apiVersion"], Value::String(rt.api_version().to_string()));
            }
        }
    }
    for (i, mut v) in at.into_iter().zip(values) {
        if let Some(schema) = &rt.schema {
            schema.apply_defaults(&mut v);
        }
        out[i] = Bytes::from(serde_json::to_vec(&v).unwrap_or_default());
    }
    Ok(out)
}

/// [`try_render`] where no client waits for an error (the server's own reads): a failed
/// conversion leaves the object in its stored version, with `apiVersion` rewritten.
pub(crate) fn render(rt: &ResourceType, obj: &StoredObject) -> Bytes {
    try_render(rt, obj).unwrap_or_else(|e| {
        tracing::warn!(resource = %rt.plural, name = %obj.name, "{}", e.message);
        let mut v = obj.value();
        set_nested_field(&mut v, &["apiVersion"], Value::String(rt.api_version().to_string()));
        Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
    })
}

/// The object as served through `rt` ([`render`]), as a value.
pub(crate) fn served_value(rt: &ResourceType, obj: &StoredObject) -> Value {
    if served_as_stored(rt, obj) {
        return obj.value();
    }
    serde_json::from_slice(&render(rt, obj)).unwrap_or_else(|_| obj.value())
}

/// [`served_value`] for a write that reads the stored object: a failed conversion fails it.
pub(crate) fn try_served_value(rt: &ResourceType, obj: &StoredObject) -> ApiResult<Value> {
    if served_as_stored(rt, obj) {
        return Ok(obj.value());
    }
    serde_json::from_slice(&try_render(rt, obj)?).map_err(ApiError::internal)
}

/// Whether `rt` serves `obj` as its stored bytes (same version, same schema).
pub(crate) fn served_as_stored(rt: &ResourceType, obj: &StoredObject) -> bool {
    obj.api_version == rt.api_version() && obj.schema_epoch == rt.schema_epoch
}

/// The 422 of a write whose ObjectMeta or kind-specific validation failed: meta causes first,
/// in one `Invalid`, as a kind's `Validate` reports `ValidateObjectMeta` with its own rules.
/// It names the object's own kind (a custom resource's body may carry another).
fn invalid_if_any(rt: &ResourceType, obj: &Value, name: &str, causes: Vec<StatusCause>) -> ApiResult<()> {
    if causes.is_empty() {
        return Ok(());
    }
    let kind = obj["kind"].as_str().filter(|_| rt.custom).unwrap_or(&rt.kind);
    Err(ApiError::invalid(&rt.group, kind, name, causes))
}

/// ObjectMeta causes of a custom resource as apiextensions-apiserver reports them: on update,
/// label, annotation and owner-reference errors three times (its strategy, its schema's
/// ObjectMeta check and the generic store each validate them), and when the CRD has CEL rules,
/// a blocking metadata error (Required, NotSupported, TooLong, TooMany, TypeInvalid) adds the
/// "rules were not checked" cause (the rules do not run on such an object).
fn custom_meta_causes(rt: &ResourceType, meta_causes: Vec<StatusCause>, update: bool) -> Vec<StatusCause> {
    if !rt.custom || meta_causes.is_empty() {
        return meta_causes;
    }
    let mut out = Vec::new();
    let mut other = false;
    for c in meta_causes {
        // hasBlockingErr: only these types keep the CEL rules from running.
        other |= matches!(
            c.reason.as_str(),
            "FieldValueRequired"
                | "FieldValueNotSupported"
                | "FieldValueTooLong"
                | "FieldValueTooMany"
                | "FieldValueTypeInvalid"
        );
        let repeated = c.field == "metadata.labels"
            || c.field == "metadata.annotations"
            || c.field.starts_with("metadata.ownerReferences");
        if update && repeated {
            out.push(c.clone());
            out.push(c.clone());
        }
        out.push(c);
    }
    if other && rt.schema.as_ref().is_some_and(|s| s.has_rules()) {
        out.push(StatusCause::field(
            "FieldValueInvalid",
            crate::apiextensions::NIL_PATH,
            crate::apiextensions::RULES_NOT_CHECKED,
        ));
    }
    out
}

/// NamespaceLifecycle admission: a namespaced object needs a namespace that exists and is not
/// being deleted.
fn namespace_check(st: &State, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<()> {
    if !rt.namespaced {
        return Ok(());
    }
    match st.store.get(namespaces_key(), "", ns) {
        None => Err(ApiError::not_found("", "namespaces", ns)),
        // Defect: only the namespace's existence is checked, not its lifecycle.
        Some(n) if n.deleting && !st.defective(ServerDefect::TerminatingNamespaceAcceptsContent) => {
            Err(terminating_forbidden(rt, ns, name))
        }
        Some(_) => Ok(()),
    }
}

/// Create: decoding, name and generateName, namespace checks, server-set metadata, validation,
/// store. [`prepare_create`] then [`create_prepared`], all under the caller's lock.
pub(crate) fn create(
    st: &mut State,
    rt: &ResourceType,
    ns: &str,
    obj: Value,
    w: &Write,
) -> ApiResult<Arc<StoredObject>> {
    let prepared = prepare_create(rt, ns, obj, w, &*st)?;
    create_prepared(st, rt, ns, prepared, w)
}

/// A create with everything done that needs only the request and the resource type.
#[derive(Clone)]
pub(crate) struct PreparedCreate {
    name: String,
    /// What the mutating webhooks warned about.
    warnings: Vec<String>,
    /// The object to store, or the validation error the create answers with once the
    /// namespace and existence checks (which come first) pass.
    object: ApiResult<PreparedObject>,
    /// The client sent a resourceVersion that is a number other than 0, which etcd3's `Create`
    /// refuses once everything else passed (a dry run never reaches it).
    sent_resource_version: bool,
}

#[derive(Clone)]
struct PreparedObject {
    encoded: Encoded,
    /// For dry runs: the resourceVersion the preview carries.
    preview_rv: u64,
}

/// The part of a create that needs no store: decoding, name and generateName, name and label
/// validation, server-set metadata, the kind's strategy, schema validation, and serialization.
/// Runs before the store's lock is taken; [`create_prepared`] finishes under it, with the
/// same outcome as if all of it ran under the lock (the store is only read there). Mutating
/// admission (`admission`) runs once managedFields are recorded, before the kind's validation.
pub(crate) fn prepare_create(
    rt: &ResourceType,
    ns: &str,
    mut obj: Value,
    w: &Write,
    admission: &dyn Mutation,
) -> ApiResult<PreparedCreate> {
    decode_object(rt, &mut obj)?;
    let meta = meta_mut(&mut obj)?;
    if rt.namespaced {
        match meta.get("namespace").and_then(Value::as_str) {
            Some(n) if !n.is_empty() && n != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {
                meta.insert("namespace".into(), Value::String(ns.to_string()));
            }
        }
    } else {
        meta.remove("namespace");
    }
    let mut name = meta.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
    let generate = meta.get("generateName").and_then(Value::as_str).unwrap_or_default().to_string();
    if name.is_empty() && !generate.is_empty() {
        name = apimachinery::names::generate_name(&generate);
        // Defect: the prefix becomes the name, so two generated names collide.
        if rt.defective(ServerDefect::GenerateNameWithoutSuffix) {
            name = generate.clone();
        }
        meta.insert("name".into(), Value::String(name.clone()));
    }
    // ValidateObjectMeta (the name, then the labels and the rest), reported with the kind's
    // own causes in one Invalid once the object is prepared.
    let mut causes = Vec::new();
    if !generate.is_empty() && rt.strategy.validates_generate_name() {
        causes.extend(rt.strategy.name_rule().prefix_errors(&generate).into_iter().map(|msg| {
            StatusCause::field(
                "FieldValueInvalid",
                "metadata.generateName",
                format!("Invalid value: {}: {msg}", quote(&generate)),
            )
        }));
    }
    if name.is_empty() {
        causes.push(StatusCause::field(
            "FieldValueRequired",
            "metadata.name",
            "Required value: name or generateName is required",
        ));
    } else {
        let invalid = |msg| {
            StatusCause::field("FieldValueInvalid", "metadata.name", format!("Invalid value: {}: {msg}", quote(&name)))
        };
        causes.extend(rt.strategy.name_rule().errors(&name).into_iter().map(invalid));
    }
    causes.extend(object_meta_causes(meta, rt.namespaced));
    let mut causes = custom_meta_causes(rt, causes, false);
    // The field manager sees the object as decoded and defaulted, before rest.BeforeCreate
    // clears what a client may not set and the strategy fills in what the server generates (a
    // Job's selector, a Service's cluster IPs): nobody owns those (create.go runs
    // FieldManager.UpdateNoErrors first).
    if let Some(fields) = w.fields {
        fields.record_create(rt, &mut obj, w);
    }
    let meta = meta_mut(&mut obj)?;
    let sent_resource_version = meta
        .get("resourceVersion")
        .and_then(Value::as_str)
        .and_then(crate::storage::parse_rv)
        .is_some_and(|rv| rv != 0);
    for f in ["resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"] {
        meta.remove(f);
    }
    meta.insert("uid".into(), Value::String(new_uid()));
    meta.insert("creationTimestamp".into(), Value::String(w.time()));
    if rt.tracks_generation {
        meta.insert("generation".into(), json!(1));
    } else {
        // A kind whose strategy sets no generation keeps what the client sent (rest.BeforeCreate
        // leaves it), once ValidateObjectMeta has checked it.
        causes.extend(super::meta::generation_causes(meta));
    }
    // Nodes keep the status the kubelet registers them with; other kinds start with none.
    if rt.status
        && !rt.strategy.keeps_status_on_create()
        && let Some(o) = obj.as_object_mut()
    {
        o.remove("status");
    }
    rt.strategy.prepare_for_create(rt, &mut obj, &w.time());
    super::go_types::go_shape(rt, &mut obj);
    let warnings = admission.mutate_create(rt, &mut obj, w)?;
    // The storage's BeginCreate comes before validation; its error replaces it (and, like
    // validation's, comes after the namespace and name checks).
    let begun = rt.strategy.begin_create(rt, &mut obj);
    if begun.is_ok() {
        super::go_types::go_shape(rt, &mut obj);
        causes.extend(rt.strategy.validate(rt, &obj));
    }
    let object = begun.and_then(|()| invalid_if_any(rt, &obj, &name, causes)).and_then(|()| {
        // A custom resource comes back from storage through its schema's defaulting, which
        // gives the status the strategy cleared its defaults (a Gateway's "Waiting for
        // controller" conditions) in the create's answer and every read.
        let mut obj = obj;
        if let Some(schema) =
            rt.schema.as_ref().filter(|_| rt.custom && !rt.defective(ServerDefect::CrdSchemaNotCanonicalized))
        {
            schema.apply_defaults(&mut obj);
        }
        let obj = to_storage(rt, obj)?;
        Ok(if w.dry_run {
            PreparedObject { preview_rv: value_rv(&obj), encoded: Encoded::exact(rt, &obj) }
        } else {
            PreparedObject { preview_rv: 0, encoded: Encoded::for_commit(rt, obj) }
        })
    });
    Ok(PreparedCreate { name, warnings, object, sent_resource_version })
}

/// The part of a create that reads and writes the store: the namespace must exist and not be
/// terminating, the name must be free; then the object prepared by [`prepare_create`] is stored.
pub(crate) fn create_prepared(
    st: &mut State,
    rt: &ResourceType,
    ns: &str,
    prepared: PreparedCreate,
    w: &Write,
) -> ApiResult<Arc<StoredObject>> {
    let name = &prepared.name;
    namespace_check(st, rt, ns, name)?;
    let stored_ns = if rt.namespaced { ns } else { "" };
    let exists = st.store.get(rt.storage_key(), stored_ns, name).is_some();
    // Defect: a taken name is overwritten instead of refused.
    if exists && !st.defective(ServerDefect::CreateReplacesExisting) {
        return Err(ApiError::already_exists(&rt.group, &rt.plural, name));
    }
    let PreparedObject { encoded, preview_rv } = prepared.object?;
    let req = admission::Request {
        rt,
        operation: admission::Operation::Create,
        subresource: "",
        namespace: ns,
        name,
        old: None,
        w,
    };
    let warnings = admission::validate(st, &req, || Some(encoded.value_without_resource_version()))?;
    st.warnings.extend(prepared.warnings);
    st.warnings.extend(warnings);
    if w.dry_run {
        return Ok(Arc::new(encoded.finish(preview_rv)));
    }
    if prepared.sent_resource_version {
        // apiserver v0.37.2 pkg/storage/etcd3/store.go `Create`: a plain error, 500.
        return Err(ApiError::internal_plain("resourceVersion should not be set on objects to be created"));
    }
    let kind = if exists { ChangeKind::Modified } else { ChangeKind::Added };
    let created = st.store.commit_encoded(rt, kind, encoded, w.ctx, w.now);
    rt.strategy.after_commit(st, &created, kind);
    Ok(created)
}

/// Which part of an object an update may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UpdateMode {
    /// The main resource: everything but `.status` (when there is a status subresource).
    Main,
    /// The `/status` subresource: only `.status`.
    Status,
}

/// Server-owned metadata an update cannot change.
const IMMUTABLE_META: &[&str] =
    &["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "namespace", "name"];

/// Whether two objects have the same top-level keys and values once `skip` is left out (a
/// value that is not an object counts as empty). Compared in place: an update used to copy
/// both objects for this.
fn same_except(a: &Value, b: &Value, skip: &[&str]) -> bool {
    let empty = Map::new();
    let a = a.as_object().unwrap_or(&empty);
    let b = b.as_object().unwrap_or(&empty);
    let kept = |m: &Map<String, Value>| m.keys().filter(|k| !skip.contains(&k.as_str())).count();
    kept(a) == kept(b)
        && a.iter().filter(|(k, _)| !skip.contains(&k.as_str())).all(|(k, v)| b.get(k).is_some_and(|w| same(v, w)))
}

/// Update (PUT, and the tail of PATCH): optimistic concurrency, status/spec split, finalizer
/// rules, validation, generation, and removal once the last finalizer of a deleting object goes.
pub(crate) fn update(
    st: &mut State,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    mut new: Value,
    mode: UpdateMode,
    w: &Write,
) -> ApiResult<Arc<StoredObject>> {
    // The handler decodes the body and checks it against the URL before the store looks at it.
    match mode {
        UpdateMode::Main => decode_object(rt, &mut new)?,
        UpdateMode::Status => super::decode::decode_status_write(rt, &mut new)?,
    }
    let meta = meta_mut(&mut new)?;
    // `EnsureObjectNamespaceMatchesRequestNamespace`, then `checkName` (apiserver v0.37.2
    // endpoints/handlers/update.go and patch.go): the namespace first, then a name that must be
    // there and be the URL's.
    if rt.namespaced && meta.get("namespace").and_then(Value::as_str).is_some_and(|n| !n.is_empty() && n != ns) {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    match meta.get("name").and_then(Value::as_str).unwrap_or_default() {
        "" => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({name} based on URL) was undeterminable: name must be provided"
            )));
        }
        n if n != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        _ => {}
    }
    let key = rt.storage_key();
    let stored_ns = if rt.namespaced { ns } else { "" };
    let old = st.store.get(key, stored_ns, name).ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
    // A PUT's uid is a storage precondition (`defaultUpdatedObjectInfo.Preconditions`, checked
    // by etcd3's GuaranteedUpdate before the update itself): another uid is a 409. A patch
    // carries none (its changed uid fails as immutable).
    if w.ctx.verb == Verb::Update
        && let Some(uid) = meta.get("uid").and_then(Value::as_str).filter(|u| !u.is_empty() && *u != old.uid)
    {
        let prefix = if rt.custom { format!("/{}", rt.group) } else { String::new() };
        let at = if stored_ns.is_empty() { name.to_string() } else { format!("{stored_ns}/{name}") };
        return Err(ApiError::conflict_because(
            &rt.group,
            &rt.plural,
            name,
            format!(
                "StorageError: invalid object, Code: 4, Key: /registry{prefix}/{}/{at}, ResourceVersion: 0, \
                 AdditionalErrorMsg: Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                rt.plural, old.uid
            ),
        ));
    }
    let sent = meta.get("resourceVersion").and_then(Value::as_str).filter(|s| !s.is_empty());
    // etcd3's GuaranteedUpdate parses it first: not a number is a plain 500.
    if let Some(rv) = sent {
        crate::storage::parse_rv_go(rv).map_err(ApiError::internal_plain)?;
    }
    // "0" is no resourceVersion: the generic store's update is unconditional when the kind allows
    // it (Store.Update, `newResourceVersion == 0`).
    let sent = sent.filter(|rv| parse_rv(rv) != Some(0));
    match sent {
        // Defect: any resourceVersion is accepted (last write wins).
        Some(rv)
            if parse_rv(rv) != Some(old.resource_version)
                && !st.defective(ServerDefect::StaleResourceVersionAccepted) =>
        {
            return Err(ApiError::conflict(&rt.group, &rt.plural, name));
        }
        Some(_) => {}
        None if !unconditional_update_allowed(rt) => {
            // The generic store builds this from the resource (`GroupKind{Group, Kind: resource}`)
            // and prints the uint64 zero with `%#v` (custom resources); kube-apiserver's own
            // kinds answered with a plain 0.
            let value = if rt.custom { "0x0" } else { "0" };
            return Err(ApiError::invalid(
                &rt.group,
                &rt.plural,
                name,
                vec![StatusCause::field(
                    "FieldValueInvalid",
                    "metadata.resourceVersion",
                    format!("Invalid value: {value}: must be specified for an update"),
                )],
            ));
        }
        None => {}
    }
    let old_value = old.shared_value();
    let mut merged = match mode {
        UpdateMode::Main => {
            let mut m = new;
            // Defect: the main resource takes the status the client sent.
            if rt.status && !st.defective(ServerDefect::MainWriteAppliesStatus) {
                match old_value.get("status") {
                    Some(s) => {
                        set_nested_field(&mut m, &["status"], s.clone());
                    }
                    None => {
                        if let Some(o) = m.as_object_mut() {
                            o.remove("status");
                        }
                    }
                }
            }
            m
        }
        UpdateMode::Status => {
            // The stored object with the request's status in place of its own (moved, not
            // copied: the rest of the request is dropped).
            let mut status = new.as_object_mut().and_then(|o| o.remove("status"));
            let mut m = match &*old_value {
                Value::Object(o) => Value::Object(
                    o.iter()
                        .filter_map(|(k, v)| match k.as_str() {
                            "status" => status.take().map(|s| (k.clone(), s)),
                            _ => Some((k.clone(), v.clone())),
                        })
                        .collect(),
                ),
                other => other.clone(),
            };
            if let Some(s) = status {
                set_nested_field(&mut m, &["status"], s);
            }
            if w.fields.is_none() {
                // Server-side apply to /status computed the new managedFields.
                match new["metadata"].get("managedFields") {
                    Some(mf) => {
                        set_nested_field(&mut m, &["metadata", "managedFields"], mf.clone());
                    }
                    None => {
                        if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
                            meta.remove("managedFields");
                        }
                    }
                }
            }
            m
        }
    };
    // rest.BeforeUpdate (apiserver v0.37.2 pkg/registry/rest/update.go) takes the stored
    // generation, creationTimestamp, a missing uid and a set deletionTimestamp or grace period
    // over what was sent; what remains a change of uid, deletionTimestamp or
    // deletionGracePeriodSeconds fails ValidateObjectMetaUpdate as immutable.
    let mut meta_update_causes = Vec::new();
    {
        let old_meta = &old_value["metadata"];
        let sent = &merged["metadata"];
        let mpath = super::field::Path::root("metadata");
        // A field sent (not null, not empty) that differs from the stored one.
        fn set(v: Option<&Value>) -> Option<&Value> {
            v.filter(|v| !v.is_null() && *v != "")
        }
        let mut changed = |f: &str| {
            if let Some(new) = set(sent.get(f))
                && set(old_meta.get(f)) != Some(new)
            {
                let was = old_meta.get(f).unwrap_or(&Value::Null);
                meta_update_causes.extend(super::field::immutable(&mpath.child(f), new, was));
            }
        };
        changed("uid");
        if old_meta.get("deletionTimestamp").is_none_or(Value::is_null) {
            changed("deletionTimestamp");
        }
        changed("deletionGracePeriodSeconds");
    }
    {
        let old_meta = &old_value["metadata"];
        let meta = meta_mut(&mut merged)?;
        for f in IMMUTABLE_META {
            match old_meta.get(*f) {
                Some(v) => meta.insert(f.to_string(), v.clone()),
                None => meta.remove(*f),
            };
        }
        meta.insert("resourceVersion".into(), Value::String(old.resource_version.to_string()));
    }
    if old.deleting {
        let new_finalizers = string_list(merged["metadata"].get("finalizers"));
        let added: Vec<&String> = new_finalizers.iter().filter(|f| !old.finalizers.contains(f)).collect();
        if !added.is_empty() {
            let cause = StatusCause::field(
                "FieldValueForbidden",
                "metadata.finalizers",
                format!(
                    "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"
                ),
            );
            // A custom resource's update checks its ObjectMeta twice (its strategy and the
            // generic store's ValidateObjectMetaUpdate), so kube-apiserver reports it twice.
            let causes = if rt.custom { vec![cause.clone(), cause] } else { vec![cause] };
            return Err(ApiError::invalid(&rt.group, &rt.kind, name, causes));
        }
    }
    let req = admission::Request {
        rt,
        operation: admission::Operation::Update,
        subresource: if mode == UpdateMode::Status { "status" } else { "" },
        namespace: ns,
        name,
        old: Some(&old_value),
        w,
    };
    let mutated = admission::mutate_write(st, &req, &mut merged)?;
    st.warnings.extend(mutated);
    if mode == UpdateMode::Main {
        rt.strategy.begin_update(rt, &mut merged, &old_value)?;
    }
    rt.strategy.prepare_for_update(rt, &mut merged, &old_value, mode);
    super::go_types::go_shape(rt, &mut merged);
    let mut causes = meta_update_causes;
    causes.extend(match merged["metadata"].as_object() {
        Some(meta) => {
            // ValidateObjectMeta of the new object: a generateName first, as on create.
            let generate = meta.get("generateName").and_then(Value::as_str).unwrap_or_default();
            let mut meta_causes: Vec<StatusCause> = Vec::new();
            if !generate.is_empty() && rt.strategy.validates_generate_name() {
                meta_causes.extend(rt.strategy.name_rule().prefix_errors(generate).into_iter().map(|msg| {
                    StatusCause::field(
                        "FieldValueInvalid",
                        "metadata.generateName",
                        format!("Invalid value: {}: {msg}", quote(generate)),
                    )
                }));
            }
            meta_causes.extend(object_meta_causes(meta, rt.namespaced));
            custom_meta_causes(rt, meta_causes, true)
        }
        None => Vec::new(),
    });
    causes.extend(match mode {
        // Defect: a custom resource's update is validated as a create, so nothing ratchets.
        UpdateMode::Main if rt.custom && st.defective(ServerDefect::NoValidationRatcheting) => {
            rt.strategy.validate(rt, &merged)
        }
        UpdateMode::Main => rt.strategy.validate_update(rt, &merged, &old_value),
        UpdateMode::Status => rt.strategy.validate_status_update(rt, &merged, &old_value),
    });
    // Ratcheted errors do not refuse the write; they come back as warnings (field.Error's text).
    let (warnings, causes): (Vec<StatusCause>, Vec<StatusCause>) =
        causes.into_iter().partition(|c| c.reason == crate::apiextensions::FieldCause::WARNING);
    invalid_if_any(rt, &merged, name, causes)?;
    st.warnings.extend(warnings.into_iter().map(|c| format!("{}: {}", c.field, c.message)));
    if mode == UpdateMode::Status {
        authorize_synthetic(st, rt, ns, name, &merged, &old_value, w)?;
    }
    // Validating admission comes after the strategy's validation, before the write.
    let validated = admission::validate(st, &req, || Some(merged.clone()))?;
    st.warnings.extend(validated);
    // Only a write of the main resource can move the generation: a status write keeps
    // everything but the status as stored.
    // Defect: the status counts as a change of the object, through either endpoint.
    let status_counts = st.defective(ServerDefect::StatusWriteBumpsGeneration);
    if rt.tracks_generation && (mode == UpdateMode::Main || status_counts) {
        let skip: &[&str] = if rt.status && !status_counts {
            &["metadata", "status", "apiVersion", "kind"]
        } else {
            &["metadata", "apiVersion", "kind"]
        };
        if !same_except(&merged, &old_value, skip) {
            let g = old_value["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
            set_nested_field(&mut merged, &["metadata", "generation"], json!(g));
        }
    }
    if let Some(fields) = w.fields {
        fields.record_update(rt, &old_value, &mut merged, w);
    }
    if same(&merged, &old_value) {
        // Nothing changed: the apiserver skips the write, so no new resourceVersion or event.
        return Ok(old);
    }
    let finalizers_left = has_finalizers(rt, &merged);
    let kind = if old.deleting && !finalizers_left && grace_elapsed(&old_value) {
        ChangeKind::Deleted
    } else {
        ChangeKind::Modified
    };
    w.persist(st, rt, kind, merged)
}

/// Whether anything still blocks removal: metadata finalizers, or what the kind adds
/// (a namespace's `spec.finalizers`).
pub(super) fn has_finalizers(rt: &ResourceType, v: &Value) -> bool {
    rt.strategy.finalizers_pending(v) || !string_list(v["metadata"].get("finalizers")).is_empty()
}

fn grace_elapsed(v: &Value) -> bool {
    v["metadata"]["deletionGracePeriodSeconds"].as_i64().unwrap_or(0) == 0
}

/// Kinds whose strategy's `AllowUnconditionalUpdate` is false (an update must name the
/// resourceVersion it read): custom resources (apiextensions-apiserver v0.37.2
/// pkg/registry/customresource/strategy.go) and these of kube-apiserver v1.37.2
/// (pkg/registry/<group>/<kind>/strategy.go), by group and resource.
pub(crate) fn unconditional_update_allowed(rt: &ResourceType) -> bool {
    const CONDITIONAL_ONLY: &[(&str, &str)] = &[
        ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
        ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
        ("internal.apiserver.k8s.io", "storageversions"),
        ("certificates.k8s.io", "clustertrustbundles"),
        ("certificates.k8s.io", "podcertificaterequests"),
        ("coordination.k8s.io", "leases"),
        ("coordination.k8s.io", "leasecandidates"),
        ("node.k8s.io", "runtimeclasses"),
        ("policy", "poddisruptionbudgets"),
        ("resource.k8s.io", "resourcepoolstatusrequests"),
        ("scheduling.k8s.io", "compositepodgroups"),
        ("scheduling.k8s.io", "podgroups"),
        ("scheduling.k8s.io", "workloads"),
        ("storage.k8s.io", "csidrivers"),
        ("storage.k8s.io", "csinodes"),
        ("storage.k8s.io", "csistoragecapacities"),
        ("storage.k8s.io", "volumeattachments"),
        ("storagemigration.k8s.io", "storageversionmigrations"),
    ];
    !rt.custom && !CONDITIONAL_ONLY.iter().any(|(g, r)| *g == rt.group && *r == rt.plural)
}
