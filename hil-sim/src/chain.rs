//! A chain of boards on one serial line, as tournaments wire them for bus mode: one pty,
//! every board hearing every byte the host writes, all of them sharing the line back.
//!
//! # The line ([`Line`], pure)
//! The line back to the host is a sequence of byte slots at 9600 baud (960 a second). A
//! board's transmission takes consecutive slots, starting no earlier than its moment and
//! after its own previous transmission. The host sees the slots as their time comes, so
//! replies arrive paced as on a real line, and the idle time between them is real too.
//!
//! Two boards that drive the line at once collide. DGT's header says the boards' outputs are
//! pull-up drivers with a pull-down resistor on the line: a wired OR. Here a slot two boards
//! use carries the OR of their bytes (UNCONFIRMED: real UARTs do not start their bytes in
//! step, so the real garbage differs; either way the replies involved fail their checksum
//! or their framing, and the host loses them). [`Line::collide`] is the one place to change.
//!
//! # Timing of a reply (fact sheet 2.4, DGT's header)
//! A board answers a command "within milliseconds normally, except when storing a measured
//! change in the EEPROM: then up to 20 ms": here [`RESPONSE_MS`] at random, and
//! [`EEPROM_BUSY_MS`] one time in [`EEPROM_BUSY_ONE_IN`], after the four command bytes
//! crossed the line ([`COMMAND_WIRE_US`]). A broadcast ping is answered at a random moment
//! of 1.1 s (the firmware picks it, [`crate::firmware::BROADCAST_SPREAD_MS`]), so that
//! boards rarely collide. Bytes a board sends by itself (single-board update modes, the
//! garbage fault) go out at once.
//!
//! # Boards on the chain
//! Each board is an ordinary [`SimBoard`] (its own firmware, clock, virtual time, scenario,
//! hand script) whose port is a drop on the chain instead of a pty of its own. Unplugging it
//! (the `disconnect` fault, [`SimBoard::unplug`]) takes it off the line: it neither hears
//! nor answers; plugged back, it powers up again in bus mode, as a board whose chain cable
//! was pulled. A board in single-board mode on a chain (after a single-board command, which
//! every board obeys) talks over the others: that is what a chain does.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::SimError;
use crate::pty::{Link, Pty};
use crate::rng::Rng;
use crate::sim::{SimBoard, SimConfig, fleet_config};

/// Bytes a second on a 9600-baud 8N1 line.
pub const BYTES_PER_SECOND: u64 = 960;
/// The time a four-byte bus command takes on the line, in microseconds.
pub const COMMAND_WIRE_US: u64 = 4 * 1_000_000 / BYTES_PER_SECOND;
/// A board's usual response time to a command, milliseconds (uniform in this range).
pub const RESPONSE_MS: (u64, u64) = (1, 5);
/// The response time while the board writes its EEPROM, milliseconds.
pub const EEPROM_BUSY_MS: u64 = 20;
/// How often a response takes [`EEPROM_BUSY_MS`].
pub const EEPROM_BUSY_ONE_IN: u64 = 20;

/// How the boards' transmissions share the line back to the host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Wiring {
    /// DGT's bus: a wired OR; transmissions that overlap collide (see [`Line::collide`]).
    #[default]
    WiredOr,
    /// Each transmission waits until the line is free (a hub that buffers, as some
    /// emulators do): answers never collide, they queue.
    Queued,
}

/// What happened on the line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineStats {
    /// Transmissions scheduled.
    pub transmissions: u64,
    /// Transmissions that overlapped another.
    pub collisions: u64,
    /// Bytes sent to the host (a collided slot counts once).
    pub bytes: u64,
    /// Host bytes received.
    pub host_bytes: u64,
}

/// The shared line back to the host, in byte slots (see the module docs). Pure: times are
/// microseconds since the line's start.
#[derive(Clone, Debug)]
pub struct Line {
    /// The slot of `slots[0]`: every earlier slot has been emitted.
    first: u64,
    slots: VecDeque<Option<u8>>,
    /// Per board, the slot after its last scheduled byte.
    busy_until: Vec<u64>,
    wiring: Wiring,
    stats: LineStats,
}

