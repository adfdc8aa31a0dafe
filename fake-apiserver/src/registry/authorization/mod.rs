//! `authorization.k8s.io`.

pub(crate) mod reviews;
