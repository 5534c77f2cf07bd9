//! A board back from an outage: how its first reading is judged before it is fed
//! ([`Tracker::explain`]), plies confirmed from the board's own log
//! ([`Tracker::confirm_plies`]), and the `%clk` of a ply without a press of its own.

mod common;

use common::{Sim, clocked, parse_uci, play_pressed};
use dgt_core::{Config, Event, Reading, Tracker};
use dgt_protocol::{BoardDump, ClockSide, DgtSquare, Orientation, PieceCode};
use shakmaty::{Chess, Position};

/// The dump of the position after `ucis` from `pos`.
fn dump_after(pos: &Chess, ucis: &[&str]) -> BoardDump {
    let mut p = pos.clone();
    for u in ucis {
        let m = parse_uci(&p, u);
        p.play_unchecked(m);
    }
    let mut d = BoardDump::EMPTY;
    for (sq, piece) in p.board().iter() {
        d.set(DgtSquare::from_square(sq, Orientation::Normal), PieceCode::from_piece(piece));
    }
    d
}

/// The moves e4 and e5, pressed and seen; then White plays Nf3 using 4 s and presses (2 s
/// increment) unseen, and Black's Nc6 is on the board too when a dump shows both plies in
/// one reading (the dump after a reconnect). Returns White's display after the Nf3 press.
fn nf3_unseen_then_nc6_in_one_reading() -> (Sim, Option<u32>) {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let pos = play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5"]);
    if let Some(c) = &mut s.clock {
        c.white -= 4;
        c.white += 2;
        c.running = Some(shakmaty::Color::Black);
        c.high = shakmaty::Color::Black;
    }
    let white_after_nf3 = s.clock.as_ref().map(|c| c.white);
    let mut p = pos.clone();
    for u in ["g1f3", "b8c6"] {
        let m = parse_uci(&p, u);
        p.play_unchecked(m);
    }
    s.board = p.board().clone();
    s.dump();
    (s, white_after_nf3)
}

#[test]
fn a_reading_is_judged_without_being_fed() {
    let fresh: Tracker<64> = Tracker::new(Config::default());
    assert_eq!(fresh.explain(&dump_after(&Chess::default(), &[])), Reading::NoGame);

    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let pos = play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5"]);
    let before = s.events.len();
    let t = &s.tracker;
    assert_eq!(t.explain(&dump_after(&pos, &[])), Reading::AtTip);
    assert_eq!(t.explain(&dump_after(&pos, &["g1f3"])), Reading::Explained { plies: 1 });
    assert_eq!(t.explain(&dump_after(&pos, &["g1f3", "b8c6"])), Reading::Explained { plies: 2 });
    // Nf3 Nc6 Nc3 and Nc3 Nc6 Nf3 leave the same board: the board cannot say which.
    assert_eq!(t.explain(&dump_after(&pos, &["g1f3", "b8c6", "b1c3"])), Reading::Ambiguous);
    // More plies than the search goes.
    let far = ["g1f3", "b8c6", "f1b5", "a7a6", "b5c6", "d7c6"];
    assert_eq!(t.explain(&dump_after(&pos, &far)), Reading::Unexplained);
    // Nothing was acted on.
    assert_eq!(s.events.len(), before);
    assert_eq!(s.confirmed_ucis(), ["e2e4", "e7e5"]);
}

#[test]
fn plies_known_to_be_over_are_confirmed_on_request() {
    let mut s = Sim::started(Config::default(), Orientation::Normal);
    let mut pos = Chess::default();
    for u in ["e2e4", "e7e5", "g1f3"] {
        pos = s.play_uci(&pos, u);
        s.wait(300);
    }
    // No clock and no quiet time yet: all three are provisional.
    assert!(s.confirmed_ucis().is_empty());
    let now = s.now;
    let mut events = Vec::new();
    s.tracker.confirm_plies(2, now, &mut |e| events.push(e));
    let confirmed: Vec<u16> = events
        .iter()
        .filter_map(|e| match e {
            Event::MoveConfirmed(m) => Some(m.ply),
            _ => None,
        })
        .collect();
    assert_eq!(confirmed, [1, 2]);
    // Asking again, or for more than there is, confirms only what is there.
    events.clear();
    s.tracker.confirm_plies(9, now, &mut |e| events.push(e));
    assert_eq!(events.iter().filter(|e| matches!(e, Event::MoveConfirmed(_))).count(), 1);
}

#[test]
fn a_pair_read_together_keeps_the_clock_of_the_press_that_confirms_it() {
    // White's move and press were not seen (the board was away); the board shows White's
    // and Black's plies together. Black presses, then White presses again at once, before
    // a dump confirms the pair: White's first ply keeps the time White's display showed
    // at Black's press, not the one after White's next press.
    let (mut s, white_after_nf3) = nf3_unseen_then_nc6_in_one_reading();
    // The host is slow to answer dump requests meanwhile (the pair waits for a dump taken
    // after the press).
    s.dumps_answered = usize::MAX;
    s.wait(100);
    s.press(5, 2);
    // White presses at once (a forgotten move, or one the board reports later).
    s.wait(100);
    s.press(3, 2);
    s.dumps_answered = 0;
    s.wait(1_000);
    let nf3 = s.events.iter().find_map(|e| match e {
        Event::MoveConfirmed(m) if m.ply == 3 => Some(m.clk),
        _ => None,
    });
    assert_eq!(nf3, Some(white_after_nf3), "{:?}", s.confirmed_events());
}

