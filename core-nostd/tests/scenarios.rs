//! A table of named scenarios: each is what a player's hands do on the board and clock,
//! and what the tracker must make of it.

mod common;

use common::{Sim, clocked, parse_uci, piece, play_pressed};
use dgt_core::{Config, EndReason, Event, GameResult, GameState, PgnHeader, StartKind, Tracker, View};
use dgt_protocol::{ClockSide, Orientation, PieceCode};
use shakmaty::{Bitboard, Board, Chess, Color, Piece, Position, Role, Square, fen::Fen};

const W: Color = Color::White;
const B: Color = Color::Black;

/// A game from an operator FEN, board already showing it.
fn from_fen(fen: &str, clock: bool) -> (Sim, Chess) {
    common::from_fen(fen, Config::default(), clock.then_some(300))
}

fn confirmed(s: &Sim) -> Vec<String> {
    s.confirmed_ucis()
}

fn no_mismatch(s: &Sim) {
    assert_eq!(s.count(|e| matches!(e, Event::PositionMismatch { .. })), 0, "no mismatch expected");
}

// ----- the scenarios --------------------------------------------------------------------

fn e4_slid_through_e3() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let p = s.lift(Square::E2);
    s.put(Square::E3, p);
    s.lift(Square::E3);
    s.put(Square::E4, p);
    s.wait(100);
    s.press(2, 2);
    assert_eq!(confirmed(&s), ["e2e4"]);
    assert_eq!(s.confirmed_events(), ["e2e4"], "e3 never confirmed");
    no_mismatch(&s);
}

fn nxe5_victim_first() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let pos = play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "g1f3", "b8c6"]);
    s.lift(Square::E5);
    s.lift(Square::F3);
    s.put(Square::E5, piece(W, Role::Knight));
    s.wait(400);
    s.press(3, 2);
    assert_eq!(confirmed(&s).last().map(String::as_str), Some("f3e5"));
    assert_eq!(confirmed(&s).len(), 5);
    let _ = pos;
    no_mismatch(&s);
}

fn nxe5_knight_first() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "g1f3", "b8c6"]);
    // The knight is picked up first, then the pawn, then the knight is put down.
    s.lift(Square::F3);
    s.lift(Square::E5);
    s.put(Square::E5, piece(W, Role::Knight));
    s.press(3, 2);
    assert_eq!(confirmed(&s).last().map(String::as_str), Some("f3e5"));
    no_mismatch(&s);
}

fn nxe5_direct_replacement() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "g1f3", "b8c6"]);
    // The scan sees the knight where the pawn was: one update with the new code.
    s.lift(Square::F3);
    s.put(Square::E5, piece(W, Role::Knight));
    s.press(3, 2);
    assert_eq!(confirmed(&s).last().map(String::as_str), Some("f3e5"));
    no_mismatch(&s);
}

fn castles_king_first() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let pos = play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"]);
    s.slide(Square::E1, Square::G1);
    s.slide(Square::H1, Square::F1);
    s.wait(100);
    s.press(3, 2);
    assert_eq!(confirmed(&s).last().map(String::as_str), Some("e1g1"));
    let mut san = String::new();
    s.tracker.for_each_move(View::Confirmed, |m| san = m.san.to_string());
    assert_eq!(san, "O-O");
    let _ = pos;
    no_mismatch(&s);
}

fn castles_rook_first() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"]);
    s.slide(Square::H1, Square::F1);
    s.slide(Square::E1, Square::G1);
    s.wait(100);
    s.press(3, 2);
    assert_eq!(confirmed(&s).last().map(String::as_str), Some("e1g1"));
    assert_eq!(s.confirmed_events().len(), 7, "Rf1 was never confirmed");
    no_mismatch(&s);
}

fn castles_both_at_once() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"]);
    // King and rook lifted together, put down together (reported in scan order).
    s.lift(Square::H1);
    s.lift(Square::E1);
    s.put(Square::F1, piece(W, Role::Rook));
    s.put(Square::G1, piece(W, Role::King));
    s.press(3, 2);
    assert_eq!(confirmed(&s).last().map(String::as_str), Some("e1g1"));
}

fn exd6_en_passant() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "a7a6", "e4e5", "d7d5"]);
    // Victim first, then the pawn.
    s.lift(Square::D5);
    s.slide(Square::E5, Square::D6);
    s.wait(100);
    s.press(3, 2);
    assert_eq!(confirmed(&s).last().map(String::as_str), Some("e5d6"));
    no_mismatch(&s);
}

fn e8_knight_placed_as_pawn_then_swapped() {
    let (mut s, _) = from_fen("8/4P1k1/8/8/8/8/8/4K3 w - - 0 1", true);
    s.lift(Square::E7);
    s.put(Square::E8, piece(W, Role::Pawn));
    s.wait(300);
    // The player presses, then notices and swaps the pawn for a knight.
    s.press(2, 2);
    s.lift(Square::E8);
    s.put(Square::E8, piece(W, Role::Knight));
    s.wait(600);
    assert_eq!(confirmed(&s), ["e7e8n"]);
    let mut san = String::new();
    s.tracker.for_each_move(View::Confirmed, |m| san = m.san.to_string());
    assert_eq!(san, "e8=N+");
}

