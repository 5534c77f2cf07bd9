//! One serial port: open it, talk the DGT protocol, keep the board alive, reopen it when
//! it goes away.
//!
//! # Shape
//! [`run_port`] owns a port path for the relay's lifetime: it opens the port (9600 8N1,
//! raw, no flow control), runs a [`Session`] on it until the board stops answering or an
//! I/O error occurs, reports that, and reopens with backoff. A missing or busy port is
//! reported and retried, never fatal. The session itself is generic over the byte stream
//! ([`AsyncRead`] + [`AsyncWrite`]) so tests can drive it without a device.
//!
//! # Unplugged boards
//! An unplugged USB board, and a pty whose other end closed, make `read` return end of
//! file or an error (EIO, ENXIO) at once: the session ends there and then, it does not
//! wait for the silence limit (which stays the fallback for a board that is connected but
//! dead). The port is reopened [`REOPEN_FIRST`] later, then with backoff; while the device
//! node is missing its path is watched every [`NODE_POLL`], so a replugged board (same
//! path, or the same symlink) is opened as soon as it reappears.
//!
//! # Handshake (fact sheet 2.3, 8.3)
//! `40` (reset) then `4B` (update-nice mode), `4D` (version) and `45` (serial number),
//! repeated every 2 s until the version and serial number arrive. Then `42` (full board
//! dump) and the clock version command `2B 03 03 09 00`, queued like every clock command.
//! The board is identified by its serial number, so a board moved to another socket keeps
//! its board number and game.
//!
//! # Battery (Bluetooth boards)
//! `4C` (battery status) goes with the dump request at the handshake and then every
//! [`SessionTiming::battery_poll`], one request at a time: a request not answered by the
//! next poll counts as lost. A board that never answers (USB boards ignore `4C`) is not
//! asked again after [`BATTERY_MISSES`] unanswered polls in this session. Answers become
//! [`SerialEvent::Battery`].
//!
//! # Keep-alive and clock commands (fact sheet 7.3)
//! `45` every second; silence longer than the configured limit ends the session. Clock
//! commands go one at a time: the next is sent only after the ack of the previous, a
//! missing ack is retried after 2 s, three attempts at most; an error ack is retried once.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Duration;

use dgt_protocol::{AckKind, Bwtime, ClockCommand, Command, Decoded, Decoder, EeEvent, Message};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior};

use crate::shutdown::Listener;

/// Wait before the first reopening after a session ended (the board went away).
pub const REOPEN_FIRST: Duration = Duration::from_millis(100);
/// While a port's device node is missing, how often its path is checked.
pub const NODE_POLL: Duration = Duration::from_millis(50);
/// Most EEPROM events kept from one dump (a full dump holds at most 0x1F00 bytes).
const MAX_EE_EVENTS: usize = 0x2000;

/// Clock commands waiting behind the one in flight, at most.
pub const MAX_CLOCK_QUEUE: usize = 16;
/// Unanswered battery polls after which a board that never answered one is not polled again
/// in this session (a USB board).
pub const BATTERY_MISSES: u32 = 3;

/// Timing of a session.
#[derive(Clone, Copy, Debug)]
pub struct SessionTiming {
    /// Keep-alive (`45`) period.
    pub keepalive: Duration,
    /// Silence after which the board is declared not responding.
    pub silence: Duration,
    /// Handshake retry period.
    pub handshake_retry: Duration,
    /// Handshake attempts before giving up on this opening of the port.
    pub handshake_attempts: u32,
    /// Clock ack timeout.
    pub clock_ack: Duration,
    /// Clock command attempts.
    pub clock_attempts: u32,
    /// Battery status (`4C`) poll period, after the first request at the handshake.
    pub battery_poll: Duration,
}

impl Default for SessionTiming {
    fn default() -> Self {
        SessionTiming {
            keepalive: Duration::from_secs(1),
            silence: Duration::from_secs(5),
            handshake_retry: Duration::from_secs(2),
            handshake_attempts: 5,
            clock_ack: Duration::from_secs(2),
            clock_attempts: 3,
            battery_poll: Duration::from_secs(60),
        }
    }
}

impl SessionTiming {
    /// Default timing with a given silence limit; the keep-alive runs at least three times
    /// within it, so one late reply never looks like silence.
    pub fn with_silence(silence: Duration) -> SessionTiming {
        let d = SessionTiming::default();
        SessionTiming { silence, keepalive: d.keepalive.min(silence / 3), ..d }
    }
}

