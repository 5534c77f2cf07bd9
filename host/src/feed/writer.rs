//! The websocket writers: a task per core, each writing every frame to its share of the
//! clients.
//!
//! # Why writers, not a task per client
//! A frame for 1,000 subscribers used to wake 1,000 tasks, each of which took the frame
//! from the ring, framed it for its socket, wrote it and went back to sleep: a scheduler
//! round trip, a ring registration and a copy per delivery, on top of the socket write. A
//! writer takes each frame once and writes it to every client of its share in one pass, as
//! a loop over sockets does. The frame's websocket bytes are made once (`wire.rs`) and
//! written as they are; what waits for one client goes out with one vectored write. What
//! is left per delivery is the `write` itself. With several writers the pass is spread
//! over the cores: one writer for every two cores, the others left to the boards, the kernel's
//! share of each write and the rest of the relay. (On the 2-core machine of `BENCHMARKS.md`,
//! with the subscribers on the same cores, one writer had the lower latency: two writers
//! and the subscribers' reading took turns on the cores, and every pass took longer.)
//!
//! A client's task (`client.rs`) reads what the client sends and tells its writer what to
//! write besides the frames (answers, snapshots, the protocol's pongs, the closing frame).
//!
//! # Order and gaps
//! Frames reach the writers in sequence order, sent under the hub's lock. A client waiting
//! for a snapshot is *held*: the frames that come meanwhile wait, and once the snapshot
//! (taken at sequence `n`) arrives, it is written first and only the waiting frames after
//! `n` follow. The hub holds a client under the same lock it takes the snapshot with, so
//! every frame after `n` finds it held.
//!
//! # Slow clients
//! A client whose socket does not take what it is given queues it, up to [`RING`] frames.
//! Beyond that it lagged: its queue is dropped and its task resynchronises it with a fresh
//! snapshot (and disconnects it if that keeps happening). A client whose socket takes
//! nothing for [`ClientLimits::send_timeout`] is dropped. No client waits for another: a
//! socket that is full leaves the writer's pass at once.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::io::IoSlice;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};

use axum::body::Bytes;
use tokio::io::AsyncWrite;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use super::frame::{Frame, RING};
use super::session::{ClientEnd, ClientLimits};
use super::wire;
use crate::clock::Clock;
use crate::shutdown::Listener;

/// What holds a connection's place (under the server's connection cap) for as long as its
/// socket is open.
pub type Keep = Option<Box<dyn std::any::Any + Send + Sync>>;

/// The most frames given to one vectored write.
const MAX_SLICES: usize = 64;
/// The most messages a writer takes before it writes (and yields to other tasks).
const MAX_TAKEN: usize = 4 * RING;
/// How many writers for `cores` cores: one for every two, at least one.
fn writers_for(cores: usize) -> usize {
    (cores / 2).max(1)
}

/// During a pass, what came meanwhile is taken after every this many clients.
const TAKE_EVERY: usize = 32;

/// What the writers tell a client's task.
#[derive(Debug, Default)]
pub(super) struct Signal {
    notify: Notify,
    /// Times the client lagged behind its queue's bound.
    lagged: AtomicU64,
    /// Why the writer dropped the client, once it has.
    ended: Mutex<Option<ClientEnd>>,
}

impl Signal {
    /// Waits for news from the writer.
    pub(super) async fn changed(&self) {
        self.notify.notified().await;
    }

    /// Lags since the last call.
    pub(super) fn take_lagged(&self) -> u64 {
        self.lagged.swap(0, Ordering::AcqRel)
    }

