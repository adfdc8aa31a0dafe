//! Discovery: /version and health, legacy lists, aggregated v2 and v2beta1 by Accept header,
//! and kube-rs discovery on top.

use crate::common::{get, raw_full, raw_with};
use fake_apiserver::ApiServer;
use http::{Method, StatusCode};
use kube::discovery::{Discovery, Scope, verbs};
use serde_json::Value;

const V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const V2BETA1: &str = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

#[tokio::test]
async fn version_and_health_endpoints() {
    let server = ApiServer::default();
    let (code, v) = get(&server, "/version").await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(v["major"], "1");
    assert_eq!(v["minor"], "37");
    assert_eq!(v["gitVersion"], "v1.37.0");
    for p in ["/healthz", "/livez", "/readyz"] {
        let (code, _, body) = raw_full(&server, Method::GET, p, &[], "").await;
        assert_eq!((code, &body[..]), (StatusCode::OK, &b"ok"[..]), "{p}");
    }
}

#[tokio::test]
async fn legacy_discovery_lists_groups_resources_and_subresources() {
    let server = ApiServer::default();
    let (_, api) = get(&server, "/api").await;
    assert_eq!(api["kind"], "APIVersions");
    assert_eq!(api["versions"][0], "v1");
    let (_, apis) = get(&server, "/apis").await;
    let groups: Vec<&str> = apis["groups"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    for g in [
        "apps",
        "batch",
        "discovery.k8s.io",
        "events.k8s.io",
        "coordination.k8s.io",
        "apiextensions.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
    ] {
        assert!(groups.contains(&g), "{g} in {groups:?}");
    }
    let (_, sched) = get(&server, "/apis/scheduling.k8s.io").await;
    assert_eq!(sched["kind"], "APIGroup");
    assert_eq!(sched["preferredVersion"]["version"], "v1", "GA before beta");
    let (_, apps) = get(&server, "/apis/apps/v1").await;
    let res = apps["resources"].as_array().unwrap();
    let find = |n: &str| res.iter().find(|r| r["name"] == n).cloned().unwrap_or(Value::Null);
    assert_eq!(find("deployments")["shortNames"][0], "deploy");
    assert_eq!(find("deployments")["categories"][0], "all");
    assert_eq!(find("deployments/scale")["group"], "autoscaling");
    assert_eq!(find("deployments/scale")["kind"], "Scale");
    assert_eq!(find("deployments/status")["kind"], "Deployment");
    let (_, core) = get(&server, "/api/v1").await;
    let core = core["resources"].as_array().unwrap().clone();
    assert!(core.iter().any(|r| r["name"] == "namespaces/finalize"));
    assert!(core.iter().any(|r| r["name"] == "pods" && r["namespaced"] == true && r["singularName"] == "pod"));
    assert!(core.iter().any(|r| r["name"] == "nodes" && r["namespaced"] == false));
    assert_eq!(get(&server, "/apis/nope.example.com").await.0, StatusCode::NOT_FOUND);
    assert_eq!(get(&server, "/apis/apps/v9").await.0, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn aggregated_discovery_is_chosen_by_accept_and_echoes_the_media_type() {
    let server = ApiServer::default();
    for (accept, version) in [
        (format!("{V2},{V2BETA1},application/json"), "v2"),
        (format!("{V2BETA1},application/json"), "v2beta1"),
        (format!("{V2BETA1},{V2}"), "v2beta1"),
    ] {
        for path in ["/api", "/apis"] {
            let (code, headers, body) = raw_full(&server, Method::GET, path, &[("accept", Some(&accept))], "").await;
            assert_eq!(code, StatusCode::OK);
            let ct = headers.get("content-type").unwrap().to_str().unwrap();
            assert_eq!(ct, format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"));
            let v: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(v["kind"], "APIGroupDiscoveryList");
            assert_eq!(v["apiVersion"], format!("apidiscovery.k8s.io/{version}"));
        }
    }
    let (_, _, body) = raw_full(&server, Method::GET, "/apis", &[("accept", Some(V2))], "").await;
    let v: Value = serde_json::from_slice(&body).unwrap();
    let apps = v["items"].as_array().unwrap().iter().find(|g| g["metadata"]["name"] == "apps").unwrap().clone();
    let deploy = apps["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "deployments")
        .unwrap()
        .clone();
    assert_eq!(deploy["scope"], "Namespaced");
    assert_eq!(deploy["singularResource"], "deployment");
    assert_eq!(deploy["responseKind"]["kind"], "Deployment");
    let subs: Vec<&str> =
        deploy["subresources"].as_array().unwrap().iter().map(|s| s["subresource"].as_str().unwrap()).collect();
    assert_eq!(subs, vec!["scale", "status"]);
    assert_eq!(deploy["subresources"][0]["responseKind"]["group"], "autoscaling");
    // Plain JSON falls back to the legacy shape; protobuf alone is 406.
    let (_, legacy) = raw_with(&server, Method::GET, "/apis", &[("accept", Some("application/json, */*"))], "").await;
    assert_eq!(legacy["kind"], "APIGroupList");
    let (code, status) =
        raw_with(&server, Method::GET, "/apis", &[("accept", Some("application/vnd.kubernetes.protobuf"))], "").await;
    assert_eq!(code, StatusCode::NOT_ACCEPTABLE);
    assert_eq!(status["reason"], "NotAcceptable");
}

#[tokio::test]
async fn kube_rs_discovery_works_both_ways() {
    let server = ApiServer::default();
    for aggregated in [false, true] {
        let d = Discovery::new(server.client());
        let d = if aggregated { d.run_aggregated().await.unwrap() } else { d.run().await.unwrap() };
        let (pods, caps) = d.get("").unwrap().recommended_kind("Pod").unwrap();
        assert_eq!(pods.plural, "pods");
        assert_eq!(caps.scope, Scope::Namespaced);
        assert!(caps.supports_operation(verbs::WATCH));
        assert!(caps.subresources.iter().any(|(r, _)| r.plural == "status"), "aggregated={aggregated}");
        let (claims, _) = d.get("resource.k8s.io").unwrap().recommended_kind("ResourceClaim").unwrap();
        assert_eq!(claims.version, "v1");
        let (crd, caps) = d.get("apiextensions.k8s.io").unwrap().recommended_kind("CustomResourceDefinition").unwrap();
        assert_eq!(crd.plural, "customresourcedefinitions");
        assert_eq!(caps.scope, Scope::Cluster);
    }
}
