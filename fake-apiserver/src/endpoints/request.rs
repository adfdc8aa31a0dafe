//! Request info: what a URL and method ask for (`apiserver/pkg/endpoints/request`), resolved
//! against the served resource types.

use crate::error::{ApiError, ApiResult};
use crate::registry::{Registry, ResourceType};
use crate::storage::{Subresource, Verb};
use http::Method;
use std::borrow::Cow;
use std::sync::Arc;

/// What a path names.
pub(super) enum ApiPath<'a> {
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    Groups,
    /// `/apis/{group}`.
    Group(Cow<'a, str>),
    /// `/api/v1` or `/apis/{group}/{version}`.
    Resources { group: Cow<'a, str>, version: Cow<'a, str> },
    /// Anything below a group/version: a collection, an object or a subresource.
    Resource { group: Cow<'a, str>, version: Cow<'a, str>, rest: Vec<Cow<'a, str>> },
}

impl<'a> ApiPath<'a> {
    /// Parses a URL path (segments percent-decoded); 404 for paths outside the API.
    pub fn parse(path: &'a str) -> ApiResult<Self> {
        let mut segs: Vec<Cow<'a, str>> = path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy())
            .collect();
        let root = segs.first().map(|s| s.as_ref());
        match (root, segs.len()) {
            (Some("api"), 1) => Ok(ApiPath::CoreVersions),
            (Some("apis"), 1) => Ok(ApiPath::Groups),
            (Some("apis"), 2) => Ok(ApiPath::Group(segs.remove(1))),
            (Some("api"), n) if n >= 2 => {
                let rest = segs.split_off(2);
                let version = segs.remove(1);
                Ok(Self::below(Cow::Borrowed(""), version, rest))
            }
            (Some("apis"), n) if n >= 3 => {
                let rest = segs.split_off(3);
                let version = segs.remove(2);
                let group = segs.remove(1);
                Ok(Self::below(group, version, rest))
            }
            _ => Err(ApiError::path_not_found()),
        }
    }

    fn below(group: Cow<'a, str>, version: Cow<'a, str>, rest: Vec<Cow<'a, str>>) -> Self {
        if rest.is_empty() { ApiPath::Resources { group, version } } else { ApiPath::Resource { group, version, rest } }
    }
}

/// A request for a resource, resolved against the registry.
pub(super) struct Target {
    pub rt: Arc<ResourceType>,
    /// The namespace from the URL (empty for cluster-scoped resources and all-namespace lists).
    pub namespace: String,
    pub name: Option<String>,
}

/// Resolves what follows `/api/v1` or `/apis/{group}/{version}`: the target and, if the URL
/// names one, the subresource segment as written.
pub(super) fn resolve(
    registry: &Registry,
    group: &str,
    version: &str,
    rest: &[Cow<'_, str>],
) -> ApiResult<(Target, Option<String>)> {
    if !registry.has_group_version(group, version) {
        return Err(ApiError::path_not_found());
    }
    let lookup = |plural: &str| registry.get(group, version, plural).ok_or_else(ApiError::path_not_found);
    let (namespace, rest) = match rest {
        [ns_word, ns, res, tail @ ..]
            if ns_word == "namespaces"
                && group.is_empty()
                && registry.get(group, version, res).is_none()
                && tail.is_empty() =>
        {
            // /api/v1/namespaces/{name}/{status|finalize}
            let rt = lookup("namespaces")?;
            let target = Target { rt, namespace: String::new(), name: Some(ns.to_string()) };
            return Ok((target, Some(res.to_string())));
        }
        [ns_word, ns, tail @ ..] if ns_word == "namespaces" && !tail.is_empty() => (ns.to_string(), tail),
        _ => (String::new(), rest),
    };
    let (plural, name, sub) = match rest {
        [p] => (p, None, None),
        [p, n] => (p, Some(n.to_string()), None),
        [p, n, s] => (p, Some(n.to_string()), Some(s.to_string())),
        _ => return Err(ApiError::path_not_found()),
    };
    let rt = lookup(plural)?;
    if !namespace.is_empty() && !rt.namespaced {
        return Err(ApiError::path_not_found());
    }
    if rt.namespaced && namespace.is_empty() && name.is_some() {
        return Err(ApiError::path_not_found());
    }
    Ok((Target { rt, namespace, name }, sub))
}

/// The subresource a URL segment names on `rt`: 404 for words the server does not serve, a
/// `binding` of anything but pods and a `scale` of a resource without one. (`status` and
/// `finalize` of a resource without them are refused by the verb's handler, with 404 or
/// 405 as kube-apiserver answers.)
pub(super) fn subresource(rt: &ResourceType, segment: Option<&str>) -> ApiResult<Option<Subresource>> {
    let Some(segment) = segment else { return Ok(None) };
    match Subresource::parse(segment) {
        Some(s @ (Subresource::Binding | Subresource::Scale)) if !rt.has_subresource(s) => {
            Err(ApiError::path_not_found())
        }
        Some(s) => Ok(Some(s)),
        None => Err(ApiError::path_not_found()),
    }
}

/// The verb of a request to a resource (`RequestInfoFactory`): GET of an object is `get`, of a
/// collection `list` (or `watch` with `watch=true`); POST `create`; PUT `update` and PATCH
/// `patch` of an object; DELETE of an object `delete`, of a collection `deletecollection`.
/// `None` for anything else (405).
pub(super) fn verb(method: &Method, has_name: bool, watch: bool) -> Option<Verb> {
    Some(match (method, has_name) {
        (&Method::GET, true) => Verb::Get,
        (&Method::GET, false) if watch => Verb::Watch,
        (&Method::GET, false) => Verb::List,
        (&Method::POST, _) => Verb::Create,
        (&Method::PUT, true) => Verb::Update,
        (&Method::PATCH, true) => Verb::Patch,
        (&Method::DELETE, true) => Verb::Delete,
        (&Method::DELETE, false) => Verb::DeleteCollection,
        _ => return None,
    })
}
