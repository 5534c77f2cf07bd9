//! A chain of DGT boards on one serial line in DGT's bus mode, sans-IO: [`BusPoller`] owns
//! the line (bytes and the time in, bytes to write out), finds the boards on it, polls them
//! in turn, and plays, for each board, the board's side of a single-board serial line: a
//! *virtual line* whose other end is that board's own [`crate::Link`] and
//! [`crate::BoardSession`].
//!
//! # The seam: a virtual single-board line per board
//! A board session is the whole judgement of one board (tracker, reconciliation after an
//! outage, health, alerts, operator actions), and the offline accuracy sweeps run that very
//! code. A second way into it (typed messages through a new entry point, its own timers, its
//! own outage handling) would be a path the sweeps never take. So the poller does not call
//! the session: it answers each board's link exactly as a single board in update mode
//! would, and the host hands that virtual line to the board's task like a serial port.
//! Nothing in the link, the session or the board task knows about the bus; what they see
//! is a board whose messages come in bursts, one burst per poll.
//!
//! What crosses the seam, bus reply to single-board message:
//!
//! | bus | virtual line |
//! |---|---|
//! | field event in the changes (`SEND_CHANGES`) | `FIELD_UPDATE` (in update modes), in the EEPROM's order |
//! | time event in the changes (a lever press: the halted side's display) | `BWTIME`: the last clock reading with that display and the lever turned (after a reading of the clock running, presser's side up, when the last one showed it stopped); the clock is read right after. The first press of what may be a new game waits for that reading, with what followed it in the changes, and is built on it, after the clock as set (stopped, presser's side up) |
//! | power-up (or watchdog) in the changes | nothing for its listing of the pieces (not changes); a board dump is read |
//! | clock reading (`SEND_CLK`, every [`BusTiming::clock_period_ms`] and after a press) | `BWTIME` when it differs from the last one sent (update-nice), every one in `43` mode; a running clock's reading whose lever shows a press the changes have not brought yet is held back once (the press comes with the next changes, in its place) |
//! | board dump (`SEND_BRD`) | `BOARD_DUMP` |
//! | every EEPROM event the changes brought | the event log (`49`), as the board's own `EE_MOVES` |
//!
//! and link command to bus: `42` reads a dump, `41` the clock, `45`/`4D`/`46` are answered
//! at once (serial number: the address as five digits; version: the bus version reply;
//! address), `49` with the event log above, `40`/`43`/`44`/`4B` set the virtual board's
//! mode. Bus mode carries no clock commands: a clock version query is acknowledged (version
//! 0.0, unknown) once a clock reading shows a clock, and other clock commands, and `47`,
//! `4C`, `55`, get no answer, as from a board that cannot reach its clock or does not know
//! the command.
//!
//! Why these choices:
//! - Changes come from the board's EEPROM, which logs every change in order, so the session
//!   sees the same field updates a single board sends, late by at most a polling cycle.
//! - A press is a time event in the changes, in its place between the field events: turned
//!   into a reading there, the tracker sees the move, then the press, then the next move,
//!   as on a single board, even when all three fall in one polling cycle. The true reading
//!   follows within the same turn.
//! - The first press after a start position (in the changes or a dump)
//!   is not built on the last reading: that may be the previous game's clock (the arbiter
//!   sets a new game's clock between two readings of it). It waits for the reading after
//!   it (read before any dump of that turn, a few milliseconds later) and goes out built on
//!   that one, after the readings a single board sends of a clock being set and started
//!   (stopped, then running, the presser's lever up): the tracker learns White's side
//!   from them.
//! - What a board logged while no line was open to it (before it was found, while it was
//!   off the chain) is not sent as field updates: it would arrive after the reconnect dump,
//!   out of order. It goes to the event log, which the session reads when the reconnect
//!   dump differs from the board it kept (its reconciliation, as after a USB unplug).
//! - A board that stops answering is *gone*: the caller closes its virtual line, the
//!   session sees its port lost (`not_responding`). Answering again, it is found again and
//!   gets a new line; the session reconciles.
//!
//! # Finding the boards (fact sheet 2.3, 2.4; DGT's header, "Tips for usage")
//! The opening LiveChess sends: `40 40 40` (every board to single-board idle), `47`, `46`,
//! then `4A` (every board to bus mode) and a version request to address 0. Then rounds of
//! discovery: `IGNORE_NEXT_BUS_PING` to every board found (each answers at once and will not
//! answer the next broadcast), a ping to address 0 (the others answer at a random moment of
//! 1.1 s), until a round finds no new board and shows no sign of a collision. Boards that
//! went away are pinged by address every [`BusTiming::probe_gone_ms`]; a new discovery round
//! runs every [`BusTiming::rediscover_ms`] for boards added to the chain.
//!
//! # Polling (the latency bound)
//! Boards take turns, in address order. A turn is: the changes (`SEND_CHANGES`); a dump
//! when the session asked for one or the board restarted (`SEND_BRD`); the clock when it
//! is due, after a press or a dump, or when the session asked (`SEND_CLK`). The reading
//! after a dump is sent even when unchanged: a game that dump starts learns White's side
//! from the lever of its first reading. One command is on the line at
//! a time (replies share it), each waits [`BusTiming::reply_timeout_ms`] for the start of
//! its reply ("allow a time-out of say 80 ms"), longer while a reply is arriving. A reply
//! with a bad checksum is asked again (`REPEAT_CHANGES` for changes, as DGT's header says:
//! `SEND_CHANGES` would discard them); a changes reply lost for good means a dump. So a
//! board's changes are at most one cycle old: N turns of one changes poll (about 15 ms on
//! a 9600-baud line), plus a clock reading per board per second (about 20 ms each).
//!
//! # Unconfirmed
//! How a board answers a version request sent to address 0 (LiveChess sends one; here it is
//! handled as a ping's answers are), and whether `SEND_CHANGES` after a board's power-up
//! starts at the power-up or where the last poll left off (both are handled: a power-up in
//! the changes means a dump, and its listing is not taken for changes).

use std::collections::{BTreeMap, VecDeque};

use dgt_protocol::bus::{BROADCAST, BusReplyKind};
use dgt_protocol::ee::encode_ee_moves;
use dgt_protocol::{
    BoardDump, BusCommand, BusCommandKind, BusData, BusDecoded, BusDecoder, BusReply, Bwtime, ClockAck,
    ClockCommand, ClockSide, ClockTimes, Command, CommandParser, Decoded, Decoder, DgtSquare, EeEvent,
    FieldUpdate, HostInput, Message, Orientation, PieceCode,
};

/// Most EEPROM bytes kept per board for its event log (a board's own buffer holds 0x1F00).
pub const EVENT_LOG_BYTES: usize = 0x1F00;

