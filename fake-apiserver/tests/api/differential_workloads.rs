//! Disagreements with kube-apiserver v1.37.2 on the workloads' own rules (Job, StatefulSet,
//! Deployment, ReplicaSet) that `kproof differential --generator upstream` found, each kept as
//! the answer the real server gave. The cases are named as in
//! `harness/src/differential/upstream-cases.yaml` and rebuild its edits on the corpus' valid
//! objects (`kinds.yaml`).

use crate::common::{causes, get, post, raw};
use fake_apiserver::ApiServer;
use http::{Method, StatusCode};
use rstest::rstest;
use serde_json::{Value, json};

const JOBS: &str = "/apis/batch/v1/namespaces/default/jobs";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const REPLICASETS: &str = "/apis/apps/v1/namespaces/default/replicasets";
const STATEFULSETS: &str = "/apis/apps/v1/namespaces/default/statefulsets";

const JSON: Option<&str> = Some("application/json");
const MERGE: Option<&str> = Some("application/merge-patch+json");
const JSON_PATCH: Option<&str> = Some("application/json-patch+json");
const APPLY: Option<&str> = Some("application/apply-patch+yaml");

/// The corpus' valid workload template spec.
fn app_spec() -> Value {
    json!({
        "containers": [{
            "name": "app",
            "image": "registry.example/app:1.0",
            "ports": [{"name": "http", "containerPort": 8080}],
            "env": [{"name": "MODE", "value": "test"}],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}},
            "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]
        }],
        "volumes": [{"name": "scratch", "emptyDir": {}}]
    })
}

/// The corpus' valid object of `kind`, named `w`, and its collection.
fn valid(kind: &str) -> (Value, &'static str) {
    let template = json!({"metadata": {"labels": {"app": "web"}}, "spec": app_spec()});
    let meta = json!({"name": "w", "labels": {"app": "web"}});
    match kind {
        "Job" => (
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "w", "labels": {"app": "batch"}},
                "spec": {"completions": 1, "template": {"metadata": {"labels": {"app": "batch"}}, "spec": {
                    "restartPolicy": "Never", "containers": [{"name": "work", "image": "busybox", "command": ["true"]}]}}}}),
            JOBS,
        ),
        "StatefulSet" => (
            json!({"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": {"replicas": 1, "serviceName": "web",
                "selector": {"matchLabels": {"app": "web"}}, "template": template}}),
            STATEFULSETS,
        ),
        "Deployment" => (
            json!({"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": {"replicas": 2,
                "selector": {"matchLabels": {"app": "web"}}, "template": template}}),
            DEPLOYMENTS,
        ),
        _ => (
            json!({"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": {"replicas": 1,
                "selector": {"matchLabels": {"app": "web"}}, "template": template}}),
            REPLICASETS,
        ),
    }
}

/// Sets `value` at the JSON pointer `at`, creating the objects on the way (an index one past
/// the end appends), as the corpus' `set` edits do.
fn set(obj: &mut Value, at: &str, value: Value) {
    let parts: Vec<&str> = at.split('/').skip(1).collect();
    let (last, parents) = parts.split_last().expect("a pointer below the root");
    let mut cur = obj;
    for part in parents {
        cur = child(cur, part);
    }
    *child(cur, last) = value;
}

fn child<'a>(v: &'a mut Value, part: &str) -> &'a mut Value {
    if v.is_array() {
        let arr = v.as_array_mut().expect("array");
        let idx: usize = part.parse().expect("index");
        if idx == arr.len() {
            arr.push(json!({}));
        }
        return &mut arr[idx];
    }
    if !v.is_object() {
        *v = json!({});
    }
    v.as_object_mut().expect("object").entry(part.to_string()).or_insert_with(|| json!({}))
}

fn edited(mut obj: Value, edits: &Value) -> Value {
    for (at, value) in edits.as_object().expect("edits") {
        set(&mut obj, at, value.clone());
    }
    obj
}

