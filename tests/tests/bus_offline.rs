//! The jobs of the 12-board chain test (`tests/bus.rs`) replayed offline on a chain
//! ([`dgt_e2e_tests::bus_offline`]): the relay's own poller and sessions in one
//! deterministic loop, under several seeds of the boards' response times and start
//! moments. What the chain test through the relay meets by chance, this meets by seed, in
//! seconds, with every step traceable (`RUST_LOG=dgt_session::bus=trace,dgt_e2e_tests=trace`
//! prints each bus command with the millisecond it went out).

use dgt_e2e_tests::acceptance::{EndPath, Job, livechess, worldcup};
use dgt_e2e_tests::bus_offline::{ChainOptions, replay_chain};
use dgt_hil_sim::hands::Profile;

/// The chain test's jobs: the four shortest complete World Cup games of 20 plies or more
/// in turn, one unplugged now and then (`disconnect`), one with garbage on the line, four
/// under mixed handling, the rest clean.
fn chain_jobs() -> Vec<Job> {
    chain_jobs_as(|k| match k {
        0 => Profile::Disconnect,
        1 => Profile::Garbage,
        k if k < 6 => Profile::Mixed,
        _ => Profile::Clean,
    })
}

/// The chain test's games, every one under `profile`.
fn chain_jobs_with(profile: Profile) -> Vec<Job> {
    chain_jobs_as(|_| profile)
}

/// The chain test's twelve games (the four shortest complete World Cup games of 20 plies or
/// more, in turn), job `k` under `profile(k)`.
fn chain_jobs_as(profile: impl Fn(usize) -> Profile) -> Vec<Job> {
    let wc = worldcup().expect("the World Cup games");
    let mut short: Vec<usize> =
        (0..wc.len()).filter(|&i| wc[i].truncated.is_none() && wc[i].moves.len() >= 20).collect();
    short.sort_by_key(|&i| wc[i].moves.len());
    let games: Vec<usize> = short.into_iter().take(4).collect();
    (0..12)
        .map(|k| {
            let i = games[k % games.len()];
            Job::plan(format!("worldcup#{}/{}", i + 1, k + 1), &wc[i], profile(k), 1, EndPath::Board)
        })
        .collect()
}

/// The two-round chain test's jobs (`twelve_chained_boards_play_two_rounds_exactly`): the
/// LiveChess round clean, then the twelve World Cup games of 30 plies or more, ten of them
/// under mixed handling, two games a board.
fn two_round_jobs() -> Vec<Job> {
    let lc = livechess().expect("the LiveChess round");
    let wc = worldcup().expect("the World Cup games");
    let mut jobs: Vec<Job> = lc
        .iter()
        .enumerate()
        .map(|(i, g)| Job::plan(format!("livechess#{}", i + 1), g, Profile::Clean, 1, EndPath::Board))
        .collect();
    let mut short: Vec<usize> =
        (0..wc.len()).filter(|&i| wc[i].truncated.is_none() && wc[i].moves.len() >= 30).collect();
    short.sort_by_key(|&i| wc[i].moves.len());
    for (k, &i) in short.iter().take(12).enumerate() {
        let profile = match k {
            0 => Profile::Disconnect,
            1 => Profile::Garbage,
            _ => Profile::Mixed,
        };
        jobs.push(Job::plan(format!("worldcup#{}/{}", i + 1, k + 1), &wc[i], profile, 1, EndPath::Board));
    }
    jobs
}

