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
//! it explains nothing and the board has been still for [`Timing::settle_ms`], a search up
//! to [`Config::search_depth`] plies (captures, castling and promotions in any hand order,
//! several plies between two readings) and a takeback search run. Matches become
//! *provisional* moves; they are *confirmed* only when certain: the mover's clock press
//! with the board showing the move, the plies that followed a forgotten press, or (without
//! a running clock) quiet time with a dump that shows the move. A board no legal sequence
//! explains is reported with the squares that differ and never guessed at.
//!
//! ```
//! use dgt_core::{Event, EventQueue, Tracker};
//! use dgt_protocol::{BoardDump, DgtSquare, FieldUpdate, Orientation, PieceCode};
//! use shakmaty::{Chess, Position, Square};
//!
//! let mut tracker: Tracker<600> = Tracker::default();
//! let mut events = EventQueue::<32>::default();
//! // The start position, as a dump.
//! let mut dump = BoardDump::EMPTY;
//! for (sq, piece) in Chess::default().board().iter() {
//!     dump.set(DgtSquare::from_square(sq, Orientation::Normal), PieceCode::from_piece(piece));
//! }
//! tracker.feed_dump(&dump, 0, &mut events);
//! // 1. e4, no clock: provisional at once; after the quiet time the tracker asks for a dump,
//! // and the move is confirmed once the dump shows it.
//! let at = |sq| DgtSquare::from_square(sq, Orientation::Normal);
//! tracker.feed_field(FieldUpdate::new(at(Square::E2), PieceCode::Empty), 100, &mut events);
//! tracker.feed_field(FieldUpdate::new(at(Square::E4), PieceCode::WhitePawn), 150, &mut events);
//! dump.set(at(Square::E2), PieceCode::Empty);
//! dump.set(at(Square::E4), PieceCode::WhitePawn);
//! let e4 = |e: &Event| matches!(e, Event::MoveConfirmed(m) if m.san.to_string() == "e4");
//! while let Some(due) = tracker.poll_at().filter(|&t| t <= 5000) {
//!     let asked = events.queue.len();
//!     tracker.tick(due, &mut events);
//!     if events.queue.iter().skip(asked).any(|e| matches!(e, Event::RequestBoardDump)) {
//!         tracker.feed_dump(&dump, due + 20, &mut events);
//!     }
//! }
//! assert!(events.queue.iter().any(e4));
//! ```
#![no_std]

mod board;
mod clock;
pub mod config;
pub mod event;
pub mod fen;
pub mod pgn;
pub mod replay;
mod search;
pub mod timing;
mod tracker;

pub use config::{BonusKind, Config, Period, TimeControl, TimeControlError, WhiteClockSide};
pub use event::{
    ClockState, EndReason, Event, EventQueue, EventSink, GameResult, MoveInfo, ResultError, Ruling,
    StartKind, UNPLAYED,
};
pub use fen::{FEN_MAX, FenError, FenText, castling_mode_of, position_from_fen};
pub use pgn::{GameText, Hms, PgnHeader, PgnPly};
pub use replay::Replay;
pub use search::{MAX_DEPTH, board_diff};
pub use timing::Timing;
pub use tracker::{GameState, Reading, ResumeError, ResumePly, StartError, Tracker, View};
