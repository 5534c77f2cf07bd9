//! The EBoard API's routes: the websocket at `/api/v1.0` and `GET /api/v1.0/eboards`.
//!
//! Each websocket client has its own task: it reads the client's calls, answers each in
//! turn, and writes the feed messages of the boards it subscribed to, from the registry's
//! changes. A client that falls behind is sent its boards whole again; a bad frame gets an
//! error answer and touches no other client.
//!
//! # Why `setup` may start a game
//! A client calls `setup` with the position its game (online) stands at; from then on it
//! expects the moves made from that position. When the relay's game on that board went
//! through that position, the moves after it are told. Otherwise the relay starts a new game
//! from it, as the operator's "new game" does, so that the moves confirmed from there on
//! are the relay's.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use axum::routing::get;
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use super::wire::{self, Call, FeedParts, Refusal};
use super::{Change, Eboard, Eboards, GameMoves};
use crate::board::AdminCommand;
use crate::relay::Relay;

/// Feeds one client may hold at once.
pub const MAX_FEEDS: usize = 64;

#[derive(Clone)]
struct Ctx {
    relay: Arc<Relay>,
    eboards: Arc<Eboards>,
}

/// The routes, on the API's own port.
pub fn router(relay: Arc<Relay>, eboards: Arc<Eboards>) -> Router {
    Router::new()
        .route("/api/v1.0", get(upgrade))
        .route("/api/v1.0/eboards", get(list))
        .with_state(Ctx { relay, eboards })
}

async fn list(State(ctx): State<Ctx>) -> Json<Vec<Value>> {
    Json(ctx.eboards.list().iter().map(wire::eboard).collect())
}

async fn upgrade(State(ctx): State<Ctx>, ws: WebSocketUpgrade) -> Response {
    ws.max_message_size(wire::MAX_FRAME).max_frame_size(wire::MAX_FRAME).on_upgrade(move |s| client(ctx, s))
}

/// Where moves are told from after a `setup`.
#[derive(Clone, Debug)]
struct Setup {
    /// The position as the client gave it (the feed's `start`).
    fen: String,
    /// The game and the number of its moves that lead to the position, once found.
    anchor: Option<((u32, String, String), usize)>,
}

/// One feed of a client.
#[derive(Clone, Debug)]
struct Feed {
    number: u32,
    setup: Option<Setup>,
}

/// The pieces and the side to move of a FEN: what two FENs of one position share
/// (castling and en passant are written differently by different programs).
fn position_key(fen: &str) -> (&str, &str) {
    let mut fields = fen.split_whitespace();
    (fields.next().unwrap_or(""), fields.next().unwrap_or("w"))
}

/// The latest number of moves of `game` after which it stood at `fen`. Right after the
/// client's `setup`, a game with moves only matching at its start does not count: the
/// client starts a new game.
fn anchor_in(game: &GameMoves, fen: &str, at_setup: bool) -> Option<usize> {
    let key = position_key(fen);
    let k = (0..=game.moves.len()).rev().find(|&k| position_key(game.fen_after(k)) == key)?;
    (!(at_setup && k == 0 && !game.moves.is_empty())).then_some(k)
}

impl Setup {
    /// The moves confirmed since the setup position in the board's current game.
    fn moves<'a>(&mut self, game: &'a GameMoves) -> Vec<&'a str> {
        let fits = self.anchor.as_ref().is_some_and(|(id, k)| *id == game.id && *k <= game.moves.len());
        if !fits {
            self.anchor = anchor_in(game, &self.fen, false).map(|k| (game.id.clone(), k));
        }
        match &self.anchor {
            Some((_, k)) => game.moves[*k..].iter().map(|m| m.san.as_str()).collect(),
            None => Vec::new(),
        }
    }
}

/// One client's connection: its feeds, and the time stamps.
struct Client {
    ctx: Ctx,
    feeds: BTreeMap<i64, Feed>,
}

