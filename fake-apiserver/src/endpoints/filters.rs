//! The filters every request passes before its handler, as in kube-apiserver's handler chain
//! (`apiserver/pkg/endpoints/filters`): authentication (a client certificate signed by the
//! `--client-ca-file` CA names its user, CN, and groups, O, as the x509 authenticator reads them,
//! ahead of bearer tokens the server issued; no credentials is `system:anonymous`, a token it
//! did not issue is 401), impersonation
//! (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-*`, each authorized as the `impersonate`
//! verb) and authorization of the request's attributes.

use super::Context;
use super::request::ApiPath;
use crate::error::{ApiError, ApiResult};
use crate::registry::rbac::authorizer::{self, Attributes, ResourceAttributes};
use crate::storage::{ANONYMOUS, AUTHENTICATED, UNAUTHENTICATED, UserInfo};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, Method, header};
use std::sync::Arc;

/// The user a request runs as (after impersonation), in the request's extensions.
#[derive(Debug, Clone)]
pub(crate) struct Requester(pub Arc<UserInfo>);

/// A TLS connection's peer: its address, and the user its verified client certificate names.
#[derive(Debug, Clone)]
pub(crate) struct Peer {
    pub addr: std::net::SocketAddr,
    pub user: Option<Arc<UserInfo>>,
}

/// The user of a verified client certificate's subject, as kube-apiserver's x509 authenticator
/// reads it (`CommonNameUserConversion`): the common name, the organizations as groups, and
/// `system:authenticated`. `None` without a common name.
pub(crate) fn certificate_user(der: &[u8]) -> Option<UserInfo> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let name = subject.iter_common_name().next()?.as_str().ok()?.to_string();
    if name.is_empty() {
        return None;
    }
    let mut groups: Vec<String> =
        subject.iter_organization().filter_map(|o| o.as_str().ok()).map(str::to_string).collect();
    groups.push(AUTHENTICATED.to_string());
    Some(UserInfo { name, groups, ..UserInfo::default() })
}

fn authenticate(ctx: &Context, headers: &HeaderMap, peer: Option<&Peer>) -> ApiResult<Arc<UserInfo>> {
    if let Some(user) = peer.and_then(|p| p.user.clone()) {
        return Ok(user);
    }
    let Some(value) = headers.get(header::AUTHORIZATION) else { return Ok(Arc::new(UserInfo::anonymous())) };
    let token = value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ")).map(str::trim);
    token.and_then(|t| ctx.tokens.read().get(t).cloned()).ok_or_else(ApiError::unauthorized)
}

fn header_values<'a>(headers: &'a HeaderMap, name: &str) -> Vec<&'a str> {
    headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).collect()
}

fn impersonation_check(verb: &str, resource: &str, namespace: &str, name: &str, sub: &str) -> Attributes {
    let group = if matches!(resource, "userextras" | "uids") { "authentication.k8s.io" } else { "" };
    Attributes {
        verb: verb.into(),
        resource: Some(ResourceAttributes {
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: namespace.into(),
            name: name.into(),
        }),
        path: String::new(),
    }
}

