//! Property checks with a small deterministic generator: whatever bytes arrive, in
//! whatever chunks, at whatever times, with whatever calls in between, a session never
//! panics, never asks to be polled again at the time it was just polled (a caller
//! sleeping until `next_deadline()` would spin), and writes only well-formed commands.

use dgt_protocol::{
    BoardDump, Bwtime, ClockAck, ClockStatus, ClockTime, ClockTimes, CommandParser, DgtSquare, EeEvent,
    FieldUpdate, HostInput, Message, Orientation, PieceCode, SideFlags, SideReading,
};
use dgt_session::{BoardSession, Effect, Link, LinkTiming, SavedGame, SessionConfig};
use shakmaty::uci::UciMove;
use shakmaty::{Chess, Position};

/// xorshift64*: small, fast, and the same sequence on every machine.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// 0..n
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// True `percent` times in a hundred.
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    fn byte(&mut self) -> u8 {
        self.next() as u8
    }
}

const FAST: LinkTiming = LinkTiming {
    keepalive_ms: 50,
    silence_ms: 300,
    handshake_retry_ms: 100,
    handshake_attempts: 3,
    clock_ack_ms: 100,
    clock_attempts: 3,
    battery_poll_ms: 60,
};

fn encode(m: &Message<'_>) -> Vec<u8> {
    let mut out = vec![0u8; m.encoded_len()];
    let n = m.encode(&mut out).expect("encodable");
    out.truncate(n);
    out
}

fn after(ucis: &[&str]) -> Chess {
    let mut pos = Chess::default();
    for u in ucis {
        let m = UciMove::from_ascii(u.as_bytes()).expect("uci").to_move(&pos).expect("legal");
        pos.play_unchecked(m);
    }
    pos
}

fn dump_of(pos: &Chess, orientation: Orientation) -> BoardDump {
    let mut d = BoardDump::EMPTY;
    for sq in DgtSquare::ALL {
        d.set(sq, PieceCode::from_option(pos.board().piece_at(sq.to_square(orientation))));
    }
    d
}

/// Positions a game goes through, so that games start, moves are found and taken back
/// among the garbage.
fn positions() -> Vec<BoardDump> {
    let lines: [&[&str]; 6] = [
        &[],
        &["e2e4"],
        &["e2e4", "e7e5"],
        &["e2e4", "e7e5", "g1f3"],
        &["e2e4", "e7e5", "g1f3", "b8c6", "b1c3"],
        &["d2d4", "d7d5", "c2c4", "d5c4"],
    ];
    let mut out: Vec<BoardDump> = lines.iter().map(|l| dump_of(&after(l), Orientation::Normal)).collect();
    out.push(dump_of(&Chess::default(), Orientation::Rotated));
    out.push(BoardDump::EMPTY);
    out
}

