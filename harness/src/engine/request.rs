//! Writes as raw HTTP requests, so a step sees everything the API answered: the status code,
//! the `Status` of a refusal with its causes, and `Warning` headers. What a step expected of
//! the answer ([`WriteExpectation`]) is judged here.

use crate::suite::{ExpectedError, WriteExpectation};
use http::{Method, Request};
use serde_json::{Value, json};

/// The field manager kproof writes as.
pub const FIELD_MANAGER: &str = "kproof";

/// One request a step sent and what came back, as the flight recorder keeps it.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// `POST`, `PATCH`, `DELETE`.
    pub method: Method,
    /// Path and query.
    pub url: String,
    /// The body sent.
    pub sent: Option<Value>,
    /// HTTP status code.
    pub code: u16,
    /// `Warning` headers, their text only (`299 - "text"` → `text`).
    pub warnings: Vec<String>,
    /// The body received (JSON, or the text as a string).
    pub body: Value,
}

impl Exchange {
    /// Whether the API accepted the request.
    pub fn succeeded(&self) -> bool {
        (200..300).contains(&self.code)
    }

    /// The exchange as JSON, for the flight record.
    pub fn to_json(&self) -> Value {
        json!({
            "method": self.method.as_str(),
            "url": self.url,
            "sent": self.sent,
            "code": self.code,
            "warnings": self.warnings,
            "body": self.body,
        })
    }

    /// One line naming the refusal: `409 AlreadyExists: configmaps "x" already exists`.
    pub fn refusal_line(&self) -> String {
        let s = |k: &str| self.body.get(k).and_then(Value::as_str).unwrap_or_default();
        let mut line = self.code.to_string();
        if !s("reason").is_empty() {
            line.push(' ');
            line.push_str(s("reason"));
        }
        let message = if s("message").is_empty() { self.body.as_str().unwrap_or_default() } else { s("message") };
        if !message.is_empty() {
            line.push_str(": ");
            line.push_str(message.trim());
        }
        line
    }
}

/// Percent-encodes one path segment (names a row gives on purpose may hold anything).
pub fn path_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Sends a request with a JSON (or YAML, for apply) body and reads the whole answer.
pub async fn send(
    client: &kube::Client,
    method: Method,
    url: String,
    content_type: &str,
    body: Option<Value>,
) -> Result<Exchange, String> {
    let sent = body.clone();
    let bytes = match &body {
        Some(v) => serde_json::to_vec(v).map_err(|e| format!("cannot encode the request body: {e}"))?,
        None => Vec::new(),
    };
    let request = Request::builder()
        .method(method.clone())
        .uri(&url)
        .header(http::header::CONTENT_TYPE, content_type)
        .header(http::header::ACCEPT, "application/json")
        .body(kube::client::Body::from(bytes))
        .map_err(|e| format!("cannot build {method} {url}: {e}"))?;
    let response = client.send(request).await.map_err(|e| format!("{method} {url}: {e}"))?;
    let code = response.status().as_u16();
    let warnings = response
        .headers()
        .get_all(http::header::WARNING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(warning_text)
        .collect();
    let raw =
        response.into_body().collect_bytes().await.map_err(|e| format!("{method} {url}: reading the answer: {e}"))?;
    let body =
        serde_json::from_slice(&raw).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&raw).into_owned()));
    Ok(Exchange { method, url, sent, code, warnings, body })
}

/// The text of a `Warning` header value (`299 - "text"`), or the whole value if it is not in
/// that form.
fn warning_text(header: &str) -> String {
    let rest = header.trim();
    let after_code = rest.split_once(' ').map(|(_, r)| r.trim_start()).unwrap_or(rest);
    let after_agent = after_code.split_once(' ').map(|(_, r)| r.trim_start()).unwrap_or(after_code);
    match after_agent.strip_prefix('"').and_then(|r| r.rfind('"').map(|end| &r[..end])) {
        Some(text) => text.replace("\\\"", "\""),
        None => rest.to_string(),
    }
}

