//! In-process links to simulated boards, for the demo where there are no pseudo-terminals
//! (Windows), or when asked (`dgt-relay demo --in-process`).
//!
//! A simulated board's link is registered under a port name; [`super::open_port`] opens a
//! registered name as it opens a serial device, so the relay's port code (handshake,
//! identification, reopening) runs as for any board. Only the byte transport differs: the
//! board's thread and the relay exchange bytes over channels instead of a pty.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use dgt_hil_sim::HostEnd;
use dgt_hil_sim::sim::ToBoard;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// Where the board's bytes go now: the port opened last, if it is still open.
type Reader = Arc<Mutex<Option<UnboundedSender<Vec<u8>>>>>;

/// One registered link.
struct Registered {
    to_board: ToBoard,
    reader: Reader,
}

/// The registered links, by port name: process-wide, as the machine's serial devices are.
static LINKS: Mutex<BTreeMap<PathBuf, Registered>> = Mutex::new(BTreeMap::new());

fn links() -> MutexGuard<'static, BTreeMap<PathBuf, Registered>> {
    LINKS.lock().unwrap_or_else(|p| p.into_inner())
}

fn lock(reader: &Reader) -> MutexGuard<'_, Option<UnboundedSender<Vec<u8>>>> {
    reader.lock().unwrap_or_else(|p| p.into_inner())
}

/// Registers a simulated board's link under `name`, replacing any link of that name. A
/// thread hands the board's bytes to the port open on it; with no port open they are lost,
/// as on a line nobody reads. It ends when the board stops; the name then reads end of
/// file, as a device that went away.
pub fn register(name: &Path, end: HostEnd) -> io::Result<()> {
    let reader: Reader = Arc::new(Mutex::new(None));
    let from_board = end.from_board;
    let forward = Arc::clone(&reader);
    std::thread::Builder::new().name(format!("link {}", name.display())).spawn(move || {
        loop {
            match from_board.recv(Duration::from_secs(1)) {
                Ok(bytes) => {
                    if let Some(tx) = lock(&forward).as_ref() {
                        let _ = tx.send(bytes);
                    }
                }
                Err(dgt_hil_sim::SimError::Timeout) => {}
                Err(_) => break,
            }
        }
        *lock(&forward) = None;
    })?;
    links().insert(name.to_owned(), Registered { to_board: end.to_board, reader });
    Ok(())
}

/// Removes the link registered under `name` (the demo stopping its board).
pub fn unregister(name: &Path) {
    links().remove(name);
}

/// Opens the link registered under `name`, if there is one: the port opened before on it
/// gets nothing more (it reads end of file).
pub fn open(name: &Path) -> Option<InProcessPort> {
    let links = links();
    let link = links.get(name)?;
    let (tx, rx) = unbounded_channel();
    *lock(&link.reader) = Some(tx);
    Some(InProcessPort { to_board: link.to_board.clone(), from_board: rx, pending: Vec::new() })
}

/// The relay's end of an in-process link, as a byte stream.
#[derive(Debug)]
pub struct InProcessPort {
    to_board: ToBoard,
    from_board: UnboundedReceiver<Vec<u8>>,
    /// Bytes received and not read yet.
    pending: Vec<u8>,
}

impl AsyncRead for InProcessPort {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        while this.pending.is_empty() {
            match this.from_board.poll_recv(cx) {
                Poll::Ready(Some(bytes)) => this.pending = bytes,
                // The board stopped, or the link was opened again: end of file.
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
        let n = buf.remaining().min(this.pending.len());
        buf.put_slice(&this.pending[..n]);
        this.pending.drain(..n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for InProcessPort {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Poll::Ready(
            self.to_board
                .send(buf)
                .map(|()| buf.len())
                .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the simulated board has stopped")),
        )
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
