//! `dgt-relay demo` on in-process links (how the demo runs on Windows, which has no
//! pseudo-terminals): the real binary, its simulated boards on channels instead of ptys,
//! and the moves it publishes checked against the games the boards replay.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{Relay, confirmed, source_sans, tmpdir};

#[test]
fn the_demo_on_in_process_links_relays_its_games_exactly() {
    let dir = tmpdir("demo-in-process");
    let pgn = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/worldcup2025-sample.pgn");
    let games: Vec<_> =
        dgt_hil_sim::pgn::read_games(&pgn).unwrap().into_iter().filter(|g| !g.moves.is_empty()).collect();
    let data = dir.join("data");
    let relay = Relay::start(
        &dir,
        &[
            "demo",
            "--in-process",
            "--boards",
            "2",
            "--speed",
            "100",
            "--games",
            pgn.to_str().unwrap(),
            "--data",
            data.to_str().unwrap(),
        ],
    );
    // Board k replays games k-1, k+1, k+3, ...: 10 moves of one of them confirmed on both.
    let boards = relay.wait_boards("10 moves on both boards", Duration::from_secs(120), |v| {
        confirmed(v, 1).len() >= 10 && confirmed(v, 2).len() >= 10
    });
    for n in [1u64, 2] {
        let relayed = confirmed(&boards, n);
        let played = games.iter().skip(n as usize - 1).step_by(2).map(source_sans);
        assert!(
            played.clone().any(|source| source.starts_with(&relayed)),
            "board {n} relayed {relayed:?}, not the start of any of its games {:?}",
            played.collect::<Vec<_>>()
        );
    }
    let ports = relay.logs();
    assert!(ports.contains("simulated-board-1") && !ports.contains("/dev/pts"), "{ports}");
}
