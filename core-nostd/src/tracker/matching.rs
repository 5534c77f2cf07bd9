//! Matching the physical board against the line: one-ply fast path, deep search,
//! takebacks, and the squares reported when nothing explains the board.

use dgt_protocol::BoardDump;
use shakmaty::{Bitboard, Board, Color, Position, Role, attacks};

use super::explain::traces;
use super::{GameState, MAX_PROVISIONAL, PENDING_PRESSES, Tracker, remember};
use crate::board::{Change, placement_hash};
use crate::event::{Event, EventSink};
use crate::search::{self, Score, Search, board_diff, has_two_kings, one_ply};

/// How a board differs from the tip when a move is under way (see `move_under_way`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum UnderWay {
    /// Only pieces lifted: a hand holds them (or a capture and a recapture on one square
    /// were read in one scan, which also leaves the tip less two pieces).
    Lifted,
    /// The mover's piece is down on a square other than its own, perhaps one it cannot
    /// stop on: on its way.
    OnItsWay,
}

/// How the tracker would explain a board reading, asked before feeding it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// No game is being followed: there is nothing to explain.
    NoGame,
    /// The board shows the line's last position.
    AtTip,
    /// One line of legal plies explains it; the shortest, when longer ones do too.
    Explained {
        /// Plies from the line's last position (some provisional ones may be replaced).
        plies: u8,
    },
    /// Several move orders explain it equally well (a transposition read in one go, as after
    /// the board was away): the tracker would have to guess which was played.
    Ambiguous,
    /// Nothing within the search explains it: more plies than it searches, a takeback,
    /// hands on the board.
    Unexplained,
}

impl<const PLIES: usize> Tracker<PLIES> {
    /// How `dump` would be explained from the line as it stands, without acting on it. A
    /// caller that can learn more about how the board got there (the board's event log,
    /// after an outage) asks before feeding a reading that is not simply explained.
    pub fn explain(&self, dump: &BoardDump) -> Reading {
        if self.state != GameState::Active {
            return Reading::NoGame;
        }
        let mut phys = self.phys.clone();
        // Later than every change so far, all at once: a dump shows no order.
        phys.load(dump, u64::MAX);
        let target = &phys.board;
        let d = board_diff(self.tip.board(), target);
        if phys.magic.any() || !has_two_kings(target) {
            return Reading::Unexplained;
        }
        if d.is_empty() {
            return Reading::AtTip;
        }
        if one_ply(&self.tip, target, d).is_some() {
            return Reading::Explained { plies: 1 };
        }
        let keep = if self.move_under_way(target).is_some() {
            self.records.len() - self.confirmed
        } else {
            self.pressed_plies()
        };
        match self.keeping_stood(target, keep) {
            Some(c) if !c.tied => {
                let prov = self.records.len() - self.confirmed;
                Reading::Explained { plies: (prov - c.keep + c.line.len()) as u8 }
            }
            Some(_) => Reading::Ambiguous,
            None => Reading::Unexplained,
        }
    }

    pub(super) fn on_match<S: EventSink + ?Sized>(&mut self, sink: &mut S) {
        self.dirty = false;
        self.back_from_outage = false;
        self.at_tip = true;
        remember(&mut self.seen_boards, placement_hash(self.tip.board()));
        self.unexplained_since = None;
        if self.mismatch.take().is_some() {
            sink.event(Event::PositionRecovered);
        }
    }

