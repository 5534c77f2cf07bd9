//! A board that ran more plies ahead of the line than the deep search goes (see
//! [`crate::catch_up`]): read again from the last confirmed ply, over the squares the board
//! changed, once a dump shows it.

use shakmaty::{Bitboard, Board, Move, Position, Role, Square, attacks};

use super::Tracker;
use crate::catch_up::{CATCH_UP_DEPTH, find_touched_line};
use crate::event::EventSink;
use crate::search::{board_diff, castle_targets};

impl<const PLIES: usize> Tracker<PLIES> {
    /// Takes the line from the last confirmed ply to `target` (a dump just read) over the
    /// squares the board changed since: as many plies as the presses waiting since then
    /// say (or one more: the last move not pressed yet), or any number without a running
    /// clock. Returns true
    /// when it did. A line of an order the board never showed is taken with its plies
    /// hidden, as a shorter search's would be.
    pub(super) fn catch_up<S: EventSink + ?Sized>(&mut self, target: &Board, now: u64, sink: &mut S) -> bool {
        let touched = self.squares_changed_since_confirmed(target);
        let lengths = if self.clock_running(now) {
            // More presses than the list holds: the count is lost, and a shorter line (a
            // repetition leaves no trace) would be a guess.
            if self.pending_press.is_full() {
                return false;
            }
            let presses = self.waiting_press_count();
            presses.max(1)..=presses + 1
        } else {
            1..=CATCH_UP_DEPTH
        };
        let since = self.last_confirmed_seen_ms;
        let order = |path: &[shakmaty::Move]| {
            self.explains_placements(path, touched, since).then(|| self.plies_in_reported_order(path))
        };
        let budget = self.config.catch_up_budget;
        let Some(found) = find_touched_line(&self.confirmed_pos, target, touched, lengths, &order, budget)
        else {
            return false;
        };
        let hidden = found.tied && !self.back_from_outage;
        self.retract_to(self.confirmed, sink);
        let from = self.records.len();
        self.extend_shown(&found.path, now, self.tip_left_ms.min(now), hidden, sink);
        self.date_found_plies(from, now);
        if hidden {
            self.alert_hidden_order(sink);
        }
        self.on_match(sink);
        true
    }

    /// True when `path` (from the last confirmed ply) explains every piece the board
    /// reported set down on a `touched` square since `since`: a ply of that piece landing
    /// there or sliding through it, or the piece put back where it stood. A line that
    /// leaves a report unexplained is not what the hands did, however well it fits the
    /// dump (Kd5 Ke6 Kd5 where a knight was reported landing on d5).
    fn explains_placements(&self, path: &[Move], touched: Bitboard, since: u64) -> bool {
        touched.into_iter().all(|sq| {
            let Some(piece) = self.phys.placed_after(sq, since) else { return true };
            if self.confirmed_pos.board().piece_at(sq) == Some(piece) {
                return true;
            }
            let mut pos = self.confirmed_pos.clone();
            path.iter().any(|&m| {
                let mover = pos.turn();
                pos.play_unchecked(m);
                mover == piece.color && puts_or_passes(m, piece.role, sq)
            })
        })
    }

    /// The squares the line or the board changed since the last confirmed ply: where the
    /// provisional plies went, what the board reported since it left the tip, and where
    /// `target` differs from the last confirmed position.
    fn squares_changed_since_confirmed(&self, target: &Board) -> Bitboard {
        let mut squares = self.touched_off_tip | board_diff(self.confirmed_pos.board(), target);
        let mut pos = self.confirmed_pos.clone();
        for rec in &self.records[self.confirmed..] {
            let Some(m) = rec.to_move(&pos) else { break };
            let before = pos.board().clone();
            pos.play_unchecked(m);
            squares |= board_diff(&before, pos.board());
        }
        squares
    }
}

/// True when ply `m` sets a piece of `role` down on `sq` or slides one through it (a hand
/// touching the squares on its way): its landing, castling's rook, or a pawn on the square
/// it promotes on.
fn puts_or_passes(m: Move, role: Role, sq: Square) -> bool {
    match m {
        Move::Normal { role: moved, from, to, promotion, .. } => {
            (to == sq && (promotion.unwrap_or(moved) == role || moved == role))
                || (moved == role && attacks::between(from, to).contains(sq))
        }
        Move::EnPassant { to, .. } => to == sq && role == Role::Pawn,
        Move::Castle { king, rook } => {
            let (king_to, rook_to) = castle_targets(king, rook);
            (role == Role::King && sq == king_to)
                || (role == Role::Rook && sq == rook_to)
                || attacks::between(king, rook).contains(sq)
        }
        Move::Put { .. } => false,
    }
}
