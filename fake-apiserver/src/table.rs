//! Server-side printing: `Table` and `PartialObjectMetadata` answers for get, list and watch.
//!
//! kubectl asks `Accept: application/json;as=Table;v=v1;g=meta.k8s.io,…v1beta1…,application/json`
//! and prints the rows it gets. Columns follow kube-apiserver's printers for the common kinds
//! (pods, deployments, replicasets, services, nodes, namespaces, events, configmaps, …), CRD
//! `additionalPrinterColumns` for custom resources, and Name/Age otherwise. Cells of type `date`
//! carry the timestamp (kubectl turns it into an age); built-in Age cells carry the age text
//! the apiserver computes.

use crate::error::{ApiError, ApiResult};
use crate::registry::ResourceType;
use bytes::Bytes;
use http::{HeaderMap, header};
use jiff::Timestamp;
use serde_json::{Map, Value, json};

/// What `includeObject` asks each row to carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IncludeObject {
    None,
    Metadata,
    Object,
}

/// How a read answers: the objects themselves, a Table, or only their metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rendering {
    Json,
    /// `meta.k8s.io/<version>` Table.
    Table {
        version: &'static str,
        include: IncludeObject,
    },
    /// `meta.k8s.io/<version>` PartialObjectMetadata(List).
    Metadata {
        version: &'static str,
    },
}

impl Rendering {
    /// The Content-Type of an answer rendered this way.
    pub fn content_type(&self) -> String {
        match self {
            Rendering::Json => "application/json".into(),
            Rendering::Table { version, .. } => format!("application/json;as=Table;v={version};g=meta.k8s.io"),
            Rendering::Metadata { version } => {
                format!("application/json;as=PartialObjectMetadata;v={version};g=meta.k8s.io")
            }
        }
    }
}

/// Picks the rendering from the Accept header (first acceptable entry wins) and
/// `includeObject`; 406 when nothing acceptable is offered.
pub(crate) fn negotiate(headers: &HeaderMap, raw_query: Option<&str>) -> ApiResult<Rendering> {
    let include = match url::form_urlencoded::parse(raw_query.unwrap_or_default().as_bytes())
        .find(|(k, _)| k == "includeObject")
        .map(|(_, v)| v.into_owned())
        .as_deref()
    {
        None | Some("") | Some("Metadata") => IncludeObject::Metadata,
        Some("None") => IncludeObject::None,
        Some("Object") => IncludeObject::Object,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "Unsupported value: \"{other}\": supported values: \"Metadata\", \"None\", \"Object\""
            )));
        }
    };
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else { return Ok(Rendering::Json) };
    if accept.trim().is_empty() {
        return Ok(Rendering::Json);
    }
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        let (mut as_, mut g, mut v) = (None, None, None);
        for p in parts {
            match p.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
                Some(("as", x)) => as_ = Some(x),
                Some(("g", x)) => g = Some(x),
                Some(("v", x)) => v = Some(x),
                _ => {}
            }
        }
        if !matches!(media.as_str(), "*/*" | "application/*" | "application/json") {
            continue;
        }
        let version = match v {
            Some("v1") => "v1",
            Some("v1beta1") => "v1beta1",
            _ => "",
        };
        match (as_, g) {
            (None, _) => return Ok(Rendering::Json),
            (Some("Table"), Some("meta.k8s.io")) if !version.is_empty() => {
                return Ok(Rendering::Table { version, include });
            }
            (Some("PartialObjectMetadata" | "PartialObjectMetadataList"), Some("meta.k8s.io"))
                if !version.is_empty() =>
            {
                return Ok(Rendering::Metadata { version });
            }
            _ => {}
        }
    }
    Err(ApiError::not_acceptable(accept))
}

/// One column definition.
fn col(name: &str, typ: &str, format: &str, priority: i64, description: &str) -> Value {
    json!({"name": name, "type": typ, "format": format, "description": description, "priority": priority})
}

