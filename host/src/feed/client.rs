//! One websocket client: what it may ask (subscriptions, resyncs, pings) under its rate
//! limits, and its session on the socket.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use futures_util::SinkExt;
use serde::Deserialize;
use tokio::sync::broadcast;
use tokio::time::Instant;

use super::FEED_VERSION;
use super::alerts::AlertEntry;
use super::hub::{Frame, Hub};
use super::views::{BoardView, Snapshot};
use crate::shutdown::Listener;

/// The largest client message accepted, bytes.
pub const MAX_CLIENT_MESSAGE: usize = 4096;
/// Most frames written to one client with a single flush (one socket write).
pub const MAX_BATCH: usize = 256;
/// The websocket read buffer per client, bytes. Client messages are small (at most
/// [`MAX_CLIENT_MESSAGE`]); the library zero-fills up to this many bytes on every poll of
/// the socket for reading, which happens each time a frame is sent, so its default
/// (128 KiB) cost more than the sending itself with many clients.
pub const READ_BUFFER: usize = 1024;

/// What a client may send.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum ClientMessage {
    /// Choose boards; a new snapshot follows.
    Subscribe {
        #[serde(default)]
        boards: BoardSelection,
    },
    /// Ask for a fresh snapshot.
    Resync {},
    /// Liveness check; answered with `pong`.
    Ping {},
}

#[derive(Debug, Default, Deserialize)]
#[serde(untagged)]
enum BoardSelection {
    #[default]
    #[serde(skip)]
    Unset,
    All(AllTag),
    Some(Vec<u32>),
}

#[derive(Debug, Deserialize)]
enum AllTag {
    #[serde(rename = "all")]
    All,
}

/// Per-client limits.
#[derive(Clone, Copy, Debug)]
pub struct ClientLimits {
    /// Longest wait for the socket to take one frame (or one batch of frames, see
    /// [`MAX_BATCH`]) before the client is dropped.
    pub send_timeout: Duration,
    /// Resyncs allowed within [`ClientLimits::resync_window`] before the client is dropped.
    pub max_resyncs: usize,
    /// See `max_resyncs`.
    pub resync_window: Duration,
    /// Malformed messages tolerated before the client is dropped.
    pub max_errors: usize,
    /// Snapshots a client may ask for (`subscribe`, `resync`) in a burst...
    pub snapshot_burst: u32,
    /// ...and then one every this long (a token bucket per connection).
    pub snapshot_every: Duration,
    /// Messages of any kind a client may send in a burst...
    pub message_burst: u32,
    /// ...and then one every this long.
    pub message_every: Duration,
    /// Messages refused for their rate (`rate_limited`) tolerated within
    /// [`ClientLimits::resync_window`] before the client is disconnected.
    pub max_limited: usize,
}

impl Default for ClientLimits {
    fn default() -> Self {
        ClientLimits {
            send_timeout: Duration::from_secs(5),
            max_resyncs: 3,
            resync_window: Duration::from_secs(60),
            max_errors: 20,
            snapshot_burst: 10,
            snapshot_every: Duration::from_secs(1),
            message_burst: 30,
            message_every: Duration::from_millis(100),
            max_limited: 20,
        }
    }
}

/// A token bucket: `burst` tokens, one more every `every`.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    /// Tokens in thousandths.
    milli: u64,
    burst: u64,
    every: Duration,
    at: Instant,
}

impl Bucket {
    fn new(burst: u32, every: Duration, now: Instant) -> Bucket {
        let burst = u64::from(burst.max(1)) * 1000;
        Bucket { milli: burst, burst, every, at: now }
    }

    /// Takes a token if there is one.
    fn take(&mut self, now: Instant) -> bool {
        let every = self.every.as_millis().max(1);
        let gained = now.saturating_duration_since(self.at).as_millis() * 1000 / every;
        self.milli = (u128::from(self.milli) + gained).min(u128::from(self.burst)) as u64;
        self.at = now;
        if self.milli >= 1000 {
            self.milli -= 1000;
            true
        } else {
            false
        }
    }
}

/// A client's message, as the socket gave it.
#[derive(Clone, Copy, Debug)]
pub enum ClientInput<'a> {
    /// A text frame.
    Text(&'a str),
    /// A binary frame (refused).
    Binary,
}

