//! The fuzz targets of `dgt_relay::fuzz` on the stable toolchain: each runs a few thousand
//! inputs from a seeded generator (valid inputs, mutated), the same on every run. For longer
//! runs with coverage guidance: `cargo +nightly fuzz run <target>` in `fuzz/` (README).
//! Each test prints how many inputs and bytes it ran.
#![allow(clippy::unwrap_used)]

use dgt_protocol::{
    BoardDump, Bwtime, ClockAck, ClockStatus, ClockTime, ClockTimes, DgtSquare, EeEvent, FieldUpdate,
    Message, PieceCode, SideFlags, SideReading,
};
use dgt_relay::fuzz::{self, Inputs};

/// Runs `target` on `count` inputs of at most `max_len` bytes; returns the bytes run.
fn run(name: &str, seeds: Vec<Vec<u8>>, count: usize, max_len: usize, mut target: impl FnMut(&[u8])) {
    let mut total = 0usize;
    // The seeds themselves first, then the generated inputs.
    for s in &seeds {
        target(s);
        total += s.len();
    }
    // The generator's seed comes from the name: the same inputs on every run.
    let seed =
        name.bytes().fold(0xCBF2_9CE4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3));
    let mut inputs = Inputs::new(seeds.clone(), max_len, seed);
    for _ in 0..count {
        let input = inputs.next_input();
        total += input.len();
        target(&input);
    }
    println!("fuzz {name}: {} inputs, {total} bytes (at most {max_len} an input)", count + seeds.len());
}

fn encode(m: &Message<'_>) -> Vec<u8> {
    let mut out = vec![0u8; m.encoded_len()];
    let n = m.encode(&mut out).unwrap();
    out.truncate(n);
    out
}

fn clock_times() -> Message<'static> {
    let side = |s: u32| SideReading { time: ClockTime::from_seconds(s), flags: SideFlags::default() };
    Message::Bwtime(Bwtime::Times(ClockTimes {
        left: side(5399),
        right: side(5400),
        status: ClockStatus(0x01 | 0x08),
    }))
}

fn board_messages() -> Vec<Vec<u8>> {
    let sq = |i| DgtSquare::new(i).unwrap();
    let mut ee = vec![0u8; 256];
    let events = [
        EeEvent::PowerUp,
        EeEvent::Field { square: sq(52), piece: PieceCode::Empty, quick: false },
        EeEvent::Field { square: sq(36), piece: PieceCode::WhitePawn, quick: true },
        EeEvent::Eof,
    ];
    let n = dgt_protocol::ee::encode_ee_moves(&events, &mut ee).unwrap();
    ee.truncate(n);
    vec![
        encode(&Message::BoardDump(BoardDump::EMPTY)),
        encode(&Message::FieldUpdate(FieldUpdate::new(sq(36), PieceCode::WhitePawn))),
        encode(&clock_times()),
        encode(&Message::Bwtime(Bwtime::Ack(ClockAck::from_ack_bytes([0x10, 0x09, 0x20, 0])))),
        encode(&Message::SerialNumber(b"24518")),
        encode(&Message::Version { major: 3, minor: 1 }),
        encode(&Message::Trademark(b"Digital Game Technology")),
        ee,
        // The issue's corrupted field update.
        vec![0x8E, 0x00, 0x05, 0x20, 0x7F, 0x8E, 0x00, 0x05, 0x20, 0x00],
    ]
}

#[test]
fn fuzz_decoder() {
    let mut seeds = board_messages();
    seeds.push(board_messages().concat());
    run("decoder", seeds, 5_000, 4096, fuzz::decoder);
}

/// A square's board index on a normal board.
fn idx(name: &str) -> u8 {
    let b = name.as_bytes();
    (b'8' - b[1]) * 8 + (b[0] - b'a')
}

/// Session opcodes playing `moves` (from, to, piece code) with time between; with
/// `clock`, a clock reading after each move.
fn played(moves: &[(&str, &str, u8)], clock: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for (from, to, piece) in moves {
        out.extend([0x80, idx(from), 0, 0xD1, 60, 0x80, idx(to), *piece, 0xDA, 70]);
        if clock {
            out.push(0xC0);
            out.extend(&encode(&clock_times())[3..]);
        }
    }
    out
}

