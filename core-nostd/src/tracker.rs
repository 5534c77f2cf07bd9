//! The tracker: board and clock messages in, certain moves out.

use dgt_protocol::{BoardDump, Bwtime, ClockTimes, FieldUpdate, Message, Orientation};
use shakmaty::{
    Bitboard, Board, CastlingMode, Chess, Color, EnPassantMode, FromSetup, Move, Position, Role, Setup,
    Square, fen::Fen, san::SanPlus,
};

use crate::board::{self, CENTRE, PhysBoard, placement_hash};
use crate::clock::{Clocks, Press};
use crate::config::Config;
use crate::event::{ClockState, EndReason, Event, EventSink, GameResult, MoveInfo, StartKind};
use crate::search::{self, board_diff, has_two_kings, one_ply};

/// Most provisional plies kept at once; older ones are proven by those that follow.
const MAX_PROVISIONAL: usize = 8;
/// A running clock that has sent nothing for this long is treated as absent.
const CLOCK_STALE_MS: u64 = 5000;
/// Marks a missing `%clk`/`%emt` in a [`PlyRecord`].
const NONE16: u16 = u16::MAX;

/// Where the tracker is in a game's life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GameState {
    /// No game yet: waiting for a start position.
    Idle,
    /// The operator set a position; waiting for the board to show it.
    WaitingForPosition,
    /// A game is in progress.
    Active,
    /// The game has a result; a start position begins the next one.
    Over,
}

/// Which line a query is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Confirmed moves only (what a PGN holds).
    Confirmed,
    /// Confirmed and provisional moves (what the board shows).
    Live,
}

/// Why an operator start position was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartError {
    /// The FEN text does not parse.
    InvalidFen,
    /// The position is not a legal chess position.
    IllegalPosition,
}

/// One ply, compactly: 12 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PlyRecord {
    from: u8,
    to: u8,
    /// 0 normal, 1 en passant, 2 castling (from = king, to = rook).
    kind: u8,
    /// Promotion role as `Role as u8`, 0 for none.
    promo: u8,
    clk: u16,
    emt: u16,
    /// Placement fingerprint after the ply.
    hash: u32,
}

impl PlyRecord {
    fn new(m: Move, hash: u32) -> PlyRecord {
        let (from, to, kind, promo) = match m {
            Move::Normal { from, to, promotion, .. } => (from, to, 0, promotion.map_or(0, |r| r as u8)),
            Move::EnPassant { from, to } => (from, to, 1, 0),
            Move::Castle { king, rook } => (king, rook, 2, 0),
            Move::Put { to, .. } => (to, to, 3, 0),
        };
        PlyRecord { from: u8::from(from), to: u8::from(to), kind, promo, clk: NONE16, emt: NONE16, hash }
    }

    /// The move in the position before it.
    pub(crate) fn to_move(self, pos: &Chess) -> Option<Move> {
        let from = Square::new(u32::from(self.from & 63));
        let to = Square::new(u32::from(self.to & 63));
        match self.kind {
            0 => Some(Move::Normal {
                role: pos.board().role_at(from)?,
                from,
                capture: pos.board().role_at(to),
                to,
                promotion: Role::ALL.into_iter().find(|r| *r as u8 == self.promo),
            }),
            1 => Some(Move::EnPassant { from, to }),
            2 => Some(Move::Castle { king: from, rook: to }),
            _ => None,
        }
    }

    pub(crate) fn clk(self) -> Option<u32> {
        (self.clk != NONE16).then_some(u32::from(self.clk))
    }

    pub(crate) fn emt(self) -> Option<u32> {
        (self.emt != NONE16).then_some(u32::from(self.emt))
    }
}

fn to16(v: Option<u32>) -> u16 {
    v.map_or(NONE16, |v| v.min(u32::from(NONE16 - 1)) as u16)
}