fn underpromotion_to_rook_with_capture() {
    let (mut s, _) = from_fen("3n2k1/4P3/8/8/8/8/8/4K3 w - - 0 1", true);
    s.lift(Square::D8);
    s.lift(Square::E7);
    s.put(Square::D8, piece(W, Role::Rook));
    s.press(2, 2);
    assert_eq!(confirmed(&s), ["e7d8r"]);
}

fn two_plies_inside_one_scan_window() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    // Both players move and press before the board reports anything; the updates then
    // arrive interleaved, so no single intermediate state is a one-ply successor.
    s.press(2, 2);
    s.press(2, 2);
    s.put(Square::E2, None);
    s.put(Square::E7, None);
    s.put(Square::E4, piece(W, Role::Pawn));
    s.put(Square::E5, piece(B, Role::Pawn));
    s.wait(600);
    assert_eq!(confirmed(&s), ["e2e4", "e7e5"]);
    let mut clks = Vec::new();
    s.tracker.for_each_move(View::Confirmed, |m| clks.push(m.clk));
    assert_eq!(clks, [Some(300), Some(300)], "each ply has its own press's %clk");
}

fn three_plies_and_presses_inside_one_scan_window() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "d7d5"]);
    // A burst: exd5 (pressed), Qxd5 (pressed), Nc3 (pressed), all before the board
    // reports anything. Two presses of White wait at once; each ply gets its own %clk.
    s.press(3, 2);
    s.press(5, 2);
    s.press(7, 2);
    s.put(Square::E4, None);
    s.put(Square::D5, piece(W, Role::Pawn));
    s.put(Square::D8, None);
    s.put(Square::D5, piece(B, Role::Queen));
    s.put(Square::B1, None);
    s.put(Square::C3, piece(W, Role::Knight));
    s.wait(2000);
    assert_eq!(confirmed(&s), ["e2e4", "d7d5", "e4d5", "d8d5", "b1c3"]);
    let mut clks = Vec::new();
    s.tracker.for_each_move(View::Confirmed, |m| clks.push(m.clk));
    // 300 each at the start; White e4 -3+2, exd5 -3+2, Nc3 -7+2; Black d5 -3+2, Qxd5 -5+2.
    assert_eq!(clks[2..], [Some(298), Some(296), Some(293)], "each press's own %clk");
}

fn capture_and_recapture_leaving_the_tip_less_two_pieces() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "d7d5", "f2f3"]);
    // dxe4 fxe4 inside one scan: e4 ends with a white pawn as before, so the board reads
    // as the tip less two pawns (d5, f3), as if they were in the hands. Two plies on from
    // the tip explain it; nothing else does.
    s.press(3, 2);
    s.press(3, 2);
    s.put(Square::D5, None);
    s.put(Square::F3, None);
    s.wait(1500);
    assert_eq!(confirmed(&s), ["e2e4", "d7d5", "f2f3", "d5e4", "f3e4"]);
}

fn a_piece_in_the_hand_is_not_read_as_a_longer_line() {
    // White's rook slides c4-c3-c2 and White presses; Black then lifts their rook from g2
    // to move it. The board (tip less Black's rook) must not be read as Rc3 Rxc2?? Rxc2:
    // Black's rook is in the hand.
    let (mut s, _) = from_fen("8/8/8/7k/2R5/8/6r1/4K3 w - - 0 1", true);
    s.lift(Square::C4);
    s.put(Square::C3, piece(W, Role::Rook));
    s.wait(150);
    s.lift(Square::C3);
    s.put(Square::C2, piece(W, Role::Rook));
    s.wait(100);
    s.press(2, 2);
    s.lift(Square::G2);
    s.wait(800);
    s.put(Square::G3, piece(B, Role::Rook));
    s.wait(150);
    s.lift(Square::G3);
    s.put(Square::G4, piece(B, Role::Rook));
    s.wait(300);
    s.press(2, 2);
    s.wait(600);
    assert_eq!(confirmed(&s), ["c4c2", "g2g4"]);
}

fn reversed_update_order_within_a_scan() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    // "Piece on new square" before "old square empty".
    s.put(Square::F3, piece(W, Role::Knight));
    s.put(Square::G1, None);
    s.press(2, 2);
    assert_eq!(confirmed(&s), ["g1f3"]);
}

fn three_plies_before_first_press() {
    let mut s = Sim::started(Config::default(), Orientation::Normal).with_clock(300, ClockSide::Left);
    s.start_clock();
    let mut p = Chess::default();
    for u in ["e2e4", "e7e5", "g1f3"] {
        p = s.play_uci(&p, u);
    }
    // White finally presses: e4 and (proved by what followed) e5 and Nf3 stand.
    s.press(5, 2);
    s.wait(350); // the press confirms once the board had a scan's worth of time to move on
    assert_eq!(confirmed(&s), ["e2e4", "e7e5", "g1f3"]);
}

