//! Field updates lost on the way (the `dropped` hand scripts): the board the tracker holds
//! is re-read from a dump whenever it cannot explain what the clock says, a dump overrules
//! the field updates before it, and the game goes on by itself.

mod common;

use common::{clocked, piece, play_pressed};
use dgt_core::Event;
use dgt_protocol::{ClockSide, Orientation};
use shakmaty::{Chess, Color, Role, Square};

const W: Color = Color::White;
const B: Color = Color::Black;

/// The game 1. e4 Nf6 2. e5 Nd5 3. d4 d6 4. c4 Nb6 at blitz pace (dropped-s1-g000), with
/// the knight's lift from g8 and the pawn's landing on e5 lost: at those presses the board
/// does not show the presser's move. Each such press asks for a dump at once (whatever the dump
/// interval: the last was asked for a fraction of a second before), the dump shows the move,
/// and the press still confirms it. Asked only at the interval, the dumps came once the
/// board was more plies ahead than the search reaches, and the game stalled for good.
#[test]
fn each_press_the_board_cannot_explain_is_settled_by_a_dump() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4"]);
    s.step_ms = 20;
    // 1...Nf6: g8's report lost.
    s.put_unreported(Square::G8, None);
    s.put(Square::F6, piece(B, Role::Knight));
    s.wait(30);
    s.press(1, 0);
    s.wait(50);
    // 2. e5: e5's report lost.
    s.slide_landing_unreported(Square::E4, Square::E5);
    s.wait(30);
    s.press(1, 0);
    s.wait(50);
    // The rest reported.
    for (from, to) in [(Square::F6, Square::D5), (Square::D2, Square::D4), (Square::D7, Square::D6)] {
        s.slide(from, to);
        s.wait(30);
        s.press(1, 0);
        s.wait(50);
    }
    s.slide(Square::C2, Square::C4);
    s.wait(30);
    s.press(1, 0);
    s.wait(50);
    s.slide(Square::D5, Square::B6);
    s.wait(30);
    s.press(1, 0);
    s.wait(3000);
    let played = ["e2e4", "g8f6", "e4e5", "f6d5", "d2d4", "d7d6", "c2c4", "d5b6"];
    assert_eq!(s.confirmed_events(), played, "{:?}", s.move_log());
    assert_eq!(s.count(|e| matches!(e, Event::PositionMismatch { .. })), 0, "{:?}", s.move_log());
}

/// The last move, Qc4-c2, with the queen's landing report lost; the mover presses, the clock
/// is stopped and the kings go to the centre (0-1) at once. The press asks for a dump, the
/// dump shows Qc2 as the line's last ply: the press is that ply's as if the board had shown
/// it at the press, and the move stands once the queen has stayed on c2 (the dump and the
/// board since say so), whatever the kings do.
#[test]
fn a_move_a_dump_shows_after_its_press_stands_as_if_the_board_had_shown_it() {
    let mut s = from_fen_clocked("8/1Q3ppk/8/7P/2q5/1p4P1/5P1K/8 b - - 0 42", 300);
    s.wait(1000);
    s.step_ms = 30;
    let queen = s.lift(Square::C4);
    s.put_unreported(Square::C2, queen);
    s.press(2, 0);
    s.wait(20);
    if let Some(c) = &mut s.clock {
        c.running = None;
    }
    s.send_clock();
    s.wait(150);
    let white_king = s.lift(Square::H2);
    let black_king = s.lift(Square::H7);
    s.put(Square::E5, black_king);
    s.put(Square::D4, white_king);
    s.wait(3000);
    assert_eq!(s.result(), Some(dgt_core::GameResult::BlackWins), "{:?}", s.move_log());
    assert_eq!(s.confirmed_events(), ["c4c2"], "{:?}", s.move_log());
}

/// White castles king first and both of the king's reports are lost: the board shows only
/// the rook going h1-f1, a legal move, when White presses. A rook going where castling puts
/// it may be half of castling: the press takes it from a dump, which shows the king on g1,
/// even when the dump comes later than the board's stillness would confirm the press.
#[test]
fn castling_with_the_kings_reports_lost_is_read_from_a_dump() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let opening = ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "f8c5"];
    play_pressed(&mut s, &Chess::default(), &opening);
    s.step_ms = 150;
    s.put_unreported(Square::E1, None);
    s.put_unreported(Square::G1, piece(W, Role::King));
    s.slide(Square::H1, Square::F1);
    s.wait(160);
    s.press(2, 0);
    s.wait_without_dumps(400);
    s.wait(2000);
    let all = s.confirmed_events();
    assert!(!all.contains(&"h1f1".to_string()), "{:?}", s.move_log());
    assert_eq!(all.last().map(String::as_str), Some("e1g1"), "{:?}", s.move_log());
}

/// No clock. Black plays ...a5 with both of its reports lost, then White b5 and Black ...c5,
/// reported in that order: with a7 still on the board as far as the field updates go, the
/// only line to the board is ...c5 b5, against the order the board reported them. A dump
/// then shows ...a5: the plies are read again by the order the board reported the landings
/// it did report, ...a5 b5 ...c5, before quiet time confirms them, and White's en passant
/// capture bxc6 follows from there.
#[test]
fn plies_read_with_a_square_gone_stale_are_put_in_the_order_the_board_reported() {
    let (mut s, _) =
        common::from_fen("4k3/p1p5/8/8/1P6/8/8/4K3 b - - 0 40", dgt_core::Config::default(), None);
    s.wait(1000);
    s.put_unreported(Square::A7, None);
    s.put_unreported(Square::A5, piece(B, Role::Pawn));
    s.wait(600);
    s.slide(Square::B4, Square::B5);
    s.wait(100);
    s.slide(Square::C7, Square::C5);
    s.wait(400);
    s.dump();
    s.wait(2500);
    s.lift(Square::B5);
    s.put(Square::C6, piece(W, Role::Pawn));
    s.lift(Square::C5);
    s.wait(5000);
    assert_eq!(s.confirmed_events(), ["a7a5", "b4b5", "c7c5", "b5c6"], "{:?}", s.move_log());
}

/// Black plays Rd4-d1+ with the rook's landing report lost and presses; the dump the press
/// asks for comes only once White has lifted the king for the reply (a relay busy for a
/// moment), so the board never shows Rd1 whole. White plays Kg2, Black premoves Rd1-d5, and
/// both press. The press and the dump say Black's rook went to d1: the three plies are
/// read, not the shorter Rd4-d5 Kg2 that reaches the same board.
#[test]
fn a_pressed_ply_a_dump_shows_beside_the_replys_lifted_king_is_taken() {
    let mut s = from_fen_clocked("8/6pk/8/8/3r4/6P1/Q4P1P/6K1 b - - 0 40", 300);
    s.wait(1000);
    s.step_ms = 15;
    let rook = s.lift(Square::D4);
    s.put_unreported(Square::D1, rook);
    s.press(2, 0);
    let king = s.lift(Square::G1);
    s.wait(50);
    s.put(Square::G2, king);
    s.slide(Square::D1, Square::D5);
    s.press(1, 0);
    s.press(1, 0);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["d4d1", "g1g2", "d1d5"], "{:?}", s.move_log());
    assert_eq!(s.confirmed_clks(), [Some(298), Some(299), Some(297)], "{:?}", s.move_log());
}

/// Black plays Rd8-d1 with the rook's lift lost and presses; White plays Ra5-a8 and
/// presses; Black lifts the rook from d1 again; only then comes the dump. It shows the rook
/// in the hand: Rd8 to any square, then Ra8, reaches such a board, and Rd8-a8 Rxa8 reaches
/// it with nothing in the air. The board reported the rook landing on d1: that line is the
/// one played, and the rook's next move is Rb1.
#[test]
fn a_pressed_ply_whose_landing_was_reported_is_taken_though_its_piece_is_in_the_air_again() {
    let mut s = from_fen_clocked("3r4/6pk/8/R7/8/8/5PPP/5BK1 b - - 0 40", 300);
    s.wait(1000);
    s.step_ms = 15;
    let rook = s.board.piece_at(Square::D8);
    s.put_unreported(Square::D8, None);
    s.put(Square::D1, rook);
    s.press(2, 0);
    s.slide(Square::A5, Square::A8);
    s.press(1, 0);
    s.lift(Square::D1);
    s.wait(100);
    s.put(Square::B1, rook);
    s.press(3, 0);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["d8d1", "a5a8", "d1b1"], "{:?}", s.move_log());
    assert_eq!(s.confirmed_clks(), [Some(298), Some(299), Some(295)], "{:?}", s.move_log());
}

