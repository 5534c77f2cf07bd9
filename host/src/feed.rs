//! The live feed: shared board state, sequence numbers, and fan-out to websocket clients.
//!
//! # Why a broadcast ring
//! Every change becomes one [`Delta`], numbered, applied to the shared [`BoardView`]s and
//! serialised to JSON exactly once, then put in a `tokio::sync::broadcast` ring. Sending
//! into the ring never waits for a receiver, so a slow client cannot delay a board or
//! another client. A client that falls further behind than the ring holds gets
//! `Lagged`: it is resynchronised with a fresh snapshot, and dropped if that keeps
//! happening. A client whose socket does not accept a frame within a time limit is
//! dropped too. Queues are therefore bounded by the ring size, per relay, not per client.
//!
//! # Why clock readings are mostly not deltas
//! A running clock is read once a second, but a client can count it down itself from the
//! last value it got. [`Hub::clock`] keeps every reading in the state (snapshots and
//! `/api/boards` are current) and sends a delta only when the clocks change state (a press,
//! a stop, a time set). With 100 running clocks this removes 100 frames a second per
//! subscriber, most of the feed's traffic in a real round.
//!
//! # What spectators see
//! The feed, `/api/boards` and `/health` need no token, so they carry no filesystem or
//! device path: a board's `port` is left out, and alert messages have the data folder,
//! the boards' ports and other absolute paths replaced ([`Private`]). The hub keeps the
//! whole state for the operator's views (`/api/admin/boards`).
//!
//! # Why the lock covers numbering and sending
//! [`Hub::publish`] assigns the sequence number, updates the state and sends under one
//! mutex, and [`Hub::subscribe`] copies the state and creates its receiver under the same
//! mutex. So a snapshot with sequence `n` is followed on the receiver by exactly the deltas
//! `n+1, n+2, ...`: nothing is missed and nothing is applied twice.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use futures_util::SinkExt;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use crate::config::Pairing;
use crate::shutdown::Listener;

/// The version of the JSON feed format, sent as `"v"` in every frame.
pub const FEED_VERSION: u32 = 1;
/// Deltas kept for slow receivers before they lag.
pub const RING: usize = 4096;
/// The largest client message accepted, bytes.
pub const MAX_CLIENT_MESSAGE: usize = 4096;
/// Alerts kept per board (and relay-wide) in the snapshot; see [`trim_alerts`] for which go.
pub const MAX_ALERTS: usize = 20;
/// Most frames written to one client with a single flush (one socket write).
pub const MAX_BATCH: usize = 256;
/// The websocket read buffer per client, bytes. Client messages are small (at most
/// [`MAX_CLIENT_MESSAGE`]); the library zero-fills up to this many bytes on every poll of
/// the socket for reading, which happens each time a frame is sent, so its default
/// (128 KiB) cost more than the sending itself with many clients.
pub const READ_BUFFER: usize = 1024;

/// A board's connection state, as LiveChess names them where they overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoardStatus {
    /// Known (from the configuration or a journal) but never seen since start.
    Offline,
    /// Port open, handshake in progress.
    Connecting,
    /// Handshake done; events flow.
    Active,
    /// Silence or an I/O error: the session is reopening the port.
    NotResponding,
}

/// Whether a move may still change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveState {
    /// Shown on the board, not yet certain; may be retracted. Never in PGN.
    Provisional,
    /// Certain, journaled and in the PGN.
    Confirmed,
}

/// One ply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveView {
    /// 1-based ply number.
    pub ply: u32,
    /// SAN with check suffix.
    pub san: String,
    /// UCI.
    pub uci: String,
    /// The mover's clock after the move, seconds (`%clk`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clk: Option<u32>,
    /// Time used on the move, seconds (`%emt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emt: Option<u32>,
    /// When the relay published the move, milliseconds since 1970 (UTC), stamped by the
    /// hub ([`Hub::publish`]); absent for moves recovered from a journal at start (journals
    /// keep no wall-clock time per move).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<u64>,
}

impl From<&crate::record::JournalMove> for MoveView {
    fn from(m: &crate::record::JournalMove) -> MoveView {
        MoveView { ply: m.ply, san: m.san.clone(), uci: m.uci.clone(), clk: m.clk, emt: m.emt, at: None }
    }
}

impl From<&dgt_core::MoveInfo> for MoveView {
    fn from(m: &dgt_core::MoveInfo) -> MoveView {
        MoveView {
            ply: u32::from(m.ply),
            san: m.san.to_string(),
            uci: m.uci.to_string(),
            clk: m.clk,
            emt: m.emt,
            at: None,
        }
    }
}

/// Which side's clock runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// White.
    White,
    /// Black.
    Black,
}

/// Both clocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockView {
    /// White's time, seconds.
    pub white: Option<u32>,
    /// Black's time, seconds.
    pub black: Option<u32>,
    /// Whose clock runs; null when stopped.
    pub running: Option<Side>,
}

pub use dgt_session::{AlertCode, AlertLevel};

/// An operator alert.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertView {
    /// Stable machine-readable code (`position_mismatch`, `not_responding`, `storage`,
    /// `battery_low`, `clock_paused`, ...; the list is in `API.md`).
    pub code: AlertCode,
    /// Severity.
    pub level: AlertLevel,
    /// What happened and what to do, for a person.
    pub message: String,
    /// Squares involved, if any (`e4`...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub squares: Vec<String>,
}

impl From<&dgt_session::Alert> for AlertView {
    fn from(a: &dgt_session::Alert) -> AlertView {
        AlertView {
            code: a.code,
            level: a.level,
            message: a.message.clone(),
            squares: a.squares.iter().map(ToString::to_string).collect(),
        }
    }
}

/// An alert as the hub keeps and sends it: what was raised ([`AlertView`]), with a stable
/// id, the wall-clock time it was published, and the operator's state of it: resolved by a
/// later alert ([`counterpart`]) or acknowledged ([`Hub::ack`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertEntry {
    /// Unique for the relay's data: ids grow by one from a start taken from the wall clock
    /// when the relay started, so an id is never reused across restarts.
    pub id: u64,
    /// When the relay published it, milliseconds since 1970 (UTC).
    pub at: u64,
    /// The alert.
    #[serde(flatten)]
    pub alert: AlertView,
    /// The ids of earlier alerts this one resolves (`board_back` resolves `not_responding`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clears: Vec<u64>,
    /// The id of the later alert that resolved this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleared_by: Option<u64>,
    /// When an operator acknowledged it, milliseconds since 1970.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acked_at: Option<u64>,
}

impl std::ops::Deref for AlertEntry {
    type Target = AlertView;
    fn deref(&self) -> &AlertView {
        &self.alert
    }
}

impl AlertEntry {
    /// Still wants the operator: a warning or an error, neither resolved nor acknowledged.
    pub fn open(&self) -> bool {
        self.alert.level != AlertLevel::Info && self.cleared_by.is_none() && self.acked_at.is_none()
    }
}

