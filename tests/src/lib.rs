//! End-to-end acceptance, interop checks and benchmarks of the DGT live relay: simulated
//! boards (`dgt-hil-sim`) on real pseudo-terminals feed the real `dgt-relay` binary; real
//! websocket and HTTP clients read what it publishes, which is compared with the ground
//! truth of the replayed corpus games and read back by independent PGN readers.
//!
//! - [`relay`]: the relay process, its HTTP API, its CPU and memory.
//! - [`nats`]: a real nats-server with JetStream, for the venue relay and edge tests.
//! - [`feed`]: a recording websocket client.
//! - [`acceptance`]: corpus games under noise profiles, compared with the ground truth.
//! - [`captures`]: the three real board captures written into a pty chunk by chunk.
//! - [`export_format`]: an export-format checker written from the PGN standard.
//! - [`faults`]: the relay killed with SIGKILL and restarted under live games.
//! - [`firmware`]: relay boxes: the firmware booted in QEMU between a simulated board and
//!   the relay, the relay killed and garbage on the bridge.
//! - [`offline`]: the tracker fed straight from the simulated firmware, no relay, no pty.
//! - [`bus_offline`]: a chain of simulated firmwares read by the relay's own bus poller and
//!   sessions, in one deterministic loop.
//! - [`scripts`]: an independent emulator's hand scripts as jobs of those harnesses.
//! - [`interop`]: python-chess, pgn-extract and chess.js on the published PGN.
//! - [`suite`]: the fast subset and the full sweep, with their report.

pub mod acceptance;
pub mod bus_offline;
pub mod captures;
pub mod export_format;
pub mod faults;
pub mod feed;
pub mod firmware;
pub mod interop;
pub mod nats;
pub mod offline;
pub mod relay;
pub mod scripts;
pub mod suite;
