//! The read routes: what anyone may read, spectators included (no token; no serial number
//! beyond the boards', no path, the broadcast delay applied).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::ApiError;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

use crate::feed::{
    BoardStatus, BoardView, ClientLimits, ClientSocket, FEED_VERSION, Hub, Keep, serve_client,
};
use crate::push::PushStatus;
use crate::record::GameRecord;
use crate::relay::Relay;
use crate::shutdown::Listener;

/// `GET /`: links to the pages and every PGN.
pub(super) async fn index(State(relay): State<Arc<Relay>>) -> Response {
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

/// `GET /health`.
pub(super) async fn health(State(relay): State<Arc<Relay>>) -> Json<Value> {
    let boards = relay.hub.boards();
    let active = boards.iter().filter(|b| b.status == BoardStatus::Active).count();
    // A port that cannot be opened leaves its boards dark: the relay is degraded.
    let ports_down = relay.port_states().values().filter(|s| s.is_down()).count();
    Json(json!({
        "status": if ports_down > 0 { "degraded" } else { "ok" },
        "ports_down": ports_down,
        "version": env!("CARGO_PKG_VERSION"),
        "feed_version": FEED_VERSION,
        "boards": boards.len(),
        "active": active,
        "subscribers": relay.hub.receivers(),
        "seq": relay.hub.seq(),
        "push": relay.push.status(),
    }))
}

/// `GET /api/push`: the Lichess push's status.
pub(super) async fn push_status(State(relay): State<Arc<Relay>>) -> Json<PushStatus> {
    Json(relay.push.status())
}

/// `GET /api/boards`: every board as spectators see it.
pub(super) async fn boards(State(relay): State<Arc<Relay>>) -> Json<Vec<BoardView>> {
    Json(relay.hub.public_boards())
}

/// `GET /api/boards/{n}`.
pub(super) async fn board(
    State(relay): State<Arc<Relay>>,
    Path(n): Path<u32>,
) -> Result<Json<BoardView>, ApiError> {
    relay.hub.public_board(n).map(Json).ok_or(ApiError::NotFound("no such board"))
}

fn pgn(text: Option<String>) -> Result<Response, ApiError> {
    let text = text.ok_or(ApiError::NotFound("no such game"))?;
    Ok(([(header::CONTENT_TYPE, "application/x-chess-pgn; charset=utf-8")], text).into_response())
}

/// `GET /pgn/{round}`: the round's combined PGN.
pub(super) async fn round_pgn(
    State(relay): State<Arc<Relay>>,
    Path(round): Path<u32>,
) -> Result<Response, ApiError> {
    pgn(relay.store.round_pgn(round))
}

/// `GET /pgn/{round}/{board}`: one game's PGN.
pub(super) async fn game_pgn(
    State(relay): State<Arc<Relay>>,
    Path((round, board)): Path<(u32, u32)>,
) -> Result<Response, ApiError> {
    pgn(relay.store.game_pgn(round, board))
}

/// `GET /ws`: the websocket feed, while there is room for another subscriber.
pub(super) async fn ws(State(relay): State<Arc<Relay>>, req: Request) -> Result<Response, ApiError> {
    if relay.hub.receivers() >= relay.max_subscribers {
        return Err(ApiError::Busy("too many subscribers"));
    }
    feed_upgrade(req, Arc::clone(&relay.hub), relay.shutdown().listener(), relay.feed_limits)
}

/// Upgrades a websocket request to the feed of `hub`: checks the handshake, answers `101`,
/// and serves the client on the socket (`feed::serve_client`) until it leaves or `stop`.
/// The feed's writers write to the socket itself, so the connection must be a TCP socket
/// of the relay's server or of `axum::serve`.
pub fn feed_upgrade(
    mut req: Request,
    hub: Arc<Hub>,
    stop: Listener,
    limits: ClientLimits,
) -> Result<Response, ApiError> {
    let headers = req.headers();
    let has = |name: header::HeaderName, token: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    };
    if req.method() != Method::GET
        || !has(header::CONNECTION, "upgrade")
        || !has(header::UPGRADE, "websocket")
    {
        return Err(ApiError::BadRequest("not a websocket upgrade request".into()));
    }
    if headers.get(header::SEC_WEBSOCKET_VERSION).is_none_or(|v| v.as_bytes() != b"13") {
        return Err(ApiError::BadRequest("websocket version 13 only".into()));
    }
    let accept = headers
        .get(header::SEC_WEBSOCKET_KEY)
        .map(|key| derive_accept_key(key.as_bytes()))
        .ok_or_else(|| ApiError::BadRequest("no Sec-WebSocket-Key".into()))?;
    let peer = req.extensions().get::<axum::extract::ConnectInfo<std::net::SocketAddr>>().map(|c| c.0.ip());
    let ticket = hub.quotas().admit(peer, &limits, hub.clock().now()).map_err(|e| {
        tracing::debug!(?peer, error = %e, "websocket refused");
        ApiError::Limited(e)
    })?;
    let upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let upgraded = match upgrade.await {
            Ok(u) => u,
            Err(e) => {
                tracing::debug!(error = %e, "websocket upgrade failed");
                return;
            }
        };
        let Some((stream, read_ahead, guard)) = crate::server::upgraded_socket(upgraded) else {
            tracing::error!("websocket on a connection that is not a TCP socket");
            return;
        };
        let keep: Keep = guard.map(|g| Box::new(g) as Box<dyn std::any::Any + Send + Sync>);
        let socket = ClientSocket { stream, read_ahead, keep, ticket };
        let end = serve_client(socket, hub, stop, limits).await;
        tracing::debug!(?end, "websocket client left");
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::CONNECTION, "upgrade")
        .header(header::UPGRADE, "websocket")
        .header(header::SEC_WEBSOCKET_ACCEPT, accept)
        .body(axum::body::Body::empty())
        .map_err(|e| ApiError::BadRequest(e.to_string()))
}