#[test]
fn a_board_still_for_the_settle_time_is_searched_when_the_next_change_comes() {
    // Two plies reported in an order the one-ply path cannot follow (the lifts first), the
    // board still for a little more than the settle time with no tick in between (ticks
    // are 50 ms apart), then the next two plies the same way. Searched only at a tick, the
    // board would be four plies past the line by then, beyond the three-ply search.
    use shakmaty::{Color, Role, Square};
    let mut s = Sim::started(Config::default(), Orientation::Normal);
    let knight = |c| common::piece(c, Role::Knight);
    let settle = u64::from(Config::default().timing.settle_ms);
    s.step_ms = 30;
    // 1. Nf3 Nc6: both lifts, then both landings.
    s.lift(Square::G1);
    s.lift(Square::B8);
    s.put(Square::C6, knight(Color::Black));
    s.put(Square::F3, knight(Color::White));
    s.now += settle + 10;
    // 2. Nc3 Nf6, the same way, the first lift arriving without a tick before it.
    s.lift(Square::B1);
    s.lift(Square::G8);
    s.put(Square::F6, knight(Color::Black));
    s.put(Square::C3, knight(Color::White));
    s.wait(3_000);
    let mut live = Vec::new();
    s.tracker.for_each_move(dgt_core::View::Live, |m| live.push(m.uci.to_string()));
    assert_eq!(live, ["g1f3", "b8c6", "b1c3", "g8f6"], "{:?}", s.events);
    assert!(s.tracker.mismatch().is_none());
}

/// The host lost the port: the tracker hears nothing until it is back.
fn unplug(s: &mut Sim) {
    let now = s.now;
    s.tracker.board_away(now);
}

/// Time passes while the board is away: the host still ticks the tracker.
fn wait_away(s: &mut Sim, ms: u64) {
    let end = s.now + ms;
    while s.now < end {
        s.now = (s.now + 50).min(end);
        let now = s.now;
        let events = &mut s.events;
        s.tracker.tick(now, &mut |e| events.push(e));
    }
}

#[test]
fn an_unplugged_board_is_not_a_still_board() {
    // No clock: a move stands for the quiet time before it is final. Black plays Qd8-c8 and
    // the cable is pulled at once; meanwhile the player takes it back and plays Qd8-d7
    // instead. The quiet time runs out while nobody can hear the board: Qc8 must not be
    // confirmed by it.
    let mut s = Sim::started(Config::default(), Orientation::Normal);
    let mut pos = Chess::default();
    for u in ["d2d4", "d7d5", "c1f4", "c8f5", "e2e3"] {
        pos = s.play_uci(&pos, u);
        s.wait(2_500);
    }
    assert_eq!(s.confirmed_ucis(), ["d2d4", "d7d5", "c1f4", "c8f5", "e2e3"]);
    s.play_uci(&pos, "d8c8");
    s.wait(300);
    unplug(&mut s);
    wait_away(&mut s, 3_000);
    assert_eq!(s.tracker.ply_count(dgt_core::View::Confirmed), 5, "{:?}", s.confirmed_events());
    // Back: the reconnect dump shows Qd7 instead.
    assert!(s.tracker.is_board_away());
    let mut p = pos.clone();
    p.play_unchecked(parse_uci(&pos, "d8d7"));
    s.board = p.board().clone();
    s.dump();
    assert!(!s.tracker.is_board_away());
    s.wait(3_000);
    assert_eq!(s.confirmed_events(), ["d2d4", "d7d5", "c1f4", "c8f5", "e2e3", "d8d7"]);
}

#[test]
fn a_press_waiting_for_the_board_outlasts_an_outage() {
    // White's Nf3 and its press were not seen; the board shows Nf3 and Black's Nc6 in one
    // reading, and Black presses. Plies read together wait for a dump taken after the
    // press, and the cable is pulled before one comes, for longer than a press waits.
    // When the board is back, its dump confirms both, Nc6 with the time of Black's press.
    let (mut s, _) = nf3_unseen_then_nc6_in_one_reading();
    s.dumps_answered = usize::MAX;
    s.wait(100);
    s.press(5, 2);
    let black_after_nc6 = s.clock.as_ref().map(|c| c.black);
    s.wait(100);
    unplug(&mut s);
    let window = u64::from(Config::default().timing.press_window_ms);
    wait_away(&mut s, window + 2_000);
    assert_eq!(s.tracker.ply_count(dgt_core::View::Confirmed), 2);
    s.dumps_answered = s.count(|e| matches!(e, Event::RequestBoardDump));
    s.dump();
    s.wait(1_000);
    let nc6 = s.events.iter().find_map(|e| match e {
        Event::MoveConfirmed(m) if m.ply == 4 => Some(m.clk),
        _ => None,
    });
    assert_eq!(nc6, Some(black_after_nc6), "{:?}", s.confirmed_events());
}
