//! One board: the `dgt-core` tracker, its current game, and the one place where tracker
//! events become host events (journal records, feed deltas, PGN).
//!
//! # Why an actor per board number, not per port
//! Boards are identified by serial number. A board unplugged from one USB socket and
//! plugged into another comes back on a new port task, which looks the serial number up
//! and attaches to the same [`BoardActor`]: the tracker, the game and the journal survive.
//! The actor only listens to the port it is attached to; a stale port's "lost" report is
//! ignored.
//!
//! # Why the journal comes first
//! A confirmed move is appended to the game's journal and fsynced, and only then published
//! to the feed and the PGN. If the append fails (disk full), the move is kept in a pending
//! queue, the operator is alerted, and the append is retried every second and before any
//! later record, so records reach the disk in order and none is silently lost.
//!
//! # Resuming
//! After a restart (or a correction, a flip or a cleared result), a new tracker is given
//! the journaled game with its history ([`dgt_core::Tracker::resume`]): ply numbers go on,
//! and a takeback may reach moves made before the restart. The journal, not the tracker,
//! stays the game's record: the PGN is written from it (with the core's PGN writer).
//!
//! # Moves made while the board was away
//! When the port is lost, the actor keeps the board as the tracker last saw it; when it is
//! back, [`crate::reconcile`] decides from the first reading whether the board's event log
//! must be read and replayed before the tracker sees anything new.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use dgt_core::{
    ClockState, EndReason, Event, GameResult, GameState, MoveInfo, ResumePly, StartKind, Tracker, View,
};
use dgt_protocol::{ClockTimes, EeEvent, Message, Orientation};
use shakmaty::{
    CastlingMode, Chess, Color, EnPassantMode, FromSetup, Position, fen::Fen, san::SanPlus, uci::UciMove,
};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::config::{EventInfo, Pairing};
use crate::feed::{
    AlertLevel, AlertView, BoardStatus, BoardView, ClockView, Delta, Hub, MoveState, MoveView, Side,
};
use crate::reconcile::{self, AfterLoss, Intake, LogNeed, Reconcile};
use crate::serial::{SerialEvent, SessionCommand};
use crate::shutdown::Listener;
use crate::store::{GameHeader, GameRecord, Journal, Record, Store};

/// Plies one game can hold (the tracker's capacity).
pub const PLIES: usize = 600;
/// How often a running clock rewrites the PGN's `Clock` tag.
const PGN_CLOCK_REFRESH: Duration = Duration::from_secs(5);
/// How long the clock of a live game may stay stopped before the operator is alerted.
pub const CLOCK_PAUSE_ALERT: Duration = Duration::from_secs(3);
/// Below this battery charge (percent, not charging) the operator is alerted.
pub const BATTERY_LOW_BELOW: u8 = 20;
/// Above this charge (or when charging) a battery alert is cleared; the gap to
/// [`BATTERY_LOW_BELOW`] keeps a charge that wobbles around the limit from repeating alerts.
pub const BATTERY_OK_ABOVE: u8 = 25;
/// The standard start position.
pub const START_FEN: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// Event-wide data and pairings, shared by every board and the admin API.
#[derive(Clone, Debug, Default)]
pub struct Tournament {
    /// Event, site, round, time control.
    pub event: EventInfo,
    /// Pairings by board number.
    pub pairings: BTreeMap<u32, Pairing>,
}

/// A shared, lockable [`Tournament`].
#[derive(Clone, Debug, Default)]
pub struct SharedTournament(Arc<Mutex<Tournament>>);

impl SharedTournament {
    /// Wraps a tournament.
    pub fn new(t: Tournament) -> Self {
        SharedTournament(Arc::new(Mutex::new(t)))
    }

    /// Locks it.
    pub fn lock(&self) -> MutexGuard<'_, Tournament> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What an operator asks of one board.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdminCommand {
    /// New players for the current game (or, if it has moves and `round` differs, for the
    /// next game).
    Pairing {
        /// The round the pairing is for.
        round: u32,
        /// Players.
        pairing: Pairing,
    },
    /// Sets (or with `None` clears) the result.
    Result(Option<String>),
    /// The board is rotated (or not): tracking restarts from the current position.
    Flip,
    /// A new game from this position (standard start when `None`).
    NewGame(Option<String>),
    /// Replaces confirmed moves from `from_ply` on with `moves` (UCI).
    Correct {
        /// First ply replaced.
        from_ply: u32,
        /// The right moves, UCI.
        moves: Vec<String>,
    },
}

/// What a board actor receives.
#[derive(Debug)]
pub enum BoardInput {
    /// A port identified this board: listen to it from now on.
    Attach {
        /// The port task's id.
        port_id: u64,
        /// The port path, for display.
        path: String,
        /// Where to send dump requests and clock commands.
        commands: mpsc::Sender<SessionCommand>,
    },
    /// Something from a port.
    Serial {
        /// The port task's id.
        port_id: u64,
        /// The event.
        event: SerialEvent,
    },
    /// An operator command, answered with `Ok` or a message for the operator.
    Admin(AdminCommand, oneshot::Sender<Result<(), String>>),
}

struct LiveGame {
    rec: GameRecord,
    journal: Option<Journal>,
    /// Position after the last confirmed move.
    fen: String,
}

/// Shared services every actor uses.
#[derive(Clone, Debug)]
pub struct Services {
    /// The feed.
    pub hub: Arc<Hub>,
    /// The data folder.
    pub store: Arc<Store>,
    /// Event and pairings.
    pub tournament: SharedTournament,
}

/// One board.
pub struct BoardActor {
    number: u32,
    serial: Option<String>,
    port: Option<(u64, String, mpsc::Sender<SessionCommand>)>,
    status: BoardStatus,
    tracker: Box<Tracker<PLIES>>,
    tracker_config: dgt_core::Config,
    game: Option<LiveGame>,
    /// The tracker's next GameStarted is the operator's new game, whose record exists.
    resuming: bool,
    /// The next game starts from this operator position.
    next_start_fen: Option<String>,
    flipped: bool,
    pending: VecDeque<(Record, Option<Delta>)>,
    storage_failing: bool,
    last_clock: Option<ClockView>,
    /// A clock change to hand to the feed once the current batch of events is handled, so
    /// that a press's confirmed move goes out before its clock change.
    clock_to_send: Option<ClockView>,
    svc: Services,
    epoch: Instant,
    noise: u64,
    /// Tracker events produced outside the async loop (restarts), handled next.
    queued: Vec<Event>,
    /// When the PGN was last rewritten for a clock change.
    last_pgn_clock: Option<Instant>,
    /// Battery, clock presence and clock pause: what the operator was told.
    health: Health,
    /// A board whose port was lost, until it is reconciled (see the module docs).
    away: Option<Reconcile>,
    /// Added to the real time the tracker sees, once a replay moved its time forward.
    time_shift_ms: u64,
}

