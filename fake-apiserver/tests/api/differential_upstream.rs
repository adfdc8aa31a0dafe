//! Disagreements with kube-apiserver v1.37.2 that `kproof differential --generator upstream`
//! found (the corpus drawn from upstream's validation tests, OpenAPI schemas and the request
//! grid), each kept as the answer the real server gave.

use crate::common::{causes, get, post, raw, store_fingerprint};
use fake_apiserver::ApiServer;
use http::{Method, StatusCode};
use serde_json::{Value, json};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const SECRETS: &str = "/api/v1/namespaces/default/secrets";
const PODS: &str = "/api/v1/namespaces/default/pods";
const ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles";
const CLUSTER_ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
const JOBS: &str = "/apis/batch/v1/namespaces/default/jobs";
const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

const JSON: Option<&str> = Some("application/json");
const MERGE: Option<&str> = Some("application/merge-patch+json");
const JSON_PATCH: Option<&str> = Some("application/json-patch+json");
const APPLY: Option<&str> = Some("application/apply-patch+yaml");

async fn configmap(server: &ApiServer, name: &str) -> Value {
    let (code, v) = post(
        server,
        CMS,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}}),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    v
}

fn reason(v: &Value) -> &str {
    v["reason"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_patch_that_removes_the_name_cannot_name_the_object() {
    let server = ApiServer::default();
    configmap(&server, "c").await;
    for body in [r#"{"metadata":null}"#, r#"{"metadata":{"name":null}}"#] {
        let (code, v) = raw(&server, Method::PATCH, &format!("{CMS}/c"), MERGE, body.to_string()).await;
        assert_eq!(code, StatusCode::BAD_REQUEST, "{body}: {v}");
        assert_eq!(v["message"], "the name of the object (c based on URL) was undeterminable: name must be provided");
    }
}

#[tokio::test]
async fn a_resource_version_that_is_not_a_number_is_a_plain_500() {
    let server = ApiServer::default();
    let cm = configmap(&server, "c").await;
    let (code, v) = get(&server, &format!("{CMS}/c?resourceVersion=abc")).await;
    assert_eq!((code, reason(&v)), (StatusCode::INTERNAL_SERVER_ERROR, ""), "{v}");
    assert_eq!(
        v["message"],
        r#"resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax"#
    );
    // A list's storage error is interpreted: 400.
    let (code, v) = get(&server, &format!("{CMS}?resourceVersion=abc")).await;
    assert_eq!((code, reason(&v)), (StatusCode::BAD_REQUEST, "BadRequest"), "{v}");
    assert_eq!(
        v["message"],
        r#"invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax"#
    );
    let mut put = cm.clone();
    put["metadata"]["resourceVersion"] = json!("abc");
    let before = store_fingerprint(&server).await;
    let (code, v) = raw(&server, Method::PUT, &format!("{CMS}/c"), JSON, put.to_string()).await;
    assert_eq!((code, reason(&v)), (StatusCode::INTERNAL_SERVER_ERROR, ""), "{v}");
    assert_eq!(v["message"], r#"strconv.ParseUint: parsing "abc": invalid syntax"#);
    assert_eq!(store_fingerprint(&server).await, before);
}

#[tokio::test]
async fn a_put_with_another_uid_fails_its_storage_precondition() {
    let server = ApiServer::default();
    let mut cm = configmap(&server, "c").await;
    cm["metadata"]["uid"] = json!("6f2d6b52-8bd4-4a8c-9a39-1f0e1f7e2a10");
    let (code, v) = raw(&server, Method::PUT, &format!("{CMS}/c"), JSON, cm.to_string()).await;
    assert_eq!((code, reason(&v)), (StatusCode::CONFLICT, "Conflict"), "{v}");
    assert!(v["message"].as_str().unwrap().contains("Precondition failed: UID in precondition: 6f2d6b52"), "{v}");
    // A patch carries no precondition: the changed uid is immutable.
    let (code, v) = raw(
        &server,
        Method::PATCH,
        &format!("{CMS}/c"),
        MERGE,
        r#"{"metadata":{"uid":"6f2d6b52-8bd4-4a8c-9a39-1f0e1f7e2a10"}}"#.to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(causes(&v), [("metadata.uid".to_string(), "FieldValueInvalid".to_string())]);
}

#[tokio::test]
async fn write_options_are_validated_together_field_manager_first() {
    let server = ApiServer::default();
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}).to_string();
    let long = "m".repeat(129);
    let (code, v) =
        raw(&server, Method::POST, &format!("{CMS}?fieldManager={long}&dryRun=Some&fieldValidation=Loose"), JSON, body)
            .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["details"]["kind"], "CreateOptions");
    let fields: Vec<String> = causes(&v).into_iter().map(|(f, _)| f).collect();
    assert_eq!(fields, ["fieldManager", "dryRun", "fieldValidation"], "{v}");
}

#[tokio::test]
async fn strict_field_validation_refuses_duplicate_fields() {
    let server = ApiServer::default();
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","name":"c"},"data":{"a":"b","a":"c"}}"#;
    let (code, v) = raw(&server, Method::POST, &format!("{CMS}?fieldValidation=Strict"), JSON, body.to_string()).await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(
        v["message"],
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "metadata.name", duplicate field "data.a""#
    );
    let (code, _) = raw(&server, Method::POST, &format!("{CMS}?fieldValidation=Ignore"), JSON, body.to_string()).await;
    assert_eq!(code, StatusCode::CREATED);
}

#[tokio::test]
async fn an_apply_configuration_must_name_its_kind_and_its_types_fail_as_500() {
    let server = ApiServer::default();
    let (code, v) = raw(
        &server,
        Method::PATCH,
        &format!("{SECRETS}/s?fieldManager=m"),
        APPLY,
        r#"{"apiVersion":"v1","metadata":{"name":"s"}}"#.to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(v["message"], "invalid object type: /v1, Kind=");
    let (code, v) = raw(
        &server,
        Method::PATCH,
        &format!("{SECRETS}/s?fieldManager=m"),
        APPLY,
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","creationTimestamp":7}}"#.to_string(),
    )
    .await;
    assert_eq!((code, reason(&v)), (StatusCode::INTERNAL_SERVER_ERROR, ""), "{v}");
}

#[tokio::test]
async fn nulls_decode_as_go_decodes_them() {
    let server = ApiServer::default();
    // A map entry's null is the value type's zero: an empty label value.
    let (code, v) = post(
        &server,
        CMS,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"app": null}}, "data": null}),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    assert_eq!(v["metadata"]["labels"], json!({"app": ""}));
    assert!(v.get("data").is_none(), "{v}");
    // A JSON patch `add` without a value adds null.
    let (code, v) = raw(
        &server,
        Method::PATCH,
        &format!("{CMS}/c"),
        JSON_PATCH,
        r#"[{"op":"add","path":"/metadata/labels/b"}]"#.to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_eq!(v["metadata"]["labels"]["b"], "");
    // A merge patch that is null is not a patch; one that is a list is not an object.
    let (code, v) = raw(&server, Method::PATCH, &format!("{CMS}/c"), MERGE, "null".to_string()).await;
    assert_eq!((code, v["message"].as_str()), (StatusCode::BAD_REQUEST, Some("Invalid JSON Patch")), "{v}");
    // Under Warn (the default) and Strict the patch is decoded into a map to look for unknown
    // fields first, which a list is not (400); under Ignore the list replaces the object, which
    // then fails to decode (422 on `patch`).
    let (code, v) = raw(&server, Method::PATCH, &format!("{CMS}/c"), MERGE, "[]".to_string()).await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(
        v["message"],
        "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}"
    );
    let (code, v) =
        raw(&server, Method::PATCH, &format!("{CMS}/c?fieldValidation=Ignore"), MERGE, "[]".to_string()).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(causes(&v), [("patch".to_string(), "FieldValueInvalid".to_string())]);
}

