//! A chain of DGT boards on one serial line in DGT's bus mode, sans-IO: [`BusPoller`] owns
//! the line (bytes and the time in, bytes to write out), finds the boards on it, polls them
//! in turn, and plays, for each board, the board's side of a single-board serial line: a
//! *virtual line* whose other end is that board's own [`crate::Link`] and
//! [`crate::BoardSession`].
//!
//! # The seam: a virtual single-board line per board
//! A board session is the whole judgement of one board (tracker, reconciliation after an
//! outage, health, alerts, operator actions), and the offline accuracy sweeps run that very
//! code. A second way into it (typed messages through a new entry point, its own timers, its
//! own outage handling) would be a path the sweeps never take. So the poller does not call
//! the session: it answers each board's link exactly as a single board in update mode
//! would, and the host hands that virtual line to the board's task like a serial port.
//! Nothing in the link, the session or the board task knows about the bus; what they see
//! is a board whose messages come in bursts, one burst per poll.
//!
//! What crosses the seam, bus reply to single-board message:
//!
//! | bus | virtual line |
//! |---|---|
//! | field event in the changes (`SEND_CHANGES`) | `FIELD_UPDATE` (in update modes), in the EEPROM's order; after a press in the same packet, and after a press a later scan's change, [`BusTiming::press_gap_ms`] later |
//! | time event in the changes (a lever press: the halted side's display) | `BWTIME`: the last clock reading with that display and the lever turned (after a reading of the clock running, presser's side up, when the last one showed it stopped); the clock is read right after. The first press of what may be a new game waits for that reading, with what followed it in the changes, and is built on it, after the clock as set (stopped, presser's side up) |
//! | power-up (or watchdog) in the changes | nothing for its listing of the pieces (not changes: each piece once, no empty square; what breaks that pattern is a change made since); a board dump is read |
//! | clock reading (`SEND_CLK`, every [`BusTiming::clock_period_ms`] and after a press) | `BWTIME` when it differs from the last one sent (update-nice), every one in `43` mode; a running clock's reading whose lever shows a press the changes have not brought yet is held back once (the press comes with the next changes, in its place); a line's first reading still ahead of the log's last press goes out after the clock as it ran before that press, so the press is seen |
//! | the board as its log has it (a listing, every change since; a board dump read on doubt) | `BOARD_DUMP`, when the session asks (`42`) |
//! | every EEPROM event the changes brought (or the log from the start tag, `SEND_FROM_START`) | the event log (`49`), as the board's own `EE_MOVES` |
//!
//! and link command to bus: `42` reads a dump, `41` the clock, `45`/`4D`/`46` are answered
//! at once (serial number: the address as five digits; version: the bus version reply;
//! address), `49` with the event log above, `40`/`43`/`44`/`4B` set the virtual board's
//! mode. Bus mode carries no clock commands: a clock version query is acknowledged (version
//! 0.0, unknown) once a clock reading shows a clock, and other clock commands, and `47`,
//! `4C`, `55`, get no answer, as from a board that cannot reach its clock or does not know
//! the command.
//!
//! Why these choices:
//! - Changes come from the board's EEPROM, which logs every change in order, so the session
//!   sees the same field updates a single board sends, late by at most a polling cycle.
//! - A press is a time event in the changes, in its place between the field events: turned
//!   into a reading there, the tracker sees the move, then the press, then the next move,
//!   as on a single board, even when all three fall in one polling cycle. The true reading
//!   follows within the same turn.
//! - The first press after a start position (in the changes or a dump)
//!   is not built on the last reading: that may be the previous game's clock (the arbiter
//!   sets a new game's clock between two readings of it). It waits for the reading after
//!   it (read before any dump of that turn, a few milliseconds later) and goes out built on
//!   that one, after the readings a single board sends of a clock being set and started
//!   (stopped, then running, the presser's lever up): the tracker learns White's side
//!   from them.
//! - What a board logged while no line was open to it (before it was found, while it was
//!   off the chain) is not sent as field updates: it would arrive after the reconnect dump,
//!   out of order. It goes to the event log, which the session reads when the reconnect
//!   dump differs from the board it kept (its reconciliation, as after a USB unplug).
//! - A board that stops answering is *gone*: the caller closes its virtual line, the
//!   session sees its port lost (`not_responding`). Answering again, it is found again and
//!   gets a new line; the session reconciles.
//!
//! # Finding the boards (fact sheet 2.3, 2.4; DGT's header, "Tips for usage")
//! The opening LiveChess sends: `40 40 40` (every board to single-board idle), `47`, `46`,
//! then `4A` (every board to bus mode) and a version request to address 0. Then rounds of
//! discovery: `IGNORE_NEXT_BUS_PING` to every board found (each answers at once and will not
//! answer the next broadcast), a ping to address 0 (the others answer at a random moment of
//! 1.1 s), until a round finds no new board and shows no sign of a collision. Boards that
//! went away are pinged by address every [`BusTiming::probe_gone_ms`]; a new discovery round
//! runs every [`BusTiming::rediscover_ms`] for boards added to the chain.
//!
//! # Dumps on doubt, start tags, a relay restarted
//! The poller keeps each board's position from its log: a listing (power-up, start tag)
//! and every change since, or a dump read from the board. A session's dump request is
//! answered from it, after the next changes (the board as the changes the session has show
//! it, never a board ahead of them); while more than a press's gap of changes is still held
//! back on the line, with the board as the session has seen it so far, at once. The board
//! is read whole (`SEND_BRD`, DGT's header: "when any mismatch occurs: ask full position")
//! when its log is in doubt (a packet lost, an event garbled, no listing yet), when the
//! session asks again with nothing changed (it cannot explain the board), and to check the
//! ply a press ends, each at most once a second, also while a backlog is let out (its
//! dump then goes out behind the backlog, only when it shows a change the log missed);
//! what that read shows is the board from then on. A board that shows a game's start
//! position gets a start tag at once (`SET_START_GAME`: the tag and a listing of every
//! piece go into its log); one found with a
//! game under way, one a cycle. A board whose first changes do not begin with a listing (a
//! relay read it before and stopped) is asked for its log from the tag
//! (`SEND_FROM_START`), which becomes the poller's log: a restarted session reconciles its
//! journal's last position with it.
//!
//! # Polling (the latency bound)
//! Boards take turns, in address order. A turn is: the changes (`SEND_CHANGES`); the log
//! from the start tag, or a start tag, when due; a dump when in doubt (see above); the clock
//! when it is due, after a press or a dump, or when the session asked (`SEND_CLK`). The reading
//! after a dump is sent even when unchanged: a game that dump starts learns White's side
//! from the lever of its first reading. One command is on the line at
//! a time (replies share it), each waits [`BusTiming::reply_timeout_ms`] for the start of
//! its reply ("allow a time-out of say 80 ms"), longer while a reply is arriving. A reply
//! with a bad checksum is asked again (`REPEAT_CHANGES` for changes, as DGT's header says:
//! `SEND_CHANGES` would discard them), and so is a changes reply that holds an event no
//! board writes (a 7-bit checksum passes one garbled reply in 128); a changes reply lost
//! for good means a dump. So a
//! board's changes are at most one cycle old: N turns of one changes poll (about 15 ms on
//! a 9600-baud line), plus a clock reading per board per second (about 20 ms each).
//!
//! # Unconfirmed
//! How a board answers a version request sent to address 0 (LiveChess sends one; here it is
//! handled as a ping's answers are); whether `SEND_CHANGES` after a board's power-up starts
//! at the power-up or where the last poll left off (both are handled: a listing restates the
//! board, and only what it names otherwise than the session's board is a change); and what
//! `SEND_FROM_START` answers when a board has no start tag (taken as no tag: one is
//! written).

