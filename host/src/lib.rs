//! The DGT live relay daemon.
//!
//! Data flows one way: serial bytes ([`port`]) -> the board's `dgt-session` (decoder,
//! tracker, reconciliation, health), run by its task ([`board`]) -> the board's outputs: the
//! journal first ([`store`] of [`record`]s), then the PGN text ([`pgn`]) and the websocket
//! feed ([`feed`]); from the PGN texts, the Lichess push ([`push`]), the data folder's index
//! files ([`export`]) and NATS ([`nats`], also the edges' source). [`tournament`] is the
//! model they all read (event, rounds, pairings; [`config`] and [`trf`] are read into it).
//! [`http`] serves the routes on [`server`]; [`relay`] wires everything together and
//! [`shutdown`] stops it. A board whose session runs on a relay box comes through a [`bridge`]
//! instead of a port. [`eboard`] speaks DGT LiveChess's EBoard API for programs made for it.
//! [`fuzz`] holds the fuzz targets (arbitrary bytes into each input of
//! the relay).

pub mod board;
pub mod bridge;
pub mod clock;
pub mod config;
pub mod delay;
#[cfg(feature = "demo")]
pub mod demo;
pub mod eboard;
pub mod export;
pub mod feed;
pub mod fuzz;
pub mod http;
pub mod invalid;
pub mod nats;
pub mod pgn;
pub mod port;
pub mod push;
pub mod record;
pub mod relay;
pub mod server;
pub mod shutdown;
pub mod store;
pub mod tournament;
pub mod trf;

pub mod web;
