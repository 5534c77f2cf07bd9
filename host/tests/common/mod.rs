//! Helpers for tests that run the real `dgt-relay` binary against simulated boards.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dgt_hil_sim::hands::{PlanOptions, plan_game};
use dgt_hil_sim::pgn::SourceGame;
use dgt_hil_sim::{BoardConfig, SimBoard, SimConfig};

pub const TOKEN: &str = "test-token-0123456789abcdef";

/// The relay binary: `$DGT_RELAY_BIN` (to run these tests against another build), else the
/// one cargo built for these tests.
pub fn relay_bin() -> PathBuf {
    std::env::var_os("DGT_RELAY_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_dgt-relay")), PathBuf::from)
}

/// A fresh temporary folder for one test.
pub fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dgt-relay-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes `relay.toml` in `dir` for a relay that pushes to a stand-in Lichess at `url`:
/// `head` (top-level settings and `[event]`), then `[lichess]` with `round` and a token file
/// holding `token`. Returns the config's path.
pub fn config_with_push(dir: &Path, head: &str, round: &str, token: &str, url: &str) -> PathBuf {
    let token_file = dir.join("lichess-token");
    std::fs::write(&token_file, token).unwrap();
    let config = dir.join("relay.toml");
    let lichess = format!(
        "[lichess]\nround = \"{round}\"\ntoken_file = \"{}\"\nurl = \"{url}\"\ntimeout_s = 1\n",
        token_file.display()
    );
    std::fs::write(&config, format!("{head}\n{lichess}")).unwrap();
    config
}

/// Games of the LiveChess sample round.
pub fn sample_games() -> Vec<SourceGame> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/livechess-2.2.5-sample-round.pgn");
    dgt_hil_sim::pgn::read_games(&path).unwrap()
}

/// A simulated board with a stable link in `dir`.
pub fn sim_board(dir: &Path, serial: u32, speed: f64) -> SimBoard {
    SimBoard::spawn(SimConfig {
        board: BoardConfig::with_serial(serial),
        link: Some(dir.join(format!("board-{serial}"))),
        speed,
        ..SimConfig::default()
    })
    .unwrap()
}

/// The scenario of a game, planned without noise.
pub fn scenario(game: &SourceGame) -> dgt_hil_sim::Scenario {
    plan_game(game, &PlanOptions { start_delay_ms: 500, ..PlanOptions::default() })
}

/// The relay process.
pub struct Relay {
    pub child: Child,
    pub addr: SocketAddr,
    pub stderr_path: PathBuf,
}

impl Relay {
    /// Starts `dgt-relay` with `args` plus a loopback listener on port 0, the test token,
    /// and waits for its address.
    pub fn start(dir: &Path, args: &[&str]) -> Relay {
        Relay::start_under(dir, &[], args)
    }

    /// [`Relay::start`] with `ulimit -n fd_limit` (soft and hard) when given.
    pub fn start_with_fd_limit(dir: &Path, args: &[&str], fd_limit: Option<u64>) -> Relay {
        match fd_limit {
            Some(n) => {
                let script = format!("ulimit -n {n} && exec \"$0\" \"$@\"");
                Relay::start_under(dir, &["sh", "-c", &script], args)
            }
            None => Relay::start_under(dir, &[], args),
        }
    }

    /// As [`Relay::start`], run through `wrapper` (a program and its arguments that runs
    /// the command after them, e.g. `prlimit --fsize=N --`).
    pub fn start_under(dir: &Path, wrapper: &[&str], args: &[&str]) -> Relay {
        let stderr_path = dir.join(format!("stderr-{}.log", Instant::now().elapsed().as_nanos()));
        let stderr = std::fs::File::create(&stderr_path).unwrap();
        let mut command = match wrapper.split_first() {
            Some((program, rest)) => {
                let mut c = Command::new(program);
                c.args(rest).arg(relay_bin());
                c
            }
            None => Command::new(relay_bin()),
        };
        let mut child = command
            .args(args)
            .args(["--listen", "127.0.0.1:0"])
            .env("DGT_RELAY_TOKEN", TOKEN)
            .env("RUST_LOG", "info,dgt_relay=debug")
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        let addr = first
            .strip_prefix("dgt-relay listening on http://")
            .unwrap_or_else(|| {
                panic!(
                    "unexpected first line {first:?}; stderr: {}",
                    std::fs::read_to_string(&stderr_path).unwrap_or_default()
                )
            })
            .parse()
            .unwrap();
        // Keep draining stdout so the process never blocks on it.
        std::thread::spawn(move || for _ in lines {});
        Relay { child, addr, stderr_path }
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM and wait.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < deadline, "relay did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn get(&self, path: &str) -> (u16, String) {
        http(self.addr, "GET", path, &[], "")
    }

