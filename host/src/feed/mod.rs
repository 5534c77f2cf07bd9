//! The live feed: shared board state, sequence numbers, and fan-out to websocket clients.
//!
//! - `views.rs`: what a board looks like to a client, and the [`Delta`]s that change it;
//! - `hub.rs`: the shared state, numbering, the broadcast delay and the fan-out ring;
//! - `alerts.rs`: the alert book (ids, times, what resolves what, acknowledgements);
//! - `privacy.rs`: what spectators must not see;
//! - `client.rs`: one websocket client, its requests, limits and session on the socket.
//!
//! # Why a broadcast ring
//! Every change becomes one [`Delta`], numbered, applied to the shared [`BoardView`]s and
//! serialised to JSON exactly once, then put in a `tokio::sync::broadcast` ring. Sending
//! into the ring never waits for a receiver, so a slow client cannot delay a board or
//! another client. A client that falls further behind than the ring holds gets
//! `Lagged`: it is resynchronised with a fresh snapshot, and dropped if that keeps
//! happening. A client whose socket does not accept a frame within a time limit is
//! dropped too. Queues are therefore bounded by the ring size, per relay, not per client.
//!
//! # Why clock readings are mostly not deltas
//! A running clock is read once a second, but a client can count it down itself from the
//! last value it got. [`Hub::clock`] keeps every reading in the state (snapshots and
//! `/api/boards` are current) and sends a delta only when the clocks change state (a press,
//! a stop, a time set). With 100 running clocks this removes 100 frames a second per
//! subscriber, most of the feed's traffic in a real round.
//!
//! # What spectators see
//! The feed, `/api/boards` and `/health` need no token, so they carry no filesystem or
//! device path: a board's `port` is left out, and alert messages have the data folder,
//! the boards' ports and other absolute paths replaced ([`Private`]). The hub keeps the
//! whole state for the operator's views (`/api/admin/boards`).
//!
//! # Why the lock covers numbering and sending
//! [`Hub::publish`] assigns the sequence number, updates the state and sends under one
//! mutex, and [`Hub::subscribe`] copies the state and creates its receiver under the same
//! mutex. So a snapshot with sequence `n` is followed on the receiver by exactly the deltas

mod alerts;
mod client;
mod hub;
mod privacy;
mod views;

pub use alerts::{AlertCode, AlertEntry, AlertLevel, AlertView, MAX_ALERTS, counterpart};
pub use client::{
    ClientAction, ClientEnd, ClientInput, ClientLimits, ClientSession, MAX_BATCH, MAX_CLIENT_MESSAGE,
    READ_BUFFER, serve_client, snapshot_frame,
};
pub use hub::{Frame, Hub, RING, clock_needs_delta};
pub use privacy::Private;
pub use views::{BoardStatus, BoardView, ClockView, Delta, MoveState, MoveView, Side, Snapshot};

/// The version of the JSON feed format, sent as `"v"` in every frame.
pub const FEED_VERSION: u32 = 1;
