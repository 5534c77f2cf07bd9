//! The DGT live relay daemon.
//!
//! Data flows one way: serial bytes ([`serial`]) -> protocol decoder -> the board tracker
//! ([`board`], which adapts `dgt-core`'s events) -> fan-out: the journal and PGN files
//! ([`store`], [`pgn`]), the websocket feed ([`feed`]) and HTTP ([`http`]). [`relay`]
//! wires them together, [`config`] reads the settings and [`shutdown`] stops everything.

pub mod board;
pub mod config;
pub mod demo;
pub mod feed;
pub mod http;
pub mod pgn;
pub mod reconcile;
pub mod relay;
pub mod serial;
pub mod shutdown;
pub mod store;
pub mod web;
