//! Lines of legal plies that explain a physical board: one generator, one score.
//!
//! The one-ply step derives candidate moves from the squares that differ and checks them
//! with shakmaty's targeted legality test, so a clean move costs no full move generation.
//! The generator ([`Search`]) deepens iteratively over the lengths it is asked for, prunes
//! every branch whose remaining plies cannot possibly change the squares still differing
//! (or, searching a board far ahead, moves pieces off the squares the board reported), and
//! keeps the best line by one [`Score`], noting ties instead of breaking them.

use shakmaty::{Bitboard, Board, CastlingSide, Chess, Color, File, Move, Position, Role, Square};

/// The deepest search supported.
pub const MAX_DEPTH: usize = 4;

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
/// line like any other. So is one the board reported on the square it went to (see
/// [`Search::with_stops`]): ...Nd5-c7 e5 ...Nc7-d5, c7's lift reported.
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

/// A line of plies from a position: what the search finds and the tracker keeps.
pub(crate) type Line = heapless::Vec<Move, LONGEST>;

/// The most plies one line holds: a board read late at blitz pace for a few seconds (see
/// [`Search::touched`]).
pub const LONGEST: usize = 12;

/// What [`Walk::next_plies`] did.
#[expect(
    clippy::large_enum_variant,
    reason = "the short list is meant to sit in the caller's frame: the core does not allocate"
)]
enum Next {
    /// These plies are worth following: few enough to be followed from the caller's frame.
    Short(heapless::Vec<Move, NEXT_PLIES>),
    /// There were more: followed already; false when the budget ran out.
    Followed(bool),
}

/// Most plies from one position a search keeps in its short list (see `Walk::next_plies`):
/// a catch-up search over touched squares nearly always has fewer.
const NEXT_PLIES: usize = 40;

/// Positions one search over touched squares may visit (a few tens of milliseconds): it
/// runs while the relay reads the board, so it gives up rather than hold the reading of
/// the other boards.
pub const BUDGET: u32 = 300_000;

/// How well a line explains what the board and clock said, part by part: a line is better
/// than another when its first differing part is greater. Each search fills the parts its
/// question needs; two different lines with the same score are a tie, which the caller
/// reports as an order the board never showed, never breaks by chance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Score {
    /// Fewer plies from the last confirmed ply: the shortest line that explains the board
    /// (`u8::MAX` less the plies).
    pub fewer_plies: u8,
    /// Positions on the way that the board was seen showing: move orders that reach the
    /// same board are told apart by what the board showed in passing.
    pub seen: u8,
    /// Pairs of plies whose reported changes came in the line's order (see
    /// `Tracker::plies_in_reported_order`): the order the hands went.
    pub order: u8,
    /// Plies whose landing the board reported since it left the line (a piece set down,
    /// reported, and lifted again for the next move).
    pub landings: u8,
    /// Fewer changes the line makes that the board's reports do not show (`u8::MAX` less
    /// them; see `Tracker::reports_lost`): a line needing one report lost is likelier than
    /// one needing three.
    pub fewer_lost: u8,
}

impl Score {
    /// The part for a line of `plies` plies in all.
    pub fn plies(plies: usize) -> u8 {
        u8::MAX.saturating_sub(u8::try_from(plies).unwrap_or(u8::MAX))
    }
}

/// Why a line that reaches the board is not what was played. The generator never offers
/// the first two; the tracker's judges and choice give the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// A piece out and back without a capture: the other side moved twice in a row (see
    /// [`undoes_own_last`]).
    OutAndBack,
    /// A ply moves a piece from or to a square the board never reported changing (a search
    /// over touched squares).
    Untraced,
    /// It leaves a piece the board reported set down on a square unexplained: no ply lands
    /// it there or slides it through (Kd5 Ke6 Kd5 where a knight was reported on d5).
    UnexplainedReport,
    /// It gives up plies that stood, beyond a slide that paused and went on (the last of
    /// them, for a line no longer than it).
    GivesUpStoodPly,
    /// A ply's reported changes all came before its mover pressed for the ply before it (a
    /// player making two moves on one press), or all after the press that ended it (see
    /// `Tracker::out_of_press_turn`).
    OutOfPressTurn,
    /// Another line explains the board as well, where the evidence needs one line alone.
    Tied,
}