/// Each board's second game set up and its clock set and started between two readings of
/// it: every game exact under seeds 1 and 2 (the first reading of a next game's clock,
/// running before any press, was taken for White's first press in both). Not exact yet (see
/// README): at seeds 1 and 2 an untraceable repetition (worldcup#199/6); at seed 2 a ply
/// missing (worldcup#57/7) and a wrong move (worldcup#271/9, Qf3-c6 for O-O-O).
#[test]
#[ignore = "not exact yet (see README); about a minute in a debug build"]
fn twelve_chained_boards_offline_play_two_rounds_exactly() {
    trace_if_asked();
    let jobs = two_round_jobs();
    let (from, to) = seeds_from_env((1, 2));
    let show = std::env::var("DGT_BUS_SHOW").is_ok();
    let mut failures = Vec::new();
    for seed in from..=to {
        let outcomes = replay_chain(&jobs, 12, &ChainOptions { seed, ..ChainOptions::default() });
        assert_eq!(outcomes.len(), jobs.len(), "seed {seed}: not every game was played");
        for o in outcomes.iter().filter(|o| !o.why.is_empty()) {
            failures.push(format!("seed {seed} {} (board {}): {}", o.label, o.address, o.why.join("; ")));
            if show {
                for (t, e) in &o.effects {
                    println!("  {t} {e}");
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Prints the poller's and sessions' logs when `RUST_LOG` is set.
fn trace_if_asked() {
    if std::env::var("RUST_LOG").is_ok() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .without_time()
            .with_ansi(false)
            .with_target(false)
            .try_init();
    }
}

/// The line seeds `DGT_BUS_SEEDS=FROM-TO` (or one seed) asks for, else `default`.
fn seeds_from_env(default: (u64, u64)) -> (u64, u64) {
    std::env::var("DGT_BUS_SEEDS")
        .ok()
        .and_then(|s| {
            let (a, b) = s.split_once('-').unwrap_or((&s, &s));
            Some((a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?))
        })
        .unwrap_or(default)
}

/// Every game exact (moves and `%clk`) under seeds 1 to 8, or `DGT_BUS_SEEDS=FROM-TO`.
/// `DGT_BUS_SHOW=1` prints the session's effects of a game that is not.
#[test]
#[ignore = "about a minute in a debug build; run with --ignored"]
fn twelve_chained_boards_offline_are_exact_under_many_line_timings() {
    trace_if_asked();
    let (from, to) = seeds_from_env((1, 8));
    let show = std::env::var("DGT_BUS_SHOW").is_ok();
    let jobs = chain_jobs();
    let mut failures = Vec::new();
    for seed in from..=to {
        // Odd seeds start the games as the boards are found, even ones a few seconds on.
        let first_start_ms = if seed % 2 == 1 { (0, 2_000) } else { (4_000, 7_000) };
        let outcomes =
            replay_chain(&jobs, 12, &ChainOptions { seed, first_start_ms, ..ChainOptions::default() });
        assert_eq!(outcomes.len(), jobs.len(), "seed {seed}: not every game was played");
        for o in outcomes.iter().filter(|o| !o.why.is_empty()) {
            failures.push(format!("seed {seed} {} (board {}): {}", o.label, o.address, o.why.join("; ")));
            if show {
                for (t, e) in &o.effects {
                    println!("  {t} {e}");
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The relay frozen for `len` ms from `from` (a loaded machine): the boards play on, and
/// the poller reads seconds of their changes at once. Returns what was not exact.
fn frozen_relay_failures(seed: u64, from: u64, len: u64) -> Vec<String> {
    let first_start_ms = if seed % 2 == 1 { (0, 2_000) } else { (4_000, 7_000) };
    let opts = ChainOptions { first_start_ms, relay_frozen: Some((from, len)), ..ChainOptions::default() };
    failures_with(seed, opts, &format!("relay frozen {from}+{len} ms"))
}

/// The relay frozen for two seconds as the games begin: every game exact, moves and `%clk`.
/// (A game's first press, read with the backlog before the board's reports of its ply,
/// waited for a dump that came behind that backlog and ran out of time; a clock reading
/// taken while the backlog was still let out went out ahead of it, its lever read as
/// presses out of turn: %clk missing or another ply's.)
#[test]
fn twelve_chained_boards_offline_survive_a_relay_frozen_as_games_begin() {
    let mut failures = frozen_relay_failures(1, 5_000, 2_000);
    failures.extend(frozen_relay_failures(1, 5_500, 2_000));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The freeze moved through the first twelve seconds in half-second steps, seeds 1 to 1 or
/// `DGT_BUS_SEEDS=FROM-TO`, freezes of 2,000 ms or `DGT_BUS_FREEZE_MS`, at every step or
/// `DGT_BUS_FROZEN_AT`. Not exact yet (see README): at seed 1, three of the 21 freezes
/// leave a game with `%clk` missing or another ply's; no wrong move.
#[test]
#[ignore = "not exact yet (see README); about a minute and a half in a debug build"]
fn twelve_chained_boards_offline_survive_a_relay_frozen_at_any_moment() {
    let (from, to) = seeds_from_env((1, 1));
    let len = std::env::var("DGT_BUS_FREEZE_MS").ok().and_then(|s| s.parse().ok()).unwrap_or(2_000);
    // `DGT_BUS_FROZEN_AT=MS`: that freeze only (with `DGT_BUS_SHOW=1`, the effects of a
    // game not exact).
    let only: Option<u64> = std::env::var("DGT_BUS_FROZEN_AT").ok().and_then(|s| s.parse().ok());
    let mut failures = Vec::new();
    for seed in from..=to {
        for at in (2_000..=12_000).step_by(500).filter(|at| only.is_none_or(|o| o == *at)) {
            failures.extend(frozen_relay_failures(seed, at, len));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The games of the chain test under one line seed with `opts`; what was not exact.
fn failures_with(seed: u64, opts: ChainOptions, what: &str) -> Vec<String> {
    trace_if_asked();
    let jobs = chain_jobs();
    let outcomes = replay_chain(&jobs, 12, &ChainOptions { seed, ..opts });
    assert_eq!(outcomes.len(), jobs.len(), "seed {seed}: not every game was played");
    let show = std::env::var("DGT_BUS_SHOW").is_ok();
    outcomes
        .iter()
        .filter(|o| !o.why.is_empty())
        .inspect(|o| {
            if show {
                for (t, e) in &o.effects {
                    println!("  {t} {e}");
                }
            }
        })
        .map(|o| format!("seed {seed}, {what}: {} (board {}): {}", o.label, o.address, o.why.join("; ")))
        .collect()
}

/// Issue 34: a change the board's log missed (a lost report: the simulator's dropped-update
/// fault on every board, which on a chain drops the event from the log while dumps stay
/// right). The session's dump request after a press, and a request repeated with nothing
/// changed, are read from the board, which puts the log right; so is a request answered
/// while the plies after a press are let out (before, every such answer repeated the log,
/// and a board stuck on the lost change stayed so to the game's end). A press waits for its
/// ply while the board is unexplained (it expired first, and the search for the plies the
/// dump shows asked for too few). Over seeds 1-24, 44 of 288 games were not exact, none
/// now. Asserts every game exact at seeds 1 and 21 (at 1 a board stayed stuck
/// without the first, at 21 without the second), or at each seed of
/// `DGT_BUS_SEEDS=FROM-TO`.
#[test]
fn twelve_chained_boards_offline_recover_from_changes_their_logs_missed() {
    trace_if_asked();
    let seeds: Vec<u64> = match std::env::var("DGT_BUS_SEEDS") {
        Ok(_) => {
            let (from, to) = seeds_from_env((1, 1));
            (from..=to).collect()
        }
        Err(_) => vec![1, 21],
    };
    let jobs = chain_jobs_with(Profile::DroppedUpdates);
    let show = std::env::var("DGT_BUS_SHOW").is_ok();
    let mut failures = Vec::new();
    for seed in seeds {
        let outcomes = replay_chain(&jobs, 12, &ChainOptions { seed, ..ChainOptions::default() });
        for o in outcomes.iter().filter(|o| !o.why.is_empty()) {
            failures.push(format!("seed {seed} {} (board {}): {}", o.label, o.address, o.why.join("; ")));
            if show {
                for (t, e) in &o.effects {
                    println!("  {t} {e}");
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Issue 34: under the changes the logs missed (as above), what is published is never a
/// wrong move, though a game may stall. At these line seeds the relay confirmed `c4c5`
/// for `cxd5` (the e6 pawn's lift lost from the log of `cxd5 exd5`: a line searched deep
/// passed over White's pawn reported on d5, then Black's set down there). Missing plies
/// and `%clk` are the test above's.
#[test]
fn twelve_chained_boards_offline_publish_no_wrong_move_from_logs_that_missed_changes() {
    trace_if_asked();
    let jobs = chain_jobs_with(Profile::DroppedUpdates);
    let mut wrong = Vec::new();
    for seed in [15, 16, 24] {
        let outcomes = replay_chain(&jobs, 12, &ChainOptions { seed, ..ChainOptions::default() });
        assert_eq!(outcomes.len(), jobs.len(), "seed {seed}: not every game was played");
        for o in &outcomes {
            let published_wrong: Vec<&String> = o.why.iter().filter(|w| w.contains(": confirmed ")).collect();
            if !published_wrong.is_empty() {
                wrong.push(format!("seed {seed} {} (board {}): {published_wrong:?}", o.label, o.address));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Issue 34: the games began before the relay came up (every board had played for 3 to 5 s,
/// unread: a few moves): each is relayed from its first move, with the `%clk` of every press
/// its board logged, from the board's log (its first changes carry everything since it was
/// powered). (A first changes reply read as a repeat was taken for the board's log and the
/// next one, the moves made since, was not sent on; the press the first clock reading showed
/// before the log brought it was taken for the clock's state, not a press: `%clk` missing.)
#[test]
fn twelve_chained_boards_offline_relay_games_begun_before_the_relay() {
    let opts = ChainOptions { first_start_ms: (0, 2_000), relay_from_ms: 5_000, ..ChainOptions::default() };
    let failures = failures_with(1, opts, "relay up at 5 s");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Issue 34: the relay killed during the round (at 15 s, the games under way, thinking time
/// fast-forwarded 60 times) and started again on its journals 4 s later, the boards playing
/// on: every game exact (the moves made meanwhile come from each board's log since its start
/// tag, `SEND_FROM_START`).
#[test]
fn twelve_chained_boards_offline_lose_nothing_when_the_relay_restarts() {
    let opts = ChainOptions {
        speed: 60.0,
        first_start_ms: (0, 2_000),
        relay_restart: Some((15_000, 4_000)),
        ..ChainOptions::default()
    };
    let failures = failures_with(1, opts, "relay restarted at 15 s");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The two above under seeds 1 to 6 (or `DGT_BUS_SEEDS`), every game exact (10 s in a
/// release build, 85 s in a debug build on a loaded machine).
#[test]
fn twelve_chained_boards_offline_join_and_restart_are_exact_under_many_line_timings() {
    let (from, to) = seeds_from_env((1, 6));
    let join = ChainOptions { first_start_ms: (0, 2_000), relay_from_ms: 5_000, ..ChainOptions::default() };
    let restart = ChainOptions {
        speed: 60.0,
        first_start_ms: (0, 2_000),
        relay_restart: Some((15_000, 4_000)),
        ..ChainOptions::default()
    };
    let mut failures = Vec::new();
    for seed in from..=to {
        failures.extend(failures_with(seed, join, "relay up at 5 s"));
        failures.extend(failures_with(seed, restart, "relay restarted at 15 s"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
