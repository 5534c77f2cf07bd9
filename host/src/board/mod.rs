//! One board's task: the async shell around its [`dgt_session::BoardSession`] on a serial
//! port, or around a relay box's session across a bridge ([`crate::bridge`]).
//!
//! The task reads the board's port, hands the bytes and the time to the session, sleeps
//! until the session's next deadline or the next bytes, writes the bytes the session wants
//! written, and hands every other effect to the board's [`Outputs`] (the journal first,
//! then the PGN and the feed). All judgement (chess, clocks, outages, health) is the
//! session's. Another board source (a device running the session itself behind a bridge)
//! hands its effects to the same [`Outputs`].
//!
//! # Why a task per board number, not per port
//! Boards are identified by serial number. A board unplugged from one USB socket and
//! plugged into another comes back on a new port, which the registry gives to the same
//! task: the session, the game and the journal survive.

mod command;
mod outputs;
mod session;

use std::sync::Arc;
use std::time::Duration;

use dgt_session::{BoardSession, Effect, LinkState};

use crate::bridge::remote::{BridgeAttached, Remote};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

pub use command::{AdminCommand, AdminError, BoardInput, CheckedCorrection};
pub use outputs::{Outputs, Source, status_of};
pub use session::Session;

use crate::clock::Clock;
use crate::feed::{Hub, MoveView};
use crate::port::{Attached, PortIo};
use crate::record::GameRecord;
use crate::shutdown::Listener;
use crate::store::Store;
use crate::tournament::SharedTournament;

pub use dgt_session::PLIES;

/// Shared services every board uses.
#[derive(Clone, Debug)]
pub struct Services {
    /// The feed.
    pub hub: Arc<Hub>,
    /// The data folder.
    pub store: Arc<Store>,
    /// Event and pairings.
    pub tournament: SharedTournament,
    /// The relay's clock.
    pub clock: Clock,
    /// The sessions' settings.
    pub session: dgt_session::SessionConfig,
    /// Receives a copy of every effect a board's session emits, with its time (for
    /// diagnostics and for the test that the relay runs what the offline harness runs).
    pub tap: Option<mpsc::UnboundedSender<(u32, u64, Effect)>>,
    /// The EBoard API's boards, when it is on.
    pub eboards: Option<Arc<crate::eboard::Eboards>>,
}

/// The port the board is on.
struct Port {
    path: String,
    io: Box<dyn PortIo>,
    released: tokio::sync::oneshot::Sender<String>,
}

/// One board, on a serial port or a bridge. See the module docs.
pub struct BoardTask {
    number: u32,
    session: Session,
    clock: Clock,
    tap: Option<mpsc::UnboundedSender<(u32, u64, Effect)>>,
    port: Option<Port>,
    outputs: Outputs,
    /// The board for the EBoard API, when it is on.
    eboard: Option<crate::eboard::BoardFeed>,
}

/// What the session knows of the board, for its outputs.
fn source<'a>(session: &'a Session, port: &'a Option<Port>) -> Source<'a> {
    Source {
        serial: session.serial(),
        port: port.as_ref().map(|p| p.path.as_str()).or_else(|| session.port()),
        link: session.link_state(),
        flipped: session.flipped(),
        battery: session.battery(),
    }
}

impl BoardTask {
    /// A board with no game, or resuming `resume` (its latest journaled game).
    pub fn new(number: u32, serial: Option<String>, svc: Services, resume: Option<GameRecord>) -> BoardTask {
        let mut config = svc.session;
        config.tracker.time_control =
            svc.tournament.lock().event.time_control.as_deref().and_then(|t| t.parse().ok());
        let (clock, tap) = (svc.clock.clone(), svc.tap.clone());
        let eboard = svc.eboards.clone().map(|e| crate::eboard::BoardFeed::new(number, e));
        let (outputs, saved) = Outputs::new(number, svc, resume);
        let mut session = Session::Local(Box::new(BoardSession::new(number, serial, config)));
        if let Some(saved) = saved {
            session.resume(clock.ms(), &saved);
        }
        if eboard.is_some() {
            session.watch_raw_boards();
        }
        BoardTask { number, session, clock, tap, port: None, outputs, eboard }
    }

    fn now(&self) -> u64 {
        self.clock.ms()
    }

