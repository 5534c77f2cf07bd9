//! Start and end detection: when a game begins (and from what), and when it is over.

use dgt_protocol::Orientation;
use shakmaty::{Bitboard, Board, CastlingMode, Chess, EnPassantMode, FromSetup, Move, Position, Role, Setup};

use super::record::{PlyRecord, to16};
use super::{GameState, ResumeError, ResumePly, Tracker};
use crate::board::{self, CENTRE, placement_hash};
use crate::event::{EndReason, Event, EventSink, GameResult, StartKind};
use crate::search::{self, Score, Search, board_diff};

impl<const PLIES: usize> Tracker<PLIES> {
    /// The standard start position on the board: `Some(orientation)`.
    pub(super) fn standard_start(&self) -> Option<Orientation> {
        let start = Board::new();
        if self.phys.magic.any() || self.phys.board.occupied().count() != 32 {
            None
        } else if self.phys.board == start {
            Some(self.phys.orientation)
        } else if board::rotated(&self.phys.board) == start {
            Some(self.phys.orientation.flipped())
        } else {
            None
        }
    }

    /// The board as it reads with its orientation, then the other way round.
    fn board_either_way(&self) -> [(Orientation, Board); 2] {
        let o = self.phys.orientation;
        [(o, self.phys.board.clone()), (o.flipped(), board::rotated(&self.phys.board))]
    }

    /// The first board a tracker with no game sees, when it is the standard start with
    /// White's first move under way (one White piece lifted, or put down where a first
    /// move lands before its lift was reported) or made (one legal move on):
    /// the relay came up, or reached the board, as the game began. `Some(orientation)`.
    /// Only the first look: a board being set up passes through such boards.
    pub(super) fn start_under_way(&self) -> Option<Orientation> {
        if !self.first_look || self.state != GameState::Idle || self.phys.magic.any() {
            return None;
        }
        let start = Chess::default();
        for (o, b) in self.board_either_way() {
            let diff = board_diff(start.board(), &b);
            let lifted = diff.single_square().is_some_and(|sq| {
                b.piece_at(sq).is_none() && start.board().color_at(sq) == Some(shakmaty::Color::White)
            });
            // The landing reported before the lift: the piece shows on both squares.
            let landed_first = diff.single_square().is_some_and(|sq| {
                start.board().piece_at(sq).is_none()
                    && b.color_at(sq) == Some(shakmaty::Color::White)
                    && start.legal_moves().iter().any(|m| m.to() == sq && Some(m.role()) == b.role_at(sq))
            });
            let moved = diff.count() <= 4
                && start.legal_moves().iter().any(|m| {
                    let mut after = start.clone();
                    after.play_unchecked(*m);
                    after.board() == &b
                });
            if lifted || landed_first || moved {
                return Some(o);
            }
        }
        None
    }

    /// A board a tracker with no game sees while the clock runs, a few plies (up to the
    /// search depth) into a game from the standard start: the relay came up, or its first look at the board came,
    /// after the first moves (a slow link, a relay busy as all its boards came up). The
    /// game is taken with the line to it; a line tied with another is one of several
    /// move orders, its plies not confirmed until the operator or later readings say
    /// (see `first_hidden`). Without a running clock a board being set up could pass
    /// through such a board.
    fn start_played_into(&self, now: u64) -> Option<(Orientation, Option<(search::Line, bool)>)> {
        if self.state != GameState::Idle || self.phys.magic.any() {
            return None;
        }
        if !self.clock_running(now) {
            return None;
        }
        let start = Chess::default();
        let depth = usize::from(self.config.search_depth);
        for (o, b) in self.board_either_way() {
            // A line of n plies changes at most 2n + 2 squares (castling, en passant).
            if board_diff(start.board(), &b).count() > 2 * depth + 2 || !search::has_two_kings(&b) {
                continue;
            }
            let judge = |path: &[Move]| {
                Ok(Score { order: self.plies_in_reported_order(path, 0), ..Score::default() })
            };
            if let Some(found) = Search::to(&b).shortest(&start, 0..=depth, &judge)
                && !found.line.is_empty()
            {
                return Some((o, Some((found.line, found.tied))));
            }
        }
        None
    }

