//! Go durations: what parses writes back (`Duration.String`) as text that parses to the same.
#![no_main]
use apimachinery::{format_go_duration, parse_go_duration};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(d) = parse_go_duration(text) else { return };
    let written = format_go_duration(d);
    let again = parse_go_duration(&written).unwrap_or_else(|e| panic!("{text:?} wrote {written:?}: {e}"));
    assert_eq!(again, d, "{text:?} → {written:?}");
});