/// Timing of the bus, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BusTiming {
    /// How long a command waits for the start of its reply, from when it was written.
    pub reply_timeout_ms: u64,
    /// How long the opening's single-board answers (trademark, address) may take.
    pub opening_ms: u64,
    /// How long a broadcast's answers are collected (the boards spread them over 1.1 s).
    pub broadcast_window_ms: u64,
    /// Discovery rounds at most, per discovery.
    pub max_rounds: u32,
    /// How often each board's clock is read.
    pub clock_period_ms: u64,
    /// Missed replies in a row, and ...
    pub miss_limit: u32,
    /// ... time since the last reply, after which a board is gone.
    pub gone_after_ms: u64,
    /// How often a board that went away is pinged.
    pub probe_gone_ms: u64,
    /// How often the chain is searched for new boards (each search stops polling for about
    /// 1.5 s).
    pub rediscover_ms: u64,
    /// When one changes packet holds a press and more after it, how much later what
    /// follows the press goes out on the virtual line than the press: a single board's
    /// session sees a press with the board still after it before the next move (it times a
    /// press against the board's changes), and this restores that gap.
    pub press_gap_ms: u64,
}

impl Default for BusTiming {
    fn default() -> Self {
        BusTiming {
            reply_timeout_ms: 80,
            opening_ms: 400,
            broadcast_window_ms: 1_300,
            max_rounds: 8,
            clock_period_ms: 1_000,
            miss_limit: 3,
            gone_after_ms: 1_500,
            probe_gone_ms: 2_000,
            rediscover_ms: 300_000,
            press_gap_ms: 400,
        }
    }
}

/// What the poller reports, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BusEvent {
    /// A board is on the chain (found, or back): open a virtual line for it
    /// ([`BusPoller::line_input`], [`BusPoller::take_line_output`]).
    Found {
        /// Its address.
        address: u16,
        /// Its serial number as its virtual line answers `45`: the address, five digits.
        serial: String,
        /// Its firmware version.
        version: (u8, u8),
    },
    /// A board stopped answering: close its virtual line.
    Gone {
        /// Its address.
        address: u16,
        /// Why, for people.
        reason: String,
    },
}

/// Counters, for logs and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BusStats {
    /// Commands written.
    pub commands: u64,
    /// Replies that came back good.
    pub replies: u64,
    /// Commands whose reply never came.
    pub timeouts: u64,
    /// Replies with a bad checksum.
    pub bad_checksums: u64,
    /// `REPEAT_CHANGES` sent.
    pub repeats: u64,
    /// Bytes thrown away by the decoder.
    pub noise_bytes: u64,
    /// Polling cycles completed (every present board had a turn).
    pub cycles: u64,
    /// The last cycle's length, ms.
    pub last_cycle_ms: u64,
    /// The longest cycle so far, ms.
    pub max_cycle_ms: u64,
}

/// The serial number a board on the bus is known by: its address, five digits.
pub fn serial_of(address: u16) -> String {
    format!("{address:05}")
}

/// The virtual board's single-board mode, as its link set it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Idle,
    Update,
    UpdateBoard,
    UpdateNice,
}

impl Mode {
    fn fields(self) -> bool {
        self != Mode::Idle
    }
    fn clock(self) -> bool {
        matches!(self, Mode::Update | Mode::UpdateNice)
    }
}

/// A board's virtual single-board line.
#[derive(Debug)]
struct VirtualLine {
    mode: Mode,
    parser: CommandParser,
    /// Bytes for the session.
    out: Vec<u8>,
    /// Bytes held back until their time (ms), in order: what followed a press in the same
    /// changes packet. Anything sent while some are held goes after them.
    later: VecDeque<(u64, Vec<u8>)>,
    /// A press went out in the packet being forwarded: the next field event starts a part
    /// held back until this time.
    gap_until: Option<u64>,
    /// The last BWTIME sent (update-nice sends only changes).
    last_sent: Option<[u8; 7]>,
    /// `41` asked: the next reading goes out whatever the mode.
    clock_asked: bool,
    /// A clock version query waits for a reading that shows a clock.
    version_query: bool,
    /// A game may have begun on the board since the last press (the start position
    /// appeared, or a dump that may start one): the next press is preceded by a reading of
    /// the clock's start.
    new_game: bool,
}

impl VirtualLine {
    fn new() -> VirtualLine {
        VirtualLine {
            mode: Mode::Idle,
            parser: CommandParser::new(),
            out: Vec::new(),
            later: VecDeque::new(),
            gap_until: None,
            last_sent: None,
            clock_asked: false,
            version_query: false,
            // A new line's first dump says whether a game may begin (a board back mid-game
            // goes on with its clock).
            new_game: false,
        }
    }

    fn send(&mut self, msg: &Message<'_>) {
        let out = match self.later.back_mut() {
            Some((_, held)) => held,
            None => &mut self.out,
        };
        let at = out.len();
        out.resize(at + msg.encoded_len(), 0);
        match msg.encode(&mut out[at..]) {
            Ok(n) => out.truncate(at + n),
            Err(e) => {
                tracing::error!(error = %e, "message not encodable");
                out.truncate(at);
            }
        }
    }

    /// Raw bytes for the session, after anything held back.
    fn send_raw(&mut self, bytes: &[u8]) {
        match self.later.back_mut() {
            Some((_, held)) => held.extend_from_slice(bytes),
            None => self.out.extend_from_slice(bytes),
        }
    }

    /// The next field event of the packet being forwarded, and what follows it, wait
    /// `gap` ms after what went before (see [`BusTiming::press_gap_ms`]).
    fn hold_next(&mut self, now: u64, gap: u64) {
        let from = self.later.back().map_or(now, |(t, _)| *t);
        self.gap_until = Some(from + gap);
    }

    /// A field event is next: when a press went before it in this packet, it and what
    /// follows are held back.
    fn before_field(&mut self) {
        if let Some(t) = self.gap_until.take() {
            self.later.push_back((t, Vec::new()));
        }
    }

    /// Moves what is due at `now` to the session's bytes.
    fn release(&mut self, now: u64) {
        while self.later.front().is_some_and(|(t, _)| *t <= now) {
            if let Some((_, bytes)) = self.later.pop_front() {
                self.out.extend_from_slice(&bytes);
            }
        }
    }

    /// A clock reading: sent as update-nice (or `43`, or an answer to `41`) would; `force`
    /// sends it even when it repeats the last one.
    fn times(&mut self, t: ClockTimes, real: bool, force: bool) {
        let payload = t.to_payload();
        let send = std::mem::take(&mut self.clock_asked)
            || (self.mode.clock()
                && (force || self.mode == Mode::Update && real || self.last_sent != Some(payload)));
        if send {
            self.last_sent = Some(payload);
            self.send(&Message::Bwtime(Bwtime::Times(t)));
        }
        if self.version_query && !t.status.no_clock() && self.mode.clock() {
            self.version_query = false;
            // Bus mode reaches no clock command: the version is unknown (0.0).
            let ack = ClockAck::from_ack_bytes([ClockAck::ACK_OK, 0x09, 0x00, 0x00]);
            self.send(&Message::Bwtime(Bwtime::Ack(ack)));
        }
    }
}

