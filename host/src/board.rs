//! One board's task: the async shell around its [`dgt_session::BoardSession`].
//!
//! The task reads the board's port, hands the bytes and the time to the session, sleeps
//! until the session's next deadline or the next bytes, and carries out the session's
//! effects: bytes to the port, game records to the journal first and then to the feed and
//! the PGN, alerts to the feed. All judgement (chess, clocks, outages, health) is the
//! session's.
//!
//! # Why a task per board number, not per port
//! Boards are identified by serial number. A board unplugged from one USB socket and
//! plugged into another comes back on a new port, which the registry gives to the same
//! task: the session, the game and the journal survive.
//!
//! # Why the journal comes first
//! A confirmed move is appended to the game's journal and fsynced, and only then published
//! to the feed and the PGN. If the append fails (disk full), the record waits in a queue,
//! the operator is alerted, and the append is retried every second and before any later
//! record, so records reach the disk in order and none is silently lost.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use dgt_core::{ClockState, GameResult};
use dgt_session::{
    AlertCode, AlertLevel, BoardSession, Effect, LinkState, MoveState as SessionMove, SavedGame,
};
use shakmaty::Color;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::admin::{AdminCommand, AdminError};
use crate::bridge::{BridgeAttached, Remote, Source};
use crate::config::{EventInfo, Pairing};
use crate::feed::{AlertView, BoardStatus, BoardView, ClockView, Delta, Hub, MoveState, MoveView, Side};
use crate::port::{Attached, Epoch, PortIo};
use crate::record::{GameHeader, GameRecord, JournalMove, Record};
use crate::shutdown::Listener;
use crate::store::{Journal, Store};

pub use dgt_session::PLIES;

/// How often a running clock rewrites the PGN's `Clock` tag.
const PGN_CLOCK_REFRESH: Duration = Duration::from_secs(5);

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

/// What a board task receives.
pub enum BoardInput {
    /// An identified port of this board: read and write it from now on.
    Attach(Attached),
    /// A relay box running this board's session: its effects come over the bridge now.
    Bridge(BridgeAttached),
    /// An operator command, answered when done.
    Admin(AdminCommand, oneshot::Sender<Result<(), AdminError>>),
    /// A correction checked, not made (`?dry_run=1`): the corrected moves, or why the
    /// correction would be refused.
    CheckCorrection {
        /// First ply replaced.
        from_ply: u32,
        /// The moves, UCI.
        moves: Vec<String>,
        /// The answer.
        reply: oneshot::Sender<Result<Vec<(MoveView, String)>, AdminError>>,
    },
}

impl std::fmt::Debug for BoardInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BoardInput::Attach(a) => f.debug_tuple("Attach").field(a).finish(),
            BoardInput::Bridge(b) => f.debug_tuple("Bridge").field(&b.path).finish(),
            BoardInput::Admin(c, _) => f.debug_tuple("Admin").field(c).finish(),
            BoardInput::CheckCorrection { from_ply, moves, .. } => {
                f.debug_struct("CheckCorrection").field("from_ply", from_ply).field("moves", moves).finish()
            }
        }
    }
}

/// Shared services every board task uses.
#[derive(Clone, Debug)]
pub struct Services {
    /// The feed.
    pub hub: Arc<Hub>,
    /// The data folder.
    pub store: Arc<Store>,
    /// Event and pairings.
    pub tournament: SharedTournament,
    /// The relay's clock.
    pub epoch: Epoch,
    /// The sessions' settings.
    pub session: dgt_session::SessionConfig,
    /// Receives a copy of every effect a board's session emits, with its time (for
    /// diagnostics and for the test that the relay runs what the offline harness runs).
    pub tap: Option<mpsc::UnboundedSender<(u32, u64, Effect)>>,
}

struct LiveGame {
    rec: GameRecord,
    journal: Option<Journal>,
    /// Position after the last confirmed move.
    fen: String,
}

/// The port the board is on.
struct Port {
    path: String,
    io: Box<dyn PortIo>,
    released: oneshot::Sender<String>,
}

