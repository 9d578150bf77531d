//! The `--token-auth-file` format.
#![no_main]

use faros_core::properties;

libfuzzer_sys::fuzz_target!(|input: &str| properties::token_file(input));
