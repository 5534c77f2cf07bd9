//! Adversarial scenarios: what a tournament arbiter sees clumsy hands, hurried players and
//! flaky links do. Each test states the moves that must be confirmed, and checks the whole
//! event stream so that no ghost move is ever emitted as `MoveConfirmed`, not even one
//! that is later taken back.

mod common;

use common::{Sim, clocked, from_fen, parse_uci, piece, play_pressed};
use dgt_core::{Config, EndReason, Event, GameResult, GameState, Period, TimeControl, Timing, View};
use dgt_protocol::{ClockSide, ClockStatus, ClockTime, ClockTimes, Orientation, SideFlags, SideReading};
use shakmaty::{Chess, Color, Position, Role, Square};

const W: Color = Color::White;
const B: Color = Color::Black;

// ----- helpers --------------------------------------------------------------------------

fn line(ucis: &[&str]) -> Chess {
    let mut p = Chess::default();
    for u in ucis {
        p.play_unchecked(parse_uci(&p, u));
    }
    p
}

/// Replays the event stream: every `MoveConfirmed` must be one of `allowed` at its ply, and
/// the confirmed line the stream describes (after takebacks) must be `expected`.
fn check_stream(s: &Sim, expected: &[&str]) {
    let mut line: Vec<String> = Vec::new();
    for e in &s.events {
        match e {
            Event::GameStarted { .. } => line.clear(),
            Event::MoveConfirmed(m) => {
                assert_eq!(usize::from(m.ply), line.len() + 1, "confirmed ply numbers are consecutive");
                line.push(m.uci.to_string());
            }
            Event::Takeback { to_ply, .. } => line.truncate(usize::from(*to_ply)),
            _ => {}
        }
    }
    assert_eq!(line, expected, "confirmed line in the event stream");
    assert_eq!(s.confirmed_ucis(), expected, "confirmed line in the tracker");
}

/// Every `MoveConfirmed` ever emitted, in order (a ghost shows here even if withdrawn later).
fn all_confirmed(s: &Sim) -> Vec<String> {
    s.confirmed_events()
}

fn count_mismatches(s: &Sim) -> usize {
    s.count(|e| matches!(e, Event::PositionMismatch { .. }))
}

fn clks(s: &Sim) -> Vec<(Option<u32>, Option<u32>)> {
    let mut v = Vec::new();
    s.tracker.for_each_move(View::Confirmed, |m| v.push((m.clk, m.emt)));
    v
}

// ----- captures ---------------------------------------------------------------------------

#[test]
fn capture_with_victim_briefly_put_on_another_square() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "g1f3", "b8c6"]);
    // Nxe5: the pawn is taken off, dropped on d6 by the hand, picked up again.
    let pawn = s.lift(Square::E5);
    s.slide(Square::F3, Square::E5);
    s.put(Square::D6, pawn);
    s.wait(500);
    s.lift(Square::D6);
    s.wait(300);
    s.press(4, 2);
    s.wait(3000);
    let expect = ["e2e4", "e7e5", "g1f3", "b8c6", "f3e5"];
    check_stream(&s, &expect);
    assert_eq!(all_confirmed(&s), expect);
}

#[test]
fn capture_victim_dropped_on_the_movers_origin_square() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "d7d5"]);
    // exd5: the pawn captures, the victim is parked on e4 for a moment, then removed.
    let victim = s.lift(Square::D5);
    s.slide(Square::E4, Square::D5);
    s.put(Square::E4, victim);
    s.wait(400);
    s.lift(Square::E4);
    s.press(4, 2);
    s.wait(3000);
    check_stream(&s, &["e2e4", "d7d5", "e4d5"]);
    assert_eq!(all_confirmed(&s), ["e2e4", "d7d5", "e4d5"]);
}

#[test]
fn capture_updates_in_reverse_scan_order() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "g1f3", "b8c6"]);
    // The scan sees the knight on e5 before it sees f3 empty.
    s.put(Square::E5, piece(W, Role::Knight));
    s.put(Square::F3, None);
    s.press(3, 2);
    s.wait(3000);
    check_stream(&s, &["e2e4", "e7e5", "g1f3", "b8c6", "f3e5"]);
    assert_eq!(count_mismatches(&s), 0);
}

// ----- castling -----------------------------------------------------------------------------

#[test]
fn castling_rook_first_with_a_long_pause_before_the_king() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"]);
    // Rf1 on the board is a legal move in itself; the king follows 2.5 s later, held in
    // the air for a second, and only then the clock is pressed.
    s.slide(Square::H1, Square::F1);
    s.wait(2500);
    s.lift(Square::E1);
    s.wait(1000);
    s.put(Square::G1, piece(W, Role::King));
    s.wait(300);
    s.press(6, 2);
    s.wait(3000);
    let expect = ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6", "e1g1"];
    check_stream(&s, &expect);
    assert_eq!(all_confirmed(&s), expect, "Rf1 never confirmed");
}

#[test]
fn castling_king_slid_through_f1_rook_in_hand() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"]);
    // King e1-f1 (a legal Kf1 on its own), stays there a moment, then on to g1; the rook
    // comes last and the press follows at once.
    s.slide(Square::E1, Square::F1);
    s.wait(800);
    s.slide(Square::F1, Square::G1);
    s.wait(800);
    s.slide(Square::H1, Square::F1);
    s.press(6, 2);
    s.wait(3000);
    let expect = ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6", "e1g1"];
    check_stream(&s, &expect);
    assert_eq!(all_confirmed(&s), expect, "Kf1 never confirmed");
}

// ----- promotion ----------------------------------------------------------------------------

