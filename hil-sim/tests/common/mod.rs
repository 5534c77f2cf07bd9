//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use dgt_hil_sim::pgn::{SourceGame, read_games};
use pgn_reader::{RawTag, Reader, SanPlus, Visitor};

/// A corpus file copied into the repository (`tests/data/`, see its `PROVENANCE.md`).
pub fn corpus(file: &str) -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR")).canonicalize().expect("manifest dir");
    here.join("../tests/data").join(file)
}

/// Games of a corpus file (each file is read once per test binary).
pub fn corpus_games(file: &str) -> Vec<SourceGame> {
    static CACHE: OnceLock<Mutex<HashMap<String, Vec<SourceGame>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = cache.lock().expect("cache");
    map.entry(file.to_string()).or_insert_with(|| read_games(&corpus(file)).expect("corpus PGN")).clone()
}

/// Short, complete, legal games of the World Cup file (the ones tests replay).
pub fn short_worldcup_games(n: usize, max_plies: usize) -> Vec<SourceGame> {
    let mut games: Vec<SourceGame> = corpus_games("worldcup2025-dgt-livechess.pgn")
        .into_iter()
        .filter(|g| {
            g.truncated.is_none() && g.result != "*" && g.moves.len() >= 20 && g.moves.len() <= max_plies
        })
        .collect();
    games.sort_by_key(|g| g.moves.len());
    games.truncate(n);
    games
}

/// The SAN tokens of every game in a PGN text, read independently of the simulator.
pub fn pgn_san_tokens(text: &str) -> Vec<Vec<String>> {
    struct Sans;
    impl Visitor for Sans {
        type Tags = ();
        type Movetext = Vec<String>;
        type Output = Vec<String>;
        fn begin_tags(&mut self) -> ControlFlow<Self::Output, Self::Tags> {
            ControlFlow::Continue(())
        }
        fn tag(&mut self, _: &mut (), _: &[u8], _: RawTag<'_>) -> ControlFlow<Self::Output> {
            ControlFlow::Continue(())
        }
        fn begin_movetext(&mut self, _: ()) -> ControlFlow<Self::Output, Self::Movetext> {
            ControlFlow::Continue(Vec::new())
        }
        fn san(&mut self, m: &mut Vec<String>, san: SanPlus) -> ControlFlow<Self::Output> {
            m.push(san.to_string());
            ControlFlow::Continue(())
        }
        fn end_game(&mut self, m: Vec<String>) -> Vec<String> {
            m
        }
    }
    let mut reader = Reader::new(text.as_bytes());
    let mut out = Vec::new();
    while let Ok(Some(g)) = reader.read_game(&mut Sans) {
        out.push(g);
    }
    out
}

/// The PGN text of one game of a corpus file, by index.
pub fn corpus_game_text(file: &str, index: usize) -> String {
    let text = std::fs::read_to_string(corpus(file)).expect("corpus text");
    let mut games = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        if line.starts_with("[Event ") && !current.trim().is_empty() {
            games.push(std::mem::take(&mut current));
        }
        current.push_str(line);
        current.push('\n');
    }
    games.push(current);
    games.swap_remove(index)
}