/// Judges an answer against what the step expected. `Ok` when it matches (success without
/// expectations, or the expected refusal and warning); `Err` says expected against observed.
pub fn judge(what: &str, exchange: &Exchange, expect: &WriteExpectation) -> Result<(), String> {
    match (&expect.expect_error, exchange.succeeded()) {
        (None, false) => return Err(format!("{what}: {}", exchange.refusal_line())),
        (Some(e), true) => {
            return Err(format!(
                "{what}: expected the API to refuse it ({}), but it succeeded ({})",
                describe(e),
                exchange.code
            ));
        }
        (Some(e), false) => {
            let mismatches = refusal_mismatches(e, exchange);
            if !mismatches.is_empty() {
                return Err(format!(
                    "{what}: refused, but not as expected:\n{}\nobserved: {}",
                    mismatches.join("\n"),
                    exchange.refusal_line()
                ));
            }
        }
        (None, true) => {}
    }
    if let Some(w) = &expect.expect_warning
        && !exchange.warnings.iter().any(|have| have.contains(w.as_str()))
    {
        let seen = if exchange.warnings.is_empty() { "none".to_string() } else { format!("{:?}", exchange.warnings) };
        return Err(format!("{what}: expected a Warning containing {w:?}, observed {seen}"));
    }
    Ok(())
}

/// A one-line description of an expected refusal: `409 AlreadyExists, cause FieldValueInvalid at spec.x`.
pub fn describe(e: &ExpectedError) -> String {
    let mut parts: Vec<String> = Vec::new();
    match (e.code, &e.reason) {
        (Some(c), Some(r)) => parts.push(format!("{c} {r}")),
        (Some(c), None) => parts.push(c.to_string()),
        (None, Some(r)) => parts.push(r.clone()),
        (None, None) => {}
    }
    for c in &e.causes {
        let mut cause = "cause".to_string();
        if let Some(t) = &c.cause_type {
            cause.push(' ');
            cause.push_str(t);
        }
        if let Some(f) = &c.field {
            cause.push_str(&format!(" at {f}"));
        }
        if let Some(m) = &c.message {
            cause.push_str(&format!(" saying {m:?}"));
        }
        parts.push(cause);
    }
    if let Some(m) = &e.message {
        parts.push(format!("message containing {m:?}"));
    }
    if let Some(m) = &e.message_matches {
        parts.push(format!("message matching /{m}/"));
    }
    if parts.is_empty() { "any error".to_string() } else { parts.join(", ") }
}

