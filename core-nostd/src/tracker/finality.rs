//! When plies are final: the one finality rule.
//!
//! A prefix of the provisional line becomes final (confirmed, written to the PGN) once the
//! evidence says the moves are over, never on a guess. Whatever the case, nothing from the
//! first ply of an unknown order on is final (the prefix every near-best line shares ends
//! there), and plies read together from one reading (a search of two or more plies) are
//! first checked against a dump taken after them (see [`Tracker::line_verified`]).
//!
//! | case | the prefix that is final | when | checked by |
//! |---|---|---|---|
//! | pressed | through the ply the press is for (see [`Tracker::ply_of`]), each earlier press's ply first with its own press | the board shows the ply and has been still a scan period, a scan period after the press; or the ply's piece stayed where it landed (see [`Tracker::pressed_ply_stands`]); or the opponent pressed later for a reply shown after it; or at once when the ply cannot be a passing state of the hand ([`Tracker::press_is_conclusive`]) | a ply that may be the first part of a longer move: a dump asked for after the press, or stillness as long as a slide's rest |
//! | quiet | all (but a last king step to a centre square: half of a kings' signal, perhaps) | still for the quiet time (no running clock) or the unpressed time | without a running clock, a dump asked for after the board's last change |
//! | next ply | all but the last | two plies or more, still for the chain time, no press to come | without a running clock, a dump asked for after the last ply appeared |
//! | capacity | the first, unless it is of an unknown order (then the line stops growing, the operator told) | eight provisional plies | its press, when the waiting presses begin with one by its mover |
//! | result on the board | what the board still shows beside the signal | the signal stood for the quiet time | a dump asked for after the signal began (see `check_board_result`) |
//!
//! Unpressed plies that bring back the position before the confirmed ones (a takeback
//! made in playing order, under a running clock, both players not having pressed) are no
//! moves: the line is taken back instead.

use shakmaty::{Bitboard, Chess, Color, Move, Position, Role, attacks};

use super::explain::traces;
use super::{GameState, MAX_PROVISIONAL, PendingPress, Stamp, Tracker};
use crate::clock::Press;
use crate::event::EventSink;
use crate::search::{board_diff, touched};

impl<const PLIES: usize> Tracker<PLIES> {
    /// The one finality rule (see the module's table), after every message and at every
    /// deadline; `still` is how long the board has been still.
    pub(super) fn finalize<S: EventSink + ?Sized>(&mut self, now: u64, still: u64, sink: &mut S) {
        self.confirm_pressed(now, false, sink);
        if self.state != GameState::Active {
            return;
        }
        let prov = self.records.len() - self.confirmed;
        if self.at_tip && prov > 0 {
            // Mate or stalemate on the board (no legal move): no clock will run. Nothing below
            // acts before the board has settled, so not worked out before.
            let settled = still >= u64::from(self.config.timing.settle_ms);
            let terminal = settled && self.tip.legal_moves().is_empty();
            let running = self.clock_running(now) && !terminal;
            let quiet = if running { self.config.timing.unpressed_ms } else { self.config.timing.quiet_ms };
            // Only unpressed plies under a running clock can be a takeback: without a
            // clock, legal plies that bring back an earlier position are a repetition, and
            // so are plies both players pressed for (see `both_pressed_since`).
            if running
                && still >= u64::from(self.config.timing.chain_confirm_ms)
                && !self.both_pressed_since(self.meta[0].seen.ms.saturating_sub(self.scan_ms()))
                && !self.both_pressed_waiting()
                && let Some(j) = self.undone_by_provisional()
            {
                // The arbiter's view: the position returned to an earlier one.
                self.takeback_to(j, sink);
            } else if !self.line_verified(self.records.len(), self.recent_since(now), now, sink) {
                // Plies read together wait for a dump (see `line_verified`).
            } else {
                let fresh = u64::from(self.config.timing.dump_fresh_ms);
                let soonest = if prov >= 2 { self.config.timing.chain_confirm_ms } else { quiet };
                if !running && still + fresh >= u64::from(soonest) {
                    // Asked for a little before the plies would stand, so that it is there
                    // by then (see below).
                    let stand_at = self.last_change_ms + u64::from(soonest);
                    self.dumped_since(self.fresh_since(stand_at), now, sink);
                }
                let stand = if still >= u64::from(quiet) {
                    // Quiet time: everything stands, except a king just put on a centre
                    // square (it may be half of a kings-in-centre result), which waits for
                    // the next move.
                    let keep_last = !terminal && self.last_is_king_to_centre();
                    let upto = if keep_last { self.records.len() - 1 } else { self.records.len() };
                    Some(upto)
                } else if prov >= 2
                    && still >= u64::from(self.config.timing.chain_confirm_ms)
                    && !self.press_to_come(now)
                {
                    // A forgotten press, or no clock: the plies that followed prove the
                    // earlier ones.
                    Some(self.records.len() - 1)
                } else {
                    None
                };
                // Without a running clock nothing but the board says a move is over, and a
                // board that reports nothing may have lost the reports of a move: plies stand
                // once a dump asked for at the end of the stillness shows them too (a move
                // made over the line with both its reports lost shows in it). The opponent's
                // next move alone says a move was made, not that no other was; a gap between
                // reports is no stillness the board confirmed.
                if let Some(upto) = stand
                    && (running || self.dumped_since(self.fresh_since(now), now, sink))
                {
                    self.confirm_through(upto, None, now, sink);
                }
            }
        }
    }

