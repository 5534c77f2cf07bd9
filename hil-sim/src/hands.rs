//! The hand-action generator: a pure function from a game, a noise profile and a seed to
//! the timed actions of a replay and its ground truth.
//!
//! Timing: the clock press of each ply is put where the game's `%clk` says (the planner
//! runs its own copy of the DGT 3000 model to find the press time that makes the display
//! show the source's reading), or where `%emt` says, or after a made-up thinking time.
//! The hand gesture of the move ends shortly before the press. Scan windows are known
//! (snapshots at multiples of the scan period from the scenario's start), so profiles that
//! need several changes inside one scan, or each change in its own scan, get them.

use std::collections::BTreeMap;

use dgt_protocol::{ClockSide, Orientation};
use shakmaty::{Bitboard, Board, Chess, Color, File, Move, Piece, Position, Role, Square, attacks};

use crate::SimError;
use crate::clock::{Button, Dgt3000};
use crate::pgn::SourceGame;
use crate::rng::Rng;
use crate::scenario::{Action, ClockSetup, Scenario, Setup, TimedAction};
use crate::truth::{ClockTruth, GroundTruth, PlyTruth};

/// The fastest a player makes a ply after the opponent's press (ms): see the move, lift,
/// put down, press. Fast blitz hands; two players' plies this far apart are not read by
/// one 200 ms scan.
const FASTEST_PLY_MS: u64 = 400;

/// A noise profile: how the hands (and the cable, and the line) behave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Profile {
    /// Every move made cleanly: lift, place, press (captures: victim first; castling: king
    /// first; promotion: the new piece put straight on).
    Clean,
    /// Captures in every hand order: victim first, mover first, and a swap inside one scan.
    CaptureOrders,
    /// Castling in every hand order.
    CastlingOrders,
    /// En passant with the victim taken off first, last or in between.
    EnPassant,
    /// Promotion: the pawn put on the last rank then swapped, or the new piece directly.
    Promotion,
    /// Long moves slid through the squares in between, each seen by a scan.
    Slide,
    /// The moved piece adjusted, a neighbour nudged and put back.
    Adjust,
    /// The piece put on its new square before it leaves the old one (seen in one scan).
    Reorder,
    /// Two or three plies between two scans; sometimes a forgotten clock press.
    Burst,
    /// A wrong move made, left on the board, taken back, then the real move.
    Takeback,
    /// A piece knocked over (or onto the next square) and put back.
    KnockOver,
    /// Field updates lost on the line; board dumps stay right.
    DroppedUpdates,
    /// The board unplugged and plugged back in mid-game.
    Disconnect,
    /// Garbage bytes on the line between messages.
    Garbage,
    /// The board set up the other way round (White at the connector's right).
    Rotated,
    /// No clock attached.
    NoClock,
    /// A seeded mix of all of the above.
    Mixed,
}

impl Profile {
    /// Every profile.
    pub const ALL: [Profile; 17] = [
        Profile::Clean,
        Profile::CaptureOrders,
        Profile::CastlingOrders,
        Profile::EnPassant,
        Profile::Promotion,
        Profile::Slide,
        Profile::Adjust,
        Profile::Reorder,
        Profile::Burst,
        Profile::Takeback,
        Profile::KnockOver,
        Profile::DroppedUpdates,
        Profile::Disconnect,
        Profile::Garbage,
        Profile::Rotated,
        Profile::NoClock,
        Profile::Mixed,
    ];

    /// The profile's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Clean => "clean",
            Profile::CaptureOrders => "capture-orders",
            Profile::CastlingOrders => "castling-orders",
            Profile::EnPassant => "en-passant",
            Profile::Promotion => "promotion",
            Profile::Slide => "slide",
            Profile::Adjust => "adjust",
            Profile::Reorder => "reorder",
            Profile::Burst => "burst",
            Profile::Takeback => "takeback",
            Profile::KnockOver => "knock-over",
            Profile::DroppedUpdates => "dropped-updates",
            Profile::Disconnect => "disconnect",
            Profile::Garbage => "garbage",
            Profile::Rotated => "rotated",
            Profile::NoClock => "no-clock",
            Profile::Mixed => "mixed",
        }
    }

    /// Parses a profile name.
    pub fn parse(name: &str) -> Result<Profile, SimError> {
        Profile::ALL
            .into_iter()
            .find(|p| p.name() == name.trim())
            .ok_or_else(|| SimError::Profile(name.to_string(), Profile::ALL.map(Profile::name).join(", ")))
    }
}

impl std::fmt::Display for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How the end of the game is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GameEnd {
    /// From the result: checkmate/stalemate show themselves; a draw by the kings in the
    /// centre; a win by resignation (the clock stopped), by flag fall when the source says
    /// the game was lost on time, or by the kings without a clock.
    Auto,
    /// The DGT convention: both kings on the centre squares.
    KingsInCentre,
    /// The loser stops the clock.
    Resignation,
    /// The side to move lets its time run out.
    FlagFall,
    /// Nothing after the last move.
    Nothing,
}

impl GameEnd {
    /// Parses `auto`, `kings`, `resign`, `flag`, `none`.
    pub fn parse(name: &str) -> Option<GameEnd> {
        Some(match name {
            "auto" => GameEnd::Auto,
            "kings" | "kings-in-centre" => GameEnd::KingsInCentre,
            "resign" | "resignation" => GameEnd::Resignation,
            "flag" | "flag-fall" => GameEnd::FlagFall,
            "none" => GameEnd::Nothing,
            _ => return None,
        })
    }
}

