//! Scenarios found by the offline harness (`tests/src/offline.rs`): boards read in passing
//! must never become confirmed moves, and legal plies must never be lost.

mod common;

use common::{Sim, from_fen, piece};
use dgt_core::{Config, Event};
use dgt_protocol::{ClockSide, Orientation};
use shakmaty::{Chess, Color, Piece, Role, Square};

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

/// Bc1-d2, ...e6 and Bd2-f4 with a press after each, the first two read in one scan and the
/// bishop lifted again before the board settled: the board then shows what Bc1-f4 and ...e6
/// show too. Three presses (White, Black, White) say three plies, and the board showed the
/// bishop on d2 with ...e6 made: the bishop went by d2, not e3 or straight.
#[test]
fn three_presses_for_a_board_two_plies_reach_mean_three_plies() {
    // The third press before the board has been still for a scan period (the harness's
    // case pressed 170 ms after the landing was reported).
    let s = bishop_twice_with_reply_between(150);
    assert_eq!(s.confirmed_events(), ["d2d4", "d7d5", "c1d2", "e7e6", "d2f4"], "{:?}", s.move_log());
    // Each ply has its own press's time.
    assert_eq!(&s.confirmed_clks()[2..], [Some(295), Some(297), Some(294)], "{:?}", s.move_log());
}

/// The board stood at e4 f5 Qh5+, then Black's king was knocked from e8 onto f7 (where the
/// queen gives check) and put back a second later. No line keeping Qh5+ explains f7; a
/// three-ply line from before it does (Qf3 Kf7 Qh5+, through positions nobody saw). The
/// knock must not replace the ply that stood.
#[test]
fn a_king_knocked_where_it_cannot_go_does_not_replace_the_ply_that_stood() {
    let mut s = Sim::started(Config::default(), Orientation::Normal);
    let mut pos = Chess::default();
    for u in ["e2e4", "f7f5"] {
        pos = s.play_uci(&pos, u);
        s.wait(2500);
    }
    pos = s.play_uci(&pos, "d1h5");
    s.wait(800);
    s.step_ms = 0;
    s.lift(Square::E8);
    s.put(Square::F7, piece(B, Role::King));
    s.step_ms = 40;
    s.wait(1100);
    s.lift(Square::F7);
    s.put(Square::E8, piece(B, Role::King));
    s.wait(1000);
    s.play_uci(&pos, "g7g6");
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["e2e4", "f7f5", "d1h5", "g7g6"], "{:?}", s.events);
}

/// Plays d4 d5, then Bc1-d2 and ...e6 reported in one scan (Black's squares first, so no
/// single ply is ever shown), and the board still for 200 ms after it. With `pressed_first`,
/// both players press before that scan.
fn bishop_to_d2_and_e6_in_one_scan(pressed_first: bool) -> Sim {
    let mut s = Sim::started(Config::default(), Orientation::Normal).with_clock(300, ClockSide::Left);
    s.start_clock();
    common::play_pressed(&mut s, &Chess::default(), &["d2d4", "d7d5"]);
    s.wait(1000);
    if pressed_first {
        s.press(4, 0);
        s.press(2, 0);
    }
    s.step_ms = 0;
    s.lift(Square::E7);
    s.put(Square::E6, piece(B, Role::Pawn));
    s.put(Square::D2, piece(W, Role::Bishop));
    s.lift(Square::C1);
    s.step_ms = 40;
    s.wait(200);
    s
}

/// Plays d4 d5, then Bc1-d2 and ...e6 with both presses before the scan that reports them,
/// the bishop lifted again 200 ms later and put on f4: the board shows what Bc1-f4 ...e6
/// shows too. Returns the simulation with White's press for Bd2-f4 made `late_ms` after
/// the landing.
fn bishop_twice_with_reply_between(late_ms: u64) -> Sim {
    let mut s = bishop_to_d2_and_e6_in_one_scan(true);
    s.lift(Square::D2);
    s.wait(300);
    s.put(Square::F4, piece(W, Role::Bishop));
    s.wait(late_ms);
    s.press(1, 0);
    s.wait(1500);
    s
}

