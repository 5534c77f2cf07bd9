//! Where one board's session effects go: the journal first, then the PGN text (HTTP, the
//! files, the push) and the feed.
//!
//! A board source (the board task on a serial port; a bridge from a device running the
//! session itself) hands every [`Effect`] of its session to [`Outputs::apply`], with what
//! the session knows of the board ([`Source`]). Effects that touch the source itself (bytes
//! to write, a port to give back) are the source's; everything the host keeps or shows is
//! here.
//!
//! # Why the feed's changes of one instant go together
//! The changes one batch of effects makes to the feed (a confirmed move and the clock
//! pressed with it) are published together ([`Outputs::publish`], once the batch is
//! carried out): each websocket client then gets them with one write.
//!
//! # Why the journal comes first
//! A confirmed move is appended to the game's journal and fsynced, and only then published
//! to the feed and the PGN. If the append fails (disk full), the record waits in a queue,
//! the operator is alerted, and the append is retried every second and before any later
//! record, so records reach the disk in order and none is silently lost.

use std::collections::VecDeque;
use std::time::Duration;

use dgt_core::{ClockState, GameResult};
use dgt_session::{AlertCode, AlertLevel, Effect, LinkState, MoveState as SessionMove, SavedGame};
use shakmaty::Color;
use tokio::time::Instant;

use super::Services;
use super::command::AdminError;
use crate::feed::{AlertView, BoardStatus, BoardView, Change, ClockView, Delta, MoveState, MoveView, Side};
use crate::record::{GameHeader, GameRecord, JournalMove, Record};
use crate::store::Journal;
use crate::tournament::Pairing;

/// How often a running clock rewrites the PGN's `Clock` tag.
const PGN_CLOCK_REFRESH: Duration = Duration::from_secs(5);

/// What the board's session knows of the board behind the effects.
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    /// The e-board's serial number, once known.
    pub serial: Option<&'a str>,
    /// The port it is (or was last) on.
    pub port: Option<&'a str>,
    /// The link's state.
    pub link: LinkState,
    /// The board is used rotated.
    pub flipped: bool,
    /// The last battery charge reported, percent.
    pub battery: Option<u8>,
}

