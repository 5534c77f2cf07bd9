//! HTTP routes: the websocket feed, PGN, board JSON, health, and the admin API.
//!
//! Read routes need nothing; admin routes need `Authorization: Bearer <token>`. Request
//! bodies are limited to [`MAX_BODY`] bytes, websocket messages to
//! [`crate::feed::MAX_CLIENT_MESSAGE`], and subscribers to the configured maximum.
//!
//! # Exposure
//! - Wrong or missing tokens are logged and limited per client address ([`AdminGuard`]):
//!   after [`FREE_FAILURES`] failures each further one blocks the address for twice as
//!   long as the last (1 s up to [`MAX_BLOCK`]), answered `429` with `Retry-After`.
//! - On a loopback listener, the admin routes and the websocket check `Host` (a loopback
//!   name with the relay's port, or the host of an allowed origin) and `Origin` when a
//!   browser sends one (the relay's own origin or an allowed one): a web page the operator
//!   happens to open cannot reach the relay by DNS rebinding or a cross-site websocket.
//!   Beyond loopback, `Origin` is checked only when allowed origins are configured.
//! - Spectator routes (`/api/boards`, `/health`, the feed, the page) show no filesystem
//!   or device path (see [`crate::feed::Private`]); the operator's `/api/admin/boards`
//!   does.
//! - CORS: the read routes (`/health`, `/api/...` but not `/api/admin/...`, `/pgn/...`)
//!   answer browsers from the allowed origins with `Access-Control-Allow-Origin` (and
//!   preflights); the admin routes never do, so a page on another site cannot call them
//!   even with the token.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::Router;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use crate::admin::{AdminCommand, AdminError};
use crate::board::BoardInput;
use crate::feed::ClientLimits;
use crate::relay::Relay;
use crate::tournament::{MAX_BOARDS, Pairing, Player};

/// The largest request body accepted, bytes.
pub const MAX_BODY: usize = 64 * 1024;

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

/// Failed admin calls per client address, with backoff.
#[derive(Debug, Default)]
pub struct AdminGuard {
    by_ip: Mutex<HashMap<IpAddr, Failures>>,
}

#[derive(Clone, Copy, Debug)]
struct Failures {
    count: u32,
    last: Instant,
    blocked_until: Option<Instant>,
}

impl AdminGuard {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Failures>> {
        self.by_ip.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How long `ip` is still blocked at `now`, if it is.
    pub fn blocked(&self, ip: IpAddr, now: Instant) -> Option<Duration> {
        let map = self.lock();
        let until = map.get(&ip)?.blocked_until?;
        (until > now).then(|| until - now)
    }

    /// A failed call from `ip` at `now`: returns the failures counted and the block it
    /// started, if any.
    pub fn failed(&self, ip: IpAddr, now: Instant) -> (u32, Option<Duration>) {
        let mut map = self.lock();
        if map.len() >= MAX_TRACKED && !map.contains_key(&ip) {
            map.retain(|_, f| now.saturating_duration_since(f.last) < FORGET_AFTER);
            if map.len() >= MAX_TRACKED
                && let Some(oldest) = map.iter().min_by_key(|(_, f)| f.last).map(|(ip, _)| *ip)
            {
                map.remove(&oldest);
            }
        }
        let f = map.entry(ip).or_insert(Failures { count: 0, last: now, blocked_until: None });
        if now.saturating_duration_since(f.last) >= FORGET_AFTER {
            *f = Failures { count: 0, last: now, blocked_until: None };
        }
        f.count = f.count.saturating_add(1);
        f.last = now;
        let block = f.count.checked_sub(FREE_FAILURES + 1).map(|over| {
            Duration::from_secs(1u64.checked_shl(over.min(16)).unwrap_or(u64::MAX)).min(MAX_BLOCK)
        });
        f.blocked_until = block.map(|b| now + b);
        (f.count, block)
    }

