//! The e-board's firmware, as seen from the serial line (fact sheet sections 2, 3, 6, 7,
//! 8.1): modes, answers to every single-board command, the scan that turns piece moves
//! into field updates, the EEPROM event memory, and the relay to an attached DGT 3000.
//!
//! Pure: bytes and hand actions in, bytes out, with virtual milliseconds passed in by the
//! caller. The pty runner ([`crate::sim`]) and the unit tests drive the same code.

use std::collections::VecDeque;

use dgt_protocol::bus::BROADCAST;
use dgt_protocol::ee::{encode_ee_moves, encode_events};
use dgt_protocol::{
    BusCommand, BusCommandKind, BusCommandParser, BusData, BusInput, BusReply, Bwtime, ClockAck,
    ClockCommand, ClockSide, ClockStatus, ClockTimes, Command, CommandParser, DgtSquare, EeEvent, EeEvents,
    FieldUpdate, HostInput, Message, PieceCode,
};

use crate::clock::{Button, Dgt3000};
use crate::rng::Rng;

/// Payload size of the EEPROM dump the board sends (fact sheet 6.1).
pub const EE_PAYLOAD_LEN: usize = 0x1F00;

/// Bus mode: whether the mark of what `SEND_CHANGES` has sent survives a power-up.
///
/// UNCONFIRMED: DGT's header says only that `SEND_CHANGES` sends "all stored information
/// changes from the moment of the last `SEND_CHANGES`". Kept (this model): a board that
/// was unplugged from the chain and comes back sends everything it logged meanwhile, its
/// power-up listing included, with its first `SEND_CHANGES`; the EEPROM is non-volatile
/// and bus mode exists so that tournament boards lose nothing. Not kept (`false`): the
/// first `SEND_CHANGES` after a power-up starts at the power-up.
pub const CHANGES_MARK_SURVIVES_POWER_UP: bool = true;

/// Bus mode: a board answers a broadcast ping (and, UNCONFIRMED, a broadcast version
/// request, which LiveChess sends) at a random moment within this many milliseconds (DGT's
/// header: "randomly spread over a 1100 msec. interval. This to avoid collision").
pub const BROADCAST_SPREAD_MS: u32 = 1_100;

/// Bus mode: how long after `SET_START_GAME` the board answers (DGT's header: "about 70
/// msec.").
pub const START_GAME_ANSWER_MS: u32 = 70;

/// How often the board reads its clock, in virtual milliseconds: "2-3 times a second"
/// (DGT's header, on Bluetooth boards; UNCONFIRMED for others, whose clock data lag the
/// display by up to a second). A press is logged at the reading after it ([`LeverLog`]).
pub const CLOCK_POLL_MS: u64 = 400;

/// A bus reply and when it goes on the line: `delay_ms` real milliseconds after the
/// command was received, on top of the board's usual response time (which the line model
/// adds, see [`crate::chain`]). Real time, not the board's virtual time: the line's timing
/// is physics, whatever the speed of the game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BusTransmit {
    /// The reply's bytes.
    pub bytes: Vec<u8>,
    /// Extra delay: 0, or a broadcast answer's random moment, or the start-game delay.
    pub delay_ms: u32,
}

/// The board's reporting mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BoardMode {
    /// Bus mode: the power-up state; answers no single-board traffic.
    Bus,
    /// Single-board mode, sending nothing by itself.
    Idle,
    /// `0x43`: field updates, clock times at least once a second, clock acks.
    Update,
    /// `0x44`: field updates only; no clock times, no clock acks.
    UpdateBoard,
    /// `0x4B`: field updates, clock times when they change, clock acks.
    UpdateNice,
}

impl BoardMode {
    /// True in the modes that send field updates.
    pub fn reports_fields(self) -> bool {
        matches!(self, BoardMode::Update | BoardMode::UpdateBoard | BoardMode::UpdateNice)
    }

    /// True in the modes that pass clock acks and clock times on.
    pub fn reports_clock(self) -> bool {
        matches!(self, BoardMode::Update | BoardMode::UpdateNice)
    }
}

/// What makes one simulated board distinct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardConfig {
    /// Five decimal digits (`0x45`); its value is also the bus address (`0x46`).
    pub serial: String,
    /// Ten ASCII characters (`0x55`).
    pub long_serial: String,
    /// Firmware version (`0x4D`), plain binary.
    pub version: (u8, u8),
    /// Trademark text (`0x47`); ASCII only.
    pub trademark: String,
    /// Battery charge for `0x4C`; `None` for a USB board that ignores the command.
    pub battery_percent: Option<u8>,
    /// Milliseconds between two scans of the whole board; 0 reports every change at once.
    pub scan_period_ms: u64,
    /// Virtual milliseconds the clock takes to acknowledge a command.
    pub ack_delay_ms: u64,
    /// Virtual milliseconds between two of the board's readings of its clock, which is when
    /// it logs a press ([`LeverLog`]); 0 logs every press at once.
    pub clock_poll_ms: u64,
}

impl BoardConfig {
    /// A board with serial number `serial` (0..=99999) and the usual defaults.
    pub fn with_serial(serial: u32) -> BoardConfig {
        let serial = serial % 100_000;
        let version = (1, 80);
        BoardConfig {
            serial: format!("{serial:05}"),
            long_serial: format!("{serial:010}"),
            version,
            trademark: format!(
                "Digital Game Technology\r\nCopyright (c) 2024 DGT\r\nsoftware version: {}.{:02}, build: \
                 240101\r\nhardware version: 1.00, serial no: {serial:05}",
                version.0, version.1
            ),
            battery_percent: Some(100),
            scan_period_ms: 200,
            ack_delay_ms: 40,
            clock_poll_ms: CLOCK_POLL_MS,
        }
    }

    /// The bus address: the serial number as a 14-bit binary value.
    pub fn bus_address(&self) -> u16 {
        (self.serial.trim().parse::<u32>().unwrap_or(0) & 0x3FFF) as u16
    }
}

impl Default for BoardConfig {
    fn default() -> Self {
        BoardConfig::with_serial(12345)
    }
}

/// The board's cyclic EEPROM event memory.
#[derive(Clone, Debug, Default)]
struct EeMemory {
    events: VecDeque<EeEvent>,
    bytes: usize,
    last_field_ms: Option<u64>,
    /// Events ever logged: the sequence number of the next one.
    logged: u64,
    /// Bus mode: the sequence number of the first event `SEND_CHANGES` has not sent.
    sent: u64,
    /// Bus mode: the sequence number of the last start tag, if any.
    start_tag: Option<u64>,
}

impl EeMemory {
    const CAPACITY: usize = EE_PAYLOAD_LEN - 1;

    fn push(&mut self, event: EeEvent) {
        let mut scratch = [0u8; 3];
        let len = event.encode(&mut scratch).unwrap_or(0);
        self.events.push_back(event);
        self.logged += 1;
        self.bytes += len;
        while self.bytes > Self::CAPACITY {
            match self.events.pop_front() {
                Some(old) => self.bytes -= old.encode(&mut scratch).unwrap_or(0),
                None => self.bytes = 0,
            }
        }
    }

    /// The sequence number of the oldest event kept.
    fn first_kept(&self) -> u64 {
        self.logged - self.events.len() as u64
    }

    /// The events with sequence numbers in `from..to` that are still kept.
    fn range(&self, from: u64, to: u64) -> Vec<EeEvent> {
        let first = self.first_kept();
        let skip = from.saturating_sub(first) as usize;
        let take = to.saturating_sub(from.max(first)) as usize;
        self.events.iter().skip(skip).take(take).copied().collect()
    }

