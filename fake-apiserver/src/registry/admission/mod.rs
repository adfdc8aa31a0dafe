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
//! Webhooks are called outside the server's lock, so one may read from and write to this
//! server while it answers: a create's mutating webhooks before the lock is taken, and every
//! other call of a client's create, update, patch or delete through the deferral below (the
//! write runs under the lock until it needs a call, the call is made without it, the write runs
//! again). The server's own controllers (garbage collector, namespace controller), `/scale`
//! writes and deletecollection call them under the lock. Not modelled: re-running a custom
//! resource's pruning and defaulting on a patched object, `matchPolicy: Equivalent` (every kind
//! is served in one version), the `authorizer` and `params` variables of `matchConditions`,
//! audit annotations.
//!
//! A component that ships a validating webhook in process (Kueue's job webhooks, say)
//! registers its check with [`ApiServer::add_validating_webhook`]; it runs on every create and
//! update of the main resource it names, before the configured webhooks, and answers a denial as
//! kube-apiserver does: 403 with the message `admission webhook "<name>" denied the request:
//! <message>`. Its mutating counterpart ([`ApiServer::add_mutating_webhook`]) runs on creates.
//!
//! [`ApiServer::add_validating_webhook`]: crate::ApiServer::add_validating_webhook
//! [`ApiServer::add_mutating_webhook`]: crate::ApiServer::add_mutating_webhook

pub(crate) mod client;
mod plugins;
mod policy;
mod review;
pub(crate) mod webhook;

pub(crate) use plugins::system_priority_classes;
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
#[derive(Clone)]
struct Planned {
    hooks: Vec<webhook::Hook>,
    namespace_labels: Option<Value>,
}

impl Planned {
    /// Only the webhooks whose rules match the request (their selectors and conditions are
    /// checked when they are called).
    fn matching(&self, attrs: &webhook::Attributes) -> Planned {
        Planned {
            hooks: self.hooks.iter().filter(|h| h.rules_match(attrs)).cloned().collect(),
            namespace_labels: self.namespace_labels.clone(),
        }
    }

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

/// The mutating admission policies of a create (the first run, or the reinvocation after the
/// webhooks).
fn policies_on_create(
    st: &State,
    rt: &ResourceType,
    obj: &mut Value,
    w: &Write,
    again: Option<policy::mutating::Reinvocation>,
) -> ApiResult<policy::mutating::Reinvocation> {
    if !policy::mutating::any(st) {
        return Ok(again.unwrap_or_default());
    }
    let snapshot = obj.clone();
    policy::mutating::admit(st, rt, &create_request(rt, &snapshot, w).attributes(), obj, again)
}

impl Mutation for State {
    fn mutate_create(&self, rt: &ResourceType, obj: &mut Value, w: &Write) -> ApiResult<Vec<String>> {
        plugins::admit(self, rt, Operation::Create, obj, None)?;
        let reinvocation = policies_on_create(self, rt, obj, w, None)?;
        in_process_mutations(self, rt, obj)?;
        let ns = obj["metadata"]["namespace"].as_str().unwrap_or("").to_string();
        let warnings = mutate_created(&Planned::read(self, true, &ns), rt, obj, w)?;
        if reinvocation.pending() {
            policies_on_create(self, rt, obj, w, Some(reinvocation))?;
        }
        Ok(warnings)
    }
}

impl Mutation for parking_lot::RwLock<State> {
    fn mutate_create(&self, rt: &ResourceType, obj: &mut Value, w: &Write) -> ApiResult<Vec<String>> {
        let ns = obj["metadata"]["namespace"].as_str().unwrap_or("").to_string();
        let (planned, reinvocation) = {
            let st = self.read();
            plugins::admit(&st, rt, Operation::Create, obj, None)?;
            let reinvocation = policies_on_create(&st, rt, obj, w, None)?;
            in_process_mutations(&st, rt, obj)?;
            (Planned::read(&st, true, &ns), reinvocation)
        };
        let warnings = mutate_created(&planned, rt, obj, w)?;
        if reinvocation.pending() {
            policies_on_create(&self.read(), rt, obj, w, Some(reinvocation))?;
        }
        Ok(warnings)
    }
}

/// The configured mutating webhooks of a create; the object is copied for the request's
/// attributes only when there are webhooks (every create passes here).
fn mutate_created(planned: &Planned, rt: &ResourceType, obj: &mut Value, w: &Write) -> ApiResult<Vec<String>> {
    if planned.hooks.is_empty() {
        return Ok(Vec::new());
    }
    let snapshot = obj.clone();
    mutate(planned, &create_request(rt, &snapshot, w), obj)
}

/// Mutating admission of an update (or a delete, whose object is `None`) under the lock: the
/// mutating admission policies, then the webhooks, then the policies that asked to run again.
pub(crate) fn mutate_write(st: &State, req: &Request, obj: &mut Value) -> ApiResult<Vec<String>> {
    if req.subresource.is_empty() {
        plugins::admit(st, req.rt, req.operation, obj, req.old)?;
    }
    let policies = req.operation != Operation::Delete && policy::mutating::any(st);
    let reinvocation = match policies {
        true => Some(policy::mutating::admit(st, req.rt, &req.attributes(), obj, None)?),
        false => None,
    };
    let planned = Planned::read(st, true, req.namespace);
    let warnings = if planned.hooks.is_empty() { Vec::new() } else { mutate(&planned, req, obj)? };
    if let Some(r) = reinvocation.filter(policy::mutating::Reinvocation::pending) {
        policy::mutating::admit(st, req.rt, &req.attributes(), obj, Some(r))?;
    }
    Ok(warnings)
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
    let policies = policy::validating::any(st);
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
        let outcome = policy::validating::enforce(st, &req.attributes(), new.as_ref());
        warnings.extend(outcome.warnings);
        if let Some(denied) = outcome.denied {
            return Err(denied);
        }
    }
    let attrs = req.attributes();
    let planned = planned.matching(&attrs);
    if planned.hooks.is_empty() {
        return Ok(warnings);
    }
    match deferral::lookup(false, &planned, &attrs, new.as_ref()) {
        Some(Ok(deferral::Answered::Validated(w))) => warnings.extend(w),
        Some(Ok(deferral::Answered::Mutated(..))) => {}
        Some(Err(e)) => return Err(e),
        None => warnings.extend(run_validating(&planned, &attrs, new.as_ref())?),
    }
    Ok(warnings)
}