impl Line {
    /// A quiet line for `boards` boards.
    pub fn new(boards: usize) -> Line {
        Line::wired(boards, Wiring::WiredOr)
    }

    /// A quiet line for `boards` boards, wired as `wiring` says.
    pub fn wired(boards: usize, wiring: Wiring) -> Line {
        Line {
            first: 0,
            slots: VecDeque::new(),
            busy_until: vec![0; boards],
            wiring,
            stats: LineStats::default(),
        }
    }

    /// The slot that holds time `us`.
    pub fn slot_at(us: u64) -> u64 {
        us * BYTES_PER_SECOND / 1_000_000
    }

    /// When slot `slot` begins, in microseconds.
    pub fn slot_start_us(slot: u64) -> u64 {
        (slot * 1_000_000).div_ceil(BYTES_PER_SECOND)
    }

    /// What a slot carries when two boards drive it: their bytes ORed (a wired-OR line).
    pub fn collide(a: u8, b: u8) -> u8 {
        a | b
    }

    /// Puts `bytes` from board `board` on the line from time `at_us` on (after that
    /// board's previous transmission, and never in a slot already emitted); returns the
    /// first slot.
    pub fn schedule(&mut self, board: usize, at_us: u64, bytes: &[u8]) -> u64 {
        if board >= self.busy_until.len() {
            self.busy_until.resize(board + 1, 0);
        }
        let mut start = Self::slot_at(at_us).max(self.busy_until[board]).max(self.first);
        if self.wiring == Wiring::Queued {
            // After everything scheduled so far.
            let busy = self.slots.iter().rposition(Option::is_some).map_or(0, |k| self.first + k as u64 + 1);
            start = start.max(busy);
        }
        let mut collided = false;
        for (i, &b) in bytes.iter().enumerate() {
            let k = (start - self.first) as usize + i;
            if self.slots.len() <= k {
                self.slots.resize(k + 1, None);
            }
            let slot = &mut self.slots[k];
            *slot = Some(match *slot {
                Some(other) => {
                    collided = true;
                    Self::collide(other, b)
                }
                None => b,
            });
        }
        self.busy_until[board] = start + bytes.len() as u64;
        self.stats.transmissions += 1;
        self.stats.collisions += u64::from(collided);
        start
    }

    /// Appends to `out` the bytes of the slots that have ended by `now_us`, in order.
    pub fn emit(&mut self, now_us: u64, out: &mut Vec<u8>) {
        let upto = Self::slot_at(now_us);
        while self.first < upto {
            match self.slots.pop_front() {
                Some(Some(b)) => {
                    out.push(b);
                    self.stats.bytes += 1;
                }
                Some(None) => {}
                None => {
                    self.first = upto;
                    break;
                }
            }
            self.first += 1;
        }
    }

    /// When the next scheduled byte will have crossed the line (microseconds), if any.
    pub fn next_due_us(&self) -> Option<u64> {
        let k = self.slots.iter().position(Option::is_some)?;
        Some(Self::slot_start_us(self.first + k as u64 + 1))
    }

    /// The counters.
    pub fn stats(&self) -> LineStats {
        self.stats
    }
}

/// What a board's drop sends the line.
#[derive(Debug)]
pub(crate) enum LineMsg {
    /// Bytes to transmit.
    Tx {
        /// The board's index on the chain.
        board: usize,
        /// The bytes.
        bytes: Vec<u8>,
        /// The earliest real moment: a reply's command arrival plus its extra delay, or
        /// now for bytes the board sends by itself.
        at: Instant,
        /// A reply to a command: the command's wire time and the response time are added.
        reply: bool,
    },
    /// Stop the line.
    Shutdown,
}

/// A board's connection to the chain, held by the board's thread.
#[derive(Debug)]
pub(crate) struct ChainDrop {
    /// The board's index on the chain.
    pub(crate) index: usize,
    /// Host bytes, with the moment they arrived.
    pub(crate) rx: Receiver<(Instant, Vec<u8>)>,
    tx: Sender<LineMsg>,
    line_waker: OwnedFd,
    /// True while a host has the chain's port open.
    host: Arc<AtomicBool>,
    /// False while the board is unplugged from the chain.
    pub(crate) attached: bool,
}

