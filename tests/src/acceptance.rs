//! The acceptance runner: corpus games planned by the simulator under noise profiles,
//! played on simulated boards over real ptys into the real relay binary, and what the
//! relay published (websocket feed and HTTP PGN) compared with the ground truth.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use dgt_hil_sim::hands::{GameEnd, PlanOptions, Profile, plan_game};
use dgt_hil_sim::pgn::SourceGame;
use dgt_hil_sim::transport::Bursts;
use dgt_hil_sim::{
    BoardConfig, GroundTruth, Scenario, SimBoard, SimChain, SimConfig, StartPolicy, spawn_fleet,
};

use crate::feed::{FeedGame, Recorder};
use crate::offline::{Pace, outage_windows, press_unseen};
use crate::relay::{ProcStat, Relay, proc_stat};

/// The corpus files copied into the repository, `tests/data/` (provenance and licences in
/// its `PROVENANCE.md`): the World Cup and LiveChess PGN, the three board captures and a TWIC
/// excerpt. A fresh clone has them.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data")
}

/// The project's shared corpus folder, `../shared/corpus` beside the repository. A fresh
/// clone does not have it (CI does); it holds what is too large to copy, such as the hand
/// scripts. Tests that need it are built with `#[cfg_attr(not(shared_corpus), ignore = ...)]`:
/// `tests/build.rs` sets `cfg(shared_corpus)` when this folder exists.
pub fn corpus_dir() -> PathBuf {
    crate::relay::workspace_root().join("../shared/corpus")
}

/// The World Cup 2025 games (273).
pub fn worldcup() -> anyhow::Result<Vec<SourceGame>> {
    Ok(dgt_hil_sim::pgn::read_games(&data_dir().join("worldcup2025-dgt-livechess.pgn"))?)
}

/// The LiveChess 2.2.5 sample round (12 games).
pub fn livechess() -> anyhow::Result<Vec<SourceGame>> {
    Ok(dgt_hil_sim::pgn::read_games(&data_dir().join("livechess-2.2.5-sample-round.pgn"))?)
}

/// How a game's end is shown to the relay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndPath {
    /// On the board: checkmate and stalemate show themselves, any other result is shown
    /// with the kings in the centre (the DGT convention broadcasts use).
    Board,
    /// The loser stops the clock (a board cannot see a resignation) and the operator sets
    /// the result through the admin API.
    Operator,
}

/// One game to replay.
#[derive(Clone, Debug)]
pub struct Job {
    /// Where the game comes from, e.g. `worldcup#17`.
    pub label: String,
    /// The scenario (with its ground truth).
    pub scenario: Scenario,
    /// The profile.
    pub profile: Profile,
    /// How the end is shown.
    pub end: EndPath,
}

impl Job {
    /// Plans `game` under `profile` with `seed`.
    pub fn plan(label: String, game: &SourceGame, profile: Profile, seed: u64, end: EndPath) -> Job {
        let opts = PlanOptions {
            profile,
            seed,
            end: match end {
                EndPath::Board => GameEnd::KingsInCentre,
                EndPath::Operator => GameEnd::Resignation,
            },
            start_delay_ms: 1_000,
            ..PlanOptions::default()
        };
        Job { label, scenario: plan_game(game, &opts), profile, end }
    }

    /// The ground truth.
    pub fn truth(&self) -> &GroundTruth {
        // plan_game always fills it in.
        self.scenario.truth.as_ref().unwrap_or_else(|| unreachable!("plan_game sets the truth"))
    }

    /// The result the relay must end up with (`None` for an unfinished game): the truth's
    /// own when it states one (a hand script), else derived from how the game ends.
    pub fn expected_result(&self) -> Option<String> {
        let t = self.truth();
        if let Some(r) = &t.expected_result {
            return (r != "*").then(|| r.clone());
        }
        match t.end.as_str() {
            "none" => None,
            "stalemate" => Some("1/2-1/2".into()),
            // The board shows the mate: the side to move in the final position lost
            // (the source's Result tag can say otherwise; the position decides).
            "checkmate" => {
                Some(if t.final_fen.split(' ').nth(1) == Some("w") { "0-1" } else { "1-0" }.into())
            }
            _ if t.result == "*" => None,
            _ => Some(t.result.clone()),
        }
    }
}

