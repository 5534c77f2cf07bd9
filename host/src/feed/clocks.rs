//! When a clock reading is news: a client counts the running side down by itself from the
//! last clocks it got, so only a reading that count-down would get wrong is sent.

use std::time::Duration;

use super::views::{ClockView, Side};

/// Whether a clock reading must be sent as a delta, given the clocks last sent (`last`,
/// `elapsed` ago). A client shows the running side's time as the last value sent minus the
/// whole seconds since it arrived, so a reading that only confirms that count-down is not
/// sent. Readings are whole seconds taken at arbitrary moments within a second, so a
/// count-down from one reading may be 1 s off the next one by rounding alone: only a
/// difference of 2 s or more is a real change.
pub fn clock_needs_delta(last: &ClockView, elapsed: Duration, now: &ClockView) -> bool {
    if last.running != now.running {
        return true;
    }
    let (last_run, now_run, last_stopped, now_stopped) = match now.running {
        None => return last != now,
        Some(Side::White) => (last.white, now.white, last.black, now.black),
        Some(Side::Black) => (last.black, now.black, last.white, now.white),
    };
    if last_stopped != now_stopped {
        return true;
    }
    match (last_run, now_run) {
        (Some(from), Some(reading)) => {
            let counted = (elapsed.as_millis() + 500) / 1000;
            let expected = u128::from(from).saturating_sub(counted);
            expected.abs_diff(u128::from(reading)) >= 2
        }
        (a, b) => a != b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clocks(white: u32, black: u32, running: Option<Side>) -> ClockView {
        ClockView { white: Some(white), black: Some(black), running }
    }

    #[test]
    fn a_running_clock_that_counts_down_as_expected_needs_no_delta() {
        let w = Some(Side::White);
        let last = clocks(300, 300, w);
        let s = Duration::from_millis;
        // One reading a second, each 1 s lower: what a client counts down by itself.
        for k in 1..=120u32 {
            let now = clocks(300 - k, 300, w);
            assert!(!clock_needs_delta(&last, s(u64::from(k) * 1000 + 40), &now), "{k}");
            // Readings taken anywhere within the second: off by the 1 s resolution at most.
            assert!(!clock_needs_delta(&last, s(u64::from(k) * 1000 + 700), &now), "{k}");
            assert!(!clock_needs_delta(&last, s(u64::from(k) * 1000 - 400), &now), "{k}");
        }
        // Flag: the count-down stops at zero.
        assert!(!clock_needs_delta(&last, s(400_000), &clocks(0, 300, w)));
    }
    #[test]
    fn a_press_a_stop_or_a_set_time_needs_a_delta() {
        let s = Duration::from_millis;
        let last = clocks(300, 280, Some(Side::White));
        // Pressed: the other side runs, the mover's time (with increment) is new.
        assert!(clock_needs_delta(&last, s(5_000), &clocks(297, 280, Some(Side::Black))));
        // Stopped (pause, or the game ended).
        assert!(clock_needs_delta(&last, s(5_000), &clocks(295, 280, None)));
        // The stopped side's time changed (an arbiter's correction).
        assert!(clock_needs_delta(&last, s(5_000), &clocks(295, 340, Some(Side::White))));
        // The running time jumped (time added, or set): 2 s or more off the count-down.
        assert!(clock_needs_delta(&last, s(5_000), &clocks(293, 280, Some(Side::White))));
        assert!(clock_needs_delta(&last, s(5_000), &clocks(297, 280, Some(Side::White))));
        assert!(clock_needs_delta(&last, s(5_000), &clocks(1_200, 280, Some(Side::White))));
        // Stopped clocks: any change is news, no change is not.
        let stopped = clocks(300, 280, None);
        assert!(!clock_needs_delta(&stopped, s(60_000), &stopped));
        assert!(clock_needs_delta(&stopped, s(60_000), &clocks(300, 281, None)));
        // A time that appears or disappears.
        let none = ClockView { white: None, black: Some(280), running: Some(Side::White) };
        assert!(clock_needs_delta(&last, s(1_000), &none));
    }
}
