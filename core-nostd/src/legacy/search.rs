//! Matching a physical board against legal successors of a position.
//!
//! The one-ply fast path derives candidate moves from the squares that differ and checks
//! them with shakmaty's targeted legality test, so a clean move costs no full move
//! generation. The deep search (iterative deepening up to [`MAX_DEPTH`] plies) prunes
//! every branch whose remaining plies cannot possibly change the squares still differing.

use shakmaty::{Bitboard, Board, CastlingSide, Chess, Color, File, Move, Position, Role, Square};

/// The deepest search supported.
pub const MAX_DEPTH: usize = 4;

/// A sequence of plies found by the search.
pub(crate) type Path = heapless::Vec<Move, MAX_DEPTH>;

/// The squares whose content differs between two boards.
pub fn board_diff(a: &Board, b: &Board) -> Bitboard {
    let mut d = (a.white() ^ b.white()) | (a.black() ^ b.black());
    for role in Role::ALL {
        d |= a.by_role(role) ^ b.by_role(role);
    }
    d
}

/// Where castling with the king on `king` and the rook on `rook` puts them (standard and
/// Chess960 alike: the king to the g- or c-file, the rook beside it).
pub(crate) fn castle_targets(king: Square, rook: Square) -> (Square, Square) {
    let (king_to, rook_to) = if rook.file() > king.file() { (File::G, File::F) } else { (File::C, File::D) };
    (Square::from_coords(king_to, king.rank()), Square::from_coords(rook_to, king.rank()))
}

/// The squares a ply changes.
pub(crate) fn touched(m: Move) -> Bitboard {
    match m {
        Move::Normal { from, to, .. } => Bitboard::from_square(from) | Bitboard::from_square(to),
        Move::EnPassant { from, to } => {
            let victim = Square::from_coords(to.file(), from.rank());
            Bitboard::from_square(from) | Bitboard::from_square(to) | Bitboard::from_square(victim)
        }
        Move::Castle { king, rook } => {
            let (king_to, rook_to) = castle_targets(king, rook);
            Bitboard::from_square(king)
                | Bitboard::from_square(rook)
                | Bitboard::from_square(king_to)
                | Bitboard::from_square(rook_to)
        }
        Move::Put { to, .. } => Bitboard::from_square(to),
    }
}

/// True when a board could be a legal chess position's placement: one king per side.
pub fn has_two_kings(board: &Board) -> bool {
    (board.kings() & board.white()).count() == 1 && (board.kings() & board.black()).count() == 1
}

fn reaches(pos: &Chess, m: Move, target: &Board) -> bool {
    let mut p = pos.clone();
    p.play_unchecked(m);
    p.board() == target
}

/// The single legal move from `pos` whose result is `target`, given `diff`, the squares
/// where `pos` and `target` differ.
pub fn one_ply(pos: &Chess, target: &Board, diff: Bitboard) -> Option<Move> {
    let n = diff.count();
    if !(2..=4).contains(&n) {
        return None;
    }
    let us = pos.turn();
    for to in diff & target.by_color(us) {
        let Some(role) = target.role_at(to) else { continue };
        for m in pos.san_candidates(role, to) {
            if touched(m) == diff && reaches(pos, m, target) {
                return Some(m);
            }
        }
        if role != Role::Pawn && Bitboard::BACKRANKS.contains(to) {
            for m in pos.san_candidates(Role::Pawn, to) {
                if m.promotion() == Some(role) && touched(m) == diff && reaches(pos, m, target) {
                    return Some(m);
                }
            }
        }
    }
    if pos.castles().has_color(us) {
        for side in [CastlingSide::KingSide, CastlingSide::QueenSide] {
            if pos.castles().has(us, side) {
                for m in pos.castling_moves(side) {
                    if reaches(pos, m, target) {
                        return Some(m);
                    }
                }
            }
        }
    }
    None
}

fn count(bb: Bitboard) -> i32 {
    bb.count() as i32
}

/// Cheap necessary conditions for `target` to be reachable from `pos` in `depth` plies.
fn material_allows(pos: &Chess, target: &Board, depth: u8) -> bool {
    let b = pos.board();
    let lost_w = count(b.white()) - count(target.white());
    let lost_b = count(b.black()) - count(target.black());
    let depth = i32::from(depth);
    // Each ply captures at most one piece of the side not moving.
    let (cap_w, cap_b) = match pos.turn() {
        Color::White => (depth / 2, (depth + 1) / 2),
        Color::Black => ((depth + 1) / 2, depth / 2),
    };
    (0..=cap_w).contains(&lost_w) && (0..=cap_b).contains(&lost_b)
}

/// True when `m` takes back the same side's previous ply of `path` (a piece out and back)
/// and that ply captured nothing.
///
/// Such a pair leaves no trace on the board, so a line holding one explains a board on which
/// the *other* side moved twice in a row: never a legal game, only a confused hand or a
/// takeback. The search does not offer such lines; the tracker's takeback search and its
/// mismatch report deal with those boards instead. A piece that went out to capture and
/// came back (`Nxe5 d6 Nf3` in the Petroff) leaves the captured piece missing: that is a
/// line like any other.
pub(crate) fn undoes_own_last(path: &[Move], m: Move) -> bool {
    let Some(&prev) = path.len().checked_sub(2).and_then(|i| path.get(i)) else { return false };
    match (prev, m) {
        (
            Move::Normal { from: a, to: b, capture: None, promotion: None, .. },
            Move::Normal { from: c, to: d, .. },
        ) => a == d && b == c,
        _ => false,
    }
}

/// What a walk looks for: lines to `target`, scored by `seen`, then by `order`; with
/// `first`, the first line found ends the walk.
struct Walk<'a, F, G> {
    target: &'a Board,
    seen: &'a F,
    order: &'a G,
    first: bool,
}

