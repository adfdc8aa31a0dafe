//! Validating admission webhooks, in process: what a `ValidatingWebhookConfiguration` makes
//! kube-apiserver do, with the webhook's check given as Rust code instead of an HTTPS endpoint
//! (`apiserver/pkg/admission/plugin/webhook/validating`). A component that ships a webhook (Kueue's
//! job webhooks, say) registers its check with [`ApiServer::add_validating_webhook`]; the server
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

/// The registered webhooks, in registration order.
#[derive(Default, Clone)]
pub(crate) struct Webhooks(pub Vec<std::sync::Arc<dyn ValidatingWebhook>>);

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
        let mut hooks = self.0.iter().filter(|h| h.handles(group, resource)).peekable();
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
        f.debug_list().entries(self.0.iter().map(|w| w.name())).finish()
    }
}
