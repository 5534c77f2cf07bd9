//! The real `dgt-relay` process: finding its binary, starting it on a loopback port,
//! a minimal HTTP client for its API, and its CPU and memory from `/proc`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, bail};

/// The admin token the relays started here use.
pub const TOKEN: &str = "e2e-test-token-0123456789abcdef";

/// The workspace root (the parent of this crate's folder).
pub fn workspace_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(Path::to_path_buf).unwrap_or(here)
}

fn newest_source(dir: &Path, newest: &mut SystemTime) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            newest_source(&p, newest);
        } else if p.extension().is_some_and(|x| x == "rs" || x == "toml")
            && let Ok(m) = e.metadata().and_then(|m| m.modified())
            && m > *newest
        {
            *newest = m;
        }
    }
}

/// True when `bin` is older than a source file of a crate it is built from.
fn stale(bin: &Path) -> bool {
    let Ok(built) = std::fs::metadata(bin).and_then(|m| m.modified()) else { return true };
    let mut newest = SystemTime::UNIX_EPOCH;
    let root = workspace_root();
    for krate in ["host/src", "host/Cargo.toml", "core-nostd/src", "protocol/src", "hil-sim/src"] {
        let p = root.join(krate);
        if p.is_dir() {
            newest_source(&p, &mut newest);
        } else if let Ok(m) = std::fs::metadata(&p).and_then(|m| m.modified()) {
            newest = newest.max(m);
        }
    }
    newest > built
}

/// The `dgt-relay` binary to test: `$DGT_RELAY_BIN`, else the one cargo built beside the
/// running executable (same target folder and profile). With `build` the binary is built
/// (or brought up to date) with cargo first; without it, a missing or stale binary is an
/// error that says which command builds it (cargo holds its lock while tests run).
pub fn relay_binary(build: bool) -> anyhow::Result<PathBuf> {
    if let Ok(p) = std::env::var("DGT_RELAY_BIN") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().context("current executable")?;
    let mut dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir.ends_with("deps") || dir.ends_with("examples") {
        dir.pop();
    }
    let bin = dir.join("dgt-relay");
    let release = dir.file_name().is_some_and(|n| n == "release");
    if build {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--quiet", "-p", "dgt-relay", "--bin", "dgt-relay"]).current_dir(workspace_root());
        if release {
            cmd.arg("--release");
        }
        let status = cmd.status().context("running cargo build -p dgt-relay")?;
        if !status.success() {
            bail!("cargo build -p dgt-relay failed");
        }
    }
    if !bin.exists() || stale(&bin) {
        bail!(
            "{} is missing or older than the sources; build it first: cargo build -p dgt-relay{} \
             (cargo test --workspace does)",
            bin.display(),
            if release { " --release" } else { "" }
        );
    }
    Ok(bin)
}

/// A running relay process; killed when dropped.
#[derive(Debug)]
pub struct Relay {
    /// The process.
    pub child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its standard error (logs).
    pub stderr_path: PathBuf,
}

impl Relay {
    /// Starts `bin` with `args`, `--listen 127.0.0.1:0` and the test token; waits for the
    /// first stdout line and reads the address from it.
    pub fn start(bin: &Path, dir: &Path, args: &[String]) -> anyhow::Result<Relay> {
        std::fs::create_dir_all(dir)?;
        let stderr_path = dir.join("relay-stderr.log");
        let stderr = std::fs::File::create(&stderr_path)?;
        let mut child = Command::new(bin)
            .args(args)
            .args(["--listen", "127.0.0.1:0"])
            .env("DGT_RELAY_TOKEN", TOKEN)
            .env("RUST_LOG", std::env::var("E2E_RELAY_LOG").unwrap_or_else(|_| "warn".into()))
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let stdout = child.stdout.take().context("relay stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        let Some(addr) = first.strip_prefix("dgt-relay listening on http://") else {
            let _ = child.kill();
            bail!(
                "unexpected first line {first:?}; stderr: {}",
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            );
        };
        let addr = addr.trim().parse().context("relay address")?;
        std::thread::spawn(move || for _ in lines {});
        Ok(Relay { child, addr, stderr_path })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the relay logged so far (its last 4,000 characters).
    pub fn log_tail(&self) -> String {
        let s = std::fs::read_to_string(&self.stderr_path).unwrap_or_default();
        let cut = s.len().saturating_sub(4000);
        s.get(cut..).unwrap_or(&s).to_owned()
    }

    /// GET a path.
    pub fn get(&self, path: &str) -> anyhow::Result<(u16, String)> {
        http(self.addr, "GET", path, &[], "")
    }

    /// GET a path that must answer 200 with JSON.
    pub fn json(&self, path: &str) -> anyhow::Result<serde_json::Value> {
        let (status, body) = self.get(path)?;
        if status != 200 {
            bail!("GET {path}: {status} {body}");
        }
        Ok(serde_json::from_str(&body)?)
    }

    /// POST an admin call with the token.
    pub fn admin(&self, path: &str, body: &str) -> anyhow::Result<(u16, String)> {
        let auth = format!("Bearer {TOKEN}");
        http(self.addr, "POST", path, &[("Authorization", auth.as_str())], body)
    }

    /// SIGKILL, and wait for the process to be gone.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then wait up to 10 s (SIGKILL after that).
    pub fn terminate(&mut self) -> Option<std::process::ExitStatus> {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        self.child.wait().ok()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU time (user + system) and resident memory of a process, from `/proc`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcStat {
    /// CPU seconds so far.
    pub cpu_s: f64,
    /// Resident set size, KiB.
    pub rss_kib: u64,
    /// Peak resident set size, KiB.
    pub hwm_kib: u64,
    /// Threads.
    pub threads: u64,
}

/// Reads `/proc/<pid>/stat` and `/proc/<pid>/status`.
pub fn proc_stat(pid: u32) -> ProcStat {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let fields: Vec<&str> =
        stat.rsplit_once(')').map(|(_, r)| r.split_whitespace().collect()).unwrap_or_default();
    // After the command: state is field 3, utime 14 and stime 15 (1-based in proc(5)).
    let tick = |i: usize| fields.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    let kib = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0)
    };
    ProcStat {
        cpu_s: (tick(11) + tick(12)) as f64 / 100.0,
        rss_kib: kib("VmRSS:"),
        hwm_kib: kib("VmHWM:"),
        threads: kib("Threads:"),
    }
}

/// A minimal HTTP/1.1 client: one request per connection, `Connection: close`.
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> anyhow::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !body.is_empty() {
        req.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes())?;
    let mut resp = Vec::new();
    // A server that answers before reading the whole body (413) may reset the connection
    // after its answer: what arrived is the answer.
    if let Err(e) = s.read_to_end(&mut resp)
        && resp.is_empty()
    {
        return Err(e.into());
    }
    let text = String::from_utf8_lossy(&resp).into_owned();
    let status = text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Ok((status, body))
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}
