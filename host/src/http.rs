//! HTTP routes: the websocket feed, PGN, board JSON, health, and the admin API.
//!
//! Read routes need nothing; admin routes need `Authorization: Bearer <token>`. Request
//! bodies are limited to [`MAX_BODY`] bytes, websocket messages to
//! [`crate::feed::MAX_CLIENT_MESSAGE`], and subscribers to the configured maximum.

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use crate::admin::{AdminCommand, AdminError};
use crate::config::{MAX_BOARDS, Pairing, check_player};
use crate::feed::ClientLimits;
use crate::relay::Relay;

/// The largest request body accepted, bytes.
pub const MAX_BODY: usize = 64 * 1024;

/// The router for a relay.
pub fn router(relay: Arc<Relay>) -> Router {
    let admin = Router::new()
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
        .route_layer(middleware::from_fn_with_state(Arc::clone(&relay), require_token));
    Router::new()
        .route("/", get(index))
        .route("/health", get(health))
        .route("/api/boards", get(boards))
        .route("/api/boards/{board}", get(board))
        .route("/api/push", get(crate::push::status_route))
        .route("/pgn/{round}", get(round_pgn))
        .route("/pgn/{round}/{board}", get(game_pgn))
        .route("/ws", get(ws))
        .nest("/api/admin", admin)
        .merge(crate::web::router())
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(relay)
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(serde_json::json!({ "error": message.into() }))).into_response()
}

/// Compares without an early exit, so the token's length or prefix does not leak by timing.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn require_token(
    State(relay): State<Arc<Relay>>,
    headers: HeaderMap,
    req: Request,
    next: Next,
) -> Response {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match given {
        Some(t) if !relay.token.is_empty() && same(t.trim().as_bytes(), relay.token.as_bytes()) => {
            next.run(req).await
        }
        _ => {
            let mut r = error(StatusCode::UNAUTHORIZED, "admin calls need Authorization: Bearer <token>");
            r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            r
        }
    }
}

async fn index(State(relay): State<Arc<Relay>>) -> Response {
    let mut html = String::from(
        "<!doctype html><meta charset=utf-8><title>DGT live relay</title><h1>DGT live relay</h1>\
         <p><b><a href=/live/>Live page</a></b> · <a href=/health>health</a> · <a href=/api/boards>boards (JSON)</a> · \
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
    Json(relay.hub.boards()).into_response()
}

async fn board(State(relay): State<Arc<Relay>>, Path(n): Path<u32>) -> Response {
    match relay.hub.board(n) {
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
    white: crate::config::Player,
    #[serde(default)]
    black: crate::config::Player,
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
        if let Err(m) = check_player(&b.white).and_then(|()| check_player(&b.black)) {
            return error(StatusCode::UNPROCESSABLE_ENTITY, format!("board {}: {m}", b.board));
        }
    }
    let round = {
        let mut t = relay.tournament.lock();
        if let Some(r) = body.round {
            t.event.round = r;
        }
        for b in &body.boards {
            t.pairings.insert(b.board, Pairing { white: b.white.clone(), black: b.black.clone() });
        }
        t.event.round
    };
    relay.hub.set_round(round);
    let numbers: Vec<(u32, Pairing)> = {
        let t = relay.tournament.lock();
        t.pairings.iter().map(|(n, p)| (*n, p.clone())).collect()
    };
    let mut refused = Vec::new();
    for (n, pairing) in numbers {
        if relay.board(n).is_some()
            && let Err(e) = relay.admin(n, AdminCommand::Pairing { round, pairing }).await
        {
            refused.push(format!("board {n}: {e}"));
        }
    }
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

async fn correct(
    State(relay): State<Arc<Relay>>,
    Path(n): Path<u32>,
    Json(body): Json<CorrectBody>,
) -> Response {
    if body.moves.len() > crate::board::PLIES || body.moves.iter().any(|m| m.len() > 5) {
        return error(StatusCode::UNPROCESSABLE_ENTITY, "moves must be at most 600 UCI moves");
    }
    admin_result(relay.admin(n, AdminCommand::Correct { from_ply: body.from_ply, moves: body.moves }).await)
}
