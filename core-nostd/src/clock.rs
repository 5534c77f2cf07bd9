//! Clock bookkeeping: which display is White's, presses, the increment, `%clk`/`%emt`.

use dgt_protocol::{ClockSide, ClockTimes};
use shakmaty::Color;

use crate::config::{Config, WhiteClockSide};
use crate::event::ClockState;

/// Largest per-move increment inferred from presses, seconds.
const MAX_INC: usize = 60;
/// Smallest time a new period adds, seconds (anything less is an increment or jitter).
const MIN_PERIOD_SECS: u32 = 60;
/// A running clock reports at least every second; one silent for this long is gone (as
/// the tracker's `CLOCK_STALE_MS`).
const STALE_MS: u64 = 5000;
/// A running clock is read at least every second: after a longer silence (the board was
/// away) a lever found the other way round was pressed at a time nobody saw, so it is no
/// press of the reading's moment.
const SILENCE_MS: u64 = 2500;

/// A lever flip seen on the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Press {
    /// Who pressed (whose side went down).
    pub by: Color,
    /// The reading that showed the flip.
    pub reading: ClockTimes,
    /// Seconds added to the presser's display by the press (`None` when not observed).
    pub jump: Option<i64>,
}

/// Clock state of one board.
#[derive(Clone, Debug)]
pub(crate) struct Clocks {
    /// The latest valid reading.
    pub last: Option<ClockTimes>,
    /// When it arrived.
    pub last_ms: u64,
    /// Which display is White's, once known.
    white_side: Option<ClockSide>,
    /// The mapping is fixed (a move was confirmed with it).
    fixed: bool,
    /// Each colour's time when the game started, seconds.
    pub initial: [Option<u32>; 2],
    /// `initial` is known (a resumed game's time control): readings do not change it.
    pub initial_fixed: bool,
    /// Each colour's `%clk` at its last confirmed ply.
    pub prev_clk: [Option<u32>; 2],
    /// Each colour's last confirmed ply had no knowable `%clk`, so the next one's `%emt`
    /// cannot be worked out either.
    pub prev_unknown: [bool; 2],
    /// Each display's time at the last reading in which it ran.
    last_running: [Option<u32>; 2],
    /// Presses seen since the game started.
    pub presses: u32,
    /// The clock has run in this game: before that, its readings are the arbiter setting
    /// it up (lever, times) and supply no `%clk`.
    ran: bool,
    /// How often each increment (0..=60 s) was seen at a press.
    inc_hist: [u8; MAX_INC + 1],
    /// A flag fall was reported in this game.
    pub flag_reported: bool,
    /// Each display showed its flag at zero in the latest reading.
    at_zero: [bool; 2],
    /// How often each display ran out of time (a period ended), this game.
    expired: [u8; 2],
    /// Seconds each display gained while running (a new period's time added at a flag,
    /// not at a press), not yet credited to a `%emt`.
    added_running: [u32; 2],
}

fn side_index(side: ClockSide) -> usize {
    match side {
        ClockSide::Left => 0,
        ClockSide::Right => 1,
    }
}

fn color_index(c: Color) -> usize {
    match c {
        Color::White => 0,
        Color::Black => 1,
    }
}

impl Clocks {
    pub const fn new() -> Clocks {
        Clocks {
            last: None,
            last_ms: 0,
            white_side: None,
            fixed: false,
            initial: [None; 2],
            initial_fixed: false,
            prev_clk: [None; 2],
            prev_unknown: [false; 2],
            last_running: [None; 2],
            presses: 0,
            ran: false,
            inc_hist: [0; MAX_INC + 1],
            flag_reported: false,
            at_zero: [false; 2],
            expired: [0; 2],
            added_running: [0; 2],
        }
    }

    /// Forgets everything that belongs to the previous game. The last reading is kept when
    /// it still describes the clock: a stopped clock (it is silent until touched), or a
    /// running one that reported within [`STALE_MS`]; a running clock silent for longer is
    /// gone. A stopped reading is the clock as set for this game: its lever gives White's
    /// side. A new game (`resumed` false) learns White's side again from the lever at its
    /// start, never from the previous game's last press; a resumed game continues with a
    /// clock that runs.
    pub fn new_game(&mut self, config: &Config, to_move: Color, now: u64, resumed: bool) {
        let last = self.last.filter(|r| !r.status.running() || now.saturating_sub(self.last_ms) <= STALE_MS);
        let last_ms = self.last_ms;
        *self = Clocks::new();
        self.last = last;
        self.last_ms = last_ms;
        if let WhiteClockSide::Fixed(side) = config.white_clock {
            self.white_side = Some(side);
            self.fixed = true;
        }
        if let Some(r) = last {
            let running = r.status.running();
            self.ran = resumed && running;
            // The previous game's last press says who moved last, not who is White.
            if resumed || !running {
                self.learn_mapping(&r, to_move);
            }
            self.take_initial(&r);
        }
    }