/// The object's name in kube-apiserver's messages.
fn qualified(kind: &str) -> String {
    let group = if kind == "Job" { "batch" } else { "apps" };
    format!(r#"{kind}.{group} "w""#)
}

/// A 422 Invalid with these causes (type, field) in this order and these errors, in this
/// order, in the message (`ToAggregate`).
fn assert_invalid(code: StatusCode, v: &Value, kind: &str, want: &[(&str, &str)], errors: &[&str]) {
    assert_eq!((code, v["reason"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("Invalid")), "{v}");
    let got = causes(v);
    let got: Vec<(&str, &str)> = got.iter().map(|(f, r)| (r.as_str(), f.as_str())).collect();
    assert_eq!(got, want, "{v}");
    let message = match errors {
        [one] => format!("{} is invalid: {one}", qualified(kind)),
        many => format!("{} is invalid: [{}]", qualified(kind), many.join(", ")),
    };
    assert_eq!(v["message"].as_str().unwrap_or_default(), message);
}

/// Creates of the corpus' valid objects with one of its edits, refused as kube-apiserver
/// refuses them.
#[rstest]
#[case::sts_max_unavailable_101_percent(
    "StatefulSet",
    json!({"/spec/updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "101%"}}}),
    &[("FieldValueInvalid", "spec.updateStrategy.rollingUpdate.maxUnavailable")],
    &[r#"spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "101%": must not be greater than 100%"#]
)]
#[case::sts_max_unavailable_zero(
    "StatefulSet",
    json!({"/spec/updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0}}}),
    &[("FieldValueInvalid", "spec.updateStrategy.rollingUpdate.maxUnavailable")],
    &["spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: cannot be 0"]
)]
#[case::sts_volume_claim_template_no_access_modes(
    "StatefulSet",
    json!({"/spec/volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}}]}),
    &[("FieldValueRequired", "spec.volumeClaimTemplates[0].spec.accessModes")],
    &["spec.volumeClaimTemplates[0].spec.accessModes: Required value: at least 1 access mode is required"]
)]
#[case::sts_service_name_invalid(
    "StatefulSet",
    json!({"/spec/serviceName": "Invalid.Name"}),
    &[("FieldValueInvalid", "spec.serviceName")],
    &[r#"spec.serviceName: Invalid value: "Invalid.Name": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"#]
)]
// The first corpus's `template-labels-invalid`: one cause, though the set's template rules
// check the labels twice.
#[case::sts_template_labels_invalid(
    "StatefulSet",
    json!({"/spec/template/metadata/labels/bad key": "x"}),
    &[("FieldValueInvalid", "spec.template.labels")],
    &[r#"spec.template.labels: Invalid value: "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#]
)]
#[case::deploy_max_surge_bad_percent(
    "Deployment",
    json!({"/spec/strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "20Percent"}}}),
    &[("FieldValueInvalid", "spec.strategy.rollingUpdate.maxSurge")],
    &[r#"spec.strategy.rollingUpdate.maxSurge: Invalid value: "20Percent": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"#]
)]
#[case::job_pod_failure_rule_without_requirement(
    "Job",
    json!({"/spec/podFailurePolicy": {"rules": [{"action": "FailJob"}]}}),
    &[("FieldValueInvalid", "spec.podFailurePolicy.rules[0]")],
    &["spec.podFailurePolicy.rules[0]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required"]
)]
#[case::job_pod_failure_both_requirements(
    "Job",
    json!({"/spec/podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [11]}, "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}}),
    &[("FieldValueInvalid", "spec.podFailurePolicy.rules[0]")],
    &["spec.podFailurePolicy.rules[0]: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported"]
)]
#[case::job_pod_failure_exit_codes_unordered(
    "Job",
    json!({"/spec/podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [19, 11]}}]}}),
    &[("FieldValueInvalid", "spec.podFailurePolicy.rules[0].onExitCodes.values")],
    &["spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [19,11]: must be ordered"]
)]
#[case::job_success_policy_no_rules(
    "Job",
    json!({"/spec/completionMode": "Indexed", "/spec/completions": 5, "/spec/successPolicy": {"rules": []}}),
    &[("FieldValueRequired", "spec.successPolicy.rules")],
    &["spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is specified"]
)]
#[case::job_success_policy_count_above_completions(
    "Job",
    json!({"/spec/completionMode": "Indexed", "/spec/completions": 5, "/spec/successPolicy": {"rules": [{"succeededCount": 6}]}}),
    &[("FieldValueInvalid", "spec.successPolicy.rules[0].succeededCount")],
    &["spec.successPolicy.rules[0].succeededCount: Invalid value: 6: must be less than or equal to 5 (the number of specified completions)"]
)]
#[case::job_backoff_per_index_non_indexed(
    "Job",
    json!({"/spec/backoffLimitPerIndex": 1}),
    &[("FieldValueInvalid", "spec.backoffLimitPerIndex")],
    &["spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"]
)]
#[tokio::test]
async fn creates_are_refused_as_upstream_refuses_them(
    #[case] kind: &str,
    #[case] edits: Value,
    #[case] want: &[(&str, &str)],
    #[case] errors: &[&str],
) {
    let server = ApiServer::default();
    let (obj, uri) = valid(kind);
    let (code, v) = post(&server, uri, &edited(obj, &edits)).await;
    assert_invalid(code, &v, kind, want, errors);
}

