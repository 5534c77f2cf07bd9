//! The corpus copies in `tests/data/` against the shared corpus they come from, and the
//! build-time check for the shared corpus itself.
//!
//! Tests that need `../shared/corpus` (the project's shared corpus folder beside the
//! repository, which a fresh clone lacks) carry
//! `#[cfg_attr(not(shared_corpus), ignore = "needs ../shared/corpus beside the clone")]`;
//! `tests/build.rs` sets the cfg.

use std::path::Path;

use dgt_e2e_tests::acceptance::{corpus_dir, data_dir};

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every copy is the shared file byte for byte (the TWIC excerpt: its first bytes), so the
/// provenance notes stay true.
#[test]
#[cfg_attr(not(shared_corpus), ignore = "needs ../shared/corpus beside the clone")]
fn copies_match_the_shared_corpus() {
    let (data, shared) = (data_dir(), corpus_dir());
    let mut whole =
        vec!["worldcup2025-dgt-livechess.pgn".to_owned(), "livechess-2.2.5-sample-round.pgn".to_owned()];
    for name in ["1", "2", "johan"] {
        for ext in ["inbytes", "json"] {
            whole.push(format!("board-captures/{name}.{ext}"));
        }
    }
    whole.extend(
        ["board-captures/1.uci", "board-captures/2.uci", "board-captures/johan.pgn"].map(String::from),
    );
    for f in &whole {
        assert!(
            read(&data.join(f)) == read(&shared.join(f)),
            "tests/data/{f} differs from ../shared/corpus/{f}"
        );
    }
    let excerpt = read(&data.join("twic1599-excerpt.pgn"));
    let twic = read(&shared.join("twic1599-otb-noclock.pgn"));
    assert!(twic.starts_with(&excerpt), "tests/data/twic1599-excerpt.pgn is not the start of the TWIC file");
    let games = |b: &[u8]| String::from_utf8_lossy(b).lines().filter(|l| l.starts_with("[Event ")).count();
    assert_eq!(games(&excerpt), 40, "the excerpt holds the first 40 games");
    assert!(twic[excerpt.len()..].starts_with(b"[Event "), "the excerpt ends between two games");
}

/// `cfg(shared_corpus)` is decided when this crate is built; a shared corpus put beside the
/// clone later is not seen until `tests/build.rs` reruns, and its tests would stay ignored.
#[test]
fn shared_corpus_is_looked_for_at_build_time() {
    let there = corpus_dir().is_dir();
    assert!(
        there == cfg!(shared_corpus),
        "{} {}, but it {} when this crate was built: run `touch tests/build.rs` and test again",
        corpus_dir().display(),
        if there { "exists" } else { "is gone" },
        if cfg!(shared_corpus) { "existed" } else { "did not exist" },
    );
}
