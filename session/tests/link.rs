//! The serial conversation ([`Link`]) against a small scripted board, in virtual time:
//! the host's bytes are decoded as the board would read them, the board's answers are
//! encoded as a board writes them, and time jumps from one deadline to the next.

use dgt_protocol::{
    BoardDump, Bwtime, ClockAck, ClockCommand, Command, CommandParser, DgtSquare, EeEvent, FieldUpdate,
    HostInput, Message, PieceCode,
};
use dgt_session::link::{BATTERY_MISSES, MAX_CLOCK_QUEUE};
use dgt_session::{Link, LinkEvent, LinkTiming};

/// Short timings, so that a few virtual seconds cover every timer many times.
const FAST: LinkTiming = LinkTiming {
    keepalive_ms: 50,
    silence_ms: 300,
    handshake_retry_ms: 100,
    handshake_attempts: 3,
    clock_ack_ms: 100,
    clock_attempts: 3,
    battery_poll_ms: 60,
};

/// How the scripted board answers clock commands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Clock {
    /// No clock: clock commands get no answer.
    Absent,
    /// A DGT 3000 (version 2.0) that acknowledges every command.
    Acks,
    /// A clock that answers every command with an error ack.
    Errors,
}

/// A minimal board: answers the handshake, keep-alives and dumps, the clock as `clock`
/// says, battery requests with `battery` (or not at all, like a USB board). `mute` stops
/// all answers (a board that went quiet); `noise` goes before every answer (a bad line).
struct Board {
    parser: CommandParser,
    clock: Clock,
    battery: Option<(u8, bool)>,
    mute: bool,
    noise: Vec<u8>,
    /// What the board read, with the time.
    heard: Vec<(u64, Command)>,
    /// Bytes it read that were no command.
    junk: Vec<HostInput>,
}

impl Board {
    fn new(clock: Clock, battery: Option<(u8, bool)>) -> Board {
        Board {
            parser: CommandParser::new(),
            clock,
            battery,
            mute: false,
            noise: Vec::new(),
            heard: Vec::new(),
            junk: Vec::new(),
        }
    }

    /// Reads the host's bytes at `now`; returns the board's answer.
    fn hear(&mut self, now: u64, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for &b in bytes {
            let cmd = match self.parser.push(b) {
                None => continue,
                Some(HostInput::Command(cmd)) => cmd,
                Some(other) => {
                    self.junk.push(other);
                    continue;
                }
            };
            self.heard.push((now, cmd));
            if self.mute {
                continue;
            }
            let battery =
                self.battery.map(|(pct, charging)| [pct, 0x7F, 0x7F, 0, 10, 0, 1, 0, u8::from(charging)]);
            let ack = |ack1, ack2| {
                let ack0 = if self.clock == Clock::Errors { 0x40 } else { ClockAck::ACK_OK };
                Message::Bwtime(Bwtime::Ack(ClockAck::from_ack_bytes([ack0, ack1, ack2, 0])))
            };
            let reply = match cmd {
                Command::SendVersion => Some(Message::Version { major: 3, minor: 1 }),
                Command::ReturnSerialNumber => Some(Message::SerialNumber(b"24518")),
                Command::SendBoard => Some(Message::BoardDump(BoardDump::EMPTY)),
                Command::SendBatteryStatus => {
                    battery.as_ref().map(|p| Message::Battery(dgt_protocol::Battery { payload: p }))
                }
                Command::Clock(_) if self.clock == Clock::Absent => None,
                Command::Clock(ClockCommand::Version) => Some(ack(0x09, 0x20)),
                Command::Clock(ClockCommand::Beep { .. }) => Some(ack(0x0B, 0)),
                _ => None,
            };
            if let Some(m) = reply {
                out.extend_from_slice(&self.noise);
                out.extend_from_slice(&encode(&m));
            }
        }
        out
    }

    fn commands(&self) -> Vec<Command> {
        self.heard.iter().map(|(_, c)| *c).collect()
    }

    fn count(&self, want: impl Fn(&Command) -> bool) -> usize {
        self.heard.iter().filter(|(_, c)| want(c)).count()
    }

