//! The webhooks of the stored `MutatingWebhookConfiguration`s and
//! `ValidatingWebhookConfiguration`s, and which requests each one is called for: rules
//! (operations, groups, versions, resources with their `*` and `/subresource` forms, scope),
//! `namespaceSelector`, `objectSelector` and `matchConditions`, in the order of
//! `apiserver/pkg/admission/plugin/webhook/generic/webhook.go` (`ShouldCallHook`) and
//! `predicates/rules/rules.go` at
//! <https://github.com/kubernetes/kubernetes/tree/v1.37.2/staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook>.
//!
//! `matchPolicy: Equivalent` is read as `Exact`: every kind here is served in one version.

use super::client::Target;
use crate::registry::State;
use crate::registry::apps::workload::selector_matches;
use crate::storage::StorageKey;
use serde_json::Value;
use std::sync::LazyLock;
use std::time::Duration;

static MUTATING: LazyLock<StorageKey> =
    LazyLock::new(|| StorageKey::new("admissionregistration.k8s.io", "mutatingwebhookconfigurations"));
static VALIDATING: LazyLock<StorageKey> =
    LazyLock::new(|| StorageKey::new("admissionregistration.k8s.io", "validatingwebhookconfigurations"));
static SERVICES: LazyLock<StorageKey> = LazyLock::new(|| StorageKey::new("", "services"));
static ENDPOINT_SLICES: LazyLock<StorageKey> = LazyLock::new(|| StorageKey::new("discovery.k8s.io", "endpointslices"));

/// The operation an admission request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    /// As rules and `AdmissionReview`s spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// What a webhook is asked about.
pub(crate) struct Attributes<'a> {
    pub operation: Operation,
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    /// The object's namespace; for a `Namespace` itself, its name (as kube-apiserver sets it).
    pub namespace: &'a str,
    pub name: &'a str,
    pub old: Option<&'a Value>,
    pub dry_run: bool,
    pub user: Option<&'a crate::storage::UserInfo>,
    pub field_manager: Option<&'a str>,
}

/// One webhook of a configuration.
#[derive(Debug, Clone)]
pub(crate) struct Hook {
    pub name: String,
    pub target: Result<Target, String>,
    pub ca_bundle: Vec<u8>,
    rules: Vec<Rule>,
    pub fail_closed: bool,
    namespace_selector: Value,
    object_selector: Value,
    /// `sideEffects` is `None` or `NoneOnDryRun`: it may be called for a dry run.
    pub dry_run_safe: bool,
    pub timeout: Duration,
    pub reinvoke_if_needed: bool,
    match_conditions: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
pub(crate) struct Rule {
    operations: Vec<String>,
    groups: Vec<String>,
    versions: Vec<String>,
    resources: Vec<String>,
    scope: String,
}

impl Rule {
    /// A `RuleWithOperations` (or a policy's `NamedRuleWithOperations`, whose names the caller
    /// checks).
    pub fn parse(r: &Value) -> Rule {
        Rule {
            operations: strings(&r["operations"]),
            groups: strings(&r["apiGroups"]),
            versions: strings(&r["apiVersions"]),
            resources: strings(&r["resources"]),
            scope: r["scope"].as_str().unwrap_or("*").to_string(),
        }
    }

    /// `rules.Matcher`: the operation, group, version, resource (`*`, `res/sub`, `*/sub`) and
    /// scope all match.
    pub fn matches(&self, a: &Attributes) -> bool {
        let any = |list: &[String], v: &str| list.iter().any(|x| x == "*" || x == v);
        any(&self.operations, a.operation.as_str())
            && any(&self.groups, a.group)
            && any(&self.versions, a.version)
            && self.resources.iter().any(|res| {
                let (res, sub) = res.split_once('/').unwrap_or((res, ""));
                (res == "*" || res == a.resource) && (sub == "*" || sub == a.subresource)
            })
            && match self.scope.as_str() {
                "Cluster" => a.resource == "namespaces" || a.namespace.is_empty(),
                "Namespaced" => a.resource != "namespaces" && !a.namespace.is_empty(),
                _ => true,
            }
    }
}

/// The labels a namespace selector is matched against: a namespace's own create or update is
/// matched on the labels it is written with (`GetNamespaceLabels`), anything else on its
/// namespace's.
pub(crate) fn namespace_labels_for<'a>(
    a: &Attributes,
    object: Option<&'a Value>,
    namespace_labels: Option<&'a Value>,
) -> Option<&'a Value> {
    if a.resource == "namespaces" && a.group.is_empty() && a.subresource.is_empty() && a.operation != Operation::Delete
    {
        object.and_then(|o| o["metadata"].get("labels"))
    } else {
        namespace_labels
    }
}

