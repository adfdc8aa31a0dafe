//! A write of a Job's status (kube-apiserver v1.37.2
//! `pkg/apis/batch/validation/validation.go` `validateJobStatus` and `ValidateJobStatusUpdate`,
//! with the options `pkg/registry/batch/job/strategy.go` `getStatusValidationOptions` derives
//! from what the write changes; JobManagedBy is GA).

use super::indexes::{failed_overlapping_completed, validate_indexes_format};
use crate::error::StatusCause;
use crate::registry::field::{self, Bad, Path};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// `JobStatusValidationOptions`: which transition rules a write is held to.
#[derive(Debug, Default)]
struct Options {
    reject_decreasing_succeeded: bool,
    reject_decreasing_failed: bool,
    reject_disabling_terminal_condition: bool,
    reject_invalid_completed_indexes: bool,
    reject_invalid_failed_indexes: bool,
    reject_failed_indexes_overlapping_completed: bool,
    reject_completed_indexes_for_non_indexed: bool,
    reject_failed_indexes_without_backoff_per_index: bool,
    reject_failed_without_failure_target: bool,
    reject_complete_without_success_criteria_met: bool,
    reject_finished_with_active_pods: bool,
    reject_finished_without_start_time: bool,
    reject_finished_with_uncounted_pods: bool,
    reject_start_time_update_unsuspended: bool,
    reject_completion_before_start: bool,
    reject_mutating_completion_time: bool,
    reject_complete_without_completion_time: bool,
    reject_not_complete_with_completion_time: bool,
    reject_complete_with_failed: bool,
    reject_complete_with_failure_target: bool,
    reject_more_ready_than_active: bool,
    reject_finished_with_terminating_pods: bool,
}

fn conditions(job: &Value) -> &[Value] {
    job["status"]["conditions"].as_array().map_or(&[], Vec::as_slice)
}

/// `IsConditionTrue` / `IsConditionFalse`.
fn condition_is(job: &Value, type_: &str, status: &str) -> bool {
    conditions(job).iter().any(|c| c["type"] == type_ && c["status"] == status)
}

fn is_true(job: &Value, type_: &str) -> bool {
    condition_is(job, type_, "True")
}

/// `IsJobFinished`.
fn finished(job: &Value) -> bool {
    is_true(job, "Complete") || is_true(job, "Failed")
}

/// An `int32` status counter (absent is 0).
fn count(job: &Value, key: &str) -> i64 {
    job["status"][key].as_i64().unwrap_or(0)
}

fn status_field<'a>(job: &'a Value, key: &str) -> Option<&'a Value> {
    job["status"].get(key).filter(|v| !v.is_null())
}

/// `metav1.Time` equality of two optional timestamps.
fn same_time(a: Option<&Value>, b: Option<&Value>) -> bool {
    let parse = |v: Option<&Value>| v.and_then(Value::as_str).and_then(|s| s.parse::<jiff::Timestamp>().ok());
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => x == y || parse(a).is_some_and(|t| Some(t) == parse(b)),
        _ => false,
    }
}