/// The same with the third press late (the known limit of the press reread: by then the
/// two presses had confirmed Bc1-f4 ...e6). Both players had pressed before the board,
/// reported whole, showed the bishop on d2 with ...e6 made: those are the two plies the
/// presses were for, and the bishop's next landing is a third ply, whenever its press comes.
#[test]
fn a_piece_moved_again_after_both_presses_is_a_new_ply_whenever_its_press_comes() {
    for late_ms in [400, 1000, 2500] {
        let s = bishop_twice_with_reply_between(late_ms);
        let confirmed = s.confirmed_events();
        assert_eq!(
            confirmed,
            ["d2d4", "d7d5", "c1d2", "e7e6", "d2f4"],
            "press {late_ms} ms late: {:?}",
            s.events
        );
        assert_eq!(&s.confirmed_clks()[2..], [Some(295), Some(297), Some(294)], "press {late_ms} ms late");
        assert_eq!(s.count(|e| matches!(e, Event::MoveConfirmed(m) if m.uci.to_string() == "c1f4")), 0);
    }
}

/// The other order of the same squares: the bishop paused on d2 in a slide to f4 while
/// Black had already made ...e6, and both pressed after the bishop landed on f4. The board
/// showed the d2 board before either press: it is a hand passing, and the two plies are
/// Bc1-f4 ...e6.
#[test]
fn a_slide_paused_before_the_presses_is_still_one_move() {
    let mut s = bishop_to_d2_and_e6_in_one_scan(false);
    s.lift(Square::D2);
    s.wait(100);
    s.put(Square::F4, piece(W, Role::Bishop));
    s.wait(100);
    s.press(4, 0);
    s.press(2, 0);
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["d2d4", "d7d5", "c1f4", "e7e6"], "{:?}", s.events);
}

/// After both presses the board stood at Bc1-d2 ...e6; then the bishop was knocked onto e3
/// and put back. The knock is at most a provisional ply of White's, withdrawn when the
/// bishop is back: never Bc1-e3 confirmed by the two presses.
#[test]
fn a_piece_knocked_after_both_presses_does_not_rewrite_the_pressed_plies() {
    let mut s = bishop_to_d2_and_e6_in_one_scan(true);
    s.lift(Square::D2);
    s.put(Square::E3, piece(W, Role::Bishop));
    s.wait(600);
    s.lift(Square::E3);
    s.put(Square::D2, piece(W, Role::Bishop));
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["d2d4", "d7d5", "c1d2", "e7e6"], "{:?}", s.events);
    // The knock's ply, if read, is withdrawn.
    let read = s.count(|e| matches!(e, Event::MoveProvisional(m) if m.ply == 5));
    assert_eq!(s.count(|e| matches!(e, Event::MoveRetracted { ply: 5, .. })), read, "{:?}", s.events);
}