/// The board tracker for one e-board and clock, with room for `PLIES` plies per game.
///
/// Feed it every decoded message with the caller's monotonic time ([`Tracker::feed`]),
/// call [`Tracker::tick`] regularly (every 50 to 100 ms is plenty) so that time-based
/// decisions happen without new bytes, and act on the [`Event`]s it emits.
#[derive(Clone, Debug)]
pub struct Tracker<const PLIES: usize> {
    pub(crate) config: Config,
    phys: PhysBoard,
    pub(crate) state: GameState,
    pub(crate) kind: StartKind,
    pub(crate) start: Chess,
    start_hash: u32,
    pub(crate) castling_mode: CastlingMode,
    /// Confirmed plies, then provisional ones.
    pub(crate) records: heapless::Vec<PlyRecord, PLIES>,
    /// How many of `records` are confirmed.
    pub(crate) confirmed: usize,
    confirmed_pos: Chess,
    tip: Chess,
    /// When each provisional ply first appeared (index = ply - confirmed).
    seen_ms: [u64; MAX_PROVISIONAL],
    /// When the last confirmed ply appeared (or the game started).
    last_confirmed_seen_ms: u64,
    pub(crate) result: Option<(GameResult, EndReason)>,
    last_change_ms: u64,
    /// The board changed and has not been fully evaluated.
    dirty: bool,
    /// The board shows the tip of the line.
    at_tip: bool,
    /// When the board left the tip last.
    tip_left_ms: u64,
    unexplained_since: Option<u64>,
    mismatch: Option<Bitboard>,
    last_dump_request: Option<u64>,
    /// Presses (by White, by Black) still waiting for the board to show the move.
    pending_press: [Option<(Press, u64)>; 2],
    pub(crate) clocks: Clocks,
    last_clock_state: ClockState,
    armed_orientation: Option<Orientation>,
    full_reported: bool,
}

impl<const PLIES: usize> Default for Tracker<PLIES> {
    fn default() -> Self {
        Self::new(Config::default())
    }
}

impl<const PLIES: usize> Tracker<PLIES> {
    /// A tracker waiting for its first board dump.
    pub fn new(config: Config) -> Self {
        Tracker {
            config,
            phys: PhysBoard::new(),
            state: GameState::Idle,
            kind: StartKind::Standard,
            start: Chess::default(),
            start_hash: placement_hash(Chess::default().board()),
            castling_mode: CastlingMode::Standard,
            records: heapless::Vec::new(),
            confirmed: 0,
            confirmed_pos: Chess::default(),
            tip: Chess::default(),
            seen_ms: [0; MAX_PROVISIONAL],
            last_confirmed_seen_ms: 0,
            result: None,
            last_change_ms: 0,
            dirty: false,
            at_tip: false,
            tip_left_ms: 0,
            unexplained_since: None,
            mismatch: None,
            last_dump_request: None,
            pending_press: [None, None],
            clocks: Clocks::new(),
            last_clock_state: ClockState::default(),
            armed_orientation: None,
            full_reported: false,
        }
    }

    /// The settings in use.
    pub fn config(&self) -> &Config {
        &self.config
    }

    // ----- input ---------------------------------------------------------------------

    /// Takes any decoded message; those that do not concern the game are ignored.
    pub fn feed<S: EventSink + ?Sized>(&mut self, msg: &Message<'_>, now_ms: u64, sink: &mut S) {
        match msg {
            Message::BoardDump(d) => self.feed_dump(d, now_ms, sink),
            Message::FieldUpdate(f) => self.feed_field(*f, now_ms, sink),
            Message::Bwtime(Bwtime::Times(t)) => self.feed_clock(t, now_ms, sink),
            _ => {}
        }
    }

    /// A full board scan: a stable reading, evaluated at once.
    pub fn feed_dump<S: EventSink + ?Sized>(&mut self, dump: &BoardDump, now_ms: u64, sink: &mut S) {
        let first = !self.phys.known;
        if self.phys.load(dump) || first {
            self.board_changed(now_ms, true, sink);
        } else if self.dirty || self.unexplained_since.is_some() {
            self.deep_eval(now_ms, sink);
        }
    }

    /// One square changed.
    pub fn feed_field<S: EventSink + ?Sized>(&mut self, update: FieldUpdate, now_ms: u64, sink: &mut S) {
        if !self.phys.known {
            self.request_dump(now_ms, sink);
        }
        if self.phys.set(update.square, update.piece()) {
            self.board_changed(now_ms, false, sink);
        }
    }