/// Inputs of the planner besides the game.
#[derive(Clone, Debug)]
pub struct PlanOptions {
    /// The noise profile.
    pub profile: Profile,
    /// The seed: same inputs, same plan.
    pub seed: u64,
    /// The board's scan period (0: every change reported at once).
    pub scan_period_ms: u64,
    /// How the game's end is shown.
    pub end: GameEnd,
    /// Virtual milliseconds between the scenario's start and the clock's start.
    pub start_delay_ms: u64,
    /// Thinking time range when the source gives none, in virtual milliseconds.
    pub default_think_ms: (u64, u64),
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            profile: Profile::Clean,
            seed: 0,
            scan_period_ms: 200,
            end: GameEnd::Auto,
            start_delay_ms: 2_000,
            default_think_ms: (2_000, 12_000),
        }
    }
}

/// Probabilities of each kind of noise, per ply (or per game for the board setup).
#[derive(Clone, Debug, Default)]
struct Knobs {
    capture_orders: bool,
    castling_orders: bool,
    ep_orders: bool,
    promo_swap: f64,
    slide: f64,
    adjust: f64,
    nudge: f64,
    reorder: f64,
    burst: f64,
    forgot_press: f64,
    takeback: f64,
    knock: f64,
    drop: f64,
    garbage: f64,
    disconnects: u32,
    rotated: bool,
    no_clock: bool,
}

impl Knobs {
    fn for_profile(p: Profile, rng: &mut Rng) -> Knobs {
        let mut k = Knobs::default();
        match p {
            Profile::Clean => {}
            Profile::CaptureOrders => k.capture_orders = true,
            Profile::CastlingOrders => k.castling_orders = true,
            Profile::EnPassant => k.ep_orders = true,
            Profile::Promotion => k.promo_swap = 0.5,
            Profile::Slide => k.slide = 0.8,
            Profile::Adjust => {
                k.adjust = 0.3;
                k.nudge = 0.2;
            }
            Profile::Reorder => k.reorder = 0.6,
            Profile::Burst => {
                k.burst = 0.25;
                k.forgot_press = 0.35;
            }
            Profile::Takeback => k.takeback = 0.12,
            Profile::KnockOver => k.knock = 0.12,
            Profile::DroppedUpdates => k.drop = 0.15,
            Profile::Disconnect => k.disconnects = 2,
            Profile::Garbage => k.garbage = 0.2,
            Profile::Rotated => k.rotated = true,
            Profile::NoClock => k.no_clock = true,
            Profile::Mixed => {
                k = Knobs {
                    capture_orders: true,
                    castling_orders: true,
                    ep_orders: true,
                    promo_swap: 0.4,
                    slide: 0.15,
                    adjust: 0.05,
                    nudge: 0.03,
                    reorder: 0.12,
                    burst: 0.05,
                    forgot_press: 0.3,
                    takeback: 0.02,
                    knock: 0.02,
                    drop: 0.03,
                    garbage: 0.03,
                    disconnects: u32::from(rng.chance(0.3)),
                    rotated: rng.chance(0.2),
                    no_clock: rng.chance(0.1),
                };
            }
        }
        k
    }
}

/// One step of a gesture: a pause, then an action.
#[derive(Clone, Debug)]
struct Step {
    gap: u64,
    action: Action,
}

fn step(gap: u64, action: Action) -> Step {
    Step { gap, action }
}

fn lift(gap: u64, square: Square) -> Step {
    step(gap, Action::Lift { square })
}

fn place(gap: u64, square: Square, piece: Piece) -> Step {
    step(gap, Action::Place { square, piece })
}

struct Planner<'a> {
    game: &'a SourceGame,
    opts: &'a PlanOptions,
    rng: Rng,
    knobs: Knobs,
    p: u64,
    actions: Vec<TimedAction>,
    events_used: BTreeMap<String, u32>,
    /// The planner's copy of the clock (also kept without a clock, for timing).
    clock: Dgt3000,
    has_clock: bool,
    white_side: ClockSide,
}