/// 13...Qxd1 (worldcup#264, dropped updates): Re1xd1 with the rook's landing report lost,
/// and White's press; Black then lifts the c6 pawn and the b7 pawn for bxc6, the dump asked
/// for the lost report coming with c6 already off. The board is Rxd1 with two pieces in the
/// air, which the four plies c6xb7 Bc8xb7 Re1xd1 Bb7-c8 reach too: a move under way, to
/// wait for (the four plies were taken at the mismatch time, and White's press confirmed
/// c6xb7).
#[test]
fn a_capture_under_way_after_a_ply_the_board_never_showed_whole_is_no_line() {
    let mut s = common::clocked(Orientation::Normal, ClockSide::Left);
    let ucis = [
        "e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5a4", "g8f6", "e1g1", "f8e7", "a4c6", "d7c6",
        "f1e1", "f6d7", "c2c3", "a6a5", "d2d4", "e5d4", "c3d4", "d7f8", "b1c3", "f8g6", "d4d5", "e8g8",
        "d5c6", "d8d1",
    ];
    common::play_pressed(&mut s, &Chess::default(), &ucis);
    assert_eq!(s.confirmed_events().len(), 26, "{:?}", s.events);
    s.wait(4000);
    s.lift(Square::D1);
    s.wait(400);
    s.lift(Square::E1);
    // A dump is asked for the still board less the two pieces.
    s.wait(300);
    // The rook lands on d1: the report is lost.
    s.board.set_piece_at(Square::D1, shakmaty::Piece { color: W, role: Role::Rook });
    s.wait(350);
    s.press(4, 2);
    s.wait(550);
    // The c6 pawn is off when the next dump is taken; its report comes after the dump.
    s.board.discard_piece_at(Square::C6);
    s.wait(100);
    s.lift(Square::C6);
    s.wait(160);
    s.lift(Square::B7);
    s.wait(400);
    s.put(Square::C6, piece(B, Role::Pawn));
    s.wait(100);
    s.press(2, 2);
    s.wait(3000);
    assert_eq!(s.count(|e| matches!(e, Event::MoveConfirmed(m) if m.uci.to_string() == "c6b7")), 0);
    assert_eq!(&s.confirmed_events()[26..], ["e1d1", "b7c6"], "{:?}", s.events);
}

/// Without a clock, 2...Qe7 stood (0.8 s), then 3. Bc4 and 3...Qf6 were made between two
/// scans, reported in board-index order: the queen's squares first. Halfway through the
/// scan the board shows what 2...Qf6 alone shows (the queen's rest on e7 read as a slide
/// that went on), and the whole scan what 2...Qf6 3. Bc4 shows. The ply that stood is not
/// given up for a ply from before it on a board read halfway (mixed worldcup#96 seed 35:
/// Rb5-b6 stood, Kg5 and Rb6-b7 read as Rb5-b7 Kg5; worldcup#217 seed 33, Ke6-e7 stood,
/// Kd5 and Ke7-d7 read as Ke6-d7 Kd5).
#[test]
fn a_scan_read_halfway_does_not_replace_the_ply_that_stood() {
    let mut s = Sim::started(Config::default(), Orientation::Normal);
    let mut pos = Chess::default();
    for u in ["e2e4", "e7e5", "g1f3"] {
        pos = s.play_uci(&pos, u);
        s.wait(2500);
    }
    s.play_uci(&pos, "d8e7");
    s.wait(800);
    s.step_ms = 0;
    s.lift(Square::E7);
    s.put(Square::F6, piece(B, Role::Queen));
    s.put(Square::C4, piece(W, Role::Bishop));
    s.lift(Square::F1);
    s.step_ms = 40;
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["e2e4", "e7e5", "g1f3", "d8e7", "f1c4", "e7f6"], "{:?}", s.events);
    assert_eq!(s.count(|e| matches!(e, Event::MoveProvisional(m) if m.uci.to_string() == "d8f6")), 0);
}

/// Without a clock, 2. Nf3 Qe7 3. Bc4 Qd8 each stood a little under a second (none
/// confirmed yet), then the queen was knocked from d8 onto f6 and put back a second later.
/// The knock reads as the queen going on from e7 (one ply, withdrawn when it is back), never
/// as the shorter line from before the plies that stood, 2...Qf6 3. Bc4 (mixed worldcup#90
/// seed 17: Kg4 Re4 Kg3 Re3 in a repetition, the rook knocked to e2 read as Re3-e2 Kg3).
#[test]
fn a_knock_gives_up_no_ply_that_stood_before_the_last() {
    let mut s = Sim::started(Config::default(), Orientation::Normal);
    let mut pos = Chess::default();
    for u in ["e2e4", "e7e5"] {
        pos = s.play_uci(&pos, u);
        s.wait(2500);
    }
    for u in ["g1f3", "d8e7", "f1c4", "e7d8"] {
        pos = s.play_uci(&pos, u);
        s.wait(800);
    }
    s.step_ms = 0;
    s.lift(Square::D8);
    s.put(Square::F6, piece(B, Role::Queen));
    s.step_ms = 40;
    s.wait(1100);
    s.lift(Square::F6);
    s.put(Square::D8, piece(B, Role::Queen));
    s.wait(3000);
    assert_eq!(s.confirmed_events(), ["e2e4", "e7e5", "g1f3", "d8e7", "f1c4", "e7d8"], "{:?}", s.events);
}

