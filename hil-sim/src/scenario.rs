//! What a scenario is made of: hand actions on the board and clock at virtual times, and
//! the board's setup for the replay. Squares and pieces are the game's (shakmaty); the
//! runner turns them into board indices with the board's orientation.

use dgt_protocol::{ClockSide, DgtSquare, Orientation, PieceCode};
use shakmaty::{Board, Color, Piece, Square};

use crate::clock::{Button, TimeControl};
use crate::truth::GroundTruth;

/// One thing a person (or the cable, or the line) does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// A piece is lifted off a square.
    Lift {
        /// The game square.
        square: Square,
    },
    /// A piece is put on a square.
    Place {
        /// The game square.
        square: Square,
        /// The piece.
        piece: Piece,
    },
    /// The board will not send its next report for this square (a lost field update).
    DropReport {
        /// The game square.
        square: Square,
    },
    /// The player of `color` presses their clock button.
    PressClock {
        /// Who presses.
        color: Color,
    },
    /// A key on the clock.
    Button {
        /// Which key.
        button: Button,
    },
    /// The arbiter starts the clock (White's side runs).
    StartClock,
    /// A whole position is put on the board at once (an arbiter setting up).
    SetPosition {
        /// The position.
        board: Board,
    },
    /// The board's cable is pulled and plugged back in after `down_ms` virtual
    /// milliseconds (at least a fraction of a real second).
    Disconnect {
        /// Virtual milliseconds without a connection.
        down_ms: u64,
    },
    /// Line noise: bytes that are no message.
    Garbage {
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// The end of the scenario (nothing happens).
    End,
}

/// An action at a virtual time, in milliseconds from the scenario's start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimedAction {
    /// Milliseconds from the start.
    pub at_ms: u64,
    /// What happens.
    pub action: Action,
}

/// How the clock is set up for a replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockSetup {
    /// The time control.
    pub time_control: TimeControl,
    /// The display White uses.
    pub white_side: ClockSide,
    /// The display of the side to move first (its lever is up at the start).
    pub first_side: ClockSide,
}

/// How the board is set up for a replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setup {
    /// Normal, or rotated (White at the connector's right).
    pub orientation: Orientation,
    /// The clock, or none.
    pub clock: Option<ClockSetup>,
    /// The position on the board at the start.
    pub position: Board,
}

/// A replay: the setup, the timed actions, and what it should produce.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Board and clock setup.
    pub setup: Setup,
    /// Actions in time order.
    pub actions: Vec<TimedAction>,
    /// The ground truth of the replay, when it replays a game.
    pub truth: Option<GroundTruth>,
}

impl Scenario {
    /// The virtual length of the scenario (the time of its last action).
    pub fn duration_ms(&self) -> u64 {
        self.actions.last().map_or(0, |a| a.at_ms)
    }
}

/// A game position in board-index order for an orientation.
pub fn board_codes(board: &Board, orientation: Orientation) -> [PieceCode; 64] {
    let mut out = [PieceCode::Empty; 64];
    for sq in Square::ALL {
        out[usize::from(DgtSquare::from_square(sq, orientation).index())] =
            PieceCode::from_option(board.piece_at(sq));
    }
    out
}

/// The game position that board codes show, for an orientation (magic pieces are dropped).
pub fn codes_board(codes: &[PieceCode; 64], orientation: Orientation) -> Board {
    let mut board = Board::empty();
    for sq in DgtSquare::ALL {
        if let Some(piece) = codes[usize::from(sq.index())].piece() {
            board.set_piece_at(sq.to_square(orientation), piece);
        }
    }
    board
}