    /// One-ply explanations from the tip and from each provisional base. A board showing an
    /// earlier base exactly gives up the plies after it only when `may_retract`: not on a
    /// board read halfway through a scan, which can show an earlier position on its way to
    /// a later one (two plies read in one scan that bring back a piece: the first half of
    /// the scan shows the line before the last ply). A ply from an earlier base, as when a
    /// slide goes on past the square read first, is followed at once. Neither reaches back
    /// past plies that stood (the board was still at them longer than a sliding hand rests):
    /// the board showing the position before them is a takeback or a repetition, and a ply
    /// from there is no slide going on, but may be the first half of a scan that read a
    /// reply and the next move together (Ke6-e7 stood, then Kd5 and Ke7-d7 between two
    /// scans, reported d7 and e7 before d5 and e4: halfway, the board shows Ke6-d7). The
    /// settle-time search decides on the whole reading (see `keeping_stood`).
    pub(super) fn fast_eval<S: EventSink + ?Sized>(&mut self, now: u64, may_retract: bool, sink: &mut S) {
        if self.phys.magic.any() {
            return;
        }
        let target = self.phys.board.clone();
        let d = board_diff(self.tip.board(), &target);
        if d.is_empty() {
            self.on_match(sink);
            return;
        }
        if let Some(m) = one_ply(&self.tip, &target, d) {
            if may_retract && self.reorder_hidden(&target, now, sink) {
                return;
            }
            self.extend_shown(&[m], now, now, false, sink);
            self.on_match(sink);
            return;
        }
        let prov = self.records.len() - self.confirmed;
        for k in (self.stood_plies().max(self.answered_plies())..prov).rev() {
            let Some(pos) = self.position_at(self.confirmed + k) else { return };
            let d = board_diff(pos.board(), &target);
            if d.is_empty() && !may_retract {
                return;
            }
            let found = if d.is_empty() { Some(None) } else { one_ply(&pos, &target, d).map(Some) };
            if let Some(m) = found {
                self.retract_to(self.confirmed + k, sink);
                if let Some(m) = m {
                    self.extend_shown(&[m], now, now, false, sink);
                }
                self.on_match(sink);
                return;
            }
        }
    }

    /// [`Self::extend`], noting that the board began showing the new plies at `shown`, and
    /// whether they are `hidden`: one of several move orders to the board.
    pub(super) fn extend_shown<S: EventSink + ?Sized>(
        &mut self,
        moves: &[shakmaty::Move],
        now: u64,
        shown: u64,
        hidden: bool,
        sink: &mut S,
    ) {
        let from = self.records.len();
        self.extend(moves, now, sink);
        for i in from.max(self.confirmed)..self.records.len() {
            let meta = &mut self.meta[i - self.confirmed];
            meta.shown.ms = shown;
            meta.hidden = hidden;
        }
    }

    /// Dates the plies a search took from record `from` on by the board's reports: a ply
    /// began no earlier than the last report of every square it changed (a square it left
    /// or landed on that a later ply of the line changed again counts that later report,
    /// so the earliest of them is taken). A reading read in one piece (a relay that was
    /// busy, the board's reports bunched) dates them all alike, as before; reports a scan
    /// apart tell a ply made after a press from one made before it.
    pub(super) fn date_found_plies(&mut self, from: usize, now: u64) {
        for i in from.max(self.confirmed)..self.records.len() {
            let Some(before) = self.position_at(i) else { return };
            let Some(m) = self.records[i].to_move(&before) else { return };
            let mut after = before.clone();
            after.play_unchecked(m);
            let began = board_diff(before.board(), after.board())
                .into_iter()
                .map(|sq| self.phys.changed_ms(sq))
                .min()
                .unwrap_or(0);
            let shown = &mut self.meta[i - self.confirmed].shown.ms;
            *shown = (*shown).max(began).min(now);
        }
    }

    /// The first provisional ply (its index in the record list) of a line taken when
    /// another line of as many plies, through as many positions the board was seen
    /// showing, reached the same board: the board never showed which order was played
    /// (Nf3 Nc6 d3 and d3 Nc6 Nf3 read in one scan). Such plies are not confirmed, by a
    /// press or by time (see `line_verified`), nor kept because they stood or a press was
    /// bound to them: a later reading may tell the orders apart (an en passant capture,
    /// castling rights), and the search from before them takes the line it explains.
    pub(super) fn first_hidden(&self) -> Option<usize> {
        (self.confirmed..self.records.len()).find(|&i| self.meta[i - self.confirmed].hidden)
    }

