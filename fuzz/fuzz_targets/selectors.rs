//! Label and field selectors: a selector that parses writes back as one that parses to the same
//! text, and matching never panics.
#![no_main]
use apimachinery::{FieldSelector, LabelSelector};
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let labels: BTreeMap<String, String> =
        [("app", "web"), ("tier", "1"), ("kubernetes.io/name", "x")].map(|(k, v)| (k.into(), v.into())).into();
    if let Ok(s) = LabelSelector::parse(text) {
        let written = s.to_string();
        let again = LabelSelector::parse(&written).unwrap_or_else(|e| panic!("{text:?} wrote {written:?}: {e}"));
        assert_eq!(again.to_string(), written, "{text:?}");
        assert_eq!(again.matches(&labels), s.matches(&labels), "{text:?}");
    }
    if let Ok(s) = FieldSelector::parse(text) {
        // apimachinery sorts the raw terms before parsing them, so a `==` term, printed as `=`,
        // can move once: the text is stable from the second writing on, as Go's is.
        let written = s.to_string();
        let again = FieldSelector::parse(&written).unwrap_or_else(|e| panic!("{text:?} wrote {written:?}: {e}"));
        let rewritten = again.to_string();
        let third = FieldSelector::parse(&rewritten).unwrap_or_else(|e| panic!("{text:?} wrote {rewritten:?}: {e}"));
        assert_eq!(third.to_string(), rewritten, "{text:?}");
        let lookup = |f: &str| (f == "metadata.name").then(|| "web".to_string());
        assert_eq!(again.matches(lookup), s.matches(lookup), "{text:?}");
    }
});