fn takeback_of_three_plies() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6"]);
    assert_eq!(confirmed(&s).len(), 6);
    // The arbiter takes back a6, Bb5 and Nc6, piece by piece.
    s.slide(Square::A6, Square::A7);
    s.wait(500);
    s.slide(Square::B5, Square::F1);
    s.wait(500);
    s.slide(Square::C6, Square::B8);
    s.wait(500);
    assert_eq!(confirmed(&s), ["e2e4", "e7e5", "g1f3"]);
    let to: Vec<u16> = s
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Takeback { to_ply, .. } => Some(*to_ply),
            _ => None,
        })
        .collect();
    assert_eq!(to.last(), Some(&3));
    // Play continues from there.
    let pos = {
        let mut p = Chess::default();
        for u in ["e2e4", "e7e5", "g1f3"] {
            p.play_unchecked(parse_uci(&p, u));
        }
        p
    };
    // The arbiter puts Black's clock back on (a lever flip with nothing to confirm).
    if let Some(c) = &mut s.clock {
        c.running = Some(B);
        c.high = B;
    }
    s.send_clock();
    s.wait(500);
    s.play_uci(&pos, "d7d6");
    s.press(4, 2);
    s.wait(350); // the press confirms once the board had a scan's worth of time to move on
    assert_eq!(confirmed(&s), ["e2e4", "e7e5", "g1f3", "d7d6"]);
    no_mismatch(&s);
}

fn whole_game_on_a_rotated_board() {
    let mut s = clocked(Orientation::Rotated, ClockSide::Right);
    assert!(
        s.events.iter().any(|e| matches!(e, Event::GameStarted { orientation: Orientation::Rotated, .. }))
    );
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6", "h5f7"]);
    assert_eq!(confirmed(&s), ["e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6", "h5f7"]);
    assert_eq!(s.tracker.result(), Some((GameResult::WhiteWins, EndReason::Checkmate)));
    assert_eq!(s.tracker.orientation(), Orientation::Rotated);
    let mut clks = Vec::new();
    s.tracker.for_each_move(View::Confirmed, |m| clks.push(m.clk));
    assert_eq!(clks[0], Some(299), "White is the right display on this board");
}

fn knocked_over_king_put_back() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5"]);
    s.clear_events();
    let k = s.lift(Square::E8);
    s.wait(300);
    s.put(Square::E8, k);
    s.wait(2000);
    assert_eq!(
        s.count(|e| matches!(
            e,
            Event::MoveProvisional(_) | Event::MoveConfirmed(_) | Event::PositionMismatch { .. }
        )),
        0
    );
    assert_eq!(confirmed(&s).len(), 2);
}

fn piece_adjusted() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    s.clear_events();
    let p = s.lift(Square::D2);
    s.put(Square::D2, p);
    s.wait(2000);
    assert_eq!(s.count(|e| matches!(e, Event::MoveProvisional(_) | Event::MoveConfirmed(_))), 0);
}

fn position_matching_nothing_then_restored() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    s.clear_events();
    s.slide(Square::E2, Square::E5);
    s.wait(2500);
    let squares: Vec<Bitboard> = s
        .events
        .iter()
        .filter_map(|e| match e {
            Event::PositionMismatch { squares } => Some(*squares),
            _ => None,
        })
        .collect();
    assert_eq!(squares, [Bitboard::from(Square::E2) | Bitboard::from(Square::E5)]);
    assert!(s.events.contains(&Event::RequestBoardDump));
    assert_eq!(s.count(|e| matches!(e, Event::MoveProvisional(_) | Event::MoveConfirmed(_))), 0);
    s.slide(Square::E5, Square::E2);
    s.wait(100);
    assert_eq!(s.count(|e| *e == Event::PositionRecovered), 1);
    s.slide(Square::E2, Square::E4);
    s.press(2, 2);
    assert_eq!(confirmed(&s), ["e2e4"]);
}

fn kings_in_centre_with_no_king_move_recorded() {
    // White's king next to the centre: Ke3-e4 would be a legal move (lila#11783).
    let (mut s, _) = from_fen("8/8/2k5/8/8/4K3/8/8 w - - 0 1", true);
    s.slide(Square::E3, Square::E4);
    s.wait(300);
    s.slide(Square::C6, Square::D5);
    // The signal ends the game once it has stood for the quiet time.
    s.wait(1000);
    assert_eq!(s.tracker.result(), None);
    s.wait(1500);
    assert_eq!(s.tracker.result(), Some((GameResult::WhiteWins, EndReason::KingsInCentre)));
    assert!(confirmed(&s).is_empty(), "no king move recorded");
    assert_eq!(s.count(|e| matches!(e, Event::MoveConfirmed(_))), 0);
    let mut pgn = String::new();
    s.tracker.write_pgn(&PgnHeader::default(), &mut pgn).expect("pgn");
    assert!(pgn.contains("[Result \"1-0\"]") && pgn.trim_end().ends_with("1-0"), "{pgn}");
}

