//! Which ply each clock press is for: one assignment of the waiting presses to the plies of
//! the line as it stands, read by every rule that needs it.
//!
//! A press says the presser's move is done. What ties it to a ply is evidence recorded with
//! it (the ply the board showed as the presser's last when the press came, or that the
//! first dump asked for after it showed; see `bound`), else the order presses and plies
//! came in (presses that all came before the board showed any of their plies, one by each
//! player in turn, are the plies' in turn), else when the board showed the presser's plies
//! (see [`Tracker::ply_of`]).

use shakmaty::{Color, Position, Square};

use super::{GameState, PendingPress, Tracker};
use crate::clock::Press;
use crate::event::EventSink;
use crate::search::board_diff;

impl<const PLIES: usize> Tracker<PLIES> {
    /// The ply (index one past it) the `k`-th waiting press is for, from the line as it
    /// stands: the ply the board showed for it ([`Self::shown_ply`]), else by when the board
    /// showed the presser's plies ([`Self::ply_by_time`]).
    pub(super) fn ply_of(&self, k: usize) -> Option<usize> {
        let p = &self.pending_press[k];
        self.shown_ply(k).or_else(|| self.ply_by_time(p.press.by, p.at))
    }

    /// The ply (index one past it) the board showed for the `k`-th waiting press, while it
    /// is still in the line: the presser's last ply as the board showed it at the press, or
    /// as the first dump asked for after the press showed it (`bound`); else, when the
    /// presses all came before the board showed any of their plies, one by each player in
    /// turn, the `k`-th ply (see [`Self::presses_in_turn`]).
    pub(super) fn shown_ply(&self, k: usize) -> Option<usize> {
        let p = &self.pending_press[k];
        self.still_bound(p.bound).or_else(|| self.presses_in_turn().then_some(self.confirmed + 1 + k))
    }

    /// True when the waiting presses are two or more, one by each player in turn from the
    /// side to move, no more than the plies, and the first came before the board showed any
    /// of them: the players pressed before the board's reports of their moves were read (a
    /// relay reading a backlog, a board whose reports lag), and the k-th press is the k-th
    /// ply's. Left to time, the presses that came long before their plies showed would find
    /// none (a player does not press for a move made seconds later) and a later press would
    /// take an earlier ply of its player. Not while the last confirmed ply's press may still
    /// come (a late press would shift them all), nor while plies of an unknown order wait.
    /// A press bound to a ply the line no longer has (read again since, from a dump) is
    /// bound to nothing: it takes its ply in turn like the others.
    fn presses_in_turn(&self) -> bool {
        let presses = self.pending_press.len();
        if presses < 2
            || !self.at_tip
            || self.dirty
            || self.clocks.press_owed()
            || self.first_hidden().is_some()
            || presses > self.records.len() - self.confirmed
            || self.pending_press[0].at >= self.shown_at(self.confirmed)
        {
            return false;
        }
        let first = self.confirmed + 1;
        self.pending_press.iter().enumerate().all(|(k, p)| {
            p.press.by == self.mover_of(first + k)
                && self.still_bound(p.bound).is_none_or(|upto| upto == first + k)
        })
    }

    /// Index one past the ply a press by `color` at `pressed_ms` completes, by when the
    /// board showed the presser's plies (see [`Self::ply_of`]). When the line as the board showed it
    /// before the press ends with a ply of `color`, the press is that ply's: the presser
    /// said the move on the board was done (a ply of theirs shown later is their next
    /// move, made once the opponent replied). Otherwise the first ply of `color` the board
    /// showed at or just after the press (its report can lag the press by a scan: a
    /// burst), else the last one before it (the board showed it, then a hand adjusting it
    /// at the press). When the board showed a ply is when it began showing the reading the
    /// line took it from (see `shown_at`). A ply of `color` first shown later than that is
    /// no ply of this press:
    /// a move whose reports were lost is shown by the dump the press asks for, and a
    /// player does not press for a move they make seconds later.
    fn ply_by_time(&self, color: Color, pressed_ms: u64) -> Option<usize> {
        let lag = self.config.timing.slide_settled_ms();
        let mut turn = self.confirmed_pos.turn();
        // A ply of `color` shown before the press, then the opponent's reply, then one just
        // after: the press is for the later one only when the opponent pressed for the reply
        // before it (a reply still waiting for its press was made while `color`'s press was
        // still to come: two presses in one reading, a late press).
        let reply_pressed_before =
            self.pending_press.iter().any(|p| p.press.by != color && p.at < pressed_ms);
        let mut before = None;
        let mut before_seen = None;
        let mut last_before_is_ours = false;
        for i in self.confirmed..self.records.len() {
            let seen = self.shown_at(i);
            if seen < pressed_ms {
                last_before_is_ours = turn == color;
            }
            if turn == color {
                if seen < pressed_ms {
                    // Plies a search found in one reading were all shown at once: the
                    // board does not say which of the presser's was pressed for. Presses
                    // are taken oldest first, each for the first of them not yet taken.
                    if before_seen != Some(seen) {
                        before = Some(i + 1);
                        before_seen = Some(seen);
                    }
                } else if last_before_is_ours {
                    return before;
                } else if seen <= pressed_ms + lag && (before.is_none() || reply_pressed_before) {
                    return Some(i + 1);
                }
            }
            turn = !turn;
        }
        before
    }