    /// When the board read `want`, in order.
    fn times_of(&self, want: Command) -> Vec<u64> {
        self.heard.iter().filter(|(_, c)| *c == want).map(|(t, _)| *t).collect()
    }
}

fn encode(m: &Message<'_>) -> Vec<u8> {
    let mut out = vec![0u8; m.encoded_len()];
    let n = m.encode(&mut out).expect("encodable");
    out.truncate(n);
    out
}

fn is_beep(c: &Command) -> bool {
    matches!(c, Command::Clock(ClockCommand::Beep { .. }))
}

/// A link and a board on either end of a wire, in virtual time.
struct Wire {
    link: Link,
    board: Board,
    now: u64,
    /// What the link reported, with the time.
    events: Vec<(u64, LinkEvent)>,
}

impl Wire {
    /// The port opens at time 0; the board hears the first bytes at once.
    fn open(board: Board) -> Wire {
        let mut w = Wire { link: Link::open(0, FAST), board, now: 0, events: Vec::new() };
        w.exchange();
        w
    }

    /// Moves bytes both ways until the line is quiet; collects the link's events.
    fn exchange(&mut self) {
        loop {
            let out = self.link.take_output();
            if out.is_empty() {
                break;
            }
            let reply = self.board.hear(self.now, &out);
            if !reply.is_empty() {
                self.link.on_bytes(self.now, &reply);
            }
        }
        self.collect();
    }

    fn collect(&mut self) {
        while let Some(e) = self.link.next_event() {
            self.events.push((self.now, e));
        }
    }

    /// Runs every deadline up to `end`, then stands at `end`.
    fn run_until(&mut self, end: u64) {
        loop {
            self.exchange();
            match self.link.next_deadline() {
                Some(at) if at <= end => {
                    // A deadline already past is due now.
                    let at = at.max(self.now);
                    self.now = at;
                    self.link.poll(at);
                    // Whatever was due ran: the next deadline lies ahead (no busy loop).
                    assert!(self.link.next_deadline().is_none_or(|d| d > at), "deadline still due at {at}");
                }
                _ => break,
            }
        }
        self.now = end;
    }

    /// Bytes from the board that it did not send as an answer, at `now`.
    fn board_says(&mut self, bytes: &[u8]) {
        self.link.on_bytes(self.now, bytes);
        self.exchange();
    }

    fn identified_at(&self) -> u64 {
        self.events.iter().find(|(_, e)| matches!(e, LinkEvent::Identified { .. })).expect("identified").0
    }

    fn lost(&self) -> Option<(u64, &str)> {
        self.events.iter().find_map(|(t, e)| match e {
            LinkEvent::Lost { reason } => Some((*t, reason.as_str())),
            _ => None,
        })
    }

    fn batteries(&self) -> Vec<(u8, bool)> {
        self.events
            .iter()
            .filter_map(|(_, e)| match e {
                LinkEvent::Battery { percent, charging } => Some((*percent, *charging)),
                _ => None,
            })
            .collect()
    }

    fn failed(&self) -> Vec<(u64, ClockCommand)> {
        self.events
            .iter()
            .filter_map(|(t, e)| match e {
                LinkEvent::ClockCommandFailed(c) => Some((*t, *c)),
                _ => None,
            })
            .collect()
    }

    fn noise(&self) -> Vec<usize> {
        self.events
            .iter()
            .filter_map(|(_, e)| match e {
                LinkEvent::Noise(n) => Some(*n),
                _ => None,
            })
            .collect()
    }
}