/// Creates kube-apiserver accepts.
#[rstest]
#[case::sts_volume_claim_template_mounted_ok(
    "StatefulSet",
    json!({"/spec/volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}], "/spec/template/spec/containers/0/volumeMounts/1": {"name": "data", "mountPath": "/data"}})
)]
#[case::sts_max_unavailable_parallel_ok(
    "StatefulSet",
    json!({"/spec/podManagementPolicy": "Parallel", "/spec/updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}})
)]
#[case::job_pod_failure_negative_exit_codes_ok(
    "Job",
    json!({"/spec/podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [-1073741819, -1073741676, -1073741510]}}]}})
)]
#[case::job_success_policy_ok(
    "Job",
    json!({"/spec/completionMode": "Indexed", "/spec/completions": 10, "/spec/successPolicy": {"rules": [{"succeededCount": 1, "succeededIndexes": "0,2,4"}, {"succeededIndexes": "1,3,5-9"}]}})
)]
#[tokio::test]
async fn creates_are_accepted_as_upstream_accepts_them(#[case] kind: &str, #[case] edits: Value) {
    let server = ApiServer::default();
    let (obj, uri) = valid(kind);
    let (code, v) = post(&server, uri, &edited(obj, &edits)).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
}

/// An apply creates as a POST does: the rolling update's rules hold there too.
#[tokio::test]
async fn sts_max_unavailable_101_percent_by_apply() {
    let server = ApiServer::default();
    let (obj, uri) = valid("StatefulSet");
    let obj = edited(
        obj,
        &json!({"/spec/updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "101%"}}}),
    );
    let (code, v) =
        raw(&server, Method::PATCH, &format!("{uri}/w?fieldManager=kproof&force=true"), APPLY, obj.to_string()).await;
    assert_invalid(
        code,
        &v,
        "StatefulSet",
        &[("FieldValueInvalid", "spec.updateStrategy.rollingUpdate.maxUnavailable")],
        &[r#"spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "101%": must not be greater than 100%"#],
    );
}

/// Creates the valid object of `kind` and returns it as stored.
async fn created(server: &ApiServer, kind: &str) -> Value {
    let (obj, uri) = valid(kind);
    let (code, v) = post(server, uri, &obj).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    v
}

#[tokio::test]
async fn job_max_failed_indexes_above_completions_on_update() {
    let server = ApiServer::default();
    let job = created(&server, "Job").await;
    let put = edited(
        job,
        &json!({"/spec/completionMode": "Indexed", "/spec/completions": 10, "/spec/backoffLimitPerIndex": 1, "/spec/maxFailedIndexes": 11}),
    );
    let (code, v) = raw(&server, Method::PUT, &format!("{JOBS}/w"), JSON, put.to_string()).await;
    assert_invalid(
        code,
        &v,
        "Job",
        &[
            ("FieldValueInvalid", "spec.maxFailedIndexes"),
            ("FieldValueInvalid", "spec.completions"),
            ("FieldValueInvalid", "spec.completionMode"),
            ("FieldValueInvalid", "spec.backoffLimitPerIndex"),
        ],
        &[
            "spec.maxFailedIndexes: Invalid value: 11: must be less than or equal to completions",
            "spec.completions: Invalid value: 10: can only be modified in tandem with spec.parallelism",
            r#"spec.completionMode: Invalid value: "Indexed": field is immutable"#,
            "spec.backoffLimitPerIndex: Invalid value: 1: field is immutable",
        ],
    );
}

#[tokio::test]
async fn job_update_add_pod_failure_policy() {
    let server = ApiServer::default();
    created(&server, "Job").await;
    let patch = json!([{"op": "add", "path": "/spec/podFailurePolicy",
        "value": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}}]);
    let (code, v) = raw(&server, Method::PATCH, &format!("{JOBS}/w"), JSON_PATCH, patch.to_string()).await;
    assert_invalid(
        code,
        &v,
        "Job",
        &[("FieldValueNotSupported", "spec.podReplacementPolicy"), ("FieldValueInvalid", "spec.podFailurePolicy")],
        &[
            r#"spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed""#,
            r#"spec.podFailurePolicy: Invalid value: {"Rules":[{"Action":"Ignore","OnExitCodes":null,"OnPodConditions":[{"Type":"DisruptionTarget","Status":"True"}]}]}: field is immutable"#,
        ],
    );
}

/// Writes `edits` into the Job's status through `/status`.
async fn job_status_write(server: &ApiServer, edits: Value) -> (StatusCode, Value) {
    created(server, "Job").await;
    let (_, job) = get(server, &format!("{JOBS}/w")).await;
    let put = edited(job, &edits);
    raw(server, Method::PUT, &format!("{JOBS}/w/status"), JSON, put.to_string()).await
}

#[tokio::test]
async fn job_status_negative_counts() {
    let server = ApiServer::default();
    let (code, v) = job_status_write(
        &server,
        json!({"/status/succeeded": -2, "/status/failed": -3, "/status/ready": -1, "/status/terminating": -2}),
    )
    .await;
    assert_invalid(
        code,
        &v,
        "Job",
        &[
            ("FieldValueInvalid", "status.succeeded"),
            ("FieldValueInvalid", "status.failed"),
            ("FieldValueInvalid", "status.ready"),
            ("FieldValueInvalid", "status.terminating"),
            ("FieldValueInvalid", "status.failed"),
            ("FieldValueInvalid", "status.succeeded"),
        ],
        &[
            "status.succeeded: Invalid value: -2: must be greater than or equal to 0",
            "status.failed: Invalid value: -3: must be greater than or equal to 0",
            "status.ready: Invalid value: -1: must be greater than or equal to 0",
            "status.terminating: Invalid value: -2: must be greater than or equal to 0",
            "status.failed: Invalid value: -3: cannot decrease the failed counter",
            "status.succeeded: Invalid value: -2: cannot decrease the succeeded counter",
        ],
    );
}

#[tokio::test]
async fn job_status_uncounted_duplicates() {
    let server = ApiServer::default();
    let (code, v) = job_status_write(
        &server,
        json!({"/status/uncountedTerminatedPods": {"succeeded": ["a", "b", "c", "a", ""], "failed": ["c", "d", "e", "d", ""]}}),
    )
    .await;
    assert_invalid(
        code,
        &v,
        "Job",
        &[
            ("FieldValueDuplicate", "status.uncountedTerminatedPods.succeeded[3]"),
            ("FieldValueInvalid", "status.uncountedTerminatedPods.succeeded[4]"),
            ("FieldValueDuplicate", "status.uncountedTerminatedPods.failed[0]"),
            ("FieldValueDuplicate", "status.uncountedTerminatedPods.failed[3]"),
            ("FieldValueInvalid", "status.uncountedTerminatedPods.failed[4]"),
        ],
        &[
            r#"status.uncountedTerminatedPods.succeeded[3]: Duplicate value: "a""#,
            r#"status.uncountedTerminatedPods.succeeded[4]: Invalid value: "": must not be empty"#,
            r#"status.uncountedTerminatedPods.failed[0]: Duplicate value: "c""#,
            r#"status.uncountedTerminatedPods.failed[3]: Duplicate value: "d""#,
            r#"status.uncountedTerminatedPods.failed[4]: Invalid value: "": must not be empty"#,
        ],
    );
}

/// A merge patch that nulls the spec leaves the zero spec, whose pod template is still
/// defaulted (restart and DNS policies), so only the selector and containers are missing.
#[tokio::test]
async fn rs_merge_patch_spec_null() {
    let server = ApiServer::default();
    created(&server, "ReplicaSet").await;
    let (code, v) =
        raw(&server, Method::PATCH, &format!("{REPLICASETS}/w"), MERGE, r#"{"spec":null}"#.to_string()).await;
    assert_invalid(
        code,
        &v,
        "ReplicaSet",
        &[
            ("FieldValueRequired", "spec.selector"),
            ("FieldValueInvalid", "spec.template.metadata.labels"),
            ("FieldValueRequired", "spec.template.spec.containers"),
            ("FieldValueInvalid", "spec.selector"),
        ],
        &[
            "spec.selector: Required value",
            "spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`",
            "spec.template.spec.containers: Required value",
            "spec.selector: Invalid value: null: field is immutable",
        ],
    );
}

const QUALIFIED_NAME_REGEX: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// Neighbours of the cases above, worded from upstream's code: the rest of the pod failure
/// and success policies and of the strategies.
#[rstest]
#[case::job_pod_failure_policy_rules(
    "Job",
    json!({"/spec/podFailurePolicy": {"rules": [
        {"onExitCodes": {"containerName": "nope", "values": [0, 0]}},
        {"action": "FailIndex", "onPodConditions": [{"type": "Bad Type", "status": "Maybe"}]}]}}),
    &[
        ("FieldValueRequired", "spec.podFailurePolicy.rules[0].action"),
        ("FieldValueRequired", "spec.podFailurePolicy.rules[0].onExitCodes.operator"),
        ("FieldValueInvalid", "spec.podFailurePolicy.rules[0].onExitCodes.containerName"),
        ("FieldValueDuplicate", "spec.podFailurePolicy.rules[0].onExitCodes.values[1]"),
        ("FieldValueInvalid", "spec.podFailurePolicy.rules[1].action"),
        ("FieldValueInvalid", "spec.podFailurePolicy.rules[1].onPodConditions[0].type"),
        ("FieldValueNotSupported", "spec.podFailurePolicy.rules[1].onPodConditions[0].status"),
    ],
    &[
        r#"spec.podFailurePolicy.rules[0].action: Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]"#,
        r#"spec.podFailurePolicy.rules[0].onExitCodes.operator: Required value: valid values: ["In" "NotIn"]"#,
        r#"spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: "nope": must be one of the container or initContainer names in the pod template"#,
        "spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Duplicate value: 0",
        r#"spec.podFailurePolicy.rules[1].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set"#,
        &format!(r#"spec.podFailurePolicy.rules[1].onPodConditions[0].type: Invalid value: "Bad Type": {QUALIFIED_NAME_REGEX}"#),
        r#"spec.podFailurePolicy.rules[1].onPodConditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown""#,
    ]
)]
#[case::job_success_policy_rules(
    "Job",
    json!({"/spec/completionMode": "Indexed", "/spec/completions": 5,
        "/spec/successPolicy": {"rules": [{"succeededIndexes": "3,1", "succeededCount": 3}, {}]}}),
    &[
        ("FieldValueInvalid", "spec.successPolicy.rules[0].succeededIndexes"),
        ("FieldValueInvalid", "spec.successPolicy.rules[0].succeededCount"),
        ("FieldValueRequired", "spec.successPolicy.rules[1]"),
    ],
    &[
        r#"spec.successPolicy.rules[0].succeededIndexes: Invalid value: "3,1": error parsing succeededIndexes: non-increasing order, previous: 3, current: 1"#,
        "spec.successPolicy.rules[0].succeededCount: Invalid value: 3: must be less than or equal to 0 (the number of indexes in the specified succeededIndexes field)",
        "spec.successPolicy.rules[1]: Required value: at least one of succeededCount or succeededIndexes must be specified",
    ]
)]
#[case::job_success_policy_non_indexed(
    "Job",
    json!({"/spec/successPolicy": {"rules": [{"succeededCount": 1}]}}),
    &[("FieldValueInvalid", "spec.successPolicy")],
    &[r#"spec.successPolicy: Invalid value: {"Rules":[{"SucceededIndexes":null,"SucceededCount":1}]}: requires indexed completion mode"#]
)]
#[case::deploy_strategy_unsupported(
    "Deployment",
    json!({"/spec/strategy": {"type": "BlueGreen"}}),
    &[("FieldValueNotSupported", "spec.strategy")],
    &[r#"spec.strategy: Unsupported value: {"Type":"BlueGreen","RollingUpdate":null}: supported values: "Recreate", "RollingUpdate""#]
)]
#[case::sts_update_strategy_unsupported(
    "StatefulSet",
    json!({"/spec/updateStrategy": {"type": "Sideways"}}),
    &[("FieldValueInvalid", "spec.updateStrategy")],
    &[r#"spec.updateStrategy: Invalid value: {"Type":"Sideways","RollingUpdate":null}: must be 'RollingUpdate' or 'OnDelete'"#]
)]
#[tokio::test]
async fn neighbours_are_refused_as_upstream_refuses_them(
    #[case] kind: &str,
    #[case] edits: Value,
    #[case] want: &[(&str, &str)],
    #[case] errors: &[&str],
) {
    let server = ApiServer::default();
    let (obj, uri) = valid(kind);
    let (code, v) = post(&server, uri, &edited(obj, &edits)).await;
    assert_invalid(code, &v, kind, want, errors);
}

