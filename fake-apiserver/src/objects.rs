//! The write pipelines (create, update, delete) with the apiserver's metadata rules, and the
//! system controllers every real cluster runs (CRD establishment and cleanup, namespace
//! finalization), run under the store lock right after the write that needs them.

use crate::error::{ApiError, ApiResult, StatusCause};
use crate::names::{generate_name, validate_name};
use crate::registry::{DecodeCheck, ResourceType, StorageKey, crd_resource_types};
use crate::server::Inner;
use crate::store::{ChangeKind, Encoded, State, StoredObject, WriteContext, get_path};
use bytes::Bytes;
use jiff::Timestamp;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Finalizer the apiserver puts on CRDs so their instances are deleted first.
pub const CRD_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";
/// Finalizer on `spec.finalizers` of namespaces, cleared once their content is gone.
pub const NAMESPACE_FINALIZER: &str = "kubernetes";

/// Everything a write needs besides the object: who, when, and whether to persist.
pub struct Write<'a> {
    pub ctx: &'a Arc<WriteContext>,
    pub now: Timestamp,
    pub dry_run: bool,
}

impl Write<'_> {
    fn time(&self) -> String {
        crate::clock::format_time(self.now)
    }

    fn persist(
        &self,
        st: &mut State,
        rt: &ResourceType,
        kind: ChangeKind,
        value: Value,
        previous: Option<Arc<StoredObject>>,
    ) -> Arc<StoredObject> {
        if self.dry_run {
            return Arc::new(crate::store::preview(rt, &value));
        }
        let obj = st.commit(rt, kind, value, previous, self.ctx, self.now);
        if rt.is_crds() {
            sync_crd(st, &obj, kind);
        }
        obj
    }
}

/// The object as served through `rt`: the stored bytes, or (when it was written through
/// another version or an older schema) a copy with `apiVersion` rewritten and defaults applied.
pub fn render(rt: &ResourceType, obj: &StoredObject) -> Bytes {
    if served_as_stored(rt, obj) {
        return obj.bytes.clone();
    }
    let mut v = obj.value();
    crate::events::convert_for(rt, &mut v);
    put(&mut v, &["apiVersion"], Value::String(rt.api_version().to_string()));
    if let Some(schema) = &rt.schema {
        schema.apply_defaults(&mut v);
    }
    Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
}

/// Whether `rt` serves `obj` as its stored bytes (same version, same schema).
pub fn served_as_stored(rt: &ResourceType, obj: &StoredObject) -> bool {
    obj.api_version == rt.api_version() && obj.schema_epoch == rt.schema_epoch
}

/// Parses a request body (JSON or YAML) into an object.
pub fn parse_object(body: &[u8], yaml: bool) -> ApiResult<Value> {
    let v: Value = if yaml {
        let text = std::str::from_utf8(body).map_err(|e| ApiError::bad_request(format!("body is not UTF-8: {e}")))?;
        serde_saphyr::from_str(text)
            .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))?
    } else {
        serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}")))?
    };
    if !v.is_object() {
        return Err(ApiError::bad_request("the body of the request must be a JSON object"));
    }
    Ok(v)
}

fn meta_mut(obj: &mut Value) -> ApiResult<&mut Map<String, Value>> {
    let o =
        obj.as_object_mut().ok_or_else(|| ApiError::bad_request("the body of the request must be a JSON object"))?;
    let m = o.entry("metadata").or_insert_with(|| json!({}));
    if m.is_null() {
        *m = json!({});
    }
    m.as_object_mut().ok_or_else(|| ApiError::bad_request("metadata must be an object"))
}

fn str_field<'a>(obj: &'a Value, path: &str) -> &'a str {
    get_path(obj, path).and_then(Value::as_str).unwrap_or_default()
}

pub(crate) fn string_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Go's name for the JSON type of a value, as `encoding/json` words its unmarshal errors.
pub(crate) fn go_json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The decoder reads `apiVersion` and `kind` as strings before anything else: any other JSON
/// type (null aside) fails with "couldn't get version/kind; json parse error: ...".
fn check_type_meta_types(obj: &Value) -> Result<(), String> {
    for field in ["apiVersion", "kind"] {
        match obj.get(field) {
            None | Some(Value::Null) | Some(Value::String(_)) => {}
            Some(other) => {
                return Err(format!(
                    "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go struct field .{field} of type string",
                    go_json_type(other)
                ));
            }
        }
    }
    Ok(())
}

/// Checks that apiVersion and kind, when given, are strings that match the URL, and fills them
/// in when not.
pub fn check_type_meta(rt: &ResourceType, obj: &mut Value) -> ApiResult<()> {
    check_type_meta_types(obj).map_err(ApiError::bad_request)?;
    let o =
        obj.as_object_mut().ok_or_else(|| ApiError::bad_request("the body of the request must be a JSON object"))?;
    let api_version = rt.api_version();
    match o.get("apiVersion").and_then(Value::as_str) {
        Some(v) if !v.is_empty() && v != api_version => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({api_version})"
            )));
        }
        _ => {
            o.insert("apiVersion".into(), Value::String(api_version.to_string()));
        }
    }
    match o.get("kind").and_then(Value::as_str) {
        Some(k) if !k.is_empty() && k != rt.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                rt.kind
            )));
        }
        _ => {
            o.insert("kind".into(), Value::String(rt.kind.clone()));
        }
    }
    Ok(())
}

