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

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(shared_corpus)");
    println!("cargo::rerun-if-changed=build.rs");
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
