//! Objects read as JSON and decoded only as far as expectations read them. A row's checks read
//! a few fields (`status.activeServiceStatus.targetCapacity`) of objects of many kilobytes,
//! hundreds of times over a timeline: each level on a path is split into its members without
//! decoding them (serde skips a value far faster than it builds one), and only the value at
//! the end of the path is decoded. The whole object is decoded when asked for (a failure's
//! report).

use crate::engine::matching::Segment;
use serde_json::Value;
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::OnceLock;

/// An object (or any JSON document) read lazily; see the module docs.
#[derive(Debug, Clone)]
pub struct LazyObject {
    json: bytes::Bytes,
    root: Node,
}

/// One value inside the document: where its JSON lies, its members once split, its value once
/// decoded.
#[derive(Debug, Clone)]
struct Node {
    range: Range<usize>,
    value: OnceLock<Value>,
    children: OnceLock<Children>,
}

#[derive(Debug, Clone)]
enum Children {
    Object(BTreeMap<String, Node>),
    Array(Vec<Node>),
    /// A scalar, or JSON this cannot split (then it is only ever decoded whole).
    None,
}

impl Node {
    fn new(range: Range<usize>) -> Self {
        Node { range, value: OnceLock::new(), children: OnceLock::new() }
    }

    fn value(&self, json: &[u8]) -> &Value {
        self.value.get_or_init(|| serde_json::from_slice(&json[self.range.clone()]).unwrap_or(Value::Null))
    }

    fn children(&self, json: &[u8]) -> &Children {
        self.children.get_or_init(|| {
            let text = &json[self.range.clone()];
            let node = |raw: &RawValue| Node::new(range_in(json, raw));
            match text.iter().find(|b| !b.is_ascii_whitespace()) {
                Some(b'{') => match serde_json::from_slice::<BTreeMap<String, &RawValue>>(text) {
                    Ok(m) => Children::Object(m.into_iter().map(|(k, v)| (k, node(v))).collect()),
                    Err(_) => Children::None,
                },
                Some(b'[') => match serde_json::from_slice::<Vec<&RawValue>>(text) {
                    Ok(items) => Children::Array(items.into_iter().map(node).collect()),
                    Err(_) => Children::None,
                },
                _ => Children::None,
            }
        })
    }

    /// The value at `segments` below this node.
    fn at<'a>(&'a self, json: &[u8], segments: &[Segment]) -> Option<&'a Value> {
        let Some((first, rest)) = segments.split_first() else { return Some(self.value(json)) };
        // Decoded already (or not splittable): the rest of the path is read from the value.
        if let Some(v) = self.value.get() {
            return crate::engine::matching::value_at(v, segments);
        }
        match (first, self.children(json)) {
            (Segment::Key(k), Children::Object(m)) => m.get(k)?.at(json, rest),
            (Segment::Index(i), Children::Array(items)) => items.get(*i)?.at(json, rest),
            (Segment::Filter(k, want), Children::Array(items)) => items
                .iter()
                .find(|item| {
                    item.at(json, &[Segment::Key(k.clone())])
                        .is_some_and(|v| crate::engine::matching::scalar_string(v) == *want)
                })?
                .at(json, rest),
            (_, Children::None) => crate::engine::matching::value_at(self.value(json), segments),
            _ => None,
        }
    }
}

/// Where `raw`, borrowed from `json`, lies in it.
fn range_in(json: &[u8], raw: &RawValue) -> Range<usize> {
    let start = raw.get().as_ptr() as usize - json.as_ptr() as usize;
    start..start + raw.get().len()
}

impl LazyObject {
    /// The items of a Kubernetes list (`{"items": [...]}`, none when absent), each kept as its
    /// own JSON; `Err` when `json` is not an object.
    pub fn list_items(json: bytes::Bytes) -> Result<Vec<LazyObject>, serde_json::Error> {
        #[derive(serde::Deserialize)]
        struct RawList<'a> {
            #[serde(borrow, default)]
            items: Vec<&'a RawValue>,
        }
        let list: RawList<'_> = serde_json::from_slice(&json)?;
        Ok(list.items.iter().map(|item| LazyObject::encoded(json.slice(range_in(&json, item)))).collect())
    }

    /// A document already decoded.
    pub fn decoded(object: Value) -> Self {
        LazyObject {
            json: bytes::Bytes::new(),
            root: Node { range: 0..0, value: OnceLock::from(object), children: OnceLock::new() },
        }
    }

    /// A document as JSON, decoded as it is read.
    pub fn encoded(json: bytes::Bytes) -> Self {
        let root = Node::new(0..json.len());
        LazyObject { json, root }
    }

    /// The whole document (`null` if its JSON does not parse).
    pub fn object(&self) -> &Value {
        self.root.value(&self.json)
    }

    /// The whole document, owned.
    pub fn into_value(self) -> Value {
        let LazyObject { json, root } = self;
        root.value.into_inner().unwrap_or_else(|| serde_json::from_slice(&json).unwrap_or(Value::Null))
    }

    /// The value at a parsed path, decoding only what lies on it.
    pub(crate) fn at(&self, segments: &[Segment]) -> Option<&Value> {
        self.root.at(&self.json, segments)
    }

    /// The string at the member path `keys` (`["metadata", "name"]`).
    pub fn str_at(&self, keys: &[&str]) -> Option<&str> {
        let segments: Vec<Segment> = keys.iter().map(|k| Segment::Key(k.to_string())).collect();
        self.at(&segments)?.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_read_the_same_lazily_and_decoded() {
        let v = json!({"metadata": {"name": "a"}, "status": {"conditions": [{"type": "A", "status": "False"},
            {"type": "Ready", "status": "True"}], "n": 3, "list": [1, [2, 3]]}});
        let lazy = LazyObject::encoded(bytes::Bytes::from(serde_json::to_vec(&v).unwrap()));
        for path in [
            "status.conditions[type=Ready].status",
            "status.n",
            "status.list[1][0]",
            "metadata",
            "status.nope",
            "metadata.name.x",
            "status.conditions[2]",
            "",
            "status.conditions[type=B]",
        ] {
            let parsed = crate::engine::matching::parse_path(path).unwrap();
            assert_eq!(lazy.at(&parsed), crate::engine::matching::value_at(&v, &parsed), "{path}");
        }
        assert_eq!(lazy.object(), &v);
        assert_eq!(LazyObject::encoded(bytes::Bytes::from_static(b"not json")).str_at(&["a"]), None);
    }

    #[test]
    fn a_list_is_split_into_its_items() {
        let list = json!({"kind": "PodList", "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]});
        let items = LazyObject::list_items(bytes::Bytes::from(serde_json::to_vec(&list).unwrap())).unwrap();
        let names: Vec<_> = items.iter().map(|o| o.str_at(&["metadata", "name"])).collect();
        assert_eq!(names, [Some("a"), Some("b")]);
        assert_eq!(items[1].object(), &list["items"][1]);
        assert!(LazyObject::list_items(bytes::Bytes::from_static(br#"{"kind":"PodList"}"#)).unwrap().is_empty());
        assert!(LazyObject::list_items(bytes::Bytes::from_static(b"[1]")).is_err());
    }
}
