//! Identities and RBAC: bearer tokens per user and service account, Roles and bindings
//! (aggregation, resourceNames, subresources, non-resource URLs), kube-apiserver's 403
//! messages, impersonation, the access reviews, and DRA's synthetic `resourceclaims/binding`.

use crate::common::raw_full;
use axum::body::Body;
use fake_apiserver::{ApiServer, Config, UserInfo};
use http::{Method, StatusCode};
use k8s_openapi::api::authorization::v1::{SelfSubjectAccessReview, SubjectAccessReview};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn rbac_server() -> ApiServer {
    ApiServer::new(Config { rbac: true, ..Config::default() })
}

async fn admin_apply(server: &ApiServer, v: Value) {
    let client = server.client();
    let obj: kube::api::DynamicObject = serde_json::from_value(v.clone()).unwrap();
    let gvk = kube::api::GroupVersionKind::try_from(obj.types.as_ref().unwrap()).unwrap();
    let (ar, _) = kube::discovery::pinned_kind(&client, &gvk).await.unwrap();
    let api: Api<kube::api::DynamicObject> = match v["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client, ns, &ar),
        None => Api::all_with(client, &ar),
    };
    api.create(&PostParams::default(), &obj).await.unwrap_or_else(|e| panic!("create {v}: {e}"));
}

fn api_error(e: kube::Error) -> (u16, String, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason.clone(), s.message.clone()),
        other => panic!("not an API error: {other}"),
    }
}

async fn team_setup(server: &ApiServer) -> kube::Client {
    admin_apply(server, json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})).await;
    admin_apply(
        server,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "ctl", "namespace": "team"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["delete"], "resourceNames": ["scratch"]},
        ]}),
    )
    .await;
    admin_apply(
        server,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "ctl", "namespace": "team"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "ctl"},
            "subjects": [{"kind": "ServiceAccount", "name": "ctl", "namespace": "team"}]}),
    )
    .await;
    server.client_with_token(&server.issue_token(UserInfo::service_account("team", "ctl")))
}

#[tokio::test]
async fn a_service_account_can_do_exactly_what_its_role_allows() {
    let server = rbac_server();
    let sa = team_setup(&server).await;
    let pods: Api<Pod> = Api::namespaced(sa.clone(), "team");
    pods.list(&ListParams::default()).await.unwrap();
    let e = api_error(Api::<Pod>::namespaced(sa.clone(), "default").list(&ListParams::default()).await.unwrap_err());
    assert_eq!(
        e,
        (
            403,
            "Forbidden".into(),
            "pods is forbidden: User \"system:serviceaccount:team:ctl\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"".into()
        )
    );
    // The status subresource is not the resource.
    let e = api_error(
        pods.patch_status("p", &PatchParams::default(), &Patch::Merge(json!({"status": {}}))).await.unwrap_err(),
    );
    assert_eq!(
        e.2,
        "pods \"p\" is forbidden: User \"system:serviceaccount:team:ctl\" cannot patch resource \"pods/status\" in API group \"\" in the namespace \"team\""
    );
    // resourceNames.
    let cms: Api<ConfigMap> = Api::namespaced(sa.clone(), "team");
    for name in ["scratch", "keep"] {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    cms.delete("scratch", &Default::default()).await.unwrap();
    let e = api_error(cms.delete("keep", &Default::default()).await.unwrap_err());
    assert_eq!(
        e.2,
        "configmaps \"keep\" is forbidden: User \"system:serviceaccount:team:ctl\" cannot delete resource \"configmaps\" in API group \"\" in the namespace \"team\""
    );
    // Cluster scope.
    let e = api_error(Api::<Node>::all(sa.clone()).list(&ListParams::default()).await.unwrap_err());
    assert_eq!(
        e.2,
        "nodes is forbidden: User \"system:serviceaccount:team:ctl\" cannot list resource \"nodes\" in API group \"\" at the cluster scope"
    );
    // Discovery and /version come from the default policy; other paths do not.
    let token = server.issue_token(UserInfo::service_account("team", "ctl"));
    let auth = format!("Bearer {token}");
    let h = [("authorization", Some(auth.as_str()))];
    let (code, _, _) = raw_full(&server, Method::GET, "/apis", &h, Body::empty()).await;
    assert_eq!(code, StatusCode::OK);
    let (code, _, body) = raw_full(&server, Method::GET, "/metrics", &h, Body::empty()).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    let status: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status["message"], "forbidden: User \"system:serviceaccount:team:ctl\" cannot get path \"/metrics\"");
    // A token the server did not issue is 401; no token is anonymous, with no rights here.
    let (code, _, _) =
        raw_full(&server, Method::GET, "/api/v1/pods", &[("authorization", Some("Bearer nope"))], Body::empty()).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    let (code, _, body) = raw_full(&server, Method::GET, "/api/v1/pods", &[], Body::empty()).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    let status: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        status["message"],
        "pods is forbidden: User \"system:anonymous\" cannot list resource \"pods\" in API group \"\" at the cluster scope"
    );
    let (code, _, _) = raw_full(&server, Method::GET, "/version", &[], Body::empty()).await;
    assert_eq!(code, StatusCode::OK);
}