#[test]
fn the_handshake_identifies_the_board_and_finds_the_clock() {
    let link = Link::open(0, FAST);
    let mut w = Wire { link, board: Board::new(Clock::Acks, None), now: 0, events: Vec::new() };
    // Reset, update-nice mode, version, serial number and a dump: five bytes on the wire at
    // once.
    let hello = w.link.take_output();
    assert_eq!(hello, [0x40, 0x4B, 0x4D, 0x45, 0x42]);
    let reply = w.board.hear(0, &hello);
    w.link.on_bytes(0, &reply);
    w.exchange();
    assert!(w.link.is_identified());
    assert_eq!(w.link.serial(), Some("24518"));
    // After identification: the dump request again, the battery poll, the clock version query.
    assert_eq!(
        w.board.commands(),
        [
            Command::Reset,
            Command::SendUpdateNice,
            Command::SendVersion,
            Command::ReturnSerialNumber,
            Command::SendBoard,
            Command::SendBoard,
            Command::SendBatteryStatus,
            Command::Clock(ClockCommand::Version),
        ]
    );
    let events: Vec<LinkEvent> = w.events.iter().map(|(_, e)| e.clone()).collect();
    assert_eq!(
        events,
        [
            LinkEvent::Identified { serial: "24518".into(), version: (3, 1) },
            // The handshake's dump, then the one asked after it.
            LinkEvent::Board(Message::BoardDump(BoardDump::EMPTY)),
            LinkEvent::Board(Message::BoardDump(BoardDump::EMPTY)),
            LinkEvent::ClockFound { version: (2, 0) },
        ]
    );
}

#[test]
fn the_clock_version_command_has_its_wire_form() {
    let mut link = Link::open(0, FAST);
    link.take_output();
    let mut reply = encode(&Message::Version { major: 3, minor: 1 });
    reply.extend(encode(&Message::SerialNumber(b"00001")));
    link.on_bytes(5, &reply);
    assert_eq!(link.take_output(), [0x42, 0x4C, 0x2B, 0x03, 0x03, 0x09, 0x00]);
}

#[test]
fn keep_alives_go_every_period_and_an_answering_board_is_never_lost() {
    let mut w = Wire::open(Board::new(Clock::Acks, Some((80, false))));
    w.run_until(2_000);
    assert_eq!(w.lost(), None);
    // The handshake's serial number request, then one keep-alive per period from the
    // identification on.
    let keepalives = w.board.times_of(Command::ReturnSerialNumber)[1..].to_vec();
    assert_eq!(keepalives[0], w.identified_at());
    assert_eq!(keepalives.len(), 41, "{keepalives:?}");
    assert!(keepalives.windows(2).all(|p| p[1] - p[0] == FAST.keepalive_ms), "{keepalives:?}");
}

#[test]
fn unanswered_clock_commands_are_retried_then_given_up_one_at_a_time() {
    let mut link = Link::open(0, FAST);
    // Queued before the board answered: it waits behind the version query.
    link.queue_clock(ClockCommand::Beep { units: 2 }, 0);
    let mut w = Wire { link, board: Board::new(Clock::Absent, None), now: 0, events: Vec::new() };
    w.exchange();
    w.run_until(1_000);
    let id = w.identified_at();
    // Three attempts each, `clock_ack_ms` apart; the beep goes when the version query is
    // given up, and is given up three periods later.
    assert_eq!(
        w.failed(),
        [(id + 300, ClockCommand::Version), (id + 600, ClockCommand::Beep { units: 2 })],
        "{:?}",
        w.events
    );
    assert_eq!(w.board.times_of(Command::Clock(ClockCommand::Version)), [id, id + 100, id + 200]);
    assert_eq!(
        w.board.times_of(Command::Clock(ClockCommand::Beep { units: 2 })),
        [id + 300, id + 400, id + 500]
    );
    let sent = w.board.commands();
    let first_beep = sent.iter().position(is_beep).unwrap();
    let last_version = sent.iter().rposition(|c| *c == Command::Clock(ClockCommand::Version)).unwrap();
    assert!(first_beep > last_version, "{sent:?}");
    assert_eq!(w.lost(), None);
}

#[test]
fn an_acknowledged_clock_command_lets_the_next_one_go_at_once() {
    let mut w = Wire::open(Board::new(Clock::Acks, None));
    let id = w.identified_at();
    w.link.queue_clock(ClockCommand::Beep { units: 1 }, id);
    w.link.queue_clock(ClockCommand::Beep { units: 2 }, id);
    w.exchange();
    w.run_until(1_000);
    assert_eq!(w.failed(), []);
    let clock: Vec<Command> =
        w.board.commands().into_iter().filter(|c| matches!(c, Command::Clock(_))).collect();
    assert_eq!(
        clock,
        [
            Command::Clock(ClockCommand::Version),
            Command::Clock(ClockCommand::Beep { units: 1 }),
            Command::Clock(ClockCommand::Beep { units: 2 }),
        ]
    );
}

