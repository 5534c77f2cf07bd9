//! The serial conversation with one board, sans-IO: bytes and the time in, bytes to write
//! and [`LinkEvent`]s out.
//!
//! # Handshake (fact sheet 2.3, 8.3)
//! `40` (reset) then `4B` (update-nice mode), `4D` (version), `45` (serial number) and `42`
//! (full board dump), repeated every [`LinkTiming::handshake_retry_ms`] until the version
//! and serial number arrive. Then `42` again and the clock version command
//! `2B 03 03 09 00`, queued like every clock command. Board messages before that are
//! dropped: the dump that follows the answers brings the board state, as it was when the
//! board answered.
//!
//! # Battery (Bluetooth boards)
//! `4C` goes with the dump request at the handshake and then every
//! [`LinkTiming::battery_poll_ms`], one request at a time: a request not answered by the
//! next poll counts as lost. A board that never answers (USB boards ignore `4C`) is not
//! asked again after [`BATTERY_MISSES`] unanswered polls on this link.
//!
//! # Keep-alive and clock commands (fact sheet 7.3)
//! `45` every [`LinkTiming::keepalive_ms`]; when a keep-alive falls due and no message has
//! been decoded for longer than [`LinkTiming::silence_ms`], the link is lost. Only a
//! message the board sends (an answer, a dump, a field update, clock times, event-log
//! bytes) counts: bytes the decoder throws away, unknown or malformed messages do not, so a
//! board that sends nothing but line noise is lost like a silent one (its reason says
//! "line noise"). Clock commands go
//! one at a time: the next is sent only after the ack of the previous, a missing ack is
//! retried after [`LinkTiming::clock_ack_ms`], [`LinkTiming::clock_attempts`] attempts at
//! most; an error ack is retried once.
//!
//! # Event log (`49`)
//! The EEPROM dump arrives as a stream of events; they are gathered until the payload's
//! length is reached (or its end marker) and handed over as one [`LinkEvent::EventLog`].

use alloc::collections::VecDeque;
use alloc::{borrow::ToOwned, boxed::Box, format, string::String, vec::Vec};

use dgt_protocol::{AckKind, Bwtime, ClockAck, ClockCommand, Command, Decoded, Decoder, EeEvent, Message};

/// Clock commands waiting behind the one in flight, at most (the oldest is dropped).
pub const MAX_CLOCK_QUEUE: usize = 16;
/// Unanswered battery polls after which a board that never answered one is not polled
/// again on this link (a USB board).
pub const BATTERY_MISSES: u32 = 3;
/// Most EEPROM events kept from one event log by default (a full log holds at most 0x1F00
/// bytes, so nothing is dropped); see [`Link::limit_event_log`].
pub const MAX_EE_EVENTS: usize = 0x2000;

/// Timing of a link, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkTiming {
    /// Keep-alive (`45`) period.
    pub keepalive_ms: u64,
    /// Silence after which the board is declared lost.
    pub silence_ms: u64,
    /// Handshake retry period.
    pub handshake_retry_ms: u64,
    /// Handshake attempts before giving up on this opening of the port.
    pub handshake_attempts: u32,
    /// Clock ack timeout.
    pub clock_ack_ms: u64,
    /// Clock command attempts.
    pub clock_attempts: u32,
    /// Battery status (`4C`) poll period, after the first request at the handshake.
    pub battery_poll_ms: u64,
}

impl Default for LinkTiming {
    fn default() -> Self {
        LinkTiming {
            keepalive_ms: 1_000,
            silence_ms: 5_000,
            handshake_retry_ms: 2_000,
            handshake_attempts: 5,
            clock_ack_ms: 2_000,
            clock_attempts: 3,
            battery_poll_ms: 60_000,
        }
    }
}

impl LinkTiming {
    /// Default timing with a given silence limit; the keep-alive runs at least three times
    /// within it, so one late reply never looks like silence.
    pub fn with_silence(silence_ms: u64) -> LinkTiming {
        let d = LinkTiming::default();
        LinkTiming { silence_ms, keepalive_ms: d.keepalive_ms.min(silence_ms / 3).max(1), ..d }
    }
}

