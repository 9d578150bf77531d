//! `metav1.LabelSelector` objects (claims, bindings) from JSON.
#![no_main]

use faros_embedded_kcp::properties;

libfuzzer_sys::fuzz_target!(|data: &[u8]| properties::label_selector_object(data));
