//! The Lichess push client: the relay's round, as PGN, to a Lichess broadcast round.
//!
//! ```toml
//! [lichess]
//! round = "AbCd1234"             # the broadcast round's 8-character id
//! token_file = "/etc/dgt-relay/lichess-token"   # else the LICHESS_TOKEN environment variable
//! url = "https://lichess.org"    # optional
//! timeout_s = 20                 # optional: a request's time limit (1..120)
//! relay_round = 3                # optional: push this relay round (default: the current one)
//! ```
//!
//! A Lichess broadcast round holds one round: without `relay_round`, the round pushed is the
//! event's current round (`[event] round`, or the last pairings set), so give the next
//! round's id when the relay moves on.
//!
//! Every change of the round's PGN (a confirmed move, a result, a pairing, a correction: the
//! store's PGN is written from the journal, so it holds confirmed moves only and never the
//! kings-in-centre gesture) wakes the pusher, which sends the whole round as `text/plain`
//! to `POST {url}/api/broadcast/round/{id}/push` with `Authorization: Bearer`, at most 100
//! games a request (a larger round is split), at most one request a second: a burst of
//! moves is one push. Whole rounds make it idempotent: a push that failed is not replayed,
//! the next one carries the latest state, so nothing is lost.
//!
//! Lichess answers per game, `{"games":[{"tags":{..},"moves":N} | {"tags":{..},"error":".."}]}`.
//! A refused game raises an operator alert (code `push`) with Lichess's text, once, and an
//! info alert when it is accepted again; a 400 `{"error"}` too. Network errors, timeouts,
//! 429 (its `Retry-After` honoured) and 5xx are retried with exponential backoff and jitter
//! (1 s doubling to 60 s, plus up to a quarter at random), always with the latest PGN; after three failures in a row an
//! alert says so. Other answers (401, 403, 404) wait for the next change. The status (last
//! success, last error, games accepted) is in `/api/push` and `/health`.
//!
//! # Why a client of its own
//! One request a second to one host needs no pool: each push opens a connection (TLS by
//! rustls with Mozilla's roots compiled in, so no system store is needed), sends one
//! HTTP/1.1 request through hyper's client connection and closes it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use crate::feed::{AlertCode, AlertLevel, AlertView, Delta, Hub};
use crate::shutdown::Listener;
use crate::store::Store;
use crate::tournament::SharedTournament;

/// Most games Lichess takes in one push.
pub const MAX_GAMES_PER_PUSH: usize = 100;
/// Least time between two requests.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// How long changes are gathered before a push after a quiet time.
pub const SETTLE: Duration = Duration::from_millis(150);
/// Longest wait between retries.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// A request's default limit, connection and answer included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the last push at shutdown may take.
pub const STOP_PUSH: Duration = Duration::from_secs(5);
/// The largest answer read.
const MAX_ANSWER: usize = 1 << 20;
/// The default Lichess.
pub const DEFAULT_URL: &str = "https://lichess.org";

/// The `[lichess]` section as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LichessSection {
    /// The broadcast round id (8 letters and digits).
    pub round: String,
    /// A file holding the API token (scope `study:write`); else `LICHESS_TOKEN`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// Lichess's address.
    #[serde(default = "default_url")]
    pub url: String,
    /// A request's time limit, seconds (1..=120, default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u64>,
    /// The relay round pushed there; without it, the event's current round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay_round: Option<u32>,
}

fn default_url() -> String {
    DEFAULT_URL.to_owned()
}

/// Where requests go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// TLS or not.
    pub https: bool,
    /// Host name or address.
    pub host: String,
    /// Port.
    pub port: u16,
    /// Path prefix without the final `/` (usually empty).
    pub base: String,
}

impl Endpoint {
    /// Reads `http://host[:port][/path]` or `https://...`.
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let bad = || format!("url {url:?} is not http://HOST[:PORT] or https://HOST[:PORT]");
        let (https, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(bad());
        };
        let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
                (h, p.parse::<u16>().map_err(|_| bad())?)
            }
            _ => (authority, if https { 443 } else { 80 }),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let host_ok = !host.is_empty()
            && host.len() <= 253
            && host.bytes().all(|b| b.is_ascii_alphanumeric() || b"-.:".contains(&b));
        let path_ok =
            path.len() <= 200 && path.bytes().all(|b| b.is_ascii_graphic() && b != b'?' && b != b'#');
        if !host_ok || !path_ok {
            return Err(bad());
        }
        let base = path.trim_end_matches('/');
        Ok(Endpoint {
            https,
            host: host.to_owned(),
            port,
            base: if base.is_empty() { String::new() } else { format!("/{base}") },
        })
    }
}