/// Plans the replay of `game`: the board setup, the timed actions, the ground truth.
pub fn plan_game(game: &SourceGame, opts: &PlanOptions) -> Scenario {
    let mut rng = Rng::derive(opts.seed, game.index as u64);
    let knobs = Knobs::for_profile(opts.profile, &mut rng);
    let orientation = if knobs.rotated { Orientation::Rotated } else { Orientation::Normal };
    // White's display: left on a normal board, right on a rotated one (as in the captures).
    let white_side = if knobs.rotated { ClockSide::Right } else { ClockSide::Left };
    let (tc, inferred) = game.time_control();
    let t0 = opts.start_delay_ms;
    let first_side = if game.start.turn() == Color::White { white_side } else { white_side.other() };
    let mut planner = Planner {
        game,
        opts,
        rng,
        p: opts.scan_period_ms,
        actions: Vec::new(),
        events_used: BTreeMap::new(),
        clock: Dgt3000::new(tc.clone(), first_side, 0),
        has_clock: !knobs.no_clock,
        white_side,
        knobs,
    };
    if planner.has_clock {
        planner.push(t0, Action::StartClock);
    }
    planner.clock.start(t0);
    let (moves, final_pos, mut last_press) = planner.plies(t0);
    let (end, end_board) = planner.end(&final_pos, last_press);
    last_press = planner.actions.last().map_or(last_press, |a| a.at_ms.max(last_press));
    let end_at = last_press + 1_000;
    planner.push(end_at, Action::End);
    planner.actions.sort_by_key(|a| a.at_ms);
    for kind in [("rotated", planner.knobs.rotated), ("no_clock", planner.knobs.no_clock)] {
        if kind.1 {
            *planner.events_used.entry(kind.0.into()).or_default() += 1;
        }
    }
    let clock_truth = planner.has_clock.then(|| ClockTruth {
        time_control: tc.to_string(),
        white_side: if white_side == ClockSide::Left { "left".into() } else { "right".into() },
        inferred,
    });
    let truth = GroundTruth {
        tags: game.tags.clone(),
        start_fen: shakmaty::fen::Fen::from_position(&game.start, shakmaty::EnPassantMode::Legal).to_string(),
        profile: opts.profile.name().into(),
        seed: opts.seed,
        orientation: if orientation == Orientation::Rotated { "rotated".into() } else { "normal".into() },
        clock: clock_truth,
        moves,
        result: game.result.clone(),
        end,
        final_fen: shakmaty::fen::Fen::from_position(&final_pos, shakmaty::EnPassantMode::Legal).to_string(),
        final_board: end_board.to_string(),
        events_used: planner.events_used,
        truncated: game.truncated.clone(),
        duration_ms: end_at,
        expected_result: None,
        accept_results: Vec::new(),
    };
    Scenario {
        setup: Setup {
            orientation,
            clock: truth.clock.as_ref().map(|_| ClockSetup { time_control: tc, white_side, first_side }),
            position: game.start.board().clone(),
        },
        actions: planner.actions,
        truth: Some(truth),
    }
}

