//! The offline harness: a corpus game planned by the simulator under a noise profile,
//! played through the simulated firmware without a pty, and every decoded message fed
//! straight into a [`dgt_core::Tracker`] in virtual time. What the tracker confirmed is
//! compared with the ground truth the way [`crate::acceptance::check`] compares what the
//! relay published: moves exact (UCI), result, `%clk` within 1 s of the simulated clock's
//! display after the press, no ghost move (a confirmed move that is not the truth's move at
//! that ply, even if it was later taken back), nothing missing.
//!
//! Deterministic and fast (no threads, no real time): a whole game replays in
//! milliseconds. The host's behaviour is mirrored: the board is put in
//! [`Command::SendUpdateNice`] and asked for a dump at the start and after every
//! reconnect, the tracker's [`Event::RequestBoardDump`] is answered with a dump at the
//! next instant, and the tracker is ticked every [`TICK_MS`] of virtual time.
//!
//! ```no_run
//! use dgt_e2e_tests::offline::{replay_through_tracker, OfflineOptions};
//! use dgt_hil_sim::hands::Profile;
//! let games = dgt_e2e_tests::acceptance::worldcup().unwrap();
//! let o = replay_through_tracker(&games[4], Profile::Slide, 5, &OfflineOptions::default());
//! assert!(o.passed(), "{}", o.why.join("\n"));
//! ```

use dgt_core::{Config, Event, Tracker};
use dgt_hil_sim::hands::Profile;
use dgt_hil_sim::offline::apply_action;
use dgt_hil_sim::pgn::SourceGame;
use dgt_hil_sim::{BoardConfig, Dgt3000, Firmware, GroundTruth, Scenario};
use dgt_protocol::{ClockSide, Command, Decoded, Decoder};

use crate::acceptance::{EndPath, Job};

/// The tracker's tick period in virtual milliseconds (the host ticks every 50 ms).
pub const TICK_MS: u64 = 50;

/// Ply capacity of the tracker used (as in the host).
pub const PLIES: usize = 600;

/// How to replay.
#[derive(Clone, Copy, Debug)]
pub struct OfflineOptions {
    /// How the end of the game is shown (as in the end-to-end suite).
    pub end: EndPath,
    /// The tracker's settings.
    pub config: Config,
    /// Keep every event with its time in [`OfflineOutcome::events`].
    pub keep_events: bool,
}

impl Default for OfflineOptions {
    fn default() -> Self {
        OfflineOptions { end: EndPath::Board, config: Config::default(), keep_events: false }
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
    /// `%clk` missing or more than 1 s off the clock's display after the press.
    pub clk_misses: usize,
    /// `%clk` left out, rightly, for a press made while the board was unplugged (nobody
    /// saw it, and the clock had moved on when the board came back).
    pub clk_unseen: usize,
    /// The result the tracker reported.
    pub result: Option<String>,
    /// The result it should have reported.
    pub expected_result: Option<String>,
    /// Every difference, readable.
    pub why: Vec<String>,
    /// Every event with its virtual time (only with [`OfflineOptions::keep_events`]).
    pub events: Vec<(u64, Event)>,
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
        self.ghosts.is_empty() && self.missing == 0 && self.clk_misses == 0 && !self.result_wrong()
    }
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
    let mut run = Run::new(&job.scenario, opts.config);
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
            let mut events = Vec::new();
            run.tracker.declare_result(result, &mut |e| events.push(e));
            let at = run.now;
            for e in events {
                run.record(at, e);
            }
        }
    }
    let outages: Vec<(u64, u64)> = job
        .scenario
        .actions
        .iter()
        .filter_map(|a| match a.action {
            dgt_hil_sim::scenario::Action::Disconnect { down_ms } => Some((a.at_ms, a.at_ms + down_ms)),
            _ => None,
        })
        .collect();
    let mut o = compare(truth, &run, job.expected_result(), &outages);
    o.label = job.label.clone();
    o.profile = job.profile;
    o.seed = truth.seed;
    if opts.keep_events {
        o.events = run.events;
        o.truth_plies = truth
            .moves
            .iter()
            .map(|m| {
                let clk = if m.color == "white" { m.white_clock_s } else { m.black_clock_s };
                format!("ply {} {} press {:?} clock {:?} {:?}", m.ply, m.uci, m.press_at_ms, clk, m.events)
            })
            .collect();
    }
    o
}

/// The replay's state: firmware, decoder, tracker and what it said.
struct Run {
    fw: Firmware,
    decoder: Decoder<256>,
    tracker: Box<Tracker<PLIES>>,
    now: u64,
    events: Vec<(u64, Event)>,
    /// Every confirmed (ply, UCI) ever emitted.
    confirmed_sent: Vec<(usize, String)>,
    /// The confirmed line: (UCI, `%clk`).
    line: Vec<(String, Option<u32>)>,
    result: Option<String>,
    games_started: usize,
    dump_due: Option<u64>,
    stop_clock_at_end: bool,
}

impl Run {
    fn new(scenario: &Scenario, config: Config) -> Run {
        let setup = &scenario.setup;
        let codes = dgt_hil_sim::scenario::board_codes(&setup.position, setup.orientation);
        let mut fw = Firmware::new(BoardConfig::default(), codes, 0);
        if let Some(c) = &setup.clock {
            fw.attach_clock(Some(Dgt3000::new(c.time_control.clone(), c.first_side, 0)));
        }
        Run {
            fw,
            decoder: Decoder::new(),
            tracker: Box::new(Tracker::new(config)),
            now: 0,
            events: Vec::new(),
            confirmed_sent: Vec::new(),
            line: Vec::new(),
            result: None,
            games_started: 0,
            dump_due: None,
            stop_clock_at_end: false,
        }
    }