/// How to run a batch.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Simulated boards (and relay board sessions) at once.
    pub boards: usize,
    /// Simulator speed factor (thinking time between moves).
    pub speed: f64,
    /// Speed factor of the hand sequences (a move's lift to its press, the end gesture),
    /// at most `speed`: the relay's tracker works in real time with thresholds that model
    /// human hands, so the hands must not be fast-forwarded with the thinking time.
    pub hand_speed: f64,
    /// Working folder (links, relay data, logs).
    pub dir: PathBuf,
    /// The relay binary.
    pub relay_bin: PathBuf,
    /// Print progress every this often.
    pub progress: Option<Duration>,
    /// First serial number of the simulated boards.
    pub first_serial: u32,
    /// Deliver each board's output late and in bursts, as a Bluetooth serial link does
    /// ([`SimConfig::bursts`], real milliseconds).
    pub bursts: Option<Bursts>,
}

/// What one replayed game produced.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Index into the batch's jobs.
    pub job: usize,
    /// The board's serial number.
    pub serial: String,
    /// The relay's board number.
    pub board: Option<u64>,
    /// The round the game should be in (games on one board go to rounds 1, 2, ...).
    pub round: u64,
    /// What the websocket feed showed for it at the end.
    pub feed: FeedGame,
    /// `/pgn/{round}/{board}`.
    pub pgn: Option<String>,
    /// False when the simulator did not finish the scenario in time.
    pub sim_completed: bool,
    /// Anything odd seen while running it.
    pub notes: Vec<String>,
    /// The pace it was played at (for the real length of an unplugged cable, see
    /// [`outage_windows`]).
    pub pace: Option<Pace>,
    /// Virtual time of the scenario's start on its board (the simulator's clock).
    pub started_ms: Option<u64>,
    /// Spans of the scenario (ms from its start) when its board was off the chain by an
    /// [`Unplug`], until the relay could have it back: presses then are unseen, as in
    /// [`outage_windows`].
    pub off_chain: Vec<(u64, u64)>,
    /// Presses (ms from the scenario's start) the board's event log never got: on a chain,
    /// where the relay reads presses from the log, those plies' `%clk` are rightly left out.
    pub unlogged_presses: Vec<u64>,
}

/// A batch's results.
#[derive(Debug)]
pub struct RunResult {
    /// The jobs.
    pub jobs: Vec<Job>,
    /// One outcome per job, in job order.
    pub outcomes: Vec<Outcome>,
    /// `/pgn/{round}` for every round used.
    pub round_pgns: BTreeMap<u64, String>,
    /// Problems the feed client saw (sequence gaps, errors).
    pub feed_problems: Vec<String>,
    /// The relay process at the end.
    pub relay_stat: ProcStat,
    /// Real time the batch took.
    pub wall: Duration,
    /// True when the relay exited cleanly on SIGTERM.
    pub clean_exit: bool,
    /// The relay log's tail when something went wrong.
    pub log_tail: String,
    /// Anything else worth printing (the chain's line counters).
    pub notes: Vec<String>,
    /// Each board's status changes on the feed, by serial number.
    pub statuses: BTreeMap<String, Vec<String>>,
}

/// A board taken off a chain and put back while the batch runs, as a person pulling the
/// chain's cable between two boards would (unlike the `disconnect` profile, for as long as
/// the relay needs to see it gone, whatever the game's speed).
#[derive(Clone, Copy, Debug)]
pub struct Unplug {
    /// Which board of the chain (0 is the first).
    pub board: usize,
    /// Real time from the start of the batch.
    pub after: Duration,
    /// Real time off the chain.
    pub down: Duration,
}

/// How long after a board is put back on a chain the relay may take to have it again (its
/// ping of a gone board every 2 s, then the board's handshake on its virtual port): presses
/// until then are counted as made while it was away.
const BACK_ON_CHAIN: Duration = Duration::from_secs(3);

/// A polling cycle on a chain of 12 (under a second): a press made this long before the
/// board left may not have been read before it left, and is counted as made while away.
const LAST_CYCLE: Duration = Duration::from_secs(1);

/// Polls `f` every 20 ms until it holds or `timeout` has passed; whether it held.
pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every board of `serials` is on the relay's board list, active.
pub fn all_active(relay: &Relay, serials: &[String]) -> bool {
    relay.json("/api/boards").is_ok_and(|v| {
        serials.iter().all(|s| {
            v.as_array()
                .is_some_and(|a| a.iter().any(|b| b["serial"] == s.as_str() && b["status"] == "active"))
        })
    })
}