/// The alert code an alert resolves, if it is the counterpart of a lasting condition
/// (`board_back` resolves `not_responding`, `battery_ok` resolves `battery_low`, ...). An
/// info `storage` or `push` alert resolves the earlier `storage` or `push` warnings and
/// errors about the same board (or the relay).
pub fn counterpart(code: AlertCode, level: AlertLevel) -> Option<AlertCode> {
    Some(match code {
        AlertCode::BoardBack => AlertCode::NotResponding,
        AlertCode::PositionRecovered => AlertCode::PositionMismatch,
        AlertCode::BatteryOk => AlertCode::BatteryLow,
        AlertCode::ClockBatteryOk => AlertCode::ClockBatteryLow,
        AlertCode::ClockBack => AlertCode::ClockLost,
        AlertCode::ClockRunning => AlertCode::ClockPaused,
        AlertCode::BoardActive => AlertCode::BoardIdle,
        AlertCode::PortIdentified => AlertCode::PortUnidentified,
        AlertCode::Storage | AlertCode::Push if level == AlertLevel::Info => code,
        _ => return None,
    })
}

/// Milliseconds since 1970 now (0 if the clock is before 1970).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Keeps at most [`MAX_ALERTS`] alerts: when over, the oldest that no longer needs the
/// operator (resolved, acknowledged or informational) goes first, else the oldest.
fn trim_alerts(alerts: &mut Vec<AlertEntry>) {
    while alerts.len() > MAX_ALERTS {
        let i = alerts.iter().position(|a| !a.open()).unwrap_or(0);
        alerts.remove(i);
    }
}

/// Everything about one board and its current game.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoardView {
    /// Board number.
    pub board: u32,
    /// The e-board's serial number, once known.
    pub serial: Option<String>,
    /// The serial port it was last seen on: in the operator's views only (spectators'
    /// views leave it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// Connection state.
    pub status: BoardStatus,
    /// Round of the current game.
    pub round: u32,
    /// Players.
    pub pairing: Pairing,
    /// Start position when not the standard one.
    pub start_fen: Option<String>,
    /// Position after the confirmed moves (FEN), when known.
    pub fen: Option<String>,
    /// Position after the provisional moves too (FEN): what the board shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_fen: Option<String>,
    /// Confirmed moves.
    pub moves: Vec<MoveView>,
    /// Provisional moves after the confirmed ones.
    pub provisional: Vec<MoveView>,
    /// Clocks, when a clock is attached.
    pub clock: Option<ClockView>,
    /// The result, once the game is over (`1-0`, `0-1`, `1/2-1/2`).
    pub result: Option<String>,
    /// The PGN `Termination`, when over.
    pub termination: Option<String>,
    /// The board is used rotated (White at the connector's right).
    pub flipped: bool,
    /// The board's last reported battery charge, percent (Bluetooth boards); absent when
    /// the board never reported one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub battery: Option<u8>,
    /// The latest alerts, oldest first.
    pub alerts: Vec<AlertEntry>,
}

impl BoardView {
    /// A board with no game yet.
    pub fn new(board: u32, round: u32) -> BoardView {
        BoardView {
            board,
            serial: None,
            port: None,
            status: BoardStatus::Offline,
            round,
            pairing: Pairing::default(),
            start_fen: None,
            fen: None,
            live_fen: None,
            moves: Vec::new(),
            provisional: Vec::new(),
            clock: None,
            result: None,
            termination: None,
            flipped: false,
            battery: None,
            alerts: Vec::new(),
        }
    }
}

/// One change. Each variant is one feed frame type (`"type"` in JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Delta {
    /// A move, provisional or confirmed. A confirmed move at ply `p` replaces any move at
    /// `p` or later; a provisional one replaces provisional moves from `p` on. `fen` is the
    /// position after it.
    Move {
        /// Board number.
        board: u32,
        /// Provisional or confirmed.
        state: MoveState,
        /// The move.
        #[serde(rename = "move")]
        mv: MoveView,
        /// The position after the move (confirmed, or the board's with the provisional
        /// moves).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fen: Option<String>,
    },
    /// Moves from `from_ply` on are withdrawn (a provisional move the board no longer shows,
    /// or confirmed moves taken back).
    Retract {
        /// Board number.
        board: u32,
        /// Which list.
        state: MoveState,
        /// First withdrawn ply.
        from_ply: u32,
        /// The position after the remaining moves of that list (confirmed; or confirmed and
        /// provisional).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fen: Option<String>,
    },
    /// The clocks changed.
    Clock {
        /// Board number.
        board: u32,
        /// The clocks.
        clock: ClockView,
    },
    /// The connection state changed.
    Status {
        /// Board number.
        board: u32,
        /// New state.
        status: BoardStatus,
        /// Serial number.
        serial: Option<String>,
        /// Port (left out of the spectators' feed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        port: Option<String>,
    },
    /// An operator alert; `board` is null for relay-wide alerts. The hub gives it an id and
    /// a time, and sends it as an [`AlertEntry`].
    Alert {
        /// Board number, if about one board.
        board: Option<u32>,
        /// The alert.
        alert: AlertView,
    },
    /// An operator acknowledged an alert ([`Hub::ack`]).
    AlertAck {
        /// The alert's board (null: relay-wide).
        board: Option<u32>,
        /// The alert's id.
        id: u64,
        /// When, milliseconds since 1970.
        acked_at: u64,
    },
    /// The game ended (or the operator set or cleared a result: null clears).
    Result {
        /// Board number.
        board: u32,
        /// `1-0`, `0-1`, `1/2-1/2` or null.
        result: Option<String>,
        /// PGN `Termination`.
        termination: Option<String>,
    },
    /// The whole board was replaced: a new game, new pairing, flip, start position or a
    /// corrected move.
    Board {
        /// The new state.
        view: Box<BoardView>,
    },
}

impl Delta {
    /// The board the delta is about, if any.
    pub fn board(&self) -> Option<u32> {
        match self {
            Delta::Move { board, .. }
            | Delta::Retract { board, .. }
            | Delta::Clock { board, .. }
            | Delta::Status { board, .. }
            | Delta::Result { board, .. } => Some(*board),
            Delta::Alert { board, .. } | Delta::AlertAck { board, .. } => *board,
            Delta::Board { view } => Some(view.board),
        }
    }