    fn field(&mut self, square: DgtSquare, piece: PieceCode, now: u64) {
        let quick = self.last_field_ms.is_some_and(|t| now.saturating_sub(t) < 250);
        self.last_field_ms = Some(now);
        // "If only one piece keeps changing, the board overwrites the last field event."
        // Not once bus mode sent it: the change would never be sent (this model's choice).
        if let Some(EeEvent::Field { square: last, .. }) = self.events.back()
            && *last == square
            && self.logged > self.sent
        {
            if let Some(back) = self.events.back_mut() {
                *back = EeEvent::Field { square, piece, quick };
            }
            return;
        }
        self.push(EeEvent::Field { square, piece, quick });
    }

    /// The events as sent: NOP padding to the fixed size, the events, then EOF.
    fn dump(&self) -> Vec<EeEvent> {
        let mut out = Vec::with_capacity(EE_PAYLOAD_LEN);
        out.extend(std::iter::repeat_n(EeEvent::Nop, Self::CAPACITY - self.bytes));
        out.extend(self.events.iter().copied());
        out.push(EeEvent::Eof);
        out
    }
}

/// How the board logs clock presses (fact sheet 6.2; DGT's header: the halted clock's
/// time "is written on tumbler position change", and "when the moves are done very fast,
/// the storage is skipped"). The board learns of the lever from its readings of the clock,
/// a few times a second: a reading that finds the lever moved since the last one logs the
/// halted side's time then. Two presses between two readings leave the lever where it was,
/// and neither is logged; of three, the last.
#[derive(Clone, Debug, Default)]
struct LeverLog {
    /// The side up at the board's last reading of the clock.
    seen: Option<ClockSide>,
    /// The reading grid's origin (the clock attached, the board powered).
    epoch: u64,
    /// The next reading that looks at presses made since the last one.
    due: Option<u64>,
    /// Virtual times of the presses made since the last reading.
    pending: Vec<u64>,
    /// Virtual times of the presses the log never got.
    skipped: Vec<u64>,
}

impl LeverLog {
    /// Starts afresh with the lever at `up` (no event: a game's starting times are lost).
    fn reset(&mut self, up: Option<ClockSide>, now: u64) {
        self.seen = up;
        self.epoch = now;
        self.due = None;
        self.pending.clear();
    }

    /// A press at `at`: the first reading at or after it looks at it.
    fn pressed(&mut self, at: u64, period: u64) {
        self.pending.push(at);
        if self.due.is_none() {
            let k = at.saturating_sub(self.epoch).div_ceil(period.max(1));
            self.due = Some(self.epoch + k * period.max(1));
        }
    }
}

/// The normal start position in board-index order (index 0 = a8).
pub fn start_position() -> [PieceCode; 64] {
    use PieceCode::*;
    let mut b = [Empty; 64];
    let back_w =
        [WhiteRook, WhiteKnight, WhiteBishop, WhiteQueen, WhiteKing, WhiteBishop, WhiteKnight, WhiteRook];
    let back_b =
        [BlackRook, BlackKnight, BlackBishop, BlackQueen, BlackKing, BlackBishop, BlackKnight, BlackRook];
    for f in 0..8 {
        b[f] = back_b[f];
        b[8 + f] = BlackPawn;
        b[48 + f] = WhitePawn;
        b[56 + f] = back_w[f];
    }
    b
}

/// A board position turned by half a circle (the same position on a rotated board).
pub fn rotated(board: &[PieceCode; 64]) -> [PieceCode; 64] {
    let mut out = [PieceCode::Empty; 64];
    for (i, p) in board.iter().enumerate() {
        out[63 - i] = *p;
    }
    out
}

/// A simulated e-board's firmware with an optional DGT 3000 attached.
#[derive(Clone, Debug)]
pub struct Firmware {
    config: BoardConfig,
    mode: BoardMode,
    parser: CommandParser,
    bus_skip: u8,
    bus_parser: BusCommandParser,
    /// Bus mode: the host reads this board's changes (so it follows the board).
    bus_polled: bool,
    /// Bus mode: the next broadcast ping is ignored.
    ignore_next_ping: bool,
    /// Bus mode: the last changes packet's events, for `REPEAT_CHANGES`.
    last_changes: Vec<u8>,
    bus_out: VecDeque<BusTransmit>,
    rng: Rng,
    physical: [PieceCode; 64],
    reported: [PieceCode; 64],
    /// The time of the earliest change not yet scanned, if any.
    dirty_since: Option<u64>,
    drop_next: [bool; 64],
    scan_epoch: u64,
    ee: EeMemory,
    lever: LeverLog,
    begin_armed: bool,
    empty_armed: bool,
    clock: Option<Dgt3000>,
    last_bwtime: Option<[u8; 7]>,
    next_periodic: u64,
    acks: VecDeque<(u64, [u8; 4])>,
    out: Vec<u8>,
    stats: FirmwareStats,
}

/// Counters of what the board sent and ignored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FirmwareStats {
    /// Field updates sent.
    pub field_updates: u64,
    /// Field updates swallowed on purpose (the dropped-update fault).
    pub dropped_updates: u64,
    /// BWTIME time messages sent.
    pub clock_times: u64,
    /// Clock acks sent.
    pub clock_acks: u64,
    /// Clock acks not sent because the mode does not pass them on.
    pub acks_suppressed: u64,
    /// Host bytes ignored (unknown, bus mode, malformed clock messages).
    pub ignored_bytes: u64,
}

impl Firmware {
    /// Powers up with `position` (board-index order) on the board, at virtual time `now`.
    pub fn new(config: BoardConfig, position: [PieceCode; 64], now: u64) -> Firmware {
        let rng = Rng::derive(u64::from(config.bus_address()), 0xB05);
        let mut fw = Firmware {
            config,
            mode: BoardMode::Bus,
            parser: CommandParser::new(),
            bus_skip: 0,
            bus_parser: BusCommandParser::new(),
            bus_polled: false,
            ignore_next_ping: false,
            last_changes: Vec::new(),
            bus_out: VecDeque::new(),
            rng,
            physical: position,
            reported: position,
            dirty_since: None,
            drop_next: [false; 64],
            scan_epoch: now,
            ee: EeMemory::default(),
            lever: LeverLog::default(),
            begin_armed: true,
            empty_armed: true,
            clock: None,
            last_bwtime: None,
            next_periodic: now,
            acks: VecDeque::new(),
            out: Vec::new(),
            stats: FirmwareStats::default(),
        };
        fw.power_up(now);
        fw
    }

    fn power_up(&mut self, now: u64) {
        if !CHANGES_MARK_SURVIVES_POWER_UP {
            self.ee.sent = self.ee.logged;
        }
        for _ in 0..3 {
            self.ee.push(EeEvent::Nop);
        }
        self.ee.push(EeEvent::PowerUp);
        for sq in DgtSquare::ALL {
            let piece = self.physical[usize::from(sq.index())];
            if !piece.is_empty() {
                self.ee.field(sq, piece, now);
            }
        }
        self.ee.last_field_ms = None;
        self.reported = self.physical;
        self.dirty_since = None;
        self.check_tags();
        let up = self.clock.as_ref().map(Dgt3000::high_side);
        self.lever.reset(up, now);
    }

