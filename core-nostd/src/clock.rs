//! Clock bookkeeping: which display is White's, presses, the increment, `%clk`/`%emt`.

use dgt_protocol::{ClockSide, ClockStatus, ClockTimes};
use shakmaty::Color;

use crate::config::{Config, WhiteClockSide};
use crate::event::ClockState;

/// Largest per-move increment inferred from presses, seconds.
const MAX_INC: usize = 60;
/// Presses before a game was found that are kept (see `Clocks::idle_presses`).
pub(crate) const IDLE_PRESSES: usize = 4;
/// Smallest time a new period adds, seconds (anything less is an increment or jitter).
const MIN_PERIOD_SECS: u32 = 60;

/// A press the clock showed, before it is given a colour: the display whose lever went
/// down, the clock as it stood right after the press, and what the press added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Flip {
    /// The presser's display (its lever went down).
    pub side: ClockSide,
    /// The clock right after the press.
    pub reading: ClockTimes,
    /// Seconds added to the presser's display by the press (`None` when not observed).
    pub jump: Option<i64>,
}

/// The presses one reading showed, in the order they were made: none, one (the lever
/// flipped), or two (the lever went down and came back between two polls).
#[derive(Clone, Debug, Default)]
pub(crate) struct Flips {
    pub list: heapless::Vec<Flip, 2>,
    /// Two presses seen only as the running display going up: a display can also seem to
    /// (a clock adjusted, a spurious reading), so the board must show plies for both.
    pub by_rise_only: bool,
}

