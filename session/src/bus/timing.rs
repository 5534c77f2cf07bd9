//! How long the poller waits for what: the timing of a 9600-baud bus.

/// The byte time of a 9600-baud line, rounded up, in microseconds.
pub(super) const BYTE_US: u64 = 1_042;

/// A deadline checked this long (ms) after it fell due was checked late: the relay itself
/// was held up (a loaded machine), and what the line brought in time may be waiting unread.
/// It is put off by [`REREAD_MS`] instead of judged, so that a reply is never timed out by
/// the relay's own delay; only a check made in time judges it.
pub(super) const LATE_CHECK_MS: u64 = 30;

/// How long a deadline checked late is put off: time for the bytes waiting to be read.
pub(super) const REREAD_MS: u64 = 5;

/// Timing of the bus, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BusTiming {
    /// How long a command waits for the start of its reply, from when it was written.
    pub reply_timeout_ms: u64,
    /// How long the opening's single-board answers (trademark, address) may take.
    pub opening_ms: u64,
    /// How long a broadcast's answers are collected (the boards spread them over 1.1 s).
    pub broadcast_window_ms: u64,
    /// Discovery rounds at most, per discovery.
    pub max_rounds: u32,
    /// How often each board's clock is read.
    pub clock_period_ms: u64,
    /// Missed replies in a row, and ...
    pub miss_limit: u32,
    /// ... time since the last reply, after which a board is gone.
    pub gone_after_ms: u64,
    /// How often a board that went away is pinged.
    pub probe_gone_ms: u64,
    /// How often the chain is searched for new boards (each search stops polling for about
    /// 1.5 s).
    pub rediscover_ms: u64,
    /// When one changes packet holds a press and more after it, how much later what
    /// follows the press goes out on the virtual line than the press: a single board's
    /// session sees a press with the board still after it before the next move (it times a
    /// press against the board's changes), and this restores that gap.
    pub press_gap_ms: u64,
    /// When one changes packet holds several scans' changes, how much later each scan's go
    /// out than the one before: the session dates a ply by the reports of its squares, and
    /// tells which of several plies a press was for by which came last before it.
    pub scan_gap_ms: u64,
    /// The least time between two dumps read from a board (see
    /// `BusPoller::answer_requests`): its session's other dump requests get the board as its
    /// log has it.
    pub doubt_dump_ms: u64,
}

impl Default for BusTiming {
    fn default() -> Self {
        BusTiming {
            reply_timeout_ms: 80,
            opening_ms: 400,
            broadcast_window_ms: 1_300,
            max_rounds: 8,
            clock_period_ms: 1_000,
            miss_limit: 3,
            gone_after_ms: 1_500,
            probe_gone_ms: 2_000,
            rediscover_ms: 300_000,
            press_gap_ms: 400,
            scan_gap_ms: 60,
            doubt_dump_ms: 1_000,
        }
    }
}