/// The checked `[lichess]` settings, with the token read.
#[derive(Clone, PartialEq, Eq)]
pub struct LichessSettings {
    /// The broadcast round id.
    pub round: String,
    /// Where to push.
    pub endpoint: Endpoint,
    /// The API token.
    pub token: String,
    /// A request's time limit.
    pub timeout: Duration,
    /// The relay round pushed; `None`: the event's current round.
    pub relay_round: Option<u32>,
}

impl std::fmt::Debug for LichessSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        f.debug_struct("LichessSettings")
            .field("round", &self.round)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl LichessSection {
    /// Checks the section and reads the token (`token_file`, else `LICHESS_TOKEN`).
    pub fn settings(&self) -> Result<LichessSettings, String> {
        if self.round.len() != 8 || !self.round.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(format!("lichess round {:?} is not an 8-character round id", self.round));
        }
        let endpoint = Endpoint::parse(&self.url)?;
        let token = match &self.token_file {
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| format!("lichess token_file {}: {e}", path.display()))?
                .trim()
                .to_owned(),
            None => std::env::var("LICHESS_TOKEN").map_err(|_| {
                "the [lichess] section needs token_file or the LICHESS_TOKEN environment variable".to_owned()
            })?,
        };
        if token.is_empty() || token.len() > 400 || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the Lichess token must be 1 to 400 printable ASCII characters".into());
        }
        let timeout = match self.timeout_s {
            Some(t @ 1..=120) => Duration::from_secs(t),
            Some(_) => return Err("lichess timeout_s must be between 1 and 120".into()),
            None => REQUEST_TIMEOUT,
        };
        if self.relay_round.is_some_and(|r| !(1..=999).contains(&r)) {
            return Err("lichess relay_round must be between 1 and 999".into());
        }
        Ok(LichessSettings {
            round: self.round.clone(),
            endpoint,
            token,
            timeout,
            relay_round: self.relay_round,
        })
    }
}

/// Why a push failed.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// No connection, a TLS failure, a timeout: retried.
    #[error("network: {0}")]
    Network(String),
    /// 429 or 5xx: retried.
    #[error("HTTP {status}: {message}")]
    Busy {
        /// The status.
        status: u16,
        /// The answer's error text, or its start.
        message: String,
        /// `Retry-After`, seconds.
        retry_after: Option<u64>,
    },
    /// Another refusal (400, 401, 403, 404...): not retried until the next change.
    #[error("HTTP {status}: {message}")]
    Refused {
        /// The status.
        status: u16,
        /// Lichess's `error` text, or the answer's start.
        message: String,
    },
}

impl PushError {
    fn retried(&self) -> bool {
        !matches!(self, PushError::Refused { .. })
    }
}

/// One game of Lichess's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameAnswer {
    /// The game's tags as Lichess read them.
    pub tags: BTreeMap<String, String>,
    /// `Ok(moves)` or `Err(Lichess's error)`.
    pub outcome: Result<u64, String>,
}

impl GameAnswer {
    /// `Round 1.3 (White - Black)`, to name the game to a person.
    pub fn name(&self) -> String {
        let t = |k: &str| self.tags.get(k).map_or("?", String::as_str);
        format!("round {} board {} ({} - {})", t("Round"), t("Board"), t("White"), t("Black"))
    }

    /// The `Board` tag (else the part after the dot of `Round`).
    pub fn board(&self) -> Option<u32> {
        self.tags.get("Board").and_then(|b| b.parse().ok()).or_else(|| {
            self.tags.get("Round").and_then(|r| r.split_once('.')).and_then(|(_, b)| b.parse().ok())
        })
    }
}

/// Reads Lichess's push answer.
pub fn parse_answer(body: &[u8]) -> Result<Vec<GameAnswer>, String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("answer is not JSON: {e}"))?;
    let games = v.get("games").and_then(|g| g.as_array()).ok_or("answer has no games list")?;
    let mut out = Vec::with_capacity(games.len());
    for g in games {
        let tags = g
            .get("tags")
            .and_then(|t| t.as_object())
            .map(|o| o.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect())
            .unwrap_or_default();
        let outcome = match (g.get("error").and_then(|e| e.as_str()), g.get("moves").and_then(|m| m.as_u64()))
        {
            (Some(e), _) => Err(e.to_owned()),
            (None, Some(m)) => Ok(m),
            (None, None) => Err("no moves count and no error in the answer".to_owned()),
        };
        out.push(GameAnswer { tags, outcome });
    }
    Ok(out)
}

