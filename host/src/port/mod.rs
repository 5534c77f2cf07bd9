//! One serial port: open it, run the handshake, hand the identified board's port to its
//! board task, and reopen it when the board goes away.
//!
//! # Shape
//! [`run_port`] owns a port path for the relay's lifetime: it opens the port (9600 8N1,
//! raw, no flow control) and runs the handshake on a [`dgt_session::Link`] until the board
//! tells its serial number ([`identify`]). The registry maps the serial number to a board
//! number, and the port, with its link, goes to that board's task ([`Attached`]), which
//! reads and writes it from then on. When the board task gives the port back (the board
//! went away), the port is reopened. A missing or busy port is logged and retried, never
//! fatal.
//!
//! # Unplugged boards
//! An unplugged USB board, and a pty whose other end closed, make `read` return end of
//! file or an error (EIO, ENXIO) at once: the board task gives the port back there and
//! then, it does not wait for the silence limit (which stays the fallback for a board that
//! is connected but dead). The port is reopened [`REOPEN_FIRST`] later, then with backoff;
//! while the device node is missing its path is watched every [`NODE_POLL`], so a
//! replugged board (same path, or the same symlink) is opened as soon as it reappears.
//!
//! # One board or a chain (DGT's bus mode)
//! A port may carry a daisy chain of boards instead of one. On a chain every board obeys
//! a single-board command and answers it: their answers collide on the wire (or queue, on
//! a hub that buffers them), so the single-board handshake cannot tell one board from
//! several. The bus discovery can: it is made for many boards answering at once (each
//! answers a broadcast at a random moment, found boards are told to keep quiet, rounds go
//! on until no new board and no garbled answer). So a port of unknown kind is first driven
//! as a chain ([`run_bus`]): two boards or more found make it a chain; one or none, and the
//! single-board handshake runs next ([`detect`], which still checks its answers for signs
//! of several boards), for a board alone on its port (it also speaks single-board mode,
//! with clock commands and immediate field updates) or one without bus mode. A port where
//! neither finds a board raises a relay-wide `port_unidentified` alert (once, until the
//! port is identified) and is tried again with backoff.
//!
//! On a chain, [`run_bus`] runs a [`BusPoller`](dgt_session::BusPoller) and gives each board it finds a virtual
//! serial port (an in-memory pipe on which the poller plays that board's side of the
//! single-board protocol). The board's task gets that virtual port exactly as it gets a
//! real one (its handshake runs on it, the registry finds the task by serial number), so
//! every board on a chain has its own session, game, journal and alerts. A board gone from
//! the chain closes its virtual port: its task sees the port lost (`not_responding`); back,
//! it gets a new one. `--bus` ([`LineKind::Bus`]) skips the single-board handshake. A port
//! is reopened as what it was found to be (a chain as a chain, one board with the
//! single-board handshake first, which falls back to the discovery on any doubt).

use std::path::PathBuf;
use std::time::Duration;

use dgt_protocol::bus::address_of_serial;
use dgt_protocol::{Decoded, Decoder, Message};
use dgt_session::{BusTiming, Link, LinkEvent, LinkTiming};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::clock::Clock;
use crate::shutdown::Listener;

mod bus;
mod discover;
#[cfg(feature = "demo")]
pub mod in_process;
#[cfg(target_os = "linux")]
mod tty;

pub use discover::{DGT_USB_IDS, DeviceKind, discover_ports};

use bus::{BusEnd, BusPort, run_bus};

/// Wait before the first reopening after the board went away.
pub const REOPEN_FIRST: Duration = Duration::from_millis(100);
/// While a port's device node is missing, how often its path is checked.
pub const NODE_POLL: Duration = Duration::from_millis(50);

/// Where a port stands, for the operator (`/api/admin/boards`, the console, `/health`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", content = "detail", rename_all = "snake_case")]
pub enum PortState {
    /// Being opened, or open and looking for a board.
    Opening,
    /// The device does not exist (unplugged, or a wrong path).
    NotFound(String),
    /// The relay's user may not open it.
    PermissionDenied(String),
    /// It cannot be opened for another reason (busy, not a serial device).
    Unopenable(String),
    /// A board (or a chain) on it is relayed.
    Active(String),
    /// Open, but no board answers (or the board went away): reopened with backoff.
    NotResponding(String),
}

impl PortState {
    /// The port cannot be opened at all: `/health` is degraded.
    pub fn is_down(&self) -> bool {
        matches!(self, PortState::NotFound(_) | PortState::PermissionDenied(_) | PortState::Unopenable(_))
    }