/// What the link reports, in the order it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkEvent {
    /// The board answered the handshake.
    Identified {
        /// Its serial number (ASCII digits).
        serial: String,
        /// Firmware version.
        version: (u8, u8),
    },
    /// A board message for the tracker: a dump, a field update or clock times.
    Board(Message<'static>),
    /// A clock answered the version command.
    ClockFound {
        /// Main and sub version.
        version: (u8, u8),
    },
    /// A clock command got no ack after every attempt.
    ClockCommandFailed(ClockCommand),
    /// The board answered a battery status request (Bluetooth boards).
    Battery {
        /// Charge, percent (0..=100).
        percent: u8,
        /// True while the board is charging (false when the board does not say).
        charging: bool,
    },
    /// The board's EEPROM event log (answer to [`Link::request_event_log`]), oldest first,
    /// without the closing end marker.
    EventLog(Vec<EeEvent>),
    /// Bytes were thrown away by the decoder.
    Noise(usize),
    /// The board stopped answering (silence) or never answered the handshake. Nothing
    /// more is sent or reported; the port should be reopened.
    Lost {
        /// Why, for people.
        reason: String,
    },
}

#[derive(Clone, Copy, Debug)]
struct InFlight {
    cmd: ClockCommand,
    sent_ms: u64,
    attempts: u32,
    error_retried: bool,
}

fn ack_matches(cmd: &ClockCommand, kind: AckKind) -> bool {
    matches!(
        (cmd, kind),
        (ClockCommand::XlDisplay { .. }, AckKind::Display)
            | (ClockCommand::Icons { .. }, AckKind::Icons)
            | (ClockCommand::End, AckKind::End)
            | (ClockCommand::Button, AckKind::Button)
            | (ClockCommand::Version, AckKind::Version { .. })
            | (ClockCommand::SetAndRun { .. }, AckKind::SetAndRun)
            | (ClockCommand::Beep { .. }, AckKind::Beep)
            | (ClockCommand::Ascii { .. }, AckKind::Ascii)
            | (ClockCommand::Rev2Ascii { .. }, AckKind::Rev2Ascii)
    )
}

/// The room for an event log of up to `events` events, taken at once before the first
/// arrives: as much as the allocator grants, halving down to [`EVENT_LOG_MIN`] (on a device
/// whose heap is nearly full, a shorter log reaches back less far, and the reconciliation
/// reconstructs from the board's position beyond it; growing the list event by event would
/// instead need its old and new blocks at once and could abort the program). Empty when not
/// even that is granted: the log's events are then dropped, never the program.
fn event_log_room(events: usize) -> Vec<EeEvent> {
    let mut room = events;
    let mut log = Vec::new();
    while room > 0 {
        if log.try_reserve_exact(room).is_ok() {
            return log;
        }
        if room <= EVENT_LOG_MIN {
            break;
        }
        room = (room / 2).max(EVENT_LOG_MIN);
    }
    log
}

/// The shortest event log room asked for before giving up (see [`event_log_room`]).
const EVENT_LOG_MIN: usize = 16;

/// Bytes an EEPROM event takes in the dump.
fn ee_len(e: &EeEvent) -> usize {
    match e {
        EeEvent::Malformed { len, .. } => usize::from(*len).max(1),
        other => other.encode(&mut [0u8; 3]).unwrap_or(1),
    }
}

/// The handshake's requests. The dump goes with them so that the first look at the board
/// is taken as the port opened, before any change the board reports after its answers: a
/// link that holds the answers back and lets them out with the first moves' reports (a
/// Bluetooth link) would otherwise show a game begun before the relay looked.
const HANDSHAKE: [Command; 4] =
    [Command::SendUpdateNice, Command::SendVersion, Command::ReturnSerialNumber, Command::SendBoard];

/// Where the dump asked with the handshake is (see [`Link::skip_handshake_dump`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HandshakeDump {
    /// Not come yet.
    Due,
    /// Among the events not yet taken.
    Queued,
    /// Taken, or left out.
    Done,
}

/// The serial conversation with one board on one opening of its port.
#[derive(Debug)]
pub struct Link {
    timing: LinkTiming,
    decoder: Box<Decoder<256>>,
    serial: Option<String>,
    version: Option<(u8, u8)>,
    identified: bool,
    lost: bool,
    clock_queue: VecDeque<ClockCommand>,
    in_flight: Option<InFlight>,
    /// A battery request waits for its answer.
    battery_outstanding: bool,
    /// Polls in a row that got no answer.
    battery_misses: u32,
    /// The board answered a battery request on this link.
    battery_answered: bool,
    /// An event log being received: its events so far and the payload bytes still due.
    ee: Option<(Vec<EeEvent>, usize)>,
    /// The handshake's dump: not yet come (`Due`), or given out (`Queued`, until taken).
    handshake_dump: HandshakeDump,
    /// Most events kept of an event log: the newest.
    max_ee: usize,
    handshake_attempts: u32,
    next_handshake_ms: u64,
    next_keepalive_ms: u64,
    next_battery_ms: u64,
    /// When the last message was decoded (or the port opened).
    last_rx_ms: u64,
    /// Bytes thrown away (noise, skipped or unknown messages) since the last decoded
    /// message.
    junk_since_rx: u64,
    out: Vec<u8>,
    events: VecDeque<LinkEvent>,
}

