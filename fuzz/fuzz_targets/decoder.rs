//! `cargo +nightly fuzz run decoder`: see `dgt_relay::fuzz::decoder`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = dgt_relay::fuzz::decoder(data);
});
