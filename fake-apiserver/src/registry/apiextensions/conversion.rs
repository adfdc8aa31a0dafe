//! Custom resource conversion between the versions of a CRD, as apiextensions-apiserver converts
//! (`pkg/apiserver/conversion/{converter,webhook_converter}.go` at
//! <https://github.com/kubernetes/kubernetes/tree/v1.37.2/staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/conversion>).
//!
//! Objects are stored in the CRD's storage version: a write through another version is
//! converted to it, and a read through another version converted back. With the `None`
//! strategy only `apiVersion` changes; with `Webhook` the CRD's conversion webhook is called
//! with a `ConversionReview` (v1, or v1beta1 when it is the only one the CRD accepts) holding
//! every object to convert (a list is one call), and its answer is checked as upstream checks
//! it: the uid, `result.status: Success`, one object per object sent, each in the desired
//! version with the same kind, name, namespace and uid; the metadata stays the original's but
//! for labels and annotations, which the webhook may change. A failure is the write's or the
//! read's 500: `conversion webhook for <group>/<version>, Kind=<kind> failed: <why>`.
//!
//! A service reference is resolved (to a ready endpoint) when the CRD is registered and again
//! on each write, whose lock gives the server's state; reads use the last one.

use crate::registry::State;
use crate::registry::admission::{client, webhook};
use serde_json::{Value, json};
use std::sync::Mutex;
use std::time::Duration;

/// How a CRD's objects change version.
#[derive(Debug)]
pub(crate) struct Conversion {
    /// The storage version's `apiVersion` (`group/version`).
    pub storage: String,
    webhook: Option<Webhook>,
}

#[derive(Debug)]
struct Webhook {
    client_config: Value,
    ca_bundle: Vec<u8>,
    review_versions: Vec<String>,
    target: Mutex<Result<client::Target, String>>,
}

/// kube-apiserver's conversion calls have no timeout of their own; client-go's webhook client
/// gives up after 30 s.
const TIMEOUT: Duration = Duration::from_secs(30);

impl Conversion {
    /// The conversion of a CRD (`None` when it has no storage version yet).
    pub(crate) fn of(crd: &Value, st: Option<&State>) -> Option<Conversion> {
        let spec = &crd["spec"];
        let group = spec["group"].as_str().unwrap_or_default();
        let storage = spec["versions"].as_array()?.iter().find(|v| v["storage"].as_bool() == Some(true))?;
        let storage = format!("{group}/{}", storage["name"].as_str().unwrap_or_default());
        let conversion = &spec["conversion"];
        let webhook = (conversion["strategy"].as_str() == Some("Webhook")).then(|| {
            let hook = &conversion["webhook"];
            let client_config = hook["clientConfig"].clone();
            let ca_bundle = client_config["caBundle"]
                .as_str()
                .and_then(|b| base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b).ok())
                .unwrap_or_default();
            let review_versions = hook["conversionReviewVersions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            let target = Mutex::new(webhook::target(st, &client_config, None));
            Webhook { client_config, ca_bundle, review_versions, target }
        });
        Some(Conversion { storage, webhook })
    }

    /// Resolves a service reference again (its endpoints may have changed).
    pub(crate) fn refresh(&self, st: &State) {
        if let Some(w) = &self.webhook
            && w.client_config.get("service").is_some_and(Value::is_object)
            && let Ok(mut t) = w.target.lock()
        {
            *t = webhook::target(Some(st), &w.client_config, None);
        }
    }

