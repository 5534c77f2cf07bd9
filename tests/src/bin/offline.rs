//! The offline sweep: every corpus game under every noise profile, played through the
//! simulated firmware straight into the tracker (no relay, no pty), compared with the
//! ground truth. `cargo run --release -p dgt-e2e-tests --bin offline`.
//!
//! Options: `--source worldcup|livechess|all` (all), `--games A..B` (a slice of each
//! source's game indices, e.g. `0..50`; or `--game N` for one), `--profiles a,b` (all),
//! `--seed S` (1: game `i` uses seed `S + i`, as the end-to-end suite), `--threads N`
//! (available cores), `--operator` (results set by the operator after a resignation
//! instead of shown on the board), `--verbose` (every failing game with its reasons),
//! `--events` (with `--game`: print the scenario's actions, the tracker's events and the
//! truth's presses), `--known LABEL/PROFILE,...` (failures known and explained: reported,
//! not counted), `--pace SPEED,HAND_SPEED` or `--pace relay` (= `150,3`, the end-to-end
//! suite's): feed the tracker the real time a simulated board of the end-to-end suite
//! would take, thinking sped up `SPEED` times and hands `HAND_SPEED` times, to reproduce a
//! timing failure of the relay run in milliseconds (with `--events`, times are shown as
//! virtual ms then the tracker's real ms). Exit status 1 on any other failure.
//!
//! `--stalls MAX_MS[,EVERY_MS[,SEED]]`: the relay as on a loaded machine, frozen now and
//! then for up to MAX_MS (one freeze every EVERY_MS on average, 1,000 by default), reading
//! what the board sent meanwhile all at once when it runs again.
//!
//! `--bursts MAX_MS[,SEED[,MIN_MS]]`: the board's output crosses a link that holds it back
//! and lets it out in bursts, each MIN_MS (20) to MAX_MS (the relay's time, uniform, drawn
//! from SEED, 1 by default) after its first byte, as a Bluetooth serial link or a USB
//! adapter's latency timer does; the relay keeps running meanwhile.
//!
//! `--device`: the session runs with the relay box's settings (its catch-up budget, the
//! messages it holds and the events it keeps of a board's event log), as its firmware does.
//!
//! `--fail-on wrong`: only a game with a wrong move confirmed fails the run (exit status
//! 1, and only those are listed by `--verbose`); stalled games, `%clk` and result misses are
//! counted in the table, not failed. `--fail-on any` (the default): any game not exact
//! fails it.
//!
//! `--scripts PATH`: instead of corpus games, the independent emulator's hand scripts
//! (`dgt-hand-script/1`): PATH is one script or a folder, whose `*.json` files directly in
//! it are replayed (not those in sub-folders unless `--recursive`, whose rows are then
//! labelled `human-pace/clean`, ...), each at its own pace (`--pace` still applies), its end
//! shown as the script shows it; one table row per script profile (the file name's, e.g.
//! `mixed-noclock`). `--threads`, `--verbose` and `--events` apply.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, bail};
use dgt_e2e_tests::acceptance::{EndPath, livechess, worldcup};
use dgt_e2e_tests::offline::{Failure, OfflineOptions, OfflineOutcome, Pace, Stalls, replay_through_tracker};
use dgt_e2e_tests::scripts::{ScriptOutcome, format_table, replay_script, tabulate};
use dgt_hil_sim::hands::Profile;
use dgt_hil_sim::pgn::SourceGame;
use dgt_hil_sim::transport::Bursts;

#[derive(Default)]
struct Row {
    games: usize,
    plies: usize,
    exact: usize,
    clk_checked: usize,
    clk_absent: usize,
    clk_off: usize,
    clk_unseen: usize,
    wrong_games: usize,
    ghosts: usize,
    stalled_games: usize,
    stalled_plies: usize,
    results_wrong: usize,
    first_fail: Option<(String, u64)>,
}

