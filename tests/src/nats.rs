//! A real `nats-server` with JetStream for the tests: on 127.0.0.1, a free port, its store
//! in a folder of the test's, killed and restarted on the same port and store.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// `$NATS_SERVER`, else `nats-server` on the `PATH`, if it runs.
pub fn nats_binary() -> Option<PathBuf> {
    let bin = std::env::var_os("NATS_SERVER").map_or_else(|| PathBuf::from("nats-server"), PathBuf::from);
    let ok = Command::new(&bin)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(bin)
}

/// True when the tests must fail rather than skip without a server (`DGT_REQUIRE_NATS=1`,
/// as CI sets it).
pub fn nats_required() -> bool {
    std::env::var("DGT_REQUIRE_NATS").is_ok_and(|v| v == "1")
}

/// A free TCP port on 127.0.0.1 (bound and released: another process could take it in
/// between, which the caller sees as a start failure).
pub fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// A running nats-server; killed when dropped.
#[derive(Debug)]
pub struct NatsServer {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
    starts: u32,
}

impl NatsServer {
    /// Starts a server with JetStream, its store under `dir`.
    pub fn start(bin: &Path, dir: &Path) -> anyhow::Result<NatsServer> {
        std::fs::create_dir_all(dir)?;
        let mut s = NatsServer {
            bin: bin.to_owned(),
            dir: dir.to_owned(),
            port: free_port()?,
            child: None,
            starts: 0,
        };
        s.spawn()?;
        Ok(s)
    }

    /// `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    fn spawn(&mut self) -> anyhow::Result<()> {
        self.starts += 1;
        let log = self.dir.join(format!("nats-{}.log", self.starts));
        let child = Command::new(&self.bin)
            .args(["-js", "-a", "127.0.0.1", "-p", &self.port.to_string(), "-sd"])
            .arg(self.dir.join("store"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()
            .with_context(|| format!("starting {}", self.bin.display()))?;
        self.child = Some(child);
        // Ready once it says so (JetStream's store is loaded before that line).
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("Server is ready") {
                return Ok(());
            }
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                bail!("nats-server exited ({status}): {text}");
            }
            if Instant::now() > deadline {
                bail!("nats-server not ready within 15 s: {text}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL, and wait for the process to be gone.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port and store.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        self.kill();
        self.spawn()
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}
