//! The hub: the boards' shared state, the sequence numbers, the broadcast delay and the
//! fan-out ring every client reads.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::broadcast;
use tokio::time::Instant;

use super::alerts::AlertView;
use super::alerts::{self, AlertEntry, AlertFrame};
use super::clocks::clock_needs_delta;
use super::frame::{Frame, RING};
use super::privacy::Private;
use super::session::ClientLimits;
use super::views::{BoardView, ClockView, Delta, MoveView, Snapshot};
use super::writer::{Keep, Seat, Writers};
use crate::clock::Clock;
use crate::shutdown::Listener;
use tokio::net::tcp::OwnedWriteHalf;

/// A change waiting for the broadcast delay.
#[derive(Debug)]
enum Pending {
    /// A delta for the public feed.
    Delta(Delta),
    /// A clock reading that is not a delta (see [`Hub::clock`]).
    Reading(u32, ClockView),
    /// An alert as the operator's book keeps it (id, time, what it clears), about a board
    /// or (`None`) the relay.
    Alert(Option<u32>, AlertEntry),
}

struct HubInner {
    /// The sequence number of the last frame sent (the public feed's).
    seq: u64,
    round: u32,
    /// The live boards: the operator's views.
    boards: BTreeMap<u32, BoardView>,
    /// The boards as spectators see them, the live ones `delay` ago (see [`crate::delay`]),
    /// their alerts included: an alert about a board tells of its game (a result, a stopped
    /// clock), so it waits with the game.
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
    /// While changes are published together ([`Hub::publish_all`]), their frames, handed
    /// on together at the end.
    batch: Option<Vec<Arc<Frame>>>,
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
        alerts::raise(self.alerts_mut(board), id, alert, at)
    }

    /// Where alert `id` is: its board (`None`: relay-wide), if it is kept.
    fn find_alert(&self, id: u64) -> Option<(Option<u32>, &AlertEntry)> {
        if let Some(a) = self.relay_alerts.iter().find(|a| a.id == id) {
            return Some((None, a));
        }
        self.boards.values().find_map(|v| v.alerts.iter().find(|a| a.id == id).map(|a| (Some(v.board), a)))
    }

    fn set_acked(&mut self, board: Option<u32>, id: u64, at: u64) {
        alerts::acknowledge(self.alerts_mut(board), id, at);
    }

    /// Every public board as spectators see it, at the current sequence number.
    fn snapshot(&self) -> Snapshot {
        Snapshot { seq: self.seq, boards: self.public.values().map(|v| self.public_view(v)).collect() }
    }

    /// A public board as spectators see it.
    fn public_view(&self, v: &BoardView) -> BoardView {
        self.private.view(v)
    }

    /// Numbers a public change, applies it to the public boards and sends it to the
    /// subscribers. Alerts and acknowledgements are already in the operator's book.
    fn send(&mut self, out: &Outlets, item: Pending) -> u64 {
        let round = self.round;
        let (board, body) = match item {
            Pending::Reading(board, clock) => {
                if let Some(v) = self.public.get_mut(&board) {
                    v.clock = Some(clock);
                }
                return self.seq;
            }
            Pending::Alert(board, entry) => {
                if let Some(n) = board {
                    let view = self.public.entry(n).or_insert_with(|| BoardView::new(n, round));
                    alerts::keep(&mut view.alerts, entry.clone());
                }
                (board, serde_json::to_string(&AlertFrame { board, alert: &self.private.entry(&entry) }))
            }
            Pending::Delta(mut delta) => {
                // A whole board released late keeps the public board's connection state
                // (sent at once, so newer) and its alerts (released on their own).
                if let Delta::Board { view } = &mut delta {
                    let old = self.public.get(&view.board);
                    view.status = old.map_or(view.status, |o| o.status);
                    view.serial = old.and_then(|o| o.serial.clone()).or(view.serial.take());
                    view.port = old.and_then(|o| o.port.clone()).or(view.port.take());
                    view.alerts = old.map(|o| o.alerts.clone()).unwrap_or_default();
                }
                delta.apply(&mut self.public, round);
                if let Delta::AlertAck { board: Some(n), id, acked_at } = &delta
                    && let Some(v) = self.public.get_mut(n)
                {
                    alerts::acknowledge(&mut v.alerts, *id, *acked_at);
                }
                let body = match &delta {
                    Delta::AlertAck { .. } => serde_json::to_string(&delta),
                    _ => serde_json::to_string(&*self.private.delta(&delta)),
                };
                (delta.board(), body)
            }
        };
        self.seq += 1;
        let seq = self.seq;
        let body = body.unwrap_or_else(|e| format!(r#"{{"type":"error","message":"{e}"}}"#));
        let frame = Arc::new(Frame::new(seq, board, &body));
        match &mut self.batch {
            Some(batch) => batch.push(frame),
            None => out.send(vec![frame]),
        }
        seq
    }

    /// Sends the changes that have waited out `delay` at `now`.
    fn release(&mut self, out: &Outlets, now: Instant, delay: Duration) {
        for p in self.pending.release(now, delay) {
            self.send(out, p);
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

/// Where a numbered frame goes: the ring (in-process readers: the NATS forwarder, tests)
/// and the websocket writers.
struct Outlets {
    ring: broadcast::Sender<Arc<Frame>>,
    writers: Writers,
}

impl Outlets {
    /// Hands frames on, in order: to the writers in one piece (a client gets them with one
    /// write), then to the ring.
    fn send(&self, frames: Vec<Arc<Frame>>) {
        if frames.is_empty() {
            return;
        }
        self.writers.frames(&frames);
        for f in frames {
            // No receivers is fine.
            let _ = self.ring.send(f);
        }
    }
}

/// A change to publish with others ([`Hub::publish_all`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// A delta, as [`Hub::publish`] takes it.
    Delta(Delta),
    /// A clock reading, as [`Hub::clock_reading`] takes it.
    ClockReading {
        /// Board number.
        board: u32,
        /// The clocks.
        clock: ClockView,
    },
}

/// The shared state and its fan-out.
pub struct Hub {
    inner: Mutex<HubInner>,
    out: Outlets,
    /// The broadcast delay of the public feed and views.
    delay: crate::delay::Delay,
    /// The relay's clock: when changes happen, and the times stamped on moves and alerts.
    clock: Clock,
    /// The feed's use per client address.
    quotas: super::AddressQuotas,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").finish_non_exhaustive()
    }
}

impl Hub {
    /// An empty hub on `clock`; `round` is the default round for boards first seen in a
    /// delta.
    pub fn new(round: u32, clock: Clock) -> Hub {
        Hub {
            inner: Mutex::new(HubInner {
                seq: 0,
                round,
                boards: BTreeMap::new(),
                public: BTreeMap::new(),
                pending: crate::delay::DelayLine::default(),
                relay_alerts: Vec::new(),
                conditions: BTreeMap::new(),
                next_alert: clock.wall_ms().max(1),
                sent_clocks: BTreeMap::new(),
                private: Private::default(),
                batch: None,
            }),
            out: Outlets { ring: broadcast::channel(RING).0, writers: Writers::default() },
            delay: crate::delay::Delay::default(),
            clock,
            quotas: super::AddressQuotas::default(),
        }
    }

    /// The feed's use per client address.
    pub fn quotas(&self) -> &super::AddressQuotas {
        &self.quotas
    }

    /// The relay's clock, as the hub reads it.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    fn lock(&self) -> MutexGuard<'_, HubInner> {
        // A panic while holding the lock leaves consistent data (apply is total): go on.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Numbers, applies and sends one delta; returns its sequence number.
    pub fn publish(&self, delta: Delta) -> u64 {
        let mut inner = self.lock();
        self.publish_locked(&mut inner, delta)
    }

    /// Publishes changes together, in order: one board's effects of one instant (a move and
    /// the clock pressed with it). Their frames are handed to the writers in one piece, so
    /// each client gets them with one write.
    pub fn publish_all(&self, changes: impl IntoIterator<Item = Change>) {
        let mut inner = self.lock();
        inner.batch = Some(Vec::new());
        for c in changes {
            match c {
                Change::Delta(d) => {
                    self.publish_locked(&mut inner, d);
                }
                Change::ClockReading { board, clock } => {
                    self.clock_locked(&mut inner, board, clock);
                }
            }
        }
        let frames = inner.batch.take().unwrap_or_default();
        self.out.send(frames);
    }

    /// Publishes a relay-wide alert about a standing condition named `topic` (the PGN
    /// files cannot be written, then they can). Snapshots keep only a condition's latest
    /// alert: once it is resolved (an info), clients that connect later are no longer
    /// greeted by the error, which is then cleared; clients connected meanwhile got both.
    pub fn publish_condition(&self, topic: &str, alert: AlertView) -> u64 {
        let mut inner = self.lock();
        let old = inner.conditions.get(topic).copied();
        let id = inner.next_alert;
        inner.next_alert += 1;
        let entry = alerts::supersede(&mut inner.relay_alerts, old, id, alert, self.clock.wall_ms());
        inner.conditions.insert(topic.to_owned(), id);
        inner.send(&self.out, Pending::Alert(None, entry))
    }

    fn publish_locked(&self, inner: &mut HubInner, mut delta: Delta) -> u64 {
        let (now, wall) = (self.clock.now(), self.clock.wall_ms());
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
        // Alerts and acknowledgements go into the operator's book at once.
        let item = match delta {
            Delta::Alert { board, alert } => Pending::Alert(board, inner.add_alert(board, alert, wall)),
            Delta::AlertAck { board, id, acked_at } => {
                inner.set_acked(board, id, acked_at);
                Pending::Delta(Delta::AlertAck { board, id, acked_at })
            }
            other => Pending::Delta(other),
        };
        // Spectators get a board's game, clocks and alerts (which tell of its game: a
        // result, a stopped clock) with the delay; its connection state and the
        // relay-wide alerts at once.
        let at_once = match &item {
            Pending::Delta(Delta::Status { .. }) => true,
            Pending::Alert(board, _) | Pending::Delta(Delta::AlertAck { board, .. }) => board.is_none(),
            _ => false,
        };
        let delay = self.delay.get();
        if !at_once && (!delay.is_zero() || !inner.pending.is_empty()) {
            inner.pending.push(now, item);
            // With the delay back to zero, what waited goes first, then this.
            inner.release(&self.out, now, delay);
            return inner.seq;
        }
        inner.send(&self.out, item)
    }

    /// Takes a clock reading of `board`. The reading always updates the board's state (so
    /// snapshots and `/api/boards` show the latest times), but it becomes a `clock` delta
    /// only when a client counting the running side down from the last delta would
    /// otherwise be wrong (see [`clock_needs_delta`]): a clock started, stopped or pressed, a
    /// time changed on a stopped side, or a running time that differs from the count-down
    /// by more than the readings' 1 s resolution (a time set by the arbiter, added time).
    /// Returns the delta's sequence number if one was sent.
    pub fn clock_reading(&self, board: u32, clock: ClockView) -> Option<u64> {
        let mut inner = self.lock();
        self.clock_locked(&mut inner, board, clock)
    }

    fn clock_locked(&self, inner: &mut HubInner, board: u32, clock: ClockView) -> Option<u64> {
        let now = self.clock.now();
        let sent = inner.sent_clocks.get(&board).copied();
        let due = sent.is_none_or(|(last, at)| clock_needs_delta(&last, now.duration_since(at), &clock));
        if due {
            return Some(self.publish_locked(inner, Delta::Clock { board, clock }));
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
            inner.release(&self.out, now, delay);
        }
        None
    }

    /// The broadcast delay of the public feed and views.
    pub fn delay(&self) -> &crate::delay::Delay {
        &self.delay
    }

    /// Sends the public changes that have waited out the delay by now.
    pub fn release(&self) {
        let now = self.clock.now();
        let mut inner = self.lock();
        let delay = self.delay.get();
        inner.release(&self.out, now, delay);
    }

    /// When the next waiting public change is due, if one waits.
    pub fn next_due(&self) -> Option<Instant> {
        self.lock().pending.next_due(self.delay.get())
    }

    /// A snapshot (as spectators see it) and a receiver that continues exactly after it.
    pub fn subscribe(&self) -> (Snapshot, broadcast::Receiver<Arc<Frame>>) {
        let inner = self.lock();
        let rx = self.out.ring.subscribe();
        (inner.snapshot(), rx)
    }

    /// Seats a websocket client at a writer (see [`super::writer`]): a snapshot as
    /// spectators see it, and the client's place, held until that snapshot is given.
    pub(super) fn join(
        &self,
        socket: OwnedWriteHalf,
        keep: Keep,
        stop: &Listener,
        limits: ClientLimits,
    ) -> (Snapshot, Seat) {
        let inner = self.lock();
        let seat = self.out.writers.join(socket, keep, stop, limits, &self.clock);
        (inner.snapshot(), seat)
    }

    /// A fresh snapshot for a seated client, whose writer holds it until that snapshot is
    /// given.
    pub(super) fn snapshot_for(&self, seat: &Seat) -> Snapshot {
        let inner = self.lock();
        seat.hold();
        inner.snapshot()
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
            let delta = Delta::AlertAck { board, id, acked_at: self.clock.wall_ms() };
            self.publish_locked(&mut inner, delta);
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
        self.out.ring.receiver_count() + self.out.writers.clients()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feed::{AlertCode, AlertLevel, MoveState, Side};

    fn mv(ply: u32, san: &str) -> MoveView {
        MoveView { ply, san: san.into(), uci: String::new(), clk: None, emt: None, at: None }
    }

    #[test]
    fn snapshot_then_deltas_are_contiguous() {
        let hub = Hub::new(1, Clock::manual(1_764_000_000_000));
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

    #[test]
    fn moves_retractions_and_takebacks_update_the_view() {
        let hub = Hub::new(2, Clock::manual(1_764_000_000_000));
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
    fn with_a_delay_spectators_get_the_game_late_in_order_and_the_operator_at_once() {
        let hub = Hub::new(1, Clock::manual(1_764_000_000_000));
        hub.delay().set(3).unwrap();
        let (_, mut rx) = hub.subscribe();
        let alert = |code, message: &str| AlertView {
            code,
            level: AlertLevel::Warning,
            message: message.into(),
            squares: Vec::new(),
        };
        hub.publish(Delta::Move { board: 1, state: MoveState::Confirmed, mv: mv(1, "e4"), fen: None });
        hub.clock_reading(1, clocks(300, 299, Some(Side::Black)));
        // An alert about the board tells of its game: it waits with it.
        hub.publish(Delta::Alert { board: Some(1), alert: alert(AlertCode::ResultFromBoard, "1-0") });
        hub.publish(Delta::Result { board: 1, result: Some("1-0".into()), termination: None });
        let id = hub.board(1).unwrap().alerts[0].id;
        hub.ack(id).unwrap();
        // A relay-wide alert is not a game's: it goes at once.
        hub.publish(Delta::Alert { board: None, alert: alert(AlertCode::Storage, "disk") });
        let live = hub.board(1).unwrap();
        assert_eq!((live.moves.len(), live.result.as_deref()), (1, Some("1-0")));
        assert!(live.alerts[0].acked_at.is_some(), "the operator's book has it at once");
        assert!(
            hub.public_board(1)
                .is_none_or(|b| b.moves.is_empty() && b.result.is_none() && b.alerts.is_empty())
        );
        assert!(!serde_json::to_string(&hub.public_boards()).unwrap().contains("1-0"));
        let relay_wide: serde_json::Value =
            serde_json::from_str(rx.try_recv().unwrap().json.as_str()).unwrap();
        assert_eq!((relay_wide["type"].as_str(), relay_wide["board"].is_null()), (Some("alert"), true));
        assert_eq!(relay_wide["alert"]["message"], "disk");
        assert!(rx.try_recv().is_err());
        let (late, _) = hub.subscribe();
        assert!(!serde_json::to_string(&late).unwrap().contains("1-0"), "nor in a snapshot");
        hub.clock().advance(Duration::from_millis(2900));
        hub.release();
        assert!(rx.try_recv().is_err());
        assert_eq!(hub.next_due(), Some(hub.clock().now() + Duration::from_millis(100)));
        hub.clock().advance(Duration::from_millis(100));
        hub.release();
        let types: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|f| serde_json::from_str::<serde_json::Value>(f.json.as_str()).unwrap()["type"].to_string())
            .collect();
        assert_eq!(types, [r#""move""#, r#""clock""#, r#""alert""#, r#""result""#, r#""alert_ack""#]);
        let public = hub.public_board(1).unwrap();
        assert_eq!((public.moves.len(), public.result.as_deref()), (1, Some("1-0")));
        assert_eq!(public.alerts.len(), 1);
        assert_eq!((public.alerts[0].id, public.alerts[0].acked_at.is_some()), (id, true));
        assert!(hub.next_due().is_none());
        // Back to no delay: straight through.
        hub.delay().set(0).unwrap();
        hub.publish(Delta::Result { board: 1, result: None, termination: None });
        assert!(hub.public_board(1).unwrap().result.is_none());
        hub.publish(Delta::Alert { board: Some(1), alert: alert(AlertCode::ClockPaused, "paused") });
        assert_eq!(hub.public_board(1).unwrap().alerts.len(), 2);
    }

    fn clocks(white: u32, black: u32, running: Option<Side>) -> ClockView {
        ClockView { white: Some(white), black: Some(black), running }
    }

    #[test]
    fn clock_readings_update_the_state_and_become_deltas_only_on_change() {
        let hub = Hub::new(1, Clock::manual(1_764_000_000_000));
        let (_, mut rx) = hub.subscribe();
        let w = Some(Side::White);
        let second = Duration::from_secs(1);
        // The first reading of a board is always sent.
        assert_eq!(hub.clock_reading(3, clocks(300, 300, w)), Some(1));
        // Ticks: state updated, no delta, no sequence number.
        for k in 1..=10u32 {
            hub.clock().advance(second);
            assert_eq!(hub.clock_reading(3, clocks(300 - k, 300, w)), None);
            assert_eq!(hub.board(3).and_then(|b| b.clock), Some(clocks(300 - k, 300, w)));
        }
        assert_eq!(hub.seq(), 1);
        let (snap, _) = hub.subscribe();
        assert_eq!(snap.boards[0].clock, Some(clocks(290, 300, w)));
        // The press: a delta, and the count-down restarts from it.
        hub.clock().advance(Duration::from_millis(500));
        assert_eq!(hub.clock_reading(3, clocks(292, 300, Some(Side::Black))), Some(2));
        hub.clock().advance(second);
        assert_eq!(hub.clock_reading(3, clocks(292, 299, Some(Side::Black))), None);
        // A whole-board delta carries the clocks too: a client counts down from there.
        let mut view = BoardView::new(3, 1);
        view.clock = Some(clocks(292, 250, Some(Side::Black)));
        hub.publish(Delta::Board { view: Box::new(view) });
        hub.clock().advance(second);
        assert_eq!(hub.clock_reading(3, clocks(292, 249, Some(Side::Black))), None);
        let seqs: Vec<u64> = std::iter::from_fn(|| rx.try_recv().ok()).map(|f| f.seq).collect();
        assert_eq!(seqs, [1, 2, 3]);
    }

    #[test]
    fn a_lagging_receiver_is_told_it_lagged() {
        let hub = Hub::new(1, Clock::manual(1_764_000_000_000));
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
