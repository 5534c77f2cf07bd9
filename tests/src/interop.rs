//! Interop: the PGN the relay published, read back by parsers nobody here wrote:
//! python-chess (its `clock()` and `emt()` must return our values), pgn-extract (its log
//! must stay empty; it exits 0 even when it cannot make a move) and chess.js (every game
//! loads, with the same moves). The scripts are in `tests/interop/`.
//!
//! A reader that is not installed is a failure when the environment variable
//! `DGT_REQUIRE_INTEROP=1` is set (`.ci/run` sets it), and is skipped otherwise: the test
//! `interop` (`tests/tests/interop.rs`) then shows as ignored, with the reason, in
//! `cargo test`. `bash tests/interop/install.sh` installs all three.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::feed::FeedMove;

/// The folder with the reader scripts.
pub fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("interop")
}

/// The three readers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// python-chess, through `read_python_chess.py`.
    PythonChess,
    /// pgn-extract, through `check_pgn_extract.sh`.
    PgnExtract,
    /// chess.js, through `read_chessjs.mjs`.
    ChessJs,
}

impl Reader {
    /// All of them.
    pub const ALL: [Reader; 3] = [Reader::PythonChess, Reader::PgnExtract, Reader::ChessJs];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Reader::PythonChess => "python-chess",
            Reader::PgnExtract => "pgn-extract",
            Reader::ChessJs => "chess.js",
        }
    }

    /// The readers that cannot run here.
    pub fn missing() -> Vec<Reader> {
        Reader::ALL.into_iter().filter(|r| !r.available()).collect()
    }

    /// True when the reader can run here.
    pub fn available(self) -> bool {
        match self {
            Reader::PythonChess => Command::new("python3")
                .args(["-c", "import chess.pgn"])
                .output()
                .is_ok_and(|o| o.status.success()),
            Reader::PgnExtract => {
                Path::new("/usr/games/pgn-extract").exists()
                    || Command::new("sh")
                        .args(["-c", "command -v pgn-extract"])
                        .output()
                        .is_ok_and(|o| o.status.success())
            }
            Reader::ChessJs => {
                interop_dir().join("node_modules/chess.js").exists()
                    && Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success())
            }
        }
    }

    fn run(self, file: &Path) -> std::io::Result<std::process::Output> {
        let dir = interop_dir();
        match self {
            Reader::PythonChess => {
                Command::new("python3").arg(dir.join("read_python_chess.py")).arg(file).output()
            }
            Reader::PgnExtract => {
                Command::new("bash").arg(dir.join("check_pgn_extract.sh")).arg(file).output()
            }
            Reader::ChessJs => {
                Command::new("node").arg(dir.join("read_chessjs.mjs")).arg(file).current_dir(&dir).output()
            }
        }
    }
}

/// What the interop checks found.
#[derive(Debug, Default)]
pub struct InteropReport {
    /// One line per reader and file.
    pub lines: Vec<String>,
    /// Failures.
    pub failures: Vec<String>,
    /// Readers skipped (not installed, `DGT_REQUIRE_INTEROP` not set).
    pub skipped: Vec<String>,
}

