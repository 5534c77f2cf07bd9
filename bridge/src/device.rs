//! [`Device`]: the relay box's whole job, sans-IO: one board's session on one serial
//! line, and the bridge to a host on another.
//!
//! Bytes from the board, bytes from the host and the device's monotonic milliseconds go
//! in; bytes for the board and frames for the host come out. The firmware's main loop
//! only moves bytes between the UARTs and this, and sleeps until
//! [`Device::next_deadline`]; the same code runs in host unit tests.
//!
//! # The board
//! As the relay's port task does: a [`Link`] runs the handshake until the board tells its
//! serial number, then the link goes to the [`BoardSession`]. A link the session gives up
//! ([`LinkState::NotResponding`]) is opened again after [`DeviceConfig::reopen_ms`].
//!
//! # The host
//! Every effect of the session but the bytes for the board becomes a numbered
//! [`Record`]. The device keeps what a host journals of the current game (and of the
//! previous game until the host acknowledged the current one's start) as [`GameLog`]s,
//! and the last [`MAX_ALERTS`] alerts the host has not acknowledged. A host that
//! (re)connects says what it has ([`Resume`]); the device answers with the lines it is
//! missing, [`Up::Synced`], then the state that is not journaled (board, link, battery,
//! clock, provisional moves, unacknowledged alerts) as new records, then goes on live.
//! Frames for the host wait in a queue of [`DeviceConfig::bridge_queue`] bytes; a frame
//! that does not fit is dropped and counted, and the host, seeing the gap in the numbers,
//! resumes. A line is sent a move at a time as the queue drains, so a 600-ply game never
//! sits in memory as text.

use alloc::collections::VecDeque;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use dgt_core::{ResumePly, View};
use dgt_session::{BoardSession, Effect, Link, LinkState, SessionConfig};

use crate::convert::{game_result, move_wire, record_of, refusal_of};
use crate::frame::{FrameDecoder, FrameError, MAX_ENCODED, encode};
use crate::game::{GameLog, LineCursor, resume_from};
use crate::wire::{
    Action, AlertWire, ClockWire, DeviceHello, DeviceStatus, Down, LinkWire, Outcome, Record, Resume, Up,
};

/// Positions a catch-up search may visit on the device (see
/// [`dgt_core::Config::catch_up_budget`]): about 170 ms on a Cortex-M4.
pub const CATCH_UP_BUDGET: u32 = 10_000;
/// Unacknowledged alerts kept for a host that reconnects.
pub const MAX_ALERTS: usize = 8;
/// A line's next move is made once fewer bytes than this wait for the host.
const LINE_LOW_WATER: usize = 256;
/// A running clock's reading goes to the host at most this often; a change of which clock
/// runs, or of a flag, goes at once. The host counts down between readings, and every
/// move carries its own `%clk`.
pub const CLOCK_EVERY_MS: u64 = 1_000;

/// How a device behaves.
#[derive(Clone, Copy, Debug)]
pub struct DeviceConfig {
    /// The session's settings.
    pub session: SessionConfig,
    /// The firmware and its version, for [`DeviceHello`].
    pub firmware: &'static str,
    /// The board support, for [`DeviceHello`].
    pub platform: &'static str,
    /// The board's port, as the session names it to the operator.
    pub port: &'static str,
    /// Most bytes waiting for the host; a frame beyond is dropped.
    pub bridge_queue: usize,
    /// Wait before a board link is opened again after it was lost.
    pub reopen_ms: u64,
    /// Period of [`Up::Status`].
    pub status_ms: u64,
    /// Events kept of the board's event log after an outage, the newest (see
    /// [`Link::limit_event_log`]); their room (5 bytes each) is taken once, as the log begins.
    pub log_events: usize,
}

