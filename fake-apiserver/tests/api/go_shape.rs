//! What kube-apiserver v1.37.2 gives back after a round trip through the Go types (zero values of
//! fields without `omitempty`, empty ones with it left out), the managed fields a create records
//! (compared against the type's zero value: `.` entries for the containers it adds; nothing for
//! what the strategy generates), and which kinds keep a generation. Each expectation is what the
//! real server answered to `kproof differential --generator upstream`.

use crate::common::{get, post};
use fake_apiserver::ApiServer;
use http::StatusCode;
use serde_json::{Value, json};

async fn created(server: &ApiServer, uri: &str, body: Value) -> Value {
    let (code, v) = post(server, &format!("{uri}?fieldManager=kproof"), &body).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    v
}

fn fields(obj: &Value) -> &Value {
    &obj["metadata"]["managedFields"][0]["fieldsV1"]
}

#[tokio::test]
async fn a_job_is_written_as_its_go_type_and_owns_what_its_creator_sent() {
    let server = ApiServer::default();
    let job = created(
        &server,
        "/apis/batch/v1/namespaces/default/jobs",
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "labels": {"app": "web"}, "finalizers": []},
            "spec": {"podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
    )
    .await;
    // JobStatus is a struct field without omitempty's effect; an empty finalizers list is omitted.
    assert_eq!(job["status"], json!({}));
    assert!(job["metadata"].get("finalizers").is_none(), "{job}");
    assert_eq!(job["spec"]["template"]["spec"]["containers"][0]["resources"], json!({}));
    let f = fields(&job);
    assert_eq!(f["f:metadata"]["f:labels"]["."], json!({}), "{f}");
    assert!(f["f:metadata"].get(".").is_none(), "metadata itself is never owned: {f}");
    assert!(f["f:spec"].get(".").is_none(), "spec is in the zero Job: {f}");
    assert_eq!(f["f:spec"]["f:podFailurePolicy"]["."], json!({}), "{f}");
    assert_eq!(f["f:spec"]["f:template"]["f:metadata"]["f:labels"]["."], json!({}), "{f}");
    assert!(f["f:spec"]["f:template"].get(".").is_none(), "{f}");
    // The selector and the controller-uid labels come from the strategy, after the field manager.
    assert!(job["spec"]["selector"].is_object(), "{job}");
    assert!(f["f:spec"].get("f:selector").is_none(), "{f}");
    let template_labels = &f["f:spec"]["f:template"]["f:metadata"]["f:labels"];
    assert!(template_labels.get("f:batch.kubernetes.io/controller-uid").is_none(), "{f}");
    // A container item is added whole: its own nested structs get `.` too.
    let c = &f["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"];
    assert_eq!(c["."], json!({}), "{f}");
    assert_eq!(c["f:resources"], json!({}), "{f}");
}

#[tokio::test]
async fn a_service_owns_its_ports_list_not_the_cluster_ips_it_was_given() {
    let server = ApiServer::default();
    let svc = created(
        &server,
        "/api/v1/namespaces/default/services",
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "labels": {"a": "b"}},
            "spec": {"selector": {"a": "b"}, "ports": [{"port": 80}]}}),
    )
    .await;
    assert!(svc["spec"]["clusterIP"].is_string(), "{svc}");
    assert_eq!(svc["status"], json!({"loadBalancer": {}}));
    let f = fields(&svc);
    for generated in ["f:clusterIP", "f:clusterIPs", "f:ipFamilies", "f:ipFamilyPolicy"] {
        assert!(f["f:spec"].get(generated).is_none(), "{generated}: {f}");
    }
    assert_eq!(f["f:spec"]["f:ports"]["."], json!({}), "{f}");
    assert_eq!(f["f:spec"]["f:selector"], json!({}), "an atomic map is a leaf: {f}");
}

#[tokio::test]
async fn a_core_event_has_the_fields_go_always_writes() {
    let server = ApiServer::default();
    let ev = created(
        &server,
        "/api/v1/namespaces/default/events",
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "R", "message": "m"}),
    )
    .await;
    assert_eq!(ev["eventTime"], Value::Null);
    assert_eq!(ev["reportingComponent"], "");
    assert_eq!(ev["reportingInstance"], "");
    assert_eq!(ev["source"], json!({}));
}

#[tokio::test]
async fn a_namespace_owns_its_name_label_not_the_finalizer_the_server_adds() {
    let server = ApiServer::default();
    let ns = created(
        &server,
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}),
    )
    .await;
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    let f = fields(&ns);
    assert_eq!(f, &json!({"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}}));
}

#[tokio::test]
async fn endpoint_slices_and_priority_classes_keep_a_generation_claims_and_pod_groups_do_not() {
    let server = ApiServer::default();
    let eps = created(
        &server,
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "e"}, "addressType": "IPv4", "endpoints": []}),
    )
    .await;
    assert_eq!(eps["metadata"]["generation"], 1, "{eps}");
    let claim = created(
        &server,
        "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}}),
    )
    .await;
    assert!(claim["metadata"].get("generation").is_none(), "{claim}");
    assert_eq!(claim["status"], json!({}));
    let (code, claim) = get(&server, "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c").await;
    assert_eq!(code, StatusCode::OK);
    assert!(claim["metadata"].get("generation").is_none(), "{claim}");
}

#[tokio::test]
async fn a_kind_without_a_generation_of_its_own_keeps_the_one_sent() {
    let server = ApiServer::default();
    let lease = created(
        &server,
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l", "generation": 7}}),
    )
    .await;
    assert_eq!(lease["metadata"]["generation"], 7, "{lease}");
}

#[tokio::test]
async fn a_deletion_grace_period_a_client_sends_is_owned_though_cleared() {
    let server = ApiServer::default();
    let cm = created(
        &server,
        "/api/v1/namespaces/default/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "deletionGracePeriodSeconds": 5}}),
    )
    .await;
    assert!(cm["metadata"].get("deletionGracePeriodSeconds").is_none(), "{cm}");
    assert_eq!(fields(&cm)["f:metadata"], json!({"f:deletionGracePeriodSeconds": {}}));
}

#[tokio::test]
async fn a_pod_group_gets_its_disruption_mode_default_and_its_priority_from_admission() {
    let server = ApiServer::default();
    let pg = created(
        &server,
        "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups",
        json!({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"},
            "spec": {"schedulingPolicy": {"basic": {}}}}),
    )
    .await;
    assert_eq!(pg["spec"]["disruptionMode"], json!({"single": {}}), "{pg}");
    assert_eq!(pg["spec"]["priority"], 0, "{pg}");
    // The default is the creator's (decoding), the priority admission's is nobody's.
    let f = fields(&pg);
    assert_eq!(f["f:spec"]["f:disruptionMode"], json!({".": {}, "f:single": {}}), "{f}");
    assert!(f["f:spec"].get("f:priority").is_none(), "{f}");
    let (code, v) = post(
        &server,
        "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups",
        &json!({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "h"},
            "spec": {"schedulingPolicy": {"basic": {}}, "priority": 5}}),
    )
    .await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{v}");
}
