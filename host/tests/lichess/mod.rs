//! A stand-in for Lichess's broadcast push endpoint on 127.0.0.1, after lila's
//! `RelayPush.scala` and its API documentation:
//!
//! - `POST /api/broadcast/round/{id}/push`, `Authorization: Bearer <token>` (else 401),
//!   an unknown round 404;
//! - the body is PGN of at most 100 games (more: 400 `{"error"}`);
//! - each game is read with a real PGN reader (`pgn-reader`) and replayed: an illegal move
//!   refuses that game, except a last king move to d4, d5, e4 or e5 (the DGT
//!   kings-in-centre gesture), which is dropped;
//! - the answer is per game: `{"games":[{"tags":{..},"moves":N} | {"tags":{..},"error":".."}]}`;
//! - accepted games replace the broadcast's game of the same `GameId` (what viewers see);
//! - it can be told to fail: answer 500, 429 with `Retry-After`, stall past the client's
//!   time limit, or drop the connection, for the next requests.
//!
//! It serves on a loopback socket, or without one ([`StandIn::in_memory`]): each request
//! then comes through a pipe the push's connector opens, and a test can run on tokio's
//! paused clock.
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use pgn_reader::{Outcome, RawTag, Reader, SanPlus, Skip, Visitor};
use shakmaty::{Chess, Position, Role, Square};

/// How the stand-in answers a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fail {
    /// 500.
    ServerError,
    /// 429 with `Retry-After: 1`.
    TooMany,
    /// No answer for this long.
    Stall(Duration),
    /// The connection is closed without an answer.
    Drop,
}

/// A game as the broadcast shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broadcast {
    pub tags: BTreeMap<String, String>,
    pub moves: Vec<String>,
    pub result: String,
    /// Every SAN as sent (a dropped king move included).
    pub sent: Vec<String>,
}

/// One request as received.
#[derive(Clone, Debug)]
pub struct Received {
    pub at: Instant,
    pub games: usize,
    pub answered: u16,
}

#[derive(Default)]
pub struct Inner {
    pub token: String,
    pub round: String,
    pub failures: VecDeque<Fail>,
    pub requests: Vec<Received>,
    /// By `GameId`.
    pub games: BTreeMap<String, Broadcast>,
    /// Errors of the last answer, by GameId.
    pub refused: BTreeMap<String, String>,
    /// Every game accepted, in order.
    pub history: Vec<Broadcast>,
}

#[derive(Clone)]
pub struct StandIn {
    /// Where it listens (`None`: in memory).
    pub addr: Option<SocketAddr>,
    pub inner: Arc<Mutex<Inner>>,
    app: axum::Router,
}

impl StandIn {
    /// Serves without a socket: requests come through [`StandIn::connector`].
    pub fn in_memory(round: &str, token: &str) -> StandIn {
        let inner =
            Arc::new(Mutex::new(Inner { token: token.into(), round: round.into(), ..Inner::default() }));
        let app = axum::Router::new()
            .route("/api/broadcast/round/{id}/push", axum::routing::post(push))
            .layer(axum::extract::DefaultBodyLimit::max(16 << 20))
            .with_state(Arc::clone(&inner));
        StandIn { addr: None, inner, app }
    }

    /// Serves on 127.0.0.1 (a port of its own) in the current tokio runtime.
    pub async fn start(round: &str, token: &str) -> StandIn {
        let mut standin = StandIn::in_memory(round, token);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        standin.addr = Some(listener.local_addr().unwrap());
        let app = standin.app.clone();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        standin
    }

