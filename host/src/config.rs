//! The relay's configuration: a TOML file, overridden by command-line options.
//!
//! Every value is bounded and checked once, here, so the rest of the daemon can trust it.
//! Errors name the line of the file they come from: a TOML syntax error carries its own
//! position, and semantic checks (a duplicate board number, an over-long name) use the
//! spans that `toml` records for the values that can be wrong.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::invalid::{Invalid, in_range};
use crate::tournament::{Event, MAX_BOARDS, MAX_ROUND, Pairing, Player, Tournament, check_text};

/// The largest configuration file read (bytes).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// The default listening address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_CONFIG_BYTES`].
    #[error("{path}: file too large ({size} bytes, at most {MAX_CONFIG_BYTES})")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
    },
    /// A syntax or type error, as the TOML reader says it, at a known line.
    #[error("{path}:{line}: {message}")]
    Syntax {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A value refused, at a known line.
    #[error("{path}:{line}: {error}")]
    AtLine {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// Why.
        error: Invalid,
    },
    /// A value refused, with no line (a count over the whole file).
    #[error("{path}: {error}")]
    InFile {
        /// The file.
        path: String,
        /// Why.
        error: Invalid,
    },
    /// An environment variable's value refused.
    #[error("{var}: {error}")]
    Env {
        /// The variable.
        var: &'static str,
        /// Why.
        error: Invalid,
    },
    /// No token configured, and the system's random source failed to make one.
    #[error(
        "no admin token configured and the system's random source failed ({0}): set `token` in the config or \
         DGT_RELAY_TOKEN"
    )]
    NoRandom(String),
}

/// A board number listed in the configuration (`[[board]]`), and the e-board it is tied
/// to; its players go into the tournament's pairings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardConfig {
    /// Board number (1-based), the `Board` tag and the `game-M` file number.
    pub number: u32,
    /// The e-board's serial number, when this board number is tied to one board.
    pub serial: Option<String>,
}