/// Black plays Nf5-d6; White answers Kd3-e3 with both its reports lost and presses; Black
/// plays Nd6-f5 (reported) and presses. Until the dump comes, the board reads as the
/// position before Nd6: a takeback of it, by the board alone. But White pressed after Nd6,
/// so White moved: the takeback waits for the dump, which shows Ke3 and Nf5+ (a knight
/// going back and forth while the kings walk, as in a repetition).
#[test]
fn a_position_brought_back_after_the_side_to_move_pressed_is_no_takeback() {
    let (mut s, pos) = common::from_fen(
        "1R6/1p3kp1/2p4p/4Pn1P/8/1P1K2P1/2rN4/8 b - - 4 54",
        dgt_core::Config::default(),
        Some(300),
    );
    s.wait(1000);
    play_pressed(&mut s, &pos, &["f5d6"]);
    s.step_ms = 15;
    let king = s.board.piece_at(Square::D3);
    s.put_unreported(Square::D3, None);
    s.put_unreported(Square::E3, king);
    s.press(1, 0);
    s.slide(Square::D6, Square::F5);
    s.press(1, 0);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["f5d6", "d3e3", "d6f5"], "{:?}", s.move_log());
    assert_eq!(s.count(|e| matches!(e, Event::Takeback { .. })), 0, "{:?}", s.move_log());
}

/// Ndf6 (the knight's lift lost), Black's press, Bg1, White's press, b5 (the pawn's lift
/// lost), all read in one piece by a relay that was busy: every report carries the same
/// time. b5 Bg1 Ndf6 reaches the same board; the stream still says which was played, as
/// the knight's landing came before Black's press and the pawn's after White's.
#[test]
fn plies_read_in_one_piece_keep_the_order_the_presses_between_them_show() {
    let mut s = read_at_one_time("4k3/1p6/8/3n4/8/8/5B2/4K3 b - - 0 40", 300);
    let knight = s.board.piece_at(Square::D5);
    s.put_unreported(Square::D5, None);
    s.put(Square::F6, knight);
    s.press(2, 0);
    s.slide(Square::F2, Square::G1);
    s.press(1, 0);
    let pawn = s.board.piece_at(Square::B7);
    s.put_unreported(Square::B7, None);
    s.put(Square::B5, pawn);
    s.press(3, 0);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["d5f6", "f2g1", "b7b5"], "{:?}", s.move_log());
    assert_eq!(s.confirmed_clks(), [Some(298), Some(299), Some(295)], "{:?}", s.move_log());
}

/// No clock, moves a second apart (they stay provisional meanwhile). Black castles; White
/// b4; Black a5 with both its reports lost; White b5; Black c6, taken back, c5. Read from
/// the reports, c5 and b5 are a line and the dump then adds a5; but b5 was reported before
/// c5, so the order is a5 b5 c5, and only that order lets White take en passant next.
#[test]
fn plies_a_dump_completes_are_ordered_by_the_reports_not_the_dump() {
    let (mut s, _) = common::from_fen(
        "r2qk2r/pppn1pp1/4pn1p/3p1b2/2PP4/1P2PN2/P3BPPP/RN1Q1RK1 b kq - 0 9",
        dgt_core::Config::default(),
        None,
    );
    s.wait(1000);
    s.step_ms = 30;
    s.slide(Square::E8, Square::G8);
    s.slide(Square::H8, Square::F8);
    s.wait(900);
    s.slide(Square::B3, Square::B4);
    s.wait(150);
    let pawn = s.board.piece_at(Square::A7);
    s.put_unreported(Square::A7, None);
    s.put_unreported(Square::A5, pawn);
    s.wait(600);
    s.slide(Square::B4, Square::B5);
    s.wait(40);
    s.slide(Square::C7, Square::C6);
    s.wait(100);
    s.slide(Square::C6, Square::C7);
    s.slide(Square::C7, Square::C5);
    s.wait(1000);
    let pawn = s.lift(Square::B5);
    s.put(Square::C6, pawn);
    s.lift(Square::C5);
    s.wait(900);
    s.lift(Square::C6);
    let pawn = s.lift(Square::B7);
    s.put(Square::C6, pawn);
    s.wait(1000);
    s.slide(Square::C4, Square::C5);
    s.wait(40);
    s.slide(Square::A5, Square::A4);
    s.wait(3000);
    let played = ["e8g8", "b3b4", "a7a5", "b4b5", "c7c5", "b5c6", "b7c6", "c4c5", "a5a4"];
    assert_eq!(s.confirmed_events(), played, "{:?}", s.move_log());
}

/// f3, Rf7 and Kg3, each pressed, with every report of theirs lost: the dump shows them,
/// but Kg3 Rf7 f3 reaches the same board and nothing says which came first, so they stay unconfirmed while the game goes
/// on, each later ply pressed. Once more plies wait than the line holds, the oldest is not
/// confirmed as read (a guess, which a bursty link makes common): the line stops there,
/// nothing after the unknown order is published as final, and the operator is told which
/// ply to check.
#[test]
fn plies_of_an_unknown_order_are_never_confirmed_when_the_line_is_full() {
    let mut s = from_fen_clocked("8/r5k1/8/8/8/8/5PPK/8 w - - 0 40", 300);
    s.wait(1000);
    s.step_ms = 15;
    let pawn = s.board.piece_at(Square::F2);
    s.put_unreported(Square::F2, None);
    s.put_unreported(Square::F3, pawn);
    s.press(2, 0);
    let rook = s.board.piece_at(Square::A7);
    s.put_unreported(Square::A7, None);
    s.put_unreported(Square::F7, rook);
    s.press(3, 0);
    let king = s.board.piece_at(Square::H2);
    s.put_unreported(Square::H2, None);
    s.put_unreported(Square::G3, king);
    s.press(1, 0);
    s.wait(500);
    let later = [
        ("f7", "f5"),
        ("g3", "f2"),
        ("f5", "f7"),
        ("f2", "e3"),
        ("f7", "f5"),
        ("g2", "g4"),
        ("f5", "b5"),
        ("e3", "e4"),
        ("b5", "b4"),
        ("e4", "e5"),
    ];
    for (from, to) in later {
        let square = |name: &str| name.parse::<Square>().expect("square");
        s.slide(square(from), square(to));
        s.wait(200);
        s.press(1, 0);
        s.wait(300);
    }
    s.wait(3000);
    assert_eq!(s.confirmed_events(), Vec::<String>::new(), "{:?}", s.move_log());
    assert_eq!(s.count(|e| matches!(e, Event::MoveOrderUnknown { ply: 1 })), 1, "{:?}", s.move_log());
}

/// Qf5-f3+ with the landing's report lost, then (read in one piece by a relay that was
/// busy) Black's press, Kg1, White's press, h5-h4 with the landing's report lost, Black's
/// press. h4 Kg1 Qf3 reaches the same board, but the queen's lift was reported before the
/// first press and the pawn's after the second: the lifts tell the order the landings lost.
#[test]
fn the_lifts_of_plies_whose_landings_were_lost_tell_their_order() {
    let mut s = from_fen_clocked("8/6k1/8/5q1p/8/8/8/7K b - - 0 50", 300);
    s.wait(1000);
    s.step_ms = 15;
    let queen = s.lift(Square::F5);
    s.put_unreported(Square::F3, queen);
    s.wait_without_dumps(50);
    s.step_ms = 0;
    s.press_step_ms = 0;
    s.press(2, 0);
    s.slide(Square::H1, Square::G1);
    s.press(1, 0);
    let pawn = s.lift(Square::H5);
    s.put_unreported(Square::H4, pawn);
    s.press(3, 0);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["f5f3", "h1g1", "h5h4"], "{:?}", s.move_log());
    assert_eq!(s.confirmed_clks(), [Some(298), Some(299), Some(295)], "{:?}", s.move_log());
}