impl DeviceConfig {
    /// Default settings for a firmware and a platform.
    pub fn new(firmware: &'static str, platform: &'static str) -> DeviceConfig {
        DeviceConfig {
            // The line gets room for 300 plies (6 KiB; nearly every game) with its first ply,
            // a longer game 150 more at a time: few allocations to fragment the heap. A
            // catch-up search visits at most 10,000 positions (the host's 300,000 take five
            // seconds on a Cortex-M4, while the board's bytes wait). While a board's event
            // log is read, its messages are held as long as the heap grants room (a
            // reconciliation needs a few hundred); past that the box goes on from the
            // board's position instead of stopping.
            session: SessionConfig {
                line_capacity: 300,
                tracker: dgt_core::Config { catch_up_budget: CATCH_UP_BUDGET, ..dgt_core::Config::default() },
                ..SessionConfig::default()
            },
            firmware,
            platform,
            port: "UART0",
            bridge_queue: 1024,
            reopen_ms: 1_000,
            status_ms: 1_000,
            log_events: 1_024,
        }
    }
}

/// Figures the platform measures, reported in [`Up::Status`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlatformFigures {
    /// Heap bytes in use.
    pub heap_used: u32,
    /// Most heap bytes in use at once.
    pub heap_peak: u32,
    /// Most stack bytes used.
    pub stack_peak: u32,
    /// Bytes the UARTs received but could not keep (a receiver overrun).
    pub uart_lost: u32,
    /// The longest turn of the main loop, milliseconds (the board waits that long at most).
    pub longest_step_ms: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    Previous,
    Current,
}

/// A resume being answered.
#[derive(Debug)]
struct Resuming {
    /// Lines still to begin, with their first ply.
    lines: VecDeque<(Which, u16)>,
    /// The line under way, and the ply it ends with (its head's count: moves confirmed
    /// meanwhile come live, after [`Up::Synced`]).
    cursor: Option<(Which, LineCursor, u16)>,
    /// The last record the lines cover (`None` once [`Up::Synced`] is sent).
    synced: Option<u32>,
    /// The state a host does not journal, numbered again, sent after `Synced`.
    retell: VecDeque<(u32, Record)>,
}

/// The relay box. See the module docs.
#[derive(Debug)]
pub struct Device {
    config: DeviceConfig,
    session: BoardSession,
    /// A board link whose handshake is under way.
    opening: Option<Link>,
    reopen_at: Option<u64>,
    board_out: Vec<u8>,
    bridge_out: Vec<u8>,
    /// Frames made while a resume is answered, sent after it.
    held: Vec<u8>,
    frames: FrameDecoder,
    seq: u32,
    acked: u32,
    current: Option<GameLog>,
    previous: Option<GameLog>,
    alerts: VecDeque<(u32, AlertWire)>,
    serial: Option<String>,
    /// The board link's state, once the session told one.
    link: Option<LinkWire>,
    battery: Option<u8>,
    clock: Option<ClockWire>,
    /// A clock reading held back ([`CLOCK_EVERY_MS`]), and when the next may go.
    clock_held: Option<ClockWire>,
    next_clock: u64,
    resuming: Option<Resuming>,
    next_status: u64,
    /// When a Hello last answered a refused frame (at most one a second).
    last_refusal_hello: Option<u64>,
    dropped: u32,
    memory: PlatformFigures,
}

impl Device {
    /// A device started at `now`: the board's handshake and the greeting to the host are
    /// queued.
    pub fn new(now: u64, config: DeviceConfig) -> Device {
        let mut d = Device {
            config,
            session: BoardSession::new(1, None, config.session),
            opening: None,
            reopen_at: None,
            board_out: Vec::new(),
            // Its whole room at once: the queue never reallocates.
            bridge_out: Vec::with_capacity(config.bridge_queue + MAX_ENCODED),
            held: Vec::new(),
            frames: FrameDecoder::new(),
            seq: 0,
            acked: 0,
            current: None,
            previous: None,
            alerts: VecDeque::new(),
            serial: None,
            link: None,
            battery: None,
            clock: None,
            clock_held: None,
            next_clock: 0,
            resuming: None,
            next_status: now + config.status_ms,
            last_refusal_hello: None,
            dropped: 0,
            memory: PlatformFigures::default(),
        };
        d.hello(now);
        d.open_link(now);
        d
    }