    pub fn json(&self, path: &str) -> serde_json::Value {
        let (status, body) = self.get(path);
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    /// Waits until `f` holds for `/api/boards`, or panics with the last value.
    pub fn wait_boards(
        &self,
        what: &str,
        timeout: Duration,
        f: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let deadline = Instant::now() + timeout;
        loop {
            let v = self.json("/api/boards");
            if f(&v) {
                return v;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}: {v}\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request on its own connection (`Connection: close`): the status and the
/// body (the relay answers with `Content-Length` or chunked). Fails the test on a
/// connection error.
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    use std::io::{Read, Write};
    let fail = |e: std::io::Error| -> ! { panic!("{method} {path}: {e}") };
    let mut s = std::net::TcpStream::connect(addr).unwrap_or_else(|e| fail(e));
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap_or_else(|e| fail(e));
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    head += &format!("Content-Length: {}\r\n", body.len());
    if !body.is_empty() {
        head += "Content-Type: application/json\r\n";
    }
    for (k, v) in headers {
        head += &format!("{k}: {v}\r\n");
    }
    s.write_all(format!("{head}\r\n{body}").as_bytes()).unwrap_or_else(|e| fail(e));
    let mut raw = Vec::new();
    // An answer sent before the whole body was read (413) may come with a reset.
    if let Err(e) = s.read_to_end(&mut raw)
        && raw.is_empty()
    {
        fail(e);
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    if !head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        return (status, rest.to_owned());
    }
    // Chunked: size line, data, CRLF, until the zero-size chunk.
    let mut out = String::new();
    let mut rest = rest;
    while let Some((size, after)) = rest.split_once("\r\n") {
        match usize::from_str_radix(size.trim(), 16) {
            Ok(n) if n > 0 && after.len() >= n => {
                out.push_str(&after[..n]);
                rest = after[n..].trim_start_matches("\r\n");
            }
            _ => break,
        }
    }
    (status, out)
}

/// A websocket client of the relay's feed.
pub type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Connects to the feed; returns the client and its snapshot.
pub async fn ws_connect(r: &Relay) -> (Ws, serde_json::Value) {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", r.addr)).await.unwrap();
    let snapshot = ws_next(&mut ws, Duration::from_secs(5)).await;
    assert_eq!(snapshot["type"], "snapshot", "{snapshot}");
    (ws, snapshot)
}

/// The next JSON frame of the feed, within `timeout`.
pub async fn ws_next(ws: &mut Ws, timeout: Duration) -> serde_json::Value {
    use futures_util::StreamExt;
    loop {
        let msg = tokio::time::timeout(timeout, ws.next()).await.expect("a frame in time").unwrap().unwrap();
        if let tokio_tungstenite::tungstenite::Message::Text(t) = msg {
            return serde_json::from_str(t.as_str()).unwrap();
        }
    }
}

/// Confirmed SAN moves of board `n` in a `/api/boards` value.
pub fn confirmed(boards: &serde_json::Value, n: u64) -> Vec<String> {
    boards
        .as_array()
        .and_then(|a| a.iter().find(|b| b["board"] == n))
        .and_then(|b| b["moves"].as_array())
        .map(|m| m.iter().filter_map(|m| m["san"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// The source game's SAN moves (with check marks).
pub fn source_sans(game: &SourceGame) -> Vec<String> {
    game.moves.iter().map(|m| m.san.clone()).collect()
}