fn kings_in_centre_slowly_without_clock() {
    let setup = Fen::from_ascii(b"8/8/2k5/8/8/4K3/8/8 w - - 0 1").expect("fen").into_setup();
    let pos: Chess = setup.position(shakmaty::CastlingMode::Standard).expect("legal");
    let mut s = Sim::new(Config::default());
    s.board = pos.board().clone();
    s.dump();
    let events = &mut s.events;
    let _ = s.tracker.start_from_fen(b"8/8/2k5/8/8/4K3/8/8 w - - 0 1", None, 0, &mut |e| events.push(e));
    s.slide(Square::E3, Square::D4);
    s.wait(5000);
    s.slide(Square::C6, Square::E5);
    s.wait(2500);
    assert_eq!(s.tracker.result(), Some((GameResult::BlackWins, EndReason::KingsInCentre)));
    assert!(confirmed(&s).is_empty(), "Kd4 waited for the next move and was withdrawn");
}

fn last_king_move_to_the_centre_then_both_kings_picked_up_for_the_signal() {
    // No clock. White's last move Ke4 stands for 4 s; then both kings are lifted and put
    // on the centre (a draw: e4 and d4). Ke4 was picked up again, so it was not half of
    // the signal: it is a move.
    let fen = b"8/8/2k5/8/8/4K3/8/8 w - - 0 1";
    let setup = Fen::from_ascii(fen).expect("fen").into_setup();
    let pos: Chess = setup.position(shakmaty::CastlingMode::Standard).expect("legal");
    let mut s = Sim::new(Config::default());
    s.board = pos.board().clone();
    s.dump();
    let events = &mut s.events;
    let _ = s.tracker.start_from_fen(fen, None, 0, &mut |e| events.push(e));
    s.slide(Square::E3, Square::E4);
    s.wait(4000);
    let wk = s.lift(Square::E4);
    let bk = s.lift(Square::C6);
    s.put(Square::E4, wk);
    s.put(Square::D4, bk);
    s.wait(2500);
    assert_eq!(s.tracker.result(), Some((GameResult::Draw, EndReason::KingsInCentre)));
    assert_eq!(confirmed(&s), ["e3e4"]);
}

fn a_king_knocked_next_to_the_other_in_the_centre_is_no_result() {
    // Black's king stands on d5. White, reaching for a rook, knocks the king from f6 onto
    // e5 (both kings in the centre: the draw signal's board) and puts it back 800 ms later,
    // then plays Rd1 and presses. The game goes on.
    let (mut s, pos) = from_fen("8/8/5K2/2pk4/8/8/8/R7 w - - 0 1", true);
    s.slide(Square::F6, Square::E5);
    s.wait(800);
    s.slide(Square::E5, Square::F6);
    s.wait(300);
    s.play_uci(&pos, "a1d1");
    s.wait(300);
    s.press(4, 2);
    s.wait(3000);
    assert_eq!(s.tracker.result(), None);
    assert_eq!(confirmed(&s), ["a1d1"]);
    assert_eq!(s.count(|e| matches!(e, Event::PositionMismatch { .. })), 0);
}

fn forgotten_clock_press() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let p = s.play_uci(&Chess::default(), "e2e4");
    // White forgets to press; Black replies (and cannot press: Black's side is down).
    s.wait(3000);
    assert!(confirmed(&s).is_empty(), "not certain yet");
    let p = s.play_uci(&p, "e7e5");
    // The reply proves e4, but White's clock still runs: White may yet press, late, and
    // that press is e4's `%clk`. It waits for it, or for the quiet time of unpressed moves.
    s.wait(1500);
    assert!(confirmed(&s).is_empty(), "White's press may still come");
    s.wait(3000);
    assert_eq!(confirmed(&s), ["e2e4", "e7e5"], "unpressed, quiet");
    // White notices, plays on and presses: everything stands.
    s.play_uci(&p, "g1f3");
    s.press(20, 2);
    s.wait(350); // the press confirms once the board had a scan's worth of time to move on
    assert_eq!(confirmed(&s), ["e2e4", "e7e5", "g1f3"]);
}

fn no_clock_quiet_time() {
    let mut s = Sim::started(Config::default(), Orientation::Normal);
    let p = s.play_uci(&Chess::default(), "d2d4");
    s.wait(1000);
    assert!(confirmed(&s).is_empty());
    s.wait(1500);
    assert_eq!(confirmed(&s), ["d2d4"]);
    s.play_uci(&p, "g8f6");
    s.wait(3000);
    let mut emts = Vec::new();
    s.tracker.for_each_move(View::Confirmed, |m| emts.push((m.clk, m.emt)));
    assert_eq!(emts, [(None, Some(0)), (None, Some(3))], "emt from board timing");
}

