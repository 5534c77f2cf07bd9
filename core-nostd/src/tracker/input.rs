//! Input handling: decoded messages and the passage of time, routed to start/end
//! detection, board matching and finality.

use dgt_protocol::{BoardDump, Bwtime, ClockSide, ClockTimes, FieldUpdate, Message};
use shakmaty::{Bitboard, Color, Position};

use super::{GameState, MAX_PROVISIONAL, Stamp, Tracker, remember};
use crate::board::placement_hash;
use crate::clock::{Flip, Press};
use crate::event::{EndReason, Event, EventSink, GameResult};

impl<const PLIES: usize> Tracker<PLIES> {
    /// Takes any decoded message; those that do not concern the game are ignored.
    pub fn feed<S: EventSink + ?Sized>(&mut self, msg: &Message<'_>, now_ms: u64, sink: &mut S) {
        self.board_heard(now_ms);
        match msg {
            Message::BoardDump(d) => self.feed_dump(d, now_ms, sink),
            Message::FieldUpdate(f) => self.feed_field(*f, now_ms, sink),
            Message::Bwtime(Bwtime::Times(t)) => self.feed_clock(t, now_ms, sink),
            _ => {}
        }
    }

    /// A full board scan: a stable reading, evaluated at once.
    pub fn feed_dump<S: EventSink + ?Sized>(&mut self, dump: &BoardDump, now_ms: u64, sink: &mut S) {
        self.take_dump(dump, now_ms, sink);
        self.pass_time(now_ms, sink);
    }

    /// One square changed.
    pub fn feed_field<S: EventSink + ?Sized>(&mut self, update: FieldUpdate, now_ms: u64, sink: &mut S) {
        self.take_field(update, now_ms, sink);
        self.pass_time(now_ms, sink);
    }

    /// A clock reading (BWTIME times). One with the "no clock" bit drops the clock: its
    /// times are invalid and give no `%clk`.
    pub fn feed_clock<S: EventSink + ?Sized>(&mut self, times: &ClockTimes, now_ms: u64, sink: &mut S) {
        self.take_clock(times, now_ms, sink);
        self.pass_time(now_ms, sink);
    }

    fn take_dump<S: EventSink + ?Sized>(&mut self, dump: &BoardDump, now_ms: u64, sink: &mut S) {
        self.seq = self.seq.wrapping_add(1);
        self.board_heard(now_ms);
        let first = !self.phys.known;
        self.last_dump_ms = Some(now_ms);
        // It shows the board as it was at or after the request on its way was made; a dump
        // nobody asked for, as it was after what came before it (not after itself: one
        // garbled dump does not verify what it alone shows).
        let unasked = Stamp { seq: self.seq.wrapping_sub(1), ms: now_ms };
        let previous_dump = self.last_dump_asked.replace(self.asked.take().unwrap_or(unasked));
        if core::mem::take(&mut self.ask_again) {
            self.ask_dump(now_ms, sink);
        }
        let corrected = if first { Bitboard::EMPTY } else { self.phys.differing(dump) };
        // Since when those squares' updates may have been lost: their last reports.
        let lost_since = corrected.into_iter().map(|sq| self.phys.changed_ms(sq)).min();
        self.dump_leaves = self.plies_a_dump_leaves(corrected);
        self.first_look = first;
        let changed = self.phys.load(dump, now_ms);
        // A dump is the whole board at one moment, whenever the link lets it through: a
        // position it shows is one the game went through, if any line passes it (exd4 cxd4
        // cxd4 and cxd4 cxd4 exd4 reach one board; a dump between showed the e-pawn home).
        if self.state == GameState::Active && !first {
            remember(&mut self.seen_boards, placement_hash(&self.phys.board));
        }
        if changed || first {
            self.board_changed(now_ms, true, sink);
        } else if self.dirty || self.unexplained_since.is_some() {
            self.explain_board(now_ms, sink);
        }
        if let Some(since) = lost_since
            && self.state == GameState::Active
        {
            self.reorder_after_lost_updates(corrected, since, now_ms, sink);
        }
        if self.state == GameState::Active {
            self.bind_presses_to_dump(now_ms, previous_dump);
        }
        self.first_look = false;
    }

