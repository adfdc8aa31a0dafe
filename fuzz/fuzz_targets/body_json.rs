//! Create bodies as JSON: decoding, defaulting, validation and admission of every kind picked,
//! as a dry run.
#![no_main]
use kproof_fuzz::{COLLECTIONS, Target, pick};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((which, body)) = pick(data) else { return };
    let url = format!("{}?dryRun=All&fieldValidation=Strict", COLLECTIONS[usize::from(which) % COLLECTIONS.len()]);
    Target::get().send(http::Method::POST, &url, "application/json", body.to_vec());
});