    /// The clock reported "no clock" (status D5): its times are invalid and it supplies no
    /// `%clk` until it reports again.
    pub fn lost(&mut self) {
        self.last = None;
        self.ran = false;
        self.last_running = [None; 2];
    }

    /// The reading that may give a move's `%clk` at `now`: the latest one, if the clock has
    /// run in this game and has not gone silent while running.
    pub fn current(&self, now: u64) -> Option<ClockTimes> {
        let r = self.last?;
        let fresh = !r.status.running() || now.saturating_sub(self.last_ms) <= STALE_MS;
        (self.ran && fresh).then_some(r)
    }

    /// The display of a colour.
    pub fn side_of(&self, config: &Config, color: Color) -> ClockSide {
        let white = match (self.white_side, config.white_clock) {
            (Some(s), _) => s,
            (None, WhiteClockSide::Fixed(s)) => s,
            (None, WhiteClockSide::FromLever { fallback }) => fallback,
        };
        match color {
            Color::White => white,
            Color::Black => white.other(),
        }
    }

    /// The colour whose display `side` is.
    pub fn owner(&self, config: &Config, side: ClockSide) -> Color {
        if self.side_of(config, Color::White) == side { Color::White } else { Color::Black }
    }

    fn learn_mapping(&mut self, r: &ClockTimes, to_move: Color) {
        if self.fixed {
            return;
        }
        // The side whose lever is high is the side to move (White at a normal start).
        let high = r.high_side();
        self.white_side = Some(if to_move == Color::White { high } else { high.other() });
    }

    fn take_initial(&mut self, r: &ClockTimes) {
        if self.presses > 0 || self.initial_fixed {
            return;
        }
        if let Some(white) = self.white_side {
            for (color, side) in [(Color::White, white), (Color::Black, white.other())] {
                let i = color_index(color);
                // Keep the value from before the clock started running down.
                if self.initial[i].is_none() || !r.status.running() {
                    self.initial[i] = Some(r.side(side).time.total_seconds());
                }
            }
        }
    }

    /// Takes a reading; returns the press it shows, if any.
    pub fn reading(
        &mut self,
        config: &Config,
        r: &ClockTimes,
        now: u64,
        in_game: bool,
        to_move: Color,
        confirmed_plies: usize,
    ) -> Option<Press> {
        let prev = self.last;
        let silent =
            prev.is_some_and(|p| p.status.running()) && now.saturating_sub(self.last_ms) > SILENCE_MS;
        self.last = Some(*r);
        self.last_ms = now;
        let flipped = prev.is_some_and(|p| p.high_side() != r.high_side());
        let running = r.status.running();
        // The lever seen before the game's clock runs, or while it is stopped before the
        // first move, is the arbiter setting the clock (stop, reset, raise White's lever,
        // start): it gives White's side and is no press. So does the clock's first start
        // in the game (the side to move runs).
        let setting = in_game && ((!running && confirmed_plies == 0) || !self.ran);
        let first_reading_before_a_press = in_game && !flipped && confirmed_plies == 0 && self.presses == 0;
        if !self.fixed && (setting || first_reading_before_a_press) {
            self.learn_mapping(r, to_move);
        }
        if in_game && (!flipped || setting) {
            self.take_initial(r);
        }
        if in_game && running {
            self.ran = true;
        }
        let mut press = None;
        if let Some(prev) = prev {
            let went_down = prev.high_side();
            // Before the first move, the player not to move pressing starts the clock of
            // the side to move: no move of theirs, so no press.
            let starts_opponent =
                confirmed_plies == 0 && self.presses == 0 && self.owner(config, went_down) != to_move;
            if went_down != r.high_side() && in_game && !setting && !starts_opponent && !silent {
                let by = self.owner(config, went_down);
                let after = i64::from(r.side(went_down).time.total_seconds());
                let jump = self.last_running[side_index(went_down)].map(|before| after - i64::from(before));
                if let Some(j) = jump
                    && (0..=MAX_INC as i64).contains(&j)
                {
                    let slot = &mut self.inc_hist[j as usize];
                    *slot = slot.saturating_add(1);
                }
                self.presses += 1;
                press = Some(Press { by, reading: *r, jump });
            }
        }
        if let Some(side) = r.running_side() {
            let now_secs = r.side(side).time.total_seconds();
            // Time that appears on a running display (no press) is a period's time added
            // when the previous period ran out: the player gets it on top of the increment.
            if in_game
                && let Some(before) = self.last_running[side_index(side)]
                && now_secs >= before + MIN_PERIOD_SECS
            {
                let slot = &mut self.added_running[side_index(side)];
                *slot = slot.saturating_add(now_secs - before);
            }
            self.last_running[side_index(side)] = Some(now_secs);
            self.last_running[side_index(side.other())] = None;
        }
        press
    }

    /// White's display once the mapping is fixed for the rest of the game (configured, or a
    /// move was confirmed with it while the clock ran, or given by [`Clocks::set_white_side`]).
    pub fn fixed_white_side(&self) -> Option<ClockSide> {
        if self.fixed { self.white_side } else { None }
    }