    /// Runs the board until shutdown (or until every sender is gone), then flushes.
    pub async fn run(mut self, mut input: mpsc::Receiver<BoardInput>, mut stop: Listener) {
        self.outputs.publish_board(&source(&self.session, &self.port));
        self.outputs.refresh_pgn();
        self.apply_effects().await;
        let mut retry = tokio::time::interval(Duration::from_secs(1));
        let mut buf = [0u8; 512];
        loop {
            let deadline = self.clock.at(self.session.next_deadline());
            // Biased, in the order the offline harness handles one instant: the same bytes
            // at the same times give the same effects.
            tokio::select! {
                biased;
                _ = stop.wait() => break,
                msg = input.recv() => match msg {
                    None => break,
                    Some(BoardInput::Attach(a)) => self.attach(*a),
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
                _ = retry.tick(), if self.outputs.has_pending() => {
                    self.outputs.flush_pending().await;
                }
            }
            self.apply_effects().await;
        }
        if self.outputs.has_pending() && !self.outputs.flush_pending().await {
            tracing::error!(board = self.number, "shutting down with journal records the disk refused");
        }
        self.outputs.publish();
        self.outputs.refresh_pgn();
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
        let remote = Remote::new(b, self.number, self.outputs.game_record(), now);
        self.session = Session::Remote(Box::new(remote));
    }

    /// The port is gone: the session keeps the board, the port task reopens it.
    fn port_lost(&mut self, now: u64, reason: String) {
        self.session.on_port_lost(now, &reason);
        if let Some(p) = self.port.take() {
            let _ = p.released.send(reason);
        }
    }

    /// Carries out what the session decided, until it has nothing more to say: bytes to
    /// the port here, everything else by the outputs.
    async fn apply_effects(&mut self) {
        while let Some(effect) = self.session.next_effect() {
            if let Some(tap) = &self.tap {
                let _ = tap.send((self.number, self.now(), effect.clone()));
            }
            match &effect {
                Effect::Write(bytes) => {
                    self.write(bytes).await;
                    continue;
                }
                Effect::Link(LinkState::NotResponding) => {
                    if let Some(p) = self.port.take() {
                        // The session gave up on a board that stopped answering.
                        let _ = p.released.send("the board stopped answering".into());
                    }
                }
                _ => {}
            }
            self.outputs.apply(effect, &source(&self.session, &self.port)).await;
        }
        // What the effects changed in the feed, together.
        self.outputs.publish();
        let key = self
            .outputs
            .game_record()
            .map(|g| dgt_bridge::GameKey { round: g.header.round, board: g.header.board });
        self.session.applied(key, !self.outputs.has_pending());
        self.publish_eboard();
    }

    /// Tells the EBoard API what changed on the board (when it is on).
    fn publish_eboard(&mut self) {
        let Some(feed) = &mut self.eboard else { return };
        let raw = self.session.take_raw_boards();
        let src = source(&self.session, &self.port);
        feed.update(&crate::eboard::Reading {
            serial: src.serial,
            port: src.port,
            link: src.link,
            battery: src.battery,
            flipped: src.flipped,
            raw: &raw,
            clock: self.outputs.clock(),
            game: self.outputs.game_record(),
            now_ms: self.clock.wall_ms(),
        });
    }

    async fn write(&mut self, bytes: &[u8]) {
        let Some(p) = &mut self.port else { return };
        let written = async {
            p.io.write_all(bytes).await?;
            p.io.flush().await
        };
        if let Err(e) = written.await {
            let now = self.now();
            self.port_lost(now, crate::port::gone_reason(&e));
        }
    }

    /// A correction as the session would make it, made on nothing: each corrected move
    /// with the position after it.
    async fn check_correction(
        &mut self,
        from_ply: u32,
        moves: &[String],
    ) -> Result<CheckedCorrection, AdminError> {
        if !self.outputs.has_game() {
            return Err(dgt_session::AdminError::NoGame.into());
        }
        let now = self.now();
        let checked = self.session.check_correction(now, from_ply as usize, moves).await?;
        Ok(checked.iter().map(|m| (MoveView::from(m), m.fen.to_string())).collect())
    }

    async fn admin(&mut self, cmd: AdminCommand) -> Result<(), AdminError> {
        tracing::info!(board = self.number, ?cmd, "admin command");
        let now = self.now();
        let needs_game =
            matches!(cmd, AdminCommand::Result(_) | AdminCommand::Flip | AdminCommand::Correct { .. });
        if needs_game && !self.outputs.has_game() {
            return Err(dgt_session::AdminError::NoGame.into());
        }
        match cmd {
            AdminCommand::Pairing { round, pairing } => {
                self.outputs.set_pairing(round, *pairing, &source(&self.session, &self.port)).await;
                self.outputs.publish();
                return self.outputs.journaled();
            }
            AdminCommand::Result(r) => {
                self.session.set_result(now, r).await?;
            }
            AdminCommand::Flip => {
                self.session.flip(now).await?;
            }
            AdminCommand::NewGame(fen) => {
                self.session.new_game(now, fen.as_deref()).await?;
            }
            AdminCommand::Correct { from_ply, moves } => {
                self.session.correct(now, from_ply as usize, &moves).await?;
            }
        }
        self.apply_effects().await;
        self.outputs.publish_board(&source(&self.session, &self.port));
        self.outputs.journaled()
    }
}

/// Reads the board's port; pending forever without one.
async fn read_port(port: &mut Option<Port>, buf: &mut [u8]) -> std::io::Result<usize> {
    match port {
        Some(p) => p.io.read(buf).await,
        None => std::future::pending().await,
    }
}
