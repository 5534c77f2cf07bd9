//! What the poller keeps for each board on the chain: its place in the polling, what it
//! wants read next, the last clock reading, the press waiting for one, and its event log.

use alloc::collections::VecDeque;
use alloc::{vec, vec::Vec};

use dgt_protocol::ee::encode_ee_moves;
use dgt_protocol::{ClockSide, ClockTimes, EeEvent};

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
    /// A `SEND_CHANGES` went out while [`Board::fresh`]: a `REPEAT_CHANGES` after it (its
    /// reply lost or garbled) brings that first packet, and ends `fresh` as it would have.
    pub(super) fresh_asked: bool,
    /// The last changes packet failed: ask again with `REPEAT_CHANGES`.
    pub(super) repeat: bool,
    /// The last changes packet's bytes (to tell a stale repeat).
    pub(super) last_changes: Vec<u8>,
    /// A real dump (`SEND_BRD`) is to be read in its next turn.
    pub(super) want_dump: bool,
    /// The real dump to be read checks the log only: its session was answered already (a
    /// backlog was let out), so it goes out only when it shows a change the log missed.
    pub(super) check_read: bool,
    /// Its session asked for a dump (`42`): answered after the next changes are read, from
    /// [`Board::model`] unless in doubt (see [`super::BusPoller`]`::answer_dump`).
    pub(super) dump_asked: bool,
    /// Its session asked for the event log (`49`): answered after the next changes are read.
    pub(super) log_asked: bool,
    /// The board as its log has it: a listing (power-up, start tag) or a real dump, and
    /// every change logged since (`None`: not known yet).
    pub(super) model: Option<[u8; 64]>,
    /// The model may be wrong (a changes packet lost, an event garbled): the next dump the
    /// session asks for is read from the board.
    pub(super) doubt: bool,
    /// The model changed since the last dump went out on the line.
    pub(super) changed_since_dump: bool,
    /// A press came in the changes since the board was last read whole.
    pub(super) pressed_since_read: bool,
    /// When the last real dump was read.
    pub(super) last_real_dump: Option<u64>,
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
    /// Whose press the log last holds in this game (`None`: none since the game's start
    /// position or a power-up): the clock's lever shows the other side up until the next
    /// press. A reading whose lever is otherwise shows a press the log has not brought yet.
    pub(super) logged_press: Option<ClockSide>,
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
    /// The log holds a listing (a power-up, a start tag, or a dump standing for one).
    pub(super) anchored: bool,
    /// `SEND_FROM_START` was asked (once, when its first changes did not start at a listing).
    pub(super) from_start_asked: bool,
    /// A start tag is to be written (`SET_START_GAME`): the board shows a game's start
    /// position, or nothing on it anchors its log for a relay restarted later.
    pub(super) want_tag: bool,
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
            fresh_asked: false,
            repeat: false,
            last_changes: Vec::new(),
            want_dump: false,
            check_read: false,
            dump_asked: false,
            log_asked: false,
            model: None,
            doubt: false,
            changed_since_dump: false,
            pressed_since_read: false,
            last_real_dump: None,
            want_clock: true,
            next_clock: now,
            last_times: None,
            held: false,
            game_unread: true,
            logged_press: None,
            stale: true,
            deferred: Vec::new(),
            log: VecDeque::new(),
            log_bytes: 0,
            anchored: false,
            from_start_asked: false,
            want_tag: false,
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
        match e {
            EeEvent::PowerUp | EeEvent::WatchdogAction | EeEvent::StartTag => {
                // A listing of every piece follows: the board from scratch (after a power-up,
                // the clock's lever is not known from the log).
                if e != EeEvent::StartTag {
                    self.logged_press = None;
                }
                self.anchored = true;
                self.model = Some([0; 64]);
                self.changed_since_dump = true;
            }
            EeEvent::Field { square, piece, .. } => {
                if let Some(m) = self.model.as_mut() {
                    let k = usize::from(square.index());
                    self.changed_since_dump |= m[k] != piece.code();
                    m[k] = piece.code();
                }
            }
            EeEvent::Malformed { .. } => self.doubt = true,
            EeEvent::Time { side, .. } => self.logged_press = Some(side),
            EeEvent::BeginPos | EeEvent::BeginPosRotated | EeEvent::FourRows => self.logged_press = None,
            _ => {}
        }
    }

    /// A dump read from the board at `now`: the board from here on (the next changes go on
    /// from it). One that differs from the log shows a change the log missed, or a hand at
    /// work as it was read, as a single board's dump would.
    pub(super) fn real_dump(&mut self, now: u64, raw: [u8; 64]) {
        self.pressed_since_read = false;
        self.last_real_dump = Some(now);
        if self.model.is_some_and(|m| m != raw) {
            crate::log::debug!(address = self.address, "a dump differs from the board's log");
        }
        self.model = Some(raw);
        self.doubt = false;
    }

    /// Starts the log afresh with `events` (a `SEND_FROM_START` answer: from the start tag
    /// to what the changes have sent, which it holds).
    pub(super) fn restart_log(&mut self, events: &[EeEvent]) {
        self.log.clear();
        self.log_bytes = 0;
        self.anchored = false;
        self.model = None;
        self.logged_press = None;
        for &e in events {
            self.record(e);
        }
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