#[test]
fn an_error_ack_is_retried_once() {
    let mut link = Link::open(0, FAST);
    link.queue_clock(ClockCommand::Beep { units: 2 }, 0);
    let mut w = Wire { link, board: Board::new(Clock::Errors, None), now: 0, events: Vec::new() };
    w.exchange();
    w.run_until(1_000);
    // Each command is sent again at once on its first error ack and dropped on the second;
    // an answer is no silence, so nothing waits for a timeout.
    let id = w.identified_at();
    assert_eq!(w.board.times_of(Command::Clock(ClockCommand::Version)), [id, id]);
    assert_eq!(w.board.times_of(Command::Clock(ClockCommand::Beep { units: 2 })), [id, id]);
    assert_eq!(w.failed(), []);
}

#[test]
fn a_full_clock_queue_drops_the_oldest_command() {
    let mut w = Wire::open(Board::new(Clock::Absent, None));
    let id = w.identified_at();
    // The version query is in flight; the queue holds MAX_CLOCK_QUEUE behind it.
    let extra = 3;
    for units in 0..(MAX_CLOCK_QUEUE + extra) as u8 {
        w.link.queue_clock(ClockCommand::Beep { units }, id);
    }
    w.link.queue_clock(ClockCommand::Beep { units: 99 }, id);
    w.run_until(id + 20_000);
    let beeps: Vec<u8> = w
        .failed()
        .into_iter()
        .filter_map(|(_, c)| match c {
            ClockCommand::Beep { units } => Some(units),
            _ => None,
        })
        .collect();
    let kept: Vec<u8> = ((extra + 1) as u8..(MAX_CLOCK_QUEUE + extra) as u8).chain([99]).collect();
    assert_eq!(beeps, kept);
}

#[test]
fn a_bluetooth_board_reports_its_battery_at_the_handshake_and_then_every_poll_period() {
    let mut w = Wire::open(Board::new(Clock::Acks, Some((42, true))));
    w.run_until(400);
    let answers = w.batteries();
    assert!(answers.len() >= 3, "{:?}", w.events);
    assert!(answers.iter().all(|a| *a == (42, true)), "{answers:?}");
    // The first request goes right after the dump request that follows the handshake.
    let sent = w.board.commands();
    let dump = sent.iter().rposition(|c| *c == Command::SendBoard).unwrap();
    assert_eq!(sent[dump + 1], Command::SendBatteryStatus, "{sent:?}");
    // Then one a period: never two within a period, never more than the periods allow.
    let polls = w.board.times_of(Command::SendBatteryStatus);
    assert_eq!(polls[0], w.identified_at());
    assert!(polls.windows(2).all(|p| p[1] - p[0] >= FAST.battery_poll_ms), "{polls:?}");
    assert!(polls.len() as u64 <= 400 / FAST.battery_poll_ms + 1, "{polls:?}");
    assert_eq!(answers.len(), polls.len());
}

#[test]
fn a_bluetooth_board_that_stops_answering_is_polled_one_request_at_a_time() {
    let mut w = Wire::open(Board::new(Clock::Acks, Some((42, false))));
    w.run_until(200);
    let before = w.board.times_of(Command::SendBatteryStatus).len();
    // The board still answers keep-alives, not battery requests.
    w.board.battery = None;
    w.run_until(2_000);
    let polls = w.board.times_of(Command::SendBatteryStatus);
    // A board that once answered is never given up; one request a period.
    assert!(polls.len() > before + 10, "{polls:?}");
    assert!(polls.windows(2).all(|p| p[1] - p[0] >= FAST.battery_poll_ms), "{polls:?}");
    assert_eq!(w.batteries().len(), before);
}

#[test]
fn the_battery_period_counts_from_the_handshake_answer() {
    // A Bluetooth board that answers the handshake only at its third attempt, later than
    // a battery period after the port opened: one request at the handshake, the next a
    // period later, not a second one at once.
    let mut board = Board::new(Clock::Acks, Some((42, false)));
    board.mute = true;
    let mut w = Wire::open(board);
    w.run_until(150);
    w.board.mute = false;
    w.run_until(1_000);
    let id = w.identified_at();
    assert_eq!(id, 200);
    let polls = w.board.times_of(Command::SendBatteryStatus);
    assert_eq!(polls[0], id);
    assert!(polls.windows(2).all(|p| p[1] - p[0] >= FAST.battery_poll_ms), "{polls:?}");
}

