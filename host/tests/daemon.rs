//! The daemon as a service manager or an operator's shell sees it: signals, logs, the listen
//! address and the example configuration, on the real `dgt-relay` binary. The relay runs
//! with one serial port that does not exist (retried, never fatal), so no board is needed.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_dgt-relay");
const CLEAN_STOP: &str = "stopped; journals and PGN flushed";

/// A fresh temporary folder for one test.
fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dgt-relay-daemon-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temporary folder");
    d
}

/// `dgt-relay` with the test environment: info logs, no colour preference, a fixed token.
fn relay_command(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .env("RUST_LOG", "info")
        .env_remove("NO_COLOR")
        .env("DGT_RELAY_TOKEN", "test-token-0123456789abcdef");
    c
}

/// A running relay with its standard error in a file.
struct Daemon {
    child: Child,
    stderr: PathBuf,
    /// The first line it printed.
    first_line: String,
}

impl Daemon {
    /// `dgt-relay run` on a data folder in `dir`, a port that does not exist, `extra` options;
    /// returns once it has printed its address.
    fn start(dir: &Path, extra: &[&str]) -> Daemon {
        let stderr = dir.join("stderr.log");
        let data = dir.join("data");
        let port = dir.join("no-such-board");
        let mut args =
            vec!["run", "--data", data.to_str().expect("path"), "--port", port.to_str().expect("path")];
        args.extend_from_slice(extra);
        if !extra.contains(&"--listen") {
            args.extend(["--listen", "127.0.0.1:0"]);
        }
        let mut child = relay_command(&args)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).expect("stderr file"))
            .spawn()
            .expect("spawn dgt-relay");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first_line = lines.next().and_then(Result::ok).unwrap_or_default();
        std::thread::spawn(move || for _ in lines {});
        let d = Daemon { child, stderr, first_line };
        assert!(
            d.first_line.starts_with("dgt-relay listening on http://"),
            "first line {:?}; stderr:\n{}",
            d.first_line,
            d.logs()
        );
        d
    }

    fn logs(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Sends `signal` (`HUP`, `TERM`, `INT`) and waits for the exit.
    fn stop_with(&mut self, signal: &str) -> ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args([&format!("-{signal}"), &pid]).status().expect("kill");
        assert!(sent.success(), "kill -{signal} {pid}");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                return s;
            }
            assert!(Instant::now() < deadline, "the relay did not stop on SIG{signal}:\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `dgt-relay args` to its end (it must end within 30 s).
fn run_to_end(args: &[&str]) -> Output {
    let mut child =
        relay_command(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn dgt-relay");
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("dgt-relay {args:?} did not end within 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

#[test]
fn hangup_interrupt_and_terminate_stop_cleanly() {
    for signal in ["HUP", "INT", "TERM"] {
        let dir = tmpdir(&format!("signal-{signal}"));
        let mut d = Daemon::start(&dir, &[]);
        let status = d.stop_with(signal);
        let logs = d.logs();
        assert_eq!(status.code(), Some(0), "SIG{signal}: {status}; stderr:\n{logs}");
        assert!(logs.contains(&format!("SIG{signal}")), "SIG{signal} not logged:\n{logs}");
        assert!(logs.contains(CLEAN_STOP), "SIG{signal}: no clean stop logged:\n{logs}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn text_logs_to_a_file_have_no_colour() {
    let dir = tmpdir("no-colour");
    let mut d = Daemon::start(&dir, &[]);
    assert_eq!(d.stop_with("TERM").code(), Some(0));
    let logs = d.logs();
    assert!(logs.contains(CLEAN_STOP) && logs.contains("INFO"), "{logs}");
    assert!(!logs.contains("\x1b["), "ANSI escapes in logs written to a file:\n{logs:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn json_logs_are_one_object_a_line() {
    let dir = tmpdir("json");
    let mut d = Daemon::start(&dir, &["--log-format", "json"]);
    assert_eq!(d.stop_with("TERM").code(), Some(0));
    let logs = d.logs();
    let mut messages = Vec::new();
    for line in logs.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}\n{logs}"));
        assert!(v["level"].is_string() && v["timestamp"].is_string(), "{line}");
        messages.push(v["fields"]["message"].as_str().unwrap_or_default().to_owned());
    }
    assert!(!logs.contains("\x1b["), "{logs:?}");
    assert!(messages.iter().any(|m| m == CLEAN_STOP), "{messages:?}");
    // The option also goes before the subcommand (this run fails on the missing file, not
    // on the command line).
    let out = run_to_end(&["--log-format", "json", "check-config", "no-such-file.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(1) && err.contains("cannot read no-such-file.toml"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn listen_takes_a_host_name() {
    let dir = tmpdir("listen");
    let mut d = Daemon::start(&dir, &["--listen", "localhost:0"]);
    let addr: std::net::SocketAddr = d
        .first_line
        .trim_start_matches("dgt-relay listening on http://")
        .parse()
        .unwrap_or_else(|e| panic!("{e}: {}", d.first_line));
    assert!(addr.ip().is_loopback() && addr.port() != 0, "{addr}");
    assert!(std::net::TcpStream::connect(addr).is_ok(), "nothing listens on {addr}");
    assert_eq!(d.stop_with("TERM").code(), Some(0));

    let data = dir.join("data");
    let base = ["run", "--data", data.to_str().expect("path"), "--port", "/dev/null-no-board"];
    for (listen, says) in [
        ("no-such-host.invalid:8080", "does not resolve"),
        ("localhost", "has no port"),
        ("localhost:http", "HOST:PORT"),
    ] {
        let mut args = base.to_vec();
        args.extend(["--listen", listen]);
        let out = run_to_end(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--listen {listen}: {err}");
        assert!(err.contains("--listen") && err.contains(says), "--listen {listen}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_example_configuration_checks() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../relay.example.toml");
    let out = run_to_end(&["check-config", example.to_str().expect("path")]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains(": ok (2 boards, round 1)"), "{stdout}");
    // The one option left commented out (a token in a file is a secret): valid when set.
    let text = std::fs::read_to_string(&example).expect("example");
    assert!(text.contains("\n# token = "), "the example documents `token`");
    let dir = tmpdir("example");
    let with_token = dir.join("relay.toml");
    std::fs::write(&with_token, text.replace("\n# token = ", "\ntoken = ")).expect("write");
    let out = run_to_end(&["check-config", with_token.to_str().expect("path")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The commented-out [nats] section is valid when set.
    assert!(text.contains("\n# [nats]\n# url = "), "the example documents [nats]");
    let with_nats = dir.join("nats.toml");
    std::fs::write(&with_nats, text.replace("\n# [nats]\n# url = ", "\n[nats]\nurl = ")).expect("write");
    let out = run_to_end(&["check-config", with_nats.to_str().expect("path")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Every key the configuration accepts appears in the example.
    for key in [
        "listen",
        "data",
        "token",
        "ports",
        "bus",
        "discover",
        "silence_ms",
        "battery_poll_ms",
        "max_subscribers",
        "max_connections",
        "header_timeout_ms",
        "allowed_origins",
        "[event]",
        "name",
        "site",
        "round",
        "time_control",
        "[[board]]",
        "number",
        "serial",
        "white",
        "black",
        "fide_id",
        "title",
        "[nats]",
        "password",
        "stream",
        "source",
    ] {
        assert!(text.contains(key), "relay.example.toml does not document {key}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 27, recipe 8: `edge --config` takes the server from `[nats]` (no `--nats`
/// demanded); without either it says what it needs; credentials in a URL are refused
/// without being shown.
#[test]
fn an_edge_takes_its_server_from_the_configuration() {
    let dir = tmpdir("edge-config");
    let config = dir.join("edge.toml");
    // Nothing listens there: the edge starts and keeps trying.
    std::fs::write(&config, "[nats]\nurl = \"nats://127.0.0.1:1\"\nstream = \"EDGE\"\n").expect("config");
    let stderr = dir.join("stderr.log");
    let data = dir.join("data");
    let mut child = relay_command(&[
        "edge",
        "--config",
        config.to_str().expect("path"),
        "--data",
        data.to_str().expect("path"),
        "--listen",
        "127.0.0.1:0",
    ])
    .stdout(Stdio::piped())
    .stderr(std::fs::File::create(&stderr).expect("stderr file"))
    .spawn()
    .expect("spawn dgt-relay");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    let logs = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert!(first.starts_with("dgt-relay listening on http://"), "{first:?}\n{logs}");
    assert!(logs.contains("edge: serving from NATS") && logs.contains("EDGE"), "{logs}");

    let out = run_to_end(&["edge", "--listen", "127.0.0.1:0"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--nats"), "{out:?}");
    let out = run_to_end(&["edge", "--nats", "nats://venue:s3cret@127.0.0.1:1", "--listen", "127.0.0.1:0"]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && text.contains("no credentials") && !text.contains("s3cret"), "{text}");
}
