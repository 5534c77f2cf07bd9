//! Clock regressions: White's display re-learned for every game, clock state reset per
//! game, a clock that is gone gives no `%clk`, and presses that come before the board shows
//! the move belong to that move.

mod common;

use common::Sim;
use dgt_core::{Config, Event, GameState, MoveInfo};
use dgt_protocol::{ClockSide, ClockStatus, ClockTimes, Orientation};
use shakmaty::{Board, Chess, Color, Position};

/// Confirmed moves as (UCI, `%clk`), in the order they were confirmed.
fn confirmed(sim: &Sim) -> Vec<(String, Option<u32>)> {
    sim.events
        .iter()
        .filter_map(|e| match e {
            Event::MoveConfirmed(MoveInfo { uci, clk, .. }) => Some((uci.to_string(), *clk)),
            _ => None,
        })
        .collect()
}

/// The displays (White, Black) of the simulated clock.
fn displays(sim: &Sim) -> (u32, u32) {
    let c = sim.clock.as_ref().expect("a clock");
    (c.white, c.black)
}

/// Plays `ucis` from the start with a press after each move; returns the position.
fn play_pressed(sim: &mut Sim, ucis: &[&str]) -> Chess {
    let mut pos = Chess::default();
    for (i, uci) in ucis.iter().enumerate() {
        pos = sim.play_uci(&pos, uci);
        sim.wait(400);
        sim.press(3 + i as u32, 0);
        sim.wait(400);
    }
    pos
}

/// Game one: a clock, three plies, White moved last (so Black's lever is high and Black's
/// clock runs). Then the pieces go back to the start: a new game.
fn first_game_white_moved_last(white_side: ClockSide) -> Sim {
    let mut sim = Sim::started(Config::default(), Orientation::Normal).with_clock(300, white_side);
    sim.start_clock();
    play_pressed(&mut sim, &["e2e4", "e7e5", "g1f3"]);
    assert_eq!(sim.tracker.ply_count(dgt_core::View::Confirmed), 3);
    sim.board = Board::new();
    sim.dump();
    sim.wait(500);
    assert_eq!(sim.tracker.state(), GameState::Active);
    assert_eq!(sim.tracker.ply_count(dgt_core::View::Confirmed), 0, "a new game started");
    sim.clear_events();
    sim
}

#[test]
fn second_game_learns_white_from_the_lever_the_arbiter_raises() {
    for white_side in [ClockSide::Left, ClockSide::Right] {
        let mut sim = first_game_white_moved_last(white_side);
        // The arbiter: stop, reset, raise White's lever, start.
        let c = sim.clock.as_mut().expect("a clock");
        c.running = None;
        sim.send_clock();
        sim.wait(1000);
        let c = sim.clock.as_mut().expect("a clock");
        c.white = 600;
        c.black = 600;
        sim.send_clock();
        sim.wait(1000);
        sim.clock.as_mut().expect("a clock").high = Color::White;
        sim.send_clock();
        sim.wait(1000);
        sim.start_clock();
        sim.wait(1000);
        let mut pos = Chess::default();
        let mut want = Vec::new();
        for (i, uci) in ["d2d4", "g8f6", "c2c4", "e7e6"].iter().enumerate() {
            let mover = pos.turn();
            pos = sim.play_uci(&pos, uci);
            sim.wait(400);
            sim.press(5 + i as u32, 0);
            let (w, b) = displays(&sim);
            want.push((uci.to_string(), Some(if mover == Color::White { w } else { b })));
            sim.wait(400);
        }
        assert_eq!(confirmed(&sim), want, "White on the {white_side:?} display");
        let clocks = sim.tracker.clocks();
        assert_eq!((clocks.white, clocks.black), (Some(displays(&sim).0), Some(displays(&sim).1)));
        assert_eq!(clocks.running, Some(Color::White));
    }
}

#[test]
fn lever_flip_while_stopped_before_the_first_move_is_no_press() {
    // The clock is set up (and its lever raised) only after the board shows the start.
    let mut sim = first_game_white_moved_last(ClockSide::Left);
    let c = sim.clock.as_mut().expect("a clock");
    c.running = None;
    c.white = 900;
    c.black = 900;
    c.high = Color::White;
    sim.send_clock();
    sim.wait(300);
    // The lever is tried once more before the start (down and up again): still no press.
    sim.clock.as_mut().expect("a clock").high = Color::Black;
    sim.send_clock();
    sim.clock.as_mut().expect("a clock").high = Color::White;
    sim.send_clock();
    sim.wait(300);
    sim.start_clock();
    sim.wait(2000);
    let pos = sim.play_uci(&Chess::default(), "e2e4");
    sim.wait(400);
    sim.press(12, 0);
    sim.wait(400);
    assert_eq!(confirmed(&sim), vec![("e2e4".to_string(), Some(888))]);
    let _ = pos;
}

