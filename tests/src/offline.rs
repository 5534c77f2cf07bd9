//! The offline harness: a corpus game planned by the simulator under a noise profile,
//! played through the simulated firmware without a pty, into the relay's own board
//! session ([`dgt_session::BoardSession`], the code the relay runs per board) in virtual
//! time. What the session confirmed is compared with the ground truth the way
//! [`crate::acceptance::check`] compares what the relay published: moves exact (UCI),
//! result, `%clk` within 1 s of the simulated clock's display after the press, no ghost
//! move (a confirmed move that is not the truth's move at that ply, even if it was later
//! taken back), nothing missing.
//!
//! Deterministic and fast (no threads, no real time): a whole game replays in
//! milliseconds. Only the I/O is the harness's: the port is opened and the handshake run
//! on a [`dgt_session::Link`] as the relay's port task does, the bytes the session writes
//! reach the firmware a millisecond later, the board's bytes reach the session at once
//! (its event log at 9600 baud), an unplugged cable is a lost port and a reopened one, and
//! the session is polled at its own deadlines.
//!
//! With a [`Pace`] ([`OfflineOptions::pace`]) the session is given the *real* time instead:
//! the time at which a board of the end-to-end suite, thinking fast-forwarded and hands
//! sped up ([`crate::acceptance::RunOptions`]), would send each message to the relay
//! ([`Timeline`]). The firmware still runs in virtual time, as the simulated boards do;
//! ticks, dump answers and the reconnect after an unplugged cable are timed in real
//! milliseconds, as the relay sees them. Still deterministic: what the end-to-end suite
//! does by the clock, reproduced in milliseconds, without its machine's noise.
//!
//! With [`Bursts`] ([`OfflineOptions::bursts`]) the board's bytes cross a link that holds
//! them back and lets them out in bursts ([`dgt_hil_sim::transport`]), as a Bluetooth
//! serial link does: the relay keeps running and reads each burst when it arrives, stamped
//! with that time. Unlike [`Stalls`] (the relay frozen) its deadlines are not held up.
//!
//! ```no_run
//! use dgt_e2e_tests::offline::{replay_through_tracker, OfflineOptions};
//! use dgt_hil_sim::hands::Profile;
//! let games = dgt_e2e_tests::acceptance::worldcup().unwrap();
//! let o = replay_through_tracker(&games[4], Profile::Slide, 5, &OfflineOptions::default());
//! assert!(o.passed(), "{}", o.why.join("\n"));
//! ```

use dgt_core::Config;
use dgt_hil_sim::hands::Profile;
use dgt_hil_sim::offline::apply_action;
use dgt_hil_sim::pgn::SourceGame;
use dgt_hil_sim::scenario::Action;
use dgt_hil_sim::timemap::TimeMap;
use dgt_hil_sim::transport::{Bursts, BurstyLink};
use dgt_hil_sim::{BoardConfig, Dgt3000, Firmware, GroundTruth, Scenario};
use dgt_protocol::{ClockSide, Decoded, Decoder, Message};
use dgt_session::{BoardSession, Effect, Link, MoveState, SessionConfig};

use crate::acceptance::{EndPath, Job};

/// How often the relay looks for the device node of a port whose board was unplugged
/// (its `NODE_POLL`), real milliseconds.
pub const NODE_POLL_MS: u64 = 50;

/// How to replay.
#[derive(Clone, Copy, Debug)]
pub struct OfflineOptions {
    /// How the end of the game is shown (as in the end-to-end suite).
    pub end: EndPath,
    /// The tracker's settings.
    pub config: Config,
    /// Keep every event with its time in [`OfflineOutcome::events`].
    pub keep_events: bool,
    /// Feed the tracker the real time of a board played at this pace (the end-to-end
    /// suite's), instead of the scenario's virtual time.
    pub pace: Option<Pace>,
    /// Freeze the relay now and then, as a loaded machine does (see [`Stalls`]).
    pub stalls: Option<Stalls>,
    /// Deliver the board's output late and in bursts, as a Bluetooth serial link does
    /// ([`Bursts`]; holds in the relay's milliseconds).
    pub bursts: Option<Bursts>,
    /// Run the session as the relay box does ([`dgt_bridge::DeviceConfig`]: its catch-up
    /// budget, its line's room, the messages it holds and the events it keeps of a log),
    /// `config`'s other settings kept.
    pub device: bool,
}

impl Default for OfflineOptions {
    fn default() -> Self {
        OfflineOptions {
            end: EndPath::Board,
            config: Config::default(),
            keep_events: false,
            pace: None,
            stalls: None,
            bursts: None,
            device: false,
        }
    }
}

/// A relay on a loaded machine: now and then its process is not scheduled for a while.
/// The board goes on; what it sends waits in the port's buffer and is read, all at once
/// and stamped with the time of the read, when the relay runs again, before its own
/// deadlines (which also wait). The windows are drawn from `seed`: one starts on average
/// every `every_ms` of virtual time and lasts up to `max_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stalls {
    /// The longest freeze, virtual milliseconds.
    pub max_ms: u64,
    /// The mean time from one freeze to the next, virtual milliseconds.
    pub every_ms: u64,
    /// Draws the windows.
    pub seed: u64,
}

