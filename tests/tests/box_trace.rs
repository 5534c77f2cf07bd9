//! A relay box's run replayed off the device from its trace (the firmware's `trace`
//! feature: every call its loop made into the session, with the bytes and the times), kept
//! in `tests/data/box-traces/`. The same session code on the same input decides the same,
//! so a box's failure is studied here, on the host, without QEMU.
//!
//! `dropped-s1-g011-unpaced.trace`: the box behind the hand script dropped-s1-g011 (World
//! Cup 2025 game 11; the board drops some of its field updates) when the simulated board
//! fed its UART unpaced, far faster than a 9600-baud line (the clock's readings: up to
//! 7 KB/s). The box saw the board up to 1.9 s late: a board dump asked at 6,197 ms came at
//! 8,115 ms, with plies 27 to 33 reported meanwhile, some of their updates dropped. The
//! clock readings before 8,100 ms are thinned to the last of each run and each change of
//! state (the same failure; a tenth of the size); the trace ends where that box ran out of
//! heap (a 4 KiB block for the events of the line below).

use dgt_bridge::Up;
use dgt_bridge::wire::Record;
use dgt_e2e_tests::acceptance::data_dir;
use dgt_e2e_tests::firmware::{confirmed_games, replay_trace};

/// The game's first 33 plies (World Cup 2025, Huh - Martinez Alcantara).
const TRUTH: [&str; 33] = [
    "e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5a4", "g8f6", "d2d3", "d7d6", "c2c3", "g7g6", "e1g1",
    "f8g7", "f1e1", "e8g8", "b1d2", "f8e8", "d3d4", "b7b5", "a4c2", "c8b7", "d4d5", "c6b8", "b2b3", "c7c6",
    "c3c4", "a6a5", "a2a4", "b5c4", "b3c4", "b8a6", "c1a3",
];

fn replay() -> Vec<(u64, Up)> {
    let path = data_dir().join("box-traces/dropped-s1-g011-unpaced.trace");
    let trace = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    replay_trace(&trace).unwrap_or_else(|e| panic!("{e:#}"))
}

/// The line as the device last told it: confirmed and provisional moves, withdrawn ones
/// taken out.
fn live_line(ups: &[(u64, Up)]) -> Vec<String> {
    let mut line: Vec<String> = Vec::new();
    for (_, up) in ups {
        let Up::Record { record, .. } = up else { continue };
        match record {
            Record::Move { mv, .. } => {
                line.truncate(usize::from(mv.ply).saturating_sub(1));
                line.push(mv.uci.clone());
            }
            Record::Retracted { ply, .. } => line.truncate(usize::from(*ply).saturating_sub(1)),
            Record::TakenBack { to_ply, .. } => line.truncate(usize::from(*to_ply)),
            _ => {}
        }
    }
    line
}

#[test]
fn the_boxs_traced_run_replays_as_the_box_ran_it() {
    let ups = replay();
    let games = confirmed_games(ups.iter().map(|(_, u)| u));
    assert_eq!(games.len(), 1);
    assert_eq!(games[0], TRUTH[..24], "plies 1-24 confirmed, as on the box");
    let mismatch = ups.iter().find_map(|(at, u)| match u {
        Up::Record { record: Record::Alert(a), .. } if a.message.contains("cannot be explained") => Some(*at),
        _ => None,
    });
    assert!(mismatch.is_some_and(|at| (8_000..8_119).contains(&at)), "lost near ply 27: {mismatch:?}");
}

#[test]
#[ignore = "tracker (issue 25/26): with the dump that came 1.9 s late, the line from ply 25 is rebuilt as \
            b3 c6 a4 bxa4 bxa4 a5 c4 Na6 Ba3 (a transposition of c4 a5 a4 bxc4 bxc4) although the board \
            reported a white pawn on c4 (6,588 ms) before a2 was lifted (6,887 ms) and a black pawn landing \
            on c4 (7,057 ms); the full trace does the same with the host's catch-up budget"]
fn a_dump_that_comes_late_is_explained_in_the_order_the_board_reported() {
    let line = live_line(&replay());
    assert_eq!(line, TRUTH, "the line the device tells at the end of the trace");
}