#[test]
fn a_usb_board_that_ignores_battery_requests_is_asked_battery_misses_times() {
    let mut w = Wire::open(Board::new(Clock::Acks, None));
    w.run_until(600);
    assert!(w.link.is_identified());
    assert_eq!(w.batteries(), []);
    // The handshake's request and two more periods, then none (600 ms is many periods).
    assert_eq!(w.board.count(|c| *c == Command::SendBatteryStatus), BATTERY_MISSES as usize);
    assert_eq!(w.lost(), None);
}

#[test]
fn the_event_log_arrives_whole_in_100_byte_chunks_after_3000_nops() {
    let mut w = Wire::open(Board::new(Clock::Acks, None));
    assert!(w.link.request_event_log());
    w.exchange();
    assert_eq!(w.board.commands().last(), Some(&Command::SendEeMoves));
    let sq = |i| DgtSquare::new(i).unwrap();
    let log = [
        EeEvent::PowerUp,
        EeEvent::Field { square: sq(52), piece: PieceCode::Empty, quick: false },
        EeEvent::Field { square: sq(36), piece: PieceCode::WhitePawn, quick: true },
    ];
    let mut events = vec![EeEvent::Nop; 3000];
    events.extend(log);
    events.push(EeEvent::Eof);
    let mut bytes = vec![0u8; 8192];
    let n = dgt_protocol::ee::encode_ee_moves(&events, &mut bytes).unwrap();
    // As a serial line delivers it: a chunk every 10 ms, keep-alives going on between
    // (the board answers them after the log).
    w.board.mute = true;
    for chunk in bytes[..n].chunks(100) {
        assert!(!w.events.iter().any(|(_, e)| matches!(e, LinkEvent::EventLog(_))), "early");
        let next = w.now + 10;
        w.run_until(next);
        w.board_says(chunk);
    }
    let logs: Vec<&Vec<EeEvent>> = w
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            LinkEvent::EventLog(l) => Some(l),
            _ => None,
        })
        .collect();
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0].len(), 3003);
    assert!(logs[0][..3000].iter().all(|e| *e == EeEvent::Nop));
    assert_eq!(logs[0][3000..], log);
    assert_eq!(w.noise(), []);
    assert_eq!(w.lost(), None);
}

#[test]
fn a_limited_link_keeps_the_newest_events_of_a_long_log() {
    let mut w = Wire::open(Board::new(Clock::Acks, None));
    w.link.limit_event_log(100);
    assert!(w.link.request_event_log());
    w.exchange();
    let sq = |i| DgtSquare::new(i).unwrap();
    let newest = [
        EeEvent::Field { square: sq(52), piece: PieceCode::Empty, quick: false },
        EeEvent::Field { square: sq(36), piece: PieceCode::WhitePawn, quick: true },
    ];
    let mut events = vec![EeEvent::PowerUp];
    events.extend(vec![EeEvent::Nop; 1000]);
    events.extend(newest);
    events.push(EeEvent::Eof);
    let mut bytes = vec![0u8; 4096];
    let n = dgt_protocol::ee::encode_ee_moves(&events, &mut bytes).unwrap();
    w.board.mute = true;
    w.board_says(&bytes[..n]);
    let (log, room) = w
        .events
        .iter()
        .find_map(|(_, e)| match e {
            LinkEvent::EventLog(l) => Some((l.clone(), l.capacity())),
            _ => None,
        })
        .expect("the log");
    assert!(log.len() <= 100 && log.len() > 75, "{} events kept", log.len());
    // Its room was taken once, at the limit: the list never grew past it.
    assert_eq!(room, 100);
    assert_eq!(log[log.len() - 2..], newest);
    assert!(!log.contains(&EeEvent::PowerUp), "the oldest went");
}