    /// The board moved on from a line with plies of an unknown order (see `first_hidden`):
    /// when one line alone from before them explains it now, that line is taken and its
    /// order is known. Returns true when it was.
    fn reorder_hidden<S: EventSink + ?Sized>(&mut self, target: &Board, now: u64, sink: &mut S) -> bool {
        let Some(h) = self.first_hidden() else { return false };
        // Searched from before them only: a line keeping them would keep an order the
        // board never showed.
        let Some(pos) = self.position_at(h) else { return false };
        let judge = |path: &[shakmaty::Move]| Ok(self.seen_and_order(&pos, path, &|b| self.seen_board(b)));
        let hidden = self.records.len() - h;
        let depth = (hidden + usize::from(self.config.search_depth.max(1))).min(search::MAX_DEPTH);
        let Some(found) = Search::to(target).shortest(&pos, 0..=depth, &judge) else { return false };
        if found.tied {
            return false;
        }
        let path = found.line;
        let shown = self.shown_at(h);
        self.retract_to(h, sink);
        self.extend_shown(&path, now, shown.min(now), false, sink);
        self.on_match(sink);
        true
    }

    /// Tells the operator which ply to check when the move order is unknown (once for
    /// that ply).
    pub(super) fn alert_hidden_order<S: EventSink + ?Sized>(&mut self, sink: &mut S) {
        let Some(h) = self.first_hidden() else { return };
        let ply = (h + 1) as u16;
        if self.order_alerted != Some(ply) {
            self.order_alerted = Some(ply);
            sink.event(Event::MoveOrderUnknown { ply });
        }
    }

    /// How many provisional plies come before the first one of an unknown order (all when
    /// none is).
    pub(super) fn plies_before_hidden(&self) -> usize {
        self.first_hidden().map_or(self.records.len(), |h| h) - self.confirmed
    }

    /// When the board began showing provisional ply `i` (its index in the record list):
    /// when the line took it, or, for plies a search found in a reading the fast path could
    /// not follow, when the board left the line's previous tip (the search may run only
    /// once the board has settled, well after the hands made the plies).
    pub(super) fn shown_at(&self, i: usize) -> u64 {
        self.meta.get(i - self.confirmed).map_or(0, |m| m.shown.ms)
    }

    /// How `target` shows the tip with a move under way, if it does: only pieces lifted (a
    /// capture's victim, pieces in a hand), or a sliding piece of the side to move put down
    /// on its own line from its square and not yet where it goes: paused in a slide on a
    /// square where it cannot stop (a queen slid through a square where it would leave its
    /// king in check), or short of a victim already taken off (a rook passing the square
    /// before the one whose piece it takes); or the king of the side to move set down where
    /// castling puts it, its rook not moved yet (castling king first). Every ply of the line
    /// is still on the board; a line from an earlier base would give up plies the board
    /// shows, for plies nobody saw. Pieces lifted after one ply from the tip count too (see
    /// `lifted_after_one_ply`).
    pub(super) fn move_under_way(&self, target: &Board) -> Option<UnderWay> {
        let tip = self.tip.board();
        let d = board_diff(tip, target);
        if d.is_empty() {
            return None;
        }
        let placed = d & target.occupied();
        if placed.is_empty() {
            return Some(UnderWay::Lifted);
        }
        if self.on_its_way(target, d, placed) {
            return Some(UnderWay::OnItsWay);
        }
        self.lifted_after_one_ply(target).then_some(UnderWay::Lifted)
    }

    /// True when `target` is one legal ply from the tip less some pieces: the reply's hands
    /// at work on a ply the board never showed whole (its landing report lost, and the dump
    /// asked for it taken once the opponent had lifted a piece). Multi-ply lines from there
    /// reach such a board only by pieces going out and back with captures (c6xb7 Bc8xb7
    /// Re1xd1 Bb7-c8 for Re1xd1 with c6 and b7 lifted for b7xc6); taken at the mismatch time,
    /// a press confirmed their first ply.
    fn lifted_after_one_ply(&self, target: &Board) -> bool {
        self.tip.legal_moves().iter().any(|&m| {
            let mut after = self.tip.clone();
            after.play_unchecked(m);
            let d = board_diff(after.board(), target);
            d.any() && (d & target.occupied()).is_empty()
        })
    }

