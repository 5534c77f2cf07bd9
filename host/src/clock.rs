//! The relay's clock: the one source of time of every part that reads it (the board
//! sessions, the hub and its broadcast delay, the store's delayed PGN, the push, the admin
//! API's backoff, the edges).
//!
//! # Why one clock, passed in
//! The session crate reads no clock: its caller gives it the time. The host does the same
//! one level up: its parts take a [`Clock`] instead of calling `Instant::now` or
//! `SystemTime::now`, so a test can run them on a clock it controls.
//!
//! Two times come from it: the monotonic instant, for delays, deadlines and rates (tokio's,
//! so a test on tokio's paused clock moves it), and the wall-clock time, for what is stamped
//! for people (when a move or an alert was published, a game's `UTCDate`, the push's last
//! success).
//!
//! A [`Clock::manual`] stands still until it is advanced, for tests that run the parts
//! without a runtime's timers. Code that sleeps on tokio's timers runs on a system clock
//! (in tests, on tokio's paused clock).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

/// The relay's clock. Cheap to clone; clones share their time.
#[derive(Clone, Debug)]
pub struct Clock {
    /// When the relay started: its millisecond count's zero.
    start: Instant,
    source: Source,
}

#[derive(Clone, Debug)]
enum Source {
    /// tokio's monotonic clock and the system's wall clock.
    System,
    /// Stands still until advanced: nanoseconds since `start`, and the wall-clock
    /// milliseconds at `start`.
    Manual { elapsed_ns: Arc<AtomicU64>, wall_at_start_ms: u64 },
}

impl Clock {
    /// The system's clocks (tokio's monotonic one, paused in tests that pause it).
    pub fn system() -> Clock {
        Clock { start: Instant::now(), source: Source::System }
    }

    /// A clock that stands still until [`Clock::advance`]d, its wall-clock time
    /// `wall_at_start_ms` milliseconds since 1970 at first.
    pub fn manual(wall_at_start_ms: u64) -> Clock {
        Clock {
            start: Instant::now(),
            source: Source::Manual { elapsed_ns: Arc::default(), wall_at_start_ms },
        }
    }

    /// Moves a manual clock forward (a system clock is moved by time itself).
    pub fn advance(&self, by: Duration) {
        if let Source::Manual { elapsed_ns, .. } = &self.source {
            elapsed_ns.fetch_add(u64::try_from(by.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
        }
    }

    /// Now, monotonic.
    pub fn now(&self) -> Instant {
        match &self.source {
            Source::System => Instant::now(),
            Source::Manual { elapsed_ns, .. } => {
                self.start + Duration::from_nanos(elapsed_ns.load(Ordering::Relaxed))
            }
        }
    }

    /// Milliseconds since the relay started: the time every board session is given.
    pub fn ms(&self) -> u64 {
        self.now().saturating_duration_since(self.start).as_millis() as u64
    }

    /// The instant of a time in milliseconds since the relay started.
    pub fn at(&self, ms: u64) -> Instant {
        self.start + Duration::from_millis(ms)
    }

    /// Wall-clock milliseconds since 1970 (0 if the system clock is before 1970).
    pub fn wall_ms(&self) -> u64 {
        match &self.source {
            Source::System => {
                SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
            }
            Source::Manual { wall_at_start_ms, .. } => wall_at_start_ms + self.ms(),
        }
    }

    /// Wall-clock seconds since 1970.
    pub fn unix_s(&self) -> u64 {
        self.wall_ms() / 1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_advanced() {
        let c = Clock::manual(1_000_000);
        let t0 = c.now();
        assert_eq!((c.ms(), c.wall_ms()), (0, 1_000_000));
        c.advance(Duration::from_millis(1500));
        assert_eq!(c.now() - t0, Duration::from_millis(1500));
        assert_eq!((c.ms(), c.wall_ms(), c.unix_s()), (1500, 1_001_500, 1001));
        assert_eq!(c.at(1500), c.now());
        let shared = c.clone();
        shared.advance(Duration::from_millis(500));
        assert_eq!(c.ms(), 2000, "clones share their time");
    }

    #[tokio::test(start_paused = true)]
    async fn a_system_clock_follows_tokios_paused_time() {
        let c = Clock::system();
        tokio::time::sleep(Duration::from_secs(90)).await;
        assert_eq!(c.ms(), 90_000);
    }
}