/// One board. See the module docs.
pub struct BoardTask {
    number: u32,
    session: Source,
    svc: Services,
    port: Option<Port>,
    game: Option<LiveGame>,
    pending: VecDeque<(Record, Option<Delta>)>,
    storage_failing: bool,
    last_clock: Option<ClockView>,
    /// When the PGN was last rewritten for a clock change.
    last_pgn_clock: Option<Instant>,
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

fn status_of(s: LinkState) -> BoardStatus {
    match s {
        LinkState::Offline => BoardStatus::Offline,
        LinkState::Active => BoardStatus::Active,
        LinkState::NotResponding => BoardStatus::NotResponding,
    }
}

/// The standard start position.
pub const START_FEN: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

impl BoardTask {
    /// A board with no game, or resuming `resume` (its latest journaled game).
    pub fn new(number: u32, serial: Option<String>, svc: Services, resume: Option<GameRecord>) -> BoardTask {
        let mut config = svc.session;
        config.tracker.time_control =
            svc.tournament.lock().event.time_control.as_deref().and_then(|t| t.parse().ok());
        let mut task = BoardTask {
            number,
            session: Source::Local(Box::new(BoardSession::new(number, serial, config))),
            svc,
            port: None,
            game: None,
            pending: VecDeque::new(),
            storage_failing: false,
            last_clock: None,
            last_pgn_clock: None,
        };
        if let Some(rec) = resume {
            task.resume(rec);
        }
        task
    }

    fn now(&self) -> u64 {
        self.svc.epoch.ms()
    }

    fn resume(&mut self, rec: GameRecord) {
        let journal = match self.svc.store.open_journal(rec.header.round, rec.header.board) {
            Ok(j) => Some(j),
            Err(e) => {
                tracing::error!(board = self.number, error = %e, "cannot reopen journal");
                None
            }
        };
        let saved = SavedGame {
            start_fen: rec.header.start_fen.clone(),
            plies: rec.moves.iter().map(|m| (m.uci.clone(), m.clk, m.emt)).collect(),
            flipped: rec.header.flipped,
            result: rec.result.as_deref().and_then(|r| r.parse::<GameResult>().ok()),
            white_clock: rec.white_clock.map(Into::into),
        };
        let fen = rec.moves.last().and_then(|m| m.fen.clone()).or_else(|| rec.header.start_fen.clone());
        self.game = Some(LiveGame { rec, journal, fen: fen.unwrap_or_else(|| START_FEN.to_owned()) });
        let now = self.now();
        self.session.resume(now, &saved);
    }

