//! RFC 6902 JSON patches applied to JSON documents.
#![no_main]

use faros_embedded_kcp::properties;

libfuzzer_sys::fuzz_target!(|input: (&[u8], &[u8])| properties::json_patch(input.0, input.1));