    /// The sliding piece or the castling king of the side to move on its way (see
    /// `move_under_way`); `d` and `placed` are the squares `target` differs from the tip
    /// on, and those of them it has a piece on.
    fn on_its_way(&self, target: &Board, d: Bitboard, placed: Bitboard) -> bool {
        let tip = self.tip.board();
        let Some(to) = placed.single_square() else { return false };
        let mover = self.tip.turn();
        let lifted = d & !target.occupied();
        let (Some(from), Some(piece)) = ((lifted & tip.by_color(mover)).single_square(), target.piece_at(to))
        else {
            return false;
        };
        if piece.role == Role::King {
            // Castling king first: the king set down where the castle puts it, its rook not
            // moved yet (a board read then, its hand on the rook, is no line's end).
            return piece.color == mover && self.castles_to(from, to);
        }
        let victims = lifted & tip.by_color(!mover);
        piece.color == mover
            && tip.piece_at(from) == Some(piece)
            && matches!(piece.role, Role::Queen | Role::Rook | Role::Bishop)
            && tip.piece_at(to).is_none()
            && attacks::attacks(from, piece, Bitboard::EMPTY).contains(to)
            && attacks::between(from, to).is_disjoint(tip.occupied())
            && victims.into_iter().all(|v| attacks::between(from, v).contains(to))
    }

    /// True when the side to move may castle with its king from `from` to `to`.
    fn castles_to(&self, from: shakmaty::Square, to: shakmaty::Square) -> bool {
        shakmaty::CastlingSide::ALL.into_iter().any(|side| {
            self.tip.castling_moves(side).iter().any(|&m| m.from() == Some(from) && landing(m) == to)
        })
    }

    /// The score of `line` from `from` by what the board showed: the positions on the way
    /// (not its end, which is the board) that `seen` says the board showed, and the pairs
    /// of its plies the board reported in their order.
    pub(super) fn seen_and_order(
        &self,
        from: &shakmaty::Chess,
        line: &[shakmaty::Move],
        seen: &impl Fn(&Board) -> bool,
    ) -> Score {
        let mut pos = from.clone();
        let mut shown = 0u8;
        for &m in line.iter().take(line.len().saturating_sub(1)) {
            pos.play_unchecked(m);
            shown += u8::from(seen(pos.board()));
        }
        let first = ply_number(from).saturating_sub(ply_number(&self.confirmed_pos));
        Score {
            seen: shown,
            order: self.plies_in_reported_order(line, first),
            fewer_lost: u8::MAX.saturating_sub(self.reports_lost(&self.kept_plies(first), line)),
            ..Score::default()
        }
    }

    /// How many changes the plies `kept` then `line` (from the last confirmed ply) make
    /// that the board did not report since it showed that ply: on each square, the changes
    /// the line makes there (a lift, a landing; a capture is two, the piece taken off and
    /// the capturer set down) less the reports that came. Lines reaching the same board
    /// differ by what happened on the way: f7-f6 then e5xf6 needs f6's landing lost (its
    /// lift reported), f7-f5 then e5xf6 en passant needs f5's landing and lift lost.
    pub(super) fn reports_lost(&self, kept: &[shakmaty::Move], line: &[shakmaty::Move]) -> u8 {
        let mut changes = [0u8; 64];
        for &m in kept.iter().chain(line) {
            for sq in search::touched(m) {
                changes[usize::from(sq)] = changes[usize::from(sq)].saturating_add(1);
            }
            // A capture on the landing square: the piece taken off, then the capturer set
            // down (en passant takes from a square of its own, which `touched` holds).
            if let shakmaty::Move::Normal { to, capture: Some(_), .. } = m {
                changes[usize::from(to)] = changes[usize::from(to)].saturating_add(1);
            }
        }
        let since = self.last_confirmed_seen.seq;
        let mut lost = 0u8;
        for sq in shakmaty::Square::ALL {
            let made = usize::from(changes[usize::from(sq)]);
            if made > 0 {
                // More reports than kept since: no line is told apart by them.
                let Some(reported) = self.phys.reports_since(sq, since) else { return 0 };
                let unreported = made.saturating_sub(reported);
                lost = lost.saturating_add(u8::try_from(unreported).unwrap_or(u8::MAX));
            }
        }
        lost
    }

