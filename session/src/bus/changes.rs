//! What a board's replies become on its virtual line: the changes (field events, presses
//! turned into clock readings, a power-up's listing left out), clock readings (held back
//! when ahead of the changes), dumps; and what each makes the poller read next.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use dgt_protocol::{
    BoardDump, BusCommandKind, Bwtime, ClockTimes, DgtSquare, EeEvent, FieldUpdate, Message, Orientation,
    PieceCode,
};

use super::BusPoller;
use super::board::Board;
use super::press::{game_start_readings, press_readings};

impl Board {
    /// A dump on the virtual line.
    pub(super) fn send_dump(&mut self, d: BoardDump) {
        self.changed_since_dump = false;
        if let Some(line) = self.line.as_mut() {
            line.send(&Message::BoardDump(d));
            line.dumped = true;
            // The next reading goes out even if unchanged: a game this dump starts learns
            // White's side from the lever of its first reading, which must not be a press.
            // Only a start position starts one (the dumps a session asks for mid-game do
            // not make its next press a new game's).
            line.last_sent = None;
            if shows_start(&d) {
                line.new_game = true;
                line.start_sent = false;
                self.game_unread = true;
            }
        }
    }

    /// Sends changes on the virtual line (see [`super`]). A press with no reading to
    /// build on (none yet, or a game may have begun since the last one: its clock may be
    /// new) is deferred with all that follows it until the clock is read; `fresh` is that
    /// reading, taken after the deferred press.
    pub(super) fn forward(
        &mut self,
        now: u64,
        gaps: Gaps,
        events: &[EeEvent],
        mut fresh: Option<ClockTimes>,
    ) {
        let address = self.address;
        if let Some(line) = self.line.as_mut() {
            line.gap_until = None;
        }
        if !self.deferred.is_empty() {
            self.deferred.extend_from_slice(events);
            return;
        }
        let first_press = events.iter().find_map(|e| match e {
            EeEvent::Time { side, .. } => Some(*side),
            _ => None,
        });
        let Some(line) = self.line.as_mut() else { return };
        let unready = line.new_game || self.stale || self.last_times.is_none_or(|t| t.status.no_clock());
        if let (Some(side), true) = (first_press, unready) {
            match fresh {
                None => {
                    // A press with no reading of this game's clock to build on: the packet
                    // waits whole for the clock to be read, so that the clock's start goes out
                    // before the moves, as a single board sends it.
                    crate::log::trace!(address, "changes deferred until the clock is read");
                    self.deferred.extend_from_slice(events);
                    return;
                }
                Some(r) if !r.status.no_clock() && (line.new_game || self.stale) => {
                    fresh = Some(game_start_readings(r, side, line));
                }
                Some(_) => {}
            }
        }
        // In a listing of the pieces (a power-up's, a start tag's: not changes): the board
        // the session has, the squares named, and how many of its pieces are left to name.
        let mut listing: Option<(Option<[u8; 64]>, u64, usize)> = None;
        // A press went out from this packet; the last event forwarded was a field event, on
        // this square.
        let (mut pressed, mut after_field) = (false, None::<u8>);
        for &e in events {
            let Some(line) = self.line.as_mut() else { return };
            match e {
                EeEvent::Field { square, piece, .. }
                    if listing.is_some_and(|(board, listed, left)| {
                        let k = square.index();
                        left > 0
                            && listed & (1u64 << k) == 0
                            && board.map_or(!piece.is_empty(), |b| b[usize::from(k)] == piece.code())
                    }) =>
                {
                    if let Some((_, listed, left)) = listing.as_mut() {
                        *listed |= 1u64 << square.index();
                        *left -= 1;
                    }
                }
                EeEvent::Field { square, piece, quick } => {
                    // A listing names each piece of the board once, and no empty square: a
                    // square the session has otherwise, one named already, or one more than
                    // the board holds, is a change (made after it, or while the board had no
                    // power).
                    listing = None;
                    if line.mode.fields() {
                        // Two presses or more with no change between: the changes that follow
                        // are two plies or more (a burst), in this packet or the next.
                        line.burst |= line.presses_since_field >= 2;
                        line.presses_since_field = 0;
                        // A later scan's change: the board logged it 250 ms or more after the
                        // one before, or a scan reports in square order and this one is not
                        // after the last.
                        let later_scan = after_field.is_some_and(|last| !quick || square.index() <= last);
                        if later_scan {
                            // After a press, another ply's, possibly: held as the press's
                            // gap; else a scan apart, so that plies a packet brings keep the
                            // order the board saw them in.
                            let long = (pressed || line.burst) && !quick;
                            line.hold_next(now, if long { gaps.press } else { gaps.scan });
                        }
                        line.before_field();
                        line.send(&Message::FieldUpdate(FieldUpdate::new(square, piece)));
                        after_field = Some(square.index());
                    }
                }
                EeEvent::Time { side, time } => {
                    listing = None;
                    crate::log::trace!(address, ?side, ?time, "press in the changes");
                    let replay = fresh.take();
                    let base = replay.or(self.last_times).filter(|t| !t.status.no_clock());
                    if let Some(base) = base {
                        line.before_press(now, gaps.scan);
                        self.last_times = Some(press_readings(base, side, time, line, replay.is_some()));
                        line.hold_next(now, gaps.press);
                        line.presses_since_field = line.presses_since_field.saturating_add(1);
                        line.burst = false;
                        pressed = true;
                        after_field = None;
                        self.held = false;
                        self.game_unread = false;
                    }
                    // Else the clock read after it shows none: no reading to send.
                }
                EeEvent::PowerUp | EeEvent::WatchdogAction | EeEvent::StartTag => {
                    // (Before the session has a board, every piece named is the listing's.)
                    let board = line.latest();
                    let pieces = board.map_or(64, |b| b.iter().filter(|c| **c != 0).count());
                    listing = Some((board, 0, pieces));
                }
                EeEvent::BeginPos | EeEvent::BeginPosRotated | EeEvent::FourRows => {
                    // A game may begin: its clock is new to the session.
                    listing = None;
                    line.new_game = true;
                    line.start_sent = false;
                    self.game_unread = true;
                }
                _ => listing = None,
            }
        }
        if let Some(line) = self.line.as_mut() {
            line.gap_until = None;
        }
    }
}

