//! Objects as the store keeps them: their canonical JSON bytes plus the few parsed fields that
//! lists, watches and the garbage collector read, so a GET, a list page or a watch event is a
//! copy of bytes, not a serialization, and memory stays close to the JSON size.

use bytes::Bytes;
use serde_json::Value;
use std::borrow::{Borrow, Cow};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::ops::Range;
use std::sync::Arc;

/// What the store needs to know about the resource of an object it stores (the registry's
/// resource types provide it).
pub(crate) trait StoredResource {
    /// The collection the object goes into.
    fn storage_key(&self) -> &StorageKey;
    /// The kind, as the timeline names it.
    fn shared_kind(&self) -> &Arc<str>;
    /// `plural` or `plural.group`, as the timeline names the resource.
    fn qualified_resource(&self) -> &Arc<str>;
    /// Changes whenever the schema objects are written through changes (see [`StoredObject::schema_epoch`]).
    fn schema_epoch(&self) -> u64;
    /// The values of the kind's selectable fields in `object`, for field selectors.
    fn selectable_values(&self, object: &Value) -> Vec<(String, String)>;
}

/// Identifies the storage shared by all versions of a resource: group and plural.
#[derive(Debug, Clone, Eq, PartialOrd, Ord)]
pub(crate) struct StorageKey(Arc<str>);

impl PartialEq for StorageKey {
    fn eq(&self, other: &Self) -> bool {
        // Keys are mostly clones of one another: the pointer usually decides.
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl Hash for StorageKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl StorageKey {
    /// The key of `plural` in `group`.
    pub fn new(group: &str, plural: &str) -> Self {
        Self(Arc::from(format!("{group}/{plural}")))
    }
}

/// One stored version of an object.
#[derive(Debug)]
pub(crate) struct StoredObject {
    /// The object as JSON, with its resourceVersion.
    pub bytes: Bytes,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: u64,
    /// `apiVersion` it was written with (CRDs with several versions share storage).
    pub api_version: String,
    /// Schema epoch of the version it was written through (see [`StoredResource::schema_epoch`]).
    pub schema_epoch: u64,
    pub labels: BTreeMap<String, String>,
    /// Values of the kind's selectable fields, computed at write time.
    pub fields: Vec<(String, String)>,
    pub deleting: bool,
    pub finalizers: Vec<String>,
    /// `metadata.ownerReferences`, for the garbage collector.
    pub owners: Box<[OwnerRef]>,
    /// The object already parsed, kept by the store for the current version of an object that
    /// was updated (the next update reads it, so it is not parsed again); taken away once a newer
    /// version replaces it. See [`super::Store::commit`].
    pub(crate) parsed: parking_lot::Mutex<Option<Arc<Value>>>,
}

impl StoredObject {
    /// The object as a JSON value.
    pub fn value(&self) -> Value {
        match self.parsed.lock().as_deref() {
            Some(v) => v.clone(),
            None => self.parse(),
        }
    }

    /// The object as a shared JSON value: the kept one, else parsed.
    pub fn shared_value(&self) -> Arc<Value> {
        match &*self.parsed.lock() {
            Some(v) => v.clone(),
            None => Arc::new(self.parse()),
        }
    }

    fn parse(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or(Value::Null)
    }

    /// The value of a selectable field (`metadata.name`, `spec.nodeName`, ...).
    pub fn field(&self, path: &str) -> Option<String> {
        match path {
            "metadata.name" => Some(self.name.clone()),
            "metadata.namespace" => Some(self.namespace.clone()),
            _ => self.fields.iter().find(|(k, _)| k == path).map(|(_, v)| v.clone()),
        }
    }
}

/// One entry of `metadata.ownerReferences`, as the garbage collector reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OwnerRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    /// `blockOwnerDeletion: true`: a foreground deletion of the owner waits for this dependent.
    pub block: bool,
}

/// The owner references of an object value (entries that are not objects are skipped).
pub(crate) fn owner_refs(value: &Value) -> Box<[OwnerRef]> {
    let Some(list) = value["metadata"]["ownerReferences"].as_array() else { return Box::default() };
    let s = |r: &Value, f: &str| r[f].as_str().unwrap_or_default().to_string();
    list.iter()
        .filter(|r| r.is_object())
        .map(|r| OwnerRef {
            api_version: s(r, "apiVersion"),
            kind: s(r, "kind"),
            name: s(r, "name"),
            uid: s(r, "uid"),
            block: r["blockOwnerDeletion"].as_bool() == Some(true),
        })
        .collect()
}

/// The objects of one resource, ordered by (namespace, name) like etcd keys.
pub(crate) type Collection = BTreeMap<(String, String), Arc<StoredObject>>;

/// A `(namespace, name)` key, owned or borrowed, so a [`Collection`] can be searched without
/// building two Strings. Orders like the owned tuple.
pub(crate) trait ObjectKey {
    fn pair(&self) -> (&str, &str);
}

impl ObjectKey for (String, String) {
    fn pair(&self) -> (&str, &str) {
        (&self.0, &self.1)
    }
}

impl ObjectKey for (&str, &str) {
    fn pair(&self) -> (&str, &str) {
        *self
    }
}

impl<'a> Borrow<dyn ObjectKey + 'a> for (String, String) {
    fn borrow(&self) -> &(dyn ObjectKey + 'a) {
        self
    }
}

impl PartialEq for dyn ObjectKey + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.pair() == other.pair()
    }
}

