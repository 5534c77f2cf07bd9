//! The line of plies: provisional plies added and withdrawn, and finality (which plies
//! are confirmed, when, and with which `%clk`/`%emt`).

use shakmaty::{Bitboard, Chess, Color, Move, Position, Role, attacks, san::SanPlus};

use super::record::{PlyRecord, to16};
use super::{MAX_PROVISIONAL, PendingPress, PlyMeta, Stamp, Tracker};
use crate::board::placement_hash;
use crate::clock::Press;
use crate::event::{Event, EventSink, MoveInfo};
use crate::fen::FenText;

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
            let at = self.stamp(now);
            let san = SanPlus::from_move(self.tip.clone(), m);
            let _ = self.meta.push(PlyMeta {
                seen: at,
                shown: at,
                joint: moves.len() > 1,
                san: Some(san),
                ..PlyMeta::default()
            });
            let info = MoveInfo {
                ply: self.records.len() as u16,
                color: self.tip.turn(),
                uci: m.to_uci(self.castling_mode),
                san,
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
            self.meta.pop();
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

    /// Applies presses that came before the board showed the move, oldest first, once the
    /// board is still (or at once when `immediate`). Several may wait at once: in a burst
    /// both players can press before one scan shows their plies.
    pub(super) fn resolve_pending<S: EventSink + ?Sized>(&mut self, now: u64, immediate: bool, sink: &mut S) {
        // While plies of an unknown order wait (see `first_hidden`), nothing after them is
        // confirmed, and the presses wait with them (each is its ply's `%clk`): their time
        // to find a ply runs from when the order is settled.
        let window = u64::from(self.config.timing.press_window_ms);
        if self.first_hidden().is_some() {
            for p in self.pending_press.iter_mut() {
                p.expires = p.expires.max(now + window);
            }
        }
        let mut k = 0;
        while k < self.pending_press.len() {
            let PendingPress { press, at: t, seq, expires, .. } = self.pending_press[k];
            let pressed = Stamp { seq, ms: t };
            if now > expires {
                self.pending_press.remove(k);
                continue;
            }
            // The ply the board showed for the press, while it is still in the line.
            let bound = self.shown_ply(k);
            let stable = u64::from(self.config.timing.press_stable_ms);
            let on_board = self.at_tip && !self.dirty;
            let Some(upto) = self.ply_of(k) else {
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
                && (on_board || self.dumped_since(pressed, now, sink));
            // The opponent pressed later for a reply the board showed after this ply: the
            // ply is over (a piece does not go on sliding once the opponent has moved and
            // pressed), however soon the hands move on.
            let replied = bound == Some(upto)
                && on_board
                && (0..self.pending_press.len()).any(|j| {
                    let q = &self.pending_press[j];
                    q.press.by != press.by && q.at > t && self.shown_ply(j).is_some_and(|b| b > upto)
                });
            // A ply that may be the first part of a longer move (a slide, castling with the
            // rook first) is taken from a dump taken after the press (the reports of the rest
            // may have been lost: the king's, in castling king first), or, without one, once
            // the board has been still after the press for as long as the rest of a slide
            // takes to be reported.
            let settled_ms = self.config.timing.slide_settled_ms();
            let shown = !self.ply_may_slide_on(upto)
                || self.dumped_since(pressed, now, sink)
                || (now.saturating_sub(self.last_change_ms) >= settled_ms
                    && now.saturating_sub(t) >= settled_ms);
            let ready = settled || (on_board && immediate) || stands || replied;
            if ready && shown && self.line_verified(upto, pressed, now, sink) {
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
        if still >= self.config.timing.slide_settled_ms() {
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
            let seen = self.meta.first().map_or(self.stamp(now), |m| m.seen);
            // A press confirming the range: its reading shows the clocks as they were when
            // the range ended (a later one may show the mover's next move already).
            let reading = press.map(|p| p.reading).or_else(|| self.clocks.current(&self.config, now));
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
                        && (replied
                            || self.clocks.last_ms.abs_diff(seen.ms)
                                > u64::from(self.config.timing.clock_fresh_ms));
                    if moved_again || ran {
                        self.clocks.unknown(color);
                        (None, None)
                    } else {
                        let clk = r.side(side).time.total_seconds();
                        (Some(clk), self.clocks.account(&self.config, color, move_number, clk, None))
                    }
                }
                (_, None) => {
                    let ms = seen.ms.saturating_sub(self.last_confirmed_seen.ms);
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
                san: self
                    .meta
                    .first()
                    .and_then(|meta| meta.san)
                    .unwrap_or_else(|| SanPlus::from_move(pos, m)),
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
            if !self.meta.is_empty() {
                self.meta.remove(0);
            }
            self.last_confirmed_seen = seen;
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
    let castling =
        |side| if pos.castles().has(us, side) { pos.castling_moves(side) } else { shakmaty::MoveList::new() };
    let sides = [shakmaty::CastlingSide::KingSide, shakmaty::CastlingSide::QueenSide];
    match role {
        Role::Knight => false,
        // Castling king first: the king's step may be the first half of castling.
        Role::King => sides
            .into_iter()
            .any(|side| castling(side).iter().any(|n| attacks::between(from, n.to()).contains(to))),
        _ => {
            let rook_first = role == Role::Rook
                && sides.into_iter().any(|side| {
                    side.rook_to(us) == to
                        && castling(side)
                            .iter()
                            .any(|n| matches!(*n, Move::Castle { rook, .. } if rook == from))
                });
            // Squares beyond `to` on the line from `from` the piece reaches (its path is
            // clear in `pos`, where it still stands on `from`): a legal move of it there.
            let piece = shakmaty::Piece { color: us, role };
            let reach = if role == Role::Pawn {
                // A pawn's double step (not one of its attacks).
                !pos.board().occupied()
            } else {
                attacks::attacks(from, piece, pos.board().occupied()) & !pos.us()
            };
            let beyond =
                reach & attacks::ray(from, to) & !attacks::between(from, to) & !Bitboard::from_square(to);
            rook_first
                || beyond.into_iter().any(|sq| {
                    attacks::between(from, sq).contains(to)
                        && pos
                            .san_candidates(role, sq)
                            .iter()
                            .any(|n| n.from() == Some(from) && n.promotion().is_none())
                })
        }
    }
}
