//! Fuzz targets: each takes arbitrary bytes and runs one of the relay's inputs on them,
//! checking what must hold whatever the bytes. They never panic on any input; a panic (or
//! a failed check) is a bug.
//!
//! The same functions run in two places: `fuzz/` (cargo-fuzz's layout, libFuzzer, nightly:
//! `cargo +nightly fuzz run decoder`) and `host/tests/fuzz.rs` (every CI run, stable: a few
//! thousand inputs per target from [`Inputs`], a seeded generator that mutates valid
//! inputs).
//!
//! | target | input |
//! |---|---|
//! | [`decoder`] | serial bytes into the protocol decoder, in chunks |
//! | [`session`] | serial bytes (raw, and board messages built from the bytes) into a board session, with time, port losses and reattachments |
//! | [`journal`] | a journal file: replayed, its PGN written, its game resumed in a board session |
//! | [`config`] | a configuration file |
//! | [`ws_messages`] | websocket client messages, with snapshots built for the answers |

use std::time::Duration;

use dgt_protocol::{BoardDump, Bwtime, Decoded, Decoder, DgtSquare, FieldUpdate, Message, PieceCode};
use dgt_session::{BoardSession, Effect, Link, LinkTiming, SavedGame, SessionConfig};

/// The serial bytes in chunks: the first byte sets the chunk length (1 to 64). Every
/// message decoded (other than an unknown one) encodes back to a message that decodes the
/// same.
pub fn decoder(data: &[u8]) {
    let Some((&first, bytes)) = data.split_first() else { return };
    let chunk = usize::from(first % 64) + 1;
    let mut d: Box<Decoder<256>> = Box::new(Decoder::new());
    let mut check: Box<Decoder<256>> = Box::new(Decoder::new());
    let mut buf = vec![0u8; 1 << 14];
    for part in bytes.chunks(chunk) {
        d.feed(part, |decoded| {
            let Decoded::Message(m) = decoded else { return };
            if matches!(m, Message::Unknown { .. }) {
                return;
            }
            let Ok(n) = m.encode(&mut buf) else { return };
            let mut again = Vec::new();
            check.reset();
            check.feed(&buf[..n], |d2| {
                if let Decoded::Message(m2) = d2 {
                    again.push(format!("{m2:?}"));
                }
            });
            assert_eq!(again, [format!("{m:?}")], "{m:?} encoded as {:02X?}", &buf[..n]);
        });
    }
    let _ = d.take_noise();
}

/// A short, deterministic session timing (so that silence and retries happen within an
/// input's time).
fn timing() -> LinkTiming {
    LinkTiming {
        keepalive_ms: 200,
        silence_ms: 1_000,
        handshake_retry_ms: 300,
        handshake_attempts: 3,
        clock_ack_ms: 300,
        clock_attempts: 2,
        battery_poll_ms: 2_000,
    }
}

fn encode(m: &Message<'_>) -> Vec<u8> {
    let mut out = vec![0u8; m.encoded_len()];
    let n = m.encode(&mut out).unwrap_or(0);
    out.truncate(n);
    out
}

/// A link that the board answered: the handshake's version and serial number.
fn identified_link(now: u64) -> Link {
    let mut link = Link::open(now, timing());
    let _ = link.take_output();
    let mut hello = encode(&Message::Version { major: 3, minor: 1 });
    hello.extend(encode(&Message::SerialNumber(b"24518")));
    link.on_bytes(now, &hello);
    link
}

/// The start position as the board reports it.
fn start_dump() -> BoardDump {
    use PieceCode::*;
    let back_black =
        [BlackRook, BlackKnight, BlackBishop, BlackQueen, BlackKing, BlackBishop, BlackKnight, BlackRook];
    let back_white =
        [WhiteRook, WhiteKnight, WhiteBishop, WhiteQueen, WhiteKing, WhiteBishop, WhiteKnight, WhiteRook];
    let mut d = BoardDump::EMPTY;
    for i in 0..64u8 {
        let code = match i / 8 {
            0 => back_black[usize::from(i % 8)],
            1 => BlackPawn,
            6 => WhitePawn,
            7 => back_white[usize::from(i % 8)],
            _ => Empty,
        };
        if let Some(sq) = DgtSquare::new(i) {
            d.set(sq, code);
        }
    }
    d
}

