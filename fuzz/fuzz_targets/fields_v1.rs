//! `managedFields[].fieldsV1` decoding and encoding.
#![no_main]

use faros_embedded_kcp::properties;

libfuzzer_sys::fuzz_target!(|data: &[u8]| properties::fields_v1(data));