/// Nf5xd4 with the victim lifted first, both knights held for 0.6 s and Black's press made
/// before the landing: the board shows the tip less the two knights, which an exchange
/// explains (Ne7 Nxc6 Nxc6) once the press says the hands are done. The knight landing on d4
/// replaces that exchange at once: the board never stood at it (knock-over worldcup#108
/// seed 37, the same capture, once the fast path kept plies that stood).
#[test]
fn a_capture_read_as_an_exchange_while_held_is_replaced_by_its_landing() {
    let mut s = common::clocked(Orientation::Normal, ClockSide::Left);
    common::play_pressed(
        &mut s,
        &Chess::default(),
        &["e2e4", "e7e5", "g1f3", "b8c6", "d2d4", "e5d4", "f3d4", "g8e7", "f1c4", "e7f5", "a2a3"],
    );
    s.lift(Square::D4);
    s.lift(Square::F5);
    s.wait(600);
    s.press(3, 2);
    s.wait(100);
    s.put(Square::D4, piece(B, Role::Knight));
    // White recaptures half a second later: Qxd4 follows the exchange as well.
    s.wait(500);
    s.lift(Square::D4);
    s.lift(Square::D1);
    s.put(Square::D4, piece(W, Role::Queen));
    s.wait(200);
    s.press(2, 2);
    s.wait(3000);
    let confirmed = s.confirmed_events();
    assert_eq!(&confirmed[11..], ["f5d4", "d1d4"], "{:?}", s.events);
}

/// Blitz: Black's bishop goes f8-e7 with a press, White replies Nf3 at once, and the bishop
/// goes on e7-d6 (Black's next move) within a scan period of Black's press; then White
/// plays c2-c4 with ...a6 premoved before White's press. Black's first press was for Be7,
/// the ply the board showed last before it: the bishop leaving e7 after White's reply is a
/// new move, not the rest of a slide. Paired with Bd6 instead, Black's press for Bd6 is
/// left over, the presses outnumber the plies, and the board was read one ply longer
/// (c3 a6 c4).
#[test]
fn a_piece_moved_again_after_the_reply_is_a_new_ply_not_the_rest_of_a_slide() {
    let mut s = common::clocked(Orientation::Normal, ClockSide::Left);
    common::play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e6", "d2d4"]);
    s.step_ms = 10;
    s.slide(Square::F8, Square::E7);
    s.press(1, 0);
    s.slide(Square::G1, Square::F3);
    s.slide(Square::E7, Square::D6);
    s.wait(40);
    s.press(1, 0);
    s.wait(20);
    s.press(1, 0);
    s.slide(Square::C2, Square::C4);
    s.slide(Square::A7, Square::A6);
    s.press(1, 0);
    s.press(1, 0);
    s.wait(3000);
    let played = ["e2e4", "e7e6", "d2d4", "f8e7", "g1f3", "e7d6", "c2c4", "a7a6"];
    assert_eq!(s.confirmed_events(), played, "{:?}", s.move_log());
}

/// White presses by mistake before moving, then two seconds later plays Nb1-c3, takes it
/// back after 300 ms and plays Nf3; Black replies Nc6 and presses. The early press was not
/// for a ply shown seconds after it: Nc3, which stood long enough for a press waiting on it,
/// is withdrawn, never confirmed.
#[test]
fn a_press_is_not_for_a_ply_shown_seconds_after_it() {
    let mut s = common::clocked(Orientation::Normal, ClockSide::Left);
    common::play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5"]);
    s.wait(500);
    s.press(1, 0);
    s.wait(2000);
    s.slide(Square::B1, Square::C3);
    s.wait(300);
    s.slide(Square::C3, Square::B1);
    s.slide(Square::G1, Square::F3);
    s.wait(500);
    s.slide(Square::B8, Square::C6);
    s.wait(100);
    s.press(1, 0);
    s.wait(3000);
    let all = s.confirmed_events();
    assert!(!all.contains(&"b1c3".to_string()), "{:?}", s.move_log());
    assert_eq!(all, ["e2e4", "e7e5", "g1f3", "b8c6"], "{:?}", s.move_log());
}