/// Six plies read in one piece by a relay that was busy, each pressed, with reports lost on
/// the way (Nf3's landing, Bb5's lift, a6's landing): the board the tracker follows stops
/// matching after the first of them, and the dump shows a board six plies on, further than
/// any search from the line goes. The presses say six plies; the squares the board
/// reported or the dump corrected say which pieces moved: the line is found, and every
/// ply keeps its own press.
#[test]
fn a_board_read_six_plies_ahead_after_lost_reports_is_caught_up_with() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5"]);
    s.step_ms = 0;
    s.press_step_ms = 0;
    s.slide_landing_unreported(Square::G1, Square::F3);
    s.press(1, 0);
    s.slide(Square::B8, Square::C6);
    s.press(1, 0);
    let bishop = s.board.piece_at(Square::F1);
    s.put_unreported(Square::F1, None);
    s.put(Square::B5, bishop);
    s.press(1, 0);
    let pawn = s.lift(Square::A7);
    s.put_unreported(Square::A6, pawn);
    s.press(1, 0);
    s.slide(Square::B5, Square::A4);
    s.press(1, 0);
    s.slide(Square::G8, Square::F6);
    s.press(1, 0);
    s.wait(4000);
    let played = ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5a4", "g8f6"];
    assert_eq!(s.confirmed_events(), played, "{:?}", s.move_log());
    let clks = [299, 299, 298, 298, 297, 297, 296, 296].map(Some);
    assert_eq!(s.confirmed_clks(), clks, "{:?}", s.move_log());
}

/// Rb8 on the board at Black's press; White's Qc6 (the queen's lift lost) and White's press;
/// then, a scan period after Black's press, the rook leaves b8 for c8 (the landing lost).
/// A rook leaving its square that soon after the press is usually the slide going on, but
/// the opponent pressed in between: the opponent moved, so Rb8 was over, and the rook
/// leaving is Black's next move (Ra8-c8 Qc6 reaches the same board in two plies).
#[test]
fn a_piece_leaving_after_the_opponent_pressed_is_the_next_move_not_the_slide_going_on() {
    let mut s = from_fen_clocked("r5k1/1Q3ppp/8/8/8/8/5PPP/6K1 b - - 0 30", 300);
    s.wait(1000);
    s.step_ms = 15;
    s.slide(Square::A8, Square::B8);
    s.wait(30);
    s.press(2, 0);
    let queen = s.board.piece_at(Square::B7);
    s.put_unreported(Square::B7, None);
    s.put(Square::C6, queen);
    s.press(1, 0);
    let rook = s.lift(Square::B8);
    s.put_unreported(Square::C8, rook);
    s.press(3, 0);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["a8b8", "b7c6", "b8c8"], "{:?}", s.move_log());
    assert_eq!(s.confirmed_clks(), [Some(298), Some(299), Some(295)], "{:?}", s.move_log());
}

/// A game from an operator FEN (the board showing it), its clock running with `secs` a side.
fn from_fen_clocked(fen: &str, secs: u32) -> common::Sim {
    common::from_fen(fen, dgt_core::Config::default(), Some(secs)).0
}

/// [`from_fen_clocked`], the board still for a second, then every change and press after
/// read at one time (a link that held the bytes back lets them out in one burst).
fn read_at_one_time(fen: &str, secs: u32) -> common::Sim {
    let mut s = from_fen_clocked(fen, secs);
    s.wait(1000);
    s.step_ms = 0;
    s.press_step_ms = 0;
    s
}

/// White plays e4 (shown); Black Be7 with the bishop's lift from f8 lost, so the board
/// shows a bishop too many; both press; then White takes on d5 and the dump comes only
/// after that (a relay busy for a moment reads it all at once). The search finds Be7 and
/// exd5 in one reading, but exd5's squares were reported after White's press: that press
/// is e4's, and exd5 waits for White's next press. Dated by the reading alone, exd5 looked
/// older than the press, took it, and every %clk from there on was its neighbour's.
#[test]
fn a_ply_reported_after_a_press_is_not_that_presss_ply() {
    let mut s = from_fen_clocked("rnbqkbnr/pp3ppp/4p3/2pp4/8/4P3/PPPP1PPP/RNBQKBNR w KQkq - 0 4", 300);
    s.wait(1000);
    s.step_ms = 15;
    s.slide(Square::E3, Square::E4);
    s.wait(100);
    s.put_unreported(Square::F8, None);
    s.put(Square::E7, piece(B, Role::Bishop));
    s.press(2, 0);
    s.press(1, 0);
    s.lift(Square::D5);
    s.slide(Square::E4, Square::D5);
    s.wait(100);
    s.press(3, 0);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["e3e4", "f8e7", "e4d5"], "{:?}", s.move_log());
    assert_eq!(s.confirmed_clks(), [Some(298), Some(299), Some(295)], "{:?}", s.move_log());
}

/// Black plays Kg8-f8 with the king's landing report lost and presses; White plays Nd2 and
/// presses; Black lifts the rook from d8; only then comes the dump Black's press asked for.
/// Two presses, one by each player in turn, and the dump shows two plies with Black's next
/// piece in the hand: Kf8 and Nd2 are taken, then Rb8. (Read from the board alone once the
/// rook lands, Rb8 Nd2 Kf8 reaches the same board.)
#[test]
fn two_pressed_plies_a_late_dump_shows_are_taken_in_the_order_pressed() {
    let mut s = from_fen_clocked("3r2k1/5ppp/8/8/1R6/5N2/5PPP/6K1 b - - 0 30", 300);
    s.wait(1000);
    s.step_ms = 15;
    let king = s.lift(Square::G8);
    s.put_unreported(Square::F8, king);
    s.press(1, 0);
    s.slide(Square::F3, Square::D2);
    s.press(1, 0);
    let rook = s.lift(Square::D8);
    s.wait(50);
    s.put(Square::B8, rook);
    s.press(2, 0);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["g8f8", "f3d2", "d8b8"], "{:?}", s.move_log());
    assert_eq!(s.confirmed_clks(), [Some(299), Some(299), Some(297)], "{:?}", s.move_log());
}

/// A link that holds the board's bytes back (Bluetooth) delivers, at one read time: the
/// rook's lift from d4 (its landing on d1 lost), Black's press, Kg1-g2, d1 reported emptied
/// (the rook lifted again), and later Rd1-d5 with both presses. Rd4-d5 Kg2 reaches the board
/// in fewer plies, but only Rd4-d1 Kg2 Rd1-d5 explains d1's report: a square reported
/// emptied while it stood empty had a piece set down on it (mixed-s1-g017 under bursts).
#[test]
fn a_square_reported_emptied_while_it_stood_empty_had_a_piece_set_down_on_it() {
    let mut s = from_fen_clocked("6k1/8/8/8/3r4/8/8/6K1 b - - 0 40", 600);
    s.wait(1000);
    rook_via_d1_unseen_to_d5_around_kg2(&mut s);
    assert_eq!(s.confirmed_events(), ["d4d1", "g1g2", "d1d5"], "{:?}", s.move_log());
}

/// At one read time (a link holding bytes back): f7-f6 with the landing's report lost,
/// then e5xf6, the pawn taken off f6 reported (f6 reported emptied while it stood empty),
/// then White's landing there. f7-f5 then e5xf6 en passant reaches the same board, but it
/// needs f5's landing and its lift both lost, where f7-f6 needs one report lost
/// (dropped-s1-g012 under bursts).
#[test]
fn of_orders_reaching_one_board_the_one_needing_fewer_reports_lost_is_taken() {
    let mut s = read_at_one_time("6k1/5p2/8/4P3/8/8/8/6K1 b - - 0 40", 600);
    let black = s.board.piece_at(Square::F7);
    s.put(Square::F7, None);
    s.put_unreported(Square::F6, black);
    s.press(5, 0);
    let white = s.board.piece_at(Square::E5);
    s.put(Square::F6, None);
    s.put(Square::E5, None);
    s.put(Square::F6, white);
    s.press(3, 0);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["f7f6", "e5f6"], "{:?}", s.move_log());
}