impl Link {
    /// A link on a port opened at `now`: the reset and the handshake are written at once.
    pub fn open(now: u64, timing: LinkTiming) -> Link {
        let battery_poll = timing.battery_poll_ms.max(100);
        let mut link = Link {
            timing,
            decoder: Box::new(Decoder::new()),
            serial: None,
            version: None,
            identified: false,
            lost: false,
            clock_queue: VecDeque::new(),
            in_flight: None,
            battery_outstanding: false,
            battery_misses: 0,
            battery_answered: false,
            ee: None,
            handshake_dump: HandshakeDump::Due,
            max_ee: MAX_EE_EVENTS,
            handshake_attempts: 1,
            next_handshake_ms: now + timing.handshake_retry_ms,
            next_keepalive_ms: now,
            next_battery_ms: now + battery_poll,
            last_rx_ms: now,
            junk_since_rx: 0,
            out: Vec::new(),
            events: VecDeque::new(),
        };
        link.send(&[Command::Reset]);
        link.send(&HANDSHAKE);
        link
    }

    /// Keeps at most `events` events of an event log, the newest (a device with little
    /// memory): the reconciliation then reaches back as far as they do, and reconstructs
    /// from the board's position beyond that.
    pub fn limit_event_log(&mut self, events: usize) {
        self.max_ee = events.max(1);
    }

    /// The timing in use.
    pub fn timing(&self) -> LinkTiming {
        self.timing
    }

    /// Leaves out the dump asked with the handshake (the first look as the port opened)
    /// for a caller that reads the board from the dump asked after it: a board it already
    /// follows, back after an outage, whose reconciliation reads its first dump beside the
    /// clock's first reading.
    pub fn skip_handshake_dump(&mut self) {
        match self.handshake_dump {
            // A dump still to come is let through: on a line that answers requests out of
            // turn (a chain's poller), it may be the one asked after the handshake.
            HandshakeDump::Due => {}
            HandshakeDump::Queued => {
                if let Some(i) =
                    self.events.iter().position(|e| matches!(e, LinkEvent::Board(Message::BoardDump(_))))
                {
                    self.events.remove(i);
                }
                self.handshake_dump = HandshakeDump::Done;
            }
            HandshakeDump::Done => {}
        }
    }

    /// True once the board answered the handshake.
    pub fn is_identified(&self) -> bool {
        self.identified
    }

    /// True once the link was lost ([`LinkEvent::Lost`]).
    pub fn is_lost(&self) -> bool {
        self.lost
    }

    /// The board's serial number, once it sent it.
    pub fn serial(&self) -> Option<&str> {
        self.serial.as_deref()
    }

    /// The bytes to write to the port since the last call.
    pub fn take_output(&mut self) -> Vec<u8> {
        core::mem::take(&mut self.out)
    }

    /// True when bytes wait to be written.
    pub fn has_output(&self) -> bool {
        !self.out.is_empty()
    }

    /// The next event, oldest first.
    pub fn next_event(&mut self) -> Option<LinkEvent> {
        let e = self.events.pop_front();
        if self.handshake_dump == HandshakeDump::Queued
            && matches!(e, Some(LinkEvent::Board(Message::BoardDump(_))))
        {
            self.handshake_dump = HandshakeDump::Done;
        }
        e
    }

    /// Asks for a full board dump (`42`); ignored before the handshake (its dump follows).
    pub fn request_dump(&mut self) {
        if self.identified && !self.lost {
            self.send(&[Command::SendBoard]);
        }
    }

    /// Asks for the board's event log (`49`); the answer becomes [`LinkEvent::EventLog`].
    /// Returns false (nothing sent) before the handshake or once lost.
    pub fn request_event_log(&mut self) -> bool {
        if self.identified && !self.lost {
            self.send(&[Command::SendEeMoves]);
            return true;
        }
        false
    }

