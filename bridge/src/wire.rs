//! What the frames carry: [`Up`] from the device to the host, [`Down`] back.
//!
//! postcard encodes enums by the place of their variant, so within one protocol version
//! variants are only ever appended, never reordered; a change that old builds cannot read
//! is a new [`crate::frame::VERSION`]. See `docs/bridge.md` for the conversation.

use alloc::string::String;
use alloc::vec::Vec;

use serde::{Deserialize, Serialize};

use dgt_session::{AlertCode, AlertLevel};

/// Device → host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Up {
    /// Who the device is: sent at boot and in answer to every [`Down::Hello`].
    Hello(DeviceHello),
    /// One of the session's effects, numbered (see [`Record`]).
    Record {
        /// One more than the previous record's; never reused while the device runs.
        seq: u32,
        /// The effect.
        record: Record,
    },
    /// The start of a game's line, in answer to [`Down::Resume`]: the game as a host
    /// would have journaled it, then its confirmed moves from `from_ply` on as
    /// [`Up::LineMove`]s.
    Line(LineHead),
    /// A confirmed move of the line under way.
    LineMove(MoveWire),
    /// The end of a resume: every record up to `seq` is told by the lines sent.
    Synced {
        /// The last record the lines cover; live records follow from `seq + 1`.
        seq: u32,
    },
    /// The answer to [`Down::Action`] `id`, after the records the action caused.
    Done {
        /// The action's id.
        id: u16,
        /// Done, or refused with why.
        outcome: Outcome,
    },
    /// A move of a checked correction ([`Action::CheckCorrection`]), before its `Done`.
    Checked {
        /// The action's id.
        id: u16,
        /// The move as it would be.
        mv: MoveWire,
    },
    /// Once a second: the device is alive, and what it counts.
    Status(DeviceStatus),
}

/// Host → device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Down {
    /// The host (re)connected; the device answers [`Up::Hello`].
    Hello {
        /// The host program and its version, for the device's operator.
        host: String,
    },
    /// Send what the host is missing of the current game (and of the previous one, if the
    /// host's game is that one), then go on live.
    Resume(Resume),
    /// Records up to `seq` are on the host's disk.
    Ack {
        /// The last record journaled.
        seq: u32,
        /// The host's name for the game current at `seq` (it created its journal).
        key: Option<GameKey>,
    },
    /// An operator's action; answered by [`Up::Done`] with the same `id`.
    Action {
        /// Chosen by the host, echoed in the answer.
        id: u16,
        /// What to do.
        action: Action,
    },
}

/// The host's name for one game: its journal, by round and board number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GameKey {
    /// Round.
    pub round: u32,
    /// Board number.
    pub board: u32,
}

/// What the host has of the game it journals for this device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resume {
    /// The board's number at the host, which the device's alerts name.
    pub board: u32,
    /// Its game, if it has one.
    pub key: Option<GameKey>,
    /// Confirmed plies journaled.
    pub plies: u16,
    /// [`crate::GameLog::line_hash`] of those plies.
    pub hash: u32,
}

/// The device's greeting.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceHello {
    /// The firmware and its version (`dgt-relay-firmware 0.1.0`).
    pub firmware: String,
    /// The board support in use (`mps2-an386`).
    pub platform: String,
    /// The board's serial number once its handshake told it: the board's identity.
    pub board: Option<String>,
    /// Milliseconds since the device started.
    pub uptime_ms: u64,
}

/// What the device counts, sent with [`Up::Status`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceStatus {
    /// Milliseconds since the device started.
    pub uptime_ms: u64,
    /// The last record numbered.
    pub seq: u32,
    /// The last record the host acknowledged.
    pub acked: u32,
    /// Frames from the host taken.
    pub frames: u32,
    /// Frames from the host skipped as damaged.
    pub bad_frames: u32,
    /// Frames from the host of another protocol version, refused.
    pub refused_frames: u32,
    /// Frames not sent because the line to the host was full (the host resumes).
    pub dropped_frames: u32,
    /// Bytes from the board the decoder threw away.
    pub board_noise: u32,
    /// Heap bytes in use now.
    pub heap_used: u32,
    /// Most heap bytes in use at once since start.
    pub heap_peak: u32,
    /// Most stack bytes used since start (0 when the platform does not measure it).
    pub stack_peak: u32,
    /// Bytes the UARTs received but could not keep (a receiver overrun).
    pub uart_lost: u32,
    /// The longest turn of the device's main loop, milliseconds.
    pub longest_step_ms: u32,
}

