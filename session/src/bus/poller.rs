//! The poller: the line's bytes and the time in, commands to write and events out.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::{boxed::Box, vec::Vec};

use dgt_protocol::{BusDecoded, BusDecoder, Decoded, Decoder, Message};

use super::board::Board;
use super::replies::{Got, OwnedReply};
use super::schedule::{InFlight, Phase, Turn};
use super::timing::{LATE_CHECK_MS, REREAD_MS};
use super::{BusEvent, BusStats, BusTiming};

/// A chain of boards on one line (see [`super`]).
#[derive(Debug)]
pub struct BusPoller {
    pub(super) timing: BusTiming,
    pub(super) single: Box<Decoder<256>>,
    pub(super) decoder: Box<BusDecoder<8192>>,
    pub(super) phase: Phase,
    pub(super) boards: BTreeMap<u16, Board>,
    pub(super) turn: Option<Turn>,
    /// The last board that had a turn.
    pub(super) cursor: Option<u16>,
    pub(super) in_flight: Option<InFlight>,
    pub(super) last_rx: u64,
    pub(super) next_discovery: u64,
    pub(super) cycle_start: u64,
    /// A start tag for a game under way may still be written in this cycle.
    pub(super) tag_this_cycle: bool,
    pub(super) out: Vec<u8>,
    pub(super) events: VecDeque<BusEvent>,
    pub(super) stats: BusStats,
}

impl BusPoller {
    /// A poller on a line opened at `now`: the opening is written at once (see the module
    /// docs).
    pub fn open(now: u64, timing: BusTiming) -> BusPoller {
        let mut p = BusPoller {
            timing,
            single: Box::new(Decoder::new()),
            decoder: Box::new(BusDecoder::new()),
            phase: Phase::Opening { until: now + timing.opening_ms },
            boards: BTreeMap::new(),
            turn: None,
            cursor: None,
            in_flight: None,
            last_rx: now,
            next_discovery: now + timing.rediscover_ms,
            cycle_start: now,
            tag_this_cycle: true,
            out: Vec::new(),
            events: VecDeque::new(),
            stats: BusStats::default(),
        };
        p.out.extend_from_slice(&[0x40, 0x40, 0x40, 0x47, 0x46]);
        p
    }

    /// The timing in use.
    pub fn timing(&self) -> BusTiming {
        self.timing
    }

    /// The counters.
    pub fn stats(&self) -> BusStats {
        self.stats
    }

    /// True while the first discovery runs.
    pub fn discovering(&self) -> bool {
        !matches!(self.phase, Phase::Poll)
    }

    /// The addresses of the boards on the chain now.
    pub fn present(&self) -> Vec<u16> {
        self.boards.values().filter(|b| b.present).map(|b| b.address).collect()
    }

    /// Bytes to write to the line.
    pub fn take_output(&mut self) -> Vec<u8> {
        core::mem::take(&mut self.out)
    }

    /// The next event, oldest first.
    pub fn next_event(&mut self) -> Option<BusEvent> {
        self.events.pop_front()
    }

    /// When [`BusPoller::poll`] should next be called.
    pub fn next_deadline(&self) -> u64 {
        let reoffer = self.boards.values().filter_map(|b| b.reoffer).min().unwrap_or(u64::MAX);
        let held = self
            .boards
            .values()
            .filter_map(|b| b.line.as_ref()?.later.front().map(|h| h.at))
            .min()
            .unwrap_or(u64::MAX);
        self.line_deadline().min(reoffer).min(held)
    }

    /// Bytes read from the line at `now`.
    pub fn on_bytes(&mut self, now: u64, bytes: &[u8]) {
        self.last_rx = now;
        if matches!(self.phase, Phase::Opening { .. }) {
            let mut noise = 0;
            self.single.feed(bytes, |d| match d {
                Decoded::Message(Message::Trademark(t)) => {
                    crate::log::debug!(trademark = %alloc::string::String::from_utf8_lossy(t), "single-board answer on the line")
                }
                Decoded::Message(Message::BusAddress(a)) => crate::log::debug!(address = a, "a board's address"),
                Decoded::Noise { len } => noise += len,
                _ => {}
            });
            self.stats.noise_bytes += noise as u64;
            return;
        }
        let mut got: Vec<Got> = Vec::new();
        self.decoder.feed(bytes, |d| match d {
            BusDecoded::Reply(r) => got.push(Got::Reply(OwnedReply::from(&r))),
            BusDecoded::BadChecksum { kind, address, .. } => got.push(Got::Bad { kind, address }),
            BusDecoded::Noise { len } => got.push(Got::Noise(len)),
            BusDecoded::Skipped { kind, total_len } => {
                crate::log::debug!(kind, total_len, "bus reply too large; skipped");
                got.push(Got::Bad { kind, address: 0 });
            }
        });
        for g in got {
            match g {
                Got::Reply(r) => self.reply(now, r),
                Got::Bad { kind, address } => self.bad(now, kind, address),
                Got::Noise(n) => {
                    self.stats.noise_bytes += n as u64;
                    if let Phase::Window { doubt, .. } = &mut self.phase {
                        *doubt = true;
                    }
                }
            }
        }
        self.drive(now);
    }

    /// Runs what is due at `now`: timeouts, the end of a broadcast window, the next command,
    /// bytes held back on a virtual line.
    pub fn poll(&mut self, now: u64) {
        for line in self.boards.values_mut().filter_map(|b| b.line.as_mut()) {
            line.release(now);
        }
        let due: Vec<u16> =
            self.boards.values().filter(|b| b.reoffer.is_some_and(|t| t <= now)).map(|b| b.address).collect();
        for address in due {
            if let Some(b) = self.boards.get_mut(&address) {
                b.reoffer = None;
            }
            self.announce(address);
        }
        if let Some(f) = self.in_flight
            && now >= self.line_deadline()
        {
            if now >= self.line_deadline() + LATE_CHECK_MS {
                // Checked late (the relay was held up): the reply may be waiting unread.
                crate::log::debug!(
                    address = f.cmd.address,
                    late = now - self.line_deadline(),
                    "reply deadline checked late; put off"
                );
                self.in_flight = Some(InFlight { deadline: now + REREAD_MS, ..f });
            } else {
                self.in_flight = None;
                self.decoder.reset();
                self.timeout(now, f);
            }
        }
        self.drive(now);
    }
}
