//! Scale measurement: N boards replaying corpus games at once, each read by a host thread
//! that decodes everything; reports the CPU time of the simulator's board threads, the
//! process memory, and the traffic.
//!
//! ```text
//! cargo run --release -p dgt-hil-sim --example scale -- [boards=200] [speed=20] [seconds=30] [profile=mixed]
//! ```

use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dgt_hil_sim::firmware::BoardConfig;
use dgt_hil_sim::hands::{PlanOptions, Profile, plan_game};
use dgt_hil_sim::pgn::read_games;
use dgt_hil_sim::pty::set_raw_9600;
use dgt_hil_sim::{SimBoard, SimConfig, StartPolicy};
use dgt_protocol::{Decoded, Decoder};
use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::resource::{UsageWho, getrusage};

fn arg<T: std::str::FromStr>(i: usize, default: T) -> T {
    std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

fn vm_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn secs(u: &nix::sys::resource::Usage) -> f64 {
    let (x, y) = (u.user_time(), u.system_time());
    x.tv_sec() as f64 + x.tv_usec() as f64 / 1e6 + y.tv_sec() as f64 + y.tv_usec() as f64 / 1e6
}

/// CPU seconds of the calling thread.
fn thread_cpu() -> f64 {
    getrusage(UsageWho::RUSAGE_THREAD).map(|u| secs(&u)).unwrap_or(0.0)
}

/// CPU seconds (user + system) of this process's threads whose name starts with `prefix`.
fn thread_cpu_s(prefix: &str) -> f64 {
    let ticks = 100.0; // USER_HZ on Linux
    let mut total = 0u64;
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0.0 };
    for task in tasks.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.starts_with(prefix) {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // Fields after the ")" of the command: state is field 3; utime 14, stime 15.
        if let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) {
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ut: u64 = f.get(11).and_then(|x| x.parse().ok()).unwrap_or(0);
            let st: u64 = f.get(12).and_then(|x| x.parse().ok()).unwrap_or(0);
            total += ut + st;
        }
    }
    total as f64 / ticks
}