#[test]
fn promotion_pawn_on_last_rank_swapped_after_two_seconds_then_pressed() {
    let (mut s, _) = from_fen("8/4P1k1/8/8/8/8/8/4K3 w - - 0 1", Config::default(), Some(300));
    s.lift(Square::E7);
    s.put(Square::E8, piece(W, Role::Pawn));
    s.wait(2000);
    s.lift(Square::E8);
    s.put(Square::E8, piece(W, Role::Queen));
    assert!(all_confirmed(&s).is_empty());
    s.wait(300);
    s.press(4, 2);
    s.wait(3000);
    check_stream(&s, &["e7e8q"]);
    assert_eq!(all_confirmed(&s), ["e7e8q"]);
}

// ----- the clock ------------------------------------------------------------------------------

#[test]
fn pressing_the_clock_twice() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let p = s.play_uci(&Chess::default(), "e2e4");
    s.wait(200);
    // White presses, and the lever bounces back (the other side is hit too).
    s.press(3, 2);
    s.press(0, 0);
    s.wait(6000);
    check_stream(&s, &["e2e4"]);
    // Black thinks, moves, and the line goes on normally.
    s.play_uci(&p, "e7e5");
    s.wait(6000);
    check_stream(&s, &["e2e4", "e7e5"]);
}

#[test]
fn opponent_touches_a_piece_before_the_mover_pressed() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    s.play_uci(&Chess::default(), "g1f3");
    s.wait(300);
    // Black already lifts the d-pawn while White's hand goes to the clock.
    let pawn = s.lift(Square::D7);
    s.press(4, 2);
    s.wait(700);
    s.put(Square::D5, pawn);
    s.wait(300);
    s.press(5, 2);
    s.wait(3000);
    check_stream(&s, &["g1f3", "d7d5"]);
}

#[test]
fn opponent_touches_and_puts_back_before_the_mover_pressed() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    s.play_uci(&Chess::default(), "g1f3");
    s.wait(300);
    let pawn = s.lift(Square::D7);
    s.wait(200);
    s.press(4, 2);
    s.wait(200);
    s.put(Square::D7, pawn);
    s.wait(6000);
    check_stream(&s, &["g1f3"]);
    assert_eq!(s.tracker.ply_count(View::Live), 1);
}

#[test]
fn takeback_of_one_ply_immediately_after_a_press() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let p = play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5"]);
    s.play_uci(&p, "g1f3");
    s.press(3, 2);
    // "Sorry": the knight goes straight back.
    s.wait(150);
    s.slide(Square::F3, Square::G1);
    s.wait(3000);
    check_stream(&s, &["e2e4", "e7e5"]);
    assert!(s.events.iter().any(|e| matches!(e, Event::Takeback { to_ply: 2, .. })));
    assert_eq!(s.tracker.ply_count(View::Live), 2);
    // The arbiter gives White the clock back; White plays another move and presses.
    if let Some(c) = &mut s.clock {
        c.running = Some(W);
        c.high = W;
    }
    s.send_clock();
    s.wait(500);
    s.play_uci(&p, "b1c3");
    s.press(5, 2);
    s.wait(500);
    check_stream(&s, &["e2e4", "e7e5", "b1c3"]);
}

#[test]
fn same_player_moves_again_after_pressing() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let p = play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5"]);
    let p = s.play_uci(&p, "g1f3");
    s.press(3, 2);
    // White, confused, moves again while Black's clock runs.
    s.slide(Square::F1, Square::C4);
    s.wait(8000);
    check_stream(&s, &["e2e4", "e7e5", "g1f3"]);
    assert!(all_confirmed(&s).iter().all(|u| u != "f1c4"), "a second White move is never White's");
    assert!(count_mismatches(&s) >= 1, "the operator is told");
    // The arbiter puts the bishop back; Black plays on.
    s.slide(Square::C4, Square::F1);
    s.wait(200);
    s.play_uci(&p, "b8c6");
    s.press(4, 2);
    s.wait(500);
    check_stream(&s, &["e2e4", "e7e5", "g1f3", "b8c6"]);
    assert!(s.events.contains(&Event::PositionRecovered));
}

#[test]
fn same_player_moves_again_with_a_reversible_move() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let p = play_pressed(&mut s, &Chess::default(), &["d2d4", "d7d5"]);
    s.play_uci(&p, "g1f3");
    s.press(3, 2);
    s.wait(300);
    // White's knight hops on again: Nf3-g5 while Black is to move.
    s.slide(Square::F3, Square::G5);
    s.wait(8000);
    check_stream(&s, &["d2d4", "d7d5", "g1f3"]);
    assert!(all_confirmed(&s).len() == 3, "no ghost: {:?}", all_confirmed(&s));
}

// ----- the link -------------------------------------------------------------------------------

#[test]
fn board_dump_mid_move_with_pieces_in_the_air() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "g1f3", "b8c6"]);
    // Nxe5 is under way when the link drops: victim and knight both in the hand.
    s.board.discard_piece_at(Square::E5);
    s.board.discard_piece_at(Square::F3);
    s.dump();
    s.wait(400);
    // Reconnected: the knight lands, and the next dump agrees.
    s.put(Square::E5, piece(W, Role::Knight));
    s.dump();
    s.press(3, 2);
    s.wait(3000);
    check_stream(&s, &["e2e4", "e7e5", "g1f3", "b8c6", "f3e5"]);
    assert_eq!(all_confirmed(&s).len(), 5);
}

#[test]
fn board_dump_shows_two_plies_and_a_piece_in_the_air() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5"]);
    // While disconnected: Nf3 (pressed, but the press is not seen), Nc6, and White's
    // bishop already in the hand.
    let p = line(&["e2e4", "e7e5", "g1f3", "b8c6"]);
    s.board = p.board().clone();
    s.board.discard_piece_at(Square::F1);
    s.dump();
    s.wait(2500);
    assert_eq!(all_confirmed(&s).len(), 2, "nothing certain while a piece is in the air");
    s.put(Square::B5, piece(W, Role::Bishop));
    s.wait(3000);
    // Nf3 and Nc6 are proven by what followed; Bb5 waits for its press.
    s.press(3, 2);
    s.wait(500);
    check_stream(&s, &["e2e4", "e7e5", "g1f3", "b8c6", "f1b5"]);
}

