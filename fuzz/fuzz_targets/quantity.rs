//! Resource quantities: a quantity that parses reads back from its canonical form as the same
//! amount, and sums and multiples never panic.
#![no_main]
use apimachinery::quantity::{Quantity, parse_milli};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = parse_milli(text);
    let Some(q) = Quantity::parse(text) else { return };
    let canonical = q.to_string();
    let again = Quantity::parse(&canonical).unwrap_or_else(|| panic!("{text:?} wrote {canonical:?}, which does not parse"));
    assert_eq!(again.as_nanos(), q.as_nanos(), "{text:?} → {canonical:?}");
    let _ = q.plus(again).times(3).milli_value();
});
