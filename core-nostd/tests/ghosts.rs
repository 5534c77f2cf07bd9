//! Scenarios found by the offline harness (`tests/src/offline.rs`): boards read in passing
//! must never become confirmed moves, and legal plies must never be lost.

mod common;

use common::{Sim, piece};
use dgt_core::{Config, Event};
use dgt_protocol::{ClockSide, Orientation};
use shakmaty::{Chess, Color, Role, Square};

const W: Color = Color::White;
const B: Color = Color::Black;

/// Without a clock, plies that bring back an earlier position are a repetition, not a
/// takeback done in playing order (1. e4 e5 2. Nf3 Nc6 3. Ng1 Nb8, each a second apart).
#[test]
fn repetition_without_clock_is_not_a_takeback() {
    let mut s = Sim::started(Config::default(), Orientation::Normal);
    let mut pos = Chess::default();
    for u in ["e2e4", "e7e5", "g1f3", "b8c6"] {
        pos = s.play_uci(&pos, u);
        s.wait(2500);
    }
    for u in ["f3g1", "c6b8"] {
        pos = s.play_uci(&pos, u);
        s.wait(1200);
    }
    s.wait(3000);
    assert_eq!(s.count(|e| matches!(e, Event::Takeback { .. })), 0, "{:?}", s.events);
    assert_eq!(s.confirmed_events(), ["e2e4", "e7e5", "g1f3", "b8c6", "f3g1", "c6b8"]);
    assert_eq!(s.confirmed_ucis().len(), 6);
}

/// The pawn slid e2-e3-e4; the press came while the board still showed it on e3 (the
/// reading of e4 was on its way). The press must not confirm e3.
#[test]
fn press_while_the_piece_still_slides_confirms_where_it_stops() {
    let mut s = Sim::started(Config::default(), Orientation::Normal).with_clock(300, ClockSide::Left);
    s.start_clock();
    s.wait(500);
    s.lift(Square::E2);
    s.put(Square::E3, piece(W, Role::Pawn));
    s.wait(300);
    s.press(3, 0);
    s.wait(100);
    s.lift(Square::E3);
    s.put(Square::E4, piece(W, Role::Pawn));
    s.wait(1000);
    assert_eq!(s.confirmed_events(), ["e2e4"], "{:?}", s.events);
    // The press still gives the move its clock.
    let clk = s.events.iter().find_map(|e| match e {
        Event::MoveConfirmed(m) => m.clk,
        _ => None,
    });
    assert_eq!(clk, Some(297));
}

/// The same with a rook sliding along a rank: Ra1-b1-c1-d1, the press while it stands on c1.
#[test]
fn press_during_a_rook_slide_waits_for_the_board() {
    let mut s = Sim::started(Config::default(), Orientation::Normal).with_clock(300, ClockSide::Left);
    s.start_clock();
    let mut pos = Chess::default();
    for (u, by) in [
        ("b2b3", W),
        ("b7b6", B),
        ("c1b2", W),
        ("c8b7", B),
        ("b1c3", W),
        ("b8c6", B),
        ("d2d3", W),
        ("d7d6", B),
        ("d1d2", W),
        ("d8d7", B),
    ] {
        pos = s.play_uci(&pos, u);
        s.wait(300);
        s.press(2, 0);
        s.wait(100);
        let _ = by;
    }
    assert_eq!(s.confirmed_events().len(), 10);
    let rook = piece(W, Role::Rook);
    s.lift(Square::A1);
    s.put(Square::B1, rook);
    s.wait(250);
    s.lift(Square::B1);
    s.put(Square::C1, rook);
    s.wait(250);
    s.press(2, 0);
    s.wait(60);
    s.lift(Square::C1);
    s.put(Square::D1, rook);
    s.wait(1000);
    let confirmed = s.confirmed_events();
    assert_eq!(confirmed.last().map(String::as_str), Some("a1d1"), "{:?}", s.events);
    assert_eq!(confirmed.len(), 11);
}

/// Three plies made between two scans, reported square by square in board-index order: the
/// first updates show only ...c5 (one legal ply) before the rest arrives. The tracker must
/// take the fewest plies that explain the board (dxc4 Bxc4 c5), not keep c5 and explain
/// the rest with three more plies (c5 Bf1 dxc4 Bxc4).
#[test]
fn burst_read_halfway_is_explained_with_the_fewest_plies() {
    let mut s = Sim::started(Config::default(), Orientation::Normal);
    let mut pos = Chess::default();
    for u in [
        "d2d4", "g8f6", "c2c4", "e7e6", "b1c3", "f8b4", "e2e3", "e8g8", "f1d3", "d7d5", "a2a3", "b4c3",
        "b2c3",
    ] {
        pos = s.play_uci(&pos, u);
        s.wait(2500);
    }
    assert_eq!(s.confirmed_events().len(), 13);
    // Index order: rank 7 first, then rank 5, rank 4, rank 3.
    s.lift(Square::C7);
    s.put(Square::C5, piece(B, Role::Pawn));
    s.lift(Square::D5);
    s.put(Square::C4, piece(W, Role::Bishop));
    s.lift(Square::D3);
    s.wait(3000);
    let confirmed = s.confirmed_events();
    assert_eq!(&confirmed[13..], ["d5c4", "d3c4", "c7c5"], "{:?}", s.events);
}
