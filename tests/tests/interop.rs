//! Interop: PGN the relay published, read back by python-chess, pgn-extract and chess.js
//! (`tests/interop/`). Three quick games go through the real relay on simulated boards (one
//! of the LiveChess round and one of the World Cup ended on the board, one World Cup game
//! ended by the operator); every reader must load every game of the per-game and the
//! per-round PGN with the relay's moves, `%clk` and `%emt`.
//!
//! Whether the readers are installed is known only when the test runs, so this target has
//! its own small harness (`harness = false` in `tests/Cargo.toml`) that prints libtest's
//! lines itself:
//! - readers installed: the check runs, `ok` or `FAILED`;
//! - a reader missing and `DGT_REQUIRE_INTEROP=1` (`.ci/run` sets it): `FAILED`, naming
//!   `bash tests/interop/install.sh`;
//! - a reader missing otherwise: `ignored`, with the reason, in `cargo test`'s output.
//!
//! It understands the libtest options cargo and its users pass: a name filter, `--exact`,
//! `--skip`, `--ignored`, `--include-ignored` (which run it even without the readers, so it
//! fails), `--list`; the others are accepted and have no effect.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use dgt_e2e_tests::acceptance::{self, EndPath, Job, RunOptions, livechess, worldcup};
use dgt_e2e_tests::feed::FeedMove;
use dgt_e2e_tests::interop::{self, INSTALL, Reader};
use dgt_hil_sim::hands::Profile;
use dgt_hil_sim::pgn::SourceGame;
use shakmaty::Position;

const NAME: &str = "interop_readers_read_back_the_relay_pgn";

/// The command line, as far as this one test cares.
struct Args {
    list: bool,
    ignored_only: bool,
    include_ignored: bool,
    exact: bool,
    show_output: bool,
    filters: Vec<String>,
    skips: Vec<String>,
}

fn parse_args() -> Args {
    let mut a = Args {
        list: false,
        ignored_only: false,
        include_ignored: false,
        exact: false,
        show_output: false,
        filters: Vec::new(),
        skips: Vec::new(),
    };
    // libtest options that take a value as the next argument.
    const WITH_VALUE: [&str; 6] =
        ["--test-threads", "--format", "--color", "--logfile", "--shuffle-seed", "-Z"];
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--list" => a.list = true,
            "--ignored" => a.ignored_only = true,
            "--include-ignored" => a.include_ignored = true,
            "--exact" => a.exact = true,
            "--nocapture" | "--no-capture" | "--show-output" => a.show_output = true,
            "--skip" => a.skips.extend(args.next()),
            s if s.starts_with("--skip=") => a.skips.push(s["--skip=".len()..].to_owned()),
            s if WITH_VALUE.contains(&s) => {
                args.next();
            }
            s if s.starts_with('-') => {}
            s => a.filters.push(s.to_owned()),
        }
    }
    a
}

impl Args {
    /// True when the name filters and `--skip` leave the test in.
    fn selects(&self) -> bool {
        let matches = |f: &String| if self.exact { f == NAME } else { NAME.contains(f.as_str()) };
        (self.filters.is_empty() || self.filters.iter().any(matches))
            && !self.skips.iter().any(|s| if self.exact { s == NAME } else { NAME.contains(s.as_str()) })
    }
}

fn main() -> ExitCode {
    let args = parse_args();
    let missing = Reader::missing();
    let names: Vec<&str> = missing.iter().map(|r| r.name()).collect();
    // Ignored when a reader is missing, unless they are required.
    let ignored = !missing.is_empty() && !interop::required();
    let selected = args.selects() && (!args.ignored_only || ignored);
    if args.list {
        if selected {
            println!("{NAME}: test");
        }
        return ExitCode::SUCCESS;
    }
    let start = Instant::now();
    let summary = |passed: u32, failed: u32, ign: u32, filtered: u32| {
        format!(
            "test result: {}. {passed} passed; {failed} failed; {ign} ignored; 0 measured; {filtered} filtered out; \
             finished in {:.2}s",
            if failed == 0 { "ok" } else { "FAILED" },
            start.elapsed().as_secs_f64()
        )
    };
    if !selected {
        println!("\nrunning 0 tests\n\n{}\n", summary(0, 0, 0, 1));
        return ExitCode::SUCCESS;
    }
    println!("\nrunning 1 test");
    if ignored && !args.ignored_only && !args.include_ignored {
        println!("test {NAME} ... ignored, not installed: {} ({INSTALL} installs them)", names.join(", "));
        println!("\n{}\n", summary(0, 0, 1, 0));
        return ExitCode::SUCCESS;
    }
    let outcome = if missing.is_empty() {
        run()
    } else {
        Err(anyhow::anyhow!(
            "interop readers not installed: {}{}; run `{INSTALL}`",
            names.join(", "),
            if interop::required() { " and DGT_REQUIRE_INTEROP is set" } else { "" }
        ))
    };
    match outcome {
        Ok(lines) => {
            println!("test {NAME} ... ok");
            if args.show_output {
                for l in lines {
                    println!("    {l}");
                }
            }
            println!("\n{}\n", summary(1, 0, 0, 0));
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("test {NAME} ... FAILED\n\nfailures:\n\n---- {NAME} stdout ----\n{e:#}\n");
            println!("failures:\n    {NAME}\n\n{}\n", summary(0, 1, 0, 0));
            ExitCode::from(101)
        }
    }
}