/// The game 1. e4 c6 2. d4 d5, then exd5 cxd5 Bd3 at blitz pace with a press after each,
/// all three pressed before the board's scan reports them; the dumps the presses ask for
/// show them first. The board shows the tip less the e4 and c6 pawns, then a bishop on d3:
/// read once the hands are done, long after the presses. Each press still takes its own ply:
/// the board began showing them when it left the tip, not when the line took them.
#[test]
fn plies_read_once_the_hands_are_done_keep_the_presses_made_before() {
    let mut s = common::clocked(Orientation::Normal, ClockSide::Left);
    common::play_pressed(&mut s, &Chess::default(), &["e2e4", "c7c6", "d2d4", "d7d5"]);
    s.wait(1000);
    s.step_ms = 16;
    s.put_unreported(Square::D5, None);
    s.put_unreported(Square::E4, None);
    s.put_unreported(Square::D5, piece(W, Role::Pawn));
    s.put_unreported(Square::D5, None);
    s.put_unreported(Square::C6, None);
    s.put_unreported(Square::D5, piece(B, Role::Pawn));
    s.press(4, 2);
    s.wait(16);
    s.press(3, 2);
    s.wait(16);
    s.put_unreported(Square::F1, None);
    s.put_unreported(Square::D3, piece(W, Role::Bishop));
    s.press(1, 2);
    s.wait(30);
    s.step_ms = 0;
    for sq in [Square::C6, Square::E4, Square::D3, Square::F1] {
        let p = s.board.piece_at(sq);
        s.put(sq, p);
    }
    s.wait(2000);
    let played = ["e2e4", "c7c6", "d2d4", "d7d5", "e4d5", "c6d5", "f1d3"];
    assert_eq!(s.confirmed_events(), played, "{:?}", s.move_log());
    assert!(s.confirmed_clks().iter().all(Option::is_some), "{:?}", s.move_log());
}

/// Without a clock, fast: ...Qxg5 hxg5 Rfe8, then White takes the rook on e7 with the rook
/// from e1, the victim lifted first and the rook slid up the file, a dump reading it on e4
/// ahead of the reports. That board is also ...Re4 Rxe4 Rfe8 (every square explained); the
/// slide going on makes it ...Re4 Rxe4 Re8 Re7, and ...Rxe7 then reaches the board
/// ...Rfe8 Rxe7 Rxe7 reaches in two plies fewer. Nothing but the board fixes the count: the
/// fewest plies are what was played.
#[test]
fn a_rook_slid_to_take_a_piece_lifted_first_is_one_move_however_it_was_read_on_the_way() {
    let fen = "2b2rk1/pp2r2p/2p2qp1/3p1pQ1/3P3P/2PB1P2/PP4P1/4RRK1 b - - 1 20";
    let (mut s, _) = from_fen(fen, Config::default(), None);
    s.step_ms = 0;
    let (rook, queen) = (|c| piece(c, Role::Rook), |c| piece(c, Role::Queen));
    s.wait(3000);
    // Each change as the board's scan reported it, at its time in milliseconds.
    let t0 = s.now;
    let at = |s: &mut Sim, t: u64| wait_until(s, t0 + t);
    let step = |s: &mut Sim, t: u64, changes: &[(Square, Option<Piece>)]| scan_at(s, t0 + t, changes);
    step(&mut s, 600, &[(Square::F6, None)]);
    step(&mut s, 1000, &[(Square::G5, queen(B))]);
    step(&mut s, 1600, &[(Square::H4, None)]);
    step(&mut s, 2000, &[(Square::G5, None)]);
    step(&mut s, 2400, &[(Square::G5, piece(W, Role::Pawn))]);
    step(&mut s, 2800, &[(Square::F8, None)]);
    step(&mut s, 3000, &[(Square::E8, rook(B))]);
    at(&mut s, 3500);
    s.put_unreported(Square::E7, None);
    s.dump();
    step(&mut s, 3600, &[(Square::E7, None)]);
    step(&mut s, 4000, &[(Square::E1, None)]);
    step(&mut s, 4400, &[(Square::E2, rook(W))]);
    step(&mut s, 4600, &[(Square::E3, rook(W)), (Square::E2, None)]);
    // The board ahead of its reports: a dump shows the rook on e4, then e4 and e3 report.
    at(&mut s, 4900);
    s.put_unreported(Square::E3, None);
    s.put_unreported(Square::E4, rook(W));
    s.dump();
    step(&mut s, 5000, &[(Square::E4, rook(W)), (Square::E3, None)]);
    step(&mut s, 5200, &[(Square::E5, rook(W)), (Square::E4, None)]);
    step(&mut s, 5600, &[(Square::E6, rook(W)), (Square::E5, None)]);
    step(&mut s, 5800, &[(Square::E7, rook(W)), (Square::E6, None)]);
    step(&mut s, 6200, &[(Square::E7, None)]);
    step(&mut s, 6400, &[(Square::E8, None)]);
    step(&mut s, 6800, &[(Square::E7, rook(B))]);
    s.wait(5000);
    assert_eq!(s.confirmed_events(), ["f6g5", "h4g5", "f8e8", "e1e7", "e8e7"], "{:?}", s.move_log());
}