/// What to do after a client's message.
#[derive(Debug)]
pub enum ClientAction {
    /// Send this frame (a pong, an error).
    Reply(Message),
    /// Subscribe again and send a snapshot of the boards in
    /// [`ClientSession::filter`]; `resync` is its flag.
    Snapshot {
        /// Asked for by `resync` (true) or `subscribe` (false).
        resync: bool,
    },
    /// Send this frame, then close the connection.
    Close(Message, ClientEnd),
}

/// What one client asked for and how much, independent of its socket: the board filter,
/// malformed messages and the rate limits. [`serve_client`] runs it on a websocket; the
/// fuzz targets run it on arbitrary input.
#[derive(Debug)]
pub struct ClientSession {
    limits: ClientLimits,
    filter: Option<BTreeSet<u32>>,
    errors: usize,
    snapshots: Bucket,
    messages: Bucket,
    /// When messages were refused for their rate, within the window.
    limited: VecDeque<Instant>,
}

impl ClientSession {
    /// A client that connected at `now`, subscribed to every board.
    pub fn new(limits: ClientLimits, now: Instant) -> ClientSession {
        ClientSession {
            limits,
            filter: None,
            errors: 0,
            snapshots: Bucket::new(limits.snapshot_burst, limits.snapshot_every, now),
            messages: Bucket::new(limits.message_burst, limits.message_every, now),
            limited: VecDeque::new(),
        }
    }

    /// The boards the client subscribed to (`None`: all).
    pub fn filter(&self) -> Option<&BTreeSet<u32>> {
        self.filter.as_ref()
    }

    fn bad(&mut self, message: &str) -> ClientAction {
        self.errors += 1;
        if self.errors > self.limits.max_errors {
            let f = error_frame("bad_message", "too many malformed messages; disconnected");
            return ClientAction::Close(f, ClientEnd::TooManyErrors);
        }
        ClientAction::Reply(error_frame("bad_message", message))
    }

    fn rate_limited(&mut self, what: &str, now: Instant) -> ClientAction {
        while self
            .limited
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) > self.limits.resync_window)
        {
            self.limited.pop_front();
        }
        self.limited.push_back(now);
        if self.limited.len() > self.limits.max_limited {
            let f = error_frame("rate_limited", "too many requests; disconnected");
            return ClientAction::Close(f, ClientEnd::RateLimited);
        }
        ClientAction::Reply(error_frame("rate_limited", what))
    }

    /// Handles one message received at `now`.
    pub fn on_message(&mut self, input: ClientInput<'_>, now: Instant) -> ClientAction {
        if !self.messages.take(now) {
            return self.rate_limited("too many messages; at most 10 a second (bursts of 30)", now);
        }
        let text = match input {
            ClientInput::Binary => return self.bad("binary frames are not accepted"),
            ClientInput::Text(t) => t,
        };
        let msg = match serde_json::from_str::<ClientMessage>(text) {
            Ok(m) => m,
            Err(e) => return self.bad(&format!("not a valid client message: {e}")),
        };
        let resync = match msg {
            ClientMessage::Ping {} => {
                return ClientAction::Reply(Message::Text(
                    format!(r#"{{"v":{FEED_VERSION},"type":"pong"}}"#).into(),
                ));
            }
            ClientMessage::Subscribe { boards: BoardSelection::Some(list) }
                if list.len() > crate::tournament::MAX_BOARDS =>
            {
                return self.bad("too many boards in one subscription");
            }
            ClientMessage::Subscribe { .. } => false,
            ClientMessage::Resync {} => true,
        };
        // A snapshot is the expensive request: its own, slower bucket.
        if !self.snapshots.take(now) {
            return self.rate_limited(
                "too many subscribe/resync requests; at most one a second (bursts of 10)",
                now,
            );
        }
        if let ClientMessage::Subscribe { boards } = msg {
            self.filter = match boards {
                BoardSelection::Unset | BoardSelection::All(AllTag::All) => None,
                BoardSelection::Some(list) => Some(list.into_iter().collect()),
            };
        }
        ClientAction::Snapshot { resync }
    }
}

fn error_frame(code: &str, message: &str) -> Message {
    let v = serde_json::json!({"v": FEED_VERSION, "type": "error", "code": code, "message": message});
    Message::Text(v.to_string().into())
}