/// Plays the three games through the relay and runs every reader on what it published;
/// returns the readers' report lines.
fn run() -> anyhow::Result<Vec<String>> {
    let relay_bin = dgt_e2e_tests::relay::relay_binary(false)?;
    let (lc, wc) = (livechess()?, worldcup()?);
    // Quick games of 16 plies or more. A game's length here is mostly its plies (hands are
    // fast-forwarded little), plus the time its players took, fast-forwarded 150 times.
    let quick = |g: &SourceGame| {
        g.moves.iter().map(|m| u64::from(m.emt_s.unwrap_or(10))).sum::<u64>() / 150 + g.moves.len() as u64
    };
    let quickest = |games: &[SourceGame], ok: &dyn Fn(usize) -> bool| {
        (0..games.len()).filter(|&i| games[i].moves.len() >= 16 && ok(i)).min_by_key(|&i| quick(&games[i]))
    };
    let round = quickest(&lc, &|_| true).context("no game in the LiveChess round")?;
    // A decisive game that did not end in mate: the loser stops the clock and the operator
    // sets the result.
    let resigned = quickest(&wc, &|i| {
        matches!(wc[i].result.as_str(), "1-0" | "0-1") && !wc[i].final_position().is_checkmate()
    })
    .context("no resigned game in the World Cup file")?;
    let other =
        quickest(&wc, &|i| i != resigned && wc[i].result != "*").context("no other World Cup game")?;
    let jobs = vec![
        Job::plan(format!("livechess#{round}"), &lc[round], Profile::Clean, 1, EndPath::Board),
        Job::plan(format!("worldcup#{resigned}"), &wc[resigned], Profile::Clean, 1, EndPath::Operator),
        Job::plan(format!("worldcup#{other}"), &wc[other], Profile::Clean, 1, EndPath::Board),
    ];
    let dir = acceptance::work_dir("interop");
    let opts = RunOptions {
        boards: jobs.len(),
        speed: 150.0,
        hand_speed: 3.0,
        dir: dir.join("games"),
        relay_bin,
        progress: None,
        first_serial: 40001,
        bursts: None,
    };
    let result = acceptance::run(jobs, &opts)?;
    let mut expected: BTreeMap<String, Vec<FeedMove>> = BTreeMap::new();
    let mut per_game = String::new();
    let mut problems = Vec::new();
    for o in &result.outcomes {
        let job = &result.jobs[o.job];
        let check = acceptance::check(job, o);
        if !check.exact() {
            problems.push(format!("{}: not exact: {}", job.label, check.why.join("; ")));
        }
        match (o.board, &o.pgn) {
            (Some(b), Some(pgn)) => {
                expected.insert(format!("{}.{b}", o.round), o.feed.moves.clone());
                per_game.push_str(pgn);
                if !pgn.ends_with("\n\n") {
                    per_game.push('\n');
                }
            }
            _ => problems.push(format!("{}: the relay published no PGN for it", job.label)),
        }
    }
    if !problems.is_empty() {
        bail!("{}\nrelay log tail:\n{}", problems.join("\n"), result.log_tail);
    }
    let rounds: String = result.round_pgns.values().map(String::as_str).collect::<Vec<_>>().join("\n");
    let published = dir.join("published");
    let files = vec![
        acceptance::write_file(&published, "per-game.pgn", &per_game)?,
        acceptance::write_file(&published, "per-round.pgn", &rounds)?,
    ];
    let report = interop::check(&files, &expected);
    if !report.failures.is_empty() {
        bail!("{}\n(published PGN kept in {})", report.failures.join("\n"), published.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
    let mut lines = report.lines;
    let games: Vec<String> =
        result.jobs.iter().map(|j| format!("{} ({} plies)", j.label, j.truth().san_moves().len())).collect();
    lines.push(format!("{} through the relay in {:.1} s", games.join(", "), result.wall.as_secs_f64()));
    Ok(lines)
}
