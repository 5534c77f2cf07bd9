//! A relay built for another platform, run under its emulator, relaying simulated games:
//! `platform --relay RUNNER [--games N] [--speed X]`.
//!
//! RUNNER is an executable that starts the relay with the arguments it is given (e.g.
//! `contrib/cross/qemu-relay`, which runs the ARM64 build under `qemu-aarch64`, or
//! `contrib/cross/wine-relay`, which maps each `--port PATH` to a Wine COM port). The
//! simulated boards run here, each on its own pty; the relay is given them with `--port`.
//! The N shortest World Cup games (1 by default) are played cleanly at thinking speed X
//! (150), and every move, `%clk` and result the relay publishes is checked against the
//! game's ground truth, as in the acceptance sweep. `--no-clean-exit` accepts a relay that
//! does not exit 0 on SIGTERM (Wine ends a Windows program on SIGTERM without its console
//! handler). Exit status 1 on any failure.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use dgt_e2e_tests::acceptance::{EndPath, Job, RunOptions, format_table, run, tabulate, work_dir, worldcup};
use dgt_hil_sim::hands::Profile;

fn main() -> anyhow::Result<()> {
    let mut relay: Option<PathBuf> = None;
    let mut games = 1usize;
    let mut speed = 150.0;
    let mut clean_exit = true;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--relay" => relay = Some(val()?.into()),
            "--games" => games = val()?.parse()?,
            "--speed" => speed = val()?.parse()?,
            "--no-clean-exit" => clean_exit = false,
            "-h" | "--help" => {
                println!("{}", include_str!("platform.rs").lines().take(12).collect::<Vec<_>>().join("\n"));
                return Ok(());
            }
            other => bail!("unknown argument {other}"),
        }
    }
    let relay = relay.context("--relay RUNNER is needed")?;
    let wc = worldcup()?;
    let mut by_plies: Vec<usize> = (0..wc.len()).filter(|&i| wc[i].moves.len() >= 20).collect();
    by_plies.sort_by_key(|&i| wc[i].moves.len());
    let jobs: Vec<Job> = by_plies
        .iter()
        .take(games.max(1))
        .map(|&i| Job::plan(format!("worldcup#{i}"), &wc[i], Profile::Clean, i as u64, EndPath::Board))
        .collect();
    let name = relay.file_name().map_or_else(|| "relay".into(), |n| n.to_string_lossy().into_owned());
    let opts = RunOptions {
        boards: jobs.len(),
        speed,
        hand_speed: 1.0,
        dir: work_dir(&format!("platform-{name}")),
        relay_bin: relay,
        progress: Some(Duration::from_secs(15)),
        first_serial: 50001,
        bursts: None,
    };
    eprintln!(
        "platform: {} game(s) ({}) through {}",
        jobs.len(),
        jobs.iter().map(|j| j.label.as_str()).collect::<Vec<_>>().join(", "),
        opts.relay_bin.display()
    );
    let mut result = run(jobs, &opts)?;
    let exited_cleanly = result.clean_exit;
    if !clean_exit {
        result.clean_exit = true;
    }
    let (rows, failures, _) = tabulate(&result, &[]);
    println!("{}", format_table(&rows));
    println!(
        "{:.1} s; the relay {} on SIGTERM",
        result.wall.as_secs_f64(),
        if exited_cleanly { "exited cleanly" } else { "did not exit 0" }
    );
    if failures.is_empty() {
        let _ = std::fs::remove_dir_all(&opts.dir);
        return Ok(());
    }
    for f in &failures {
        println!("FAIL {f}");
    }
    println!("relay log tail:\n{}\nworking folder kept: {}", result.log_tail, opts.dir.display());
    std::process::exit(1);
}