    /// The board loses power and comes back (USB unplugged and replugged): bus mode, the
    /// power-up sequence in the EEPROM, nothing pending. The pieces stay where they are.
    pub fn power_cycle(&mut self, now: u64) {
        self.mode = BoardMode::Bus;
        self.parser = CommandParser::new();
        self.bus_skip = 0;
        self.bus_parser = BusCommandParser::new();
        self.bus_polled = false;
        self.ignore_next_ping = false;
        self.last_changes.clear();
        self.bus_out.clear();
        self.acks.clear();
        self.out.clear();
        self.last_bwtime = None;
        self.drop_next = [false; 64];
        self.power_up(now);
        if let Some(c) = self.clock.as_mut() {
            c.advance(now);
        }
    }

    /// The configuration.
    pub fn config(&self) -> &BoardConfig {
        &self.config
    }

    /// The current mode.
    pub fn mode(&self) -> BoardMode {
        self.mode
    }

    /// What is physically on the board (board-index order).
    pub fn physical(&self) -> &[PieceCode; 64] {
        &self.physical
    }

    /// What the scan has seen and reported so far.
    pub fn reported(&self) -> &[PieceCode; 64] {
        &self.reported
    }

    /// Counters.
    pub fn stats(&self) -> FirmwareStats {
        self.stats
    }

    /// Sets the battery charge answered to `0x4C` (`None`: a USB board that ignores it).
    pub fn set_battery_percent(&mut self, percent: Option<u8>) {
        self.config.battery_percent = percent;
    }

    /// The attached clock.
    pub fn clock(&self) -> Option<&Dgt3000> {
        self.clock.as_ref()
    }

    /// The attached clock, mutable.
    pub fn clock_mut(&mut self) -> Option<&mut Dgt3000> {
        self.clock.as_mut()
    }

    /// Attaches a clock, or removes it (`None`).
    pub fn attach_clock(&mut self, clock: Option<Dgt3000>) {
        self.clock = clock;
        self.acks.clear();
        let up = self.clock.as_ref().map(Dgt3000::high_side);
        let at = self.lever.epoch.max(self.scan_epoch);
        self.lever.reset(up, at);
    }

    /// Virtual times of the clock presses the event log never got: made between two of the
    /// board's readings of its clock with another press (see [`CLOCK_POLL_MS`]).
    pub fn unlogged_presses(&self) -> &[u64] {
        &self.lever.skipped
    }

    /// The EEPROM events stored (oldest first, without padding or EOF).
    pub fn ee_events(&self) -> Vec<EeEvent> {
        self.ee.events.iter().copied().collect()
    }

    /// Restarts the scan cycle at `now` (snapshots at `now + k * period`).
    pub fn rephase_scan(&mut self, now: u64) {
        self.scan_upto(now);
        self.scan_epoch = now;
    }

    /// Bytes to send to the host.
    pub fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// True when bytes wait to be sent.
    pub fn has_output(&self) -> bool {
        !self.out.is_empty() || !self.bus_out.is_empty()
    }

    /// Bus replies to send, oldest first, each with its timing (see [`BusTransmit`]).
    pub fn take_bus_output(&mut self) -> Vec<BusTransmit> {
        self.bus_out.drain(..).collect()
    }

    /// True when a host listens: it set an update mode, or (bus mode) it reads this
    /// board's changes.
    pub fn host_listening(&self) -> bool {
        self.mode.reports_fields() || self.bus_followed()
    }

    /// True when a host reads this board's changes in bus mode (how a host follows a board
    /// on a chain; an update mode set there is every board's, before the host knows them).
    pub fn bus_followed(&self) -> bool {
        self.mode == BoardMode::Bus && self.bus_polled
    }

    fn send(&mut self, msg: Message<'_>) {
        let at = self.out.len();
        self.out.resize(at + msg.encoded_len(), 0);
        match msg.encode(&mut self.out[at..]) {
            Ok(n) => self.out.truncate(at + n),
            Err(_) => self.out.truncate(at),
        }
    }

    /// Writes raw bytes on the line (line noise).
    pub fn inject_raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    // ----- the host side -------------------------------------------------------------

    /// Bytes from the host, at virtual time `now`.
    ///
    /// In bus mode a byte of 0x80 or more starts a bus command (answered when it names
    /// this board, or everyone for the broadcast ones); any other byte is a single-board
    /// command, which switches the board to single-board mode and is processed. In
    /// single-board mode a byte of 0x80 or more switches to bus mode, and that bus command
    /// is not processed (DGT's header).
    pub fn receive(&mut self, bytes: &[u8], now: u64) {
        for &b in bytes {
            if self.bus_skip > 0 {
                // The address and checksum bytes of the bus command that switched modes.
                self.bus_skip -= 1;
                self.stats.ignored_bytes += 1;
                continue;
            }
            if self.mode == BoardMode::Bus {
                match self.bus_parser.push(b) {
                    None => {}
                    Some(BusInput::Command(cmd)) => self.bus_command(cmd, now),
                    Some(BusInput::Unknown { .. } | BusInput::BadChecksum { .. }) => {
                        self.stats.ignored_bytes += BusCommand::LEN as u64;
                    }
                    Some(BusInput::Byte(b)) => {
                        self.mode = BoardMode::Idle;
                        self.single_board_byte(b, now);
                    }
                }
                continue;
            }
            self.single_board_byte(b, now);
        }
        self.tick(now);
    }

    fn single_board_byte(&mut self, b: u8, now: u64) {
        let Some(input) = self.parser.push(b) else { return };
        match input {
            HostInput::Command(cmd) => self.command(cmd, now),
            HostInput::BusModeByte(_) => {
                self.mode = BoardMode::Bus;
                self.parser = CommandParser::new();
                self.bus_skip = 3;
                self.stats.ignored_bytes += 1;
            }
            HostInput::Unknown(0x4A) => {
                self.mode = BoardMode::Bus;
            }
            HostInput::Unknown(_) | HostInput::Skipped { .. } | HostInput::BadClockMessage => {
                self.stats.ignored_bytes += 1;
            }
        }
    }

    // ----- bus mode ------------------------------------------------------------------

    fn bus_reply(&mut self, data: BusData<'_>, delay_ms: u32) {
        let reply = BusReply::new(self.config.bus_address(), data);
        let mut bytes = vec![0u8; reply.encoded_len()];
        if reply.encode(&mut bytes).is_ok() {
            self.bus_out.push_back(BusTransmit { bytes, delay_ms });
        }
    }

    fn bus_events(&mut self, events: &[EeEvent]) -> Vec<u8> {
        let mut raw = vec![0u8; 3 * events.len()];
        let n = encode_events(events, &mut raw).unwrap_or(0);
        raw.truncate(n);
        raw
    }

