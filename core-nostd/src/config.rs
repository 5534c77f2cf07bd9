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

/// One period of a time control.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Period {
    /// Moves to make in this period; 0 means "the rest of the game".
    pub moves: u16,
    /// Time for the period, in seconds (added when the period starts).
    pub seconds: u32,
    /// Increment per move during this period, in seconds.
    pub increment: u32,
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
        let p = Period { moves: 0, seconds: base, increment };
        TimeControl { periods: [p, Period { moves: 0, seconds: 0, increment: 0 }, p], len: 1 }
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
                write!(f, "+{}", p.increment)?;
            }
        }
        Ok(())
    }
}

/// Everything the tracker can be told in advance. All times are in milliseconds of the
/// caller's monotonic clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Plies searched between two explainable readings (1..=4; at least 3 recommended).
    pub search_depth: u8,
    /// How long the board must be still before a full search (several plies, takebacks)
    /// runs on a reading that the one-ply fast path did not explain.
    pub settle_ms: u32,
    /// Without a running clock: how long a position must stand before its moves are final.
    pub quiet_ms: u32,
    /// With a running clock: how long a position must stand before its unpressed moves are
    /// final anyway (the piece was released, so the move was made; the press was forgotten).
    pub unpressed_ms: u32,
    /// With a clock: how long a line of two or more provisional plies must stand before
    /// all but its last ply are final (a forgotten press, resolved by what followed).
    pub chain_confirm_ms: u32,
    /// How long an unexplainable board must stand before it is reported.
    pub mismatch_ms: u32,
    /// How long a clock press waits for the board to show the presser's move.
    pub press_window_ms: u32,
    /// One board scan period: a press confirms at once when the board has not changed
    /// for this long before it (the board has already reported where the piece stopped);
    /// otherwise it waits until the board has been still this long after its last change.
    pub press_stable_ms: u32,
    /// The longest a hand is taken to rest a piece on a square it slides through. A press
    /// finds a piece that could still be sliding on (a pawn that may still make its double
    /// step, a line piece with room beyond): it confirms at once only when the board has
    /// been still for `press_stable_ms + slide_pause_ms` (the rest of the slide would have
    /// been reported by then); otherwise a scan period after the press.
    pub slide_pause_ms: u32,
    /// Minimum time between two board-dump requests.
    pub dump_request_interval_ms: u32,
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
}

impl Config {
    /// How long a board must be still before no slide can still be under way: the longest
    /// rest of a sliding hand, and a scan period to report what it did next.
    pub(crate) fn slide_settled_ms(&self) -> u64 {
        u64::from(self.press_stable_ms) + u64::from(self.slide_pause_ms)
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            search_depth: 3,
            settle_ms: 300,
            quiet_ms: 2000,
            unpressed_ms: 4000,
            chain_confirm_ms: 1000,
            mismatch_ms: 1500,
            press_window_ms: 3000,
            press_stable_ms: 250,
            slide_pause_ms: 350,
            dump_request_interval_ms: 1000,
            white_clock: WhiteClockSide::FromLever { fallback: ClockSide::Left },
            time_control: None,
            chess960: false,
            takeback_to_start_max_plies: 2,
            flag_fall_ends_game: true,
        }
    }
}