/// Two halves of 1,000 inputs each (other generator seeds), so that they run side by side.
fn fuzz_session(half: u64) {
    let moves = [("e2", "e4", 1), ("e7", "e5", 7), ("g1", "f3", 3), ("b8", "c6", 9), ("f1", "b5", 4)];
    let game = played(&moves, false);
    let mut raw = vec![0x7F];
    raw.extend(board_messages().concat().iter().take(128));
    let seeds = vec![
        game.clone(),
        [game.clone(), vec![0xF0, 0xD9, 100, 0xF8, 0xE1, idx("a2"), 0]].concat(),
        [game.clone(), vec![0x04, 0x8E, 0x00, 0x05, 0x20, 0x7F, 0xDF, 255]].concat(),
        [game, vec![0x80, idx("d4"), 0x0D, 0xDF, 255, 0xDF, 255]].concat(),
        raw,
    ];
    assert!(
        fuzz::session(&seeds[0]).moves >= 4,
        "the seed game reaches the tracker: {:?}",
        fuzz::session(&seeds[0])
    );
    let mut seen = fuzz::Seen::default();
    run(&format!("session {half}/2"), seeds, 1_000, 512, |data| {
        let s = fuzz::session(data);
        seen.moves += s.moves;
        seen.alerts += s.alerts;
        seen.ended += s.ended;
    });
    println!("fuzz session {half}/2: {seen:?}");
    assert!(seen.moves > 500 && seen.alerts > 50 && seen.ended > 5, "{seen:?}");
}

#[test]
fn fuzz_session_1() {
    fuzz_session(1);
}

#[test]
fn fuzz_session_2() {
    fuzz_session(2);
}

fn journal_seed() -> Vec<u8> {
    let mut lines = vec![
        r#"{"t":"game","round":1,"board":1,"serial":"24518","event":"E","site":"S","time_control":"5400+30","utc_date":"2025.01.01","utc_time":"10:00:00","pairing":{"white":{"name":"A, B","fide_id":1,"title":"GM"},"black":{"name":"C, D"}},"start_fen":null,"flipped":false}"#.to_owned(),
    ];
    for (i, (san, uci)) in
        [("e4", "e2e4"), ("e5", "e7e5"), ("Nf3", "g1f3"), ("Nc6", "b8c6")].iter().enumerate()
    {
        lines.push(format!(
            r#"{{"t":"move","ply":{},"san":"{san}","uci":"{uci}","clk":5399,"emt":1}}"#,
            i + 1
        ));
    }
    lines.push(r#"{"t":"takeback","from_ply":4}"#.to_owned());
    lines.push(r#"{"t":"pairing","pairing":{"white":{"name":"X"},"black":{"name":"Y"}}}"#.to_owned());
    lines.push(r#"{"t":"flip","flipped":true}"#.to_owned());
    lines.push(r#"{"t":"result","result":"1-0","termination":"normal"}"#.to_owned());
    (lines.join("\n") + "\n").into_bytes()
}

#[test]
fn fuzz_journal() {
    let dir = std::env::temp_dir().join(format!("dgt-relay-fuzz-journal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fen = br#"{"t":"game","round":2,"board":3,"serial":null,"event":"E","site":"S","time_control":null,"utc_date":"2025.01.01","utc_time":"10:00:00","pairing":{"white":{"name":""},"black":{"name":""}},"start_fen":"4k3/8/8/8/8/8/4P3/4K3 w - - 0 1","flipped":false}
{"t":"move","ply":1,"san":"e4","uci":"e2e4"}
"#;
    let seeds = vec![journal_seed(), fen.to_vec()];
    let mut seen = fuzz::Seen::default();
    run("journal", seeds, 2_000, 4096, |data| {
        let s = fuzz::journal(data, &dir);
        seen.moves += s.moves;
        seen.alerts += s.alerts;
    });
    println!("fuzz journal: {seen:?} (moves: replayed from journals)");
    assert!(seen.alerts > 10 && seen.moves > 200, "{seen:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fuzz_config() {
    let example = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../relay.example.toml")).unwrap();
    let small = b"listen = \"127.0.0.1:0\"\nsilence_ms = 2000\nallowed_origins = [\"https://a.example\"]\n[event]\nround = 2\n[[board]]\nnumber = 1\nserial = \"123\"\nwhite = { name = \"A, B\", title = \"GM\" }\n".to_vec();
    run("config", vec![example, small], 3_000, 4096, fuzz::config);
}

#[test]
fn fuzz_ws_messages() {
    let seeds = vec![
        b"{\"type\":\"ping\"}\n{\"type\":\"resync\"}\n{\"type\":\"subscribe\",\"boards\":[1,2]}\n{\"type\":\"subscribe\",\"boards\":\"all\"}\n{\"type\":\"subscribe\"}".to_vec(),
        b"\xFF\n{\"type\":\"resync\"}\xFE\n{\"type\":\"subscribe\",\"boards\":[3]}".to_vec(),
    ];
    run("ws_messages", seeds, 3_000, 2048, fuzz::ws_messages);
}
