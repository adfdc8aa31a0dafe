//! GET of one object, its `/status` or its `/scale`.

use super::super::negotiation::{accept_json, bytes_response, json_response, rendered_response};
use super::super::tables::{self, Rendering};
use super::{Call, current, update_mode};
use crate::error::ApiResult;
use crate::registry::scale::scale_of;
use crate::registry::store::try_render;
use axum::response::Response;
use http::StatusCode;

/// The object (or its status) as JSON, a Table or PartialObjectMetadata.
pub(super) fn object(call: Call) -> ApiResult<Response> {
    let rendering = tables::negotiate(&call.parts.headers, call.parts.uri.query())?;
    update_mode(&call.target.rt, call.subresource)?;
    if let Some(rv) = call.query.resource_version.as_deref() {
        crate::storage::read_rv(rv)?;
    }
    let obj = {
        let st = call.ctx.state.read();
        current(&st, &call.target, call.name())?
    };
    let rt = &call.target.rt;
    let body = try_render(rt, &obj)?;
    if rendering != Rendering::Json {
        let v = tables::object_body(&rendering, rt, &body, call.ctx.clock.now());
        return Ok(rendered_response(&rendering, &v));
    }
    Ok(bytes_response(StatusCode::OK, body))
}

/// The object's `autoscaling/v1` Scale.
pub(super) fn scale(call: Call) -> ApiResult<Response> {
    accept_json(&call.parts.headers)?;
    let obj = {
        let st = call.ctx.state.read();
        current(&st, &call.target, call.name())?.value()
    };
    Ok(json_response(StatusCode::OK, &scale_of(&call.target.rt, &obj)?))
}
