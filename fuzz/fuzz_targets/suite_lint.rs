//! Suite files: loading and `kproof lint` of any text give issues with a place, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::sync::OnceLock;

fuzz_target!(|data: &[u8]| {
    static KINDS: OnceLock<kproof::suite::kinds::KindCatalog> = OnceLock::new();
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(suite) = kproof::suite::load_suite_str(Path::new("fuzz.yaml"), text) else { return };
    let kinds = KINDS.get_or_init(kproof::actors::kind_catalog);
    let _ = kproof::suite::lint::lint(&[suite], Path::new("/nonexistent-fixtures"), kinds);
});