/// What the board's alerts about its battery and clock are based on. Each alert is raised
/// once per change and cleared by its counterpart, never repeated while nothing changes.
#[derive(Debug)]
struct Health {
    /// The board's last battery charge, percent.
    battery: Option<u8>,
    /// `battery_low` was raised and not cleared.
    battery_low: bool,
    /// A clock reading (or a clock version answer) arrived since start.
    clock_seen: bool,
    /// `clock_lost` was raised and not cleared.
    clock_lost: bool,
    /// `clock_battery_low` was raised and not cleared.
    clock_battery_low: bool,
    /// The last clock state from the tracker showed the clock running (D0).
    clock_running: bool,
    /// The clock was started (or a move confirmed) in the current game: a later stop is a
    /// pause, not a clock still being set up.
    clock_started: bool,
    /// The clock of the live game stopped at this time, and was not restarted since.
    clock_stopped_at: Option<Instant>,
    /// `clock_paused` was raised and not cleared.
    clock_paused: bool,
    /// How long a stop lasts before `clock_paused`.
    pause_after: Duration,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            battery: None,
            battery_low: false,
            clock_seen: false,
            clock_lost: false,
            clock_battery_low: false,
            clock_running: false,
            clock_started: false,
            clock_stopped_at: None,
            clock_paused: false,
            pause_after: CLOCK_PAUSE_ALERT,
        }
    }
}

fn now_utc() -> (String, String) {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let tod = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (format!("{y:04}.{m:02}.{d:02}"), format!("{:02}:{:02}:{:02}", tod / 3600, (tod / 60) % 60, tod % 60))
}

fn side(c: Color) -> Side {
    match c {
        Color::White => Side::White,
        Color::Black => Side::Black,
    }
}

fn clock_view(c: &ClockState) -> ClockView {
    ClockView { white: c.white, black: c.black, running: c.running.map(side) }
}

fn result_text(r: GameResult) -> String {
    r.as_pgn().to_owned()
}

/// Checks an operator result value.
pub fn check_result(r: &str) -> Result<GameResult, String> {
    match r {
        "1-0" => Ok(GameResult::WhiteWins),
        "0-1" => Ok(GameResult::BlackWins),
        "1/2-1/2" => Ok(GameResult::Draw),
        other => Err(format!("result {other:?} must be 1-0, 0-1 or 1/2-1/2")),
    }
}

/// A journaled game's start position and castling mode.
pub fn start_position(g: &GameRecord) -> Result<(Chess, CastlingMode), String> {
    match &g.header.start_fen {
        Some(fen) => parse_fen(fen),
        None => Ok((Chess::default(), CastlingMode::Standard)),
    }
}

/// A journaled game as the tracker resumes it: start, castling mode and confirmed plies.
fn resume_plies(g: &GameRecord) -> Result<(Chess, CastlingMode, Vec<ResumePly>), String> {
    let (start, mode) = start_position(g)?;
    let plies = g
        .moves
        .iter()
        .map(|m| {
            let uci = UciMove::from_ascii(m.view.uci.as_bytes())
                .map_err(|_| format!("ply {}: {:?} is not a UCI move", m.view.ply, m.view.uci))?;
            Ok(ResumePly { uci, clk: m.view.clk, emt: m.view.emt })
        })
        .collect::<Result<_, String>>()?;
    Ok((start, mode, plies))
}

/// Parses a FEN into a legal position and its castling mode: Chess960 when the castling
/// rights need it (the one FEN reader of the host: start positions, operator FENs,
/// corrections).
pub fn parse_fen(fen: &str) -> Result<(Chess, CastlingMode), String> {
    if fen.len() > 120 {
        return Err("FEN too long".into());
    }
    let setup = Fen::from_ascii(fen.as_bytes()).map_err(|e| format!("invalid FEN: {e}"))?.into_setup();
    let mode = CastlingMode::detect(&setup);
    let pos = Chess::from_setup(setup, mode).map_err(|e| format!("illegal position: {e}"))?;
    Ok((pos, mode))
}

fn fen_of(pos: &Chess) -> String {
    Fen::from_position(pos, EnPassantMode::Legal).to_string()
}

impl BoardActor {
    /// A board with no game, or resuming `resume` (a journaled game without a result).
    pub fn new(number: u32, serial: Option<String>, svc: Services, resume: Option<GameRecord>) -> BoardActor {
        let time_control = svc.tournament.lock().event.time_control.as_deref().and_then(|t| t.parse().ok());
        let tracker_config = dgt_core::Config { time_control, ..dgt_core::Config::default() };
        let mut actor = BoardActor {
            number,
            serial,
            port: None,
            status: BoardStatus::Offline,
            tracker: Box::new(Tracker::new(tracker_config)),
            tracker_config,
            game: None,
            resuming: false,
            next_start_fen: None,
            flipped: false,
            pending: VecDeque::new(),
            storage_failing: false,
            last_clock: None,
            clock_to_send: None,
            svc,
            epoch: Instant::now(),
            noise: 0,
            queued: Vec::new(),
            last_pgn_clock: None,
            health: Health::default(),
            away: None,
            time_shift_ms: 0,
        };
        if let Some(rec) = resume {
            actor.resume(rec);
        }
        actor
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64 + self.time_shift_ms
    }

    fn resume(&mut self, rec: GameRecord) {
        let journal = match self.svc.store.open_journal(rec.header.round, rec.header.board) {
            Ok(j) => Some(j),
            Err(e) => {
                tracing::error!(board = self.number, error = %e, "cannot reopen journal");
                None
            }
        };
        let fen = rec.moves.last().and_then(|m| m.fen.clone()).or_else(|| rec.header.start_fen.clone());
        let fen = fen.unwrap_or_else(|| START_FEN.to_owned());
        self.flipped = rec.header.flipped;
        self.game = Some(LiveGame { rec, journal, fen });
        if self.game.as_ref().is_some_and(|g| g.rec.result.is_none()) {
            // The game goes on at once and the first dump is reconciled against it (moves
            // made while the relay was down are searched).
            self.restart_tracker(self.orientation());
        }
        self.publish_board();
        self.refresh_pgn();
    }

    /// Restarts the tracker with the current game's journaled moves ([`Tracker::resume`]).
    fn restart_tracker(&mut self, orientation: Orientation) {
        let now = self.now_ms();
        let Some(g) = &self.game else { return };
        let mut events = Vec::new();
        *self.tracker = Tracker::new(self.tracker_config);
        self.resuming = false;
        let r = resume_plies(&g.rec).and_then(|(start, mode, plies)| {
            self.tracker
                .resume(start, mode, orientation, plies, now, &mut |e| events.push(e))
                .map_err(|e| e.to_string())
        });
        if let Err(e) = r {
            let (round, moves) = (g.rec.header.round, g.rec.moves.len());
            self.alert(
                AlertLevel::Error,
                "resume",
                format!(
                    "Board {}: the game of round {round} ({moves} plies) cannot be resumed from its journal: {e}. \
                     Its moves are kept; correct them or start a new game.",
                    self.number
                ),
                Vec::new(),
            );
        }
        // Events of a restart are handled on the next loop turn; ask for a fresh dump so
        // the new tracker sees the board.
        self.queued.extend(events);
        self.queued.push(Event::RequestBoardDump);
    }

    fn view(&self) -> BoardView {
        let round =
            self.game.as_ref().map_or_else(|| self.svc.tournament.lock().event.round, |g| g.rec.header.round);
        let mut v = BoardView::new(self.number, round);
        v.serial.clone_from(&self.serial);
        v.port = self.port.as_ref().map(|(_, p, _)| p.clone());
        v.status = self.status;
        v.flipped = self.flipped;
        v.clock = self.last_clock;
        v.battery = self.health.battery;
        match &self.game {
            Some(g) => {
                v.pairing = g.rec.header.pairing.clone();
                v.start_fen.clone_from(&g.rec.header.start_fen);
                v.fen = Some(g.fen.clone());
                v.moves = g.rec.moves.iter().map(|m| m.view.clone()).collect();
                v.result.clone_from(&g.rec.result);
                v.termination.clone_from(&g.rec.termination);
            }
            None => {
                v.pairing =
                    self.svc.tournament.lock().pairings.get(&self.number).cloned().unwrap_or_default();
            }
        }
        if let Some(old) = self.svc.hub.board(self.number) {
            v.alerts = old.alerts;
        }
        v
    }

