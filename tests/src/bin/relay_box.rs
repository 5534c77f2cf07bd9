//! The relay box's figures: the firmware's flash and RAM (text, data, bss, from its ELF),
//! its heap and stack high-water marks, and press-to-confirmed latency through the firmware
//! and the bridge as a ratio to the same presses through the relay alone, in one run.
//!
//! ```text
//! cargo run --release -p dgt-e2e-tests --bin relay_box -- [BOARDS=3] [SECONDS=40] [PRESS_MS=1000] [both|boxes]
//! ```
//!
//! `boxes` skips the relay-alone phase: for the memory a long game takes
//! (`-- 1 170 250 boxes`: about 650 plies on one board).
//!
//! Both phases play the same thing on `BOARDS` simulated boards (speed 1, scan period 0):
//! knight moves back and forth, a clock press every `PRESS_MS` per board, boards staggered.
//! First the boards on their ptys are the relay's own ports (`--port`); then each board is
//! wired to the firmware booted in `qemu-system-arm -M mps2-an386` and the relay reads the
//! boxes' bridges (`--bridge`, through the test's cable, `dgt_e2e_tests::firmware`). Timed:
//! from just before the press is handed to the simulated board to the confirmed move's
//! frame arriving at one websocket subscriber in this process (wall clock). The relay is the
//! release build; the firmware runs at QEMU's speed, not a real part's.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use dgt_bridge::DeviceStatus;
use dgt_e2e_tests::firmware::{RelayBox, firmware_elf, qemu_binary};
use dgt_e2e_tests::relay::{Relay, relay_binary};
use dgt_hil_sim::{Action, BoardConfig, SimConfig, spawn_fleet};
use futures_util::StreamExt;
use shakmaty::{Color, Piece, Role, Square};

fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: T) -> T {
    args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// The ELF's sizes as `size` counts them: text (code and read-only data, in flash), data
/// (initialised, in flash and RAM), bss (zeroed, in RAM); and the heap's static array.
struct Sizes {
    text: u64,
    data: u64,
    bss: u64,
    heap: u64,
}

fn u16_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 2).map_or(0, |x| u64::from(u16::from_le_bytes([x[0], x[1]])))
}

fn u32_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 4).map_or(0, |x| u64::from(u32::from_le_bytes([x[0], x[1], x[2], x[3]])))
}

fn elf_sizes(path: &Path) -> anyhow::Result<Sizes> {
    let b = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if b.get(..5) != Some(b"\x7fELF\x01") {
        bail!("{} is not a 32-bit ELF", path.display());
    }
    let (shoff, shentsize, shnum) =
        (u32_at(&b, 0x20) as usize, u16_at(&b, 0x2E) as usize, u16_at(&b, 0x30) as usize);
    let section = |i: usize| shoff + i * shentsize;
    let mut s = Sizes { text: 0, data: 0, bss: 0, heap: 0 };
    for i in 0..shnum {
        let at = section(i);
        let (kind, flags, size) = (u32_at(&b, at + 4), u32_at(&b, at + 8), u32_at(&b, at + 20));
        const ALLOC: u64 = 0x2;
        const WRITE: u64 = 0x1;
        const NOBITS: u64 = 8;
        const SYMTAB: u64 = 2;
        if flags & ALLOC != 0 {
            match (flags & WRITE != 0, kind == NOBITS) {
                (false, _) => s.text += size,
                (true, false) => s.data += size,
                (true, true) => s.bss += size,
            }
        }
        if kind == SYMTAB {
            // The heap's array: the symbol whose name holds HEAP_MEMORY.
            let (off, link) = (u32_at(&b, at + 16) as usize, u32_at(&b, at + 24) as usize);
            let strtab = u32_at(&b, section(link) + 16) as usize;
            for sym in (off..off + size as usize).step_by(16) {
                let name_at = strtab + u32_at(&b, sym) as usize;
                let name = b.get(name_at..).and_then(|n| n.split(|c| *c == 0).next()).unwrap_or_default();
                if name.windows(11).any(|w| w == b"HEAP_MEMORY") {
                    s.heap = u32_at(&b, sym + 8);
                }
            }
        }
    }
    Ok(s)
}

