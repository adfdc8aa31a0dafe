//! The few protobuf request bodies kubectl sends that the server reads: kubectl 1.32+ posts
//! `SelfSubjectAccessReview` and `SelfSubjectRulesReview` (`kubectl auth can-i`) as
//! `application/vnd.kubernetes.protobuf`. Bodies are kube's envelope — the magic `k8s\0`, then
//! a `runtime.Unknown` message whose `raw` field holds the object — and are turned into the
//! JSON the handlers already understand. Other protobuf bodies stay 415.

use crate::error::{ApiError, ApiResult};
use serde_json::{Map, Value, json};

/// The Content-Type of kube's protobuf encoding.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

const MAGIC: &[u8] = b"k8s\0";

/// One field of a protobuf message: its number and its value (varint or bytes).
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn bad(what: &str) -> ApiError {
    ApiError::bad_request(format!("the protobuf body could not be decoded: {what}"))
}

fn varint(buf: &[u8], pos: &mut usize) -> ApiResult<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos).ok_or_else(|| bad("truncated varint"))?;
        *pos += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(bad("varint longer than 64 bits"))
}

/// The fields of one message, in order.
fn fields(buf: &[u8]) -> ApiResult<Vec<(u64, Field<'_>)>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let key = varint(buf, &mut pos)?;
        let (number, wire) = (key >> 3, key & 7);
        let field = match wire {
            0 => Field::Varint(varint(buf, &mut pos)?),
            2 => {
                let len = usize::try_from(varint(buf, &mut pos)?).map_err(|_| bad("length too large"))?;
                let end = pos.checked_add(len).filter(|e| *e <= buf.len()).ok_or_else(|| bad("truncated field"))?;
                let bytes = &buf[pos..end];
                pos = end;
                Field::Bytes(bytes)
            }
            1 => {
                pos = pos.checked_add(8).filter(|e| *e <= buf.len()).ok_or_else(|| bad("truncated fixed64"))?;
                continue;
            }
            5 => {
                pos = pos.checked_add(4).filter(|e| *e <= buf.len()).ok_or_else(|| bad("truncated fixed32"))?;
                continue;
            }
            other => return Err(bad(&format!("unsupported wire type {other}"))),
        };
        out.push((number, field));
    }
    Ok(out)
}

fn text(b: &[u8]) -> ApiResult<String> {
    String::from_utf8(b.to_vec()).map_err(|_| bad("a string field is not UTF-8"))
}

/// A message whose fields are all strings (or, with `flags`, booleans), as JSON.
fn strings(buf: &[u8], names: &[(u64, &str)]) -> ApiResult<Value> {
    let mut out = Map::new();
    for (n, f) in fields(buf)? {
        let Some((_, name)) = names.iter().find(|(k, _)| *k == n) else { continue };
        match f {
            Field::Bytes(b) => out.insert((*name).to_string(), json!(text(b)?)),
            Field::Varint(v) => out.insert((*name).to_string(), json!(v != 0)),
        };
    }
    Ok(Value::Object(out))
}

/// Decodes a protobuf request body into the JSON object it encodes, for the kinds listed in
/// the module doc; anything else is 415, as before.
pub fn to_json(body: &[u8], content_type: &str, accepted: &[&str]) -> ApiResult<Value> {
    let unsupported = || ApiError::unsupported_media_type(content_type, accepted);
    let envelope = body.strip_prefix(MAGIC).ok_or_else(|| bad("missing the k8s\\0 prefix"))?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    for (n, f) in fields(envelope)? {
        match (n, f) {
            (1, Field::Bytes(type_meta)) => {
                for (m, g) in fields(type_meta)? {
                    match (m, g) {
                        (1, Field::Bytes(b)) => api_version = text(b)?,
                        (2, Field::Bytes(b)) => kind = text(b)?,
                        _ => {}
                    }
                }
            }
            (2, Field::Bytes(b)) => raw = b,
            _ => {}
        }
    }
    let mut spec = Map::new();
    match (api_version.as_str(), kind.as_str()) {
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => {
            for (n, f) in fields(raw)? {
                let (2, Field::Bytes(s)) = (n, f) else { continue };
                for (m, g) in fields(s)? {
                    match (m, g) {
                        (1, Field::Bytes(b)) => {
                            let names = [
                                (1, "namespace"),
                                (2, "verb"),
                                (3, "group"),
                                (4, "version"),
                                (5, "resource"),
                                (6, "subresource"),
                                (7, "name"),
                            ];
                            spec.insert("resourceAttributes".into(), strings(b, &names)?);
                        }
                        (2, Field::Bytes(b)) => {
                            spec.insert("nonResourceAttributes".into(), strings(b, &[(1, "path"), (2, "verb")])?);
                        }
                        _ => {}
                    }
                }
            }
        }
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => {
            for (n, f) in fields(raw)? {
                if let (2, Field::Bytes(s)) = (n, f) {
                    spec = strings(s, &[(1, "namespace")])?.as_object().cloned().unwrap_or_default();
                }
            }
        }
        _ => return Err(unsupported()),
    }
    Ok(json!({"apiVersion": api_version, "kind": kind, "metadata": {}, "spec": spec}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn len_field(n: u64, b: &[u8]) -> Vec<u8> {
        let mut out = vec![((n << 3) | 2) as u8, b.len() as u8];
        out.extend_from_slice(b);
        out
    }

    fn envelope(kind: &str, raw: &[u8]) -> Vec<u8> {
        let type_meta = [len_field(1, b"authorization.k8s.io/v1"), len_field(2, kind.as_bytes())].concat();
        [MAGIC.to_vec(), len_field(1, &type_meta), len_field(2, raw)].concat()
    }

    #[test]
    fn decodes_an_access_review_as_kubectl_sends_it() {
        let attrs = [len_field(1, b"default"), len_field(2, b"create"), len_field(5, b"pods")].concat();
        let raw = [len_field(1, b""), len_field(2, &len_field(1, &attrs))].concat();
        let v = to_json(&envelope("SelfSubjectAccessReview", &raw), MEDIA_TYPE, &[]).unwrap();
        assert_eq!(v["kind"], "SelfSubjectAccessReview");
        assert_eq!(
            v["spec"]["resourceAttributes"],
            json!({"namespace": "default", "verb": "create", "resource": "pods"})
        );
    }

    #[test]
    fn decodes_a_rules_review_and_refuses_other_kinds_and_garbage() {
        let raw = len_field(2, &len_field(1, b"team-a"));
        let v = to_json(&envelope("SelfSubjectRulesReview", &raw), MEDIA_TYPE, &[]).unwrap();
        assert_eq!(v["spec"], json!({"namespace": "team-a"}));
        let e = to_json(&envelope("ConfigMap", b""), MEDIA_TYPE, &["application/json"]).unwrap_err();
        assert_eq!(e.code, 415);
        assert_eq!(to_json(b"nope", MEDIA_TYPE, &[]).unwrap_err().code, 400);
        assert_eq!(to_json(b"k8s\0\x0a\xff", MEDIA_TYPE, &[]).unwrap_err().code, 400);
    }
}
