//! Who made each write, from kube-apiserver's audit log: a watch shows what changed, not the
//! verb, user agent or user of the request that changed it. With the policy below the log
//! records every write's response object, whose `resourceVersion` is the one the watch event
//! carries (a delete that removes the object at once answers it at the deletion's revision:
//! `conditionalDelete` in k8s.io/apiserver v0.37.2 `pkg/storage/etcd3/store.go` decodes it at
//! `txnResp.Revision`), so a watch-recorded timeline can name the request behind each entry. A
//! `deletecollection` answers the objects as it listed them, before deleting
//! (`Store.DeleteCollection` in `pkg/registry/generic/registry/store.go`): the deletion of each
//! (the write that sets `deletionTimestamp`, or removes it) is the first after that version.
//! An operator may repeat a deletecollection while the pods of the first still terminate (KubeRay
//! v1.7.0's Recreate does, as long as the old head pod is listed: `shouldRecreatePodsForUpgrade`
//! in `raycluster_controller.go`), so a deletion belongs to the last collection that listed the
//! object before it, not to the last collection read.
//! <https://kubernetes.io/docs/tasks/debug/debug-cluster/audit/>

use serde_json::Value;
use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// The audit policy: request and response of every write, nothing for reads; leases (every
/// component renews one every few seconds) and events are left out.
pub const POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted, Panic]
rules:
- level: None
  resources:
  - group: coordination.k8s.io
    resources: [leases]
  - group: \"\"
    resources: [events]
  - group: events.k8s.io
    resources: [events]
- level: RequestResponse
  verbs: [create, update, patch, delete, deletecollection]
- level: None
";

/// kube-apiserver's flags that write the log to `log` with the policy in `policy`.
pub fn apiserver_flags(policy: &Path, log: &Path) -> Vec<String> {
    vec![
        format!("--audit-policy-file={}", policy.display()),
        format!("--audit-log-path={}", log.display()),
        "--audit-log-format=json".into(),
        "--audit-log-mode=blocking".into(),
        "--audit-log-maxsize=0".into(),
    ]
}

/// The request behind a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writer {
    /// `create`, `update`, `patch`, `delete`, `deletecollection`.
    pub verb: String,
    /// The client's `User-Agent`.
    pub user_agent: String,
    /// The authenticated user.
    pub user: String,
    /// `status`, `scale`, ... for a write of a subresource.
    pub subresource: Option<String>,
}

/// The audit log of one kube-apiserver, read as it grows.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    state: parking_lot::Mutex<AuditIndex>,
}

/// What the audit log said so far, by the writes it names.
#[derive(Debug, Default)]
pub struct AuditIndex {
    /// How far the file was read, and the incomplete last line.
    offset: u64,
    partial: Vec<u8>,
    /// The writer of each resourceVersion a write produced.
    by_version: HashMap<u64, Writer>,
    /// The objects deletecollections deleted, by UID: each collection that listed the object, with
    /// the version it listed.
    collected: HashMap<String, Vec<(u64, Writer)>>,
}

impl AuditLog {
    /// The log at `path` (it need not exist yet).
    pub fn new(path: PathBuf) -> Self {
        Self { path, state: Default::default() }
    }

    /// The index of the log, after reading what the log gained since the last call (once per
    /// look at the timeline, not once per write).
    pub fn read(&self) -> parking_lot::MutexGuard<'_, AuditIndex> {
        let mut index = self.state.lock();
        index.catch_up(&self.path);
        index
    }
}

impl AuditIndex {
    /// The request whose write produced `resource_version` of object `uid`. `deletion`: the
    /// write starts or ends the object's deletion, which a deletecollection may have made.
    pub fn writer_of(&self, resource_version: u64, uid: &str, deletion: bool) -> Option<&Writer> {
        if let Some(w) = self.by_version.get(&resource_version) {
            return Some(w);
        }
        let listings = self.collected.get(uid).filter(|_| deletion)?;
        listings
            .iter()
            .filter(|(listed, _)| *listed < resource_version)
            .max_by_key(|(listed, _)| *listed)
            .map(|(_, w)| w)
    }