/// Runs the built-in decoder on a body whose type meta [`check_type_meta`] has checked and
/// filled in: a type error (`replicas: "three"`) is 400 BadRequest, before any storage check,
/// as kube-apiserver decodes the body first.
fn decode_body(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    match rt.decode_check {
        Some(check) => check(obj).map_err(|e| {
            ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: {e}",
                rt.kind, rt.version, rt.kind
            ))
        }),
        None => Ok(()),
    }
}

/// Decodes a request body for `rt` the way the create and update handlers do: type meta, the
/// shapes of ObjectMeta fields, then the built-in decoder (400 BadRequest on failure).
pub fn decode_object(rt: &ResourceType, obj: &mut Value) -> ApiResult<()> {
    check_type_meta(rt, obj)?;
    check_meta_shape(rt, obj)?;
    decode_body(rt, obj)
}

/// Checks that a patched object still decodes into its type. The patch handler answers a
/// failure with 422 Invalid: `NewInvalid(GroupKind{}, "", [field.Invalid("patch",
/// string(patchedJS), err)])`. `api_version` and `kind` fill in type meta the patch left
/// empty (the decoder defaults them from the target type).
pub fn check_patched(patched: &Value, api_version: &str, kind: &str, check: Option<DecodeCheck>) -> ApiResult<()> {
    let result = check_type_meta_types(patched).and_then(|()| {
        let Some(check) = check else { return Ok(()) };
        // Absent type meta decodes fine; null or empty is the target type's.
        let unset = |field: &str| patched.get(field).is_some_and(|v| v.is_null() || v == "");
        if !unset("apiVersion") && !unset("kind") {
            return check(patched);
        }
        let mut typed = patched.clone();
        if let Some(o) = typed.as_object_mut() {
            o.insert("apiVersion".into(), Value::String(api_version.into()));
            o.insert("kind".into(), Value::String(kind.into()));
        }
        check(&typed)
    });
    result.map_err(|e| {
        let json = serde_json::to_string(patched).unwrap_or_default();
        ApiError::invalid(
            "",
            "",
            "",
            vec![StatusCause::field(
                "FieldValueInvalid",
                "patch",
                format!("Invalid value: {}: {e}", crate::selector::go_quote(&json)),
            )],
        )
    })
}

/// The decoder of the `autoscaling/v1` Scale the `/scale` subresource reads and writes.
pub fn decode_scale(v: &Value) -> Result<(), String> {
    use serde::Deserialize;
    k8s_openapi::api::autoscaling::v1::Scale::deserialize(v).map(|_| ()).map_err(|e| e.to_string())
}

/// `ValidateLabels` (part of `ValidateObjectMeta`): every key a qualified name, every value a
/// label value, each failure a `FieldValueInvalid` cause on `metadata.labels`.
fn label_causes(labels: Option<&Value>) -> Vec<StatusCause> {
    let Some(Value::Object(labels)) = labels else { return Vec::new() };
    let mut causes = Vec::new();
    let invalid = |value: &str, msg: String| {
        StatusCause::field(
            "FieldValueInvalid",
            "metadata.labels",
            format!("Invalid value: {}: {msg}", crate::selector::go_quote(value)),
        )
    };
    for (key, value) in labels {
        if !crate::selector::is_valid_label_key(key) {
            causes.extend(crate::selector::label_key_errors(key).into_iter().map(|m| invalid(key, m)));
        }
        let value = value.as_str().unwrap_or_default();
        if !crate::selector::is_valid_label_value(value) {
            causes.extend(crate::selector::label_value_errors(value).into_iter().map(|m| invalid(value, m)));
        }
    }
    causes
}

/// `obj[path[0]][path[1]]... = new` without `IndexMut`'s panics, for values a client could
/// have shaped: missing or null values on the way become objects; when a value on the way is
/// something else, nothing is set and the answer is false.
pub(crate) fn put(obj: &mut Value, path: &[&str], new: Value) -> bool {
    let Some((last, parents)) = path.split_last() else { return false };
    let mut cur = obj;
    for seg in parents {
        if cur.is_null() {
            *cur = Value::Object(Map::new());
        }
        let Some(o) = cur.as_object_mut() else { return false };
        cur = o.entry(seg.to_string()).or_insert(Value::Null);
    }
    if cur.is_null() {
        *cur = Value::Object(Map::new());
    }
    match cur.as_object_mut() {
        Some(o) => {
            o.insert(last.to_string(), new);
            true
        }
        None => false,
    }
}

/// Checks the shapes of ObjectMeta fields the store relies on (a decode error in the apiserver).
fn check_meta_shape(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    let meta = &obj["metadata"];
    let bad = |field: &str, want: &str| {
        Err(ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: metadata.{field} must be {want}",
            rt.kind, rt.version, rt.kind
        )))
    };
    for field in ["labels", "annotations"] {
        match meta.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) if m.values().all(Value::is_string) => {}
            Some(_) => return bad(field, "a map of strings"),
        }
    }
    for field in ["finalizers"] {
        match meta.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => {}
            Some(_) => return bad(field, "a list of strings"),
        }
    }
    for field in ["name", "generateName", "namespace", "resourceVersion", "uid"] {
        match meta.get(field) {
            None | Some(Value::Null) | Some(Value::String(_)) => {}
            Some(_) => return bad(field, "a string"),
        }
    }
    Ok(())
}

