//! The admin routes (behind the token, see [`super::access`]): pairings, results,
//! corrections and the other commands to a board, alerts, the broadcast delay.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use serde::Deserialize;
use serde_json::{Value, json};

use super::ApiError;
use crate::board::{AdminCommand, AdminError, BoardInput, PLIES};
use crate::invalid::{Invalid, in_range};
use crate::relay::Relay;
use crate::tournament::{MAX_BOARDS, MAX_ROUND, Pairing, Player};
use crate::trf::Trf;

/// `{"ok":true}`: done.
fn ok() -> Json<Value> {
    Json(json!({ "ok": true }))
}

/// `GET /api/admin/boards`: every board whole (ports included), the relay-wide alerts, and
/// every port the relay opens with its state (`opening`, `not_found`, `permission_denied`,
/// `unopenable`, `active`, `not_responding`).
pub(super) async fn boards(State(relay): State<Arc<Relay>>) -> Json<Value> {
    let ports: Vec<Value> = relay
        .port_states()
        .into_iter()
        .map(|(path, state)| {
            let mut v = serde_json::to_value(state).unwrap_or_else(|_| json!({}));
            v["path"] = json!(path);
            v
        })
        .collect();
    Json(json!({
        "boards": relay.hub.boards(),
        "alerts": relay.hub.admin_relay_alerts(),
        "ports": ports,
    }))
}

fn check_round(round: u32) -> Result<(), Invalid> {
    in_range("round", u64::from(round), 1, u64::from(MAX_ROUND))
}