#[test]
fn the_event_log_is_not_asked_for_before_the_handshake() {
    let mut link = Link::open(0, FAST);
    link.take_output();
    assert!(!link.request_event_log());
    link.request_dump();
    assert_eq!(link.take_output(), []);
}

#[test]
fn silence_ends_the_link() {
    let mut w = Wire::open(Board::new(Clock::Acks, None));
    let id = w.identified_at();
    // The board answered the handshake and what came with it, then goes quiet.
    w.board.mute = true;
    w.run_until(5_000);
    let (at, reason) = w.lost().expect("lost");
    assert!(reason.starts_with("no data"), "{reason}");
    // Noticed at the first keep-alive past the silence limit.
    assert!(at > id + FAST.silence_ms && at <= id + FAST.silence_ms + FAST.keepalive_ms, "lost at {at}");
    assert!(w.link.is_lost());
    assert_eq!(w.events.iter().filter(|(_, e)| matches!(e, LinkEvent::Lost { .. })).count(), 1);
    // Nothing more is sent, reported or due.
    assert_eq!(w.link.next_deadline(), None);
    let (heard, events) = (w.board.heard.len(), w.events.len());
    w.link.poll(10_000);
    w.link.on_bytes(10_000, &encode(&Message::SerialNumber(b"24518")));
    w.exchange();
    assert_eq!((w.board.heard.len(), w.events.len()), (heard, events));
}

#[test]
fn an_unanswered_handshake_ends_the_link_after_the_configured_attempts() {
    let mut board = Board::new(Clock::Acks, None);
    board.mute = true;
    let mut w = Wire::open(board);
    w.run_until(5_000);
    assert_eq!(
        w.lost(),
        Some((
            FAST.handshake_retry_ms * u64::from(FAST.handshake_attempts),
            "no answer to the handshake after 3 attempts"
        ))
    );
    assert_eq!(w.board.times_of(Command::SendVersion), [0, 100, 200]);
    assert_eq!(w.board.times_of(Command::SendUpdateNice), [0, 100, 200]);
    assert_eq!(w.board.count(|c| *c == Command::Reset), 1);
    assert!(!w.link.is_identified());
}

#[test]
fn a_late_handshake_answer_is_taken_at_a_retry() {
    let mut board = Board::new(Clock::Acks, None);
    board.mute = true;
    let mut w = Wire::open(board);
    w.run_until(150);
    w.board.mute = false;
    w.run_until(1_000);
    assert_eq!(w.identified_at(), 200);
    assert_eq!(w.lost(), None);
}

#[test]
fn garbage_gives_noise_events_and_never_breaks_the_conversation() {
    let mut board = Board::new(Clock::Acks, Some((70, false)));
    // Three stray bytes before every answer of the board.
    board.noise = vec![0x00, 0x7F, 0x33];
    let mut w = Wire::open(board);
    w.run_until(1_000);
    assert!(w.link.is_identified());
    assert!(w.events.iter().any(|(_, e)| *e == LinkEvent::ClockFound { version: (2, 0) }));
    assert!(!w.batteries().is_empty());
    assert_eq!(w.lost(), None);
    let noise = w.noise();
    assert!(noise.len() > 10 && noise.iter().all(|n| *n == 3), "{noise:?}");

    // Stray bytes, then a field update: the noise, then the update.
    w.events.clear();
    let update =
        encode(&Message::FieldUpdate(FieldUpdate::new(DgtSquare::new(36).unwrap(), PieceCode::WhitePawn)));
    let mut bytes = vec![0x01, 0x02, 0x03];
    bytes.extend(&update);
    w.board_says(&bytes);
    assert_eq!(
        w.events.iter().map(|(_, e)| e.clone()).collect::<Vec<_>>(),
        [
            LinkEvent::Noise(3),
            LinkEvent::Board(Message::FieldUpdate(FieldUpdate::new(
                DgtSquare::new(36).unwrap(),
                PieceCode::WhitePawn
            )))
        ]
    );
    // A message cut short by the next header: its bytes are noise, the next one counts.
    w.events.clear();
    let mut bytes = update[..4].to_vec();
    bytes.extend(&update);
    w.board_says(&bytes);
    assert!(matches!(w.events[..], [(_, LinkEvent::Noise(4)), (_, LinkEvent::Board(_))]), "{:?}", w.events);
    // Trailing garbage is reported when the read ends, not held until the next message.
    w.events.clear();
    w.board_says(&[0x05, 0x06]);
    assert!(matches!(w.events[..], [(_, LinkEvent::Noise(2))]), "{:?}", w.events);
    // Bytes with the top bit set are headers to the decoder: no message, no panic.
    w.events.clear();
    w.board_says(&[0xFF, 0xFF, 0x80, 0x00, 0x00, 0x8D, 0x7F, 0x7F]);
    assert!(w.events.iter().all(|(_, e)| matches!(e, LinkEvent::Noise(_))), "{:?}", w.events);
    w.board.noise.clear();
    w.run_until(2_000);
    assert_eq!(w.lost(), None);
}

