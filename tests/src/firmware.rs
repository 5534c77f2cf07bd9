//! The relay box end to end: each simulated board on its pty is wired to the firmware
//! booted in `qemu-system-arm -M mps2-an386` (its UART0); the firmware's bridge (UART1)
//! reaches the real relay (`dgt-relay run --bridge`) through a [`Cable`] the test holds.
//! The relay is killed and restarted mid-game, garbage is put on the bridge both ways, and
//! every game is compared at the end with the simulator's ground truth as the acceptance
//! runner compares them (moves, `%clk`, `%emt`, result, the per-game PGN), with the ghosts
//! of every relay instance.
//!
//! The cable stays plugged into QEMU's pty all along, as a serial cable stays in a box's
//! UART: QEMU's CMSDK UART stops transmitting for good when its pty loses its reader with
//! a byte pending, which no hardware UART does. Only the relay's end of the cable comes and
//! goes with the relay.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use dgt_bridge::wire::Record;
use dgt_bridge::{Device, DeviceConfig, DeviceStatus, FrameDecoder, Up};
use dgt_hil_sim::pty::Pty;
use dgt_hil_sim::{BoardConfig, SimConfig, StartPolicy, spawn_fleet};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::acceptance::{self, GameCheck, Job, Outcome, all_active, wait_until};
use crate::feed::{FeedGame, Recorder};
use crate::offline::Pace;
use crate::relay::{Relay, workspace_root};

/// The firmware's folder.
pub fn firmware_dir() -> PathBuf {
    workspace_root().join("firmware")
}

/// `qemu-system-arm`, when it is on the `PATH`.
pub fn qemu_binary() -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths).map(|p| p.join("qemu-system-arm")).find(|p| p.is_file())
}

/// Builds the firmware (release, `--locked`) for `thumbv7em-none-eabihf` and returns its
/// ELF. Cargo runs in the firmware's folder, whose `.cargo/config.toml` names the target.
pub fn firmware_elf() -> anyhow::Result<PathBuf> {
    build_firmware(&[])
}

/// The firmware as [`firmware_elf`], built with its `trace` feature: its console carries
/// every call its loop makes into the device, for [`replay_trace`]. A copy of its own, so
/// that a build of the plain firmware does not replace it under a running QEMU.
pub fn traced_firmware_elf() -> anyhow::Result<PathBuf> {
    let built = build_firmware(&["--features", "trace"])?;
    let copy = built.with_file_name("dgt-relay-firmware-traced");
    std::fs::copy(&built, &copy).with_context(|| format!("copying {}", built.display()))?;
    Ok(copy)
}

fn build_firmware(extra: &[&str]) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let dir = firmware_dir();
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--release", "--locked"])
        .args(extra)
        .current_dir(&dir)
        .env_remove("CARGO_TARGET_DIR")
        .status()
        .context("running cargo build in firmware/")?;
    if !status.success() {
        bail!("cargo build --release {} in firmware/ failed", extra.join(" "));
    }
    Ok(dir.join("target/thumbv7em-none-eabihf/release/dgt-relay-firmware"))
}

/// What a box published, read from its frames to the host: the confirmed moves of each
/// game (UCI, in ply order), as a journal keeps them.
pub fn confirmed_games<'u>(ups: impl IntoIterator<Item = &'u Up>) -> Vec<Vec<String>> {
    let mut games: Vec<Vec<String>> = Vec::new();
    for up in ups {
        let Up::Record { record, .. } = up else { continue };
        match record {
            Record::GameStarted { new_record: true, .. } => games.push(Vec::new()),
            Record::Move { confirmed: true, mv } => {
                if games.is_empty() {
                    games.push(Vec::new());
                }
                if let Some(g) = games.last_mut() {
                    g.truncate(usize::from(mv.ply).saturating_sub(1));
                    g.push(mv.uci.clone());
                }
            }
            Record::TakenBack { to_ply, .. } => {
                if let Some(g) = games.last_mut() {
                    g.truncate(usize::from(*to_ply));
                }
            }
            _ => {}
        }
    }
    games
}

