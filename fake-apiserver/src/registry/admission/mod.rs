//! Admission webhooks: the stored `MutatingWebhookConfiguration`s and
//! `ValidatingWebhookConfiguration`s called over HTTPS as kube-apiserver calls them
//! (`webhook`: which requests each is called for; `review`: the `AdmissionReview` both ways;
//! `client`: the call), and the in-process webhooks of the reference controllers, given as Rust
//! code instead of an HTTPS endpoint
//! (`apiserver/pkg/admission/plugin/webhook/{mutating,validating}`).
//!
//! Mutating admission runs after managedFields are computed and before the kind's validation,
//! as kube-apiserver runs it after the field manager and before `BeforeCreate`/`BeforeUpdate`:
//! on creates (in-process and configured webhooks), updates of the main resource and of
//! subresources (configured webhooks, whose rules name `<resource>/<subresource>`), and
//! deletes (configured webhooks, which may not patch). Webhooks run one after the other, in
//! configuration-name order; a webhook with `reinvocationPolicy: IfNeeded` runs once more
//! when a later one changed the object. Validating admission runs after the kind's
//! validation, before the write, every matching webhook at once; the first denial in webhook
//! order is the answer.
//!
//! A create's mutating webhooks are called outside the server's lock; everything else is
//! called under its write lock, so a webhook that writes to or lists from this server while
//! it answers waits for its `timeoutSeconds` (controller-runtime's webhooks read their
//! informer caches, which do not). Not modelled: re-running a custom resource's pruning and
//! defaulting on a patched object, `matchPolicy: Equivalent` (every kind is served in one
//! version), the `authorizer` and `params` variables of `matchConditions`, audit annotations.
//!
//! A component that ships a validating webhook in process (Kueue's job webhooks, say)
//! registers its check with [`ApiServer::add_validating_webhook`]; it runs on every create and
//! update of the main resource it names, before the configured webhooks, and answers a denial as
//! kube-apiserver does: 403 with the message `admission webhook "<name>" denied the request:
//! <message>`. Its mutating counterpart ([`ApiServer::add_mutating_webhook`]) runs on creates.
//!
//! [`ApiServer::add_validating_webhook`]: crate::ApiServer::add_validating_webhook
//! [`ApiServer::add_mutating_webhook`]: crate::ApiServer::add_mutating_webhook

mod client;
mod policy;
mod review;
mod webhook;

pub(crate) use webhook::Operation;

use crate::error::{ApiError, ApiResult};
use crate::registry::store::Write;
use crate::registry::{ResourceType, State};
use serde_json::Value;

/// A validating webhook's check; see the module docs.
pub trait ValidatingWebhook: Send + Sync {
    /// The webhook's name (`webhooks[].name`, e.g. `vrayjob.kb.io`), quoted in denials.
    fn name(&self) -> &str;
    /// Whether its rules match the resource (`group`, plural `resource`).
    fn handles(&self, group: &str, resource: &str) -> bool;
    /// Checks a create of `new` (`old` is `None`) or an update from `old` to `new` (whole
    /// objects, as an `AdmissionReview` carries them); `Err(message)` denies it.
    fn validate(&self, old: Option<&Value>, new: &Value) -> Result<(), String>;
}

