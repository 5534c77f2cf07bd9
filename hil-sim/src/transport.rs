//! The link between a board and its host, as a fault-injecting middleware around the byte
//! stream: transparent, or holding the board's bytes back and letting them out in bursts,
//! as a Bluetooth serial link (RFCOMM) or a USB-serial adapter's latency timer does.
//!
//! A burst opens with the first byte that finds no burst open, and is let out whole, with
//! every byte that joined it meanwhile, a latency after that first byte; the latency is
//! drawn from `min_ms..=max_ms` by a seeded generator, so a replay is a pure function of
//! its seed. Bytes keep their order, and nothing is lost. Only the board's output goes
//! through it (what the host writes reaches the board as before): the host stamps what it
//! reads with the time of the read, so a lift, a landing and a press can arrive together,
//! and a gap between two bursts looks like stillness that was not there.
//!
//! The same [`BurstyLink`] serves the offline harness (in virtual milliseconds, or the
//! relay's at a pace, through [`BurstyLink::push_with`]) and a simulated board on a pty (in
//! real milliseconds since the board started; see [`crate::SimConfig::bursts`]).
//!
//! ```
//! use dgt_hil_sim::transport::{Bursts, BurstyLink};
//! let mut link = BurstyLink::new(Some(Bursts { min_ms: 20, max_ms: 250, seed: 7 }), 0);
//! let out = link.push(1_000, b"lift".to_vec());
//! assert_eq!(link.push(1_010, b"land".to_vec()), out); // joins the open burst
//! assert!((1_020..=1_250).contains(&out));
//! assert_eq!(link.pop_due(out - 1), None);
//! assert_eq!(link.pop_due(out), Some(b"liftland".to_vec()));
//! ```

use std::collections::VecDeque;

use crate::rng::Rng;

/// How a bursty link holds bytes back: each burst is let out `min_ms..=max_ms` (uniform)
/// after its first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bursts {
    /// The shortest hold, milliseconds.
    pub min_ms: u64,
    /// The longest hold, milliseconds.
    pub max_ms: u64,
    /// Draws the holds.
    pub seed: u64,
}

impl Bursts {
    /// The shortest hold unless told otherwise: a Bluetooth serial link's, about 20 ms.
    pub const DEFAULT_MIN_MS: u64 = 20;

    /// Parses `MAX_MS[,SEED[,MIN_MS]]` (seed 1 and [`Bursts::DEFAULT_MIN_MS`], or `MAX_MS`
    /// when shorter, by default).
    pub fn parse(text: &str) -> Result<Bursts, String> {
        let bad = || format!("bursts are MAX_MS[,SEED[,MIN_MS]], not {text:?}");
        let mut parts = text.split(',').map(str::trim);
        let max_ms: u64 = parts.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
        let seed = match parts.next() {
            Some(v) => v.parse().map_err(|_| bad())?,
            None => 1,
        };
        let min_ms = match parts.next() {
            Some(v) => v.parse().map_err(|_| bad())?,
            None => Bursts::DEFAULT_MIN_MS.min(max_ms),
        };
        if parts.next().is_some() {
            return Err(bad());
        }
        if max_ms == 0 || min_ms > max_ms {
            return Err(format!("bursts need 0 < MIN_MS <= MAX_MS, not {text:?}"));
        }
        Ok(Bursts { min_ms, max_ms, seed })
    }
}

impl std::fmt::Display for Bursts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{},{},{}", self.max_ms, self.seed, self.min_ms)
    }
}

/// The board's bytes on their way to the host: each entry is let out at its time, in
/// order. Transparent (every push let out at its own time, on its own), or bursty.
#[derive(Clone, Debug)]
pub struct BurstyLink {
    bursts: Option<Bursts>,
    rng: Rng,
    /// When the burst still taking bytes is let out.
    open_until: Option<u64>,
    /// (time let out, bytes), times non-decreasing.
    queue: VecDeque<(u64, Vec<u8>)>,
    /// The time of the last push.
    last_in: Option<u64>,
}

impl BurstyLink {
    /// A link that holds bytes back by `bursts`, or none (`None`: transparent). `stream`
    /// tells apart the links of one seed (one per board of a fleet).
    pub fn new(bursts: Option<Bursts>, stream: u64) -> BurstyLink {
        BurstyLink {
            rng: Rng::derive(bursts.map_or(0, |b| b.seed), stream),
            bursts,
            open_until: None,
            queue: VecDeque::new(),
            last_in: None,
        }
    }

