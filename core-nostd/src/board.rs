//! The physical board: what the e-board last reported, square by square.

use dgt_protocol::{BoardDump, DgtSquare, Orientation, PieceCode};
use shakmaty::{Bitboard, Board, Role, Square};

/// Field updates kept, the last read: the reports since the last confirmed ply seldom
/// number more (a ply is two to four).
const REPORTS_KEPT: usize = 64;

/// Pieces a dump showed set down, the last kept: a dump that corrects a square is rare
/// (a report lost or late), and the few since the last confirmed ply are what counts.
const SHOWN_KEPT: usize = 8;

/// The board model built from dumps and field updates.
#[derive(Clone, Debug)]
pub(crate) struct PhysBoard {
    /// Piece codes by board index (masked to the low nibble).
    raw: [u8; 64],
    /// The chess pieces, in game coordinates for `orientation`.
    pub board: Board,
    /// Squares holding a magic piece, in game coordinates.
    pub magic: Bitboard,
    /// How board indices map to game squares.
    pub orientation: Orientation,
    /// A dump has been received since start (field updates alone prove nothing).
    pub known: bool,
    /// When each square (by board index) last changed: the order in which the hands did
    /// things, for telling apart move orders that reach the same board.
    changed_ms: [u64; 64],
    /// The last piece code a square was reported receiving, and when: a piece set down and
    /// lifted again between readings leaves no other trace of where it went. The empty code
    /// with a time is a landing whose report was lost: the square was reported emptied
    /// while the board already showed it empty, so something stood there.
    /// (Two arrays, not one of pairs: a pair pads to 16 bytes, and a relay box's heap is
    /// small.)
    placed_codes: [u8; 64],
    placed_ms: [u64; 64],
    /// The last field updates read, a ring: each one's stream number (0: none), board index
    /// and piece code, `next_report` the oldest. How many changes the board reported on a
    /// square since a moment weighs lines by the reports they need lost (see
    /// [`Self::reports_since`]); every piece reported set down since a moment, not only the
    /// last on each square, is a ply's trace (see [`Self::placements_since`]).
    report_seqs: [u32; REPORTS_KEPT],
    report_squares: [u8; REPORTS_KEPT],
    report_codes: [u8; REPORTS_KEPT],
    next_report: usize,
    /// The last pieces a dump showed set down on a square the reports had left otherwise,
    /// a ring: each one's board index, piece code and time, `next_shown` the oldest. A
    /// piece the board shows no longer there stood there in passing (see
    /// [`Self::shown_in_passing`]), as one reported set down and lifted did.
    shown_squares: [u8; SHOWN_KEPT],
    shown_codes: [u8; SHOWN_KEPT],
    shown_ms: [u64; SHOWN_KEPT],
    next_shown: usize,
    /// Clock presses seen so far, and how many each square had seen when it last changed:
    /// reports read in one piece (a relay that was busy) all carry one time, but a press
    /// between two of them still says which came first.
    presses: u32,
    changed_presses: [u32; 64],
    /// Board indices whose last change only a dump showed (no report says when it came).
    dumped: u64,
    /// Of those, the ones whose report may still come late (a board's scan lags its
    /// dumps): until the report comes, or the line has moved on twice since (the report
    /// of a change a dump showed can follow the confirmation of the ply it belonged to, as
    /// the scan that reports it lags the press that asked for the dump).
    report_due: u64,
    /// Those the line has moved on once since.
    report_due_before: u64,
    /// Board indices as the first dump showed them, unchanged since, until the line moves
    /// on or a clock is pressed (see [`Self::load`]).
    first_look: u64,
}

impl PhysBoard {
    pub const fn new() -> PhysBoard {
        PhysBoard {
            raw: [0; 64],
            board: Board::empty(),
            magic: Bitboard(0),
            orientation: Orientation::Normal,
            known: false,
            changed_ms: [0; 64],
            placed_codes: [0; 64],
            placed_ms: [0; 64],
            report_seqs: [0; REPORTS_KEPT],
            report_squares: [0; REPORTS_KEPT],
            report_codes: [0; REPORTS_KEPT],
            next_report: 0,
            shown_squares: [0; SHOWN_KEPT],
            shown_codes: [0; SHOWN_KEPT],
            shown_ms: [0; SHOWN_KEPT],
            next_shown: 0,
            presses: 0,
            changed_presses: [0; 64],
            dumped: 0,
            report_due: 0,
            report_due_before: 0,
            first_look: 0,
        }
    }

    /// A ply was confirmed: reports of changes made before the first look have come.
    pub fn line_moved_on(&mut self) {
        self.first_look = 0;
        self.report_due_before = self.report_due;
        self.report_due = 0;
    }

    /// Applies one square at `now`; returns true when it changed anything.
    pub fn set(&mut self, index: DgtSquare, code: PieceCode, now: u64) -> bool {
        self.set_from(index, code, now, false)
    }