/// What the session tells the board layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SerialEvent {
    /// The port is open; the handshake starts.
    Opened,
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
    /// The board's EEPROM event log (answer to [`SessionCommand::RequestEeMoves`]), oldest
    /// first, without the closing EOF.
    EeMoves(Vec<EeEvent>),
    /// Bytes were thrown away by the decoder.
    Noise(usize),
    /// The session ended: silence, an I/O error, or no handshake. The port is reopened.
    Lost {
        /// Why, for people.
        reason: String,
    },
    /// The port could not be opened (missing, busy, no permission); retried.
    OpenFailed {
        /// Why, for people.
        reason: String,
    },
}

/// What the board layer asks of the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionCommand {
    /// Send `42` (full board dump).
    RequestDump,
    /// Send `49` (EEPROM event log); the answer becomes [`SerialEvent::EeMoves`].
    RequestEeMoves,
    /// Queue a clock command.
    Clock(ClockCommand),
}

/// Why a session ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionEnd {
    /// Shutdown was requested.
    Shutdown,
    /// The event receiver is gone.
    Detached,
    /// The board went away; the reason is for people.
    Lost(String),
}

struct InFlight {
    cmd: ClockCommand,
    sent: Instant,
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

/// A protocol session on one open byte stream.
pub struct Session<T> {
    io: T,
    timing: SessionTiming,
    events: mpsc::Sender<SerialEvent>,
    decoder: Box<Decoder<256>>,
    serial: Option<String>,
    version: Option<(u8, u8)>,
    identified: bool,
    clock_queue: VecDeque<ClockCommand>,
    in_flight: Option<InFlight>,
    /// A battery request waits for its answer.
    battery_outstanding: bool,
    /// Polls in a row that got no answer.
    battery_misses: u32,
    /// The board answered a battery request in this session.
    battery_answered: bool,
    /// An EEPROM dump being received: its events so far and the payload bytes still due.
    ee: Option<(Vec<EeEvent>, usize)>,
}

impl<T: AsyncRead + AsyncWrite + Unpin> Session<T> {
    /// A session on `io`, reporting to `events`.
    pub fn new(io: T, timing: SessionTiming, events: mpsc::Sender<SerialEvent>) -> Self {
        Session {
            io,
            timing,
            events,
            decoder: Box::new(Decoder::new()),
            serial: None,
            version: None,
            identified: false,
            clock_queue: VecDeque::new(),
            in_flight: None,
            battery_outstanding: false,
            battery_misses: 0,
            battery_answered: false,
            ee: None,
        }
    }

    async fn send(&mut self, cmds: &[Command]) -> std::io::Result<()> {
        let mut buf = [0u8; 64];
        let mut n = 0;
        for c in cmds {
            n += c
                .encode(&mut buf[n..])
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
        }
        self.io.write_all(&buf[..n]).await?;
        self.io.flush().await
    }

    async fn emit(&self, e: SerialEvent) -> bool {
        self.events.send(e).await.is_ok()
    }

    async fn pump_clock(&mut self) -> std::io::Result<()> {
        if self.in_flight.is_none()
            && let Some(cmd) = self.clock_queue.pop_front()
        {
            self.send(&[Command::Clock(cmd)]).await?;
            self.in_flight = Some(InFlight { cmd, sent: Instant::now(), attempts: 1, error_retried: false });
        }
        Ok(())
    }

    fn queue_clock(&mut self, cmd: ClockCommand) {
        if self.clock_queue.len() >= MAX_CLOCK_QUEUE {
            tracing::warn!("clock command queue full; oldest dropped");
            self.clock_queue.pop_front();
        }
        self.clock_queue.push_back(cmd);
    }

    /// Runs until the board is lost, shutdown, or the board layer goes away.
    pub async fn run(
        &mut self,
        mut commands: mpsc::Receiver<SessionCommand>,
        mut stop: Listener,
    ) -> SessionEnd {
        match self.run_inner(&mut commands, &mut stop).await {
            Ok(end) => end,
            Err(e) => SessionEnd::Lost(gone_reason(&e)),
        }
    }

