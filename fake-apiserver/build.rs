//! Compiles the vendored upstream `.proto` files (see `proto/README.md`) into one descriptor
//! set that the protobuf transcoder loads at start.

use prost::Message;
use std::path::{Path, PathBuf};

fn protos(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            protos(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path);
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("proto");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    protos(&root, &mut files)?;
    files.sort();
    let relative: Vec<PathBuf> =
        files.iter().filter_map(|f| f.strip_prefix(&root).ok().map(Path::to_path_buf)).collect();
    let set = protox::compile(&relative, [&root])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?).join("kubernetes.desc");
    std::fs::write(out, set.encode_to_vec())?;
    Ok(())
}
