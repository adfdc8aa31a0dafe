//! Who makes a request (`apiserver/pkg/authentication/user.Info`): carried by every write so the
//! registry can authorize what only the written object reveals (DRA's `resourceclaims/binding`).

use std::collections::BTreeMap;

/// The user anonymous requests run as.
pub(crate) const ANONYMOUS: &str = "system:anonymous";
/// The group of anonymous requests.
pub(crate) const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The group of every authenticated request.
pub(crate) const AUTHENTICATED: &str = "system:authenticated";
/// The group that every authorizer allows everything (kube-apiserver's privileged group).
pub(crate) const MASTERS: &str = "system:masters";
/// The prefix of service account user names.
pub(crate) const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// An authenticated (or anonymous) user.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    /// The user name (`system:serviceaccount:<ns>:<name>` for service accounts).
    pub name: String,
    /// A unique id, when the authenticator gives one.
    pub uid: String,
    /// The groups the user is in.
    pub groups: Vec<String>,
    /// Extra attributes (impersonation can set them).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The anonymous user (`--anonymous-auth=true`).
    pub fn anonymous() -> Self {
        Self { name: ANONYMOUS.into(), groups: vec![UNAUTHENTICATED.into()], ..Self::default() }
    }

    /// A user with the given groups, plus `system:authenticated`.
    pub fn user(name: &str, groups: &[&str]) -> Self {
        let mut groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        if !groups.iter().any(|g| g == AUTHENTICATED) {
            groups.push(AUTHENTICATED.into());
        }
        Self { name: name.into(), groups, ..Self::default() }
    }

    /// The service account `namespace/name`, in the groups kube-apiserver gives it.
    pub fn service_account(namespace: &str, name: &str) -> Self {
        Self {
            name: format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                AUTHENTICATED.into(),
            ],
            ..Self::default()
        }
    }

    /// `(namespace, name)` when this is a service account.
    pub fn service_account_parts(&self) -> Option<(&str, &str)> {
        self.name.strip_prefix(SERVICE_ACCOUNT_PREFIX)?.split_once(':')
    }

    /// An identity as the command lines name it: `serviceaccount:<namespace>/<name>` or
    /// `user:<name>[:<group>,<group>…]`.
    pub fn from_spec(spec: &str) -> Result<Self, String> {
        if let Some(rest) = spec.strip_prefix("serviceaccount:") {
            let (ns, name) = rest
                .split_once('/')
                .filter(|(ns, name)| !ns.is_empty() && !name.is_empty())
                .ok_or_else(|| format!("{spec:?}: expected serviceaccount:<namespace>/<name>"))?;
            return Ok(Self::service_account(ns, name));
        }
        if let Some(rest) = spec.strip_prefix("user:") {
            let (name, groups) = rest.split_once(':').unwrap_or((rest, ""));
            if name.is_empty() {
                return Err(format!("{spec:?}: expected user:<name>[:<group>,…]"));
            }
            let groups: Vec<&str> = groups.split(',').filter(|g| !g.is_empty()).collect();
            return Ok(Self::user(name, &groups));
        }
        Err(format!("{spec:?}: expected serviceaccount:<namespace>/<name> or user:<name>[:<group>,…]"))
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}