/// A round's PGN cut into its games (each ends with its blank line).
pub fn split_games(text: &str) -> Vec<&str> {
    let mut games = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        // A game starts at a tag line that follows an empty line (or the text's start).
        if bytes[i] == b'[' && i > start && text[..i].ends_with("\n\n") {
            games.push(&text[start..i]);
            start = i;
        }
        match text[i..].find('\n') {
            Some(n) => i += n + 1,
            None => break,
        }
    }
    if start < text.len() && !text[start..].trim().is_empty() {
        games.push(&text[start..]);
    }
    games
}

/// The text a push depends on: the games without the live `Clock` tag, which changes every
/// few seconds while a clock runs and is not something Lichess reads.
fn fingerprint(games: &[&str]) -> String {
    games.iter().flat_map(|g| g.lines().filter(|l| !l.starts_with("[Clock "))).collect::<Vec<_>>().join("\n")
}

/// The push status, for `/api/push` and `/health`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PushStatus {
    /// A `[lichess]` section is configured.
    pub enabled: bool,
    /// The broadcast round pushed to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lichess_round: Option<String>,
    /// The relay round pushed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// Requests sent.
    pub requests: u64,
    /// When the last push was accepted (seconds since 1970).
    pub last_success: Option<u64>,
    /// The last failure, with its time.
    pub last_error: Option<String>,
    /// When it happened (seconds since 1970).
    pub last_error_at: Option<u64>,
    /// Games Lichess accepted in the last push.
    pub games_accepted: usize,
    /// Games Lichess refused in the last push, with its reasons.
    pub games_refused: Vec<String>,
    /// Failures in a row now (retries going on).
    pub failures_in_a_row: u32,
    /// Changes waiting for the next push.
    pub pending: bool,
}

/// The pusher's shared state.
#[derive(Debug, Default)]
pub struct PushState {
    status: Mutex<PushStatus>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl PushState {
    fn lock(&self) -> MutexGuard<'_, PushStatus> {
        self.status.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The status now.
    pub fn status(&self) -> PushStatus {
        self.lock().clone()
    }

    /// Starts pushing `store`'s round (the tournament's current round) until `stop`.
    pub fn start(
        self: &Arc<Self>,
        settings: LichessSettings,
        store: Arc<Store>,
        tournament: SharedTournament,
        hub: Arc<Hub>,
        stop: Listener,
    ) {
        {
            let mut s = self.lock();
            s.enabled = true;
            s.lichess_round = Some(settings.round.clone());
        }
        let fixed = settings.relay_round;
        let pusher = Pusher {
            client: Client::new(settings),
            store,
            round: Box::new(move || fixed.unwrap_or_else(|| tournament.lock().live_round())),
            hub,
            state: Arc::clone(self),
            refused: BTreeMap::new(),
            rng: seed(),
        };
        let task =
            tokio::spawn(tracing::Instrument::instrument(pusher.run(stop), tracing::info_span!("push")));
        *self.task.lock().unwrap_or_else(|p| p.into_inner()) = Some(task);
    }

    /// Waits for the pusher to end (after its stop signal: it makes one last push of what
    /// changed, for at most [`REQUEST_TIMEOUT`]).
    pub async fn join(&self) {
        let task = self.task.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(t) = task {
            let _ = t.await;
        }
    }
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn seed() -> u64 {
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    u64::from(nanos) ^ 0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id())
}

/// The wait before retry `attempt` (1-based): 1 s doubling to [`MAX_BACKOFF`], plus up to a
/// quarter at random (never below the one-second spacing) so that relays restarted
/// together do not retry together.
pub fn backoff(attempt: u32, random: u64) -> Duration {
    let base = MIN_INTERVAL.saturating_mul(1u32 << attempt.saturating_sub(1).min(6)).min(MAX_BACKOFF);
    let quarter = base.as_millis() as u64 / 4;
    base + Duration::from_millis(random % (quarter + 1))
}

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// The HTTP side: one request on its own connection.
struct Client {
    settings: LichessSettings,
    tls: Option<Arc<tokio_rustls::rustls::ClientConfig>>,
}

impl Client {
    fn new(settings: LichessSettings) -> Client {
        let tls = settings.endpoint.https.then(|| {
            let mut roots = tokio_rustls::rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
            let mut cfg = tokio_rustls::rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map(|b| b.with_root_certificates(roots).with_no_client_auth())
                // The ring provider supports the default versions; this cannot fail.
                .unwrap_or_else(|e| panic!("TLS configuration: {e}"));
            cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
            Arc::new(cfg)
        });
        Client { settings, tls }
    }

