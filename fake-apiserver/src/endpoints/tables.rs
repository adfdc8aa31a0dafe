//! Server-side printing: `Table` and `PartialObjectMetadata` answers for get, list and watch.
//!
//! kubectl asks `Accept: application/json;as=Table;v=v1;g=meta.k8s.io,…v1beta1…,application/json`
//! and prints the rows it gets. The columns and cells are each kind's (its strategy's
//! `table_columns` and `table_cells`: kube-apiserver's printers for the common kinds, CRD
//! `additionalPrinterColumns` for custom resources, Name/Age otherwise); this module negotiates
//! the rendering and builds the Table and PartialObjectMetadata answers around them.

use crate::error::{ApiError, ApiResult};
use crate::registry::ResourceType;
use bytes::Bytes;
use http::{HeaderMap, header};
use jiff::Timestamp;
use serde_json::{Value, json};

/// What `includeObject` asks each row to carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IncludeObject {
    None,
    Metadata,
    Object,
}

/// How a read answers: the objects themselves, a Table, or only their metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Rendering {
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
pub(super) fn negotiate(headers: &HeaderMap, raw_query: Option<&str>) -> ApiResult<Rendering> {
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

/// The `PartialObjectMetadata` of an object.
fn partial_metadata(o: &Value, version: &str) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": format!("meta.k8s.io/{version}"), "metadata": o["metadata"]})
}

fn row(rt: &ResourceType, o: Value, version: &str, include: IncludeObject, now: Timestamp) -> Value {
    let cells = rt.strategy.table_cells(rt, &o, now);
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
pub(super) fn list_body(
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
            "columnDefinitions": rt.strategy.table_columns(rt),
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
pub(super) fn object_body(rendering: &Rendering, rt: &ResourceType, object: &[u8], now: Timestamp) -> Value {
    let o: Value = serde_json::from_slice(object).unwrap_or(Value::Null);
    match rendering {
        Rendering::Table { version, include } => {
            let rv = o["metadata"]["resourceVersion"].clone();
            json!({
                "kind": "Table",
                "apiVersion": format!("meta.k8s.io/{version}"),
                "metadata": {"resourceVersion": rv},
                "columnDefinitions": rt.strategy.table_columns(rt),
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
    fn accept_negotiation_prefers_the_first_servable_entry() {
        let mut h = HeaderMap::new();
        let table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        h.insert(header::ACCEPT, table.parse().unwrap());
        assert_eq!(negotiate(&h, None).unwrap(), Rendering::Table { version: "v1", include: IncludeObject::Metadata });
        assert_eq!(
            negotiate(&h, Some("includeObject=Object")).unwrap(),
            Rendering::Table { version: "v1", include: IncludeObject::Object }
        );
        let e = negotiate(&h, Some("includeObject=All")).unwrap_err();
        assert_eq!(e.message, "Unsupported value: \"All\": supported values: \"Metadata\", \"None\", \"Object\"");
        h.insert(header::ACCEPT, "application/json;as=Table;v=v2;g=meta.k8s.io, application/json".parse().unwrap());
        assert_eq!(negotiate(&h, None).unwrap(), Rendering::Json);
        h.insert(header::ACCEPT, "application/yaml".parse().unwrap());
        let e = negotiate(&h, None).unwrap_err();
        assert_eq!((e.code, e.reason), (406, "NotAcceptable"));
        assert!(e.message.ends_with("(requested: application/yaml)"), "{}", e.message);
    }
}
