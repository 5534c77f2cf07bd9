//! What the clock presses say about how to read the board: the presses waiting for their
//! plies count the plies, and the board as it stood when they came shows where the pieces
//! were left. Both can call for a longer line than the shortest one to the board.

use shakmaty::{Board, Color, Move, Piece, Position, Role};

use super::{GameState, PendingPress, PressedBoard, Tracker};
use crate::board::placement_hash;
use crate::clock::Press;
use crate::event::EventSink;
use crate::search::{Search, board_diff};

impl<const PLIES: usize> Tracker<PLIES> {
    /// The presses that came since the last confirmed ply appeared: each says a ply after it
    /// is over.
    pub(super) fn waiting_presses(&self) -> impl Iterator<Item = &PendingPress> + '_ {
        // By the stream's order: a press read in the same burst as the ply, after it, came
        // after it.
        let since = self.last_confirmed_seen.seq;
        self.pending_press.iter().filter(move |p| p.seq > since)
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

    /// True when the side to move at the tip pressed since the last confirmed ply appeared:
    /// by the clock, it made a move the line does not have yet.
    pub(super) fn pressed_since_tip(&self) -> bool {
        let turn = self.tip.turn();
        self.waiting_presses().any(|p| p.press.by == turn)
    }

    /// How many presses came since the last confirmed ply appeared: each ended a ply.
    pub(super) fn waiting_press_count(&self) -> usize {
        self.waiting_presses().count()
    }

    /// True when the line matched `board` or the board reported it whole: two moves of one
    /// piece can go by many squares, and the one it stood on is the board's word.
    pub(super) fn board_was_shown(&self, board: &Board) -> bool {
        let h = placement_hash(board);
        self.seen_boards.contains(&h) || self.shown_boards.contains(&h)
    }

    /// A press by the side to move while the board shows the end of the line: by the line,
    /// the presser has no move to press for. When the presses waiting since the last
    /// confirmed ply, with this one, outnumber the provisional plies, the board was read
    /// one ply short: a piece that went in two moves with a reply between reaches the same
    /// board as one move of it (Qc1-d2 Ra5-c5 Qd2-f4, the queen's first landing and the
    /// reply read in one scan and the queen lifted again before the board settled, reads as
    /// Qc1-f4 Ra5-c5). The line one ply longer to the same board, ending with the presser's
    /// ply, replaces the provisional plies when one such line alone exists. Plies that stood
    /// are kept as they are (a position the players left on the board).
    pub(super) fn reread_for_press<S: EventSink + ?Sized>(&mut self, by: Color, now: u64, sink: &mut S) {
        let prov = self.records.len() - self.confirmed;
        if !self.at_tip || self.dirty || self.tip.turn() != by || prov == 0 || self.phys.magic.any() {
            return;
        }
        if prov + 1 > usize::from(self.config.search_depth) || self.stood_plies() > 0 {
            return;
        }
        if self.waiting_presses().count() < prov {
            return;
        }
        let target = self.phys.board.clone();
        let judge = |path: &[Move]| {
            Ok(self.seen_and_order(&self.confirmed_pos, path, &|b: &Board| self.board_was_shown(b)))
        };
        let Some(found) = Search::to(&target).of_length(&self.confirmed_pos, prov + 1, &judge) else {
            return;
        };
        if found.tied {
            return;
        }
        // A piece the longer line lands on a square and takes on again must have been seen
        // there: something changed on that square since the last confirmed ply appeared.
        // Without a trace on the board, the extra press alone does not make a ply (it may
        // be a press the clock's side bookkeeping misplaced).
        let since = self.last_confirmed_seen.ms;
        let mut mover = self.confirmed_pos.turn();
        let untraced = found.line.iter().any(|m| {
            let color = mover;
            mover = !mover;
            match *m {
                Move::Normal { role, to, promotion, .. } => {
                    let landed = Piece { color, role: promotion.unwrap_or(role) };
                    target.piece_at(to) != Some(landed) && self.phys.changed_ms(to) <= since
                }
                _ => false,
            }
        });
        if untraced {
            return;
        }
        let shown = self.shown_at(self.confirmed).min(now);
        self.retract_to(self.confirmed, sink);
        self.extend_shown(&found.line, now, shown, false, sink);
        self.on_match(sink);
    }

