//! The RayCluster reconciler, modelled on KubeRay v1.7.0.