    /// A clock reading (BWTIME times). Readings with the "no clock" bit are ignored.
    pub fn feed_clock<S: EventSink + ?Sized>(&mut self, times: &ClockTimes, now_ms: u64, sink: &mut S) {
        if times.status.no_clock() {
            return;
        }
        let in_game = self.state == GameState::Active;
        let to_move = self.confirmed_pos.turn();
        let press = self.clocks.reading(&self.config, times, now_ms, in_game, to_move, self.confirmed);
        let state = self.clocks.state(&self.config);
        if state != self.last_clock_state {
            self.last_clock_state = state;
            sink.event(Event::Clock(state));
        }
        if !in_game {
            return;
        }
        if self.config.flag_fall_ends_game
            && !self.clocks.flag_reported
            && let Some(loser) = self.clocks.fallen_flag(&self.config, times)
        {
            self.clocks.flag_reported = true;
            // A move not completed by a press before the flag fell does not count.
            self.retract_to(self.confirmed, sink);
            let winner = !loser;
            let result = if self.confirmed_pos.has_insufficient_material(winner) {
                GameResult::Draw
            } else {
                GameResult::win_for(winner)
            };
            self.end_game(result, EndReason::FlagFall, sink);
            return;
        }
        let Some(press) = press else { return };
        if self.dirty {
            self.deep_eval(now_ms, sink);
        }
        // An earlier press still waiting for the board is settled first.
        self.resolve_pending(now_ms, true, sink);
        if self.state != GameState::Active {
            return;
        }
        if self.at_tip
            && let Some(upto) = self.last_ply_by(press.by)
        {
            self.confirm_through(upto, Some(&press), now_ms, sink);
            return;
        }
        self.pending_press[usize::from(press.by == Color::Black)] = Some((press, now_ms));
    }

    /// Lets time pass: settles the board, confirms moves by quiet time, reports mismatches.
    pub fn tick<S: EventSink + ?Sized>(&mut self, now_ms: u64, sink: &mut S) {
        if self.state != GameState::Active {
            return;
        }
        let still = now_ms.saturating_sub(self.last_change_ms);
        if self.dirty && still >= u64::from(self.config.settle_ms) {
            self.deep_eval(now_ms, sink);
        }
        if self.state != GameState::Active {
            return;
        }
        self.resolve_pending(now_ms, false, sink);
        let prov = self.records.len() - self.confirmed;
        if self.at_tip && prov > 0 {
            let terminal = self.tip.is_checkmate() || self.tip.is_stalemate();
            let running = self.clock_running(now_ms) && !terminal;
            let quiet = if running { self.config.unpressed_ms } else { self.config.quiet_ms };
            if still >= u64::from(quiet) {
                // Quiet time: everything stands, except a king just put on a centre square
                // (it may be half of a kings-in-centre result), which waits for the next move.
                let keep_last = !terminal && self.last_is_king_to_centre();
                let upto = if keep_last { self.records.len() - 1 } else { self.records.len() };
                self.confirm_through(upto, None, now_ms, sink);
            } else if prov >= 2 && still >= u64::from(self.config.chain_confirm_ms) {
                // A forgotten press: the plies that followed prove the earlier ones.
                self.confirm_through(self.records.len() - 1, None, now_ms, sink);
            }
        }
        if let Some(since) = self.unexplained_since
            && self.mismatch.is_none()
            && now_ms.saturating_sub(since) >= u64::from(self.config.mismatch_ms)
        {
            let squares = self.nearest_diff();
            self.mismatch = Some(squares);
            sink.event(Event::PositionMismatch { squares });
            self.request_dump(now_ms, sink);
        }
    }

    // ----- operator ------------------------------------------------------------------

    /// Starts a game from a FEN set by the operator. With `orientation` unknown, the game
    /// starts when the board shows the position either way round.
    pub fn start_from_fen<S: EventSink + ?Sized>(
        &mut self,
        fen: &[u8],
        orientation: Option<Orientation>,
        now_ms: u64,
        sink: &mut S,
    ) -> Result<(), StartError> {
        let fen = Fen::from_ascii(fen).map_err(|_| StartError::InvalidFen)?;
        let setup: Setup = fen.into_setup();
        let mode = CastlingMode::detect(&setup);
        let pos = Chess::from_setup(setup, mode).map_err(|_| StartError::IllegalPosition)?;
        self.start_from_position(pos, mode, orientation, now_ms, sink);
        Ok(())
    }