    /// True when the line matched `board` earlier (a position the game went through).
    pub(super) fn seen_board(&self, board: &Board) -> bool {
        self.seen_boards.contains(&placement_hash(board))
    }

    /// How many pairs of plies of `path` the board showed in their order: a change of the
    /// earlier (its landing, while a piece of its kind stands there, or its lift, while the
    /// square it left is empty, each unless a later ply of the path changed that square
    /// again) came before a reported change of the later, a scan apart or with a press
    /// between (see [`Change::before`]). Move orders reaching the same board are told apart
    /// by the order the hands went. Every pair counts, not only neighbours: a ply whose
    /// reports say nothing (its landing lost, its square taken again) leaves the order of
    /// the plies around it to tell. A landing whose report was lost, shown by a dump, came
    /// at some time before the dump; the lift before it may still have a time of its own.
    ///
    /// The presses count too: the presses waiting since the last confirmed ply, by each
    /// player in turn, end its plies in turn, so a ply whose reported changes all came
    /// after the press of the ply before it and before the press of the ply after it (where
    /// those presses came) counts once more. A ply reported landing after the opponent
    /// pressed for the reply is later in the line (f3, its reports lost, Rf7, Kh2-g3: the
    /// king's landing reported after both presses is the third ply, not the first), and
    /// one reported before the press of the ply before it is earlier. `first` is the place
    /// of `path`'s first ply after the last confirmed one.
    pub(super) fn plies_in_reported_order(&self, path: &[shakmaty::Move], first: usize) -> u8 {
        let changes = self.path_changes(path);
        let mut pairs = 0u8;
        let counts = self.press_counts_in_turn();
        for (i, a) in changes.iter().enumerate() {
            let reported = a.iter().flatten().filter(|c| !c.dumped);
            let next_press = counts.get(first + i + 1).copied();
            let previous_press = (first + i).checked_sub(1).and_then(|k| counts.get(k).copied());
            let mut any = false;
            let in_turn = reported.inspect(|_| any = true).all(|c| {
                next_press.is_none_or(|n| c.presses < n) && previous_press.is_none_or(|p| c.presses >= p)
            });
            pairs = pairs.saturating_add(u8::from(any && in_turn));
        }
        for (i, a) in changes.iter().enumerate() {
            for b in &changes[i + 1..] {
                let before =
                    a.iter().flatten().any(|x| b.iter().flatten().any(|y| x.before(*y, self.scan_ms())));
                pairs = pairs.saturating_add(u8::from(before));
            }
        }
        pairs
    }

    /// The stream counts of the presses waiting since the last confirmed ply, each player's
    /// in turn from the side to move there (the `k`-th ends the `k`-th ply after it), up to
    /// the first out of turn.
    fn press_counts_in_turn(&self) -> heapless::Vec<u32, PENDING_PRESSES> {
        let mut turn = self.confirmed_pos.turn();
        let mut counts = heapless::Vec::new();
        for p in self.waiting_presses() {
            if p.press.by != turn || counts.push(p.count).is_err() {
                break;
            }
            turn = !turn;
        }
        counts
    }

    /// True when a ply of `path` (from the last confirmed ply) was reported out of its
    /// presses' turn: all its reported changes came before its mover pressed for the ply
    /// before it, or all came after the press that ended it (the `k`-th waiting press, in
    /// turn, ends the `k`-th ply). A player's next move begins after their press and ends
    /// with the next one. A line read so has a ply invented in place of one whose reports
    /// were all lost (Qb7-a8, Rb8-c8, Qa8-c6 where c6's landing came before White's first
    /// press), or a ply put early in a repetition its reports came after (Kg2-g3 made after
    /// eight presses, read as the fifth ply), and waits for a dump or a better line.
    /// Judged only in the searches from the last confirmed ply (a catch-up, a re-read): a
    /// board whose scan lags the clock reports plies after their presses (three presses
    /// before one scan shows their plies), and the search from the provisional plies must
    /// still follow such a board.
    pub(super) fn out_of_press_turn(&self, path: &[shakmaty::Move]) -> bool {
        self.press_turn_missed(path, true)
    }