    fn publish_board(&self) {
        self.svc.hub.publish(Delta::Board { view: Box::new(self.view()) });
    }

    fn refresh_pgn(&self) {
        if let Some(g) = &self.game {
            let live = if g.rec.result.is_none() { self.last_clock.as_ref() } else { None };
            let text = crate::pgn::write_game(&g.rec, live);
            self.svc.store.set_pgn(g.rec.header.round, g.rec.header.board, text);
        }
    }

    fn alert(&self, level: AlertLevel, code: &str, message: String, squares: Vec<String>) {
        match level {
            AlertLevel::Error => tracing::error!(board = self.number, code, "{message}"),
            AlertLevel::Warning => tracing::warn!(board = self.number, code, "{message}"),
            AlertLevel::Info => tracing::info!(board = self.number, code, "{message}"),
        }
        self.svc.hub.publish(Delta::Alert {
            board: Some(self.number),
            alert: AlertView { code: code.into(), level, message, squares },
        });
    }

    fn set_status(&mut self, status: BoardStatus) {
        if self.status != status {
            self.status = status;
            self.svc.hub.publish(Delta::Status {
                board: self.number,
                status,
                serial: self.serial.clone(),
                port: self.port.as_ref().map(|(_, p, _)| p.clone()),
            });
        }
    }

    /// Journals a record (after any pending ones), then publishes its delta. Returns false
    /// when the record is left pending because the disk refused it.
    async fn commit(&mut self, rec: Record, delta: Option<Delta>) -> bool {
        self.pending.push_back((rec, delta));
        self.flush_pending().await
    }

    async fn flush_pending(&mut self) -> bool {
        while let Some((rec, _)) = self.pending.front() {
            let Some(g) = &self.game else {
                self.pending.clear();
                return true;
            };
            let result = match &g.journal {
                Some(j) => j.append(rec).await,
                None => match self.svc.store.create_journal(&g.rec.header).await {
                    Ok(j) => {
                        if let Some(g) = &mut self.game {
                            g.journal = Some(j);
                        }
                        continue;
                    }
                    Err(e) => Err(e),
                },
            };
            if let Err(e) = result {
                if !self.storage_failing {
                    self.storage_failing = true;
                    self.alert(
                        AlertLevel::Error,
                        "storage",
                        format!(
                            "Cannot write the journal ({e}). {} record(s) wait in memory and are retried every \
                             second; confirmed moves are published once they are on disk. Free disk space.",
                            self.pending.len()
                        ),
                        Vec::new(),
                    );
                }
                return false;
            }
            let Some((rec, delta)) = self.pending.pop_front() else { break };
            if let Some(g) = &mut self.game {
                if let Record::Move(m) = &rec
                    && let Some(f) = &m.fen
                {
                    g.fen.clone_from(f);
                }
                if !g.rec.apply(&rec) {
                    tracing::warn!(
                        board = self.number,
                        ?rec,
                        "record does not fit the game; kept in the journal only"
                    );
                }
                if let Record::Takeback { .. } = rec {
                    g.fen = g
                        .rec
                        .moves
                        .last()
                        .and_then(|m| m.fen.clone())
                        .or_else(|| g.rec.header.start_fen.clone())
                        .unwrap_or_else(|| START_FEN.to_owned());
                }
            }
            // The PGN text first, so HTTP is never behind the feed.
            self.refresh_pgn();
            if let Some(d) = delta {
                self.svc.hub.publish(d);
            }
        }
        if self.storage_failing {
            self.storage_failing = false;
            self.alert(AlertLevel::Info, "storage", "The journal is written again.".into(), Vec::new());
        }
        true
    }

    /// Starts a new game record in the first free slot for this board.
    async fn new_game(&mut self, start_fen: Option<String>) {
        let (event, mut round, pairing) = {
            let t = self.svc.tournament.lock();
            (t.event.clone(), t.event.round, t.pairings.get(&self.number).cloned().unwrap_or_default())
        };
        // A game already holding moves in this round keeps its slot: use the next round.
        while self.svc.store.has_journal(round, self.number)
            && !self.game.as_ref().is_some_and(|g| g.rec.header.round == round && g.rec.moves.is_empty())
            && round < 9999
        {
            round += 1;
        }
        let (utc_date, utc_time) = now_utc();
        let rec = GameRecord::new(GameHeader {
            round,
            board: self.number,
            serial: self.serial.clone(),
            event: event.name,
            site: event.site,
            time_control: event.time_control,
            utc_date,
            utc_time,
            pairing,
            start_fen: start_fen.clone(),
            flipped: self.flipped,
        });
        let fen = start_fen.unwrap_or_else(|| START_FEN.to_owned());
        tracing::info!(board = self.number, round, "new game");
        let journal = match self.svc.store.create_journal(&rec.header).await {
            Ok(j) => Some(j),
            Err(e) => {
                self.alert(
                    AlertLevel::Error,
                    "storage",
                    format!(
                        "Cannot create the journal for round {round} board {} ({e}); retried.",
                        self.number
                    ),
                    Vec::new(),
                );
                None
            }
        };
        self.pending.clear();
        self.game = Some(LiveGame { rec, journal, fen });
        self.publish_board();
        self.refresh_pgn();
    }

    async fn handle_events(&mut self, events: Vec<Event>) {
        for e in events {
            self.handle_event(e).await;
        }
        if let Some(v) = self.clock_to_send.take() {
            self.svc.hub.clock(self.number, v);
        }
    }

    fn move_view(&self, m: &MoveInfo) -> MoveView {
        MoveView {
            ply: u32::from(m.ply),
            san: SanPlus::to_string(&m.san),
            uci: m.uci.to_string(),
            clk: m.clk,
            emt: m.emt,
        }
    }