/// The user the request impersonates, each part authorized for the requester; the requester
/// when it impersonates nobody.
fn impersonate(ctx: &Context, requester: Arc<UserInfo>, headers: &HeaderMap) -> ApiResult<Arc<UserInfo>> {
    let users = header_values(headers, "impersonate-user");
    let groups = header_values(headers, "impersonate-group");
    let uids = header_values(headers, "impersonate-uid");
    let extras: Vec<(String, &str)> = headers
        .iter()
        .filter_map(|(k, v)| {
            let key = k.as_str().strip_prefix("impersonate-extra-")?;
            let key = percent_encoding::percent_decode_str(key).decode_utf8_lossy().into_owned();
            Some((key, v.to_str().ok()?))
        })
        .collect();
    let Some(user) = users.first().copied() else {
        if !groups.is_empty() || !uids.is_empty() || !extras.is_empty() {
            return Err(ApiError::internal_plain(format!(
                "requested {:?} without impersonating a user",
                [
                    groups.join(","),
                    uids.join(","),
                    extras.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(",")
                ]
            )));
        }
        return Ok(requester);
    };
    let mut checks = Vec::new();
    let mut target = UserInfo { name: user.into(), ..UserInfo::default() };
    match target.service_account_parts() {
        Some((ns, name)) => {
            checks.push(impersonation_check("impersonate", "serviceaccounts", ns, name, ""));
            if groups.is_empty() {
                target.groups = vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{ns}")];
            }
        }
        None => checks.push(impersonation_check("impersonate", "users", "", user, "")),
    }
    for g in &groups {
        checks.push(impersonation_check("impersonate", "groups", "", g, ""));
        target.groups.push(g.to_string());
    }
    if let Some(uid) = uids.first() {
        checks.push(impersonation_check("impersonate", "uids", "", uid, ""));
        target.uid = uid.to_string();
    }
    for (k, v) in extras {
        checks.push(impersonation_check("impersonate", "userextras", "", v, &k));
        target.extra.entry(k).or_default().push(v.to_string());
    }
    {
        let st = ctx.state.read();
        for attrs in &checks {
            let d = authorizer::authorize(&st, &requester, attrs);
            if !d.allowed {
                return Err(authorizer::forbidden(&requester, attrs, &d.reason));
            }
        }
    }
    if target.name == ANONYMOUS {
        if !target.in_group(UNAUTHENTICATED) {
            target.groups.push(UNAUTHENTICATED.into());
        }
    } else if !target.in_group(AUTHENTICATED) {
        target.groups.push(AUTHENTICATED.into());
    }
    Ok(Arc::new(target))
}

