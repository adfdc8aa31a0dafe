//! Admission webhooks, in process: what a `MutatingWebhookConfiguration` and a
//! `ValidatingWebhookConfiguration` make kube-apiserver do, with the webhook given as Rust code
//! instead of an HTTPS endpoint (`apiserver/pkg/admission/plugin/webhook/{mutating,validating}`).
//!
//! Mutating (defaulting) webhooks run on creates only (`operations: [CREATE]`, as Kueue's job
//! defaulting webhooks register), after managedFields are computed and before the kind's
//! validation, as kube-apiserver's create handler runs mutating admission after the field
//! manager and before `BeforeCreate`: what a webhook adds is owned by no field manager. A
//! webhook reads the cluster through a [`ClusterReader`] (real webhooks read their informer
//! caches). Its refusal is answered as a validating webhook's denial. Not modelled: re-running
//! the schema's pruning and defaulting on the mutated object (kube-apiserver does, for custom
//! resources), reinvocation, JSON patches.
//!
//! A component that ships a validating webhook (Kueue's job webhooks, say) registers its check
//! with [`ApiServer::add_validating_webhook`]; the server
//! runs it on every create and update of the resources it names (`operations: [CREATE, UPDATE]`,
//! the main resource only), after its own validation and before the write, and answers a denial
//! as kube-apiserver does: 403 with the webhook's reason and the message
//! `admission webhook "<name>" denied the request: <message>`.
//!
//! Deletes and connects are not called. A create is checked after the name is found free
//! (kube-apiserver checks existence last, in storage), so a create that both collides and is
//! denied answers AlreadyExists here.
//!
//! [`ApiServer::add_validating_webhook`]: crate::ApiServer::add_validating_webhook

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
/// itself when the caller holds the lock, or the lock, taken for reading only when needed.
pub(crate) trait Mutation {
    /// Runs every mutating webhook that handles `rt` on the create of `obj`.
    fn mutate_create(&self, rt: &super::ResourceType, obj: &mut Value) -> crate::error::ApiResult<()>;
}

impl ClusterReader for super::State {
    fn get(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let rt = self.registry.by_kind(group, version, kind)?;
        let stored_ns = if rt.namespaced { namespace } else { "" };
        let obj = self.store.get(rt.storage_key(), stored_ns, name)?;
        Some(super::store::served_value(&rt, &obj))
    }
}

impl Mutation for super::State {
    fn mutate_create(&self, rt: &super::ResourceType, obj: &mut Value) -> crate::error::ApiResult<()> {
        for hook in self.webhooks.mutating.iter().filter(|h| h.handles(&rt.group, &rt.plural)) {
            hook.default(obj, self).map_err(|m| crate::error::ApiError::webhook_denied(hook.name(), &m))?;
        }
        Ok(())
    }
}

impl Mutation for parking_lot::RwLock<super::State> {
    fn mutate_create(&self, rt: &super::ResourceType, obj: &mut Value) -> crate::error::ApiResult<()> {
        self.read().mutate_create(rt, obj)
    }
}

impl Webhooks {
    /// Runs every webhook that handles `(group, resource)` on a create (`old` is `None`) or an
    /// update, in registration order; the first denial is the answer. `new` is only built when
    /// some webhook handles the resource.
    pub(crate) fn admit(
        &self,
        group: &str,
        resource: &str,
        old: Option<&Value>,
        new: impl FnOnce() -> Value,
    ) -> crate::error::ApiResult<()> {
        let mut hooks = self.validating.iter().filter(|h| h.handles(group, resource)).peekable();
        if hooks.peek().is_none() {
            return Ok(());
        }
        let new = new();
        for hook in hooks {
            hook.validate(old, &new).map_err(|m| crate::error::ApiError::webhook_denied(hook.name(), &m))?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.mutating.iter().map(|w| w.name()).chain(self.validating.iter().map(|w| w.name())))
            .finish()
    }
}