    /// [`Self::set`], noting whether a dump showed the change (`dumped`) or a report did.
    fn set_from(&mut self, index: DgtSquare, code: PieceCode, now: u64, dumped: bool) -> bool {
        let i = usize::from(index.index());
        if self.raw[i] == code.code() {
            // A square reported emptied that a report had left empty: a piece was set down
            // there and its report lost, a landing a line must explain. Its time is not
            // taken as the square's change (a chain's log can report a square a piece slid
            // over). After a dump showed the square emptied, the first such report soon
            // after is that change's, come late (a board's scan lags its dumps); one plies
            // later is a landing of its own (see `report_due`).
            let due = self.report_due | self.report_due_before;
            if !dumped && code.code() == 0 && (due | self.first_look) & (1 << i) == 0 {
                self.set_placed(i, 0, now);
            }
            if !dumped {
                self.report_due &= !(1 << i);
                self.report_due_before &= !(1 << i);
            }
            return false;
        }
        self.raw[i] = code.code();
        self.first_look &= !(1 << i);
        self.changed_ms[i] = now;
        self.changed_presses[i] = self.presses;
        if dumped {
            self.dumped |= 1 << i;
            self.report_due |= 1 << i;
            if code.piece().is_some() {
                self.note_shown(i, code.code(), now);
            }
        } else {
            self.dumped &= !(1 << i);
            self.report_due &= !(1 << i);
            self.report_due_before &= !(1 << i);
        }
        if code.piece().is_some() {
            self.set_placed(i, code.code(), now);
        }
        let sq = index.to_square(self.orientation);
        self.put(sq, code);
        true
    }

    fn put(&mut self, sq: Square, code: PieceCode) {
        self.board.discard_piece_at(sq);
        self.magic.discard(sq);
        if let Some(p) = code.piece() {
            self.board.set_piece_at(sq, p);
        } else if code.is_magic() {
            self.magic.add(sq);
        }
    }

    /// Counts a field update on `index`, the `seq`th message of the stream, whether it
    /// changed the square or not (a square reported emptied while it stood empty was set
    /// down on and lifted: one change reported of two).
    pub fn note_report(&mut self, index: DgtSquare, code: PieceCode, seq: u32) {
        self.report_seqs[self.next_report] = seq;
        self.report_squares[self.next_report] = index.index();
        self.report_codes[self.next_report] = code.code();
        self.next_report = (self.next_report + 1) % REPORTS_KEPT;
    }

    /// Notes a piece a dump showed set down on board index `i` at `now`.
    fn note_shown(&mut self, i: usize, code: u8, now: u64) {
        self.shown_squares[self.next_shown] = u8::try_from(i).unwrap_or(u8::MAX);
        self.shown_codes[self.next_shown] = code;
        self.shown_ms[self.next_shown] = now;
        self.next_shown = (self.next_shown + 1) % SHOWN_KEPT;
    }

    /// The game squares a dump read at `since` or later showed a piece set down on that
    /// the board no longer shows there: the piece stood there in passing, its landing's
    /// report lost (a knight's landing on d5 lost, a dump showing it there, then the knight
    /// going back and the king coming to d5).
    pub fn shown_in_passing(&self, since: u64) -> Bitboard {
        let mut squares = Bitboard::EMPTY;
        for k in 0..SHOWN_KEPT {
            if self.shown_ms[k] >= since.max(1)
                && let Some(sq) = DgtSquare::new(self.shown_squares[k])
                && self.raw[usize::from(sq.index())] != self.shown_codes[k]
            {
                squares.add(sq.to_square(self.orientation));
            }
        }
        squares
    }