/// What a session target saw, so that tests can tell the inputs reached the tracker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// Confirmed moves.
    pub moves: usize,
    /// Alerts.
    pub alerts: usize,
    /// Games ended.
    pub ended: usize,
}

impl Seen {
    fn effect(&mut self, e: &Effect) {
        match e {
            Effect::Move { state: dgt_session::MoveState::Confirmed, info } => {
                assert!(info.ply >= 1);
                self.moves += 1;
            }
            Effect::Alert(_) => self.alerts += 1,
            Effect::GameEnded { .. } => self.ended += 1,
            _ => {}
        }
    }
}

/// Runs a session until its next deadline is past `now`; checks that it never asks to be
/// woken in the past after a poll (a busy loop). The board answers what the session writes
/// as a board would: keep-alives with its serial number, dump requests with `dump` (when
/// it is attached).
fn settle(s: &mut BoardSession, now: u64, seen: &mut Seen, dump: Option<&BoardDump>) {
    for _ in 0..10_000 {
        let at = s.next_deadline();
        let due = at <= now;
        // The time of this step: the deadline polled, else now.
        let t = if due { at } else { now };
        if due {
            s.poll(at);
            assert!(s.next_deadline() > at, "the session is due again at {at}");
        }
        let mut answer = Vec::new();
        for e in s.drain_effects() {
            seen.effect(&e);
            if let (Effect::Write(bytes), Some(dump)) = (&e, dump) {
                for b in bytes {
                    match b {
                        0x45 => answer.extend(encode(&Message::SerialNumber(b"24518"))),
                        0x42 => answer.extend(encode(&Message::BoardDump(*dump))),
                        _ => {}
                    }
                }
            }
        }
        if !answer.is_empty() {
            s.on_bytes(t, &answer);
        } else if !due {
            break;
        }
    }
}

/// A board session fed from the bytes. The session starts with an identified board and the
/// start position; then each step reads an opcode byte:
///
/// - `0..=0x7F`: that many following bytes (at most the rest) go to `on_bytes` raw;
/// - `0x80..=0xBF`: a field update: square and piece code from the next two bytes;
/// - `0xC0..=0xCF`: clock times from the next 7 bytes (a BWTIME payload);
/// - `0xD0..=0xDF`: time passes, the low nibble times the next byte, in 4 ms;
/// - `0xE0..=0xEF`: a dump of the start position, or of the board so far with one square
///   changed (next two bytes);
/// - `0xF0..=0xF7`: the port is lost;
/// - `0xF8..=0xFF`: the board is attached again on a new link.
pub fn session(data: &[u8]) -> Seen {
    let mut seen = Seen::default();
    let mut now = 1_000u64;
    let mut s = BoardSession::new(1, None, SessionConfig { link: timing(), ..SessionConfig::default() });
    s.attach(now, identified_link(now), "fuzz");
    let mut dump = start_dump();
    let mut attached = true;
    s.on_bytes(now, &encode(&Message::BoardDump(dump)));
    settle(&mut s, now, &mut seen, Some(&dump));
    let mut i = 0;
    let mut next = |n: usize| {
        let part = &data[i.min(data.len())..(i + n).min(data.len())];
        i += n;
        part
    };
    while let Some(&op) = next(1).first() {
        match op {
            0..=0x7F => {
                let bytes = next(usize::from(op) + 1);
                s.on_bytes(now, bytes);
            }
            0x80..=0xBF => {
                let b = next(2);
                if let (Some(sq), Some(&p)) = (b.first().and_then(|&q| DgtSquare::new(q % 64)), b.get(1)) {
                    let update = FieldUpdate::new(sq, PieceCode::from_nibble(p));
                    dump.set(sq, PieceCode::from_nibble(p));
                    s.on_bytes(now, &encode(&Message::FieldUpdate(update)));
                }
            }
            0xC0..=0xCF => {
                let b = next(7);
                if let Ok(payload) = <[u8; 7]>::try_from(b) {
                    let bytes = encode(&Message::Bwtime(Bwtime::from_payload(payload.map(|x| x & 0x7F))));
                    s.on_bytes(now, &bytes);
                }
            }
            0xD0..=0xDF => {
                let b = next(1).first().copied().unwrap_or(1);
                now += u64::from(op & 0x0F) * u64::from(b) * 4 + 1;
            }
            0xE0..=0xEF => {
                let b = next(2);
                if op & 1 == 0 {
                    dump = start_dump();
                } else if let (Some(sq), Some(&p)) =
                    (b.first().and_then(|&q| DgtSquare::new(q % 64)), b.get(1))
                {
                    dump.set(sq, PieceCode::from_nibble(p));
                }
                s.on_bytes(now, &encode(&Message::BoardDump(dump)));
            }
            0xF0..=0xF7 => {
                s.on_port_lost(now, "fuzz");
                attached = false;
            }
            0xF8..=0xFF => {
                s.attach(now, identified_link(now), "fuzz");
                attached = true;
            }
        }
        settle(&mut s, now, &mut seen, attached.then_some(&dump));
    }
    // Time runs on: deadlines, silence, the tracker's timers.
    for _ in 0..20 {
        now += 250;
        settle(&mut s, now, &mut seen, attached.then_some(&dump));
    }
    seen
}