/// One board on the chain.
#[derive(Debug)]
struct Board {
    address: u16,
    version: Option<(u8, u8)>,
    present: bool,
    /// Reported with [`BusEvent::Found`] (a line is open).
    announced: bool,
    misses: u32,
    last_heard: u64,
    next_probe: u64,
    /// The next changes are what it logged while no line was open: recorded only.
    fresh: bool,
    /// The last changes packet failed: ask again with `REPEAT_CHANGES`.
    repeat: bool,
    /// The last changes packet's bytes (to tell a stale repeat).
    last_changes: Vec<u8>,
    want_dump: bool,
    want_clock: bool,
    next_clock: u64,
    /// The last reading sent (read, or made from a logged press).
    last_times: Option<ClockTimes>,
    /// A reading of the running clock was held back: its lever showed a press the changes
    /// had not logged yet (see [`BusPoller::clock`]).
    held: bool,
    /// No reading went out since a game may have begun: the next running one may show a
    /// first press the changes have not brought yet, and its lever cannot tell.
    game_unread: bool,
    /// Its line is new (found, or back) and no reading went out on it since: the last one
    /// is from before, and a press is not built on it.
    stale: bool,
    /// What the changes brought from a press on that had no reading to build on (no
    /// clock read yet, or a game may have begun since the last reading, whose clock may be
    /// a new one): forwarded, in order, once the clock is read after it.
    deferred: Vec<EeEvent>,
    /// Every EEPROM event the changes brought, for the event log.
    log: VecDeque<EeEvent>,
    log_bytes: usize,
    /// The log holds a power-up (or a dump's listing standing for one).
    anchored: bool,
    line: Option<VirtualLine>,
    /// Its line was closed by the caller while the board is still there: offered again
    /// from this time.
    reoffer: Option<u64>,
}

impl Board {
    fn new(address: u16, now: u64) -> Board {
        Board {
            address,
            version: None,
            present: true,
            announced: false,
            misses: 0,
            last_heard: now,
            next_probe: now,
            fresh: true,
            repeat: false,
            last_changes: Vec::new(),
            want_dump: false,
            want_clock: true,
            next_clock: now,
            last_times: None,
            held: false,
            game_unread: true,
            stale: true,
            deferred: Vec::new(),
            log: VecDeque::new(),
            log_bytes: 0,
            anchored: false,
            line: None,
            reoffer: None,
        }
    }

    fn record(&mut self, e: EeEvent) {
        let len = ee_len(&e);
        self.log.push_back(e);
        self.log_bytes += len;
        while self.log_bytes > EVENT_LOG_BYTES {
            match self.log.pop_front() {
                Some(old) => self.log_bytes -= ee_len(&old),
                None => self.log_bytes = 0,
            }
        }
        if matches!(e, EeEvent::PowerUp) {
            self.anchored = true;
        }
    }

    /// Sends changes on the virtual line (see the module docs). A press with no reading to
    /// build on (none yet, or a game may have begun since the last one: its clock may be
    /// new) is deferred with all that follows it until the clock is read; `fresh` is that
    /// reading, taken after the deferred press.
    fn forward(&mut self, now: u64, gap: u64, events: &[EeEvent], mut fresh: Option<ClockTimes>) {
        let address = self.address;
        if let Some(line) = self.line.as_mut() {
            line.gap_until = None;
        }
        // In a power-up's listing of the pieces (not changes), and the squares it named.
        let (mut listing, mut listed) = (false, 0u64);
        // A press went out from this packet; the last event forwarded was a field event.
        let (mut pressed, mut after_field) = (false, false);
        for (i, &e) in events.iter().enumerate() {
            if !self.deferred.is_empty() {
                self.deferred.push(e);
                continue;
            }
            let Some(line) = self.line.as_mut() else { return };
            match e {
                EeEvent::Field { square, piece, .. }
                    if listing && !piece.is_empty() && listed & (1u64 << square.index()) == 0 =>
                {
                    listed |= 1u64 << square.index();
                }
                EeEvent::Field { square, piece, quick } => {
                    // A power-up's listing names each piece once and no empty square: an
                    // empty square, or one listed already, is a change made after it.
                    listing = false;
                    if line.mode.fields() {
                        if pressed && after_field && !quick {
                            // A later scan's change (the board logged it 250 ms or more after
                            // the one before), after a press: another ply's, possibly.
                            line.hold_next(now, gap);
                        }
                        line.before_field();
                        line.send(&Message::FieldUpdate(FieldUpdate::new(square, piece)));
                        after_field = true;
                    }
                }
                EeEvent::Time { side, time } => {
                    listing = false;
                    tracing::trace!(address, ?side, ?time, "press in the changes");
                    let replay = fresh.take();
                    let base = replay.or(self.last_times).filter(|t| !t.status.no_clock());
                    match base {
                        Some(base) if replay.is_some() || !(line.new_game || self.stale) => {
                            self.last_times = Some(press_readings(base, side, time, line, replay.is_some()));
                            line.hold_next(now, gap);
                            pressed = true;
                            after_field = false;
                            self.held = false;
                            self.game_unread = false;
                        }
                        _ if replay.is_some() => {
                            // The clock read after it shows none: no reading to send.
                        }
                        _ => {
                            tracing::trace!(address, "press deferred until the clock is read");
                            self.deferred.extend_from_slice(&events[i..]);
                            return;
                        }
                    }
                }
                EeEvent::PowerUp | EeEvent::WatchdogAction => {
                    listing = true;
                    listed = 0;
                }
                EeEvent::BeginPos | EeEvent::BeginPosRotated | EeEvent::FourRows => {
                    // A game may begin: its clock is new to the session.
                    listing = false;
                    line.new_game = true;
                    self.game_unread = true;
                }
                _ => listing = false,
            }
        }
        if let Some(line) = self.line.as_mut() {
            line.gap_until = None;
        }
    }

    /// The event log as the board's `EE_MOVES` message would carry it.
    fn event_log(&self) -> Vec<u8> {
        let mut events: Vec<EeEvent> = self.log.iter().copied().collect();
        events.push(EeEvent::Eof);
        let mut out = vec![0u8; 3 + 3 * events.len()];
        match encode_ee_moves(&events, &mut out) {
            Ok(n) => out.truncate(n),
            Err(_) => out.clear(),
        }
        out
    }
}