/// Runs the kind's validation: the CRD schema (prune, default, validate) and the CRD checks.
/// (The built-in decoder runs earlier, in [`decode_object`].)
fn validate_content(rt: &ResourceType, obj: &mut Value, name: &str) -> ApiResult<()> {
    if let Some(schema) = &rt.schema {
        schema.prune(obj);
        schema.apply_defaults(obj);
        let causes: Vec<StatusCause> =
            schema.validate(obj).into_iter().map(|c| StatusCause::field(c.reason, c.field, c.message)).collect();
        if !causes.is_empty() {
            return Err(ApiError::invalid(&rt.group, &rt.kind, name, causes));
        }
    }
    if rt.is_crds() {
        crd_resource_types(obj).map_err(|causes| ApiError::invalid(&rt.group, &rt.kind, name, causes))?;
    }
    Ok(())
}

fn namespace_check(st: &State, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<()> {
    if !rt.namespaced {
        return Ok(());
    }
    match st.get(StorageKey::namespaces_ref(), "", ns) {
        None => Err(ApiError::not_found("", "namespaces", ns)),
        Some(n) if n.deleting => Err(crate::namespaces::terminating_forbidden(rt, ns, name)),
        Some(_) => Ok(()),
    }
}

/// Pod QoS class from requests and limits (as kubelet/apiserver compute it).
fn pod_qos(pod: &Value) -> &'static str {
    let containers: Vec<&Value> =
        ["containers", "initContainers"].iter().filter_map(|k| pod["spec"][k].as_array()).flatten().collect();
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for c in containers {
        let req = &c["resources"]["requests"];
        let lim = &c["resources"]["limits"];
        for res in ["cpu", "memory"] {
            let (r, l) = (req.get(res), lim.get(res));
            any |= r.is_some() || l.is_some();
            if l.is_none() || (r.is_some() && r != l) {
                guaranteed = false;
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// What the apiserver's per-kind strategies do on create.
fn prepare_for_create(rt: &ResourceType, obj: &mut Value) {
    // Nodes keep the status the kubelet registers them with; other kinds start with none.
    if rt.status
        && rt.plural != "nodes"
        && let Some(o) = obj.as_object_mut()
    {
        o.remove("status");
    }
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => {
            let qos = pod_qos(obj);
            put(obj, &["status"], json!({"phase": "Pending", "qosClass": qos}));
        }
        ("", "namespaces") => {
            let name = str_field(obj, "metadata.name").to_string();
            put(obj, &["metadata", "labels", "kubernetes.io/metadata.name"], Value::String(name));
            // The `kubernetes` finalizer is required on create, after any the client gave.
            let mut fins = string_list(get_path(obj, "spec.finalizers"));
            if !fins.iter().any(|f| f == NAMESPACE_FINALIZER) {
                fins.push(NAMESPACE_FINALIZER.into());
            }
            put(obj, &["spec", "finalizers"], json!(fins));
            put(obj, &["status"], json!({"phase": "Active"}));
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            add_finalizer(obj, CRD_CLEANUP_FINALIZER);
            if get_path(obj, "spec.conversion").is_none_or(Value::is_null) {
                put(obj, &["spec", "conversion"], json!({"strategy": "None"}));
            }
        }
        _ => {}
    }
}

fn add_finalizer(obj: &mut Value, f: &str) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    let list = meta.entry("finalizers").or_insert(Value::Null);
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(a) = list.as_array_mut()
        && !a.iter().any(|x| x == f)
    {
        a.push(Value::String(f.into()));
    }
}

/// A random (version 4) UUID: `xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx`.
fn new_uid() -> String {
    use rand::Rng;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let b: [u8; 16] = rand::rng().random();
    let mut h = [0u8; 32];
    for (i, x) in b.iter().enumerate() {
        h[2 * i] = HEX[usize::from(x >> 4)];
        h[2 * i + 1] = HEX[usize::from(x & 15)];
    }
    let mut out = [0u8; 36];
    out[0..8].copy_from_slice(&h[0..8]);
    out[8] = b'-';
    out[9..13].copy_from_slice(&h[8..12]);
    out[13] = b'-';
    out[14] = b'4';
    out[15..18].copy_from_slice(&h[13..16]);
    out[18] = b'-';
    out[19] = b"89ab"[usize::from(b[8] & 3)];
    out[20..23].copy_from_slice(&h[17..20]);
    out[23] = b'-';
    out[24..36].copy_from_slice(&h[20..32]);
    out.iter().map(|&c| char::from(c)).collect()
}

/// Create: decoding, name and generateName, namespace checks, server-set metadata, validation,
/// store. [`prepare_create`] then [`create_prepared`], all under the caller's lock.
pub fn create(st: &mut State, rt: &ResourceType, ns: &str, obj: Value, w: &Write) -> ApiResult<Arc<StoredObject>> {
    let prepared = prepare_create(rt, ns, obj, w)?;
    create_prepared(st, rt, ns, prepared, w)
}

/// A create with everything done that needs only the request and the resource type.
pub struct PreparedCreate {
    name: String,
    /// The object to store, or the validation error the create answers with once the
    /// namespace and existence checks (which come first) pass.
    object: ApiResult<PreparedObject>,
}

struct PreparedObject {
    encoded: Encoded,
    /// For dry runs: the resourceVersion the preview carries.
    preview_rv: u64,
}

/// The part of a create that needs no store: decoding, name and generateName, name and label
/// validation, server-set metadata, the kind's strategy, schema validation, and serialization.
/// Runs before the store's lock is taken; [`create_prepared`] finishes under it, with the
/// same outcome as if all of it ran under the lock (the store is only read there).
pub fn prepare_create(rt: &ResourceType, ns: &str, obj: Value, w: &Write) -> ApiResult<PreparedCreate> {
    prepare_create_owned(rt, ns, obj, w, Ownership::Update)
}

/// Who a write records in `managedFields`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ownership {
    /// The writer's `Update` entry gains the fields it changed.
    Update,
    /// The object already carries its `managedFields` (server-side apply computed them).
    Given,
}

fn writer<'a>(rt: &'a ResourceType, w: &'a Write) -> crate::managed::Writer<'a> {
    crate::managed::Writer {
        manager: w.ctx.field_manager.as_deref(),
        subresource: w.ctx.subresource.as_deref(),
        api_version: rt.api_version(),
        time: w.time(),
    }
}

/// [`prepare_create`], saying who owns the fields.
pub(crate) fn prepare_create_owned(
    rt: &ResourceType,
    ns: &str,
    mut obj: Value,
    w: &Write,
    ownership: Ownership,
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
        name = generate_name(&generate);
        meta.insert("name".into(), Value::String(name.clone()));
    }
    // ValidateObjectMeta: the name first, then the labels, all in one Invalid.
    let mut causes = Vec::new();
    if name.is_empty() {
        causes.push(StatusCause::field(
            "FieldValueRequired",
            "metadata.name",
            "Required value: name or generateName is required",
        ));
    } else if let Some(msg) = validate_name(&name, rt.name_rule) {
        causes.push(StatusCause::field("FieldValueInvalid", "metadata.name", msg));
    }
    causes.extend(label_causes(meta.get("labels")));
    if !causes.is_empty() {
        return Err(ApiError::invalid(&rt.group, &rt.kind, &name, causes));
    }
    for f in ["resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"] {
        meta.remove(f);
    }
    meta.insert("uid".into(), Value::String(new_uid()));
    meta.insert("creationTimestamp".into(), Value::String(w.time()));
    if rt.tracks_generation {
        meta.insert("generation".into(), json!(1));
    } else {
        meta.remove("generation");
    }
    prepare_for_create(rt, &mut obj);
    if ownership == Ownership::Update {
        crate::managed::track_create(rt, &mut obj, &writer(rt, w));
    }
    if crate::binding::is_pods(rt) {
        crate::binding::add_scheduling_gated_condition(&mut obj, &w.time());
    }
    let object = validate_content(rt, &mut obj, &name).map(|()| {
        if w.dry_run {
            PreparedObject { preview_rv: crate::store::value_rv(&obj), encoded: Encoded::exact(rt, &obj) }
        } else {
            PreparedObject { preview_rv: 0, encoded: Encoded::for_commit(rt, obj) }
        }
    });
    Ok(PreparedCreate { name, object })
}