fn board_dump_after_reconnect() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    // The link is down while two plies are played; the dump after reconnect shows both.
    let mut p = Chess::default();
    for u in ["d2d4", "d7d5"] {
        let m = parse_uci(&p, u);
        p.play_unchecked(m);
    }
    s.board = p.board().clone();
    s.dump();
    assert_eq!(s.tracker.ply_count(View::Live), 2);
    s.press(3, 2);
    s.wait(350); // the press confirms once the board had a scan's worth of time to move on
    assert_eq!(confirmed(&s), ["d2d4"], "White's press stands for White's move");
    s.press(3, 2);
    s.wait(350); // the press confirms once the board had a scan's worth of time to move on
    assert_eq!(confirmed(&s), ["d2d4", "d7d5"]);
}

fn magic_piece_result() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4"]);
    s.put_code(Square::D4, PieceCode::MagicDraw);
    // The signal stands for the quiet time first (a corrupted byte is put right sooner).
    s.wait(2_000);
    assert_eq!(s.tracker.result(), Some((GameResult::Draw, EndReason::MagicPiece)));
    assert_eq!(confirmed(&s), ["e2e4"]);
}

fn flag_fall_on_the_clock() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4"]);
    s.flag_falls(Color::Black);
    assert_eq!(s.tracker.result(), Some((GameResult::WhiteWins, EndReason::FlagFall)));
}

fn new_game_after_result() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["f2f3", "e7e5", "g2g4", "d8h4"]);
    assert_eq!(s.tracker.result(), Some((GameResult::BlackWins, EndReason::Checkmate)));
    s.board = Board::new();
    s.dump();
    assert_eq!(s.tracker.state(), GameState::Active);
    assert_eq!(s.tracker.ply_count(View::Live), 0);
    assert_eq!(s.count(|e| matches!(e, Event::GameStarted { .. })), 2);
}

fn chess960_start() {
    let cfg = Config { chess960: true, ..Config::default() };
    let mut s = Sim::new(cfg);
    s.board = Board::chess960(0); // BBQNNRKR
    s.dump();
    assert_eq!(s.tracker.start_kind(), StartKind::Chess960(0));
    let p = s.tracker.start_position().clone();
    let p = s.play_uci(&p, "d1c3");
    s.wait(2500);
    assert_eq!(confirmed(&s), ["d1c3"]);
    let _ = p;
}

/// Chess960 castling as the board shows it: the king and the rook end on the standard
/// castling squares from wherever they started (here the king on b1 goes to c1, the rook
/// on a1 to d1), in either hand order; the move is the king taking its rook in UCI.
fn chess960_castling_in_either_hand_order() {
    for rook_first in [false, true] {
        let cfg = Config { chess960: true, ..Config::default() };
        let mut s = Sim::new(cfg);
        s.board = "rknnbbqr/pppppppp/8/8/8/8/PPPPPPPP/RKNNBBQR".parse().expect("board");
        s.dump();
        assert!(matches!(s.tracker.start_kind(), StartKind::Chess960(_)));
        let mut p = s.tracker.start_position().clone();
        for uci in ["c1b3", "c8b6", "d1e3", "d8e6"] {
            p = s.play_uci(&p, uci);
            s.wait(300);
        }
        if rook_first {
            s.lift(Square::A1);
            s.put(Square::D1, Some(Piece { color: Color::White, role: Role::Rook }));
            s.lift(Square::B1);
            s.put(Square::C1, Some(Piece { color: Color::White, role: Role::King }));
        } else {
            s.play_uci(&p, "b1a1");
        }
        s.wait(300);
        s.play_uci(&after(&s, &["c1b3", "c8b6", "d1e3", "d8e6", "b1a1"]), "b8a8");
        s.wait(2500);
        assert_eq!(
            confirmed(&s),
            ["c1b3", "c8b6", "d1e3", "d8e6", "b1a1", "b8a8"],
            "rook first: {rook_first}"
        );
        no_mismatch(&s);
    }
}

/// In a Chess960 event a 960 start position set up on a board that showed the standard
/// one (the arbiter arranging the pieces) is the game's start: no mismatch, its moves count.
fn chess960_set_up_after_the_standard_position() {
    let cfg = Config { chess960: true, ..Config::default() };
    let mut s = Sim::new(cfg);
    s.board = Board::new();
    s.dump();
    assert_eq!(s.tracker.start_kind(), StartKind::Standard);
    s.board = "rknnbbqr/pppppppp/8/8/8/8/PPPPPPPP/RKNNBBQR".parse().expect("board");
    s.dump();
    assert!(matches!(s.tracker.start_kind(), StartKind::Chess960(_)));
    let p = s.tracker.start_position().clone();
    let p = s.play_uci(&p, "c1b3");
    s.wait(300);
    s.play_uci(&p, "c8b6");
    s.wait(2500);
    assert_eq!(confirmed(&s), ["c1b3", "c8b6"]);
    no_mismatch(&s);
    assert_eq!(s.count(|e| matches!(e, Event::GameStarted { .. })), 2);
}