/// The snapshot frame a client gets: the boards of `filter` (all when `None`).
pub fn snapshot_frame(
    snap: &Snapshot,
    filter: Option<&BTreeSet<u32>>,
    resync: bool,
    alerts: &[AlertEntry],
    time_ms: u64,
) -> Message {
    let boards: Vec<&BoardView> =
        snap.boards.iter().filter(|b| filter.is_none_or(|f| f.contains(&b.board))).collect();
    let v = serde_json::json!({
        "v": FEED_VERSION,
        "type": "snapshot",
        "seq": snap.seq,
        "resync": resync,
        "time": time_ms,
        "boards": boards,
        "alerts": alerts,
    });
    Message::Text(v.to_string().into())
}

/// Why a client's session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientEnd {
    /// The client closed or the connection broke.
    Closed,
    /// The relay is shutting down.
    Shutdown,
    /// Too slow: lagged too often or a frame send timed out.
    TooSlow,
    /// Too many malformed messages.
    TooManyErrors,
    /// Went on sending over its rate limits.
    RateLimited,
}

/// Serves one websocket client until it leaves, misbehaves or the relay stops.
pub async fn serve_client(
    mut ws: WebSocket,
    hub: Arc<Hub>,
    mut stop: Listener,
    limits: ClientLimits,
) -> ClientEnd {
    let clock = hub.clock().clone();
    let mut client = ClientSession::new(limits, clock.now());
    let (snap, mut rx) = hub.subscribe();
    let mut resyncs: VecDeque<Instant> = VecDeque::new();
    let alerts = hub.relay_alerts();
    if !send(&mut ws, snapshot_frame(&snap, None, false, &alerts, clock.wall_ms()), limits).await {
        return ClientEnd::TooSlow;
    }
    // A subscription to some boards numbers its own deltas, from its snapshot's `seq` on:
    // gap-free, as the deltas of the other boards are not sent to it.
    let mut own_seq: Option<u64> = None;
    // Made once: a new shutdown future on every wake-up costs a registration and a
    // deregistration each time.
    let stopping = stop.wait();
    tokio::pin!(stopping);
    loop {
        // In this order, and no further once one is ready: a wake-up for a frame polls the
        // ring only, not the socket for client messages as well. Client messages are read
        // whenever the ring is empty for this client, i.e. after every batch unless new
        // frames arrived while it was written (at most RING / MAX_BATCH batches in a row).
        tokio::select! {
            biased;
            () = &mut stopping => {
                let _ = tokio::time::timeout(limits.send_timeout, ws.send(Message::Close(Some(CloseFrame {
                    code: 1001,
                    reason: "relay shutting down".into(),
                })))).await;
                return ClientEnd::Shutdown;
            }
            frame = rx.recv() => {
                let lagged = match frame {
                    Ok(frame) => match send_batch(&mut ws, &mut rx, frame, client.filter(), &mut own_seq, limits).await {
                        Some(lagged) => lagged,
                        None => return ClientEnd::TooSlow,
                    },
                    Err(broadcast::error::RecvError::Lagged(missed)) => Some(missed),
                    Err(broadcast::error::RecvError::Closed) => return ClientEnd::Shutdown,
                };
                let Some(missed) = lagged else { continue };
                let now = clock.now();
                while resyncs.front().is_some_and(|t| now.duration_since(*t) > limits.resync_window) {
                    resyncs.pop_front();
                }
                resyncs.push_back(now);
                if resyncs.len() > limits.max_resyncs {
                    tracing::warn!(missed, "websocket client too slow, dropped");
                    let f = error_frame("too_slow", "the client fell behind too often and is disconnected");
                    let _ = tokio::time::timeout(limits.send_timeout, ws.send(f)).await;
                    return ClientEnd::TooSlow;
                }
                tracing::info!(missed, "websocket client lagged, resynchronising");
                let (snap, new_rx) = hub.subscribe();
                rx = new_rx;
                own_seq = client.filter().map(|_| snap.seq);
                if !send(&mut ws, snapshot_frame(&snap, client.filter(), true, &hub.relay_alerts(), clock.wall_ms()), limits).await {
                    return ClientEnd::TooSlow;
                }
            }
            incoming = ws.recv() => {
                let action = match incoming {
                    None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return ClientEnd::Closed,
                    Some(Ok(Message::Text(t))) => client.on_message(ClientInput::Text(t.as_str()), clock.now()),
                    Some(Ok(Message::Binary(_))) => client.on_message(ClientInput::Binary, clock.now()),
                    Some(Ok(_)) => continue, // ping/pong: answered by the library
                };
                let reply = match action {
                    ClientAction::Reply(m) => m,
                    ClientAction::Snapshot { resync } => {
                        let (snap, new_rx) = hub.subscribe();
                        rx = new_rx;
                        own_seq = client.filter().map(|_| snap.seq);
                        snapshot_frame(&snap, client.filter(), resync, &hub.relay_alerts(), clock.wall_ms())
                    }
                    ClientAction::Close(m, end) => {
                        tracing::info!(?end, "websocket client disconnected");
                        let _ = send(&mut ws, m, limits).await;
                        let close = Message::Close(Some(CloseFrame { code: 1008, reason: "policy violation".into() }));
                        let _ = send(&mut ws, close, limits).await;
                        return end;
                    }
                };
                if !send(&mut ws, reply, limits).await { return ClientEnd::TooSlow; }
            }
        }
    }
}

