//! What a board session asks its caller to do, in order: write bytes, record and publish
//! what happened to the game, tell the operator.

use alloc::{string::String, vec::Vec};
use dgt_core::{ClockState, EndReason, FenText, GameResult, MoveInfo, StartKind};
use dgt_protocol::{ClockSide, Orientation};

use crate::alert::Alert;

/// A board's connection, as the operator sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkState {
    /// Known (from a journal) but not heard since start.
    Offline,
    /// Handshake done; events flow.
    Active,
    /// Silence or a lost port: the caller is reopening it.
    NotResponding,
}

/// Whether a move may still change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoveState {
    /// Shown on the board, not yet certain; may be retracted. Never in a PGN.
    Provisional,
    /// Certain: journal it, then publish it.
    Confirmed,
}

/// One thing for the caller to do, in the order the session decided it.
///
/// The caller journals the game effects (`GameStarted` with `new_record`, `ClockSide`,
/// confirmed `Move`s, `TakenBack`, `GameEnded`, `ResultCleared`, `Flipped`) before it
/// publishes them, so a crash never shows a move it did not keep, and gives them back in a
/// [`crate::SavedGame`] when it resumes the game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Bytes to write to the board's port.
    Write(Vec<u8>),
    /// The connection changed.
    Link(LinkState),
    /// A game started.
    GameStarted {
        /// How the board is set up.
        orientation: Orientation,
        /// Standard, Chess960 or an operator position.
        kind: StartKind,
        /// The start position when not the standard one.
        start_fen: Option<String>,
        /// A new game record is due. False when the game already has one: the position
        /// an operator set up for a new game (which opened its record) now stands on the
        /// board.
        new_record: bool,
    },
    /// A move, provisional or confirmed (a confirmed move at ply `p` replaces any move at
    /// `p` or later).
    Move {
        /// Provisional or confirmed.
        state: MoveState,
        /// The move, with the position after it and its clock values.
        info: MoveInfo,
    },
    /// The provisional move at `ply` (and any after it) is withdrawn.
    Retracted {
        /// The ply.
        ply: u16,
        /// The position the board is read at now.
        fen: FenText,
    },
    /// Confirmed moves after `to_ply` were taken back (on the board, or by a correction).
    TakenBack {
        /// Plies that remain.
        to_ply: u16,
        /// The position after them.
        fen: FenText,
    },
    /// White's clock display is certain for the rest of the game (told once per game,
    /// before the first move confirmed with it). Journal it: a game resumed after a restart
    /// needs it back ([`crate::SavedGame::white_clock`]), since a clock read in the middle
    /// of a game cannot tell which side is White's.
    ClockSide(ClockSide),
    /// The clocks changed (sent after the moves of the same reading).
    Clock(ClockState),
    /// The game ended, or the operator set its result.
    GameEnded {
        /// The result.
        result: GameResult,
        /// Why (the PGN `Termination` follows from it).
        reason: EndReason,
    },
    /// The operator cleared the result: the game goes on.
    ResultCleared,
    /// The operator turned the board's orientation.
    Flipped {
        /// Rotated (White at the connector's right).
        flipped: bool,
    },
    /// The board's battery charge changed (percent).
    Battery(u8),
    /// Tell the operator.
    Alert(Alert),
}
