//! Request paths, `/clusters/<path>/...` included.
#![no_main]

use faros_embedded_kcp::properties;

libfuzzer_sys::fuzz_target!(|input: &str| properties::request_path(input));