/// The position after `ucis` from the tracker's start position (Chess960 castling rules).
fn after(s: &Sim, ucis: &[&str]) -> Chess {
    let mut p = s.tracker.start_position().clone();
    for u in ucis {
        let m = u.parse::<shakmaty::uci::UciMove>().expect("uci").to_move(&p).expect("legal");
        p.play_unchecked(m);
    }
    p
}

fn never_a_ghost_from_a_passing_hand() {
    // A bishop slides through squares where it would be a legal move, then goes back.
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let p = play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5"]);
    s.slide(Square::F1, Square::C4);
    s.slide(Square::C4, Square::F1);
    s.wait(600);
    s.press(1, 2); // a press with nothing played
    s.wait(3500);
    assert_eq!(confirmed(&s).len(), 2, "nothing was played");
    let _ = p;
}

type Scenario = (&'static str, fn());

const SCENARIOS: &[Scenario] = &[
    ("1. e4 with the pawn slid through e3", e4_slid_through_e3),
    ("Nxe5, victim first", nxe5_victim_first),
    ("Nxe5, knight first", nxe5_knight_first),
    ("Nxe5, direct replacement reported as one update", nxe5_direct_replacement),
    ("O-O, king first", castles_king_first),
    ("O-O, rook first", castles_rook_first),
    ("O-O, both pieces at once", castles_both_at_once),
    ("exd6 en passant, victim first", exd6_en_passant),
    ("e8=N, placed as a pawn then swapped, after the press", e8_knight_placed_as_pawn_then_swapped),
    ("exd8=R, underpromotion with capture", underpromotion_to_rook_with_capture),
    ("two plies inside one scan window", two_plies_inside_one_scan_window),
    ("updates of one scan in reverse order", reversed_update_order_within_a_scan),
    ("three plies before the first press", three_plies_before_first_press),
    ("takeback of three plies", takeback_of_three_plies),
    ("a whole game on a rotated board", whole_game_on_a_rotated_board),
    ("a knocked-over king put back", knocked_over_king_put_back),
    ("a piece adjusted", piece_adjusted),
    ("a position that matches nothing, then restored", position_matching_nothing_then_restored),
    ("kings in the centre: result, no king move", kings_in_centre_with_no_king_move_recorded),
    ("kings in the centre slowly, no clock", kings_in_centre_slowly_without_clock),
    (
        "a king knocked next to the other in the centre is no result",
        a_king_knocked_next_to_the_other_in_the_centre_is_no_result,
    ),
    ("three plies and their presses inside one scan window", three_plies_and_presses_inside_one_scan_window),
    (
        "a capture and a recapture leaving the tip less two pieces",
        capture_and_recapture_leaving_the_tip_less_two_pieces,
    ),
    ("a piece in the hand is not read as a longer line", a_piece_in_the_hand_is_not_read_as_a_longer_line),
    (
        "a last king move to the centre, then both kings picked up for the signal",
        last_king_move_to_the_centre_then_both_kings_picked_up_for_the_signal,
    ),
    ("a forgotten clock press", forgotten_clock_press),
    ("no clock: quiet time confirms", no_clock_quiet_time),
    ("a board dump after a reconnect", board_dump_after_reconnect),
    ("a magic piece", magic_piece_result),
    ("a flag fall on the clock", flag_fall_on_the_clock),
    ("a new game after a result", new_game_after_result),
    ("a Chess960 start position", chess960_start),
    ("Chess960 castling in either hand order", chess960_castling_in_either_hand_order),
    ("a Chess960 position set up after the standard one", chess960_set_up_after_the_standard_position),
    ("a passing hand is never a move", never_a_ghost_from_a_passing_hand),
];

#[test]
fn scenario_table() {
    let mut failed = Vec::new();
    for (name, f) in SCENARIOS {
        let r = std::panic::catch_unwind(f);
        println!("{} {name}", if r.is_ok() { "ok  " } else { "FAIL" });
        if r.is_err() {
            failed.push(*name);
        }
    }
    assert!(failed.is_empty(), "failed scenarios: {failed:?}");
}

#[test]
fn tracker_for_600_plies_fits_in_16_kib() {
    let size = core::mem::size_of::<Tracker<600>>();
    println!("size_of::<Tracker<600>>() = {size} bytes");
    assert!(size < 16 * 1024, "{size} bytes");
}

#[test]
fn pgn_time_control_is_read_from_the_clock_when_not_configured() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let mut pgn = String::new();
    s.tracker.write_pgn(&PgnHeader::default(), &mut pgn).expect("pgn");
    // No press yet: nothing seen of the increment, and no %clk to need a TimeControl.
    assert!(!pgn.contains("TimeControl"), "{pgn}");
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "g1f3", "b8c6"]);
    pgn.clear();
    s.tracker.write_pgn(&PgnHeader::default(), &mut pgn).expect("pgn");
    // Five minutes on both sides at the start, two seconds given at each press.
    assert!(pgn.contains("[TimeControl \"300+2\"]\n"), "{pgn}");
    assert!(pgn.contains("[BlackClock \"0:05:00\"]\n"), "{pgn}");
    assert_eq!(s.tracker.inferred_time_control().map(|tc| tc.to_string()).as_deref(), Some("300+2"));
}