#[tokio::test]
async fn a_delete_body_is_the_options_and_must_be_delete_options() {
    let server = ApiServer::default();
    configmap(&server, "c").await;
    let (code, v) =
        raw(&server, Method::DELETE, &format!("{CMS}/c"), JSON, r#"{"kind":"Bogus","apiVersion":"v1"}"#.to_string())
            .await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{v}");
    assert!(v["message"].as_str().unwrap().starts_with(r#"no kind "Bogus" is registered for version "v1""#), "{v}");
    // With a body, the query is not read: its bad propagation policy goes unnoticed.
    let (code, v) = raw(
        &server,
        Method::DELETE,
        &format!("{CMS}/c?propagationPolicy=Sideways"),
        JSON,
        r#"{"kind":"DeleteOptions","apiVersion":"v1"}"#.to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{v}");
}

#[tokio::test]
async fn object_meta_rules_of_create_and_update() {
    let server = ApiServer::default();
    let both = json!({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "f", "finalizers": ["orphan", "foregroundDeletion"]}});
    let (code, v) = post(&server, CMS, &both).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(causes(&v), [("metadata.finalizers".to_string(), "FieldValueInvalid".to_string())]);
    let generate =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "g", "generateName": "Not_A.Name "}});
    let (code, v) = post(&server, CMS, &generate).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(causes(&v), [("metadata.generateName".to_string(), "FieldValueInvalid".to_string())]);
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "e", "generation": -1}, "eventTime": "2026-01-02T03:04:05.000000Z",
        "reportingController": "example.com/c", "reportingInstance": "i", "action": "A", "reason": "R", "type": "Normal",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}});
    let (code, v) = post(&server, EVENTS, &event).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert!(causes(&v).contains(&("metadata.generation".to_string(), "FieldValueInvalid".to_string())), "{v}");
    // An update may not set a grace period the object does not have.
    configmap(&server, "c").await;
    let (code, v) = raw(
        &server,
        Method::PATCH,
        &format!("{CMS}/c"),
        MERGE,
        r#"{"metadata":{"deletionGracePeriodSeconds":30}}"#.to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(causes(&v), [("metadata.deletionGracePeriodSeconds".to_string(), "FieldValueInvalid".to_string())]);
}

