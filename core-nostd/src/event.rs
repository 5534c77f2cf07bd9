//! What the tracker tells its caller.

use dgt_protocol::Orientation;
use shakmaty::{Bitboard, Color, san::SanPlus, uci::UciMove};

use crate::fen::FenText;

/// A game's result, as the arbiter records it: the three results of a played game, and
/// the arbiter's scores where the players do not share one point (both lose, or one side
/// gets half a point and the other none). The tracker only ever finds the first three.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GameResult {
    /// `1-0`
    WhiteWins,
    /// `0-1`
    BlackWins,
    /// `1/2-1/2`
    Draw,
    /// `0-0`: both sides lose (double forfeit, both players penalised).
    BothLose,
    /// `1/2-0`: White half a point, Black none.
    WhiteHalf,
    /// `0-1/2`: Black half a point, White none.
    BlackHalf,
}

impl GameResult {
    /// The PGN `Result` tag value. The three arbiter scores use the forms Lichess reads
    /// (`0-0`, `1/2-0`, `0-1/2`); the 1994 standard has no marker for them.
    pub const fn as_pgn(self) -> &'static str {
        match self {
            GameResult::WhiteWins => "1-0",
            GameResult::BlackWins => "0-1",
            GameResult::Draw => "1/2-1/2",
            GameResult::BothLose => "0-0",
            GameResult::WhiteHalf => "1/2-0",
            GameResult::BlackHalf => "0-1/2",
        }
    }

    /// The termination marker that ends the movetext: the result when the standard has
    /// one for it, `*` for an arbiter's score (a movetext `0-0` reads as castling).
    pub const fn movetext_marker(self) -> &'static str {
        if self.is_standard() { self.as_pgn() } else { "*" }
    }

    /// One of the standard's three results (`1-0`, `0-1`, `1/2-1/2`).
    pub const fn is_standard(self) -> bool {
        matches!(self, GameResult::WhiteWins | GameResult::BlackWins | GameResult::Draw)
    }

    /// Each side's points, in half points: (White, Black).
    pub const fn half_points(self) -> (u8, u8) {
        match self {
            GameResult::WhiteWins => (2, 0),
            GameResult::BlackWins => (0, 2),
            GameResult::Draw => (1, 1),
            GameResult::BothLose => (0, 0),
            GameResult::WhiteHalf => (1, 0),
            GameResult::BlackHalf => (0, 1),
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

/// A result text that is none of the results an arbiter records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResultError;

impl core::fmt::Display for ResultError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(
            "a result is 1-0, 0-1, 1/2-1/2, 0-0, 1/2-0 or 0-1/2 (½ for 1/2), \
             or a forfeit: +-, -+ or --",
        )
    }
}

impl core::str::FromStr for GameResult {
    type Err = ResultError;

    /// The result tokens of a finished game (`*` is no result); `½` stands for `1/2`.
    fn from_str(s: &str) -> Result<GameResult, ResultError> {
        let (white, black) = s.trim().split_once('-').ok_or(ResultError)?;
        let points = |p: &str| match p {
            "1" => Ok(2),
            "0" => Ok(0),
            "1/2" | "\u{bd}" => Ok(1),
            _ => Err(ResultError),
        };
        match (points(white)?, points(black)?) {
            (2, 0) => Ok(GameResult::WhiteWins),
            (0, 2) => Ok(GameResult::BlackWins),
            (1, 1) => Ok(GameResult::Draw),
            (0, 0) => Ok(GameResult::BothLose),
            (1, 0) => Ok(GameResult::WhiteHalf),
            (0, 1) => Ok(GameResult::BlackHalf),
            _ => Err(ResultError),
        }
    }
}

impl core::fmt::Display for GameResult {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_pgn())
    }
}

/// What the arbiter rules about a game: its result, and whether it was played at all.
///
/// An unplayed game (a forfeit, a bye paired on a board) is scored but never rated and
/// shows no moves: Lichess reads it from `Termination "Unplayed"`. Written as a result
/// (`1-0`, `1/2-0`...) or a forfeit as pairing programs write it: `+-` (White wins by
/// forfeit), `-+` (Black does), `--` (both forfeit, `0-0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ruling {
    /// The score.
    pub result: GameResult,
    /// The game was not played (forfeit).
    pub unplayed: bool,
}

impl Ruling {
    /// A played game's result.
    pub const fn played(result: GameResult) -> Ruling {
        Ruling { result, unplayed: false }
    }

    /// The reason the game ended when the operator rules it.
    pub const fn reason(self) -> EndReason {
        if self.unplayed { EndReason::Unplayed } else { EndReason::Operator }
    }
}

impl core::str::FromStr for Ruling {
    type Err = ResultError;

    fn from_str(s: &str) -> Result<Ruling, ResultError> {
        let forfeit = |result| Ok(Ruling { result, unplayed: true });
        match s.trim() {
            "+-" | "+:-" | "+/-" => forfeit(GameResult::WhiteWins),
            "-+" | "-:+" | "-/+" => forfeit(GameResult::BlackWins),
            "--" | "-:-" | "-/-" => forfeit(GameResult::BothLose),
            other => other.parse().map(Ruling::played),
        }
    }
}

/// The `Termination` of an unplayed game, as Lichess reads it (kept out of ratings).
pub const UNPLAYED: &str = "Unplayed";

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
    /// The arbiter ruled the game unplayed (a forfeit): no move counts.
    Unplayed,
}

impl EndReason {
    /// The PGN `Termination` value.
    pub const fn termination(self) -> &'static str {
        match self {
            EndReason::FlagFall => "time forfeit",
            EndReason::Unplayed => UNPLAYED,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_and_rulings_parse_as_arbiters_write_them() {
        let cases = [
            ("1-0", GameResult::WhiteWins),
            ("0-1", GameResult::BlackWins),
            ("1/2-1/2", GameResult::Draw),
            ("\u{bd}-\u{bd}", GameResult::Draw),
            ("0-0", GameResult::BothLose),
            ("1/2-0", GameResult::WhiteHalf),
            ("\u{bd}-0", GameResult::WhiteHalf),
            ("0-1/2", GameResult::BlackHalf),
            (" 0-\u{bd} ", GameResult::BlackHalf),
        ];
        for (text, result) in cases {
            assert_eq!(text.parse::<GameResult>(), Ok(result), "{text}");
            assert_eq!(text.parse::<Ruling>(), Ok(Ruling::played(result)), "{text}");
            assert_eq!(result.as_pgn().parse::<GameResult>(), Ok(result));
        }
        for bad in ["", "*", "1-1", "2-0", "1/2", "1-0-0", "0.5-0.5", "+-+"] {
            assert_eq!(bad.parse::<GameResult>(), Err(ResultError), "{bad}");
            assert_eq!(bad.parse::<Ruling>(), Err(ResultError), "{bad}");
        }
        let forfeit = |result| Ruling { result, unplayed: true };
        assert_eq!("+-".parse(), Ok(forfeit(GameResult::WhiteWins)));
        assert_eq!("-+".parse(), Ok(forfeit(GameResult::BlackWins)));
        assert_eq!("--".parse(), Ok(forfeit(GameResult::BothLose)));
        assert_eq!(forfeit(GameResult::WhiteWins).reason().termination(), "Unplayed");
        assert_eq!(GameResult::WhiteHalf.half_points(), (1, 0));
        assert_eq!(GameResult::BothLose.movetext_marker(), "*");
        assert_eq!(GameResult::Draw.movetext_marker(), "1/2-1/2");
    }
}