#[tokio::test]
async fn aggregated_cluster_roles_and_missing_roles() {
    let server = rbac_server();
    let sa = team_setup(&server).await;
    admin_apply(
        &server,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "aggregate"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"kproof.dev/aggregate-to-ctl": "true"}}]}}),
    )
    .await;
    admin_apply(
        &server,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "nodes-reader", "labels": {"kproof.dev/aggregate-to-ctl": "true"}},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]}),
    )
    .await;
    admin_apply(
        &server,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "ctl"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "aggregate"},
            "subjects": [{"kind": "ServiceAccount", "name": "ctl", "namespace": "team"}]}),
    )
    .await;
    Api::<Node>::all(sa.clone()).list(&ListParams::default()).await.unwrap();
    admin_apply(
        &server,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "dangling"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "gone"},
            "subjects": [{"kind": "ServiceAccount", "name": "ctl", "namespace": "team"}]}),
    )
    .await;
    let e = api_error(Api::<Pod>::all(sa).list(&ListParams::default()).await.unwrap_err());
    assert_eq!(
        e.2,
        "pods is forbidden: User \"system:serviceaccount:team:ctl\" cannot list resource \"pods\" in API group \"\" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found"
    );
}

fn ssar(verb: &str, resource: &str, ns: &str) -> SelfSubjectAccessReview {
    serde_json::from_value(
        json!({"spec": {"resourceAttributes": {"verb": verb, "resource": resource, "namespace": ns}}}),
    )
    .unwrap()
}