    /// Pushes one request's games; the answer per game.
    async fn push(&self, pgn: String) -> Result<Vec<GameAnswer>, PushError> {
        let e = &self.settings.endpoint;
        let path = format!("{}/api/broadcast/round/{}/push", e.base, self.settings.round);
        let host = if e.port == if e.https { 443 } else { 80 } {
            e.host.clone()
        } else if e.host.contains(':') {
            format!("[{}]:{}", e.host, e.port)
        } else {
            format!("{}:{}", e.host, e.port)
        };
        let request = hyper::Request::post(path)
            .header(hyper::header::HOST, host)
            .header(hyper::header::AUTHORIZATION, format!("Bearer {}", self.settings.token))
            .header(hyper::header::CONTENT_TYPE, "text/plain; charset=utf-8")
            .header(hyper::header::USER_AGENT, concat!("dgt-relay/", env!("CARGO_PKG_VERSION")))
            .header(hyper::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(pgn)))
            .map_err(|err| PushError::Network(err.to_string()))?;
        let limit = self.settings.timeout;
        let (status, retry_after, body) = tokio::time::timeout(limit, self.send(request))
            .await
            .map_err(|_| PushError::Network(format!("no answer within {} s", limit.as_secs())))??;
        let message = || {
            serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
                .unwrap_or_else(|| String::from_utf8_lossy(&body).chars().take(200).collect())
        };
        match status {
            200..=299 => parse_answer(&body).map_err(|m| PushError::Refused { status, message: m }),
            429 | 500..=599 => Err(PushError::Busy { status, message: message(), retry_after }),
            _ => Err(PushError::Refused { status, message: message() }),
        }
    }

    async fn send(
        &self,
        request: hyper::Request<Full<Bytes>>,
    ) -> Result<(u16, Option<u64>, Bytes), PushError> {
        let e = &self.settings.endpoint;
        let net = |what: &str, err: &dyn std::fmt::Display| PushError::Network(format!("{what}: {err}"));
        let tcp = tokio::net::TcpStream::connect((e.host.as_str(), e.port))
            .await
            .map_err(|err| net(&format!("connect to {}:{}", e.host, e.port), &err))?;
        let _ = tcp.set_nodelay(true);
        match &self.tls {
            Some(cfg) => {
                let name = tokio_rustls::rustls::pki_types::ServerName::try_from(e.host.clone())
                    .map_err(|err| net("server name", &err))?;
                let tls = tokio_rustls::TlsConnector::from(Arc::clone(cfg))
                    .connect(name, tcp)
                    .await
                    .map_err(|err| net("TLS", &err))?;
                exchange(tls, request).await
            }
            None => exchange(tcp, request).await,
        }
    }
}

async fn exchange<S>(
    io: S,
    request: hyper::Request<Full<Bytes>>,
) -> Result<(u16, Option<u64>, Bytes), PushError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let net = |what: &str, err: &dyn std::fmt::Display| PushError::Network(format!("{what}: {err}"));
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io))
        .await
        .map_err(|err| net("HTTP", &err))?;
    let conn = tokio::spawn(async move {
        let _ = conn.await;
    });
    let result = async {
        let response = sender.send_request(request).await.map_err(|err| net("HTTP", &err))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(hyper::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let body = Limited::new(response.into_body(), MAX_ANSWER)
            .collect()
            .await
            .map_err(|err| net("reading the answer", &err))?
            .to_bytes();
        Ok((status, retry_after, body))
    }
    .await;
    conn.abort();
    result
}

/// The pushing task.
struct Pusher {
    client: Client,
    store: Arc<Store>,
    round: Box<dyn Fn() -> u32 + Send + Sync>,
    hub: Arc<Hub>,
    state: Arc<PushState>,
    /// Games Lichess refuses now, by name, with its reason (alerted once).
    refused: BTreeMap<String, String>,
    rng: u64,
}

impl Pusher {
    fn alert(&self, board: Option<u32>, level: AlertLevel, message: String) {
        match level {
            AlertLevel::Info => tracing::info!("{message}"),
            _ => tracing::warn!("{message}"),
        }
        // A board the relay does not know gets a relay-wide alert (no phantom board).
        let board = board.filter(|&n| self.hub.board(n).is_some());
        self.hub.publish(Delta::Alert {
            board,
            alert: AlertView { code: AlertCode::Push, level, message, squares: Vec::new() },
        });
    }

