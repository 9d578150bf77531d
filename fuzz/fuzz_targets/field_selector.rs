//! `?fieldSelector=` parsing and matching.
#![no_main]

use faros_embedded_kcp::properties;

libfuzzer_sys::fuzz_target!(|input: (&str, &str)| properties::field_selector(input.0, input.1));