/// Read access to the cluster for a mutating webhook.
pub trait ClusterReader {
    /// The object `kind` of `api_version` named `name` (in `namespace`, ignored for a
    /// cluster-scoped kind) as the API serves it, if it exists.
    fn get(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Option<Value>;
}

/// A mutating (defaulting) webhook; see the module docs.
pub trait MutatingWebhook: Send + Sync {
    /// The webhook's name (`webhooks[].name`, e.g. `mrayjob.kb.io`), quoted in refusals.
    fn name(&self) -> &str;
    /// Whether its rules match the resource (`group`, plural `resource`).
    fn handles(&self, group: &str, resource: &str) -> bool;
    /// Defaults `obj`, a create's whole object (namespace set), in place; `Err(message)`
    /// refuses the create.
    fn default(&self, obj: &mut Value, cluster: &dyn ClusterReader) -> Result<(), String>;
}

/// The registered webhooks, each kind in registration order.
#[derive(Default, Clone)]
pub(crate) struct Webhooks {
    /// Validating webhooks.
    pub validating: Vec<std::sync::Arc<dyn ValidatingWebhook>>,
    /// Mutating webhooks.
    pub mutating: Vec<std::sync::Arc<dyn MutatingWebhook>>,
}

/// Where a create's mutating admission reads the webhooks and the cluster from: the state
/// itself when the caller holds the lock, or the lock, taken for reading only while the
/// webhooks to call are looked up (the HTTPS calls happen outside it).
pub(crate) trait Mutation {
    /// Runs every mutating webhook that handles `rt` on the create of `obj`; the webhooks'
    /// warnings come back.
    fn mutate_create(&self, rt: &ResourceType, obj: &mut Value, w: &Write) -> ApiResult<Vec<String>>;
}

impl ClusterReader for State {
    fn get(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let rt = self.registry.by_kind(group, version, kind)?;
        let stored_ns = if rt.namespaced { namespace } else { "" };
        let obj = self.store.get(rt.storage_key(), stored_ns, name)?;
        Some(super::store::served_value(&rt, &obj))
    }
}

/// The configured webhooks a request may call, and the labels of its namespace, read from the
/// store so the calls can happen without it.
struct Planned {
    hooks: Vec<webhook::Hook>,
    namespace_labels: Option<Value>,
}

impl Planned {
    fn read(st: &State, mutating: bool, namespace: &str) -> Self {
        let hooks = webhook::configured(st, mutating);
        let namespace_labels =
            if hooks.is_empty() || namespace.is_empty() { None } else { webhook::namespace_labels(st, namespace) };
        Planned { hooks, namespace_labels }
    }
}

fn in_process_mutations(st: &State, rt: &ResourceType, obj: &mut Value) -> ApiResult<()> {
    for hook in st.webhooks.mutating.iter().filter(|h| h.handles(&rt.group, &rt.plural)) {
        hook.default(obj, st).map_err(|m| ApiError::webhook_denied(hook.name(), &m))?;
    }
    Ok(())
}

/// The attributes of a write of `rt` as admission sees them.
pub(crate) struct Request<'a> {
    pub rt: &'a ResourceType,
    pub operation: Operation,
    /// `""` or the subresource (`status`).
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub old: Option<&'a Value>,
    pub w: &'a Write<'a>,
}

impl<'a> Request<'a> {
    fn attributes(&self) -> webhook::Attributes<'a> {
        let rt = self.rt;
        webhook::Attributes {
            operation: self.operation,
            group: &rt.group,
            version: &rt.version,
            kind: &rt.kind,
            resource: &rt.plural,
            subresource: self.subresource,
            namespace: if rt.plural == "namespaces" && rt.group.is_empty() { self.name } else { self.namespace },
            name: self.name,
            old: self.old,
            dry_run: self.w.dry_run,
            user: self.w.ctx.user.as_deref(),
            field_manager: self.w.ctx.field_manager.as_deref(),
        }
    }
}

fn create_request<'a>(rt: &'a ResourceType, obj: &'a Value, w: &'a Write<'a>) -> Request<'a> {
    let meta = &obj["metadata"];
    Request {
        rt,
        operation: Operation::Create,
        subresource: "",
        namespace: meta["namespace"].as_str().unwrap_or(""),
        name: meta["name"].as_str().unwrap_or(""),
        old: None,
        w,
    }
}

impl Mutation for State {
    fn mutate_create(&self, rt: &ResourceType, obj: &mut Value, w: &Write) -> ApiResult<Vec<String>> {
        in_process_mutations(self, rt, obj)?;
        let ns = obj["metadata"]["namespace"].as_str().unwrap_or("").to_string();
        let planned = Planned::read(self, true, &ns);
        let snapshot = obj.clone();
        mutate(&planned, &create_request(rt, &snapshot, w), obj)
    }
}

