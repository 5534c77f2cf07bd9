//! `cargo +nightly fuzz run session`: see `dgt_relay::fuzz::session`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = dgt_relay::fuzz::session(data);
});