impl Eq for dyn ObjectKey + '_ {}

impl PartialOrd for dyn ObjectKey + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for dyn ObjectKey + '_ {
    fn cmp(&self, other: &Self) -> Ordering {
        self.pair().cmp(&other.pair())
    }
}

/// The borrowed key of `namespace/name` in a [`Collection`].
pub(crate) fn object_key<'a>(pair: &'a (&'a str, &'a str)) -> &'a (dyn ObjectKey + 'a) {
    pair
}

/// A field value as a field selector compares it.
pub(crate) fn field_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Parses a resourceVersion string.
pub(crate) fn parse_rv(s: &str) -> Option<u64> {
    s.parse().ok()
}

/// `strconv.ParseUint(s, 10, 64)` as etcd3's `APIObjectVersioner` calls it, with Go's error
/// text (`strconv.ParseUint: parsing "abc": invalid syntax`, or `value out of range`).
pub(crate) fn parse_rv_go(s: &str) -> Result<u64, String> {
    if let Some(rv) = parse_rv(s).filter(|_| !s.starts_with('+')) {
        return Ok(rv);
    }
    let why =
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) { "value out of range" } else { "invalid syntax" };
    Err(format!("strconv.ParseUint: parsing {}: {why}", serde_json::to_string(s).unwrap_or_default()))
}

/// The error of a read whose resourceVersion is not a number: etcd3's
/// `ParseResourceVersion` wraps the parse error as a `storage.InvalidError` on
/// `resourceVersion`, which no handler translates, so it is a 500 without a reason
/// (apiserver v0.37.2 pkg/storage/etcd3/store.go, `APIObjectVersioner.ParseResourceVersion`).
pub(crate) fn read_rv(s: &str) -> crate::error::ApiResult<u64> {
    parse_rv_go(s).map_err(|e| {
        crate::error::ApiError::internal_plain(format!(
            "resourceVersion: Invalid value: {}: {e}",
            serde_json::to_string(s).unwrap_or_default()
        ))
    })
}

/// The resourceVersion a value carries in `metadata.resourceVersion` (0 when none).
pub(crate) fn value_rv(value: &Value) -> u64 {
    value["metadata"]["resourceVersion"].as_str().and_then(parse_rv).unwrap_or(0)
}

/// What a write would store, without storing it (dry runs).
pub(crate) fn preview(rt: &dyn StoredResource, value: &Value) -> StoredObject {
    Encoded::exact(rt, value).finish(value_rv(value))
}

/// An object serialized ahead of being stored, with what lists and watches filter on. When it
/// is encoded for a commit, `metadata.resourceVersion` holds a placeholder whose place in the
/// JSON is known, and [`Encoded::finish`] writes the version there: the JSON is the same as
/// serializing the value after setting `metadata.resourceVersion`, but the serialization can
/// happen before the store's lock is taken.
#[derive(Debug, Clone)]
pub(crate) struct Encoded {
    json: Vec<u8>,
    /// Where the placeholder (quotes included) is in `json`.
    rv_slot: Option<Range<usize>>,
    /// The placeholder string (to fix selectable fields that read it).
    placeholder: Option<String>,
    namespace: String,
    name: String,
    uid: String,
    api_version: String,
    schema_epoch: u64,
    labels: BTreeMap<String, String>,
    fields: Vec<(String, String)>,
    deleting: bool,
    finalizers: Vec<String>,
    owners: Box<[OwnerRef]>,
}