    /// A successful call from `ip`: its failures are forgotten.
    pub fn succeeded(&self, ip: IpAddr) {
        self.lock().remove(&ip);
    }
}

/// Shared by the guarded routes' middleware.
#[derive(Clone)]
struct Guarded {
    relay: Arc<Relay>,
    access: Arc<Access>,
    failures: Arc<AdminGuard>,
}

/// The router for a relay, with the access rules for its listener.
pub fn router(relay: Arc<Relay>, access: Access) -> Router {
    let access = Arc::new(access);
    let guarded =
        Guarded { relay: Arc::clone(&relay), access: Arc::clone(&access), failures: Arc::default() };
    let admin = Router::new()
        .route("/boards", get(admin_boards))
        .route("/pairings", post(set_pairings))
        // A TRF report is larger than a JSON body: up to 4 MiB.
        .route(
            "/pairings/trf",
            post(crate::trf::admin_upload).layer(DefaultBodyLimit::max(crate::trf::MAX_TRF_BYTES)),
        )
        .route("/boards/{board}/result", post(set_result))
        .route("/boards/{board}/flip", post(flip))
        .route("/boards/{board}/start-fen", post(start_fen))
        .route("/boards/{board}/new-game", post(new_game))
        .route("/boards/{board}/correct", post(correct))
        .route("/alerts/{id}/ack", post(ack_alert))
        .route("/delay", get(get_delay).put(put_delay))
        .route_layer(middleware::from_fn_with_state(guarded.clone(), require_token))
        .route_layer(middleware::from_fn_with_state(guarded.clone(), check_access));
    let feed = Router::new()
        .route("/ws", get(ws))
        .route_layer(middleware::from_fn_with_state(guarded, check_access));
    Router::new()
        .route("/", get(index))
        .route("/health", get(health))
        .route("/api/boards", get(boards))
        .route("/api/boards/{board}", get(board))
        .route("/api/push", get(crate::push::status_route))
        .route("/api/event", get(event))
        .route("/api/rounds/{round}", get(round_games))
        .route("/api/games/{round}/{board}", get(game))
        .route("/pgn/{round}", get(round_pgn))
        .route("/pgn/{round}/{board}", get(game_pgn))
        .merge(feed)
        .nest("/api/admin", admin)
        .merge(crate::web::router())
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn_with_state(access, cors))
        .with_state(relay)
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
async fn cors(State(access): State<Arc<Access>>, req: Request, next: Next) -> Response {
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

async fn check_access(State(g): State<Guarded>, req: Request, next: Next) -> Response {
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
            error(StatusCode::FORBIDDEN, why)
        }
    }
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(serde_json::json!({ "error": message.into() }))).into_response()
}

/// Compares without an early exit, so the token's length or prefix does not leak by timing.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn too_many(wait: Duration) -> Response {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let mut r = error(
        StatusCode::TOO_MANY_REQUESTS,
        format!("too many failed admin calls from this address; retry in {secs} s"),
    );
    if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

