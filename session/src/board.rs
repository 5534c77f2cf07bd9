//! [`BoardSession`]: one board's link, tracker, reconciliation after an outage and health,
//! driven by bytes and the caller's time, speaking in [`Effect`]s.
//!
//! # Time
//! The caller passes its monotonic milliseconds with every call and sleeps until
//! [`BoardSession::next_deadline`]. The tracker sees that time plus a shift: replaying a
//! board's event log after an outage moves the tracker's time ahead of the caller's, and
//! it must never go back.
//!
//! # Moves made while the board was away
//! When the port is lost, the session keeps the board as the tracker last saw it; when it
//! is back, [`crate::reconcile`] decides from the first reading whether the board's event
//! log must be read and replayed before the tracker sees anything new.
//!
//! # The game line
//! The session keeps the confirmed line as it told the caller (start position, plies with
//! their clocks, result): restarting the tracker (a flip, a cleared result, a correction)
//! resumes it from that line, exactly as a restarted program resumes from its journal.

use alloc::collections::VecDeque;
use alloc::{borrow::ToOwned, boxed::Box, format, string::String, string::ToString, vec::Vec};

use dgt_core::{
    ClockState, EndReason, Event, GameResult, GameState, MoveInfo, ResumePly, Ruling, StartKind, Tracker,
    View, position_from_fen,
};
use dgt_protocol::{BoardDump, ClockSide, DgtSquare, EeEvent, Message, Orientation, PieceCode};
use shakmaty::Chess;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Position};

use crate::alert::{Alert, AlertCode, AlertLevel};
use crate::effect::{Effect, LinkState, MoveState};
use crate::health::{BOARD_IDLE_ALERT_MS, CLOCK_PAUSE_ALERT_MS, Health};
use crate::link::{Link, LinkEvent, LinkTiming};
use crate::reconcile::{self, AfterLoss, Intake, LogNeed, Reconcile};

/// Plies one game can hold (the tracker's capacity).
pub const PLIES: usize = 600;
/// The longest a session sleeps when nothing waits on time (no link, no game).
pub const IDLE_POLL_MS: u64 = 60_000;

/// How a session behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionConfig {
    /// The tracker's settings (time control, settle times, ...).
    pub tracker: dgt_core::Config,
    /// The serial conversation's timing.
    pub link: LinkTiming,
    /// How long the clock of a live game may stay stopped before the operator is alerted.
    pub clock_pause_ms: u64,
    /// How long the clock of a live game may run with nothing changing on the board before
    /// the operator is alerted.
    pub board_idle_ms: u64,
    /// Plies the confirmed line gets room for with its first ply; a longer game gets half
    /// as much again at a time (0: the line doubles as it grows), up to [`PLIES`]. A device
    /// sets what nearly every game needs: a game then makes one allocation, of the size the
    /// previous game's line freed, so that reallocations do not fragment its heap.
    pub line_capacity: usize,
    /// Most board messages held while a board's event log is awaited after an outage
    /// ([`crate::reconcile::Reconcile::hold_at_most`]); a device with little memory holds fewer
    /// and, past them, goes on from the board's position without the log.
    pub held_messages: usize,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            tracker: dgt_core::Config::default(),
            link: LinkTiming::default(),
            clock_pause_ms: CLOCK_PAUSE_ALERT_MS,
            board_idle_ms: BOARD_IDLE_ALERT_MS,
            line_capacity: 0,
            held_messages: crate::reconcile::HELD_MAX,
        }
    }
}

/// A journaled game to go on with ([`BoardSession::resume`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SavedGame {
    /// The start position when not the standard one.
    pub start_fen: Option<String>,
    /// Confirmed plies: UCI, `%clk`, `%emt`.
    pub plies: Vec<(String, Option<u32>, Option<u32>)>,
    /// The board was rotated.
    pub flipped: bool,
    /// The result, when the game is over.
    pub result: Option<GameResult>,
    /// White's clock display, as [`Effect::ClockSide`] told it (`None`: not known yet, or
    /// a journal written before it was kept: the sides are then learned from the lever).
    pub white_clock: Option<ClockSide>,
}

/// The confirmed line as the caller was told it.
#[derive(Clone, Debug)]
pub(crate) struct GameLine {
    pub(crate) start_fen: Option<String>,
    pub(crate) plies: Vec<ResumePly>,
    pub(crate) result: Option<GameResult>,
    /// White's clock display, once told.
    pub(crate) white_clock: Option<ClockSide>,
}

impl GameLine {
    pub(crate) fn new(start_fen: Option<String>) -> GameLine {
        GameLine { start_fen, plies: Vec::new(), result: None, white_clock: None }
    }

    /// The start position and castling mode (the standard start when none is given).
    pub(crate) fn start(&self) -> Result<(Chess, CastlingMode), dgt_core::FenError> {
        match &self.start_fen {
            Some(fen) => position_from_fen(fen),
            None => Ok((Chess::default(), CastlingMode::Standard)),
        }
    }
}