/// Replays a traced box's run (its console, see [`traced_firmware_elf`]) through a
/// [`Device`] on this machine, with the box's settings: the same calls with the same
/// bytes at the same milliseconds, so the same session decisions, apart from what differs
/// in the machine itself (the heap: the box's may refuse an allocation this one grants).
/// Returns every frame the device made for the host, with the device's millisecond.
pub fn replay_trace(trace: &str) -> anyhow::Result<Vec<(u64, Up)>> {
    fn hex(s: &str) -> anyhow::Result<Vec<u8>> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(s.get(i..i + 2).context("odd hex")?, 16).context("hex"))
            .collect()
    }
    let mut device: Option<Device> = None;
    let mut frames = FrameDecoder::new();
    let mut ups = Vec::new();
    // A box still running may be writing its last line.
    let complete = &trace[..trace.rfind('\n').map_or(0, |i| i + 1)];
    for (n, line) in complete.lines().enumerate() {
        let mut words = line.split_whitespace();
        let (Some(kind), Some(at)) = (words.next(), words.next()) else { continue };
        let Ok(at) = at.parse::<u64>() else { continue };
        // Only what went into the device is replayed: `w` (written to the board) and `l` (a
        // long turn) are for reading.
        if !matches!(kind, "i" | "b" | "p" | "h") {
            continue;
        }
        let bytes = words.next().map(hex).transpose().with_context(|| format!("trace line {}", n + 1))?;
        match (kind, &mut device, bytes) {
            ("i", _, None) => device = Some(Device::new(at, DeviceConfig::new("replay", "replay"))),
            ("b", Some(d), Some(b)) => d.on_board_bytes(at, &b),
            ("p", Some(d), None) => d.poll(at),
            ("h", Some(d), Some(b)) => d.on_bridge_bytes(at, &b),
            _ => continue,
        }
        if let Some(d) = &mut device {
            // Everything out at once (a line being resumed comes a move at a time).
            while !d.bridge_output().is_empty() {
                frames.feed(d.bridge_output(), |f: Result<Up, _>| ups.extend(f.ok().map(|u| (at, u))));
                let n = d.bridge_output().len();
                d.bridge_written(n);
            }
            let _ = d.take_board_output();
        }
    }
    if device.is_none() {
        bail!("no device start in the trace");
    }
    Ok(ups)
}

/// What goes wrong on a bridge, put on it by the test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Garbage {
    /// Bytes that are no frame, toward the box.
    ToBox,
    /// Bytes that are no frame, toward the relay.
    ToRelay,
}

/// The bytes put on the line as garbage: a torn frame, zeros, noise.
pub const GARBAGE: &[u8] = &[0x42, 0x17, 0x00, 0x9C, 0xFF, 0x01, 0x00, 0x00, 0x55, 0xAA, 0x03];

