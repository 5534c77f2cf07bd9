//! The relay killed and restarted under live games: corpus games played on simulated
//! boards over real ptys, the real `dgt-relay` process killed with SIGKILL at seeded
//! moments (some right after a move was published, some with a write torn in a journal's
//! tail, some down long enough for many plies to be made meanwhile), restarted on the same
//! data folder, and every game compared at the end with the simulator's ground truth:
//! moves, `%clk` within 1 s, `%emt`, results, the per-game PGN, and what a last restart
//! reads back from the journals.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use dgt_hil_sim::{BoardConfig, SimConfig, StartPolicy, spawn_fleet};

use crate::acceptance::{self, GameCheck, Job, Outcome, all_active, wait_until};
use crate::feed::{FeedGame, Recorder};
use crate::offline::Pace;
use crate::relay::Relay;

/// How to run a kill run.
#[derive(Clone, Debug)]
pub struct KillRunOptions {
    /// Simulator speed (thinking time between moves).
    pub speed: f64,
    /// Simulator speed of the hand sequences.
    pub hand_speed: f64,
    /// SIGKILLs, spread over the games.
    pub kills: usize,
    /// Seed of the kill moments, the time down and the torn writes.
    pub seed: u64,
    /// Longest time the relay stays down after a kill.
    pub max_down: Duration,
    /// Working folder (links, relay data, logs).
    pub dir: PathBuf,
    /// The relay binary.
    pub relay_bin: PathBuf,
    /// First serial number of the simulated boards.
    pub first_serial: u32,
}

/// One kill.
#[derive(Clone, Debug)]
pub struct Kill {
    /// Seconds from the start of the games.
    pub at_s: f64,
    /// How it was timed: `random`, or `after a move` (at once after a confirmed move
    /// reached the feed).
    pub how: &'static str,
    /// How long the relay stayed down.
    pub down: Duration,
    /// The journal whose tail was torn (a partial record appended) before the restart.
    pub torn: Option<String>,
}

/// What a kill run produced.
#[derive(Debug)]
pub struct KillRunReport {
    /// Boards (one game each).
    pub boards: usize,
    /// The kills, in order.
    pub kills: Vec<Kill>,
    /// Restarts after which every board was active again.
    pub survived: usize,
    /// The check of each game.
    pub checks: Vec<(String, GameCheck)>,
    /// Everything wrong.
    pub failures: Vec<String>,
    /// Real time the run took.
    pub wall: Duration,
}

impl KillRunReport {
    /// Plies in all games.
    pub fn plies(&self) -> usize {
        self.checks.iter().map(|(_, c)| c.plies).sum()
    }

    /// `%clk` checked, and wrong or missing.
    pub fn clk(&self) -> (usize, usize) {
        self.checks.iter().fold((0, 0), |(a, b), (_, c)| (a + c.clk_checked, b + c.clk_misses))
    }
}

impl std::fmt::Display for KillRunReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (clk, wrong) = self.clk();
        writeln!(
            f,
            "kill run: {} boards, {} of {} kills survived, {} plies, %clk {clk} checked / {wrong} wrong, {:.0} s",
            self.boards,
            self.survived,
            self.kills.len(),
            self.plies(),
            self.wall.as_secs_f64()
        )?;
        for k in &self.kills {
            writeln!(
                f,
                "  kill at {:6.1} s ({}), down {:.1} s{}",
                k.at_s,
                k.how,
                k.down.as_secs_f64(),
                k.torn.as_ref().map(|t| format!(", tail of {t} torn")).unwrap_or_default()
            )?;
        }
        for (label, c) in &self.checks {
            writeln!(
                f,
                "  {label}: {} plies, %clk {}/{} wrong, {} missing, {} ghosts, result {}",
                c.plies,
                c.clk_misses,
                c.clk_checked,
                c.missing,
                c.ghosts,
                if c.result_wrong { "WRONG" } else { "ok" }
            )?;
        }
        for x in &self.failures {
            writeln!(f, "FAIL {x}")?;
        }
        Ok(())
    }
}

/// A seeded generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One relay process of the run, with its feed client.
struct Instance {
    relay: Relay,
    recorder: Recorder,
}