    /// The session, for queries.
    pub fn session(&self) -> &BoardSession {
        &self.session
    }

    /// Bytes to write to the board, taken.
    pub fn take_board_output(&mut self) -> Vec<u8> {
        core::mem::take(&mut self.board_out)
    }

    /// Bytes waiting for the host, oldest first; tell [`Device::bridge_written`] how many
    /// went out.
    pub fn bridge_output(&self) -> &[u8] {
        &self.bridge_out
    }

    /// `n` bytes of [`Device::bridge_output`] were written: a line under way goes on.
    pub fn bridge_written(&mut self, n: usize) {
        self.bridge_out.drain(..n.min(self.bridge_out.len()));
        self.pump();
    }

    /// The platform's figures, for the next status.
    pub fn set_memory(&mut self, memory: PlatformFigures) {
        self.memory = memory;
    }

    /// What the device counts.
    pub fn status(&self, now: u64) -> DeviceStatus {
        let f = self.frames.stats();
        DeviceStatus {
            uptime_ms: now,
            seq: self.seq,
            acked: self.acked,
            frames: f.frames,
            bad_frames: f.bad,
            refused_frames: f.refused,
            dropped_frames: self.dropped,
            board_noise: u32::try_from(self.session.noise()).unwrap_or(u32::MAX),
            heap_used: self.memory.heap_used,
            heap_peak: self.memory.heap_peak,
            stack_peak: self.memory.stack_peak,
            uart_lost: self.memory.uart_lost,
            longest_step_ms: self.memory.longest_step_ms,
        }
    }

    /// When [`Device::poll`] should next be called.
    pub fn next_deadline(&self) -> u64 {
        let mut at = self.session.next_deadline().min(self.next_status);
        if let Some(d) = self.opening.as_ref().and_then(Link::next_deadline) {
            at = at.min(d);
        }
        if let Some(r) = self.reopen_at {
            at = at.min(r);
        }
        if self.clock_held.is_some() {
            at = at.min(self.next_clock);
        }
        at
    }

    /// Runs what is due at `now`.
    pub fn poll(&mut self, now: u64) {
        if let Some(link) = &mut self.opening
            && link.next_deadline().is_some_and(|d| now >= d)
        {
            link.poll(now);
            self.after_opening(now);
        }
        if self.reopen_at.is_some_and(|t| now >= t) {
            self.reopen_at = None;
            self.open_link(now);
        }
        if now >= self.session.next_deadline() {
            self.session.poll(now);
            self.drain(now);
        }
        if self.clock_held.is_some() && now >= self.next_clock {
            self.clock_reading(now, None);
        }
        if now >= self.next_status {
            self.next_status = now + self.config.status_ms;
            let status = self.status(now);
            self.emit(&Up::Status(status));
        }
        self.pump();
    }

    /// Bytes read from the board at `now`.
    pub fn on_board_bytes(&mut self, now: u64, bytes: &[u8]) {
        if let Some(link) = &mut self.opening {
            link.on_bytes(now, bytes);
            self.after_opening(now);
        } else {
            self.session.on_bytes(now, bytes);
            self.drain(now);
        }
    }

    /// Bytes read from the host at `now`.
    pub fn on_bridge_bytes(&mut self, now: u64, bytes: &[u8]) {
        let mut got = Vec::new();
        self.frames.feed(bytes, |f: Result<Down, FrameError>| got.push(f));
        for f in got {
            match f {
                Ok(down) => self.on_down(now, down),
                Err(FrameError::Version(_)) => {
                    // Tell the host which version speaks here, so it can say so.
                    if self.last_refusal_hello.is_none_or(|t| now >= t + 1_000) {
                        self.last_refusal_hello = Some(now);
                        self.hello(now);
                    }
                }
                Err(_) => {}
            }
        }
        self.pump();
    }

