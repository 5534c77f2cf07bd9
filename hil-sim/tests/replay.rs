//! Replays of real games over real ptys: the host side reads the bytes back with the
//! protocol decoder; the board ends in the game's final position, the clock readings show
//! the ground truth's clocks, and the ground truth's moves are the source game's.

mod common;

use std::time::{Duration, Instant};

use dgt_hil_sim::firmware::BoardConfig;
use dgt_hil_sim::hands::{PlanOptions, Profile, plan_game};
use dgt_hil_sim::pgn::SourceGame;
use dgt_hil_sim::scenario::{board_codes, codes_board};
use dgt_hil_sim::{HostPort, Received, SimBoard, SimConfig, StartPolicy};
use dgt_protocol::{ClockSide, Command, Orientation, PieceCode};
use shakmaty::Position;

const SPEED: f64 = 1000.0;

/// The short World Cup games whose replays are quickest.
fn quick_games(n: usize) -> Vec<SourceGame> {
    let mut games = common::short_worldcup_games(40, 70);
    games.sort_by_key(|g| plan_game(g, &PlanOptions::default()).duration_ms());
    games.truncate(n);
    games
}

fn run(game: &SourceGame, profile: Profile, seed: u64, tag: &str) {
    let dir = std::env::temp_dir().join(format!("dgt-sim-replay-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let opts = PlanOptions { profile, seed, ..PlanOptions::default() };
    let scenario = plan_game(game, &opts);
    let truth = scenario.truth.clone().expect("truth");
    let board = SimBoard::spawn(SimConfig {
        board: BoardConfig::with_serial(seed as u32),
        link: Some(dir.join("board")),
        speed: SPEED,
        // The wire is what is tested here, not a host's timing: hands as fast as the rest.
        hand_speed: SPEED,
        ..SimConfig::default()
    })
    .expect("spawn");
    let mut port = HostPort::open(&board.path()).expect("open");
    let handle = board.start_scenario(scenario, StartPolicy::WhenHostListens).expect("start");
    port.send(Command::SendUpdateNice).expect("send");
    port.send(Command::SendBoard).expect("send");
    let mut got: Vec<Received> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    let report = loop {
        match port.read_for(Duration::from_millis(20)) {
            Ok(mut more) => got.append(&mut more),
            Err(_) => {
                // Unplugged: reopen the stable path, set the mode again, ask for a dump.
                std::thread::sleep(Duration::from_millis(30));
                if let Ok(p) = HostPort::open(&board.path()) {
                    port = p;
                    let _ = port.send(Command::SendUpdateNice);
                    let _ = port.send(Command::SendBoard);
                }
            }
        }
        if let Some(r) = handle.try_report() {
            break r;
        }
        assert!(Instant::now() < deadline, "the replay takes too long");
    };
    assert!(report.completed);
    // The host's picture from dumps and field updates, then a fresh dump.
    let mut picture = [0u8; 64];
    for r in &got {
        match r {
            Received::BoardDump(d) => picture = *d,
            Received::Field { index, raw } => picture[usize::from(*index & 63)] = raw & 0x0F,
            _ => {}
        }
    }
    let dump = port
        .query(Command::SendBoard, Duration::from_secs(3), |r| matches!(r, Received::BoardDump(_)))
        .expect("io");
    let Some(Received::BoardDump(final_dump)) =
        dump.into_iter().find(|r| matches!(r, Received::BoardDump(_)))
    else {
        panic!("no final dump")
    };
    let o = if truth.orientation == "rotated" { Orientation::Rotated } else { Orientation::Normal };
    assert_eq!(codes_board(&final_dump.map(PieceCode::from_nibble), o).to_string(), truth.final_board);
    if !truth.events_used.contains_key("dropped_update") {
        assert_eq!(picture, final_dump, "dumps and field updates add up to the board");
    }
    if truth.end != "kings_in_centre" {
        let final_codes = board_codes(game.final_position().board(), o).map(PieceCode::code);
        assert_eq!(final_dump, final_codes, "the board ends in the game's final position");
    }
    // The ground truth is the source game, read independently.
    let text = common::corpus_game_text("worldcup2025-dgt-livechess.pgn", game.index);
    let tokens = common::pgn_san_tokens(&text);
    assert_eq!(truth.san_moves(), tokens[0].iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(truth.result, game.result);
    // Every press shows the truth's clocks on the wire.
    if let Some(clock) = &truth.clock
        && !truth.events_used.contains_key("disconnect")
    {
        let white_left = clock.white_side == "left";
        let readings: Vec<(u32, u32)> = got
            .iter()
            .filter_map(|r| match r {
                Received::Times(t) => {
                    let (l, r) = (
                        t.side(ClockSide::Left).time.total_seconds(),
                        t.side(ClockSide::Right).time.total_seconds(),
                    );
                    Some(if white_left { (l, r) } else { (r, l) })
                }
                _ => None,
            })
            .collect();
        for m in &truth.moves {
            let want = (m.white_clock_s.expect("clock"), m.black_clock_s.expect("clock"));
            assert!(readings.contains(&want), "ply {} {}: {want:?} never shown", m.ply, m.san);
        }
    }
    board.shutdown().expect("shutdown");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn clean_replays_of_real_games_end_right_with_the_right_clocks() {
    for (i, game) in quick_games(3).iter().enumerate() {
        run(game, Profile::Clean, i as u64, &format!("clean{i}"));
    }
}

#[test]
fn noisy_replays_end_right() {
    let games = quick_games(2);
    for (i, profile) in
        [Profile::Mixed, Profile::Disconnect, Profile::Rotated, Profile::Garbage].into_iter().enumerate()
    {
        run(&games[i % games.len()], profile, 40 + i as u64, &format!("noisy{i}"));
    }
}