/// `namespace.Matcher.MatchNamespaceSelector`: cluster-scoped objects (but namespaces) always
/// match; `labels` are from [`namespace_labels_for`].
pub(crate) fn namespace_selector_matches(selector: &Value, a: &Attributes, labels: Option<&Value>) -> bool {
    if a.namespace.is_empty() && a.resource != "namespaces" {
        return true;
    }
    is_empty_selector(selector) || selector_matches(selector, labels)
}

/// `object.Matcher.MatchObjectSelector`: the new or the old object's labels match.
pub(crate) fn object_selector_matches(selector: &Value, new: Option<&Value>, old: Option<&Value>) -> bool {
    is_empty_selector(selector)
        || [new, old].into_iter().flatten().any(|o| selector_matches(selector, o["metadata"].get("labels")))
}

/// Whether any webhook configuration is stored.
pub(crate) fn any_configured(st: &State) -> bool {
    [&*MUTATING, &*VALIDATING].into_iter().any(|k| st.store.collection(k).is_some_and(|c| !c.is_empty()))
}

/// The webhooks configured, configurations by name and webhooks in their order (kube-apiserver
/// sorts the configurations by name), with service references resolved to an endpoint.
pub(crate) fn configured(st: &State, mutating: bool) -> Vec<Hook> {
    let key: &StorageKey = if mutating { &MUTATING } else { &VALIDATING };
    let Some(configs) = st.store.collection(key) else { return Vec::new() };
    let mut hooks = Vec::new();
    for config in configs.values() {
        let value = config.shared_value();
        for w in value["webhooks"].as_array().into_iter().flatten() {
            hooks.push(parse(Some(st), w, mutating));
        }
    }
    hooks
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
}

