//! `cargo +nightly fuzz run config`: see `dgt_relay::fuzz::config`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = dgt_relay::fuzz::config(data);
});
