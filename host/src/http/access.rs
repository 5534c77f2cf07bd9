//! Who may reach what: the admin token with its per-address backoff, `Host` and `Origin`
//! on guarded routes, and CORS on the read routes (see the module docs of [`super`]).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::time::Instant;

use super::ApiError;
use crate::relay::Relay;

/// Failed admin calls an address may make before it is blocked.
pub const FREE_FAILURES: u32 = 10;
/// The longest block of an address after failed admin calls.
pub const MAX_BLOCK: Duration = Duration::from_secs(60);
/// An address's failures are forgotten after this long without one.
pub const FORGET_AFTER: Duration = Duration::from_secs(15 * 60);
/// Addresses whose failures are remembered, at most.
pub const MAX_TRACKED: usize = 4096;

/// The names of this machine accepted in `Host` and `Origin` on a loopback listener.
pub const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Who may reach the admin routes and the websocket from a browser.
#[derive(Clone, Debug, Default)]
pub struct Access {
    /// The port, when listening on loopback: `Host` is then checked.
    pub loopback_port: Option<u16>,
    /// Origins allowed beside the relay's own, lower case (`https://relay.example.org`).
    pub allowed_origins: Vec<String>,
}

impl Access {
    /// The access rules for a listener on `addr` with these extra origins.
    pub fn new(addr: SocketAddr, allowed_origins: Vec<String>) -> Access {
        Access { loopback_port: addr.ip().is_loopback().then_some(addr.port()), allowed_origins }
    }

    /// Why a request with these headers may not reach a guarded route, if it may not.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), &'static str> {
        let header =
            |name| headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok()).map(str::to_ascii_lowercase);
        let host = header(header::HOST);
        if let Some(port) = self.loopback_port {
            let ok = host.as_deref().is_some_and(|h| {
                LOOPBACK_NAMES.iter().any(|name| h == format!("{name}:{port}"))
                    || self.allowed_origins.iter().any(|o| o.split_once("://").is_some_and(|(_, a)| a == h))
            });
            if !ok {
                return Err(
                    "Host is not this relay's loopback address (localhost, 127.0.0.1 or [::1] with its port)",
                );
            }
        }
        let Some(origin) = header(header::ORIGIN) else { return Ok(()) };
        if self.loopback_port.is_none() && self.allowed_origins.is_empty() {
            return Ok(());
        }
        let authority = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
        let same = authority.is_some_and(|a| host.as_deref() == Some(a));
        let loopback = self.loopback_port.is_some_and(|port| {
            authority.is_some_and(|a| LOOPBACK_NAMES.iter().any(|name| a == format!("{name}:{port}")))
        });
        if same || loopback || self.allowed_origins.contains(&origin) {
            Ok(())
        } else {
            Err("Origin is not allowed (the relay's own page, or allowed_origins in the configuration)")
        }
    }
}

/// Failed admin calls from all addresses together before every failing address is
/// blocked (many addresses guessing at once, or one proxy's clients).
pub const FREE_FAILURES_OVERALL: u32 = 100;

/// Failed admin calls per client address and overall, with backoff. Only failures count
/// and only failing calls are refused: a call with the right token is always served, so
/// a client guessing from the operator's address (or behind the same proxy) cannot lock
/// the operator out. What the backoff protects is the token's guessing rate; a token has
/// at least 16 characters, which no rate of guesses finds.
#[derive(Debug, Default)]
pub struct AdminGuard {
    inner: Mutex<GuardInner>,
}

#[derive(Debug, Default)]
struct GuardInner {
    by_ip: HashMap<IpAddr, Failures>,
    overall: Option<Failures>,
}

#[derive(Clone, Copy, Debug)]
struct Failures {
    count: u32,
    last: Instant,
    blocked_until: Option<Instant>,
}

impl Failures {
    fn new(now: Instant) -> Failures {
        Failures { count: 0, last: now, blocked_until: None }
    }

