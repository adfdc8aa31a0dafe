//! TEMPORARY compile stub; replaced by the real structural-schema module.
#[derive(Debug, Clone)]
pub struct StructuralSchema;
#[derive(Debug, thiserror::Error)]
pub enum SchemaError { #[error("{0}")] Invalid(String) }
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldCause { pub reason: &'static str, pub field: String, pub message: String }
impl StructuralSchema {
    pub fn compile(_: &serde_json::Value) -> Result<Self, SchemaError> { Ok(Self) }
    pub fn prune(&self, _: &mut serde_json::Value) -> Vec<String> { vec![] }
    pub fn apply_defaults(&self, _: &mut serde_json::Value) {}
    pub fn validate(&self, _: &serde_json::Value) -> Vec<FieldCause> { vec![] }
    pub fn has_status(&self) -> bool { false }
}