/// The test's cable between a box's UART1 (QEMU's pty) and the relay's end (a pty of its
/// own): carries bytes both ways, reads the box's status frames on the way, and puts
/// garbage on the line when told.
#[derive(Debug)]
pub struct Cable {
    relay_end: PathBuf,
    stop: Arc<AtomicBool>,
    garbage: Arc<Mutex<Vec<Garbage>>>,
    status: Arc<Mutex<Option<DeviceStatus>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Cable {
    /// Plugs into the box's pty `box_end`.
    pub fn plug(box_end: &Path) -> anyhow::Result<Cable> {
        let dev = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags((nix::fcntl::OFlag::O_NOCTTY | nix::fcntl::OFlag::O_NONBLOCK).bits())
            .open(box_end)
            .with_context(|| format!("opening the box's pty {}", box_end.display()))?;
        dgt_hil_sim::pty::set_raw_9600(&dev).context("raw mode on the box's pty")?;
        let relay = Pty::open().context("the relay's end of the cable")?;
        let relay_end = relay.slave_path().to_path_buf();
        let stop = Arc::new(AtomicBool::new(false));
        let garbage = Arc::new(Mutex::new(Vec::new()));
        let status = Arc::new(Mutex::new(None));
        let (s, g, st) = (Arc::clone(&stop), Arc::clone(&garbage), Arc::clone(&status));
        let thread = std::thread::spawn(move || carry(dev, relay, &s, &g, &st));
        Ok(Cable { relay_end, stop, garbage, status, thread: Some(thread) })
    }

    /// The path the relay opens (`--bridge`).
    pub fn relay_end(&self) -> &Path {
        &self.relay_end
    }

    /// Puts garbage on the line.
    pub fn garbage(&self, g: Garbage) {
        if let Ok(mut q) = self.garbage.lock() {
            q.push(g);
        }
    }

    /// The box's last status frame.
    pub fn status(&self) -> Option<DeviceStatus> {
        self.status.lock().ok().and_then(|s| *s)
    }
}

impl Drop for Cable {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Writes all of `bytes` to a non-blocking fd, waiting a little while it is full.
fn write_all(mut w: impl std::io::Write, bytes: &[u8]) {
    let mut rest = bytes;
    let deadline = Instant::now() + Duration::from_secs(2);
    while !rest.is_empty() && Instant::now() < deadline {
        match w.write(rest) {
            Ok(n) => rest = &rest[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(_) => return,
        }
    }
}

fn carry(
    dev: std::fs::File,
    relay: Pty,
    stop: &AtomicBool,
    garbage: &Mutex<Vec<Garbage>>,
    status: &Mutex<Option<DeviceStatus>>,
) {
    use std::io::Read;
    let mut ups = FrameDecoder::new();
    let mut buf = [0u8; 4096];
    while !stop.load(Ordering::Relaxed) {
        let present = relay.host_present();
        let mut fds = vec![PollFd::new(dev.as_fd(), PollFlags::POLLIN)];
        if present {
            fds.push(PollFd::new(relay.master().as_fd(), PollFlags::POLLIN));
        }
        let _ = poll(&mut fds, PollTimeout::from(20u8));
        let pending: Vec<Garbage> = garbage.lock().map(|mut q| std::mem::take(&mut *q)).unwrap_or_default();
        for g in pending {
            match g {
                Garbage::ToBox => write_all(&dev, GARBAGE),
                Garbage::ToRelay if present => write_all(RelayEnd(&relay), GARBAGE),
                Garbage::ToRelay => {}
            }
        }
        if let Ok(n) = (&dev).read(&mut buf)
            && n > 0
        {
            ups.feed(&buf[..n], |f: Result<Up, _>| {
                if let Ok(Up::Status(s)) = f
                    && let Ok(mut st) = status.lock()
                {
                    *st = Some(s);
                }
                if let Ok(Up::Record { record, .. }) = &f
                    && std::env::var_os("E2E_BOX_DEBUG").is_some()
                {
                    let kind = format!("{record:?}");
                    let kind: String = kind.chars().take_while(|c| c.is_alphanumeric()).collect();
                    eprintln!("record {kind}");
                }
            });
            // The relay down: what the box sends meanwhile goes nowhere.
            if present {
                write_all(RelayEnd(&relay), &buf[..n]);
            }
        }
        if present
            && let Ok(n) = relay.read(&mut buf)
            && n > 0
        {
            write_all(&dev, &buf[..n]);
        }
    }
}

/// The relay's end of the cable, as a writer.
struct RelayEnd<'a>(&'a Pty);

impl std::io::Write for RelayEnd<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One relay box: QEMU running the firmware, its board on UART0, its cable on UART1.
#[derive(Debug)]
pub struct RelayBox {
    qemu: Child,
    /// The cable on its bridge.
    pub cable: Cable,
    /// Its console (UART2): the boot line, and a panic if there is one.
    pub console: PathBuf,
}

impl RelayBox {
    /// Boots the firmware `elf` with the board's pty `board` on UART0.
    pub fn boot(qemu: &Path, elf: &Path, board: &Path, console: PathBuf) -> anyhow::Result<RelayBox> {
        let errors = console.with_extension("qemu.log");
        let mut child = Command::new(qemu)
            .args(["-M", "mps2-an386", "-nographic", "-monitor", "none", "-no-reboot"])
            .arg("-serial")
            .arg(board)
            .args(["-serial", "pty", "-serial"])
            .arg(format!("file:{}", console.display()))
            .arg("-kernel")
            .arg(elf)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&errors)?)
            .spawn()
            .with_context(|| format!("starting {}", qemu.display()))?;
        // QEMU names the pty it made for UART1 on its standard output.
        let stdout = child.stdout.take().context("QEMU's standard output")?;
        let mut lines = BufReader::new(stdout).lines();
        let pty = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(p) = line.split_whitespace().find(|w| w.starts_with("/dev/pts/")) {
                        break PathBuf::from(p);
                    }
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    bail!(
                        "QEMU did not name its pty: {}",
                        std::fs::read_to_string(&errors).unwrap_or_default()
                    );
                }
            }
        };
        std::thread::spawn(move || for _ in lines {});
        let cable = Cable::plug(&pty)?;
        Ok(RelayBox { qemu: child, cable, console })
    }

    /// What the box wrote on its console.
    pub fn console_text(&self) -> String {
        std::fs::read_to_string(&self.console).unwrap_or_default()
    }
}