#[tokio::test]
async fn an_empty_list_in_a_jobs_template_is_no_change() {
    let server = ApiServer::default();
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "w", "image": "busybox"}]}}}});
    let (code, v) = post(&server, JOBS, &job).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let patch = r#"{"spec":{"template":{"spec":{"containers":[{"name":"w","image":"busybox","ports":[]}]}}}}"#;
    let (code, v) = raw(&server, Method::PATCH, &format!("{JOBS}/j"), MERGE, patch.to_string()).await;
    assert_eq!(code, StatusCode::OK, "{v}");
}

#[tokio::test]
async fn rbac_and_pod_security_context_rules() {
    let server = ApiServer::default();
    let agg = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "a"},
                     "aggregationRule": {}});
    let (code, v) = post(&server, CLUSTER_ROLES, &agg).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(causes(&v), [("aggregationRule.clusterRoleSelectors".to_string(), "FieldValueRequired".to_string())]);
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"},
                      "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
    assert_eq!(post(&server, ROLES, &role).await.0, StatusCode::CREATED);
    // A null rule is an empty rule, which misses everything.
    let (code, v) = raw(
        &server,
        Method::PATCH,
        &format!("{ROLES}/r"),
        JSON_PATCH,
        r#"[{"op":"replace","path":"/rules/0","value":null}]"#.to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(causes(&v).len(), 3, "{v}");
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "securityContext": {"supplementalGroups": [-1], "fsGroupChangePolicy": "Sometimes", "seccompProfile": {"type": "Localhost"}},
        "containers": [{"name": "c", "image": "i"}]}});
    let (code, v) = post(&server, PODS, &pod).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    let fields: Vec<String> = causes(&v).into_iter().map(|(f, _)| f).collect();
    for f in [
        "spec.securityContext.supplementalGroups[0]",
        "spec.securityContext.fsGroupChangePolicy",
        "spec.securityContext.seccompProfile.localhostProfile",
    ] {
        assert!(fields.iter().any(|x| x == f), "{f} in {fields:?}");
    }
}