    async fn run_inner(
        &mut self,
        commands: &mut mpsc::Receiver<SessionCommand>,
        stop: &mut Listener,
    ) -> std::io::Result<SessionEnd> {
        if !self.emit(SerialEvent::Opened).await {
            return Ok(SessionEnd::Detached);
        }
        self.send(&[Command::Reset]).await?;
        let handshake = [Command::SendUpdateNice, Command::SendVersion, Command::ReturnSerialNumber];
        self.send(&handshake).await?;
        let mut attempts = 1;
        let mut handshake_timer = tokio::time::interval_at(
            Instant::now() + self.timing.handshake_retry,
            self.timing.handshake_retry,
        );
        let mut keepalive = tokio::time::interval(self.timing.keepalive);
        keepalive.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let battery_poll = self.timing.battery_poll.max(Duration::from_millis(100));
        let mut battery_timer = tokio::time::interval_at(Instant::now() + battery_poll, battery_poll);
        battery_timer.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut last_rx = Instant::now();
        let mut buf = [0u8; 512];
        let mut commands_open = true;
        loop {
            let ack_deadline = self.in_flight.as_ref().map(|f| f.sent + self.timing.clock_ack);
            tokio::select! {
                _ = stop.wait() => return Ok(SessionEnd::Shutdown),
                n = self.io.read(&mut buf) => {
                    // End of file or a read error: the device is gone (unplugged, or the
                    // other end of a pty closed). Reported at once, not after the silence.
                    let n = n?;
                    if n == 0 {
                        return Ok(SessionEnd::Lost("the device went away (end of file on the port)".into()));
                    }
                    last_rx = Instant::now();
                    if !self.handle_bytes(&buf[..n]).await? {
                        return Ok(SessionEnd::Detached);
                    }
                }
                cmd = commands.recv(), if commands_open => match cmd {
                    None => commands_open = false,
                    Some(SessionCommand::RequestDump) => {
                        if self.identified {
                            self.send(&[Command::SendBoard]).await?;
                        }
                    }
                    Some(SessionCommand::RequestEeMoves) => {
                        if self.identified {
                            self.send(&[Command::SendEeMoves]).await?;
                        }
                    }
                    Some(SessionCommand::Clock(c)) => {
                        self.queue_clock(c);
                        if self.identified {
                            self.pump_clock().await?;
                        }
                    }
                },
                _ = handshake_timer.tick(), if !self.identified => {
                    if attempts >= self.timing.handshake_attempts {
                        return Ok(SessionEnd::Lost(format!("no answer to the handshake after {attempts} attempts")));
                    }
                    attempts += 1;
                    tracing::debug!(attempts, "handshake retry");
                    self.send(&handshake).await?;
                }
                _ = keepalive.tick(), if self.identified => {
                    if last_rx.elapsed() > self.timing.silence {
                        return Ok(SessionEnd::Lost(format!(
                            "no data for {} ms", last_rx.elapsed().as_millis()
                        )));
                    }
                    self.send(&[Command::ReturnSerialNumber]).await?;
                }
                _ = battery_timer.tick(), if self.identified && self.battery_polling() => {
                    self.poll_battery().await?;
                }
                _ = sleep_until_opt(ack_deadline) => {
                    self.clock_timeout().await?;
                }
            }
            if let Some(noise) = self.decoder.take_noise()
                && !self.emit(SerialEvent::Noise(noise)).await
            {
                return Ok(SessionEnd::Detached);
            }
        }
    }

    /// False once a board that never answered a battery request missed enough of them.
    fn battery_polling(&self) -> bool {
        self.battery_answered || self.battery_misses < BATTERY_MISSES
    }

    /// Sends a battery request; one still unanswered is counted as lost first.
    async fn poll_battery(&mut self) -> std::io::Result<()> {
        if self.battery_outstanding {
            self.battery_misses += 1;
            if !self.battery_polling() {
                tracing::debug!(misses = self.battery_misses, "no battery status: not polled again");
                return Ok(());
            }
        }
        self.battery_outstanding = true;
        self.send(&[Command::SendBatteryStatus]).await
    }

    async fn clock_timeout(&mut self) -> std::io::Result<()> {
        let Some(f) = self.in_flight.as_mut() else { return Ok(()) };
        if f.attempts >= self.timing.clock_attempts {
            let cmd = f.cmd;
            self.in_flight = None;
            tracing::warn!(?cmd, "clock command not acknowledged; given up");
            let _ = self.events.send(SerialEvent::ClockCommandFailed(cmd)).await;
            return self.pump_clock().await;
        }
        f.attempts += 1;
        f.sent = Instant::now();
        let cmd = f.cmd;
        self.send(&[Command::Clock(cmd)]).await
    }