impl Drop for RelayBox {
    fn drop(&mut self) {
        let _ = self.qemu.kill();
        let _ = self.qemu.wait();
    }
}

/// Bytes a second on the board's line: 9600 baud, 8N1.
pub const LINE_RATE: u32 = 960;

/// How to run games through relay boxes.
#[derive(Clone, Debug)]
pub struct BoxRunOptions {
    /// Simulator speed (thinking time between moves).
    pub speed: f64,
    /// Simulator speed of the hand sequences.
    pub hand_speed: f64,
    /// Relay kills: seconds after the games started, and time down.
    pub kills: Vec<(f64, Duration)>,
    /// Garbage is put on every bridge, both ways, this often.
    pub garbage_every: Duration,
    /// Working folder.
    pub dir: PathBuf,
    /// The relay binary.
    pub relay_bin: PathBuf,
    /// QEMU.
    pub qemu: PathBuf,
    /// The firmware.
    pub firmware: PathBuf,
    /// First serial number of the simulated boards.
    pub first_serial: u32,
}

/// What a run through relay boxes produced.
#[derive(Debug)]
pub struct BoxRunReport {
    /// The check of each game.
    pub checks: Vec<(String, GameCheck)>,
    /// The boxes' last status frames.
    pub statuses: Vec<Option<DeviceStatus>>,
    /// The `bridge` alerts the last relay shows, per board.
    pub bridge_alerts: BTreeMap<String, Vec<String>>,
    /// Garbage put on the lines, each way, per bridge.
    pub garbage_sent: usize,
    /// Everything wrong.
    pub failures: Vec<String>,
    /// Per box, when its firmware was traced: its run replayed off the device (see
    /// [`replay_trace`]) against the truth.
    pub replays: Vec<String>,
    /// Real time the run took.
    pub wall: Duration,
}

impl std::fmt::Display for BoxRunReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "relay boxes: {} games in {:.0} s", self.checks.len(), self.wall.as_secs_f64())?;
        for (label, c) in &self.checks {
            writeln!(
                f,
                "  {label}: {} plies, %clk {}/{} wrong, {} missing, {} ghosts, result {}",
                c.plies,
                c.clk_misses,
                c.clk_checked,
                c.missing,
                c.ghosts,
                if c.result_wrong { "WRONG" } else { "ok" }
            )?;
        }
        for (i, s) in self.statuses.iter().enumerate() {
            writeln!(f, "  box {i}: {s:?}")?;
        }
        for (serial, a) in &self.bridge_alerts {
            writeln!(f, "  board {serial} bridge alerts: {a:?}")?;
        }
        for r in &self.replays {
            writeln!(f, "  {r}")?;
        }
        for x in &self.failures {
            writeln!(f, "FAIL {x}")?;
        }
        Ok(())
    }
}

