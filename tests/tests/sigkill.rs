//! The relay killed with SIGKILL eight times under three live games on simulated boards
//! (World Cup blitz games at 10x, hands at 3x), restarted each time on the same data folder:
//! every game must end exact (moves, `%clk` within 1 s, `%emt`, result, per-game PGN), and
//! a last restart must read the same games back from the journals. See
//! `dgt_e2e_tests::faults`.

use std::time::Duration;

use dgt_e2e_tests::acceptance::{EndPath, Job, work_dir, worldcup};
use dgt_e2e_tests::faults::{KillRunOptions, kill_run};
use dgt_hil_sim::hands::Profile;

#[test]
fn eight_sigkills_under_live_games_lose_and_change_nothing() {
    let relay_bin = match dgt_e2e_tests::relay::relay_binary(false) {
        Ok(b) => b,
        Err(e) => panic!("{e:#}"),
    };
    let seed: u64 = std::env::var("DGT_KILL_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let games = worldcup().unwrap_or_else(|e| panic!("{e:#}"));
    let jobs: Vec<Job> = [0usize, 1, 3]
        .into_iter()
        .map(|i| Job::plan(format!("worldcup#{i}"), &games[i], Profile::Clean, seed, EndPath::Board))
        .collect();
    let opts = KillRunOptions {
        speed: 10.0,
        hand_speed: 3.0,
        kills: 8,
        seed,
        max_down: Duration::from_secs(15),
        dir: work_dir("sigkill"),
        relay_bin,
        first_serial: 31_001,
    };
    let report = match kill_run(jobs, &opts) {
        Ok(r) => r,
        Err(e) => panic!("the kill run could not run: {e:#}"),
    };
    println!("{report}");
    assert!(report.failures.is_empty(), "seed {seed}\n{report}");
    assert_eq!(report.survived, opts.kills, "{report}");
    let _ = std::fs::remove_dir_all(&opts.dir);
}