impl Planner<'_> {
    fn push(&mut self, at_ms: u64, action: Action) {
        self.actions.push(TimedAction { at_ms, action });
    }

    fn note(&mut self, events: &mut Vec<String>, kind: &str) {
        events.push(kind.to_string());
        *self.events_used.entry(kind.to_string()).or_default() += 1;
    }

    fn side(&self, color: Color) -> ClockSide {
        if color == Color::White { self.white_side } else { self.white_side.other() }
    }

    /// A human hand step: longer than a scan, so each step is seen on its own.
    fn hand(&mut self) -> u64 {
        if self.p > 0 { self.rng.range(self.p + 20, self.p + 300) } else { self.rng.range(80, 300) }
    }

    /// A dwell that a scan is sure to see.
    fn dwell(&mut self) -> u64 {
        self.rng.range(self.p + 30, self.p + 120).max(60)
    }

    /// A piece picked up and put back on its square, held long enough for a scan to see
    /// the square empty (an adjustment, a nudge).
    fn lift_and_put_back(&mut self, steps: &mut Vec<Step>, square: Square, piece: Piece) {
        let held = self.dwell();
        steps.push(lift(self.hand(), square));
        steps.push(place(held, square, piece));
    }

    /// The press time window `[lo, hi]` (ms after the turn's start) that makes the mover's
    /// display show `clk_s` after the press, with the planner's clock.
    fn clk_window(&self, side: ClockSide, turn_start: u64, clk_s: u32) -> Option<(u64, u64)> {
        let shown = |e: u64| {
            let mut c = self.clock.clone();
            c.press(side, turn_start + e);
            c.view(side).display_s
        };
        let top = self.clock.view(side).remaining_ms + 3_600_000;
        let first_at_most = |target: u32| {
            if shown(0) <= target {
                return Some(0);
            }
            if shown(top) > target {
                return None;
            }
            let (mut lo, mut hi) = (0u64, top);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if shown(mid) <= target { hi = mid } else { lo = mid }
            }
            Some(hi)
        };
        if shown(0) < clk_s {
            return None;
        }
        let lo = first_at_most(clk_s)?;
        let hi = if clk_s == 0 {
            lo + 999
        } else {
            first_at_most(clk_s - 1).map_or(lo + 999, |h| h.saturating_sub(1))
        };
        Some((lo, hi.max(lo)))
    }

    /// Plays every ply; returns the ply truths, the final position and the last press time.
    fn plies(&mut self, t0: u64) -> (Vec<PlyTruth>, Chess, u64) {
        let mut pos = self.game.start.clone();
        let mut out = Vec::new();
        let mut turn_start = t0;
        let n = self.game.moves.len();
        let disconnect_plies: Vec<usize> =
            (0..self.knobs.disconnects).map(|_| self.rng.range(4, n.max(6) as u64 - 2) as usize).collect();
        let mut i = 0;
        while i < n {
            // Bursts where the players really moved fast (the next ply took a second or
            // less), or anywhere when the source has no `%emt`.
            let fast = |j: usize| self.game.moves.get(j).is_some_and(|m| m.emt_s.is_none_or(|e| e <= 1));
            let burst = if self.p > 0 && i + 1 < n && fast(i + 1) && self.rng.chance(self.knobs.burst) {
                // Three plies in one scan only when the board tells their order: if the
                // mover's two plies also reach the same board the other way round, no one
                // watching the board could know which came first.
                if fast(i + 2) && self.rng.chance(0.3) { 3 } else { 2 }
            } else {
                1
            };
            // Only as many plies as the board can tell apart: when another line of legal
            // plies leaves the same board (the mover's two plies the other way round, a
            // double step and en passant against a single step and a capture), no one
            // watching the board could know which was played.
            // A fast ply right after the burst may be squeezed into the burst's last scan:
            // its plies and that one must tell their order too.
            let mut burst = burst;
            while burst > 1
                && (self.hidden_line(&pos, i, burst)
                    || (fast(i + burst) && self.hidden_line(&pos, i, burst + 1)))
            {
                burst -= 1;
            }
            // A burst presses where the source's clock says; when that is past the mover's
            // flag (the source's clock comments contradict each other), the ply is played
            // on its own instead, where the thinking time is capped before the flag.
            if burst > 1
                && let Some(next) = self.burst(&mut pos, i, burst, turn_start, &mut out)
            {
                turn_start = next;
                i += burst;
                continue;
            }
            let mut events = Vec::new();
            let sm = &self.game.moves[i];
            let mover = pos.turn();
            let side = self.side(mover);
            let (mv, clk, emt) = (sm.mv, self.source_clk(i), sm.emt_s);
            // The move's own gesture, then what may come before it.
            let gesture = self.move_gesture(&pos, mv, &mut events);
            let gesture_len: u64 = gesture.iter().map(|s| s.gap).sum();
            let mut pre: Vec<(&str, Vec<Step>)> = Vec::new();
            if self.rng.chance(self.knobs.takeback)
                && let Some(g) = self.takeback_gesture(&pos, mv)
            {
                pre.push(("takeback", g));
            }
            if self.rng.chance(self.knobs.knock)
                && let Some(g) = self.knock_gesture(pos.board(), mv)
            {
                pre.push(("knocked_over", g));
            }
            let pre_len: u64 =
                pre.iter().flat_map(|(_, g)| g).map(|s| s.gap).sum::<u64>() + 300 * pre.len() as u64;
            let press_gap = self.rng.range(150, 450);
            let needed = gesture_len + press_gap + pre_len + 100;
            let window = match (clk, emt) {
                (Some(c), _) => self.clk_window(side, turn_start, c),
                (None, Some(e)) => Some((u64::from(e) * 1000, u64::from(e) * 1000 + 999)),
                _ => None,
            };
            let think = match window {
                Some((lo, hi)) if needed <= hi => {
                    self.rng.range(lo.max(needed), hi.min(lo.max(needed) + 700))
                }
                Some((lo, hi)) => {
                    if needed > hi + 1 && lo < needed {
                        // Too quick for the whole gesture: it is squeezed (reports may merge),
                        // but never faster than hands go. The window is where the source's
                        // whole-second `%clk` falls on the planner's clock, whose sub-second
                        // phase is arbitrary: a window of a few milliseconds is that phase, not
                        // a player moving a piece in 14 ms. The truth is the planner's clock,
                        // so a ply slower than the source's by a fraction of a second is still
                        // what the clock shows.
                        self.note(&mut events, "squeezed");
                        hi.max(lo).max(FASTEST_PLY_MS)
                    } else {
                        hi.max(lo).max(60)
                    }
                }
                None => self
                    .rng
                    .range(self.opts.default_think_ms.0, self.opts.default_think_ms.1)
                    .max(needed + 500),
            };
            // Nobody thinks past their flag: where the source's clock comments contradict
            // each other (a `%emt` longer than the time left, a `%clk` no press can show),
            // the press still comes before the mover's time runs out.
            let limit = self.clock.view(side).remaining_ms.saturating_sub(1_500).max(60);
            let think = if think > limit && self.flag_falls(side, turn_start + think) {
                self.note(&mut events, "think_capped");
                limit
            } else {
                think
            };
            let press_at = turn_start + think;
            // Lay out: extras from the turn's start, the move ending `press_gap` before the press.
            let room_end = press_at.saturating_sub(press_gap.min(think / 3)).max(turn_start + 2);
            let move_start = room_end.saturating_sub(gesture_len).max(turn_start + 1);
            let mut t = turn_start + 100;
            for (kind, g) in pre {
                // Only when there is time for it before the real move.
                let len: u64 = g.iter().map(|s| s.gap).sum();
                if t + len + 100 <= move_start {
                    t = self.lay(&g, t, t + len) + 300;
                    self.note(&mut events, kind);
                }
            }
            if disconnect_plies.contains(&i) {
                let at = turn_start + think / 4;
                let down_ms = self.rng.range(1_500, 5_000);
                self.push(at, Action::Disconnect { down_ms });
                self.note(&mut events, "disconnect");
            }
            if self.rng.chance(self.knobs.garbage) {
                let at = self.rng.range(turn_start + 1, press_at.max(turn_start + 2));
                let bytes = self.garbage_bytes();
                self.push(at, Action::Garbage { bytes });
                self.note(&mut events, "garbage");
            }
            self.lay(&gesture, move_start, room_end);
            let truth = self.press(mover, press_at, turn_start, i, events);
            out.push(truth);
            pos.play_unchecked(mv);
            turn_start = press_at;
            i += 1;
        }
        (out, pos, turn_start)
    }

    /// True when the flag of `side` (whose clock runs) has fallen by `at`.
    /// The source's `%clk` of ply `i`, unless it is corrupt: a display of 0:00:00 on a move
    /// the game goes on after is no flag fall (that would have ended it), so it is treated
    /// as missing (`%emt` or a made-up thinking time places the press instead).
    fn source_clk(&self, i: usize) -> Option<u32> {
        self.game.moves[i].clk_s.filter(|&c| c > 0 || i + 1 == self.game.moves.len())
    }

    fn flag_falls(&self, side: ClockSide, at: u64) -> bool {
        let mut c = self.clock.clone();
        c.advance(at);
        c.view(side).flag
    }

    /// True when a line of at most `count` legal plies other than the game's plies
    /// `i..i + count` leaves the same board from `pos`, or when those plies take a piece
    /// out and back (a quiet move and its return by the same side: the board shows the
    /// other side moving twice, and which piece went out and back nobody can tell).
    fn hidden_line(&self, pos: &Chess, i: usize, count: usize) -> bool {
        let Some(real) = self.game.moves.get(i..i + count) else { return false };
        let real: Vec<Move> = real.iter().map(|m| m.mv).collect();
        let out_and_back = real.windows(3).any(|w| match (w[0], w[2]) {
            (
                Move::Normal { from: a, to: b, capture: None, promotion: None, .. },
                Move::Normal { from: c, to: d, .. },
            ) => a == d && b == c,
            _ => false,
        });
        if out_and_back {
            return true;
        }
        let mut target = pos.clone();
        for &m in &real {
            target.play_unchecked(m);
        }
        let mut line = Vec::new();
        (1..=count).any(|d| other_line(pos, target.board(), d, &real, &mut line))
    }

    /// Records the press of ply `i` (and makes it on the planner's clock).
    fn press(
        &mut self,
        mover: Color,
        press_at: u64,
        turn_start: u64,
        i: usize,
        events: Vec<String>,
    ) -> PlyTruth {
        let sm = &self.game.moves[i];
        let side = self.side(mover);
        self.clock.press(side, press_at);
        if self.has_clock {
            self.push(press_at, Action::PressClock { color: mover });
        }
        let w = self.clock.view(self.white_side).display_s;
        let b = self.clock.view(self.white_side.other()).display_s;
        PlyTruth {
            ply: i as u32 + 1,
            color: if mover == Color::White { "white".into() } else { "black".into() },
            san: sm.san.clone(),
            uci: sm.uci.clone(),
            source_clk_s: sm.clk_s,
            source_emt_s: sm.emt_s,
            press_at_ms: self.has_clock.then_some(press_at),
            think_ms: press_at.saturating_sub(turn_start),
            white_clock_s: self.has_clock.then_some(w),
            black_clock_s: self.has_clock.then_some(b),
            events,
            clk_observable: true,
        }
    }

    /// Puts steps between `start` and `end`, squeezing the gaps when they do not fit.
    /// Returns the time of the last step.
    fn lay(&mut self, steps: &[Step], start: u64, end: u64) -> u64 {
        let total: u64 = steps.iter().map(|s| s.gap).sum();
        let room = end.saturating_sub(start);
        let mut t = start;
        for s in steps {
            let gap = if total > room && total > 0 { s.gap * room / total } else { s.gap };
            t += gap;
            self.push(t, s.action.clone());
        }
        t
    }

    /// Plays `count` plies inside one scan window: no scan sees the positions in between.
    fn burst(
        &mut self,
        pos: &mut Chess,
        first: usize,
        count: usize,
        turn_start: u64,
        out: &mut Vec<PlyTruth>,
    ) -> Option<u64> {
        let p = self.p;
        let forgot = self.rng.chance(self.knobs.forgot_press);
        // Steps of every ply, plainly made, then the presses.
        let mut plan: Vec<(usize, Vec<Step>)> = Vec::new();
        let mut scratch = pos.clone();
        for k in 0..count {
            let mv = self.game.moves[first + k].mv;
            plan.push((first + k, plain_steps(&scratch, mv)));
            scratch.play_unchecked(mv);
        }
        let n_steps: usize = plan.iter().map(|(_, s)| s.len() + 1).sum();
        let spacing = ((p.saturating_sub(20)) / n_steps as u64).max(1);
        // Where the first press falls inside the scan window.
        let first_press_steps =
            if forgot { plan.iter().take(2).map(|(_, s)| s.len()).sum() } else { plan[0].1.len() };
        let first_press_offset = 10 + spacing * first_press_steps as u64;
        // The first ply's press lands where the source's clock says, when it says.
        let sm = &self.game.moves[first];
        let side = self.side(pos.turn());
        let target = match (self.source_clk(first), sm.emt_s) {
            (Some(c), _) => self.clk_window(side, turn_start, c),
            (None, Some(e)) => Some((u64::from(e) * 1000, u64::from(e) * 1000 + 999)),
            _ => None,
        };
        let earliest = turn_start + p + 100;
        let window = match target {
            Some((lo, _)) => {
                (turn_start + lo).saturating_sub(first_press_offset).max(earliest).div_ceil(p) * p
            }
            None => {
                let think =
                    self.rng.range(self.opts.default_think_ms.0 / 2, self.opts.default_think_ms.1 / 2);
                (turn_start + think).div_ceil(p) * p
            }
        };
        if self.flag_falls(side, window + first_press_offset + p) {
            return None;
        }
        let mut t = window + 10;
        let mut press_times = vec![0u64; count];
        let mut late_press = false;
        for (k, (_, steps)) in plan.iter().enumerate() {
            for s in steps {
                self.push(t, s.action.clone());
                t += spacing;
            }
            if forgot && k == 0 {
                // The first mover forgets, and presses only after the opponent has moved.
                late_press = true;
                continue;
            }
            if std::mem::take(&mut late_press) {
                press_times[0] = t;
                t += spacing;
            }
            press_times[k] = t;
            t += spacing;
        }
        let mut turn = turn_start;
        for (k, &press_at) in press_times.iter().enumerate() {
            let mut events = Vec::new();
            self.note(&mut events, "burst");
            if k == 0 {
                self.note(&mut events, "burst_start");
            }
            if forgot && k == 0 {
                self.note(&mut events, "forgot_press");
            }
            let mover = pos.turn();
            let truth = self.press(mover, press_at, turn, first + k, events);
            out.push(truth);
            pos.play_unchecked(self.game.moves[first + k].mv);
            turn = press_at;
        }
        Some(turn)
    }

    fn move_gesture(&mut self, pos: &Chess, mv: Move, events: &mut Vec<String>) -> Vec<Step> {
        let mover = pos.turn();
        let mut steps = Vec::new();
        let h = |s: &mut Self| s.hand();
        match mv {
            Move::Normal { role, from, capture, to, promotion } => {
                let piece = Piece { color: mover, role };
                if let Some(promo) = promotion {
                    let new = Piece { color: mover, role: promo };
                    steps.push(lift(h(self), from));
                    if capture.is_some() {
                        steps.push(lift(h(self), to));
                    }
                    if self.rng.chance(self.knobs.promo_swap) {
                        let d = self.dwell();
                        steps.push(place(h(self), to, piece));
                        steps.push(lift(d, to));
                        steps.push(place(h(self), to, new));
                        self.note(events, "promotion_swap");
                    } else {
                        steps.push(place(h(self), to, new));
                        self.note(events, "promotion_direct");
                    }
                } else if capture.is_some() {
                    let order = if self.knobs.capture_orders { self.rng.range(0, 2) } else { 0 };
                    match order {
                        1 => {
                            steps.push(lift(h(self), from));
                            steps.push(lift(h(self), to));
                            steps.push(place(h(self), to, piece));
                            self.note(events, "capture_mover_first");
                        }
                        2 => {
                            steps.push(lift(h(self), from));
                            steps.push(lift(h(self), to));
                            steps.push(place(0, to, piece));
                            self.note(events, "capture_swap");
                        }
                        _ => {
                            steps.push(lift(h(self), to));
                            if self.rng.chance(self.knobs.reorder) {
                                steps.push(place(h(self), to, piece));
                                steps.push(lift(self.p + 30, from));
                                self.note(events, "reorder");
                            } else {
                                steps.push(lift(h(self), from));
                                self.slide_or_place(&mut steps, role, from, to, piece, events);
                            }
                            if self.knobs.capture_orders {
                                self.note(events, "capture_victim_first");
                            }
                        }
                    }
                } else if self.rng.chance(self.knobs.reorder) {
                    steps.push(place(h(self), to, piece));
                    steps.push(lift(self.p + 30, from));
                    self.note(events, "reorder");
                } else {
                    steps.push(lift(h(self), from));
                    self.slide_or_place(&mut steps, role, from, to, piece, events);
                }
            }
            Move::EnPassant { from, to } => {
                let victim = Square::from_coords(to.file(), from.rank());
                let pawn = Piece { color: mover, role: Role::Pawn };
                let order = if self.knobs.ep_orders { self.rng.range(0, 2) } else { 0 };
                let (a, b, c) = match order {
                    1 => {
                        self.note(events, "ep_victim_first");
                        (lift(h(self), victim), lift(h(self), from), place(h(self), to, pawn))
                    }
                    2 => {
                        self.note(events, "ep_victim_between");
                        (lift(h(self), from), lift(h(self), victim), place(h(self), to, pawn))
                    }
                    _ => {
                        self.note(events, "ep_victim_last");
                        (lift(h(self), from), place(h(self), to, pawn), lift(h(self), victim))
                    }
                };
                steps.extend([a, b, c]);
            }
            Move::Castle { king, rook } => {
                let (kt, rt) = castle_targets(king, rook);
                let k = Piece { color: mover, role: Role::King };
                let r = Piece { color: mover, role: Role::Rook };
                let overlap = [kt, rt].iter().any(|s| *s == king || *s == rook);
                let order = if overlap {
                    2
                } else if self.knobs.castling_orders {
                    self.rng.range(0, 3)
                } else {
                    0
                };
                let s = match order {
                    1 => [
                        lift(h(self), rook),
                        place(h(self), rt, r),
                        lift(h(self), king),
                        place(h(self), kt, k),
                    ],
                    2 => [
                        lift(h(self), king),
                        lift(h(self), rook),
                        place(h(self), kt, k),
                        place(h(self), rt, r),
                    ],
                    3 => [
                        lift(h(self), rook),
                        lift(h(self), king),
                        place(h(self), rt, r),
                        place(h(self), kt, k),
                    ],
                    _ => [
                        lift(h(self), king),
                        place(h(self), kt, k),
                        lift(h(self), rook),
                        place(h(self), rt, r),
                    ],
                };
                steps.extend(s);
                let names =
                    ["castle_king_first", "castle_rook_first", "castle_both_lifted", "castle_rook_king"];
                if self.knobs.castling_orders || overlap {
                    self.note(events, names[order as usize]);
                }
            }
            Move::Put { .. } => {}
        }
        // After the move: adjust it, nudge a neighbour.
        let mut after = pos.clone();
        after.play_unchecked(mv);
        let to = match mv {
            Move::Castle { king, rook } => castle_targets(king, rook).0,
            other => other.to(),
        };
        if self.rng.chance(self.knobs.adjust)
            && let Some(piece) = after.board().piece_at(to)
        {
            self.lift_and_put_back(&mut steps, to, piece);
            self.note(events, "adjust");
        }
        if self.rng.chance(self.knobs.nudge) {
            let touched = touched_squares(mv);
            let near: Vec<Square> = (attacks::king_attacks(to) & after.board().occupied())
                .into_iter()
                .filter(|s| !touched.contains(*s))
                .collect();
            if let Some(&sq) = self.rng.pick(&near)
                && let Some(piece) = after.board().piece_at(sq)
            {
                self.lift_and_put_back(&mut steps, sq, piece);
                self.note(events, "nudge");
            }
        }
        if self.rng.chance(self.knobs.drop) {
            let candidates: Vec<usize> = steps
                .iter()
                .enumerate()
                .filter(|(_, s)| matches!(s.action, Action::Lift { .. } | Action::Place { .. }))
                .map(|(i, _)| i)
                .collect();
            if let Some(&i) = self.rng.pick(&candidates) {
                let square = match &steps[i].action {
                    Action::Lift { square } | Action::Place { square, .. } => *square,
                    _ => Square::A1,
                };
                let gap = steps[i].gap;
                steps[i].gap = 0;
                steps.insert(i, step(gap, Action::DropReport { square }));
                self.note(events, "dropped_update");
            }
        }
        steps
    }

    fn slide_or_place(
        &mut self,
        steps: &mut Vec<Step>,
        role: Role,
        from: Square,
        to: Square,
        piece: Piece,
        events: &mut Vec<String>,
    ) {
        let mut path: Vec<Square> = attacks::between(from, to).into_iter().collect();
        path.sort_by_key(|s| s.distance(from));
        let slides = matches!(role, Role::Queen | Role::Rook | Role::Bishop | Role::Pawn);
        if slides && !path.is_empty() && self.rng.chance(self.knobs.slide) {
            let first = self.hand();
            steps.push(place(first, path[0], piece));
            for w in path.windows(2) {
                let d = self.dwell();
                steps.push(lift(d, w[0]));
                steps.push(place(0, w[1], piece));
            }
            let d = self.dwell();
            if let Some(&last) = path.last() {
                steps.push(lift(d, last));
            }
            steps.push(place(0, to, piece));
            self.note(events, "slide");
        } else {
            let h = self.hand();
            steps.push(place(h, to, piece));
        }
    }

    fn takeback_gesture(&mut self, pos: &Chess, real: Move) -> Option<Vec<Step>> {
        let moves: Vec<Move> = pos
            .legal_moves()
            .into_iter()
            .filter(|m| *m != real && matches!(m, Move::Normal { capture: None, promotion: None, .. }))
            .collect();
        let wrong = *self.rng.pick(&moves)?;
        let (Some(from), to) = (wrong.from(), wrong.to()) else { return None };
        let piece = pos.board().piece_at(from)?;
        let show = self.rng.range(800, 2_000).max(2 * self.p + 50);
        let (a, b, c) = (self.hand(), self.hand(), self.hand());
        Some(vec![lift(a, from), place(b, to, piece), lift(show, to), place(c, from, piece)])
    }

    fn knock_gesture(&mut self, board: &Board, mv: Move) -> Option<Vec<Step>> {
        let touched = touched_squares(mv);
        let candidates: Vec<Square> =
            board.occupied().into_iter().filter(|s| !touched.contains(*s)).collect();
        let sq = *self.rng.pick(&candidates)?;
        let piece = board.piece_at(sq)?;
        let down = self.rng.range(400, 1_200).max(self.p + 50);
        let empty_near: Vec<Square> =
            (attacks::king_attacks(sq) & !board.occupied() & !touched).into_iter().collect();
        let a = self.hand();
        let c = self.hand();
        match self.rng.pick(&empty_near).copied().filter(|_| self.rng.chance(0.5)) {
            Some(near) => {
                Some(vec![lift(a, sq), place(0, near, piece), lift(down, near), place(c, sq, piece)])
            }
            None => Some(vec![lift(a, sq), place(down, sq, piece)]),
        }
    }

    fn garbage_bytes(&mut self) -> Vec<u8> {
        let len = self.rng.range(1, 12) as usize;
        let mut bytes: Vec<u8> = (0..len).map(|_| (self.rng.next_u64() & 0x7F) as u8).collect();
        if self.rng.chance(0.3) {
            // A message cut short: a header and part of a payload.
            let header: &[u8] =
                if self.rng.chance(0.5) { &[0x8E, 0x00] } else { &[0x86, 0x00, 0x43, 0x01, 0x02] };
            bytes.extend_from_slice(header);
        }
        bytes
    }

    /// Shows the end of the game; returns its kind and the board at the end.
    fn end(&mut self, pos: &Chess, last_press: u64) -> (String, Board) {
        let mut board = pos.board().clone();
        let result = self.game.result.as_str();
        let decisive = matches!(result, "1-0" | "0-1");
        let loser = if result == "1-0" { Color::Black } else { Color::White };
        let on_time = self.game.tag("Termination").is_some_and(|t| {
            let t = t.to_ascii_lowercase();
            t.contains("time") || t.contains("forfeit")
        });
        let can_flag = self.has_clock && decisive && pos.turn() == loser;
        let kind = match self.opts.end {
            _ if pos.is_checkmate() => "checkmate",
            _ if pos.is_stalemate() => "stalemate",
            GameEnd::Nothing => "none",
            GameEnd::FlagFall if can_flag => "flag_fall",
            GameEnd::Resignation if self.has_clock && decisive => "resignation",
            GameEnd::KingsInCentre if result != "*" => "kings_in_centre",
            _ if result == "*" => "none",
            _ if !decisive => "kings_in_centre",
            _ if on_time && can_flag => "flag_fall",
            _ if self.has_clock => "resignation",
            _ => "kings_in_centre",
        };
        // Players take a few seconds after the last press (the board stands still, and a
        // host must see the last move stand before the end gesture).
        let at = last_press + self.rng.range(3_500, 6_000);
        match kind {
            "resignation" => self.push(at, Action::Button { button: Button::Run }),
            "flag_fall" => {
                let side = self.side(pos.turn());
                self.clock.advance(last_press);
                // The flag falls when the time runs out (plus any delay still to wait).
                let flag_at = last_press + self.clock.view(side).remaining_ms + 5_000;
                self.push(flag_at + 1_500, Action::End);
            }
            "kings_in_centre" => {
                let (w, b) = match result {
                    "1-0" => (Square::E4, Square::D5),
                    "0-1" => (Square::D4, Square::E5),
                    _ => (Square::E4, Square::D4),
                };
                let wk = board.king_of(Color::White);
                let bk = board.king_of(Color::Black);
                let mut steps = Vec::new();
                for k in [wk, bk].into_iter().flatten() {
                    board.discard_piece_at(k);
                    steps.push(lift(self.hand(), k));
                }
                for (target, color) in [(w, Color::White), (b, Color::Black)] {
                    if board.piece_at(target).is_some() {
                        board.discard_piece_at(target);
                        steps.push(lift(self.hand(), target));
                    }
                    let king = Piece { color, role: Role::King };
                    board.set_piece_at(target, king);
                    steps.push(place(self.hand(), target, king));
                }
                let total: u64 = steps.iter().map(|s| s.gap).sum();
                self.lay(&steps, at, at + total);
            }
            _ => {}
        }
        (kind.to_string(), board)
    }
}