impl Stalls {
    /// Parses `MAX_MS[,EVERY_MS[,SEED]]` (every 1,000 ms and seed 1 by default).
    pub fn parse(text: &str) -> Option<Stalls> {
        let mut parts = text.split(',').map(str::trim);
        let max_ms = parts.next()?.parse().ok()?;
        let every_ms = parts.next().map_or(Some(1000), |v| v.parse().ok())?;
        let seed = parts.next().map_or(Some(1), |v| v.parse().ok())?;
        (parts.next().is_none() && every_ms > 0).then_some(Stalls { max_ms, every_ms, seed })
    }

    /// The freezes, `[from, to)` in virtual milliseconds, in order, up to `until`.
    fn windows(&self, until: u64) -> Vec<(u64, u64)> {
        let mut rng = dgt_hil_sim::rng::Rng::new(self.seed);
        let mut out = Vec::new();
        let mut t = 0u64;
        loop {
            t += rng.range(1, 2 * self.every_ms);
            if t > until {
                return out;
            }
            let len = rng.range(1, self.max_ms.max(1));
            out.push((t, t + len));
            t += len;
        }
    }
}

/// The pace of a simulated board in the end-to-end suite, and what the relay's host adds
/// in real time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pace {
    /// Speed factor of the thinking time between hand sequences (`--speed`).
    pub speed: f64,
    /// Speed factor of the hand sequences (`--hand-speed`), at most `speed`.
    pub hand_speed: f64,
    /// Real milliseconds from the tracker's dump request to the dump (host, pty, firmware).
    pub dump_latency_ms: u64,
    /// Real milliseconds after the cable is pulled before the relay first tries to reopen
    /// the port (its `REOPEN_FIRST`); a board still unplugged then is found again within
    /// [`NODE_POLL_MS`] of its replugging.
    pub reconnect_ms: u64,
    /// The tracker's first tick, real milliseconds after the scenario's start (1 to
    /// [`TICK_MS`]): the relay's ticks run at any phase against the board's actions.
    pub tick_phase_ms: u64,
}

impl Pace {
    /// The end-to-end suite's defaults: thinking x150, hands x3 (see `--bin acceptance`).
    pub const RELAY_SUITE: Pace =
        Pace { speed: 150.0, hand_speed: 3.0, dump_latency_ms: 2, reconnect_ms: 100, tick_phase_ms: TICK_MS };

    /// Parses `SPEED,HAND_SPEED[,RECONNECT_MS[,DUMP_LATENCY_MS[,TICK_PHASE_MS]]]` (e.g.
    /// `150,3`; the rest default to [`Pace::RELAY_SUITE`]'s); `relay` is
    /// [`Pace::RELAY_SUITE`].
    pub fn parse(text: &str) -> Option<Pace> {
        if text == "relay" {
            return Some(Pace::RELAY_SUITE);
        }
        let mut parts = text.split(',').map(str::trim);
        let mut pace = Pace::RELAY_SUITE;
        pace.speed = parts.next()?.parse().ok()?;
        pace.hand_speed = parts.next()?.parse().ok()?;
        if let Some(r) = parts.next() {
            pace.reconnect_ms = r.parse().ok()?;
        }
        if let Some(d) = parts.next() {
            pace.dump_latency_ms = d.parse().ok()?;
        }
        if let Some(p) = parts.next() {
            pace.tick_phase_ms = p.parse::<u64>().ok()?.clamp(1, TICK_MS);
        }
        (parts.next().is_none() && pace.speed > 0.0 && pace.hand_speed > 0.0).then_some(pace)
    }
}

/// A scenario's virtual time against the real time of a board playing it at a pace: the
/// simulator's own mapping ([`TimeMap`]) of the scenario's hand spans
/// ([`Scenario::hand_spans`]) at the hand speed and the rest at the speed, from its start.
#[derive(Clone, Debug)]
pub struct Timeline(TimeMap);

impl Timeline {
    /// The timeline of `scenario` at `speed`, hands at `hand_speed`.
    pub fn new(scenario: &Scenario, speed: f64, hand_speed: f64) -> Timeline {
        Timeline(TimeMap::new(0.0, scenario.hand_spans(), speed, hand_speed))
    }

    /// Real milliseconds from the start at virtual millisecond `v`.
    pub fn real_ms(&self, v: u64) -> f64 {
        self.0.real_ms(v as f64)
    }

    /// The first virtual millisecond at or after real millisecond `real`.
    pub fn virtual_at(&self, real: f64) -> u64 {
        self.0.first_virtual_ms_at(real)
    }
}