/// How far apart what one changes packet brings goes out on the virtual line.
#[derive(Clone, Copy, Debug)]
pub(super) struct Gaps {
    /// After a press (see [`super::BusTiming::press_gap_ms`]).
    pub(super) press: u64,
    /// Between two scans' changes (see [`super::BusTiming::scan_gap_ms`]).
    pub(super) scan: u64,
}

impl BusPoller {
    /// A changes packet: recorded for the event log; forwarded as field updates and
    /// readings (see [`super`]).
    pub(super) fn changes(&mut self, now: u64, address: u16, raw: Vec<u8>, repeat: bool) {
        let gaps = self.gaps();
        let Some(b) = self.boards.get_mut(&address) else { return };
        if repeat && raw == b.last_changes && !raw.is_empty() {
            // The board had not sent the lost packet: this is the one before, already had.
            // Unless the two were alike: read the board whole to be sure.
            b.doubt = true;
            b.want_dump = true;
            self.add_to_turn(address, BusCommandKind::SendBoard);
            return;
        }
        b.last_changes.clone_from(&raw);
        let forward = !b.fresh && b.line.is_some();
        crate::log::trace!(address, bytes = raw.len(), ?raw, forward, mode = ?b.line.as_ref().map(|l| l.mode), "changes");
        if !repeat || b.fresh_asked {
            // The first packet since the board was found is what it logged before (also
            // when it came as the repeat of a first reply lost or garbled: the next one is
            // what it logged since, and goes out on the line).
            b.fresh = false;
            b.fresh_asked = false;
        }
        // A line with no dump yet: its session must have the board before these changes (a
        // single board answers the handshake's dump request at once; here that request may
        // still wait for its answer). The model has it.
        let before = (forward && b.line.as_ref().is_some_and(|l| !l.dumped)).then_some(b.model).flatten();
        let packet: Vec<EeEvent> = dgt_protocol::EeEvents::new(&raw).iter().collect();
        let mut events = Vec::new();
        for &e in &packet {
            b.record(e);
            if forward {
                events.push(e);
            }
        }
        let press = events.iter().any(|e| matches!(e, EeEvent::Time { .. }));
        // A game's start position: a start tag there lets a relay restarted during the game
        // read it whole from the board (`SEND_FROM_START`, DGT's header, tips B and D).
        b.want_tag |= dgt_protocol::EeEvents::new(&raw)
            .iter()
            .any(|e| matches!(e, EeEvent::BeginPos | EeEvent::BeginPosRotated));
        // The first changes of a board this poller reads, when they do not begin with a
        // listing (a board read before by a relay that stopped: what it logged since lacks
        // the board it started from).
        let begins_listed = dgt_protocol::EeEvents::new(&raw)
            .iter()
            .find(|e| !matches!(e, EeEvent::Nop | EeEvent::Nop2))
            .is_some_and(|e| matches!(e, EeEvent::PowerUp | EeEvent::WatchdogAction | EeEvent::StartTag));
        let ask_from_start = !b.from_start_asked && !begins_listed;
        b.from_start_asked = true;
        if let Some(raw) = before.filter(|_| !events.is_empty()) {
            crate::log::trace!(address, "first dump on the line, from the event log");
            b.send_dump(BoardDump { raw });
        }
        b.forward(now, gaps, &events, None);
        // A board the log does not tell whole (never listed, a packet lost, an event garbled)
        // is read whole.
        b.want_dump |= b.model.is_none() || b.doubt;
        b.want_clock |= press;
        b.pressed_since_read |= press;
        let (want_dump, want_clock) = (b.want_dump, b.want_clock || now >= b.next_clock);
        if ask_from_start {
            // Its log does not reach back to a listing (the board was read before, by a
            // relay that stopped): the log from its start tag does, when it has one.
            self.add_to_turn(address, BusCommandKind::SendFromStart);
        } else if self
            .boards
            .get_mut(&address)
            .is_some_and(|b| b.want_tag && b.model.is_some_and(|m| shows_start(&BoardDump { raw: m })))
        {
            // At once, while the board still shows the start position; a game already under
            // way gets its tag with a later turn (see `BusPoller::poll_step`), one board a
            // cycle, so that a relay coming up in the middle of a round reads every board
            // first.
            if let Some(b) = self.boards.get_mut(&address) {
                b.want_tag = false;
            }
            self.add_to_turn(address, BusCommandKind::SetStartGame);
        }
        if want_dump {
            self.add_to_turn(address, BusCommandKind::SendBoard);
        }
        if want_clock {
            self.add_to_turn(address, BusCommandKind::SendClock);
        }
        if self.boards.get(&address).is_some_and(|b| !b.deferred.is_empty()) {
            self.clock_before_dump(address);
        }
        self.answer_requests(now, address);
    }