#[test]
fn board_messages_before_identification_are_dropped() {
    let mut link = Link::open(0, FAST);
    link.take_output();
    let sq = DgtSquare::new(36).unwrap();
    let update = encode(&Message::FieldUpdate(FieldUpdate::new(sq, PieceCode::WhitePawn)));
    link.on_bytes(10, &update);
    link.on_bytes(11, &encode(&Message::BoardDump(BoardDump::EMPTY)));
    // The version alone does not identify the board either.
    link.on_bytes(12, &encode(&Message::Version { major: 3, minor: 1 }));
    assert_eq!(link.next_event(), None);
    assert!(!link.is_identified());
    // The serial number completes it; a field update in the same read after it counts.
    let mut bytes = encode(&Message::SerialNumber(b"24518"));
    bytes.extend(&update);
    link.on_bytes(13, &bytes);
    assert_eq!(link.next_event(), Some(LinkEvent::Identified { serial: "24518".into(), version: (3, 1) }));
    assert_eq!(
        link.next_event(),
        Some(LinkEvent::Board(Message::FieldUpdate(FieldUpdate::new(sq, PieceCode::WhitePawn))))
    );
    assert_eq!(link.next_event(), None);
}

/// Bytes of a bad line: a fixed pseudo-random stream (header bytes included), that decodes
/// to nothing the link can use.
fn line_noise(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 8) as u8
        })
        .collect()
}

#[test]
fn a_board_that_sends_only_line_noise_is_lost_after_the_silence_time() {
    let mut w = Wire::open(Board::new(Clock::Acks, None));
    let id = w.identified_at();
    // The board stops answering; the line carries junk every 20 ms from now on.
    w.board.mute = true;
    let mut seed = 7;
    while w.now < 2_000 && w.lost().is_none() {
        let next = w.now + 20;
        w.run_until(next);
        seed += 1;
        w.board_says(&line_noise(16, seed));
    }
    let (at, reason) = w.lost().expect("a board that sends only noise is lost");
    assert!(reason.contains("line noise"), "{reason}");
    // As for a silent board: at the first keep-alive past the silence limit.
    assert!(at > id + FAST.silence_ms && at <= id + FAST.silence_ms + FAST.keepalive_ms, "lost at {at}");
    assert!(!w.noise().is_empty());
}

#[test]
fn line_noise_between_answers_does_not_lose_a_board_that_answers() {
    let mut w = Wire::open(Board::new(Clock::Acks, None));
    // Junk every 20 ms between the board's answers to the keep-alives: the answers count.
    let mut seed = 3;
    while w.now < 2_000 {
        let next = w.now + 20;
        w.run_until(next);
        seed += 1;
        w.board_says(&line_noise(16, seed));
    }
    assert_eq!(w.lost(), None);
}

#[test]
fn a_board_that_answers_the_handshake_with_noise_only_says_so() {
    let mut board = Board::new(Clock::Acks, None);
    board.mute = true;
    let mut w = Wire::open(board);
    let mut seed = 11;
    while w.now < 1_000 && w.lost().is_none() {
        let next = w.now + 20;
        w.run_until(next);
        seed += 1;
        w.board_says(&line_noise(16, seed));
    }
    let (_, reason) = w.lost().expect("lost");
    assert!(reason.starts_with("no answer to the handshake after 3 attempts"), "{reason}");
    assert!(reason.contains("line noise"), "{reason}");
}
