//! Each board's virtual single-board line: the bytes its session reads (field updates,
//! clock readings, dumps, held back a little after a press when one packet brought more),
//! and the single-board commands the session writes, answered as a board in update mode
//! would (see [`super`]).

use alloc::collections::VecDeque;
use alloc::{format, string::String, vec::Vec};

use dgt_protocol::{Bwtime, ClockAck, ClockCommand, ClockTimes, Command, CommandParser, HostInput, Message};

use super::BusPoller;

/// The serial number a board on the bus is known by: its address, five digits.
pub fn serial_of(address: u16) -> String {
    format!("{address:05}")
}

/// The virtual board's single-board mode, as its link set it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    Idle,
    Update,
    UpdateBoard,
    UpdateNice,
}

impl Mode {
    pub(super) fn fields(self) -> bool {
        self != Mode::Idle
    }
    pub(super) fn clock(self) -> bool {
        matches!(self, Mode::Update | Mode::UpdateNice)
    }
}

/// Bytes held back on a virtual line until `at` (ms), with the board changes they carry.
#[derive(Debug)]
pub(super) struct Held {
    pub(super) at: u64,
    pub(super) bytes: Vec<u8>,
    /// Dumps and field updates in `bytes`, in order.
    pub(super) board: Vec<BoardChange>,
}

/// What a message let out on a virtual line does to the board the session has seen.
#[derive(Clone, Copy, Debug)]
pub(super) enum BoardChange {
    Whole([u8; 64]),
    Square(u8, u8),
}

impl BoardChange {
    fn of(msg: &Message<'_>) -> Option<BoardChange> {
        match msg {
            Message::BoardDump(d) => Some(BoardChange::Whole(d.raw)),
            Message::FieldUpdate(f) => Some(BoardChange::Square(f.square.index(), f.piece().code())),
            _ => None,
        }
    }

    fn apply(self, shown: &mut Option<[u8; 64]>) {
        match (self, shown.as_mut()) {
            (BoardChange::Whole(raw), _) => *shown = Some(raw),
            (BoardChange::Square(sq, code), Some(b)) => b[usize::from(sq & 63)] = code,
            (BoardChange::Square(..), None) => {}
        }
    }
}

/// A board's virtual single-board line.
#[derive(Debug)]
pub(super) struct VirtualLine {
    pub(super) mode: Mode,
    pub(super) parser: CommandParser,
    /// Bytes for the session.
    pub(super) out: Vec<u8>,
    /// Bytes held back until their time (ms), in order: what followed a press in the same
    /// changes packet. Anything sent while some are held goes after them.
    pub(super) later: VecDeque<Held>,
    /// The board as what went out so far shows it (dumps and field updates let out, not
    /// those held back): what the session has seen (`None` before a dump).
    pub(super) shown: Option<[u8; 64]>,
    /// A press went out in the packet being forwarded: the next field event starts a part
    /// held back until this time.
    pub(super) gap_until: Option<u64>,
    /// The last BWTIME sent (update-nice sends only changes).
    pub(super) last_sent: Option<[u8; 7]>,
    /// `41` asked: the next reading goes out whatever the mode.
    pub(super) clock_asked: bool,
    /// A clock version query waits for a reading that shows a clock.
    pub(super) version_query: bool,
    /// A game may have begun on the board since the last press (the start position
    /// appeared, or a dump that may start one): the next press is preceded by a reading of
    /// the clock's start.
    pub(super) new_game: bool,
    /// Since `new_game` was set, the clock as set (stopped) went out before a running
    /// reading: once is enough, as the running readings that follow keep the lever.
    pub(super) start_sent: bool,
    /// A dump went out on this line (its session has the board).
    pub(super) dumped: bool,
    /// Presses sent since the last field update.
    pub(super) presses_since_field: u8,
    /// The field updates since the last press followed two presses or more with no change
    /// between: they hold two plies or more, and a later scan's change among them is held
    /// back as after a press in the same packet.
    pub(super) burst: bool,
    /// The last board message sent was a field update: a press sent next goes a little
    /// later, so that the ply it ends was shown before it.
    pub(super) field_last: bool,
}

impl VirtualLine {
    pub(super) fn new() -> VirtualLine {
        VirtualLine {
            mode: Mode::Idle,
            parser: CommandParser::new(),
            out: Vec::new(),
            later: VecDeque::new(),
            shown: None,
            gap_until: None,
            last_sent: None,
            clock_asked: false,
            version_query: false,
            // A new line's first dump says whether a game may begin (a board back mid-game
            // goes on with its clock).
            new_game: false,
            start_sent: false,
            dumped: false,
            presses_since_field: 0,
            burst: false,
            field_last: false,
        }
    }