/// A journal file with these bytes, replayed as the relay does at start: its game's PGN
/// written, and the game resumed in a board session (which then reads the start position).
/// The file goes to `dir` (a temporary folder of the caller's).
pub fn journal(data: &[u8], dir: &std::path::Path) -> Seen {
    let mut seen = Seen::default();
    let path = dir.join(format!("fuzz-{}.journal", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return seen;
    }
    let replayed = crate::store::replay(&path);
    let _ = std::fs::remove_file(&path);
    let Ok(Some(game)) = replayed else { return seen };
    seen.moves = game.moves.len();
    let text = crate::pgn::write_game(&game, None);
    assert!(text.ends_with('\n'), "{text}");
    // What the board task does with a recovered game (`board/outputs.rs`, `Outputs::new`).
    let saved = SavedGame {
        start_fen: game.header.start_fen.clone(),
        plies: game.moves.iter().map(|m| (m.uci.clone(), m.clk, m.emt)).collect(),
        flipped: game.header.flipped,
        result: game.result.as_deref().and_then(|r| r.parse().ok()),
        white_clock: game.white_clock.map(Into::into),
    };
    let mut now = 1_000u64;
    let mut s = BoardSession::new(game.header.board, game.header.serial.clone(), SessionConfig::default());
    s.resume(now, &saved);
    for e in s.drain_effects() {
        seen.effect(&e);
    }
    seen.moves = game.moves.len();
    let dump = start_dump();
    s.attach(now, identified_link(now), "fuzz");
    s.on_bytes(now, &encode(&Message::BoardDump(dump)));
    for _ in 0..4 {
        now += 1_000;
        settle(&mut s, now, &mut seen, Some(&dump));
    }
    seen
}

/// A configuration file: refused with a line, or accepted with every value in its bounds.
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match crate::config::Config::parse("fuzz.toml", &text) {
        Ok(c) => {
            assert!((500..=60_000).contains(&c.silence_ms));
            assert!((1..=100_000).contains(&c.max_subscribers));
            assert!(c.boards.len() <= crate::tournament::MAX_BOARDS);
            assert!((1..=crate::tournament::MAX_ROUND).contains(&c.tournament.live_round()));
            assert!(c.allowed_origins.iter().all(|o| crate::config::check_origin(o).is_ok()));
            if let Some(t) = &c.token {
                assert!(crate::config::check_token(t).is_ok());
            }
        }
        Err(e) => {
            let m = e.to_string();
            assert!(m.starts_with("fuzz.toml"), "{m}");
        }
    }
}