    /// What an opening error means for the operator.
    fn from_open_error(path: &std::path::Path, e: &tokio_serial::Error) -> PortState {
        let text = e.to_string();
        if !path.exists() {
            return PortState::NotFound(text);
        }
        match e.kind() {
            tokio_serial::ErrorKind::Io(std::io::ErrorKind::PermissionDenied) => {
                PortState::PermissionDenied(text)
            }
            tokio_serial::ErrorKind::NoDevice => PortState::NotFound(text),
            _ => PortState::Unopenable(text),
        }
    }
}

/// A byte stream a board is on: a serial port, or a pipe in tests.
pub trait PortIo: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> PortIo for T {}

/// An identified board's port, handed to its board task.
pub struct Attached {
    /// Which opening of which port (a stale port's loss is ignored).
    pub port_id: u64,
    /// The path, for the operator.
    pub path: String,
    /// The open port.
    pub io: Box<dyn PortIo>,
    /// The link, past its handshake.
    pub link: Link,
    /// Given back (with the reason) when the board went away: the port is reopened.
    pub released: oneshot::Sender<String>,
}

impl std::fmt::Debug for Attached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attached")
            .field("port_id", &self.port_id)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Why the handshake did not identify a board.
#[derive(Debug, PartialEq, Eq)]
pub enum NotIdentified {
    /// Shutdown was requested.
    Shutdown,
    /// The board did not answer, or the port went away; for people.
    Lost(String),
}

/// Runs the handshake on an open port until the board has told its serial number.
pub async fn identify<T: AsyncRead + AsyncWrite + Unpin>(
    io: &mut T,
    clock: &Clock,
    timing: LinkTiming,
    stop: &mut Listener,
) -> Result<Link, NotIdentified> {
    identify_watching(io, clock, timing, stop, |_| None).await
}

/// [`identify`], showing `watch` every chunk read; `watch` gives up (with its reason) by
/// returning one.
async fn identify_watching<T: AsyncRead + AsyncWrite + Unpin>(
    io: &mut T,
    clock: &Clock,
    timing: LinkTiming,
    stop: &mut Listener,
    mut watch: impl FnMut(&[u8]) -> Option<String>,
) -> Result<Link, NotIdentified> {
    let mut link = Link::open(clock.ms(), timing);
    let mut buf = [0u8; 512];
    loop {
        let out = link.take_output();
        if !out.is_empty() {
            let w = async {
                io.write_all(&out).await?;
                io.flush().await
            };
            w.await.map_err(|e| NotIdentified::Lost(gone_reason(&e)))?;
        }
        if link.is_identified() {
            return Ok(link);
        }
        if link.is_lost() {
            let reason = std::iter::from_fn(|| link.next_event())
                .find_map(|e| match e {
                    LinkEvent::Lost { reason } => Some(reason),
                    _ => None,
                })
                .unwrap_or_default();
            return Err(NotIdentified::Lost(reason));
        }
        let deadline = link.next_deadline().map(|ms| clock.at(ms));
        tokio::select! {
            _ = stop.wait() => return Err(NotIdentified::Shutdown),
            n = io.read(&mut buf) => match n {
                Ok(0) => return Err(NotIdentified::Lost("the device went away (end of file on the port)".into())),
                Ok(n) => {
                    if let Some(why) = watch(&buf[..n]) {
                        return Err(NotIdentified::Lost(why));
                    }
                    link.on_bytes(clock.ms(), &buf[..n]);
                }
                Err(e) => return Err(NotIdentified::Lost(gone_reason(&e))),
            },
            _ = sleep_until_opt(deadline) => link.poll(clock.ms()),
        }
    }
}

/// What [`detect`] notes in the bytes of the handshake.
struct Watch {
    side: Decoder,
    /// Garbled bytes since the first clean message (what a port opened in the middle of a
    /// board's message garbles comes before it, and does not count).
    noise: usize,
    /// Every garbled byte.
    garbled: usize,
    /// A clean message came.
    clean: bool,
    /// When the first garbled byte was seen.
    first_noise: Option<Instant>,
    address: Option<u16>,
}

/// A handshake that only got garbled bytes for this long is given up: several boards
/// answer at once (a single board answers within milliseconds; a port opened in the middle
/// of a board's message garbles only that message).
pub const GARBLED_FOR: Duration = Duration::from_secs(1);

impl Watch {
    fn new() -> Watch {
        Watch { side: Decoder::new(), noise: 0, garbled: 0, clean: false, first_noise: None, address: None }
    }