#[test]
fn pgn_export_format() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "g1f3"]);
    let header = PgnHeader {
        event: "Club \"Open\"",
        site: "C:\\chess",
        date: "2025.11.21",
        round: "3.7",
        white: "Doe, J",
        black: "Roe, R",
        board: Some("7"),
        time_control: Some("300+2"),
        utc_date: Some("2025.11.21"),
        utc_time: Some("18:00:00"),
        mode: Some("OTB"),
    };
    let mut pgn = String::new();
    s.tracker.write_pgn(&header, &mut pgn).expect("pgn");
    let expected_tags = [
        "[Event \"Club \\\"Open\\\"\"]",
        "[Site \"C:\\\\chess\"]",
        "[Date \"2025.11.21\"]",
        "[Round \"3.7\"]",
        "[White \"Doe, J\"]",
        "[Black \"Roe, R\"]",
        "[Result \"*\"]",
        // Then ASCII order by tag name (standard 8.1.1).
        "[BlackClock \"0:05:00\"]",
        "[Board \"7\"]",
        "[Clock \"B/0:04:59\"]",
        "[Mode \"OTB\"]",
        "[PlyCount \"3\"]",
        "[TimeControl \"300+2\"]",
        "[UTCDate \"2025.11.21\"]",
        "[UTCTime \"18:00:00\"]",
        "[WhiteClock \"0:05:00\"]",
    ];
    let lines: Vec<&str> = pgn.lines().collect();
    assert_eq!(&lines[..expected_tags.len()], &expected_tags[..], "{pgn}");
    assert_eq!(lines[expected_tags.len()], "");
    assert_eq!(
        lines[expected_tags.len() + 1],
        "1. e4 {[%clk 0:04:59] [%emt 0:00:03]} 1... e5 {[%clk 0:04:59] [%emt 0:00:03]}"
    );
    assert_eq!(lines[expected_tags.len() + 2], "2. Nf3 {[%clk 0:04:58] [%emt 0:00:03]} *");
    assert!(pgn.ends_with("*\n\n"));
    let mut tag = String::new();
    s.tracker.write_clock_tag(&mut tag).expect("tag");
    assert_eq!(tag, "B/0:04:59");
    let mut fen = String::new();
    s.tracker.write_fen(View::Confirmed, &mut fen).expect("fen");
    assert_eq!(fen, "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2");
}

/// A relay that reaches the board as the game begins: its first dump shows White's first
/// move under way (the e-pawn in the hand, or down on e4 before its lift was reported) or
/// already made. The game starts from the
/// standard position and the move is read as usual.
#[test]
fn a_first_look_at_the_first_move_under_way_starts_the_game() {
    for rotated in [false, true] {
        let o = if rotated { Orientation::Rotated } else { Orientation::Normal };
        // The pawn in the hand.
        let mut s = Sim::new(Config::default());
        s.orientation = o;
        s.board = Board::new();
        s.board.discard_piece_at(Square::E2);
        s.dump();
        assert_eq!(s.count(|e| matches!(e, Event::GameStarted { orientation, .. } if *orientation == o)), 1);
        s.put(Square::E4, piece(W, Role::Pawn));
        s.wait(3_000);
        assert!(
            s.provisional_events().iter().chain(s.confirmed_events().iter()).any(|m| m.contains("e2e4")),
            "{:?}",
            s.move_log()
        );
        // The pawn down on e4, its lift from e2 not yet reported.
        let mut s = Sim::new(Config::default());
        s.orientation = o;
        s.board = Board::new();
        s.board.set_piece_at(Square::E4, shakmaty::Piece { color: W, role: Role::Pawn });
        s.dump();
        assert_eq!(s.count(|e| matches!(e, Event::GameStarted { .. })), 1);
        s.lift(Square::E2);
        s.wait(3_000);
        assert!(
            s.provisional_events().iter().chain(s.confirmed_events().iter()).any(|m| m.contains("e2e4")),
            "{:?}",
            s.move_log()
        );
        // The move made.
        let mut s = Sim::new(Config::default());
        s.orientation = o;
        s.board = Board::new();
        s.board.discard_piece_at(Square::G1);
        s.board.set_piece_at(Square::F3, shakmaty::Piece { color: W, role: Role::Knight });
        s.dump();
        assert_eq!(s.count(|e| matches!(e, Event::GameStarted { .. })), 1);
        s.wait(3_000);
        assert!(
            s.provisional_events().iter().chain(s.confirmed_events().iter()).any(|m| m.contains("g1f3")),
            "{:?}",
            s.move_log()
        );
    }
}