    async fn run(mut self, mut stop: Listener) {
        let mut changes = self.store.subscribe();
        // What Lichess has (the last fingerprint it accepted), and when the next request
        // may go.
        let mut sent: Option<(u32, String)> = None;
        let mut next_request = Instant::now();
        let mut failures: u32 = 0;
        // Push what is there at start (a restarted relay).
        let mut dirty = true;
        loop {
            if !dirty {
                tokio::select! {
                    biased;
                    r = changes.changed() => if r.is_err() { return },
                    _ = stop.wait() => return,
                }
            }
            dirty = false;
            self.state.lock().pending = true;
            // Gather a burst; keep to one request a second.
            let at = next_request.max(Instant::now() + SETTLE);
            let stopping = tokio::select! {
                _ = tokio::time::sleep_until(at) => false,
                _ = stop.wait() => true,
            };
            changes.borrow_and_update();
            let round = (self.round)();
            let text = self.store.round_pgn(round).unwrap_or_default();
            let games = split_games(&text);
            let print = (round, fingerprint(&games));
            if games.is_empty() || sent.as_ref() == Some(&print) {
                self.state.lock().pending = false;
                if stopping {
                    return;
                }
                continue;
            }
            let outcome = if stopping {
                // One last push of what changed, briefly: the relay is stopping.
                tokio::time::timeout(STOP_PUSH, self.push_round(round, &games, &mut next_request))
                    .await
                    .unwrap_or_else(|_| Err(PushError::Network("stopped".into())))
            } else {
                self.push_round(round, &games, &mut next_request).await
            };
            let now = unix_now();
            match outcome {
                Ok(()) => {
                    sent = Some(print);
                    if failures >= 3 {
                        self.alert(None, AlertLevel::Info, "Pushing to Lichess works again.".into());
                    }
                    failures = 0;
                    let mut s = self.state.lock();
                    s.last_success = Some(now);
                    s.failures_in_a_row = 0;
                    s.pending = changes.has_changed().unwrap_or(false);
                }
                Err(e) => {
                    failures += 1;
                    {
                        let mut s = self.state.lock();
                        s.last_error = Some(e.to_string());
                        s.last_error_at = Some(now);
                        s.failures_in_a_row = failures;
                    }
                    if e.retried() {
                        let mut wait = backoff(failures, xorshift(&mut self.rng));
                        if let PushError::Busy { retry_after: Some(s), .. } = &e {
                            wait = wait.max(Duration::from_secs((*s).min(600)));
                        }
                        tracing::warn!(error = %e, retry_in_ms = wait.as_millis() as u64, "push failed");
                        if failures == 3 {
                            self.alert(
                                None,
                                AlertLevel::Warning,
                                format!(
                                    "Pushing to Lichess fails ({e}); retried with backoff, the latest moves go with \
                                     the next push that gets through."
                                ),
                            );
                        }
                        next_request = next_request.max(Instant::now() + wait);
                        // Retry with whatever is latest then.
                        dirty = true;
                    } else {
                        let message =
                            format!("Lichess refused the push: {e}. Check the round id and the token.");
                        if failures == 1 {
                            self.alert(None, AlertLevel::Error, message);
                        }
                        // The next change tries again.
                        sent = None;
                    }
                }
            }
            if stopping {
                return;
            }
        }
    }