impl Row {
    fn add(&mut self, o: &OfflineOutcome) {
        self.games += 1;
        self.plies += o.plies;
        self.exact += usize::from(o.passed());
        self.clk_checked += o.clk_checked;
        self.clk_absent += o.clk_absent;
        self.clk_off += o.clk_off;
        self.clk_unseen += o.clk_unseen;
        self.wrong_games += usize::from(o.failure() == Some(Failure::WrongMove));
        self.ghosts += o.ghosts.len();
        if o.failure() == Some(Failure::Stalled) {
            self.stalled_games += 1;
            self.stalled_plies += o.missing;
        }
        self.results_wrong += usize::from(o.result_wrong());
    }
}

fn main() -> anyhow::Result<()> {
    let mut source = "all".to_string();
    let mut range: Option<(usize, usize)> = None;
    let mut profiles: Vec<Profile> = Profile::ALL.to_vec();
    let mut seed = 1u64;
    let mut threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut opts = OfflineOptions::default();
    let mut verbose = false;
    // Failures known and explained (LABEL/PROFILE, e.g. worldcup#96/disconnect): reported,
    // not counted; any other failure fails the run.
    let mut known: Vec<(String, Profile)> = Vec::new();
    let mut scripts: Option<std::path::PathBuf> = None;
    let mut recursive = false;
    let mut fail_on_wrong_only = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--source" => source = val()?,
            "--games" => {
                let v = val()?;
                let (a, b) = v.split_once("..").context("--games A..B")?;
                range = Some((a.parse()?, b.parse()?));
            }
            "--game" => {
                let n: usize = val()?.parse()?;
                range = Some((n, n + 1));
            }
            "--profiles" => {
                profiles = val()?.split(',').map(Profile::parse).collect::<Result<_, _>>()?;
            }
            "--seed" => seed = val()?.parse()?,
            "--threads" => threads = val()?.parse::<usize>()?.max(1),
            "--operator" => opts.end = EndPath::Operator,
            "--verbose" => verbose = true,
            "--events" => opts.keep_events = true,
            "--pace" => {
                let v = val()?;
                opts.pace = Some(
                    Pace::parse(&v).with_context(|| format!("--pace SPEED,HAND_SPEED or relay, not {v}"))?,
                );
            }
            "--stalls" => {
                let v = val()?;
                opts.stalls = Some(
                    Stalls::parse(&v)
                        .with_context(|| format!("--stalls MAX_MS[,EVERY_MS[,SEED]], not {v}"))?,
                );
            }
            "--device" => opts.device = true,
            "--bursts" => {
                let v = val()?;
                opts.bursts = Some(Bursts::parse(&v).map_err(anyhow::Error::msg)?);
            }
            "--known" => {
                for k in val()?.split(',').filter(|k| !k.is_empty()) {
                    let (label, profile) = k.split_once('/').context("--known LABEL/PROFILE,...")?;
                    known.push((label.to_string(), Profile::parse(profile)?));
                }
            }
            "--scripts" => scripts = Some(val()?.into()),
            "--recursive" => recursive = true,
            "--fail-on" => {
                fail_on_wrong_only = match val()?.as_str() {
                    "wrong" => true,
                    "any" => false,
                    other => bail!("--fail-on wrong|any, not {other}"),
                }
            }
            other => bail!("unknown option {other}"),
        }
    }
    if let Some(path) = &scripts {
        return run_scripts(path, recursive, threads, &opts, verbose, fail_on_wrong_only);
    }
    let mut games: Vec<(String, SourceGame)> = Vec::new();
    let sources: &[&str] = match source.as_str() {
        "all" => &["worldcup", "livechess"],
        "worldcup" => &["worldcup"],
        "livechess" => &["livechess"],
        other => bail!("unknown source {other}"),
    };
    for &s in sources {
        let list = if s == "worldcup" { worldcup()? } else { livechess()? };
        let (a, b) = range.unwrap_or((0, list.len()));
        for g in list.into_iter().skip(a).take(b.saturating_sub(a)) {
            games.push((s.to_string(), g));
        }
    }
    let jobs: Vec<(usize, Profile)> =
        profiles.iter().flat_map(|&p| (0..games.len()).map(move |g| (g, p))).collect();
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<(usize, String, OfflineOutcome)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(g, p)) = jobs.get(i) else { break };
                    let (src, game) = &games[g];
                    let o = replay_through_tracker(game, p, seed.wrapping_add(game.index as u64), &opts);
                    let label = format!("{src}#{}", game.index);
                    if let Ok(mut v) = outcomes.lock() {
                        v.push((i, label, o));
                    }
                }
            });
        }
    });
    let mut outcomes = outcomes.into_inner().unwrap_or_default();
    outcomes.sort_by_key(|(i, _, _)| *i);
    let mut rows: BTreeMap<usize, Row> = BTreeMap::new();
    let order: HashMap<Profile, usize> = profiles.iter().enumerate().map(|(i, p)| (*p, i)).collect();
    let mut failed = 0usize;
    let mut total = Row::default();
    for (_, label, o) in &outcomes {
        total.add(o);
        let r = rows.entry(order[&o.profile]).or_default();
        r.add(o);
        let is_known = known.iter().any(|(l, p)| l == label && *p == o.profile);
        if is_known {
            println!(
                "{label} {} seed {}: {} (known, see BENCHMARKS.md)",
                o.profile,
                o.seed,
                if o.passed() { "now exact: take it off the known list" } else { "failed" }
            );
        }
        if !o.passed() && !is_known {
            failed += usize::from(fails(o, fail_on_wrong_only));
            for r in [r, &mut total] {
                if r.first_fail.is_none() {
                    r.first_fail = Some((label.clone(), o.seed));
                }
            }
            if verbose && fails(o, fail_on_wrong_only) {
                println!("{label} {} seed {} ({}):", o.profile, o.seed, failure_name(o));
                for w in o.why.iter().take(8) {
                    println!("    {w}");
                }
            }
        }
        if opts.keep_events {
            print_timeline(&format!("{label} {} seed {}", o.profile, o.seed), o);
        }
    }
    // Wrong: games with a move confirmed that was not played (and such moves); stalled:
    // games without one but with plies never confirmed (and such plies); `%clk` absent or
    // more than 1 s off on plies confirmed right.
    println!(
        "{:<16} {:>6} {:>7} {:>6} {:>6} {:>7} {:>7} {:>7} {:>8} {:>7} {:>7} {:>7} {:>6}  first failure",
        "profile",
        "games",
        "plies",
        "exact",
        "wrong",
        "(moves)",
        "stalled",
        "(plies)",
        "clk chk",
        "clk abs",
        "clk off",
        "unseen",
        "result"
    );
    let named = profiles.iter().enumerate().filter_map(|(i, p)| Some((p.name(), rows.get(&i)?)));
    for (name, r) in named.chain([("TOTAL", &total)]) {
        let first = r.first_fail.as_ref().map_or(String::new(), |(l, s)| format!("{l} seed {s}"));
        println!(
            "{:<16} {:>6} {:>7} {:>6} {:>6} {:>7} {:>7} {:>7} {:>8} {:>7} {:>7} {:>7} {:>6}  {first}",
            name,
            r.games,
            r.plies,
            r.exact,
            r.wrong_games,
            r.ghosts,
            r.stalled_games,
            r.stalled_plies,
            r.clk_checked,
            r.clk_absent,
            r.clk_off,
            r.clk_unseen,
            r.results_wrong
        );
    }
    println!(
        "{} replays, {} not exact, {failed} failed{}, {:.1} s on {threads} threads",
        outcomes.len(),
        total.games - total.exact,
        if fail_on_wrong_only { " (only wrong moves fail)" } else { "" },
        started.elapsed().as_secs_f64()
    );
    if failed > 0 {
        std::process::exit(1);
    }
    Ok(())
}

