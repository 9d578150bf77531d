//! Heartbeat and Enable request bodies.
#![no_main]

use faros_hub_api::properties;

libfuzzer_sys::fuzz_target!(|data: &[u8]| properties::request_bodies(data));
