//! A Job's spec on create and on every write (kube-apiserver v1.37.2
//! `pkg/apis/batch/validation/validation.go`: `validateGeneratedSelector`, `ValidateJobSpec`,
//! `validateJobSpec`, `validatePodReplacementPolicy`, `validateNameAllowsCompletions`).

use super::pod_failure_policy::validate_pod_failure_policy;
use super::success_policy::{self, validate_success_policy};
use crate::error::StatusCause;
use crate::registry::apps::workload::{go_labels_json, selector_matches};
use crate::registry::core::pod_spec::validate_template;
use crate::registry::field::{self, Bad, Path};
use crate::registry::meta::validate_label_selector;
use apimachinery::validation::{dns1123_label_errors, dns1123_subdomain_errors, regex_error};
use serde_json::{Value, json};

/// `maxParallelismForIndexedJob`.
const MAX_INDEXED_PARALLELISM: i64 = 100_000;
/// `maxFailedIndexesForIndexedJob`.
const MAX_FAILED_INDEXES: i64 = 100_000;
/// `completionsSoftLimit`.
const COMPLETIONS_SOFT_LIMIT: i64 = 100_000;
/// `parallelismLimitForHighCompletions`.
const HIGH_COMPLETIONS_PARALLELISM: i64 = 10_000;
/// `maxFailedIndexesLimitForHighCompletions`.
const HIGH_COMPLETIONS_MAX_FAILED: i64 = 10_000;
/// `maxManagedByLength`.
const MAX_MANAGED_BY: usize = 63;
/// `httpPathFmt` of `IsDomainPrefixedPath`.
const HTTP_PATH_FMT: &str = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+";

pub(crate) const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
pub(crate) const JOB_NAME: &str = "batch.kubernetes.io/job-name";
pub(crate) const LEGACY_CONTROLLER_UID: &str = "controller-uid";
pub(crate) const LEGACY_JOB_NAME: &str = "job-name";

fn int(spec: &Value, key: &str) -> Option<i64> {
    spec.get(key).and_then(Value::as_i64)
}

fn present(spec: &Value, key: &str) -> bool {
    spec.get(key).is_some_and(|v| !v.is_null())
}

/// `ValidateNonnegativeField` of an optional integer.
fn nonnegative(out: &mut Vec<StatusCause>, spec: &Value, key: &str, path: &Path) {
    if let Some(n) = int(spec, key).filter(|n| *n < 0) {
        out.push(field::invalid(&path.child(key), n, "must be greater than or equal to 0"));
    }
}

/// `IsDomainPrefixedPath` (apimachinery `pkg/util/validation`).
fn domain_prefixed_path(out: &mut Vec<StatusCause>, path: &Path, value: &str) {
    if value.is_empty() {
        out.push(field::required(path, ""));
        return;
    }
    let Some((host, rest)) = value.split_once('/').filter(|(h, r)| !h.is_empty() && !r.is_empty()) else {
        out.push(field::invalid(path, value, r#"must be a domain-prefixed path (such as "acme.io/foo")"#));
        return;
    };
    for msg in dns1123_subdomain_errors(host) {
        out.push(field::invalid(path, host, &msg));
    }
    let http_path_char = |c: char| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c);
    if !rest.chars().all(http_path_char) {
        out.push(field::invalid(path, rest, &regex_error("Invalid path", HTTP_PATH_FMT, &[])));
    }
}

/// `ValidateHasLabel`: the template carries `key=expected`.
fn has_label(out: &mut Vec<StatusCause>, template_meta: &Value, key: &str, expected: &str) {
    let at = Path::root("spec").child("template").child("metadata").child("labels").key(key);
    let labels = template_meta.get("labels").unwrap_or(&Value::Null);
    match labels.get(key) {
        None => out.push(field::required(&at, expected)),
        Some(v) if v.as_str() != Some(expected) => {
            out.push(field::invalid(&at, Bad::Raw(go_labels_json(labels)), &format!("must be '{expected}'")))
        }
        Some(_) => {}
    }
}

/// `validateGeneratedSelector` on create, with `RequirePrefixedLabels` (always on create): a
/// generated selector's labels are on the template and the selector selects them.
pub(crate) fn validate_generated_selector(job: &Value) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = &job["spec"];
    if spec["manualSelector"] == json!(true) || !present(spec, "selector") {
        return out;
    }
    let uid = job["metadata"]["uid"].as_str().unwrap_or_default();
    let name = job["metadata"]["name"].as_str().unwrap_or_default();
    if uid.is_empty() {
        out.push(field::required(&Path::root("metadata").child("uid"), ""));
    }
    let meta = &spec["template"]["metadata"];
    for (key, value) in [(LEGACY_CONTROLLER_UID, uid), (LEGACY_JOB_NAME, name), (CONTROLLER_UID, uid), (JOB_NAME, name)]
    {
        has_label(&mut out, meta, key, value);
    }
    let expected = json!({CONTROLLER_UID: uid, JOB_NAME: name, LEGACY_CONTROLLER_UID: uid, LEGACY_JOB_NAME: name});
    if validate_label_selector(&spec["selector"], &Path::root("spec").child("selector")).is_empty()
        && !selector_matches(&spec["selector"], Some(&expected))
    {
        out.push(field::invalid(
            &Path::root("spec").child("selector"),
            Bad::Raw(spec["selector"].to_string()),
            "`selector` not auto-generated",
        ));
    }
    out
}