impl ChainDrop {
    /// Sends bytes to the line (see [`LineMsg::Tx`]); nothing while unplugged.
    pub(crate) fn send(&self, bytes: Vec<u8>, at: Instant, reply: bool) {
        if !self.attached || bytes.is_empty() {
            return;
        }
        let _ = self.tx.send(LineMsg::Tx { board: self.index, bytes, at, reply });
        let _ = nix::unistd::write(&self.line_waker, &[1]);
    }

    /// True while plugged in and a host has the chain's port open.
    pub(crate) fn host_present(&self) -> bool {
        self.attached && self.host.load(Ordering::Relaxed)
    }
}

/// The line thread's side of one board.
struct BoardEnd {
    tx: Sender<(Instant, Vec<u8>)>,
    waker: OwnedFd,
}

fn pipe() -> Result<(OwnedFd, OwnedFd), SimError> {
    let (rx, tx) =
        nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|e| SimError::Pty { what: "pipe", source: e.into() })?;
    fcntl(&rx, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))
        .map_err(|e| SimError::Pty { what: "fcntl", source: e.into() })?;
    Ok((rx, tx))
}

/// A chain of simulated boards on one pty. See the module docs.
#[derive(Debug)]
pub struct SimChain {
    boards: Vec<SimBoard>,
    slave: Arc<Mutex<PathBuf>>,
    link: Option<PathBuf>,
    tx: Sender<LineMsg>,
    waker: OwnedFd,
    stats: Arc<Mutex<LineStats>>,
    join: Option<JoinHandle<()>>,
}

impl SimChain {
    /// `count` boards from a template on one new pty (board `i` gets the template's serial
    /// number plus `i`, so its own bus address), behind the stable link `link` if given.
    pub fn spawn(count: usize, template: &SimConfig, link: Option<&Path>) -> Result<SimChain, SimError> {
        SimChain::spawn_wired(count, template, link, Wiring::WiredOr)
    }

    /// [`SimChain::spawn`], the boards' transmissions sharing the line as `wiring` says.
    pub fn spawn_wired(
        count: usize,
        template: &SimConfig,
        link: Option<&Path>,
        wiring: Wiring,
    ) -> Result<SimChain, SimError> {
        let pty = Pty::open()?;
        let link = match link {
            Some(path) => Some(Link::create(path, pty.slave_path())?),
            None => None,
        };
        let slave = Arc::new(Mutex::new(pty.slave_path().to_path_buf()));
        let (wake_rx, wake_tx) = pipe()?;
        let (tx, rx) = mpsc::channel();
        let host = Arc::new(AtomicBool::new(false));
        let name = link
            .as_ref()
            .and_then(|l| l.path().file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "bus".to_owned());
        let mut boards = Vec::with_capacity(count);
        let mut ends = Vec::with_capacity(count);
        for i in 0..count {
            let mut config = fleet_config(template, i);
            config.link = link.as_ref().map(|l| l.path().to_path_buf());
            let (host_tx, host_rx) = mpsc::channel();
            let line_waker = wake_tx.try_clone().map_err(|e| SimError::Pty { what: "dup", source: e })?;
            let drop = ChainDrop {
                index: i,
                rx: host_rx,
                tx: tx.clone(),
                line_waker,
                host: Arc::clone(&host),
                attached: true,
            };
            let (board, waker) =
                SimBoard::spawn_on_chain(config, drop, Arc::clone(&slave), format!("{name}-{:02}", i + 1))?;
            boards.push(board);
            ends.push(BoardEnd { tx: host_tx, waker });
        }
        let stats = Arc::new(Mutex::new(LineStats::default()));
        let seed = template.board.serial.trim().parse::<u64>().unwrap_or(0);
        let runner = LineRunner {
            pty,
            link,
            origin: Instant::now(),
            line: Line::wired(count, wiring),
            rng: Rng::derive(seed, 0xC4A1),
            rx,
            wake_rx,
            ends,
            host,
            present: false,
            pending: Vec::new(),
            stats: Arc::clone(&stats),
        };
        let link_path = runner.link.as_ref().map(|l| l.path().to_path_buf());
        let join = std::thread::Builder::new()
            .name(format!("line {name}"))
            .stack_size(256 * 1024)
            .spawn(move || runner.run())
            .map_err(|e| SimError::Pty { what: "spawn thread", source: e })?;
        Ok(SimChain { boards, slave, link: link_path, tx, waker: wake_tx, stats, join: Some(join) })
    }