fn refusal_mismatches(e: &ExpectedError, x: &Exchange) -> Vec<String> {
    let mut out = Vec::new();
    let status = &x.body;
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    if let Some(code) = e.code
        && code != x.code
    {
        out.push(format!("  code: expected {code}, observed {}", x.code));
    }
    if let Some(reason) = &e.reason
        && *reason != text(status, "reason")
    {
        out.push(format!("  reason: expected {reason:?}, observed {:?}", text(status, "reason")));
    }
    let message = text(status, "message");
    if let Some(m) = &e.message
        && !message.contains(m.as_str())
    {
        out.push(format!("  message: expected to contain {m:?}, observed {message:?}"));
    }
    if let Some(re) = &e.message_matches {
        match regex::Regex::new(re) {
            Ok(r) if r.is_match(&message) => {}
            Ok(_) => out.push(format!("  message: expected to match /{re}/, observed {message:?}")),
            Err(err) => out.push(format!("  messageMatches: not a valid regex: {err}")),
        }
    }
    let observed: Vec<&Value> =
        status.pointer("/details/causes").and_then(Value::as_array).map(|a| a.iter().collect()).unwrap_or_default();
    for want in &e.causes {
        let found = observed.iter().any(|c| {
            want.field.as_ref().is_none_or(|f| *f == text(c, "field"))
                && want.cause_type.as_ref().is_none_or(|t| *t == text(c, "reason"))
                && want.message.as_ref().is_none_or(|m| text(c, "message").contains(m.as_str()))
        });
        if !found {
            let have: Vec<String> = observed
                .iter()
                .map(|c| format!("{} at {}: {}", text(c, "reason"), text(c, "field"), text(c, "message")))
                .collect();
            out.push(format!(
                "  causes: expected {}, observed [{}]",
                describe(&ExpectedError { causes: vec![want.clone()], ..Default::default() }),
                have.join("; ")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::ExpectedCause;

    fn refusal(code: u16, body: Value) -> Exchange {
        Exchange { method: Method::POST, url: "/x".into(), sent: None, code, warnings: vec![], body }
    }

    fn too_many() -> Exchange {
        refusal(
            422,
            json!({"kind": "Status", "reason": "Invalid", "message": "ResourceClaim.resource.k8s.io \"c\" is invalid: status.reservedFor: Too many: 257: must have at most 256 items",
                   "details": {"causes": [{"reason": "FieldValueTooMany", "field": "status.reservedFor", "message": "Too many: 257: must have at most 256 items"}]}}),
        )
    }

    fn expect(e: ExpectedError) -> WriteExpectation {
        WriteExpectation { expect_error: Some(e), expect_warning: None }
    }

    #[test]
    fn an_expected_refusal_matches_code_reason_causes_and_message() {
        let e = ExpectedError {
            code: Some(422),
            reason: Some("Invalid".into()),
            causes: vec![ExpectedCause {
                field: Some("status.reservedFor".into()),
                cause_type: Some("FieldValueTooMany".into()),
                message: None,
            }],
            message: Some("at most 256".into()),
            message_matches: Some("^ResourceClaim.* is invalid".into()),
        };
        assert_eq!(judge("patch", &too_many(), &expect(e)), Ok(()));
    }

    #[test]
    fn a_refusal_of_another_kind_names_expected_and_observed() {
        let e = ExpectedError {
            code: Some(409),
            causes: vec![ExpectedCause { field: Some("spec".into()), ..Default::default() }],
            ..Default::default()
        };
        let err = judge("patch ResourceClaim c", &too_many(), &expect(e)).unwrap_err();
        assert!(
            err.starts_with("patch ResourceClaim c: refused, but not as expected:\n  code: expected 409, observed 422"),
            "{err}"
        );
        assert!(
            err.contains("causes: expected cause at spec, observed [FieldValueTooMany at status.reservedFor: Too many"),
            "{err}"
        );
        assert!(err.ends_with("observed: 422 Invalid: ResourceClaim.resource.k8s.io \"c\" is invalid: status.reservedFor: Too many: 257: must have at most 256 items"), "{err}");
    }

    #[test]
    fn success_when_a_refusal_was_expected_fails() {
        let ok = refusal(200, json!({"kind": "ResourceClaim"}));
        let e = ExpectedError { code: Some(422), reason: Some("Invalid".into()), ..Default::default() };
        assert_eq!(
            judge("patch ResourceClaim c", &ok, &expect(e)).unwrap_err(),
            "patch ResourceClaim c: expected the API to refuse it (422 Invalid), but it succeeded (200)"
        );
    }

    #[test]
    fn an_unexpected_refusal_fails_with_the_status() {
        assert_eq!(
            judge("create Pod p", &too_many(), &WriteExpectation::default()).unwrap_err(),
            "create Pod p: 422 Invalid: ResourceClaim.resource.k8s.io \"c\" is invalid: status.reservedFor: Too many: 257: must have at most 256 items"
        );
    }

    #[test]
    fn warnings_are_matched_by_substring() {
        let mut x = refusal(201, json!({}));
        x.warnings = vec![warning_text(r#"299 - "unknown field \"spec.bogus\"""#)];
        assert_eq!(x.warnings, vec![r#"unknown field "spec.bogus""#]);
        let w = |s: &str| WriteExpectation { expect_error: None, expect_warning: Some(s.into()) };
        assert_eq!(judge("create", &x, &w("spec.bogus")), Ok(()));
        assert_eq!(
            judge("create", &x, &w("deprecated")).unwrap_err(),
            r#"create: expected a Warning containing "deprecated", observed ["unknown field \"spec.bogus\""]"#
        );
    }

    #[test]
    fn path_segments_are_escaped() {
        assert_eq!(path_segment("a b/c"), "a%20b%2Fc");
        assert_eq!(path_segment("ok-1.x"), "ok-1.x");
    }
}