    /// The ply (index one past it) a waiting press was bound to, while that same ply is
    /// still in the line unconfirmed.
    pub(super) fn still_bound(&self, bound: Option<(usize, u32)>) -> Option<usize> {
        bound
            .filter(|&(b, h)| b > self.confirmed && b <= self.records.len() && self.records[b - 1].hash == h)
            .map(|(b, _)| b)
    }

    /// What a press bound to the ply `upto` ends (index one past it) keeps: the index and
    /// the ply's placement hash (see [`Self::still_bound`]).
    pub(super) fn ply_key(&self, upto: usize) -> (usize, u32) {
        (upto, self.records[upto - 1].hash)
    }

    /// Keeps a press until the board shows the presser's move (the oldest is dropped when
    /// more are waiting than a burst can hold). When the board shows the presser's ply as
    /// the last of the line at the press, the press is that ply's, whatever the board
    /// shows by the time it settles (the opponent may be moving already).
    pub(super) fn add_pending_press(&mut self, press: Press, now: u64) {
        if self.pending_press.is_full() {
            self.pending_press.remove(0);
        }
        let bound = self
            .last_ply_by(press.by)
            .filter(|&upto| self.at_tip && !self.dirty && upto == self.records.len())
            .map(|upto| self.ply_key(upto));
        let expires = now + u64::from(self.config.timing.press_window_ms);
        let _ = self.pending_press.push(PendingPress {
            press,
            at: now,
            seq: self.seq,
            count: self.phys.presses(),
            expires,
            bound,
        });
    }

    /// A square changed: a press bound to a ply whose piece landed on it, made less than a
    /// scan period ago, is no longer bound while that ply is still the last of the line.
    /// The board showed that ply at the press only because the report of the hand moving
    /// on (a slide going further, its landing report lost) had not come yet. Once the
    /// opponent's ply followed, the piece leaving is the presser's next move (Bd8-c7,
    /// press, Rf3, Bc7-b6 within a scan period at blitz pace).
    pub(super) fn unbind_presses_at(&mut self, square: Square, now: u64) {
        let window = u64::from(self.config.timing.press_stable_ms);
        for k in 0..self.pending_press.len() {
            let p = self.pending_press[k];
            let Some(upto) = self.still_bound(p.bound) else { continue };
            // Once a ply followed it, or the opponent pressed after it in the stream (their
            // reply's reports may have been lost; a link holding bytes back can deliver both
            // presses at one read time), its piece leaving is the presser's next move.
            let replied = self.pending_press.iter().any(|q| q.press.by != p.press.by && q.seq > p.seq);
            if now.saturating_sub(p.at) > window || upto != self.records.len() || replied {
                continue;
            }
            let Some(before) = self.position_at(upto - 1) else { continue };
            let Some(m) = self.records[upto - 1].to_move(&before) else { continue };
            let mut after = before.clone();
            after.play_unchecked(m);
            let landed = board_diff(before.board(), after.board()) & after.board().by_color(before.turn());
            if landed.contains(square) {
                self.pending_press[k].bound = None;
            }
        }
    }