    async fn handle_event(&mut self, e: Event) {
        match e {
            Event::GameStarted { orientation, kind } => {
                self.reset_clock_pause();
                self.flipped = orientation == Orientation::Rotated;
                if self.resuming {
                    self.resuming = false;
                    tracing::info!(board = self.number, "game resumed");
                    self.publish_board();
                    return;
                }
                let start = match kind {
                    StartKind::Standard => None,
                    StartKind::Chess960(_) | StartKind::Fen => Some(
                        self.next_start_fen.take().unwrap_or_else(|| fen_of(self.tracker.start_position())),
                    ),
                };
                self.next_start_fen = None;
                self.new_game(start).await;
            }
            Event::MoveProvisional(m) => {
                let mv = self.move_view(&m);
                self.svc.hub.publish(Delta::Move {
                    board: self.number,
                    state: MoveState::Provisional,
                    mv,
                    fen: None,
                });
            }
            Event::MoveConfirmed(m) => {
                // Moves are being made: the game is under way, whatever the clock did before.
                self.health.clock_started = true;
                if self.game.is_none() {
                    self.new_game(None).await;
                }
                let mv = self.move_view(&m);
                let fen = self.game.as_ref().and_then(|g| fen_after(&g.fen, &mv.uci));
                tracing::debug!(board = self.number, ply = mv.ply, san = %mv.san, "move confirmed");
                let delta = Delta::Move {
                    board: self.number,
                    state: MoveState::Confirmed,
                    mv: mv.clone(),
                    fen: fen.clone(),
                };
                self.commit(Record::Move(crate::store::JournalMove { view: mv, fen }), Some(delta)).await;
            }
            Event::MoveRetracted { ply, .. } => {
                self.svc.hub.publish(Delta::Retract {
                    board: self.number,
                    state: MoveState::Provisional,
                    from_ply: u32::from(ply),
                    fen: None,
                });
            }
            Event::Takeback { to_ply, .. } => {
                let from_ply = u32::from(to_ply) + 1;
                let fen = Some(fen_of(self.tracker.position(View::Confirmed)));
                let delta = Delta::Retract { board: self.number, state: MoveState::Confirmed, from_ply, fen };
                self.commit(Record::Takeback { from_ply }, Some(delta)).await;
            }
            Event::Clock(c) => {
                self.clock_run_state(c.running.is_some());
                let v = clock_view(&c);
                if self.last_clock != Some(v) {
                    self.last_clock = Some(v);
                    // Sent after the batch's moves; a delta only when the clock changes
                    // state (see `Hub::clock`).
                    self.clock_to_send = Some(v);
                    // The PGN's live `Clock` tag follows, at most every few seconds.
                    if self.last_pgn_clock.is_none_or(|t| t.elapsed() >= PGN_CLOCK_REFRESH) {
                        self.last_pgn_clock = Some(Instant::now());
                        self.refresh_pgn();
                    }
                }
            }
            Event::PositionMismatch { squares } => {
                let list: Vec<String> = squares.into_iter().map(|s| s.to_string()).collect();
                self.alert(
                    AlertLevel::Warning,
                    "position_mismatch",
                    format!(
                        "Board {}: the position on the board cannot be explained by legal moves; check squares {}.",
                        self.number,
                        list.join(", ")
                    ),
                    list,
                );
            }
            Event::PositionRecovered => {
                self.alert(
                    AlertLevel::Info,
                    "position_recovered",
                    format!("Board {}: position explained again.", self.number),
                    Vec::new(),
                );
            }
            Event::GameEnded { result, reason } => {
                self.reset_clock_pause();
                let termination = Some(str::to_owned(match reason {
                    EndReason::FlagFall => "time forfeit",
                    _ => "normal",
                }));
                if self.game.as_ref().is_some_and(|g| g.rec.result.as_deref() == Some(result.as_pgn())) {
                    return;
                }
                let r = Some(result_text(result));
                let delta =
                    Delta::Result { board: self.number, result: r.clone(), termination: termination.clone() };
                self.commit(Record::Result { result: r, termination }, Some(delta)).await;
            }
            Event::RequestBoardDump => {
                if let Some((_, _, tx)) = &self.port {
                    // A full channel means a request is already queued.
                    let _ = tx.try_send(SessionCommand::RequestDump);
                }
            }
            Event::CapacityFull => {
                self.alert(
                    AlertLevel::Error,
                    "capacity",
                    format!(
                        "Board {}: the game reached {PLIES} plies; later moves are not recorded.",
                        self.number
                    ),
                    Vec::new(),
                );
            }
        }
    }
}

/// The FEN after playing `uci` in the position `fen`; `None` if either does not parse or
/// the move is illegal there.
pub fn fen_after(fen: &str, uci: &str) -> Option<String> {
    let (mut pos, _) = parse_fen(fen).ok()?;
    let m = UciMove::from_ascii(uci.as_bytes()).ok()?.to_move(&pos).ok()?;
    pos.play_unchecked(m);
    Some(fen_of(&pos))
}

impl BoardActor {
    /// Runs the board until shutdown (or until every sender is gone), then flushes.
    pub async fn run(mut self, mut input: mpsc::Receiver<BoardInput>, mut stop: Listener) {
        self.publish_board();
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut retry = tokio::time::interval(Duration::from_secs(1));
        loop {
            if !self.queued.is_empty() {
                let events = std::mem::take(&mut self.queued);
                self.handle_events(events).await;
            }
            tokio::select! {
                _ = stop.wait() => break,
                msg = input.recv() => match msg {
                    None => break,
                    Some(BoardInput::Attach { port_id, path, commands }) => self.attach(port_id, path, commands),
                    Some(BoardInput::Serial { port_id, event }) => {
                        if self.port.as_ref().is_some_and(|(id, _, _)| *id == port_id) {
                            self.serial_event(event).await;
                        }
                    }
                    Some(BoardInput::Admin(cmd, reply)) => {
                        let r = self.admin(cmd).await;
                        let _ = reply.send(r);
                    }
                },
                _ = tick.tick() => {
                    let now = self.now_ms();
                    let mut events = Vec::new();
                    self.tracker.tick(now, &mut |e| events.push(e));
                    self.handle_events(events).await;
                    self.check_clock_pause();
                    if self.away.as_ref().is_some_and(|a| a.overdue(now)) {
                        self.finish_away(None).await;
                    } else if self.away.as_mut().is_some_and(|a| a.wants_dump(now)) {
                        self.handle_event(Event::RequestBoardDump).await;
                    }
                }
                _ = retry.tick(), if !self.pending.is_empty() => {
                    self.flush_pending().await;
                }
            }
        }
        if !self.pending.is_empty() && !self.flush_pending().await {
            tracing::error!(
                board = self.number,
                records = self.pending.len(),
                "shutting down with journal records the disk refused"
            );
        }
        self.refresh_pgn();
    }

    fn attach(&mut self, port_id: u64, path: String, commands: mpsc::Sender<SessionCommand>) {
        let back = self.status == BoardStatus::NotResponding;
        tracing::info!(board = self.number, port = %path, "board attached");
        self.port = Some((port_id, path.clone(), commands));
        self.set_status(BoardStatus::Active);
        let now = self.now_ms();
        if let Some(a) = &mut self.away {
            a.attached(now);
        }
        if back {
            self.alert(
                AlertLevel::Info,
                "board_back",
                format!("Board {} is back on {path}; the position is being reconciled.", self.number),
                Vec::new(),
            );
        }
    }

    async fn serial_event(&mut self, event: SerialEvent) {
        let now = self.now_ms();
        let mut events = Vec::new();
        let lost = matches!(event, SerialEvent::Lost { .. });
        match event {
            SerialEvent::Board(msg) => {
                if let Message::Bwtime(dgt_protocol::Bwtime::Times(t)) = &msg {
                    self.clock_health(t);
                }
                let tracker = &self.tracker;
                match self.away.as_mut().map(|a| a.intake(msg, now, |d| reconcile::needs_log(tracker, d))) {
                    None => self.tracker.feed(&msg, now, &mut |e| events.push(e)),
                    Some(Intake::Feed(msgs)) => {
                        tracing::debug!(
                            board = self.number,
                            "the board is as it was before the port was lost"
                        );
                        self.away = None;
                        for (t, m) in msgs {
                            self.tracker.feed(&m, t, &mut |e| events.push(e));
                        }
                    }
                    Some(Intake::Held) => {}
                    Some(Intake::AskLog) => self.ask_event_log().await,
                    Some(Intake::Overflow) => self.finish_away(None).await,
                }
            }
            SerialEvent::Lost { reason } | SerialEvent::OpenFailed { reason } => {
                if lost {
                    self.keep_board_while_away().await;
                }
                // No clock reading comes while the board is away: its alert says enough.
                self.health.clock_stopped_at = None;
                self.set_status(BoardStatus::NotResponding);
                self.alert(
                    AlertLevel::Error,
                    "not_responding",
                    format!(
                        "Board {} ({}) is not responding: {reason}. Check its cable and power; the relay \
                         reconnects by itself.",
                        self.number,
                        self.serial.as_deref().unwrap_or("unknown serial")
                    ),
                    Vec::new(),
                );
            }
            SerialEvent::ClockFound { version } => {
                tracing::info!(board = self.number, ?version, "clock found");
                self.health.clock_seen = true;
            }
            SerialEvent::Battery { percent, charging } => self.battery(percent, charging),
            SerialEvent::ClockCommandFailed(cmd) => {
                self.alert(
                    AlertLevel::Warning,
                    "clock_command",
                    format!("Board {}: the clock did not acknowledge {cmd:?}.", self.number),
                    Vec::new(),
                );
            }
            SerialEvent::Noise(n) => {
                self.noise += n as u64;
                tracing::debug!(board = self.number, bytes = n, total = self.noise, "line noise");
            }
            SerialEvent::EeMoves(log) => {
                if self.away.as_ref().is_some_and(Reconcile::reading_log) {
                    self.finish_away(Some(&log)).await;
                } else {
                    tracing::debug!(board = self.number, "event log not asked for; ignored");
                }
            }
            SerialEvent::Opened | SerialEvent::Identified { .. } => {}
        }
        self.handle_events(events).await;
    }

