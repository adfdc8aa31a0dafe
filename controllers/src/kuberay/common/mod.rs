//! What KubeRay's RayCluster, RayService and RayJob controllers share
//! (`ray-operator/controllers/ray/common` and `utils`): pod and service construction from a
//! RayCluster spec, the spec hash, validation, generated names, and the suspend rules a
//! RayService applies to the clusters it makes (which a Kueue integration builds on).

pub mod cache;
pub mod conditions;
pub mod hash;
pub mod names;
pub mod pods;
pub mod suspend;
pub mod validation;