/// The configured validating webhooks, all at once, as kube-apiserver calls them; the first
/// error in webhook order answers.
fn run_validating(planned: &Planned, attrs: &webhook::Attributes, new: Option<&Value>) -> ApiResult<Vec<String>> {
    let labels = planned.namespace_labels.as_ref();
    let results: Vec<ApiResult<Option<review::Answer>>> = off_the_runtime(|| {
        std::thread::scope(|scope| {
            let calls: Vec<_> =
                planned.hooks.iter().map(|h| scope.spawn(|| call(h, false, attrs, labels, new))).collect();
            calls
                .into_iter()
                .map(|c| c.join().unwrap_or_else(|_| Err(ApiError::internal("webhook call panicked"))))
                .collect()
        })
    });
    let mut warnings = Vec::new();
    for result in results {
        if let Some(answer) = result? {
            warnings.extend(answer.warnings);
        }
    }
    Ok(warnings)
}

/// The configured mutating webhooks of a write: inline, or through the deferral of the
/// attempt this runs in.
fn mutate(planned: &Planned, req: &Request, obj: &mut Value) -> ApiResult<Vec<String>> {
    let attrs = req.attributes();
    let planned = &planned.matching(&attrs);
    if planned.hooks.is_empty() {
        return Ok(Vec::new());
    }
    let has_object = req.operation != Operation::Delete;
    match deferral::lookup(true, planned, &attrs, has_object.then_some(&*obj)) {
        Some(Ok(deferral::Answered::Mutated(mutated, warnings))) => {
            if has_object {
                *obj = mutated;
            }
            Ok(warnings)
        }
        Some(Ok(deferral::Answered::Validated(_))) => Ok(Vec::new()),
        Some(Err(e)) => Err(e),
        None => run_mutating(planned, &attrs, has_object, obj),
    }
}

