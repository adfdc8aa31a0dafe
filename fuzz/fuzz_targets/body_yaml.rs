//! Create bodies as YAML (`application/yaml`), as kubectl may send them, as a dry run.
#![no_main]
use kproof_fuzz::{COLLECTIONS, Target, pick};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((which, body)) = pick(data) else { return };
    let url = format!("{}?dryRun=All", COLLECTIONS[usize::from(which) % COLLECTIONS.len()]);
    Target::get().send(http::Method::POST, &url, "application/yaml", body.to_vec());
});
