//! The tracker: board and clock messages in, certain moves out.
//!
//! The type, its public API (input, operator, queries) and its state live here; the
//! machinery is split by concern:
//! - `input`: messages and time in; where each reading goes next.
//! - `matching`: the physical board against the line (fast and deep search,
//!   takebacks, mismatches).
//! - `pressed`: what the clock presses say about how to read the board.
//! - `line`: the provisional and confirmed plies, and when a ply becomes final.
//! - `lifecycle`: game start (standard, Chess960, operator position) and end (mate,
//!   stalemate, kings in the centre, magic pieces, flag fall, operator).
//! - `record`: the compact per-ply record.

mod ahead;
mod input;
mod lifecycle;
mod line;
mod matching;
pub use matching::Reading;
mod pressed;
mod record;

use record::PlyRecord;

use dgt_protocol::{
    BoardDump, ClockSide, ClockStatus, ClockTime, ClockTimes, Orientation, SideFlags, SideReading,
};
use shakmaty::{
    Bitboard, Board, CastlingMode, Chess, EnPassantMode, FromSetup, Position, Setup, fen::Fen, san::SanPlus,
    uci::UciMove,
};

use crate::board::{PhysBoard, placement_hash};
use crate::clock::{Clocks, Press};
use crate::config::Config;
use crate::event::{ClockState, EndReason, EventSink, GameResult, MoveInfo, StartKind};
use crate::fen::FenText;

/// Most provisional plies kept at once; older ones are proven by those that follow.
const MAX_PROVISIONAL: usize = 8;
/// Clock presses kept while waiting for the board to show the moves (a burst of plies),
/// or for plies of an unknown order to be confirmed: one for each provisional ply, and
/// those of the moves under way.
const PENDING_PRESSES: usize = MAX_PROVISIONAL + 4;
/// Positions the board was seen showing that are remembered (see `seen_boards`).
const SEEN_BOARDS: usize = 16;
/// Boards reported whole that are remembered (see `shown_boards`).
const SHOWN_BOARDS: usize = 8;
/// Boards reported whole after presses that are remembered (see `pressed_boards`).
const PRESSED_BOARDS: usize = 4;
/// Field updates closer together than this (ms) are one scan of the board being reported.
pub(crate) const SAME_SCAN_MS: u64 = 20;
/// A running clock that has sent nothing for this long is treated as absent.
const CLOCK_STALE_MS: u64 = 5000;
/// Keeps `hash` as the newest of a ring of placement hashes (the oldest dropped when it is
/// full), unless it is the newest already.
fn remember<const N: usize>(ring: &mut heapless::Vec<u32, N>, hash: u32) {
    if ring.last() == Some(&hash) {
        return;
    }
    if ring.is_full() {
        ring.remove(0);
    }
    let _ = ring.push(hash);
}

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

/// A clock press waiting for the board to show the move.
#[derive(Clone, Copy, Debug)]
struct PendingPress {
    press: Press,
    /// When it came.
    at: u64,
    /// When it stops waiting: [`Config::press_window_ms`] after it came, plus any time the
    /// board was away meanwhile (it could not show the move then).
    expires: u64,
    /// The ply it was bound to, with that ply's placement hash (see `add_pending_press`).
    bound: Option<(usize, u32)>,
}

/// A board the board reported whole (unchanged for a scan) while two or more presses, one
/// by each player in turn, were waiting for their plies: what the players left on the board
/// when they said their moves were done.
#[derive(Clone, Debug)]
struct PressedBoard {
    board: Board,
    /// How many of the presses waiting since the last confirmed ply had come.
    presses: u8,
    /// When the last of them came (to tell whether they are still the ones waiting).
    last_press_at: u64,
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

/// Why a game could not be resumed ([`Tracker::resume`]). The tracker is then idle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResumeError {
    /// The move at this ply (1-based) is not legal in the position before it.
    IllegalMove {
        /// The ply.
        ply: usize,
    },
    /// The game has more plies than the tracker holds.
    TooManyPlies,
}