    /// One bus command (fact sheet 2.4, DGT's header).
    ///
    /// UNCONFIRMED choices: a broadcast `SEND_VERSION` (LiveChess sends one) is answered
    /// like a broadcast ping, at a random moment of the spread; other commands sent to
    /// address 0 but the ping, `END_BUSMODE` and `RESET` are ignored; `SEND_BRD_50B` gets
    /// no answer from a chess board; `RESET` restarts the board at once.
    fn bus_command(&mut self, cmd: BusCommand, now: u64) {
        let me = self.config.bus_address();
        if cmd.address != me && cmd.address != BROADCAST {
            return;
        }
        // What the scan has seen by now is in the EEPROM before anything is answered.
        self.scan_upto(now);
        let spread = |rng: &mut Rng| rng.range(0, u64::from(BROADCAST_SPREAD_MS) - 1) as u32;
        if cmd.is_broadcast() {
            match cmd.kind {
                BusCommandKind::Ping if std::mem::take(&mut self.ignore_next_ping) => {}
                BusCommandKind::Ping => {
                    let delay = spread(&mut self.rng);
                    self.bus_reply(BusData::Ping, delay);
                }
                BusCommandKind::SendVersion => {
                    let delay = spread(&mut self.rng);
                    let (major, minor) = self.config.version;
                    self.bus_reply(BusData::Version(Some((major & 0x7F, minor & 0x7F))), delay);
                }
                BusCommandKind::EndBusMode => self.mode = BoardMode::Idle,
                BusCommandKind::Reset => self.power_cycle(now),
                _ => self.stats.ignored_bytes += BusCommand::LEN as u64,
            }
            return;
        }
        match cmd.kind {
            BusCommandKind::SendClock => self.bus_clock(now),
            BusCommandKind::SendBoard => self.bus_board(),
            BusCommandKind::SendChanges => {
                // A host that reads the changes follows the board.
                self.bus_polled = true;
                self.bus_changes();
            }
            BusCommandKind::RepeatChanges => {
                let raw = self.last_changes.clone();
                self.bus_reply(BusData::Update(EeEvents::new(&raw)), 0);
            }
            BusCommandKind::SetStartGame => {
                self.ee.push(EeEvent::StartTag);
                self.ee.start_tag = Some(self.ee.logged - 1);
                for sq in DgtSquare::ALL {
                    let piece = self.reported[usize::from(sq.index())];
                    if !piece.is_empty() {
                        self.ee.push(EeEvent::Field { square: sq, piece, quick: false });
                    }
                }
                self.ee.last_field_ms = None;
                self.bus_reply(BusData::StartGameWritten, START_GAME_ANSWER_MS);
            }
            BusCommandKind::SendFromStart => {
                let events = match self.ee.start_tag {
                    Some(tag) => self.ee.range(tag, self.ee.sent.max(tag + 1)),
                    None => Vec::new(),
                };
                let raw = self.bus_events(&events);
                self.bus_reply(BusData::FromStart(EeEvents::new(&raw)), 0);
            }
            BusCommandKind::Ping => self.bus_reply(BusData::Ping, 0),
            BusCommandKind::IgnoreNextPing => {
                self.ignore_next_ping = true;
                self.bus_reply(BusData::Ping, 0);
            }
            BusCommandKind::SendVersion => {
                let (major, minor) = self.config.version;
                self.bus_reply(BusData::Version(Some((major & 0x7F, minor & 0x7F))), 0);
            }
            BusCommandKind::EndBusMode => self.mode = BoardMode::Idle,
            BusCommandKind::Reset => self.power_cycle(now),
            BusCommandKind::SendBoard50B => self.stats.ignored_bytes += BusCommand::LEN as u64,
            BusCommandKind::SendAllD => {
                self.bus_changes();
                self.bus_clock(now);
                self.bus_board();
            }
        }
    }

    fn bus_clock(&mut self, now: u64) {
        let times = self.clock_reading(now);
        self.stats.clock_times += 1;
        self.bus_reply(BusData::Bwtime(Bwtime::Times(times)), 0);
    }

    fn bus_board(&mut self) {
        let raw = self.physical.map(PieceCode::code);
        self.bus_reply(BusData::BoardDump(dgt_protocol::BoardDump { raw }), 0);
    }

    /// The events logged since the last `SEND_CHANGES`; the mark moves on.
    fn bus_changes(&mut self) {
        let events = self.ee.range(self.ee.sent, self.ee.logged);
        self.ee.sent = self.ee.logged;
        self.stats.field_updates +=
            events.iter().filter(|e| matches!(e, EeEvent::Field { .. })).count() as u64;
        self.last_changes = self.bus_events(&events);
        let raw = self.last_changes.clone();
        self.bus_reply(BusData::Update(EeEvents::new(&raw)), 0);
    }

    fn command(&mut self, cmd: Command, now: u64) {
        match cmd {
            Command::Reset => self.mode = BoardMode::Idle,
            Command::SendClock => {
                let times = self.clock_reading(now);
                self.send_times(times);
            }
            Command::SendBoard => self.send(Message::BoardDump(dgt_protocol::BoardDump {
                raw: self.physical.map(PieceCode::code),
            })),
            Command::SendUpdate => {
                self.mode = BoardMode::Update;
                self.next_periodic = now;
            }
            Command::SendUpdateBoard => self.mode = BoardMode::UpdateBoard,
            Command::SendUpdateNice => self.mode = BoardMode::UpdateNice,
            Command::ReturnSerialNumber => {
                let serial = ascii_field(&self.config.serial, 5);
                self.send(Message::SerialNumber(&serial));
            }
            Command::ReturnLongSerialNumber => {
                let serial = ascii_field(&self.config.long_serial, 10);
                self.send(Message::LongSerialNumber(&serial));
            }
            Command::ReturnBusAddress => self.send(Message::BusAddress(self.config.bus_address())),
            Command::SendTrademark => {
                let text: Vec<u8> = self.config.trademark.bytes().filter(|b| *b < 0x80).collect();
                self.send(Message::Trademark(&text));
            }
            Command::SendVersion => {
                let (major, minor) = self.config.version;
                self.send(Message::Version { major: major & 0x7F, minor: minor & 0x7F });
            }
            Command::SendBatteryStatus => {
                if let Some(pct) = self.config.battery_percent {
                    // charge, time left h/min (n/a), on time h/min, standby d/h/min, status
                    let payload = [pct.min(100), 0x7F, 0x7F, 0, 10, 0, 1, 0, 0x02];
                    self.send(Message::Battery(dgt_protocol::Battery { payload: &payload }));
                }
            }
            Command::SendEeMoves => {
                let events = self.ee.dump();
                let mut buf = vec![0u8; EE_PAYLOAD_LEN + 3];
                if let Ok(n) = encode_ee_moves(&events, &mut buf) {
                    self.out.extend_from_slice(&buf[..n]);
                }
                self.ee.push(EeEvent::Downloaded);
            }
            Command::Clock(c) => self.clock_command(c, now),
        }
    }

    fn clock_command(&mut self, cmd: ClockCommand, now: u64) {
        let ack_delay = self.config.ack_delay_ms;
        let Some(clock) = self.clock.as_mut() else { return };
        clock.advance(now);
        let (sub, ack2) = match cmd {
            ClockCommand::XlDisplay { segments, icons, .. } => {
                let hex: String = segments.iter().map(|s| format!("{s:02x}")).collect();
                clock.set_text(Some(format!("xl:{hex}:{icons:02x}")));
                (0x01, 0)
            }
            ClockCommand::Icons { .. } => (0x02, 0),
            ClockCommand::End => {
                clock.set_text(None);
                (0x03, 0)
            }
            ClockCommand::Button => (0x08, 0),
            ClockCommand::Version => {
                let (major, minor) = clock.version();
                (0x09, (major << 4) | (minor & 0x0F))
            }
            ClockCommand::SetAndRun { left, left_counts_up, right, right_counts_up, flags } => {
                clock.set_and_run(left, left_counts_up, right, right_counts_up, flags, now);
                (0x0A, 0)
            }
            ClockCommand::Beep { .. } => {
                clock.beep();
                (0x0B, 0)
            }
            ClockCommand::Ascii { text, beep } => {
                clock.set_text(Some(text.iter().map(|&b| char::from(b)).collect()));
                if beep != 0 {
                    clock.beep();
                }
                (0x0C, 0)
            }
            // A DGT 3000 does not know the Revelation II text: no answer.
            ClockCommand::Rev2Ascii { .. } => return,
        };
        self.acks.push_back((now + ack_delay, [ClockAck::ACK_OK, sub, ack2, 0]));
    }