    /// Starts a game from a position set by the operator (see [`Tracker::start_from_fen`]).
    pub fn start_from_position<S: EventSink + ?Sized>(
        &mut self,
        pos: Chess,
        mode: CastlingMode,
        orientation: Option<Orientation>,
        now_ms: u64,
        sink: &mut S,
    ) {
        match orientation {
            Some(o) => self.start_game(pos, mode, o, StartKind::Fen, now_ms, sink),
            None => {
                self.reset_game(pos, mode, StartKind::Fen);
                self.state = GameState::WaitingForPosition;
                if self.phys.known {
                    self.board_changed(now_ms, true, sink);
                }
            }
        }
        self.armed_orientation = orientation;
    }

    /// Ends the game with a result the operator gives (resignation, agreement, arbiter).
    /// Provisional moves are withdrawn.
    pub fn declare_result<S: EventSink + ?Sized>(&mut self, result: GameResult, sink: &mut S) {
        if self.state == GameState::Active {
            self.retract_to(self.confirmed, sink);
            self.end_game(result, EndReason::Operator, sink);
        }
    }

    // ----- queries -------------------------------------------------------------------

    /// Where the game is.
    pub fn state(&self) -> GameState {
        self.state
    }

    /// How the board is set up.
    pub fn orientation(&self) -> Orientation {
        self.phys.orientation
    }

    /// How the game started.
    pub fn start_kind(&self) -> StartKind {
        self.kind
    }

    /// The result and why, once the game is over.
    pub fn result(&self) -> Option<(GameResult, EndReason)> {
        self.result
    }

    /// Number of plies in a view.
    pub fn ply_count(&self, view: View) -> usize {
        match view {
            View::Confirmed => self.confirmed,
            View::Live => self.records.len(),
        }
    }

    /// The position after the plies of a view.
    pub fn position(&self, view: View) -> &Chess {
        match view {
            View::Confirmed => &self.confirmed_pos,
            View::Live => &self.tip,
        }
    }

    /// The start position of the game.
    pub fn start_position(&self) -> &Chess {
        &self.start
    }

    /// Writes the FEN of a view's position.
    pub fn write_fen<W: core::fmt::Write>(&self, view: View, w: &mut W) -> core::fmt::Result {
        write!(w, "{}", Fen::from_position(self.position(view), EnPassantMode::Legal))
    }

    /// Calls `f` with every ply of a view in order (SAN needs a replay, done once here).
    pub fn for_each_move<F: FnMut(&MoveInfo)>(&self, view: View, mut f: F) {
        let n = self.ply_count(view);
        let mut pos = self.start.clone();
        for (i, rec) in self.records.iter().take(n).enumerate() {
            let Some(m) = rec.to_move(&pos) else { return };
            let info = MoveInfo {
                ply: (i + 1) as u16,
                color: pos.turn(),
                uci: m.to_uci(self.castling_mode),
                san: SanPlus::from_move(pos.clone(), m),
                clk: rec.clk(),
                emt: rec.emt(),
            };
            pos.play_unchecked(m);
            f(&info);
        }
    }

    /// Both clocks as last read, mapped to colours.
    pub fn clocks(&self) -> ClockState {
        self.clocks.state(&self.config)
    }

    /// The live `Clock` tag value: `W/1:34:56` (White's clock runs), `B/…`, or `N/…` when
    /// stopped (the time of the side to move). `None` without a clock reading.
    pub fn write_clock_tag<W: core::fmt::Write>(&self, w: &mut W) -> core::fmt::Result {
        let s = self.clocks();
        let (letter, color) = match s.running {
            Some(Color::White) => ('W', Color::White),
            Some(Color::Black) => ('B', Color::Black),
            None => ('N', self.tip.turn()),
        };
        let t = match color {
            Color::White => s.white,
            Color::Black => s.black,
        };
        match t {
            Some(t) => write!(w, "{letter}/{}", crate::pgn::Hms(t)),
            None => Ok(()),
        }
    }

    /// The squares reported in the current mismatch, if one is open.
    pub fn mismatch(&self) -> Option<Bitboard> {
        self.mismatch
    }