/// Websocket client messages (separated by `\n`; a message starting with 0xFF is a binary
/// frame; a 0xFE byte lets a second pass), each handled by a [`crate::feed::ClientSession`]
/// on a hub with a few boards; every answer is a JSON frame of feed version 1, and a
/// snapshot is built for every snapshot asked for.
pub fn ws_messages(data: &[u8]) {
    use crate::feed::{
        BoardStatus, ClientAction, ClientInput, ClientLimits, ClientSession, Delta, FEED_VERSION, Hub,
        MoveState, MoveView, snapshot_frame,
    };
    let clock = crate::clock::Clock::manual(1_764_000_000_000);
    let hub = Hub::new(1, clock.clone());
    for board in 1..=3 {
        hub.publish(Delta::Status {
            board,
            status: BoardStatus::Active,
            serial: Some("1".into()),
            port: None,
        });
        hub.publish(Delta::Move {
            board,
            state: MoveState::Confirmed,
            mv: MoveView {
                ply: 1,
                san: "e4".into(),
                uci: "e2e4".into(),
                clk: Some(1),
                emt: Some(1),
                at: None,
            },
            fen: None,
        });
    }
    let t0 = clock.now();
    let mut now = t0;
    let mut client = ClientSession::new(ClientLimits::default(), t0);
    for msg in data.split(|&b| b == b'\n') {
        let (input, text);
        if msg.first() == Some(&0xFF) {
            input = ClientInput::Binary;
        } else {
            text = String::from_utf8_lossy(msg);
            input = ClientInput::Text(&text);
        }
        now += Duration::from_millis(u64::from(msg.iter().filter(|&&b| b == 0xFE).count() as u32) * 1_000);
        let frame = match client.on_message(input, now) {
            ClientAction::Reply(m) | ClientAction::Close(m, _) => m,
            ClientAction::Snapshot { resync } => {
                let (snap, _rx) = hub.subscribe();
                snapshot_frame(&snap, client.filter(), resync, &hub.relay_alerts(), clock.wall_ms())
            }
        };
        let v: serde_json::Value = serde_json::from_str(&frame).expect("JSON");
        assert_eq!(v["v"], FEED_VERSION);
    }
}

/// Inputs for the targets on the stable toolchain: valid seeds, then mutations of them
/// (bits flipped, bytes set, ranges inserted, deleted, repeated or spliced from another
/// seed, header bytes put in), from a seeded xorshift generator: the same seed gives the
/// same inputs on every machine.
#[derive(Debug)]
pub struct Inputs {
    seeds: Vec<Vec<u8>>,
    state: u64,
    max_len: usize,
}

impl Inputs {
    /// Inputs from `seeds`, at most `max_len` bytes each, from generator seed `seed`.
    pub fn new(seeds: Vec<Vec<u8>>, max_len: usize, seed: u64) -> Inputs {
        Inputs { seeds, state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1, max_len: max_len.max(1) }
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next_u64() % n as u64) as usize }
    }

    /// The next input.
    pub fn next_input(&mut self) -> Vec<u8> {
        let mut v = if self.seeds.is_empty() || self.below(8) == 0 {
            let n = self.below(self.max_len + 1);
            (0..n).map(|_| self.next_u64() as u8).collect()
        } else {
            let i = self.below(self.seeds.len());
            self.seeds[i].clone()
        };
        let edits = 1 + self.below(8);
        for _ in 0..edits {
            self.mutate(&mut v);
        }
        v.truncate(self.max_len);
        v
    }

    fn mutate(&mut self, v: &mut Vec<u8>) {
        let len = v.len();
        match self.below(9) {
            0 if len > 0 => {
                let i = self.below(len);
                v[i] ^= 1 << self.below(8);
            }
            1 if len > 0 => {
                let i = self.below(len);
                v[i] = self.next_u64() as u8;
            }
            2 => {
                let at = self.below(len + 1);
                let n = 1 + self.below(16);
                let bytes: Vec<u8> = (0..n).map(|_| self.next_u64() as u8).collect();
                v.splice(at..at, bytes);
            }
            3 if len > 0 => {
                let at = self.below(len);
                let n = 1 + self.below((len - at).min(64));
                v.drain(at..at + n);
            }
            4 if len > 0 => {
                let at = self.below(len);
                let n = 1 + self.below((len - at).min(64));
                let part = v[at..at + n].to_vec();
                let times = 1 + self.below(8);
                for _ in 0..times {
                    v.splice(at..at, part.iter().copied());
                }
            }
            5 if !self.seeds.is_empty() => {
                let k = self.below(self.seeds.len());
                let other = self.seeds[k].clone();
                let from = self.below(other.len() + 1);
                let to = from + self.below(other.len() - from + 1);
                let at = self.below(len + 1);
                v.splice(at..at, other[from..to].iter().copied());
            }
            6 if len > 0 => v.truncate(self.below(len)),
            7 if len > 0 => {
                // A header byte, or an interesting value.
                let i = self.below(len);
                v[i] = [0x80, 0x86, 0x8D, 0x8E, 0x91, 0x93, 0xA0, 0xFF, 0x00, 0x7F, b'"', b'\n', b'[', b'=']
                    [self.below(14)];
            }
            _ => {
                let at = self.below(len + 1);
                v.insert(at, self.next_u64() as u8);
            }
        }
    }
}
