//! What the poller keeps for each board on the chain: its place in the polling, what it
//! wants read next, the last clock reading, the press waiting for one, and its event log.

use alloc::collections::VecDeque;
use alloc::{vec, vec::Vec};

use dgt_protocol::ee::encode_ee_moves;
use dgt_protocol::{ClockTimes, EeEvent};

use super::line::VirtualLine;

/// Most EEPROM bytes kept per board for its event log (a board's own buffer holds 0x1F00).
pub const EVENT_LOG_BYTES: usize = 0x1F00;

/// One board on the chain.
#[derive(Debug)]
pub(super) struct Board {
    pub(super) address: u16,
    pub(super) version: Option<(u8, u8)>,
    pub(super) present: bool,
    /// Reported with [`super::BusEvent::Found`] (a line is open).
    pub(super) announced: bool,
    pub(super) misses: u32,
    pub(super) last_heard: u64,
    pub(super) next_probe: u64,
    /// The next changes are what it logged while no line was open: recorded only.
    pub(super) fresh: bool,
    /// The last changes packet failed: ask again with `REPEAT_CHANGES`.
    pub(super) repeat: bool,
    /// The last changes packet's bytes (to tell a stale repeat).
    pub(super) last_changes: Vec<u8>,
    pub(super) want_dump: bool,
    pub(super) want_clock: bool,
    pub(super) next_clock: u64,
    /// The last reading sent (read, or made from a logged press).
    pub(super) last_times: Option<ClockTimes>,
    /// A reading of the running clock was held back: its lever showed a press the changes
    /// had not logged yet (see [`super::BusPoller`]`::clock`).
    pub(super) held: bool,
    /// No reading went out since a game may have begun: the next running one may show a
    /// first press the changes have not brought yet, and its lever cannot tell.
    pub(super) game_unread: bool,
    /// Its line is new (found, or back) and no reading went out on it since: the last one
    /// is from before, and a press is not built on it.
    pub(super) stale: bool,
    /// What the changes brought from a press on that had no reading to build on (no
    /// clock read yet, or a game may have begun since the last reading, whose clock may be
    /// a new one): forwarded, in order, once the clock is read after it.
    pub(super) deferred: Vec<EeEvent>,
    /// Every EEPROM event the changes brought, for the event log.
    pub(super) log: VecDeque<EeEvent>,
    pub(super) log_bytes: usize,
    /// The log holds a power-up (or a dump's listing standing for one).
    pub(super) anchored: bool,
    pub(super) line: Option<VirtualLine>,
    /// Its line was closed by the caller while the board is still there: offered again
    /// from this time.
    pub(super) reoffer: Option<u64>,
}

impl Board {
    pub(super) fn new(address: u16, now: u64) -> Board {
        Board {
            address,
            version: None,
            present: true,
            announced: false,
            misses: 0,
            last_heard: now,
            next_probe: now,
            fresh: true,
            repeat: false,
            last_changes: Vec::new(),
            want_dump: false,
            want_clock: true,
            next_clock: now,
            last_times: None,
            held: false,
            game_unread: true,
            stale: true,
            deferred: Vec::new(),
            log: VecDeque::new(),
            log_bytes: 0,
            anchored: false,
            line: None,
            reoffer: None,
        }
    }

    pub(super) fn record(&mut self, e: EeEvent) {
        let len = ee_len(&e);
        self.log.push_back(e);
        self.log_bytes += len;
        while self.log_bytes > EVENT_LOG_BYTES {
            match self.log.pop_front() {
                Some(old) => self.log_bytes -= ee_len(&old),
                None => self.log_bytes = 0,
            }
        }
        if matches!(e, EeEvent::PowerUp) {
            self.anchored = true;
        }
    }
    /// The board as the event log has it: the last power-up's listing of the pieces and
    /// every change since (`None` when the log holds no power-up).
    pub(super) fn logged_board(&self) -> Option<[u8; 64]> {
        let start = self.log.iter().rposition(|e| matches!(e, EeEvent::PowerUp | EeEvent::WatchdogAction))?;
        let mut raw = [0u8; 64];
        for e in self.log.iter().skip(start) {
            if let EeEvent::Field { square, piece, .. } = e {
                raw[usize::from(square.index())] = piece.code();
            }
        }
        Some(raw)
    }

    /// The event log as the board's `EE_MOVES` message would carry it.
    pub(super) fn event_log(&self) -> Vec<u8> {
        let mut events: Vec<EeEvent> = self.log.iter().copied().collect();
        events.push(EeEvent::Eof);
        let mut out = vec![0u8; 3 + 3 * events.len()];
        match encode_ee_moves(&events, &mut out) {
            Ok(n) => out.truncate(n),
            Err(_) => out.clear(),
        }
        out
    }
}

pub(super) fn ee_len(e: &EeEvent) -> usize {
    match e {
        EeEvent::Malformed { len, .. } => usize::from(*len).max(1),
        other => other.encode(&mut [0u8; 3]).unwrap_or(1),
    }
}
