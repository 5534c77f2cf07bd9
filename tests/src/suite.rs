//! The acceptance suites: which games under which profiles, run together with the
//! captures and followed by the interop checks, with one printable report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dgt_hil_sim::hands::Profile;
use dgt_hil_sim::pgn::SourceGame;
use dgt_hil_sim::transport::Bursts;

use crate::acceptance::{self, EndPath, Job, KnownBug, RunOptions, format_table, seeded_subset, tabulate};
use crate::feed::FeedMove;

/// What to run.
#[derive(Clone, Debug)]
pub struct SuiteOptions {
    /// The full sweep (every corpus game under `clean` and `mixed`), or the fast subset.
    pub full: bool,
    /// Simulated boards at once.
    pub boards: usize,
    /// Simulator speed (thinking time between moves).
    pub speed: f64,
    /// Simulator speed of the hand sequences (see [`RunOptions::hand_speed`]).
    pub hand_speed: f64,
    /// Seed of the plans and of the subsets.
    pub seed: u64,
    /// Games per other noise profile.
    pub subset: usize,
    /// Time between two chunks of a capture.
    pub capture_step: Duration,
    /// The relay binary.
    pub relay_bin: PathBuf,
    /// Working folder.
    pub dir: PathBuf,
    /// Only these profiles (all when empty).
    pub only: Vec<Profile>,
    /// Only the games with these labels, e.g. `worldcup#239` (all when empty): to run again
    /// through the relay what a sweep (or the offline harness) found wrong.
    pub games: Vec<String>,
    /// Print progress.
    pub progress: bool,
    /// Games known to fail (reported bugs): printed, not counted as failures.
    pub known: Vec<KnownBug>,
    /// Deliver each board's output late and in bursts ([`RunOptions::bursts`]).
    pub bursts: Option<Bursts>,
}

/// What a suite produced.
#[derive(Debug, Default)]
pub struct SuiteReport {
    /// The table per profile.
    pub table: String,
    /// The captures, one line each.
    pub captures: Vec<String>,
    /// The interop lines.
    pub interop: Vec<String>,
    /// Everything that failed.
    pub failures: Vec<String>,
    /// Readers skipped.
    pub skipped: Vec<String>,
    /// Wall time and relay resources, one line.
    pub resources: String,
    /// Known bugs that showed up.
    pub known: Vec<String>,
}

impl std::fmt::Display for SuiteReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}", self.table)?;
        writeln!(f, "{}", self.resources)?;
        for c in &self.captures {
            writeln!(f, "capture {c}")?;
        }
        for l in &self.interop {
            writeln!(f, "interop {l}")?;
        }
        for k in &self.known {
            writeln!(f, "!!! {k}")?;
        }
        for s in &self.skipped {
            writeln!(f, "!!! interop reader {s} SKIPPED (not installed)")?;
        }
        if self.failures.is_empty() {
            writeln!(f, "no failures")
        } else {
            writeln!(f, "{} FAILURES:", self.failures.len())?;
            for x in &self.failures {
                writeln!(f, "  {x}")?;
            }
            Ok(())
        }
    }
}

/// How the boards' output reached the relay, for the report: nothing when at once.
fn bursts_note(bursts: Option<Bursts>) -> String {
    bursts.map_or(String::new(), |b| {
        format!(", output in bursts held {}-{} ms (seed {})", b.min_ms, b.max_ms, b.seed)
    })
}

/// Decisive games whose final position is not checkmate: candidates for the operator path.
fn resignations(games: &[SourceGame]) -> Vec<usize> {
    use shakmaty::Position;
    games
        .iter()
        .enumerate()
        .filter(|(_, g)| matches!(g.result.as_str(), "1-0" | "0-1") && !g.final_position().is_checkmate())
        .map(|(i, _)| i)
        .collect()
}