    /// The gaps that keep a packet's plies apart on a virtual line.
    pub(super) fn gaps(&self) -> Gaps {
        Gaps { press: self.timing.press_gap_ms, scan: self.timing.scan_gap_ms }
    }

    /// Answers what the session of the board at `address` asked for, once the changes are
    /// read (and any press deferred until the clock is read went out): the event log, and a
    /// dump. While a backlog is let out, a dump is the board as the session has seen it so
    /// far (a dump read from the board would show moves ahead of the changes it has). Else
    /// it is read from the board (DGT's header: "when any mismatch occurs: ask full
    /// position") when the log is in doubt, when the session asks again while nothing
    /// changed (it cannot explain the board), and to check the ply a press ends, at most
    /// every [`super::BusTiming::doubt_dump_ms`]; otherwise it is the board as its log has
    /// it. A read due while a backlog is let out is made too, its dump sent behind the
    /// backlog when it shows a change the log missed. A dump read from the board that
    /// differs from the log puts the log right.
    pub(super) fn answer_requests(&mut self, now: u64, address: u16) {
        let (doubt_ms, press_gap) = (self.timing.doubt_dump_ms, self.timing.press_gap_ms);
        let Some(b) = self.boards.get_mut(&address) else { return };
        if !b.deferred.is_empty() || b.line.is_none() {
            return;
        }
        if core::mem::take(&mut b.log_asked) {
            let log = b.event_log();
            if let Some(line) = b.line.as_mut() {
                line.send_raw(&log);
            }
        }
        if !b.dump_asked || b.want_dump {
            return;
        }
        let may_read = b.last_real_dump.is_none_or(|t| now >= t + doubt_ms);
        let doubted = may_read && (!b.changed_since_dump || b.pressed_since_read);
        if let Some(line) = b.line.as_mut()
            && line.later.back().is_some_and(|h| h.at > now + press_gap)
            && line.send_shown_now()
        {
            // A backlog is being let out (more than a press's gap held back): the session is
            // answered at once with the board as it has seen it so far (it binds the presses
            // it has to the plies it shows), not behind the backlog, nor with the board ahead
            // of it. A read that is due is made all the same, and what it shows that the
            // log missed goes out behind the backlog: at a fast pace nearly every press
            // comes with more behind it, and a change the log missed would otherwise never
            // be read (the session cannot explain the board, and each answer repeats it).
            b.dump_asked = false;
            if b.doubt || doubted {
                b.want_dump = true;
                b.check_read = true;
                self.add_to_turn(address, BusCommandKind::SendBoard);
            }
            return;
        }
        // Read from the board (at most every `doubt_ms`): when the session asks again with
        // nothing changed (it cannot explain the board: a change the log missed), and when a
        // press came since the last read (the session checks the ply it confirms against
        // the board; a change the log missed would otherwise stand as another move).
        match b.model {
            Some(raw) if !(b.doubt || doubted) => {
                b.dump_asked = false;
                b.send_dump(BoardDump { raw });
            }
            _ => {
                b.want_dump = true;
                self.add_to_turn(address, BusCommandKind::SendBoard);
            }
        }
    }

