//! The PGN export text of one game, from its journaled record.
//!
//! The moves, their SAN and clock values come from the tracker (through the journal); the
//! export layout (tag order, escaping, move numbers, comments, line length) is the core's
//! single writer, [`dgt_core::pgn::write_game`]. This module only maps the journaled
//! [`GameRecord`] to its inputs: `Round "r.b"`, `Board`, the players' titles and FIDE ids,
//! `UTCDate`/`UTCTime`, `Mode "OTB"`, `SetUp`/`FEN`, the live `Clock` while the game runs,
//! `Termination`. Writing it from the journal, not from live state, guarantees the
//! published PGN never holds a move the journal does not.

use dgt_core::pgn::{GameText, PgnHeader, PgnPly};
use dgt_core::{ClockState, GameResult};
use shakmaty::{CastlingMode, Chess, Color};

use crate::feed::{ClockView, Side};
use crate::record::GameRecord;

fn or_unknown(s: &str) -> &str {
    if s.is_empty() { "?" } else { s }
}

fn clock_state(c: &ClockView) -> ClockState {
    ClockState {
        white: c.white,
        black: c.black,
        running: c.running.map(|s| match s {
            Side::White => Color::White,
            Side::Black => Color::Black,
        }),
        ..ClockState::default()
    }
}

