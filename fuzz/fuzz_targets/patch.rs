//! JSON patches, merge patches and strategic merge patches against stored objects, as a dry run.
#![no_main]
use kproof_fuzz::{OBJECTS, Target, pick};
use libfuzzer_sys::fuzz_target;

const TYPES: [&str; 3] =
    ["application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json"];

fuzz_target!(|data: &[u8]| {
    let Some((which, body)) = pick(data) else { return };
    let which = usize::from(which);
    let url = format!("{}?dryRun=All", OBJECTS[which % OBJECTS.len()]);
    let content_type = TYPES[(which / OBJECTS.len()) % TYPES.len()];
    Target::get().send(http::Method::PATCH, &url, content_type, body.to_vec());
});