/// The best line a walk found so far, its score (seen positions, then plies in the order
/// the board reported them), and whether another line scored the same (the board alone
/// cannot tell them apart).
#[derive(Default)]
struct Best {
    line: Option<(Path, (u8, u8))>,
    tied: bool,
}

impl Best {
    /// The line found, if any, with its seen count and tie.
    fn into_found(self) -> Option<Found> {
        let tied = self.tied;
        self.line.map(|(path, (seen, _))| Found { path, seen, tied })
    }

    fn offer(&mut self, path: &Path, score: (u8, u8)) {
        match &self.line {
            Some((_, s)) if score < *s => {}
            Some((_, s)) if score == *s => self.tied = true,
            _ => {
                self.line = Some((path.clone(), score));
                self.tied = false;
            }
        }
    }
}

/// A line found by [`find_line_seen`].
pub(crate) struct Found {
    /// The plies.
    pub path: Path,
    /// How many of the positions on the way the board was seen showing.
    pub seen: u8,
    /// Another line of the same length through as many seen positions leads to the same
    /// board: which one was played is a guess.
    pub tied: bool,
}

/// Walks the lines of exactly `depth` plies from `pos` to the target, keeping in `best` the
/// one whose positions on the way the board was seen showing most often (the first found
/// on a tie, noting the tie). `score` counts the seen positions of `path` so far. Returns
/// true when the walk is to stop (a line found, with `first`).
fn walk<F: Fn(&Board) -> bool, G: Fn(&[Move]) -> u8>(
    w: &Walk<'_, F, G>,
    pos: &Chess,
    depth: u8,
    path: &mut Path,
    score: u8,
    best: &mut Best,
) -> bool {
    let target = w.target;
    let first = w.first;
    let diff = board_diff(pos.board(), target);
    if diff.is_empty() {
        best.offer(path, (score, (w.order)(path)));
        return first;
    }
    if depth == 0 {
        return false;
    }
    if depth == 1 {
        if let Some(m) = one_ply(pos, target, diff)
            && !undoes_own_last(path, m)
            && path.push(m).is_ok()
        {
            best.offer(path, (score, (w.order)(path)));
            path.pop();
            return first;
        }
        return false;
    }
    if diff.count() > 4 * usize::from(depth) || !material_allows(pos, target, depth) {
        return false;
    }
    let rest = depth - 1;
    for m in pos.legal_moves() {
        if undoes_own_last(path, m) {
            continue;
        }
        let mut p = pos.clone();
        p.play_unchecked(m);
        let nd = board_diff(p.board(), target).count();
        if nd > 4 * usize::from(rest) || (rest == 1 && nd == 1) || nd == 0 {
            continue;
        }
        if path.push(m).is_err() {
            return false;
        }
        let s = score + u8::from((w.seen)(p.board()));
        if walk(w, &p, rest, path, s, best) {
            return true;
        }
        path.pop();
    }
    false
}

/// The shortest sequence of at most `max_depth` legal plies from `pos` that leaves exactly
/// `target` on the board (empty when it already does). When several lines of that length
/// do, the one passing through most positions for which `seen` is true: different move
/// orders can reach the same board (a burst of plies read at once), and the positions the
/// board showed on the way tell them apart; then the one whose plies the board reported
/// in their order (`order` counts them). Returns the line, its seen count, and whether
/// another line was as good.
pub(crate) fn find_line_seen<F: Fn(&Board) -> bool, G: Fn(&[Move]) -> u8>(
    pos: &Chess,
    target: &Board,
    max_depth: u8,
    seen: &F,
    order: &G,
) -> Option<Found> {
    if !has_two_kings(target) {
        return None;
    }
    let max_depth = max_depth.min(MAX_DEPTH as u8);
    for depth in 0..=max_depth {
        if !material_allows(pos, target, depth) {
            continue;
        }
        let mut found = Best::default();
        if !walk(&Walk { target, seen, order, first: true }, pos, depth, &mut Path::new(), 0, &mut found) {
            continue;
        }
        // The length is known; from two plies on, every line of that length is compared
        // (one ply is unique: the board shows the piece that moved and where).
        let best = match depth {
            0 | 1 => found,
            _ => Some(all_lines_of(pos, target, depth, seen, order))
                .filter(|b| b.line.is_some())
                .unwrap_or(found),
        };
        return best.into_found();
    }
    None
}

/// The best line of exactly `depth` plies (at least one) from `pos` to `target`, compared
/// as [`find_line_seen`] compares them, even when a shorter line exists: what the clock
/// presses say can need the longer one (a piece that went in two moves with a reply between
/// reaches the board one move of it reaches too).
pub(crate) fn find_line_of_length<F: Fn(&Board) -> bool, G: Fn(&[Move]) -> u8>(
    pos: &Chess,
    target: &Board,
    depth: u8,
    seen: &F,
    order: &G,
) -> Option<Found> {
    let reached = board_diff(pos.board(), target).is_empty();
    if reached || depth == 0 || usize::from(depth) > MAX_DEPTH || !has_two_kings(target) {
        return None;
    }
    if !material_allows(pos, target, depth) {
        return None;
    }
    all_lines_of(pos, target, depth, seen, order).into_found()
}

/// Every line of exactly `depth` plies from `pos` to `target` (when `pos` is not already
/// there), the best kept.
fn all_lines_of<F: Fn(&Board) -> bool, G: Fn(&[Move]) -> u8>(
    pos: &Chess,
    target: &Board,
    depth: u8,
    seen: &F,
    order: &G,
) -> Best {
    let mut best = Best::default();
    walk(&Walk { target, seen, order, first: false }, pos, depth, &mut Path::new(), 0, &mut best);
    best
}