/// `getStatusValidationOptions`: most rules apply only when the write changes what they
/// look at, so a Job made invalid by a spec change can still have its status updated.
fn options(new: &Value, old: &Value) -> Options {
    let indexed = new["spec"]["completionMode"] == json!("Indexed");
    let changed = |f: &dyn Fn(&Value) -> bool| f(old) != f(new);
    let changed_field = |key: &str| old["status"].get(key) != new["status"].get(key);
    let finished_changed = changed(&finished);
    let complete_changed = changed(&|j| is_true(j, "Complete"));
    let failed_changed = changed(&|j| is_true(j, "Failed"));
    let failure_target_changed = changed(&|j| is_true(j, "FailureTarget"));
    let criteria_met_changed = changed(&|j| is_true(j, "SuccessCriteriaMet"));
    let completed_indexes_changed = old["status"]["completedIndexes"].as_str().unwrap_or("")
        != new["status"]["completedIndexes"].as_str().unwrap_or("");
    let failed_indexes_changed = status_field(old, "failedIndexes") != status_field(new, "failedIndexes");
    let active_changed = count(old, "active") != count(new, "active");
    let start_changed = !same_time(status_field(old, "startTime"), status_field(new, "startTime"));
    let completion_changed = !same_time(status_field(old, "completionTime"), status_field(new, "completionTime"));
    let uncounted_changed = !apimachinery::json::semantically_equal(
        &old["status"]["uncountedTerminatedPods"],
        &new["status"]["uncountedTerminatedPods"],
    );
    let suspended_with_zero_completions =
        new["spec"]["suspend"] == json!(true) && new["spec"]["completions"] == json!(0);
    let resuming = is_true(old, "Suspended") && condition_is(new, "Suspended", "False");
    Options {
        reject_decreasing_succeeded: !indexed || new["spec"].get("completions") != new["spec"].get("parallelism"),
        reject_decreasing_failed: true,
        reject_disabling_terminal_condition: true,
        reject_invalid_completed_indexes: completed_indexes_changed,
        reject_invalid_failed_indexes: failed_indexes_changed,
        reject_completed_indexes_for_non_indexed: completed_indexes_changed,
        reject_failed_indexes_without_backoff_per_index: failed_indexes_changed,
        reject_failed_indexes_overlapping_completed: failed_indexes_changed || completed_indexes_changed,
        reject_failed_without_failure_target: failed_changed || failed_indexes_changed,
        reject_complete_without_success_criteria_met: complete_changed || criteria_met_changed,
        reject_finished_with_active_pods: finished_changed || active_changed,
        reject_finished_without_start_time: (finished_changed || start_changed) && !suspended_with_zero_completions,
        reject_finished_with_uncounted_pods: finished_changed || uncounted_changed,
        reject_start_time_update_unsuspended: start_changed && !resuming,
        reject_completion_before_start: start_changed || completion_changed,
        reject_mutating_completion_time: true,
        reject_not_complete_with_completion_time: complete_changed || completion_changed,
        reject_complete_without_completion_time: complete_changed || completion_changed,
        reject_complete_with_failed: complete_changed || failed_changed,
        reject_complete_with_failure_target: complete_changed || failure_target_changed,
        reject_more_ready_than_active: changed_field("ready") || active_changed,
        reject_finished_with_terminating_pods: finished_changed || changed_field("terminating"),
    }
}

/// `ValidateJobStatusUpdate` of a write of `new`'s status over `old`.
pub(crate) fn validate_job_status_update(new: &Value, old: &Value) -> Vec<StatusCause> {
    let opts = options(new, old);
    let path = Path::root("status");
    let mut out = validate_job_status(new, &path, &opts);
    if opts.reject_disabling_terminal_condition {
        for c in ["Failed", "Complete", "FailureTarget"] {
            if is_true(old, c) && !is_true(new, c) {
                out.push(field::invalid_omit_value(
                    &path.child("conditions"),
                    &format!("cannot disable the terminal {c}=True condition"),
                ));
            }
        }
    }
    if opts.reject_decreasing_failed && count(new, "failed") < count(old, "failed") {
        out.push(field::invalid(&path.child("failed"), count(new, "failed"), "cannot decrease the failed counter"));
    }
    if opts.reject_decreasing_succeeded && count(new, "succeeded") < count(old, "succeeded") {
        out.push(field::invalid(
            &path.child("succeeded"),
            count(new, "succeeded"),
            "cannot decrease the succeeded counter",
        ));
    }
    let (new_completion, old_completion) = (status_field(new, "completionTime"), status_field(old, "completionTime"));
    if opts.reject_mutating_completion_time
        && let (Some(n), Some(_)) = (new_completion, old_completion)
        && !same_time(new_completion, old_completion)
    {
        out.push(field::invalid(&path.child("completionTime"), Bad::of(n), field::FIELD_IMMUTABLE));
    }
    let (new_start, old_start) = (status_field(new, "startTime"), status_field(old, "startTime"));
    if opts.reject_start_time_update_unsuspended
        && old_start.is_some()
        && !same_time(old_start, new_start)
        && new["spec"]["suspend"] != json!(true)
    {
        out.push(field::invalid(
            &path.child("startTime"),
            new_start.map_or(Bad::Null, Bad::of),
            "field is immutable for unsuspended job once set",
        ));
    }
    if is_true(old, "SuccessCriteriaMet") && !is_true(new, "SuccessCriteriaMet") {
        out.push(field::invalid_omit_value(
            &path.child("conditions"),
            "cannot disable the SuccessCriteriaMet=True condition",
        ));
    }
    if is_true(old, "Complete") && !is_true(old, "SuccessCriteriaMet") && is_true(new, "SuccessCriteriaMet") {
        out.push(field::invalid_omit_value(
            &path.child("conditions"),
            "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions",
        ));
    }
    out
}

