//! What KubeRay's RayCluster, RayService and RayJob controllers share
//! (`ray-operator/controllers/ray/common` and `utils`): pod and service construction from a
//! RayCluster spec, and the spec hash.

pub mod hash;
pub mod pods;