/// The part of a create that reads and writes the store: the namespace must exist and not be
/// terminating, the name must be free; then the object prepared by [`prepare_create`] is stored.
pub fn create_prepared(
    st: &mut State,
    rt: &ResourceType,
    ns: &str,
    prepared: PreparedCreate,
    w: &Write,
) -> ApiResult<Arc<StoredObject>> {
    let name = &prepared.name;
    namespace_check(st, rt, ns, name)?;
    let stored_ns = if rt.namespaced { ns } else { "" };
    if st.get(rt.storage_key(), stored_ns, name).is_some() {
        return Err(ApiError::already_exists(&rt.group, &rt.plural, name));
    }
    let PreparedObject { encoded, preview_rv } = prepared.object?;
    if w.dry_run {
        return Ok(Arc::new(encoded.finish(preview_rv)));
    }
    let created = st.commit_encoded(rt, ChangeKind::Added, encoded, None, w.ctx, w.now);
    if rt.is_crds() {
        sync_crd(st, &created, ChangeKind::Added);
        return Ok(establish_crd(st, rt, created, w.now));
    }
    Ok(created)
}

/// Which part of an object an update may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateMode {
    /// The main resource: everything but `.status` (when there is a status subresource).
    Main,
    /// The `/status` subresource: only `.status`.
    Status,
}

