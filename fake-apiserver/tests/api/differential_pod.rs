//! Disagreements with kube-apiserver v1.37.2 on pod validation that `kproof differential
//! --generator upstream` found, each kept as the answer the real server gave. The cases are
//! named as in `harness/src/differential/upstream-cases.yaml` and rebuild its edits on the
//! corpus' valid objects (`kinds.yaml`).

use crate::common::{causes, post, raw};
use fake_apiserver::ApiServer;
use http::{Method, StatusCode};
use rstest::rstest;
use serde_json::{Value, json};

const PODS: &str = "/api/v1/namespaces/default/pods";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const REPLICASETS: &str = "/apis/apps/v1/namespaces/default/replicasets";
const STATEFULSETS: &str = "/apis/apps/v1/namespaces/default/statefulsets";
const RCS: &str = "/api/v1/namespaces/default/replicationcontrollers";

const MERGE: Option<&str> = Some("application/merge-patch+json");
const STRATEGIC: Option<&str> = Some("application/strategic-merge-patch+json");
const JSON_PATCH: Option<&str> = Some("application/json-patch+json");
const JSON: Option<&str> = Some("application/json");

/// What `ValidatePodUpdate` says of a spec changed beyond what an update may change (upstream
/// follows it with a diff of the two specs, which the fake server leaves out).
const SPEC_FORBIDDEN: &str = "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// The corpus' valid pod spec (`kinds.yaml`), also the template of its workloads.
fn valid_spec() -> Value {
    json!({
        "containers": [{
            "name": "app",
            "image": "registry.example/app:1.0",
            "ports": [{"name": "http", "containerPort": 8080}],
            "env": [{"name": "MODE", "value": "test"}],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}},
            "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]
        }],
        "volumes": [{"name": "scratch", "emptyDir": {}}],
        "schedulerName": "kproof-differential-unscheduled"
    })
}

fn valid_pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"app": "web"}}, "spec": valid_spec()})
}

fn workload(kind: &str) -> Value {
    let template = json!({"metadata": {"labels": {"app": "web"}}, "spec": valid_spec()});
    match kind {
        "ReplicationController" => json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": "w"},
            "spec": {"replicas": 2, "selector": {"app": "web"}, "template": template}}),
        "StatefulSet" => json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w"},
            "spec": {"replicas": 1, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}}, "template": template}}),
        _ => json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": template}}),
    }
}

/// Sets `value` at the JSON pointer `at`, creating the objects on the way (an index one past
/// the end appends), as the corpus' `set` edits do.
fn set(obj: &mut Value, at: &str, value: Value) {
    let parts: Vec<String> = at.split('/').skip(1).map(|p| p.replace("~1", "/").replace("~0", "~")).collect();
    let (last, parents) = parts.split_last().expect("a pointer below the root");
    let mut cur = obj;
    for part in parents {
        cur = child(cur, part);
    }
    *child(cur, last) = value;
}

/// The member `part` of `v` (an object's key or an array's index), made when missing.
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

fn edited(mut obj: Value, edits: Value) -> Value {
    for (at, value) in edits.as_object().expect("edits").clone() {
        set(&mut obj, &at, value);
    }
    obj
}

/// The message kube-apiserver builds from the causes' errors (`ToAggregate`).
fn invalid_message(object: &str, errors: &[&str]) -> String {
    match errors {
        [one] => format!("{object} is invalid: {one}"),
        many => format!("{object} is invalid: [{}]", many.join(", ")),
    }
}