/// The first value of a query parameter (Go's `url.Values.Get`).
fn query_value(query: Option<&str>, key: &str) -> Option<String> {
    url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

/// The attributes of a request (`RequestInfoFactory.NewRequestInfo`): resource requests are
/// the paths below `/api/v1` and `/apis/<group>/<version>`, everything else is a path.
pub(crate) fn request_attributes(method: &Method, path: &str, query: Option<&str>) -> Attributes {
    let non_resource = || Attributes {
        verb: match *method {
            Method::HEAD => "get".into(),
            ref m => m.as_str().to_ascii_lowercase(),
        },
        resource: None,
        path: path.to_string(),
    };
    let Ok(ApiPath::Resource { group, rest, .. }) = ApiPath::parse(path) else { return non_resource() };
    let mut parts: Vec<&str> = rest.iter().map(|s| s.as_ref()).collect();
    let mut namespace = String::new();
    if parts.first() == Some(&"namespaces") && parts.len() > 1 {
        namespace = parts[1].to_string();
        if parts.len() > 2 && !matches!(parts[2], "status" | "finalize") {
            parts.drain(..2);
        }
    }
    let resource = parts.first().copied().unwrap_or_default().to_string();
    let mut name = parts.get(1).copied().unwrap_or_default().to_string();
    let subresource = parts.get(2).copied().unwrap_or_default().to_string();
    let watch = query_value(query, "watch").is_some_and(|v| !(v == "0" || v.eq_ignore_ascii_case("false")));
    let verb = match (method, name.is_empty()) {
        (&Method::GET | &Method::HEAD, false) => "get",
        (&Method::GET | &Method::HEAD, true) if watch => "watch",
        (&Method::GET | &Method::HEAD, true) => "list",
        (&Method::POST, _) => "create",
        (&Method::PUT, _) => "update",
        (&Method::PATCH, _) => "patch",
        (&Method::DELETE, false) => "delete",
        (&Method::DELETE, true) => "deletecollection",
        (m, _) => return Attributes { verb: m.as_str().to_ascii_lowercase(), ..non_resource() },
    };
    // A list or watch of one object by `metadata.name` is authorized as of that name.
    if matches!(verb, "list" | "watch") {
        let selector = query_value(query, "fieldSelector").unwrap_or_default();
        let mut by_name = selector.split(',').filter_map(|r| {
            let r = r.trim();
            r.strip_prefix("metadata.name==").or_else(|| r.strip_prefix("metadata.name="))
        });
        if let (Some(n), false) = (by_name.next(), selector.contains(',')) {
            name = n.to_string();
        }
    }
    Attributes {
        verb: verb.into(),
        resource: Some(ResourceAttributes { group: group.into_owned(), resource, subresource, namespace, name }),
        path: path.to_string(),
    }
}

/// A 409 Conflict for this update or patch if a [`super::ConflictFault`] still holds for it
/// (one of its writes is used up).
fn injected_conflict(ctx: &Context, user: &UserInfo, req: &Request) -> Option<ApiError> {
    if !matches!(*req.method(), Method::PUT | Method::PATCH) {
        return None;
    }
    let mut faults = ctx.conflicts.lock();
    if faults.is_empty() {
        return None;
    }
    let attrs = request_attributes(req.method(), req.uri().path(), req.uri().query());
    let r = attrs.resource?;
    let fault = faults.iter_mut().find(|f| {
        f.count > 0
            && f.user == user.name
            && f.namespace == r.namespace
            && f.group == r.group
            && f.resource == r.resource
            && f.subresource == r.subresource
    })?;
    fault.count -= 1;
    Some(ApiError::conflict(&r.group, &r.resource, &r.name))
}

/// Authenticates, impersonates and authorizes a request, then hands it on with its
/// [`Requester`].
pub(super) async fn authenticate_and_authorize(
    State(ctx): State<Arc<Context>>,
    mut req: Request,
    next: Next,
) -> Response {
    let peer = req.extensions().get::<axum::extract::ConnectInfo<Peer>>().map(|c| c.0.clone());
    let user = match authenticate(&ctx, req.headers(), peer.as_ref()).and_then(|u| impersonate(&ctx, u, req.headers()))
    {
        Ok(u) => u,
        Err(e) => return e.into_response(),
    };
    {
        let st = ctx.state.read();
        if st.rbac {
            let attrs = request_attributes(req.method(), req.uri().path(), req.uri().query());
            let d = authorizer::authorize(&st, &user, &attrs);
            if !d.allowed {
                return authorizer::forbidden(&user, &attrs, &d.reason).into_response();
            }
        }
    }
    if let Some(e) = injected_conflict(&ctx, &user, &req) {
        return e.into_response();
    }
    req.extensions_mut().insert(Requester(user));
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(method: Method, uri: &str) -> (String, Option<ResourceAttributes>) {
        let (path, query) = uri.split_once('?').map_or((uri, None), |(p, q)| (p, Some(q)));
        let a = request_attributes(&method, path, query);
        (a.verb, a.resource)
    }

    fn res(group: &str, resource: &str, sub: &str, ns: &str, name: &str) -> Option<ResourceAttributes> {
        Some(ResourceAttributes {
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: ns.into(),
            name: name.into(),
        })
    }

    #[test]
    fn request_info_as_kube_apiserver_reads_it() {
        assert_eq!(attrs(Method::GET, "/api/v1/namespaces/a/pods"), ("list".into(), res("", "pods", "", "a", "")));
        assert_eq!(
            attrs(Method::GET, "/api/v1/namespaces/a/pods?watch=1&fieldSelector=metadata.name%3Dp"),
            ("watch".into(), res("", "pods", "", "a", "p"))
        );
        assert_eq!(attrs(Method::GET, "/api/v1/namespaces/a"), ("get".into(), res("", "namespaces", "", "a", "a")));
        assert_eq!(
            attrs(Method::PUT, "/api/v1/namespaces/a/finalize"),
            ("update".into(), res("", "namespaces", "finalize", "a", "a"))
        );
        assert_eq!(
            attrs(Method::PATCH, "/apis/resource.k8s.io/v1/namespaces/a/resourceclaims/c/status"),
            ("patch".into(), res("resource.k8s.io", "resourceclaims", "status", "a", "c"))
        );
        assert_eq!(
            attrs(Method::DELETE, "/apis/apps/v1/deployments"),
            ("deletecollection".into(), res("apps", "deployments", "", "", ""))
        );
        assert_eq!(attrs(Method::GET, "/apis/apps/v1"), ("get".into(), None));
        assert_eq!(attrs(Method::POST, "/version"), ("post".into(), None));
    }
}