    fn take_field<S: EventSink + ?Sized>(&mut self, update: FieldUpdate, now_ms: u64, sink: &mut S) {
        self.seq = self.seq.wrapping_add(1);
        self.board_heard(now_ms);
        if !self.phys.known {
            self.request_dump(now_ms, sink);
        }
        // The board as it stands has been still for the settle time: evaluate it before this
        // change, as the next tick would have. Ticks are coarse (50 to 100 ms): without this,
        // a board still for a little more than the settle time is searched or not depending
        // on the tick's phase, and a line the fast path cannot follow (after a lost field
        // update) can run past the search depth, never to be explained again.
        if self.state == GameState::Active
            && self.dirty
            && now_ms.saturating_sub(self.last_change_ms) >= u64::from(self.config.timing.settle_ms)
        {
            self.explain_board(now_ms, sink);
        }
        self.note_shown(now_ms);
        self.phys.note_report(update.square, update.piece(), self.seq);
        if self.phys.set(update.square, update.piece(), now_ms) {
            self.dump_leaves = None;
            if self.at_tip {
                self.touched_off_tip = Bitboard::EMPTY;
            }
            let square = update.square.to_square(self.phys.orientation);
            self.touched_off_tip.add(square);
            self.unbind_presses_at(square, now_ms);
            self.board_changed(now_ms, false, sink);
        } else if self.phys.landing_lost_at(update.square, now_ms) {
            // A lost landing (see `PhysBoard::lost_landings_after`): the square was
            // touched, and the line read so far may not explain it.
            self.touched_off_tip.add(update.square.to_square(self.phys.orientation));
            self.dirty = true;
        }
    }

    fn take_clock<S: EventSink + ?Sized>(&mut self, times: &ClockTimes, now_ms: u64, sink: &mut S) {
        self.seq = self.seq.wrapping_add(1);
        self.board_heard(now_ms);
        if times.status.no_clock() {
            self.clocks.lost();
            let state = self.clocks.state(&self.config);
            if state != self.last_clock_state {
                self.last_clock_state = state;
                sink.event(Event::Clock(state));
            }
            return;
        }
        let high = times.high_side();
        let lever_flipped = self.lever.replace(high).filter(|&was| was != high && times.status.running());
        if let Some(was) = lever_flipped {
            self.last_press_ms[usize::from(was == ClockSide::Right)] = Some(now_ms);
            self.phys.note_press();
        }
        let in_game = self.state == GameState::Active;
        let to_move = self.confirmed_pos.turn();
        // A resumed game learns the clock's sides as a new one does: from its first readings.
        let plies = self.confirmed.saturating_sub(self.resumed_at);
        let flips = self.clocks.reading(&self.config, times, now_ms, in_game, to_move, plies);
        if lever_flipped.is_none() && flips.list.len() == 2 {
            // Two presses between two polls left the lever where it was (see
            // `Clocks::reading`): both players pressed, and every report read after this
            // reading came after both presses, as after a flip.
            self.last_press_ms = [Some(now_ms); 2];
            self.phys.note_press();
            self.phys.note_press();
        }
        let state = self.clocks.state(&self.config);
        if state != self.last_clock_state {
            self.last_clock_state = state;
            sink.event(Event::Clock(state));
        }
        if !in_game {
            return;
        }
        // A result signalled on the board (the kings standing in the centre) before a flag
        // falls stands; while it stands the flag waits for the next reading, which still
        // shows it if the signal is withdrawn.
        if self.config.flag_fall_ends_game
            && !self.clocks.flag_reported
            && self.centre_since.is_none()
            && let Some(loser) = self.clocks.fallen_flag(&self.config, times, self.moves_made())
        {
            self.clocks.flag_reported = true;
            // A move completed by a press before the flag fell counts: the winner's press in
            // this reading (it started the loser's clock), and presses still waiting for the
            // board to settle; a move not completed by a press does not.
            let winner_side = self.clocks.side_of(&self.config, !loser);
            for flip in flips.list.iter().filter(|f| f.side == winner_side) {
                if self.state == GameState::Active {
                    self.clock_pressed(flip, flips.list.len() == 1, now_ms, sink);
                }
            }
            if self.state != GameState::Active {
                return;
            }
            self.confirm_waiting_pressed(now_ms, sink);
            let winner = !loser;
            self.confirm_next_ply_with_waiting_press(winner, now_ms, sink);
            if self.state != GameState::Active {
                return;
            }
            self.retract_to(self.confirmed, sink);
            let result = if self.confirmed_pos.has_insufficient_material(winner) {
                GameResult::Draw
            } else {
                GameResult::win_for(winner)
            };
            self.end_game(result, EndReason::FlagFall, sink);
            return;
        }
        if flips.by_rise_only {
            if self.dirty {
                self.explain_board(now_ms, sink);
            }
            if self.records.len() < self.confirmed + 2 {
                return;
            }
        }
        let single = flips.list.len() == 1;
        for flip in &flips.list {
            if self.state != GameState::Active {
                return;
            }
            self.clock_pressed(flip, single, now_ms, sink);
        }
    }