/// What one offline replay produced, and how it compares with the ground truth.
#[derive(Clone, Debug)]
pub struct OfflineOutcome {
    /// The job's label, e.g. `#17`.
    pub label: String,
    /// The profile.
    pub profile: Profile,
    /// The seed.
    pub seed: u64,
    /// Plies in the ground truth.
    pub plies: usize,
    /// The confirmed line at the end: (UCI, `%clk`).
    pub confirmed: Vec<(String, Option<u32>)>,
    /// Confirmed moves that were not the truth's move at their ply: (ply, UCI).
    pub ghosts: Vec<(usize, String)>,
    /// Plies of the truth not in the confirmed line (counted from the first difference).
    pub missing: usize,
    /// `%clk` checked (plies with a press and a clock).
    pub clk_checked: usize,
    /// `%clk` absent or wrong on plies confirmed with the right move: `clk_absent` +
    /// `clk_off` (a ply never confirmed counts in `missing` only).
    pub clk_misses: usize,
    /// `%clk` absent on a ply confirmed with the right move, though the clock showed it.
    pub clk_absent: usize,
    /// `%clk` more than 1 s off the clock's display after the press.
    pub clk_off: usize,
    /// `%clk` left out, rightly, for a press made while the board was unplugged (nobody
    /// saw it, and the clock had moved on when the board came back), or hidden by a second
    /// press in the same clock poll (a hand script's unobservable `%clk`).
    pub clk_unseen: usize,
    /// The result the tracker reported.
    pub result: Option<String>,
    /// The result it should have reported.
    pub expected_result: Option<String>,
    /// Every difference, readable.
    pub why: Vec<String>,
    /// Every effect of the session with its time: virtual, or real with a [`Pace`] (only
    /// with [`OfflineOptions::keep_events`]).
    pub events: Vec<(u64, String)>,
    /// The scenario's actions with the tracker's time, each with its virtual time (only
    /// with [`OfflineOptions::keep_events`]).
    pub actions: Vec<(u64, String)>,
    /// Every message fed to the tracker, with the tracker's time (only with
    /// [`OfflineOptions::keep_events`]).
    pub fed: Vec<(u64, String)>,
    /// The relay's side of the serial line: port opened, bytes in, port lost, with the
    /// relay's time (only with [`OfflineOptions::keep_events`]).
    pub wire: Vec<(u64, Wire)>,
    /// Every effect the session emitted, with the relay's time (only with
    /// [`OfflineOptions::keep_events`]).
    pub effects: Vec<(u64, Effect)>,
    /// The relay's time at which the replay ended (ten seconds after the last action).
    pub end_ms: u64,
    /// The truth's plies, one line each: press time, clock after it, faults (only with
    /// [`OfflineOptions::keep_events`]).
    pub truth_plies: Vec<String>,
}

impl OfflineOutcome {
    /// True when the tracker's result differs from the expected one.
    pub fn result_wrong(&self) -> bool {
        self.result != self.expected_result
    }

    /// Moves exact, no ghost, nothing missing, every `%clk` right, the right result.
    pub fn passed(&self) -> bool {
        self.failure().is_none()
    }

    /// What is wrong with the game, the worst first; `None` when it is exact.
    pub fn failure(&self) -> Option<Failure> {
        if !self.ghosts.is_empty() {
            Some(Failure::WrongMove)
        } else if self.missing > 0 {
            Some(Failure::Stalled)
        } else if self.clk_misses > 0 {
            Some(Failure::Clock)
        } else if self.result_wrong() {
            Some(Failure::Result)
        } else {
            None
        }
    }
}

/// What is wrong with a game that is not exact, the worst that applies: one class per game.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Failure {
    /// A move published as confirmed that was not played at its ply (even if taken back).
    WrongMove,
    /// No wrong move, but plies played were never confirmed.
    Stalled,
    /// Every move right, but a `%clk` absent or wrong.
    Clock,
    /// Moves and clocks right, the result wrong.
    Result,
}

/// Plans `game` under `profile` with `seed` (as the end-to-end suite does) and replays it
/// through the tracker.
pub fn replay_through_tracker(
    game: &SourceGame,
    profile: Profile,
    seed: u64,
    opts: &OfflineOptions,
) -> OfflineOutcome {
    let job = Job::plan(format!("#{}", game.index), game, profile, seed, opts.end);
    replay_job(&job, opts)
}

/// Replays an already planned job through the tracker and checks it.
pub fn replay_job(job: &Job, opts: &OfflineOptions) -> OfflineOutcome {
    let truth = job.truth();
    let mut run_log_limit = None;
    let timeline = opts.pace.map(|p| (p, Timeline::new(&job.scenario, p.speed, p.hand_speed)));
    let session_config = if opts.device {
        let box_config = dgt_bridge::DeviceConfig::new("offline", "offline");
        run_log_limit = Some(box_config.log_events);
        SessionConfig {
            tracker: Config { catch_up_budget: box_config.session.tracker.catch_up_budget, ..opts.config },
            ..box_config.session
        }
    } else {
        SessionConfig { tracker: opts.config, ..SessionConfig::default() }
    };
    let mut run = Run::new(&job.scenario, session_config, timeline, opts.bursts);
    run.log_limit = run_log_limit;
    run.keep_fed = opts.keep_events;
    if let Some(s) = opts.stalls {
        run.stalls = s.windows(job.scenario.duration_ms() + 600_000);
    }
    // An unfinished game: the arbiter stops the clock once the scenario is over.
    run.stop_clock_at_end = truth.end == "none";
    run.play(&job.scenario);
    if job.end == EndPath::Operator
        && run.result.is_none()
        && let Some(r) = job.expected_result()
    {
        // The operator sets the result of a resignation.
        let result = match r.as_str() {
            "1-0" => Some(dgt_core::GameResult::WhiteWins),
            "0-1" => Some(dgt_core::GameResult::BlackWins),
            "1/2-1/2" => Some(dgt_core::GameResult::Draw),
            _ => None,
        };
        if let Some(result) = result {
            let now = run.relay_now();
            if run.session.set_result(now, Some(result)).is_ok() {
                run.effects();
            }
        }
    }
    let outages = outage_windows(&job.scenario, opts.pace);
    let mut o = compare(truth, &run, job.expected_result(), &outages);
    o.label = job.label.clone();
    o.profile = job.profile;
    o.seed = truth.seed;
    if opts.keep_events {
        o.truth_plies = truth
            .moves
            .iter()
            .map(|m| {
                let clk = if m.color == "white" { m.white_clock_s } else { m.black_clock_s };
                let press = m.press_at_ms.map(|p| (p, run.tracker_ms(p)));
                format!("ply {} {} press {press:?} clock {clk:?} {:?}", m.ply, m.uci, m.events)
            })
            .collect();
        o.actions = job
            .scenario
            .actions
            .iter()
            .map(|a| (run.tracker_ms(a.at_ms), format!("(virtual {}) {:?}", a.at_ms, a.action)))
            .collect();
        o.events = run.events;
        o.fed = run.fed;
        o.wire = run.wire;
        o.effects = run.effects;
    }
    o
}