#[tokio::test]
async fn quantities_decode_as_go_parses_them() {
    let server = ApiServer::default();
    let quota = |hard: Value| json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {"hard": hard}});
    let (code, v) =
        post(&server, "/api/v1/namespaces/default/resourcequotas", &quota(json!({"limits.memory": "1.5.5"}))).await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(
        v["message"],
        "ResourceQuota in version \"v1\" cannot be handled as a ResourceQuota: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    let (code, v) = post(&server, "/api/v1/namespaces/default/resourcequotas", &quota(json!({"cpu": "1mm"}))).await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{v}");
    assert!(v["message"].as_str().unwrap().ends_with("unable to parse quantity's suffix"), "{v}");
    let (code, v) =
        post(&server, "/api/v1/namespaces/default/resourcequotas", &quota(json!({"cpu": 0.5, "pods": "1e3"}))).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
}

#[tokio::test]
async fn a_create_that_names_a_resource_version_is_a_plain_500_except_as_a_dry_run() {
    let server = ApiServer::default();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "resourceVersion": "7"}});
    let (code, v) = post(&server, &format!("{CMS}?dryRun=All"), &cm).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let before = store_fingerprint(&server).await;
    let (code, v) = post(&server, CMS, &cm).await;
    assert_eq!((code, reason(&v)), (StatusCode::INTERNAL_SERVER_ERROR, ""), "{v}");
    assert_eq!(v["message"], "resourceVersion should not be set on objects to be created");
    assert_eq!(store_fingerprint(&server).await, before);
    // Not a number, or 0: taken as none.
    let mut zero = cm.clone();
    zero["metadata"]["resourceVersion"] = json!("0");
    assert_eq!(post(&server, CMS, &zero).await.0, StatusCode::CREATED);
}

#[tokio::test]
async fn resource_version_zero_is_none_an_unconditional_update_where_the_kind_allows_it() {
    let server = ApiServer::default();
    configmap(&server, "c").await;
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "resourceVersion": "0"}, "data": {"a": "put"}});
    let (code, v) = raw(&server, Method::PUT, &format!("{CMS}/c"), JSON, body.to_string()).await;
    assert_eq!(code, StatusCode::OK, "{v}");
    let (code, v) = raw(
        &server,
        Method::PATCH,
        &format!("{CMS}/c"),
        MERGE,
        r#"{"metadata":{"resourceVersion":"0"},"data":{"a":"m"}}"#.to_string(),
    )
    .await;
    assert_eq!((code, v["data"]["a"].as_str()), (StatusCode::OK, Some("m")), "{v}");
    // A Lease's strategy does not allow unconditional updates (AllowUnconditionalUpdate false).
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let (code, v) = post(
        &server,
        leases,
        &json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}}),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let (code, v) = raw(
        &server,
        Method::PATCH,
        &format!("{leases}/l"),
        MERGE,
        r#"{"metadata":{"resourceVersion":"0"}}"#.to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(causes(&v), [("metadata.resourceVersion".to_string(), "FieldValueInvalid".to_string())]);
    assert_eq!(
        v["message"],
        r#"leases.coordination.k8s.io "l" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update"#
    );
}