/// One phase's latencies (ms) and, through boxes, their last statuses.
struct Phase {
    latencies: Vec<f64>,
    presses: usize,
    statuses: Vec<Option<DeviceStatus>>,
}

fn wait_active(relay: &Relay, boards: usize) -> anyhow::Result<HashMap<String, u64>> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = relay.json("/api/boards")?;
        let rows = v.as_array().cloned().unwrap_or_default();
        if rows.iter().filter(|b| b["status"] == "active").count() == boards {
            return Ok(rows
                .iter()
                .filter_map(|b| Some((b["serial"].as_str()?.to_owned(), b["board"].as_u64()?)))
                .collect());
        }
        if Instant::now() > deadline {
            bail!("boards not active: {v}\n{}", relay.log_tail());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Confirmed moves' arrival times at one websocket subscriber, by (board, ply).
fn subscribe(addr: std::net::SocketAddr) -> Arc<Mutex<HashMap<(u64, u64), u64>>> {
    let arrivals = Arc::new(Mutex::new(HashMap::new()));
    let out = Arc::clone(&arrivals);
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
        rt.block_on(async move {
            let Ok((mut ws, _)) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await else {
                return;
            };
            while let Some(Ok(m)) = ws.next().await {
                let at = now_ns();
                let Ok(text) = m.to_text() else { continue };
                let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else { continue };
                if v["type"] == "move"
                    && v["state"] == "confirmed"
                    && let (Some(b), Some(p)) = (v["board"].as_u64(), v["move"]["ply"].as_u64())
                    && let Ok(mut a) = out.lock()
                {
                    a.entry((b, p)).or_insert(at);
                }
            }
        });
    });
    arrivals
}

#[allow(clippy::too_many_arguments)]
fn phase(
    boxed: Option<(&Path, &Path)>,
    boards: usize,
    seconds: u64,
    press_ms: u64,
    bin: &Path,
    dir: &Path,
    first_serial: u32,
) -> anyhow::Result<Phase> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let mut board_cfg = BoardConfig::with_serial(first_serial);
    board_cfg.scan_period_ms = 0;
    let template = SimConfig { board: board_cfg, speed: 1.0, ..SimConfig::default() };
    let fleet = spawn_fleet(boards, &template, Some(&dir.join("links")))?;
    let mut args: Vec<String> = vec!["run".into(), "--data".into(), dir.join("data").display().to_string()];
    let mut boxes = Vec::new();
    for (i, b) in fleet.iter().enumerate() {
        match boxed {
            Some((qemu, elf)) => {
                let pty = std::fs::canonicalize(b.path())?;
                let bx = RelayBox::boot(qemu, elf, &pty, dir.join(format!("box-{i}-console.log")))?;
                args.push("--bridge".into());
                args.push(bx.cable.relay_end().display().to_string());
                boxes.push(bx);
            }
            None => {
                args.push("--port".into());
                args.push(b.path().display().to_string());
            }
        }
    }
    let relay = Relay::start(bin, dir, &args)?;
    let serial_to_board = wait_active(&relay, boards)?;
    let arrivals = subscribe(relay.addr);
    std::thread::sleep(Duration::from_millis(500));
    for b in &fleet {
        b.act(Action::StartClock)?;
    }
    let presses: Arc<Mutex<HashMap<(u64, u64), u64>>> = Arc::new(Mutex::new(HashMap::new()));
    let cycle = [
        (Color::White, Square::G1, Square::F3),
        (Color::Black, Square::G8, Square::F6),
        (Color::White, Square::F3, Square::G1),
        (Color::Black, Square::F6, Square::G8),
    ];
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for (i, b) in fleet.iter().enumerate() {
            let presses = Arc::clone(&presses);
            let board_no = serial_to_board.get(&(first_serial + i as u32).to_string()).copied().unwrap_or(0);
            s.spawn(move || {
                let mut next = t0 + Duration::from_millis(300 + press_ms * i as u64 / boards as u64);
                let mut ply = 0u64;
                while t0.elapsed() < Duration::from_secs(seconds) {
                    let (color, from, to) = cycle[(ply % 4) as usize];
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                    let _ = b.act(Action::Lift { square: from });
                    let _ = b.act(Action::Place { square: to, piece: Piece { color, role: Role::Knight } });
                    // The placement reaches the relay first, as a hand's does.
                    std::thread::sleep(Duration::from_millis(150));
                    ply += 1;
                    if let Ok(mut p) = presses.lock() {
                        p.insert((board_no, ply), now_ns());
                    }
                    let _ = b.act(Action::PressClock { color });
                    next += Duration::from_millis(press_ms);
                }
            });
        }
    });
    std::thread::sleep(Duration::from_secs(3));
    let presses = presses.lock().map(|p| p.clone()).unwrap_or_default();
    let arrivals = arrivals.lock().map(|a| a.clone()).unwrap_or_default();
    let mut latencies: Vec<f64> = presses
        .iter()
        .filter_map(|(k, at)| arrivals.get(k).map(|t| t.saturating_sub(*at) as f64 / 1e6))
        .collect();
    latencies.sort_by(f64::total_cmp);
    let statuses = boxes.iter().map(|b| b.cable.status()).collect();
    for (i, b) in boxes.iter().enumerate() {
        let console = b.console_text();
        if console.contains("panic") {
            println!("box {i} console: {console}");
        }
    }
    drop(relay);
    drop(boxes);
    drop(fleet);
    let _ = std::fs::remove_dir_all(dir);
    Ok(Phase { latencies, presses: presses.len(), statuses })
}

