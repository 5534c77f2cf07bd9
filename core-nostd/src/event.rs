//! What the tracker tells its caller.

use dgt_protocol::Orientation;
use shakmaty::{Bitboard, Color, san::SanPlus, uci::UciMove};

use crate::fen::FenText;

/// A game's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GameResult {
    /// `1-0`
    WhiteWins,
    /// `0-1`
    BlackWins,
    /// `1/2-1/2`
    Draw,
}

impl GameResult {
    /// The PGN result token.
    pub const fn as_pgn(self) -> &'static str {
        match self {
            GameResult::WhiteWins => "1-0",
            GameResult::BlackWins => "0-1",
            GameResult::Draw => "1/2-1/2",
        }
    }

    /// The result of a win by `winner`.
    pub const fn win_for(winner: Color) -> GameResult {
        match winner {
            Color::White => GameResult::WhiteWins,
            Color::Black => GameResult::BlackWins,
        }
    }
}

/// A result text that is none of `1-0`, `0-1`, `1/2-1/2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResultError;

impl core::fmt::Display for ResultError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("a result is 1-0, 0-1 or 1/2-1/2")
    }
}

impl core::str::FromStr for GameResult {
    type Err = ResultError;

    /// The PGN result tokens of a finished game (`*` is no result).
    fn from_str(s: &str) -> Result<GameResult, ResultError> {
        match s {
            "1-0" => Ok(GameResult::WhiteWins),
            "0-1" => Ok(GameResult::BlackWins),
            "1/2-1/2" => Ok(GameResult::Draw),
            _ => Err(ResultError),
        }
    }
}

impl core::fmt::Display for GameResult {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_pgn())
    }
}

/// Why a game ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EndReason {
    /// The last confirmed move mates.
    Checkmate,
    /// The last confirmed move stalemates.
    Stalemate,
    /// Both kings were put on the four centre squares (DGT's convention).
    KingsInCentre,
    /// A magic piece (codes 0x0D..=0x0F) was put on the board.
    MagicPiece,
    /// The clock showed a fallen flag.
    FlagFall,
    /// The operator said so.
    Operator,
}

impl EndReason {
    /// The PGN `Termination` value.
    pub const fn termination(self) -> &'static str {
        match self {
            EndReason::FlagFall => "time forfeit",
            _ => "normal",
        }
    }
}

/// How the game started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StartKind {
    /// The standard start position.
    Standard,
    /// A Chess960 start position (its Scharnagl number).
    Chess960(u16),
    /// A position set by the operator.
    Fen,
}

/// One ply, as reported in events and queries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoveInfo {
    /// 1-based ply number in the game (1 = White's first move from the start position).
    pub ply: u16,
    /// The side that moved.
    pub color: Color,
    /// The move in UCI (castling as king-to-target in standard chess).
    pub uci: UciMove,
    /// The move in SAN with its check or mate suffix.
    pub san: SanPlus,
    /// The mover's remaining time just after the move, seconds (`%clk`).
    pub clk: Option<u32>,
    /// Time the mover spent on the move, seconds (`%emt`).
    pub emt: Option<u32>,
    /// The position after the move.
    pub fen: FenText,
}

/// Both clocks, mapped to colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ClockState {
    /// White's displayed time, seconds.
    pub white: Option<u32>,
    /// Black's displayed time, seconds.
    pub black: Option<u32>,
    /// Whose clock runs; `None` when stopped or unknown.
    pub running: Option<Color>,
    /// White's flag is shown.
    pub white_flag: bool,
    /// Black's flag is shown.
    pub black_flag: bool,
}

/// Something the caller should know about, in the order it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A new game started.
    GameStarted {
        /// How the board is set up (rotated: White at the connector's right).
        orientation: Orientation,
        /// Standard, Chess960 or operator position.
        kind: StartKind,
    },
    /// The board shows this move; it may still be retracted. Never put it in a PGN.
    MoveProvisional(MoveInfo),
    /// The move is certain and final.
    MoveConfirmed(MoveInfo),
    /// A provisional move is withdrawn (the board no longer shows it).
    MoveRetracted {
        /// Its ply number.
        ply: u16,
        /// The position the board is read at once it is withdrawn (confirmed and
        /// provisional plies before it).
        fen: FenText,
    },
    /// Confirmed moves were taken back: the game continues after ply `to_ply`.
    Takeback {
        /// Plies that remain.
        to_ply: u16,
        /// The position after them.
        fen: FenText,
    },
    /// The clocks changed.
    Clock(ClockState),
    /// The board shows a position no legal sequence explains.
    PositionMismatch {
        /// The squares that differ from the nearest explainable position.
        squares: Bitboard,
    },
    /// The board is explainable again after a mismatch.
    PositionRecovered,
    /// The game is over.
    GameEnded {
        /// The result.
        result: GameResult,
        /// Why.
        reason: EndReason,
    },
    /// The board reached its position by more than one order of moves and never showed
    /// which: the provisional moves from ply `ply` on are one of them, kept unconfirmed
    /// until a later reading tells them apart or the operator corrects the game. The
    /// operator should check them against the scoresheets.
    MoveOrderUnknown {
        /// The first ply whose order is unknown (1-based).
        ply: u16,
    },
    /// The tracker is unsure of the board: please send a board-dump request (`0x42`).
    RequestBoardDump,
    /// The move list is full: no more plies can be recorded in this game.
    CapacityFull,
}

/// Where events go. Implemented for closures taking an [`Event`].
pub trait EventSink {
    /// Receives one event.
    fn event(&mut self, event: Event);
}

impl<F: FnMut(Event)> EventSink for F {
    fn event(&mut self, event: Event) {
        self(event)
    }
}

/// A sink that keeps the newest `N` events in a bounded queue (oldest dropped first).
#[derive(Debug, Default)]
pub struct EventQueue<const N: usize> {
    /// The queued events, oldest first.
    pub queue: heapless::Deque<Event, N>,
    /// Events dropped because the queue was full.
    pub dropped: u32,
}

impl<const N: usize> EventSink for EventQueue<N> {
    fn event(&mut self, event: Event) {
        if self.queue.is_full() {
            self.queue.pop_front();
            self.dropped = self.dropped.saturating_add(1);
        }
        // Cannot fail: a slot was freed above if needed (and N == 0 drops everything).
        let _ = self.queue.push_back(event);
    }
}
