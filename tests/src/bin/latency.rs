//! Host end-to-end latency: from the clock press on a simulated board to the confirmed
//! move arriving at each websocket subscriber. Also the relay's CPU and memory, and every
//! delivery that did not arrive.
//!
//! ```text
//! cargo run --release -p dgt-e2e-tests --bin latency -- BOARDS SUBSCRIBERS [SECONDS=15] [PRESS_MS=1000] [CLIENT_THREADS=nproc] [direct|edge|edge2] [floor]
//! ```
//!
//! With `edge` the relay publishes to a `nats-server` (JetStream, started here on a free
//! loopback port) and the subscribers connect to a `dgt-relay edge` reading that stream:
//! the same press-to-frame path with NATS and a second relay process added. With `edge2`,
//! two edges with `SUBSCRIBERS` each (one client process per edge).
//!
//! # What runs where
//! - This process: `BOARDS` in-process `SimBoard`s (speed 1, scan period 0) on real ptys,
//!   and one thread per board that plays knight moves back and forth (Nf3 Nf6 Ng1 Ng8 ...),
//!   one clock press every `PRESS_MS` per board, boards staggered evenly. The default,
//!   1000 ms, is a stress rate (100 boards: 100 presses a second). A real round is far
//!   slower: a blitz game (3+2, about 80 plies in 10 minutes) is one press every 7.5 s per
//!   board, rapid about one every 45 s, classical one every 2-3 minutes; `PRESS_MS=10000`
//!   (10 presses a second over 100 boards) is therefore a blitz round's rate.
//! - The real `dgt-relay` release binary, its own process.
//! - A second copy of this binary (`latency --clients ...`), a separate process: the
//!   `SUBSCRIBERS` tokio-tungstenite websocket clients on a multi-thread runtime with
//!   `CLIENT_THREADS` workers. Each client recognises the frames it times by their prefix
//!   (`{"v":1,"seq":N,"type":"move","board":B,"state":"confirmed","move":{"ply":P`, the
//!   relay's field order) without parsing the JSON, checks that delta sequence numbers are
//!   contiguous, and counts snapshots, resyncs and errors. A confirmed move whose frame does
//!   not match the prefix is parsed with serde_json, so nothing is missed by the shortcut.
//!
//! # What is timed
//! Start: the press time, taken just before `SimBoard::act(PressClock)` hands the press to
//! the board's thread, which writes the BWTIME bytes to the pty at once (so the figure
//! includes that thread's wake-up, tens of µs). End: when the client task gets the frame
//! from tokio-tungstenite (read and decoded). Both are wall-clock time (`SystemTime`, the
//! same clock in both processes; NTP slewing changes a millisecond interval by under a
//! microsecond). All three processes share the machine's cores, so the figures include the
//! clients' and the boards' own CPU use.
//!
//! Per press, the first and the last subscriber's latency are also taken; their medians
//! over all presses separate the path to the relay and its first write (first) from the
//! fan-out to every subscriber (last).
//!
//! A delivery is *lost* when a subscriber never got the confirmed move for a press: the
//! relay resynchronised it (a snapshot replaces the missed deltas) or dropped it. The
//! client process reports how many resyncs and sequence gaps it saw, so a loss can be told
//! apart from a benchmark fault.
//!
//! # Against the floor, in one run
//! ```text
//! cargo run --release -p dgt-e2e-tests --bin latency -- BOARDS SUBSCRIBERS SECONDS PRESS_MS CLIENT_THREADS direct|edge floor
//! ```
//! With `floor`, the floor below (`N` = the subscribers, the `tokio` reader: epoll, as the
//! subscribers read) is measured in the same run: relay phases (the boards press) and
//! floor phases (a round every 100 ms) take turns, 4 s each, for `SECONDS` of each, so a
//! change in the machine's load meets both alike. The last line gives the relay's p99 and
//! p50 as ratios to the floor's. CPU figures are then over the whole run, both phases.
//!
//! # The floor: one frame to N loopback sockets
//! ```text
//! cargo run --release -p dgt-e2e-tests --bin latency -- floor N [ROUNDS=100] [READER=spin|tokio]
//! ```
//! No relay, websocket or JSON: this process accepts `N` loopback TCP connections
//! (`TCP_NODELAY`) and, every 100 ms, writes the same 200-byte frame to each socket in turn,
//! one `write()` each, the wall-clock time of the loop's start stamped in the frame. A second
//! copy of this binary (`latency --floor-reader ...`) holds the other ends and reads them
//! with nonblocking reads: `spin` (the default: the lower floor) is a round-robin loop over
//! all the sockets that yields the CPU when a pass finds nothing, so it keeps one core busy
//! and is never woken; `tokio` is a current-thread runtime with one task per socket (epoll
//! underneath, like the relay's real subscribers). Reported: latency from the loop's start
//! to each read (p50/p99/max over all deliveries), the write loop's duration, and both
//! processes' CPU per delivery (thread CPU time from `schedstat`).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, BufWriter, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use dgt_e2e_tests::relay::{Relay, proc_stat, relay_binary};
use dgt_hil_sim::{Action, BoardConfig, SimConfig, spawn_fleet};
use futures_util::StreamExt;
use shakmaty::{Color, Piece, Role, Square};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: T) -> T {
    args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

/// How long the relay's and the floor's phases last (see [`Phases`]).
const PHASE: Duration = Duration::from_secs(4);
/// At the end of a relay phase and the start of a floor phase, time for the last fan-out to
/// finish and the next to start cleanly.
const PHASE_MARGIN: Duration = Duration::from_millis(500);

/// With the floor in the same run, the relay's phases (its presses) and the floor's (its
/// rounds) take turns, each [`PHASE`] long, so that both see the machine's load alike;
/// without it, the relay has all the time.
#[derive(Clone, Copy)]
struct Phases {
    t0: Instant,
    phase: Duration,
    floor: bool,
}

impl Phases {
    /// The part of each phase that is used.
    fn usable(&self) -> Duration {
        self.phase - 2 * PHASE_MARGIN
    }

    /// The instant of relay time `t` (time counted in the relay's phases only).
    fn relay_at(&self, t: Duration) -> Instant {
        if !self.floor {
            return self.t0 + t;
        }
        let k = (t.as_millis() / self.usable().as_millis()) as u32;
        self.t0 + self.phase * (2 * k) + (t - self.usable() * k)
    }

    /// The instant of floor time `t` (time counted in the floor's phases only).
    fn floor_at(&self, t: Duration) -> Instant {
        let k = (t.as_millis() / self.usable().as_millis()) as u32;
        self.t0 + self.phase * (2 * k + 1) + PHASE_MARGIN + (t - self.usable() * k)
    }
}

/// Wall-clock nanoseconds: comparable between the board and client processes.
fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("--clients") => return clients_main(&args[2..]),
        Some("floor") => return floor_main(&args[2..]),
        Some("--floor-reader") => return floor_reader_main(&args[2..]),
        _ => {}
    }
    let boards: usize = arg(&args, 1, 1);
    let subs: usize = arg(&args, 2, 1);
    let seconds: u64 = arg(&args, 3, 15);
    let press_ms: u64 = arg(&args, 4, 1000);
    let threads: usize = arg(&args, 5, std::thread::available_parallelism().map_or(2, |n| n.get()));
    let (mode, n_edges) = match args.get(6).map(String::as_str) {
        None | Some("direct") => ("direct", 0usize),
        Some("edge") => ("edge", 1),
        Some("edge2") => ("edge2", 2),
        Some(other) => bail!("unknown mode {other:?}: direct, edge or edge2"),
    };
    let with_floor = match args.get(7).map(String::as_str) {
        None => false,
        Some("floor") => true,
        Some(other) => bail!("unknown option {other:?}: floor"),
    };
    let via_edge = n_edges > 0;
    let bin = relay_binary(true)?;
    let dir = dgt_e2e_tests::acceptance::work_dir("latency");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let mut board_cfg = BoardConfig::with_serial(50001);
    board_cfg.scan_period_ms = 0;
    let template = SimConfig { board: board_cfg, speed: 1.0, ..SimConfig::default() };
    let fleet = spawn_fleet(boards, &template, Some(&dir.join("links")))?;
    let cfg = dir.join("relay.toml");
    // All the clients come from one address (loopback): its share is the whole.
    let limits = format!("max_subscribers = {0}\nfeed_per_address = {0}\n", subs + 10);
    // With `edge`: a NATS server, the relay publishing to it, and an edge serving the clients.
    let nats = match via_edge {
        true => {
            let nats_bin = dgt_e2e_tests::nats::nats_binary().context("nats-server is not installed")?;
            Some(dgt_e2e_tests::nats::NatsServer::start(&nats_bin, &dir.join("nats"))?)
        }
        false => None,
    };
    let nats_section = nats.as_ref().map(|n| format!("[nats]\nurl = \"{}\"\n", n.url())).unwrap_or_default();
    std::fs::write(&cfg, format!("{limits}{nats_section}"))?;
    let mut relay_args: Vec<String> = vec![
        "run".into(),
        "--config".into(),
        cfg.display().to_string(),
        "--data".into(),
        dir.join("data").display().to_string(),
    ];
    for b in &fleet {
        relay_args.push("--port".into());
        relay_args.push(b.path().display().to_string());
    }
    let relay = Relay::start(&bin, &dir, &relay_args)?;
    let mut edges = Vec::new();
    for k in 0..n_edges {
        let Some(n) = &nats else { break };
        edges.push({
            let edge_dir = dir.join(format!("edge-{k}"));
            std::fs::create_dir_all(&edge_dir)?;
            let edge_cfg = edge_dir.join("edge.toml");
            std::fs::write(&edge_cfg, &limits)?;
            let args: Vec<String> = vec![
                "edge".into(),
                "--nats".into(),
                n.url(),
                "--config".into(),
                edge_cfg.display().to_string(),
                "--data".into(),
                edge_dir.join("data").display().to_string(),
            ];
            Relay::start(&bin, &edge_dir, &args)?
        });
    }
    let serving: Vec<&Relay> = if edges.is_empty() { vec![&relay] } else { edges.iter().collect() };
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

    // The subscribers, in their own process (one per serving relay).
    let mut client_procs = Vec::new();
    for (k, srv) in serving.iter().enumerate() {
        let out = dir.join(format!("arrivals-{k}.txt"));
        let mut clients = Command::new(std::env::current_exe()?)
            .args([
                "--clients".to_owned(),
                srv.addr.to_string(),
                subs.to_string(),
                out.display().to_string(),
                threads.to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("starting the client process")?;
        let mut client_out = BufReader::new(clients.stdout.take().context("client stdout")?);
        let mut line = String::new();
        client_out.read_line(&mut line)?;
        if line.trim() != "ready" {
            bail!("client process: {line}");
        }
        client_procs.push((clients, client_out, out));
    }
    let total_subs = subs * client_procs.len();
    // The floor's sockets and reader, for the phases between the relay's.
    let mut floor = if with_floor { Some(Floor::open(total_subs, "tokio")?) } else { None };
    std::thread::sleep(Duration::from_millis(500));

    for b in &fleet {
        b.act(Action::StartClock)?;
    }
    let presses: Arc<Mutex<HashMap<(u64, u64), u64>>> = Arc::new(Mutex::new(HashMap::new()));
    let cpu0 = proc_stat(relay.pid());
    let ecpu0: Vec<f64> = edges.iter().map(|e| proc_stat(e.pid()).cpu_s).collect();
    let ccpu0: f64 = client_procs.iter().map(|(c, _, _)| proc_stat(c.id()).cpu_s).sum();
    let t0 = Instant::now();
    let phases = Phases { t0, phase: PHASE, floor: with_floor };
    let relay_time = Duration::from_secs(seconds);
    let cycle = [
        (Color::White, Square::G1, Square::F3),
        (Color::Black, Square::G8, Square::F6),
        (Color::White, Square::F3, Square::G1),
        (Color::Black, Square::F6, Square::G8),
    ];
    let floor_result = std::thread::scope(|s| {
        let floor_writer = floor.as_mut().map(|floor| {
            s.spawn(move || -> anyhow::Result<()> {
                let mut t = Duration::ZERO;
                while phases.floor_at(t) < phases.relay_at(relay_time) {
                    std::thread::sleep(phases.floor_at(t).saturating_duration_since(Instant::now()));
                    floor.round()?;
                    t += Duration::from_millis(100);
                }
                Ok(())
            })
        });
        for (i, b) in fleet.iter().enumerate() {
            let presses = Arc::clone(&presses);
            let board_no = serial_to_board.get(&format!("{}", 50001 + i)).copied().unwrap_or(0);
            s.spawn(move || {
                let offset = Duration::from_millis(press_ms * i as u64 / boards as u64);
                // In relay time: the relay's phases only.
                let mut next = offset + Duration::from_millis(300);
                let mut ply = 0u64;
                while next < relay_time {
                    let (color, from, to) = cycle[(ply % 4) as usize];
                    let piece = Piece { color, role: Role::Knight };
                    std::thread::sleep(phases.relay_at(next).saturating_duration_since(Instant::now()));
                    let _ = b.act(Action::Lift { square: from });
                    let _ = b.act(Action::Place { square: to, piece });
                    // Let the placement reach the relay first, as a hand does.
                    std::thread::sleep(Duration::from_millis(150));
                    ply += 1;
                    let at = now_ns();
                    if let Ok(mut p) = presses.lock() {
                        p.insert((board_no, ply), at);
                    }
                    let _ = b.act(Action::PressClock { color });
                    next += Duration::from_millis(press_ms);
                }
            });
        }
        floor_writer.map(|w| w.join().map_err(|_| anyhow::anyhow!("floor writer panicked")))
    });
    if let Some(r) = floor_result {
        r??;
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let cpu1 = proc_stat(relay.pid());
    let edge_cpu: String = edges
        .iter()
        .zip(&ecpu0)
        .map(|(e, c0)| {
            format!("; edge CPU {:.1}% of one core", 100.0 * (proc_stat(e.pid()).cpu_s - c0) / elapsed)
        })
        .collect();
    let ccpu1: f64 = client_procs.iter().map(|(c, _, _)| proc_stat(c.id()).cpu_s).sum();
    // Late frames still count: wait before stopping the clients.
    std::thread::sleep(Duration::from_millis(3000));
    let mut stats = Vec::new();
    let mut per_client: Vec<HashMap<(u64, u64), u64>> = vec![HashMap::new(); total_subs];
    for (k, (mut clients, mut client_out, out)) in client_procs.into_iter().enumerate() {
        drop(clients.stdin.take());
        let mut line = String::new();
        client_out.read_line(&mut line)?;
        stats.push(line.trim().to_owned());
        let status = clients.wait()?;
        if !status.success() {
            bail!("client process failed: {status}");
        }
        for l in BufReader::new(std::fs::File::open(&out)?).lines() {
            let l = l?;
            let f: Vec<u64> = l.split(' ').filter_map(|x| x.parse().ok()).collect();
            if let [c, b, p, t] = f[..]
                && let Some(m) = per_client.get_mut(k * subs + c as usize)
            {
                m.entry((b, p)).or_insert(t);
            }
        }
    }
    let client_stats = stats.join(" | ");

    let presses = presses.lock().map(|p| p.clone()).unwrap_or_default();
    let mut lat: Vec<f64> = Vec::with_capacity(presses.len() * total_subs);
    let mut missing = 0usize;
    // Per press: the first and the last subscriber to get it.
    let mut spread: HashMap<(u64, u64), (f64, f64)> = HashMap::new();
    for got in &per_client {
        for (k, at) in &presses {
            match got.get(k) {
                Some(t) => {
                    let ms = t.saturating_sub(*at) as f64 / 1e6;
                    lat.push(ms);
                    let e = spread.entry(*k).or_insert((ms, ms));
                    *e = (e.0.min(ms), e.1.max(ms));
                }
                None => missing += 1,
            }
        }
    }
    lat.sort_by(f64::total_cmp);
    let pct = |q: f64| lat.get(((lat.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(f64::NAN);
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let first_ms = median(spread.values().map(|s| s.0).collect());
    let last_ms = median(spread.values().map(|s| s.1).collect());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "{mode:<6} boards {boards:>3} subscribers {total_subs:>4}: {} presses, {} deliveries, {missing} lost ({:.3} %); latency ms p50 {:.2} p99 {:.2} max {:.2}; per press (median) first subscriber {first_ms:.2} ms, last {last_ms:.2} ms; relay CPU {:.1}% of one core, RSS {} MiB (peak {} MiB), {} threads; client process CPU {:.1}% ({threads} threads); {client_stats}; load {}{edge_cpu}",
        presses.len(),
        lat.len(),
        100.0 * missing as f64 / (presses.len() * total_subs).max(1) as f64,
        pct(0.5),
        pct(0.99),
        lat.last().copied().unwrap_or(f64::NAN),
        100.0 * (cpu1.cpu_s - cpu0.cpu_s) / elapsed,
        cpu1.rss_kib / 1024,
        cpu1.hwm_kib / 1024,
        cpu1.threads,
        100.0 * (ccpu1 - ccpu0) / elapsed,
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    );
    if let Some(floor) = floor {
        let f = floor.finish()?;
        println!(
            "{mode} against the floor in the same run: p99 {:.2}x ({:.2} / {:.2} ms), p50 {:.2}x ({:.2} / {:.2} ms)",
            pct(0.99) / f.p99_ms,
            pct(0.99),
            f.p99_ms,
            pct(0.5) / f.p50_ms,
            pct(0.5),
            f.p50_ms,
        );
    }
    drop(edges);
    drop(relay);
    drop(nats);
    drop(fleet);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// What one subscriber saw.
#[derive(Default)]
struct ClientLog {
    /// Confirmed moves: (board, ply, arrival ns).
    arrivals: Vec<(u64, u64, u64)>,
    frames: u64,
    bytes: u64,
    snapshots: u64,
    resyncs: u64,
    /// Deltas missing between two received sequence numbers (not counting resyncs).
    seq_gaps: u64,
    errors: u64,
    /// Deltas by type: move, clock, retract, other.
    kinds: [u64; 4],
    /// The relay closed the connection before the end.
    closed: bool,
    last_seq: u64,
}

/// Reads the unsigned decimal at the start of `s`; returns it and the rest.
fn number(s: &str) -> Option<(u64, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    Some((s[..end].parse().ok()?, &s[end..]))
}

/// `(board, ply)` of a confirmed move frame from its fixed prefix, after `"seq":N`.
fn confirmed_move(rest: &str) -> Option<(u64, u64)> {
    let (board, rest) = number(rest.strip_prefix(r#","type":"move","board":"#)?)?;
    let (ply, _) = number(rest.strip_prefix(r#","state":"confirmed","move":{"ply":"#)?)?;
    Some((board, ply))
}

impl ClientLog {
    fn snapshot(&mut self, text: &str) {
        self.snapshots += 1;
        if text.contains(r#""resync":true"#) {
            self.resyncs += 1;
        }
        // serde_json writes the keys in order: ..., "resync", "seq", "type", "v" (last).
        if let Some(i) = text.rfind(r#""seq":"#)
            && let Some((seq, _)) = number(&text[i + 6..])
        {
            self.last_seq = seq;
        }
    }

    fn frame(&mut self, text: &str, at: u64) {
        self.frames += 1;
        self.bytes += text.len() as u64;
        if let Some(rest) = text.strip_prefix(r#"{"v":1,"seq":"#)
            && let Some((seq, rest)) = number(rest)
        {
            if self.last_seq != 0 && seq != self.last_seq + 1 {
                self.seq_gaps += seq.saturating_sub(self.last_seq + 1);
            }
            self.last_seq = seq;
            let kind = ["move", "clock", "retract"]
                .iter()
                .position(|k| rest.strip_prefix(r#","type":""#).is_some_and(|r| r.starts_with(k)))
                .unwrap_or(3);
            self.kinds[kind] += 1;
            if let Some((b, p)) = confirmed_move(rest) {
                self.arrivals.push((b, p, at));
            } else if rest.starts_with(r#","type":"move""#) && rest.contains(r#""confirmed""#) {
                // Not the expected field order: parse it properly.
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(text)
                    && let (Some(b), Some(p)) = (v["board"].as_u64(), v["move"]["ply"].as_u64())
                {
                    self.arrivals.push((b, p, at));
                }
            }
        } else if text.contains(r#""type":"snapshot""#) {
            self.snapshot(text);
        } else if text.contains(r#""type":"error""#) {
            self.errors += 1;
        }
    }
}

/// The client process: `--clients ADDR N OUTFILE THREADS`. Prints `ready` once every client
/// has its first snapshot, runs until standard input closes, writes the arrivals
/// (`client board ply ns` lines) and prints one summary line.
fn clients_main(args: &[String]) -> anyhow::Result<()> {
    let addr = args.first().context("address")?.clone();
    let n: usize = arg(args, 1, 1);
    let out = args.get(2).context("output file")?.clone();
    let threads: usize = arg(args, 3, 2);
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(threads.max(1)).enable_all().build()?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    // The library zero-fills its whole read buffer on every read attempt: keep it small.
    let config = WebSocketConfig::default().read_buffer_size(4096);
    let mut tasks = Vec::with_capacity(n);
    for _ in 0..n {
        // All from one address: past its snapshot burst the relay answers 429 and its
        // bucket refills; the client waits and tries again, as a browser's reconnect does.
        let mut refused = 0;
        let mut ws = loop {
            match rt.block_on(tokio_tungstenite::connect_async_with_config(
                format!("ws://{addr}/ws"),
                Some(config),
                true,
            )) {
                Ok((ws, _)) => break ws,
                Err(tokio_tungstenite::tungstenite::Error::Http(r))
                    if r.status() == 429 && refused < 1_000 =>
                {
                    refused += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(e.into()),
            }
        };
        let mut log = ClientLog::default();
        match rt.block_on(ws.next()) {
            Some(Ok(Message::Text(t))) => log.snapshot(t.as_str()),
            other => bail!("no snapshot: {other:?}"),
        }
        let mut stop = stop_rx.clone();
        tasks.push(rt.spawn(async move {
            loop {
                tokio::select! {
                    _ = stop.changed() => break,
                    msg = ws.next() => match msg {
                        Some(Ok(Message::Text(t))) => log.frame(t.as_str(), now_ns()),
                        Some(Ok(_)) => {}
                        Some(Err(_)) | None => {
                            log.closed = true;
                            break;
                        }
                    },
                }
            }
            log
        }));
    }
    println!("ready");
    std::io::stdout().flush()?;
    // Until the parent closes our standard input.
    let mut sink = String::new();
    while std::io::stdin().read_line(&mut sink)? > 0 {}
    let _ = stop_tx.send(true);
    let logs: Vec<ClientLog> = rt.block_on(async {
        let mut logs = Vec::with_capacity(tasks.len());
        for t in tasks {
            logs.push(t.await.unwrap_or_default());
        }
        logs
    });
    let mut w = BufWriter::new(std::fs::File::create(&out)?);
    for (i, log) in logs.iter().enumerate() {
        for (b, p, t) in &log.arrivals {
            writeln!(w, "{i} {b} {p} {t}")?;
        }
    }
    w.flush()?;
    let sum = |f: fn(&ClientLog) -> u64| logs.iter().map(f).sum::<u64>();
    println!(
        "clients saw {} frames ({} MiB; deltas: {} move, {} clock, {} retract, {} other), {} snapshots, {} resyncs, {} seq gaps, {} errors, {} closed by the relay",
        sum(|l| l.frames),
        sum(|l| l.bytes) >> 20,
        sum(|l| l.kinds[0]),
        sum(|l| l.kinds[1]),
        sum(|l| l.kinds[2]),
        sum(|l| l.kinds[3]),
        sum(|l| l.snapshots),
        sum(|l| l.resyncs),
        sum(|l| l.seq_gaps),
        sum(|l| l.errors),
        logs.iter().filter(|l| l.closed).count(),
    );
    Ok(())
}

/// Bytes in one floor frame; the first 8 are the write loop's start (wall-clock ns, LE).
const FLOOR_FRAME: usize = 200;

/// The calling thread's CPU time in ns (`/proc/thread-self/schedstat`), 0 if unreadable.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The floor's writer: `N` loopback connections to a reader process, each written the same
/// stamped frame once a round.
struct Floor {
    n: usize,
    mode: String,
    socks: Vec<TcpStream>,
    reader: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
    loops: Vec<f64>,
    short: usize,
    cpu_ns: u64,
}

/// What the floor's reader measured.
struct FloorFigures {
    p50_ms: f64,
    p99_ms: f64,
}

impl Floor {
    /// Starts the reader process (`spin` or `tokio`) and accepts its `n` connections.
    fn open(n: usize, mode: &str) -> anyhow::Result<Floor> {
        if !matches!(mode, "tokio" | "spin") {
            bail!("reader must be spin or tokio, not {mode}");
        }
        let listener = TcpListener::bind("127.0.0.1:0").context("binding the listener")?;
        let addr = listener.local_addr()?;
        let mut reader = Command::new(std::env::current_exe()?)
            .args(["--floor-reader".to_owned(), addr.to_string(), n.to_string(), mode.to_owned()])
            .stdout(Stdio::piped())
            .spawn()
            .context("starting the reader process")?;
        // Accept without blocking, so a reader that dies is noticed.
        listener.set_nonblocking(true)?;
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut socks = Vec::with_capacity(n);
        while socks.len() < n {
            match listener.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(false)?;
                    s.set_nodelay(true)?;
                    socks.push(s);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if let Some(status) = reader.try_wait()? {
                        bail!("reader exited early: {status}");
                    }
                    if Instant::now() > deadline {
                        bail!("only {} of {n} connections accepted", socks.len());
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => return Err(e).context("accepting"),
            }
        }
        let mut out = BufReader::new(reader.stdout.take().context("reader stdout")?);
        let mut line = String::new();
        out.read_line(&mut line)?;
        if line.trim() != "ready" {
            bail!("reader process: {line:?}");
        }
        Ok(Floor { n, mode: mode.to_owned(), socks, reader, out, loops: Vec::new(), short: 0, cpu_ns: 0 })
    }

    /// One round: the frame, stamped now, to every socket in turn.
    fn round(&mut self) -> anyhow::Result<()> {
        let mut frame = [b'x'; FLOOR_FRAME];
        let cpu0 = thread_cpu_ns();
        let start = Instant::now();
        frame[..8].copy_from_slice(&now_ns().to_le_bytes());
        for s in &mut self.socks {
            let m = s.write(&frame).context("writing")?;
            if m < FLOOR_FRAME {
                self.short += 1;
                s.write_all(&frame[m..]).context("writing")?;
            }
        }
        self.loops.push(start.elapsed().as_secs_f64() * 1e3);
        self.cpu_ns += thread_cpu_ns().saturating_sub(cpu0);
        Ok(())
    }

    /// Closes the sockets, reads the reader's figures and prints them.
    fn finish(mut self) -> anyhow::Result<FloorFigures> {
        // The reader stops at end of file on every socket.
        self.socks.clear();
        let mut line = String::new();
        self.out.read_line(&mut line)?;
        let status = self.reader.wait()?;
        if !status.success() {
            bail!("reader process failed: {status}");
        }
        let f: Vec<u64> = line.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        let [got, p50, p99, max, reader_cpu_ns] = f[..] else {
            bail!("reader process: {line:?}");
        };
        let figures = FloorFigures { p50_ms: p50 as f64 / 1e6, p99_ms: p99 as f64 / 1e6 };
        self.loops.sort_by(f64::total_cmp);
        let rounds = self.loops.len();
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!(
            "floor: {} sockets x {rounds} rounds, {} reader: {got} of {} deliveries; latency ms p50 {:.2} p99 {:.2} max {:.2}; write loop ms median {:.2} max {:.2}; writer CPU {:.2} us per delivery (one write each; {} short writes); reader CPU {:.2} us per delivery; load {}",
            self.n,
            self.mode,
            self.n * rounds,
            figures.p50_ms,
            figures.p99_ms,
            max as f64 / 1e6,
            self.loops.get(rounds / 2).copied().unwrap_or(f64::NAN),
            self.loops.last().copied().unwrap_or(f64::NAN),
            self.cpu_ns as f64 / 1e3 / (self.n * rounds).max(1) as f64,
            self.short,
            reader_cpu_ns as f64 / 1e3 / got.max(1) as f64,
            load.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        );
        Ok(figures)
    }
}

/// `floor N [ROUNDS] [READER]`: the floor alone, a round every 100 ms.
fn floor_main(args: &[String]) -> anyhow::Result<()> {
    let n: usize = arg(args, 0, 1000);
    let rounds: usize = arg(args, 1, 100);
    let mut floor = Floor::open(n, args.get(2).map_or("spin", String::as_str))?;
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..rounds {
        floor.round()?;
        std::thread::sleep(Duration::from_millis(100));
    }
    floor.finish()?;
    Ok(())
}

/// One socket's partial frame; records the latency of each whole frame.
#[derive(Default)]
struct FloorInbox {
    pending: Vec<u8>,
}

impl FloorInbox {
    fn take(&mut self, data: &[u8], at: u64, lat: &mut Vec<u64>) {
        self.pending.extend_from_slice(data);
        let whole = self.pending.len() / FLOOR_FRAME * FLOOR_FRAME;
        for f in self.pending[..whole].chunks_exact(FLOOR_FRAME) {
            let mut stamp = [0u8; 8];
            stamp.copy_from_slice(&f[..8]);
            lat.push(at.saturating_sub(u64::from_le_bytes(stamp)));
        }
        self.pending.drain(..whole);
    }
}

/// Tells the writer that every socket is connected.
fn floor_ready() -> anyhow::Result<()> {
    println!("ready");
    std::io::stdout().flush()?;
    Ok(())
}

/// The reader process: `--floor-reader ADDR N MODE`. Reads until every socket is at end of
/// file, then prints `deliveries p50 p99 max cpu` (ns).
fn floor_reader_main(args: &[String]) -> anyhow::Result<()> {
    let addr: SocketAddr = args.first().context("address")?.parse()?;
    let n: usize = arg(args, 1, 1);
    let (mut lat, cpu) = match args.get(2).map(String::as_str) {
        Some("tokio") => floor_read_tokio(addr, n)?,
        _ => floor_read_spin(addr, n)?,
    };
    lat.sort_unstable();
    let pct = |q: f64| lat.get(((lat.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(0);
    println!("{} {} {} {} {cpu}", lat.len(), pct(0.5), pct(0.99), lat.last().copied().unwrap_or(0));
    Ok(())
}

/// Round-robin nonblocking reads over all the sockets; yields the CPU after an empty pass.
fn floor_read_spin(addr: SocketAddr, n: usize) -> anyhow::Result<(Vec<u64>, u64)> {
    let mut socks = Vec::with_capacity(n);
    for _ in 0..n {
        let s = TcpStream::connect(addr).context("connecting")?;
        s.set_nonblocking(true)?;
        socks.push((s, FloorInbox::default()));
    }
    floor_ready()?;
    let cpu0 = thread_cpu_ns();
    let mut lat = Vec::new();
    let mut buf = [0u8; 4096];
    while !socks.is_empty() {
        let mut idle = true;
        let mut i = 0;
        while i < socks.len() {
            let (s, inbox) = &mut socks[i];
            match s.read(&mut buf) {
                Ok(0) => {
                    socks.swap_remove(i);
                    continue;
                }
                Ok(m) => {
                    inbox.take(&buf[..m], now_ns(), &mut lat);
                    idle = false;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => return Err(e).context("reading"),
            }
            i += 1;
        }
        if idle {
            std::thread::yield_now();
        }
    }
    Ok((lat, thread_cpu_ns().saturating_sub(cpu0)))
}

/// A current-thread tokio runtime, one task per socket: readiness, then one nonblocking read.
fn floor_read_tokio(addr: SocketAddr, n: usize) -> anyhow::Result<(Vec<u64>, u64)> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().build()?;
    rt.block_on(async {
        let mut socks = Vec::with_capacity(n);
        for _ in 0..n {
            socks.push(tokio::net::TcpStream::connect(addr).await.context("connecting")?);
        }
        floor_ready()?;
        let cpu0 = thread_cpu_ns();
        let tasks: Vec<_> = socks
            .into_iter()
            .map(|s| {
                tokio::spawn(async move {
                    let mut inbox = FloorInbox::default();
                    let mut lat = Vec::new();
                    let mut buf = [0u8; 2048];
                    loop {
                        s.readable().await?;
                        match s.try_read(&mut buf) {
                            Ok(0) => return Ok::<_, std::io::Error>(lat),
                            Ok(m) => inbox.take(&buf[..m], now_ns(), &mut lat),
                            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                            Err(e) => return Err(e),
                        }
                    }
                })
            })
            .collect();
        let mut lat = Vec::new();
        for t in tasks {
            lat.extend(t.await.context("reader task")?.context("reading")?);
        }
        Ok((lat, thread_cpu_ns().saturating_sub(cpu0)))
    })
}