/// The checked configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Where HTTP and the websocket listen.
    pub listen: SocketAddr,
    /// The data folder (journals and PGN).
    pub data: PathBuf,
    /// The admin token; `None` until [`Config::ensure_token`] runs.
    pub token: Option<String>,
    /// Serial ports opened by path.
    pub ports: Vec<PathBuf>,
    /// Serial ports that carry a chain of boards in DGT's bus mode.
    pub bus: Vec<PathBuf>,
    /// Serial ports with a relay box on them (the board's session runs on the box).
    pub bridge: Vec<PathBuf>,
    /// Also look for USB and Bluetooth serial devices.
    pub discover: bool,
    /// A Chess960 event (`[event] chess960 = true`): a board set up in one of the 960 start
    /// positions starts a game from it (`Variant "Chess960"`, `SetUp`, `FEN` from the first
    /// publication), castling as the board shows it.
    pub chess960: bool,
    /// Silence after which a board is declared not responding (milliseconds).
    pub silence_ms: u64,
    /// Battery status poll period for Bluetooth boards (milliseconds).
    pub battery_poll_ms: u64,
    /// The event, its live round and that round's pairings.
    pub tournament: Tournament,
    /// Boards listed by number.
    pub boards: Vec<BoardConfig>,
    /// Most websocket subscribers at once (lowered at start to fit the file descriptor
    /// limit, see [`crate::server::FdBudget`]).
    pub max_subscribers: usize,
    /// Feed connections one client address may hold (behind a reverse proxy, every
    /// spectator has the proxy's address); their snapshots scale with it (see
    /// [`crate::feed::ClientLimits::for_address`]).
    pub feed_per_address: usize,
    /// The Lichess push (`[lichess]`), when configured.
    pub lichess: Option<crate::push::LichessSettings>,
    /// Most open connections at once, HTTP and websocket; `None`: sized at start under the
    /// file descriptor limit.
    pub max_connections: Option<usize>,
    /// Longest wait for a request's head, from the connection's opening or the end of the
    /// previous response (an idle keep-alive connection is closed after it), milliseconds.
    pub header_timeout_ms: u64,
    /// Origins (`https://relay.example.org`) allowed beside the relay's own to open the
    /// websocket feed and call the admin API from a browser; their hosts are also accepted
    /// as `Host` when listening on loopback (a reverse proxy on the same machine).
    pub allowed_origins: Vec<String>,
    /// Publishing to NATS JetStream (`[nats]`), when configured.
    pub nats: Option<crate::nats::NatsSettings>,
    /// The broadcast delay of everything public, seconds (0 to 3600; see [`crate::delay`]).
    pub delay_s: u32,
    /// Where the EBoard API listens (see [`crate::eboard`]), when it is on: a loopback
    /// address only.
    pub eboard_api: Option<SocketAddr>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: DEFAULT_LISTEN.parse().unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 8080))),
            data: PathBuf::from("relay-data"),
            token: None,
            ports: Vec::new(),
            bus: Vec::new(),
            bridge: Vec::new(),
            discover: false,
            chess960: false,
            silence_ms: 5000,
            battery_poll_ms: 60_000,
            tournament: Tournament::default(),
            boards: Vec::new(),
            max_subscribers: 2000,
            feed_per_address: 64,
            lichess: None,
            max_connections: None,
            header_timeout_ms: 10_000,
            allowed_origins: Vec::new(),
            nats: None,
            delay_s: 0,
            eboard_api: None,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    listen: Option<Spanned<String>>,
    data: Option<PathBuf>,
    token: Option<Spanned<String>>,
    #[serde(default)]
    ports: Vec<PathBuf>,
    #[serde(default)]
    bus: Vec<PathBuf>,
    #[serde(default)]
    bridge: Vec<PathBuf>,
    #[serde(default)]
    discover: bool,
    silence_ms: Option<Spanned<u64>>,
    battery_poll_ms: Option<Spanned<u64>>,
    max_subscribers: Option<Spanned<usize>>,
    feed_per_address: Option<Spanned<usize>>,
    delay_s: Option<Spanned<u64>>,
    max_connections: Option<Spanned<usize>>,
    header_timeout_ms: Option<Spanned<u64>>,
    #[serde(default)]
    allowed_origins: Vec<Spanned<String>>,
    #[serde(default)]
    lichess: Option<Spanned<crate::push::LichessSection>>,
    #[serde(default)]
    nats: Option<Spanned<crate::nats::NatsSection>>,
    #[serde(default)]
    eboard_api: Option<Spanned<EboardApiKey>>,
    #[serde(default)]
    event: Option<RawEvent>,
    #[serde(default)]
    board: Vec<RawBoard>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEvent {
    name: Option<Spanned<String>>,
    site: Option<Spanned<String>>,
    round: Option<Spanned<u32>>,
    time_control: Option<Spanned<String>>,
    #[serde(default)]
    chess960: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBoard {
    number: Spanned<u32>,
    serial: Option<Spanned<String>>,
    #[serde(default)]
    white: Option<Spanned<Player>>,
    #[serde(default)]
    black: Option<Spanned<Player>>,
}

/// `eboard_api`: `true` (loopback, port 1982) or a loopback address.
#[derive(Deserialize)]
#[serde(untagged)]
enum EboardApiKey {
    On(bool),
    At(String),
}

/// The EBoard API's address (`--eboard-api`, `eboard_api`): loopback only, since the API
/// has no token and lets a local program start games and flip boards (as LiveChess's).
pub fn eboard_api_address(s: &str) -> Result<SocketAddr, Invalid> {
    let addr = resolve_listen(s)?;
    if !addr.ip().is_loopback() {
        return Err(Invalid::Unusable {
            what: "EBoard API address",
            value: s.to_owned(),
            why: "the EBoard API listens on loopback only (127.0.0.1 or [::1])".into(),
        });
    }
    Ok(addr)
}

/// The EBoard API's default address.
pub fn default_eboard_api() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], crate::eboard::DEFAULT_PORT))
}

