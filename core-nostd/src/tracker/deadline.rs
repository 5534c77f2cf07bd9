//! When the tracker next needs time to pass: the earliest moment at which a rule that waits
//! on time could decide something that no message has decided yet.

use shakmaty::Position;

use super::{GameState, MAX_PROVISIONAL, Tracker};

/// The earliest of a set of moments after `after`.
struct Soonest {
    after: u64,
    at: Option<u64>,
}

impl Soonest {
    fn at(&mut self, t: u64) {
        if t > self.after && self.at.is_none_or(|a| t < a) {
            self.at = Some(t);
        }
    }
}

impl<const PLIES: usize> Tracker<PLIES> {
    /// The time at which [`Tracker::tick`] should next be called, if any: the earliest
    /// moment at which a rule that waits on time (a settle time, a press waiting for its
    /// board, a quiet time, a result signal standing, a mismatch) could act. Every message
    /// fed acts on time as a tick does, so between messages a caller sleeps until this
    /// moment and ticks then; ticking more often changes nothing. `None` while no rule is
    /// waiting on time (no game, or the board away).
    pub fn poll_at(&self) -> Option<u64> {
        if self.state != GameState::Active || self.away_since.is_some() {
            return None;
        }
        let t = &self.config.timing;
        let mut d = Soonest { after: self.evaluated_ms, at: None };
        let changed = self.last_change_ms;
        let stable = u64::from(t.press_stable_ms);
        let settled = t.slide_settled_ms();
        if let Some(since) = self.centre_since {
            d.at(since.ms + u64::from(t.quiet_ms));
        }
        // A board the line does not show yet: searched once it has settled, once hands are
        // done, and after the quiet time (takebacks of more than a move pair).
        if self.dirty {
            for wait in [u64::from(t.settle_ms), settled, u64::from(t.quiet_ms)] {
                d.at(changed + wait);
            }
        }
        let prov = self.records.len() - self.confirmed;
        if prov > 0 {
            let i = (prov - 1).min(MAX_PROVISIONAL - 1);
            d.at(changed.max(self.meta[i].seen.ms) + settled);
        }
        for (k, p) in self.pending_press.iter().enumerate() {
            for at in [p.at + stable, p.at + settled, p.expires, p.expires + 1] {
                d.at(at);
            }
            if let Some(upto) = self.shown_ply(k) {
                d.at(self.ply_squares_changed(upto) + stable);
            }
        }
        if !self.pending_press.is_empty() {
            d.at(changed + stable);
            d.at(changed + settled);
        }
        if prov > 0 {
            for wait in [t.settle_ms, t.chain_confirm_ms, t.quiet_ms, t.unpressed_ms] {
                d.at(changed + u64::from(wait));
                // Without a clock, the dump that verifies them is asked for this much before.
                d.at((changed + u64::from(wait)).saturating_sub(u64::from(t.dump_fresh_ms)));
            }
            // Plies read together wait for a dump taken within the chain time; asked again.
            if let Some(asked) = self.last_dump_asked {
                d.at(asked.ms + u64::from(t.chain_confirm_ms) + 1);
                d.at(asked.ms + u64::from(t.dump_fresh_ms) + 1);
            }
            if let Some(dumped) = self.last_dump_ms {
                d.at(dumped + u64::from(t.chain_confirm_ms) + 1);
            }
        }
        // A dump request unanswered this long was lost: asked again if still wanted.
        if let Some(asked) = self.asked {
            d.at(asked.ms + u64::from(t.dump_answer_ms));
        }
        // A running clock that falls silent stops running, as far as the rules go.
        if self.clocks.last.is_some() {
            d.at(self.clocks.last_ms + u64::from(t.clock_stale_ms) + 1);
        }
        // A lost landing the line does not explain holds the plies for the mismatch time.
        if prov > 0 {
            for at in self.phys.lost_landing_times_after(self.last_confirmed_seen.ms) {
                d.at(at + u64::from(t.mismatch_ms));
            }
        }
        if let Some(since) = self.unexplained_since {
            d.at(since + u64::from(t.mismatch_ms));
            d.at(since + u64::from(t.settle_ms));
            d.at(changed + u64::from(t.settle_ms));
        }
        if (self.unexplained_since.is_some() || !self.pending_press.is_empty())
            && let Some(asked) = self.last_dump_request
        {
            d.at(asked + u64::from(t.dump_interval_ms));
        }
        d.at
    }

    /// When the board last changed a square the ply `upto` (index one past it) changed.
    fn ply_squares_changed(&self, upto: usize) -> u64 {
        let Some(before) = self.position_at(upto - 1) else { return 0 };
        let Some(m) = self.records[upto - 1].to_move(&before) else { return 0 };
        let mut squares = crate::search::touched(m);
        if let Some(king) = before.board().king_of(before.turn()) {
            squares.add(king);
        }
        squares.into_iter().map(|sq| self.phys.changed_ms(sq)).max().unwrap_or(0)
    }
}
