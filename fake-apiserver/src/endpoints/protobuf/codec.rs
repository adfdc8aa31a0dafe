//! The one generic transcoder between the JSON the server stores and kube's protobuf messages,
//! driven by the descriptors of the upstream `.proto` files and by `proto/json-mapping.txt`
//! (what the Go struct tags say and the `.proto` files do not: inline structs, fields whose
//! JSON name is not their proto name, zero values JSON leaves out).
//!
//! A few apimachinery types have their own JSON form in Go (custom marshalers) and are mapped
//! here by message name: `Time`/`MicroTime` (RFC 3339 strings), `Duration` (Go duration
//! string), `Quantity` (string), `IntOrString`, `RawExtension`/`FieldsV1`/apiextensions `JSON`
//! (raw JSON), and the apiextensions `JSONSchemaPropsOr…` unions.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use prost::Message;
use prost_reflect::{
    DescriptorPool, DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, ReflectMessage, Value as Pb,
};
use serde_json::{Map, Number, Value};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock};

static DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kubernetes.desc"));
static MAPPING: &str = include_str!("../../../proto/json-mapping.txt");

/// The magic prefix of kube's protobuf encoding.
pub(crate) const MAGIC: &[u8] = b"k8s\0";

const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";
const APIEXT: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1";

/// A type whose JSON form is not the generic one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Special {
    Time,
    MicroTime,
    Duration,
    Quantity,
    IntOrString,
    /// Bytes in field 1 that are JSON (RawExtension, FieldsV1, apiextensions JSON).
    Raw,
    OrBool,
    OrArray,
    OrStringArray,
}

fn special(full_name: &str) -> Option<Special> {
    Some(match full_name {
        "k8s.io.apimachinery.pkg.apis.meta.v1.Time" => Special::Time,
        "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime" => Special::MicroTime,
        "k8s.io.apimachinery.pkg.apis.meta.v1.Duration" => Special::Duration,
        "k8s.io.apimachinery.pkg.api.resource.Quantity" => Special::Quantity,
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => Special::IntOrString,
        "k8s.io.apimachinery.pkg.runtime.RawExtension" | "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1" => {
            Special::Raw
        }
        n if n.starts_with(APIEXT) => match &n[APIEXT.len()..] {
            ".JSON" => Special::Raw,
            ".JSONSchemaPropsOrBool" => Special::OrBool,
            ".JSONSchemaPropsOrArray" => Special::OrArray,
            ".JSONSchemaPropsOrStringArray" => Special::OrStringArray,
            _ => return None,
        },
        _ => return None,
    })
}

/// How one field of a message appears in JSON.
struct FieldPlan {
    field: FieldDescriptor,
    /// The JSON key (unused for inline fields).
    key: String,
    /// An embedded Go struct: its fields sit in the parent's JSON object.
    inline: bool,
    /// Its zero value is left out of JSON (a non-pointer `omitempty` scalar).
    omit_zero: bool,
}

/// How a message appears in JSON.
struct MessagePlan {
    special: Option<Special>,
    fields: Vec<FieldPlan>,
}

/// A protobuf encoding or decoding failure, with the path where it happened. The path is
/// built on the way out of a failure, so a success allocates none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CodecError {
    path: String,
    what: String,
}

impl CodecError {
    fn new(what: impl std::fmt::Display) -> Self {
        Self { path: String::new(), what: what.to_string() }
    }

    /// The same failure one level up: under `key` (a field name or `[i]`).
    fn within(mut self, key: &str) -> Self {
        self.path = match (self.path.is_empty(), self.path.starts_with('[')) {
            (true, _) => key.to_string(),
            (false, true) => format!("{key}{}", self.path),
            (false, false) => format!("{key}.{}", self.path),
        };
        self
    }
}

impl std::fmt::Display for CodecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() { write!(f, "{}", self.what) } else { write!(f, "{}: {}", self.path, self.what) }
    }
}

type Result<T> = std::result::Result<T, CodecError>;

fn err<T>(what: impl std::fmt::Display) -> Result<T> {
    Err(CodecError::new(what))
}