/// True when `o` fails the run: any miss, or with `--fail-on wrong` only a wrong move.
fn fails(o: &OfflineOutcome, wrong_only: bool) -> bool {
    match o.failure() {
        None => false,
        Some(f) => !wrong_only || f == Failure::WrongMove,
    }
}

/// What is wrong with a game, in words.
fn failure_name(o: &OfflineOutcome) -> &'static str {
    match o.failure() {
        None => "exact",
        Some(Failure::WrongMove) => "wrong move",
        Some(Failure::Stalled) => "stalled",
        Some(Failure::Clock) => "%clk",
        Some(Failure::Result) => "result",
    }
}

/// One timeline, in the tracker's time: what the hands did, what the tracker was fed, what
/// it said; then the truth's plies and what was wrong.
fn print_timeline(header: &str, o: &OfflineOutcome) {
    println!("{header} timeline (tracker ms):");
    let mut lines: Vec<(u64, u8, String)> = Vec::new();
    lines.extend(o.actions.iter().map(|(t, a)| (*t, 0, format!("action {a}"))));
    lines.extend(o.fed.iter().map(|(t, m)| (*t, 1, format!("  fed {m}"))));
    lines.extend(o.events.iter().map(|(t, e)| (*t, 2, format!("    => {e:?}"))));
    lines.sort_by_key(|(t, k, _)| (*t, *k));
    for (t, _, l) in &lines {
        println!("  {t:>9} {l}");
    }
    for line in &o.truth_plies {
        println!("  truth: {line}");
    }
    for w in &o.why {
        println!("    {w}");
    }
}