    /// Applies the delta to the boards. Alerts and acknowledgements are the hub's own
    /// state ([`Hub::publish`] keeps them), so they are not applied here.
    fn apply(&self, boards: &mut BTreeMap<u32, BoardView>, round: u32) {
        if matches!(self, Delta::Alert { .. } | Delta::AlertAck { .. }) {
            return;
        }
        let Some(n) = self.board() else { return };
        let view = boards.entry(n).or_insert_with(|| BoardView::new(n, round));
        match self {
            Delta::Move { state: MoveState::Confirmed, mv, fen, .. } => {
                view.moves.retain(|m| m.ply < mv.ply);
                view.moves.push(mv.clone());
                view.provisional.retain(|m| m.ply > mv.ply);
                if fen.is_some() {
                    view.fen.clone_from(fen);
                    if view.provisional.is_empty() {
                        view.live_fen.clone_from(fen);
                    }
                }
            }
            Delta::Move { state: MoveState::Provisional, mv, fen, .. } => {
                view.provisional.retain(|m| m.ply < mv.ply);
                view.provisional.push(mv.clone());
                if fen.is_some() {
                    view.live_fen.clone_from(fen);
                }
            }
            Delta::Retract { state: MoveState::Provisional, from_ply, fen, .. } => {
                view.provisional.retain(|m| m.ply < *from_ply);
                if fen.is_some() {
                    view.live_fen.clone_from(fen);
                }
            }
            Delta::Retract { state: MoveState::Confirmed, from_ply, fen, .. } => {
                view.moves.retain(|m| m.ply < *from_ply);
                view.provisional.clear();
                if fen.is_some() {
                    view.fen.clone_from(fen);
                    view.live_fen.clone_from(fen);
                }
            }
            Delta::Clock { clock, .. } => view.clock = Some(*clock),
            Delta::Status { status, serial, port, .. } => {
                view.status = *status;
                if serial.is_some() {
                    view.serial.clone_from(serial);
                }
                if port.is_some() {
                    view.port.clone_from(port);
                }
            }
            Delta::Alert { .. } | Delta::AlertAck { .. } => {}
            Delta::Result { result, termination, .. } => {
                view.result.clone_from(result);
                view.termination.clone_from(termination);
            }
            Delta::Board { view: new } => *view = (**new).clone(),
        }
    }
}

/// An alert delta as sent: the alert with its id, time and state.
#[derive(Serialize)]
#[serde(tag = "type", rename = "alert")]
struct AlertFrame<'a> {
    board: Option<u32>,
    alert: &'a AlertEntry,
}

/// A serialised delta, shared by every receiver.
#[derive(Clone, Debug)]
pub struct Frame {
    /// Its sequence number.
    pub seq: u64,
    /// The board it is about (None: every subscriber gets it).
    pub board: Option<u32>,
    /// The JSON text: `{"v":1,"seq":N,` then the delta's fields.
    pub json: Utf8Bytes,
    /// Where the delta's fields start in `json` (after `"seq":N,`).
    rest: usize,
}