    /// True when the piece ply `upto` (index one past it) moved has stayed where it landed
    /// for a scan period: every square the ply changed shows what the ply left there and
    /// has not changed for [`Config::press_stable_ms`](crate::Config::press_stable_ms). A
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
            let ply = self.still_bound(p.bound).or_else(|| self.ply_for_pending_press(p.press.by, p.at));
            match ply {
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
    pub(super) fn bind_presses_to_dump(&mut self, now: u64, previous_dump: Option<u64>) {
        if !self.at_tip || self.dirty {
            return;
        }
        // The first dump since the press, asked for after it: the board a scan after the
        // press, whatever the link held back.
        let asked = self.last_dump_asked;
        let answers =
            |at: u64| at <= now && previous_dump.is_none_or(|d| d < at) && asked.is_some_and(|r| r >= at);
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
            if p.bound.is_some() || !answers(p.at) || upto <= self.confirmed {
                break;
            }
            // A press the line already has an earlier ply for (the board showed it, its
            // reports coming with the press in one reading) is that ply's.
            if self.ply_for_pending_press(p.press.by, p.at).is_some_and(|u| u < upto) {
                break;
            }
            if self.mover_of(upto) != p.press.by {
                break;
            }
            self.pending_press[k].bound = Some(self.ply_key(upto));
            upto -= 1;
        }
    }

    /// Binds the waiting presses to the provisional plies in order when they are two or
    /// more, one by each player in turn from the side to move, no more than the plies, and
    /// the first came before the board showed any of them: the players pressed before the
    /// board's reports of their moves were read (a relay reading a backlog, a board whose
    /// reports lag), and the k-th press is the k-th ply's. Left to themselves, the presses
    /// that came long before their plies showed would find none (a player does not press
    /// for a move made seconds later) and a later press would take an earlier ply of its
    /// player. Not while the last confirmed ply's press may still come (a late press would
    /// shift them all), nor while plies of an unknown order wait.
    pub(super) fn align_waiting_presses(&mut self) {
        let presses = self.pending_press.len();
        if presses < 2
            || !self.at_tip
            || self.dirty
            || self.clocks.press_owed()
            || self.first_hidden().is_some()
            || presses > self.records.len() - self.confirmed
            || self.pending_press[0].at >= self.shown_at(self.confirmed)
        {
            return;
        }
        let first = self.confirmed + 1;
        let in_turn = self.pending_press.iter().enumerate().all(|(k, p)| {
            p.press.by == self.mover_of(first + k)
                && (p.bound.is_none() || self.still_bound(p.bound) == Some(first + k))
        });
        if in_turn {
            for k in 0..presses {
                self.pending_press[k].bound = Some(self.ply_key(first + k));
            }
        }
    }

    /// Before the board changes, when it has stood for a scan: remembers it if two or more
    /// presses are waiting, one by each player in turn from the side to move after the last
    /// confirmed ply (see [`Self::line_through_pressed_board`]).
    pub(super) fn note_pressed_board(&mut self) {
        let mut turn = self.confirmed_pos.turn();
        let (mut presses, mut last_press_at) = (0u8, 0);
        for p in self.waiting_presses() {
            if p.press.by != turn {
                return;
            }
            turn = !turn;
            presses += 1;
            last_press_at = p.at;
        }
        if presses < 2 {
            return;
        }
        let board = &self.phys.board;
        if self
            .pressed_boards
            .last()
            .is_some_and(|b| b.presses == presses && b.last_press_at == last_press_at && &b.board == board)
        {
            return;
        }
        if self.pressed_boards.is_full() {
            self.pressed_boards.remove(0);
        }
        let pressed = PressedBoard { board: board.clone(), presses, last_press_at };
        let _ = self.pressed_boards.push(pressed);
    }
}
