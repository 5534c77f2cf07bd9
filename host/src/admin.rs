//! What an operator asks of a board, and why it can fail: each failure maps to one HTTP
//! status, so a storage fault is a 5xx and an operator's mistake a 4xx.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use dgt_core::GameResult;

use crate::config::Pairing;

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
    Result(Option<GameResult>),
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
    /// The request itself is invalid.
    #[error("{0}")]
    Invalid(String),
    /// The board's relay box is not connected, or did not answer. Nothing changed.
    #[error("{0}")]
    Unreachable(String),
    /// Done in memory, but the journal cannot be written: retried in the background.
    #[error("saved in memory only: the journal cannot be written ({0}); retried every second")]
    Storage(String),
}

impl AdminError {
    /// The HTTP status the error is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            AdminError::NoBoard => StatusCode::NOT_FOUND,
            AdminError::Gone | AdminError::Storage(_) | AdminError::Unreachable(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            AdminError::Refused(_) | AdminError::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
        }
    }
}

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        (self.status(), Json(serde_json::json!({ "error": self.to_string() }))).into_response()
    }
}
