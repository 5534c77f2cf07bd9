//! [`Source`]: where a board task's effects come from: its own session over a port, or a
//! session on a relay box across a bridge. The board task carries out both alike.

use dgt_bridge::convert::result_wire;
use dgt_bridge::{Action, GameKey, Up};
use dgt_core::{GameResult, MoveInfo};
use dgt_session::{AdminError, BoardSession, Effect, Link, LinkState, SavedGame};

use super::remote::{Remote, RemoteError};

/// A board's session, here or on a relay box.
#[derive(Debug)]
pub enum Source {
    /// The session runs in the relay, on the board's port.
    Local(Box<BoardSession>),
    /// The session runs on a relay box; its effects cross a bridge.
    Remote(Box<Remote>),
}

impl From<RemoteError> for crate::admin::AdminError {
    fn from(e: RemoteError) -> Self {
        match e {
            RemoteError::Refused(r) => crate::admin::AdminError::Refused(r),
            RemoteError::Unreachable(why) => crate::admin::AdminError::Unreachable(why),
        }
    }
}

impl Source {
    /// The next effect, oldest first.
    pub fn next_effect(&mut self) -> Option<Effect> {
        match self {
            Source::Local(s) => s.next_effect(),
            Source::Remote(r) => r.next_effect(),
        }
    }

    /// When [`Source::poll`] should next be called.
    pub fn next_deadline(&self) -> u64 {
        match self {
            Source::Local(s) => s.next_deadline(),
            Source::Remote(r) => r.next_deadline(),
        }
    }

    /// Runs what is due at `now`.
    pub fn poll(&mut self, now: u64) {
        match self {
            Source::Local(s) => s.poll(now),
            Source::Remote(r) => r.poll(now),
        }
    }

    /// Bytes from the board's port (a local session only has one).
    pub fn on_bytes(&mut self, now: u64, bytes: &[u8]) {
        if let Source::Local(s) = self {
            s.on_bytes(now, bytes);
        }
    }

    /// The board's port was lost.
    pub fn on_port_lost(&mut self, now: u64, reason: &str) {
        if let Source::Local(s) = self {
            s.on_port_lost(now, reason);
        }
    }

    /// A port identified as this board. False for a board on a relay box: its session is
    /// the box's, and the port is given back.
    pub fn attach(&mut self, now: u64, link: Link, port: &str) -> bool {
        match self {
            Source::Local(s) => {
                s.attach(now, link, port);
                true
            }
            Source::Remote(_) => false,
        }
    }

    /// Goes on with a journaled game (a local session; a box keeps its own game, and the
    /// bridge's resume brings the journal up to it).
    pub fn resume(&mut self, now: u64, saved: &SavedGame) {
        if let Source::Local(s) = self {
            s.resume(now, saved);
        }
    }

    /// The next frame of a bridge (pending for ever for a local session).
    pub async fn recv(&mut self) -> Option<Up> {
        match self {
            Source::Local(_) => std::future::pending().await,
            Source::Remote(r) => r.recv().await,
        }
    }

    /// A frame from the bridge (`None`: lost).
    pub fn take(&mut self, up: Option<Up>) {
        if let Source::Remote(r) = self {
            r.take(up);
        }
    }

    /// The board task applied the effects it was handed (see [`Remote::applied`]).
    pub fn applied(&mut self, key: Option<GameKey>, on_disk: bool) {
        if let Source::Remote(r) = self {
            r.applied(key, on_disk);
        }
    }

    /// The serial number, once known.
    pub fn serial(&self) -> Option<&str> {
        match self {
            Source::Local(s) => s.serial(),
            Source::Remote(r) => r.serial(),
        }
    }

    /// The port (or the bridge) the board is on.
    pub fn port(&self) -> Option<&str> {
        match self {
            Source::Local(s) => s.port(),
            Source::Remote(r) => Some(r.path()),
        }
    }

    /// The connection state.
    pub fn link_state(&self) -> LinkState {
        match self {
            Source::Local(s) => s.link_state(),
            Source::Remote(r) => r.link_state(),
        }
    }

    /// True when the board is rotated.
    pub fn flipped(&self) -> bool {
        match self {
            Source::Local(s) => s.flipped(),
            Source::Remote(r) => r.flipped(),
        }
    }

    /// The battery charge last reported.
    pub fn battery(&self) -> Option<u8> {
        match self {
            Source::Local(s) => s.battery(),
            Source::Remote(r) => r.battery(),
        }
    }

    /// The operator sets or clears the result.
    pub async fn set_result(
        &mut self,
        now: u64,
        result: Option<GameResult>,
    ) -> Result<(), crate::admin::AdminError> {
        match self {
            Source::Local(s) => Ok(s.set_result(now, result)?),
            Source::Remote(r) => Ok(r.act(Action::SetResult(result.map(result_wire))).await.map(drop)?),
        }
    }

    /// The operator turns the board.
    pub async fn flip(&mut self, now: u64) -> Result<(), crate::admin::AdminError> {
        match self {
            Source::Local(s) => Ok(s.flip(now).map(drop)?),
            Source::Remote(r) => Ok(r.act(Action::Flip).await.map(drop)?),
        }
    }

    /// The operator starts a new game.
    pub async fn new_game(&mut self, now: u64, fen: Option<&str>) -> Result<(), crate::admin::AdminError> {
        match self {
            Source::Local(s) => Ok(s.new_game(now, fen)?),
            Source::Remote(r) => {
                Ok(r.act(Action::NewGame { fen: fen.map(str::to_owned) }).await.map(drop)?)
            }
        }
    }

    /// The operator corrects moves.
    pub async fn correct(
        &mut self,
        now: u64,
        from_ply: usize,
        moves: &[String],
    ) -> Result<(), crate::admin::AdminError> {
        match self {
            Source::Local(s) => Ok(s.correct(now, from_ply, moves)?),
            Source::Remote(r) => {
                let from_ply = u16::try_from(from_ply)
                    .map_err(|_| AdminError::FromPly { max: usize::from(u16::MAX) })?;
                Ok(r.act(Action::Correct { from_ply, moves: moves.to_vec() }).await.map(drop)?)
            }
        }
    }

    /// A correction checked, not made.
    pub async fn check_correction(
        &mut self,
        now: u64,
        from_ply: usize,
        moves: &[String],
    ) -> Result<Vec<MoveInfo>, crate::admin::AdminError> {
        match self {
            Source::Local(s) => Ok(s.check_correction(now, from_ply, moves)?),
            Source::Remote(r) => {
                let from_ply = u16::try_from(from_ply)
                    .map_err(|_| AdminError::FromPly { max: usize::from(u16::MAX) })?;
                Ok(r.check_correction(from_ply, moves.to_vec()).await?)
            }
        }
    }
}