    /// Fixes White's display for the rest of the game (a resumed game's, as journaled).
    pub fn set_white_side(&mut self, side: ClockSide) {
        self.white_side = Some(side);
        self.fixed = true;
    }

    /// Fixes the mapping (a move was confirmed with it while the clock runs in the game).
    pub fn fix_mapping(&mut self) {
        if self.white_side.is_some() && self.ran {
            self.fixed = true;
        }
    }

    /// The increment, seconds: configured, else the most likely value seen at presses.
    pub fn increment(&self, config: &Config, move_number: u32) -> u32 {
        if let Some(tc) = config.time_control {
            return tc.period_for_move(move_number).fischer_increment();
        }
        // The most frequent jump; ties go to the larger value, because a press read a
        // second late shows one second less.
        let mut best = (0u8, 0usize);
        for (v, &n) in self.inc_hist.iter().enumerate() {
            if n > 0 && n >= best.0 {
                best = (n, v);
            }
        }
        best.1 as u32
    }

    /// Time added at this press on top of the increment (a new period), seconds.
    pub fn bonus(&self, config: &Config, move_number: u32, jump: Option<i64>) -> u32 {
        if let Some(tc) = config.time_control {
            let bonus = tc.bonus_after_move(move_number);
            // A clock without a move counter adds the period's time at the flag instead
            // (seen as `added_running`); the press itself then shows no such jump.
            return match jump {
                Some(j) if bonus > 0 && j < i64::from(bonus / 2) => 0,
                _ => bonus,
            };
        }
        let inc = i64::from(self.increment(config, move_number));
        match jump {
            Some(j) if j - inc >= 60 => (((j - inc + 30) / 60) * 60) as u32,
            _ => 0,
        }
    }

    /// The displayed time of a colour in a reading.
    pub fn time_of(&self, config: &Config, r: &ClockTimes, color: Color) -> u32 {
        r.side(self.side_of(config, color)).time.total_seconds()
    }

    /// The colour-mapped state of a reading.
    pub fn state(&self, config: &Config) -> ClockState {
        let Some(r) = self.last else { return ClockState::default() };
        let w = r.side(self.side_of(config, Color::White));
        let b = r.side(self.side_of(config, Color::Black));
        ClockState {
            white: Some(w.time.total_seconds()),
            black: Some(b.time.total_seconds()),
            running: r.running_side().map(|s| self.owner(config, s)),
            white_flag: w.flags.flag || w.flags.final_flag,
            black_flag: b.flags.flag || b.flags.final_flag,
        }
    }

    /// The colour whose flag the reading shows fallen: the final flag (blocked at zero), or
    /// the flag at zero unless the configured time control gives that player another
    /// period (its moves were made; a clock without a move counter adds the period's time
    /// at the flag). `moves_made` is each colour's completed moves (White, Black).
    pub fn fallen_flag(&mut self, config: &Config, r: &ClockTimes, moves_made: [u32; 2]) -> Option<Color> {
        let mut fallen = None;
        for color in [Color::White, Color::Black] {
            let side = self.side_of(config, color);
            let s = r.side(side);
            let at_zero = s.flags.flag && s.time.total_seconds() == 0;
            let si = side_index(side);
            if at_zero && !self.at_zero[si] {
                self.expired[si] = self.expired[si].saturating_add(1);
            }
            self.at_zero[si] = at_zero;
            let continues = config.time_control.is_some_and(|tc| {
                tc.continues_after(u32::from(self.expired[si]), moves_made[color_index(color)])
            });
            if fallen.is_none() && (s.flags.final_flag || (at_zero && !continues)) {
                fallen = Some(color);
            }
        }
        fallen
    }

    /// Records that a confirmed ply of `color` has no knowable `%clk` (its press was not
    /// seen and the clock has moved on since).
    pub fn unknown(&mut self, color: Color) {
        self.prev_unknown[color_index(color)] = true;
    }

    /// True when `color`'s display is running in reading `r`.
    pub fn runs(&self, config: &Config, r: &ClockTimes, color: Color) -> bool {
        r.status.running() && r.running_side() == Some(self.side_of(config, color))
    }

    /// Records a confirmed ply's `%clk` and returns its `%emt` by clock arithmetic.
    pub fn account(
        &mut self,
        config: &Config,
        color: Color,
        move_number: u32,
        clk: u32,
        jump: Option<i64>,
    ) -> Option<u32> {
        let i = color_index(color);
        let prev = self.prev_clk[i].or(self.initial[i]);
        self.prev_clk[i] = Some(clk);
        if core::mem::take(&mut self.prev_unknown[i]) {
            return None;
        }
        let prev = i64::from(prev?);
        let side = side_index(self.side_of(config, color));
        let added = core::mem::take(&mut self.added_running[side]);
        let credited = i64::from(self.increment(config, move_number) + self.bonus(config, move_number, jump))
            + i64::from(added);
        Some((prev + credited - i64::from(clk)).max(0) as u32)
    }
}
