//! The built-in kinds beyond the workloads: LimitRange and ResourceQuota validation
//! (`pkg/apis/core/validation/validation.go` v1.37.2, cases in the spirit of its
//! `TestValidateLimitRange` and `TestValidateResourceQuota`), ReplicationController's scale, the
//! authentication reviews, and a write of each generic kind.

use crate::common::{causes, get, post, raw, raw_with};
use fake_apiserver::ApiServer;
use http::{Method, StatusCode};
use serde_json::{Value, json};

/// The causes of a 422 as sorted (field, type) pairs.
fn sorted_causes(status: &Value) -> Vec<(String, String)> {
    let mut out = causes(status);
    out.sort();
    out
}

/// What a case is, what it sends, and the causes kube-apiserver answers.
type Case = (&'static str, Value, Vec<(&'static str, &'static str)>);

/// `(type, field)` pairs as sorted (field, type) pairs.
fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> =
        pairs.iter().map(|(reason, field)| (field.to_string(), reason.to_string())).collect();
    v.sort();
    v
}

fn limit_range(name: &str, limits: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": name}, "spec": {"limits": limits}})
}

#[tokio::test]
async fn limit_ranges_are_validated_as_kube_apiserver_does() {
    let server = ApiServer::default();
    let url = "/api/v1/namespaces/default/limitranges";
    let valid = limit_range(
        "ok",
        json!([{"type": "Container", "min": {"cpu": "100m"}, "max": {"cpu": "2"}, "default": {"cpu": "1"}, "defaultRequest": {"cpu": "500m"}, "maxLimitRequestRatio": {"cpu": "4"}}]),
    );
    let (code, body) = post(&server, url, &valid).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let cases: Vec<Case> = vec![
        (
            // A container limit's default is its max and its default request that default
            // (`SetDefaults_LimitRangeItem`), so the min is over those too.
            "min over max",
            json!([{"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}}]),
            vec![
                ("FieldValueInvalid", "spec.limits[0].defaultRequest[cpu]"),
                ("FieldValueInvalid", "spec.limits[0].default[cpu]"),
                ("FieldValueInvalid", "spec.limits[0].min[cpu]"),
            ],
        ),
        (
            "defaults on the Pod type",
            json!([{"type": "Pod", "max": {"cpu": "2"}, "default": {"cpu": "1"}, "defaultRequest": {"cpu": "1"}}]),
            vec![
                ("FieldValueForbidden", "spec.limits[0].default"),
                ("FieldValueForbidden", "spec.limits[0].defaultRequest"),
            ],
        ),
        (
            "a PVC limit without storage bounds (upstream's path has a `limits` child)",
            json!([{"type": "PersistentVolumeClaim", "max": {"cpu": "1"}}]),
            vec![("FieldValueRequired", "spec.limits[0].limits")],
        ),
        (
            "the same type twice",
            json!([{"type": "Container", "max": {"cpu": "1"}}, {"type": "Container", "max": {"cpu": "2"}}]),
            vec![("FieldValueDuplicate", "spec.limits[1].type")],
        ),
        (
            "an unknown unqualified type",
            json!([{"type": "Node", "max": {"cpu": "1"}}]),
            vec![("FieldValueInvalid", "spec.limits[0].type")],
        ),
        (
            "a resource no container requests (and the defaults it gives)",
            json!([{"type": "Container", "max": {"pods": "1"}}]),
            vec![
                ("FieldValueInvalid", "spec.limits[0].defaultRequest[pods]"),
                ("FieldValueInvalid", "spec.limits[0].default[pods]"),
                ("FieldValueInvalid", "spec.limits[0].max[pods]"),
            ],
        ),
        (
            "a ratio under one, and default request over default",
            json!([{"type": "Container", "default": {"memory": "1Gi"}, "defaultRequest": {"memory": "2Gi"}, "maxLimitRequestRatio": {"memory": "500m"}}]),
            vec![
                ("FieldValueInvalid", "spec.limits[0].defaultRequest[memory]"),
                ("FieldValueInvalid", "spec.limits[0].maxLimitRequestRatio[memory]"),
            ],
        ),
        (
            "an extended resource whose default and default request differ",
            json!([{"type": "Container", "default": {"example.com/gpu": "2"}, "defaultRequest": {"example.com/gpu": "1"}}]),
            vec![("FieldValueInvalid", "spec.limits[0].defaultRequest[example.com/gpu]")],
        ),
    ];
    for (i, (what, limits, want)) in cases.into_iter().enumerate() {
        let (code, status) = post(&server, url, &limit_range(&format!("bad-{i}"), limits)).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{what}: {status}");
        assert_eq!(sorted_causes(&status), owned(&want), "{what}: {status}");
    }
    let (_, status) = post(
        &server,
        url,
        &limit_range("msg", json!([{"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}}])),
    )
    .await;
    assert!(
        status["message"]
            .as_str()
            .unwrap_or_default()
            .contains("spec.limits[0].min[cpu]: Invalid value: \"2\": min value 2 is greater than max value 1"),
        "{status}"
    );
}

fn quota(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn resource_quotas_are_validated_and_keep_their_scopes() {
    let server = ApiServer::default();
    let url = "/api/v1/namespaces/default/resourcequotas";
    let (code, body) = post(
        &server,
        url,
        &quota("ok", json!({"hard": {"pods": "10", "requests.cpu": "4"}, "scopes": ["NotBestEffort"]})),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let cases: Vec<Case> = vec![
        ("a negative quantity", json!({"hard": {"memory": "-1Gi"}}), vec![("FieldValueInvalid", "spec.hard[memory]")]),
        ("a fraction of a pod", json!({"hard": {"pods": "1500m"}}), vec![("FieldValueInvalid", "spec.hard[pods]")]),
        (
            "a name quota does not know",
            json!({"hard": {"storage": "1Gi"}}),
            vec![("FieldValueInvalid", "spec.hard[storage]")],
        ),
        (
            "an unknown scope",
            json!({"hard": {"pods": "1"}, "scopes": ["Sometimes"]}),
            vec![("FieldValueInvalid", "spec.scopes")],
        ),
        (
            "conflicting scopes",
            json!({"hard": {"pods": "1"}, "scopes": ["Terminating", "NotTerminating"]}),
            vec![("FieldValueInvalid", "spec.scopes")],
        ),
        (
            "a scope that does not apply to the resource",
            json!({"hard": {"requests.cpu": "1"}, "scopes": ["BestEffort"]}),
            vec![("FieldValueInvalid", "spec.scopes")],
        ),
        (
            "a scope selector's In without values",
            json!({"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In"}]}}),
            vec![("FieldValueRequired", "spec.scopeSelector.matchExpressions.values")],
        ),
    ];
    for (i, (what, spec, want)) in cases.into_iter().enumerate() {
        let (code, status) = post(&server, url, &quota(&format!("bad-{i}"), spec)).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{what}: {status}");
        assert_eq!(sorted_causes(&status), owned(&want), "{what}: {status}");
    }
    let (code, status) = raw(
        &server,
        Method::PATCH,
        &format!("{url}/ok"),
        Some("application/merge-patch+json"),
        json!({"spec": {"scopes": ["NotTerminating"]}}).to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{status}");
    assert_eq!(sorted_causes(&status), owned(&[("FieldValueInvalid", "spec.scopes")]), "{status}");
    assert!(status["message"].as_str().unwrap_or_default().contains("field is immutable"), "{status}");
}

#[tokio::test]
async fn a_replication_controller_scales_with_its_map_selector() {
    let server = ApiServer::default();
    let rc = json!({
        "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"app": "web", "tier": "front"}, "template": {
            "metadata": {"labels": {"app": "web", "tier": "front"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    });
    let (code, body) = post(&server, "/api/v1/namespaces/default/replicationcontrollers", &rc).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    assert_eq!(body["metadata"]["generation"], 1);
    let (code, scale) = get(&server, "/api/v1/namespaces/default/replicationcontrollers/web/scale").await;
    assert_eq!(code, StatusCode::OK, "{scale}");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 2);
    assert_eq!(scale["status"]["selector"], "app=web,tier=front");
}

#[tokio::test]
async fn authentication_reviews_name_the_token_and_the_requester() {
    let server = ApiServer::default();
    let token = server.admin_token();
    let bearer = format!("Bearer {token}");
    let send = |body: Value, url: &'static str| {
        let server = &server;
        let bearer = bearer.clone();
        async move {
            raw_with(
                server,
                Method::POST,
                url,
                &[("content-type", Some("application/json")), ("authorization", Some(bearer.as_str()))],
                body.to_string(),
            )
            .await
        }
    };
    let review =
        |t: &str| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": t}});
    let (code, known) = send(review(&token), "/apis/authentication.k8s.io/v1/tokenreviews").await;
    assert_eq!(code, StatusCode::CREATED, "{known}");
    assert_eq!(known["status"]["authenticated"], true, "{known}");
    assert_eq!(known["status"]["user"]["username"], "kproof-admin", "{known}");
    let (code, unknown) = send(review("nobody"), "/apis/authentication.k8s.io/v1/tokenreviews").await;
    assert_eq!(code, StatusCode::CREATED, "{unknown}");
    assert_eq!(unknown["status"], json!({"user": {}}), "authenticated: false is left out, as Go's omitempty does");
    let (code, empty) = send(review(""), "/apis/authentication.k8s.io/v1/tokenreviews").await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{empty}");
    assert_eq!(empty["message"], "token is required for TokenReview in authentication");
    let (code, me) = send(
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{me}");
    assert_eq!(me["status"]["userInfo"]["username"], "kproof-admin", "{me}");
    assert!(me["metadata"]["creationTimestamp"].is_string(), "{me}");
    let (code, _) = get(&server, "/apis/authentication.k8s.io/v1/tokenreviews").await;
    assert_eq!(code, StatusCode::METHOD_NOT_ALLOWED, "reviews are never listed");
}

#[tokio::test]
async fn each_generic_kind_is_written_and_read_back() {
    let server = ApiServer::default();
    let objects = [
        (
            "/apis/networking.k8s.io/v1/ingressclasses",
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "x"}, "spec": {"controller": "example.com/ingress"}}),
        ),
        (
            "/apis/storage.k8s.io/v1/storageclasses",
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "x"}, "provisioner": "example.com/disk"}),
        ),
        (
            "/apis/node.k8s.io/v1/runtimeclasses",
            json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "x"}, "handler": "runc"}),
        ),
        (
            "/apis/apps/v1/namespaces/default/controllerrevisions",
            json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "x"}, "revision": 1}),
        ),
        (
            "/api/v1/namespaces/default/podtemplates",
            json!({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "x"}, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}),
        ),
        (
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "x"}}),
        ),
        (
            "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
            json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "x"}, "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 3}}),
        ),
    ];
    for (url, obj) in objects {
        let (code, body) = post(&server, url, &obj).await;
        assert_eq!(code, StatusCode::CREATED, "{url}: {body}");
        let (code, back) = get(&server, &format!("{url}/x")).await;
        assert_eq!((code, &back["kind"]), (StatusCode::OK, &obj["kind"]), "{url}: {back}");
    }
}