    /// [`Self::out_of_press_turn`], a ply reported after the press that ended it counted
    /// only with `late_too` (a board whose scan lags the clock reports every ply so).
    pub(super) fn press_turn_missed(&self, path: &[shakmaty::Move], late_too: bool) -> bool {
        let counts = self.press_counts_in_turn();
        // Presses read before the ply that ended them (its report came in a later burst)
        // leave fewer waiting than plies: the counts then say nothing of which ply began
        // after whose press.
        let counted = counts.len() + 1 >= path.len();
        // Reports since the last confirmed ply appeared: an older change of the square is
        // not this ply's (its reports lost).
        let since = self.last_confirmed_seen.ms;
        self.path_changes(path).iter().enumerate().any(|(i, changes)| {
            let reported = || changes.iter().flatten().filter(|c| !c.dumped && c.ms >= since);
            if reported().next().is_none() {
                return false;
            }
            let previous = i.checked_sub(2).filter(|_| counted).and_then(|k| counts.get(k));
            let ahead = previous.is_some_and(|&p| reported().all(|c| c.presses < p));
            // A press read in one message with another (two presses between two polls) is
            // counted with it: which of the two came after a change is not known.
            let own = counts.get(i).filter(|&&own| counts.iter().filter(|&&c| c == own).count() == 1);
            let behind = late_too && own.is_some_and(|&own| reported().all(|c| c.presses >= own));
            ahead || behind
        })
    }

    /// Each ply's changes along `path` (see [`Self::ply_changes`]): squares a later ply of
    /// the path changed again, or passed through, say nothing of it.
    fn path_changes(
        &self,
        path: &[shakmaty::Move],
    ) -> heapless::Vec<[Option<Change>; 2], { search::LONGEST }> {
        let mut changes = heapless::Vec::new();
        for (i, &m) in path.iter().enumerate() {
            // A later ply's hand may have set its piece down on a square it passed through
            // (g2-g4 reported on g3): that square's reports say nothing of this ply either.
            let later =
                path[i + 1..].iter().fold(Bitboard::EMPTY, |b, &n| b | search::touched(n) | traces(n));
            if changes.push(self.ply_changes(m, later)).is_err() {
                break;
            }
        }
        changes
    }

    /// The board's last changes on a ply's landing and lift squares, while they still show
    /// the ply and no `later` ply changed them (see `plies_in_reported_order`).
    fn ply_changes(&self, m: shakmaty::Move, later: Bitboard) -> [Option<Change>; 2] {
        let to = landing(m);
        let role = m.promotion().unwrap_or(m.role());
        let landed = !later.contains(to) && self.phys.board.piece_at(to).is_some_and(|p| p.role == role);
        let left = m.from().filter(|&from| !later.contains(from) && self.phys.board.piece_at(from).is_none());
        [landed.then(|| self.phys.last_change(to)), left.map(|from| self.phys.last_change(from))]
    }

    /// How many provisional plies there are up to the last one that stood (0: none stood).
    pub(super) fn stood_plies(&self) -> usize {
        let prov = (self.records.len() - self.confirmed).min(MAX_PROVISIONAL);
        let stood = (0..prov).rev().find(|&i| self.meta[i].stood).map_or(0, |i| i + 1);
        stood.min(self.dump_kept_plies()).min(self.plies_before_hidden())
    }

