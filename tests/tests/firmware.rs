//! The relay box end to end (see `dgt_e2e_tests::firmware`): simulated boards, each wired
//! to the firmware booted in `qemu-system-arm -M mps2-an386`, whose bridge reaches the real
//! relay (`dgt-relay run --bridge`); the relay killed and restarted mid-game, garbage on
//! every bridge both ways. Every game must come out exact (moves, `%clk`, `%emt`, result,
//! per-game PGN; no ghost in any relay instance), the garbage counted on both ends.
//!
//! Needs `qemu-system-arm` and the `thumbv7em-none-eabihf` target (`tests/build.rs` sets
//! `cfg(qemu)` when both are here; `.ci/run` installs them); the hand scripts also need the
//! shared corpus. The firmware is built (release, with its `trace` feature) by the test;
//! each box's run is replayed off the device from its console and the replay's outcome is
//! printed with the report (`dgt_e2e_tests::firmware::replay_trace`).

use std::sync::Mutex;
use std::time::Duration;

use dgt_e2e_tests::acceptance::{EndPath, Job, corpus_dir, work_dir, worldcup};
use dgt_e2e_tests::firmware::{BoxRunOptions, BoxRunReport, box_run, qemu_binary, traced_firmware_elf};
use dgt_hil_sim::hands::Profile;

/// One run at a time: each boots a QEMU per board beside a relay and the simulators.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn options(
    name: &str,
    speed: f64,
    hand_speed: f64,
    kills: Vec<(f64, Duration)>,
    first_serial: u32,
) -> BoxRunOptions {
    let relay_bin = dgt_e2e_tests::relay::relay_binary(false).unwrap_or_else(|e| panic!("{e:#}"));
    let qemu = qemu_binary().unwrap_or_else(|| panic!("qemu-system-arm is not on the PATH"));
    let firmware = traced_firmware_elf().unwrap_or_else(|e| panic!("{e:#}"));
    BoxRunOptions {
        speed,
        hand_speed,
        kills,
        garbage_every: Duration::from_secs(9),
        dir: work_dir(name),
        relay_bin,
        qemu,
        firmware,
        first_serial,
    }
}

fn assert_exact(report: &BoxRunReport, boards: usize) {
    println!("{report}");
    assert!(report.failures.is_empty(), "{report}");
    assert_eq!(report.checks.len(), boards, "{report}");
    assert!(report.garbage_sent > 0, "garbage was put on the bridges: {report}");
    for (i, s) in report.statuses.iter().enumerate() {
        let s = s.unwrap_or_else(|| panic!("box {i} sent no status: {report}"));
        assert!(s.bad_frames > 0, "box {i} counted the garbage it was sent: {report}");
        assert!(s.heap_peak > 0 && s.stack_peak > 0, "box {i} measures its memory: {report}");
        assert_eq!(s.uart_lost, 0, "box {i} lost no byte its UARTs received: {report}");
    }
    for (serial, alerts) in &report.bridge_alerts {
        assert!(
            alerts.iter().any(|m| m.contains("damaged frame")),
            "the relay counted the garbage on board {serial}'s bridge: {report}"
        );
    }
}

/// Three World Cup games under three noise profiles (thinking at 40x, hands at 5x), the
/// relay killed twice.
#[test]
#[cfg_attr(
    not(qemu),
    ignore = "needs qemu-system-arm and the thumbv7em-none-eabihf target (.ci/run installs both)"
)]
fn corpus_games_through_relay_boxes_survive_relay_kills_and_garbage() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let games = worldcup().unwrap_or_else(|e| panic!("{e:#}"));
    let jobs: Vec<Job> = [(0usize, Profile::Clean), (1, Profile::Takeback), (3, Profile::Garbage)]
        .into_iter()
        .map(|(i, p)| Job::plan(format!("worldcup#{i} {p:?}"), &games[i], p, 7, EndPath::Board))
        .collect();
    let kills = vec![(15.0, Duration::from_secs(3)), (32.0, Duration::from_millis(500))];
    let opts = options("firmware-games", 40.0, 5.0, kills, 51_001);
    let report = box_run(jobs, &opts).unwrap_or_else(|e| panic!("the run could not run: {e:#}"));
    assert_exact(&report, 3);
    let _ = std::fs::remove_dir_all(&opts.dir);
}

/// Three hand scripts of the independent emulator at their own pace, the relay killed once.
#[test]
#[cfg_attr(
    not(all(qemu, shared_corpus)),
    ignore = "needs qemu-system-arm, the thumbv7em-none-eabihf target (.ci/run installs both) and ../shared/corpus"
)]
fn hand_scripts_through_relay_boxes_are_exact() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = corpus_dir().join("hand-scripts");
    let jobs: Vec<Job> = ["mixed-rotated-s1-g002", "takeback-s1-g015", "dropped-s1-g011"]
        .into_iter()
        .map(|name| {
            let script = dgt_hil_sim::script::load(&dir.join(format!("{name}.json")))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            dgt_e2e_tests::scripts::job(&script)
        })
        .collect();
    let opts = options("firmware-scripts", 1.0, 1.0, vec![(9.0, Duration::from_secs(2))], 52_001);
    let report = box_run(jobs, &opts).unwrap_or_else(|e| panic!("the run could not run: {e:#}"));
    assert_exact(&report, 3);
    let _ = std::fs::remove_dir_all(&opts.dir);
}
