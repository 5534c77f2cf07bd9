//! Which line explains a board the one-ply step could not follow, and on what evidence.
//!
//! Every candidate is a line from the last confirmed ply: some of the provisional plies
//! kept, then plies the one generator ([`Search`]) found. Candidates are compared by one
//! score, part by part: first what the line rests on ([`Basis`]: the strongest evidence it
//! agrees with), then the line's own [`Score`] (fewer plies, positions the board showed on
//! the way, plies in the order the board reported them). A line another line ties with is
//! taken as one order of several the board never told apart (its plies wait, and the
//! operator is told), never as a choice. Lines the evidence forbids are rejected by name
//! ([`Rejection`]). When no line explains the board, an earlier position of the game may
//! (a takeback); else the board is unexplained, and reported once that lasts.
//!
//! | basis (strongest first) | what it rests on | candidates |
//! |---|---|---|
//! | [`Basis::UnderReply`] | presses waiting with no ply on the board, the board showing their plies with the next mover's hands at work | as many plies as presses (at most two) from the tip, to the board less pieces of the next mover |
//! | [`Basis::PressedBoard`] | a board shown whole after two or more presses, one by each player in turn | as many plies as those presses to that board, then a search on to this one |
//! | [`Basis::Stood`] | plies the board stood still at, longer than a sliding hand rests | lines keeping every ply that stood |
//! | [`Basis::Pressed`] | plies a waiting press was bound to | lines keeping them (and all but the last ply that stood, for a line no longer than it) |
//! | [`Basis::Deeper`] | a board unexplained for the mismatch time | lines as deep as the tracker goes, only when one alone explains it |
//! | [`Basis::CatchUp`] | a dump nothing nearer explains | lines from the last confirmed ply over the squares the board changed, as long as the presses say |

use shakmaty::{Bitboard, Board, Color, Move, Piece, Position, Role, Square, attacks};

use super::matching::UnderWay;
use super::{GameState, MAX_PROVISIONAL, Tracker};
use crate::event::EventSink;
use crate::search::{self, LONGEST, Rejection, Score, Search, board_diff, castle_targets, has_two_kings};

/// What a line rests on: the strongest evidence it agrees with. A line resting on stronger
/// evidence is taken over any line resting on weaker evidence, whatever else they score
/// (declared weakest first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Basis {
    /// A dump nothing nearer explains: the board ran ahead of the line, further than the
    /// search goes (a relay reading late, with reports lost on the way).
    CatchUp,
    /// A board unexplained for the mismatch time: it may have run a ply past the search
    /// (a burst read in one scan, the next move made before the tracker settled on it).
    Deeper,
    /// It keeps the plies a waiting press was bound to (the board showed them when the
    /// mover said the move was done).
    Pressed,
    /// It keeps every ply the board stood still at longer than a sliding hand rests: a
    /// position the players left on the board, not a hand passing through.
    Stood,
    /// It passes through the board the players left when they pressed (see
    /// `through_pressed_board`).
    PressedBoard,
    /// It gives each press waiting with no ply on the board its ply, the board showing them
    /// with the next move's hands at work.
    UnderReply,
}

/// A line that explains the board: the first `keep` provisional plies, then `line`.
#[derive(Clone, Debug)]
pub(super) struct Candidate {
    /// What it rests on.
    pub basis: Basis,
    /// Provisional plies it keeps.
    pub keep: usize,
    /// The plies after them.
    pub line: search::Line,
    /// Another line scored the same: one of several orders the board never told apart.
    pub tied: bool,
}

/// What the board calls for.
enum Choice {
    /// This line explains it.
    Line(Candidate),
    /// It shows the position after this many confirmed plies: a takeback.
    Takeback(usize),
    /// Hands are at work, or a takeback must stand longer: searched again later.
    Wait,
    /// Nothing explains it.
    Unexplained,
}