/// At one read time (a link holding bytes back): f2-f3 and Ra7-f7 with every report lost,
/// then Kh2-g3 with its landing reported after both their presses, then White's press. The
/// board reached is the same after Kg3 Rf7 f3, but the king landing after Black pressed
/// for the reply is the third ply: f3 Rf7 Kg3, each with its press (dropped-s1-g012 under
/// bursts).
#[test]
fn a_ply_reported_after_the_opponent_pressed_for_the_reply_is_the_later_one() {
    let mut s = read_at_one_time("8/r5k1/4Q1p1/3p3p/2bP3P/8/5PPK/8 w - - 3 37", 600);
    let pawn = s.board.piece_at(Square::F2);
    s.put_unreported(Square::F2, None);
    s.put_unreported(Square::F3, pawn);
    s.press(3, 0);
    let rook = s.board.piece_at(Square::A7);
    s.put_unreported(Square::A7, None);
    s.put_unreported(Square::F7, rook);
    s.press(2, 0);
    let king = s.board.piece_at(Square::H2);
    s.put_unreported(Square::H2, None);
    s.put(Square::G3, king);
    s.press(1, 0);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["f2f3", "a7f7", "h2g3"], "{:?}", s.move_log());
    assert_eq!(s.confirmed_clks(), [Some(597), Some(598), Some(596)], "{:?}", s.move_log());
}

/// Three captures on d4 (cxd4 cxd4 exd4, then Nxd4), each read in a burst with reports
/// lost, and a dump between them showing the board after the first two: exd4 cxd4 cxd4
/// reaches the same board, but only cxd4 cxd4 exd4 passes the board the dump showed
/// (dropped-s1-g009 under bursts).
#[test]
fn a_board_a_dump_showed_tells_apart_orders_reaching_one_board() {
    let mut s =
        read_at_one_time("r2qr1k1/4bpp1/p1npbn1p/1pp1p3/3PP3/2P2NNP/PPB2PP1/R1BQR1K1 b - - 0 15", 600);
    s.lift(Square::D4);
    let black_pawn = s.board.piece_at(Square::C5);
    s.put_unreported(Square::C5, None);
    s.put(Square::D4, black_pawn);
    s.press(2, 0);
    s.lift(Square::D4);
    let white_pawn = s.lift(Square::C3);
    s.put_unreported(Square::D4, white_pawn);
    s.press(2, 0);
    s.wait(20);
    s.put_unreported(Square::D4, None);
    let black_pawn = s.board.piece_at(Square::E5);
    s.put_unreported(Square::E5, None);
    s.put(Square::D4, black_pawn);
    s.press(2, 0);
    s.lift(Square::D4);
    let knight = s.lift(Square::F3);
    s.put(Square::D4, knight);
    s.press(2, 0);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["c5d4", "c3d4", "e5d4", "f3d4"], "{:?}", s.move_log());
}

/// At one read time (a link holding bytes back): Ra8-b8 reported, Black's press, Qb7-c6 (the
/// lift from b7 lost, and the landing on c6 too when `reply_landing_reported` is false),
/// White's press, the rook lifted from b8 and set on c8 (reported or not), Black's press.
/// The rook leaving b8 after White pressed is Black's next move, not a slide going on (the
/// presses' order in the stream says so, though they share a read time): Rb8 Qc6 Rc8, not
/// Rc8 Qc6.
fn rook_moved_on_after_the_reply(reply_landing_reported: bool, rook_landing_reported: bool) {
    let mut s = read_at_one_time("r5k1/1Q6/8/8/8/8/8/6K1 b - - 0 40", 600);
    s.slide(Square::A8, Square::B8);
    s.press(2, 0);
    let queen = s.board.piece_at(Square::B7);
    s.put_unreported(Square::B7, None);
    if reply_landing_reported {
        s.put(Square::C6, queen);
    } else {
        s.put_unreported(Square::C6, queen);
    }
    s.press(1, 0);
    let rook = s.lift(Square::B8);
    if rook_landing_reported {
        s.put(Square::C8, rook);
    } else {
        s.put_unreported(Square::C8, rook);
    }
    s.press(1, 0);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["a8b8", "b7c6", "b8c8"], "{:?}", s.move_log());
}

/// The rook's landing on c8 lost: its lift from b8 is not taken as a slide going on
/// (dropped-s1-g008 under bursts).
#[test]
fn a_piece_leaving_after_the_opponent_pressed_at_the_same_read_time_is_a_new_move() {
    rook_moved_on_after_the_reply(true, false);
}

/// Every report of White's reply lost: the board, missing the reply, reads as Ra8-c8 from
/// before Rb8, but a ply a press the opponent answered is bound to is not given up for a
/// one-ply reading from before it (dropped-s1-g001 under bursts: Ba2-b3, e4 unseen, Bb3-c4).
#[test]
fn a_pressed_ply_is_not_given_up_for_a_one_ply_reading_from_before_it() {
    rook_moved_on_after_the_reply(false, true);
}

/// White's rook goes f3-f2 with its landing lost and White presses; Black plays Nb4-d3 and
/// presses; the rook goes on f2-g2 and White presses, all read in one piece with the dumps
/// late. Until the rook's last reports come, Rf3-d3 Nxd3 explains the board; the rook then
/// reported on g2 is a piece that line took, which does not come back: the capture is not
/// confirmed however long the knight has stood on d3 (dropped-s1-g011 with bursts up to
/// 500 ms, seed 3, published Rd3 for Rf2). The plies wait, unconfirmed: the line is not yet
/// read again from the board (a known stall, not a wrong move).
#[test]
fn a_capture_the_board_still_shows_the_captured_piece_of_is_not_confirmed() {
    let mut s = read_at_one_time("5r2/3br3/3p2pk/p1pP1nNp/PnP1NP2/5R2/7K/6RB w - - 0 49", 300);
    s.slide_landing_unreported(Square::F3, Square::F2);
    s.press(2, 0);
    s.lift(Square::B4);
    s.put(Square::D3, piece(B, Role::Knight));
    s.press(2, 0);
    s.wait_without_dumps(400);
    s.lift(Square::F2);
    s.put(Square::G2, piece(W, Role::Rook));
    s.press(2, 0);
    s.step_ms = 40;
    s.press_step_ms = 10;
    s.wait_without_dumps(600);
    s.wait(3000);
    let all = s.confirmed_events();
    assert!(!all.contains(&"f3d3".to_string()), "{:?}", s.move_log());
}

/// Nd1-e3 with the knight's lift lost (a dump shows d1 emptied), Kf7, Nc2, all confirmed;
/// then, at one read time, Rd4-d1 with its landing lost, Black's press, Kg1-g2, d1 reported
/// emptied, and Rd1-d5 with both presses. The report is a landing of its own, not the late
/// report of the knight's lift the dump showed plies ago: only Rd4-d1 Kg2 Rd1-d5 explains
/// it (dropped-s1-g009 under bursts: Qe5-e2 unseen, b4, Qe2xb2, with e2 emptied by a dump
/// fifty plies before, was read as Qe5xb2 b4).
#[test]
fn a_square_a_dump_emptied_plies_ago_reported_emptied_again_had_a_piece_set_down_on_it() {
    let mut s = from_fen_clocked("6k1/8/8/8/3r4/8/8/3N2K1 w - - 0 40", 600);
    s.wait(1000);
    let knight = s.board.piece_at(Square::D1);
    s.put_unreported(Square::D1, None);
    s.put(Square::E3, knight);
    s.wait(200);
    s.press(2, 0);
    s.wait(350);
    s.slide(Square::G8, Square::F7);
    s.wait(200);
    s.press(2, 0);
    s.wait(350);
    s.slide(Square::E3, Square::C2);
    s.wait(200);
    s.press(2, 0);
    s.wait(1000);
    assert_eq!(s.confirmed_events(), ["d1e3", "g8f7", "e3c2"], "{:?}", s.move_log());
    rook_via_d1_unseen_to_d5_around_kg2(&mut s);
    let played = ["d1e3", "g8f7", "e3c2", "d4d1", "g1g2", "d1d5"];
    assert_eq!(s.confirmed_events(), played, "{:?}", s.move_log());
}

