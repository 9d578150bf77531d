//! Workspace paths (`root:org:ws`).
#![no_main]

use faros_core::properties;

libfuzzer_sys::fuzz_target!(|input: &str| properties::cluster_path(input));