    /// The boards, in chain order.
    pub fn boards(&self) -> &[SimBoard] {
        &self.boards
    }

    /// Board `i` (0-based).
    pub fn board(&self, i: usize) -> Option<&SimBoard> {
        self.boards.get(i)
    }

    /// The pty slave of the chain.
    pub fn slave_path(&self) -> PathBuf {
        self.slave.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// The stable symlink, if one was asked for.
    pub fn link(&self) -> Option<&Path> {
        self.link.as_deref()
    }

    /// The path a host should open: the link if any, else the slave.
    pub fn path(&self) -> PathBuf {
        self.link.clone().unwrap_or_else(|| self.slave_path())
    }

    /// What happened on the line so far.
    pub fn stats(&self) -> LineStats {
        self.stats.lock().map(|s| *s).unwrap_or_default()
    }

    /// Stops every board and the line; removes the link.
    pub fn shutdown(mut self) -> Result<(), SimError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<(), SimError> {
        let mut result = Ok(());
        for b in self.boards.drain(..) {
            if let Err(e) = b.shutdown() {
                result = Err(e);
            }
        }
        let _ = self.tx.send(LineMsg::Shutdown);
        let _ = nix::unistd::write(&self.waker, &[1]);
        if let Some(j) = self.join.take()
            && j.join().is_err()
        {
            result = Err(SimError::BoardGone);
        }
        result
    }
}

impl Drop for SimChain {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// The line's thread: reads the host, hands its bytes to every board, puts the boards'
/// bytes on the line and writes the line's slots to the host as their time comes.
struct LineRunner {
    pty: Pty,
    link: Option<Link>,
    origin: Instant,
    line: Line,
    rng: Rng,
    rx: Receiver<LineMsg>,
    wake_rx: OwnedFd,
    ends: Vec<BoardEnd>,
    host: Arc<AtomicBool>,
    /// The host's presence as last seen.
    present: bool,
    pending: Vec<u8>,
    stats: Arc<Mutex<LineStats>>,
}

impl LineRunner {
    fn us(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.origin).as_micros() as u64
    }

    fn run(mut self) {
        let mut buf = [0u8; 1024];
        'run: loop {
            let mut drain = [0u8; 64];
            while matches!(nix::unistd::read(&self.wake_rx, &mut drain), Ok(n) if n > 0) {}
            while let Ok(msg) = self.rx.try_recv() {
                match msg {
                    LineMsg::Shutdown => break 'run,
                    LineMsg::Tx { board, bytes, at, reply } => {
                        let mut at_us = self.us(at);
                        if reply {
                            let (lo, hi) = RESPONSE_MS;
                            let response = if self.rng.range(1, EEPROM_BUSY_ONE_IN) == 1 {
                                EEPROM_BUSY_MS
                            } else {
                                self.rng.range(lo, hi)
                            };
                            at_us += COMMAND_WIRE_US + response * 1000;
                        }
                        self.line.schedule(board, at_us, &bytes);
                    }
                }
            }
            let present = self.pty.host_present();
            if present != self.present {
                self.present = present;
                self.host.store(present, Ordering::Relaxed);
            }
            if present {
                loop {
                    match self.pty.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            let now = Instant::now();
                            if let Ok(mut s) = self.stats.lock() {
                                s.host_bytes += n as u64;
                            }
                            for end in &self.ends {
                                let _ = end.tx.send((now, buf[..n].to_vec()));
                                let _ = nix::unistd::write(&end.waker, &[1]);
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(_) => break,
                    }
                }
            }
            let now_us = self.us(Instant::now());
            self.line.emit(now_us, &mut self.pending);
            self.write_out();
            if let Ok(mut s) = self.stats.lock() {
                let host_bytes = s.host_bytes;
                *s = LineStats { host_bytes, ..self.line.stats() };
            }
            self.sleep();
        }
        if let Some(link) = &self.link {
            link.remove();
        }
    }