/// At one read time (a link holding bytes back): Black's Rf2-e2 and press, White's Kg4-f5
/// and press; a moment later the king is lifted again and both kings are set on the
/// centre, the players' draw. The press says Kf5 was completed: it stands at the signal,
/// however briefly the board showed it (rotated-s1-g016 under bursts up to 250 ms, seed
/// 8, lost its last move).
#[test]
fn a_pressed_ply_stands_at_a_result_signal_however_briefly_the_board_showed_it() {
    let mut s = read_at_one_time("8/8/8/8/6K1/8/5r2/2k5 b - - 0 60", 600);
    s.slide(Square::F2, Square::E2);
    s.press(2, 0);
    s.slide(Square::G4, Square::F5);
    s.press(2, 0);
    s.wait_without_dumps(100);
    s.slide(Square::F5, Square::D5);
    s.slide(Square::C1, Square::D4);
    s.step_ms = 40;
    s.wait(4000);
    assert_eq!(s.result(), Some(dgt_core::GameResult::Draw), "{:?}", s.move_log());
    assert_eq!(s.confirmed_events(), ["f2e2", "g4f5"], "{:?}", s.move_log());
}

/// At one read time: Rd4-d1 with its landing lost, Black's press, Kg1-g2, d1 reported
/// emptied, then Rd1-d5 with both presses; then three seconds with the dumps answered.
fn rook_via_d1_unseen_to_d5_around_kg2(s: &mut common::Sim) {
    s.step_ms = 0;
    s.press_step_ms = 0;
    let rook = s.lift(Square::D4);
    s.put_unreported(Square::D1, rook);
    s.press(2, 0);
    s.slide(Square::G1, Square::G2);
    s.put(Square::D1, None);
    s.wait_without_dumps(100);
    s.put(Square::D5, rook);
    s.press(1, 0);
    s.press(1, 0);
    s.wait(3000);
}

/// At one read time: ...f5-f4 (its lift lost), e3-e4 (both lost), ...Nd5-c7 (its landing
/// lost), e4-e5 (its landing lost), ...Nc7-d5 (its landing lost), each pressed. The knight
/// out and straight back is a move and its retreat: c7's lift was reported with no knight
/// reported there, so it went there. Without it, the one line through c7 puts ...Nc7 first,
/// against the order the board reported f4 and d5 (dropped-s1-g014 under bursts).
#[test]
fn a_piece_reported_on_a_square_in_passing_may_have_gone_there_and_straight_back() {
    let mut s = read_at_one_time("k7/8/8/3n1p2/8/4P3/8/K7 b - - 0 40", 600);
    let pawn = s.board.piece_at(Square::F5);
    s.put_unreported(Square::F5, None);
    s.put(Square::F4, pawn);
    s.press(5, 0);
    let white = s.board.piece_at(Square::E3);
    s.put_unreported(Square::E3, None);
    s.put_unreported(Square::E4, white);
    s.press(3, 0);
    let knight = s.board.piece_at(Square::D5);
    s.put(Square::D5, None);
    s.put_unreported(Square::C7, knight);
    s.press(4, 0);
    s.put(Square::E4, None);
    s.put_unreported(Square::E5, white);
    s.press(2, 0);
    s.put(Square::C7, None);
    s.put_unreported(Square::D5, knight);
    s.press(6, 0);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["f5f4", "e3e4", "d5c7", "e4e5", "c7d5"], "{:?}", s.move_log());
}

/// At one read time: ...Ra8-b8, Qb7-c6 (its lift lost), ...Rb8-c8 (its landing lost), a
/// dump of that board, Rd1-c1 with both reports lost, ...Rc8xc7, each pressed. Qb7-a8
/// ...Rc8 Qa8-c6 ...Rxc7 reaches the board the reports show with as many presses, but c6's
/// landing came before White pressed for the move before it: White's next move made before
/// its press. That line is no line; a dump shows the rook on c1 (dropped-s1-g008 under
/// bursts).
#[test]
fn a_line_with_a_move_reported_before_its_players_press_for_the_move_before_is_no_line() {
    let mut s = read_at_one_time("r2q1rk1/1QRn1pbp/1p2p1p1/3pP3/3P1B2/5NP1/PP3PKP/3R4 b - - 2 22", 600);
    let rook = s.board.piece_at(Square::A8);
    s.put(Square::A8, None);
    s.put(Square::B8, rook);
    s.press(2, 0);
    let queen = s.board.piece_at(Square::B7);
    s.put_unreported(Square::B7, None);
    s.put(Square::C6, queen);
    s.press(5, 0);
    s.put(Square::B8, None);
    s.put_unreported(Square::C8, rook);
    s.press(3, 0);
    s.dump();
    let white_rook = s.board.piece_at(Square::D1);
    s.put_unreported(Square::D1, None);
    s.put_unreported(Square::C1, white_rook);
    s.press(4, 0);
    s.put(Square::C7, None);
    s.put(Square::C8, None);
    s.put(Square::C7, rook);
    s.press(2, 0);
    s.wait_without_dumps(500);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["a8b8", "b7c6", "b8c8", "d1c1", "c8c7"], "{:?}", s.move_log());
}

/// At one read time: ...Nf6 with both its reports lost, Bg2 and ...Bf5 reported, each
/// pressed, Nf3's lift; then a dump (the knight on f6), Nh4's landing and White's press.
/// ...Bf5 Bg2 ...Nf6 Nh4 reaches the board with as many presses, through the board the
/// reports showed, but Bf5's reports came after White pressed for Bg2, so after the press
/// that would have ended it: a move made after its press. That line is no line; the moves
/// are read in the order played (dropped-s1-g010 under bursts).
#[test]
fn a_line_with_a_move_reported_after_the_press_that_ended_it_is_no_line() {
    let mut s = read_at_one_time("r1bqkbnr/ppp1pppp/1n6/3p4/3P4/2N2NP1/PPP1PP1P/R1BQKB1R b KQkq - 2 4", 600);
    let knight = s.board.piece_at(Square::G8);
    s.put_unreported(Square::G8, None);
    s.put_unreported(Square::F6, knight);
    s.press(3, 0);
    let bishop = s.board.piece_at(Square::F1);
    s.put(Square::F1, None);
    s.put(Square::G2, bishop);
    s.press(2, 0);
    let black_bishop = s.board.piece_at(Square::C8);
    s.put(Square::C8, None);
    s.put(Square::F5, black_bishop);
    s.press(4, 0);
    let white_knight = s.board.piece_at(Square::F3);
    s.put(Square::F3, None);
    s.dump();
    s.put(Square::H4, white_knight);
    s.press(2, 0);
    s.wait_without_dumps(500);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["g8f6", "f1g2", "c8f5", "f3h4"], "{:?}", s.move_log());
}

/// A repetition played over with every report lost (Ke2 Ke7 Ke1 Ke8: four presses, the
/// board as it was), then Ke1-e2 reported and pressed. The board shows one ply for five
/// presses: which of White's three presses ended it is not known, so it gets no `%clk`
/// rather than the last press's (a chain's board, worldcup#199/6 in the two-round test).
#[test]
fn a_ply_pressed_for_after_presses_for_plies_never_shown_gets_no_clk() {
    let mut s = from_fen_clocked("4k3/8/8/8/8/8/8/4K3 w - - 0 40", 600);
    s.wait(1000);
    for (from, to, secs) in [
        (Square::E1, Square::E2, 3),
        (Square::E8, Square::E7, 2),
        (Square::E2, Square::E1, 4),
        (Square::E7, Square::E8, 2),
    ] {
        let king = s.board.piece_at(from);
        s.put_unreported(from, None);
        s.put_unreported(to, king);
        s.press(secs, 0);
        s.wait_without_dumps(300);
    }
    s.slide(Square::E1, Square::E2);
    s.press(5, 0);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["e1e2"], "{:?}", s.move_log());
    assert_eq!(s.confirmed_clks(), [None], "{:?}", s.move_log());
}