    /// A press the clock showed: given its colour, it confirms the presser's plies, or
    /// waits for the board to show them.
    pub(super) fn clock_pressed<S: EventSink + ?Sized>(
        &mut self,
        flip: &Flip,
        single: bool,
        now_ms: u64,
        sink: &mut S,
    ) {
        if self.dirty {
            self.explain_board(now_ms, sink);
        }
        let plies = self.confirmed.saturating_sub(self.resumed_at);
        let certain = if single { self.certain_presser(now_ms) } else { None };
        let Some(press) =
            self.clocks.attribute(&self.config, flip, certain, self.confirmed_pos.turn(), plies)
        else {
            return;
        };
        // More presses than plies: the board may have been read a ply short.
        self.reread_for_press(press.by, now_ms, sink);
        // An earlier press still waiting for the board is settled first.
        self.confirm_pressed(now_ms, true, sink);
        self.drop_overtaken_presses(press.by);
        if self.state != GameState::Active {
            return;
        }
        // The press confirms at once when the board cannot be showing a passing state of
        // the hand (see `press_is_conclusive`): a move that cannot be part of a longer one,
        // or any line ending in the presser's ply once the board has been still long
        // enough for the rest of a slide to have been reported. Otherwise the press waits
        // until the board has been still for a scan period, a scan period after the press.
        if self.at_tip
            && let Some(upto) = self.last_ply_by(press.by)
            && self.press_is_conclusive(upto, now_ms)
            && self.line_verified(upto, self.stamp(now_ms), now_ms, sink)
        {
            let one_of_several = self.pressed_before_for_no_ply(press.by, self.pending_press.len());
            self.confirm_through(upto, Some(&Press { one_of_several, ..press }), now_ms, sink);
            return;
        }
        self.add_pending_press(press, now_ms);
        // The mover says the move is complete, but the board does not show it as the line's
        // last ply, or shows a ply that may be part of a longer move: a field update may
        // have been lost, or the hands are still at work. A dump taken now settles it,
        // whatever the rate limit (once a press).
        self.dumped_since(self.stamp(now_ms), now_ms, sink);
    }

    /// The colour that made a press, when the board leaves no doubt: one provisional ply is
    /// on the board, no press is waiting for the board, and the last confirmed ply's own
    /// press has been seen. The lever alternates, so the press that follows the press of a
    /// confirmed ply of one colour is the other's: the mover of that one ply. (A ply
    /// confirmed without its press, by the plies that followed it or by quiet time, may
    /// still get it: a player who forgot to press presses late, after the reply.)
    fn certain_presser(&self, now: u64) -> Option<Color> {
        let waiting = self.pending_press.iter().any(|p| p.expires >= now);
        let one_ply = self.records.len() == self.confirmed + 1;
        (one_ply && !waiting && !self.clocks.press_owed()).then(|| self.confirmed_pos.turn())
    }

    /// Lets time pass: settles the board, confirms moves by quiet time, reports mismatches.
    /// Needed only at [`Tracker::poll_at`]: every message runs it at its own time too.
    pub fn tick<S: EventSink + ?Sized>(&mut self, now_ms: u64, sink: &mut S) {
        self.pass_time(now_ms, sink);
    }