    /// Opens a pipe to the stand-in, served by a task of the current runtime, for each
    /// connection the push makes (whatever host it names).
    pub fn connector(&self) -> dgt_relay::push::Connect {
        let app = self.app.clone();
        Arc::new(move |_host, _port| {
            let app = app.clone();
            Box::pin(async move {
                let (ours, theirs) = tokio::io::duplex(1 << 16);
                tokio::spawn(async move {
                    let service =
                        hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                            let mut app = app.clone();
                            tower_service::Service::call(&mut app, req.map(axum::body::Body::new))
                        });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(theirs), service)
                        .await;
                });
                Ok(Box::new(ours) as Box<dyn dgt_relay::push::Conn>)
            })
        })
    }

    /// Starts it on a runtime of its own thread (for tests that are not async).
    pub fn start_in_thread(round: &str, token: &str) -> StandIn {
        let (tx, rx) = std::sync::mpsc::channel();
        let (round, token) = (round.to_owned(), token.to_owned());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                tx.send(StandIn::start(&round, &token).await).unwrap();
                std::future::pending::<()>().await;
            });
        });
        rx.recv().unwrap()
    }

    /// Its address: the socket's, or a name the connector ignores.
    pub fn url(&self) -> String {
        self.addr.map_or_else(|| "http://lichess.stand-in".to_owned(), |a| format!("http://{a}"))
    }

    pub fn fail_next(&self, f: &[Fail]) {
        self.inner.lock().unwrap().failures.extend(f.iter().copied());
    }

    pub fn games(&self) -> BTreeMap<String, Broadcast> {
        self.inner.lock().unwrap().games.clone()
    }

    pub fn requests(&self) -> Vec<Received> {
        self.inner.lock().unwrap().requests.clone()
    }

    pub fn history(&self) -> Vec<Broadcast> {
        self.inner.lock().unwrap().history.clone()
    }

    pub fn refused(&self) -> BTreeMap<String, String> {
        self.inner.lock().unwrap().refused.clone()
    }
}

fn error(status: StatusCode, m: &str) -> Response {
    (status, axum::Json(serde_json::json!({ "error": m }))).into_response()
}

async fn push(
    State(inner): State<Arc<Mutex<Inner>>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let at = Instant::now();
    let (fail, token, round) = {
        let mut i = inner.lock().unwrap();
        (i.failures.pop_front(), i.token.clone(), i.round.clone())
    };
    let record =
        |games: usize, answered: u16| inner.lock().unwrap().requests.push(Received { at, games, answered });
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok());
    if auth != Some(&format!("Bearer {token}")) {
        record(0, 401);
        return error(StatusCode::UNAUTHORIZED, "No such token");
    }
    if id != round {
        record(0, 404);
        return error(StatusCode::NOT_FOUND, "No such broadcast round");
    }
    let games = split(&body);
    match fail {
        Some(Fail::ServerError) => {
            record(games.len(), 500);
            return error(StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong");
        }
        Some(Fail::TooMany) => {
            record(games.len(), 429);
            let mut r = error(StatusCode::TOO_MANY_REQUESTS, "Too many requests. Try again later.");
            r.headers_mut().insert("retry-after", "1".parse().unwrap());
            return r;
        }
        Some(Fail::Stall(d)) => {
            record(games.len(), 0);
            tokio::time::sleep(d).await;
            return error(StatusCode::GATEWAY_TIMEOUT, "late");
        }
        Some(Fail::Drop) => {
            record(games.len(), 0);
            // Panicking in the handler makes the server close the connection unanswered.
            panic!("stand-in drops the connection on purpose");
        }
        None => {}
    }
    if !headers.get("content-type").and_then(|v| v.to_str().ok()).is_some_and(|c| c.starts_with("text/plain"))
    {
        record(games.len(), 400);
        return error(StatusCode::BAD_REQUEST, "Content-Type must be text/plain");
    }
    if games.len() > 100 {
        record(games.len(), 400);
        return error(StatusCode::BAD_REQUEST, "Too many games: at most 100 in one push");
    }
    let mut answers = Vec::new();
    let mut i = inner.lock().unwrap();
    i.refused.clear();
    for text in &games {
        match validate(text) {
            Ok(g) => {
                answers.push(serde_json::json!({ "tags": g.tags, "moves": g.moves.len() }));
                let id = g.tags.get("GameId").cloned().unwrap_or_else(|| g.tags["Round"].clone());
                i.history.push(g.clone());
                i.games.insert(id, g);
            }
            Err((tags, e)) => {
                let id = tags.get("GameId").cloned().unwrap_or_default();
                answers.push(serde_json::json!({ "tags": tags, "error": e }));
                i.refused.insert(id, e);
            }
        }
    }
    i.requests.push(Received { at, games: games.len(), answered: 200 });
    axum::Json(serde_json::json!({ "games": answers })).into_response()
}

