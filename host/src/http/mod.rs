//! The HTTP layer: every route, its handler, and one error type for their answers.
//!
//! - `public.rs`: the read routes (the page's API, PGN, health, the websocket feed);
//! - `admin.rs`: the admin routes, which hand commands to the relay and its boards;
//! - `access.rs`: the token, `Host`/`Origin` and CORS rules in front of them.
//!
//! Handlers answer `Result<_, ApiError>`: a client's mistake is a 4xx, a fault of the relay
//! a 5xx, always as `{"error": "..."}`.
//!
//! Read routes need nothing; admin routes need `Authorization: Bearer <token>`. Request
//! bodies are limited to [`MAX_BODY`] bytes, websocket messages to
//! [`crate::feed::MAX_CLIENT_MESSAGE`], and subscribers to the configured maximum.
//!
//! # Exposure
//! - Wrong or missing tokens are logged and limited per client address and overall
//!   ([`AdminGuard`]): after [`FREE_FAILURES`] failures of an address (or
//!   [`FREE_FAILURES_OVERALL`] of all together) each further one blocks failing calls for
//!   twice as long as the last (1 s up to [`MAX_BLOCK`]), answered `429` with
//!   `Retry-After`. The right token is always served.
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

mod access;
mod admin;
mod public;

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

pub use access::{
    Access, AdminGuard, FORGET_AFTER, FREE_FAILURES, FREE_FAILURES_OVERALL, LOOPBACK_NAMES, MAX_BLOCK,
    MAX_TRACKED, cors_route,
};
pub use public::feed_upgrade;

use crate::board::AdminError;
use crate::feed::MAX_ALERTS;
use crate::invalid::Invalid;
use crate::relay::Relay;
use crate::trf::{MAX_TRF_BYTES, TrfError};

/// The largest request body accepted, bytes.
pub const MAX_BODY: usize = 64 * 1024;