    /// Counts a failure at `now`; past `free` failures, blocks for twice as long as the
    /// last block (1 s up to [`MAX_BLOCK`]) and returns the block.
    fn fail(&mut self, now: Instant, free: u32) -> Option<Duration> {
        if now.saturating_duration_since(self.last) >= FORGET_AFTER {
            *self = Failures::new(now);
        }
        self.count = self.count.saturating_add(1);
        self.last = now;
        let block = self.count.checked_sub(free + 1).map(|over| {
            Duration::from_secs(1u64.checked_shl(over.min(16)).unwrap_or(u64::MAX)).min(MAX_BLOCK)
        });
        self.blocked_until = block.map(|b| now + b);
        block
    }

    fn blocked(&self, now: Instant) -> Option<Duration> {
        self.blocked_until.filter(|until| *until > now).map(|until| until - now)
    }
}

impl AdminGuard {
    fn lock(&self) -> std::sync::MutexGuard<'_, GuardInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How long failing calls from `ip` are still refused at `now`, if they are: the
    /// address's block or the overall one, whichever lasts longer.
    pub fn blocked(&self, ip: IpAddr, now: Instant) -> Option<Duration> {
        let inner = self.lock();
        let own = inner.by_ip.get(&ip).and_then(|f| f.blocked(now));
        let overall = inner.overall.as_ref().and_then(|f| f.blocked(now));
        own.max(overall)
    }

    /// A failed call from `ip` at `now`: returns the address's failures counted and the
    /// block it started (of the address or overall), if any.
    pub fn failed(&self, ip: IpAddr, now: Instant) -> (u32, Option<Duration>) {
        let mut inner = self.lock();
        let map = &mut inner.by_ip;
        if map.len() >= MAX_TRACKED && !map.contains_key(&ip) {
            map.retain(|_, f| now.saturating_duration_since(f.last) < FORGET_AFTER);
            if map.len() >= MAX_TRACKED
                && let Some(oldest) = map.iter().min_by_key(|(_, f)| f.last).map(|(ip, _)| *ip)
            {
                map.remove(&oldest);
            }
        }
        let f = map.entry(ip).or_insert(Failures::new(now));
        let own = f.fail(now, FREE_FAILURES);
        let count = f.count;
        let overall = inner.overall.get_or_insert(Failures::new(now)).fail(now, FREE_FAILURES_OVERALL);
        (count, own.max(overall))
    }
}

/// Shared by the guarded routes' middleware.
#[derive(Clone)]
pub(super) struct Guarded {
    pub(super) relay: Arc<Relay>,
    pub(super) access: Arc<Access>,
    pub(super) failures: Arc<AdminGuard>,
}

/// Whether `path` is a read route that answers other origins (CORS): `/health`, `/api/...`
/// except the admin routes, and `/pgn/...`.
pub fn cors_route(path: &str) -> bool {
    path == "/health"
        || path.starts_with("/pgn/")
        || (path.starts_with("/api/") && path != "/api/admin" && !path.starts_with("/api/admin/"))
}

/// CORS for the read routes: a browser on an allowed origin may read them (the answer
/// names its origin in `Access-Control-Allow-Origin`, with `Vary: Origin`), and its
/// preflight (`OPTIONS`) is answered. Other routes and other origins get no CORS header,
/// so the browser keeps the answer from the page.
pub(super) async fn cors(State(access): State<Arc<Access>>, req: Request, next: Next) -> Response {
    if !cors_route(req.uri().path()) {
        return next.run(req).await;
    }
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase)
        .filter(|o| access.allowed_origins.contains(o))
        .and_then(|o| HeaderValue::from_str(&o).ok());
    let mut response = if req.method() == axum::http::Method::OPTIONS {
        let mut r = StatusCode::NO_CONTENT.into_response();
        if origin.is_some() {
            let h = r.headers_mut();
            h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, HEAD, OPTIONS"));
            h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("if-none-match"));
            h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
        }
        r
    } else {
        next.run(req).await
    };
    let h = response.headers_mut();
    if let Some(o) = origin {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, o);
    }
    h.append(header::VARY, HeaderValue::from_static("origin"));
    response
}