/// Every resource kube-apiserver v1.37.2 serves by default is served, with its scope, kind,
/// short names, verbs and categories (the fake serves more: the scheduling.k8s.io/v1beta1 kinds
/// the upstream backend turns on).
#[tokio::test]
async fn every_resource_kube_apiserver_serves_is_served_alike() {
    let server = ApiServer::default();
    let table = include_str!("../fixtures/kube-apiserver-1.37.2-api-resources.txt");
    let mut mismatches = Vec::new();
    let mut rows = 0;
    for line in table.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let f: Vec<&str> = line.split(' ').collect();
        let [name, short, api_version, namespaced, kind, verbs, categories] = f[..] else {
            panic!("bad fixture line {line:?}")
        };
        rows += 1;
        let url =
            if api_version.contains('/') { format!("/apis/{api_version}") } else { format!("/api/{api_version}") };
        let (_, list) = get(&server, &url).await;
        let Some(r) = list["resources"].as_array().and_then(|a| a.iter().find(|r| r["name"] == name)).cloned() else {
            mismatches.push(format!("{api_version} {name}: not served"));
            continue;
        };
        let joined = |v: &Value| {
            let mut items: Vec<&str> =
                v.as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
            if items.is_empty() {
                return "-".to_string();
            }
            items.sort();
            items.join(",")
        };
        let sorted = |s: &str| {
            let mut items: Vec<&str> = s.split(',').collect();
            items.sort();
            items.join(",")
        };
        let fake = (
            joined(&r["shortNames"]),
            r["namespaced"].to_string(),
            r["kind"].as_str().unwrap_or_default().to_string(),
            joined(&r["verbs"]),
            joined(&r["categories"]),
        );
        let real = (sorted(short), namespaced.to_string(), kind.to_string(), sorted(verbs), sorted(categories));
        if fake != real {
            mismatches.push(format!("{api_version} {name}: fake {fake:?}, kube-apiserver {real:?}"));
        }
    }
    assert_eq!(rows, 71, "the fixture's rows");
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[tokio::test]
async fn the_bindings_resource_binds_the_pod_its_binding_names() {
    let server = ApiServer::default();
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
    let (code, body) = post(&server, "/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}});
    let (code, body) = post(&server, "/api/v1/namespaces/default/bindings", &binding).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    let (_, pod) = get(&server, "/api/v1/namespaces/default/pods/p").await;
    assert_eq!(pod["spec"]["nodeName"], "n1", "{pod}");
    let (code, _) = get(&server, "/api/v1/namespaces/default/bindings").await;
    assert_eq!(code, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn pods_get_their_priority_and_default_tolerations_from_admission() {
    let server = ApiServer::default();
    let (_, classes) = get(&server, "/apis/scheduling.k8s.io/v1/priorityclasses").await;
    let names: Vec<&str> =
        classes["items"].as_array().unwrap().iter().map(|c| c["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["system-cluster-critical", "system-node-critical"], "kube-apiserver's own classes");
    let pod = |name: &str, spec_extra: Value| {
        let mut spec = json!({"containers": [{"name": "c", "image": "i"}]});
        for (k, v) in spec_extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
    };
    let pods = "/api/v1/namespaces/default/pods";
    let (code, p) = post(&server, pods, &pod("plain", json!({}))).await;
    assert_eq!(code, StatusCode::CREATED, "{p}");
    assert_eq!((&p["spec"]["priority"], &p["spec"]["preemptionPolicy"]), (&json!(0), &json!("PreemptLowerPriority")));
    let keys: Vec<&str> =
        p["spec"]["tolerations"].as_array().unwrap().iter().map(|t| t["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]);
    assert_eq!(p["spec"]["tolerations"][0]["tolerationSeconds"], 300);
    // A pod that tolerates everything NoExecute gets no more.
    let (_, p) =
        post(&server, pods, &pod("tolerant", json!({"tolerations": [{"operator": "Exists", "effect": "NoExecute"}]})))
            .await;
    assert_eq!(p["spec"]["tolerations"].as_array().unwrap().len(), 1);
    let (_, p) = post(&server, pods, &pod("critical", json!({"priorityClassName": "system-node-critical"}))).await;
    assert_eq!(p["spec"]["priority"], 2_000_001_000);
    let (code, body) = post(&server, pods, &pod("unknown", json!({"priorityClassName": "nope"}))).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert_eq!(body["message"], "pods \"unknown\" is forbidden: no PriorityClass with name nope was found");
    let (code, body) = post(&server, pods, &pod("mismatch", json!({"priority": 5}))).await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    // A global default class names the priority of pods without one.
    let default = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "batch"},
                         "value": 100, "globalDefault": true, "preemptionPolicy": "Never"});
    assert_eq!(post(&server, "/apis/scheduling.k8s.io/v1/priorityclasses", &default).await.0, StatusCode::CREATED);
    let (_, p) = post(&server, pods, &pod("defaulted", json!({}))).await;
    assert_eq!(
        (&p["spec"]["priorityClassName"], &p["spec"]["priority"], &p["spec"]["preemptionPolicy"]),
        (&json!("batch"), &json!(100), &json!("Never"))
    );
}

#[tokio::test]
async fn a_put_of_a_missing_object_creates_it_only_where_upstream_allows_it() {
    let server = ApiServer::default();
    // AllowCreateOnUpdate is true for Services, Endpoints, LimitRanges, RuntimeClasses (and
    // Leases, Events, the RBAC kinds); a ConfigMap's PUT of a missing object is 404.
    for (path, body, code) in [
        (
            "/api/v1/namespaces/default/limitranges/lr",
            json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"}, "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}}),
            StatusCode::CREATED,
        ),
        (
            "/api/v1/namespaces/default/services/svc",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}),
            StatusCode::CREATED,
        ),
        (
            "/api/v1/namespaces/default/endpoints/ep",
            json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "ep"}}),
            StatusCode::CREATED,
        ),
        (
            "/apis/node.k8s.io/v1/runtimeclasses/rc",
            json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "rc"}, "handler": "runc"}),
            StatusCode::CREATED,
        ),
        (
            "/api/v1/namespaces/default/configmaps/cm",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}),
            StatusCode::NOT_FOUND,
        ),
    ] {
        let (got, answer) = raw(&server, Method::PUT, path, Some("application/json"), body.to_string()).await;
        assert_eq!(got, code, "{path}: {answer}");
    }
}