/// The configured mutating webhooks, in order, then those of them with
/// `reinvocationPolicy: IfNeeded` that a later webhook's change calls for once more.
fn run_mutating(
    planned: &Planned,
    attrs: &webhook::Attributes,
    has_object: bool,
    obj: &mut Value,
) -> ApiResult<Vec<String>> {
    let labels = planned.namespace_labels.as_ref();
    let mut warnings = Vec::new();
    let mut reinvocable: Vec<usize> = Vec::new();
    let mut again = vec![false; planned.hooks.len()];
    for (i, hook) in planned.hooks.iter().enumerate() {
        let Some(answer) = call(hook, true, attrs, labels, has_object.then_some(&*obj))? else { continue };
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
        if let Some(answer) = call(hook, true, attrs, labels, has_object.then_some(&*obj))? {
            warnings.extend(answer.warnings);
            patch(hook, &answer.patch, has_object.then_some(&mut *obj))?;
        }
    }
    Ok(warnings)
}

/// Runs a blocking call; on a worker of a multi-threaded runtime the worker is handed back
/// meanwhile, so the server goes on answering (the webhook's own requests among them).
pub(crate) fn off_the_runtime<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
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
    crate::go_json_patch::apply(&mut patched, &ops).map_err(ApiError::internal)?;
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
    let labels = webhook::namespace_labels_for(a, object, namespace_labels);
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
    let answer = match off_the_runtime(|| client::post(target, &hook.ca_bundle, &body, hook.timeout)) {
        Ok(a) => a,
        Err(e) => return fail(format!("failed to call webhook: {}", e.describe(&target.url))),
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

/// Webhook calls made outside the server's lock. A write that runs under the lock
/// ([`crate::endpoints::Context::write_admitted`]) meets configured webhooks it has no answer
/// for: it records the calls and gives up with [`deferred`]; the lock is released, the calls
/// are made, and the write runs again from the start, now finding each answer under the key of
/// what was asked (the object and the stored one it replaces). A write whose object changed in
/// between asks again, as kube-apiserver's `GuaranteedUpdate` calls admission again on a retry.
/// A webhook may so read from and write to this server while it answers.
mod deferral {
    use super::*;
    use std::cell::RefCell;
    use std::collections::HashMap;

    /// What one webhook stage answered.
    #[derive(Clone)]
    pub(super) enum Answered {
        /// Mutating: the object after the webhooks, and their warnings.
        Mutated(Value, Vec<String>),
        /// Validating: the warnings.
        Validated(Vec<String>),
    }

    /// A stage's calls, owned, to be made without the lock.
    pub(super) struct Pending {
        pub key: u64,
        pub mutating: bool,
        pub planned: Planned,
        pub attrs: OwnedAttributes,
        pub object: Option<Value>,
    }

    #[derive(Default)]
    struct Round {
        /// Whether the closure being run may defer (not the controllers after it).
        active: bool,
        answers: HashMap<u64, ApiResult<Answered>>,
        pending: Vec<Pending>,
    }

    thread_local! {
        static ROUND: RefCell<Option<Round>> = const { RefCell::new(None) };
    }

    /// The marker error of a deferred write; never reaches a client.
    pub(crate) fn deferred() -> ApiError {
        ApiError { code: 0, reason: "AdmissionDeferred", message: String::new(), details: None }
    }

    pub(crate) fn is_deferred(e: &ApiError) -> bool {
        e.code == 0 && e.reason == "AdmissionDeferred"
    }

    /// Runs `f` (one attempt of a write, under the lock) with deferral on; it is off again
    /// afterwards, even if `f` panics.
    pub(crate) fn attempt<T>(f: impl FnOnce() -> T) -> T {
        struct Off;
        impl Drop for Off {
            fn drop(&mut self) {
                ROUND.with(|r| {
                    if let Some(round) = r.borrow_mut().as_mut() {
                        round.active = false;
                    }
                });
            }
        }
        ROUND.with(|r| r.borrow_mut().get_or_insert_with(Round::default).active = true);
        let _off = Off;
        f()
    }

    /// Makes the calls the last attempt recorded (without the lock).
    pub(crate) fn answer_pending() {
        let pending = ROUND.with(|r| r.borrow_mut().as_mut().map(|round| std::mem::take(&mut round.pending)));
        for p in pending.unwrap_or_default() {
            let attrs = p.attrs.borrow();
            let answer = if p.mutating {
                let mut obj = p.object.clone().unwrap_or(Value::Null);
                let has_object = p.object.is_some();
                run_mutating(&p.planned, &attrs, has_object, &mut obj).map(|w| Answered::Mutated(obj, w))
            } else {
                run_validating(&p.planned, &attrs, p.object.as_ref()).map(Answered::Validated)
            };
            ROUND.with(|r| {
                if let Some(round) = r.borrow_mut().as_mut() {
                    round.answers.insert(p.key, answer);
                }
            });
        }
    }

    /// Ends the write's rounds.
    pub(crate) fn finish() {
        ROUND.with(|r| *r.borrow_mut() = None);
    }

    fn key(mutating: bool, attrs: &webhook::Attributes, object: Option<&Value>) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (
            mutating,
            attrs.operation.as_str(),
            attrs.group,
            attrs.resource,
            attrs.subresource,
            attrs.namespace,
            attrs.name,
        )
            .hash(&mut h);
        // What a write generates afresh on each run (a create's uid and timestamp, the times of
        // managedFields) is not part of what was asked.
        let stable = object.map(|o| {
            let mut o = o.clone();
            if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                for volatile in ["uid", "creationTimestamp", "managedFields"] {
                    meta.remove(volatile);
                }
            }
            o
        });
        serde_json::to_string(&stable).unwrap_or_default().hash(&mut h);
        serde_json::to_string(&attrs.old).unwrap_or_default().hash(&mut h);
        h.finish()
    }

    /// Inside an attempt: the answer to this stage if it was asked, else the stage recorded
    /// and `Err(deferred())`. Outside one: `None` (call inline).
    pub(super) fn lookup(
        mutating: bool,
        planned: &Planned,
        attrs: &webhook::Attributes,
        object: Option<&Value>,
    ) -> Option<ApiResult<Answered>> {
        ROUND.with(|r| {
            let mut r = r.borrow_mut();
            let round = r.as_mut().filter(|round| round.active)?;
            let key = key(mutating, attrs, object);
            if let Some(answer) = round.answers.get(&key) {
                return Some(answer.clone());
            }
            round.pending.push(Pending {
                key,
                mutating,
                planned: planned.clone(),
                attrs: OwnedAttributes::of(attrs),
                object: object.cloned(),
            });
            Some(Err(deferred()))
        })
    }
}