/// The client's address, when the server put it in the request.
fn peer_ip(req: &Request) -> Option<IpAddr> {
    req.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip())
}

pub(super) async fn check_access(State(g): State<Guarded>, req: Request, next: Next) -> Response {
    match g.access.check(req.headers()) {
        Ok(()) => next.run(req).await,
        Err(why) => {
            tracing::warn!(
                peer = ?peer_ip(&req),
                path = %req.uri().path(),
                host = ?req.headers().get(header::HOST),
                origin = ?req.headers().get(header::ORIGIN),
                "request refused: {why}"
            );
            ApiError::Forbidden(why).into_response()
        }
    }
}

/// Compares without an early exit, so the token's length or prefix does not leak by timing.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Lets a call with the right token through, always; refuses the others, counting each
/// failure (logged) and answering `429` while the caller's address, or every address,
/// has failed too often (see [`AdminGuard`]).
pub(super) async fn require_token(State(g): State<Guarded>, req: Request, next: Next) -> Response {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let token = &g.relay.token;
    if given.is_some_and(|t| !token.is_empty() && same(t.trim().as_bytes(), token.as_bytes())) {
        return next.run(req).await;
    }
    let ip = peer_ip(&req);
    let now = g.relay.clock.now();
    let path = req.uri().path().to_owned();
    let why = if given.is_some() { "wrong token" } else { "no bearer token" };
    let Some(ip) = ip else {
        tracing::warn!(%path, "admin call refused: {why}");
        return ApiError::Unauthorized.into_response();
    };
    if let Some(wait) = g.failures.blocked(ip, now) {
        // Not counted: a block is not lengthened by the calls it refuses.
        tracing::debug!(peer = %ip, %path, "admin call refused while blocked: {why}");
        return ApiError::TooMany(wait).into_response();
    }
    let (failures, block) = g.failures.failed(ip, now);
    tracing::warn!(peer = %ip, %path, failures, "admin call refused: {why}");
    if let Some(block) = block {
        tracing::warn!(peer = %ip, failures, seconds = block.as_secs(), "failing admin calls blocked");
        return ApiError::TooMany(block).into_response();
    }
    ApiError::Unauthorized.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(host: Option<&str>, origin: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(v) = host {
            h.insert(header::HOST, HeaderValue::from_str(v).unwrap());
        }
        if let Some(v) = origin {
            h.insert(header::ORIGIN, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn on_loopback_host_and_origin_must_be_the_relays() {
        let a = Access::new("127.0.0.1:8080".parse().unwrap(), Vec::new());
        for host in ["localhost:8080", "127.0.0.1:8080", "[::1]:8080", "LOCALHOST:8080"] {
            assert_eq!(a.check(&headers(Some(host), None)), Ok(()), "{host}");
            let origin = format!("http://{host}");
            assert_eq!(a.check(&headers(Some(host), Some(&origin))), Ok(()), "{host}");
        }
        // DNS rebinding: the attacker's name resolves to 127.0.0.1.
        assert!(a.check(&headers(Some("evil.example:8080"), Some("http://evil.example:8080"))).is_err());
        assert!(a.check(&headers(Some("localhost:9999"), None)).is_err());
        assert!(a.check(&headers(Some("localhost"), None)).is_err());
        assert!(a.check(&headers(None, None)).is_err());
        // A cross-site page with the right Host (a websocket from another site).
        assert!(a.check(&headers(Some("127.0.0.1:8080"), Some("https://evil.example"))).is_err());
        assert_eq!(a.check(&headers(Some("127.0.0.1:8080"), Some("http://localhost:8080"))), Ok(()));
        assert!(a.check(&headers(Some("127.0.0.1:8080"), Some("http://localhost:9999"))).is_err());
        assert!(a.check(&headers(Some("127.0.0.1:8080"), Some("null"))).is_err());
        // An allowed origin (a reverse proxy on the same machine): its host and origin.
        let a = Access::new("[::1]:8080".parse().unwrap(), vec!["https://relay.example.org".into()]);
        assert_eq!(a.check(&headers(Some("relay.example.org"), Some("https://relay.example.org"))), Ok(()));
        assert_eq!(a.check(&headers(Some("[::1]:8080"), Some("https://relay.example.org"))), Ok(()));
        assert!(a.check(&headers(Some("relay.example.org"), Some("https://other.example"))).is_err());
    }

    #[test]
    fn beyond_loopback_origin_is_checked_only_with_allowed_origins() {
        let open = Access::new("0.0.0.0:8080".parse().unwrap(), Vec::new());
        assert_eq!(open.check(&headers(Some("192.0.2.7:8080"), Some("https://broadcaster.example"))), Ok(()));
        let strict = Access::new("0.0.0.0:8080".parse().unwrap(), vec!["https://broadcaster.example".into()]);
        assert_eq!(
            strict.check(&headers(Some("192.0.2.7:8080"), Some("https://broadcaster.example"))),
            Ok(())
        );
        assert_eq!(strict.check(&headers(Some("192.0.2.7:8080"), Some("http://192.0.2.7:8080"))), Ok(()));
        assert!(strict.check(&headers(Some("192.0.2.7:8080"), Some("https://evil.example"))).is_err());
        assert_eq!(strict.check(&headers(Some("192.0.2.7:8080"), None)), Ok(()), "no Origin: not a browser");
    }

    #[test]
    fn failed_admin_calls_back_off_per_address() {
        let g = AdminGuard::default();
        let (a, b): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        let t0 = Instant::now();
        for i in 1..=FREE_FAILURES {
            assert_eq!(g.failed(a, t0), (i, None));
        }
        assert_eq!(g.blocked(a, t0), None);
        // Then 1 s, 2 s, 4 s, ... at most MAX_BLOCK.
        let mut t = t0;
        let mut blocks = Vec::new();
        for _ in 0..10 {
            let (_, block) = g.failed(a, t);
            let block = block.unwrap();
            assert_eq!(g.blocked(a, t), Some(block));
            blocks.push(block.as_secs());
            t += block;
            assert_eq!(g.blocked(a, t), None);
        }
        assert_eq!(blocks, [1, 2, 4, 8, 16, 32, 60, 60, 60, 60]);
        // Another address is not affected.
        assert_eq!(g.failed(b, t), (1, None));
        // Failures long ago are forgotten.
        for _ in 0..FREE_FAILURES {
            g.failed(b, t);
        }
        assert_eq!(g.failed(b, t + FORGET_AFTER), (1, None));
    }

    #[test]
    fn many_addresses_failing_together_are_slowed_overall() {
        let g = AdminGuard::default();
        let t = Instant::now();
        // Each address under its own limit: the overall one blocks past its own.
        for i in 0..FREE_FAILURES_OVERALL {
            let ip = IpAddr::from((i / FREE_FAILURES).to_be_bytes());
            assert_eq!(g.failed(ip, t).1, None, "failure {i}");
        }
        let fresh: IpAddr = "198.51.100.7".parse().unwrap();
        assert_eq!(g.blocked(fresh, t), None);
        assert_eq!(g.failed(fresh, t), (1, Some(Duration::from_secs(1))));
        assert_eq!(g.blocked(fresh, t), Some(Duration::from_secs(1)), "every address waits");
        assert_eq!(g.blocked(fresh, t + Duration::from_secs(1)), None);
    }

    #[test]
    fn the_failure_table_is_bounded() {
        let g = AdminGuard::default();
        let t = Instant::now();
        for i in 0..(MAX_TRACKED as u32 + 100) {
            g.failed(IpAddr::from(i.to_be_bytes()), t + Duration::from_millis(u64::from(i)));
        }
        assert_eq!(g.lock().by_ip.len(), MAX_TRACKED);
    }
}