    // ----- the player's side ---------------------------------------------------------

    /// A piece appears on (or, with [`PieceCode::Empty`], leaves) a square.
    pub fn set_piece(&mut self, square: DgtSquare, piece: PieceCode, now: u64) {
        self.scan_before(now);
        let i = usize::from(square.index());
        if self.physical[i] != piece {
            self.physical[i] = piece;
            self.dirty_since.get_or_insert(now);
        }
        if self.config.scan_period_ms == 0 {
            self.scan_upto(now);
        }
    }

    /// Puts a whole position on the board (an arbiter resetting it).
    pub fn set_position(&mut self, position: [PieceCode; 64], now: u64) {
        self.scan_before(now);
        if self.physical != position {
            self.physical = position;
            self.dirty_since.get_or_insert(now);
        }
        if self.config.scan_period_ms == 0 {
            self.scan_upto(now);
        }
    }

    /// The next report of `square` is lost (the dropped-update fault); dumps stay right. On
    /// a board read in bus mode, its log misses the change.
    pub fn drop_next_report(&mut self, square: DgtSquare) {
        self.drop_next[usize::from(square.index())] = true;
    }

    /// A player presses their clock button. Returns true when the lever moved.
    pub fn press_clock(&mut self, side: ClockSide, now: u64) -> bool {
        self.scan_before(now);
        let Some(clock) = self.clock.as_mut() else { return false };
        let moved = clock.press(side, now);
        if moved {
            // The board logs the halted side's time when it reads the lever moved.
            let period = self.config.clock_poll_ms;
            self.lever.pressed(now, period);
            if period == 0 {
                self.read_lever(now);
            }
        }
        self.tick(now);
        moved
    }

    /// A key on the clock is pressed (an auto-ack goes to the host in update modes).
    pub fn press_button(&mut self, button: Button, now: u64) {
        let delay = self.config.ack_delay_ms;
        if let Some(clock) = self.clock.as_mut() {
            let ack = clock.press_button(button, now);
            self.acks.push_back((now + delay, ack));
        }
        self.tick(now);
    }

    // ----- a hand script's board and clock -------------------------------------------

    /// A square changes the way a hand script (`crate::script`) states it: reported at once
    /// with one FIELD_UPDATE (in the modes that send them), or, with `report` false, not
    /// at all (a lost update). The scan would merge changes made within one scan period
    /// (a lift and a put-back on one square cancel out) and report them at its own instant
    /// in index order; a script already says which field updates the line carried, in
    /// which order and when, so its changes bypass the scan. The EEPROM logs the change
    /// either way and dumps show it.
    pub fn set_square_at_once(&mut self, square: DgtSquare, piece: PieceCode, report: bool, now: u64) {
        self.scan_before(now);
        let i = usize::from(square.index());
        self.physical[i] = piece;
        self.reported[i] = piece;
        self.ee.field(square, piece, now);
        if !report {
            self.stats.dropped_updates += 1;
        } else if self.mode.reports_fields() {
            self.send(Message::FieldUpdate(FieldUpdate::new(square, piece)));
            self.stats.field_updates += 1;
        }
        self.check_tags();
    }

    /// Clock presses as a hand script states them, all seen by one poll of the clock (two
    /// for the script's `press2`): each sets its side's display (bonus included) and puts
    /// the lever down on that side, and is logged in the EEPROM as a real press is; then
    /// one BWTIME reports them all, sent even if the clock reads as before (the script says
    /// one went out). Meant for a puppet clock ([`Dgt3000::make_puppet`]).
    pub fn scripted_presses(&mut self, presses: &[(ClockSide, u32)], now: u64) {
        self.scan_before(now);
        let Some(clock) = self.clock.as_mut() else { return };
        for &(side, display_s) in presses {
            clock.puppet_press(side, display_s, now);
            let time = clock.reading().side(side).time;
            self.ee.push(EeEvent::Time { side, time });
        }
        // A script states its presses' log itself: the lever as read is where it left it.
        let up = clock.high_side();
        self.lever.reset(Some(up), now);
        self.last_bwtime = None;
        self.tick(now);
    }

    // ----- time ----------------------------------------------------------------------

    fn latest_snapshot(&self, t: u64) -> Option<u64> {
        let p = self.config.scan_period_ms;
        if t < self.scan_epoch {
            return None;
        }
        if p == 0 {
            return Some(t);
        }
        Some(self.scan_epoch + (t - self.scan_epoch) / p * p)
    }

    /// Runs the scan that sees every change up to and including `t`, if one is due, and
    /// the clock reading that logs a press, in their order.
    fn scan_upto(&mut self, t: u64) {
        let reading = self.lever.due.filter(|d| *d <= t);
        let scan = self.dirty_since.and_then(|since| self.latest_snapshot(t).filter(|s| *s >= since));
        match (reading, scan) {
            (Some(r), Some(s)) if r < s => {
                self.read_lever(r);
                self.snapshot(s);
            }
            (r, s) => {
                if let Some(s) = s {
                    self.snapshot(s);
                }
                if let Some(r) = r {
                    self.read_lever(r);
                }
            }
        }
    }

    /// The board reads its clock at `at`: a lever moved since its last reading is logged
    /// with the halted side's time (see [`LeverLog`]).
    fn read_lever(&mut self, at: u64) {
        self.lever.due = None;
        let mut pending = core::mem::take(&mut self.lever.pending);
        let Some(clock) = self.clock.as_mut() else { return };
        clock.advance(at);
        let up = clock.high_side();
        if self.lever.seen != Some(up) {
            let halted = up.other();
            let time = clock.reading().side(halted).time;
            self.ee.push(EeEvent::Time { side: halted, time });
            // The last press is the one logged.
            pending.pop();
        }
        self.lever.seen = Some(up);
        self.lever.skipped.extend(pending);
    }

    /// Runs any scan due strictly before `t` (a scan at `t` also sees what happens at `t`).
    fn scan_before(&mut self, t: u64) {
        if t > 0 {
            self.scan_upto(t - 1);
        }
    }

    /// The first scan that sees a change made at `since`.
    fn first_snapshot_from(&self, since: u64) -> u64 {
        let p = self.config.scan_period_ms;
        if since <= self.scan_epoch {
            self.scan_epoch
        } else if p == 0 {
            since
        } else {
            self.scan_epoch + (since - self.scan_epoch).div_ceil(p) * p
        }
    }

    fn snapshot(&mut self, at: u64) {
        self.dirty_since = None;
        for sq in DgtSquare::ALL {
            let i = usize::from(sq.index());
            let piece = self.physical[i];
            if piece == self.reported[i] {
                continue;
            }
            self.reported[i] = piece;
            let dropped = std::mem::take(&mut self.drop_next[i]);
            // A board read in bus mode reports through its log: a lost report is a change
            // its log missed (its dumps stay right).
            if !(dropped && self.bus_followed()) {
                self.ee.field(sq, piece, at);
            }
            if dropped {
                self.stats.dropped_updates += 1;
                continue;
            }
            if self.mode.reports_fields() {
                self.send(Message::FieldUpdate(FieldUpdate::new(sq, piece)));
                self.stats.field_updates += 1;
            }
        }
        self.check_tags();
    }

