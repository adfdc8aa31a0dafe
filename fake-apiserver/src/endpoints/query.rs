//! The query parameters of the API and their validation.

use crate::error::{ApiError, ApiResult, StatusCause};
use crate::registry::ResourceType;
use crate::storage::StoredObject;
use apimachinery::{FieldSelector, LabelSelector};

/// The query parameters the API understands.
#[derive(Debug, Default, Clone)]
pub(super) struct Query {
    pub label_selector: String,
    pub field_selector: String,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    pub watch: bool,
    pub allow_watch_bookmarks: bool,
    /// A negative one ends the watch at once (its timer fires as it starts); 0 is the default.
    pub timeout_seconds: Option<i64>,
    pub send_initial_events: Option<bool>,
    pub field_manager: Option<String>,
    /// The `dryRun` values as given; each verb validates them against its options kind.
    pub dry_run_values: Vec<String>,
    pub propagation_policy: Option<String>,
    pub grace_period_seconds: Option<i64>,
    pub orphan_dependents: Option<bool>,
    /// `force` of a server-side apply (forbidden on other patches).
    pub force: Option<bool>,
    /// `fieldValidation`: Ignore, Warn or Strict.
    pub field_validation: Option<String>,
}

/// A boolean query parameter as kube-apiserver reads it (`runtime.Convert_Slice_string_To_bool`):
/// `0` and `false` (any case) are false, anything else, the empty string included, is true.
fn parse_bool(v: &str) -> bool {
    !(v == "0" || v.eq_ignore_ascii_case("false"))
}

/// `ValidateDryRun`: every value must be `All`. The error is `field.NotSupported` on `dryRun`
/// with the whole list as the bad value (printed with Go's `%#v`).
pub(super) fn dry_run_causes(values: &[String]) -> Vec<StatusCause> {
    if values.iter().all(|v| v == "All") {
        return Vec::new();
    }
    let listed: Vec<String> = values.iter().map(|v| serde_json::to_string(v).unwrap_or_default()).collect();
    vec![StatusCause::field(
        "FieldValueNotSupported",
        "dryRun",
        format!("Unsupported value: []string{{{}}}: supported values: \"All\"", listed.join(", ")),
    )]
}

/// `ValidateFieldManager`: at most 128 bytes, every character printable (Go's
/// `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII space).
fn field_manager_causes(manager: &str) -> Vec<StatusCause> {
    use crate::registry::field::{Path, invalid, too_long};
    let path = Path::root("fieldManager");
    let mut causes = Vec::new();
    if manager.len() > 128 {
        causes.push(too_long(&path, 128));
    }
    for (i, c) in manager.char_indices() {
        if c.is_control() || (c.is_whitespace() && c != ' ') {
            // Go's %#U: U+0001 (unprintable characters show no glyph).
            causes.push(invalid(&path, manager, &format!("invalid character U+{:04X} (at position {i})", c as u32)));
        }
    }
    causes
}

/// 422 Invalid for failed options validation: `NewInvalid(GroupKind{Group: "meta.k8s.io",
/// Kind: options_kind}, "", causes)`.
pub(super) fn invalid_options(options_kind: &str, causes: Vec<StatusCause>) -> ApiError {
    ApiError::invalid("meta.k8s.io", options_kind, "", causes)
}

fn parse_int<T: std::str::FromStr>(name: &str, v: &str) -> ApiResult<T> {
    v.parse().map_err(|_| ApiError::bad_request(format!("invalid value for {name}: {v:?} is not an integer")))
}

impl Query {
    /// Parses a query string (400 for integers that are not). A parameter given more than
    /// once takes its first value, as Go's conversion of `url.Values` does (`dryRun`, a list,
    /// keeps them all).
    pub fn parse(raw: Option<&str>) -> ApiResult<Self> {
        let mut q = Query::default();
        let mut seen = std::collections::HashSet::new();
        for (k, v) in url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
            if k != "dryRun" && !seen.insert(k.clone()) {
                continue;
            }
            let v = v.into_owned();
            match k.as_ref() {
                "labelSelector" => q.label_selector = v,
                "fieldSelector" => q.field_selector = v,
                "limit" => {
                    let n: i64 = parse_int("limit", &v)?;
                    q.limit = (n > 0).then_some(n as usize);
                }
                "continue" => q.continue_token = Some(v).filter(|s| !s.is_empty()),
                "resourceVersion" => q.resource_version = Some(v).filter(|s| !s.is_empty()),
                "resourceVersionMatch" => q.resource_version_match = Some(v).filter(|s| !s.is_empty()),
                "watch" => q.watch = parse_bool(&v),
                "allowWatchBookmarks" => q.allow_watch_bookmarks = parse_bool(&v),
                "timeoutSeconds" => q.timeout_seconds = Some(parse_int("timeoutSeconds", &v)?),
                "sendInitialEvents" => q.send_initial_events = Some(parse_bool(&v)),
                "fieldManager" => q.field_manager = Some(v).filter(|s| !s.is_empty()),
                "dryRun" => q.dry_run_values.push(v),
                "propagationPolicy" => q.propagation_policy = Some(v),
                "gracePeriodSeconds" => q.grace_period_seconds = Some(parse_int("gracePeriodSeconds", &v)?),
                "orphanDependents" => q.orphan_dependents = Some(parse_bool(&v)),
                "force" => q.force = Some(parse_bool(&v)),
                "fieldValidation" => q.field_validation = Some(v),
                _ => {}
            }
        }
        Ok(q)
    }

    /// Whether the write is a dry run, after validating the verb's options as
    /// `ValidateCreateOptions`, `ValidateUpdateOptions` and `ValidatePatchOptions` do
    /// (apimachinery v0.37.2 pkg/apis/meta/v1/validation/validation.go): `leading` (the patch
    /// rules), then the field manager, `dryRun` and `fieldValidation`, all in one 422.
    pub fn write_options(&self, options_kind: &str, leading: Vec<StatusCause>) -> ApiResult<bool> {
        let mut causes = leading;
        causes.extend(field_manager_causes(self.field_manager.as_deref().unwrap_or_default()));
        causes.extend(dry_run_causes(&self.dry_run_values));
        causes.extend(crate::fieldmanager::field_validation::unsupported(self.field_validation.as_deref()));
        if !causes.is_empty() {
            return Err(invalid_options(options_kind, causes));
        }
        Ok(!self.dry_run_values.is_empty())
    }

    /// [`Query::write_options`] of a create or an update.
    pub fn dry_run(&self, options_kind: &str) -> ApiResult<bool> {
        self.write_options(options_kind, Vec::new())
    }

    /// The label and field selectors, validated against what `rt` can select on.
    pub fn selectors(&self, rt: &ResourceType) -> ApiResult<(LabelSelector, FieldSelector)> {
        let labels = LabelSelector::parse(&self.label_selector)
            .map_err(|e| ApiError::bad_request(format!("unable to parse requirement: {e}")))?;
        let fields = FieldSelector::parse(&self.field_selector)
            .map_err(|e| ApiError::bad_request(format!("invalid field selector: {e}")))?;
        if let Some(f) = fields.fields().find(|f| !rt.supports_field(f)) {
            return Err(ApiError::bad_request(format!("field label not supported: {f}")));
        }
        Ok((labels, fields))
    }
}

/// Whether an object passes a label and a field selector.
pub(super) fn matches(obj: &StoredObject, labels: &LabelSelector, fields: &FieldSelector) -> bool {
    labels.matches(&obj.labels) && fields.matches(|f| obj.field(f))
}