    fn send(&mut self, commands: &[Command], at: u64) {
        let mut buf = [0u8; 4];
        for c in commands {
            if let Ok(n) = c.encode(&mut buf) {
                self.fw.receive(&buf[..n], at);
            }
        }
    }

    fn record(&mut self, at: u64, e: Event) {
        match &e {
            Event::MoveConfirmed(m) => {
                let ply = usize::from(m.ply);
                let uci = m.uci.to_string();
                self.confirmed_sent.push((ply, uci.clone()));
                self.line.truncate(ply.saturating_sub(1));
                self.line.push((uci, m.clk));
            }
            Event::Takeback { to_ply } => self.line.truncate(usize::from(*to_ply)),
            Event::GameStarted { .. } => {
                self.games_started += 1;
                self.line.clear();
                self.result = None;
            }
            Event::GameEnded { result, .. } => self.result = Some(result.as_pgn().to_string()),
            Event::RequestBoardDump => {
                self.dump_due.get_or_insert(at + 1);
            }
            _ => {}
        }
        self.events.push((at, e));
    }

    /// Decodes what the firmware sent and feeds it to the tracker (when online).
    fn drain(&mut self, online: bool) {
        let out = self.fw.take_output();
        if !online || out.is_empty() {
            return;
        }
        let mut events = Vec::new();
        let tracker = &mut self.tracker;
        let now = self.now;
        self.decoder.feed(&out, |d| {
            if let Decoded::Message(m) = d {
                tracker.feed(&m, now, &mut |e| events.push(e));
            }
        });
        for e in events {
            self.record(now, e);
        }
    }

    fn tick(&mut self) {
        let mut events = Vec::new();
        self.tracker.tick(self.now, &mut |e| events.push(e));
        for e in events {
            self.record(self.now, e);
        }
    }

    /// Plays the scenario, mirroring `dgt_hil_sim::offline::replay_offline`'s host.
    fn play(&mut self, scenario: &Scenario) {
        let setup = &scenario.setup;
        let orientation = setup.orientation;
        let white_side = setup.clock.as_ref().map_or(ClockSide::Left, |c| c.white_side);
        let hello = [Command::SendUpdateNice, Command::SendBoard];
        self.send(&hello, 0);
        self.fw.rephase_scan(0);
        self.drain(true);
        let mut offline_until: Option<u64> = None;
        // Time after the last action for the tracker to settle what it saw.
        let end = scenario.duration_ms() + 10_000;
        let mut next = 0usize;
        let mut next_tick = TICK_MS;
        loop {
            let action_at = scenario.actions.get(next).map(|a| a.at_ms);
            let fw_at = self.fw.next_deadline(self.now).map(|t| t.max(self.now));
            let dump_at = self.dump_due.filter(|_| offline_until.is_none());
            let Some(t) =
                [action_at, fw_at, offline_until, dump_at, Some(next_tick)].into_iter().flatten().min()
            else {
                break;
            };
            if t > end {
                break;
            }
            self.now = t;
            if offline_until.is_some_and(|u| u <= t) {
                offline_until = None;
                self.fw.power_cycle(t);
                // The host reopens the port: mode and a dump, as at the start.
                self.send(&hello, t);
            } else if action_at == Some(t) {
                let action = &scenario.actions[next].action;
                next += 1;
                if let Some(down) = apply_action(&mut self.fw, action, t, orientation, white_side) {
                    offline_until = Some(t + down);
                }
                if next == scenario.actions.len()
                    && self.stop_clock_at_end
                    && let Some(c) = self.fw.clock_mut()
                {
                    c.stop(t);
                }
            } else if dump_at == Some(t) {
                self.dump_due = None;
                self.send(&[Command::SendBoard], t);
            } else if fw_at == Some(t) {
                self.fw.tick(t);
            } else {
                next_tick = t + TICK_MS;
                self.drain(offline_until.is_none());
                self.tick();
                continue;
            }
            self.drain(offline_until.is_none());
            if self.fw.next_deadline(t).is_some_and(|d| d <= t)
                && action_at.is_none_or(|a| a > t)
                && dump_at.is_none_or(|d| d > t)
            {
                // Guard against a firmware deadline that does not move.
                self.now += 1;
            }
        }
    }
}

/// Compares the run with the truth. `outages` are the spans (virtual ms) in which the board
/// was unplugged: a press made then is not seen by anyone, so its `%clk` may be absent
/// (counted in `clk_unseen`), but a value given must be right.
fn compare(
    truth: &GroundTruth,
    run: &Run,
    expected_result: Option<String>,
    outages: &[(u64, u64)],
) -> OfflineOutcome {
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
        clk_unseen: 0,
        truth_plies: Vec::new(),
        result: run.result.clone(),
        expected_result,
        why: Vec::new(),
        events: Vec::new(),
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
        let unseen = m.press_at_ms.is_some_and(|p| outages.iter().any(|&(a, b)| (a..=b).contains(&p)));
        match got.map(|g| g.1) {
            Some(Some(g)) if g.abs_diff(d) <= 1 => {}
            Some(None) if unseen => o.clk_unseen += 1,
            Some(g) => {
                o.clk_misses += 1;
                o.why.push(format!("ply {} {}: %clk {g:?}, the clock showed {d}", i + 1, m.san));
            }
            None => o.clk_misses += 1,
        }
    }
    if o.result_wrong() {
        o.why.push(format!("result {:?}, expected {:?} (end: {})", o.result, o.expected_result, truth.end));
    }
    o
}