fn start_instance(
    opts: &KillRunOptions,
    args: &[String],
    n: usize,
    rt: &tokio::runtime::Runtime,
) -> anyhow::Result<Instance> {
    let dir = opts.dir.join(format!("relay-{n}"));
    let relay = Relay::start(&opts.relay_bin, &dir, args)?;
    let recorder = Recorder::start_logged(rt.handle(), relay.addr, Some(&dir.join("feed-frames.log")))?;
    Ok(Instance { relay, recorder })
}

/// Appends half of a move record to a journal, without its newline: what a write cut by a
/// crash (or a power loss) leaves.
fn tear_tail(journal: &Path) -> anyhow::Result<()> {
    let mut f = std::fs::OpenOptions::new().append(true).open(journal)?;
    f.write_all(br#"{"t":"move","ply":999,"san":"Qx"#)?;
    Ok(())
}

/// Plays one job per simulated board, killing the relay `opts.kills` times; see the module
/// docs.
pub fn kill_run(jobs: Vec<Job>, opts: &KillRunOptions) -> anyhow::Result<KillRunReport> {
    let started = Instant::now();
    let _ = std::fs::remove_dir_all(&opts.dir);
    std::fs::create_dir_all(&opts.dir)?;
    let n = jobs.len();
    let template = SimConfig {
        board: BoardConfig::with_serial(opts.first_serial),
        speed: opts.speed,
        hand_speed: opts.hand_speed,
        ..SimConfig::default()
    };
    let boards = spawn_fleet(n, &template, Some(&opts.dir.join("links"))).context("spawning boards")?;
    let data = opts.dir.join("data");
    let mut args: Vec<String> = vec!["run".into(), "--data".into(), data.display().to_string()];
    for b in &boards {
        args.push("--port".into());
        args.push(b.path().display().to_string());
    }
    let serials: Vec<String> = (0..n).map(|i| (opts.first_serial + i as u32).to_string()).collect();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let mut instances = vec![start_instance(opts, &args, 0, &rt)?];
    if !wait_until(Duration::from_secs(30), || all_active(&instances[0].relay, &serials)) {
        bail!("not every board became active: {}", instances[0].relay.log_tail());
    }
    let duration =
        jobs.iter().map(|j| j.scenario.real_duration(opts.speed, opts.hand_speed)).max().unwrap_or_default();
    let handles = boards
        .iter()
        .zip(&jobs)
        .map(|(b, j)| b.start_scenario(j.scenario.clone(), StartPolicy::WhenHostListens))
        .collect::<Result<Vec<_>, _>>()?;
    let games_started = Instant::now();

    // The kills: spread over the games' first 85 %, each at a seeded moment of its slot.
    let mut rng = Rng(opts.seed);
    let mut kills = Vec::new();
    let mut survived = 0;
    let mut failures = Vec::new();
    let span = duration.as_secs_f64() * 0.85;
    for k in 0..opts.kills {
        let slot = span / opts.kills as f64;
        let at = slot * (k as f64 + 0.2 + 0.6 * rng.unit());
        let after_move = rng.unit() < 0.5;
        let down = Duration::from_secs_f64(if rng.unit() < 0.25 {
            opts.max_down.as_secs_f64()
        } else {
            0.5 + rng.unit() * (opts.max_down.as_secs_f64() / 2.0)
        });
        let tear = rng.unit() < 0.35;
        let torn_board = (rng.next() % n as u64) as usize;
        let target = games_started + Duration::from_secs_f64(at);
        std::thread::sleep(target.saturating_duration_since(Instant::now()));
        let inst = instances.last_mut().unwrap_or_else(|| unreachable!("one instance at least"));
        let how = if after_move {
            // At once after the next confirmed move of any board reached the feed: the relay
            // is then between a journal append and the next.
            let count =
                |r: &Recorder| r.with(|s| s.games.values().map(|g| g.confirmed_sent.len()).sum::<usize>());
            let before = count(&inst.recorder);
            wait_until(Duration::from_secs(20), || count(&inst.recorder) > before);
            "after a move"
        } else {
            "random"
        };
        let at_s = games_started.elapsed().as_secs_f64();
        inst.relay.kill9();
        let mut torn = None;
        if tear {
            let path = data.join("round-1").join(format!("game-{}.journal", torn_board + 1));
            if path.exists() {
                tear_tail(&path)?;
                torn = Some(path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default());
            }
        }
        std::thread::sleep(down);
        kills.push(Kill { at_s, how, down, torn });
        let next = start_instance(opts, &args, instances.len(), &rt)?;
        if wait_until(Duration::from_secs(30), || all_active(&next.relay, &serials)) {
            survived += 1;
        } else {
            failures.push(format!("after kill {}: not every board active again in 30 s", k + 1));
        }
        instances.push(next);
    }

    // The games end; the last relay must hold every one of them exactly.
    for (i, h) in handles.iter().enumerate() {
        let timeout = duration.saturating_sub(games_started.elapsed()) + Duration::from_secs(60);
        match h.wait(timeout) {
            Ok(r) if r.completed => {}
            Ok(_) => failures.push(format!("board {}: the simulator did not finish", i + 1)),
            Err(e) => failures.push(format!("board {}: simulator: {e}", i + 1)),
        }
    }
    let last = instances.last().unwrap_or_else(|| unreachable!("one instance at least"));
    let board_of = |serial: &str| last.recorder.with(|s| s.board_of_serial(serial));
    let game_of = |serial: &str| {
        last.recorder.with(|s| s.board_of_serial(serial).and_then(|b| s.games.get(&(b, 1))).cloned())
    };
    for (job, serial) in jobs.iter().zip(&serials) {
        let want = job.truth().moves.len();
        let expected = job.expected_result();
        wait_until(Duration::from_secs(30), || {
            game_of(serial).is_some_and(|g| g.moves.len() >= want && g.result == expected)
        });
    }
    let mut checks = Vec::new();
    let mut pgns = BTreeMap::new();
    for (i, (job, serial)) in jobs.iter().zip(&serials).enumerate() {
        let board = board_of(serial);
        let mut feed: FeedGame = game_of(serial).unwrap_or_default();
        // Ghosts: every confirmed move any relay instance sent for this game.
        feed.confirmed_sent = instances
            .iter()
            .flat_map(|inst| {
                inst.recorder.with(|s| {
                    s.board_of_serial(serial)
                        .and_then(|b| s.games.get(&(b, 1)))
                        .map(|g| g.confirmed_sent.clone())
                        .unwrap_or_default()
                })
            })
            .collect();
        let pgn = board.and_then(|b| match last.relay.get(&format!("/pgn/1/{b}")) {
            Ok((200, body)) => Some(body),
            _ => None,
        });
        if let Some(p) = &pgn {
            pgns.insert(i, p.clone());
        }
        let pace = Pace { speed: opts.speed, hand_speed: opts.hand_speed, ..Pace::RELAY_SUITE };
        let outcome = Outcome::read_back(i, serial.clone(), board, (feed, pgn), true, pace);
        let c = acceptance::check_noting(job, &outcome, &mut failures);
        checks.push((job.label.clone(), c));
    }
    for (i, inst) in instances.iter().enumerate() {
        for p in inst.recorder.with(|s| s.problems.clone()) {
            failures.push(format!("feed of relay {i}: {p}"));
        }
    }
    // A clean stop, then one more start: the journals alone give back the same games.
    let mut last = instances.pop().unwrap_or_else(|| unreachable!("one instance at least"));
    if !last.relay.terminate().is_some_and(|s| s.success()) {
        failures.push("the last relay did not exit cleanly on SIGTERM".into());
    }
    drop(instances);
    let again = start_instance(opts, &args, 1000, &rt)?;
    for (i, serial) in serials.iter().enumerate() {
        let Some(b) = last.recorder.with(|s| s.board_of_serial(serial)) else { continue };
        let (_, body) = again.relay.get(&format!("/pgn/1/{b}"))?;
        if pgns.get(&i).is_some_and(|p| !same_game(p, &body)) {
            failures.push(format!(
                "board {b}: the PGN read back from the journals after a restart differs:\n{body}\nwas\n{}",
                pgns[&i]
            ));
        }
    }
    drop(again);
    drop(boards);
    Ok(KillRunReport { boards: n, kills, survived, checks, failures, wall: started.elapsed() })
}

/// Two PGN texts of one game, equal but for the live `Clock` tag.
fn same_game(a: &str, b: &str) -> bool {
    let strip = |s: &str| s.lines().filter(|l| !l.starts_with("[Clock ")).collect::<Vec<_>>().join("\n");
    strip(a) == strip(b)
}