fn ee_len(e: &EeEvent) -> usize {
    match e {
        EeEvent::Malformed { len, .. } => usize::from(*len).max(1),
        other => other.encode(&mut [0u8; 3]).unwrap_or(1),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Broadcast {
    Version,
    Ping,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    /// The single-board opening is on the line until `until`.
    Opening { until: u64 },
    /// Every other found board is told to ignore the next broadcast ping.
    Silence { round: u32, queue: VecDeque<u16> },
    /// A broadcast's answers are collected until `until`.
    Window { kind: Broadcast, round: u32, until: u64, new: bool, doubt: bool },
    /// Boards take turns.
    Poll,
}

#[derive(Clone, Copy, Debug)]
struct InFlight {
    cmd: BusCommand,
    deadline: u64,
    /// A repeat of the changes: its answer may be the previous packet again.
    repeat: bool,
}

/// The board whose turn it is, and what is left of it.
#[derive(Clone, Debug)]
struct Turn {
    address: u16,
    todo: VecDeque<BusCommandKind>,
    /// Bad or lost replies in this turn.
    retries: u32,
}

/// A chain of boards on one line. See the module docs.
#[derive(Debug)]
pub struct BusPoller {
    timing: BusTiming,
    single: Box<Decoder<256>>,
    decoder: Box<BusDecoder<8192>>,
    phase: Phase,
    boards: BTreeMap<u16, Board>,
    turn: Option<Turn>,
    /// The last board that had a turn.
    cursor: Option<u16>,
    in_flight: Option<InFlight>,
    last_rx: u64,
    next_discovery: u64,
    cycle_start: u64,
    out: Vec<u8>,
    events: VecDeque<BusEvent>,
    stats: BusStats,
}

/// The byte time of a 9600-baud line, rounded up, in microseconds.
const BYTE_US: u64 = 1_042;

impl BusPoller {
    /// A poller on a line opened at `now`: the opening is written at once (see the module
    /// docs).
    pub fn open(now: u64, timing: BusTiming) -> BusPoller {
        let mut p = BusPoller {
            timing,
            single: Box::new(Decoder::new()),
            decoder: Box::new(BusDecoder::new()),
            phase: Phase::Opening { until: now + timing.opening_ms },
            boards: BTreeMap::new(),
            turn: None,
            cursor: None,
            in_flight: None,
            last_rx: now,
            next_discovery: now + timing.rediscover_ms,
            cycle_start: now,
            out: Vec::new(),
            events: VecDeque::new(),
            stats: BusStats::default(),
        };
        p.out.extend_from_slice(&[0x40, 0x40, 0x40, 0x47, 0x46]);
        p
    }

    /// The timing in use.
    pub fn timing(&self) -> BusTiming {
        self.timing
    }

    /// The counters.
    pub fn stats(&self) -> BusStats {
        self.stats
    }

    /// True while the first discovery runs.
    pub fn discovering(&self) -> bool {
        !matches!(self.phase, Phase::Poll)
    }

    /// The addresses of the boards on the chain now.
    pub fn present(&self) -> Vec<u16> {
        self.boards.values().filter(|b| b.present).map(|b| b.address).collect()
    }

    /// Bytes to write to the line.
    pub fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// The next event, oldest first.
    pub fn next_event(&mut self) -> Option<BusEvent> {
        self.events.pop_front()
    }

    /// Bytes for the session on the virtual line of the board at `address`.
    pub fn take_line_output(&mut self, address: u16) -> Vec<u8> {
        self.boards
            .get_mut(&address)
            .and_then(|b| b.line.as_mut())
            .map(|l| std::mem::take(&mut l.out))
            .unwrap_or_default()
    }

    /// The addresses whose virtual lines have bytes waiting.
    pub fn lines_with_output(&self) -> Vec<u16> {
        self.boards
            .values()
            .filter(|b| b.line.as_ref().is_some_and(|l| !l.out.is_empty()))
            .map(|b| b.address)
            .collect()
    }

    /// When [`BusPoller::poll`] should next be called.
    pub fn next_deadline(&self) -> u64 {
        let reoffer = self.boards.values().filter_map(|b| b.reoffer).min().unwrap_or(u64::MAX);
        let held = self
            .boards
            .values()
            .filter_map(|b| b.line.as_ref()?.later.front().map(|(t, _)| *t))
            .min()
            .unwrap_or(u64::MAX);
        self.line_deadline().min(reoffer).min(held)
    }

    fn line_deadline(&self) -> u64 {
        if let Some(f) = &self.in_flight {
            let due = self.decoder.bytes_due() as u64;
            if due > 0 {
                // A reply is arriving: wait for its end, as long as bytes keep coming.
                let end = self.last_rx + (due * BYTE_US).div_ceil(1000) + 20;
                return f.deadline.max(end.min(self.last_rx + 100));
            }
            return f.deadline;
        }
        match &self.phase {
            Phase::Opening { until } | Phase::Window { until, .. } => *until,
            Phase::Silence { .. } => self.last_rx,
            Phase::Poll => {
                let probe = self.boards.values().filter(|b| !b.present).map(|b| b.next_probe).min();
                let mut at = self.next_discovery;
                if self.boards.values().any(|b| b.present) {
                    at = at.min(self.last_rx);
                }
                probe.map_or(at, |p| p.min(at))
            }
        }
    }

    /// Bytes the session wrote on the virtual line of the board at `address`.
    pub fn line_input(&mut self, address: u16, bytes: &[u8]) {
        let Some(board) = self.boards.get_mut(&address) else { return };
        let Some(line) = board.line.as_mut() else { return };
        let commands: Vec<Command> = bytes
            .iter()
            .filter_map(|&b| match line.parser.push(b) {
                Some(HostInput::Command(c)) => Some(c),
                _ => None,
            })
            .collect();
        for cmd in commands {
            let log = matches!(cmd, Command::SendEeMoves).then(|| board.event_log());
            let version = board.version.unwrap_or((0, 0));
            let Some(line) = board.line.as_mut() else { return };
            match cmd {
                Command::Reset => line.mode = Mode::Idle,
                Command::SendUpdate => line.mode = Mode::Update,
                Command::SendUpdateBoard => line.mode = Mode::UpdateBoard,
                Command::SendUpdateNice => line.mode = Mode::UpdateNice,
                Command::SendClock => {
                    line.clock_asked = true;
                    board.want_clock = true;
                }
                Command::SendBoard => board.want_dump = true,
                Command::ReturnSerialNumber => {
                    line.send(&Message::SerialNumber(serial_of(address).as_bytes()));
                }
                Command::ReturnBusAddress => line.send(&Message::BusAddress(address)),
                Command::SendVersion => {
                    line.send(&Message::Version { major: version.0 & 0x7F, minor: version.1 & 0x7F });
                }
                Command::SendEeMoves => line.send_raw(&log.unwrap_or_default()),
                Command::Clock(ClockCommand::Version) => {
                    line.version_query = true;
                    board.want_clock = true;
                }
                Command::Clock(_)
                | Command::SendTrademark
                | Command::ReturnLongSerialNumber
                | Command::SendBatteryStatus => {}
            }
        }
    }

    /// The caller closed the virtual line of the board at `address` at `now` (its session
    /// gave the port back while the board is still on the chain): a new line is offered
    /// a second later ([`BusEvent::Found`] again).
    pub fn line_closed(&mut self, now: u64, address: u16) {
        if let Some(b) = self.boards.get_mut(&address)
            && b.announced
        {
            b.announced = false;
            b.line = None;
            b.deferred.clear();
            b.fresh = true;
            b.reoffer = Some(now + 1_000);
        }
    }

    /// Bytes read from the line at `now`.
    pub fn on_bytes(&mut self, now: u64, bytes: &[u8]) {
        self.last_rx = now;
        if matches!(self.phase, Phase::Opening { .. }) {
            let mut noise = 0;
            self.single.feed(bytes, |d| match d {
                Decoded::Message(Message::Trademark(t)) => {
                    tracing::debug!(trademark = %String::from_utf8_lossy(t), "single-board answer on the line")
                }
                Decoded::Message(Message::BusAddress(a)) => tracing::debug!(address = a, "a board's address"),
                Decoded::Noise { len } => noise += len,
                _ => {}
            });
            self.stats.noise_bytes += noise as u64;
            return;
        }
        let mut got: Vec<Got> = Vec::new();
        self.decoder.feed(bytes, |d| match d {
            BusDecoded::Reply(r) => got.push(Got::Reply(OwnedReply::from(&r))),
            BusDecoded::BadChecksum { kind, address, .. } => got.push(Got::Bad { kind, address }),
            BusDecoded::Noise { len } => got.push(Got::Noise(len)),
            BusDecoded::Skipped { kind, total_len } => {
                tracing::debug!(kind, total_len, "bus reply too large; skipped");
                got.push(Got::Bad { kind, address: 0 });
            }
        });
        for g in got {
            match g {
                Got::Reply(r) => self.reply(now, r),
                Got::Bad { kind, address } => self.bad(now, kind, address),
                Got::Noise(n) => {
                    self.stats.noise_bytes += n as u64;
                    if let Phase::Window { doubt, .. } = &mut self.phase {
                        *doubt = true;
                    }
                }
            }
        }
        self.drive(now);
    }

    /// Runs what is due at `now`: timeouts, the end of a broadcast window, the next command,
    /// bytes held back on a virtual line.
    pub fn poll(&mut self, now: u64) {
        for line in self.boards.values_mut().filter_map(|b| b.line.as_mut()) {
            line.release(now);
        }
        let due: Vec<u16> =
            self.boards.values().filter(|b| b.reoffer.is_some_and(|t| t <= now)).map(|b| b.address).collect();
        for address in due {
            if let Some(b) = self.boards.get_mut(&address) {
                b.reoffer = None;
            }
            self.announce(address);
        }
        if let Some(f) = self.in_flight
            && now >= self.line_deadline()
        {
            self.in_flight = None;
            self.decoder.reset();
            self.timeout(now, f);
        }
        self.drive(now);
    }

    // ----- the schedule --------------------------------------------------------------

    /// Writes the next command when the line is free.
    fn drive(&mut self, now: u64) {
        while self.in_flight.is_none() {
            if !self.step(now) {
                break;
            }
        }
    }

    /// One decision; false when nothing is to be done before a deadline.
    fn step(&mut self, now: u64) -> bool {
        match &mut self.phase {
            Phase::Opening { until } => {
                if now < *until {
                    return false;
                }
                if let Some(n) = self.single.take_noise() {
                    self.stats.noise_bytes += n as u64;
                }
                // Every board to bus mode, then LiveChess's version request to everyone.
                self.out.push(0x4A);
                self.broadcast(now, Broadcast::Version, 0);
                true
            }
            Phase::Window { kind, round, until, new, doubt } => {
                if now < *until {
                    return false;
                }
                let (kind, round, new, doubt) = (*kind, *round, *new, *doubt);
                if kind == Broadcast::Version || ((new || doubt) && round < self.timing.max_rounds) {
                    self.start_round(round + 1);
                } else {
                    tracing::info!(boards = self.present().len(), rounds = round, "bus discovery done");
                    self.phase = Phase::Poll;
                    self.next_discovery = now + self.timing.rediscover_ms;
                    self.cycle_start = now;
                }
                true
            }
            Phase::Silence { round, queue } => {
                match queue.pop_front() {
                    Some(address) => self.send(now, BusCommand::new(BusCommandKind::IgnoreNextPing, address)),
                    None => {
                        let round = *round;
                        self.broadcast(now, Broadcast::Ping, round);
                    }
                }
                true
            }
            Phase::Poll => self.poll_step(now),
        }
    }

    fn start_round(&mut self, round: u32) {
        let queue = self.boards.values().filter(|b| b.present).map(|b| b.address).collect();
        self.phase = Phase::Silence { round, queue };
    }

    fn broadcast(&mut self, now: u64, kind: Broadcast, round: u32) {
        let cmd = match kind {
            Broadcast::Version => BusCommandKind::SendVersion,
            Broadcast::Ping => BusCommandKind::Ping,
        };
        self.write(BusCommand::new(cmd, BROADCAST));
        self.decoder.reset();
        self.phase = Phase::Window {
            kind,
            round,
            until: now + self.timing.broadcast_window_ms,
            new: false,
            doubt: false,
        };
    }

    fn poll_step(&mut self, now: u64) -> bool {
        if now >= self.next_discovery && self.turn.is_none() {
            self.start_round(1);
            return true;
        }
        if self.turn.is_none() {
            // A board that went away, due for a ping, goes first.
            if let Some(b) = self.boards.values().find(|b| !b.present && b.next_probe <= now) {
                let address = b.address;
                self.turn = Some(Turn { address, todo: VecDeque::from([BusCommandKind::Ping]), retries: 0 });
            } else if let Some(address) = self.next_board(now) {
                self.turn = Some(self.plan(address, now));
            } else {
                return false;
            }
        }
        let Some(turn) = self.turn.as_mut() else { return false };
        match turn.todo.pop_front() {
            Some(kind) => {
                let address = turn.address;
                if kind == BusCommandKind::SendChanges
                    && let Some(b) = self.boards.get_mut(&address)
                    && std::mem::take(&mut b.repeat)
                {
                    // The lost packet first, then what the board logged since.
                    turn.todo.push_front(BusCommandKind::SendChanges);
                    self.stats.repeats += 1;
                    self.send_repeat(now, address);
                    return true;
                }
                self.send(now, BusCommand::new(kind, address));
                true
            }
            None => {
                self.turn = None;
                true
            }
        }
    }

    /// The next present board after the cursor, in address order.
    fn next_board(&mut self, now: u64) -> Option<u16> {
        let after = self.cursor;
        let next = self
            .boards
            .values()
            .filter(|b| b.present)
            .map(|b| b.address)
            .find(|a| after.is_none_or(|c| *a > c))
            .or_else(|| {
                // Wrapped: a cycle is over.
                let first = self.boards.values().find(|b| b.present).map(|b| b.address);
                if first.is_some() {
                    self.cycle_done(now);
                }
                first
            })?;
        self.cursor = Some(next);
        Some(next)
    }

    fn cycle_done(&mut self, now: u64) {
        let took = now.saturating_sub(self.cycle_start);
        self.cycle_start = now;
        self.stats.cycles += 1;
        self.stats.last_cycle_ms = took;
        self.stats.max_cycle_ms = self.stats.max_cycle_ms.max(took);
    }

    /// A board's turn: its version if unknown, the changes, a dump when wanted, the clock
    /// when due (more may be added as replies come).
    fn plan(&self, address: u16, now: u64) -> Turn {
        let mut todo = VecDeque::new();
        if let Some(b) = self.boards.get(&address) {
            if b.version.is_none() {
                todo.push_back(BusCommandKind::SendVersion);
            }
            todo.push_back(BusCommandKind::SendChanges);
            if b.want_dump {
                todo.push_back(BusCommandKind::SendBoard);
            }
            if b.want_clock || now >= b.next_clock {
                todo.push_back(BusCommandKind::SendClock);
            }
        }
        Turn { address, todo, retries: 0 }
    }

    /// Adds a command to the turn of the board at `address`: a dump before the clock (the
    /// reading after a dump is the first the session sees of a game that dump starts; it
    /// tells White's side from the lever), the clock last.
    fn add_to_turn(&mut self, address: u16, kind: BusCommandKind) {
        if let Some(t) = self.turn.as_mut()
            && t.address == address
            && !t.todo.contains(&kind)
        {
            match (kind, t.todo.iter().position(|k| *k == BusCommandKind::SendClock)) {
                (BusCommandKind::SendBoard, Some(i)) => t.todo.insert(i, kind),
                _ => t.todo.push_back(kind),
            }
        }
    }

    fn write(&mut self, cmd: BusCommand) {
        tracing::trace!(?cmd.kind, address = cmd.address, "bus command");
        match cmd.to_bytes() {
            Ok(bytes) => {
                self.out.extend_from_slice(&bytes);
                self.stats.commands += 1;
            }
            Err(e) => tracing::error!(?cmd, error = %e, "bus command not encodable"),
        }
    }

    fn send(&mut self, now: u64, cmd: BusCommand) {
        self.write(cmd);
        self.in_flight = Some(InFlight { cmd, deadline: now + self.timing.reply_timeout_ms, repeat: false });
    }

    fn send_repeat(&mut self, now: u64, address: u16) {
        let cmd = BusCommand::new(BusCommandKind::RepeatChanges, address);
        self.write(cmd);
        self.in_flight = Some(InFlight { cmd, deadline: now + self.timing.reply_timeout_ms, repeat: true });
    }

    // ----- replies -------------------------------------------------------------------

    fn reply(&mut self, now: u64, r: OwnedReply) {
        tracing::trace!(address = r.address, kind = r.kind, "bus reply");
        // Broadcast answers, collected in their window.
        if let Phase::Window { kind, new, .. } = &mut self.phase {
            let expected = match kind {
                Broadcast::Version => BusReplyKind::Version.id(),
                Broadcast::Ping => BusReplyKind::Ping.id(),
            };
            if r.kind == expected && r.address != BROADCAST {
                let fresh = !self.boards.get(&r.address).is_some_and(|b| b.present);
                *new |= fresh;
                self.heard(now, r.address);
                if let (Some(b), Some(v)) = (self.boards.get_mut(&r.address), r.version) {
                    b.version = Some(v);
                }
                self.announce(r.address);
            }
            return;
        }
        let Some(f) = self.in_flight else {
            tracing::debug!(address = r.address, kind = r.kind, "bus reply nobody asked for");
            return;
        };
        let wanted = f.cmd.kind.reply().map(BusReplyKind::id);
        if r.address != f.cmd.address || Some(r.kind) != wanted {
            tracing::debug!(address = r.address, kind = r.kind, ?f.cmd, "bus reply to another command");
            return;
        }
        if let ReplyData::Changes(raw) = &r.data
            && !f.repeat
            && garbled(raw)
        {
            // A 7-bit checksum passes one garbled reply in 128 (two boards on the line at
            // once, noise): an event no board writes means the packet is not the board's.
            // Asked again, the board sends the same packet (a repeat is taken as it comes:
            // a board whose log does hold such an event sends it every time).
            tracing::debug!(
                address = r.address,
                ?raw,
                "changes packet with an impossible event; asked again"
            );
            self.heard(now, r.address);
            self.bad(now, r.kind, r.address);
            return;
        }
        self.in_flight = None;
        self.stats.replies += 1;
        self.heard(now, r.address);
        let address = r.address;
        match r.data {
            ReplyData::Version(v) => {
                if let Some(b) = self.boards.get_mut(&address) {
                    b.version = Some(v.unwrap_or((1, 2)));
                }
                self.announce(address);
            }
            ReplyData::Ping => self.announce(address),
            ReplyData::Changes(raw) => self.changes(now, address, raw, f.repeat),
            ReplyData::Times(t) => self.clock(now, address, t),
            ReplyData::Dump(d) => self.dump(now, address, d),
            ReplyData::Other => {}
        }
    }

    /// A good reply from `address`: it is there.
    fn heard(&mut self, now: u64, address: u16) {
        let b = self.boards.entry(address).or_insert_with(|| Board::new(address, now));
        b.misses = 0;
        b.last_heard = now;
        if !b.present {
            tracing::info!(address, "board back on the bus");
            b.present = true;
            b.fresh = true;
            b.want_clock = true;
        }
    }

    /// Reports a present board with a known version that has no line yet.
    fn announce(&mut self, address: u16) {
        let Some(b) = self.boards.get_mut(&address) else { return };
        let (true, false, Some(version)) = (b.present, b.announced, b.version) else { return };
        b.announced = true;
        b.line = Some(VirtualLine::new());
        b.stale = true;
        tracing::info!(address, ?version, "board on the bus");
        self.events.push_back(BusEvent::Found { address, serial: serial_of(address), version });
    }

    fn bad(&mut self, now: u64, kind: u8, address: u16) {
        self.stats.bad_checksums += 1;
        if let Phase::Window { doubt, .. } = &mut self.phase {
            *doubt = true;
            return;
        }
        let Some(f) = self.in_flight else { return };
        // A garbled reply while one is awaited: take it for that one's, and ask again.
        self.in_flight = None;
        tracing::debug!(kind, address, ?f.cmd, "bus reply with a bad checksum");
        let Some(turn) = self.turn.as_mut() else { return };
        turn.retries += 1;
        let target = f.cmd.address;
        let kind = f.cmd.kind;
        if turn.retries > 2 {
            // Given up in this turn: a changes packet may be lost, so read the board whole.
            if let Some(b) = self.boards.get_mut(&target) {
                if matches!(kind, BusCommandKind::SendChanges | BusCommandKind::RepeatChanges) {
                    b.repeat = true;
                }
                b.want_dump = true;
            }
            self.turn = None;
            return;
        }
        match kind {
            BusCommandKind::SendChanges | BusCommandKind::RepeatChanges => {
                self.stats.repeats += 1;
                self.send_repeat(now, target);
            }
            other => self.send(now, BusCommand::new(other, target)),
        }
    }

    fn timeout(&mut self, now: u64, f: InFlight) {
        self.stats.timeouts += 1;
        let address = f.cmd.address;
        if address == BROADCAST {
            return;
        }
        if let Phase::Silence { .. } = self.phase {
            // A found board did not confirm: it may answer the broadcast.
            return;
        }
        let timing = self.timing;
        let Some(b) = self.boards.get_mut(&address) else { return };
        b.misses += 1;
        if matches!(f.cmd.kind, BusCommandKind::SendChanges | BusCommandKind::RepeatChanges) {
            // The board may have sent (and forgotten) the changes: ask for them again, and
            // read it whole.
            b.repeat = true;
            b.want_dump = true;
            // A board heard on its last command lost one reply (noise, a slow answer): it
            // is asked again at once, so its moves wait a command, not a whole cycle.
            if b.present
                && b.misses == 1
                && let Some(t) = self.turn.as_mut()
                && t.address == address
                && t.retries == 0
            {
                t.retries += 1;
                if !t.todo.contains(&BusCommandKind::SendChanges) {
                    t.todo.push_front(BusCommandKind::SendChanges);
                }
                return;
            }
        }
        // The turn ends: the others are not kept waiting for a silent board.
        self.turn = None;
        if !b.present {
            b.next_probe = now + timing.probe_gone_ms;
            return;
        }
        if b.misses >= timing.miss_limit && now.saturating_sub(b.last_heard) >= timing.gone_after_ms {
            b.present = false;
            b.announced = false;
            b.line = None;
            b.deferred.clear();
            b.next_probe = now + timing.probe_gone_ms;
            let reason = format!("no answer on the bus for {} ms", now - b.last_heard);
            tracing::warn!(address, %reason, "board gone from the bus");
            self.events.push_back(BusEvent::Gone { address, reason });
        }
    }

    /// A changes packet: recorded for the event log; forwarded as field updates and
    /// readings (see the module docs).
    fn changes(&mut self, now: u64, address: u16, raw: Vec<u8>, repeat: bool) {
        let gap = self.timing.press_gap_ms;
        let Some(b) = self.boards.get_mut(&address) else { return };
        if repeat && raw == b.last_changes && !raw.is_empty() {
            // The board had not sent the lost packet: this is the one before, already had.
            // Unless the two were alike: read the board whole to be sure.
            b.want_dump = true;
            return;
        }
        b.last_changes.clone_from(&raw);
        let forward = !b.fresh && b.line.is_some();
        tracing::trace!(address, bytes = raw.len(), ?raw, forward, mode = ?b.line.as_ref().map(|l| l.mode), "changes");
        if !repeat {
            // The first packet since the board was found is what it logged before.
            b.fresh = false;
        }
        let mut doubt = false;
        let mut events = Vec::new();
        for e in dgt_protocol::EeEvents::new(&raw).iter() {
            b.record(e);
            doubt |= matches!(e, EeEvent::PowerUp | EeEvent::WatchdogAction | EeEvent::Malformed { .. });
            if forward {
                events.push(e);
            }
        }
        let press = events.iter().any(|e| matches!(e, EeEvent::Time { .. }));
        b.forward(now, gap, &events, None);
        if !forward {
            // What it logged while no line was open: the session reads a dump (and, when that
            // differs from what it kept, this log).
            doubt = true;
        }
        b.want_clock |= press;
        b.want_dump |= doubt;
        let (want_dump, want_clock) = (b.want_dump, b.want_clock || now >= b.next_clock);
        if want_dump {
            self.add_to_turn(address, BusCommandKind::SendBoard);
        }
        if want_clock {
            self.add_to_turn(address, BusCommandKind::SendClock);
        }
        if self.boards.get(&address).is_some_and(|b| !b.deferred.is_empty()) {
            self.clock_before_dump(address);
        }
    }

    /// Puts the clock before the dump in the turn of the board at `address`: a deferred
    /// press waits for a reading, and the dump shows the board after what followed it.
    fn clock_before_dump(&mut self, address: u16) {
        let Some(t) = self.turn.as_mut().filter(|t| t.address == address) else { return };
        let pos = |todo: &VecDeque<BusCommandKind>, k| todo.iter().position(|x| *x == k);
        if let (Some(board), Some(clock)) =
            (pos(&t.todo, BusCommandKind::SendBoard), pos(&t.todo, BusCommandKind::SendClock))
            && board < clock
        {
            t.todo.remove(clock);
            t.todo.insert(board, BusCommandKind::SendClock);
        }
    }

    fn clock(&mut self, now: u64, address: u16, t: Bwtime) {
        let timing = self.timing;
        let Some(b) = self.boards.get_mut(&address) else { return };
        b.want_clock = false;
        b.next_clock = now + timing.clock_period_ms;
        let Bwtime::Times(t) = t else { return };
        tracing::trace!(address, status = t.status.0, left = ?t.left.time, right = ?t.right.time, "clock reading");
        // A running clock whose lever is not where the last reading sent left it was pressed
        // since the changes were read: that press is in the board's log, and comes with the
        // next changes in its place among the moves. This reading, from ahead of them, is
        // held back once (the log may have skipped a press in very fast play: then the next
        // one goes out). After a dump too: the first reading a game sees must not be a press.
        let ahead = t.status.running()
            && !t.status.no_clock()
            && b.line.is_some()
            && b.deferred.is_empty()
            && b.last_times.is_some_and(|l| l.status.running() && l.high_side() != t.high_side());
        // The first running reading of what may be a new game: its lever may already show the
        // first press (made between the changes and this reading), and nothing before it in
        // this game tells. Held once, the changes are read again at once, then the clock.
        let first = b.game_unread
            && t.status.running()
            && !t.status.no_clock()
            && b.line.is_some()
            && b.deferred.is_empty();
        if (ahead || first) && !b.held {
            tracing::trace!(address, first, "clock reading ahead of the changes; held");
            b.held = true;
            b.want_clock = true;
            if first {
                self.add_to_turn(address, BusCommandKind::SendChanges);
                self.add_to_turn(address, BusCommandKind::SendClock);
            }
            return;
        }
        b.held = false;
        b.game_unread &= !t.status.running();
        b.stale = false;
        if !b.deferred.is_empty() {
            // A reading from after the deferred press: the press and what followed it go
            // first, built on this reading (the game learns White's side from the set clock
            // and the running reading before the press, not from this one).
            let deferred = std::mem::take(&mut b.deferred);
            b.forward(now, timing.press_gap_ms, &deferred, Some(t));
        }
        b.last_times = Some(t);
        if let Some(line) = b.line.as_mut() {
            line.times(t, true, false);
        }
    }

    fn dump(&mut self, now: u64, address: u16, d: BoardDump) {
        let gap = self.timing.press_gap_ms;
        tracing::trace!(address, raw = ?d.raw, "dump");
        let Some(b) = self.boards.get_mut(&address) else { return };
        b.want_dump = false;
        if !b.anchored {
            // The log starts here: as a power-up listing of this dump.
            b.record(EeEvent::PowerUp);
            for sq in dgt_protocol::DgtSquare::ALL {
                let piece = d.piece(sq);
                if !piece.is_empty() {
                    b.record(EeEvent::Field { square: sq, piece, quick: false });
                }
            }
        }
        if !b.deferred.is_empty() {
            // The dump shows the board after them: they go first, on the last reading.
            let deferred = std::mem::take(&mut b.deferred);
            let base = b.last_times;
            b.forward(now, gap, &deferred, base);
        }
        if let Some(line) = b.line.as_mut() {
            line.send(&Message::BoardDump(d));
            // The next reading goes out even if unchanged: a game this dump starts learns
            // White's side from the lever of its first reading, which must not be a press.
            // Only a start position starts one (the dumps a session asks for mid-game do
            // not make its next press a new game's).
            line.last_sent = None;
            if shows_start(&d) {
                line.new_game = true;
                b.game_unread = true;
            }
        }
        b.want_clock = true;
        self.add_to_turn(address, BusCommandKind::SendClock);
    }
}

/// A changes packet holds an event no board writes (a time event that is not BCD, a
/// square off the board): it was garbled on the line.
fn garbled(raw: &[u8]) -> bool {
    dgt_protocol::EeEvents::new(raw).iter().any(|e| matches!(e, EeEvent::Malformed { .. }))
}

/// The dump shows the standard start position, either way round.
fn shows_start(d: &BoardDump) -> bool {
    let start = shakmaty::Board::new();
    [Orientation::Normal, Orientation::Rotated].into_iter().any(|o| {
        shakmaty::Square::ALL
            .into_iter()
            .all(|sq| d.piece(DgtSquare::from_square(sq, o)) == PieceCode::from_option(start.piece_at(sq)))
    })
}

/// The readings a single board would have sent around a lever press the changes logged
/// (`side`'s display showed `time` as it stopped), built on the last reading `base`; sends
/// them on `line` and returns the last.
///
/// The press reading is `base` with the presser's display at the logged time and the lever
/// down on the presser's side (the clock is read right after, which brings the other
/// display up to date).
///
/// A press is the side to move stopping its own running clock: a single board would have
/// sent a reading of that (the clock running, the presser's side up) before the press.
/// When the last reading does not show it, or when a game may have begun since the last
/// press, that reading goes first, even if it repeats the last one: the tracker learns
/// White's side from the lever of a game's first running reading, which must not be a
/// press, and the last reading may have come before the session saw the game begin (a start
/// position is taken once it stood still). When a game may have begun, the clock as the
/// arbiter set it (stopped, the presser's lever up) goes before that: a single board sends
/// it, and the tracker takes a stopped clock's lever for White's side even after a running
/// reading of the previous game. A new game's clock shows no flag of the previous game's. A press a real reading already showed (the lever down on the presser's side,
/// the presser's display at the logged time) is not sent again, unless `replay` (a press
/// that came before any reading, built on the reading after it).
fn press_readings(
    base: ClockTimes,
    side: ClockSide,
    time: dgt_protocol::ClockTime,
    line: &mut VirtualLine,
    replay: bool,
) -> ClockTimes {
    // D1 (which side is up), with D3/D4 turned with it as the clock turns them.
    let lever_up = |t: &mut ClockTimes, up: ClockSide| {
        if t.high_side() != up {
            t.status.0 ^= 0x1A;
        }
    };
    let mut t = base;
    let shown = match side {
        ClockSide::Left => t.left.time,
        ClockSide::Right => t.right.time,
    };
    if !replay && t.status.running() && t.high_side() == side.other() && shown == time {
        // A reading from after this press went out already (it came between the changes
        // and this press's packet): the session has seen the press; a second one would
        // turn the lever back and forth.
        line.new_game = false;
        return t;
    }
    let new_game = std::mem::take(&mut line.new_game);
    if new_game {
        for s in [&mut t.left, &mut t.right] {
            s.flags.flag = false;
            s.flags.final_flag = false;
        }
        // The clock as the arbiter set it before starting it: stopped, the lever raised on
        // the side to move (a single board sends that reading before the clock runs).
        let mut set = t;
        set.status.0 &= !0x01;
        lever_up(&mut set, side);
        line.times(set, false, true);
    }
    if new_game || !t.status.running() || t.high_side() != side {
        t.status.0 |= 0x01;
        lever_up(&mut t, side);
        line.times(t, false, true);
    }
    match side {
        ClockSide::Left => t.left.time = time,
        ClockSide::Right => t.right.time = time,
    }
    lever_up(&mut t, side.other());
    line.times(t, false, false);
    t
}

/// A reply, owned (the decoder's buffer is borrowed).
#[derive(Debug)]
struct OwnedReply {
    address: u16,
    kind: u8,
    version: Option<(u8, u8)>,
    data: ReplyData,
}

#[derive(Debug)]
enum ReplyData {
    Version(Option<(u8, u8)>),
    Ping,
    Changes(Vec<u8>),
    Times(Bwtime),
    Dump(BoardDump),
    Other,
}

impl From<&BusReply<'_>> for OwnedReply {
    fn from(r: &BusReply<'_>) -> OwnedReply {
        let (version, data) = match r.data {
            BusData::Version(v) => (Some(v.unwrap_or((1, 2))), ReplyData::Version(v)),
            BusData::Ping | BusData::StartGameWritten => (None, ReplyData::Ping),
            BusData::Update(e) => (None, ReplyData::Changes(e.raw().to_vec())),
            BusData::Bwtime(b) => (None, ReplyData::Times(b)),
            BusData::BoardDump(d) => (None, ReplyData::Dump(d)),
            BusData::FromStart(_) | BusData::BoardDump50B(_) | BusData::Unknown { .. } => {
                (None, ReplyData::Other)
            }
        };
        OwnedReply { address: r.address, kind: r.kind(), version, data }
    }
}

enum Got {
    Reply(OwnedReply),
    Bad { kind: u8, address: u16 },
    Noise(usize),
}