    /// Notes a chunk; gives up when only garbage came for [`GARBLED_FOR`].
    fn look(&mut self, bytes: &[u8], now: Instant) -> Option<String> {
        let (noise, garbled, clean, address) =
            (&mut self.noise, &mut self.garbled, &mut self.clean, &mut self.address);
        self.side.feed(bytes, |d| match d {
            Decoded::Noise { len } => {
                *garbled += len;
                if *clean {
                    *noise += len;
                }
            }
            Decoded::Message(m) => {
                *clean = true;
                if let Message::BusAddress(a) = m {
                    *address = Some(a);
                }
            }
            _ => {}
        });
        if self.garbled > 0 && self.first_noise.is_none() {
            self.first_noise = Some(now);
        }
        self.first_noise
            .filter(|t| now.saturating_duration_since(*t) >= GARBLED_FOR)
            .map(|_| format!("{} garbled bytes and no clean answer", self.garbled))
    }
}

/// What a port carries, as [`detect`] found it.
#[derive(Debug)]
pub enum Detected {
    /// One board: its link, past the handshake.
    One(Box<Link>),
    /// Not one board that answers alone: to be tried as a chain in bus mode. Why, for
    /// people.
    Chain(String),
}

/// How long [`detect`] waits for the bus address after the handshake.
pub const ADDRESS_WAIT: Duration = Duration::from_millis(300);

/// The single-board handshake, checked for a chain: a line whose answers were garbled
/// (noise during the handshake after its first clean answer), or whose bus address (`46`)
/// is not the serial number's (several boards answering at once leave the OR of their
/// answers, each valid on its own), is a chain. A board that does not answer `46` is taken for one board.
pub async fn detect<T: AsyncRead + AsyncWrite + Unpin>(
    io: &mut T,
    clock: &Clock,
    timing: LinkTiming,
    stop: &mut Listener,
) -> Result<Detected, NotIdentified> {
    let mut watch = Watch::new();
    let mut link = match identify_watching(io, clock, timing, stop, |b| watch.look(b, clock.now())).await {
        Ok(link) => link,
        Err(NotIdentified::Shutdown) => return Err(NotIdentified::Shutdown),
        Err(NotIdentified::Lost(reason)) => return Ok(Detected::Chain(reason)),
    };
    let write = async {
        io.write_all(&[0x46]).await?;
        io.flush().await
    };
    write.await.map_err(|e| NotIdentified::Lost(gone_reason(&e)))?;
    let until = clock.now() + ADDRESS_WAIT;
    let mut buf = [0u8; 512];
    while watch.address.is_none() {
        tokio::select! {
            _ = stop.wait() => return Err(NotIdentified::Shutdown),
            n = io.read(&mut buf) => match n {
                Ok(0) => return Err(NotIdentified::Lost("the device went away (end of file on the port)".into())),
                Ok(n) => {
                    let _ = watch.look(&buf[..n], clock.now());
                    link.on_bytes(clock.ms(), &buf[..n]);
                }
                Err(e) => return Err(NotIdentified::Lost(gone_reason(&e))),
            },
            _ = tokio::time::sleep_until(until) => break,
        }
    }
    let (address, mut noise) = (watch.address, watch.noise);
    let serial = link.serial().unwrap_or_default().to_owned();
    let expected = serial.trim().parse::<u32>().ok().map(address_of_serial);
    if watch.clean {
        noise += watch.side.take_noise().unwrap_or(0);
    }
    if noise > 0 {
        return Ok(Detected::Chain(format!("{noise} garbled bytes during the handshake")));
    }
    match (address, expected) {
        (Some(a), Some(e)) if a != e => Ok(Detected::Chain(format!(
            "serial number {serial} but bus address {a}: several boards answered"
        ))),
        _ => Ok(Detected::One(Box::new(link))),
    }
}

/// Where an identified board's port goes: the registry's board task for its serial number.
pub trait AttachTo: Send + Sync + 'static {
    /// Hands `port` to the board with serial number `serial`; false when no board task
    /// takes it (shutting down).
    fn attach(&self, serial: &str, port: Attached) -> impl std::future::Future<Output = bool> + Send;

    /// What the port at `path` was found to carry, for the operator: `Err(why)` when
    /// nothing on it could be identified, `Ok(what)` when it was after that.
    fn port_status(&self, path: &str, status: Result<String, String>) {
        let _ = (path, status);
    }

    /// The port at `path` is in `state` now (told on every change).
    fn port_state(&self, path: &str, state: PortState) {
        let _ = (path, state);
    }
}

/// What a port is expected to carry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LineKind {
    /// One board or a chain: see [`detect`].
    #[default]
    Detect,
    /// A chain in DGT's bus mode (`--bus`): no single-board handshake.
    Bus,
}

