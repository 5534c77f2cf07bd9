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
        team: None,
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

/// A game of the broadcast cases: `sans`/`ucis` from `start_fen` (the standard start when
/// `None`), with `result` and `termination`, on board `board` of round 1.
fn case(
    board: u32,
    start_fen: Option<&str>,
    moves: &[(&str, &str)],
    result: &str,
    termination: &str,
) -> GameRecord {
    let player = |name: &str, id: u64, title: &str, fed: &str, team: &str| Player {
        name: name.into(),
        fide_id: Some(id),
        title: Some(title.into()),
        elo: Some(2700),
        federation: Some(fed.into()),
        team: Some(team.into()),
    };
    GameRecord {
        header: GameHeader {
            round: 1,
            board,
            serial: None,
            event: "Cases".into(),
            site: "Here".into(),
            time_control: Some("5400+30".into()),
            utc_date: "2026.11.27".into(),
            utc_time: "12:00:00".into(),
            pairing: Pairing {
                white: player("Carlsen, Magnus", 1503014, "GM", "NOR", "Norway"),
                black: player("Ju, Wenjun", 8603006, "GM", "CHN", "China"),
            },
            start_fen: start_fen.map(str::to_owned),
            flipped: false,
        },
        moves: moves
            .iter()
            .enumerate()
            .map(|(i, (san, uci))| JournalMove {
                ply: i as u32 + 1,
                san: (*san).into(),
                uci: (*uci).into(),
                clk: Some(5400 - 10 * i as u32),
                emt: Some(10),
                fen: None,
            })
            .collect(),
        result: (result != "*").then(|| result.to_owned()),
        termination: (result != "*").then(|| termination.to_owned()),
        white_clock: None,
    }
}

/// Every broadcast case (Chess960, each result kind, a forfeit, teams, FIDE identity):
/// the relay's PGN passes the export-format check and python-chess (and pgn-extract and
/// chess.js where installed) reads it with the moves it should have: none for a forfeit.
#[test]
fn every_broadcast_case_is_in_export_format_and_reads_back() {
    let open = [("e4", "e2e4"), ("e5", "e7e5"), ("Nf3", "g1f3")];
    // Chess960 position 0 (BBQNNRKR).
    let c960 = "bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w HFhf - 0 1";
    let c960_moves = [("g3", "g2g3"), ("g6", "g7g6"), ("Ne3", "d1e3"), ("Ne6", "d8e6")];
    let cases = [
        case(1, None, &open, "1-0", "normal"),
        case(2, None, &open, "0-1", "time forfeit"),
        case(3, None, &open, "1/2-1/2", "normal"),
        case(4, None, &open, "0-0", "normal"),
        case(5, None, &open, "1/2-0", "normal"),
        case(6, None, &open, "0-1/2", "normal"),
        case(7, None, &open, "1-0", dgt_core::UNPLAYED),
        case(8, None, &[], "0-0", dgt_core::UNPLAYED),
        case(9, Some(c960), &c960_moves, "*", ""),
    ];
    let text: String = cases.iter().map(|g| dgt_relay::pgn::write_game(g, None)).collect();
    let games = check_ok(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(games.len(), cases.len());
    for (g, rec) in games.iter().zip(&cases) {
        let unplayed = rec.termination.as_deref() == Some(dgt_core::UNPLAYED);
        assert_eq!(g.moves.len(), if unplayed { 0 } else { rec.moves.len() }, "{:?}", g.tags);
        assert_eq!(g.tag("Result"), Some(rec.result.as_deref().unwrap_or("*")));
        for (name, value) in [
            ("WhiteFideId", "1503014"),
            ("BlackTitle", "GM"),
            ("WhiteFed", "NOR"),
            ("BlackTeam", "China"),
            ("WhiteTeam", "Norway"),
        ] {
            assert_eq!(g.tag(name), Some(value), "{:?}", g.tags);
        }
    }
    assert_eq!(games[8].tag("Variant"), Some("Chess960"));
    assert_eq!(games[8].tag("SetUp"), Some("1"));
    // X-FEN castling letters (`KQkq` for the outermost rooks), as Lichess reads them.
    assert_eq!(games[8].tag("FEN"), Some("bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w KQkq - 0 1"));

    // The independent readers: every game with the moves it should have.
    let dir = std::env::temp_dir().join(format!("dgt-cases-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cases.pgn");
    std::fs::write(&file, &text).unwrap();
    let expected = cases
        .iter()
        .map(|g| {
            let unplayed = g.termination.as_deref() == Some(dgt_core::UNPLAYED);
            let moves = g.moves.iter().filter(|_| !unplayed).map(|m| dgt_e2e_tests::feed::FeedMove {
                ply: m.ply,
                uci: m.uci.clone(),
                san: m.san.clone(),
                clk: m.clk.map(u64::from),
                emt: m.emt.map(u64::from),
            });
            (format!("1.{}", g.header.board), moves.collect())
        })
        .collect();
    let report = dgt_e2e_tests::interop::check(&[file], &expected);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(report.failures.is_empty(), "{}\n{text}", report.failures.join("\n"));
}