    /// The first provisional ply (its index in the record list) that a dump about to be
    /// loaded contradicts, `corrected` being the squares it shows otherwise than the field
    /// updates did: a ply read after the last report of such a square (its update was lost
    /// since), which changed that square or, for a rook move, had its king there
    /// (castling). Plies that stood, or that a press was bound to, are kept as the board
    /// showed them only up to there: a dump overrules the field updates before it (castling
    /// king first with the king's reports lost reads as the rook's move, and a press binds
    /// to it). Plies read before the square's last report are not in question: a repetition
    /// Kb2 Kb1 Kb2 whose last lift of b1 was lost keeps the first Kb2.
    pub(super) fn plies_a_dump_leaves(&self, corrected: Bitboard) -> Option<usize> {
        if corrected.is_empty() {
            return None;
        }
        let mut pos = self.confirmed_pos.clone();
        for i in self.confirmed..self.records.len() {
            let m = self.records[i].to_move(&pos)?;
            let mut after = pos.clone();
            after.play_unchecked(m);
            let mut squares = board_diff(pos.board(), after.board());
            if m.role() == Role::Rook
                && let Some(king) = pos.board().king_of(pos.turn())
            {
                squares.add(king);
            }
            let seen = self.meta[i - self.confirmed].seen.ms;
            if (squares & corrected).into_iter().any(|sq| self.phys.changed_ms(sq) < seen) {
                return Some(i);
            }
            pos = after;
        }
        None
    }

    /// After a dump showed `corrected` otherwise than the field updates, whose reports may
    /// have been lost since `since`: the plies read after that may be in an order the board
    /// never showed. The positions it was seen showing meanwhile held the stale squares
    /// (...c5 and b5 read with ...a5 unreported leave the board of ...c5 b5, the only line
    /// to it then), and the lost change has no time. When the line puts a ply before one
    /// whose landing the board reported a scan earlier, those plies are read again from the
    /// dump by the order in which the board reported the landings it did report: one line
    /// alone is taken (...a5 b5 ...c5: b5 was reported before c5); several are an unknown
    /// order (see `first_hidden`).
    pub(super) fn reorder_after_lost_updates<S: EventSink + ?Sized>(
        &mut self,
        corrected: Bitboard,
        since: u64,
        now: u64,
        sink: &mut S,
    ) {
        if !self.at_tip || self.dirty || self.phys.magic.any() {
            return;
        }
        let Some(from) = (self.confirmed..self.records.len()).find(|&i| self.shown_at(i) > since) else {
            return;
        };
        // Without a clock, plies stay provisional for seconds: more of them than the search
        // goes deep may follow the lost report. The last of them are read again.
        let from = from.max(self.records.len().saturating_sub(search::MAX_DEPTH));
        let n = self.records.len() - from;
        if !(2..=search::MAX_DEPTH).contains(&n) {
            return;
        }
        let Some(pos) = self.position_at(from) else { return };
        // When the board reported a ply's landing, if it did since `since`: the square's
        // last change, while the piece still stands there (a piece that moved on leaves the
        // time it left, which says nothing of when it landed).
        let reported = |m: shakmaty::Move| {
            let [landed, _] = self.ply_changes(m, Bitboard::EMPTY);
            landed.filter(|c| !corrected.contains(landing(m)) && c.ms > since)
        };
        // A scan apart, or a press between the two reports (read in one piece, they carry
        // one time).
        let before = |a: shakmaty::Move, b: shakmaty::Move| matches!((reported(a), reported(b)), (Some(a), Some(b)) if a.before(b, self.scan_ms()));
        let mut line = search::Line::new();
        let mut p = pos.clone();
        for rec in &self.records[from..] {
            let Some(m) = rec.to_move(&p) else { return };
            p.play_unchecked(m);
            let _ = line.push(m);
        }
        let against_reports = (0..line.len()).any(|i| (i + 1..line.len()).any(|j| before(line[j], line[i])));
        if !against_reports {
            return;
        }
        let target = self.phys.board.clone();
        let order = |path: &[shakmaty::Move]| {
            Ok(Score {
                order: path.windows(2).filter(|w| before(w[0], w[1])).count() as u8,
                ..Score::default()
            })
        };
        let Some(found) = Search::to(&target).of_length(&pos, n, &order) else {
            return;
        };
        let same = found.line.iter().zip(&self.records[from..]).all(|(m, rec)| rec.same_move(*m));
        if !same {
            let shown = self.shown_at(from);
            self.retract_to(from, sink);
            self.extend_shown(&found.line, now, shown.min(now), found.tied, sink);
            self.on_match(sink);
        } else if found.tied {
            for i in from..self.records.len() {
                self.meta[i - self.confirmed].hidden = true;
            }
        }
        if found.tied {
            self.alert_hidden_order(sink);
        }
    }

