//! Relay boxes: a board's session running on a microcontroller next to the board, its
//! effects crossing a serial line to the relay (`dgt-relay run --bridge PATH`, or
//! `bridge = [...]` in the configuration). The protocol is `docs/bridge.md`; both its ends
//! are the `dgt-bridge` crate.
//!
//! # Shape
//! [`run_bridge`] owns a bridge's path for the relay's lifetime, as a port task owns a
//! board's: it opens the line, greets the box, and once the box has told its board's
//! serial number hands the bridge to that board's task ([`BridgeAttached`]) through the
//! same registry as a board on a port (the serial number is the identity), then carries
//! frames both ways. The board task's [`Source`] is then a [`Remote`]: the box's records
//! become the same session effects a local session gives, and are carried out the same
//! way: journal first, then feed, PGN, push and console.
//!
//! # What is refused
//! A frame of another protocol version is refused, with an operator alert naming both
//! versions; the relay keeps greeting, so a box updated in place is taken as soon as it
//! answers in this version. Damaged frames (checksum, framing) are counted and skipped;
//! the operator is told of them at most once a minute. A box silent for the silence
//! limit makes its board not responding; greeted again, it is resumed.

pub mod remote;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use dgt_bridge::wire::Record;
use dgt_bridge::{DeviceHello, Down, FrameDecoder, FrameError, Up, VERSION};
use dgt_session::AlertLevel;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::clock::Clock;
use crate::shutdown::Listener;

pub use remote::{BridgeAttached, Remote};

/// The bridge's line speed (a pseudo-terminal or USB CDC ignores it).
pub const BAUD: u32 = 115_200;
/// The greeting is sent again this often until the box answers.
const GREET_EVERY: Duration = Duration::from_secs(1);
/// Reports of damaged frames to the operator, at most one this often.
const REPORT_EVERY: Duration = Duration::from_secs(60);
/// Frames from the box waiting for its board task.
const UP_QUEUE: usize = 1024;
/// Messages for the box waiting to be written.
const DOWN_QUEUE: usize = 256;

/// How a bridge's line ended.
enum Ended {
    Shutdown,
    Lost(String),
}

/// What a bridge hands its box's board to: the relay's boards, found by serial number
/// (as a port's board is, see [`crate::port::AttachTo`]), and the operator's alerts.
pub trait BridgeTo: Send + Sync + 'static {
    /// Hands `bridge` to the board with serial number `serial`: its number, or `None` when no
    /// board task takes it (shutting down).
    fn attach_bridge(
        &self,
        serial: &str,
        bridge: BridgeAttached,
    ) -> impl std::future::Future<Output = Option<u32>> + Send;

    /// Tells the operator what the line met (`board`: the box's board once known).
    fn bridge_alert(&self, board: Option<u32>, level: AlertLevel, message: String);
}

