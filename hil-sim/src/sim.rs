//! Boards on ptys: one thread per board runs the firmware model against virtual time,
//! reads the host's commands from the pty master, writes the board's messages to it, and
//! plays scenarios. [`SimBoard`] is the handle tests, the CLI and the host's demo use.
//!
//! Where there are no ptys (Windows), a board runs the same way on an in-process link to a
//! host in the same process ([`SimBoard::spawn_in_process`], [`HostEnd`]): the bytes cross
//! channels instead of a pty, without a serial line's timing.

#[cfg(unix)]
use std::io;
#[cfg(unix)]
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dgt_protocol::{ClockSide, Orientation, PieceCode};
#[cfg(unix)]
use nix::fcntl::{FcntlArg, OFlag, fcntl};
#[cfg(unix)]
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::SimError;
#[cfg(unix)]
use crate::chain::ChainDrop;
use crate::clock::{Dgt3000, SideView, TimeControl};
use crate::firmware::{BoardConfig, BoardMode, Firmware, FirmwareStats, start_position};
#[cfg(unix)]
use crate::pty::{Link, Pty};
use crate::scenario::{Action, Scenario, TimedAction, board_codes, codes_board};
use crate::truth::GroundTruth;

use crate::timemap::TimeMap;
pub use crate::timemap::rates;
use crate::transport::Bursts;
#[cfg(unix)]
use crate::transport::BurstyLink;

/// Virtual time on a real clock: an anchor (a real instant and the virtual time then) and
/// the [`TimeMap`] from there on.
///
/// The factor can drop to a slower hand speed over given stretches of virtual time (a
/// scenario's hand sequences, see [`Scenario::hand_spans`]): the virtual time of every
/// event stays what it was, only when it happens in real time changes.
#[derive(Clone, Debug)]
pub struct VirtualTime {
    /// The real instant of the map's start.
    anchor: Instant,
    map: TimeMap,
}

impl VirtualTime {
    /// Starts now; `speed` 1.0 is real time, 20.0 runs twenty times faster.
    pub fn new(speed: f64) -> VirtualTime {
        VirtualTime::with_hand_speed(speed, speed)
    }

    /// Starts now at `speed`; stretches given with [`VirtualTime::set_hand_spans`] run at
    /// `hand_speed` (at most `speed`).
    pub fn with_hand_speed(speed: f64, hand_speed: f64) -> VirtualTime {
        VirtualTime { anchor: Instant::now(), map: TimeMap::new(0.0, Vec::new(), speed, hand_speed) }
    }

    /// Virtual milliseconds at a real instant (not before the anchor).
    fn virtual_at(&self, real: Instant) -> f64 {
        self.map.virtual_at(real.saturating_duration_since(self.anchor).as_secs_f64() * 1000.0)
    }

    /// Virtual milliseconds now.
    pub fn now_ms(&self) -> u64 {
        self.virtual_at(Instant::now()) as u64
    }

    /// The real instant of a virtual time.
    pub fn instant_at(&self, ms: u64) -> Instant {
        let real = self.map.real_ms(ms as f64);
        if real < 0.0 {
            return self.anchor.checked_sub(Duration::from_secs_f64(-real / 1000.0)).unwrap_or(self.anchor);
        }
        self.anchor + Duration::from_secs_f64(real / 1000.0)
    }

    /// The speed factor (between hand sequences).
    pub fn speed(&self) -> f64 {
        self.map.speed()
    }

    /// The speed factor of hand sequences.
    pub fn hand_speed(&self) -> f64 {
        self.map.hand_speed()
    }

    /// Plays the virtual stretches `spans` (`[from, to)` in virtual milliseconds, sorted)
    /// at the hand speed from now on, instead of any given before; stretches already past
    /// are ignored.
    pub fn set_hand_spans(&mut self, spans: Vec<(u64, u64)>) {
        let now = Instant::now();
        let v = self.virtual_at(now);
        self.anchor = now;
        self.map = TimeMap::new(v, spans, self.map.speed(), self.map.hand_speed());
    }

    /// Re-anchors when a stretch is over (keeps the walk from the anchor short).
    fn tidy(&mut self) {
        let now = Instant::now();
        let v = self.virtual_at(now);
        if self.map.spans().first().is_some_and(|&(_, b)| b as f64 <= v) {
            let spans = self.map.spans().to_vec();
            self.anchor = now;
            self.map = TimeMap::new(v, spans, self.map.speed(), self.map.hand_speed());
        }
    }
}

/// How to spawn one simulated board.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Firmware identity and timing.
    pub board: BoardConfig,
    /// A stable symlink to the board's pty, if wanted.
    pub link: Option<PathBuf>,
    /// Virtual time speed factor (1.0 = real time).
    pub speed: f64,
    /// The speed factor of a scenario's hand sequences (see [`Scenario::hand_spans`]):
    /// from a move's first lift to its clock press and the stillness after it, and the
    /// game's end gesture, at most `speed`. 1.0 (the default) plays hands at human pace
    /// however fast the thinking time between moves goes; the virtual time of every
    /// action (and so every clock reading) is the same at any speed.
    pub hand_speed: f64,
    /// The pieces on the board at power-up, in board-index order.
    pub position: [PieceCode; 64],
    /// A clock attached at power-up, with White's display.
    pub clock: Option<(TimeControl, ClockSide)>,
    /// How the board sits for hand actions given in game squares.
    pub orientation: Orientation,
    /// Pace the output like a real serial line, in bytes per real second (960 for 9600
    /// 8N1); `None` sends as fast as the pty takes it.
    pub line_rate: Option<u32>,
    /// Hold the board's output back and let it out in bursts, as a Bluetooth serial link
    /// does ([`crate::transport`]), in real milliseconds (what the host's clock sees), after
    /// the line's rate; each board of a fleet draws its own holds (the stream is its serial
    /// number). Boards on a chain ignore it.
    pub bursts: Option<Bursts>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            board: BoardConfig::default(),
            link: None,
            speed: 1.0,
            hand_speed: 1.0,
            position: start_position(),
            clock: Some((TimeControl::fischer(5400, 30), ClockSide::Left)),
            orientation: Orientation::Normal,
            line_rate: None,
            bursts: None,
        }
    }
}

/// When a scenario starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartPolicy {
    /// At once.
    Immediately,
    /// When the host has put the board into an update mode (so it sees every move); on a
    /// chain, when the host reads the board's changes in bus mode.
    WhenHostListens,
}