    /// `SEND_FROM_START`'s answer: the log from the board's start tag up to what the changes
    /// have sent (DGT's header), which takes the place of the poller's log when it reaches
    /// back to the tag. A board without a tag (the answer holds none) gets one now, so that
    /// a relay restarted later reads the game from it.
    pub(super) fn log_from_start(&mut self, address: u16, raw: &[u8]) {
        let Some(b) = self.boards.get_mut(&address) else { return };
        let events: Vec<EeEvent> = dgt_protocol::EeEvents::new(raw).iter().collect();
        crate::log::debug!(address, events = events.len(), "the board's log from its start tag");
        match events.iter().position(|e| matches!(e, EeEvent::StartTag)) {
            Some(tag) => {
                b.restart_log(&events[tag..]);
                b.doubt = false;
            }
            None => b.want_tag = true,
        }
    }

    /// Puts the clock before the dump in the turn of the board at `address`: a deferred
    /// press waits for a reading, and the dump shows the board after what followed it.
    pub(super) fn clock_before_dump(&mut self, address: u16) {
        let Some(t) = self.turn.as_mut().filter(|t| t.address == address) else { return };
        let pos = |todo: &VecDeque<BusCommandKind>, k| todo.iter().position(|x| *x == k);
        if let (Some(board), Some(clock)) =
            (pos(&t.todo, BusCommandKind::SendBoard), pos(&t.todo, BusCommandKind::SendClock))
            && board < clock
        {
            t.todo.remove(clock);
            t.todo.insert(board, BusCommandKind::SendClock);
        }
    }

    /// A clock reading; then what the session asked for, once presses deferred until it
    /// went out.
    pub(super) fn clock(&mut self, now: u64, address: u16, t: Bwtime) {
        self.clock_reading(now, address, t);
        self.answer_requests(now, address);
    }

    fn clock_reading(&mut self, now: u64, address: u16, t: Bwtime) {
        let timing = self.timing;
        let Some(b) = self.boards.get_mut(&address) else { return };
        b.want_clock = false;
        b.next_clock = now + timing.clock_period_ms;
        let Bwtime::Times(mut t) = t else { return };
        crate::log::trace!(address, status = t.status.0, left = ?t.left.time, right = ?t.right.time, "clock reading");
        // A running clock whose lever is not where the last reading sent left it was pressed
        // since the changes were read: that press is in the board's log, and comes with the
        // next changes in its place among the moves. This reading, from ahead of them, is
        // held back once (the log may have skipped a press in very fast play: then the next
        // one goes out). After a dump too: the first reading a game sees must not be a press.
        let ahead = t.status.running()
            && !t.status.no_clock()
            && b.line.is_some()
            && b.deferred.is_empty()
            && b.last_times.is_some_and(|l| l.status.running() && l.high_side() != t.high_side());
        // The first running reading of what may be a new game: its lever may already show the
        // first press (made between the changes and this reading), and nothing before it in
        // this game tells. Held once, the changes are read again at once, then the clock.
        let first = b.game_unread
            && t.status.running()
            && !t.status.no_clock()
            && b.line.is_some()
            && b.deferred.is_empty();
        // Its lever shows a press the log has not brought (the board logs a press when it
        // next reads its clock, up to a second after it): the clock ran for the other side
        // from the log's last press in this game until then.
        let ahead_of_log = t.status.running()
            && !t.status.no_clock()
            && b.logged_press.is_some_and(|s| t.high_side() != s.other());
        if (ahead || first) && !b.held {
            crate::log::trace!(address, first, "clock reading ahead of the changes; held");
            b.held = true;
            b.want_clock = true;
            if first {
                self.add_to_turn(address, BusCommandKind::SendChanges);
                self.add_to_turn(address, BusCommandKind::SendClock);
            }
            return;
        }
        if ahead && b.held {
            // Held once, and the changes did not bring the press: the log skipped it (two
            // presses between two of the board's readings of its clock). The reading is not
            // the press's: the side it started has run since, and only the halted side's
            // display is that press's (see `ClockStatus::rebuilt`).
            t.status.0 |= dgt_protocol::ClockStatus::REBUILT;
        }
        let unseen_press = first && b.held && ahead_of_log && b.line.is_some() && b.deferred.is_empty();
        b.held = false;
        b.game_unread &= !t.status.running();
        b.stale = false;
        if !b.deferred.is_empty() {
            // A reading from after the deferred press: the press and what followed it go
            // first, built on this reading (the game learns White's side from the set clock
            // and the running reading before the press, not from this one).
            let deferred = core::mem::take(&mut b.deferred);
            let gaps = Gaps { press: timing.press_gap_ms, scan: timing.scan_gap_ms };
            b.forward(now, gaps, &deferred, Some(t));
        }
        if b.line.as_ref().is_some_and(|l| !l.later.is_empty()) {
            // Changes read before this reading are still held back on the line (a backlog
            // read at once, let out a ply at a time): the reading is ahead of them, and its
            // lever and displays would read as presses out of turn. The presses in them go
            // out as readings of their own, built on the last reading sent; the next
            // reading follows them.
            crate::log::trace!(address, "clock reading ahead of the held changes; not sent");
            return;
        }
        b.last_times = Some(t);
        if let Some(line) = b.line.as_mut() {
            if line.new_game && !line.start_sent && t.status.running() && !t.status.no_clock() {
                // The first reading of what may be a new game shows its clock running, the
                // side to move's lever up, before any press: the clock as the arbiter set it
                // (stopped, that lever up) goes first, as a single board sends it. The last
                // reading the session has may be the previous game's, lever the other way:
                // from it to this one the lever moved, which the session would take for a
                // press. The first press still goes out after the clock as set, the
                // presser's lever up (see `press_readings`).
                // Once: sent before every reading, it would stop and start the clock each
                // second until the first press (a long first think), and the session
                // would never see the board still while its clock runs.
                let mut set = t;
                set.status.0 &= !0x01;
                line.times(set, false, true);
                line.start_sent = true;
            }
            if unseen_press {
                // The first reading its session gets (a game joined under way) shows a press
                // the changes have not brought, held once already: the clock as it ran
                // before that press goes first, so that the session sees the press (its
                // halted side's display is the press's; the log's own record of it is then
                // not sent again, see `press_readings`).
                let mut before = t;
                before.status.0 &= !dgt_protocol::ClockStatus::REBUILT;
                super::press::lever_up(&mut before, t.high_side().other());
                line.times(before, false, true);
                t.status.0 |= dgt_protocol::ClockStatus::REBUILT;
                b.last_times = Some(t);
            }
            line.times(t, true, false);
        }
    }

