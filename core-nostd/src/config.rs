//! Tracker settings and time controls.

use core::fmt;

use dgt_protocol::ClockSide;

/// How the tracker decides which clock display belongs to White.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhiteClockSide {
    /// White is the side whose lever is high at game start (DGT XL manual); the given side
    /// is used only until a clock reading has been seen.
    FromLever {
        /// Used before any clock reading arrives.
        fallback: ClockSide,
    },
    /// White's clock is always this display.
    Fixed(ClockSide),
}

/// How a period's per-move time is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BonusKind {
    /// Added after every move (Fischer; the PGN standard's `+`).
    #[default]
    Fischer,
    /// The clock waits this long each turn before counting down (simple delay, `d`).
    Delay,
    /// The time used, up to this much, is given back after the move (Bronstein, `b`).
    Bronstein,
}

/// One period of a time control.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Period {
    /// Moves to make in this period; 0 means "the rest of the game".
    pub moves: u16,
    /// Time for the period, in seconds (added when the period starts).
    pub seconds: u32,
    /// Per-move time during this period, in seconds.
    pub increment: u32,
    /// How the per-move time is given. The tracker's clock arithmetic (`%emt`) counts
    /// only a Fischer increment: a delay or a Bronstein bonus depends on the time used.
    pub kind: BonusKind,
}

impl Period {
    /// The Fischer increment of this period, 0 for a delay or a Bronstein bonus.
    pub fn fischer_increment(&self) -> u32 {
        if self.kind == BonusKind::Fischer { self.increment } else { 0 }
    }
}

/// A time control of up to three periods, such as `40/5400+30:1800+30`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeControl {
    periods: [Period; 3],
    len: u8,
}

impl TimeControl {
    /// A single period with an increment (`base+increment`, seconds).
    pub const fn fischer(base: u32, increment: u32) -> TimeControl {
        let p = Period { moves: 0, seconds: base, increment, kind: BonusKind::Fischer };
        let none = Period { moves: 0, seconds: 0, increment: 0, kind: BonusKind::Fischer };
        TimeControl { periods: [p, none, p], len: 1 }
    }

    /// Up to three periods; extra periods are ignored. `None` for an empty slice.
    pub fn with_periods(periods: &[Period]) -> Option<TimeControl> {
        let first = *periods.first()?;
        let mut tc = TimeControl { periods: [first; 3], len: 0 };
        for (slot, p) in tc.periods.iter_mut().zip(periods.iter()) {
            *slot = *p;
            tc.len += 1;
        }
        Some(tc)
    }

    /// The periods in order.
    pub fn periods(&self) -> &[Period] {
        &self.periods[..usize::from(self.len)]
    }

    /// The period in effect for a player's `move_number`-th move (1-based).
    pub fn period_for_move(&self, move_number: u32) -> &Period {
        let mut done = 0u32;
        let periods = self.periods();
        for (i, p) in periods.iter().enumerate() {
            if p.moves == 0 || i + 1 == periods.len() || move_number <= done + u32::from(p.moves) {
                return p;
            }
            done += u32::from(p.moves);
        }
        &self.periods[0]
    }

    /// Time added to a player's clock when their `move_number`-th move completes a period
    /// (the next period's time), else 0.
    pub fn bonus_after_move(&self, move_number: u32) -> u32 {
        let mut done = 0u32;
        let periods = self.periods();
        for (i, p) in periods.iter().enumerate() {
            if p.moves == 0 {
                return 0;
            }
            done += u32::from(p.moves);
            if move_number == done {
                return periods.get(i + 1).map_or(0, |n| n.seconds);
            }
        }
        0
    }

    /// Whether a player whose clock has run out `expired` times (`expired` periods ended)
    /// after completing `moves_made` moves gets the next period's time rather than losing:
    /// a next period exists and the moves of every period that ended were made.
    pub(crate) fn continues_after(&self, expired: u32, moves_made: u32) -> bool {
        let periods = self.periods();
        if expired == 0 || expired as usize >= periods.len() {
            return expired == 0;
        }
        let mut required = 0u32;
        for p in &periods[..expired as usize] {
            if p.moves == 0 {
                return false;
            }
            required += u32::from(p.moves);
        }
        moves_made >= required
    }
}

impl fmt::Display for TimeControl {
    /// The PGN standard form: `40/7200:3600`, `5400+30`, `40/5400+30:1800+30`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.periods().iter().enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            if p.moves > 0 {
                write!(f, "{}/", p.moves)?;
            }
            write!(f, "{}", p.seconds)?;
            if p.increment > 0 {
                let sign = match p.kind {
                    BonusKind::Fischer => '+',
                    BonusKind::Delay => 'd',
                    BonusKind::Bronstein => 'b',
                };
                write!(f, "{sign}{}", p.increment)?;
            }
        }
        Ok(())
    }
}

/// Why a `TimeControl` text was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeControlError {
    /// Empty, `?`, `-` or `*` (unknown, none, sandclock): no time control the tracker can
    /// count with.
    NotTimed,
    /// Not the standard's form.
    Syntax,
    /// More than three periods.
    TooManyPeriods,
    /// A period of zero moves, or no time at all.
    Empty,
}

impl fmt::Display for TimeControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TimeControlError::NotTimed => "no time control (?, - or a sandclock)",
            TimeControlError::Syntax => {
                "not a time control of the PGN standard's form (40/7200:3600, 5400+30, 300; d or b for a \
                 delay or Bronstein bonus)"
            }
            TimeControlError::TooManyPeriods => "more than three periods",
            TimeControlError::Empty => "a period of 0 moves, or no time at all",
        })
    }
}

impl core::str::FromStr for TimeControl {
    type Err = TimeControlError;