impl Mutation for parking_lot::RwLock<State> {
    fn mutate_create(&self, rt: &ResourceType, obj: &mut Value, w: &Write) -> ApiResult<Vec<String>> {
        let ns = obj["metadata"]["namespace"].as_str().unwrap_or("").to_string();
        let planned = {
            let st = self.read();
            in_process_mutations(&st, rt, obj)?;
            Planned::read(&st, true, &ns)
        };
        let snapshot = obj.clone();
        mutate(&planned, &create_request(rt, &snapshot, w), obj)
    }
}

/// Mutating admission of an update (or a delete, whose object is `None`) under the lock.
pub(crate) fn mutate_write(st: &State, req: &Request, obj: &mut Value) -> ApiResult<Vec<String>> {
    let planned = Planned::read(st, true, req.namespace);
    if planned.hooks.is_empty() {
        return Ok(Vec::new());
    }
    mutate(&planned, req, obj)
}

/// Validating admission of a create, an update or a delete (`new` gives the object to store,
/// or `None` for a delete, only when some webhook may be called): the in-process webhooks
/// (creates and updates of the main resource), then the configured ones; their warnings come
/// back.
pub(crate) fn validate(st: &State, req: &Request, new: impl FnOnce() -> Option<Value>) -> ApiResult<Vec<String>> {
    let rt = req.rt;
    let in_process: Vec<_> = match req.subresource.is_empty() && req.operation != Operation::Delete {
        true => st.webhooks.validating.iter().filter(|h| h.handles(&rt.group, &rt.plural)).collect(),
        false => Vec::new(),
    };
    let planned = Planned::read(st, false, req.namespace);
    let policies = policy::any(st);
    if in_process.is_empty() && planned.hooks.is_empty() && !policies {
        return Ok(Vec::new());
    }
    let new = new();
    if let Some(new) = &new {
        for hook in in_process {
            hook.validate(req.old, new).map_err(|m| ApiError::webhook_denied(hook.name(), &m))?;
        }
    }
    let mut warnings = Vec::new();
    // The ValidatingAdmissionPolicy plugin comes before the validating webhooks.
    if policies {
        let outcome = policy::enforce(st, &req.attributes(), new.as_ref());
        warnings.extend(outcome.warnings);
        if let Some(denied) = outcome.denied {
            return Err(denied);
        }
    }
    if planned.hooks.is_empty() {
        return Ok(warnings);
    }
    let attrs = req.attributes();
    let labels = planned.namespace_labels.as_ref();
    let new = new.as_ref();
    // Every matching webhook at once, as kube-apiserver calls them; the first error in
    // webhook order answers.
    let results: Vec<ApiResult<Option<review::Answer>>> = std::thread::scope(|scope| {
        let calls: Vec<_> = planned.hooks.iter().map(|h| scope.spawn(|| call(h, false, &attrs, labels, new))).collect();
        calls
            .into_iter()
            .map(|c| c.join().unwrap_or_else(|_| Err(ApiError::internal("webhook call panicked"))))
            .collect()
    });
    for result in results {
        if let Some(answer) = result? {
            warnings.extend(answer.warnings);
        }
    }
    Ok(warnings)
}

/// The configured mutating webhooks, in order, then those of them with
/// `reinvocationPolicy: IfNeeded` that a later webhook's change calls for once more.
fn mutate(planned: &Planned, req: &Request, obj: &mut Value) -> ApiResult<Vec<String>> {
    if planned.hooks.is_empty() {
        return Ok(Vec::new());
    }
    let attrs = req.attributes();
    let labels = planned.namespace_labels.as_ref();
    let has_object = req.operation != Operation::Delete;
    let mut warnings = Vec::new();
    let mut reinvocable: Vec<usize> = Vec::new();
    let mut again = vec![false; planned.hooks.len()];
    for (i, hook) in planned.hooks.iter().enumerate() {
        let Some(answer) = call(hook, true, &attrs, labels, has_object.then_some(&*obj))? else { continue };
        warnings.extend(answer.warnings);
        if patch(hook, &answer.patch, has_object.then_some(&mut *obj))? {
            for j in &reinvocable {
                again[*j] = true;
            }
        }
        if hook.reinvoke_if_needed {
            reinvocable.push(i);
        }
    }
    for (i, hook) in planned.hooks.iter().enumerate() {
        if !again[i] {
            continue;
        }
        if let Some(answer) = call(hook, true, &attrs, labels, has_object.then_some(&*obj))? {
            warnings.extend(answer.warnings);
            patch(hook, &answer.patch, has_object.then_some(&mut *obj))?;
        }
    }
    Ok(warnings)
}

