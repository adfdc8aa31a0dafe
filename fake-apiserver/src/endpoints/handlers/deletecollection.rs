//! DELETE of a collection: every selected object deleted as one DELETE would.

use super::super::negotiation::bytes_response;
use super::super::query::matches;
use super::Call;
use super::delete::delete_options;
use super::list::list_body;
use crate::error::ApiResult;
use crate::registry::store::{self, Deleted, Write, render};
use crate::storage::{StoredObject, Verb};
use axum::response::Response;
use http::StatusCode;
use std::sync::Arc;

/// The selected objects deleted; the answer lists them as they were left.
pub(super) async fn handle(mut call: Call) -> ApiResult<Response> {
    let body = call.body().await?;
    let opts = delete_options(&call.query, &body)?;
    let (labels, fields) = call.query.selectors(&call.target.rt)?;
    let ctx = call.write_context(Verb::DeleteCollection);
    let now = call.ctx.clock.now();
    let (rt, namespace) = (&call.target.rt, &call.target.namespace);
    let deleted = call.ctx.write(opts.dry_run, |st| {
        let items: Vec<Arc<StoredObject>> = st
            .store
            .collections
            .get(rt.storage_key())
            .map(|c| {
                c.values()
                    .filter(|o| namespace.is_empty() || o.namespace == *namespace)
                    .filter(|o| matches(o, &labels, &fields))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let w = Write { ctx: &ctx, now, dry_run: opts.dry_run, fields: None };
        let mut out = Vec::new();
        for o in items {
            match store::delete(st, rt, &o.namespace, &o.name, &opts, &w)? {
                Deleted::Now(x) | Deleted::Pending(x) => out.push(render(rt, &x)),
            }
        }
        Ok(out)
    })?;
    let rv = call.ctx.state.read().store.resource_version;
    Ok(bytes_response(StatusCode::OK, list_body(rt, deleted.into_iter(), rv, None, None)))
}