#[test]
fn a_lost_landing_report_is_not_read_as_a_capture_and_a_recapture() {
    // Black plays Rxd2. The board reports the lifts of d2 and e2 but loses the report of the
    // rook landing on d2: e2 and d2 empty reads as Rxe3 dxe3, two legal plies. Black's
    // press must not confirm that: the dump the tracker asks for shows the rook on d2.
    let (mut s, _) = from_fen("4k3/8/8/8/8/4P3/3Pr3/7K b - - 0 1", Config::default(), Some(300));
    s.lift(Square::D2);
    s.lift(Square::E2);
    // The landing, physically done but never reported.
    s.board.set_piece_at(Square::D2, piece(Color::Black, Role::Rook).expect("rook"));
    s.wait(400);
    s.press(3, 2);
    s.wait(3000);
    check_stream(&s, &["e2d2"]);
    assert_eq!(all_confirmed(&s), ["e2d2"]);
}

// ----- no clock ---------------------------------------------------------------------------------

#[test]
fn an_entire_game_without_a_clock() {
    let mut s = Sim::started(Config::default(), Orientation::Normal);
    let moves = ["e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6", "h5f7"];
    let mut p = Chess::default();
    for (i, u) in moves.iter().enumerate() {
        p = s.play_uci(&p, u);
        // Some moves are fast (the next comes before the quiet time), some slow.
        s.wait(if i % 2 == 0 { 600 } else { 2500 });
    }
    s.wait(3000);
    check_stream(&s, &moves);
    assert_eq!(s.tracker.result(), Some((GameResult::WhiteWins, EndReason::Checkmate)));
    for (clk, emt) in clks(&s) {
        assert_eq!(clk, None);
        assert!(emt.is_some());
    }
}

// ----- hands ------------------------------------------------------------------------------------

#[test]
fn knocked_over_pieces_of_both_sides() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let p = play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "g1f3"]);
    s.clear_events();
    // Black's sleeve sweeps the white queen and the own knight off; both put back, the
    // other way round, after a while.
    let q = s.lift(Square::D1);
    let n = s.lift(Square::G8);
    s.wait(700);
    s.put(Square::G8, n);
    s.wait(200);
    s.put(Square::D1, q);
    s.wait(5000);
    assert_eq!(s.count(|e| matches!(e, Event::MoveProvisional(_) | Event::MoveConfirmed(_))), 0);
    s.play_uci(&p, "b8c6");
    s.press(4, 2);
    assert_eq!(s.confirmed_ucis(), ["e2e4", "e7e5", "g1f3", "b8c6"]);
}

#[test]
fn matches_nothing_for_a_long_time_then_recovers() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["d2d4", "d7d5"]);
    // A captured-looking mess: Black's queen off the board and a white pawn on d3 too.
    let q = s.lift(Square::D8);
    s.put(Square::C3, piece(W, Role::Pawn));
    // Meanwhile White plays and presses, the mess stays for 20 s.
    s.slide(Square::G1, Square::F3);
    s.press(5, 2);
    s.wait(20_000);
    assert_eq!(all_confirmed(&s).len(), 2);
    assert_eq!(count_mismatches(&s), 1, "reported once");
    // Cleaned up: the board shows Nf3.
    s.lift(Square::C3);
    s.put(Square::D8, q);
    s.wait(6000);
    assert!(s.events.contains(&Event::PositionRecovered));
    s.play_uci(&line(&["d2d4", "d7d5", "g1f3"]), "c8f5");
    s.press(3, 2);
    s.wait(500);
    check_stream(&s, &["d2d4", "d7d5", "g1f3", "c8f5"]);
}

// ----- results ----------------------------------------------------------------------------------

#[test]
fn kings_in_centre_with_a_king_already_on_a_centre_square() {
    // White's king stands on e4 (a real position); Black's king is next to the centre on c6.
    let (mut s, _) = from_fen("8/8/2k5/8/4K3/8/8/8 b - - 0 1", Config::default(), Some(300));
    // Black resigns the DGT way: kings on e4 and d5 (1-0). Black first steps Kc6-d6 (a
    // legal move), rests the king there a moment, then on to d5 next to the white king.
    s.slide(Square::C6, Square::D6);
    s.wait(300);
    s.slide(Square::D6, Square::D5);
    s.wait(2000);
    assert_eq!(s.tracker.result(), Some((GameResult::WhiteWins, EndReason::KingsInCentre)));
    check_stream(&s, &[]);
}

#[test]
fn kings_in_centre_king_step_next_to_the_centre_is_pressed_then_gesture() {
    // A real king move next to the centre, pressed; then the kings-in-centre draw.
    let (mut s, _) = from_fen("8/8/2k5/8/8/4K3/8/8 w - - 0 1", Config::default(), Some(300));
    s.slide(Square::E3, Square::F3);
    s.press(3, 2);
    s.wait(300);
    s.slide(Square::F3, Square::E4);
    s.slide(Square::C6, Square::E5);
    s.wait(2000);
    assert_eq!(s.tracker.result(), Some((GameResult::Draw, EndReason::KingsInCentre)));
    check_stream(&s, &["e3f3"]);
}

/// The last move, Qc4-c2, is pressed right after the queen lands (it could still slide on to
/// c1, so the press waits for the board), the clock is stopped 40 ms later and the kings
/// are lifted and put in the centre (0-1) before the board was ever still for a scan period.
/// The queen stayed on c2 all along: the pressed move stands, and the gesture is no move.
#[test]
fn the_last_pressed_move_stands_when_the_kings_go_to_the_centre_at_once() {
    let (mut s, _) = from_fen("8/1Q3ppk/8/7P/2q5/1p4P1/5P1K/8 b - - 0 42", Config::default(), Some(300));
    s.wait(1000);
    s.step_ms = 30;
    s.slide(Square::C4, Square::C2);
    s.press(2, 0);
    s.now += 40;
    if let Some(c) = &mut s.clock {
        c.running = None;
    }
    s.send_clock();
    s.now += 150;
    let white_king = s.lift(Square::H2);
    let black_king = s.lift(Square::H7);
    s.put(Square::E5, black_king);
    s.put(Square::D4, white_king);
    s.wait(3000);
    assert_eq!(s.tracker.result(), Some((GameResult::BlackWins, EndReason::KingsInCentre)));
    check_stream(&s, &["c4c2"]);
}