/// One job per board, each board behind its own relay box, one relay; see the module
/// docs.
pub fn box_run(jobs: Vec<Job>, opts: &BoxRunOptions) -> anyhow::Result<BoxRunReport> {
    let started = Instant::now();
    let _ = std::fs::remove_dir_all(&opts.dir);
    std::fs::create_dir_all(&opts.dir)?;
    let n = jobs.len();
    let template = SimConfig {
        board: BoardConfig::with_serial(opts.first_serial),
        speed: opts.speed,
        hand_speed: opts.hand_speed,
        // The box's UART0 is a 9600-baud line: the board's bytes come at most as fast as
        // such a line carries them (a clock run fast by the scenario shows far more
        // readings than that; the board sends the latest when the line is free). Unpaced,
        // a pty takes them as fast as they come, faster than QEMU's UART hands them to the
        // box, which then sees the board late, bunched, by up to seconds.
        // `E2E_BOX_UNPACED=1` feeds the boxes unpaced, to see a session behind such a
        // stream (replay a box's trace with `replay_trace`).
        line_rate: std::env::var_os("E2E_BOX_UNPACED").is_none().then_some(LINE_RATE),
        ..SimConfig::default()
    };
    let boards = spawn_fleet(n, &template, Some(&opts.dir.join("links"))).context("spawning boards")?;
    let mut boxes = Vec::new();
    for (i, b) in boards.iter().enumerate() {
        let console = opts.dir.join(format!("box-{i}-console.log"));
        // QEMU takes a tty by its /dev path, not through the board's link.
        let pty = std::fs::canonicalize(b.path())?;
        boxes.push(RelayBox::boot(&opts.qemu, &opts.firmware, &pty, console)?);
    }
    let data = opts.dir.join("data");
    let mut args: Vec<String> = vec!["run".into(), "--data".into(), data.display().to_string()];
    for b in &boxes {
        args.push("--bridge".into());
        args.push(b.cable.relay_end().display().to_string());
    }
    let serials: Vec<String> = (0..n).map(|i| (opts.first_serial + i as u32).to_string()).collect();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let start = |k: usize| -> anyhow::Result<(Relay, Recorder)> {
        let dir = opts.dir.join(format!("relay-{k}"));
        let relay = Relay::start(&opts.relay_bin, &dir, &args)?;
        let recorder = Recorder::start_logged(rt.handle(), relay.addr, Some(&dir.join("feed-frames.log")))?;
        Ok((relay, recorder))
    };
    let mut instances = vec![start(0)?];
    if !wait_until(Duration::from_secs(60), || all_active(&instances[0].0, &serials)) {
        bail!(
            "not every board became active through its box: {:?}\n{}\nconsoles: {:?}",
            instances[0].0.get("/api/boards"),
            instances[0].0.log_tail(),
            boxes.iter().map(RelayBox::console_text).collect::<Vec<_>>()
        );
    }
    let duration =
        jobs.iter().map(|j| j.scenario.real_duration(opts.speed, opts.hand_speed)).max().unwrap_or_default();
    let handles = boards
        .iter()
        .zip(&jobs)
        .map(|(b, j)| b.start_scenario(j.scenario.clone(), StartPolicy::WhenHostListens))
        .collect::<Result<Vec<_>, _>>()?;
    let games_started = Instant::now();
    let mut failures = Vec::new();
    let mut garbage_sent = 0;
    let mut next_garbage = games_started + opts.garbage_every;
    let mut kills = opts.kills.iter().peekable();
    // Until every scenario ended: kills and garbage on their schedule.
    let end = games_started + duration + Duration::from_secs(60);
    let mut done = vec![false; n];
    // `E2E_BOX_DEBUG=1` prints every box's status every 5 s.
    let debug = std::env::var_os("E2E_BOX_DEBUG").is_some();
    let mut next_debug = Instant::now();
    while !done.iter().all(|d| *d) && Instant::now() < end {
        if debug && Instant::now() >= next_debug {
            next_debug = Instant::now() + Duration::from_secs(5);
            for (i, b) in boxes.iter().enumerate() {
                eprintln!("{:5.1} s box {i}: {:?}", games_started.elapsed().as_secs_f64(), b.cable.status());
            }
        }
        for (i, h) in handles.iter().enumerate() {
            if !done[i]
                && let Some(r) = h.try_report()
            {
                done[i] = true;
                if !r.completed {
                    failures.push(format!("board {}: the simulator did not finish", i + 1));
                }
            }
        }
        let now = Instant::now();
        if now >= next_garbage {
            next_garbage = now + opts.garbage_every;
            garbage_sent += 1;
            for b in &boxes {
                b.cable.garbage(Garbage::ToBox);
                b.cable.garbage(Garbage::ToRelay);
            }
        }
        if let Some(&&(at, down)) = kills.peek()
            && games_started.elapsed().as_secs_f64() >= at
        {
            kills.next();
            if let Some((relay, _)) = instances.last_mut() {
                relay.kill9();
            }
            std::thread::sleep(down);
            let next = start(instances.len())?;
            if !wait_until(Duration::from_secs(30), || all_active(&next.0, &serials)) {
                failures.push(format!("after the kill at {at} s: not every board active again in 30 s"));
            }
            instances.push(next);
            // Garbage after the last restart too, so the last relay counts some.
            next_garbage = Instant::now() + Duration::from_secs(2);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (last, recorder) = instances.last().context("a relay instance")?;
    let game_of = |serial: &str| {
        recorder.with(|s| s.board_of_serial(serial).and_then(|b| s.games.get(&(b, 1))).cloned())
    };
    for (job, serial) in jobs.iter().zip(&serials) {
        let want = job.truth().moves.len();
        let expected = job.expected_result();
        wait_until(Duration::from_secs(30), || {
            game_of(serial).is_some_and(|g| g.moves.len() >= want && g.result == expected)
        });
    }
    let mut checks = Vec::new();
    for (i, (job, serial)) in jobs.iter().zip(&serials).enumerate() {
        let board = recorder.with(|s| s.board_of_serial(serial));
        let mut feed: FeedGame = game_of(serial).unwrap_or_default();
        // Ghosts: every confirmed move any relay instance published for this game.
        feed.confirmed_sent = instances
            .iter()
            .flat_map(|(_, r)| {
                r.with(|s| {
                    s.board_of_serial(serial)
                        .and_then(|b| s.games.get(&(b, 1)))
                        .map(|g| g.confirmed_sent.clone())
                        .unwrap_or_default()
                })
            })
            .collect();
        let pgn = board.and_then(|b| match last.get(&format!("/pgn/1/{b}")) {
            Ok((200, body)) => Some(body),
            _ => None,
        });
        let pace = Pace { speed: opts.speed, hand_speed: opts.hand_speed, ..Pace::RELAY_SUITE };
        let outcome = Outcome::read_back(i, serial.clone(), board, (feed, pgn), done[i], pace);
        let c = acceptance::check_noting(job, &outcome, &mut failures);
        checks.push((job.label.clone(), c));
    }
    // Operator actions cross the bridge: a correction checked by the box (the deepest its
    // stack goes: a second tracker replays the game), and one the box refuses.
    for (job, serial) in jobs.iter().zip(&serials) {
        let (Some(b), Some(last_move)) =
            (recorder.with(|s| s.board_of_serial(serial)), job.truth().moves.last())
        else {
            continue;
        };
        let path = format!("/api/admin/boards/{b}/correct?dry_run=1");
        let body = format!(r#"{{"from_ply":{},"moves":["{}"]}}"#, job.truth().moves.len(), last_move.uci);
        match last.admin(&path, &body) {
            Ok((200, text)) if text.contains(&format!(r#""uci":"{}""#, last_move.uci)) => {}
            other => failures.push(format!("board {b}: a correction checked by the box: {other:?}")),
        }
        match last.admin(&path, r#"{"from_ply":1,"moves":["e2e5"]}"#) {
            Ok((422, text)) if text.contains("not legal") => {}
            other => failures.push(format!("board {b}: an illegal correction refused by the box: {other:?}")),
        }
    }
    // A status with the memory figures after them (taken every second).
    std::thread::sleep(Duration::from_millis(2_500));
    for (k, (_, r)) in instances.iter().enumerate() {
        for p in r.with(|s| s.problems.clone()) {
            failures.push(format!("feed of relay {k}: {p}"));
        }
    }
    let mut bridge_alerts = BTreeMap::new();
    if let Ok(v) = last.json("/api/boards") {
        for b in v.as_array().into_iter().flatten() {
            let serial = b["serial"].as_str().unwrap_or_default().to_owned();
            let alerts: Vec<String> = b["alerts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|a| a["code"] == "bridge")
                .filter_map(|a| a["message"].as_str().map(str::to_owned))
                .collect();
            bridge_alerts.insert(serial, alerts);
        }
    }
    for (i, b) in boxes.iter().enumerate() {
        // The console: the boot line, the trace if the firmware was traced, a panic last.
        let console = b.console_text();
        if let Some(at) = console.find("panic") {
            failures.push(format!("box {i} {}", &console[at..]));
        }
    }
    // Each traced box's run replayed off the device: the same session code on the same
    // input decides the same, so its game is exact too (a difference would be the
    // device's own: its heap refused what this machine's grants).
    let mut replays = Vec::new();
    for (i, (b, job)) in boxes.iter().zip(&jobs).enumerate() {
        let console = b.console_text();
        if !console.lines().any(|l| l.starts_with("i ")) {
            continue;
        }
        let (exact, line) = replay_against(&console, job);
        if !exact {
            failures.push(format!("box {i}: {line}"));
        }
        replays.push(format!("box {i}: {line}"));
    }
    let statuses = boxes.iter().map(|b| b.cable.status()).collect();
    drop(instances);
    drop(boxes);
    drop(boards);
    Ok(BoxRunReport {
        checks,
        statuses,
        bridge_alerts,
        garbage_sent,
        failures,
        replays,
        wall: started.elapsed(),
    })
}

/// A box's traced run replayed off the device, against the job's truth: whether the
/// replay's game is the truth, and a line saying how far it agrees.
pub fn replay_against(trace: &str, job: &Job) -> (bool, String) {
    let ups = match replay_trace(trace) {
        Ok(u) => u,
        Err(e) => return (false, format!("the trace could not be replayed: {e:#}")),
    };
    let truth: Vec<&str> = job.truth().moves.iter().map(|m| m.uci.as_str()).collect();
    let games = confirmed_games(ups.iter().map(|(_, u)| u));
    let agree = |g: &Vec<String>| g.iter().zip(&truth).take_while(|(a, b)| a == b).count();
    // The game of the job: the one that agrees longest with the truth (a board found
    // rotated begins its game again).
    let Some(game) = games.iter().max_by_key(|g| (agree(g), g.len())) else {
        return (false, "replayed off the device: no game".into());
    };
    let same = agree(game);
    let mut line = format!("replayed off the device: {same} of {} plies as the truth", truth.len());
    if let Some(wrong) = game.get(same) {
        line +=
            &format!(", ply {} {wrong} where {} was played", same + 1, truth.get(same).unwrap_or(&"nothing"));
    } else if same < truth.len() {
        line += &format!(", none from ply {}", same + 1);
    }
    if games.len() > 1 {
        line += &format!(" ({} games)", games.len());
    }
    (same == truth.len() && game.len() == truth.len(), line)
}
