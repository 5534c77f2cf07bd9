//! What a board task is told: a port to read, and an operator's commands, each with why it
//! can fail (the HTTP layer answers each failure with its status: a storage fault is a
//! 5xx, an operator's mistake a 4xx).

use dgt_core::Ruling;
use tokio::sync::oneshot;

use crate::feed::MoveView;
use crate::port::Attached;
use crate::tournament::Pairing;

/// What an operator asks of one board.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdminCommand {
    /// New players for the current game (or, if it has moves and `round` differs, for the
    /// next game).
    Pairing {
        /// The round the pairing is for.
        round: u32,
        /// Players (boxed: the other commands are small).
        pairing: Box<Pairing>,
    },
    /// Sets (or with `None` clears) the result: a game's result or a forfeit.
    Result(Option<Ruling>),
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

/// Why an admin command failed.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// No board with that number is known.
    #[error("no such board (it has not connected yet)")]
    NoBoard,
    /// The board's task has stopped.
    #[error("the board is shutting down")]
    Gone,
    /// The board refused: the command does not fit its game. Nothing changed.
    #[error("{0}")]
    Refused(#[from] dgt_session::AdminError),
    /// The board's relay box is not connected, or did not answer. Nothing changed.
    #[error("{0}")]
    Unreachable(String),
    /// Done in memory, but the journal cannot be written: retried in the background.
    #[error("saved in memory only: the journal cannot be written ({0}); retried every second")]
    Storage(String),
}

/// A correction as it would be made: each corrected move with the position after it.
pub type CheckedCorrection = Vec<(MoveView, String)>;

/// What a board task receives.
pub enum BoardInput {
    /// An identified port of this board: read and write it from now on (boxed: the
    /// other inputs are small).
    Attach(Box<Attached>),
    /// A relay box running this board's session: its effects come over the bridge now.
    Bridge(crate::bridge::remote::BridgeAttached),
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
        reply: oneshot::Sender<Result<CheckedCorrection, AdminError>>,
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