/// The clock as a status shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockState {
    /// Left display.
    pub left: SideView,
    /// Right display.
    pub right: SideView,
    /// Running (not paused).
    pub running: bool,
    /// The side whose lever is up.
    pub high_side: ClockSide,
    /// Text shown instead of the times, if any.
    pub text: Option<String>,
    /// Beeps so far.
    pub beeps: u32,
}

/// A snapshot of a board, for tests and the CLI.
#[derive(Clone, Debug)]
pub struct BoardStatus {
    /// The pty slave the board is on now.
    pub slave_path: PathBuf,
    /// True while a host has the port open.
    pub host_connected: bool,
    /// The firmware mode.
    pub mode: BoardMode,
    /// Virtual milliseconds since spawn.
    pub virtual_ms: u64,
    /// What is on the board, in board-index order.
    pub physical: [PieceCode; 64],
    /// The same as a board FEN in the board's orientation.
    pub board_fen: String,
    /// The clock, if one is attached.
    pub clock: Option<ClockState>,
    /// True while a scenario plays.
    pub scenario_running: bool,
    /// Firmware counters.
    pub stats: FirmwareStats,
    /// Times the board was unplugged and plugged back in.
    pub reconnects: u32,
}

/// What a finished scenario reports.
#[derive(Clone, Debug)]
pub struct ScenarioReport {
    /// Virtual time of the scenario's start (board clock).
    pub started_ms: u64,
    /// Virtual time of its end.
    pub finished_ms: u64,
    /// The ground truth, if the scenario had one.
    pub truth: Option<GroundTruth>,
    /// Board FEN of the pieces on the board at the end.
    pub final_board: String,
    /// Firmware counters at the end.
    pub stats: FirmwareStats,
    /// False when the scenario was abandoned (board shut down first).
    pub completed: bool,
    /// Presses the board's event log never got (virtual ms from the scenario's start; see
    /// [`crate::firmware::CLOCK_POLL_MS`]): a relay that reads the log (a chain) cannot
    /// know their `%clk`.
    pub unlogged_presses: Vec<u64>,
}

/// A scenario started on a board; wait for it with [`ScenarioHandle::wait`].
#[derive(Debug)]
pub struct ScenarioHandle {
    rx: Receiver<ScenarioReport>,
}

impl ScenarioHandle {
    /// Waits up to `timeout` for the end of the scenario.
    pub fn wait(&self, timeout: Duration) -> Result<ScenarioReport, SimError> {
        match self.rx.recv_timeout(timeout) {
            Ok(r) => Ok(r),
            Err(RecvTimeoutError::Timeout) => Err(SimError::Timeout),
            Err(RecvTimeoutError::Disconnected) => Err(SimError::BoardGone),
        }
    }

    /// The report, if the scenario has ended.
    pub fn try_report(&self) -> Option<ScenarioReport> {
        self.rx.try_recv().ok()
    }
}

enum Control {
    Act(Action),
    Scenario(Box<Scenario>, StartPolicy, Sender<ScenarioReport>),
    Status(Sender<BoardStatus>),
    Clock(Option<(TimeControl, ClockSide)>),
    Battery(Option<u8>),
    ClockBatteryLow(bool),
    Unplug,
    Plug,
    Shutdown,
    /// Bytes the host wrote on an in-process link.
    FromHost(Vec<u8>),
}

/// The host's end of an in-process link ([`SimBoard::spawn_in_process`]): what the host
/// writes reaches the board's firmware and what the board sends arrives here, in order, as
/// on a serial line but without its timing (no line rate, no bursts). Split it to write
/// from one thread or task and read from another.
#[derive(Debug)]
pub struct HostEnd {
    /// To the board.
    pub to_board: ToBoard,
    /// From the board.
    pub from_board: FromBoard,
}

/// What the host writes to a board on an in-process link.
#[derive(Debug, Clone)]
pub struct ToBoard {
    tx: Sender<Control>,
    #[cfg(unix)]
    waker: Arc<OwnedFd>,
}

impl ToBoard {
    /// Sends the host's bytes to the board; fails once the board has stopped.
    pub fn send(&self, bytes: &[u8]) -> Result<(), SimError> {
        self.tx.send(Control::FromHost(bytes.to_vec())).map_err(|_| SimError::BoardGone)?;
        #[cfg(unix)]
        let _ = nix::unistd::write(&*self.waker, &[1]);
        Ok(())
    }
}

/// What a board on an in-process link sends to the host.
#[derive(Debug)]
pub struct FromBoard {
    rx: Receiver<Vec<u8>>,
}

impl FromBoard {
    /// The board's next bytes: waits up to `timeout` ([`SimError::Timeout`]); fails with
    /// [`SimError::BoardGone`] once the board has stopped.
    pub fn recv(&self, timeout: Duration) -> Result<Vec<u8>, SimError> {
        match self.rx.recv_timeout(timeout) {
            Ok(b) => Ok(b),
            Err(RecvTimeoutError::Timeout) => Err(SimError::Timeout),
            Err(RecvTimeoutError::Disconnected) => Err(SimError::BoardGone),
        }
    }
}

/// A running simulated board.
#[derive(Debug)]
pub struct SimBoard {
    name: String,
    link: Option<PathBuf>,
    slave: Arc<Mutex<PathBuf>>,
    tx: Sender<Control>,
    #[cfg(unix)]
    waker: Arc<OwnedFd>,
    join: Option<JoinHandle<()>>,
}

impl SimBoard {
    /// Opens a pty, creates the link if asked, and starts the board's thread.
    #[cfg(unix)]
    pub fn spawn(config: SimConfig) -> Result<SimBoard, SimError> {
        let pty = Pty::open()?;
        let link = match &config.link {
            Some(path) => Some(Link::create(path, pty.slave_path())?),
            None => None,
        };
        let slave = Arc::new(Mutex::new(pty.slave_path().to_path_buf()));
        let name = config.link.as_ref().map_or_else(
            || pty.slave_path().display().to_string(),
            |l| l.file_name().map_or_else(|| l.display().to_string(), |n| n.to_string_lossy().into_owned()),
        );
        let line = config.line_rate.map(|rate| LineRate {
            rate: f64::from(rate.max(1)),
            budget: 0.0,
            at: Instant::now(),
        });
        let serial: u64 = config.board.serial.trim().parse().unwrap_or(0);
        let wire = Wire::Own(Box::new(OwnPort {
            pty: Some(pty),
            link,
            pending: Vec::new(),
            clock_tail: None,
            line,
            timed: Vec::new(),
            to_host: BurstyLink::new(config.bursts, serial),
            outbox: Vec::new(),
            epoch: Instant::now(),
        }));
        SimBoard::start(config, wire, slave, name)
    }