/// The best line a search found, and whether another line scored the same.
#[derive(Clone, Debug, Default)]
pub(crate) struct Best {
    /// The line and its score.
    pub line: Option<(Line, Score)>,
    /// Another, different line scored the same: the board alone cannot tell which.
    pub tied: bool,
    /// How many lines were offered (rejected ones not counted).
    pub lines: u32,
}

impl Best {
    /// Keeps `line` when it scores better than the best so far; notes a tie.
    pub fn offer(&mut self, line: &[Move], score: Score) {
        self.lines += 1;
        match &self.line {
            Some((_, s)) if score < *s => {}
            Some((best, s)) if score == *s => self.tied |= best.as_slice() != line,
            _ => {
                self.line = Line::from_slice(line).ok().map(|l| (l, score));
                self.tied = false;
            }
        }
    }

    /// The line, when one was found, with its tie.
    pub fn found(self) -> Option<Found> {
        let (tied, lines) = (self.tied, self.lines);
        self.line.map(|(line, score)| Found { line, score, tied, lines })
    }
}

/// A line a search found.
pub(crate) struct Found {
    /// The plies.
    pub line: Line,
    /// Its score.
    pub score: Score,
    /// Another line of the same length scored the same: which one was played is a guess.
    pub tied: bool,
    /// How many lines of its length were found.
    pub lines: u32,
}

/// How a line's last position must stand to the board.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ends<'a> {
    /// It is the board.
    At(&'a Board),
    /// It is the board with some pieces of the side to move lifted, at least one (the next
    /// move's hands at work), nothing else.
    UnderReply(&'a Board),
}

/// The one generator of lines: every line of legal plies from a position whose last
/// position stands to the board as [`Ends`] says, by iterative deepening over the lengths
/// asked, scored by the caller. Branches that cannot reach the board in the plies left are
/// cut (each ply changes at most four squares, and captures at most one piece of the side
/// not moving); a piece out and back without a capture is no line (see
/// [`undoes_own_last`]), unless it went to one of the squares the board showed a piece on
/// in passing ([`Search::with_stops`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Search<'a> {
    /// What the lines reach.
    pub ends: Ends<'a>,
    /// Every ply moves pieces only from and to these squares (the squares the board
    /// reported changing, or a dump corrected), when given: a board many plies ahead is
    /// searched over the moves the board's evidence allows.
    pub touched: Option<Bitboard>,
    /// Positions the search may visit before it gives up.
    pub budget: u32,
    /// Squares the board reported a piece on in passing (set down, or a landing whose
    /// report was lost): a piece may go out to one and back (see [`undoes_own_last`]).
    pub stops: Bitboard,
}

impl<'a> Search<'a> {
    /// Lines to exactly `board`.
    pub fn to(board: &'a Board) -> Search<'a> {
        Search { ends: Ends::At(board), touched: None, budget: u32::MAX, stops: Bitboard::EMPTY }
    }

    /// Lines to `board` with some of the next mover's pieces lifted.
    pub fn under_reply(board: &'a Board) -> Search<'a> {
        Search { ends: Ends::UnderReply(board), touched: None, budget: u32::MAX, stops: Bitboard::EMPTY }
    }

    /// Only over `touched` squares, within `budget` positions ([`BUDGET`] on a host; see
    /// [`Config::catch_up_budget`](crate::Config::catch_up_budget)).
    pub fn over(self, touched: Bitboard, budget: u32) -> Search<'a> {
        Search { touched: Some(touched), budget, ..self }
    }

    /// Lines may take a piece out to one of `stops` and straight back: the board showed it
    /// there, so the pair is a move and its retreat, not the other side moving twice.
    pub fn with_stops(self, stops: Bitboard) -> Search<'a> {
        Search { stops, ..self }
    }