/// A lever flip seen on the clock, with the colour that pressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Press {
    /// Who pressed (whose side went down).
    pub by: Color,
    /// The presser's display, as the mapping had it at the press: the reading is read
    /// with it, whatever the mapping becomes by the time the press confirms its ply.
    pub side: ClockSide,
    /// The reading that showed the flip.
    pub reading: ClockTimes,
    /// Seconds added to the presser's display by the press (`None` when not observed).
    pub jump: Option<i64>,
    /// The presser pressed before, since their last ply, for plies the board never showed
    /// (a repetition played over with its reports lost): the ply this press confirms may
    /// not be the one it ended, so its time is no ply's `%clk`.
    pub one_of_several: bool,
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
    /// The mapping is no longer learned from the lever (a move was confirmed with it); a
    /// press whose colour the board makes certain still re-anchors it.
    fixed: bool,
    /// The mapping is the configuration's: nothing changes it.
    pinned: bool,
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
    /// The most frequent increment seen so far, with its count (ties to the larger).
    inc_best: (u8, u8),
    /// A flag fall was reported in this game.
    pub flag_reported: bool,
    /// Each display showed its flag at zero in the latest reading.
    at_zero: [bool; 2],
    /// How often each display ran out of time (a period ended), this game.
    expired: [u8; 2],
    /// Seconds each display gained while running (a new period's time added at a flag,
    /// not at a press), not yet credited to a `%emt`.
    added_running: [u32; 2],
    /// The board was away since the last reading: the clock was not heard.
    unheard: bool,
    /// The last confirmed ply was confirmed without its press, and no press has been seen
    /// since: the next one may be that press, late.
    owed: bool,
    /// Each colour's last confirmed ply was confirmed without its press.
    unpressed: [bool; 2],
    /// Lever flips seen while no game was on, since the clock last stood stopped (the
    /// first few, and whether there were more): presses made before the board was first
    /// read (the relay came up, or reached the board, as the game began).
    idle_presses: (heapless::Vec<Flip, IDLE_PRESSES>, bool),
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
            pinned: false,
            initial: [None; 2],
            initial_fixed: false,
            prev_clk: [None; 2],
            prev_unknown: [false; 2],
            last_running: [None; 2],
            presses: 0,
            ran: false,
            inc_hist: [0; MAX_INC + 1],
            inc_best: (0, 0),
            flag_reported: false,
            at_zero: [false; 2],
            expired: [0; 2],
            added_running: [0; 2],
            unheard: false,
            owed: false,
            unpressed: [false; 2],
            idle_presses: (heapless::Vec::new(), false),
        }
    }

    /// Forgets everything that belongs to the previous game. The last reading is kept when
    /// it still describes the clock: a stopped clock (it is silent until touched), or a
    /// running one that reported within [`Timing::clock_stale_ms`](crate::Timing::clock_stale_ms); a running clock silent for longer is
    /// gone. A stopped reading is the clock as set for this game: its lever gives White's
    /// side. A new game (`resumed` false) learns White's side again from the lever at its
    /// start, never from the previous game's last press; a resumed game continues with a
    /// clock that runs.
    pub fn new_game(&mut self, config: &Config, to_move: Color, now: u64, resumed: bool) {
        let stale = u64::from(config.timing.clock_stale_ms);
        let last = self.last.filter(|r| !r.status.running() || now.saturating_sub(self.last_ms) <= stale);
        let (last_ms, unheard) = (self.last_ms, self.unheard);
        let idle_presses = core::mem::take(&mut self.idle_presses);
        *self = Clocks::new();
        self.last = last;
        self.last_ms = last_ms;
        self.unheard = unheard;
        self.idle_presses = idle_presses;
        // A resumed game's last ply may still wait for its press.
        self.owed = resumed;
        if let WhiteClockSide::Fixed(side) = config.white_clock {
            self.white_side = Some(side);
            self.fixed = true;
            self.pinned = true;
        }
        if let Some(r) = last {
            let running = r.status.running();
            self.ran = resumed && running;
            // The previous game's last press says who moved last, not who is White.
            if resumed || !running {
                self.learn_mapping(config, &r, to_move);
            }
            self.take_initial(config, &r);
        }
    }

    /// The board (and the clock read through it) is away: presses made until the next
    /// reading are not seen when they are made.
    pub fn board_away(&mut self) {
        self.unheard = true;
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
    pub fn current(&self, config: &Config, now: u64) -> Option<ClockTimes> {
        let r = self.last?;
        let stale = u64::from(config.timing.clock_stale_ms);
        let fresh = !r.status.running() || now.saturating_sub(self.last_ms) <= stale;
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

    fn learn_mapping(&mut self, config: &Config, r: &ClockTimes, to_move: Color) {
        if self.fixed {
            return;
        }
        // The side whose lever is high is the side to move (White at a normal start).
        let high = r.high_side();
        self.set_white(config, if to_move == Color::White { high } else { high.other() });
    }

    /// Makes `white` White's display. When that swaps the displays, what was recorded per
    /// colour under the old mapping swaps with them.
    fn set_white(&mut self, config: &Config, white: ClockSide) {
        if self.side_of(config, Color::White) != white {
            self.initial.swap(0, 1);
            self.prev_clk.swap(0, 1);
            self.prev_unknown.swap(0, 1);
        }
        self.white_side = Some(white);
    }

    fn take_initial(&mut self, config: &Config, r: &ClockTimes) {
        if self.presses > 0 || self.initial_fixed {
            return;
        }
        let white = self.side_of(config, Color::White);
        for (color, side) in [(Color::White, white), (Color::Black, white.other())] {
            let i = color_index(color);
            // Keep the value from before the clock started running down.
            if self.initial[i].is_none() || !r.status.running() {
                self.initial[i] = Some(r.side(side).time.total_seconds());
            }
        }
    }

    /// Takes a reading; returns the presses it shows, in the order they were made, each
    /// with the display whose lever went down (see [`Clocks::attribute`] for its colour).
    /// After an outage of the board (see [`Clocks::board_away`]) a lever found the other
    /// way round was pressed at a time nobody saw, and is no press of this moment.
    ///
    /// A press shows as the lever flipping. Two presses between two polls (the second
    /// player pressing back within milliseconds) leave the lever where it was, but not the
    /// displays: the display that was stopped has changed (it ran, and stopped again at
    /// its own press), or the running display went up (its press added time; see
    /// [`Flips::by_rise_only`]). Either is two presses: first by the side that runs, then
    /// by the other. A pair that changed neither display is hidden from everyone.
    pub fn reading(
        &mut self,
        config: &Config,
        r: &ClockTimes,
        now: u64,
        in_game: bool,
        to_move: Color,
        confirmed_plies: usize,
    ) -> Flips {
        let prev = self.last;
        let after_outage = core::mem::take(&mut self.unheard);
        self.last = Some(*r);
        self.last_ms = now;
        let flipped = prev.is_some_and(|p| p.high_side() != r.high_side());
        let running = r.status.running();
        let was_running = prev.is_some_and(|p| p.status.running());
        // The lever seen before the game's clock runs, or while it is stopped before the
        // first move and its press, is the arbiter setting the clock (stop, reset, raise
        // White's lever, start): it gives White's side and is no press. So does the clock's first start
        // in the game (the side to move runs). A clock found running already (it was
        // started before the board was read) has started: its next flip is a press.
        let setting = in_game
            && ((!running && confirmed_plies == 0 && self.presses == 0) || (!self.ran && !was_running));
        let first_reading_before_a_press = in_game && !flipped && confirmed_plies == 0 && self.presses == 0;
        if !self.fixed && (setting || first_reading_before_a_press) {
            self.learn_mapping(config, r, to_move);
        }
        if !in_game {
            if !running {
                self.idle_presses = (heapless::Vec::new(), false);
            } else if flipped && was_running && !after_outage {
                let side = prev.map_or(r.high_side(), |p| p.high_side());
                if self.idle_presses.0.push(Flip { side, reading: *r, jump: None }).is_err() {
                    self.idle_presses.1 = true;
                }
            }
        }
        // The lever moved while the board was away: a press nobody saw. Which colour made
        // the next one does not follow from the presses seen (see `press_owed`).
        if in_game && after_outage && flipped {
            self.owed = true;
        }
        let mut flips = Flips::default();
        if let Some(prev) = prev
            && in_game
            && !setting
            && !after_outage
        {
            if flipped {
                let side = prev.high_side();
                let after = i64::from(r.side(side).time.total_seconds());
                let jump = self.last_running[side_index(side)].map(|before| after - i64::from(before));
                let _ = flips.list.push(Flip { side, reading: *r, jump });
            } else if was_running && running {
                let first = r.high_side();
                let second = first.other();
                let secs = |x: &ClockTimes, side| i64::from(x.side(side).time.total_seconds());
                let first_up = secs(r, first) - secs(&prev, first);
                let second_changed = secs(r, second) != secs(&prev, second);
                if second_changed || (1..i64::from(MIN_PERIOD_SECS)).contains(&first_up) {
                    // The clock as it stood between the two presses: the first presser's
                    // display as it shows now, the second's as it was, its lever high.
                    let mut between = *r;
                    between.status = ClockStatus(r.status.0 ^ 0x02);
                    match second {
                        ClockSide::Left => between.left = prev.left,
                        ClockSide::Right => between.right = prev.right,
                    }
                    let jump =
                        self.last_running[side_index(first)].map(|before| secs(r, first) - i64::from(before));
                    let _ = flips.list.push(Flip { side: first, reading: between, jump });
                    let jump = Some(secs(r, second) - secs(&prev, second));
                    let _ = flips.list.push(Flip { side: second, reading: *r, jump });
                    flips.by_rise_only = !second_changed;
                }
            }
        }
        if in_game && (flips.list.is_empty() || setting) {
            self.take_initial(config, r);
        }
        if in_game && running {
            self.ran = true;
        }
        if let Some(side) = r.running_side() {
            let now_secs = r.side(side).time.total_seconds();
            // Time that appears on a running display (no press) is a period's time added
            // when the previous period ran out: the player gets it on top of the increment.
            if in_game
                && flips.list.is_empty()
                && let Some(before) = self.last_running[side_index(side)]
                && now_secs >= before + MIN_PERIOD_SECS
            {
                let slot = &mut self.added_running[side_index(side)];
                *slot = slot.saturating_add(now_secs - before);
            }
            self.last_running[side_index(side)] = Some(now_secs);
            self.last_running[side_index(side.other())] = None;
        }
        flips
    }

    /// Gives a press its colour. `certain` is the colour the board says pressed, when it
    /// leaves no doubt (the only ply waiting for a press is that colour's): the press then
    /// re-anchors which display is whose, so that a wrong guess (a clock found running, a
    /// restart mid-game) lasts no longer than the next such press. Otherwise the press is
    /// the display's owner's. Before the first move, the player not to move pressing starts
    /// the clock of the side to move: no move of theirs, so no press (`None`).
    pub fn attribute(
        &mut self,
        config: &Config,
        flip: &Flip,
        certain: Option<Color>,
        to_move: Color,
        confirmed_plies: usize,
    ) -> Option<Press> {
        self.owed = false;
        if let Some(by) = certain {
            self.anchor(config, flip.side, by);
        }
        let by = self.owner(config, flip.side);
        if certain.is_none() && confirmed_plies == 0 && self.presses == 0 && by != to_move {
            return None;
        }
        if let Some(j) = flip.jump
            && (0..=MAX_INC as i64).contains(&j)
        {
            let slot = &mut self.inc_hist[j as usize];
            *slot = slot.saturating_add(1);
            // The most frequent jump; ties go to the larger value, because a press read a
            // second late shows one second less.
            let (count, value) = (*slot, j as u8);
            if (count, value) >= self.inc_best {
                self.inc_best = (count, value);
            }
        }
        self.presses += 1;
        Some(Press { by, side: flip.side, reading: flip.reading, jump: flip.jump, one_of_several: false })
    }

    /// The presses made while the clock ran before the game was found (see
    /// `idle_presses`), oldest first, taken once; `None` when there were more than the
    /// few kept.
    pub fn take_idle_presses(&mut self) -> Option<heapless::Vec<Flip, IDLE_PRESSES>> {
        let (flips, more) = core::mem::take(&mut self.idle_presses);
        (!more).then_some(flips)
    }

    /// A ply of `color` was confirmed, by its own press (`pressed`) or otherwise.
    pub fn ply_confirmed(&mut self, color: Color, pressed: bool) {
        self.owed = !pressed;
        self.unpressed[color_index(color)] = !pressed;
    }

    /// `color`'s last confirmed ply was confirmed without its press.
    pub fn last_ply_unpressed(&self, color: Color) -> bool {
        self.unpressed[color_index(color)]
    }

    /// The last confirmed ply's press has not been seen (see [`Clocks::ply_confirmed`]):
    /// the next press may be that one, made late.
    pub fn press_owed(&self) -> bool {
        self.owed
    }

    /// Makes `side` the display of `by`, unless the configuration fixes the mapping.
    pub fn anchor(&mut self, config: &Config, side: ClockSide, by: Color) {
        if self.pinned {
            return;
        }
        self.set_white(config, if by == Color::White { side } else { side.other() });
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
        u32::from(self.inc_best.1)
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
