//! A DGT 3000 clock as the board sees it: two displays, a lever, run/pause, time controls
//! with Fischer, Bronstein or simple delay, multi-period controls, flag fall, set-and-run
//! from the host, the text it shows, its keys.
//!
//! Time is virtual milliseconds passed in by the caller; the model never reads a clock, so
//! the scenario planner can run a copy of it to know what the display will show.

use std::fmt;

use dgt_protocol::command::run_flags;
use dgt_protocol::{ClockSide, ClockStatus, ClockTime, ClockTimes, SideFlags, SideReading};
use serde::{Deserialize, Serialize};

use crate::SimError;

/// What a period adds per move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Bonus {
    /// Nothing.
    None,
    /// Fischer: this many milliseconds added after every press.
    Fischer(u64),
    /// Simple (US) delay: the clock waits this long each turn before counting down.
    Delay(u64),
    /// Bronstein: the time used, up to this many milliseconds, is given back after the press.
    Bronstein(u64),
}

/// One period of a time control.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Period {
    /// Moves to make in this period (`None`: the rest of the game).
    pub moves: Option<u32>,
    /// Time given at the start of the period, in milliseconds.
    pub base_ms: u64,
    /// Per-move bonus during the period.
    pub bonus: Bonus,
}

/// A time control: one or more periods, as in PGN's `40/7200+30:1800+30`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeControl {
    /// The periods in order; the last one lasts the rest of the game.
    pub periods: Vec<Period>,
}

impl TimeControl {
    /// One period of `base_s` seconds with a Fischer increment of `increment_s` seconds.
    pub fn fischer(base_s: u64, increment_s: u64) -> TimeControl {
        let bonus = if increment_s > 0 { Bonus::Fischer(increment_s * 1000) } else { Bonus::None };
        TimeControl { periods: vec![Period { moves: None, base_ms: base_s * 1000, bonus }] }
    }

    /// Parses the PGN standard form (`40/7200:3600`, `5400+30`, `40/5400+30:1800+30`, `300`),
    /// extended with `d` for a simple delay and `b` for Bronstein (`300d5`, `300b5`), with the
    /// project's one parser ([`dgt_core::TimeControl`]'s `FromStr`).
    pub fn parse(text: &str) -> Result<TimeControl, SimError> {
        let tc: dgt_core::TimeControl =
            text.parse().map_err(|e| SimError::TimeControl(format!("{text:?}: {e}")))?;
        let periods = tc
            .periods()
            .iter()
            .map(|p| {
                let ms = u64::from(p.increment) * 1000;
                let bonus = match p.kind {
                    _ if ms == 0 => Bonus::None,
                    dgt_core::BonusKind::Fischer => Bonus::Fischer(ms),
                    dgt_core::BonusKind::Delay => Bonus::Delay(ms),
                    dgt_core::BonusKind::Bronstein => Bonus::Bronstein(ms),
                };
                Period {
                    moves: (p.moves > 0).then_some(u32::from(p.moves)),
                    base_ms: u64::from(p.seconds) * 1000,
                    bonus,
                }
            })
            .collect();
        Ok(TimeControl { periods })
    }

    /// The per-move bonus of the first period in whole seconds (0 when none).
    pub fn first_increment_s(&self) -> u64 {
        match self.periods.first().map(|p| p.bonus) {
            Some(Bonus::Fischer(ms) | Bonus::Delay(ms) | Bonus::Bronstein(ms)) => ms / 1000,
            _ => 0,
        }
    }
}

impl fmt::Display for TimeControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.periods.iter().enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            if let Some(m) = p.moves {
                write!(f, "{m}/")?;
            }
            write!(f, "{}", p.base_ms / 1000)?;
            match p.bonus {
                Bonus::None => {}
                Bonus::Fischer(ms) => write!(f, "+{}", ms / 1000)?,
                Bonus::Delay(ms) => write!(f, "d{}", ms / 1000)?,
                Bonus::Bronstein(ms) => write!(f, "b{}", ms / 1000)?,
            }
        }
        Ok(())
    }
}

/// The keys of a DGT 3000.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Button {
    /// Back (left-most).
    Back,
    /// Minus.
    Minus,
    /// Run/pause: also pauses and resumes the clock.
    Run,
    /// Plus.
    Plus,
    /// OK/forward.
    Ok,
}

