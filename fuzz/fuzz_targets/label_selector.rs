//! `?labelSelector=` parsing, canonical printing and matching.
#![no_main]

use faros_embedded_kcp::properties;

libfuzzer_sys::fuzz_target!(|input: (&str, std::collections::BTreeMap<String, String>)| {
    let labels = input.1.into_iter().map(|(k, v)| (k, v.into())).collect();
    properties::label_selector(input.0, &labels);
});