/// `validateNameAllowsCompletions`: an Indexed Job's last pod hostname (`<name>-<index>`) must
/// be a DNS label.
pub(crate) fn validate_name_allows_completions(job: &Value) -> Vec<StatusCause> {
    let spec = &job["spec"];
    let completions = int(spec, "completions").unwrap_or(0);
    if spec["completionMode"] != json!("Indexed") || completions <= 0 {
        return Vec::new();
    }
    let name = job["metadata"]["name"].as_str().unwrap_or_default();
    let hostname = format!("{name}-{}", completions - 1);
    if dns1123_label_errors(&hostname).is_empty() {
        return Vec::new();
    }
    vec![field::invalid(
        &Path::root("metadata").child("name"),
        name,
        &format!("will not able to create pod with invalid DNS label: {hostname}"),
    )]
}

/// `ValidateJobSpec`: `validateJobSpec`, then the selector (required, valid, matching the
/// template's labels).
pub(crate) fn validate_job_spec(spec: &Value, path: &Path) -> Vec<StatusCause> {
    let mut out = validate_spec_fields(spec, path);
    let selector = spec.get("selector").filter(|s| !s.is_null());
    match selector {
        None => out.push(field::required(&path.child("selector"), "")),
        Some(sel) => out.extend(validate_label_selector(sel, &path.child("selector"))),
    }
    // A nil selector converts to one that selects nothing; one that does not convert is skipped.
    let labels = spec["template"]["metadata"].get("labels").filter(|l| !l.is_null());
    let matches = selector.is_some_and(|sel| selector_matches(sel, labels));
    if !matches {
        out.push(field::invalid(
            &path.child("template").child("metadata").child("labels"),
            labels.map_or(Bad::Null, |l| Bad::Raw(go_labels_json(l))),
            "`selector` does not match template `labels`",
        ));
    }
    out
}

