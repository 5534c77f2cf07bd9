//! The line of plies: provisional plies added and withdrawn, and finality (which plies
//! are confirmed, when, and with which `%clk`/`%emt`).

use shakmaty::{Chess, Color, Move, Position, Role, Square, attacks, san::SanPlus};

use super::record::{PlyRecord, to16};
use super::{MAX_PROVISIONAL, PendingPress, Tracker};
use crate::board::placement_hash;
use crate::clock::Press;
use crate::event::{Event, EventSink, MoveInfo};
use crate::fen::FenText;
use crate::search::board_diff;

impl<const PLIES: usize> Tracker<PLIES> {
    /// The position after `k` plies of the record list (replayed).
    pub(super) fn position_at(&self, k: usize) -> Option<Chess> {
        let (mut pos, from) = if k >= self.confirmed {
            (self.confirmed_pos.clone(), self.confirmed)
        } else {
            (self.start.clone(), 0)
        };
        for rec in &self.records[from..k] {
            let m = rec.to_move(&pos)?;
            pos.play_unchecked(m);
        }
        Some(pos)
    }

    pub(super) fn extend<S: EventSink + ?Sized>(&mut self, moves: &[Move], now: u64, sink: &mut S) {
        for &m in moves {
            if self.records.len() - self.confirmed >= MAX_PROVISIONAL {
                // Proven by the plies that followed it (plies of an unknown order, kept
                // unconfirmed while the game went on). Its press, when the presses waiting
                // since the last confirmed ply begin with one by its mover, is that one.
                let press = self.take_first_waiting_press(self.confirmed_pos.turn());
                self.confirm_through(self.confirmed + 1, press.as_ref(), now, sink);
            }
            let mut after = self.tip.clone();
            after.play_unchecked(m);
            if self.records.push(PlyRecord::new(m, placement_hash(after.board()))).is_err() {
                if !self.full_reported {
                    self.full_reported = true;
                    sink.event(Event::CapacityFull);
                }
                return;
            }
            let idx = self.records.len() - 1 - self.confirmed;
            self.seen_ms[idx.min(MAX_PROVISIONAL - 1)] = now;
            self.joint[idx.min(MAX_PROVISIONAL - 1)] = moves.len() > 1;
            self.stood[idx.min(MAX_PROVISIONAL - 1)] = false;
            let info = MoveInfo {
                ply: self.records.len() as u16,
                color: self.tip.turn(),
                uci: m.to_uci(self.castling_mode),
                san: SanPlus::from_move(self.tip.clone(), m),
                clk: None,
                emt: None,
                fen: FenText::of(&after),
            };
            self.tip = after;
            sink.event(Event::MoveProvisional(info));
        }
    }

    /// Withdraws provisional plies until `len` remain (never confirmed ones).
    pub(super) fn retract_to<S: EventSink + ?Sized>(&mut self, len: usize, sink: &mut S) {
        let len = len.max(self.confirmed);
        if self.records.len() <= len {
            return;
        }
        while self.records.len() > len {
            let ply = self.records.len() as u16;
            self.records.pop();
            let pos = self.position_at(self.records.len()).unwrap_or_else(|| self.tip.clone());
            sink.event(Event::MoveRetracted { ply, fen: FenText::of(&pos) });
            self.tip = pos;
        }
    }

    /// Completed moves of (White, Black) in the confirmed line, counted from the start
    /// position's move number (as time controls count them).
    pub(super) fn moves_made(&self) -> [u32; 2] {
        let pos = &self.confirmed_pos;
        let before = pos.fullmoves().get().saturating_sub(1);
        [before + u32::from(pos.turn() == Color::Black), before]
    }

    /// Who made the ply `upto` ends (index one past it) of the line after the last
    /// confirmed ply.
    pub(super) fn mover_of(&self, upto: usize) -> Color {
        let turn = self.confirmed_pos.turn();
        if upto.saturating_sub(self.confirmed + 1).is_multiple_of(2) { turn } else { !turn }
    }

    /// Index one past the last provisional ply made by `color`.
    pub(super) fn last_ply_by(&self, color: Color) -> Option<usize> {
        let mut turn = self.confirmed_pos.turn();
        let mut found = None;
        for i in self.confirmed..self.records.len() {
            if turn == color {
                found = Some(i + 1);
            }
            turn = !turn;
        }
        found
    }