async fn client(ctx: Ctx, mut socket: WebSocket) {
    let mut changes = ctx.eboards.follow();
    let mut stop = ctx.relay.shutdown().listener();
    let mut c = Client { ctx, feeds: BTreeMap::new() };
    loop {
        let out = tokio::select! {
            msg = socket.recv() => match msg {
                Some(Ok(Message::Text(text))) => c.call(text.as_str()).await,
                Some(Ok(Message::Binary(_))) => {
                    vec![wire::error(&Refusal { id: None, message: "calls are text frames".into() }, c.now())]
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => Vec::new(),
                Some(Ok(Message::Close(_)) | Err(_)) | None => break,
            },
            change = changes.recv() => match change {
                Ok(change) => c.changed(&change),
                Err(RecvError::Lagged(_)) => c.whole(),
                Err(RecvError::Closed) => break,
            },
            () = stop.wait() => break,
        };
        for text in out {
            if socket.send(Message::Text(text.into())).await.is_err() {
                return;
            }
        }
    }
    let _ = socket.send(Message::Close(None)).await;
}

impl Client {
    fn now(&self) -> u64 {
        self.ctx.relay.clock.wall_ms()
    }

    /// Answers one text frame: its reply, then any feed message it brings.
    async fn call(&mut self, text: &str) -> Vec<String> {
        let now = self.now();
        match wire::parse(text) {
            Ok((id, call)) => match self.answer(call).await {
                Ok((result, feed)) => std::iter::once(wire::reply(id, result, now)).chain(feed).collect(),
                Err(message) => vec![wire::error(&Refusal { id: Some(id), message }, now)],
            },
            Err(r) => vec![wire::error(&r, now)],
        }
    }

    /// The call's result and the feed messages that follow it.
    async fn answer(&mut self, call: Call) -> Result<(Value, Vec<String>), String> {
        let now = self.now();
        match call {
            Call::Eboards => {
                let list: Vec<Value> = self.ctx.eboards.list().iter().map(wire::eboard).collect();
                Ok((Value::Array(list), Vec::new()))
            }
            Call::Subscribe { feed, serial } => {
                let b = self.ctx.eboards.by_serial(&serial).ok_or_else(|| format!("no eboard {serial:?}"))?;
                if !self.feeds.contains_key(&feed) && self.feeds.len() >= MAX_FEEDS {
                    return Err(format!("at most {MAX_FEEDS} feeds on one connection"));
                }
                self.feeds.insert(feed, Feed { number: b.number, setup: None });
                let parts =
                    FeedParts { board: b.board.as_deref(), clock: Some(b.clock.as_ref()), moves: None };
                Ok((Value::Null, vec![wire::feed(feed, wire::feed_param(&b, parts), now)]))
            }
            Call::Unsubscribe { feed } => {
                self.feeds.remove(&feed).ok_or_else(|| format!("no feed {feed}"))?;
                Ok((Value::Null, Vec::new()))
            }
            Call::Setup { feed, fen } => {
                let number = self.feeds.get(&feed).ok_or_else(|| format!("no feed {feed}"))?.number;
                dgt_core::position_from_fen(&fen).map_err(|e| format!("setup: {e}"))?;
                let b = self.ctx.eboards.by_number(number).ok_or("the board is gone")?;
                let mut b = b;
                if anchor_in(&b.game, &fen, true).is_none() {
                    let standard = position_key(&fen) == position_key(crate::record::START_FEN);
                    let start = (!standard).then(|| fen.clone());
                    self.ctx
                        .relay
                        .admin(number, AdminCommand::NewGame(start))
                        .await
                        .map_err(|e| e.to_string())?;
                    b = self.ctx.eboards.by_number(number).ok_or("the board is gone")?;
                }
                let mut setup = Setup { fen, anchor: None };
                let msg = {
                    let san = setup.moves(&b.game);
                    let parts =
                        FeedParts { board: b.board.as_deref(), clock: None, moves: Some((&setup.fen, san)) };
                    wire::feed(feed, wire::feed_param(&b, parts), now)
                };
                if let Some(f) = self.feeds.get_mut(&feed) {
                    f.setup = Some(setup);
                }
                Ok((Value::Null, vec![msg]))
            }
            Call::Flip { feed, flip } => {
                let number = self.feeds.get(&feed).ok_or_else(|| format!("no feed {feed}"))?.number;
                let b = self.ctx.eboards.by_number(number).ok_or("the board is gone")?;
                if flip.unwrap_or(!b.flipped) != b.flipped {
                    self.ctx.relay.admin(number, AdminCommand::Flip).await.map_err(|e| e.to_string())?;
                }
                Ok((Value::Null, Vec::new()))
            }
        }
    }

    /// The feed messages a change on a board brings.
    fn changed(&mut self, change: &Change) -> Vec<String> {
        let Some(b) = self.ctx.eboards.by_number(change.number()) else { return Vec::new() };
        let now = self.now();
        let mut out = Vec::new();
        for (id, f) in &mut self.feeds {
            if f.number != b.number {
                continue;
            }
            let parts = match change {
                Change::Board { board, .. } => FeedParts { board: Some(board), ..FeedParts::default() },
                Change::Clock { .. } => FeedParts { clock: Some(b.clock.as_ref()), ..FeedParts::default() },
                // Moves matter only to a client that set up a position.
                Change::Game { .. } if f.setup.is_none() => continue,
                Change::Game { .. } => FeedParts::default(),
            };
            out.push(feed_message(*id, f, &b, parts, now));
        }
        out
    }

    /// Every feed's board whole (the client fell behind the changes).
    fn whole(&mut self) -> Vec<String> {
        let now = self.now();
        let mut out = Vec::new();
        for (id, f) in &mut self.feeds {
            let Some(b) = self.ctx.eboards.by_number(f.number) else { continue };
            let parts = FeedParts { board: b.board.as_deref(), clock: Some(b.clock.as_ref()), moves: None };
            out.push(feed_message(*id, f, &b, parts, now));
        }
        out
    }
}

/// A feed message, with the moves since the setup position when the client set one up.
fn feed_message<'a>(id: i64, f: &'a mut Feed, b: &'a Eboard, mut parts: FeedParts<'a>, now: u64) -> String {
    if let Some(s) = f.setup.as_mut() {
        let san = s.moves(&b.game);
        parts.moves = Some((s.fen.as_str(), san));
    }
    wire::feed(id, wire::feed_param(b, parts), now)
}
