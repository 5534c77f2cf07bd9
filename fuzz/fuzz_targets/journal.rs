//! `cargo +nightly fuzz run journal`: see `dgt_relay::fuzz::journal`. Each input is
//! written to a file in a temporary folder of this process and replayed.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("dgt-relay-fuzz-journal-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("a temporary folder");
        d
    })
}

fuzz_target!(|data: &[u8]| {
    let _ = dgt_relay::fuzz::journal(data, dir());
});