const NAME_DESC: &str = "Name of the object, unique within its namespace (or the cluster for cluster-scoped kinds).";
const AGE_DESC: &str = "Time since the object was created (metadata.creationTimestamp).";

fn name_col() -> Value {
    col("Name", "string", "name", 0, NAME_DESC)
}

fn age_col() -> Value {
    col("Age", "string", "", 0, AGE_DESC)
}

fn workload_cols() -> [Value; 3] {
    [
        col("Containers", "string", "", 1, "Names of the containers in the pod template."),
        col("Images", "string", "", 1, "Images of the containers in the pod template."),
        col("Selector", "string", "", 1, "Label selector of the pods."),
    ]
}

/// The columns of a kind.
fn columns(rt: &ResourceType) -> Vec<Value> {
    if rt.custom {
        let mut cols = vec![name_col()];
        for c in printer_columns(rt) {
            cols.push(col(
                c["name"].as_str().unwrap_or_default(),
                c["type"].as_str().unwrap_or("string"),
                c["format"].as_str().unwrap_or_default(),
                c["priority"].as_i64().unwrap_or(0),
                c["description"].as_str().unwrap_or_default(),
            ));
        }
        return cols;
    }
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Pod") => vec![
            name_col(),
            col("Ready", "string", "", 0, "Ready containers out of all containers."),
            col("Status", "string", "", 0, "The aggregate status of the pod's containers."),
            col("Restarts", "string", "", 0, "Container restarts, and how long ago the last one was."),
            age_col(),
            col("IP", "string", "", 1, "The pod's IP address."),
            col("Node", "string", "", 1, "The node the pod is bound to."),
            col("Nominated Node", "string", "", 1, "The node the scheduler nominated for preemption."),
            col("Readiness Gates", "string", "", 1, "Readiness gates that are true out of all."),
        ],
        ("apps", "Deployment") => {
            let mut c = vec![
                name_col(),
                col("Ready", "string", "", 0, "Ready replicas out of desired replicas."),
                col("Up-to-date", "integer", "", 0, "Replicas running the current pod template."),
                col("Available", "integer", "", 0, "Replicas available to serve."),
                age_col(),
            ];
            c.extend(workload_cols());
            c
        }
        ("apps", "ReplicaSet") => {
            let mut c = vec![
                name_col(),
                col("Desired", "integer", "", 0, "Desired replicas."),
                col("Current", "integer", "", 0, "Current replicas."),
                col("Ready", "integer", "", 0, "Ready replicas."),
                age_col(),
            ];
            c.extend(workload_cols());
            c
        }
        ("apps", "StatefulSet") => {
            let mut c =
                vec![name_col(), col("Ready", "string", "", 0, "Ready replicas out of desired replicas."), age_col()];
            c.extend(workload_cols().into_iter().take(2));
            c
        }
        ("", "Service") => vec![
            name_col(),
            col("Type", "string", "", 0, "How the service is exposed."),
            col("Cluster-IP", "string", "", 0, "The service's cluster IP."),
            col("External-IP", "string", "", 0, "External addresses of the service."),
            col("Port(s)", "string", "", 0, "The service's ports."),
            age_col(),
            col("Selector", "string", "", 1, "Label selector of the backing pods."),
        ],
        ("", "Node") => vec![
            name_col(),
            col("Status", "string", "", 0, "The status of the node"),
            col("Roles", "string", "", 0, "The roles of the node"),
            age_col(),
            col("Version", "string", "", 0, "Kubelet version."),
            col("Internal-IP", "string", "", 1, "Internal address."),
            col("External-IP", "string", "", 1, "External address."),
            col("OS-Image", "string", "", 1, "Operating system image."),
            col("Kernel-Version", "string", "", 1, "Kernel version."),
            col("Container-Runtime", "string", "", 1, "Container runtime version."),
        ],
        ("", "Namespace") => vec![name_col(), col("Status", "string", "", 0, "The status of the namespace"), age_col()],
        ("", "Event") | ("events.k8s.io", "Event") => vec![
            col("Last Seen", "string", "", 0, "When the event was last observed."),
            col("Type", "string", "", 0, "Normal or Warning."),
            col("Reason", "string", "", 0, "Why the event happened, in CamelCase."),
            col("Object", "string", "", 0, "The object the event is about."),
            col("Subobject", "string", "", 1, "The part of the object the event is about."),
            col("Source", "string", "", 1, "The component that reported the event."),
            col("Message", "string", "", 0, "What happened, for people."),
            col("First Seen", "string", "", 1, "When the event was first observed."),
            col("Count", "string", "", 1, "How often the event happened."),
            col("Name", "string", "name", 1, NAME_DESC),
        ],
        ("", "ConfigMap") => vec![name_col(), col("Data", "integer", "", 0, "Number of keys."), age_col()],
        ("", "Secret") => vec![
            name_col(),
            col("Type", "string", "", 0, "The secret's type."),
            col("Data", "string", "", 0, "Number of keys."),
            age_col(),
        ],
        _ => vec![name_col(), age_col()],
    }
}

