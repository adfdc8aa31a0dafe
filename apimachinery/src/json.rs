//! JSON helpers on the hot paths of both sides: a deep equality of values that follows the
//! key order both values usually share, and the cut of `metadata.managedFields` out of JSON
//! text that in-process controllers read (what controller-runtime's
//! `cache.TransformStripManagedFields` does to the objects an informer holds).

use serde_json::{Map, Value};

/// Whether `a` and `b` are equal as the Go objects they decode to are under
/// `equality.Semantic.DeepEqual` (apimachinery v0.37.2 third_party/forked/golang/reflect
/// deep_equal.go: "empty and nil slices/maps are equal"): an absent member, `null`, `[]` and
/// `{}` are all an unset list or map. Scalars compare exactly.
pub fn semantically_equal(a: &Value, b: &Value) -> bool {
    let unset = |v: Option<&Value>| match v {
        None | Some(Value::Null) => true,
        Some(Value::Array(x)) => x.is_empty(),
        Some(Value::Object(x)) => x.is_empty(),
        _ => false,
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => x.keys().chain(y.keys()).all(|k| match (x.get(k), y.get(k)) {
            (p, q) if unset(p) && unset(q) => true,
            (Some(p), Some(q)) => semantically_equal(p, q),
            _ => false,
        }),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| semantically_equal(p, q))
        }
        _ if unset(Some(a)) && unset(Some(b)) => true,
        _ => a == b,
    }
}

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
    let first = memchr::memmem::find(text, NEEDLE)?;
    let mut scan = Scanner { text, at: 0, next_needle: first, cuts: Vec::new() };
    let scanned = (|| loop {
        scan.skip_space();
        scan.check_needle()?;
        if scan.at >= text.len() {
            return Ok(());
        }
        scan.value(Context::Document)?;
    })();
    if scanned == Err(Stop::Malformed) || scan.cuts.is_empty() {
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

/// The key that is cut: where none is left in the text, the scan ends.
const NEEDLE: &[u8] = b"\"managedFields\"";

/// What an object is to the cut: only the metadata of an object at the top of a document (or
/// of its list items, or of its watch event) loses `managedFields`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    /// A whole document: an object, a list or a watch event.
    Document,
    /// An object of the API: its `metadata` is cut.
    Object,
    /// The `metadata` of an object: its `managedFields` member goes.
    Metadata,
}

/// Why a scan ends before the end of the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The text is not JSON this scanner follows: nothing is cut.
    Malformed,
    /// No `"managedFields"` is left in the rest of the text: the cuts so far are all.
    Finished,
}

type Scan = Result<(), Stop>;

struct Scanner<'a> {
    text: &'a [u8],
    at: usize,
    /// Where the next `"managedFields"` at or after `at` starts, as last looked up.
    next_needle: usize,
    /// Byte ranges to leave out, in order.
    cuts: Vec<(usize, usize)>,
}

