//! `apiextensions.k8s.io`: CustomResourceDefinitions, and the custom resources they define.

pub(crate) mod conversion;
pub(crate) mod crd;
pub(crate) mod custom_resource;