/// The jobs of a suite.
pub fn jobs(opts: &SuiteOptions) -> anyhow::Result<Vec<Job>> {
    let wc = acceptance::worldcup()?;
    let lc = acceptance::livechess()?;
    let want = |p: Profile| opts.only.is_empty() || opts.only.contains(&p);
    let mut jobs = Vec::new();
    let seed = opts.seed;
    let mut add = |label: &str, games: &[SourceGame], idx: &[usize], p: Profile, end: EndPath| {
        for &i in idx {
            jobs.push(Job::plan(format!("{label}#{i}"), &games[i], p, seed.wrapping_add(i as u64), end));
        }
    };
    let all_lc: Vec<usize> = (0..lc.len()).collect();
    // The fast subset draws the noise profiles' games from the shorter half of the World
    // Cup (rapid and blitz tie-breaks), so that it fits in a test run.
    let mut by_len: Vec<usize> = (0..wc.len()).collect();
    by_len.sort_by_key(|&i| {
        wc[i].moves.iter().map(|m| u64::from(m.emt_s.unwrap_or(10))).sum::<u64>() + wc[i].moves.len() as u64
    });
    let pool: Vec<usize> = if opts.full { (0..wc.len()).collect() } else { by_len[..wc.len() / 3].to_vec() };
    let pick = |k: usize, salt: u64| -> Vec<usize> {
        let mut v: Vec<usize> =
            seeded_subset(pool.len(), k, seed ^ salt).into_iter().map(|i| pool[i]).collect();
        v.sort_unstable();
        v
    };
    for p in [Profile::Clean, Profile::Mixed] {
        if want(p) {
            if opts.full || p == Profile::Clean {
                add("livechess", &lc, &all_lc, p, EndPath::Board);
            }
            if opts.full {
                let all: Vec<usize> = (0..wc.len()).collect();
                add("worldcup", &wc, &all, p, EndPath::Board);
            } else if p == Profile::Mixed {
                add("worldcup", &wc, &pick(6, 0x4D49_5845), p, EndPath::Board);
            }
        }
    }
    for (k, p) in Profile::ALL.into_iter().enumerate() {
        if matches!(p, Profile::Clean | Profile::Mixed) || !want(p) {
            continue;
        }
        let n = if opts.full { opts.subset } else { 1 };
        add("worldcup", &wc, &pick(n, 0x5052_4F46 + k as u64), p, EndPath::Board);
    }
    if want(Profile::Clean) {
        // The operator path: the loser stops the clock, the operator sets the result.
        let cands: Vec<usize> = resignations(&wc).into_iter().filter(|i| pool.contains(i)).collect();
        let n = if opts.full { 6 } else { 2 };
        let idx: Vec<usize> =
            seeded_subset(cands.len(), n, seed ^ 0x4F50).into_iter().map(|i| cands[i]).collect();
        add("worldcup", &wc, &idx, Profile::Clean, EndPath::Operator);
    }
    if !opts.games.is_empty() {
        jobs.retain(|j| opts.games.contains(&j.label));
    }
    Ok(jobs)
}