impl core::fmt::Display for ResumeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ResumeError::IllegalMove { ply } => write!(f, "the move at ply {ply} is not legal there"),
            ResumeError::TooManyPlies => f.write_str("more plies than the tracker holds"),
        }
    }
}

/// One confirmed ply of a game being resumed: the move and its clock values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResumePly {
    /// The move, in UCI (castling as king-to-target or king-takes-rook).
    pub uci: UciMove,
    /// The mover's clock after the move, seconds (`%clk`).
    pub clk: Option<u32>,
    /// Time spent on the move, seconds (`%emt`).
    pub emt: Option<u32>,
}

/// The board tracker for one e-board and clock, with room for `PLIES` plies per game.
///
/// Feed it every decoded message with the caller's monotonic time ([`Tracker::feed`]),
/// call [`Tracker::tick`] regularly (every 50 to 100 ms is plenty) so that time-based
/// decisions happen without new bytes, and act on the [`Event`](crate::Event)s it emits.
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
    /// When the board began showing each provisional ply, by ply index modulo
    /// `MAX_PROVISIONAL` (see `shown_at`).
    shown_ms: [u64; MAX_PROVISIONAL],
    /// Which provisional plies, by ply index modulo `MAX_PROVISIONAL`, are one of several
    /// move orders to the board (see `first_hidden`).
    hidden: [bool; MAX_PROVISIONAL],
    /// The ply the operator was last told to check for an unknown move order.
    order_alerted: Option<u16>,
    /// The board is back from an outage and no reading has been explained since: the
    /// moves made meanwhile are reconciled by the caller (the board's event log, or the
    /// position with the operator told), not kept unconfirmed as an unknown order.
    back_from_outage: bool,
    /// Which provisional plies were read together with another one from a single reading
    /// (a search of two or more plies): see `line_verified`.
    joint: [bool; MAX_PROVISIONAL],
    /// Which provisional plies the board stood still at as the last of the line for longer
    /// than a sliding hand rests: not a passing state of a hand (see
    /// `best_line_keeping_stood`).
    stood: [bool; MAX_PROVISIONAL],
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
    /// Placement hashes of the last positions the board was seen showing (matched), to
    /// tell apart move orders that reach the same board.
    seen_boards: heapless::Vec<u32, SEEN_BOARDS>,
    /// Placement hashes of the last boards the board reported whole (unchanged for a scan),
    /// whether or not the line matched them: a position shown for less than the settle
    /// time is never searched, yet says which way the pieces went.
    shown_boards: heapless::Vec<u32, SHOWN_BOARDS>,
    /// Boards reported whole after presses for their plies (see
    /// `line_through_pressed_board`).
    pressed_boards: heapless::Vec<PressedBoard, PRESSED_BOARDS>,
    /// Squares changed by field updates since the board left the tip.
    touched_off_tip: Bitboard,
    unexplained_since: Option<u64>,
    mismatch: Option<Bitboard>,
    last_dump_request: Option<u64>,
    /// When the last dump arrived: the only reading not open to a lost field update.
    last_dump_ms: Option<u64>,
    /// Until the next field update: the plies before this index are all the last dump left
    /// standing as the field updates showed them (see `plies_a_dump_leaves`).
    dump_leaves: Option<usize>,
    /// Presses, oldest first, still waiting for the board to show the move.
    pending_press: heapless::Vec<PendingPress, PENDING_PRESSES>,
    /// The side whose lever was high at the last clock reading.
    lever: Option<ClockSide>,
    /// When each side's player (left, right) last pressed the clock in this game: the
    /// lever went down on their side while the clock ran. Read from the lever alone, so it
    /// holds whatever the press bookkeeping made of the reading.
    last_press_ms: [Option<u64>; 2],
    pub(crate) clocks: Clocks,
    last_clock_state: ClockState,
    armed_orientation: Option<Orientation>,
    full_reported: bool,
    /// Confirmed plies restored by the last [`Tracker::resume`] (0 for a game started here).
    resumed_at: usize,
    /// Since when the link to the board has been gone ([`Tracker::board_away`]), until the
    /// next message from it.
    away_since: Option<u64>,
    /// Since when the board has shown a result signal (both kings in the centre, or a magic
    /// piece), until it has stood long enough to end the game (see `check_board_result`).
    centre_since: Option<u64>,
    /// The board being evaluated is the first dump this tracker has seen.
    first_look: bool,
}