impl Button {
    /// The auto-ack bytes the clock sends when the key is pressed: ack2 = 0x01 | key bit,
    /// ack3 = key code (fact sheet 5.5, PicoChess's table).
    pub fn ack_bytes(self) -> [u8; 4] {
        let (bit, code) = match self {
            Button::Back => (0x04, 0x31),
            Button::Plus => (0x08, 0x32),
            Button::Run => (0x10, 0x33),
            Button::Minus => (0x20, 0x34),
            Button::Ok => (0x40, 0x35),
        };
        [0x10, 0x88, 0x01 | bit, code]
    }

    /// Parses `back`, `minus`, `run`, `plus`, `ok`.
    pub fn parse(name: &str) -> Option<Button> {
        Some(match name.to_ascii_lowercase().as_str() {
            "back" => Button::Back,
            "minus" => Button::Minus,
            "run" | "pause" => Button::Run,
            "plus" => Button::Plus,
            "ok" => Button::Ok,
            _ => return None,
        })
    }
}

/// One side of the clock.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SideClock {
    remaining_ms: u64,
    counts_up: bool,
    /// Presses made by this side.
    moves: u32,
    /// Presses made in the current period.
    period_moves: u32,
    period: usize,
    flag: bool,
    final_flag: bool,
    /// Delay still to wait this turn (simple delay).
    delay_left_ms: u64,
    /// Milliseconds counted this turn (for Bronstein).
    used_ms: u64,
}

impl SideClock {
    fn new(ms: u64) -> SideClock {
        SideClock {
            remaining_ms: ms,
            counts_up: false,
            moves: 0,
            period_moves: 0,
            period: 0,
            flag: false,
            final_flag: false,
            delay_left_ms: 0,
            used_ms: 0,
        }
    }
}

/// What the clock shows on one side, with the model's exact time behind it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SideView {
    /// Whole seconds on the display.
    pub display_s: u32,
    /// Exact remaining milliseconds.
    pub remaining_ms: u64,
    /// The flag fell.
    pub flag: bool,
    /// Presses made by this side.
    pub moves: u32,
}

/// A simulated DGT 3000 (version 2.0) attached to the board.
#[derive(Clone, Debug)]
pub struct Dgt3000 {
    tc: Option<TimeControl>,
    left: SideClock,
    right: SideClock,
    lever_right_high: bool,
    active: ClockSide,
    running: bool,
    follow_lever: bool,
    last_ms: u64,
    text: Option<String>,
    beeps: u32,
    version: (u8, u8),
    battery_low: bool,
    /// Puppet mode (see [`Dgt3000::make_puppet`]): `Some(time_per_move)`.
    puppet: Option<bool>,
}

impl Dgt3000 {
    /// A stopped clock set to `tc` on both sides, lever up on `first` (White's side, which
    /// runs when the clock is started).
    pub fn new(tc: TimeControl, first: ClockSide, now_ms: u64) -> Dgt3000 {
        let base = tc.periods.first().map_or(0, |p| p.base_ms);
        let mut clock = Dgt3000 {
            tc: Some(tc),
            left: SideClock::new(base),
            right: SideClock::new(base),
            lever_right_high: first == ClockSide::Right,
            active: first,
            running: false,
            follow_lever: true,
            last_ms: now_ms,
            text: None,
            beeps: 0,
            version: (2, 0),
            battery_low: false,
            puppet: None,
        };
        clock.begin_turn(first);
        clock
    }

    /// The clock's firmware version (2.0 for a DGT 3000).
    pub fn version(&self) -> (u8, u8) {
        self.version
    }

    /// The time control in force (`None` after the host set the times itself).
    pub fn time_control(&self) -> Option<&TimeControl> {
        self.tc.as_ref()
    }

    fn side(&self, side: ClockSide) -> &SideClock {
        match side {
            ClockSide::Left => &self.left,
            ClockSide::Right => &self.right,
        }
    }

    fn side_mut(&mut self, side: ClockSide) -> &mut SideClock {
        match side {
            ClockSide::Left => &mut self.left,
            ClockSide::Right => &mut self.right,
        }
    }

