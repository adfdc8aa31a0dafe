//! The verbs, one file each, and the dispatch to them on the typed request info.

mod create;
mod delete;
mod deletecollection;
mod get;
mod list;
mod patch;
mod update;
mod watch;

pub use watch::INITIAL_EVENTS_END;

use super::Context;
use super::discovery;
use super::negotiation::read_body;
use super::protobuf;
use super::query::Query;
use super::request::{self, ApiPath, Target};
use crate::controllers;
use crate::error::{ApiError, ApiResult};
use crate::fieldmanager::field_validation::{self, FieldValidation};
use crate::registry::store::{self, PreparedCreate, UpdateMode, Write};
use crate::registry::{ResourceType, State, crds_key};
use crate::storage::{StoredObject, Subresource, Verb, WriteContext};
use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::header;
use http::request::Parts;
use serde_json::{Value, json};
use std::sync::Arc;

/// One request for a resource, parsed and resolved.
pub(super) struct Call {
    pub ctx: Arc<Context>,
    pub target: Target,
    pub subresource: Option<Subresource>,
    pub query: Query,
    pub parts: Parts,
    body: Option<Body>,
    /// The body is protobuf, to be read as the JSON it encodes.
    protobuf_body: bool,
}

impl Call {
    /// The request body (at most the configured size), read once.
    async fn body(&mut self) -> ApiResult<Bytes> {
        let body = self.body.take().unwrap_or_default();
        let bytes = read_body(self.ctx.settings.max_request_body_bytes, body, &self.parts.headers).await?;
        if self.protobuf_body {
            return protobuf::decode_body(&bytes, &self.target.rt, protobuf::MEDIA_TYPE);
        }
        Ok(bytes)
    }

    /// Who writes, for the timeline and managedFields: the user agent, and the field manager
    /// (the `fieldManager` parameter, else the user agent's product).
    fn write_context(&self, verb: Verb) -> Arc<WriteContext> {
        let user_agent =
            self.parts.headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        let field_manager =
            self.query.field_manager.clone().or_else(|| {
                Some(user_agent.split('/').next().unwrap_or_default().to_string()).filter(|s| !s.is_empty())
            });
        Arc::new(WriteContext {
            verb,
            subresource: self.subresource,
            user_agent,
            field_manager,
            user: Some(self.user()),
        })
    }

    /// Who makes the request (anonymous when no filter ran, as in a bare router test).
    fn user(&self) -> Arc<crate::storage::UserInfo> {
        self.parts
            .extensions
            .get::<super::filters::Requester>()
            .map(|r| r.0.clone())
            .unwrap_or_else(|| Arc::new(crate::storage::UserInfo::anonymous()))
    }

    /// The object the URL names.
    fn name(&self) -> &str {
        self.target.name.as_deref().unwrap_or_default()
    }

    /// `fieldValidation` on a request body: Strict refuses unknown fields, Warn returns them.
    fn unknown_fields(&self, body: &Value) -> ApiResult<Vec<String>> {
        field_validation::check(&self.target.rt, self.field_validation()?, body)
    }

    /// [`Call::unknown_fields`] of an object the request then decodes (a create's or an
    /// update's body, `raw` as sent, whose duplicate fields count too); a custom resource is
    /// pruned on the way.
    fn unknown_fields_decoding(&self, raw: &[u8], body: &mut Value) -> ApiResult<Vec<String>> {
        field_validation::check_decoding(&self.target.rt, self.field_validation()?, raw, body)
    }

    fn field_validation(&self) -> ApiResult<FieldValidation> {
        let options = match self.parts.method {
            http::Method::POST => "CreateOptions",
            http::Method::PUT => "UpdateOptions",
            _ => "PatchOptions",
        };
        FieldValidation::parse(self.query.field_validation.as_deref(), options)
    }
}