impl<const PLIES: usize> Default for Tracker<PLIES> {
    fn default() -> Self {
        Self::new(Config::default())
    }
}

impl<const PLIES: usize> Tracker<PLIES> {
    /// A tracker waiting for its first board dump.
    ///
    /// Always inlined: a caller that writes it straight into a heap allocation
    /// (`Box::write(Box::new_uninit(), Tracker::new(config))`) then builds it in place,
    /// instead of in a stack frame of the tracker's whole size.
    #[inline(always)]
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
            shown_ms: [0; MAX_PROVISIONAL],
            hidden: [false; MAX_PROVISIONAL],
            order_alerted: None,
            back_from_outage: false,
            joint: [false; MAX_PROVISIONAL],
            stood: [false; MAX_PROVISIONAL],
            last_confirmed_seen_ms: 0,
            result: None,
            last_change_ms: 0,
            dirty: false,
            at_tip: false,
            tip_left_ms: 0,
            touched_off_tip: Bitboard::EMPTY,
            seen_boards: heapless::Vec::new(),
            shown_boards: heapless::Vec::new(),
            pressed_boards: heapless::Vec::new(),
            unexplained_since: None,
            mismatch: None,
            last_dump_request: None,
            last_dump_ms: None,
            dump_leaves: None,
            pending_press: heapless::Vec::new(),
            lever: None,
            last_press_ms: [None; 2],
            clocks: Clocks::new(),
            last_clock_state: ClockState::default(),
            armed_orientation: None,
            full_reported: false,
            resumed_at: 0,
            away_since: None,
            centre_since: None,
            first_look: false,
        }
    }

    /// Makes this tracker what [`Tracker::new`] makes, in place. A tracker restarted
    /// this way (a flip, a correction) needs no second tracker's worth of stack, which a
    /// new one built and moved into place takes: on a microcontroller that is most of the
    /// stack. Every field is named, so a field added to the tracker must be reset here.
    pub fn reset(&mut self, config: Config) {
        let Tracker {
            config: c,
            phys,
            state,
            kind,
            start,
            start_hash,
            castling_mode,
            records,
            confirmed,
            confirmed_pos,
            tip,
            seen_ms,
            shown_ms,
            hidden,
            order_alerted,
            back_from_outage,
            joint,
            stood,
            last_confirmed_seen_ms,
            result,
            last_change_ms,
            dirty,
            at_tip,
            tip_left_ms,
            seen_boards,
            shown_boards,
            pressed_boards,
            touched_off_tip,
            unexplained_since,
            mismatch,
            last_dump_request,
            last_dump_ms,
            dump_leaves,
            pending_press,
            lever,
            last_press_ms,
            clocks,
            last_clock_state,
            armed_orientation,
            full_reported,
            resumed_at,
            away_since,
            centre_since,
            first_look,
        } = self;
        *c = config;
        *phys = PhysBoard::new();
        *state = GameState::Idle;
        *kind = StartKind::Standard;
        *start = Chess::default();
        *start_hash = placement_hash(Chess::default().board());
        *castling_mode = CastlingMode::Standard;
        records.clear();
        *confirmed = 0;
        *confirmed_pos = Chess::default();
        *tip = Chess::default();
        *seen_ms = [0; MAX_PROVISIONAL];
        *shown_ms = [0; MAX_PROVISIONAL];
        *hidden = [false; MAX_PROVISIONAL];
        *order_alerted = None;
        *back_from_outage = false;
        *joint = [false; MAX_PROVISIONAL];
        *stood = [false; MAX_PROVISIONAL];
        *last_confirmed_seen_ms = 0;
        *result = None;
        *last_change_ms = 0;
        *dirty = false;
        *at_tip = false;
        *tip_left_ms = 0;
        seen_boards.clear();
        shown_boards.clear();
        pressed_boards.clear();
        *touched_off_tip = Bitboard::EMPTY;
        *unexplained_since = None;
        *mismatch = None;
        *last_dump_request = None;
        *last_dump_ms = None;
        *dump_leaves = None;
        pending_press.clear();
        *lever = None;
        *last_press_ms = [None; 2];
        *clocks = Clocks::new();
        *last_clock_state = ClockState::default();
        *armed_orientation = None;
        *full_reported = false;
        *resumed_at = 0;
        *away_since = None;
        *centre_since = None;
        *first_look = false;
    }

    /// The settings in use.
    pub fn config(&self) -> &Config {
        &self.config
    }

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

    /// Resumes a game with its history, e.g. after a restart of the program: the game
    /// started from `start` (castling `mode`), and `moves` are its confirmed plies in order
    /// with their `%clk`/`%emt`. The board is set up as `orientation`.
    ///
    /// The line is restored as if the tracker had followed it: ply numbers go on from
    /// there, takebacks may go back before the resume point, a return to an earlier
    /// position is recognised, and [`Tracker::write_pgn`] holds the whole game. Emits no
    /// [`Event::GameStarted`] and no move events for the restored plies; the game is
    /// active at once (or over, with [`Event::GameEnded`], when the last ply mates or
    /// stalemates), and the next board reading is matched against its last position.
    /// The start kind is inferred: the standard position, a Chess960 start (in Chess960
    /// mode), else an operator position. A configured time control gives the start
    /// clocks; the clocks' sides are learned from the next readings.
    ///
    /// On error the tracker is idle (no game), and nothing was emitted.
    ///
    /// [`Event::GameStarted`]: crate::Event::GameStarted
    /// [`Event::GameEnded`]: crate::Event::GameEnded
    pub fn resume<S, I>(
        &mut self,
        start: Chess,
        mode: CastlingMode,
        orientation: Orientation,
        moves: I,
        now_ms: u64,
        sink: &mut S,
    ) -> Result<(), ResumeError>
    where
        S: EventSink + ?Sized,
        I: IntoIterator<Item = ResumePly>,
    {
        self.resume_game(start, mode, orientation, moves, now_ms, sink)
    }

    /// Ends the game with a result the operator gives (resignation, agreement, arbiter).
    /// Provisional moves are withdrawn.
    pub fn declare_result<S: EventSink + ?Sized>(&mut self, result: GameResult, sink: &mut S) {
        if self.state == GameState::Active {
            self.retract_to(self.confirmed, sink);
            self.end_game(result, EndReason::Operator, sink);
        }
    }

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

    /// Confirms the provisional plies up to `plies` in all, known to be over from outside
    /// the board's readings: its own event log showed the game going on after them (a
    /// board back from an outage). They get a `%clk` only where the clock still shows it.
    pub fn confirm_plies<S: EventSink + ?Sized>(&mut self, plies: usize, now_ms: u64, sink: &mut S) {
        if self.state == GameState::Active && plies > self.confirmed {
            self.confirm_through(plies.min(self.records.len()), None, now_ms, sink);
        }
    }

    /// The link to the board is gone (its port was lost): until the next message from it,
    /// nothing is decided by time. A board nobody can hear is not a board standing still:
    /// quiet time would confirm a move its player may be taking back, and presses waiting
    /// for the board would run out while it cannot answer. The next message ends the
    /// outage: stillness counts from then, and waiting presses get back the time they lost.
    pub fn board_away(&mut self, now_ms: u64) {
        self.away_since.get_or_insert(now_ms);
        self.clocks.board_away();
    }

    /// True while the board is away ([`Tracker::board_away`]).
    pub fn is_board_away(&self) -> bool {
        self.away_since.is_some()
    }

    /// A clock press nobody saw, read from the board's own event log (a board back from an
    /// outage): the presser's display `side` and the `time` it showed after the press (the
    /// board logs the halted side's time when the lever moves). The presser's last
    /// provisional ply is confirmed with that `%clk` (and `%emt` by clock arithmetic);
    /// earlier provisional plies are confirmed as by [`Tracker::confirm_plies`]. A tracker
    /// that has not read the clock yet (a game resumed after a restart of the program, its
    /// board's log replayed before the clock's first report) needs no reading: only the
    /// presser's display is used. Returns false, doing nothing, without a game, or when the
    /// presser has no provisional ply (the log may hold the press before the landing of its
    /// move: the board logs a square when it scans it).
    pub fn confirm_logged_press<S: EventSink + ?Sized>(
        &mut self,
        side: ClockSide,
        time: ClockTime,
        now_ms: u64,
        sink: &mut S,
    ) -> bool {
        if self.state != GameState::Active {
            return false;
        }
        let mut reading = self.clocks.last.unwrap_or_else(|| {
            // The press leaves the other side running.
            let zero = SideReading { time: ClockTime::from_seconds(0), flags: SideFlags::default() };
            let status = if side == ClockSide::Left { 0x03 } else { 0x01 };
            ClockTimes { right: zero, left: zero, status: ClockStatus(status) }
        });
        let by = self.clocks.owner(&self.config, side);
        let Some(upto) = self.last_ply_by(by) else { return false };
        match side {
            ClockSide::Left => reading.left.time = time,
            ClockSide::Right => reading.right.time = time,
        }
        if upto > self.confirmed + 1 {
            self.confirm_through(upto - 1, None, now_ms, sink);
        }
        if self.state == GameState::Active && upto == self.confirmed + 1 {
            let press = Press { by, side, reading, jump: None };
            self.confirm_through(upto, Some(&press), now_ms, sink);
        }
        true
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

    /// The castling rules of the game (Chess960 for a Chess960 start or an operator
    /// position whose castling rights need them).
    pub fn castling_mode(&self) -> CastlingMode {
        self.castling_mode
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
                fen: {
                    pos.play_unchecked(m);
                    FenText::of(&pos)
                },
            };
            f(&info);
        }
    }

    /// White's clock display, once it is certain for the rest of the game: configured, or a
    /// move was confirmed with it while the clock ran (a caller that keeps the game, as in a
    /// journal, keeps this with it and gives it back with
    /// [`Tracker::set_white_clock_side`] when it resumes the game). `None` while it is still
    /// being learned from the lever.
    pub fn white_clock_side(&self) -> Option<ClockSide> {
        self.clocks.fixed_white_side()
    }

    /// Sets White's clock display for the rest of the game, as [`Tracker::white_clock_side`]
    /// told it before (call it after [`Tracker::resume`], before any clock reading): a resumed
    /// game does not learn it again from the lever, which a restart in the middle of a game
    /// would read the wrong way round whenever the side to move is not the side the
    /// journal's last move says.
    pub fn set_white_clock_side(&mut self, side: ClockSide) {
        self.clocks.set_white_side(side);
    }

    /// Both clocks as last read, mapped to colours.
    pub fn clocks(&self) -> ClockState {
        self.clocks.state(&self.config)
    }

    /// The live `Clock` tag value: `W/1:34:56` (White's clock runs), `B/…`, or `N/…` when
    /// stopped (the time of the side to move). `None` without a clock reading.
    pub fn write_clock_tag<W: core::fmt::Write>(&self, w: &mut W) -> core::fmt::Result {
        crate::pgn::write_clock_value(&self.clocks(), self.tip.turn(), w)
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
}