    fn period_of(&self, side: ClockSide) -> Option<Period> {
        let s = self.side(side);
        self.tc.as_ref().and_then(|tc| tc.periods.get(s.period).or(tc.periods.last()).copied())
    }

    fn is_last_period(&self, side: ClockSide) -> bool {
        self.tc.as_ref().is_none_or(|tc| self.side(side).period + 1 >= tc.periods.len())
    }

    fn begin_turn(&mut self, side: ClockSide) {
        let delay = match self.period_of(side).map(|p| p.bonus) {
            Some(Bonus::Delay(ms)) => ms,
            _ => 0,
        };
        let s = self.side_mut(side);
        s.delay_left_ms = delay;
        s.used_ms = 0;
    }

    /// Runs the clock up to `now_ms`.
    pub fn advance(&mut self, now_ms: u64) {
        let mut dt = now_ms.saturating_sub(self.last_ms);
        self.last_ms = self.last_ms.max(now_ms);
        if !self.running || dt == 0 || self.puppet.is_some() {
            return;
        }
        let active = self.active;
        let last_period = self.is_last_period(active);
        let next_base = self.tc.as_ref().and_then(|tc| tc.periods.get(self.side(active).period + 1)).copied();
        let s = self.side_mut(active);
        if s.final_flag {
            return;
        }
        let wait = dt.min(s.delay_left_ms);
        s.delay_left_ms -= wait;
        dt -= wait;
        s.used_ms += dt;
        if s.counts_up {
            s.remaining_ms = (s.remaining_ms + dt).min(35_999_000);
            return;
        }
        if dt < s.remaining_ms {
            s.remaining_ms -= dt;
            return;
        }
        let over = dt - s.remaining_ms;
        s.remaining_ms = 0;
        s.flag = true;
        match (last_period, next_base) {
            (false, Some(next)) => {
                // The flag shows; the clock goes on into the next period's time.
                s.period += 1;
                s.period_moves = 0;
                s.remaining_ms = next.base_ms.saturating_sub(over);
            }
            _ => s.final_flag = true,
        }
    }

    /// The side whose button is up (the side counting when running).
    pub fn high_side(&self) -> ClockSide {
        if self.lever_right_high { ClockSide::Right } else { ClockSide::Left }
    }

    /// The side that counts while the clock runs.
    pub fn active_side(&self) -> ClockSide {
        self.active
    }

    /// True while the clock runs (not paused, started).
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// A player on `side` presses their button. Returns true when the lever moved (the
    /// side was up); the bonus goes to that side when the clock was counting for it.
    pub fn press(&mut self, side: ClockSide, now_ms: u64) -> bool {
        self.advance(now_ms);
        if self.high_side() != side {
            return false;
        }
        self.lever_right_high = side == ClockSide::Left;
        if !self.follow_lever {
            return true;
        }
        if self.puppet.is_some() {
            // The script gives the display after the press (increment included).
            self.active = side.other();
            return true;
        }
        let counted = self.running && self.active == side;
        if counted && !self.side(side).final_flag {
            let bonus = self.period_of(side).map_or(Bonus::None, |p| p.bonus);
            let period_moves = self.period_of(side).and_then(|p| p.moves);
            let next = self.tc.as_ref().and_then(|tc| tc.periods.get(self.side(side).period + 1)).copied();
            let s = self.side_mut(side);
            s.moves += 1;
            s.period_moves += 1;
            match bonus {
                Bonus::Fischer(ms) => s.remaining_ms += ms,
                Bonus::Bronstein(ms) => s.remaining_ms += s.used_ms.min(ms),
                Bonus::None | Bonus::Delay(_) => {}
            }
            if let (Some(n), Some(next)) = (period_moves, next)
                && s.period_moves >= n
            {
                s.period += 1;
                s.period_moves = 0;
                s.remaining_ms += next.base_ms;
            }
            s.remaining_ms = s.remaining_ms.min(35_999_000);
        }
        self.active = side.other();
        self.begin_turn(side.other());
        true
    }

    /// Starts the clock (the arbiter's start); the side whose lever is up runs.
    pub fn start(&mut self, now_ms: u64) {
        self.advance(now_ms);
        if self.follow_lever {
            self.active = self.high_side();
        }
        self.running = true;
    }

