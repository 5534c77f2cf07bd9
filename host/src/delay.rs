//! The broadcast delay: what spectators see is the live state as it was `delay_s` ago.
//!
//! The relay keeps its live state as without a delay (the operator's views and the
//! journal). Changes meant for the public (feed deltas, PGN texts) go through a
//! [`DelayLine`] in the order they happened, and are released once they are older than
//! the delay. Each public output is thus a replay of the live one, shifted in time: the
//! moves, `%clk` and the `Clock` tag of one moment come out together, and a result comes
//! out after the move it follows. With a zero delay and nothing waiting, changes pass
//! straight through.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::invalid::Invalid;

/// The longest delay, seconds: what Lichess accepts for a broadcast.
pub const MAX_DELAY_S: u32 = 3600;

/// The current delay, shared by the parts that hold public output back; changed at run
/// time by the admin API.
#[derive(Debug, Default)]
pub struct Delay(AtomicU32);

impl Delay {
    /// The delay in seconds.
    pub fn seconds(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }

    /// The delay as a duration.
    pub fn get(&self) -> Duration {
        Duration::from_secs(u64::from(self.seconds()))
    }

    /// Sets the delay; out-of-range values are refused and change nothing.
    pub fn set(&self, seconds: u64) -> Result<(), Invalid> {
        let s = check(seconds)?;
        self.0.store(s, Ordering::Relaxed);
        Ok(())
    }
}

/// `seconds` as a delay, if within 0..=[`MAX_DELAY_S`].
pub fn check(seconds: u64) -> Result<u32, Invalid> {
    crate::invalid::in_range("delay_s", seconds, 0, u64::from(MAX_DELAY_S))?;
    Ok(seconds as u32)
}

/// Items in the order they happened, each released once `delay` has passed since (times
/// of the relay's [`crate::clock::Clock`]).
///
/// The delay is given at release, not at entry: a shorter delay set later releases what
/// waited at once, a longer one holds back what has not been released yet.
#[derive(Debug)]
pub struct DelayLine<T> {
    queue: VecDeque<(Instant, T)>,
}

impl<T> Default for DelayLine<T> {
    fn default() -> Self {
        DelayLine { queue: VecDeque::new() }
    }
}

impl<T> DelayLine<T> {
    /// Adds an item that happened at `at` (not earlier than the items before it).
    pub fn push(&mut self, at: Instant, item: T) {
        self.queue.push_back((at, item));
    }

    /// Keeps only the waiting items `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        self.queue.retain(|(_, item)| keep(item));
    }

    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Takes the items at least `delay` old at `now`, oldest first.
    pub fn release(&mut self, now: Instant, delay: Duration) -> Vec<T> {
        let mut out = Vec::new();
        while self.queue.front().is_some_and(|(at, _)| now.saturating_duration_since(*at) >= delay) {
            if let Some((_, item)) = self.queue.pop_front() {
                out.push(item);
            }
        }
        out
    }

    /// When the oldest waiting item is due, if any waits.
    pub fn next_due(&self, delay: Duration) -> Option<Instant> {
        self.queue.front().map(|(at, _)| *at + delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_out_in_order_once_old_enough() {
        let t0 = Instant::now();
        let mut line = DelayLine::default();
        line.push(t0, 1);
        line.push(t0 + Duration::from_secs(1), 2);
        let d = Duration::from_secs(3);
        assert!(line.release(t0 + Duration::from_millis(2999), d).is_empty());
        assert_eq!(line.next_due(d), Some(t0 + d));
        assert_eq!(line.release(t0 + Duration::from_secs(3), d), vec![1]);
        assert_eq!(line.release(t0 + Duration::from_secs(10), d), vec![2]);
        assert!(line.is_empty());
    }

    #[test]
    fn a_shorter_delay_releases_what_waited() {
        let t0 = Instant::now();
        let mut line = DelayLine::default();
        line.push(t0, "a");
        assert!(line.release(t0 + Duration::from_secs(1), Duration::from_secs(60)).is_empty());
        assert_eq!(line.release(t0 + Duration::from_secs(1), Duration::ZERO), vec!["a"]);
    }

    #[test]
    fn the_range_is_that_of_lichess() {
        let d = Delay::default();
        assert_eq!(d.seconds(), 0);
        d.set(3600).unwrap();
        assert_eq!(d.get(), Duration::from_secs(3600));
        assert_eq!(d.set(3601), Err(Invalid::OutOfRange { what: "delay_s", min: 0, max: 3600 }));
        assert_eq!(d.seconds(), 3600);
        assert!(check(u64::MAX).is_err());
    }
}