/// The king's and rook's squares after castling.
pub fn castle_targets(king: Square, rook: Square) -> (Square, Square) {
    let rank = king.rank();
    if rook.file() > king.file() {
        (Square::from_coords(File::G, rank), Square::from_coords(File::F, rank))
    } else {
        (Square::from_coords(File::C, rank), Square::from_coords(File::D, rank))
    }
}

/// Every square a move changes.
pub fn touched_squares(mv: Move) -> Bitboard {
    let mut bb = Bitboard::EMPTY;
    match mv {
        Move::Normal { from, to, .. } => {
            bb.add(from);
            bb.add(to);
        }
        Move::EnPassant { from, to } => {
            bb.add(from);
            bb.add(to);
            bb.add(Square::from_coords(to.file(), from.rank()));
        }
        Move::Castle { king, rook } => {
            let (kt, rt) = castle_targets(king, rook);
            for s in [king, rook, kt, rt] {
                bb.add(s);
            }
        }
        Move::Put { to, .. } => bb.add(to),
    }
    bb
}

/// A move made plainly (used inside bursts): lift(s), then place(s).
fn plain_steps(pos: &Chess, mv: Move) -> Vec<Step> {
    let mover = pos.turn();
    match mv {
        Move::Normal { role, from, capture, to, promotion } => {
            let mut v = Vec::new();
            if capture.is_some() {
                v.push(lift(0, to));
            }
            v.push(lift(0, from));
            v.push(place(0, to, Piece { color: mover, role: promotion.unwrap_or(role) }));
            v
        }
        Move::EnPassant { from, to } => vec![
            lift(0, from),
            place(0, to, Piece { color: mover, role: Role::Pawn }),
            lift(0, Square::from_coords(to.file(), from.rank())),
        ],
        Move::Castle { king, rook } => {
            let (kt, rt) = castle_targets(king, rook);
            vec![
                lift(0, king),
                lift(0, rook),
                place(0, kt, Piece { color: mover, role: Role::King }),
                place(0, rt, Piece { color: mover, role: Role::Rook }),
            ]
        }
        Move::Put { .. } => Vec::new(),
    }
}

/// Searches a line of exactly `depth` plies from `pos` to `target` other than `real`.
fn other_line(pos: &Chess, target: &Board, depth: usize, real: &[Move], line: &mut Vec<Move>) -> bool {
    let diff =
        (0..64u32).map(Square::new).filter(|&sq| pos.board().piece_at(sq) != target.piece_at(sq)).count();
    if depth == 0 {
        return diff == 0 && line.as_slice() != real;
    }
    // A ply changes at most four squares.
    if diff > 4 * depth {
        return false;
    }
    for m in pos.legal_moves() {
        let mut p = pos.clone();
        p.play_unchecked(m);
        line.push(m);
        let found = other_line(&p, target, depth - 1, real, line);
        line.pop();
        if found {
            return true;
        }
    }
    false
}
