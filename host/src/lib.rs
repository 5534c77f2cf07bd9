//! The DGT live relay daemon.
//!
//! Data flows one way: serial bytes ([`port`]) -> the board's `dgt-session` (decoder,
//! tracker, reconciliation, health), carried out by its task ([`board`]) -> fan-out: the
//! journal and PGN files ([`store`] of [`record`]s, [`pgn`]), the websocket feed ([`feed`])
//! and HTTP ([`http`] on [`server`], operator commands in [`admin`]). [`relay`] wires them together,
//! [`config`] reads the settings and [`shutdown`] stops everything. A board whose session runs
//! on a relay box comes through a [`bridge`] instead of a port. [`fuzz`] holds the fuzz
//! targets (arbitrary bytes into each input of the relay).

pub mod admin;
pub mod board;
pub mod bridge;
pub mod config;
pub mod delay;
#[cfg(feature = "demo")]
pub mod demo;
pub mod export;
pub mod feed;
pub mod fuzz;
pub mod http;
pub mod nats;
pub mod pgn;
pub mod port;
pub mod push;
pub mod record;
pub mod relay;
pub mod server;
pub mod shutdown;
pub mod store;
pub mod trf;
pub mod web;
