//! `?continue=` tokens.
#![no_main]

use faros_embedded_kcp::properties;

libfuzzer_sys::fuzz_target!(|input: (&str, u64, &[u8])| {
    if !input.2.is_empty() {
        properties::continue_token(input.0, input.1, input.2);
    }
});