    /// Why the writer dropped the client, if it has.
    pub(super) fn ended(&self) -> Option<ClientEnd> {
        *self.ended.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn end(&self, why: ClientEnd) {
        self.ended.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(why);
        self.notify.notify_one();
    }

    fn lag(&self) {
        self.lagged.fetch_add(1, Ordering::AcqRel);
        self.notify.notify_one();
    }
}

/// What a writer is told, in the order it happened.
enum ToWriter {
    /// Frames for every client, written together.
    Frames(Vec<Arc<Frame>>),
    /// A new client, held until its first snapshot.
    Join { id: u64, socket: OwnedWriteHalf, keep: Keep, signal: Arc<Signal> },
    /// The client waits for a snapshot: frames wait until it comes.
    Hold { id: u64 },
    /// The client's snapshot at sequence `seq`, for the boards of `filter`.
    Snapshot { id: u64, seq: u64, filter: Option<Arc<BTreeSet<u32>>>, frame: Bytes },
    /// Bytes for this client only: an answer, or the protocol's own (a pong).
    Send { id: u64, frame: Bytes },
    /// These frames, then close the connection.
    Close { id: u64, frames: Vec<Bytes> },
    /// The client left: drop it.
    Leave { id: u64 },
}

/// The writer tasks and the clients' places among them.
#[derive(Debug, Default)]
pub(super) struct Writers {
    /// One per core, started with the first client.
    shards: OnceLock<Vec<mpsc::UnboundedSender<ToWriter>>>,
    next_id: AtomicU64,
    clients: Arc<AtomicUsize>,
}

impl std::fmt::Debug for ToWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ToWriter::Frames(_) => "Frames",
            ToWriter::Join { .. } => "Join",
            ToWriter::Hold { .. } => "Hold",
            ToWriter::Snapshot { .. } => "Snapshot",
            ToWriter::Send { .. } => "Send",
            ToWriter::Close { .. } => "Close",
            ToWriter::Leave { .. } => "Leave",
        })
    }
}

/// A client's place at its writer.
#[derive(Debug)]
pub(super) struct Seat {
    id: u64,
    tx: mpsc::UnboundedSender<ToWriter>,
    /// News from the writer.
    pub(super) signal: Arc<Signal>,
}

impl Seat {
    /// Holds the client: frames wait for its next snapshot. Called under the hub's lock.
    pub(super) fn hold(&self) {
        let _ = self.tx.send(ToWriter::Hold { id: self.id });
    }

    /// Writes the snapshot taken at `seq` (after a hold), then the frames after it, for the
    /// boards of `filter` (renumbered from `seq` when it is some boards only).
    pub(super) fn snapshot(&self, seq: u64, filter: Option<&BTreeSet<u32>>, frame: Bytes) {
        let filter = filter.map(|f| Arc::new(f.clone()));
        let _ = self.tx.send(ToWriter::Snapshot { id: self.id, seq, filter, frame });
    }

    /// Writes bytes for this client only.
    pub(super) fn send(&self, frame: Bytes) {
        let _ = self.tx.send(ToWriter::Send { id: self.id, frame });
    }

    /// Writes these frames, then closes the connection.
    pub(super) fn close(&self, frames: Vec<Bytes>) {
        let _ = self.tx.send(ToWriter::Close { id: self.id, frames });
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        let _ = self.tx.send(ToWriter::Leave { id: self.id });
    }
}

impl Writers {
    /// Clients seated now.
    pub(super) fn clients(&self) -> usize {
        self.clients.load(Ordering::Relaxed)
    }

    /// Seats a client on `socket`, held until its first snapshot. Called under the hub's
    /// lock, so that the frames after the snapshot the caller takes find it held. The
    /// writers start with the first client, on its runtime, and stop with `stop`.
    pub(super) fn join(
        &self,
        socket: OwnedWriteHalf,
        keep: Keep,
        stop: &Listener,
        limits: ClientLimits,
        clock: &Clock,
    ) -> Seat {
        let shards = self.shards.get_or_init(|| {
            let n = writers_for(std::thread::available_parallelism().map_or(1, |n| n.get()));
            (0..n)
                .map(|_| {
                    let (tx, rx) = mpsc::unbounded_channel();
                    let writer = Writer::new(limits, clock.clone(), Arc::clone(&self.clients));
                    tokio::spawn(writer.run(rx, stop.clone()));
                    tx
                })
                .collect()
        });
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let tx = shards[(id % shards.len() as u64) as usize].clone();
        let signal = Arc::new(Signal::default());
        self.clients.fetch_add(1, Ordering::Relaxed);
        let _ = tx.send(ToWriter::Join { id, socket, keep, signal: Arc::clone(&signal) });
        Seat { id, tx, signal }
    }