/// No clock. Two plies shown only half a second before the kings go to the centre (the
/// board's reports of them were held up, or the mating move was made just before the
/// gesture): both pieces stay where they landed through the signal, so both moves stand.
#[test]
fn plies_still_on_the_board_through_the_kings_signal_stand_without_a_clock() {
    let (mut s, _) =
        from_fen("4r1k1/2p3pp/p4n2/1p6/3P4/N4RP1/1KP1r3/6R1 w - - 1 41", Config::default(), None);
    s.wait(1000);
    s.slide(Square::F3, Square::C3);
    s.wait(100);
    s.slide(Square::B5, Square::B4);
    s.wait(400);
    let white_king = s.lift(Square::B2);
    let black_king = s.lift(Square::G8);
    s.put(Square::D4, white_king);
    s.put(Square::E5, black_king);
    s.wait(3000);
    assert_eq!(s.tracker.result(), Some((GameResult::BlackWins, EndReason::KingsInCentre)));
    check_stream(&s, &["f3c3", "b5b4"]);
}

/// No clock. Black checks with the rook, White answers with a king move off the centre, and
/// about 0.9 s later (quicker than the chain time) the players agree a draw: the black king
/// is lifted, the white king is carried from f5 to d4 and the rook makes room on e4 for the
/// black king. The king rested on f5 far longer than a hand carrying it to the centre would:
/// both moves stand.
#[test]
fn a_king_move_that_rested_before_the_kings_signal_stands_without_a_clock() {
    let s = check_then_king_step_then_draw_signal(900, 900);
    check_stream(&s, &["e5e4", "g4f5"]);
}

/// The same signal, but the king only passed over f5 on its way to the centre: that is no
/// move, and neither is the check before it, shown too shortly before the signal.
#[test]
fn a_king_set_down_briefly_on_its_way_to_the_centre_is_no_move() {
    let s = check_then_king_step_then_draw_signal(300, 200);
    check_stream(&s, &[]);
}

/// No clock: ...Re4+, `before_step` ms, Kf5, `before_signal` ms, then the draw signal
/// (the black king lifted, the white king carried from f5 to d4, the rook lifted from e4
/// for the black king); the game must end drawn by it.
fn check_then_king_step_then_draw_signal(before_step: u64, before_signal: u64) -> Sim {
    let (mut s, _) = from_fen("R7/6p1/5p1k/4r2P/6KP/p7/P7/8 b - - 12 55", Config::default(), None);
    s.wait(1000);
    s.slide(Square::E5, Square::E4);
    s.wait(before_step);
    s.slide(Square::G4, Square::F5);
    s.wait(before_signal);
    let black_king = s.lift(Square::H6);
    let white_king = s.lift(Square::F5);
    s.lift(Square::E4);
    s.put(Square::D4, white_king);
    s.put(Square::E4, black_king);
    s.wait(3000);
    assert_eq!(s.tracker.result(), Some((GameResult::Draw, EndReason::KingsInCentre)));
    s
}

// ----- rotation and clock sides ------------------------------------------------------------------

#[test]
fn rotated_board_with_the_clock_on_the_other_side() {
    // The board is turned round but the clock stays with White's display on the left.
    let mut s = clocked(Orientation::Rotated, ClockSide::Left);
    let moves = ["d2d4", "g8f6", "c2c4", "e7e6", "b1c3", "f8b4"];
    play_pressed(&mut s, &Chess::default(), &moves);
    check_stream(&s, &moves);
    let c = clks(&s);
    assert_eq!(c[0].0, Some(299));
    assert_eq!(c[1].0, Some(299));
    assert_eq!(c[4].0, Some(297), "White's third press: 300 - 3 x 3 + 2 x 3");
    assert_eq!(s.tracker.clocks().running, Some(W));
}

#[test]
fn normal_board_with_whites_clock_on_the_right() {
    let mut s = clocked(Orientation::Normal, ClockSide::Right);
    let moves = ["e2e4", "c7c5", "g1f3"];
    play_pressed(&mut s, &Chess::default(), &moves);
    check_stream(&s, &moves);
    assert_eq!(clks(&s)[2].0, Some(298));
    assert_eq!(s.tracker.clocks().running, Some(B));
}

// ----- multi-period time control ------------------------------------------------------------------

fn reading(white: u32, black: u32, white_flag: bool, running: Option<Color>) -> ClockTimes {
    // White on the left display; the lever's high side is the side that runs.
    let side = |secs: u32, flag: bool| SideReading {
        time: ClockTime::from_seconds(secs),
        flags: SideFlags { final_flag: false, time_per_move: false, flag },
    };
    let mut status = 0u8;
    if running.is_some() {
        status |= 0x01;
    }
    if running == Some(B) {
        status |= 0x02;
    }
    ClockTimes { left: side(white, white_flag), right: side(black, false), status: ClockStatus(status) }
}

fn feed(s: &mut Sim, r: ClockTimes) {
    s.now += 10;
    let now = s.now;
    let events = &mut s.events;
    s.tracker.feed_clock(&r, now, &mut |e| events.push(e));
}