    /// Queues a clock command (sent after the ack of the one in flight).
    pub fn queue_clock(&mut self, cmd: ClockCommand, now: u64) {
        if self.clock_queue.len() >= MAX_CLOCK_QUEUE {
            crate::log::warn!("clock command queue full; oldest dropped");
            self.clock_queue.pop_front();
        }
        self.clock_queue.push_back(cmd);
        if self.identified {
            self.pump_clock(now);
        }
    }

    /// When [`Link::poll`] should next be called, if ever (nothing is due once lost).
    pub fn next_deadline(&self) -> Option<u64> {
        if self.lost {
            return None;
        }
        let mut at = if self.identified { self.next_keepalive_ms } else { self.next_handshake_ms };
        if self.identified && self.battery_polling() {
            at = at.min(self.next_battery_ms);
        }
        if let Some(f) = &self.in_flight {
            at = at.min(f.sent_ms + self.timing.clock_ack_ms);
        }
        Some(at)
    }

    /// Runs what is due at `now`: handshake retries, keep-alive and silence, battery polls,
    /// clock acks that did not come.
    pub fn poll(&mut self, now: u64) {
        if self.lost {
            return;
        }
        if !self.identified && now >= self.next_handshake_ms {
            if self.handshake_attempts >= self.timing.handshake_attempts {
                let attempts = self.handshake_attempts;
                let noise = match self.junk_since_rx {
                    0 => String::new(),
                    n => format!(" (only line noise came: {n} bytes that decode to nothing)"),
                };
                self.lose(format!("no answer to the handshake after {attempts} attempts{noise}"));
                return;
            }
            self.handshake_attempts += 1;
            self.next_handshake_ms = now + self.timing.handshake_retry_ms;
            crate::log::debug!(attempts = self.handshake_attempts, "handshake retry");
            self.send(&HANDSHAKE);
        }
        if self.identified && now >= self.next_keepalive_ms {
            let silent = now.saturating_sub(self.last_rx_ms);
            if silent > self.timing.silence_ms {
                let why = match self.junk_since_rx {
                    0 => format!("no data for {silent} ms"),
                    n => format!("nothing decodable for {silent} ms, only line noise ({n} bytes)"),
                };
                self.lose(why);
                return;
            }
            self.next_keepalive_ms = now + self.timing.keepalive_ms;
            self.send(&[Command::ReturnSerialNumber]);
        }
        if self.identified && self.battery_polling() && now >= self.next_battery_ms {
            self.next_battery_ms = now + self.timing.battery_poll_ms.max(100);
            self.poll_battery();
        }
        if self.in_flight.is_some_and(|f| now >= f.sent_ms + self.timing.clock_ack_ms) {
            self.clock_timeout(now);
        }
    }

    /// Bytes read from the port at `now`.
    pub fn on_bytes(&mut self, now: u64, bytes: &[u8]) {
        if self.lost {
            return;
        }
        let mut got: Vec<Got> = Vec::new();
        let ee = &mut self.ee;
        let max_ee = self.max_ee;
        // Whether a message came (the board is alive), and the bytes thrown away.
        let mut heard = false;
        let mut junk = 0u64;
        self.decoder.feed(bytes, |d| match d {
            Decoded::Message(m) => match m {
                Message::Unknown { payload, .. } => {
                    junk += payload.len() as u64 + 3;
                    crate::log::trace!(?m, "unknown or malformed message");
                }
                Message::None | Message::Bwtime(Bwtime::Invalid(_)) => junk += m.encoded_len() as u64,
                m => {
                    heard = true;
                    Link::take_message(m, &mut got);
                }
            },
            Decoded::Noise { len } => {
                junk += len as u64;
                got.push(Got::Event(LinkEvent::Noise(len)));
            }
            Decoded::Skipped { id, total_len } => {
                junk += u64::from(total_len);
                crate::log::debug!(id, total_len, "oversized message skipped");
            }
            Decoded::EeMovesStart { total_len } => {
                heard = true;
                if ee.is_some() {
                    crate::log::debug!("event log cut short by another");
                }
                let payload = usize::from(total_len).saturating_sub(3);
                if payload == 0 {
                    got.push(Got::Event(LinkEvent::EventLog(Vec::new())));
                } else {
                    *ee = Some((event_log_room(payload.min(max_ee)), payload));
                }
            }
            Decoded::EeEvent(e) => {
                heard = true;
                let Some((events, due)) = ee.as_mut() else { return };
                *due = due.saturating_sub(ee_len(&e));
                if e != EeEvent::Eof {
                    let room = events.capacity().min(max_ee);
                    if room > 0 && events.len() >= room {
                        // The oldest quarter goes: the newest events are the ones that
                        // reach the board as it is now. The room never grows, so a long
                        // log costs no allocation beyond the one made at its start.
                        events.drain(..(room / 4).max(1));
                    }
                    if events.len() < events.capacity() {
                        events.push(e);
                    }
                }
                if (*due == 0 || e == EeEvent::Eof)
                    && let Some((events, _)) = ee.take()
                {
                    got.push(Got::Event(LinkEvent::EventLog(events)));
                }
            }
        });
        if heard {
            self.last_rx_ms = now;
            self.junk_since_rx = 0;
        }
        self.junk_since_rx = self.junk_since_rx.saturating_add(junk);
        self.after_read(now, got);
    }