    /// Converts each of `objects` not already in `to` (an `apiVersion`) to it.
    pub(crate) fn convert(&self, objects: &mut [Value], to: &str) -> Result<(), String> {
        let pending: Vec<usize> =
            (0..objects.len()).filter(|&i| objects[i]["apiVersion"].as_str() != Some(to)).collect();
        if pending.is_empty() {
            return Ok(());
        }
        let Some(w) = &self.webhook else {
            for &i in &pending {
                objects[i]["apiVersion"] = json!(to);
            }
            return Ok(());
        };
        let first = &objects[pending[0]];
        let gvk = format!(
            "{}, Kind={}",
            first["apiVersion"].as_str().unwrap_or_default(),
            first["kind"].as_str().unwrap_or_default()
        );
        let failed = |why: String| format!("conversion webhook for {gvk} failed: {why}");
        let review_version = ["v1", "v1beta1"]
            .into_iter()
            .find(|v| w.review_versions.iter().any(|r| r == v))
            .ok_or_else(|| "no supported conversion review versions".to_string())?;
        let uid = crate::registry::meta::new_uid();
        let sent: Vec<&Value> = pending.iter().map(|&i| &objects[i]).collect();
        let review = json!({
            "apiVersion": format!("apiextensions.k8s.io/{review_version}"),
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": to, "objects": sent},
        });
        let body = serde_json::to_vec(&review).map_err(|e| e.to_string())?;
        let target = w.target.lock().map_err(|_| failed("the webhook's target is poisoned".into()))?.clone();
        let target = target.map_err(&failed)?;
        let answer =
            crate::registry::admission::off_the_runtime(|| client::post(&target, &w.ca_bundle, &body, TIMEOUT))
                .map_err(|e| failed(e.describe(&target.url)))?;
        let converted = converted_objects(&uid, review_version, &answer).map_err(&failed)?;
        if converted.len() != pending.len() {
            return Err(format!(
                "conversion webhook for {gvk} returned {} objects, expected {}",
                converted.len(),
                pending.len()
            ));
        }
        let single = objects.len() == 1;
        for (n, (&i, mut out)) in pending.iter().zip(converted).enumerate() {
            let original = &objects[i];
            let invalid = |why: String| match single {
                true => format!("conversion webhook for {gvk} returned invalid object: {why}"),
                false => format!("conversion webhook for {gvk} returned invalid converted object at index {n}: {why}"),
            };
            if out["apiVersion"].as_str() != Some(to) {
                let got = out["apiVersion"].as_str().unwrap_or_default();
                return Err(match single {
                    true => format!(
                        "conversion webhook for {gvk} returned invalid object at index 0: invalid groupVersion (expected {to}, received {got})"
                    ),
                    false => invalid(format!("invalid groupVersion (expected {to}, received {got})")),
                });
            }
            for (field, what) in [("kind", "kind"), ("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
                let at = |v: &Value| {
                    let v = if field == "kind" { &v["kind"] } else { &v["metadata"][field] };
                    v.as_str().unwrap_or_default().to_string()
                };
                if at(original) != at(&out) {
                    return Err(invalid(format!("must have the same {what}: {} != {}", at(original), at(&out))));
                }
            }
            restore_metadata(original, &mut out).map_err(|e| match single {
                true => format!("conversion webhook for {gvk} returned invalid metadata: {e}"),
                false => format!("conversion webhook for {gvk} returned invalid metadata in object at index {n}: {e}"),
            })?;
            objects[i] = out;
        }
        Ok(())
    }
}

/// The converted objects of a `ConversionReview` answer (`getConvertedObjectsFromResponse`).
fn converted_objects(uid: &str, review_version: &str, body: &[u8]) -> Result<Vec<Value>, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("the answer is not JSON: {e}"))?;
    let expected = format!("apiextensions.k8s.io/{review_version}");
    if v["apiVersion"].as_str() != Some(expected.as_str()) || v["kind"].as_str() != Some("ConversionReview") {
        return Err(format!(
            "expected webhook response of {expected}, Kind=ConversionReview, got {}, Kind={}",
            v["apiVersion"].as_str().unwrap_or_default(),
            v["kind"].as_str().unwrap_or_default()
        ));
    }
    let response = v.get("response").filter(|r| r.is_object()).ok_or("no response provided")?;
    let got = response["uid"].as_str().unwrap_or_default();
    if got != uid {
        return Err(format!("expected response.uid={uid:?}, got {got:?}"));
    }
    let status = response["result"]["status"].as_str().unwrap_or_default();
    if status != "Success" {
        return Err(format!("response.result.status was '{status}', not 'Success'"));
    }
    Ok(response["convertedObjects"].as_array().cloned().unwrap_or_default())
}

/// `restoreObjectMeta`: the original's metadata, with the converted object's labels and
/// annotations (which must be string maps, and valid if they changed).
fn restore_metadata(original: &Value, out: &mut Value) -> Result<(), String> {
    let answered = out.get("metadata").cloned().ok_or("missing metadata in converted object")?;
    if !answered.is_object() {
        return Err(format!("invalid metadata of type {} in converted object", go_type(&answered)));
    }
    let mut meta = original.get("metadata").cloned().unwrap_or_else(|| json!({}));
    for field in ["labels", "annotations"] {
        match answered.get(field).filter(|v| !v.is_null()) {
            None => {
                if let Some(m) = meta.as_object_mut() {
                    m.remove(field);
                }
            }
            Some(Value::Object(m)) => {
                if let Some((k, v)) = m.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!(
                        "metadata.{field}[{k}] must be a string, but is {} in converted object",
                        go_type(v)
                    ));
                }
                meta[field] = Value::Object(m.clone());
            }
            Some(other) => {
                return Err(format!("invalid metadata.{field} of type {} in converted object", go_type(other)));
            }
        }
    }
    out["metadata"] = meta;
    Ok(())
}

/// The Go type a JSON value decodes into, as `%T` prints it.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}