#[test]
fn clk_and_emt_after_a_flag_fall_moving_on_to_the_next_period() {
    // 40/7200:3600 on a clock without a move counter: the second period's hour is added
    // when the first period's time runs out, with the flag shown. White has made 40 moves.
    let tc = TimeControl::with_periods(&[
        Period { moves: 40, seconds: 7200, increment: 0, ..Period::default() },
        Period { moves: 0, seconds: 3600, increment: 0, ..Period::default() },
    ]);
    let cfg = Config { time_control: tc, ..Config::default() };
    let fen = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 41";
    let (mut s, pos) = from_fen(fen, cfg, None);
    // The clock: White 0:00:20 left and running, Black 0:10:00.
    feed(&mut s, reading(20, 600, false, None));
    feed(&mut s, reading(20, 600, false, Some(W)));
    s.wait(200);
    // White's time runs out: the flag shows at 0:00:00, then the hour is added.
    feed(&mut s, reading(0, 600, true, Some(W)));
    feed(&mut s, reading(3600, 600, true, Some(W)));
    feed(&mut s, reading(3590, 600, true, Some(W)));
    assert_eq!(s.tracker.state(), GameState::Active, "not a loss: White made 40 moves");
    // 41. Ra8+ and the press.
    s.play_uci(&pos, "a1a8");
    s.wait(200);
    feed(&mut s, reading(3580, 600, true, Some(W)));
    feed(&mut s, reading(3580, 600, true, Some(B)));
    s.wait(500);
    check_stream(&s, &["a1a8"]);
    assert_eq!(clks(&s), [(Some(3580), Some(40))], "%clk is the new period's time; %emt what was used");
}

#[test]
fn flag_fall_before_the_moves_of_the_period_is_a_loss() {
    // The same control, but White has made only 30 moves when the hour is added.
    let tc = TimeControl::with_periods(&[
        Period { moves: 40, seconds: 7200, increment: 0, ..Period::default() },
        Period { moves: 0, seconds: 3600, increment: 0, ..Period::default() },
    ]);
    let cfg = Config { time_control: tc, ..Config::default() };
    let (mut s, _) = from_fen("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 31", cfg, None);
    feed(&mut s, reading(20, 600, false, None));
    feed(&mut s, reading(20, 600, false, Some(W)));
    feed(&mut s, reading(0, 600, true, Some(W)));
    assert_eq!(s.tracker.result(), Some((GameResult::BlackWins, EndReason::FlagFall)));
}

#[test]
fn takeback_of_two_plies_in_forward_order_without_presses() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["d2d4", "d7d5", "g1f3", "g8f6"]);
    // The players agree to take back Nf3 and Nf6: White's knight goes home first (which is
    // a legal Ng1 in itself), then Black's. Nobody touches the clock.
    s.wait(500);
    s.slide(Square::F3, Square::G1);
    s.wait(400);
    s.slide(Square::F6, Square::G8);
    s.wait(6000);
    check_stream(&s, &["d2d4", "d7d5"]);
    assert_eq!(all_confirmed(&s).len(), 4, "no Ng1/Ng8 ghost: {:?}", all_confirmed(&s));
    // Play goes on from there.
    if let Some(c) = &mut s.clock {
        c.running = Some(W);
        c.high = W;
    }
    s.send_clock();
    s.wait(300);
    s.play_uci(&line(&["d2d4", "d7d5"]), "c2c4");
    s.press(4, 2);
    check_stream(&s, &["d2d4", "d7d5", "c2c4"]);
}

/// The game 1. e4 e5 2. Be2 Be7 3. Bc4 Bc5 4. Be2 Be7: the last two plies bring back the
/// position after 2...Be7, and both players pressed for them, but the presses could not
/// confirm them (each came right after a bishop landed where it could still slide on, and
/// waited for a still board longer than this configuration keeps a press). The clock says
/// the game went on: a repetition, not a takeback of 3. Bc4 Bc5.
#[test]
fn a_repetition_both_players_pressed_for_is_not_a_takeback() {
    let cfg = Config { timing: Timing { press_window_ms: 100, ..Timing::default() }, ..Config::default() };
    let mut s = Sim::started(cfg, Orientation::Normal).with_clock(300, ClockSide::Left);
    s.start_clock();
    let mut pos = Chess::default();
    for u in ["e2e4", "e7e5", "f1e2", "f8e7", "e2c4", "e7c5"] {
        pos = s.play_uci(&pos, u);
        s.wait(700);
        s.press(2, 0);
        s.wait(100);
    }
    assert_eq!(s.confirmed_events().len(), 6, "{:?}", s.move_log());
    for u in ["c4e2", "c5e7"] {
        pos = s.play_uci(&pos, u);
        s.wait(100);
        s.press(1, 0);
        s.wait(300);
    }
    s.wait(6000);
    assert_eq!(s.count(|e| matches!(e, Event::Takeback { .. })), 0, "{:?}", s.move_log());
    check_stream(&s, &["e2e4", "e7e5", "f1e2", "f8e7", "e2c4", "e7c5", "c4e2", "c5e7"]);
}

#[test]
fn a_real_repetition_with_presses_is_kept() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let moves = ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6"];
    play_pressed(&mut s, &Chess::default(), &moves);
    s.wait(6000);
    check_stream(&s, &moves);
}

// ----- a move under way ---------------------------------------------------------------------

#[test]
fn a_queen_paused_mid_slide_where_it_cannot_stop_keeps_the_line() {
    // No clock. Black's Qa3-c5 gives check along c5-g1. White answers Qh6-e3, sliding the
    // queen down the diagonal and resting on g5 and f4, where it cannot stop (the king
    // stays in check), long enough for the board to settle; Qc5 is still provisional (the
    // quiet time has not passed). Nothing may be taken back for a longer line from before
    // Qc5 (Qb4, Qg5, Qc5 explains the board with the queen on g5).
    let (mut s, pos) = from_fen("6k1/5ppp/7Q/8/8/q7/6PP/6K1 b - - 0 1", Config::default(), None);
    s.play_uci(&pos, "a3c5");
    s.wait(500);
    let queen = s.lift(Square::H6);
    s.put(Square::G5, queen);
    s.wait(450);
    s.lift(Square::G5);
    s.put(Square::F4, queen);
    s.wait(450);
    s.lift(Square::F4);
    s.put(Square::E3, queen);
    s.wait(3_000);
    assert_eq!(all_confirmed(&s), ["a3c5", "h6e3"]);
    check_stream(&s, &["a3c5", "h6e3"]);
    let retracted = s.count(|e| matches!(e, Event::MoveRetracted { ply: 1, .. }));
    assert_eq!(retracted, 0, "Qc5 was never given up: {:?}", s.events);
}