impl Outcome {
    /// A round-1 game of one board alone on its line, as a relay's feed and PGN showed it
    /// (nothing off a chain, no start time known).
    pub fn read_back(
        job: usize,
        serial: String,
        board: Option<u64>,
        (feed, pgn): (FeedGame, Option<String>),
        sim_completed: bool,
        pace: Pace,
    ) -> Outcome {
        Outcome {
            job,
            serial,
            board,
            round: 1,
            feed,
            pgn,
            sim_completed,
            notes: Vec::new(),
            pace: Some(pace),
            started_ms: None,
            off_chain: Vec::new(),
            unlogged_presses: Vec::new(),
        }
    }
}

/// Checks `outcome` against `job`; a game not exact adds a line with its first reasons to
/// `failures`.
pub fn check_noting(job: &Job, outcome: &Outcome, failures: &mut Vec<String>) -> GameCheck {
    let c = check(job, outcome);
    if !c.exact() {
        let mut why = c.why.clone();
        why.truncate(8);
        failures.push(format!(
            "{} (serial {}, board {:?}): {}",
            job.label,
            outcome.serial,
            outcome.board,
            why.join("; ")
        ));
    }
    c
}

/// The simulated boards of a batch, as [`run`] makes them.
fn template(opts: &RunOptions) -> SimConfig {
    SimConfig {
        board: BoardConfig::with_serial(opts.first_serial),
        speed: opts.speed,
        hand_speed: opts.hand_speed,
        bursts: opts.bursts,
        ..SimConfig::default()
    }
}

/// Runs `jobs` on `opts.boards` simulated boards, each on its own pty, against one relay
/// process.
pub fn run(jobs: Vec<Job>, opts: &RunOptions) -> anyhow::Result<RunResult> {
    let started = Instant::now();
    let _ = std::fs::remove_dir_all(&opts.dir);
    std::fs::create_dir_all(&opts.dir)?;
    let n = opts.boards.clamp(1, jobs.len().max(1));
    let links = opts.dir.join("links");
    let boards = spawn_fleet(n, &template(opts), Some(&links)).context("spawning simulated boards")?;
    let mut ports = Vec::new();
    for b in &boards {
        ports.push("--port".into());
        ports.push(b.path().display().to_string());
    }
    let mut result = run_on(jobs, opts, &boards, ports, started)?;
    // A board alone on its port shows every press on the line: its event log's gaps do not
    // excuse a missing `%clk`.
    for o in &mut result.outcomes {
        o.unlogged_presses.clear();
    }
    Ok(result)
}