/// One board's whole conversation and judgement. See the module docs.
#[derive(Debug)]
pub struct BoardSession {
    pub(crate) number: u32,
    serial: Option<String>,
    pub(crate) config: SessionConfig,
    link: Option<Link>,
    port: Option<String>,
    state: LinkState,
    pub(crate) tracker: Box<Tracker<PLIES>>,
    /// The confirmed line as told, once a game exists.
    pub(crate) game: Option<GameLine>,
    /// The previous game's plies, from when a new game replaced it until taken.
    finished: Option<Vec<ResumePly>>,
    /// The tracker's next `GameStarted` is the operator's new game, whose record exists.
    pub(crate) resuming: bool,
    /// The next game starts from this operator position.
    pub(crate) next_start_fen: Option<String>,
    pub(crate) flipped: bool,
    health: Health,
    /// A board whose port was lost, until it is reconciled.
    away: Option<Reconcile>,
    /// A game resumed after a restart whose clock has not been seen running yet (see
    /// [`BoardSession::press_unseen_at_restart`]).
    first_run_after_restart: bool,
    /// Added to the caller's time for the tracker, once a replay moved its time forward.
    shift: u64,
    noise: u64,
    /// The latest time the caller gave.
    latest_ms: u64,
    /// The last clock state of the batch being handled, sent after its moves.
    clock_to_send: Option<ClockState>,
    pub(crate) effects: VecDeque<Effect>,
    /// The raw boards read since the caller last took them, once it watches them (see
    /// [`BoardSession::watch_raw_boards`]).
    raw_boards: Option<RawBoards>,
}

/// How many raw boards wait for the caller at most; older ones are dropped first.
pub const RAW_BOARDS_KEPT: usize = 32;

/// The raw boards not yet taken, and the last one read.
#[derive(Debug)]
struct RawBoards {
    waiting: VecDeque<BoardDump>,
    last: Option<BoardDump>,
}

impl BoardSession {
    /// A board with no game yet, known by its number (for the operator's messages) and its
    /// serial number when known.
    pub fn new(number: u32, serial: Option<String>, config: SessionConfig) -> BoardSession {
        BoardSession {
            number,
            serial,
            config,
            link: None,
            port: None,
            state: LinkState::Offline,
            // Built in its allocation, not on the stack (see `Tracker::new`).
            tracker: Box::write(Box::new_uninit(), Tracker::new(config.tracker)),
            game: None,
            finished: None,
            resuming: false,
            next_start_fen: None,
            flipped: false,
            health: Health::new(config.clock_pause_ms, config.board_idle_ms),
            away: None,
            first_run_after_restart: false,
            shift: 0,
            noise: 0,
            latest_ms: 0,
            clock_to_send: None,
            effects: VecDeque::new(),
            raw_boards: None,
        }
    }

    /// The board number.
    pub fn number(&self) -> u32 {
        self.number
    }

    /// Renumbers the board (the number its alerts name): a relay box learns the number
    /// from its host after its session started.
    pub fn set_number(&mut self, number: u32) {
        self.number = number;
    }

    /// The serial number, once known.
    pub fn serial(&self) -> Option<&str> {
        self.serial.as_deref()
    }

    /// The connection state.
    pub fn link_state(&self) -> LinkState {
        self.state
    }

    /// The port the board is on, as the caller named it at [`BoardSession::attach`].
    pub fn port(&self) -> Option<&str> {
        self.port.as_deref()
    }

    /// True when the board is rotated (White at the connector's right).
    pub fn flipped(&self) -> bool {
        self.flipped
    }

    /// The battery charge last reported, percent.
    pub fn battery(&self) -> Option<u8> {
        self.health.battery
    }

    /// Bytes the decoder threw away since start.
    pub fn noise(&self) -> u64 {
        self.noise
    }

    /// The tracker, for queries (the live `Clock` tag, the board, the position).
    pub fn tracker(&self) -> &Tracker<PLIES> {
        &self.tracker
    }

    /// The confirmed plies of the game as told (what a journal of its effects holds).
    pub fn game_plies(&self) -> &[ResumePly] {
        self.game.as_ref().map_or(&[], |g| &g.plies)
    }

    /// The previous game's confirmed plies, once a new game replaced it; taken once (a
    /// relay box keeps them for a host that has not seen that game's end).
    pub fn take_finished_plies(&mut self) -> Option<Vec<ResumePly>> {
        self.finished.take()
    }

    /// A new game's line replaces the current one, whose plies are kept until taken.
    pub(crate) fn begin_line(&mut self, start_fen: Option<String>) {
        let line = GameLine::new(start_fen);
        self.finished = self.game.replace(line).map(|g| g.plies);
    }

    /// Keeps every raw board read from now on (each physical change, a piece in the air
    /// included) for [`BoardSession::take_raw_boards`]. Off by default: only a caller that
    /// shows the board as it stands (the host's EBoard API) pays for it.
    pub fn watch_raw_boards(&mut self) {
        if self.raw_boards.is_none() {
            self.raw_boards = Some(RawBoards { waiting: VecDeque::new(), last: None });
            self.note_raw_board();
        }
    }

