//! Valid objects of every kind the differential corpus covers, and the ways to break each one.
//!
//! A [`KindTemplate`] is a valid object as kube-apiserver 1.37 accepts it, where its URL is,
//! and a catalogue of [`Mutation`]s: one thing broken each, taken from the rules of
//! kube-apiserver's `pkg/apis/<group>/validation` (and of the CRDs' schemas and CEL rules).
//! Immutability and status rules are mutations too; the generator sends them as updates.

use serde_json::{Value, json};

/// One edit of an object, at a JSON pointer.
#[derive(Debug, Clone)]
pub enum Edit {
    /// Sets the value at the pointer (creating parent objects).
    Set(&'static str, Value),
    /// Removes the value at the pointer.
    Remove(&'static str),
    /// Sets a string of this many bytes at the pointer (the size limits).
    Big(&'static str, usize),
}

/// When a mutation is meaningful.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applies {
    /// Any write: create, update, patch, apply.
    Always,
    /// Only a change of an existing object (immutable fields).
    UpdateOnly,
    /// Only through the `/status` subresource.
    Status,
}

/// One thing broken (or, with no edits, nothing).
#[derive(Debug, Clone)]
pub struct Mutation {
    /// A short name, for reports.
    pub name: &'static str,
    /// The edits.
    pub edits: Vec<Edit>,
    /// When it applies.
    pub applies: Applies,
}

fn m(name: &'static str, edits: Vec<Edit>) -> Mutation {
    Mutation { name, edits, applies: Applies::Always }
}

fn upd(name: &'static str, edits: Vec<Edit>) -> Mutation {
    Mutation { name, edits, applies: Applies::UpdateOnly }
}

fn status(name: &'static str, edits: Vec<Edit>) -> Mutation {
    Mutation { name, edits, applies: Applies::Status }
}

use Edit::{Big, Remove, Set};

/// A kind of the corpus.
#[derive(Debug, Clone)]
pub struct KindTemplate {
    /// The name the report uses (`Pod`, `Event.events.k8s.io`).
    pub label: &'static str,
    /// `/api/v1` or `/apis/apps/v1`.
    pub prefix: &'static str,
    /// The resource plural.
    pub plural: &'static str,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Has a `/status` subresource.
    pub status: bool,
    /// Has a `/scale` subresource.
    pub scale: bool,
    /// A custom resource (no strategic merge patch).
    pub custom: bool,
    /// A valid object; `metadata.name` is filled in per request.
    pub valid: Value,
    /// What a valid status looks like, for status writes (may be `Null`).
    pub valid_status: Value,
    /// The ways to break it.
    pub mutations: Vec<Mutation>,
}

fn pod_spec() -> Value {
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

fn template(labels: Value) -> Value {
    json!({"metadata": {"labels": labels}, "spec": pod_spec()})
}

/// Mutations of a PodSpec at `p` (`/spec` for pods, `/spec/template/spec` for workloads).
fn pod_spec_mutations(p: &'static str) -> Vec<Mutation> {
    // The pointers are built once per kind; leaking them keeps `Edit` 'static and cheap.
    let at = |s: &str| -> &'static str { Box::leak(format!("{p}{s}").into_boxed_str()) };
    vec![
        m("containers-empty", vec![Set(at("/containers"), json!([]))]),
        m("container-name-missing", vec![Remove(at("/containers/0/name"))]),
        m("container-name-invalid", vec![Set(at("/containers/0/name"), json!("App_1"))]),
        m(
            "container-name-duplicate",
            vec![Set(at("/containers/1"), json!({"name": "app", "image": "registry.example/app:1.0"}))],
        ),
        m("container-image-missing", vec![Remove(at("/containers/0/image"))]),
        m("image-pull-policy-unsupported", vec![Set(at("/containers/0/imagePullPolicy"), json!("Sometimes"))]),
        m("container-port-zero", vec![Set(at("/containers/0/ports/0/containerPort"), json!(0))]),
        m("container-port-too-large", vec![Set(at("/containers/0/ports/0/containerPort"), json!(70000))]),
        m("container-port-protocol", vec![Set(at("/containers/0/ports/0/protocol"), json!("QUIC"))]),
        m("container-port-name-invalid", vec![Set(at("/containers/0/ports/0/name"), json!("http_port_too_long_x"))]),
        m(
            "container-port-name-duplicate",
            vec![Set(at("/containers/0/ports/1"), json!({"name": "http", "containerPort": 9090}))],
        ),
        m("host-port-too-large", vec![Set(at("/containers/0/ports/0/hostPort"), json!(70000))]),
        m("env-name-missing", vec![Set(at("/containers/0/env/0/name"), json!(""))]),
        m(
            "env-value-from-and-value",
            vec![Set(at("/containers/0/env/0/valueFrom"), json!({"fieldRef": {"fieldPath": "metadata.name"}}))],
        ),
        m(
            "env-field-path-unsupported",
            vec![Set(
                at("/containers/0/env/1"),
                json!({"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.bogus"}}}),
            )],
        ),
        m("requests-over-limits", vec![Set(at("/containers/0/resources/requests/cpu"), json!("1"))]),
        m("request-negative", vec![Set(at("/containers/0/resources/requests/memory"), json!("-1Mi"))]),
        m("resource-name-invalid", vec![Set(at("/containers/0/resources/limits/bad~name"), json!("1"))]),
        m("volume-mount-unknown", vec![Set(at("/containers/0/volumeMounts/0/name"), json!("missing"))]),
        m("volume-mount-path-missing", vec![Set(at("/containers/0/volumeMounts/0/mountPath"), json!(""))]),
        m("volume-name-duplicate", vec![Set(at("/volumes/1"), json!({"name": "scratch", "emptyDir": {}}))]),
        m("volume-name-invalid", vec![Set(at("/volumes/1"), json!({"name": "Bad.Name", "emptyDir": {}}))]),
        m("volume-two-sources", vec![Set(at("/volumes/0/configMap"), json!({"name": "cm"}))]),
        m("volume-no-source", vec![Set(at("/volumes/1"), json!({"name": "nothing"}))]),
        m("restart-policy-unsupported", vec![Set(at("/restartPolicy"), json!("Sometimes"))]),
        m("dns-policy-unsupported", vec![Set(at("/dnsPolicy"), json!("Nearest"))]),
        m("active-deadline-zero", vec![Set(at("/activeDeadlineSeconds"), json!(0))]),
        m("node-selector-key-invalid", vec![Set(at("/nodeSelector"), json!({"bad key": "x"}))]),
        m("hostname-invalid", vec![Set(at("/hostname"), json!("Not_A_Label"))]),
        m("subdomain-invalid", vec![Set(at("/subdomain"), json!("Not_A_Label"))]),
        m(
            "toleration-exists-with-value",
            vec![Set(at("/tolerations"), json!([{"key": "k", "operator": "Exists", "value": "v"}]))],
        ),
        m("toleration-operator-unsupported", vec![Set(at("/tolerations"), json!([{"key": "k", "operator": "Near"}]))]),
        m(
            "toleration-effect-unsupported",
            vec![Set(at("/tolerations"), json!([{"key": "k", "operator": "Exists", "effect": "Sometimes"}]))],
        ),
        m("scheduling-gate-name-invalid", vec![Set(at("/schedulingGates"), json!([{"name": "bad gate"}]))]),
        m("service-account-name-invalid", vec![Set(at("/serviceAccountName"), json!("Bad_SA"))]),
        m("termination-message-policy", vec![Set(at("/containers/0/terminationMessagePolicy"), json!("Sometimes"))]),
        m("liveness-probe-no-handler", vec![Set(at("/containers/0/livenessProbe"), json!({"periodSeconds": 5}))]),
        m(
            "liveness-probe-success-threshold",
            vec![Set(
                at("/containers/0/livenessProbe"),
                json!({"httpGet": {"port": 8080, "path": "/"}, "successThreshold": 2}),
            )],
        ),
        m(
            "probe-port-name-unknown-ok",
            vec![Set(at("/containers/0/readinessProbe"), json!({"tcpSocket": {"port": "http"}}))],
        ),
        m("init-container-name-clash", vec![Set(at("/initContainers"), json!([{"name": "app", "image": "busybox"}]))]),
        m("security-context-run-as-negative", vec![Set(at("/securityContext/runAsUser"), json!(-1))]),
        m(
            "host-network-port-mismatch",
            vec![Set(at("/hostNetwork"), json!(true)), Set(at("/containers/0/ports/0/hostPort"), json!(9999))],
        ),
        m("termination-grace-negative", vec![Set(at("/terminationGracePeriodSeconds"), json!(-5))]),
        m("image-pull-secret-empty", vec![Set(at("/imagePullSecrets"), json!([{"name": ""}]))]),
        m(
            "resource-claims-bad-name",
            vec![Set(at("/resourceClaims"), json!([{"name": "Bad_Claim", "resourceClaimName": "c"}]))],
        ),
        m(
            "resource-claims-both-sources",
            vec![Set(
                at("/resourceClaims"),
                json!([{"name": "gpu", "resourceClaimName": "c", "resourceClaimTemplateName": "t"}]),
            )],
        ),
    ]
}

fn meta_mutations() -> Vec<Mutation> {
    vec![
        m("valid", vec![]),
        m("valid-again", vec![]),
        m("label-key-invalid", vec![Set("/metadata/labels/bad key", json!("x"))]),
        m("label-value-invalid", vec![Set("/metadata/labels/ok", json!("-bad-"))]),
        m("annotation-key-invalid", vec![Set("/metadata/annotations/-bad", json!("x"))]),
        m("finalizer-invalid", vec![Set("/metadata/finalizers", json!(["Not/A/Finalizer"]))]),
        m(
            "owner-reference-incomplete",
            vec![Set(
                "/metadata/ownerReferences",
                json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "", "uid": ""}]),
            )],
        ),
        m("unknown-field", vec![Set("/bogusTopLevel", json!(1))]),
    ]
}