    /// Starts a board on an in-process link named `name` (`SimConfig::link`,
    /// `line_rate` and `bursts` are not used): the host in this process talks to it through
    /// the returned [`HostEnd`]. The board sees its host from the start.
    pub fn spawn_in_process(config: SimConfig, name: &str) -> Result<(SimBoard, HostEnd), SimError> {
        let (to_host, rx) = mpsc::channel();
        let wire = Wire::InProcess(InProcessPort { to_host, attached: true });
        let slave = Arc::new(Mutex::new(PathBuf::from(name)));
        let mut config = config;
        config.link = None;
        let board = SimBoard::start(config, wire, slave, name.to_owned())?;
        let to_board = ToBoard {
            tx: board.tx.clone(),
            #[cfg(unix)]
            waker: Arc::clone(&board.waker),
        };
        Ok((board, HostEnd { to_board, from_board: FromBoard { rx } }))
    }

    /// A board on a chain (see [`crate::chain`]); also returns a second handle to its
    /// wake-up pipe, for the line to wake it when host bytes arrive.
    #[cfg(unix)]
    pub(crate) fn spawn_on_chain(
        config: SimConfig,
        drop: ChainDrop,
        slave: Arc<Mutex<PathBuf>>,
        name: String,
    ) -> Result<(SimBoard, OwnedFd), SimError> {
        let board = SimBoard::start(config, Wire::Chain(drop), slave, name)?;
        let waker = board.waker.as_ref().try_clone().map_err(|e| SimError::Pty { what: "dup", source: e })?;
        Ok((board, waker))
    }

    fn start(
        config: SimConfig,
        wire: Wire,
        slave: Arc<Mutex<PathBuf>>,
        name: String,
    ) -> Result<SimBoard, SimError> {
        #[cfg(unix)]
        let (wake_rx, wake_tx) = nix::unistd::pipe2(OFlag::O_CLOEXEC)
            .map_err(|e| SimError::Pty { what: "pipe", source: e.into() })?;
        #[cfg(unix)]
        fcntl(&wake_rx, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))
            .map_err(|e| SimError::Pty { what: "fcntl", source: e.into() })?;
        let (tx, rx) = mpsc::channel();
        let vt = VirtualTime::with_hand_speed(config.speed, config.hand_speed);
        let mut fw = Firmware::new(config.board.clone(), config.position, 0);
        if let Some((tc, side)) = &config.clock {
            fw.attach_clock(Some(Dgt3000::new(tc.clone(), *side, 0)));
        }
        let white_side = config.clock.as_ref().map_or(ClockSide::Left, |c| c.1);
        let host = matches!(wire, Wire::InProcess(_));
        let runner = Runner {
            vt,
            fw,
            wire,
            slave: Arc::clone(&slave),
            host,
            orientation: config.orientation,
            white_side,
            rx,
            early: None,
            #[cfg(unix)]
            wake_rx,
            scenario: None,
            reopen_at: None,
            held_off: false,
            reconnects: 0,
        };
        let join = std::thread::Builder::new()
            .name(format!("sim {name}"))
            .stack_size(256 * 1024)
            .spawn(move || runner.run())
            .map_err(|e| SimError::Pty { what: "spawn thread", source: e })?;
        Ok(SimBoard {
            name,
            link: config.link,
            slave,
            tx,
            #[cfg(unix)]
            waker: Arc::new(wake_tx),
            join: Some(join),
        })
    }

    fn control(&self, c: Control) -> Result<(), SimError> {
        self.tx.send(c).map_err(|_| SimError::BoardGone)?;
        #[cfg(unix)]
        let _ = nix::unistd::write(&*self.waker, &[1]);
        Ok(())
    }

    /// The board's name (its link's file name, or the slave path).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The pty slave the board is on now (it changes on reconnects).
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

    /// Does one hand action now.
    pub fn act(&self, action: Action) -> Result<(), SimError> {
        self.control(Control::Act(action))
    }

    /// Unplugs the board now, until [`SimBoard::plug`]: its own pty closes (the link
    /// goes), or, on a chain, it leaves the line (it neither hears nor answers). A
    /// scenario's own pulled cable meanwhile does not plug it back before that.
    pub fn unplug(&self) -> Result<(), SimError> {
        self.control(Control::Unplug)
    }

    /// Plugs an unplugged board back in: it powers up again, in bus mode.
    pub fn plug(&self) -> Result<(), SimError> {
        self.control(Control::Plug)
    }

    /// Attaches a new clock (or removes it with `None`).
    pub fn set_clock(&self, clock: Option<(TimeControl, ClockSide)>) -> Result<(), SimError> {
        self.control(Control::Clock(clock))
    }

    /// Changes the board's battery charge, as answered to `0x4C` from now on (`None`: the
    /// board ignores the command, as a USB board does).
    pub fn set_battery(&self, percent: Option<u8>) -> Result<(), SimError> {
        self.control(Control::Battery(percent))
    }

    /// Shows or hides the attached clock's battery-low indicator (status bit D2); nothing
    /// happens without a clock.
    pub fn set_clock_battery_low(&self, low: bool) -> Result<(), SimError> {
        self.control(Control::ClockBatteryLow(low))
    }

    /// Starts a scenario; it replaces one still running.
    pub fn start_scenario(&self, scenario: Scenario, start: StartPolicy) -> Result<ScenarioHandle, SimError> {
        let (tx, rx) = mpsc::channel();
        self.control(Control::Scenario(Box::new(scenario), start, tx))?;
        Ok(ScenarioHandle { rx })
    }

    /// Plays a scenario to its end (or `timeout`).
    pub fn run_scenario(
        &self,
        scenario: Scenario,
        start: StartPolicy,
        timeout: Duration,
    ) -> Result<ScenarioReport, SimError> {
        self.start_scenario(scenario, start)?.wait(timeout)
    }

    /// A snapshot of the board.
    pub fn status(&self) -> Result<BoardStatus, SimError> {
        let (tx, rx) = mpsc::channel();
        self.control(Control::Status(tx))?;
        rx.recv_timeout(Duration::from_secs(5)).map_err(|_| SimError::BoardGone)
    }

    /// Stops the board: closes its pty and removes its link.
    pub fn shutdown(mut self) -> Result<(), SimError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<(), SimError> {
        let _ = self.control(Control::Shutdown);
        match self.join.take() {
            Some(j) => j.join().map_err(|_| SimError::BoardGone),
            None => Ok(()),
        }
    }
}