    /// A dump arrived at `now`: presses that found the board not showing their moves (and
    /// asked for this dump) are bound to the plies the dump shows as the line's last, as if
    /// the board had shown them at the presses (see `add_pending_press`): the dump is the
    /// board a scan after the presses, without the field updates that were lost on the way.
    /// The newest waiting press takes the line's last ply, the press before it the ply
    /// before, and so on while the presses alternate with the plies' movers; a press the
    /// line has an earlier ply for ends the walk. A press counts when this dump came within
    /// a scan period of it, or is the first dump since it and answers the request it made
    /// (on a chain the answer can take a polling cycle; a relay starved of CPU reads the
    /// presses and the dump late, together). `previous_dump` is when the dump before this
    /// one arrived.
    pub(super) fn bind_presses_to_dump(&mut self, now: u64, previous_dump: Option<super::Stamp>) {
        if !self.at_tip || self.dirty {
            return;
        }
        // The first dump since the press, asked for after it: the board a scan after the
        // press, whatever the link held back.
        let asked = self.last_dump_asked;
        let answers = |p: &PendingPress| {
            p.at <= now
                && previous_dump.is_none_or(|d| d.seq < p.seq)
                && asked.is_some_and(|r| r.seq >= p.seq)
        };
        let len = self.records.len();
        // One past the ply the next (older) press would take.
        let mut upto = len;
        for k in (0..self.pending_press.len()).rev() {
            let p = self.pending_press[k];
            if p.at > now {
                continue;
            }
            if let Some(b) = self.still_bound(p.bound) {
                // A newer press already has its ply: the older ones are for plies before it.
                upto = upto.min(b - 1);
                continue;
            }
            if p.bound.is_some() || !answers(&p) || upto <= self.confirmed {
                break;
            }
            // A press the line already has an earlier ply for (the board showed it, its
            // reports coming with the press in one reading) is that ply's.
            if self.ply_by_time(p.press.by, p.at).is_some_and(|u| u < upto) {
                break;
            }
            if self.mover_of(upto) != p.press.by {
                break;
            }
            self.pending_press[k].bound = Some(self.ply_key(upto));
            upto -= 1;
        }
    }

    /// How many provisional plies a new explanation of the board must keep: those up to
    /// the last one the board showed for a waiting press (see [`Self::shown_ply`]).
    pub(super) fn pressed_plies(&self) -> usize {
        let pressed = (0..self.pending_press.len())
            .filter_map(|k| self.shown_ply(k))
            .max()
            .map_or(0, |b| b - self.confirmed);
        pressed.min(self.dump_kept_plies()).min(self.plies_before_hidden())
    }

    /// How many provisional plies there are up to the last one a press is still bound to
    /// that the opponent answered with a press of their own later in the stream: the mover
    /// said it was done, and the reply was made on top of it (0: none).
    pub(super) fn answered_plies(&self) -> usize {
        let answered = self.pending_press.iter().filter_map(|p| {
            let replied = self.pending_press.iter().any(|q| q.press.by != p.press.by && q.seq > p.seq);
            self.still_bound(p.bound).filter(|_| replied)
        });
        answered.max().map_or(0, |upto| upto.saturating_sub(self.confirmed))
    }