/// The spans of virtual time, `[from, to]` in milliseconds from the scenario's start, in
/// which nobody can see the board because its cable was pulled ([`Action::Disconnect`]):
/// a clock press made then is unseen, and its `%clk`/`%emt` rightly left out.
///
/// Without a pace, the scenario's own windows (the offline harness reconnects at once).
/// With a pace, each window lasts until the relay has the board back: the simulated
/// board is plugged back at the real instant of the window's end but never sooner than
/// [`dgt_hil_sim::sim::MIN_UNPLUGGED`] after the pull, and the relay reopens it
/// [`Pace::reconnect_ms`] after the pull or within [`NODE_POLL_MS`] of its replugging,
/// whichever is later; at a fast pace that can be many virtual seconds.
pub fn outage_windows(scenario: &Scenario, pace: Option<Pace>) -> Vec<(u64, u64)> {
    let timeline = pace.map(|p| (p, Timeline::new(scenario, p.speed, p.hand_speed)));
    scenario
        .actions
        .iter()
        .filter_map(|a| match a.action {
            Action::Disconnect { down_ms } => Some((a.at_ms, a.at_ms + down_ms)),
            _ => None,
        })
        .map(|(from, to)| match &timeline {
            Some((p, t)) => {
                let min = dgt_hil_sim::sim::MIN_UNPLUGGED.as_secs_f64() * 1000.0;
                let plugged = t.real_ms(to).max(t.real_ms(from) + min);
                let back = (t.real_ms(from) + p.reconnect_ms as f64).max(plugged + NODE_POLL_MS as f64);
                (from, to.max(t.virtual_at(back)))
            }
            None => (from, to),
        })
        .collect()
}

/// True when a press at `press_at_ms` (virtual) falls in one of `outages` (see
/// [`outage_windows`]): nobody saw it.
pub fn press_unseen(press_at_ms: Option<u64>, outages: &[(u64, u64)]) -> bool {
    press_at_ms.is_some_and(|p| outages.iter().any(|&(a, b)| (a..=b).contains(&p)))
}

/// The range of phases of the relay's own timers (keep-alives, polls) against the board's
/// actions, as the 50 ms period the relay once ticked its tracker at.
const TICK_MS: u64 = 50;

/// The relay's clock at the scenario's start, with a pace: its timers fall
/// [`Pace::tick_phase_ms`] after the scenario's start, as a relay started at any moment
/// before the board.
fn tick_offset(p: &Pace) -> u64 {
    TICK_MS - p.tick_phase_ms.clamp(1, TICK_MS)
}

/// The first virtual time at which the relay's clock reads `ms` more than at `v` (and at
/// least one virtual millisecond after `v`), on `timeline` (the identity without a pace).
fn later_on(timeline: &Option<(Pace, Timeline)>, v: u64, ms: u64) -> u64 {
    match timeline {
        None => v + ms,
        Some((_, t)) => t.virtual_at((t.real_ms(v).floor() as u64 + ms) as f64).max(v + 1),
    }
}

/// What happened on the relay's side of the serial line, with the relay's time: what a
/// relay given the same would see ([`OfflineOutcome::wire`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wire {
    /// The port was opened (the handshake starts).
    Opened,
    /// Bytes arrived from the board.
    Bytes(Vec<u8>),
    /// The port went away (the cable was pulled).
    Lost,
}

/// Board output longer than this is the event log, which crosses the line at 9600 baud
/// (960 bytes a second); shorter output arrives at once.
const LONG_OUTPUT: usize = 256;

