//! Reads with any query: label and field selectors, resourceVersion and resourceVersionMatch,
//! continue tokens, limits, watch options, on a collection or an object.
#![no_main]
use kproof_fuzz::{COLLECTIONS, OBJECTS, Target, pick};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((which, query)) = pick(data) else { return };
    let Ok(query) = std::str::from_utf8(query) else { return };
    let which = usize::from(which);
    let base = if which % 2 == 0 { COLLECTIONS[which / 2 % COLLECTIONS.len()] } else { OBJECTS[which / 2 % OBJECTS.len()] };
    // A watch that is allowed to start ends at once; its stream is not read.
    let query = if query.contains("watch=") { format!("{query}&timeoutSeconds=0") } else { query.to_string() };
    Target::get().send(http::Method::GET, &format!("{base}?{query}"), "application/json", Vec::new());
});