fn pct(v: &[f64], q: f64) -> f64 {
    v.get(((v.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(f64::NAN)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let boards: usize = arg(&args, 1, 3);
    let seconds: u64 = arg(&args, 2, 40);
    let press_ms: u64 = arg(&args, 3, 1000);
    let elf = firmware_elf()?;
    let qemu = qemu_binary().context("qemu-system-arm is not on the PATH")?;
    let s = elf_sizes(&elf)?;
    println!(
        "firmware: flash {} B (text {} + data {}), RAM {} B (data {} + bss {}, of which the heap's array {}); \
         target 262144 B flash, 65536 B RAM",
        s.text + s.data,
        s.text,
        s.data,
        s.data + s.bss,
        s.data,
        s.bss,
        s.heap
    );
    let bin = relay_binary(true)?;
    let root = dgt_e2e_tests::acceptance::work_dir("relay-box-bench");
    let only_boxes = args.get(4).is_some_and(|a| a == "boxes");
    let direct = match only_boxes {
        true => Phase { latencies: Vec::new(), presses: 0, statuses: Vec::new() },
        false => phase(None, boards, seconds, press_ms, &bin, &root.join("direct"), 61_001)?,
    };
    let boxed = phase(Some((&qemu, &elf)), boards, seconds, press_ms, &bin, &root.join("boxes"), 62_001)?;
    for (name, p) in [("relay alone", &direct), ("relay boxes", &boxed)] {
        println!(
            "{name:<11}: {} presses, {} confirmed; press to confirmed ms p50 {:.1} p99 {:.1} max {:.1}",
            p.presses,
            p.latencies.len(),
            pct(&p.latencies, 0.5),
            pct(&p.latencies, 0.99),
            p.latencies.last().copied().unwrap_or(f64::NAN)
        );
    }
    println!(
        "ratio boxes / alone: p50 {:.2}, p99 {:.2}",
        pct(&boxed.latencies, 0.5) / pct(&direct.latencies, 0.5),
        pct(&boxed.latencies, 0.99) / pct(&direct.latencies, 0.99)
    );
    for (i, st) in boxed.statuses.iter().enumerate() {
        let Some(st) = st else { continue };
        let static_ram = s.data + s.bss - s.heap;
        println!(
            "box {i}: heap peak {} B, stack peak {} B, {} bytes lost by its UARTs, longest loop turn {} ms; RAM \
             in use at most {} B (static {} + heap peak + stack peak)",
            st.heap_peak,
            st.stack_peak,
            st.uart_lost,
            st.longest_step_ms,
            static_ram + u64::from(st.heap_peak) + u64::from(st.stack_peak),
            static_ram
        );
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load {}", load.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    Ok(())
}