/// Writes `first` and every further frame already in the ring (up to [`MAX_BATCH`]) with
/// one flush, so a client that has fallen a little behind catches up with one socket write
/// instead of one per frame. The frames share their JSON bytes with every other client (a
/// reference count; the library copies them once into this socket's write buffer). Returns `None` when the socket did not take the batch within
/// the send timeout or failed, `Some(Some(missed))` when the receiver lagged behind the ring
/// (the frames before the gap have been sent: the caller resynchronises), else `Some(None)`.
async fn send_batch(
    ws: &mut WebSocket,
    rx: &mut broadcast::Receiver<Arc<Frame>>,
    first: Arc<Frame>,
    filter: Option<&BTreeSet<u32>>,
    own_seq: &mut Option<u64>,
    limits: ClientLimits,
) -> Option<Option<u64>> {
    let wanted = |f: &Frame| match (f.board, filter) {
        (Some(b), Some(set)) => set.contains(&b),
        _ => true,
    };
    // The frame's text for this client: shared, or renumbered for a subscription's own
    // sequence.
    let mut text = |f: &Frame| match own_seq {
        Some(n) => {
            *n += 1;
            f.renumbered(*n)
        }
        None => f.json.clone(),
    };
    let write = async {
        let mut lagged = None;
        let mut queued = 0usize;
        if wanted(&first) {
            ws.feed(Message::Text(text(&first))).await?;
            queued += 1;
        }
        for _ in 1..MAX_BATCH {
            match rx.try_recv() {
                Ok(frame) => {
                    if wanted(&frame) {
                        ws.feed(Message::Text(text(&frame))).await?;
                        queued += 1;
                    }
                }
                Err(broadcast::error::TryRecvError::Lagged(missed)) => {
                    lagged = Some(missed);
                    break;
                }
                // Empty, or Closed (the next `recv` reports it).
                Err(_) => break,
            }
        }
        if queued > 0 {
            ws.flush().await?;
        }
        Ok::<_, axum::Error>(lagged)
    };
    match tokio::time::timeout(limits.send_timeout, write).await {
        Ok(Ok(lagged)) => Some(lagged),
        _ => None,
    }
}