/// `validateJobStatus`.
fn validate_job_status(job: &Value, path: &Path, opts: &Options) -> Vec<StatusCause> {
    let mut out = Vec::new();
    let spec = &job["spec"];
    let nonnegative = |out: &mut Vec<StatusCause>, key: &str| {
        if let Some(n) = job["status"][key].as_i64().filter(|n| *n < 0) {
            out.push(field::invalid(&path.child(key), n, "must be greater than or equal to 0"));
        }
    };
    for k in ["active", "succeeded", "failed", "ready", "terminating"] {
        nonnegative(&mut out, k);
    }
    let uncounted = status_field(job, "uncountedTerminatedPods");
    if let Some(u) = uncounted {
        let at = path.child("uncountedTerminatedPods");
        let mut seen = BTreeSet::new();
        for list in ["succeeded", "failed"] {
            for (i, uid) in u[list].as_array().into_iter().flatten().enumerate() {
                let uid = uid.as_str().unwrap_or_default();
                let p = at.child(list).index(i);
                if uid.is_empty() {
                    out.push(field::invalid(&p, uid, "must not be empty"));
                } else if !seen.insert(uid) {
                    out.push(field::duplicate(&p, uid));
                }
            }
        }
    }
    let conditions_path = path.child("conditions");
    let (complete, failed) = (is_true(job, "Complete"), is_true(job, "Failed"));
    let (failure_target, criteria_met) = (is_true(job, "FailureTarget"), is_true(job, "SuccessCriteriaMet"));
    if opts.reject_complete_with_failed && complete && failed {
        out.push(field::invalid_omit_value(&conditions_path, "cannot set Complete=True and Failed=true conditions"));
    }
    if opts.reject_complete_with_failure_target && complete && failure_target {
        out.push(field::invalid_omit_value(
            &conditions_path,
            "cannot set Complete=True and FailureTarget=true conditions",
        ));
    }
    let (start, completion) = (status_field(job, "startTime"), status_field(job, "completionTime"));
    let completion_path = path.child("completionTime");
    if opts.reject_not_complete_with_completion_time
        && let Some(t) = completion.filter(|_| !complete)
    {
        out.push(field::invalid(
            &completion_path,
            Bad::of(t),
            "cannot set completionTime when there is no Complete=True condition",
        ));
    }
    if opts.reject_complete_without_completion_time && completion.is_none() && complete {
        out.push(field::required(&completion_path, "completionTime is required for Complete jobs"));
    }
    if opts.reject_completion_before_start
        && let (Some(s), Some(c)) = (start, completion)
    {
        let parse = |v: &Value| v.as_str().and_then(|s| s.parse::<jiff::Timestamp>().ok());
        if let (Some(st), Some(ct)) = (parse(s), parse(c))
            && ct < st
        {
            out.push(field::invalid(&completion_path, Bad::of(c), "must be equal to or after `startTime`"));
        }
    }
    if opts.reject_failed_without_failure_target && failed && !failure_target {
        out.push(field::invalid_omit_value(
            &conditions_path,
            "cannot set Failed=True condition without the FailureTarget=true condition",
        ));
    }
    if opts.reject_complete_without_success_criteria_met && complete && !criteria_met {
        out.push(field::invalid_omit_value(
            &conditions_path,
            "cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
        ));
    }
    let is_finished = finished(job);
    if opts.reject_finished_with_active_pods && count(job, "active") > 0 && is_finished {
        out.push(field::invalid(&path.child("active"), count(job, "active"), "active>0 is invalid for finished job"));
    }
    if opts.reject_finished_without_start_time && start.is_none() && is_finished {
        out.push(field::required(&path.child("startTime"), "startTime is required for finished job"));
    }
    if opts.reject_finished_with_uncounted_pods
        && is_finished
        && let Some(u) = uncounted
    {
        let len = |k: &str| u[k].as_array().map_or(0, Vec::len);
        if len("failed") + len("succeeded") > 0 {
            let go = json!({"Succeeded": u.get("succeeded").cloned().unwrap_or(Value::Null),
                            "Failed": u.get("failed").cloned().unwrap_or(Value::Null)});
            out.push(field::invalid(
                &path.child("uncountedTerminatedPods"),
                Bad::Raw(go.to_string()),
                "must be empty for finished job",
            ));
        }
    }
    let completions = spec.get("completions").and_then(Value::as_i64);
    let completed_indexes = job["status"]["completedIndexes"].as_str().unwrap_or("");
    let failed_indexes = status_field(job, "failedIndexes").and_then(Value::as_str);
    let has_backoff_per_index = spec.get("backoffLimitPerIndex").is_some_and(|v| !v.is_null());
    if opts.reject_invalid_completed_indexes
        && let Some(c) = completions
        && let Err(e) = validate_indexes_format(completed_indexes, c)
    {
        out.push(field::invalid(
            &path.child("completedIndexes"),
            completed_indexes,
            &format!("error parsing completedIndexes: {e}"),
        ));
    }
    if opts.reject_invalid_failed_indexes
        && has_backoff_per_index
        && let (Some(c), Some(f)) = (completions, failed_indexes)
        && let Err(e) = validate_indexes_format(f, c)
    {
        out.push(field::invalid(&path.child("failedIndexes"), f, &format!("error parsing failedIndexes: {e}")));
    }
    let indexed = spec["completionMode"] == json!("Indexed");
    if opts.reject_completed_indexes_for_non_indexed && !completed_indexes.is_empty() && !indexed {
        out.push(field::invalid(
            &path.child("completedIndexes"),
            completed_indexes,
            "cannot set non-empty completedIndexes when non-indexed completion mode",
        ));
    }
    if opts.reject_failed_indexes_without_backoff_per_index
        && !has_backoff_per_index
        && let Some(f) = failed_indexes
    {
        out.push(field::invalid(
            &path.child("failedIndexes"),
            f,
            "cannot set non-null failedIndexes when backoffLimitPerIndex is null",
        ));
    }
    if opts.reject_failed_indexes_overlapping_completed
        && let (Some(c), Some(f)) = (completions, failed_indexes)
        && let Some(e) = failed_overlapping_completed(completed_indexes, f, c)
    {
        out.push(field::invalid(&path.child("failedIndexes"), f, &e));
    }
    if opts.reject_finished_with_terminating_pods
        && let Some(t) = job["status"]["terminating"].as_i64().filter(|t| *t > 0)
        && is_finished
    {
        out.push(field::invalid(&path.child("terminating"), t, "terminating>0 is invalid for finished job"));
    }
    if opts.reject_more_ready_than_active
        && let Some(r) = job["status"]["ready"].as_i64().filter(|r| *r > count(job, "active"))
    {
        out.push(field::invalid(&path.child("ready"), r, "cannot set more ready pods than active"));
    }
    if criteria_met && failed {
        out.push(field::invalid_omit_value(
            &conditions_path,
            "cannot set SuccessCriteriaMet=True and Failed=true conditions",
        ));
    }
    if criteria_met && failure_target {
        out.push(field::invalid_omit_value(
            &conditions_path,
            "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions",
        ));
    }
    if spec.get("successPolicy").is_some_and(|v| !v.is_null()) && !criteria_met && complete {
        out.push(field::invalid_omit_value(
            &conditions_path,
            "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True",
        ));
    }
    out
}