    fn write_out(&mut self) {
        if !self.present {
            // Nobody listens: the bytes are lost, as on a real line.
            self.pending.clear();
            return;
        }
        while !self.pending.is_empty() {
            match self.pty.write(&self.pending) {
                Ok(n) => {
                    self.pending.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    self.pending.clear();
                    break;
                }
            }
        }
    }

    fn sleep(&mut self) {
        let now = Instant::now();
        let mut wait = Duration::from_millis(if self.present { 200 } else { 25 });
        if let Some(due) = self.line.next_due_us() {
            let at = self.origin + Duration::from_micros(due);
            wait = wait.min(at.saturating_duration_since(now));
        }
        if !self.pending.is_empty() {
            wait = wait.min(Duration::from_millis(2));
        }
        let ms = wait.as_micros().div_ceil(1000).min(60_000) as u32;
        let timeout = PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX);
        let wake = self.wake_rx.as_fd();
        if self.present {
            let mut fds = [
                PollFd::new(wake, PollFlags::POLLIN),
                PollFd::new(self.pty.master().as_fd(), PollFlags::POLLIN),
            ];
            let _ = poll(&mut fds, timeout);
            if fds[1].revents().is_some_and(|r| r.contains(PollFlags::POLLHUP)) {
                self.present = false;
                self.host.store(false, Ordering::Relaxed);
            }
        } else {
            let mut fds = [PollFd::new(wake, PollFlags::POLLIN)];
            let _ = poll(&mut fds, timeout);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_leave_in_their_slots_and_a_board_waits_for_itself() {
        let mut line = Line::new(2);
        // 960 bytes a second: slot k spans [k * 1041.67 us, (k + 1) * 1041.67 us).
        assert_eq!(line.schedule(0, 0, &[1, 2, 3]), 0);
        assert_eq!(line.schedule(0, 0, &[4]), 3, "after its own bytes");
        assert_eq!(line.next_due_us(), Some(1042));
        let mut out = Vec::new();
        line.emit(2_100, &mut out);
        assert_eq!(out, [1, 2]);
        line.emit(10_000, &mut out);
        assert_eq!(out, [1, 2, 3, 4]);
        assert_eq!(line.next_due_us(), None);
        // Never in the past: a late reply starts at the next free slot.
        assert_eq!(line.schedule(1, 0, &[9]), Line::slot_at(10_000));
        assert_eq!(line.stats().collisions, 0);
    }

    #[test]
    fn a_queued_line_lets_no_two_boards_overlap() {
        let mut line = Line::wired(2, Wiring::Queued);
        assert_eq!(line.schedule(0, 0, &[0x87, 0x00, 0x06]), 0);
        assert_eq!(line.schedule(1, 1_100, &[0x87, 0x00, 0x07]), 3, "after the first board's bytes");
        let mut out = Vec::new();
        line.emit(1_000_000, &mut out);
        assert_eq!(out, [0x87, 0x00, 0x06, 0x87, 0x00, 0x07]);
        assert_eq!(line.stats().collisions, 0);
    }

    #[test]
    fn overlapping_boards_collide_into_their_or() {
        let mut line = Line::new(2);
        line.schedule(0, 0, &[0x87, 0x00, 0x06]);
        line.schedule(1, 1_100, &[0x87, 0x00, 0x06]);
        let mut out = Vec::new();
        line.emit(1_000_000, &mut out);
        assert_eq!(out, [0x87, 0x87, 0x06, 0x06]);
        assert_eq!(line.stats().collisions, 1);
    }
}