impl Scanner<'_> {
    fn peek(&self) -> Result<u8, Stop> {
        self.text.get(self.at).copied().ok_or(Stop::Malformed)
    }

    /// Ends the scan when no `"managedFields"` is left ahead: what follows is copied as it is,
    /// unread (most answers hold one object whose metadata comes first).
    fn check_needle(&mut self) -> Scan {
        if self.at > self.next_needle {
            match memchr::memmem::find(&self.text[self.at..], NEEDLE) {
                Some(i) => self.next_needle = self.at + i,
                None => return Err(Stop::Finished),
            }
        }
        Ok(())
    }

    fn skip_space(&mut self) {
        while matches!(self.text.get(self.at), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.at += 1;
        }
    }

    /// A value in `ctx`: objects the cut looks into are read member by member, anything else
    /// is skipped.
    fn value(&mut self, ctx: Context) -> Scan {
        if self.peek()? == b'{' { self.object(ctx) } else { self.skip_value() }
    }

    /// Moves past one value without looking into it: strings by their quotes, arrays and objects
    /// by counting its kind of brackets outside strings (no recursion, so no depth limit is needed).
    fn skip_value(&mut self) -> Scan {
        let text = self.text;
        let mut at = self.at;
        match self.peek()? {
            b'"' => at = skip_string(text, at).ok_or(Stop::Malformed)?,
            open @ (b'{' | b'[') => {
                // Only this kind of bracket counts (the other kind nests inside balanced).
                let close = if open == b'{' { b'}' } else { b']' };
                let mut depth = 0usize;
                loop {
                    let found = at + memchr::memchr3(b'"', open, close, &text[at..]).ok_or(Stop::Malformed)?;
                    match text[found] {
                        b'"' => {
                            at = skip_string(text, found).ok_or(Stop::Malformed)?;
                            continue;
                        }
                        c if c == open => depth += 1,
                        _ => {
                            depth = depth.checked_sub(1).ok_or(Stop::Malformed)?;
                            if depth == 0 {
                                at = found + 1;
                                break;
                            }
                        }
                    }
                    at = found + 1;
                }
            }
            _ => {
                let start = at;
                while text.get(at).is_some_and(|c| !matches!(c, b',' | b']' | b'}' | b' ' | b'\n' | b'\r' | b'\t')) {
                    at += 1;
                }
                if at == start {
                    return Err(Stop::Malformed);
                }
            }
        }
        self.at = at;
        Ok(())
    }

    /// An array whose items are objects of the API (a list's `items`).
    fn objects(&mut self) -> Scan {
        if self.peek()? != b'[' {
            return self.skip_value();
        }
        self.at += 1;
        self.skip_space();
        if self.peek()? == b']' {
            self.at += 1;
            return Ok(());
        }
        loop {
            self.skip_space();
            self.check_needle()?;
            self.value(Context::Object)?;
            self.skip_space();
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(Stop::Malformed),
            }
        }
    }

    fn object(&mut self, ctx: Context) -> Scan {
        self.at += 1;
        self.skip_space();
        if self.peek()? == b'}' {
            self.at += 1;
            return Ok(());
        }
        // Where the comma before the current member is, if it has one that is still in the text.
        let mut comma_before: Option<usize> = None;
        loop {
            self.skip_space();
            self.check_needle()?;
            let member_start = self.at;
            if self.peek()? != b'"' {
                return Err(Stop::Malformed);
            }
            let key_end = skip_string(self.text, self.at).ok_or(Stop::Malformed)?;
            let key = &self.text[self.at + 1..key_end - 1];
            self.at = key_end;
            self.skip_space();
            if self.peek()? != b':' {
                return Err(Stop::Malformed);
            }
            self.at += 1;
            self.skip_space();
            match (ctx, key) {
                (Context::Document | Context::Object, b"metadata") => self.value(Context::Metadata)?,
                (Context::Document, b"object") => self.value(Context::Object)?,
                (Context::Document, b"items") => self.objects()?,
                _ => self.skip_value()?,
            }
            let cut = ctx == Context::Metadata && key == b"managedFields";
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
                    return Ok(());
                }
                _ => return Err(Stop::Malformed),
            }
        }
    }
}

/// The index just past the string whose opening quote is at `at`.
fn skip_string(text: &[u8], at: usize) -> Option<usize> {
    let mut from = at + 1;
    loop {
        let found = from + memchr::memchr2(b'"', b'\\', text.get(from..)?)?;
        if text[found] == b'"' {
            return Some(found + 1);
        }
        from = found + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_absent_lists_and_maps_are_semantically_equal() {
        use serde_json::json;
        let with_empty = json!({"spec": {"ports": [], "labels": {}, "x": null, "name": "a"}});
        assert!(semantically_equal(&with_empty, &json!({"spec": {"name": "a"}})));
        assert!(!semantically_equal(&with_empty, &json!({"spec": {"name": "b"}})));
        assert!(!semantically_equal(&json!({"ports": [1]}), &json!({})));
        assert!(!semantically_equal(&json!({"name": ""}), &json!({})), "a string is not a container");
    }
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