    /// Hands frames to every writer. Called under the hub's lock: frames keep their order.
    pub(super) fn frames(&self, frames: &[Arc<Frame>]) {
        for tx in self.shards.get().into_iter().flatten() {
            let _ = tx.send(ToWriter::Frames(frames.to_vec()));
        }
    }
}

/// One client at its writer.
struct Out {
    socket: OwnedWriteHalf,
    /// Holds the connection's place under the server's cap while the socket is open.
    _keep: Keep,
    signal: Arc<Signal>,
    /// Bytes ready to write, in order; the first one's first `written` bytes are out.
    queue: VecDeque<Bytes>,
    written: usize,
    /// Waiting for a snapshot: the frames that came meanwhile.
    held: Option<Vec<Arc<Frame>>>,
    /// Some boards only (`None`: all).
    filter: Option<Arc<BTreeSet<u32>>>,
    /// The last sequence number given to this client, when its subscription numbers its
    /// own deltas (some boards only).
    own_seq: Option<u64>,
    /// Frames up to this sequence number are in the snapshot it got.
    from_seq: u64,
    /// Since when the socket has taken nothing of what waits.
    stuck_since: Option<Instant>,
    /// Closing: dropped once the queue is written.
    closing: bool,
    /// It lagged at this frame: a snapshot taken before it is stale (a newer one comes).
    lagged_at: Option<u64>,
}

/// How a client's writing went.
enum Pumped {
    /// All written.
    Done,
    /// The socket takes no more for now (the writer is woken when it does).
    Blocked,
    /// The socket failed.
    Failed,
}

impl Out {
    fn new(socket: OwnedWriteHalf, keep: Keep, signal: Arc<Signal>) -> Out {
        Out {
            socket,
            _keep: keep,
            signal,
            queue: VecDeque::new(),
            written: 0,
            held: Some(Vec::new()),
            filter: None,
            own_seq: None,
            from_seq: 0,
            stuck_since: None,
            closing: false,
            lagged_at: None,
        }
    }

    fn wanted(&self, f: &Frame) -> bool {
        f.seq > self.from_seq
            && match (f.board, &self.filter) {
                (Some(b), Some(set)) => set.contains(&b),
                _ => true,
            }
    }

    /// The frame's bytes for this client: shared, or renumbered for its own sequence.
    fn bytes(&mut self, f: &Frame) -> Bytes {
        match &mut self.own_seq {
            Some(n) => {
                *n += 1;
                wire::text(f.renumbered(*n).as_str())
            }
            None => f.wire.clone(),
        }
    }

    /// Takes a frame; false when the client lagged (more than [`RING`] frames wait).
    fn take(&mut self, f: &Arc<Frame>) -> bool {
        if let Some(held) = &mut self.held {
            held.push(Arc::clone(f));
            return held.len() <= RING;
        }
        if self.wanted(f) {
            let bytes = self.bytes(f);
            self.queue.push_back(bytes);
        }
        self.queue.len() <= RING
    }

    /// Writes what waits, as far as the socket takes it: one vectored write for up to
    /// [`MAX_SLICES`] frames at a time.
    fn pump(&mut self, cx: &mut Context<'_>) -> Pumped {
        while !self.queue.is_empty() {
            let written = self.written;
            let slices: Vec<IoSlice<'_>> = self
                .queue
                .iter()
                .take(MAX_SLICES)
                .enumerate()
                .map(|(i, b)| IoSlice::new(if i == 0 { &b[written..] } else { b }))
                .collect();
            match Pin::new(&mut self.socket).poll_write_vectored(cx, &slices) {
                Poll::Ready(Ok(0) | Err(_)) => return Pumped::Failed,
                Poll::Ready(Ok(n)) => self.advance(n),
                Poll::Pending => return Pumped::Blocked,
            }
        }
        Pumped::Done
    }

    /// `n` more bytes of the queue are out.
    fn advance(&mut self, mut n: usize) {
        while let Some(front) = self.queue.front() {
            let left = front.len() - self.written;
            if n < left {
                self.written += n;
                return;
            }
            n -= left;
            self.written = 0;
            self.queue.pop_front();
        }
    }
}

