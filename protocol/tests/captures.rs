//! Real board traffic: the three captures in `tests/data/board-captures/`, fed to the
//! decoder with their original read() chunking, must give exactly the messages a reference
//! decoder recorded in the `.json` files, field by field.

use base64::Engine;
use dgt_protocol::{
    Bwtime, ClockTimes, Decoded, Decoder, DgtSquare, Message, Orientation, PieceCode, SideReading,
};
use serde_json::Value;
use std::path::PathBuf;

fn corpus(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/board-captures").join(name)
}

/// The piece letter the reference decoder writes ('.' for empty, FEN letters otherwise).
fn letter(code: PieceCode) -> String {
    match code.piece() {
        Some(p) => p.char().to_string(),
        None if code.is_empty() => ".".to_string(),
        None => format!("magic{:x}", code.code()),
    }
}

fn check_side(expected: &Value, got: &SideReading, what: &str) {
    let num = |k: &str| expected[k].as_u64().unwrap_or_else(|| panic!("{what}: no {k}"));
    let flag = |k: &str| expected[k].as_bool().unwrap_or_else(|| panic!("{what}: no {k}"));
    assert_eq!(u64::from(got.time.hours), num("hours"), "{what} hours");
    assert_eq!(u64::from(got.time.minutes), num("minutes"), "{what} minutes");
    assert_eq!(u64::from(got.time.seconds), num("seconds"), "{what} seconds");
    assert_eq!(got.flags.final_flag, flag("final_flag"), "{what} final_flag");
    assert_eq!(got.flags.flag, flag("flag"), "{what} flag");
    assert_eq!(got.flags.time_per_move, flag("time_per_move"), "{what} time_per_move");
}

fn check_times(expected: &Value, t: &ClockTimes, at: usize) {
    let what = format!("message {at}");
    check_side(&expected["left_clock"], &t.left, &format!("{what} left"));
    check_side(&expected["right_clock"], &t.right, &format!("{what} right"));
    let flag = |k: &str| expected[k].as_bool().unwrap_or_else(|| panic!("{what}: no {k}"));
    assert_eq!(t.status.running(), flag("clock_running"), "{what} running (D0)");
    assert_eq!(t.status.right_high(), flag("right_high"), "{what} lever (D1)");
    assert_eq!(t.status.battery_low(), flag("battery_indicator"), "{what} battery (D2)");
    // The reference decoder reads D3 as "left's turn" and D4 as "right's turn".
    assert_eq!(t.status.d3(), flag("left_turn"), "{what} D3");
    assert_eq!(t.status.d4(), flag("right_turn"), "{what} D4");
    assert_eq!(t.status.no_clock(), flag("no_clock"), "{what} no clock (D5)");
}

/// Returns (dumps, field updates, clock times) checked.
fn replay(name: &str) -> (usize, usize, usize) {
    let inbytes = std::fs::read_to_string(corpus(&format!("{name}.inbytes"))).expect("capture bytes");
    let expected: Vec<Value> = std::fs::read_to_string(corpus(&format!("{name}.json")))
        .expect("capture json")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let mut decoder: Decoder = Decoder::new();
    let mut at = 0usize;
    let mut counts = (0, 0, 0);
    for line in inbytes.lines() {
        let chunk = base64::engine::general_purpose::STANDARD.decode(line.trim()).expect("base64 line");
        decoder.feed(&chunk, |decoded| {
            let exp = expected.get(at).unwrap_or_else(|| panic!("{name}: more messages than recorded"));
            match decoded {
                Decoded::Message(Message::BoardDump(dump)) => {
                    let board = exp["board"].as_array().expect("a board dump was recorded here");
                    for sq in DgtSquare::ALL {
                        assert_eq!(
                            letter(dump.piece(sq)),
                            board[usize::from(sq.index())].as_str().unwrap_or_default(),
                            "{name} message {at}: board index {}",
                            sq.index()
                        );
                    }
                    counts.0 += 1;
                }
                Decoded::Message(Message::FieldUpdate(update)) => {
                    // The reference decoder names squares as on a normally set-up board.
                    let field = update.square.to_square(Orientation::Normal).to_string();
                    assert_eq!(
                        field,
                        exp["field"].as_str().unwrap_or_default(),
                        "{name} message {at}: field"
                    );
                    assert_eq!(
                        letter(update.piece()),
                        exp["piece"].as_str().unwrap_or_default(),
                        "{name} {at}"
                    );
                    counts.1 += 1;
                }
                Decoded::Message(Message::Bwtime(Bwtime::Times(times))) => {
                    check_times(exp, &times, at);
                    counts.2 += 1;
                }
                other => panic!("{name} message {at}: unexpected {other:?}"),
            }
            at += 1;
        });
    }
    assert_eq!(decoder.take_noise(), None, "{name}: the capture has no line noise");
    assert_eq!(at, expected.len(), "{name}: every recorded message was decoded");
    counts
}

#[test]
fn capture_1_normal_board() {
    let (dumps, fields, clocks) = replay("1");
    assert!(dumps >= 1 && fields > 50 && clocks > 50, "{dumps} {fields} {clocks}");
}

#[test]
fn capture_2_rotated_board() {
    let (dumps, fields, clocks) = replay("2");
    assert!(dumps >= 1 && fields > 50 && clocks > 50, "{dumps} {fields} {clocks}");
}

#[test]
fn capture_johan() {
    let (dumps, fields, clocks) = replay("johan");
    assert!(dumps >= 1 && fields > 50 && clocks > 50, "{dumps} {fields} {clocks}");
}

#[test]
fn captures_decode_the_same_when_fed_one_byte_at_a_time() {
    for name in ["1", "2", "johan"] {
        let inbytes = std::fs::read_to_string(corpus(&format!("{name}.inbytes"))).expect("capture bytes");
        let all: Vec<u8> = inbytes
            .lines()
            .flat_map(|l| base64::engine::general_purpose::STANDARD.decode(l.trim()).expect("base64"))
            .collect();
        let mut chunked = Vec::new();
        let mut a: Decoder = Decoder::new();
        a.feed(&all, |d| chunked.push(format!("{d:?}")));
        let mut single = Vec::new();
        let mut b: Decoder = Decoder::new();
        for &byte in &all {
            if let Some(d) = b.push(byte) {
                single.push(format!("{d:?}"));
            }
        }
        assert_eq!(chunked, single, "{name}");
    }
}