/// Black presses with the board showing no move (Rd8-d2's reports lost, the dump the press
/// asked for read before the rook was seen on d2: a chain's log); a dump then shows the
/// rook on d2, and White's flag falls at once. White's clock ran from Black's press, so
/// Rd2 was made before it: the move stands, with that press's time (it was retracted for
/// the flag, the press taken for none).
#[test]
fn a_ply_shown_after_its_press_stands_when_the_opponents_flag_falls() {
    let mut s = from_fen_clocked("3r2k1/5ppp/8/8/8/8/5PPP/6K1 b - - 0 30", 300);
    s.wait(1_000);
    s.press(4, 0);
    s.wait(1_500);
    let rook = s.board.piece_at(Square::D8);
    s.put_unreported(Square::D8, None);
    s.put_unreported(Square::D2, rook);
    s.dump();
    s.wait(20);
    s.flag_falls(W);
    s.wait(1_000);
    assert_eq!(s.confirmed_events(), ["d8d2"], "{:?}", s.move_log());
    assert_eq!(s.confirmed_clks(), [Some(296)], "{:?}", s.move_log());
    assert_eq!(s.tracker.result(), Some((dgt_core::GameResult::BlackWins, dgt_core::EndReason::FlagFall)));
}

/// After 1. e4 e5, Qd1-f3 ...Nb8-c6 Qf3-h5 over a link that held the board's output back
/// (dropped-s1-g010 at 500 ms bursts: Rh3-e3 ...Nd5 Re3-a3), with the queen's landings and
/// the knight's lift lost: the board reported d1 emptied, c6 set down and f3 emptied, with
/// the three presses between, and the dump it was asked for came after all of them. That
/// dump shows what Qd1-h5 ...Nc6 shows too, a ply fewer; but three presses ended three
/// plies, and f3's report (emptied while it stood empty) is the queen's landing there. The
/// queen went by f3; the first ply is never Qh5.
#[test]
fn presses_that_came_before_a_late_dump_count_the_plies_it_shows() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5"]);
    s.step_ms = 20;
    s.slide_landing_unreported(Square::D1, Square::F3);
    s.press(1, 0);
    s.wait_without_dumps(100);
    s.put_unreported(Square::B8, None);
    s.put(Square::C6, piece(B, Role::Knight));
    s.press(1, 0);
    s.wait_without_dumps(100);
    s.slide_landing_unreported(Square::F3, Square::H5);
    s.press(1, 0);
    s.wait_without_dumps(300);
    s.wait(1500);
    assert_eq!(s.confirmed_events(), ["e2e4", "e7e5", "d1f3", "b8c6", "f3h5"], "{:?}", s.move_log());
}

/// Rc1-c7 ...Ra8-b8 Qb7xa7 ...Rb8-a8 Qa7-b7 ...Ra8-b8 with a press after each, read at one
/// time with a dump only after it all (dropped-s1-g008 at 500 ms bursts): c1's lift and the
/// queen's landing on a7 and lift from it were lost. Black's rook went out to a8 and back to
/// b8, where it stands: b8 was reported set down on twice, so a rook going a8-b8-a8 is a line
/// though the square is not empty now. Without that, no line explains the dump and the game
/// waits (in the harness it waited until a dump four plies later was caught up with in an
/// order nobody played: Qxa7 Rb8 Qb7 Ra8 Rc7).
#[test]
fn a_piece_set_down_twice_on_the_square_it_stands_on_went_there_twice() {
    let mut s = read_at_one_time("r5k1/pQ3ppp/8/8/8/8/5PPP/2R3K1 w - - 0 30", 300);
    s.put_unreported(Square::C1, None);
    s.put(Square::C7, piece(W, Role::Rook));
    s.press(2, 0);
    s.slide(Square::A8, Square::B8);
    s.press(2, 0);
    s.lift(Square::A7);
    s.slide_landing_unreported(Square::B7, Square::A7);
    s.press(2, 0);
    s.slide(Square::B8, Square::A8);
    s.press(2, 0);
    s.put_unreported(Square::A7, None);
    s.put(Square::B7, piece(W, Role::Queen));
    s.press(2, 0);
    s.slide(Square::A8, Square::B8);
    s.press(2, 0);
    s.wait_without_dumps(200);
    s.wait(3000);
    let played = ["c1c7", "a8b8", "b7a7", "b8a8", "a7b7", "a8b8"];
    assert_eq!(s.confirmed_events(), played, "{:?}", s.move_log());
}

/// Rb3-b7 ...Ke6 Rb6 ...Ke5 Rb7 ...Kf6 Rb6+ with a press after each, over a link that
/// held the board's output back (dropped-s1-g016 at 500 ms bursts): b3's and the rook's
/// later lifts and e6's landing lost, each dump read with the next move's reports. The board
/// ends where Rb3-b7 ...Kf6 Rb6+ would leave it, three plies; but seven presses ended seven
/// plies, and the re-read before the line is confirmed takes the line of as many plies as
/// were pressed for. Read as three, the four plies between were lost and every ply after
/// went to the wrong player.
#[test]
fn a_line_the_presses_count_more_plies_for_is_read_at_that_length() {
    let mut s = read_at_one_time("8/5ppp/8/r3k3/6P1/pR6/P5KP/8 w - - 3 41", 300);
    let w_rook = piece(W, Role::Rook);
    let b_king = piece(B, Role::King);
    s.put_unreported(Square::B3, None);
    s.put(Square::B7, w_rook);
    s.press(2, 0);
    s.slide_landing_unreported(Square::E5, Square::E6);
    s.press(2, 0);
    s.wait_without_dumps(300);
    // Each dump shows the board from before the reports read with it.
    s.dump();
    s.put_unreported(Square::B7, None);
    s.put(Square::B6, w_rook);
    s.press(2, 0);
    s.lift(Square::E6);
    s.put(Square::E5, b_king);
    s.press(2, 0);
    s.wait_without_dumps(100);
    s.dump();
    s.wait_without_dumps(180);
    s.dump();
    s.put_unreported(Square::B6, None);
    s.put(Square::B7, w_rook);
    s.press(2, 0);
    s.slide(Square::E5, Square::F6);
    s.press(2, 0);
    s.wait_without_dumps(150);
    s.dump();
    s.slide(Square::B7, Square::B6);
    s.press(2, 0);
    s.wait(3000);
    let played = ["b3b7", "e5e6", "b7b6", "e6e5", "b6b7", "e5f6", "b7b6"];
    assert_eq!(s.confirmed_events(), played, "{:?}", s.move_log());
    // Each ply has its own press's time.
    let clks = [298, 298, 296, 296, 294, 294, 292].map(Some);
    assert_eq!(s.confirmed_clks(), clks, "{:?}", s.move_log());
}

/// Black moves ...Rf8-d8 and leaves it for a while, takes it back to f8, then takes the
/// rook on g8 (lifted first) and presses once (mixed-s2-g035 at 500 ms bursts; g034 the
/// same with a bishop). Keeping ...Rd8, which stood, the board is reached only by five
/// plies (Rd8 Rf8 Re8 Rg8 Rxg8) for one press: the running clock says one ply was played,
/// and the ply that stood was taken back in hand.
#[test]
fn a_ply_that_stood_unpressed_and_was_taken_back_is_not_kept_against_the_presses() {
    let mut s = from_fen_clocked("2k2rR1/p3p3/1p6/2p5/5n2/2P1N3/PP3P2/2KR4 b - - 0 28", 300);
    s.wait(1000);
    s.slide(Square::F8, Square::D8);
    s.wait(600);
    s.slide(Square::D8, Square::F8);
    s.lift(Square::G8);
    s.wait_without_dumps(300);
    s.slide(Square::F8, Square::G8);
    s.press(3, 0);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["f8g8"], "{:?}", s.move_log());
    assert_eq!(s.confirmed_clks(), [Some(297)], "{:?}", s.move_log());
}

