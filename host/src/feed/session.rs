//! One client's requests, independent of its socket: what it may ask (subscriptions,
//! resyncs, pings), under which limits, and what it is answered. The client's task
//! (`client.rs`) runs it on a websocket; the fuzz targets run it on arbitrary input.

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

use serde::Deserialize;
use tokio::time::Instant;

use super::FEED_VERSION;
use super::alerts::AlertEntry;
use super::views::{BoardView, Snapshot};

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
    /// Longest time a client's socket may take nothing of what waits for it before the
    /// client is dropped.
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
    /// Feed connections one client address may hold open (see `quota.rs`).
    pub per_address: usize,
    /// Snapshots (each connection's first, `subscribe`, `resync`) one client address's
    /// connections may take together in a burst...
    pub address_snapshot_burst: u32,
    /// ...and then one every this long.
    pub address_snapshot_every: Duration,
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
            per_address: 64,
            address_snapshot_burst: 20,
            address_snapshot_every: Duration::from_millis(100),
        }
    }
}

impl ClientLimits {
    /// The default limits with `per_address` connections per client address, and the
    /// address's snapshots scaled with it: a burst of a quarter of them (at least 20), and
    /// 10 a second for every 64 connections.
    pub fn for_address(per_address: usize) -> ClientLimits {
        let per_address = per_address.max(1);
        let scale = u32::try_from(per_address.div_ceil(64)).unwrap_or(u32::MAX);
        ClientLimits {
            per_address,
            address_snapshot_burst: u32::try_from(per_address / 4).unwrap_or(u32::MAX).max(20),
            address_snapshot_every: Duration::from_millis(100) / scale,
            ..ClientLimits::default()
        }
    }
}

/// A token bucket: `burst` tokens, one more every `every`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Bucket {
    /// Tokens in thousandths.
    milli: u64,
    burst: u64,
    every: Duration,
    at: Instant,
}

impl Bucket {
    pub(super) fn new(burst: u32, every: Duration, now: Instant) -> Bucket {
        let burst = u64::from(burst.max(1)) * 1000;
        Bucket { milli: burst, burst, every, at: now }
    }

    /// Takes a token if there is one.
    pub(super) fn take(&mut self, now: Instant) -> bool {
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
    /// Send this frame's JSON (a pong, an error).
    Reply(String),
    /// Subscribe again and send a snapshot of the boards in
    /// [`ClientSession::filter`]; `resync` is its flag.
    Snapshot {
        /// Asked for by `resync` (true) or `subscribe` (false).
        resync: bool,
    },
    /// Send this frame's JSON, then close the connection.
    Close(String, ClientEnd),
}

/// What one client asked for and how much, independent of its socket: the board filter,
/// malformed messages and the rate limits. The client's task runs it on a websocket; the
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

    /// A snapshot the client asked for at `now` that its address's budget refuses (see
    /// `quota.rs`): counted as its own refusals are.
    pub fn address_limited(&mut self, now: Instant) -> ClientAction {
        self.rate_limited("too many subscribe/resync requests from this address; ask more slowly", now)
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
                return ClientAction::Reply(format!(r#"{{"v":{FEED_VERSION},"type":"pong"}}"#));
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

pub(super) fn error_frame(code: &str, message: &str) -> String {
    serde_json::json!({"v": FEED_VERSION, "type": "error", "code": code, "message": message}).to_string()
}

/// The snapshot frame a client gets: the boards of `filter` (all when `None`).
pub fn snapshot_frame(
    snap: &Snapshot,
    filter: Option<&BTreeSet<u32>>,
    resync: bool,
    alerts: &[AlertEntry],
    time_ms: u64,
) -> String {
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
    v.to_string()
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
            ClientAction::Reply(t) | ClientAction::Close(t, _) => serde_json::from_str(t).unwrap(),
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