    /// Runs the board until shutdown (or until every sender is gone), then flushes.
    pub async fn run(mut self, mut input: mpsc::Receiver<BoardInput>, mut stop: Listener) {
        self.publish_board();
        self.refresh_pgn();
        self.apply_effects().await;
        let mut retry = tokio::time::interval(Duration::from_secs(1));
        let mut buf = [0u8; 512];
        loop {
            let deadline = self.svc.epoch.at(self.session.next_deadline());
            // Biased, in the order the offline harness handles one instant: the same bytes
            // at the same times give the same effects.
            tokio::select! {
                biased;
                _ = stop.wait() => break,
                msg = input.recv() => match msg {
                    None => break,
                    Some(BoardInput::Attach(a)) => self.attach(a),
                    Some(BoardInput::Bridge(b)) => self.attach_bridge(b),
                    Some(BoardInput::Admin(cmd, reply)) => {
                        let r = self.admin(cmd).await;
                        let _ = reply.send(r);
                    }
                    Some(BoardInput::CheckCorrection { from_ply, moves, reply }) => {
                        let _ = reply.send(self.check_correction(from_ply, &moves).await);
                    }
                },
                up = self.session.recv() => self.session.take(up),
                n = read_port(&mut self.port, &mut buf) => {
                    let now = self.now();
                    match n {
                        Ok(0) => self.port_lost(now, "the device went away (end of file on the port)".into()),
                        Ok(n) => self.session.on_bytes(now, &buf[..n]),
                        Err(e) => self.port_lost(now, crate::port::gone_reason(&e)),
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    let now = self.now();
                    self.session.poll(now);
                }
                _ = retry.tick(), if !self.pending.is_empty() => {
                    self.flush_pending().await;
                }
            }
            self.apply_effects().await;
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

    fn attach(&mut self, a: Attached) {
        if let Some(old) = self.port.take() {
            let _ = old.released.send("the board appeared on another port".into());
        }
        let now = self.now();
        if self.session.attach(now, a.link, &a.path) {
            self.port = Some(Port { path: a.path.clone(), io: a.io, released: a.released });
        } else {
            let _ = a.released.send("the board's session runs on a relay box (bridge)".into());
        }
    }

    /// The board's session runs on a relay box from now on: its port, if any, is given
    /// back, and the journal is brought up to the box's game (see [`crate::bridge`]).
    fn attach_bridge(&mut self, b: BridgeAttached) {
        if let Some(old) = self.port.take() {
            let _ = old.released.send("the board is on a relay box's bridge".into());
        }
        let now = self.now();
        let remote = Remote::new(b, self.number, self.game.as_ref().map(|g| &g.rec), now);
        self.session = Source::Remote(Box::new(remote));
    }

    /// The port is gone: the session keeps the board, the port task reopens it.
    fn port_lost(&mut self, now: u64, reason: String) {
        self.session.on_port_lost(now, &reason);
        if let Some(p) = self.port.take() {
            let _ = p.released.send(reason);
        }
    }

    /// Carries out what the session decided, until it has nothing more to say.
    async fn apply_effects(&mut self) {
        while let Some(effect) = self.session.next_effect() {
            if let Some(tap) = &self.svc.tap {
                let _ = tap.send((self.number, self.now(), effect.clone()));
            }
            self.apply(effect).await;
        }
        let key = self
            .game
            .as_ref()
            .map(|g| dgt_bridge::GameKey { round: g.rec.header.round, board: g.rec.header.board });
        self.session.applied(key, self.pending.is_empty());
    }

    async fn apply(&mut self, effect: Effect) {
        let n = self.number;
        match effect {
            Effect::Write(bytes) => {
                let Some(p) = &mut self.port else { return };
                let written = async {
                    p.io.write_all(&bytes).await?;
                    p.io.flush().await
                };
                if let Err(e) = written.await {
                    let now = self.now();
                    self.port_lost(now, crate::port::gone_reason(&e));
                }
            }
            Effect::Link(state) => {
                if state == LinkState::NotResponding
                    && let Some(p) = self.port.take()
                {
                    // The session gave up on a board that stopped answering.
                    let _ = p.released.send("the board stopped answering".into());
                }
                self.publish_status(status_of(state));
            }
            Effect::GameStarted { orientation, start_fen, new_record, .. } => {
                if new_record {
                    let _ = orientation;
                    self.new_game(start_fen).await;
                } else {
                    tracing::info!(board = n, "game resumed");
                    self.publish_board();
                }
            }
            Effect::Move { state: SessionMove::Provisional, info } => {
                let mv = MoveView::from(&info);
                let fen = Some(info.fen.to_string());
                self.svc.hub.publish(Delta::Move { board: n, state: MoveState::Provisional, mv, fen });
            }
            Effect::Move { state: SessionMove::Confirmed, info } => {
                if self.game.is_none() {
                    self.new_game(None).await;
                }
                let m = JournalMove::from_info(&info);
                let delta = Delta::Move {
                    board: n,
                    state: MoveState::Confirmed,
                    mv: MoveView::from(&m),
                    fen: m.fen.clone(),
                };
                self.commit(Record::Move(m), Some(delta)).await;
            }
            Effect::Retracted { ply, fen } => {
                let fen = Some(fen.to_string());
                let from_ply = u32::from(ply);
                self.svc.hub.publish(Delta::Retract {
                    board: n,
                    state: MoveState::Provisional,
                    from_ply,
                    fen,
                });
            }
            Effect::TakenBack { to_ply, fen } => {
                let from_ply = u32::from(to_ply) + 1;
                let delta = Delta::Retract {
                    board: n,
                    state: MoveState::Confirmed,
                    from_ply,
                    fen: Some(fen.to_string()),
                };
                self.commit(Record::Takeback { from_ply }, Some(delta)).await;
            }
            Effect::ClockSide(side) => {
                // Kept for a restart; nothing to publish.
                if self.game.is_some() {
                    self.commit(Record::ClockSide { white: side.into() }, None).await;
                }
            }
            Effect::Clock(c) => {
                let v = clock_view(&c);
                if self.last_clock != Some(v) {
                    self.last_clock = Some(v);
                    // A delta only when the clock changes state (see `Hub::clock`).
                    self.svc.hub.clock(n, v);
                    // The PGN's live `Clock` tag follows, at most every few seconds.
                    if self.last_pgn_clock.is_none_or(|t| t.elapsed() >= PGN_CLOCK_REFRESH) {
                        self.last_pgn_clock = Some(Instant::now());
                        self.refresh_pgn();
                    }
                }
            }
            Effect::GameEnded { result, reason } => {
                let r = Some(result.as_pgn().to_owned());
                if self.game.as_ref().is_some_and(|g| g.rec.result == r) {
                    return;
                }
                let termination = Some(reason.termination().to_owned());
                let delta = Delta::Result { board: n, result: r.clone(), termination: termination.clone() };
                self.commit(Record::Result { result: r, termination }, Some(delta)).await;
            }
            Effect::ResultCleared => {
                let delta = Delta::Result { board: n, result: None, termination: None };
                self.commit(Record::Result { result: None, termination: None }, Some(delta)).await;
            }
            Effect::Flipped { flipped } => {
                let mut view = self.view();
                view.flipped = flipped;
                self.commit(Record::Flip { flipped }, Some(Delta::Board { view: Box::new(view) })).await;
            }
            Effect::Battery(percent) => {
                // Only the charge changes: the feed's copy of the board, with the new charge.
                let mut view = self.svc.hub.board(n).unwrap_or_else(|| self.view());
                view.battery = Some(percent);
                self.svc.hub.publish(Delta::Board { view: Box::new(view) });
            }
            Effect::Alert(a) => {
                self.svc.hub.publish(Delta::Alert { board: Some(n), alert: AlertView::from(&a) });
            }
        }
    }

    fn view(&self) -> BoardView {
        let round =
            self.game.as_ref().map_or_else(|| self.svc.tournament.lock().event.round, |g| g.rec.header.round);
        let mut v = BoardView::new(self.number, round);
        v.serial = self.session.serial().map(str::to_owned);
        v.port =
            self.port.as_ref().map(|p| p.path.clone()).or_else(|| self.session.port().map(str::to_owned));
        v.status = status_of(self.session.link_state());
        v.flipped = self.session.flipped();
        v.clock = self.last_clock;
        v.battery = self.session.battery();
        match &self.game {
            Some(g) => {
                v.pairing = g.rec.header.pairing.clone();
                v.start_fen.clone_from(&g.rec.header.start_fen);
                v.fen = Some(g.fen.clone());
                v.live_fen = Some(g.fen.clone());
                v.moves = g.rec.moves.iter().map(MoveView::from).collect();
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

    fn publish_status(&self, status: BoardStatus) {
        self.svc.hub.publish(Delta::Status {
            board: self.number,
            status,
            serial: self.session.serial().map(str::to_owned),
            port: self
                .port
                .as_ref()
                .map(|p| p.path.clone())
                .or_else(|| self.session.port().map(str::to_owned)),
        });
    }

    fn refresh_pgn(&self) {
        if let Some(g) = &self.game {
            let live = if g.rec.result.is_none() { self.last_clock.as_ref() } else { None };
            let text = crate::pgn::write_game(&g.rec, live);
            self.svc.store.set_pgn(g.rec.header.round, g.rec.header.board, text);
        }
    }

    fn storage_alert(&self, level: AlertLevel, message: String) {
        match level {
            AlertLevel::Info => tracing::info!(board = self.number, "{message}"),
            _ => tracing::error!(board = self.number, "{message}"),
        }
        self.svc.hub.publish(Delta::Alert {
            board: Some(self.number),
            alert: AlertView { code: AlertCode::Storage, level, message, squares: Vec::new() },
        });
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
                    self.storage_alert(
                        AlertLevel::Error,
                        format!(
                            "Cannot write the journal ({e}). {} record(s) wait in memory and are retried every \
                             second; confirmed moves are published once they are on disk. Free disk space.",
                            self.pending.len()
                        ),
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
            self.storage_alert(AlertLevel::Info, "The journal is written again.".into());
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
            serial: self.session.serial().map(str::to_owned),
            event: event.name,
            site: event.site,
            time_control: event.time_control,
            utc_date,
            utc_time,
            pairing,
            start_fen: start_fen.clone(),
            flipped: self.session.flipped(),
        });
        let fen = start_fen.unwrap_or_else(|| START_FEN.to_owned());
        tracing::info!(board = self.number, round, "new game");
        let journal = match self.svc.store.create_journal(&rec.header).await {
            Ok(j) => Some(j),
            Err(e) => {
                self.storage_alert(
                    AlertLevel::Error,
                    format!(
                        "Cannot create the journal for round {round} board {} ({e}); retried.",
                        self.number
                    ),
                );
                None
            }
        };
        self.pending.clear();
        self.game = Some(LiveGame { rec, journal, fen });
        self.publish_board();
        self.refresh_pgn();
    }

    /// True when the last records reached the journal; the admin answer says otherwise.
    fn journaled(&self) -> Result<(), AdminError> {
        if self.pending.is_empty() {
            Ok(())
        } else {
            Err(AdminError::Storage(format!("{} record(s) wait", self.pending.len())))
        }
    }

    /// A correction as the session would make it, made on nothing: each corrected move
    /// with the position after it.
    async fn check_correction(
        &mut self,
        from_ply: u32,
        moves: &[String],
    ) -> Result<Vec<(MoveView, String)>, AdminError> {
        if self.game.is_none() {
            return Err(dgt_session::AdminError::NoGame.into());
        }
        let now = self.now();
        let checked = self.session.check_correction(now, from_ply as usize, moves).await?;
        Ok(checked.iter().map(|m| (MoveView::from(m), m.fen.to_string())).collect())
    }

    async fn admin(&mut self, cmd: AdminCommand) -> Result<(), AdminError> {
        tracing::info!(board = self.number, ?cmd, "admin command");
        let now = self.now();
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
                    self.commit(Record::Pairing { pairing }, Some(Delta::Board { view: Box::new(view) }))
                        .await;
                }
                return self.journaled();
            }
            AdminCommand::Result(r) => {
                if self.game.is_none() {
                    return Err(dgt_session::AdminError::NoGame.into());
                }
                self.session.set_result(now, r).await?;
            }
            AdminCommand::Flip => {
                if self.game.is_none() {
                    return Err(dgt_session::AdminError::NoGame.into());
                }
                self.session.flip(now).await?;
            }
            AdminCommand::NewGame(fen) => self.session.new_game(now, fen.as_deref()).await?,
            AdminCommand::Correct { from_ply, moves } => {
                if self.game.is_none() {
                    return Err(dgt_session::AdminError::NoGame.into());
                }
                self.session.correct(now, from_ply as usize, &moves).await?;
            }
        }
        self.apply_effects().await;
        self.publish_board();
        self.journaled()
    }
}

/// Reads the board's port; pending forever without one.
async fn read_port(port: &mut Option<Port>, buf: &mut [u8]) -> std::io::Result<usize> {
    match port {
        Some(p) => p.io.read(buf).await,
        None => std::future::pending().await,
    }
}

fn now_utc() -> (String, String) {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    utc_date_time(secs)
}

/// The UTC date (`yyyy.mm.dd`) and time (`hh:mm:ss`) of seconds since 1970, as PGN writes
/// them.
pub fn utc_date_time(secs: u64) -> (String, String) {
    let t = i64::try_from(secs)
        .ok()
        .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).ok())
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    (
        format!("{:04}.{:02}.{:02}", t.year(), u8::from(t.month()), t.day()),
        format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second()),
    )
}

#[cfg(test)]
mod tests {
    use super::utc_date_time;

    #[test]
    fn pgn_dates_and_times_are_utc() {
        assert_eq!(utc_date_time(0), ("1970.01.01".to_owned(), "00:00:00".to_owned()));
        assert_eq!(utc_date_time(951_782_400), ("2000.02.29".to_owned(), "00:00:00".to_owned()));
        assert_eq!(utc_date_time(1_764_100_000), ("2025.11.25".to_owned(), "19:46:40".to_owned()));
    }
}