    /// Every piece the board reported set down on a game square after the `seq`th message,
    /// with the square; `None` when more reports came since than are kept. A square
    /// reported twice (a pawn taking on d5, then a pawn retaking there) holds two traces,
    /// where [`Self::placed_after`] keeps the last.
    pub fn placements_since(&self, seq: u32) -> Option<impl Iterator<Item = (Square, shakmaty::Piece)> + '_> {
        let oldest = self.report_seqs[self.next_report];
        if oldest != 0 && oldest > seq.saturating_add(1) {
            return None;
        }
        // Newest first, back to the first report at or before `seq`: the few since a ply.
        let newest_first =
            (1..=REPORTS_KEPT).map(move |back| (self.next_report + REPORTS_KEPT - back) % REPORTS_KEPT);
        Some(newest_first.take_while(move |&k| self.report_seqs[k] > seq).filter_map(|k| {
            let piece = PieceCode::from_nibble(self.report_codes[k]).piece()?;
            Some((DgtSquare::new(self.report_squares[k])?.to_square(self.orientation), piece))
        }))
    }

    /// How many changes the board reported on a game square after the `seq`th message;
    /// `None` when more reports came since than are kept.
    pub fn reports_since(&self, sq: Square, seq: u32) -> Option<usize> {
        let oldest = self.report_seqs[self.next_report];
        // The ring dropped only reports older than the oldest it keeps.
        if oldest == 0 || oldest <= seq.saturating_add(1) {
            let index = u8::try_from(self.index(sq)).unwrap_or(u8::MAX);
            let on_square = self.report_seqs.iter().zip(&self.report_squares);
            return Some(on_square.filter(|&(&s, &i)| s > seq && i == index).count());
        }
        None
    }

    /// Replaces everything with a dump read at `now`; returns true when it changed anything.
    /// (What a dump changes changed at one moment as far as anyone can tell.)
    pub fn load(&mut self, dump: &BoardDump, now: u64) -> bool {
        let first = !self.known;
        self.known = true;
        let mut changed = false;
        for sq in DgtSquare::ALL {
            changed |= self.set_from(sq, dump.piece(sq), now, true);
        }
        if first {
            // Every square of a first look is as the dump showed it: until the line moves
            // on or a clock is pressed, a report that comes after it with the same content
            // is of a change made before it (a board turned round, a restart), not a
            // landing lost.
            self.first_look = u64::MAX;
        }
        changed
    }

    /// The game squares a dump shows otherwise than this board.
    pub fn differing(&self, dump: &BoardDump) -> Bitboard {
        self.squares_where(|i| self.raw[i] != dump.piece(DgtSquare::ALL[i]).code())
    }

    /// When a game square last changed.
    pub fn changed_ms(&self, sq: Square) -> u64 {
        self.changed_ms[self.index(sq)]
    }

    /// The board index of a game square.
    fn index(&self, sq: Square) -> usize {
        usize::from(DgtSquare::from_square(sq, self.orientation).index())
    }

    /// Counts a clock press, in the order it came among the board's reports.
    pub fn note_press(&mut self) {
        self.first_look = 0;
        self.presses = self.presses.wrapping_add(1);
    }

    /// Clock presses counted so far.
    pub fn presses(&self) -> u32 {
        self.presses
    }

    /// A game square's last change: when, after how many clock presses, and whether only
    /// a dump showed it.
    pub fn last_change(&self, sq: Square) -> Change {
        let i = self.index(sq);
        Change {
            ms: self.changed_ms[i],
            presses: self.changed_presses[i],
            dumped: self.dumped & (1 << i) != 0,
        }
    }

    /// The piece the board last reported set down on a game square, when that was at
    /// `since` or later (it may have been lifted again since).
    pub fn placed_after(&self, sq: Square, since: u64) -> Option<shakmaty::Piece> {
        let (code, at) = self.placed(self.index(sq));
        if at < since {
            return None;
        }
        PieceCode::from_nibble(code).piece()
    }

    /// The game squares the board reported emptied, at `since` or later, while it showed
    /// them empty already: each had a piece set down on it whose report was lost.
    pub fn lost_landings_after(&self, since: u64) -> Bitboard {
        self.squares_where(|i| self.lost_landing_after(i, since).is_some())
    }

    /// When the board reported each landing whose report was lost (see
    /// [`Self::lost_landings_after`]), at `since` or later.
    pub fn lost_landing_times_after(&self, since: u64) -> impl Iterator<Item = u64> + '_ {
        (0..64).filter_map(move |i| self.lost_landing_after(i, since))
    }

    /// When board index `i` was reported emptied while it stood empty, if that was at
    /// `since` or later.
    fn lost_landing_after(&self, i: usize, since: u64) -> Option<u64> {
        match self.placed(i) {
            (0, at) if at > 0 && at >= since => Some(at),
            _ => None,
        }
    }

    /// A confirmed ply set a piece down on or slid one through `squares`, and the board
    /// showed it at `seen_ms`: the landings lost on them reported by then were its (a rook
    /// slid e1-e3 over e2, the scan reporting e2 emptied after e3), not traces a line after
    /// it must explain.
    pub fn landings_explained(&mut self, squares: Bitboard, seen_ms: u64) {
        for sq in squares {
            let i = self.index(sq);
            if matches!(self.placed(i), (0, at) if at <= seen_ms) {
                self.set_placed(i, 0, 0);
            }
        }
    }

    /// True when the report just read at `now` on `index` was a lost landing (see
    /// [`Self::lost_landings_after`]): one square's check instead of the board's.
    pub fn landing_lost_at(&self, index: DgtSquare, now: u64) -> bool {
        self.placed(usize::from(index.index())) == (0, now) && now > 0
    }

    /// The game squares whose last change came at `since` or later.
    pub fn changed_since(&self, since: u64) -> Bitboard {
        self.squares_where(|i| self.changed_ms[i] >= since)
    }

    /// The game squares the board reported a piece set down on at `since` or later.
    pub fn placed_since(&self, since: u64) -> Bitboard {
        self.squares_where(|i| matches!(self.placed(i), (code, at) if code != 0 && at >= since))
    }

    /// The last piece code a board index was reported receiving, and when.
    fn placed(&self, i: usize) -> (u8, u64) {
        (self.placed_codes[i], self.placed_ms[i])
    }

    fn set_placed(&mut self, i: usize, code: u8, at: u64) {
        self.placed_codes[i] = code;
        self.placed_ms[i] = at;
    }

    /// The game squares whose board index `holds`.
    fn squares_where(&self, holds: impl Fn(usize) -> bool) -> Bitboard {
        let mut squares = Bitboard::EMPTY;
        for sq in DgtSquare::ALL {
            if holds(usize::from(sq.index())) {
                squares.add(sq.to_square(self.orientation));
            }
        }
        squares
    }

    /// Re-reads the raw codes for another orientation.
    pub fn set_orientation(&mut self, orientation: Orientation) {
        if orientation == self.orientation {
            return;
        }
        self.orientation = orientation;
        self.board = Board::empty();
        self.magic = Bitboard(0);
        for sq in DgtSquare::ALL {
            let code = PieceCode::from_nibble(self.raw[usize::from(sq.index())]);
            self.put(sq.to_square(orientation), code);
        }
    }

    /// The code of the magic piece on a square, if any.
    pub fn magic_code(&self, sq: Square) -> Option<PieceCode> {
        let code = PieceCode::from_nibble(self.raw[self.index(sq)]);
        code.is_magic().then_some(code)
    }

    /// The current board as a dump (board indices), for callers and tests.
    pub fn dump(&self) -> BoardDump {
        BoardDump { raw: self.raw }
    }
}