    /// Applies presses that came before the board showed the move, oldest first, once the
    /// board is still (or at once when `immediate`). Several may wait at once: in a burst
    /// both players can press before one scan shows their plies.
    pub(super) fn confirm_pressed<S: EventSink + ?Sized>(&mut self, now: u64, immediate: bool, sink: &mut S) {
        // While plies of an unknown order wait (see `first_hidden`), nothing after them is
        // confirmed, and the presses wait with them (each is its ply's `%clk`): their time
        // to find a ply runs from when the order is settled. So while no line explains the
        // board (a change the board never reported): the presses are then what says how
        // many plies the line a dump shows must have, and their time runs from when the
        // board is explained again.
        let window = u64::from(self.config.timing.press_window_ms);
        if self.first_hidden().is_some() || self.unexplained_since.is_some() {
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
                && !self.board_keeps_material_the_line_took()
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
                let one_of_several = self.pressed_before_for_no_ply(press.by, k);
                self.confirm_through(upto, Some(&Press { one_of_several, ..press }), now, sink);
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

    /// True when the provisional plies captured a piece of a kind the board still shows
    /// more of than the line leaves: a capture that did not happen (a rook reported on g2
    /// after the line had it taken on d3: Rf3-f2, its landing lost, Nd3, Rf2-g2, read as
    /// Rf3-d3 Nxd3). Captured pieces do not come back; whatever the hands do elsewhere, such
    /// a line is not confirmed until the board is explained again. A surplus of a kind the
    /// line took none of is a lift whose report was lost, and says nothing of the line.
    pub(super) fn board_keeps_material_the_line_took(&self) -> bool {
        let (board, line, before) = (&self.phys.board, self.tip.board(), self.confirmed_pos.board());
        let count = |b: &shakmaty::Board, piece: shakmaty::Piece| b.by_piece(piece).count();
        [Color::White, Color::Black].into_iter().any(|color| {
            [Role::Knight, Role::Bishop, Role::Rook, Role::Queen].into_iter().any(|role| {
                let piece = shakmaty::Piece { color, role };
                count(before, piece) > count(line, piece) && count(board, piece) > count(line, piece)
            })
        })
    }

    /// True when ply `upto` (index one past it) could be part of a longer move under way
    /// (see `may_slide_on`).
    pub(super) fn ply_may_slide_on(&self, upto: usize) -> bool {
        let Some(pos) = self.position_at(upto - 1) else { return false };
        self.records[upto - 1].to_move(&pos).is_some_and(|m| may_slide_on(&pos, m))
    }

    /// True when the provisional plies up to `upto` may be confirmed as far as the board
    /// goes. Plies that a single reading showed together (a search of two or more plies)
    /// are first checked against a dump that arrived at or after `since` (the press, or
    /// the board's last change): a lost field update can make one real move look like two
    /// or three others (a capture whose landing was not reported reads as a capture and a
    /// recapture), and only a dump taken once the move is complete shows that. Asks for
    /// the dump when one is needed.
    pub(super) fn line_verified<S: EventSink + ?Sized>(
        &mut self,
        upto: usize,
        since: Stamp,
        now: u64,
        sink: &mut S,
    ) -> bool {
        if self.first_hidden().is_some_and(|h| h < upto) {
            // One of several move orders: a dump may show the board moved on in a way only
            // one of them allows; nothing confirms the plies meanwhile.
            self.dumped_since(since, now, sink);
            return false;
        }
        if self.line_misses_lost_landing(now) {
            // The line may be another than the one played: searched again as the board goes
            // on (see `line_misses_lost_landing`).
            return false;
        }
        let n = upto.saturating_sub(self.confirmed).min(MAX_PROVISIONAL);
        if !self.meta[..n].iter().any(|m| m.joint) {
            return true;
        }
        // Once a dump shows the board, the order is read again with all that came since.
        self.dumped_since(since, now, sink)
            && !self.reread_joint_order(now, sink)
            && !self.line_out_of_press_turn()
    }

    /// True when the board reported, within the mismatch time, a landing whose report was
    /// lost (a square emptied while it stood empty, see `PhysBoard::lost_landings_after`)
    /// on a square no provisional ply moved a piece from, to or through. The plies wait:
    /// a line read before the report may be another order of hands than the one played
    /// (Qe6-e7+, its landing lost, ...Kg8, the queen lifted from e7 for the next move:
    /// read as Qe6-g8+ ...Kxg8, which a dump taken with the queen in hand shows too). A
    /// landing no line explains for the mismatch time (a piece knocked down and taken off)
    /// holds nothing longer.
    fn line_misses_lost_landing(&self, now: u64) -> bool {
        let recent = now.saturating_sub(u64::from(self.config.timing.mismatch_ms)) + 1;
        let lost = self.phys.lost_landings_after(self.last_confirmed_seen.ms.max(recent));
        if lost.is_empty() {
            return false;
        }
        let prov = self.records.len() - self.confirmed;
        let line = self.kept_plies(prov);
        !lost.is_subset(line.iter().fold(Bitboard::EMPTY, |b, &m| b | traces(m) | touched(m)))
    }

    /// True while the first provisional ply's mover has not pressed (their clock runs):
    /// confirmed now, by the plies that followed, it would get no `%clk`, and the press
    /// that gives it may still come (a player pressing after the reply). It waits for that
    /// press, or for the quiet time of unpressed moves.
    fn press_to_come(&self, now: u64) -> bool {
        let Some(r) = self.clocks.current(&self.config, now) else { return false };
        let mover = self.confirmed_pos.turn();
        r.status.running() && r.running_side() == Some(self.clocks.side_of(&self.config, mover))
    }

    /// True when the piece ply `upto` (index one past it) moved has stayed where it landed
    /// for a scan period: every square the ply changed shows what the ply left there and
    /// has not changed for [`Timing::press_stable_ms`](crate::Timing::press_stable_ms). A
    /// move pressed while the board showed it stands then, whatever the hands do elsewhere
    /// afterwards (the kings-in-centre gesture begun right after the last press, a piece
    /// knocked, the next move under way): the rest of a slide would have lifted the piece
    /// from its landing, a king following its rook in castling would have left its square.
    /// Unless the board shows the line's end, the caller takes the squares from a dump
    /// taken after the press: a lost field update (the king's lift in castling rook first)
    /// leaves a square looking unchanged.
    pub(super) fn pressed_ply_stands(&self, upto: usize, now: u64) -> bool {
        let Some(before) = self.position_at(upto - 1) else { return false };
        let Some(m) = self.records.get(upto - 1).and_then(|r| r.to_move(&before)) else { return false };
        let mut after = before.clone();
        after.play_unchecked(m);
        let mut squares = board_diff(before.board(), after.board());
        // A rook that went where castling puts it: the king may still be on its way.
        if let Move::Normal { role: Role::Rook, .. } = m
            && let Some(king) = before.board().king_of(before.turn())
        {
            squares.add(king);
        }
        let stable = u64::from(self.config.timing.press_stable_ms);
        squares.into_iter().all(|sq| {
            self.phys.board.piece_at(sq) == after.board().piece_at(sq)
                && !self.phys.magic.contains(sq)
                && now.saturating_sub(self.phys.changed_ms(sq)) >= stable
        })
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