/// A 422 Invalid with these causes (type, field) in this order and these errors in the message.
fn assert_invalid(code: StatusCode, v: &Value, object: &str, want: &[(&str, &str)], errors: &[&str]) {
    assert_eq!((code, v["reason"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("Invalid")), "{v}");
    let got = causes(v);
    let got: Vec<(&str, &str)> = got.iter().map(|(f, r)| (r.as_str(), f.as_str())).collect();
    assert_eq!(got, want, "{v}");
    let message = v["message"].as_str().unwrap_or_default();
    if errors.last() == Some(&SPEC_FORBIDDEN) {
        // Upstream appends the spec diff (and then the closing bracket) to the last error.
        let full = invalid_message(object, errors);
        assert!(message.starts_with(full.trim_end_matches(']')), "{message}\nwanted {full}");
    } else {
        assert_eq!(message, invalid_message(object, errors));
    }
}

const LABEL_NAME_REGEX: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// Pods created with one of the corpus' edits, refused as kube-apiserver refuses them.
#[rstest]
#[case::pod_host_port_not_unique(
    json!({"/spec/containers/0/ports/0/hostPort": 80, "/spec/containers/1": {"name": "def", "image": "image", "ports": [{"containerPort": 81, "hostPort": 80, "protocol": "TCP"}]}}),
    &[("FieldValueDuplicate", "spec.containers[1].ports[0].hostPort")],
    &[r#"spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//80""#]
)]
#[case::pod_dns_four_nameservers(
    json!({"/spec/dnsConfig": {"nameservers": ["127.0.0.1", "10.0.0.10", "8.8.8.8", "1.2.3.4"]}}),
    &[("FieldValueInvalid", "spec.dnsConfig.nameservers")],
    &[r#"spec.dnsConfig.nameservers: Invalid value: ["127.0.0.1","10.0.0.10","8.8.8.8","1.2.3.4"]: must not have more than 3 nameservers"#]
)]
#[case::pod_sysctl_ipc_with_host_ipc(
    json!({"/spec/hostIPC": true, "/spec/securityContext/sysctls": [{"name": "kernel.shmmax", "value": "1"}]}),
    &[("FieldValueInvalid", "spec.securityContext.sysctls[0].name")],
    &[r#"spec.securityContext.sysctls[0].name: Invalid value: "kernel.shmmax": may not be specified when 'hostIPC' is true"#]
)]
#[case::pod_limit_disk_resource(
    json!({"/spec/containers/0/resources/limits/disk": "10G"}),
    &[
        ("FieldValueInvalid", "spec.containers[0].resources.limits[disk]"),
        ("FieldValueInvalid", "spec.containers[0].resources.limits[disk]"),
        ("FieldValueInvalid", "spec.containers[0].resources.requests[disk]"),
        ("FieldValueInvalid", "spec.containers[0].resources.requests[disk]"),
    ],
    &[
        r#"spec.containers[0].resources.limits[disk]: Invalid value: "disk": must be a standard resource type or fully qualified"#,
        r#"spec.containers[0].resources.limits[disk]: Invalid value: "disk": must be a standard resource for containers"#,
        r#"spec.containers[0].resources.requests[disk]: Invalid value: "disk": must be a standard resource type or fully qualified"#,
        r#"spec.containers[0].resources.requests[disk]: Invalid value: "disk": must be a standard resource for containers"#,
    ]
)]
#[case::pod_spread_max_skew_missing(
    json!({"/spec/topologySpreadConstraints": [{"topologyKey": "k8s.io/zone", "whenUnsatisfiable": "DoNotSchedule"}]}),
    &[("FieldValueInvalid", "spec.topologySpreadConstraints[0].maxSkew")],
    &["spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero"]
)]
#[case::pod_node_affinity_match_fields_two_values(
    json!({"/spec/affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["host1", "host2"]}]}]}}}}),
    &[("FieldValueRequired", "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values")],
    &["spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector"]
)]
#[case::pod_liveness_probe_negative_numbers(
    json!({"/spec/containers/0/livenessProbe": {"tcpSocket": {"port": 80}, "initialDelaySeconds": -1, "timeoutSeconds": -1, "periodSeconds": -1, "successThreshold": -1, "failureThreshold": -1, "terminationGracePeriodSeconds": -1}}),
    &[
        ("FieldValueInvalid", "spec.containers[0].livenessProbe.initialDelaySeconds"),
        ("FieldValueInvalid", "spec.containers[0].livenessProbe.timeoutSeconds"),
        ("FieldValueInvalid", "spec.containers[0].livenessProbe.periodSeconds"),
        ("FieldValueInvalid", "spec.containers[0].livenessProbe.successThreshold"),
        ("FieldValueInvalid", "spec.containers[0].livenessProbe.failureThreshold"),
        ("FieldValueInvalid", "spec.containers[0].livenessProbe.terminationGracePeriodSeconds"),
        ("FieldValueInvalid", "spec.containers[0].livenessProbe.successThreshold"),
    ],
    &[
        "spec.containers[0].livenessProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0",
        "spec.containers[0].livenessProbe.timeoutSeconds: Invalid value: -1: must be greater than or equal to 0",
        "spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
        "spec.containers[0].livenessProbe.successThreshold: Invalid value: -1: must be greater than or equal to 0",
        "spec.containers[0].livenessProbe.failureThreshold: Invalid value: -1: must be greater than or equal to 0",
        "spec.containers[0].livenessProbe.terminationGracePeriodSeconds: Invalid value: -1: must be greater than 0",
        "spec.containers[0].livenessProbe.successThreshold: Invalid value: -1: must be 1",
    ]
)]
#[case::pod_container_restart_policy_unknown(
    json!({"/spec/containers/0/restartPolicy": "invalid"}),
    &[("FieldValueNotSupported", "spec.containers[0].restartPolicy")],
    &[r#"spec.containers[0].restartPolicy: Unsupported value: "invalid": supported values: "Always", "Never", "OnFailure""#]
)]
#[case::pod_windows_with_pod_level_resources(
    json!({"/spec/os": {"name": "windows"}, "/spec/resources": {"limits": {"cpu": "100m", "memory": "200Mi"}}}),
    &[("FieldValueForbidden", "spec.resources")],
    &["spec.resources: Forbidden: may not be set for a windows pod"]
)]
#[case::pod_prestop_http_no_port(
    json!({"/spec/containers/0/lifecycle": {"preStop": {"httpGet": {"path": "/", "scheme": "HTTP"}}}}),
    &[("FieldValueInvalid", "spec.containers[0].lifecycle.preStop.httpGet.port")],
    &["spec.containers[0].lifecycle.preStop.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive"]
)]
#[case::pod_scheduling_gates_with_node_name(
    json!({"/spec/nodeName": "node", "/spec/schedulingGates": [{"name": "foo"}]}),
    &[("FieldValueForbidden", "spec.nodeName")],
    &["spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"]
)]
#[case::pod_sa_token_projection_too_short(
    json!({"/spec/serviceAccountName": "default", "/spec/volumes/1": {"name": "projected-volume", "projected": {"sources": [{"serviceAccountToken": {"audience": "foo-audience", "expirationSeconds": 300, "path": "foo-path"}}]}}}),
    &[("FieldValueInvalid", "spec.volumes[1].projected.sources[0].serviceAccountToken.expirationSeconds")],
    &["spec.volumes[1].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"]
)]
#[case::pod_image_surrounding_whitespace(
    json!({"/spec/containers/0/image": " something "}),
    &[("FieldValueInvalid", "spec.containers[0].image")],
    &[r#"spec.containers[0].image: Invalid value: " something ": must not have leading or trailing whitespace"#]
)]
#[case::pod_downward_api_both_refs(
    json!({"/spec/volumes/1": {"name": "downapi", "downwardAPI": {"items": [{"path": "test", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}, "resourceFieldRef": {"containerName": "app", "resource": "requests.memory"}}]}}}),
    &[("FieldValueInvalid", "spec.volumes[1].downwardAPI")],
    &[r#"spec.volumes[1].downwardAPI: Invalid value: "resource": fieldRef and resourceFieldRef can not be specified simultaneously"#]
)]
#[case::pod_host_pid_with_share_process_namespace(
    json!({"/spec/hostPID": true, "/spec/shareProcessNamespace": true}),
    &[("FieldValueInvalid", "spec.shareProcessNamespace")],
    &["spec.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"]
)]
#[case::pod_hostname_override_with_host_network(
    json!({"/spec/hostnameOverride": "custom-host", "/spec/hostNetwork": true}),
    &[("FieldValueForbidden", "spec.hostnameOverride")],
    &["spec.hostnameOverride: Forbidden: may not be specified when hostNetwork is true"]
)]
#[case::pod_os_windows_with_linux_security_context(
    json!({"/spec/os": {"name": "windows"}, "/spec/securityContext/seLinuxOptions": {"role": "dummyRole"}}),
    &[("FieldValueForbidden", "spec.securityContext.seLinuxOptions")],
    &["spec.securityContext.seLinuxOptions: Forbidden: cannot be set for a windows pod"]
)]
#[case::pod_level_requests_below_containers(
    json!({"/spec/resources": {"requests": {"cpu": "50m"}}}),
    &[("FieldValueInvalid", "spec.resources.requests[cpu]")],
    &[r#"spec.resources.requests[cpu]: Invalid value: "50m": must be greater than or equal to aggregate container requests of 100m"#]
)]
#[case::pod_host_users_false_with_host_network(
    json!({"/spec/hostUsers": false, "/spec/hostNetwork": true}),
    &[("FieldValueForbidden", "spec.hostNetwork")],
    &["spec.hostNetwork: Forbidden: when `hostUsers` is false"]
)]
#[case::pod_mirror_annotation_without_node(
    json!({"/metadata/annotations/kubernetes.io~1config.mirror": "foo"}),
    &[("FieldValueInvalid", "metadata.annotations[kubernetes.io/config.mirror]")],
    &[r#"metadata.annotations[kubernetes.io/config.mirror]: Invalid value: "foo": must set spec.nodeName if mirror pod annotation is set"#]
)]
#[case::pod_node_affinity_preferred_weight_199(
    json!({"/spec/affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 199, "preference": {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}}]}}}),
    &[("FieldValueInvalid", "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight")],
    &["spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 199: must be in the range 1-100"]
)]
#[case::pod_dns_none_without_nameserver(
    json!({"/spec/dnsPolicy": "None", "/spec/dnsConfig": {"searches": ["custom"]}}),
    &[("FieldValueRequired", "spec.dnsConfig.nameservers")],
    &["spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None"]
)]
#[case::pod_host_path_type_unknown(
    json!({"/spec/volumes/1": {"name": "hostpath", "hostPath": {"path": "/mnt/path", "type": "invalid"}}}),
    &[("FieldValueNotSupported", "spec.volumes[1].hostPath.type")],
    &[r#"spec.volumes[1].hostPath.type: Unsupported value: "invalid": supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket""#]
)]
#[case::pod_apparmor_annotation_unknown_container(
    json!({"/metadata/annotations/container.apparmor.security.beta.kubernetes.io~1fake-ctr": "runtime/default"}),
    &[("FieldValueInvalid", "metadata.annotations[container.apparmor.security.beta.kubernetes.io/fake-ctr]")],
    &[r#"metadata.annotations[container.apparmor.security.beta.kubernetes.io/fake-ctr]: Invalid value: "fake-ctr": container not found"#]
)]
#[case::pod_affinity_match_and_mismatch_same_key(
    json!({"/spec/affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchExpressions": [{"key": "key", "operator": "NotIn", "values": ["value1", "value2"]}]}, "topologyKey": "k8s.io/zone", "matchLabelKeys": ["samekey"], "mismatchLabelKeys": ["samekey"]}]}}}),
    &[("FieldValueInvalid", "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys[0]")],
    &[r#"spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys[0]: Invalid value: "samekey": exists in both matchLabelKeys and mismatchLabelKeys"#]
)]
#[case::pod_volume_mount_rro_not_read_only(
    json!({"/spec/containers/0/volumeMounts/0/recursiveReadOnly": "Enabled"}),
    &[("FieldValueForbidden", "spec.containers[0].volumeMounts.recursiveReadOnly")],
    &["spec.containers[0].volumeMounts.recursiveReadOnly: Forbidden: may only be specified when readOnly is true"]
)]
#[case::pod_seccomp_annotation_field_mismatch(
    json!({"/metadata/annotations/seccomp.security.alpha.kubernetes.io~1pod": "unconfined", "/spec/securityContext/seccompProfile": {"type": "RuntimeDefault"}}),
    &[("FieldValueForbidden", "spec.securityContext.seccompProfile.type")],
    &["spec.securityContext.seccompProfile.type: Forbidden: seccomp type in annotation and field must match"]
)]
#[tokio::test]
async fn a_pod_is_refused_as_upstream_refuses_it(
    #[case] edits: Value,
    #[case] want: &[(&str, &str)],
    #[case] errors: &[&str],
) {
    let server = ApiServer::default();
    let (code, v) = post(&server, &format!("{PODS}?dryRun=All"), &edited(valid_pod(), edits)).await;
    assert_invalid(code, &v, r#"Pod "p""#, want, errors);
}

/// Pods updated by a patch with one of the corpus' edits: the new spec's errors come first,
/// then what the update may not change.
#[rstest]
#[case::pod_extended_resource_request_below_limit(
    STRATEGIC,
    json!({"spec": {"containers": [{"name": "app", "resources": {"requests": {"example.com/a": "1"}, "limits": {"example.com/a": "2"}}}]}}).to_string(),
    &[("FieldValueInvalid", "spec.containers[0].resources.requests"), ("FieldValueForbidden", "spec")],
    &[r#"spec.containers[0].resources.requests: Invalid value: "1": must be equal to example.com/a limit of 2"#, SPEC_FORBIDDEN]
)]
#[case::pod_node_affinity_operator_missing(
    STRATEGIC,
    json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "key1"}]}]}}}}}).to_string(),
    &[
        ("FieldValueInvalid", "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator"),
        ("FieldValueForbidden", "spec"),
    ],
    &[r#"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "": not a valid selector operator"#, SPEC_FORBIDDEN]
)]
#[case::pod_affinity_required_topology_key_empty(
    JSON_PATCH,
    json!([{"op": "add", "path": "/spec/affinity", "value": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchExpressions": [{"key": "key2", "operator": "In", "values": ["value1", "value2"]}]}, "namespaces": ["ns"]}]}}}]).to_string(),
    &[
        ("FieldValueRequired", "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"),
        ("FieldValueInvalid", "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"),
        ("FieldValueInvalid", "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"),
        ("FieldValueForbidden", "spec"),
    ],
    &[
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty",
        r#"spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: "": name part must be non-empty"#,
        &format!(r#"spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: "": {LABEL_NAME_REGEX}"#),
        SPEC_FORBIDDEN,
    ]
)]
#[case::pod_update_active_deadline_negative(
    MERGE,
    json!({"spec": {"activeDeadlineSeconds": -1}}).to_string(),
    &[("FieldValueInvalid", "spec.activeDeadlineSeconds"), ("FieldValueInvalid", "spec.activeDeadlineSeconds")],
    &[
        "spec.activeDeadlineSeconds: Invalid value: -1: must be between 1 and 2147483647, inclusive",
        "spec.activeDeadlineSeconds: Invalid value: -1: must be between 0 and 2147483647, inclusive",
    ]
)]
#[case::pod_active_deadline_too_large(
    STRATEGIC,
    json!({"spec": {"activeDeadlineSeconds": 2147483648_i64}}).to_string(),
    &[("FieldValueInvalid", "spec.activeDeadlineSeconds"), ("FieldValueInvalid", "spec.activeDeadlineSeconds")],
    &[
        "spec.activeDeadlineSeconds: Invalid value: 2147483648: must be between 1 and 2147483647, inclusive",
        "spec.activeDeadlineSeconds: Invalid value: 2147483648: must be between 0 and 2147483647, inclusive",
    ]
)]
#[case::pod_init_container_with_lifecycle(
    MERGE,
    json!({"spec": {"initContainers": [{"name": "init", "image": "image", "lifecycle": {"preStop": {"exec": {"command": ["ls", "-l"]}}}}]}}).to_string(),
    &[("FieldValueForbidden", "spec.initContainers[0].lifecycle"), ("FieldValueForbidden", "spec.initContainers")],
    &[
        "spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers without restartPolicy=Always",
        "spec.initContainers: Forbidden: pod updates may not add or remove containers",
    ]
)]
#[case::pod_readiness_probe_termination_grace(
    JSON_PATCH,
    json!([{"op": "add", "path": "/spec/containers/0/readinessProbe", "value": {"tcpSocket": {"port": 80}, "terminationGracePeriodSeconds": 10}}]).to_string(),
    &[("FieldValueInvalid", "spec.containers[0].readinessProbe.terminationGracePeriodSeconds"), ("FieldValueForbidden", "spec")],
    &["spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 10: must not be set for readinessProbes", SPEC_FORBIDDEN]
)]
#[case::pod_host_alias_ip_leading_zeros(
    MERGE,
    json!({"spec": {"hostAliases": [{"ip": "001.002.003.004", "hostnames": ["host1", "host2"]}]}}).to_string(),
    &[("FieldValueInvalid", "spec.hostAliases[0].ip"), ("FieldValueForbidden", "spec")],
    &[r#"spec.hostAliases[0].ip: Invalid value: "001.002.003.004": must not have leading 0s"#, SPEC_FORBIDDEN]
)]
#[case::pod_spread_min_domains_with_schedule_anyway(
    MERGE,
    json!({"spec": {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "k8s.io/zone", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 10}]}}).to_string(),
    &[("FieldValueInvalid", "spec.topologySpreadConstraints[0].minDomains"), ("FieldValueForbidden", "spec")],
    &["spec.topologySpreadConstraints[0].minDomains: Invalid value: 10: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway", SPEC_FORBIDDEN]
)]
#[tokio::test]
async fn a_pod_update_is_refused_as_upstream_refuses_it(
    #[case] content_type: Option<&str>,
    #[case] patch: String,
    #[case] want: &[(&str, &str)],
    #[case] errors: &[&str],
) {
    let server = ApiServer::default();
    let (code, v) = post(&server, PODS, &valid_pod()).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let (code, v) = raw(&server, Method::PATCH, &format!("{PODS}/p"), content_type, patch).await;
    assert_invalid(code, &v, r#"Pod "p""#, want, errors);
}

/// Status writes of a pod, refused as upstream refuses them.
#[rstest]
#[case::pod_status_nominated_node_uppercase(
    json!({"status": {"nominatedNodeName": "Node1"}}),
    &[("FieldValueInvalid", "status.nominatedNodeName")],
    &[r#"status.nominatedNodeName: Invalid value: "Node1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#]
)]
#[case::pod_status_observed_generation_negative(
    json!({"status": {"observedGeneration": -1}}),
    &[("FieldValueInvalid", "status.observedGeneration")],
    &["status.observedGeneration: Invalid value: -1: must be a non-negative integer"]
)]
#[case::pod_status_claim_status_unknown_claim(
    json!({"status": {"resourceClaimStatuses": [{"name": "no-such-claim", "resourceClaimName": "my-claim"}]}}),
    &[("FieldValueInvalid", "status.resourceClaimStatuses[0].name")],
    &["status.resourceClaimStatuses[0].name: Invalid value: \"no-such-claim\": must match the name of an entry in `spec.resourceClaims`"]
)]
#[case::pod_status_qos_class_change(
    json!({"status": {"qosClass": "Guaranteed"}}),
    &[("FieldValueInvalid", "status.qosClass")],
    &[r#"status.qosClass: Invalid value: "Guaranteed": field is immutable"#]
)]
#[tokio::test]
async fn a_pod_status_write_is_refused_as_upstream_refuses_it(
    #[case] patch: Value,
    #[case] want: &[(&str, &str)],
    #[case] errors: &[&str],
) {
    let server = ApiServer::default();
    let (code, v) = post(&server, PODS, &valid_pod()).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let (code, v) = raw(&server, Method::PATCH, &format!("{PODS}/p/status"), MERGE, patch.to_string()).await;
    assert_invalid(code, &v, r#"Pod "p""#, want, errors);
}

/// The QoS class is immutable through a whole-object status PUT too, and one left out is
/// carried over rather than cleared.
#[tokio::test]
async fn a_status_put_keeps_the_qos_class() {
    let server = ApiServer::default();
    let (code, pod) = post(&server, PODS, &valid_pod()).await;
    assert_eq!(code, StatusCode::CREATED, "{pod}");
    assert_eq!(pod["status"]["qosClass"], "Burstable");
    let mut changed = pod.clone();
    changed["status"]["qosClass"] = json!("Guaranteed");
    let (code, v) = raw(&server, Method::PUT, &format!("{PODS}/p/status"), JSON, changed.to_string()).await;
    assert_invalid(
        code,
        &v,
        r#"Pod "p""#,
        &[("FieldValueInvalid", "status.qosClass")],
        &[r#"status.qosClass: Invalid value: "Guaranteed": field is immutable"#],
    );
    let mut cleared = pod.clone();
    cleared["status"].as_object_mut().expect("status").remove("qosClass");
    let (code, v) = raw(&server, Method::PUT, &format!("{PODS}/p/status"), JSON, cleared.to_string()).await;
    assert_eq!(code, StatusCode::OK, "{v}");
    assert_eq!(v["status"]["qosClass"], "Burstable");
}

/// Workloads whose pod template carries one of the corpus' edits.
#[rstest]
#[case::deploy_template_sysctl_ipc_with_host_ipc(
    "Deployment",
    json!({"/spec/template/spec/hostIPC": true, "/spec/template/spec/securityContext/sysctls": [{"name": "kernel.shmmax", "value": "1"}]}),
    &[("FieldValueInvalid", "spec.template.spec.securityContext.sysctls[0].name")],
    &[r#"spec.template.spec.securityContext.sysctls[0].name: Invalid value: "kernel.shmmax": may not be specified when 'hostIPC' is true"#]
)]
#[case::deploy_template_hostname_override_host_network(
    "Deployment",
    json!({"/spec/template/spec/hostnameOverride": "custom-host", "/spec/template/spec/hostNetwork": true}),
    &[("FieldValueForbidden", "spec.template.spec.hostnameOverride")],
    &["spec.template.spec.hostnameOverride: Forbidden: may not be specified when hostNetwork is true"]
)]
#[case::deploy_template_ephemeral_containers(
    "Deployment",
    json!({"/spec/template/spec/ephemeralContainers": [{"name": "ec", "image": "image", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}]}),
    &[("FieldValueForbidden", "spec.template.spec.ephemeralContainers")],
    &["spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template"]
)]
#[case::deploy_template_affinity_topology_key_empty(
    "Deployment",
    json!({"/spec/template/spec/affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchExpressions": [{"key": "key2", "operator": "In", "values": ["value1", "value2"]}]}, "namespaces": ["ns"]}]}}}),
    &[
        ("FieldValueRequired", "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"),
        ("FieldValueInvalid", "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"),
        ("FieldValueInvalid", "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"),
    ],
    &[
        "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty",
        r#"spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: "": name part must be non-empty"#,
        &format!(r#"spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: "": {LABEL_NAME_REGEX}"#),
    ]
)]
#[case::rc_ephemeral_containers(
    "ReplicationController",
    json!({"/spec/template/spec/ephemeralContainers": [{"name": "debug", "image": "image", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}]}),
    &[("FieldValueForbidden", "spec.template.spec.ephemeralContainers")],
    &["spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template"]
)]
#[case::rs_template_ephemeral_containers(
    "ReplicaSet",
    json!({"/spec/template/spec/ephemeralContainers": [{"name": "debug", "image": "image", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}]}),
    &[("FieldValueForbidden", "spec.template.spec.ephemeralContainers")],
    &["spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template"]
)]
#[case::rs_template_host_users_with_host_pid(
    "ReplicaSet",
    json!({"/spec/template/spec/hostUsers": false, "/spec/template/spec/hostPID": true}),
    &[("FieldValueForbidden", "spec.template.spec.HostPID")],
    &["spec.template.spec.HostPID: Forbidden: when `hostUsers` is false"]
)]
#[case::rs_template_dns_none_without_nameserver(
    "ReplicaSet",
    json!({"/spec/template/spec/dnsPolicy": "None", "/spec/template/spec/dnsConfig": {"searches": ["custom"]}}),
    &[("FieldValueRequired", "spec.template.spec.dnsConfig.nameservers")],
    &["spec.template.spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None"]
)]
#[case::rs_template_spread_max_skew_negative(
    "ReplicaSet",
    json!({"/spec/template/spec/topologySpreadConstraints": [{"maxSkew": -1, "topologyKey": "k8s.io/zone", "whenUnsatisfiable": "DoNotSchedule"}]}),
    &[("FieldValueInvalid", "spec.template.spec.topologySpreadConstraints[0].maxSkew")],
    &["spec.template.spec.topologySpreadConstraints[0].maxSkew: Invalid value: -1: must be greater than zero"]
)]
#[tokio::test]
async fn a_pod_template_is_refused_as_upstream_refuses_it(
    #[case] kind: &str,
    #[case] edits: Value,
    #[case] want: &[(&str, &str)],
    #[case] errors: &[&str],
) {
    let server = ApiServer::default();
    let (uri, object) = match kind {
        "Deployment" => (DEPLOYMENTS, r#"Deployment.apps "w""#),
        "ReplicaSet" => (REPLICASETS, r#"ReplicaSet.apps "w""#),
        _ => (RCS, r#"ReplicationController "w""#),
    };
    let (code, v) = post(&server, uri, &edited(workload(kind), edits)).await;
    assert_invalid(code, &v, object, want, errors);
}

/// sts-template-subdomain-invalid-ok: the StatefulSet controller sets the subdomain of its pods,
/// so the template's is not validated.
#[tokio::test]
async fn a_stateful_set_template_subdomain_is_not_validated() {
    let server = ApiServer::default();
    let sts = edited(
        workload("StatefulSet"),
        json!({"/spec/template/spec/subdomain": "NoUppercaseOrSpecialCharsLike=Equals"}),
    );
    let (code, v) = post(&server, STATEFULSETS, &sts).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    assert_eq!(v["spec"]["template"]["spec"]["subdomain"], "NoUppercaseOrSpecialCharsLike=Equals");
}

/// sts-volume-claim-template-mounted-ok: a container may mount a volume claim template, which
/// the StatefulSet's pods get as a volume (`volumesToAddForTemplates`).
#[tokio::test]
async fn a_stateful_set_container_may_mount_a_volume_claim_template() {
    let server = ApiServer::default();
    let sts = edited(
        workload("StatefulSet"),
        json!({
            "/spec/volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}],
            "/spec/template/spec/containers/0/volumeMounts/1": {"name": "data", "mountPath": "/data"}
        }),
    );
    let (code, v) = post(&server, STATEFULSETS, &sts).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    // The volume is added for validation only: the stored template keeps its own volumes.
    assert_eq!(v["spec"]["template"]["spec"]["volumes"], json!([{"name": "scratch", "emptyDir": {}}]));
}

// Rules of the same families that the corpus did not reach yet, answered as the upstream code
// (v1.37.2) answers them.

/// `validateOnlyAddedTolerations`: an update may add tolerations but not change one.
#[tokio::test]
async fn an_update_may_not_change_an_existing_toleration() {
    let server = ApiServer::default();
    let pod = edited(valid_pod(), json!({"/spec/tolerations": [{"key": "k", "operator": "Exists"}]}));
    let (code, v) = post(&server, PODS, &pod).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let added =
        json!({"spec": {"tolerations": [{"key": "k", "operator": "Exists"}, {"key": "l", "operator": "Exists"}]}});
    let (code, v) = raw(&server, Method::PATCH, &format!("{PODS}/p"), MERGE, added.to_string()).await;
    assert_eq!(code, StatusCode::OK, "{v}");
    let changed = json!({"spec": {"tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]}});
    let (code, v) = raw(&server, Method::PATCH, &format!("{PODS}/p"), MERGE, changed.to_string()).await;
    assert_invalid(
        code,
        &v,
        r#"Pod "p""#,
        &[("FieldValueForbidden", "spec.tolerations")],
        &["spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"],
    );
}

/// `mutatePodAffinity` and `mutateTopologySpreadConstraints`: a new pod's match label keys
/// become requirements on its own label values.
#[tokio::test]
async fn match_label_keys_are_merged_into_the_selectors_of_a_new_pod() {
    let server = ApiServer::default();
    let pod = edited(
        valid_pod(),
        json!({
            "/spec/affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"tier": "x"}}, "topologyKey": "k8s.io/zone", "matchLabelKeys": ["app"], "mismatchLabelKeys": ["missing"]}
            ]}},
            "/spec/topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "k8s.io/zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}, "matchLabelKeys": ["app"]}
            ]
        }),
    );
    let (code, v) = post(&server, PODS, &pod).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let want = json!([{"key": "app", "operator": "In", "values": ["web"]}]);
    assert_eq!(
        v["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"]
            ["matchExpressions"],
        want
    );
    assert_eq!(v["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchExpressions"], want);
}