/// How [`run_port`] behaves.
#[derive(Clone, Debug)]
pub struct PortOptions {
    /// Link timing.
    pub timing: LinkTiming,
    /// One board or a chain.
    pub line: LineKind,
    /// The bus's timing, for a chain.
    pub bus: BusTiming,
    /// Stop (instead of retrying) when the device node disappears: for discovered ports,
    /// which discovery restarts when the node comes back.
    pub exit_when_missing: bool,
    /// Longest wait between two opening attempts.
    pub max_backoff: Duration,
}

impl Default for PortOptions {
    fn default() -> Self {
        PortOptions {
            timing: LinkTiming::default(),
            line: LineKind::Detect,
            bus: BusTiming::default(),
            exit_when_missing: false,
            max_backoff: Duration::from_secs(5),
        }
    }
}

/// Opens a serial port at 9600 8N1, raw, no flow control, with DTR raised (best effort:
/// a pseudo-terminal has no modem lines) and stale input flushed. `path` is a device
/// (`/dev/ttyUSB0`, `COM3`), or the name of a demo board's in-process link.
pub fn open_port(path: &std::path::Path) -> Result<Box<dyn PortIo>, tokio_serial::Error> {
    use tokio_serial::SerialPort;
    #[cfg(feature = "demo")]
    if let Some(link) = in_process::open(path) {
        return Ok(Box::new(link));
    }
    let builder = tokio_serial::new(path.to_string_lossy(), 9600)
        .data_bits(tokio_serial::DataBits::Eight)
        .parity(tokio_serial::Parity::None)
        .stop_bits(tokio_serial::StopBits::One)
        .flow_control(tokio_serial::FlowControl::None)
        .timeout(Duration::from_millis(100));
    let mut port = match tokio_serial::SerialStream::open(&builder) {
        Ok(port) => port,
        #[cfg(target_os = "linux")]
        Err(e) if tty::termios2_missing(&e) => {
            tracing::debug!(error = %e, "no termios2 here (an emulator?): opening with classic termios");
            return Ok(Box::new(tty::open(path)?));
        }
        Err(e) => return Err(e),
    };
    if let Err(e) = port.write_data_terminal_ready(true) {
        tracing::trace!(error = %e, "DTR not supported on this port");
    }
    if let Err(e) = port.clear(tokio_serial::ClearBuffer::Input) {
        tracing::trace!(error = %e, "input flush not supported on this port");
    }
    Ok(Box::new(port))
}

/// What a port was found to carry, the last time it was opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Known {
    /// Nothing yet: the bus discovery first, then the single-board handshake.
    Unknown,
    /// One board: the single-board handshake first.
    One,
    /// A chain in bus mode.
    Chain,
}

