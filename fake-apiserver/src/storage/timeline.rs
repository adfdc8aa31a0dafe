//! The timeline: every successful write, with who made it and how, in resourceVersion order.
//! The harness asserts on it and the flight recorder prints it.

use super::StorageKey;
use super::object::StoredObject;
use bytes::Bytes;
use jiff::Timestamp;
use serde_json::Value;
use std::sync::Arc;

/// The verb of a request, as authorization and the timeline name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    /// GET of one object.
    Get,
    /// GET of a collection.
    List,
    /// GET of a collection with `watch=true`.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH (server-side apply included).
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    #[serde(rename = "deletecollection")]
    DeleteCollection,
}

impl Verb {
    /// The verb as Kubernetes spells it (`deletecollection`).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }
}

impl std::fmt::Display for Verb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A subresource the server serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Subresource {
    /// `/status`: only `.status` of the object.
    Status,
    /// `/scale`: an `autoscaling/v1` Scale of the object.
    Scale,
    /// `pods/binding`: assigns a pod to a node.
    Binding,
    /// `namespaces/finalize`: the namespace's `spec.finalizers`.
    Finalize,
}

impl Subresource {
    /// The subresource as the URL spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Subresource::Status => "status",
            Subresource::Scale => "scale",
            Subresource::Binding => "binding",
            Subresource::Finalize => "finalize",
        }
    }

    /// The subresource a URL segment names, if the server knows it.
    pub fn parse(segment: &str) -> Option<Self> {
        Some(match segment {
            "status" => Subresource::Status,
            "scale" => Subresource::Scale,
            "binding" => Subresource::Binding,
            "finalize" => Subresource::Finalize,
            _ => return None,
        })
    }
}

impl std::fmt::Display for Subresource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a change did to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ChangeKind {
    /// The object was created.
    #[serde(rename = "ADDED")]
    Added,
    /// The object was changed (marked for deletion included).
    #[serde(rename = "MODIFIED")]
    Modified,
    /// The object is gone.
    #[serde(rename = "DELETED")]
    Deleted,
}

impl ChangeKind {
    /// The watch event type.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "ADDED",
            ChangeKind::Modified => "MODIFIED",
            ChangeKind::Deleted => "DELETED",
        }
    }
}

/// One entry of the event log: the state after a write and the state before it.
#[derive(Debug)]
pub(crate) struct Change {
    pub resource_version: u64,
    pub kind: ChangeKind,
    pub key: StorageKey,
    /// The object after the write; for deletions, its last state stamped with the deletion's version.
    pub object: Arc<StoredObject>,
    /// What the collection held before the write.
    pub previous: Option<Arc<StoredObject>>,
}

/// Who made a write, for the timeline.
#[derive(Debug, Clone)]
pub(crate) struct WriteContext {
    pub verb: Verb,
    pub subresource: Option<Subresource>,
    pub user_agent: String,
    pub field_manager: Option<String>,
    /// The requesting user (`None` for the server's own controllers).
    pub user: Option<std::sync::Arc<super::UserInfo>>,
}

/// One successful write, as the harness reads it.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineEntry {
    /// The resourceVersion the write produced.
    pub resource_version: u64,
    /// When it was written, on the server's clock.
    #[serde(serialize_with = "serialize_time")]
    pub time: Timestamp,
    /// The request's verb (the system controllers' writes carry the verb they would send).
    pub verb: Verb,
    /// What the write did to the object.
    pub change: ChangeKind,
    /// `apiVersion` the object was written through.
    pub api_version: String,
    /// The object's kind.
    pub kind: String,
    /// `plural` or `plural.group`.
    pub resource: String,
    /// The subresource written, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subresource: Option<Subresource>,
    /// The object's namespace (empty for cluster-scoped objects).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// The object's uid.
    pub uid: String,
    /// The `User-Agent` of the request.
    pub user_agent: String,
    /// The field manager of the request (the `fieldManager` parameter, else from the user agent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field_manager: Option<String>,
    /// The authenticated user who made the write (`None` for the server's own controllers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(skip)]
    object: Bytes,
}

fn serialize_time<S: serde::Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&apimachinery::clock::format_time(*t))
}

impl TimelineEntry {
    /// The object as written.
    pub fn object(&self) -> Value {
        serde_json::from_slice(&self.object).unwrap_or(Value::Null)
    }

    /// The object as written, as the JSON the store keeps (for readers that decode it lazily).
    pub fn object_json(&self) -> &Bytes {
        &self.object
    }
}

/// One successful write as the store keeps it: everything shared with the write and the
/// stored object, so recording it copies no strings. [`TimelineRecord::entry`] spells it out.
#[derive(Debug, Clone)]
pub(crate) struct TimelineRecord {
    pub(super) resource_version: u64,
    pub(super) time: Timestamp,
    pub(super) change: ChangeKind,
    pub(super) ctx: Arc<WriteContext>,
    pub(super) kind: Arc<str>,
    pub(super) resource: Arc<str>,
    pub(super) object: Arc<StoredObject>,
}

impl TimelineRecord {
    /// The resourceVersion of the write.
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    /// The write as the harness reads it.
    pub fn entry(&self) -> TimelineEntry {
        let o = &self.object;
        TimelineEntry {
            resource_version: self.resource_version,
            time: self.time,
            verb: self.ctx.verb,
            change: self.change,
            api_version: o.api_version.clone(),
            kind: self.kind.to_string(),
            resource: self.resource.to_string(),
            subresource: self.ctx.subresource,
            namespace: o.namespace.clone(),
            name: o.name.clone(),
            uid: o.uid.clone(),
            user_agent: self.ctx.user_agent.clone(),
            field_manager: self.ctx.field_manager.clone(),
            user: self.ctx.user.as_ref().map(|u| u.name.clone()),
            object: o.bytes.clone(),
        }
    }
}
