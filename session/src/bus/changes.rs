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
use super::press::press_readings;

impl Board {
    /// A dump on the virtual line.
    pub(super) fn send_dump(&mut self, d: BoardDump) {
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
                self.game_unread = true;
            }
        }
    }

    /// Sends changes on the virtual line (see [`super`]). A press with no reading to
    /// build on (none yet, or a game may have begun since the last one: its clock may be
    /// new) is deferred with all that follows it until the clock is read; `fresh` is that
    /// reading, taken after the deferred press.
    pub(super) fn forward(&mut self, now: u64, gap: u64, events: &[EeEvent], mut fresh: Option<ClockTimes>) {
        let address = self.address;
        if let Some(line) = self.line.as_mut() {
            line.gap_until = None;
        }
        // In a power-up's listing of the pieces (not changes), and the squares it named.
        let (mut listing, mut listed) = (false, 0u64);
        // A press went out from this packet; the last event forwarded was a field event.
        let (mut pressed, mut after_field) = (false, false);
        for (i, &e) in events.iter().enumerate() {
            if !self.deferred.is_empty() {
                self.deferred.push(e);
                continue;
            }
            let Some(line) = self.line.as_mut() else { return };
            match e {
                EeEvent::Field { square, piece, .. }
                    if listing && !piece.is_empty() && listed & (1u64 << square.index()) == 0 =>
                {
                    listed |= 1u64 << square.index();
                }
                EeEvent::Field { square, piece, quick } => {
                    // A power-up's listing names each piece once and no empty square: an
                    // empty square, or one listed already, is a change made after it.
                    listing = false;
                    if line.mode.fields() {
                        // Two presses or more with no change between: the changes that follow
                        // are two plies or more (a burst), in this packet or the next.
                        line.burst |= line.presses_since_field >= 2;
                        line.presses_since_field = 0;
                        if (pressed || line.burst) && after_field && !quick {
                            // A later scan's change (the board logged it 250 ms or more after
                            // the one before), after a press: another ply's, possibly.
                            line.hold_next(now, gap);
                        }
                        line.before_field();
                        line.send(&Message::FieldUpdate(FieldUpdate::new(square, piece)));
                        after_field = true;
                    }
                }
                EeEvent::Time { side, time } => {
                    listing = false;
                    crate::log::trace!(address, ?side, ?time, "press in the changes");
                    let replay = fresh.take();
                    let base = replay.or(self.last_times).filter(|t| !t.status.no_clock());
                    match base {
                        Some(base) if replay.is_some() || !(line.new_game || self.stale) => {
                            self.last_times = Some(press_readings(base, side, time, line, replay.is_some()));
                            line.hold_next(now, gap);
                            line.presses_since_field = line.presses_since_field.saturating_add(1);
                            line.burst = false;
                            pressed = true;
                            after_field = false;
                            self.held = false;
                            self.game_unread = false;
                        }
                        _ if replay.is_some() => {
                            // The clock read after it shows none: no reading to send.
                        }
                        _ => {
                            crate::log::trace!(address, "press deferred until the clock is read");
                            self.deferred.extend_from_slice(&events[i..]);
                            return;
                        }
                    }
                }
                EeEvent::PowerUp | EeEvent::WatchdogAction => {
                    listing = true;
                    listed = 0;
                }
                EeEvent::BeginPos | EeEvent::BeginPosRotated | EeEvent::FourRows => {
                    // A game may begin: its clock is new to the session.
                    listing = false;
                    line.new_game = true;
                    self.game_unread = true;
                }
                _ => listing = false,
            }
        }
        if let Some(line) = self.line.as_mut() {
            line.gap_until = None;
        }
    }
}

