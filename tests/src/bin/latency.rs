//! Host end-to-end latency: from the clock press on a simulated board (timed just before
//! the press is handed to the in-process `SimBoard`, whose thread writes the BWTIME bytes
//! to the pty at once: scan period 0, speed 1) to the confirmed move arriving at each
//! websocket subscriber (tokio-tungstenite clients). Also the relay's CPU and memory.
//!
//! ```text
//! cargo run --release -p dgt-e2e-tests --bin latency -- BOARDS SUBSCRIBERS [SECONDS=15] [PRESS_MS=1000]
//! ```
//! Each board plays knight moves back and forth (Nf3 Nf6 Ng1 Ng8 ...), one press every
//! `PRESS_MS` per board, boards staggered evenly.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use dgt_e2e_tests::relay::{Relay, proc_stat, relay_binary};
use dgt_hil_sim::{Action, BoardConfig, SimConfig, spawn_fleet};
use futures_util::StreamExt;
use shakmaty::{Color, Piece, Role, Square};
use tokio_tungstenite::tungstenite::Message;

fn arg<T: std::str::FromStr>(i: usize, default: T) -> T {
    std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

type Arrivals = Vec<(u64, u64, Instant)>;

fn main() -> anyhow::Result<()> {
    let boards: usize = arg(1, 1);
    let subs: usize = arg(2, 1);
    let seconds: u64 = arg(3, 15);
    let press_ms: u64 = arg(4, 1000);
    let bin = relay_binary(true)?;
    let dir = dgt_e2e_tests::acceptance::work_dir("latency");
    let _ = std::fs::remove_dir_all(&dir);
    let mut board_cfg = BoardConfig::with_serial(50001);
    board_cfg.scan_period_ms = 0;
    let template = SimConfig { board: board_cfg, speed: 1.0, ..SimConfig::default() };
    let fleet = spawn_fleet(boards, &template, Some(&dir.join("links")))?;
    let cfg = dir.join("relay.toml");
    std::fs::write(&cfg, format!("max_subscribers = {}\n", subs + 10))?;
    let mut args: Vec<String> = vec![
        "run".into(),
        "--config".into(),
        cfg.display().to_string(),
        "--data".into(),
        dir.join("data").display().to_string(),
    ];
    for b in &fleet {
        args.push("--port".into());
        args.push(b.path().display().to_string());
    }
    let relay = Relay::start(&bin, &dir, &args)?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = relay.json("/api/boards")?;
        let active = v.as_array().map_or(0, |a| a.iter().filter(|b| b["status"] == "active").count());
        if active == boards {
            break;
        }
        if Instant::now() > deadline {
            bail!("only {active} of {boards} boards active\n{}", relay.log_tail());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let serial_to_board: HashMap<String, u64> = relay
        .json("/api/boards")?
        .as_array()
        .context("boards")?
        .iter()
        .filter_map(|b| Some((b["serial"].as_str()?.to_owned(), b["board"].as_u64()?)))
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let addr = relay.addr;
    let arrivals: Vec<Arc<Mutex<Arrivals>>> = (0..subs).map(|_| Arc::new(Mutex::new(Vec::new()))).collect();
    for a in &arrivals {
        let a = Arc::clone(a);
        let (ws, _) = rt.block_on(tokio_tungstenite::connect_async(format!("ws://{addr}/ws")))?;
        rt.spawn(async move {
            let (_tx, mut rx) = ws.split();
            while let Some(Ok(msg)) = rx.next().await {
                if let Message::Text(t) = msg {
                    let now = Instant::now();
                    // Cheap pre-filter before parsing.
                    if !t.as_str().contains("\"confirmed\"") {
                        continue;
                    }
                    let Ok(v) = serde_json::from_str::<serde_json::Value>(t.as_str()) else { continue };
                    if v["type"] == "move"
                        && let (Some(b), Some(p)) = (v["board"].as_u64(), v["move"]["ply"].as_u64())
                        && let Ok(mut a) = a.lock()
                    {
                        a.push((b, p, now));
                    }
                }
            }
        });
    }
    std::thread::sleep(Duration::from_millis(500));
    for b in &fleet {
        b.act(Action::StartClock)?;
    }
    let presses: Arc<Mutex<HashMap<(u64, u64), Instant>>> = Arc::new(Mutex::new(HashMap::new()));
    let cpu0 = proc_stat(relay.pid());
    let t0 = Instant::now();
    let cycle = [
        (Color::White, Square::G1, Square::F3),
        (Color::Black, Square::G8, Square::F6),
        (Color::White, Square::F3, Square::G1),
        (Color::Black, Square::F6, Square::G8),
    ];
    std::thread::scope(|s| {
        for (i, b) in fleet.iter().enumerate() {
            let presses = Arc::clone(&presses);
            let board_no = serial_to_board.get(&format!("{}", 50001 + i)).copied().unwrap_or(0);
            s.spawn(move || {
                let offset = Duration::from_millis(press_ms * i as u64 / boards as u64);
                let mut next = t0 + offset + Duration::from_millis(300);
                let mut ply = 0u64;
                while t0.elapsed() < Duration::from_secs(seconds) {
                    let (color, from, to) = cycle[(ply % 4) as usize];
                    let piece = Piece { color, role: Role::Knight };
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                    let _ = b.act(Action::Lift { square: from });
                    let _ = b.act(Action::Place { square: to, piece });
                    // Let the placement reach the relay first, as a hand does.
                    std::thread::sleep(Duration::from_millis(150));
                    ply += 1;
                    let at = Instant::now();
                    if let Ok(mut p) = presses.lock() {
                        p.insert((board_no, ply), at);
                    }
                    let _ = b.act(Action::PressClock { color });
                    next += Duration::from_millis(press_ms);
                }
            });
        }
    });
    std::thread::sleep(Duration::from_millis(1000));
    let elapsed = t0.elapsed().as_secs_f64();
    let cpu1 = proc_stat(relay.pid());
    let presses = presses.lock().map(|p| p.clone()).unwrap_or_default();
    let mut lat: Vec<f64> = Vec::new();
    let mut missing = 0usize;
    for a in &arrivals {
        let a = a.lock().map(|a| a.clone()).unwrap_or_default();
        let got: HashMap<(u64, u64), Instant> = a.iter().map(|(b, p, t)| ((*b, *p), *t)).collect();
        for (k, at) in &presses {
            match got.get(k) {
                Some(t) => lat.push(t.saturating_duration_since(*at).as_secs_f64() * 1000.0),
                None => missing += 1,
            }
        }
    }
    lat.sort_by(f64::total_cmp);
    let pct = |q: f64| lat.get(((lat.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(f64::NAN);
    println!(
        "boards {boards:>3} subscribers {subs:>4}: {} presses, {} deliveries, {missing} missing; latency ms p50 {:.2} p99 {:.2} max {:.2}; relay CPU {:.1}% of one core ({:.2}% per board), RSS {} MiB (peak {} MiB), {} threads",
        presses.len(),
        lat.len(),
        pct(0.5),
        pct(0.99),
        lat.last().copied().unwrap_or(f64::NAN),
        100.0 * (cpu1.cpu_s - cpu0.cpu_s) / elapsed,
        100.0 * (cpu1.cpu_s - cpu0.cpu_s) / elapsed / boards as f64,
        cpu1.rss_kib / 1024,
        cpu1.hwm_kib / 1024,
        cpu1.threads
    );
    drop(relay);
    drop(fleet);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