#[test]
fn a_capture_with_the_victim_off_first_and_the_rook_passing_keeps_the_line() {
    // No clock. Black plays Kh7-h6. White takes the e4 pawn with the rook from e2: the pawn
    // comes off first, then the rook rests on e3 on its way. A dump then shows the pawn
    // gone and the rook on e3, which Black's e4-e3 and Rxe3 from before Kh6 would explain;
    // Kh6 stood on the board and must stay.
    let fen = "8/6pk/p4p2/7P/P3p1K1/5rP1/4RP2/8 b - - 1 58";
    let (mut s, pos) = from_fen(fen, Config::default(), None);
    s.play_uci(&pos, "h7h6");
    s.wait(1_300);
    s.lift(Square::E4);
    s.wait(400);
    let rook = s.lift(Square::E2);
    s.wait(235);
    s.board.set_piece_at(Square::E3, shakmaty::Piece { color: W, role: Role::Rook });
    s.dump();
    s.wait(250);
    s.lift(Square::E3);
    s.put(Square::E4, rook);
    s.wait(3_000);
    assert_eq!(all_confirmed(&s), ["h7h6", "e2e4"]);
    check_stream(&s, &["h7h6", "e2e4"]);
    assert_eq!(s.count(|e| matches!(e, Event::MoveRetracted { ply: 1, .. })), 0, "{:?}", s.move_log());
}

// ----- several plies in one scan, without a clock -------------------------------------------

#[test]
fn two_plies_in_one_scan_repeating_a_position_are_not_a_takeback() {
    // No clock. 53. Be6 Kb4 54. Bd7 Kc5: the last two plies are read in one scan, and the
    // scan's first half (the king off b4 and back on c5) shows the position before Kb4.
    // That half reading must not give up Kb4: the whole scan is two plies that repeat the
    // position after 52...Kc5, not a takeback of Be6.
    let (mut s, pos) = from_fen("8/3B4/5p2/p1k5/P1P2P2/3K2n1/8/8 w - - 4 53", Config::default(), None);
    let pos = s.play_uci(&pos, "d7e6");
    s.wait(2_500);
    s.play_uci(&pos, "c5b4");
    s.wait(1_000);
    s.step_ms = 0;
    s.now += 40;
    let king = s.lift(Square::B4);
    s.put(Square::C5, king);
    let bishop = s.lift(Square::E6);
    s.put(Square::D7, bishop);
    s.step_ms = 40;
    s.wait(3_000);
    assert_eq!(s.count(|e| matches!(e, Event::Takeback { .. })), 0, "{:?}", s.events);
    check_stream(&s, &["d7e6", "c5b4", "e6d7", "b4c5"]);
}

#[test]
fn two_plies_in_one_scan_after_plies_that_stood_keep_them() {
    // No clock, so plies stay provisional for the quiet time. 64...Re2 stands 1.6 s, 65.
    // Kf3 stands almost 1 s, then 65...Re3 66. Kf2 are read in one scan. 64...Re3 65. Kf2 from
    // before Re2 reaches the same board in fewer plies, but Re2 and Kf3 stood on the board:
    // they were played.
    let (mut s, pos) = from_fen("8/4Pkp1/p2P3p/P1RPr1b1/6P1/6P1/6K1/8 b - - 2 64", Config::default(), None);
    let pos = s.play_uci(&pos, "e5e2");
    s.wait(1_600);
    s.play_uci(&pos, "g2f3");
    // Not a second yet: Kf3 does not prove Re2 (a forgotten press) before the scan comes.
    s.wait(950);
    // The scan reports the squares in the rotated board's order: e3, f3, e2, f2.
    s.step_ms = 0;
    s.now += 40;
    let rook = s.board.piece_at(Square::E2);
    s.put(Square::E3, rook);
    let king = s.lift(Square::F3);
    s.lift(Square::E2);
    s.put(Square::F2, king);
    s.step_ms = 40;
    s.wait(3_000);
    assert_eq!(all_confirmed(&s), ["e5e2", "g2f3", "e2e3", "f3f2"]);
    check_stream(&s, &["e5e2", "g2f3", "e2e3", "f3f2"]);
}

/// A game from `fen` with a running clock where three plies are made and pressed before
/// one scan reports them: the caller sends the scan's updates, which all arrive at once.
fn three_plies_pressed(fen: &str) -> Sim {
    let (mut s, _) = from_fen(fen, Config::default(), Some(300));
    s.wait(1_000);
    s.press(2, 2);
    s.press(1, 2);
    s.press(1, 2);
    s.step_ms = 0;
    s.now += 30;
    s
}

#[test]
fn a_three_ply_burst_read_queen_first_is_not_a_move_under_way() {
    // 14...c4 15. dxc4 Qg6, all three pressed before one scan reports them. The scan
    // reports the squares in index order, so the queen's ply (d6, g6) comes first and reads
    // as a one-ply move; the rest (c5 off, c4 a white pawn, d3 off) looks like White's
    // pawn on its way with a black pawn lifted, but a pawn does not slide and c5 is not on
    // its way: the search from before Qg6 must still find the three plies.
    let mut s = three_plies_pressed("r1b2rk1/p1p2ppn/3q3p/1pp1p3/4P1PP/P2PB3/BPP2P2/R2QK2R b KQ - 1 14");
    s.lift(Square::D6);
    s.put(Square::G6, piece(B, Role::Queen));
    s.lift(Square::C5);
    s.put(Square::C4, piece(W, Role::Pawn));
    s.lift(Square::D3);
    s.step_ms = 40;
    s.wait(3_000);
    check_stream(&s, &["c5c4", "d3c4", "d6g6"]);
    assert_eq!(count_mismatches(&s), 0);
}

