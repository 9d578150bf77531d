//! RFC 7386 merge patches (idempotence).
#![no_main]

use faros_embedded_kcp::properties;

libfuzzer_sys::fuzz_target!(|input: (&[u8], &[u8])| properties::merge_patch(input.0, input.1));