    pub(super) fn try_start<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) {
        if let Some(o) = self.standard_start() {
            self.start_game(Chess::default(), CastlingMode::Standard, o, StartKind::Standard, now, sink);
            return;
        }
        if let Some((o, line)) =
            self.start_under_way().map(|o| (o, None)).or_else(|| self.start_played_into(now))
        {
            self.start_game(Chess::default(), CastlingMode::Standard, o, StartKind::Standard, now, sink);
            if let Some((path, tied)) = line
                && self.records.len() == self.confirmed
            {
                self.extend_shown(&path, now, now, tied, sink);
                self.on_match(sink);
                if tied {
                    self.alert_hidden_order(sink);
                }
            }
            self.take_presses_before_the_start(now, sink);
            return;
        }
        if let Some((o, pos, n)) = self.chess960_start() {
            self.start_game(pos, CastlingMode::Chess960, o, StartKind::Chess960(n), now, sink);
        }
    }

    /// In a Chess960 event, the 960 start position the board shows (either way round): its
    /// orientation, position and number.
    fn chess960_start(&self) -> Option<(Orientation, Chess, u16)> {
        if !self.config.chess960 || self.phys.magic.any() {
            return None;
        }
        for (o, b) in self.board_either_way() {
            if let Some(n) = board::chess960_number(&b) {
                let mut setup = Setup::initial();
                setup.castling_rights = b.rooks() & Bitboard::BACKRANKS;
                setup.board = b;
                if let Ok(pos) = Chess::from_setup(setup, CastlingMode::Chess960) {
                    return Some((o, pos, n));
                }
            }
        }
        None
    }

    pub(super) fn try_armed<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) {
        let target = self.start.board().clone();
        let o = if self.phys.board == target && !self.phys.magic.any() {
            Some(self.phys.orientation)
        } else if board::rotated(&self.phys.board) == target && !self.phys.magic.any() {
            Some(self.phys.orientation.flipped())
        } else {
            None
        };
        if let Some(o) = o {
            let pos = self.start.clone();
            self.start_game(pos, self.castling_mode, o, StartKind::Fen, now, sink);
        }
    }

    pub(super) fn try_new_game<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) -> bool {
        let Some(o) = self.standard_start() else { return self.try_new_chess960_game(now, sink) };
        let same_start = self.kind == StartKind::Standard && o == self.phys.orientation;
        // The first plies taken back to the start are a takeback while the game's clock
        // runs (or there is none). With the clock stopped after them, the pieces set up
        // again are the next game: a game of one or two plies (a forfeit, an early
        // agreement) followed by another on the same board.
        let clock_stopped = self.clocks.current(&self.config, now).is_some_and(|r| !r.status.running());
        let short = self.confirmed <= usize::from(self.config.takeback_to_start_max_plies);
        if same_start && (self.confirmed == 0 || (short && !clock_stopped)) {
            return false;
        }
        // The start position as a legal move of the game (1. Nf3 Nf6 2. Ng1 Ng8) is a
        // repetition, not a reset of the board.
        if same_start && self.explains_in_one_ply(&self.phys.board) {
            return false;
        }
        self.start_game(Chess::default(), CastlingMode::Standard, o, StartKind::Standard, now, sink);
        true
    }

    /// In a Chess960 event, a 960 start position set up during a game is the next game,
    /// unless it is this game's own start before any move (or a move of the game leads
    /// back to it).
    fn try_new_chess960_game<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) -> bool {
        let Some((o, pos, n)) = self.chess960_start() else { return false };
        let same_start = self.kind == StartKind::Chess960(n) && o == self.phys.orientation;
        if same_start && (self.confirmed == 0 || self.explains_in_one_ply(&self.phys.board)) {
            return false;
        }
        self.start_game(pos, CastlingMode::Chess960, o, StartKind::Chess960(n), now, sink);
        true
    }

    pub(super) fn reset_game(&mut self, pos: Chess, mode: CastlingMode, kind: StartKind) {
        self.start_hash = placement_hash(pos.board());
        self.start = pos.clone();
        self.confirmed_pos = pos.clone();
        self.tip = pos;
        self.castling_mode = mode;
        self.kind = kind;
        self.records.clear();
        self.meta.clear();
        self.confirmed = 0;
        self.result = None;
        self.unexplained_since = None;
        self.mismatch = None;
        self.pending_press.clear();
        self.last_press_ms = [None; 2];
        self.dump_leaves = None;
        self.order_alerted = None;
        self.full_reported = false;
        self.seen_boards.clear();
        self.shown_boards.clear();
        self.pressed_boards.clear();
        self.centre_since = None;
    }

    pub(super) fn start_game<S: EventSink + ?Sized>(
        &mut self,
        pos: Chess,
        mode: CastlingMode,
        orientation: Orientation,
        kind: StartKind,
        now: u64,
        sink: &mut S,
    ) {
        self.reset_game(pos, mode, kind);
        self.phys.set_orientation(orientation);
        self.state = GameState::Active;
        self.last_confirmed_seen = self.stamp(now);
        self.clocks.new_game(&self.config, self.start.turn(), now, false);
        sink.event(Event::GameStarted { orientation, kind });
        let state = self.clocks.state(&self.config);
        if state != self.last_clock_state {
            self.last_clock_state = state;
            sink.event(Event::Clock(state));
        }
        self.dirty = true;
        self.fast_eval(now, true, sink);
    }

    /// A game found already begun (see `start_under_way`, `start_played_into`): the
    /// presses made while the clock ran before the board was read are its plies', one
    /// each in turn from White's first, when there are as many as plies or one fewer (the
    /// last mover yet to press). They give the plies their `%clk` and the clock its sides;
    /// without them the next press was taken for the previous ply's, and every press of
    /// the game for the other side's.
    fn take_presses_before_the_start<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) {
        let Some(flips) = self.clocks.take_idle_presses() else { return };
        let plies = self.records.len() - self.confirmed;
        // Plies of an unknown order wait for the operator or later readings, presses or not.
        if plies == 0 || !(plies - 1..=plies).contains(&flips.len()) || self.first_hidden().is_some() {
            return;
        }
        let mut by = self.confirmed_pos.turn();
        for flip in &flips {
            self.clocks.anchor(&self.config, flip.side, by);
            by = !by;
        }
        for flip in &flips {
            if self.state != GameState::Active {
                return;
            }
            self.clock_pressed(flip, false, now, sink);
        }
    }

    pub(super) fn resume_game<S, I>(
        &mut self,
        start: Chess,
        mode: CastlingMode,
        orientation: Orientation,
        moves: I,
        now: u64,
        sink: &mut S,
    ) -> Result<(), ResumeError>
    where
        S: EventSink + ?Sized,
        I: IntoIterator<Item = ResumePly>,
    {
        let kind = start_kind(&start, mode);
        self.reset_game(start, mode, kind);
        self.state = GameState::Idle;
        self.resumed_at = 0;
        let mut pos = self.start.clone();
        for (i, ply) in moves.into_iter().enumerate() {
            let Ok(m) = ply.uci.to_move(&pos) else {
                self.reset_game(Chess::default(), CastlingMode::Standard, StartKind::Standard);
                return Err(ResumeError::IllegalMove { ply: i + 1 });
            };
            pos.play_unchecked(m);
            let mut rec = PlyRecord::new(m, placement_hash(pos.board()));
            rec.clk = to16(ply.clk);
            rec.emt = to16(ply.emt);
            if self.records.push(rec).is_err() {
                self.reset_game(Chess::default(), CastlingMode::Standard, StartKind::Standard);
                return Err(ResumeError::TooManyPlies);
            }
        }
        self.confirmed = self.records.len();
        self.resumed_at = self.confirmed;
        self.confirmed_pos = pos.clone();
        self.tip = pos;
        self.phys.set_orientation(orientation);
        self.armed_orientation = Some(orientation);
        self.state = GameState::Active;
        self.last_confirmed_seen = self.stamp(now);
        self.clocks.new_game(&self.config, self.confirmed_pos.turn(), now, true);
        if let Some(tc) = self.config.time_control {
            let secs = tc.period_for_move(1).seconds;
            self.clocks.initial = [Some(secs); 2];
            self.clocks.initial_fixed = true;
        }
        self.restore_prev_clk();
        let state = self.clocks.state(&self.config);
        if state != self.last_clock_state {
            self.last_clock_state = state;
            sink.event(Event::Clock(state));
        }
        if self.check_position_end(sink) {
            return Ok(());
        }
        if self.phys.known {
            self.board_changed(now, true, sink);
        }
        Ok(())
    }

    /// Results shown on the board: magic pieces and kings in the centre. Either signal
    /// ends the game once it has stood for the quiet time (what makes an unpressed move
    /// final) and a dump asked for after it began shows it: a king knocked onto a centre
    /// square next to the other one shows the same board until it is put back, and one
    /// corrupted byte of a field update or dump reads as a magic piece (a king, `05`, with
    /// one bit flipped is `0D`) until the square's next update. Meanwhile nothing is matched: no legal position has the kings side by side
    /// or a magic piece. Returns true while a signal is up.
    pub(super) fn check_board_result<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) -> bool {
        let magic =
            self.phys.magic.first().and_then(|sq| self.phys.magic_code(sq)).and_then(board::magic_result);
        let signal = match magic {
            Some(result) => Some((result, EndReason::MagicPiece)),
            None => board::kings_in_centre(&self.phys.board).map(|r| (r, EndReason::KingsInCentre)),
        };
        let Some((result, reason)) = signal else {
            self.centre_since = None;
            return false;
        };
        let at = self.stamp(now);
        let since = *self.centre_since.get_or_insert(at);
        // A signal that stood for the quiet time ends the game once a dump asked for after
        // it began shows it too: one garbled dump (a chain's line, a byte flipped) can show
        // magic pieces or kings side by side that the board never had, and a board that
        // reports nothing changes nothing, however long.
        if now.saturating_sub(since.ms) >= u64::from(self.config.timing.quiet_ms)
            && self.dumped_since(since, now, sink)
        {
            self.centre_since = None;
            self.settle_line_at_end(since.ms, reason == EndReason::KingsInCentre, sink);
            self.end_game(result, reason, sink);
        }
        true
    }

    /// While a result signal stands on the board (kings in the centre, a magic piece), time
    /// may make it a result: returns true while the signal is up (nothing else is decided
    /// then).
    pub(super) fn tick_board_result<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) -> bool {
        self.centre_since.is_some() && self.check_board_result(now, sink)
    }

    /// At a result signalled on the board: king moves onto the centre (half of the
    /// signal) and what follows are withdrawn, except a last one that stood for the quiet
    /// time and was lifted again for the signal; the rest stands if the board showed it for a while
    /// before the signal began, else it is withdrawn too.
    pub(super) fn settle_line_at_end<S: EventSink + ?Sized>(
        &mut self,
        now: u64,
        drop_king_centre: bool,
        sink: &mut S,
    ) {
        let mut end_time = if self.at_tip { now } else { self.tip_left_ms };
        if drop_king_centre {
            // A king move onto the centre that stood as the last move for the quiet time
            // (what makes an unpressed move final) before the signal began, and that king
            // was picked up again for the signal, was a move: half of a signal is not
            // lifted and put back. A king left where it stood may have been the signal's
            // first half, and is withdrawn.
            let running = self.clock_running(now);
            let quiet = u64::from(if running {
                self.config.timing.unpressed_ms
            } else {
                self.config.timing.quiet_ms
            });
            // Only king moves onto the centre that end the line are the signal's halves: a
            // king step the game went on after (the opponent replied) was a move.
            let last = self.records.len().saturating_sub(1);
            let mut pos = self.confirmed_pos.clone();
            let mut signal_from = None;
            for i in self.confirmed..self.records.len() {
                let Some(m) = self.records[i].to_move(&pos) else { break };
                let seen = self.meta[i - self.confirmed].seen.ms;
                let a_move = i == last
                    && end_time.saturating_sub(seen) >= quiet
                    && self.touched_off_tip.contains(m.to());
                if !is_king_to_centre(m) || a_move {
                    signal_from = None;
                } else if signal_from.is_none() {
                    signal_from = Some((i, seen));
                }
                pos.play_unchecked(m);
            }
            if let Some((i, seen)) = signal_from {
                end_time = seen;
                self.retract_to(i, sink);
            }
        }
        // Plies of an unknown move order are not guessed at the end either: withdrawn, for
        // the operator to enter (see `first_hidden`).
        if let Some(h) = self.first_hidden() {
            self.retract_to(h, sink);
        }
        // Plies their movers pressed for were completed, however briefly the board showed
        // them before the hands went on to the signal (a link that holds bytes back reads
        // a king's landing, its press and its lift for the signal within moments); not a
        // line the board's pieces contradict.
        if !self.board_keeps_material_the_line_took() {
            self.confirm_waiting_pressed(now, sink);
        }
        let prov = self.records.len() - self.confirmed;
        if prov == 0 {
            return;
        }
        let last_seen = self.meta[prov - 1].seen.ms;
        if end_time.saturating_sub(last_seen) >= u64::from(self.config.timing.chain_confirm_ms)
            || self.line_stands_beside_signal(end_time)
        {
            self.confirm_through(self.records.len(), None, now, sink);
        } else {
            self.retract_to(self.confirmed, sink);
        }
    }

    /// True when the board, through the signal, still shows every provisional ply where it
    /// landed, away from the kings and any magic piece: the players made those moves, then
    /// signalled the result; the signal itself is the board standing still. (A ply shown
    /// only shortly before the signal, such as a mating move or moves whose reports were
    /// held up, would otherwise be withdrawn.) A king move is the signal's business only
    /// when it may have been part of it: the last ply, onto the centre or set down only
    /// briefly (a king carried to the centre past another square) before the board left
    /// the line at `end_time`. A king move that stood half the chain time off the centre was
    /// a move: no one carrying a king to the centre rests it elsewhere that long.
    fn line_stands_beside_signal(&self, end_time: u64) -> bool {
        let mut pos = self.confirmed_pos.clone();
        let last = self.records.len().saturating_sub(1);
        for i in self.confirmed..self.records.len() {
            let Some(m) = self.records[i].to_move(&pos) else { return false };
            if m.role() == Role::King && i == last {
                let seen = self.meta[i - self.confirmed].seen.ms;
                let rested = end_time.saturating_sub(seen) >= u64::from(self.config.timing.king_rest_ms);
                if is_king_to_centre(m) || !rested {
                    return false;
                }
            }
            pos.play_unchecked(m);
        }
        let mut signal = self.phys.magic;
        for board in [self.tip.board(), &self.phys.board] {
            signal |= board.kings();
        }
        (board_diff(&self.phys.board, self.tip.board()) & !signal).is_empty()
    }

    pub(super) fn last_is_king_to_centre(&self) -> bool {
        let n = self.records.len();
        if n == 0 || n <= self.confirmed {
            return false;
        }
        let Some(before) = self.position_at(n - 1) else { return false };
        self.records[n - 1].to_move(&before).is_some_and(is_king_to_centre)
    }

    /// Mate or stalemate after a confirmed ply ends the game. (A dead position does not: the
    /// players may play on, and the board cannot know whether the arbiter stepped in.)
    pub(super) fn check_position_end<S: EventSink + ?Sized>(&mut self, sink: &mut S) -> bool {
        let pos = &self.confirmed_pos;
        let end = if !pos.legal_moves().is_empty() {
            None
        } else if pos.is_check() {
            Some((GameResult::win_for(!pos.turn()), EndReason::Checkmate))
        } else {
            Some((GameResult::Draw, EndReason::Stalemate))
        };
        match end {
            Some((result, reason)) => {
                self.retract_to(self.confirmed, sink);
                self.end_game(result, reason, sink);
                true
            }
            None => false,
        }
    }

    pub(super) fn end_game<S: EventSink + ?Sized>(
        &mut self,
        result: GameResult,
        reason: EndReason,
        sink: &mut S,
    ) {
        self.result = Some((result, reason));
        self.state = GameState::Over;
        self.pending_press.clear();
        self.dirty = false;
        self.unexplained_since = None;
        if self.mismatch.take().is_some() {
            sink.event(Event::PositionRecovered);
        }
        sink.event(Event::GameEnded { result, reason });
    }
}

/// How a game from `start` began: the standard position, a Chess960 one, or an operator's.
fn start_kind(start: &Chess, mode: CastlingMode) -> StartKind {
    let setup = start.to_setup(EnPassantMode::Legal);
    if setup == Setup::initial() {
        return StartKind::Standard;
    }
    let fresh = setup.halfmoves == 0 && setup.fullmoves.get() == 1 && setup.ep_square.is_none();
    match board::chess960_number(start.board()) {
        Some(n)
            if mode == CastlingMode::Chess960
                && fresh
                && setup.castling_rights == (start.board().rooks() & Bitboard::BACKRANKS) =>
        {
            StartKind::Chess960(n)
        }
        _ => StartKind::Fen,
    }
}

fn is_king_to_centre(m: Move) -> bool {
    matches!(m, Move::Normal { role: Role::King, to, .. } if CENTRE.contains(to))
}
