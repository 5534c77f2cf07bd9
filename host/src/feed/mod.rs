//! The live feed: shared board state, sequence numbers, and fan-out to websocket clients.
//!
//! - `views.rs`: what a board looks like to a client, and the [`Delta`]s that change it;
//! - `hub.rs`: the shared state, numbering, the broadcast delay, and handing each frame on;
//! - `writer.rs`: the websocket writers, a task per core writing every frame to its share
//!   of the clients;
//! - `frame.rs`: a numbered delta as JSON and as its websocket frame;
//! - `clocks.rs`: when a clock reading is news;
//! - `session.rs`: one client's requests, limits and answers, apart from its socket;
//! - `quota.rs`: limits per client address across its connections;
//! - `client.rs`: one websocket client's task, reading what it sends;
//! - `alerts.rs`: the alert book (ids, times, what resolves what, acknowledgements);
//! - `privacy.rs`: what spectators must not see.
//!
//! # Why every frame is made once
//! Every change becomes one [`Delta`], numbered, applied to the shared [`BoardView`]s and
//! serialised to JSON exactly once. The frame's bytes are shared by every client (a
//! reference count) and by the in-process readers of the hub's ring. Handing a frame on
//! never waits for a client: a slow client cannot delay a board or another client. A client
//! whose queue grows past the ring's size is resynchronised with a fresh snapshot, and
//! dropped if that keeps happening; one whose socket takes nothing for a time limit is
//! dropped too.
//!
//! # Why clock readings are mostly not deltas
//! A running clock is read once a second, but a client can count it down itself from the
//! last value it got. [`Hub::clock_reading`] keeps every reading in the state (snapshots
//! and `/api/boards` are current) and sends a delta only when the clocks change state (a
//! press, a stop, a time set). With 100 running clocks this removes 100 frames a second per
//! subscriber, most of the feed's traffic in a real round.
//!
//! # What spectators see
//! The feed, `/api/boards` and `/health` need no token, so they carry no filesystem or
//! device path: a board's `port` is left out, and alert messages have the data folder,
//! the boards' ports and other absolute paths replaced ([`Private`]). The hub keeps the
//! whole state for the operator's views (`/api/admin/boards`).
//!
//! # Why the lock covers numbering and sending
//! [`Hub::publish`] assigns the sequence number, updates the state and hands the frame on
//! under one mutex, and a subscription (a ring receiver, a websocket client held at its
//! writer) is made with its snapshot under the same mutex. So a snapshot with sequence `n`
//! is followed by exactly the deltas `n+1, n+2, ...`: nothing is missed and nothing is
//! applied twice.

mod alerts;
mod client;
mod clocks;
mod frame;
mod hub;
mod privacy;
mod quota;
mod session;
mod views;
mod wire;
mod writer;

pub use alerts::{AlertCode, AlertEntry, AlertLevel, AlertView, MAX_ALERTS, counterpart};
pub use client::{ClientSocket, MAX_CLIENT_MESSAGE, READ_BUFFER, serve_client};
pub use clocks::clock_needs_delta;
pub use frame::{Frame, RING};
pub use hub::{Change, Hub};
pub use privacy::Private;
pub use quota::{AddressQuotas, AddressTicket, QuotaRefusal};
pub use session::{ClientAction, ClientEnd, ClientInput, ClientLimits, ClientSession, snapshot_frame};
pub use views::{BoardStatus, BoardView, ClockView, Delta, MoveState, MoveView, Side, Snapshot};
pub use writer::Keep;

/// The version of the JSON feed format, sent as `"v"` in every frame.
pub const FEED_VERSION: u32 = 1;