/// Server-owned metadata an update cannot change.
const IMMUTABLE_META: &[&str] =
    &["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "namespace", "name"];

fn without(v: &Value, skip: &[&str]) -> Map<String, Value> {
    v.as_object()
        .map(|o| o.iter().filter(|(k, _)| !skip.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// Update (PUT, and the tail of PATCH): optimistic concurrency, status/spec split, finalizer
/// rules, validation, generation, and removal once the last finalizer of a deleting object goes.
pub fn update(
    st: &mut State,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    new: Value,
    mode: UpdateMode,
    w: &Write,
) -> ApiResult<Arc<StoredObject>> {
    update_owned(st, rt, ns, name, new, mode, w, Ownership::Update)
}

/// [`update`], saying who owns the fields.
#[allow(clippy::too_many_arguments)]
pub(crate) fn update_owned(
    st: &mut State,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    mut new: Value,
    mode: UpdateMode,
    w: &Write,
    ownership: Ownership,
) -> ApiResult<Arc<StoredObject>> {
    // The handler decodes the body and checks it against the URL before the store looks at it.
    decode_object(rt, &mut new)?;
    let meta = meta_mut(&mut new)?;
    match meta.get("name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() && n != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        _ => {}
    }
    if rt.namespaced && meta.get("namespace").and_then(Value::as_str).is_some_and(|n| !n.is_empty() && n != ns) {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let key = rt.storage_key();
    let stored_ns = if rt.namespaced { ns } else { "" };
    let old = st.get(key, stored_ns, name).ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
    match meta.get("resourceVersion").and_then(Value::as_str).filter(|s| !s.is_empty()) {
        Some(rv) if crate::store::parse_rv(rv) != Some(old.resource_version) => {
            return Err(ApiError::conflict(&rt.group, &rt.plural, name));
        }
        Some(_) => {}
        None if rt.custom => {
            // The generic store builds this from the resource (`GroupKind{Group, Kind: resource}`)
            // and prints the uint64 zero with `%#v`.
            return Err(ApiError::invalid(
                &rt.group,
                &rt.plural,
                name,
                vec![StatusCause::field(
                    "FieldValueInvalid",
                    "metadata.resourceVersion",
                    "Invalid value: 0x0: must be specified for an update",
                )],
            ));
        }
        None => {}
    }
    let old_value = old.value();
    let mut merged = match mode {
        UpdateMode::Main => {
            let mut m = new;
            if rt.status {
                match old_value.get("status") {
                    Some(s) => {
                        put(&mut m, &["status"], s.clone());
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
            let mut m = old_value.clone();
            if ownership == Ownership::Given {
                // Server-side apply to /status computed the new managedFields.
                match new["metadata"].get("managedFields") {
                    Some(mf) => {
                        put(&mut m, &["metadata", "managedFields"], mf.clone());
                    }
                    None => {
                        if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
                            meta.remove("managedFields");
                        }
                    }
                }
            }
            match new.get("status") {
                Some(s) => {
                    put(&mut m, &["status"], s.clone());
                }
                None => {
                    if let Some(o) = m.as_object_mut() {
                        o.remove("status");
                    }
                }
            }
            m
        }
    };
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
            return Err(ApiError::invalid(
                &rt.group,
                &rt.kind,
                name,
                vec![StatusCause::field(
                    "FieldValueForbidden",
                    "metadata.finalizers",
                    format!(
                        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"
                    ),
                )],
            ));
        }
    }
    if rt.is_namespaces() && mode == UpdateMode::Main {
        put(&mut merged, &["spec"], old_value["spec"].clone());
    }
    let causes = label_causes(merged["metadata"].get("labels"));
    if !causes.is_empty() {
        return Err(ApiError::invalid(&rt.group, &rt.kind, name, causes));
    }
    validate_content(rt, &mut merged, name)?;
    if rt.tracks_generation {
        let skip: &[&str] =
            if rt.status { &["metadata", "status", "apiVersion", "kind"] } else { &["metadata", "apiVersion", "kind"] };
        if without(&merged, skip) != without(&old_value, skip) {
            let g = old_value["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
            put(&mut merged, &["metadata", "generation"], json!(g));
        }
    }
    if ownership == Ownership::Update {
        crate::managed::track_update(rt, &old_value, &mut merged, &writer(rt, w));
    }
    if merged == old_value {
        // Nothing changed: the apiserver skips the write, so no new resourceVersion or event.
        return Ok(old);
    }
    let finalizers_left = has_finalizers(rt, &merged);
    let kind = if old.deleting && !finalizers_left && grace_elapsed(&old_value) {
        ChangeKind::Deleted
    } else {
        ChangeKind::Modified
    };
    Ok(w.persist(st, rt, kind, merged, Some(old)))
}

/// Whether anything still blocks removal: metadata finalizers, and for namespaces the
/// `spec.finalizers` the namespace controller clears.
fn has_finalizers(rt: &ResourceType, v: &Value) -> bool {
    let namespace_spec = rt.is_namespaces() && !string_list(v["spec"].get("finalizers")).is_empty();
    namespace_spec || !string_list(v["metadata"].get("finalizers")).is_empty()
}

fn grace_elapsed(v: &Value) -> bool {
    v["metadata"]["deletionGracePeriodSeconds"].as_i64().unwrap_or(0) == 0
}

/// Options of a DELETE, from its body and query.
#[derive(Debug, Default, Clone)]
pub struct DeleteOptions {
    pub grace_period_seconds: Option<i64>,
    pub precondition_uid: Option<String>,
    pub precondition_resource_version: Option<String>,
    pub propagation_policy: Option<String>,
    pub orphan_dependents: Option<bool>,
    pub dry_run: bool,
}

/// The answer to a DELETE of one object.
pub enum Deleted {
    /// Gone now; the last state (stamped with the deletion's resourceVersion).
    Now(Arc<StoredObject>),
    /// Marked for deletion; waits for finalizers or a grace period.
    Pending(Arc<StoredObject>),
}

/// Delete: preconditions, finalizers (deletionTimestamp then removal), pod graceful deletion.
pub fn delete(
    st: &mut State,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    opts: &DeleteOptions,
    w: &Write,
) -> ApiResult<Deleted> {
    let key = rt.storage_key();
    let stored_ns = if rt.namespaced { ns } else { "" };
    let old = st.get(key, stored_ns, name).ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
    // rest.BeforeDelete checks the preconditions first, with a Conflict built from the Kind.
    if let Some(uid) = opts.precondition_uid.as_deref().filter(|u| *u != old.uid) {
        return Err(ApiError::conflict_because(
            &rt.group,
            &rt.kind,
            name,
            format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                old.uid
            ),
        ));
    }
    let current_rv = old.resource_version.to_string();
    if let Some(rv) = opts.precondition_resource_version.as_deref().filter(|rv| *rv != current_rv) {
        return Err(ApiError::conflict_because(
            &rt.group,
            &rt.kind,
            name,
            format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({current_rv}). The object might have been modified"
            ),
        ));
    }
    let mut v = old.value();
    let grace = graceful_period(rt, &v, opts);
    // The propagation policy becomes an `orphan` or `foregroundDeletion` finalizer.
    let gc_finalizers = crate::gc::deletion_finalizers(rt, &old.finalizers, opts);
    if let Some(f) = &gc_finalizers {
        put(&mut v, &["metadata", "finalizers"], json!(f));
    }
    if old.deleting {
        // Deleting again can only shorten a grace period; a pod at grace 0 goes now.
        if grace == Some(0) && !has_finalizers(rt, &v) {
            return Ok(Deleted::Now(w.persist(st, rt, ChangeKind::Deleted, v, Some(old))));
        }
        // A shorter grace period moves deletionTimestamp and deletionGracePeriodSeconds
        // (kube-apiserver's BeforeDelete), so a kubelet's grace-0 delete of a pod held by a
        // finalizer lets the pod go as soon as the finalizer is removed.
        let current = v["metadata"]["deletionGracePeriodSeconds"].as_i64();
        let shorter = matches!((grace, current), (Some(g), Some(c)) if g < c);
        if let (true, Some(g)) = (shorter, grace) {
            let at = w.now.checked_add(jiff::SignedDuration::from_secs(g)).unwrap_or(w.now);
            put(&mut v, &["metadata", "deletionTimestamp"], Value::String(crate::clock::format_time(at)));
            put(&mut v, &["metadata", "deletionGracePeriodSeconds"], json!(g));
        }
        // A new policy on an object already being deleted swaps its cascading finalizer.
        if gc_finalizers.is_some() || shorter {
            return Ok(Deleted::Pending(w.persist(st, rt, ChangeKind::Modified, v, Some(old))));
        }
        return Ok(Deleted::Pending(old));
    }
    let pending = has_finalizers(rt, &v) || grace.is_some_and(|g| g > 0);
    if !pending {
        return Ok(Deleted::Now(w.persist(st, rt, ChangeKind::Deleted, v, Some(old))));
    }
    let g = grace.unwrap_or(0);
    let at = w.now.checked_add(jiff::SignedDuration::from_secs(g)).unwrap_or(w.now);
    put(&mut v, &["metadata", "deletionTimestamp"], Value::String(crate::clock::format_time(at)));
    put(&mut v, &["metadata", "deletionGracePeriodSeconds"], json!(g));
    if rt.tracks_generation {
        let gen_ = v["metadata"]["generation"].as_i64().unwrap_or(0);
        if gen_ > 0 {
            put(&mut v, &["metadata", "generation"], json!(gen_ + 1));
        }
    }
    if rt.is_namespaces() {
        put(&mut v, &["status", "phase"], json!("Terminating"));
    }
    if rt.is_crds() {
        set_condition(
            &mut v,
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
            &w.time(),
        );
    }
    Ok(Deleted::Pending(w.persist(st, rt, ChangeKind::Modified, v, Some(old))))
}

/// Pods bound to a node and not finished get a grace period for the kubelet; everything else
/// has none. `None` means "no grace period applies".
fn graceful_period(rt: &ResourceType, v: &Value, opts: &DeleteOptions) -> Option<i64> {
    if !(rt.group.is_empty() && rt.plural == "pods") {
        return None;
    }
    let phase = str_field(v, "status.phase");
    if str_field(v, "spec.nodeName").is_empty() || phase == "Succeeded" || phase == "Failed" {
        return Some(0);
    }
    let default = v["spec"]["terminationGracePeriodSeconds"].as_i64().unwrap_or(30);
    Some(opts.grace_period_seconds.unwrap_or(default).max(0))
}

pub(crate) fn set_condition(obj: &mut Value, type_: &str, status: &str, reason: &str, message: &str, now: &str) {
    if !get_path(obj, "status.conditions").is_some_and(Value::is_array) {
        put(obj, &["status", "conditions"], json!([]));
    }
    let Some(list) = obj.get_mut("status").and_then(|s| s.get_mut("conditions")).and_then(Value::as_array_mut) else {
        return;
    };
    let cond =
        json!({"type": type_, "status": status, "lastTransitionTime": now, "reason": reason, "message": message});
    match list.iter_mut().find(|c| c["type"] == type_) {
        Some(c) if c["status"] == status => {
            put(c, &["reason"], json!(reason));
            put(c, &["message"], json!(message));
        }
        Some(c) => *c = cond,
        None => list.push(cond),
    }
}

/// Keeps the registry in step with a CRD that was just written.
fn sync_crd(st: &mut State, crd: &StoredObject, kind: ChangeKind) {
    if kind == ChangeKind::Deleted {
        st.registry.unregister_crd(&crd.name);
        // Instances are gone by now (the cleanup finalizer waited for them).
        let v = crd.value();
        st.remove_collection(&StorageKey::new(str_field(&v, "spec.group"), str_field(&v, "spec.names.plural")));
        return;
    }
    let v = crd.value();
    let conflict = st.registry.names_conflict(
        &crd.name,
        str_field(&v, "spec.group"),
        str_field(&v, "spec.names.plural"),
        str_field(&v, "spec.names.kind"),
    );
    match crd_resource_types(&v) {
        // A CRD whose names clash with another is stored but not served (NamesAccepted=False).
        Ok(types) if conflict.is_none() => st.registry.register_crd(&crd.name, types),
        _ => st.registry.unregister_crd(&crd.name),
    }
}

const SYSTEM_CRD: &str = "kube-apiserver/apiextensions-controllers";

pub(crate) fn system_ctx(user_agent: &str, verb: &str, subresource: Option<&str>) -> Arc<WriteContext> {
    Arc::new(WriteContext {
        verb: verb.into(),
        subresource: subresource.map(str::to_string),
        user_agent: user_agent.into(),
        field_manager: None,
    })
}

/// The apiextensions controllers' follow-up to a CRD write: accepted names, stored versions,
/// NamesAccepted and Established conditions.
fn establish_crd(st: &mut State, rt: &ResourceType, crd: Arc<StoredObject>, now: Timestamp) -> Arc<StoredObject> {
    let mut v = crd.value();
    let t = crate::clock::format_time(now);
    let names = v["spec"]["names"].clone();
    put(&mut v, &["status", "acceptedNames"], names);
    let storage: Vec<Value> = v["spec"]["versions"]
        .as_array()
        .map(|a| a.iter().filter(|x| x["storage"] == true).map(|x| x["name"].clone()).collect())
        .unwrap_or_default();
    let mut stored = v["status"]["storedVersions"].as_array().cloned().unwrap_or_default();
    for s in storage {
        if !stored.contains(&s) {
            stored.push(s);
        }
    }
    put(&mut v, &["status", "storedVersions"], Value::Array(stored));
    if st.registry.serves_crd(&crd.name) {
        set_condition(&mut v, "NamesAccepted", "True", "NoConflicts", "no conflicts found", &t);
        set_condition(
            &mut v,
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
            &t,
        );
    } else {
        let why = st
            .registry
            .names_conflict(
                &crd.name,
                str_field(&v, "spec.group"),
                str_field(&v, "spec.names.plural"),
                str_field(&v, "spec.names.kind"),
            )
            .unwrap_or_default();
        let reason = if why.contains(str_field(&v, "spec.names.kind")) { "KindConflict" } else { "PluralConflict" };
        put(&mut v, &["status", "acceptedNames"], json!({"plural": "", "kind": ""}));
        set_condition(&mut v, "NamesAccepted", "False", reason, &why, &t);
        set_condition(&mut v, "Established", "False", "NotAccepted", "not all names are accepted", &t);
    }
    if v == crd.value() {
        return crd;
    }
    let ctx = system_ctx(SYSTEM_CRD, "update", Some("status"));
    let obj = st.commit(rt, ChangeKind::Modified, v, Some(crd), &ctx, now);
    sync_crd(st, &obj, ChangeKind::Modified);
    obj
}

/// Runs the system controllers that react to a write: CRD establishment after spec changes,
/// CRD instance cleanup, and namespace content removal and finalization. Loops until nothing
/// more happens, so a write's consequences are all in the store when its response is sent.
pub fn reconcile_system(st: &mut State, now: Timestamp) {
    // The CRD and namespace controllers act only on namespaces and CRDs being deleted, the
    // garbage collector only on what writes queued for it.
    if !st.system_deletions() && !st.gc.has_work() {
        return;
    }
    for _ in 0..64 {
        let mut progressed = crate::gc::run(st, now);
        progressed |= reconcile_crds(st, now);
        progressed |= crate::namespaces::reconcile(st, now);
        if !progressed {
            return;
        }
    }
}

pub(crate) fn delete_all(
    st: &mut State,
    rt: &ResourceType,
    ns: Option<&str>,
    ctx: &Arc<WriteContext>,
    now: Timestamp,
) -> (bool, usize) {
    let key = rt.storage_key();
    let items: Vec<Arc<StoredObject>> = st
        .collections
        .get(key)
        .map(|c| c.values().filter(|o| ns.is_none_or(|n| o.namespace == n)).cloned().collect())
        .unwrap_or_default();
    let remaining = items.len();
    let mut progressed = false;
    let w = Write { ctx, now, dry_run: false };
    // Both controllers delete with an explicit Background policy, so no kind's default
    // (Jobs orphan theirs) leaves dependents behind.
    let opts = DeleteOptions { propagation_policy: Some("Background".into()), ..Default::default() };
    for o in items {
        if o.deleting {
            continue;
        }
        if delete(st, rt, &o.namespace, &o.name, &opts, &w).is_ok() {
            progressed = true;
        }
    }
    (progressed, remaining)
}

fn reconcile_crds(st: &mut State, now: Timestamp) -> bool {
    let Some(crd_rt) = st.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions") else { return false };
    let deleting: Vec<Arc<StoredObject>> = st
        .collections
        .get(StorageKey::crds_ref())
        .map(|c| {
            c.values()
                .filter(|o| o.deleting && o.finalizers.iter().any(|f| f == CRD_CLEANUP_FINALIZER))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let mut progressed = false;
    let ctx = system_ctx(SYSTEM_CRD, "delete", None);
    for crd in deleting {
        let v = crd.value();
        let key = StorageKey::new(str_field(&v, "spec.group"), str_field(&v, "spec.names.plural"));
        let (p, remaining) = match st.registry.preferred(&key) {
            Some(rt) => delete_all(st, &rt, None, &ctx, now),
            None => (false, 0),
        };
        progressed |= p;
        let left = st.collections.get(&key).map_or(0, |c| c.len());
        if remaining == 0 || left == 0 {
            let mut nv = v.clone();
            let fins: Vec<Value> = string_list(v["metadata"].get("finalizers"))
                .into_iter()
                .filter(|f| f != CRD_CLEANUP_FINALIZER)
                .map(Value::String)
                .collect();
            put(&mut nv, &["metadata", "finalizers"], Value::Array(fins.clone()));
            let kind = if fins.is_empty() { ChangeKind::Deleted } else { ChangeKind::Modified };
            let obj = st.commit(&crd_rt, kind, nv, Some(crd.clone()), &system_ctx(SYSTEM_CRD, "update", None), now);
            sync_crd(st, &obj, kind);
            progressed = true;
        }
    }
    progressed
}

/// Creates one of the namespaces every cluster starts with.
pub(crate) fn bootstrap_namespace(inner: &Inner, name: &str) {
    let now = inner.clock.now();
    inner.write(|st| {
        let Some(rt) = st.registry.get("", "v1", "namespaces") else { return };
        let ctx = system_ctx("kube-apiserver/bootstrap", "create", None);
        let w = Write { ctx: &ctx, now, dry_run: false };
        let _ = create(st, &rt, "", json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}), &w);
    });
}

/// Builds the `autoscaling/v1` Scale of an object.
pub fn scale_of(rt: &ResourceType, obj: &Value) -> ApiResult<Value> {
    let spec = rt.scale.as_ref().ok_or_else(ApiError::path_not_found)?;
    let replicas = |path: &str| get_path(obj, path).and_then(Value::as_i64).unwrap_or(0);
    let selector = match &spec.label_selector_path {
        Some(p) if spec.selector_is_object => get_path(obj, p).map(label_selector_string).unwrap_or_default(),
        Some(p) => get_path(obj, p).and_then(Value::as_str).unwrap_or_default().to_string(),
        None => String::new(),
    };
    let m = &obj["metadata"];
    let mut meta = json!({"name": m["name"], "uid": m["uid"], "resourceVersion": m["resourceVersion"], "creationTimestamp": m["creationTimestamp"]});
    if rt.namespaced {
        meta["namespace"] = m["namespace"].clone();
    }
    let mut status = json!({"replicas": replicas(&spec.status_replicas_path)});
    if !selector.is_empty() {
        status["selector"] = json!(selector);
    }
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": replicas(&spec.spec_replicas_path)},
        "status": status,
    }))
}

/// Writes the replicas of a (patched or replaced) Scale back into the object.
pub fn apply_scale(rt: &ResourceType, obj: &mut Value, scale: &Value) -> ApiResult<()> {
    let spec = rt.scale.as_ref().ok_or_else(ApiError::path_not_found)?;
    let name = str_field(obj, "metadata.name").to_string();
    let invalid = |msg: String| {
        ApiError::invalid(
            "autoscaling",
            "Scale",
            &name,
            vec![StatusCause::field("FieldValueInvalid", "spec.replicas", msg)],
        )
    };
    let replicas = match scale["spec"].get("replicas") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_i64().ok_or_else(|| invalid(format!("Invalid value: {v}: must be an integer")))?,
    };
    if replicas < 0 {
        return Err(invalid(format!("Invalid value: {replicas}: must be greater than or equal to 0")));
    }
    if let Some(rv) = scale["metadata"]["resourceVersion"].as_str().filter(|s| !s.is_empty()) {
        put(obj, &["metadata", "resourceVersion"], json!(rv));
    }
    if !crate::store::set_path(obj, &spec.spec_replicas_path, json!(replicas)) {
        return Err(invalid(format!("Invalid value: {replicas}: cannot set {}", spec.spec_replicas_path)));
    }
    Ok(())
}

/// `metav1.LabelSelector` as the string form Scale's `status.selector` uses.
fn label_selector_string(sel: &Value) -> String {
    let match_labels: std::collections::BTreeMap<String, String> = sel["matchLabels"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect())
        .unwrap_or_default();
    let exprs: Vec<(String, String, Vec<String>)> = sel["matchExpressions"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        str_field(e, "key").to_string(),
                        str_field(e, "operator").to_string(),
                        string_list(e.get("values")),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    crate::selector::LabelSelector::from_parts(&match_labels, &exprs).map(|s| s.to_string()).unwrap_or_default()
}