fn lease() -> KindTemplate {
    let mut muts = meta_mutations();
    muts.extend([
        m("lease-duration-zero", vec![Set("/spec/leaseDurationSeconds", json!(0))]),
        m("lease-transitions-negative", vec![Set("/spec/leaseTransitions", json!(-1))]),
        m("lease-strategy-unsupported", vec![Set("/spec/strategy", json!("Random"))]),
    ]);
    KindTemplate {
        label: "Lease",
        prefix: "/apis/coordination.k8s.io/v1",
        plural: "leases",
        namespaced: true,
        status: false,
        scale: false,
        custom: false,
        valid: json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"labels": {"app": "x"}},
            "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40}}),
        valid_status: Value::Null,
        mutations: muts,
    }
}

/// Every kind of the corpus.
pub fn kinds() -> Vec<KindTemplate> {
    let mut out = Vec::new();
    // Pod
    let mut muts = meta_mutations();
    muts.extend(pod_spec_mutations("/spec"));
    muts.extend([
        upd("pod-container-name-change", vec![Set("/spec/containers/0/name", json!("renamed"))]),
        upd("pod-image-change-allowed", vec![Set("/spec/containers/0/image", json!("registry.example/app:2.0"))]),
        upd("pod-add-toleration-allowed", vec![Set("/spec/tolerations", json!([{"key": "k", "operator": "Exists"}]))]),
        upd("pod-active-deadline-added", vec![Set("/spec/activeDeadlineSeconds", json!(30))]),
        status("pod-status-phase", vec![Set("/status/phase", json!("Running"))]),
        status("pod-status-ip-invalid", vec![Set("/status/podIP", json!("not-an-ip"))]),
        status(
            "pod-status-condition-status",
            vec![Set("/status/conditions", json!([{"type": "Ready", "status": "Maybe"}]))],
        ),
    ]);
    out.push(KindTemplate {
        label: "Pod",
        prefix: "/api/v1",
        plural: "pods",
        namespaced: true,
        status: true,
        scale: false,
        custom: false,
        valid: json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"app": "web"}}, "spec": pod_spec()}),
        valid_status: json!({"phase": "Pending"}),
        mutations: muts,
    });
    // Service
    let mut muts = meta_mutations();
    muts.extend([
        m("service-ports-missing", vec![Set("/spec/ports", json!([]))]),
        m("service-port-zero", vec![Set("/spec/ports/0/port", json!(0))]),
        m("service-port-protocol", vec![Set("/spec/ports/0/protocol", json!("QUIC"))]),
        m("service-port-unnamed-second", vec![Set("/spec/ports/1", json!({"port": 81}))]),
        m("service-port-name-duplicate", vec![Set("/spec/ports/1", json!({"name": "http", "port": 81}))]),
        m("service-port-name-invalid", vec![Set("/spec/ports/0/name", json!("HTTP"))]),
        m("service-target-port-invalid", vec![Set("/spec/ports/0/targetPort", json!(0))]),
        m("service-target-port-name-invalid", vec![Set("/spec/ports/0/targetPort", json!("not_a_name"))]),
        m("service-type-unsupported", vec![Set("/spec/type", json!("Internal"))]),
        m("service-session-affinity-unsupported", vec![Set("/spec/sessionAffinity", json!("Sticky"))]),
        m("service-cluster-ip-invalid", vec![Set("/spec/clusterIP", json!("bogus"))]),
        m("service-selector-invalid", vec![Set("/spec/selector", json!({"bad key": "x"}))]),
        m("service-node-port-on-cluster-ip", vec![Set("/spec/ports/0/nodePort", json!(30080))]),
        m("service-external-name-missing", vec![Set("/spec/type", json!("ExternalName"))]),
        m("service-external-traffic-policy", vec![Set("/spec/externalTrafficPolicy", json!("Local"))]),
        m("service-ip-families-bad", vec![Set("/spec/ipFamilies", json!(["IPv5"]))]),
        upd("service-cluster-ip-change", vec![Set("/spec/clusterIP", json!("10.96.200.200"))]),
        status("service-status-lb-ip-invalid", vec![Set("/status/loadBalancer/ingress", json!([{"ip": "not-an-ip"}]))]),
    ]);
    out.push(KindTemplate {
        label: "Service",
        prefix: "/api/v1",
        plural: "services",
        namespaced: true,
        status: true,
        scale: false,
        custom: false,
        valid: json!({"apiVersion": "v1", "kind": "Service", "metadata": {"labels": {"app": "web"}},
            "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}),
        valid_status: json!({"loadBalancer": {}}),
        mutations: muts,
    });
    // ConfigMap
    let mut muts = meta_mutations();
    muts.extend([
        m("configmap-key-invalid", vec![Set("/data/bad key", json!("x"))]),
        m("configmap-key-dotdot", vec![Set("/data/..", json!("x"))]),
        m("configmap-key-in-both", vec![Set("/binaryData/greeting", json!("aGk="))]),
        m("configmap-too-large", vec![Big("/data/big", 2 * 1024 * 1024)]),
        m("configmap-just-under-limit", vec![Big("/data/big", 1024 * 1024 - 2048)]),
        m("configmap-binary-not-base64", vec![Set("/binaryData/b", json!("***"))]),
        upd("configmap-immutable-change", vec![Set("/data/greeting", json!("changed"))]),
    ]);
    out.push(KindTemplate {
        label: "ConfigMap",
        prefix: "/api/v1",
        plural: "configmaps",
        namespaced: true,
        status: false,
        scale: false,
        custom: false,
        valid: json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"app": "web"}}, "data": {"greeting": "hello"}}),
        valid_status: Value::Null,
        mutations: muts,
    });
    // Secret
    let mut muts = meta_mutations();
    muts.extend([
        m("secret-key-invalid", vec![Set("/data/bad key", json!("eA=="))]),
        m("secret-tls-missing-key", vec![Set("/type", json!("kubernetes.io/tls"))]),
        m("secret-basic-auth-empty", vec![Set("/type", json!("kubernetes.io/basic-auth"))]),
        m("secret-dockerconfig-missing", vec![Set("/type", json!("kubernetes.io/dockerconfigjson"))]),
        m("secret-sa-token-no-annotation", vec![Set("/type", json!("kubernetes.io/service-account-token"))]),
        m("secret-too-large", vec![Big("/stringData/big", 2 * 1024 * 1024)]),
        m("secret-type-too-long", vec![Big("/type", 300)]),
        upd("secret-type-change", vec![Set("/type", json!("example.com/other"))]),
        upd("secret-immutable-set", vec![Set("/immutable", json!(true))]),
    ]);
    out.push(KindTemplate {
        label: "Secret",
        prefix: "/api/v1",
        plural: "secrets",
        namespaced: true,
        status: false,
        scale: false,
        custom: false,
        valid: json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"labels": {"app": "web"}}, "type": "Opaque", "data": {"password": "c2VjcmV0"}}),
        valid_status: Value::Null,
        mutations: muts,
    });
    // ServiceAccount
    let mut muts = meta_mutations();
    muts.extend([
        m("sa-secret-ref-empty-ok", vec![Set("/secrets", json!([{"name": "s1"}]))]),
        m("sa-image-pull-secret", vec![Set("/imagePullSecrets", json!([{"name": "regcred"}]))]),
    ]);
    out.push(KindTemplate {
        label: "ServiceAccount",
        prefix: "/api/v1",
        plural: "serviceaccounts",
        namespaced: true,
        status: false,
        scale: false,
        custom: false,
        valid: json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"labels": {"app": "web"}}}),
        valid_status: Value::Null,
        mutations: muts,
    });
    // Namespace
    let mut muts = meta_mutations();
    muts.extend([
        m("namespace-finalizer-invalid", vec![Set("/spec/finalizers", json!(["bad finalizer"]))]),
        status("namespace-status-phase", vec![Set("/status/phase", json!("Terminating"))]),
    ]);
    out.push(KindTemplate {
        label: "Namespace",
        prefix: "/api/v1",
        plural: "namespaces",
        namespaced: false,
        status: true,
        scale: false,
        custom: false,
        valid: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"labels": {"team": "a"}}}),
        valid_status: json!({"phase": "Active"}),
        mutations: muts,
    });
    // core Event
    let mut muts = meta_mutations();
    muts.extend([
        m("event-involved-namespace-mismatch", vec![Set("/involvedObject/namespace", json!("elsewhere"))]),
        m("event-type-unsupported", vec![Set("/type", json!("Info"))]),
        m(
            "event-reporting-without-time",
            vec![Set("/reportingComponent", json!("x")), Set("/reportingInstance", json!("i"))],
        ),
        m(
            "event-series-without-time",
            vec![Set("/eventTime", json!("2026-01-01T00:00:00.000000Z")), Set("/series", json!({"count": 1}))],
        ),
        m("event-event-time-no-controller", vec![Set("/eventTime", json!("2026-01-01T00:00:00.000000Z"))]),
    ]);
    out.push(KindTemplate {
        label: "Event",
        prefix: "/api/v1",
        plural: "events",
        namespaced: true,
        status: false,
        scale: false,
        custom: false,
        valid: json!({"apiVersion": "v1", "kind": "Event", "metadata": {},
            "involvedObject": {"kind": "Pod", "name": "web", "namespace": "$NS", "apiVersion": "v1"},
            "reason": "Started", "message": "started", "type": "Normal", "source": {"component": "kubelet"},
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z", "count": 1}),
        valid_status: Value::Null,
        mutations: muts,
    });
    // events.k8s.io Event
    let mut muts = meta_mutations();
    muts.extend([
        m("ev1-event-time-missing", vec![Remove("/eventTime")]),
        m("ev1-reporting-controller-missing", vec![Remove("/reportingController")]),
        m("ev1-reporting-instance-missing", vec![Remove("/reportingInstance")]),
        m("ev1-action-missing", vec![Remove("/action")]),
        m("ev1-reason-missing", vec![Remove("/reason")]),
        m("ev1-type-unsupported", vec![Set("/type", json!("Info"))]),
        m("ev1-note-too-long", vec![Big("/note", 2000)]),
        m("ev1-regarding-namespace-mismatch", vec![Set("/regarding/namespace", json!("elsewhere"))]),
        m("ev1-reporting-controller-invalid", vec![Set("/reportingController", json!("no slash here"))]),
    ]);
    out.push(KindTemplate {
        label: "Event.events.k8s.io",
        prefix: "/apis/events.k8s.io/v1",
        plural: "events",
        namespaced: true,
        status: false,
        scale: false,
        custom: false,
        valid: json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {},
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "kproof.dev/differential",
            "reportingInstance": "kproof-1", "action": "Scheduled", "reason": "Scheduled", "type": "Normal",
            "note": "scheduled", "regarding": {"kind": "Pod", "name": "web", "namespace": "$NS", "apiVersion": "v1"}}),
        valid_status: Value::Null,
        mutations: muts,
    });
    // Deployment
    let workload_labels = json!({"app": "web"});
    let mut muts = meta_mutations();
    muts.extend(workload_mutations());
    muts.extend(pod_spec_mutations("/spec/template/spec"));
    muts.extend([
        m("deploy-strategy-unsupported", vec![Set("/spec/strategy", json!({"type": "BlueGreen"}))]),
        m(
            "deploy-surge-and-unavailable-zero",
            vec![Set(
                "/spec/strategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}),
            )],
        ),
        m(
            "deploy-unavailable-over-100",
            vec![Set("/spec/strategy", json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "150%"}}))],
        ),
        m(
            "deploy-recreate-with-rolling",
            vec![Set("/spec/strategy", json!({"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}))],
        ),
        m(
            "deploy-progress-deadline-le-min-ready",
            vec![Set("/spec/progressDeadlineSeconds", json!(10)), Set("/spec/minReadySeconds", json!(10))],
        ),
        m("deploy-revision-history-negative", vec![Set("/spec/revisionHistoryLimit", json!(-1))]),
        upd(
            "deploy-selector-change",
            vec![
                Set("/spec/selector/matchLabels/tier", json!("x")),
                Set("/spec/template/metadata/labels/tier", json!("x")),
            ],
        ),
        status("deploy-status-replicas-negative", vec![Set("/status/replicas", json!(-1))]),
        status(
            "deploy-status-ready-over-replicas",
            vec![Set("/status/replicas", json!(1)), Set("/status/readyReplicas", json!(3))],
        ),
    ]);
    out.push(workload_kind("Deployment", "deployments", json!({"replicas": 2, "selector": {"matchLabels": workload_labels}, "template": template(workload_labels.clone())}), muts, json!({"replicas": 0})));
    // ReplicaSet
    let mut muts = meta_mutations();
    muts.extend(workload_mutations());
    muts.extend([
        m("rs-template-restart-never", vec![Set("/spec/template/spec/restartPolicy", json!("Never"))]),
        m("rs-container-port-zero", vec![Set("/spec/template/spec/containers/0/ports/0/containerPort", json!(0))]),
        status("rs-status-replicas-negative", vec![Set("/status/replicas", json!(-1))]),
    ]);
    out.push(workload_kind("ReplicaSet", "replicasets", json!({"replicas": 1, "selector": {"matchLabels": workload_labels}, "template": template(workload_labels.clone())}), muts, json!({"replicas": 0})));
    // StatefulSet
    let mut muts = meta_mutations();
    muts.extend(workload_mutations());
    muts.extend([
        m("sts-pod-management-unsupported", vec![Set("/spec/podManagementPolicy", json!("Random"))]),
        m("sts-update-strategy-unsupported", vec![Set("/spec/updateStrategy", json!({"type": "Sideways"}))]),
        m("sts-ordinals-negative", vec![Set("/spec/ordinals", json!({"start": -1}))]),
        m(
            "sts-pvc-retention-bad",
            vec![Set("/spec/persistentVolumeClaimRetentionPolicy", json!({"whenDeleted": "Keep"}))],
        ),
        m("sts-template-restart-never", vec![Set("/spec/template/spec/restartPolicy", json!("Never"))]),
        upd("sts-service-name-change", vec![Set("/spec/serviceName", json!("other"))]),
        upd("sts-replicas-change-allowed", vec![Set("/spec/replicas", json!(3))]),
        status("sts-status-replicas-negative", vec![Set("/status/replicas", json!(-1))]),
    ]);
    out.push(workload_kind("StatefulSet", "statefulsets", json!({"replicas": 1, "serviceName": "web", "selector": {"matchLabels": workload_labels}, "template": template(workload_labels.clone())}), muts, json!({"replicas": 0, "availableReplicas": 0})));
    // Job
    let job_template = json!({"metadata": {"labels": {"app": "batch"}}, "spec": {"restartPolicy": "Never", "containers": [{"name": "work", "image": "busybox", "command": ["true"]}]}});
    let mut muts = meta_mutations();
    muts.extend([
        m("job-template-restart-always", vec![Set("/spec/template/spec/restartPolicy", json!("Always"))]),
        m("job-parallelism-negative", vec![Set("/spec/parallelism", json!(-1))]),
        m("job-completions-negative", vec![Set("/spec/completions", json!(-1))]),
        m("job-backoff-negative", vec![Set("/spec/backoffLimit", json!(-1))]),
        m("job-active-deadline-zero", vec![Set("/spec/activeDeadlineSeconds", json!(0))]),
        m("job-completion-mode-unsupported", vec![Set("/spec/completionMode", json!("Sometimes"))]),
        m("job-indexed-without-completions", vec![Set("/spec/completionMode", json!("Indexed"))]),
        m("job-ttl-negative", vec![Set("/spec/ttlSecondsAfterFinished", json!(-1))]),
        m("job-manual-selector-missing", vec![Set("/spec/manualSelector", json!(true))]),
        m("job-container-name-missing", vec![Remove("/spec/template/spec/containers/0/name")]),
        upd("job-template-change", vec![Set("/spec/template/spec/containers/0/image", json!("busybox:2"))]),
        upd("job-completions-change", vec![Set("/spec/completions", json!(5))]),
        upd("job-suspend-allowed", vec![Set("/spec/suspend", json!(true))]),
        status("job-status-active-negative", vec![Set("/status/active", json!(-1))]),
    ]);
    out.push(KindTemplate {
        label: "Job",
        prefix: "/apis/batch/v1",
        plural: "jobs",
        namespaced: true,
        status: true,
        scale: false,
        custom: false,
        valid: json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"labels": {"app": "batch"}}, "spec": {"completions": 1, "template": job_template}}),
        valid_status: json!({"active": 0}),
        mutations: muts,
    });
    // RBAC
    let rule = json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]});
    let rbac = |label: &'static str,
                plural: &'static str,
                kind: &str,
                namespaced: bool,
                valid: Value,
                extra: Vec<Mutation>| {
        let mut muts = meta_mutations();
        muts.extend(extra);
        let mut v = valid;
        v["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
        v["kind"] = json!(kind);
        KindTemplate {
            label,
            prefix: "/apis/rbac.authorization.k8s.io/v1",
            plural,
            namespaced,
            status: false,
            scale: false,
            custom: false,
            valid: v,
            valid_status: Value::Null,
            mutations: muts,
        }
    };
    let role_muts = |cluster: bool| {
        let mut v = vec![
            m("rule-verbs-missing", vec![Set("/rules/0/verbs", json!([]))]),
            m("rule-api-groups-missing", vec![Remove("/rules/0/apiGroups")]),
            m("rule-resources-missing", vec![Remove("/rules/0/resources")]),
            m(
                "rule-non-resource-urls",
                vec![Set("/rules/1", json!({"nonResourceURLs": ["/healthz"], "verbs": ["get"]}))],
            ),
            m("rule-non-resource-with-resources", vec![Set("/rules/0/nonResourceURLs", json!(["/metrics"]))]),
        ];
        if cluster {
            v.push(m(
                "aggregation-rule-empty-selector",
                vec![Set("/aggregationRule", json!({"clusterRoleSelectors": [{"matchLabels": {"bad key": "x"}}]}))],
            ));
        }
        v
    };
    out.push(rbac("Role", "roles", "Role", true, json!({"metadata": {}, "rules": [rule.clone()]}), role_muts(false)));
    out.push(rbac(
        "ClusterRole",
        "clusterroles",
        "ClusterRole",
        false,
        json!({"metadata": {}, "rules": [rule.clone()]}),
        role_muts(true),
    ));
    let binding_muts = |cluster: bool| {
        let mut v = vec![
            m("roleref-kind-unsupported", vec![Set("/roleRef/kind", json!("Policy"))]),
            m("roleref-name-missing", vec![Set("/roleRef/name", json!(""))]),
            m("roleref-api-group-unsupported", vec![Set("/roleRef/apiGroup", json!("example.com"))]),
            m("subject-kind-unsupported", vec![Set("/subjects/0/kind", json!("Robot"))]),
            m("subject-name-missing", vec![Set("/subjects/0/name", json!(""))]),
            m(
                "subject-sa-api-group",
                vec![Set(
                    "/subjects/1",
                    json!({"kind": "ServiceAccount", "name": "sa", "namespace": "default", "apiGroup": "rbac.authorization.k8s.io"}),
                )],
            ),
            m(
                "subject-sa-name-invalid",
                vec![Set("/subjects/1", json!({"kind": "ServiceAccount", "name": "Bad_SA", "namespace": "default"}))],
            ),
            upd("roleref-change", vec![Set("/roleRef/name", json!("other-role"))]),
        ];
        if cluster {
            v.push(m(
                "crb-sa-namespace-missing",
                vec![Set("/subjects/1", json!({"kind": "ServiceAccount", "name": "sa"}))],
            ));
            v.push(m("crb-roleref-role", vec![Set("/roleRef/kind", json!("Role"))]));
        }
        v
    };
    let binding = |kind: &str| {
        json!({"metadata": {}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": "viewer"},
            "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]})
    };
    out.push(rbac("RoleBinding", "rolebindings", "RoleBinding", true, binding("Role"), binding_muts(false)));
    out.push(rbac(
        "ClusterRoleBinding",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
        binding("ClusterRole"),
        binding_muts(true),
    ));
    out.push(lease());
    // EndpointSlice
    let mut muts = meta_mutations();
    muts.extend([
        m("eps-address-type-unsupported", vec![Set("/addressType", json!("IPv5"))]),
        m("eps-addresses-empty", vec![Set("/endpoints/0/addresses", json!([]))]),
        m("eps-address-invalid", vec![Set("/endpoints/0/addresses/0", json!("not-an-ip"))]),
        m("eps-port-name-invalid", vec![Set("/ports/0/name", json!("Bad_Port"))]),
        m("eps-port-protocol", vec![Set("/ports/0/protocol", json!("QUIC"))]),
        m("eps-port-too-large", vec![Set("/ports/0/port", json!(70000))]),
        m("eps-hostname-invalid", vec![Set("/endpoints/0/hostname", json!("Bad_Host"))]),
        m("eps-node-name-invalid", vec![Set("/endpoints/0/nodeName", json!("Bad_Node"))]),
        upd(
            "eps-address-type-change",
            vec![Set("/addressType", json!("IPv6")), Set("/endpoints/0/addresses/0", json!("fd00::1"))],
        ),
    ]);
    out.push(KindTemplate {
        label: "EndpointSlice",
        prefix: "/apis/discovery.k8s.io/v1",
        plural: "endpointslices",
        namespaced: true,
        status: false,
        scale: false,
        custom: false,
        valid: json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4", "endpoints": [{"addresses": ["10.1.2.3"], "conditions": {"ready": true}}],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}),
        valid_status: Value::Null,
        mutations: muts,
    });
    out.extend(dra_kinds());
    out.extend(scheduling_kinds());
    out.extend(custom_kinds());
    out
}

fn workload_mutations() -> Vec<Mutation> {
    vec![
        m("selector-missing", vec![Remove("/spec/selector")]),
        m("selector-empty", vec![Set("/spec/selector", json!({}))]),
        m("selector-mismatch", vec![Set("/spec/template/metadata/labels", json!({"app": "other"}))]),
        m(
            "selector-bad-operator",
            vec![Set(
                "/spec/selector",
                json!({"matchExpressions": [{"key": "app", "operator": "Near", "values": ["web"]}]}),
            )],
        ),
        m(
            "selector-in-without-values",
            vec![Set(
                "/spec/selector",
                json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "app", "operator": "In"}]}),
            )],
        ),
        m(
            "selector-exists-with-values",
            vec![Set(
                "/spec/selector",
                json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]}),
            )],
        ),
        m("replicas-negative", vec![Set("/spec/replicas", json!(-1))]),
        m("min-ready-negative", vec![Set("/spec/minReadySeconds", json!(-1))]),
        m("template-labels-invalid", vec![Set("/spec/template/metadata/labels/bad key", json!("x"))]),
        m("template-containers-empty", vec![Set("/spec/template/spec/containers", json!([]))]),
        m("template-restart-onfailure", vec![Set("/spec/template/spec/restartPolicy", json!("OnFailure"))]),
        m("template-active-deadline", vec![Set("/spec/template/spec/activeDeadlineSeconds", json!(30))]),
        upd("replicas-change-allowed", vec![Set("/spec/replicas", json!(4))]),
    ]
}