/// Position of the first `byte` in `hay`, eight bytes at a time.
fn find_byte(hay: &[u8], byte: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let pattern = u64::from_ne_bytes([byte; 8]);
    let mut words = hay.chunks_exact(8);
    for (i, word) in words.by_ref().enumerate() {
        let x = u64::from_le_bytes(word.try_into().unwrap_or_default()) ^ pattern;
        let found = x.wrapping_sub(LO) & !x & HI;
        if found != 0 {
            return Some(i * 8 + (found.trailing_zeros() / 8) as usize);
        }
    }
    let tail = hay.len() - words.remainder().len();
    words.remainder().iter().position(|&b| b == byte).map(|p| tail + p)
}

/// Where `needle` occurs in `hay`, if it occurs exactly once. The needle's second byte should
/// be rare in `hay` (it is searched for first).
fn find_once(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let &anchor = needle.get(1)?;
    let mut found = None;
    let mut from = 1;
    while let Some(p) = hay.get(from..).and_then(|h| find_byte(h, anchor)) {
        let at = from + p - 1;
        if hay[at..].starts_with(needle) {
            if found.is_some() {
                return None;
            }
            found = Some(at);
        }
        from = at + 2;
    }
    found
}

/// The first placeholder [`Encoded::for_commit`] tries, and how serde_json writes it.
const PLACEHOLDER: &str = "\u{1}kproof-rv-0\u{1}";
const PLACEHOLDER_JSON: &[u8] = b"\"\\u0001kproof-rv-0\\u0001\"";

/// Decimal digits of `n` into `buf`; returns the used tail.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