    /// Pushes the round's games, 100 a request, one request a second.
    async fn push_round(
        &mut self,
        round: u32,
        games: &[&str],
        next_request: &mut Instant,
    ) -> Result<(), PushError> {
        let mut answers = Vec::new();
        for chunk in games.chunks(MAX_GAMES_PER_PUSH) {
            tokio::time::sleep_until(*next_request).await;
            *next_request = Instant::now() + MIN_INTERVAL;
            self.state.lock().requests += 1;
            self.state.lock().round = Some(round);
            tracing::debug!(round, games = chunk.len(), "push");
            answers.extend(self.client.push(chunk.concat()).await?);
        }
        let mut refused_now = BTreeMap::new();
        let mut accepted = 0;
        for a in &answers {
            let name = a.name();
            match &a.outcome {
                Ok(_) => {
                    accepted += 1;
                    if self.refused.contains_key(&name) {
                        self.alert(a.board(), AlertLevel::Info, format!("Lichess accepts {name} again."));
                    }
                }
                Err(e) => {
                    if self.refused.get(&name) != Some(e) {
                        self.alert(
                            a.board(),
                            AlertLevel::Error,
                            format!("Lichess refused {name}: {e}. Correct the game (admin API) to have it published."),
                        );
                    }
                    refused_now.insert(name, e.clone());
                }
            }
        }
        self.refused = refused_now;
        let mut s = self.state.lock();
        s.games_accepted = accepted;
        s.games_refused = self.refused.iter().map(|(n, e)| format!("{n}: {e}")).collect();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let e = Endpoint::parse("https://lichess.org").unwrap();
        assert_eq!((e.https, e.host.as_str(), e.port, e.base.as_str()), (true, "lichess.org", 443, ""));
        let e = Endpoint::parse("http://127.0.0.1:9000/lila/").unwrap();
        assert_eq!((e.https, e.host.as_str(), e.port, e.base.as_str()), (false, "127.0.0.1", 9000, "/lila"));
        let e = Endpoint::parse("http://[::1]:9000").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("::1", 9000));
        for bad in ["ftp://x", "https://", "http://a b", "http://x:99999", "lichess.org", "http://x/?q"] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sections_are_checked_and_the_token_read() {
        let dir = std::env::temp_dir().join(format!("dgt-relay-push-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, "lip_secret\n").unwrap();
        let s = LichessSection {
            round: "AbCd1234".into(),
            token_file: Some(file.clone()),
            url: default_url(),
            timeout_s: None,
            relay_round: None,
        };
        let settings = s.settings().unwrap();
        assert_eq!(settings.token, "lip_secret");
        assert!(!format!("{settings:?}").contains("lip_secret"));
        let bad = LichessSection { round: "short".into(), ..s.clone() };
        assert!(bad.settings().unwrap_err().contains("8-character"));
        let missing = LichessSection { token_file: Some(dir.join("none")), ..s };
        assert!(missing.settings().unwrap_err().contains("token_file"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn rounds_split_into_games_and_answers_read() {
        let text = "[Event \"a\"]\n[Site \"?\"]\n\n1. e4 *\n\n[Event \"b\"]\n\n1. d4 {[%clk 0:01:00]}\n*\n\n";
        let games = split_games(text);
        assert_eq!(
            games,
            ["[Event \"a\"]\n[Site \"?\"]\n\n1. e4 *\n\n", "[Event \"b\"]\n\n1. d4 {[%clk 0:01:00]}\n*\n\n"]
        );
        assert_eq!(games.concat(), text);
        assert!(split_games("").is_empty());
        let a = parse_answer(
            br#"{"games":[{"tags":{"Round":"1.2","Board":"2","White":"A","Black":"B"},"moves":7},
                {"tags":{"Round":"1.3"},"error":"Illegal move"}]}"#,
        )
        .unwrap();
        assert_eq!(a[0].outcome, Ok(7));
        assert_eq!(a[0].board(), Some(2));
        assert_eq!(a[1].outcome, Err("Illegal move".into()));
        assert_eq!(a[1].board(), Some(3));
        assert_eq!(a[1].name(), "round 1.3 board ? (? - ?)");
        assert!(parse_answer(b"{}").is_err());
    }

    #[test]
    fn clock_tags_alone_are_no_change() {
        let a = ["[Event \"a\"]\n[Clock \"W/0:01:00\"]\n\n1. e4 *\n\n"];
        let b = ["[Event \"a\"]\n[Clock \"W/0:00:55\"]\n\n1. e4 *\n\n"];
        let c = ["[Event \"a\"]\n[Clock \"W/0:00:55\"]\n\n1. e4 e5 *\n\n"];
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&b), fingerprint(&c));
    }

    #[test]
    fn backoff_doubles_to_a_minute_with_jitter() {
        assert_eq!(backoff(1, 0), Duration::from_secs(1));
        assert_eq!(backoff(2, 0), Duration::from_secs(2));
        assert_eq!(backoff(5, 0), Duration::from_secs(16));
        assert_eq!(backoff(7, 0), Duration::from_secs(60));
        assert_eq!(backoff(30, 0), Duration::from_secs(60));
        for r in [1, 999, 12_345, u64::MAX] {
            let d = backoff(3, r);
            assert!(d >= Duration::from_secs(4) && d <= Duration::from_secs(5), "{d:?}");
            assert!(backoff(30, r) <= Duration::from_secs(75));
        }
    }
}