    /// What the board shows, by board index.
    pub fn board(&self) -> BoardDump {
        self.phys.dump()
    }

    /// True once a board dump has been received.
    pub fn board_known(&self) -> bool {
        self.phys.known
    }

    // ----- internals: board --------------------------------------------------------------

    fn clock_running(&self, now: u64) -> bool {
        match self.clocks.last {
            Some(r) => r.status.running() && now.saturating_sub(self.clocks.last_ms) <= CLOCK_STALE_MS,
            None => false,
        }
    }

    fn request_dump<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) {
        let due = match self.last_dump_request {
            Some(t) => now.saturating_sub(t) >= u64::from(self.config.dump_request_interval_ms),
            None => true,
        };
        if due {
            self.last_dump_request = Some(now);
            sink.event(Event::RequestBoardDump);
        }
    }

    fn board_changed<S: EventSink + ?Sized>(&mut self, now: u64, stable: bool, sink: &mut S) {
        self.last_change_ms = now;
        self.dirty = true;
        if self.at_tip {
            self.tip_left_ms = now;
        }
        self.at_tip = false;
        match self.state {
            GameState::Idle | GameState::Over => {
                self.try_start(now, sink);
                return;
            }
            GameState::WaitingForPosition => {
                self.try_armed(now, sink);
                return;
            }
            GameState::Active => {}
        }
        if self.try_new_game(now, sink) || self.check_board_result(now, sink) {
            return;
        }
        self.fast_eval(now, sink);
        if stable && self.dirty {
            self.deep_eval(now, sink);
        }
    }

    /// The standard start position on the board: `Some(orientation)`.
    fn standard_start(&self) -> Option<Orientation> {
        let start = Board::new();
        if self.phys.magic.any() {
            None
        } else if self.phys.board == start {
            Some(self.phys.orientation)
        } else if board::rotated(&self.phys.board) == start {
            Some(self.phys.orientation.flipped())
        } else {
            None
        }
    }

    fn try_start<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) {
        if let Some(o) = self.standard_start() {
            self.start_game(Chess::default(), CastlingMode::Standard, o, StartKind::Standard, now, sink);
            return;
        }
        if self.config.chess960 && !self.phys.magic.any() {
            for o in [self.phys.orientation, self.phys.orientation.flipped()] {
                let b = if o == self.phys.orientation {
                    self.phys.board.clone()
                } else {
                    board::rotated(&self.phys.board)
                };
                if let Some(n) = board::chess960_number(&b) {
                    let mut setup = Setup::initial();
                    setup.castling_rights = b.rooks() & Bitboard::BACKRANKS;
                    setup.board = b;
                    if let Ok(pos) = Chess::from_setup(setup, CastlingMode::Chess960) {
                        self.start_game(pos, CastlingMode::Chess960, o, StartKind::Chess960(n), now, sink);
                        return;
                    }
                }
            }
        }
    }

    fn try_armed<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) {
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

    fn try_new_game<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) -> bool {
        let Some(o) = self.standard_start() else { return false };
        let same_start = self.kind == StartKind::Standard && o == self.phys.orientation;
        if same_start && self.confirmed <= usize::from(self.config.takeback_to_start_max_plies) {
            return false;
        }
        self.start_game(Chess::default(), CastlingMode::Standard, o, StartKind::Standard, now, sink);
        true
    }

    fn reset_game(&mut self, pos: Chess, mode: CastlingMode, kind: StartKind) {
        self.start_hash = placement_hash(pos.board());
        self.start = pos.clone();
        self.confirmed_pos = pos.clone();
        self.tip = pos;
        self.castling_mode = mode;
        self.kind = kind;
        self.records.clear();
        self.confirmed = 0;
        self.result = None;
        self.unexplained_since = None;
        self.mismatch = None;
        self.pending_press = [None, None];
        self.full_reported = false;
    }

    fn start_game<S: EventSink + ?Sized>(
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
        self.last_confirmed_seen_ms = now;
        self.clocks.new_game(&self.config, self.start.turn());
        sink.event(Event::GameStarted { orientation, kind });
        let state = self.clocks.state(&self.config);
        if state != self.last_clock_state {
            self.last_clock_state = state;
            sink.event(Event::Clock(state));
        }
        self.dirty = true;
        self.fast_eval(now, sink);
    }

    /// Results shown on the board: magic pieces and kings in the centre.
    fn check_board_result<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) -> bool {
        if let Some(sq) = self.phys.magic.first()
            && let Some(result) = self.phys.magic_code(sq).and_then(board::magic_result)
        {
            self.settle_line_at_end(now, false, sink);
            self.end_game(result, EndReason::MagicPiece, sink);
            return true;
        }
        if let Some(result) = board::kings_in_centre(&self.phys.board) {
            self.settle_line_at_end(now, true, sink);
            self.end_game(result, EndReason::KingsInCentre, sink);
            return true;
        }
        false
    }

    /// At a result signalled on the board: king moves onto the centre (half of the
    /// signal) and what follows are withdrawn; the rest stands if the board showed it for
    /// a while before the signal began, else it is withdrawn too.
    fn settle_line_at_end<S: EventSink + ?Sized>(&mut self, now: u64, drop_king_centre: bool, sink: &mut S) {
        let mut end_time = if self.at_tip { now } else { self.tip_left_ms };
        if drop_king_centre {
            let mut pos = self.confirmed_pos.clone();
            for i in self.confirmed..self.records.len() {
                let Some(m) = self.records[i].to_move(&pos) else { break };
                if is_king_to_centre(m) {
                    end_time = self.seen_ms[(i - self.confirmed).min(MAX_PROVISIONAL - 1)];
                    self.retract_to(i, sink);
                    break;
                }
                pos.play_unchecked(m);
            }
        }
        let prov = self.records.len() - self.confirmed;
        if prov == 0 {
            return;
        }
        let last_seen = self.seen_ms[(prov - 1).min(MAX_PROVISIONAL - 1)];
        if end_time.saturating_sub(last_seen) >= u64::from(self.config.chain_confirm_ms) {
            self.confirm_through(self.records.len(), None, now, sink);
        } else {
            self.retract_to(self.confirmed, sink);
        }
    }

    fn last_is_king_to_centre(&self) -> bool {
        let n = self.records.len();
        if n == 0 || n <= self.confirmed {
            return false;
        }
        let Some(before) = self.position_at(n - 1) else { return false };
        self.records[n - 1].to_move(&before).is_some_and(is_king_to_centre)
    }

    /// The position after `k` plies of the record list (replayed).
    fn position_at(&self, k: usize) -> Option<Chess> {
        let (mut pos, from) = if k >= self.confirmed {
            (self.confirmed_pos.clone(), self.confirmed)
        } else {
            (self.start.clone(), 0)
        };
        for rec in &self.records[from..k] {
            let m = rec.to_move(&pos)?;
            pos.play_unchecked(m);
        }
        Some(pos)
    }

    fn on_match<S: EventSink + ?Sized>(&mut self, sink: &mut S) {
        self.dirty = false;
        self.at_tip = true;
        self.unexplained_since = None;
        if self.mismatch.take().is_some() {
            sink.event(Event::PositionRecovered);
        }
    }

    /// One-ply explanations from the tip and from each provisional base.
    fn fast_eval<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) {
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
            self.extend(&[m], now, sink);
            self.on_match(sink);
            return;
        }
        let prov = self.records.len() - self.confirmed;
        for k in (0..prov).rev() {
            let Some(pos) = self.position_at(self.confirmed + k) else { return };
            let d = board_diff(pos.board(), &target);
            let found = if d.is_empty() { Some(None) } else { one_ply(&pos, &target, d).map(Some) };
            if let Some(m) = found {
                self.retract_to(self.confirmed + k, sink);
                if let Some(m) = m {
                    self.extend(&[m], now, sink);
                }
                self.on_match(sink);
                return;
            }
        }
    }

    /// Deep search from the tip and each provisional base, then takebacks.
    fn deep_eval<S: EventSink + ?Sized>(&mut self, now: u64, sink: &mut S) {
        self.dirty = false;
        if self.state != GameState::Active {
            return;
        }
        let target = self.phys.board.clone();
        if !self.phys.magic.any() && has_two_kings(&target) {
            let depth = self.config.search_depth.max(1);
            let prov = self.records.len() - self.confirmed;
            for k in (0..=prov).rev() {
                let Some(pos) = self.position_at(self.confirmed + k) else { break };
                if let Some(path) = search::find_line(&pos, &target, depth) {
                    // A piece out and back again inside the line leaves no trace: when an
                    // earlier position explains the board as well, it is a takeback.
                    if search::has_out_and_back(&path)
                        && let Some(j) = self.find_earlier(&target)
                    {
                        self.takeback_to(j, sink);
                        self.on_match(sink);
                        return;
                    }
                    self.retract_to(self.confirmed + k, sink);
                    self.extend(&path, now, sink);
                    self.on_match(sink);
                    return;
                }
            }
            if let Some(j) = self.find_earlier(&target) {
                self.takeback_to(j, sink);
                self.on_match(sink);
                return;
            }
        }
        if self.unexplained_since.is_none() {
            self.unexplained_since = Some(now);
        }
    }

    /// The latest confirmed earlier position (plies kept) whose placement is `target`.
    fn find_earlier(&self, target: &Board) -> Option<usize> {
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

    fn takeback_to<S: EventSink + ?Sized>(&mut self, j: usize, sink: &mut S) {
        self.retract_to(self.confirmed, sink);
        let Some(pos) = self.position_at(j) else { return };
        self.records.truncate(j);
        self.confirmed = j;
        self.confirmed_pos = pos.clone();
        self.tip = pos;
        // %emt of the next moves counts from the remaining plies' clocks.
        let mut prev = [None, None];
        let mut turn = self.start.turn();
        for rec in &self.records {
            prev[usize::from(turn == Color::Black)] = rec.clk().or(prev[usize::from(turn == Color::Black)]);
            turn = !turn;
        }
        self.clocks.prev_clk = prev;
        sink.event(Event::Takeback { to_ply: j as u16 });
    }

    /// The squares differing from the nearest explainable position: the tip, a provisional
    /// base, or a one-ply successor of the tip.
    fn nearest_diff(&self) -> Bitboard {
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

    // ----- internals: the line ---------------------------------------------------------

    fn extend<S: EventSink + ?Sized>(&mut self, moves: &[Move], now: u64, sink: &mut S) {
        for &m in moves {
            if self.records.len() - self.confirmed >= MAX_PROVISIONAL {
                // Proven by the plies that followed it.
                self.confirm_through(self.confirmed + 1, None, now, sink);
            }
            let mut after = self.tip.clone();
            after.play_unchecked(m);
            if self.records.push(PlyRecord::new(m, placement_hash(after.board()))).is_err() {
                if !self.full_reported {
                    self.full_reported = true;
                    sink.event(Event::CapacityFull);
                }
                return;
            }
            let idx = self.records.len() - 1 - self.confirmed;
            self.seen_ms[idx.min(MAX_PROVISIONAL - 1)] = now;
            let info = MoveInfo {
                ply: self.records.len() as u16,
                color: self.tip.turn(),
                uci: m.to_uci(self.castling_mode),
                san: SanPlus::from_move(self.tip.clone(), m),
                clk: None,
                emt: None,
            };
            self.tip = after;
            sink.event(Event::MoveProvisional(info));
        }
    }

    /// Withdraws provisional plies until `len` remain (never confirmed ones).
    fn retract_to<S: EventSink + ?Sized>(&mut self, len: usize, sink: &mut S) {
        let len = len.max(self.confirmed);
        if self.records.len() <= len {
            return;
        }
        while self.records.len() > len {
            let ply = self.records.len() as u16;
            self.records.pop();
            sink.event(Event::MoveRetracted { ply });
        }
        if let Some(pos) = self.position_at(len) {
            self.tip = pos;
        }
    }

    /// Index one past the last provisional ply made by `color`.
    fn last_ply_by(&self, color: Color) -> Option<usize> {
        let mut turn = self.confirmed_pos.turn();
        let mut found = None;
        for i in self.confirmed..self.records.len() {
            if turn == color {
                found = Some(i + 1);
            }
            turn = !turn;
        }
        found
    }

    /// Applies presses that came before the board showed the move, oldest first, once the
    /// board is still (or at once when `immediate`).
    fn resolve_pending<S: EventSink + ?Sized>(&mut self, now: u64, immediate: bool, sink: &mut S) {
        let mut order = [0usize, 1];
        if let [Some((_, a)), Some((_, b))] = self.pending_press
            && b < a
        {
            order = [1, 0];
        }
        for i in order {
            let Some((press, t)) = self.pending_press[i] else { continue };
            if now.saturating_sub(t) > u64::from(self.config.press_window_ms) {
                self.pending_press[i] = None;
                continue;
            }
            let settled = now.saturating_sub(self.last_change_ms) >= u64::from(self.config.settle_ms);
            if self.at_tip
                && !self.dirty
                && (settled || immediate)
                && let Some(upto) = self.last_ply_by(press.by)
            {
                self.pending_press[i] = None;
                self.confirm_through(upto, Some(&press), now, sink);
            }
        }
    }

    /// Confirms provisional plies until `upto` are confirmed.
    fn confirm_through<S: EventSink + ?Sized>(
        &mut self,
        upto: usize,
        press: Option<&Press>,
        now: u64,
        sink: &mut S,
    ) {
        let upto = upto.min(self.records.len());
        // The press belongs to the last ply of the presser within the range.
        let press_ply = press.and_then(|p| {
            let mut turn = self.confirmed_pos.turn();
            let mut last = None;
            for i in self.confirmed..upto {
                if turn == p.by {
                    last = Some(i);
                }
                turn = !turn;
            }
            last
        });
        while self.confirmed < upto {
            let i = self.confirmed;
            let pos = self.confirmed_pos.clone();
            let Some(m) = self.records[i].to_move(&pos) else { break };
            let color = pos.turn();
            let move_number = pos.fullmoves().get();
            let seen = self.seen_ms[0];
            let (clk, emt) = match (press, self.clocks.last) {
                (Some(p), _) if press_ply == Some(i) => {
                    let clk = self.clocks.time_of(&self.config, &p.reading, color);
                    (Some(clk), self.clocks.account(&self.config, color, move_number, clk, p.jump))
                }
                (_, Some(r)) => {
                    let clk = self.clocks.time_of(&self.config, &r, color);
                    (Some(clk), self.clocks.account(&self.config, color, move_number, clk, None))
                }
                (_, None) => {
                    let ms = seen.saturating_sub(self.last_confirmed_seen_ms);
                    (None, Some(((ms + 500) / 1000) as u32))
                }
            };
            self.records[i].clk = to16(clk);
            self.records[i].emt = to16(emt);
            let info = MoveInfo {
                ply: (i + 1) as u16,
                color,
                uci: m.to_uci(self.castling_mode),
                san: SanPlus::from_move(pos, m),
                clk,
                emt,
            };
            self.confirmed_pos.play_unchecked(m);
            self.confirmed += 1;
            self.seen_ms.copy_within(1.., 0);
            self.last_confirmed_seen_ms = seen;
            self.clocks.fix_mapping();
            sink.event(Event::MoveConfirmed(info));
            if self.check_position_end(sink) {
                return;
            }
        }
        let _ = now;
    }

    /// Mate or stalemate after a confirmed ply ends the game. (A dead position does not: the
    /// players may play on, and the board cannot know whether the arbiter stepped in.)
    fn check_position_end<S: EventSink + ?Sized>(&mut self, sink: &mut S) -> bool {
        let pos = &self.confirmed_pos;
        let end = if pos.is_checkmate() {
            Some((GameResult::win_for(!pos.turn()), EndReason::Checkmate))
        } else if pos.is_stalemate() {
            Some((GameResult::Draw, EndReason::Stalemate))
        } else {
            None
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

    fn end_game<S: EventSink + ?Sized>(&mut self, result: GameResult, reason: EndReason, sink: &mut S) {
        self.result = Some((result, reason));
        self.state = GameState::Over;
        self.pending_press = [None, None];
        self.dirty = false;
        self.unexplained_since = None;
        if self.mismatch.take().is_some() {
            sink.event(Event::PositionRecovered);
        }
        sink.event(Event::GameEnded { result, reason });
    }
}

fn is_king_to_centre(m: Move) -> bool {
    matches!(m, Move::Normal { role: Role::King, to, .. } if CENTRE.contains(to))
}