    /// The bursts, if the link holds bytes back.
    pub fn bursts(&self) -> Option<Bursts> {
        self.bursts
    }

    /// Bytes that enter the link at `at` (times in milliseconds, non-decreasing: an earlier
    /// time counts as the last push's); returns when they will be let out.
    pub fn push(&mut self, at: u64, bytes: Vec<u8>) -> u64 {
        self.push_with(at, bytes, |t, ms| t + ms)
    }

    /// [`BurstyLink::push`] with the hold measured on another clock: `later(t, ms)` is the
    /// first time, on the link's clock, `ms` milliseconds of the hold's clock after `t`
    /// (the offline harness at a pace: virtual time against the relay's real time).
    pub fn push_with(&mut self, at: u64, bytes: Vec<u8>, later: impl FnOnce(u64, u64) -> u64) -> u64 {
        let at = self.last_in.map_or(at, |l| l.max(at));
        self.last_in = Some(at);
        let Some(b) = self.bursts else {
            self.queue.push_back((at, bytes));
            return at;
        };
        if let Some(until) = self.open_until.filter(|&u| at < u)
            && let Some((t, held)) = self.queue.back_mut()
            && *t == until
        {
            held.extend_from_slice(&bytes);
            return until;
        }
        let hold = self.rng.range(b.min_ms, b.max_ms);
        // Never before a burst already on its way (a clock mapping that rounds down).
        let until = later(at, hold).max(at).max(self.queue.back().map_or(0, |q| q.0));
        self.open_until = Some(until);
        self.queue.push_back((until, bytes));
        until
    }

    /// When the next bytes are let out.
    pub fn next_release(&self) -> Option<u64> {
        self.queue.front().map(|q| q.0)
    }

    /// The next bytes let out, with their time, whenever that is.
    pub fn pop(&mut self) -> Option<(u64, Vec<u8>)> {
        self.queue.pop_front()
    }

