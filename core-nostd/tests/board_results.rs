//! Results shown on the board (a magic piece, the kings in the centre) stand only once the
//! signal has stood for the quiet time: one corrupted byte of a field update is no result.

mod common;

use common::*;
use dgt_core::{EndReason, Event, GameResult};
use dgt_protocol::{ClockSide, Decoded, Decoder, Orientation, PieceCode};
use shakmaty::{Chess, Square};

/// Feeds raw board bytes through the decoder into the tracker at the simulation's time.
fn feed_bytes(s: &mut Sim, bytes: &[u8]) {
    let mut decoder: Decoder<256> = Decoder::new();
    let now = s.now;
    let tracker = &mut s.tracker;
    let events = &mut s.events;
    decoder.feed(bytes, |d| {
        if let Decoded::Message(m) = d {
            tracker.feed(&m, now, &mut |e| events.push(e));
        }
    });
}

#[test]
fn a_corrupted_piece_byte_that_is_put_right_at_once_is_no_result() {
    // The recipe: after e2e4 the board sends a4 = 7F (masked: 0F, the black-wins
    // magic piece), then a4 = 00 (empty) at its next scan.
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let pos = play_pressed(&mut s, &Chess::default(), &["e2e4"]);
    s.now += 40;
    feed_bytes(&mut s, &[0x8E, 0x00, 0x05, 0x20, 0x7F]);
    s.wait(40);
    feed_bytes(&mut s, &[0x8E, 0x00, 0x05, 0x20, 0x00]);
    s.wait(3_000);
    assert_eq!(s.tracker.result(), None, "{:?}", s.events);
    assert_eq!(s.count(|e| matches!(e, Event::GameEnded { .. })), 0);
    // Later moves are recorded.
    play_pressed(&mut s, &pos, &["e7e5"]);
    assert_eq!(s.confirmed_ucis(), ["e2e4", "e7e5"]);
}

#[test]
fn a_king_read_as_a_magic_piece_for_a_moment_is_no_result() {
    // One bit flipped turns the white king (05) into 0D, the draw magic piece.
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    let pos = play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5"]);
    s.put_code(Square::E1, PieceCode::MagicDraw);
    s.wait(500);
    s.put_code(Square::E1, PieceCode::WhiteKing);
    s.wait(3_000);
    assert_eq!(s.tracker.result(), None);
    play_pressed(&mut s, &pos, &["g1f3"]);
    assert_eq!(s.confirmed_ucis(), ["e2e4", "e7e5", "g1f3"]);
}

#[test]
fn a_magic_piece_that_stands_for_the_quiet_time_ends_the_game() {
    let mut s = clocked(Orientation::Normal, ClockSide::Left);
    play_pressed(&mut s, &Chess::default(), &["e2e4"]);
    s.put_code(Square::D4, PieceCode::MagicBlackWins);
    let put_at = s.now;
    s.wait(1_500);
    assert_eq!(s.tracker.result(), None, "not before the quiet time");
    s.wait(600);
    assert_eq!(s.tracker.result(), Some((GameResult::BlackWins, EndReason::MagicPiece)));
    let ended = s.count(|e| matches!(e, Event::GameEnded { .. }));
    assert_eq!(ended, 1);
    assert!(s.now - put_at >= u64::from(s.tracker.config().timing.quiet_ms));
    assert_eq!(s.confirmed_ucis(), ["e2e4"]);
}