    /// What time alone decides, at `now_ms`: after every message and at every deadline.
    fn pass_time<S: EventSink + ?Sized>(&mut self, now_ms: u64, sink: &mut S) {
        self.evaluated_ms = self.evaluated_ms.max(now_ms);
        if self.state != GameState::Active || self.away_since.is_some() {
            return;
        }
        // A move pressed just before the kings went to the centre stands once its piece has
        // stayed where it landed (see `pressed_ply_stands`), signal or not.
        if self.centre_since.is_some() {
            self.confirm_pressed(now_ms, false, sink);
        }
        if self.state != GameState::Active || self.tick_board_result(now_ms, sink) {
            return;
        }
        let still = now_ms.saturating_sub(self.last_change_ms);
        self.note_stood(now_ms);
        if self.dirty && still >= u64::from(self.config.timing.settle_ms) {
            self.explain_board(now_ms, sink);
        }
        if self.state != GameState::Active {
            return;
        }
        self.finalize(now_ms, still, sink);
        if let Some(since) = self.unexplained_since {
            let unexplained = now_ms.saturating_sub(since);
            if self.mismatch.is_none() && unexplained >= u64::from(self.config.timing.mismatch_ms) {
                let squares = self.nearest_diff();
                self.mismatch = Some(squares);
                sink.event(Event::PositionMismatch { squares });
            }
            // A still board that nothing explains may have lost a field update: a dump shows
            // what is really there. Asked again while it stays so (rate-limited).
            if unexplained >= u64::from(self.config.timing.settle_ms)
                && still >= u64::from(self.config.timing.settle_ms)
            {
                self.request_dump(now_ms, sink);
            }
        }
    }

    /// True when both players pressed the clock at or after `since` (the lever went down on
    /// each side while the clock ran): the clock says the game went on, whatever the board
    /// shows. A takeback is made with the clock left alone; the same position brought back
    /// by plies both players pressed for is a repetition.
    pub(super) fn both_pressed_since(&self, since: u64) -> bool {
        self.last_press_ms.iter().all(|t| t.is_some_and(|t| t >= since))
    }

    /// A message came from the board: an outage ([`Tracker::board_away`]) is over. What the
    /// board showed before it is old news, so stillness counts from now; presses waiting
    /// for the board get back the time it was away.
    fn board_heard(&mut self, now: u64) {
        let Some(since) = self.away_since.take() else { return };
        self.back_from_outage = true;
        let gone = now.saturating_sub(since);
        self.last_change_ms = self.last_change_ms.max(now);
        for p in self.pending_press.iter_mut() {
            p.expires = p.expires.saturating_add(gone);
        }
    }

    /// Before a field update: the board as it stands is a whole reading when it has not
    /// changed for a scan (see `shown_boards`).
    fn note_shown(&mut self, now: u64) {
        if self.state != GameState::Active
            || !self.phys.known
            || self.phys.magic.any()
            || now.saturating_sub(self.last_change_ms) < self.scan_ms()
        {
            return;
        }
        remember(&mut self.shown_boards, placement_hash(&self.phys.board));
        self.note_pressed_board();
    }

    /// Notes that the last provisional ply stood: the board has shown the tip, unchanged,
    /// for longer than a sliding hand rests on a square, and a scan period (see
    /// [`Timing::slide_pause_ms`](crate::Timing::slide_pause_ms)). Counted from when the ply
    /// became the tip, not from when the board last changed: a board the line explains only
    /// once it has been still a while (the tip less the pieces hands hold, read as an
    /// exchange: Nf5xd4 with both knights in the air reads as Ne7 Nxc6 Nxc6) did not stand
    /// at the plies the search put there, and the landing that follows replaces them.
    fn note_stood(&mut self, now: u64) {
        let prov = self.records.len() - self.confirmed;
        let Some(i) = prov.checked_sub(1).map(|i| i.min(MAX_PROVISIONAL - 1)) else { return };
        let still = now.saturating_sub(self.last_change_ms.max(self.meta[i].seen.ms));
        if self.at_tip && !self.dirty && still >= self.config.timing.slide_settled_ms() {
            self.meta[i].stood = true;
        }
    }

