//! Catching up with a board that ran many plies ahead of the line.
//!
//! A relay that reads late (a busy machine) gets the reports of several plies at once; when
//! some of them were lost, the board the line follows stops matching any legal successor,
//! and by the time a dump shows the real board, it may be more plies ahead than the deep
//! search goes. Those plies moved pieces only from and to squares the board reported
//! changing or the dump corrected: searched over such moves alone, the line is found in a
//! few thousand positions, however far the board ran.

use shakmaty::{Bitboard, Board, Chess, Move, Position};

use crate::search::{board_diff, has_two_kings, touched, undoes_own_last};

/// The most plies a catch-up line has: a board read late at blitz pace for a few seconds.
pub const CATCH_UP_DEPTH: usize = 12;

/// Positions one catch-up search may visit by default (a few tens of milliseconds on a
/// host): it runs while the relay reads the board, so it gives up rather than hold the
/// reading of the other boards. A slower machine sets less ([`crate::Config::catch_up_budget`]).
pub const CATCH_UP_BUDGET: u32 = 300_000;

/// A catch-up line.
pub(crate) type LongPath = heapless::Vec<Move, CATCH_UP_DEPTH>;

/// The line found by [`find_touched_line`], and whether another line of its length scored
/// as well (the board alone cannot say which order was played).
pub(crate) struct CatchUp {
    pub path: LongPath,
    pub tied: bool,
}

/// What a walk looks for and what it has found.
struct Walk<'a, G> {
    target: &'a Board,
    touched: Bitboard,
    order: &'a G,
    budget: u32,
    best: Option<(LongPath, u8)>,
    tied: bool,
}

/// The line of fewest plies, `lengths` at most, from `pos` to `target` that moves pieces
/// only from and to `touched` squares; among lines of that length, the one whose plies the
/// board reported most in their order (`order`, which rejects a line the board's reports
/// contradict with None). None when there is none, or when the search visited `budget`
/// positions without settling it.
pub(crate) fn find_touched_line<G: Fn(&[Move]) -> Option<u8>>(
    pos: &Chess,
    target: &Board,
    touched: Bitboard,
    lengths: core::ops::RangeInclusive<usize>,
    order: &G,
    budget: u32,
) -> Option<CatchUp> {
    if !has_two_kings(target) || !board_diff(pos.board(), target).is_subset(touched) {
        return None;
    }
    let mut walk = Walk { target, touched, order, budget, best: None, tied: false };
    for depth in lengths.filter(|&d| (1..=CATCH_UP_DEPTH).contains(&d)) {
        let mut path = LongPath::new();
        if !walk.lines(pos, depth, &mut path) {
            return None;
        }
        if let Some((path, _)) = walk.best.take() {
            return Some(CatchUp { path, tied: walk.tied });
        }
    }
    None
}

impl<G: Fn(&[Move]) -> Option<u8>> Walk<'_, G> {
    /// Offers every line of exactly `depth` more plies from `pos`; false when the budget ran
    /// out.
    fn lines(&mut self, pos: &Chess, depth: usize, path: &mut LongPath) -> bool {
        if self.budget == 0 {
            return false;
        }
        self.budget -= 1;
        let diff = board_diff(pos.board(), self.target);
        if depth == 0 {
            if diff.is_empty() {
                self.offer(path);
            }
            return true;
        }
        // A ply changes at most four squares (castling).
        if diff.count() > 4 * depth {
            return true;
        }
        for m in pos.legal_moves() {
            if !touched(m).is_subset(self.touched) || undoes_own_last(path, m) {
                continue;
            }
            let mut after = pos.clone();
            after.play_unchecked(m);
            if path.push(m).is_err() {
                return true;
            }
            let within = self.lines(&after, depth - 1, path);
            path.pop();
            if !within {
                return false;
            }
        }
        true
    }

    fn offer(&mut self, path: &LongPath) {
        let Some(score) = (self.order)(path) else { return };
        match &self.best {
            Some((_, s)) if score < *s => {}
            Some((_, s)) if score == *s => self.tied = true,
            _ => {
                self.best = Some((path.clone(), score));
                self.tied = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::uci::UciMove;

    fn play_all(pos: &Chess, ucis: &[&str]) -> Chess {
        let mut p = pos.clone();
        for u in ucis {
            let m = UciMove::from_ascii(u.as_bytes()).ok().and_then(|u| u.to_move(&p).ok());
            let Some(m) = m else { panic!("illegal {u}") };
            p.play_unchecked(m);
        }
        p
    }

    #[test]
    fn ten_plies_ahead_are_found_over_the_touched_squares() {
        let start = Chess::default();
        let line = ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5a4", "g8f6", "e1g1", "f8e7"];
        let end = play_all(&start, &line);
        let mut touched = board_diff(start.board(), end.board());
        // The squares a piece passed through (b5, the bishop's) were reported too.
        touched |= Bitboard::from_square(shakmaty::Square::B5);
        let found = find_touched_line(
            &start,
            end.board(),
            touched,
            1..=CATCH_UP_DEPTH,
            &|_| Some(0),
            CATCH_UP_BUDGET,
        )
        .expect("found");
        // The board alone does not say in which order each side made its moves.
        assert_eq!(found.path.len(), line.len());
        assert!(found.tied);
        // The order the board reported them in does.
        let mut played = LongPath::new();
        let mut p = start.clone();
        for u in line {
            let m = UciMove::from_ascii(u.as_bytes()).ok().and_then(|u| u.to_move(&p).ok()).expect("legal");
            p.play_unchecked(m);
            played.push(m).expect("room");
        }
        let order = |path: &[Move]| Some(path.iter().zip(&played).filter(|(a, b)| a == b).count() as u8);
        let found =
            find_touched_line(&start, end.board(), touched, 10..=10, &order, CATCH_UP_BUDGET).expect("found");
        assert!(!found.tied);
        assert_eq!(play_all(&start, &line), {
            let mut p = start.clone();
            for m in &found.path {
                p.play_unchecked(*m);
            }
            p
        });
    }

    #[test]
    fn a_square_nothing_reported_is_never_moved_through() {
        let start = Chess::default();
        let end = play_all(&start, &["e2e4", "e7e5", "f1b5", "a7a6", "b5a4"]);
        // Without b5, the bishop cannot have got to a4 in the two moves the line has.
        let touched = board_diff(start.board(), end.board());
        assert!(
            find_touched_line(&start, end.board(), touched, 5..=5, &|_| Some(0), CATCH_UP_BUDGET).is_none()
        );
    }
}
