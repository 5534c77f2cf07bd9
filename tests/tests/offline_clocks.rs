//! Clock regressions found by the end-to-end suite, reproduced offline: a scenario planned
//! by the simulator, played through its firmware model without a pty, and fed to the
//! tracker. `%clk` must be what the simulated clock showed after each press.

use std::path::PathBuf;

use dgt_core::{EndReason, Event, MoveInfo, Tracker};
use dgt_hil_sim::hands::{PlanOptions, Profile, plan_game};
use dgt_hil_sim::offline::replay_offline;
use dgt_hil_sim::pgn::{SourceGame, read_games};
use dgt_hil_sim::{BoardConfig, GroundTruth, Received, Scenario};
use dgt_protocol::{BoardDump, Command, DgtSquare, FieldUpdate};

fn corpus(name: &str) -> Vec<SourceGame> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data").join(name);
    read_games(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Feeds everything the host received to `tracker`, with a tick every 50 ms in between, and
/// answers each dump it asks for with the board its reports show;
/// returns the confirmed moves. The tracker's time is the relay's: the scenario's virtual
/// time played the way an accelerated simulator plays it (thinking at `speed`, hands at
/// [`HAND_SPEED`] at most, over the scenario's hand spans), plus `offset_ms`.
fn feed(tracker: &mut Tracker<600>, scenario: &Scenario, offset_ms: u64, speed: u64) -> Vec<MoveInfo> {
    feed_with(tracker, scenario, offset_ms, speed, false)
}

/// [`feed`]; with `board_first`, clock readings sent before the first board dump arrive
/// just after it (the pieces are set up before the arbiter sets the clock).
fn feed_with(
    tracker: &mut Tracker<600>,
    scenario: &Scenario,
    offset_ms: u64,
    speed: u64,
    board_first: bool,
) -> Vec<MoveInfo> {
    let mut replay = replay_offline(scenario, BoardConfig::default(), Command::SendUpdateNice);
    if board_first
        && let Some(d) = replay.received.iter().position(|(_, r)| matches!(r, Received::BoardDump(_)))
    {
        let at = replay.received[d].0;
        let (mut clock, mut rest): (Vec<_>, Vec<_>) =
            replay.received.drain(..d).partition(|(_, r)| matches!(r, Received::Times(_)));
        rest.push(replay.received.remove(0));
        rest.extend(clock.drain(..).map(|(_, r)| (at, r)));
        rest.append(&mut replay.received);
        replay.received = rest;
    }
    let mut confirmed = Vec::new();
    // The board as its reports show it: what it answers when the tracker asks for a dump.
    let mut board = [0u8; 64];
    let asked = std::cell::Cell::new(false);
    let mut sink = |e: Event| match e {
        Event::MoveConfirmed(m) => confirmed.push(m),
        Event::RequestBoardDump => asked.set(true),
        _ => {}
    };
    let clock = RelayClock::new(scenario, speed);
    let mut now = offset_ms;
    let end = offset_ms + clock.real_ms(scenario.duration_ms()) + 10_000;
    let mut msgs = replay.received.iter().peekable();
    while now <= end {
        while let Some((t, r)) = msgs.next_if(|(t, _)| clock.real_ms(*t) + offset_ms <= now) {
            let at = clock.real_ms(*t) + offset_ms;
            match r {
                Received::BoardDump(raw) => {
                    board = *raw;
                    tracker.feed_dump(&BoardDump { raw: *raw }, at, &mut sink);
                }
                Received::Field { index, raw } => {
                    if let Some(square) = DgtSquare::new(*index) {
                        board[usize::from(*index)] = *raw;
                        tracker.feed_field(FieldUpdate { square, raw: *raw }, at, &mut sink);
                    }
                }
                Received::Times(t) => tracker.feed_clock(t, at, &mut sink),
                _ => {}
            }
            tracker.tick(at, &mut sink);
        }
        tracker.tick(now, &mut sink);
        if asked.replace(false) {
            tracker.feed_dump(&BoardDump { raw: board }, now, &mut sink);
        }
        now += 50;
    }
    confirmed
}

/// The hand speed the end-to-end suite gives accelerated boards.
const HAND_SPEED: u64 = 3;

/// Maps a scenario's virtual milliseconds to the relay's real milliseconds for a simulator
/// running at `speed` with hands at [`HAND_SPEED`] (as `dgt_hil_sim::sim::VirtualTime` does).
struct RelayClock {
    speed: u64,
    hand_speed: u64,
    spans: Vec<(u64, u64)>,
}

impl RelayClock {
    fn new(scenario: &Scenario, speed: u64) -> RelayClock {
        RelayClock { speed, hand_speed: HAND_SPEED.min(speed), spans: scenario.hand_spans() }
    }

    fn real_ms(&self, virtual_ms: u64) -> u64 {
        let mut real = 0;
        let mut at = 0;
        for &(from, to) in &self.spans {
            if virtual_ms <= from {
                break;
            }
            real += (from.max(at) - at) / self.speed;
            let to = to.min(virtual_ms);
            real += (to - from.max(at)) / self.hand_speed;
            at = to;
        }
        real + virtual_ms.saturating_sub(at) / self.speed
    }
}

fn truth(s: &Scenario) -> &GroundTruth {
    s.truth.as_ref().expect("plan_game sets the truth")
}

/// Plies whose `%clk` is not the mover's display after the press (within 1 s), as text.
fn clk_errors(truth: &GroundTruth, got: &[MoveInfo]) -> Vec<String> {
    let mut bad = Vec::new();
    for (t, m) in truth.moves.iter().zip(got) {
        let want = if t.color == "white" { t.white_clock_s } else { t.black_clock_s };
        let ok = match (want, m.clk) {
            (Some(w), Some(g)) => w.abs_diff(g) <= 1,
            (None, None) => true,
            _ => false,
        };
        if !ok {
            bad.push(format!("ply {} {}: %clk {:?}, clock showed {want:?}", t.ply, t.san, m.clk));
        }
    }
    bad
}

fn plan(game: &SourceGame, profile: Profile, seed: u64) -> Scenario {
    plan_game(game, &PlanOptions { profile, seed, ..PlanOptions::default() })
}

fn assert_clk_exact(scenario: &Scenario, got: &[MoveInfo], what: &str) {
    let truth = truth(scenario);
    assert_eq!(got.len(), truth.moves.len(), "{what}: every ply confirmed");
    let bad = clk_errors(truth, got);
    assert!(bad.is_empty(), "{what}: {} plies off:\n{}", bad.len(), bad.join("\n"));
}

/// worldcup#196 (`clean`, seed 197): a blitz game with moves made inside one scan window,
/// the press read before the board reports the piece. In real time and, as in the
/// end-to-end suite, with the simulator's thinking time 150 times faster than the relay's
/// clock (hands at human speed), each press belongs to the move it completed.
#[test]
fn worldcup_196_clk_is_the_display_after_the_press() {
    let games = corpus("worldcup2025-dgt-livechess.pgn");
    let scenario = plan(&games[196], Profile::Clean, 197);
    for speed in [1, 150] {
        let mut tracker = Tracker::<600>::default();
        let got = feed(&mut tracker, &scenario, 0, speed);
        assert_clk_exact(&scenario, &got, &format!("speed {speed}"));
    }
}

/// A game whose last move was White's: the lever is left high on Black's side.
fn white_moved_last(games: &[SourceGame]) -> &SourceGame {
    games
        .iter()
        .find(|g| g.moves.len() % 2 == 1 && g.moves.len() > 20 && g.moves.iter().all(|m| m.clk_s.is_some()))
        .expect("a game White ended")
}

/// Two games in a row on one board and clock, the first ended by White's move: the second
/// learns White's side from the lever at its start, not from the first game's last press.
#[test]
fn second_game_on_a_board_gets_its_own_clock_sides() {
    let games = corpus("worldcup2025-dgt-livechess.pgn");
    let first = plan(white_moved_last(&games), Profile::Clean, 3);
    for second in [plan(&games[10], Profile::Clean, 4), plan(&games[11], Profile::Rotated, 5)] {
        let mut tracker = Tracker::<600>::default();
        let got = feed(&mut tracker, &first, 0, 1);
        assert_clk_exact(&first, &got, "first game");
        let got = feed_with(&mut tracker, &second, first.duration_ms() + 15_000, 1, true);
        assert_clk_exact(&second, &got, "second game");
    }
}

/// A game with a clock, then one on a board without a clock: no `%clk` in the second.
#[test]
fn game_without_clock_after_one_with_a_clock_has_no_clk() {
    let games = corpus("worldcup2025-dgt-livechess.pgn");
    let first = plan(white_moved_last(&games), Profile::Clean, 3);
    let second = plan(&games[10], Profile::NoClock, 4);
    assert!(truth(&second).clock.is_none());
    // Right after the first game, and long after it.
    for gap in [1_000, 60_000] {
        let mut tracker = Tracker::<600>::default();
        let _ = feed(&mut tracker, &first, 0, 1);
        let got = feed(&mut tracker, &second, first.duration_ms() + gap, 1);
        assert_eq!(got.len(), truth(&second).moves.len());
        let with_clk: Vec<_> = got.iter().filter(|m| m.clk.is_some()).map(|m| (m.ply, m.clk)).collect();
        assert!(with_clk.is_empty(), "gap {gap}: stale %clk {with_clk:?}");
    }
}

/// livechess#3 has `18. Re2 {[%clk 00:00:00]}` and goes on: corrupt source data, not a
/// flag fall. The planner places that press by `%emt` or a made-up time; the game is
/// replayed to its end and the relay sees no flag.
#[test]
fn corrupt_zero_clk_in_the_source_is_no_flag_fall() {
    let games = corpus("livechess-2.2.5-sample-round.pgn");
    let game = &games[3];
    let zero = game.moves.iter().position(|m| m.clk_s == Some(0)).expect("the corrupt %clk");
    assert!(zero + 1 < game.moves.len(), "the game goes on after it");
    let scenario = plan(game, Profile::Clean, 1);
    let t = truth(&scenario);
    assert_eq!(t.moves.len(), game.moves.len());
    let m = &t.moves[zero];
    let shown = if m.color == "white" { m.white_clock_s } else { m.black_clock_s };
    assert!(shown.is_some_and(|s| s > 60), "the clock after ply {}: {shown:?}", zero + 1);
    let capped: Vec<u32> =
        t.moves.iter().filter(|m| m.events.iter().any(|e| e == "think_capped")).map(|m| m.ply).collect();
    assert!(capped.is_empty(), "plies pressed just before the flag: {capped:?}");
    let mut tracker = Tracker::<600>::default();
    let got = feed(&mut tracker, &scenario, 0, 1);
    assert_eq!(got.len(), game.moves.len(), "every ply confirmed");
    assert_ne!(tracker.result().map(|r| r.1), Some(EndReason::FlagFall));
}