#[tokio::test]
async fn access_reviews_and_impersonation_answer_truthfully() {
    let server = rbac_server();
    let sa = team_setup(&server).await;
    let reviews: Api<SelfSubjectAccessReview> = Api::all(sa.clone());
    let yes = reviews.create(&PostParams::default(), &ssar("list", "pods", "team")).await.unwrap().status.unwrap();
    assert!(yes.allowed);
    assert_eq!(
        yes.reason.as_deref(),
        Some("RBAC: allowed by RoleBinding \"ctl/team\" of Role \"ctl\" to ServiceAccount \"ctl/team\"")
    );
    let no = reviews.create(&PostParams::default(), &ssar("list", "pods", "default")).await.unwrap().status.unwrap();
    assert!(!no.allowed);

    // The administrator asks for someone else.
    let sar: SubjectAccessReview = serde_json::from_value(json!({"spec": {
        "user": "system:serviceaccount:team:ctl",
        "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "team"}}}))
    .unwrap();
    let answer = Api::<SubjectAccessReview>::all(server.client()).create(&PostParams::default(), &sar).await.unwrap();
    assert!(answer.status.unwrap().allowed);

    // `kubectl auth can-i --as`: the administrator impersonates the service account.
    let admin = format!("Bearer {}", server.admin_token());
    let body = serde_json::to_vec(&ssar("list", "pods", "default")).unwrap();
    let headers = [
        ("authorization", Some(admin.as_str())),
        ("impersonate-user", Some("system:serviceaccount:team:ctl")),
        ("content-type", Some("application/json")),
    ];
    let (code, _, bytes) = raw_full(
        &server,
        Method::POST,
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        &headers,
        body.clone(),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED);
    let answer: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(answer["status"]["allowed"], false, "{answer}");
    // The service account may not impersonate anyone.
    let token = format!("Bearer {}", server.issue_token(UserInfo::service_account("team", "ctl")));
    let headers = [("authorization", Some(token.as_str())), ("impersonate-user", Some("alice"))];
    let (code, _, bytes) =
        raw_full(&server, Method::GET, "/api/v1/namespaces/team/pods", &headers, Body::empty()).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    let status: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        status["message"],
        "users \"alice\" is forbidden: User \"system:serviceaccount:team:ctl\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    // Rules review.
    let rules: Value = {
        let headers = [("authorization", Some(token.as_str())), ("content-type", Some("application/json"))];
        let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "team"}});
        let (_, _, bytes) = raw_full(
            &server,
            Method::POST,
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            &headers,
            body.to_string(),
        )
        .await;
        serde_json::from_slice(&bytes).unwrap()
    };
    let resource_rules = rules["status"]["resourceRules"].as_array().unwrap();
    assert!(
        resource_rules.contains(&json!({"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]}))
    );
    assert!(resource_rules.contains(
        &json!({"verbs": ["delete"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["scratch"]})
    ));
}

#[tokio::test]
async fn rbac_is_off_by_default() {
    let server = ApiServer::default();
    let (code, _, _) = raw_full(&server, Method::GET, "/api/v1/nodes", &[], Body::empty()).await;
    assert_eq!(code, StatusCode::OK);
    let (code, _, _) =
        raw_full(&server, Method::GET, "/apis/rbac.authorization.k8s.io/v1/clusterroles", &[], Body::empty()).await;
    assert_eq!(code, StatusCode::OK);
}

#[tokio::test]
async fn resource_claim_allocation_needs_the_synthetic_binding_permission() {
    let server = rbac_server();
    let sa = team_setup(&server).await;
    admin_apply(
        &server,
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "gpu", "namespace": "team"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}),
    )
    .await;
    admin_apply(
        &server,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "claims", "namespace": "team"},
            "rules": [{"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"], "verbs": ["patch", "update"]}]}),
    )
    .await;
    admin_apply(
        &server,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "claims", "namespace": "team"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "claims"},
            "subjects": [{"kind": "ServiceAccount", "name": "ctl"}]}),
    )
    .await;
    let claims: Api<kube::api::DynamicObject> = Api::namespaced_with(
        sa,
        "team",
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("resource.k8s.io", "v1", "ResourceClaim"),
            "resourceclaims",
        ),
    );
    let allocate = json!({"status": {
        "allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}},
        "reservedFor": [{"resource": "pods", "name": "w", "uid": "00000000-0000-0000-0000-000000000001"}]}});
    let e = api_error(claims.patch_status("gpu", &PatchParams::default(), &Patch::Merge(&allocate)).await.unwrap_err());
    assert_eq!(
        e,
        (
            403,
            "Forbidden".into(),
            "resourceclaims.resource.k8s.io \"gpu\" is forbidden: User \"system:serviceaccount:team:ctl\" cannot patch resource \"resourceclaims/binding\" in API group \"resource.k8s.io\" in the namespace \"team\"".into()
        )
    );
    // A status write that leaves allocation and reservedFor alone needs only /status.
    claims
        .patch_status("gpu", &PatchParams::default(), &Patch::Merge(json!({"status": {"devices": []}})))
        .await
        .unwrap();
    admin_apply(
        &server,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "binding", "namespace": "team"},
            "rules": [{"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/binding"], "verbs": ["patch"]}]}),
    )
    .await;
    admin_apply(
        &server,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "binding", "namespace": "team"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "binding"},
            "subjects": [{"kind": "ServiceAccount", "name": "ctl"}]}),
    )
    .await;
    let patched = claims.patch_status("gpu", &PatchParams::default(), &Patch::Merge(&allocate)).await.unwrap();
    assert_eq!(patched.data["status"]["reservedFor"][0]["name"], "w");
}

#[tokio::test]
async fn injected_conflicts_refuse_the_next_updates_and_patches_of_one_user_and_resource_only() {
    let server = ApiServer::default();
    admin_apply(&server, json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})).await;
    let ctl = server.client_with_token(&server.issue_token(UserInfo::service_account("team", "ctl")));
    let other = server.client_with_token(&server.issue_token(UserInfo::user("someone", &[])));
    let cms: Api<ConfigMap> = Api::namespaced(ctl, "team");
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "c"}})).unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    server.inject_conflicts(fake_apiserver::ConflictFault {
        user: "system:serviceaccount:team:ctl".into(),
        namespace: "team".into(),
        group: "".into(),
        resource: "configmaps".into(),
        subresource: "".into(),
        count: 2,
    });
    let patch = Patch::Merge(json!({"data": {"k": "v"}}));
    // Another user's write and a create of the same kind are not counted.
    Api::<ConfigMap>::namespaced(other, "team").patch("c", &PatchParams::default(), &patch).await.unwrap();
    let cm2: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "d"}})).unwrap();
    cms.create(&PostParams::default(), &cm2).await.unwrap();
    let (code, reason, message) = api_error(cms.patch("c", &PatchParams::default(), &patch).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert_eq!(
        message,
        "Operation cannot be fulfilled on configmaps \"c\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let current = cms.get("c").await.unwrap();
    assert_eq!(api_error(cms.replace("c", &PostParams::default(), &current).await.unwrap_err()).0, 409);
    assert_eq!(server.conflicts_left(), vec![0]);
    cms.replace("c", &PostParams::default(), &current).await.unwrap();
}