async fn send(ws: &mut WebSocket, msg: Message, limits: ClientLimits) -> bool {
    matches!(tokio::time::timeout(limits.send_timeout, ws.send(msg)).await, Ok(Ok(())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_messages_parse_strictly() {
        let ok: ClientMessage = serde_json::from_str(r#"{"type":"subscribe","boards":[1,2]}"#).unwrap();
        assert!(matches!(ok, ClientMessage::Subscribe { boards: BoardSelection::Some(v) } if v == [1, 2]));
        let all: ClientMessage = serde_json::from_str(r#"{"type":"subscribe","boards":"all"}"#).unwrap();
        assert!(matches!(all, ClientMessage::Subscribe { boards: BoardSelection::All(_) }));
        let none: ClientMessage = serde_json::from_str(r#"{"type":"subscribe"}"#).unwrap();
        assert!(matches!(none, ClientMessage::Subscribe { boards: BoardSelection::Unset }));
        for bad in [
            r#"{"type":"subscribe","boards":"some"}"#,
            r#"{"type":"nope"}"#,
            "[]",
            r#"{"type":"ping","x":1}"#,
        ] {
            assert!(serde_json::from_str::<ClientMessage>(bad).is_err(), "{bad}");
        }
    }

    fn text(a: &ClientAction) -> serde_json::Value {
        match a {
            ClientAction::Reply(Message::Text(t)) | ClientAction::Close(Message::Text(t), _) => {
                serde_json::from_str(t.as_str()).unwrap()
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn snapshot_requests_are_rate_limited_per_connection_and_a_flood_is_disconnected() {
        let limits = ClientLimits::default();
        let t0 = Instant::now();
        let mut c = ClientSession::new(limits, t0);
        // The burst, then one a second.
        for i in 0..limits.snapshot_burst {
            let a = c.on_message(ClientInput::Text(r#"{"type":"resync"}"#), t0);
            assert!(matches!(a, ClientAction::Snapshot { resync: true }), "{i}: {a:?}");
        }
        let a = c.on_message(ClientInput::Text(r#"{"type":"subscribe","boards":[2]}"#), t0);
        assert_eq!(text(&a)["code"], "rate_limited");
        assert_eq!(c.filter(), None, "a refused subscription changes nothing");
        let t1 = t0 + Duration::from_millis(1_000);
        assert!(matches!(
            c.on_message(ClientInput::Text(r#"{"type":"subscribe","boards":[2]}"#), t1),
            ClientAction::Snapshot { resync: false }
        ));
        assert_eq!(c.filter().map(|f| f.iter().copied().collect::<Vec<_>>()), Some(vec![2]));
        // Pings are cheap: they pass while snapshots are refused.
        let a = c.on_message(ClientInput::Text(r#"{"type":"resync"}"#), t1);
        assert_eq!(text(&a)["code"], "rate_limited");
        let a = c.on_message(ClientInput::Text(r#"{"type":"ping"}"#), t1);
        assert_eq!(text(&a)["type"], "pong");
        // Going on over the limit: disconnected after max_limited refusals in the window.
        let mut end = None;
        for i in 0..100 {
            if let ClientAction::Close(_, e) = c.on_message(ClientInput::Text(r#"{"type":"resync"}"#), t1) {
                end = Some((i, e));
                break;
            }
        }
        // Two refusals came before the loop.
        assert_eq!(end, Some((limits.max_limited - 2, ClientEnd::RateLimited)));
    }

    #[test]
    fn any_message_flood_is_limited_and_the_rate_recovers() {
        let limits = ClientLimits::default();
        let t0 = Instant::now();
        let mut c = ClientSession::new(limits, t0);
        let ping = ClientInput::Text(r#"{"type":"ping"}"#);
        let pongs = (0..40).filter(|_| text(&c.on_message(ping, t0))["type"] == "pong").count();
        assert_eq!(pongs, limits.message_burst as usize);
        // A second later, ten more; the refusals were forgotten after the window.
        let later = t0 + Duration::from_secs(61);
        let mut c2 = ClientSession::new(limits, t0);
        for _ in 0..limits.message_burst {
            c2.on_message(ping, t0);
        }
        let pongs = (0..40).filter(|_| text(&c2.on_message(ping, later))["type"] == "pong").count();
        assert_eq!(pongs, limits.message_burst as usize, "a full bucket after a quiet minute");
        // 10 a second sustained.
        let mut c3 = ClientSession::new(limits, t0);
        let mut ok = 0;
        for ms in 0..10_000u64 {
            if ms % 20 == 0 && text(&c3.on_message(ping, t0 + Duration::from_millis(ms)))["type"] == "pong" {
                ok += 1;
            }
        }
        assert!((100..=131).contains(&ok), "{ok}");
    }

    #[test]
    fn malformed_messages_get_errors_then_a_disconnect() {
        let limits = ClientLimits { message_burst: 1000, ..ClientLimits::default() };
        let t0 = Instant::now();
        let mut c = ClientSession::new(limits, t0);
        for i in 0..limits.max_errors {
            let input = if i % 2 == 0 { ClientInput::Binary } else { ClientInput::Text("{") };
            assert_eq!(text(&c.on_message(input, t0))["code"], "bad_message");
        }
        let many: Vec<u32> = (0..=crate::tournament::MAX_BOARDS as u32).collect();
        let msg = serde_json::json!({"type":"subscribe","boards": many}).to_string();
        assert!(matches!(
            c.on_message(ClientInput::Text(&msg), t0),
            ClientAction::Close(_, ClientEnd::TooManyErrors)
        ));
    }
}