impl Drop for SimBoard {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Spawns `count` boards from a template: board `i` (0-based) gets the template's serial
/// number plus `i`, and, with `links_dir`, the stable link `links_dir/board-NN` (from 01).
/// The folder is created if needed.
#[cfg(unix)]
pub fn spawn_fleet(
    count: usize,
    template: &SimConfig,
    links_dir: Option<&Path>,
) -> Result<Vec<SimBoard>, SimError> {
    if let Some(dir) = links_dir {
        crate::pty::ensure_dir(dir)?;
    }
    (0..count)
        .map(|i| {
            let mut config = fleet_config(template, i);
            config.link = links_dir.map(|d| d.join(format!("board-{:02}", i + 1)));
            SimBoard::spawn(config)
        })
        .collect()
}

/// Board `i` (0-based) of a fleet or a chain made from `template`: the template's serial
/// number plus `i`, its firmware version, scan period, ack delay and battery.
#[cfg(unix)]
pub(crate) fn fleet_config(template: &SimConfig, i: usize) -> SimConfig {
    let mut config = template.clone();
    let base: u32 = template.board.serial.trim().parse().unwrap_or(0);
    let mut board = BoardConfig::with_serial(base.wrapping_add(i as u32));
    board.version = template.board.version;
    board.scan_period_ms = template.board.scan_period_ms;
    board.ack_delay_ms = template.board.ack_delay_ms;
    board.clock_poll_ms = template.board.clock_poll_ms;
    board.battery_percent = template.board.battery_percent;
    config.board = board;
    config
}

struct RunningScenario {
    actions: Vec<TimedAction>,
    next: usize,
    start: Option<u64>,
    policy: StartPolicy,
    scenario: Box<Scenario>,
    done: Sender<ScenarioReport>,
}

struct Runner {
    vt: VirtualTime,
    fw: Firmware,
    wire: Wire,
    slave: Arc<Mutex<PathBuf>>,
    host: bool,
    orientation: Orientation,
    white_side: ClockSide,
    rx: Receiver<Control>,
    /// A control message taken from `rx` while waiting on it (an in-process link).
    early: Option<Control>,
    #[cfg(unix)]
    wake_rx: OwnedFd,
    scenario: Option<RunningScenario>,
    reopen_at: Option<Instant>,
    /// Unplugged by [`SimBoard::unplug`]: off until [`SimBoard::plug`], whatever the
    /// scenario's own pulled cables would do meanwhile.
    held_off: bool,
    reconnects: u32,
}

/// Where a board's bytes go.
enum Wire {
    /// A pty of its own, as a USB board.
    #[cfg(unix)]
    Own(Box<OwnPort>),
    /// A drop on a chain's shared line (see [`crate::chain`]).
    #[cfg(unix)]
    Chain(ChainDrop),
    /// An in-process link to a host in this process ([`HostEnd`]).
    InProcess(InProcessPort),
}

/// A board's end of an in-process link; the host's bytes come as [`Control::FromHost`].
struct InProcessPort {
    to_host: Sender<Vec<u8>>,
    /// False while unplugged.
    attached: bool,
}

/// A board's own pty.
#[cfg(unix)]
struct OwnPort {
    /// `None` while unplugged.
    pty: Option<Pty>,
    link: Option<Link>,
    pending: Vec<u8>,
    /// Where in `pending` the last clock reading begins, while none of it has left (see
    /// [`OwnPort::queue`]).
    clock_tail: Option<usize>,
    line: Option<LineRate>,
    /// Bus replies waiting for their moment (a broadcast answer's random one).
    timed: Vec<(Instant, Vec<u8>)>,
    /// What left the board's UART, on its way to the host (in milliseconds since `epoch`):
    /// at once, or in bursts ([`SimConfig::bursts`]).
    to_host: BurstyLink,
    /// What the link let out and the pty has not taken yet.
    outbox: Vec<u8>,
    /// The start of `to_host`'s clock.
    epoch: Instant,
}

#[cfg(unix)]
impl OwnPort {
    /// Milliseconds of `to_host`'s clock at `at`.
    fn link_ms(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch).as_millis() as u64
    }

    /// Queues the board's messages for its UART. On a paced line a clock reading that
    /// waits for the line behind another of the same state (the same side running, the
    /// same flags: only the times counted on) takes its place: the board sends the clock's
    /// latest reading when the line is free, and a 9600-baud line carries about 96
    /// readings a second, far fewer than a clock run fast by a scenario shows.
    fn queue(&mut self, bytes: &[u8]) {
        if self.line.is_none() {
            self.pending.extend_from_slice(bytes);
            return;
        }
        let mut rest = bytes;
        while !rest.is_empty() {
            let whole = match rest {
                [id, hi, lo, ..] if id & 0x80 != 0 => {
                    let len = usize::from(*hi) << 7 | usize::from(*lo);
                    (3..=rest.len()).contains(&len).then_some(len)
                }
                _ => None,
            };
            // Anything but whole messages (line noise) goes as it is, and ends coalescing.
            let Some(len) = whole else {
                self.pending.extend_from_slice(rest);
                self.clock_tail = None;
                return;
            };
            let (msg, after) = rest.split_at(len);
            if is_clock_reading(msg) {
                if let Some(at) = self.clock_tail
                    && same_clock_state(&self.pending[at..], msg)
                {
                    self.pending.truncate(at);
                }
                self.clock_tail = Some(self.pending.len());
            } else {
                self.clock_tail = None;
            }
            self.pending.extend_from_slice(msg);
            rest = after;
        }
    }

    /// `n` bytes of `pending` left for the line.
    fn sent(&mut self, n: usize) {
        self.pending.drain(..n);
        self.clock_tail =
            self.clock_tail.and_then(|at| at.checked_sub(n)).filter(|_| !self.pending.is_empty());
        if self.clock_tail.is_some_and(|at| at + CLOCK_READING_LEN != self.pending.len()) {
            self.clock_tail = None;
        }
    }

    /// Drops every byte on its way (the host went away, the cable was pulled).
    fn drop_output(&mut self) {
        self.clock_tail = None;
        self.pending.clear();
        self.timed.clear();
        self.to_host.clear();
        self.outbox.clear();
    }
}

