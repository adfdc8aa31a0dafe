//! `kubectl auth can-i` support: SelfSubjectAccessReview and SelfSubjectRulesReview answer
//! "allowed" (there is no RBAC), are in discovery, and store nothing.

use crate::common::{get, post, store_fingerprint};
use fake_apiserver::ApiServer;
use http::StatusCode;
use k8s_openapi::api::authorization::v1::{SelfSubjectAccessReview, SelfSubjectRulesReview};
use kube::api::{Api, PostParams};
use serde_json::json;

#[tokio::test]
async fn access_reviews_are_allowed_and_stored_nowhere() {
    let server = ApiServer::default();
    let before = store_fingerprint(&server).await;
    let reviews: Api<SelfSubjectAccessReview> = Api::all(server.client());
    let review: SelfSubjectAccessReview = serde_json::from_value(json!({
        "spec": {"resourceAttributes": {"namespace": "default", "verb": "create", "resource": "pods"}}
    }))
    .unwrap();
    let answer = reviews.create(&PostParams::default(), &review).await.unwrap();
    let status = answer.status.unwrap();
    assert!(status.allowed);
    assert_eq!(status.denied, None);
    assert_eq!(answer.spec.resource_attributes.unwrap().resource.as_deref(), Some("pods"));

    let rules: Api<SelfSubjectRulesReview> = Api::all(server.client());
    let review: SelfSubjectRulesReview = serde_json::from_value(json!({"spec": {"namespace": "default"}})).unwrap();
    let status = rules.create(&PostParams::default(), &review).await.unwrap().status.unwrap();
    assert!(!status.incomplete);
    assert_eq!(status.resource_rules[0].verbs, ["*"]);
    assert_eq!(status.non_resource_rules[0].non_resource_urls.as_deref(), Some(&["*".to_string()][..]));
    assert_eq!(store_fingerprint(&server).await, before);

    // Exactly one of the attribute kinds.
    let (code, s) = post(&server, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", &json!({"spec": {}})).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        s["message"],
        "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified"
    );
    // Create only.
    let (code, _) = get(&server, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews").await;
    assert_eq!(code, StatusCode::METHOD_NOT_ALLOWED);
    let (code, list) = get(&server, "/apis/authorization.k8s.io/v1").await;
    assert_eq!(code, StatusCode::OK);
    let ssar = list["resources"].as_array().unwrap().iter().find(|r| r["name"] == "selfsubjectaccessreviews").unwrap();
    assert_eq!(ssar["verbs"], json!(["create"]));
    assert_eq!(ssar["namespaced"], false);
}
