//! The polling schedule: the opening, discovery rounds, each board's turn (changes, a dump
//! when wanted, the clock when due), one command on the line at a time.

use alloc::collections::VecDeque;

use dgt_protocol::bus::BROADCAST;
use dgt_protocol::{BusCommand, BusCommandKind};

use super::BusPoller;
use super::timing::{BYTE_US, LATE_CHECK_MS, REREAD_MS};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Broadcast {
    Version,
    Ping,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// The single-board opening is on the line until `until`.
    Opening { until: u64 },
    /// Every other found board is told to ignore the next broadcast ping.
    Silence { round: u32, queue: VecDeque<u16> },
    /// A broadcast's answers are collected until `until`.
    Window { kind: Broadcast, round: u32, until: u64, new: bool, doubt: bool },
    /// Boards take turns.
    Poll,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct InFlight {
    pub(super) cmd: BusCommand,
    pub(super) deadline: u64,
    /// A repeat of the changes: its answer may be the previous packet again.
    pub(super) repeat: bool,
}

/// The board whose turn it is, and what is left of it.
#[derive(Clone, Debug)]
pub(super) struct Turn {
    pub(super) address: u16,
    pub(super) todo: VecDeque<BusCommandKind>,
    /// Bad or lost replies in this turn.
    pub(super) retries: u32,
}

impl BusPoller {
    pub(super) fn line_deadline(&self) -> u64 {
        if let Some(f) = &self.in_flight {
            let due = self.decoder.bytes_due() as u64;
            if due > 0 {
                // A reply is arriving: wait for its end, as long as bytes keep coming.
                let end = self.last_rx + (due * BYTE_US).div_ceil(1000) + 20;
                return f.deadline.max(end.min(self.last_rx + 100));
            }
            return f.deadline;
        }
        match &self.phase {
            Phase::Opening { until } | Phase::Window { until, .. } => *until,
            Phase::Silence { .. } => self.last_rx,
            Phase::Poll => {
                let probe = self.boards.values().filter(|b| !b.present).map(|b| b.next_probe).min();
                let mut at = self.next_discovery;
                if self.boards.values().any(|b| b.present) {
                    at = at.min(self.last_rx);
                }
                probe.map_or(at, |p| p.min(at))
            }
        }
    }

    /// Writes the next command when the line is free.
    pub(super) fn drive(&mut self, now: u64) {
        while self.in_flight.is_none() {
            if !self.step(now) {
                break;
            }
        }
    }

    /// One decision; false when nothing is to be done before a deadline.
    pub(super) fn step(&mut self, now: u64) -> bool {
        match &mut self.phase {
            Phase::Opening { until } => {
                if now < *until {
                    return false;
                }
                if let Some(n) = self.single.take_noise() {
                    self.stats.noise_bytes += n as u64;
                }
                // Every board to bus mode, then LiveChess's version request to everyone.
                self.out.push(0x4A);
                self.broadcast(now, Broadcast::Version, 0);
                true
            }
            Phase::Window { kind, round, until, new, doubt } => {
                if now < *until {
                    return false;
                }
                if now >= *until + LATE_CHECK_MS {
                    // Checked late (the relay was held up): answers may be waiting unread.
                    *until = now + REREAD_MS;
                    return false;
                }
                let (kind, round, new, doubt) = (*kind, *round, *new, *doubt);
                if kind == Broadcast::Version || ((new || doubt) && round < self.timing.max_rounds) {
                    self.start_round(round + 1);
                } else {
                    crate::log::info!(boards = self.present().len(), rounds = round, "bus discovery done");
                    self.phase = Phase::Poll;
                    self.next_discovery = now + self.timing.rediscover_ms;
                    self.cycle_start = now;
                }
                true
            }
            Phase::Silence { round, queue } => {
                match queue.pop_front() {
                    Some(address) => self.send(now, BusCommand::new(BusCommandKind::IgnoreNextPing, address)),
                    None => {
                        let round = *round;
                        self.broadcast(now, Broadcast::Ping, round);
                    }
                }
                true
            }
            Phase::Poll => self.poll_step(now),
        }
    }

    pub(super) fn start_round(&mut self, round: u32) {
        let queue = self.boards.values().filter(|b| b.present).map(|b| b.address).collect();
        self.phase = Phase::Silence { round, queue };
    }

    pub(super) fn broadcast(&mut self, now: u64, kind: Broadcast, round: u32) {
        let cmd = match kind {
            Broadcast::Version => BusCommandKind::SendVersion,
            Broadcast::Ping => BusCommandKind::Ping,
        };
        self.write(BusCommand::new(cmd, BROADCAST));
        self.decoder.reset();
        self.phase = Phase::Window {
            kind,
            round,
            until: now + self.timing.broadcast_window_ms,
            new: false,
            doubt: false,
        };
    }

    pub(super) fn poll_step(&mut self, now: u64) -> bool {
        if now >= self.next_discovery && self.turn.is_none() {
            self.start_round(1);
            return true;
        }
        if self.turn.is_none() {
            // A board that went away, due for a ping, goes first.
            if let Some(b) = self.boards.values().find(|b| !b.present && b.next_probe <= now) {
                let address = b.address;
                self.turn = Some(Turn { address, todo: VecDeque::from([BusCommandKind::Ping]), retries: 0 });
            } else if let Some(address) = self.next_board(now) {
                let mut turn = self.plan(address, now);
                // A start tag still due (a game found under way), one board a cycle: each
                // takes about 80 ms, and its listing 65 bytes in the next changes.
                if self.tag_this_cycle
                    && let Some(b) = self.boards.get_mut(&address)
                    && core::mem::take(&mut b.want_tag)
                {
                    self.tag_this_cycle = false;
                    turn.todo.push_back(BusCommandKind::SetStartGame);
                }
                self.turn = Some(turn);
            } else {
                return false;
            }
        }
        let Some(turn) = self.turn.as_mut() else { return false };
        match turn.todo.pop_front() {
            Some(kind) => {
                let address = turn.address;
                if kind == BusCommandKind::SendChanges
                    && let Some(b) = self.boards.get_mut(&address)
                    && core::mem::take(&mut b.repeat)
                {
                    // The lost packet first, then what the board logged since.
                    turn.todo.push_front(BusCommandKind::SendChanges);
                    self.stats.repeats += 1;
                    self.send_repeat(now, address);
                    return true;
                }
                self.send(now, BusCommand::new(kind, address));
                true
            }
            None => {
                self.turn = None;
                true
            }
        }
    }

    /// The next present board after the cursor, in address order.
    pub(super) fn next_board(&mut self, now: u64) -> Option<u16> {
        let after = self.cursor;
        let next = self
            .boards
            .values()
            .filter(|b| b.present)
            .map(|b| b.address)
            .find(|a| after.is_none_or(|c| *a > c))
            .or_else(|| {
                // Wrapped: a cycle is over.
                let first = self.boards.values().find(|b| b.present).map(|b| b.address);
                if first.is_some() {
                    self.cycle_done(now);
                }
                first
            })?;
        self.cursor = Some(next);
        Some(next)
    }

    pub(super) fn cycle_done(&mut self, now: u64) {
        self.tag_this_cycle = true;
        let took = now.saturating_sub(self.cycle_start);
        self.cycle_start = now;
        self.stats.cycles += 1;
        self.stats.last_cycle_ms = took;
        self.stats.max_cycle_ms = self.stats.max_cycle_ms.max(took);
    }

    /// A board's turn: its version if unknown, the changes, a dump when wanted, the clock
    /// when due (more may be added as replies come).
    pub(super) fn plan(&self, address: u16, now: u64) -> Turn {
        let mut todo = VecDeque::new();
        if let Some(b) = self.boards.get(&address) {
            if b.version.is_none() {
                todo.push_back(BusCommandKind::SendVersion);
            }
            todo.push_back(BusCommandKind::SendChanges);
            if b.want_dump {
                todo.push_back(BusCommandKind::SendBoard);
            }
            if b.want_clock || now >= b.next_clock {
                todo.push_back(BusCommandKind::SendClock);
            }
        }
        Turn { address, todo, retries: 0 }
    }

    /// Adds a command to the turn of the board at `address`: the log from the start tag
    /// first, a dump before the clock (the reading after a dump is the first the session sees
    /// of a game that dump starts; it tells White's side from the lever), the clock last.
    pub(super) fn add_to_turn(&mut self, address: u16, kind: BusCommandKind) {
        if let Some(t) = self.turn.as_mut()
            && t.address == address
            && !t.todo.contains(&kind)
        {
            match (kind, t.todo.iter().position(|k| *k == BusCommandKind::SendClock)) {
                // The log from the start tag before anything else: a dump read first would
                // start the log itself.
                (BusCommandKind::SendFromStart | BusCommandKind::SetStartGame, _) => t.todo.push_front(kind),
                (BusCommandKind::SendBoard, Some(i)) => t.todo.insert(i, kind),
                _ => t.todo.push_back(kind),
            }
        }
    }

    pub(super) fn write(&mut self, cmd: BusCommand) {
        crate::log::trace!(?cmd.kind, address = cmd.address, "bus command");
        match cmd.to_bytes() {
            Ok(bytes) => {
                self.out.extend_from_slice(&bytes);
                self.stats.commands += 1;
            }
            Err(e) => crate::log::error!(?cmd, error = %e, "bus command not encodable"),
        }
    }

    pub(super) fn send(&mut self, now: u64, cmd: BusCommand) {
        self.write(cmd);
        if cmd.kind == BusCommandKind::SendChanges
            && let Some(b) = self.boards.get_mut(&cmd.address)
        {
            b.fresh_asked = b.fresh;
        }
        // A board answers `SET_START_GAME` "about 70 msec." after it (DGT's header).
        let extra = if cmd.kind == BusCommandKind::SetStartGame { 100 } else { 0 };
        let deadline = now + self.timing.reply_timeout_ms + extra;
        self.in_flight = Some(InFlight { cmd, deadline, repeat: false });
    }

    pub(super) fn send_repeat(&mut self, now: u64, address: u16) {
        let cmd = BusCommand::new(BusCommandKind::RepeatChanges, address);
        self.write(cmd);
        self.in_flight = Some(InFlight { cmd, deadline: now + self.timing.reply_timeout_ms, repeat: true });
    }
}
