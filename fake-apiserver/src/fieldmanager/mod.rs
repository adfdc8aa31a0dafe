//! The field manager: who owns which field (`metadata.managedFields`), server-side apply,
//! strategic merge patch with the built-in types' patch metadata, JSON patch as
//! kube-apiserver applies it, and `fieldValidation` (unknown fields). Modelled on
//! `apiserver/pkg/endpoints/handlers/fieldmanager` and `apimachinery/pkg/util/strategicpatch`.

pub(crate) mod apply;
pub(crate) mod field_validation;
pub(crate) mod managed;
/// The built-in types' merge metadata lives with the types (`registry::patch_meta`).
pub(crate) use crate::registry::patch_meta;
pub(crate) mod smp;

use crate::registry::ResourceType;
use crate::registry::store::{FieldOwnership, Write};
use serde_json::Value;

/// Records every non-apply write in `managedFields` as an `Update` by the writer's field
/// manager: what the endpoints and the garbage collector hand the generic store.
#[derive(Debug)]
pub(crate) struct UpdateOwnership;

impl UpdateOwnership {
    fn writer<'a>(rt: &'a ResourceType, w: &'a Write<'_>) -> managed::Writer<'a> {
        managed::Writer {
            manager: w.ctx.field_manager.as_deref(),
            subresource: w.ctx.subresource.map(|s| s.as_str()),
            api_version: rt.api_version(),
            time: w.time(),
        }
    }
}

impl FieldOwnership for UpdateOwnership {
    fn record_create(&self, rt: &ResourceType, obj: &mut Value, w: &Write) {
        managed::track_create(rt, obj, &Self::writer(rt, w));
    }

    fn record_update(&self, rt: &ResourceType, old: &Value, new: &mut Value, w: &Write) {
        managed::track_update(rt, old, new, &Self::writer(rt, w));
    }
}
