//! A relay box's traced run replayed off the device: the firmware built with its `trace`
//! feature writes every call its loop makes into the session to its console (the box test
//! keeps it as `box-N-console.log` in its work folder when a run fails); this replays it
//! through the same device code and prints what the device told the host, at the device's
//! milliseconds, then the confirmed moves of each game.
//!
//! ```text
//! cargo run --release -p dgt-e2e-tests --bin box_replay -- TRACE [--records]
//! ```
//!
//! `--records`: every record (moves, retractions, alerts, clocks), not only the games.

use anyhow::Context;
use dgt_bridge::Up;
use dgt_e2e_tests::firmware::{confirmed_games, replay_trace};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().context("usage: box_replay TRACE [--records]")?;
    let records = args.iter().any(|a| a == "--records");
    let trace = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    let ups = replay_trace(&trace)?;
    if records {
        for (at, up) in &ups {
            if let Up::Record { seq, record } = up {
                println!("{at:>8} ms #{seq} {record:?}");
            }
        }
    }
    for (i, g) in confirmed_games(ups.iter().map(|(_, u)| u)).iter().enumerate() {
        println!("game {}: {} plies confirmed: {}", i + 1, g.len(), g.join(" "));
    }
    Ok(())
}
