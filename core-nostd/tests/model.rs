//! Rules of the tracker's one model that the older tests do not pin: what a dump must show
//! before time alone makes a move final, and when the tracker needs time.

mod common;
use common::*;
use dgt_core::{Config, GameResult, Tracker};
use dgt_protocol::{BoardDump, ClockSide, DgtSquare, Orientation, PieceCode};
use shakmaty::{Chess, Color, Position, Role, Square};

/// No clock: 1. e4 e5 reported, then 2. Nf3 with both its reports lost. The board as the
/// field updates show it is the line's end, so nothing else asks for a dump; quiet time
/// alone would make e4 e5 final and lose Nf3 for good. The dump the quiet time needs shows
/// the knight on f3: the move is found, and it is confirmed in its turn.
#[test]
fn without_a_clock_a_move_with_both_reports_lost_is_found_by_the_dump_quiet_time_asks_for() {
    let mut s = Sim::started(Config::default(), Orientation::Normal);
    let pos = s.play_uci(&Chess::default(), "e2e4");
    s.wait(1_000);
    let pos = s.play_uci(&pos, "e7e5");
    s.wait(500);
    s.put_unreported(Square::G1, None);
    s.put_unreported(Square::F3, piece(Color::White, Role::Knight));
    let _ = pos;
    s.wait(6_000);
    assert_eq!(s.confirmed_ucis(), ["e2e4", "e7e5", "g1f3"]);
}

/// A dump garbled on the line (a chain's byte flipped) shows a magic piece on d4 the board
/// never had, and nothing reports that square afterwards. Standing for the quiet time is
/// not enough: the dump asked for then shows the board without it, and the game goes on.
#[test]
fn a_magic_piece_one_garbled_dump_showed_ends_no_game() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let pos = play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5"]);
    let mut garbled = BoardDump::EMPTY;
    for (sq, p) in s.board.iter() {
        garbled.set(DgtSquare::from_square(sq, Orientation::Normal), PieceCode::from_piece(p));
    }
    garbled.set(DgtSquare::from_square(Square::D4, Orientation::Normal), PieceCode::MagicBlackWins);
    let now = s.now;
    let events = &mut s.events;
    s.tracker.feed_dump(&garbled, now, &mut |e| events.push(e));
    s.wait(3_000);
    assert_eq!(s.result(), None);
    play_pressed(&mut s, &pos, &["g1f3"]);
    assert_eq!(s.confirmed_ucis(), ["e2e4", "e7e5", "g1f3"]);
}

/// The same signal really on the board: it ends the game once the dump agrees.
#[test]
fn a_magic_piece_the_board_shows_ends_the_game_once_a_dump_agrees() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5"]);
    s.put_code(Square::D4, PieceCode::MagicBlackWins);
    s.wait(3_000);
    assert_eq!(s.result(), Some(GameResult::BlackWins));
}

/// Games with a clock and without, a lost landing, a slide, castling and a kings-in-centre
/// end, each wait checked against a copy of the tracker ticked every millisecond: ticking
/// only at [`Tracker::poll_at`] acts the same (no rule waits on a moment it does not give).
#[test]
fn ticking_only_at_poll_at_acts_as_ticking_every_millisecond() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    s.check_ticks = true;
    let pos = play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"]);
    // Castling, then a rook sliding and a queen whose landing report is lost.
    let pos = play_pressed(&mut s, &pos, &["e1g1", "f8c5"]);
    s.slide(Square::F1, Square::E1);
    s.wait(300);
    s.press(2, 2);
    s.wait(800);
    let mut pos = pos;
    pos.play_unchecked(parse_uci(&pos, "f1e1"));
    s.lift(Square::D8);
    s.put_unreported(Square::E7, piece(Color::Black, Role::Queen));
    s.wait(200);
    s.press(2, 2);
    s.wait(2_000);
    pos.play_unchecked(parse_uci(&pos, "d8e7"));
    assert_eq!(s.confirmed_ucis().len(), 10, "{:?}", s.move_log());
    // Without a clock: quiet time, a dump for each.
    let mut n = Sim::started(Config::default(), Orientation::Normal);
    n.check_ticks = true;
    let mut p = Chess::default();
    for uci in ["d2d4", "d7d5", "c2c4", "e7e6"] {
        p = n.play_uci(&p, uci);
        n.wait(2_500);
    }
    assert_eq!(n.confirmed_ucis(), ["d2d4", "d7d5", "c2c4", "e7e6"]);
    // The kings to the centre.
    n.lift(Square::E1);
    n.lift(Square::E8);
    n.put(Square::E4, piece(Color::White, Role::King));
    n.put(Square::D5, piece(Color::Black, Role::King));
    n.wait(3_000);
    assert!(n.result().is_some());
    let _: Option<&Tracker<600>> = None;
}

/// No clock: Black's king steps onto d4, White answers Rc2-h2, and half a second later the
/// players put the kings in the centre (the black king on to d5, the white one to e4: 1-0).
/// Only king moves onto the centre that end the line can be the signal's halves: a king
/// step the opponent answered was a move, and stands with the answer.
#[test]
fn a_king_step_onto_the_centre_the_opponent_answered_is_a_move_not_half_of_the_signal() {
    let (mut s, pos) = from_fen("8/8/8/8/8/4k3/2R5/3K4 b - - 0 50", Config::default(), None);
    let pos = s.play_uci(&pos, "e3d4");
    s.wait(1_000);
    s.play_uci(&pos, "c2h2");
    s.wait(500);
    s.lift(Square::D4);
    s.put(Square::D5, piece(Color::Black, Role::King));
    s.lift(Square::D1);
    s.put(Square::E4, piece(Color::White, Role::King));
    s.wait(3_000);
    assert_eq!(s.confirmed_ucis(), ["e3d4", "c2h2"]);
    assert_eq!(s.result(), Some(GameResult::WhiteWins));
}

/// Black's queen goes d8-d4 (it could slide on, so its press waits for the board to
/// settle) and Black presses; White's flag falls at once. The move was completed by its
/// press before the flag fell: it counts, and the game is Black's.
#[test]
fn a_pressed_move_still_settling_when_the_flag_falls_counts() {
    let (mut s, pos) = from_fen("3qk3/8/8/8/8/8/8/4K3 b - - 0 40", Config::default(), Some(300));
    s.play_uci(&pos, "d8d4");
    s.press(2, 0);
    s.flag_falls(Color::White);
    s.wait(500);
    assert_eq!(s.confirmed_ucis(), ["d8d4"]);
    assert_eq!(s.result(), Some(GameResult::BlackWins));
}
