//! `cargo +nightly fuzz run ws_messages`: see `dgt_relay::fuzz::ws_messages`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = dgt_relay::fuzz::ws_messages(data);
});