    /// Stops (pauses) the clock.
    pub fn stop(&mut self, now_ms: u64) {
        self.advance(now_ms);
        self.running = false;
    }

    /// A key is pressed; run/pause toggles the clock. Returns the auto-ack bytes.
    pub fn press_button(&mut self, button: Button, now_ms: u64) -> [u8; 4] {
        self.advance(now_ms);
        if button == Button::Run {
            if self.running { self.stop(now_ms) } else { self.start(now_ms) }
        }
        button.ack_bytes()
    }

    /// The host's set-and-run: both times, count directions and run flags
    /// ([`run_flags`]). The clock is host-controlled afterwards (no bonus, no periods).
    #[allow(clippy::too_many_arguments)]
    pub fn set_and_run(
        &mut self,
        left: ClockTime,
        left_up: bool,
        right: ClockTime,
        right_up: bool,
        flags: u8,
        now_ms: u64,
    ) {
        self.advance(now_ms);
        self.tc = None;
        self.left = SideClock::new(u64::from(left.total_seconds()) * 1000);
        self.left.counts_up = left_up;
        self.right = SideClock::new(u64::from(right.total_seconds()) * 1000);
        self.right.counts_up = right_up;
        self.follow_lever = flags & run_flags::TOGGLE_ON_LEVER != 0;
        if flags & run_flags::RIGHT_RUNS != 0 {
            self.active = ClockSide::Right;
        } else if flags & run_flags::LEFT_RUNS != 0 {
            self.active = ClockSide::Left;
        }
        self.running =
            flags & (run_flags::LEFT_RUNS | run_flags::RIGHT_RUNS) != 0 && flags & run_flags::PAUSE == 0;
    }

    /// Shows text (DGT 3000 ASCII command); `None` clears it (END command).
    pub fn set_text(&mut self, text: Option<String>) {
        self.text = text;
    }

    /// The text the clock shows instead of the times, if any.
    pub fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// Counts a beep.
    pub fn beep(&mut self) {
        self.beeps += 1;
    }

    /// Beeps heard so far.
    pub fn beeps(&self) -> u32 {
        self.beeps
    }

    /// Shows or hides the battery-low indicator.
    pub fn set_battery_low(&mut self, low: bool) {
        self.battery_low = low;
    }

    /// Turns the clock into a puppet of a hand script: from now on it never counts by
    /// itself, a press only flips the lever (no bonus, no periods), and the displays change
    /// only through [`Dgt3000::show`] and [`Dgt3000::puppet_press`]. Hand scripts dictate
    /// every display value (their countdown does not follow real time), so a clock that
    /// counted would contradict them. `time_per_move` sets the hours bytes' time-per-move
    /// bit (0x20) on both sides, as a clock set to an increment control does.
    pub fn make_puppet(&mut self, left_s: u32, right_s: u32, time_per_move: bool, now_ms: u64) {
        self.advance(now_ms);
        self.puppet = Some(time_per_move);
        self.left = SideClock::new(u64::from(left_s) * 1000);
        self.right = SideClock::new(u64::from(right_s) * 1000);
    }

    /// True in puppet mode ([`Dgt3000::make_puppet`]).
    pub fn is_puppet(&self) -> bool {
        self.puppet.is_some()
    }

    /// Sets a display to `seconds` (a puppet's countdown step; on a clock that counts by
    /// itself the time is simply reset to it).
    pub fn show(&mut self, side: ClockSide, seconds: u32) {
        let s = self.side_mut(side);
        s.remaining_ms = u64::from(seconds.min(35_999)) * 1000;
    }

    /// A press as a script states it: `side`'s display becomes `display_s` and the lever
    /// goes down on `side` (up on the other), whichever side was up before. Returns true
    /// when the lever moved.
    pub fn puppet_press(&mut self, side: ClockSide, display_s: u32, now_ms: u64) -> bool {
        self.advance(now_ms);
        self.show(side, display_s);
        let moved = self.high_side() == side;
        self.lever_right_high = side == ClockSide::Left;
        if self.follow_lever {
            self.active = side.other();
        }
        moved
    }