/// The descriptors, the JSON mapping and the plan of every message.
pub(crate) struct Codec {
    /// (group, version) → proto package.
    packages: HashMap<(String, String), String>,
    plans: HashMap<String, Arc<MessagePlan>>,
    pool: DescriptorPool,
}

static CODEC: LazyLock<Option<Codec>> = LazyLock::new(Codec::load);

/// The process's codec (`None` only if the descriptors built into the binary do not load).
pub(crate) fn codec() -> Option<&'static Codec> {
    CODEC.as_ref()
}

impl Codec {
    fn load() -> Option<Codec> {
        let pool = DescriptorPool::decode(DESCRIPTORS).ok()?;
        let mut packages = HashMap::new();
        let mut inline = HashSet::new();
        let mut renames = HashMap::new();
        let mut omit = HashSet::new();
        for line in MAPPING.lines().filter(|l| !l.starts_with('#')) {
            match line.split(' ').collect::<Vec<_>>().as_slice() {
                ["group", g, v, p] => {
                    let g = if *g == "-" { "" } else { g };
                    packages.insert((g.to_string(), v.to_string()), p.to_string());
                }
                ["inline", m, f] => {
                    inline.insert(format!("{m}.{f}"));
                }
                ["omitzero", m, f] => {
                    omit.insert(format!("{m}.{f}"));
                }
                ["rename", m, f, j] => {
                    renames.insert(format!("{m}.{f}"), j.to_string());
                }
                _ => {}
            }
        }
        let mut plans = HashMap::new();
        for m in pool.all_messages() {
            let fields = m
                .fields()
                .map(|f| {
                    let full = format!("{}.{}", m.full_name(), f.name());
                    FieldPlan {
                        key: renames.get(&full).cloned().unwrap_or_else(|| f.name().to_string()),
                        inline: inline.contains(&full),
                        omit_zero: omit.contains(&full),
                        field: f,
                    }
                })
                .collect();
            plans.insert(m.full_name().to_string(), Arc::new(MessagePlan { special: special(m.full_name()), fields }));
        }
        Some(Codec { packages, plans, pool })
    }

    /// The message of `kind` in `group/version`, or of meta.k8s.io/v1 (Status, DeleteOptions,
    /// WatchEvent… travel under every group version); `None` for custom resources and kinds
    /// without a protobuf form.
    pub fn message(&self, group: &str, version: &str, kind: &str) -> Option<MessageDescriptor> {
        let in_package = |p: &str| self.pool.get_message_by_name(&format!("{p}.{kind}"));
        self.packages.get(&(group.to_string(), version.to_string())).and_then(|p| in_package(p)).or_else(|| {
            // The list kinds and options of meta.k8s.io are named in any group version.
            self.packages.contains_key(&(group.to_string(), version.to_string())).then(|| in_package(META)).flatten()
        })
    }

    /// Every message the vendored `.proto` files define.
    pub fn pool(&self) -> &DescriptorPool {
        &self.pool
    }

