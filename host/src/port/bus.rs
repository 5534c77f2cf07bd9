//! A chain of boards on one port in DGT's bus mode: a [`BusPoller`] on the line, and a
//! virtual port for each board found (see the module docs of [`super`]).

use std::collections::HashMap;

use dgt_session::{BusEvent, BusPoller};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use super::{AttachTo, Attached, PortIo, PortOptions, gone_reason, identify};
use crate::clock::Clock;
use crate::shutdown::Listener;

/// What a bus port task needs beside the port.
pub(super) struct BusPort<'a> {
    pub(super) path: &'a std::path::Path,
    pub(super) clock: &'a Clock,
    pub(super) ids: &'a std::sync::Arc<std::sync::atomic::AtomicU64>,
    pub(super) opts: &'a PortOptions,
}

/// Why [`run_bus`] returned.
pub(super) enum BusEnd {
    /// Shutdown was requested.
    Shutdown,
    /// The port went away (or carries no board): why, and whether a board was found on it.
    Lost(String, bool),
    /// Looking for a chain (`fallback`), the discovery found fewer than two boards (how
    /// many): the port, for the single-board handshake.
    FewerThanTwo(Box<dyn PortIo>, usize),
}

/// The bus task's end of one board's virtual port.
struct VirtualEnd {
    /// Which opening of the board's line (a stale reader's bytes are dropped).
    generation: u64,
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for VirtualEnd {
    fn drop(&mut self) {
        // With the reader's half gone too, the board task reads the end of its port.
        self.reader.abort();
    }
}

/// Bytes the board sessions wrote on their virtual ports: address, generation, bytes
/// (empty when the session closed its port).
type FromSessions = mpsc::UnboundedSender<(u16, u64, Vec<u8>)>;

/// A virtual port's buffer, each way: far more than a board sends in a polling cycle.
const VIRTUAL_PORT_BUFFER: usize = 64 * 1024;

/// Runs a chain on an open port until the port is lost or shutdown (see the module docs).
/// With `fallback` (a port of unknown kind), nothing is opened until the first discovery is
/// over, and fewer than two boards found give the port back for the single-board handshake.
pub(super) async fn run_bus<A: AttachTo>(
    mut io: Box<dyn PortIo>,
    bus: &BusPort<'_>,
    boards: &std::sync::Arc<A>,
    stop: &mut Listener,
    fallback: bool,
    on_chain: &mut (dyn FnMut(usize) + Send),
) -> BusEnd {
    let clock = bus.clock;
    let mut poller = BusPoller::open(clock.ms(), bus.opts.bus);
    // Events held while a port of unknown kind is still being looked at.
    let mut deciding = fallback;
    let (tx, mut rx) = mpsc::unbounded_channel::<(u16, u64, Vec<u8>)>();
    let mut lines: HashMap<u16, VirtualEnd> = HashMap::new();
    let mut generation = 0u64;
    let mut found = false;
    let mut buf = [0u8; 1024];
    loop {
        let out = poller.take_output();
        if !out.is_empty() {
            let w = async {
                io.write_all(&out).await?;
                io.flush().await
            };
            if let Err(e) = w.await {
                return BusEnd::Lost(gone_reason(&e), found);
            }
        }
        if deciding && !poller.discovering() {
            let n = poller.present().len();
            if n < 2 {
                return BusEnd::FewerThanTwo(io, n);
            }
            tracing::info!(boards = n, "a chain of boards in bus mode");
            on_chain(n);
            deciding = false;
        }
        while !deciding && let Some(event) = poller.next_event() {
            match event {
                BusEvent::Found { address, serial, version } => {
                    found = true;
                    generation += 1;
                    tracing::info!(address, %serial, ?version, "board on the bus; opening its virtual port");
                    let end = open_virtual(bus, boards, stop, &tx, address, serial, generation);
                    lines.insert(address, end);
                }
                BusEvent::Gone { address, reason } => {
                    tracing::warn!(address, %reason, "board gone from the bus; closing its virtual port");
                    lines.remove(&address);
                }
            }
        }
        for address in poller.lines_with_output() {
            let bytes = poller.take_line_output(address);
            tracing::trace!(
                address,
                bytes = bytes.len(),
                open = lines.contains_key(&address),
                "to the virtual port"
            );
            if let Some(end) = lines.get_mut(&address)
                && end.write.write_all(&bytes).await.is_err()
            {
                lines.remove(&address);
            }
        }
        let deadline = clock.at(poller.next_deadline());
        tokio::select! {
            biased;
            _ = stop.wait() => return BusEnd::Shutdown,
            n = io.read(&mut buf) => match n {
                Ok(0) => return BusEnd::Lost("the device went away (end of file on the port)".into(), found),
                Ok(n) => poller.on_bytes(clock.ms(), &buf[..n]),
                Err(e) => return BusEnd::Lost(gone_reason(&e), found),
            },
            Some((address, g, bytes)) = rx.recv() => {
                if lines.get(&address).is_some_and(|l| l.generation == g) {
                    if bytes.is_empty() {
                        // The board's task gave its port back: offer the board again.
                        lines.remove(&address);
                        poller.line_closed(clock.ms(), address);
                    } else {
                        poller.line_input(address, &bytes);
                    }
                }
            }
            _ = tokio::time::sleep_until(deadline) => poller.poll(clock.ms()),
        }
        if !fallback && !found && !poller.discovering() && poller.present().is_empty() {
            return BusEnd::Lost("no board answered in bus mode either".into(), false);
        }
    }
}

/// Opens a virtual port for the board at `address`: a reader forwards what its session
/// writes, and a task runs its handshake and hands it to the board's task by serial number.
fn open_virtual<A: AttachTo>(
    bus: &BusPort<'_>,
    boards: &std::sync::Arc<A>,
    stop: &Listener,
    tx: &FromSessions,
    address: u16,
    serial: String,
    generation: u64,
) -> VirtualEnd {
    let (ours, theirs) = tokio::io::duplex(VIRTUAL_PORT_BUFFER);
    let (mut read, write) = tokio::io::split(ours);
    let forward = tx.clone();
    let reader = tokio::spawn(async move {
        let mut buf = [0u8; 512];
        loop {
            match read.read(&mut buf).await {
                Ok(0) | Err(_) => {
                    let _ = forward.send((address, generation, Vec::new()));
                    return;
                }
                Ok(n) => {
                    if forward.send((address, generation, buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
            }
        }
    });
    let path = format!("{} (bus address {address})", bus.path.display());
    let (clock, timing) = (bus.clock.clone(), bus.opts.timing);
    let port_id = bus.ids.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let boards = std::sync::Arc::clone(boards);
    let mut stop = stop.clone();
    tokio::spawn(async move {
        let mut io = theirs;
        let link = match identify(&mut io, &clock, timing, &mut stop).await {
            Ok(link) => link,
            Err(e) => {
                tracing::warn!(address, ?e, "no handshake on the virtual port");
                return;
            }
        };
        let (released, back) = oneshot::channel();
        let attached = Attached { port_id, path, io: Box::new(io), link, released };
        if boards.attach(&serial, attached).await {
            let _ = back.await;
        }
    });
    VirtualEnd { generation, write, reader }
}