/// Games of a multi-game PGN: a new game at each `[` line after an empty line.
pub fn split(body: &str) -> Vec<String> {
    let mut games = Vec::new();
    let mut cur = String::new();
    let mut after_blank = true;
    for line in body.lines() {
        if line.starts_with('[') && after_blank && cur.contains("\n\n") {
            games.push(std::mem::take(&mut cur));
        }
        after_blank = line.trim().is_empty();
        cur.push_str(line);
        cur.push('\n');
    }
    if !cur.trim().is_empty() {
        games.push(cur);
    }
    games
}

struct Collect;

#[derive(Default)]
struct Game {
    tags: BTreeMap<String, String>,
    sans: Vec<SanPlus>,
    result: Option<String>,
}

impl Visitor for Collect {
    type Tags = BTreeMap<String, String>;
    type Movetext = Game;
    type Output = Game;

    fn begin_tags(&mut self) -> ControlFlow<Game, Self::Tags> {
        ControlFlow::Continue(BTreeMap::new())
    }

    fn tag(&mut self, tags: &mut Self::Tags, name: &[u8], value: RawTag<'_>) -> ControlFlow<Game> {
        tags.insert(String::from_utf8_lossy(name).into_owned(), value.decode_utf8_lossy().into_owned());
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, tags: Self::Tags) -> ControlFlow<Game, Game> {
        ControlFlow::Continue(Game { tags, ..Game::default() })
    }

    fn san(&mut self, g: &mut Game, san: SanPlus) -> ControlFlow<Game> {
        g.sans.push(san);
        ControlFlow::Continue(())
    }

    fn begin_variation(&mut self, _g: &mut Game) -> ControlFlow<Game, Skip> {
        ControlFlow::Continue(Skip(true))
    }

    fn outcome(&mut self, g: &mut Game, outcome: Outcome) -> ControlFlow<Game> {
        g.result = Some(outcome.to_string());
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, g: Game) -> Game {
        g
    }
}

type Refusal = (BTreeMap<String, String>, String);

/// Reads and replays one game as lila's `RelayPush.validate` does.
pub fn validate(text: &str) -> Result<Broadcast, Refusal> {
    let mut reader = Reader::new(std::io::Cursor::new(text.as_bytes()));
    let game = match reader.read_game(&mut Collect) {
        Ok(Some(g)) => g,
        Ok(None) => return Err((BTreeMap::new(), "No game found".into())),
        Err(e) => return Err((BTreeMap::new(), e.to_string())),
    };
    let mut pos = Chess::default();
    if let Some(fen) = game.tags.get("FEN").cloned() {
        pos = match fen
            .parse::<shakmaty::fen::Fen>()
            .ok()
            .and_then(|f| f.into_position(shakmaty::CastlingMode::Chess960).ok())
        {
            Some(p) => p,
            None => return Err((game.tags, format!("Invalid FEN {fen}"))),
        };
    }
    let mut moves = Vec::new();
    for (i, san) in game.sans.iter().enumerate() {
        match san.san.to_move(&pos) {
            Ok(m) => {
                moves.push(san.to_string());
                pos.play_unchecked(m);
            }
            Err(_) => {
                let last = i + 1 == game.sans.len();
                let king_to_centre = matches!(
                    san.san,
                    shakmaty::san::San::Normal {
                        role: Role::King,
                        to: Square::D4 | Square::D5 | Square::E4 | Square::E5,
                        ..
                    }
                );
                if last && king_to_centre {
                    break;
                }
                return Err((game.tags, format!("Illegal move {} at ply {}", san, i + 1)));
            }
        }
    }
    let result = game.result.unwrap_or_else(|| "*".into());
    let sent = game.sans.iter().map(ToString::to_string).collect();
    Ok(Broadcast { tags: game.tags, moves, result, sent })
}