fn seconds(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// The command that installs the readers, for messages.
pub const INSTALL: &str = "bash tests/interop/install.sh";

/// True when the environment variable `DGT_REQUIRE_INTEROP` is `1` (or any value but empty,
/// `0` or `false`): a reader that is not installed is then a failure, not a skip.
pub fn required() -> bool {
    std::env::var_os("DGT_REQUIRE_INTEROP").is_some_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Runs every reader on every file. `expected` maps a game's `Round` tag (`r.b`) to the
/// moves the relay confirmed (with their `%clk`/`%emt`); every file must hold each of
/// those games exactly once.
pub fn check(files: &[PathBuf], expected: &BTreeMap<String, Vec<FeedMove>>) -> InteropReport {
    let mut rep = InteropReport::default();
    let required = required();
    for reader in Reader::ALL {
        if !reader.available() {
            let msg = format!(
                "!!! INTEROP READER {} IS NOT INSTALLED: its check was NOT run ({INSTALL} installs it)",
                reader.name()
            );
            if required {
                rep.failures.push(format!("{msg}; DGT_REQUIRE_INTEROP is set, so this is a failure"));
            } else {
                eprintln!("{msg}");
                rep.skipped.push(reader.name().into());
            }
            continue;
        }
        for file in files {
            let name = file.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            let out = match reader.run(file) {
                Ok(o) => o,
                Err(e) => {
                    rep.failures.push(format!("{}: cannot run on {name}: {e}", reader.name()));
                    continue;
                }
            };
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            if !out.status.success() {
                let text: String = format!("{stdout}{stderr}").chars().take(2000).collect();
                rep.failures.push(format!(
                    "{} on {name}: exit {:?}: {text}",
                    reader.name(),
                    out.status.code()
                ));
                continue;
            }
            if reader == Reader::PgnExtract {
                let games: usize = stdout.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0);
                if games != expected.len() {
                    rep.failures
                        .push(format!("pgn-extract on {name}: {games} games, expected {}", expected.len()));
                }
                rep.lines.push(format!("pgn-extract  {name}: {games} games, empty log"));
                continue;
            }
            let v: Value = match serde_json::from_str(&stdout) {
                Ok(v) => v,
                Err(e) => {
                    rep.failures.push(format!("{} on {name}: output is not JSON: {e}", reader.name()));
                    continue;
                }
            };
            let (n_before, mut seen) = (rep.failures.len(), BTreeSet::new());
            let mut plies = 0usize;
            for g in v["games"].as_array().into_iter().flatten() {
                if let Some(e) = g["error"].as_str() {
                    rep.failures.push(format!("{} on {name}: a game was rejected: {e}", reader.name()));
                    continue;
                }
                let key = g["tags"]["Round"].as_str().unwrap_or("?").to_owned();
                if !seen.insert(key.clone()) {
                    rep.failures.push(format!("{} on {name}: game {key} twice", reader.name()));
                }
                let Some(want) = expected.get(&key) else {
                    rep.failures.push(format!("{} on {name}: unexpected game {key}", reader.name()));
                    continue;
                };
                let moves: Vec<&str> =
                    g["moves"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
                let want_moves: Vec<&str> = want.iter().map(|m| m.uci.as_str()).collect();
                if moves != want_moves {
                    rep.failures.push(format!("{} on {name}: game {key}: moves differ", reader.name()));
                    continue;
                }
                plies += moves.len();
                let clk: Vec<Option<f64>> = g["clk"].as_array().into_iter().flatten().map(seconds).collect();
                let emt: Vec<Option<f64>> = g["emt"].as_array().into_iter().flatten().map(seconds).collect();
                for (i, m) in want.iter().enumerate() {
                    let (c, e) = (clk.get(i).copied().flatten(), emt.get(i).copied().flatten());
                    if c != m.clk.map(|x| x as f64) || e != m.emt.map(|x| x as f64) {
                        rep.failures.push(format!(
                            "{} on {name}: game {key} ply {}: clk/emt {c:?}/{e:?}, the relay's {:?}/{:?}",
                            reader.name(),
                            i + 1,
                            m.clk,
                            m.emt
                        ));
                        break;
                    }
                }
                if let Some(errs) = g["errors"].as_array()
                    && !errs.is_empty()
                {
                    rep.failures.push(format!("{} on {name}: game {key}: errors {errs:?}", reader.name()));
                }
            }
            let missing: Vec<&String> = expected.keys().filter(|k| !seen.contains(*k)).collect();
            if !missing.is_empty() {
                rep.failures.push(format!("{} on {name}: games missing: {missing:?}", reader.name()));
            }
            rep.lines.push(format!(
                "{:<12} {name}: {} games, {plies} plies, clk/emt per ply compared: {}",
                reader.name(),
                seen.len(),
                if rep.failures.len() == n_before { "all equal" } else { "DIFFERENCES" }
            ));
        }
    }
    rep
}