impl BusPoller {
    /// A changes packet: recorded for the event log; forwarded as field updates and
    /// readings (see [`super`]).
    pub(super) fn changes(&mut self, now: u64, address: u16, raw: Vec<u8>, repeat: bool) {
        let gap = self.timing.press_gap_ms;
        let Some(b) = self.boards.get_mut(&address) else { return };
        if repeat && raw == b.last_changes && !raw.is_empty() {
            // The board had not sent the lost packet: this is the one before, already had.
            // Unless the two were alike: read the board whole to be sure.
            b.want_dump = true;
            return;
        }
        b.last_changes.clone_from(&raw);
        let forward = !b.fresh && b.line.is_some();
        crate::log::trace!(address, bytes = raw.len(), ?raw, forward, mode = ?b.line.as_ref().map(|l| l.mode), "changes");
        if !repeat {
            // The first packet since the board was found is what it logged before.
            b.fresh = false;
        }
        // A line with no dump yet: its session must have the board before these changes (a
        // single board answers the handshake's dump request at once; here that dump may
        // have been lost, or come a cycle late). The event log has it.
        let before =
            (forward && b.line.as_ref().is_some_and(|l| !l.dumped)).then(|| b.logged_board()).flatten();
        let mut doubt = false;
        let mut events = Vec::new();
        for e in dgt_protocol::EeEvents::new(&raw).iter() {
            b.record(e);
            doubt |= matches!(e, EeEvent::PowerUp | EeEvent::WatchdogAction | EeEvent::Malformed { .. });
            if forward {
                events.push(e);
            }
        }
        let press = events.iter().any(|e| matches!(e, EeEvent::Time { .. }));
        if let Some(raw) = before.filter(|_| !events.is_empty()) {
            crate::log::trace!(address, "first dump on the line, from the event log");
            b.send_dump(BoardDump { raw });
        }
        b.forward(now, gap, &events, None);
        if !forward {
            // What it logged while no line was open: the session reads a dump (and, when that
            // differs from what it kept, this log).
            doubt = true;
        }
        b.want_clock |= press;
        b.want_dump |= doubt;
        let (want_dump, want_clock) = (b.want_dump, b.want_clock || now >= b.next_clock);
        if want_dump {
            self.add_to_turn(address, BusCommandKind::SendBoard);
        }
        if want_clock {
            self.add_to_turn(address, BusCommandKind::SendClock);
        }
        if self.boards.get(&address).is_some_and(|b| !b.deferred.is_empty()) {
            self.clock_before_dump(address);
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

    pub(super) fn clock(&mut self, now: u64, address: u16, t: Bwtime) {
        let timing = self.timing;
        let Some(b) = self.boards.get_mut(&address) else { return };
        b.want_clock = false;
        b.next_clock = now + timing.clock_period_ms;
        let Bwtime::Times(t) = t else { return };
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
        b.held = false;
        b.game_unread &= !t.status.running();
        b.stale = false;
        if !b.deferred.is_empty() {
            // A reading from after the deferred press: the press and what followed it go
            // first, built on this reading (the game learns White's side from the set clock
            // and the running reading before the press, not from this one).
            let deferred = core::mem::take(&mut b.deferred);
            b.forward(now, timing.press_gap_ms, &deferred, Some(t));
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
            if line.new_game && t.status.running() && !t.status.no_clock() {
                // The first reading of what may be a new game shows its clock running, the
                // side to move's lever up, before any press: the clock as the arbiter set it
                // (stopped, that lever up) goes first, as a single board sends it. The last
                // reading the session has may be the previous game's, lever the other way:
                // from it to this one the lever moved, which the session would take for a
                // press. The first press still goes out after the clock as set, the
                // presser's lever up (see `press_readings`).
                let mut set = t;
                set.status.0 &= !0x01;
                line.times(set, false, true);
            }
            line.times(t, true, false);
        }
    }

    pub(super) fn dump(&mut self, now: u64, address: u16, d: BoardDump) {
        let gap = self.timing.press_gap_ms;
        crate::log::trace!(address, raw = ?d.raw, "dump");
        let Some(b) = self.boards.get_mut(&address) else { return };
        b.want_dump = false;
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
        if !b.deferred.is_empty() {
            // The dump shows the board after them: they go first, on the last reading.
            let deferred = core::mem::take(&mut b.deferred);
            let base = b.last_times;
            b.forward(now, gap, &deferred, base);
        }
        b.send_dump(d);
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