    pub(super) fn clock_running(&self, now: u64) -> bool {
        match self.clocks.last {
            Some(r) => {
                r.status.running()
                    && now.saturating_sub(self.clocks.last_ms) <= u64::from(self.config.timing.clock_stale_ms)
            }
            None => false,
        }
    }

    /// True when a dump asked for at or after `since` came: asked for after the message
    /// `since.seq` was read (by when it was asked for, not when it came: bytes held back by
    /// the link bring a dump taken before an event after it), and not before `since.ms`.
    /// Otherwise asks for one, unless one asked for so is on its way.
    pub(super) fn dumped_since<S: EventSink + ?Sized>(
        &mut self,
        since: Stamp,
        now: u64,
        sink: &mut S,
    ) -> bool {
        let after = |a: Stamp| a.seq >= since.seq && a.ms >= since.ms;
        if self.last_dump_asked.is_some_and(after) {
            return true;
        }
        if !self.asked.is_some_and(after) {
            self.ask_dump(now, sink);
        }
        false
    }

    /// What a dump must have been asked for after to show the board as it stands at `now`,
    /// for a confirmation by time: after the board's last change, and at most
    /// [`Timing::dump_fresh_ms`](crate::Timing::dump_fresh_ms) before `now`.
    pub(super) fn fresh_since(&self, now: u64) -> Stamp {
        let fresh = now.saturating_sub(u64::from(self.config.timing.dump_fresh_ms));
        Stamp { seq: self.last_change_seq, ms: fresh.max(self.last_change_ms) }
    }

    /// Where and when the board last changed.
    pub(super) fn changed_at(&self) -> Stamp {
        Stamp { seq: self.last_change_seq, ms: self.last_change_ms }
    }

    /// From when a dump counts as showing the board now, for confirmations by time: after
    /// the board's last change and the last press, and not older than `chain_confirm_ms`.
    pub(super) fn recent_since(&self, now: u64) -> Stamp {
        let press = self.pending_press.iter().map(|p| Stamp { seq: p.seq, ms: p.at }).max_by_key(|p| p.seq);
        let recent = now.saturating_sub(u64::from(self.config.timing.chain_confirm_ms));
        let changed = self.changed_at();
        let seq = press.map_or(changed.seq, |p| p.seq.max(changed.seq));
        Stamp { seq, ms: press.map_or(0, |p| p.ms).max(recent) }
    }

    /// Asks for a dump now, or as soon as the one on its way comes (a request unanswered
    /// for [`Timing::dump_answer_ms`](crate::Timing::dump_answer_ms) was lost).
    fn ask_dump<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) {
        self.last_dump_request = Some(now);
        let answer_ms = u64::from(self.config.timing.dump_answer_ms);
        if self.asked.is_some_and(|t| now.saturating_sub(t.ms) < answer_ms) {
            self.ask_again = true;
            return;
        }
        self.asked = Some(self.stamp(now));
        sink.event(Event::RequestBoardDump);
    }

    pub(super) fn request_dump<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) {
        let due = match self.last_dump_request {
            Some(t) => now.saturating_sub(t) >= u64::from(self.config.timing.dump_interval_ms),
            None => true,
        };
        if due {
            self.ask_dump(now, sink);
        }
    }

    pub(super) fn board_changed<S: EventSink + ?Sized>(&mut self, now: u64, stable: bool, sink: &mut S) {
        // A field update right after another one is the same scan being reported (about
        // 3 ms a message at 9600 baud): the board is only half read.
        let mid_scan = !stable && now.saturating_sub(self.last_change_ms) < self.scan_ms();
        self.note_stood(now);
        self.last_change_ms = now;
        self.last_change_seq = self.seq;
        self.dirty = true;
        if self.at_tip {
            self.tip_left_ms = now;
        }
        self.at_tip = false;
        match self.state {
            GameState::Idle | GameState::Over => {
                self.try_start(now, sink);
                return;
            }
            GameState::WaitingForPosition => {
                self.try_armed(now, sink);
                return;
            }
            GameState::Active => {}
        }
        if self.try_new_game(now, sink) || self.check_board_result(now, sink) {
            return;
        }
        self.fast_eval(now, !mid_scan, sink);
        if stable && self.dirty {
            self.explain_board(now, sink);
        }
    }
}
