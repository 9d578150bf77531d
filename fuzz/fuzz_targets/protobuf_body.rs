//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`) from Go clients.
#![no_main]

use faros_embedded_kcp::properties;

libfuzzer_sys::fuzz_target!(|data: &[u8]| properties::protobuf_body(data));