/// A board's connection state as the feed names it.
pub fn status_of(s: LinkState) -> BoardStatus {
    match s {
        LinkState::Offline => BoardStatus::Offline,
        LinkState::Active => BoardStatus::Active,
        LinkState::NotResponding => BoardStatus::NotResponding,
    }
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

/// The game being recorded, and its journal.
struct LiveGame {
    rec: GameRecord,
    journal: Option<Journal>,
}

/// One board's game record and its fan-out. See the module docs.
pub struct Outputs {
    number: u32,
    svc: Services,
    game: Option<LiveGame>,
    /// Records the disk refused, with the deltas that follow them: retried in order.
    pending: VecDeque<(Record, Option<Delta>)>,
    storage_failing: bool,
    /// The clocks as last read, while a clock is attached.
    clock: Option<ClockState>,
    /// When the PGN was last rewritten for a clock change.
    last_pgn_clock: Option<Instant>,
    /// The feed's changes of the effects carried out since the last [`Outputs::publish`].
    feed: Vec<Change>,
}

impl Outputs {
    /// Outputs for board `number`, with no game, or resuming `resume` (its latest journaled
    /// game): its journal is reopened, and what the session needs to resume it returned.
    pub fn new(number: u32, svc: Services, resume: Option<GameRecord>) -> (Outputs, Option<SavedGame>) {
        let mut out = Outputs {
            number,
            svc,
            game: None,
            pending: VecDeque::new(),
            storage_failing: false,
            clock: None,
            last_pgn_clock: None,
            feed: Vec::new(),
        };
        let saved = resume.map(|rec| {
            let journal = match out.svc.store.open_journal(rec.header.round, rec.header.board) {
                Ok(j) => Some(j),
                Err(e) => {
                    tracing::error!(board = number, error = %e, "cannot reopen journal");
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
            out.game = Some(LiveGame { rec, journal });
            saved
        });
        (out, saved)
    }

    /// The game being recorded, as journaled: what a relay box's session is brought up to.
    pub fn game_record(&self) -> Option<&GameRecord> {
        self.game.as_ref().map(|g| &g.rec)
    }

    /// The clocks as last read, while a clock is attached.
    pub fn clock(&self) -> Option<&ClockState> {
        self.clock.as_ref()
    }

    /// A game is being recorded.
    pub fn has_game(&self) -> bool {
        self.game.is_some()
    }

    /// Records wait for the disk.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Carries out one effect of the board's session (not `Write`: the source's own).
    pub async fn apply(&mut self, effect: Effect, src: &Source<'_>) {
        let n = self.number;
        match effect {
            Effect::Write(_) => {}
            Effect::Link(state) => self.publish_status(status_of(state), src),
            Effect::GameStarted { start_fen, new_record, .. } => {
                if new_record {
                    self.new_game(start_fen, src).await;
                } else {
                    tracing::info!(board = n, "game resumed");
                    self.publish_board(src);
                }
            }
            Effect::Move { state: SessionMove::Provisional, info } => {
                let mv = MoveView::from(&info);
                let fen = Some(info.fen.to_string());
                self.feed.push(Change::Delta(Delta::Move {
                    board: n,
                    state: MoveState::Provisional,
                    mv,
                    fen,
                }));
            }
            Effect::Move { state: SessionMove::Confirmed, info } => {
                if self.game.is_none() {
                    self.new_game(None, src).await;
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
                let from_ply = u32::from(ply);
                let fen = Some(fen.to_string());
                self.feed(Delta::Retract { board: n, state: MoveState::Provisional, from_ply, fen });
            }
            Effect::TakenBack { to_ply, fen } => {
                let from_ply = u32::from(to_ply) + 1;
                let fen = Some(fen.to_string());
                let delta = Delta::Retract { board: n, state: MoveState::Confirmed, from_ply, fen };
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
                if self.clock.as_ref().map(clock_view) != Some(v) {
                    self.clock = Some(c);
                    // A delta only when the clock changes state (see `Hub::clock`).
                    self.feed.push(Change::ClockReading { board: n, clock: v });
                    // The PGN's live `Clock` tag follows, at most every few seconds.
                    let now = self.svc.clock.now();
                    if self
                        .last_pgn_clock
                        .is_none_or(|t| now.saturating_duration_since(t) >= PGN_CLOCK_REFRESH)
                    {
                        self.last_pgn_clock = Some(now);
                        self.refresh_pgn();
                    }
                }
            }
            Effect::GameEnded { result, reason } => {
                let r = Some(result.as_pgn().to_owned());
                let termination = Some(reason.termination().to_owned());
                if self.game.as_ref().is_some_and(|g| g.rec.result == r && g.rec.termination == termination) {
                    return;
                }
                let delta = Delta::Result { board: n, result: r.clone(), termination: termination.clone() };
                self.commit(Record::Result { result: r, termination }, Some(delta)).await;
            }
            Effect::ResultCleared => {
                let delta = Delta::Result { board: n, result: None, termination: None };
                self.commit(Record::Result { result: None, termination: None }, Some(delta)).await;
            }
            Effect::Flipped { flipped } => {
                let mut view = self.view(src);
                view.flipped = flipped;
                self.commit(Record::Flip { flipped }, Some(Delta::Board { view: Box::new(view) })).await;
            }
            Effect::Battery(percent) => {
                // Only the charge changes: the feed's copy of the board, with the new charge.
                self.publish();
                let mut view = self.svc.hub.board(n).unwrap_or_else(|| self.view(src));
                view.battery = Some(percent);
                self.feed(Delta::Board { view: Box::new(view) });
            }
            Effect::Alert(a) => self.feed(Delta::Alert { board: Some(n), alert: AlertView::from(&a) }),
        }
    }

    /// The board as the feed shows it.
    fn view(&self, src: &Source<'_>) -> BoardView {
        let round = self
            .game
            .as_ref()
            .map_or_else(|| self.svc.tournament.lock().live_round(), |g| g.rec.header.round);
        let mut v = BoardView::new(self.number, round);
        v.serial = src.serial.map(str::to_owned);
        v.port = src.port.map(str::to_owned);
        v.status = status_of(src.link);
        v.flipped = src.flipped;
        v.clock = self.clock.as_ref().map(clock_view);
        v.battery = src.battery;
        match &self.game {
            Some(g) => {
                v.pairing = g.rec.header.pairing.clone();
                v.start_fen.clone_from(&g.rec.header.start_fen);
                v.fen = Some(g.rec.fen());
                v.live_fen.clone_from(&v.fen);
                v.moves = g.rec.moves.iter().map(MoveView::from).collect();
                v.result.clone_from(&g.rec.result);
                v.termination.clone_from(&g.rec.termination);
            }
            None => v.pairing = self.svc.tournament.lock().pairing(self.number),
        }
        if let Some(old) = self.svc.hub.board(self.number) {
            v.alerts = old.alerts;
        }
        v
    }

    /// A change for the feed, published with the others of its instant.
    fn feed(&mut self, delta: Delta) {
        self.feed.push(Change::Delta(delta));
    }

    /// Publishes the feed's changes made since the last call, together.
    pub fn publish(&mut self) {
        if !self.feed.is_empty() {
            self.svc.hub.publish_all(std::mem::take(&mut self.feed));
        }
    }

    /// Publishes the whole board (with the changes before it).
    pub fn publish_board(&mut self, src: &Source<'_>) {
        let view = self.view(src);
        self.feed(Delta::Board { view: Box::new(view) });
        self.publish();
    }

    fn publish_status(&mut self, status: BoardStatus, src: &Source<'_>) {
        self.feed(Delta::Status {
            board: self.number,
            status,
            serial: src.serial.map(str::to_owned),
            port: src.port.map(str::to_owned),
        });
    }

    /// Rewrites the game's PGN text (with the live `Clock` tag while it runs).
    pub fn refresh_pgn(&self) {
        if let Some(g) = &self.game {
            let live = if g.rec.result.is_none() { self.clock.as_ref() } else { None };
            let text = crate::pgn::write_game(&g.rec, live);
            self.svc.store.set_pgn(g.rec.header.round, g.rec.header.board, text);
        }
    }

    fn storage_alert(&mut self, level: AlertLevel, message: String) {
        match level {
            AlertLevel::Info => tracing::info!(board = self.number, "{message}"),
            _ => tracing::error!(board = self.number, "{message}"),
        }
        self.feed(Delta::Alert {
            board: Some(self.number),
            alert: AlertView { code: AlertCode::Storage, level, message, squares: Vec::new() },
        });
    }

    /// Tells the operator of a player's name that the PGN and the push replace: a name of
    /// one character (Lichess drops such names) is written `Board 4 White`.
    fn alert_replaced_names(&mut self, pairing: &Pairing) {
        for (side, player) in [("White", &pairing.white), ("Black", &pairing.black)] {
            let name = player.name.trim();
            if name.is_empty() {
                continue;
            }
            let shown = crate::pgn::player_name(name, self.number, side);
            if shown != name {
                let message = format!(
                    "Board {}: {side}'s name {name:?} is too short for Lichess (at least two characters), so the \
                     PGN and the push name the player {shown:?}. Give the full name in the pairings.",
                    self.number
                );
                tracing::warn!(board = self.number, "{message}");
                self.feed(Delta::Alert {
                    board: Some(self.number),
                    alert: AlertView {
                        code: AlertCode::Push,
                        level: AlertLevel::Warning,
                        message,
                        squares: Vec::new(),
                    },
                });
            }
        }
    }

    /// Journals a record (after any pending ones), then publishes its delta. Returns false
    /// when the record is left pending because the disk refused it.
    async fn commit(&mut self, rec: Record, delta: Option<Delta>) -> bool {
        self.pending.push_back((rec, delta));
        self.flush_pending().await
    }

    /// Journals the waiting records in order and publishes each once it is on disk;
    /// false when the disk still refuses them.
    pub async fn flush_pending(&mut self) -> bool {
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
            if let Some(g) = &mut self.game
                && !g.rec.apply(&rec)
            {
                tracing::warn!(
                    board = self.number,
                    ?rec,
                    "record does not fit the game; kept in the journal only"
                );
            }
            // The PGN text first, so HTTP is never behind the feed.
            self.refresh_pgn();
            if let Some(d) = delta {
                self.feed(d);
            }
        }
        if self.storage_failing {
            self.storage_failing = false;
            self.storage_alert(AlertLevel::Info, "The journal is written again.".into());
        }
        true
    }

    /// Starts a new game record in the first free slot for this board.
    async fn new_game(&mut self, start_fen: Option<String>, src: &Source<'_>) {
        let (event, mut round, pairing) = {
            let t = self.svc.tournament.lock();
            (t.event.clone(), t.live_round(), t.pairing(self.number))
        };
        // A game already holding moves in this round keeps its slot: use the next round.
        while self.svc.store.has_journal(round, self.number)
            && !self.game.as_ref().is_some_and(|g| g.rec.header.round == round && g.rec.moves.is_empty())
            && round < 9999
        {
            round += 1;
        }
        let (utc_date, utc_time) = crate::pgn::utc_date_time(self.svc.clock.unix_s());
        self.alert_replaced_names(&pairing);
        let rec = GameRecord::new(GameHeader {
            round,
            board: self.number,
            serial: src.serial.map(str::to_owned),
            event: event.name,
            site: event.site,
            time_control: event.time_control,
            utc_date,
            utc_time,
            pairing,
            start_fen,
            flipped: src.flipped,
        });
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
        self.game = Some(LiveGame { rec, journal });
        self.publish_board(src);
        self.refresh_pgn();
    }

    /// New players for the game in `round` (see [`super::AdminCommand::Pairing`]).
    pub async fn set_pairing(&mut self, round: u32, pairing: Pairing, src: &Source<'_>) {
        let Some(g) = &self.game else {
            self.publish_board(src);
            return;
        };
        if g.rec.moves.is_empty() && g.rec.header.round != round {
            // An empty game moves to the new round, and leaves nothing in the old one.
            let start = g.rec.header.start_fen.clone();
            let old = g.rec.header.round;
            self.new_game(start, src).await;
            if self.game.as_ref().is_some_and(|g| g.rec.header.round != old)
                && let Err(e) = self.svc.store.remove_game(old, self.number).await
            {
                tracing::warn!(board = self.number, round = old, error = %e, "cannot remove the empty game");
            }
        } else if g.rec.header.round == round && g.rec.header.pairing != pairing {
            self.alert_replaced_names(&pairing);
            let mut view = self.view(src);
            view.pairing = pairing.clone();
            self.commit(Record::Pairing { pairing }, Some(Delta::Board { view: Box::new(view) })).await;
        }
    }

    /// Ok when the last records reached the journal; the admin answer says otherwise.
    pub fn journaled(&self) -> Result<(), AdminError> {
        if self.pending.is_empty() {
            Ok(())
        } else {
            Err(AdminError::Storage(format!("{} record(s) wait", self.pending.len())))
        }
    }
}