    /// The port was lost: keep the board as the tracker saw it (see [`crate::reconcile`]).
    /// A board lost again before it was reconciled is first reconciled without its log.
    async fn keep_board_while_away(&mut self) {
        match self.away.take().map(Reconcile::lost) {
            Some(AfterLoss::Wait(a)) => {
                tracing::info!(
                    board = self.number,
                    "lost again before it was reconciled; keeping the older board"
                );
                self.away = Some(a);
                return;
            }
            Some(AfterLoss::Replay(outcome)) => self.replay_away(&outcome, None).await,
            None => {}
        }
        if self.tracker.state() == GameState::Active && self.tracker.board_known() {
            self.away = Some(Reconcile::new(self.tracker.board()));
        }
        // Nothing is decided by time until the board is heard again.
        let now = self.now_ms();
        self.tracker.board_away(now);
    }

    /// The board changed while it was away: ask for its event log.
    async fn ask_event_log(&mut self) {
        let sent =
            self.port.as_ref().is_some_and(|(_, _, tx)| tx.try_send(SessionCommand::RequestEeMoves).is_ok());
        if sent {
            tracing::info!(board = self.number, "the board changed while it was away: reading its event log");
        } else {
            self.finish_away(None).await;
        }
    }

    /// Ends the reconciliation of a board that was away: replays what its event log shows
    /// (when it came and reaches back to the kept board), then what the board sent since it
    /// came back, and asks for a fresh dump.
    async fn finish_away(&mut self, log: Option<&[EeEvent]>) {
        let Some(away) = self.away.take() else { return };
        let outcome = away.finish(log);
        self.replay_away(&outcome, log).await;
    }

    /// Feeds the tracker what a reconciliation ends with (see [`reconcile::replay`]).
    async fn replay_away(&mut self, outcome: &reconcile::Outcome, log: Option<&[EeEvent]>) {
        match (&outcome.steps, log) {
            (Some(changes), _) => tracing::info!(
                board = self.number,
                changes = changes.steps.len(),
                "replayed the square changes from the board's event log"
            ),
            (None, Some(log)) => tracing::warn!(
                board = self.number,
                events = log.len(),
                "the board's event log does not show the moves made while it was away"
            ),
            (None, None) if outcome.held.is_empty() => {}
            (None, None) => {
                tracing::warn!(board = self.number, "no event log from the board; going on from its position")
            }
        }
        let start = self.now_ms();
        let (t, events) = reconcile::replay(&mut self.tracker, outcome, start);
        // The tracker's time went ahead of the real one: keep it monotonic from here on.
        self.time_shift_ms += t.saturating_sub(self.now_ms());
        let first_new = events
            .iter()
            .filter_map(|e| match e {
                Event::MoveProvisional(m) => Some(m.ply),
                _ => None,
            })
            .min();
        self.handle_events(events).await;
        if outcome.steps.is_none()
            && let Some(ply) = first_new
        {
            self.reconstructed_alert(outcome.need, ply);
        }
        // The board may have moved on since.
        self.handle_event(Event::RequestBoardDump).await;
    }

    /// Moves made while the board was away came from its position alone (no event log
    /// showed them): the operator is told where to check, and how sure the order is.
    fn reconstructed_alert(&self, need: LogNeed, ply: u16) {
        let n = self.number;
        let (level, how) = match need {
            LogNeed::Ambiguous => (
                AlertLevel::Warning,
                "more than one order of moves leads to the position on the board; the relay took one of them",
            ),
            LogNeed::ToConfirm => (
                AlertLevel::Info,
                "the relay took the shortest sequence of moves that leads to the position on the board",
            ),
            LogNeed::No | LogNeed::Unexplained => return,
        };
        self.alert(
            level,
            "moves_reconstructed",
            format!(
                "Board {n}: moves were made while the board was disconnected and its memory did not show \
                 them; {how}. Check the moves from ply {ply} against the scoresheets and correct them if \
                 needed."
            ),
            Vec::new(),
        );
    }

    /// A battery report: the board object shows the charge, and the operator is told when
    /// it runs low and when it is fine again (with hysteresis, so no alert storm).
    fn battery(&mut self, percent: u8, charging: bool) {
        tracing::debug!(board = self.number, percent, charging, "battery");
        if self.health.battery != Some(percent) {
            self.health.battery = Some(percent);
            // Only the charge changes: the feed's copy of the board, with the new charge.
            let mut view = self.svc.hub.board(self.number).unwrap_or_else(|| self.view());
            view.battery = Some(percent);
            self.svc.hub.publish(Delta::Board { view: Box::new(view) });
        }
        if !self.health.battery_low && percent < BATTERY_LOW_BELOW && !charging {
            self.health.battery_low = true;
            self.alert(
                AlertLevel::Warning,
                "battery_low",
                format!(
                    "Board {}: its battery is at {percent} %; charge or swap the board's battery before it \
                     runs out.",
                    self.number
                ),
                Vec::new(),
            );
        } else if self.health.battery_low && (percent > BATTERY_OK_ABOVE || charging) {
            self.health.battery_low = false;
            let how = if charging { " and charging" } else { "" };
            self.alert(
                AlertLevel::Info,
                "battery_ok",
                format!("Board {}: its battery is at {percent} %{how}.", self.number),
                Vec::new(),
            );
        }
    }

    /// The clock's own state from a reading: connected or not (D5), battery-low sign (D2).
    fn clock_health(&mut self, t: &ClockTimes) {
        let n = self.number;
        if t.status.no_clock() {
            if self.health.clock_seen && !self.health.clock_lost {
                self.health.clock_lost = true;
                self.health.clock_running = false;
                self.health.clock_stopped_at = None;
                self.alert(
                    AlertLevel::Warning,
                    "clock_lost",
                    format!(
                        "Board {n}: the clock is not connected to the board any more; check the clock's cable \
                         and that it is switched on. Moves are still recorded, without clock times."
                    ),
                    Vec::new(),
                );
            }
            return;
        }
        self.health.clock_seen = true;
        if self.health.clock_lost {
            self.health.clock_lost = false;
            self.alert(
                AlertLevel::Info,
                "clock_back",
                format!("Board {n}: the clock is connected again."),
                Vec::new(),
            );
        }
        let low = t.status.battery_low();
        if low != self.health.clock_battery_low {
            self.health.clock_battery_low = low;
            if low {
                self.alert(
                    AlertLevel::Warning,
                    "clock_battery_low",
                    format!(
                        "Board {n}: the clock shows its battery-low sign; replace the clock's batteries at the \
                         next break, or swap the clock."
                    ),
                    Vec::new(),
                );
            } else {
                self.alert(
                    AlertLevel::Info,
                    "clock_battery_ok",
                    format!("Board {n}: the clock's battery-low sign is gone."),
                    Vec::new(),
                );
            }
        }
    }