/// Checks a `TimeControl` value: the PGN standard's form (read by the core's one parser,
/// Fischer increments only, as the standard has no other), or `?` / `-`.
pub fn check_time_control(s: &str) -> Result<(), Invalid> {
    if s == "?" || s == "-" {
        return Ok(());
    }
    let parsed = (s.len() <= 40).then(|| s.parse::<dgt_core::TimeControl>()).and_then(Result::ok);
    match parsed {
        Some(tc) if tc.periods().iter().all(|p| p.kind == dgt_core::BonusKind::Fischer) => Ok(()),
        _ => Err(Invalid::Malformed {
            what: "time control",
            value: s.to_owned(),
            form: "in the PGN form, e.g. 5400+30 or 40/7200:3600",
        }),
    }
}

/// A listening address: `IP:PORT` (`127.0.0.1:8080`, `[::1]:8080`) or `HOST:PORT`
/// (`localhost:8080`). A host name is resolved now, once; the relay listens on its first
/// IPv4 address, or on its first address when it has no IPv4 one.
pub fn resolve_listen(s: &str) -> Result<SocketAddr, Invalid> {
    use std::net::ToSocketAddrs;
    const WHAT: &str = "listen address";
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let malformed = |form| Invalid::Malformed { what: WHAT, value: s.to_owned(), form };
    let Some((host, port)) = s.rsplit_once(':') else {
        return Err(malformed("HOST:PORT: it has no port (e.g. 127.0.0.1:8080)"));
    };
    if host.is_empty() || port.parse::<u16>().is_err() {
        return Err(malformed("HOST:PORT, e.g. 127.0.0.1:8080 or localhost:8080"));
    }
    let unusable = |why| Invalid::Unusable { what: WHAT, value: s.to_owned(), why };
    let addrs: Vec<SocketAddr> =
        s.to_socket_addrs().map_err(|e| unusable(format!("host {host:?} does not resolve ({e})")))?.collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| unusable(format!("host {host:?} resolves to no address")))
}

/// Checks an allowed origin, `scheme://host[:port]` as browsers send it in `Origin` (no
/// path), and returns it in lower case.
pub fn check_origin(o: &str) -> Result<String, Invalid> {
    let bad = || Invalid::Malformed {
        what: "allowed origin",
        value: o.to_owned(),
        form: "scheme://host[:port], e.g. https://relay.example.org",
    };
    let lower = o.trim_end_matches('/').to_ascii_lowercase();
    let (scheme, authority) = lower.split_once("://").ok_or_else(bad)?;
    let host_ok = !authority.is_empty()
        && authority.len() <= 253
        && authority.bytes().all(|b| b.is_ascii_alphanumeric() || b".-:[]_".contains(&b));
    if !matches!(scheme, "http" | "https") || !host_ok {
        return Err(bad());
    }
    Ok(lower)
}

/// Checks an admin token: 16 to 200 printable ASCII characters.
pub fn check_token(t: &str) -> Result<(), Invalid> {
    if t.len() < 16 || t.len() > 200 || !t.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Invalid::Secret { what: "token", form: "16 to 200 printable ASCII characters" });
    }
    Ok(())
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset.min(text.len())).map_or(1, |s| s.bytes().filter(|&b| b == b'\n').count() + 1)
}

