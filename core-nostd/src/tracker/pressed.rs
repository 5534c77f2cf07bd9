//! What the clock presses say about how to read the board: the presses waiting for their
//! plies count the plies, and the board as it stood when they came shows where the pieces
//! were left. Both can call for a longer line than the shortest one to the board.

use shakmaty::{Bitboard, Board, Color, Move, Piece, Position};

use super::{PressedBoard, Tracker};
use crate::board::placement_hash;
use crate::event::EventSink;
use crate::search::{Rejection, Search};

impl<const PLIES: usize> Tracker<PLIES> {
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
            if !self.explains_reports(&[], path, Bitboard::EMPTY) {
                return Err(Rejection::UnexplainedReport);
            }
            Ok(self.seen_and_order(&self.confirmed_pos, path, &|b: &Board| self.board_was_shown(b)))
        };
        let Some(found) = Search::to(&target).of_length(&self.confirmed_pos, prov + 1, &judge) else {
            return;
        };
        if found.tied {
            return;
        }
        // A piece the longer line lands on a square and takes on again must have been seen
        // there: something changed on that square since the last confirmed ply appeared,
        // or the board reported it (emptied while it stood empty: a landing whose report was
        // lost). Without a trace on the board, the extra press alone does not make a ply (it
        // may be a press the clock's side bookkeeping misplaced).
        let since = self.last_confirmed_seen.ms;
        let reported = |sq| self.phys.reports_since(sq, self.last_confirmed_seen.seq) != Some(0);
        let mut mover = self.confirmed_pos.turn();
        let untraced = found.line.iter().any(|m| {
            let color = mover;
            mover = !mover;
            match *m {
                Move::Normal { role, to, promotion, .. } => {
                    let landed = Piece { color, role: promotion.unwrap_or(role) };
                    target.piece_at(to) != Some(landed) && self.phys.changed_ms(to) <= since && !reported(to)
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

    /// [`Self::reread_for_press`] for the presses that came before the board showed their
    /// plies (a link that held the reports back, a dump that came late): the line a search
    /// just found ends with the last presser to move, so that press has no ply on it.
    pub(super) fn reread_for_waiting_presses<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) {
        if let Some(by) = self.waiting_presses().last().map(|p| p.press.by) {
            self.reread_for_press(by, now, sink);
        }
    }

    /// Before the board changes, when it has stood for a scan: remembers it if two or more
    /// presses are waiting, one by each player in turn from the side to move after the last
    /// confirmed ply (see `through_pressed_board`).
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