fn workload_kind(
    label: &'static str,
    plural: &'static str,
    spec: Value,
    muts: Vec<Mutation>,
    status: Value,
) -> KindTemplate {
    KindTemplate {
        label,
        prefix: "/apis/apps/v1",
        plural,
        namespaced: true,
        status: true,
        scale: true,
        custom: false,
        valid: json!({"apiVersion": "apps/v1", "kind": label, "metadata": {"labels": {"app": "web"}}, "spec": spec}),
        valid_status: status,
        mutations: muts,
    }
}

fn dra_kinds() -> Vec<KindTemplate> {
    let request = json!({"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}});
    let claim_spec = json!({"devices": {"requests": [request]}});
    let dra = |label: &'static str,
               plural: &'static str,
               namespaced: bool,
               status: bool,
               valid: Value,
               valid_status: Value,
               extra: Vec<Mutation>| {
        let mut muts = meta_mutations();
        muts.extend(extra);
        let mut v = valid;
        v["apiVersion"] = json!("resource.k8s.io/v1");
        v["kind"] = json!(label);
        KindTemplate {
            label,
            prefix: "/apis/resource.k8s.io/v1",
            plural,
            namespaced,
            status,
            scale: false,
            custom: false,
            valid: v,
            valid_status,
            mutations: muts,
        }
    };
    let claim_muts = |p: &'static str| -> Vec<Mutation> {
        let at = |s: &str| -> &'static str { Box::leak(format!("{p}{s}").into_boxed_str()) };
        vec![
            m("dra-request-name-missing", vec![Set(at("/devices/requests/0/name"), json!(""))]),
            m("dra-request-name-invalid", vec![Set(at("/devices/requests/0/name"), json!("GPU_0"))]),
            m("dra-request-no-exactly", vec![Remove(at("/devices/requests/0/exactly"))]),
            m(
                "dra-request-both",
                vec![Set(
                    at("/devices/requests/0/firstAvailable"),
                    json!([{"name": "a", "deviceClassName": "gpu.example.com"}]),
                )],
            ),
            m("dra-device-class-missing", vec![Remove(at("/devices/requests/0/exactly/deviceClassName"))]),
            m(
                "dra-device-class-invalid",
                vec![Set(at("/devices/requests/0/exactly/deviceClassName"), json!("Not A Class"))],
            ),
            m(
                "dra-allocation-mode-unsupported",
                vec![Set(at("/devices/requests/0/exactly/allocationMode"), json!("Some"))],
            ),
            m("dra-count-zero", vec![Set(at("/devices/requests/0/exactly/count"), json!(0))]),
            m("dra-count-with-all", vec![Set(at("/devices/requests/0/exactly/allocationMode"), json!("All"))]),
            m(
                "dra-request-duplicate",
                vec![Set(
                    at("/devices/requests/1"),
                    json!({"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}),
                )],
            ),
            m(
                "dra-selector-cel-empty",
                vec![Set(at("/devices/requests/0/exactly/selectors"), json!([{"cel": {"expression": ""}}]))],
            ),
            m(
                "dra-constraint-unknown-request",
                vec![Set(
                    at("/devices/constraints"),
                    json!([{"requests": ["nope"], "matchAttribute": "example.com/numa"}]),
                )],
            ),
            m(
                "dra-config-unknown-request",
                vec![Set(
                    at("/devices/config"),
                    json!([{"requests": ["nope"], "opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}}]),
                )],
            ),
            m(
                "dra-too-many-requests",
                vec![Set(
                    at("/devices/requests"),
                    json!(
                        (0..33)
                            .map(
                                |i| json!({"name": format!("r{i}"), "exactly": {"deviceClassName": "gpu.example.com"}})
                            )
                            .collect::<Vec<_>>()
                    ),
                )],
            ),
            m(
                "dra-toleration-operator",
                vec![Set(at("/devices/requests/0/exactly/tolerations"), json!([{"key": "k", "operator": "Near"}]))],
            ),
        ]
    };
    let mut claim_extra = claim_muts("/spec");
    let allocation = json!({"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}});
    claim_extra.extend([
        upd("dra-claim-spec-change", vec![Set("/spec/devices/requests/0/exactly/count", json!(2))]),
        status("dra-reserved-without-allocation", vec![Set("/status/reservedFor", json!([{"resource": "pods", "name": "p", "uid": "u1"}]))]),
        status("dra-allocation-and-reserved-ok", vec![Set("/status/allocation", allocation.clone()), Set("/status/reservedFor", json!([{"resource": "pods", "name": "p", "uid": "u1"}]))]),
        status("dra-reserved-duplicate-uid", vec![Set("/status/allocation", allocation.clone()), Set("/status/reservedFor", json!([{"resource": "pods", "name": "p", "uid": "u1"}, {"resource": "pods", "name": "q", "uid": "u1"}]))]),
        status("dra-reserved-missing-fields", vec![Set("/status/allocation", allocation.clone()), Set("/status/reservedFor", json!([{"apiGroup": "", "resource": "", "name": "", "uid": ""}]))]),
        status("dra-reserved-podgroup-ok", vec![Set("/status/allocation", allocation.clone()), Set("/status/reservedFor", json!([{"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "g", "uid": "u2"}]))]),
        status("dra-reserved-too-many", vec![Set("/status/allocation", allocation.clone()), Set("/status/reservedFor", json!((0..257).map(|i| json!({"resource": "pods", "name": format!("p{i}"), "uid": format!("u{i}")})).collect::<Vec<_>>()))]),
        status("dra-allocation-result-missing-driver", vec![Set("/status/allocation", json!({"devices": {"results": [{"request": "gpu", "driver": "", "pool": "node-1", "device": "gpu-0"}]}}))]),
        status("dra-allocation-unknown-request", vec![Set("/status/allocation", json!({"devices": {"results": [{"request": "nope", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}}))]),
    ]);
    let mut template_extra = claim_muts("/spec/spec");
    template_extra
        .push(upd("dra-template-spec-change", vec![Set("/spec/spec/devices/requests/0/exactly/count", json!(2))]));
    vec![
        dra(
            "DeviceClass",
            "deviceclasses",
            false,
            false,
            json!({"metadata": {}, "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}}),
            Value::Null,
            vec![
                m("dc-selector-cel-empty", vec![Set("/spec/selectors/0/cel/expression", json!(""))]),
                m("dc-selector-cel-syntax", vec![Set("/spec/selectors/0/cel/expression", json!("device.driver ==="))]),
                m("dc-selector-no-cel", vec![Set("/spec/selectors/0", json!({}))]),
                m(
                    "dc-config-driver-invalid",
                    vec![Set("/spec/config", json!([{"opaque": {"driver": "Not A Driver", "parameters": {}}}]))],
                ),
                m("dc-config-no-opaque", vec![Set("/spec/config", json!([{}]))]),
                m("dc-extended-resource-invalid", vec![Set("/spec/extendedResourceName", json!("not valid"))]),
            ],
        ),
        dra(
            "ResourceClaim",
            "resourceclaims",
            true,
            true,
            json!({"metadata": {}, "spec": claim_spec.clone()}),
            json!({}),
            claim_extra,
        ),
        dra(
            "ResourceClaimTemplate",
            "resourceclaimtemplates",
            true,
            false,
            json!({"metadata": {}, "spec": {"spec": claim_spec.clone()}}),
            Value::Null,
            template_extra,
        ),
        dra(
            "ResourceSlice",
            "resourceslices",
            false,
            false,
            json!({"metadata": {}, "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
                "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "x1"}}}]}}),
            Value::Null,
            vec![
                m("slice-driver-invalid", vec![Set("/spec/driver", json!("Not A Driver"))]),
                m("slice-pool-name-missing", vec![Set("/spec/pool/name", json!(""))]),
                m("slice-pool-count-zero", vec![Set("/spec/pool/resourceSliceCount", json!(0))]),
                m("slice-pool-generation-negative", vec![Set("/spec/pool/generation", json!(-1))]),
                m("slice-no-node-selection", vec![Remove("/spec/nodeName")]),
                m("slice-two-node-selections", vec![Set("/spec/allNodes", json!(true))]),
                m("slice-device-name-invalid", vec![Set("/spec/devices/0/name", json!("GPU_0"))]),
                m("slice-device-name-duplicate", vec![Set("/spec/devices/1", json!({"name": "gpu-0"}))]),
                m(
                    "slice-attribute-two-values",
                    vec![Set("/spec/devices/0/attributes/model", json!({"string": "x1", "int": 3}))],
                ),
                m("slice-attribute-no-value", vec![Set("/spec/devices/0/attributes/model", json!({}))]),
                m("slice-node-name-invalid", vec![Set("/spec/nodeName", json!("Bad_Node"))]),
                upd("slice-driver-change", vec![Set("/spec/driver", json!("other.example.com"))]),
                upd("slice-pool-name-change", vec![Set("/spec/pool/name", json!("node-2"))]),
            ],
        ),
    ]
}

fn scheduling_kinds() -> Vec<KindTemplate> {
    let mut pg_muts = meta_mutations();
    pg_muts.extend([
        m("pg-policy-missing", vec![Set("/spec/schedulingPolicy", json!({}))]),
        m("pg-policy-both", vec![Set("/spec/schedulingPolicy", json!({"basic": {}, "gang": {"minCount": 2}}))]),
        m("pg-gang-min-zero", vec![Set("/spec/schedulingPolicy", json!({"gang": {"minCount": 0}}))]),
        m("pg-claims-too-many", vec![Set("/spec/resourceClaims", json!((0..5).map(|i| json!({"name": format!("c{i}"), "resourceClaimName": format!("claim-{i}")})).collect::<Vec<_>>()))]),
        m("pg-claim-name-invalid", vec![Set("/spec/resourceClaims", json!([{"name": "Bad_Claim", "resourceClaimName": "c"}]))]),
        m("pg-claim-both-sources", vec![Set("/spec/resourceClaims", json!([{"name": "gpu", "resourceClaimName": "c", "resourceClaimTemplateName": "t"}]))]),
        m("pg-claim-no-source", vec![Set("/spec/resourceClaims", json!([{"name": "gpu"}]))]),
        m("pg-claim-duplicate", vec![Set("/spec/resourceClaims", json!([{"name": "gpu", "resourceClaimName": "a"}, {"name": "gpu", "resourceClaimName": "b"}]))]),
        m("pg-claims-ok", vec![Set("/spec/resourceClaims", json!([{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]))]),
        m("pg-workload-ref-invalid", vec![Set("/spec/workloadRef", json!({"workloadName": "Bad_Name", "templateName": "t"}))]),
        upd("pg-policy-change", vec![Set("/spec/schedulingPolicy", json!({"gang": {"minCount": 3}}))]),
        upd("pg-claims-change", vec![Set("/spec/resourceClaims", json!([{"name": "gpu", "resourceClaimName": "other"}]))]),
        status("pg-status-condition", vec![Set("/status/conditions", json!([{"type": "PodGroupScheduled", "status": "Maybe", "reason": "X", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]))]),
    ]);
    let mut wl_muts = meta_mutations();
    wl_muts.extend([
        m("wl-templates-missing", vec![Remove("/spec/podGroupTemplates")]),
        m("wl-template-name-missing", vec![Set("/spec/podGroupTemplates/0/name", json!(""))]),
        m(
            "wl-template-name-duplicate",
            vec![Set("/spec/podGroupTemplates/1", json!({"name": "workers", "schedulingPolicy": {"basic": {}}}))],
        ),
        m("wl-template-policy-missing", vec![Set("/spec/podGroupTemplates/0/schedulingPolicy", json!({}))]),
        m(
            "wl-gang-min-zero",
            vec![Set("/spec/podGroupTemplates/0/schedulingPolicy", json!({"gang": {"minCount": 0}}))],
        ),
        m(
            "wl-claims-too-many",
            vec![Set(
                "/spec/podGroupTemplates/0/resourceClaims",
                json!(
                    (0..5)
                        .map(|i| json!({"name": format!("c{i}"), "resourceClaimName": format!("claim-{i}")}))
                        .collect::<Vec<_>>()
                ),
            )],
        ),
        m("wl-controller-ref-incomplete", vec![Set("/spec/controllerRef", json!({"kind": "Job", "name": ""}))]),
        upd(
            "wl-templates-change",
            vec![Set("/spec/podGroupTemplates/0/schedulingPolicy", json!({"gang": {"minCount": 3}}))],
        ),
    ]);
    vec![
        KindTemplate {
            label: "PodGroup",
            prefix: "/apis/scheduling.k8s.io/v1beta1",
            plural: "podgroups",
            namespaced: true,
            status: true,
            scale: false,
            custom: false,
            valid: json!({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {}, "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}),
            valid_status: json!({}),
            mutations: pg_muts,
        },
        KindTemplate {
            label: "Workload",
            prefix: "/apis/scheduling.k8s.io/v1beta1",
            plural: "workloads",
            namespaced: true,
            status: false,
            scale: false,
            custom: false,
            valid: json!({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {},
                "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}]}}),
            valid_status: Value::Null,
            mutations: wl_muts,
        },
    ]
}

fn custom_kinds() -> Vec<KindTemplate> {
    let route_rule = json!({"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
        "backendRefs": [{"name": "web", "port": 80}]});
    let mut route_muts = meta_mutations();
    route_muts.extend([
        m(
            "route-redirect-repeated",
            vec![
                Set(
                    "/spec/rules/0/filters",
                    json!([
            {"type": "RequestRedirect", "requestRedirect": {"scheme": "https"}},
            {"type": "RequestRedirect", "requestRedirect": {"scheme": "http"}}]),
                ),
                Remove("/spec/rules/0/backendRefs"),
            ],
        ),
        m(
            "route-redirect-with-backends",
            vec![Set(
                "/spec/rules/0/filters",
                json!([{"type": "RequestRedirect", "requestRedirect": {"scheme": "https"}}]),
            )],
        ),
        m("route-filter-type-mismatch", vec![Set("/spec/rules/0/filters", json!([{"type": "RequestHeaderModifier"}]))]),
        m("route-path-no-slash", vec![Set("/spec/rules/0/matches/0/path/value", json!("no-slash"))]),
        m("route-path-double-slash", vec![Set("/spec/rules/0/matches/0/path/value", json!("/a//b"))]),
        m("route-backend-no-port", vec![Remove("/spec/rules/0/backendRefs/0/port")]),
        m("route-hostname-invalid", vec![Set("/spec/hostnames", json!(["Not_A_Host"]))]),
        m(
            "route-timeouts-backend-longer",
            vec![Set("/spec/rules/0/timeouts", json!({"request": "1s", "backendRequest": "2s"}))],
        ),
        m(
            "route-parent-section-missing",
            vec![Set("/spec/parentRefs", json!([{"name": "gw"}, {"name": "gw", "sectionName": "http"}]))],
        ),
        m("route-weight-negative", vec![Set("/spec/rules/0/backendRefs/0/weight", json!(-1))]),
        m(
            "route-too-many-rules",
            vec![Set("/spec/rules", json!((0..17).map(|_| route_rule.clone()).collect::<Vec<_>>()))],
        ),
    ]);
    let listener = json!({"name": "http", "port": 80, "protocol": "HTTP"});
    let mut gw_muts = meta_mutations();
    gw_muts.extend([
        m(
            "gw-listener-name-duplicate",
            vec![Set("/spec/listeners/1", json!({"name": "http", "port": 8080, "protocol": "HTTP"}))],
        ),
        m(
            "gw-listener-port-protocol-duplicate",
            vec![Set("/spec/listeners/1", json!({"name": "other", "port": 80, "protocol": "HTTP"}))],
        ),
        m("gw-https-without-tls-ok", vec![Set("/spec/listeners/0/protocol", json!("HTTPS"))]),
        m(
            "gw-tcp-with-hostname",
            vec![
                Set("/spec/listeners/0/protocol", json!("TCP")),
                Set("/spec/listeners/0/hostname", json!("a.example.com")),
            ],
        ),
        m(
            "gw-http-with-tls",
            vec![Set("/spec/listeners/0/tls", json!({"mode": "Terminate", "certificateRefs": [{"name": "cert"}]}))],
        ),
        m("gw-port-zero", vec![Set("/spec/listeners/0/port", json!(0))]),
        m("gw-class-missing", vec![Remove("/spec/gatewayClassName")]),
        m(
            "gw-addresses-hostname-invalid",
            vec![Set("/spec/addresses", json!([{"type": "Hostname", "value": "Bad_Host"}]))],
        ),
        m("gw-listeners-empty", vec![Set("/spec/listeners", json!([]))]),
    ]);
    let mut gc_muts = meta_mutations();
    gc_muts.extend([
        m("gc-controller-invalid", vec![Set("/spec/controllerName", json!("no-slash"))]),
        upd("gc-controller-change", vec![Set("/spec/controllerName", json!("example.com/other"))]),
    ]);
    let mut rf_muts = meta_mutations();
    rf_muts.extend([
        m("rf-taint-effect", vec![Set("/spec/nodeTaints", json!([{"key": "k", "value": "v", "effect": "Sometimes"}]))]),
        m(
            "rf-toleration-exists-value",
            vec![Set("/spec/tolerations", json!([{"key": "k", "operator": "Exists", "value": "v"}]))],
        ),
        m(
            "rf-toleration-seconds-effect",
            vec![Set(
                "/spec/tolerations",
                json!([{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]),
            )],
        ),
        m("rf-topology-without-labels", vec![Set("/spec/topologyName", json!("default"))]),
        m(
            "rf-node-labels-too-many",
            vec![Set(
                "/spec/nodeLabels",
                json!((0..9).map(|i| (format!("k{i}"), json!("v"))).collect::<serde_json::Map<_, _>>()),
            )],
        ),
    ]);
    let mut rj_muts = meta_mutations();
    rj_muts.extend([
        m("rayjob-deletion-both", vec![Set("/spec/deletionStrategy", json!({"onSuccess": {"policy": "DeleteCluster"}, "onFailure": {"policy": "DeleteCluster"}, "deletionRules": [{"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED"}}]}))]),
        m("rayjob-deletion-only-success", vec![Set("/spec/deletionStrategy", json!({"onSuccess": {"policy": "DeleteCluster"}}))]),
        m("rayjob-managed-by-invalid", vec![Set("/spec/managedBy", json!("example.com/other"))]),
        m("rayjob-submission-mode-unsupported", vec![Set("/spec/submissionMode", json!("Telepathy"))]),
    ]);
    let crd = |label: &'static str,
               prefix: &'static str,
               plural: &'static str,
               namespaced: bool,
               valid: Value,
               muts: Vec<Mutation>| KindTemplate {
        label,
        prefix,
        plural,
        namespaced,
        status: true,
        scale: false,
        custom: true,
        valid,
        valid_status: Value::Null,
        mutations: muts,
    };
    vec![
        crd(
            "HTTPRoute.gateway.networking.k8s.io",
            "/apis/gateway.networking.k8s.io/v1",
            "httproutes",
            true,
            json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {},
                "spec": {"parentRefs": [{"name": "gw"}], "hostnames": ["web.example.com"], "rules": [route_rule]}}),
            route_muts,
        ),
        crd(
            "Gateway.gateway.networking.k8s.io",
            "/apis/gateway.networking.k8s.io/v1",
            "gateways",
            true,
            json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {},
                "spec": {"gatewayClassName": "kproof", "listeners": [listener]}}),
            gw_muts,
        ),
        crd(
            "GatewayClass.gateway.networking.k8s.io",
            "/apis/gateway.networking.k8s.io/v1",
            "gatewayclasses",
            false,
            json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": {},
                "spec": {"controllerName": "kproof.dev/gateway"}}),
            gc_muts,
        ),
        crd(
            "ResourceFlavor.kueue.x-k8s.io",
            "/apis/kueue.x-k8s.io/v1beta2",
            "resourceflavors",
            false,
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {},
                "spec": {"nodeLabels": {"pool": "a"}}}),
            rf_muts,
        ),
        crd(
            "RayJob.ray.io",
            "/apis/ray.io/v1",
            "rayjobs",
            true,
            json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {},
                "spec": {"entrypoint": "python job.py", "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}}}}}),
            rj_muts,
        ),
    ]
}
