//! CustomResourceDefinition schemas (structural rules, defaults, list types, CEL rules) and
//! objects validated against them: the input's first line is the schema, the rest the object.
#![no_main]
use kproof_fuzz::{CRD_URL, Target, widget_crd};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let target = Target::get();
    let (schema, object) = match data.iter().position(|b| *b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b"{}"[..]),
    };
    let Ok(schema) = serde_json::from_slice::<serde_json::Value>(schema) else { return };
    let crd = widget_crd(schema);
    if target.send(http::Method::PUT, CRD_URL, "application/json", crd.to_string().into_bytes()).status.is_success() {
        let url = "/apis/fuzz.kproof.dev/v1/namespaces/default/widgets?dryRun=All";
        target.send(http::Method::POST, url, "application/json", object.to_vec());
    }
});