/// The replay's state: the firmware, the relay's board session, and what it said.
struct Run {
    fw: Firmware,
    /// The relay's session for the board, as the relay runs it.
    session: BoardSession,
    /// A link past its handshake is given to the session; before that, the port's own.
    handshake: Option<Link>,
    now: u64,
    events: Vec<(u64, String)>,
    /// Every confirmed (ply, UCI) ever emitted.
    confirmed_sent: Vec<(usize, String)>,
    /// The confirmed line: (UCI, `%clk`).
    line: Vec<(String, Option<u32>)>,
    result: Option<String>,
    games_started: usize,
    stop_clock_at_end: bool,
    /// Bytes on their way to the board: (virtual time due, bytes).
    to_board: Vec<(u64, Vec<u8>)>,
    /// Bytes on their way to the relay, let out at their virtual time, in order: as they
    /// leave the board's line, or in bursts ([`OfflineOptions::bursts`]).
    to_relay: BurstyLink,
    /// The pace and the scenario's timeline, when the session is given real time.
    timeline: Option<(Pace, Timeline)>,
    /// When the board is back after each unplugging (virtual ms), in order.
    outage_ends: Vec<u64>,
    /// Keep every board message the relay received in `fed`.
    keep_fed: bool,
    /// The board messages the relay received, with its time.
    fed: Vec<(u64, String)>,
    /// Decodes what reached the relay, for `fed` only.
    watch: Decoder<256>,
    /// The relay's side of the line, with the relay's time (only with `keep_fed`).
    wire: Vec<(u64, Wire)>,
    /// Every effect of the session, with the relay's time (only with `keep_fed`).
    effects: Vec<(u64, Effect)>,
    /// The relay's time at which the replay ended.
    end_ms: u64,
    /// When the relay is frozen, `[from, to)` virtual ms, in order ([`Stalls`]).
    stalls: Vec<(u64, u64)>,
    /// Most events kept of a board's event log (the relay box's limit).
    log_limit: Option<usize>,
}

impl Run {
    fn new(
        scenario: &Scenario,
        session_config: SessionConfig,
        timeline: Option<(Pace, Timeline)>,
        bursts: Option<Bursts>,
    ) -> Run {
        let setup = &scenario.setup;
        let codes = dgt_hil_sim::scenario::board_codes(&setup.position, setup.orientation);
        let mut fw = Firmware::new(BoardConfig::default(), codes, 0);
        if let Some(c) = &setup.clock {
            fw.attach_clock(Some(Dgt3000::new(c.time_control.clone(), c.first_side, 0)));
        }
        Run {
            fw,
            session: BoardSession::new(1, None, session_config),
            handshake: None,
            now: 0,
            events: Vec::new(),
            confirmed_sent: Vec::new(),
            line: Vec::new(),
            result: None,
            games_started: 0,
            stop_clock_at_end: false,
            to_board: Vec::new(),
            to_relay: BurstyLink::new(bursts, 0),
            outage_ends: outage_windows(scenario, timeline.as_ref().map(|t| t.0))
                .into_iter()
                .map(|w| w.1)
                .collect(),
            timeline,
            keep_fed: false,
            fed: Vec::new(),
            watch: Decoder::new(),
            wire: Vec::new(),
            effects: Vec::new(),
            end_ms: 0,
            stalls: Vec::new(),
            log_limit: None,
        }
    }

    /// The first virtual time from `t` on at which the relay runs (past any freeze).
    fn relay_runs_at(&self, t: u64) -> u64 {
        let i = self.stalls.partition_point(|&(_, to)| to <= t);
        match self.stalls.get(i) {
            Some(&(from, to)) if from <= t => to,
            _ => t,
        }
    }

    /// Virtual time `v` as the relay's clock reads it: `v`, or the real milliseconds at
    /// the pace.
    fn tracker_ms(&self, v: u64) -> u64 {
        self.timeline.as_ref().map_or(v, |(p, t)| t.real_ms(v).floor() as u64 + tick_offset(p))
    }

    /// The first virtual time at which the relay's clock reads `ms`.
    fn at_tracker_ms(&self, ms: u64) -> u64 {
        self.timeline.as_ref().map_or(ms, |(p, t)| t.virtual_at(ms.saturating_sub(tick_offset(p)) as f64))
    }

    /// The first virtual time at which the relay's clock reads `ms` more than at `v` (and
    /// at least one virtual millisecond after `v`).
    fn later(&self, v: u64, ms: u64) -> u64 {
        later_on(&self.timeline, v, ms)
    }

    /// The relay's time now.
    fn relay_now(&self) -> u64 {
        self.tracker_ms(self.now)
    }

    /// The relay opens the port: a new link starts its handshake.
    fn open_port(&mut self) {
        if self.keep_fed {
            self.wire.push((self.relay_now(), Wire::Opened));
        }
        let mut link = Link::open(self.relay_now(), SessionConfig::default().link);
        if let Some(events) = self.log_limit {
            link.limit_event_log(events);
        }
        let out = link.take_output();
        self.write(out);
        self.handshake = Some(link);
    }

    /// Bytes from the relay reach the board a moment later.
    fn write(&mut self, bytes: Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        let latency = self.timeline.as_ref().map_or(1, |(p, _)| p.dump_latency_ms.max(1));
        let due = self.later(self.now, latency);
        self.to_board.push((due, bytes));
    }

