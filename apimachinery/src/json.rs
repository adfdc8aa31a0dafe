//! JSON helpers on the hot paths of both sides: a deep equality of values that follows the
//! key order both values usually share, and the cut of `metadata.managedFields` out of JSON
//! text that in-process controllers read (what controller-runtime's
//! `cache.TransformStripManagedFields` does to the objects an informer holds).

use serde_json::{Map, Value};

/// Whether `a` and `b` are equal as JSON values, exactly as `a == b` decides it (object members
/// in any order, numbers by their representation), but faster on objects whose members come in
/// the same order: they are compared pairwise, and a member is only looked up by name once the
/// orders part. serde_json's map equality hashes every key of one side to find it in the other;
/// objects decoded from the same writer almost always list their members in the same order.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => same_members(x, y),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q)),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Null, Value::Null) => true,
        _ => false,
    }
}

fn same_members(x: &Map<String, Value>, y: &Map<String, Value>) -> bool {
    if x.len() != y.len() {
        return false;
    }
    let mut theirs = y.iter();
    for (i, (k, v)) in x.iter().enumerate() {
        match theirs.next() {
            Some((k2, v2)) if k2 == k => {
                if !same(v, v2) {
                    return false;
                }
            }
            // The orders part here: the rest is matched by name (the lengths are equal, so
            // every name found means the member sets are equal too).
            _ => return x.iter().skip(i).all(|(k, v)| y.get(k).is_some_and(|v2| same(v, v2))),
        }
    }
    true
}

/// JSON text with `metadata.managedFields` cut out of every Kubernetes object it holds: the
/// document itself, each item of its `items` (a list) and its `object` (a watch event). The text
/// may hold several documents one after another (watch events, one per line). `None` when
/// there is nothing to cut, or the text is not JSON this scanner can follow: the caller keeps
/// the text as it is. Nothing else changes, byte for byte.
pub fn strip_managed_fields(text: &[u8]) -> Option<Vec<u8>> {
    const NEEDLE: &[u8] = b"\"managedFields\"";
    if !text.windows(NEEDLE.len()).any(|w| w == NEEDLE) {
        return None;
    }
    let mut scan = Scanner { text, at: 0, depth: 0, cuts: Vec::new() };
    loop {
        scan.skip_space();
        if scan.at >= text.len() {
            break;
        }
        scan.value(Context::Document)?;
    }
    if scan.cuts.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(text.len());
    let mut from = 0;
    for (start, end) in scan.cuts {
        out.extend_from_slice(&text[from..start]);
        from = end;
    }
    out.extend_from_slice(&text[from..]);
    Some(out)
}

/// What a value is to the cut: only the metadata of an object at the top of a document (or of
/// its list items, or of its watch event) loses `managedFields`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    /// A whole document: an object, a list or a watch event.
    Document,
    /// An object of the API: its `metadata` is cut.
    Object,
    /// The `metadata` of an object: its `managedFields` member goes.
    Metadata,
    /// The `items` of a list: each is an object of the API.
    Items,
    /// Anything else: copied as it is.
    Other,
}

/// Deeper text is left alone (serde_json itself refuses more than 128 levels).
const MAX_DEPTH: usize = 256;