/// One thing a board (or a bad line) might send.
fn message(rng: &mut Rng, positions: &[BoardDump]) -> Vec<u8> {
    let square = |rng: &mut Rng| DgtSquare::new(rng.below(64) as u8).expect("a square");
    let piece = |rng: &mut Rng| PieceCode::from_nibble(rng.byte() & 0x0F);
    match rng.below(12) {
        0..=2 => {
            let mut d = *rng.pick(positions);
            if rng.chance(30) {
                d.set(square(rng), piece(rng));
            }
            encode(&Message::BoardDump(d))
        }
        3..=4 => encode(&Message::FieldUpdate(FieldUpdate::new(square(rng), piece(rng)))),
        5 => {
            let side = |rng: &mut Rng| SideReading {
                time: ClockTime::from_seconds(rng.below(36_000) as u32),
                flags: SideFlags {
                    final_flag: rng.chance(5),
                    time_per_move: rng.chance(50),
                    flag: rng.chance(5),
                },
            };
            let t = ClockTimes { right: side(rng), left: side(rng), status: ClockStatus(rng.byte() & 0x3F) };
            encode(&Message::Bwtime(Bwtime::Times(t)))
        }
        6 => {
            let ack = [rng.byte(), rng.byte(), rng.byte(), rng.byte()];
            encode(&Message::Bwtime(Bwtime::Ack(ClockAck::from_ack_bytes(ack))))
        }
        7 => {
            let len = rng.below(13) as usize;
            let payload: Vec<u8> = (0..len).map(|_| rng.byte() & 0x7F).collect();
            encode(&Message::Battery(dgt_protocol::Battery { payload: &payload }))
        }
        8 => {
            // An event log, sometimes with a length that lies.
            let n = rng.below(200) as usize;
            let mut events: Vec<EeEvent> = (0..n)
                .map(|_| match rng.below(6) {
                    0 => EeEvent::PowerUp,
                    1 => EeEvent::Nop,
                    2 => EeEvent::Time {
                        side: if rng.chance(50) {
                            dgt_protocol::ClockSide::Left
                        } else {
                            dgt_protocol::ClockSide::Right
                        },
                        time: ClockTime::from_seconds(rng.below(7_200) as u32),
                    },
                    _ => EeEvent::Field { square: square(rng), piece: piece(rng), quick: rng.chance(50) },
                })
                .collect();
            if rng.chance(70) {
                events.push(EeEvent::Eof);
            }
            let mut out = vec![0u8; 8192];
            let len = dgt_protocol::ee::encode_ee_moves(&events, &mut out).expect("encodable");
            out.truncate(len);
            if rng.chance(20) && out.len() > 3 {
                out[2] = rng.byte() & 0x7F;
            }
            out
        }
        9 => encode(&Message::SerialNumber(if rng.chance(80) { b"24518" } else { b"99999" })),
        10 => encode(&Message::Version { major: 3, minor: 1 }),
        _ => (0..rng.below(40)).map(|_| rng.byte()).collect(),
    }
}

/// Checks every effect: writes hold whole, known commands.
fn drain(board: &mut BoardSession, parser: &mut CommandParser) -> Vec<Effect> {
    let effects: Vec<Effect> = board.drain_effects().collect();
    for e in &effects {
        if let Effect::Write(bytes) = e {
            assert!(!bytes.is_empty());
            for &b in bytes {
                if let Some(input) = parser.push(b) {
                    assert!(matches!(input, HostInput::Command(_)), "the session wrote {input:?}");
                }
            }
        }
    }
    effects
}

/// A link past the handshake, as the port task hands it over.
fn identified_link(now: u64, timing: LinkTiming) -> Link {
    let mut link = Link::open(now, timing);
    link.take_output();
    let mut hello = encode(&Message::Version { major: 3, minor: 1 });
    hello.extend(encode(&Message::SerialNumber(b"24518")));
    link.on_bytes(now, &hello);
    assert!(link.is_identified());
    link
}

/// Polls at `now` and checks that nothing is due at `now` afterwards.
fn poll(board: &mut BoardSession, now: u64) {
    board.poll(now);
    let next = board.next_deadline();
    assert!(next > now, "polled at {now}, due again at {next}");
}