/// A clock reading's length on the wire (a BWTIME message: header and seven bytes).
const CLOCK_READING_LEN: usize = 10;

/// A whole BWTIME message with the clock's times (not an acknowledgement).
fn is_clock_reading(msg: &[u8]) -> bool {
    let Ok(payload) = <[u8; 7]>::try_from(msg.get(3..).unwrap_or_default()) else { return false };
    msg.len() == CLOCK_READING_LEN
        && msg[0] == 0x8D
        && matches!(dgt_protocol::Bwtime::from_payload(payload), dgt_protocol::Bwtime::Times(_))
}

/// Two clock readings with the same status byte and the same flag bits on both sides.
fn same_clock_state(a: &[u8], b: &[u8]) -> bool {
    a.len() == CLOCK_READING_LEN
        && b.len() == CLOCK_READING_LEN
        && a[9] == b[9]
        && a[3] & 0xF0 == b[3] & 0xF0
        && a[6] & 0xF0 == b[6] & 0xF0
}

/// A token bucket pacing output at a serial line's rate.
#[cfg(unix)]
struct LineRate {
    rate: f64,
    budget: f64,
    at: Instant,
}

#[cfg(unix)]
impl LineRate {
    /// Bytes that may go out now.
    fn allowance(&mut self) -> usize {
        let now = Instant::now();
        self.budget =
            (self.budget + now.duration_since(self.at).as_secs_f64() * self.rate).min(self.rate / 20.0 + 1.0);
        self.at = now;
        self.budget as usize
    }

    fn spend(&mut self, n: usize) {
        self.budget -= n as f64;
    }

    /// How long until a useful chunk (up to 16 bytes of what waits) may go.
    fn wait(&self, pending: usize) -> Duration {
        let chunk = pending.clamp(1, 16) as f64;
        Duration::from_secs_f64(((chunk - self.budget).max(0.0) / self.rate).max(0.000_5))
    }
}

/// The shortest real time a board stays unplugged: enough for a host to see its port hang
/// up and for the device node to be gone once, however fast the game runs.
pub const MIN_UNPLUGGED: Duration = Duration::from_millis(30);

/// When, in real time, a board unplugged at virtual time `at` for `down_ms` virtual
/// milliseconds is plugged back: at the real instant of virtual time `at + down_ms` (so the
/// plies the scenario makes meanwhile, thinking fast-forwarded and hands at hand speed, are
/// all made while it is away, as in the game), and at least [`MIN_UNPLUGGED`] from `now`.
pub fn plugged_back_at(vt: &VirtualTime, at: u64, down_ms: u64, now: Instant) -> Instant {
    vt.instant_at(at.saturating_add(down_ms)).max(now + MIN_UNPLUGGED)
}

/// Output kept for a host that reads slowly, beyond which bytes are lost (as a UART's
/// would be).
#[cfg(unix)]
const MAX_PENDING: usize = 64 * 1024;

impl Runner {
    fn run(mut self) {
        let mut buf = [0u8; 1024];
        loop {
            if !self.controls() {
                break;
            }
            self.vt.tidy();
            let now = self.vt.now_ms();
            if self.reopen_at.is_some_and(|t| Instant::now() >= t) {
                self.reopen(now);
            }
            self.start_scenario_if_due(now);
            self.catch_up(now);
            self.read_host(now, &mut buf);
            self.start_scenario_if_due(now);
            self.fw.tick(now);
            self.flush();
            self.finish_scenario_if_done(now);
            self.sleep(now);
        }
        if let Some(s) = self.scenario.take() {
            let _ = s.done.send(self.report(&s, false));
        }
        #[cfg(unix)]
        if let Wire::Own(p) = &self.wire
            && let Some(link) = &p.link
        {
            link.remove();
        }
    }

    /// Reads what the host wrote and hands it to the firmware. On a chain, the firmware's
    /// answers go to the line at once, stamped with the moment the command arrived.
    #[cfg_attr(not(unix), allow(unused_variables))]
    fn read_host(&mut self, now: u64, buf: &mut [u8]) {
        match &mut self.wire {
            // The host's bytes came with the controls.
            Wire::InProcess(_) => {}
            #[cfg(unix)]
            Wire::Own(p) => {
                let Some(pty) = &p.pty else { return };
                if !self.host {
                    self.host = pty.host_present();
                }
                if !self.host {
                    return;
                }
                loop {
                    match pty.read(buf) {
                        Ok(0) => break,
                        Ok(n) => self.fw.receive(&buf[..n], now),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(_) => {
                            // EIO: the host closed its end.
                            self.host = false;
                            break;
                        }
                    }
                }
            }
            #[cfg(unix)]
            Wire::Chain(d) => {
                self.host = d.host_present();
                while let Ok((at, bytes)) = d.rx.try_recv() {
                    if !d.attached {
                        continue;
                    }
                    self.fw.receive(&bytes, now);
                    d.send(self.fw.take_output(), at, true);
                    for t in self.fw.take_bus_output() {
                        d.send(t.bytes, at + Duration::from_millis(u64::from(t.delay_ms)), true);
                    }
                }
            }
        }
    }

    /// Takes the board off its line (see [`SimBoard::unplug`]).
    fn unplug(&mut self) {
        self.host = false;
        match &mut self.wire {
            Wire::InProcess(p) => p.attached = false,
            #[cfg(unix)]
            Wire::Own(p) => {
                p.pty = None;
                p.drop_output();
                if let Some(link) = &p.link {
                    link.remove();
                }
            }
            #[cfg(unix)]
            Wire::Chain(d) => {
                d.attached = false;
                while d.rx.try_recv().is_ok() {}
            }
        }
    }

    fn unplugged(&self) -> bool {
        match &self.wire {
            Wire::InProcess(p) => !p.attached,
            #[cfg(unix)]
            Wire::Own(p) => p.pty.is_none(),
            #[cfg(unix)]
            Wire::Chain(d) => !d.attached,
        }
    }