fn check_board_count(boards: usize) -> Result<(), Invalid> {
    if boards > MAX_BOARDS { Err(Invalid::TooMany { what: "boards", max: MAX_BOARDS }) } else { Ok(()) }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PairingsBody {
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

/// `POST /api/admin/pairings`: players for some boards, in a round that becomes the live
/// one.
pub(super) async fn set_pairings(
    State(relay): State<Arc<Relay>>,
    Json(body): Json<PairingsBody>,
) -> Result<Json<Value>, ApiError> {
    if let Some(r) = body.round {
        check_round(r)?;
    }
    check_board_count(body.boards.len())?;
    let mut boards = Vec::with_capacity(body.boards.len());
    for b in body.boards {
        in_range("board number", u64::from(b.board), 1, MAX_BOARDS as u64)?;
        let pairing = Pairing { white: b.white, black: b.black };
        pairing.check().map_err(|error| ApiError::Pairing { board: b.board, error })?;
        boards.push((b.board, pairing));
    }
    let (round, refused) = relay.merge_pairings(body.round, boards).await;
    if !refused.is_empty() {
        return Err(ApiError::Refused(refused));
    }
    Ok(Json(json!({ "ok": true, "round": round })))
}

/// `round` of `POST /api/admin/pairings/trf?round=N`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RoundQuery {
    /// The round whose pairings to take.
    round: u32,
    /// `false`: keep them for the round until it is started (unless it is the live round).
    #[serde(default)]
    start: Option<bool>,
}

/// `POST /api/admin/pairings/trf?round=N`, the body a TRF-16 or TRF-26 report (UTF-8 or
/// Windows-1252): that round's pairings become the relay's, with the players' teams (`310`)
/// and the event's time control (`222`). 422 with the line and column of what is wrong in the report.
pub(super) async fn upload_trf(
    State(relay): State<Arc<Relay>>,
    Query(q): Query<RoundQuery>,
    body: axum::body::Bytes,
) -> Result<Json<Value>, ApiError> {
    check_round(q.round)?;
    let trf = Trf::parse_bytes(&body)?;
    let boards = trf.pairings(q.round)?;
    check_board_count(boards.len())?;
    // A TRF-26 report's time control (222) is the event's from now on.
    // Its tie-breaks (202, 212) go to tournament.json.
    {
        let mut t = relay.tournament.lock();
        if let Some(tc) = trf.trf26.time_control.as_ref().and_then(|tc| tc.pgn()) {
            t.event.time_control = Some(tc);
        }
        t.event.tie_breaks = [trf.trf26.tie_breaks.clone(), trf.trf26.standings.clone()];
    }
    tracing::info!(round = q.round, boards = boards.len(), "pairings from a TRF report");
    let list: Vec<Value> = boards
        .iter()
        .map(|b| json!({ "board": b.board, "white": b.pairing.white.name, "black": b.pairing.black.name }))
        .collect();
    // The report's event name (012) names an event the configuration left unnamed.
    let event = trf.name.clone();
    if let Some(name) = &event
        && crate::tournament::check_text("event name", name).is_ok()
    {
        let mut t = relay.tournament.lock();
        if t.event.name == crate::tournament::Event::default().name {
            t.event.name = name.clone();
        }
    }
    let pairings = boards.into_iter().map(|b| (b.board, b.pairing));
    let started = q.start != Some(false) || relay.tournament.lock().live_round() == q.round;
    if started {
        let refused = relay.replace_pairings(q.round, pairings.collect()).await;
        if !refused.is_empty() {
            return Err(ApiError::Refused(refused));
        }
    } else {
        relay.tournament.lock().round_mut(q.round).pairings = pairings.collect();
        relay.store.touch();
    }
    Ok(Json(json!({
        "ok": true,
        "round": q.round,
        "started": started,
        "event": event,
        "start_date": trf.start_date,
        "end_date": trf.end_date,
        "boards": list,
    })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ResultBody {
    result: Option<String>,
}

/// `POST /api/admin/boards/{n}/result`.
pub(super) async fn set_result(
    State(relay): State<Arc<Relay>>,
    Path(n): Path<u32>,
    Json(body): Json<ResultBody>,
) -> Result<Json<Value>, ApiError> {
    let result = match body.result {
        Some(given) => match given.parse::<dgt_core::Ruling>() {
            Ok(r) => Some(r),
            Err(error) => return Err(ApiError::Result { given, error }),
        },
        None => None,
    };
    relay.admin(n, AdminCommand::Result(result)).await?;
    Ok(ok())
}

/// `POST /api/admin/boards/{n}/flip`.
pub(super) async fn flip(
    State(relay): State<Arc<Relay>>,
    Path(n): Path<u32>,
) -> Result<Json<Value>, ApiError> {
    relay.admin(n, AdminCommand::Flip).await?;
    Ok(ok())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FenBody {
    fen: String,
}

/// `POST /api/admin/boards/{n}/start-fen`.
pub(super) async fn start_fen(
    State(relay): State<Arc<Relay>>,
    Path(n): Path<u32>,
    Json(body): Json<FenBody>,
) -> Result<Json<Value>, ApiError> {
    dgt_core::position_from_fen(&body.fen).map_err(ApiError::Fen)?;
    relay.admin(n, AdminCommand::NewGame(Some(body.fen))).await?;
    Ok(ok())
}

/// `POST /api/admin/boards/{n}/new-game`.
pub(super) async fn new_game(
    State(relay): State<Arc<Relay>>,
    Path(n): Path<u32>,
) -> Result<Json<Value>, ApiError> {
    relay.admin(n, AdminCommand::NewGame(None)).await?;
    Ok(ok())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CorrectBody {
    from_ply: u32,
    moves: Vec<String>,
}

/// `?dry_run=1` (or `true`): check, change nothing.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CorrectQuery {
    #[serde(default)]
    dry_run: Option<String>,
}

/// `POST /api/admin/boards/{n}/correct` (`?dry_run=1`: checked by the board's session,
/// nothing changed).
pub(super) async fn correct(
    State(relay): State<Arc<Relay>>,
    Path(n): Path<u32>,
    Query(q): Query<CorrectQuery>,
    Json(body): Json<CorrectBody>,
) -> Result<Json<Value>, ApiError> {
    let dry_run = match q.dry_run.as_deref() {
        None | Some("0" | "false") => false,
        Some("1" | "true" | "") => true,
        Some(other) => return Err(ApiError::BadRequest(format!("dry_run={other:?}: give 1 or 0"))),
    };
    if body.moves.len() > PLIES {
        return Err(Invalid::TooMany { what: "moves", max: PLIES }.into());
    }
    if let Some(m) = body.moves.iter().find(|m| m.len() > 5) {
        return Err(
            Invalid::Malformed { what: "move", value: m.clone(), form: "a UCI move (e2e4, e7e8q)" }.into()
        );
    }
    if !dry_run {
        relay.admin(n, AdminCommand::Correct { from_ply: body.from_ply, moves: body.moves }).await?;
        return Ok(ok());
    }
    let tx = relay.board(n).ok_or(AdminError::NoBoard)?;
    let (reply, rx) = tokio::sync::oneshot::channel();
    let input = BoardInput::CheckCorrection { from_ply: body.from_ply, moves: body.moves, reply };
    tx.send(input).await.map_err(|_| AdminError::Gone)?;
    let moves = rx.await.map_err(|_| AdminError::Gone)??;
    let moves: Vec<Value> = moves
        .into_iter()
        .map(|(m, fen)| json!({ "ply": m.ply, "san": m.san, "uci": m.uci, "fen": fen }))
        .collect();
    Ok(Json(json!({ "ok": true, "dry_run": true, "moves": moves })))
}

/// `POST /api/admin/alerts/{id}/ack`: an operator has seen the alert. Kept by the relay
/// (every console shows it acknowledged) and sent as an `alert_ack` delta.
pub(super) async fn ack_alert(
    State(relay): State<Arc<Relay>>,
    Path(id): Path<u64>,
) -> Result<Json<Value>, ApiError> {
    let (board, alert) = relay.hub.ack(id).ok_or(ApiError::NoAlert(id))?;
    Ok(Json(json!({ "ok": true, "board": board, "alert": alert })))
}

/// `GET /api/admin/delay`: the broadcast delay.
pub(super) async fn get_delay(State(relay): State<Arc<Relay>>) -> Json<Value> {
    Json(json!({ "delay_s": relay.delay() }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DelayBody {
    delay_s: u64,
}

/// `PUT /api/admin/delay`: sets the broadcast delay of everything public.
pub(super) async fn put_delay(
    State(relay): State<Arc<Relay>>,
    Json(body): Json<DelayBody>,
) -> Result<Json<Value>, ApiError> {
    relay.set_delay(body.delay_s)?;
    Ok(Json(json!({ "ok": true, "delay_s": relay.delay() })))
}

/// One round as the console shows it: its state, its Lichess round and its pairings.
fn round_json(r: &crate::tournament::Round) -> Value {
    let pairings: Vec<Value> = r
        .pairings
        .iter()
        .map(|(board, p)| json!({ "board": board, "white": p.white, "black": p.black }))
        .collect();
    json!({ "round": r.number, "state": r.state, "lichess_round": r.lichess_round, "pairings": pairings })
}

/// `GET /api/admin/rounds`: every known round with its state, Lichess round and pairings.
pub(super) async fn rounds(State(relay): State<Arc<Relay>>) -> Json<Value> {
    let t = relay.tournament.lock();
    let rounds: Vec<Value> = t.rounds().map(round_json).collect();
    Json(
        json!({ "live": t.live_round(), "default_lichess_round": relay.push.default_round(), "rounds": rounds }),
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RoundBody {
    lichess_round: Option<String>,
}

/// `PUT /api/admin/rounds/{n}`: the Lichess broadcast round its games go to (`null`: the
/// `[lichess]` section's).
pub(super) async fn set_round(
    State(relay): State<Arc<Relay>>,
    Path(n): Path<u32>,
    Json(body): Json<RoundBody>,
) -> Result<Json<Value>, ApiError> {
    check_round(n)?;
    if let Some(id) = &body.lichess_round {
        crate::tournament::check_lichess_round(id)?;
    }
    let answer = {
        let mut t = relay.tournament.lock();
        let r = t.round_mut(n);
        r.lichess_round = body.lichess_round;
        round_json(r)
    };
    relay.store.touch();
    Ok(Json(json!({ "ok": true, "round": answer })))
}

/// `POST /api/admin/rounds/{n}/start`: round `n` becomes the live one; its pairings go to
/// the boards.
pub(super) async fn start_round(
    State(relay): State<Arc<Relay>>,
    Path(n): Path<u32>,
) -> Result<Json<Value>, ApiError> {
    check_round(n)?;
    let refused = relay.start_round(n).await;
    tracing::info!(round = n, "round started by the operator");
    if !refused.is_empty() {
        return Err(ApiError::Refused(refused));
    }
    let t = relay.tournament.lock();
    Ok(Json(json!({ "ok": true, "round": t.round(n).map(round_json) })))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct FinishBody {
    #[serde(default)]
    force: bool,
}

/// `POST /api/admin/rounds/{n}/finish` (`{"force": true}` to finish with games that have
/// no result): the live round is over.
pub(super) async fn finish_round(
    State(relay): State<Arc<Relay>>,
    Path(n): Path<u32>,
    body: Option<Json<FinishBody>>,
) -> Result<Json<Value>, ApiError> {
    check_round(n)?;
    let live = relay.tournament.lock().live_round();
    if n != live {
        return Err(ApiError::NotLive { round: n, live });
    }
    let force = body.is_some_and(|Json(b)| b.force);
    let open = relay.unfinished_games();
    if !open.is_empty() && !force {
        let games = open
            .iter()
            .map(|(b, p, moves)| {
                format!(
                    "board {b} ({} - {}, {moves} moves)",
                    or_unnamed(&p.white.name),
                    or_unnamed(&p.black.name)
                )
            })
            .collect();
        return Err(ApiError::Unfinished(games));
    }
    relay.tournament.lock().finish_round();
    relay.store.touch();
    tracing::info!(round = n, unfinished = open.len(), "round finished by the operator");
    let t = relay.tournament.lock();
    Ok(Json(json!({ "ok": true, "round": t.round(n).map(round_json) })))
}

fn or_unnamed(name: &str) -> &str {
    if name.is_empty() { "?" } else { name }
}