/// Why a request was not done, and how it is answered.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Nothing by that name (404).
    #[error("{0}")]
    NotFound(&'static str),
    /// No alert with that id is kept (404).
    #[error("no alert {0} is kept (alerts are kept until {MAX_ALERTS} newer ones on the same board)")]
    NoAlert(u64),
    /// A malformed request (400).
    #[error("{0}")]
    BadRequest(String),
    /// A well-formed request with a value the relay refuses (422).
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// A board's players the relay refuses (422).
    #[error("board {board}: {error}")]
    Pairing {
        /// The board.
        board: u32,
        /// Why.
        error: Invalid,
    },
    /// A result that is none of the PGN results (422).
    #[error("result {given:?}: {error}")]
    Result {
        /// The result as given.
        given: String,
        /// Why.
        error: dgt_core::ResultError,
    },
    /// A start position that is no legal FEN (422).
    #[error("{0}")]
    Fen(dgt_core::FenError),
    /// A pairing file the relay cannot read (422).
    #[error(transparent)]
    Trf(#[from] TrfError),
    /// A board command that failed: 404, 422 or 503 (see [`AdminError`]).
    #[error(transparent)]
    Board(#[from] AdminError),
    /// Boards that refused new players, each with its reason (422).
    #[error("{}", .0.join("; "))]
    Refused(Vec<String>),
    /// A round action on a round that is not the live one (409).
    #[error("round {round} is not the live round (round {live} is): start it first")]
    NotLive {
        /// The round named.
        round: u32,
        /// The live round.
        live: u32,
    },
    /// Games without a result keep the round from finishing (409): set their results, or
    /// finish with `{"force": true}`.
    #[error(
        "{} without a result: {}. Set their results, or finish the round anyway",
        if .0.len() == 1 { "1 game is" } else { "games are" },
        .0.join(", ")
    )]
    Unfinished(Vec<String>),
    /// No or a wrong admin token (401).
    #[error("admin calls need Authorization: Bearer <token>")]
    Unauthorized,
    /// `Host` or `Origin` not allowed (403).
    #[error("{0}")]
    Forbidden(&'static str),
    /// Too many failed admin calls from this address: blocked for this long (429).
    #[error("too many failed admin calls from this address; retry in {} s", whole_seconds(*.0))]
    TooMany(Duration),
    /// At capacity (503).
    #[error("{0}")]
    Busy(&'static str),
    /// A client address over its feed quota (429).
    #[error(transparent)]
    Limited(#[from] crate::feed::QuotaRefusal),
}

/// A wait in whole seconds, rounded up.
fn whole_seconds(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

impl ApiError {
    /// The HTTP status of the answer.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::NotFound(_) | ApiError::NoAlert(_) | ApiError::Board(AdminError::NoBoard) => {
                StatusCode::NOT_FOUND
            }
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Invalid(_)
            | ApiError::Pairing { .. }
            | ApiError::Result { .. }
            | ApiError::Fen(_)
            | ApiError::Trf(_)
            | ApiError::Board(AdminError::Refused(_))
            | ApiError::Refused(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Board(AdminError::Gone | AdminError::Storage(_) | AdminError::Unreachable(_))
            | ApiError::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::NotLive { .. } | ApiError::Unfinished(_) => StatusCode::CONFLICT,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::TooMany(_) | ApiError::Limited(_) => StatusCode::TOO_MANY_REQUESTS,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = (self.status(), Json(serde_json::json!({ "error": self.to_string() }))).into_response();
        let h = r.headers_mut();
        match self {
            ApiError::Unauthorized => {
                h.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            ApiError::TooMany(wait) => {
                if let Ok(v) = HeaderValue::from_str(&whole_seconds(wait).to_string()) {
                    h.insert(header::RETRY_AFTER, v);
                }
            }
            _ => {}
        }
        r
    }
}

/// Gives an admin route's refusal made outside its handler (a body that is no JSON, a
/// missing field, a bad path or query: axum's extractors answer in plain text) the
/// documented form, `{"error": "..."}`, with its status.
async fn json_errors(r: Response) -> Response {
    let is_json = r
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(r.status().is_client_error() || r.status().is_server_error()) || is_json {
        return r;
    }
    let (parts, body) = r.into_parts();
    let text = axum::body::to_bytes(body, MAX_BODY).await.map_or_else(
        |_| parts.status.canonical_reason().unwrap_or("refused").to_owned(),
        |b| String::from_utf8_lossy(&b).trim().to_owned(),
    );
    let text =
        if text.is_empty() { parts.status.canonical_reason().unwrap_or("refused").to_owned() } else { text };
    let mut out = (parts.status, Json(serde_json::json!({ "error": text }))).into_response();
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            out.headers_mut().insert(name.clone(), value.clone());
        }
    }
    out
}

/// The router for a relay, with the access rules for its listener.
pub fn router(relay: Arc<Relay>, access: Access) -> Router {
    let access = Arc::new(access);
    let guarded =
        access::Guarded { relay: Arc::clone(&relay), access: Arc::clone(&access), failures: Arc::default() };
    let admin = Router::new()
        .route("/boards", get(admin::boards))
        .route("/pairings", post(admin::set_pairings))
        // A TRF report is larger than a JSON body: up to 4 MiB.
        .route("/pairings/trf", post(admin::upload_trf).layer(DefaultBodyLimit::max(MAX_TRF_BYTES)))
        .route("/boards/{board}/result", post(admin::set_result))
        .route("/boards/{board}/flip", post(admin::flip))
        .route("/boards/{board}/start-fen", post(admin::start_fen))
        .route("/boards/{board}/new-game", post(admin::new_game))
        .route("/boards/{board}/correct", post(admin::correct))
        .route("/rounds", get(admin::rounds))
        .route("/rounds/{round}", axum::routing::put(admin::set_round))
        .route("/rounds/{round}/start", post(admin::start_round))
        .route("/rounds/{round}/finish", post(admin::finish_round))
        .route("/alerts/{id}/ack", post(admin::ack_alert))
        .route("/delay", get(admin::get_delay).put(admin::put_delay))
        .layer(middleware::map_response(json_errors))
        .route_layer(middleware::from_fn_with_state(guarded.clone(), access::require_token))
        .route_layer(middleware::from_fn_with_state(guarded.clone(), access::check_access));
    let feed = Router::new()
        .route("/ws", get(public::ws))
        .route_layer(middleware::from_fn_with_state(guarded, access::check_access));
    Router::new()
        .route("/", get(public::index))
        .route("/health", get(public::health))
        .route("/api/boards", get(public::boards))
        .route("/api/boards/{board}", get(public::board))
        .route("/api/push", get(public::push_status))
        .route("/api/event", get(public::event))
        .route("/api/rounds/{round}", get(public::round_games))
        .route("/api/games/{round}/{board}", get(public::game))
        .route("/pgn/{round}", get(public::round_pgn))
        .route("/pgn/{round}/{board}", get(public::game_pgn))
        .merge(feed)
        .nest("/api/admin", admin)
        .merge(crate::web::router())
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn_with_state(access, access::cors))
        .with_state(relay)
}
