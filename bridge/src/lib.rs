//! The bridge between a relay box and a host.
//!
//! A relay box runs the board's whole session ([`dgt_session::BoardSession`]) next to the
//! board and hands its effects (games, provisional and confirmed moves with their clocks,
//! clock readings, results, alerts, battery, the board's link) to a host over a serial
//! line; the host journals and publishes them as it does a local board's. This crate is
//! both ends, sans-IO, so firmware, host and tests run the same code:
//!
//! - [`frame`]: frames on the line: version byte, postcard body, CRC-32, COBS.
//! - [`wire`]: what the frames carry, both ways.
//! - [`game`]: [`GameLog`], a game as a host journals it: the device's buffer of what a
//!   host may have missed, and the host's mirror of what it has.
//! - [`device`]: [`Device`], the relay box: board link, session, records, resumes.
//! - [`host`]: [`HostEnd`], the host's end: effects in order and exactly once, resumes,
//!   acknowledgements, operator actions.
//! - [`convert`]: between the session's types and the wire's.
//!
//! `no_std` with `alloc`. The protocol is specified in `docs/bridge.md`.

#![no_std]

extern crate alloc;

pub mod convert;
pub mod device;
pub mod frame;
pub mod game;
pub mod host;
pub mod wire;

pub use device::{Device, DeviceConfig, PlatformFigures};
pub use frame::{FrameDecoder, FrameError, FrameStats, MAX_FRAME, VERSION};
pub use game::{GameLog, LineCursor, line_hash, ply_of, resume_from};
pub use host::{Answer, HostEnd, HostStats};
pub use wire::{Action, DeviceHello, DeviceStatus, Down, GameKey, Outcome, Record, Resume, Up};