    /// Index one past the ply a press by `color` at `pressed_ms` completes, for a press
    /// that came before the board showed the move. When the line as the board showed it
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
    pub(super) fn ply_for_pending_press(&self, color: Color, pressed_ms: u64) -> Option<usize> {
        let lag = self.config.slide_settled_ms();
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

    /// Applies presses that came before the board showed the move, oldest first, once the
    /// board is still (or at once when `immediate`). Several may wait at once: in a burst
    /// both players can press before one scan shows their plies.
    pub(super) fn resolve_pending<S: EventSink + ?Sized>(&mut self, now: u64, immediate: bool, sink: &mut S) {
        // While plies of an unknown order wait (see `first_hidden`), nothing after them is
        // confirmed, and the presses wait with them (each is its ply's `%clk`): their time
        // to find a ply runs from when the order is settled.
        let window = u64::from(self.config.press_window_ms);
        if self.first_hidden().is_some() {
            for p in self.pending_press.iter_mut() {
                p.expires = p.expires.max(now + window);
            }
        }
        self.align_waiting_presses();
        let mut k = 0;
        while k < self.pending_press.len() {
            let PendingPress { press, at: t, expires, bound } = self.pending_press[k];
            if now > expires {
                self.pending_press.remove(k);
                continue;
            }
            // The ply the board showed at the press, while it is still in the line.
            let bound = self.still_bound(bound);
            let stable = u64::from(self.config.press_stable_ms);
            let on_board = self.at_tip && !self.dirty;
            let Some(upto) = bound.or_else(|| self.ply_for_pending_press(press.by, t)) else {
                // A scan period after the press the board, at rest, still shows no move of
                // the presser: its reports may all have been lost. A dump settles it.
                if on_board && now.saturating_sub(t) >= stable {
                    self.request_dump(now, sink);
                }
                k += 1;
                continue;
            };
            // Once the board has been still for a scan period, a scan period after the
            // press (a reading of the presser's move may have been on its way then); or,
            // for the ply the board showed as the last at the press, once its piece has
            // stayed where it landed for that long, whatever the hands do elsewhere (see
            // `pressed_ply_stands`).
            let settled = on_board
                && now.saturating_sub(self.last_change_ms) >= stable
                && now.saturating_sub(t) >= stable;
            let stands = bound == Some(upto)
                && now.saturating_sub(t) >= stable
                && self.pressed_ply_stands(upto, now)
                && (on_board || self.dumped_since(t, now, sink));
            // The opponent pressed later for a reply the board showed after this ply: the
            // ply is over (a piece does not go on sliding once the opponent has moved and
            // pressed), however soon the hands move on.
            let replied = bound == Some(upto)
                && on_board
                && self.pending_press.iter().any(|q| {
                    q.press.by != press.by && q.at > t && self.still_bound(q.bound).is_some_and(|b| b > upto)
                });
            // A ply that may be the first part of a longer move (a slide, castling with the
            // rook first) is taken from a dump taken after the press (the reports of the rest
            // may have been lost: the king's, in castling king first), or, without one, once
            // the board has been still after the press for as long as the rest of a slide
            // takes to be reported.
            let settled_ms = self.config.slide_settled_ms();
            let shown = !self.ply_may_slide_on(upto)
                || self.dumped_since(t, now, sink)
                || (now.saturating_sub(self.last_change_ms) >= settled_ms
                    && now.saturating_sub(t) >= settled_ms);
            let ready = settled || (on_board && immediate) || stands || replied;
            if ready && shown && self.line_verified(upto, t, now, sink) {
                self.pending_press.remove(k);
                // Earlier presses still waiting are for the earlier plies: each first.
                k = self.confirm_earlier_presses(k, upto, now, sink);
                self.confirm_through(upto, Some(&press), now, sink);
                continue;
            }
            if ready {
                // The board shows the press's ply, which waits only for a dump that shows
                // it whole, or for the board to stand long enough for a slide to have gone
                // on (a relay reading a backlog gets both only behind it, seconds on): the
                // press waits with it. It expires again once the line no longer has a ply
                // for it.
                self.pending_press[k].expires = expires.max(now + window);
            }
            k += 1;
        }
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
            let has_ply =
                self.still_bound(p.bound).is_some() || self.ply_for_pending_press(p.press.by, p.at).is_some();
            if p.press.by != by && !has_ply {
                self.pending_press.remove(k);
            } else {
                k += 1;
            }
        }
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
        let expires = now + u64::from(self.config.press_window_ms);
        let _ = self.pending_press.push(PendingPress { press, at: now, expires, bound });
    }