/// ...Nf4-d5 Re3-a3 ...Nd5-f4 Ra3xa6+ ...Ke6-d5 Ra6-a5+, the last four pressed in pairs
/// read in one clock reading, all read in bursts (mixed-s1-g010 at 500 ms bursts, seed 9):
/// the knight's landing on d5 was lost and only a dump showed it there, before the king came
/// to d5. A piece a dump showed that the board no longer shows there stood there in passing,
/// as one reported set down and lifted did: the knight may have gone out to d5 and straight
/// back. Without that, the re-read before the plies were confirmed found only lines sending
/// the knight elsewhere (...Nh3, over the square the rook had left) and published them.
#[test]
fn a_piece_a_dump_showed_where_another_stands_now_stood_there_in_passing() {
    let mut s = read_at_one_time("8/8/p3k3/5p1p/2p1nn2/7R/P6P/2R2K2 w - - 0 43", 300);
    let w_rook = piece(W, Role::Rook);
    let b_knight = piece(B, Role::Knight);
    let b_king = piece(B, Role::King);
    s.put(Square::E3, w_rook);
    s.lift(Square::H3);
    s.press(2, 0);
    s.wait_without_dumps(300);
    s.slide_landing_unreported(Square::F4, Square::D5);
    s.press(2, 0);
    s.lift(Square::E3);
    s.put(Square::A3, w_rook);
    s.press(2, 0);
    s.wait_without_dumps(370);
    // Each dump shows the board from before the reports read with it.
    s.dump();
    s.lift(Square::D5);
    s.put(Square::F4, b_knight);
    s.lift(Square::A6);
    s.lift(Square::A3);
    s.put(Square::A6, w_rook);
    s.press_pair_in_one_reading(2, 0);
    s.lift(Square::E6);
    s.put(Square::D5, b_king);
    s.lift(Square::A6);
    s.put(Square::A5, w_rook);
    s.press_pair_in_one_reading(2, 0);
    s.wait_without_dumps(370);
    // Each dump shows the board from before the reports read with it.
    s.dump();
    s.lift(Square::D5);
    s.put(Square::D4, b_king);
    s.press(2, 0);
    s.put(Square::F5, w_rook);
    s.lift(Square::A5);
    s.press(2, 0);
    s.wait_without_dumps(300);
    s.wait(3000);
    let played = ["h3e3", "f4d5", "e3a3", "d5f4", "a3a6", "e6d5", "a6a5", "d5d4", "a5f5"];
    assert_eq!(s.confirmed_events(), played, "{:?}", s.move_log());
}

/// Qe6-e7+ ...Kg7-g8 Qe7-d6 ...Kg8-g7 g4-g5 with a press after each, read in bursts
/// (mixed-s1-g012 at 500 ms bursts, seed 21): the queen's landing on e7 was lost, and e7's
/// lift for Qd6 came after both presses. Read before it, the board reached Qe6-g8+ ...Kxg8,
/// and the dump taken with the queen in hand showed that board too. A landing whose report
/// was lost on a square the line never touches holds the line until it is read again: else
/// Qg8+ was published and the game stalled.
#[test]
fn a_lost_landing_the_line_never_touches_holds_its_plies() {
    let mut s = read_at_one_time("8/6k1/4Q1p1/3p4/2bP2PP/4K3/8/5r2 w - - 1 43", 300);
    let w_queen = piece(W, Role::Queen);
    let b_king = piece(B, Role::King);
    s.slide_landing_unreported(Square::E6, Square::E7);
    s.wait_without_dumps(480);
    s.press(2, 0);
    s.put(Square::G8, b_king);
    s.lift(Square::G7);
    s.press(2, 0);
    s.lift(Square::E7);
    s.wait_without_dumps(470);
    // The dump shows the queen in hand.
    s.dump();
    s.put(Square::D6, w_queen);
    s.press(2, 0);
    s.lift(Square::G8);
    s.put(Square::G7, b_king);
    s.press(2, 0);
    s.lift(Square::G4);
    s.put(Square::G5, piece(W, Role::Pawn));
    s.press(2, 0);
    s.wait_without_dumps(100);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["e6e7", "g7g8", "e7d6", "g8g7", "g4g5"], "{:?}", s.move_log());
}

/// f2-f4 ...Ne5-g4 with a press after each, f4's landing lost; then White takes on g4 with
/// the bishop, puts both pieces back and plays Be2-d3, all read in bursts (mixed-s1-g003 at
/// 500 ms bursts, seed 20261130). With the bishop in hand, the board is the one Be2-g4
/// ...Nxg4 f4 reaches, but f2's lift came before White's first press: the third ply of that
/// line was reported before its mover pressed for the first. A line the presses' turns rule
/// out is not verified by a dump, though no other line explains the board yet.
#[test]
fn a_line_with_a_ply_reported_before_its_movers_previous_press_is_not_confirmed() {
    let mut s = read_at_one_time("r2qr1k1/p2b1ppp/1p1p4/3Pn3/2PQ4/2P5/P3BPPP/R1B2RK1 w - - 0 16", 300);
    let w_bishop = piece(W, Role::Bishop);
    let b_knight = piece(B, Role::Knight);
    s.slide_landing_unreported(Square::F2, Square::F4);
    s.press(2, 0);
    s.put(Square::G4, b_knight);
    s.lift(Square::E5);
    s.press(2, 0);
    s.wait_without_dumps(180);
    // Each dump shows the board from before the reports read with it.
    s.dump();
    s.lift(Square::G4);
    s.lift(Square::E2);
    s.put(Square::G4, w_bishop);
    s.wait_without_dumps(150);
    s.dump();
    s.lift(Square::G4);
    s.wait_without_dumps(85);
    s.dump();
    s.put(Square::E2, w_bishop);
    s.put(Square::G4, b_knight);
    s.lift(Square::E2);
    s.wait_without_dumps(320);
    s.put(Square::D3, w_bishop);
    s.press(2, 0);
    s.wait_without_dumps(100);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["f2f4", "e5g4", "e2d3"], "{:?}", s.move_log());
}

/// Qc7-b7 ...Bg7-f8 Rc1-c7 ...Re8-e7 Rc7-c8, the game's last moves, with a press after
/// each and the clock stopped after the last, read in bursts (dropped-s1-g008 at 500 ms
/// bursts, seed 20261129): b7's and e7's landings lost. Rc1-c8 in one move reaches the same
/// board in a ply fewer, but five presses ended five plies: the re-read before the plies
/// are final takes a line of as many plies as were pressed for, though the clock no longer
/// runs. Read as four, Black's plies were published in an order nobody played.
#[test]
fn presses_made_before_the_clock_stopped_still_count_the_plies() {
    let mut s = read_at_one_time("3qr1k1/2Qn1pb1/1p2p1pp/3pP3/3P1B1P/5NP1/PP3PK1/2R5 w - - 3 27", 300);
    let w_rook = piece(W, Role::Rook);
    s.slide_landing_unreported(Square::C7, Square::B7);
    s.press(2, 0);
    s.slide(Square::G7, Square::F8);
    s.press(2, 0);
    s.lift(Square::C1);
    s.put(Square::C7, w_rook);
    s.press(2, 0);
    s.wait_without_dumps(480);
    // Each dump shows the board from before the reports read with it.
    s.dump();
    s.slide_landing_unreported(Square::E8, Square::E7);
    s.press(2, 0);
    s.lift(Square::C7);
    s.put(Square::C8, w_rook);
    s.press(2, 0);
    s.wait_without_dumps(215);
    s.dump();
    if let Some(c) = s.clock.as_mut() {
        c.running = None;
    }
    s.send_clock();
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["c7b7", "g7f8", "c1c7", "e8e7", "c7c8"], "{:?}", s.move_log());
}