/// `GET /api/event`: the event's name, site, live round and time control, and the rounds
/// that have games.
pub(super) async fn event(State(relay): State<Arc<Relay>>) -> Json<Value> {
    let (ev, live) = {
        let t = relay.tournament.lock();
        (t.event.clone(), t.live_round())
    };
    let mut rounds = relay.store.rounds();
    if !rounds.contains(&live) {
        rounds.push(live);
        rounds.sort_unstable();
    }
    Json(json!({
        "name": ev.name,
        "site": ev.site,
        "round": live,
        "time_control": ev.time_control,
        "rounds": rounds,
    }))
}

/// A journaled game read back, for spectators: no serial number, no path.
fn game_json(g: &GameRecord, with_moves: bool) -> Value {
    let h = &g.header;
    let last = g.moves.last();
    let mut v = json!({
        "round": h.round,
        "board": h.board,
        "pairing": h.pairing,
        "start_fen": h.start_fen,
        "fen": g.fen(),
        "plies": g.moves.len(),
        "last_move": last.map(|m| json!({ "ply": m.ply, "san": m.san, "uci": m.uci })),
        "result": g.result,
        "termination": g.termination,
        "utc_date": h.utc_date,
        "utc_time": h.utc_time,
    });
    if with_moves {
        v["moves"] = g
            .moves
            .iter()
            .map(|m| json!({ "ply": m.ply, "san": m.san, "uci": m.uci, "clk": m.clk, "emt": m.emt, "fen": m.fen }))
            .collect();
    }
    v
}

/// Reads the journals of `round` (the boards in `boards`) off the async threads.
async fn read_games(relay: &Relay, round: u32, boards: Vec<u32>) -> Vec<GameRecord> {
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
fn delayed(relay: &Relay, g: &mut GameRecord) {
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
pub(super) async fn round_games(
    State(relay): State<Arc<Relay>>,
    Path(round): Path<u32>,
) -> Result<Json<Value>, ApiError> {
    let boards = relay.store.games(round);
    // A round `/api/event` lists (the live one, or one the data folder has) is there, with
    // no game yet or none left: an empty list, not an error.
    let live = relay.tournament.lock().live_round();
    if boards.is_empty() && round != live && !relay.store.rounds().contains(&round) {
        return Err(ApiError::NotFound("no such round"));
    }
    let games: Vec<Value> =
        read_games(&relay, round, boards).await.iter().map(|g| game_json(g, false)).collect();
    Ok(Json(json!({ "round": round, "games": games })))
}

/// `GET /api/games/{round}/{board}`: one game with its moves and the position after each
/// (as journaled: confirmed moves only), so a page can step through it without playing
/// chess. A game being played has the moves' times from the feed (`at`).
pub(super) async fn game(
    State(relay): State<Arc<Relay>>,
    Path((round, board)): Path<(u32, u32)>,
) -> Result<Json<Value>, ApiError> {
    let no_game = ApiError::NotFound("no such game");
    if !relay.store.games(round).contains(&board) {
        return Err(no_game);
    }
    let g = read_games(&relay, round, vec![board]).await.pop().ok_or(no_game)?;
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
    Ok(Json(v))
}
