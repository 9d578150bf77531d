//! Server-side apply, applied twice (idempotence).
#![no_main]

use faros_embedded_kcp::properties;

libfuzzer_sys::fuzz_target!(|input: (&[u8], &[u8])| properties::server_side_apply_twice(input.0, input.1));
