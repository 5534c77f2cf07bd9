//! Move orders the board never showed: several orders of plies reach the same board, and
//! nothing the board reported tells which was played. The tracker does not publish one of
//! them as certain: it says which ply to check and keeps them unconfirmed until a later
//! reading tells them apart.

mod common;

use common::{Sim, piece};
use dgt_core::{Config, Event};
use dgt_protocol::Orientation;
use shakmaty::{Chess, Color, Role, Square};

const W: Color = Color::White;
const B: Color = Color::Black;

/// No clock. After 1. e4 a6 2. e5, Black plays ...d5 and ...h6 with White's Nc3 between,
/// every report of them lost; a dump then shows the three plies at once: ...d5 Nc3 ...h6
/// and ...h6 Nc3 ...d5 leave the same board. Neither is confirmed, however long the board
/// stands, and the operator is told to check from ply 4. Then White takes en passant,
/// exd6: only ...h6 Nc3 ...d5 allows it, and the game goes on in that order.
#[test]
fn an_order_the_board_never_showed_waits_for_the_reading_that_tells() {
    let mut s = three_plies_of_unknown_order();
    s.wait(6000);
    assert_eq!(s.confirmed_events().len(), 3, "{:?}", s.move_log());
    assert_eq!(s.count(|e| matches!(e, Event::MoveOrderUnknown { ply: 4 })), 1, "{:?}", s.move_log());
    s.lift(Square::E5);
    s.put(Square::D6, piece(W, Role::Pawn));
    s.lift(Square::D5);
    s.wait(6000);
    let played = ["e2e4", "a7a6", "e4e5", "h7h6", "b1c3", "d7d5", "e5d6"];
    assert_eq!(s.confirmed_events(), played, "{:?}", s.move_log());
}

/// The same three plies of an unknown order, then a move both orders allow (a3): the
/// board moved on, but from before the three plies two lines still reach it. Keeping the
/// order the line happened to hold is no answer: they stay unconfirmed, however long the
/// board stands.
#[test]
fn a_move_both_orders_allow_does_not_settle_the_order() {
    let mut s = three_plies_of_unknown_order();
    s.wait(1000);
    s.slide(Square::A2, Square::A3);
    s.wait(6000);
    assert_eq!(s.confirmed_events(), ["e2e4", "a7a6", "e4e5"], "{:?}", s.move_log());
}

/// No clock: 1. e4 a6 2. e5 confirmed, then ...d5 Nc3 ...h6 (or ...h6 Nc3 ...d5) with every
/// report lost, and a dump showing the three plies at once.
fn three_plies_of_unknown_order() -> Sim {
    let mut s = Sim::started(Config::default(), Orientation::Normal);
    let mut pos = Chess::default();
    for u in ["e2e4", "a7a6", "e4e5"] {
        pos = s.play_uci(&pos, u);
        s.wait(2500);
    }
    assert_eq!(s.confirmed_events().len(), 3);
    s.put_unreported(Square::H7, None);
    s.put_unreported(Square::H6, piece(B, Role::Pawn));
    s.put_unreported(Square::B1, None);
    s.put_unreported(Square::C3, piece(W, Role::Knight));
    s.put_unreported(Square::D7, None);
    s.put_unreported(Square::D5, piece(B, Role::Pawn));
    s.dump();
    s
}