async fn require_token(State(g): State<Guarded>, req: Request, next: Next) -> Response {
    let ip = peer_ip(&req);
    let now = Instant::now();
    if let Some(wait) = ip.and_then(|ip| g.failures.blocked(ip, now)) {
        return too_many(wait);
    }
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let token = &g.relay.token;
    if given.is_some_and(|t| !token.is_empty() && same(t.trim().as_bytes(), token.as_bytes())) {
        if let Some(ip) = ip {
            g.failures.succeeded(ip);
        }
        return next.run(req).await;
    }
    let path = req.uri().path().to_owned();
    let why = if given.is_some() { "wrong token" } else { "no bearer token" };
    if let Some(ip) = ip {
        let (failures, block) = g.failures.failed(ip, now);
        tracing::warn!(peer = %ip, %path, failures, "admin call refused: {why}");
        if let Some(block) = block {
            tracing::warn!(peer = %ip, failures, seconds = block.as_secs(), "admin calls from this address blocked");
            return too_many(block);
        }
    } else {
        tracing::warn!(%path, "admin call refused: {why}");
    }
    let mut r = error(StatusCode::UNAUTHORIZED, "admin calls need Authorization: Bearer <token>");
    r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

async fn index(State(relay): State<Arc<Relay>>) -> Response {
    let mut html = String::from(
        "<!doctype html><meta charset=utf-8><title>DGT live relay</title><h1>DGT live relay</h1>\
         <p><b><a href=/live/>Live page</a></b> (spectators) · <b><a href=/console/>Operator console</a></b> \
         (admin token) · <a href=/health>health</a> · <a href=/api/boards>boards (JSON)</a> · \
         websocket feed at <code>/ws</code></p><ul>",
    );
    for round in relay.store.rounds() {
        html.push_str(&format!("<li>Round {round}: <a href=/pgn/{round}>games.pgn</a>"));
        for b in relay.store.games(round) {
            html.push_str(&format!(" · <a href=/pgn/{round}/{b}>board {b}</a>"));
        }
        html.push_str("</li>");
    }
    html.push_str("</ul>");
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
}

async fn health(State(relay): State<Arc<Relay>>) -> Response {
    let boards = relay.hub.boards();
    let active = boards.iter().filter(|b| b.status == crate::feed::BoardStatus::Active).count();
    Json(serde_json::json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "feed_version": crate::feed::FEED_VERSION,
        "boards": boards.len(),
        "active": active,
        "subscribers": relay.hub.receivers(),
        "seq": relay.hub.seq(),
        "push": relay.push.status(),
    }))
    .into_response()
}

async fn boards(State(relay): State<Arc<Relay>>) -> Response {
    Json(relay.hub.public_boards()).into_response()
}

/// The operator's view: every board whole (ports included) and the relay-wide alerts.
async fn admin_boards(State(relay): State<Arc<Relay>>) -> Response {
    Json(serde_json::json!({
        "boards": relay.hub.boards(),
        "alerts": relay.hub.admin_relay_alerts(),
    }))
    .into_response()
}

async fn board(State(relay): State<Arc<Relay>>, Path(n): Path<u32>) -> Response {
    match relay.hub.public_board(n) {
        Some(b) => Json(b).into_response(),
        None => error(StatusCode::NOT_FOUND, "no such board"),
    }
}

fn pgn_response(text: Option<String>) -> Response {
    match text {
        Some(t) => ([(header::CONTENT_TYPE, "application/x-chess-pgn; charset=utf-8")], t).into_response(),
        None => error(StatusCode::NOT_FOUND, "no such game"),
    }
}

async fn round_pgn(State(relay): State<Arc<Relay>>, Path(round): Path<u32>) -> Response {
    pgn_response(relay.store.round_pgn(round))
}

async fn game_pgn(State(relay): State<Arc<Relay>>, Path((round, board)): Path<(u32, u32)>) -> Response {
    pgn_response(relay.store.game_pgn(round, board))
}

async fn ws(State(relay): State<Arc<Relay>>, upgrade: WebSocketUpgrade) -> Response {
    if relay.hub.receivers() >= relay.max_subscribers {
        return error(StatusCode::SERVICE_UNAVAILABLE, "too many subscribers");
    }
    let hub = Arc::clone(&relay.hub);
    let stop = relay.shutdown().listener();
    upgrade
        .max_message_size(crate::feed::MAX_CLIENT_MESSAGE)
        .max_frame_size(crate::feed::MAX_CLIENT_MESSAGE)
        .read_buffer_size(crate::feed::READ_BUFFER)
        .on_upgrade(move |socket| async move {
            let end = crate::feed::serve_client(socket, hub, stop, ClientLimits::default()).await;
            tracing::debug!(?end, "websocket client left");
        })
}