/// A Job marked Complete needs its times and the SuccessCriteriaMet condition.
#[tokio::test]
async fn job_status_complete_without_times() {
    let server = ApiServer::default();
    let (code, v) =
        job_status_write(&server, json!({"/status/conditions": [{"type": "Complete", "status": "True"}]})).await;
    assert_invalid(
        code,
        &v,
        "Job",
        &[
            ("FieldValueRequired", "status.completionTime"),
            ("FieldValueInvalid", "status.conditions"),
            ("FieldValueRequired", "status.startTime"),
        ],
        &[
            "status.completionTime: Required value: completionTime is required for Complete jobs",
            "status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
            "status.startTime: Required value: startTime is required for finished job",
        ],
    );
}

/// `ValidateStatefulSetUpdate` reports its immutable fields in its own order.
#[tokio::test]
async fn sts_immutable_fields_in_upstream_order() {
    let server = ApiServer::default();
    let sts = created(&server, "StatefulSet").await;
    let put = edited(
        sts,
        &json!({"/spec/selector/matchLabels/tier": "x", "/spec/template/metadata/labels/tier": "x",
            "/spec/serviceName": "other", "/spec/podManagementPolicy": "Parallel"}),
    );
    let (code, v) = raw(&server, Method::PUT, &format!("{STATEFULSETS}/w"), JSON, put.to_string()).await;
    assert_invalid(
        code,
        &v,
        "StatefulSet",
        &[
            ("FieldValueInvalid", "spec.selector"),
            ("FieldValueInvalid", "spec.serviceName"),
            ("FieldValueInvalid", "spec.podManagementPolicy"),
        ],
        &[
            r#"spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"x"}}: field is immutable"#,
            r#"spec.serviceName: Invalid value: "other": field is immutable"#,
            r#"spec.podManagementPolicy: Invalid value: "Parallel": field is immutable"#,
        ],
    );
}