    /// The lines of the first length in `lengths` that has any line `judge` accepts (it
    /// scores a line from `from`, or rejects it with `None`), the best of them kept. `None`
    /// when no length has one, or when the budget ran out first.
    pub fn shortest<J: Fn(&[Move]) -> Result<Score, Rejection>>(
        &self,
        from: &Chess,
        lengths: core::ops::RangeInclusive<usize>,
        judge: &J,
    ) -> Option<Found> {
        if let Ends::At(target) = self.ends
            && (!has_two_kings(target)
                || self.touched.is_some_and(|t| !board_diff(from.board(), target).is_subset(t)))
        {
            return None;
        }
        let mut walk = Walk { search: self, judge, budget: self.budget, best: Best::default() };
        for depth in lengths.filter(|&d| d <= LONGEST) {
            if let Ends::At(target) = self.ends
                && !material_allows(from, target, depth as u8)
            {
                continue;
            }
            if !walk.lines(from, depth, &mut Line::new()) {
                return None;
            }
            if walk.best.line.is_some() {
                return core::mem::take(&mut walk.best).found();
            }
            walk.best = Best::default();
        }
        None
    }

    /// Every line of exactly `plies` plies (at least one) that `judge` accepts, the best
    /// kept, even when a shorter line reaches the board: what the clock presses say can
    /// need the longer one (a piece that went in two moves with a reply between reaches
    /// the board one move of it reaches too).
    pub fn of_length<J: Fn(&[Move]) -> Result<Score, Rejection>>(
        &self,
        from: &Chess,
        plies: usize,
        judge: &J,
    ) -> Option<Found> {
        if let Ends::At(target) = self.ends
            && board_diff(from.board(), target).is_empty()
        {
            return None;
        }
        if plies == 0 {
            return None;
        }
        self.shortest(from, plies..=plies, judge)
    }
}

/// One search under way.
/// The judge is called through a reference to `dyn Fn` (once per line found): one copy of
/// the walk serves every judge, which keeps a microcontroller's flash small.
struct Walk<'s, 'a> {
    search: &'s Search<'a>,
    judge: &'s dyn Fn(&[Move]) -> Result<Score, Rejection>,
    budget: u32,
    best: Best,
}

impl Walk<'_, '_> {
    /// Offers every line of exactly `depth` more plies from `pos` after `path`; false when
    /// the budget ran out.
    fn lines(&mut self, pos: &Chess, depth: usize, path: &mut Line) -> bool {
        if self.budget == 0 {
            return false;
        }
        self.budget -= 1;
        match self.search.ends {
            Ends::At(target) => {
                let diff = board_diff(pos.board(), target);
                if depth == 0 {
                    if diff.is_empty() {
                        self.offer(path);
                    }
                    return true;
                }
                if diff.count() > 4 * depth || !material_allows(pos, target, depth as u8) {
                    return true;
                }
                if depth == 1 {
                    // One ply is unique: the board shows the piece that moved and where.
                    if let Some(m) = one_ply(pos, target, diff)
                        && self.allowed(path, m).is_ok()
                        && path.push(m).is_ok()
                    {
                        self.offer(path);
                        path.pop();
                    }
                    return true;
                }
            }
            Ends::UnderReply(target) => {
                if depth == 0 {
                    let d = board_diff(pos.board(), target);
                    let next_mover = pos.board().by_color(pos.turn());
                    if d.any() && (d & target.occupied()).is_empty() && (d & !next_mover).is_empty() {
                        self.offer(path);
                    }
                    return true;
                }
            }
        }
        // The plies worth following, kept in a short list, so that the full move list
        // (about 1.5 KiB) is not on the stack of every ply of a deep catch-up search (on a
        // microcontroller, a 12-ply search would need 12 of them); the full list only
        // where more plies are worth following than the short list holds.
        match self.next_plies(pos, depth, path) {
            Next::Short(plies) => self.follow(pos, depth, path, &plies, None),
            Next::Followed(within) => within,
        }
    }

