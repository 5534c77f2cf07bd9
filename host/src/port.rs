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

use std::path::PathBuf;
use std::time::Duration;

use dgt_session::{Link, LinkEvent, LinkTiming};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::shutdown::Listener;

/// Wait before the first reopening after the board went away.
pub const REOPEN_FIRST: Duration = Duration::from_millis(100);
/// While a port's device node is missing, how often its path is checked.
pub const NODE_POLL: Duration = Duration::from_millis(50);

/// A byte stream a board is on: a serial port, or a pipe in tests.
pub trait PortIo: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> PortIo for T {}

/// The relay's clock: milliseconds since its start, the time every session is given.
#[derive(Clone, Copy, Debug)]
pub struct Epoch(pub Instant);

impl Epoch {
    /// Starts now.
    pub fn now() -> Epoch {
        Epoch(Instant::now())
    }

    /// Milliseconds since the start.
    pub fn ms(&self) -> u64 {
        self.0.elapsed().as_millis() as u64
    }

    /// The instant of a time in milliseconds since the start.
    pub fn at(&self, ms: u64) -> Instant {
        self.0 + Duration::from_millis(ms)
    }
}

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
    epoch: Epoch,
    timing: LinkTiming,
    stop: &mut Listener,
) -> Result<Link, NotIdentified> {
    let mut link = Link::open(epoch.ms(), timing);
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
        let deadline = link.next_deadline().map(|ms| epoch.at(ms));
        tokio::select! {
            _ = stop.wait() => return Err(NotIdentified::Shutdown),
            n = io.read(&mut buf) => match n {
                Ok(0) => return Err(NotIdentified::Lost("the device went away (end of file on the port)".into())),
                Ok(n) => link.on_bytes(epoch.ms(), &buf[..n]),
                Err(e) => return Err(NotIdentified::Lost(gone_reason(&e))),
            },
            _ = sleep_until_opt(deadline) => link.poll(epoch.ms()),
        }
    }
}

/// Where an identified board's port goes: the registry's board task for its serial number.
pub trait AttachTo: Send + Sync + 'static {
    /// Hands `port` to the board with serial number `serial`; false when no board task
    /// takes it (shutting down).
    fn attach(&self, serial: &str, port: Attached) -> impl std::future::Future<Output = bool> + Send;
}

/// How [`run_port`] behaves.
#[derive(Clone, Debug)]
pub struct PortOptions {
    /// Link timing.
    pub timing: LinkTiming,
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

/// Runs one port path until shutdown: open, handshake, hand the port to its board, take it
/// back when the board went away, reopen with backoff.
///
/// The port is reopened [`REOPEN_FIRST`] after it was given back; failed openings back off
/// up to `max_backoff`, but while the device node is missing the path is checked every
/// [`NODE_POLL`] and opened as soon as it is back (a replugged board).
pub async fn run_port<A: AttachTo>(
    path: PathBuf,
    boards: std::sync::Arc<A>,
    epoch: Epoch,
    ids: std::sync::Arc<std::sync::atomic::AtomicU64>,
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
            Ok(mut port) => {
                last_open_error.clear();
                tracing::info!("port open");
                backoff = REOPEN_FIRST;
                match identify(&mut port, epoch, opts.timing, &mut stop).await {
                    Err(NotIdentified::Shutdown) => return,
                    Err(NotIdentified::Lost(reason)) => {
                        tracing::warn!(%reason, "no board on the port; reopening")
                    }
                    Ok(link) => {
                        let serial = link.serial().unwrap_or_default().to_owned();
                        let (released, back) = oneshot::channel();
                        let attached = Attached {
                            port_id: ids.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                            path: path.display().to_string(),
                            io: Box::new(port),
                            link,
                            released,
                        };
                        if !boards.attach(&serial, attached).await {
                            return;
                        }
                        tokio::select! {
                            reason = back => {
                                let reason = reason.unwrap_or_else(|_| "the board task ended".into());
                                tracing::warn!(%reason, "board not responding; reopening");
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

/// USB vendor ids of DGT e-boards: DGT's own (0x2D80) and the 0x045B seen in Android
/// apps for current boards, and FTDI's (0x0403, product 0x6001) of older USB boards. FTDI
/// adapters are also used for other things: they are tried, and a port whose device does
/// not answer the handshake is only logged.
pub const DGT_USB_IDS: [(u16, Option<u16>); 3] = [(0x2D80, None), (0x045B, None), (0x0403, Some(0x6001))];

/// What kind of serial device a port is, as discovery sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// A USB serial device with a DGT board's (or its FTDI adapter's) vendor id.
    DgtUsb {
        /// Vendor id.
        vid: u16,
        /// Product id.
        pid: u16,
    },
    /// A Bluetooth RFCOMM port (a Bluetooth board bound to it).
    Bluetooth,
}

/// The serial devices where DGT boards appear, from the operating system's list of serial
/// ports (`serialport`'s enumeration: on Linux `/sys/class/tty`, with each USB device's
/// vendor and product ids): USB devices with a DGT id ([`DGT_USB_IDS`]) and Bluetooth
/// RFCOMM ports. Other serial ports (a modem, a GPS, the machine's UARTs) are left alone.
pub fn discover_ports() -> Vec<(PathBuf, DeviceKind)> {
    // The enumeration panics on a machine without /sys/class/tty (some containers).
    if cfg!(target_os = "linux") && !std::path::Path::new("/sys/class/tty").is_dir() {
        return Vec::new();
    }
    let ports = match tokio_serial::available_ports() {
        Ok(p) => p,
        Err(e) => {
            tracing::debug!(error = %e, "cannot list serial ports");
            return Vec::new();
        }
    };
    let mut out: Vec<(PathBuf, DeviceKind)> = ports
        .into_iter()
        .filter_map(|p| {
            let kind = match p.port_type {
                tokio_serial::SerialPortType::UsbPort(u)
                    if DGT_USB_IDS
                        .iter()
                        .any(|&(vid, pid)| u.vid == vid && pid.is_none_or(|pid| u.pid == pid)) =>
                {
                    DeviceKind::DgtUsb { vid: u.vid, pid: u.pid }
                }
                tokio_serial::SerialPortType::BluetoothPort => DeviceKind::Bluetooth,
                _ => return None,
            };
            Some((PathBuf::from(p.port_name), kind))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
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