    fn on_down(&mut self, now: u64, down: Down) {
        match down {
            Down::Hello { .. } => {
                // A host that (re)connected resumes afresh: a resume under way, and what
                // waited behind it, were for the one before.
                self.resuming = None;
                self.held = Vec::new();
                self.hello(now);
            }
            Down::Resume(r) => self.resume(&r),
            Down::Ack { seq, key } => self.ack(seq, key),
            Down::Action { id, action } => self.action(now, id, action),
        }
    }

    fn hello(&mut self, now: u64) {
        let hello = DeviceHello {
            firmware: self.config.firmware.to_string(),
            platform: self.config.platform.to_string(),
            board: self.serial.clone(),
            uptime_ms: now,
        };
        self.emit(&Up::Hello(hello));
    }

    fn open_link(&mut self, now: u64) {
        let mut link = Link::open(now, self.config.session.link);
        link.limit_event_log(self.config.log_events);
        self.board_out.extend(link.take_output());
        self.opening = Some(link);
    }

    /// The handshake's progress: bytes to write, the board identified, or given up.
    fn after_opening(&mut self, now: u64) {
        let Some(link) = &mut self.opening else { return };
        self.board_out.extend(link.take_output());
        if link.is_identified() {
            if let Some(link) = self.opening.take() {
                self.attach(now, link);
            }
        } else if link.is_lost() {
            self.opening = None;
            self.reopen_at = Some(now + self.config.reopen_ms);
        }
    }

    fn attach(&mut self, now: u64, link: Link) {
        let serial = link.serial().map(str::to_string);
        if let (Some(new), Some(old)) = (&serial, self.session.serial())
            && new != old
        {
            // Another board on the port: a session of its own; the old board's games
            // are the host's to keep.
            self.session = BoardSession::new(self.session.number(), None, self.config.session);
            self.current = None;
            self.previous = None;
        }
        if let Some(s) = &serial
            && self.serial.as_ref() != Some(s)
        {
            self.tell(Record::Board { serial: s.clone() });
        }
        self.session.attach(now, link, self.config.port);
        self.drain(now);
    }

    /// Carries out the session's effects: bytes to the board, records to the host.
    fn drain(&mut self, now: u64) {
        while let Some(e) = self.session.next_effect() {
            match &e {
                Effect::Write(bytes) => self.board_out.extend_from_slice(bytes),
                Effect::Link(LinkState::NotResponding) if self.opening.is_none() => {
                    self.reopen_at = Some(now + self.config.reopen_ms);
                }
                _ => {}
            }
            match record_of(&e) {
                Some(Record::Clock(c)) => self.clock_reading(now, Some(c)),
                Some(record) => self.tell(record),
                None => {}
            }
        }
    }

    /// A clock reading (or, with `None`, the one held back, now due): told at once when
    /// which clock runs or a flag changed, else at most every [`CLOCK_EVERY_MS`].
    fn clock_reading(&mut self, now: u64, reading: Option<ClockWire>) {
        let Some(c) = reading.or(self.clock_held) else { return };
        let told = self.clock_held.or(self.clock);
        let changed = told.is_none_or(|t| {
            (t.white_running, t.white_flag, t.black_flag) != (c.white_running, c.white_flag, c.black_flag)
        });
        if changed || now >= self.next_clock {
            self.clock_held = None;
            self.next_clock = now + CLOCK_EVERY_MS;
            self.tell(Record::Clock(c));
        } else {
            self.clock_held = Some(c);
        }
    }

    /// Numbers a record, keeps what a resume needs of it, and sends it.
    fn tell(&mut self, record: Record) {
        let seq = self.note(&record);
        self.emit(&Up::Record { seq, record });
    }