struct Scanner<'a> {
    text: &'a [u8],
    at: usize,
    /// How many arrays and objects the scanner is inside (bounded: it recurses).
    depth: usize,
    /// Byte ranges to leave out, in order.
    cuts: Vec<(usize, usize)>,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.at += 1;
        }
    }

    fn value(&mut self, ctx: Context) -> Option<()> {
        match self.peek()? {
            b'{' | b'[' if self.depth >= MAX_DEPTH => None,
            b'{' => {
                self.depth += 1;
                let done = self.object(ctx);
                self.depth -= 1;
                done
            }
            b'[' => {
                self.depth += 1;
                let done = self.array(if ctx == Context::Items { Context::Object } else { Context::Other });
                self.depth -= 1;
                done
            }
            b'"' => self.string().map(|_| ()),
            _ => {
                let start = self.at;
                while let Some(c) = self.peek() {
                    if matches!(c, b',' | b']' | b'}' | b' ' | b'\n' | b'\r' | b'\t') {
                        break;
                    }
                    self.at += 1;
                }
                (self.at > start).then_some(())
            }
        }
    }

    /// A string; the raw bytes between its quotes.
    fn string(&mut self) -> Option<&[u8]> {
        let start = self.at + 1;
        self.at = start;
        loop {
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    return Some(&self.text[start..self.at - 1]);
                }
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
    }

    /// An array; its items are copied as they are (or, for a list's `items`, are objects).
    fn array(&mut self, item: Context) -> Option<()> {
        self.at += 1;
        self.skip_space();
        if self.peek()? == b']' {
            self.at += 1;
            return Some(());
        }
        loop {
            self.skip_space();
            self.value(item)?;
            self.skip_space();
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn object(&mut self, ctx: Context) -> Option<()> {
        self.at += 1;
        self.skip_space();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        // Where the comma before the current member is, if it has one that is still in the text.
        let mut comma_before: Option<usize> = None;
        loop {
            self.skip_space();
            let member_start = self.at;
            if self.peek()? != b'"' {
                return None;
            }
            let key = self.string()?;
            let child = match (ctx, key) {
                (Context::Document | Context::Object, b"metadata") => Context::Metadata,
                (Context::Document, b"object") => Context::Object,
                (Context::Document, b"items") => Context::Items,
                _ => Context::Other,
            };
            let cut = ctx == Context::Metadata && key == b"managedFields";
            self.skip_space();
            if self.peek()? != b':' {
                return None;
            }
            self.at += 1;
            self.skip_space();
            self.value(child)?;
            let member_end = self.at;
            self.skip_space();
            let next = self.peek()?;
            if cut {
                match (comma_before, next) {
                    (Some(comma), _) => self.cuts.push((comma, member_end)),
                    // The first member: its following comma goes with it.
                    (None, b',') => self.cuts.push((member_start, self.at + 1)),
                    (None, _) => self.cuts.push((member_start, member_end)),
                }
            }
            match next {
                b',' => {
                    comma_before = if cut && comma_before.is_none() { None } else { Some(self.at) };
                    self.at += 1;
                }
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    #[rstest]
    #[case(json!({"a": 1, "b": [1, {"c": "d"}]}), json!({"a": 1, "b": [1, {"c": "d"}]}))]
    #[case(json!({"a": 1, "b": 2}), json!({"b": 2, "a": 1}))]
    #[case(json!({"a": 1, "b": 2, "c": 3}), json!({"a": 1, "c": 3, "b": 2}))]
    #[case(json!({"a": 1, "b": 2}), json!({"a": 1, "c": 2}))]
    #[case(json!({"a": 1.0}), json!({"a": 1}))]
    #[case(json!([1, 2]), json!([2, 1]))]
    #[case(json!({"a": null}), json!({}))]
    #[case(json!("x"), json!("x"))]
    fn same_agrees_with_value_equality(#[case] a: Value, #[case] b: Value) {
        assert_eq!(same(&a, &b), a == b, "{a} vs {b}");
        assert_eq!(same(&b, &a), b == a, "{b} vs {a}");
    }

    fn cut(v: &Value) -> Value {
        let text = serde_json::to_vec(v).unwrap();
        match strip_managed_fields(&text) {
            Some(out) => serde_json::from_slice(&out).unwrap(),
            None => v.clone(),
        }
    }

    #[test]
    fn cuts_the_metadata_of_objects_lists_and_watch_events_only() {
        let mf = json!([{"manager": "m", "fieldsV1": {"f:spec": {"f:managedFields": {}}}}]);
        let obj = json!({"apiVersion": "v1", "metadata": {"managedFields": mf, "name": "a"},
            "spec": {"template": {"metadata": {"managedFields": "kept"}}, "managedFields": "kept"}});
        let want = json!({"apiVersion": "v1", "metadata": {"name": "a"},
            "spec": {"template": {"metadata": {"managedFields": "kept"}}, "managedFields": "kept"}});
        assert_eq!(cut(&obj), want);
        let list = json!({"kind": "List", "metadata": {"resourceVersion": "1"}, "items": [obj, {"metadata": {"name": "b", "managedFields": []}}]});
        assert_eq!(
            cut(&list),
            json!({"kind": "List", "metadata": {"resourceVersion": "1"}, "items": [want, {"metadata": {"name": "b"}}]})
        );
        let event = json!({"type": "MODIFIED", "object": {"metadata": {"name": "a", "managedFields": mf, "uid": "u"}}});
        assert_eq!(cut(&event), json!({"type": "MODIFIED", "object": {"metadata": {"name": "a", "uid": "u"}}}));
    }

    #[test]
    fn cuts_every_document_of_a_stream_and_keeps_the_rest_byte_for_byte() {
        let text = b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"managedFields\":[{\"a\":\"}\\\"]\"}],\"name\":\"x\"}}}\n{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"y\" , \"managedFields\" : [ ] }}}\n";
        let out = strip_managed_fields(text).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\"}}}\n{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"y\"  }}}\n"
        );
    }

    #[rstest]
    #[case(b"{\"metadata\":{\"name\":\"a\"}}".as_slice())]
    #[case(b"{\"metadata\":{\"managedFields\":[}".as_slice())]
    #[case(b"{\"data\":{\"k\":\"\\\"managedFields\\\"\"}}".as_slice())]
    #[case(b"not json \"managedFields\"".as_slice())]
    #[case([b"[".repeat(100_000), b"{\"managedFields\":1}".to_vec()].concat().leak() as &[u8])]
    fn leaves_text_without_anything_to_cut_alone(#[case] text: &[u8]) {
        assert_eq!(strip_managed_fields(text), None);
    }
}