/// One session effect (what [`dgt_session::Effect`] says, without the bytes for the
/// board, which the device writes itself).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Record {
    /// The board on the device's port told its serial number: the board's identity.
    Board {
        /// Its serial number.
        serial: String,
    },
    /// The device's connection to its board.
    Link(LinkWire),
    /// A game started.
    GameStarted {
        /// How it starts.
        start: GameStart,
        /// A new game record is due (see [`dgt_session::Effect::GameStarted`]).
        new_record: bool,
    },
    /// A move, provisional or confirmed.
    Move {
        /// Confirmed (journal it) or provisional.
        confirmed: bool,
        /// The move.
        mv: MoveWire,
    },
    /// The provisional move at `ply` and those after it are withdrawn.
    Retracted {
        /// The ply.
        ply: u16,
        /// The position now read.
        fen: String,
    },
    /// Confirmed moves after `to_ply` were taken back.
    TakenBack {
        /// Plies that remain.
        to_ply: u16,
        /// The position after them.
        fen: String,
    },
    /// White's clock display, once certain.
    ClockSide(DisplayWire),
    /// The clocks.
    Clock(ClockWire),
    /// The game ended.
    GameEnded {
        /// The result.
        result: ResultWire,
        /// Why.
        reason: EndWire,
    },
    /// The operator cleared the result.
    ResultCleared,
    /// The operator turned the board's orientation.
    Flipped {
        /// Rotated.
        flipped: bool,
    },
    /// The board's battery charge, percent.
    Battery(u8),
    /// Tell the operator.
    Alert(AlertWire),
}

impl Record {
    /// True for what a host journals (and so what a resume must not lose or repeat).
    pub fn is_durable(&self) -> bool {
        match self {
            Record::GameStarted { .. }
            | Record::TakenBack { .. }
            | Record::ClockSide(_)
            | Record::GameEnded { .. }
            | Record::ResultCleared
            | Record::Flipped { .. } => true,
            Record::Move { confirmed, .. } => *confirmed,
            _ => false,
        }
    }
}

/// How a game starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameStart {
    /// The board is rotated (White at the connector's right).
    pub rotated: bool,
    /// Standard, Chess960 or an operator position.
    pub kind: StartWire,
    /// The start position when not the standard one.
    pub start_fen: Option<String>,
}

/// [`dgt_core::StartKind`] on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StartWire {
    /// The standard start.
    Standard,
    /// A Chess960 start, by its number.
    Chess960(u16),
    /// An operator's position.
    Fen,
}

/// A move as the session reports it ([`dgt_core::MoveInfo`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveWire {
    /// 1-based ply.
    pub ply: u16,
    /// White moved.
    pub white: bool,
    /// UCI.
    pub uci: String,
    /// SAN with its check suffix.
    pub san: String,
    /// `%clk`, seconds.
    pub clk: Option<u32>,
    /// `%emt`, seconds.
    pub emt: Option<u32>,
    /// The position after the move.
    pub fen: String,
}

/// [`dgt_session::LinkState`] on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LinkWire {
    /// Not heard since start.
    Offline,
    /// Events flow.
    Active,
    /// Silence or a lost port.
    NotResponding,
}

/// A clock display ([`dgt_protocol::ClockSide`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DisplayWire {
    /// Left.
    Left,
    /// Right.
    Right,
}

