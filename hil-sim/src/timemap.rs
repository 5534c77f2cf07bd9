//! The one mapping between a scenario's virtual time and real time.
//!
//! A board plays its scenario faster than real time: thinking at `speed`, and the hand
//! sequences ([`crate::Scenario::hand_spans`]) at a slower `hand_speed`, so that what the
//! hands do on the board keeps a human pace while the hours between moves fly by. The
//! simulated boards on ptys ([`crate::sim::VirtualTime`]) and the offline harness that
//! computes when a relay would see each message both use this mapping.

/// The speed factors a board really uses for `speed` and `hand_speed`: both positive and
/// finite (else 1.0), the hand speed never faster than the speed.
pub fn rates(speed: f64, hand_speed: f64) -> (f64, f64) {
    let ok = |x: f64| if x.is_finite() && x > 0.0 { x } else { 1.0 };
    let speed = ok(speed);
    (speed, ok(hand_speed).min(speed))
}

/// Virtual milliseconds from `from` on against real milliseconds from then: stretches of
/// virtual time at `hand_speed`, the rest at `speed`.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeMap {
    /// The virtual time real millisecond 0 stands for.
    from: f64,
    speed: f64,
    hand_speed: f64,
    /// Virtual stretches `[a, b)` played at the hand speed, sorted, none ending at or
    /// before `from`.
    spans: Vec<(u64, u64)>,
}

impl TimeMap {
    /// The mapping from virtual time `from` on, with `spans` (sorted or not; empty and
    /// past ones are dropped) at `hand_speed` and the rest at `speed` (see [`rates`]).
    pub fn new(from: f64, spans: Vec<(u64, u64)>, speed: f64, hand_speed: f64) -> TimeMap {
        let (speed, hand_speed) = rates(speed, hand_speed);
        let mut spans: Vec<(u64, u64)> =
            spans.into_iter().filter(|&(a, b)| b > a && (b as f64) > from).collect();
        spans.sort_unstable();
        TimeMap { from, speed, hand_speed, spans }
    }

    /// The virtual time real millisecond 0 stands for.
    pub fn from(&self) -> f64 {
        self.from
    }

    /// The speed factor between hand sequences.
    pub fn speed(&self) -> f64 {
        self.speed
    }

    /// The speed factor of hand sequences.
    pub fn hand_speed(&self) -> f64 {
        self.hand_speed
    }

    /// The hand stretches still to come.
    pub fn spans(&self) -> &[(u64, u64)] {
        &self.spans
    }

    /// The stretches `(from, to, rate)` of virtual time, the last one open-ended.
    fn stretches(&self) -> impl Iterator<Item = (f64, f64, f64)> + '_ {
        let mut at = self.from;
        let mut out = Vec::with_capacity(2 * self.spans.len() + 1);
        for &(a, b) in &self.spans {
            let (a, b) = ((a as f64).max(at), b as f64);
            if b <= a {
                continue;
            }
            if a > at {
                out.push((at, a, self.speed));
            }
            out.push((a, b, self.hand_speed));
            at = b;
        }
        out.push((at, f64::INFINITY, self.speed));
        out.into_iter()
    }

    /// Real milliseconds from `from` to virtual millisecond `v` (negative before `from`,
    /// at the speed).
    pub fn real_ms(&self, v: f64) -> f64 {
        if v <= self.from {
            return (v - self.from) / self.speed;
        }
        let mut real = 0.0;
        for (a, b, rate) in self.stretches() {
            real += (b.min(v) - a).max(0.0) / rate;
            if b >= v {
                break;
            }
        }
        real
    }

    /// The virtual time at real millisecond `real` (from `from`).
    pub fn virtual_at(&self, real: f64) -> f64 {
        if real <= 0.0 {
            return self.from + real * self.speed;
        }
        let mut left = real;
        for (a, b, rate) in self.stretches() {
            let len = (b - a) / rate;
            if left <= len {
                return a + left * rate;
            }
            left -= len;
        }
        f64::INFINITY
    }

    /// The first whole virtual millisecond at or after real millisecond `real`: an event
    /// scheduled by it is never early.
    pub fn first_virtual_ms_at(&self, real: f64) -> u64 {
        let mut v = self.virtual_at(real).max(0.0).ceil() as u64;
        while self.real_ms(v as f64) < real {
            v += 1;
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_at_hand_speed_thinking_at_speed_both_ways() {
        // Hands over [1 000, 2 000) and [5 000, 5 500) at x1, the rest at x100.
        let m = TimeMap::new(0.0, vec![(5_000, 5_500), (1_000, 2_000)], 100.0, 1.0);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        assert!(close(m.real_ms(1_000.0), 10.0));
        assert!(close(m.real_ms(1_500.0), 510.0));
        assert!(close(m.real_ms(2_000.0), 1_010.0));
        assert!(close(m.real_ms(5_500.0), 1_540.0));
        assert!(close(m.real_ms(6_500.0), 1_550.0));
        for v in [0.0, 500.0, 1_000.0, 1_999.0, 2_000.0, 5_100.0, 6_000.0, 100_000.0] {
            assert!(close(m.virtual_at(m.real_ms(v)), v), "{v}");
        }
        // Whole milliseconds are never early.
        for r in [0.0, 9.99, 10.0, 510.3, 1_545.0] {
            let v = m.first_virtual_ms_at(r);
            assert!(m.real_ms(v as f64) >= r && (v == 0 || m.real_ms(v as f64 - 1.0) < r), "{r} -> {v}");
        }
        // At speed 1 the map is the identity.
        let one = TimeMap::new(0.0, vec![(10, 20)], 1.0, 1.0);
        assert_eq!(one.first_virtual_ms_at(one.real_ms(12_345.0)), 12_345);
    }

    #[test]
    fn a_map_from_a_later_start_forgets_past_stretches() {
        let m = TimeMap::new(5_160.0, vec![(1_000, 2_000), (5_000, 5_500)], 100.0, 1.0);
        assert_eq!(m.spans(), [(5_000, 5_500)]);
        assert!((m.real_ms(5_500.0) - 340.0).abs() < 1e-6);
        assert!((m.real_ms(6_500.0) - 350.0).abs() < 1e-6);
        assert_eq!(rates(10.0, 50.0), (10.0, 10.0));
        assert_eq!(rates(f64::NAN, 0.0), (1.0, 1.0));
    }
}