    fn catch_up(&mut self, path: &Path) {
        let Ok(mut file) = std::fs::File::open(path) else { return };
        if file.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut fresh = Vec::new();
        let Ok(n) = file.read_to_end(&mut fresh) else { return };
        self.offset += n as u64;
        self.partial.extend_from_slice(&fresh);
        let Some(end) = self.partial.iter().rposition(|b| *b == b'\n') else { return };
        let complete: Vec<u8> = self.partial.drain(..=end).collect();
        for line in complete.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            if let Ok(event) = serde_json::from_slice::<Value>(line) {
                self.add(&event);
            }
        }
    }

    fn add(&mut self, event: &Value) {
        let s = |p: &str| event.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
        if s("/stage") != "ResponseComplete"
            || event.pointer("/responseStatus/code").and_then(Value::as_u64) >= Some(300)
        {
            return;
        }
        let writer = Writer {
            verb: s("/verb"),
            user_agent: s("/userAgent"),
            user: s("/user/username"),
            subresource: Some(s("/objectRef/subresource")).filter(|sub| !sub.is_empty()),
        };
        let Some(response) = event.get("responseObject") else { return };
        let version = |o: &Value| o.pointer("/metadata/resourceVersion").and_then(Value::as_str)?.parse::<u64>().ok();
        match response.get("items").and_then(Value::as_array) {
            // A deletecollection answers what it deleted, as listed before.
            Some(items) => {
                for item in items {
                    let uid = item.pointer("/metadata/uid").and_then(Value::as_str);
                    if let (Some(v), Some(uid)) = (version(item), uid) {
                        self.collected.entry(uid.to_string()).or_default().push((v, writer.clone()));
                    }
                }
            }
            None => {
                if let Some(v) = version(response) {
                    self.by_version.insert(v, writer);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(verb: &str, agent: &str, sub: &str, code: u64, response: Value) -> String {
        json!({
            "kind": "Event", "apiVersion": "audit.k8s.io/v1", "stage": "ResponseComplete", "verb": verb,
            "user": {"username": "system:admin"}, "userAgent": agent,
            "objectRef": {"resource": "pods", "namespace": "ns", "subresource": sub},
            "responseStatus": {"code": code}, "responseObject": response,
        })
        .to_string()
    }

    #[test]
    fn each_write_is_found_by_the_version_it_produced_as_the_log_grows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.log");
        let log = AuditLog::new(path.clone());
        assert_eq!(log.read().writer_of(5, "u", false).cloned(), None, "no log yet");
        let pod = |rv: &str| json!({"kind": "Pod", "metadata": {"name": "p", "uid": format!("u{rv}"), "resourceVersion": rv}});
        let first = [
            event("create", "kuberay-operator/v1.7.0", "", 201, pod("5")),
            event("update", "kubelet", "status", 200, pod("6")),
            event("create", "kuberay-operator/v1.7.0", "", 409, json!({"kind": "Status"})),
        ];
        // The last line is cut in the middle: it counts once complete.
        let whole = format!("{}\n", first.join("\n"));
        let cut = event(
            "deletecollection",
            "kuberay-operator/v1.7.0",
            "",
            200,
            json!({"kind": "PodList", "items": [pod("8"), pod("9")]}),
        );
        std::fs::write(&path, format!("{whole}{}", &cut[..40])).expect("write");
        let created = log.read().writer_of(5, "u5", false).cloned().expect("the create");
        assert_eq!(
            (created.verb.as_str(), created.user_agent.as_str(), created.subresource),
            ("create", "kuberay-operator/v1.7.0", None)
        );
        assert_eq!(
            log.read().writer_of(6, "u6", false).cloned().and_then(|w| w.subresource).as_deref(),
            Some("status")
        );
        assert_eq!(log.read().writer_of(20, "u8", true).cloned(), None, "half a line is not read");
        std::fs::write(&path, format!("{whole}{cut}\n")).expect("write");
        // The items as listed (8, 9): their deletions come later.
        for uid in ["u8", "u9"] {
            assert_eq!(
                log.read().writer_of(20, uid, true).cloned().map(|w| w.verb).as_deref(),
                Some("deletecollection"),
                "{uid}"
            );
        }
        assert_eq!(
            log.read().writer_of(20, "u8", false).cloned(),
            None,
            "a write that deletes nothing is not the collection's"
        );
        assert_eq!(log.read().writer_of(8, "u8", true).cloned(), None, "nor one at or before the listed version");
    }

    #[test]
    fn a_deletion_belongs_to_the_last_collection_that_listed_the_object_before_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.log");
        let pod = |rv: &str| json!({"kind": "Pod", "metadata": {"name": "p", "uid": "u", "resourceVersion": rv}});
        let collection = |agent: &str, rv: &str| {
            event("deletecollection", agent, "", 200, json!({"kind": "PodList", "items": [pod(rv)]}))
        };
        // The first collection lists the pod at 10 and sets its deletionTimestamp (12); a second
        // lists it terminating, at 12, and the kubelet's delete removes it later (20).
        let lines = [collection("first", "10"), collection("second", "12")];
        std::fs::write(&path, format!("{}\n", lines.join("\n"))).expect("write");
        let log = AuditLog::new(path);
        let by = |rv| log.read().writer_of(rv, "u", true).map(|w| w.user_agent.clone());
        assert_eq!(by(12).as_deref(), Some("first"), "the deletion the first collection made");
        assert_eq!(by(20).as_deref(), Some("second"));
        assert_eq!(by(10), None, "nothing listed it before 10");
    }
}