    /// Decodes bytes; returns false when the board layer is gone.
    async fn handle_bytes(&mut self, bytes: &[u8]) -> std::io::Result<bool> {
        let mut out: Vec<Got> = Vec::new();
        let mut acks = Vec::new();
        self.decoder.feed(bytes, |d| match d {
            Decoded::Message(m) => match m {
                Message::BoardDump(d) => out.push(Got::Board(Message::BoardDump(d))),
                Message::FieldUpdate(f) => out.push(Got::Board(Message::FieldUpdate(f))),
                Message::Bwtime(Bwtime::Times(t)) => out.push(Got::Board(Message::Bwtime(Bwtime::Times(t)))),
                Message::Bwtime(Bwtime::Ack(a)) => acks.push(a),
                Message::Bwtime(Bwtime::Empty | Bwtime::Invalid(_)) => {}
                Message::SerialNumber(s) => {
                    out.push(Got::Serial(String::from_utf8_lossy(s).trim().to_owned()))
                }
                Message::Version { major, minor } => out.push(Got::Version(major, minor)),
                Message::Battery(b) => match b.percent() {
                    Some(percent) => out.push(Got::Battery(SerialEvent::Battery {
                        percent: percent.min(100),
                        charging: b.charging().unwrap_or(false),
                    })),
                    None => tracing::debug!("empty battery status ignored"),
                },
                other => tracing::trace!(?other, "message ignored"),
            },
            Decoded::Noise { len } => out.push(Got::Event(SerialEvent::Noise(len))),
            Decoded::Skipped { id, total_len } => tracing::debug!(id, total_len, "oversized message skipped"),
            Decoded::EeMovesStart { total_len } => {
                if self.ee.is_some() {
                    tracing::debug!("EEPROM dump cut short by another");
                }
                let payload = usize::from(total_len).saturating_sub(3);
                if payload == 0 {
                    out.push(Got::Event(SerialEvent::EeMoves(Vec::new())));
                } else {
                    self.ee = Some((Vec::new(), payload));
                }
            }
            Decoded::EeEvent(e) => {
                let Some((events, due)) = self.ee.as_mut() else { return };
                *due = due.saturating_sub(ee_len(&e));
                if e != EeEvent::Eof && events.len() < MAX_EE_EVENTS {
                    events.push(e);
                }
                if (*due == 0 || e == EeEvent::Eof)
                    && let Some((events, _)) = self.ee.take()
                {
                    out.push(Got::Event(SerialEvent::EeMoves(events)));
                }
            }
        });
        for a in acks {
            if a.is_auto() {
                continue;
            }
            let kind = a.kind();
            if let AckKind::Version { main, sub } = kind {
                out.push(Got::Event(SerialEvent::ClockFound { version: (main, sub) }));
            }
            if let Some(f) = self.in_flight.as_mut()
                && (ack_matches(&f.cmd, kind) || !a.is_ok())
            {
                if a.is_ok() || f.error_retried {
                    self.in_flight = None;
                } else {
                    f.error_retried = true;
                    f.sent = Instant::now();
                    let cmd = f.cmd;
                    self.send(&[Command::Clock(cmd)]).await?;
                }
            }
        }
        for got in out {
            match got {
                Got::Version(major, minor) => self.version = Some((major, minor)),
                Got::Serial(serial) => {
                    if self.identified && self.serial.as_ref() != Some(&serial) {
                        tracing::warn!(%serial, "serial number changed on an open port");
                    }
                    self.serial = Some(serial);
                }
                // Before identification the tracker cannot use board data; the dump after
                // the handshake brings the board state.
                Got::Board(_) if !self.identified => {}
                Got::Board(m) => {
                    if !self.emit(SerialEvent::Board(m)).await {
                        return Ok(false);
                    }
                }
                Got::Event(e) => {
                    if !self.emit(e).await {
                        return Ok(false);
                    }
                }
                Got::Battery(e) => {
                    self.battery_outstanding = false;
                    self.battery_misses = 0;
                    self.battery_answered = true;
                    if !self.emit(e).await {
                        return Ok(false);
                    }
                }
            }
            if !self.identified
                && let (Some(serial), Some(version)) = (&self.serial, self.version)
            {
                self.identified = true;
                let ev = SerialEvent::Identified { serial: serial.clone(), version };
                if !self.emit(ev).await {
                    return Ok(false);
                }
                self.send(&[Command::SendBoard]).await?;
                self.poll_battery().await?;
                self.clock_queue.push_front(ClockCommand::Version);
                self.pump_clock().await?;
            }
        }
        self.pump_clock().await?;
        Ok(true)
    }
}

/// What one read produced, before the session's own bookkeeping.
enum Got {
    Board(Message<'static>),
    Serial(String),
    Version(u8, u8),
    Event(SerialEvent),
    /// A battery answer (also ends the outstanding request).
    Battery(SerialEvent),
}

/// Bytes an EEPROM event takes in the dump.
fn ee_len(e: &EeEvent) -> usize {
    match e {
        EeEvent::Malformed { len, .. } => usize::from(*len).max(1),
        other => other.encode(&mut [0u8; 3]).unwrap_or(1),
    }
}

/// Why a session ended on an I/O error, for people: a vanished device says so.
fn gone_reason(e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    let gone = matches!(
        e.kind(),
        ErrorKind::BrokenPipe | ErrorKind::NotConnected | ErrorKind::UnexpectedEof | ErrorKind::NotFound
    ) || matches!(e.raw_os_error(), Some(5 | 6 | 19)); // EIO, ENXIO, ENODEV
    if gone { format!("the device went away ({e})") } else { format!("I/O error: {e}") }
}

async fn sleep_until_opt(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// How [`run_port`] behaves.
#[derive(Clone, Debug)]
pub struct PortOptions {
    /// Session timing.
    pub timing: SessionTiming,
    /// Stop (instead of retrying) when the device node disappears: for discovered ports,
    /// which discovery restarts when the node comes back.
    pub exit_when_missing: bool,
    /// Longest wait between two opening attempts.
    pub max_backoff: Duration,
}

impl Default for PortOptions {
    fn default() -> Self {
        PortOptions {
            timing: SessionTiming::default(),
            exit_when_missing: false,
            max_backoff: Duration::from_secs(5),
        }
    }
}

/// Opens a serial port at 9600 8N1, raw, no flow control, with DTR raised (best effort:
/// a pseudo-terminal has no modem lines) and stale input flushed.
pub fn open_port(path: &std::path::Path) -> Result<tokio_serial::SerialStream, tokio_serial::Error> {
    use tokio_serial::SerialPort;
    let builder = tokio_serial::new(path.to_string_lossy(), 9600)
        .data_bits(tokio_serial::DataBits::Eight)
        .parity(tokio_serial::Parity::None)
        .stop_bits(tokio_serial::StopBits::One)
        .flow_control(tokio_serial::FlowControl::None)
        .timeout(Duration::from_millis(100));
    let mut port = tokio_serial::SerialStream::open(&builder)?;
    if let Err(e) = port.write_data_terminal_ready(true) {
        tracing::trace!(error = %e, "DTR not supported on this port");
    }
    if let Err(e) = port.clear(tokio_serial::ClearBuffer::Input) {
        tracing::trace!(error = %e, "input flush not supported on this port");
    }
    Ok(port)
}

/// Runs sessions on one port path until shutdown: open, session, report, reopen with
/// backoff. `commands` is kept across sessions; commands sent while the port is closed
/// wait for the next session (bounded by the channel).
///
/// A session that ends (the board went away) is reported at once and the port is reopened
/// [`REOPEN_FIRST`] later; failed openings back off up to `max_backoff`, but while the
/// device node is missing the path is checked every [`NODE_POLL`] and opened as soon as it
/// is back (a replugged board).
pub async fn run_port(
    path: PathBuf,
    events: mpsc::Sender<SerialEvent>,
    mut commands: mpsc::Receiver<SessionCommand>,
    mut stop: Listener,
    opts: PortOptions,
) {
    let mut backoff = REOPEN_FIRST;
    let mut last_open_error = String::new();
    loop {
        if stop.is_triggered() {
            return;
        }
        match open_port(&path) {
            Ok(port) => {
                last_open_error.clear();
                tracing::info!("port open");
                let (tx, rx) = mpsc::channel(64);
                let mut session = Session::new(port, opts.timing, events.clone());
                let forward = async {
                    while let Some(c) = commands.recv().await {
                        if tx.send(c).await.is_err() {
                            break;
                        }
                    }
                };
                let end = tokio::select! {
                    end = session.run(rx, stop.clone()) => end,
                    () = forward => SessionEnd::Detached,
                };
                match end {
                    SessionEnd::Shutdown | SessionEnd::Detached => return,
                    SessionEnd::Lost(reason) => {
                        tracing::warn!(%reason, "board not responding; reopening");
                        if events.send(SerialEvent::Lost { reason }).await.is_err() {
                            return;
                        }
                        backoff = REOPEN_FIRST;
                    }
                }
            }
            Err(e) => {
                let missing = !path.exists();
                if missing && opts.exit_when_missing {
                    let _ = events.send(SerialEvent::Lost { reason: "device removed".into() }).await;
                    return;
                }
                let reason = e.to_string();
                if reason != last_open_error {
                    tracing::warn!(error = %reason, "cannot open port; retrying");
                    if events.send(SerialEvent::OpenFailed { reason: reason.clone() }).await.is_err() {
                        return;
                    }
                    last_open_error = reason;
                }
                backoff = (backoff * 2).min(opts.max_backoff);
            }
        }
        let missing = !path.exists();
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = node_back(&path), if missing => {}
            _ = stop.wait() => return,
        }
    }
}

/// Returns once `path` exists again (checked every [`NODE_POLL`]).
async fn node_back(path: &std::path::Path) {
    while !path.exists() {
        tokio::time::sleep(NODE_POLL).await;
    }
}

/// The device nodes where DGT boards appear on Linux: USB serial (FTDI), USB CDC-ACM and
/// Bluetooth RFCOMM.
pub fn discover_ports() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/dev") {
        for e in dir.flatten() {
            let name = e.file_name();
            let Some(n) = name.to_str() else { continue };
            let matches = ["ttyUSB", "ttyACM", "rfcomm"].iter().any(|p| {
                n.strip_prefix(p)
                    .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
            });
            if matches {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dgt_protocol::{BoardDump, ClockAck, CommandParser, HostInput};
    use tokio::io::DuplexStream;

    /// A minimal scripted board on the other end of a duplex pipe: answers the handshake,
    /// keep-alives and dumps; acks clock commands unless told to stay mute; answers battery
    /// requests with `battery` (percent, charging), or ignores them like a USB board.
    async fn fake_board(
        mut io: DuplexStream,
        ack_clock: bool,
        battery: Option<(u8, bool)>,
        log: mpsc::UnboundedSender<Command>,
    ) {
        let mut parser = CommandParser::new();
        let mut buf = [0u8; 64];
        let mut out = [0u8; 128];
        loop {
            let Ok(n) = io.read(&mut buf).await else { return };
            if n == 0 {
                return;
            }
            for &b in &buf[..n] {
                let Some(HostInput::Command(cmd)) = parser.push(b) else { continue };
                let _ = log.send(cmd);
                let payload =
                    battery.map(|(pct, charging)| [pct, 0x7F, 0x7F, 0, 10, 0, 1, 0, u8::from(charging)]);
                let reply = match cmd {
                    Command::SendBatteryStatus => {
                        payload.as_ref().map(|p| Message::Battery(dgt_protocol::Battery { payload: p }))
                    }
                    Command::SendVersion => Some(Message::Version { major: 3, minor: 1 }),
                    Command::ReturnSerialNumber => Some(Message::SerialNumber(b"24518")),
                    Command::SendBoard => Some(Message::BoardDump(BoardDump::EMPTY)),
                    Command::Clock(ClockCommand::Version) if ack_clock => {
                        Some(Message::Bwtime(Bwtime::Ack(ClockAck::from_ack_bytes([0x10, 0x09, 0x20, 0]))))
                    }
                    Command::Clock(ClockCommand::Beep { .. }) if ack_clock => {
                        Some(Message::Bwtime(Bwtime::Ack(ClockAck::from_ack_bytes([0x10, 0x0B, 0, 0]))))
                    }
                    _ => None,
                };
                if let Some(m) = reply {
                    let n = m.encode(&mut out).unwrap();
                    if io.write_all(&out[..n]).await.is_err() {
                        return;
                    }
                }
            }
        }
    }

    fn fast() -> SessionTiming {
        SessionTiming {
            keepalive: Duration::from_millis(50),
            silence: Duration::from_millis(300),
            handshake_retry: Duration::from_millis(100),
            handshake_attempts: 3,
            clock_ack: Duration::from_millis(100),
            clock_attempts: 3,
            battery_poll: Duration::from_millis(60),
        }
    }

    #[tokio::test]
    async fn handshake_identifies_the_board_and_finds_the_clock() {
        let (a, b) = tokio::io::duplex(4096);
        let (log_tx, mut log_rx) = mpsc::unbounded_channel();
        tokio::spawn(fake_board(b, true, None, log_tx));
        let (ev_tx, mut ev_rx) = mpsc::channel(64);
        let (_cmd_tx, cmd_rx) = mpsc::channel(4);
        let stop = crate::shutdown::Shutdown::new();
        let mut s = Session::new(a, fast(), ev_tx);
        let l = stop.listener();
        let task = tokio::spawn(async move { s.run(cmd_rx, l).await });
        assert_eq!(ev_rx.recv().await, Some(SerialEvent::Opened));
        assert_eq!(
            ev_rx.recv().await,
            Some(SerialEvent::Identified { serial: "24518".into(), version: (3, 1) })
        );
        assert!(matches!(ev_rx.recv().await, Some(SerialEvent::Board(Message::BoardDump(_)))));
        assert_eq!(ev_rx.recv().await, Some(SerialEvent::ClockFound { version: (2, 0) }));
        let first: Vec<Command> = std::iter::from_fn(|| log_rx.try_recv().ok()).take(4).collect();
        assert_eq!(
            first,
            [Command::Reset, Command::SendUpdateNice, Command::SendVersion, Command::ReturnSerialNumber]
        );
        stop.trigger();
        assert_eq!(task.await.unwrap(), SessionEnd::Shutdown);
    }

    #[tokio::test]
    async fn unanswered_clock_commands_are_retried_then_given_up() {
        let (a, b) = tokio::io::duplex(4096);
        let (log_tx, mut log_rx) = mpsc::unbounded_channel();
        tokio::spawn(fake_board(b, false, None, log_tx));
        let (ev_tx, mut ev_rx) = mpsc::channel(64);
        let (cmd_tx, cmd_rx) = mpsc::channel(4);
        let stop = crate::shutdown::Shutdown::new();
        let mut s = Session::new(a, fast(), ev_tx);
        let l = stop.listener();
        let task = tokio::spawn(async move { s.run(cmd_rx, l).await });
        cmd_tx.send(SessionCommand::Clock(ClockCommand::Beep { units: 2 })).await.unwrap();
        // The version query is first and fails after three attempts, then the beep goes.
        let mut failed = Vec::new();
        while failed.len() < 2 {
            match ev_rx.recv().await.unwrap() {
                SerialEvent::ClockCommandFailed(c) => failed.push(c),
                SerialEvent::Lost { reason } => panic!("lost: {reason}"),
                _ => {}
            }
        }
        assert_eq!(failed, [ClockCommand::Version, ClockCommand::Beep { units: 2 }]);
        stop.trigger();
        task.await.unwrap();
        let sent: Vec<Command> = std::iter::from_fn(|| log_rx.try_recv().ok()).collect();
        let versions = sent.iter().filter(|c| **c == Command::Clock(ClockCommand::Version)).count();
        let beeps = sent.iter().filter(|c| matches!(c, Command::Clock(ClockCommand::Beep { .. }))).count();
        assert_eq!((versions, beeps), (3, 3));
        // One in flight: no beep before the version query was given up.
        let first_beep = sent.iter().position(|c| matches!(c, Command::Clock(ClockCommand::Beep { .. })));
        let last_version = sent.iter().rposition(|c| *c == Command::Clock(ClockCommand::Version));
        assert!(first_beep > last_version);
    }

    /// Runs a session against the fake board for `run`, returning the events and the
    /// commands the board received.
    async fn session_with(battery: Option<(u8, bool)>, run: Duration) -> (Vec<SerialEvent>, Vec<Command>) {
        let (a, b) = tokio::io::duplex(4096);
        let (log_tx, mut log_rx) = mpsc::unbounded_channel();
        tokio::spawn(fake_board(b, true, battery, log_tx));
        let (ev_tx, mut ev_rx) = mpsc::channel(1024);
        let (_cmd_tx, cmd_rx) = mpsc::channel(4);
        let stop = crate::shutdown::Shutdown::new();
        let mut s = Session::new(a, fast(), ev_tx);
        let l = stop.listener();
        let task = tokio::spawn(async move { s.run(cmd_rx, l).await });
        tokio::time::sleep(run).await;
        stop.trigger();
        assert_eq!(task.await.unwrap(), SessionEnd::Shutdown);
        let events = std::iter::from_fn(|| ev_rx.try_recv().ok()).collect();
        let sent = std::iter::from_fn(|| log_rx.try_recv().ok()).collect();
        (events, sent)
    }

    #[tokio::test]
    async fn a_bluetooth_board_reports_its_battery_at_the_handshake_and_then_periodically() {
        let (events, sent) = session_with(Some((42, true)), Duration::from_millis(400)).await;
        let answers: Vec<&SerialEvent> =
            events.iter().filter(|e| matches!(e, SerialEvent::Battery { .. })).collect();
        assert!(answers.len() >= 3, "polled every 60 ms: {events:?}");
        assert!(answers.iter().all(|e| **e == SerialEvent::Battery { percent: 42, charging: true }));
        // The first request goes with the handshake's dump request, not a period later.
        let dump = sent.iter().position(|c| *c == Command::SendBoard);
        let first = sent.iter().position(|c| *c == Command::SendBatteryStatus);
        assert!(dump.is_some() && first > dump && first < dump.map(|d| d + 3), "{sent:?}");
        // One outstanding at a time: never more requests than periods, plus the first.
        let polls = sent.iter().filter(|c| **c == Command::SendBatteryStatus).count();
        assert!(polls <= 400 / 60 + 1, "{polls} polls");
    }

    #[tokio::test]
    async fn a_usb_board_that_ignores_battery_requests_is_not_asked_forever() {
        let (events, sent) = session_with(None, Duration::from_millis(600)).await;
        assert!(!events.iter().any(|e| matches!(e, SerialEvent::Battery { .. })));
        let polls = sent.iter().filter(|c| **c == Command::SendBatteryStatus).count();
        // The handshake's request and two more periods, then no more (600 ms is ten periods).
        assert_eq!(polls, BATTERY_MISSES as usize, "{sent:?}");
        assert!(events.iter().any(|e| matches!(e, SerialEvent::Identified { .. })));
    }

    /// Starts a session on `a`; returns its task and events.
    fn start(
        a: DuplexStream,
    ) -> (tokio::task::JoinHandle<SessionEnd>, mpsc::Receiver<SerialEvent>, mpsc::Sender<SessionCommand>)
    {
        let (ev_tx, ev_rx) = mpsc::channel(64);
        let (cmd_tx, cmd_rx) = mpsc::channel(4);
        let stop = crate::shutdown::Shutdown::new();
        let mut s = Session::new(a, fast(), ev_tx);
        let l = stop.listener();
        let task = tokio::spawn(async move {
            let _keep = stop;
            s.run(cmd_rx, l).await
        });
        (task, ev_rx, cmd_tx)
    }

    async fn identify(b: &mut DuplexStream) {
        let mut out = [0u8; 16];
        let n = Message::Version { major: 3, minor: 1 }.encode(&mut out).unwrap();
        b.write_all(&out[..n]).await.unwrap();
        let n = Message::SerialNumber(b"1").encode(&mut out).unwrap();
        b.write_all(&out[..n]).await.unwrap();
    }

    #[tokio::test]
    async fn a_vanished_device_ends_the_session_at_once() {
        let (a, mut b) = tokio::io::duplex(4096);
        let (task, _ev, _cmd) = start(a);
        identify(&mut b).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(b);
        let end = tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap();
        // Seen from the closed stream ("went away"), not from the silence limit.
        assert!(matches!(end, SessionEnd::Lost(ref r) if r.contains("went away")), "{end:?}");
        assert_eq!(
            gone_reason(&std::io::Error::from_raw_os_error(5)),
            "the device went away (Input/output error (os error 5))"
        );
    }

    #[tokio::test]
    async fn the_event_log_is_collected_whole() {
        let (a, mut b) = tokio::io::duplex(16384);
        let (task, mut ev, cmd) = start(a);
        identify(&mut b).await;
        while !matches!(ev.recv().await, Some(SerialEvent::Identified { .. })) {}
        cmd.send(SessionCommand::RequestEeMoves).await.unwrap();
        // The request reaches the board.
        let mut parser = CommandParser::new();
        let mut buf = [0u8; 64];
        'asked: loop {
            let n = b.read(&mut buf).await.unwrap();
            for &byte in &buf[..n] {
                if matches!(parser.push(byte), Some(HostInput::Command(Command::SendEeMoves))) {
                    break 'asked;
                }
            }
        }
        let sq = |i| dgt_protocol::DgtSquare::new(i).unwrap();
        let log = [
            EeEvent::PowerUp,
            EeEvent::Field { square: sq(52), piece: dgt_protocol::PieceCode::Empty, quick: false },
            EeEvent::Field { square: sq(36), piece: dgt_protocol::PieceCode::WhitePawn, quick: true },
        ];
        let mut events = vec![EeEvent::Nop; 3000];
        events.extend(log.iter().copied());
        events.push(EeEvent::Eof);
        let mut out = vec![0u8; 8192];
        let n = dgt_protocol::ee::encode_ee_moves(&events, &mut out).unwrap();
        // In pieces, as a serial line delivers it.
        for chunk in out[..n].chunks(100) {
            b.write_all(chunk).await.unwrap();
        }
        let got = loop {
            match ev.recv().await.unwrap() {
                SerialEvent::EeMoves(got) => break got,
                SerialEvent::Lost { reason } => panic!("{reason}"),
                _ => {}
            }
        };
        assert_eq!(got.len(), 3003);
        assert_eq!(got[3000..], log[..]);
        task.abort();
    }

    #[tokio::test]
    async fn silence_ends_the_session() {
        let (a, mut b) = tokio::io::duplex(4096);
        let (ev_tx, mut ev_rx) = mpsc::channel(64);
        let (_cmd_tx, cmd_rx) = mpsc::channel(4);
        let stop = crate::shutdown::Shutdown::new();
        let mut s = Session::new(a, fast(), ev_tx);
        let task = tokio::spawn({
            let l = stop.listener();
            async move { s.run(cmd_rx, l).await }
        });
        // Answer the handshake once, then go quiet (the pipe stays open).
        let mut out = [0u8; 16];
        let n = Message::Version { major: 3, minor: 1 }.encode(&mut out).unwrap();
        b.write_all(&out[..n]).await.unwrap();
        let n = Message::SerialNumber(b"1").encode(&mut out).unwrap();
        b.write_all(&out[..n]).await.unwrap();
        let end = tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap();
        assert!(matches!(end, SessionEnd::Lost(ref r) if r.starts_with("no data")), "{end:?}");
        drop(b);
        while let Ok(e) = ev_rx.try_recv() {
            assert!(!matches!(e, SerialEvent::Lost { .. }));
        }
    }

    #[tokio::test]
    async fn a_missing_port_is_reported_and_retried() {
        let (ev_tx, mut ev_rx) = mpsc::channel(8);
        let (_cmd_tx, cmd_rx) = mpsc::channel(4);
        let stop = crate::shutdown::Shutdown::new();
        let opts = PortOptions { max_backoff: Duration::from_millis(20), ..PortOptions::default() };
        let task =
            tokio::spawn(run_port("/dev/ttyUSB-does-not-exist".into(), ev_tx, cmd_rx, stop.listener(), opts));
        assert!(matches!(ev_rx.recv().await, Some(SerialEvent::OpenFailed { .. })));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!task.is_finished());
        stop.trigger();
        task.await.unwrap();
    }
}