/// One writer: its clients, and those with something to write.
struct Writer {
    limits: ClientLimits,
    clock: Clock,
    clients: HashMap<u64, Out>,
    /// Clients with bytes waiting.
    busy: BTreeSet<u64>,
    /// Clients seated relay-wide.
    count: Arc<AtomicUsize>,
}

impl Writer {
    fn new(limits: ClientLimits, clock: Clock, count: Arc<AtomicUsize>) -> Writer {
        Writer { limits, clock, clients: HashMap::new(), busy: BTreeSet::new(), count }
    }

    fn remove(&mut self, id: u64, why: ClientEnd) {
        if let Some(out) = self.clients.remove(&id) {
            out.signal.end(why);
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
        self.busy.remove(&id);
    }

    /// The client lagged at frame `at`: what waits is dropped, and its task sends a fresh
    /// snapshot.
    fn lagged(&mut self, id: u64, at: u64) {
        if let Some(out) = self.clients.get_mut(&id) {
            // A frame partly written is finished, so the stream of frames stays whole.
            let partial = (out.written > 0).then(|| out.queue.pop_front()).flatten();
            out.queue.clear();
            out.queue.extend(partial);
            out.held = Some(Vec::new());
            out.lagged_at = Some(at);
            out.signal.lag();
        }
    }

    fn handle(&mut self, m: ToWriter) {
        match m {
            ToWriter::Frames(frames) => {
                for f in frames {
                    let mut lagging = Vec::new();
                    for (id, out) in &mut self.clients {
                        if out.closing {
                            continue;
                        }
                        if !out.take(&f) {
                            lagging.push(*id);
                        } else if !out.queue.is_empty() {
                            self.busy.insert(*id);
                        }
                    }
                    for id in lagging {
                        self.lagged(id, f.seq);
                    }
                }
            }
            ToWriter::Join { id, socket, keep, signal } => {
                self.clients.insert(id, Out::new(socket, keep, signal));
            }
            ToWriter::Hold { id } => {
                if let Some(out) = self.clients.get_mut(&id) {
                    out.held.get_or_insert_with(Vec::new);
                }
            }
            ToWriter::Snapshot { id, seq, filter, frame } => {
                let Some(out) = self.clients.get_mut(&id) else { return };
                if out.closing || out.lagged_at.is_some_and(|at| seq < at) {
                    // Taken before the client lagged: the snapshot after the lag follows.
                    return;
                }
                out.lagged_at = None;
                out.filter = filter;
                out.own_seq = out.filter.as_ref().map(|_| seq);
                out.from_seq = seq;
                out.queue.push_back(frame);
                for f in out.held.take().unwrap_or_default() {
                    if out.wanted(&f) {
                        let bytes = out.bytes(&f);
                        out.queue.push_back(bytes);
                    }
                }
                self.busy.insert(id);
            }
            ToWriter::Send { id, frame } => {
                let Some(out) = self.clients.get_mut(&id) else { return };
                if out.closing {
                    return;
                }
                out.queue.push_back(frame);
                if out.queue.len() > RING {
                    // Answers the socket does not take: the client is not reading.
                    self.remove(id, ClientEnd::TooSlow);
                    return;
                }
                self.busy.insert(id);
            }
            ToWriter::Close { id, frames } => {
                let Some(out) = self.clients.get_mut(&id) else { return };
                if out.closing {
                    return;
                }
                out.held = None;
                out.queue.extend(frames);
                out.queue.push_back(wire::close(1008, "policy violation"));
                out.closing = true;
                self.busy.insert(id);
            }
            ToWriter::Leave { id } => {
                // A client being closed goes once its last frames are written.
                if !self.clients.get(&id).is_some_and(|o| o.closing) {
                    self.remove(id, ClientEnd::Closed);
                }
            }
        }
    }

    /// Takes what was sent to the writer, up to `max` messages; false once the channel is
    /// closed.
    fn take(&mut self, rx: &mut mpsc::UnboundedReceiver<ToWriter>, cx: &mut Context<'_>, max: usize) -> bool {
        for _ in 0..max {
            match rx.poll_recv(cx) {
                Poll::Ready(Some(m)) => self.handle(m),
                Poll::Ready(None) => return false,
                Poll::Pending => break,
            }
        }
        true
    }

    /// Writes what waits for the busy clients. Every [`TAKE_EVERY`] clients it takes what
    /// came meanwhile, so that the clients not written yet get it with the same write;
    /// those written already get it on the next pass. Returns false once the channel is
    /// closed.
    fn pass(&mut self, rx: &mut mpsc::UnboundedReceiver<ToWriter>, cx: &mut Context<'_>) -> bool {
        let busy: Vec<u64> = self.busy.iter().copied().collect();
        for (i, ids) in busy.chunks(TAKE_EVERY).enumerate() {
            if i > 0 && !self.take(rx, cx, MAX_TAKEN) {
                return false;
            }
            self.pump(ids, cx);
        }
        true
    }

    /// Writes what waits for clients `ids`.
    fn pump(&mut self, ids: &[u64], cx: &mut Context<'_>) {
        let now = self.clock.now();
        for &id in ids {
            let Some(out) = self.clients.get_mut(&id) else {
                self.busy.remove(&id);
                continue;
            };
            match out.pump(cx) {
                Pumped::Done => {
                    out.stuck_since = None;
                    self.busy.remove(&id);
                    if out.closing {
                        self.remove(id, ClientEnd::Closed);
                    }
                }
                Pumped::Blocked => {
                    out.stuck_since.get_or_insert(now);
                }
                Pumped::Failed => self.remove(id, ClientEnd::Closed),
            }
        }
    }

    /// Drops the clients whose socket has taken nothing for the send timeout; returns when
    /// the next one would be due.
    fn expire(&mut self) -> Option<Instant> {
        let now = self.clock.now();
        let limit = self.limits.send_timeout;
        let stuck: Vec<u64> = self
            .busy
            .iter()
            .copied()
            .filter(|id| self.clients.get(id).and_then(|o| o.stuck_since).is_some_and(|t| now >= t + limit))
            .collect();
        for id in stuck {
            tracing::warn!("websocket client took nothing for {} s, dropped", limit.as_secs());
            self.remove(id, ClientEnd::TooSlow);
        }
        self.busy.iter().filter_map(|id| self.clients.get(id)?.stuck_since).min().map(|t| t + limit)
    }

    /// Writes until `stop`, then closes every client (for at most the send timeout).
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<ToWriter>, mut stop: Listener) {
        let timer = tokio::time::sleep_until(self.clock.now());
        tokio::pin!(timer);
        let stopping = stop.wait();
        tokio::pin!(stopping);
        std::future::poll_fn(|cx| {
            if stopping.as_mut().poll(cx).is_ready() {
                return Poll::Ready(());
            }
            // What came is taken, then written with one pass and one vectored write per
            // client; another pass follows at once for what came during this one.
            if !self.take(&mut rx, cx, MAX_TAKEN) || !self.pass(&mut rx, cx) {
                return Poll::Ready(());
            }
            if self.busy.iter().any(|id| self.clients.get(id).is_some_and(|o| o.stuck_since.is_none())) {
                cx.waker().wake_by_ref();
            }
            if let Some(due) = self.expire() {
                timer.as_mut().reset(due);
                if timer.as_mut().poll(cx).is_ready() {
                    cx.waker().wake_by_ref();
                }
            }
            Poll::Pending
        })
        .await;
        self.close_all().await;
    }

    /// The relay stops: every client gets a closing frame.
    async fn close_all(&mut self) {
        for (id, out) in &mut self.clients {
            out.held = None;
            out.queue.push_back(wire::close(1001, "relay shutting down"));
            out.closing = true;
            self.busy.insert(*id);
        }
        let limit = self.limits.send_timeout;
        let writing = std::future::poll_fn(|cx| {
            let busy: Vec<u64> = self.busy.iter().copied().collect();
            self.pump(&busy, cx);
            if self.busy.is_empty() { Poll::Ready(()) } else { Poll::Pending }
        });
        let _ = tokio::time::timeout(limit, writing).await;
        let ids: Vec<u64> = self.clients.keys().copied().collect();
        for id in ids {
            self.remove(id, ClientEnd::Shutdown);
        }
    }
}