    /// Handles control messages; false on shutdown.
    #[allow(irrefutable_let_patterns)]
    fn controls(&mut self) -> bool {
        #[cfg(unix)]
        {
            let mut drain = [0u8; 64];
            while matches!(nix::unistd::read(&self.wake_rx, &mut drain), Ok(n) if n > 0) {}
        }
        while let Some(c) = self.early.take().or_else(|| self.rx.try_recv().ok()) {
            let now = self.vt.now_ms();
            match c {
                Control::Shutdown => return false,
                Control::FromHost(bytes) => {
                    if let Wire::InProcess(p) = &self.wire
                        && p.attached
                    {
                        self.catch_up(now);
                        self.fw.receive(&bytes, now);
                    }
                }
                Control::Act(a) => {
                    self.catch_up(now);
                    self.apply(&a, now);
                }
                Control::Status(tx) => {
                    let _ = tx.send(self.status(now));
                }
                Control::Clock(clock) => {
                    self.catch_up(now);
                    self.attach_clock(clock, now);
                }
                Control::Battery(percent) => self.fw.set_battery_percent(percent),
                Control::Unplug => {
                    self.catch_up(now);
                    self.unplug();
                    self.reopen_at = None;
                    self.held_off = true;
                }
                Control::Plug => {
                    self.held_off = false;
                    if self.unplugged() {
                        self.catch_up(now);
                        self.reopen(now);
                    }
                }
                Control::ClockBatteryLow(low) => {
                    self.catch_up(now);
                    if let Some(c) = self.fw.clock_mut() {
                        c.set_battery_low(low);
                    }
                }
                Control::Scenario(scenario, policy, done) => {
                    if let Some(old) = self.scenario.take() {
                        let _ = old.done.send(self.report(&old, false));
                        self.vt.set_hand_spans(Vec::new());
                    }
                    let actions = scenario.actions.clone();
                    self.scenario =
                        Some(RunningScenario { actions, next: 0, start: None, policy, scenario, done });
                }
            }
        }
        true
    }

    fn attach_clock(&mut self, clock: Option<(TimeControl, ClockSide)>, now: u64) {
        if let Some((_, side)) = &clock {
            self.white_side = *side;
        }
        self.fw.attach_clock(clock.map(|(tc, side)| Dgt3000::new(tc, side, now)));
    }

    fn start_scenario_if_due(&mut self, now: u64) {
        let Some(s) = self.scenario.as_mut() else { return };
        if s.start.is_some() {
            return;
        }
        let listening = match self.wire {
            #[cfg(unix)]
            Wire::Own(_) => self.fw.host_listening(),
            Wire::InProcess(_) => self.fw.host_listening(),
            // On a chain, a single-board command puts every board in update mode at once (a
            // host trying the line as one board): following a board is reading its changes.
            #[cfg(unix)]
            Wire::Chain(_) => self.fw.bus_followed(),
        };
        if s.policy == StartPolicy::WhenHostListens && !listening {
            return;
        }
        s.start = Some(now);
        let spans = s.scenario.hand_spans().into_iter().map(|(a, b)| (now + a, now + b)).collect();
        self.vt.set_hand_spans(spans);
        let setup = s.scenario.setup.clone();
        self.orientation = setup.orientation;
        self.fw.set_position(board_codes(&setup.position, setup.orientation), now);
        match setup.clock {
            Some(c) => {
                self.white_side = c.white_side;
                self.fw.attach_clock(Some(Dgt3000::new(c.time_control, c.first_side, now)));
            }
            None => self.fw.attach_clock(None),
        }
        self.fw.rephase_scan(now);
    }

    /// Plays timeline events (scenario actions, firmware deadlines) in time order up to `now`.
    fn catch_up(&mut self, now: u64) {
        loop {
            let next_action = self
                .scenario
                .as_ref()
                .and_then(|s| Some(s.start? + s.actions.get(s.next)?.at_ms))
                .filter(|t| *t <= now);
            let next_fw = self.fw.next_deadline(now).filter(|t| *t <= now);
            match (next_action, next_fw) {
                (Some(a), f) if f.is_none_or(|f| a <= f) => {
                    let Some(s) = self.scenario.as_mut() else { break };
                    let action = s.actions[s.next].action.clone();
                    s.next += 1;
                    self.apply(&action, a);
                }
                (_, Some(f)) => {
                    self.fw.tick(f);
                    if self.fw.next_deadline(f).is_some_and(|n| n <= f) {
                        // Nothing more can happen at this instant: avoid spinning.
                        self.fw.tick(now);
                        break;
                    }
                }
                _ => break,
            }
            if self.fw.has_output() {
                self.flush();
            }
        }
    }

    fn apply(&mut self, action: &Action, at: u64) {
        let down = crate::offline::apply_action(&mut self.fw, action, at, self.orientation, self.white_side);
        if let Some(down_ms) = down {
            if self.held_off {
                // Unplugged already until plugged back by hand: a cable pulled in the
                // scenario meanwhile does not plug it back early.
                return;
            }
            let back = plugged_back_at(&self.vt, at, down_ms, Instant::now());
            self.unplug();
            self.reopen_at = Some(back);
        }
    }

    fn reopen(&mut self, now: u64) {
        match &mut self.wire {
            Wire::InProcess(p) => {
                p.attached = true;
                self.host = true;
            }
            #[cfg(unix)]
            Wire::Own(p) => match Pty::open() {
                Ok(pty) => {
                    if let Ok(mut path) = self.slave.lock() {
                        *path = pty.slave_path().to_path_buf();
                    }
                    if let Some(link) = p.link.as_mut() {
                        let _ = link.retarget(pty.slave_path());
                    }
                    p.pty = Some(pty);
                }
                Err(_) => {
                    self.reopen_at = Some(Instant::now() + Duration::from_millis(200));
                    return;
                }
            },
            #[cfg(unix)]
            Wire::Chain(d) => {
                while d.rx.try_recv().is_ok() {}
                d.attached = true;
            }
        }
        self.reopen_at = None;
        self.reconnects += 1;
        self.fw.power_cycle(now);
    }

    // Irrefutable where an in-process link is the only wire (Windows).
    #[allow(irrefutable_let_patterns)]
    fn flush(&mut self) {
        let out = self.fw.take_output();
        let bus = self.fw.take_bus_output();
        if let Wire::InProcess(p) = &mut self.wire {
            if !p.attached {
                return;
            }
            // Bus replies' delays are a chain's; a board alone answers at once.
            for bytes in std::iter::once(out).chain(bus.into_iter().map(|t| t.bytes)) {
                if !bytes.is_empty() && p.to_host.send(bytes).is_err() {
                    self.host = false;
                }
            }
        } else {
            #[cfg(unix)]
            self.flush_to_line(out, bus, Instant::now());
        }
    }