/// Runs one port path until shutdown: open, identify what it carries (see the module docs),
/// hand the port to its board (or run its chain), take it back when the board went away,
/// reopen with backoff.
///
/// The port is reopened [`REOPEN_FIRST`] after it was given back; failed openings back off
/// up to `max_backoff`, but while the device node is missing the path is checked every
/// [`NODE_POLL`] and opened as soon as it is back (a replugged board).
pub async fn run_port<A: AttachTo>(
    path: PathBuf,
    boards: std::sync::Arc<A>,
    clock: Clock,
    ids: std::sync::Arc<std::sync::atomic::AtomicU64>,
    mut stop: Listener,
    opts: PortOptions,
) {
    let mut backoff = REOPEN_FIRST;
    let mut last_open_error = String::new();
    let mut known = if opts.line == LineKind::Bus { Known::Chain } else { Known::Unknown };
    // A `port_unidentified` alert is open for this port.
    let mut unidentified = false;
    let name = path.display().to_string();
    let identified = |unidentified: &mut bool, what: String| {
        boards.port_state(&name, PortState::Active(what.clone()));
        if std::mem::take(unidentified) {
            boards.port_status(&name, Ok(what));
        }
    };
    boards.port_state(&name, PortState::Opening);
    // Neither way found a board (the discovery found none): the alert, once until identified.
    let unanswered = |unidentified: &mut bool, in_bus_mode: Option<usize>, why: &str| {
        if in_bus_mode == Some(0) && !std::mem::replace(unidentified, true) {
            boards.port_status(
                &name,
                Err(format!(
                    "no board answered, neither as one board ({why}) nor as a chain in DGT's bus mode"
                )),
            );
        }
    };
    loop {
        if stop.is_triggered() {
            return;
        }
        match open_port(&path) {
            Ok(port) => {
                last_open_error.clear();
                tracing::info!("port open");
                boards.port_state(&name, PortState::Opening);
                backoff = REOPEN_FIRST;
                let bus = BusPort { path: &path, clock: &clock, ids: &ids, opts: &opts };
                let mut io = port;
                // Boards answering the bus discovery (a chain has at least two).
                let mut in_bus_mode = None;
                if known != Known::One {
                    if known == Known::Unknown {
                        tracing::info!("looking for a chain of boards in bus mode first");
                    }
                    let mut found_chain =
                        |n: usize| identified(&mut unidentified, format!("a chain of {n} boards"));
                    match run_bus(io, &bus, &boards, &mut stop, known == Known::Unknown, &mut found_chain)
                        .await
                    {
                        BusEnd::Shutdown => return,
                        BusEnd::Lost(reason, found) => {
                            if found {
                                known = Known::Chain;
                            }
                            tracing::warn!(%reason, "bus line lost; reopening");
                            boards.port_state(&name, PortState::NotResponding(reason.clone()));
                            wait_to_reopen(&path, backoff, &mut stop).await;
                            continue;
                        }
                        BusEnd::FewerThanTwo(back, n) => {
                            tracing::info!(boards = n, "no chain in bus mode; trying one board");
                            io = back;
                            in_bus_mode = Some(n);
                        }
                    }
                }
                match detect(&mut io, &clock, opts.timing, &mut stop).await {
                    Err(NotIdentified::Shutdown) => return,
                    Err(NotIdentified::Lost(reason)) => {
                        tracing::warn!(%reason, "no board on the port; reopening");
                        boards.port_state(&name, PortState::NotResponding(reason.clone()));
                        if known == Known::One {
                            // It was one board: the next opening looks for anything again.
                            known = Known::Unknown;
                        } else {
                            unanswered(&mut unidentified, in_bus_mode, &reason);
                        }
                    }
                    Ok(Detected::Chain(why)) => {
                        // Signs of several boards after all: driven as a chain from the next
                        // opening (a board found in bus mode makes it one at once).
                        tracing::info!(%why, "the single-board handshake says several boards answered");
                        boards.port_state(&name, PortState::NotResponding(why.clone()));
                        known =
                            if in_bus_mode.is_some_and(|n| n > 0) { Known::Chain } else { Known::Unknown };
                        unanswered(&mut unidentified, in_bus_mode, &why);
                    }
                    Ok(Detected::One(link)) => {
                        known = Known::One;
                        let serial = link.serial().unwrap_or_default().to_owned();
                        identified(&mut unidentified, format!("one board, serial number {serial}"));
                        let (released, back) = oneshot::channel();
                        let attached = Attached {
                            port_id: ids.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                            path: path.display().to_string(),
                            io,
                            link: *link,
                            released,
                        };
                        if !boards.attach(&serial, attached).await {
                            return;
                        }
                        tokio::select! {
                            reason = back => {
                                let reason = reason.unwrap_or_else(|_| "the board task ended".into());
                                tracing::warn!(%reason, "board not responding; reopening");
                                boards.port_state(&name, PortState::NotResponding(reason));
                            }
                            _ = stop.wait() => return,
                        }
                    }
                }
            }
            Err(e) => {
                let missing = !path.exists();
                if missing && opts.exit_when_missing {
                    tracing::info!("device removed");
                    return;
                }
                boards.port_state(&name, PortState::from_open_error(&path, &e));
                let reason = e.to_string();
                if reason != last_open_error {
                    tracing::warn!(error = %reason, "cannot open port; retrying");
                    last_open_error = reason;
                }
                // Doubling up to a cap, kept by hand: one line, no jitter needed (one task per
                // local device, nothing to stampede), and a crate would only add to the build.
                backoff = (backoff * 2).min(opts.max_backoff);
            }
        }
        wait_to_reopen(&path, backoff, &mut stop).await;
    }
}

/// Waits `backoff` before the next opening, or until a missing device node is back.
async fn wait_to_reopen(path: &std::path::Path, backoff: Duration, stop: &mut Listener) {
    // Windows' COM names are no files (looking one up opens the device): there the backoff
    // alone paces the openings.
    let missing = cfg!(unix) && !path.exists();
    tokio::select! {
        _ = tokio::time::sleep(backoff) => {}
        _ = node_back(path), if missing => {}
        _ = stop.wait() => {}
    }
}

/// Returns once `path` exists again (checked every [`NODE_POLL`]).
async fn node_back(path: &std::path::Path) {
    while !path.exists() {
        tokio::time::sleep(NODE_POLL).await;
    }
}

/// Why a session ended on an I/O error, for people: a vanished device says so.
pub fn gone_reason(e: &std::io::Error) -> String {
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