impl Encoded {
    /// `value` for [`State::commit_encoded`]: when its metadata is an object, its
    /// `metadata.resourceVersion` is set to what the commit assigns.
    pub fn for_commit(rt: &dyn StoredResource, mut value: Value) -> Self {
        if !value.get("metadata").is_some_and(Value::is_object) {
            return Self::exact(rt, &value);
        }
        // A control character makes the serialized placeholder start with a backslash, which
        // JSON rarely has. Should the object contain the placeholder already, try another.
        for attempt in 0u32.. {
            let (placeholder, needle) = match attempt {
                0 => (PLACEHOLDER.to_string(), Cow::Borrowed(PLACEHOLDER_JSON)),
                n => {
                    let p = format!("\u{1}kproof-rv-{n}\u{1}");
                    let json = serde_json::to_vec(&p).unwrap_or_default();
                    (p, Cow::Owned(json))
                }
            };
            if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("resourceVersion".into(), Value::String(placeholder.clone()));
            }
            let mut enc = Self::exact(rt, &value);
            if let Some(at) = find_once(&enc.json, &needle) {
                enc.rv_slot = Some(at..at + needle.len());
                enc.placeholder = Some(placeholder);
                return enc;
            }
        }
        unreachable!("some placeholder does not occur in the object")
    }

    /// The object as a create's admission sees it: decoded back, without the resourceVersion
    /// the commit assigns.
    pub fn value_without_resource_version(&self) -> Value {
        let mut v: Value = serde_json::from_slice(&self.json).unwrap_or(Value::Null);
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
        }
        v
    }

    /// `value` stored as it is.
    pub fn exact(rt: &dyn StoredResource, value: &Value) -> Self {
        let meta = &value["metadata"];
        let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let labels = meta["labels"]
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), field_string(v))).collect())
            .unwrap_or_default();
        let fields = rt.selectable_values(value);
        let finalizers = meta["finalizers"]
            .as_array()
            .map(|a| a.iter().filter_map(|f| f.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        Encoded {
            json: serde_json::to_vec(value).unwrap_or_default(),
            rv_slot: None,
            placeholder: None,
            namespace: s(&meta["namespace"]),
            name: s(&meta["name"]),
            uid: s(&meta["uid"]),
            api_version: s(&value["apiVersion"]),
            schema_epoch: rt.schema_epoch(),
            labels,
            fields,
            deleting: meta.get("deletionTimestamp").is_some_and(|v| !v.is_null()),
            finalizers,
            owners: owner_refs(value),
        }
    }

    /// The stored object at resourceVersion `rv`. Its bytes are allocated to their exact size
    /// (`Bytes::from(Vec)` would keep the serializer's spare capacity for the object's life).
    pub fn finish(self, rv: u64) -> StoredObject {
        let Encoded { json, rv_slot, placeholder, mut fields, .. } = self;
        let bytes = match rv_slot {
            Some(slot) => {
                let mut buf = [0u8; 20];
                let digits = decimal(rv, &mut buf);
                let mut out = Vec::with_capacity(json.len() - slot.len() + digits.len() + 2);
                out.extend_from_slice(&json[..slot.start]);
                out.push(b'"');
                out.extend_from_slice(digits);
                out.push(b'"');
                out.extend_from_slice(&json[slot.end..]);
                Bytes::from(out)
            }
            None => Bytes::copy_from_slice(&json),
        };
        if let Some(p) = placeholder {
            for (_, v) in fields.iter_mut().filter(|(_, v)| *v == p) {
                *v = rv.to_string();
            }
        }
        StoredObject {
            bytes,
            namespace: self.namespace,
            name: self.name,
            uid: self.uid,
            resource_version: rv,
            api_version: self.api_version,
            schema_epoch: self.schema_epoch,
            labels: self.labels,
            fields,
            deleting: self.deleting,
            finalizers: self.finalizers,
            owners: self.owners,
            parsed: parking_lot::Mutex::new(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A resource whose selectable fields are read at dotted paths.
    struct TestResource {
        key: StorageKey,
        name: Arc<str>,
        fields: Vec<&'static str>,
    }

    impl TestResource {
        fn new(fields: &[&'static str]) -> Self {
            TestResource { key: StorageKey::new("", "things"), name: Arc::from("Thing"), fields: fields.to_vec() }
        }
    }

    impl StoredResource for TestResource {
        fn storage_key(&self) -> &StorageKey {
            &self.key
        }
        fn shared_kind(&self) -> &Arc<str> {
            &self.name
        }
        fn qualified_resource(&self) -> &Arc<str> {
            &self.name
        }
        fn schema_epoch(&self) -> u64 {
            0
        }
        fn selectable_values(&self, object: &Value) -> Vec<(String, String)> {
            let read = |f: &str| apimachinery::unstructured::nested_field_at(object, f).map(field_string);
            self.fields.iter().map(|f| (f.to_string(), read(f).unwrap_or_default())).collect()
        }
    }

    /// What the store kept before objects were encoded ahead: the value stamped with its
    /// version, then serialized.
    fn stamped(rt: &TestResource, mut v: Value, rv: u64) -> StoredObject {
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let obj = Encoded::exact(rt, &v).finish(rv);
        assert_eq!(obj.bytes, serde_json::to_vec(&v).unwrap());
        obj
    }

    /// An updated object keeps its parsed value until a newer version replaces it or it goes;
    /// what it keeps is what parsing its bytes gives.
    #[test]
    fn updated_objects_keep_their_parsed_value_until_replaced() {
        use super::super::{ChangeKind, Store, Verb, WriteContext};
        let rt = TestResource::new(&[]);
        let ctx = Arc::new(WriteContext {
            verb: Verb::Update,
            subresource: None,
            user_agent: "t".into(),
            field_manager: None,
            user: None,
        });
        let now = jiff::Timestamp::UNIX_EPOCH;
        let mut store = Store::new(10, 0);
        let obj = |n: i64| json!({"metadata": {"name": "a", "namespace": "x"}, "data": {"n": n, "f": 1.5}});
        let created = store.commit(&rt, ChangeKind::Added, obj(0), &ctx, now);
        assert!(created.parsed.lock().is_none(), "a created object is not kept parsed");
        let first = store.commit(&rt, ChangeKind::Modified, obj(1), &ctx, now);
        let kept = first.parsed.lock().clone().expect("an updated object is kept parsed");
        assert_eq!(*kept, serde_json::from_slice::<Value>(&first.bytes).unwrap());
        assert_eq!(first.value(), *kept);
        let second = store.commit(&rt, ChangeKind::Modified, obj(2), &ctx, now);
        assert!(first.parsed.lock().is_none(), "a replaced version gives up its parsed value");
        assert_eq!(second.shared_value()["data"]["n"], 2);
        assert_eq!(store.parsed_kept, 1);
        store.commit(&rt, ChangeKind::Deleted, obj(2), &ctx, now);
        assert!(second.parsed.lock().is_none());
        assert_eq!(store.parsed_kept, 0);
        store.commit(&rt, ChangeKind::Added, obj(0), &ctx, now);
        store.commit(&rt, ChangeKind::Modified, obj(3), &ctx, now);
        store.remove_collection(rt.storage_key());
        assert_eq!(store.parsed_kept, 0);
    }

    /// Encoding before the version is known gives the bytes and fields that serializing with
    /// the version would, wherever the placeholder lands and whatever the object holds.
    #[test]
    fn encoding_ahead_of_the_commit_matches_encoding_at_it() {
        let cm = TestResource::new(&[]);
        let pods = TestResource::new(&["spec.nodeName", "status.phase"]);
        let odd = TestResource::new(&["metadata.resourceVersion", "data.a"]);
        let cases = [
            (&cm, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "x"}})),
            (
                &cm,
                json!({"metadata": {"resourceVersion": "7", "name": "b", "labels": {"k": "v"}}, "data": {"x": "\u{1}"}}),
            ),
            // The object already holds the first placeholders, even under the same key.
            (
                &cm,
                json!({"metadata": {"name": "c"}, "data": {"resourceVersion": "\u{1}kproof-rv-0\u{1}", "b": "\u{1}kproof-rv-1\u{1}"}}),
            ),
            (&odd, json!({"metadata": {"name": "d"}, "data": {"a": "z"}})),
            (&pods, json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}})),
            // No metadata object: nothing to stamp.
            (&cm, json!({"metadata": "nope", "data": {}})),
            (&cm, json!({"data": {}})),
        ];
        for (rt, v) in cases {
            for rv in [1, 9, 10, 12345, u64::MAX] {
                let want = stamped(rt, v.clone(), rv);
                let got = Encoded::for_commit(rt, v.clone()).finish(rv);
                assert_eq!(got.bytes, want.bytes, "{v}");
                assert_eq!(got.bytes.len(), want.bytes.len());
                assert_eq!(got.fields, want.fields, "{v}");
                assert_eq!(
                    (&got.namespace, &got.name, &got.uid, &got.api_version, &got.labels, got.resource_version),
                    (&want.namespace, &want.name, &want.uid, &want.api_version, &want.labels, want.resource_version)
                );
            }
        }
    }

    #[test]
    fn placeholder_json_is_what_serde_json_writes() {
        assert_eq!(serde_json::to_vec(PLACEHOLDER).unwrap(), PLACEHOLDER_JSON);
    }

    #[test]
    fn find_once_finds_single_occurrences_only() {
        let n = PLACEHOLDER_JSON;
        for pad in 0..20 {
            let mut hay = vec![b'\\'; pad];
            hay.extend_from_slice(n);
            hay.extend_from_slice(b"\\x\"");
            assert_eq!(find_once(&hay, n), Some(pad), "pad {pad}");
            hay.extend_from_slice(n);
            assert_eq!(find_once(&hay, n), None, "twice, pad {pad}");
        }
        assert_eq!(find_once(b"", n), None);
        assert_eq!(find_once(&n[..n.len() - 1], n), None);
        assert_eq!(find_once(n, n), Some(0));
    }

    #[test]
    fn stored_bytes_have_no_spare_capacity() {
        let cm = TestResource::new(&[]);
        let v = json!({"metadata": {"name": "a"}, "data": {"payload": "x".repeat(1000)}});
        // `Bytes` made from a Vec whose length equals its capacity can be turned back into
        // one without copying: the allocation is exactly the JSON.
        for obj in [Encoded::for_commit(&cm, v.clone()).finish(3), Encoded::exact(&cm, &v).finish(3)] {
            let vec: Vec<u8> = obj.bytes.into();
            assert_eq!(vec.capacity(), vec.len());
        }
    }
}