/// A CRD version's printer columns, with the Age column the CRD defaulting adds when none
/// are given.
fn printer_columns(rt: &ResourceType) -> Vec<Value> {
    if rt.printer_columns.is_empty() {
        vec![json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})]
    } else {
        rt.printer_columns.clone()
    }
}

/// Go's `duration.HumanDuration`: the age text kubectl shows.
pub(crate) fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 { format!("{minutes}m") } else { format!("{minutes}m{s}s") };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 { format!("{hours}h") } else { format!("{hours}h{m}m") };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 { format!("{}d", hours / 24) } else { format!("{}d{h}h", hours / 24) };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let d = (hours / 24) % 365;
        return if d == 0 { format!("{}y", hours / 24 / 365) } else { format!("{}y{d}d", hours / 24 / 365) };
    }
    format!("{}y", hours / 24 / 365)
}

/// The age of a timestamp field, or `<unknown>` when absent.
fn since(v: &Value, now: Timestamp) -> String {
    match v.as_str().and_then(|s| s.parse::<Timestamp>().ok()) {
        Some(t) => human_duration(now.duration_since(t).as_secs()),
        None => "<unknown>".into(),
    }
}

fn or_none(s: Option<&str>) -> String {
    s.filter(|s| !s.is_empty()).unwrap_or("<none>").to_string()
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

/// `k=v,k2=v2` of a string map, sorted by key; `<none>` when empty.
fn format_map(m: &Value) -> String {
    let Some(m) = m.as_object().filter(|m| !m.is_empty()) else { return "<none>".into() };
    let mut pairs: Vec<String> = m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect();
    pairs.sort();
    pairs.join(",")
}

/// A metav1.LabelSelector as a selector string; `<none>` when it selects everything.
fn format_label_selector(sel: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(m) = sel["matchLabels"].as_object() {
        let mut p: Vec<String> = m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect();
        p.sort();
        parts.extend(p);
    }
    for e in sel["matchExpressions"].as_array().into_iter().flatten() {
        let key = e["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = e["values"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        parts.push(match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            op => format!("{key} {op} ({})", values.join(",")),
        });
    }
    if parts.is_empty() { "<none>".into() } else { parts.join(",") }
}

