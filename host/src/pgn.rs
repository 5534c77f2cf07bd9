//! The PGN export text of one game, from its journaled record.
//!
//! The moves, their SAN and clock values come from the tracker (through the journal);
//! this module only lays them out in the export format of the PGN standard: the Seven Tag
//! Roster first and in order, then the relay's tags (`Board`, players' FIDE data, `UTCDate`,
//! `Mode`, live `Clock`, `SetUp`/`FEN`, `Termination`), lines under 80 characters, and one
//! comment per move holding both `%clk` and `%emt`. Writing it from the journal, not from
//! live state, guarantees the published PGN never holds a move the journal does not.

use std::fmt::Write;

use crate::feed::{ClockView, MoveView, Side};
use crate::store::GameRecord;

/// Formats seconds as `h:mm:ss`.
pub fn hms(seconds: u32) -> String {
    format!("{}:{:02}:{:02}", seconds / 3600, (seconds / 60) % 60, seconds % 60)
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn or_unknown(s: &str) -> &str {
    if s.is_empty() { "?" } else { s }
}

/// Writes the game. `live_clock` adds the `Clock` tag while the game runs.
pub fn write_game(g: &GameRecord, live_clock: Option<&ClockView>) -> String {
    let mut out = String::with_capacity(512 + g.moves.len() * 24);
    let result = g.result.as_deref().unwrap_or("*");
    let mut tag = |name: &str, value: &str| {
        let _ = writeln!(out, "[{name} \"{}\"]", escape(value));
    };
    tag("Event", or_unknown(&g.event));
    tag("Site", or_unknown(&g.site));
    tag("Date", &g.utc_date);
    tag("Round", &format!("{}.{}", g.round, g.board));
    tag("White", or_unknown(&g.pairing.white.name));
    tag("Black", or_unknown(&g.pairing.black.name));
    tag("Result", result);
    tag("Board", &g.board.to_string());
    for (side, p) in [("White", &g.pairing.white), ("Black", &g.pairing.black)] {
        if let Some(t) = &p.title {
            tag(&format!("{side}Title"), t);
        }
        if let Some(id) = p.fide_id {
            tag(&format!("{side}FideId"), &id.to_string());
        }
    }
    if let Some(tc) = &g.time_control {
        tag("TimeControl", tc);
    }
    tag("UTCDate", &g.utc_date);
    tag("UTCTime", &g.utc_time);
    tag("Mode", "OTB");
    if let Some(fen) = &g.start_fen {
        tag("SetUp", "1");
        tag("FEN", fen);
    }
    if g.result.is_none()
        && let Some(c) = live_clock
    {
        let (letter, time) = match c.running {
            Some(Side::White) => ("W", c.white),
            Some(Side::Black) => ("B", c.black),
            None => ("N", c.white),
        };
        if let Some(t) = time {
            tag("Clock", &format!("{letter}/{}", hms(t)));
        }
    }
    if let Some(t) = &g.termination {
        tag("Termination", t);
    }
    out.push('\n');
    let first_black = g.start_fen.as_deref().is_some_and(|f| f.split(' ').nth(1) == Some("b"));
    let first_number: u32 = g
        .start_fen
        .as_deref()
        .and_then(|f| f.split(' ').nth(5))
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1);
    let mut tokens: Vec<String> = Vec::with_capacity(g.moves.len() * 2 + 1);
    for (i, m) in g.moves.iter().enumerate() {
        let idx = i as u32 + u32::from(first_black);
        let number = first_number + idx / 2;
        if idx.is_multiple_of(2) {
            tokens.push(format!("{number}."));
        } else if i == 0 {
            tokens.push(format!("{number}..."));
        }
        tokens.push(m.view.san.clone());
        if let Some(c) = comment(&m.view) {
            tokens.push(c);
        }
    }
    tokens.push(result.to_owned());
    let mut line_len = 0;
    for t in tokens {
        if line_len > 0 && line_len + 1 + t.len() > 79 {
            out.push('\n');
            line_len = 0;
        }
        if line_len > 0 {
            out.push(' ');
            line_len += 1;
        }
        out.push_str(&t);
        line_len += t.len();
    }
    out.push_str("\n\n");
    out
}

fn comment(m: &MoveView) -> Option<String> {
    match (m.clk, m.emt) {
        (None, None) => None,
        (Some(c), None) => Some(format!("{{[%clk {}]}}", hms(c))),
        (None, Some(e)) => Some(format!("{{[%emt {}]}}", hms(e))),
        (Some(c), Some(e)) => Some(format!("{{[%clk {}] [%emt {}]}}", hms(c), hms(e))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Pairing, Player};
    use crate::store::JournalMove;

    fn game() -> GameRecord {
        GameRecord {
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
            moves: (1..=40)
                .map(|ply| JournalMove {
                    view: MoveView {
                        ply,
                        san: if ply % 2 == 1 { "Nf3".into() } else { "Nf6".into() },
                        uci: String::new(),
                        clk: Some(5400 - ply),
                        emt: Some(61),
                    },
                    fen: None,
                })
                .collect(),
            result: None,
            termination: None,
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
        assert!(text.contains("1. Nf3 {[%clk 1:29:59] [%emt 0:01:01]} Nf6 {[%clk 1:29:58]"));
        assert!(text.lines().all(|l| l.len() < 80), "{text}");
        assert!(text.ends_with(" *\n\n"));
        assert!(text.contains("\n\n1. Nf3"));
    }

    #[test]
    fn black_to_move_start_and_result() {
        let mut g = game();
        g.start_fen = Some("8/8/8/8/8/8/8/K1k5 b - - 0 30".into());
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
}