fn run(seed: u64, steps: usize) {
    let mut rng = Rng::new(seed);
    let positions = positions();
    let timing = if rng.chance(50) { FAST } else { LinkTiming::default() };
    let config = SessionConfig { link: timing, clock_pause_ms: 500, ..SessionConfig::default() };
    let mut board = BoardSession::new(1, None, config);
    let mut parser = CommandParser::new();
    let mut now = rng.below(1_000);
    if rng.chance(30) {
        let plies = ["e2e4", "e7e5", "g1f3", "b8c6"][..rng.below(5) as usize].iter();
        let saved =
            SavedGame { plies: plies.map(|u| (u.to_string(), None, None)).collect(), ..SavedGame::default() };
        board.resume(now, &saved);
    }
    board.attach(now, identified_link(now, timing), "fuzz");
    for _ in 0..steps {
        match rng.below(100) {
            0..=49 => {
                let mut bytes = Vec::new();
                for _ in 0..=rng.below(4) {
                    bytes.extend(message(&mut rng, &positions));
                }
                // Cut anywhere, delivered a few milliseconds apart.
                let mut rest = &bytes[..];
                while !rest.is_empty() {
                    let n = (1 + rng.below(rest.len() as u64)) as usize;
                    board.on_bytes(now, &rest[..n]);
                    rest = &rest[n..];
                    now += rng.below(5);
                }
            }
            50..=69 => {
                now += rng.below(400);
                poll(&mut board, now);
            }
            70..=84 => {
                now = now.max(board.next_deadline());
                poll(&mut board, now);
            }
            85..=88 => board.on_port_lost(now, "fuzz"),
            89..=93 => {
                if board.link_state() != dgt_session::LinkState::Active {
                    board.attach(now, identified_link(now, timing), "fuzz");
                }
            }
            _ => {
                // The operator does something; refusals are fine, panics are not.
                let _ = match rng.below(5) {
                    0 => board.flip(now).map(|_| ()),
                    1 => board.set_result(now, rng.chance(50).then_some(dgt_core::GameResult::Draw)),
                    2 => board.new_game(now, rng.chance(50).then_some("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1")),
                    _ => {
                        let moves = ["e2e4", "e7e5", "g1f3", "a1a8", "e7e8q", "zz"];
                        let n = rng.below(4) as usize;
                        let moves: Vec<String> = (0..n).map(|_| rng.pick(&moves).to_string()).collect();
                        board.correct(now, rng.below(6) as usize, &moves)
                    }
                };
            }
        }
        drain(&mut board, &mut parser);
    }
}

#[test]
fn random_bytes_chunks_times_and_calls_never_panic_nor_spin() {
    for seed in 0..96 {
        run(seed, 600);
    }
}

/// The commands in `bytes`, in a canonical order.
fn commands(bytes: &[u8]) -> Vec<String> {
    let mut parser = CommandParser::new();
    let mut out: Vec<String> =
        bytes.iter().filter_map(|b| parser.push(*b)).map(|c| format!("{c:?}")).collect();
    out.sort();
    out
}

/// The same bytes at the same time, cut into different chunks: the same decisions, the
/// same commands written (a command the link sends while it reads, such as a clock
/// command sent again after an error ack, may go before or after the session's dump
/// request for the same read).
#[test]
fn chunk_boundaries_change_nothing() {
    let positions = positions();
    for seed in 0..32 {
        let mut rng = Rng::new(1_000 + seed);
        let mut stream = Vec::new();
        for _ in 0..40 {
            stream.extend(message(&mut rng, &positions));
        }
        let run = |cuts: &mut dyn FnMut(usize) -> usize| {
            let mut board = BoardSession::new(1, None, SessionConfig::default());
            board.attach(0, identified_link(0, LinkTiming::default()), "chunks");
            let mut rest = &stream[..];
            while !rest.is_empty() {
                let n = cuts(rest.len());
                board.on_bytes(10, &rest[..n]);
                rest = &rest[n..];
            }
            board.poll(20);
            let mut writes = Vec::new();
            let mut told = Vec::new();
            for e in board.drain_effects() {
                match e {
                    Effect::Write(b) => writes.extend(b),
                    other => told.push(other),
                }
            }
            (commands(&writes), told, board.noise())
        };
        let whole = run(&mut |len| len);
        let bytes = run(&mut |_| 1);
        let mut rng = Rng::new(seed);
        let random = run(&mut |len| (1 + rng.below(len as u64)) as usize);
        assert_eq!(whole, bytes, "seed {seed}: whole vs byte by byte");
        assert_eq!(whole, random, "seed {seed}: whole vs random chunks");
    }
}
