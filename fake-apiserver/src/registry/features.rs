//! kube-apiserver's feature gates as a typed set: `--feature-gates` parsing, the 1.37
//! defaults, and the question each kind's strategy asks ("is this gate on?").

use std::collections::BTreeMap;

/// A kube-apiserver feature gate the server knows, with its Kubernetes 1.37 default. The
/// DRA and scheduling strategies read them (`registry::resource`, `registry::scheduling`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FeatureGate {
    /// `DRAWorkloadResourceClaims` (KEP-5729): ResourceClaims reserved for PodGroups. Beta in
    /// 1.37, off by default.
    DraWorkloadResourceClaims,
    /// `DRAResourceClaimGranularStatusAuthorization`: writing `status.allocation` or
    /// `status.reservedFor` also needs `resourceclaims/binding`. Beta, on by default.
    DraResourceClaimGranularStatusAuthorization,
    /// `GenericWorkload`: the Workload and PodGroup scheduling APIs. Off by default.
    GenericWorkload,
    /// `DRAReservedForWorkloads` (KEP-5194 as proposed, never shipped): `spec.reservedFor` and
    /// `status.allocation.reservedForAnyPod`. Off by default.
    DraReservedForWorkloads,
}

impl FeatureGate {
    /// Every gate the server knows.
    pub const ALL: [FeatureGate; 4] = [
        FeatureGate::DraWorkloadResourceClaims,
        FeatureGate::DraResourceClaimGranularStatusAuthorization,
        FeatureGate::GenericWorkload,
        FeatureGate::DraReservedForWorkloads,
    ];

    /// The gate's name as `--feature-gates` spells it.
    pub fn name(self) -> &'static str {
        match self {
            FeatureGate::DraWorkloadResourceClaims => "DRAWorkloadResourceClaims",
            FeatureGate::DraResourceClaimGranularStatusAuthorization => "DRAResourceClaimGranularStatusAuthorization",
            FeatureGate::GenericWorkload => "GenericWorkload",
            FeatureGate::DraReservedForWorkloads => "DRAReservedForWorkloads",
        }
    }

    /// Whether the gate is on when nothing sets it.
    pub fn default_enabled(self) -> bool {
        matches!(self, FeatureGate::DraResourceClaimGranularStatusAuthorization)
    }

    /// The gate named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|g| g.name() == name)
    }
}

/// Why a feature-gate setting was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeatureGateError {
    /// A gate the server does not know.
    #[error("unrecognized feature gate: {name} (known: {})", known_gates())]
    Unknown {
        /// The name given.
        name: String,
    },
    /// A setting that is not `Name=true` or `Name=false`.
    #[error("invalid value of {name}: {value:?}, err: strconv.ParseBool: parsing {value:?}: invalid syntax")]
    InvalidValue {
        /// The gate.
        name: String,
        /// The value given.
        value: String,
    },
    /// A setting without `=`.
    #[error("missing bool value for {setting}")]
    MissingValue {
        /// The setting as given.
        setting: String,
    },
}

fn known_gates() -> String {
    FeatureGate::ALL.map(FeatureGate::name).join(", ")
}

/// The feature gates set explicitly; the others have their defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeatureGates {
    set: BTreeMap<FeatureGate, bool>,
}

impl FeatureGates {
    /// Parses `Name=true`/`Name=false` settings, as `--feature-gates` takes them (each item may
    /// also hold several, comma-separated). Unknown names and values other than Go's booleans
    /// are errors.
    pub fn parse<S: AsRef<str>>(settings: &[S]) -> Result<Self, FeatureGateError> {
        let mut gates = FeatureGates::default();
        for item in settings {
            for setting in item.as_ref().split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let Some((name, value)) = setting.split_once('=') else {
                    return Err(FeatureGateError::MissingValue { setting: setting.to_string() });
                };
                let (name, value) = (name.trim(), value.trim());
                let gate =
                    FeatureGate::from_name(name).ok_or_else(|| FeatureGateError::Unknown { name: name.to_string() })?;
                let enabled = match value {
                    "1" | "t" | "T" | "true" | "TRUE" | "True" => true,
                    "0" | "f" | "F" | "false" | "FALSE" | "False" => false,
                    _ => {
                        return Err(FeatureGateError::InvalidValue {
                            name: name.to_string(),
                            value: value.to_string(),
                        });
                    }
                };
                gates.set.insert(gate, enabled);
            }
        }
        Ok(gates)
    }

    /// Whether `gate` is on.
    pub fn enabled(&self, gate: FeatureGate) -> bool {
        self.set.get(&gate).copied().unwrap_or_else(|| gate.default_enabled())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[test]
    fn gates_have_their_defaults_until_set() {
        let gates = FeatureGates::parse(&["DRAWorkloadResourceClaims=true,GenericWorkload=true"]).unwrap();
        assert!(gates.enabled(FeatureGate::DraWorkloadResourceClaims));
        assert!(gates.enabled(FeatureGate::GenericWorkload));
        assert!(gates.enabled(FeatureGate::DraResourceClaimGranularStatusAuthorization), "on by default");
        assert!(!gates.enabled(FeatureGate::DraReservedForWorkloads), "off by default");
        let off = FeatureGates::parse(&["DRAResourceClaimGranularStatusAuthorization=false"]).unwrap();
        assert!(!off.enabled(FeatureGate::DraResourceClaimGranularStatusAuthorization));
    }

    #[rstest]
    #[case::unknown(
        "DRAReservedForWorkload=true",
        "unrecognized feature gate: DRAReservedForWorkload (known: DRAWorkloadResourceClaims, DRAResourceClaimGranularStatusAuthorization, GenericWorkload, DRAReservedForWorkloads)"
    )]
    #[case::not_a_bool(
        "GenericWorkload=yes",
        "invalid value of GenericWorkload: \"yes\", err: strconv.ParseBool: parsing \"yes\": invalid syntax"
    )]
    #[case::no_value("GenericWorkload", "missing bool value for GenericWorkload")]
    fn bad_settings_are_refused(#[case] setting: &str, #[case] message: &str) {
        assert_eq!(FeatureGates::parse(&[setting]).unwrap_err().to_string(), message);
    }
}