impl Config {
    /// Reads and checks a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let meta =
            std::fs::metadata(path).map_err(|source| ConfigError::Read { path: path.into(), source })?;
        if meta.len() > MAX_CONFIG_BYTES {
            return Err(ConfigError::TooLarge { path: path.into(), size: meta.len() });
        }
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { path: path.into(), source })?;
        Config::parse(&path.display().to_string(), &text)
    }

    /// Parses and checks configuration text; `name` is used in error messages.
    pub fn parse(name: &str, text: &str) -> Result<Config, ConfigError> {
        let at = |offset: usize, error: Invalid| ConfigError::AtLine {
            path: name.to_owned(),
            line: line_of(text, offset),
            error,
        };
        let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError::Syntax {
            path: name.to_owned(),
            line: line_of(text, e.span().map_or(0, |s| s.start)),
            message: e.message().to_owned(),
        })?;
        let mut cfg = Config::default();
        if let Some(listen) = raw.listen {
            cfg.listen = resolve_listen(listen.get_ref()).map_err(|m| at(listen.span().start, m))?;
        }
        if let Some(data) = raw.data {
            cfg.data = data;
        }
        if let Some(token) = raw.token {
            check_token(token.get_ref()).map_err(|m| at(token.span().start, m))?;
            cfg.token = Some(token.into_inner());
        }
        cfg.ports = raw.ports;
        cfg.bus = raw.bus;
        cfg.bridge = raw.bridge;
        cfg.discover = raw.discover;
        if let Some(e) = raw.eboard_api {
            let at = |m| at(e.span().start, m);
            cfg.eboard_api = match e.get_ref() {
                EboardApiKey::On(false) => None,
                EboardApiKey::On(true) => Some(default_eboard_api()),
                EboardApiKey::At(s) => Some(eboard_api_address(s).map_err(at)?),
            };
        }
        if let Some(s) = raw.silence_ms {
            in_range("silence_ms", *s.get_ref(), 500, 60_000).map_err(|e| at(s.span().start, e))?;
            cfg.silence_ms = s.into_inner();
        }
        if let Some(b) = raw.battery_poll_ms {
            in_range("battery_poll_ms", *b.get_ref(), 1_000, 3_600_000).map_err(|e| at(b.span().start, e))?;
            cfg.battery_poll_ms = b.into_inner();
        }
        if let Some(m) = raw.max_subscribers {
            in_range("max_subscribers", *m.get_ref() as u64, 1, 100_000)
                .map_err(|e| at(m.span().start, e))?;
            cfg.max_subscribers = m.into_inner();
        }
        if let Some(m) = raw.feed_per_address {
            in_range("feed_per_address", *m.get_ref() as u64, 1, 100_000)
                .map_err(|e| at(m.span().start, e))?;
            cfg.feed_per_address = m.into_inner();
        }
        if let Some(d) = raw.delay_s {
            cfg.delay_s = crate::delay::check(*d.get_ref()).map_err(|e| at(d.span().start, e))?;
        }
        if let Some(l) = raw.lichess {
            cfg.lichess = Some(l.get_ref().settings().map_err(|m| at(l.span().start, m))?);
        }
        if let Some(n) = raw.nats {
            cfg.nats = Some(n.get_ref().settings().map_err(|m| at(n.span().start, m))?);
        }
        if let Some(m) = raw.max_connections {
            in_range("max_connections", *m.get_ref() as u64, 16, 1_000_000)
                .map_err(|e| at(m.span().start, e))?;
            cfg.max_connections = Some(m.into_inner());
        }
        if let Some(t) = raw.header_timeout_ms {
            in_range("header_timeout_ms", *t.get_ref(), 1_000, 300_000).map_err(|e| at(t.span().start, e))?;
            cfg.header_timeout_ms = t.into_inner();
        }
        if raw.allowed_origins.len() > 100 {
            let error = Invalid::TooMany { what: "allowed_origins", max: 100 };
            return Err(ConfigError::InFile { path: name.to_owned(), error });
        }
        for o in raw.allowed_origins {
            let origin = check_origin(o.get_ref()).map_err(|m| at(o.span().start, m))?;
            cfg.allowed_origins.push(origin);
        }
        let mut event = Event::default();
        let mut round = 1;
        if let Some(ev) = raw.event {
            for (what, field, slot) in
                [("event name", ev.name, &mut event.name), ("site", ev.site, &mut event.site)]
            {
                if let Some(v) = field {
                    check_text(what, v.get_ref()).map_err(|m| at(v.span().start, m))?;
                    *slot = v.into_inner();
                }
            }
            if let Some(r) = ev.round {
                in_range("round", u64::from(*r.get_ref()), 1, u64::from(MAX_ROUND))
                    .map_err(|e| at(r.span().start, e))?;
                round = r.into_inner();
            }
            if let Some(tc) = ev.time_control {
                check_time_control(tc.get_ref()).map_err(|m| at(tc.span().start, m))?;
                event.time_control = Some(tc.into_inner());
            }
            cfg.chess960 = ev.chess960;
        }
        cfg.tournament = Tournament::new(event, round);
        for (r, id) in cfg.lichess.as_ref().map(|l| l.rounds.clone()).unwrap_or_default() {
            cfg.tournament.round_mut(r).lichess_round = Some(id);
        }
        if raw.board.len() > MAX_BOARDS {
            let error = Invalid::TooMany { what: "boards", max: MAX_BOARDS };
            return Err(ConfigError::InFile { path: name.to_owned(), error });
        }
        let mut numbers = BTreeSet::new();
        let mut serials = BTreeSet::new();
        for b in raw.board {
            let n = *b.number.get_ref();
            in_range("board number", u64::from(n), 1, MAX_BOARDS as u64)
                .map_err(|e| at(b.number.span().start, e))?;
            if !numbers.insert(n) {
                return Err(at(
                    b.number.span().start,
                    Invalid::Twice { what: "board", value: n.to_string() },
                ));
            }
            let serial = match b.serial {
                Some(s) => {
                    check_serial(s.get_ref()).map_err(|m| at(s.span().start, m))?;
                    if !serials.insert(s.get_ref().clone()) {
                        let twice = Invalid::Twice { what: "serial", value: format!("{:?}", s.get_ref()) };
                        return Err(at(s.span().start, twice));
                    }
                    Some(s.into_inner())
                }
                None => None,
            };
            let mut pairing = Pairing::default();
            for (field, slot) in [(b.white, &mut pairing.white), (b.black, &mut pairing.black)] {
                if let Some(p) = field {
                    p.get_ref().check().map_err(|m| at(p.span().start, m))?;
                    *slot = p.into_inner();
                }
            }
            // Every listed board is paired, with nobody named when no players are given: a
            // later round's pairing then reaches its board task too.
            cfg.tournament.set_pairing(n, pairing);
            cfg.boards.push(BoardConfig { number: n, serial });
        }
        Ok(cfg)
    }

    /// How many boards the configuration names: listed, or paired in the live round.
    pub fn board_count(&self) -> usize {
        let mut numbers: BTreeSet<u32> = self.boards.iter().map(|b| b.number).collect();
        numbers.extend(self.tournament.live_pairings().into_keys());
        numbers.len()
    }

    /// Makes sure an admin token exists: the configured one, else `DGT_RELAY_TOKEN`, else a
    /// fresh random one. Returns true when it was generated (the caller prints it).
    pub fn ensure_token(&mut self) -> Result<bool, ConfigError> {
        if self.token.is_some() {
            return Ok(false);
        }
        if let Ok(t) = std::env::var("DGT_RELAY_TOKEN") {
            check_token(&t).map_err(|error| ConfigError::Env { var: "DGT_RELAY_TOKEN", error })?;
            self.token = Some(t);
            return Ok(false);
        }
        self.token = Some(random_token()?);
        Ok(true)
    }
}

