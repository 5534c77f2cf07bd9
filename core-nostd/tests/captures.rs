//! The three real byte captures from a DGT board with a clock: decoded chunk by chunk with
//! the protocol crate's decoder and fed to the tracker, they must produce exactly the games
//! that were played.
//!
//! The captures carry no timestamps, so time is synthesised: each `read()` chunk advances
//! the clock by a fixed step and the tracker is ticked after each one. After the capture,
//! dumps the tracker asks for show the board as it last reported.

use base64::Engine;
use dgt_core::{Config, EndReason, Event, GameResult, Tracker, View};
use dgt_protocol::{Decoded, Decoder, Orientation};
use shakmaty::{CastlingMode, Chess, Position, san::SanPlus};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/board-captures/");

struct Run {
    tracker: Tracker<600>,
    events: Vec<Event>,
}

fn run(name: &str, step_ms: u64) -> Run {
    run_with(name, step_ms, Config::default())
}

fn run_with(name: &str, step_ms: u64, config: Config) -> Run {
    let text = std::fs::read_to_string(format!("{DIR}{name}.inbytes")).expect("capture");
    let mut decoder: Decoder<256> = Decoder::new();
    let mut tracker: Tracker<600> = Tracker::new(config);
    let mut events = Vec::new();
    let mut now = 0u64;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let chunk = base64::engine::general_purpose::STANDARD.decode(line.trim()).expect("base64");
        now += step_ms;
        decoder.feed(&chunk, |d| {
            if let Decoded::Message(m) = d {
                tracker.feed(&m, now, &mut |e| events.push(e));
            }
        });
        tracker.tick(now, &mut |e| events.push(e));
    }
    // After the capture the board stands as it last reported; a dump the tracker asks for
    // then shows it, as the board would answer.
    for _ in 0..100 {
        now += 50;
        let asked = events.len();
        tracker.tick(now, &mut |e| events.push(e));
        if events[asked..].contains(&Event::RequestBoardDump) {
            let dump = tracker.board();
            tracker.feed_dump(&dump, now, &mut |e| events.push(e));
        }
    }
    Run { tracker, events }
}

/// The moves of a `.uci` file ("1. e2e4 e7e5" lines, `*` or a result at the end).
fn uci_file(name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(format!("{DIR}{name}.uci")).expect("uci");
    text.split_whitespace()
        .filter(|t| !t.ends_with('.') && !matches!(*t, "*" | "1-0" | "0-1" | "1/2-1/2"))
        .map(str::to_string)
        .collect()
}

/// The moves of johan.pgn as UCI.
fn pgn_file(name: &str) -> (Vec<String>, Option<String>) {
    let text = std::fs::read_to_string(format!("{DIR}{name}.pgn")).expect("pgn");
    let mut pos = Chess::default();
    let mut out = Vec::new();
    let mut result = None;
    for t in text.split_whitespace() {
        if t.ends_with('.') {
            continue;
        }
        if matches!(t, "*" | "1-0" | "0-1" | "1/2-1/2") {
            result = Some(t.to_string());
            continue;
        }
        let san: SanPlus = t.parse().expect("san");
        let m = san.san.to_move(&pos).expect("legal");
        out.push(m.to_uci(CastlingMode::Standard).to_string());
        pos.play_unchecked(m);
    }
    (out, result)
}

fn confirmed(r: &Run) -> Vec<String> {
    let mut v = Vec::new();
    r.tracker.for_each_move(View::Confirmed, |m| v.push(m.uci.to_string()));
    v
}

fn check(name: &str, expected: &[String], orientation: Orientation) -> Run {
    let r = run(name, 200);
    let got = confirmed(&r);
    assert_eq!(got, expected, "{name}: moves");
    // Events agree with the final list: each ply confirmed once, never retracted after.
    let confirmed_events: Vec<String> = r
        .events
        .iter()
        .filter_map(|e| match e {
            Event::MoveConfirmed(m) => Some(m.uci.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(confirmed_events, expected, "{name}: confirmed events");
    assert_eq!(r.tracker.orientation(), orientation, "{name}: orientation");
    let starts = r.events.iter().filter(|e| matches!(e, Event::GameStarted { .. })).count();
    assert_eq!(starts, 1, "{name}: one game");
    // Every confirmed move carries the clock.
    r.tracker
        .for_each_move(View::Confirmed, |m| assert!(m.clk.is_some(), "{name}: ply {} has no %clk", m.ply));
    r
}

#[test]
fn capture_1_normal_board() {
    let expected = uci_file("1");
    let r = check("1", &expected, Orientation::Normal);
    assert_eq!(r.tracker.result(), None);
    // Fischer 3+2: the increment is inferred from the presses.
    let mut emts = Vec::new();
    r.tracker.for_each_move(View::Confirmed, |m| emts.push(m.emt));
    assert!(emts.iter().all(Option::is_some));
}

#[test]
fn capture_2_rotated_board() {
    let expected = uci_file("2");
    let r = check("2", &expected, Orientation::Rotated);
    assert!(
        r.events.iter().any(|e| matches!(e, Event::GameStarted { orientation: Orientation::Rotated, .. })),
        "rotation reported"
    );
}

#[test]
fn capture_johan_ends_on_black_flag_then_kings_in_centre() {
    let (expected, result) = pgn_file("johan");
    assert_eq!(result.as_deref(), Some("1-0"));
    // Black's clock reaches 0:00 with the final flag after 22. Qxc6; the players then put
    // the kings on d5 and e4 (1-0 as well). The first end seen is the flag.
    let r = check("johan", &expected, Orientation::Normal);
    assert_eq!(r.tracker.result(), Some((GameResult::WhiteWins, EndReason::FlagFall)));
    // With flag falls left to the arbiter, the kings in the centre end it, as no move.
    let cfg = Config { flag_fall_ends_game: false, ..Config::default() };
    let r2 = run_with("johan", 200, cfg);
    assert_eq!(confirmed(&r2), expected);
    assert_eq!(r2.tracker.result(), Some((GameResult::WhiteWins, EndReason::KingsInCentre)));
    let mut pgn = String::new();
    r.tracker.write_pgn(&dgt_core::PgnHeader::default(), &mut pgn).expect("pgn");
    assert!(pgn.contains("22. Qxc6 {[%clk"), "{pgn}");
    assert!(pgn.contains("[Termination \"time forfeit\"]"), "{pgn}");
    assert!(pgn.trim_end().ends_with("1-0"), "{pgn}");
    println!("{pgn}");
    // Read faster (20 ms a chunk, as the end-to-end suite writes it into a pty), the flag
    // reading follows White's press of 22. Qxc6 within a few chunks, before the board has
    // been still long enough to confirm a queen move by its press: the press came before
    // the flag, so the move counts.
    let fast = run("johan", 20);
    assert_eq!(confirmed(&fast), expected, "at 20 ms a chunk");
    assert_eq!(fast.tracker.result(), Some((GameResult::WhiteWins, EndReason::FlagFall)));
}