    /// A square changed: a press bound to a ply whose piece landed on it, made less than a
    /// scan period ago, is no longer bound while that ply is still the last of the line.
    /// The board showed that ply at the press only because the report of the hand moving
    /// on (a slide going further, its landing report lost) had not come yet. Once the
    /// opponent's ply followed, the piece leaving is the presser's next move (Bd8-c7,
    /// press, Rf3, Bc7-b6 within a scan period at blitz pace).
    pub(super) fn unbind_presses_at(&mut self, square: Square, now: u64) {
        let window = u64::from(self.config.press_stable_ms);
        for k in 0..self.pending_press.len() {
            let p = self.pending_press[k];
            let Some(upto) = self.still_bound(p.bound) else { continue };
            // Once a ply followed it, or the opponent pressed after it (their reply's
            // reports may have been lost), its piece leaving is the presser's next move.
            let replied = self.pending_press.iter().any(|q| q.press.by != p.press.by && q.at > p.at);
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

    /// What a press bound to the ply `upto` ends (index one past it) keeps: the index and
    /// the ply's placement hash (see [`Self::still_bound`]).
    pub(super) fn ply_key(&self, upto: usize) -> (usize, u32) {
        (upto, self.records[upto - 1].hash)
    }

    /// The ply (index one past it) a waiting press was bound to, while that same ply is
    /// still in the line unconfirmed.
    pub(super) fn still_bound(&self, bound: Option<(usize, u32)>) -> Option<usize> {
        bound
            .filter(|&(b, h)| b > self.confirmed && b <= self.records.len() && self.records[b - 1].hash == h)
            .map(|(b, _)| b)
    }

    /// How many provisional plies a new explanation of the board must keep: those up to
    /// the last one a waiting press was bound to (the board showed it when the mover said
    /// the move was done).
    pub(super) fn pressed_plies(&self) -> usize {
        let pressed = self
            .pending_press
            .iter()
            .filter_map(|p| self.still_bound(p.bound))
            .max()
            .map_or(0, |b| b - self.confirmed);
        pressed.min(self.dump_kept_plies()).min(self.plies_before_hidden())
    }

    /// True when a press may confirm the provisional plies up to `upto` at once: the
    /// presser's ply is the last on the board, and the board cannot be showing a passing
    /// state of the hand. Either the line is one ply that cannot be a passing state of a
    /// longer move (no legal move of the same piece further along the same line: a knight,
    /// a capture, a pawn that cannot go on), or the board has been still long enough that
    /// the rest of a slide would have been reported (a scan period after the longest rest
    /// of a sliding hand).
    pub(super) fn press_is_conclusive(&self, upto: usize, now: u64) -> bool {
        if upto <= self.confirmed || upto != self.records.len() {
            return false;
        }
        let still = now.saturating_sub(self.last_change_ms);
        if still >= self.config.slide_settled_ms() {
            return true;
        }
        if upto != self.confirmed + 1 {
            return false;
        }
        let pos = &self.confirmed_pos;
        self.records[self.confirmed].to_move(pos).is_some_and(|m| !may_slide_on(pos, m))
    }

    /// True when ply `upto` (index one past it) could be part of a longer move under way
    /// (see `may_slide_on`).
    pub(super) fn ply_may_slide_on(&self, upto: usize) -> bool {
        let Some(pos) = self.position_at(upto - 1) else { return false };
        self.records[upto - 1].to_move(&pos).is_some_and(|m| may_slide_on(&pos, m))
    }

    /// Confirms provisional plies until `upto` are confirmed.
    pub(super) fn confirm_through<S: EventSink + ?Sized>(
        &mut self,
        upto: usize,
        press: Option<&Press>,
        now: u64,
        sink: &mut S,
    ) {
        let upto = upto.min(self.records.len());
        // The press belongs to the last ply of the presser within the range.
        let press_ply = press.and_then(|p| {
            let mut turn = self.confirmed_pos.turn();
            let mut last = None;
            for i in self.confirmed..upto {
                if turn == p.by {
                    last = Some(i);
                }
                turn = !turn;
            }
            last
        });
        while self.confirmed < upto {
            let i = self.confirmed;
            let pos = self.confirmed_pos.clone();
            let Some(m) = self.records[i].to_move(&pos) else { break };
            let color = pos.turn();
            let move_number = pos.fullmoves().get();
            let seen = self.seen_ms[0];
            // A press confirming the range: its reading shows the clocks as they were when
            // the range ended (a later one may show the mover's next move already).
            let reading = press.map(|p| p.reading).or_else(|| self.clocks.current(now));
            // The mover's display: a press's reading is read with the sides it was made with.
            let side = match press {
                Some(p) if p.by == color => p.side,
                Some(p) => p.side.other(),
                None => self.clocks.side_of(&self.config, color),
            };
            let (clk, emt) = match (press, reading) {
                (Some(p), _) if press_ply == Some(i) => {
                    let clk = p.reading.side(side).time.total_seconds();
                    (Some(clk), self.clocks.account(&self.config, color, move_number, clk, p.jump))
                }
                (_, Some(r)) => {
                    // No press of its own was seen (it came while the board was away, or
                    // was forgotten, or the move ended the game): the clock shows this
                    // ply's `%clk` only when the mover has not moved since, and their time
                    // has not run since the move: stopped at their press, started by the
                    // press now confirming, or still running from before the move (no reply
                    // on the board) and read within a second of it. Otherwise it is not
                    // knowable, and none is written rather than a wrong one. A press's
                    // reading shows the clock at the press: the mover has moved again when
                    // a ply of theirs came before the pressed one, whatever the board shows
                    // by now.
                    let moved_again = match (press, press_ply) {
                        (Some(_), Some(pressed)) => i + 2 <= pressed,
                        _ => i + 2 < self.records.len(),
                    };
                    let replied = i + 1 < self.records.len();
                    let ran = r.status.running()
                        && r.running_side() == Some(side)
                        && press.is_none_or(|p| p.by == color)
                        && (replied || self.clocks.last_ms.abs_diff(seen) > 1000);
                    // A reading rebuilt from a board's event log (a chain) measured the
                    // presser's display only: the mover's is a guess.
                    if moved_again || ran || !r.status.measured(side) {
                        self.clocks.unknown(color);
                        (None, None)
                    } else {
                        let clk = r.side(side).time.total_seconds();
                        (Some(clk), self.clocks.account(&self.config, color, move_number, clk, None))
                    }
                }
                (_, None) => {
                    let ms = seen.saturating_sub(self.last_confirmed_seen_ms);
                    (None, Some(((ms + 500) / 1000) as u32))
                }
            };
            self.records[i].clk = to16(clk);
            self.records[i].emt = to16(emt);
            self.clocks.ply_confirmed(color, press.is_some() && press_ply == Some(i));
            let info = MoveInfo {
                ply: (i + 1) as u16,
                color,
                uci: m.to_uci(self.castling_mode),
                san: SanPlus::from_move(pos, m),
                clk,
                emt,
                fen: FenText::of(&{
                    let mut after = self.confirmed_pos.clone();
                    after.play_unchecked(m);
                    after
                }),
            };
            self.confirmed_pos.play_unchecked(m);
            self.confirmed += 1;
            self.seen_ms.copy_within(1.., 0);
            self.joint.copy_within(1.., 0);
            self.stood.copy_within(1.., 0);
            self.last_confirmed_seen_ms = seen;
            self.clocks.fix_mapping();
            sink.event(Event::MoveConfirmed(info));
            if self.check_position_end(sink) {
                return;
            }
        }
    }
}

/// True when `m` (a quiet move) could be part of a longer move under way: the same piece
/// has a legal move from the same square to a square beyond `m`'s target, on the same line
/// (a slide), or it is a rook going where castling puts it while that castling is legal
/// (castling with the rook first: the king's half may still be on its way).
fn may_slide_on(pos: &Chess, m: Move) -> bool {
    let Move::Normal { role, from, to, capture: None, promotion: None } = m else { return false };
    let us = pos.turn();
    let rook_first = role == Role::Rook
        && pos.legal_moves().iter().any(|n| match *n {
            Move::Castle { rook, .. } => {
                rook == from && n.castling_side().is_some_and(|side| side.rook_to(us) == to)
            }
            _ => false,
        });
    rook_first
        || pos.legal_moves().iter().any(|n| {
            n.from() == Some(from) && n.role() == role && attacks::between(from, n.to()).contains(to)
        })
}