fn containers_and_images(template_spec: &Value) -> (String, String) {
    let cs = template_spec["containers"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = cs.iter().filter_map(|c| c["name"].as_str()).collect();
    let images: Vec<&str> = cs.iter().filter_map(|c| c["image"].as_str()).collect();
    (names.join(","), images.join(","))
}

fn pod_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let status = &o["status"];
    let restartable_init =
        spec["initContainers"].as_array().into_iter().flatten().filter(|c| c["restartPolicy"] == "Always").count();
    let total = spec["containers"].as_array().map_or(0, Vec::len) + restartable_init;
    let mut reason = status["phase"].as_str().unwrap_or_default().to_string();
    if let Some(r) = status["reason"].as_str().filter(|r| !r.is_empty()) {
        reason = r.to_string();
    }
    let mut ready = 0;
    let mut restarts = 0;
    let mut last_restart: Option<Timestamp> = None;
    let mut running = false;
    let statuses = status["containerStatuses"].as_array().cloned().unwrap_or_default();
    for cs in statuses.iter().rev() {
        restarts += int(&cs["restartCount"]);
        if let Some(t) = cs["lastState"]["terminated"]["finishedAt"].as_str().and_then(|s| s.parse::<Timestamp>().ok())
        {
            last_restart = Some(last_restart.map_or(t, |l| l.max(t)));
        }
        let state = &cs["state"];
        if let Some(w) = state["waiting"]["reason"].as_str().filter(|r| !r.is_empty()) {
            reason = w.to_string();
        } else if let Some(t) = state["terminated"].as_object() {
            reason = match t.get("reason").and_then(Value::as_str).filter(|r| !r.is_empty()) {
                Some(r) => r.to_string(),
                None => match t.get("signal").and_then(Value::as_i64).filter(|s| *s != 0) {
                    Some(s) => format!("Signal:{s}"),
                    None => format!("ExitCode:{}", t.get("exitCode").and_then(Value::as_i64).unwrap_or(0)),
                },
            };
        } else if state["running"].is_object() && cs["ready"] == true {
            running = true;
            ready += 1;
        } else if state["running"].is_object() {
            running = true;
        }
    }
    let pod_ready =
        status["conditions"].as_array().into_iter().flatten().any(|c| c["type"] == "Ready" && c["status"] == "True");
    if reason == "Completed" && running {
        reason = if pod_ready { "Running".into() } else { "NotReady".into() };
    }
    if o["metadata"]["deletionTimestamp"].is_string() {
        reason = if status["reason"] == "NodeLost" { "Unknown".into() } else { "Terminating".into() };
    }
    let restarts_text = match last_restart {
        Some(t) => format!("{restarts} ({} ago)", human_duration(now.duration_since(t).as_secs())),
        None => restarts.to_string(),
    };
    let gates = spec["readinessGates"].as_array().cloned().unwrap_or_default();
    let gates_text = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
        let true_count = gates
            .iter()
            .filter(|g| conditions.iter().any(|c| c["type"] == g["conditionType"] && c["status"] == "True"))
            .count();
        format!("{true_count}/{}", gates.len())
    };
    vec![
        json!(o["metadata"]["name"]),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts_text),
        json!(since(&o["metadata"]["creationTimestamp"], now)),
        json!(or_none(status["podIP"].as_str())),
        json!(or_none(spec["nodeName"].as_str())),
        json!(or_none(status["nominatedNodeName"].as_str())),
        json!(gates_text),
    ]
}

fn service_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let typ = spec["type"].as_str().unwrap_or("ClusterIP");
    let external_ips: Vec<String> =
        spec["externalIPs"].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_string)).collect();
    let external = match typ {
        "ClusterIP" | "NodePort" => {
            if external_ips.is_empty() {
                "<none>".to_string()
            } else {
                external_ips.join(",")
            }
        }
        "LoadBalancer" => {
            let mut ips: Vec<String> = o["status"]["loadBalancer"]["ingress"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|i| i["ip"].as_str().or_else(|| i["hostname"].as_str()).map(str::to_string))
                .collect();
            ips.extend(external_ips);
            if ips.is_empty() { "<pending>".into() } else { ips.join(",") }
        }
        "ExternalName" => spec["externalName"].as_str().unwrap_or_default().to_string(),
        _ => "<unknown>".into(),
    };
    let ports: Vec<String> = spec["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let proto = p["protocol"].as_str().unwrap_or("TCP");
            match p["nodePort"].as_i64().filter(|n| *n != 0) {
                Some(np) => format!("{}:{np}/{proto}", int(&p["port"])),
                None => format!("{}/{proto}", int(&p["port"])),
            }
        })
        .collect();
    vec![
        json!(o["metadata"]["name"]),
        json!(typ),
        json!(or_none(spec["clusterIP"].as_str())),
        json!(external),
        json!(if ports.is_empty() { "<none>".to_string() } else { ports.join(",") }),
        json!(since(&o["metadata"]["creationTimestamp"], now)),
        json!(format_map(&spec["selector"])),
    ]
}