/// Runs `jobs` on `opts.boards` simulated boards daisy-chained on one pty in DGT's bus
/// mode, against one relay process given the chain with `--port` (the relay detects the
/// chain) or, with `force_bus`, `--bus`.
/// With `unplug`, one board leaves the chain for a while and comes back.
pub fn run_chain(
    jobs: Vec<Job>,
    opts: &RunOptions,
    force_bus: bool,
    unplug: Option<Unplug>,
    wiring: dgt_hil_sim::chain::Wiring,
) -> anyhow::Result<RunResult> {
    let started = Instant::now();
    let _ = std::fs::remove_dir_all(&opts.dir);
    std::fs::create_dir_all(&opts.dir)?;
    let n = opts.boards.clamp(1, jobs.len().max(1));
    let chain = SimChain::spawn_wired(n, &template(opts), Some(&opts.dir.join("chain")), wiring)
        .context("spawning the chain of simulated boards")?;
    let flag = if force_bus { "--bus" } else { "--port" };
    let ports = vec![flag.to_owned(), chain.path().display().to_string()];
    let done = std::sync::atomic::AtomicBool::new(false);
    // The board's virtual time when it left the chain and when the relay could have it back.
    let off: Mutex<Option<(u64, u64)>> = Mutex::new(None);
    let mut result = std::thread::scope(|s| {
        if let Some(u) = unplug
            && let Some(board) = chain.boards().get(u.board)
        {
            let (done, off) = (&done, &off);
            s.spawn(move || {
                // Sleeps in short steps so a batch that ends early is not kept waiting.
                let nap = |d: Duration| {
                    let until = Instant::now() + d;
                    while Instant::now() < until && !done.load(std::sync::atomic::Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                };
                nap(u.after.saturating_sub(LAST_CYCLE));
                let Ok(from) = board.status().map(|st| st.virtual_ms) else { return };
                nap(LAST_CYCLE);
                if board.unplug().is_ok() {
                    nap(u.down);
                    let _ = board.plug();
                    nap(BACK_ON_CHAIN);
                    if let (Ok(st), Ok(mut o)) = (board.status(), off.lock()) {
                        *o = Some((from, st.virtual_ms));
                    }
                }
            });
        }
        let r = run_on(jobs, opts, chain.boards(), ports, started);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        r
    })?;
    let window = off.lock().ok().and_then(|o| *o);
    if let (Some(u), Some((from, to))) = (unplug, window) {
        let serial = (opts.first_serial + u.board as u32).to_string();
        for o in result.outcomes.iter_mut().filter(|o| o.serial == serial) {
            if let Some(start) = o.started_ms {
                o.off_chain.push((from.saturating_sub(start), to.saturating_sub(start)));
            }
        }
        result.notes.push(format!("board {serial} off the chain for {} virtual ms", to.saturating_sub(from)));
    }
    let line = chain.stats();
    result.notes.push(format!(
        "line: {} transmissions, {} collided, {} bytes to the relay, {} from it",
        line.transmissions, line.collisions, line.bytes, line.host_bytes
    ));
    Ok(result)
}

fn run_on(
    jobs: Vec<Job>,
    opts: &RunOptions,
    boards: &[SimBoard],
    ports: Vec<String>,
    started: Instant,
) -> anyhow::Result<RunResult> {
    let n = boards.len();
    let mut args: Vec<String> =
        vec!["run".into(), "--data".into(), opts.dir.join("data").display().to_string()];
    args.extend(ports);
    let mut relay = Relay::start(&opts.relay_bin, &opts.dir, &args)?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let recorder = Recorder::start_logged(rt.handle(), relay.addr, Some(&opts.dir.join("feed-frames.log")))?;
    let serials: Vec<String> = (0..n).map(|i| (opts.first_serial + i as u32).to_string()).collect();
    let all_active = wait_until(Duration::from_secs(60), || all_active(&relay, &serials));
    if !all_active {
        bail!("not every board became active in 60 s: {:?}\n{}", relay.get("/api/boards"), relay.log_tail());
    }

    // Longest games first, so that the boards finish together.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(jobs[i].scenario.real_duration(opts.speed, opts.hand_speed)));
    let queue = Arc::new(Mutex::new(order.into_iter().collect::<VecDeque<usize>>()));
    let jobs = Arc::new(jobs);
    let outcomes: Arc<Mutex<Vec<Outcome>>> = Arc::new(Mutex::new(Vec::new()));
    let relay_addr = relay.addr;
    std::thread::scope(|scope| {
        for (board, serial) in boards.iter().zip(&serials) {
            let (queue, jobs, outcomes, recorder) =
                (Arc::clone(&queue), Arc::clone(&jobs), Arc::clone(&outcomes), recorder.clone());
            scope.spawn(move || {
                let mut round = 0u64;
                while let Some(j) = queue.lock().ok().and_then(|mut q| q.pop_front()) {
                    round += 1;
                    let job = &jobs[j];
                    let mut notes = Vec::new();
                    let timeout =
                        job.scenario.real_duration(opts.speed, opts.hand_speed) + Duration::from_secs(60);
                    let mut started_ms = None;
                    let mut unlogged_presses = Vec::new();
                    let completed =
                        match board.start_scenario(job.scenario.clone(), StartPolicy::WhenHostListens) {
                            Ok(h) => match h.wait(timeout) {
                                Ok(r) => {
                                    started_ms = Some(r.started_ms);
                                    unlogged_presses = r.unlogged_presses;
                                    r.completed
                                }
                                Err(e) => {
                                    notes.push(format!("simulator: {e}"));
                                    false
                                }
                            },
                            Err(e) => {
                                notes.push(format!("simulator: {e}"));
                                false
                            }
                        };
                    let want = job.truth().moves.len();
                    let expected = job.expected_result();
                    let bn = || recorder.with(|s| s.board_of_serial(serial));
                    let moves_in = || {
                        recorder.with(|s| {
                            s.board_of_serial(serial)
                                .and_then(|b| s.games.get(&(b, round)))
                                .map_or(0, |g| g.moves.len())
                        })
                    };
                    if !wait_until(Duration::from_secs(20), || moves_in() >= want) {
                        notes.push(format!(
                            "only {} of {want} moves confirmed 20 s after the scenario",
                            moves_in()
                        ));
                    }
                    if job.end == EndPath::Operator
                        && let (Some(b), Some(r)) = (bn(), expected.as_ref())
                    {
                        let body = format!(r#"{{"result":"{r}"}}"#);
                        let auth = format!("Bearer {}", crate::relay::TOKEN);
                        match crate::relay::http(
                            relay_addr,
                            "POST",
                            &format!("/api/admin/boards/{b}/result"),
                            &[("Authorization", auth.as_str())],
                            &body,
                        ) {
                            Ok((200, _)) => {}
                            Ok((s, t)) => notes.push(format!("admin result: {s} {t}")),
                            Err(e) => notes.push(format!("admin result: {e}")),
                        }
                    }
                    let result_in = || {
                        recorder.with(|s| {
                            s.board_of_serial(serial)
                                .and_then(|b| s.games.get(&(b, round)))
                                .and_then(|g| g.result.clone())
                        })
                    };
                    if expected.is_some() && !wait_until(Duration::from_secs(20), || result_in() == expected)
                    {
                        notes.push(format!("result {:?} 20 s after the scenario", result_in()));
                    }
                    let feed = recorder.with(|s| {
                        s.board_of_serial(serial)
                            .and_then(|b| s.games.get(&(b, round)))
                            .cloned()
                            .unwrap_or_default()
                    });
                    if let Ok(mut o) = outcomes.lock() {
                        o.push(Outcome {
                            job: j,
                            serial: serial.clone(),
                            board: bn(),
                            round,
                            feed,
                            pgn: None,
                            sim_completed: completed,
                            notes,
                            pace: Some(Pace {
                                speed: opts.speed,
                                hand_speed: opts.hand_speed,
                                ..Pace::RELAY_SUITE
                            }),
                            started_ms,
                            off_chain: Vec::new(),
                            unlogged_presses,
                        });
                    }
                }
            });
        }
        if let Some(every) = opts.progress {
            let total = jobs.len();
            let mut last = Instant::now();
            loop {
                let done = outcomes.lock().map(|o| o.len()).unwrap_or(total);
                if done >= total {
                    break;
                }
                if last.elapsed() >= every {
                    last = Instant::now();
                    let st = proc_stat(relay.pid());
                    eprintln!(
                        "  {done}/{total} games, {:.0} s, relay CPU {:.1} s, RSS {} MiB",
                        started.elapsed().as_secs_f64(),
                        st.cpu_s,
                        st.rss_kib / 1024
                    );
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    });
    let mut outcomes =
        Arc::try_unwrap(outcomes).map_err(|_| anyhow::anyhow!("workers still hold results"))?;
    let mut outcomes = outcomes.get_mut().map(std::mem::take).unwrap_or_default();
    outcomes.sort_by_key(|o| o.job);
    let mut rounds = BTreeMap::new();
    for o in &mut outcomes {
        if let Some(b) = o.board {
            match relay.get(&format!("/pgn/{}/{b}", o.round)) {
                Ok((200, body)) => o.pgn = Some(body),
                Ok((s, body)) => o.notes.push(format!("GET /pgn/{}/{b}: {s} {body}", o.round)),
                Err(e) => o.notes.push(format!("GET /pgn/{}/{b}: {e}", o.round)),
            }
        }
        rounds.insert(o.round, String::new());
    }
    for (r, text) in &mut rounds {
        if let Ok((200, body)) = relay.get(&format!("/pgn/{r}")) {
            *text = body;
        }
    }
    let relay_stat = proc_stat(relay.pid());
    let feed_problems = recorder.with(|s| s.problems.clone());
    let statuses = recorder.with(|s| {
        s.statuses
            .iter()
            .map(|(b, v)| (s.serial_of.get(b).cloned().unwrap_or_else(|| format!("board {b}")), v.clone()))
            .collect()
    });
    let log_tail = relay.log_tail();
    let clean_exit = relay.terminate().is_some_and(|s| s.success());
    drop(rt);
    let jobs = Arc::try_unwrap(jobs).map_err(|_| anyhow::anyhow!("jobs still shared"))?;
    Ok(RunResult {
        jobs,
        outcomes,
        round_pgns: rounds,
        feed_problems,
        relay_stat,
        wall: started.elapsed(),
        clean_exit,
        log_tail,
        notes: Vec::new(),
        statuses,
    })
}

/// The comparison of one game with its ground truth.
#[derive(Clone, Debug, Default)]
pub struct GameCheck {
    /// Plies in the truth.
    pub plies: usize,
    /// Plies with a clock press whose `%clk` was checked.
    pub clk_checked: usize,
    /// `%clk` missing or more than 1 s off the simulated clock's display after the press,
    /// on plies confirmed right (a ply never confirmed counts in `missing` only).
    pub clk_misses: usize,
    /// `%clk` and `%emt` left out, rightly, for a press the relay could not see: made while
    /// the board was unplugged, before the relay had it back (see [`outage_windows`]), or
    /// hidden by a second press in the same clock poll (a hand script's unobservable ply).
    pub clk_unseen: usize,
    /// `%clk` within 1 s of the source game's `%clk` (information: the simulator cannot
    /// always reproduce a source reading).
    pub clk_match_source: usize,
    /// Source plies with a `%clk`.
    pub clk_source: usize,
    /// Confirmed moves without `%emt`, except where it cannot be known: an unseen press's
    /// ply without `%clk`, and the mover's next ply (its `%emt` counts from that `%clk`).
    pub emt_missing: usize,
    /// Confirmed moves (feed, ever, retracted ones included; or PGN) not in the truth.
    pub ghosts: usize,
    /// Truth plies missing from the final confirmed moves.
    pub missing: usize,
    /// Confirmed moves withdrawn (takebacks) on the feed.
    pub retracted: usize,
    /// Result wrong (feed or PGN).
    pub result_wrong: bool,
    /// Per-game PGN missing, unreadable, or different from the feed.
    pub pgn_wrong: bool,
    /// What was wrong, for the report.
    pub why: Vec<String>,
}

impl GameCheck {
    /// True when the game is exactly right.
    pub fn exact(&self) -> bool {
        self.why.is_empty()
    }
}

/// Seconds within one.
fn near(a: u64, b: u64) -> bool {
    a.abs_diff(b) <= 1
}

/// Compares one outcome with its job's truth.
pub fn check(job: &Job, o: &Outcome) -> GameCheck {
    let t = job.truth();
    let mut c = GameCheck { plies: t.moves.len(), ..GameCheck::default() };
    let feed = &o.feed;
    // Ghosts: any confirmed move ever sent that is not the truth's move at that ply.
    for (ply, uci) in &feed.confirmed_sent {
        if t.moves.get((*ply as usize).wrapping_sub(1)).is_none_or(|m| &m.uci != uci) {
            c.ghosts += 1;
            c.why.push(format!("ghost: ply {ply} {uci} confirmed on the feed"));
        }
    }
    c.retracted = feed.confirmed_retracted as usize;
    let common = t.moves.iter().zip(&feed.moves).take_while(|(a, b)| a.uci == b.uci).count();
    c.missing = t.moves.len() - common;
    if c.missing > 0 {
        let at = t.moves.get(common).map_or(String::new(), |m| format!("{} {}", common + 1, m.uci));
        c.why.push(format!("{} of {} plies missing from ply {at}", c.missing, t.moves.len()));
    }
    let has_clock = t.clock.is_some();
    // Presses nobody saw (the cable pulled), as the offline harness finds them.
    let mut outages = outage_windows(&job.scenario, o.pace);
    outages.extend_from_slice(&o.off_chain);
    // Plies whose `%clk` was rightly left out: their `%emt`, and the mover's next one's.
    let mut no_clk_unseen = vec![false; t.moves.len()];
    for (i, m) in t.moves.iter().enumerate() {
        let got = feed.moves.get(i).filter(|f| f.uci == m.uci);
        let unseen = has_clock
            && (press_unseen(m.press_at_ms, &outages)
                || m.press_at_ms.is_some_and(|p| o.unlogged_presses.contains(&p)));
        let display = if m.color == "white" { m.white_clock_s } else { m.black_clock_s };
        if m.source_clk_s.is_some() && has_clock {
            c.clk_source += 1;
            if let (Some(g), Some(s)) = (got.and_then(|g| g.clk), m.source_clk_s)
                && near(g, u64::from(s))
            {
                c.clk_match_source += 1;
            }
        }
        if has_clock
            && m.press_at_ms.is_some()
            && let Some(d) = display
        {
            c.clk_checked += 1;
            match got.map(|g| g.clk) {
                Some(Some(g)) if near(g, u64::from(d)) => {}
                // Unseen: the cable was pulled; or a second press in the same poll hid it.
                Some(None) if unseen || !m.clk_observable => {
                    c.clk_unseen += 1;
                    no_clk_unseen[i] = true;
                }
                Some(g) => {
                    c.clk_misses += 1;
                    c.why.push(format!("ply {} {}: %clk {g:?}, the clock showed {d}", i + 1, m.san));
                }
                // Never confirmed: counted in `missing`.
                None => {}
            }
        }
        if !has_clock && let Some(Some(g)) = got.map(|g| g.clk) {
            c.why.push(format!("ply {}: %clk {g} without a clock", i + 1));
        }
        let emt_unknowable = no_clk_unseen[i] || (i >= 2 && no_clk_unseen[i - 2]);
        if let Some(g) = got
            && g.emt.is_none()
            && !emt_unknowable
        {
            c.emt_missing += 1;
            c.why.push(format!("ply {} {}: no %emt", i + 1, m.san));
        }
    }
    let mut expected = job.expected_result();
    if t.accept_results.iter().any(|r| r == feed.result.as_deref().unwrap_or("*")) {
        // A result the truth also accepts (a hand script's accept_results).
        expected = feed.result.clone();
    }
    if feed.result != expected {
        c.result_wrong = true;
        c.why.push(format!("feed result {:?}, expected {expected:?} (end: {})", feed.result, t.end));
    }
    // The per-game PGN: same moves, clocks and result as the feed.
    match o.pgn.as_deref().map(dgt_hil_sim::pgn::parse_games) {
        None => {
            c.pgn_wrong = true;
            c.why.push("no per-game PGN".into());
        }
        Some(games) if games.len() != 1 => {
            c.pgn_wrong = true;
            c.why.push(format!("per-game PGN holds {} games", games.len()));
        }
        Some(games) => {
            let g = &games[0];
            let want_round = o.board.map(|b| format!("{}.{b}", o.round));
            if g.tag("Round").map(str::to_owned) != want_round {
                c.pgn_wrong = true;
                c.why.push(format!("PGN Round {:?}, expected {want_round:?}", g.tag("Round")));
            }
            if let Some(w) = &g.truncated {
                c.pgn_wrong = true;
                c.why.push(format!("PGN unreadable: {w}"));
            }
            for (i, m) in g.moves.iter().enumerate() {
                if t.moves.get(i).is_none_or(|tm| tm.uci != m.uci) {
                    c.ghosts += 1;
                    c.why.push(format!("PGN ply {} {} not in the truth", i + 1, m.uci));
                    break;
                }
                let f = feed.moves.get(i);
                let (fc, fe) = (f.and_then(|f| f.clk), f.and_then(|f| f.emt));
                if m.clk_s.map(u64::from) != fc || m.emt_s.map(u64::from) != fe {
                    c.pgn_wrong = true;
                    c.why.push(format!(
                        "PGN ply {}: clk/emt {:?}/{:?}, feed {fc:?}/{fe:?}",
                        i + 1,
                        m.clk_s,
                        m.emt_s
                    ));
                }
            }
            if g.moves.len() != t.moves.len() {
                c.pgn_wrong = true;
                c.why.push(format!("PGN has {} plies, truth {}", g.moves.len(), t.moves.len()));
            }
            let want = expected.clone().unwrap_or_else(|| "*".into());
            if g.result != want || g.tag("Result") != Some(want.as_str()) {
                c.result_wrong = true;
                c.why.push(format!("PGN result {} / tag {:?}, expected {want}", g.result, g.tag("Result")));
            }
        }
    }
    if !o.sim_completed {
        c.why.push("the simulator did not finish the scenario".into());
    }
    for n in &o.notes {
        c.why.push(n.clone());
    }
    c
}

/// One line of the results table.
#[derive(Clone, Debug, Default)]
pub struct Row {
    /// Games.
    pub games: usize,
    /// Plies.
    pub plies: usize,
    /// Games exactly right.
    pub exact: usize,
    /// `%clk` checked.
    pub clk_checked: usize,
    /// `%clk` misses.
    pub clk_misses: usize,
    /// `%clk`/`%emt` rightly left out for an unseen press.
    pub clk_unseen: usize,
    /// `%clk` within 1 s of the source's.
    pub clk_match_source: usize,
    /// Source plies with `%clk`.
    pub clk_source: usize,
    /// Missing `%emt`.
    pub emt_missing: usize,
    /// Games with a ghost move.
    pub wrong_games: usize,
    /// Ghost moves.
    pub ghosts: usize,
    /// Games without a ghost but with moves never confirmed.
    pub stalled_games: usize,
    /// Missing moves.
    pub missing: usize,
    /// Confirmed moves withdrawn.
    pub retracted: usize,
    /// Wrong results.
    pub results_wrong: usize,
}

impl Row {
    fn add(&mut self, c: &GameCheck) {
        self.games += 1;
        self.plies += c.plies;
        self.exact += usize::from(c.exact());
        self.clk_checked += c.clk_checked;
        self.clk_misses += c.clk_misses;
        self.clk_unseen += c.clk_unseen;
        self.clk_match_source += c.clk_match_source;
        self.clk_source += c.clk_source;
        self.emt_missing += c.emt_missing;
        self.wrong_games += usize::from(c.ghosts > 0);
        self.ghosts += c.ghosts;
        self.stalled_games += usize::from(c.ghosts == 0 && c.missing > 0);
        self.missing += c.missing;
        self.retracted += c.retracted;
        self.results_wrong += usize::from(c.result_wrong);
    }
}

/// Checks every outcome; returns the table (by profile, then a total) and the failures.
pub fn tabulate(r: &RunResult, known: &[KnownBug]) -> (BTreeMap<String, Row>, Vec<String>, Vec<String>) {
    let mut known_hits = Vec::new();
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut total = Row::default();
    let mut failures = Vec::new();
    for o in &r.outcomes {
        let job = &r.jobs[o.job];
        let c = check(job, o);
        let key = match job.end {
            EndPath::Board => job.profile.name().to_owned(),
            EndPath::Operator => format!("{} (operator result)", job.profile.name()),
        };
        rows.entry(key).or_default().add(&c);
        total.add(&c);
        if !c.exact() {
            let mut why = c.why.clone();
            why.truncate(6);
            let bug = known.iter().find(|k| k.label == job.label && k.profile == job.profile.name());
            let msg = format!(
                "{} profile {} seed {} (serial {}, board {:?}, round {}): {}",
                job.label,
                job.profile,
                job.truth().seed,
                o.serial,
                o.board,
                o.round,
                why.join("; ")
            );
            match bug {
                Some(b) => known_hits.push(format!("KNOWN BUG ({}): {msg}", b.bug)),
                None => failures.push(msg),
            }
        }
    }
    rows.insert("TOTAL".into(), total);
    for p in &r.feed_problems {
        failures.push(format!("feed: {p}"));
    }
    if !r.clean_exit {
        failures.push("the relay did not exit cleanly on SIGTERM".into());
    }
    (rows, failures, known_hits)
}

/// A game known to fail because of a bug reported but not fixed yet: it still runs and is
/// counted in the table, its failure is printed loudly, but it does not fail the suite.
#[derive(Clone, Debug)]
pub struct KnownBug {
    /// The job's label, e.g. `livechess#3`.
    pub label: &'static str,
    /// The profile's name.
    pub profile: &'static str,
    /// The bug.
    pub bug: &'static str,
}

/// The table as text.
pub fn format_table(rows: &BTreeMap<String, Row>) -> String {
    let mut s = format!(
        "{:<34} {:>6} {:>7} {:>6} {:>8} {:>7} {:>7} {:>9} {:>7} {:>6} {:>6} {:>7} {:>7} {:>8} {:>7}\n",
        "profile",
        "games",
        "plies",
        "exact",
        "clk chk",
        "clk miss",
        "unseen",
        "src clk%",
        "no emt",
        "wrong",
        "ghost",
        "stalled",
        "missing",
        "retract",
        "result✗"
    );
    for (name, r) in rows.iter().filter(|(n, _)| n.as_str() != "TOTAL").chain(rows.get_key_value("TOTAL")) {
        let src =
            if r.clk_source == 0 { 0.0 } else { 100.0 * r.clk_match_source as f64 / r.clk_source as f64 };
        s.push_str(&format!(
            "{:<34} {:>6} {:>7} {:>6} {:>8} {:>8} {:>7} {:>8.1}% {:>7} {:>6} {:>6} {:>7} {:>7} {:>8} {:>7}\n",
            name,
            r.games,
            r.plies,
            r.exact,
            r.clk_checked,
            r.clk_misses,
            r.clk_unseen,
            src,
            r.emt_missing,
            r.wrong_games,
            r.ghosts,
            r.stalled_games,
            r.missing,
            r.retracted,
            r.results_wrong
        ));
    }
    s
}

/// A deterministic pseudo-random subset of `0..n` of size `k` (splitmix64 on the seed).
pub fn seeded_subset(n: usize, k: usize, seed: u64) -> Vec<usize> {
    let mut x = seed;
    let mut next = || {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut idx: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        idx.swap(i, j);
    }
    idx.truncate(k.min(n));
    idx.sort_unstable();
    idx
}

/// A working folder under the system's temporary folder.
pub fn work_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("dgt-e2e-{name}-{}", std::process::id()))
}

/// Writes `text` to `dir/name` and returns the path.
pub fn write_file(dir: &Path, name: &str, text: &str) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let p = dir.join(name);
    std::fs::write(&p, text)?;
    Ok(p)
}
