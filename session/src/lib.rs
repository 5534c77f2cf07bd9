//! One DGT board's whole conversation and judgement, synchronous and sans-IO.
//!
//! The relay runs one [`BoardSession`] per board, and every accuracy test drives the very
//! same code: bytes read from the board and the caller's monotonic milliseconds go in;
//! bytes to write and typed [`Effect`]s come out. Nothing here reads a clock, touches a
//! file or a socket, or spawns a thread; the shape is smoltcp's: `poll(now)` and
//! [`BoardSession::next_deadline`] for when to call it again.
//!
//! - [`link`]: the serial conversation with one board on one opening of its port
//!   (handshake, keep-alive, clock-command queue, battery polls, the event log).
//! - [`BoardSession`]: the link, the `dgt-core` tracker, [`reconcile`] after an outage,
//!   health alerts, and the operator's actions (flip, new game, correction, result),
//!   checked by the core.
//! - [`bus`]: a chain of boards on one line in DGT's bus mode ([`BusPoller`]): finds and
//!   polls them, and gives each board a virtual single-board line for its own link and
//!   session.
//!
//! ```
//! use dgt_session::{BoardSession, Effect, Link, SessionConfig};
//!
//! let config = SessionConfig::default();
//! // The port task opens the port and runs the handshake on a link ...
//! let mut link = Link::open(0, config.link);
//! let hello = link.take_output(); // write these bytes to the port
//! assert_eq!(hello[0], 0x40); // reset, then update mode, version, serial number
//! // ... and once the board answered (link.is_identified()), hands it to the board:
//! let mut board = BoardSession::new(1, None, config);
//! board.attach(5, link, "/dev/ttyUSB0");
//! board.on_bytes(10, &[]);
//! board.poll(board.next_deadline());
//! for effect in board.drain_effects() {
//!     match effect {
//!         Effect::Write(bytes) => { /* to the port */ let _ = bytes; }
//!         other => { /* journal, then publish */ let _ = other; }
//!     }
//! }
//! ```
//!
//! # Without std
//! The crate is `no_std` with `alloc` when its default `std` feature is off: the firmware
//! runs the same sessions on a microcontroller. `std` adds std's error trait and logging
//! through `tracing` (see the `tracing` feature); nothing else differs.

#![cfg_attr(not(feature = "std"), no_std)]
// Without `tracing` the log macros compile nothing: what only a log line reads is unused
// there, and a match arm that only logs is empty. The host's build (with `tracing`) still
// finds every truly unused value.
#![cfg_attr(not(feature = "tracing"), allow(unused_variables, clippy::single_match))]

extern crate alloc;

mod log;

mod admin;
pub mod alert;
mod board;
pub mod bus;
pub mod effect;
pub mod health;
pub mod link;
pub mod reconcile;

pub use admin::AdminError;
pub use alert::{Alert, AlertCode, AlertLevel};
pub use board::{BoardSession, IDLE_POLL_MS, PLIES, RAW_BOARDS_KEPT, SavedGame, SessionConfig};
pub use bus::{BusEvent, BusPoller, BusStats, BusTiming};
pub use effect::{Effect, LinkState, MoveState};
pub use link::{Link, LinkEvent, LinkTiming};