    /// How many provisional plies the last dump leaves standing as the field updates showed
    /// them (all when no dump contradicts them: see `plies_a_dump_leaves`).
    pub(super) fn dump_kept_plies(&self) -> usize {
        let prov = self.records.len() - self.confirmed;
        self.dump_leaves.map_or(prov, |i| i.saturating_sub(self.confirmed).min(prov))
    }

    /// True when the tip, or one legal ply from it or from a provisional base, shows `target`.
    pub(super) fn explains_in_one_ply(&self, target: &Board) -> bool {
        (self.confirmed..=self.records.len()).any(|k| {
            self.position_at(k).is_some_and(|pos| {
                let d = board_diff(pos.board(), target);
                d.is_empty() || one_ply(&pos, target, d).is_some()
            })
        })
    }

    pub(super) fn takeback_to<S: EventSink + ?Sized>(&mut self, j: usize, sink: &mut S) {
        self.retract_to(self.confirmed, sink);
        let Some(pos) = self.position_at(j) else { return };
        self.records.truncate(j);
        self.confirmed = j;
        let fen = crate::fen::FenText::of(&pos);
        self.confirmed_pos = pos.clone();
        self.tip = pos;
        self.restore_prev_clk();
        sink.event(Event::Takeback { to_ply: j as u16, fen });
    }

    /// `%emt` of the next moves counts from the confirmed plies' clocks.
    pub(super) fn restore_prev_clk(&mut self) {
        let mut prev = [None, None];
        let mut unknown = [false, false];
        let mut turn = self.start.turn();
        for rec in self.records.iter().take(self.confirmed) {
            let i = usize::from(turn == Color::Black);
            prev[i] = rec.clk().or(prev[i]);
            unknown[i] = rec.clk().is_none() && prev[i].is_some();
            turn = !turn;
        }
        self.clocks.prev_clk = prev;
        self.clocks.prev_unknown = unknown;
    }

    /// When the unpressed plies exactly undo the confirmed plies before them (the board is
    /// back at the position `n` confirmed plies ago after `n` provisional plies), the
    /// plies the line would confirm are a takeback done in playing order, not moves:
    /// returns the number of plies that remain.
    pub(super) fn undone_by_provisional(&self) -> Option<usize> {
        let prov = self.records.len() - self.confirmed;
        let j = self.confirmed.checked_sub(prov)?;
        if prov == 0 || self.tip.board() != self.position_at(j)?.board() {
            return None;
        }
        Some(j)
    }

    /// The squares differing from the nearest explainable position: the tip, a provisional
    /// base, or a one-ply successor of the tip.
    pub(super) fn nearest_diff(&self) -> Bitboard {
        let target = &self.phys.board;
        let mut best = board_diff(self.tip.board(), target) | self.phys.magic;
        for k in self.confirmed..self.records.len() {
            if let Some(p) = self.position_at(k) {
                let d = board_diff(p.board(), target) | self.phys.magic;
                if d.count() < best.count() {
                    best = d;
                }
            }
        }
        for m in self.tip.legal_moves() {
            let mut p = self.tip.clone();
            p.play_unchecked(m);
            let d = board_diff(p.board(), target) | self.phys.magic;
            if d.count() < best.count() {
                best = d;
            }
        }
        best
    }
}

/// The square a ply puts its piece on (the king's, for castling).
pub(super) fn landing(m: shakmaty::Move) -> shakmaty::Square {
    match m {
        shakmaty::Move::Castle { king, rook } => search::castle_targets(king, rook).0,
        other => other.to(),
    }
}

/// Plies played from the game's start to `pos` (by its move counter and side to move).
fn ply_number(pos: &shakmaty::Chess) -> usize {
    let moves = usize::try_from(pos.fullmoves().get()).unwrap_or(usize::MAX);
    moves.saturating_sub(1).saturating_mul(2) + usize::from(pos.turn() == Color::Black)
}