    /// One side as displayed (after [`Dgt3000::advance`]).
    pub fn view(&self, side: ClockSide) -> SideView {
        let s = self.side(side);
        let display_s = if s.counts_up { s.remaining_ms / 1000 } else { s.remaining_ms.div_ceil(1000) };
        SideView {
            display_s: display_s.min(35_999) as u32,
            remaining_ms: s.remaining_ms,
            flag: s.flag,
            moves: s.moves,
        }
    }

    /// The BWTIME reading of the clock now (call [`Dgt3000::advance`] first).
    pub fn reading(&self) -> ClockTimes {
        let reading = |side: ClockSide| {
            let s = self.side(side);
            let per_move = self.puppet.unwrap_or_else(|| {
                matches!(
                    self.period_of(side).map(|p| p.bonus),
                    Some(Bonus::Fischer(_) | Bonus::Delay(_) | Bonus::Bronstein(_))
                )
            });
            SideReading {
                time: ClockTime::from_seconds(self.view(side).display_s),
                flags: SideFlags { final_flag: s.final_flag, time_per_move: per_move, flag: s.flag },
            }
        };
        // D3 accompanies the left side up and D4 the right side up, as in the real
        // capture (fact sheet 5.3).
        let status = u8::from(self.running)
            | (u8::from(self.lever_right_high) << 1)
            | (u8::from(self.battery_low) << 2)
            | (u8::from(!self.lever_right_high) << 3)
            | (u8::from(self.lever_right_high) << 4);
        ClockTimes {
            right: reading(ClockSide::Right),
            left: reading(ClockSide::Left),
            status: ClockStatus(status),
        }
    }