    /// The next bytes let out, if that is at or before `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<Vec<u8>> {
        if self.next_release()? <= now { self.pop().map(|q| q.1) } else { None }
    }

    /// The time of the last push (later pushes are not earlier).
    pub fn last_in(&self) -> Option<u64> {
        self.last_in
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Bytes held.
    pub fn held_bytes(&self) -> usize {
        self.queue.iter().map(|q| q.1.len()).sum()
    }

    /// Drops what is held (the cable was pulled, the host went away); the draws go on.
    pub fn clear(&mut self) {
        self.queue.clear();
        self.open_until = None;
        self.last_in = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bursts(max_ms: u64, seed: u64) -> Option<Bursts> {
        Some(Bursts { min_ms: 20, max_ms, seed })
    }

    /// Pushes one byte a millisecond apart for `n` ms, then takes everything out.
    fn run(link: &mut BurstyLink, n: u64, step: u64) -> Vec<(u64, u64, u8)> {
        let mut sent = Vec::new();
        for i in 0..n {
            let at = i * step;
            let out = link.push(at, vec![(i % 251) as u8]);
            sent.push((at, out, (i % 251) as u8));
        }
        sent
    }

    #[test]
    fn bursts_parse() {
        assert_eq!(Bursts::parse("250"), Ok(Bursts { min_ms: 20, max_ms: 250, seed: 1 }));
        assert_eq!(Bursts::parse("500,7"), Ok(Bursts { min_ms: 20, max_ms: 500, seed: 7 }));
        assert_eq!(Bursts::parse("100, 3, 50"), Ok(Bursts { min_ms: 50, max_ms: 100, seed: 3 }));
        assert_eq!(Bursts::parse("10"), Ok(Bursts { min_ms: 10, max_ms: 10, seed: 1 }));
        for bad in ["", "x", "0", "100,1,200", "100,1,2,3", "100,y"] {
            assert!(Bursts::parse(bad).is_err(), "{bad}");
        }
        let b = Bursts { min_ms: 30, max_ms: 400, seed: 9 };
        assert_eq!(Bursts::parse(&b.to_string()), Ok(b));
    }

    #[test]
    fn a_transparent_link_lets_each_push_out_at_its_own_time() {
        let mut link = BurstyLink::new(None, 0);
        assert_eq!(link.push(5, vec![1]), 5);
        assert_eq!(link.push(5, vec![2]), 5);
        assert_eq!(link.push(3, vec![3]), 5, "an earlier time counts as the last push's");
        assert_eq!(link.push(9, vec![4]), 9);
        assert_eq!(link.pop_due(4), None);
        assert_eq!(link.pop_due(5), Some(vec![1]));
        assert_eq!(link.pop(), Some((5, vec![2])));
        assert_eq!(link.pop(), Some((5, vec![3])));
        assert_eq!(link.pop_due(9), Some(vec![4]));
        assert!(link.is_empty());
    }

    #[test]
    fn holds_stay_within_bounds_from_each_bursts_first_byte() {
        let mut link = BurstyLink::new(bursts(250, 3), 0);
        let sent = run(&mut link, 20_000, 1);
        let mut first_of_burst: Option<(u64, u64)> = None;
        let mut holds = Vec::new();
        for &(at, out, _) in &sent {
            match first_of_burst {
                Some((_, o)) if o == out => {}
                _ => {
                    assert!(first_of_burst.is_none_or(|(_, o)| at >= o), "a burst opens once the last left");
                    first_of_burst = Some((at, out));
                    holds.push(out - at);
                }
            }
            let (first, _) = first_of_burst.unwrap_or_default();
            assert!(out >= at && out - first >= 20 && out - first <= 250, "{at} -> {out} (first {first})");
        }
        // The holds spread over the range.
        assert!(holds.len() > 50, "{} bursts", holds.len());
        assert!(holds.iter().any(|&h| h < 60) && holds.iter().any(|&h| h > 210), "{holds:?}");
    }

    #[test]
    fn order_is_kept_and_nothing_is_lost() {
        let mut link = BurstyLink::new(bursts(500, 11), 2);
        let mut expected = Vec::new();
        let mut got = Vec::new();
        let mut t = 0u64;
        for i in 0..5_000u64 {
            // Irregular gaps: bursts of bytes, and pauses longer than a hold.
            t += [0, 1, 3, 40, 700][(i % 5) as usize];
            let bytes: Vec<u8> = (0..(i % 7)).map(|k| (i + k) as u8).collect();
            expected.extend_from_slice(&bytes);
            link.push(t, bytes);
            while let Some(b) = link.pop_due(t) {
                got.extend(b);
            }
        }
        let mut last = 0;
        while let Some((at, b)) = link.pop() {
            assert!(at >= last, "times let out never go back");
            last = at;
            got.extend(b);
        }
        assert_eq!(got, expected);
    }

    #[test]
    fn the_same_seed_gives_the_same_bursts_and_another_seed_others() {
        let a = run(&mut BurstyLink::new(bursts(250, 5), 0), 3_000, 2);
        let b = run(&mut BurstyLink::new(bursts(250, 5), 0), 3_000, 2);
        let c = run(&mut BurstyLink::new(bursts(250, 6), 0), 3_000, 2);
        let d = run(&mut BurstyLink::new(bursts(250, 5), 1), 3_000, 2);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d, "another stream of the same seed");
    }

    #[test]
    fn a_hold_on_another_clock_is_mapped_and_never_goes_back() {
        // The hold's clock runs twice as fast as the link's: 100 ms of it is 50 of the link's.
        let mut link = BurstyLink::new(Some(Bursts { min_ms: 100, max_ms: 100, seed: 1 }), 0);
        assert_eq!(link.push_with(1_000, vec![1], |t, ms| t + ms / 2), 1_050);
        assert_eq!(link.push_with(1_049, vec![2], |t, ms| t + ms / 2), 1_050);
        // A mapping that rounds down below the last burst's time is held to it.
        assert_eq!(link.push_with(1_050, vec![3], |t, _| t), 1_050);
        assert_eq!(link.pop(), Some((1_050, vec![1, 2])));
        assert_eq!(link.pop(), Some((1_050, vec![3])));
    }

    #[test]
    fn a_cleared_link_holds_nothing_and_starts_a_new_burst() {
        let mut link = BurstyLink::new(bursts(100, 1), 0);
        let first = link.push(0, vec![1, 2, 3]);
        assert!((20..=100).contains(&first), "{first}");
        assert_eq!(link.held_bytes(), 3);
        link.clear();
        assert!(link.is_empty() && link.last_in().is_none());
        let next = link.push(1, vec![4]);
        assert!(next >= 21, "{next}");
        assert_eq!(link.pop_due(next), Some(vec![4]));
    }
}