#[tokio::test]
async fn an_apply_that_creates_must_name_the_object_and_no_uid_or_bad_resource_version() {
    let server = ApiServer::default();
    let apply = |name: &'static str, body: &'static str| {
        let server = &server;
        async move { raw(server, Method::PATCH, &format!("{CMS}/{name}?fieldManager=m"), APPLY, body.to_string()).await }
    };
    let (code, v) = apply("a", "apiVersion: v1\nkind: ConfigMap\nmetadata: null\n").await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(v["message"], "the name of the object (a based on URL) was undeterminable: name must be provided");
    let (code, v) = apply("b", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, resourceVersion: 'x y'}\n").await;
    assert_eq!((code, reason(&v)), (StatusCode::INTERNAL_SERVER_ERROR, ""), "{v}");
    assert_eq!(v["message"], r#"strconv.ParseUint: parsing "x y": invalid syntax"#);
    let (code, v) = apply("c", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, uid: u-1}\n").await;
    assert_eq!((code, reason(&v)), (StatusCode::CONFLICT, "Conflict"), "{v}");
    assert_eq!(
        v["message"],
        r#"Operation cannot be fulfilled on configmaps "c": uid mismatch: the provided object specified uid u-1, and no existing object was found"#
    );
    assert_eq!(store_fingerprint(&server).await.1, store_fingerprint(&ApiServer::default()).await.1);
}

#[tokio::test]
async fn a_negative_watch_timeout_ends_the_watch_at_once() {
    let server = ApiServer::default();
    let started = std::time::Instant::now();
    let (code, _) = get(&server, &format!("{CMS}?watch=1&timeoutSeconds=-1")).await;
    assert_eq!(code, StatusCode::OK);
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_list_may_not_ask_for_initial_events_and_a_pointer_needs_its_slash() {
    let server = ApiServer::default();
    let (code, v) = get(&server, &format!("{CMS}?sendInitialEvents=true")).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(causes(&v), [("sendInitialEvents".to_string(), "FieldValueForbidden".to_string())]);
    configmap(&server, "c").await;
    let (code, v) = raw(
        &server,
        Method::PATCH,
        &format!("{CMS}/c"),
        JSON_PATCH,
        r#"[{"op":"add","path":"metadata/labels/x","value":"y"}]"#.to_string(),
    )
    .await;
    assert_eq!((code, reason(&v)), (StatusCode::UNPROCESSABLE_ENTITY, "Invalid"), "{v}");
}

#[tokio::test]
async fn owner_references_name_a_group_version_and_no_event_and_updates_check_generate_name() {
    let server = ApiServer::default();
    let sa = |owner: Value| json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "s", "ownerReferences": [owner]}});
    let sas = "/api/v1/namespaces/default/serviceaccounts";
    let (code, v) = post(&server, sas, &sa(json!({"apiVersion": "a/b/c", "kind": "K", "name": "n", "uid": "1"}))).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(causes(&v), [("metadata.ownerReferences[0].apiVersion".to_string(), "FieldValueInvalid".to_string())]);
    let (code, v) =
        post(&server, sas, &sa(json!({"apiVersion": "v1", "kind": "Event", "name": "name", "uid": "1"}))).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(
        v["message"],
        r#"ServiceAccount "s" is invalid: metadata.ownerReferences[0]: Invalid value: {"apiVersion":"v1","kind":"Event","name":"name","uid":"1"}: /v1, Kind=Event is disallowed from being an owner"#
    );
    configmap(&server, "c").await;
    let (code, v) = raw(
        &server,
        Method::PATCH,
        &format!("{CMS}/c"),
        MERGE,
        r#"{"metadata":{"generateName":"Not_A.Name "}}"#.to_string(),
    )
    .await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(causes(&v), [("metadata.generateName".to_string(), "FieldValueInvalid".to_string())]);
    // A null body is the empty object of the URL's kind.
    let (code, v) = raw(&server, Method::POST, CMS, JSON, "null".to_string()).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(causes(&v), [("metadata.name".to_string(), "FieldValueRequired".to_string())]);
}

