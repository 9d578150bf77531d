//! `X-Faros-Assertion` identity assertions (verification never accepts a forgery).
#![no_main]

use faros_core::properties;

libfuzzer_sys::fuzz_target!(|input: (&str, &str)| properties::assertion(input.0, input.1));