fn main() {
    let boards: usize = arg(1, 200);
    let speed: f64 = arg(2, 20.0);
    let seconds: u64 = arg(3, 30);
    let profile = Profile::parse(&arg(4, "mixed".to_string())).unwrap_or(Profile::Mixed);
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let corpus = here.canonicalize().unwrap_or(here).join("../tests/data/worldcup2025-dgt-livechess.pgn");
    let games = match read_games(&corpus) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("{e}");
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("dgt-sim-scale-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("{e}");
        return;
    }
    let rss0 = vm_rss_kib();
    let t_spawn = Instant::now();
    let mut sims = Vec::with_capacity(boards);
    for i in 0..boards {
        let config = SimConfig {
            board: BoardConfig::with_serial(i as u32 + 1),
            link: Some(dir.join(format!("board-{:03}", i + 1))),
            speed,
            ..SimConfig::default()
        };
        match SimBoard::spawn(config) {
            Ok(b) => sims.push(b),
            Err(e) => {
                eprintln!("board {}: {e}", i + 1);
                return;
            }
        }
    }
    let spawn_ms = t_spawn.elapsed().as_millis();
    let rss_spawned = vm_rss_kib();

    // The host: one thread polling every port, decoding every byte.
    let stop = Arc::new(AtomicBool::new(false));
    let messages = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let paths: Vec<PathBuf> = sims.iter().map(|b| b.path()).collect();
    let host = {
        let (stop, messages, bytes) = (Arc::clone(&stop), Arc::clone(&messages), Arc::clone(&bytes));
        std::thread::Builder::new()
            .name("host".into())
            .spawn(move || {
                let open = |p: &PathBuf| {
                    let mut f = std::fs::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .custom_flags((OFlag::O_NOCTTY | OFlag::O_NONBLOCK).bits())
                        .open(p)
                        .ok()?;
                    set_raw_9600(&f).ok()?;
                    std::io::Write::write_all(&mut f, &[0x4B, 0x42]).ok()?;
                    Some(f)
                };
                let mut ports: Vec<(Option<std::fs::File>, Decoder<256>)> =
                    paths.iter().map(|p| (open(p), Decoder::new())).collect();
                let mut buf = [0u8; 4096];
                let mut last_retry = Instant::now();
                let cpu_start = thread_cpu();
                while !stop.load(Ordering::Relaxed) {
                    if last_retry.elapsed() > Duration::from_millis(200) {
                        // Reconnect boards that were unplugged, as a host would.
                        last_retry = Instant::now();
                        for ((f, dec), p) in ports.iter_mut().zip(&paths) {
                            if f.is_none() {
                                *f = open(p);
                                dec.reset();
                            }
                        }
                    }
                    let open_ports: Vec<usize> = (0..ports.len()).filter(|i| ports[*i].0.is_some()).collect();
                    let mut fds: Vec<PollFd> = open_ports
                        .iter()
                        .filter_map(|i| {
                            ports[*i].0.as_ref().map(|f| PollFd::new(f.as_fd(), PollFlags::POLLIN))
                        })
                        .collect();
                    let _ = poll(&mut fds, PollTimeout::from(100u16));
                    let events: Vec<PollFlags> =
                        fds.iter().map(|f| f.revents().unwrap_or(PollFlags::empty())).collect();
                    drop(fds);
                    for (i, ev) in open_ports.into_iter().zip(events) {
                        let (f, dec) = &mut ports[i];
                        let mut gone = ev.intersects(PollFlags::POLLHUP | PollFlags::POLLERR);
                        if ev.contains(PollFlags::POLLIN) {
                            while let Some(file) = f.as_mut() {
                                match std::io::Read::read(file, &mut buf) {
                                    Ok(0) => {
                                        gone = true;
                                        break;
                                    }
                                    Ok(n) => {
                                        bytes.fetch_add(n as u64, Ordering::Relaxed);
                                        dec.feed(&buf[..n], |d| {
                                            if matches!(d, Decoded::Message(_)) {
                                                messages.fetch_add(1, Ordering::Relaxed);
                                            }
                                        });
                                    }
                                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                                    Err(_) => {
                                        gone = true;
                                        break;
                                    }
                                }
                            }
                        }
                        if gone {
                            *f = None;
                        }
                    }
                }
                thread_cpu() - cpu_start
            })
            .ok()
    };

    let mut handles = Vec::new();
    for (i, b) in sims.iter().enumerate() {
        let game = &games[(i * 7) % games.len()];
        let opts = PlanOptions { profile, seed: i as u64, ..PlanOptions::default() };
        if let Ok(h) = b.start_scenario(plan_game(game, &opts), StartPolicy::WhenHostListens) {
            handles.push(h);
        }
    }
    let cpu0 = thread_cpu_s("sim ");
    let usage0 = getrusage(UsageWho::RUSAGE_SELF).ok();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    let wall = t0.elapsed().as_secs_f64();
    let cpu = thread_cpu_s("sim ") - cpu0;
    let usage1 = getrusage(UsageWho::RUSAGE_SELF).ok();
    let proc_cpu = match (usage0, usage1) {
        (Some(a), Some(b)) => secs(&b) - secs(&a),
        _ => 0.0,
    };
    let rss_running = vm_rss_kib();
    let done = handles.iter().filter(|h| h.try_report().is_some()).count();
    stop.store(true, Ordering::Relaxed);
    let host_cpu = host.and_then(|h| h.join().ok()).unwrap_or(0.0);
    let msgs = messages.load(Ordering::Relaxed);
    let total_bytes = bytes.load(Ordering::Relaxed);
    for b in sims {
        let _ = b.shutdown();
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("boards {boards}, speed x{speed}, profile {profile}, {wall:.1} s measured");
    println!("spawn: {spawn_ms} ms for all boards");
    println!(
        "memory: VmRSS {} KiB before, {} KiB after spawn, {} KiB running ({:.1} KiB per board)",
        rss0,
        rss_spawned,
        rss_running,
        (rss_running.saturating_sub(rss0)) as f64 / boards as f64
    );
    let sim_cpu = (proc_cpu - host_cpu).max(0.0);
    println!(
        "cpu: simulator {:.2} s = {:.1} % of one core (process {:.2} s minus the test host's reader {:.2} s; \
         per-thread tick sum {:.2} s)",
        sim_cpu,
        100.0 * sim_cpu / wall,
        proc_cpu,
        host_cpu,
        cpu
    );
    println!(
        "traffic: {} messages, {} bytes ({:.0} msg/s, {:.0} B/s); {done} replays finished",
        msgs,
        total_bytes,
        msgs as f64 / wall,
        total_bytes as f64 / wall
    );
}