/// Answers a request the router did not route elsewhere: discovery, or a resource.
pub(super) async fn handle(ctx: Arc<Context>, req: Request) -> ApiResult<Response> {
    let (parts, body) = req.into_parts();
    let query = Query::parse(parts.uri.query())?;
    let path = parts.uri.path().to_string();
    let (group, version, rest) = match ApiPath::parse(&path)? {
        ApiPath::CoreVersions => return discovery::core_versions(&ctx, &parts.headers),
        ApiPath::Groups => return discovery::groups(&ctx, &parts.headers),
        ApiPath::Group(g) => return discovery::group(&ctx, &g),
        ApiPath::Resources { group, version } => return discovery::resource_list(&ctx, &group, &version),
        ApiPath::Resource { group, version, rest } => (group, version, rest),
    };
    let (target, segment) = request::resolve(&ctx.state.read().registry, &group, &version, &rest)?;
    let mut parts = parts;
    let has_protobuf = protobuf::mentions_protobuf(&parts.headers) && protobuf::has_protobuf(&target.rt);
    let watch = parts.method == http::Method::GET && target.name.is_none() && query.watch;
    let output = protobuf::negotiate(&mut parts.headers, has_protobuf, watch)?;
    let protobuf_body = has_protobuf
        && protobuf::is_protobuf_body(&parts.headers)
        && matches!(parts.method, http::Method::POST | http::Method::PUT | http::Method::DELETE);
    if protobuf_body {
        parts.headers.insert(header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    }
    let call = Call { ctx, target, subresource: None, query, parts, body: Some(body), protobuf_body };
    let resp = route(call, segment).await.unwrap_or_else(IntoResponse::into_response);
    Ok(protobuf::encode(output, watch, resp).await)
}

/// Sends a resolved request to its verb's handler.
async fn route(mut call: Call, segment: Option<String>) -> ApiResult<Response> {
    let has_name = call.target.name.is_some();
    if call.target.rt.strategy.create_only() {
        if call.parts.method != http::Method::POST || has_name {
            return Err(ApiError::method_not_allowed());
        }
        if call.target.rt.group.is_empty() && call.target.rt.plural == "bindings" {
            return create::binding_of_named_pod(call).await;
        }
        return create::create_only(call).await;
    }
    let subresource = request::subresource(&call.target.rt, segment.as_deref())?;
    let verb = request::verb(&call.parts.method, has_name, call.query.watch);
    call.subresource = subresource;
    let strategy = call.target.rt.strategy;
    if (strategy.read_only() && !matches!(verb, Some(Verb::Get | Verb::List)))
        || (!strategy.deletes_collections() && verb == Some(Verb::DeleteCollection))
    {
        return Err(ApiError::method_not_allowed());
    }
    use Subresource::*;
    match (verb, subresource) {
        (Some(Verb::Get), None | Some(Status)) => get::object(call),
        (Some(Verb::Get), Some(Scale)) => get::scale(call),
        (Some(Verb::List), _) => list::handle(call),
        (Some(Verb::Watch), _) => watch::handle(call),
        (Some(Verb::Create), None) if !has_name => create::object(call).await,
        (Some(Verb::Create), Some(Binding)) => create::binding(call).await,
        (Some(Verb::Update), None | Some(Status)) => update::object(call).await,
        (Some(Verb::Update), Some(Scale)) => update::scale(call).await,
        (Some(Verb::Update), Some(Finalize)) if call.target.rt.has_subresource(Finalize) => {
            update::finalize(call).await
        }
        (Some(Verb::Patch), None | Some(Status)) => patch::object(call).await,
        (Some(Verb::Patch), Some(Scale)) => patch::scale(call).await,
        (Some(Verb::Delete), None) => delete::handle(call).await,
        (Some(Verb::DeleteCollection), _) => deletecollection::handle(call).await,
        // A scale exists only for get, update and patch.
        (_, Some(Scale)) => Err(ApiError::path_not_found()),
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// The update mode of a write to the main resource or its `/status` (404 when the resource
/// has no status subresource).
fn update_mode(rt: &ResourceType, subresource: Option<Subresource>) -> ApiResult<UpdateMode> {
    match subresource {
        Some(Subresource::Status) if rt.status => Ok(UpdateMode::Status),
        Some(Subresource::Status) => Err(ApiError::path_not_found()),
        _ => Ok(UpdateMode::Main),
    }
}

/// The current object the call names.
fn current(st: &State, target: &Target, name: &str) -> ApiResult<Arc<StoredObject>> {
    let rt = &target.rt;
    st.store
        .get(rt.storage_key(), &target.namespace, name)
        .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))
}

/// A patch applies to the version it read (the served object carries it); one that names a
/// different version fails the update with 409. One that clears it is unconditional where the
/// kind allows that, and otherwise fails as an update without a resourceVersion does (422).
fn keep_resource_version(rt: &ResourceType, patched: &mut Value, old: &StoredObject) {
    let has = patched["metadata"]["resourceVersion"].as_str().is_some_and(|s| !s.is_empty());
    if !has && patched["metadata"].is_object() && store::unconditional_update_allowed(rt) {
        patched["metadata"]["resourceVersion"] = json!(old.resource_version.to_string());
    }
}

/// Stores a prepared create; a created CRD is then named and established by the CRD
/// controllers before the answer, so the answer says whether it is served.
fn create_prepared(
    st: &mut State,
    rt: &Arc<ResourceType>,
    namespace: &str,
    prepared: PreparedCreate,
    w: &Write,
) -> ApiResult<Arc<StoredObject>> {
    let created = store::create_prepared(st, rt, namespace, prepared, w)?;
    if rt.storage_key() == crds_key() && !w.dry_run {
        return Ok(controllers::crd::establish(st, rt, created, w.now));
    }
    Ok(created)
}
