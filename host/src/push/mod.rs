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
//! event's live round (`[event] round`, or the round the operator started). A round with a
//! Lichess round of its own (`rounds`, or set in the console) goes there, any other to
//! `round`: a whole event runs without a restart.
//!
//! ```toml
//! rounds = { 2 = "EfGh5678", 3 = "IjKl9012" }   # optional: relay round -> Lichess round
//! ```
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

mod client;
mod settings;

pub use client::{BadAnswer, Conn, Connect, GameAnswer, PushError, parse_answer, tcp};
pub use settings::{DEFAULT_URL, Endpoint, LichessSection, LichessSettings, REQUEST_TIMEOUT};

use client::Client;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use crate::clock::Clock;
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
/// While pushes fail for want of the network and the next retry is further away than
/// this, the endpoint is probed (a connection, no request) this often, and the push goes
/// as soon as it takes one: after a long outage Lichess is this stale at most, not a whole
/// backoff.
pub const PROBE_EVERY: Duration = Duration::from_secs(5);

/// How long the last push at shutdown may take (a push in flight is dropped): the relay
/// exits within 5 s.
pub const STOP_PUSH: Duration = Duration::from_secs(3);

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

/// What the pusher reads, where it reports, its clock and how it connects.
#[derive(Clone)]
pub struct PushContext {
    /// The PGN texts pushed.
    pub store: Arc<Store>,
    /// Which round is live.
    pub tournament: SharedTournament,
    /// Where alerts go.
    pub hub: Arc<Hub>,
    /// The relay's clock: request spacing, backoff, status times.
    pub clock: Clock,
    /// How a request's connection is opened ([`tcp`]).
    pub connect: Connect,
}

impl PushContext {
    /// Pushes over TCP.
    pub fn new(store: Arc<Store>, tournament: SharedTournament, hub: Arc<Hub>, clock: Clock) -> PushContext {
        PushContext { store, tournament, hub, clock, connect: tcp() }
    }
}

/// The pusher's shared state.
#[derive(Debug, Default)]
pub struct PushState {
    status: Mutex<PushStatus>,
    /// The `[lichess]` section's round id: where rounds without their own go.
    default_round: Mutex<Option<String>>,
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

    /// The `[lichess]` section's round id, when pushing.
    pub fn default_round(&self) -> Option<String> {
        self.default_round.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Starts pushing the store's round (the tournament's live one, or `relay_round`) until
    /// `stop`.
    pub fn start(self: &Arc<Self>, settings: LichessSettings, ctx: PushContext, stop: Listener) {
        let PushContext { store, tournament, hub, clock, connect } = ctx;
        {
            let mut s = self.lock();
            s.enabled = true;
            s.lichess_round = Some(settings.round.clone());
        }
        *self.default_round.lock().unwrap_or_else(|p| p.into_inner()) = Some(settings.round.clone());
        let fixed = settings.relay_round;
        let default = settings.round.clone();
        let pusher = Pusher {
            client: Client::new(settings, connect),
            store,
            round: Box::new(move || {
                let t = tournament.lock();
                let round = fixed.unwrap_or_else(|| t.live_round());
                let id =
                    t.round(round).and_then(|r| r.lichess_round.clone()).unwrap_or_else(|| default.clone());
                (round, id)
            }),
            hub,
            clock,
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

/// A seed for the retries' jitter: relays started together draw different ones.
fn seed() -> u64 {
    let mut bytes = [0u8; 8];
    let random = getrandom::fill(&mut bytes).map(|()| u64::from_le_bytes(bytes)).unwrap_or_default();
    random ^ 0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id())
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

/// The pushing task.
struct Pusher {
    client: Client,
    store: Arc<Store>,
    /// The relay round pushed and the Lichess round it goes to.
    round: Box<dyn Fn() -> (u32, String) + Send + Sync>,
    hub: Arc<Hub>,
    clock: Clock,
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
        let mut sent: Option<(u32, String, String)> = None;
        let mut next_request = self.clock.now();
        let mut failures: u32 = 0;
        // The last failure was a connection refused or unreachable: the retry's wait is spent
        // probing.
        let mut probing = false;
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
            // Gather a burst; keep to one request a second; after network failures, probe.
            let at = next_request.max(self.clock.now() + SETTLE);
            let waited = tokio::select! {
                reachable = self.wait_to_push(at, probing) => Some(reachable),
                _ = stop.wait() => None,
            };
            let stopping = waited.is_none();
            if waited == Some(true) {
                tracing::info!("Lichess takes connections again: pushing now");
                next_request = self.clock.now();
            }
            changes.borrow_and_update();
            let (round, id) = (self.round)();
            let text = self.store.round_pgn(round).unwrap_or_default();
            let games = split_games(&text);
            let print = (round, id.clone(), fingerprint(&games));
            if games.is_empty() || sent.as_ref() == Some(&print) {
                self.state.lock().pending = false;
                if stopping {
                    return;
                }
                continue;
            }
            let outcome = if stopping {
                // One last push of what changed, briefly: the relay is stopping.
                tokio::time::timeout(STOP_PUSH, self.push_round(round, &id, &games, &mut next_request))
                    .await
                    .unwrap_or_else(|_| Err(PushError::Network("stopped".into())))
            } else {
                // A push in flight (up to the request's time limit) is dropped when the relay
                // stops: the last push below sends the same, with the stop's time limit.
                let pushed = tokio::select! {
                    outcome = self.push_round(round, &id, &games, &mut next_request) => Some(outcome),
                    _ = stop.wait() => None,
                };
                match pushed {
                    Some(outcome) => outcome,
                    None => {
                        tracing::info!("push in flight dropped: the relay is stopping");
                        next_request = self.clock.now();
                        dirty = true;
                        continue;
                    }
                }
            };
            let now = self.clock.unix_s();
            match outcome {
                Ok(()) => {
                    probing = false;
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
                    probing = matches!(e, PushError::Unreachable(_));
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
                        next_request = next_request.max(self.clock.now() + wait);
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

    /// Waits until `at`; when `probing`, probes the endpoint every [`PROBE_EVERY`] meanwhile
    /// and returns true as soon as it takes a connection.
    async fn wait_to_push(&self, at: Instant, probing: bool) -> bool {
        loop {
            let probe_at = self.clock.now() + PROBE_EVERY;
            if !probing || probe_at >= at {
                tokio::time::sleep_until(at).await;
                return false;
            }
            tokio::time::sleep_until(probe_at).await;
            if self.client.reachable(PROBE_EVERY).await {
                return true;
            }
        }
    }

    /// Pushes the round's games, 100 a request, one request a second.
    async fn push_round(
        &mut self,
        round: u32,
        id: &str,
        games: &[&str],
        next_request: &mut Instant,
    ) -> Result<(), PushError> {
        let mut answers = Vec::new();
        for chunk in games.chunks(MAX_GAMES_PER_PUSH) {
            tokio::time::sleep_until(*next_request).await;
            *next_request = self.clock.now() + MIN_INTERVAL;
            self.state.lock().requests += 1;
            {
                let mut s = self.state.lock();
                s.round = Some(round);
                s.lichess_round = Some(id.to_owned());
            }
            tracing::debug!(round, lichess_round = id, games = chunk.len(), "push");
            answers.extend(self.client.push(id, chunk.concat()).await?);
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
                            format!("Lichess refused {name}: {e}. In the console, open the board and correct the game (or its players in Pairings) to have it published."),
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