    fn check_tags(&mut self) {
        let start = start_position();
        let diff = |a: &[PieceCode; 64]| self.reported.iter().zip(a).filter(|(x, y)| x != y).count();
        let normal = diff(&start);
        let turned = diff(&rotated(&start));
        let occupied = self.reported.iter().filter(|p| !p.is_empty()).count();
        if self.begin_armed && (normal == 0 || turned == 0) {
            self.ee.push(if normal == 0 { EeEvent::BeginPos } else { EeEvent::BeginPosRotated });
            self.begin_armed = false;
        } else if normal > 2 && turned > 2 {
            self.begin_armed = true;
        }
        if self.empty_armed && occupied == 0 {
            self.ee.push(EeEvent::EmptyBoard);
            self.empty_armed = false;
        } else if occupied > 2 {
            self.empty_armed = true;
        }
    }

    fn clock_reading(&mut self, now: u64) -> ClockTimes {
        match self.clock.as_mut() {
            Some(c) => {
                c.advance(now);
                c.reading()
            }
            None => ClockTimes { status: ClockStatus(0x20), ..ClockTimes::default() },
        }
    }

    fn send_times(&mut self, times: ClockTimes) {
        self.last_bwtime = Some(times.to_payload());
        self.send(Message::Bwtime(Bwtime::Times(times)));
        self.stats.clock_times += 1;
    }

    /// Does whatever is due at virtual time `now`: scans, clock times, clock acks.
    pub fn tick(&mut self, now: u64) {
        self.scan_upto(now);
        while let Some(&(due, ack)) = self.acks.front() {
            if due > now {
                break;
            }
            self.acks.pop_front();
            if self.mode.reports_clock() {
                self.send(Message::Bwtime(Bwtime::Ack(ClockAck::from_ack_bytes(ack))));
                self.stats.clock_acks += 1;
            } else {
                self.stats.acks_suppressed += 1;
            }
        }
        match self.mode {
            BoardMode::Update => {
                let times = self.clock_reading(now);
                if now >= self.next_periodic || self.last_bwtime != Some(times.to_payload()) {
                    self.send_times(times);
                    self.next_periodic = now + 1000;
                }
            }
            BoardMode::UpdateNice => {
                let times = self.clock_reading(now);
                if self.last_bwtime != Some(times.to_payload()) {
                    self.send_times(times);
                }
            }
            _ => {}
        }
    }

    /// The next virtual time at which [`Firmware::tick`] has something to do.
    pub fn next_deadline(&self, now: u64) -> Option<u64> {
        let mut next: Option<u64> = None;
        let mut consider = |t: u64| next = Some(next.map_or(t, |n: u64| n.min(t)));
        if let Some(since) = self.dirty_since {
            consider(self.first_snapshot_from(since));
        }
        if let Some(due) = self.lever.due {
            consider(due);
        }
        if let Some(&(due, _)) = self.acks.front() {
            consider(due);
        }
        if self.mode.reports_clock() {
            if self.mode == BoardMode::Update {
                consider(self.next_periodic);
            }
            if let Some(t) = self.clock.as_ref().and_then(|c| c.next_change_ms(now)) {
                consider(t);
            }
        }
        next
    }
}