    /// The message of an `apiVersion`/`kind` pair.
    pub fn message_for_api_version(&self, api_version: &str, kind: &str) -> Option<MessageDescriptor> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.message(group, version, kind)
    }

    fn plan(&self, desc: &MessageDescriptor) -> Option<&MessagePlan> {
        self.plans.get(desc.full_name()).map(Arc::as_ref)
    }

    fn named(&self, name: &str) -> Result<MessageDescriptor> {
        self.pool.get_message_by_name(name).map_or_else(|| err(format!("no message {name}")), Ok)
    }

    // ---------------------------------------------------------------- JSON → protobuf

    /// The message `desc` holding the JSON value `v`.
    pub fn message_from_json(&self, desc: &MessageDescriptor, v: &Value) -> Result<DynamicMessage> {
        let Some(plan) = self.plan(desc) else { return err(format!("no plan for {}", desc.full_name())) };
        let mut msg = DynamicMessage::new(desc.clone());
        if let Some(s) = plan.special {
            self.special_from_json(s, &mut msg, v)?;
            return Ok(msg);
        }
        let Value::Object(obj) = v else { return err(format!("expected an object, got {v}")) };
        for fp in &plan.fields {
            if fp.inline {
                let Kind::Message(m) = fp.field.kind() else { continue };
                let sub = self.message_from_json(&m, v)?;
                if sub.fields().next().is_some() {
                    msg.set_field(&fp.field, Pb::Message(sub));
                }
                continue;
            }
            let Some(value) = obj.get(&fp.key).filter(|x| !x.is_null()) else { continue };
            let pb = if fp.field.is_map() {
                let Value::Object(entries) = value else {
                    return err("expected an object").map_err(|e| e.within(&fp.key));
                };
                let Kind::Message(entry) = fp.field.kind() else { continue };
                let vf = entry.map_entry_value_field();
                let mut map = HashMap::with_capacity(entries.len());
                for (k, x) in entries {
                    if x.is_null() && !matches!(vf.kind(), Kind::Message(_)) {
                        continue;
                    }
                    let value = self.single_from_json(&vf, x).map_err(|e| e.within(k).within(&fp.key))?;
                    map.insert(MapKey::String(k.clone()), value);
                }
                Pb::Map(map)
            } else if fp.field.is_list() {
                let Value::Array(items) = value else { return err("expected an array").map_err(|e| e.within(&fp.key)) };
                let mut list = Vec::with_capacity(items.len());
                for (i, x) in items.iter().enumerate() {
                    let item = self.single_from_json(&fp.field, x);
                    list.push(item.map_err(|e| e.within(&format!("[{i}]")).within(&fp.key))?);
                }
                Pb::List(list)
            } else {
                self.single_from_json(&fp.field, value).map_err(|e| e.within(&fp.key))?
            };
            msg.set_field(&fp.field, pb);
        }
        Ok(msg)
    }

    fn single_from_json(&self, field: &FieldDescriptor, v: &Value) -> Result<Pb> {
        let int = |v: &Value| v.as_i64().or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64));
        Ok(match field.kind() {
            Kind::Message(m) => Pb::Message(self.message_from_json(&m, v)?),
            Kind::String => match v {
                Value::String(s) => Pb::String(s.clone()),
                other => return err(format!("expected a string, got {other}")),
            },
            Kind::Bytes => match v {
                Value::String(s) => Pb::Bytes(BASE64.decode(s).map_err(|e| CodecError::new(format!("{e}")))?.into()),
                other => return err(format!("expected base64 bytes, got {other}")),
            },
            Kind::Bool => Pb::Bool(v.as_bool().ok_or_else(|| CodecError::new("expected a boolean"))?),
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
                Pb::I32(int(v).and_then(|i| i32::try_from(i).ok()).ok_or_else(|| CodecError::new("expected int32"))?)
            }
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
                Pb::I64(int(v).ok_or_else(|| CodecError::new("expected int64"))?)
            }
            Kind::Uint32 | Kind::Fixed32 => {
                Pb::U32(int(v).and_then(|i| u32::try_from(i).ok()).ok_or_else(|| CodecError::new("expected uint32"))?)
            }
            Kind::Uint64 | Kind::Fixed64 => Pb::U64(v.as_u64().ok_or_else(|| CodecError::new("expected uint64"))?),
            Kind::Double => Pb::F64(v.as_f64().ok_or_else(|| CodecError::new("expected a number"))?),
            Kind::Float => Pb::F32(v.as_f64().ok_or_else(|| CodecError::new("expected a number"))? as f32),
            Kind::Enum(_) => Pb::EnumNumber(
                int(v).and_then(|i| i32::try_from(i).ok()).ok_or_else(|| CodecError::new("expected an enum"))?,
            ),
        })
    }

    fn special_from_json(&self, s: Special, msg: &mut DynamicMessage, v: &Value) -> Result<()> {
        match s {
            Special::Time | Special::MicroTime => {
                let Value::String(text) = v else { return err("expected an RFC 3339 time") };
                let ts: jiff::Timestamp = text.parse().map_err(|e| CodecError::new(format!("{e}")))?;
                msg.set_field_by_name("seconds", Pb::I64(ts.as_second()));
                msg.set_field_by_name("nanos", Pb::I32(ts.subsec_nanosecond()));
            }
            Special::Duration => {
                let Value::String(text) = v else { return err("expected a duration") };
                let d = apimachinery::duration::parse_go_duration(text).map_err(|e| CodecError::new(format!("{e}")))?;
                msg.set_field_by_name("duration", Pb::I64(d.as_nanos()));
            }
            Special::Quantity => {
                let text = match v {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    other => return err(format!("expected a quantity, got {other}")),
                };
                msg.set_field_by_name("string", Pb::String(text));
            }
            Special::IntOrString => match v {
                Value::String(s) => {
                    msg.set_field_by_name("type", Pb::I64(1));
                    msg.set_field_by_name("strVal", Pb::String(s.clone()));
                }
                Value::Number(n) => {
                    let i = n.as_i64().and_then(|i| i32::try_from(i).ok());
                    let Some(i) = i else { return err("expected an int32 or a string") };
                    msg.set_field_by_name("type", Pb::I64(0));
                    msg.set_field_by_name("intVal", Pb::I32(i));
                }
                other => return err(format!("expected an int or a string, got {other}")),
            },
            Special::Raw => {
                let raw = serde_json::to_vec(v).map_err(CodecError::new)?;
                // Field 1 is `raw`, or `Raw` in FieldsV1.
                msg.set_field_by_number(1, Pb::Bytes(raw.into()));
            }
            Special::OrBool => match v {
                Value::Bool(b) => msg.set_field_by_name("allows", Pb::Bool(*b)),
                other => {
                    let schema = self.message_from_json(&self.named(&format!("{APIEXT}.JSONSchemaProps"))?, other)?;
                    msg.set_field_by_name("allows", Pb::Bool(true));
                    msg.set_field_by_name("schema", Pb::Message(schema));
                }
            },
            Special::OrArray | Special::OrStringArray => {
                let props = self.named(&format!("{APIEXT}.JSONSchemaProps"))?;
                match v {
                    Value::Array(items) if s == Special::OrArray => {
                        let mut list = Vec::new();
                        for (i, x) in items.iter().enumerate() {
                            list.push(Pb::Message(
                                self.message_from_json(&props, x).map_err(|e| e.within(&format!("[{i}]")))?,
                            ));
                        }
                        msg.set_field_by_name("jSONSchemas", Pb::List(list));
                    }
                    Value::Array(items) => {
                        let mut list = Vec::new();
                        for x in items {
                            let Value::String(p) = x else { return err("expected strings") };
                            list.push(Pb::String(p.clone()));
                        }
                        msg.set_field_by_name("property", Pb::List(list));
                    }
                    other => msg.set_field_by_name("schema", Pb::Message(self.message_from_json(&props, other)?)),
                }
            }
        }
        Ok(())
    }

    // ---------------------------------------------------------------- protobuf → JSON

    /// The JSON value a message holds.
    pub fn message_to_json(&self, msg: &DynamicMessage) -> Result<Value> {
        let desc = msg.descriptor();
        let Some(plan) = self.plan(&desc) else { return err(format!("no plan for {}", desc.full_name())) };
        if let Some(s) = plan.special {
            return self.special_to_json(s, msg);
        }
        let mut out = Map::new();
        for fp in &plan.fields {
            let f = &fp.field;
            if fp.inline {
                if let Some(Value::Object(sub)) =
                    msg.get_field(f).as_message().map(|m| self.message_to_json(m)).transpose()?
                {
                    out.extend(sub);
                }
                continue;
            }
            if f.is_map() {
                let value = msg.get_field(f);
                let Some(entries) = value.as_map().filter(|m| !m.is_empty()) else { continue };
                let Kind::Message(entry) = f.kind() else { continue };
                let vf = entry.map_entry_value_field();
                // Go writes map keys sorted.
                let mut keys: Vec<(&MapKey, &Pb)> = entries.iter().collect();
                keys.sort_by_key(|a| map_key(a.0));
                let mut m = Map::new();
                for (k, x) in keys {
                    m.insert(map_key(k), self.single_to_json(&vf, x)?);
                }
                out.insert(fp.key.clone(), Value::Object(m));
            } else if f.is_list() {
                let value = msg.get_field(f);
                let Some(items) = value.as_list().filter(|l| !l.is_empty()) else { continue };
                let list = items.iter().map(|x| self.single_to_json(f, x)).collect::<Result<Vec<_>>>()?;
                out.insert(fp.key.clone(), Value::Array(list));
            } else if msg.has_field(f) {
                let value = msg.get_field(f);
                if fp.omit_zero && !matches!(f.kind(), Kind::Message(_)) && value.is_default(&f.kind()) {
                    continue;
                }
                let json = self.single_to_json(f, &value)?;
                if json.is_null() {
                    continue;
                }
                out.insert(fp.key.clone(), json);
            }
        }
        Ok(Value::Object(out))
    }

    fn single_to_json(&self, field: &FieldDescriptor, v: &Pb) -> Result<Value> {
        Ok(match v {
            Pb::Message(m) => self.message_to_json(m)?,
            Pb::String(s) => Value::String(s.clone()),
            Pb::Bytes(b) => Value::String(BASE64.encode(b)),
            Pb::Bool(b) => Value::Bool(*b),
            Pb::I32(i) => Value::from(*i),
            Pb::I64(i) => Value::from(*i),
            Pb::U32(i) => Value::from(*i),
            Pb::U64(i) => Value::from(*i),
            Pb::F64(f) => Number::from_f64(*f).map(Value::Number).unwrap_or(Value::Null),
            Pb::F32(f) => Number::from_f64(f64::from(*f)).map(Value::Number).unwrap_or(Value::Null),
            Pb::EnumNumber(i) => Value::from(*i),
            Pb::List(_) | Pb::Map(_) => return err(format!("{}: a list inside a list", field.name())),
        })
    }

    fn special_to_json(&self, s: Special, msg: &DynamicMessage) -> Result<Value> {
        let field = |name: &str| msg.get_field_by_name(name).map(|v| v.into_owned());
        let has = |name: &str| msg.has_field_by_name(name);
        Ok(match s {
            Special::Time | Special::MicroTime => {
                if !has("seconds") && !has("nanos") {
                    return Ok(Value::Null);
                }
                let secs = field("seconds").and_then(|v| v.as_i64()).unwrap_or_default();
                let nanos = field("nanos").and_then(|v| v.as_i32()).unwrap_or_default();
                let ts = jiff::Timestamp::new(secs, nanos).map_err(CodecError::new)?;
                let text = if s == Special::Time {
                    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
                } else {
                    ts.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string()
                };
                Value::String(text)
            }
            Special::Duration => {
                let ns = field("duration").and_then(|v| v.as_i64()).unwrap_or_default();
                Value::String(apimachinery::duration::format_go_duration(
                    apimachinery::duration::GoDuration::from_nanos(ns),
                ))
            }
            Special::Quantity => {
                let text = field("string").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
                Value::String(if text.is_empty() { "0".into() } else { text })
            }
            Special::IntOrString => {
                if field("type").and_then(|v| v.as_i64()) == Some(1) {
                    Value::String(field("strVal").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default())
                } else {
                    Value::from(field("intVal").and_then(|v| v.as_i32()).unwrap_or_default())
                }
            }
            Special::Raw => {
                let raw = msg.get_field_by_number(1).and_then(|v| v.as_bytes().cloned()).unwrap_or_default();
                if raw.is_empty() {
                    return Ok(Value::Null);
                }
                if raw.starts_with(MAGIC) {
                    return self.decode_envelope(&raw).map(|(_, v)| v);
                }
                serde_json::from_slice(&raw).map_err(|e| CodecError::new(format!("raw JSON: {e}")))?
            }
            Special::OrBool => match msg.get_field_by_name("schema").filter(|_| has("schema")) {
                Some(schema) => {
                    schema.as_message().map(|m| self.message_to_json(m)).transpose()?.unwrap_or(Value::Null)
                }
                None => Value::Bool(field("allows").and_then(|v| v.as_bool()).unwrap_or_default()),
            },
            Special::OrArray | Special::OrStringArray => {
                let list_name = if s == Special::OrArray { "jSONSchemas" } else { "property" };
                let list = field(list_name).and_then(|v| v.as_list().map(<[Pb]>::to_vec)).unwrap_or_default();
                if !list.is_empty() {
                    let items = list
                        .iter()
                        .map(|x| match x {
                            Pb::Message(m) => self.message_to_json(m),
                            Pb::String(s) => Ok(Value::String(s.clone())),
                            _ => err("unexpected list item"),
                        })
                        .collect::<Result<Vec<_>>>()?;
                    Value::Array(items)
                } else {
                    match msg.get_field_by_name("schema").filter(|_| has("schema")) {
                        Some(schema) => {
                            schema.as_message().map(|m| self.message_to_json(m)).transpose()?.unwrap_or(Value::Null)
                        }
                        None => Value::Null,
                    }
                }
            }
        })
    }

    // ---------------------------------------------------------------- envelopes

    /// `k8s\0` + `runtime.Unknown{typeMeta, raw, contentEncoding: "", contentType: ""}`: how
    /// kube sends one object. Written directly (it is on every protobuf answer), the fields in
    /// Unknown's order as Go's marshaller writes them.
    pub fn encode_envelope(&self, api_version: &str, kind: &str, raw: Vec<u8>) -> Result<Vec<u8>> {
        use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint};
        let string_len = |s: &str| 1 + encoded_len_varint(s.len() as u64) + s.len();
        let type_meta_len = string_len(api_version) + string_len(kind);
        let mut out = Vec::with_capacity(MAGIC.len() + type_meta_len + raw.len() + 16);
        out.extend_from_slice(MAGIC);
        encode_key(1, WireType::LengthDelimited, &mut out);
        encode_varint(type_meta_len as u64, &mut out);
        for (n, s) in [(1, api_version), (2, kind)] {
            encode_key(n, WireType::LengthDelimited, &mut out);
            encode_varint(s.len() as u64, &mut out);
            out.extend_from_slice(s.as_bytes());
        }
        encode_key(2, WireType::LengthDelimited, &mut out);
        encode_varint(raw.len() as u64, &mut out);
        out.extend_from_slice(&raw);
        for n in [3, 4] {
            encode_key(n, WireType::LengthDelimited, &mut out);
            encode_varint(0, &mut out);
        }
        Ok(out)
    }

    /// The JSON object with `apiVersion` and `kind` as a protobuf envelope; `Ok(None)` when its
    /// kind has no protobuf form.
    pub fn encode_object(&self, v: &Value) -> Result<Option<Vec<u8>>> {
        let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        let kind = v.get("kind").and_then(Value::as_str).unwrap_or_default();
        let Some(desc) = self.message_for_api_version(api_version, kind) else { return Ok(None) };
        let msg = self.message_from_json(&desc, v)?;
        self.encode_envelope(api_version, kind, msg.encode_to_vec()).map(Some)
    }

    /// Splits an envelope: the type meta (apiVersion, kind) and the raw message bytes.
    pub fn split_envelope(&self, body: &[u8]) -> Result<(String, String, Vec<u8>)> {
        let Some(rest) = body.strip_prefix(MAGIC) else { return err("missing the k8s\\0 prefix") };
        let unknown = self.named("k8s.io.apimachinery.pkg.runtime.Unknown")?;
        let u = DynamicMessage::decode(unknown, rest).map_err(CodecError::new)?;
        let text = |m: &DynamicMessage, n: &str| {
            m.get_field_by_name(n).and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
        };
        let (api_version, kind) = match u.get_field_by_name("typeMeta") {
            Some(tm) => tm.as_message().map(|m| (text(m, "apiVersion"), text(m, "kind"))).unwrap_or_default(),
            None => Default::default(),
        };
        let raw = u.get_field_by_name("raw").and_then(|v| v.as_bytes().map(|b| b.to_vec())).unwrap_or_default();
        Ok((api_version, kind, raw))
    }

    /// An envelope as the JSON object it holds (with `apiVersion` and `kind` first), and its
    /// kind's message.
    pub fn decode_envelope(&self, body: &[u8]) -> Result<(MessageDescriptor, Value)> {
        let (api_version, kind, raw) = self.split_envelope(body)?;
        let Some(desc) = self.message_for_api_version(&api_version, &kind) else {
            return err(format!("no kind {kind:?} is registered for version {api_version:?}"));
        };
        let v = self.decode_message(&desc, &raw, &api_version, &kind)?;
        Ok((desc, v))
    }

    /// The raw bytes of one message as JSON with the given type meta.
    pub fn decode_message(&self, desc: &MessageDescriptor, raw: &[u8], api_version: &str, kind: &str) -> Result<Value> {
        let msg = DynamicMessage::decode(desc.clone(), raw).map_err(CodecError::new)?;
        let body = self.message_to_json(&msg)?;
        let mut out = Map::new();
        out.insert("kind".into(), Value::String(kind.to_string()));
        out.insert("apiVersion".into(), Value::String(api_version.to_string()));
        if let Value::Object(o) = body {
            out.extend(o);
        }
        Ok(Value::Object(out))
    }

    /// One watch event (`{"type": …, "object": …}`) as a `WatchEvent` message whose object is
    /// an envelope, as kube streams it (without a frame).
    pub fn encode_watch_event(&self, event: &Value) -> Result<Option<Vec<u8>>> {
        let Some(object) = self.encode_object(&event["object"])? else { return Ok(None) };
        let we = self.named(&format!("{META}.WatchEvent"))?;
        let raw_ext = self.named("k8s.io.apimachinery.pkg.runtime.RawExtension")?;
        let mut obj = DynamicMessage::new(raw_ext);
        obj.set_field_by_name("raw", Pb::Bytes(object.into()));
        let mut msg = DynamicMessage::new(we);
        msg.set_field_by_name("type", Pb::String(event["type"].as_str().unwrap_or_default().to_string()));
        msg.set_field_by_name("object", Pb::Message(obj));
        Ok(Some(msg.encode_to_vec()))
    }
}