    /// The clock runs (D0) or not, as the tracker reports it: a stop during a live game
    /// starts the pause timer ([`BoardActor::check_clock_pause`]), a restart clears it.
    fn clock_run_state(&mut self, running: bool) {
        let live = self.tracker.state() == GameState::Active;
        let was_running = std::mem::replace(&mut self.health.clock_running, running);
        if running {
            self.health.clock_stopped_at = None;
            if live && !was_running {
                self.health.clock_started = true;
            }
            if self.health.clock_paused {
                self.health.clock_paused = false;
                self.alert(
                    AlertLevel::Info,
                    "clock_running",
                    format!("Board {}: the clock runs again.", self.number),
                    Vec::new(),
                );
            }
        } else if was_running && live && self.health.clock_started && self.health.clock_stopped_at.is_none() {
            self.health.clock_stopped_at = Some(Instant::now());
        }
    }

    /// Raises `clock_paused` when the clock of a live game stayed stopped long enough.
    fn check_clock_pause(&mut self) {
        let Some(since) = self.health.clock_stopped_at else { return };
        if self.tracker.state() != GameState::Active {
            self.health.clock_stopped_at = None;
            return;
        }
        if since.elapsed() >= self.health.pause_after {
            self.health.clock_stopped_at = None;
            if !self.health.clock_paused {
                self.health.clock_paused = true;
                self.alert(
                    AlertLevel::Warning,
                    "clock_paused",
                    format!(
                        "The clock is stopped on board {}: restart it, or set the result if the game is over.",
                        self.number
                    ),
                    Vec::new(),
                );
            }
        }
    }

    /// A game started or ended: pause tracking starts afresh.
    fn reset_clock_pause(&mut self) {
        self.health.clock_started = false;
        self.health.clock_stopped_at = None;
        self.health.clock_paused = false;
    }

    async fn admin(&mut self, cmd: AdminCommand) -> Result<(), String> {
        tracing::info!(board = self.number, ?cmd, "admin command");
        match cmd {
            AdminCommand::Pairing { round, pairing } => {
                let Some(g) = &self.game else {
                    self.publish_board();
                    return Ok(());
                };
                if g.rec.moves.is_empty() && g.rec.header.round != round {
                    // An empty game moves to the new round.
                    let start = g.rec.header.start_fen.clone();
                    self.new_game(start).await;
                } else if g.rec.header.round == round && g.rec.header.pairing != pairing {
                    let mut view = self.view();
                    view.pairing = pairing.clone();
                    if !self
                        .commit(Record::Pairing { pairing }, Some(Delta::Board { view: Box::new(view) }))
                        .await
                    {
                        return Err("saved in memory only: the journal cannot be written".into());
                    }
                }
                Ok(())
            }
            AdminCommand::Result(r) => {
                let Some(g) = &self.game else { return Err("no game on this board".into()) };
                if g.rec.result == r {
                    return Ok(());
                }
                let parsed = r.as_deref().map(check_result).transpose()?;
                let termination = r.as_ref().map(|_| "normal".to_owned());
                let delta =
                    Delta::Result { board: self.number, result: r.clone(), termination: termination.clone() };
                if !self.commit(Record::Result { result: r, termination }, Some(delta)).await {
                    return Err("the journal cannot be written; retried in the background".into());
                }
                match parsed {
                    Some(result) => {
                        let mut events = Vec::new();
                        self.tracker.declare_result(result, &mut |e| events.push(e));
                        self.handle_events(events).await;
                    }
                    // Cleared: the game goes on from its last confirmed position.
                    None => self.restart_tracker(self.orientation()),
                }
                Ok(())
            }
            AdminCommand::Flip => {
                if self.game.is_none() {
                    return Err("no game on this board".into());
                }
                self.flipped = !self.flipped;
                let flipped = self.flipped;
                let view = self.view();
                self.commit(Record::Flip { flipped }, Some(Delta::Board { view: Box::new(view) })).await;
                self.restart_tracker(self.orientation());
                Ok(())
            }
            AdminCommand::NewGame(fen) => {
                let pos = match &fen {
                    Some(f) => parse_fen(f)?.0,
                    None => Chess::default(),
                };
                let fen_text = fen.as_ref().map(|_| fen_of(&pos));
                self.new_game(fen_text.clone()).await;
                self.next_start_fen = fen_text;
                let now = self.now_ms();
                let mut events = Vec::new();
                *self.tracker = Tracker::new(self.tracker_config);
                self.resuming = true;
                self.tracker
                    .start_from_position(pos, CastlingMode::Standard, None, now, &mut |e| events.push(e));
                // The game record exists already: the tracker's GameStarted (now, or when
                // the board shows the position) must not start another one.
                if events.iter().any(|e| matches!(e, Event::GameStarted { .. })) {
                    self.resuming = false;
                    events.retain(|e| !matches!(e, Event::GameStarted { .. }));
                }
                self.queued.extend(events);
                self.queued.push(Event::RequestBoardDump);
                Ok(())
            }
            AdminCommand::Correct { from_ply, moves } => self.correct(from_ply, moves).await,
        }
    }

    fn orientation(&self) -> Orientation {
        if self.flipped { Orientation::Rotated } else { Orientation::Normal }
    }