/// `GET /api/admin/delay`: the broadcast delay.
async fn get_delay(State(relay): State<Arc<Relay>>) -> Response {
    Json(serde_json::json!({ "delay_s": relay.delay() })).into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DelayBody {
    delay_s: u64,
}

/// `PUT /api/admin/delay`: sets the broadcast delay of everything public.
async fn put_delay(State(relay): State<Arc<Relay>>, Json(body): Json<DelayBody>) -> Response {
    match relay.set_delay(body.delay_s) {
        Ok(()) => Json(serde_json::json!({ "ok": true, "delay_s": relay.delay() })).into_response(),
        Err(e) => AdminError::Invalid(e.to_string()).into_response(),
    }
}

fn admin_result(r: Result<(), AdminError>) -> Response {
    match r {
        Ok(()) => Json(serde_json::json!({ "ok": true })).into_response(),
        Err(e) => e.into_response(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PairingsBody {
    round: Option<u32>,
    #[serde(default)]
    boards: Vec<BoardPairing>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BoardPairing {
    board: u32,
    #[serde(default)]
    white: Player,
    #[serde(default)]
    black: Player,
}

async fn set_pairings(State(relay): State<Arc<Relay>>, Json(body): Json<PairingsBody>) -> Response {
    if let Some(r) = body.round
        && !(1..=999).contains(&r)
    {
        return error(StatusCode::UNPROCESSABLE_ENTITY, "round must be between 1 and 999");
    }
    if body.boards.len() > MAX_BOARDS {
        return error(StatusCode::UNPROCESSABLE_ENTITY, "too many boards");
    }
    for b in &body.boards {
        if !(1..=MAX_BOARDS as u32).contains(&b.board) {
            return error(StatusCode::UNPROCESSABLE_ENTITY, format!("board {} out of range", b.board));
        }
        if let Err(m) = b.white.check().and_then(|()| b.black.check()) {
            return error(StatusCode::UNPROCESSABLE_ENTITY, format!("board {}: {m}", b.board));
        }
    }
    let boards =
        body.boards.into_iter().map(|b| (b.board, Pairing { white: b.white, black: b.black })).collect();
    let (round, refused) = relay.merge_pairings(body.round, boards).await;
    if refused.is_empty() {
        Json(serde_json::json!({ "ok": true, "round": round })).into_response()
    } else {
        error(StatusCode::UNPROCESSABLE_ENTITY, refused.join("; "))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResultBody {
    result: Option<String>,
}

async fn set_result(
    State(relay): State<Arc<Relay>>,
    Path(n): Path<u32>,
    Json(body): Json<ResultBody>,
) -> Response {
    let result = match body.result.as_deref().map(str::parse::<dgt_core::GameResult>).transpose() {
        Ok(r) => r,
        Err(e) => return AdminError::Invalid(format!("result {:?}: {e}", body.result)).into_response(),
    };
    admin_result(relay.admin(n, AdminCommand::Result(result)).await)
}

async fn flip(State(relay): State<Arc<Relay>>, Path(n): Path<u32>) -> Response {
    admin_result(relay.admin(n, AdminCommand::Flip).await)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FenBody {
    fen: String,
}

async fn start_fen(
    State(relay): State<Arc<Relay>>,
    Path(n): Path<u32>,
    Json(body): Json<FenBody>,
) -> Response {
    if let Err(e) = dgt_core::position_from_fen(&body.fen) {
        return AdminError::Invalid(e.to_string()).into_response();
    }
    admin_result(relay.admin(n, AdminCommand::NewGame(Some(body.fen))).await)
}

async fn new_game(State(relay): State<Arc<Relay>>, Path(n): Path<u32>) -> Response {
    admin_result(relay.admin(n, AdminCommand::NewGame(None)).await)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CorrectBody {
    from_ply: u32,
    moves: Vec<String>,
}

/// `?dry_run=1` (or `true`): check, change nothing.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CorrectQuery {
    #[serde(default)]
    dry_run: Option<String>,
}

async fn correct(
    State(relay): State<Arc<Relay>>,
    Path(n): Path<u32>,
    Query(q): Query<CorrectQuery>,
    Json(body): Json<CorrectBody>,
) -> Response {
    let dry_run = match q.dry_run.as_deref() {
        None | Some("0" | "false") => false,
        Some("1" | "true" | "") => true,
        Some(other) => return error(StatusCode::BAD_REQUEST, format!("dry_run={other:?}: give 1 or 0")),
    };
    if body.moves.len() > crate::board::PLIES || body.moves.iter().any(|m| m.len() > 5) {
        return error(StatusCode::UNPROCESSABLE_ENTITY, "moves must be at most 600 UCI moves");
    }
    if !dry_run {
        return admin_result(
            relay.admin(n, AdminCommand::Correct { from_ply: body.from_ply, moves: body.moves }).await,
        );
    }
    // The board's session checks the correction against its game and changes nothing.
    let checked = async {
        let tx = relay.board(n).ok_or(AdminError::NoBoard)?;
        let (reply, rx) = tokio::sync::oneshot::channel();
        let input = BoardInput::CheckCorrection { from_ply: body.from_ply, moves: body.moves, reply };
        tx.send(input).await.map_err(|_| AdminError::Gone)?;
        rx.await.map_err(|_| AdminError::Gone)?
    };
    match checked.await {
        Ok(moves) => {
            let moves: Vec<serde_json::Value> = moves
                .into_iter()
                .map(|(m, fen)| serde_json::json!({ "ply": m.ply, "san": m.san, "uci": m.uci, "fen": fen }))
                .collect();
            Json(serde_json::json!({ "ok": true, "dry_run": true, "moves": moves })).into_response()
        }
        Err(e) => e.into_response(),
    }
}

/// `POST /api/admin/alerts/{id}/ack`: an operator has seen the alert. Kept by the relay
/// (every console shows it acknowledged) and sent as an `alert_ack` delta.
async fn ack_alert(State(relay): State<Arc<Relay>>, Path(id): Path<u64>) -> Response {
    match relay.hub.ack(id) {
        Some((board, alert)) => {
            Json(serde_json::json!({ "ok": true, "board": board, "alert": alert })).into_response()
        }
        None => error(
            StatusCode::NOT_FOUND,
            format!(
                "no alert {id} is kept (alerts are kept until {} newer ones on the same board)",
                crate::feed::MAX_ALERTS
            ),
        ),
    }
}

/// `GET /api/event`: the event's name, site, current round and time control, and the
/// rounds that have games.
async fn event(State(relay): State<Arc<Relay>>) -> Response {
    let (ev, live) = {
        let t = relay.tournament.lock();
        (t.event.clone(), t.live_round())
    };
    let mut rounds = relay.store.rounds();
    if !rounds.contains(&live) {
        rounds.push(live);
        rounds.sort_unstable();
    }
    Json(serde_json::json!({
        "name": ev.name,
        "site": ev.site,
        "round": live,
        "time_control": ev.time_control,
        "rounds": rounds,
    }))
    .into_response()
}

/// A journaled game read back, for spectators: no serial number, no path.
fn game_json(g: &crate::record::GameRecord, with_moves: bool) -> serde_json::Value {
    let h = &g.header;
    let last = g.moves.last();
    let mut v = serde_json::json!({
        "round": h.round,
        "board": h.board,
        "pairing": h.pairing,
        "start_fen": h.start_fen,
        "fen": last.and_then(|m| m.fen.clone()).or_else(|| h.start_fen.clone())
            .unwrap_or_else(|| crate::board::START_FEN.to_owned()),
        "plies": g.moves.len(),
        "last_move": last.map(|m| serde_json::json!({ "ply": m.ply, "san": m.san, "uci": m.uci })),
        "result": g.result,
        "termination": g.termination,
        "utc_date": h.utc_date,
        "utc_time": h.utc_time,
    });
    if with_moves {
        v["moves"] = g
            .moves
            .iter()
            .map(|m| serde_json::json!({ "ply": m.ply, "san": m.san, "uci": m.uci, "clk": m.clk, "emt": m.emt, "fen": m.fen }))
            .collect();
    }
    v
}

/// Reads the journals of `round` (the boards in `boards`) off the async threads.
async fn read_games(relay: &Relay, round: u32, boards: Vec<u32>) -> Vec<crate::record::GameRecord> {
    let paths: Vec<std::path::PathBuf> = boards.iter().map(|b| relay.store.journal_path(round, *b)).collect();
    let mut games = tokio::task::spawn_blocking(move || {
        paths.iter().filter_map(|p| crate::store::replay(p).ok().flatten()).collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    for g in &mut games {
        delayed(relay, g);
    }
    games
}

/// With a broadcast delay, cuts a journaled game (which is live) back to what spectators
/// may see: the moves and result of the public board, the live one as it was then. A game
/// whose board has moved on to a later round is shown whole.
fn delayed(relay: &Relay, g: &mut crate::record::GameRecord) {
    if relay.delay() == 0 && relay.hub.next_due().is_none() {
        return;
    }
    let public = relay.hub.public_board(g.header.board);
    match public {
        Some(v) if v.round > g.header.round => {}
        Some(v) if v.round == g.header.round => {
            let last = v.moves.last().map_or(0, |m| m.ply);
            g.moves.retain(|m| m.ply <= last);
            g.result = v.result;
            g.termination = v.termination;
        }
        _ => {
            g.moves.clear();
            g.result = None;
            g.termination = None;
        }
    }
}

/// `GET /api/rounds/{round}`: every game of a round with its players, result and final
/// position (no moves), read from the journals.
async fn round_games(State(relay): State<Arc<Relay>>, Path(round): Path<u32>) -> Response {
    let boards = relay.store.games(round);
    if boards.is_empty() {
        return error(StatusCode::NOT_FOUND, "no such round");
    }
    let games: Vec<serde_json::Value> =
        read_games(&relay, round, boards).await.iter().map(|g| game_json(g, false)).collect();
    Json(serde_json::json!({ "round": round, "games": games })).into_response()
}

/// `GET /api/games/{round}/{board}`: one game with its moves and the position after each
/// (as journaled: confirmed moves only), so a page can step through it without playing
/// chess. A game being played has the moves' times from the feed (`at`).
async fn game(State(relay): State<Arc<Relay>>, Path((round, board)): Path<(u32, u32)>) -> Response {
    if !relay.store.games(round).contains(&board) {
        return error(StatusCode::NOT_FOUND, "no such game");
    }
    let Some(g) = read_games(&relay, round, vec![board]).await.pop() else {
        return error(StatusCode::NOT_FOUND, "no such game");
    };
    let mut v = game_json(&g, true);
    if let Some(live) = relay.hub.public_board(board).filter(|b| b.round == round)
        && let Some(moves) = v["moves"].as_array_mut()
    {
        for m in moves {
            let at = live
                .moves
                .iter()
                .find(|l| {
                    Some(u64::from(l.ply)) == m["ply"].as_u64() && Some(l.uci.as_str()) == m["uci"].as_str()
                })
                .and_then(|l| l.at);
            if let Some(at) = at {
                m["at"] = at.into();
            }
        }
    }
    Json(v).into_response()
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
        // Another address is not affected; a success forgets.
        assert_eq!(g.failed(b, t), (1, None));
        g.succeeded(a);
        assert_eq!(g.failed(a, t), (1, None));
        // Failures long ago are forgotten.
        for _ in 0..FREE_FAILURES {
            g.failed(b, t);
        }
        assert_eq!(g.failed(b, t + FORGET_AFTER), (1, None));
    }

    #[test]
    fn the_failure_table_is_bounded() {
        let g = AdminGuard::default();
        let t = Instant::now();
        for i in 0..(MAX_TRACKED as u32 + 100) {
            g.failed(IpAddr::from(i.to_be_bytes()), t + Duration::from_millis(u64::from(i)));
        }
        assert_eq!(g.lock().len(), MAX_TRACKED);
    }
}
