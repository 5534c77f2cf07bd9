//! The relay's PGN against an export-format checker written from the standard
//! (`dgt_e2e_tests::export_format`): real games with their clocks, written the way the
//! relay writes them from its journal, pass every rule (tag order, line length, move
//! numbers, `TimeControl` with `%clk`, the game's empty lines).

use std::path::Path;

use dgt_e2e_tests::export_format::check_ok;
use dgt_hil_sim::pgn::{SourceGame, read_games};
use dgt_relay::record::{GameHeader, GameRecord, JournalMove};
use dgt_relay::tournament::{Pairing, Player};

fn games(file: &str) -> Vec<SourceGame> {
    read_games(&Path::new(env!("CARGO_MANIFEST_DIR")).join("data").join(file)).expect("test data")
}

fn record(g: &SourceGame, board: u32, paired: bool, time_control: Option<&str>) -> GameRecord {
    let player = |side: &str| Player {
        name: if paired { g.tag(side).unwrap_or_default().to_owned() } else { String::new() },
        fide_id: g.tag(&format!("{side}FideId")).and_then(|v| v.parse().ok()),
        title: g.tag(&format!("{side}Title")).map(str::to_owned),
        elo: g.tag(&format!("{side}Elo")).and_then(|v| v.parse().ok()),
        federation: None,
    };
    let fen = shakmaty::fen::Fen::from_position(&g.start, shakmaty::EnPassantMode::Legal).to_string();
    GameRecord {
        header: GameHeader {
            round: 3,
            board,
            serial: Some("24518".into()),
            event: g.tag("Event").unwrap_or("E").to_owned(),
            site: g.tag("Site").unwrap_or("?").to_owned(),
            time_control: time_control.map(str::to_owned),
            utc_date: "2025.11.21".into(),
            utc_time: "12:00:00".into(),
            pairing: Pairing { white: player("White"), black: player("Black") },
            start_fen: (fen != shakmaty::fen::Fen::default().to_string()).then_some(fen),
            flipped: false,
        },
        moves: g
            .moves
            .iter()
            .enumerate()
            .map(|(i, m)| JournalMove {
                ply: i as u32 + 1,
                san: m.san.clone(),
                uci: m.uci.clone(),
                clk: m.clk_s,
                emt: m.emt_s,
                fen: None,
            })
            .collect(),
        result: (g.result != "*").then(|| g.result.clone()),
        termination: (g.result != "*").then(|| "normal".to_owned()),
        white_clock: None,
    }
}

#[test]
fn relay_pgn_of_real_games_is_in_export_format() {
    let mut checked = 0;
    for file in ["worldcup2025-dgt-livechess.pgn", "livechess-2.2.5-sample-round.pgn", "twic1599-excerpt.pgn"]
    {
        for (i, g) in games(file).iter().enumerate() {
            let board = i as u32 % 50 + 1;
            for (paired, tc) in [(true, Some("5400+30")), (false, None)] {
                let rec = record(g, board, paired, tc);
                let text = dgt_relay::pgn::write_game(&rec, None);
                let games = check_ok(&text).unwrap_or_else(|e| panic!("{file} game {i}:\n{e}\n{text}"));
                assert_eq!(games[0].moves.len(), g.moves.len());
                if !paired {
                    assert_eq!(games[0].tag("White"), Some(format!("Board {board} White").as_str()));
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 500, "{checked}");
}

#[test]
fn a_round_file_of_relay_games_is_in_export_format() {
    let text: String = games("livechess-2.2.5-sample-round.pgn")
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let clock = dgt_core::ClockState {
                white: Some(61),
                black: Some(3600),
                running: None,
                ..Default::default()
            };
            let mut rec = record(g, i as u32 + 1, true, None);
            rec.result = None;
            dgt_relay::pgn::write_game(&rec, Some(&clock))
        })
        .collect();
    let games = check_ok(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(games.len() > 1);
    for g in &games {
        assert!(g.tag("Clock").is_some() && g.tag("GameId").is_some(), "{:?}", g.tags);
    }
}
