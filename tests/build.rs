//! Sets `cfg(shared_corpus)` when the project's shared corpus folder, `../shared/corpus`
//! beside the repository, exists. A fresh clone does not have it (CI does); tests that need
//! it are written `#[cfg_attr(not(shared_corpus), ignore = "needs ../shared/corpus beside
//! the clone")]`, so that `cargo test` lists them as ignored, with the reason, instead of
//! failing or passing without testing anything.
//!
//! Cargo reruns this script when the folder changes or disappears. It cannot watch for a
//! folder that does not exist yet without rebuilding this crate on every run, so a shared
//! corpus put beside the clone after the first build is seen once this script reruns
//! (`touch tests/build.rs`); the test `shared_corpus_is_looked_for_at_build_time` fails
//! until then, saying so.
//!
//! It also sets `cfg(qemu)` when `qemu-system-arm` is on the `PATH` and the Rust target
//! `thumbv7em-none-eabihf` is installed: the relay box's firmware can then be built and
//! booted (`tests/tests/firmware.rs`). `.ci/run` installs both before the tests.

use std::path::{Path, PathBuf};
use std::process::Command;

/// True when the firmware can be built and booted here.
fn qemu_and_target() -> bool {
    let on_path = |name: &str| {
        std::env::var_os("PATH")
            .is_some_and(|paths| std::env::split_paths(&paths).any(|p| p.join(name).is_file()))
    };
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let target = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .is_some_and(|root| Path::new(root.trim()).join("lib/rustlib/thumbv7em-none-eabihf/lib").is_dir());
    on_path("qemu-system-arm") && target
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(shared_corpus)");
    println!("cargo::rustc-check-cfg=cfg(qemu)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=PATH");
    if qemu_and_target() {
        println!("cargo::rustc-cfg=qemu");
    } else {
        println!(
            "cargo::warning=qemu-system-arm or the thumbv7em-none-eabihf target is missing: \
             the relay box's QEMU tests are ignored"
        );
    }
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let shared = manifest.join("../../shared/corpus");
    if shared.is_dir() {
        println!("cargo::rustc-cfg=shared_corpus");
        println!("cargo::rerun-if-changed={}", shared.display());
    } else {
        println!(
            "cargo::warning=../shared/corpus is not beside the repository: \
             the tests that need it are ignored (tests/data/ has what the others need)"
        );
    }
}
