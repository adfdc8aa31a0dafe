//! What `kproof run --backend kind` and `kproof kind ...` take from the command line. Compiled
//! in every build, so a build without the `kind` feature still knows the flags and can say
//! how to get a build that has them.

use std::path::PathBuf;

/// The one-line answer of a build without the `kind` feature.
pub const NOT_BUILT: &str = "this kproof was built without the kind backend: rebuild with `cargo build -p kproof --features kind` (it needs a Docker daemon at run time)";

/// How the kind cluster is made and what runs in it.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct KindOptions {
    /// With `--backend kind`: the KubeRay operator image to run instead of the pinned release
    /// (e.g. `kuberay/operator:dev` from `make docker-build`). An image the local Docker daemon
    /// has is loaded into the node; any other is pulled by the node.
    #[arg(long, value_name = "IMAGE")]
    pub ray_operator_image: Option<String>,
    /// With `--backend kind`: the Kueue image to run instead of the pinned release; loaded or
    /// pulled like `--ray-operator-image`.
    #[arg(long, value_name = "IMAGE")]
    pub kueue_image: Option<String>,
    /// With `--backend kind`: the KubeRay release whose manifests (CRDs, RBAC, Deployment) are
    /// installed (default: the pin in `upstream/kuberay/go.mod`). The manifests directory must
    /// hold that version's files (`kproof kind fetch-script` writes the commands).
    #[arg(long, value_name = "VERSION")]
    pub kuberay_version: Option<String>,
    /// With `--backend kind`: where the release manifests and `istioctl` are (written by the
    /// script `kproof kind fetch-script` prints).
    #[arg(long, value_name = "DIR", default_value = "target/kind-manifests")]
    pub kind_manifests: PathBuf,
    /// With `--backend kind`: the kind node image (default: the pinned `kindest/node`).
    #[arg(long, value_name = "IMAGE")]
    pub node_image: Option<String>,
    /// With `--backend kind`: keep the node container after the run (to read its logs with
    /// `docker logs`; remove it with `docker rm -f -v`).
    #[arg(long)]
    pub keep_cluster: bool,
}