fn parse(st: Option<&State>, w: &Value, mutating: bool) -> Hook {
    let timeout = w["timeoutSeconds"].as_u64().unwrap_or(10);
    let client = &w["clientConfig"];
    let ca_bundle = client["caBundle"]
        .as_str()
        .and_then(|b| base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b).ok())
        .unwrap_or_default();
    let side_effects = w["sideEffects"].as_str().unwrap_or("");
    Hook {
        name: w["name"].as_str().unwrap_or_default().to_string(),
        target: target(st, client, Some(timeout)),
        ca_bundle,
        rules: w["rules"].as_array().into_iter().flatten().map(Rule::parse).collect(),
        fail_closed: w["failurePolicy"].as_str() != Some("Ignore"),
        namespace_selector: w["namespaceSelector"].clone(),
        object_selector: w["objectSelector"].clone(),
        dry_run_safe: matches!(side_effects, "None" | "NoneOnDryRun"),
        timeout: Duration::from_secs(timeout),
        reinvoke_if_needed: mutating && w["reinvocationPolicy"].as_str() == Some("IfNeeded"),
        match_conditions: w["matchConditions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["name"].as_str().unwrap_or_default().to_string(),
                    c["expression"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect(),
    }
}

/// A URL as it is, or a service reference resolved as kube-apiserver's endpoint resolver does
/// (`--enable-aggregator-routing`): the Service's port, then a ready endpoint of its
/// EndpointSlices; the certificate must name `<service>.<namespace>.svc`. An admission call
/// carries its timeout in the query (`?timeout=10s`); a conversion call none.
pub(crate) fn target(st: Option<&State>, client: &Value, timeout: Option<u64>) -> Result<Target, String> {
    let query = timeout.map(|t| format!("timeout={t}s"));
    let with_query = |path: &str, own: Option<&str>| match (own, &query) {
        (Some(q), Some(t)) => format!("{path}?{q}&{t}"),
        (Some(q), None) => format!("{path}?{q}"),
        (None, Some(t)) => format!("{path}?{t}"),
        (None, None) => path.to_string(),
    };
    if let Some(url) = client["url"].as_str() {
        let parsed = url::Url::parse(url).map_err(|e| format!("invalid url {url:?}: {e}"))?;
        let host = parsed.host_str().unwrap_or_default().trim_matches(['[', ']']).to_string();
        let port = parsed.port_or_known_default().unwrap_or(443);
        // client-go joins the URL's path into its request path (`path.Join`), which cleans it:
        // envtest's `https://host//mutate-…` is called at `/mutate-…`.
        let path = clean_path(parsed.path());
        let path = path.as_str();
        let path_and_query = with_query(path, parsed.query());
        let connect = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
        let url = format!("{}://{}{path_and_query}", parsed.scheme(), connect);
        return Ok(Target { url, server_name: host, connect, path_and_query });
    }
    let svc = &client["service"];
    let (ns, name) = (svc["namespace"].as_str().unwrap_or_default(), svc["name"].as_str().unwrap_or_default());
    let port = svc["port"].as_i64().unwrap_or(443);
    let path = clean_path(svc["path"].as_str().unwrap_or("/"));
    let path_and_query = with_query(&path, None);
    let host = format!("{name}.{ns}.svc");
    let url = format!("https://{host}:{port}{path_and_query}");
    let st = st.ok_or_else(|| format!("service \"{name}\" not found"))?;
    let service =
        st.store.get(&SERVICES, ns, name).ok_or_else(|| format!("service \"{name}\" not found"))?.shared_value();
    let service_port = service["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["port"].as_i64() == Some(port))
        .ok_or_else(|| format!("no service port {port} found for service \"{name}\""))?;
    let port_name = service_port["name"].as_str().unwrap_or("");
    for slice in st.store.collection(&ENDPOINT_SLICES).into_iter().flat_map(|c| c.values()) {
        let slice = slice.shared_value();
        if slice["metadata"]["namespace"].as_str() != Some(ns)
            || slice["metadata"]["labels"]["kubernetes.io/service-name"].as_str() != Some(name)
        {
            continue;
        }
        let Some(target_port) = slice["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"].as_str().unwrap_or("") == port_name)
            .and_then(|p| p["port"].as_i64())
        else {
            continue;
        };
        let ready = slice["endpoints"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["conditions"]["ready"].as_bool() != Some(false))
            .and_then(|e| e["addresses"][0].as_str());
        if let Some(address) = ready {
            let connect = if address.contains(':') {
                format!("[{address}]:{target_port}")
            } else {
                format!("{address}:{target_port}")
            };
            return Ok(Target { url, server_name: host, connect, path_and_query });
        }
    }
    Err(format!("service {ns}/{name} has no endpoints"))
}

/// Go's `path.Clean` of an absolute path: no empty, `.` or `..` segments, no trailing slash.
fn clean_path(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            s => out.push(s),
        }
    }
    format!("/{}", out.join("/"))
}

impl Hook {
    /// Whether one of its rules matches the request.
    pub fn rules_match(&self, a: &Attributes) -> bool {
        self.rules.iter().any(|r| r.matches(a))
    }

    /// Its namespace selector ([`namespace_selector_matches`]).
    pub fn namespace_matches(&self, a: &Attributes, labels: Option<&Value>) -> bool {
        namespace_selector_matches(&self.namespace_selector, a, labels)
    }

    /// Its object selector ([`object_selector_matches`]).
    pub fn object_matches(&self, new: Option<&Value>, old: Option<&Value>) -> bool {
        object_selector_matches(&self.object_selector, new, old)
    }

    /// `matchconditions.matcher.Match`: `Ok(false)` when one condition is false (whatever the
    /// others gave); errors only matter when none is false, and then as the failure policy says.
    pub fn conditions_match(&self, vars: &[(&str, &Value)]) -> Result<bool, String> {
        let mut errors = Vec::new();
        for (name, expression) in &self.match_conditions {
            match apimachinery::cel::evaluate_bool(expression, vars) {
                Ok(false) => return Ok(false),
                Ok(true) => {}
                Err(e) => errors.push(format!("expression '{name}' resulted in error: {e}")),
            }
        }
        match errors.is_empty() {
            true => Ok(true),
            false if self.fail_closed => Err(errors.join(", ")),
            false => Ok(false),
        }
    }
}

fn is_empty_selector(sel: &Value) -> bool {
    let empty = |k: &str| {
        sel.get(k).is_none_or(|v| {
            v.as_object().is_some_and(|m| m.is_empty()) || v.as_array().is_some_and(|a| a.is_empty()) || v.is_null()
        })
    };
    empty("matchLabels") && empty("matchExpressions")
}

/// The labels of namespace `name`, if it exists.
pub(crate) fn namespace_labels(st: &State, name: &str) -> Option<Value> {
    let ns = st.store.get(crate::registry::namespaces_key(), "", name)?;
    Some(ns.shared_value()["metadata"]["labels"].clone())
}