impl<const PLIES: usize> Tracker<PLIES> {
    /// Explains a board the one-ply step could not follow (see the module's table).
    pub(super) fn explain_board<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) {
        self.dirty = false;
        if self.state != GameState::Active {
            return;
        }
        let target = self.phys.board.clone();
        match self.choose(&target, now) {
            Choice::Line(c) => {
                // Moves made while the board was away are the caller's to reconcile.
                let hidden = c.tied && !self.back_from_outage;
                self.retract_to(self.confirmed + c.keep, sink);
                // The reading these plies explain began when the board left the tip; a ply
                // whose squares all changed later began later.
                let from = self.records.len();
                self.extend_shown(&c.line, now, self.tip_left_ms.min(now), hidden, sink);
                if c.basis == Basis::UnderReply {
                    // The hands at work are the next move's: the board is searched again.
                    self.dirty = true;
                    return;
                }
                self.date_found_plies(from, now);
                if hidden {
                    self.alert_hidden_order(sink);
                }
                self.on_match(sink);
                if !hidden {
                    self.reread_for_waiting_presses(now, sink);
                }
                return;
            }
            Choice::Takeback(j) => {
                self.takeback_to(j, sink);
                self.on_match(sink);
                return;
            }
            Choice::Wait => self.dirty = true,
            Choice::Unexplained => {}
        }
        if self.unexplained_since.is_none() {
            self.unexplained_since = Some(now);
        }
    }

    /// The best explanation of `target`: the candidate of the strongest basis that has one
    /// (each basis keeps its best by the line's [`Score`]), else a takeback.
    fn choose(&self, target: &Board, now: u64) -> Choice {
        if self.phys.magic.any() {
            return Choice::Unexplained;
        }
        if let Some(c) = self.under_reply(target) {
            return Choice::Line(c);
        }
        if !has_two_kings(target) {
            return Choice::Unexplained;
        }
        let under_way = self.move_under_way(target);
        let prov = self.records.len() - self.confirmed;
        let pressed = self.pressed_plies();
        let found = match under_way {
            // The mover's piece on its way: the plies the board shows are not given up for a
            // line from an earlier base (plies nobody saw); a longer line from the tip is at
            // worst withdrawn when the piece lands.
            Some(UnderWay::OnItsWay) => self.keeping_stood(target, prov),
            // The tip less some pieces: what hands show in the middle of a capture, and what
            // only an exchange of several plies explains (a capture and a recapture on one
            // square, or a line whose pieces passed through other squares and back).
            // Explained once the hands are done, like any other reading: when it has stood
            // longer than a sliding hand rests with a press saying a move is over, or for
            // the quiet time.
            Some(UnderWay::Lifted) => {
                let still = now.saturating_sub(self.last_change_ms);
                let hands_done = (still >= self.config.timing.slide_settled_ms()
                    && !self.pending_press.is_empty())
                    || still >= u64::from(self.config.timing.quiet_ms);
                if !hands_done {
                    return Choice::Wait;
                }
                self.keeping_stood(target, pressed)
            }
            None => self.through_pressed_board(target).or_else(|| self.keeping_stood(target, pressed)),
        };
        // A board no line within the search depth explains, for the mismatch time: searched
        // once more as deep as the tracker goes, and taken only when one line alone
        // explains it (it is then confirmed only after a dump).
        let stuck = self
            .unexplained_since
            .is_some_and(|since| now.saturating_sub(since) >= u64::from(self.config.timing.mismatch_ms));
        let found = match found {
            None if stuck
                && under_way.is_none()
                && usize::from(self.config.search_depth) < search::MAX_DEPTH =>
            {
                // As deep as this, lines are many: each must explain every piece the board
                // reported set down, as a catch-up's must.
                let deeper = self.best_line_within(target, pressed, search::MAX_DEPTH, Bitboard::FULL);
                deeper.and_then(|(keep, line, tied)| {
                    let c = Candidate { basis: Basis::Deeper, keep, line, tied };
                    admit(c, |c| c.tied, Rejection::Tied).ok()
                })
            }
            found => found,
        };
        if let Some(c) = found {
            return Choice::Line(c);
        }
        let earlier = self.find_earlier(target);
        // A dump no search within reach explains: the board may have run further ahead.
        if earlier.is_none()
            && under_way.is_none()
            && self.last_dump_ms == Some(now)
            && let Some(c) = self.catch_up(target, now)
        {
            return Choice::Line(c);
        }
        let Some(j) = earlier.filter(|_| under_way.is_none()) else { return Choice::Unexplained };
        // Taking back more than a move pair waits until the board has stood for the quiet
        // time: in a long game a piece knocked onto the next square can briefly show a
        // position of many plies ago (a repetition), and a takeback of that many plies is
        // set up and left, not a passing state. So does any takeback once the side to move
        // pressed since the tip: the clock says it moved, and a move whose reports were lost
        // can bring back what the board showed a ply or two ago (Kd3-e3 unseen, then
        // Nd6-f5, in a repetition).
        let still = now.saturating_sub(self.last_change_ms);
        let short = self.confirmed - j <= 2 && !self.pressed_since_tip();
        if short || still >= u64::from(self.config.timing.quiet_ms) {
            Choice::Takeback(j)
        } else {
            Choice::Wait
        }
    }

    /// [`Basis::Stood`], else [`Basis::Pressed`]: the best line keeping every ply that
    /// stood when one does, else the best keeping `keep` plies (those a press was bound
    /// to, or all, with a piece on its way). Without the first, two plies read in one scan
    /// after plies that stood (a burst without a clock) lose to a line of fewer plies from
    /// before them that happens to reach the same board, and plies the board showed for
    /// seconds are replaced by plies nobody saw. A piece that paused on a legal square on
    /// its way further is still followed: from that pause no line reaches where it lands.
    pub(super) fn keeping_stood(&self, target: &Board, keep: usize) -> Option<Candidate> {
        let stood = self.stood_plies();
        if stood > keep
            && let Some((keep, line, tied)) = self.best_line(target, stood)
            && !self.more_plies_than_pressed(keep + line.len())
        {
            return Some(Candidate { basis: Basis::Stood, keep, line, tied });
        }
        // Giving up plies that stood: as a slide that paused on a legal square and went on
        // (a ply of the same length), perhaps with a reply read in the same scan. Only the
        // last ply that stood can be such a pause: the plies before it had moves made on
        // top of them (a rook knocked on in a repetition, Re3-e4 Kg3 Re3 knocked to e2,
        // reads from before them as Re3-e2 Kg3, the shortest line). Not for a longer line
        // through positions nobody saw either, when a piece was knocked onto a square the
        // game cannot put it on (the king knocked next to the rook that just came: Rd1xd7
        // stood, Kc8 knocked to c7 reads as Rd1-d2 Kc7 Rd2xd7): [`Rejection::GivesUpStoodPly`].
        // The board stays unexplained until it is put right, or for the mismatch time.
        let (keep_from, line, tied) = self.best_line(target, keep.max(stood.saturating_sub(1)))?;
        let c = Candidate { basis: Basis::Pressed, keep: keep_from, line, tied };
        admit(c, |c| stood > keep && c.keep + c.line.len() > stood + 1, Rejection::GivesUpStoodPly).ok()
    }

    /// The line that explains `target`: the provisional plies up to a base `k` (at least
    /// `keep` of them: no base before the plies a press was bound to is searched) and a searched path
    /// from there. The fewest plies since the last confirmed one: provisional plies were
    /// read from boards in passing (a scan halfway through a burst), so a line that keeps
    /// them is taken only when no shorter line from an earlier base explains the board.
    /// Among lines of that length, the one through most positions the board was seen
    /// showing (move orders can transpose), then the one keeping more of the provisional
    /// plies. The flag is true when another, different line scored the same: the board
    /// alone cannot say which was played.
    pub(super) fn best_line(&self, target: &Board, keep: usize) -> Option<(usize, search::Line, bool)> {
        self.best_line_within(target, keep, usize::from(self.config.search_depth.max(1)), Bitboard::EMPTY)
    }

    /// [`Self::best_line`] searching up to `depth` plies from each base, every piece reported
    /// set down on `placed_on` since the last confirmed ply a trace the line must explain
    /// (see [`Self::explains_reports`]).
    fn best_line_within(
        &self,
        target: &Board,
        keep: usize,
        depth: usize,
        placed_on: Bitboard,
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
            let kept = self.kept_plies(k);
            let judge = |path: &[Move]| {
                if !self.explains_reports(&kept, path, placed_on) {
                    return Err(Rejection::UnexplainedReport);
                }
                Ok(self.seen_and_order(&pos, path, &|b| self.seen_board(b)))
            };
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

    /// True when a line of `plies` plies since the last confirmed one needs more than the
    /// running clock says were played: one for each press waiting, and the move under way
    /// not pressed yet. A ply that stood but nobody pressed for, then taken back in hand
    /// and another move played (...Rf8-d8, back to f8, ...Rxg8, one press), is kept only
    /// by a line of moves nobody pressed for (Rd8 Rf8 Re8 Rg8 Rxg8).
    fn more_plies_than_pressed(&self, plies: usize) -> bool {
        self.presses_counting(self.evaluated_ms).is_some_and(|presses| plies > presses + 1)
    }

    /// The presses waiting since the last confirmed ply, when they count the plies played:
    /// the clock runs and the list held every press (`None` otherwise: no clock, or more
    /// presses than the list holds, the count lost).
    fn presses_counting(&self, now: u64) -> Option<usize> {
        self.clock_running(now).then(|| self.presses_made()).flatten()
    }

    /// The presses waiting since the last confirmed ply, each of which ended a ply when it
    /// was made, whether or not the clock still runs (the last presses of a game, read
    /// after the clock stopped); `None` when more came than the list holds.
    fn presses_made(&self) -> Option<usize> {
        (!self.pending_press.is_full()).then(|| self.waiting_press_count())
    }

    /// True when two lines (provisional plies up to a base, then a path) are the same plies.
    fn same_line(&self, a: (usize, &search::Line), b: (usize, &search::Line)) -> bool {
        let ((ka, pa), (kb, pb)) = if a.0 <= b.0 { (a, b) } else { (b, a) };
        // Line `a` leaves the provisional plies earlier: its path must replay them.
        let replays_kept =
            (ka..kb).all(|i| pa.get(i - ka).is_some_and(|&m| self.records[self.confirmed + i].same_move(m)));
        replays_kept && pa.get(kb - ka..).is_some_and(|rest| rest == pb.as_slice())
    }

    /// [`Basis::UnderReply`]: the plies the waiting presses were for, when `target` shows
    /// them with only pieces of the next mover lifted: with no provisional ply, N presses
    /// waiting, one by each player in turn from the side to move (at most two), and one
    /// line of N plies reaching such a board: the only one, or the only one with most plies
    /// whose landing the board reported since it left the tip (a piece set down, reported,
    /// and lifted again for the next move: the dump cannot say where it had gone, the
    /// report can); else [`Rejection::Tied`]. Each press says a move is done, the dump
    /// shows where the pieces went, and the hands at work are the next move's. This is how
    /// plies whose reports were lost show when the dump they asked for came late (a relay
    /// busy for a moment): without it they never show whole, and the next move then reads
    /// with them as a shorter line (Rd4-d1 Kg2 Rd1-d5 as Rd4-d5 Kg2), in an order nobody
    /// played, or as other moves reaching the board with nothing in the air (Rd8-d1 Ra5-a8,
    /// the rook lifted again, as Rd8-a8 Rxa8).
    fn under_reply(&self, target: &Board) -> Option<Candidate> {
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
        let landings = |path: &[Move]| {
            let mut pos = self.tip.clone();
            let mut landed = 0;
            for &m in path {
                pos.play_unchecked(m);
                let to = super::matching::landing(m);
                let piece = pos.board().piece_at(to);
                landed += u8::from(piece.is_some() && self.phys.placed_after(to, self.tip_left_ms) == piece);
            }
            Ok(Score { landings: landed, ..Score::default() })
        };
        let found = Search::under_reply(target).of_length(&self.tip, presses, &landings)?;
        let several = found.tied || (found.lines > 1 && found.score.landings == 0);
        let c = Candidate { basis: Basis::UnderReply, keep: 0, line: found.line, tied: false };
        admit(c, |_| several, Rejection::Tied).ok()
    }

    /// [`Basis::PressedBoard`]: the line from the last confirmed ply through a board the
    /// players left after pressing, to `target`. When N presses, one by each player in
    /// turn, wait for their plies and the board, reported whole after they came, showed a
    /// position exactly N plies on, those plies are what the presses were for, and what the
    /// board did since comes after them: both players had said their moves were done.
    /// Without this, a piece that went in two moves with a reply between (Bc1-d2 e6 Bd2-f4,
    /// the bishop lifted again before the board settled on d2) reads as one move of it with
    /// the reply (Bc1-f4 e6), the shorter line, which the two presses then confirm before
    /// the third press can say otherwise. `None` when no such board is remembered, or when
    /// more than one line leads to it or from it ([`Rejection::Tied`]).
    fn through_pressed_board(&self, target: &Board) -> Option<Candidate> {
        if self.pressed_boards.is_empty() {
            return None;
        }
        // The newest such board the presses' plies reach (a board with pieces in the air
        // reaches none).
        let (pressed, to_pressed) = self
            .pressed_boards
            .iter()
            .rev()
            .filter(|b| {
                let n = usize::from(b.presses);
                // Its presses are still the first ones waiting.
                let still_waiting =
                    self.waiting_presses().nth(n - 1).is_some_and(|p| p.at == b.last_press_at);
                still_waiting && n < search::MAX_DEPTH && !board_diff(&b.board, target).is_empty()
            })
            .find_map(|b| {
                let judge = |path: &[Move]| {
                    Ok(self.seen_and_order(&self.confirmed_pos, path, &|x: &Board| self.board_was_shown(x)))
                };
                Search::to(&b.board)
                    .of_length(&self.confirmed_pos, usize::from(b.presses), &judge)
                    .map(|found| (b, found))
            })?;
        if to_pressed.tied {
            return None;
        }
        let mut pos = self.confirmed_pos.clone();
        for &m in &to_pressed.line {
            pos.play_unchecked(m);
        }
        let rest = search::MAX_DEPTH - usize::from(pressed.presses);
        let judge = |path: &[Move]| Ok(self.seen_and_order(&pos, path, &|x: &Board| self.board_was_shown(x)));
        let on = Search::to(target).shortest(&pos, 0..=rest, &judge)?;
        if on.tied {
            return None;
        }
        let mut line = to_pressed.line;
        for m in on.line {
            line.push(m).ok()?;
        }
        // The provisional plies the line replays are kept as they are.
        let keep = line
            .iter()
            .zip(&self.records[self.confirmed..])
            .take_while(|(m, rec)| rec.same_move(**m))
            .count();
        let line = search::Line::from_slice(&line[keep..]).ok()?;
        Some(Candidate { basis: Basis::PressedBoard, keep, line, tied: false })
    }

    /// [`Basis::CatchUp`]: the line from the last confirmed ply to `target` (a dump just
    /// read) over the squares the board changed since: as many plies as the presses waiting
    /// since then say (or one more: the last move not pressed yet), or any number without a
    /// running clock; a line leaving a report unexplained is
    /// [`Rejection::UnexplainedReport`]. A line of an order the board never showed is taken
    /// with its plies hidden, as a shorter search's would be.
    fn catch_up(&self, target: &Board, now: u64) -> Option<Candidate> {
        let touched = self.squares_changed_since_confirmed(target);
        let lengths = if self.clock_running(now) {
            // More presses than the list holds: the count is lost, and a shorter line (a
            // repetition leaves no trace) would be a guess.
            if self.pending_press.is_full() {
                return None;
            }
            let presses = self.waiting_press_count();
            presses.max(1)..=presses + 1
        } else {
            1..=LONGEST
        };
        let judge = |path: &[Move]| self.judge_from_confirmed(path, touched);
        let found =
            self.search_from_confirmed(target, touched).shortest(&self.confirmed_pos, lengths, &judge)?;
        Some(Candidate { basis: Basis::CatchUp, keep: 0, line: found.line, tied: found.tied })
    }

    /// The search of a catch-up and a re-read: lines from the last confirmed ply to `target`
    /// over `touched` squares, within the catch-up budget, a piece out and straight back
    /// only to a square the board showed a piece on meanwhile (see [`Self::stops`]).
    fn search_from_confirmed<'b>(&self, target: &'b Board, touched: Bitboard) -> Search<'b> {
        Search::to(target).over(touched, self.config.catch_up_budget).with_stops(self.stops())
    }

    /// How well `path`, from the last confirmed ply over `touched` squares, explains what the
    /// board said (a catch-up's judge, and the re-read's): every report explained, then
    /// the positions seen and the reports' order.
    fn judge_from_confirmed(&self, path: &[Move], touched: Bitboard) -> Result<Score, Rejection> {
        if !self.explains_reports(&[], path, touched) {
            return Err(Rejection::UnexplainedReport);
        }
        if self.out_of_press_turn(path) {
            return Err(Rejection::OutOfPressTurn);
        }
        Ok(self.seen_and_order(&self.confirmed_pos, path, &|b| self.seen_board(b)))
    }

    /// Reads the order of the provisional line again before plies a search read together
    /// are confirmed, once a dump shows the board at its end: the search that took them ran
    /// on what the board had said by then, and what it said since (a dump of a position on
    /// the way, reports of the next move, presses) can tell another order reaching the same
    /// board better. Lines of fewer plies when nothing fixes the count (see
    /// [`Self::shorter_line`]), else of as many, from the last confirmed ply, over the
    /// squares the line and the board changed, judged as a catch-up's: a shorter line, or
    /// one that scores better than the line, replaces the line (or, tied with another, its
    /// plies are of an unknown order). A transient the board showed in the middle (a piece
    /// put back on its square for a moment) can make a catch-up find only orders nobody
    /// played; the plies that follow then tell. Returns true when the line changed.
    pub(super) fn reread_joint_order<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) -> bool {
        let prov = self.records.len() - self.confirmed;
        if !(2..=search::LONGEST).contains(&prov) || self.first_hidden().is_some() {
            return false;
        }
        // Read once for each new message or line, not again at every call while the plies
        // wait for the rest of the finality rule.
        let read_for = (self.seq, self.records.len(), self.records.last().map_or(0, |r| r.hash));
        if self.order_read_for == Some(read_for) {
            return false;
        }
        self.order_read_for = Some(read_for);
        let target = self.tip.board().clone();
        let touched = self.squares_changed_since_confirmed(&target);
        let judge = |path: &[Move]| self.judge_from_confirmed(path, touched);
        let line = self.kept_plies(prov);
        if line.len() != prov {
            return false;
        }
        let current = judge(&line).ok();
        let search = self.search_from_confirmed(&target, touched);
        let Some(found) = self
            .pressed_line(&search, &line, &judge)
            .or_else(|| self.shorter_line(&search, &line, now, &judge))
            .or_else(|| search.of_length(&self.confirmed_pos, prov, &judge))
        else {
            return false;
        };
        // The order the hands went first: a position seen in passing may have been read
        // with a square gone stale (a report lost), the reports' order was not.
        let rank = |s: Score| (s.order, s.seen, s.landings);
        let other_length = found.line.len() != prov;
        let no_better = !other_length && current.is_some_and(|s| rank(s) >= rank(found.score));
        if no_better || found.line.as_slice() == line.as_slice() {
            return false;
        }
        let same = line.iter().zip(&found.line).take_while(|(a, b)| a == b).count();
        let shown = self.shown_at(self.confirmed + same);
        // A press bound to a ply re-read keeps its place in the line: the board had shown
        // that many plies at the press, whatever their order.
        // (By stream number and presser: extending the line may settle presses and remove
        // them.)
        let mut rebind = heapless::Vec::<(u32, Color), { super::PENDING_PRESSES }>::new();
        for p in &self.pending_press {
            if self.still_bound(p.bound).is_some_and(|b| b > self.confirmed + same) {
                let _ = rebind.push((p.seq, p.press.by));
            }
        }
        self.retract_to(self.confirmed + same, sink);
        self.extend_shown(&found.line[same..], now, shown.min(now), found.tied, sink);
        self.date_found_plies(self.confirmed + same, now);
        for (seq, by) in rebind {
            let Some(k) = self.pending_press.iter().position(|p| p.seq == seq && p.press.by == by) else {
                continue;
            };
            if other_length {
                // A line of another length: the presses take its plies in turn, not the
                // places the board showed at them.
                self.pending_press[k].bound = None;
            } else if let Some((b, _)) = self.pending_press[k].bound
                && b <= self.records.len()
            {
                self.pending_press[k].bound = Some(self.ply_key(b));
            }
        }
        if found.tied {
            self.alert_hidden_order(sink);
        }
        self.on_match(sink);
        true
    }

    /// True when the provisional line has a ply all of whose reports came before its mover
    /// pressed for the ply before it (see [`Self::press_turn_missed`]): plies read together
    /// so are not verified by a dump, though no other line explains the board yet. A piece
    /// in hand shows the board a capture of it reaches (Be2xg4 put back, the bishop lifted
    /// again for Bd3: Be2-g4 ...Nxg4 f4, where f2's lift came before White's first press).
    /// Plies reported after their presses are not held: a board whose scan lags the clock
    /// reports every ply so.
    pub(super) fn line_out_of_press_turn(&self) -> bool {
        let prov = self.records.len() - self.confirmed;
        let line = self.kept_plies(prov);
        self.press_turn_missed(&line, false)
    }

    /// The re-read's line of as many plies as the presses waiting since the last confirmed
    /// ply say (or one more: the last move not pressed yet), when they are more than
    /// `line`'s: each press ended a ply, though the clock may have stopped since (a game's
    /// last presses read late). A piece that went out and back with the reports of its
    /// moves lost (a rook b3-b7-b6-b7-b6 while the king went e5-e6-e5-f6) reaches the board
    /// that one move of it reaches, in four plies fewer than were pressed for. Only lines
    /// keeping the plies that stood; one tied with another is taken with its plies hidden.
    fn pressed_line<J: Fn(&[Move]) -> Result<Score, Rejection>>(
        &self,
        search: &Search<'_>,
        line: &[Move],
        judge: &J,
    ) -> Option<search::Found> {
        let presses = self.presses_made().filter(|&presses| presses > line.len())?;
        self.first_keeping_stood(search, line, presses..=(presses + 1).min(search::LONGEST), judge)
    }

    /// The first of `lengths` the re-read's search finds a line of that keeps the plies of
    /// `line` that stood.
    fn first_keeping_stood<J: Fn(&[Move]) -> Result<Score, Rejection>>(
        &self,
        search: &Search<'_>,
        line: &[Move],
        mut lengths: impl Iterator<Item = usize>,
        judge: &J,
    ) -> Option<search::Found> {
        let stood = self.stood_plies().min(line.len());
        lengths.find_map(|n| {
            search
                .of_length(&self.confirmed_pos, n, judge)
                .filter(|f| f.line.get(..stood) == line.get(..stood))
        })
    }

    /// The re-read's shortest line with fewer plies than `line` and the same side to move
    /// (two, four... plies fewer), when nothing fixes how many plies were played: no
    /// running clock and no press waiting. The fewest plies explain a board (the one
    /// score's first part after what a line rests on): a hand sliding a rook up the file to
    /// take a piece already lifted, read at a square on the way, is a line of two plies
    /// more than the capture and reaches the same board once the rook is set down. Only
    /// lines keeping the plies that stood; one tied with another is taken with its plies
    /// hidden.
    fn shorter_line<J: Fn(&[Move]) -> Result<Score, Rejection>>(
        &self,
        search: &Search<'_>,
        line: &[Move],
        now: u64,
        judge: &J,
    ) -> Option<search::Found> {
        if line.len() < 3 || self.clock_running(now) || !self.pending_press.is_empty() {
            return None;
        }
        let stood = self.stood_plies().min(line.len());
        let lengths = (line.len() % 2..line.len()).step_by(2).filter(move |&n| n >= stood.max(1));
        self.first_keeping_stood(search, line, lengths, judge)
    }

    /// True when the plies `kept` then `path` (from the last confirmed ply) explain what the
    /// board reported since it showed that ply (else [`Rejection::UnexplainedReport`]):
    /// - every piece reported set down on a square of `placed_on`: a ply of that piece
    ///   landing there or sliding through it, or the piece put back where it stood (a rook
    ///   reported on b8 and lifted again is Ra8-b8 then Rb8-c8, not Ra8-c8); a piece
    ///   reported on a square it has left again, while a piece of its kind was reported set
    ///   down again where one stood at the last confirmed ply, may have been taken back in
    ///   hand (h7-h5, back to h7, then h7-h6, read in one burst);
    /// - every square reported emptied while it stood empty (a landing whose report was
    ///   lost): a ply setting a piece down there or passing through it (Rd4-d1, its landing
    ///   lost, Kg2, Rd1-d5 reaches the board Rd4-d5 Kg2 does in fewer plies, but only it
    ///   explains d1's lift).
    pub(super) fn explains_reports(&self, kept: &[Move], path: &[Move], placed_on: Bitboard) -> bool {
        let since = self.last_confirmed_seen.ms;
        let lost = self.phys.lost_landings_after(since);
        let placed_any = self.phys.placed_since(since);
        let placed = placed_any & placed_on;
        if lost.is_empty() && placed_on.is_empty() {
            return true;
        }
        let line = || kept.iter().chain(path).copied();
        if !lost.is_subset(line().fold(Bitboard::EMPTY, |b, m| b | traces(m))) {
            return false;
        }
        let explained = |sq: Square, piece: Piece| {
            if self.confirmed_pos.board().piece_at(sq) == Some(piece) {
                return true;
            }
            let put_back = || {
                let homes = self.confirmed_pos.board().by_piece(piece) & placed_any;
                homes.into_iter().any(|home| self.phys.placed_after(home, since) == Some(piece))
            };
            if self.phys.board.piece_at(sq) != Some(piece) && put_back() {
                return true;
            }
            let mut pos = self.confirmed_pos.clone();
            line().any(|m| {
                let mover = pos.turn();
                pos.play_unchecked(m);
                mover == piece.color && puts_or_passes(m, piece.role, sq)
            })
        };
        let last_explained = placed.into_iter().all(|sq| {
            let Some(piece) = self.phys.placed_after(sq, since) else { return true };
            explained(sq, piece)
        });
        // A square reported set down on twice (a pawn taking on d5, then one retaking):
        // the earlier piece is a trace too, though the board shows the later.
        let Some(mut placements) = self.phys.placements_since(self.last_confirmed_seen.seq) else {
            return last_explained;
        };
        last_explained
            && placements.all(|(sq, piece)| {
                !placed_on.contains(sq)
                    || self.phys.placed_after(sq, since) == Some(piece)
                    || explained(sq, piece)
            })
    }

    /// The squares the board showed a piece on since the last confirmed ply and shows empty
    /// now (a piece set down there, or a landing whose report was lost), those a dump
    /// showed a piece on that stands there no longer (a knight's landing on d5 lost, then
    /// the knight back on f4 and the king on d5), and, while presses wait to count the
    /// plies, those it reported pieces set down on twice or more (a rook a8-b8, b8-a8,
    /// a8-b8: b8 ends occupied, but a piece came there twice; without presses a piece set
    /// down twice where it stands is as likely a move taken back in hand). A piece may have
    /// gone out to one and back (see [`Search::with_stops`]).
    fn stops(&self) -> Bitboard {
        let since = self.last_confirmed_seen.ms;
        let (mut once, mut again) = (Bitboard::EMPTY, Bitboard::EMPTY);
        if self.waiting_press_count() > 0
            && let Some(placements) = self.phys.placements_since(self.last_confirmed_seen.seq)
        {
            for (sq, _) in placements {
                if once.contains(sq) {
                    again.add(sq);
                }
                once.add(sq);
            }
        }
        self.phys.lost_landings_after(since)
            | (self.phys.placed_since(since) & !self.phys.board.occupied())
            | self.phys.shown_in_passing(since)
            | again
    }

    /// The first `kept` provisional plies.
    pub(super) fn kept_plies(&self, kept: usize) -> heapless::Vec<Move, MAX_PROVISIONAL> {
        let mut pos = self.confirmed_pos.clone();
        let mut plies = heapless::Vec::new();
        for rec in self.records[self.confirmed..].iter().take(kept) {
            let Some(m) = rec.to_move(&pos) else { break };
            if plies.push(m).is_err() {
                break;
            }
            pos.play_unchecked(m);
        }
        plies
    }

    /// The squares the line or the board changed since the last confirmed ply: where the
    /// provisional plies went, what the board reported since it left the tip or since that
    /// ply (a pawn set down on d5 and taken en passant leaves the square as it was, but a
    /// line that never touches it does not explain the report), the landings whose reports
    /// were lost since (a square reported emptied while it stood empty changed nothing on
    /// the board model), and where `target` differs from the last confirmed position.
    fn squares_changed_since_confirmed(&self, target: &Board) -> Bitboard {
        let since = self.last_confirmed_seen.ms;
        let mut squares = self.touched_off_tip
            | self.phys.changed_since(since.max(1))
            | self.phys.lost_landings_after(since)
            | board_diff(self.confirmed_pos.board(), target);
        let mut pos = self.confirmed_pos.clone();
        for rec in &self.records[self.confirmed..] {
            let Some(m) = rec.to_move(&pos) else { break };
            let before = pos.board().clone();
            pos.play_unchecked(m);
            squares |= board_diff(&before, pos.board());
        }
        squares
    }

    /// The latest confirmed earlier position (plies kept) whose placement is `target`.
    pub(super) fn find_earlier(&self, target: &Board) -> Option<usize> {
        let h = crate::board::placement_hash(target);
        (0..self.confirmed).rev().find(|&j| {
            let hj = if j == 0 { self.start_hash } else { self.records[j - 1].hash };
            hj == h && self.position_at(j).is_some_and(|p| p.board() == target)
        })
    }
}

/// The candidate, unless `rejected` says it is not what was played, for `why`.
fn admit(
    c: Candidate,
    rejected: impl Fn(&Candidate) -> bool,
    why: Rejection,
) -> Result<Candidate, Rejection> {
    if rejected(&c) { Err(why) } else { Ok(c) }
}

/// The squares ply `m` sets a piece down on or slides one through (a hand touching the
/// squares on its way), whatever the piece.
pub(super) fn traces(m: Move) -> Bitboard {
    match m {
        Move::Normal { from, to, .. } => attacks::between(from, to).with(to),
        Move::EnPassant { to, .. } => Bitboard::from_square(to),
        Move::Castle { king, rook } => {
            let (king_to, rook_to) = castle_targets(king, rook);
            attacks::between(king, rook) | Bitboard::from_square(king_to) | Bitboard::from_square(rook_to)
        }
        Move::Put { to, .. } => Bitboard::from_square(to),
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