    /// The plies from `pos` worth following on a line of `depth` (at least one) more plies
    /// after `path`, in the order the move generator gives them, when at most
    /// [`NEXT_PLIES`]; more are followed here, over the full list.
    #[inline(never)]
    fn next_plies(&mut self, pos: &Chess, depth: usize, path: &mut Line) -> Next {
        let moves = pos.legal_moves();
        let apart = match self.search.ends {
            Ends::At(target) => board_diff(pos.board(), target).count(),
            Ends::UnderReply(_) => 0,
        };
        let mut worth = [0u64; 4];
        let mut count = 0;
        for (i, m) in moves.iter().enumerate() {
            if self.worth_following(pos, depth, path, *m, apart) {
                worth[i / 64] |= 1 << (i % 64);
                count += 1;
            }
        }
        if count <= NEXT_PLIES {
            let chosen = moves.iter().enumerate().filter(|(i, _)| worth[i / 64] & (1 << (i % 64)) != 0);
            return Next::Short(chosen.map(|(_, m)| *m).collect());
        }
        Next::Followed(self.follow(pos, depth, path, &moves, Some(&worth)))
    }

    /// Offers the lines of `depth` more plies through each of `plies` in turn (those
    /// marked in `only`, when given: a bit per ply); false when the budget ran out.
    fn follow(
        &mut self,
        pos: &Chess,
        depth: usize,
        path: &mut Line,
        plies: &[Move],
        only: Option<&[u64; 4]>,
    ) -> bool {
        for (i, &m) in plies.iter().enumerate() {
            if only.is_some_and(|w| w[i / 64] & (1 << (i % 64)) == 0) {
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

    /// True when a line through `m` can be one of `depth` (at least one) more plies after
    /// `path`: `m` is allowed, and (towards a board) it neither reaches the board before
    /// the last ply nor leaves it one square off with a ply to go.
    /// `apart` is how many squares `pos` differs from the board aimed at: a ply changes at
    /// most 4 (castling), so when no ply can bring that within the limits, none is looked at.
    fn worth_following(&self, pos: &Chess, depth: usize, path: &[Move], m: Move, apart: usize) -> bool {
        if self.allowed(path, m).is_err() {
            return false;
        }
        if let Ends::At(target) = self.search.ends {
            let sure = apart + 4 <= 4 * (depth - 1) && apart >= 5 + usize::from(depth == 2);
            if sure {
                return true;
            }
            let nd = board_diff(&placement_after(pos.board(), m, pos.turn()), target).count();
            if nd > 4 * (depth - 1) || nd == 0 || (depth == 2 && nd == 1) {
                return false;
            }
        }
        true
    }

    /// True when `m` may follow `path`: over the touched squares (else
    /// [`Rejection::Untraced`]), and not undoing the same side's previous ply (else
    /// [`Rejection::OutAndBack`]).
    fn allowed(&self, path: &[Move], m: Move) -> Result<(), Rejection> {
        if self.search.touched.is_some_and(|t| !touched(m).is_subset(t)) {
            return Err(Rejection::Untraced);
        }
        if undoes_own_last(path, m) && !self.search.stops.contains(m.from().unwrap_or(m.to())) {
            return Err(Rejection::OutAndBack);
        }
        Ok(())
    }

    fn offer(&mut self, path: &[Move]) {
        if let Ok(score) = (self.judge)(path) {
            self.best.offer(path, score);
        }
    }
}

/// The shortest sequence of at most `max_depth` legal plies from `pos` that leaves exactly
/// `target` on the board (empty when it already does).
/// The pieces' placement after `turn` plays `m` on `board`: what the search compares with
/// a reading, made without playing the move on a whole position (castling rights, en
/// passant square, counters), which is what the search would otherwise do twice per ply.
fn placement_after(board: &Board, m: Move, turn: Color) -> Board {
    let mut b = board.clone();
    match m {
        Move::Normal { role, from, to, promotion, .. } => {
            b.discard_piece_at(from);
            b.set_piece_at(to, promotion.unwrap_or(role).of(turn));
        }
        Move::EnPassant { from, to } => {
            b.discard_piece_at(from);
            b.discard_piece_at(Square::from_coords(to.file(), from.rank()));
            b.set_piece_at(to, turn.pawn());
        }
        Move::Castle { king, rook } => {
            let side = CastlingSide::from_queen_side(rook < king);
            b.discard_piece_at(king);
            b.discard_piece_at(rook);
            b.set_piece_at(side.king_to(turn), turn.king());
            b.set_piece_at(side.rook_to(turn), turn.rook());
        }
        Move::Put { role, to } => b.set_piece_at(to, role.of(turn)),
    }
    b
}

#[cfg(test)]
pub(crate) fn find_line(pos: &Chess, target: &Board, max_depth: u8) -> Option<Line> {
    Search::to(target).shortest(pos, 0..=usize::from(max_depth), &|_| Ok(Score::default())).map(|f| f.line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{Square, uci::UciMove};

    fn play(pos: &Chess, uci: &str) -> Chess {
        let m = UciMove::from_ascii(uci.as_bytes()).ok().and_then(|u| u.to_move(pos).ok());
        let Some(m) = m else { panic!("illegal {uci}") };
        let mut p = pos.clone();
        p.play_unchecked(m);
        p
    }

    #[test]
    fn the_placement_after_a_move_is_the_one_playing_it_leaves() {
        // Captures, promotions (with capture), en passant, both castlings, Chess960 castling.
        let fens = [
            "r3k2r/pPpp1ppp/8/3Pp3/8/8/P1PP1PPP/R3K2R w KQkq e6 0 1",
            "r3k2r/p1pp1ppp/8/8/3pP3/8/PpPP1PPP/R3K2R b KQkq e3 0 1",
            "1r2k1r1/8/8/8/8/8/8/1R2K1R1 w GBgb - 0 1",
        ];
        for fen in fens {
            let setup: shakmaty::fen::Fen = fen.parse().expect("fen");
            let mode = shakmaty::CastlingMode::detect(&setup.as_setup().clone());
            let pos: Chess = setup.into_position(mode).expect("legal");
            for m in pos.legal_moves() {
                let mut played = pos.clone();
                played.play_unchecked(m);
                assert_eq!(&placement_after(pos.board(), m, pos.turn()), played.board(), "{fen} {m:?}");
            }
        }
    }

    #[test]
    fn finds_three_plies_and_prefers_the_shortest() {
        let start = Chess::default();
        let after = play(&play(&play(&start, "e2e4"), "e7e5"), "g1f3");
        let line = find_line(&start, after.board(), 3).expect("found");
        assert_eq!(line.len(), 3);
        let same = find_line(&start, start.board(), 3).expect("found");
        assert!(same.is_empty());
    }

    #[test]
    fn a_piece_out_and_back_is_never_a_line() {
        // Only Black's knight moved: White "moved" Nf3 and Ng1 around it. No legal game
        // shows this board with White to move, so nothing may explain it.
        let start = Chess::default();
        let after = play(&play(&play(&start, "g1f3"), "g8f6"), "f3g1");
        assert!(find_line(&start, after.board(), 3).is_none());
        assert!(find_line(&start, after.board(), 4).is_none());
        // The same knight going on (not back) is a real line.
        let on = play(&play(&play(&start, "g1f3"), "g8f6"), "f3g5");
        assert_eq!(find_line(&start, on.board(), 3).map(|l| l.len()), Some(3));
    }

    #[test]
    fn a_capture_out_and_back_is_a_line() {
        // 1. e4 e5 2. Nf3 Nf6 3. Nxe5 d6 4. Nf3: the knight is home again, but the e5 pawn
        // is gone, so the board shows what the three plies did.
        let mut pos = Chess::default();
        for u in ["e2e4", "e7e5", "g1f3", "g8f6"] {
            pos = play(&pos, u);
        }
        let mut expected = Line::new();
        let mut after = pos.clone();
        for u in ["f3e5", "d7d6", "e5f3"] {
            let m = UciMove::from_ascii(u.as_bytes()).ok().and_then(|u| u.to_move(&after).ok());
            let Some(m) = m else { panic!("illegal {u}") };
            let _ = expected.push(m);
            after.play_unchecked(m);
        }
        assert_eq!(find_line(&pos, after.board(), 3), Some(expected));
    }

    #[test]
    fn castling_and_en_passant_in_one_ply() {
        let pos = play(&play(&play(&play(&Chess::default(), "e2e4"), "a7a6"), "e4e5"), "d7d5");
        let target = play(&pos, "e5d6");
        let d = board_diff(pos.board(), target.board());
        assert_eq!(d.count(), 3);
        assert!(matches!(one_ply(&pos, target.board(), d), Some(Move::EnPassant { .. })));
        let mut p = Chess::default();
        for u in ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"] {
            p = play(&p, u);
        }
        let castled = play(&p, "e1g1");
        let d = board_diff(p.board(), castled.board());
        let m = one_ply(&p, castled.board(), d);
        assert_eq!(m, Some(Move::Castle { king: Square::E1, rook: Square::H1 }));
    }

    #[test]
    fn nothing_explains_a_pawn_jumping_three_squares() {
        let start = Chess::default();
        let mut b = start.board().clone();
        b.discard_piece_at(Square::E2);
        b.set_piece_at(Square::E5, shakmaty::Piece { color: Color::White, role: Role::Pawn });
        assert!(find_line(&start, &b, 3).is_none());
    }

    fn play_all(pos: &Chess, ucis: &[&str]) -> Chess {
        let mut p = pos.clone();
        for u in ucis {
            p = play(&p, u);
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
        touched |= Bitboard::from_square(Square::B5);
        let search = Search::to(end.board()).over(touched, BUDGET);
        let found = search.shortest(&start, 1..=LONGEST, &|_| Ok(Score::default())).expect("found");
        // The board alone does not say in which order each side made its moves.
        assert_eq!(found.line.len(), line.len());
        assert!(found.tied);
        // The order the board reported them in does.
        let mut played = Line::new();
        let mut p = start.clone();
        for u in line {
            let m = UciMove::from_ascii(u.as_bytes()).ok().and_then(|u| u.to_move(&p).ok()).expect("legal");
            p.play_unchecked(m);
            played.push(m).expect("room");
        }
        let order = |path: &[Move]| {
            Ok(Score {
                order: path.iter().zip(&played).filter(|(a, b)| a == b).count() as u8,
                ..Score::default()
            })
        };
        let found = search.shortest(&start, 10..=10, &order).expect("found");
        assert!(!found.tied);
        assert_eq!(found.line, played);
    }

    #[test]
    fn a_square_nothing_reported_is_never_moved_through() {
        let start = Chess::default();
        let end = play_all(&start, &["e2e4", "e7e5", "f1b5", "a7a6", "b5a4"]);
        // Without b5, the bishop cannot have got to a4 in the two moves the line has.
        let touched = board_diff(start.board(), end.board());
        let search = Search::to(end.board()).over(touched, BUDGET);
        assert!(search.shortest(&start, 5..=5, &|_| Ok(Score::default())).is_none());
    }
}