/// Label maps as `selector_matches` reads them (for tests).
#[cfg(test)]
fn labels(pairs: &[(&str, &str)]) -> Value {
    Value::Object(pairs.iter().map(|(k, v)| (k.to_string(), Value::String(v.to_string()))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hook(rules: Value, extra: Value) -> Hook {
        let mut w =
            json!({"name": "h.example.com", "clientConfig": {"url": "https://127.0.0.1:9443/x"}, "rules": rules});
        for (k, v) in extra.as_object().unwrap() {
            w[k] = v.clone();
        }
        parse(None, &w, true)
    }

    fn attrs<'a>(resource: &'a str, sub: &'a str, ns: &'a str, op: Operation) -> Attributes<'a> {
        Attributes {
            operation: op,
            group: "ray.io",
            version: "v1",
            kind: "RayCluster",
            resource,
            subresource: sub,
            namespace: ns,
            name: "x",
            old: None,
            dry_run: false,
            user: None,
            field_manager: None,
        }
    }

    #[test]
    fn paths_are_cleaned_as_client_go_joins_them() {
        assert_eq!(clean_path("//mutate-batch-v1-job"), "/mutate-batch-v1-job");
        assert_eq!(clean_path("/a/./b/../c/"), "/a/c");
        assert_eq!(clean_path(""), "/");
        let h = hook(json!([]), json!({"clientConfig": {"url": "https://127.0.0.1:9443//mutate?x=1"}}));
        let t = h.target.unwrap();
        assert_eq!(t.path_and_query, "/mutate?x=1&timeout=10s");
        assert_eq!(t.url, "https://127.0.0.1:9443/mutate?x=1&timeout=10s");
    }

    #[test]
    fn rules_read_stars_subresources_and_scope() {
        let rule = |res: &str, scope: &str| {
            hook(
                json!([{"operations": ["CREATE"], "apiGroups": ["ray.io"], "apiVersions": ["*"], "resources": [res], "scope": scope}]),
                json!({}),
            )
        };
        let create = |r, s, ns| attrs(r, s, ns, Operation::Create);
        assert!(rule("rayclusters", "*").rules_match(&create("rayclusters", "", "ns")));
        assert!(!rule("rayclusters", "*").rules_match(&create("rayclusters", "status", "ns")));
        assert!(rule("rayclusters/*", "*").rules_match(&create("rayclusters", "status", "ns")));
        assert!(rule("rayclusters/*", "*").rules_match(&create("rayclusters", "", "ns")));
        assert!(rule("*/status", "*").rules_match(&create("rayclusters", "status", "ns")));
        assert!(!rule("*/status", "*").rules_match(&create("rayclusters", "", "ns")));
        assert!(rule("*", "Namespaced").rules_match(&create("rayclusters", "", "ns")));
        assert!(!rule("*", "Cluster").rules_match(&create("rayclusters", "", "ns")));
        assert!(!rule("rayclusters", "*").rules_match(&attrs("rayclusters", "", "ns", Operation::Update)));
    }

    #[test]
    fn selectors_and_conditions() {
        let h = hook(
            json!([]),
            json!({
                "namespaceSelector": {"matchLabels": {"team": "a"}},
                "objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
                "matchConditions": [{"name": "named", "expression": "object.metadata.name != 'ignored'"}],
            }),
        );
        let a = attrs("rayclusters", "", "ns", Operation::Create);
        assert!(h.namespace_matches(&a, Some(&labels(&[("team", "a")]))));
        assert!(!h.namespace_matches(&a, Some(&labels(&[("team", "b")]))));
        assert!(h.namespace_matches(&attrs("clusterqueues", "", "", Operation::Create), None));
        let labelled = json!({"metadata": {"name": "n", "labels": {"skip": "1"}}});
        assert!(!h.object_matches(Some(&labelled), None));
        assert!(h.object_matches(Some(&json!({"metadata": {"name": "n"}})), None));
        let obj = json!({"metadata": {"name": "ignored"}});
        assert_eq!(h.conditions_match(&[("object", &obj)]), Ok(false));
        let obj = json!({"metadata": {"name": "kept"}});
        assert_eq!(h.conditions_match(&[("object", &obj)]), Ok(true));
        // An error fails closed by default.
        assert!(h.conditions_match(&[]).is_err());
    }
}