/// The first corpus's `toleration-exists-with-value` as a strategic merge patch: a bad new
/// toleration is reported once, though `validateOnlyAddedTolerations` validates the new
/// tolerations again after the spec's own validation did.
#[tokio::test]
async fn a_bad_added_toleration_is_reported_once() {
    let server = ApiServer::default();
    let (code, v) = post(&server, PODS, &valid_pod()).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let patch = json!({"spec": {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}});
    let (code, v) = raw(&server, Method::PATCH, &format!("{PODS}/p"), STRATEGIC, patch.to_string()).await;
    assert_invalid(
        code,
        &v,
        r#"Pod "p""#,
        &[("FieldValueInvalid", "spec.tolerations[0].operator")],
        &["spec.tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'"],
    );
}

/// The first corpus's `container-port-zero` as a strategic merge patch (the merge patch of the
/// change: the whole container list): ports merge on `containerPort`, and the new port 0 goes
/// before the old 8080 (`mergeSortedSlice`), so it is `ports[0]` that lacks its port and
/// `ports[1]` whose name repeats.
#[tokio::test]
async fn a_port_added_by_a_strategic_patch_goes_first() {
    let server = ApiServer::default();
    let (code, v) = post(&server, PODS, &valid_pod()).await;
    assert_eq!(code, StatusCode::CREATED, "{v}");
    let containers = edited(valid_spec(), json!({"/containers/0/ports/0/containerPort": 0}))["containers"].clone();
    let patch = json!({"spec": {"containers": containers}});
    let (code, v) = raw(&server, Method::PATCH, &format!("{PODS}/p"), STRATEGIC, patch.to_string()).await;
    assert_invalid(
        code,
        &v,
        r#"Pod "p""#,
        &[
            ("FieldValueRequired", "spec.containers[0].ports[0].containerPort"),
            ("FieldValueDuplicate", "spec.containers[0].ports[1].name"),
            ("FieldValueForbidden", "spec"),
        ],
        &[
            "spec.containers[0].ports[0].containerPort: Required value",
            "spec.containers[0].ports[1].name: Duplicate value: \"http\"",
            SPEC_FORBIDDEN,
        ],
    );
}
