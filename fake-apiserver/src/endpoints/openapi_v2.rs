//! `/openapi/v2` for kubectl 1.27 and 1.28, which validate (`--validate`, on by default) and
//! `explain` only from it, and only in gnostic's protobuf form
//! (`application/com.github.proto-openapi.spec.v2.v1.0+protobuf`; JSON to anyone else).
//!
//! The document holds the `definitions` of every served group/version — the same schemas as
//! the OpenAPI v3 documents, rewritten to Swagger 2.0 (`#/definitions/` references, no
//! `nullable`, a lone `allOf` reference as a plain `$ref`) — with their
//! `x-kubernetes-group-version-kind`. Its `paths` are empty: kubectl then finds no
//! `fieldValidation` parameter and validates client-side against these definitions, and takes
//! patch types from its compiled-in metadata rather than from schemas that carry no
//! `x-kubernetes-patch-merge-key` (see the v3 module's note).
//!
//! The protobuf form is produced from the JSON by walking gnostic's `OpenAPIv2.proto`
//! descriptors (vendored in `proto/gnostic`): maps become `Named*` lists, `x-*` keys
//! `vendor_extension` entries whose values are YAML, as gnostic encodes them.

use super::protobuf::codec;
use crate::error::{ApiError, ApiResult};
use http::{HeaderMap, header};
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, FieldDescriptor, Kind, MessageDescriptor, Value as Pb};
use serde_json::{Map, Value, json};

/// The media type of gnostic's protobuf OpenAPI v2 as kube-openapi answers it (clients ask for
/// it under this name or the older `…spec.v2@v1.0+protobuf`, which Go's mime parser refuses as a
/// Content-Type).
pub(super) const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
const PROTOBUF_DEPRECATED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// Whether the client asks for the protobuf form.
pub(super) fn wants_protobuf(headers: &HeaderMap) -> bool {
    headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|a| {
        a.split(',').any(|r| r.split(';').next().is_some_and(|m| matches!(m.trim(), PROTOBUF | PROTOBUF_DEPRECATED)))
    })
}