/// Without a clock: Re1-e3, its landing on e2 unreported and e2 reported emptied after e3
/// in the same read (the scan's order); then ...Rh5 stands a second and a half, the rook
/// goes back to h8 (the move taken back in hand) and stands there, then ...Rf8. Rh5 was
/// never played, and e2 was Re3's landing, not one a later line must explain.
#[test]
fn a_move_taken_back_in_hand_without_a_clock_gives_way_to_the_one_played() {
    let fen = "7r/kN6/pp2p2q/8/P2PBn2/5PQ1/1P4P1/4R1K1 b - - 0 47";
    let (mut s, pos) = from_fen(fen, Config::default(), None);
    s.play_uci(&pos, "h6f6");
    s.wait(3000);
    s.step_ms = 0;
    let rook = |c| piece(c, Role::Rook);
    let t0 = s.now;
    let at = |s: &mut Sim, t: u64| wait_until(s, t0 + t);
    let step = |s: &mut Sim, t: u64, changes: &[(Square, Option<Piece>)]| scan_at(s, t0 + t, changes);
    step(&mut s, 1600, &[(Square::E1, None)]);
    // The rook's landing on e2 on its way to e3 unreported.
    step(&mut s, 2200, &[(Square::E3, rook(W)), (Square::E2, None)]);
    step(&mut s, 3200, &[(Square::H8, None)]);
    step(&mut s, 3400, &[(Square::H5, rook(B))]);
    at(&mut s, 4890);
    s.put_unreported(Square::H5, None);
    step(&mut s, 5000, &[(Square::H5, None)]);
    step(&mut s, 5200, &[(Square::H8, rook(B))]);
    step(&mut s, 9600, &[(Square::H8, None)]);
    step(&mut s, 9800, &[(Square::F8, rook(B))]);
    s.wait(5000);
    eprintln!("{:?}", s.move_log());
    assert_eq!(s.confirmed_events(), ["h6f6", "e1e3", "h8f8"], "{:?}", s.move_log());
}

/// Lets time pass until `t`.
fn wait_until(s: &mut Sim, t: u64) {
    s.wait(t.saturating_sub(s.now));
}

/// At `t`, the board's scan reports `changes`, all at that moment.
fn scan_at(s: &mut Sim, t: u64, changes: &[(Square, Option<Piece>)]) {
    wait_until(s, t);
    for &(sq, p) in changes {
        s.put(sq, p);
    }
}
