//! A chain's board log that lost a landing (issue 34, diagnosed on the offline chain run
//! `twelve_chained_boards_offline_play_two_rounds_exactly`, seed 2, worldcup#270/12 plies
//! 14-16): what the session on a chain hands the tracker, and the move order the presses
//! tell.

mod common;

use common::{clocked, piece, play_pressed};
use dgt_protocol::{ClockSide, Orientation};
use shakmaty::{Chess, Color, Role, Square};

const B: Color = Color::Black;

/// Black's pawn leaves a7 and lands on a6, but the board's log lost the landing (it logged
/// a6 empty: the pawn set down, lifted, set down again, the last report lost); Black
/// presses with only that pawn off its square. White plays Bf4 (f4 reported before c1, in
/// square order) and presses, Black c7-c5, then three more plies, each pressed; the dumps
/// the tracker gets until then are the log's (the pawn in the air), the dump read from the
/// board after them shows it on a6. The press order says a7-a6 was ply 4 (c7 was still on
/// its square at Black's press, and c5 was reported after White's press of ply 5) and
/// c7-c5 ply 6; both orders leave the same board. The tracker confirms c7c5 for ply 4 (no
/// `%clk`) and a7a6 for ply 6 unless, once the dump read from the board shows the end of
/// the line, the order is read again from everything said since (the presses' order).
#[test]
fn a_landing_the_log_lost_keeps_the_ply_its_press_ended() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["d2d4", "g8f6", "g1f3"]);
    s.lift(Square::A7);
    s.put(Square::A6, None);
    // The dumps the session gets until the board is read are the log's: the pawn in the
    // air.
    s.wait_without_dumps(300);
    s.press(3, 0);
    s.wait(400);
    // The scan reports f4 before c1 (square order); White's press comes with c1's report.
    s.put(Square::F4, piece(Color::White, Role::Bishop));
    s.wait(400);
    s.lift(Square::C1);
    s.press(3, 0);
    s.wait(1_000);
    s.slide(Square::C7, Square::C5);
    s.wait_without_dumps(300);
    s.press(3, 0);
    s.wait(400);
    for (from, to) in [(Square::E2, Square::E3), (Square::F6, Square::E4), (Square::F1, Square::D3)] {
        s.slide(from, to);
        s.wait_without_dumps(300);
        s.press(3, 0);
        s.wait(400);
    }
    s.wait_without_dumps(300);
    s.put_unreported(Square::A6, piece(B, Role::Pawn));
    s.wait(3_000);
    assert_eq!(
        s.confirmed_ucis(),
        ["d2d4", "g8f6", "g1f3", "a7a6", "c1f4", "c7c5", "e2e3", "f6e4", "f1d3"],
        "{:?}",
        s.move_log()
    );
}
