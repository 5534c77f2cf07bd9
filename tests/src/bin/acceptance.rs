//! The acceptance sweep: `cargo run --release -p dgt-e2e-tests --bin acceptance -- --all`.
//!
//! Options: `--all` (the full sweep; default is the fast subset), `--boards N` (48),
//! `--speed X` (150, thinking time), `--hand-speed X` (1, a move's hand sequence: human speed; at 3 the stillness after a move falls to about the tracker's settle time), `--seed S` (1; `--seed today` rotates the seeded subsets and
//! noise daily), `--subset K` (games per other noise profile, 12), `--profiles a,b`,
//! `--capture-step-ms MS` (20), `--games worldcup#239,...` (only these games of the sweep,
//! e.g. with `--all --profiles mixed`), `--keep` (keep the working folder; it holds the
//! relay's log and `games/feed-frames.log`, every feed frame with its arrival time).
//! `--scripts DIR --slice K`: instead, K hand scripts of DIR and its sub-folders (the
//! independent emulator's, `../shared/corpus/hand-scripts`), chosen by the seed, each on its
//! own board at its own pace. `--bursts MAX_MS[,SEED[,MIN_MS]]`: each board's output reaches
//! the relay late and in bursts, as over Bluetooth (held MIN_MS, 20, to MAX_MS of real time
//! after each burst's first byte; see `dgt-sim --bursts`). Exit status 1 on any failure.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use dgt_e2e_tests::suite::{SuiteOptions, run, run_scripts};
use dgt_hil_sim::hands::Profile;
use dgt_hil_sim::transport::Bursts;

fn main() -> anyhow::Result<()> {
    let mut opts = SuiteOptions {
        full: false,
        boards: 48,
        speed: 150.0,
        hand_speed: 1.0,
        seed: 1,
        subset: 12,
        capture_step: Duration::from_millis(20),
        relay_bin: PathBuf::new(),
        dir: dgt_e2e_tests::acceptance::work_dir("acceptance"),
        only: Vec::new(),
        games: Vec::new(),
        progress: true,
        known: Vec::new(),
        bursts: None,
    };
    let mut keep = false;
    let mut scripts: Option<PathBuf> = None;
    let mut slice = 16usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--all" => opts.full = true,
            "--fast" => opts.full = false,
            "--boards" => opts.boards = val()?.parse()?,
            "--speed" => opts.speed = val()?.parse()?,
            "--hand-speed" => opts.hand_speed = val()?.parse()?,
            "--subset" => opts.subset = val()?.parse()?,
            "--capture-step-ms" => opts.capture_step = Duration::from_millis(val()?.parse()?),
            "--seed" => {
                let v = val()?;
                opts.seed = if v == "today" {
                    let days = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs() / 86_400);
                    eprintln!("seed {days} (days since 1970)");
                    days
                } else {
                    v.parse()?
                };
            }
            "--profiles" => {
                opts.only = val()?.split(',').map(Profile::parse).collect::<Result<_, _>>()?;
            }
            "--games" => {
                opts.games = val()?.split(',').filter(|g| !g.is_empty()).map(str::to_owned).collect();
            }
            "--keep" => keep = true,
            "--scripts" => scripts = Some(val()?.into()),
            "--slice" => slice = val()?.parse()?,
            "--bursts" => {
                let v = val()?;
                opts.bursts = Some(Bursts::parse(&v).map_err(anyhow::Error::msg)?);
            }
            "-h" | "--help" => {
                println!("{}", include_str!("acceptance.rs").lines().take(15).collect::<Vec<_>>().join("\n"));
                return Ok(());
            }
            other => bail!("unknown argument {other}"),
        }
    }
    opts.relay_bin = dgt_e2e_tests::relay::relay_binary(true)?;
    if let Some(dir) = &scripts {
        eprintln!("acceptance: {slice} hand scripts of {}, seed {}", dir.display(), opts.seed);
    } else {
        eprintln!(
            "acceptance: {} sweep, {} boards at x{} (hands x{}), seed {}, relay {}",
            if opts.full { "full" } else { "fast" },
            opts.boards,
            opts.speed,
            opts.hand_speed,
            opts.seed,
            opts.relay_bin.display()
        );
    }
    let report = match &scripts {
        Some(dir) => run_scripts(dir, slice, &opts)?,
        None => run(&opts)?,
    };
    println!("{report}");
    if keep {
        println!("working folder kept: {}", opts.dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&opts.dir);
    }
    if !report.failures.is_empty() {
        std::process::exit(1);
    }
    Ok(())
}