    /// Virtual milliseconds after `now_ms` at which the display next changes, if it runs.
    pub fn next_change_ms(&self, now_ms: u64) -> Option<u64> {
        let s = self.side(self.active);
        if !self.running || s.final_flag || self.puppet.is_some() {
            return None;
        }
        let step = if s.counts_up {
            1000 - s.remaining_ms % 1000
        } else if s.remaining_ms == 0 {
            1
        } else {
            s.remaining_ms - (s.remaining_ms - 1) / 1000 * 1000
        };
        let since = now_ms.saturating_sub(self.last_ms);
        Some(now_ms + (s.delay_left_ms + step).saturating_sub(since).max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_the_standard_forms() {
        for text in ["40/7200:3600", "40/5400+30:1800+30", "300+3", "180", "300d5", "300b5"] {
            let tc = TimeControl::parse(text).unwrap();
            assert_eq!(tc.to_string(), text);
        }
        let tc = TimeControl::parse("40/7200:3600").unwrap();
        assert_eq!(tc.periods.len(), 2);
        assert_eq!(tc.periods[0].moves, Some(40));
        for bad in ["", "abc", "0/300", "40/", "300+x", ": 90 minutes"] {
            assert!(TimeControl::parse(bad).is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn fischer_increment_and_lever() {
        let mut c = Dgt3000::new(TimeControl::fischer(180, 2), ClockSide::Left, 0);
        assert_eq!(c.reading().status.0, 0x08);
        c.start(0);
        assert_eq!(c.reading().status.0, 0x09);
        c.advance(3_500);
        assert_eq!(c.view(ClockSide::Left).display_s, 177);
        assert!(!c.press(ClockSide::Right, 3_500), "the low side cannot press");
        assert!(c.press(ClockSide::Left, 4_000));
        assert_eq!(c.view(ClockSide::Left).remaining_ms, 178_000);
        assert_eq!(c.reading().status.0, 0x13);
        assert_eq!(c.reading().running_side(), Some(ClockSide::Right));
        assert!(c.reading().left.flags.time_per_move);
        c.advance(5_000);
        assert_eq!(c.view(ClockSide::Right).remaining_ms, 179_000);
    }

    #[test]
    fn second_period_time_arrives_at_move_forty() {
        let tc = TimeControl::parse("40/7200:3600").unwrap();
        let mut c = Dgt3000::new(tc, ClockSide::Left, 0);
        c.start(0);
        let mut now = 0;
        for _ in 0..40 {
            now += 1000;
            c.press(ClockSide::Left, now);
            now += 1000;
            c.press(ClockSide::Right, now);
        }
        assert_eq!(c.view(ClockSide::Left).remaining_ms, 7_200_000 - 40_000 + 3_600_000);
        assert_eq!(c.view(ClockSide::Right).moves, 40);
    }

    #[test]
    fn flag_falls_and_blocks_at_zero() {
        let mut c = Dgt3000::new(TimeControl::fischer(10, 0), ClockSide::Right, 0);
        c.start(0);
        assert_eq!(c.next_change_ms(0), Some(1000));
        c.advance(12_000);
        let r = c.reading();
        assert!(r.right.flags.final_flag && r.right.flags.flag);
        assert_eq!(r.right.time.total_seconds(), 0);
        assert_eq!(c.next_change_ms(12_000), None);
        assert!(!r.left.flags.flag);
    }

    #[test]
    fn delay_and_bronstein() {
        let mut c = Dgt3000::new(TimeControl::parse("60d5").unwrap(), ClockSide::Left, 0);
        c.start(0);
        c.advance(4_000);
        assert_eq!(c.view(ClockSide::Left).remaining_ms, 60_000);
        c.advance(8_000);
        assert_eq!(c.view(ClockSide::Left).remaining_ms, 57_000);
        let mut b = Dgt3000::new(TimeControl::parse("60b5").unwrap(), ClockSide::Left, 0);
        b.start(0);
        b.press(ClockSide::Left, 3_000);
        assert_eq!(b.view(ClockSide::Left).remaining_ms, 60_000);
        b.press(ClockSide::Right, 10_000);
        assert_eq!(b.view(ClockSide::Right).remaining_ms, 58_000);
    }

    #[test]
    fn set_and_run_puts_the_host_in_charge() {
        let mut c = Dgt3000::new(TimeControl::fischer(300, 0), ClockSide::Left, 0);
        let t = |s| ClockTime::from_seconds(s);
        c.set_and_run(t(100), false, t(200), false, run_flags::RIGHT_RUNS, 0);
        c.advance(1_500);
        assert_eq!(c.view(ClockSide::Right).display_s, 199);
        assert_eq!(c.view(ClockSide::Left).display_s, 100);
        assert!(c.time_control().is_none());
        c.set_and_run(t(100), true, t(200), false, run_flags::LEFT_RUNS, 2_000);
        c.advance(4_500);
        assert_eq!(c.view(ClockSide::Left).display_s, 102);
        c.set_and_run(t(1), false, t(2), false, run_flags::PAUSE, 5_000);
        assert!(!c.is_running());
    }

    #[test]
    fn a_puppet_shows_only_what_it_is_told() {
        let mut c = Dgt3000::new(TimeControl::fischer(300, 0), ClockSide::Left, 0);
        c.make_puppet(5460, 5100, true, 0);
        c.start(0);
        c.advance(60_000);
        assert_eq!(c.next_change_ms(60_000), None);
        let r = c.reading();
        assert_eq!((r.left.time.total_seconds(), r.right.time.total_seconds()), (5460, 5100));
        assert!(r.left.flags.time_per_move && r.right.flags.time_per_move);
        assert_eq!(r.running_side(), Some(ClockSide::Left));
        c.show(ClockSide::Left, 5458);
        assert!(c.puppet_press(ClockSide::Left, 5490, 61_000));
        let r = c.reading();
        assert_eq!((r.left.time.total_seconds(), r.right.time.total_seconds()), (5490, 5100));
        assert_eq!(r.running_side(), Some(ClockSide::Right));
        // Two presses in one poll: the lever ends where it started.
        c.puppet_press(ClockSide::Right, 5101, 62_000);
        c.puppet_press(ClockSide::Left, 5480, 62_000);
        assert_eq!(c.reading().running_side(), Some(ClockSide::Right));
        c.stop(63_000);
        assert!(!c.reading().status.running());
    }

    #[test]
    fn run_button_pauses_and_resumes() {
        let mut c = Dgt3000::new(TimeControl::fischer(60, 0), ClockSide::Left, 0);
        c.start(0);
        assert_eq!(c.press_button(Button::Run, 1_000), [0x10, 0x88, 0x11, 0x33]);
        assert!(!c.is_running());
        c.advance(9_000);
        assert_eq!(c.view(ClockSide::Left).remaining_ms, 59_000);
        c.press_button(Button::Run, 9_000);
        assert!(c.is_running());
    }
}