    /// [`Runner::flush`] on a pty or a chain.
    #[cfg(unix)]
    fn flush_to_line(&mut self, out: Vec<u8>, bus: Vec<crate::firmware::BusTransmit>, now: Instant) {
        let p = match &mut self.wire {
            Wire::InProcess(_) => return,
            #[cfg(unix)]
            Wire::Chain(d) => {
                d.send(out, now, false);
                for t in bus {
                    d.send(t.bytes, now + Duration::from_millis(u64::from(t.delay_ms)), true);
                }
                return;
            }
            #[cfg(unix)]
            Wire::Own(p) => p,
        };
        if p.pty.is_none() {
            return;
        }
        if !self.host {
            // Nobody listens: the bytes are lost, as on a real line.
            p.drop_output();
            return;
        }
        p.queue(&out);
        for t in bus {
            match t.delay_ms {
                0 => p.queue(&t.bytes),
                ms => p.timed.push((now + Duration::from_millis(u64::from(ms)), t.bytes)),
            }
        }
        p.timed.sort_by_key(|t| t.0);
        while p.timed.first().is_some_and(|t| t.0 <= now) {
            let (_, bytes) = p.timed.remove(0);
            p.queue(&bytes);
        }
        // The board's UART: bytes leave at the line's rate (all at once without one) into
        // the link to the host, which lets them out at once or in bursts.
        let allowed = p.line.as_mut().map_or(p.pending.len(), |l| l.allowance().min(p.pending.len()));
        if allowed > 0 {
            let leaving: Vec<u8> = p.pending[..allowed].to_vec();
            p.sent(allowed);
            if let Some(l) = p.line.as_mut() {
                l.spend(allowed);
            }
            let at = p.link_ms(now);
            p.to_host.push(at, leaving);
        }
        let now_ms = p.link_ms(Instant::now());
        while let Some(bytes) = p.to_host.pop_due(now_ms) {
            p.outbox.extend_from_slice(&bytes);
        }
        let Some(pty) = &p.pty else { return };
        while !p.outbox.is_empty() {
            match pty.write(&p.outbox) {
                Ok(n) => {
                    p.outbox.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    self.host = false;
                    p.drop_output();
                    break;
                }
            }
        }
        if p.pending.len() > MAX_PENDING {
            p.sent(p.pending.len() - MAX_PENDING);
        }
        if p.outbox.len() > MAX_PENDING {
            let excess = p.outbox.len() - MAX_PENDING;
            p.outbox.drain(..excess);
        }
    }

    fn finish_scenario_if_done(&mut self, now: u64) {
        let done = self.scenario.as_ref().is_some_and(|s| s.start.is_some() && s.next >= s.actions.len());
        if !done {
            return;
        }
        if let Some(s) = self.scenario.take() {
            let mut report = self.report(&s, true);
            report.finished_ms = now;
            let _ = s.done.send(report);
        }
    }

    fn report(&self, s: &RunningScenario, completed: bool) -> ScenarioReport {
        let started = s.start.unwrap_or(0);
        ScenarioReport {
            started_ms: started,
            finished_ms: started + s.actions.get(s.next.saturating_sub(1)).map_or(0, |a| a.at_ms),
            truth: s.scenario.truth.clone(),
            final_board: codes_board(self.fw.physical(), self.orientation).to_string(),
            stats: self.fw.stats(),
            completed,
            unlogged_presses: self
                .fw
                .unlogged_presses()
                .iter()
                .filter(|t| **t >= started)
                .map(|t| t - started)
                .collect(),
        }
    }

    fn status(&mut self, now: u64) -> BoardStatus {
        let clock = self.fw.clock_mut().map(|c| {
            c.advance(now);
            ClockState {
                left: c.view(ClockSide::Left),
                right: c.view(ClockSide::Right),
                running: c.is_running(),
                high_side: c.high_side(),
                text: c.text().map(str::to_string),
                beeps: c.beeps(),
            }
        });
        BoardStatus {
            slave_path: self.slave.lock().map(|p| p.clone()).unwrap_or_default(),
            host_connected: self.host,
            mode: self.fw.mode(),
            virtual_ms: now,
            physical: *self.fw.physical(),
            board_fen: codes_board(self.fw.physical(), self.orientation).to_string(),
            clock,
            scenario_running: self.scenario.is_some(),
            stats: self.fw.stats(),
            reconnects: self.reconnects,
        }
    }

    fn sleep(&mut self, now: u64) {
        let mut wake: Option<Instant> = None;
        let mut consider = |t: Instant| wake = Some(wake.map_or(t, |w: Instant| w.min(t)));
        if let Some(t) = self.fw.next_deadline(now) {
            consider(self.vt.instant_at(t));
        }
        if let Some(s) = &self.scenario {
            match s.start {
                Some(start) => {
                    if let Some(a) = s.actions.get(s.next) {
                        consider(self.vt.instant_at(start + a.at_ms));
                    }
                }
                None => consider(Instant::now() + Duration::from_millis(20)),
            }
        }
        if let Some(t) = self.reopen_at {
            consider(t);
        }
        if matches!(self.wire, Wire::InProcess(_)) {
            // The host's bytes come on the control channel: waiting on it is waiting for both.
            let timeout = wake.map_or(Duration::from_secs(1), |t| {
                t.saturating_duration_since(Instant::now()).min(Duration::from_secs(60))
            });
            if let Ok(c) = self.rx.recv_timeout(timeout) {
                self.early = Some(c);
            }
        } else {
            #[cfg(unix)]
            self.poll_line(wake);
        }
    }