fn no_clock_reading() -> ClockTimes {
    ClockTimes { status: ClockStatus(0x20), ..ClockTimes::default() }
}

/// Plays `ucis` without a clock, each confirmed by quiet time.
fn play_quiet(sim: &mut Sim, ucis: &[&str]) {
    let mut pos = Chess::default();
    for uci in ucis {
        pos = sim.play_uci(&pos, uci);
        sim.wait(3000);
    }
}

#[test]
fn clock_reporting_no_clock_between_games_gives_no_clk() {
    let mut sim = first_game_white_moved_last(ClockSide::Left);
    // The clock is unplugged: the board reports "no clock" (D5).
    sim.clock = None;
    let now = sim.now;
    let events = &mut sim.events;
    sim.tracker.feed_clock(&no_clock_reading(), now, &mut |e| events.push(e));
    play_quiet(&mut sim, &["e2e4", "e7e5", "g1f3"]);
    let got = confirmed(&sim);
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(got.iter().all(|(_, clk)| clk.is_none()), "{got:?}");
    assert_eq!(sim.tracker.clocks(), dgt_core::ClockState::default());
}

#[test]
fn clock_set_between_games_then_removed_silently_gives_no_clk() {
    let mut sim = first_game_white_moved_last(ClockSide::Left);
    // The arbiter stops and resets the clock to 1:30:00 ...
    let c = sim.clock.as_mut().expect("a clock");
    c.running = None;
    c.white = 5400;
    c.black = 5400;
    c.high = Color::White;
    sim.send_clock();
    // ... and it is taken away (no more readings): the game is played without it.
    sim.clock = None;
    sim.wait(1000);
    play_quiet(&mut sim, &["e2e4", "e7e5", "g1f3", "b8c6"]);
    let got = confirmed(&sim);
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(got.iter().all(|(_, clk)| clk.is_none()), "{got:?}");
}

#[test]
fn running_clock_that_goes_silent_stops_giving_clk() {
    let mut sim = Sim::started(Config::default(), Orientation::Normal).with_clock(300, ClockSide::Left);
    sim.start_clock();
    let pos = play_pressed(&mut sim, &["e2e4", "e7e5"]);
    // The clock's cable comes loose mid-game: no reading, no "no clock" either.
    sim.clock = None;
    sim.wait(6000);
    let pos = sim.play_uci(&pos, "g1f3");
    sim.wait(3000);
    let _ = sim.play_uci(&pos, "b8c6");
    sim.wait(3000);
    let got = confirmed(&sim);
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(got[..2].iter().all(|(_, clk)| clk.is_some()), "{got:?}");
    assert!(got[2..].iter().all(|(_, clk)| clk.is_none()), "{got:?}");
}

/// A press read before the board's scan shows the move is kept until the board shows it.
/// When the players go on before the board settles, that press still belongs to the move
/// it completed, not to the presser's next one.
#[test]
fn early_presses_belong_to_the_move_they_completed_in_fast_play() {
    // A board that settles slowly compared with the play (as a fast simulated game).
    let config = Config { settle_ms: 5000, ..Config::default() };
    let mut sim = Sim::started(config, Orientation::Normal).with_clock(180, ClockSide::Left);
    sim.start_clock();
    let mut want = Vec::new();
    let mut pos = Chess::default();
    // Some presses arrive before the board reports the piece put down ("early").
    for (i, (uci, early)) in
        [("e2e4", false), ("e7e5", true), ("g1f3", true), ("b8c6", false), ("f1c4", true), ("g8f6", false)]
            .into_iter()
            .enumerate()
    {
        let mover = pos.turn();
        let m = common::parse_uci(&pos, uci);
        let piece = sim.lift(m.from().expect("a normal move"));
        if early {
            sim.press(2 + i as u32, 2);
            sim.put(m.to(), piece);
        } else {
            sim.put(m.to(), piece);
            sim.press(2 + i as u32, 2);
        }
        let (w, b) = displays(&sim);
        want.push((uci.to_string(), Some(if mover == Color::White { w } else { b })));
        pos.play_unchecked(m);
        sim.wait(100);
    }
    sim.wait(8000);
    assert_eq!(confirmed(&sim), want);
}