    /// Numbers a record and keeps what a resume needs of it; returns its number.
    fn note(&mut self, record: &Record) -> u32 {
        self.seq += 1;
        let seq = self.seq;
        match record {
            Record::GameStarted { start, new_record: true } => {
                // The session has begun another line and handed over the old one's plies:
                // kept while the host may lack some of that game (it lags two games behind
                // only if it was away for a whole game: the older one is not kept).
                let finished = self.session.take_finished_plies();
                self.previous = self.current.take().filter(|g| g.last_seq > self.acked).map(|mut g| {
                    g.plies = finished.unwrap_or_default();
                    // Only its plies: the room left in the line is the next game's.
                    g.plies.shrink_to_fit();
                    g
                });
                self.current = Some(GameLog::new(start.clone(), seq));
            }
            Record::Board { serial } => self.serial = Some(serial.clone()),
            Record::Link(l) => self.link = Some(*l),
            Record::Battery(b) => self.battery = Some(*b),
            Record::Clock(c) => self.clock = Some(*c),
            Record::Alert(a) => {
                if self.alerts.len() == MAX_ALERTS {
                    self.alerts.pop_front();
                }
                self.alerts.push_back((seq, a.clone()));
            }
            other => {
                if let Some(g) = &mut self.current
                    && g.apply_head(other)
                {
                    g.last_seq = seq;
                }
            }
        }
        seq
    }

    fn ack(&mut self, seq: u32, key: Option<crate::wire::GameKey>) {
        if seq > self.seq {
            // Not a record of this run of the device: the host's numbers are from before a
            // restart of the device, and mean nothing here.
            return;
        }
        self.acked = self.acked.max(seq);
        if key.is_some() {
            if let Some(g) = self.current.as_mut().filter(|g| g.started <= seq) {
                g.key = key;
            } else if let Some(g) = self.previous.as_mut().filter(|g| g.started <= seq) {
                g.key = key;
            }
        }
        if self.current.as_ref().is_some_and(|g| g.started <= self.acked)
            || self.previous.as_ref().is_some_and(|g| g.last_seq <= self.acked)
        {
            self.previous = None;
        }
        let acked = self.acked;
        self.alerts.retain(|(s, _)| *s > acked);
    }

    /// Plans the lines a host with `r` is missing, then numbers again the state it does not
    /// journal; both go out after the lines, in that order.
    #[inline(never)]
    fn resume(&mut self, r: &Resume) {
        self.session.set_number(r.board);
        let mut lines = VecDeque::new();
        let is_host_game = |g: &GameLog| r.key.is_some() && g.key == r.key;
        let plies = self.session.game_plies();
        if let Some(prev) = self.previous.as_ref().filter(|g| is_host_game(g)) {
            lines.push_back((Which::Previous, resume_from(&prev.plies, r.plies, r.hash)));
            if self.current.is_some() {
                lines.push_back((Which::Current, 1));
            }
        } else if let Some(cur) = &mut self.current {
            let from = if is_host_game(cur) {
                resume_from(plies, r.plies, r.hash)
            } else if cur.key.is_none() && r.key.is_some() && resume_from(plies, r.plies, r.hash) > 1 {
                // The host journaled this game but its acknowledgement did not arrive
                // (it stopped first): its journal holds this game's first plies.
                cur.key = r.key;
                r.plies + 1
            } else {
                1
            };
            lines.push_back((Which::Current, from));
        }
        self.held = Vec::with_capacity(self.config.bridge_queue + MAX_ENCODED);
        let synced = self.seq;
        let retell = self.state_again();
        self.resuming = Some(Resuming { lines, cursor: None, synced: Some(synced), retell });
        self.pump();
    }

    /// The state a host does not journal, numbered again for a host that resumes (sent
    /// after the lines, as the queue to the host drains).
    fn state_again(&mut self) -> VecDeque<(u32, Record)> {
        let mut state = Vec::new();
        if let Some(s) = self.serial.clone() {
            state.push(Record::Board { serial: s });
        }
        if let Some(l) = self.link {
            state.push(Record::Link(l));
        }
        if let Some(b) = self.battery {
            state.push(Record::Battery(b));
        }
        if let Some(c) = self.clock {
            state.push(Record::Clock(c));
        }
        let confirmed = self.session.tracker().ply_count(View::Confirmed);
        self.session.tracker().for_each_move(View::Live, |m| {
            if usize::from(m.ply) > confirmed {
                state.push(Record::Move { confirmed: false, mv: move_wire(m) });
            }
        });
        // Numbered again, and so kept again by `note`.
        state.extend(self.alerts.drain(..).map(|(_, a)| Record::Alert(a)));
        state.into_iter().map(|r| (self.note(&r), r)).collect()
    }

