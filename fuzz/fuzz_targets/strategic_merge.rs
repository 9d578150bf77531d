//! Strategic merge patches against built-in schemas.
#![no_main]

use faros_embedded_kcp::properties;

libfuzzer_sys::fuzz_target!(|input: (&[u8], &[u8])| properties::strategic_merge(input.0, input.1));