/// A square's last change as the board showed it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Change {
    /// When it was read.
    pub ms: u64,
    /// Clock presses read before it.
    pub presses: u32,
    /// Only a dump showed it: it came at some time before the dump was read, not then.
    pub dumped: bool,
}

impl Change {
    /// True when this change came before `later` for sure: `later` was reported (a dump
    /// says only that a change came before it), and a scan after this one or with a press
    /// between them (reports read in one piece by a busy relay all carry one time).
    pub fn before(self, later: Change, same_scan_ms: u64) -> bool {
        !later.dumped && (self.ms.saturating_add(same_scan_ms) <= later.ms || self.presses < later.presses)
    }
}

/// A 32-bit fingerprint of a placement, for finding earlier positions quickly.
pub(crate) fn placement_hash(board: &Board) -> u32 {
    let mut h: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut mix = |v: u64| {
        h ^= v;
        h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        h ^= h >> 31;
    };
    mix(board.white().0);
    for role in Role::ALL {
        mix(board.by_role(role).0);
    }
    (h >> 32) as u32
}

/// The standard start position seen the other way round, in game coordinates.
pub(crate) fn rotated(board: &Board) -> Board {
    let mut b = board.clone();
    b.rotate_180();
    b
}

/// The four centre squares.
pub(crate) const CENTRE: Bitboard = Bitboard::CENTER;

/// The kings-in-centre convention: both kings (exactly one each) on d4, d5, e4 or e5.
pub(crate) fn kings_in_centre(board: &Board) -> Option<crate::GameResult> {
    let wk = board.kings() & board.white();
    let bk = board.kings() & board.black();
    let (Some(w), Some(b)) = (wk.single_square(), bk.single_square()) else { return None };
    if !CENTRE.contains(w) || !CENTRE.contains(b) {
        return None;
    }
    Some(match (w.is_light(), b.is_light()) {
        (true, true) => crate::GameResult::WhiteWins,
        (false, false) => crate::GameResult::BlackWins,
        _ => crate::GameResult::Draw,
    })
}

/// The result a magic piece signals.
pub(crate) fn magic_result(code: PieceCode) -> Option<crate::GameResult> {
    match code {
        PieceCode::MagicDraw => Some(crate::GameResult::Draw),
        PieceCode::MagicWhiteWins => Some(crate::GameResult::WhiteWins),
        PieceCode::MagicBlackWins => Some(crate::GameResult::BlackWins),
        _ => None,
    }
}

/// Which Chess960 start position (Scharnagl number) a board shows, if any.
pub(crate) fn chess960_number(board: &Board) -> Option<u16> {
    let pawns_ok = board.pawns() & board.white() == Bitboard::from_rank(shakmaty::Rank::Second)
        && board.pawns() & board.black() == Bitboard::from_rank(shakmaty::Rank::Seventh)
        && board.occupied().count() == 32;
    if !pawns_ok {
        return None;
    }
    (0..960u16).find(|&n| Board::chess960(u32::from(n)) == *board)
}