    /// [`Runner::sleep`] on a pty or a chain: until `wake`, a control, or the host's bytes.
    #[cfg(unix)]
    fn poll_line(&mut self, mut wake: Option<Instant>) {
        let mut consider = |t: Instant| wake = Some(wake.map_or(t, |w: Instant| w.min(t)));
        let own = match &self.wire {
            Wire::Own(p) => Some(p),
            Wire::Chain(_) | Wire::InProcess(_) => None,
        };
        let watch_master = self.host && own.is_some_and(|p| p.pty.is_some());
        if let Some(p) = own {
            if p.pty.is_some() && !self.host {
                // Hang-up is level-triggered: look for a host now and then instead.
                consider(Instant::now() + Duration::from_millis(25));
            }
            if !p.pending.is_empty() {
                let pending = p.pending.len();
                let wait = p.line.as_ref().map_or(Duration::from_millis(2), |l| l.wait(pending));
                consider(Instant::now() + wait);
            }
            if let Some((t, _)) = p.timed.first() {
                consider(*t);
            }
            if !p.outbox.is_empty() {
                consider(Instant::now() + Duration::from_millis(2));
            }
            if let Some(ms) = p.to_host.next_release() {
                consider(p.epoch + Duration::from_millis(ms));
            }
        }
        let timeout = match wake {
            Some(t) => {
                let ms = t.saturating_duration_since(Instant::now()).as_micros().div_ceil(1000);
                PollTimeout::try_from(ms.min(60_000) as u32).unwrap_or(PollTimeout::MAX)
            }
            None => PollTimeout::from(1000u16),
        };
        let wake_fd = self.wake_rx.as_fd();
        let master = match &self.wire {
            Wire::Own(p) if watch_master => p.pty.as_ref().map(|pty| pty.master().as_fd()),
            _ => None,
        };
        let hup = match master {
            Some(master) => {
                let mut fds =
                    [PollFd::new(wake_fd, PollFlags::POLLIN), PollFd::new(master, PollFlags::POLLIN)];
                let _ = poll(&mut fds, timeout);
                fds[1].revents().is_some_and(|r| r.contains(PollFlags::POLLHUP))
            }
            None => {
                let mut fds = [PollFd::new(wake_fd, PollFlags::POLLIN)];
                let _ = poll(&mut fds, timeout);
                false
            }
        };
        if hup {
            self.host = false;
            if let Wire::Own(p) = &mut self.wire {
                p.drop_output();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_time_follows_its_map_from_the_anchor() {
        let mut vt = VirtualTime::with_hand_speed(100.0, 1.0);
        vt.map = TimeMap::new(0.0, vec![(1_000, 2_000), (5_000, 5_500)], 100.0, 1.0);
        let real_ms =
            |vt: &VirtualTime, v: u64| vt.instant_at(v).duration_since(vt.anchor).as_secs_f64() * 1000.0;
        assert!((real_ms(&vt, 1_500) - 510.0).abs() < 1e-3);
        assert!((real_ms(&vt, 6_500) - 1_550.0).abs() < 1e-3);
        for v in [0u64, 1_250, 5_499, 100_000] {
            let back = vt.virtual_at(vt.instant_at(v));
            assert!((back - v as f64).abs() < 0.01, "{v} -> {back}");
        }
        // New stretches from now on (about virtual 10 s: 100 ms ago at x100); the past keeps
        // its times.
        vt.map = TimeMap::new(0.0, Vec::new(), 100.0, 1.0);
        vt.anchor = vt.anchor.checked_sub(Duration::from_millis(100)).unwrap_or(vt.anchor);
        let before = vt.now_ms();
        assert!(before >= 10_000, "{before}");
        vt.set_hand_spans(vec![(0, 10), (before + 20_000, before + 21_000)]);
        assert_eq!(vt.map.spans(), [(before + 20_000, before + 21_000)]);
        assert!(vt.now_ms() >= before);
    }

    #[test]
    fn an_unplug_ends_at_its_virtual_time() {
        let now = Instant::now();
        // 2 s of game time at x20 is 100 ms of real time, not many moves of play.
        let mut vt = VirtualTime::with_hand_speed(20.0, 1.0);
        let back = plugged_back_at(&vt, vt.now_ms(), 2_000, now);
        let real = back.saturating_duration_since(now).as_secs_f64();
        assert!((0.095..0.2).contains(&real), "{real}");
        // Hands inside the window run at hand speed, and the board stays away for them too:
        // 1 s of thinking (50 ms) then 1 s of hands (1 s) then 1 s of thinking (50 ms).
        let start = vt.now_ms();
        vt.set_hand_spans(vec![(start + 1_000, start + 2_000)]);
        let back = plugged_back_at(&vt, start, 3_000, now);
        let real = back.saturating_duration_since(now).as_secs_f64();
        assert!((1.09..1.3).contains(&real), "{real}");
        // Very fast games keep a short real floor, for the host to see the hang-up.
        let vt = VirtualTime::new(1_000.0);
        assert!(plugged_back_at(&vt, vt.now_ms(), 10, now) >= now + MIN_UNPLUGGED);
    }

    #[cfg(unix)]
    fn port(line_rate: Option<u32>) -> OwnPort {
        OwnPort {
            pty: None,
            link: None,
            pending: Vec::new(),
            clock_tail: None,
            line: line_rate.map(|rate| LineRate { rate: f64::from(rate), budget: 0.0, at: Instant::now() }),
            timed: Vec::new(),
            to_host: BurstyLink::new(None, 0),
            outbox: Vec::new(),
            epoch: Instant::now(),
        }
    }

    /// A clock reading: left 1:23:`seconds`, right 1:30:00, the status byte `status`.
    fn reading(seconds: u8, status: u8) -> Vec<u8> {
        vec![0x8D, 0x00, 0x0A, 0x01, 0x23, seconds, 0x01, 0x30, 0x00, status]
    }

    #[test]
    #[cfg(unix)]
    fn a_paced_line_sends_the_latest_clock_reading_of_a_run_not_every_one() {
        let field = [0x8E, 0x00, 0x05, 0x1C, 0x01];
        let mut p = port(Some(960));
        let mut out = Vec::new();
        for s in [0x10, 0x09, 0x08] {
            out.extend(reading(s, 0x09));
        }
        p.queue(&out);
        assert_eq!(p.pending, reading(0x08, 0x09), "the line free: the latest reading only");
        p.queue(&field);
        p.queue(&reading(0x07, 0x09));
        p.queue(&reading(0x06, 0x09));
        p.queue(&reading(0x06, 0x0B));
        let want = [reading(0x08, 0x09), field.to_vec(), reading(0x06, 0x09), reading(0x06, 0x0B)].concat();
        assert_eq!(p.pending, want, "a field update between readings, and a press (status), are kept");
        // The last reading begun on the line: the next one waits behind it.
        p.sent(want.len() - 4);
        p.queue(&reading(0x05, 0x0B));
        assert_eq!(p.pending, [&reading(0x06, 0x0B)[6..], &reading(0x05, 0x0B)[..]].concat());
        // Noise on the line goes as it is.
        p.queue(&[0x00, 0x8D]);
        p.queue(&reading(0x04, 0x0B));
        assert_eq!(p.pending.len(), 4 + 10 + 2 + 10);
        // Unpaced, every reading goes.
        let mut free = port(None);
        free.queue(&out);
        assert_eq!(free.pending, out);
    }
}