/// Checks a board serial number: 1 to 20 ASCII letters or digits.
pub fn check_serial(s: &str) -> Result<(), Invalid> {
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(Invalid::Malformed {
            what: "serial",
            value: s.to_owned(),
            form: "1 to 20 ASCII letters or digits",
        });
    }
    Ok(())
}

/// 32 hex characters from the operating system's random source. Without one there is no
/// token worth having: the error says to set one.
fn random_token() -> Result<String, ConfigError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| ConfigError::NoRandom(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_parses() {
        let text = r#"
listen = "127.0.0.1:9000"
data = "/tmp/x"
ports = ["/dev/ttyUSB0"]
discover = true

[event]
name = "Club championship"
site = "Town"
round = 3
time_control = "5400+30"
chess960 = true

[[board]]
number = 1
serial = "12345"
white = { name = "Carlsen, Magnus", fide_id = 1503014, title = "GM" }
black = { name = "Nepo, Ian" }
"#;
        let c = Config::parse("relay.toml", text).unwrap();
        assert_eq!(c.listen.port(), 9000);
        assert_eq!(c.tournament.live_round(), 3);
        assert!(c.chess960);
        assert_eq!(c.boards[0].serial.as_deref(), Some("12345"));
        assert_eq!(c.tournament.pairing(1).white.fide_id, Some(1503014));
    }

    #[test]
    fn errors_name_the_line() {
        let dup = "[[board]]\nnumber = 1\n\n[[board]]\nnumber = 1\n";
        let e = Config::parse("r.toml", dup).unwrap_err().to_string();
        assert!(e.starts_with("r.toml:5:"), "{e}");
        let syntax = "listen = \"127.0.0.1:1\"\nport = [\n";
        let e = Config::parse("r.toml", syntax).unwrap_err().to_string();
        assert!(e.starts_with("r.toml:"), "{e}");
        let unknown = "\n\nbogus = 1\n";
        let e = Config::parse("r.toml", unknown).unwrap_err().to_string();
        assert!(e.starts_with("r.toml:3:"), "{e}");
        let tc = "[event]\ntime_control = \"90 min\"\n";
        let e = Config::parse("r.toml", tc).unwrap_err().to_string();
        assert!(e.starts_with("r.toml:2:") && e.contains("time control"), "{e}");
        let poll = "silence_ms = 2000\nbattery_poll_ms = 10\n";
        let e = Config::parse("r.toml", poll).unwrap_err().to_string();
        assert!(e.starts_with("r.toml:2:") && e.contains("battery_poll_ms"), "{e}");
        let cfg = Config::parse("r.toml", "battery_poll_ms = 30000\n").unwrap();
        assert_eq!(cfg.battery_poll_ms, 30_000);
        assert_eq!(Config::default().battery_poll_ms, 60_000);
    }

    #[test]
    fn listen_takes_addresses_and_host_names() {
        assert_eq!(resolve_listen("127.0.0.1:9000").unwrap(), "127.0.0.1:9000".parse().unwrap());
        assert_eq!(resolve_listen("[::1]:9000").unwrap(), "[::1]:9000".parse().unwrap());
        let local = resolve_listen("localhost:9000").unwrap();
        assert!(local.ip().is_loopback() && local.port() == 9000, "{local}");
        for (bad, says) in [
            ("localhost", "has no port"),
            ("localhost:http", "not HOST:PORT"),
            (":8080", "not HOST:PORT"),
            ("no-such-host.invalid:8080", "does not resolve"),
        ] {
            let e = resolve_listen(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let cfg = Config::parse("r.toml", "listen = \"localhost:9001\"\n").unwrap();
        assert!(cfg.listen.ip().is_loopback() && cfg.listen.port() == 9001);
        let e = Config::parse("r.toml", "\nlisten = \"no-such-host.invalid:80\"\n").unwrap_err().to_string();
        assert!(e.starts_with("r.toml:2:") && e.contains("does not resolve"), "{e}");
    }

    #[test]
    fn network_limits_and_origins() {
        let c = Config::parse(
            "r.toml",
            "max_connections = 500\nheader_timeout_ms = 3000\nallowed_origins = [\"https://Relay.Example.org/\"]\n",
        )
        .unwrap();
        assert_eq!(c.max_connections, Some(500));
        assert_eq!(c.header_timeout_ms, 3_000);
        assert_eq!(c.allowed_origins, ["https://relay.example.org"]);
        assert_eq!((Config::default().max_connections, Config::default().header_timeout_ms), (None, 10_000));
        for (bad, says) in [
            ("max_connections = 3\n", "max_connections"),
            ("header_timeout_ms = 10\n", "header_timeout_ms"),
            ("allowed_origins = [\"relay.example.org\"]\n", "allowed origin"),
            ("allowed_origins = [\"https://a.org/live/\"]\n", "allowed origin"),
            ("allowed_origins = [\"ftp://a.org\"]\n", "allowed origin"),
        ] {
            let e = Config::parse("r.toml", bad).unwrap_err().to_string();
            assert!(e.starts_with("r.toml:1:") && e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn time_controls() {
        for ok in ["5400+30", "40/7200:3600", "40/5400+30:1800+30", "?", "-", "300"] {
            assert!(check_time_control(ok).is_ok(), "{ok}");
        }
        for bad in ["", "90 min", "+30", "40/", "5400+"] {
            assert!(check_time_control(bad).is_err(), "{bad}");
        }
    }
}