/// `validateJobSpec`: the counts, the managing controller, the completion mode and its
/// limits, the failure and success policies, the replacement policy, the template and its
/// restart policy.
fn validate_spec_fields(spec: &Value, path: &Path) -> Vec<StatusCause> {
    let mut out = Vec::new();
    for k in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
    ] {
        nonnegative(&mut out, spec, k, path);
    }
    let max_failed = int(spec, "maxFailedIndexes");
    let per_index = int(spec, "backoffLimitPerIndex");
    let (completions, parallelism) = (int(spec, "completions"), int(spec, "parallelism"));
    if present(spec, "maxFailedIndexes") {
        nonnegative(&mut out, spec, "maxFailedIndexes", path);
        if !present(spec, "backoffLimitPerIndex") {
            out.push(field::required(&path.child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"));
        }
    }
    if let Some(managed_by) = spec.get("managedBy").and_then(Value::as_str) {
        domain_prefixed_path(&mut out, &path.child("managedBy"), managed_by);
        if managed_by.len() > MAX_MANAGED_BY {
            out.push(field::too_long(&path.child("managedBy"), MAX_MANAGED_BY));
        }
    }
    let mode = spec.get("completionMode").and_then(Value::as_str);
    if let Some(mode) = mode {
        if mode != "NonIndexed" && mode != "Indexed" {
            out.push(field::not_supported(&path.child("completionMode"), mode, &["NonIndexed", "Indexed"]));
        }
        if mode == "Indexed" {
            if !present(spec, "completions") {
                out.push(field::required(&path.child("completions"), "when completion mode is Indexed"));
            }
            if let Some(p) = parallelism.filter(|p| *p > MAX_INDEXED_PARALLELISM) {
                out.push(field::invalid(
                    &path.child("parallelism"),
                    p,
                    &format!("must be less than or equal to {MAX_INDEXED_PARALLELISM} when completion mode is Indexed"),
                ));
            }
            if let (Some(c), Some(m)) = (completions, max_failed)
                && m > c
            {
                out.push(field::invalid(
                    &path.child("maxFailedIndexes"),
                    m,
                    "must be less than or equal to completions",
                ));
            }
            if let Some(m) = max_failed.filter(|m| *m > MAX_FAILED_INDEXES) {
                out.push(field::invalid(
                    &path.child("maxFailedIndexes"),
                    m,
                    &format!("must be less than or equal to {MAX_FAILED_INDEXES}"),
                ));
            }
            if completions.is_some_and(|c| c > COMPLETIONS_SOFT_LIMIT) && per_index.is_some() {
                let high = format!(
                    "must be less than or equal to {{}} when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
                );
                if max_failed.is_none() {
                    out.push(field::required(
                        &path.child("maxFailedIndexes"),
                        &format!("must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"),
                    ));
                }
                if let Some(p) = parallelism.filter(|p| *p > HIGH_COMPLETIONS_PARALLELISM) {
                    let msg = high.replace("{}", &HIGH_COMPLETIONS_PARALLELISM.to_string());
                    out.push(field::invalid(&path.child("parallelism"), p, &msg));
                }
                if let Some(m) = max_failed.filter(|m| *m > HIGH_COMPLETIONS_MAX_FAILED) {
                    let msg = high.replace("{}", &HIGH_COMPLETIONS_MAX_FAILED.to_string());
                    out.push(field::invalid(&path.child("maxFailedIndexes"), m, &msg));
                }
            }
        }
    }
    if mode.is_none_or(|m| m == "NonIndexed") {
        if let Some(n) = per_index {
            out.push(field::invalid(&path.child("backoffLimitPerIndex"), n, "requires indexed completion mode"));
        }
        if let Some(n) = max_failed {
            out.push(field::invalid(&path.child("maxFailedIndexes"), n, "requires indexed completion mode"));
        }
    }
    let has_failure_policy = present(spec, "podFailurePolicy");
    if has_failure_policy {
        out.extend(validate_pod_failure_policy(spec, &path.child("podFailurePolicy")));
    }
    if present(spec, "successPolicy") {
        if mode != Some("Indexed") {
            out.push(field::invalid(
                &path.child("successPolicy"),
                Bad::Raw(success_policy::go_internal_json(&spec["successPolicy"]).to_string()),
                "requires indexed completion mode",
            ));
        } else {
            out.extend(validate_success_policy(spec, &path.child("successPolicy")));
        }
    }
    replacement_policy(&mut out, spec, has_failure_policy, &path.child("podReplacementPolicy"));
    let template_path = path.child("template");
    out.extend(validate_template(&spec["template"], &template_path));
    restart_policy(&mut out, spec, has_failure_policy, &template_path.child("spec").child("restartPolicy"));
    out
}

/// `validatePodReplacementPolicy`: with a pod failure policy only `Failed`.
fn replacement_policy(out: &mut Vec<StatusCause>, spec: &Value, has_failure_policy: bool, path: &Path) {
    let Some(policy) = spec.get("podReplacementPolicy").and_then(Value::as_str) else { return };
    if has_failure_policy {
        if policy != "Failed" {
            out.push(field::not_supported(path, policy, &["Failed"]));
        }
    } else if !["Failed", "TerminatingOrFailed"].contains(&policy) {
        out.push(field::not_supported(path, policy, &["Failed", "TerminatingOrFailed"]));
    }
}

/// The template's restart policy: `OnFailure` or `Never` (the defaulted `Always` reported as
/// missing), and only `Never` with a pod failure policy.
fn restart_policy(out: &mut Vec<StatusCause>, spec: &Value, has_failure_policy: bool, path: &Path) {
    let restart = spec["template"]["spec"].get("restartPolicy").and_then(Value::as_str).unwrap_or_default();
    if restart == "Always" || restart.is_empty() {
        out.push(field::required(path, r#"valid values: "OnFailure", "Never""#));
    } else if restart != "OnFailure" && restart != "Never" {
        out.push(field::not_supported(path, restart, &["OnFailure", "Never"]));
    } else if has_failure_policy && restart != "Never" {
        out.push(field::invalid(path, restart, r#"only "Never" is supported when podFailurePolicy is specified"#));
    }
}