    /// Sends the next moves of a resume while the queue to the host is short; at its end,
    /// what waited behind it.
    fn pump(&mut self) {
        let Some(mut r) = self.resuming.take() else { return };
        while self.bridge_out.len() < LINE_LOW_WATER {
            if let Some((which, cursor, end)) = &mut r.cursor {
                let mv = match self.line(*which) {
                    Some((_, plies)) => cursor.next_move(&plies[..plies.len().min(usize::from(*end))]),
                    None => None,
                };
                match mv {
                    Some(mv) => self.send_now(&Up::LineMove(mv)),
                    None => r.cursor = None,
                }
                continue;
            }
            if let Some((which, from)) = r.lines.pop_front() {
                if let Some((log, plies)) = self.line(which) {
                    let cursor = LineCursor::new(log, plies, from);
                    let head = log.head(plies.len(), from, cursor.fen());
                    let end = head.plies;
                    self.send_now(&Up::Line(head));
                    r.cursor = Some((which, cursor, end));
                }
                continue;
            }
            if let Some(seq) = r.synced.take() {
                self.send_now(&Up::Synced { seq });
                continue;
            }
            if let Some((seq, record)) = r.retell.pop_front() {
                self.send_now(&Up::Record { seq, record });
                continue;
            }
            let held = core::mem::take(&mut self.held);
            self.bridge_out.extend_from_slice(&held);
            return;
        }
        self.resuming = Some(r);
    }

    /// A game's log and its plies: the previous game keeps its own, the current game's are
    /// the session's line.
    fn line(&self, which: Which) -> Option<(&GameLog, &[ResumePly])> {
        match which {
            Which::Previous => self.previous.as_ref().map(|g| (g, g.plies.as_slice())),
            Which::Current => self.current.as_ref().map(|g| (g, self.session.game_plies())),
        }
    }

    // Not inlined: an action may restart the session's tracker, whose construction takes
    // a large stack frame; inlined, every frame from the host would pay for it.
    #[inline(never)]
    fn action(&mut self, now: u64, id: u16, action: Action) {
        let outcome = match action {
            Action::Flip => self.session.flip(now).map(|_| ()),
            Action::SetResult(r) => self.session.set_result(now, r.map(game_result)),
            Action::SetUnplayed(r) => self
                .session
                .set_ruling(now, Some(dgt_core::Ruling { result: game_result(r), unplayed: true })),
            Action::NewGame { fen } => self.session.new_game(now, fen.as_deref()),
            Action::Correct { from_ply, moves } => self.session.correct(now, usize::from(from_ply), &moves),
            Action::CheckCorrection { from_ply, moves } => {
                match self.session.check_correction(now, usize::from(from_ply), &moves) {
                    Ok(checked) => {
                        for m in &checked {
                            self.emit(&Up::Checked { id, mv: move_wire(m) });
                        }
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
        };
        self.drain(now);
        let outcome = match outcome {
            Ok(()) => Outcome::Done,
            Err(e) => Outcome::Refused(refusal_of(&e)),
        };
        self.emit(&Up::Done { id, outcome });
    }

    /// Queues a frame: behind a resume under way when it is numbered or an answer, else at
    /// once. A frame that does not fit is dropped and counted.
    fn emit(&mut self, up: &Up) {
        let behind =
            self.resuming.is_some() && matches!(up, Up::Record { .. } | Up::Done { .. } | Up::Checked { .. });
        let cap = self.config.bridge_queue;
        let queue = if behind { &mut self.held } else { &mut self.bridge_out };
        let start = queue.len();
        if encode(up, queue).is_err() || queue.len() > cap {
            queue.truncate(start);
            self.dropped += 1;
        }
    }

    /// Queues a frame of a resume (its pace is set by [`Device::pump`]).
    fn send_now(&mut self, up: &Up) {
        if encode(up, &mut self.bridge_out).is_err() {
            self.dropped += 1;
        }
    }
}