/// Nf1-d2 (its landing lost), White's press, ...Ng7-e8 and the premove Nh2-f3, both
/// presses in one clock reading, then ...Qd8-f6, all read at one time (mixed-s1-g011, the
/// relay frozen 600 ms). The pair of presses leaves the lever where it was; the reports
/// after their reading came after both presses, so ...Qf6 is Black's second ply here and
/// ...Ne8 the first. Counted by the lever alone, the pair was no press among the reports:
/// ...Ne8 and ...Qf6 read as if in one turn, the two orders tied, and the plies were
/// never confirmed (the game stalled for good at ply 59).
#[test]
fn reports_after_a_pair_of_presses_in_one_reading_came_after_both() {
    let mut s = read_at_one_time("2bq1rk1/1r4np/3p2pQ/p1pPpp2/PnP1P2P/2R3P1/5P1N/3BRNK1 w - - 0 30", 300);
    let b_queen = piece(B, Role::Queen);
    s.slide_landing_unreported(Square::F1, Square::D2);
    s.press(2, 0);
    s.slide(Square::G7, Square::E8);
    s.slide(Square::H2, Square::F3);
    s.press_pair_in_one_reading(2, 0);
    s.put(Square::F6, b_queen);
    s.lift(Square::D8);
    s.wait_without_dumps(5);
    s.dump();
    s.press(2, 0);
    s.wait(300);
    s.slide(Square::F3, Square::G5);
    s.press(2, 0);
    s.wait(3000);
    let played = ["f1d2", "g7e8", "h2f3", "d8f6", "f3g5"];
    assert_eq!(s.confirmed_events(), played, "{:?}", s.move_log());
}

/// Qd1-e2 and Bg3-h4 with their landings lost, ...Nh5 and ...Qc7 between, then g2-g4 with
/// the pawn reported set down on g3 on its way, all read at one time (mixed-s1-g002, the
/// relay frozen 800 ms). g3's last report is the pawn's, after White pressed for Bh4: it
/// says nothing of when the bishop left. Taken as the bishop's, Bh4 read as reported after
/// its own press, the line played was rejected as out of its presses' turn, and no other
/// explained the board: the game stalled for good.
#[test]
fn a_square_a_later_ply_slid_through_says_nothing_of_the_ply_that_left_it() {
    let mut s = read_at_one_time("r1bq1rk1/pp3p1p/2nbpnp1/2pp4/3P4/2PBPNB1/PP1N1PPP/R2QK2R w KQ - 0 9", 300);
    s.slide_landing_unreported(Square::D1, Square::E2);
    s.press(2, 0);
    s.slide(Square::F6, Square::H5);
    s.press(2, 0);
    s.slide_landing_unreported(Square::G3, Square::H4);
    s.press(2, 0);
    s.slide(Square::D8, Square::C7);
    s.press(2, 0);
    s.slide(Square::G2, Square::G3);
    s.slide(Square::G3, Square::G4);
    s.press(2, 0);
    s.wait_without_dumps(5);
    s.dump();
    s.wait(3000);
    let played = ["d1e2", "f6h5", "g3h4", "d8c7", "g2g4"];
    assert_eq!(s.confirmed_events(), played, "{:?}", s.move_log());
}

/// Without a clock, nine plies shown one by one, none final yet; then Black castles king
/// first (Ke8-g8, the rook still on h8) and a dump read at once with the king's reports (a
/// relay frozen for a second, worldcup#105 in our sweep) shows the board just then.
/// Ke8-f8-g8 with White's c2-c3-c4 in place of c2-c4 reaches that board in two plies more,
/// each with two reports lost; taken, it gave up the plies the board had shown and
/// published c3. The king set down where the castle puts it, its rook not moved yet, is a
/// move under way.
#[test]
fn a_king_castling_first_read_before_its_rook_moves_is_a_move_under_way() {
    let mut s = common::Sim::started(dgt_core::Config::default(), Orientation::Normal);
    s.wait(1000);
    let mut pos = Chess::default();
    for uci in ["d2d4", "g8f6", "c2c4", "g7g6", "b1c3", "f8g7", "e2e4", "d7d6", "f1e2"] {
        pos = s.play_uci(&pos, uci);
        s.wait_without_dumps(300);
    }
    s.step_ms = 0;
    s.slide(Square::E8, Square::G8);
    s.dump();
    s.step_ms = 40;
    s.wait_without_dumps(500);
    s.slide(Square::H8, Square::F8);
    s.wait(3000);
    let played = ["d2d4", "g8f6", "c2c4", "g7g6", "b1c3", "f8g7", "e2e4", "d7d6", "f1e2", "e8g8"];
    assert_eq!(s.confirmed_events(), played, "{:?}", s.move_log());
}

/// A link that holds the board's bytes back, with reports lost (dropped-s1-g007 at 500 ms):
/// ...Raxc8, Nxc5, ...Bxc5, Qxc5 and ...Rd3, each pressed, come in bursts, each but the
/// first beginning with the dump asked for after the one before. Read first as ...Bxc5
/// Qe3-d3 ...Rxd3 (Qxc5's reports all but e3's lost), the presses for ...Bxc5, Qd3 and
/// ...Rxd3 were bound to those plies; the next dump shows the queen on c5 and the line is
/// read again with Qxc5 and ...Rd3. Bound to plies no longer in the line, the presses still
/// kept the plies from taking them in turn: here Qxc5, Ne1 and Qb5 got no `%clk` (in the
/// offline run, Qb5 got a neighbour's).
#[test]
fn presses_bound_to_plies_read_again_take_the_new_plies_in_turn() {
    let mut s =
        read_at_one_time("r1Brq1k1/ppn1b1pp/2n2p2/2p1p3/2P1N3/1P2QNP1/PB1P1P1P/R4RK1 b - - 0 16", 3000);
    // ...Raxc8 with both lifts lost, Black's press, Nxc5 with both lifts lost.
    s.put_unreported(Square::C8, None);
    s.put_unreported(Square::A8, None);
    s.put(Square::C8, piece(Color::Black, Role::Rook));
    s.press(10, 0);
    s.put_unreported(Square::C5, None);
    s.put_unreported(Square::E4, None);
    s.put(Square::C5, piece(Color::White, Role::Knight));
    s.wait_without_dumps(220);
    // The dump asked after that, White's press, ...Bxc5 with its landing lost.
    s.dump();
    s.press(20, 0);
    s.put(Square::C5, None);
    s.put(Square::E7, None);
    s.put_unreported(Square::C5, piece(Color::Black, Role::Bishop));
    s.wait_without_dumps(450);
    // The dump asked after ...Bxc5's reports, Black's press, Qxc5 with all but e3's reports
    // lost, White's press, ...Rd3, Black's press.
    s.dump();
    s.press(30, 0);
    s.put_unreported(Square::C5, None);
    s.put(Square::E3, None);
    s.put_unreported(Square::C5, piece(Color::White, Role::Queen));
    s.press(40, 0);
    s.slide(Square::D8, Square::D3);
    s.press(50, 0);
    s.wait_without_dumps(170);
    // The dump asked after ...Rd3 shows the queen on c5; then Ne1, White's press.
    s.dump();
    s.slide(Square::F3, Square::E1);
    s.wait_without_dumps(200);
    s.press(60, 0);
    s.step_ms = 40;
    s.wait(1500);
    // ...Ne6 and Qb5, each pressed.
    s.slide(Square::C7, Square::E6);
    s.press(70, 0);
    s.wait(500);
    s.slide(Square::C5, Square::B5);
    s.press(80, 0);
    s.wait(3000);
    let played = ["a8c8", "e4c5", "e7c5", "e3c5", "d8d3", "f3e1", "c7e6", "c5b5"];
    assert_eq!(s.confirmed_events(), played, "{:?}", s.move_log());
    let clks = [2990, 2980, 2960, 2940, 2910, 2880, 2840, 2800].map(Some);
    assert_eq!(s.confirmed_clks(), clks, "{:?}", s.move_log());
}