fn ascii_field(text: &str, len: usize) -> Vec<u8> {
    let mut out: Vec<u8> = text.bytes().filter(|b| b.is_ascii() && !b.is_ascii_control()).take(len).collect();
    while out.len() < len {
        out.insert(0, b'0');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::TimeControl;
    use dgt_protocol::{ClockTime, Decoded, Decoder};

    #[derive(Debug, PartialEq)]
    enum Got {
        Field(u8, PieceCode),
        Times([u8; 7]),
        Ack([u8; 4]),
        Other(u8),
    }

    fn decode(bytes: &[u8]) -> Vec<Got> {
        let mut dec: Decoder = Decoder::new();
        let mut out = Vec::new();
        dec.feed(bytes, |d| {
            out.push(match d {
                Decoded::Message(Message::FieldUpdate(f)) => Got::Field(f.square.index(), f.piece()),
                Decoded::Message(Message::Bwtime(Bwtime::Times(t))) => Got::Times(t.to_payload()),
                Decoded::Message(Message::Bwtime(Bwtime::Ack(a))) => Got::Ack(a.ack_bytes()),
                Decoded::Message(m) => Got::Other(m.id()),
                _ => Got::Other(0xFF),
            })
        });
        out
    }

    fn sq(i: u8) -> DgtSquare {
        DgtSquare::new(i).unwrap()
    }

    fn bus(fw: &mut Firmware, kind: BusCommandKind, address: u16, now: u64) -> Vec<(u32, String)> {
        let bytes = BusCommand::new(kind, address).to_bytes().unwrap();
        fw.receive(&bytes, now);
        assert!(fw.take_output().is_empty(), "bus replies go out on their own queue");
        let mut dec: dgt_protocol::BusDecoder<8192> = dgt_protocol::BusDecoder::new();
        let mut out = Vec::new();
        for t in fw.take_bus_output() {
            dec.feed(&t.bytes, |d| match d {
                dgt_protocol::BusDecoded::Reply(r) => out.push((t.delay_ms, format!("{:?}", r))),
                other => panic!("{other:?}"),
            });
        }
        out
    }

    fn changes(fw: &mut Firmware, address: u16, now: u64) -> Vec<EeEvent> {
        let bytes = BusCommand::new(BusCommandKind::SendChanges, address).to_bytes().unwrap();
        fw.receive(&bytes, now);
        let mut dec: dgt_protocol::BusDecoder<8192> = dgt_protocol::BusDecoder::new();
        let mut out = Vec::new();
        for t in fw.take_bus_output() {
            dec.feed(&t.bytes, |d| match d {
                dgt_protocol::BusDecoded::Reply(BusReply { data: BusData::Update(e), address: a }) => {
                    assert_eq!(a, address);
                    out.extend(e.iter());
                }
                other => panic!("{other:?}"),
            });
        }
        out
    }

    #[test]
    fn bus_commands_are_answered_by_the_addressed_board_only() {
        let mut fw = Firmware::new(BoardConfig::with_serial(1025), start_position(), 0);
        let me = 1025;
        assert_eq!(fw.config().bus_address(), me);
        assert!(bus(&mut fw, BusCommandKind::Ping, 1026, 0).is_empty());
        assert!(!fw.host_listening());
        let got = bus(&mut fw, BusCommandKind::Ping, me, 0);
        assert_eq!(got, [(0, format!("{:?}", BusReply::new(me, BusData::Ping)))]);
        assert!(!fw.host_listening(), "a ping is not yet following the board");
        changes(&mut fw, me, 0);
        assert!(fw.host_listening(), "a host that reads the changes follows the board");
        let got = bus(&mut fw, BusCommandKind::SendVersion, me, 0);
        assert_eq!(got, [(0, format!("{:?}", BusReply::new(me, BusData::Version(Some((1, 80))))))]);
        let got = bus(&mut fw, BusCommandKind::SendBoard, me, 0);
        assert!(got[0].1.contains("BoardDump"), "{got:?}");
        let got = bus(&mut fw, BusCommandKind::SendClock, me, 0);
        assert!(got[0].1.contains("no_clock") || got[0].1.contains("Bwtime"), "{got:?}");
        assert_eq!(fw.mode(), BoardMode::Bus);
        // A single-board command switches it to single-board mode, and is processed.
        fw.receive(&[0x45], 0);
        assert_eq!(fw.mode(), BoardMode::Idle);
        assert_eq!(fw.take_output()[..3], [0x91, 0x00, 0x08]);
        // A bus command switches it back, unprocessed; the next one is answered.
        fw.receive(&BusCommand::new(BusCommandKind::Ping, me).to_bytes().unwrap(), 0);
        assert!(fw.take_bus_output().is_empty());
        assert_eq!(fw.mode(), BoardMode::Bus);
        assert_eq!(bus(&mut fw, BusCommandKind::Ping, me, 0).len(), 1);
    }

    #[test]
    fn changes_are_sent_once_and_repeated_on_request() {
        let mut fw = Firmware::new(
            BoardConfig { scan_period_ms: 0, ..BoardConfig::with_serial(300) },
            start_position(),
            0,
        );
        // The first poll brings the power-up listing.
        let first = changes(&mut fw, 300, 0);
        assert_eq!(&first[..4], &[EeEvent::Nop, EeEvent::Nop, EeEvent::Nop, EeEvent::PowerUp]);
        assert_eq!(first.last(), Some(&EeEvent::BeginPos));
        assert!(changes(&mut fw, 300, 10).is_empty());
        fw.set_piece(sq(52), PieceCode::Empty, 100);
        fw.set_piece(sq(36), PieceCode::WhitePawn, 500);
        let moved = changes(&mut fw, 300, 600);
        assert_eq!(
            moved,
            [
                EeEvent::Field { square: sq(52), piece: PieceCode::Empty, quick: false },
                EeEvent::Field { square: sq(36), piece: PieceCode::WhitePawn, quick: false }
            ]
        );
        let again = bus(&mut fw, BusCommandKind::RepeatChanges, 300, 700);
        assert!(again[0].1.contains("Update"));
        // A square that changes again after it was sent is a new event, not an overwrite.
        fw.set_piece(sq(36), PieceCode::Empty, 800);
        assert_eq!(
            changes(&mut fw, 300, 900),
            [EeEvent::Field { square: sq(36), piece: PieceCode::Empty, quick: false }]
        );
        // Unplugged (power gone) and back: what it logged comes with the power-up listing.
        fw.set_piece(sq(36), PieceCode::WhitePawn, 1500);
        fw.power_cycle(2000);
        let back = changes(&mut fw, 300, 2100);
        assert_eq!(back[0], EeEvent::Field { square: sq(36), piece: PieceCode::WhitePawn, quick: false });
        assert!(back.contains(&EeEvent::PowerUp));
    }

    #[test]
    fn broadcast_pings_are_spread_and_the_ignore_command_silences_the_next() {
        let mut fw = Firmware::new(BoardConfig::with_serial(77), start_position(), 0);
        let got = bus(&mut fw, BusCommandKind::Ping, BROADCAST, 0);
        assert_eq!(got.len(), 1);
        assert!(got[0].0 < BROADCAST_SPREAD_MS);
        let got = bus(&mut fw, BusCommandKind::IgnoreNextPing, 77, 0);
        assert_eq!(got, [(0, format!("{:?}", BusReply::new(77, BusData::Ping)))]);
        assert!(bus(&mut fw, BusCommandKind::Ping, BROADCAST, 0).is_empty());
        assert_eq!(bus(&mut fw, BusCommandKind::Ping, BROADCAST, 0).len(), 1);
        // SEND_ALL_D: changes, clock, board.
        let all = bus(&mut fw, BusCommandKind::SendAllD, 77, 0);
        assert_eq!(all.len(), 3);
        assert!(all[0].1.contains("Update") && all[1].1.contains("Bwtime") && all[2].1.contains("BoardDump"));
        // The start tag, then every piece, from the start.
        let w = bus(&mut fw, BusCommandKind::SetStartGame, 77, 0);
        assert_eq!(
            w,
            [(START_GAME_ANSWER_MS, format!("{:?}", BusReply::new(77, BusData::StartGameWritten)))]
        );
        changes(&mut fw, 77, 10);
        let bytes = BusCommand::new(BusCommandKind::SendFromStart, 77).to_bytes().unwrap();
        fw.receive(&bytes, 20);
        let out = fw.take_bus_output();
        let mut dec: dgt_protocol::BusDecoder<8192> = dgt_protocol::BusDecoder::new();
        let mut events = Vec::new();
        dec.feed(&out[0].bytes, |d| {
            if let dgt_protocol::BusDecoded::Reply(BusReply { data: BusData::FromStart(e), .. }) = d {
                events.extend(e.iter());
            }
        });
        assert_eq!(events[0], EeEvent::StartTag);
        assert_eq!(events.iter().filter(|e| matches!(e, EeEvent::Field { .. })).count(), 32);
    }

    /// The board logs a press when its reading of the clock finds the lever moved: two
    /// presses between two readings leave no trace, three the last one's time.
    #[test]
    fn presses_faster_than_the_boards_clock_readings_are_not_logged() {
        let mut fw =
            Firmware::new(BoardConfig { scan_period_ms: 0, ..BoardConfig::default() }, start_position(), 0);
        fw.attach_clock(Some(Dgt3000::new(TimeControl::fischer(180, 2), ClockSide::Left, 0)));
        if let Some(c) = fw.clock_mut() {
            c.start(0);
        }
        let times = |fw: &Firmware| -> Vec<EeEvent> {
            fw.ee_events().into_iter().filter(|e| matches!(e, EeEvent::Time { .. })).collect()
        };
        // One press, read at the next reading (every 400 ms from 0): White's 2:59 + 2.
        assert!(fw.press_clock(ClockSide::Left, 1_000));
        assert_eq!(fw.next_deadline(1_000), Some(1_200));
        fw.tick(1_200);
        let t = |m, s| ClockTime::new(0, m, s).unwrap();
        assert_eq!(times(&fw), [EeEvent::Time { side: ClockSide::Left, time: t(3, 1) }]);
        // Two presses between two readings: the lever is back where it was, nothing logged.
        assert!(fw.press_clock(ClockSide::Right, 1_300));
        assert!(fw.press_clock(ClockSide::Left, 1_500));
        fw.tick(1_600);
        assert_eq!(times(&fw).len(), 1);
        assert_eq!(fw.unlogged_presses(), [1_300, 1_500]);
        // Three: the last one's, read at its reading.
        assert!(fw.press_clock(ClockSide::Right, 2_500));
        assert!(fw.press_clock(ClockSide::Left, 2_600));
        assert!(fw.press_clock(ClockSide::Right, 2_700));
        fw.tick(2_800);
        let right = fw.clock().map(|c| c.reading().right.time);
        assert_eq!(times(&fw).last(), Some(&EeEvent::Time { side: ClockSide::Right, time: right.unwrap() }));
        assert_eq!(fw.unlogged_presses(), [1_300, 1_500, 2_500, 2_600]);
        // A board that reads its clock at every press logs every press.
        let mut every = Firmware::new(
            BoardConfig { scan_period_ms: 0, clock_poll_ms: 0, ..BoardConfig::default() },
            start_position(),
            0,
        );
        every.attach_clock(Some(Dgt3000::new(TimeControl::fischer(180, 2), ClockSide::Left, 0)));
        if let Some(c) = every.clock_mut() {
            c.start(0);
        }
        assert!(every.press_clock(ClockSide::Left, 1_000));
        assert!(every.press_clock(ClockSide::Right, 1_010));
        assert_eq!(times(&every).len(), 2);
    }

    #[test]
    fn scan_reports_a_placement_before_the_lift_when_its_index_comes_first() {
        let mut fw = Firmware::new(BoardConfig::default(), start_position(), 0);
        fw.receive(&[0x44], 0);
        // e2 (index 52) to e4 (index 36) within one scan period.
        fw.set_piece(sq(52), PieceCode::Empty, 50);
        fw.set_piece(sq(36), PieceCode::WhitePawn, 120);
        fw.tick(199);
        assert!(fw.take_output().is_empty(), "nothing before the scan");
        assert_eq!(fw.next_deadline(199), Some(200));
        fw.tick(200);
        assert_eq!(
            decode(&fw.take_output()),
            vec![Got::Field(36, PieceCode::WhitePawn), Got::Field(52, PieceCode::Empty)]
        );
        assert_eq!(fw.next_deadline(200), None);
    }

    #[test]
    fn battery_answers_follow_the_level_set_and_a_usb_board_stays_silent() {
        let mut fw = Firmware::new(BoardConfig::default(), start_position(), 0);
        let battery = |fw: &mut Firmware| {
            fw.receive(&[0x4C], 0);
            let out = fw.take_output();
            let mut dec: Decoder = Decoder::new();
            let mut got = Vec::new();
            dec.feed(&out, |d| {
                if let Decoded::Message(Message::Battery(b)) = d {
                    got.push((b.percent(), b.charging()));
                }
            });
            (got, out.len())
        };
        assert_eq!(battery(&mut fw).0, [(Some(100), Some(false))]);
        fw.set_battery_percent(Some(17));
        assert_eq!(battery(&mut fw).0, [(Some(17), Some(false))]);
        fw.set_battery_percent(None);
        assert_eq!(battery(&mut fw), (Vec::new(), 0));
    }

    #[test]
    fn dropped_reports_leave_dumps_right() {
        let mut fw =
            Firmware::new(BoardConfig { scan_period_ms: 0, ..BoardConfig::default() }, start_position(), 0);
        fw.receive(&[0x4B], 0);
        fw.take_output();
        fw.drop_next_report(sq(52));
        fw.set_piece(sq(52), PieceCode::Empty, 10);
        fw.set_piece(sq(36), PieceCode::WhitePawn, 20);
        assert_eq!(decode(&fw.take_output()), vec![Got::Field(36, PieceCode::WhitePawn)]);
        fw.receive(&[0x42], 30);
        let out = fw.take_output();
        assert_eq!(out.len(), 67);
        assert_eq!(out[3 + 52], 0);
        assert_eq!(out[3 + 36], PieceCode::WhitePawn.code());
    }

    /// On a chain the host reads the board's log: a lost report is a change the log
    /// missed, and only a dump shows it.
    #[test]
    fn a_dropped_report_of_a_board_read_in_bus_mode_is_missing_from_its_log() {
        let mut fw = Firmware::new(
            BoardConfig { scan_period_ms: 0, ..BoardConfig::with_serial(300) },
            start_position(),
            0,
        );
        changes(&mut fw, 300, 0);
        fw.drop_next_report(sq(52));
        fw.set_piece(sq(52), PieceCode::Empty, 10);
        fw.set_piece(sq(36), PieceCode::WhitePawn, 20);
        let logged = changes(&mut fw, 300, 30);
        assert_eq!(logged.len(), 1, "{logged:?}");
        assert!(
            matches!(logged[0], EeEvent::Field { square, piece: PieceCode::WhitePawn, .. } if square == sq(36))
        );
        let dump = bus(&mut fw, BusCommandKind::SendBoard, 300, 40);
        assert!(dump[0].1.contains("BoardDump"), "{dump:?}");
        assert_eq!(fw.physical()[52], PieceCode::Empty);
    }

    #[test]
    fn clock_acks_only_in_update_modes_and_times_by_mode() {
        let mut fw = Firmware::new(BoardConfig::default(), start_position(), 0);
        fw.attach_clock(Some(Dgt3000::new(TimeControl::fischer(300, 0), ClockSide::Left, 0)));
        let version = [0x2B, 0x03, 0x03, 0x09, 0x00];
        fw.receive(&[0x44], 0);
        fw.receive(&version, 0);
        fw.tick(1_000);
        assert!(fw.take_output().is_empty());
        assert_eq!(fw.stats().acks_suppressed, 1);
        fw.receive(&[0x4B], 1_000);
        fw.receive(&version, 1_000);
        fw.tick(1_100);
        let got = decode(&fw.take_output());
        assert!(got.contains(&Got::Ack([0x10, 0x09, 0x20, 0x00])), "{got:?}");
        // Paused clock in 0x4B: one reading, then nothing.
        fw.tick(5_000);
        assert!(fw.take_output().is_empty());
        // 0x43: at least once a second even when nothing changes.
        fw.receive(&[0x43], 5_000);
        for t in (5_100..=8_000).step_by(100) {
            fw.tick(t);
        }
        let times = decode(&fw.take_output()).into_iter().filter(|g| matches!(g, Got::Times(_))).count();
        assert_eq!(times, 4);
    }

    #[test]
    fn ee_memory_keeps_the_power_up_sequence_and_moves() {
        let mut fw =
            Firmware::new(BoardConfig { scan_period_ms: 0, ..BoardConfig::default() }, start_position(), 0);
        let ev = fw.ee_events();
        assert_eq!(&ev[..4], &[EeEvent::Nop, EeEvent::Nop, EeEvent::Nop, EeEvent::PowerUp]);
        assert_eq!(ev.iter().filter(|e| matches!(e, EeEvent::Field { .. })).count(), 32);
        assert_eq!(ev.last(), Some(&EeEvent::BeginPos));
        fw.set_piece(sq(52), PieceCode::Empty, 1000);
        fw.set_piece(sq(36), PieceCode::WhitePawn, 1100);
        let ev = fw.ee_events();
        assert_eq!(
            &ev[ev.len() - 2..],
            &[
                EeEvent::Field { square: sq(52), piece: PieceCode::Empty, quick: false },
                EeEvent::Field { square: sq(36), piece: PieceCode::WhitePawn, quick: true }
            ]
        );
        fw.attach_clock(Some(Dgt3000::new(TimeControl::fischer(180, 2), ClockSide::Left, 1100)));
        if let Some(c) = fw.clock_mut() {
            c.start(1100);
        }
        assert!(fw.press_clock(ClockSide::Left, 4_100));
        assert!(
            !fw.ee_events().iter().any(|e| matches!(e, EeEvent::Time { .. })),
            "logged at the next reading"
        );
        fw.tick(4_400);
        let time = ClockTime::new(0, 2, 59).unwrap();
        assert_eq!(fw.ee_events().last(), Some(&EeEvent::Time { side: ClockSide::Left, time }));
        fw.receive(&[0x49], 4200);
        let out = fw.take_output();
        assert_eq!(out.len(), EE_PAYLOAD_LEN + 3);
        assert_eq!(&out[..3], &[0x8F, 0x3E, 0x03]);
        assert_eq!(out.last(), Some(&0x6B));
        assert_eq!(fw.ee_events().last(), Some(&EeEvent::Downloaded));
    }
}