    /// The presses that came since the last confirmed ply appeared: each says a ply after it
    /// is over.
    pub(super) fn waiting_presses(&self) -> impl Iterator<Item = &PendingPress> + '_ {
        self.pending_press.iter().filter(|p| self.came_since_confirmed(p))
    }

    /// True when `p` came after the last confirmed ply appeared, by the stream's order: a
    /// press read in the same burst as the ply, after it, came after it.
    fn came_since_confirmed(&self, p: &PendingPress) -> bool {
        p.seq > self.last_confirmed_seen.seq
    }

    /// How many presses came since the last confirmed ply appeared: each ended a ply.
    pub(super) fn waiting_press_count(&self) -> usize {
        self.waiting_presses().count()
    }

    /// Confirms every ply a waiting press is for, each with its press, whatever the board
    /// does meanwhile: the game is over (a flag fell) and those moves were completed.
    pub(super) fn confirm_waiting_pressed<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) {
        let mut k = 0;
        while k < self.pending_press.len() && self.state == GameState::Active {
            match self.ply_of(k) {
                Some(upto) if upto > self.confirmed => {
                    let press = self.pending_press.remove(k).press;
                    self.confirm_through(upto, Some(&press), now, sink);
                }
                _ => k += 1,
            }
        }
    }

    /// True when both players pressed since the last confirmed ply came, in the stream's
    /// order (presses a chain or a busy relay lets out before the reports of their plies
    /// count too): the clock says both moved.
    pub(super) fn both_pressed_waiting(&self) -> bool {
        let pressed = |color| self.waiting_presses().any(|p| p.press.by == color);
        pressed(Color::White) && pressed(Color::Black)
    }

    /// True when the side to move at the tip pressed since the last confirmed ply appeared:
    /// by the clock, it made a move the line does not have yet.
    pub(super) fn pressed_since_tip(&self) -> bool {
        let turn = self.tip.turn();
        self.waiting_presses().any(|p| p.press.by == turn)
    }

    /// At a flag's fall, confirms the next ply with the first press still waiting when both
    /// are the winner's (`by`): the loser's clock ran from that press, so the ply was made
    /// before it, however late the board showed it (its reports lost, a dump asked after
    /// the press showing it). The presses' own plies are confirmed first
    /// ([`Self::confirm_waiting_pressed`]); this takes the one the board showed too late
    /// for [`Self::ply_of`] to give it.
    pub(super) fn confirm_next_ply_with_waiting_press<S: EventSink + ?Sized>(
        &mut self,
        by: Color,
        now: u64,
        sink: &mut S,
    ) {
        if self.state != GameState::Active
            || self.records.len() <= self.confirmed
            || self.mover_of(self.confirmed + 1) != by
        {
            return;
        }
        if let Some(k) =
            self.pending_press.iter().position(|p| self.came_since_confirmed(p) && p.press.by == by)
        {
            let press = self.pending_press.remove(k).press;
            self.confirm_through(self.confirmed + 1, Some(&press), now, sink);
        }
    }

    /// The oldest press still waiting, taken from the list, when it is by `by`: the lever
    /// alternates, so it ended the first provisional ply when that ply is `by`'s (its time
    /// says nothing here: a ply found late, by a dump, appeared after its press). An oldest
    /// press by the opponent means the clock hid this ply's press: the ply gets none rather
    /// than a neighbour's.
    pub(super) fn take_first_waiting_press(&mut self, by: Color) -> Option<Press> {
        let first = self.pending_press.first()?;
        (first.press.by == by).then(|| self.pending_press.remove(0).press)
    }

    /// True when one of the first `before` waiting presses is `by`'s and the board showed
    /// no ply for it: `by` pressed more than once since their last ply (plies the board
    /// never reported, a repetition played over), so which press ended the ply a later
    /// press of theirs confirms is not known.
    pub(super) fn pressed_before_for_no_ply(&self, by: Color, before: usize) -> bool {
        (0..before.min(self.pending_press.len()))
            .any(|j| self.pending_press[j].press.by == by && self.ply_of(j).is_none())
    }

    /// Forgets the opponent's presses still waiting for a ply when `by` presses: the lever
    /// alternates, so such a press ended a ply of the opponent's before the one `by` is
    /// ending now. When the opponent's last confirmed ply was confirmed without its press
    /// (by the plies that followed it) and the board, explained to its last square, shows
    /// no ply of theirs unconfirmed, that press was made late for the confirmed ply (a
    /// forgotten press, made after the reply); kept, it would take the opponent's next
    /// move. (A burst's presses can all come before the board shows a ply; a board not
    /// explained may have lost the report of that ply: those presses wait.)
    pub(super) fn drop_overtaken_presses(&mut self, by: Color) {
        if !self.at_tip
            || self.dirty
            || self.unexplained_since.is_some()
            || !self.clocks.last_ply_unpressed(!by)
        {
            return;
        }
        let mut k = 0;
        while k < self.pending_press.len() {
            let p = self.pending_press[k];
            if p.press.by != by && self.ply_of(k).is_none() {
                self.pending_press.remove(k);
            } else {
                k += 1;
            }
        }
    }

    /// Before a waiting press (the `k`-th, taken out) confirms the plies up to `upto`: the
    /// presses that came before it and still wait confirm their own plies first, when those
    /// are among them, so that each ply gets its own press (one press can be ready before
    /// an earlier one: see `pressed_ply_stands`). Returns where the `k`-th press was.
    pub(super) fn confirm_earlier_presses<S: EventSink + ?Sized>(
        &mut self,
        mut k: usize,
        upto: usize,
        now: u64,
        sink: &mut S,
    ) -> usize {
        let mut j = 0;
        while j < k && self.state == GameState::Active {
            let p = self.pending_press[j];
            match self.ply_of(j) {
                Some(ply) if ply <= upto => {
                    self.pending_press.remove(j);
                    k -= 1;
                    if ply > self.confirmed {
                        self.confirm_through(ply, Some(&p.press), now, sink);
                    }
                }
                _ => j += 1,
            }
        }
        k
    }
}