#[test]
fn a_press_before_the_report_of_the_slide_going_on_is_not_bound_to_the_rest() {
    // White slides the queen d8-c8-b8; the board's report of the landing on b8 is lost, and
    // White presses before the report of the queen leaving c8 arrives, so at the press the
    // board still shows Qc8 as the tip. Black then lifts the d7 bishop, puts it on b5,
    // takes it back and plays h5 instead. The press was for Qb8 (a dump shows it), never
    // for Qc8, and Bb5 was never a move.
    let (mut s, _) =
        from_fen("3Q4/p2b1rk1/1p4pp/8/6P1/7P/PP3P2/6K1 w - - 0 30", Config::default(), Some(3_000));
    s.wait(2_000);
    let queen = s.lift(Square::D8);
    s.put(Square::C8, queen);
    s.wait(350);
    // The queen goes on to b8: c8 is not reported yet, b8 never is.
    s.board.discard_piece_at(Square::C8);
    s.board.set_piece_at(Square::B8, shakmaty::Piece { color: W, role: Role::Queen });
    s.wait(150);
    s.press(5, 2);
    s.put(Square::C8, None);
    s.wait(400);
    let bishop = s.lift(Square::D7);
    s.wait(350);
    s.put(Square::B5, bishop);
    s.wait(1_300);
    s.lift(Square::B5);
    s.put(Square::D7, bishop);
    s.wait(1_500);
    let pawn = s.lift(Square::H6);
    s.put(Square::H5, pawn);
    s.wait(300);
    s.press(4, 2);
    s.wait(1_000);
    assert_eq!(all_confirmed(&s), ["d8b8", "h6h5"], "{:?}", s.events);
    check_stream(&s, &["d8b8", "h6h5"]);
}

#[test]
fn a_capture_and_recapture_read_after_the_reply_are_found_once_the_hands_are_done() {
    // 43...bxa4 44. bxa4 Kg7, all pressed before one scan reports them. The scan reports
    // the king first (a one-ply move on its own), then b5 and b3 empty: the board is that
    // tip less two pawns, which a hand holding pieces would also show, so at first only
    // plies from the tip may explain it. Once it has stood longer than a hand holds
    // pieces, with the presses saying the moves are done, the line from before Kg7 is found.
    let mut s = three_plies_pressed("3r4/1R3P2/2p3k1/1p1p2pp/P3n3/1P1B3P/2P5/6K1 b - - 0 43");
    s.put(Square::G7, piece(B, Role::King));
    s.lift(Square::G6);
    s.lift(Square::B5);
    s.lift(Square::B3);
    s.step_ms = 40;
    s.wait(3_000);
    check_stream(&s, &["b5a4", "b3a4", "g6g7"]);
}

#[test]
fn a_repetition_read_through_a_dump_is_not_a_takeback_of_plies_that_stood() {
    // No clock. 33. Kb2 Qe5 34. Kb1 Qd6 35. Kb2 Qe5, each ply standing about a second. The
    // report of the king leaving b1 the second time is lost, so only a dump shows the
    // board: the position after 33...Qe5, which a takeback of the two plies that stood
    // would also show. They stood: it is the repetition.
    let fen = "5r1k/2p1r1pp/p2q1n2/1p6/5R2/N2P2Q1/2P4P/1K4R1 w - - 4 33";
    let (mut s, mut pos) = from_fen(fen, Config::default(), None);
    for u in ["b1b2", "d6e5", "b2b1", "e5d6"] {
        pos = s.play_uci(&pos, u);
        s.wait(900);
    }
    // Kb2 with the lift of b1 not reported, then Qe5.
    s.board.discard_piece_at(Square::B1);
    s.put(Square::B2, piece(W, Role::King));
    s.wait(400);
    let queen = s.lift(Square::D6);
    s.put(Square::E5, queen);
    s.wait(4_000);
    assert_eq!(s.count(|e| matches!(e, Event::MoveRetracted { .. })), 0, "{:?}", s.events);
    check_stream(&s, &["b1b2", "d6e5", "b2b1", "e5d6", "b1b2", "d6e5"]);
}

#[test]
fn a_capture_held_in_the_hand_is_not_an_exchange_elsewhere() {
    // 17. Be4 Qxd1 18. Rxd1: White takes the queen off d1, lifts the f1 rook and holds both
    // for half a second before putting the rook down. The board meanwhile is the tip less
    // two pieces, which Re1 Qxa1 Rxa1 would also leave; nothing of that may be published,
    // not even provisionally.
    let fen = "r1br2k1/pp3pp1/2n4p/8/3q4/2NB4/PP3PPP/R2Q1RK1 w - - 2 17";
    let (mut s, pos) = from_fen(fen, Config::default(), Some(600));
    s.wait(1_000);
    let pos = play_pressed(&mut s, &pos, &["d3e4", "d4d1"]);
    let _ = pos;
    s.lift(Square::D1);
    let rook = s.lift(Square::F1);
    s.wait(500);
    s.put(Square::D1, rook);
    s.wait(200);
    s.press(4, 2);
    s.wait(1_000);
    assert_eq!(s.provisional_events(), ["d3e4", "d4d1", "f1d1"]);
    check_stream(&s, &["d3e4", "d4d1", "f1d1"]);
}