pub(crate) use deferral::{answer_pending, attempt, finish, is_deferred};

/// Whether a write may have webhooks or policies to call (any configuration is stored), so it
/// must be able to run again after calling them outside the lock.
pub(crate) fn may_call(st: &State) -> bool {
    webhook::any_configured(st) || policy::validating::any(st)
}

/// [`webhook::Attributes`] with owned fields, for a call made later.
struct OwnedAttributes {
    operation: Operation,
    strings: [String; 7],
    old: Option<Value>,
    dry_run: bool,
    user: Option<crate::storage::UserInfo>,
    field_manager: Option<String>,
}

impl OwnedAttributes {
    fn of(a: &webhook::Attributes) -> Self {
        OwnedAttributes {
            operation: a.operation,
            strings: [a.group, a.version, a.kind, a.resource, a.subresource, a.namespace, a.name].map(str::to_string),
            old: a.old.cloned(),
            dry_run: a.dry_run,
            user: a.user.cloned(),
            field_manager: a.field_manager.map(str::to_string),
        }
    }

    fn borrow(&self) -> webhook::Attributes<'_> {
        let [group, version, kind, resource, subresource, namespace, name] = &self.strings;
        webhook::Attributes {
            operation: self.operation,
            group,
            version,
            kind,
            resource,
            subresource,
            namespace,
            name,
            old: self.old.as_ref(),
            dry_run: self.dry_run,
            user: self.user.as_ref(),
            field_manager: self.field_manager.as_deref(),
        }
    }
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.mutating.iter().map(|w| w.name()).chain(self.validating.iter().map(|w| w.name())))
            .finish()
    }
}