    /// A decoded board message, sorted for the link's bookkeeping.
    fn take_message(m: Message<'_>, got: &mut Vec<Got>) {
        match m {
            Message::BoardDump(d) => got.push(Got::Board(Message::BoardDump(d))),
            Message::FieldUpdate(f) => got.push(Got::Board(Message::FieldUpdate(f))),
            Message::Bwtime(Bwtime::Times(t)) => got.push(Got::Board(Message::Bwtime(Bwtime::Times(t)))),
            Message::Bwtime(Bwtime::Ack(a)) => got.push(Got::Ack(a)),
            Message::Bwtime(Bwtime::Empty | Bwtime::Invalid(_)) => {}
            Message::SerialNumber(s) => got.push(Got::Serial(String::from_utf8_lossy(s).trim().to_owned())),
            Message::Version { major, minor } => got.push(Got::Version(major, minor)),
            Message::Battery(b) => match b.percent() {
                Some(percent) => got.push(Got::Battery {
                    percent: percent.min(100),
                    charging: b.charging().unwrap_or(false),
                }),
                None => crate::log::debug!("empty battery status ignored"),
            },
            other => crate::log::trace!(?other, "message ignored"),
        }
    }

    /// Carries out what one read produced, in order.
    fn after_read(&mut self, now: u64, got: Vec<Got>) {
        for g in got {
            match g {
                Got::Version(major, minor) => self.version = Some((major, minor)),
                Got::Serial(serial) => {
                    if self.identified && self.serial.as_ref() != Some(&serial) {
                        crate::log::warn!(%serial, "serial number changed on an open port");
                    }
                    self.serial = Some(serial);
                }
                // Before identification the tracker cannot use board data; the dump after
                // the handshake brings the board state.
                Got::Board(_) if !self.identified => {}
                Got::Board(m @ Message::BoardDump(_)) if self.handshake_dump == HandshakeDump::Due => {
                    self.handshake_dump = HandshakeDump::Queued;
                    self.events.push_back(LinkEvent::Board(m));
                }
                Got::Board(m) => self.events.push_back(LinkEvent::Board(m)),
                Got::Event(e) => self.events.push_back(e),
                Got::Ack(a) => self.clock_ack(a, now),
                Got::Battery { percent, charging } => {
                    self.battery_outstanding = false;
                    self.battery_misses = 0;
                    self.battery_answered = true;
                    self.events.push_back(LinkEvent::Battery { percent, charging });
                }
            }
            if !self.identified
                && let (Some(serial), Some(version)) = (&self.serial, self.version)
            {
                self.identified = true;
                self.events.push_back(LinkEvent::Identified { serial: serial.clone(), version });
                self.send(&[Command::SendBoard]);
                // The period counts from this first request, not from the opening.
                self.next_battery_ms = now + self.timing.battery_poll_ms.max(100);
                self.poll_battery();
                self.clock_queue.push_front(ClockCommand::Version);
                self.pump_clock(now);
            }
        }
        if let Some(noise) = self.decoder.take_noise() {
            self.junk_since_rx = self.junk_since_rx.saturating_add(noise as u64);
            self.events.push_back(LinkEvent::Noise(noise));
        }
        self.pump_clock(now);
    }