/// `--scripts PATH`: every hand script of PATH replayed offline, one table row per profile.
fn run_scripts(
    path: &std::path::Path,
    recursive: bool,
    threads: usize,
    opts: &OfflineOptions,
    verbose: bool,
    fail_on_wrong_only: bool,
) -> anyhow::Result<()> {
    use dgt_hil_sim::script;
    let scripts = if path.is_dir() {
        if recursive { script::load_tree(path)? } else { script::load_dir(path)? }
    } else {
        vec![script::load(path)?]
    };
    if scripts.is_empty() {
        bail!("no hand script (*.json) in {}", path.display());
    }
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<ScriptOutcome>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while let Some(sc) = scripts.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let o = replay_script(sc, opts);
                    if let Ok(mut v) = outcomes.lock() {
                        v.push(o);
                    }
                }
            });
        }
    });
    let mut outcomes = outcomes.into_inner().unwrap_or_default();
    outcomes.sort_by(|a, b| (&a.profile, &a.name).cmp(&(&b.profile, &b.name)));
    let mut failed = 0usize;
    for s in &outcomes {
        let o = &s.outcome;
        if !o.passed() {
            failed += usize::from(fails(o, fail_on_wrong_only));
            if verbose && fails(o, fail_on_wrong_only) {
                println!("{} ({}, {}):", s.name, s.profile, failure_name(o));
                for w in o.why.iter().take(8) {
                    println!("    {w}");
                }
            }
        }
        if opts.keep_events {
            print_timeline(&format!("{} ({})", s.name, s.profile), o);
        }
    }
    print!("{}", format_table(&tabulate(&outcomes)));
    println!(
        "{} scripts from {}{}{}{}, {} not exact, {failed} failed{}, {:.1} s on {threads} threads",
        outcomes.len(),
        path.display(),
        if recursive { " and its sub-folders" } else { "" },
        if opts.device { ", the relay box's session" } else { "" },
        opts.bursts.map_or(String::new(), |b| format!(
            ", output in bursts held {}-{} ms (seed {})",
            b.min_ms, b.max_ms, b.seed
        )),
        outcomes.iter().filter(|s| !s.outcome.passed()).count(),
        if fail_on_wrong_only { " (only wrong moves fail)" } else { "" },
        started.elapsed().as_secs_f64()
    );
    if failed > 0 {
        std::process::exit(1);
    }
    Ok(())
}