/// [`dgt_core::ClockState`] on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockWire {
    /// White's time, seconds.
    pub white: Option<u32>,
    /// Black's time, seconds.
    pub black: Option<u32>,
    /// Whose clock runs: `Some(true)` White's, `Some(false)` Black's.
    pub white_running: Option<bool>,
    /// White's flag shows.
    pub white_flag: bool,
    /// Black's flag shows.
    pub black_flag: bool,
}

/// [`dgt_core::GameResult`] on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResultWire {
    /// 1-0
    WhiteWins,
    /// 0-1
    BlackWins,
    /// 1/2-1/2
    Draw,
    /// 0-0
    BothLose,
    /// 1/2-0
    WhiteHalf,
    /// 0-1/2
    BlackHalf,
}

/// [`dgt_core::EndReason`] on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EndWire {
    /// Checkmate.
    Checkmate,
    /// Stalemate.
    Stalemate,
    /// Kings in the centre.
    KingsInCentre,
    /// A magic piece.
    MagicPiece,
    /// A flag fell.
    FlagFall,
    /// The operator.
    Operator,
    /// The arbiter ruled the game unplayed.
    Unplayed,
}

/// An alert ([`dgt_session::Alert`]). The code's place in [`AlertCode::ALL`] is its
/// encoding, which is why that order only grows at the end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertWire {
    /// What it is about.
    pub code: AlertCode,
    /// How urgent.
    pub level: AlertLevel,
    /// For a person.
    pub message: String,
    /// Squares involved, 0 = a1 .. 63 = h8.
    pub squares: Vec<u8>,
}

/// An operator's action, as [`dgt_session::BoardSession`] takes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Action {
    /// Turn the board's orientation.
    Flip,
    /// Set (or with `None` clear) the result.
    SetResult(Option<ResultWire>),
    /// A new game from this position (standard start when `None`).
    NewGame {
        /// FEN.
        fen: Option<String>,
    },
    /// Replace the confirmed moves from `from_ply` on.
    Correct {
        /// First ply replaced (1-based).
        from_ply: u16,
        /// The moves, UCI.
        moves: Vec<String>,
    },
    /// Check a correction without making it: [`Up::Checked`] moves, then `Done`.
    CheckCorrection {
        /// First ply replaced (1-based).
        from_ply: u16,
        /// The moves, UCI.
        moves: Vec<String>,
    },
    /// Rule the game unplayed (a forfeit) with this score.
    SetUnplayed(ResultWire),
}

/// How an action ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// Done (its records came before).
    Done,
    /// Refused; nothing changed.
    Refused(Refusal),
}

/// [`dgt_session::AdminError`] on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Refusal {
    /// No game on the board.
    NoGame,
    /// An unusable position: too long, not FEN, or illegal.
    Fen(FenWire),
    /// `from_ply` is outside the game.
    FromPly {
        /// The last ply that may be corrected from.
        max: u32,
    },
    /// The corrected game would not fit.
    TooLong,
    /// A move is not UCI.
    NotUci(String),
    /// A move is not legal where it is played.
    Illegal {
        /// The ply.
        ply: u32,
        /// The move.
        uci: String,
    },
    /// The earlier moves do not replay.
    Journal(String),
}

/// [`dgt_core::FenError`] on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FenWire {
    /// Too long.
    TooLong,
    /// Not FEN.
    Invalid,
    /// Not a chess position.
    Illegal,
}

/// A game as a host journals it, sent at the head of a line ([`Up::Line`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineHead {
    /// The host's name for the game, when the host told one ([`Down::Ack`]); `None`: a
    /// game the host has not journaled yet.
    pub key: Option<GameKey>,
    /// How it started.
    pub start: GameStart,
    /// Rotated now.
    pub flipped: bool,
    /// White's clock display, once certain.
    pub white_clock: Option<DisplayWire>,
    /// The result, when over.
    pub result: Option<(ResultWire, EndWire)>,
    /// Confirmed plies the game has.
    pub plies: u16,
    /// The first ply of the [`Up::LineMove`]s that follow (`plies + 1`: none follow).
    pub from_ply: u16,
    /// The position before `from_ply` (for a host that takes back what differs).
    pub fen: String,
}