    /// The raw boards read since the last call, oldest first (at most [`RAW_BOARDS_KEPT`]);
    /// none unless watched.
    pub fn take_raw_boards(&mut self) -> impl Iterator<Item = BoardDump> + '_ {
        self.raw_boards.iter_mut().flat_map(|r| r.waiting.drain(..))
    }

    /// The board as last read (a lifted piece's square is empty); `None` before the first
    /// dump.
    pub fn raw_board(&self) -> Option<BoardDump> {
        self.tracker.board_known().then(|| self.tracker.board())
    }

    /// Keeps the board as read now, when watched and changed.
    fn note_raw_board(&mut self) {
        let Some(raw) = self.raw_board() else { return };
        let Some(r) = &mut self.raw_boards else { return };
        if r.last != Some(raw) {
            r.last = Some(raw);
            if r.waiting.len() == RAW_BOARDS_KEPT {
                r.waiting.pop_front();
            }
            r.waiting.push_back(raw);
        }
    }

    /// The next thing to do, oldest first.
    pub fn next_effect(&mut self) -> Option<Effect> {
        self.effects.pop_front()
    }

    /// Every effect waiting, oldest first.
    pub fn drain_effects(&mut self) -> impl Iterator<Item = Effect> + '_ {
        self.effects.drain(..)
    }

    /// When [`BoardSession::poll`] should next be called.
    ///
    /// A deadline at `T` is handled by the first call after `T` (this returns `T + 1`), and
    /// bytes that arrive at `T` come before it: the order of one instant never depends on
    /// whether the caller noticed its timer or its bytes first.
    pub fn next_deadline(&self) -> u64 {
        let link = self.link.as_ref().and_then(Link::next_deadline);
        match link.into_iter().chain(self.own_deadline()).min() {
            Some(at) => at + 1,
            None => self.latest_ms + IDLE_POLL_MS,
        }
    }

    /// The session's own next deadline, beside the link's: the tracker's
    /// ([`Tracker::poll_at`], in the caller's time), the clock pause and idle board alerts',
    /// and the reconciliation's after an outage.
    fn own_deadline(&self) -> Option<u64> {
        let tracker = self.tracker.poll_at().map(|t| t.saturating_sub(self.shift));
        let away = self.away.as_ref().and_then(Reconcile::deadline).map(|t| t.saturating_sub(self.shift));
        let health = self.health.pause_deadline().into_iter().chain(self.health.idle_deadline());
        tracker.into_iter().chain(health).chain(away).min()
    }

    /// The tracker's time for the caller's `now`.
    pub(crate) fn t(&self, now: u64) -> u64 {
        now + self.shift
    }

    /// Goes on with a journaled game (after a restart of the program). An unfinished game
    /// goes on at once, as after an unplugged cable: the board is kept as the tracker would
    /// have seen it at the journal's last position, and the first reading once the board is
    /// attached is reconciled against it (see [`crate::reconcile`]): moves made while the
    /// program was down come from the board's event log, with the presses it logged, and a
    /// position its log does not explain is reconstructed and flagged to the operator, or
    /// reported as a mismatch. White's clock display, when the journal kept it, is given
    /// back to the tracker: a clock read in the middle of a game cannot tell it.
    pub fn resume(&mut self, now: u64, saved: &SavedGame) {
        let mut line = GameLine::new(saved.start_fen.clone());
        line.result = saved.result;
        line.white_clock = saved.white_clock;
        let mut bad = None;
        for (i, (uci, clk, emt)) in saved.plies.iter().enumerate() {
            match UciMove::from_ascii(uci.as_bytes()) {
                Ok(uci) => line.plies.push(ResumePly { uci, clk: *clk, emt: *emt }),
                Err(_) => {
                    bad = Some(format!("ply {}: {uci:?} is not a UCI move", i + 1));
                    break;
                }
            }
        }
        self.flipped = saved.flipped;
        let plies = saved.plies.len();
        self.game = Some(line);
        if let Some(why) = bad {
            self.resume_failed(plies, &why);
            return;
        }
        if saved.result.is_none() {
            self.restart_tracker(now);
            self.keep_resumed_board(now);
            if plies > 0 {
                // A game under way: a clock found stopped is a pause.
                self.health.moves_made();
            }
        }
        self.flush();
    }

    /// A resumed game's board: the journal's last position, in the board's orientation, as
    /// the tracker would have kept it when the port was lost.
    fn keep_resumed_board(&mut self, now: u64) {
        if self.tracker.state() != GameState::Active || self.link.is_some() {
            return;
        }
        let orientation = self.tracker.orientation();
        let mut kept = BoardDump::EMPTY;
        for (sq, piece) in self.tracker.position(View::Confirmed).board().iter() {
            kept.set(DgtSquare::from_square(sq, orientation), PieceCode::from_piece(piece));
        }
        self.away = Some(Reconcile::after_restart(kept).hold_at_most(self.config.held_messages));
        self.first_run_after_restart = true;
        let t = self.t(now);
        self.tracker.board_away(t);
    }

    /// The first reading of a resumed game's running clock, once the board is reconciled:
    /// when it runs for the opponent of the last ply's mover, that mover pressed (their
    /// clock stopped, the other one started) when nobody could see it: while the program
    /// was down, after the board's event log was read, or while the readings were held
    /// during the reconciliation. A press needs a reading before it to be seen, and a
    /// restarted tracker has none, so the ply is confirmed now, while the mover's stopped
    /// display still shows its `%clk`. Later presses are seen as usual.
    fn press_unseen_at_restart(&mut self, now: u64) {
        if !self.first_run_after_restart || self.away.is_some() {
            return;
        }
        if self.tracker.state() != GameState::Active {
            self.first_run_after_restart = false;
            return;
        }
        let Some(running) = self.tracker.clocks().running else { return };
        self.first_run_after_restart = false;
        let live = self.tracker.ply_count(View::Live);
        let last_mover = !self.tracker.position(View::Live).turn();
        if live > self.tracker.ply_count(View::Confirmed) && running != last_mover {
            crate::log::debug!(
                board = self.number,
                plies = live,
                "the last ply was pressed before the first reading"
            );
            let t = self.t(now);
            let mut events = Vec::new();
            self.tracker.confirm_plies(live, t, &mut |e| events.push(e));
            self.handle_events(now, events);
        }
    }

    /// A port identified as this board (its link past the handshake) at `now`; `port` names
    /// it for the operator. What the link received since is handled at once.
    pub fn attach(&mut self, now: u64, link: Link, port: &str) {
        self.catch_up(now);
        let back = self.state == LinkState::NotResponding;
        crate::log::info!(board = self.number, port, "board attached");
        if self.serial.is_none() {
            self.serial = link.serial().map(str::to_owned);
        }
        let mut link = link;
        if self.away.is_none() && self.game.is_none() {
            // The first look at a board with no game: one may be under way (see
            // `Reconcile::join`). It is the handshake's dump, taken as the port opened.
            self.away = Some(Reconcile::join().hold_at_most(self.config.held_messages));
        } else {
            link.skip_handshake_dump();
        }
        self.link = Some(link);
        self.port = Some(port.to_owned());
        self.set_state(LinkState::Active);
        let t = self.t(now);
        if let Some(a) = &mut self.away {
            a.attached(t);
        }
        if back {
            self.alert(Alert::new(
                AlertCode::BoardBack,
                AlertLevel::Info,
                format!("Board {} is back on {port}; the position is being reconciled.", self.number),
            ));
        }
        self.drain_link(now);
        self.flush();
    }

    /// Bytes read from the board's port at `now`. What was due by `now` runs first (an
    /// instant's deadlines come before its inputs, whichever the caller noticed first, and
    /// a caller busy with a flood of bytes still ticks the tracker).
    pub fn on_bytes(&mut self, now: u64, bytes: &[u8]) {
        self.catch_up(now);
        if let Some(link) = &mut self.link {
            link.on_bytes(now, bytes);
            self.drain_link(now);
        }
        self.flush();
    }

    /// Runs [`BoardSession::poll`] when a deadline is due by `now`.
    fn catch_up(&mut self, now: u64) {
        self.latest_ms = self.latest_ms.max(now);
        if now >= self.next_deadline() {
            self.poll(now);
        }
    }

    /// The port went away at `now` (end of file, an I/O error, the device removed).
    pub fn on_port_lost(&mut self, now: u64, reason: &str) {
        self.catch_up(now);
        if self.link.take().is_some() {
            self.lost(now, reason);
        }
        self.flush();
    }

    /// Runs what is due at `now`: the link's timers, the tracker's tick, the reconciliation's
    /// deadlines, the clock pause alert.
    pub fn poll(&mut self, now: u64) {
        self.latest_ms = self.latest_ms.max(now);
        // Deadlines before `now` only (see `next_deadline`).
        let before = now.saturating_sub(1);
        if let Some(link) = &mut self.link {
            link.poll(before);
            self.drain_link(now);
        }
        if self.own_deadline().is_some_and(|at| at < now) {
            self.tick(now);
        }
        self.flush();
    }

    fn tick(&mut self, now: u64) {
        let t = self.t(now);
        let mut events = Vec::new();
        self.tracker.tick(t, &mut |e| events.push(e));
        self.handle_events(now, events);
        let live = self.tracker.state() == GameState::Active;
        let mut alerts = Vec::new();
        self.health.check_pause(self.number, live, now, &mut alerts);
        self.health.check_idle(self.number, live, self.tracker.clocks().running, now, &mut alerts);
        self.alerts(alerts);
        if self.away.as_ref().is_some_and(|a| a.overdue(t)) {
            self.finish_away(now, None);
        } else if self.away.as_mut().is_some_and(|a| a.wants_dump(t)) {
            self.request_dump();
        }
    }

    /// Handles what the link reported.
    fn drain_link(&mut self, now: u64) {
        while let Some(ev) = self.link.as_mut().and_then(Link::next_event) {
            self.link_event(now, ev);
        }
    }

    fn link_event(&mut self, now: u64, ev: LinkEvent) {
        match ev {
            LinkEvent::Identified { serial, version } => {
                crate::log::debug!(board = self.number, %serial, ?version, "identified");
            }
            LinkEvent::Board(msg) => self.board_message(now, msg),
            LinkEvent::ClockFound { version } => {
                crate::log::info!(board = self.number, ?version, "clock found");
                self.health.clock_found();
            }
            LinkEvent::ClockCommandFailed(cmd) => self.alert(Alert::new(
                AlertCode::ClockCommand,
                AlertLevel::Warning,
                format!("Board {}: the clock did not acknowledge {cmd:?}.", self.number),
            )),
            LinkEvent::Battery { percent, charging } => {
                crate::log::debug!(board = self.number, percent, charging, "battery");
                let mut alerts = Vec::new();
                if self.health.battery(self.number, percent, charging, &mut alerts) {
                    self.effects.push_back(Effect::Battery(percent));
                }
                self.alerts(alerts);
            }
            LinkEvent::EventLog(log) => {
                if self.away.as_ref().is_some_and(Reconcile::reading_log) {
                    self.finish_away(now, Some(&log));
                } else {
                    crate::log::debug!(board = self.number, "event log not asked for; ignored");
                }
            }
            LinkEvent::Noise(n) => {
                self.noise += n as u64;
                crate::log::debug!(board = self.number, bytes = n, total = self.noise, "line noise");
            }
            LinkEvent::Lost { reason } => {
                self.link = None;
                self.lost(now, &reason);
            }
        }
    }

    fn board_message(&mut self, now: u64, msg: Message<'static>) {
        let t = self.t(now);
        let mut alerts = Vec::new();
        match &msg {
            Message::Bwtime(dgt_protocol::Bwtime::Times(times)) => {
                self.health.clock_reading(self.number, times, &mut alerts);
            }
            Message::FieldUpdate(_) => self.health.board_changed(self.number, now, &mut alerts),
            Message::BoardDump(d) if *d != self.tracker.board() => {
                self.health.board_changed(self.number, now, &mut alerts)
            }
            _ => {}
        }
        self.alerts(alerts);
        let mut events = Vec::new();
        let tracker = &self.tracker;
        match self.away.as_mut().map(|a| a.intake(msg, t, |d| reconcile::needs_log(tracker, d))) {
            None => self.tracker.feed(&msg, t, &mut |e| events.push(e)),
            Some(Intake::Feed(msgs)) => {
                crate::log::debug!(board = self.number, "the board is as it was before the port was lost");
                self.away = None;
                for (at, m) in msgs {
                    self.tracker.feed(&m, at, &mut |e| events.push(e));
                }
            }
            Some(Intake::Held) => {}
            Some(Intake::AskLog) => self.ask_event_log(now),
            Some(Intake::Overflow) => self.finish_away(now, None),
        }
        self.handle_events(now, events);
        self.note_raw_board();
        self.press_unseen_at_restart(now);
    }

    /// The link is gone: keep the board as the tracker saw it, tell the operator.
    fn lost(&mut self, now: u64, reason: &str) {
        self.keep_board_while_away(now);
        self.health.board_away();
        self.set_state(LinkState::NotResponding);
        self.alert(Alert::new(
            AlertCode::NotResponding,
            AlertLevel::Error,
            format!(
                "Board {} ({}) is not responding: {reason}. Check its cable and power; the relay reconnects by \
                 itself.",
                self.number,
                self.serial.as_deref().unwrap_or("unknown serial")
            ),
        ));
    }

    /// The port was lost: keep the board as the tracker saw it (see [`crate::reconcile`]).
    /// A board lost again before it was reconciled is first reconciled without its log.
    fn keep_board_while_away(&mut self, now: u64) {
        match self.away.take().map(Reconcile::lost) {
            Some(AfterLoss::Wait(a)) => {
                crate::log::info!(
                    board = self.number,
                    "lost again before it was reconciled; keeping the older board"
                );
                self.away = Some(a);
                return;
            }
            Some(AfterLoss::Replay(outcome)) => self.replay_away(now, &outcome, None),
            None => {}
        }
        if self.tracker.state() == GameState::Active && self.tracker.board_known() {
            self.away = Some(Reconcile::new(self.tracker.board()).hold_at_most(self.config.held_messages));
        }
        // Nothing is decided by time until the board is heard again.
        let t = self.t(now);
        self.tracker.board_away(t);
    }

    /// The board changed while it was away: ask for its event log.
    fn ask_event_log(&mut self, now: u64) {
        if self.link.as_mut().is_some_and(Link::request_event_log) {
            crate::log::info!(
                board = self.number,
                "the board changed while it was away: reading its event log"
            );
        } else {
            self.finish_away(now, None);
        }
    }

    /// Ends the reconciliation of a board that was away: replays what its event log shows
    /// (when it came and reaches back to the kept board), then what the board sent since it
    /// came back, and asks for a fresh dump.
    fn finish_away(&mut self, now: u64, log: Option<&[EeEvent]>) {
        let Some(away) = self.away.take() else { return };
        let outcome = away.finish(log);
        self.replay_away(now, &outcome, log);
        self.press_unseen_at_restart(now);
    }

    /// Feeds the tracker what a reconciliation ends with (see [`reconcile::replay`]).
    fn replay_away(&mut self, now: u64, outcome: &reconcile::Outcome, log: Option<&[EeEvent]>) {
        let n = self.number;
        if let Some(changes) = &outcome.steps {
            crate::log::trace!(board = n, steps = ?changes.steps, presses = ?changes.logged, "the log's changes");
        }
        match (&outcome.steps, log) {
            (Some(changes), _) => crate::log::info!(
                board = n,
                changes = changes.steps.len(),
                "replayed the square changes from the board's event log"
            ),
            (None, Some(log)) => crate::log::warn!(
                board = n,
                events = log.len(),
                "the board's event log does not show the moves made while it was away"
            ),
            (None, None) if outcome.held.is_empty() => {}
            (None, None) => {
                crate::log::warn!(board = n, "no event log from the board; going on from its position")
            }
        }
        let start = self.t(now);
        let (end, events) = reconcile::replay(&mut self.tracker, outcome, start);
        // The tracker's time went ahead of the caller's: keep it monotonic from here on.
        self.shift += end.saturating_sub(start);
        let first_new = events
            .iter()
            .filter_map(|e| match e {
                Event::MoveProvisional(m) => Some(m.ply),
                _ => None,
            })
            .min();
        self.handle_events(now, events);
        if outcome.steps.is_none()
            && let Some(ply) = first_new
        {
            self.reconstructed_alert(outcome.need, ply);
        }
        // The board may have moved on since.
        self.request_dump();
    }

    /// Moves made while the board was away came from its position alone (no event log
    /// showed them): the operator is told where to check, and how sure the order is.
    fn reconstructed_alert(&mut self, need: LogNeed, ply: u16) {
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
            LogNeed::No | LogNeed::Unexplained | LogNeed::UnderWay => return,
        };
        self.alert(Alert::new(
            AlertCode::MovesReconstructed,
            level,
            format!(
                "Board {n}: moves were made while the board was disconnected and its memory did not show them; \
                 {how}. Check the moves from ply {ply} against the scoresheets and correct them if needed."
            ),
        ));
    }

    pub(crate) fn request_dump(&mut self) {
        if let Some(link) = &mut self.link {
            link.request_dump();
        }
    }

    fn set_state(&mut self, state: LinkState) {
        if self.state != state {
            self.state = state;
            self.effects.push_back(Effect::Link(state));
        }
    }

    pub(crate) fn alert(&mut self, alert: Alert) {
        let n = self.number;
        let code = alert.code.as_str();
        match alert.level {
            AlertLevel::Error => crate::log::error!(board = n, code, "{}", alert.message),
            AlertLevel::Warning => crate::log::warn!(board = n, code, "{}", alert.message),
            AlertLevel::Info => crate::log::info!(board = n, code, "{}", alert.message),
        }
        self.effects.push_back(Effect::Alert(alert));
    }

    fn alerts(&mut self, alerts: Vec<Alert>) {
        for a in alerts {
            self.alert(a);
        }
    }

    /// Bytes the link wants written become an effect.
    pub(crate) fn flush(&mut self) {
        if let Some(link) = &mut self.link
            && link.has_output()
        {
            self.effects.push_back(Effect::Write(link.take_output()));
        }
    }

    /// Restarts the tracker with the game line as told ([`Tracker::resume`]): ply numbers go
    /// on, and a takeback may reach moves made before the restart.
    pub(crate) fn restart_tracker(&mut self, now: u64) {
        let t = self.t(now);
        let orientation = if self.flipped { Orientation::Rotated } else { Orientation::Normal };
        let Some(g) = &self.game else { return };
        self.tracker.reset(self.config.tracker);
        self.resuming = false;
        let mut events = Vec::new();
        let result = match g.start() {
            Ok((start, mode)) => self
                .tracker
                .resume(start, mode, orientation, g.plies.iter().copied(), t, &mut |e| events.push(e))
                .map_err(|e| e.to_string()),
            Err(e) => Err(format!("its start position: {e}")),
        };
        let over = g.result;
        let white_clock = g.white_clock;
        match result {
            Ok(()) => {
                if let Some(side) = white_clock {
                    self.tracker.set_white_clock_side(side);
                }
            }
            Err(e) => {
                let plies = g.plies.len();
                self.resume_failed(plies, &e);
            }
        }
        self.end_if_over(over, &mut events);
        self.handle_events(now, events);
        self.request_dump();
    }

    /// A restarted tracker follows the board again; a game whose line has a result stays
    /// over (its `GameEnded` is the one already told).
    pub(crate) fn end_if_over(&mut self, result: Option<GameResult>, events: &mut Vec<Event>) {
        if let Some(r) = result {
            self.tracker.declare_result(r, &mut |e| events.push(e));
        }
    }

    fn resume_failed(&mut self, plies: usize, why: &str) {
        let n = self.number;
        self.alert(Alert::new(
            AlertCode::Resume,
            AlertLevel::Error,
            format!(
                "Board {n}: the game ({plies} plies) cannot be resumed from its journal: {why}. Its moves are kept; \
                 correct them or start a new game."
            ),
        ));
    }

    /// Turns the tracker's events into effects, keeping the game line and the health in
    /// step; the batch's last clock change goes out after its moves.
    pub(crate) fn handle_events(&mut self, now: u64, events: Vec<Event>) {
        for e in events {
            self.handle_event(now, e);
        }
        if let Some(c) = self.clock_to_send.take() {
            self.effects.push_back(Effect::Clock(c));
        }
    }

    fn handle_event(&mut self, now: u64, e: Event) {
        match e {
            Event::GameStarted { orientation, kind } => {
                self.health.reset_pause();
                self.flipped = orientation == Orientation::Rotated;
                if self.resuming {
                    self.resuming = false;
                    crate::log::info!(board = self.number, "game resumed");
                    let start_fen = self.game.as_ref().and_then(|g| g.start_fen.clone());
                    self.effects.push_back(Effect::GameStarted {
                        orientation,
                        kind,
                        start_fen,
                        new_record: false,
                    });
                    return;
                }
                let start_fen = match kind {
                    StartKind::Standard => None,
                    StartKind::Chess960(_) | StartKind::Fen => {
                        Some(self.next_start_fen.take().unwrap_or_else(|| {
                            dgt_core::FenText::of(self.tracker.start_position()).to_string()
                        }))
                    }
                };
                self.next_start_fen = None;
                self.begin_line(start_fen.clone());
                self.effects.push_back(Effect::GameStarted {
                    orientation,
                    kind,
                    start_fen,
                    new_record: true,
                });
            }
            Event::MoveProvisional(info) => {
                self.effects.push_back(Effect::Move { state: MoveState::Provisional, info });
            }
            Event::MoveConfirmed(info) => {
                self.health.moves_made();
                if self.game.is_none() {
                    let orientation = if self.flipped { Orientation::Rotated } else { Orientation::Normal };
                    self.begin_line(None);
                    self.effects.push_back(Effect::GameStarted {
                        orientation,
                        kind: StartKind::Standard,
                        start_fen: None,
                        new_record: true,
                    });
                }
                self.note_clock_side();
                let first = self.config.line_capacity;
                if let Some(g) = &mut self.game {
                    g.plies.truncate(usize::from(info.ply).saturating_sub(1));
                    if g.plies.len() == g.plies.capacity() {
                        // With a configured room: that room with the first ply (by then the
                        // previous game's line has been handed over and freed, and its block is
                        // there to take), then half as much again at a time. Without: doubling.
                        // Never past what the tracker holds.
                        let len = g.plies.len();
                        let room = match (len, first) {
                            (0, f) if f > 0 => f,
                            (_, f) if f > 0 => (len + f / 2).clamp(len + 1, PLIES.max(len + 1)),
                            _ => (len * 2).clamp(8, PLIES.max(len + 1)),
                        };
                        g.plies.reserve_exact(room - len);
                    }
                    g.plies.push(ResumePly { uci: info.uci, clk: info.clk, emt: info.emt });
                }
                crate::log::debug!(board = self.number, ply = info.ply, san = %info.san, "move confirmed");
                self.effects.push_back(Effect::Move { state: MoveState::Confirmed, info });
            }
            Event::MoveRetracted { ply, fen } => self.effects.push_back(Effect::Retracted { ply, fen }),
            Event::Takeback { to_ply, fen } => {
                if let Some(g) = &mut self.game {
                    g.plies.truncate(usize::from(to_ply));
                }
                self.effects.push_back(Effect::TakenBack { to_ply, fen });
            }
            Event::Clock(c) => {
                let live = self.tracker.state() == GameState::Active;
                let mut alerts = Vec::new();
                self.health.clock_run_state(self.number, c.running.is_some(), live, now, &mut alerts);
                // A clock that starts running starts the idle count (and its deadline): a
                // still board sends nothing that would.
                self.health.check_idle(self.number, live, c.running, now, &mut alerts);
                self.alerts(alerts);
                self.clock_to_send = Some(c);
            }
            Event::PositionMismatch { squares } => {
                let list: Vec<String> = squares.into_iter().map(|s| s.to_string()).collect();
                let mut alert = Alert::new(
                    AlertCode::PositionMismatch,
                    AlertLevel::Warning,
                    format!(
                        "Board {}: the position on the board cannot be explained by legal moves; check squares {}.",
                        self.number,
                        list.join(", ")
                    ),
                );
                alert.squares = squares.into_iter().collect();
                self.alert(alert);
            }
            Event::PositionRecovered => self.alert(Alert::new(
                AlertCode::PositionRecovered,
                AlertLevel::Info,
                format!("Board {}: position explained again.", self.number),
            )),
            Event::GameEnded { result, reason } => {
                self.health.reset_pause();
                if let Some(g) = &mut self.game {
                    if g.result == Some(result) {
                        return;
                    }
                    g.result = Some(result);
                }
                self.effects.push_back(Effect::GameEnded { result, reason });
                if matches!(reason, EndReason::MagicPiece | EndReason::KingsInCentre) {
                    let alert = self.result_from_board(result, reason);
                    self.alert(alert);
                }
            }
            Event::RequestBoardDump => self.request_dump(),
            Event::MoveOrderUnknown { ply } => self.alert(Alert::new(
                AlertCode::MoveOrderUnknown,
                AlertLevel::Warning,
                format!(
                    "Board {}: the board reached its position by more than one order of moves and did not show \
                     which; the moves from ply {ply} are kept unconfirmed until the board tells them apart. Check \
                     them against the scoresheets and enter them if needed.",
                    self.number
                ),
            )),
            Event::CapacityFull => self.alert(Alert::new(
                AlertCode::Capacity,
                AlertLevel::Error,
                format!(
                    "Board {}: the game reached {PLIES} plies; later moves are not recorded.",
                    self.number
                ),
            )),
        }
    }

    /// Tells the caller White's clock display once the tracker is certain of it, before the
    /// move confirmed with it: a journal that has the move has the side too.
    fn note_clock_side(&mut self) {
        let Some(side) = self.tracker.white_clock_side() else { return };
        if let Some(g) = &mut self.game
            && g.white_clock != Some(side)
        {
            g.white_clock = Some(side);
            self.effects.push_back(Effect::ClockSide(side));
        }
    }

    /// The alert for a game ended by a signal on the board: what the board showed (the
    /// squares of the magic piece or the kings) and how to undo it when it was a misreading
    /// (a corrupted byte on the line, a knocked king).
    fn result_from_board(&self, result: GameResult, reason: EndReason) -> Alert {
        let n = self.number;
        let dump = self.tracker.board();
        let orientation = self.tracker.orientation();
        let mut squares = Vec::new();
        let mut shown = Vec::new();
        for sq in dgt_protocol::DgtSquare::ALL {
            let code = dump.piece(sq);
            let what = match (reason, code) {
                (EndReason::MagicPiece, c) if c.is_magic() => format!("a magic piece ({:02X})", c.code()),
                (EndReason::KingsInCentre, dgt_protocol::PieceCode::WhiteKing) => "the white king".to_owned(),
                (EndReason::KingsInCentre, dgt_protocol::PieceCode::BlackKing) => "the black king".to_owned(),
                _ => continue,
            };
            let square = sq.to_square(orientation);
            squares.push(square);
            shown.push(format!("{what} on {square}"));
        }
        let quiet = self.tracker.config().timing.quiet_ms;
        let mut alert = Alert::new(
            AlertCode::ResultFromBoard,
            AlertLevel::Warning,
            format!(
                "Board {n}: the board showed {} for {:.1} s, so the game ended {result}. If that was not meant \
                 (a misread square, a knocked piece), clear the result: in the console, open board {n}, choose \
                 \"no result (clear)\" and press Set result; the game then goes on from its last confirmed move.",
                shown.join(" and "),
                f64::from(quiet) / 1000.0,
            ),
        );
        alert.squares = squares;
        alert
    }

    /// The operator ended the game (`Some`) or cleared its result (`None`).
    pub(crate) fn operator_result(&mut self, now: u64, ruling: Option<Ruling>) {
        match ruling {
            Some(r) => {
                let mut events = Vec::new();
                self.tracker.declare(r, &mut |e| events.push(e));
                let told = events.iter().any(|e| matches!(e, Event::GameEnded { .. }));
                self.handle_events(now, events);
                if !told && self.game.as_ref().is_some_and(|g| g.result != Some(r.result) || r.unplayed) {
                    // The tracker's game was over already (another result, or the same one
                    // now ruled unplayed): the operator's word stands.
                    if let Some(g) = &mut self.game {
                        g.result = Some(r.result);
                    }
                    self.effects.push_back(Effect::GameEnded { result: r.result, reason: r.reason() });
                }
            }
            None => {
                if let Some(g) = &mut self.game {
                    g.result = None;
                }
                self.effects.push_back(Effect::ResultCleared);
                self.restart_tracker(now);
            }
        }
    }

    /// The move information of the confirmed plies from `from` (1-based) on.
    pub(crate) fn confirmed_from(&self, from: usize) -> Vec<MoveInfo> {
        let mut out = Vec::new();
        self.tracker.for_each_move(dgt_core::View::Confirmed, |m| {
            if usize::from(m.ply) >= from {
                out.push(*m);
            }
        });
        out
    }
}
