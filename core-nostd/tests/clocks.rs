//! Clock regressions: White's display re-learned for every game, clock state reset per
//! game, a clock that is gone gives no `%clk`, and presses that come before the board shows
//! the move belong to that move.

mod common;

use common::Sim;
use dgt_core::{Config, Event, GameState, MoveInfo, Timing};
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

/// A game of one ply (1. e4, pressed, then the clock stopped: a forfeit) and the pieces set
/// up again: the next game, not a takeback of e4. Taken back while the clock runs, it is a
/// takeback.
#[test]
fn the_start_set_up_after_a_one_ply_game_with_the_clock_stopped_is_the_next_game() {
    for stopped in [true, false] {
        let mut sim = Sim::started(Config::default(), Orientation::Normal).with_clock(300, ClockSide::Left);
        sim.start_clock();
        play_pressed(&mut sim, &["e2e4"]);
        if stopped {
            sim.clock.as_mut().expect("a clock").running = None;
            sim.send_clock();
            sim.wait(500);
        }
        sim.board = Board::new();
        sim.dump();
        sim.wait(500);
        let new_games = sim.count(|e| matches!(e, Event::GameStarted { .. }));
        let takebacks = sim.count(|e| matches!(e, Event::Takeback { .. }));
        assert_eq!((new_games, takebacks), if stopped { (2, 0) } else { (1, 1) }, "stopped {stopped}");
    }
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
    let config = Config { timing: Timing { settle_ms: 5000, ..Timing::default() }, ..Config::default() };
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

/// The clock's display of the colour that just moved (the presser's `%clk`).
fn mover_display(sim: &Sim, mover: Color) -> u32 {
    let (w, b) = displays(sim);
    if mover == Color::White { w } else { b }
}

/// The running player presses, adding `inc`: one reading, sent at once (the clock reports
/// on a change; a display that has not ticked since the last reading sends nothing else).
fn press_once(sim: &mut Sim, inc: u32) {
    let c = sim.clock.as_mut().expect("a clock");
    let mover = c.running.unwrap_or(c.high);
    let t = if mover == Color::White { &mut c.white } else { &mut c.black };
    *t += inc;
    c.running = Some(!mover);
    c.high = !mover;
    sim.now += 10;
    sim.send_clock();
}

/// A clock started (White's side running) before the board is first read: the tracker's
/// first reading is a clock already running, with nothing to say which display is White's.
/// The first press, made by White after the one ply the board shows, says it: the lever
/// that went down is White's. Every `%clk` is the presser's own, with White on either side.
#[test]
fn clock_found_running_at_the_start_learns_white_from_the_first_press() {
    for white_side in [ClockSide::Left, ClockSide::Right] {
        let mut sim = Sim::new(Config::default());
        sim.clock = Some(common::SimClock::new(300, 300, white_side));
        sim.start_clock();
        sim.board = Board::new();
        sim.dump();
        assert_eq!(sim.tracker.state(), GameState::Active);
        let mut pos = Chess::default();
        let mut want = Vec::new();
        for (i, uci) in ["g1f3", "d7d5", "g2g3", "g8f6", "f1g2", "e7e6"].iter().enumerate() {
            let mover = pos.turn();
            pos = sim.play_uci(&pos, uci);
            sim.wait(300);
            press_once(&mut sim, 3 + i as u32);
            want.push((uci.to_string(), Some(mover_display(&sim, mover))));
            sim.wait(700);
        }
        assert_eq!(confirmed(&sim), want, "White on the {white_side:?} display");
        let clocks = sim.tracker.clocks();
        assert_eq!((clocks.white, clocks.black), (Some(displays(&sim).0), Some(displays(&sim).1)));
    }
}

/// A press whose side the board makes certain re-anchors the displays. A relay restarted
/// mid-game learns the displays from the lever, taking the side that runs for the side to
/// move; here Black's last move was confirmed without a press (quiet time) and Black
/// presses only after the restart, so that guess is the wrong way round. White's next move,
/// the only ply on the board when its press comes, says which display is White's: from
/// there on every `%clk` is the presser's own.
#[test]
fn a_certain_press_corrects_the_displays_after_a_restart() {
    let mut a = Sim::started(Config::default(), Orientation::Normal).with_clock(600, ClockSide::Left);
    a.start_clock();
    let pos = a.play_uci(&Chess::default(), "e2e4");
    a.wait(300);
    a.press(3, 0);
    a.wait(700);
    let pos = a.play_uci(&pos, "e7e5");
    a.wait(5000);
    assert_eq!(a.tracker.ply_count(dgt_core::View::Confirmed), 2, "e5 confirmed by quiet time");
    let mut journal = Vec::new();
    a.tracker.for_each_move(dgt_core::View::Confirmed, |m| {
        journal.push(dgt_core::ResumePly { uci: m.uci, clk: m.clk, emt: m.emt });
    });
    // The relay restarts: a new tracker resumes the game and reads the same clock.
    let mut b = Sim::new(Config::default());
    b.board = a.board.clone();
    b.clock = a.clock.clone();
    b.now = a.now + 2000;
    b.send_clock();
    let now = b.now;
    let events = &mut b.events;
    b.tracker
        .resume(
            Chess::default(),
            shakmaty::CastlingMode::Standard,
            Orientation::Normal,
            journal,
            now,
            &mut |e| events.push(e),
        )
        .expect("resume");
    b.dump();
    b.send_clock();
    // Black presses late, then the game goes on.
    b.press(6, 0);
    b.wait(4000);
    let mut pos = pos;
    let mut want = Vec::new();
    for (i, uci) in ["g1f3", "b8c6", "f1b5", "a7a6"].iter().enumerate() {
        let mover = pos.turn();
        pos = b.play_uci(&pos, uci);
        b.wait(300);
        b.press(4 + i as u32, 0);
        want.push((uci.to_string(), Some(mover_display(&b, mover))));
        b.wait(700);
    }
    assert_eq!(confirmed(&b), want);
    let clocks = b.tracker.clocks();
    assert_eq!((clocks.white, clocks.black), (Some(displays(&b).0), Some(displays(&b).1)));
}

/// Two presses between two polls of the clock (a premoved pair: both players press within
/// milliseconds) come in one reading: the lever is back where it was, but the displays
/// show both presses. With an increment the running display went up; without one the
/// display that was stopped changed (it ran across a second). Either way both plies get
/// the `%clk` their press left on the clock.
#[test]
fn two_presses_in_one_reading_give_both_plies_their_clk() {
    for inc in [3, 0] {
        let mut sim = Sim::started(Config::default(), Orientation::Normal).with_clock(300, ClockSide::Left);
        sim.start_clock();
        let mut pos = Chess::default();
        let mut want = Vec::new();
        for (i, uci) in ["e2e4", "e7e5"].iter().enumerate() {
            let mover = pos.turn();
            pos = sim.play_uci(&pos, uci);
            sim.wait(300);
            sim.press(2 + i as u32, inc);
            want.push((uci.to_string(), Some(mover_display(&sim, mover))));
            sim.wait(700);
        }
        // White and Black move, then both press before the clock is polled again.
        pos = sim.play_uci(&pos, "g1f3");
        pos = sim.play_uci(&pos, "b8c6");
        sim.wait(300);
        {
            let c = sim.clock.as_mut().expect("a clock");
            c.white -= 1;
            c.white += inc;
            // Black's display runs a few milliseconds, across a second when there is no
            // increment.
            c.black = c.black + inc - u32::from(inc == 0);
            assert_eq!(c.running, Some(Color::White));
        }
        want.push(("g1f3".to_string(), Some(displays(&sim).0)));
        want.push(("b8c6".to_string(), Some(displays(&sim).1)));
        sim.now += 10;
        sim.send_clock();
        sim.wait(700);
        for uci in ["f1c4", "g8f6"] {
            let mover = pos.turn();
            pos = sim.play_uci(&pos, uci);
            sim.wait(300);
            sim.press(2, inc);
            want.push((uci.to_string(), Some(mover_display(&sim, mover))));
            sim.wait(700);
        }
        assert_eq!(confirmed(&sim), want, "increment {inc}");
    }
}

/// A running clock sends a reading when its display changes; one whose display did not
/// change for seconds (a player who spent no time on the clock's count, or a clock that
/// reports sparsely) still sends its press: the lever that flips after that silence is a
/// press like any other (only an outage of the board hides when a press was made).
#[test]
fn a_press_after_seconds_without_a_reading_is_a_press() {
    let mut sim = Sim::started(Config::default(), Orientation::Normal).with_clock(300, ClockSide::Left);
    sim.start_clock();
    let mut pos = Chess::default();
    let mut want = Vec::new();
    for uci in ["e2e4", "e7e5", "g1f3", "b8c6"] {
        let mover = pos.turn();
        sim.wait(2000);
        pos = sim.play_uci(&pos, uci);
        sim.wait(1000);
        press_once(&mut sim, 2);
        want.push((uci.to_string(), Some(mover_display(&sim, mover))));
        sim.wait(300);
    }
    assert_eq!(confirmed(&sim), want);
}

/// A press that waits for the board (its piece could still be sliding on) belongs to the
/// presser's ply the board showed before it, not to the presser's next ply when the
/// opponent replied after the press: Be2-g4 pressed, the reply Nxg4 and the recapture
/// hxg4 made and reported within a scan period or two of that press, then Black presses.
#[test]
fn a_waiting_press_keeps_its_ply_when_the_opponent_replies_after_it() {
    let mut sim = Sim::started(Config::default(), Orientation::Normal).with_clock(300, ClockSide::Left);
    sim.start_clock();
    let mut pos = Chess::default();
    let mut want = Vec::new();
    for (i, uci) in ["h2h3", "g8f6", "e2e3", "b8c6", "f1e2", "e7e6"].iter().enumerate() {
        let mover = pos.turn();
        pos = sim.play_uci(&pos, uci);
        sim.wait(300);
        sim.press(2 + i as u32, 2);
        want.push((uci.to_string(), Some(mover_display(&sim, mover))));
        sim.wait(700);
    }
    // Be2-g4: the bishop could go on to h5, so the press waits for the board to settle.
    pos = sim.play_uci(&pos, "e2g4");
    press_once(&mut sim, 2);
    want.push(("e2g4".to_string(), Some(displays(&sim).0)));
    // Black takes on g4 at once, White recaptures before Black has pressed.
    sim.now += 100;
    pos = sim.play_uci(&pos, "f6g4");
    pos = sim.play_uci(&pos, "h3g4");
    press_once(&mut sim, 2);
    want.push(("f6g4".to_string(), Some(displays(&sim).1)));
    sim.wait(1000);
    press_once(&mut sim, 2);
    want.push(("h3g4".to_string(), Some(displays(&sim).0)));
    sim.wait(1000);
    let _ = pos;
    assert_eq!(confirmed(&sim), want);
}

/// Two presses that one poll hid completely (the lever back where it was, neither display
/// changed): the first presser's ply has no `%clk` anyone can know, but the second's is
/// still on the clock (the display stopped at it) until its player runs again. White's
/// next press shows it, even when it is read only once Black has moved again: the press's
/// reading is the clock at the press.
#[test]
fn a_ply_whose_press_was_hidden_takes_its_clk_from_the_next_press_that_shows_it() {
    let mut sim = Sim::started(Config::default(), Orientation::Normal).with_clock(300, ClockSide::Left);
    sim.start_clock();
    let mut pos = Chess::default();
    let mut want = Vec::new();
    for (i, uci) in ["e2e4", "e7e5"].iter().enumerate() {
        let mover = pos.turn();
        pos = sim.play_uci(&pos, uci);
        sim.wait(300);
        sim.press(2 + i as u32, 0);
        want.push((uci.to_string(), Some(mover_display(&sim, mover))));
        sim.wait(700);
    }
    // Nf3 and Nc6, both pressed between two polls: nothing on the clock shows it.
    pos = sim.play_uci(&pos, "g1f3");
    pos = sim.play_uci(&pos, "b8c6");
    want.push(("g1f3".to_string(), None));
    want.push(("b8c6".to_string(), Some(displays(&sim).1)));
    sim.wait(500);
    // Bc4 pressed (the bishop could slide on: the press waits), Nf6 at once, pressed.
    pos = sim.play_uci(&pos, "f1c4");
    press_once(&mut sim, 0);
    want.push(("f1c4".to_string(), Some(displays(&sim).0)));
    sim.now += 50;
    pos = sim.play_uci(&pos, "g8f6");
    sim.now += 50;
    press_once(&mut sim, 0);
    want.push(("g8f6".to_string(), Some(displays(&sim).1)));
    sim.wait(2000);
    let _ = pos;
    assert_eq!(confirmed(&sim), want);
}

/// The clock stopped after a one-move game whose press came before the board showed the
/// move: the stopped clock is no arbiter setting up the clock (a press was made), so it
/// does not relearn the displays, and the press's reading is read with the displays it was
/// made with.
#[test]
fn a_clock_stopped_after_an_early_press_keeps_the_press_clk() {
    let mut sim = Sim::started(Config::default(), Orientation::Normal).with_clock(5460, ClockSide::Left);
    sim.clock.as_mut().expect("a clock").black = 900;
    sim.send_clock();
    sim.start_clock();
    sim.wait(200);
    sim.lift(shakmaty::Square::E2);
    press_once(&mut sim, 0);
    let white = displays(&sim).0;
    sim.put(shakmaty::Square::E4, common::piece(Color::White, shakmaty::Role::Pawn));
    sim.now += 100;
    sim.clock.as_mut().expect("a clock").running = None;
    sim.send_clock();
    sim.wait(3000);
    assert_eq!(confirmed(&sim), vec![("e2e4".to_string(), Some(white))]);
}

/// A player who forgot to press, whose move stood unpressed for the quiet time with the
/// reply on the board, presses late: with one ply (the reply) on the board, that late press
/// is still the forgetful player's, and must not turn the displays round, nor wait to take
/// their next move. The reply's own press follows.
#[test]
fn a_late_press_after_a_forgotten_one_does_not_turn_the_displays_round() {
    late_press_after(5000);
}

/// A player who presses late, after the opponent's reply is on the board, gives their
/// move its `%clk`: the reply proves the move, but the move waits for its press while the
/// player's clock runs.
#[test]
fn a_late_press_gives_its_move_the_clk() {
    late_press_after(1500);
}

/// Plays 1. e4 e5 pressed, then Nf3 unpressed, Nc6 at once, `wait_ms`, White's late press,
/// Black's press and four more pressed plies; checks every `%clk` (Nf3's when the press
/// came before the quiet time confirmed it).
fn late_press_after(wait_ms: u64) {
    let mut sim = Sim::started(Config::default(), Orientation::Normal).with_clock(600, ClockSide::Left);
    sim.start_clock();
    let mut pos = Chess::default();
    let mut want = Vec::new();
    for (i, uci) in ["e2e4", "e7e5"].iter().enumerate() {
        let mover = pos.turn();
        pos = sim.play_uci(&pos, uci);
        sim.wait(300);
        sim.press(2 + i as u32, 0);
        want.push((uci.to_string(), Some(mover_display(&sim, mover))));
        sim.wait(700);
    }
    // White plays Nf3 and does not press; Black replies at once.
    pos = sim.play_uci(&pos, "g1f3");
    sim.wait(200);
    pos = sim.play_uci(&pos, "b8c6");
    sim.wait(wait_ms);
    // White presses late, then Black.
    press_once(&mut sim, 0);
    let white_late = displays(&sim).0;
    sim.wait(300);
    press_once(&mut sim, 0);
    sim.wait(700);
    let black = displays(&sim).1;
    for (i, uci) in ["f1c4", "g8f6", "d2d3", "f8c5"].iter().enumerate() {
        let mover = pos.turn();
        pos = sim.play_uci(&pos, uci);
        sim.wait(300);
        sim.press(2 + i as u32, 0);
        want.push((uci.to_string(), Some(mover_display(&sim, mover))));
        sim.wait(700);
    }
    let got = confirmed(&sim);
    assert_eq!(got[2].0, "g1f3");
    let unpressed_ms = u64::from(Config::default().timing.unpressed_ms);
    let nf3 = if wait_ms < unpressed_ms { Some(white_late) } else { None };
    assert_eq!(got[2].1, nf3, "{got:?}");
    assert_eq!(got[3].0, "b8c6");
    // Confirmed by the quiet time before its press, Nc6 may have no `%clk`; a value given
    // is the right one.
    assert!(got[3].1 == Some(black) || (nf3.is_none() && got[3].1.is_none()), "{got:?}");
    let mut rest = got.clone();
    rest.drain(2..4);
    assert_eq!(rest, want);
}

/// A move whose every field update was lost: the board looks untouched, so nothing asks
/// for a dump, until the press says a move was made. A scan period after the press, the
/// board still showing no move of the presser, the tracker asks for one; its dump shows
/// the move, which the waiting press confirms with its `%clk`, before the reply.
#[test]
fn a_press_with_no_move_on_the_board_asks_for_a_dump() {
    let mut sim = Sim::started(Config::default(), Orientation::Normal).with_clock(300, ClockSide::Left);
    sim.start_clock();
    let mut pos = Chess::default();
    let mut want = Vec::new();
    for (i, uci) in ["e2e4", "e7e5"].iter().enumerate() {
        let mover = pos.turn();
        pos = sim.play_uci(&pos, uci);
        sim.wait(300);
        sim.press(2 + i as u32, 2);
        want.push((uci.to_string(), Some(mover_display(&sim, mover))));
        sim.wait(700);
    }
    // Nf3, neither square reported.
    let nf3 = common::parse_uci(&pos, "g1f3");
    pos.play_unchecked(nf3);
    sim.board = pos.board().clone();
    sim.wait(300);
    press_once(&mut sim, 2);
    want.push(("g1f3".to_string(), Some(displays(&sim).0)));
    sim.wait(1000);
    assert_eq!(confirmed(&sim), want);
}

/// Six plies made and pressed in quick succession while the board's reports were lost
/// (three not reported at all, then three whose landings were lost: the board cannot be
/// explained until a dump shows them): each press waits for the board, and each gives its
/// own ply its `%clk` when the dumps come. (Four waiting presses were kept: the oldest were
/// forgotten, and a later press of the same player took their plies.) Each three plies
/// reach their board in one order only: a board reached by several orders is not confirmed
/// at all (see `orders.rs`).
#[test]
fn six_presses_waiting_for_the_board_keep_their_plies() {
    let mut sim = Sim::started(Config::default(), Orientation::Normal).with_clock(300, ClockSide::Left);
    sim.start_clock();
    let mut pos = Chess::default();
    let mut want = Vec::new();
    for (i, uci) in ["e2e4", "e7e5"].iter().enumerate() {
        let mover = pos.turn();
        pos = sim.play_uci(&pos, uci);
        sim.wait(300);
        sim.press(2 + i as u32, 2);
        want.push((uci.to_string(), Some(mover_display(&sim, mover))));
        sim.wait(700);
    }
    // No tick between the plies: nothing is decided by time, no dump is answered.
    for (i, uci) in ["g1f3", "b8c6", "f3e5", "g8f6", "d2d3", "f6e4"].into_iter().enumerate() {
        let mover = pos.turn();
        let m = common::parse_uci(&pos, uci);
        if i < 3 {
            // Not reported at all.
            pos.play_unchecked(m);
            sim.board = pos.board().clone();
        } else {
            // The lift reported, the landing lost.
            sim.lift(m.from().expect("a normal move"));
            pos.play_unchecked(m);
            sim.board = pos.board().clone();
        }
        sim.now += 150;
        {
            let c = sim.clock.as_mut().expect("a clock");
            if mover == Color::White { c.white -= 1 } else { c.black -= 1 }
        }
        press_once(&mut sim, 2);
        want.push((uci.to_string(), Some(mover_display(&sim, mover))));
        if i == 2 {
            // A dump shows the first three; the board is not still long enough for the
            // presses to be taken before the next lift.
            sim.now += 20;
            sim.dump();
        }
    }
    sim.now += 100;
    sim.dump();
    sim.wait(2000);
    assert_eq!(confirmed(&sim), want);
}

/// Black moves and presses while the board is away; back, the board shows the move and the
/// clock shows White running. White's next press comes before the board shows White's move
/// (the landing is reported late): it is White's, not the press of Black's one provisional
/// ply, and each ply keeps its own player's time. (Taken as Black's, it put White's and
/// Black's displays the wrong way round for the rest of the game.)
#[test]
fn a_press_made_while_the_board_was_away_does_not_make_the_next_one_the_other_colours() {
    let mut sim = Sim::started(Config::default(), Orientation::Normal).with_clock(300, ClockSide::Left);
    sim.start_clock();
    let mut pos = play_pressed(&mut sim, &["e2e4", "e7e5", "g1f3"]);
    let mut want: Vec<(String, Option<u32>)> = confirmed(&sim);
    assert_eq!(want.len(), 3, "{:?}", sim.events);
    // Away: Black plays Nc6 and presses; nothing is heard.
    let now = sim.now;
    sim.tracker.board_away(now);
    let nc6 = common::parse_uci(&pos, "b8c6");
    pos.play_unchecked(nc6);
    sim.board = pos.board().clone();
    sim.now += 2_000;
    {
        let c = sim.clock.as_mut().expect("a clock");
        c.running = Some(Color::White);
        c.high = Color::White;
    }
    want.push(("b8c6".into(), Some(displays(&sim).1)));
    // Back: a clock reading, then the dump.
    sim.send_clock();
    sim.dump();
    sim.wait(1_000);
    // White plays Bc4: the lift is reported, the press comes before the landing.
    sim.lift(shakmaty::Square::F1);
    sim.now += 100;
    {
        let c = sim.clock.as_mut().expect("a clock");
        c.white -= 1;
    }
    press_once(&mut sim, 2);
    want.push(("f1c4".into(), Some(displays(&sim).0)));
    sim.play_uci(&pos, "f1c4");
    sim.wait(2_000);
    assert_eq!(confirmed(&sim), want);
}

/// A clock started and pressed twice (White, then Black) before the board reports any
/// move: a relay reading a backlog at once, the board's reports of 1. d4 Nf6 coming after
/// the presses. Returns the simulation and the position after the two plies.
fn two_presses_before_the_board_shows_their_plies() -> (Sim, Chess) {
    let mut sim = Sim::started(Config::default(), Orientation::Normal).with_clock(910, ClockSide::Left);
    sim.start_clock();
    sim.wait(2500);
    sim.press_step_ms = 0;
    {
        let c = sim.clock.as_mut().expect("a clock");
        c.white = 918;
    }
    sim.press(0, 0);
    {
        let c = sim.clock.as_mut().expect("a clock");
        c.black = 920;
    }
    sim.press(0, 0);
    let mut pos = Chess::default();
    for uci in ["d2d4", "g8f6"] {
        let m = common::parse_uci(&pos, uci);
        pos.play_unchecked(m);
    }
    (sim, pos)
}

/// 1. d4 Nf6, each with the time its player's press showed.
fn d4_nf6_pressed() -> Vec<(String, Option<u32>)> {
    vec![("d2d4".to_string(), Some(918)), ("g8f6".to_string(), Some(920))]
}

/// The dump the presses asked for comes 700 ms on (a chain's polling cycle) and shows both
/// plies: each press takes its own, the newest the last ply, the one before it the ply
/// before.
#[test]
fn presses_made_before_a_late_dump_shows_their_plies_take_them_in_turn() {
    let (mut sim, pos) = two_presses_before_the_board_shows_their_plies();
    sim.wait_without_dumps(700);
    sim.board = pos.board().clone();
    sim.dump();
    sim.wait(1500);
    assert_eq!(confirmed(&sim), d4_nf6_pressed());
}

/// The plies are reported 400 ms after the presses, in one reading (so a dump must verify
/// them), and the dump comes only behind seconds of backlog: the presses, whose plies the
/// line has, wait for it however long their window is, and give each ply its `%clk`.
#[test]
fn presses_whose_plies_wait_for_a_late_dump_keep_them() {
    let (mut sim, pos) = two_presses_before_the_board_shows_their_plies();
    sim.wait_without_dumps(400);
    sim.step_ms = 0;
    for sq in [shakmaty::Square::G8, shakmaty::Square::F6, shakmaty::Square::D4, shakmaty::Square::D2] {
        sim.put(sq, pos.board().piece_at(sq));
    }
    sim.step_ms = 40;
    sim.wait_without_dumps(3500);
    sim.dump();
    sim.wait(1000);
    assert_eq!(confirmed(&sim), d4_nf6_pressed());
}

/// The board's reports of 1. d4 Nf6 2. Bf4 come 1.2 s after the first two presses (each
/// ply's in its own scan, no dump coming meanwhile), then White's second press: the
/// presses are the plies' in order. (The first two found no ply so long after them, and
/// White's second took d4.)
#[test]
fn presses_made_long_before_their_plies_showed_take_them_in_order() {
    let (mut sim, _) = two_presses_before_the_board_shows_their_plies();
    sim.wait_without_dumps(1200);
    let after_d4 = sim.play_uci(&Chess::default(), "d2d4");
    let after_nf6 = sim.play_uci(&after_d4, "g8f6");
    sim.play_uci(&after_nf6, "c1f4");
    sim.press(0, 7);
    sim.wait_without_dumps(2500);
    let mut want = d4_nf6_pressed();
    want.push(("c1f4".to_string(), Some(925)));
    assert_eq!(confirmed(&sim), want);
}

/// A game of 1. e4 pressed, then 1... e5 and 2. Nf3 whose presses were never seen (two
/// presses between two readings of the board's event log on a chain), then 2... Nc6 pressed,
/// the press read as a reading rebuilt from the log: only Black's display in it was
/// measured, White's is the last one known (e4's). So Nf3 gets no `%clk` (nor e5); read
/// whole from the clock, White's display at Black's press is Nf3's.
#[test]
fn a_ply_without_its_press_takes_no_clock_from_a_rebuilt_reading() {
    for rebuilt in [true, false] {
        let mut sim = Sim::started(Config::default(), Orientation::Normal).with_clock(900, ClockSide::Left);
        sim.start_clock();
        sim.wait(500);
        let after_e4 = sim.play_uci(&Chess::default(), "e2e4");
        sim.wait(300);
        sim.press(3, 10);
        sim.wait(500);
        let after_e5 = sim.play_uci(&after_e4, "e7e5");
        sim.wait(500);
        let after_nf3 = sim.play_uci(&after_e5, "g1f3");
        sim.wait(500);
        sim.play_uci(&after_nf3, "b8c6");
        sim.wait(300);
        // Black presses at 903: White runs, its display at 912 (Nf3's press) or, rebuilt,
        // 907 (e4's, the last White display known).
        let mut r = sim.clock.as_ref().map(|c| c.reading()).expect("a clock");
        r.left.time = dgt_protocol::ClockTime::from_seconds(if rebuilt { 907 } else { 912 });
        r.right.time = dgt_protocol::ClockTime::from_seconds(903);
        r.status = ClockStatus(0x01 | if rebuilt { ClockStatus::REBUILT } else { 0 });
        let now = sim.now;
        let events = &mut sim.events;
        sim.tracker.feed_clock(&r, now, &mut |e| events.push(e));
        sim.wait(2000);
        let clks: Vec<Option<u32>> = confirmed(&sim).into_iter().map(|(_, c)| c).collect();
        let nf3 = if rebuilt { None } else { Some(912) };
        assert_eq!(clks, [Some(907), None, nf3, Some(903)], "rebuilt: {rebuilt}");
    }
}

/// A chain's backlog as its virtual line lets it out: 1. d4 Nf6 in one scan (their presses
/// never logged), 2. Nf3 in the next two scans, then White's press rebuilt from the log
/// (925): the press is Nf3's, the last White ply the board showed before it.
#[test]
fn a_rebuilt_press_after_plies_whose_presses_were_lost_is_the_last_plys() {
    let mut sim = Sim::started(Config::default(), Orientation::Normal).with_clock(910, ClockSide::Left);
    sim.start_clock();
    sim.wait(2_000);
    // The clock's start sent again (stopped, then running), read later: 933 and 922.
    for status in [0x00, 0x01] {
        let mut r = sim.clock.as_ref().map(|c| c.reading()).expect("a clock");
        r.left.time = dgt_protocol::ClockTime::from_seconds(933);
        r.right.time = dgt_protocol::ClockTime::from_seconds(922);
        r.status = ClockStatus(status);
        let now = sim.now;
        let events = &mut sim.events;
        sim.tracker.feed_clock(&r, now, &mut |e| events.push(e));
    }
    sim.step_ms = 0;
    use shakmaty::Square as S;
    let (p, n) = (
        common::piece(Color::White, shakmaty::Role::Pawn),
        common::piece(Color::Black, shakmaty::Role::Knight),
    );
    sim.put(S::G8, None);
    sim.put(S::F6, n);
    sim.put(S::D4, p);
    sim.put(S::D2, None);
    sim.now += 60;
    sim.put(S::G1, None);
    sim.now += 60;
    sim.put(S::F3, common::piece(Color::White, shakmaty::Role::Knight));
    sim.now += 60;
    let mut r = sim.clock.as_ref().map(|c| c.reading()).expect("a clock");
    r.left.time = dgt_protocol::ClockTime::from_seconds(925);
    r.right.time = dgt_protocol::ClockTime::from_seconds(910);
    r.status = ClockStatus(0x03 | ClockStatus::REBUILT);
    let now = sim.now;
    let events = &mut sim.events;
    sim.tracker.feed_clock(&r, now, &mut |e| events.push(e));
    // 2... e6 and its press, 3. Bf4 lifted, before the dump asked for comes.
    sim.wait_without_dumps(400);
    sim.put(S::E7, None);
    sim.put(S::E6, common::piece(Color::Black, shakmaty::Role::Pawn));
    sim.now += 60;
    r.right.time = dgt_protocol::ClockTime::from_seconds(923);
    r.status = ClockStatus(0x01 | ClockStatus::REBUILT);
    let now = sim.now;
    let events = &mut sim.events;
    sim.tracker.feed_clock(&r, now, &mut |e| events.push(e));
    sim.wait_without_dumps(400);
    sim.put(S::C1, None);
    sim.now += 60;
    sim.put(S::F4, common::piece(Color::White, shakmaty::Role::Bishop));
    sim.wait(3_000);
    assert_eq!(
        confirmed(&sim)[..4],
        [
            ("d2d4".to_string(), None),
            ("g8f6".to_string(), None),
            ("g1f3".to_string(), Some(925)),
            ("e7e6".to_string(), Some(923))
        ]
    );
}