/// A v3 schema (from `components.schemas`) as a Swagger 2.0 definition.
fn to_v2(v: &Value) -> Value {
    match v {
        Value::Object(o) => {
            let mut out = Map::new();
            for (k, x) in o {
                match k.as_str() {
                    "nullable" => {}
                    "$ref" => {
                        let r = x.as_str().unwrap_or_default().replace("#/components/schemas/", "#/definitions/");
                        out.insert(k.clone(), Value::String(r));
                    }
                    "allOf" if x.as_array().is_some_and(|a| a.len() == 1 && a[0].get("$ref").is_some()) => {
                        out.insert(
                            "$ref".into(),
                            to_v2(&x[0]["$ref"]).as_str().map_or(Value::Null, |s| {
                                Value::String(s.replace("#/components/schemas/", "#/definitions/"))
                            }),
                        );
                    }
                    _ => {
                        out.insert(k.clone(), to_v2(x));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(to_v2).collect()),
        other => other.clone(),
    }
}

/// The Swagger 2.0 document (JSON) from the group/version v3 documents.
pub(super) fn swagger(v3_documents: &[Value], kubernetes_version: &str) -> Value {
    let mut definitions = Map::new();
    for doc in v3_documents {
        for (name, schema) in doc["components"]["schemas"].as_object().into_iter().flatten() {
            let v2 = to_v2(schema);
            match definitions.get_mut(name) {
                // A schema several documents share keeps every group-version-kind it was given.
                Some(Value::Object(existing)) => {
                    if let Some(Value::Array(more)) = v2.get("x-kubernetes-group-version-kind") {
                        let gvks = existing.entry("x-kubernetes-group-version-kind").or_insert_with(|| json!([]));
                        if let Some(list) = gvks.as_array_mut() {
                            for g in more {
                                if !list.contains(g) {
                                    list.push(g.clone());
                                }
                            }
                        }
                    }
                }
                _ => {
                    definitions.insert(name.clone(), v2);
                }
            }
        }
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": kubernetes_version},
        "paths": {},
        "definitions": definitions,
        "securityDefinitions": {"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}},
        "security": [{"BearerToken": []}],
    })
}

fn field_for(desc: &MessageDescriptor, key: &str) -> Option<FieldDescriptor> {
    if key == "$ref" {
        return desc.get_field_by_name("_ref");
    }
    desc.fields().find(|f| f.json_name() == key || f.name() == key)
}

/// The field holding a map's entries in a gnostic container message (`Definitions`,
/// `Properties`, `Paths`…): its one repeated `Named*` field besides `vendor_extension`.
fn named_entries(desc: &MessageDescriptor) -> Option<FieldDescriptor> {
    if matches!(desc.name(), "Schema" | "Document" | "Info") {
        return None;
    }
    desc.fields().find(|f| {
        f.is_list()
            && f.name() != "vendor_extension"
            && matches!(f.kind(), Kind::Message(m) if m.name().starts_with("Named"))
    })
}

fn yaml_any(pool: &DescriptorPool, v: &Value) -> Option<DynamicMessage> {
    let any = pool.get_message_by_name("openapi.v2.Any")?;
    let mut m = DynamicMessage::new(any);
    m.set_field_by_name("yaml", Pb::String(serde_saphyr::to_string(v).ok()?));
    Some(m)
}

fn named(pool: &DescriptorPool, named: &MessageDescriptor, name: &str, v: &Value) -> Option<DynamicMessage> {
    let value_field = named.get_field_by_name("value")?;
    let Kind::Message(value_desc) = value_field.kind() else { return None };
    let mut entry = DynamicMessage::new(named.clone());
    entry.set_field_by_name("name", Pb::String(name.to_string()));
    entry.set_field(&value_field, Pb::Message(gnostic(pool, &value_desc, v)?));
    Some(entry)
}

fn push(msg: &mut DynamicMessage, field: &FieldDescriptor, item: Pb) {
    if let Pb::List(list) = msg.get_field_mut(field) {
        list.push(item);
    }
}

/// The gnostic message `desc` for the Swagger JSON `v` (`None` for what it cannot hold).
fn gnostic(pool: &DescriptorPool, desc: &MessageDescriptor, v: &Value) -> Option<DynamicMessage> {
    let mut msg = DynamicMessage::new(desc.clone());
    match (desc.name(), v) {
        ("Any", _) => return yaml_any(pool, v),
        ("TypeItem", Value::String(s)) => msg.set_field_by_name("value", Pb::List(vec![Pb::String(s.clone())])),
        ("TypeItem", Value::Array(a)) => msg.set_field_by_name(
            "value",
            Pb::List(a.iter().filter_map(Value::as_str).map(|s| Pb::String(s.into())).collect()),
        ),
        ("ItemsItem", _) => {
            let schema = pool.get_message_by_name("openapi.v2.Schema")?;
            let items = match v {
                Value::Array(a) => a.iter().filter_map(|x| gnostic(pool, &schema, x)).map(Pb::Message).collect(),
                other => vec![Pb::Message(gnostic(pool, &schema, other)?)],
            };
            msg.set_field_by_name("schema", Pb::List(items));
        }
        ("AdditionalPropertiesItem", Value::Bool(b)) => msg.set_field_by_name("boolean", Pb::Bool(*b)),
        ("AdditionalPropertiesItem", other) => {
            let schema = pool.get_message_by_name("openapi.v2.Schema")?;
            msg.set_field_by_name("schema", Pb::Message(gnostic(pool, &schema, other)?));
        }
        (_, Value::Object(o)) => {
            let vendor = desc.get_field_by_name("vendor_extension");
            let entries = named_entries(desc);
            for (k, x) in o {
                if k.starts_with("x-") {
                    if let (Some(f), Kind::Message(n)) = (&vendor, vendor.as_ref().map(|f| f.kind())?) {
                        let mut entry = DynamicMessage::new(n.clone());
                        entry.set_field_by_name("name", Pb::String(k.clone()));
                        entry.set_field_by_name("value", Pb::Message(yaml_any(pool, x)?));
                        push(&mut msg, f, Pb::Message(entry));
                    }
                    continue;
                }
                if let Some(f) = &entries {
                    let Kind::Message(n) = f.kind() else { continue };
                    if let Some(entry) = named(pool, &n, k, x) {
                        push(&mut msg, f, Pb::Message(entry));
                    }
                    continue;
                }
                let Some(f) = field_for(desc, k) else { continue };
                if let Some(value) = single_or_list(pool, &f, x) {
                    msg.set_field(&f, value);
                }
            }
        }
        _ => return None,
    }
    Some(msg)
}

fn single_or_list(pool: &DescriptorPool, f: &FieldDescriptor, v: &Value) -> Option<Pb> {
    if f.is_list() {
        let items = v.as_array()?.iter().filter_map(|x| single(pool, f, x)).collect();
        return Some(Pb::List(items));
    }
    single(pool, f, v)
}

fn single(pool: &DescriptorPool, f: &FieldDescriptor, v: &Value) -> Option<Pb> {
    Some(match f.kind() {
        Kind::Message(m) => Pb::Message(gnostic(pool, &m, v)?),
        Kind::String => Pb::String(v.as_str()?.to_string()),
        Kind::Bool => Pb::Bool(v.as_bool()?),
        Kind::Double => Pb::F64(v.as_f64()?),
        Kind::Int64 => Pb::I64(v.as_i64()?),
        _ => return None,
    })
}

/// The Swagger JSON as gnostic's `openapi.v2.Document`.
pub(super) fn encode(swagger: &Value) -> ApiResult<Vec<u8>> {
    let unavailable = || ApiError::internal("the OpenAPI v2 descriptors are not available");
    let pool = codec().ok_or_else(unavailable)?.pool();
    let desc = pool.get_message_by_name("openapi.v2.Document").ok_or_else(unavailable)?;
    let doc = gnostic(pool, &desc, swagger).ok_or_else(unavailable)?;
    Ok(doc.encode_to_vec())
}