/// A custom resource of another kind than its CRD's is neither pruned nor defaulted (the schema
/// coercer and the defaulter pass other kinds by) but still validated: the kind's cause, then
/// the schema's, here CEL rules that meet the unset defaulted `group` (`create-kind-mismatch`
/// of the first corpus, on the Gateway API's HTTPRoute).
#[tokio::test]
async fn a_custom_resource_of_the_wrong_kind_is_validated_undefaulted() {
    let server = ApiServer::default();
    let crd = include_str!("../fixtures/crds/gateway.networking.k8s.io_httproutes.yaml");
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let (code, v) = raw(&server, Method::POST, crds, Some("application/yaml"), crd.to_string()).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let route = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Bogus", "metadata": {"name": "r"},
        "spec": {"parentRefs": [{"name": "gw"}], "hostnames": ["web.example.com"],
            "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": [{"name": "web", "port": 80}]}]}});
    let (code, v) = post(&server, "/apis/gateway.networking.k8s.io/v1/namespaces/default/httproutes", &route).await;
    assert_eq!((code, reason(&v)), (StatusCode::UNPROCESSABLE_ENTITY, "Invalid"), "{v}");
    // The real server answered `kind`, `spec.rules[0].backendRefs[0]`, then the two
    // `spec.parentRefs`; the CEL validator walks a schema's properties in Go's map order,
    // which varies, so after the kind the causes are compared as a set.
    let got = causes(&v);
    assert_eq!(got[0], ("kind".to_string(), "FieldValueInvalid".to_string()), "{v}");
    let mut rest = got[1..].to_vec();
    rest.sort();
    let want = [
        ("spec.parentRefs", "FieldValueInvalid"),
        ("spec.parentRefs", "FieldValueInvalid"),
        ("spec.rules[0].backendRefs[0]", "FieldValueInvalid"),
    ];
    let want: Vec<(String, String)> = want.iter().map(|(f, t)| (f.to_string(), t.to_string())).collect();
    assert_eq!(rest, want, "{v}");
}

/// The first corpus's `webhook-match-condition-unnamed` as a strategic merge patch (the merge
/// patch of the change: the whole webhook list): match conditions merge on `name`, and the
/// new unnamed one goes before the old one (`mergeSortedSlice`), so it is `matchConditions[0]`.
#[tokio::test]
async fn a_match_condition_added_by_a_strategic_patch_goes_first() {
    let server = ApiServer::default();
    let uri = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
    let webhook = |conditions: Value| {
        json!({"name": "vpod.example.com", "clientConfig": {"url": "https://127.0.0.1:1/validate", "caBundle": "Y2E="},
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods", "pods/status"]}],
            "objectSelector": {"matchLabels": {"kproof.dev/differential-never": "true"}},
            "sideEffects": "None", "admissionReviewVersions": ["v1"], "matchConditions": conditions})
    };
    let config = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "v"},
        "webhooks": [webhook(json!([{"name": "not-system", "expression": "!object.metadata.name.startsWith('system-')"}]))]});
    let (code, v) = post(&server, uri, &config).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let patch = json!({"webhooks": [webhook(json!([{"name": "", "expression": "true"}]))]});
    let (code, v) = raw(
        &server,
        Method::PATCH,
        &format!("{uri}/v"),
        Some("application/strategic-merge-patch+json"),
        patch.to_string(),
    )
    .await;
    assert_eq!((code, reason(&v)), (StatusCode::UNPROCESSABLE_ENTITY, "Invalid"), "{v}");
    assert_eq!(
        causes(&v),
        [("webhooks[0].matchConditions[0].name".to_string(), "FieldValueRequired".to_string())],
        "{v}"
    );
    assert_eq!(
        v["message"],
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"v\" is invalid: webhooks[0].matchConditions[0].name: Required value"
    );
}