/// Applies a mutating webhook's JSON patch; whether it changed the object.
fn patch(hook: &webhook::Hook, ops: &[Value], obj: Option<&mut Value>) -> ApiResult<bool> {
    if ops.is_empty() {
        return Ok(false);
    }
    let Some(obj) = obj else {
        return Err(ApiError::internal(format!(
            "admission webhook \"{}\" attempted to modify the object, which is not supported for this operation",
            hook.name
        )));
    };
    let ops: json_patch::Patch = serde_json::from_value(Value::Array(ops.to_vec())).map_err(ApiError::internal)?;
    let mut patched = obj.clone();
    crate::fieldmanager::go_json_patch::apply(&mut patched, &ops).map_err(ApiError::internal)?;
    let changed = patched != *obj;
    *obj = patched;
    Ok(changed)
}

/// Calls `hook` about `object` if it applies: `Ok(None)` when it does not (or failed and
/// fails open), the answer when it allowed the request, the error the client gets otherwise.
fn call(
    hook: &webhook::Hook,
    mutating: bool,
    a: &webhook::Attributes,
    namespace_labels: Option<&Value>,
    object: Option<&Value>,
) -> ApiResult<Option<review::Answer>> {
    if !hook.rules_match(a) {
        return Ok(None);
    }
    // A namespace's own create or update is matched on the labels it is written with.
    let labels = if a.resource == "namespaces"
        && a.group.is_empty()
        && a.subresource.is_empty()
        && a.operation != Operation::Delete
    {
        object.and_then(|o| o["metadata"].get("labels"))
    } else {
        namespace_labels
    };
    if !hook.namespace_matches(a, labels) || !hook.object_matches(object, a.old) {
        return Ok(None);
    }
    let uid = crate::registry::meta::new_uid();
    let request = review::request(&uid, a, object);
    let null = Value::Null;
    let vars = [("object", object.unwrap_or(&null)), ("oldObject", a.old.unwrap_or(&null)), ("request", &request)];
    match hook.conditions_match(&vars) {
        Ok(true) => {}
        Ok(false) => return Ok(None),
        Err(e) => return Err(ApiError::forbidden(a.group, a.resource, a.name, e)),
    }
    if a.dry_run && !hook.dry_run_safe {
        return Err(ApiError::bad_request(format!("admission webhook \"{}\" does not support dry run", hook.name)));
    }
    let fail = |why: String| {
        if hook.fail_closed {
            Err(review::call_failed(&hook.name, &why))
        } else {
            tracing::warn!(webhook = %hook.name, "failed calling webhook, failing open: {why}");
            Ok(None)
        }
    };
    let target = match &hook.target {
        Ok(t) => t,
        Err(e) => return fail(format!("failed to call webhook: {e}")),
    };
    let body = serde_json::json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request});
    let body = serde_json::to_vec(&body).map_err(ApiError::internal)?;
    let answer = match client::post(target, &hook.ca_bundle, &body, hook.timeout) {
        Ok(a) => a,
        Err(e) => return fail(format!("failed to call webhook: Post \"{}\": {e}", target.url)),
    };
    let answer = match review::verify(&uid, mutating, &answer) {
        Ok(a) => a,
        Err(e) => return fail(format!("received invalid webhook response: {e}")),
    };
    if !answer.allowed {
        return Err(review::denial(&hook.name, &answer.result));
    }
    Ok(Some(answer))
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.mutating.iter().map(|w| w.name()).chain(self.validating.iter().map(|w| w.name())))
            .finish()
    }
}