    pub(super) fn send(&mut self, msg: &Message<'_>) {
        crate::log::trace!(?msg, held_until = ?self.later.back().map(|h| h.at), "to the virtual line");
        match msg {
            Message::FieldUpdate(_) => self.field_last = true,
            Message::Bwtime(_) | Message::BoardDump(_) => self.field_last = false,
            _ => {}
        }
        let change = BoardChange::of(msg);
        let out = match self.later.back_mut() {
            Some(held) => {
                held.board.extend(change);
                &mut held.bytes
            }
            None => {
                if let Some(c) = change {
                    c.apply(&mut self.shown);
                }
                &mut self.out
            }
        };
        encode_into(out, msg);
    }

    /// The board as everything sent shows it, held back or not (`None` before a dump).
    pub(super) fn latest(&self) -> Option<[u8; 64]> {
        let mut board = self.shown;
        for c in self.later.iter().flat_map(|h| h.board.iter()) {
            c.apply(&mut board);
        }
        board
    }

    /// A dump of the board the session has seen so far, at once, ahead of anything held
    /// back (see `BusPoller::answer_requests`).
    pub(super) fn send_shown_now(&mut self) -> bool {
        let Some(raw) = self.shown else { return false };
        crate::log::trace!("to the virtual line at once: the board as shown so far");
        self.field_last = false;
        encode_into(&mut self.out, &Message::BoardDump(dgt_protocol::BoardDump { raw }));
        true
    }

    /// Raw bytes for the session, after anything held back.
    pub(super) fn send_raw(&mut self, bytes: &[u8]) {
        match self.later.back_mut() {
            Some(held) => held.bytes.extend_from_slice(bytes),
            None => self.out.extend_from_slice(bytes),
        }
    }

    /// The next field event of the packet being forwarded, and what follows it, wait
    /// `gap` ms after what went before (see [`super::BusTiming::press_gap_ms`]).
    pub(super) fn hold_next(&mut self, now: u64, gap: u64) {
        let from = self.later.back().map_or(now, |h| h.at);
        self.gap_until = Some(from + gap);
    }

    /// A press is next: after a field update, it goes `gap` ms later (on a single board the
    /// press's reading comes after the report of the move it ends, never in the same
    /// instant).
    pub(super) fn before_press(&mut self, now: u64, gap: u64) {
        if self.field_last {
            self.hold_next(now, gap);
            self.before_field();
        }
    }

    /// A field event is next: when a press went before it in this packet, it and what
    /// follows are held back.
    pub(super) fn before_field(&mut self) {
        if let Some(at) = self.gap_until.take() {
            self.later.push_back(Held { at, bytes: Vec::new(), board: Vec::new() });
        }
    }

    /// Moves what is due at `now` to the session's bytes.
    pub(super) fn release(&mut self, now: u64) {
        while self.later.front().is_some_and(|h| h.at <= now) {
            if let Some(held) = self.later.pop_front() {
                self.out.extend_from_slice(&held.bytes);
                for c in held.board {
                    c.apply(&mut self.shown);
                }
            }
        }
    }

    /// A clock reading: sent as update-nice (or `43`, or an answer to `41`) would; `force`
    /// sends it even when it repeats the last one.
    pub(super) fn times(&mut self, t: ClockTimes, real: bool, force: bool) {
        let payload = t.to_payload();
        let send = core::mem::take(&mut self.clock_asked)
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

/// Appends `msg`'s bytes to `out`.
fn encode_into(out: &mut Vec<u8>, msg: &Message<'_>) {
    let at = out.len();
    out.resize(at + msg.encoded_len(), 0);
    match msg.encode(&mut out[at..]) {
        Ok(n) => out.truncate(at + n),
        Err(e) => {
            crate::log::error!(error = %e, "message not encodable");
            out.truncate(at);
        }
    }
}

impl BusPoller {
    /// Bytes for the session on the virtual line of the board at `address`.
    pub fn take_line_output(&mut self, address: u16) -> Vec<u8> {
        self.boards
            .get_mut(&address)
            .and_then(|b| b.line.as_mut())
            .map(|l| core::mem::take(&mut l.out))
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
                // Once the next changes are read (see `BusPoller::answer_requests`).
                Command::SendBoard => board.dump_asked = true,
                Command::ReturnSerialNumber => {
                    line.send(&Message::SerialNumber(serial_of(address).as_bytes()));
                }
                Command::ReturnBusAddress => line.send(&Message::BusAddress(address)),
                Command::SendVersion => {
                    line.send(&Message::Version { major: version.0 & 0x7F, minor: version.1 & 0x7F });
                }
                // Answered once the next changes are in it.
                Command::SendEeMoves => board.log_asked = true,
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
    /// a second later ([`super::BusEvent::Found`] again).
    pub fn line_closed(&mut self, now: u64, address: u16) {
        if let Some(b) = self.boards.get_mut(&address)
            && b.announced
        {
            b.announced = false;
            b.line = None;
            b.deferred.clear();
            b.fresh = true;
            b.fresh_asked = false;
            b.reoffer = Some(now + 1_000);
        }
    }
}