    /// The PGN standard's form (section 9.6.1: `40/7200:3600`, `5400+30`,
    /// `40/5400+30:1800+30`, `300`), extended with `d` for a simple delay and `b` for a
    /// Bronstein bonus (`300d5`, `300b5`). The one parser of the project: the relay's
    /// configuration and the simulator's clocks read time controls with it.
    fn from_str(text: &str) -> Result<TimeControl, TimeControlError> {
        let text = text.trim();
        if matches!(text, "" | "?" | "-") || text.starts_with('*') {
            return Err(TimeControlError::NotTimed);
        }
        let number = |t: &str| -> Result<u32, TimeControlError> {
            let t = t.trim();
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(TimeControlError::Syntax);
            }
            t.parse().map_err(|_| TimeControlError::Syntax)
        };
        let mut periods = [Period::default(); 3];
        let mut len = 0usize;
        for part in text.split(':') {
            if len == 3 {
                return Err(TimeControlError::TooManyPeriods);
            }
            let (moves, rest) = match part.split_once('/') {
                Some((m, r)) => (number(m)?, r),
                None => (0, part),
            };
            let moves = u16::try_from(moves).map_err(|_| TimeControlError::Syntax)?;
            if part.contains('/') && moves == 0 {
                return Err(TimeControlError::Empty);
            }
            let (base, increment, kind) = match rest.find(['+', 'd', 'b']) {
                Some(i) => {
                    let kind = match rest.as_bytes()[i] {
                        b'+' => BonusKind::Fischer,
                        b'd' => BonusKind::Delay,
                        _ => BonusKind::Bronstein,
                    };
                    (number(&rest[..i])?, number(&rest[i + 1..])?, kind)
                }
                None => (number(rest)?, 0, BonusKind::Fischer),
            };
            periods[len] = Period { moves, seconds: base, increment, kind };
            len += 1;
        }
        if periods[..len].iter().all(|p| p.seconds == 0) {
            return Err(TimeControlError::Empty);
        }
        TimeControl::with_periods(&periods[..len]).ok_or(TimeControlError::Empty)
    }
}

/// Everything the tracker can be told in advance. All times are in milliseconds of the
/// caller's monotonic clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Plies searched between two explainable readings (1..=4; at least 3 recommended).
    pub search_depth: u8,
    /// Every length of time the tracker judges by.
    pub timing: crate::Timing,
    /// Clock display to colour mapping.
    pub white_clock: WhiteClockSide,
    /// The time control, when known (otherwise the increment is inferred from the clock).
    pub time_control: Option<TimeControl>,
    /// Recognise Chess960 start positions.
    pub chess960: bool,
    /// The start position reappearing after at most this many confirmed plies is a takeback
    /// to the start; after more, it is a new game.
    pub takeback_to_start_max_plies: u16,
    /// A flag fall shown by the clock ends the game.
    pub flag_fall_ends_game: bool,
    /// Positions a catch-up search (a board many plies ahead of the line) may visit before
    /// it gives up: the time the tracker may hold the reading of the board. The default
    /// suits a host; a microcontroller, a hundred times slower, sets less.
    pub catch_up_budget: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            search_depth: 3,
            timing: crate::Timing::default(),
            white_clock: WhiteClockSide::FromLever { fallback: ClockSide::Left },
            time_control: None,
            chess960: false,
            takeback_to_start_max_plies: 2,
            flag_fall_ends_game: true,
            catch_up_budget: crate::search::BUDGET,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tc(s: &str) -> Result<TimeControl, TimeControlError> {
        s.parse()
    }

    #[test]
    fn time_controls_of_the_pgn_standard_parse_and_print_back() {
        for text in ["40/7200:3600", "5400+30", "40/5400+30:1800+30", "300", "40/6000+30:20/3000+30:900+30"] {
            let t = tc(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let mut out = FenBuf::default();
            core::fmt::write(&mut out, format_args!("{t}")).unwrap();
            assert_eq!(out.as_str(), text);
        }
        let t = tc("40/5400+30:1800+30").unwrap();
        assert_eq!(
            t.periods()[0],
            Period { moves: 40, seconds: 5400, increment: 30, kind: BonusKind::Fischer }
        );
        assert_eq!(t.periods()[1].moves, 0);
        let d = tc("300d5").unwrap();
        assert_eq!((d.periods()[0].kind, d.periods()[0].fischer_increment()), (BonusKind::Delay, 0));
        assert_eq!(tc("300b5").unwrap().periods()[0].kind, BonusKind::Bronstein);
    }

    #[test]
    fn what_is_no_time_control_is_refused_with_a_reason() {
        assert_eq!(tc("?"), Err(TimeControlError::NotTimed));
        assert_eq!(tc("-"), Err(TimeControlError::NotTimed));
        assert_eq!(tc("*180"), Err(TimeControlError::NotTimed));
        assert_eq!(tc("90 min"), Err(TimeControlError::Syntax));
        assert_eq!(tc("+30"), Err(TimeControlError::Syntax));
        assert_eq!(tc("300+"), Err(TimeControlError::Syntax));
        assert_eq!(tc("0/300"), Err(TimeControlError::Empty));
        assert_eq!(tc("0+5"), Err(TimeControlError::Empty));
        assert_eq!(tc("1:2:3:4"), Err(TimeControlError::TooManyPeriods));
        assert_eq!(tc("99999999999"), Err(TimeControlError::Syntax));
    }

    /// A small text buffer for the no_std tests.
    #[derive(Default)]
    struct FenBuf(heapless::String<64>);

    impl FenBuf {
        fn as_str(&self) -> &str {
            self.0.as_str()
        }
    }

    impl core::fmt::Write for FenBuf {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            self.0.push_str(s).map_err(|_| core::fmt::Error)
        }
    }
}
