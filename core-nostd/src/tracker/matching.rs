//! Matching the physical board against the line: one-ply fast path, deep search,
//! takebacks, and the squares reported when nothing explains the board.

use dgt_protocol::BoardDump;
use shakmaty::{Bitboard, Board, Color, Position, Role, attacks};

use super::{GameState, MAX_PROVISIONAL, Tracker, remember};
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
        match self.best_line_keeping_stood(target, keep) {
            Some((k, path, false)) => {
                let prov = self.records.len() - self.confirmed;
                Reading::Explained { plies: (prov - k + path.len()) as u8 }
            }
            Some((_, _, true)) => Reading::Ambiguous,
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
    /// settle-time search decides on the whole reading (see `best_line_keeping_stood`).
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
        for k in (self.stood_plies()..prov).rev() {
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

    /// Deep search from the tip and each provisional base, then takebacks.
    pub(super) fn deep_eval<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) {
        self.dirty = false;
        if self.state != GameState::Active {
            return;
        }
        let target = self.phys.board.clone();
        // The board the line last matched with a move under way (see `move_under_way`).
        let under_way = self.move_under_way(&target);
        // Pressed plies the board shows with the next move's hands at work (a king among
        // the pieces in the air, too) are taken now; the rest waits for the hands.
        if !self.phys.magic.any()
            && let Some(line) = self.pressed_line_under_reply(&target)
        {
            self.extend_shown(&line, now, self.tip_left_ms.min(now), false, sink);
            self.dirty = true;
            return;
        }
        if !self.phys.magic.any() && has_two_kings(&target) {
            // Plies a waiting press was bound to stand (see `pressed_plies`).
            let prov = self.records.len() - self.confirmed;
            let pressed = self.pressed_plies();
            let line = match under_way {
                // The mover's piece on its way: the plies the board shows are not given up
                // for a line from an earlier base (plies nobody saw); a longer line from the
                // tip is at worst withdrawn when the piece lands.
                Some(UnderWay::OnItsWay) => self.best_line_keeping_stood(&target, prov),
                // The tip less some pieces: what hands show in the middle of a capture, and
                // what only an exchange of several plies explains (a capture and a
                // recapture on one square, or a line whose pieces passed through other
                // squares and back). Explained once the hands are done, like any other
                // reading: when it has stood longer than a sliding hand rests with a press
                // saying a move is over, or for the quiet time.
                Some(UnderWay::Lifted) => {
                    let still = now.saturating_sub(self.last_change_ms);
                    let hands_done = (still >= self.config.timing.slide_settled_ms()
                        && !self.pending_press.is_empty())
                        || still >= u64::from(self.config.timing.quiet_ms);
                    if !hands_done {
                        // Searched again at the next tick.
                        self.dirty = true;
                    }
                    if hands_done { self.best_line_keeping_stood(&target, pressed) } else { None }
                }
                // What the players left on the board when they pressed comes first (see
                // `line_through_pressed_board`).
                None => self
                    .line_through_pressed_board(&target)
                    .map(|(k, path)| (k, path, false))
                    .or_else(|| self.best_line_keeping_stood(&target, pressed)),
            };
            // A board no line within the search depth explains, for the mismatch time: the
            // board may have run a ply past the search (a burst read in one scan, and the next
            // move made before the tracker settled on it), and would stay unexplained for the
            // rest of the game. Searched once more as deep as the tracker goes, and taken only
            // when one line alone explains it (it is then confirmed only after a dump).
            let stuck = self
                .unexplained_since
                .is_some_and(|since| now.saturating_sub(since) >= u64::from(self.config.timing.mismatch_ms));
            let line = match line {
                None if stuck
                    && under_way.is_none()
                    && usize::from(self.config.search_depth) < search::MAX_DEPTH =>
                {
                    self.best_line_within(&target, pressed, search::MAX_DEPTH).filter(|(_, _, tied)| !tied)
                }
                line => line,
            };
            if let Some((k, path, tied)) = line {
                // Moves made while the board was away are the caller's to reconcile.
                let hidden = tied && !self.back_from_outage;
                self.retract_to(self.confirmed + k, sink);
                // The reading these plies explain began when the board left the tip; a ply
                // whose squares all changed later began later.
                let from = self.records.len();
                self.extend_shown(&path, now, self.tip_left_ms.min(now), hidden, sink);
                self.date_found_plies(from, now);
                if hidden {
                    self.alert_hidden_order(sink);
                }
                self.on_match(sink);
                return;
            }
            let earlier = self.find_earlier(&target);
            // A dump no search within reach explains: the board may have run further ahead.
            if earlier.is_none()
                && under_way.is_none()
                && self.last_dump_ms == Some(now)
                && self.catch_up(&target, now, sink)
            {
                return;
            }
            if let Some(j) = earlier.filter(|_| under_way.is_none()) {
                // Taking back more than a move pair waits until the board has stood for the
                // quiet time: in a long game a piece knocked onto the next square can
                // briefly show a position of many plies ago (a repetition), and a takeback
                // of that many plies is set up and left, not a passing state. So does any
                // takeback once the side to move pressed since the tip: the clock says it
                // moved, and a move whose reports were lost can bring back what the board
                // showed a ply or two ago (Kd3-e3 unseen, then Nd6-f5, in a repetition).
                let still = now.saturating_sub(self.last_change_ms);
                let short = self.confirmed - j <= 2 && !self.pressed_since_tip();
                if short || still >= u64::from(self.config.timing.quiet_ms) {
                    self.takeback_to(j, sink);
                    self.on_match(sink);
                    return;
                }
                self.dirty = true;
            }
        }
        if self.unexplained_since.is_none() {
            self.unexplained_since = Some(now);
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
        let judge = |path: &[shakmaty::Move]| Some(self.seen_and_order(&pos, path, &|b| self.seen_board(b)));
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
    /// before the one whose piece it takes). Every ply of the line is still on the board; a
    /// line from an earlier base would give up plies the board shows, for plies nobody saw.
    /// Pieces lifted after one ply from the tip count too (see `lifted_after_one_ply`).
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

    /// The plies the waiting presses were for, when `target` shows them with only pieces of
    /// the next mover lifted: with no provisional ply, N presses waiting, one by each
    /// player in turn from the side to move (at most two), and one line of N plies reaching
    /// such a board: the only one, or the only one with most plies whose landing the board
    /// reported since it left the tip (a piece set down, reported, and lifted again for the
    /// next move: the dump cannot say where it had gone, the report can). Each press says
    /// a move is done, the dump shows where the pieces went, and the hands at work are the
    /// next move's. This is how plies whose reports were lost show when the dump they asked
    /// for came late (a relay busy for a moment): without it they never show whole, and
    /// the next move then reads with them as a shorter line (Rd4-d1 Kg2 Rd1-d5 as Rd4-d5
    /// Kg2), in an order nobody played, or as other moves reaching the board with nothing
    /// in the air (Rd8-d1 Ra5-a8, the rook lifted again, as Rd8-a8 Rxa8).
    pub(super) fn pressed_line_under_reply(&self, target: &Board) -> Option<search::Line> {
        if self.records.len() != self.confirmed {
            return None;
        }
        let mut turn = self.tip.turn();
        let mut presses = 0;
        for p in self.pending_press.iter().filter(|p| p.seq > self.last_confirmed_seen.seq) {
            if p.press.by != turn || presses == 2 {
                break;
            }
            turn = !turn;
            presses += 1;
        }
        if presses == 0 {
            return None;
        }
        let landings = |path: &[shakmaty::Move]| {
            let mut pos = self.tip.clone();
            let mut landed = 0;
            for &m in path {
                pos.play_unchecked(m);
                let to = landing(m);
                let piece = pos.board().piece_at(to);
                landed += u8::from(piece.is_some() && self.phys.placed_after(to, self.tip_left_ms) == piece);
            }
            Some(Score { landings: landed, ..Score::default() })
        };
        let found = Search::under_reply(target).of_length(&self.tip, presses, &landings)?;
        (!found.tied && (found.lines == 1 || found.score.landings > 0)).then_some(found.line)
    }

    /// The sliding piece of the side to move on its way (see `move_under_way`); `d` and
    /// `placed` are the squares `target` differs from the tip on, and those of them it
    /// has a piece on.
    fn on_its_way(&self, target: &Board, d: Bitboard, placed: Bitboard) -> bool {
        let tip = self.tip.board();
        let Some(to) = placed.single_square() else { return false };
        let mover = self.tip.turn();
        let lifted = d & !target.occupied();
        let (Some(from), Some(piece)) = ((lifted & tip.by_color(mover)).single_square(), target.piece_at(to))
        else {
            return false;
        };
        let victims = lifted & tip.by_color(!mover);
        piece.color == mover
            && tip.piece_at(from) == Some(piece)
            && matches!(piece.role, Role::Queen | Role::Rook | Role::Bishop)
            && tip.piece_at(to).is_none()
            && attacks::attacks(from, piece, Bitboard::EMPTY).contains(to)
            && attacks::between(from, to).is_disjoint(tip.occupied())
            && victims.into_iter().all(|v| attacks::between(from, v).contains(to))
    }

    /// The line that explains `target`: the provisional plies up to a base `k` (at least
    /// `keep` of them) and a searched path from there. The fewest plies since the last
    /// confirmed one: provisional plies were read from boards in passing (a scan halfway
    /// through a burst), so a line that keeps them is taken only when no shorter line from
    /// an earlier base explains the board. Among lines of that length, the one through
    /// most positions the board was seen showing (move orders can transpose), then the one
    /// keeping more of the provisional plies. The flag is true when another, different
    /// line scored the same: the board alone cannot say which was played.
    pub(super) fn best_line(&self, target: &Board, keep: usize) -> Option<(usize, search::Line, bool)> {
        self.best_line_within(target, keep, usize::from(self.config.search_depth.max(1)))
    }

    /// [`Self::best_line`] searching up to `depth` plies from each base.
    fn best_line_within(
        &self,
        target: &Board,
        keep: usize,
        depth: usize,
    ) -> Option<(usize, search::Line, bool)> {
        let prov = self.records.len() - self.confirmed;
        // (base, line from it, plies in all, score, tied)
        let mut best: Option<(usize, search::Line, usize, Score, bool)> = None;
        for k in (keep.min(prov)..=prov).rev() {
            let limit = match &best {
                Some((_, _, total, _, _)) if *total < k => continue,
                Some((_, _, total, _, _)) => (total - k).min(depth),
                None => depth,
            };
            let Some(pos) = self.position_at(self.confirmed + k) else { break };
            let judge =
                |path: &[shakmaty::Move]| Some(self.seen_and_order(&pos, path, &|b| self.seen_board(b)));
            let Some(found) = Search::to(target).shortest(&pos, 0..=limit, &judge) else {
                continue;
            };
            let total = k + found.line.len();
            // Kept plies' positions count when a ply follows them.
            let kept = (self.confirmed..self.confirmed + k)
                .filter(|&i| {
                    i + 1 < self.confirmed + total && self.seen_boards.contains(&self.records[i].hash)
                })
                .count() as u8;
            // Across bases: the fewest plies, then the positions seen on the way.
            let score =
                Score { fewer_plies: Score::plies(total), seen: found.score.seen + kept, ..Score::default() };
            match &mut best {
                Some((bk, bline, _, s, tied)) if score == *s => {
                    // The same line found from another base is no rival, unless another
                    // order from there was as good (plies kept from a reading that never
                    // showed their order do not settle it).
                    if !self.same_line((*bk, bline), (k, &found.line)) || found.tied {
                        *tied = true;
                    }
                }
                Some((_, _, _, s, _)) if score < *s => {}
                _ => best = Some((k, found.line, total, score, found.tied)),
            }
        }
        best.map(|(k, line, _, _, tied)| (k, line, tied))
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
        Score { seen: shown, order: self.plies_in_reported_order(line), ..Score::default() }
    }

    /// True when the line matched `board` earlier (a position the game went through).
    fn seen_board(&self, board: &Board) -> bool {
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
    pub(super) fn plies_in_reported_order(&self, path: &[shakmaty::Move]) -> u8 {
        let mut changes = heapless::Vec::<[Option<Change>; 2], { search::LONGEST }>::new();
        for (i, &m) in path.iter().enumerate() {
            let later = path[i + 1..].iter().fold(Bitboard::EMPTY, |b, &n| b | search::touched(n));
            if changes.push(self.ply_changes(m, later)).is_err() {
                break;
            }
        }
        let mut pairs = 0u8;
        for (i, a) in changes.iter().enumerate() {
            for b in &changes[i + 1..] {
                let before =
                    a.iter().flatten().any(|x| b.iter().flatten().any(|y| x.before(*y, self.scan_ms())));
                pairs = pairs.saturating_add(u8::from(before));
            }
        }
        pairs
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

    /// [`Self::best_line`], keeping at least the provisional plies up to the last one that
    /// stood (the board was still at it for longer than a sliding hand rests: a position
    /// the players left on the board, not a hand passing through) when some line does; otherwise the best
    /// line keeping `keep`. Without this, two plies read in one scan after plies that
    /// stood (a burst without a clock) lose to a line of fewer plies from before them that
    /// happens to reach the same board, and plies the board showed for seconds are
    /// replaced by plies nobody saw. A piece that paused on a legal square on its way
    /// further is still followed: from that pause no line reaches where it lands.
    pub(super) fn best_line_keeping_stood(
        &self,
        target: &Board,
        keep: usize,
    ) -> Option<(usize, search::Line, bool)> {
        let stood = self.stood_plies();
        if stood > keep
            && let Some(line) = self.best_line(target, stood)
        {
            return Some(line);
        }
        // Giving up plies that stood: as a slide that paused on a legal square and went on
        // (a ply of the same length), perhaps with a reply read in the same scan. Only the
        // last ply that stood can be such a pause: the plies before it had moves made on
        // top of them (a rook knocked on in a repetition, Re3-e4 Kg3 Re3 knocked to e2,
        // reads from before them as Re3-e2 Kg3, the shortest line). Not for a longer line
        // through positions nobody saw either, when a piece was knocked onto a square the
        // game cannot put it on (the king knocked next to the rook that just came: Rd1xd7
        // stood, Kc8 knocked to c7 reads as Rd1-d2 Kc7 Rd2xd7). The board stays
        // unexplained until it is put right, or for the mismatch time.
        self.best_line(target, keep.max(stood.saturating_sub(1)))
            .filter(|(k, path, _)| stood <= keep || k + path.len() <= stood + 1)
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
            Some(Score {
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

    /// True when two lines (provisional plies up to a base, then a path) are the same plies.
    fn same_line(&self, a: (usize, &search::Line), b: (usize, &search::Line)) -> bool {
        let ((ka, pa), (kb, pb)) = if a.0 <= b.0 { (a, b) } else { (b, a) };
        // Line `a` leaves the provisional plies earlier: its path must replay them.
        let replays_kept =
            (ka..kb).all(|i| pa.get(i - ka).is_some_and(|&m| self.records[self.confirmed + i].same_move(m)));
        replays_kept && pa.get(kb - ka..).is_some_and(|rest| rest == pb.as_slice())
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

    /// The latest confirmed earlier position (plies kept) whose placement is `target`.
    pub(super) fn find_earlier(&self, target: &Board) -> Option<usize> {
        let h = placement_hash(target);
        let mut found = None;
        for j in (0..self.confirmed).rev() {
            let hj = if j == 0 { self.start_hash } else { self.records[j - 1].hash };
            if hj == h && self.position_at(j).is_some_and(|p| p.board() == target) {
                found = Some(j);
                break;
            }
        }
        found
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
fn landing(m: shakmaty::Move) -> shakmaty::Square {
    match m {
        shakmaty::Move::Castle { king, rook } => search::castle_targets(king, rook).0,
        other => other.to(),
    }
}
