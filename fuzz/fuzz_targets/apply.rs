//! Server-side apply configurations (YAML or JSON) against stored objects and new ones, with and
//! without force, as a dry run: field ownership, conflicts and the merge of apply.
#![no_main]
use kproof_fuzz::{OBJECTS, Target, pick};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((which, body)) = pick(data) else { return };
    let which = usize::from(which);
    let object = OBJECTS[which % OBJECTS.len()];
    let url = match which / OBJECTS.len() % 3 {
        0 => format!("{object}?dryRun=All&fieldManager=fuzz"),
        1 => format!("{object}?dryRun=All&fieldManager=fuzz&force=true"),
        _ => format!("{object}-new?dryRun=All&fieldManager=fuzz"),
    };
    Target::get().send(http::Method::PATCH, &url, "application/apply-patch+yaml", body.to_vec());
});