/// Runs a suite: the games, the captures at the same time, then the interop readers on
/// what the relay published.
pub fn run(opts: &SuiteOptions) -> anyhow::Result<SuiteReport> {
    let jobs = jobs(opts)?;
    let mut rep = SuiteReport::default();
    let run_opts = RunOptions {
        boards: opts.boards,
        speed: opts.speed,
        hand_speed: opts.hand_speed,
        dir: opts.dir.join("games"),
        relay_bin: opts.relay_bin.clone(),
        progress: opts.progress.then_some(Duration::from_secs(15)),
        first_serial: 30001,
        bursts: opts.bursts,
    };
    let (result, captures) = std::thread::scope(|s| {
        let caps = s.spawn(|| {
            crate::captures::run(
                &crate::captures::NAMES,
                &opts.relay_bin,
                &opts.dir.join("captures"),
                opts.capture_step,
            )
        });
        let result = acceptance::run(jobs, &run_opts);
        (result, caps.join())
    });
    let result = result?;
    let (rows, failures, known) = tabulate(&result, &opts.known);
    rep.table = format_table(&rows);
    rep.failures = failures;
    rep.known = known;
    if !rep.failures.is_empty() {
        rep.failures.push(format!("relay log tail:\n{}", result.log_tail));
    }
    rep.resources = format!(
        "{} games on {} boards at x{} (hands x{}){} in {:.1} s; relay: {:.1} CPU s, peak RSS {} MiB",
        result.outcomes.len(),
        opts.boards.min(result.outcomes.len()),
        opts.speed,
        opts.hand_speed,
        bursts_note(opts.bursts),
        result.wall.as_secs_f64(),
        result.relay_stat.cpu_s,
        result.relay_stat.hwm_kib / 1024
    );
    match captures {
        Ok(Ok(outs)) => {
            for o in outs {
                let p = o.problems();
                rep.captures.push(format!(
                    "{:<6} {} plies, result {:?}: {}",
                    o.capture.name,
                    o.feed.moves.len(),
                    o.feed.result,
                    if p.is_empty() { "exact".to_owned() } else { p.join("; ") }
                ));
                if !p.is_empty() {
                    rep.failures.push(format!("capture {}: {}", o.capture.name, p.join("; ")));
                }
            }
        }
        Ok(Err(e)) => rep.failures.push(format!("captures: {e:#}")),
        Err(_) => rep.failures.push("captures: thread panicked".into()),
    }
    // Interop on what the relay published: every game's PGN, and every round's PGN.
    let mut expected: BTreeMap<String, Vec<FeedMove>> = BTreeMap::new();
    let mut per_game = String::new();
    for o in &result.outcomes {
        if let (Some(b), Some(pgn)) = (o.board, &o.pgn) {
            expected.insert(format!("{}.{b}", o.round), o.feed.moves.clone());
            per_game.push_str(pgn);
            if !pgn.ends_with("\n\n") {
                per_game.push('\n');
            }
        }
    }
    let rounds: String = result.round_pgns.values().map(String::as_str).collect::<Vec<_>>().join("\n");
    // Export format (the 1994 standard, the 2001 clock supplement), file by file.
    let published = result.outcomes.iter().filter_map(|o| o.pgn.as_ref()).chain(result.round_pgns.values());
    for text in published {
        if let Err(e) = crate::export_format::check_ok(text) {
            rep.failures.push(format!("published PGN not in export format:\n{e}"));
        }
    }
    let dir = opts.dir.join("published");
    let files = vec![
        acceptance::write_file(&dir, "per-game.pgn", &per_game)?,
        acceptance::write_file(&dir, "per-round.pgn", &rounds)?,
    ];
    let inter = crate::interop::check(&files, &expected);
    rep.interop = inter.lines;
    rep.failures.extend(inter.failures);
    rep.skipped = inter.skipped;
    Ok(rep)
}

/// A slice of the independent emulator's hand scripts through the real relay, on ptys at
/// each script's own pace: `count` scripts of `dir` and its sub-folders, chosen by
/// `opts.seed` (so `--seed today` rotates them daily), on up to `opts.boards` boards at once.
pub fn run_scripts(dir: &Path, count: usize, opts: &SuiteOptions) -> anyhow::Result<SuiteReport> {
    let all = dgt_hil_sim::script::load_tree(dir)?;
    if all.is_empty() {
        anyhow::bail!("no hand script (*.json) under {}", dir.display());
    }
    let picked = seeded_subset(all.len(), count.min(all.len()), opts.seed ^ 0x5C21);
    let jobs: Vec<Job> = picked.iter().map(|&i| crate::scripts::job(&all[i])).collect();
    let names: Vec<&str> = picked.iter().map(|&i| all[i].name.as_str()).collect();
    let run_opts = RunOptions {
        boards: opts.boards.min(jobs.len()),
        speed: 1.0,
        hand_speed: 1.0,
        dir: opts.dir.join("scripts"),
        relay_bin: opts.relay_bin.clone(),
        progress: opts.progress.then_some(Duration::from_secs(15)),
        first_serial: 40001,
        bursts: opts.bursts,
    };
    let result = acceptance::run(jobs, &run_opts)?;
    let (rows, mut failures, known) = tabulate(&result, &opts.known);
    if !failures.is_empty() {
        failures.push(format!("relay log tail:\n{}", result.log_tail));
    }
    Ok(SuiteReport {
        table: format!("{}scripts: {}", format_table(&rows), names.join(" ")),
        failures,
        known,
        resources: format!(
            "{} hand scripts on {} boards at their own pace{} in {:.1} s; relay: {:.1} CPU s, peak RSS {} MiB",
            result.outcomes.len(),
            run_opts.boards,
            bursts_note(opts.bursts),
            result.wall.as_secs_f64(),
            result.relay_stat.cpu_s,
            result.relay_stat.hwm_kib / 1024
        ),
        ..SuiteReport::default()
    })
}
