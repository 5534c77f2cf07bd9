//! Plans every game of a PGN file under every profile, plays each plan through the
//! firmware model (no pty), and checks that the board ends in the game's final position;
//! reports how often the clock shows the source's `%clk` after a press.
//!
//! ```text
//! cargo run --release -p dgt-hil-sim --example plan_corpus -- tests/data/worldcup2025-dgt-livechess.pgn
//! ```

use std::path::PathBuf;
use std::time::Instant;

use dgt_hil_sim::firmware::BoardConfig;
use dgt_hil_sim::hands::{PlanOptions, Profile, plan_game};
use dgt_hil_sim::offline::replay_offline;
use dgt_hil_sim::pgn::read_games;
use dgt_hil_sim::scenario::codes_board;
use dgt_protocol::{Command, Orientation, PieceCode};

fn main() {
    let path = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| {
        let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        here.canonicalize().unwrap_or(here).join("../tests/data/worldcup2025-dgt-livechess.pgn")
    });
    let games = match read_games(&path) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let started = Instant::now();
    let mut failures = 0;
    for profile in Profile::ALL {
        let (mut plies, mut with_clk, mut met, mut replays) = (0usize, 0usize, 0usize, 0usize);
        let mut events: std::collections::BTreeMap<String, u32> = std::collections::BTreeMap::new();
        for game in games.iter().filter(|g| !g.moves.is_empty()) {
            let opts = PlanOptions { profile, seed: game.index as u64, ..PlanOptions::default() };
            let scenario = plan_game(game, &opts);
            let Some(truth) = scenario.truth.clone() else { continue };
            let replay = replay_offline(&scenario, BoardConfig::default(), Command::SendUpdateNice);
            let o = if truth.orientation == "rotated" { Orientation::Rotated } else { Orientation::Normal };
            let on_board = codes_board(&replay.final_dump.map(PieceCode::from_nibble), o);
            let final_pos = game.final_position();
            let ok = on_board.to_string() == truth.final_board
                && (truth.end == "kings_in_centre" || &on_board == shakmaty::Position::board(&final_pos));
            if !ok {
                failures += 1;
                eprintln!(
                    "{profile}: game {} ends wrong: {} vs {}",
                    game.index + 1,
                    on_board,
                    truth.final_board
                );
            }
            replays += 1;
            for (k, v) in &truth.events_used {
                *events.entry(k.clone()).or_default() += v;
            }
            *events.entry(format!("end_{}", truth.end)).or_default() += 1;
            for (m, sm) in truth.moves.iter().zip(&game.moves) {
                plies += 1;
                let shown = if m.color == "white" { m.white_clock_s } else { m.black_clock_s };
                if let (Some(clk), Some(shown)) = (sm.clk_s, shown) {
                    with_clk += 1;
                    if shown.abs_diff(clk) <= 1 {
                        met += 1;
                    }
                }
            }
        }
        println!(
            "{:<16} {replays} replays, {plies} plies, %clk met within 1 s on {met}/{with_clk} ({:.1} %)",
            profile.name(),
            100.0 * met as f64 / with_clk.max(1) as f64
        );
        let list: Vec<String> = events.iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!("                 {}", list.join(" "));
    }
    println!("{failures} failures, {:.1} s", started.elapsed().as_secs_f64());
    if failures > 0 {
        std::process::exit(1);
    }
}