    /// Carries out the session's effects, noting what the relay would publish.
    fn effects(&mut self) {
        while let Some(e) = self.session.next_effect() {
            let at = self.relay_now();
            if self.keep_fed {
                self.effects.push((at, e.clone()));
            }
            match &e {
                Effect::Write(bytes) => {
                    let bytes = bytes.clone();
                    if self.keep_fed {
                        // What the relay asked of the board (a dump, a mode), for `--events`.
                        self.events.push((at, format!("Write {bytes:02x?}")));
                    }
                    self.write(bytes);
                    continue;
                }
                Effect::Move { state: MoveState::Confirmed, info } => {
                    let ply = usize::from(info.ply);
                    let uci = info.uci.to_string();
                    self.confirmed_sent.push((ply, uci.clone()));
                    self.line.truncate(ply.saturating_sub(1));
                    self.line.push((uci, info.clk));
                }
                Effect::TakenBack { to_ply, .. } => self.line.truncate(usize::from(*to_ply)),
                Effect::GameStarted { new_record: true, .. } => {
                    self.games_started += 1;
                    self.line.clear();
                    self.result = None;
                }
                Effect::GameEnded { result, .. } => self.result = Some(result.as_pgn().to_string()),
                Effect::ResultCleared => self.result = None,
                _ => {}
            }
            self.events.push((at, describe(&e)));
        }
    }

    /// Bytes the board sent leave it now; the event log takes its time on the line (it
    /// trickles in, 96 bytes every 100 ms of the relay's time, as at 9600 baud).
    fn drain_board(&mut self, online: bool) {
        let out = self.fw.take_output();
        if !online || out.is_empty() {
            return;
        }
        let mut at = self.to_relay.last_in().map_or(self.now, |t| t.max(self.now));
        if out.len() <= LONG_OUTPUT {
            self.send_to_relay(at, out);
            return;
        }
        for chunk in out.chunks(96) {
            at = self.later(at, 100);
            self.send_to_relay(at, chunk.to_vec());
        }
    }

    /// Bytes that leave the board's line at virtual time `at` into the link to the relay
    /// (a burst's hold is in the relay's milliseconds).
    fn send_to_relay(&mut self, at: u64, bytes: Vec<u8>) {
        let timeline = &self.timeline;
        self.to_relay.push_with(at, bytes, |t, ms| later_on(timeline, t, ms));
    }

    /// Bytes that reached the relay: to the port's handshake, or to the session.
    fn deliver(&mut self, bytes: &[u8]) {
        let now = self.relay_now();
        if self.keep_fed {
            self.wire.push((now, Wire::Bytes(bytes.to_vec())));
            let fed = &mut self.fed;
            self.watch.feed(bytes, |d| {
                if let Decoded::Message(
                    m @ (Message::BoardDump(_) | Message::FieldUpdate(_) | Message::Bwtime(_)),
                ) = d
                {
                    fed.push((now, format!("{m:?}")));
                }
            });
        }
        if let Some(mut link) = self.handshake.take() {
            link.on_bytes(now, bytes);
            self.write(link.take_output());
            if link.is_identified() {
                self.session.attach(now, link, "offline");
            } else {
                self.handshake = Some(link);
            }
        } else {
            self.session.on_bytes(now, bytes);
        }
        self.effects();
    }

    /// Plays the scenario: the board's firmware in virtual time against the relay's
    /// session, the port opened, lost and reopened as the relay does.
    fn play(&mut self, scenario: &Scenario) {
        let setup = &scenario.setup;
        let orientation = setup.orientation;
        let white_side = setup.clock.as_ref().map_or(ClockSide::Left, |c| c.white_side);
        // The relay opens the port as the board starts (its simulator waits for the host).
        self.now = 0;
        self.fw.rephase_scan(0);
        self.open_port();
        let mut offline_until: Option<u64> = None;
        // Time after the last action for the relay to settle what it saw (10 s of its time:
        // at a pace, real seconds).
        let end = self.later(scenario.duration_ms(), 10_000);
        self.end_ms = self.tracker_ms(end);
        let mut next = 0usize;
        let mut outage_ends = std::mem::take(&mut self.outage_ends).into_iter();
        loop {
            let action_at = scenario.actions.get(next).map(|a| a.at_ms);
            let fw_at = self.fw.next_deadline(self.now).map(|t| t.max(self.now));
            let board_at = self.to_board.iter().map(|(t, _)| *t).min().filter(|_| offline_until.is_none());
            // What reached the port, read when the relay runs; after a freeze, before its
            // deadlines (as the relay's biased select reads a ready port first).
            let arrived_at = self.to_relay.next_release();
            let relay_at = arrived_at.map(|t| self.relay_runs_at(t));
            let read_first = relay_at.is_some_and(|r| arrived_at.is_some_and(|a| a < r));
            // The relay's deadlines: its board session's always, the port's handshake while
            // one runs.
            let handshake_at = self.handshake.as_ref().and_then(Link::next_deadline);
            let session_at = Some(self.session.next_deadline())
                .into_iter()
                .chain(handshake_at)
                .min()
                .map(|ms| self.relay_runs_at(self.at_tracker_ms(ms).max(self.now)));
            let Some(t) =
                [action_at, fw_at, offline_until, board_at, relay_at, session_at].into_iter().flatten().min()
            else {
                break;
            };
            if t > end {
                break;
            }
            self.now = t;
            // One instant in the relay's order: its deadline first, then what arrived.
            if session_at == Some(t) && !(read_first && relay_at == Some(t)) {
                let now = self.relay_now();
                if let Some(mut link) = self.handshake.take() {
                    if link.next_deadline().is_some_and(|d| d <= now) {
                        link.poll(now);
                        self.write(link.take_output());
                    }
                    if link.is_lost() {
                        // No answer to the handshake: the relay reopens the port.
                        self.open_port();
                    } else {
                        self.handshake = Some(link);
                    }
                }
                if self.session.next_deadline() <= now {
                    self.session.poll(now);
                    self.effects();
                }
                self.drain_board(offline_until.is_none());
                if self.session_deadline_stuck(t) {
                    self.now += 1;
                }
                continue;
            }
            if offline_until.is_some_and(|u| u <= t) {
                offline_until = None;
                self.fw.power_cycle(t);
                // The relay reopens the port and runs the handshake again.
                self.open_port();
            } else if relay_at == Some(t) {
                if let Some((_, bytes)) = self.to_relay.pop() {
                    self.deliver(&bytes);
                }
            } else if board_at == Some(t) {
                let (due, rest): (Vec<_>, Vec<_>) =
                    std::mem::take(&mut self.to_board).into_iter().partition(|(d, _)| *d <= t);
                self.to_board = rest;
                for (_, bytes) in due {
                    self.fw.receive(&bytes, t);
                }
            } else if action_at == Some(t) {
                let action = &scenario.actions[next].action;
                next += 1;
                if let Some(down) = apply_action(&mut self.fw, action, t, orientation, white_side) {
                    offline_until = Some(outage_ends.next().unwrap_or(t + down).max(t + 1));
                    // The cable is pulled: what was on its way is lost, the relay sees the
                    // port go.
                    self.fw.take_output();
                    self.to_board.clear();
                    self.to_relay.clear();
                    self.handshake = None;
                    let now = self.relay_now();
                    if self.keep_fed {
                        self.wire.push((now, Wire::Lost));
                    }
                    self.session.on_port_lost(now, "the device went away (end of file on the port)");
                    self.effects();
                }
                if next == scenario.actions.len()
                    && self.stop_clock_at_end
                    && let Some(c) = self.fw.clock_mut()
                {
                    c.stop(t);
                }
            } else if fw_at == Some(t) {
                self.fw.tick(t);
            }
            self.drain_board(offline_until.is_none());
            if self.fw.next_deadline(t).is_some_and(|d| d <= t)
                && action_at.is_none_or(|a| a > t)
                && board_at.is_none_or(|d| d > t)
            {
                // Guard against a firmware deadline that does not move.
                self.now += 1;
            }
        }
    }

