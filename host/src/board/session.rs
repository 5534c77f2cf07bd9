//! [`Session`]: where a board task's effects come from: its own session over a port, or a
//! session on a relay box across a bridge. The board task carries out both alike.

use dgt_bridge::convert::result_wire;
use dgt_bridge::{Action, GameKey, Up};
use dgt_core::{MoveInfo, Ruling};
use dgt_session::{AdminError, BoardSession, Effect, Link, LinkState, SavedGame};

use super::command::AdminError as BoardError;
use crate::bridge::remote::{Remote, RemoteError};

/// A board's session, here or on a relay box.
#[derive(Debug)]
pub enum Session {
    /// The session runs in the relay, on the board's port.
    Local(Box<BoardSession>),
    /// The session runs on a relay box; its effects cross a bridge.
    Remote(Box<Remote>),
}

impl From<RemoteError> for BoardError {
    fn from(e: RemoteError) -> Self {
        match e {
            RemoteError::Refused(r) => BoardError::Refused(r),
            RemoteError::Unreachable(why) => BoardError::Unreachable(why),
        }
    }
}

impl Session {
    /// The next effect, oldest first.
    pub fn next_effect(&mut self) -> Option<Effect> {
        match self {
            Session::Local(s) => s.next_effect(),
            Session::Remote(r) => r.next_effect(),
        }
    }

    /// When [`Session::poll`] should next be called.
    pub fn next_deadline(&self) -> u64 {
        match self {
            Session::Local(s) => s.next_deadline(),
            Session::Remote(r) => r.next_deadline(),
        }
    }

    /// Runs what is due at `now`.
    pub fn poll(&mut self, now: u64) {
        match self {
            Session::Local(s) => s.poll(now),
            Session::Remote(r) => r.poll(now),
        }
    }

    /// Bytes from the board's port (a local session only has one).
    pub fn on_bytes(&mut self, now: u64, bytes: &[u8]) {
        if let Session::Local(s) = self {
            s.on_bytes(now, bytes);
        }
    }

    /// The board's port was lost.
    pub fn on_port_lost(&mut self, now: u64, reason: &str) {
        if let Session::Local(s) = self {
            s.on_port_lost(now, reason);
        }
    }

    /// A port identified as this board. False for a board on a relay box: its session is
    /// the box's, and the port is given back.
    pub fn attach(&mut self, now: u64, link: Link, port: &str) -> bool {
        match self {
            Session::Local(s) => {
                s.attach(now, link, port);
                true
            }
            Session::Remote(_) => false,
        }
    }

    /// Goes on with a journaled game (a local session; a box keeps its own game, and the
    /// bridge's resume brings the journal up to it).
    pub fn resume(&mut self, now: u64, saved: &SavedGame) {
        if let Session::Local(s) = self {
            s.resume(now, saved);
        }
    }

    /// The next frame of a bridge (pending for ever for a local session).
    pub async fn recv(&mut self) -> Option<Up> {
        match self {
            Session::Local(_) => std::future::pending().await,
            Session::Remote(r) => r.recv().await,
        }
    }

    /// A frame from the bridge (`None`: lost).
    pub fn take(&mut self, up: Option<Up>) {
        if let Session::Remote(r) = self {
            r.take(up);
        }
    }

    /// The board task applied the effects it was handed (see [`Remote::applied`]).
    pub fn applied(&mut self, key: Option<GameKey>, on_disk: bool) {
        if let Session::Remote(r) = self {
            r.applied(key, on_disk);
        }
    }

    /// Keeps every raw board read from now on (a local session; a relay box sends none).
    pub fn watch_raw_boards(&mut self) {
        if let Session::Local(s) = self {
            s.watch_raw_boards();
        }
    }

    /// The raw boards read since the last call, oldest first.
    pub fn take_raw_boards(&mut self) -> Vec<dgt_protocol::BoardDump> {
        match self {
            Session::Local(s) => s.take_raw_boards().collect(),
            Session::Remote(_) => Vec::new(),
        }
    }

    /// The serial number, once known.
    pub fn serial(&self) -> Option<&str> {
        match self {
            Session::Local(s) => s.serial(),
            Session::Remote(r) => r.serial(),
        }
    }

    /// The port (or the bridge) the board is on.
    pub fn port(&self) -> Option<&str> {
        match self {
            Session::Local(s) => s.port(),
            Session::Remote(r) => Some(r.path()),
        }
    }

    /// The connection state.
    pub fn link_state(&self) -> LinkState {
        match self {
            Session::Local(s) => s.link_state(),
            Session::Remote(r) => r.link_state(),
        }
    }

    /// True when the board is rotated.
    pub fn flipped(&self) -> bool {
        match self {
            Session::Local(s) => s.flipped(),
            Session::Remote(r) => r.flipped(),
        }
    }

    /// The battery charge last reported.
    pub fn battery(&self) -> Option<u8> {
        match self {
            Session::Local(s) => s.battery(),
            Session::Remote(r) => r.battery(),
        }
    }

    /// The operator rules the game (a result, or a forfeit) or clears its result.
    pub async fn set_result(&mut self, now: u64, ruling: Option<Ruling>) -> Result<(), BoardError> {
        let action = match ruling {
            Some(r) if r.unplayed => Action::SetUnplayed(result_wire(r.result)),
            r => Action::SetResult(r.map(|r| result_wire(r.result))),
        };
        match self {
            Session::Local(s) => Ok(s.set_ruling(now, ruling)?),
            Session::Remote(r) => Ok(r.act(action).await.map(drop)?),
        }
    }

    /// The operator turns the board.
    pub async fn flip(&mut self, now: u64) -> Result<(), BoardError> {
        match self {
            Session::Local(s) => Ok(s.flip(now).map(drop)?),
            Session::Remote(r) => Ok(r.act(Action::Flip).await.map(drop)?),
        }
    }

    /// The operator starts a new game.
    pub async fn new_game(&mut self, now: u64, fen: Option<&str>) -> Result<(), BoardError> {
        match self {
            Session::Local(s) => Ok(s.new_game(now, fen)?),
            Session::Remote(r) => {
                Ok(r.act(Action::NewGame { fen: fen.map(str::to_owned) }).await.map(drop)?)
            }
        }
    }

    /// The operator corrects moves.
    pub async fn correct(&mut self, now: u64, from_ply: usize, moves: &[String]) -> Result<(), BoardError> {
        match self {
            Session::Local(s) => Ok(s.correct(now, from_ply, moves)?),
            Session::Remote(r) => {
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
    ) -> Result<Vec<MoveInfo>, BoardError> {
        match self {
            Session::Local(s) => Ok(s.check_correction(now, from_ply, moves)?),
            Session::Remote(r) => {
                let from_ply = u16::try_from(from_ply)
                    .map_err(|_| AdminError::FromPly { max: usize::from(u16::MAX) })?;
                Ok(r.check_correction(from_ply, moves.to_vec()).await?)
            }
        }
    }
}
