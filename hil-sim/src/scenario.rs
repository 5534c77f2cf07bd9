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
    /// milliseconds, played at the board's speed factor but never shorter than
    /// [`crate::sim::MIN_UNPLUGGED`] (30 ms) of real time.
    Disconnect {
        /// Virtual milliseconds without a connection.
        down_ms: u64,
    },
    /// Line noise: bytes that are no message.
    Garbage {
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// A square changes as a hand script states it ([`crate::script`]): one field update
    /// at once, or none when `reported` is false (a lost update), bypassing the board's
    /// scan ([`crate::Firmware::set_square_at_once`]).
    SetSquare {
        /// The game square.
        square: Square,
        /// What now stands on it.
        piece: Option<Piece>,
        /// False when the field update is lost.
        reported: bool,
    },
    /// The clock becomes a hand script's puppet showing these displays: it no longer counts
    /// by itself ([`crate::Dgt3000::make_puppet`]).
    PuppetClock {
        /// The left display, seconds.
        left_s: u32,
        /// The right display, seconds.
        right_s: u32,
        /// The hours bytes carry the time-per-move bit (an increment control).
        time_per_move: bool,
    },
    /// One step of a puppet clock's countdown: a display changes (a BWTIME goes out).
    ClockShows {
        /// The display.
        side: ClockSide,
        /// What it shows now.
        seconds: u32,
    },
    /// A clock press as a script states it: the display after it, the lever flipped, a
    /// BWTIME at once.
    ScriptedPress {
        /// The display pressed.
        side: ClockSide,
        /// What it shows after the press (bonus included).
        display_s: u32,
    },
    /// Two presses one clock poll sees: both displays change, the lever ends where it
    /// started, one BWTIME reports both.
    ScriptedPress2 {
        /// The presses in order: (display pressed, what it shows after).
        presses: [(ClockSide, u32); 2],
    },
    /// The clock starts (the side whose lever is up runs) and says so at once (BWTIME).
    ClockStart,
    /// The clock stops (status bit D0 clears) and says so at once (BWTIME).
    ClockStop,
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

/// How long, in virtual milliseconds, the board stands still at human pace after a hand
/// action before the rest of a pause is fast-forwarded: the opponent's reaction after a
/// press, long enough for a host to see the board settle.
pub const HAND_SETTLE_MS: u64 = 1_000;

impl Action {
    /// True for what a person's hand does on the board or the clock (the actions whose
    /// pace a host's timing depends on); false for the cable, the line, a clock counting
    /// down by itself and the end mark.
    pub fn is_hand(&self) -> bool {
        matches!(
            self,
            Action::Lift { .. }
                | Action::Place { .. }
                | Action::PressClock { .. }
                | Action::Button { .. }
                | Action::StartClock
                | Action::SetPosition { .. }
                | Action::SetSquare { .. }
                | Action::ScriptedPress { .. }
                | Action::ScriptedPress2 { .. }
                | Action::ClockStart
                | Action::ClockStop
        )
    }
}

impl Scenario {
    /// The virtual length of the scenario (the time of its last action).
    pub fn duration_ms(&self) -> u64 {
        self.actions.last().map_or(0, |a| a.at_ms)
    }

    /// The stretches of virtual time, `[from, to)` in milliseconds from the start, sorted
    /// and disjoint, that a board plays at hand speed: every hand action and the first
    /// [`HAND_SETTLE_MS`] of the pause after it (so a move's whole gesture, from its first
    /// lift to its clock press, and the stillness after the press), and, when the game's
    /// end is shown by hand after the last move (the kings in the centre, a resignation),
    /// the whole pause before that gesture. The rest (thinking time) may be fast-forwarded.
    pub fn hand_spans(&self) -> Vec<(u64, u64)> {
        let times: Vec<u64> = self.actions.iter().filter(|a| a.action.is_hand()).map(|a| a.at_ms).collect();
        let mut spans: Vec<(u64, u64)> = Vec::new();
        let mut add = |from: u64, to: u64| {
            if to <= from {
                return;
            }
            match spans.last_mut() {
                Some(last) if from <= last.1 => last.1 = last.1.max(to),
                _ => spans.push((from, to)),
            }
        };
        // The end gesture: the last cluster of hand actions (gaps of at most the settle
        // time), when the truth says the end was shown by hand.
        let hand_end =
            self.truth.as_ref().is_some_and(|t| matches!(t.end.as_str(), "kings_in_centre" | "resignation"));
        let end_from = if hand_end && times.len() >= 2 {
            let mut k = times.len() - 1;
            while k > 0 && times[k] - times[k - 1] <= HAND_SETTLE_MS {
                k -= 1;
            }
            // The pause between the last move and the gesture, at human pace too.
            (k > 0).then(|| times[k - 1])
        } else {
            None
        };
        for (i, &t) in times.iter().enumerate() {
            let next = times.get(i + 1).copied();
            let to = match (next, end_from) {
                (Some(n), Some(e)) if t >= e => n,
                (Some(n), _) => n.min(t + HAND_SETTLE_MS),
                (None, _) => t + HAND_SETTLE_MS,
            };
            add(t, to.max(t + 1));
        }
        spans
    }

    /// The real time the scenario takes on a board at `speed` whose hands move at
    /// `hand_speed` (see [`crate::sim::SimConfig::hand_speed`]).
    pub fn real_duration(&self, speed: f64, hand_speed: f64) -> std::time::Duration {
        let (speed, hand) = crate::sim::rates(speed, hand_speed);
        let total = self.duration_ms() as f64;
        let hand_ms: f64 = self
            .hand_spans()
            .iter()
            .map(|&(a, b)| (b.min(self.duration_ms()).saturating_sub(a)) as f64)
            .sum();
        std::time::Duration::from_secs_f64(((total - hand_ms) / speed + hand_ms / hand) / 1000.0)
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