/// The relay reads the clock before the board, and its first dump comes only after White
/// played e4 and pressed (a slow link, or a relay busy as all its boards come up): the
/// press seen before the game was found is e4's. It gives e4 its `%clk` and the clock's
/// sides; taken for nothing, the next press, Black's, went to e4 and every press after it
/// to the other side's move, to the end of the game.
#[test]
fn a_press_made_before_the_first_look_is_the_first_moves() {
    let mut s = e4_pressed_before_the_board_is_read();
    s.wait(50);
    s.dump();
    assert_eq!(s.count(|e| matches!(e, Event::GameStarted { .. })), 1);
    s.wait(300);
    s.slide(Square::G8, Square::F6);
    s.press(1, 2);
    s.wait(300);
    s.slide(Square::G1, Square::F3);
    s.press(2, 2);
    s.wait(3_000);
    assert_eq!(s.confirmed_events(), ["e2e4", "g8f6", "g1f3"], "{:?}", s.move_log());
    assert_eq!(s.confirmed_clks(), [Some(299), Some(301), Some(299)], "{:?}", s.move_log());
}

/// The relay's first dump comes only after 1. e4 e5, both pressed, while the clock runs:
/// the game is taken with the line to that board, and the two presses seen before it are
/// its plies' (their `%clk`, and the clock's sides for the rest of the game). A board
/// being set up has no running clock; a board a few plies in while the clock runs is a
/// game under way, and without this it was never relayed at all.
#[test]
fn a_first_look_a_few_plies_into_the_game_starts_it_with_them() {
    let mut s = e4_pressed_before_the_board_is_read();
    s.wait(100);
    s.board.discard_piece_at(Square::E7);
    s.board.set_piece_at(Square::E5, shakmaty::Piece { color: B, role: Role::Pawn });
    s.press(2, 2);
    s.wait(50);
    s.dump();
    assert_eq!(s.count(|e| matches!(e, Event::GameStarted { .. })), 1, "{:?}", s.move_log());
    s.wait(300);
    s.slide(Square::G1, Square::F3);
    s.press(1, 2);
    s.wait(3_000);
    assert_eq!(s.confirmed_events(), ["e2e4", "e7e5", "g1f3"], "{:?}", s.move_log());
    assert_eq!(s.confirmed_clks(), [Some(299), Some(300), Some(300)], "{:?}", s.move_log());
    // Without a running clock the same board is no game yet.
    let mut s = Sim::new(Config::default());
    s.board = Board::new();
    for (from, to, color) in [(Square::E2, Square::E4, W), (Square::E7, Square::E5, B)] {
        s.board.discard_piece_at(from);
        s.board.set_piece_at(to, shakmaty::Piece { color, role: Role::Pawn });
    }
    s.dump();
    s.wait(1_000);
    assert_eq!(s.count(|e| matches!(e, Event::GameStarted { .. })), 0);
}

/// The clock read and running before the board: White plays e4 (the board not yet read)
/// and presses, 3 s used, 2 s added.
fn e4_pressed_before_the_board_is_read() -> Sim {
    let mut s = Sim::new(Config::default());
    s.clock = Some(common::SimClock::new(300, 300, ClockSide::Left));
    s.send_clock();
    s.start_clock();
    s.wait(200);
    s.board = Board::new();
    s.board.discard_piece_at(Square::E2);
    s.board.set_piece_at(Square::E4, shakmaty::Piece { color: W, role: Role::Pawn });
    s.press(3, 2);
    s
}

/// Only the first look counts, and only a White piece lifted or a legal first move: a board
/// being set up (a Black piece still to place, or a later look) starts no game.
#[test]
fn a_board_being_set_up_starts_no_game_early() {
    // A Black piece missing.
    let mut s = Sim::new(Config::default());
    s.board = Board::new();
    s.board.discard_piece_at(Square::D8);
    s.dump();
    assert_eq!(s.count(|e| matches!(e, Event::GameStarted { .. })), 0);
    // A White piece missing, but not at the first look: the first dump showed two missing.
    let mut s = Sim::new(Config::default());
    s.board = Board::new();
    s.board.discard_piece_at(Square::E2);
    s.board.discard_piece_at(Square::D2);
    s.dump();
    s.put(Square::D2, piece(W, Role::Pawn));
    s.wait(1_000);
    assert_eq!(s.count(|e| matches!(e, Event::GameStarted { .. })), 0);
    // The start position itself then starts it.
    s.put(Square::E2, piece(W, Role::Pawn));
    s.wait(1_000);
    assert_eq!(s.count(|e| matches!(e, Event::GameStarted { .. })), 1);
    // Two White moves on: not a first move.
    let mut s = Sim::new(Config::default());
    s.board = Board::new();
    s.board.discard_piece_at(Square::E2);
    s.board.set_piece_at(Square::E4, shakmaty::Piece { color: W, role: Role::Pawn });
    s.board.discard_piece_at(Square::D2);
    s.board.set_piece_at(Square::D4, shakmaty::Piece { color: W, role: Role::Pawn });
    s.dump();
    assert_eq!(s.count(|e| matches!(e, Event::GameStarted { .. })), 0);
}