/// Writes the game. `live_clock` adds the `Clock` tag while the game runs.
pub fn write_game(g: &GameRecord, live_clock: Option<&ClockView>) -> String {
    // A start FEN that does not parse (a damaged journal) numbers the moves from 1.
    let start = match &g.header.start_fen {
        Some(fen) => dgt_core::position_from_fen(fen).ok(),
        None => None,
    };
    let (start, mode) = start.unwrap_or((Chess::default(), CastlingMode::Standard));
    let h = &g.header;
    let round = format!("{}.{}", h.round, h.board);
    let board = h.board.to_string();
    let ids = [&h.pairing.white, &h.pairing.black].map(|p| p.fide_id.map(|id| id.to_string()));
    let mut extra: Vec<(&str, &str)> = Vec::new();
    for ((title, fide_id), (p, id)) in [("WhiteTitle", "WhiteFideId"), ("BlackTitle", "BlackFideId")]
        .into_iter()
        .zip([&h.pairing.white, &h.pairing.black].into_iter().zip(&ids))
    {
        if let Some(t) = &p.title {
            extra.push((title, t));
        }
        if let Some(id) = id {
            extra.push((fide_id, id));
        }
    }
    let header = PgnHeader {
        event: or_unknown(&h.event),
        site: or_unknown(&h.site),
        date: if h.utc_date.is_empty() { "????.??.??" } else { &h.utc_date },
        round: &round,
        white: or_unknown(&h.pairing.white.name),
        black: or_unknown(&h.pairing.black.name),
        board: Some(&board),
        time_control: h.time_control.as_deref(),
        utc_date: Some(&h.utc_date),
        utc_time: Some(&h.utc_time),
        mode: Some("OTB"),
    };
    let result: Option<GameResult> = g.result.as_deref().and_then(|r| r.parse().ok());
    let game = GameText {
        set_up: h.start_fen.is_some(),
        variant: (mode == CastlingMode::Chess960).then_some("Chess960"),
        result,
        termination: g.termination.as_deref(),
        live_clock: live_clock.filter(|_| result.is_none()).map(clock_state),
        extra_tags: &extra,
        ..GameText::new(&start)
    };
    let moves = g.moves.iter().map(|m| PgnPly { san: m.san.as_str(), clk: m.clk, emt: m.emt });
    let mut out = String::with_capacity(512 + g.moves.len() * 48);
    // Writing into a String cannot fail.
    let _ = dgt_core::pgn::write_game(&header, &game, moves, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Pairing, Player};
    use crate::store::{GameHeader, JournalMove};

    fn game() -> GameRecord {
        GameRecord {
            header: GameHeader {
                round: 2,
                board: 5,
                serial: Some("12345".into()),
                event: "Open \"A\"".into(),
                site: "Town".into(),
                time_control: Some("5400+30".into()),
                utc_date: "2025.03.04".into(),
                utc_time: "10:00:00".into(),
                pairing: Pairing {
                    white: Player {
                        name: "Carlsen, Magnus".into(),
                        fide_id: Some(1503014),
                        title: Some("GM".into()),
                    },
                    black: Player::default(),
                },
                start_fen: None,
                flipped: false,
            },
            moves: (1..=40)
                .map(|ply| JournalMove {
                    ply,
                    san: if ply % 2 == 1 { "Nf3".into() } else { "Nf6".into() },
                    uci: String::new(),
                    clk: Some(5400 - ply),
                    emt: Some(61),
                    fen: None,
                })
                .collect(),
            result: None,
            termination: None,
            white_clock: None,
        }
    }

    #[test]
    fn export_format() {
        let g = game();
        let clock =
            ClockView { white: Some(3600 + 34 * 60 + 56), black: Some(10), running: Some(Side::White) };
        let text = write_game(&g, Some(&clock));
        let tags: Vec<&str> = text.lines().take(7).collect();
        assert_eq!(tags[0], r#"[Event "Open \"A\""]"#);
        assert_eq!(tags[3], r#"[Round "2.5"]"#);
        assert_eq!(tags[6], r#"[Result "*"]"#);
        assert!(text.contains("[Board \"5\"]\n"));
        assert!(text.contains("[WhiteFideId \"1503014\"]\n"));
        assert!(text.contains("[Clock \"W/1:34:56\"]\n"));
        // Black's move after a comment carries its number again (the core's one layout).
        assert!(text.contains("1. Nf3 {[%clk 1:29:59] [%emt 0:01:01]} 1... Nf6 {[%clk 1:29:58]"), "{text}");
        assert!(text.contains("[PlyCount \"40\"]\n"), "{text}");
        assert!(text.lines().all(|l| l.len() < 80), "{text}");
        assert!(text.ends_with(" *\n\n"));
        assert!(text.contains("\n\n1. Nf3"));
    }

    #[test]
    fn black_to_move_start_and_result() {
        let mut g = game();
        g.header.start_fen = Some("8/8/8/8/8/8/8/K1k5 b - - 0 30".into());
        g.moves.truncate(2);
        g.result = Some("1/2-1/2".into());
        g.termination = Some("normal".into());
        let text = write_game(&g, None);
        assert!(text.contains("[SetUp \"1\"]\n[FEN \"8/8/8/8/8/8/8/K1k5 b - - 0 30\"]\n"));
        assert!(text.contains("\n30... Nf3 {"), "{text}");
        assert!(text.contains("31. Nf6"));
        assert!(text.ends_with("1/2-1/2\n\n"));
        assert!(!text.contains("[Clock"));
    }

    #[test]
    fn a_stopped_clock_shows_the_side_to_move_and_tags_keep_their_order() {
        let mut g = game();
        g.moves.truncate(3);
        let clock = ClockView { white: Some(100), black: Some(200), running: None };
        let text = write_game(&g, Some(&clock));
        // After three plies Black is to move: `N/` with Black's time.
        assert!(text.contains("[Clock \"N/0:03:20\"]\n"), "{text}");
        let names: Vec<&str> =
            text.lines().filter_map(|l| l.strip_prefix('[')).filter_map(|l| l.split(' ').next()).collect();
        assert_eq!(
            names,
            [
                "Event",
                "Site",
                "Date",
                "Round",
                "White",
                "Black",
                "Result",
                "Board",
                "WhiteTitle",
                "WhiteFideId",
                "TimeControl",
                "Clock",
                "UTCDate",
                "UTCTime",
                "Mode",
                "PlyCount"
            ]
        );
        assert!(text.ends_with("2. Nf3 {[%clk 1:29:57] [%emt 0:01:01]} *\n\n"), "{text}");
    }

    #[test]
    fn the_host_and_the_tracker_write_the_same_game_alike() {
        // The tracker's own PGN of a game and the host's, from the journaled moves, share
        // the core's layout: same movetext.
        let mut tracker: dgt_core::Tracker<16> = dgt_core::Tracker::default();
        let ucis = ["e2e4", "c7c5", "g1f3", "d7d6", "d2d4"];
        let plies = ucis.map(|u| dgt_core::ResumePly {
            uci: u.parse().unwrap(),
            clk: Some(3000),
            emt: if u == "c7c5" { None } else { Some(4) },
        });
        tracker
            .resume(
                Chess::default(),
                CastlingMode::Standard,
                dgt_protocol::Orientation::Normal,
                plies,
                0,
                &mut |_| {},
            )
            .unwrap();
        let mut g = game();
        g.moves.clear();
        tracker.for_each_move(dgt_core::View::Confirmed, |m| {
            g.moves.push(JournalMove {
                ply: u32::from(m.ply),
                san: m.san.to_string(),
                uci: m.uci.to_string(),
                clk: m.clk,
                emt: m.emt,
                fen: None,
            })
        });
        let mut theirs = String::new();
        tracker.write_movetext(&mut theirs).unwrap();
        let ours = write_game(&g, None);
        let movetext = ours.split("\n\n").nth(1).unwrap();
        assert_eq!(movetext, theirs);
        assert!(
            theirs.starts_with("1. e4 {[%clk 0:50:00] [%emt 0:00:04]} 1... c5 {[%clk 0:50:00]} 2. Nf3"),
            "{theirs}"
        );
    }
}