fn node_cells(o: &Value, now: Timestamp) -> Vec<Value> {
    let status = &o["status"];
    let ready = status["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "Ready");
    let mut state = match ready.and_then(|c| c["status"].as_str()) {
        Some("True") => "Ready".to_string(),
        Some(_) => "NotReady".to_string(),
        None => "Unknown".to_string(),
    };
    if o["spec"]["unschedulable"] == true {
        state.push_str(",SchedulingDisabled");
    }
    let mut roles: Vec<String> = Vec::new();
    if let Some(labels) = o["metadata"]["labels"].as_object() {
        for (k, v) in labels {
            if let Some(r) = k.strip_prefix("node-role.kubernetes.io/") {
                if !r.is_empty() {
                    roles.push(r.to_string());
                }
            } else if k == "kubernetes.io/role"
                && let Some(r) = v.as_str().filter(|r| !r.is_empty())
            {
                roles.push(r.to_string());
            }
        }
    }
    roles.sort();
    roles.dedup();
    let address = |t: &str| {
        status["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["type"] == t)
            .and_then(|a| a["address"].as_str())
            .unwrap_or("<none>")
            .to_string()
    };
    let info = &status["nodeInfo"];
    let unknown = |v: &Value| v.as_str().filter(|s| !s.is_empty()).unwrap_or("<unknown>").to_string();
    vec![
        json!(o["metadata"]["name"]),
        json!(state),
        json!(if roles.is_empty() { "<none>".to_string() } else { roles.join(",") }),
        json!(since(&o["metadata"]["creationTimestamp"], now)),
        json!(info["kubeletVersion"].as_str().unwrap_or_default()),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(unknown(&info["osImage"])),
        json!(unknown(&info["kernelVersion"])),
        json!(unknown(&info["containerRuntimeVersion"])),
    ]
}

fn event_cells(o: &Value, now: Timestamp, events_v1: bool) -> Vec<Value> {
    // events.k8s.io/v1 names the same things differently.
    let (regarding, message, first, last, count) = if events_v1 {
        (
            &o["regarding"],
            &o["note"],
            &o["deprecatedFirstTimestamp"],
            if o["series"]["lastObservedTime"].is_string() {
                &o["series"]["lastObservedTime"]
            } else if o["deprecatedLastTimestamp"].is_string() {
                &o["deprecatedLastTimestamp"]
            } else {
                &o["eventTime"]
            },
            if o["series"]["count"].is_i64() { &o["series"]["count"] } else { &o["deprecatedCount"] },
        )
    } else {
        (
            &o["involvedObject"],
            &o["message"],
            &o["firstTimestamp"],
            if o["series"]["lastObservedTime"].is_string() {
                &o["series"]["lastObservedTime"]
            } else if o["lastTimestamp"].is_string() {
                &o["lastTimestamp"]
            } else {
                &o["eventTime"]
            },
            if o["series"]["count"].is_i64() { &o["series"]["count"] } else { &o["count"] },
        )
    };
    let first = if first.is_string() { first } else { last };
    let (component, host) = if events_v1 {
        (o["reportingController"].as_str(), o["reportingInstance"].as_str())
    } else {
        (
            o["source"]["component"].as_str().filter(|s| !s.is_empty()).or(o["reportingComponent"].as_str()),
            o["source"]["host"].as_str().filter(|s| !s.is_empty()).or(o["reportingInstance"].as_str()),
        )
    };
    let source = match (component.filter(|s| !s.is_empty()), host.filter(|s| !s.is_empty())) {
        (Some(c), Some(h)) => format!("{c}, {h}"),
        (Some(c), None) => c.to_string(),
        (None, Some(h)) => h.to_string(),
        (None, None) => String::new(),
    };
    vec![
        json!(since(last, now)),
        json!(o["type"].as_str().unwrap_or_default()),
        json!(o["reason"].as_str().unwrap_or_default()),
        json!(format!(
            "{}/{}",
            regarding["kind"].as_str().unwrap_or_default().to_lowercase(),
            regarding["name"].as_str().unwrap_or_default()
        )),
        json!(regarding["fieldPath"].as_str().unwrap_or_default()),
        json!(source),
        json!(message.as_str().unwrap_or_default()),
        json!(since(first, now)),
        json!(int(count).max(if events_v1 { 1 } else { 0 }).to_string()),
        json!(o["metadata"]["name"]),
    ]
}

fn workload_tail(o: &Value) -> [Value; 3] {
    let (names, images) = containers_and_images(&o["spec"]["template"]["spec"]);
    [json!(names), json!(images), json!(format_label_selector(&o["spec"]["selector"]))]
}

/// The cells of one object's row.
fn cells(rt: &ResourceType, o: &Value, now: Timestamp) -> Vec<Value> {
    let name = json!(o["metadata"]["name"]);
    let age = json!(since(&o["metadata"]["creationTimestamp"], now));
    if rt.custom {
        let mut c = vec![name];
        for pc in printer_columns(rt) {
            c.push(crd_cell(o, &pc, now));
        }
        return c;
    }
    let spec = &o["spec"];
    let status = &o["status"];
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Pod") => pod_cells(o, now),
        ("apps", "Deployment") => {
            let desired = spec["replicas"].as_i64().unwrap_or(1);
            let mut c = vec![
                name,
                json!(format!("{}/{desired}", int(&status["readyReplicas"]))),
                json!(int(&status["updatedReplicas"])),
                json!(int(&status["availableReplicas"])),
                age,
            ];
            c.extend(workload_tail(o));
            c
        }
        ("apps", "ReplicaSet") => {
            let mut c = vec![
                name,
                json!(spec["replicas"].as_i64().unwrap_or(1)),
                json!(int(&status["replicas"])),
                json!(int(&status["readyReplicas"])),
                age,
            ];
            c.extend(workload_tail(o));
            c
        }
        ("apps", "StatefulSet") => {
            let desired = spec["replicas"].as_i64().unwrap_or(1);
            let [names, images, _] = workload_tail(o);
            vec![name, json!(format!("{}/{desired}", int(&status["readyReplicas"]))), age, names, images]
        }
        ("", "Service") => service_cells(o, now),
        ("", "Node") => node_cells(o, now),
        ("", "Namespace") => vec![name, json!(status["phase"].as_str().unwrap_or_default()), age],
        ("", "Event") => event_cells(o, now, false),
        ("events.k8s.io", "Event") => event_cells(o, now, true),
        ("", "ConfigMap") => {
            let n = o["data"].as_object().map_or(0, Map::len) + o["binaryData"].as_object().map_or(0, Map::len);
            vec![name, json!(n), age]
        }
        ("", "Secret") => {
            let n = o["data"].as_object().map_or(0, Map::len);
            vec![name, json!(o["type"].as_str().unwrap_or_default()), json!(n.to_string()), age]
        }
        _ => vec![name, age],
    }
}

/// One step of a printer-column JSONPath.
enum Step {
    Field(String),
    Index(usize),
    All,
    Filter { key: String, value: String },
}

/// Parses the JSONPath subset printer columns use: `.a.b`, `.a[0]`, `.a[*].b`,
/// `.a[?(@.type=="Ready")].status`, optionally wrapped in `{}`.
fn parse_path(path: &str) -> Option<Vec<Step>> {
    let p = path.trim().trim_start_matches('{').trim_end_matches('}');
    let mut steps = Vec::new();
    let mut rest = p;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end > 0 {
                steps.push(Step::Field(r[..end].to_string()));
            }
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = r[..end].trim();
            rest = &r[end + 1..];
            if inner == "*" {
                steps.push(Step::All);
            } else if let Some(f) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                let (k, v) = f.split_once("==")?;
                steps.push(Step::Filter {
                    key: k.trim().to_string(),
                    value: v.trim().trim_matches(|c| c == '"' || c == '\'').to_string(),
                });
            } else if let Ok(i) = inner.parse() {
                steps.push(Step::Index(i));
            } else {
                steps.push(Step::Field(inner.trim_matches(|c| c == '"' || c == '\'').to_string()));
            }
        } else {
            return None;
        }
    }
    Some(steps)
}

