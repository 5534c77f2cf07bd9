//! The game records the relay keeps: the journal's lines and the game they add up to.
//!
//! The storage's own model, below both the store (which writes and reads it) and the feed
//! (which maps it to the websocket's views), so that a change of the feed's JSON is never a
//! journal migration. The journal format on disk is fixed by these types' serde forms.

use serde::{Deserialize, Serialize};

use crate::tournament::Pairing;

/// The standard start position.
pub const START_FEN: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// Who, where, from which position: the journal's first record and the head of a
/// [`GameRecord`]. One type for both, so the two cannot drift apart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameHeader {
    /// Round.
    pub round: u32,
    /// Board number.
    pub board: u32,
    /// Serial number of the e-board that played it.
    pub serial: Option<String>,
    /// `Event`.
    pub event: String,
    /// `Site`.
    pub site: String,
    /// `TimeControl`.
    pub time_control: Option<String>,
    /// `UTCDate` (`yyyy.mm.dd`).
    pub utc_date: String,
    /// `UTCTime` (`hh:mm:ss`).
    pub utc_time: String,
    /// Players.
    pub pairing: Pairing,
    /// Start position when not standard.
    pub start_fen: Option<String>,
    /// Rotated board.
    pub flipped: bool,
}

/// One journal line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum Record {
    /// The first record: who, where, from which position.
    Game(GameHeader),
    /// A confirmed move.
    Move(JournalMove),
    /// Confirmed moves from `from_ply` on are withdrawn (takeback, correction).
    Takeback {
        /// First withdrawn ply.
        from_ply: u32,
    },
    /// The result was set (or cleared with null).
    Result {
        /// `1-0`, `0-1`, `1/2-1/2`.
        result: Option<String>,
        /// `Termination`.
        termination: Option<String>,
    },
    /// New players.
    Pairing {
        /// Players.
        pairing: Pairing,
    },
    /// The board was flipped or unflipped.
    Flip {
        /// Rotated.
        flipped: bool,
    },
    /// White's clock display, once the session is certain of it (before the first move
    /// confirmed with it): `{"t":"clock_side","white":"left"}`. A game resumed after a
    /// restart gets it back; a clock read in the middle of a game cannot tell it. Journals
    /// written before this record existed load without it (the sides are then learned from
    /// the clock's lever).
    ClockSide {
        /// White's display.
        white: ClockDisplay,
    },
}

/// A display of the clock, as the journal names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockDisplay {
    /// The left display (seen from the board's connector side, as the DGT protocol names it).
    Left,
    /// The right display.
    Right,
}

impl From<dgt_protocol::ClockSide> for ClockDisplay {
    fn from(side: dgt_protocol::ClockSide) -> ClockDisplay {
        match side {
            dgt_protocol::ClockSide::Left => ClockDisplay::Left,
            dgt_protocol::ClockSide::Right => ClockDisplay::Right,
        }
    }
}

impl From<ClockDisplay> for dgt_protocol::ClockSide {
    fn from(d: ClockDisplay) -> dgt_protocol::ClockSide {
        match d {
            ClockDisplay::Left => dgt_protocol::ClockSide::Left,
            ClockDisplay::Right => dgt_protocol::ClockSide::Right,
        }
    }
}

/// A confirmed move as journaled, with the position after it (so a game can be resumed
/// from its journal alone). The storage's own type: the feed maps it to its view, so a
/// change of the websocket JSON is never a journal migration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalMove {
    /// 1-based ply number.
    pub ply: u32,
    /// SAN with check suffix.
    pub san: String,
    /// UCI.
    pub uci: String,
    /// The mover's clock after the move, seconds (`%clk`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clk: Option<u32>,
    /// Time used on the move, seconds (`%emt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emt: Option<u32>,
    /// FEN after the move.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fen: Option<String>,
}

impl JournalMove {
    /// A confirmed move as the board session reported it.
    pub fn from_info(m: &dgt_core::MoveInfo) -> JournalMove {
        JournalMove {
            ply: u32::from(m.ply),
            san: m.san.to_string(),
            uci: m.uci.to_string(),
            clk: m.clk,
            emt: m.emt,
            fen: Some(m.fen.to_string()),
        }
    }
}

/// A game as its journal tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameRecord {
    /// The first record, with later pairing and flip changes applied.
    pub header: GameHeader,
    /// Confirmed moves.
    pub moves: Vec<JournalMove>,
    /// Result, when over.
    pub result: Option<String>,
    /// `Termination`.
    pub termination: Option<String>,
    /// White's clock display, once journaled.
    pub white_clock: Option<ClockDisplay>,
}

impl GameRecord {
    /// A game that has only its first record.
    pub fn new(header: GameHeader) -> GameRecord {
        GameRecord { header, moves: Vec::new(), result: None, termination: None, white_clock: None }
    }

    /// The position after the last confirmed move (FEN): the last move's, else the start.
    pub fn fen(&self) -> String {
        self.moves
            .last()
            .and_then(|m| m.fen.clone())
            .or_else(|| self.header.start_fen.clone())
            .unwrap_or_else(|| START_FEN.to_owned())
    }

    /// Applies one record after the first; returns false if it does not fit (a move out of
    /// sequence), in which case nothing changed.
    pub fn apply(&mut self, rec: &Record) -> bool {
        match rec {
            Record::Game(_) => return false,
            Record::Move(m) => {
                if m.ply as usize != self.moves.len() + 1 {
                    return false;
                }
                self.moves.push(m.clone());
            }
            Record::Takeback { from_ply } => self.moves.truncate(from_ply.saturating_sub(1) as usize),
            Record::Result { result, termination } => {
                self.result.clone_from(result);
                self.termination.clone_from(termination);
            }
            Record::Pairing { pairing } => self.header.pairing = pairing.clone(),
            Record::Flip { flipped } => self.header.flipped = *flipped,
            Record::ClockSide { white } => self.white_clock = Some(*white),
        }
        true
    }
}