impl Frame {
    /// A frame with `seq` and `delta_json` (a JSON object, `{"type":...}`).
    fn new(seq: u64, board: Option<u32>, delta_json: &str) -> Frame {
        let head = format!(r#"{{"v":{FEED_VERSION},"seq":{seq},"#);
        let rest = head.len();
        let json = head + delta_json.strip_prefix('{').unwrap_or(delta_json);
        Frame { seq, board, json: json.into(), rest }
    }

    /// The same frame numbered `seq`: the sequence of a subscription to some boards, which
    /// counts that connection's deltas only (see `API.md`).
    pub fn renumbered(&self, seq: u64) -> Utf8Bytes {
        format!(r#"{{"v":{FEED_VERSION},"seq":{seq},{}"#, &self.json.as_str()[self.rest..]).into()
    }
}

/// A consistent copy of every board at one sequence number.
#[derive(Clone, Debug, Serialize)]
pub struct Snapshot {
    /// The sequence number of the last delta included.
    pub seq: u64,
    /// Boards by number.
    pub boards: Vec<BoardView>,
}

/// A change waiting for the broadcast delay.
#[derive(Debug)]
enum Pending {
    /// A delta for the public feed.
    Delta(Delta),
    /// A clock reading that is not a delta (see [`Hub::clock`]).
    Reading(u32, ClockView),
}

struct HubInner {
    /// The sequence number of the last frame sent (the public feed's).
    seq: u64,
    round: u32,
    /// The live boards: the operator's views.
    boards: BTreeMap<u32, BoardView>,
    /// The boards as spectators see them, the live ones `delay` ago (see [`crate::delay`]);
    /// their alerts are taken from `boards`, as alerts are not delayed.
    public: BTreeMap<u32, BoardView>,
    /// Game changes waiting for the broadcast delay, oldest first.
    pending: crate::delay::DelayLine<Pending>,
    relay_alerts: Vec<AlertEntry>,
    /// Per standing condition (see [`Hub::publish_condition`]), the id of its latest alert.
    conditions: BTreeMap<String, u64>,
    /// The next alert's id.
    next_alert: u64,
    /// Per board, the clocks as last sent in a delta and when: what a client counting down
    /// locally started from.
    sent_clocks: BTreeMap<u32, (ClockView, Instant)>,
    /// Paths spectators must not see.
    private: Private,
}

impl HubInner {
    /// The alerts of `board` (relay-wide when `None`), creating the board if it is new.
    fn alerts_mut(&mut self, board: Option<u32>) -> &mut Vec<AlertEntry> {
        match board {
            Some(n) => {
                let round = self.round;
                &mut self.boards.entry(n).or_insert_with(|| BoardView::new(n, round)).alerts
            }
            None => &mut self.relay_alerts,
        }
    }

    /// Keeps a new alert: its id and time, and the earlier alerts it resolves.
    fn add_alert(&mut self, board: Option<u32>, alert: AlertView, at: u64) -> AlertEntry {
        let id = self.next_alert;
        self.next_alert += 1;
        let list = self.alerts_mut(board);
        let mut clears = Vec::new();
        if let Some(code) = counterpart(alert.code, alert.level) {
            for a in list.iter_mut() {
                if a.alert.code == code && a.alert.level != AlertLevel::Info && a.cleared_by.is_none() {
                    a.cleared_by = Some(id);
                    clears.push(a.id);
                }
            }
        }
        let entry = AlertEntry { id, at, alert, clears, cleared_by: None, acked_at: None };
        list.push(entry.clone());
        trim_alerts(list);
        entry
    }

    /// Where alert `id` is: its board (`None`: relay-wide), if it is kept.
    fn find_alert(&self, id: u64) -> Option<(Option<u32>, &AlertEntry)> {
        if let Some(a) = self.relay_alerts.iter().find(|a| a.id == id) {
            return Some((None, a));
        }
        self.boards.values().find_map(|v| v.alerts.iter().find(|a| a.id == id).map(|a| (Some(v.board), a)))
    }

    fn set_acked(&mut self, board: Option<u32>, id: u64, at: u64) {
        if let Some(a) = self.alerts_mut(board).iter_mut().find(|a| a.id == id) {
            a.acked_at.get_or_insert(at);
        }
    }

    /// A public board as spectators see it, with the live alerts.
    fn public_view(&self, v: &BoardView) -> BoardView {
        let alerts = self.boards.get(&v.board).map_or(&v.alerts, |l| &l.alerts);
        BoardView { port: None, alerts: alerts.iter().map(|a| self.private.entry(a)).collect(), ..v.clone() }
    }

    /// Numbers `delta`, applies it to the public boards and sends it to the subscribers.
    fn send(&mut self, tx: &broadcast::Sender<Arc<Frame>>, mut delta: Delta, wall: u64) -> u64 {
        // A whole board released late keeps the public board's connection state (sent at
        // once, so newer) and the live alerts.
        if let Delta::Board { view } = &mut delta {
            if let Some(old) = self.public.get(&view.board) {
                view.status = old.status;
                view.serial.clone_from(&old.serial);
                view.port.clone_from(&old.port);
            }
            if let Some(live) = self.boards.get(&view.board) {
                view.alerts.clone_from(&live.alerts);
            }
        }
        self.seq += 1;
        let seq = self.seq;
        let round = self.round;
        delta.apply(&mut self.public, round);
        let body = match &delta {
            Delta::Alert { board, alert } => {
                if let Some(n) = board {
                    self.public.entry(*n).or_insert_with(|| BoardView::new(*n, round));
                }
                let entry = self.add_alert(*board, alert.clone(), wall);
                serde_json::to_string(&AlertFrame { board: *board, alert: &self.private.entry(&entry) })
            }
            Delta::AlertAck { board, id, acked_at } => {
                self.set_acked(*board, *id, *acked_at);
                serde_json::to_string(&delta)
            }
            _ => serde_json::to_string(&*self.private.delta(&delta)),
        };
        let body = body.unwrap_or_else(|e| format!(r#"{{"type":"error","message":"{e}"}}"#));
        // No receivers is fine.
        let _ = tx.send(Arc::new(Frame::new(seq, delta.board(), &body)));
        seq
    }

    /// Sends the changes that have waited out `delay` at `now`.
    fn release(&mut self, tx: &broadcast::Sender<Arc<Frame>>, now: Instant, delay: Duration) {
        for p in self.pending.release(now, delay) {
            match p {
                Pending::Delta(d) => {
                    self.send(tx, d, now_ms());
                }
                Pending::Reading(board, clock) => {
                    if let Some(v) = self.public.get_mut(&board) {
                        v.clock = Some(clock);
                    }
                }
            }
        }
    }
}

/// A whole new view of a board keeps what the hub knew of the old one: the alerts (the
/// hub's: ids and acknowledgements) and the times of the moves it had already.
fn carry_over(old: &BoardView, new: &mut BoardView) {
    new.alerts.clone_from(&old.alerts);
    let known = |m: &MoveView| {
        let by_index =
            usize::try_from(m.ply).ok().and_then(|p| p.checked_sub(1)).and_then(|i| old.moves.get(i));
        by_index
            .filter(|o| o.ply == m.ply)
            .into_iter()
            .chain(old.moves.iter().chain(&old.provisional))
            .find(|o| o.ply == m.ply && o.uci == m.uci)
            .and_then(|o| o.at)
    };
    for m in new.moves.iter_mut().chain(new.provisional.iter_mut()) {
        if m.at.is_none() {
            m.at = known(m);
        }
    }
}

/// Roots of absolute paths that are left out of spectators' views wherever they appear
/// (a path under another root is left out when the hub was told of it, see
/// [`Hub::hide_path`], or when it is a board's port).
const PATH_ROOTS: [&str; 15] = [
    "/dev/", "/var/", "/home/", "/tmp/", "/etc/", "/srv/", "/opt/", "/mnt/", "/media/", "/run/", "/root/",
    "/usr/", "/proc/", "/sys/", "/data/",
];

/// What spectators must not see: the data folder, the boards' device paths and other
/// absolute paths, replaced in the text of alerts; ports are left out of board views.
#[derive(Clone, Debug, Default)]
pub struct Private {
    /// Known paths and what they are replaced with, longest first.
    paths: Vec<(String, &'static str)>,
}

impl Private {
    /// Hides `path` (replaced by `with`) from now on. Paths shorter than 2 characters are
    /// ignored; a relative path is hidden where a `/` follows it (`relay-data/round-1/...`).
    pub fn add(&mut self, path: &str, with: &'static str) {
        let path = path.trim_end_matches('/');
        if path.chars().count() < 2 || self.paths.iter().any(|(p, _)| p == path) {
            return;
        }
        self.paths.push((path.to_owned(), with));
        self.paths.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
    }

    /// `text` with every hidden path replaced.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (path, with) in &self.paths {
            if path.starts_with('/') {
                out = out.replace(path.as_str(), with);
            } else {
                out = out.replace(&format!("{path}/"), &format!("{with}/"));
            }
        }
        redact_absolute_paths(&out)
    }

    /// An alert as spectators see it.
    pub fn alert(&self, a: &AlertView) -> AlertView {
        AlertView { message: self.redact(&a.message), ..a.clone() }
    }

    /// A kept alert as spectators see it.
    pub fn entry(&self, a: &AlertEntry) -> AlertEntry {
        AlertEntry { alert: self.alert(&a.alert), ..a.clone() }
    }

    /// A board as spectators see it: no port, alerts redacted.
    pub fn view(&self, v: &BoardView) -> BoardView {
        BoardView { port: None, alerts: v.alerts.iter().map(|a| self.entry(a)).collect(), ..v.clone() }
    }

    /// A delta as spectators see it.
    fn delta<'a>(&self, d: &'a Delta) -> std::borrow::Cow<'a, Delta> {
        use std::borrow::Cow;
        match d {
            Delta::Status { board, status, serial, port: Some(_) } => Cow::Owned(Delta::Status {
                board: *board,
                status: *status,
                serial: serial.clone(),
                port: None,
            }),
            Delta::Board { view } => Cow::Owned(Delta::Board { view: Box::new(self.view(view)) }),
            other => Cow::Borrowed(other),
        }
    }
}

/// Replaces absolute paths under the usual filesystem roots ([`PATH_ROOTS`]) with
/// `<path>`: from the root to the end of the word (a space, a quote, a bracket, a comma
/// or a colon followed by a space).
fn redact_absolute_paths(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        let starts_word = i == 0
            || !(bytes[i - 1].is_ascii_alphanumeric() || matches!(bytes[i - 1], b'/' | b'.' | b'_' | b'-'));
        if bytes[i] == b'/' && starts_word && PATH_ROOTS.iter().any(|r| text[i..].starts_with(r)) {
            let mut end = i;
            while end < bytes.len() {
                let c = bytes[end];
                let colon_end = c == b':' && bytes.get(end + 1).is_none_or(|n| n.is_ascii_whitespace());
                if c.is_ascii_whitespace()
                    || matches!(c, b'"' | b'\'' | b'(' | b')' | b',' | b';' | b'`')
                    || colon_end
                {
                    break;
                }
                end += 1;
            }
            out.push_str(&text[copied..i]);
            out.push_str("<path>");
            copied = end;
            i = end;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// The shared state and the fan-out ring.
pub struct Hub {
    inner: Mutex<HubInner>,
    tx: broadcast::Sender<Arc<Frame>>,
    /// The broadcast delay of the public feed and views.
    delay: crate::delay::Delay,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").finish_non_exhaustive()
    }
}

impl Hub {
    /// An empty hub; `round` is the default round for boards first seen in a delta.
    pub fn new(round: u32) -> Hub {
        Hub {
            inner: Mutex::new(HubInner {
                seq: 0,
                round,
                boards: BTreeMap::new(),
                public: BTreeMap::new(),
                pending: crate::delay::DelayLine::default(),
                relay_alerts: Vec::new(),
                conditions: BTreeMap::new(),
                next_alert: now_ms().max(1),
                sent_clocks: BTreeMap::new(),
                private: Private::default(),
            }),
            tx: broadcast::channel(RING).0,
            delay: crate::delay::Delay::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HubInner> {
        // A panic while holding the lock leaves consistent data (apply is total): go on.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Numbers, applies and sends one delta; returns its sequence number.
    pub fn publish(&self, delta: Delta) -> u64 {
        let mut inner = self.lock();
        self.publish_locked(&mut inner, delta, Instant::now())
    }

    /// Publishes a relay-wide alert about a standing condition named `topic` (the PGN
    /// files cannot be written, then they can). Snapshots keep only a condition's latest
    /// alert: once it is resolved (an info), clients that connect later are no longer
    /// greeted by the error, which is then cleared; clients connected meanwhile got both.
    pub fn publish_condition(&self, topic: &str, alert: AlertView) -> u64 {
        let mut inner = self.lock();
        if let Some(old) = inner.conditions.get(topic).copied() {
            inner.relay_alerts.retain(|a| a.id != old);
        }
        let id = inner.next_alert;
        let seq = self.publish_locked(&mut inner, Delta::Alert { board: None, alert }, Instant::now());
        inner.conditions.insert(topic.to_owned(), id);
        seq
    }

    fn publish_locked(&self, inner: &mut HubInner, mut delta: Delta, now: Instant) -> u64 {
        let wall = now_ms();
        match &delta {
            Delta::Clock { board, clock } => {
                inner.sent_clocks.insert(*board, (*clock, now));
            }
            Delta::Board { view } => match view.clock {
                Some(clock) => {
                    inner.sent_clocks.insert(view.board, (clock, now));
                }
                None => {
                    inner.sent_clocks.remove(&view.board);
                }
            },
            _ => {}
        }
        // A board's port is hidden from spectators wherever it appears.
        match &delta {
            Delta::Status { port: Some(p), .. } => inner.private.add(p, "<port>"),
            Delta::Board { view } => {
                if let Some(p) = &view.port {
                    inner.private.add(p, "<port>");
                }
            }
            _ => {}
        }
        // Wall-clock times: a move when published; a whole board keeps the times (and the
        // alerts, which are the hub's) of the moves it already had.
        match &mut delta {
            Delta::Move { mv, .. } => {
                mv.at.get_or_insert(wall);
            }
            Delta::Board { view } => {
                if let Some(old) = inner.boards.get(&view.board) {
                    carry_over(old, view);
                }
            }
            _ => {}
        }
        let round = inner.round;
        delta.apply(&mut inner.boards, round);
        let delay = self.delay.get();
        // Alerts and connection states are not the game: spectators get them at once.
        let game = !matches!(delta, Delta::Alert { .. } | Delta::AlertAck { .. } | Delta::Status { .. });
        if game && (!delay.is_zero() || !inner.pending.is_empty()) {
            inner.pending.push(now, Pending::Delta(delta));
            // With the delay back to zero, what waited goes first, then this.
            inner.release(&self.tx, now, delay);
            return inner.seq;
        }
        inner.send(&self.tx, delta, wall)
    }

    /// Takes a clock reading of `board`. The reading always updates the board's state (so
    /// snapshots and `/api/boards` show the latest times), but it becomes a `clock` delta
    /// only when a client counting the running side down from the last delta would
    /// otherwise be wrong (see [`clock_needs_delta`]): a clock started, stopped or pressed, a
    /// time changed on a stopped side, or a running time that differs from the count-down
    /// by more than the readings' 1 s resolution (a time set by the arbiter, added time).
    /// Returns the delta's sequence number if one was sent.
    pub fn clock(&self, board: u32, clock: ClockView) -> Option<u64> {
        self.clock_at(board, clock, Instant::now())
    }

    fn clock_at(&self, board: u32, clock: ClockView, now: Instant) -> Option<u64> {
        let mut inner = self.lock();
        let sent = inner.sent_clocks.get(&board).copied();
        let due = sent.is_none_or(|(last, at)| clock_needs_delta(&last, now.duration_since(at), &clock));
        if due {
            return Some(self.publish_locked(&mut inner, Delta::Clock { board, clock }, now));
        }
        if let Some(view) = inner.boards.get_mut(&board) {
            view.clock = Some(clock);
        }
        let delay = self.delay.get();
        if delay.is_zero() && inner.pending.is_empty() {
            if let Some(view) = inner.public.get_mut(&board) {
                view.clock = Some(clock);
            }
        } else {
            inner.pending.push(now, Pending::Reading(board, clock));
            inner.release(&self.tx, now, delay);
        }
        None
    }

    /// The broadcast delay of the public feed and views.
    pub fn delay(&self) -> &crate::delay::Delay {
        &self.delay
    }

    /// Sends the public changes that have waited out the delay at `now`.
    pub fn release(&self, now: Instant) {
        let mut inner = self.lock();
        let delay = self.delay.get();
        inner.release(&self.tx, now, delay);
    }

    /// When the next waiting public change is due, if one waits.
    pub fn next_due(&self) -> Option<Instant> {
        self.lock().pending.next_due(self.delay.get())
    }

    /// A snapshot (as spectators see it) and a receiver that continues exactly after it.
    pub fn subscribe(&self) -> (Snapshot, broadcast::Receiver<Arc<Frame>>) {
        let inner = self.lock();
        let rx = self.tx.subscribe();
        let boards = inner.public.values().map(|v| inner.public_view(v)).collect();
        (Snapshot { seq: inner.seq, boards }, rx)
    }

    /// A copy of every board, whole (with ports): the operator's view.
    pub fn boards(&self) -> Vec<BoardView> {
        self.lock().boards.values().cloned().collect()
    }

    /// A copy of one board, whole (with its port): the operator's view.
    pub fn board(&self, n: u32) -> Option<BoardView> {
        self.lock().boards.get(&n).cloned()
    }

    /// Every board as spectators see it (no port, no paths in alerts).
    pub fn public_boards(&self) -> Vec<BoardView> {
        let inner = self.lock();
        inner.public.values().map(|v| inner.public_view(v)).collect()
    }

    /// One board as spectators see it.
    pub fn public_board(&self, n: u32) -> Option<BoardView> {
        let inner = self.lock();
        inner.public.get(&n).map(|v| inner.public_view(v))
    }

    /// Relay-wide alerts (not about one board), oldest first, as spectators see them.
    pub fn relay_alerts(&self) -> Vec<AlertEntry> {
        let inner = self.lock();
        inner.relay_alerts.iter().map(|a| inner.private.entry(a)).collect()
    }

    /// Relay-wide alerts, whole: the operator's view.
    pub fn admin_relay_alerts(&self) -> Vec<AlertEntry> {
        self.lock().relay_alerts.clone()
    }

    /// An operator acknowledges alert `id`: it is kept as acknowledged (every operator's
    /// view shows it so) and an `alert_ack` delta is sent, once. Returns the alert with its
    /// board, or `None` when no alert with that id is kept.
    pub fn ack(&self, id: u64) -> Option<(Option<u32>, AlertEntry)> {
        let mut inner = self.lock();
        let (board, acked) = {
            let (board, a) = inner.find_alert(id)?;
            (board, a.acked_at.is_some())
        };
        if !acked {
            let delta = Delta::AlertAck { board, id, acked_at: now_ms() };
            self.publish_locked(&mut inner, delta, Instant::now());
        }
        inner.find_alert(id).map(|(b, a)| (b, a.clone()))
    }

    /// Hides a path (the data folder: its form as given and its absolute form) from
    /// spectators' views from now on; `with` replaces it (`<data folder>`).
    pub fn hide_path(&self, path: &std::path::Path, with: &'static str) {
        let mut inner = self.lock();
        inner.private.add(&path.to_string_lossy(), with);
        if let Ok(abs) = std::path::absolute(path) {
            inner.private.add(&abs.to_string_lossy(), with);
        }
        if let Ok(canonical) = path.canonicalize() {
            inner.private.add(&canonical.to_string_lossy(), with);
        }
    }

    /// The current sequence number.
    pub fn seq(&self) -> u64 {
        self.lock().seq
    }

    /// Sets the default round for boards first seen later.
    pub fn set_round(&self, round: u32) {
        self.lock().round = round;
    }

    /// The default round (see [`Hub::set_round`]).
    pub fn round(&self) -> u32 {
        self.lock().round
    }

    /// Current websocket receivers.
    pub fn receivers(&self) -> usize {
        self.tx.receiver_count()
    }
}

/// Whether a clock reading must be sent as a delta, given the clocks last sent (`last`,
/// `elapsed` ago). A client shows the running side's time as the last value sent minus the
/// whole seconds since it arrived, so a reading that only confirms that count-down is not
/// sent. Readings are whole seconds taken at arbitrary moments within a second, so a
/// count-down from one reading may be 1 s off the next one by rounding alone: only a
/// difference of 2 s or more is a real change.
pub fn clock_needs_delta(last: &ClockView, elapsed: Duration, now: &ClockView) -> bool {
    if last.running != now.running {
        return true;
    }
    let (last_run, now_run, last_stopped, now_stopped) = match now.running {
        None => return last != now,
        Some(Side::White) => (last.white, now.white, last.black, now.black),
        Some(Side::Black) => (last.black, now.black, last.white, now.white),
    };
    if last_stopped != now_stopped {
        return true;
    }
    match (last_run, now_run) {
        (Some(from), Some(reading)) => {
            let counted = (elapsed.as_millis() + 500) / 1000;
            let expected = u128::from(from).saturating_sub(counted);
            expected.abs_diff(u128::from(reading)) >= 2
        }
        (a, b) => a != b,
    }
}

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
                if list.len() > crate::config::MAX_BOARDS =>
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
) -> Message {
    let boards: Vec<&BoardView> =
        snap.boards.iter().filter(|b| filter.is_none_or(|f| f.contains(&b.board))).collect();
    let v = serde_json::json!({
        "v": FEED_VERSION,
        "type": "snapshot",
        "seq": snap.seq,
        "resync": resync,
        "time": now_ms(),
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
    let mut client = ClientSession::new(limits, Instant::now());
    let (snap, mut rx) = hub.subscribe();
    let mut resyncs: VecDeque<Instant> = VecDeque::new();
    let alerts = hub.relay_alerts();
    if !send(&mut ws, snapshot_frame(&snap, None, false, &alerts), limits).await {
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
                let now = Instant::now();
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
                if !send(&mut ws, snapshot_frame(&snap, client.filter(), true, &hub.relay_alerts()), limits).await {
                    return ClientEnd::TooSlow;
                }
            }
            incoming = ws.recv() => {
                let action = match incoming {
                    None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return ClientEnd::Closed,
                    Some(Ok(Message::Text(t))) => client.on_message(ClientInput::Text(t.as_str()), Instant::now()),
                    Some(Ok(Message::Binary(_))) => client.on_message(ClientInput::Binary, Instant::now()),
                    Some(Ok(_)) => continue, // ping/pong: answered by the library
                };
                let reply = match action {
                    ClientAction::Reply(m) => m,
                    ClientAction::Snapshot { resync } => {
                        let (snap, new_rx) = hub.subscribe();
                        rx = new_rx;
                        own_seq = client.filter().map(|_| snap.seq);
                        snapshot_frame(&snap, client.filter(), resync, &hub.relay_alerts())
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
    fn the_feed_schema_lists_every_alert_code() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../schema/feed.schema.json")).unwrap();
        let listed: Vec<&str> = schema["$defs"]["alert_code"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let codes: Vec<&str> = AlertCode::ALL.into_iter().map(AlertCode::as_str).collect();
        let mut a = listed.clone();
        let mut b = codes.clone();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b, "host/schema/feed.schema.json $defs.alert_code");
    }

    fn mv(ply: u32, san: &str) -> MoveView {
        MoveView { ply, san: san.into(), uci: String::new(), clk: None, emt: None, at: None }
    }

    #[test]
    fn snapshot_then_deltas_are_contiguous() {
        let hub = Hub::new(1);
        hub.publish(Delta::Move { board: 1, state: MoveState::Confirmed, mv: mv(1, "e4"), fen: None });
        let (snap, mut rx) = hub.subscribe();
        assert_eq!(snap.seq, 1);
        assert_eq!(snap.boards[0].moves.len(), 1);
        hub.publish(Delta::Move { board: 1, state: MoveState::Provisional, mv: mv(2, "e5"), fen: None });
        let f = rx.try_recv().unwrap();
        assert_eq!(f.seq, 2);
        let v: serde_json::Value = serde_json::from_str(f.json.as_str()).unwrap();
        assert_eq!(v["v"], 1);
        assert_eq!(v["type"], "move");
        assert_eq!(v["state"], "provisional");
        assert_eq!(v["move"]["san"], "e5");
    }

    fn alert(code: AlertCode, level: AlertLevel) -> Delta {
        Delta::Alert {
            board: Some(1),
            alert: AlertView { code, level, message: code.to_string(), squares: Vec::new() },
        }
    }

    #[test]
    fn a_board_back_resolves_its_not_responding_and_an_ack_is_kept_and_sent_once() {
        let hub = Hub::new(1);
        hub.publish(alert(AlertCode::NotResponding, AlertLevel::Error));
        hub.publish(alert(AlertCode::NotResponding, AlertLevel::Error));
        hub.publish(alert(AlertCode::BatteryLow, AlertLevel::Warning));
        let (_, mut rx) = hub.subscribe();
        hub.publish(alert(AlertCode::BoardBack, AlertLevel::Info));
        let frame: serde_json::Value = serde_json::from_str(rx.try_recv().unwrap().json.as_str()).unwrap();
        let alerts = hub.board(1).unwrap().alerts;
        let back = alerts[3].id;
        assert_eq!(frame["alert"]["id"], back);
        assert_eq!(frame["alert"]["clears"], serde_json::json!([alerts[0].id, alerts[1].id]));
        assert!(frame["alert"]["at"].as_u64().unwrap() > 0);
        // Both unplug alerts resolved, the battery still open.
        let open: Vec<AlertCode> = alerts.iter().filter(|a| a.open()).map(|a| a.code).collect();
        assert_eq!(open, [AlertCode::BatteryLow]);
        assert_eq!(
            (alerts[0].cleared_by, alerts[1].cleared_by, alerts[2].cleared_by),
            (Some(back), Some(back), None)
        );
        // Acknowledged: kept, sent as one `alert_ack`, and a second ack sends nothing.
        let battery = alerts[2].id;
        let (board, acked) = hub.ack(battery).unwrap();
        assert_eq!(board, Some(1));
        assert!(acked.acked_at.is_some() && !acked.open());
        let frame: serde_json::Value = serde_json::from_str(rx.try_recv().unwrap().json.as_str()).unwrap();
        assert_eq!((frame["type"].as_str(), frame["id"].as_u64()), (Some("alert_ack"), Some(battery)));
        assert_eq!(hub.ack(battery).unwrap().1.acked_at, acked.acked_at);
        assert!(rx.try_recv().is_err(), "no second alert_ack");
        assert!(hub.ack(12345).is_none(), "an unknown id");
        assert!(hub.board(1).unwrap().alerts.iter().all(|a| !a.open()));
    }

    #[test]
    fn a_full_alert_list_drops_what_no_longer_needs_the_operator_first() {
        let hub = Hub::new(1);
        hub.publish(alert(AlertCode::PositionMismatch, AlertLevel::Warning));
        let first = hub.board(1).unwrap().alerts[0].id;
        for _ in 0..MAX_ALERTS {
            hub.publish(alert(AlertCode::BatteryOk, AlertLevel::Info));
        }
        let alerts = hub.board(1).unwrap().alerts;
        assert_eq!(alerts.len(), MAX_ALERTS);
        assert_eq!(alerts[0].id, first, "the open mismatch is kept; an info alert went");
    }

    #[test]
    fn moves_retractions_and_takebacks_update_the_view() {
        let hub = Hub::new(2);
        let b = 7;
        hub.publish(Delta::Move { board: b, state: MoveState::Provisional, mv: mv(1, "e4"), fen: None });
        hub.publish(Delta::Move { board: b, state: MoveState::Provisional, mv: mv(2, "e5"), fen: None });
        hub.publish(Delta::Move { board: b, state: MoveState::Confirmed, mv: mv(1, "e4"), fen: None });
        let v = hub.board(b).unwrap();
        assert_eq!((v.round, v.moves.len(), v.provisional.len()), (2, 1, 1));
        hub.publish(Delta::Retract { board: b, state: MoveState::Provisional, from_ply: 2, fen: None });
        assert!(hub.board(b).unwrap().provisional.is_empty());
        hub.publish(Delta::Retract { board: b, state: MoveState::Confirmed, from_ply: 1, fen: None });
        assert!(hub.board(b).unwrap().moves.is_empty());
    }

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

    #[test]
    fn with_a_delay_spectators_get_the_game_late_in_order_and_the_operator_at_once() {
        let hub = Hub::new(1);
        hub.delay().set(3).unwrap();
        let (snap, mut rx) = hub.subscribe();
        let t0 = Instant::now();
        hub.publish(Delta::Move { board: 1, state: MoveState::Confirmed, mv: mv(1, "e4"), fen: None });
        hub.clock_at(1, clocks(300, 299, Some(Side::Black)), t0);
        hub.publish(Delta::Result { board: 1, result: Some("1-0".into()), termination: None });
        // An alert is not the game: it goes at once.
        hub.publish(alert(AlertCode::Storage, AlertLevel::Warning));
        assert_eq!(hub.board(1).unwrap().moves.len(), 1);
        assert_eq!(hub.board(1).unwrap().result.as_deref(), Some("1-0"));
        assert!(hub.public_board(1).is_none_or(|b| b.moves.is_empty() && b.result.is_none()));
        assert_eq!(rx.try_recv().unwrap().seq, snap.seq + 1);
        assert!(rx.try_recv().is_err());
        hub.release(t0 + Duration::from_millis(2900));
        assert!(rx.try_recv().is_err());
        hub.release(Instant::now() + Duration::from_secs(3));
        let types: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|f| serde_json::from_str::<serde_json::Value>(f.json.as_str()).unwrap()["type"].to_string())
            .collect();
        assert_eq!(types, [r#""move""#, r#""clock""#, r#""result""#]);
        let public = hub.public_board(1).unwrap();
        assert_eq!((public.moves.len(), public.result.as_deref()), (1, Some("1-0")));
        assert!(hub.next_due().is_none());
        // Back to no delay: straight through.
        hub.delay().set(0).unwrap();
        hub.publish(Delta::Result { board: 1, result: None, termination: None });
        assert!(hub.public_board(1).unwrap().result.is_none());
    }

    fn clocks(white: u32, black: u32, running: Option<Side>) -> ClockView {
        ClockView { white: Some(white), black: Some(black), running }
    }

    #[test]
    fn a_running_clock_that_counts_down_as_expected_needs_no_delta() {
        let w = Some(Side::White);
        let last = clocks(300, 300, w);
        let s = Duration::from_millis;
        // One reading a second, each 1 s lower: what a client counts down by itself.
        for k in 1..=120u32 {
            let now = clocks(300 - k, 300, w);
            assert!(!clock_needs_delta(&last, s(u64::from(k) * 1000 + 40), &now), "{k}");
            // Readings taken anywhere within the second: off by the 1 s resolution at most.
            assert!(!clock_needs_delta(&last, s(u64::from(k) * 1000 + 700), &now), "{k}");
            assert!(!clock_needs_delta(&last, s(u64::from(k) * 1000 - 400), &now), "{k}");
        }
        // Flag: the count-down stops at zero.
        assert!(!clock_needs_delta(&last, s(400_000), &clocks(0, 300, w)));
    }

    #[test]
    fn a_press_a_stop_or_a_set_time_needs_a_delta() {
        let s = Duration::from_millis;
        let last = clocks(300, 280, Some(Side::White));
        // Pressed: the other side runs, the mover's time (with increment) is new.
        assert!(clock_needs_delta(&last, s(5_000), &clocks(297, 280, Some(Side::Black))));
        // Stopped (pause, or the game ended).
        assert!(clock_needs_delta(&last, s(5_000), &clocks(295, 280, None)));
        // The stopped side's time changed (an arbiter's correction).
        assert!(clock_needs_delta(&last, s(5_000), &clocks(295, 340, Some(Side::White))));
        // The running time jumped (time added, or set): 2 s or more off the count-down.
        assert!(clock_needs_delta(&last, s(5_000), &clocks(293, 280, Some(Side::White))));
        assert!(clock_needs_delta(&last, s(5_000), &clocks(297, 280, Some(Side::White))));
        assert!(clock_needs_delta(&last, s(5_000), &clocks(1_200, 280, Some(Side::White))));
        // Stopped clocks: any change is news, no change is not.
        let stopped = clocks(300, 280, None);
        assert!(!clock_needs_delta(&stopped, s(60_000), &stopped));
        assert!(clock_needs_delta(&stopped, s(60_000), &clocks(300, 281, None)));
        // A time that appears or disappears.
        let none = ClockView { white: None, black: Some(280), running: Some(Side::White) };
        assert!(clock_needs_delta(&last, s(1_000), &none));
    }

    #[test]
    fn clock_readings_update_the_state_and_become_deltas_only_on_change() {
        let hub = Hub::new(1);
        let (_, mut rx) = hub.subscribe();
        let t0 = Instant::now();
        let w = Some(Side::White);
        // The first reading of a board is always sent.
        assert_eq!(hub.clock_at(3, clocks(300, 300, w), t0), Some(1));
        // Ticks: state updated, no delta, no sequence number.
        for k in 1..=10u32 {
            let at = t0 + Duration::from_millis(u64::from(k) * 1000);
            assert_eq!(hub.clock_at(3, clocks(300 - k, 300, w), at), None);
            assert_eq!(hub.board(3).and_then(|b| b.clock), Some(clocks(300 - k, 300, w)));
        }
        assert_eq!(hub.seq(), 1);
        let (snap, _) = hub.subscribe();
        assert_eq!(snap.boards[0].clock, Some(clocks(290, 300, w)));
        // The press: a delta, and the count-down restarts from it.
        let at = t0 + Duration::from_millis(10_500);
        assert_eq!(hub.clock_at(3, clocks(292, 300, Some(Side::Black)), at), Some(2));
        assert_eq!(hub.clock_at(3, clocks(292, 299, Some(Side::Black)), at + Duration::from_secs(1)), None);
        // A whole-board delta carries the clocks too: a client counts down from there.
        let mut view = BoardView::new(3, 1);
        view.clock = Some(clocks(292, 250, Some(Side::Black)));
        hub.publish(Delta::Board { view: Box::new(view) });
        let later = Instant::now() + Duration::from_secs(1);
        assert_eq!(hub.clock_at(3, clocks(292, 249, Some(Side::Black)), later), None);
        let seqs: Vec<u64> = std::iter::from_fn(|| rx.try_recv().ok()).map(|f| f.seq).collect();
        assert_eq!(seqs, [1, 2, 3]);
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
        let many: Vec<u32> = (0..=crate::config::MAX_BOARDS as u32).collect();
        let msg = serde_json::json!({"type":"subscribe","boards": many}).to_string();
        assert!(matches!(
            c.on_message(ClientInput::Text(&msg), t0),
            ClientAction::Close(_, ClientEnd::TooManyErrors)
        ));
    }

    #[test]
    fn spectators_see_no_paths_and_the_operator_does() {
        let hub = Hub::new(1);
        hub.hide_path(std::path::Path::new("/srv/relay/data"), "<data folder>");
        hub.hide_path(std::path::Path::new("relay-data"), "<data folder>");
        let (_, mut rx) = hub.subscribe();
        hub.publish(Delta::Status {
            board: 1,
            status: BoardStatus::Active,
            serial: Some("24518".into()),
            port: Some("/dev/ttyUSB0".into()),
        });
        let alert = |message: &str| AlertView {
            code: AlertCode::Storage,
            level: AlertLevel::Error,
            message: message.into(),
            squares: Vec::new(),
        };
        hub.publish(Delta::Alert {
            board: Some(1),
            alert: alert(
                "Cannot write the journal (/srv/relay/data/round-1/game-1.journal: No space left on device).",
            ),
        });
        hub.publish(Delta::Alert {
            board: None,
            alert: alert("Cannot write PGN files (relay-data/round-1/games.pgn: Permission denied); board on /dev/ttyUSB0."),
        });
        hub.publish(Delta::Alert {
            board: Some(1),
            alert: alert("Board 1 (24518) is not responding: I/O error: gone (/media/x y)."),
        });
        let mut view = BoardView::new(2, 1);
        view.port = Some("/home/op/sim/board-2".into());
        hub.publish(Delta::Board { view: Box::new(view) });
        let frames: Vec<String> =
            std::iter::from_fn(|| rx.try_recv().ok()).map(|f| f.json.to_string()).collect();
        let public = format!(
            "{}{}{}",
            frames.join("\n"),
            serde_json::to_string(&hub.public_boards()).unwrap(),
            serde_json::to_string(&hub.relay_alerts()).unwrap()
        );
        for secret in ["/dev/", "/srv/", "relay-data", "/home/", "/media/", "ttyUSB0", "\"port\""] {
            assert!(!public.contains(secret), "{secret} in {public}");
        }
        assert!(public.contains("<data folder>/round-1/game-1.journal: No space left"), "{public}");
        assert!(public.contains("I/O error: gone (<path> y)"), "{public}");
        assert!(public.contains("24518"), "serial numbers are fine");
        let (snap, _) = hub.subscribe();
        assert!(!serde_json::to_string(&snap).unwrap().contains("/home/"));
        // The operator's views keep everything.
        assert_eq!(hub.board(1).unwrap().port.as_deref(), Some("/dev/ttyUSB0"));
        assert_eq!(hub.board(2).unwrap().port.as_deref(), Some("/home/op/sim/board-2"));
        assert!(hub.admin_relay_alerts()[0].message.contains("relay-data/round-1"));
        assert!(serde_json::to_string(&hub.boards()).unwrap().contains("/srv/relay/data"));
    }

    /// Issue 15, recipe 11: a condition's info clears its error from what snapshots show;
    /// other relay-wide alerts stay, and connected clients get every alert as it comes.
    #[test]
    fn a_resolved_condition_is_cleared_from_snapshots() {
        let hub = Hub::new(1);
        let (_, mut rx) = hub.subscribe();
        let alert = |level, message: &str| AlertView {
            code: AlertCode::Storage,
            level,
            message: message.into(),
            squares: Vec::new(),
        };
        hub.publish(Delta::Alert { board: None, alert: alert(AlertLevel::Warning, "journal repaired") });
        hub.publish_condition("pgn", alert(AlertLevel::Error, "cannot write PGN"));
        let messages =
            |hub: &Hub| hub.relay_alerts().into_iter().map(|a| a.alert.message).collect::<Vec<_>>();
        assert_eq!(messages(&hub), ["journal repaired", "cannot write PGN"]);
        hub.publish_condition("pgn", alert(AlertLevel::Info, "PGN written again"));
        assert_eq!(messages(&hub), ["journal repaired", "PGN written again"]);
        assert_eq!(hub.admin_relay_alerts().len(), 2);
        let frames: Vec<String> =
            std::iter::from_fn(|| rx.try_recv().ok()).map(|f| f.json.to_string()).collect();
        assert_eq!(frames.len(), 3, "{frames:?}");
        assert!(frames[1].contains("cannot write PGN") && frames[2].contains("PGN written again"));
    }

    #[test]
    fn absolute_paths_are_found_in_words_only() {
        assert_eq!(redact_absolute_paths("open /dev/ttyUSB0: busy"), "open <path>: busy");
        assert_eq!(redact_absolute_paths("/var/lib/x:1: bad"), "<path>: bad");
        assert_eq!(redact_absolute_paths("\"/tmp/a b\""), "\"<path> b\"");
        assert_eq!(
            redact_absolute_paths("I/O error; POST /api/admin/boards/1/result"),
            "I/O error; POST /api/admin/boards/1/result"
        );
        assert_eq!(redact_absolute_paths("a/dev/x and /dev"), "a/dev/x and /dev");
        assert_eq!(redact_absolute_paths("é /home/é/x"), "é <path>");
    }

    #[test]
    fn a_lagging_receiver_is_told_it_lagged() {
        let hub = Hub::new(1);
        let (_, mut rx) = hub.subscribe();
        for i in 0..(RING as u32 + 10) {
            hub.publish(Delta::Clock {
                board: 1,
                clock: ClockView { white: Some(i), black: None, running: None },
            });
        }
        assert!(matches!(rx.try_recv(), Err(broadcast::error::TryRecvError::Lagged(_))));
    }
}