    /// A clock ack, in its place among the messages of its read: a version answer reports
    /// the clock; the ack of the command in flight (or an error ack) ends it, or sends it
    /// again after a first error.
    fn clock_ack(&mut self, a: ClockAck, now: u64) {
        if a.is_auto() {
            return;
        }
        let kind = a.kind();
        if let AckKind::Version { main, sub } = kind {
            self.events.push_back(LinkEvent::ClockFound { version: (main, sub) });
        }
        if let Some(f) = self.in_flight.as_mut()
            && (ack_matches(&f.cmd, kind) || !a.is_ok())
        {
            if a.is_ok() || f.error_retried {
                self.in_flight = None;
            } else {
                f.error_retried = true;
                f.sent_ms = now;
                let cmd = f.cmd;
                self.send(&[Command::Clock(cmd)]);
            }
        }
    }

    fn send(&mut self, cmds: &[Command]) {
        let mut buf = [0u8; 64];
        for c in cmds {
            match c.encode(&mut buf) {
                Ok(n) => self.out.extend_from_slice(&buf[..n]),
                Err(e) => crate::log::error!(?c, error = %e, "command not encodable; not sent"),
            }
        }
    }

    fn lose(&mut self, reason: String) {
        self.lost = true;
        self.events.push_back(LinkEvent::Lost { reason });
    }

    fn pump_clock(&mut self, now: u64) {
        if self.in_flight.is_none()
            && let Some(cmd) = self.clock_queue.pop_front()
        {
            self.send(&[Command::Clock(cmd)]);
            self.in_flight = Some(InFlight { cmd, sent_ms: now, attempts: 1, error_retried: false });
        }
    }

    /// False once a board that never answered a battery request missed enough of them.
    fn battery_polling(&self) -> bool {
        self.battery_answered || self.battery_misses < BATTERY_MISSES
    }

    /// Sends a battery request; one still unanswered is counted as lost first.
    fn poll_battery(&mut self) {
        if self.battery_outstanding {
            self.battery_misses += 1;
            if !self.battery_polling() {
                crate::log::debug!(misses = self.battery_misses, "no battery status: not polled again");
                return;
            }
        }
        self.battery_outstanding = true;
        self.send(&[Command::SendBatteryStatus]);
    }

    fn clock_timeout(&mut self, now: u64) {
        let Some(f) = self.in_flight.as_mut() else { return };
        if f.attempts >= self.timing.clock_attempts {
            let cmd = f.cmd;
            self.in_flight = None;
            crate::log::warn!(?cmd, "clock command not acknowledged; given up");
            self.events.push_back(LinkEvent::ClockCommandFailed(cmd));
            self.pump_clock(now);
            return;
        }
        f.attempts += 1;
        f.sent_ms = now;
        let cmd = f.cmd;
        self.send(&[Command::Clock(cmd)]);
    }
}

/// What one read produced, before the link's own bookkeeping.
enum Got {
    Board(Message<'static>),
    Serial(String),
    Version(u8, u8),
    Event(LinkEvent),
    /// A clock ack.
    Ack(ClockAck),
    /// A battery answer (also ends the outstanding request).
    Battery {
        percent: u8,
        charging: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use dgt_protocol::{BoardDump, DgtSquare, FieldUpdate, PieceCode};

    fn encode(m: &Message<'_>) -> Vec<u8> {
        let mut out = vec![0u8; m.encoded_len()];
        let n = m.encode(&mut out).unwrap();
        out.truncate(n);
        out
    }

    #[test]
    fn events_come_in_the_order_the_board_sent_them() {
        let mut link = Link::open(0, LinkTiming::default());
        let mut hello = encode(&Message::Version { major: 3, minor: 1 });
        hello.extend(encode(&Message::SerialNumber(b"24518")));
        link.on_bytes(1, &hello);
        assert!(matches!(link.next_event(), Some(LinkEvent::Identified { .. })));
        // The dump the handshake asked for, the clock's answer to the version query, a
        // field update: one read.
        let update =
            Message::FieldUpdate(FieldUpdate::new(DgtSquare::new(36).unwrap(), PieceCode::WhitePawn));
        let mut read = encode(&Message::BoardDump(BoardDump::EMPTY));
        read.extend(encode(&Message::Bwtime(Bwtime::Ack(ClockAck::from_ack_bytes([0x10, 0x09, 0x20, 0])))));
        read.extend(encode(&update));
        link.on_bytes(2, &read);
        let events: Vec<LinkEvent> = std::iter::from_fn(|| link.next_event()).collect();
        assert_eq!(
            events,
            [
                LinkEvent::Board(Message::BoardDump(BoardDump::EMPTY)),
                LinkEvent::ClockFound { version: (2, 0) },
                LinkEvent::Board(update),
            ]
        );
    }
}
