//! `metav1.Condition` lists as `k8s.io/apimachinery/pkg/api/meta` edits them
//! (`SetStatusCondition`, `RemoveStatusCondition`, `IsStatusConditionTrue`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// `True`, `False` or `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// It does not.
    False,
    /// The controller cannot tell.
    Unknown,
}

impl ConditionStatus {
    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

impl From<bool> for ConditionStatus {
    fn from(b: bool) -> Self {
        if b { ConditionStatus::True } else { ConditionStatus::False }
    }
}

/// `meta.SetStatusCondition`: adds the condition, or updates it in place; the transition time
/// moves only when the status changes.
pub fn set(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: impl Into<ConditionStatus>,
    reason: &str,
    message: &str,
    now: &Time,
    observed_generation: Option<i64>,
) {
    let status = status.into().as_str().to_string();
    if let Some(c) = conditions.iter_mut().find(|c| c.type_ == type_) {
        if c.status != status {
            c.last_transition_time = now.clone();
        }
        c.status = status;
        c.reason = reason.into();
        c.message = message.into();
        c.observed_generation = observed_generation;
    } else {
        conditions.push(Condition {
            type_: type_.into(),
            status,
            reason: reason.into(),
            message: message.into(),
            last_transition_time: now.clone(),
            observed_generation,
        });
    }
}

/// `meta.RemoveStatusCondition`.
pub fn remove(conditions: &mut Vec<Condition>, type_: &str) {
    conditions.retain(|c| c.type_ != type_);
}

/// `meta.FindStatusCondition`.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// `meta.IsStatusConditionTrue`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Time {
        Time(jiff::Timestamp::from_second(s).unwrap())
    }

    #[test]
    fn transition_time_moves_only_with_the_status() {
        let mut c = Vec::new();
        set(&mut c, "Ready", false, "Initializing", "m", &at(1), Some(1));
        set(&mut c, "Ready", false, "Other", "m2", &at(2), Some(2));
        assert_eq!((c[0].reason.as_str(), c[0].last_transition_time.clone()), ("Other", at(1)));
        set(&mut c, "Ready", true, "NonZeroServeEndpoints", "", &at(3), Some(2));
        assert_eq!(c[0].last_transition_time, at(3));
        assert!(is_true(&c, "Ready"));
        set(&mut c, "UpgradeInProgress", ConditionStatus::Unknown, "NoActiveCluster", "", &at(3), Some(2));
        assert_eq!(find(&c, "UpgradeInProgress").unwrap().status, "Unknown");
        remove(&mut c, "Ready");
        assert!(find(&c, "Ready").is_none());
    }
}