fn eval_path<'a>(root: &'a Value, steps: &[Step]) -> Vec<&'a Value> {
    let mut cur = vec![root];
    for s in steps {
        let mut next = Vec::new();
        for v in cur {
            match s {
                Step::Field(f) => next.extend(v.get(f.as_str())),
                Step::Index(i) => next.extend(v.get(*i)),
                Step::All => match v {
                    Value::Array(a) => next.extend(a.iter()),
                    Value::Object(m) => next.extend(m.values()),
                    _ => {}
                },
                Step::Filter { key, value } => {
                    for item in v.as_array().into_iter().flatten() {
                        let got = &item[key.as_str()];
                        let text = match got {
                            Value::String(s) => s.clone(),
                            Value::Null => continue,
                            other => other.to_string(),
                        };
                        if text == *value {
                            next.push(item);
                        }
                    }
                }
            }
        }
        cur = next;
    }
    cur
}

/// A cell of a CRD printer column: typed by the column's type, `null` when missing or
/// of the wrong type, several matches joined with commas. A `date` cell is the age of the
/// timestamp, as kube-apiserver's CRD table convertor prints it (`5s`, `3d4h`, `<unknown>`).
fn crd_cell(o: &Value, pc: &Value, now: Timestamp) -> Value {
    let Some(steps) = pc["jsonPath"].as_str().and_then(parse_path) else { return Value::Null };
    let found = eval_path(o, &steps);
    match found.as_slice() {
        [] => Value::Null,
        [one] => match (pc["type"].as_str().unwrap_or("string"), one) {
            ("integer", Value::Number(n)) => n.as_i64().map_or(Value::Null, |i| json!(i)),
            ("number", Value::Number(n)) => json!(n),
            ("boolean", Value::Bool(b)) => json!(b),
            ("date", v @ Value::String(_)) => json!(since(v, now)),
            ("string", Value::String(s)) => json!(s),
            ("string", other @ (Value::Number(_) | Value::Bool(_))) => json!(other.to_string()),
            ("string", other) => json!(other.to_string()),
            _ => Value::Null,
        },
        many => json!(
            many.iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

/// The `PartialObjectMetadata` of an object.
fn partial_metadata(o: &Value, version: &str) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": format!("meta.k8s.io/{version}"), "metadata": o["metadata"]})
}

fn row(rt: &ResourceType, o: Value, version: &str, include: IncludeObject, now: Timestamp) -> Value {
    let cells = cells(rt, &o, now);
    let object = match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Metadata => partial_metadata(&o, version),
        IncludeObject::Object => o,
    };
    if object.is_null() { json!({"cells": cells}) } else { json!({"cells": cells, "object": object}) }
}

/// List metadata as a list carries it.
fn list_meta(rv: u64, cont: Option<String>, remaining: Option<usize>) -> Value {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if let Some(c) = cont {
        meta["continue"] = json!(c);
    }
    if let Some(r) = remaining {
        meta["remainingItemCount"] = json!(r);
    }
    meta
}

/// The body of a list read rendered as `rendering` (not `Json`).
pub(crate) fn list_body(
    rendering: &Rendering,
    rt: &ResourceType,
    items: &[Bytes],
    rv: u64,
    cont: Option<String>,
    remaining: Option<usize>,
    now: Timestamp,
) -> Value {
    let objects = items.iter().map(|b| serde_json::from_slice::<Value>(b).unwrap_or(Value::Null));
    let meta = list_meta(rv, cont, remaining);
    match rendering {
        Rendering::Table { version, include } => json!({
            "kind": "Table",
            "apiVersion": format!("meta.k8s.io/{version}"),
            "metadata": meta,
            "columnDefinitions": columns(rt),
            "rows": objects.map(|o| row(rt, o, version, *include, now)).collect::<Vec<_>>(),
        }),
        Rendering::Metadata { version } => json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": format!("meta.k8s.io/{version}"),
            "metadata": meta,
            "items": objects.map(|o| partial_metadata(&o, version)).collect::<Vec<_>>(),
        }),
        Rendering::Json => Value::Null,
    }
}