#[test]
fn castling_rook_first_pressed_before_the_king_is_reported_is_castling() {
    // White castles rook first: h1 off, rook on f1, king off e1 (that report is lost) and
    // on g1, then the press, which reaches the host before the scan reporting g1. At the
    // press the board shows Rh1-f1, a legal move, but it is the first half of castling
    // while castling is legal: it must not be confirmed on the press.
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "f8c5"]);
    let rook = s.lift(Square::H1);
    s.put(Square::F1, rook);
    s.wait(300);
    s.board.discard_piece_at(Square::E1);
    s.board.set_piece_at(Square::G1, shakmaty::Piece { color: W, role: Role::King });
    s.press(3, 2);
    s.put(Square::G1, piece(W, Role::King));
    s.wait(2_000);
    let all = all_confirmed(&s);
    assert!(!all.contains(&"h1f1".to_string()), "{all:?}");
    check_stream(&s, &["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "f8c5", "e1g1"]);
}

#[test]
fn a_transposition_read_through_a_dump_keeps_the_order_the_board_reported() {
    // No clock. After 1. e4 e5, White's first move has its lift report lost (the board
    // shows the piece on both squares), so no position on the way is matched; Black's
    // Nc6 and White's second move are reported as usual, and a dump, asked for all along
    // but answered only then, settles the board.
    // Nf3 Nc6 d3 and d3 Nc6 Nf3 leave the same board: the order the squares filled in
    // tells which was played. Both orders.
    for (first, second) in [(("g1", "f3"), ("d2", "d3")), (("d2", "d3"), ("g1", "f3"))] {
        let mut s = Sim::started(Config::default(), Orientation::Normal);
        let mut pos = Chess::default();
        for u in ["e2e4", "e7e5"] {
            pos = s.play_uci(&pos, u);
            s.wait(2_500);
        }
        let sq = |name: &str| Square::from_ascii(name.as_bytes()).expect("square");
        s.dumps_answered = usize::MAX;
        let moved = s.board.piece_at(sq(first.0));
        s.board.discard_piece_at(sq(first.0));
        s.put(sq(first.1), moved);
        s.wait(500);
        let knight = s.lift(Square::B8);
        s.put(Square::C6, knight);
        s.wait(500);
        let piece = s.lift(sq(second.0));
        s.put(sq(second.1), piece);
        s.wait(400);
        s.dumps_answered = 0;
        s.wait(3_000);
        let ply = |m: (&str, &str)| format!("{}{}", m.0, m.1);
        check_stream(&s, &["e2e4", "e7e5", &ply(first), "b8c6", &ply(second)]);
    }
}

#[test]
fn a_press_made_while_adjusting_the_piece_is_that_moves_not_the_next() {
    // White plays Nf3, lifts the knight to adjust it and presses with it in the hand; Black
    // replies at once and presses before the board reports Nc6, and White starts Bc4
    // straight away, so the board does not settle until Bc4 lands, most of a second after
    // White's first press. That press is Nf3's (the board showed Nf3 before it), not
    // Bc4's, and every ply keeps its own press's time.
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let pos = play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5"]);
    let pos = s.play_uci(&pos, "g1f3");
    s.wait(300);
    let knight = s.lift(Square::F3);
    s.wait(100);
    s.press(3, 2);
    let white = |s: &Sim| s.clock.as_ref().map(|c| c.white);
    let black = |s: &Sim| s.clock.as_ref().map(|c| c.black);
    let nf3 = white(&s);
    s.put(Square::F3, knight);
    let black_knight = s.lift(Square::B8);
    s.press(1, 2);
    let nc6 = black(&s);
    s.put(Square::C6, black_knight);
    let bishop = s.lift(Square::F1);
    s.now += 600;
    s.put(Square::C4, bishop);
    s.wait(300);
    s.press(2, 2);
    let bc4 = white(&s);
    s.wait(1_000);
    let _ = pos;
    check_stream(&s, &["e2e4", "e7e5", "g1f3", "b8c6", "f1c4"]);
    assert_eq!(&clks(&s)[2..].iter().map(|c| c.0).collect::<Vec<_>>(), &[nf3, nc6, bc4]);
}

#[test]
fn a_board_run_a_ply_past_the_search_is_found_once_it_stands() {
    // 62. Kxg5 Ra4 63. Rxa4, all pressed before one scan reports them, and Black lifts the
    // king for 63...Kxa4 200 ms later, before the tracker has settled on the three plies.
    // When Kxa4 lands the board is four plies past the line, one more than the search
    // goes: once it has stood unexplained for the mismatch time it is searched deeper,
    // rather than leaving the rest of the game unrecorded.
    let mut s = three_plies_pressed("R7/8/5P2/6p1/3r2K1/1k4P1/p7/8 w - - 0 62");
    s.lift(Square::A8);
    s.put(Square::G5, piece(W, Role::King));
    s.put(Square::A4, piece(W, Role::Rook));
    s.lift(Square::D4);
    s.lift(Square::G4);
    s.step_ms = 40;
    s.now += 160;
    let king = s.lift(Square::B3);
    s.wait(400);
    s.lift(Square::A4);
    s.wait(200);
    s.put(Square::A4, king);
    s.wait(200);
    s.press(1, 2);
    s.wait(4_000);
    check_stream(&s, &["g4g5", "d4a4", "a8a4", "b3a4"]);
}

#[test]
fn kings_in_the_centre_before_the_flag_falls_are_the_result() {
    // White's king steps next to the centre and Black replies; then the kings go to e4 and
    // d5 (1-0) with White's clock still running, and White's flag falls a second later,
    // before the signal has stood for the quiet time. The result signalled first stands.
    let (mut s, pos) = from_fen("8/8/2k5/8/8/4K3/8/8 w - - 0 1", Config::default(), Some(300));
    let pos = s.play_uci(&pos, "e3f3");
    s.wait(300);
    s.press(3, 2);
    s.wait(300);
    s.play_uci(&pos, "c6c5");
    s.wait(300);
    s.press(3, 2);
    s.wait(500);
    s.slide(Square::F3, Square::E4);
    s.slide(Square::C5, Square::D5);
    s.wait(1_000);
    s.flag_falls(Color::White);
    s.wait(2_000);
    s.send_clock();
    assert_eq!(s.tracker.result(), Some((GameResult::WhiteWins, EndReason::KingsInCentre)));
    check_stream(&s, &["e3f3", "c6c5"]);
}