fn map_key(k: &MapKey) -> String {
    match k {
        MapKey::String(s) => s.clone(),
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(i) => i.to_string(),
        MapKey::I64(i) => i.to_string(),
        MapKey::U32(i) => i.to_string(),
        MapKey::U64(i) => i.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(v: Value) -> Value {
        let c = codec().expect("the descriptors load");
        let bytes = c.encode_object(&v).expect("encodes").expect("has a protobuf form");
        c.decode_envelope(&bytes).expect("decodes").1
    }

    #[test]
    fn special_types_inline_structs_and_renames_round_trip() {
        let pod = json!({
            "kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": "p", "creationTimestamp": "2026-01-02T03:04:05Z",
                "managedFields": [{"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]},
            "spec": {
                "volumes": [{"name": "v", "configMap": {"name": "cm", "defaultMode": 420}}],
                "containers": [{"name": "c", "image": "i",
                    "readinessProbe": {"httpGet": {"port": "http", "path": "/"}, "periodSeconds": 5},
                    "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}}],
                "activeDeadlineSeconds": 0,
            },
        });
        assert_eq!(round_trip(pod.clone()), pod);
        let lease = json!({"kind": "Lease", "apiVersion": "coordination.k8s.io/v1", "metadata": {"name": "l"},
            "spec": {"renewTime": "2026-01-02T03:04:05.123456Z", "leaseDurationSeconds": 15}});
        assert_eq!(round_trip(lease.clone()), lease);
        let crd = json!({"kind": "CustomResourceDefinition", "apiVersion": "apiextensions.k8s.io/v1",
            "metadata": {"name": "ws.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "ws", "kind": "W"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"spec": {"type": "object", "default": {"a": 1},
                        "additionalProperties": false,
                        "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}}}}}]}});
        assert_eq!(round_trip(crd.clone()), crd);
    }

    #[test]
    fn kinds_without_a_protobuf_form_and_bad_input() {
        let c = codec().expect("the descriptors load");
        assert!(c.encode_object(&json!({"kind": "Widget", "apiVersion": "example.com/v1"})).unwrap().is_none());
        assert!(c.encode_object(&json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1"})).unwrap().is_none());
        let err = c.encode_object(&json!({"kind": "Pod", "apiVersion": "v1", "spec": {"containers": 3}})).unwrap_err();
        assert_eq!(err.to_string(), "spec.containers: expected an array");
        let pod =
            json!({"kind": "Pod", "apiVersion": "v1", "spec": {"containers": [{"name": 3}], "nodeSelector": {"a": 1}}});
        let err = c.encode_object(&pod).unwrap_err();
        assert_eq!(err.to_string(), "spec.containers[0].name: expected a string, got 3");
        assert!(c.decode_envelope(b"k8s\0\x0a\xff").is_err());
        assert!(c.decode_envelope(b"nope").is_err());
    }
}