    pub(super) fn dump(&mut self, now: u64, address: u16, d: BoardDump) {
        let gaps = self.gaps();
        crate::log::trace!(address, raw = ?d.raw, "dump");
        let Some(b) = self.boards.get_mut(&address) else { return };
        b.want_dump = false;
        let asked = core::mem::take(&mut b.dump_asked);
        // Sent when asked for, and to put the session right (a change the log missed).
        let needed = asked || !core::mem::take(&mut b.check_read) || b.model != Some(d.raw);
        if !b.anchored {
            // The log starts here: as a power-up listing of this dump.
            b.record(EeEvent::PowerUp);
            for sq in dgt_protocol::DgtSquare::ALL {
                let piece = d.piece(sq);
                if !piece.is_empty() {
                    b.record(EeEvent::Field { square: sq, piece, quick: false });
                }
            }
        }
        b.real_dump(now, d.raw);
        if !b.deferred.is_empty() {
            // The dump shows the board after them: they go first, on the last reading.
            let deferred = core::mem::take(&mut b.deferred);
            let base = b.last_times;
            b.forward(now, gaps, &deferred, base);
        }
        match (needed, b.deferred.is_empty()) {
            (true, true) => b.send_dump(d),
            // Still waiting for the clock: the dump (the model) follows them.
            (true, false) => b.dump_asked = true,
            (false, _) => {}
        }
        b.want_clock = true;
        self.add_to_turn(address, BusCommandKind::SendClock);
    }
}

/// A changes packet holds an event no board writes (a time event that is not BCD, a
/// square off the board): it was garbled on the line.
pub(super) fn garbled(raw: &[u8]) -> bool {
    dgt_protocol::EeEvents::new(raw).iter().any(|e| matches!(e, EeEvent::Malformed { .. }))
}

/// The dump shows the standard start position, either way round.
pub(super) fn shows_start(d: &BoardDump) -> bool {
    let start = shakmaty::Board::new();
    [Orientation::Normal, Orientation::Rotated].into_iter().any(|o| {
        shakmaty::Square::ALL
            .into_iter()
            .all(|sq| d.piece(DgtSquare::from_square(sq, o)) == PieceCode::from_option(start.piece_at(sq)))
    })
}