mod board;
mod changes;
mod line;
mod poller;
mod press;
mod replies;
mod schedule;
mod timing;

use alloc::string::String;
pub use board::EVENT_LOG_BYTES;
pub use line::serial_of;
pub use poller::BusPoller;
pub use timing::BusTiming;

/// What the poller reports, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BusEvent {
    /// A board is on the chain (found, or back): open a virtual line for it
    /// ([`BusPoller::line_input`], [`BusPoller::take_line_output`]).
    Found {
        /// Its address.
        address: u16,
        /// Its serial number as its virtual line answers `45`: the address, five digits.
        serial: String,
        /// Its firmware version.
        version: (u8, u8),
    },
    /// A board stopped answering: close its virtual line.
    Gone {
        /// Its address.
        address: u16,
        /// Why, for people.
        reason: String,
    },
}

/// Counters, for logs and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BusStats {
    /// Commands written.
    pub commands: u64,
    /// Replies that came back good.
    pub replies: u64,
    /// Commands whose reply never came.
    pub timeouts: u64,
    /// Replies with a bad checksum.
    pub bad_checksums: u64,
    /// `REPEAT_CHANGES` sent.
    pub repeats: u64,
    /// Bytes thrown away by the decoder.
    pub noise_bytes: u64,
    /// Polling cycles completed (every present board had a turn).
    pub cycles: u64,
    /// The last cycle's length, ms.
    pub last_cycle_ms: u64,
    /// The longest cycle so far, ms.
    pub max_cycle_ms: u64,
}