    /// True when the session's next deadline is still at or before `t` after a poll at
    /// `t` (a virtual millisecond shorter than a real one at a pace): step time on.
    fn session_deadline_stuck(&self, t: u64) -> bool {
        let handshake = self.handshake.as_ref().and_then(Link::next_deadline);
        let due = Some(self.session.next_deadline()).into_iter().chain(handshake).min();
        due.is_some_and(|ms| self.at_tracker_ms(ms) <= t)
    }
}

/// One line for an effect, for `--events`.
fn describe(e: &Effect) -> String {
    match e {
        Effect::Move { state, info } => {
            format!("{state:?} {} {} clk {:?} emt {:?}", info.ply, info.san, info.clk, info.emt)
        }
        other => format!("{other:?}"),
    }
}

/// Compares the run with the truth. `outages` are the spans (virtual ms) in which the board
/// was unplugged: a press made then is not seen by anyone, so its `%clk` may be absent
/// (counted in `clk_unseen`), but a value given must be right. The same holds for a ply
/// whose `%clk` the truth marks unobservable (two presses one clock poll hid, in a hand
/// script). A result the truth also accepts (`accept_results`) is not wrong.
fn compare(
    truth: &GroundTruth,
    run: &Run,
    expected_result: Option<String>,
    outages: &[(u64, u64)],
) -> OfflineOutcome {
    let reported = run.result.as_deref().unwrap_or("*");
    let expected_result =
        if truth.accept_results.iter().any(|r| r == reported) { run.result.clone() } else { expected_result };
    let mut o = OfflineOutcome {
        label: String::new(),
        profile: Profile::Clean,
        seed: truth.seed,
        plies: truth.moves.len(),
        confirmed: run.line.clone(),
        ghosts: Vec::new(),
        missing: 0,
        clk_checked: 0,
        clk_misses: 0,
        clk_absent: 0,
        clk_off: 0,
        clk_unseen: 0,
        truth_plies: Vec::new(),
        result: run.result.clone(),
        expected_result,
        why: Vec::new(),
        events: Vec::new(),
        actions: Vec::new(),
        fed: Vec::new(),
        wire: Vec::new(),
        effects: Vec::new(),
        end_ms: run.end_ms,
    };
    for (ply, uci) in &run.confirmed_sent {
        if truth.moves.get(ply.wrapping_sub(1)).is_none_or(|m| &m.uci != uci) {
            o.ghosts.push((*ply, uci.clone()));
            o.why.push(format!("ghost: ply {ply} {uci} confirmed"));
        }
    }
    if run.games_started != 1 {
        o.why.push(format!("{} games started", run.games_started));
    }
    let common = truth.moves.iter().zip(&run.line).take_while(|(a, b)| a.uci == b.0).count();
    o.missing = truth.moves.len() - common;
    if o.missing > 0 {
        let at = truth.moves.get(common).map_or(String::new(), |m| format!("{} {}", common + 1, m.uci));
        o.why.push(format!("{} of {} plies missing from ply {at}", o.missing, truth.moves.len()));
    }
    if run.line.len() > truth.moves.len() {
        o.why.push(format!("{} plies confirmed, the game has {}", run.line.len(), truth.moves.len()));
    }
    let has_clock = truth.clock.is_some();
    for (i, m) in truth.moves.iter().enumerate() {
        let display = if m.color == "white" { m.white_clock_s } else { m.black_clock_s };
        if !has_clock || m.press_at_ms.is_none() {
            continue;
        }
        let Some(d) = display else { continue };
        o.clk_checked += 1;
        let got = run.line.get(i).filter(|g| g.0 == m.uci);
        let unseen = press_unseen(m.press_at_ms, outages);
        match got.map(|g| g.1) {
            Some(Some(g)) if g.abs_diff(d) <= 1 => {}
            Some(None) if unseen || !m.clk_observable => o.clk_unseen += 1,
            Some(g) => {
                o.clk_misses += 1;
                if g.is_some() {
                    o.clk_off += 1;
                } else {
                    o.clk_absent += 1;
                }
                o.why.push(format!("ply {} {}: %clk {g:?}, the clock showed {d}", i + 1, m.san));
            }
            // Never confirmed: counted in `missing`.
            None => {}
        }
    }
    if o.result_wrong() {
        o.why.push(format!("result {:?}, expected {:?} (end: {})", o.result, o.expected_result, truth.end));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use dgt_hil_sim::scenario::{Setup, TimedAction};

    fn scenario(actions: Vec<(u64, Action)>) -> Scenario {
        Scenario {
            setup: Setup {
                orientation: dgt_protocol::Orientation::Normal,
                clock: None,
                position: shakmaty::Board::default(),
            },
            actions: actions.into_iter().map(|(at_ms, action)| TimedAction { at_ms, action }).collect(),
            truth: None,
        }
    }

    #[test]
    fn the_timeline_plays_hands_at_hand_speed_and_thinking_at_speed() {
        let lift = Action::Lift { square: shakmaty::Square::E2 };
        // One hand action at 10 s: [10 000, 11 000) at hand speed (its settle time).
        let s = scenario(vec![(10_000, lift), (40_000, Action::End)]);
        let t = Timeline::new(&s, 100.0, 2.0);
        assert_eq!(t.real_ms(0), 0.0);
        assert!((t.real_ms(10_000) - 100.0).abs() < 1e-9);
        assert!((t.real_ms(11_000) - 600.0).abs() < 1e-9);
        assert!((t.real_ms(21_000) - 700.0).abs() < 1e-9);
        for v in [0, 1, 5_000, 10_000, 10_333, 11_000, 25_000] {
            let r = t.real_ms(v);
            let back = t.virtual_at(r);
            assert!(back <= v && t.real_ms(back) >= r, "{v} -> {r} -> {back}");
        }
        // At speed 1 the timeline is the identity.
        let one = Timeline::new(&s, 1.0, 1.0);
        assert_eq!(one.virtual_at(one.real_ms(12_345)), 12_345);
    }

    #[test]
    fn an_outage_lasts_until_the_relay_has_the_board_back() {
        let s = scenario(vec![(5_000, Action::Disconnect { down_ms: 3_000 }), (60_000, Action::End)]);
        assert_eq!(outage_windows(&s, None), vec![(5_000, 8_000)]);
        // Thinking at x150: 3 s of virtual time is 20 ms, less than the relay's 100 ms.
        let pace = Pace { speed: 150.0, hand_speed: 3.0, ..Pace::RELAY_SUITE };
        let w = outage_windows(&s, Some(pace));
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].0, 5_000);
        assert!(w[0].1 >= 5_000 + 150 * 100, "{w:?}");
        assert!(press_unseen(Some(12_000), &w));
        assert!(!press_unseen(Some(4_999), &w));
        assert!(!press_unseen(None, &w));
    }

    #[test]
    fn stalls_parse_and_their_windows_are_apart_and_within_bounds() {
        assert_eq!(Stalls::parse("300"), Some(Stalls { max_ms: 300, every_ms: 1000, seed: 1 }));
        assert_eq!(Stalls::parse("200,500,7"), Some(Stalls { max_ms: 200, every_ms: 500, seed: 7 }));
        assert_eq!(Stalls::parse("200,0"), None);
        assert_eq!(Stalls::parse("x"), None);
        let w = Stalls { max_ms: 300, every_ms: 1000, seed: 3 }.windows(60_000);
        assert!(w.len() > 20, "{} windows in a minute", w.len());
        assert!(w.iter().all(|&(a, b)| b > a && b - a <= 300));
        assert!(w.windows(2).all(|p| p[0].1 < p[1].0));
    }

    #[test]
    fn a_pace_parses() {
        assert_eq!(Pace::parse("relay"), Some(Pace::RELAY_SUITE));
        let p = Pace::parse("150,3,200,5,31");
        assert_eq!(
            p,
            Some(Pace {
                speed: 150.0,
                hand_speed: 3.0,
                reconnect_ms: 200,
                dump_latency_ms: 5,
                tick_phase_ms: 31
            })
        );
        assert_eq!(Pace::parse("150"), None);
        assert_eq!(Pace::parse("0,3"), None);
        assert_eq!(Pace::parse("150,3,1,2,3,4"), None);
    }
}
