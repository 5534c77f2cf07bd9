//! The board tracker: DGT board and clock messages in; certain chess moves, clocks,
//! results and PGN out.
//!
//! `no_std`, no allocation, no I/O, and no clock of its own: the caller passes its
//! monotonic time in milliseconds with every input ([`Tracker::feed`]) and calls
//! [`Tracker::tick`] so that time-based decisions happen without new bytes. Memory is
//! fixed by the const generic ply capacity: `size_of::<Tracker<600>>()` is under 16 KiB.
//!
//! How moves are found: the physical board (from dumps and field updates) is compared with
//! the legal successors of the tracked line. A one-ply fast path runs on every change; when
//! it explains nothing and the board has been still for [`Config::settle_ms`], a search up
//! to [`Config::search_depth`] plies (captures, castling and promotions in any hand order,
//! several plies between two readings) and a takeback search run. Matches become
//! *provisional* moves; they are *confirmed* only when certain: the mover's clock press
//! with the board showing the move, the plies that followed a forgotten press, or (without
//! a running clock) quiet time. A board no legal sequence explains is reported with the
//! squares that differ and never guessed at.
//!
//! ```
//! use dgt_core::{Event, Tracker};
//! use dgt_protocol::{BoardDump, DgtSquare, FieldUpdate, Orientation, PieceCode};
//! use shakmaty::{Chess, Position, Square};
//!
//! let mut tracker: Tracker<600> = Tracker::default();
//! let mut events = heapless::Vec::<Event, 16>::new();
//! let mut sink = |e: Event| {
//!     let _ = events.push(e);
//! };
//! // The start position, as a dump.
//! let mut dump = BoardDump::EMPTY;
//! for (sq, piece) in Chess::default().board().iter() {
//!     dump.set(DgtSquare::from_square(sq, Orientation::Normal), PieceCode::from_piece(piece));
//! }
//! tracker.feed_dump(&dump, 0, &mut sink);
//! // 1. e4, no clock: provisional at once, confirmed after the quiet time.
//! let at = |sq| DgtSquare::from_square(sq, Orientation::Normal);
//! tracker.feed_field(FieldUpdate::new(at(Square::E2), PieceCode::Empty), 100, &mut sink);
//! tracker.feed_field(FieldUpdate::new(at(Square::E4), PieceCode::WhitePawn), 150, &mut sink);
//! tracker.tick(5000, &mut sink);
//! assert!(events.iter().any(|e| matches!(e, Event::MoveConfirmed(m) if m.san.to_string() == "e4")));
//! ```
#![no_std]

mod board;
mod catch_up;
mod clock;
pub mod config;
pub mod event;
pub mod fen;
pub mod pgn;
pub mod replay;
mod search;
mod tracker;

pub use config::{BonusKind, Config, Period, TimeControl, TimeControlError, WhiteClockSide};
pub use event::{
    ClockState, EndReason, Event, EventQueue, EventSink, GameResult, MoveInfo, ResultError, StartKind,
};
pub use fen::{FEN_MAX, FenError, FenText, castling_mode_of, position_from_fen};
pub use pgn::{GameText, Hms, PgnHeader, PgnPly};
pub use replay::Replay;
pub use search::{MAX_DEPTH, board_diff};
pub use tracker::{GameState, Reading, ResumeError, ResumePly, StartError, Tracker, View};