/// The body of a single-object read (or a watch event's object) rendered as `rendering`.
pub(crate) fn object_body(rendering: &Rendering, rt: &ResourceType, object: &[u8], now: Timestamp) -> Value {
    let o: Value = serde_json::from_slice(object).unwrap_or(Value::Null);
    match rendering {
        Rendering::Table { version, include } => {
            let rv = o["metadata"]["resourceVersion"].clone();
            json!({
                "kind": "Table",
                "apiVersion": format!("meta.k8s.io/{version}"),
                "metadata": {"resourceVersion": rv},
                "columnDefinitions": columns(rt),
                "rows": [row(rt, o, version, *include, now)],
            })
        }
        Rendering::Metadata { version } => partial_metadata(&o, version),
        Rendering::Json => o,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_match_go() {
        let cases = [
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (125, "2m5s"),
            (600, "10m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 60 * 5, "3h5m"),
            (47 * 3600, "47h"),
            (49 * 3600, "2d1h"),
            (10 * 86400, "10d"),
            (3 * 365 * 86400, "3y"),
            (-5, "<invalid>"),
        ];
        for (s, want) in cases {
            assert_eq!(human_duration(s), want, "{s}");
        }
    }

    #[test]
    fn json_paths_of_printer_columns() {
        let o = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"size": 3, "tags": ["a", "b"]}, "status": {"conditions": [
            {"type": "Ready", "status": "True"}, {"type": "Synced", "status": "False"}]}});
        let now: Timestamp = "2026-01-01T00:01:00Z".parse().unwrap();
        let cell = |path: &str, typ: &str| crd_cell(&o, &json!({"jsonPath": path, "type": typ}), now);
        assert_eq!(cell(".spec.size", "integer"), json!(3));
        assert_eq!(cell(".spec.size", "string"), json!("3"));
        assert_eq!(cell(".spec.size", "boolean"), Value::Null);
        assert_eq!(cell(".spec.tags[*]", "string"), json!("a,b"));
        assert_eq!(cell(".spec.tags[1]", "string"), json!("b"));
        assert_eq!(cell(".status.conditions[?(@.type==\"Ready\")].status", "string"), json!("True"));
        assert_eq!(cell(".spec.missing", "string"), Value::Null);
        assert_eq!(cell(".metadata.creationTimestamp", "date"), json!("60s"));
    }

    #[test]
    fn accept_negotiation_prefers_the_first_servable_entry() {
        let mut h = HeaderMap::new();
        let table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        h.insert(header::ACCEPT, table.parse().unwrap());
        assert_eq!(negotiate(&h, None).unwrap(), Rendering::Table { version: "v1", include: IncludeObject::Metadata });
        assert_eq!(
            negotiate(&h, Some("includeObject=Object")).unwrap(),
            Rendering::Table { version: "v1", include: IncludeObject::Object }
        );
        assert!(negotiate(&h, Some("includeObject=All")).is_err());
        h.insert(header::ACCEPT, "application/json;as=Table;v=v2;g=meta.k8s.io, application/json".parse().unwrap());
        assert_eq!(negotiate(&h, None).unwrap(), Rendering::Json);
        h.insert(header::ACCEPT, "application/yaml".parse().unwrap());
        assert!(negotiate(&h, None).is_err());
    }
}
