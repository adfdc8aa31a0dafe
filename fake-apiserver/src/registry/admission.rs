//! Validating admission webhooks, in process: what a `ValidatingWebhookConfiguration` makes
//! kube-apiserver do, with the webhook's check given as Rust code instead of an HTTPS endpoint
//! (`apiserver/pkg/admission/plugin/webhook/validating`). A component that ships a webhook (Kueue's
//! job webhooks, say) registers its check with [`ApiServer::add_validating_webhook`]; the server
//! runs it on every update of the resources it names, after its own validation and before the
//! write, and answers a denial as kube-apiserver does: 403 with the webhook's reason and the
//! message `admission webhook "<name>" denied the request: <message>`.
//!
//! Only updates (`operations: [UPDATE]`) are called; creates, deletes and connects are not.
//!
//! [`ApiServer::add_validating_webhook`]: crate::ApiServer::add_validating_webhook

use serde_json::Value;

/// A validating webhook's check; see the module docs.
pub trait ValidatingWebhook: Send + Sync {
    /// The webhook's name (`webhooks[].name`, e.g. `vrayjob.kb.io`), quoted in denials.
    fn name(&self) -> &str;
    /// Whether its rules match the resource (`group`, plural `resource`) on update.
    fn handles(&self, group: &str, resource: &str) -> bool;
    /// Checks an update from `old` to `new` (whole objects, as an `AdmissionReview` carries them);
    /// `Err(message)` denies it.
    fn validate_update(&self, old: &Value, new: &Value) -> Result<(), String>;
}

/// The registered webhooks, in registration order.
#[derive(Default, Clone)]
pub(crate) struct Webhooks(pub Vec<std::sync::Arc<dyn ValidatingWebhook>>);

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter().map(|w| w.name())).finish()
    }
}