/// Runs the bridge on `path` until shutdown: open, greet, hand to the board, carry frames;
/// reopen with backoff when the line fails. A box silent for `silence` is greeted again.
pub async fn run_bridge<B: BridgeTo>(
    path: PathBuf,
    relay: Arc<B>,
    clock: Clock,
    mut stop: Listener,
    silence: Duration,
) {
    let mut backoff = crate::port::REOPEN_FIRST;
    let mut last_error = String::new();
    loop {
        if stop.is_triggered() {
            return;
        }
        match open(&path) {
            Ok(port) => {
                last_error.clear();
                backoff = crate::port::REOPEN_FIRST;
                tracing::info!("bridge open");
                match serve(port, &path, &relay, &clock, &mut stop, silence).await {
                    Ended::Shutdown => return,
                    Ended::Lost(reason) => tracing::warn!(%reason, "bridge lost; reopening"),
                }
            }
            Err(e) => {
                let e = e.to_string();
                if e != last_error {
                    tracing::warn!(error = %e, "cannot open the bridge; retrying");
                    last_error = e;
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = stop.wait() => return,
        }
    }
}

/// Opens the bridge's port: 115200 8N1, raw, no flow control.
fn open(path: &Path) -> Result<tokio_serial::SerialStream, tokio_serial::Error> {
    let builder = tokio_serial::new(path.to_string_lossy(), BAUD)
        .data_bits(tokio_serial::DataBits::Eight)
        .parity(tokio_serial::Parity::None)
        .stop_bits(tokio_serial::StopBits::One)
        .flow_control(tokio_serial::FlowControl::None)
        .timeout(Duration::from_millis(100));
    tokio_serial::SerialStream::open(&builder)
}

/// A bridge handed to a board task.
struct Attachment {
    board: u32,
    serial: String,
    ups: mpsc::Sender<Up>,
}

/// What the line met that the operator hears about.
#[derive(Default)]
struct Trouble {
    reported_bad: u32,
    last_report: Option<Instant>,
    refused: Option<u8>,
}

/// Carries one opening of the line.
async fn serve<B: BridgeTo>(
    port: tokio_serial::SerialStream,
    path: &Path,
    relay: &Arc<B>,
    clock: &Clock,
    stop: &mut Listener,
    silence: Duration,
) -> Ended {
    let shown = path.display().to_string();
    let (mut rd, mut wr) = tokio::io::split(port);
    let (down_tx, mut down_rx) = mpsc::channel::<Down>(DOWN_QUEUE);
    let mut frames = FrameDecoder::new();
    let mut hello: Option<DeviceHello> = None;
    let mut attached: Option<Attachment> = None;
    let mut trouble = Trouble::default();
    let mut heard = clock.now();
    let mut next_greeting = clock.now();
    let mut buf = [0u8; 1024];
    let greeting = Down::Hello { host: concat!("dgt-relay ", env!("CARGO_PKG_VERSION")).to_owned() };
    loop {
        let now = clock.now();
        if hello.is_none() && now >= next_greeting {
            next_greeting = now + GREET_EVERY;
            if let Err(e) = write(&mut wr, &greeting).await {
                return Ended::Lost(crate::port::gone_reason(&e));
            }
        }
        if hello.is_some() && now.duration_since(heard) > silence {
            // The box fell silent: its board is not responding until it answers again.
            tracing::warn!(path = %shown, "the relay box is silent; greeting it again");
            hello = None;
            attached = None;
            next_greeting = now;
            continue;
        }
        let wake = if hello.is_none() { next_greeting } else { heard + silence + Duration::from_millis(1) };
        let mut ups = Vec::new();
        tokio::select! {
            _ = stop.wait() => return Ended::Shutdown,
            n = rd.read(&mut buf) => match n {
                Ok(0) => return Ended::Lost("the device went away (end of file on the bridge)".into()),
                Ok(n) => frames.feed(&buf[..n], |f: Result<Up, FrameError>| ups.push(f)),
                Err(e) => return Ended::Lost(crate::port::gone_reason(&e)),
            },
            Some(down) = down_rx.recv() => {
                if let Err(e) = write(&mut wr, &down).await {
                    return Ended::Lost(crate::port::gone_reason(&e));
                }
            }
            _ = tokio::time::sleep_until(wake) => {}
        }
        for f in ups {
            match f {
                Ok(up) => {
                    heard = clock.now();
                    route(up, &shown, relay, &down_tx, &mut hello, &mut attached).await;
                }
                Err(FrameError::Version(v)) => {
                    refused(v, &shown, relay.as_ref(), attached.as_ref(), &mut trouble)
                }
                Err(e) => tracing::debug!(path = %shown, error = %e, "bad frame from the relay box; skipped"),
            }
        }
        report_bad(frames.stats().bad, &shown, relay.as_ref(), attached.as_ref(), &mut trouble, clock.now());
    }
}

/// A frame from the box: to its board's task once the board is known.
async fn route<B: BridgeTo>(
    up: Up,
    shown: &str,
    relay: &Arc<B>,
    downs: &mpsc::Sender<Down>,
    hello: &mut Option<DeviceHello>,
    attached: &mut Option<Attachment>,
) {
    let serial = match &up {
        Up::Hello(h) => {
            if hello.is_none() {
                tracing::info!(path = %shown, firmware = %h.firmware, platform = %h.platform, "relay box answered");
            }
            *hello = Some(h.clone());
            h.board.clone()
        }
        Up::Record { record: Record::Board { serial }, .. } => Some(serial.clone()),
        _ => None,
    };
    if let (Some(s), Some(a)) = (&serial, attached.as_ref())
        && *s != a.serial
    {
        tracing::info!(path = %shown, old = %a.serial, new = %s, "another board on the relay box");
        *attached = None;
    }
    if attached.is_none()
        && let (Some(serial), Some(h)) = (serial, hello.as_ref())
    {
        let (tx, rx) = mpsc::channel(UP_QUEUE);
        // The board's identity, whether the greeting or a record told it.
        let hello = DeviceHello { board: Some(serial.clone()), ..h.clone() };
        let bridge = BridgeAttached { path: shown.to_owned(), hello, ups: rx, downs: downs.clone() };
        if let Some(number) = relay.attach_bridge(&serial, bridge).await {
            tracing::info!(path = %shown, %serial, board = number, "board identified on the relay box");
            *attached = Some(Attachment { board: number, serial, ups: tx });
        }
        // The greeting or the identity went with the attachment: the board task resumes.
        return;
    }
    if let Some(a) = attached.as_ref()
        && a.ups.send(up).await.is_err()
    {
        *attached = None;
    }
}

async fn write<W: tokio::io::AsyncWrite + Unpin>(wr: &mut W, down: &Down) -> std::io::Result<()> {
    let mut bytes = Vec::new();
    dgt_bridge::frame::encode(down, &mut bytes).map_err(std::io::Error::other)?;
    wr.write_all(&bytes).await?;
    wr.flush().await
}

/// A frame of another protocol version: the operator is told once per version met.
fn refused(v: u8, shown: &str, relay: &impl BridgeTo, attached: Option<&Attachment>, trouble: &mut Trouble) {
    if trouble.refused == Some(v) {
        return;
    }
    trouble.refused = Some(v);
    let message = format!(
        "The relay box on {shown} speaks bridge protocol {v}; this relay speaks {VERSION}. Its frames are refused: \
         update the box's firmware (or the relay) to the same protocol version. The relay keeps greeting it."
    );
    tracing::error!(path = %shown, version = v, "relay box refused: another bridge protocol version");
    relay.bridge_alert(attached.map(|a| a.board), AlertLevel::Error, message);
}

/// Damaged frames since the last report, at most one report a minute, on the board's
/// console (they wait until the box's board is known).
fn report_bad(
    bad: u32,
    shown: &str,
    relay: &impl BridgeTo,
    attached: Option<&Attachment>,
    trouble: &mut Trouble,
    now: Instant,
) {
    if bad <= trouble.reported_bad
        || trouble.last_report.is_some_and(|t| now.saturating_duration_since(t) < REPORT_EVERY)
    {
        return;
    }
    let Some(board) = attached.map(|a| a.board) else { return };
    let new = bad - trouble.reported_bad;
    trouble.reported_bad = bad;
    trouble.last_report = Some(now);
    tracing::warn!(path = %shown, bad, "damaged frames on the bridge skipped");
    let message = format!(
        "Bridge {shown}: {new} damaged frame(s) skipped ({bad} since it opened; a checksum or framing error: \
         noise on the line, or another device on it). Nothing of them was taken; what they carried is sent again."
    );
    relay.bridge_alert(Some(board), AlertLevel::Warning, message);
}