/// A Deployment's collision count may not go down.
#[tokio::test]
async fn deploy_status_collision_count_decremented() {
    let server = ApiServer::default();
    created(&server, "Deployment").await;
    let uri = format!("{DEPLOYMENTS}/w/status");
    let (code, v) = raw(&server, Method::PATCH, &uri, MERGE, r#"{"status":{"collisionCount":2}}"#.to_string()).await;
    assert_eq!(code, StatusCode::OK, "{v}");
    let (code, v) = raw(&server, Method::PATCH, &uri, MERGE, r#"{"status":{"collisionCount":1}}"#.to_string()).await;
    assert_invalid(
        code,
        &v,
        "Deployment",
        &[("FieldValueInvalid", "status.collisionCount")],
        &["status.collisionCount: Invalid value: 1: cannot be decremented"],
    );
}

/// A selector a client sets on a Job without `manualSelector` gets the uid label added
/// (`generateSelector`) and must then select only what the generated labels select.
#[tokio::test]
async fn job_selector_not_auto_generated() {
    let server = ApiServer::default();
    let (obj, uri) = valid("Job");
    let (code, v) =
        post(&server, uri, &edited(obj, &json!({"/spec/selector": {"matchLabels": {"app": "batch"}}}))).await;
    assert_eq!((code, v["reason"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("Invalid")), "{v}");
    assert_eq!(causes(&v), [("spec.selector".to_string(), "FieldValueInvalid".to_string())], "{v}");
    let message = v["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(r#"Job.batch "w" is invalid: spec.selector: Invalid value: {"matchLabels":{"app":"batch","batch.kubernetes.io/controller-uid":""#),
        "{message}"
    );
    assert!(message.ends_with(r#""}}: `selector` not auto-generated"#), "{message}");
}

/// The rest of `ValidatePersistentVolumeClaimSpec` on a volume claim template.
#[tokio::test]
async fn sts_volume_claim_template_spec_rules() {
    let server = ApiServer::default();
    let (obj, uri) = valid("StatefulSet");
    let claim = json!({"metadata": {"name": "data"}, "spec": {"accessModes": ["Bad", "ReadWriteOncePod", "ReadWriteOnce"],
        "storageClassName": "Bad_Name", "volumeMode": "Weird"}});
    let (code, v) = post(&server, uri, &edited(obj, &json!({"/spec/volumeClaimTemplates": [claim]}))).await;
    let at = "spec.volumeClaimTemplates[0].spec";
    assert_invalid(
        code,
        &v,
        "StatefulSet",
        &[
            ("FieldValueNotSupported", &format!("{at}.accessModes")),
            ("FieldValueForbidden", &format!("{at}.accessModes")),
            ("FieldValueRequired", &format!("{at}.resources[storage]")),
            ("FieldValueInvalid", &format!("{at}.storageClassName")),
            ("FieldValueNotSupported", &format!("{at}.volumeMode")),
        ],
        &[
            &format!(
                r#"{at}.accessModes: Unsupported value: "Bad": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod""#
            ),
            &format!("{at}.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"),
            &format!("{at}.resources[storage]: Required value"),
            &format!(
                r#"{at}.storageClassName: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#
            ),
            &format!(r#"{at}.volumeMode: Unsupported value: "Weird": supported values: "Block", "Filesystem""#),
        ],
    );
}