    async fn correct(&mut self, from_ply: u32, moves: Vec<String>) -> Result<(), String> {
        let Some(g) = &self.game else { return Err("no game on this board".into()) };
        let have = g.rec.moves.len() as u32;
        if from_ply == 0 || from_ply > have + 1 {
            return Err(format!("from_ply must be between 1 and {}", have + 1));
        }
        if from_ply as usize - 1 + moves.len() > PLIES {
            return Err(format!("a game holds at most {PLIES} plies"));
        }
        let start = g.rec.header.start_fen.clone().unwrap_or_else(|| START_FEN.to_owned());
        let (mut pos, _) = parse_fen(&start)?;
        for m in g.rec.moves.iter().take(from_ply as usize - 1) {
            let mv = UciMove::from_ascii(m.view.uci.as_bytes())
                .ok()
                .and_then(|u| u.to_move(&pos).ok())
                .ok_or_else(|| format!("journaled move {} ({}) does not replay", m.view.ply, m.view.uci))?;
            pos.play_unchecked(mv);
        }
        let mut new_moves = Vec::new();
        for (i, text) in moves.iter().enumerate() {
            let ply = from_ply + i as u32;
            let mv = UciMove::from_ascii(text.as_bytes())
                .map_err(|_| format!("{text:?} is not a UCI move"))?
                .to_move(&pos)
                .map_err(|_| format!("{text} is not legal at ply {ply}"))?;
            let san = SanPlus::from_move_and_play_unchecked(&mut pos, mv).to_string();
            let view = MoveView { ply, san, uci: text.clone(), clk: None, emt: None };
            new_moves.push(crate::store::JournalMove { view, fen: Some(fen_of(&pos)) });
        }
        if !self.commit(Record::Takeback { from_ply }, None).await {
            return Err("the journal cannot be written; retried in the background".into());
        }
        for m in new_moves {
            self.commit(Record::Move(m), None).await;
        }
        self.publish_board();
        self.restart_tracker(self.orientation());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_one_fen_reader_keeps_chess960_castling() {
        let (_, mode) = parse_fen(START_FEN).unwrap();
        assert_eq!(mode, CastlingMode::Standard);
        // King on g1 between rooks on f1 and h1: only Chess960 castling rights explain it.
        let fen = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9";
        let (_, mode) = parse_fen(fen).unwrap();
        assert_eq!(mode, CastlingMode::Chess960);
        // The position after a move reads back with its Chess960 castling rights.
        let after = fen_after(fen, "a3a4").unwrap();
        assert_eq!(parse_fen(&after).unwrap().1, CastlingMode::Chess960, "{after}");
    }
    use crate::store::JournalMove;
    use dgt_protocol::{BoardDump, DgtSquare, PieceCode};

    fn dump_of(pos: &Chess) -> SerialEvent {
        let mut d = BoardDump::EMPTY;
        for (sq, p) in pos.board().iter() {
            d.set(DgtSquare::from_square(sq, Orientation::Normal), PieceCode::from_piece(p));
        }
        SerialEvent::Board(Message::BoardDump(d))
    }

    fn after(ucis: &[&str]) -> Chess {
        let mut pos = Chess::default();
        for u in ucis {
            let m = UciMove::from_ascii(u.as_bytes()).unwrap().to_move(&pos).unwrap();
            pos.play_unchecked(m);
        }
        pos
    }

    async fn wait_for(hub: &Hub, what: &str, f: impl Fn(&BoardView) -> bool) -> BoardView {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(v) = hub.board(1)
                && f(&v)
            {
                return v;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}: {:?}", hub.board(1));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A board actor on an empty data folder, attached to a port that goes nowhere.
    struct Harness {
        hub: Arc<Hub>,
        tx: mpsc::Sender<BoardInput>,
        shutdown: crate::shutdown::Shutdown,
        task: tokio::task::JoinHandle<()>,
        dir: std::path::PathBuf,
        _port: mpsc::Receiver<SessionCommand>,
    }

    impl Harness {
        async fn start(name: &str, pause_after: Duration) -> Harness {
            let dir = std::env::temp_dir().join(format!("dgt-relay-board-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let (store, _) = Store::open(&dir).unwrap();
            let hub = Arc::new(Hub::new(1));
            let svc = Services {
                hub: Arc::clone(&hub),
                store: Arc::new(store),
                tournament: SharedTournament::default(),
            };
            let mut actor = BoardActor::new(1, Some("555".into()), svc, None);
            actor.health.pause_after = pause_after;
            let (tx, rx) = mpsc::channel(64);
            let shutdown = crate::shutdown::Shutdown::new();
            let task = tokio::spawn(actor.run(rx, shutdown.listener()));
            let (cmd_tx, port) = mpsc::channel(64);
            tx.send(BoardInput::Attach { port_id: 1, path: "test".into(), commands: cmd_tx }).await.unwrap();
            Harness { hub, tx, shutdown, task, dir, _port: port }
        }

        async fn send(&self, event: SerialEvent) {
            self.tx.send(BoardInput::Serial { port_id: 1, event }).await.unwrap();
        }

        /// Sends a battery report and waits until it is handled: everything sent before
        /// it is handled too.
        async fn barrier(&self, percent: u8) -> BoardView {
            self.send(SerialEvent::Battery { percent, charging: true }).await;
            wait_for(&self.hub, "the barrier", |v| v.battery == Some(percent)).await
        }

        async fn admin(&self, cmd: AdminCommand) -> Result<(), String> {
            let (tx, rx) = oneshot::channel();
            self.tx.send(BoardInput::Admin(cmd, tx)).await.unwrap();
            rx.await.unwrap()
        }

        fn codes(&self, prefix: &str) -> Vec<String> {
            let v = self.hub.board(1).unwrap();
            v.alerts.iter().filter(|a| a.code.starts_with(prefix)).map(|a| a.code.clone()).collect()
        }

        async fn stop(self) {
            self.shutdown.trigger();
            self.task.await.unwrap();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// A clock reading: 5 minutes a side and the given status byte.
    fn clock(status: u8) -> SerialEvent {
        let side = dgt_protocol::SideReading {
            time: dgt_protocol::ClockTime::from_seconds(300),
            flags: dgt_protocol::SideFlags::default(),
        };
        let t = ClockTimes { right: side, left: side, status: dgt_protocol::ClockStatus(status) };
        SerialEvent::Board(Message::Bwtime(dgt_protocol::Bwtime::Times(t)))
    }

    const RUNNING: u8 = 0x01;
    const STOPPED: u8 = 0x00;

    #[tokio::test]
    async fn battery_alerts_have_hysteresis_and_the_charge_is_in_the_board_object() {
        let h = Harness::start("battery", CLOCK_PAUSE_ALERT).await;
        let v = h.barrier(50).await;
        assert!(h.codes("battery").is_empty());
        assert_eq!(serde_json::to_value(&v).unwrap()["battery"], 50);
        for (percent, charging) in
            [(19, false), (18, false), (15, false), (22, false), (24, true), (19, false), (26, false)]
        {
            h.send(SerialEvent::Battery { percent, charging }).await;
        }
        let v = wait_for(&h.hub, "the last report", |v| v.battery == Some(26)).await;
        // Low once for 19, 18 and 15; 22 is not enough to clear it, charging is; low again,
        // cleared by a charge over 25 %.
        assert_eq!(h.codes("battery"), ["battery_low", "battery_ok", "battery_low", "battery_ok"]);
        let low = v.alerts.iter().find(|a| a.code == "battery_low").unwrap();
        assert_eq!(low.level, AlertLevel::Warning);
        assert!(low.message.contains("19 %") && low.message.contains("charge or swap"), "{}", low.message);
        // A board that never reported a charge has no `battery` field at all.
        let json = serde_json::to_value(BoardView::new(2, 1)).unwrap();
        assert!(json.get("battery").is_none(), "{json}");
        h.stop().await;
    }

    #[tokio::test]
    async fn clock_battery_and_connection_alerts_come_once_per_change() {
        let h = Harness::start("clock-health", CLOCK_PAUSE_ALERT).await;
        // No clock from the start: nothing was lost.
        h.send(clock(0x20)).await;
        h.barrier(90).await;
        assert!(h.codes("clock").is_empty());
        for status in [STOPPED, STOPPED | 0x04, RUNNING | 0x04, 0x20, 0x20, STOPPED | 0x04, STOPPED] {
            h.send(clock(status)).await;
        }
        h.barrier(91).await;
        assert_eq!(
            h.codes("clock"),
            ["clock_battery_low", "clock_lost", "clock_back", "clock_battery_ok"],
            "{:?}",
            h.hub.board(1)
        );
        h.stop().await;
    }

    #[tokio::test]
    async fn a_stopped_clock_alerts_only_while_the_game_is_live() {
        let pause = Duration::from_millis(300);
        let h = Harness::start("pause", pause).await;
        // Before any game (empty board): the clock is started and stopped, nothing said.
        h.send(SerialEvent::Board(Message::BoardDump(BoardDump::EMPTY))).await;
        h.send(clock(RUNNING)).await;
        h.send(clock(STOPPED)).await;
        h.barrier(10).await;
        tokio::time::sleep(pause * 2).await;
        assert!(h.codes("clock_").is_empty(), "{:?}", h.hub.board(1));
        // The game starts; the clock is started, then stopped.
        h.send(dump_of(&Chess::default())).await;
        wait_for(&h.hub, "the game", |v| v.fen.is_some()).await;
        h.send(clock(RUNNING)).await;
        h.send(clock(STOPPED)).await;
        h.barrier(11).await;
        // Not at once: a stop shorter than the limit is not a pause.
        assert!(h.codes("clock_").is_empty());
        let v = wait_for(&h.hub, "clock_paused", |v| v.alerts.iter().any(|a| a.code == "clock_paused")).await;
        let alert = v.alerts.iter().find(|a| a.code == "clock_paused").unwrap();
        assert_eq!(alert.level, AlertLevel::Warning);
        assert!(alert.message.contains("board 1") && alert.message.contains("set the result"), "{alert:?}");
        tokio::time::sleep(pause * 2).await;
        assert_eq!(h.codes("clock_"), ["clock_paused"], "raised once");
        h.send(clock(RUNNING)).await;
        wait_for(&h.hub, "clock_running", |v| v.alerts.iter().any(|a| a.code == "clock_running")).await;
        // A short stop (restarted in time) says nothing.
        h.send(clock(STOPPED)).await;
        h.send(clock(RUNNING)).await;
        h.barrier(12).await;
        tokio::time::sleep(pause * 2).await;
        assert_eq!(h.codes("clock_"), ["clock_paused", "clock_running"]);
        // The game is over: stopping the clock afterwards is normal.
        h.admin(AdminCommand::Result(Some("1-0".into()))).await.unwrap();
        h.send(clock(STOPPED)).await;
        h.barrier(13).await;
        tokio::time::sleep(pause * 2).await;
        assert_eq!(h.codes("clock_"), ["clock_paused", "clock_running"]);
        h.stop().await;
    }

    /// Moves made while the board was away that two move orders explain, and a board
    /// whose memory shows nothing of them (a USB board has no power when unplugged): the
    /// relay goes on from the position and tells the operator where to check.
    #[tokio::test]
    async fn a_reconstruction_without_the_boards_log_is_flagged_to_the_operator() {
        let h = Harness::start("reconstructed", Duration::from_secs(60)).await;
        h.send(dump_of(&Chess::default())).await;
        h.send(dump_of(&after(&["e2e4", "e7e5"]))).await;
        wait_for(&h.hub, "two plies", |v| v.moves.len() + v.provisional.len() >= 2).await;
        h.send(SerialEvent::Lost { reason: "unplugged".into() }).await;
        let (cmd_tx, mut cmd_rx) = mpsc::channel(16);
        h.tx.send(BoardInput::Attach { port_id: 2, path: "test".into(), commands: cmd_tx }).await.unwrap();
        let serial = |event| BoardInput::Serial { port_id: 2, event };
        let moved = after(&["e2e4", "e7e5", "g1f3", "b8c6", "b1c3"]);
        h.tx.send(serial(dump_of(&moved))).await.unwrap();
        // The relay asks for the board's memory first, and waits for it.
        loop {
            match tokio::time::timeout(Duration::from_secs(5), cmd_rx.recv()).await {
                Ok(Some(SessionCommand::RequestEeMoves)) => break,
                Ok(Some(_)) => {}
                other => panic!("no event log asked for: {other:?}"),
            }
        }
        assert!(h.codes("moves_reconstructed").is_empty());
        // The memory shows nothing of the moves (only events before the known board).
        h.tx.send(serial(SerialEvent::EeMoves(vec![EeEvent::Nop]))).await.unwrap();
        let v =
            wait_for(&h.hub, "the alert", |v| v.alerts.iter().any(|a| a.code == "moves_reconstructed")).await;
        let alert = v.alerts.iter().find(|a| a.code == "moves_reconstructed").unwrap();
        assert_eq!(alert.level, AlertLevel::Warning);
        assert!(alert.message.contains("from ply 3"), "{}", alert.message);
        assert_eq!(v.moves.len() + v.provisional.len(), 5, "{v:?}");
        h.stop().await;
    }

    /// A game journaled by an earlier run (4 plies), then the relay restarts: the arbiter
    /// takes back the last ply, made before the restart, and the game goes on.
    #[tokio::test]
    async fn a_resumed_game_takes_back_a_move_made_before_the_restart() {
        let dir = std::env::temp_dir().join(format!("dgt-relay-board-resume-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (store, _) = Store::open(&dir).unwrap();
        let ucis = ["e2e4", "e7e5", "d2d4", "d7d5"];
        {
            let header = GameHeader {
                round: 1,
                board: 1,
                serial: Some("777".into()),
                event: "E".into(),
                site: "S".into(),
                time_control: None,
                utc_date: "2025.01.01".into(),
                utc_time: "00:00:00".into(),
                pairing: crate::config::Pairing::default(),
                start_fen: None,
                flipped: false,
            };
            let j = store.create_journal(&header).await.unwrap();
            let mut fen = START_FEN.to_owned();
            for (i, u) in ucis.iter().enumerate() {
                let (pos, _) = parse_fen(&fen).unwrap();
                let m = UciMove::from_ascii(u.as_bytes()).unwrap().to_move(&pos).unwrap();
                let san = SanPlus::from_move(pos, m).to_string();
                fen = fen_after(&fen, u).unwrap();
                let view = MoveView { ply: i as u32 + 1, san, uci: (*u).into(), clk: None, emt: None };
                j.append(&Record::Move(JournalMove { view, fen: Some(fen.clone()) })).await.unwrap();
            }
        }
        // The restart: the journal is all that is left.
        let (store, games) = Store::open(&dir).unwrap();
        let store = Arc::new(store);
        let hub = Arc::new(Hub::new(1));
        let svc = Services {
            hub: Arc::clone(&hub),
            store: Arc::clone(&store),
            tournament: SharedTournament::default(),
        };
        let rec = games.into_iter().next().unwrap();
        assert_eq!(rec.moves.len(), 4);
        let actor = BoardActor::new(1, Some("777".into()), svc, Some(rec));
        let (tx, rx) = mpsc::channel(16);
        let shutdown = crate::shutdown::Shutdown::new();
        let task = tokio::spawn(actor.run(rx, shutdown.listener()));
        let (cmd_tx, _cmd_rx) = mpsc::channel(16);
        tx.send(BoardInput::Attach { port_id: 1, path: "test".into(), commands: cmd_tx }).await.unwrap();
        let serial = |event| BoardInput::Serial { port_id: 1, event };
        tx.send(serial(dump_of(&after(&ucis)))).await.unwrap();
        // The arbiter puts ...d5 back: the board shows the position after 3 plies.
        tx.send(serial(dump_of(&after(&ucis[..3])))).await.unwrap();
        let v = wait_for(&hub, "the takeback", |v| v.moves.len() == 3).await;
        assert_eq!(v.fen.as_deref(), Some(fen_of(&after(&ucis[..3])).as_str()));
        let pgn = store.game_pgn(1, 1).unwrap();
        assert!(pgn.contains("2. d4 *") && !pgn.contains("d5"), "{pgn}");
        // Black plays ...c5 instead: it is ply 4, confirmed by quiet time (no clock).
        tx.send(serial(dump_of(&after(&["e2e4", "e7e5", "d2d4", "c7c5"])))).await.unwrap();
        let v = wait_for(&hub, "the new ply 4", |v| v.moves.len() == 4).await;
        assert_eq!((v.moves[3].ply, v.moves[3].san.as_str()), (4, "c5"));
        shutdown.trigger();
        task.await.unwrap();
        // The journal on disk tells the same story.
        let (_, games) = Store::open(&dir).unwrap();
        let sans: Vec<&str> = games[0].moves.iter().map(|m| m.view.san.as_str()).collect();
        assert_eq!(sans, ["e4", "e5", "d4", "c5"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
